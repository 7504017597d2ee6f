//! Estimates past the end of the record (SPEC §3.5): how likely a job that one side would
//! retry past the end of its recorded history is to succeed, from the history itself.
//!
//! Owns: a run's failure class ([`class_of`]: `category[/subcategory]`, else `exit:N` of
//! the first container with a non-zero exit code, else `condition:C` of the first
//! condition, else `unknown`), a job's class ([`job_class`]: its last recorded failed
//! run's), the trials ([`Trials`]: every failed run followed by another run of the same job
//! is one trial of the failed run's class, a success when that next run succeeded; a
//! returned lease is a next run that did not succeed), and the estimate ([`Rates::estimate`]:
//! the class's p̂ = successes / trials with a Wilson 95% interval; fewer than
//! [`MIN_TRIALS`] trials → the pooled rate over all classes, basis `all`; no trials at all
//! → none). Pure: no I/O; tested on histories whose answer is known by hand.
//!
//! Decisions where SPEC §3.5 is silent:
//! - a job with no failed run recorded (a returned lease requeued it, say) has no class:
//!   its estimate is the pooled one (basis `all`);
//! - an empty `category` counts as none; a `subcategory` without a category is ignored;
//! - at most [`MAX_CLASSES`] categories and exit codes, and [`MAX_SUBCATEGORIES`]
//!   subcategories of a category, are kept, the first seen (a history is input, and a category per run would otherwise grow
//!   without bound); the trials of the classes past that still count in the pooled rate,
//!   and a job of such a class gets the pooled estimate.
//!
//! Streaming (how `replay::run` uses this): trials are counted per unit of work in the
//! workers, merged in input order, and final only after the last job. A changed job's
//! estimate is handed to the sink with the job, so `replay::run` streams changed jobs until
//! the first one that is Pending on a side; from there on it spools them (compact, not
//! rendered) to a temporary file and hands them over after the last job, with their
//! estimates. Memory stays flat; stdin is no different (the spool holds output, not input).

use std::collections::HashMap;
use std::fmt;

use crate::model::failure_history::{FailureHistory, Outcome, Run};
use crate::model::policy::Condition;

/// Below this many trials a class's own rate is not used: the pooled rate is.
pub const MIN_TRIALS: u64 = 5;

/// Distinct categories, and exit codes, kept.
pub const MAX_CLASSES: usize = 1000;

/// Distinct subcategories kept per category (so at most 100,000 category classes).
pub const MAX_SUBCATEGORIES: usize = 100;

/// z of a two-sided 95% interval.
pub const Z95: f64 = 1.959964;

/// The method, in words, for the formats that name it once.
pub const METHOD: &str = "per failure class (the last recorded failed run's category[/subcategory], else exit:N, else condition:C, else unknown), the observed share of failed runs whose next run of the same job succeeded, over the whole replayed history; classes with fewer than 5 such trials use the pooled rate over all classes (basis `all`); interval: Wilson score, 95%";

/// The failure class of a failed run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    Category(&'a str, Option<&'a str>),
    Exit(i64),
    Condition(Condition),
    Unknown,
}

impl ClassRef<'_> {
    fn to_owned(self) -> FailureClass {
        match self {
            ClassRef::Category(c, s) => FailureClass::Category {
                category: c.to_string(),
                subcategory: s.map(str::to_string),
            },
            ClassRef::Exit(code) => FailureClass::Exit(code),
            ClassRef::Condition(c) => FailureClass::Condition(c),
            ClassRef::Unknown => FailureClass::Unknown,
        }
    }
}

fn class_ref(run: &Run) -> ClassRef<'_> {
    if let Some(category) = run.category.as_deref().filter(|c| !c.is_empty()) {
        return ClassRef::Category(category, run.subcategory.as_deref().filter(|s| !s.is_empty()));
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

/// Trials and successes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
}

/// Values in the order first seen, found by key: by a scan while there are few, then
/// through an index. (Also the comparison's counts by class.)
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ordered<K: std::hash::Hash + Eq, V> {
    pub(super) items: Vec<(K, V)>,
    index: HashMap<K, usize>,
}

impl<K: std::hash::Hash + Eq, V> Default for Ordered<K, V> {
    fn default() -> Self {
        Ordered {
            items: Vec::new(),
            index: HashMap::new(),
        }
    }
}

