//! One job under every side of a comparison ([`compare_job`]): the one per-job step that
//! `compare` (one candidate: `simulate --baseline`, `suggest`'s second pass, `watch`'s
//! `/report`) and `watch` (one candidate per `-f`) both run, so that a window of `watch`'s
//! counters is `simulate --baseline`'s numbers over the same jobs by construction.
//!
//! Each side classifies the job's runs with its own categorizer (once for every side when
//! they share one), replays it, counts its collisions and, when it is Pending, the runs it has
//! left; the recorded categories are put back after.
//!
//! Owns: [`compare_job`], [`Asks`], [`JobCompared`], [`SideReplayed`], [`SideCounts`]. Must not: fold
//! jobs, hand anything to a sink, or word an error beyond the side it comes from.

use crate::engine::simulator::Simulator;
use crate::engine::{Detail, JobReport, Settings};
use crate::model::failure_history::{FailureHistory, Final};
use crate::replay::categorize::{CategoryCounts, Reclassify};
use crate::replay::sides::PolicySets;

use super::job::{replay_job_detailed, runs_left_after, JobFacts};

/// One side's replay of a job.
pub struct SideReplayed {
    pub report: JobReport,
    /// When the side leaves the job Pending: the runs it has left (docs/estimates.md).
    pub runs_left: Option<u32>,
    /// Its Retry decisions on runs whose pod the executor keeps (under the upstream engine,
    /// with a categorizer): the retried pod reuses the name and collides.
    pub collisions: u64,
    /// When asked ([`Asks::baseline_categories`], the baseline only): each run's category as
    /// this side saw it (classified by its categorizer, else recorded), by the history's run
    /// index.
    pub categories: Vec<Option<String>>,
}

/// What a caller asks of a job's comparison beyond each side's outcome.
#[derive(Debug, Clone, Copy)]
pub struct Asks {
    /// The baseline's detail: the summary's contradiction checks when it is a policy the
    /// cluster ran.
    pub baseline_detail: Detail,
    /// The baseline side's category of each run (`watch`'s futile retries by category).
    pub baseline_categories: bool,
}

/// A job under every side: the baseline's replay and each candidate's, in
/// [`PolicySets::candidates`]' order (an `Err` says why that candidate could not replay it).
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

/// `history` under every side of `sets`: the baseline with what `asks` asks of it, each
/// candidate for its outcome.
/// `Err`: the baseline could not replay it (nothing else is replayed). `counts`: where each
/// side's category changes and collisions are added, when they are counted. `reclassify` is
/// the worker's scratch; `history` is as it was given when this returns.
pub fn compare_job(
    sets: &PolicySets,
    settings: &Settings,
    history: &mut FailureHistory,
    asks: Asks,
    reclassify: &mut Reclassify,
    mut counts: Option<SideCounts<'_>>,
) -> Result<JobCompared, String> {
    // One categorizer for every side classifies the history once for all; with counts of
    // several candidates, each side counts its own.
    let shared = sets.shared_categorizer() && (counts.is_none() || sets.candidates.len() == 1);
    let mut scratch = CategoryCounts::default();
    if let (true, Some(c)) = (shared, sets.baseline.categorizer()) {
        match counts.as_mut() {
            Some(n) => reclassify.apply(c, history, n.baseline, n.candidates.first_mut()),
            None => reclassify.apply(c, history, &mut scratch, None),
        }
    }
    let mut side = |sim: &Simulator, counts: Option<&mut CategoryCounts>, detail: Detail, categories: bool| {
        let categorizer = sim.categorizer();
        let counts = counts.unwrap_or(&mut scratch);
        if let (false, Some(c)) = (shared, categorizer) {
            reclassify.apply(c, history, counts, None);
        }
        let replayed = replay_job_detailed(sim, settings, history, detail).map(|mut report| {
            let pending = report.take_pending();
            let runs_left = (report.status.final_state() == Final::Pending)
                .then(|| runs_left_after(sim, settings, &JobFacts::new(history), pending));
            let collisions = match categorizer {
                Some(_) => reclassify.collided(sim.engine(), &report),
                None => 0,
            };
            counts.collisions += collisions;
            let categories = match categories {
                true => history.runs.iter().map(|r| r.category.clone()).collect(),
                false => Vec::new(),
            };
            SideReplayed {
                report,
                runs_left,
                collisions,
                categories,
            }
        });
        if let (false, Some(_)) = (shared, categorizer) {
            reclassify.restore(history);
        }
        replayed
    };
    let (baseline_counts, mut candidate_counts) = match counts {
        Some(SideCounts { baseline, candidates }) => (Some(baseline), Some(candidates)),
        None => (None, None),
    };
    let baseline = side(
        &sets.baseline,
        baseline_counts,
        asks.baseline_detail,
        asks.baseline_categories,
    );
    let compared = baseline.map(|baseline| JobCompared {
        baseline,
        candidates: sets
            .candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let counts = candidate_counts.as_mut().and_then(|n| n.get_mut(i));
                side(&c.simulator, counts, Detail::Outcome, false)
            })
            .collect(),
    });
    if shared {
        reclassify.restore(history);
    }
    compared
}
