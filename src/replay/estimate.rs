//! Estimates past the end of the record (docs/estimates.md): how likely a job that one side would
//! retry past the end of its recorded history is to succeed over the runs that side has left,
//! and what those runs would cost, from the history itself.
//!
//! Owns, as pure functions of counts:
//! - a run's failure class ([`class_of`]: `category[/subcategory]`, else `exit:N` of the
//!   first container with a non-zero exit code, else `condition:C` of the first condition,
//!   else `unknown`) and a job's ([`job_class`]: its last recorded failed run's);
//! - the trials ([`Trials`]): every failed run followed by another run of the same job is one
//!   trial of the failed run's class at its depth (how many failed runs of the job, any class,
//!   precede that next run, the one just failed included; 5 and more are one bucket, `5+`), a
//!   success when the next run succeeded (a returned lease is a next run that did not). Kept
//!   apart for `--backtest-at` (docs/estimates.md): the trials of jobs submitted before the time *fit*, the
//!   others *test*; estimates use both;
//! - the rate at (class, depth) with its back-off ([`Rates::rate`]): (c, d) → (c, any depth) →
//!   (all classes, d) → (all, any), each level used from [`MIN_TRIALS`] trials on, the last
//!   from one; Wilson 95% bounds; `basis` names the level (`oom@2`, `oom@5+`, `oom`, `all@2`,
//!   `all`);
//! - a Pending side's [`Estimate`] over its runs left `r` ([`Rates::estimate`]): `pNextRun` =
//!   p(c, d), `pSucceeded` = 1 − Π_{j<r}(1 − p(c, d+j)), `low`/`high` the same over the Wilson
//!   bounds, `expectedCompute` = Σ_{j<r} Π_{i<j}(1 − p_i) × m_c with m_c the mean `runFor`
//!   of the runs that followed a failure of the class (the class's own from 5 trials, else
//!   every class's);
//! - the sums over many Pending jobs ([`PendingSet`], [`Sums`]).
//!
//! Exact whatever the order: every count is an integer sum, and every float is computed
//! from the final counts in key order (never summed job by job), so the workers of one
//! process, the shards of docs/past-one-machine.md and their merge give the same bits. For the same reason
//! the caps on classes keep the *smallest* keys (categories and subcategories by name, exit
//! codes by value), not the first seen: what a cap keeps does not depend on how the input
//! was cut.
//!
//! Decisions docs/estimates.md leaves open:
//! - a job with no failed run recorded (a returned lease requeued it, say) has no class and
//!   depth 0: its rate is every class's, at any depth (`all`);
//! - an empty `category` counts as none; a `subcategory` without a category is ignored;
//! - at most [`MAX_CLASSES`] categories and exit codes, and [`MAX_SUBCATEGORIES`]
//!   subcategories of a category, are kept (a history is input; a category per run would
//!   otherwise grow without bound); the trials of the classes past that count in every
//!   class's rates (`all`), and a job of such a class backs off to them;
//! - `pSucceeded`, `low` and `high` are summed as Σ_j p_j Π_{i<j}(1 − p_i), equal to
//!   1 − Π(1 − p_j) but exact for one run left (`pSucceeded = pNextRun` to the bit); `low` and
//!   `high` are then clamped to `pSucceeded` against rounding.
//!
//! Pure: no I/O; tested on histories whose answer is known by hand.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;

use crate::model::failure_history::{FailureHistory, Outcome, Resources, Run};
use crate::model::policy::Condition;

/// Below this many trials a level is not used: the next one is.
pub const MIN_TRIALS: u64 = 5;

/// Depth buckets: 1, 2, 3, 4 and 5+.
pub const DEPTHS: usize = 5;

/// Runs a Pending side is followed for at most (docs/estimates.md).
pub const MAX_RUNS_LEFT: u32 = 100;

/// Distinct categories, and exit codes, kept.
pub const MAX_CLASSES: usize = 1000;

/// Distinct subcategories kept per category (so at most 100,000 category classes).
pub const MAX_SUBCATEGORIES: usize = 100;

/// z of a two-sided 95% interval.
pub const Z95: f64 = 1.959964;

