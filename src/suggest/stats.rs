//! What suggest learns from a history (docs/reference/suggest.md "Per signature"): per
//! signature, its failed runs, jobs, trials and successes by depth, what today's
//! categorizer recorded, what the baseline decided, GPU- and CPU-hours, and nodes; per node,
//! its runs and failures (the suspect nodes' counts).
//!
//! Owns: [`UnitLearned`] (what a worker's unit of jobs adds) and [`Learned`] (the fold of
//! those, in input order, so that the 10,000 signatures kept are the first met in the
//! source whatever the workers), and the baseline's decisions per signature ([`Current`],
//! counted from the comparison's own decision records by `commands::suggest`). A sharded
//! suggest (docs/past-one-machine.md) learns each shard's share ([`Learned::of_a_shard`]) and
//! hands it to `merge`: its first 10,000 signatures as a [`ShardLearned`] (the first shard's
//! `other` with them), a later shard's signatures past those as [`PastSignature`]s, 10,000 at
//! most at a time, so that a shard holds about what one process holds whatever the
//! signatures. The merge folds the shards in the source's order ([`Learned::merge_shard`]),
//! where the cap is applied as one process applies it, then adds the rest where one process
//! counts it ([`Learned::merge_past`]). Pure: no I/O.

use std::collections::{BTreeMap, HashMap};

use crate::diag::quote;
use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::{Action, Condition};
use crate::replay::compare::request_time;
use crate::replay::estimate::{wilson, Tally, DEPTHS, Z95};

use crate::model::signature::{signature, FailedTexts, Signature};

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

/// What the jobs of one unit of the source add (a worker's, folded into [`Learned`] in
/// the source's order): signatures in the order first met, nodes, and scratch buffers, so
/// that a failed run costs its signature's text and a lookup, no allocation.
#[derive(Debug, Default)]
pub struct UnitLearned {
    pub jobs: u64,
    pub failed_runs: u64,
    /// Retries the baseline's replay says collide that the record shows ran.
    pub collisions_ran: u64,
    sigs: Vec<SignatureStats>,
    index: Map<usize>,
    /// Runs per node; the failed ones' signatures by this unit's slot.
    nodes: Map<NodeStats>,
    /// The job's slots so far (its signatures counted once each in `jobs`).
    seen: Vec<usize>,
    /// The slot of each failed run of the job last added, in run order (for
    /// [`UnitLearned::add_today`]).
    slots: Vec<usize>,
    /// The job's slots whose [`SignatureStats::collided_cost`] it has added to.
    costed: Vec<usize>,
}

impl UnitLearned {
    /// Counts one job's failed runs and node runs: `ends`, each run's time
    /// (`replay::incidents::ends`, none when the record does not place it); `collided`, per
    /// failed run, whether its next run is a collision (a retry that never ran: it is no trial
    /// of it, docs/reference/suggest.md "A collided retry is no trial").
    pub fn add_job(&mut self, history: &FailureHistory, ends: &[Option<i64>], collided: &[bool], texts: &FailedTexts) {
        self.jobs += 1;
        let gpu_milli = history.job.resources.and_then(|r| r.gpu_milli);
        let cpu_milli = history.job.resources.and_then(|r| r.cpu_milli);
        let futile = history.runs.last().is_some_and(|r| r.outcome != Outcome::Succeeded);
        // What one more run of the job may cost, at most: its longest recorded run.
        let longest = history.runs.iter().map(|r| r.run_for).max().unwrap_or_default();
        let one_more = CollidedCost {
            gpu: request_time(longest, gpu_milli),
            cpu: request_time(longest, cpu_milli),
            run: u128::from(longest.0),
        };
        self.seen.clear();
        self.slots.clear();
        self.costed.clear();
        let mut depth = 0u32;
        for (k, run) in history.runs.iter().enumerate() {
            let failed = run.outcome == Outcome::Failed;
            let mut slot = None;
            if failed {
                self.failed_runs += 1;
                depth = depth.saturating_add(1);
                let (text, cut) = texts.get(k);
                let at = match self.index.get(text) {
                    Some(&i) => i,
                    None => {
                        self.index.insert(text.to_string(), self.sigs.len());
                        self.sigs
                            .push(SignatureStats::new(text.to_string(), Some(signature(run))));
                        self.sigs.len() - 1
                    }
                };
                slot = Some(at);
                self.slots.push(at);
                let first_in_job = !self.seen.contains(&at);
                if first_in_job {
                    self.seen.push(at);
                }
                let next = history.runs.get(k + 1);
                let stats = &mut self.sigs[at];
                stats.jobs += u64::from(first_in_job);
                stats.failed_runs += 1;
                stats.cut |= cut;
                stats.gpu.failed = stats.gpu.failed.saturating_add(request_time(run.run_for, gpu_milli));
                stats.cpu.failed = stats.cpu.failed.saturating_add(request_time(run.run_for, cpu_milli));
                count_recorded(&mut stats.recorded, category_of(run));
                if let Some(node) = &run.node {
                    match stats.nodes.get_mut(node.as_str()) {
                        Some(n) => *n += 1,
                        None => {
                            stats.nodes.insert(node.clone(), 1);
                        }
                    }
                }
                // A collided retry never ran (its lease was returned, its pod's name taken):
                // counted apart, no trial.
                let collided = next.is_some() && collided.get(k).copied().unwrap_or(false);
                stats.collided += u64::from(collided);
                if collided && !self.costed.contains(&at) {
                    self.costed.push(at);
                    stats.collided_cost.add(one_more);
                }
                if let Some(next) = next.filter(|_| !collided) {
                    let success = next.outcome == Outcome::Succeeded;
                    let bucket = (depth.clamp(1, DEPTHS as u32) - 1) as usize;
                    add_tally(&mut stats.trials, success);
                    add_tally(&mut stats.by_depth[bucket], success);
                    if !success {
                        stats.futile_days.add(bucket, ends.get(k).copied().flatten());
                    }
                    let (g, c) = (
                        request_time(next.run_for, gpu_milli),
                        request_time(next.run_for, cpu_milli),
                    );
                    stats.gpu.after = stats.gpu.after.saturating_add(g);
                    stats.cpu.after = stats.cpu.after.saturating_add(c);
                    if next.outcome == Outcome::Failed {
                        stats.gpu.again = stats.gpu.again.saturating_add(g);
                        stats.cpu.again = stats.cpu.again.saturating_add(c);
                    }
                    if futile {
                        stats.gpu.futile = stats.gpu.futile.saturating_add(g);
                        stats.cpu.futile = stats.cpu.futile.saturating_add(c);
                    }
                    match (&run.node, &next.node) {
                        (Some(a), Some(b)) if a == b => add_tally(&mut stats.same_node, success),
                        (Some(_), Some(_)) => add_tally(&mut stats.other_node, success),
                        _ => {}
                    }
                }
            }
            if let Some(node) = &run.node {
                let n = match self.nodes.get_mut(node.as_str()) {
                    Some(n) => n,
                    None => self.nodes.entry(node.clone()).or_default(),
                };
                n.runs += 1;
                if failed && !run.conditions.contains(&Condition::Preempted) {
                    n.failed += 1;
                    if let Some(at) = slot {
                        *n.signatures.entry(at).or_default() += 1;
                    }
                }
            }
        }
    }

