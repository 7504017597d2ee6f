//! The engines (docs/engines.md): pure, deterministic retry decisions, and what both share.
//!
//! Where things are: [`design`] is the design engine ([`evaluate`] returns a
//! [`Verdict`] of indices and numbers); [`upstream`] is the engine Armada ships today
//! (docs/engines.md); `matcher` compiles policies into the tables both read ([`CompiledPolicy`]; the
//! design engine matches with them); `decision` holds the records both write
//! ([`Decision`], the [`RuleRef`] of `rule_ref`), `job_state` what a job carries between runs ([`JobState`],
//! [`JobContext`]) and `memory_bump` the memory bump both apply. [`replay`] runs a whole FailureHistory through
//! either engine and [`simulator`] resolves which policies a job gets. [`categorizer`] is the
//! executor's error categorizer: a failed run's category as Armada's executor assigns it.
//!
//! `inputs` holds the inputs both engines take: the scheduler's [`Settings`], which engine
//! decides ([`EngineKind`]), the job annotations, and the effective policy names
//! ([`effective_policy_names`]). This file only declares the parts and re-exports what
//! callers outside the engine use; the parts import each other, never this file.
//!
//! Must not: do I/O, read a clock or the environment, or use randomness. Time is an input
//! (nanoseconds since the job's submission); jitter comes from a stable hash of (job id, run
//! index) implemented in `design::backoff`, never from `std`'s `DefaultHasher` (not stable
//! across releases).
//! `evaluate` must not allocate (BENCHMARKS.md; `tests/alloc.rs` counts): text is made from a
//! verdict only where a record carries it.

pub mod categorizer;
mod decision;
pub mod design;
mod inputs;
pub mod job_report;
mod job_state;
mod matcher;
mod memory_bump;
mod rule_ref;
pub mod simulator;
pub mod upstream;

pub use decision::{is_pod_name_part, pod_name, Avoid, Decision, DecisionKind, DelayParts, MemoryNote};
pub use design::{
    backoff_delay, copies_until_fail, evaluate, evaluate_matched, first_match, jitter_fraction, resolve_backoff, Match,
    Verdict, BUILTIN_INITIAL_DELAY, BUILTIN_JITTER, BUILTIN_MAX_DELAY, BUILTIN_MULTIPLIER,
};
pub use inputs::{
    effective_policy_names, EngineFrom, EngineKind, NameOrigin, Settings, DEFAULT_GRACE, FAIL_FAST_ANNOTATION,
    POLICY_ANNOTATION,
};
pub use job_report::{
    job_context, replay, Detail, JobOutcome, JobReport, JobStatus, PendingEngine, RunCategories, RunRecord,
};
pub use job_state::{JobContext, JobState};
pub use matcher::{CompiledPolicy, Policies, SharedRegexes, Signal};
pub use rule_ref::RuleRef;
