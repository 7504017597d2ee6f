//! The replay, driven end to end: a source's histories → decode → one engine per side →
//! counting → a [`Sink`], in input order.
//!
//! Owns: [`replay`] (a plain replay folded into a [`Summary`]) and [`compare`] (`--baseline`:
//! every job under two Simulators, folded into a [`Comparison`]), each the whole path from a
//! [`HistorySource`](super::source::HistorySource) to [`Sink::end`]: what each worker computes
//! for a job (only what the sink [`Needs`]), the per-unit partial summaries, the count of jobs
//! that could not be replayed, which missing queues to report (once each); and [`replay_job`]
//! (one history under one Simulator: a policy set plus its engine, so that `--baseline` runs
//! each side with its own). Must not: format text for people or write output (that is the
//! sink's), decide exit codes (the caller reads them off the totals), or parse the command
//! line.
//!
//! One part a file: this one, what a replay is given and returns ([`Options`], [`Out`],
//! [`Replayed`], [`Compared`], [`NoAnswer`]) and how an entry or a message reaches the sink;
//! `counts` (what the workers count and the emitting side folds: [`TrialCount`],
//! [`CompareTally`], [`Folded`]); `plain` ([`replay`], [`ReplayFold`]); `baseline`
//! ([`compare`], [`CompareFold`]); `job` (one job under one side: [`replay_job`],
//! [`as_side`], [`runs_left`]).

use std::io;

use crate::engine::JobReport;
use crate::model::failure_history::Timestamp;

use super::backtest::Refusal;
use super::compare::{Comparison, Overflow};
pub use super::fallback::{fallback, Fallback, Fallbacks};
use super::incidents::Look;
use super::parallel::Processed;
use super::partial::{self, Recorder};
use super::shard::Shard;
use super::sink::{Message, Needs, Sink};
use super::source::Pos;
use super::summary::Summary;

mod baseline;
mod compared;
mod counts;
mod job;
mod plain;

pub use baseline::{compare, compare_inspected, CompareFold, Inspect};
pub use compared::{compare_job, Asks, JobCompared, SideCounts, SideReplayed};
pub use counts::{tally_job, tally_job_with, CompareTally, Finished, Folded, IncidentCount, TrialCount, LOST_NAMED};
pub use job::{as_side, replay_job, replay_job_detailed, runs_left, runs_left_after, runs_left_matched, JobFacts};
pub use plain::{replay, ReplayFold};

/// What a plain replay found.
#[derive(Debug)]
pub struct Replayed {
    pub summary: Summary,
    /// Some job got the policies given on the command line (no queue, or a queue not
    /// among the documents).
    pub used_given: bool,
    /// `--backtest-at` could not be made: nothing was handed to [`Sink::end`].
    pub refused: Option<NoAnswer>,
    /// Into a partial: the shard's totals (its entries are recorded; `summary` is empty).
    pub totals: Option<Folded>,
}

/// What a comparison found.
#[derive(Debug)]
pub struct Compared {
    pub comparison: Comparison,
    /// As in [`Replayed`], for the candidate's side.
    pub used_given: bool,
    pub refused: Option<NoAnswer>,
    /// As in [`Replayed`].
    pub totals: Option<Folded>,
}

/// How a replay is run, besides its source, policies and sink.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--backtest-at` (docs/estimates.md): trials of jobs submitted before it fit, the others test.
    pub backtest_at: Option<Timestamp>,
    /// `--shard I/N` (docs/past-one-machine.md): only the jobs of shard I.
    pub shard: Option<Shard>,
    /// A comparison counts the jobs whose record contradicts its baseline (docs/what-if.md
    /// "Does the baseline explain the record?"): the baseline is a policy the cluster ran.
    pub explain: bool,
    /// Incident windows (docs/reference/suggest.md "Incidents"): those known, whose failed
    /// runs' trials the estimates leave out, and whether to find more.
    pub incidents: Look,
}

