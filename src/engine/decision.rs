//! The records both engines write (docs/engines.md), with words: what a replay stores, compares
//! and prints.
//!
//! Owns: [`DecisionKind`] and its names, [`Decision`] and its delay parts
//! ([`DelayParts`]), the nodes a retry avoids ([`Avoid`]), the memory note ([`MemoryNote`])
//! and the next pod's name ([`pod_name`]). The design engine decides into a
//! [`super::design::Verdict`] (numbers and indices) and puts it into a [`Decision`] only for the
//! records that carry one (`design::verdict`); the upstream engine builds a [`Decision`]
//! directly. Must not: decide anything.

use serde::{Deserialize, Serialize};

use crate::model::duration::GoDuration;
use crate::model::failure_history::Run;
use crate::model::policy::Action;

use super::job_state::JobState;
use super::rule_ref::RuleRef;

/// The decision kinds of docs/engines.md, serialized as written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Retry,
    FailRule,
    FailRuleLimit,
    FailGlobalLimit,
    FailDefault,
    FailFast,
    LegacyFail,
    LegacyRequeue,
    LeaseReturned,
    Cancelled,
    /// Upstream: `Retry` refused because the policy's limit is used up (docs/engines.md).
    FailPolicyLimit,
    /// Upstream: a preemption ends the job, never evaluated (docs/engines.md).
    Preempted,
}

impl DecisionKind {
    pub const ALL: [DecisionKind; 12] = [
        DecisionKind::Retry,
        DecisionKind::FailRule,
        DecisionKind::FailRuleLimit,
        DecisionKind::FailGlobalLimit,
        DecisionKind::FailDefault,
        DecisionKind::FailFast,
        DecisionKind::LegacyFail,
        DecisionKind::LegacyRequeue,
        DecisionKind::LeaseReturned,
        DecisionKind::Cancelled,
        DecisionKind::FailPolicyLimit,
        DecisionKind::Preempted,
    ];

    pub fn as_str(self) -> &'static str {
        crate::model::vocabulary::DECISION_KINDS[self as usize]
    }

    pub fn action(self) -> Action {
        match self {
            DecisionKind::Retry | DecisionKind::LegacyRequeue | DecisionKind::LeaseReturned => Action::Retry,
            _ => Action::Fail,
        }
    }
}

/// The parts of a retry's delay (docs/engines.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DelayParts {
    /// `min(initialDelay × multiplier^(n−1), maxDelay)`.
    pub backoff: GoDuration,
    /// What jitter added (after the cap at `maxDelay`).
    pub jitter: GoDuration,
    /// The graceful-shutdown floor of a preempted run (0 otherwise).
    pub grace: GoDuration,
}

/// One evaluation's record (docs/engines.md), with words: the signal, the nodes to avoid and the
/// next pod's name. The design engine's `Verdict` becomes one in [`Decision::from_verdict`];
/// the upstream engine builds it directly. Times are nanoseconds since submission.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Index in the effective list.
    pub policy: Option<usize>,
    pub rule: Option<RuleRef>,
    pub signal: Option<String>,
    /// The matched counter after this decision, and its effective limit.
    pub counter: Option<u32>,
    pub limit: Option<u32>,
    pub total_retries: u32,
    pub global_max_retries: u32,
    pub delay: GoDuration,
    pub delay_parts: DelayParts,
    /// `None` when the job does not run again.
    pub retry_after: Option<u64>,
    pub avoid_nodes: Vec<String>,
    pub memory: Option<f64>,
    /// Set when a memory bump of the other kind was skipped.
    pub memory_note: Option<MemoryNote>,
    pub next_pod_name: Option<String>,
}

impl Decision {
    pub fn action(&self) -> Action {
        self.kind.action()
    }

