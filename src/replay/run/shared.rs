//! What a plain replay and a comparison share: their totals
//! ([`Replayed`], [`Compared`]), where their output goes ([`Out`]), and how an entry that is not
//! replayed, a job's messages and a closed output are said. Must not: replay.

use std::io;

use crate::engine::JobReport;
use crate::replay::compare::Comparison;
use crate::replay::parallel::Processed;
use crate::replay::partial::{self, Recorder};
use crate::replay::sink::{Message, Needs, Sink};
use crate::replay::source::Pos;
use crate::replay::summary::Summary;

use super::counts::Folded;
use super::options::NoAnswer;

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

/// One replayed job as a worker hands it over.
pub(super) enum Done {
    /// The report, with its record rendered by [`Needs::render`] (empty without one).
    Report(Box<JobReport>, Vec<u8>),
    /// Counted into the worker's unit summary already; the report is kept only when there
    /// is something to say about the job (its messages, its missing queue).
    Counted(Option<Box<JobReport>>),
}

impl Done {
    pub(super) fn report(&self) -> Option<&JobReport> {
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
    pub(super) fn needs(&self) -> Needs {
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
pub(super) fn not_replayed_entry(errors: &mut u64, sink: &mut dyn Sink, n: &NotReplayed) -> io::Result<bool> {
    match n {
        NotReplayed::Error(m) => not_replayed(errors, sink, &Message::Error(m)),
        NotReplayed::Invalid(text) => not_replayed(errors, sink, &Message::Rendered(text)),
        NotReplayed::LeftOut(text) => sink.message(&Message::LeftOut(text)).map(|()| true),
    }
}

/// An entry that could not be replayed: counted in `errors`, said on stderr.
pub(super) fn not_replayed(errors: &mut u64, sink: &mut dyn Sink, m: &Message<'_>) -> io::Result<bool> {
    *errors += 1;
    sink.message(m).map(|()| true)
}

/// A job's contradictions, then its failed expectations.
pub(super) fn job_messages(sink: &mut dyn Sink, report: &JobReport) -> io::Result<()> {
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
pub(super) fn write_or_stop(r: io::Result<()>) -> io::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

pub(super) fn ignore_closed(r: io::Result<()>) -> io::Result<()> {
    write_or_stop(r).map(|_| ())
}
