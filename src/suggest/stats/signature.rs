//! One signature's counts ([`SignatureStats`]) and their parts: hours, the cost of a
//! collided retry, futile trials by day, the baseline's decisions ([`Current`]); one node's
//! runs; the rates of a tally; and the names every part of the learning shares: the cap of
//! signatures kept ([`MAX_SIGNATURES`]), [`OTHER`] past it, the [`Map`] keyed by text.
//!
//! Owns: adding two counts of the same signature. Must not: count a job (that is `unit`) or
//! decide where a signature is kept (that is `learned`).

use std::collections::{BTreeMap, HashMap};

use crate::model::policy::Action;
use crate::replay::estimate::{wilson, Tally, DEPTHS, Z95};

use crate::model::signature::Signature;

/// Distinct signatures kept; the runs of any other count under [`OTHER`].
pub const MAX_SIGNATURES: usize = 10_000;

/// The signature the runs past [`MAX_SIGNATURES`] count under.
pub const OTHER: &str = "other";

/// What the baseline's replay did with a failed run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Current {
    /// `rule` (`policy/index`, `policy/default`, or the decision kind when no rule decided)
    /// and its action.
    Decided { rule: String, action: Action },
    /// The replay never reached the run (the job had ended before it).
    Undecided,
}

/// A map keyed by text, hashed with foldhash (a signature is hashed once per failed run).
pub type Map<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// Hours of work, in nanoseconds × thousandths of a device (exact whatever the order; a
/// history whose record passes 128 bits is refused by pass 2's comparison, as `simulate
/// --baseline` refuses it, and the sums here saturate rather than wrap before that).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hours {
    pub failed: u128,
    pub after: u128,
    pub futile: u128,
    /// Of `after`, the runs that failed again: each is also a failed run of its own
    /// signature, counted in that one's `failed`.
    pub again: u128,
}

/// As a shard's partial writes it: `[failed, after, futile, again]`.
impl From<Hours> for [u128; 4] {
    fn from(h: Hours) -> [u128; 4] {
        [h.failed, h.after, h.futile, h.again]
    }
}

impl From<[u128; 4]> for Hours {
    fn from([failed, after, futile, again]: [u128; 4]) -> Hours {
        Hours {
            failed,
            after,
            futile,
            again,
        }
    }
}

impl Hours {
    /// Each run once: the failed runs and the runs after them that did not fail (a run
    /// that follows one failure and fails again is its own signature's), so that the
    /// signatures' sum is at most the history's.
    pub fn once(&self) -> u128 {
        // Each part is at most the record's GPU (CPU) time, which pass 2 refuses past 128
        // bits; the sums saturate until then rather than wrap.
        self.failed.saturating_add(self.after - self.again)
    }
}

/// One signature's counts.
#[derive(Debug, Clone, Default)]
pub struct SignatureStats {
    pub text: String,
    /// `None` for [`OTHER`].
    pub signature: Option<Signature>,
    pub failed_runs: u64,
    pub jobs: u64,
    pub trials: Tally,
    pub by_depth: [Tally; DEPTHS],
    pub recorded: BTreeMap<String, u64>,
    /// The baseline's decisions of its failed runs (train jobs), counted in pass 1.
    pub current: HashMap<Current, u64>,
    /// Its failed runs' categories as the baseline's side sees them (its categorizer's, else
    /// the recorded ones), keyed as `recorded`.
    pub seen: BTreeMap<String, u64>,
    pub gpu: Hours,
    pub cpu: Hours,
    pub nodes: Map<u64>,
    pub same_node: Tally,
    pub other_node: Tally,
    /// Some run's message had a first line longer than the template keeps.
    pub cut: bool,
    /// Trials that are none: the next run was a collided retry (docs/reference/suggest.md
    /// "A collided retry is no trial").
    pub collided: u64,
    /// What one retry of each job with a collided retry of it may cost: the job's longest
    /// recorded run × its request, once per job (docs/reference/suggest.md "A collided retry
    /// is no trial": the price of letting them run).
    pub collided_cost: CollidedCost,
    /// Failed runs in incident windows, left out of its trials (docs/reference/suggest.md
    /// "Incidents"; 0 until the windows are found after pass 1).
    pub in_incidents: u64,
    /// Its futile trials by depth and day.
    pub futile_days: FutileDays,
}

