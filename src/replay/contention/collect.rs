//! One side's contention, gathered job by job in input order and swept once at the end.
//!
//! Owns: [`Contention`] (the names, the counts and the events of the jobs added, in a
//! [`Spill`]) and [`tally`] (the same over jobs held in memory). Must not: decide which runs
//! a side starts (the caller's [`Started`](super::Started)) or find the incident windows
//! (given at the end, when a replay knows them).

use std::io;

use crate::replay::incidents::Windows;

use super::events::{events, events_started, Counts, Event, Names};
use super::job::{JobRuns, Started};
use super::spill::Spill;
use super::sweep::{Sweep, Tally};

/// One side's jobs so far.
#[derive(Default)]
pub struct Contention {
    names: Names,
    counts: Counts,
    spill: Spill,
    scratch: Vec<Event>,
}

impl Contention {
    /// A collector whose events past `chunk` go to a temporary file.
    pub fn with_chunk(chunk: usize) -> Contention {
        Contention {
            spill: Spill::with_chunk(chunk),
            ..Contention::default()
        }
    }

    /// One job's runs, as its side starts them.
    pub fn add(&mut self, job: &JobRuns) -> io::Result<()> {
        let started = Started {
            recorded: job.runs.len(),
            beyond: job.beyond,
        };
        self.add_started(job, started)
    }

    /// One job as the side that starts `started` of the record's runs (`job`, made with
    /// [`Started::record`]) sees it: the same as [`Contention::add`] of
    /// `JobRuns::of(history, started)`.
    pub fn add_started(&mut self, job: &JobRuns, started: Started) -> io::Result<()> {
        self.scratch.clear();
        let counts = events_started(job, started, &mut self.names, &mut self.scratch);
        self.counts.add(&counts);
        for e in self.scratch.drain(..) {
            self.spill.push(e)?;
        }
        Ok(())
    }

    /// Whether the events went past memory, to a temporary file.
    pub fn spilled(&self) -> bool {
        self.spill.spilled()
    }

    /// The sums of every job added; retries after a failure inside `windows` counted apart.
    pub fn finish(self, windows: &Windows) -> io::Result<Tally> {
        let mut sweep = Sweep::new(windows);
        self.spill.drain(|e| sweep.add(e))?;
        Ok(sweep.finish(self.counts, self.names))
    }
}

/// The sums of `jobs`, all in memory (a few jobs: a test, a window of a live record).
pub fn tally<'a>(jobs: impl IntoIterator<Item = &'a JobRuns>, windows: &Windows) -> Tally {
    let mut names = Names::default();
    let mut counts = Counts::default();
    let mut all = Vec::new();
    for job in jobs {
        counts.add(&events(job, &mut names, &mut all));
    }
    all.sort_unstable_by_key(|e| e.t);
    let mut sweep = Sweep::new(windows);
    for e in &all {
        sweep.add(e);
    }
    sweep.finish(counts, names)
}
