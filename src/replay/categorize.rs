//! The executor's categorizer in the replay (docs/categorizer.md): a side's classifier applied
//! to a decoded history before its engine sees it, and what that changes, counted.
//!
//! Owns: [`Reclassify`], a worker's scratch that replaces every failed run's recorded
//! category and subcategory with its classification in place and puts the recorded ones
//! back afterwards (the estimates' failure classes and the decision records read them); and
//! [`CategoryCounts`], what a side's categorizer changed (`categoryChanges`) and the Retry
//! decisions that collide with a retained pod (`collisions`), sums that merge the same
//! whatever the split. Must not: classify (that is `engine::categorizer`), format anything
//! (the sinks render the counts), or allocate per run once a worker is warm: it runs on every
//! run of a replay, so replaced strings come from a pool of the worker's own.
//!
//! Decisions where the executor's behaviour is not a rule of its own:
//! - A subcategory is kept only with a category: a config whose `defaultCategory` is empty
//!   and whose `defaultSubcategory` is not gives no category, and no subcategory either.
//! - Empty recorded text counts as none, as upstream's empty string.
//! - `categoryChanges` counts every run of the history the classifier sees (a failed run, and
//!   a returned lease the executor classified on a pod issue), whether or not the job reached
//!   it: the categorizer's doing, not the engine's.

use crate::engine::categorizer::{Categorized, Classifier};
use crate::engine::{DecisionKind, EngineKind, JobReport, RunCategories};
use crate::model::failure_history::{ExecutorPath, FailureHistory, Outcome, Run};

/// A category and subcategory as counted: `None` is no category (or none recorded).
type Pair = (Option<String>, Option<String>);

/// One kind of change a categorizer made: recorded → classified, and on how many runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CategoryChange {
    pub from: Pair,
    pub to: Pair,
    pub runs: u64,
}

impl CategoryChange {
    /// `C`, `C/S` or `none`, as the reports print a side of a change.
    pub fn label(pair: &Pair) -> String {
        match pair {
            (None, _) => "none".to_string(),
            (Some(c), None) => c.clone(),
            (Some(c), Some(s)) => format!("{c}/{s}"),
        }
    }
}

/// What one side's categorizer did over the jobs counted so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CategoryCounts {
    /// Every distinct change, in the order first met (sorted only for output: the order of
    /// a merge must not matter, [`CategoryCounts::changes`]).
    changes: Vec<CategoryChange>,
    /// Under the upstream engine, Retry decisions (by a rule or the default action) on runs
    /// whose failed pod the executor keeps: the retried pod reuses its name and collides.
    pub collisions: u64,
}

impl CategoryCounts {
    fn add_change(&mut self, from: (Option<&str>, Option<&str>), to: (Option<&str>, Option<&str>)) {
        // A linear scan: a categorizer makes a handful of distinct changes, and a hit builds
        // no string.
        let found = self.changes.iter_mut().find(|c| {
            (c.from.0.as_deref(), c.from.1.as_deref()) == from && (c.to.0.as_deref(), c.to.1.as_deref()) == to
        });
        match found {
            Some(c) => c.runs += 1,
            None => self.changes.push(CategoryChange {
                from: (from.0.map(str::to_string), from.1.map(str::to_string)),
                to: (to.0.map(str::to_string), to.1.map(str::to_string)),
                runs: 1,
            }),
        }
    }

    pub fn merge(&mut self, other: &CategoryCounts) {
        for c in &other.changes {
            match self.changes.iter_mut().find(|m| m.from == c.from && m.to == c.to) {
                Some(m) => m.runs += c.runs,
                None => self.changes.push(c.clone()),
            }
        }
        self.collisions += other.collisions;
    }

    /// The changes by runs descending, then from, then to (by their labels).
    pub fn changes(&self) -> Vec<(String, String, u64)> {
        let mut out: Vec<(String, String, u64)> = self
            .changes
            .iter()
            .map(|c| (CategoryChange::label(&c.from), CategoryChange::label(&c.to), c.runs))
            .collect();
        out.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)).then_with(|| a.1.cmp(&b.1)));
        out
    }

    /// Runs whose category changed.
    pub fn changed_runs(&self) -> u64 {
        self.changes.iter().map(|c| c.runs).sum()
    }
}

