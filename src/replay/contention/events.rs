//! A job's waits and retries as the sweep's events: where a request starts or stops waiting
//! or running as a retry, in which pool, for which queue.
//!
//! Owns: [`Event`] (and its bytes in the sort's temporary file, [`Widths`]), [`Names`]
//! (the queues and pools, numbered as met), [`Counts`] and [`events`], [`events_started`]
//! (one job → its events and counts: the waits of docs/contention.md "Waiting", the retries
//! of "Retries"). Pure. Must not: sort or add anything up (that is the sweep's), or know
//! which sides an event is of (its set is the caller's number).

use std::collections::HashMap;

use super::job::{Job, JobRuns, Run, Started};

/// What happens at an event's time, one change at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A job starts waiting in the pool (its submission, or a run's end before its next run).
    WaitStart,
    WaitEnd,
    /// A retry (any run after a job's first) starts running in the pool.
    RetryStart,
    RetryEnd,
    /// A job's retry runs while the same job waits in the same pool (runs of one job that
    /// overlap in the record): its own wait is not another job's.
    OwnStart,
    OwnEnd,
}

/// What an event changes: the job's requests start (+1) or stop (−1) waiting, running as a
/// retry, or running as a retry while the same job waits ("own"); 0, no change. One event of
/// a job can make two changes at one time in one pool (a wait that ends where the retry it
/// waited for starts, a retry that ends where the next wait starts): the sweep settles the
/// pool once for both, and the sort has one event less to carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Change {
    pub wait: i8,
    pub retry: i8,
    pub own: i8,
}

impl From<Kind> for Change {
    fn from(kind: Kind) -> Change {
        let (wait, retry, own) = match kind {
            Kind::WaitStart => (1, 0, 0),
            Kind::WaitEnd => (-1, 0, 0),
            Kind::RetryStart => (0, 1, 0),
            Kind::RetryEnd => (0, -1, 0),
            Kind::OwnStart => (0, 0, 1),
            Kind::OwnEnd => (0, 0, -1),
        };
        Change { wait, retry, own }
    }
}

impl Change {
    /// The two changes as one, when each part stays within one start or one stop.
    fn and(self, o: Change) -> Option<Change> {
        let part = |a: i8, b: i8| Some(a + b).filter(|n| (-1..=1).contains(n));
        Some(Change {
            wait: part(self.wait, o.wait)?,
            retry: part(self.retry, o.retry)?,
            own: part(self.own, o.own)?,
        })
    }

    /// The change as one byte's low six bits: two a part, its change plus one.
    fn code(self) -> u8 {
        let part = |n: i8, at: u32| ((n.clamp(-1, 1) + 1) as u8) << at;
        part(self.wait, 0) | part(self.retry, 2) | part(self.own, 4)
    }

    /// The change whose [`Change::code`] is `code`; `None`: not a change's code.
    fn of_code(code: u8) -> Option<Change> {
        // A part of 3, or a bit above the six: not written by `code`.
        let threes = code & (code >> 1) & 0b01_0101;
        (threes == 0 && code < 0x40).then(|| {
            let part = |at: u32| ((code >> at) & 3) as i8 - 1;
            Change {
                wait: part(0),
                retry: part(2),
                own: part(4),
            }
        })
    }
}

/// One change of what waits or runs in a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the epoch.
    pub t: i64,
    pub change: Change,
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

/// One job's events, `events[from..]` (after other jobs' events, left as they are), each of
/// one set of sides, those of one time, pool and set made one where their changes add up to
/// one start or stop of each kind ([`Change`]): the same sums and the same stretches, fewer
/// events. The job's events are left sorted by time.
pub fn combine_from(events: &mut Vec<Event>, from: usize) {
    let job = &mut events[from..];
    // A job's events as `job_events` makes them in the usual case are in order already: their
    // changes at one time, one after the other.
    if !job.is_sorted_by_key(|e| e.t) {
        job.sort_unstable_by_key(|e| (e.t, e.pool, e.set));
    }
    let retries = |x: &Event| x.change.retry != 0;
    let mut kept: usize = 0;
    for at in 0..job.len() {
        if let Some(last) = kept.checked_sub(1) {
            let (kept_ones, rest) = job.split_at_mut(at);
            let (last, e) = (&mut kept_ones[last], &rest[0]);
            // A retry's failed run goes with its retry: two retries whose failed runs differ
            // stay apart.
            let failed_agree = !(retries(last) && retries(e)) || last.after_failed == e.after_failed;
            let both = ((last.t, last.pool, last.set) == (e.t, e.pool, e.set) && failed_agree)
                .then(|| last.change.and(e.change))
                .flatten();
            if let Some(both) = both {
                last.change = both;
                if retries(e) {
                    last.after_failed = e.after_failed;
                }
                continue;
            }
        }
        if kept != at {
            job[kept] = job[at];
        }
        kept += 1;
    }
    events.truncate(from + kept);
    // An event whose changes cancel (a retry that ends where the next starts) stays: the
    // pool is settled at its time, as at the events it came of, so that each stretch, and
    // the rounding of its splits, is the same whether a job's events are made one or not.
}

