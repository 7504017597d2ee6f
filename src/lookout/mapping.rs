//! Lookout rows → a FailureHistory (docs/lookout.md). Pure: no I/O, no clock, no environment.
//!
//! Owns: the run-state table, the order of runs, the times, the exit code / category / error
//! text of a failed run, and the counting of what Lookout could not tell (into [`Notes`],
//! `replay::source`'s type). Must not: read a database or the network (the sources in
//! `lookout::db` / `lookout::api` do), or print.
//!
//! The mapping, exactly (run states per `contract/lookout/README.md`):
//!
//! | `job_run_state` | FailureHistory run |
//! |---|---|
//! | 3 RUN_SUCCEEDED | `outcome: succeeded` |
//! | 4 RUN_FAILED | failed; the containers the executor's composed error text names ([`composed`]), else one container **without a name** carrying `exit_code` and the error text as `message`; `failure_category`/`failure_subcategory` → `category`/`subcategory` |
//! | 6 RUN_PREEMPTED | failed, `conditions: [Preempted]` (category/subcategory kept when Lookout has them) |
//! | 8 RUN_LEASE_RETURNED | `outcome: leaseReturned` |
//! | 9 RUN_LEASE_EXPIRED | failed, `category: internal`, `subcategory: lease-expired` |
//! | 12 RUN_CANCELLED | `outcome: cancelled` |
//! | 1 RUN_PENDING, 2 RUN_RUNNING, 11 RUN_LEASED | in flight: the history ends before this run (it and every later run are left out) |
//! | 5 RUN_TERMINATED | left out and counted: Lookout does not say who stopped the run or why, so it is neither a failure nor a cancellation we could name |
//! | 7 RUN_UNABLE_TO_SCHEDULE | `outcome: leaseReturned` and counted: the run never started on a node and went back to the queue, which is what a returned lease is to the evaluator |
//! | 10 RUN_MAX_RUNS_EXCEEDED | left out and counted; the history ends there: the scheduler's own `maxAttemptedRuns` ended the job, not a run of it |
//! | anything else | left out and counted as an unknown state |
//!
//! The job's `job.state` is written as its `state` (SUCCEEDED 4 `succeeded`; FAILED 5,
//! PREEMPTED 7 and REJECTED 9 `failed`; CANCELLED 6 `cancelled`) when its record is complete
//! ([`record_complete`]) and whole: every run read and written (none in flight, RUN_TERMINATED,
//! RUN_MAX_RUNS_EXCEEDED, of an unknown state, or a row its source could not read). Otherwise it
//! is left out: the replay's runs are not all the job had, and their end is no evidence.
//!
//! Any run written takes `events` (and an `Evicted` or `DeadlineExceeded` pod reason, as a
//! condition) from `debug` when it holds the executor's debug document ([`debug_doc`]);
//! other debug text is counted, not read.
//!
//! Each failed run, and each returned lease with an error text, says which of the executor's
//! paths it took (`executorPath`, docs/lookout.md "Pod errors, events and containers"), read
//! from its state, its category and its text ([`executor_text`]):
//! - a text with a stuck pod's header (`Unable to start pod…`, state 4 or 8): `stuckPod`, the
//!   text (without its hint) as `podError`, the category kept, a returned lease's too;
//! - another returned lease's text, when its category or its debug document (`podFailed`, a
//!   `Failed` pod) shows the executor handled a failed pod: `failedPodCheck`, likewise; else
//!   the text is kept as `podError` and the path is not said (a failed submission's text
//!   reads alike), counted;
//! - a failed run of Armada's own (`internal`), a preempted or lease-expired run:
//!   `unclassified`;
//! - any other failed run: `failedPod`, its text read as containers (below).
//!
//! The hint the executor appended to a classified run's text (`\n\n<hint>`) is taken off
//! when the deployed categorizer's [`Hints`] name it; without them the text is kept whole,
//! counted.
//!
//! Every decision that docs/lookout.md does not fix is counted in [`Notes`] and said on stderr.
//!
//! Times: runs are ordered by `leased` (then `pending`, `started`, `run_id` when Lookout has
//! no lease time). A run "starts" at `started`, else `leased`, else `pending`, and is written
//! so that its start and end come back exactly as the history format places a run
//! (`submittedAt` plus the `queuedFor` and `runFor` of the runs before plus its own
//! `queuedFor`): `queuedFor` = start − that sum, which is start − the previous run's
//! `finished` (run 0: − `submitted`); `runFor` = `finished` − start. A run Lookout starts
//! before that sum (before the run before it finished: clock skew between executor and
//! scheduler, or overlapping runs) is written with `startedAt`, its start, and counted. A run
//! that finished before it started gets `runFor: 0s`, counted; a missing time gives `0s`,
//! counted too; never a panic. A run left out (TERMINATED, unknown state) keeps no time of
//! its own: the next run's `queuedFor` spans it, so the timeline is not shortened. `pool` is
//! `job_run.pool`, left out when NULL or `default` (which is what a history without it reads
//! as).
//!
//! A failed run with no `exit_code` gets no container (no exit code is invented); if it had
//! error text, that text is counted as not attached. Lookout keeps only the first non-zero
//! container exit code: every container written is counted under that note.
//!
//! Rows arrive decoded: the sources inflate `error` (at most [`ERROR_TEXT_MAX`] bytes, cut
//! texts counted here) and leave out, with a [`RowError`], a run whose row they cannot read
//! (a time Rust cannot represent, a NULL the schema forbids, a corrupt zlib stream): like a
//! TERMINATED run it keeps no time, so the next run's `queuedFor` spans it.