/// Both sides' counts (a plain replay fills `candidate` only).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SideCategories {
    pub baseline: CategoryCounts,
    pub candidate: CategoryCounts,
}

impl SideCategories {
    pub fn merge(&mut self, o: &SideCategories) {
        self.baseline.merge(&o.baseline);
        self.candidate.merge(&o.candidate);
    }
}

/// A worker's scratch for classifying a history in place, reused job after job.
#[derive(Debug, Default)]
pub struct Reclassify {
    /// The runs replaced: index and recorded pair (moved out of the run, not copied).
    saved: Vec<(usize, Option<String>, Option<String>)>,
    /// Per run of the job: whether its failed pod is retained (a classified failed run
    /// whose category is not `Delete`).
    retained: Vec<bool>,
    /// Buffers of strings that were replaced and put back, for the next replacement.
    pool: Vec<String>,
}

/// Whether the executor's classifier sees `run`: a failed run, or a returned lease on a pod
/// issue (a stuck pod retried, a failed-pod check), which the executor classifies before it
/// returns the lease (upstream `pod_issue_handler.go` `handleRetryableJobIssue`) and Lookout
/// stores with its category.
fn classified_by_the_executor(run: &Run) -> bool {
    match run.outcome {
        Outcome::Failed => true,
        Outcome::LeaseReturned => run.executor_path.is_some_and(ExecutorPath::pod_issue),
        Outcome::Succeeded | Outcome::Cancelled => false,
    }
}

/// Empty text counts as none, as upstream's empty string.
fn some(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|s| !s.is_empty())
}

impl Reclassify {
    /// Replaces the category and subcategory of every run of `history` that the classifier
    /// sees (a failed run, a returned lease on a pod issue) with its classification, counting each change into `counts`
    /// (`None`: not counted). Until [`Reclassify::restore`], the recorded pairs are kept here.
    /// `also`: a second side's counts, when both sides share the categorizer (the history is
    /// classified once).
    pub fn apply(
        &mut self,
        classifier: &Classifier,
        history: &mut FailureHistory,
        mut counts: Option<&mut CategoryCounts>,
        mut also: Option<&mut CategoryCounts>,
    ) {
        debug_assert!(self.saved.is_empty(), "apply twice without restore");
        self.retained.clear();
        self.retained.resize(history.runs.len(), false);
        for (k, run) in history.runs.iter_mut().enumerate() {
            if !classified_by_the_executor(run) {
                continue;
            }
            let categorized = classifier.classify(run);
            let Categorized::Classified(c) = categorized else {
                continue;
            };
            self.retained[k] = categorized.pod_retained();
            let to = (c.category, c.category.and(c.subcategory));
            let from = (some(&run.category), some(&run.subcategory));
            if from == to {
                continue;
            }
            if let Some(counts) = counts.as_deref_mut() {
                counts.add_change(from, to);
            }
            if let Some(also) = also.as_deref_mut() {
                also.add_change(from, to);
            }
            let mut take = |v: Option<&str>| {
                v.map(|v| {
                    let mut b = self.pool.pop().unwrap_or_default();
                    b.clear();
                    b.push_str(v);
                    b
                })
            };
            let (cat, sub) = (take(to.0), take(to.1));
            let cat = std::mem::replace(&mut run.category, cat);
            let sub = std::mem::replace(&mut run.subcategory, sub);
            self.saved.push((k, cat, sub));
        }
    }

    /// Whether run `k` of the history [`Reclassify::apply`] last classified kept its pod
    /// (a classified failed run whose category is not `Delete`).
    pub fn retained(&self, k: usize) -> bool {
        self.retained.get(k).copied().unwrap_or(false)
    }

    /// The collisions of a side's report of the history [`Reclassify::apply`] last
    /// classified: under the upstream engine (the design gives every retry a new pod name),
    /// its Retry decisions on runs whose pod is retained.
    pub fn collided(&self, engine: EngineKind, report: &JobReport) -> u64 {
        if engine != EngineKind::Upstream {
            return 0;
        }
        let retained = |k: usize| self.retained.get(k).copied().unwrap_or(false);
        let retry = |d: &Option<crate::engine::Decision>| d.as_ref().is_some_and(|d| d.kind == DecisionKind::Retry);
        report
            .runs
            .iter()
            .filter(|r| retry(&r.decision) && retained(r.index))
            .count() as u64
    }