/// Up to this many keys are found by a linear scan (a handful of exit codes or categories is
/// the common case, where hashing the key per trial cost more than the whole scan).
const SCAN: usize = 8;

impl<K: std::hash::Hash + Eq + Clone, V: Default> Ordered<K, V> {
    /// The value of `key`; made on first sight while fewer than `cap` are kept.
    pub(super) fn get_or_make<Q>(&mut self, key: &Q, cap: usize) -> Option<&mut V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let found = if self.items.len() <= SCAN {
            self.items.iter().position(|(k, _)| k.borrow() == key)
        } else {
            self.index.get(key).copied()
        };
        let i = match found {
            Some(i) => i,
            None if self.items.len() < cap => {
                self.items.push((key.to_owned(), V::default()));
                if self.items.len() > SCAN {
                    if self.index.is_empty() {
                        self.index = self
                            .items
                            .iter()
                            .enumerate()
                            .map(|(i, (k, _))| (k.clone(), i))
                            .collect();
                    } else {
                        self.index.insert(key.to_owned(), self.items.len() - 1);
                    }
                }
                self.items.len() - 1
            }
            None => return None,
        };
        Some(&mut self.items[i].1)
    }
}

/// Trials by class, counted one history at a time (in a worker) and merged in input order.
/// Lookups borrow the run's strings: a trial allocates only for a class not seen before.
/// A worker's count of its unit keeps every class (a unit is bounded); [`Trials::merge`]
/// keeps the first [`MAX_CLASSES`] categories and exit codes and [`MAX_SUBCATEGORIES`]
/// subcategories of a category, in the order first seen, so that the result does not
/// depend on how the input was cut.
#[derive(Debug, Clone, Default)]
pub struct Trials {
    /// Category → (subcategory → tally).
    categories: Ordered<String, Ordered<Option<String>, Tally>>,
    exits: Ordered<i64, Tally>,
    conditions: [Tally; Condition::ALL.len()],
    unknown: Tally,
    /// Every trial, of kept classes or not.
    pooled: Tally,
}

impl Trials {
    /// Counts every trial of one job's recorded history.
    pub fn add_history(&mut self, history: &FailureHistory) {
        for pair in history.runs.windows(2) {
            if pair[0].outcome == Outcome::Failed {
                let success = pair[1].outcome == Outcome::Succeeded;
                self.pooled.add(success);
                if let Some(t) = self.slot(class_ref(&pair[0]), usize::MAX, usize::MAX) {
                    t.add(success);
                }
            }
        }
    }

    /// The tally of `class`, made on first sight while fewer than `cap` categories or exit
    /// codes (`sub_cap` subcategories of its category) are kept.
    fn slot(&mut self, class: ClassRef<'_>, cap: usize, sub_cap: usize) -> Option<&mut Tally> {
        match class {
            ClassRef::Condition(c) => Some(&mut self.conditions[c as usize]),
            ClassRef::Unknown => Some(&mut self.unknown),
            ClassRef::Exit(code) => self.exits.get_or_make(&code, cap),
            ClassRef::Category(category, sub) => {
                let subs = self.categories.get_or_make(category, cap)?;
                // `Option<&str>` is not a borrowed `Option<String>`: look up by hand.
                let i = match subs.items.iter().position(|(s, _)| s.as_deref() == sub) {
                    Some(i) => i,
                    None => {
                        let owned = sub.map(str::to_string);
                        subs.get_or_make(&owned, sub_cap)?;
                        subs.items.len() - 1
                    }
                };
                Some(&mut subs.items[i].1)
            }
        }
    }

    /// Adds the trials of the histories that follow (a worker's unit).
    pub fn merge(&mut self, other: Trials) {
        for (category, subs) in other.categories.items {
            for (sub, t) in subs.items {
                let class = ClassRef::Category(&category, sub.as_deref());
                if let Some(slot) = self.slot(class, MAX_CLASSES, MAX_SUBCATEGORIES) {
                    slot.merge(t);
                }
            }
        }
        for (code, t) in other.exits.items {
            if let Some(slot) = self.exits.get_or_make(&code, MAX_CLASSES) {
                slot.merge(t);
            }
        }
        for (mine, theirs) in self.conditions.iter_mut().zip(other.conditions) {
            mine.merge(theirs);
        }
        self.unknown.merge(other.unknown);
        self.pooled.merge(other.pooled);
    }

