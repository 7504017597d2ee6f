//! The per-side step: one job under one side, as every verb replays a side ([`replay_side`]).
//! The job's runs are classified by the side's categorizer, the job is replayed, its runs
//! left (when the side leaves it Pending) and its collisions are found, and the recorded
//! categories are put back. `compare_job` runs it for each side of a comparison, the plain
//! replay for its one side, and `tune`'s sweep drives it for the baseline and for each group
//! of candidates that share a categorizer.
//!
//! Owns: [`replay_side`], [`as_side`] (a job as a side's categorizer classifies it, and the
//! recorded categories put back after: the one place a replay applies a categorizer),
//! [`replay_classified`] (a side's replay of a job classified already), [`SideAsks`] and
//! [`SideReplayed`]. Must not: fold jobs, hand anything to a sink, or word an error beyond
//! the side it comes from.

use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::{Detail, JobReport, Settings};
use crate::model::failure_history::{FailureHistory, Final};
use crate::replay::categorize::{CategoryCounts, Reclassify};

use super::job::{replay_job_detailed, runs_left_after, JobFacts};

/// One side's replay of a job.
pub struct SideReplayed {
    pub report: JobReport,
    /// When the side leaves the job Pending and [`SideAsks::runs_left`]: the runs it has left
    /// (docs/estimates.md).
    pub runs_left: Option<u32>,
    /// Its Retry decisions on runs whose pod the executor keeps (under the upstream engine,
    /// with a categorizer): the retried pod reuses the name and collides.
    pub collisions: u64,
    /// Of those, the retries the record shows ran (the next run started): the categorizer is
    /// not the one the cluster ran (suggest's `collisionsRan`, `watch`'s counter of them).
    pub collisions_ran: u64,
    /// When asked ([`SideAsks::categories`]): each run's category as this side saw it
    /// (classified by its categorizer, else recorded), by the history's run index.
    pub categories: Vec<Option<String>>,
}

/// What a caller asks of one side's replay beyond its outcome and collisions.
#[derive(Debug, Clone, Copy)]
pub struct SideAsks {
    /// The report's texts and checks.
    pub detail: Detail,
    /// The runs a Pending side has left (the estimates'; `watch` reads none).
    pub runs_left: bool,
    /// Each run's category as the side saw it ([`SideReplayed::categories`]).
    pub categories: bool,
    /// Each run record of the report given its classified and recorded pairs (what a decision
    /// record prints with a categorizer).
    pub annotate: bool,
}

impl SideAsks {
    /// The outcome and the numbers a comparison counts, with the runs a Pending side has left
    /// when `runs_left`.
    pub const fn outcome(runs_left: bool) -> SideAsks {
        SideAsks {
            detail: Detail::Outcome,
            runs_left,
            categories: false,
            annotate: false,
        }
    }
}

/// `f` given `history` as a side with `categorizer` sees it (its runs classified, each change
/// counted into `counts` and `also`, when given) and the scratch that classified it (`None`
/// without a categorizer); the recorded categories are put back after, whatever `f` returns.
pub fn as_side<T>(
    categorizer: Option<&Classifier>,
    history: &mut FailureHistory,
    reclassify: &mut Reclassify,
    counts: Option<&mut CategoryCounts>,
    also: Option<&mut CategoryCounts>,
    f: impl FnOnce(&FailureHistory, Option<&Reclassify>) -> T,
) -> T {
    let Some(c) = categorizer else {
        return f(history, None);
    };
    reclassify.apply(c, history, counts, also);
    let t = f(history, Some(reclassify));
    reclassify.restore(history);
    t
}

/// The per-side step: `history` under `sim`, classified by its categorizer (its changes and
/// collisions counted into `counts`, when given), with what `asks` asks; `history` is as it
/// was given when this returns.
pub fn replay_side(
    sim: &Simulator,
    settings: &Settings,
    history: &mut FailureHistory,
    asks: SideAsks,
    reclassify: &mut Reclassify,
    mut counts: Option<&mut CategoryCounts>,
) -> Result<SideReplayed, String> {
    let replayed = as_side(
        sim.categorizer(),
        history,
        reclassify,
        counts.as_deref_mut(),
        None,
        |h, r| replay_classified(sim, settings, h, asks, r),
    );
    if let (Ok(r), Some(c)) = (&replayed, counts) {
        c.collisions += r.collisions;
    }
    replayed
}

/// [`replay_side`]'s replay of a history classified already as `sim`'s side sees it
/// (`classified`: the scratch that classified it, `None` when the side has no categorizer).
pub fn replay_classified(
    sim: &Simulator,
    settings: &Settings,
    history: &FailureHistory,
    asks: SideAsks,
    classified: Option<&Reclassify>,
) -> Result<SideReplayed, String> {
    let mut report = replay_job_detailed(sim, settings, history, asks.detail)?;
    let pending = report.take_pending();
    let runs_left = (asks.runs_left && report.status.final_state() == Final::Pending)
        .then(|| runs_left_after(sim, settings, &JobFacts::new(history), pending));
    let collisions = classified.map_or(0, |r| r.collided(sim.engine(), &report));
    let collisions_ran = classified.map_or(0, |r| r.collided_ran(sim.engine(), &report, history));
    if let (true, Some(r)) = (asks.annotate, classified) {
        r.annotate(history, &mut report);
    }
    let categories = match asks.categories {
        true => history.runs.iter().map(|r| r.category.clone()).collect(),
        false => Vec::new(),
    };
    Ok(SideReplayed {
        report,
        runs_left,
        collisions,
        collisions_ran,
        categories,
    })
}
