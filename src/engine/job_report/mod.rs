//! Replaying a FailureHistory through the evaluator (docs/simulate.md): run timing, decisions,
//! contradictions between the history and the decisions, and `expect` checks.
//!
//! Owns: [`replay`] and its report types, and the words used for decisions and outcomes
//! (shared by every output format so that table and JSON never disagree). Must not: do I/O
//! or read a clock; it gets policies as values, so a server-side source can plug in later.
//!
//! One part a file: this one, the entry points ([`replay`], [`replay_with`],
//! [`replay_detailed`]); `report` (the report types: [`JobReport`], [`RunRecord`], [`Detail`]…);
//! `record` (the replay that writes a report: [`job_context`], each run's start, decision
//! and words); `schedule` (what the decisions so far say
//! of the next run, for the contradiction checks); `expect` (the history's `expect` checks);
//! `quiet` (the same decisions with no report, for searches: [`JobOutcome`], the runs a
//! Pending side has left); `words` (decisions, failures and instants in words).

use crate::model::failure_history::FailureHistory;

use super::inputs::{EngineKind, Settings};
use super::matcher::{CompiledPolicy, Policies};

mod expect;
mod quiet;
mod record;
mod report;
mod schedule;
mod words;

pub use quiet::Each;
pub use quiet::JobOutcome;
pub(super) use quiet::{decisions_named, outcome_named, runs_left_after, runs_left_named};
pub use record::job_context;
pub(super) use record::replay_named;
pub use report::{Detail, JobReport, JobStatus, PendingEngine, RunCategories, RunRecord};
pub use words::{describe_failure, explain, format_instant, plural, rule_ref_label, JobInstant, RuleLabel};

/// Replays `history` with the effective `policies` (already resolved, docs/engines.md) under the
/// design engine.
pub fn replay(history: &FailureHistory, policies: &[&CompiledPolicy], settings: &Settings) -> JobReport {
    replay_with(history, policies, settings, EngineKind::Design)
}

/// Replays `history` under `engine`. For the upstream engine `policies` holds at most the
/// one policy it evaluates (docs/engines.md).
pub fn replay_with(
    history: &FailureHistory,
    policies: &[&CompiledPolicy],
    settings: &Settings,
    engine: EngineKind,
) -> JobReport {
    replay_detailed(history, policies, settings, engine, Detail::Full)
}

/// Replays `history` under `engine`, writing the texts `detail` asks for.
pub fn replay_detailed(
    history: &FailureHistory,
    policies: &[&CompiledPolicy],
    settings: &Settings,
    engine: EngineKind,
    detail: Detail,
) -> JobReport {
    let names = policies.iter().map(|p| p.name().to_string()).collect();
    replay_named(history, Policies::alone(policies), names, settings, engine, detail)
}
