//! What a retry under each rule takes (docs/engines.md), resolved once when a policy is
//! compiled rather than through rule and policy on every decision.
//!
//! Owns: [`RetryPlan`]: each backoff field rule → policy (the scheduler's level and the
//! built-in one are added per decision: settings are not the policy's), the retry limit
//! rule → policy, the nodes to avoid, and whether the rule mutates memory. Must not: read
//! the scheduler's settings or a job's state.

use crate::model::policy::{AntiAffinityMode, Backoff, RetryPolicy, Rule};

use crate::engine::decision::Avoid;

/// What a retry under one rule (or the policy's default action) takes from the rule and the
/// policy, resolved once at compile time rather than through both levels per decision:
/// each backoff field rule → policy (the scheduler's level and the built-in one are added
/// per decision: settings are not the policy's), the retry limit rule → policy, the
/// nodes to avoid, and whether the rule mutates memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPlan {
    pub(crate) backoff: Backoff,
    pub(crate) limit: Option<u32>,
    pub(crate) avoid: Avoid,
    pub(crate) memory: bool,
}

impl RetryPlan {
    /// docs/engines.md for `rule` of `policy`, or for its default action (`None`: a default
    /// retry takes the policy's backoff and antiAffinity, and carries no mutation).
    pub(super) fn new(rule: Option<&Rule>, policy: &RetryPolicy) -> RetryPlan {
        let (r, p) = (rule.map(|r| &r.backoff), &policy.backoff);
        let backoff = Backoff {
            initial_delay: r.and_then(|b| b.initial_delay).or(p.initial_delay),
            max_delay: r.and_then(|b| b.max_delay).or(p.max_delay),
            multiplier: r.and_then(|b| b.multiplier).or(p.multiplier),
            jitter: r.and_then(|b| b.jitter).or(p.jitter),
        };
        let mutate = rule.and_then(|r| r.mutate.as_ref());
        // `avoidSameNode` (a rule's mutation) avoids every node so far, else
        // `antiAffinity: node` (rule → policy) this run's node.
        let avoid_same = mutate
            .and_then(|m| m.affinity.as_ref())
            .is_some_and(|a| a.avoid_same_node);
        let mode = rule
            .and_then(|r| r.anti_affinity)
            .or(policy.anti_affinity)
            .unwrap_or_default();
        RetryPlan {
            backoff,
            limit: rule.and_then(|r| r.retry_limit).or(policy.retry_limit),
            avoid: if avoid_same {
                Avoid::EveryNode
            } else if mode == AntiAffinityMode::Node {
                Avoid::ThisNode
            } else {
                Avoid::Nothing
            },
            memory: mutate
                .and_then(|m| m.resources.as_ref())
                .is_some_and(|r| r.memory.is_some()),
        }
    }
}

/// The plan of each rule of `policy`, in rule order.
pub(super) fn rule_plans(policy: &RetryPolicy) -> Box<[RetryPlan]> {
    policy.rules.iter().map(|r| RetryPlan::new(Some(r), policy)).collect()
}
