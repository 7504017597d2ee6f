//! Lookout rows → a FailureHistory (SPEC §3.3). Pure: no I/O, no clock, no environment.
//!
//! Owns: the run-state table, the order of runs, the times, the exit code / category / error
//! text of a failed run, and the counts of what Lookout could not tell ([`Notes`]). Must not:
//! read a database or the network (the sources in `lookout_db` / `lookout_api` do), or print.
//!
//! The mapping, exactly (run states per `contract/lookout/README.md`):
//!
//! | `job_run_state` | FailureHistory run |
//! |---|---|
//! | 3 RUN_SUCCEEDED | `outcome: succeeded` |
//! | 4 RUN_FAILED | failed; one container **without a name** carrying `exit_code` and the error text as `message`; `failure_category`/`failure_subcategory` → `category`/`subcategory` |
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
//! Every decision that is not the SPEC's own is counted in [`Notes`] and said on stderr.
//!
//! Times: runs are ordered by `leased` (then `pending`, `started`, `run_id` when Lookout has
//! no lease time). A run "starts" at `started`, else `leased`, else `pending`.
//! `queuedFor` = start − the previous run's `finished` (run 0: − `submitted`); `runFor` =
//! `finished` − start. Lookout's times can be out of order (clock skew between executor and
//! scheduler): a negative difference becomes `0s` and is counted, never a panic; a missing
//! time gives `0s` and is counted too. A run left out (TERMINATED, unknown state) keeps no
//! time of its own: the next run's `queuedFor` spans it, so the timeline is not shortened.
//!
//! A failed run with no `exit_code` gets no container (no exit code is invented); if it had
//! error text, that text is counted as not attached. Lookout keeps only the first non-zero
//! container exit code: every container written is counted under that note.

use std::collections::BTreeMap;
use std::io::Read;

use crate::model::duration::GoDuration;
use crate::model::history::{Container, FailureHistory, Job, Outcome, Run, Timestamp};
use crate::model::policy::Condition;

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

/// A run's error text as the source has it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ErrorText {
    #[default]
    None,
    /// `job_run.error`: a zlib stream (compressed or stored).
    Zlib(Vec<u8>),
    /// Already text (the REST API's `jobRunError`).
    Text(String),
}

/// One `job` row, with what the mapping needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRow {
    pub job_id: String,
    pub queue: String,
    pub jobset: String,
    /// Bytes.
    pub memory: Option<i64>,
    pub submitted: Option<Timestamp>,
    /// `job.annotations` as JSON text, or `None` (NULL).
    pub annotations: Option<serde_json::Value>,
}

/// One `job_run` row.
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
    pub error: ErrorText,
    pub category: Option<String>,
    pub subcategory: Option<String>,
}

/// A job as a source reads it: the job row and all its runs (any order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LookoutJob {
    pub job: JobRow,
    pub runs: Vec<RunRow>,
}

/// A row that cannot be mapped: reported with its ids, the job is skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    pub job_id: String,
    pub run_id: Option<String>,
    pub message: String,
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.run_id {
            Some(r) => write!(f, "job `{}` run `{}`: {}", self.job_id, r, self.message),
            None => write!(f, "job `{}`: {}", self.job_id, self.message),
        }
    }
}

/// What Lookout could not tell, and the decisions the mapping took, as counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Notes {
    /// Runs written.
    pub runs: u64,
    /// Failed runs (FAILED, PREEMPTED) without `failure_category`.
    pub no_category: u64,
    /// Containers written from the one exit code Lookout keeps (first non-zero container).
    pub first_exit_code_only: u64,
    /// FAILED runs without `exit_code` (no container written).
    pub no_exit_code: u64,
    /// Error texts not attached because the run had no exit code.
    pub error_text_dropped: u64,
    /// 1 when the job has a run in flight (the history ends before it).
    pub in_flight_jobs: u64,
    /// Runs left out because they are in flight, or come after one.
    pub in_flight_runs: u64,
    pub terminated: u64,
    pub unable_to_schedule: u64,
    pub max_runs_exceeded: u64,
    /// Runs left out after a MAX_RUNS_EXCEEDED run.
    pub after_max_runs: u64,
    pub unknown_state: u64,
    /// Negative durations clamped to 0s.
    pub out_of_order_times: u64,
    /// Durations set to 0s because a time was missing.
    pub missing_times: u64,
}

impl Notes {
    pub fn add(&mut self, o: &Notes) {
        self.runs += o.runs;
        self.no_category += o.no_category;
        self.first_exit_code_only += o.first_exit_code_only;
        self.no_exit_code += o.no_exit_code;
        self.error_text_dropped += o.error_text_dropped;
        self.in_flight_jobs += o.in_flight_jobs;
        self.in_flight_runs += o.in_flight_runs;
        self.terminated += o.terminated;
        self.unable_to_schedule += o.unable_to_schedule;
        self.max_runs_exceeded += o.max_runs_exceeded;
        self.after_max_runs += o.after_max_runs;
        self.unknown_state += o.unknown_state;
        self.out_of_order_times += o.out_of_order_times;
        self.missing_times += o.missing_times;
    }
}

