//! One entry through the evaluator, and many of them on every core in input order.
//!
//! Owns: [`process`] (decode one entry, replay it under a [`Simulator`] → [`Processed`]),
//! [`replay_job`] (one history, one Simulator: a policy set plus its engine, so that
//! `--baseline` runs each side with its own), and [`for_each_ordered`], the parallel stage:
//! a reader thread pulls bounded chunks from the source while rayon workers decode and
//! evaluate a chunk; results are handed back in input order, so output and summary are
//! byte-identical to a single-threaded run, and at most a few chunks are in memory
//! whatever the input size. Must not: format text for people or write output.

use std::collections::HashSet;
use std::io;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::simulator::Simulator;
use crate::engine::{Detail, JobReport, JobStatus, Settings};
use crate::input::SourceFile;
use crate::model::history::FailureHistory;

use super::decode::decode_line;
use super::source::{Body, Entry, HistorySource, Origin, Progress};

/// Entries handed to the workers at a time: large enough to keep both cores busy between
/// hand-offs, small enough that memory stays flat (a few MiB of lines and reports).
pub const CHUNK: usize = 1024;

/// A decoded entry, ready to replay.
pub struct Job {
    pub origin: Origin,
    pub settings: Arc<Settings>,
    pub history: FailureHistory,
}

/// What became of one entry.
pub enum Processed<T> {
    /// The job replayed (`T`: a report, a comparison, …).
    Done(T),
    /// Not replayed; the message names where (`file:line: …`).
    Error(String),
    /// A YAML file with invalid documents.
    Invalid(Box<SourceFile>),
}

/// Decodes an entry; `Err` is what to report instead of a job.
pub fn decode(entry: Entry) -> Result<Job, Processed<std::convert::Infallible>> {
    let Entry { origin, settings, body } = entry;
    let mut history = match body {
        Body::Json(line) => match decode_line(&line, origin.line.unwrap_or(1)) {
            Ok(h) => h,
            Err(msg) => return Err(Processed::Error(format!("{origin}: {msg}"))),
        },
        Body::History(h) => *h,
        Body::Error(msg) => return Err(Processed::Error(format!("{origin}: {msg}"))),
        Body::Invalid(file) => return Err(Processed::Invalid(file)),
    };
    if history.job.id.is_empty() {
        history.job.id = origin.default_id();
    }
    Ok(Job {
        origin,
        settings,
        history,
    })
}

/// Decodes an entry and applies `f` to the job; errors pass through.
pub fn process<T>(entry: Entry, f: impl FnOnce(Job) -> Result<T, String>) -> Processed<T> {
    match decode(entry) {
        Ok(job) => match f(job) {
            Ok(t) => Processed::Done(t),
            Err(msg) => Processed::Error(msg),
        },
        Err(Processed::Error(m)) => Processed::Error(m),
        Err(Processed::Invalid(f)) => Processed::Invalid(f),
        Err(Processed::Done(never)) => match never {},
    }
}

/// One history under one Simulator, every text written. Every run after the end of the job
/// that has an `expect` is reported (the evaluator's replay names only the first).
pub fn replay_job(sim: &Simulator, settings: &Settings, history: &FailureHistory) -> Result<JobReport, String> {
    replay_job_detailed(sim, settings, history, Detail::Full)
}

/// [`replay_job`] with the texts `detail` asks for ([`Detail::Summary`] when only the
/// summary is printed).
pub fn replay_job_detailed(
    sim: &Simulator,
    settings: &Settings,
    history: &FailureHistory,
    detail: Detail,
) -> Result<JobReport, String> {
    let mut report = sim.simulate_detailed(history, settings, detail)?;
    let ended = !matches!(report.status, JobStatus::Pending { .. });
    if ended && history.runs.len() > report.runs.len() {
        let end = report.runs.len().saturating_sub(1);
        let at = report
            .expectation_failures
            .iter()
            .position(|f| f.starts_with("job: "))
            .unwrap_or(report.expectation_failures.len());
        let mut missing = Vec::new();
        for (k, run) in history.runs.iter().enumerate().skip(report.runs.len()) {
            let prefix = format!("run {k}: ");
            if run.expect.is_some() && !report.expectation_failures.iter().any(|f| f.starts_with(&prefix)) {
                missing.push(format!(
                    "run {k}: has expectations but is never evaluated (the job ended at run {end})"
                ));
            }
        }
        report.expectation_failures.splice(at..at, missing);
    }
    Ok(report)
}

/// Whether a job got the policies given on the command line (`--retry-policy`, or every
/// policy) instead of its queue's: `None` when its queue was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// The job names no queue.
    NoQueue,
    /// The job's queue is not among the documents.
    Missing(String),
}

pub fn fallback(sim: &Simulator, history: &FailureHistory) -> Option<Fallback> {
    match history.job.queue.as_deref() {
        None => Some(Fallback::NoQueue),
        Some(q) if sim.has_queue(q) => None,
        Some(q) => Some(Fallback::Missing(q.to_string())),
    }
}

/// Folds [`Fallback`]s in input order: which missing queue to report (each once), and
/// whether the given policies were used at all.
#[derive(Debug, Default)]
pub struct Fallbacks {
    seen: HashSet<String>,
    pub used_given: bool,
}

/// Distinct missing queues reported at most (a bad file must not fill the memory).
const MAX_REPORTED_QUEUES: usize = 1000;

impl Fallbacks {
    /// The missing queue to report now, if this is its first job.
    pub fn add(&mut self, f: Option<Fallback>) -> Option<String> {
        match f? {
            Fallback::NoQueue => {
                self.used_given = true;
                None
            }
            Fallback::Missing(q) => {
                self.used_given = true;
                (self.seen.len() < MAX_REPORTED_QUEUES && !self.seen.contains(&q)).then(|| {
                    self.seen.insert(q.clone());
                    q
                })
            }
        }
    }
}

/// Runs `work` on every entry of `source` on all cores, and `emit` on each result in input
/// order. `emit` returns `Ok(false)` to stop early (stdout closed); `progress` is called
/// between chunks.
pub fn for_each_ordered<S, T, W, E, P>(source: S, work: W, mut emit: E, mut progress: P) -> io::Result<()>
where
    S: HistorySource,
    T: Send,
    W: Fn(Entry) -> T + Sync,
    E: FnMut(T) -> io::Result<bool>,
    P: FnMut(Progress),
{
    std::thread::scope(|scope| {
        // Two chunks queued ahead: the reader stays one step in front of the workers.
        let (tx, rx) = sync_channel::<(Vec<Entry>, Progress)>(2);
        scope.spawn(move || {
            let mut source = source;
            loop {
                let chunk: Vec<Entry> = source.by_ref().take(CHUNK).collect();
                if chunk.is_empty() {
                    break;
                }
                if tx.send((chunk, source.progress())).is_err() {
                    break;
                }
            }
        });
        for (chunk, at) in rx {
            let results: Vec<T> = chunk.into_par_iter().map(&work).collect();
            for r in results {
                if !emit(r)? {
                    // Dropping the receiver stops the reader at its next send.
                    return Ok(());
                }
            }
            progress(at);
        }
        Ok(())
    })
}
