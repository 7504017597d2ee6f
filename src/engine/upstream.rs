//! The upstream engine (docs/engines.md): the decisions of the retry engine Armada ships today
//! (upstream commit `207cc9e`, `internal/scheduler/retry/engine.go` and the gates of
//! `internal/scheduler/scheduler.go`), for operators
//! whose scheduler is that one rather than the design engine's.
//!
//! Owns: the upstream policy choice (the queue's first policy only), the gates that send a
//! job down the legacy path, `FailureCount` budgeting, engine.go's checks in its exact
//! order (one function per check), and upstream's reason strings. Shares with the design
//! engine only what is really shared: the records ([`Decision`], [`JobState`]), pod names,
//! the signal's words ([`Signal`]) and the memory bump ([`apply_memory_bump`]).
//!
//! Must not: do I/O, read a clock or the environment. It never reads what upstream cannot
//! store (conditions, exit codes, messages, backoff, anti-affinity, per-rule limits): the
//! command refuses such policies before replaying (`RetryPolicy::upstream_incompatibilities`).
//!
//! Decisions where upstream's code leaves a choice to a replayer:
//! - a preempted run ends the job whatever the settings (upstream's preemption path never
//!   reaches the retry engine), as decision kind `preempted`;
//! - a returned lease is an attempted run (upstream's executor reports `runAttempted: true`
//!   for every lease it returns except a pod that could not be scheduled, which a history
//!   cannot tell apart), so its legacy requeue adds a `NotIn` for every attempted node, its
//!   own included (`scheduler.go` `addNodeAntiAffinitiesForAttemptedRunsIfSchedulable`);
//! - the `NotIn` stays on the job: a later retry without `avoidSameNode`, and a lease-expiry
//!   retry, add nothing but keep what is avoided. Every record's `avoid_nodes` is the job's
//!   avoided nodes after the decision, a final one's included;
//! - every run keeps the pod name `armada-<jobId>-0` (upstream's executor reuses it).

use crate::model::failure_history::{Outcome, Run};
use crate::model::policy::{Action, Condition};

use super::decision::{pod_name, Decision, DecisionKind};
use super::inputs::Settings;
use super::job_state::{JobContext, JobState};
use super::matcher::{CompiledPolicy, Signal};
use super::memory_bump::apply_memory_bump;
use super::rule_ref::RuleRef;

/// Lease expiry as upstream's scheduler reports it (category / subcategory).
pub const LEASE_EXPIRED: (&str, &str) = ("internal", "lease-expired");

/// Per-job facts only the upstream engine reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct UpstreamJob {
    /// `job.gang.cardinality > 1`: gangs are never retried by the engine.
    pub gang: bool,
}

