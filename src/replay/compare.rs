//! `simulate --baseline` (SPEC §3.4): one job replayed under two policy sets → what the
//! change does to it, and the totals over every job.
//!
//! Owns: [`JobDiff`] (both sides of one job, as numbers) and [`Comparison`] (the totals,
//! folded in input order in constant memory). Each side is replayed by its own
//! `Simulator` (its policies and its engine), so a baseline engine can differ from the
//! candidate's. Must not: format (that is `output::simulate`) or do I/O.
//!
//! Decisions where SPEC §3.4 is silent:
//! - a job changes when its final state or its retry count differs; delay and compute
//!   totals count every job (a new backoff changes the delay of unchanged jobs too).
//! - compute time: the `runFor` of the runs one side starts and the other does not (the
//!   runs after the earlier end). Runs past the end of the recorded history are unknown
//!   and not counted (a `→ Pending` job would run more than is counted).

use std::collections::BTreeMap;

use crate::engine::JobReport;
use crate::model::duration::GoDuration;
use crate::model::history::Final;

/// One side of a job: what the policies made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    pub final_state: Final,
    pub retries: u32,
    pub delay: GoDuration,
    /// Runs the scheduler starts.
    pub runs: usize,
}

impl Side {
    fn of(report: &JobReport) -> Side {
        Side {
            final_state: report.status.final_state(),
            retries: report.retries,
            delay: report.total_delay,
            runs: report.runs.len(),
        }
    }
}

/// One job under both policy sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDiff {
    pub job: String,
    pub baseline: Side,
    pub candidate: Side,
    /// `runFor` of runs the candidate starts and the baseline does not.
    pub compute_added: GoDuration,
    /// `runFor` of runs the baseline starts and the candidate does not.
    pub compute_removed: GoDuration,
}

/// Named transitions of the final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transition {
    /// `Failed → Succeeded`.
    Rescued,
    /// `Succeeded → Failed`.
    Lost,
    /// `→ Pending`: would retry past the end of the recorded history.
    ToPending,
    /// Any other change of final state.
    Other,
}

impl JobDiff {
    pub fn new(baseline: &JobReport, candidate: JobReport) -> JobDiff {
        let (b, c) = (Side::of(baseline), Side::of(&candidate));
        let extra = |longer: &JobReport, from: usize| {
            GoDuration(
                longer.runs[from.min(longer.runs.len())..]
                    .iter()
                    .map(|r| r.ended_at.saturating_sub(r.started_at))
                    .fold(0u64, u64::saturating_add),
            )
        };
        let (compute_added, compute_removed) = if c.runs > b.runs {
            (extra(&candidate, b.runs), GoDuration::ZERO)
        } else {
            (GoDuration::ZERO, extra(baseline, c.runs))
        };
        JobDiff {
            job: candidate.job_id,
            baseline: b,
            candidate: c,
            compute_added,
            compute_removed,
        }
    }

    pub fn changed(&self) -> bool {
        self.baseline.final_state != self.candidate.final_state || self.baseline.retries != self.candidate.retries
    }

    pub fn transition(&self) -> Option<Transition> {
        use Final::*;
        let (from, to) = (self.baseline.final_state, self.candidate.final_state);
        if from == to {
            return None;
        }
        Some(match (from, to) {
            (Failed, Succeeded) => Transition::Rescued,
            (Succeeded, Failed) => Transition::Lost,
            (_, Pending) => Transition::ToPending,
            _ => Transition::Other,
        })
    }
}

/// Totals over every job, folded in input order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    pub jobs: u64,
    pub changed: u64,
    /// Changed jobs whose final state is the same (only the retry count differs).
    pub retries_only: u64,
    pub rescued: u64,
    pub lost: u64,
    pub to_pending: u64,
    pub other: u64,
    /// (baseline final, candidate final) → jobs, for every change of final state.
    pub by_state: BTreeMap<(u8, u8), u64>,
    pub retries_added: u64,
    pub retries_removed: u64,
    pub delay_added: GoDuration,
    pub delay_removed: GoDuration,
    pub compute_added: GoDuration,
    pub compute_removed: GoDuration,
    /// Jobs that could not be replayed on one side or both.
    pub errors: u64,
}

fn add(a: &mut GoDuration, b: u64) {
    a.0 = a.0.saturating_add(b);
}

impl Comparison {
    pub fn add(&mut self, d: &JobDiff) {
        self.jobs += 1;
        let (b, c) = (&d.baseline, &d.candidate);
        if d.changed() {
            self.changed += 1;
        }
        match d.transition() {
            None if d.changed() => self.retries_only += 1,
            None => {}
            Some(t) => {
                match t {
                    Transition::Rescued => self.rescued += 1,
                    Transition::Lost => self.lost += 1,
                    Transition::ToPending => self.to_pending += 1,
                    Transition::Other => self.other += 1,
                }
                *self
                    .by_state
                    .entry((b.final_state as u8, c.final_state as u8))
                    .or_default() += 1;
            }
        }
        self.retries_added += u64::from(c.retries.saturating_sub(b.retries));
        self.retries_removed += u64::from(b.retries.saturating_sub(c.retries));
        add(&mut self.delay_added, c.delay.0.saturating_sub(b.delay.0));
        add(&mut self.delay_removed, b.delay.0.saturating_sub(c.delay.0));
        add(&mut self.compute_added, d.compute_added.0);
        add(&mut self.compute_removed, d.compute_removed.0);
    }

    /// `by_state` with the states named, in a stable order.
    pub fn transitions(&self) -> impl Iterator<Item = (Final, Final, u64)> + '_ {
        self.by_state
            .iter()
            .map(|(&(f, t), &n)| (FINALS[f as usize], FINALS[t as usize], n))
    }
}

const FINALS: [Final; 4] = [Final::Succeeded, Final::Failed, Final::Cancelled, Final::Pending];