// An event's longest bytes fit the window they are written into and read from, with room
// for the eight bytes written or read at its last number's place.
const _: () = assert!(Event::MAX_BYTES + 8 <= Event::WINDOW);

/// How many bytes each number of a run's events that is of a job or a run takes (the pool,
/// the queue, the requests, the set): the fewest that hold the largest of the run, so that
/// each event's own bytes say only its time's width and its failed run's. A property of the
/// sorted run, kept beside it in memory, not in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Widths {
    pool: u8,
    queue: u8,
    gpu: u8,
    cpu: u8,
    set: u8,
}

impl Widths {
    /// The widths that hold every event of `events`.
    pub fn of<'a>(events: impl IntoIterator<Item = &'a Event>) -> Widths {
        let (mut pool, mut queue, mut gpu, mut cpu, mut set) = (0u32, 0u32, 0u64, 0u64, 0u32);
        for e in events {
            pool |= e.pool;
            queue |= e.queue;
            gpu |= e.gpu;
            cpu |= e.cpu;
            set |= e.set;
        }
        Widths {
            pool: width(u64::from(pool)),
            queue: width(u64::from(queue)),
            gpu: width(gpu),
            cpu: width(cpu),
            set: width(u64::from(set)),
        }
    }
}

/// The bytes that hold `n` (0 for 0).
#[inline(always)]
fn width(n: u64) -> u8 {
    (u64::BITS - n.leading_zeros()).div_ceil(8) as u8
}

impl Event {
    /// The most bytes [`Event::encode`] writes: two of its kind and widths, then its numbers
    /// at their widest.
    pub const MAX_BYTES: usize = 2 + 8 + 4 + 4 + 8 + 8 + 4 + 8;

    /// The bytes [`Event::decode`] reads from, and [`Event::encode`] writes into, without
    /// checking each (at least [`Event::MAX_BYTES`] and eight more): a reader that keeps this
    /// many ahead (or all that is left) decodes fastest.
    pub const WINDOW: usize = 64;

    /// The first two bytes' bit that says `after_failed` is there; above it, the width of the
    /// time's step (4 bits), then of the failed run's step back (4 bits); bit 15 is never set.
    const AFTER_FAILED: u16 = 0x40;
    const STEP_AT: u32 = 7;
    const BACK_AT: u32 = 11;

    /// The event's bytes in the sort's file into `b`, and how many, written after an event at
    /// `before` (the one before it in the same sorted run, or 0), its job's and run's numbers
    /// at the run's `widths`. Two bytes say the change, whether a failed run's time follows,
    /// and the widths of the two numbers that differ most from event to event: the time, as
    /// the step from `before`, and the failed run's time, as the step back from the retry's
    /// start. In a run sorted by time the steps are small, and the requests, the names and the
    /// sets are small numbers, so an event takes 15 bytes or so where its fields take 44
    /// (the file, and the kernel's copies into it and out of it, shrink with it). Each number
    /// is written as eight bytes at its place and the place moved on by its width: no loop
    /// a byte. Exact for every value: the steps wrap.
    #[inline]
    pub fn encode(&self, before: i64, widths: Widths, b: &mut [u8; Event::WINDOW]) -> usize {
        let step = self.t.wrapping_sub(before) as u64;
        let step_width = width(step);
        let (flag, back, back_width) = match self.after_failed {
            Some(failed) => {
                let back = self.t.wrapping_sub(failed);
                // Zigzag: a step of either sign in few bytes.
                let z = ((back << 1) ^ (back >> 63)) as u64;
                (Event::AFTER_FAILED, z, width(z))
            }
            None => (0, 0, 0),
        };
        let head = u16::from(self.change.code())
            | flag
            | u16::from(step_width) << Event::STEP_AT
            | u16::from(back_width) << Event::BACK_AT;
        b[..2].copy_from_slice(&head.to_le_bytes());
        let mut at = 2;
        for (n, w) in [
            (step, step_width),
            (u64::from(self.pool), widths.pool),
            (u64::from(self.queue), widths.queue),
            (self.gpu, widths.gpu),
            (self.cpu, widths.cpu),
            (u64::from(self.set), widths.set),
            (back, back_width),
        ] {
            put(b, at, n);
            at += usize::from(w);
        }
        at
    }

