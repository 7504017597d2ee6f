//! What `watch` exports (docs/watch.md "What each metric counts"): the families, their labels,
//! and the counters themselves, one integer per series.
//!
//! Owns: [`FAMILIES`], the one table of every metric's name, HELP words, kind, unit and label
//! names, in the order they are exported ([`Family`] names a row), [`Counters`] (the series and their values, exact integers: counts, and device
//! time in nanoseconds × thousandths of a device as the replay sums it, so that a window's
//! sum is what `simulate --baseline` prints) and the label values a series may take
//! ([`Outcome`], [`Change`], [`Reason`], [`Busy`]). Must not: render the text format (that is
//! `output::watch`), read a clock, or hold a label value that is not bounded by the
//! command line (queues, rules of the policies, candidates' file names, the fixed words here),
//! but for `signature`: a queue's [`TOP_SIGNATURES`] and [`OTHER_SIGNATURE`].

use std::collections::BTreeMap;

/// How a family's integers read as the exported number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count, as is.
    Count,
    /// Device time in nanoseconds × thousandths of a device: seconds of one device are the
    /// integer / 10^12.
    DeviceTime,
    /// Microseconds since the Unix epoch: a timestamp in seconds is the integer / 10^6.
    Micros,
    /// Milliseconds since the Unix epoch.
    Millis,
}

/// A family's Prometheus type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only ever grows; kept in `--state`.
    Counter,
    /// The poller's progress, or a state worked out afresh (the verdicts, an incident).
    Gauge,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// A metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Jobs,
    Retries,
    FutileRetries,
    FutileRetryGpuSeconds,
    FutileRetryCpuSeconds,
    Collisions,
    CollisionsRan,
    ShadowJobs,
    ShadowGpuSeconds,
    ShadowVerdict,
    Contradictions,
    IncompleteJobs,
    LateJobs,
    IncidentsActive,
    BusyActive,
    IncidentFailedRuns,
    UnreadableRows,
    CursorTimestamp,
    LastPollSuccessTimestamp,
    PollErrors,
    WaitingRequests,
    RetryRequests,
}

/// What a family is: the one table of watch's metrics (docs/watch.md "What each metric
/// counts"), which `/metrics`, `--state` and the tests all read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub family: Family,
    /// Its name, as Prometheus stores it.
    pub name: &'static str,
    /// What it counts, for its HELP line.
    pub help: &'static str,
    pub kind: Kind,
    pub unit: Unit,
    /// Its label names, in the order a series' values are kept.
    pub labels: &'static [&'static str],
}

const fn spec(
    family: Family,
    name: &'static str,
    kind: Kind,
    unit: Unit,
    labels: &'static [&'static str],
    help: &'static str,
) -> Spec {
    Spec {
        family,
        name,
        help,
        kind,
        unit,
        labels,
    }
}

use Kind::{Counter, Gauge};
use Unit::{Count, DeviceTime, Micros, Millis};

