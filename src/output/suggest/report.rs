//! What `commands::suggest` hands over to be shown: what was learned and proposed
//! ([`Report`], [`Head`]), where the engine came from, the backtest's split and the commands
//! to run next.
//!
//! Owns: those types, plain data. Must not: write anything (the formats do) or count.

use crate::engine::EngineKind;
use crate::model::duration::GoDuration;
use crate::output::mode::Baseline;
use crate::replay::incidents::{Kind, Window};
use crate::suggest::documents::Upstream;
use crate::suggest::incidents::{Found, Listed, Sensitive};
use crate::suggest::nodes::Suspect;
use crate::suggest::propose::{Defaults, Knobs, Proposed, Verdict};
use crate::suggest::queues::QueueCounts;
use crate::suggest::stats::SignatureStats;
use crate::suggest::today::Kept;

/// The commands the table ends with.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    /// Writes the proposal (`-o policy`).
    pub write: String,
    /// Searches its limits further; `None` without a Retry rule.
    pub tune: Option<String>,
}

/// `--backtest-at`'s split.
#[derive(Debug, Clone)]
pub struct BacktestHead {
    pub at: String,
    pub train_jobs: u64,
    pub test_jobs: u64,
}

/// The proposal as its head says it, before the comparison.
#[derive(Clone, Copy)]
pub struct Head<'a> {
    pub engine: EngineKind,
    pub name: &'a str,
    pub rules: &'a [Proposed],
    /// Today's rules kept after the proposal's own.
    pub kept: &'a [Kept],
    pub upstream: Option<&'a Upstream>,
    /// The policy's `retryLimit` as `-o policy` writes it (`None`: not written, design only).
    pub policy_retry_limit: Option<u32>,
}

/// What was learned and proposed: everything but the comparisons.
pub struct Report<'a> {
    pub engine: EngineKind,
    /// Why that engine decides (docs/engines.md "Which engine decides"), in words: the flag,
    /// or the dialect it was taken from.
    pub engine_why: String,
    pub name: &'a str,
    pub knobs: Knobs,
    /// Jobs learned from (before `--backtest-at`, when given).
    pub jobs: u64,
    pub failed_runs: u64,
    /// Every signature (sorted by hours) and its verdict.
    pub signatures: &'a [(&'a SignatureStats, Verdict)],
    /// The proposed rules in the policy's order.
    pub rules: &'a [Proposed],
    /// The proposed policy's default, learned or today's.
    pub default: &'a Defaults,
    pub kept: &'a [Kept],
    pub upstream: Option<&'a Upstream>,
    /// The policy's `retryLimit` as `-o policy` writes it (`None`: not written, design only).
    pub policy_retry_limit: Option<u32>,
    /// The documents `-o policy` writes (markdown and html carry them).
    pub documents: &'a str,
    pub suspects: &'a [Suspect],
    /// Some run (of the jobs learned from) names its node: without one there is no node to
    /// suspect, which is said rather than that none is an outlier.
    pub nodes_named: bool,
    pub baseline_from: Baseline,
    pub commands: Commands,
    pub backtest: Option<BacktestHead>,
    /// When the proposal changes the cluster's categorizer, every queue compared (in name
    /// order); empty otherwise.
    pub queues: &'a [QueueCounts],
    /// The incident windows, when there are some (docs/reference/suggest.md "Incidents").
    pub incidents: Option<IncidentsView<'a>>,
    /// The bursts and surges, learned from (docs/reference/suggest.md "Incidents").
    pub busy: &'a [(Window, Kind, Listed)],
    /// Retries the baseline's categorizer says collide that the record shows ran.
    pub collisions_ran: u64,
}

/// The incident windows and what they change.
pub struct IncidentsView<'a> {
    pub found: &'a Found,
    /// The signatures whose proposal their incident runs would change, and to what.
    pub sensitive: &'a Sensitive,
    /// Retry rules whose first delay is shorter than the median window (design), and that
    /// delay.
    pub short_backoff: Vec<(String, GoDuration)>,
}