    /// The event at the front of `b`, written by [`Event::encode`] after `before` with
    /// `widths`, and the bytes it took; `None`: not an event's bytes, or cut short.
    pub fn decode(b: &[u8], before: i64, widths: Widths) -> Option<(Event, usize)> {
        // From a window of fixed size: no bounds to check at each number. Near a run's end, a
        // copy with zeros past the bytes there are; an event cut short is then found by the
        // bytes it took.
        match b.first_chunk::<{ Event::WINDOW }>() {
            Some(w) => Event::decode_window(w, before, widths, w.len()),
            None => {
                let mut w = [0u8; Event::WINDOW];
                w[..b.len()].copy_from_slice(b);
                Event::decode_window(&w, before, widths, b.len())
            }
        }
    }

    /// [`Event::decode`] of the first `n` bytes of `w`.
    #[inline]
    fn decode_window(w: &[u8; Event::WINDOW], before: i64, widths: Widths, n: usize) -> Option<(Event, usize)> {
        let head = u16::from_le_bytes([w[0], w[1]]);
        let step_width = (head >> Event::STEP_AT) & 0xf;
        let back_width = (head >> Event::BACK_AT) & 0xf;
        let after = head & Event::AFTER_FAILED != 0;
        // A width past 8, bit 15, or a failed run's width without its flag: not written by
        // `encode`.
        if step_width > 8 || back_width > 8 || head & 0x8000 != 0 || (!after && back_width > 0) {
            return None;
        }
        let change = Change::of_code((head & 0x3f) as u8)?;
        let mut at = 2;
        let mut next = |width: u8| {
            let n = take(w, at, width);
            at += usize::from(width);
            n
        };
        let t = before.wrapping_add(next(step_width as u8) as i64);
        // The run's widths hold at most 4 bytes for a number of 32 bits.
        let pool = next(widths.pool) as u32;
        let queue = next(widths.queue) as u32;
        let gpu = next(widths.gpu);
        let cpu = next(widths.cpu);
        let set = next(widths.set) as u32;
        let after_failed = after.then(|| {
            let z = next(back_width as u8);
            let back = ((z >> 1) as i64) ^ -((z & 1) as i64);
            t.wrapping_sub(back)
        });
        if at > n {
            return None;
        }
        Some((
            Event {
                t,
                change,
                pool,
                queue,
                gpu,
                cpu,
                after_failed,
                set,
            },
            at,
        ))
    }
}

/// `n` as eight bytes, low first, at `b[at..]` (the bytes past its width are written over by
/// the next number, or are past the event).
#[inline(always)]
fn put(b: &mut [u8; Event::WINDOW], at: usize, n: u64) {
    let at = at.min(Event::WINDOW - 8);
    b[at..at + 8].copy_from_slice(&n.to_le_bytes());
}

/// The low `width` bytes of a number: the mask of each width, 0 to 8 (and past 8, as 8: a
/// width the reader has checked; the table's 16 entries spare the check of a bound).
const MASKS: [u64; 16] = {
    let mut m = [u64::MAX; 16];
    let mut w = 0;
    while w < 8 {
        m[w] = (1u64 << (8 * w)) - 1;
        w += 1;
    }
    m
};

/// The number of `width` bytes (at most 8), low first, at `w[at..]`.
#[inline(always)]
fn take(w: &[u8; Event::WINDOW], at: usize, width: u8) -> u64 {
    let at = at.min(Event::WINDOW - 8);
    let mut eight = [0u8; 8];
    eight.copy_from_slice(&w[at..at + 8]);
    u64::from_le_bytes(eight) & MASKS[usize::from(width) & 15]
}