use std::collections::BTreeMap;

use super::executor_text::{self, Hints};
use super::{composed, debug_doc};
use crate::model::categorizer::CATEGORY_INTERNAL;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{
    pool_or_default, Container, ExecutorPath, FailureHistory, Job, Outcome, Resources, Run, StartedAt, Timestamp,
    DEFAULT_POOL,
};
use crate::model::policy::Condition;
use crate::replay::source::Notes;

/// `job_run.job_run_state` values (contract/lookout/README.md).
pub mod state {
    pub const PENDING: i16 = 1;
    pub const RUNNING: i16 = 2;
    pub const SUCCEEDED: i16 = 3;
    pub const FAILED: i16 = 4;
    pub const TERMINATED: i16 = 5;
    pub const PREEMPTED: i16 = 6;
    pub const UNABLE_TO_SCHEDULE: i16 = 7;
    pub const LEASE_RETURNED: i16 = 8;
    pub const LEASE_EXPIRED: i16 = 9;
    pub const MAX_RUNS_EXCEEDED: i16 = 10;
    pub const LEASED: i16 = 11;
    pub const CANCELLED: i16 = 12;

    /// The REST API's names (`runs[].jobRunState`), index = value − 1.
    pub const NAMES: [&str; 12] = [
        "RUN_PENDING",
        "RUN_RUNNING",
        "RUN_SUCCEEDED",
        "RUN_FAILED",
        "RUN_TERMINATED",
        "RUN_PREEMPTED",
        "RUN_UNABLE_TO_SCHEDULE",
        "RUN_LEASE_RETURNED",
        "RUN_LEASE_EXPIRED",
        "RUN_MAX_RUNS_EXCEEDED",
        "RUN_LEASED",
        "RUN_CANCELLED",
    ];

    pub fn from_name(name: &str) -> Option<i16> {
        NAMES.iter().position(|n| *n == name).map(|i| i as i16 + 1)
    }
}

/// Lookout's terminal `job.state`s (contract/lookout/README.md).
pub mod job_state {
    use crate::model::failure_history::JobEnd;

    pub const SUCCEEDED: i16 = 4;
    pub const FAILED: i16 = 5;
    pub const CANCELLED: i16 = 6;
    pub const PREEMPTED: i16 = 7;
    pub const REJECTED: i16 = 9;

    /// The REST API's names (`state`), index = value − 1.
    pub const NAMES: [&str; 9] = [
        "QUEUED",
        "PENDING",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "CANCELLED",
        "PREEMPTED",
        "LEASED",
        "REJECTED",
    ];

    pub fn from_name(name: &str) -> Option<i16> {
        NAMES.iter().position(|n| *n == name).map(|i| i as i16 + 1)
    }

