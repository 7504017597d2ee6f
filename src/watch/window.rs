//! The last `--window` of jobs counted, as hourly sums (docs/watch.md "A verdict per
//! candidate"): per hour of the jobs' `last_transition_time`, how many jobs had a failed run
//! and each candidate's comparison against today's policy (`simulate --baseline`'s own
//! [`Comparison`], added job by job), so that a candidate's verdict over the window is judged
//! on the numbers `simulate --baseline` would print for those jobs. One entry an hour, so
//! bounded whatever the jobs seen.
//!
//! The same sums say whether an hour is an incident window ([`Window::is_incident_hour`]:
//! suggest's rule, docs/reference/suggest.md "Incidents", on hours instead of 10-minute
//! steps).
//!
//! The same sums rank each queue's signatures by their futile retries over the window
//! ([`Window::top_signatures`]), which bounds the `signature` label of the futile-retry
//! counters ([`Window::bound_signatures`]).
//!
//! Owns: [`Window`] and [`Hour`]. Must not: judge a candidate (the command judges the sums by
//! suggest's rules) or read a clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::replay::compare::Comparison;
use crate::replay::explained::Explained;
use crate::replay::incidents::is_unusual;

use super::job::Seen;
use super::metrics::{Counters, Family, OTHER_SIGNATURE, TOP_SIGNATURES};

/// An hour, in microseconds.
pub const HOUR: i64 = 3_600 * 1_000_000;

/// The hours counted before an hour that it is judged against, at least: a watch that
/// started an hour ago has no rate to call an hour unusual against.
pub const INCIDENT_HOURS_BEFORE: i64 = 24;

/// One hour's sums.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hour {
    /// Jobs counted whose record holds a failed run (a verdict's sample).
    pub failed_jobs: u64,
    /// Each candidate's comparison with today's policy, by its name.
    pub candidates: BTreeMap<String, Comparison>,
    /// The failed runs of the jobs counted, by queue.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_runs: BTreeMap<String, u64>,
    /// The hour was found an incident window, and its failed runs counted as the incident's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incident: bool,
    /// The futile retries of the jobs counted, by queue, then by the signature of the run
    /// retried ([`HOUR_SIGNATURES`] of them at most, the rest under `other`): which of a queue's
    /// signatures have a `signature` label of their own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub futile: BTreeMap<String, BTreeMap<String, u64>>,
}

/// The signatures an hour keeps for a queue, at most: the hour's sums stay bounded whatever
/// the messages.
pub const HOUR_SIGNATURES: usize = 200;

