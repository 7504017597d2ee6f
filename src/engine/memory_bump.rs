//! The memory bump both engines apply (docs/engines.md): the matched rule's
//! `mutate.resources.memory` grows the job's memory for the next run.
//!
//! Owns: [`apply_memory_bump`]. Must not: allocate (it runs inside `evaluate`) or decide
//! anything else of a retry.

use super::decision::MemoryNote;
use super::job_state::JobState;
use super::matcher::CompiledPolicy;

/// docs/engines.md: the matched rule's `mutate.resources.memory` grows the job's memory
/// for the next run. One kind per job: factors multiply, each step rounding up from the
/// previous memory (as upstream's reservation does); statics add; a bump of the other kind
/// is skipped and the returned note says so. Shared by both engines.
pub(crate) fn apply_memory_bump(state: &mut JobState, policy: &CompiledPolicy, rule: usize) -> Option<MemoryNote> {
    let bump = policy.policy.rules[rule]
        .mutate
        .as_ref()
        .and_then(|m| m.resources.as_ref())
        .and_then(|r| r.memory.as_ref())?;
    if let Some(factor) = bump.factor {
        if state.memory_static.is_some() {
            return Some(MemoryNote::FactorSkipped);
        }
        state.memory_factor = Some(state.memory_factor.unwrap_or(1.0) * factor);
        state.memory = state.memory.map(|m| (m * factor).ceil());
    } else if let Some(add) = policy.statics[rule] {
        if state.memory_factor.is_some() {
            return Some(MemoryNote::StaticSkipped);
        }
        let s = state.memory_static.unwrap_or(0.0) + add;
        state.memory_static = Some(s);
        state.memory = state.original_memory.map(|m| m + s);
    }
    None
}
