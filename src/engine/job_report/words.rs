//! Decisions, failures, instants and rules in words, shared by every output format so that
//! table and JSON never disagree.
//!
//! Owns: those words ([`explain`], [`describe_failure`], [`format_instant`], [`RuleLabel`],
//! [`plural`]). Must not: decide anything, or know an output format.

use crate::engine::decision::{Decision, DecisionKind};
use crate::engine::rule_ref::RuleRef;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{Outcome, Run, Timestamp};

pub fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `T+2h15m` since submission, or an RFC 3339 time when the submission time is known.
pub fn format_instant(offset: u64, submitted: Option<Timestamp>) -> String {
    JobInstant { offset, submitted }.to_string()
}

/// An instant of a job as [`format_instant`] writes it, for outputs that write it in place.
#[derive(Debug, Clone, Copy)]
pub struct JobInstant {
    /// Nanoseconds since submission.
    pub offset: u64,
    pub submitted: Option<Timestamp>,
}

impl std::fmt::Display for JobInstant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.submitted {
            Some(t) => t.plus(GoDuration(self.offset)).fmt(f),
            None => write!(f, "T+{}", GoDuration(self.offset)),
        }
    }
}

/// The failure of a run in words.
pub fn describe_failure(run: &Run) -> String {
    match run.outcome {
        Outcome::Succeeded => return "succeeded".to_string(),
        Outcome::Cancelled => return "cancelled".to_string(),
        Outcome::LeaseReturned => return "lease returned".to_string(),
        Outcome::Failed => {}
    }
    let mut parts: Vec<String> = run.conditions.iter().map(|c| c.as_str().to_string()).collect();
    for c in run.containers.iter().filter(|c| c.failed()) {
        let init = if c.init { "init container" } else { "container" };
        // An unnamed container (a Lookout import) reads `container exit 137`.
        let who = match c.name() {
            Some(name) => format!("{init} {name}"),
            None => init.to_string(),
        };
        match c.reason.as_deref() {
            Some("OOMKilled") => parts.push(format!("{who} OOMKilled (exit {})", c.exit_code)),
            _ => parts.push(format!("{who} exit {}", c.exit_code)),
        }
    }
    if let Some(cat) = &run.category {
        match &run.subcategory {
            Some(sub) => parts.push(format!("category {cat}/{sub}")),
            None => parts.push(format!("category {cat}")),
        }
    }
    if parts.is_empty() {
        "failed (no signal)".to_string()
    } else {
        parts.join(", ")
    }
}

/// The decision in words, saying both retries and attempts.
pub fn explain(d: &Decision, rule: Option<&str>, max_attempted_runs: u32, attempts: usize, enabled: bool) -> String {
    let rule = rule.unwrap_or("?");
    match d.kind {
        DecisionKind::Retry => {
            let (n, l) = (d.counter.unwrap_or(0), d.limit.unwrap_or(0));
            format!(
                "retry {n} of {l} under {rule} (attempt {} of {}); {} of {} retries overall",
                u64::from(n) + 1,
                u64::from(l) + 1,
                d.total_retries,
                d.global_max_retries
            )
        }
        DecisionKind::FailRule => format!("rule {rule} says Fail"),
        DecisionKind::FailRuleLimit => format!(
            "rule {rule} limit {} reached ({} used, attempt {} of {})",
            d.limit.unwrap_or(0),
            plural(u64::from(d.counter.unwrap_or(0)), "retry", "retries"),
            u64::from(d.counter.unwrap_or(0)) + 1,
            u64::from(d.limit.unwrap_or(0)) + 1
        ),
        DecisionKind::FailGlobalLimit if d.global_max_retries == 0 => {
            "retries disabled: globalMaxRetries is 0 (kill switch)".to_string()
        }
        DecisionKind::FailGlobalLimit => format!(
            "global limit {} reached ({} used; rule {rule})",
            d.global_max_retries,
            plural(u64::from(d.total_retries), "retry", "retries")
        ),
        DecisionKind::FailDefault => "no rule matched and no policy has defaultAction Retry".to_string(),
        DecisionKind::FailFast => "failFast job: the first failure is final".to_string(),
        DecisionKind::LegacyFail if !enabled => "retry policies disabled: a failed run is final (legacy)".to_string(),
        DecisionKind::LegacyFail if attempts as u64 >= u64::from(max_attempted_runs) && d.signal.is_none() => {
            format!("no retry policy applies: a failed run is final, and a returned lease only requeues below maxAttemptedRuns {max_attempted_runs} (legacy, attempt {attempts})")
        }
        DecisionKind::LegacyFail => "no retry policy applies: a failed run is final (legacy)".to_string(),
        DecisionKind::LegacyRequeue => {
            format!("lease returned: requeued (legacy, attempt {attempts} of {max_attempted_runs})")
        }
        DecisionKind::LeaseReturned => "lease returned before the run started: requeued, no budget used".to_string(),
        DecisionKind::Cancelled => "cancelled: never retried".to_string(),
        DecisionKind::FailPolicyLimit => format!(
            "policy limit {} of {rule} reached ({} used)",
            d.limit.unwrap_or(0),
            plural(u64::from(d.counter.unwrap_or(0)), "retry", "retries")
        ),
        DecisionKind::Preempted => "preempted: the job ends".to_string(),
    }
}

/// `RuleRef` label helper for outputs.
pub fn rule_ref_label(policies: &[String], d: &Decision) -> Option<String> {
    RuleLabel::of(policies, d).map(|l| l.to_string())
}

/// `policy/rule` (`infra/0`, `infra/default`) of a decision, for outputs that write it in place.
#[derive(Debug, Clone, Copy)]
pub struct RuleLabel<'a> {
    pub policy: &'a str,
    pub rule: RuleRef,
}

impl<'a> RuleLabel<'a> {
    /// The label of `d`, whose policy index is into `policies`; `None` without a rule.
    pub fn of(policies: &'a [String], d: &Decision) -> Option<RuleLabel<'a>> {
        Some(RuleLabel {
            policy: policies.get(d.policy?)?,
            rule: d.rule?,
        })
    }
}

impl std::fmt::Display for RuleLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.policy, self.rule)
    }
}
