//! Incident windows (docs/reference/suggest.md "Incidents"): the hours in which more jobs
//! failed than the hour of day explains, found from the failed runs' times alone, and told
//! apart from one job set's burst and a surge of the usual mix ([`kinds`]).
//!
//! The rule, as the docs write it:
//! - a failed run's time is its end ([`ends`]): `startedAt + runFor`, else the next run's
//!   start, else the job's submission plus the `queuedFor` and `runFor` of its runs up to it
//!   (a run none of these places has no time, and is in no window);
//! - over the history's span, windows of 1 hour start every 10 minutes on the clock's
//!   10-minute marks, the first at the earliest failed run's time floored to 10 minutes, the
//!   last at the latest's; `k` of a window is the number of distinct jobs with a failed run
//!   ending in it (a window is half-open: a run ending at its end is the next one's), `B` the
//!   windows;
//! - a window is unusual when `k ≥ 5` and `P(X ≥ k) < 0.01 / B` for `X ~ Poisson(λ_w)` (a
//!   Bonferroni bound over the windows tested), `λ_w` its expected count ([`kinds::Expected`]:
//!   by hour of day once the windows start on 3 UTC days, else the mean of all); each is
//!   widened by 10 minutes before and 5 after, and overlapping ones are merged, with the
//!   windows given by hand (taken as given).
//!
//! Owns: the times, the counts detection needs ([`Detector`]: per job, the windows its
//! failed runs fall in, kept as the changes of `k` from one window start to the next, so
//! that it holds the span's windows, not the runs, and adds up alike whatever the split of
//! the jobs into units or shards), the test ([`poisson_tail`], [`is_unusual`]), the windows
//! found ([`Detected`]), and the same rule over a list of `(time, job)` pairs with `λ` given
//! ([`detect_failures`], for a caller that holds its own list). Pure: no I/O, no clock; the
//! span is the history's own.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::model::failure_history::{FailureHistory, Outcome, StartedAt, Timestamp};

mod base;
pub mod kinds;

use base::step_of;
#[cfg(test)]
use base::MINUTE;
pub use base::{
    is_unusual, poisson_tail, slot_of, Detected, Kind, Test, Window, Windows, AFTER, ALPHA, BEFORE, MIN_JOBS, SLOT,
    STEP, STEPS_PER_WINDOW,
};

use kinds::Expected;
pub use kinds::Unusual;

/// Whether a replay looks for incidents: `--incidents auto|off` and `--incident FROM/TO`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Setting {
    /// `auto`: detect windows in the history (else only the given ones).
    pub detect: bool,
    /// Given by hand, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub given: Vec<Window>,
}

impl Default for Setting {
    fn default() -> Setting {
        Setting {
            detect: true,
            given: Vec::new(),
        }
    }
}

impl Setting {
    /// No window can exist: nothing detected, none given.
    pub fn is_off(&self) -> bool {
        !self.detect && self.given.is_empty()
    }

    /// The default (`auto`, none given): what a record leaves out.
    pub fn is_default(&self) -> bool {
        *self == Setting::default()
    }

    /// The given windows merged, as [`Windows`] (what is known before any history is read).
    pub fn given_windows(&self) -> Windows {
        Windows::merged(self.given.clone())
    }
}

/// Each run's end (docs/reference/suggest.md "Incidents"), into `out` (one entry a run:
/// `None` when the record does not place it), in nanoseconds since the epoch.
pub fn ends(history: &FailureHistory, out: &mut Vec<Option<i64>>) {
    out.clear();
    let submitted = history.job.submitted_at.map(|t| i128::from(t.0));
    let start = |k: usize| -> Option<i128> {
        match history.runs.get(k)?.started_at? {
            StartedAt::Absolute(t) => Some(i128::from(t.0)),
            StartedAt::Offset(d) => Some(submitted? + i128::from(d.0)),
        }
    };
    // Submission plus every run's wait and run time up to this one's end.
    let mut elapsed: i128 = 0;
    for (k, run) in history.runs.iter().enumerate() {
        elapsed += i128::from(run.queued_for.0) + i128::from(run.run_for.0);
        let end = match start(k) {
            Some(s) => Some(s + i128::from(run.run_for.0)),
            None => start(k + 1).or_else(|| submitted.map(|s| s + elapsed)),
        };
        out.push(end.and_then(|e| i64::try_from(e).ok()));
    }
}

/// The failed runs' times of `history` (as [`ends`] gives them), into `out`; returns how
/// many failed runs have none.
pub fn failed_times(history: &FailureHistory, ends_of: &[Option<i64>], out: &mut Vec<i64>) -> u64 {
    out.clear();
    let mut untimed = 0;
    for (run, end) in history.runs.iter().zip(ends_of) {
        if run.outcome != Outcome::Failed {
            continue;
        }
        match end {
            Some(t) => out.push(*t),
            None => untimed += 1,
        }
    }
    untimed
}

