//! What suggest learns from a history (docs/reference/suggest.md "Per signature"): per
//! signature, its failed runs, jobs, trials and successes by depth, what today's
//! categorizer recorded, what the baseline decided, GPU- and CPU-hours, and nodes; per node,
//! its runs and failures (the suspect nodes' counts).
//!
//! Owns: [`UnitLearned`] (what a worker's unit of jobs adds) and [`Learned`] (the fold of
//! those, in input order, so that the 10,000 signatures kept are the first met in the
//! source whatever the workers), and the baseline's decisions per signature ([`Current`],
//! counted from the comparison's own decision records by `commands::suggest`). A sharded
//! suggest (docs/past-one-machine.md) learns each shard's share [`Learned::uncapped`] and
//! hands it to `merge` as a [`ShardLearned`], which folds the shards in the source's order
//! ([`Learned::merge_shard`]): the cap is applied there, once, as one process applies it.
//! Pure: no I/O.

use std::collections::{BTreeMap, HashMap};

use crate::diag::quote;
use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::{Action, Condition};
use crate::replay::compare::request_time;
use crate::replay::estimate::{wilson, Tally, DEPTHS, Z95};

use super::signature::{signature, text_into, Signature};

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
    sigs: Vec<SignatureStats>,
    index: Map<usize>,
    /// Runs per node; the failed ones' signatures by this unit's slot.
    nodes: Map<NodeStats>,
    text: String,
    scratch: String,
    /// The job's slots so far (its signatures counted once each in `jobs`).
    seen: Vec<usize>,
    /// The slot of each failed run of the job last added, in run order (for
    /// [`UnitLearned::add_today`]).
    slots: Vec<usize>,
}

