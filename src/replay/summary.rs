//! The bulk summary of a simulation (docs/simulate.md): jobs by outcome, retries and failures per
//! policy/rule and per decision kind, total delay, jobs whose expectations failed.
//!
//! Owns: accumulation, one job at a time, in memory bounded by the number of distinct rules
//! and a capped list of failing job ids (so a million-job file stays constant-size). Must
//! not: format anything (that is `output`) or do I/O.

use std::collections::BTreeMap;

use crate::engine::job_report::RuleLabel;
use crate::engine::{DecisionKind, JobReport, JobStatus, RuleRef};
use crate::model::duration::{GoDuration, TotalDuration};
use crate::model::failure_history::Resources;
use crate::model::policy::Action;

use super::categorize::CategoryCounts;
use super::compare::{add_device_time, request_time, Overflow};
use super::recorded::Recorded;

/// How many failing job ids are kept by name; the count is always exact.
pub const MAX_LISTED_JOBS: usize = 50;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub jobs: u64,
    pub runs: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub pending: u64,
    pub retries: u64,
    /// Policy name → its rules' counts. Keyed by name and index, so that counting a run
    /// builds no string (the `policy/rule` labels are made once, for output). A list: a
    /// handful of policies, where a linear scan beats hashing the name per run.
    by_policy: Vec<(String, RuleCounts)>,
    /// Decision kind → permanent failures no rule decided.
    failures_by_kind: Counts,
    /// Decision kind → decisions.
    decisions: Counts,
    pub total_delay: TotalDuration,
    /// The run time of every run the policies start (docs/estimates.md): the runs
    /// `replayed`, which the record (`recorded`) may hold more of.
    pub compute: TotalDuration,
    /// The same × the job's GPU and CPU requests, in nanoseconds × thousandths.
    pub gpu: u128,
    pub cpu: u128,
    /// Jobs that ran, or are Pending, and request neither CPU nor GPU.
    pub without_resources: u64,
    pub expectation_failed_jobs: u64,
    pub expectation_failed_ids: Vec<String>,
    pub contradicted_jobs: u64,
    /// Jobs that could not be simulated (bad line, missing policy).
    pub errors: u64,
    /// The first job whose GPU or CPU time took a sum past 128 bits (`Overflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
    /// The record's own totals (`replay::recorded`), set once at the end by the fold,
    /// which counts them beside the trials; empty in the workers' summaries.
    #[serde(default, skip_serializing_if = "Recorded::is_empty")]
    pub recorded: Recorded,
    /// With the executor's categorizer: what it changed, and the collisions. Counted by the
    /// replay's workers (not from the reports, which do not hold the recorded categories)
    /// and set once at the end; `None` without a categorizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Box<CategoryCounts>>,
    /// With contention on (docs/contention.md): the record's and the replayed side's, swept
    /// once at the end and set then; `None` when off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Box<crate::replay::contention::OfReplay>>,
    /// Not computed: the default left it out of a sharded run, and the answer says so where
    /// the section would be ([`Options::contention_sharded`](crate::replay::run::Options)).
    #[serde(skip)]
    pub contention_sharded: bool,
}

/// Drops what the summary does not read (the per-run texts, nodes, pod names), so that a
/// worker frees them in parallel instead of the single thread that writes the records and
/// folds the summary (`-o json|yaml|jsonl`, once the record is rendered). What is left is
/// also what a [`Detail::Summary`] replay must get right: tests compare through it.
///
/// [`Detail::Summary`]: crate::engine::Detail::Summary
pub fn keep_summary_fields(report: &mut JobReport) {
    for run in &mut report.runs {
        run.pod_name = String::new();
        run.failure = String::new();
        run.reason = String::new();
        run.node = None;
        if let Some(d) = &mut run.decision {
            d.signal = None;
            d.avoid_nodes = Vec::new();
            d.next_pod_name = None;
        }
    }
    if let crate::engine::JobStatus::Failed { reason, .. } = &mut report.status {
        *reason = String::new();
    }
}

