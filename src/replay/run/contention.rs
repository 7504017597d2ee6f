//! The contention of a replay's sides (docs/contention.md): what each worker takes of a job
//! for every side ([`Taken`], in its unit's [`Part`](super::counts::Part)), and the
//! emitting side's collector, every side in one `Sides`, fed in input order and swept once at
//! the end ([`Collect`]).
//!
//! Owns: which runs each side starts, as the sweep reads them (the record's every run; a
//! replayed side's runs from its report, and the runs a Pending side has left, beyond the
//! record). Must not: count (that is `replay::contention`), or hand anything to a sink.

use std::io;

use crate::engine::JobReport;
use crate::model::failure_history::FailureHistory;
use crate::replay::contention::{JobRuns, Side, Sides, Started};
use crate::replay::incidents::{SeenIncidents, Windows};

/// The runs a replayed side starts: those of its report, then those a Pending side has left.
pub fn started(report: &JobReport, runs_left: Option<u32>) -> Started {
    Started {
        recorded: report.runs.len(),
        beyond: runs_left.unwrap_or(0),
    }
}

/// The jobs of one unit: each as the record holds it, and the runs each side starts of it, in
/// the caller's order of the sides (the same for every job).
#[derive(Debug, Default)]
pub struct Taken {
    jobs: Vec<(JobRuns, std::ops::Range<usize>)>,
    started: Vec<Started>,
    ends: Vec<Option<i64>>,
}

impl Taken {
    /// `history` as the record holds it, and the runs each side starts of it (`sides`).
    pub fn add(&mut self, history: &FailureHistory, sides: &[Started]) {
        let record = JobRuns::of(history, Started::record(history), &mut self.ends);
        let from = self.started.len();
        self.started.extend_from_slice(sides);
        self.jobs.push((record, from..self.started.len()));
    }
}

/// Every side's events and the record's (last), in one sort: one chunk in memory and one
/// temporary file whatever the number of sides, and a job's events written once for the
/// sides that start the same runs of it ([`Sides`]).
pub struct Collect {
    sides: usize,
    all: Sides,
    /// Scratch: one job's runs each side starts, the record's last.
    started: Vec<Started>,
}

impl Collect {
    /// Collectors for `sides` replayed sides and the record.
    pub fn new(sides: usize) -> Collect {
        Collect {
            sides,
            all: Sides::new(sides + 1),
            started: Vec::with_capacity(sides + 1),
        }
    }

    /// A unit's jobs, in input order.
    pub fn add(&mut self, taken: &Taken) -> io::Result<()> {
        for (job, at) in &taken.jobs {
            self.started.clear();
            self.started
                .extend(taken.started[at.clone()].iter().take(self.sides).copied());
            // A side the unit did not say starts nothing of the job.
            let none = Started { recorded: 0, beyond: 0 };
            self.started.resize(self.sides, none);
            self.started.push(Started {
                recorded: job.runs.len(),
                beyond: job.beyond,
            });
            self.all.add(job, &self.started)?;
        }
        Ok(())
    }

    /// Each side's numbers, the record's last; the retries after a failure inside the
    /// incident windows `seen` found (none: no window) counted apart.
    pub fn finish(self, seen: Option<&SeenIncidents>) -> io::Result<Vec<Side>> {
        let windows = Windows(seen.map(|s| s.windows.clone()).unwrap_or_default());
        Ok(self.all.finish(&windows)?.iter().map(Side::of).collect())
    }
}
