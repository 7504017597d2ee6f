//! An [`Export`] as a replay's [`HistorySource`]: `simulate --lookout-db` replays Lookout's
//! rows as they are mapped, one job at a time, with no file in between (docs/serve.md).
//!
//! Owns: turning each [`Event`] into an [`Entry`] (a history to replay, or a row left out,
//! reported in `history`'s words and not counted as a replay error), and handing what the
//! replay cannot carry back to the command through [`ExportState`]: the [`ExportTotals`] so
//! far (`history`'s summary and `--strict`) and the error that ended the stream early (a
//! lost connection: exit 4). Must not: map rows (that is `mapping`), print, or decide exit codes.
//!
//! The replay reads its source on a thread of its own and holds a bounded number of entries
//! (`replay::parallel`), so memory stays one job per entry in flight, whatever the number of
//! jobs; the state is updated once per event under an uncontended lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{Event, Export};
use crate::engine::Settings;
use crate::replay::source::{Body, Counted, Entry, ExportTotals, HistorySource, Origin, Progress};

/// What the command reads after the replay.
#[derive(Debug, Default)]
pub struct ExportState {
    pub totals: ExportTotals,
    /// The error that ended the stream before its end (the replay covers the jobs before it).
    pub error: Option<anyhow::Error>,
}

/// The replay's view of an export.
pub struct ExportSource<'a> {
    export: Export<'a>,
    settings: Arc<Settings>,
    origin: Origin,
    state: Arc<Mutex<ExportState>>,
    ended: bool,
    ranks: Ranks,
}

/// Each job's place in the database's order (its entries' position, `replay::source::Pos`).
enum Ranks {
    /// The jobs as they come: the last one's id and its place.
    Counted { last: String, n: u64 },
    /// A shard's jobs (docs/past-one-machine.md): their places among every job of the
    /// history, as the database numbered them (`lookout::db::shard_ranks`).
    Known(HashMap<String, u64>),
}

impl Ranks {
    fn of(&mut self, job: &str) -> u64 {
        match self {
            Ranks::Counted { last, n } => {
                if *n == 0 || last != job {
                    *n += 1;
                    job.clone_into(last);
                }
                *n
            }
            // A job the list lacks was added after it was read: last.
            Ranks::Known(map) => map.get(job).copied().unwrap_or(u64::MAX),
        }
    }
}

impl<'a> ExportSource<'a> {
    /// `settings`: the scheduler settings every job gets; `origin`: the name messages about
    /// its jobs start with.
    pub fn new(export: Export<'a>, settings: Settings, origin: &str) -> ExportSource<'a> {
        ExportSource {
            export,
            settings: Arc::new(settings),
            origin: Origin::named(origin),
            state: Arc::default(),
            ended: false,
            ranks: Ranks::Counted {
                last: String::new(),
                n: 0,
            },
        }
    }

    /// A shard's source: `ranks` gives each of its jobs its place among the history's.
    pub fn with_ranks(mut self, ranks: HashMap<String, u64>) -> Self {
        self.ranks = Ranks::Known(ranks);
        self
    }

    /// The totals and the error, readable after the replay has consumed the source.
    pub fn state(&self) -> Arc<Mutex<ExportState>> {
        self.state.clone()
    }

    fn record(&self, error: Option<anyhow::Error>) {
        // A poisoned lock means the replay panicked: that panic is what the user sees.
        if let Ok(mut s) = self.state.lock() {
            s.totals = *self.export.totals();
            if error.is_some() {
                s.error = error;
            }
        }
    }
}

impl Iterator for ExportSource<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if self.ended {
            return None;
        }
        let body = match self.export.next() {
            None => {
                self.ended = true;
                self.record(None);
                return None;
            }
            Some(Err(e)) => {
                self.ended = true;
                self.record(Some(e));
                return None;
            }
            Some(Ok(Event::History(h))) => Body::History(h),
            Some(Ok(Event::LeftOut(e))) => Body::LeftOut {
                text: e.left_out(),
                // Named by its key: an id that is not UTF-8 by its exact bytes, as a
                // shard's ranks name it.
                job: e.job_key().to_string(),
            },
        };
        self.record(None);
        let job = match &body {
            Body::History(h) => h.job.id.as_str(),
            Body::LeftOut { job, .. } => job.as_str(),
            _ => "",
        };
        let rank = self.ranks.of(job);
        Some(Entry {
            origin: self.origin.ranked(rank),
            settings: self.settings.clone(),
            body,
        })
    }
}

impl HistorySource for ExportSource<'_> {
    /// Jobs read so far; the total is not known before the end.
    fn progress(&self) -> Progress {
        Progress {
            done: self.export.totals().jobs_read,
            total: 0,
            counted: Counted::Jobs,
        }
    }

    /// A queue's history: the table format prints only the summary.
    fn bulk(&self) -> bool {
        true
    }

    /// Nothing to do: an export yields no blocks of lines, and a database export of a shard
    /// reads only its own jobs (the statement selects them, `lookout::db`).
    fn sift(&mut self, _: crate::replay::shard::Shard) -> bool {
        true
    }

    /// Every job is the queue's: Lookout selects them by queue.
    fn one_queue(&self) -> Option<crate::replay::source::OneQueue> {
        None
    }
}