/// `key`'s number in `list` (numbered as met, `ids` its index), `key` added when new. A few
/// keys (a unit's pools, a history's queues, a comparison's sets of sides) are compared in
/// turn, which costs less than hashing the key (a worker looks up each run's pool); past
/// [`FEW`] the index finds it.
pub(super) fn number<K, Q>(list: &mut Vec<K>, ids: &mut HashMap<K, u32>, key: &Q) -> u32
where
    K: std::borrow::Borrow<Q> + Eq + std::hash::Hash + for<'q> From<&'q Q>,
    Q: Eq + std::hash::Hash + ?Sized,
{
    let found = if list.len() <= FEW {
        list.iter().position(|k| k.borrow() == key).map(|at| at as u32)
    } else {
        ids.get(key).copied()
    };
    if let Some(id) = found {
        return id;
    }
    let id = u32::try_from(list.len()).unwrap_or(u32::MAX);
    list.push(K::from(key));
    ids.insert(K::from(key), id);
    id
}

/// Keys up to which [`number`] compares each in turn.
const FEW: usize = 8;

/// Queues and pools, numbered in the order they are met.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    pub queues: Vec<String>,
    pub pools: Vec<String>,
    queue_ids: HashMap<String, u32>,
    pool_ids: HashMap<String, u32>,
}

impl Names {
    pub fn queue(&mut self, name: &str) -> u32 {
        number(&mut self.queues, &mut self.queue_ids, name)
    }

    pub fn pool(&mut self, name: &str) -> u32 {
        number(&mut self.pools, &mut self.pool_ids, name)
    }

    /// `job` with its queue and pools numbered, its runs in `runs` (scratch).
    pub fn number<'r>(&mut self, job: &JobRuns, runs: &'r mut Vec<Run>) -> Job<'r> {
        runs.clear();
        runs.extend(job.runs.iter().map(|r| Run {
            span: r.span,
            pool: self.pool(&r.pool),
            after_failed: r.after_failed,
        }));
        Job {
            queue: self.queue(&job.queue),
            gpu: job.gpu,
            cpu: job.cpu,
            submitted: job.submitted,
            runs,
            beyond: job.beyond,
        }
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
    pub fn of(job: Job, started: Started) -> Counts {
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
    let mut runs = Vec::new();
    events_started(names.number(job, &mut runs), started, out)
}

/// [`events`] of `job` as the side that starts `started` sees it: the first
/// `started.recorded` of the runs `job` holds (the record's, [`Started::record`]), then
/// `started.beyond`. What [`events`] gives of `JobRuns::of` the history with `started`,
/// without reading the history again for each side.
pub fn events_started(job: Job, started: Started, out: &mut Vec<Event>) -> Counts {
    events_of(job, started.recorded, 0, out);
    Counts::of(job, started)
}

/// The events of `job`'s first `recorded` runs, each of the set of sides `set`, pushed to
/// `out` (the counts are the caller's).
pub(super) fn events_of(job: Job, recorded: usize, set: u32, out: &mut Vec<Event>) {
    let from = out.len();
    let runs = &job.runs[..recorded.min(job.runs.len())];
    job_events(job, runs, out);
    for e in &mut out[from..] {
        e.set = set;
    }
}

/// The events of every run `job` holds, each with the number of its run in [`Event::set`]
/// (the last of the runs it comes of: a side holds it when it starts more runs than that),
/// when every side's events are the record's cut so: the events of the side that starts the
/// first `r` runs are those numbered below `r`. So they are when no two of the job's waits in
/// a pool meet; when two do (runs out of order in the record), the waits a side has depend on
/// which runs it starts: nothing is pushed and the answer is `false`.
pub fn events_by_run(job: Job, out: &mut Vec<Event>) -> bool {
    let from = out.len();
    if job_events(job, job.runs, out) {
        true
    } else {
        out.truncate(from);
        false
    }
}