/// The method, in words, for the formats that name it once.
pub const METHOD: &str = "per failure class (the last recorded failed run's category[/subcategory], else exit:N, else condition:C, else unknown) and depth (failed runs so far, 5+ together), the observed share of failed runs whose next run of the same job succeeded, over the whole replayed history, carried over every run the policy has left (copies of the last failed run until the engine fails it, at most 100); a level with fewer than 5 trials backs off: class at any depth, then all classes at the depth, then all; interval: Wilson score, 95%; runs assumed independent given class and depth";

/// The failure class of a failed run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum FailureClass {
    Category {
        category: String,
        subcategory: Option<String>,
    },
    Exit(i64),
    Condition(Condition),
    Unknown,
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureClass::Category {
                category,
                subcategory: Some(sub),
            } => write!(f, "{category}/{sub}"),
            FailureClass::Category { category, .. } => f.write_str(category),
            FailureClass::Exit(code) => write!(f, "exit:{code}"),
            FailureClass::Condition(c) => write!(f, "condition:{}", c.as_str()),
            FailureClass::Unknown => f.write_str("unknown"),
        }
    }
}

/// A run's class, borrowed from the run (counting a trial copies nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClassRef<'a> {
    /// The subcategory is `""` when there is none.
    Category(&'a str, &'a str),
    Exit(i64),
    Condition(Condition),
    Unknown,
}

impl ClassRef<'_> {
    fn to_owned(self) -> FailureClass {
        match self {
            ClassRef::Category(c, s) => FailureClass::Category {
                category: c.to_string(),
                subcategory: (!s.is_empty()).then(|| s.to_string()),
            },
            ClassRef::Exit(code) => FailureClass::Exit(code),
            ClassRef::Condition(c) => FailureClass::Condition(c),
            ClassRef::Unknown => FailureClass::Unknown,
        }
    }

    fn of(class: &FailureClass) -> ClassRef<'_> {
        match class {
            FailureClass::Category { category, subcategory } => {
                ClassRef::Category(category, subcategory.as_deref().unwrap_or(""))
            }
            FailureClass::Exit(code) => ClassRef::Exit(*code),
            FailureClass::Condition(c) => ClassRef::Condition(*c),
            FailureClass::Unknown => ClassRef::Unknown,
        }
    }
}

fn class_ref(run: &Run) -> ClassRef<'_> {
    if let Some(category) = run.category.as_deref().filter(|c| !c.is_empty()) {
        return ClassRef::Category(category, run.subcategory.as_deref().unwrap_or(""));
    }
    if let Some(c) = run.containers.iter().find(|c| c.exit_code != 0) {
        return ClassRef::Exit(c.exit_code);
    }
    match run.conditions.first() {
        Some(c) => ClassRef::Condition(*c),
        None => ClassRef::Unknown,
    }
}

/// The failure class of `run` (whatever its outcome: callers ask only of failed runs).
pub fn class_of(run: &Run) -> FailureClass {
    class_ref(run).to_owned()
}

/// The class of a job: its last recorded failed run's; `None` when no run failed.
pub fn job_class(history: &FailureHistory) -> Option<FailureClass> {
    history
        .runs
        .iter()
        .rev()
        .find(|r| r.outcome == Outcome::Failed)
        .map(class_of)
}

/// The depth of a job's pending run: its recorded failed runs (docs/estimates.md).
pub fn failed_runs(history: &FailureHistory) -> u32 {
    let n = history.runs.iter().filter(|r| r.outcome == Outcome::Failed).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The bucket of a depth of 1 or more: 1..=4 alone, 5 and more together.
fn bucket(depth: u32) -> usize {
    (depth.clamp(1, DEPTHS as u32) - 1) as usize
}

/// Trials and successes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    pub trials: u64,
    pub successes: u64,
}

impl Tally {
    fn add(&mut self, success: bool) {
        self.trials += 1;
        self.successes += u64::from(success);
    }

    fn merge(&mut self, other: Tally) {
        self.trials += other.trials;
        self.successes += other.successes;
    }

    /// The share of successes (trials > 0).
    pub fn share(&self) -> f64 {
        self.successes as f64 / self.trials as f64
    }
}