    /// A terminal state as the history's `job.state` says it (as `watch`'s `outcome` label
    /// reads it): PREEMPTED and REJECTED end the job failed. `None`: the job is not ended.
    pub fn end(state: i16) -> Option<JobEnd> {
        match state {
            SUCCEEDED => Some(JobEnd::Succeeded),
            FAILED | PREEMPTED | REJECTED => Some(JobEnd::Failed),
            CANCELLED => Some(JobEnd::Cancelled),
            _ => None,
        }
    }
}

/// Whether a run's state is one Lookout's ingester writes last: the run runs no more.
pub fn run_final(state: i16) -> bool {
    !matches!(state, state::PENDING | state::RUNNING | state::LEASED)
}

/// Whether the record of a job Lookout holds terminal (`job_state`) is complete
/// (docs/watch.md "A job is counted once its record is complete"): every run in a final state
/// with its `finished` time, and at least one run unless the job ended before any lease
/// (cancelled or rejected while queued). Upstream's ingester commits a job's terminal state
/// before its runs' creations and their last updates, in separate transactions: a reader
/// between them sees the job ended and its runs missing or still running.
pub fn record_complete(job: &LookoutJob, job_state: i16) -> bool {
    if job.runs.is_empty() {
        return matches!(job_state, job_state::CANCELLED | job_state::REJECTED);
    }
    job.runs.iter().all(|r| run_final(r.state) && r.finished.is_some())
}

/// One `job` row, with what the mapping needs, decoded by its source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRow {
    pub job_id: String,
    pub queue: String,
    /// `job.jobset` (`None`: not given).
    pub job_set: Option<String>,
    /// Bytes.
    pub memory: i64,
    /// `job.cpu`: millicores requested.
    pub cpu: i64,
    /// `job.gpu`: GPUs requested.
    pub gpu: i64,
    pub submitted: Option<Timestamp>,
    /// `job.annotations` (a JSON object of strings; NULL is none).
    pub annotations: BTreeMap<String, String>,
    /// `job.state` (`None` when the source does not say).
    pub state: Option<i16>,
}

/// One `job_run` row, decoded by its source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunRow {
    pub run_id: String,
    pub node: Option<String>,
    pub state: i16,
    pub leased: Option<Timestamp>,
    pub pending: Option<Timestamp>,
    pub started: Option<Timestamp>,
    pub finished: Option<Timestamp>,
    pub exit_code: Option<i32>,
    /// The error text, already inflated (and cut at [`ERROR_TEXT_MAX`] by the source).
    pub error: Option<String>,
    /// The source cut `error` at [`ERROR_TEXT_MAX`] (it ends with [`TRUNCATED`]).
    pub error_truncated: bool,
    pub category: Option<String>,
    pub subcategory: Option<String>,
    /// `job_run.debug`, already inflated (cut at [`ERROR_TEXT_MAX`] like `error`): the
    /// executor's debug document, or whatever else an older executor wrote there.
    pub debug: Option<String>,
    /// `job_run.pool`: the pool it was scheduled in.
    pub pool: Option<String>,
}

/// A job as a source reads it: the job row and the runs it could read (any order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LookoutJob {
    pub job: JobRow,
    pub runs: Vec<RunRow>,
    /// Rows of its runs the source could not read (each reported as an `Item::Bad`): its
    /// record is not whole.
    pub unreadable_runs: u32,
}

/// Bytes of error text kept per run: a longer text is cut there and ends with
/// [`TRUNCATED`] (docs/lookout.md), and its source stops inflating or reading at the cap.
pub const ERROR_TEXT_MAX: usize = 64 * 1024;

/// What ends a cut error text.
pub const TRUNCATED: &str = "… [truncated]";

/// `bytes`, at most [`ERROR_TEXT_MAX`] of them, as text: invalid UTF-8 is replaced, not
/// refused (the text is only matched by `onMessage` patterns), and a character cut in two by
/// the cap is dropped. `cut` adds [`TRUNCATED`].
pub fn error_text(bytes: &[u8], cut: bool) -> String {
    let mut bytes = &bytes[..bytes.len().min(ERROR_TEXT_MAX)];
    if cut {
        bytes = &bytes[..whole_chars(bytes)];
    }
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if cut {
        text.push_str(TRUNCATED);
    }
    text
}

