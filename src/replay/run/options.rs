//! How a replay is run ([`Options`]) and why it may have no answer ([`NoAnswer`]). Pure data.

use crate::model::failure_history::Timestamp;
use crate::replay::backtest::Refusal;
use crate::replay::compare::Overflow;
use crate::replay::incidents::Look;
use crate::replay::shard::Shard;

/// How a replay is run, besides its source, policies and sink.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--backtest-at` (docs/estimates.md): trials of jobs submitted before it fit, the others test.
    pub backtest_at: Option<Timestamp>,
    /// `--shard I/N` (docs/past-one-machine.md): only the jobs of shard I.
    pub shard: Option<Shard>,
    /// A comparison counts the jobs whose record contradicts its baseline (docs/what-if.md
    /// "Does the baseline explain the record?"): the baseline is a policy the cluster ran.
    pub explain: bool,
    /// Incident windows (docs/reference/suggest.md "Incidents"): those known, whose failed
    /// runs' trials the estimates leave out, and whether to find more.
    pub incidents: Look,
    /// Retries while others waited (docs/contention.md): the record's and each side's,
    /// swept at the end; off: not collected.
    pub contention: bool,
    /// Off because the default leaves it out of a shard (docs/past-one-machine.md): the
    /// answer says it was not computed where the section would be.
    pub contention_sharded: bool,
}

/// Why a replay has no answer to print: `--backtest-at` has none (a usage error,
/// docs/estimates.md, exit 2), or a sum passed what retryctl can add up (exit 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAnswer {
    /// Jobs without `job.submittedAt`: how many, and the first in input order.
    NotSubmitted { jobs: u64, first: String },
    /// The time leaves one side without trials.
    Refused(Refusal),
    /// A sum of device time past 128 bits.
    Overflow(Overflow),
}