/// Which trials a rate is fitted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Every trial: the estimates.
    All,
    /// The trials of jobs submitted before `--backtest-at` only: the backtest's predictions.
    Train,
}

/// One class's trials, by depth bucket, fit and test apart, and the run time of the runs
/// that followed its failures.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassTrials {
    pub train: [Tally; DEPTHS],
    pub test: [Tally; DEPTHS],
    /// Σ `runFor` of the next run of every trial (train and test), in nanoseconds.
    pub next_run_ns: u128,
}

impl ClassTrials {
    fn add(&mut self, depth: u32, success: bool, test: bool, next_run_ns: u64) {
        let side = if test { &mut self.test } else { &mut self.train };
        side[bucket(depth)].add(success);
        self.next_run_ns += u128::from(next_run_ns);
    }

    fn merge(&mut self, other: &ClassTrials) {
        for d in 0..DEPTHS {
            self.train[d].merge(other.train[d]);
            self.test[d].merge(other.test[d]);
        }
        self.next_run_ns += other.next_run_ns;
    }

    /// Takes out `other`'s trials, counted here before (saturating: a partial edited by hand
    /// cannot take a count below zero).
    fn take_out(&mut self, other: &ClassTrials) {
        for d in 0..DEPTHS {
            for (mine, theirs) in [(&mut self.train[d], other.train[d]), (&mut self.test[d], other.test[d])] {
                mine.trials = mine.trials.saturating_sub(theirs.trials);
                mine.successes = mine.successes.saturating_sub(theirs.successes).min(mine.trials);
            }
        }
        self.next_run_ns = self.next_run_ns.saturating_sub(other.next_run_ns);
    }

    /// The tally at depth bucket `d` (0-based).
    pub fn at(&self, fit: Fit, d: usize) -> Tally {
        let mut t = self.train[d];
        if fit == Fit::All {
            t.merge(self.test[d]);
        }
        t
    }

    /// The tally at any depth.
    pub fn total(&self, fit: Fit) -> Tally {
        let mut t = Tally::default();
        for d in 0..DEPTHS {
            t.merge(self.at(fit, d));
        }
        t
    }

    /// The test trials at any depth.
    pub fn tested(&self) -> Tally {
        let mut t = Tally::default();
        for d in 0..DEPTHS {
            t.merge(self.test[d]);
        }
        t
    }
}

/// A map that keeps the `CAP` smallest keys it is given, by their order (not by when they
/// came), and hands back the value of a key it drops: what it keeps, and what it drops in
/// all, are the same whatever order the keys come in.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(bound(
    serialize = "K: serde::Serialize, V: serde::Serialize",
    deserialize = "K: serde::Deserialize<'de>, V: serde::Deserialize<'de>"
))]
pub struct Smallest<K: Ord, V, const CAP: usize> {
    /// By key, each key once. A sorted list, not a `BTreeMap`: a key met again (most are) is
    /// then one binary search, where the map took a lookup to learn it was there and a
    /// second to hand out its value (a borrow the first could not return).
    ///
    /// Named as when it was the map: a partial's totals hold it by that name.
    #[serde(rename = "map", with = "sorted_pairs")]
    items: Vec<(K, V)>,
}

impl<K: Ord, V, const CAP: usize> Default for Smallest<K, V, CAP> {
    fn default() -> Self {
        Smallest { items: Vec::new() }
    }
}

impl<K: Ord, V: Default, const CAP: usize> Smallest<K, V, CAP> {
    /// The value of `key`, made when new, or `None` when `key` is past the cap; `dropped`
    /// gets the value of the key a new one pushed out.
    pub fn get_or_make<Q>(&mut self, key: &Q, dropped: impl FnOnce(V)) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Ord + ToOwned<Owned = K> + ?Sized,
    {
        let at = match self.items.binary_search_by(|(k, _)| k.borrow().cmp(key)) {
            Ok(at) => at,
            Err(at) => {
                if self.items.len() >= CAP {
                    // Past every kept key: not kept. Otherwise the largest key makes room.
                    if at == self.items.len() {
                        return None;
                    }
                    if let Some((_, v)) = self.items.pop() {
                        dropped(v);
                    }
                }
                self.items.insert(at, (key.to_owned(), V::default()));
                at
            }
        };
        Some(&mut self.items[at].1)
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let at = self.items.binary_search_by(|(k, _)| k.borrow().cmp(key)).ok()?;
        Some(&self.items[at].1)
    }

