//! What a job carries between runs (docs/engines.md) and the per-job facts an engine
//! reads besides the run.
//!
//! Owns: [`JobState`] (retries, the counters by rule kept inline for the first few, the
//! nodes tried and attempted, the memory and its bumps, upstream's failure count and avoided
//! nodes), [`JobContext`] (the job's id and its hash, failFast, the grace period); the
//! memory bump both engines apply to it is `memory_bump`'s. Must not: allocate for a job's
//! first retries under up to four rules (BENCHMARKS.md's zero allocations per decision), or
//! know policies (it sits below `matcher` and `decision`).

use crate::model::duration::GoDuration;

use super::rule_ref::RuleRef;

/// What the job carries between runs (docs/engines.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobState {
    pub total_retries: u32,
    /// (index in the effective list, rule) → retries granted under it.
    counters: Counters,
    /// Nodes of the runs that started, first use order, no duplicates.
    pub nodes_tried: Vec<String>,
    /// Current memory in bytes, when the history gives the job's memory.
    pub memory: Option<f64>,
    /// Upstream's `FailureCount`: failed runs so far, this one included, excluding
    /// preempted and returned ones (docs/engines.md).
    pub failures: u32,
    /// Nodes of every attempted run, returned leases included (upstream's avoidSameNode).
    pub nodes_attempted: Vec<String>,
    /// Upstream's node anti-affinity on the job (its `NotIn` values, docs/engines.md): the first
    /// `nodes_avoided` of `nodes_attempted`. A requeue that adds avoidance adds every node
    /// attempted so far, and nothing removes any, so the avoided nodes are always a prefix.
    pub nodes_avoided: usize,
    // The memory bump's own (`memory_bump`): how the memory grew, by factor or by addition.
    pub(super) original_memory: Option<f64>,
    pub(super) memory_factor: Option<f64>,
    pub(super) memory_static: Option<f64>,
}

/// Counters kept inline while a job has retried under at most [`INLINE_COUNTERS`] rules
/// (nearly every job), so that the first retry under a rule allocates nothing; more spill
/// to the heap. Insertion order is kept (summaries and property tests read it).
#[derive(Debug, Clone, Default, PartialEq)]
struct Counters {
    inline: [(u64, u32); INLINE_COUNTERS],
    len: usize,
    spill: Vec<(u64, u32)>,
}

const INLINE_COUNTERS: usize = 4;

impl Counters {
    /// (policy, rule) as one key; the default action takes the rule slot `u32::MAX`.
    fn key(policy: usize, rule: RuleRef) -> u64 {
        let r = match rule {
            RuleRef::Index(i) => i as u64 & 0xffff_ffff,
            RuleRef::Default => 0xffff_ffff,
        };
        ((policy as u64) << 32) | r
    }

    fn unkey(k: u64) -> (usize, RuleRef) {
        let r = match k & 0xffff_ffff {
            0xffff_ffff => RuleRef::Default,
            i => RuleRef::Index(i as usize),
        };
        ((k >> 32) as usize, r)
    }

    fn iter(&self) -> impl Iterator<Item = &(u64, u32)> + '_ {
        self.inline[..self.len].iter().chain(&self.spill)
    }

    fn get(&self, key: u64) -> u32 {
        self.iter().find(|(k, _)| *k == key).map_or(0, |(_, v)| *v)
    }

    /// Adds one to the counter of `key` and returns its new value.
    fn bump(&mut self, key: u64) -> u32 {
        let (inline, spill) = (&mut self.inline[..self.len], &mut self.spill);
        if let Some((_, v)) = inline.iter_mut().chain(spill.iter_mut()).find(|(k, _)| *k == key) {
            *v += 1;
            return *v;
        }
        if self.len < INLINE_COUNTERS {
            self.inline[self.len] = (key, 1);
            self.len += 1;
        } else {
            self.spill.push((key, 1));
        }
        1
    }
}

impl JobState {
    pub fn new(memory: Option<f64>) -> JobState {
        JobState {
            memory,
            original_memory: memory,
            ..JobState::default()
        }
    }

    pub fn counter(&self, policy: usize, rule: RuleRef) -> u32 {
        self.counters.get(Counters::key(policy, rule))
    }

    pub(crate) fn bump(&mut self, policy: usize, rule: RuleRef) -> u32 {
        self.total_retries += 1;
        self.counters.bump(Counters::key(policy, rule))
    }

    /// All counters, for property tests and summaries.
    pub fn counters(&self) -> impl Iterator<Item = (usize, RuleRef, u32)> + '_ {
        self.counters.iter().map(|&(k, v)| {
            let (p, r) = Counters::unkey(k);
            (p, r, v)
        })
    }
}

/// Per-job facts the evaluator needs besides the run.
#[derive(Debug, Clone, Copy)]
pub struct JobContext<'a> {
    pub id: &'a str,
    pub fail_fast: bool,
    pub termination_grace_period: GoDuration,
    /// FNV-1a of `id`, the first half of the jitter hash: computed once per job rather than
    /// once per decision (a byte-at-a-time multiply chain over the id).
    pub(crate) id_hash: u64,
}

impl<'a> JobContext<'a> {
    pub fn new(id: &'a str, fail_fast: bool, termination_grace_period: GoDuration) -> JobContext<'a> {
        JobContext {
            id,
            fail_fast,
            termination_grace_period,
            id_hash: fnv1a(id),
        }
    }
}

/// FNV-1a of `s`: the first half of the jitter hash ([`super::design::jitter_fraction`]).
pub(crate) fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