/// A mapped job: `history` is `None` when no run is left to replay (every run in flight or
/// left out); the job is then not exported and counted by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    pub history: Option<FailureHistory>,
    pub notes: Notes,
}

/// A zlib stream (`internal/common/compress`) → text. Invalid UTF-8 is replaced, not
/// refused: the text is only matched by `onMessage` patterns.
pub fn decompress(bytes: &[u8]) -> Result<String, String> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(bytes)
        .read_to_end(&mut out)
        .map_err(|e| format!("`error` is not a zlib stream: {e}"))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Maps one job. `Err` only for a row that cannot be mapped (bad annotations, a corrupt
/// error stream, a negative memory).
pub fn map_job(src: &LookoutJob) -> Result<Mapped, RowError> {
    let j = &src.job;
    let job_err = |message: String| RowError {
        job_id: j.job_id.clone(),
        run_id: None,
        message,
    };
    let mut job = Job {
        id: j.job_id.clone(),
        queue: Some(j.queue.clone()),
        submitted_at: j.submitted,
        ..Job::default()
    };
    match j.memory {
        Some(m) if m < 0 => return Err(job_err(format!("`memory` is negative (`{m}`)"))),
        Some(m) if m > 0 => job.memory = Some(m as f64),
        _ => {}
    }
    job.annotations = annotations(j.annotations.as_ref()).map_err(job_err)?;

    let mut order: Vec<&RunRow> = src.runs.iter().collect();
    order.sort_by(|a, b| {
        let key = |r: &RunRow| (r.leased.or(r.pending).or(r.started), r.run_id.clone());
        // A run with no time at all sorts last.
        let (ka, kb) = (key(a), key(b));
        match (ka.0, kb.0) {
            (Some(x), Some(y)) => x.cmp(&y).then(ka.1.cmp(&kb.1)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => ka.1.cmp(&kb.1),
        }
    });

    let mut notes = Notes::default();
    let mut runs = Vec::new();
    let mut prev_end = j.submitted;
    for (i, r) in order.iter().enumerate() {
        let run_err = |message: String| RowError {
            job_id: j.job_id.clone(),
            run_id: Some(r.run_id.clone()),
            message,
        };
        let mut run = Run {
            node: r.node.clone(),
            ..Run::default()
        };
        match r.state {
            state::PENDING | state::RUNNING | state::LEASED => {
                notes.in_flight_jobs = 1;
                notes.in_flight_runs += (order.len() - i) as u64;
                break;
            }
            state::MAX_RUNS_EXCEEDED => {
                notes.max_runs_exceeded += 1;
                notes.after_max_runs += (order.len() - i - 1) as u64;
                break;
            }
            state::TERMINATED => {
                notes.terminated += 1;
                continue;
            }
            state::SUCCEEDED => run.outcome = Outcome::Succeeded,
            state::LEASE_RETURNED => run.outcome = Outcome::LeaseReturned,
            state::UNABLE_TO_SCHEDULE => {
                notes.unable_to_schedule += 1;
                run.outcome = Outcome::LeaseReturned;
            }
            state::CANCELLED => run.outcome = Outcome::Cancelled,
            state::LEASE_EXPIRED => {
                run.category = Some("internal".into());
                run.subcategory = Some("lease-expired".into());
            }
            state::FAILED | state::PREEMPTED => {
                if r.state == state::PREEMPTED {
                    run.conditions.push(Condition::Preempted);
                }
                run.category = r.category.clone().filter(|c| !c.is_empty());
                run.subcategory = r.subcategory.clone().filter(|c| !c.is_empty());
                if run.category.is_none() {
                    notes.no_category += 1;
                }
                let message = match &r.error {
                    ErrorText::None => None,
                    ErrorText::Text(t) => Some(t.clone()),
                    ErrorText::Zlib(b) => Some(decompress(b).map_err(run_err)?),
                }
                .filter(|m| !m.is_empty());
                match r.exit_code {
                    Some(code) => {
                        notes.first_exit_code_only += 1;
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
            _ => {
                notes.unknown_state += 1;
                continue;
            }
        }
        let start = r.started.or(r.leased).or(r.pending);
        run.queued_for = span(prev_end, start, &mut notes);
        run.run_for = span(start, r.finished, &mut notes);
        prev_end = r.finished.or(start).or(prev_end);
        runs.push(run);
        notes.runs += 1;
    }
    let history = (!runs.is_empty()).then_some(FailureHistory {
        job,
        runs,
        expect: None,
    });
    Ok(Mapped { history, notes })
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

fn annotations(value: Option<&serde_json::Value>) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match value {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                match v {
                    serde_json::Value::String(s) => {
                        out.insert(k.clone(), s.clone());
                    }
                    other => return Err(format!("annotation `{k}` is not a string (found `{other}`)")),
                }
            }
        }
        Some(other) => return Err(format!("`annotations` is not a JSON object (found `{other}`)")),
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
