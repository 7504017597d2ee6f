//! The last `--window` of jobs counted, as hourly sums (docs/watch.md "A verdict per
//! candidate"): per hour of the jobs' `last_transition_time`, how many jobs had a failed run
//! and each candidate's comparison against today's policy (`simulate --baseline`'s own
//! [`Comparison`], added job by job), so that a candidate's verdict over the window is judged
//! on the numbers `simulate --baseline` would print for those jobs. One entry an hour, so
//! bounded whatever the jobs seen.
//!
//! Owns: [`Window`] and [`Hour`]. Must not: judge (the command judges the sums by suggest's
//! rules) or read a clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::replay::compare::Comparison;
use crate::replay::explained::Explained;

use super::job::Seen;

/// An hour, in microseconds.
pub const HOUR: i64 = 3_600 * 1_000_000;

/// One hour's sums.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hour {
    /// Jobs counted whose record holds a failed run (a verdict's sample).
    pub failed_jobs: u64,
    /// Each candidate's comparison with today's policy, by its name.
    pub candidates: BTreeMap<String, Comparison>,
}

/// The hours counted, by their start (microseconds since the Unix epoch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Window {
    hours: BTreeMap<i64, Hour>,
}

impl Window {
    /// Adds the job `seen`, which reached its terminal state at `at`, under each candidate's
    /// name (`names`, in [`Seen::shadows`]' order).
    pub fn add(&mut self, at: i64, seen: &Seen, names: &[String]) {
        let hour = self.hours.entry(at.div_euclid(HOUR) * HOUR).or_default();
        hour.failed_jobs += u64::from(seen.has_failed_run);
        for (name, shadow) in names.iter().zip(&seen.shadows) {
            let Some(s) = shadow else { continue };
            let c = hour.candidates.entry(name.clone()).or_default();
            c.add(&s.diff);
            c.recorded.merge(&seen.recorded);
            let e = c.explained.get_or_insert_with(Explained::default);
            e.jobs += 1;
            e.contradicted += u64::from(seen.contradicted);
        }
    }

    /// Adds another window's hours (a page's, into the state's).
    pub fn merge(&mut self, other: Window) {
        for (at, hour) in other.hours {
            let mine = self.hours.entry(at).or_default();
            mine.failed_jobs += hour.failed_jobs;
            for (name, c) in hour.candidates {
                mine.candidates.entry(name).or_default().merge(&c);
            }
        }
    }

    /// Forgets the hours that end before `from`.
    pub fn forget_before(&mut self, from: i64) {
        self.hours = self.hours.split_off(&(from.div_euclid(HOUR) * HOUR));
    }

    /// The sums of the hours from the one that holds `from` on: the jobs with a failed run, and
    /// each candidate's comparison (a candidate with no job is absent).
    pub fn since(&self, from: i64) -> (u64, BTreeMap<String, Comparison>) {
        let mut failed = 0;
        let mut sums: BTreeMap<String, Comparison> = BTreeMap::new();
        for hour in self.hours.range(from.div_euclid(HOUR) * HOUR..).map(|(_, h)| h) {
            failed += hour.failed_jobs;
            for (name, c) in &hour.candidates {
                sums.entry(name.clone()).or_default().merge(c);
            }
        }
        (failed, sums)
    }

    /// Keeps the candidates `keep` accepts (the ones still watched).
    pub fn retain_candidates(&mut self, keep: impl Fn(&str) -> bool) {
        for hour in self.hours.values_mut() {
            hour.candidates.retain(|name, _| keep(name));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hours.is_empty()
    }
}
