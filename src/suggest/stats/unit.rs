//! What the jobs of one unit of the source add ([`UnitLearned`]: a worker's, folded into
//! `Learned` in the source's order): each failed run's signature, trials, hours and nodes,
//! and what today's policy decided with it.
//!
//! Owns: counting one job. Must not: fold units (that is `learned`), or know of shards.

use std::collections::BTreeMap;

use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::{Action, Condition};
use crate::replay::compare::request_time;
use crate::replay::estimate::DEPTHS;

use crate::model::signature::{signature, FailedTexts};

use super::signature::{add_tally, CollidedCost, Current, Map, NodeStats, SignatureStats};

/// What the jobs of one unit of the source add (a worker's, folded into
/// [`Learned`](super::Learned) in the source's order): signatures in the order first met,
/// nodes, and scratch buffers, so that a failed run costs its signature's text and a lookup,
/// no allocation.
#[derive(Debug, Default)]
pub struct UnitLearned {
    pub jobs: u64,
    pub failed_runs: u64,
    /// Retries the baseline's replay says collide that the record shows ran.
    pub collisions_ran: u64,
    pub(super) sigs: Vec<SignatureStats>,
    index: Map<usize>,
    /// Runs per node; the failed ones' signatures by this unit's slot.
    pub(super) nodes: Map<NodeStats>,
    /// The job's slots so far (its signatures counted once each in `jobs`).
    seen: Vec<usize>,
    /// The slot of each failed run of the job last added, in run order (for
    /// [`UnitLearned::add_today`]).
    slots: Vec<usize>,
    /// The job's slots whose [`SignatureStats::collided_cost`] it has added to.
    costed: Vec<usize>,
}

impl UnitLearned {
    /// Counts made elsewhere, as one unit: `(jobs, failed runs, collisions ran)`, the
    /// signatures in the order first met and the nodes (a shard's learning, read back by the
    /// merge).
    pub(super) fn of_counts(
        (jobs, failed_runs, collisions_ran): (u64, u64, u64),
        sigs: Vec<SignatureStats>,
        nodes: Map<NodeStats>,
    ) -> UnitLearned {
        UnitLearned {
            jobs,
            failed_runs,
            collisions_ran,
            sigs,
            nodes,
            ..UnitLearned::default()
        }
    }

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