    /// Every kept key and its value, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.items.iter().map(|(k, v)| (k, v))
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Every kept value, in key order.
    pub fn into_values(self) -> impl Iterator<Item = V> {
        self.items.into_iter().map(|(_, v)| v)
    }
}

/// Subcategories of one category: `""` is the category without one.
type Subcategories = Smallest<String, ClassTrials, MAX_SUBCATEGORIES>;

/// Every trial of a history, by class and depth: counted one history at a time (in a worker,
/// a shard) and merged; the result is the same however the histories were split.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Trials {
    categories: Smallest<String, Subcategories, MAX_CLASSES>,
    exits: Smallest<i64, ClassTrials, MAX_CLASSES>,
    conditions: [ClassTrials; Condition::ALL.len()],
    unknown: ClassTrials,
    /// The classes past the caps, together.
    rest: ClassTrials,
    /// Every trial, of every class.
    all: ClassTrials,
}

/// Adds `t` to `rest` (a dropped subcategory's trials).
fn into_rest(rest: &mut ClassTrials) -> impl FnOnce(ClassTrials) + '_ {
    move |t| rest.merge(&t)
}

/// Where the trial of a failed run goes ([`Trials::add_history_where`]), by the time its
/// failed run ended (docs/reference/suggest.md "Incidents").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Counted.
    Count,
    /// Counted, and kept by the 5-minute slot of its time ([`TimedTrials`]): a window found
    /// once every job is counted may hold it.
    Slot(i64),
    /// In a window known already: not counted.
    Leave,
}

/// The trials counted with a time, by the 5-minute slot their failed run ended in and by
/// class: what [`Trials::take_out`] takes out again when a window found at the end holds
/// their slot. Its size is the span's slots times the classes, not the trials.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct TimedTrials(#[serde(with = "pairs")] BTreeMap<i64, Vec<(FailureClass, ClassTrials)>>);

impl TimedTrials {
    fn slot(&mut self, slot: i64, class: ClassRef<'_>) -> &mut ClassTrials {
        let list = self.0.entry(slot).or_default();
        let at = match list.iter().position(|(c, _)| ClassRef::of(c) == class) {
            Some(at) => at,
            None => {
                list.push((class.to_owned(), ClassTrials::default()));
                list.len() - 1
            }
        };
        &mut list[at].1
    }