/// Every family, in the order `/metrics` lists them (and of [`Family`]'s variants).
pub const FAMILIES: [Spec; 22] = [
    spec(Family::Jobs, "retryctl_watch_jobs_total", Counter, Count, &["queue", "outcome"],
        "Jobs that reached a terminal state with a run to replay, by their outcome as Lookout recorded it."),
    spec(Family::Retries, "retryctl_watch_retries_total", Counter, Count, &["queue", "rule"],
        "Retries today's policy granted, by the rule that granted them."),
    spec(Family::FutileRetries, "retryctl_watch_futile_retries_total", Counter, Count, &["queue", "rule", "category", "signature"],
        "Retries today's policy granted to jobs it failed in the end, by rule, by the failure category of the run retried and by its signature (a queue's 20 most futile over --window; other for the rest)."),
    spec(Family::FutileRetryGpuSeconds, "retryctl_watch_futile_retry_gpu_seconds_total", Counter, DeviceTime, &["queue", "rule", "category", "signature"],
        "GPU-seconds of the runs those futile retries started (run time times GPUs requested), by rule, category and signature."),
    spec(Family::FutileRetryCpuSeconds, "retryctl_watch_futile_retry_cpu_seconds_total", Counter, DeviceTime, &["queue", "rule", "category", "signature"],
        "CPU-seconds of the runs those futile retries started (run time times CPUs requested), by rule, category and signature."),
    spec(Family::Collisions, "retryctl_watch_collisions_total", Counter, Count, &["queue"],
        "Retries today's policy granted that reuse the name of a failed pod the executor keeps (they collide)."),
    spec(Family::CollisionsRan, "retryctl_watch_collisions_ran_total", Counter, Count, &["queue"],
        "Of those, retries the record shows ran (the next run started): above 0, the baseline's executor config is not the one the cluster runs."),
    spec(Family::ShadowJobs, "retryctl_watch_shadow_jobs_total", Counter, Count, &["queue", "candidate", "change"],
        "Jobs by what a candidate policy would have done to them against today's (as simulate --baseline)."),
    spec(Family::ShadowGpuSeconds, "retryctl_watch_shadow_gpu_seconds_total", Counter, DeviceTime, &["queue", "candidate", "direction"],
        "GPU-seconds of the runs a candidate would not start on jobs it keeps (saved), would add (added), or leaves out of jobs it loses (lost)."),
    spec(Family::ShadowVerdict, "retryctl_watch_shadow_verdict", Gauge, Count, &["candidate", "verdict"],
        "1 for a candidate's verdict over the jobs of the last --window (adopt, keep, reject as suggest judges; inconclusive below --min-jobs jobs with a failed run), 0 for the others."),
    spec(Family::Contradictions, "retryctl_watch_contradictions_total", Counter, Count, &["queue"],
        "Jobs whose record contradicts today's policy (is it what the cluster runs?)."),
    spec(Family::IncompleteJobs, "retryctl_watch_incomplete_jobs_total", Counter, Count, &["queue"],
        "Jobs counted as their record stood after --settle, a run still in flight or none written."),
    spec(Family::LateJobs, "retryctl_watch_late_jobs_total", Counter, Count, &["queue"],
        "Jobs Lookout wrote further behind the cursor than --lookback, never to be counted (raise --lookback)."),
    spec(Family::IncidentsActive, "retryctl_watch_incidents_active", Gauge, Count, &[],
        "1 while the last hour of failures counted is an incident window (docs/reference/suggest.md), else 0."),
    spec(Family::BusyActive, "retryctl_watch_busy_active", Gauge, Count, &["kind"],
        "1 while the last hour of failures counted is unusual and no incident: one job set's burst (kind=burst) or a surge of the usual mix (kind=surge), as suggest tells them; else 0. Pages nobody."),
    spec(Family::IncidentFailedRuns, "retryctl_watch_incident_failed_runs_total", Counter, Count, &["queue"],
        "Failed runs that ended inside an incident window."),
    spec(Family::UnreadableRows, "retryctl_watch_unreadable_rows_total", Counter, Count, &[],
        "Lookout rows left out because they could not be read (each said on stderr)."),
    spec(Family::CursorTimestamp, "retryctl_watch_cursor_timestamp_seconds", Gauge, Micros, &[],
        "last_transition_time of the last job counted (seconds since the Unix epoch)."),
    spec(Family::LastPollSuccessTimestamp, "retryctl_watch_last_poll_success_timestamp_seconds", Gauge, Millis, &[],
        "When a poll of Lookout last succeeded (seconds since the Unix epoch)."),
    spec(Family::PollErrors, "retryctl_watch_poll_errors_total", Counter, Count, &["reason"],
        "Polls that failed, and jobs a side could not replay, by reason."),
    spec(Family::WaitingRequests, "retryctl_watch_waiting_requests", Gauge, Count, &["queue", "resource"],
        "Requests of the jobs queued now, as the last poll read Lookout: GPUs, or CPU cores."),
    spec(Family::RetryRequests, "retryctl_watch_retry_requests", Gauge, Count, &["pool", "queue", "resource"],
        "Requests of the jobs whose run holding capacity now (leased, pending or running) is not their first, as the last poll read Lookout: GPUs, or CPU cores."),
];

/// The `resource` label of the present's gauges.
pub const RESOURCES: [&str; 2] = ["gpu", "cpu"];

impl Family {
    /// Every family, in the order `/metrics` lists them.
    pub fn all() -> impl Iterator<Item = Family> {
        FAMILIES.iter().map(|s| s.family)
    }

    /// Its row of [`FAMILIES`].
    pub fn spec(self) -> &'static Spec {
        &FAMILIES[self as usize]
    }

    /// Its name, as Prometheus stores it.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The family named `name`.
    pub fn named(name: &str) -> Option<Family> {
        FAMILIES.iter().find(|s| s.name == name).map(|s| s.family)
    }

    /// Its label names, in the order a series' values are kept.
    pub fn labels(self) -> &'static [&'static str] {
        self.spec().labels
    }

    /// A counter (only ever grows, kept in `--state`), or a gauge.
    pub fn is_counter(self) -> bool {
        self.spec().kind == Counter
    }

    pub fn unit(self) -> Unit {
        self.spec().unit
    }
}