/// Retries granted and permanent failures per rule of one policy, by rule [`slot`].
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct RuleCounts {
    retries: Counts,
    failures: Counts,
}

/// The default action in slot 0, rule `i` in slot `i + 1`.
fn slot(r: RuleRef) -> usize {
    match r {
        RuleRef::Default => 0,
        RuleRef::Index(i) => i + 1,
    }
}

/// The rule of a [`slot`].
fn rule_at(slot: usize) -> RuleRef {
    slot.checked_sub(1).map_or(RuleRef::Default, RuleRef::Index)
}

/// A count per index (a decision kind as `usize`, or a rule's [`slot`]): counting a run is
/// one addition, where a `BTreeMap` entry per run was most of [`Summary::add`]. An index
/// counted zero times was never seen. Only as long as the highest index counted, so equal
/// counts compare equal.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Counts(Vec<u64>);

impl Counts {
    fn add(&mut self, i: usize, n: u64) {
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] += n;
    }

    fn get(&self, i: usize) -> u64 {
        self.0.get(i).copied().unwrap_or(0)
    }

    fn merge(&mut self, other: &Counts) {
        for (i, n) in other.iter() {
            self.add(i, n);
        }
    }

    /// (index, count) of the indices seen, in increasing order.
    fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.0.iter().copied().enumerate().filter(|&(_, n)| n > 0)
    }

    /// [`Counts::iter`] of counts indexed by decision kind (`DecisionKind::ALL` lists the
    /// kinds in declaration order, so `ALL[k as usize] == k`).
    fn kinds(&self) -> impl Iterator<Item = (DecisionKind, u64)> + '_ {
        self.iter().map(|(i, n)| (DecisionKind::ALL[i], n))
    }
}

/// `policy/rule` of a rule's [`slot`].
fn label(policy: &str, slot: usize) -> String {
    RuleLabel {
        policy,
        rule: rule_at(slot),
    }
    .to_string()
}

impl Summary {
    pub fn add(&mut self, report: &JobReport) {
        self.jobs += 1;
        self.runs += report.runs.len() as u64;
        match report.status {
            JobStatus::Succeeded { .. } => self.succeeded += 1,
            JobStatus::Failed { .. } => self.failed += 1,
            JobStatus::Cancelled { .. } => self.cancelled += 1,
            JobStatus::Pending { .. } => self.pending += 1,
        }
        self.retries += u64::from(report.retries);
        self.total_delay.add(report.total_delay);
        // One pass over the runs (their run time and their decisions): a shard's partial
        // adds both sides of every job, where `-o json` adds none.
        // Run by run into the 128-bit sums: a job's own runs may add up past 64 bits.
        let mut ran = false;
        let r = report.resources.as_ref();
        let (gpu, cpu) = (r.and_then(|r| r.gpu_milli), r.and_then(|r| r.cpu_milli));
        // The job's last policy (its index among the report's) and its row here: a job's
        // runs are mostly decided by one policy, whose name is then compared once, not per run.
        let mut last: Option<(usize, usize)> = None;
        for run in &report.runs {
            let run_time = GoDuration(run.ended_at.saturating_sub(run.started_at));
            ran |= run_time.0 > 0;
            self.compute.add(run_time);
            let (job, o) = (report.job_id.as_str(), &mut self.overflow);
            add_device_time(&mut self.gpu, request_time(run_time, gpu), o, "GPU time", job);
            add_device_time(&mut self.cpu, request_time(run_time, cpu), o, "CPU time", job);
            let Some(d) = &run.decision else { continue };
            self.decisions.add(d.kind as usize, 1);
            let retry = d.kind == DecisionKind::Retry;
            if !retry && d.action() != Action::Fail {
                continue;
            }
            // The rule's policy (its index among the report's, its row here), and the rule.
            let decided = match (d.policy, d.rule) {
                (Some(p), Some(rule)) => match last {
                    Some((q, i)) if q == p => Some((p, i, rule)),
                    _ => report.policies.get(p).map(|policy| (p, self.policy_row(policy), rule)),
                },
                _ => None,
            };
            let Some((p, i, rule)) = decided else {
                if !retry {
                    self.failures_by_kind.add(d.kind as usize, 1);
                }
                continue;
            };
            last = Some((p, i));
            let counts = &mut self.by_policy[i].1;
            let counts = if retry {
                &mut counts.retries
            } else {
                &mut counts.failures
            };
            counts.add(slot(rule), 1);
        }
        let pending = matches!(report.status, JobStatus::Pending { .. });
        if (ran || pending) && Resources::is_none(r) {
            self.without_resources += 1;
        }
        if !report.expectation_failures.is_empty() {
            self.expectation_failed_jobs += 1;
            if self.expectation_failed_ids.len() < MAX_LISTED_JOBS {
                self.expectation_failed_ids.push(report.job_id.clone());
            }
        }
        if !report.contradictions.is_empty() {
            self.contradicted_jobs += 1;
        }
    }