/// Adds `n` futile retries of `signature` to a queue's signatures of an hour.
fn add_futile(of: &mut BTreeMap<String, u64>, signature: &str, n: u64) {
    let key = match of.contains_key(signature) || of.len() < HOUR_SIGNATURES {
        true => signature,
        false => OTHER_SIGNATURE,
    };
    *of.entry(key.to_string()).or_default() += n;
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
        hour.failed_jobs += u64::from(seen.failed_runs > 0);
        if seen.failed_runs > 0 {
            match hour.failed_runs.get_mut(&seen.queue) {
                Some(n) => *n += seen.failed_runs,
                None => {
                    hour.failed_runs.insert(seen.queue.clone(), seen.failed_runs);
                }
            }
        }
        if seen.failed && !seen.retries.is_empty() {
            let of = hour.futile.entry(seen.queue.clone()).or_default();
            for r in &seen.retries {
                add_futile(of, &r.signature, 1);
            }
        }
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
            mine.incident |= hour.incident;
            for (queue, n) in hour.failed_runs {
                *mine.failed_runs.entry(queue).or_default() += n;
            }
            for (name, c) in hour.candidates {
                mine.candidates.entry(name).or_default().merge(&c);
            }
            for (queue, signatures) in hour.futile {
                let of = mine.futile.entry(queue).or_default();
                for (signature, n) in signatures {
                    add_futile(of, &signature, n);
                }
            }
        }
    }

    /// The [`TOP_SIGNATURES`] signatures of `queue` with the most futile retries in the hours
    /// from the one that holds `from` on (ties by their text).
    pub fn top_signatures(&self, queue: &str, from: i64) -> Vec<String> {
        let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
        for hour in self.hours.range(from.div_euclid(HOUR) * HOUR..).map(|(_, h)| h) {
            for (signature, n) in hour.futile.get(queue).into_iter().flatten() {
                *sums.entry(signature).or_default() += n;
            }
        }
        let mut ranked: Vec<(&str, u64)> = sums.into_iter().filter(|(s, _)| *s != OTHER_SIGNATURE).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        ranked
            .into_iter()
            .take(TOP_SIGNATURES)
            .map(|(s, _)| s.to_string())
            .collect()
    }

    /// The futile-retry series of `counters` (a page's, each under its run's signature) with
    /// their `signature` bounded: one of its queue's [`Window::top_signatures`] from `from`
    /// (this window holding the page), or `other`.
    pub fn bound_signatures(&self, counters: &mut Counters, from: i64) {
        let mut tops: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for family in [
            Family::FutileRetries,
            Family::FutileRetryGpuSeconds,
            Family::FutileRetryCpuSeconds,
        ] {
            counters.relabel(family, |labels| {
                // (queue, rule, category, signature)
                let [queue, .., signature] = labels.as_mut_slice() else {
                    return;
                };
                let top = tops
                    .entry(queue.clone())
                    .or_insert_with(|| self.top_signatures(queue, from));
                if !top.contains(signature) {
                    *signature = OTHER_SIGNATURE.to_string();
                }
            });
        }
    }

    /// Adds a page's hours, as [`Window::merge`], and says the failed runs that count as an
    /// incident's, by queue: every failed run of an hour the first time it is found an
    /// incident window ([`Window::is_incident_hour`], judged from `from`), then the page's
    /// own of an hour found so before. So that the count is the runs of the incident hours,
    /// whatever pages the jobs came in.
    pub fn merge_counting_incidents(&mut self, page: Window, from: i64) -> BTreeMap<String, u64> {
        let added: Vec<(i64, BTreeMap<String, u64>)> =
            page.hours.iter().map(|(at, h)| (*at, h.failed_runs.clone())).collect();
        self.merge(page);
        let mut runs: BTreeMap<String, u64> = BTreeMap::new();
        for (at, page_runs) in added {
            let counted_before = self.hours.get(&at).is_some_and(|h| h.incident);
            let to_add = if counted_before {
                page_runs
            } else if self.is_incident_hour(at, from) {
                let hour = self.hours.get_mut(&at).expect("merged above");
                hour.incident = true;
                hour.failed_runs.clone()
            } else {
                continue;
            };
            for (queue, n) in to_add {
                *runs.entry(queue).or_default() += n;
            }
        }
        runs
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

    /// Whether the hour holding `at` is an incident window: `k`, its jobs with a failed run,
    /// against `λ`, the mean of the hours from the one holding `from` up to it (an hour with no
    /// job counts 0), `P(X ≥ k) < 0.01 / B` over the `B` hours judged, and `k ≥ 5`
    /// (`replay::incidents::is_unusual`). Never before [`INCIDENT_HOURS_BEFORE`] hours are
    /// counted before it.
    pub fn is_incident_hour(&self, at: i64, from: i64) -> bool {
        let hour = at.div_euclid(HOUR) * HOUR;
        let first = from.div_euclid(HOUR) * HOUR;
        let before = (hour - first) / HOUR;
        if before < INCIDENT_HOURS_BEFORE {
            return false;
        }
        let k = self.hours.get(&hour).map_or(0, |h| h.failed_jobs);
        let sum: u64 = self.hours.range(first..hour).map(|(_, h)| h.failed_jobs).sum();
        is_unusual(k, sum as f64 / before as f64, before as u64 + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(failed: &[(i64, u64)]) -> Window {
        let mut w = Window::default();
        for &(hour, n) in failed {
            w.hours.insert(
                hour * HOUR,
                Hour {
                    failed_jobs: n,
                    failed_runs: BTreeMap::from([("ml".to_string(), 2 * n)]),
                    ..Hour::default()
                },
            );
        }
        w
    }

    #[test]
    fn an_hour_far_above_the_hours_before_is_an_incident() {
        // 2 jobs an hour for two days, then 20 in hour 48: P(X ≥ 20 | λ = 2) ≈ 5.5e-12, far
        // below 0.01 / 49.
        let mut hours: Vec<(i64, u64)> = (0..48).map(|h| (h, 2)).collect();
        hours.push((48, 20));
        let w = with(&hours);
        assert!(w.is_incident_hour(48 * HOUR + 5, 0));
        // The hour before: 2 is the rate itself.
        assert!(!w.is_incident_hour(47 * HOUR, 0));
        // Judged against fewer than 24 hours: never.
        assert!(!w.is_incident_hour(48 * HOUR, 30 * HOUR));
    }

    #[test]
    fn an_incident_hour_counts_its_runs_whatever_pages_they_came_in() {
        let usual: Vec<(i64, u64)> = (0..48).map(|h| (h, 2)).collect();
        // The outage's 20 jobs (40 failed runs) in one page, or in pages of 3, 7 and 10
        // jobs: the hour is no incident after the first page of 3, and is after the next.
        let mut whole = with(&usual);
        let page = with(&[(48, 20)]);
        assert_eq!(
            whole.merge_counting_incidents(page, 0),
            BTreeMap::from([("ml".into(), 40)])
        );
        let mut parts = with(&usual);
        let mut counted = 0;
        for n in [3, 7, 10] {
            counted += parts
                .merge_counting_incidents(with(&[(48, n)]), 0)
                .get("ml")
                .copied()
                .unwrap_or(0);
        }
        assert_eq!(counted, 40);
        // A usual hour counts nothing.
        assert!(parts.merge_counting_incidents(with(&[(49, 2)]), 0).is_empty());
    }

    #[test]
    fn a_queue_s_twenty_most_futile_signatures_keep_their_own_label() {
        let mut w = Window::default();
        // 25 signatures on `ml`: `s00` with 25 futile retries, `s01` 24, … `s24` 1; an hour
        // before the window counts for nothing.
        for (k, hour) in [(0, 0), (1, 5)] {
            let h = w.hours.entry(hour * HOUR).or_default();
            let of = h.futile.entry("ml".into()).or_default();
            for i in 0..25u64 {
                add_futile(of, &format!("s{i:02}"), (25 - i) * (1 + k * 100));
            }
        }
        let top = w.top_signatures("ml", 5 * HOUR);
        assert_eq!(top.len(), TOP_SIGNATURES);
        assert_eq!((top[0].as_str(), top[19].as_str()), ("s00", "s19"));
        assert!(w.top_signatures("batch", 0).is_empty());
        let mut c = Counters::default();
        for s in ["s00", "s19", "s20", "s24"] {
            c.add(Family::FutileRetries, &["ml", "p/0", "none", s], 1);
            c.add(Family::FutileRetryGpuSeconds, &["ml", "p/0", "none", s], 10);
        }
        c.add(Family::Retries, &["ml", "p/0"], 4);
        w.bound_signatures(&mut c, 5 * HOUR);
        let futile = |s: &str| c.get(Family::FutileRetries, &["ml", "p/0", "none", s]);
        assert_eq!(
            (futile("s00"), futile("s19"), futile("s20"), futile("other")),
            (1, 1, 0, 2)
        );
        assert_eq!(
            c.get(Family::FutileRetryGpuSeconds, &["ml", "p/0", "none", "other"]),
            20
        );
        assert_eq!(c.get(Family::Retries, &["ml", "p/0"]), 4);
        // An hour keeps HOUR_SIGNATURES signatures of a queue; the rest are `other`.
        let mut of = BTreeMap::new();
        for i in 0..HOUR_SIGNATURES + 3 {
            add_futile(&mut of, &format!("m{i}"), 1);
        }
        assert_eq!(of.len(), HOUR_SIGNATURES + 1);
        assert_eq!(of[OTHER_SIGNATURE], 3);
    }

    #[test]
    fn fewer_than_five_jobs_is_never_an_incident() {
        // λ = 0 over a quiet day: 4 jobs are unusual, and still no incident.
        let w = with(&[(30, 4)]);
        assert!(!w.is_incident_hour(30 * HOUR, 0));
        let w = with(&[(30, 5)]);
        assert!(w.is_incident_hour(30 * HOUR, 0));
    }

    #[test]
    fn an_hour_the_rate_explains_is_not_an_incident() {
        // λ = 10: P(X ≥ 16) ≈ 0.049, not below 0.01 / 25.
        let mut hours: Vec<(i64, u64)> = (0..24).map(|h| (h, 10)).collect();
        hours.push((24, 16));
        assert!(!with(&hours).is_incident_hour(24 * HOUR, 0));
    }
}