/// The length of `bytes` without a UTF-8 sequence left incomplete at its end.
fn whole_chars(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(4) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let len = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if len > back { n - back } else { n };
    }
    n
}

/// Where in its row a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A column of Lookout's database.
    Column(&'static str),
    /// A field of Lookout's REST API.
    Field(&'static str),
    /// The row as a whole.
    Row,
}

/// A row that cannot be read or mapped: reported with its ids and column, then left out
/// (the run, or the job when it is the job's own row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// The job's id as the report shows it (the bytes of an id that are not UTF-8 as `\xNN`,
    /// so that the row can be found: `WHERE job_id = E'…\xNN'`).
    pub job_id: String,
    /// `None` when the job's own row is the problem (the whole job is left out).
    pub run_id: Option<String>,
    pub place: Place,
    pub message: String,
    /// The job's key as its source names it when that is not `job_id`: an id whose bytes are
    /// not UTF-8, as `lookout::db::key_of` keeps it ([`RowError::job_key`]).
    pub key: Option<String>,
}

impl RowError {
    pub fn job(job_id: &str, place: Place, message: impl Into<String>) -> RowError {
        RowError {
            job_id: job_id.to_string(),
            run_id: None,
            place,
            message: message.into(),
            key: None,
        }
    }

    pub fn run(job_id: &str, run_id: &str, place: Place, message: impl Into<String>) -> RowError {
        RowError {
            job_id: job_id.to_string(),
            run_id: Some(run_id.to_string()),
            place,
            message: message.into(),
            key: None,
        }
    }

    /// The job as its source's keys name it (`watch`'s pages, a shard's ranks): its id, or the
    /// key of an id that is not UTF-8.
    pub fn job_key(&self) -> &str {
        self.key.as_deref().unwrap_or(&self.job_id)
    }

    /// The report of the row: `job `J` run `R`: column C: why; run left out` (the whole
    /// job when it is the job's own row), as `history` and `simulate --lookout-db` print it
    /// after `warning: `.
    pub fn left_out(&self) -> String {
        let what = if self.run_id.is_some() { "run" } else { "job" };
        format!("{self}; {what} left out")
    }
}

impl std::fmt::Display for RowError {
    /// `job `J` run `R`: column finished: why` (docs/lookout.md).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "job `{}`", self.job_id)?;
        if let Some(r) = &self.run_id {
            write!(f, " run `{r}`")?;
        }
        match self.place {
            Place::Column(c) => write!(f, ": column {c}")?,
            Place::Field(c) => write!(f, ": field {c}")?,
            Place::Row => {}
        }
        write!(f, ": {}", self.message)
    }
}

/// A mapped job: `history` is `None` when no run is left to replay (every run in flight or
/// left out); the job is then not exported and counted by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub history: Option<FailureHistory>,
    pub notes: Notes,
}

/// docs/estimates.md: Lookout's requests (`job.cpu` in millicores, `job.gpu` in devices, 0 or more)
/// as `job.resources`; a request of 0 is none, and a job with neither has no `resources`
/// (its hours count 0, in `withoutResources`). Its memory is `job.memory` already.
fn resources(cpu: i64, gpu: i64) -> Option<Resources> {
    let r = Resources {
        cpu_milli: (cpu > 0).then_some(cpu as u64),
        memory: None,
        gpu_milli: (gpu > 0).then(|| (gpu as u64).saturating_mul(1000)),
    };
    (r != Resources::default()).then_some(r)
}