    pub fn merge(&mut self, other: &TimedTrials) {
        for (slot, list) in &other.0 {
            for (class, t) in list {
                self.slot(*slot, ClassRef::of(class)).merge(t);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Trials {
    /// Counts every trial of one job's recorded history; `test`: the job was submitted at
    /// or after `--backtest-at`.
    pub fn add_history(&mut self, history: &FailureHistory, test: bool) {
        self.add_history_where(history, test, |_| Place::Count, &mut TimedTrials::default());
    }

    /// [`Trials::add_history`], each trial placed by `place` (of its failed run's index):
    /// counted, counted and kept in `timed` by its slot, or left out. Returns the trials left
    /// out.
    pub fn add_history_where(
        &mut self,
        history: &FailureHistory,
        test: bool,
        place: impl Fn(usize) -> Place,
        timed: &mut TimedTrials,
    ) -> u64 {
        let mut depth = 0u32;
        let mut left = 0;
        for (k, pair) in history.runs.windows(2).enumerate() {
            if pair[0].outcome != Outcome::Failed {
                continue;
            }
            depth = depth.saturating_add(1);
            let success = pair[1].outcome == Outcome::Succeeded;
            let next = pair[1].run_for.0;
            let class = class_ref(&pair[0]);
            match place(k) {
                Place::Leave => {
                    left += 1;
                    continue;
                }
                Place::Slot(slot) => timed.slot(slot, class).add(depth, success, test, next),
                Place::Count => {}
            }
            self.all.add(depth, success, test, next);
            self.slot(class).add(depth, success, test, next);
        }
        left
    }

    /// Takes out the trials `timed` holds in the slots `holds` says a window holds; returns
    /// how many.
    pub fn take_out(&mut self, timed: &TimedTrials, holds: impl Fn(i64) -> bool) -> u64 {
        let mut out = 0;
        for (slot, list) in &timed.0 {
            if !holds(*slot) {
                continue;
            }
            for (class, t) in list {
                self.slot(ClassRef::of(class)).take_out(t);
                self.all.take_out(t);
                out += t.total(Fit::All).trials;
            }
        }
        out
    }

    /// The trials of `class`, or the rest's when it is past a cap.
    fn slot(&mut self, class: ClassRef<'_>) -> &mut ClassTrials {
        let rest = &mut self.rest;
        let kept = match class {
            ClassRef::Condition(c) => return &mut self.conditions[c as usize],
            ClassRef::Unknown => return &mut self.unknown,
            ClassRef::Exit(code) => self.exits.get_or_make(&code, into_rest(rest)),
            ClassRef::Category(category, sub) => {
                let subs = self.categories.get_or_make(category, |subs: Subcategories| {
                    for t in subs.into_values() {
                        rest.merge(&t);
                    }
                });
                match subs {
                    Some(subs) => subs.get_or_make(sub, into_rest(rest)),
                    None => None,
                }
            }
        };
        match kept {
            Some(t) => t,
            None => rest,
        }
    }

    /// Adds the trials of other histories (another worker's, another shard's).
    pub fn merge(&mut self, other: &Trials) {
        for (category, subs) in other.categories.iter() {
            for (sub, t) in subs.iter() {
                self.slot(ClassRef::Category(category, sub)).merge(t);
            }
        }
        for (code, t) in other.exits.iter() {
            self.slot(ClassRef::Exit(*code)).merge(t);
        }
        for (mine, theirs) in self.conditions.iter_mut().zip(&other.conditions) {
            mine.merge(theirs);
        }
        self.unknown.merge(&other.unknown);
        self.rest.merge(&other.rest);
        self.all.merge(&other.all);
    }

    /// Every kept class with trials, in a stable order (categories by name, exit codes,
    /// conditions, `unknown`), then the classes past the caps (`None`).
    pub fn classes(&self) -> impl Iterator<Item = (Option<FailureClass>, &ClassTrials)> {
        let categories = self.categories.iter().flat_map(|(category, subs)| {
            subs.iter()
                .map(move |(sub, t)| (Some(ClassRef::Category(category, sub).to_owned()), t))
        });
        let exits = self.exits.iter().map(|(c, t)| (Some(FailureClass::Exit(*c)), t));
        let conditions = Condition::ALL
            .iter()
            .zip(&self.conditions)
            .map(|(c, t)| (Some(FailureClass::Condition(*c)), t));
        categories
            .chain(exits)
            .chain(conditions)
            .chain([(Some(FailureClass::Unknown), &self.unknown), (None, &self.rest)])
            .filter(|(_, t)| t.total(Fit::All).trials > 0)
    }

    /// The trials of a kept class.
    fn get(&self, class: &FailureClass) -> Option<&ClassTrials> {
        match ClassRef::of(class) {
            ClassRef::Category(c, s) => self.categories.get(c)?.get(s),
            ClassRef::Exit(code) => self.exits.get(&code),
            ClassRef::Condition(c) => Some(&self.conditions[c as usize]),
            ClassRef::Unknown => Some(&self.unknown),
        }
    }

    /// Every trial, of every class.
    pub fn all(&self) -> &ClassTrials {
        &self.all
    }
}

/// Where a rate comes from: a class (or every class, `all`) at a depth bucket or at any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basis {
    /// `None`: every class together.
    pub class: Option<FailureClass>,
    /// The depth bucket (1..=5, 5 is `5+`); `None`: any depth.
    pub depth: Option<u8>,
}

impl fmt::Display for Basis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.class {
            Some(c) => c.fmt(f)?,
            None => f.write_str("all")?,
        }
        match self.depth {
            Some(d) if d as usize >= DEPTHS => write!(f, "@{DEPTHS}+"),
            Some(d) => write!(f, "@{d}"),
            None => Ok(()),
        }
    }
}

/// One rate: p̂ = successes / trials of its basis, with its Wilson 95% interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    pub p: f64,
    pub low: f64,
    pub high: f64,
    pub trials: u64,
    pub basis: Basis,
}