/// Evaluates one finished, non-succeeded run as upstream does and updates `state`.
///
/// `policy` is the queue's first policy (else the default policy), `None` for legacy.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    policy: Option<&CompiledPolicy>,
    settings: &Settings,
    job: &JobContext<'_>,
    upstream: UpstreamJob,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Decision {
    let global = settings.global_max_retries;
    // Every record lists the job's avoided nodes after the decision, whichever path decided.
    let mut d = 'decided: {
        if run.outcome == Outcome::Cancelled {
            break 'decided Decision::fail(DecisionKind::Cancelled, state, global);
        }
        if run.conditions.contains(&Condition::Preempted) {
            break 'decided Decision::fail(DecisionKind::Preempted, state, global);
        }
        if let Some(node) = &run.node {
            if !state.nodes_attempted.contains(node) {
                state.nodes_attempted.push(node.clone());
            }
        }
        let policy = match legacy_gate(policy, settings, job, upstream, run) {
            Ok(p) => p,
            Err(()) => {
                break 'decided legacy(
                    policy.is_some() && settings.enabled,
                    settings,
                    job,
                    state,
                    run,
                    run_index,
                    failed_at,
                )
            }
        };
        // FailureCount: failed runs so far, this one included; preempted and returned runs
        // never reach this point, so they never count. Lease expiry does.
        state.failures += 1;
        let used = state.failures - 1;
        let base = |kind| Decision {
            policy: Some(0),
            counter: Some(used),
            ..Decision::fail(kind, state, global)
        };
        // The record's limit is the policy's, as at every engine evaluation; the global one
        // has its own field (`global_max_retries`).
        let limit = policy.policy.retry_limit.unwrap_or(0);
        if let Some(kind) = global_limit(used, global) {
            break 'decided Decision {
                limit: Some(limit),
                ..base(kind)
            };
        }
        let matched = first_matching_rule(policy, run);
        let action = matched.map_or(policy.policy.default_action(), |r| policy.policy.rules[r].action);
        let rule_ref = matched.map_or(RuleRef::Default, RuleRef::Index);
        // An upstream rule matches on the run's category (and subcategory) alone: the signal
        // is the design engine's for such a rule, in the same words.
        let signal = Some(
            match matched {
                Some(_) => Signal::Rule {
                    condition: None,
                    exit: None,
                    message: None,
                    category: Some(true),
                },
                None => Signal::NoRuleMatched,
            }
            .to_text(run),
        );
        if action == Action::Fail {
            let kind = if matched.is_some() {
                DecisionKind::FailRule
            } else {
                DecisionKind::FailDefault
            };
            break 'decided Decision {
                rule: Some(rule_ref),
                signal,
                ..base(kind)
            };
        }
        if used >= limit {
            break 'decided Decision {
                rule: Some(rule_ref),
                signal,
                limit: Some(limit),
                ..base(DecisionKind::FailPolicyLimit)
            };
        }
        retry(
            policy, settings, job, state, run, run_index, failed_at, rule_ref, signal, limit,
        )
    };
    d.avoid_nodes = state.nodes_attempted[..state.nodes_avoided].to_vec();
    d
}

/// scheduler.go's gates, in order: no policy, gang, failFast, a returned lease → the legacy
/// path (`Err`); otherwise the policy to evaluate. With the feature off there is no policy.
fn legacy_gate<'p>(
    policy: Option<&'p CompiledPolicy>,
    settings: &Settings,
    job: &JobContext<'_>,
    upstream: UpstreamJob,
    run: &Run,
) -> Result<&'p CompiledPolicy, ()> {
    match policy {
        Some(p) if settings.enabled && !upstream.gang && !job.fail_fast && run.outcome != Outcome::LeaseReturned => {
            Ok(p)
        }
        _ => Err(()),
    }
}