/// Maps one job; `hints`: the deployed categorizer's, to take the executor's hint off a
/// classified run's text (none: texts are kept whole, counted). `Err` only when the job's
/// own row cannot be mapped (a negative memory): the job is then left out.
pub fn map_job(src: LookoutJob, hints: Option<&Hints>) -> Result<Mapped, RowError> {
    // How the record ends the job, when it is complete (docs/lookout.md "Mapping"): written
    // below only if every run is written too.
    let end = src
        .job
        .state
        .filter(|s| src.unreadable_runs == 0 && record_complete(&src, *s))
        .and_then(job_state::end);
    let LookoutJob {
        job: j,
        runs: mut order,
        ..
    } = src;
    let job = job_of(j)?;
    in_time_order(&mut order);
    let mut notes = Notes::default();
    let mut runs = Vec::with_capacity(order.len());
    let mut prev_end = job.submitted_at;
    // The submission plus the `queuedFor` and `runFor` of the runs written: where a run
    // written with `queuedFor` starts.
    let mut chain: Option<i128> = job.submitted_at.map(|t| i128::from(t.0));
    let total = order.len();
    // Every run is written: a run left out leaves the record's end unsaid (the runs the
    // replay sees are not all the job had, so its end is no evidence against them).
    let mut whole = true;
    for (i, mut r) in order.into_iter().enumerate() {
        let mut run = Run {
            node: r.node.take(),
            ..Run::default()
        };
        let debug_text = r.debug.as_deref().filter(|d| !d.is_empty());
        let (has_debug_text, debug) = (debug_text.is_some(), debug_text.and_then(debug_doc::read));
        match r.state {
            state::PENDING | state::RUNNING | state::LEASED => {
                notes.in_flight_jobs = 1;
                notes.in_flight_runs += (total - i) as u64;
                break;
            }
            state::MAX_RUNS_EXCEEDED => {
                whole = false;
                notes.max_runs_exceeded += 1;
                notes.after_max_runs += (total - i - 1) as u64;
                break;
            }
            state::TERMINATED => {
                whole = false;
                notes.terminated += 1;
                continue;
            }
            state::SUCCEEDED => run.outcome = Outcome::Succeeded,
            state::LEASE_RETURNED => {
                run.outcome = Outcome::LeaseReturned;
                returned_lease(
                    &mut run,
                    r.error,
                    r.error_truncated,
                    r.category,
                    r.subcategory,
                    debug.as_ref(),
                    hints,
                    &mut notes,
                );
            }
            state::UNABLE_TO_SCHEDULE => {
                notes.unable_to_schedule += 1;
                run.outcome = Outcome::LeaseReturned;
            }
            state::CANCELLED => run.outcome = Outcome::Cancelled,
            state::LEASE_EXPIRED => {
                run.category = Some(CATEGORY_INTERNAL.into());
                run.subcategory = Some("lease-expired".into());
                run.executor_path = Some(ExecutorPath::Unclassified);
            }
            state::FAILED | state::PREEMPTED => failed_run(&mut run, &mut r, debug.as_ref(), hints, &mut notes),
            _ => {
                whole = false;
                notes.unknown_state += 1;
                continue;
            }
        }
        if has_debug_text && debug.is_none() {
            notes.debug_not_document += 1;
        }
        if let Some(d) = debug {
            // `pod.Status.Reason`: what `onConditions: [Evicted]` and `[DeadlineExceeded]` read.
            for c in [Condition::Evicted, Condition::DeadlineExceeded] {
                if d.reason == c.as_str() && !run.conditions.contains(&c) {
                    run.conditions.push(c);
                }
            }
            run.events = d.events;
        }
        // `default` is what a history without `pool` reads as: written only when another.
        run.pool = r.pool.take().filter(|p| pool_or_default(Some(p)) != DEFAULT_POOL);
        let start = r.started.or(r.leased).or(r.pending);
        match (chain, start) {
            // Placed by the times before it (docs/contention.md "Times"): its start comes
            // back as Lookout's.
            (Some(at), Some(s)) if i128::from(s.0) >= at => {
                run.queued_for = GoDuration(u64::try_from(i128::from(s.0) - at).unwrap_or(u64::MAX));
            }
            // Before the chain: no `queuedFor` says it, its start does.
            (Some(_), Some(s)) => {
                run.started_at = Some(StartedAt::Absolute(s));
                notes.started_early += 1;
            }
            _ => run.queued_for = span(prev_end, start, &mut notes),
        }
        run.run_for = span(start, r.finished, &mut notes);
        prev_end = r.finished.or(start).or(prev_end);
        chain = chain.map(|at| at + i128::from(run.queued_for.0) + i128::from(run.run_for.0));
        runs.push(run);
        notes.runs += 1;
    }
    let job = Job {
        state: end.filter(|_| whole),
        ..job
    };
    let history = (!runs.is_empty()).then_some(FailureHistory {
        job,
        runs,
        expect: None,
    });
    Ok(Mapped { history, notes })
}

