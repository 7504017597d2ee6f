//! One design-engine evaluation as numbers and indices (docs/engines.md), and its words.
//!
//! Owns: [`Verdict`], what [`super::evaluate`] returns without allocating, and
//! [`Decision::from_verdict`], which puts it into words (the signal, the nodes to avoid, the
//! next pod's name) for the records that carry them. Must not: allocate while deciding.

use crate::model::duration::GoDuration;
use crate::model::failure_history::Run;
use crate::model::policy::Action;

use crate::engine::decision::{pod_name, Avoid, Decision, DecisionKind, DelayParts, MemoryNote};
use crate::engine::job_state::JobState;
use crate::engine::matcher::Signal;
use crate::engine::rule_ref::RuleRef;

/// One design-engine evaluation (docs/engines.md) as numbers and indices: what [`super::evaluate`]
/// returns, with no heap allocation. The words of the record — the signal, the nodes to
/// avoid, the next pod's name — are made by [`Decision::from_verdict`] for the records that
/// carry them.
///
/// Kept small (104 bytes, was 176): it is returned by value on every decision, and a record
/// larger than the compiler copies inline (128 bytes) cost a `memmove` call per decision.
/// So indices are `u32`, the memory note is one byte, and what follows from other fields is
/// derived by the accessors: the delay from its parts, `retry_after` from `next_pod`, the
/// rule and policy from sentinels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub kind: DecisionKind,
    pub avoid: Avoid,
    /// The job runs again (the next pod's name is docs/engines.md's for the next run index).
    pub next_pod: bool,
    pub(super) memory_note: Option<MemoryNote>,
    /// The counter and limit below are set (a rule or default action was counted).
    pub(super) counted: bool,
    /// Index in the effective list, [`NO_INDEX`] for none.
    pub(super) policy: u32,
    /// Rule index, [`DEFAULT_RULE`] for the default action, [`NO_INDEX`] for none.
    pub(super) rule: u32,
    pub(super) counter: u32,
    pub(super) limit: u32,
    pub total_retries: u32,
    pub global_max_retries: u32,
    pub signal: Option<Signal>,
    pub delay_parts: DelayParts,
    /// When the job runs again (ns since submission); meaningful only with `next_pod`.
    pub(super) retry_after: u64,
    pub memory: Option<f64>,
}

/// The "none" of a `u32` index in a [`Verdict`].
const NO_INDEX: u32 = u32::MAX;
/// The rule slot of a policy's default action in a [`Verdict`].
const DEFAULT_RULE: u32 = u32::MAX - 1;

/// An index as stored in a [`Verdict`]. Policies and rules are counted in memory, far below
/// `u32::MAX - 1`; the debug assertion guards the sentinels.
fn index32(i: usize) -> u32 {
    debug_assert!(i < DEFAULT_RULE as usize);
    i as u32
}

impl Verdict {
    pub fn action(&self) -> Action {
        self.kind.action()
    }

    /// Index in the effective list.
    pub fn policy(&self) -> Option<usize> {
        (self.policy != NO_INDEX).then_some(self.policy as usize)
    }

    pub fn rule(&self) -> Option<RuleRef> {
        match self.rule {
            NO_INDEX => None,
            DEFAULT_RULE => Some(RuleRef::Default),
            r => Some(RuleRef::Index(r as usize)),
        }
    }

    /// The matched counter after this decision.
    pub fn counter(&self) -> Option<u32> {
        self.counted.then_some(self.counter)
    }

    /// The matched counter's effective limit.
    pub fn limit(&self) -> Option<u32> {
        self.counted.then_some(self.limit)
    }

    /// The delay before the next run: backoff plus jitter, at least the grace floor.
    pub fn delay(&self) -> GoDuration {
        let p = &self.delay_parts;
        GoDuration(p.backoff.0 + p.jitter.0).max(p.grace)
    }

    /// `None` when the job does not run again.
    pub fn retry_after(&self) -> Option<u64> {
        self.next_pod.then_some(self.retry_after)
    }

    /// Set when a memory bump of the other kind was skipped.
    pub fn memory_note(&self) -> Option<&'static str> {
        self.memory_note.map(MemoryNote::as_str)
    }

    pub(super) fn fail(kind: DecisionKind, state: &JobState, global: u32) -> Verdict {
        Verdict {
            kind,
            avoid: Avoid::Nothing,
            next_pod: false,
            memory_note: None,
            counted: false,
            policy: NO_INDEX,
            rule: NO_INDEX,
            counter: 0,
            limit: 0,
            total_retries: state.total_retries,
            global_max_retries: global,
            signal: None,
            delay_parts: DelayParts::default(),
            retry_after: 0,
            memory: state.memory,
        }
    }

    /// `rule` of policy `p` decided (with the run's `signal`).
    pub(super) fn with_rule(self, p: usize, rule: RuleRef, signal: Signal) -> Verdict {
        Verdict {
            policy: index32(p),
            rule: match rule {
                RuleRef::Index(r) => index32(r),
                RuleRef::Default => DEFAULT_RULE,
            },
            signal: Some(signal),
            ..self
        }
    }

    pub(super) fn with_count(self, counter: u32, limit: u32) -> Verdict {
        Verdict {
            counted: true,
            counter,
            limit,
            ..self
        }
    }
}

impl Decision {
    /// The record of a [`Verdict`] for `run`, the run at `run_index` of job `job_id`, with
    /// `state` as it was when the run was decided. `numbered_pods`: docs/engines.md's feature.
    pub fn from_verdict(
        v: &Verdict,
        run: &Run,
        state: &JobState,
        job_id: &str,
        run_index: usize,
        numbered_pods: bool,
    ) -> Decision {
        Decision {
            signal: v.signal.map(|s| s.to_text(run)),
            avoid_nodes: v.avoid.nodes(state, run),
            next_pod_name: v.next_pod.then(|| pod_name(job_id, run_index + 1, numbered_pods)),
            ..Decision::from_verdict_untold(v)
        }
    }

    /// [`Decision::from_verdict`] without the words nobody will read (the signal, the
    /// nodes to avoid, the next pod's name), for a summary-only replay: it allocates
    /// nothing. The nodes are left out too (a copy of every node tried, per decision): the
    /// replay's contradiction check reads them from the history instead ([`Verdict::avoid`]).
    pub fn from_verdict_untold(v: &Verdict) -> Decision {
        Decision {
            kind: v.kind,
            policy: v.policy(),
            rule: v.rule(),
            signal: None,
            counter: v.counter(),
            limit: v.limit(),
            total_retries: v.total_retries,
            global_max_retries: v.global_max_retries,
            delay: v.delay(),
            delay_parts: v.delay_parts,
            retry_after: v.retry_after(),
            avoid_nodes: Vec::new(),
            memory: v.memory,
            memory_note: v.memory_note,
            next_pod_name: None,
        }
    }
}
