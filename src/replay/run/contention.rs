//! The contention of a replay's sides (docs/contention.md): what each worker takes of a job
//! for every side ([`Taken`], in its unit's [`Part`](super::counts::Part)), and the
//! emitting side's collector, every side in one `Sides`, fed in input order and swept once at
//! the end ([`Collect`]).
//!
//! Owns: which runs each side starts, as the sweep reads them (the record's every run; a
//! replayed side's runs from its report, and the runs a Pending side has left, beyond the
//! record). Must not: count (that is `replay::contention`), or hand anything to a sink.

use std::io;
use std::ops::Range;

use crate::engine::JobReport;
use crate::model::failure_history::FailureHistory;
use crate::replay::contention::{each_run, requests, Job, Names, Run, Side, Sides, Started};
use crate::replay::device_time::Overflow;
use crate::replay::incidents::{SeenIncidents, Windows};

/// The runs a replayed side starts: those of its report, then those a Pending side has left.
pub fn started(report: &JobReport, runs_left: Option<u32>) -> Started {
    Started {
        recorded: report.runs.len(),
        beyond: runs_left.unwrap_or(0),
    }
}

/// The jobs of one unit: each as the record holds it, and the runs each side starts of it, in
/// the caller's order of the sides (the same for every job). Flat, with the unit's queues and
/// pools numbered in the unit's own [`Names`]: a worker makes it with no allocation a job or
/// a run, and the emitting side numbers the unit's few names again in the history's.
#[derive(Debug, Default)]
pub struct Taken {
    jobs: Vec<TakenJob>,
    runs: Vec<Run>,
    names: Names,
    started: Vec<Started>,
    /// The pool of the last run taken.
    last_pool: Option<u32>,
    /// Scratch.
    spans: Vec<Option<(i64, i64)>>,
    ends: Vec<Option<i64>>,
}

/// One job of a [`Taken`]: its queue in the unit's names, its runs and sides' starts there.
#[derive(Debug)]
struct TakenJob {
    queue: u32,
    gpu: u64,
    cpu: u64,
    submitted: Option<i64>,
    runs: Range<usize>,
    started: Range<usize>,
}

impl Taken {
    /// `history` as the record holds it, and the runs each side starts of it (`sides`);
    /// `ends`: its runs' ends (`incidents::ends`) when the caller has them.
    pub fn add(&mut self, history: &FailureHistory, sides: &[Started], ends: Option<&[Option<i64>]>) {
        let from = self.runs.len();
        let (names, runs, last) = (&mut self.names, &mut self.runs, &mut self.last_pool);
        // A job's runs, and a unit's jobs, are mostly in one pool and one queue: each name
        // compared with the last one's before it is hashed.
        each_run(
            history,
            history.runs.len(),
            &mut self.spans,
            ends,
            &mut self.ends,
            |span, pool, after_failed| {
                let pool = match *last {
                    Some(id) if names.pools[id as usize] == pool => id,
                    _ => names.pool(pool),
                };
                *last = Some(pool);
                runs.push(Run {
                    span,
                    pool,
                    after_failed,
                });
            },
        );
        let queue_name = history.job.queue.as_deref().unwrap_or("");
        let queue = match self.jobs.last() {
            Some(j) if self.names.queues[j.queue as usize] == queue_name => j.queue,
            _ => self.names.queue(queue_name),
        };
        let (gpu, cpu) = requests(history);
        let started = self.started.len();
        self.started.extend_from_slice(sides);
        // The record's, after the sides' (outside the job's range): the emitting side hands
        // the sides' and the record's on as one slice.
        self.started.push(Started {
            recorded: history.runs.len(),
            beyond: 0,
        });
        self.jobs.push(TakenJob {
            queue,
            gpu,
            cpu,
            submitted: history.job.submitted_at.map(|t| t.0),
            runs: from..self.runs.len(),
            started: started..self.started.len() - 1,
        });
    }
}