/// What detection needs of the failed runs counted so far: `k` of every window, kept as its
/// changes (`+1` where a job's run of windows begins, `−1` after it ends), and the span.
/// Counted job by job, merged unit by unit or shard by shard: the same whatever the split.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Detector {
    /// By window start (in 10-minute steps since the epoch): how `k` changes there.
    #[serde(with = "sorted_deltas")]
    deltas: HashMap<i64, i64, foldhash::fast::RandomState>,
    /// The earliest and latest failed run's time.
    span: Option<(i64, i64)>,
    /// Failed runs with a time, and without one.
    pub timed: u64,
    pub untimed: u64,
    /// The failing jobs' mix, that tells the unusual windows' kinds ([`kinds::Mix`]): fed by
    /// the caller that computes the runs' signatures ([`Detector::mix`]), else empty (and
    /// every unusual window an incident).
    #[serde(default, skip_serializing_if = "kinds::Mix::is_empty")]
    pub mix: kinds::Mix,
    /// The job's window starts, sorted (scratch).
    #[serde(skip)]
    scratch: Vec<i64>,
}

mod sorted_deltas {
    use std::collections::HashMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    type Map = HashMap<i64, i64, foldhash::fast::RandomState>;

    pub fn serialize<S: Serializer>(m: &Map, s: S) -> Result<S::Ok, S::Error> {
        let mut v: Vec<(i64, i64)> = m.iter().map(|(k, d)| (*k, *d)).collect();
        v.sort_unstable();
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Map, D::Error> {
        let v: Vec<(i64, i64)> = Vec::deserialize(d)?;
        super::base::check_changes(v.iter().map(|&(s, d)| (0, s, d))).map_err(serde::de::Error::custom)?;
        Ok(v.into_iter().collect())
    }
}

impl Detector {
    /// One job's failed runs: their times (nanoseconds since the epoch, any order) and how
    /// many have none. A job counts once in each window one of its failed runs ends in.
    pub fn add_job(&mut self, times: &[i64], untimed: u64) {
        self.untimed += untimed;
        if times.is_empty() {
            return;
        }
        self.timed += times.len() as u64;
        let (lo, hi) = times
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        self.span = Some(match self.span {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        });
        let mut steps = std::mem::take(&mut self.scratch);
        steps.clear();
        steps.extend(times.iter().map(|&t| step_of(t)));
        steps.sort_unstable();
        steps.dedup();
        let deltas = &mut self.deltas;
        kinds::window_runs(&steps, |a, b| {
            *deltas.entry(a).or_default() += 1;
            *deltas.entry(b + 1).or_default() -= 1;
        });
        self.scratch = steps;
    }

    /// Adds another unit's or shard's counts.
    pub fn merge(&mut self, o: &Detector) {
        for (k, d) in &o.deltas {
            *self.deltas.entry(*k).or_default() += d;
        }
        self.span = match (self.span, o.span) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (s, None) | (None, s) => s,
        };
        self.timed += o.timed;
        self.untimed += o.untimed;
        self.mix.merge(&o.mix);
    }

    /// `k` over the span's windows, as runs of equal `k`: `(first start, last start, k)`
    /// (starts in 10-minute steps), in order; with `B`, the windows in the span.
    fn segments(&self) -> (Vec<(i64, i64, u64)>, u64) {
        let Some((lo, hi)) = self.span else {
            return (Vec::new(), 0);
        };
        let (first, last) = (step_of(lo), step_of(hi));
        let mut keys: Vec<(i64, i64)> = self.deltas.iter().map(|(k, d)| (*k, *d)).collect();
        keys.sort_unstable();
        let mut out = Vec::new();
        // `k` holds from `since` up to the next change.
        let (mut k, mut since) = (0i64, i64::MIN);
        for (at, d) in keys {
            let (a, b) = (since.max(first), (at - 1).min(last));
            if k > 0 && a <= b {
                out.push((a, b, k as u64));
            }
            k += d;
            since = at;
        }
        if k > 0 && since.max(first) <= last {
            out.push((since.max(first), last, k as u64));
        }
        (out, (last - first + 1) as u64)
    }

    /// The first and last window start of the span (steps).
    fn starts(&self) -> Option<(i64, i64)> {
        self.span.map(|(lo, hi)| (step_of(lo), step_of(hi)))
    }

    /// The unusual windows by the rule (docs/reference/suggest.md "Incidents"): `rule`'s λ
    /// and `B` when given, else the span's own, `λ_w` by hour of day once the span starts
    /// windows on 3 UTC days; in order, with the figures they were tested by.
    pub fn unusual(&self, rule: Rule) -> (Vec<Unusual>, Test) {
        let (segments, windows) = self.segments();
        let tests = rule.tests.unwrap_or(windows);
        let expected = match (rule.lambda, self.starts()) {
            (Some(lambda), _) => Expected::flat(lambda),
            (None, Some((first, last))) => Expected::of(kinds::Grid::TEN_MINUTES, &segments, first, last),
            (None, None) => Expected::flat(0.0),
        };
        let mut out = Vec::new();
        for &(a, b, k) in &segments {
            if k < MIN_JOBS {
                continue;
            }
            out.extend((a..=b).filter_map(|start| kinds::unusual_at(start, k, &expected, tests)));
        }
        let test = Test {
            mean: expected.mean,
            tests,
            by_hour: expected.by_hour(),
        };
        (out, test)
    }