/// A job's outcome as Lookout recorded it (`job.state`): the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed,
    Cancelled,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Succeeded, Outcome::Failed, Outcome::Cancelled];

    /// A terminal `job.state` (contract/lookout/README.md): SUCCEEDED 4, CANCELLED 6; FAILED 5,
    /// PREEMPTED 7 and REJECTED 9 end the job failed.
    pub fn of_state(state: i16) -> Outcome {
        match state {
            4 => Outcome::Succeeded,
            6 => Outcome::Cancelled,
            _ => Outcome::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// What a candidate does to a job against today's policy: the `change` label, the
/// transitions of `simulate --baseline`'s plan (docs/what-if.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Failed → Succeeded.
    Rescued,
    /// Succeeded → Failed.
    Lost,
    /// → Pending: the candidate would retry past the end of the record.
    Pending,
    /// Another change of final state, or the same final state after another number of
    /// retries (the plan's `retried differently`).
    RetriedDifferently,
    /// Decided alike: same final state, same retries.
    Same,
}

impl Change {
    pub const ALL: [Change; 5] = [
        Change::Rescued,
        Change::Lost,
        Change::Pending,
        Change::RetriedDifferently,
        Change::Same,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Change::Rescued => "rescued",
            Change::Lost => "lost",
            Change::Pending => "pending",
            Change::RetriedDifferently => "retried_differently",
            Change::Same => "same",
        }
    }
}

/// Why a poll, or a job of it, went wrong: the `reason` label of `poll_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The database could not be reached, refused the credentials, or lacks the tables watch
    /// reads (the error, on the log, says which).
    Connect,
    /// A statement failed or the connection was lost while reading.
    Read,
    /// `--state` could not be written.
    State,
    /// A job the replay could not replay on a side (said on stderr); the poll goes on.
    Replay,
}

impl Reason {
    pub const ALL: [Reason; 4] = [Reason::Connect, Reason::Read, Reason::State, Reason::Replay];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Connect => "connect",
            Reason::Read => "read",
            Reason::State => "state",
            Reason::Replay => "replay",
        }
    }
}

/// An unusual hour that is no incident (docs/reference/suggest.md "Incidents"): the `kind`
/// label of `busy_active`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// One job set's batch failing.
    Burst,
    /// More of the usual mix of failures.
    Surge,
}

impl Busy {
    pub const ALL: [Busy; 2] = [Busy::Burst, Busy::Surge];

    pub fn as_str(self) -> &'static str {
        match self {
            Busy::Burst => "burst",
            Busy::Surge => "surge",
        }
    }
}

/// The `direction` label of `shadow_gpu_seconds_total`: counters, never a negative one.
pub const SAVED: &str = "saved";
pub const ADDED: &str = "added";
/// The runs a candidate leaves out of a job it loses: not a saving.
pub const LOST: &str = "lost";

/// The `verdict` label of `shadow_verdict`: suggest's three, or too few jobs to say.
pub const VERDICTS: [&str; 4] = ["adopt", "keep", "reject", "inconclusive"];

/// The `category` label of a failure with no category.
pub const NO_CATEGORY: &str = "none";

/// The `signature` label of the futile retries of a signature outside its queue's
/// [`TOP_SIGNATURES`].
pub const OTHER_SIGNATURE: &str = "other";

/// The signatures of a queue with the most futile retries over the window that have a
/// `signature` label of their own.
pub const TOP_SIGNATURES: usize = 20;

/// Every counter series: (family, label values in [`Family::labels`]' order) → its integer.
/// Sums never wrap: a series that would pass 2^128 − 1 stays there (no real cluster comes near:
/// docs/estimates.md's bound on device time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    series: BTreeMap<(Family, Vec<String>), u128>,
}

impl Counters {
    /// Adds `n` to the series of `family` with `labels`, made (at 0) when new.
    pub fn add(&mut self, family: Family, labels: &[&str], n: u128) {
        debug_assert_eq!(labels.len(), family.labels().len(), "{}", family.name());
        let key = (family, labels.iter().map(|l| l.to_string()).collect());
        let v = self.series.entry(key).or_insert(0);
        *v = v.saturating_add(n);
    }

    /// Adds every series of `other`.
    pub fn merge(&mut self, other: &Counters) {
        for ((family, labels), n) in &other.series {
            let v = self.series.entry((*family, labels.clone())).or_insert(0);
            *v = v.saturating_add(*n);
        }
    }

