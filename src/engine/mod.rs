//! The engines (SPEC §2): pure, deterministic retry decisions. This file, `compiled.rs` and
//! `replay.rs` are the design engine (§2.1–2.9) and the records both engines share;
//! `upstream.rs` is the engine Armada ships today (§2.10).
//!
//! Owns: effective-policy resolution (§2.1), counting and limits (§2.4), backoff,
//! deterministic jitter and the grace delay (§2.5), anti-affinity and memory mutations
//! (§2.6), pod names (§2.7), the bypass paths (§2.8) and the decision records (§2.9): the
//! [`Verdict`] that [`evaluate`] returns (indices and numbers) and the [`Decision`] with words
//! that a replay records. Container selection and matching (§2.2–2.3) are the compiled
//! matcher tables of [`compiled`], with `shared.rs`'s one walk over the anchored regex
//! message rules of a whole list ([`Policies`]); [`replay`] applies the engine to a whole
//! FailureHistory.
//!
//! Must not: do I/O, read a clock or the environment, or use randomness. Time is an input
//! (nanoseconds since the job's submission); jitter comes from a stable hash of (job id, run
//! index) implemented here, never from `std`'s `DefaultHasher` (not stable across releases).
//! `evaluate` must not allocate (SPEC §7; `tests/alloc.rs` counts): text is made from a
//! verdict only where a record carries it.
//!
//! Decisions where SPEC §2 is silent, as an operator would expect:
//! - a `Fail` rule or a `Fail` default decides `fail_rule` / `fail_default` even under the
//!   kill switch (`globalMaxRetries: 0`): the policy's own verdict is the more precise reason,
//!   and the outcome (no retry) is the same.
//! - a default-action retry takes its policy's `backoff` and `antiAffinity` (they are policy
//!   settings, not mutations); it carries no `mutate`.
//! - `avoidSameNode` and `antiAffinity: node` together avoid the union (every earlier node).
//! - memory mutations compound as upstream does: one kind per job; factors multiply
//!   (`ceil(original × product)`), statics add; a bump of the other kind is skipped and the
//!   record says so.
//! - `armadaproject.io/failFast: "true"` also ends the job on a returned lease, as upstream
//!   (`!failFast && returned` gates the legacy requeue).
//! - jitter is truncated to whole milliseconds (readable delays; still deterministic).
//! - legacy requeue counts every run so far (including this one) as an attempt.

mod matcher;
pub mod replay;
pub mod simulator;
pub mod upstream;

use serde::Serialize;

use crate::model::duration::GoDuration;
use crate::model::history::{Outcome, Run};
use crate::model::policy::{Action, Backoff, Condition};
use crate::model::scheduler::SchedulerConfig;

use matcher::RunFacts;
pub use matcher::{CompiledPolicy, Policies, SharedRegexes, Signal};

pub use replay::{replay, Detail, JobReport, JobStatus, RunRecord};

/// The job annotation that adds policies (SPEC §2.1).
pub const POLICY_ANNOTATION: &str = "armadaproject.io/retry-policy";
/// The job annotation that bypasses the engine (SPEC §2.8).
pub const FAIL_FAST_ANNOTATION: &str = "armadaproject.io/failFast";

/// Built-in backoff (SPEC §2.5), the last level of inheritance.
pub const BUILTIN_INITIAL_DELAY: GoDuration = GoDuration(0);
pub const BUILTIN_MAX_DELAY: GoDuration = GoDuration(10 * 60 * 1_000_000_000);
pub const BUILTIN_MULTIPLIER: f64 = 2.0;
pub const BUILTIN_JITTER: f64 = 0.0;
/// Armada's default termination grace period for a job.
pub const DEFAULT_GRACE: GoDuration = GoDuration(1_000_000_000);

/// Which engine decides (SPEC §2.10): the design (§2.1–2.9, the default) or the engine
/// upstream Armada ships today ([`upstream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    #[default]
    Design,
    Upstream,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Design => "design",
            EngineKind::Upstream => "upstream",
        }
    }
}