    /// The place of `policy`'s counts in `by_policy`, made when new.
    fn policy_row(&mut self, policy: &str) -> usize {
        match self.by_policy.iter().position(|(name, _)| name == policy) {
            Some(i) => i,
            None => {
                self.by_policy.push((policy.to_string(), RuleCounts::default()));
                self.by_policy.len() - 1
            }
        }
    }

    /// Decisions per kind, in `DecisionKind` order: the kinds seen only.
    pub fn decisions(&self) -> impl Iterator<Item = (DecisionKind, u64)> + '_ {
        self.decisions.kinds()
    }

    /// Decisions of `kind` (0 when none).
    pub fn decision_count(&self, kind: DecisionKind) -> u64 {
        self.decisions.get(kind as usize)
    }

    /// Adds `other`, the summary of the jobs that follow (a worker's unit): the same as
    /// having added its jobs here one by one (the listed ids stay the first ones).
    pub fn merge(&mut self, other: Summary) {
        self.jobs += other.jobs;
        self.runs += other.runs;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.cancelled += other.cancelled;
        self.pending += other.pending;
        self.retries += other.retries;
        for (policy, counts) in other.by_policy {
            match self.by_policy.iter_mut().find(|(p, _)| *p == policy) {
                Some((_, mine)) => {
                    mine.retries.merge(&counts.retries);
                    mine.failures.merge(&counts.failures);
                }
                None => self.by_policy.push((policy, counts)),
            }
        }
        self.failures_by_kind.merge(&other.failures_by_kind);
        self.decisions.merge(&other.decisions);
        // Saturating sums of non-negative numbers: the grouping does not change the result.
        self.total_delay.add_total(other.total_delay);
        self.compute.add_total(other.compute);
        if self.overflow.is_none() {
            self.overflow = other.overflow;
        }
        let over = &mut self.overflow;
        add_device_time(&mut self.gpu, other.gpu, over, "GPU time", "");
        add_device_time(&mut self.cpu, other.cpu, over, "CPU time", "");
        self.without_resources += other.without_resources;
        self.recorded.merge(&other.recorded);
        self.expectation_failed_jobs += other.expectation_failed_jobs;
        let room = MAX_LISTED_JOBS.saturating_sub(self.expectation_failed_ids.len());
        self.expectation_failed_ids
            .extend(other.expectation_failed_ids.into_iter().take(room));
        self.contradicted_jobs += other.contradicted_jobs;
        self.errors += other.errors;
    }

    /// `policy/rule` → retries granted.
    pub fn retries_by_rule(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (p, c) in &self.by_policy {
            for (slot, n) in c.retries.iter() {
                out.insert(label(p, slot), n);
            }
        }
        out
    }

    /// `policy/rule` (or `(decision kind)` when no rule decided) → permanent failures.
    pub fn failures_by_rule(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (p, c) in &self.by_policy {
            for (slot, n) in c.failures.iter() {
                out.insert(label(p, slot), n);
            }
        }
        for (k, n) in self.failures_by_kind.kinds() {
            out.insert(format!("({})", k.as_str()), n);
        }
        out
    }
}
