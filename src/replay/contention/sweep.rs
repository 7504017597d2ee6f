//! The sweep: events in time order → the sums of docs/contention.md, exactly.
//!
//! Between two events of a pool nothing in it changes, so each pool is settled only when one
//! of its own events comes: the time since its last event times what waited and ran there.
//! What it holds is one state a pool (its waiting and retrying requests by queue): it grows
//! with the pools and queues, never with the jobs or the runs.
//!
//! Sums are nanoseconds × thousandths of a device in 128 bits, added exactly in any order.
//! The overlap of a stretch, `min(R_p, Q_p) × dt`, is split among the waiting queues by
//! `Q_p^q / Q_p` and among the retrying queues by `R_p^q / R_p`. Not stretch by stretch: that
//! took a step for every queue present in the pool at each stretch (a pool where 1,000 queues
//! wait made the section 38× `--contention off`). Each pool keeps instead, per side,
//! `∫ min(R_p, Q_p) / Q_p dt` (and `/ R_p`) to 2^-64 of a nanosecond, and a queue's share is
//! its request × what that integral gained since the queue's own request last changed: a
//! step per change of a queue's request. Each share is rounded down once, at the end, and the
//! units left over given to the largest remainders (ties: the queue met first), so that every
//! split adds back to the total exactly.
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
    /// The pool's [`Level::ratio`] of this side (GPU's, CPU's) when the share last changed:
    /// its share of the overlap since then is its request × what the ratio gained.
    mark: [u128; 2],
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
    /// `∫ min(R_p, Q_p) / Q_p dt` (the waiting side's) and `∫ min(R_p, Q_p) / R_p dt` (the
    /// retrying side's) over the stretches split by share, in nanoseconds × 2^-64, wrapping
    /// (only what one gains between two marks is read).
    ratio: [u128; 2],
}