/// The scheduler's retry settings, resolved (SPEC §3.1 defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub enabled: bool,
    pub global_max_retries: u32,
    pub default_policy_name: Option<String>,
    pub default_backoff: Backoff,
    pub max_attempted_runs: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            global_max_retries: 20,
            default_policy_name: None,
            default_backoff: Backoff::default(),
            max_attempted_runs: 5,
        }
    }
}

impl Settings {
    pub fn from_config(c: &SchedulerConfig) -> Settings {
        let d = Settings::default();
        Settings {
            enabled: c.enabled.unwrap_or(d.enabled),
            global_max_retries: c.global_max_retries.unwrap_or(d.global_max_retries),
            default_policy_name: c.default_policy_name.clone(),
            default_backoff: c.default_backoff,
            max_attempted_runs: c.max_attempted_runs.unwrap_or(d.max_attempted_runs),
        }
    }
}

/// Where a name in the effective list came from, for "missing policy" errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Queue(String),
    /// `--retry-policy` or, without it, every policy document given.
    Given,
    Annotation,
    DefaultPolicy,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Queue(q) => write!(f, "queue `{q}`"),
            Source::Given => write!(f, "--retry-policy"),
            Source::Annotation => write!(f, "the job annotation `{POLICY_ANNOTATION}`"),
            Source::DefaultPolicy => write!(f, "the scheduler's defaultPolicyName"),
        }
    }
}

/// SPEC §2.1: the effective policy names, in order, each with who referenced it.
pub fn effective_policy_names(
    base: &[String],
    base_source: &Source,
    annotation: Option<&str>,
    default_policy: Option<&str>,
) -> Vec<(String, Source)> {
    let mut out: Vec<(String, Source)> = Vec::new();
    for name in base {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.clone(), base_source.clone()));
        }
    }
    for name in annotation
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), Source::Annotation));
        }
    }
    if out.is_empty() {
        if let Some(d) = default_policy {
            out.push((d.to_string(), Source::DefaultPolicy));
        }
    }
    out
}

/// The decision kinds of SPEC §2.9, serialized as written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
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
    /// Upstream: `Retry` refused because the policy's limit is used up (SPEC §2.10).
    FailPolicyLimit,
    /// Upstream: a preemption ends the job, never evaluated (SPEC §2.10).
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
        crate::model::history::DECISION_KINDS[self as usize]
    }

    pub fn action(self) -> Action {
        match self {
            DecisionKind::Retry | DecisionKind::LegacyRequeue | DecisionKind::LeaseReturned => Action::Retry,
            _ => Action::Fail,
        }
    }
}

/// Which counter a decision used: a rule by index, or the policy's default action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleRef {
    Index(usize),
    Default,
}

impl std::fmt::Display for RuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleRef::Index(i) => write!(f, "{i}"),
            RuleRef::Default => write!(f, "default"),
        }
    }
}

/// What the job carries between runs (SPEC §2.4, §2.6).
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
    /// preempted and returned ones (SPEC §2.10).
    pub failures: u32,
    /// Nodes of every attempted run, returned leases included (upstream's avoidSameNode).
    pub nodes_attempted: Vec<String>,
    /// Upstream's node anti-affinity on the job (its `NotIn` values, SPEC §2.10): the first
    /// `nodes_avoided` of `nodes_attempted`. A requeue that adds avoidance adds every node
    /// attempted so far, and nothing removes any, so the avoided nodes are always a prefix.
    pub nodes_avoided: usize,
    original_memory: Option<f64>,
    memory_factor: Option<f64>,
    memory_static: Option<f64>,
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

    fn bump(&mut self, policy: usize, rule: RuleRef) -> u32 {
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
    id_hash: u64,
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

/// The parts of a retry's delay (SPEC §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelayParts {
    /// `min(initialDelay × multiplier^(n−1), maxDelay)`.
    pub backoff: GoDuration,
    /// What jitter added (after the cap at `maxDelay`).
    pub jitter: GoDuration,
    /// The graceful-shutdown floor of a preempted run (0 otherwise).
    pub grace: GoDuration,
}

/// One evaluation's record (SPEC §2.9), with words: the signal, the nodes to avoid and the
/// next pod's name. The design engine's [`Verdict`] becomes one in [`Decision::from_verdict`];
/// the upstream engine builds it directly. Times are nanoseconds since submission.
#[derive(Debug, Clone, PartialEq)]
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
    pub memory_note: Option<&'static str>,
    pub next_pod_name: Option<String>,
}