impl Rate {
    fn of(t: Tally, basis: Basis) -> Rate {
        let (low, high) = wilson(t.successes, t.trials, Z95);
        Rate {
            p: t.share(),
            low,
            high,
            trials: t.trials,
            basis,
        }
    }
}

/// The estimate of a Pending side (docs/estimates.md).
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The chance to end Succeeded over the runs left.
    pub p_succeeded: f64,
    pub low: f64,
    pub high: f64,
    /// The pending run's own rate, p(c, d).
    pub p_next_run: f64,
    pub runs_left: u32,
    /// The level of `p_next_run`, and its trials.
    pub basis: Basis,
    pub trials: u64,
    /// The expected run time of the runs not recorded, in seconds.
    pub expected_compute: f64,
}

/// The Wilson score interval of `successes` in `trials` (> 0) at `z`, clamped to [0, 1].
pub fn wilson(successes: u64, trials: u64, z: f64) -> (f64, f64) {
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At p̂ = 0 or 1 the bound is exactly 0 or 1; computed, it can miss by a rounding.
    let low = if successes == 0 { 0.0 } else { (center - half).max(0.0) };
    let high = if successes == trials {
        1.0
    } else {
        (center + half).min(1.0)
    };
    (low, high)
}

/// The rates of every class, final: the trials of the whole history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rates {
    trials: Trials,
}

impl Rates {
    pub fn new(trials: Trials) -> Rates {
        Rates { trials }
    }

    pub fn trials(&self) -> &Trials {
        &self.trials
    }

    /// Every trial, of every class.
    pub fn pooled(&self) -> Tally {
        self.trials.all.total(Fit::All)
    }

    /// The trials of `class` at any depth (zero when it has none or is past the caps).
    pub fn tally(&self, class: &FailureClass) -> Tally {
        self.trials.get(class).map_or(Tally::default(), |t| t.total(Fit::All))
    }

    /// [`Rates::tally`] of a job's class (`None`: no failed run, no trials).
    pub fn tally_of(&self, class: Option<&FailureClass>) -> Tally {
        class.map_or(Tally::default(), |c| self.tally(c))
    }

    /// The rate of a run of `class` at `depth` (its job's failed runs so far; 0: none), with
    /// docs/estimates.md's back-off, fitted on `fit`; `None` without a single trial.
    pub fn rate(&self, class: Option<&FailureClass>, depth: u32, fit: Fit) -> Option<Rate> {
        let own = class.and_then(|c| Some((c, self.trials.get(c)?)));
        let d = (depth > 0).then(|| bucket(depth));
        let depth_label = d.map(|d| d as u8 + 1);
        if let (Some((c, t)), Some(d)) = (own, d) {
            let at = t.at(fit, d);
            if at.trials >= MIN_TRIALS {
                return Some(Rate::of(
                    at,
                    Basis {
                        class: Some(c.clone()),
                        depth: depth_label,
                    },
                ));
            }
        }
        if let Some((c, t)) = own {
            let total = t.total(fit);
            if total.trials >= MIN_TRIALS {
                return Some(Rate::of(
                    total,
                    Basis {
                        class: Some(c.clone()),
                        depth: None,
                    },
                ));
            }
        }
        let all = &self.trials.all;
        if let Some(d) = d {
            let at = all.at(fit, d);
            if at.trials >= MIN_TRIALS {
                return Some(Rate::of(
                    at,
                    Basis {
                        class: None,
                        depth: depth_label,
                    },
                ));
            }
        }
        let total = all.total(fit);
        (total.trials > 0).then(|| {
            Rate::of(
                total,
                Basis {
                    class: None,
                    depth: None,
                },
            )
        })
    }

    /// m_c: the mean `runFor` of the runs that followed a failure of `class`, in seconds
    /// (every class's below [`MIN_TRIALS`] trials; 0 without any).
    pub fn mean_next_run(&self, class: Option<&FailureClass>) -> f64 {
        let own = class
            .and_then(|c| self.trials.get(c))
            .filter(|t| t.total(Fit::All).trials >= MIN_TRIALS);
        let t = own.unwrap_or(&self.trials.all);
        let n = t.total(Fit::All).trials;
        if n == 0 {
            return 0.0;
        }
        t.next_run_ns as f64 / n as f64 / 1e9
    }