/// The legacy path: a returned lease is requeued while `attempts < maxAttemptedRuns`
/// (unless failFast), avoiding every attempted node; anything else is final.
fn legacy(
    engine_on: bool,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Decision {
    let global = settings.global_max_retries;
    if job.fail_fast {
        return Decision::fail(DecisionKind::FailFast, state, global);
    }
    let attempts = u32::try_from(run_index + 1).unwrap_or(u32::MAX);
    if run.outcome == Outcome::LeaseReturned && attempts < settings.max_attempted_runs {
        avoid_attempted_nodes(state);
        let kind = if engine_on {
            DecisionKind::LeaseReturned
        } else {
            DecisionKind::LegacyRequeue
        };
        return Decision {
            retry_after: Some(failed_at),
            next_pod_name: Some(pod_name(job.id, run_index + 1, false)),
            ..Decision::fail(kind, state, global)
        };
    }
    Decision::fail(DecisionKind::LegacyFail, state, global)
}

/// engine.go steps 2–3: the kill switch, then the global budget, before any rule.
fn global_limit(used: u32, global: u32) -> Option<DecisionKind> {
    (global == 0 || used >= global).then_some(DecisionKind::FailGlobalLimit)
}

/// engine.go step 4: the first rule whose category equals the run's (and subcategory, when
/// the rule sets one); exact, case-sensitive. Upstream rules carry exactly one of each.
fn first_matching_rule(policy: &CompiledPolicy, run: &Run) -> Option<usize> {
    let category = run.category.as_deref()?;
    policy.policy.rules.iter().position(|rule| {
        on(&rule.on_failure_category) == Some(category)
            && match on(&rule.on_failure_subcategory) {
                None | Some("") => true,
                Some(sub) => run.subcategory.as_deref() == Some(sub),
            }
    })
}

/// A rule's single category or subcategory (upstream stores one of each at most).
fn on(list: &Option<Vec<String>>) -> Option<&str> {
    list.as_ref().and_then(|l| l.first()).map(String::as_str)
}

/// engine.go step 8 and the scheduler's requeue: no backoff, the rule's mutations (none for
/// a default-action retry, none on the lease-expiry path), avoidSameNode over every
/// attempted node.
#[allow(clippy::too_many_arguments)]
fn retry(
    policy: &CompiledPolicy,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
    rule_ref: RuleRef,
    signal: Option<String>,
    limit: u32,
) -> Decision {
    state.total_retries += 1;
    let lease_expired =
        run.category.as_deref() == Some(LEASE_EXPIRED.0) && run.subcategory.as_deref() == Some(LEASE_EXPIRED.1);
    let mut memory_note = None;
    if let (RuleRef::Index(r), false) = (rule_ref, lease_expired) {
        let avoid_same = policy.policy.rules[r]
            .mutate
            .as_ref()
            .and_then(|m| m.affinity.as_ref())
            .is_some_and(|a| a.avoid_same_node);
        if avoid_same {
            avoid_attempted_nodes(state);
        }
        memory_note = apply_memory_bump(state, policy, r);
    }
    Decision {
        kind: DecisionKind::Retry,
        policy: Some(0),
        rule: Some(rule_ref),
        signal,
        counter: Some(state.failures),
        limit: Some(limit),
        total_retries: state.total_retries,
        global_max_retries: settings.global_max_retries,
        retry_after: Some(failed_at),
        memory: state.memory,
        memory_note,
        next_pod_name: Some(pod_name(job.id, run_index + 1, false)),
        ..Decision::fail(DecisionKind::Retry, state, settings.global_max_retries)
    }
}

/// The scheduler's requeue with node anti-affinity: a `NotIn` for the node of every
/// attempted run so far, this one included, added to what the job already avoids.
fn avoid_attempted_nodes(state: &mut JobState) {
    state.nodes_avoided = state.nodes_attempted.len();
}

/// The decision in upstream's own words (engine.go's `Reason`), for the kinds the upstream
/// engine decides; `None` for the legacy kinds, which read as in the design engine.
pub fn reason(d: &Decision, label: Option<&str>) -> Option<String> {
    let used = d.counter.unwrap_or(0);
    let under = label.map(|l| format!(" (policy {l})")).unwrap_or_default();
    Some(match d.kind {
        DecisionKind::Retry if d.rule == Some(RuleRef::Default) => {
            format!(
                "no rule matched, using default action: retry {used} of {}{under}",
                d.limit.unwrap_or(0)
            )
        }
        DecisionKind::Retry => format!("matched rule: Retry: retry {used} of {}{under}", d.limit.unwrap_or(0)),
        DecisionKind::FailRule => format!("matched rule: Fail{under}"),
        DecisionKind::FailDefault => format!("no rule matched, using default action{under}"),
        DecisionKind::FailPolicyLimit => {
            format!("policy retry limit exceeded ({used}/{}){under}", d.limit.unwrap_or(0))
        }
        DecisionKind::FailGlobalLimit if d.global_max_retries == 0 => {
            "global max retries is 0, retries disabled".to_string()
        }
        DecisionKind::FailGlobalLimit => format!("global max retries exceeded ({used}/{})", d.global_max_retries),
        DecisionKind::Preempted => "preempted: upstream never retries a preemption, the job ends".to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