impl Decision {
    pub fn action(&self) -> Action {
        self.kind.action()
    }

    /// The record of a [`Verdict`] for `run`, the run at `run_index` of job `job_id`, with
    /// `state` as it was when the run was decided. `numbered_pods`: SPEC §2.7's feature.
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
            memory_note: v.memory_note(),
            next_pod_name: None,
        }
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

/// Which nodes a retry avoids (SPEC §2.6), without copying their names.
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

/// One design-engine evaluation (SPEC §2.9) as numbers and indices: what [`evaluate`]
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
    /// The job runs again (the next pod's name is SPEC §2.7's for the next run index).
    pub next_pod: bool,
    memory_note: Option<MemoryNote>,
    /// The counter and limit below are set (a rule or default action was counted).
    counted: bool,
    /// Index in the effective list, [`NO_INDEX`] for none.
    policy: u32,
    /// Rule index, [`DEFAULT_RULE`] for the default action, [`NO_INDEX`] for none.
    rule: u32,
    counter: u32,
    limit: u32,
    pub total_retries: u32,
    pub global_max_retries: u32,
    pub signal: Option<Signal>,
    pub delay_parts: DelayParts,
    /// When the job runs again (ns since submission); meaningful only with `next_pod`.
    retry_after: u64,
    pub memory: Option<f64>,
}

/// The "none" of a `u32` index in a [`Verdict`].
const NO_INDEX: u32 = u32::MAX;
/// The rule slot of a policy's default action in a [`Verdict`].
const DEFAULT_RULE: u32 = u32::MAX - 1;

