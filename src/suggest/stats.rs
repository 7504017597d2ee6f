//! What suggest learns from a history (docs/reference/suggest.md "Per signature"): per
//! signature, its failed runs, jobs, trials and successes by depth, what today's
//! categorizer recorded, what the baseline decided, GPU- and CPU-hours, and nodes; per node,
//! its runs and failures (the suspect nodes' counts).
//!
//! Owns: [`learn_job`] (one job → what it adds, worked out where the job is replayed) and
//! [`Learned`] (the fold of those, in input order, so that the 10,000 signatures kept are
//! the first met in the source whatever the workers). Pure: no I/O; the baseline's decisions
//! come in as the replay's own records, never re-derived here.

use std::collections::{BTreeMap, HashMap};

use crate::engine::job_report::{JobReport, RuleLabel};
use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::{Action, Condition};
use crate::replay::compare::request_time;
use crate::replay::estimate::{wilson, Tally, DEPTHS, Z95};

use super::signature::{signature, Signature};

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

/// One failed run as [`learn_job`] sees it.
#[derive(Debug, Clone)]
pub struct FailedRun {
    pub signature: Signature,
    pub text: String,
    /// Failed runs of the job so far, this one included.
    pub depth: u32,
    /// The next run of the job, when there is one: a trial.
    pub trial: Option<Trial>,
    pub gpu: u128,
    pub cpu: u128,
    /// `category[/subcategory]` as recorded, `none` without one.
    pub recorded: String,
    pub current: Current,
    pub node: Option<String>,
    /// The first line of its message was longer than the template keeps.
    pub cut: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct Trial {
    pub success: bool,
    /// Both runs name a node: whether it is the same one.
    pub same_node: Option<bool>,
    pub gpu: u128,
    pub cpu: u128,
}

/// A run that names a node (any outcome), for the suspect nodes.
#[derive(Debug, Clone)]
pub struct NodeRun {
    pub node: String,
    /// Failed, and not preempted (a preemption is not the node's fault).
    pub failed: bool,
    /// Index into the job's failed runs, for a failed one: its signature.
    pub run: Option<usize>,
}

/// What one job adds.
#[derive(Debug, Clone, Default)]
pub struct JobLearn {
    pub failed: Vec<FailedRun>,
    pub nodes: Vec<NodeRun>,
    /// The job's last recorded run did not succeed: the runs after its failures were futile.
    pub futile: bool,
}

/// `history`'s failed runs and node runs; `baseline`: the baseline's replay of it.
pub fn learn_job(history: &FailureHistory, baseline: Option<&JobReport>) -> JobLearn {
    let gpu_milli = history.job.resources.and_then(|r| r.gpu_milli);
    let cpu_milli = history.job.resources.and_then(|r| r.cpu_milli);
    let mut out = JobLearn {
        futile: history.runs.last().is_some_and(|r| r.outcome != Outcome::Succeeded),
        ..JobLearn::default()
    };
    let mut depth = 0u32;
    for (k, run) in history.runs.iter().enumerate() {
        let failed = run.outcome == Outcome::Failed;
        let mut index = None;
        if failed {
            depth = depth.saturating_add(1);
            let sig = signature(run);
            let cut = match &sig {
                Signature::Container { cut, .. } | Signature::PodError { cut, .. } => *cut,
                _ => false,
            };
            let trial = history.runs.get(k + 1).map(|next| Trial {
                success: next.outcome == Outcome::Succeeded,
                same_node: match (&run.node, &next.node) {
                    (Some(a), Some(b)) => Some(a == b),
                    _ => None,
                },
                gpu: request_time(next.run_for, gpu_milli),
                cpu: request_time(next.run_for, cpu_milli),
            });
            let recorded = match (run.category.as_deref(), run.subcategory.as_deref()) {
                (Some(c), Some(s)) if !c.is_empty() && !s.is_empty() => format!("{c}/{s}"),
                (Some(c), _) if !c.is_empty() => c.to_string(),
                _ => "none".to_string(),
            };
            let current = baseline
                .and_then(|r| r.runs.iter().find(|rec| rec.index == k))
                .and_then(|rec| rec.decision.as_ref().map(|d| (r_policies(baseline), d)))
                .map_or(Current::Undecided, |(policies, d)| Current::Decided {
                    rule: RuleLabel::of(policies, d).map_or_else(|| d.kind.as_str().to_string(), |l| l.to_string()),
                    action: d.action(),
                });
            index = Some(out.failed.len());
            out.failed.push(FailedRun {
                text: sig.text(),
                signature: sig,
                depth,
                trial,
                gpu: request_time(run.run_for, gpu_milli),
                cpu: request_time(run.run_for, cpu_milli),
                recorded,
                current,
                node: run.node.clone(),
                cut,
            });
        }
        if let Some(node) = &run.node {
            out.nodes.push(NodeRun {
                node: node.clone(),
                failed: failed && !run.conditions.contains(&Condition::Preempted),
                run: index,
            });
        }
    }
    out
}

fn r_policies(r: Option<&JobReport>) -> &[String] {
    r.map_or(&[], |r| &r.policies[..])
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
    pub current: HashMap<Current, u64>,
    pub gpu: Hours,
    pub cpu: Hours,
    pub nodes: HashMap<String, u64>,
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

    fn add(&mut self, run: &FailedRun, futile: bool) {
        self.failed_runs += 1;
        if let Some(t) = run.trial {
            let bucket = (run.depth.clamp(1, DEPTHS as u32) - 1) as usize;
            add_tally(&mut self.trials, t.success);
            add_tally(&mut self.by_depth[bucket], t.success);
            self.gpu.after += t.gpu;
            self.cpu.after += t.cpu;
            if futile {
                self.gpu.futile += t.gpu;
                self.cpu.futile += t.cpu;
            }
            match t.same_node {
                Some(true) => add_tally(&mut self.same_node, t.success),
                Some(false) => add_tally(&mut self.other_node, t.success),
                None => {}
            }
        }
        self.gpu.failed += run.gpu;
        self.cpu.failed += run.cpu;
        *self.recorded.entry(run.recorded.clone()).or_default() += 1;
        *self.current.entry(run.current.clone()).or_default() += 1;
        if let Some(node) = &run.node {
            *self.nodes.entry(node.clone()).or_default() += 1;
        }
        self.cut |= run.cut;
    }
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
    pub signatures: HashMap<usize, u64>,
}

/// What a history taught, folded job by job in input order.
#[derive(Debug, Default)]
pub struct Learned {
    pub jobs: u64,
    pub failed_runs: u64,
    /// In the order first met.
    pub signatures: Vec<SignatureStats>,
    index: HashMap<String, usize>,
    /// The runs of signatures past [`MAX_SIGNATURES`].
    pub other: Option<SignatureStats>,
    pub nodes: HashMap<String, NodeStats>,
}

impl Learned {
    pub fn add(&mut self, job: &JobLearn) {
        self.jobs += 1;
        self.failed_runs += job.failed.len() as u64;
        let mut slots = Vec::with_capacity(job.failed.len());
        for (k, run) in job.failed.iter().enumerate() {
            let slot = match self.index.get(&run.text) {
                Some(&i) => i,
                None if self.signatures.len() < MAX_SIGNATURES => {
                    self.index.insert(run.text.clone(), self.signatures.len());
                    self.signatures
                        .push(SignatureStats::new(run.text.clone(), Some(run.signature.clone())));
                    self.signatures.len() - 1
                }
                None => usize::MAX,
            };
            let first_in_job = !slots[..k].contains(&slot);
            slots.push(slot);
            let stats = if slot == usize::MAX {
                self.other
                    .get_or_insert_with(|| SignatureStats::new(OTHER.to_string(), None))
            } else {
                &mut self.signatures[slot]
            };
            stats.add(run, job.futile);
            stats.jobs += u64::from(first_in_job);
        }
        for n in &job.nodes {
            let node = match self.nodes.get_mut(&n.node) {
                Some(node) => node,
                None => self.nodes.entry(n.node.clone()).or_default(),
            };
            node.runs += 1;
            if n.failed {
                node.failed += 1;
                if let Some(run) = n.run {
                    *node.signatures.entry(slots[run]).or_default() += 1;
                }
            }
        }
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
        let job = learn_job(&h, None);
        assert!(!job.futile);
        let mut l = Learned::default();
        l.add(&job);
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
        assert_eq!(e2.undecided(), 1);
        assert_eq!(l.nodes["a"].runs, 2);
        assert_eq!(l.nodes["a"].failed, 2);
        assert_eq!(l.nodes["c"].failed, 0);
    }

    #[test]
    fn signatures_past_the_cap_count_as_other() {
        let mut l = Learned::default();
        for code in 0..(MAX_SIGNATURES as i64 + 5) {
            let mut h = FailureHistory::default();
            h.runs = vec![failed("n", code + 1)];
            l.add(&learn_job(&h, None));
        }
        assert_eq!(l.signatures.len(), MAX_SIGNATURES);
        let other = l.other.as_ref().unwrap();
        assert_eq!((other.failed_runs, other.jobs), (5, 5));
        assert_eq!(l.nodes["n"].signatures[&usize::MAX], 5);
    }
}
