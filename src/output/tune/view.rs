//! The view `tune` hands its output ([`TuneView`]: the ranked search and what it was asked),
//! with its parts ([`Skipped`], [`TOP`]), where its baseline came from in a document and in
//! words ([`baseline_name`], [`baseline_words`]) and the figures every format reads off a
//! candidate alike (GPU-hours, collisions, the limits it breaks).
//!
//! Owns: those types and figures. Must not: write any format (that is `table`, `record`,
//! `markdown`, `html`), or count and rank (`tune::rank`); every format file imports it.

use crate::replay::backtest::Backtest;
use crate::replay::baseline_from::BaselineFrom;
use crate::replay::compare::hours;
use crate::tune::rank::{Excluded, Ranked, Scored};
use crate::tune::CandidateError;

use crate::output::words::{comparison_sides, contention_said, seconds_words, signed_hours};

/// Candidates the table, markdown and html list at most, in the recommendation order.
pub const TOP: usize = 20;

/// A candidate whose documents do not validate.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub id: u64,
    pub values: Vec<(String, String)>,
    pub errors: Vec<CandidateError>,
}

/// Where the baseline came from, as json and yaml name it (`baselineFrom`). A search's
/// baseline is the template, `--baseline`'s files or the cluster's; the other two are named
/// all the same.
pub(super) fn baseline_name(from: BaselineFrom) -> &'static str {
    match from {
        BaselineFrom::Template => "template",
        BaselineFrom::Files => "files",
        BaselineFrom::Cluster => "cluster",
        BaselineFrom::NoPolicy => "no-policy",
        BaselineFrom::None => "none",
    }
}

/// Where the baseline came from, in words (the table, markdown and html say it).
pub(super) fn baseline_words(from: BaselineFrom) -> &'static str {
    match from {
        BaselineFrom::Template => "the template as written",
        BaselineFrom::Files => "the --baseline files",
        BaselineFrom::Cluster => "what the cluster runs (its Lookout database)",
        BaselineFrom::NoPolicy => "no policy (the engine's default path)",
        BaselineFrom::None => "no baseline",
    }
}

/// Everything a format shows.
#[derive(Debug)]
pub struct TuneView<'a> {
    pub ranked: &'a Ranked,
    pub jobs: u64,
    pub errors: u64,
    pub baseline_from: BaselineFrom,
    /// Each vary as typed, and its values as typed.
    pub varied: &'a [(String, Vec<String>)],
    /// Each vary's column in the tables, in the same order (`Template::columns`).
    pub columns: &'a [String],
    pub skipped: &'a [Skipped],
    pub max_lost: u64,
    /// `--max-compute` as typed.
    pub max_compute: Option<&'a str>,
    pub backtest: Option<&'a Backtest>,
    /// With incidents looked for: the windows found, what they left out of the rates, and
    /// the bursts and surges learned from (as `simulate`'s summary says them).
    pub incidents: Option<&'a crate::replay::incidents::SeenIncidents>,
    /// The command that writes a candidate, up to `--pick` (` --pick ID -o yaml` follows).
    pub pick_command: &'a str,
    /// A side classifies runs with the executor's categorizer: each candidate's collisions
    /// are shown (`collisions` in json and yaml, a COLLISIONS column in the tables).
    pub categorized: bool,
    /// `--shard I/N` printed on its own (not as a partial): its numbers are its jobs' alone.
    pub shard: Option<crate::replay::shard::Shard>,
}

/// A signed run time in seconds, for reading: `+1h2m`, `-30s`.
pub(super) fn signed_seconds(s: f64) -> String {
    if s < 0.0 {
        format!("-{}", seconds_words(-s))
    } else {
        format!("+{}", seconds_words(s))
    }
}

/// Whether any job requests a GPU (then the hours are shown).
pub(super) fn with_gpus(r: &Ranked) -> bool {
    r.candidates.iter().any(|s| {
        let c = &s.tally.comparison;
        c.gpu_added > 0 || c.gpu_removed > 0 || s.pending.gpu_hours > 0.0
    }) || r.baseline.pending.gpu_hours > 0.0
}

/// A candidate's GPU-hours: added − removed + expected.
pub(super) fn gpu_hours(s: &Scored) -> f64 {
    let c = &s.tally.comparison;
    hours(c.gpu_added) - hours(c.gpu_removed) + s.pending.gpu_hours
}

/// Whether the table, markdown and html show the candidates' contention (docs/contention.md):
/// on unless `--contention off`, and some side of some candidate has hours to say
/// ([`contention_said`]).
pub(super) fn with_contention(r: &Ranked) -> bool {
    r.candidates.iter().any(|s| {
        s.tally
            .comparison
            .contention
            .as_ref()
            .is_some_and(|c| contention_said(comparison_sides(c).map(|(_, side)| side)))
    })
}

/// Whether the default left the contention out of this sharded sweep: every format says so
/// where the OVERLAP column's note would be.
pub(super) fn contention_sharded(r: &Ranked) -> bool {
    r.candidates.iter().any(|s| s.tally.comparison.contention_sharded)
}

/// The change of a candidate's overlap with other jobs' waiting demand against its baseline:
/// in GPU-hours where any job waits or retries with a GPU, else in CPU-hours.
pub(super) fn overlap_change(s: &Scored) -> Option<String> {
    let c = s.tally.comparison.contention.as_ref()?;
    let holds = |r: &crate::replay::contention::Resource| r.queued_hours > 0.0 || r.retry_hours > 0.0;
    let [gpu, cpu] = c.overlap_change();
    let (change, unit) = match holds(&c.baseline.gpu) || holds(&c.candidate.gpu) {
        true => (gpu, "GPU-h"),
        false => (cpu, "CPU-h"),
    };
    Some(format!("{} {unit}", signed_hours(change)))
}

/// The candidate's collisions: its Retry decisions on runs whose pod the executor keeps
/// (docs/categorizer.md), as `simulate --baseline` counts the candidate side's.
pub(super) fn collisions(s: &Scored) -> u64 {
    s.tally
        .comparison
        .categories
        .as_ref()
        .map_or(0, |c| c.candidate.collisions)
}

/// Whether `s` breaks `--max-lost`, and whether it breaks `--max-compute`.
pub(super) fn over(s: &Scored) -> (bool, bool) {
    (
        s.excluded.iter().any(|e| matches!(e, Excluded::Lost { .. })),
        s.excluded.iter().any(|e| matches!(e, Excluded::Compute { .. })),
    )
}
