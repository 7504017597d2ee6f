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
    /// GPU's and CPU's.
    pending: [Pending; 2],
}

/// A pool's overlap since one queue alone waited there and one alone retried (the usual
/// stretch of a pool), not yet added to those two queues' splits: the stretches in a row that
/// go to the same two queues are added to them once, when the two change or at the end.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    overlap: u128,
    /// The waiting queue's and the retrying queue's numbers.
    queues: Option<(u32, u32)>,
}

impl Pending {
    /// The overlap held added to its two queues' splits.
    fn flush(&mut self, sums: &mut Sums, over: &mut u16) {
        if let Some((waiting, retrying)) = self.queues.take() {
            let overlap = std::mem::take(&mut self.overlap);
            add(&mut sums.overlap_by_waiting_queue[waiting as usize], overlap, over, 7);
            add(&mut sums.overlap_by_retrying_queue[retrying as usize], overlap, over, 7);
        }
    }
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
    remainders: Vec<(u128, u32)>,
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
        let c = e.change;
        if c.wait != 0 {
            let (gpu, cpu) = (signed(e.gpu, c.wait), signed(e.cpu, c.wait));
            let jobs = (
                signed(u64::from(e.gpu > 0), c.wait),
                signed(u64::from(e.cpu > 0), c.wait),
            );
            change(&mut pool.waiting, e.queue, (gpu, cpu), jobs);
            pool.gpu.waiting = pool.gpu.waiting.wrapping_add(gpu);
            pool.cpu.waiting = pool.cpu.waiting.wrapping_add(cpu);
            pool.gpu.waiting_jobs = pool.gpu.waiting_jobs.wrapping_add(jobs.0);
            pool.cpu.waiting_jobs = pool.cpu.waiting_jobs.wrapping_add(jobs.1);
        }
        if c.retry != 0 {
            let (gpu, cpu) = (signed(e.gpu, c.retry), signed(e.cpu, c.retry));
            change(&mut pool.retrying, e.queue, (gpu, cpu), (0, 0));
            pool.gpu.retrying = pool.gpu.retrying.wrapping_add(gpu);
            pool.cpu.retrying = pool.cpu.retrying.wrapping_add(cpu);
            if e.after_failed.is_some_and(|t| self.windows.contains(t)) {
                pool.gpu.retrying_in_incidents = pool.gpu.retrying_in_incidents.wrapping_add(gpu);
                pool.cpu.retrying_in_incidents = pool.cpu.retrying_in_incidents.wrapping_add(cpu);
            }
        }
        if c.own != 0 {
            pool.gpu.own = pool.gpu.own.wrapping_add(signed(e.gpu, c.own));
            pool.cpu.own = pool.cpu.own.wrapping_add(signed(e.cpu, c.own));
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
    pub fn finish(mut self, counts: Counts, names: Names) -> Tally {
        for pool in &mut self.pools {
            let [gpu, cpu] = &mut pool.pending;
            gpu.flush(&mut self.gpu, &mut self.overflowed);
            cpu.flush(&mut self.cpu, &mut self.overflowed);
        }
        // The whole overlap is its pools' (added up here, not at each stretch).
        for sums in [&mut self.gpu, &mut self.cpu] {
            let mut overlap = 0;
            for &n in &sums.overlap_by_pool {
                add(&mut overlap, n, &mut self.overflowed, 5);
            }
            sums.overlap = overlap;
        }
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
    pool: &mut Pool,
    gpu: bool,
    dt: u64,
    at: usize,
    sums: &mut Sums,
    over: &mut u16,
    remainders: &mut Vec<(u128, u32)>,
) {
    let Pool {
        waiting: waiting_shares,
        retrying: retrying_shares,
        gpu: gpu_level,
        cpu: cpu_level,
        pending: [gpu_pending, cpu_pending],
        ..
    } = pool;
    let (level, by, pending): (&Level, fn(&Share) -> u64, &mut Pending) = if gpu {
        (gpu_level, |s| s.gpu, gpu_pending)
    } else {
        (cpu_level, |s| s.cpu, cpu_pending)
    };
    let (waiting, retrying) = (level.waiting, level.retrying);
    let of = |request: u64| u128::from(request) * u128::from(dt);
    // Each figure is added only where it can be more than nothing: most stretches of a busy
    // pool have requests waiting and retries running, but many have one of them alone.
    if waiting != 0 {
        add(&mut sums.queued, of(waiting), over, 1);
    }
    if retrying == 0 {
        return;
    }
    add(&mut sums.retry, of(retrying), over, 0);
    if level.retrying_in_incidents > 0 {
        add(&mut sums.in_incidents_retry, of(level.retrying_in_incidents), over, 3);
        add(
            &mut sums.in_incidents_overlap,
            of(level.retrying_in_incidents.min(waiting)),
            over,
            4,
        );
    }
    if waiting == 0 {
        return;
    }
    // Another job waits: two jobs wait, or one that is not the retries' own.
    let others = match level.waiting_jobs {
        0 => 0,
        1 => retrying - level.own.min(retrying),
        _ => retrying,
    };
    add(&mut sums.while_others_waited, of(others), over, 2);
    let least = retrying.min(waiting);
    let overlap = of(least);
    add(&mut sums.overlap_by_pool[at], overlap, over, 6);
    // One queue waits and one retries, each the whole of its side: the stretch's overlap is
    // all theirs, held until the two change.
    if let ([w], [r]) = (&waiting_shares[..], &retrying_shares[..]) {
        if by(w) == waiting && by(r) == retrying {
            let queues = Some((w.queue, r.queue));
            if pending.queues != queues {
                pending.flush(sums, over);
                pending.queues = queues;
            }
            add(&mut pending.overlap, overlap, over, 7);
            return;
        }
    }
    let stretch = Stretch { least, overlap, dt };
    let (by_waiting, by_retrying) = (&mut sums.overlap_by_waiting_queue, &mut sums.overlap_by_retrying_queue);
    split_side(waiting_shares, waiting, stretch, by, by_waiting, over, remainders);
    split_side(retrying_shares, retrying, stretch, by, by_retrying, over, remainders);
}

/// A stretch's overlap (`least` × `dt`), as each side's split takes it.
#[derive(Clone, Copy)]
struct Stretch {
    least: u64,
    overlap: u128,
    dt: u64,
}

/// A stretch's overlap split among one side's queues (`shares`, whose requests add up to
/// `whole`) into `into`, by queue.
#[inline(always)]
fn split_side(
    shares: &[Share],
    whole: u64,
    stretch: Stretch,
    by: fn(&Share) -> u64,
    into: &mut [u128],
    over: &mut u16,
    remainders: &mut Vec<(u128, u32)>,
) {
    // One queue holds all of the side (the usual case in a pool): all of the overlap,
    // whichever way the split goes.
    if let [s] = shares {
        if by(s) == whole {
            add(&mut into[s.queue as usize], stretch.overlap, over, 7);
            return;
        }
    }
    if whole == stretch.least {
        // The side the overlap is whole of: each queue's share is its request × dt, exactly
        // what the split gives, without dividing.
        for s in shares {
            let n = u128::from(by(s)) * u128::from(stretch.dt);
            if n > 0 {
                add(&mut into[s.queue as usize], n, over, 7);
            }
        }
    } else {
        split(stretch.overlap, shares, whole, by, into, remainders);
    }
}

/// A request as a change adds it (`d` > 0) or takes it away: the levels and shares are sums of
/// whole requests, each added once before it is taken, so a request taken is added negated,
/// wrapping. (Of equal times the events come in any order: a level can pass below nothing
/// between two of them, and is back before any time passes.)
#[inline(always)]
fn signed(request: u64, d: i8) -> u64 {
    if d > 0 {
        request
    } else {
        request.wrapping_neg()
    }
}

/// A queue's share in a pool changed by `requests` and `jobs` (GPU's and CPU's, each
/// [`signed`]); a share that falls to nothing is dropped, so the list holds only the queues
/// present.
#[inline(always)]
fn change(shares: &mut Vec<Share>, queue: u32, requests: (u64, u64), jobs: (u64, u64)) {
    // Most pools hold one queue: the first share is checked before the search (the search
    // alone took 7 M more instructions on 40,000 jobs of one queue: BENCHMARKS.md).
    let found = if shares.first().is_some_and(|s| s.queue == queue) {
        Some(0)
    } else {
        shares.iter().position(|s| s.queue == queue)
    };
    let at = match found {
        Some(at) => at,
        None => {
            shares.push(Share {
                queue,
                ..Share::default()
            });
            shares.len() - 1
        }
    };
    let s = &mut shares[at];
    s.gpu = s.gpu.wrapping_add(requests.0);
    s.cpu = s.cpu.wrapping_add(requests.1);
    s.gpu_jobs = s.gpu_jobs.wrapping_add(jobs.0);
    s.cpu_jobs = s.cpu_jobs.wrapping_add(jobs.1);
    if s.gpu | s.cpu | s.gpu_jobs | s.cpu_jobs == 0 {
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
    remainders: &mut Vec<(u128, u32)>,
) {
    let whole = u128::from(whole);
    if whole == 0 {
        return;
    }
    remainders.clear();
    let (quotient, rest) = div_rem(total, whole);
    let mut given = 0u128;
    for s in shares {
        let w = u128::from(by(s));
        if w == 0 {
            continue;
        }
        // total × w / whole without passing 128 bits: (q·whole + r) × w / whole.
        let (part, remainder) = div_rem(rest * w, whole);
        let part = quotient * w + part;
        let sum = &mut into[s.queue as usize];
        *sum = sum.saturating_add(part);
        given += part;
        remainders.push((remainder, s.queue));
    }
    let left = total.saturating_sub(given);
    if left == 0 {
        return;
    }
    // The units left (fewer than the queues) to the largest remainders, ties to the queue
    // numbered first: the first `left` in that order, found among a few queues by taking the
    // largest in turn (a sort of a handful of entries at each stretch cost more than the
    // split), among many by sorting.
    let order = |a: &(u128, u32), b: &(u128, u32)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    let left = usize::try_from(left).unwrap_or(usize::MAX).min(remainders.len());
    if remainders.len() <= 8 {
        for _ in 0..left {
            let first = (0..remainders.len()).min_by(|&i, &j| order(&remainders[i], &remainders[j]));
            if let Some(first) = first {
                let (_, queue) = remainders.swap_remove(first);
                into[queue as usize] = into[queue as usize].saturating_add(1);
            }
        }
    } else {
        remainders.sort_unstable_by(order);
        for &(_, queue) in &remainders[..left] {
            into[queue as usize] = into[queue as usize].saturating_add(1);
        }
    }
}

/// `n / d` and `n % d` (`d` > 0), in 64 bits when both fit, the usual case: a stretch's
/// overlap and a share's part of it are mostly below 2^64, and a 128-bit division is a call
/// where a 64-bit one is an instruction.
#[inline(always)]
fn div_rem(n: u128, d: u128) -> (u128, u128) {
    match (u64::try_from(n), u64::try_from(d)) {
        (Ok(n), Ok(d)) => (u128::from(n / d), u128::from(n % d)),
        _ => (n / d, n % d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `total` split among queues of GPU requests `(queue, request)`, by queue.
    fn split_of(total: u128, requests: &[(u32, u64)]) -> Vec<u128> {
        let shares: Vec<Share> = requests
            .iter()
            .map(|&(queue, gpu)| Share {
                queue,
                gpu,
                ..Share::default()
            })
            .collect();
        let whole = shares.iter().map(|s| s.gpu).sum();
        let mut into = vec![0; requests.len()];
        split(total, &shares, whole, |s| s.gpu, &mut into, &mut Vec::new());
        into
    }

    /// Each share rounded down, the units left to the largest remainders, ties to the queue
    /// numbered first, whatever the order of the shares: among a few queues, among many, and
    /// past 64 bits.
    #[test]
    fn the_units_left_go_to_the_largest_remainders_ties_to_the_queue_numbered_first() {
        // 10 among three equal shares: 3 each, the unit left to queue 0 (listed last).
        assert_eq!(split_of(10, &[(2, 1), (1, 1), (0, 1)]), [4, 3, 3]);
        // 10 by 1 and 2 of 3 (3.33 and 6.67): the unit to the larger remainder.
        assert_eq!(split_of(10, &[(0, 1), (1, 2)]), [3, 7]);
        // 12 among five equal shares: 2 each, the 2 units left to queues 0 and 1.
        assert_eq!(split_of(12, &[(4, 1), (3, 1), (2, 1), (1, 1), (0, 1)]), [3, 3, 2, 2, 2]);
        // 25 among ten equal shares: 2 each, the 5 left to queues 0 to 4.
        let ten: Vec<(u32, u64)> = (0..10).rev().map(|q| (q, 1)).collect();
        assert_eq!(split_of(25, &ten), [3, 3, 3, 3, 3, 2, 2, 2, 2, 2]);
        // Past 64 bits: 2^100 + 1 between two equal shares.
        let half = 1u128 << 99;
        assert_eq!(split_of((1 << 100) + 1, &[(1, 1), (0, 1)]), [half + 1, half]);
    }
}
