//! One job under one side: its report, with every text the caller asks for, and the runs a
//! Pending side has left (docs/estimates.md).
//!
//! Owns: [`replay_job`], [`replay_job_detailed`] (runs with an `expect` after the job's end
//! reported), [`runs_left`], and what the estimates need to know of a job ([`JobFacts`]).
//! Must not: classify a job's runs (a side's categorizer is `side`'s), count jobs or hand
//! anything to a sink.

use crate::engine::simulator::Simulator;
use crate::engine::{job_context, Detail, JobContext, JobReport, JobStatus, Match, PendingEngine, Settings};
use crate::model::failure_history::FailureHistory;
use crate::replay::estimate::{failed_runs, job_class, FailureClass, MAX_RUNS_LEFT};

/// What the estimates need to know of a job, worked out at most once however many sides
/// ask: its class (its last failed run's) and its depth (its failed runs).
pub struct JobFacts<'a> {
    pub history: &'a FailureHistory,
    /// The job's facts the engines read (`engine::job_context`).
    pub ctx: JobContext<'a>,
    class: std::cell::OnceCell<Option<FailureClass>>,
    pub depth: u32,
}

impl<'a> JobFacts<'a> {
    pub fn new(history: &'a FailureHistory) -> JobFacts<'a> {
        JobFacts {
            history,
            ctx: job_context(history),
            class: std::cell::OnceCell::new(),
            depth: failed_runs(history),
        }
    }

    pub fn class(&self) -> &Option<FailureClass> {
        self.class.get_or_init(|| job_class(self.history))
    }
}

/// docs/estimates.md: the runs a Pending side has left — its engine continued on copies of the job's
/// last recorded failed run (same containers, conditions, category; no node; starting when
/// the previous decision allows) until it decides Fail, at most [`MAX_RUNS_LEFT`]; the
/// pending run counts. A job with no failed run recorded (only returned leases) has the
/// pending run alone.
pub fn runs_left(sim: &Simulator, settings: &Settings, facts: &JobFacts<'_>) -> u32 {
    runs_left_matched(sim, settings, facts, None)
}

/// [`runs_left`] from the engine state the side's replay left (`pending`, taken from its
/// report), so that the recorded runs are not replayed again; without one, as [`runs_left`].
pub fn runs_left_after(
    sim: &Simulator,
    settings: &Settings,
    facts: &JobFacts<'_>,
    pending: Option<Box<PendingEngine>>,
) -> u32 {
    match pending {
        // An error is the recorded runs' (the side is Pending, so they replayed): it cannot be.
        Some(p) => sim
            .runs_left_after(facts.history, &facts.ctx, settings, p, MAX_RUNS_LEFT)
            .unwrap_or(1),
        None => runs_left(sim, settings, facts),
    }
}

/// [`runs_left`] with the recorded runs matched already (`Simulator::match_table` of the
/// job's history over a list with the same matchers).
pub fn runs_left_matched(sim: &Simulator, settings: &Settings, facts: &JobFacts<'_>, matches: Option<&[Match]>) -> u32 {
    // An error is the recorded runs' (the side is Pending, so they replayed): it cannot be.
    sim.runs_left(facts.history, &facts.ctx, settings, matches, MAX_RUNS_LEFT)
        .unwrap_or(1)
}

/// One history under one Simulator, every text written. Every run after the end of the job
/// that has an `expect` is reported (the evaluator's replay names only the first).
pub fn replay_job(sim: &Simulator, settings: &Settings, history: &FailureHistory) -> Result<JobReport, String> {
    replay_job_detailed(sim, settings, history, Detail::Full)
}

/// [`replay_job`] with the texts `detail` asks for ([`Detail::Summary`] when only the
/// summary is printed).
pub fn replay_job_detailed(
    sim: &Simulator,
    settings: &Settings,
    history: &FailureHistory,
    detail: Detail,
) -> Result<JobReport, String> {
    let mut report = sim.simulate_detailed(history, settings, detail)?;
    let ended = !matches!(report.status, JobStatus::Pending { .. });
    if detail != Detail::Outcome && ended && history.runs.len() > report.runs.len() {
        let end = report.runs.len().saturating_sub(1);
        let at = report
            .expectation_failures
            .iter()
            .position(|f| f.starts_with("job: "))
            .unwrap_or(report.expectation_failures.len());
        let mut missing = Vec::new();
        for (k, run) in history.runs.iter().enumerate().skip(report.runs.len()) {
            if run.expect.is_none() {
                continue;
            }
            let prefix = format!("run {k}: ");
            if !report.expectation_failures.iter().any(|f| f.starts_with(&prefix)) {
                missing.push(format!(
                    "run {k}: has expectations but is never evaluated (the job ended at run {end})"
                ));
            }
        }
        report.expectation_failures.splice(at..at, missing);
    }
    Ok(report)
}