/// A job's columns as a [`Job`]: a negative memory, or a CPU or GPU request that is negative
/// or past what `simulate --history` reads ([`Resources::MILLI_MAX`] thousandths: Lookout's
/// `job.gpu` at 9223372036854775807), is the row's error, so that no counter, figure or
/// export carries a saturated number.
fn job_of(j: JobRow) -> Result<Job, RowError> {
    if j.memory < 0 {
        return Err(RowError::job(
            &j.job_id,
            Place::Column("memory"),
            format!("`{}` where a byte count of 0 or more was expected", j.memory),
        ));
    }
    // Millicores, and devices (a thousand thousandths each).
    let cpu_max = Resources::MILLI_MAX;
    let gpu_max = Resources::MILLI_MAX / 1000;
    for (column, value, max, unit) in [("cpu", j.cpu, cpu_max, "millicores"), ("gpu", j.gpu, gpu_max, "GPUs")] {
        if value < 0 {
            return Err(RowError::job(
                &j.job_id,
                Place::Column(column),
                format!("`{value}` where a request of 0 or more was expected"),
            ));
        }
        if value as u64 > max {
            return Err(RowError::job(
                &j.job_id,
                Place::Column(column),
                format!("`{value}` where a request of at most {max} {unit} was expected"),
            ));
        }
    }
    Ok(Job {
        id: j.job_id,
        queue: Some(j.queue),
        job_set: j.job_set.filter(|s| !s.is_empty()),
        submitted_at: j.submitted,
        annotations: j.annotations,
        memory: (j.memory > 0).then_some(j.memory as f64),
        resources: resources(j.cpu, j.gpu),
        ..Job::default()
    })
}

/// Runs in the order they were leased (else pending, else started): a run with no time at
/// all last; ties by run id.
fn in_time_order(order: &mut [RunRow]) {
    order.sort_by(|a, b| {
        let (ka, kb) = (
            a.leased.or(a.pending).or(a.started),
            b.leased.or(b.pending).or(b.started),
        );
        match (ka, kb) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then_with(|| a.run_id.cmp(&b.run_id))
    });
}

/// A failed or preempted run: its category, its executor path, and its text and exit codes
/// in the containers they belong to (docs/lookout.md "Mapping"), what was lost counted in
/// `notes`. Takes the row's text and category.
fn failed_run(
    run: &mut Run,
    r: &mut RunRow,
    debug: Option<&debug_doc::PodDebug>,
    hints: Option<&Hints>,
    notes: &mut Notes,
) {
    if r.state == state::PREEMPTED {
        run.conditions.push(Condition::Preempted);
    }
    run.category = r.category.take().filter(|c| !c.is_empty());
    run.subcategory = r.subcategory.take().filter(|c| !c.is_empty());
    if run.category.is_none() {
        notes.no_category += 1;
    }
    let message = r.error.take().filter(|m| !m.is_empty());
    let path = if r.state == state::PREEMPTED || run.category.as_deref() == Some(CATEGORY_INTERNAL) {
        ExecutorPath::Unclassified
    } else if message.as_deref().is_some_and(executor_text::stuck_pod) {
        ExecutorPath::StuckPod
    } else {
        ExecutorPath::FailedPod
    };
    run.executor_path = Some(path);
    let message = match path {
        ExecutorPath::Unclassified => message,
        _ => message.map(|m| without_hint(m, run, hints, notes)),
    };
    if path == ExecutorPath::StuckPod {
        // The pending pod's text: its containers rarely ran, and Lookout keeps
        // only the first non-zero exit code of those that did.
        if r.error_truncated {
            notes.error_text_truncated += 1;
        }
        if let Some(code) = r.exit_code.filter(|c| *c != 0) {
            notes.first_exit_code_only += 1;
            run.containers.push(Container {
                exit_code: i64::from(code),
                ..Container::default()
            });
        }
        run.pod_error = message;
    } else if let Some(named) = message.as_deref().and_then(composed::containers) {
        // The executor's own per-container lines: names, codes, reasons and
        // messages are all there, so Lookout's one exit code is not needed.
        if r.error_truncated {
            notes.error_text_truncated += 1;
        }
        let init = debug.map_or(&[][..], |d| &d.init_containers[..]);
        run.containers.extend(named.into_iter().map(|c| Container {
            init: init.contains(&c.name),
            name: c.name,
            exit_code: i64::from(c.exit_code),
            reason: c.reason,
            message: c.message,
        }));
    } else {
        match r.exit_code {
            Some(code) => {
                notes.first_exit_code_only += 1;
                if message.is_some() && r.error_truncated {
                    notes.error_text_truncated += 1;
                }
                run.containers.push(Container {
                    exit_code: i64::from(code),
                    message,
                    ..Container::default()
                });
            }
            None => {
                if r.state == state::FAILED {
                    notes.no_exit_code += 1;
                }
                if message.is_some() {
                    notes.error_text_dropped += 1;
                }
            }
        }
    }
}

