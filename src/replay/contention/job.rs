//! One job as the contention sweep sees one side of it: the recorded runs the side starts,
//! each with its time span, its pool and, for a retry, when the failed run before it ended;
//! the job's queue and requests; the runs the side starts beyond the record.
//!
//! Owns: [`Started`], [`JobRuns`] (with its names, as a test or a caller that holds a few
//! jobs writes it), [`Job`] and [`Run`] (with its names numbered, what the events are made
//! of) and [`run_spans`] (the times of docs/contention.md: a run's
//! start is its `startedAt`, else the job's `submittedAt` plus the `queuedFor` and `runFor`
//! of the runs before it plus its own `queuedFor`; its end, the start plus `runFor`). Pure.
//! Must not: know other jobs (that is the sweep's).

pub use crate::model::failure_history::DEFAULT_POOL;
use crate::model::failure_history::{pool_or_default, FailureHistory, Outcome, StartedAt};
use crate::replay::incidents;

/// Which runs a side starts: the first `recorded` runs of the history, then `beyond` runs
/// the record does not hold (a Pending side's runs left, docs/estimates.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    pub recorded: usize,
    pub beyond: u32,
}

impl Started {
    /// The record itself: every recorded run, none beyond.
    pub fn record(history: &FailureHistory) -> Started {
        Started {
            recorded: history.runs.len(),
            beyond: 0,
        }
    }
}

/// One run a side starts, as the sweep needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpan {
    /// `[start, end)` in nanoseconds since the epoch; `None`: untimed (no start).
    pub span: Option<(i64, i64)>,
    pub pool: String,
    /// For a run after a failed run: that run's time as the incident windows place it
    /// (`incidents::ends`), to decide at the sweep whether the retry follows a failure inside
    /// a window (the windows are known only once every job is read).
    pub after_failed: Option<i64>,
}

/// One job's runs as the events are made of them: [`JobRuns`] with its queue and pools
/// numbered (`Names::number`).
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    pub queue: u32,
    pub gpu: u64,
    pub cpu: u64,
    pub submitted: Option<i64>,
    pub runs: &'a [Run],
    pub beyond: u32,
}

/// [`RunSpan`] with its pool numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub span: Option<(i64, i64)>,
    pub pool: u32,
    pub after_failed: Option<i64>,
}

/// What the sweep needs of one job for one side. Small: a worker makes it where the history
/// is decoded, and the fold hands it on in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRuns {
    /// The job's queue; empty when the history names none.
    pub queue: String,
    /// The job's requests in thousandths (`job.resources`), 0 when none.
    pub gpu: u64,
    pub cpu: u64,
    /// `job.submittedAt`, the start of the first wait.
    pub submitted: Option<i64>,
    /// The recorded runs the side starts, in order.
    pub runs: Vec<RunSpan>,
    /// Runs the side starts beyond the record: no times, counted as not placed.
    pub beyond: u32,
}

impl JobRuns {
    /// `history` as the side that starts `started` sees it; `ends`: scratch.
    pub fn of(history: &FailureHistory, started: Started, ends: &mut Vec<Option<i64>>) -> JobRuns {
        let mut runs = Vec::with_capacity(started.recorded.min(history.runs.len()));
        each_run(
            history,
            started.recorded,
            &mut Vec::new(),
            None,
            ends,
            |span, pool, after_failed| {
                runs.push(RunSpan {
                    span,
                    pool: pool.to_string(),
                    after_failed,
                })
            },
        );
        let (gpu, cpu) = requests(history);
        JobRuns {
            queue: history.job.queue.clone().unwrap_or_default(),
            gpu,
            cpu,
            submitted: history.job.submitted_at.map(|t| t.0),
            runs,
            beyond: started.beyond,
        }
    }
}

/// The job's requests in thousandths (`job.resources`): GPU and CPU, 0 when none.
pub fn requests(history: &FailureHistory) -> (u64, u64) {
    let resources = history.job.resources.unwrap_or_default();
    (resources.gpu_milli.unwrap_or(0), resources.cpu_milli.unwrap_or(0))
}

/// Each of the first `recorded` runs of `history` in order, to `f`: its span ([`run_spans`]),
/// its pool's name and, after a failed run, that run's time as the incident windows place it
/// ([`RunSpan::after_failed`]: `incidents::ends`, or `known`, those ends computed already).
/// `spans` and `ends`: scratch.
pub fn each_run(
    history: &FailureHistory,
    recorded: usize,
    spans: &mut Vec<Option<(i64, i64)>>,
    known: Option<&[Option<i64>]>,
    ends: &mut Vec<Option<i64>>,
    mut f: impl FnMut(Option<(i64, i64)>, &str, Option<i64>),
) {
    run_spans(history, spans);
    let ends: &[Option<i64>] = match known {
        Some(known) if known.len() == history.runs.len() => known,
        _ => {
            incidents::ends(history, ends);
            ends
        }
    };
    let runs = &history.runs[..recorded.min(history.runs.len())];
    for (k, (run, &span)) in runs.iter().zip(spans.iter()).enumerate() {
        let after_failed = k
            .checked_sub(1)
            .filter(|&before| history.runs[before].outcome == Outcome::Failed)
            .and_then(|before| ends[before]);
        f(span, pool_or_default(run.pool.as_deref()), after_failed);
    }
}

/// Each run's `[start, end)` (docs/contention.md "Times"), into `out`, one entry a run:
/// `None` for a run nothing places (no `startedAt`, and no `submittedAt` to count from) or
/// one past the 64 bits of nanoseconds.
pub fn run_spans(history: &FailureHistory, out: &mut Vec<Option<(i64, i64)>>) {
    out.clear();
    let submitted = history.job.submitted_at.map(|t| i128::from(t.0));
    // The `queuedFor` and `runFor` of the runs before this one.
    let mut elapsed: i128 = 0;
    for run in &history.runs {
        let start = match run.started_at {
            Some(StartedAt::Absolute(t)) => Some(i128::from(t.0)),
            Some(StartedAt::Offset(d)) => submitted.map(|s| s + i128::from(d.0)),
            None => submitted.map(|s| s + elapsed + i128::from(run.queued_for.0)),
        };
        elapsed += i128::from(run.queued_for.0) + i128::from(run.run_for.0);
        let span = start.and_then(|s| {
            let start = i64::try_from(s).ok()?;
            let end = i64::try_from(s + i128::from(run.run_for.0)).ok()?;
            Some((start, end))
        });
        out.push(span);
    }
}
