//! The sides' contention, gathered job by job in input order and swept once at the end.
//!
//! Owns: [`Sides`] (the names, each side's counts, and the events of the jobs added, in one
//! [`Spill`], each written once for the sides that hold it), [`Contention`] (one side alone)
//! and [`tally`] (one side over jobs held in memory). Must not: decide which runs a side
//! starts (the caller's [`Started`](super::Started)) or find the incident windows (given at
//! the end, when a replay knows them).

use std::collections::HashMap;
use std::io;

use crate::replay::incidents::Windows;

use super::events::{events, events_by_run, events_started, Counts, Event, Names};
use super::job::{JobRuns, Started};
use super::spill::Spill;
use super::sweep::{Sweep, Tally};

/// One side's jobs so far: [`Sides`] of one.
pub struct Contention(Sides);

impl Default for Contention {
    fn default() -> Contention {
        Contention::with_chunk(Spill::CHUNK)
    }
}

impl Contention {
    /// A collector whose events past `chunk` go to a temporary file.
    pub fn with_chunk(chunk: usize) -> Contention {
        Contention(Sides::with_chunk(1, chunk))
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
        self.0.add(job, &[started])
    }

    /// Whether the events went past memory, to a temporary file.
    pub fn spilled(&self) -> bool {
        self.0.spilled()
    }

    /// The sums of every job added; retries after a failure inside `windows` counted apart.
    pub fn finish(self, windows: &Windows) -> io::Result<Tally> {
        Ok(self.0.finish(windows)?.pop().unwrap_or_default())
    }
}

/// Several sides' jobs so far (a comparison's baseline and candidate and the record; `tune`'s
/// candidates, their baselines and the record), in one [`Spill`], swept together at the end.
///
/// Sides often start the same runs of a job, and a side that starts fewer of them than
/// another holds the events of the runs it starts, the same events. So a job's events are
/// made once, from the record's runs, and each is written once, tagged with the set of sides
/// that start its run (numbered as met; the set of every side is 0); a job whose own waits
/// meet (runs out of order) has its events made once for each group of sides that start the
/// same runs. At the end the events come back in time order once, and each goes to the sweep
/// of every side of its set. One chunk in
/// memory, one temporary file and one sort whatever the number of sides; each side holds its
/// own pool states, which grow with the pools and queues, not the jobs.
pub struct Sides {
    names: Names,
    counts: Vec<Counts>,
    sets: Sets,
    spill: Spill,
    scratch: Vec<Event>,
    /// Scratch: each side's runs started and its number, to group them.
    group: Vec<(usize, u32)>,
    members: Vec<u32>,
    bounds: Vec<(usize, u32)>,
}

/// The sets of sides an event can be of, numbered as met; 0 is every side.
struct Sets {
    ids: HashMap<Box<[u32]>, u32>,
    sides: Vec<Box<[u32]>>,
}

impl Sets {
    fn new(n: usize) -> Sets {
        let every: Box<[u32]> = (0..n).map(side_number).collect();
        Sets {
            ids: HashMap::from([(every.clone(), 0)]),
            sides: vec![every],
        }
    }

    fn id(&mut self, sides: &[u32]) -> u32 {
        if let Some(&id) = self.ids.get(sides) {
            return id;
        }
        let id = side_number(self.sides.len());
        self.sides.push(sides.into());
        self.ids.insert(sides.into(), id);
        id
    }
}

