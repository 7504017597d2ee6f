//! The sweep: events in time order → the sums of docs/contention.md, exactly.
//!
//! Between two events of a pool nothing in it changes, so each pool is settled only when one
//! of its own events comes: the time since its last event times what waited and ran there.
//! What it holds is one state a pool (its waiting and retrying requests by queue): it grows
//! with the pools and queues, never with the jobs or the runs.
//!
//! Sums are nanoseconds × thousandths of a device in 128 bits, added exactly in any order.
//! The overlap of a stretch, `min(R_p, Q_p) × dt`, is split among the waiting queues by
//! `Q_p^q / Q_p` and among the retrying queues by `R_p^q / R_p` in whole units: each share
//! rounded down, and the units left over (fewer than the queues) given to the largest
//! remainders (ties: the queue met first), so that every split adds back to the total.
//!
//! Owns: [`Sweep`], [`Tally`], [`Sums`]. Pure. Must not: read, sort or store events (the
//! caller hands them in time order), or convert to hours (that is [`super::side`]'s).

use crate::replay::device_time::Overflow;
use crate::replay::incidents::Windows;

use super::events::{Counts, Event, Names};

/// The four sums of one resource, their splits and the in-incident part, in nanoseconds ×
/// thousandths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums {
    pub retry: u128,
    pub queued: u128,
    pub while_others_waited: u128,
    pub overlap: u128,
    /// Indexed by [`Names`]' queue and pool numbers.
    pub overlap_by_waiting_queue: Vec<u128>,
    pub overlap_by_retrying_queue: Vec<u128>,
    pub overlap_by_pool: Vec<u128>,
    /// The retries whose run before is a failed run ending inside an incident window.
    pub in_incidents_retry: u128,
    pub in_incidents_overlap: u128,
}

/// A side's numbers: GPU and CPU, the counts, and the names the splits are indexed by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub gpu: Sums,
    pub cpu: Sums,
    pub counts: Counts,
    pub names: Names,
    /// A sum past 128 bits (no real history comes near): the figure is then wrong.
    pub overflow: Option<Overflow>,
}

/// The requests of one queue in a pool.
#[derive(Debug, Clone, Copy, Default)]
struct Share {
    queue: u32,
    gpu: u64,
    cpu: u64,
    /// Waiting jobs of the queue that request a GPU, a CPU (a retry's: unused).
    gpu_jobs: u64,
    cpu_jobs: u64,
}

/// One resource's totals in a pool.
#[derive(Debug, Clone, Copy, Default)]
struct Level {
    /// `Q_p`, `R_p`, `R_p^inc`.
    waiting: u64,
    retrying: u64,
    retrying_in_incidents: u64,
    /// Jobs waiting with a request of this resource.
    waiting_jobs: u64,
    /// The requests of retries whose own job waits in the pool now.
    own: u64,
}

/// What waits and runs in one pool now.
#[derive(Debug, Clone, Default)]
struct Pool {
    since: i64,
    waiting: Vec<Share>,
    retrying: Vec<Share>,
    gpu: Level,
    cpu: Level,
}

/// The sweep over one side's events.
#[derive(Debug, Clone)]
pub struct Sweep<'w> {
    windows: &'w Windows,
    pools: Vec<Pool>,
    gpu: Sums,
    cpu: Sums,
    /// The figures of `FIGURES` that passed 128 bits, a bit each (named at the end: a
    /// figure's name passed at each of a dozen additions an event made the sweep a third
    /// slower).
    overflowed: u16,
    /// Scratch for the splits.
    remainders: Vec<(u128, u32, usize)>,
}