    /// Of [`Reclassify::collided`]'s retries, those `history` (as classified) shows ran: the
    /// run retried failed and the next run started (failed or succeeded), so its pod was not
    /// kept after all (suggest's `collisionsRan`: the categorizer is not the one the cluster
    /// ran).
    pub fn collided_ran(&self, engine: EngineKind, report: &JobReport, history: &FailureHistory) -> u64 {
        if engine != EngineKind::Upstream {
            return 0;
        }
        let retry = |d: &Option<crate::engine::Decision>| d.as_ref().is_some_and(|d| d.kind == DecisionKind::Retry);
        let ran = |k: usize| {
            let outcome = |k: usize| history.runs.get(k).map(|r| r.outcome);
            outcome(k) == Some(Outcome::Failed) && matches!(outcome(k + 1), Some(Outcome::Failed | Outcome::Succeeded))
        };
        report
            .runs
            .iter()
            .filter(|r| retry(&r.decision) && self.retained(r.index) && ran(r.index))
            .count() as u64
    }

    /// [`Reclassify::collided`], counted into `counts`.
    pub fn collisions(&self, engine: EngineKind, report: &JobReport, counts: &mut CategoryCounts) {
        counts.collisions += self.collided(engine, report);
    }

    /// Gives each run record of `report` its classified pair (what the engine saw, from
    /// `history` as classified) and, where it differs, the recorded one: what a decision
    /// record prints with a categorizer.
    pub fn annotate(&self, history: &FailureHistory, report: &mut JobReport) {
        for r in &mut report.runs {
            let Some(run) = history.runs.get(r.index) else { continue };
            let recorded = self
                .saved
                .iter()
                .find(|(k, ..)| *k == r.index)
                .map(|(_, c, s)| (some(c).map(str::to_string), some(s).map(str::to_string)));
            r.categories = Some(Box::new(RunCategories {
                category: some(&run.category).map(str::to_string),
                subcategory: some(&run.subcategory).map(str::to_string),
                recorded,
            }));
        }
    }

    /// Puts the recorded pairs back into `history` (the one [`Reclassify::apply`] changed),
    /// keeping the classified strings' buffers for the next job.
    pub fn restore(&mut self, history: &mut FailureHistory) {
        for (k, cat, sub) in self.saved.drain(..) {
            let run = &mut history.runs[k];
            let old_cat = std::mem::replace(&mut run.category, cat);
            let old_sub = std::mem::replace(&mut run.subcategory, sub);
            self.pool.extend(old_cat);
            self.pool.extend(old_sub);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(c: Option<&str>, s: Option<&str>) -> (Option<&'static str>, Option<&'static str>) {
        (c.map(|c| &*c.to_string().leak()), s.map(|s| &*s.to_string().leak()))
    }

    /// By runs descending, then from, then to; a merge adds the same pairs up whatever the
    /// order the parts come in.
    #[test]
    fn changes_sort_and_merge() {
        let mut a = CategoryCounts::default();
        a.add_change(pair(None, None), pair(Some("oom"), Some("kernel")));
        a.add_change(pair(Some("x"), None), pair(Some("user_error"), None));
        let mut b = CategoryCounts::default();
        b.add_change(pair(Some("x"), None), pair(Some("user_error"), None));
        b.add_change(pair(Some("a"), None), pair(None, None));
        b.add_change(pair(None, None), pair(Some("oom"), Some("kernel")));
        b.collisions = 2;
        let (mut ab, mut ba) = (a.clone(), b.clone());
        ab.merge(&b);
        ba.merge(&a);
        let want = vec![
            ("none".to_string(), "oom/kernel".to_string(), 2),
            ("x".to_string(), "user_error".to_string(), 2),
            ("a".to_string(), "none".to_string(), 1),
        ];
        assert_eq!(ab.changes(), want);
        assert_eq!(ba.changes(), want);
        assert_eq!((ab.collisions, ab.changed_runs()), (2, 5));
    }
}
