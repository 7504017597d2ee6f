//! A job's waits and retries as the sweep's events: where a request starts or stops waiting
//! or running as a retry, in which pool, for which queue.
//!
//! Owns: [`Event`] (and its fixed-width bytes, for the sort's temporary file), [`Names`] (the
//! queues and pools, numbered as met) and [`events`], [`events_started`] (one job → its events and counts: the
//! waits of docs/contention.md "Waiting", the retries of "Retries"). Pure. Must not: sort or
//! add anything up (that is the sweep's).

use std::collections::HashMap;

use super::job::{JobRuns, Started};

/// What happens at an event's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A job starts waiting in the pool (its submission, or a run's end before its next run).
    WaitStart = 0,
    WaitEnd = 1,
    /// A retry (any run after a job's first) starts running in the pool.
    RetryStart = 2,
    RetryEnd = 3,
    /// A job's retry runs while the same job waits in the same pool (runs of one job that
    /// overlap in the record): its own wait is not another job's.
    OwnStart = 4,
    OwnEnd = 5,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::WaitStart,
        Kind::WaitEnd,
        Kind::RetryStart,
        Kind::RetryEnd,
        Kind::OwnStart,
        Kind::OwnEnd,
    ];
}

/// One change of what waits or runs in a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the epoch.
    pub t: i64,
    pub kind: Kind,
    pub pool: u32,
    pub queue: u32,
    /// The job's requests in thousandths.
    pub gpu: u64,
    pub cpu: u64,
    /// A retry's: the failed run before it ended then (`None`: the run before did not fail,
    /// or has no time).
    pub after_failed: Option<i64>,
    /// The sides the event is of, when several are swept together: a number of the caller's
    /// (`Sides` numbers each set of sides it meets); 0 when one side is swept alone.
    pub set: u32,
}

impl Event {
    /// Bytes an event takes in the sort's file: whether `after_failed` is there rides in the
    /// kind's byte, so an event without it writes 8 bytes of nothing, not 9.
    pub const BYTES: usize = 8 + 1 + 4 + 4 + 8 + 8 + 8 + 4;

    /// The kind's byte's bit that says `after_failed` is there.
    const AFTER_FAILED: u8 = 0x80;

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.t.to_le_bytes());
        let flag = if self.after_failed.is_some() {
            Event::AFTER_FAILED
        } else {
            0
        };
        out.push(self.kind as u8 | flag);
        out.extend_from_slice(&self.pool.to_le_bytes());
        out.extend_from_slice(&self.queue.to_le_bytes());
        out.extend_from_slice(&self.gpu.to_le_bytes());
        out.extend_from_slice(&self.cpu.to_le_bytes());
        out.extend_from_slice(&self.after_failed.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.set.to_le_bytes());
    }

    /// An event from [`Event::BYTES`] bytes of [`Event::encode`]; `None`: not its bytes.
    pub fn decode(b: &[u8]) -> Option<Event> {
        let b: &[u8; Event::BYTES] = b.try_into().ok()?;
        let i64_at = |at: usize| i64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default());
        let after_failed = b[8] & Event::AFTER_FAILED != 0;
        Some(Event {
            t: i64_at(0),
            kind: *Kind::ALL.get(usize::from(b[8] & !Event::AFTER_FAILED))?,
            pool: u32_at(9),
            queue: u32_at(13),
            gpu: u64_at(17),
            cpu: u64_at(25),
            after_failed: after_failed.then(|| i64_at(33)),
            set: u32_at(41),
        })
    }
}

/// Queues and pools, numbered in the order they are met.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    pub queues: Vec<String>,
    pub pools: Vec<String>,
    queue_ids: HashMap<String, u32>,
    pool_ids: HashMap<String, u32>,
}

impl Names {
    fn id(names: &mut Vec<String>, ids: &mut HashMap<String, u32>, name: &str) -> u32 {
        if let Some(&id) = ids.get(name) {
            return id;
        }
        let id = names.len() as u32;
        names.push(name.to_string());
        ids.insert(name.to_string(), id);
        id
    }

    pub fn queue(&mut self, name: &str) -> u32 {
        Names::id(&mut self.queues, &mut self.queue_ids, name)
    }

    pub fn pool(&mut self, name: &str) -> u32 {
        Names::id(&mut self.pools, &mut self.pool_ids, name)
    }
}

/// What a side's runs count apart from the sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Recorded runs after a job's first that the side starts (timed or not).
    pub retry_runs: u64,
    /// Recorded runs the side starts that have no time: in no sum.
    pub untimed_runs: u64,
    /// Runs the side starts beyond the record: in no sum.
    pub not_placed_runs: u64,
}