/// The longest recorded run of jobs, × their GPU and CPU requests, and alone: what one more
/// run of each may cost at most (its outcome not in the record).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CollidedCost {
    /// Nanoseconds × thousandths of a GPU.
    pub gpu: u128,
    /// Nanoseconds × thousandths of a CPU.
    pub cpu: u128,
    /// Nanoseconds of run time.
    pub run: u128,
}

impl CollidedCost {
    pub fn is_zero(&self) -> bool {
        *self == CollidedCost::default()
    }

    /// Adds `o`, saturating.
    pub fn add(&mut self, o: CollidedCost) {
        self.gpu = self.gpu.saturating_add(o.gpu);
        self.cpu = self.cpu.saturating_add(o.cpu);
        self.run = self.run.saturating_add(o.run);
    }

    /// `n` times it, saturating.
    pub fn times(self, n: u32) -> CollidedCost {
        let n = u128::from(n);
        CollidedCost {
            gpu: self.gpu.saturating_mul(n),
            cpu: self.cpu.saturating_mul(n),
            run: self.run.saturating_mul(n),
        }
    }
}

/// One UTC day, as days since 1970-01-01.
pub fn day_of(t: i64) -> i64 {
    t.div_euclid(86_400 * 1_000_000_000)
}

/// A signature's futile trials (the next run did not succeed) by depth bucket and the UTC
/// day their failed run ended (docs/reference/suggest.md "A Fail needs more than one day"),
/// and those whose time the record does not give.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FutileDays {
    by: BTreeMap<(u8, i64), u64>,
    untimed: [u64; DEPTHS],
}

impl FutileDays {
    /// One futile trial at depth bucket `bucket` (0-based), its failed run ending at `time`.
    pub fn add(&mut self, bucket: usize, time: Option<i64>) {
        match time {
            Some(t) => *self.by.entry((bucket as u8, day_of(t))).or_default() += 1,
            None => self.untimed[bucket] += 1,
        }
    }

    /// Takes out `o`'s trials, counted here before.
    pub fn take_all(&mut self, o: &FutileDays) {
        for (k, n) in &o.by {
            if let Some(m) = self.by.get_mut(k) {
                *m = m.saturating_sub(*n);
                if *m == 0 {
                    self.by.remove(k);
                }
            }
        }
        for (a, b) in self.untimed.iter_mut().zip(o.untimed) {
            *a = a.saturating_sub(b);
        }
    }

    pub fn merge(&mut self, o: &FutileDays) {
        for (k, n) in &o.by {
            *self.by.entry(*k).or_default() += n;
        }
        for (a, b) in self.untimed.iter_mut().zip(o.untimed) {
            *a += b;
        }
    }

    /// The one UTC day every futile trial at depth buckets `from` and deeper lies on, when
    /// they all lie on one day and the record places each (`None`: two days or more, one it
    /// cannot place, or none at all).
    pub fn one_day(&self, from: usize) -> Option<i64> {
        if self.untimed[from.min(DEPTHS)..].iter().any(|&n| n > 0) {
            return None;
        }
        let mut days = self.by.keys().filter(|(b, _)| usize::from(*b) >= from).map(|(_, d)| *d);
        let first = days.next()?;
        days.all(|d| d == first).then_some(first)
    }

    /// As a partial holds it: `[bucket, day, trials]` in order, and the untimed by bucket.
    pub(super) fn out(&self) -> (Vec<(u8, i64, u64)>, [u64; DEPTHS]) {
        (self.by.iter().map(|((b, d), n)| (*b, *d, *n)).collect(), self.untimed)
    }

    pub(super) fn back(by: Vec<(u8, i64, u64)>, untimed: [u64; DEPTHS]) -> Result<FutileDays, String> {
        let mut f = FutileDays {
            by: BTreeMap::new(),
            untimed,
        };
        for (b, d, n) in by {
            if usize::from(b) >= DEPTHS {
                return Err(format!(
                    "a futile trial's depth bucket is {b}, past the {DEPTHS} there are"
                ));
            }
            *f.by.entry((b, d)).or_default() += n;
        }
        Ok(f)
    }
}