    /// The estimate of a side Pending with `runs_left` runs (≥ 1) for a job of `class` with
    /// `depth` recorded failed runs; `None` without a single trial.
    pub fn estimate(&self, class: Option<&FailureClass>, depth: u32, runs_left: u32) -> Option<Estimate> {
        let first = self.rate(class, depth, Fit::All)?;
        let m = self.mean_next_run(class);
        // Running: P(no success yet) and the sums, for the estimate and its two bounds.
        let (mut miss, mut miss_low, mut miss_high) = (1.0f64, 1.0f64, 1.0f64);
        let (mut p, mut low, mut high, mut compute) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for j in 0..runs_left.max(1) {
            let r = if j == 0 {
                first.clone()
            } else {
                self.rate(class, depth.saturating_add(j), Fit::All)?
            };
            compute += miss * m;
            p += miss * r.p;
            low += miss_low * r.low;
            high += miss_high * r.high;
            miss *= 1.0 - r.p;
            miss_low *= 1.0 - r.low;
            miss_high *= 1.0 - r.high;
        }
        let p = p.min(1.0);
        Some(Estimate {
            p_succeeded: p,
            low: low.min(p).max(0.0),
            high: high.max(p).min(1.0),
            p_next_run: first.p,
            runs_left: runs_left.max(1),
            basis: first.basis,
            trials: first.trials,
            expected_compute: compute,
        })
    }

    /// The Pending jobs of a comparison without an estimate (docs/estimates.md
    /// `withoutEstimate`): the candidate's (`pending`) and those Pending in the baseline alone
    /// (`baseline_only`); unknown is not zero, whichever side it is on.
    pub fn unknown(&self, pending: &PendingSet, baseline_only: &PendingSet) -> u64 {
        self.sums(pending).without_estimate + self.sums(baseline_only).without_estimate
    }

    /// The sums of docs/estimates.md over the jobs of `set`, in key order.
    pub fn sums(&self, set: &PendingSet) -> Sums {
        let mut s = Sums::default();
        for (class, depth, runs_left, t) in set.keys() {
            s.jobs += t.jobs;
            s.without_resources += t.without_resources;
            let Some(e) = self.estimate(class, u32::from(depth), u32::from(runs_left)) else {
                s.without_estimate += t.jobs;
                continue;
            };
            let n = t.jobs as f64;
            s.expected += n * e.p_succeeded;
            s.low += n * e.low;
            s.high += n * e.high;
            s.expected_compute += n * e.expected_compute;
            s.gpu_hours += e.expected_compute * t.gpu_milli as f64 / 1000.0 / 3600.0;
            s.cpu_hours += e.expected_compute * t.cpu_milli as f64 / 1000.0 / 3600.0;
        }
        s
    }
}

/// The sums over some Pending jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sums {
    pub jobs: u64,
    /// Σ pSucceeded, and its bounds.
    pub expected: f64,
    pub low: f64,
    pub high: f64,
    /// Jobs with no estimate (no trials at all).
    pub without_estimate: u64,
    /// Σ expectedCompute, in seconds.
    pub expected_compute: f64,
    /// Σ expectedCompute × the job's request / 3600.
    pub gpu_hours: f64,
    pub cpu_hours: f64,
    /// Jobs that request neither CPU nor GPU.
    pub without_resources: u64,
}

/// Pending jobs with the same estimate: how many, and what they request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PendingTally {
    pub jobs: u64,
    /// Σ GPU requests, in thousandths.
    pub gpu_milli: u128,
    pub cpu_milli: u128,
    pub without_resources: u64,
}

impl PendingTally {
    fn merge(&mut self, o: &PendingTally) {
        self.jobs += o.jobs;
        self.gpu_milli += o.gpu_milli;
        self.cpu_milli += o.cpu_milli;
        self.without_resources += o.without_resources;
    }
}