    /// What today's policy did with the failed runs of the job [`UnitLearned::add_job`] last
    /// counted: `history` as the baseline's side sees it (classified by its categorizer, when
    /// it has one), and `today(k)` the baseline's decision of run `k`: its action and the rule
    /// that made it (`policy/index`, `policy/default`, or the decision's kind), `None` when the
    /// replay never reached it. Counted per signature
    /// into `current` and `seen`: the proposal keeps what decided them (docs/suggest.md "Today's
    /// policy is the starting point").
    pub fn add_today<'r>(
        &mut self,
        history: &FailureHistory,
        mut today: impl FnMut(usize) -> Option<(Action, &'r str)>,
    ) {
        let mut slots = self.slots.iter();
        for (k, run) in history.runs.iter().enumerate() {
            if run.outcome != Outcome::Failed {
                continue;
            }
            let Some(&at) = slots.next() else { break };
            let decided = today(k);
            let stats = &mut self.sigs[at];
            // A signature meets a few rules at most: looked for among them, so that a run
            // allocates nothing unless its rule is new to the signature.
            let known = stats.current.iter_mut().find(|(c, _)| match (c, decided) {
                (Current::Undecided, None) => true,
                (Current::Decided { rule: r, action: a }, Some((b, rule))) => *a == b && r == rule,
                _ => false,
            });
            match known {
                Some((_, n)) => *n += 1,
                None => {
                    let c = match decided {
                        None => Current::Undecided,
                        Some((action, rule)) => Current::Decided {
                            rule: rule.to_string(),
                            action,
                        },
                    };
                    stats.current.insert(c, 1);
                }
            }
            count_recorded(&mut stats.seen, category_of(run));
        }
    }
}

/// A run's category and subcategory, as `recorded` and `seen` key them (empty is none).
fn category_of(run: &crate::model::failure_history::Run) -> Option<(&str, Option<&str>)> {
    match (run.category.as_deref(), run.subcategory.as_deref()) {
        (Some(c), Some(s)) if !c.is_empty() && !s.is_empty() => Some((c, Some(s))),
        (Some(c), _) if !c.is_empty() => Some((c, None)),
        _ => None,
    }
}

/// The key of `recorded` and `seen` for runs with no category.
pub const NO_CATEGORY: &str = "none";