    pub(crate) fn fail(kind: DecisionKind, state: &JobState, global: u32) -> Decision {
        Decision {
            kind,
            policy: None,
            rule: None,
            signal: None,
            counter: None,
            limit: None,
            total_retries: state.total_retries,
            global_max_retries: global,
            delay: GoDuration::ZERO,
            delay_parts: DelayParts::default(),
            retry_after: None,
            avoid_nodes: Vec::new(),
            memory: state.memory,
            memory_note: None,
            next_pod_name: None,
        }
    }
}

/// Which nodes a retry avoids (docs/engines.md), without copying their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Avoid {
    #[default]
    Nothing,
    /// `antiAffinity: node`: the node of this run only.
    ThisNode,
    /// `avoidSameNode`: every node tried so far ([`JobState::nodes_tried`]) and this run's.
    EveryNode,
}

impl Avoid {
    /// The node names, from the state as it was when the run was decided (before the
    /// replay records this run's node as tried).
    pub fn nodes(self, state: &JobState, run: &Run) -> Vec<String> {
        match (self, &run.node) {
            (Avoid::Nothing, _) | (Avoid::ThisNode, None) => Vec::new(),
            (Avoid::ThisNode, Some(node)) => vec![node.clone()],
            (Avoid::EveryNode, node) => {
                let mut nodes = Vec::with_capacity(state.nodes_tried.len() + 1);
                nodes.extend_from_slice(&state.nodes_tried);
                if let Some(node) = node.as_ref().filter(|n| !nodes.contains(n)) {
                    nodes.push(node.clone());
                }
                nodes
            }
        }
    }
}

/// Why a memory bump was skipped (docs/engines.md): one kind per job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryNote {
    FactorSkipped,
    StaticSkipped,
}

impl MemoryNote {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryNote::FactorSkipped => "memory factor skipped: the job already grew by a static amount",
            MemoryNote::StaticSkipped => "memory static skipped: the job already grew by a factor",
        }
    }
}

/// Whether `job_id` can be part of a pod name: `armada-<id>-0` is a lowercase RFC 1123
/// subdomain, as Kubernetes checks a pod's name (at most 253 characters of `a-z`, `0-9`,
/// `-` and `.`, each dot-separated part starting and ending with a letter or digit). A job
/// of a cluster that names jobs otherwise (`application_1506638472019_14213`) gets pods
/// under other names, so what the replay derives from the name is approximate for it.
pub fn is_pod_name_part(job_id: &str) -> bool {
    const AROUND: usize = "armada-".len() + "-0".len();
    if job_id.len() + AROUND > 253 {
        return false;
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let b = job_id.as_bytes();
    // `armada-` and `-0` around it: a dot needs a letter or digit of the id on each side.
    (0..b.len()).all(|i| match b[i] {
        b'.' => i > 0 && i + 1 < b.len() && alnum(b[i - 1]) && alnum(b[i + 1]),
        c => alnum(c) || c == b'-',
    })
}

/// docs/engines.md.
pub fn pod_name(job_id: &str, run: usize, feature_enabled: bool) -> String {
    let mut name = String::with_capacity(job_id.len() + 16);
    name.push_str("armada-");
    name.push_str(job_id);
    name.push_str("-0");
    if feature_enabled && run > 0 {
        name.push('-');
        name.push_str(&run.to_string());
    }
    name
}

#[cfg(test)]
mod tests {
    use super::is_pod_name_part;

    /// Kubernetes' rule for a pod's name, on `armada-<id>-0`: lowercase letters, digits,
    /// `-` and `.` (a dot between letters or digits), 253 characters in all.
    #[test]
    fn an_id_is_part_of_a_pod_name_as_kubernetes_checks_it() {
        for id in ["a", "job-1", "01hx9k.train", "x-", "-x", &"a".repeat(244)] {
            assert!(is_pod_name_part(id), "{id}");
        }
        for id in [
            "application_1506638472019_14213",
            "Job1",
            "a..b",
            "a.-b",
            ".a",
            "a.",
            "ü",
            &"a".repeat(245),
        ] {
            assert!(!is_pod_name_part(id), "{id}");
        }
    }
}