impl SignatureStats {
    pub(super) fn new(text: String, signature: Option<Signature>) -> SignatureStats {
        SignatureStats {
            text,
            signature,
            ..SignatureStats::default()
        }
    }

    /// The share of trials that succeeded, and its Wilson 95% interval; `None` without
    /// trials.
    pub fn rate(&self) -> Option<(f64, f64, f64)> {
        rate_of(self.trials)
    }

    /// Runs the baseline's replay never decided.
    pub fn undecided(&self) -> u64 {
        self.current.get(&Current::Undecided).copied().unwrap_or(0)
    }

    /// The baseline's decisions, by runs descending then rule.
    pub fn current_sorted(&self) -> Vec<(&str, Action, u64)> {
        let mut v: Vec<(&str, Action, u64)> = self
            .current
            .iter()
            .filter_map(|(c, n)| match c {
                Current::Decided { rule, action } => Some((rule.as_str(), *action, *n)),
                Current::Undecided => None,
            })
            .collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)).then(a.1.as_str().cmp(b.1.as_str())));
        v
    }

    /// The 3 nodes with most failed runs of it, by runs then node.
    pub fn top_nodes(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.nodes.iter().map(|(n, k)| (n.as_str(), *k)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(3);
        v
    }

    /// Adds another unit's counts of the same signature.
    pub(super) fn merge(&mut self, o: SignatureStats) {
        self.failed_runs += o.failed_runs;
        self.jobs += o.jobs;
        merge_tally(&mut self.trials, o.trials);
        for (a, b) in self.by_depth.iter_mut().zip(o.by_depth) {
            merge_tally(a, b);
        }
        for (k, v) in o.recorded {
            *self.recorded.entry(k).or_default() += v;
        }
        for (k, v) in o.current {
            *self.current.entry(k).or_default() += v;
        }
        for (k, v) in o.seen {
            *self.seen.entry(k).or_default() += v;
        }
        for (h, oh) in [(&mut self.gpu, o.gpu), (&mut self.cpu, o.cpu)] {
            h.failed = h.failed.saturating_add(oh.failed);
            h.after = h.after.saturating_add(oh.after);
            h.futile = h.futile.saturating_add(oh.futile);
            h.again = h.again.saturating_add(oh.again);
        }
        for (k, v) in o.nodes {
            *self.nodes.entry(k).or_default() += v;
        }
        merge_tally(&mut self.same_node, o.same_node);
        merge_tally(&mut self.other_node, o.other_node);
        self.cut |= o.cut;
        self.collided += o.collided;
        self.collided_cost.add(o.collided_cost);
        self.in_incidents += o.in_incidents;
        self.futile_days.merge(&o.futile_days);
    }
}

/// The counts of `of` pooled under `text` (no signature, no node, no job count): what their
/// runs say together, as the policy's default decides them (`propose`'s default).
pub fn pooled<'a>(text: &str, of: impl Iterator<Item = &'a SignatureStats>) -> SignatureStats {
    let mut pool = SignatureStats::new(text.to_string(), None);
    for s in of {
        let mut s = s.clone();
        s.nodes = Map::default();
        pool.merge(s);
    }
    // A job with runs of two of them would be counted twice: the pool counts runs only.
    pool.jobs = 0;
    pool
}

fn merge_tally(t: &mut Tally, o: Tally) {
    t.trials += o.trials;
    t.successes += o.successes;
}

pub(super) fn add_tally(t: &mut Tally, success: bool) {
    t.trials += 1;
    t.successes += u64::from(success);
}

/// `(rate, low, high)` of a tally; `None` without trials.
pub fn rate_of(t: Tally) -> Option<(f64, f64, f64)> {
    (t.trials > 0).then(|| {
        let (low, high) = wilson(t.successes, t.trials, Z95);
        (t.successes as f64 / t.trials as f64, low, high)
    })
}

/// One node's runs.
#[derive(Debug, Clone, Default)]
pub struct NodeStats {
    pub runs: u64,
    pub failed: u64,
    /// Failed runs by signature (index into
    /// [`Learned::signatures`](super::Learned::signatures); `usize::MAX`: other).
    pub signatures: HashMap<usize, u64, foldhash::fast::RandomState>,
}
