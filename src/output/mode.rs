//! What a replay's sink is given to show: a plain replay's jobs or a comparison's changes
//! ([`Mode`]), and where a comparison's baseline came from ([`Baseline`]).
//!
//! Owns: those two choices, which commands make and every sink reads. Must not: render or
//! count.

/// Which results a sink is given: a plain replay's jobs, or `--baseline`'s changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A plain replay; `bulk`: many jobs (JSON Lines, a directory), so the table format
    /// prints only the summary.
    Replay { bulk: bool },
    /// `--baseline`; `all_changes`: the table lists every changed job, not the first
    /// [`LISTED_PER_TRANSITION`](super::groups::LISTED_PER_TRANSITION) of each transition.
    Compare { all_changes: bool, baseline: Baseline },
}

/// Where a what-if's baseline policies come from: a plan whose baseline is the cluster's
/// says so in its header (table, markdown, html) and its data (`baselineFrom: cluster`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// `--baseline FILES`.
    Files,
    /// `--baseline-from-cluster`: the policies and attachments stored in Lookout's database.
    Cluster,
}