    /// The unusual windows, their kinds told by the mix fed ([`kinds::classify`]: every one an
    /// incident when none was), widened and merged with `given` (incidents, taken as given).
    pub fn detect(&self, rule: Rule, given: &[Window]) -> Detected {
        let (unusual, test) = self.unusual(rule);
        kinds::detected(&kinds::classify(&unusual, test.tests, &self.mix), given, test)
    }

    /// As [`Detector::detect`], after a pass that gathered the span's part of the mix alone
    /// ([`kinds::Gather::Span`]): the unusual windows' part counted by `read` from their jobs
    /// read again, given the windows' starts ([`kinds::starts_of`]) and the hours their
    /// failed runs ended in ([`kinds::spans_of`]). Nothing is read when no window is unusual
    /// or no failing job was fed. The same windows and kinds as a [`kinds::Gather::Windows`]
    /// pass over the same jobs.
    pub fn detect_read<E>(
        &self,
        rule: Rule,
        given: &[Window],
        read: impl FnOnce(&[i64], Windows) -> Result<kinds::WindowMixes, E>,
    ) -> Result<Detected, E> {
        let (unusual, test) = self.unusual(rule);
        let kinds = match unusual.is_empty() || self.mix.is_empty() {
            true => kinds::classify(&unusual, test.tests, &self.mix),
            false => {
                let starts = kinds::starts_of(&unusual);
                let counted = read(&starts, kinds::spans_of(&starts))?;
                kinds::classify_counted(&unusual, test.tests, &self.mix, counted)
            }
        };
        Ok(kinds::detected(&kinds, given, test))
    }
}

/// λ and `B` when the caller knows them better than the span does (a window of a live
/// record: λ from the hours before it); `None`: the span's own.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rule {
    pub lambda: Option<f64>,
    /// `B`, the windows tested.
    pub tests: Option<u64>,
}

/// How a replay looks for incidents (`Options`): the windows known before it (given by hand,
/// or found by an earlier pass over the same jobs), whose failed runs' trials are left out as
/// they are counted, and whether to detect more at the end from its own failed runs.
#[derive(Debug, Clone, Default)]
pub struct Look {
    pub known: std::sync::Arc<Windows>,
    /// The bursts and surges an earlier pass found (learned from, not left out): said as
    /// that pass found them.
    pub busy: std::sync::Arc<[(Window, Kind)]>,
    pub detect: bool,
}

impl Look {
    /// As `setting` says, before anything is read.
    pub fn of(setting: &Setting) -> Look {
        Look {
            known: std::sync::Arc::new(setting.given_windows()),
            busy: std::sync::Arc::new([]),
            detect: setting.detect,
        }
    }

    /// What an earlier pass over the same jobs `found`: its windows and its bursts and
    /// surges, and nothing more to detect.
    pub fn found(found: &Detected) -> Look {
        Look {
            known: std::sync::Arc::new(found.windows()),
            busy: found.busy.as_slice().into(),
            detect: false,
        }
    }

    /// Whether any window can exist (a burst or a surge is said too).
    pub fn active(&self) -> bool {
        self.detect || !self.known.is_empty() || !self.busy.is_empty()
    }
}

/// What a replay left out of its estimates for incidents: the windows, the failed runs in
/// them of all it counted, and the trials left out (docs/estimates.md); and the bursts and
/// surges it found and learned from, as suggest finds them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeenIncidents {
    pub windows: Vec<Window>,
    pub busy: Vec<(Window, Kind)>,
    pub failed_runs: u64,
    pub in_windows: u64,
    pub trials_left_out: u64,
}

/// The rule over a list of failed runs, `(time, job)`, with `λ` (and `B`) given when the
/// caller knows them (`None`: the list's own span's): for a caller that holds the failures
/// of a span of its own, such as the last hours of a live record.
pub fn detect_failures<J: Ord>(failures: &[(Timestamp, J)], rule: Rule) -> Detected {
    let mut by_job: Vec<&(Timestamp, J)> = failures.iter().collect();
    by_job.sort_by(|a, b| a.1.cmp(&b.1));
    let mut d = Detector::default();
    let mut times = Vec::new();
    let mut at = 0;
    while at < by_job.len() {
        times.clear();
        let job = &by_job[at].1;
        while at < by_job.len() && by_job[at].1 == *job {
            times.push(by_job[at].0 .0);
            at += 1;
        }
        d.add_job(&times, 0);
    }
    d.detect(rule, &[])
}

#[cfg(test)]
mod tests;
