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

/// Several sides' jobs so far (`tune`'s candidates and their baselines, and the record), in
/// one [`Spill`]: each event tagged with its side, sorted by side then time, and swept side
/// by side at the end. So the chunk in memory, the temporary file and its buffer are one, not
/// one a side: a sweep of a thousand candidates holds what one side holds, and opens one
/// file.
pub struct Sides {
    names: Vec<Names>,
    counts: Vec<Counts>,
    spill: Spill,
    scratch: Vec<Event>,
}

impl Sides {
    /// `n` sides, their events past [`Spill::CHUNK`] together going to one temporary file.
    pub fn new(n: usize) -> Sides {
        Sides::with_chunk(n, Spill::CHUNK)
    }

    /// As [`Sides::new`], the chunk `chunk` events (a test's, to spill a few jobs).
    pub fn with_chunk(n: usize, chunk: usize) -> Sides {
        Sides {
            names: vec![Names::default(); n],
            counts: vec![Counts::default(); n],
            spill: Spill::with_chunk(chunk),
            scratch: Vec::new(),
        }
    }

    /// One job as the side `side` sees it (as [`Contention::add_started`]).
    pub fn add_started(&mut self, side: usize, job: &JobRuns, started: Started) -> io::Result<()> {
        self.scratch.clear();
        let counts = events_started(job, started, &mut self.names[side], &mut self.scratch);
        self.counts[side].add(&counts);
        let tag = u32::try_from(side).unwrap_or(u32::MAX);
        for mut e in self.scratch.drain(..) {
            e.side = tag;
            self.spill.push(e)?;
        }
        Ok(())
    }

    /// Whether the events went past memory, to the temporary file.
    pub fn spilled(&self) -> bool {
        self.spill.spilled()
    }

    /// Each side's sums, in order; retries after a failure inside `windows` counted apart.
    pub fn finish(self, windows: &Windows) -> io::Result<Vec<Tally>> {
        let Sides {
            names, counts, spill, ..
        } = self;
        let mut parts = counts.into_iter().zip(names);
        let mut tallies = Vec::with_capacity(parts.len());
        let mut sweep = Sweep::new(windows);
        // The side the sweep is on: every side before it is finished.
        let mut on = 0u32;
        spill.drain(|e| {
            while on < e.side {
                let (c, n) = parts.next().unwrap_or_default();
                tallies.push(std::mem::replace(&mut sweep, Sweep::new(windows)).finish(c, n));
                on += 1;
            }
            sweep.add(e);
        })?;
        // The side the last event was of, then the sides with no event.
        for (c, n) in parts {
            tallies.push(std::mem::replace(&mut sweep, Sweep::new(windows)).finish(c, n));
        }
        Ok(tallies)
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