    /// The value of one series (0 when it was never made).
    pub fn get(&self, family: Family, labels: &[&str]) -> u128 {
        self.series
            .iter()
            .find(|((f, l), _)| *f == family && l.iter().map(String::as_str).eq(labels.iter().copied()))
            .map_or(0, |(_, n)| *n)
    }

    /// Every series, by family in `Family::ALL`'s order, then by label values.
    pub fn iter(&self) -> impl Iterator<Item = (Family, &[String], u128)> {
        self.series.iter().map(|((f, l), n)| (*f, l.as_slice(), *n))
    }

    /// Gives the series of `family` the label values `relabel` makes of theirs (series that
    /// come to share their values are added together).
    pub fn relabel(&mut self, family: Family, mut relabel: impl FnMut(&mut Vec<String>)) {
        for ((f, mut labels), n) in std::mem::take(&mut self.series) {
            if f == family {
                relabel(&mut labels);
            }
            let v = self.series.entry((f, labels)).or_insert(0);
            *v = v.saturating_add(n);
        }
    }

    /// Keeps the series whose labels `keep` accepts (a queue or a candidate no longer
    /// watched, after a restart with other flags); returns how many were dropped.
    pub fn retain(&mut self, mut keep: impl FnMut(Family, &[String]) -> bool) -> usize {
        let before = self.series.len();
        self.series.retain(|(f, l), _| keep(*f, l));
        before - self.series.len()
    }

    /// The series a scrape shows before anything is counted, each at 0, so that an alert's
    /// `increase()` sees a series' first step: every queue's outcomes, contradictions,
    /// collisions (and those that ran), incomplete and late jobs and incident runs, every candidate's changes and
    /// directions, every reason, and the unreadable rows.
    pub fn zeros(queues: &[String], candidates: &[String]) -> Counters {
        let mut c = Counters::default();
        c.add(Family::UnreadableRows, &[], 0);
        for r in Reason::ALL {
            c.add(Family::PollErrors, &[r.as_str()], 0);
        }
        for q in queues {
            for o in Outcome::ALL {
                c.add(Family::Jobs, &[q, o.as_str()], 0);
            }
            for f in [
                Family::Contradictions,
                Family::Collisions,
                Family::CollisionsRan,
                Family::IncompleteJobs,
                Family::LateJobs,
                Family::IncidentFailedRuns,
            ] {
                c.add(f, &[q], 0);
            }
            for name in candidates {
                for ch in Change::ALL {
                    c.add(Family::ShadowJobs, &[q, name, ch.as_str()], 0);
                }
                for d in [SAVED, ADDED, LOST] {
                    c.add(Family::ShadowGpuSeconds, &[q, name, d], 0);
                }
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_families() {
        for (i, s) in FAMILIES.iter().enumerate() {
            assert_eq!(s.family as usize, i, "{}", s.name);
        }
    }

    #[test]
    fn names_are_unique_and_found_back() {
        for f in Family::all() {
            assert_eq!(Family::named(f.name()), Some(f));
            assert!(f.name().starts_with("retryctl_watch_"));
            // Counters end in `_total` (Prometheus' naming rule); gauges never do.
            assert_eq!(f.is_counter(), f.name().ends_with("_total"), "{}", f.name());
        }
        assert_eq!(Family::named("retryctl_watch_nope"), None);
    }

    #[test]
    fn series_add_up_and_saturate() {
        let mut c = Counters::default();
        c.add(Family::Jobs, &["ml", "failed"], 2);
        c.add(Family::Jobs, &["ml", "failed"], 3);
        c.add(Family::Jobs, &["ml", "succeeded"], 1);
        assert_eq!(c.get(Family::Jobs, &["ml", "failed"]), 5);
        assert_eq!(c.get(Family::Jobs, &["batch", "failed"]), 0);
        let mut d = Counters::default();
        d.add(Family::Jobs, &["ml", "failed"], u128::MAX);
        c.merge(&d);
        assert_eq!(c.get(Family::Jobs, &["ml", "failed"]), u128::MAX);
        assert_eq!(c.retain(|_, l| l[1] != "succeeded"), 1);
        assert_eq!(c.iter().count(), 1);
    }

    #[test]
    fn the_zeros_name_every_bounded_series() {
        let c = Counters::zeros(&["ml".into()], &["a.yaml".into(), "b".into()]);
        // 3 outcomes + 6 per-queue counters + 2 × (5 changes + 3 directions) + 4 reasons + 1.
        assert_eq!(c.iter().count(), 3 + 6 + 2 * 8 + 4 + 1);
        assert!(c.iter().all(|(_, _, n)| n == 0));
    }
}
