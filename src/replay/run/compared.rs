//! One job under every side of a comparison ([`compare_job`]): the one per-job step that
//! `compare` (one candidate: `simulate --baseline`, `suggest`'s second pass, `watch`'s
//! `/report`) and `watch` (one candidate per `-f`) both run, so that a window of `watch`'s
//! counters is `simulate --baseline`'s numbers over the same jobs by construction.
//!
//! Each side classifies the job's runs with its own categorizer (once for every side when
//! they share one), replays it, counts its collisions and, when it is Pending, the runs it has
//! left; the recorded categories are put back after.
//!
//! Owns: [`compare_job`], [`Asks`], [`JobCompared`], [`SideCounts`]. Must not: fold
//! jobs, hand anything to a sink, or word an error beyond the side it comes from.

use crate::engine::{Detail, Settings};
use crate::model::failure_history::FailureHistory;
use crate::replay::categorize::{CategoryCounts, Reclassify};
use crate::replay::policy_sets::SetsView;

use super::side::{as_side, replay_classified, replay_side, SideAsks, SideReplayed};

/// What a caller asks of a job's comparison beyond each side's outcome.
#[derive(Debug, Clone, Copy)]
pub struct Asks {
    /// The baseline's detail: the summary's contradiction checks when it is a policy the
    /// cluster ran.
    pub baseline_detail: Detail,
    /// The baseline side's category of each run (`watch`'s futile retries by category).
    pub baseline_categories: bool,
    /// The runs each side has left when it leaves the job Pending (the estimates'; `watch`
    /// counts none).
    pub runs_left: bool,
}

/// A job under every side: the baseline's replay and each candidate's, in
/// [`SetsView::candidates`]' order (an `Err` says why that candidate could not replay it).
pub struct JobCompared {
    pub baseline: SideReplayed,
    pub candidates: Vec<Result<SideReplayed, String>>,
}

/// Where the categorizers' changes and collisions are counted: the baseline's, and one per
/// candidate.
pub struct SideCounts<'a> {
    pub baseline: &'a mut CategoryCounts,
    pub candidates: &'a mut [CategoryCounts],
}

/// `history` under every side of `sets` (each by the per-side step, `replay_side`): the
/// baseline with what `asks` asks of it, each candidate for its outcome, under its own
/// scheduler settings when it has some.
/// `Err`: the baseline could not replay it (nothing else is replayed). `counts`: where each
/// side's category changes and collisions are added, when they are counted. `reclassify` is
/// the worker's scratch; `history` is as it was given when this returns.
pub fn compare_job(
    sets: SetsView<'_>,
    settings: &Settings,
    history: &mut FailureHistory,
    asks: Asks,
    reclassify: &mut Reclassify,
    counts: Option<SideCounts<'_>>,
) -> Result<JobCompared, String> {
    let baseline_asks = SideAsks {
        detail: asks.baseline_detail,
        runs_left: asks.runs_left,
        categories: asks.baseline_categories,
        annotate: false,
    };
    let candidate_asks = SideAsks::outcome(asks.runs_left);
    let (mut baseline_counts, mut candidate_counts) = match counts {
        Some(SideCounts { baseline, candidates }) => (Some(baseline), Some(candidates)),
        None => (None, None),
    };
    // One categorizer for every side classifies the history once for all; with counts of
    // several candidates, each side counts its own.
    let shared = sets.shared_categorizer() && (candidate_counts.is_none() || sets.candidates.len() == 1);
    if shared {
        let first = candidate_counts.as_deref_mut().and_then(|n| n.first_mut());
        let compared = as_side(
            sets.baseline.categorizer(),
            history,
            reclassify,
            baseline_counts.as_deref_mut(),
            first,
            |h, r| {
                let baseline = replay_classified(sets.baseline, settings, h, baseline_asks, r)?;
                let candidates = sets
                    .candidates
                    .iter()
                    .map(|c| {
                        replay_classified(
                            &c.simulator,
                            c.settings.as_ref().unwrap_or(settings),
                            h,
                            candidate_asks,
                            r,
                        )
                    })
                    .collect();
                Ok::<_, String>(JobCompared { baseline, candidates })
            },
        )?;
        if let Some(n) = baseline_counts {
            n.collisions += compared.baseline.collisions;
        }
        for (c, n) in compared.candidates.iter().zip(candidate_counts.into_iter().flatten()) {
            if let Ok(c) = c {
                n.collisions += c.collisions;
            }
        }
        return Ok(compared);
    }
    let baseline = replay_side(
        sets.baseline,
        settings,
        history,
        baseline_asks,
        reclassify,
        baseline_counts,
    )?;
    let candidates = sets
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let counts = candidate_counts.as_deref_mut().and_then(|n| n.get_mut(i));
            let settings = c.settings.as_ref().unwrap_or(settings);
            replay_side(&c.simulator, settings, history, candidate_asks, reclassify, counts)
        })
        .collect();
    Ok(JobCompared { baseline, candidates })
}
