//! The bulk summary of a simulation (SPEC §3.2): jobs by outcome, retries and failures per
//! policy/rule and per decision kind, total delay, jobs whose expectations failed.
//!
//! Owns: accumulation, one job at a time, in memory bounded by the number of distinct rules
//! and a capped list of failing job ids (so a million-job file stays constant-size). Must
//! not: format anything (that is `output::simulate`) or do I/O.

use std::collections::BTreeMap;

use crate::model::duration::GoDuration;
use crate::model::policy::Action;

use super::replay::{rule_ref_label, JobReport, JobStatus};
use super::DecisionKind;

/// How many failing job ids are kept by name; the count is always exact.
pub const MAX_LISTED_JOBS: usize = 50;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub jobs: u64,
    pub runs: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub pending: u64,
    pub retries: u64,
    /// `policy/rule` → retries granted.
    pub retries_by_rule: BTreeMap<String, u64>,
    /// `policy/rule` (or the decision kind when no rule decided) → permanent failures.
    pub failures_by_rule: BTreeMap<String, u64>,
    pub decisions: BTreeMap<DecisionKind, u64>,
    pub total_delay: GoDuration,
    pub expectation_failed_jobs: u64,
    pub expectation_failed_ids: Vec<String>,
    pub contradicted_jobs: u64,
    /// Jobs that could not be simulated (bad line, missing policy).
    pub errors: u64,
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
        self.total_delay = GoDuration(self.total_delay.0.saturating_add(report.total_delay.0));
        for run in &report.runs {
            let Some(d) = &run.decision else { continue };
            *self.decisions.entry(d.kind).or_default() += 1;
            let label = rule_ref_label(&report.policies, d);
            if d.kind == DecisionKind::Retry {
                if let Some(l) = label {
                    bump(&mut self.retries_by_rule, l);
                }
            } else if d.action() == Action::Fail {
                bump(
                    &mut self.failures_by_rule,
                    label.unwrap_or_else(|| format!("({})", d.kind.as_str())),
                );
            }
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
}

fn bump(map: &mut BTreeMap<String, u64>, key: String) {
    // `get_mut` first: the key is usually there, and this avoids nothing but a clone, which
    // matters at a million runs.
    if let Some(v) = map.get_mut(&key) {
        *v += 1;
    } else {
        map.insert(key, 1);
    }
}