/// Why a memory bump was skipped (SPEC §2.6): one kind per job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

    /// The delay before the next run: backoff plus jitter, at least the grace floor (§2.5).
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

    fn fail(kind: DecisionKind, state: &JobState, global: u32) -> Verdict {
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
    fn with_rule(self, p: usize, rule: RuleRef, signal: Signal) -> Verdict {
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

    fn with_count(self, counter: u32, limit: u32) -> Verdict {
        Verdict {
            counted: true,
            counter,
            limit,
            ..self
        }
    }
}

/// SPEC §2.7.
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

/// A stable `u` in [0, 1) from (job id, run index): FNV-1a over the id, mixed with the run
/// index by SplitMix64. Stable across platforms and Rust releases.
pub fn jitter_fraction(job_id: &str, run_index: usize) -> f64 {
    jitter_from_hash(fnv1a(job_id), run_index)
}

fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// [`jitter_fraction`] from the id's FNV-1a hash.
fn jitter_from_hash(h: u64, run_index: usize) -> f64 {
    let mut z = h ^ (run_index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Backoff with each field resolved on its own: rule → policy → scheduler → built-in.
pub fn resolve_backoff(
    rule: Option<&Backoff>,
    policy: &Backoff,
    scheduler: &Backoff,
) -> (GoDuration, GoDuration, f64, f64) {
    let pick = |f: fn(&Backoff) -> Option<GoDuration>, builtin| {
        rule.and_then(f)
            .or_else(|| f(policy))
            .or_else(|| f(scheduler))
            .unwrap_or(builtin)
    };
    let pickf = |f: fn(&Backoff) -> Option<f64>, builtin| {
        rule.and_then(f)
            .or_else(|| f(policy))
            .or_else(|| f(scheduler))
            .unwrap_or(builtin)
    };
    (
        pick(|b| b.initial_delay, BUILTIN_INITIAL_DELAY),
        pick(|b| b.max_delay, BUILTIN_MAX_DELAY),
        pickf(|b| b.multiplier, BUILTIN_MULTIPLIER),
        pickf(|b| b.jitter, BUILTIN_JITTER),
    )
}

/// Integers below this are exact as `f64`.
const EXACT_F64: u64 = 1 << 53;

/// `min(initial × multiplier^(n−1), max)`, saturating: never overflows, never NaN.
pub fn backoff_delay(initial: GoDuration, max: GoDuration, multiplier: f64, n: u32) -> GoDuration {
    if initial.0 == 0 || n == 0 {
        return GoDuration(initial.0.min(max.0));
    }
    // The first retry under a counter (multiplier⁰): the formula below gives exactly
    // `min(initial, max)` while both are exact as f64 (below 2⁵³ ns, 104 days), without
    // the `powi` and `round` calls.
    if n == 1 && initial.0 < EXACT_F64 && max.0 < EXACT_F64 {
        return GoDuration(initial.0.min(max.0));
    }
    let m = if multiplier.is_finite() && multiplier >= 1.0 {
        multiplier
    } else {
        1.0
    };
    let exp = i32::try_from(n - 1).unwrap_or(i32::MAX);
    let v = initial.0 as f64 * m.powi(exp);
    if !v.is_finite() || v >= max.0 as f64 {
        max
    } else {
        // Rounded, not truncated: 10s × 1.15² is 13.225s, not 13.224999999s.
        GoDuration(v.round() as u64)
    }
}

/// Evaluates one finished run (SPEC §2.3–2.9) and updates `state`. Allocates nothing: the
/// result holds indices and numbers ([`Verdict`]), put into words only for records.
///
/// `policies` is the effective list (§2.1, empty = legacy), `run_index` the run's position
/// in the job, `failed_at` when it ended (ns since submission). Each step below is one
/// numbered section of SPEC §2.
pub fn evaluate(
    policies: Policies<'_>,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Verdict {
    let global = settings.global_max_retries;
    if let Some(v) = bypass_paths(&policies, settings, job, state, run, run_index, failed_at) {
        return v;
    }
    let facts = RunFacts::new(run);
    let (p, rule_ref, signal) = match policies.first_match(&facts) {
        Some((p, r, signal)) if policies[p].policy.rules[r].action == Action::Fail => {
            return Verdict::fail(DecisionKind::FailRule, state, global).with_rule(p, RuleRef::Index(r), signal);
        }
        Some((p, r, signal)) => (p, RuleRef::Index(r), signal),
        None => match default_retry(&policies) {
            Some(p) => (p, RuleRef::Default, Signal::NoRuleMatched),
            None => {
                return Verdict {
                    signal: Some(Signal::NoRuleMatched),
                    ..Verdict::fail(DecisionKind::FailDefault, state, global)
                };
            }
        },
    };
    let compiled = policies[p];
    let rule = match rule_ref {
        RuleRef::Index(r) => Some(r),
        RuleRef::Default => None,
    };
    // The rule's backoff, limit and anti-affinity, resolved with its policy's at compile time.
    let plan = compiled.plan(rule);
    let (n, limit) = match count_within_limits(settings, state, p, rule_ref, plan.limit) {
        Ok(granted) => granted,
        Err(kind) => {
            return Verdict::fail(kind, state, global)
                .with_rule(p, rule_ref, signal)
                .with_count(state.counter(p, rule_ref), plan.limit.unwrap_or(global));
        }
    };
    let delay_parts = backoff_and_grace(settings, job, &facts, run_index, &plan.backoff, n);
    let memory_note = match rule {
        Some(r) if plan.memory => apply_memory_bump(state, compiled, r),
        _ => None,
    };
    let verdict = Verdict {
        avoid: plan.avoid,
        next_pod: true,
        memory_note,
        delay_parts,
        ..Verdict::fail(DecisionKind::Retry, state, global)
    };
    Verdict {
        retry_after: failed_at.saturating_add(verdict.delay().0),
        ..verdict.with_rule(p, rule_ref, signal).with_count(n, limit)
    }
}

/// SPEC §2.8: cancelled, failFast, the legacy path (feature off or no policy) and a
/// returned lease are decided without the policies.
fn bypass_paths(
    policies: &[&CompiledPolicy],
    settings: &Settings,
    job: &JobContext<'_>,
    state: &JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Option<Verdict> {
    let global = settings.global_max_retries;
    let requeue = |kind: DecisionKind| Verdict {
        retry_after: failed_at,
        next_pod: true,
        ..Verdict::fail(kind, state, global)
    };
    if run.outcome == Outcome::Cancelled {
        return Some(Verdict::fail(DecisionKind::Cancelled, state, global));
    }
    if job.fail_fast && matches!(run.outcome, Outcome::Failed | Outcome::LeaseReturned) {
        return Some(Verdict::fail(DecisionKind::FailFast, state, global));
    }
    let below_attempts = u32::try_from(run_index + 1).unwrap_or(u32::MAX) < settings.max_attempted_runs;
    if !settings.enabled || policies.is_empty() {
        return Some(if run.outcome == Outcome::LeaseReturned && below_attempts {
            requeue(DecisionKind::LegacyRequeue)
        } else {
            Verdict::fail(DecisionKind::LegacyFail, state, global)
        });
    }
    if run.outcome == Outcome::LeaseReturned {
        // Upstream sends a returned lease down the legacy path even with the engine on: it
        // consumes no retry budget, but `maxAttemptedRuns` still bounds it, so that a job
        // whose leases keep coming back is not requeued forever.
        return Some(if below_attempts {
            requeue(DecisionKind::LeaseReturned)
        } else {
            Verdict::fail(DecisionKind::LegacyFail, state, global)
        });
    }
    None
}

/// SPEC §2.4, no rule matched: the first effective policy whose default action is `Retry`.
fn default_retry(policies: &[&CompiledPolicy]) -> Option<usize> {
    policies
        .iter()
        .position(|cp| cp.policy.default_action() == Action::Retry)
}

/// SPEC §2.4: a retry is granted iff the matched counter is below its effective limit
/// (`rule.retryLimit ?? policy.retryLimit ?? globalMaxRetries`; the first two are resolved in
/// the compiled policy, `limit`) and the total below `globalMaxRetries`; then both grow:
/// `Ok((counter after, limit))`. Otherwise the bound that was hit, the global one when both
/// are.
fn count_within_limits(
    settings: &Settings,
    state: &mut JobState,
    p: usize,
    rule_ref: RuleRef,
    limit: Option<u32>,
) -> Result<(u32, u32), DecisionKind> {
    let global = settings.global_max_retries;
    let limit = limit.unwrap_or(global);
    if state.total_retries >= global {
        return Err(DecisionKind::FailGlobalLimit);
    }
    if state.counter(p, rule_ref) >= limit {
        return Err(DecisionKind::FailRuleLimit);
    }
    Ok((state.bump(p, rule_ref), limit))
}

/// SPEC §2.5: backoff for the `n`th retry under the counter, deterministic jitter, and the
/// graceful-shutdown floor of a preempted run: the parts of the delay.
fn backoff_and_grace(
    settings: &Settings,
    job: &JobContext<'_>,
    facts: &RunFacts<'_>,
    run_index: usize,
    backoff: &Backoff,
    n: u32,
) -> DelayParts {
    // `backoff`: the rule's fields over its policy's, resolved at compile time.
    let (initial, max, multiplier, jitter) = resolve_backoff(None, backoff, &settings.default_backoff);
    let backoff = backoff_delay(initial, max, multiplier, n);
    let mut with_jitter = backoff;
    if jitter > 0.0 && backoff.0 > 0 {
        let add = backoff.0 as f64 * jitter.min(1.0) * jitter_from_hash(job.id_hash, run_index);
        let total = (backoff.0 as f64 + add).min(max.0 as f64);
        // Whole milliseconds: a delay of `58.100503407s` is noise to an operator.
        let ms = if total.is_finite() {
            total as u64 / 1_000_000 * 1_000_000
        } else {
            max.0
        };
        with_jitter = GoDuration(ms.min(max.0)).max(backoff);
    }
    let run = facts.run();
    let grace = if facts.has_condition(Condition::Preempted) {
        match run.termination_confirmed_after {
            Some(t) => t.min(job.termination_grace_period),
            None => job.termination_grace_period,
        }
    } else {
        GoDuration::ZERO
    };
    // The delay itself, `with_jitter.max(grace)`, is derived from the parts
    // ([`Verdict::delay`]).
    DelayParts {
        backoff,
        jitter: GoDuration(with_jitter.0 - backoff.0),
        grace,
    }
}

/// SPEC §2.6 / §2.10: the matched rule's `mutate.resources.memory` grows the job's memory
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

#[cfg(test)]
mod tests;