/// The sums that refuse a replay's totals, in this order: the replay's own past 128 bits and
/// the record's (each names the job that took it there), then a sum the contention section
/// could not hold (`contention`, [`Collect::finish`]'s answer). `None`: the totals stand.
pub fn refusal(
    own: Option<&Overflow>,
    recorded: Option<&Overflow>,
    contention: Option<&Result<Vec<Side>, Overflow>>,
) -> Option<Overflow> {
    own.or(recorded)
        .or_else(|| contention.and_then(|c| c.as_ref().err()))
        .cloned()
}

/// Every side's events and the record's (last), in one sort: one chunk in memory and one
/// temporary file whatever the number of sides, and a job's events written once for the
/// sides that start the same runs of it ([`Sides`]).
pub struct Collect {
    sides: usize,
    all: Sides,
    /// Scratch: one job's runs each side starts, the record's last.
    started: Vec<Started>,
    /// Scratch: a unit's names' numbers in the history's, and a job's runs renumbered.
    queues: Vec<u32>,
    pools: Vec<u32>,
    runs: Vec<Run>,
}

impl Collect {
    /// Collectors for `sides` replayed sides and the record.
    pub fn new(sides: usize) -> Collect {
        Collect {
            sides,
            all: Sides::new(sides + 1),
            started: Vec::with_capacity(sides + 1),
            queues: Vec::new(),
            pools: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// A unit's jobs, in input order.
    pub fn add(&mut self, taken: &Taken) -> io::Result<()> {
        let names = self.all.names();
        self.queues.clear();
        self.queues.extend(taken.names.queues.iter().map(|q| names.queue(q)));
        self.pools.clear();
        self.pools.extend(taken.names.pools.iter().map(|p| names.pool(p)));
        // Most units meet the history's first pools in the history's order: their runs are
        // then numbered as the history numbers them, and handed on as they are.
        let same_pools = self.pools.iter().enumerate().all(|(i, &p)| p as usize == i);
        for job in &taken.jobs {
            let runs = if same_pools {
                &taken.runs[job.runs.clone()]
            } else {
                self.runs.clear();
                self.runs.extend(taken.runs[job.runs.clone()].iter().map(|r| Run {
                    pool: self.pools[r.pool as usize],
                    ..*r
                }));
                &self.runs[..]
            };
            let started = if job.started.len() == self.sides {
                // The sides' and, after them, the record's.
                &taken.started[job.started.start..=job.started.end]
            } else {
                self.started.clear();
                self.started
                    .extend(taken.started[job.started.clone()].iter().take(self.sides).copied());
                // A side the unit did not say starts nothing of the job.
                let none = Started { recorded: 0, beyond: 0 };
                self.started.resize(self.sides, none);
                self.started.push(taken.started[job.started.end]);
                &self.started[..]
            };
            let numbered = Job {
                queue: self.queues[job.queue as usize],
                gpu: job.gpu,
                cpu: job.cpu,
                submitted: job.submitted,
                runs,
                beyond: 0,
            };
            self.all.add_job(numbered, started)?;
        }
        Ok(())
    }

    /// Each side's numbers, the record's last; the retries after a failure inside the
    /// incident windows `seen` found (none: no window) counted apart. A sum past what the
    /// section adds up refuses the history, as the record's compute does (`Overflow`): no
    /// figure is printed from a sum that stopped adding.
    pub fn finish(self, seen: Option<&SeenIncidents>) -> io::Result<Result<Vec<Side>, Overflow>> {
        let windows = Windows(seen.map(|s| s.windows.clone()).unwrap_or_default());
        let tallies = self.all.finish(&windows)?;
        if let Some(o) = tallies.iter().find_map(|t| t.overflow.clone()) {
            return Ok(Err(o));
        }
        Ok(Ok(tallies.iter().map(Side::of).collect()))
    }
}