/// (depth, runs left) → jobs: depth is capped at [`DEPTHS`] (deeper runs have the same rates).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
struct ByDepth(#[serde(with = "pairs")] BTreeMap<(u8, u8), PendingTally>);

impl std::ops::Deref for ByDepth {
    type Target = BTreeMap<(u8, u8), PendingTally>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for ByDepth {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// Pending jobs by what their estimate depends on (class, depth, runs left), so that sums
/// are made once per key, in key order, from exact counts. The classes past
/// [`MAX_CLASSES`] (the largest) are kept together and estimated as every class's.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingSet {
    classes: Smallest<Option<FailureClass>, ByDepth, MAX_CLASSES>,
    rest: ByDepth,
}

fn merge_depths(into: &mut ByDepth, from: &ByDepth) {
    for (k, t) in from.iter() {
        into.entry(*k).or_default().merge(t);
    }
}

impl PendingSet {
    /// No job in it.
    pub fn is_empty(&self) -> bool {
        *self == PendingSet::default()
    }

    /// One Pending job of `class` with `depth` recorded failed runs and `runs_left` (1..=100).
    pub fn add(&mut self, class: &Option<FailureClass>, depth: u32, runs_left: u32, resources: Option<&Resources>) {
        let key = (depth.min(DEPTHS as u32) as u8, runs_left.clamp(1, MAX_RUNS_LEFT) as u8);
        let t = PendingTally {
            jobs: 1,
            gpu_milli: resources.and_then(|r| r.gpu_milli).map_or(0, u128::from),
            cpu_milli: resources.and_then(|r| r.cpu_milli).map_or(0, u128::from),
            without_resources: u64::from(Resources::is_none(resources)),
        };
        // The class is cloned only the first time it is seen.
        let rest = &mut self.rest;
        let slot = self.classes.get_or_make(class, |dropped| merge_depths(rest, &dropped));
        slot.unwrap_or(rest).entry(key).or_default().merge(&t);
    }

    pub fn merge(&mut self, other: &PendingSet) {
        for (class, depths) in other.classes.iter() {
            let rest = &mut self.rest;
            match self.classes.get_or_make(class, |dropped| merge_depths(rest, &dropped)) {
                Some(mine) => merge_depths(mine, depths),
                None => merge_depths(rest, depths),
            }
        }
        merge_depths(&mut self.rest, &other.rest);
    }

    /// Every key, in order: (class, depth, runs left, jobs); the classes past the cap as
    /// `None` (every class's rate) after the others.
    pub fn keys(&self) -> impl Iterator<Item = (Option<&FailureClass>, u8, u8, &PendingTally)> {
        let kept = self
            .classes
            .iter()
            .flat_map(|(c, ds)| ds.iter().map(move |(&(d, r), t)| (c.as_ref(), d, r, t)));
        kept.chain(self.rest.iter().map(|(&(d, r), t)| (None, d, r, t)))
    }

    /// Jobs in the set.
    pub fn jobs(&self) -> u64 {
        self.keys().map(|(.., t)| t.jobs).sum()
    }
}

/// [`pairs`] for a list kept sorted by key ([`Smallest`]): the same text, read back the
/// same way (any order, each key once).
mod sorted_pairs {
    use serde::de::{Deserialize, Deserializer};
    use serde::ser::{Serialize, Serializer};

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(items: &[(K, V)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(items)
    }

    pub fn deserialize<'de, K, V, D>(d: D) -> Result<Vec<(K, V)>, D::Error>
    where
        K: Ord + Deserialize<'de>,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(super::pairs::deserialize(d)?.into_iter().collect())
    }
}

/// A map as a list of `[key, value]` pairs, in key order: JSON keys are strings only, and
/// these keys are classes and tuples (a partial result, docs/past-one-machine.md, holds them). A repeated key
/// is refused rather than one of its values lost.
mod pairs {
    use std::collections::BTreeMap;

    use serde::de::{Deserialize, Deserializer, Error};
    use serde::ser::{Serialize, Serializer};

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(map: &BTreeMap<K, V>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Ord + Deserialize<'de>,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let list = Vec::<(K, V)>::deserialize(d)?;
        let n = list.len();
        let map: BTreeMap<K, V> = list.into_iter().collect();
        if map.len() != n {
            return Err(D::Error::custom("a key is repeated"));
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests;