/// `job`'s events of `runs` into `out`, each with the number of its run in `set`; `false`
/// when two of its waits in a pool met and were made one.
fn job_events(job: Job, runs: &[Run], out: &mut Vec<Event>) -> bool {
    if job.gpu == 0 && job.cpu == 0 {
        return true;
    }
    let queue = job.queue;
    let event = |t: i64, kind: Kind, pool: u32, after_failed: Option<i64>, run: u32| Event {
        t,
        change: kind.into(),
        pool,
        queue,
        gpu: job.gpu,
        cpu: job.cpu,
        after_failed,
        set: run,
    };
    let from = out.len();
    // The usual job: its runs one after another, each wait and retry after the last. Its
    // events are then made in order of time, and no two of its waits or retries meet: no
    // merge, no overlap of its own to look for, and nothing for `combine_from` to sort.
    let mut previous_end = job.submitted;
    let mut last = i64::MIN;
    let mut in_order = true;
    for (k, run) in runs.iter().enumerate() {
        let Some((start, end)) = run.span else {
            previous_end = None;
            continue;
        };
        let k = u32::try_from(k).unwrap_or(u32::MAX);
        if let Some(since) = previous_end.filter(|&since| since < start) {
            in_order &= last <= since;
            out.push(event(since, Kind::WaitStart, run.pool, None, k));
            out.push(event(start, Kind::WaitEnd, run.pool, None, k));
            last = start;
        }
        if k > 0 && start < end {
            in_order &= last <= start;
            out.push(event(start, Kind::RetryStart, run.pool, run.after_failed, k));
            out.push(event(end, Kind::RetryEnd, run.pool, run.after_failed, k));
            last = end;
        }
        previous_end = Some(end);
    }
    if in_order {
        return true;
    }
    // Runs out of order: the waits taken out of the events just made (each a pair, its start
    // then its end) to be merged, the retries left where they are, first. One allocation a
    // job.
    let mut waits: Vec<(i64, i64, u32, u32)> = Vec::with_capacity(runs.len());
    let mut retries_to = from;
    for at in (from..out.len()).step_by(2) {
        let (start, end) = (out[at], out[at + 1]);
        if start.change.wait != 0 {
            waits.push((start.t, end.t, start.pool, start.set));
        } else {
            out[retries_to] = start;
            out[retries_to + 1] = end;
            retries_to += 2;
        }
    }
    out.truncate(retries_to);
    let retries = from..out.len();
    // A job waits once however many of its waits overlap (runs out of order in the
    // record): its request counts once in `Q_p`. Merged in place.
    waits.sort_unstable_by_key(|&(from, _, pool, _)| (pool, from));
    let mut met = false;
    let mut kept: usize = 0;
    for i in 0..waits.len() {
        let w = waits[i];
        match kept.checked_sub(1).map(|last| &mut waits[last]) {
            Some(last) if last.2 == w.2 && w.0 <= last.1 => {
                last.1 = last.1.max(w.1);
                last.3 = last.3.max(w.3);
                met = true;
            }
            _ => {
                waits[kept] = w;
                kept += 1;
            }
        }
    }
    waits.truncate(kept);
    let merged = waits;
    for &(from, to, pool, k) in &merged {
        out.push(event(from, Kind::WaitStart, pool, None, k));
        out.push(event(to, Kind::WaitEnd, pool, None, k));
    }
    // Each retry against the waits it can meet, not against all of them: a job of 100,000
    // runs took 10^10 comparisons. `merged` is sorted by pool and start, and its waits in one
    // pool are disjoint, so their ends rise too: the first that ends after the retry starts
    // is found by bisection, and the ones after it until one starts after the retry ends are
    // all it meets. (The events' order here is no matter: the sweep sorts them by time.) A
    // side has the overlap when it starts both runs.
    if merged.is_empty() {
        debug_assert!(out[from..].len() % 2 == 0);
        return !met;
    }
    for at in retries.step_by(2) {
        let (rs, re, rp, rk) = (out[at].t, out[at + 1].t, out[at].pool, out[at].set);
        let first = merged.partition_point(|&(_, to, pool, _)| (pool, to) <= (rp, rs));
        for &(ws, we, _, wk) in merged[first..]
            .iter()
            .take_while(|&&(ws, _, wp, _)| wp == rp && ws < re)
        {
            out.push(event(ws.max(rs), Kind::OwnStart, rp, None, rk.max(wk)));
            out.push(event(we.min(re), Kind::OwnEnd, rp, None, rk.max(wk)));
        }
    }
    debug_assert!(out[from..].len() % 2 == 0);
    !met
}