impl UnitLearned {
    /// Counts one job's failed runs and node runs.
    pub fn add_job(&mut self, history: &FailureHistory) {
        self.jobs += 1;
        let gpu_milli = history.job.resources.and_then(|r| r.gpu_milli);
        let cpu_milli = history.job.resources.and_then(|r| r.cpu_milli);
        let futile = history.runs.last().is_some_and(|r| r.outcome != Outcome::Succeeded);
        self.seen.clear();
        self.slots.clear();
        let mut depth = 0u32;
        for (k, run) in history.runs.iter().enumerate() {
            let failed = run.outcome == Outcome::Failed;
            let mut slot = None;
            if failed {
                self.failed_runs += 1;
                depth = depth.saturating_add(1);
                let cut = text_into(run, &mut self.text, &mut self.scratch);
                let at = match self.index.get(self.text.as_str()) {
                    Some(&i) => i,
                    None => {
                        self.index.insert(self.text.clone(), self.sigs.len());
                        self.sigs
                            .push(SignatureStats::new(self.text.clone(), Some(signature(run))));
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
                stats.gpu.failed += request_time(run.run_for, gpu_milli);
                stats.cpu.failed += request_time(run.run_for, cpu_milli);
                count_recorded(&mut stats.recorded, category_of(run));
                if let Some(node) = &run.node {
                    match stats.nodes.get_mut(node.as_str()) {
                        Some(n) => *n += 1,
                        None => {
                            stats.nodes.insert(node.clone(), 1);
                        }
                    }
                }
                if let Some(next) = next {
                    let success = next.outcome == Outcome::Succeeded;
                    let bucket = (depth.clamp(1, DEPTHS as u32) - 1) as usize;
                    add_tally(&mut stats.trials, success);
                    add_tally(&mut stats.by_depth[bucket], success);
                    let (g, c) = (
                        request_time(next.run_for, gpu_milli),
                        request_time(next.run_for, cpu_milli),
                    );
                    stats.gpu.after += g;
                    stats.cpu.after += c;
                    if futile {
                        stats.gpu.futile += g;
                        stats.cpu.futile += c;
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
    /// it has one), and `today(k)` the baseline's decision of run `k`. Counted per signature
    /// into `current` and `seen`: the proposal keeps what decided them (docs/suggest.md "Today's
    /// policy is the starting point").
    pub fn add_today(&mut self, history: &FailureHistory, mut today: impl FnMut(usize) -> Current) {
        let mut slots = self.slots.iter();
        for (k, run) in history.runs.iter().enumerate() {
            if run.outcome != Outcome::Failed {
                continue;
            }
            let Some(&at) = slots.next() else { break };
            let stats = &mut self.sigs[at];
            *stats.current.entry(today(k)).or_default() += 1;
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

/// `recorded[C[/S] | none] += 1`, allocating only for a label not met before.
fn count_recorded(map: &mut BTreeMap<String, u64>, recorded: Option<(&str, Option<&str>)>) {
    let mut label = String::new();
    let key: &str = match recorded {
        None => "none",
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

/// Hours of work, in nanoseconds × thousandths of a device (exact whatever the order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hours {
    pub failed: u128,
    pub after: u128,
    pub futile: u128,
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
            h.failed += oh.failed;
            h.after += oh.after;
            h.futile += oh.futile;
        }
        for (k, v) in o.nodes {
            *self.nodes.entry(k).or_default() += v;
        }
        merge_tally(&mut self.same_node, o.same_node);
        merge_tally(&mut self.other_node, o.other_node);
        self.cut |= o.cut;
    }
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
    /// In the order first met.
    pub signatures: Vec<SignatureStats>,
    index: Map<usize>,
    /// The runs of signatures past [`MAX_SIGNATURES`].
    pub other: Option<SignatureStats>,
    pub nodes: Map<NodeStats>,
    /// A shard's learning: every signature kept. A signature a shard meets past the cap may
    /// be among the first 10,000 of the whole source (an earlier shard met it), so only the
    /// merge, which has them all in order, may send runs to `other`.
    uncapped: bool,
}

impl Learned {
    /// A shard's learning: no cap (see the field).
    pub fn uncapped() -> Learned {
        Learned {
            uncapped: true,
            ..Learned::default()
        }
    }

    /// What a shard learned ([`Learned::uncapped`]: it has no `other`), for its partial: its
    /// signatures in the order first met, its nodes by name (sorted: the same learning, the
    /// same bytes).
    pub fn to_shard(&self) -> ShardLearned {
        let signatures = self
            .signatures
            .iter()
            .map(|s| {
                let mut nodes: Vec<(String, u64)> = s.nodes.iter().map(|(n, k)| (n.clone(), *k)).collect();
                nodes.sort();
                SignatureOut {
                    text: s.text.clone(),
                    signature: s.signature.clone(),
                    failed_runs: s.failed_runs,
                    jobs: s.jobs,
                    trials: s.trials,
                    by_depth: s.by_depth,
                    recorded: s.recorded.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                    current: current_out(&s.current),
                    seen: s.seen.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                    gpu: [s.gpu.failed, s.gpu.after, s.gpu.futile],
                    cpu: [s.cpu.failed, s.cpu.after, s.cpu.futile],
                    nodes,
                    same_node: s.same_node,
                    other_node: s.other_node,
                    cut: s.cut,
                }
            })
            .collect();
        let mut nodes: Vec<NodeOut> = self
            .nodes
            .iter()
            .map(|(name, n)| {
                let mut sigs: Vec<(usize, u64)> = n.signatures.iter().map(|(k, v)| (*k, *v)).collect();
                sigs.sort_unstable();
                NodeOut(name.clone(), n.runs, n.failed, sigs)
            })
            .collect();
        nodes.sort_by(|a, b| a.0.cmp(&b.0));
        ShardLearned {
            jobs: self.jobs,
            failed_runs: self.failed_runs,
            signatures,
            nodes,
        }
    }

    /// Adds a shard's learning, as one unit of the source (shards in the source's order: the
    /// 10,000 kept are the first met in the whole source). `Err`: the shard's nodes name a
    /// signature it does not list (its partial was edited), nothing added.
    pub fn merge_shard(&mut self, shard: ShardLearned) -> Result<(), String> {
        let count = shard.signatures.len();
        if let Some(slot) = shard
            .nodes
            .iter()
            .flat_map(|n| n.3.iter().map(|(slot, _)| *slot))
            .find(|&slot| slot >= count)
        {
            return Err(format!(
                "its totals' nodes name signature {slot}, and it lists {count} signatures"
            ));
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
        let sigs = shard
            .signatures
            .into_iter()
            .map(|s| -> Result<SignatureStats, String> {
                Ok(SignatureStats {
                    text: s.text,
                    signature: s.signature,
                    failed_runs: s.failed_runs,
                    jobs: s.jobs,
                    trials: s.trials,
                    by_depth: s.by_depth,
                    recorded: s.recorded.into_iter().collect(),
                    current: current_in(s.current)?,
                    seen: s.seen.into_iter().collect(),
                    gpu: Hours {
                        failed: s.gpu[0],
                        after: s.gpu[1],
                        futile: s.gpu[2],
                    },
                    cpu: Hours {
                        failed: s.cpu[0],
                        after: s.cpu[1],
                        futile: s.cpu[2],
                    },
                    nodes: s.nodes.into_iter().collect(),
                    same_node: s.same_node,
                    other_node: s.other_node,
                    cut: s.cut,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let nodes = shard
            .nodes
            .into_iter()
            .map(|NodeOut(name, runs, failed, sigs)| {
                let stats = NodeStats {
                    runs,
                    failed,
                    signatures: sigs.into_iter().collect(),
                };
                (name, stats)
            })
            .collect();
        self.merge_unit(UnitLearned {
            jobs: shard.jobs,
            failed_runs: shard.failed_runs,
            sigs,
            nodes,
            ..UnitLearned::default()
        });
        Ok(())
    }

    /// Adds a unit's counts (units in the source's order: the 10,000 kept are the first
    /// met). A signature past the cap counts under `other`; a job with two such signatures
    /// counts in `other`'s `jobs` once per signature.
    pub fn merge_unit(&mut self, unit: UnitLearned) {
        self.jobs += unit.jobs;
        self.failed_runs += unit.failed_runs;
        let mut global = Vec::with_capacity(unit.sigs.len());
        for stats in unit.sigs {
            let slot = match self.index.get(stats.text.as_str()) {
                Some(&i) => i,
                None if self.uncapped || self.signatures.len() < MAX_SIGNATURES => {
                    self.index.insert(stats.text.clone(), self.signatures.len());
                    self.signatures
                        .push(SignatureStats::new(stats.text.clone(), stats.signature.clone()));
                    self.signatures.len() - 1
                }
                None => usize::MAX,
            };
            global.push(slot);
            let into = if slot == usize::MAX {
                self.other
                    .get_or_insert_with(|| SignatureStats::new(OTHER.to_string(), None))
            } else {
                &mut self.signatures[slot]
            };
            into.merge(stats);
        }
        for (name, n) in unit.nodes {
            let node = self.nodes.entry(name).or_default();
            node.runs += n.runs;
            node.failed += n.failed;
            for (local, k) in n.signatures {
                *node.signatures.entry(global[local]).or_default() += k;
            }
        }
    }

    /// The slot of a signature's text: its index in [`Learned::signatures`], `usize::MAX`
    /// for `other`.
    pub fn slot_of(&self, text: &str) -> usize {
        self.index.get(text).copied().unwrap_or(usize::MAX)
    }

    /// Every signature's counts, `other` last, sorted as the docs say: hours (GPU, then
    /// CPU, failed + after) descending, then failed runs descending, then signature.
    pub fn sorted(&self) -> Vec<&SignatureStats> {
        let mut v: Vec<&SignatureStats> = self.signatures.iter().chain(self.other.as_ref()).collect();
        v.sort_by(|a, b| {
            (b.gpu.failed + b.gpu.after)
                .cmp(&(a.gpu.failed + a.gpu.after))
                .then((b.cpu.failed + b.cpu.after).cmp(&(a.cpu.failed + a.cpu.after)))
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

/// A shard's learning as its partial holds it ([`Learned::to_shard`]): every signature it
/// met, in the order first met, and its nodes, whose failed runs name signatures by their
/// place in that list.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardLearned {
    pub jobs: u64,
    pub failed_runs: u64,
    signatures: Vec<SignatureOut>,
    nodes: Vec<NodeOut>,
}

/// A signature's counts in a partial. Maps keyed by the history's words (categories, nodes)
/// are lists of pairs: a partial's numbers are checked by their field's name, and a category
/// named `trials` must not read as one.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SignatureOut {
    text: String,
    /// `None` only for [`OTHER`], which a shard never has (it keeps every signature).
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
    /// [`Hours`] as `[failed, after, futile]`: 128-bit sums, under the names the partial's
    /// checks know as 128-bit.
    #[serde(rename = "gpu_milli")]
    gpu: [u128; 3],
    #[serde(rename = "cpu_milli")]
    cpu: [u128; 3],
    nodes: Vec<(String, u64)>,
    same_node: Tally,
    other_node: Tally,
    cut: bool,
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
        unit.add_job(&h);
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
            unit.add_job(&h);
            l.merge_unit(unit);
        }
        assert_eq!(l.signatures.len(), MAX_SIGNATURES);
        let other = l.other.as_ref().unwrap();
        assert_eq!((other.failed_runs, other.jobs), (5, 5));
        assert_eq!(l.nodes["n"].signatures[&usize::MAX], 5);
    }

    type Said = (
        Vec<(String, u64, u64)>,
        Option<(u64, u64)>,
        Vec<(String, u64, Vec<(String, u64)>)>,
    );

    /// What a learning says, comparable: each signature's text and counts in order, `other`'s,
    /// and each node's failed runs by signature text.
    fn said(l: &Learned) -> Said {
        let sigs = l
            .signatures
            .iter()
            .map(|s| (s.text.clone(), s.failed_runs, s.jobs))
            .collect();
        let other = l.other.as_ref().map(|o| (o.failed_runs, o.jobs));
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
                (name.clone(), n.failed, by)
            })
            .collect();
        nodes.sort();
        (sigs, other, nodes)
    }

    #[test]
    fn shards_keep_every_signature_and_the_merge_caps_in_source_order() {
        let job = |code: i64| FailureHistory {
            runs: vec![failed("n", code), failed("m", code), succeeded("n")],
            ..FailureHistory::default()
        };
        // Shard 0 meets `exit:7` first; shard 1 meets 10,000 other signatures, then `exit:7`
        // again, then one more new one. In the whole source `exit:7` is the first met: a
        // shard that capped its own list would have put its second half under `other`.
        let shard0 = vec![job(7)];
        let mut shard1: Vec<FailureHistory> = (0..MAX_SIGNATURES as i64).map(|k| job(1000 + k)).collect();
        shard1.push(job(7));
        shard1.push(job(5));
        let mut one = Learned::default();
        for h in shard0.iter().chain(&shard1) {
            let mut unit = UnitLearned::default();
            unit.add_job(h);
            one.merge_unit(unit);
        }
        let mut merged = Learned::default();
        for shard in [&shard0, &shard1] {
            let mut learned = Learned::uncapped();
            for h in shard {
                let mut unit = UnitLearned::default();
                unit.add_job(h);
                learned.merge_unit(unit);
            }
            // Through the partial's JSON, as `merge` reads it.
            let json = serde_json::to_string(&learned.to_shard()).unwrap();
            merged.merge_shard(serde_json::from_str(&json).unwrap()).unwrap();
        }
        assert_eq!(one.signatures[0].text, "exit:7@main");
        assert_eq!((one.signatures[0].failed_runs, one.signatures[0].jobs), (4, 2));
        assert_eq!(one.signatures.len(), MAX_SIGNATURES);
        // The last of shard 1's 10,000 and `exit:5` are past the cap.
        assert_eq!(one.other.as_ref().map(|o| (o.failed_runs, o.jobs)), Some((4, 2)));
        assert_eq!(said(&merged), said(&one));
        assert_eq!((merged.jobs, merged.failed_runs), (one.jobs, one.failed_runs));
        let (a, b) = (&merged.signatures[0], &one.signatures[0]);
        assert_eq!(
            (a.trials, a.by_depth, a.gpu, a.same_node, a.other_node),
            (b.trials, b.by_depth, b.gpu, b.same_node, b.other_node)
        );
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