impl Counts {
    /// What the side that starts `started` of `job`'s runs counts of it.
    pub fn of(job: &JobRuns, started: Started) -> Counts {
        let runs = &job.runs[..started.recorded.min(job.runs.len())];
        Counts {
            retry_runs: runs.len().saturating_sub(1) as u64,
            untimed_runs: runs.iter().filter(|r| r.span.is_none()).count() as u64,
            not_placed_runs: u64::from(started.beyond),
        }
    }

    pub fn add(&mut self, o: &Counts) {
        self.retry_runs += o.retry_runs;
        self.untimed_runs += o.untimed_runs;
        self.not_placed_runs += o.not_placed_runs;
    }
}

/// `job`'s events, pushed to `out` (in no particular order), and its counts. A job waits
/// from its submission to its first run's start and from each run's end to the next run's
/// start (when later), in the pool of the run it waits for; a wait next to a run with no
/// time is not known, and in no sum; waits of one job that overlap in a pool (runs out of
/// order in the record) are one. A job that requests neither GPU nor CPU adds no event.
pub fn events(job: &JobRuns, names: &mut Names, out: &mut Vec<Event>) -> Counts {
    let started = Started {
        recorded: job.runs.len(),
        beyond: job.beyond,
    };
    events_started(job, started, names, out)
}

/// [`events`] of `job` as the side that starts `started` sees it: the first
/// `started.recorded` of the runs `job` holds (the record's, [`Started::record`]), then
/// `started.beyond`. What [`events`] gives of `JobRuns::of` the history with `started`,
/// without reading the history again for each side.
pub fn events_started(job: &JobRuns, started: Started, names: &mut Names, out: &mut Vec<Event>) -> Counts {
    let runs = &job.runs[..started.recorded.min(job.runs.len())];
    let counts = Counts::of(job, started);
    if job.gpu == 0 && job.cpu == 0 {
        return counts;
    }
    let queue = names.queue(&job.queue);
    let event = |t: i64, kind: Kind, pool: u32, after_failed: Option<i64>| Event {
        t,
        kind,
        pool,
        queue,
        gpu: job.gpu,
        cpu: job.cpu,
        after_failed,
        set: 0,
    };
    let from = out.len();
    // Where the job waits and where its retries run, to find the rare times they overlap.
    let mut waits: Vec<(i64, i64, u32)> = Vec::new();
    let mut retries: Vec<(i64, i64, u32)> = Vec::new();
    let mut previous_end = job.submitted;
    for (k, run) in runs.iter().enumerate() {
        let pool = names.pool(&run.pool);
        let Some((start, end)) = run.span else {
            previous_end = None;
            continue;
        };
        if let Some(since) = previous_end.filter(|&since| since < start) {
            waits.push((since, start, pool));
        }
        if k > 0 && start < end {
            out.push(event(start, Kind::RetryStart, pool, run.after_failed));
            out.push(event(end, Kind::RetryEnd, pool, run.after_failed));
            retries.push((start, end, pool));
        }
        previous_end = Some(end);
    }
    // A job waits once however many of its waits overlap (runs out of order in the
    // record): its request counts once in `Q_p`.
    waits.sort_unstable_by_key(|&(from, _, pool)| (pool, from));
    let mut merged: Vec<(i64, i64, u32)> = Vec::with_capacity(waits.len());
    for w in waits {
        match merged.last_mut() {
            Some(last) if last.2 == w.2 && w.0 <= last.1 => last.1 = last.1.max(w.1),
            _ => merged.push(w),
        }
    }
    for &(from, to, pool) in &merged {
        out.push(event(from, Kind::WaitStart, pool, None));
        out.push(event(to, Kind::WaitEnd, pool, None));
    }
    // Each retry against the waits it can meet, not against all of them: a job of 100,000
    // runs took 10^10 comparisons. `merged` is sorted by pool and start, and its waits in one
    // pool are disjoint, so their ends rise too: the first that ends after the retry starts
    // is found by bisection, and the ones after it until one starts after the retry ends are
    // all it meets. (The events' order here is no matter: the sweep sorts them by time.)
    for &(rs, re, rp) in &retries {
        let first = merged.partition_point(|&(_, to, pool)| (pool, to) <= (rp, rs));
        for &(ws, we, _) in merged[first..].iter().take_while(|&&(ws, _, wp)| wp == rp && ws < re) {
            out.push(event(ws.max(rs), Kind::OwnStart, rp, None));
            out.push(event(we.min(re), Kind::OwnEnd, rp, None));
        }
    }
    debug_assert!(out[from..].len() % 2 == 0);
    counts
}