impl<'w> Sweep<'w> {
    /// A sweep that counts retries after failures inside `windows` apart.
    pub fn new(windows: &'w Windows) -> Sweep<'w> {
        Sweep {
            windows,
            pools: Vec::new(),
            gpu: Sums::default(),
            cpu: Sums::default(),
            overflowed: 0,
            remainders: Vec::new(),
        }
    }

    /// The next event; events come in time order (of equal times, any order).
    pub fn add(&mut self, e: &Event) {
        let at = e.pool as usize;
        if self.pools.len() <= at || self.gpu.overlap_by_waiting_queue.len() <= e.queue as usize {
            self.grow(e);
        }
        self.settle(at, e.t);
        let pool = &mut self.pools[at];
        if e.change.wait != 0 {
            let on = e.change.wait > 0;
            change(&mut pool.waiting, e, on, true);
            for (level, request) in [(&mut pool.gpu, e.gpu), (&mut pool.cpu, e.cpu)] {
                step(&mut level.waiting, request, on);
                step(&mut level.waiting_jobs, u64::from(request > 0), on);
            }
        }
        if e.change.retry != 0 {
            let on = e.change.retry > 0;
            let in_incidents = e.after_failed.is_some_and(|t| self.windows.contains(t));
            change(&mut pool.retrying, e, on, false);
            for (level, request) in [(&mut pool.gpu, e.gpu), (&mut pool.cpu, e.cpu)] {
                step(&mut level.retrying, request, on);
                if in_incidents {
                    step(&mut level.retrying_in_incidents, request, on);
                }
            }
        }
        if e.change.own != 0 {
            let on = e.change.own > 0;
            for (level, request) in [(&mut pool.gpu, e.gpu), (&mut pool.cpu, e.cpu)] {
                step(&mut level.own, request, on);
            }
        }
    }

    /// Room for `e`'s pool and queue: in the pools, and in every split (a stretch's shares are
    /// then added where they go, with no check of the room at each).
    fn grow(&mut self, e: &Event) {
        let pools = self.pools.len().max(e.pool as usize + 1);
        self.pools.resize_with(pools, || Pool {
            since: e.t,
            ..Pool::default()
        });
        let queues = self.gpu.overlap_by_waiting_queue.len().max(e.queue as usize + 1);
        for sums in [&mut self.gpu, &mut self.cpu] {
            sums.overlap_by_pool.resize(pools, 0);
            sums.overlap_by_waiting_queue.resize(queues, 0);
            sums.overlap_by_retrying_queue.resize(queues, 0);
        }
    }

    /// Adds pool `at`'s stretch from its last event to `now`.
    fn settle(&mut self, at: usize, now: i64) {
        let pool = &mut self.pools[at];
        let since = std::mem::replace(&mut pool.since, now);
        if now <= since {
            return;
        }
        // Exact: the step between two 64-bit times fits 64 bits unsigned.
        let dt = now.wrapping_sub(since) as u64;
        let over = &mut self.overflowed;
        let rem = &mut self.remainders;
        settle_resource(pool, true, dt, at, &mut self.gpu, over, rem);
        settle_resource(pool, false, dt, at, &mut self.cpu, over, rem);
    }

    /// The sums, once every event is in; `counts` and `names` are the caller's.
    pub fn finish(self, counts: Counts, names: Names) -> Tally {
        let overflow = (0..FIGURES.len())
            .find(|&i| self.overflowed & (1 << i) != 0)
            .map(|i| Overflow {
                figure: FIGURES[i].to_string(),
                job: String::new(),
            });
        Tally {
            gpu: self.gpu,
            cpu: self.cpu,
            counts,
            names,
            overflow,
        }
    }
}

/// The figures a sum can pass 128 bits in, by their bit in [`Sweep::overflowed`].
const FIGURES: [&str; 8] = [
    "retry device time",
    "queued device time",
    "device time while others waited",
    "retry device time in incidents",
    "overlap in incidents",
    "overlap",
    "overlap by pool",
    "overlap by queue",
];

/// `sum += n`, saturating; past 128 bits, `figure`'s bit set in `over`.
#[inline(always)]
fn add(sum: &mut u128, n: u128, over: &mut u16, figure: usize) {
    match sum.checked_add(n) {
        Some(s) => *sum = s,
        None => {
            *sum = u128::MAX;
            *over |= 1 << figure;
        }
    }
}

/// One resource's stretch of `dt` in pool `at` (GPU's when `gpu`, else CPU's) added to
/// `sums`.
#[inline(always)]
fn settle_resource(
    pool: &Pool,
    gpu: bool,
    dt: u64,
    at: usize,
    sums: &mut Sums,
    over: &mut u16,
    remainders: &mut Vec<(u128, u32, usize)>,
) {
    let (level, by): (&Level, fn(&Share) -> u64) = if gpu {
        (&pool.gpu, |s| s.gpu)
    } else {
        (&pool.cpu, |s| s.cpu)
    };
    if level.waiting == 0 && level.retrying == 0 {
        return;
    }
    let of = |request: u64| u128::from(request) * u128::from(dt);
    add(&mut sums.retry, of(level.retrying), over, 0);
    add(&mut sums.queued, of(level.waiting), over, 1);
    // Another job waits: two jobs wait, or one that is not the retries' own.
    let others = match level.waiting_jobs {
        0 => 0,
        1 => level.retrying - level.own.min(level.retrying),
        _ => level.retrying,
    };
    add(&mut sums.while_others_waited, of(others), over, 2);
    if level.retrying_in_incidents > 0 {
        add(&mut sums.in_incidents_retry, of(level.retrying_in_incidents), over, 3);
        add(
            &mut sums.in_incidents_overlap,
            of(level.retrying_in_incidents.min(level.waiting)),
            over,
            4,
        );
    }
    let least = level.retrying.min(level.waiting);
    if least == 0 {
        return;
    }
    let overlap = of(least);
    add(&mut sums.overlap, overlap, over, 5);
    add(&mut sums.overlap_by_pool[at], overlap, over, 6);
    for (shares, whole, into) in [
        (&pool.waiting, level.waiting, &mut sums.overlap_by_waiting_queue),
        (&pool.retrying, level.retrying, &mut sums.overlap_by_retrying_queue),
    ] {
        // One queue holds all of the side (the usual case in a pool): all of the overlap,
        // whichever way the split goes.
        if let [s] = &shares[..] {
            if by(s) == whole {
                add(&mut into[s.queue as usize], overlap, over, 7);
                continue;
            }
        }
        if whole == least {
            // The side the overlap is whole of: each queue's share is its request × dt,
            // exactly what the split gives, without dividing.
            for s in shares {
                let n = of(by(s));
                if n > 0 {
                    add(&mut into[s.queue as usize], n, over, 7);
                }
            }
        } else {
            split(overlap, shares, whole, by, into, remainders);
        }
    }
}

/// `n` added to or taken from `level`.
fn step(level: &mut u64, n: u64, on: bool) {
    *level = if on {
        level.saturating_add(n)
    } else {
        level.saturating_sub(n)
    };
}

/// A queue's share in a pool changed by `e`: added when `on`, else taken; a share that falls
/// to nothing is dropped, so the list holds only the queues present.
fn change(shares: &mut Vec<Share>, e: &Event, on: bool, count_jobs: bool) {
    let at = match shares.iter().position(|s| s.queue == e.queue) {
        Some(at) => at,
        None => {
            shares.push(Share {
                queue: e.queue,
                ..Share::default()
            });
            shares.len() - 1
        }
    };
    let s = &mut shares[at];
    step(&mut s.gpu, e.gpu, on);
    step(&mut s.cpu, e.cpu, on);
    if count_jobs {
        step(&mut s.gpu_jobs, u64::from(e.gpu > 0), on);
        step(&mut s.cpu_jobs, u64::from(e.cpu > 0), on);
    }
    if s.gpu == 0 && s.cpu == 0 && s.gpu_jobs == 0 && s.cpu_jobs == 0 {
        shares.swap_remove(at);
    }
}

/// `total` split among `shares` by `by(share) / whole` into `into` (by queue, with room for
/// each: `Sweep::grow`), in whole units that add back to `total`: each share rounded down, the
/// units left given to the largest remainders, ties to the queue numbered first.
fn split(
    total: u128,
    shares: &[Share],
    whole: u64,
    by: impl Fn(&Share) -> u64,
    into: &mut [u128],
    remainders: &mut Vec<(u128, u32, usize)>,
) {
    let whole = u128::from(whole);
    if whole == 0 {
        return;
    }
    remainders.clear();
    let (quotient, rest) = (total / whole, total % whole);
    let mut given = 0u128;
    for s in shares {
        let w = u128::from(by(s));
        if w == 0 {
            continue;
        }
        // total × w / whole without passing 128 bits: (q·whole + r) × w / whole.
        let scaled = rest * w;
        let part = quotient * w + scaled / whole;
        let sum = &mut into[s.queue as usize];
        *sum = sum.saturating_add(part);
        given += part;
        remainders.push((scaled % whole, s.queue, s.queue as usize));
    }
    let mut left = total.saturating_sub(given);
    if left == 0 {
        return;
    }
    remainders.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, _, at) in remainders.iter() {
        if left == 0 {
            break;
        }
        into[at] = into[at].saturating_add(1);
        left -= 1;
    }
}