/// Why a replay has no answer to print: `--backtest-at` has none (a usage error,
/// docs/estimates.md, exit 2), or a sum passed what retryctl can add up (exit 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAnswer {
    /// Jobs without `job.submittedAt`: how many, and the first in input order.
    NotSubmitted { jobs: u64, first: String },
    /// The time leaves one side without trials.
    Refused(Refusal),
    /// A sum of device time past 128 bits.
    Overflow(Overflow),
}

/// One replayed job as a worker hands it over.
enum Done {
    /// The report, with its record rendered by [`Needs::render`] (empty without one).
    Report(Box<JobReport>, Vec<u8>),
    /// Counted into the worker's unit summary already; the report is kept only when there
    /// is something to say about the job (its messages, its missing queue).
    Counted(Option<Box<JobReport>>),
}

impl Done {
    fn report(&self) -> Option<&JobReport> {
        match self {
            Done::Report(r, _) | Done::Counted(Some(r)) => Some(r),
            Done::Counted(None) => None,
        }
    }
}

/// Where a replay's results go.
pub enum Out<'a, 'w> {
    /// A sink renders them as the replay goes.
    Sink(&'a mut dyn Sink),
    /// A partial result records them for `merge` (docs/past-one-machine.md): what any format prints.
    Partial(&'a mut Recorder<'w>),
}

impl Out<'_, '_> {
    fn needs(&self) -> Needs {
        match self {
            Out::Sink(s) => s.needs(),
            Out::Partial(_) => Needs {
                reports: true,
                render: Some(partial::render_job),
                breakdowns: true,
                steps: true,
                change_json: false,
            },
        }
    }
}

/// An entry of a partial that is not a replayed job.
#[derive(Debug)]
pub enum NotReplayed {
    Error(String),
    /// An invalid history file's diagnostics, rendered.
    Invalid(String),
    LeftOut(String),
}

/// What a partial records of an entry that was not replayed; `done` records a job.
pub fn record<T>(
    rec: &mut Recorder<'_>,
    at: &Pos,
    p: Processed<T>,
    done: impl FnOnce(&mut Recorder<'_>, T) -> io::Result<()>,
) -> io::Result<bool> {
    match p {
        Processed::Done(t) => done(rec, t)?,
        Processed::Error(m) => rec.error(at, &m)?,
        Processed::Invalid(f) => rec.invalid(at, &f)?,
        Processed::LeftOut(text) => rec.left_out(at, &text)?,
    }
    Ok(true)
}

/// An entry that was not replayed, into `sink`: errors counted in `errors`.
fn not_replayed_entry(errors: &mut u64, sink: &mut dyn Sink, n: &NotReplayed) -> io::Result<bool> {
    match n {
        NotReplayed::Error(m) => not_replayed(errors, sink, &Message::Error(m)),
        NotReplayed::Invalid(text) => not_replayed(errors, sink, &Message::Rendered(text)),
        NotReplayed::LeftOut(text) => sink.message(&Message::LeftOut(text)).map(|()| true),
    }
}

/// An entry that could not be replayed: counted in `errors`, said on stderr.
fn not_replayed(errors: &mut u64, sink: &mut dyn Sink, m: &Message<'_>) -> io::Result<bool> {
    *errors += 1;
    sink.message(m).map(|()| true)
}

/// A job's contradictions, then its failed expectations.
fn job_messages(sink: &mut dyn Sink, report: &JobReport) -> io::Result<()> {
    for c in &report.contradictions {
        sink.message(&Message::Contradiction {
            job: &report.job_id,
            text: c,
        })?;
    }
    for f in &report.expectation_failures {
        sink.message(&Message::ExpectationFailed {
            job: &report.job_id,
            text: f,
        })?;
    }
    Ok(())
}

/// A closed stdout (`| head`) ends the replay quietly: nobody reads the rest.
fn write_or_stop(r: io::Result<()>) -> io::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

fn ignore_closed(r: io::Result<()>) -> io::Result<()> {
    write_or_stop(r).map(|_| ())
}

#[cfg(test)]
mod tests;
