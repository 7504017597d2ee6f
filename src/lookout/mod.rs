//! Real cluster history → FailureHistory documents (docs/lookout.md, `retryctl history`).
//!
//! Owns: the [`Filter`] both sources apply, the streaming interface they share (an iterator
//! of [`Item`]: one job with all the runs it could read at a time, so memory does not grow
//! with the number of jobs), [`Export`] (a source mapped to FailureHistory values one job at
//! a time, counted into [`ExportTotals`] as it goes: what `history` writes and a replay can
//! consume directly; the type is `replay::source`'s, for a shard's partial holds it). Must
//! not: format output (the command and `output::history` do), guess what Lookout does not say
//! (`mapping` counts it instead), or name a DSN but as `redact::redact_dsn` shows it.
//!
//! - [`db`]: Lookout's PostgreSQL, streamed in one binary `COPY` and decoded by hand.
//! - [`cluster`]: the retry policies and queues upstream's server stores in the same database
//!   (docs/serve.md), read-only.
//! - [`api`]: Lookout's REST API, paged with skip/take.
//! - [`export_source`]: an [`Export`] as a replay's source (`simulate --lookout-db`).
//! - [`terminal`], [`present`]: `watch`'s reads, the jobs that ended and what waits and
//!   retries now.
//! - [`mapping`]: the rows → FailureHistory mapping, pure.
//! - [`composed`], [`debug_doc`]: the executor's composed `error` text and its debug
//!   document, read back into a run's containers, conditions and `events`; pure.
//! - [`executor_text`]: a stuck pod's text told from the others, and the deployed
//!   categorizer's hints taken off the end of a text; pure.
//!
//! Hostile rows (docs/lookout.md): a row a source cannot read is an [`Item::Bad`] (the run, or the
//! job when it is the job's own row, is left out and reported), never the end of the stream;
//! only a lost connection or an answer that is not Lookout's ends it, as `Err`. Text that is
//! not UTF-8 (a `SQL_ASCII` database) is one such row.

pub mod api;
pub mod cluster;
pub mod composed;
pub mod db;
pub mod debug_doc;
pub mod executor_text;
pub mod export_source;
pub mod mapping;
pub mod present;
pub mod terminal;

use crate::model::failure_history::{FailureHistory, Timestamp};
use crate::replay::source::{ExportTotals, Notes};

pub use mapping::{LookoutJob, Place, RowError};

/// The jobs to export. Times bound `job.submitted`: `from` inclusive, `to` exclusive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// `None`: every queue's jobs (`history` without `--queue`).
    pub queue: Option<String>,
    pub jobset: Option<String>,
    pub jobs: Vec<String>,
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
    /// A shard's jobs (docs/past-one-machine.md): only those of the jobs the rest selects
    /// that the statement's hash of their id puts in this shard ([`db::statement`]). Not part
    /// of what the filter says about the history: every shard of it has the same one otherwise.
    pub shard: Option<crate::replay::shard::Shard>,
}

/// What a source yields, job by job. A fatal error (connection lost) ends the stream as
/// `Err(anyhow::Error)`; a row the source itself cannot read is an [`Item::Bad`], yielded
/// before the job it belongs to (whose other runs follow as usual).
#[derive(Debug)]
pub enum Item {
    Job(LookoutJob),
    Bad(RowError),
}

/// A source of jobs: a boxed iterator, so the command treats both alike. `Send`, so that a
/// replay can read it on its own thread (as `replay::source::HistorySource` is read).
pub type JobStream<'a> = Box<dyn Iterator<Item = anyhow::Result<Item>> + Send + 'a>;

/// What an [`Export`] yields, in the source's order.
#[derive(Debug)]
pub enum Event {
    /// A job with at least one run to replay.
    History(Box<FailureHistory>),
    /// A row left out (the run, or the whole job when `run_id` is `None`): report it.
    LeftOut(RowError),
}

/// A source mapped one job at a time ([`mapping::map_job`]), counting as it goes.
pub struct Export<'a> {
    source: JobStream<'a>,
    totals: ExportTotals,
    hints: Option<executor_text::Hints>,
    /// What Lookout could not tell of the last job handed over, its runs counted: taken back
    /// when its writer leaves it out ([`Export::leave_out`]).
    last: Notes,
}

impl<'a> Export<'a> {
    pub fn new(source: JobStream<'a>) -> Export<'a> {
        Export {
            source,
            totals: ExportTotals::default(),
            hints: None,
            last: Notes::default(),
        }
    }

    /// The deployed categorizer's hints, taken off the texts of the runs it classified
    /// (none: those texts are kept whole, counted).
    pub fn with_hints(mut self, hints: Option<executor_text::Hints>) -> Export<'a> {
        self.hints = hints;
        self
    }

    pub fn totals(&self) -> &ExportTotals {
        &self.totals
    }

    /// A job this export handed over that its writer leaves out after all (`history`: its
    /// line would be longer than the readers read): counted as a job left out instead of
    /// exported. `why`: the report, returned to be said.
    pub fn leave_out(&mut self, why: RowError) -> RowError {
        self.totals.jobs = self.totals.jobs.saturating_sub(1);
        self.totals.jobs_left_out += 1;
        // Its runs and what Lookout could not tell of them were counted as exported.
        self.totals.notes.take_back(&self.last);
        why
    }
}

impl Iterator for Export<'_> {
    type Item = anyhow::Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let t = &mut self.totals;
            match self.source.next()? {
                Err(e) => return Some(Err(e)),
                Ok(Item::Bad(e)) => {
                    if e.run_id.is_some() {
                        t.runs_read += 1;
                        t.runs_left_out += 1;
                    } else {
                        t.jobs_read += 1;
                        t.jobs_left_out += 1;
                    }
                    return Some(Ok(Event::LeftOut(e)));
                }
                Ok(Item::Job(job)) => {
                    t.jobs_read += 1;
                    t.runs_read += job.runs.len() as u64;
                    match mapping::map_job(job, self.hints.as_ref()) {
                        Ok(m) => {
                            t.notes.add(&m.notes);
                            self.last = m.notes;
                            match m.history {
                                Some(h) => {
                                    t.jobs += 1;
                                    return Some(Ok(Event::History(Box::new(h))));
                                }
                                None => t.empty_jobs += 1,
                            }
                        }
                        Err(e) => {
                            t.jobs_left_out += 1;
                            return Some(Ok(Event::LeftOut(e)));
                        }
                    }
                }
            }
        }
    }
}