    /// The rates, once every history is counted.
    pub fn rates(self) -> Rates {
        let categories = self.categories.items.into_iter().flat_map(|(category, subs)| {
            subs.items.into_iter().map(move |(subcategory, t)| {
                let category = category.clone();
                (FailureClass::Category { category, subcategory }, t)
            })
        });
        let exits = self.exits.items.into_iter().map(|(c, t)| (FailureClass::Exit(c), t));
        let conditions = Condition::ALL
            .iter()
            .zip(self.conditions)
            .map(|(c, t)| (FailureClass::Condition(*c), t));
        let mut classes: Vec<(FailureClass, Tally)> = categories
            .chain(exits)
            .chain(conditions)
            .chain(std::iter::once((FailureClass::Unknown, self.unknown)))
            .filter(|(_, t)| t.trials > 0)
            .collect();
        classes.sort_by(|a, b| a.0.cmp(&b.0));
        Rates {
            classes,
            pooled: self.pooled,
        }
    }
}

/// Where an estimate's rate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// The job's own class (at least [`MIN_TRIALS`] trials).
    Class(FailureClass),
    /// Every class together (`all`).
    Pooled,
}

impl fmt::Display for Basis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Basis::Class(c) => c.fmt(f),
            Basis::Pooled => f.write_str("all"),
        }
    }
}

/// An estimate of the chance that the next run succeeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// p̂ = successes / trials of the basis.
    pub p_succeeded: f64,
    /// The Wilson 95% interval of p̂.
    pub low: f64,
    pub high: f64,
    pub trials: u64,
    pub basis: Basis,
}