/// What waits and runs in one pool now.
#[derive(Debug, Clone, Default)]
struct Pool {
    since: i64,
    waiting: Vec<Share>,
    retrying: Vec<Share>,
    /// Where each queue's share is in `waiting` and `retrying`, by queue number (its place
    /// + 1; 0: none), so that a change finds its share in one step however many queues wait.
    waiting_at: Vec<u32>,
    retrying_at: Vec<u32>,
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
    /// What each queue's split holds below a unit, in 2^-64 of one: GPU's and CPU's, the
    /// waiting split's and the retrying split's.
    carry: [[Vec<u64>; 2]; 2],
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
            carry: Default::default(),
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
            let (sums, carry, over) = ([&mut self.gpu, &mut self.cpu], &mut self.carry, &mut self.overflowed);
            change_side(pool, WAITING, e.queue, (gpu, cpu), jobs, sums, carry, over);
            pool.gpu.waiting = pool.gpu.waiting.wrapping_add(gpu);
            pool.cpu.waiting = pool.cpu.waiting.wrapping_add(cpu);
            pool.gpu.waiting_jobs = pool.gpu.waiting_jobs.wrapping_add(jobs.0);
            pool.cpu.waiting_jobs = pool.cpu.waiting_jobs.wrapping_add(jobs.1);
        }
        if c.retry != 0 {
            let (gpu, cpu) = (signed(e.gpu, c.retry), signed(e.cpu, c.retry));
            let (sums, carry, over) = ([&mut self.gpu, &mut self.cpu], &mut self.carry, &mut self.overflowed);
            change_side(pool, RETRYING, e.queue, (gpu, cpu), (0, 0), sums, carry, over);
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
        for carry in self.carry.iter_mut().flatten() {
            carry.resize(queues, 0);
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
        settle_resource(pool, true, dt, at, &mut self.gpu, over);
        settle_resource(pool, false, dt, at, &mut self.cpu, over);
    }

    /// The sums, once every event is in; `counts` and `names` are the caller's.
    pub fn finish(mut self, counts: Counts, names: Names) -> Tally {
        let over = &mut self.overflowed;
        for pool in &mut self.pools {
            let [gpu, cpu] = &mut pool.pending;
            gpu.flush(&mut self.gpu, over);
            cpu.flush(&mut self.cpu, over);
            // Each share's part since its last change.
            for (side, shares) in [(WAITING, &pool.waiting), (RETRYING, &pool.retrying)] {
                for (r, (sums, level)) in [(&mut self.gpu, &pool.gpu), (&mut self.cpu, &pool.cpu)]
                    .into_iter()
                    .enumerate()
                {
                    let mut split = Split::new(split_of(sums, side), &mut self.carry[r][side], level.ratio[side]);
                    for s in shares {
                        split.accrue(s, r, over);
                    }
                }
            }
        }
        // The whole overlap is its pools' (added up here, not at each stretch); each split's
        // units left below it go to the largest remainders.
        for (sums, [waiting, retrying]) in [&mut self.gpu, &mut self.cpu].into_iter().zip(&self.carry) {
            let mut overlap = 0;
            for &n in &sums.overlap_by_pool {
                add(&mut overlap, n, &mut self.overflowed, 5);
            }
            sums.overlap = overlap;
            round(overlap, &mut sums.overlap_by_waiting_queue, waiting);
            round(overlap, &mut sums.overlap_by_retrying_queue, retrying);
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
fn settle_resource(pool: &mut Pool, gpu: bool, dt: u64, at: usize, sums: &mut Sums, over: &mut u16) {
    let Pool {
        waiting: waiting_shares,
        retrying: retrying_shares,
        gpu: gpu_level,
        cpu: cpu_level,
        pending: [gpu_pending, cpu_pending],
        ..
    } = pool;
    let (level, by, pending): (&mut Level, fn(&Share) -> u64, &mut Pending) = if gpu {
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
    // Otherwise each side's queues take their shares when their requests change (`change`)
    // or at the end: what the ratio gains here, times their requests.
    level.ratio[WAITING] = level.ratio[WAITING].wrapping_add(ratio(dt, least, waiting));
    level.ratio[RETRYING] = level.ratio[RETRYING].wrapping_add(ratio(dt, least, retrying));
}

/// The sides of a pool's shares, as [`Level::ratio`] and [`Sweep`]'s carries index them.
const WAITING: usize = 0;
const RETRYING: usize = 1;

/// `dt × least / whole` (`least` ≤ `whole`, `whole` > 0) in nanoseconds × 2^-64, rounded down:
/// exact when `least` is all of `whole` (the usual case of the side that is the smaller).
#[inline(always)]
fn ratio(dt: u64, least: u64, whole: u64) -> u128 {
    if least == whole {
        return u128::from(dt) << 64;
    }
    let (q, r) = div_rem(u128::from(dt) * u128::from(least), u128::from(whole));
    // q ≤ dt < 2^64, r < whole < 2^64: neither passes 128 bits shifted.
    (q << 64) + (r << 64) / u128::from(whole)
}

/// One side's split of one resource, as a share's change adds to it: the queues' whole units,
/// their carries below a unit, and the pool's ratio now.
struct Split<'a> {
    into: &'a mut [u128],
    carry: &'a mut [u64],
    ratio: u128,
}

impl<'a> Split<'a> {
    #[inline(always)]
    fn new(into: &'a mut [u128], carry: &'a mut [u64], ratio: u128) -> Split<'a> {
        Split { into, carry, ratio }
    }

    /// Share `s`'s part since its mark (resource `r`: 0 GPU, 1 CPU): its request × what the
    /// ratio gained, in whole units to its queue and the rest to its carry.
    #[inline(always)]
    fn accrue(&mut self, s: &Share, r: usize, over: &mut u16) {
        let request = if r == 0 { s.gpu } else { s.cpu };
        let gained = self.ratio.wrapping_sub(s.mark[r]);
        if request == 0 || gained == 0 {
            return;
        }
        let request = u128::from(request);
        // request × gained without passing 128 bits: its whole nanoseconds and its fraction
        // apart.
        let low = request * u128::from(gained as u64);
        let mut units = request * (gained >> 64) + (low >> 64);
        let q = s.queue as usize;
        let (carry, past) = self.carry[q].overflowing_add(low as u64);
        self.carry[q] = carry;
        units += u128::from(past);
        add(&mut self.into[q], units, over, 7);
    }
}

/// A split's units left below `total` (its shares rounded down) given one each to the queues
/// of the largest carries, ties to the queue numbered first, so that it adds back to `total`.
fn round(total: u128, into: &mut [u128], carry: &[u64]) {
    let given = into.iter().fold(0u128, |a, &n| a.saturating_add(n));
    let mut left = total.saturating_sub(given);
    if left == 0 {
        return;
    }
    let mut order: Vec<usize> = (0..into.len()).filter(|&q| carry[q] > 0).collect();
    order.sort_unstable_by(|&a, &b| carry[b].cmp(&carry[a]).then(a.cmp(&b)));
    for &q in &order {
        if left == 0 {
            return;
        }
        into[q] += 1;
        left -= 1;
    }
    // More units left than queues with a remainder: only past 2^64 stretches' roundings; the
    // rest to the first of them, so that the split still adds back.
    if let Some(&q) = order.first() {
        into[q] = into[q].saturating_add(left);
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

/// One side's split of `sums` by queue (`side`: [`WAITING`] or [`RETRYING`]).
#[inline(always)]
fn split_of(sums: &mut Sums, side: usize) -> &mut Vec<u128> {
    if side == WAITING {
        &mut sums.overlap_by_waiting_queue
    } else {
        &mut sums.overlap_by_retrying_queue
    }
}

/// Queue `queue`'s share on `side` of `pool` changed ([`change`]), its part so far added to
/// that side's splits of `sums` (GPU's, CPU's) and `carry`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn change_side(
    pool: &mut Pool,
    side: usize,
    queue: u32,
    requests: (u64, u64),
    jobs: (u64, u64),
    sums: [&mut Sums; 2],
    carry: &mut [[Vec<u64>; 2]; 2],
    over: &mut u16,
) {
    let ratios = [pool.gpu.ratio[side], pool.cpu.ratio[side]];
    let (shares, at) = if side == WAITING {
        (&mut pool.waiting, &mut pool.waiting_at)
    } else {
        (&mut pool.retrying, &mut pool.retrying_at)
    };
    let [gpu_sums, cpu_sums] = sums;
    let [gpu_carry, cpu_carry] = carry;
    let accrue = |s: &Share| {
        Split::new(split_of(gpu_sums, side), &mut gpu_carry[side], ratios[0]).accrue(s, 0, over);
        Split::new(split_of(cpu_sums, side), &mut cpu_carry[side], ratios[1]).accrue(s, 1, over);
    };
    change(shares, at, queue, requests, jobs, ratios, accrue);
}

/// A queue's share in a pool changed by `requests` and `jobs` (GPU's and CPU's, each
/// [`signed`]), its part of the overlap so far first handed to `accrue` (`ratios`: the pool's
/// now, GPU's and CPU's, of the share's side); a share
/// that falls to nothing is dropped, so the list holds only the queues present. `at` says
/// where each queue's share is (its place + 1).
#[inline(always)]
fn change(
    shares: &mut Vec<Share>,
    at: &mut Vec<u32>,
    queue: u32,
    requests: (u64, u64),
    jobs: (u64, u64),
    ratios: [u128; 2],
    accrue: impl FnOnce(&Share),
) {
    let q = queue as usize;
    // Most pools hold one queue: the first share is checked before the index (BENCHMARKS.md).
    let place = if shares.first().is_some_and(|s| s.queue == queue) {
        0
    } else {
        if at.len() <= q {
            at.resize(q + 1, 0);
        }
        match at[q] {
            0 => {
                shares.push(Share {
                    queue,
                    mark: ratios,
                    ..Share::default()
                });
                at[q] = shares.len() as u32;
                shares.len() - 1
            }
            n => n as usize - 1,
        }
    };
    let s = &mut shares[place];
    // Its part since its last change, where a stretch since was split by share (a pool that
    // only ever held one queue a side never is: its overlap went to the two whole).
    if s.mark != ratios {
        accrue(s);
        s.mark = ratios;
    }
    s.gpu = s.gpu.wrapping_add(requests.0);
    s.cpu = s.cpu.wrapping_add(requests.1);
    s.gpu_jobs = s.gpu_jobs.wrapping_add(jobs.0);
    s.cpu_jobs = s.cpu_jobs.wrapping_add(jobs.1);
    if s.gpu | s.cpu | s.gpu_jobs | s.cpu_jobs == 0 {
        shares.swap_remove(place);
        at[q] = 0;
        if let Some(moved) = shares.get(place) {
            at[moved.queue as usize] = place as u32 + 1;
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

    /// `total` split among queues of GPU requests `(queue, request)` that all waited `dt`
    /// while `least` of their requests overlapped retries: each share accrued from the ratio,
    /// then rounded.
    fn split_of(total: u128, dt: u64, least: u64, requests: &[(u32, u64)]) -> Vec<u128> {
        let whole = requests.iter().map(|r| r.1).sum();
        let mut into = vec![0; requests.len()];
        let mut carry = vec![0; requests.len()];
        let mut split = Split {
            into: &mut into,
            carry: &mut carry,
            ratio: ratio(dt, least, whole),
        };
        for &(queue, gpu) in requests {
            let share = Share {
                queue,
                gpu,
                ..Share::default()
            };
            split.accrue(&share, 0, &mut 0);
        }
        round(total, &mut into, &carry);
        into
    }

    /// Each share rounded down, the units left to the largest remainders, ties to the queue
    /// numbered first, whatever the order of the shares: among a few queues, among many, and
    /// past 64 bits.
    #[test]
    fn the_units_left_go_to_the_largest_remainders_ties_to_the_queue_numbered_first() {
        // 10 among three equal shares: 3 each, the unit left to queue 0 (listed last).
        assert_eq!(split_of(10, 10, 1, &[(2, 1), (1, 1), (0, 1)]), [4, 3, 3]);
        // 10 by 1 and 2 of 3 (3.33 and 6.67): the unit to the larger remainder.
        assert_eq!(split_of(10, 10, 1, &[(0, 1), (1, 2)]), [3, 7]);
        // 12 among five equal shares: 2 each, the 2 units left to queues 0 and 1.
        assert_eq!(
            split_of(12, 12, 1, &[(4, 1), (3, 1), (2, 1), (1, 1), (0, 1)]),
            [3, 3, 2, 2, 2]
        );
        // 25 among ten equal shares: 2 each, the 5 left to queues 0 to 4.
        let ten: Vec<(u32, u64)> = (0..10).rev().map(|q| (q, 1)).collect();
        assert_eq!(split_of(25, 25, 1, &ten), [3, 3, 3, 3, 3, 2, 2, 2, 2, 2]);
        // Whole: each share its request × dt exactly, nothing left.
        assert_eq!(split_of(21, 7, 3, &[(0, 1), (1, 2)]), [7, 14]);
        // Past 64 bits: 2^63 ns of a request of 2^40 between two equal shares of 2^39.
        let (dt, least) = (1u64 << 63, 1u64 << 40);
        let total = u128::from(dt) * u128::from(least);
        assert_eq!(
            split_of(total, dt, least, &[(1, 1 << 39), (0, 1 << 39)]),
            [total / 2, total / 2]
        );
    }

    /// A share's part accrues across stretches of different ratios exactly: a third, then a
    /// half, of 6 ns each, for a request of 6: 12 + 18 units.
    #[test]
    fn a_share_accrues_across_stretches_of_different_ratios() {
        let mut into = vec![0u128];
        let mut carry = vec![0u64];
        let gained = ratio(6, 1, 3).wrapping_add(ratio(6, 1, 2));
        let mut split = Split {
            into: &mut into,
            carry: &mut carry,
            ratio: gained,
        };
        let share = Share {
            queue: 0,
            gpu: 6,
            ..Share::default()
        };
        split.accrue(&share, 0, &mut 0);
        round(30, &mut into, &carry);
        assert_eq!(into, [30]);
    }
}