/// `recorded[C[/S] | none] += 1`, allocating only for a label not met before.
fn count_recorded(map: &mut BTreeMap<String, u64>, recorded: Option<(&str, Option<&str>)>) {
    let mut label = String::new();
    let key: &str = match recorded {
        None => NO_CATEGORY,
        Some((c, None)) => c,
        Some((c, Some(s))) => {
            label.push_str(c);
            label.push('/');
            label.push_str(s);
            &label
        }
    };
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

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
    fn out(&self) -> (Vec<(u8, i64, u64)>, [u64; DEPTHS]) {
        (self.by.iter().map(|((b, d), n)| (*b, *d, *n)).collect(), self.untimed)
    }

    fn back(by: Vec<(u8, i64, u64)>, untimed: [u64; DEPTHS]) -> Result<FutileDays, String> {
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
    fn new(text: String, signature: Option<Signature>) -> SignatureStats {
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
    fn merge(&mut self, o: SignatureStats) {
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

fn add_tally(t: &mut Tally, success: bool) {
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
    /// Failed runs by signature (index into [`Learned::signatures`]; `usize::MAX`: other).
    pub signatures: HashMap<usize, u64, foldhash::fast::RandomState>,
}

/// What a history taught, folded job by job in input order.
#[derive(Debug, Default)]
pub struct Learned {
    pub jobs: u64,
    pub failed_runs: u64,
    /// Retries the baseline's replay says collide (a Retry of a failure whose pod its
    /// categorizer keeps) that the record shows ran (docs/reference/suggest.md "A collided
    /// retry is no trial").
    pub collisions_ran: u64,
    /// In the order first met.
    pub signatures: Vec<SignatureStats>,
    index: Map<usize>,
    /// The runs of signatures past [`MAX_SIGNATURES`].
    pub other: Option<SignatureStats>,
    pub nodes: Map<NodeStats>,
    /// A later shard's learning (not the first in the source's order): the signatures it
    /// meets past its own first [`MAX_SIGNATURES`], held for its partial
    /// ([`Learned::take_past`]) instead of counted under `other`. None of them can be new to
    /// the merge's first 10,000 (the shard's own 10,000 come before it in the source), but
    /// one can be among them, met first by an earlier shard: only the merge knows which, so
    /// only the merge may count the rest under `other`.
    past: Option<Past>,
}

/// A later shard's signatures past its own first [`MAX_SIGNATURES`], held between two
/// [`Learned::take_past`]: each with its failed runs by node (what [`NodeStats::signatures`]
/// counts of a signature the shard lists).
#[derive(Debug, Default)]
struct Past {
    held: Vec<(SignatureStats, Map<u64>)>,
    index: Map<usize>,
}

impl Past {
    /// The place of `text` among the held, held anew if it is not.
    fn slot(&mut self, text: &str) -> usize {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        self.index.insert(text.to_string(), self.held.len());
        self.held
            .push((SignatureStats::new(text.to_string(), None), Map::default()));
        self.held.len() - 1
    }
}

/// Where a unit's signature is counted.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Among [`Learned::signatures`].
    Kept(usize),
    Other,
    /// Among a later shard's held signatures ([`Past`]).
    Past(usize),
}

impl Learned {
    /// A shard's learning. The first in the source's order (shard 0: a sharded suggest reads
    /// files, by byte range) keeps what one process keeps, `other` included: its own first
    /// 10,000 signatures are the merge's first 10,000, so what is past them is past the
    /// merge's. A later shard holds what is past its own first 10,000 for its partial (see
    /// the field `past`), as many at a time as it keeps: it holds about what one process
    /// holds, whatever the signatures.
    pub fn of_a_shard(first: bool) -> Learned {
        Learned {
            past: (!first).then(Past::default),
            ..Learned::default()
        }
    }

    /// What a later shard holds past its first [`MAX_SIGNATURES`] signatures, for its
    /// partial's entries, none held after: all of it with `all` (the shard's end), else only
    /// once [`MAX_SIGNATURES`] are held (called between units: one unit's may take it a
    /// little past). A signature met again after it was taken is held anew; the merge adds
    /// the pieces up ([`Learned::merge_past`]). Nothing for one process or the first shard.
    pub fn take_past(&mut self, all: bool) -> Vec<PastSignature> {
        let Some(past) = &mut self.past else {
            return Vec::new();
        };
        if !all && past.held.len() < MAX_SIGNATURES {
            return Vec::new();
        }
        past.index.clear();
        past.held
            .drain(..)
            .map(|(mut s, on)| {
                // A run counted on a node for the signature is a failed run there.
                let mut nodes: Vec<(String, u64, u64)> = std::mem::take(&mut s.nodes)
                    .into_iter()
                    .map(|(n, k)| {
                        let on = on.get(n.as_str()).copied().unwrap_or(0);
                        (n, k, on)
                    })
                    .collect();
                nodes.sort_unstable();
                PastSignature(SignatureOut::of(s, nodes))
            })
            .collect()
    }

    /// What a shard learned, for its partial: its first [`MAX_SIGNATURES`] signatures in the
    /// order first met, `other` (the first shard's), its nodes by name (sorted: the same
    /// learning, the same bytes). A later shard's signatures past those are its entries,
    /// taken before ([`Learned::take_past`]).
    pub fn into_shard(self) -> ShardLearned {
        debug_assert!(self.past.as_ref().is_none_or(|p| p.held.is_empty()));
        let head = |mut s: SignatureStats| {
            let mut nodes: Vec<(String, u64)> = std::mem::take(&mut s.nodes).into_iter().collect();
            nodes.sort_unstable();
            SignatureOut::of(s, nodes)
        };
        let count = self.signatures.len();
        let mut nodes: Vec<NodeOut> = self
            .nodes
            .into_iter()
            .map(|(name, n)| {
                // `other` is the place after the list.
                let mut sigs: Vec<(usize, u64)> = n
                    .signatures
                    .into_iter()
                    .map(|(k, v)| (if k == usize::MAX { count } else { k }, v))
                    .collect();
                sigs.sort_unstable();
                NodeOut(name, n.runs, n.failed, sigs)
            })
            .collect();
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        ShardLearned {
            jobs: self.jobs,
            failed_runs: self.failed_runs,
            collisions_ran: self.collisions_ran,
            signatures: self.signatures.into_iter().map(head).collect(),
            other: self.other.map(head),
            nodes,
        }
    }

    /// Adds a shard's learning, as one unit of the source (shards in the source's order: the
    /// 10,000 kept are the first met in the whole source). `Err`: what no shard writes (its
    /// partial was edited), nothing added: its nodes name a signature it does not list, a
    /// signature's text is not its structure's, or it counts `other` without being the first
    /// shard with 10,000 signatures.
    pub fn merge_shard(&mut self, shard: ShardLearned) -> Result<(), String> {
        let count = shard.signatures.len();
        // `other`, when it has one, is named by the place after its list.
        let named = count + usize::from(shard.other.is_some());
        if let Some(slot) = shard
            .nodes
            .iter()
            .flat_map(|n| n.3.iter().map(|(slot, _)| *slot))
            .find(|&slot| slot >= named)
        {
            return Err(format!(
                "its totals' nodes name signature {slot}, and it lists {count} signatures"
            ));
        }
        // Runs past a shard's first 10,000 are past the merge's only when nothing came
        // before it: a later shard lists them as entries instead.
        if shard.other.is_some() && (count < MAX_SIGNATURES || !self.signatures.is_empty()) {
            return Err(
                "its totals count runs under `other`, which only the first shard with signatures does, past its first 10,000"
                    .into(),
            );
        }
        // The text is the signature's identity (the merge keys the counts by it, the proposal
        // writes its rule from the structure): a shard writes the text its structure prints.
        for (k, s) in shard.signatures.iter().enumerate() {
            let printed = s.signature.as_ref().map(Signature::text);
            if printed.as_deref() != Some(s.text.as_str()) {
                let structure = match printed {
                    Some(t) => format!("its structure prints {}", quote(&t)),
                    None => "it has no structure".to_string(),
                };
                return Err(format!(
                    "its totals' signature {k}: its text {} is not its structure's ({structure})",
                    quote(&s.text)
                ));
            }
        }
        let with_nodes = |s: SignatureOut| -> Result<SignatureStats, String> {
            let (mut stats, nodes) = s.into_stats()?;
            stats.nodes = nodes.into_iter().collect();
            Ok(stats)
        };
        let other = shard.other.map(with_nodes).transpose()?;
        let sigs = shard
            .signatures
            .into_iter()
            .map(with_nodes)
            .collect::<Result<Vec<_>, String>>()?;
        let nodes = shard
            .nodes
            .into_iter()
            .map(|NodeOut(name, runs, failed, sigs)| {
                let signatures = sigs
                    .into_iter()
                    .map(|(slot, k)| (if slot == count { usize::MAX } else { slot }, k))
                    .collect();
                let stats = NodeStats {
                    runs,
                    failed,
                    signatures,
                };
                (name, stats)
            })
            .collect();
        if let Some(o) = other {
            self.stats_at(Slot::Other).merge(o);
        }
        self.merge_unit(UnitLearned {
            jobs: shard.jobs,
            failed_runs: shard.failed_runs,
            collisions_ran: shard.collisions_ran,
            sigs,
            nodes,
            ..UnitLearned::default()
        });
        Ok(())
    }

    /// Adds a later shard's counts of a signature past its own first 10,000 (an entry of its
    /// partial, [`Learned::take_past`]), once every shard's totals are added: to the
    /// signature kept, when an earlier shard met it among the first 10,000 of the source,
    /// else to `other`, where one process counts it. The merge's first 10,000 were complete
    /// before that shard's own 10,000 ended, so this one cannot be new among them. `Err`:
    /// what no shard writes, nothing added.
    pub fn merge_past(&mut self, past: PastSignature) -> Result<(), String> {
        let text = quote(&past.0.text);
        if self.signatures.len() < MAX_SIGNATURES {
            return Err(format!(
                "it counts signature {text} past its shard's first 10,000, and the shards list {} signatures in all",
                self.signatures.len()
            ));
        }
        if past.0.signature.is_some() {
            return Err(format!(
                "signature {text}, past its shard's first 10,000, has a structure (only those a shard lists in its totals do)"
            ));
        }
        let (mut stats, nodes) = past.0.into_stats()?;
        if let Some((node, ..)) = nodes.iter().find(|(_, all, on)| on > all) {
            return Err(format!(
                "signature {text} counts more failed runs on node {} that were not preempted than failed runs there",
                quote(node)
            ));
        }
        let slot = self.slot_of(&stats.text);
        for (node, all, on) in nodes {
            if on > 0 {
                let n = self.nodes.entry(node.clone()).or_default();
                *n.signatures.entry(slot).or_default() += on;
            }
            stats.nodes.insert(node, all);
        }
        let slot = if slot == usize::MAX {
            Slot::Other
        } else {
            Slot::Kept(slot)
        };
        self.stats_at(slot).merge(stats);
        Ok(())
    }

    /// The counts a slot names (`other` made when first needed).
    fn stats_at(&mut self, slot: Slot) -> &mut SignatureStats {
        match (slot, &mut self.past) {
            (Slot::Kept(i), _) => &mut self.signatures[i],
            (Slot::Past(i), Some(past)) => &mut past.held[i].0,
            _ => self
                .other
                .get_or_insert_with(|| SignatureStats::new(OTHER.to_string(), None)),
        }
    }

    /// Adds a unit's counts (units in the source's order: the 10,000 kept are the first
    /// met). A signature past the cap counts under `other` (a later shard holds it: see the
    /// field `past`); a job with two such signatures counts in `other`'s `jobs` once per
    /// signature.
    pub fn merge_unit(&mut self, unit: UnitLearned) {
        self.jobs += unit.jobs;
        self.failed_runs += unit.failed_runs;
        self.collisions_ran += unit.collisions_ran;
        let mut global = Vec::with_capacity(unit.sigs.len());
        for stats in unit.sigs {
            let slot = match self.index.get(stats.text.as_str()) {
                Some(&i) => Slot::Kept(i),
                None if self.signatures.len() < MAX_SIGNATURES => {
                    self.index.insert(stats.text.clone(), self.signatures.len());
                    self.signatures
                        .push(SignatureStats::new(stats.text.clone(), stats.signature.clone()));
                    Slot::Kept(self.signatures.len() - 1)
                }
                None => match &mut self.past {
                    Some(past) => Slot::Past(past.slot(&stats.text)),
                    None => Slot::Other,
                },
            };
            global.push(slot);
            self.stats_at(slot).merge(stats);
        }
        let Learned { nodes, past, .. } = self;
        for (name, n) in unit.nodes {
            // A unit's slot `usize::MAX` (a shard's `other`, [`Learned::merge_shard`]) is
            // `other` here too.
            let slot = |local: usize| global.get(local).copied().unwrap_or(Slot::Other);
            if let Some(past) = past.as_mut() {
                for (&local, &k) in &n.signatures {
                    if let Slot::Past(i) = slot(local) {
                        *past.held[i].1.entry(name.clone()).or_default() += k;
                    }
                }
            }
            let node = nodes.entry(name).or_default();
            node.runs += n.runs;
            node.failed += n.failed;
            for (local, k) in n.signatures {
                let at = match slot(local) {
                    Slot::Kept(i) => i,
                    Slot::Other => usize::MAX,
                    Slot::Past(_) => continue,
                };
                *node.signatures.entry(at).or_default() += k;
            }
        }
    }

    /// The slot of a signature's text: its index in [`Learned::signatures`], `usize::MAX`
    /// for `other`.
    pub fn slot_of(&self, text: &str) -> usize {
        self.index.get(text).copied().unwrap_or(usize::MAX)
    }

    /// Every signature's counts, `other` last, sorted as the docs say: hours (GPU, then
    /// CPU, each run once) descending, then failed runs descending, then signature.
    pub fn sorted(&self) -> Vec<&SignatureStats> {
        let mut v: Vec<&SignatureStats> = self.signatures.iter().chain(self.other.as_ref()).collect();
        v.sort_by(|a, b| {
            (b.gpu.once().cmp(&a.gpu.once()))
                .then(b.cpu.once().cmp(&a.cpu.once()))
                .then(b.failed_runs.cmp(&a.failed_runs))
                .then(a.text.as_bytes().cmp(b.text.as_bytes()))
        });
        v
    }

    /// The signature text of a slot of [`NodeStats::signatures`].
    pub fn text_of(&self, slot: usize) -> &str {
        self.signatures.get(slot).map_or(OTHER, |s| s.text.as_str())
    }
}

/// A shard's learning as its partial's totals hold it ([`Learned::into_shard`]): its first
/// 10,000 signatures, in the order first met, the first shard's `other`, and its nodes, whose
/// failed runs name signatures by their place in that list (`other` by the place after it).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardLearned {
    pub jobs: u64,
    pub failed_runs: u64,
    #[serde(default)]
    pub collisions_ran: u64,
    signatures: Vec<SignatureOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    other: Option<SignatureOut>,
    nodes: Vec<NodeOut>,
}

/// A later shard's counts of one signature past its first 10,000, as an entry of its
/// partial holds them ([`Learned::take_past`], [`Learned::merge_past`]): no structure (the
/// merge keeps the one an earlier shard listed, or counts it under `other`), and each node
/// as `[name, failed runs, of them not preempted]` (what the shard's nodes would have named
/// it by).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct PastSignature(SignatureOut<(String, u64, u64)>);

/// A signature's counts in a partial, its nodes as `N`. Maps keyed by the history's words
/// (categories, nodes) are lists of pairs: a partial's numbers are checked by their field's
/// name, and a category named `trials` must not read as one.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SignatureOut<N = (String, u64)> {
    text: String,
    /// `None` for [`OTHER`] and a [`PastSignature`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<Signature>,
    failed_runs: u64,
    jobs: u64,
    trials: Tally,
    by_depth: [Tally; DEPTHS],
    recorded: Vec<(String, u64)>,
    /// [`SignatureStats::current`] as `[rule, action, runs]`, sorted (`["", "", n]`: the
    /// runs the baseline never decided).
    current: Vec<(String, String, u64)>,
    seen: Vec<(String, u64)>,
    /// [`Hours`] as `[failed, after, futile, again]`: 128-bit sums, under the names the partial's
    /// checks know as 128-bit.
    #[serde(rename = "gpu_milli")]
    gpu: [u128; 4],
    #[serde(rename = "cpu_milli")]
    cpu: [u128; 4],
    nodes: Vec<N>,
    same_node: Tally,
    other_node: Tally,
    cut: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    collided: u64,
    /// [`SignatureStats::collided_cost`] (its `gpu` and `cpu` 128-bit sums).
    #[serde(default, skip_serializing_if = "CollidedCost::is_zero")]
    collided_cost: CollidedCost,
    /// [`FutileDays`]: `[bucket, day, trials]`, and the untimed by bucket.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    futile_days: Vec<(u8, i64, u64)>,
    #[serde(default)]
    futile_untimed: [u64; DEPTHS],
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl<N> SignatureOut<N> {
    /// `s`'s counts, its nodes as `nodes`.
    fn of(s: SignatureStats, nodes: Vec<N>) -> SignatureOut<N> {
        SignatureOut {
            current: current_out(&s.current),
            text: s.text,
            signature: s.signature,
            failed_runs: s.failed_runs,
            jobs: s.jobs,
            trials: s.trials,
            by_depth: s.by_depth,
            recorded: s.recorded.into_iter().collect(),
            seen: s.seen.into_iter().collect(),
            gpu: [s.gpu.failed, s.gpu.after, s.gpu.futile, s.gpu.again],
            cpu: [s.cpu.failed, s.cpu.after, s.cpu.futile, s.cpu.again],
            nodes,
            same_node: s.same_node,
            other_node: s.other_node,
            cut: s.cut,
            collided: s.collided,
            collided_cost: s.collided_cost,
            futile_days: s.futile_days.out().0,
            futile_untimed: s.futile_days.out().1,
        }
    }

    /// The counts back, without nodes, and the nodes as written. `Err`: a baseline decision
    /// no shard writes.
    fn into_stats(self) -> Result<(SignatureStats, Vec<N>), String> {
        let stats = SignatureStats {
            current: current_in(self.current)?,
            text: self.text,
            signature: self.signature,
            failed_runs: self.failed_runs,
            jobs: self.jobs,
            trials: self.trials,
            by_depth: self.by_depth,
            recorded: self.recorded.into_iter().collect(),
            seen: self.seen.into_iter().collect(),
            gpu: Hours {
                failed: self.gpu[0],
                after: self.gpu[1],
                futile: self.gpu[2],
                again: self.gpu[3],
            },
            cpu: Hours {
                failed: self.cpu[0],
                after: self.cpu[1],
                futile: self.cpu[2],
                again: self.cpu[3],
            },
            nodes: Map::default(),
            same_node: self.same_node,
            other_node: self.other_node,
            cut: self.cut,
            collided: self.collided,
            collided_cost: self.collided_cost,
            in_incidents: 0,
            futile_days: FutileDays::back(self.futile_days, self.futile_untimed)?,
        };
        Ok((stats, self.nodes))
    }
}

fn current_out(current: &HashMap<Current, u64>) -> Vec<(String, String, u64)> {
    let mut v: Vec<(String, String, u64)> = current
        .iter()
        .map(|(c, n)| match c {
            Current::Decided { rule, action } => (rule.clone(), action.as_str().to_string(), *n),
            Current::Undecided => (String::new(), String::new(), *n),
        })
        .collect();
    v.sort();
    v
}

fn current_in(v: Vec<(String, String, u64)>) -> Result<HashMap<Current, u64>, String> {
    v.into_iter()
        .map(|(rule, action, n)| {
            if rule.is_empty() && action.is_empty() {
                return Ok((Current::Undecided, n));
            }
            let action = Action::parse(&action).ok_or_else(|| {
                format!("a signature's baseline decision has action `{action}`, expected `Retry` or `Fail`")
            })?;
            Ok((Current::Decided { rule, action }, n))
        })
        .collect()
}

/// A node in a partial: `[name, runs, failed, [[signature, failed runs], …]]`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct NodeOut(String, u64, u64, Vec<(usize, u64)>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::duration::GoDuration;
    use crate::model::failure_history::{Container, Resources, Run};

    fn failed(node: &str, exit: i64) -> Run {
        Run {
            node: Some(node.into()),
            outcome: Outcome::Failed,
            run_for: GoDuration(3_600_000_000_000),
            containers: vec![Container {
                name: "main".into(),
                exit_code: exit,
                ..Container::default()
            }],
            ..Run::default()
        }
    }

    fn succeeded(node: &str) -> Run {
        Run {
            node: Some(node.into()),
            outcome: Outcome::Succeeded,
            run_for: GoDuration(1_800_000_000_000),
            ..Run::default()
        }
    }

    #[test]
    fn a_job_counts_its_trials_hours_and_nodes() {
        let mut h = FailureHistory::default();
        h.job.resources = Some(Resources {
            gpu_milli: Some(2000),
            ..Resources::default()
        });
        h.runs = vec![failed("a", 1), failed("a", 1), failed("b", 2), succeeded("c")];
        let mut unit = UnitLearned::default();
        unit.add_job(&h, &[], &[], FailedTexts::default().of(&h.runs));
        let mut l = Learned::default();
        l.merge_unit(unit);
        assert_eq!((l.jobs, l.failed_runs), (1, 3));
        let s = &l.signatures[0];
        assert_eq!(s.text, "exit:1@main");
        assert_eq!((s.failed_runs, s.jobs), (2, 1));
        assert_eq!((s.trials.trials, s.trials.successes), (2, 0));
        assert_eq!((s.by_depth[0].trials, s.by_depth[1].trials), (1, 1));
        assert_eq!((s.same_node.trials, s.other_node.trials), (1, 1));
        // 2 GPUs × 1 h for each failed run; its next runs 2 × 1 h each.
        let gpu_hour = 3_600_000_000_000u128 * 1000;
        assert_eq!(s.gpu.failed, 4 * gpu_hour);
        assert_eq!(s.gpu.after, 4 * gpu_hour);
        assert_eq!(s.gpu.futile, 0);
        let e2 = &l.signatures[1];
        assert_eq!((e2.trials.trials, e2.trials.successes), (1, 1));
        assert_eq!(e2.by_depth[2].trials, 1);
        assert_eq!(e2.gpu.after, gpu_hour);
        // Each run once: exit 1's next runs both failed again (the second is exit 2's own
        // failed run), so its hours are its failed runs'; the sum is the job's 7 GPU-hours.
        assert_eq!((s.gpu.again, s.gpu.once()), (4 * gpu_hour, 4 * gpu_hour));
        assert_eq!((e2.gpu.again, e2.gpu.once()), (0, 3 * gpu_hour));
        assert_eq!(s.gpu.once() + e2.gpu.once(), 7 * gpu_hour);
        assert_eq!(l.nodes["a"].runs, 2);
        assert_eq!(l.nodes["a"].failed, 2);
        assert_eq!(l.nodes["c"].failed, 0);
    }

    #[test]
    fn signatures_past_the_cap_count_as_other() {
        let mut l = Learned::default();
        for code in 0..(MAX_SIGNATURES as i64 + 5) {
            let h = FailureHistory {
                runs: vec![failed("n", code + 1)],
                ..FailureHistory::default()
            };
            let mut unit = UnitLearned::default();
            unit.add_job(&h, &[], &[], FailedTexts::default().of(&h.runs));
            l.merge_unit(unit);
        }
        assert_eq!(l.signatures.len(), MAX_SIGNATURES);
        let other = l.other.as_ref().unwrap();
        assert_eq!((other.failed_runs, other.jobs), (5, 5));
        assert_eq!(l.nodes["n"].signatures[&usize::MAX], 5);
    }

    /// Everything a learning says, comparable (as text: its hours pass 64 bits): its counts,
    /// each signature kept in order with all of its counts (nodes sorted), `other`'s, and each
    /// node's runs and failed runs by signature text.
    fn said(l: &Learned) -> String {
        let out = |s: &SignatureStats| {
            let mut nodes: Vec<(String, u64)> = s.nodes.iter().map(|(n, k)| (n.clone(), *k)).collect();
            nodes.sort();
            SignatureOut::of(s.clone(), nodes)
        };
        let mut nodes: Vec<_> = l
            .nodes
            .iter()
            .map(|(name, n)| {
                let mut by: Vec<(String, u64)> = n
                    .signatures
                    .iter()
                    .map(|(slot, k)| (l.text_of(*slot).to_string(), *k))
                    .collect();
                by.sort();
                (name.clone(), n.runs, n.failed, by)
            })
            .collect();
        nodes.sort();
        let sigs: Vec<_> = l.signatures.iter().map(out).collect();
        serde_json::to_string(&(l.jobs, l.failed_runs, sigs, l.other.as_ref().map(out), nodes)).unwrap()
    }

    /// One process's learning of `jobs`, `unit` jobs a unit.
    fn one(jobs: &[FailureHistory], unit: usize) -> Learned {
        let mut l = Learned::default();
        for chunk in jobs.chunks(unit) {
            let mut u = UnitLearned::default();
            chunk
                .iter()
                .for_each(|h| u.add_job(h, &[], &[], FailedTexts::default().of(&h.runs)));
            l.merge_unit(u);
        }
        l
    }

    /// A shard of `jobs` (`first` in the source or not), `unit` jobs a unit, as its partial
    /// holds it and `merge` reads it back (through JSON): its totals, and the entries it
    /// wrote as it went. Checks that it never held more than one process keeps, and one
    /// unit's.
    fn shard(jobs: &[FailureHistory], first: bool, unit: usize) -> (ShardLearned, Vec<PastSignature>) {
        let mut l = Learned::of_a_shard(first);
        let mut past = Vec::new();
        for chunk in jobs.chunks(unit) {
            let mut u = UnitLearned::default();
            chunk
                .iter()
                .for_each(|h| u.add_job(h, &[], &[], FailedTexts::default().of(&h.runs)));
            let met = u.sigs.len();
            l.merge_unit(u);
            let held = l.past.as_ref().map_or(0, |p| p.held.len());
            assert!(held < MAX_SIGNATURES + met, "{held} held");
            assert!(l.signatures.len() <= MAX_SIGNATURES);
            past.extend(l.take_past(false));
        }
        past.extend(l.take_past(true));
        let json = serde_json::to_string(&l.into_shard()).unwrap();
        let past = past
            .iter()
            .map(|p| serde_json::from_str(&serde_json::to_string(p).unwrap()).unwrap())
            .collect();
        (serde_json::from_str(&json).unwrap(), past)
    }

    /// The merge of shards in the source's order: every shard's totals, then their entries.
    fn merged(shards: Vec<(ShardLearned, Vec<PastSignature>)>) -> Learned {
        let mut l = Learned::default();
        let mut entries = Vec::new();
        for (totals, past) in shards {
            l.merge_shard(totals).unwrap();
            entries.extend(past);
        }
        for p in entries {
            l.merge_past(p).unwrap();
        }
        l
    }

    /// `jobs` split at `at` (ascending), each part a shard (the first one first).
    fn split(jobs: &[FailureHistory], at: &[usize], unit: usize) -> Learned {
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(at.iter().copied())
            .chain([jobs.len()])
            .collect();
        let shards = bounds
            .windows(2)
            .enumerate()
            .map(|(i, w)| shard(&jobs[w[0]..w[1]], i == 0, unit))
            .collect();
        merged(shards)
    }

    /// `n` jobs, each failing once with its own exit code (past 10,000 signatures in all).
    /// The first 100 also fail with one of 40 shared codes, and so do some of the last
    /// quarter's (one in 350, preempted one time in five): after any later shard's own first
    /// 10,000, so that it holds runs of signatures an earlier shard kept. Code 47 first fails
    /// in the last quarter, one job in 500 (past the cap in every shard). Nodes `n0`–`n6`;
    /// three jobs in four then succeed.
    fn history(n: usize) -> Vec<FailureHistory> {
        (0..n)
            .map(|k| {
                let node = format!("n{}", k % 7);
                let late = k >= n * 3 / 4;
                let mut runs = Vec::new();
                let shared = match k {
                    k if k < 100 => Some(k),
                    k if late && k % 350 == 0 => Some(k / 350),
                    _ => None,
                };
                if let Some(i) = shared {
                    let mut run = failed(&node, 1 + (i % 40) as i64);
                    if i % 5 == 0 {
                        run.conditions.push(Condition::Preempted);
                    }
                    runs.push(run);
                }
                if late && k % 500 == 0 {
                    runs.push(failed(&node, 47));
                }
                runs.push(failed(&format!("n{}", (k + 1) % 7), 100_000 + k as i64));
                if k % 4 != 0 {
                    runs.push(succeeded(&node));
                }
                FailureHistory {
                    runs,
                    ..FailureHistory::default()
                }
            })
            .collect()
    }

    #[test]
    fn shards_merge_to_one_process_past_the_cap_holding_no_more_than_it() {
        let jobs = history(50_000);
        let whole = one(&jobs, 100);
        assert_eq!(whole.signatures.len(), MAX_SIGNATURES);
        let other = whole.other.as_ref().unwrap();
        assert!(other.failed_runs > 40_000, "{}", other.failed_runs);
        // A shared code the first jobs kept, met again in the last quarter; code 47 is `other`.
        assert!(whole.slot_of("exit:2@main") < MAX_SIGNATURES);
        assert_eq!(whole.slot_of("exit:47@main"), usize::MAX);
        let expected = said(&whole);
        // Two and three shards, a first shard short of 10,000 signatures, a short middle one.
        for at in [
            &[25_000][..],
            &[5_000],
            &[45_000],
            &[12_000, 30_000],
            &[20_000, 21_000],
            &[3_000, 6_000],
        ] {
            for unit in [1, 64] {
                assert_eq!(
                    said(&split(&jobs, at, unit)),
                    expected,
                    "split at {at:?}, {unit} a unit"
                );
            }
        }
    }

    #[test]
    fn a_later_shard_hands_over_what_is_past_its_first_10000_in_pieces() {
        let jobs = history(50_000);
        // The second half: 25,000 signatures of its own, 10,000 kept, the rest held 10,000 at
        // most at a time; a signature met in two pieces is in both.
        let (totals, past) = shard(&jobs[25_000..], false, 64);
        assert_eq!(totals.signatures.len(), MAX_SIGNATURES);
        assert!(totals.other.is_none());
        let texts: Vec<&str> = past.iter().map(|p| p.0.text.as_str()).collect();
        assert!(texts.len() > 15_000, "{}", texts.len());
        assert!(texts.iter().filter(|t| **t == "exit:47@main").count() > 1);
        assert!(texts.contains(&"exit:2@main"));
        // The first shard: `other`, as one process, and no entry.
        let (totals, past) = shard(&jobs[..25_000], true, 64);
        assert!(past.is_empty());
        assert!(totals.other.is_some_and(|o| o.failed_runs > 0 && o.signature.is_none()));
    }

    #[test]
    fn the_merge_refuses_what_only_an_edited_partial_holds() {
        let past = |text: &str| -> PastSignature {
            let s = SignatureStats::new(text.to_string(), None);
            serde_json::from_str(&serde_json::to_string(&PastSignature(SignatureOut::of(s, Vec::new()))).unwrap())
                .unwrap()
        };
        // A signature past a shard's first 10,000, where the shards list fewer.
        let mut l = one(&history(20), 4);
        assert_eq!(
            l.merge_past(past("exit:3@main")).unwrap_err(),
            "it counts signature `exit:3@main` past its shard's first 10,000, and the shards list 37 signatures in all"
        );
        // `other` from a shard that is not the first with signatures.
        let other: SignatureOut = SignatureOut::of(SignatureStats::new(OTHER.to_string(), None), Vec::new());
        let json = format!(
            r#"{{"jobs":1,"failedRuns":1,"signatures":[],"other":{},"nodes":[]}}"#,
            serde_json::to_string(&other).unwrap()
        );
        assert_eq!(
            l.merge_shard(serde_json::from_str(&json).unwrap()).unwrap_err(),
            "its totals count runs under `other`, which only the first shard with signatures does, past its first 10,000"
        );
        assert_eq!(l.jobs, 20);
    }

    #[test]
    fn a_shard_whose_nodes_name_a_signature_it_lacks_is_refused() {
        let json = r#"{"jobs":1,"failedRuns":1,"signatures":[],"nodes":[["n",1,1,[[3,1]]]]}"#;
        let mut l = Learned::default();
        assert_eq!(
            l.merge_shard(serde_json::from_str(json).unwrap()).unwrap_err(),
            "its totals' nodes name signature 3, and it lists 0 signatures"
        );
        assert_eq!(l.jobs, 0);
    }
}