/// A returned lease's error text and category (upstream's `PodLeaseReturned` carries both):
/// a stuck pod retried, or a failed-pod check, classified by the executor, keep them as
/// `podError` (without the hint) and `category`; a failed submission's text reads like a
/// check's, so a text without a category or a failed pod's debug document is kept without a
/// path, counted.
#[allow(clippy::too_many_arguments)] // the row's fields, moved in, and where the answer goes
fn returned_lease(
    run: &mut Run,
    error: Option<String>,
    truncated: bool,
    category: Option<String>,
    subcategory: Option<String>,
    debug: Option<&debug_doc::PodDebug>,
    hints: Option<&Hints>,
    notes: &mut Notes,
) {
    let Some(text) = error.filter(|m| !m.is_empty()) else {
        return;
    };
    if truncated {
        notes.error_text_truncated += 1;
    }
    run.category = category.filter(|c| !c.is_empty());
    run.subcategory = subcategory.filter(|c| !c.is_empty());
    run.executor_path = if executor_text::stuck_pod(&text) {
        Some(ExecutorPath::StuckPod)
    } else if run.category.is_some() || debug.is_some_and(debug_doc::PodDebug::failed_pod) {
        Some(ExecutorPath::FailedPodCheck)
    } else {
        notes.lease_return_unplaced += 1;
        None
    };
    run.pod_error = Some(without_hint(text, run, hints, notes));
}

/// `text` without the hint the executor appended for `run`'s recorded category, when the
/// deployed categorizer's `hints` name one; without hints, a text of a run with a category
/// (only a rule's match has a hint) is kept whole and counted.
fn without_hint(text: String, run: &Run, hints: Option<&Hints>, notes: &mut Notes) -> String {
    let Some(category) = run.category.as_deref() else {
        return text;
    };
    match hints {
        None => {
            notes.hint_kept += 1;
            text
        }
        Some(h) => match h.strip(&text, category, run.subcategory.as_deref()) {
            Some(message) => message.to_string(),
            None => text,
        },
    }
}

/// `to − from`, 0s (counted) when a time is missing or the difference is negative.
fn span(from: Option<Timestamp>, to: Option<Timestamp>, notes: &mut Notes) -> GoDuration {
    match (from, to) {
        (Some(f), Some(t)) => t.since(f).unwrap_or_else(|| {
            notes.out_of_order_times += 1;
            GoDuration(0)
        }),
        _ => {
            notes.missing_times += 1;
            GoDuration(0)
        }
    }
}

/// `job.annotations` as JSON (the REST API's value, or the database's text parsed) → the
/// annotations, or why not (the message of a [`RowError`] at that column).
pub fn annotations(value: &serde_json::Value) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match value {
        serde_json::Value::Null => {}
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match v {
                    serde_json::Value::String(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    other => return Err(format!("annotation `{k}` is not a string (found `{other}`)")),
                }
            }
        }
        other => return Err(format!("not a JSON object (found `{other}`)")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