/// A side's (or a set's) number in an event: there are never 2^32 of them.
fn side_number(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl Sides {
    /// `n` sides, their events past [`Spill::CHUNK`] together going to one temporary file.
    pub fn new(n: usize) -> Sides {
        Sides::with_chunk(n, Spill::CHUNK)
    }

    /// As [`Sides::new`], the chunk `chunk` events (a test's, to spill a few jobs).
    pub fn with_chunk(n: usize, chunk: usize) -> Sides {
        Sides {
            names: Names::default(),
            counts: vec![Counts::default(); n],
            sets: Sets::new(n),
            spill: Spill::with_chunk(chunk),
            scratch: Vec::new(),
            group: Vec::new(),
            members: Vec::new(),
            bounds: Vec::new(),
        }
    }

    /// One job as each side sees it: side `i` starts `started[i]` of the record's runs
    /// (`job`, made with [`Started::record`]), as [`Contention::add_started`]. `started`
    /// holds one entry a side.
    pub fn add(&mut self, job: &JobRuns, started: &[Started]) -> io::Result<()> {
        debug_assert_eq!(started.len(), self.counts.len());
        for (counts, s) in self.counts.iter_mut().zip(started) {
            counts.add(&Counts::of(job, *s));
        }
        let len = job.runs.len();
        let recorded = |s: &Started| s.recorded.min(len);
        let Some(first) = started.first().map(recorded) else {
            return Ok(());
        };
        // The common case: every side starts the same runs.
        if started.iter().all(|s| recorded(s) == first) {
            return self.push(job, first, 0);
        }
        self.group.clear();
        self.group
            .extend(started.iter().enumerate().map(|(i, s)| (recorded(s), side_number(i))));
        self.group.sort_unstable();
        self.scratch.clear();
        if events_by_run(job, &mut self.names, &mut self.scratch) {
            // Each event once, for the sides that start its run: those that start more runs
            // than its number, a tail of `group`. `bounds`: each number of runs some side
            // starts, and the set of the sides that start at least that many; an event of run
            // `k` is of the first bound above `k`.
            self.bounds.clear();
            let mut at = 0;
            while at < self.group.len() {
                let runs = self.group[at].0;
                if runs > 0 {
                    self.members.clear();
                    self.members.extend(self.group[at..].iter().map(|&(_, side)| side));
                    self.members.sort_unstable();
                    self.bounds.push((runs, self.sets.id(&self.members)));
                }
                at += self.group[at..].partition_point(|&(r, _)| r == runs);
            }
            for mut e in self.scratch.drain(..) {
                let above = self.bounds.partition_point(|&(runs, _)| runs <= e.set as usize);
                // A run no side starts.
                let Some(&(_, set)) = self.bounds.get(above) else {
                    continue;
                };
                e.set = set;
                self.spill.push(e)?;
            }
            return Ok(());
        }
        // Waits of the job that meet (runs out of order in the record): each group of sides
        // that start the same runs has its own events.
        let mut at = 0;
        while at < self.group.len() {
            let runs = self.group[at].0;
            let to = at + self.group[at..].partition_point(|&(r, _)| r == runs);
            self.members.clear();
            self.members.extend(self.group[at..to].iter().map(|&(_, side)| side));
            let set = self.sets.id(&self.members);
            self.push(job, runs, set)?;
            at = to;
        }
        Ok(())
    }

    /// `job`'s events as the sides that start its first `recorded` runs see them, for `set`.
    fn push(&mut self, job: &JobRuns, recorded: usize, set: u32) -> io::Result<()> {
        self.scratch.clear();
        // The counts are each side's, added above.
        events_started(job, Started { recorded, beyond: 0 }, &mut self.names, &mut self.scratch);
        for mut e in self.scratch.drain(..) {
            e.set = set;
            self.spill.push(e)?;
        }
        Ok(())
    }

    /// Whether the events went past memory, to the temporary file.
    pub fn spilled(&self) -> bool {
        self.spill.spilled()
    }

    /// Each side's sums, in order; retries after a failure inside `windows` counted apart.
    /// Every side's splits are indexed by the names every side met together: a side's
    /// [`Side`](super::Side) keeps the names with a share.
    pub fn finish(self, windows: &Windows) -> io::Result<Vec<Tally>> {
        let Sides {
            names,
            counts,
            sets,
            spill,
            ..
        } = self;
        let mut sweeps: Vec<Sweep> = counts.iter().map(|_| Sweep::new(windows)).collect();
        spill.drain(|e| {
            for &side in sets.sides.get(e.set as usize).map_or(&[][..], |s| &s[..]) {
                sweeps[side as usize].add(e);
            }
        })?;
        Ok(sweeps
            .into_iter()
            .zip(counts)
            .map(|(sweep, counts)| sweep.finish(counts, names.clone()))
            .collect())
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