/// The Wilson score interval of `successes` in `trials` (> 0) at `z`, clamped to [0, 1].
pub fn wilson(successes: u64, trials: u64, z: f64) -> (f64, f64) {
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The rates of every class, final.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rates {
    /// Kept classes with at least one trial, sorted.
    classes: Vec<(FailureClass, Tally)>,
    pooled: Tally,
}

impl Rates {
    /// Every kept class with trials, in a stable order (categories by name, exit codes,
    /// conditions, `unknown`).
    pub fn classes(&self) -> &[(FailureClass, Tally)] {
        &self.classes
    }

    /// Every trial, of every class.
    pub fn pooled(&self) -> Tally {
        self.pooled
    }

    /// The tally of `class` (zero when it has no trials or was not kept).
    pub fn tally(&self, class: &FailureClass) -> Tally {
        self.classes
            .binary_search_by(|(c, _)| c.cmp(class))
            .map_or(Tally::default(), |i| self.classes[i].1)
    }

    /// [`Rates::tally`] of a job's class (`None`: no failed run, no trials).
    pub fn tally_of(&self, class: Option<&FailureClass>) -> Tally {
        class.map_or(Tally::default(), |c| self.tally(c))
    }

    /// The estimate for a job of `class` (`None`: no failed run recorded), or `None` when
    /// there are no trials at all.
    pub fn estimate(&self, class: Option<&FailureClass>) -> Option<Estimate> {
        let own = class.map(|c| (c, self.tally(c)));
        let (tally, basis) = match own {
            Some((c, t)) if t.trials >= MIN_TRIALS => (t, Basis::Class(c.clone())),
            _ => (self.pooled, Basis::Pooled),
        };
        if tally.trials == 0 {
            return None;
        }
        let (low, high) = wilson(tally.successes, tally.trials, Z95);
        Some(Estimate {
            p_succeeded: tally.successes as f64 / tally.trials as f64,
            low,
            high,
            trials: tally.trials,
            basis,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::Container;

    fn run(outcome: Outcome) -> Run {
        Run {
            outcome,
            ..Run::default()
        }
    }

    fn failed_with(f: impl FnOnce(&mut Run)) -> Run {
        let mut r = run(Outcome::Failed);
        f(&mut r);
        r
    }

    fn exit(code: i64) -> Run {
        failed_with(|r| {
            r.containers = vec![
                Container {
                    name: "sidecar".into(),
                    exit_code: 0,
                    ..Container::default()
                },
                Container {
                    name: "main".into(),
                    exit_code: code,
                    ..Container::default()
                },
            ]
        })
    }

    fn preempted() -> Run {
        failed_with(|r| r.conditions = vec![Condition::Preempted, Condition::Evicted])
    }

    fn category(c: &str, sub: Option<&str>) -> Run {
        failed_with(|r| {
            r.category = Some(c.into());
            r.subcategory = sub.map(Into::into);
            // The category wins over an exit code and a condition.
            r.containers = vec![Container {
                exit_code: 3,
                ..Container::default()
            }];
            r.conditions = vec![Condition::Evicted];
        })
    }

    fn history(runs: Vec<Run>) -> FailureHistory {
        FailureHistory {
            runs,
            ..FailureHistory::default()
        }
    }

    fn rates(histories: &[FailureHistory]) -> Rates {
        let mut t = Trials::default();
        for h in histories {
            t.add_history(h);
        }
        t.rates()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn a_runs_class_is_its_category_else_exit_code_else_condition_else_unknown() {
        assert_eq!(
            class_of(&category("cuda_error", Some("xid"))).to_string(),
            "cuda_error/xid"
        );
        assert_eq!(class_of(&category("cuda_error", None)).to_string(), "cuda_error");
        // An empty category is none.
        assert_eq!(class_of(&category("", Some("xid"))).to_string(), "exit:3");
        assert_eq!(class_of(&exit(137)).to_string(), "exit:137");
        assert_eq!(class_of(&preempted()).to_string(), "condition:Preempted");
        assert_eq!(class_of(&run(Outcome::Failed)).to_string(), "unknown");
    }

    #[test]
    fn a_jobs_class_is_its_last_failed_runs() {
        let h = history(vec![exit(1), preempted(), run(Outcome::LeaseReturned)]);
        assert_eq!(job_class(&h), Some(FailureClass::Condition(Condition::Preempted)));
        assert_eq!(job_class(&history(vec![run(Outcome::LeaseReturned)])), None);
    }

    /// exit:1 — 6 trials, 4 successes; Preempted — 2 trials (1 success, and a returned
    /// lease that counts as a failure); by hand: pooled 8 trials, 5 successes.
    fn known() -> Vec<FailureHistory> {
        vec![
            // exit:1 → succeeded (success); exit:1 → exit:1 → succeeded (fail, success).
            history(vec![exit(1), run(Outcome::Succeeded)]),
            history(vec![exit(1), exit(1), run(Outcome::Succeeded)]),
            // exit:1 → succeeded twice more; exit:1 → cancelled (fail).
            history(vec![exit(1), run(Outcome::Succeeded)]),
            history(vec![exit(1), run(Outcome::Succeeded)]),
            history(vec![exit(1), run(Outcome::Cancelled)]),
            // Preempted → lease returned (fail) → succeeded: the lease is no failed run, so
            // only one trial; Preempted → succeeded (success).
            history(vec![preempted(), run(Outcome::LeaseReturned), run(Outcome::Succeeded)]),
            history(vec![preempted(), run(Outcome::Succeeded)]),
            // A last failed run is no trial; a job of one run has none.
            history(vec![exit(2)]),
            history(vec![run(Outcome::Succeeded)]),
        ]
    }

    #[test]
    fn trials_count_failed_runs_followed_by_another_run() {
        let r = rates(&known());
        assert_eq!(
            r.tally(&FailureClass::Exit(1)),
            Tally {
                trials: 6,
                successes: 4
            }
        );
        assert_eq!(
            r.tally(&FailureClass::Condition(Condition::Preempted)),
            Tally {
                trials: 2,
                successes: 1
            }
        );
        assert_eq!(r.tally(&FailureClass::Exit(2)), Tally::default());
        assert_eq!(
            r.pooled(),
            Tally {
                trials: 8,
                successes: 5
            }
        );
        let names: Vec<String> = r.classes().iter().map(|(c, _)| c.to_string()).collect();
        assert_eq!(names, ["exit:1", "condition:Preempted"]);
    }

    #[test]
    fn a_class_with_five_trials_or_more_uses_its_own_rate() {
        let e = rates(&known()).estimate(Some(&FailureClass::Exit(1))).unwrap();
        assert_eq!((e.trials, e.basis.to_string()), (6, "exit:1".to_string()));
        assert!(close(e.p_succeeded, 4.0 / 6.0));
        // Wilson 95% of 4/6, by hand: z² = 3.84146, centre (0.66667 + 0.32012) / 1.64024
        // = 0.60162, half-width 1.959964 × √(0.037037 + 0.026677) / 1.64024 = 0.30162.
        assert!(close(e.low, 0.3000), "{}", e.low);
        assert!(close(e.high, 0.9032), "{}", e.high);
    }

    #[test]
    fn fewer_than_five_trials_or_no_class_use_the_pooled_rate() {
        let r = rates(&known());
        let preempted = r
            .estimate(Some(&FailureClass::Condition(Condition::Preempted)))
            .unwrap();
        let unseen = r.estimate(Some(&FailureClass::Exit(2))).unwrap();
        let none = r.estimate(None).unwrap();
        for e in [&preempted, &unseen, &none] {
            assert_eq!((e.trials, &e.basis), (8, &Basis::Pooled));
            assert_eq!(e.basis.to_string(), "all");
            assert!(close(e.p_succeeded, 5.0 / 8.0));
            // Wilson 95% of 5/8: (0.3057, 0.8632).
            assert!(close(e.low, 0.3057) && close(e.high, 0.8632), "{e:?}");
        }
    }

    #[test]
    fn no_trials_no_estimate() {
        let r = rates(&[history(vec![exit(1)]), history(vec![run(Outcome::Succeeded)])]);
        assert_eq!(r.estimate(Some(&FailureClass::Exit(1))), None);
        assert_eq!(r.estimate(None), None);
    }

    #[test]
    fn wilson_matches_published_values() {
        // Wilson 95% intervals as tabled (Newcombe 1998, table I): 0/10, 10/10, 3/5, 81/263.
        let cases = [
            (0, 10, 0.0, 0.2775),
            (10, 10, 0.7225, 1.0),
            (3, 5, 0.2307, 0.8824),
            (81, 263, 0.2553, 0.3662),
        ];
        for (s, n, low, high) in cases {
            let (l, h) = wilson(s, n, Z95);
            assert!(close(l, low) && close(h, high), "{s}/{n}: ({l}, {h})");
        }
    }

    #[test]
    fn merging_units_equals_counting_in_one() {
        let all = known();
        let whole = rates(&all);
        for cut in 0..all.len() {
            let (mut a, mut b) = (Trials::default(), Trials::default());
            all[..cut].iter().for_each(|h| a.add_history(h));
            all[cut..].iter().for_each(|h| b.add_history(h));
            a.merge(b);
            assert_eq!(a.rates(), whole, "cut at {cut}");
        }
    }

    /// Past a handful of classes they are found through an index: the same counts.
    #[test]
    fn many_classes_are_counted_each_on_its_own() {
        let mut t = Trials::default();
        for round in 0..3 {
            for code in 1..=20 {
                let next = if round == 0 {
                    Outcome::Succeeded
                } else {
                    Outcome::Failed
                };
                t.add_history(&history(vec![exit(code), run(next)]));
            }
        }
        let r = t.rates();
        assert_eq!(r.classes().len(), 20);
        for code in 1..=20 {
            assert_eq!(
                r.tally(&FailureClass::Exit(code)),
                Tally {
                    trials: 3,
                    successes: 1
                },
                "exit:{code}"
            );
        }
    }

    #[test]
    fn classes_past_the_cap_count_only_in_the_pooled_rate() {
        let mut t = Trials::default();
        for i in 0..(MAX_CLASSES as i64 + 10) {
            let mut unit = Trials::default();
            unit.add_history(&history(vec![exit(i + 1), run(Outcome::Succeeded)]));
            t.merge(unit);
        }
        let r = t.rates();
        assert_eq!(r.classes().len(), MAX_CLASSES);
        assert_eq!(r.pooled().trials, MAX_CLASSES as u64 + 10);
        assert_eq!(r.tally(&FailureClass::Exit(MAX_CLASSES as i64 + 5)), Tally::default());
        // Subcategories: 100 per category.
        let mut t = Trials::default();
        for i in 0..(MAX_SUBCATEGORIES + 3) {
            let mut unit = Trials::default();
            let sub = format!("s{i}");
            unit.add_history(&history(vec![category("c", Some(&sub)), run(Outcome::Succeeded)]));
            t.merge(unit);
        }
        let r = t.rates();
        assert_eq!(
            (r.classes().len(), r.pooled().trials),
            (MAX_SUBCATEGORIES, MAX_SUBCATEGORIES as u64 + 3)
        );
    }
}
