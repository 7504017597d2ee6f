//! One pass over the history for every candidate of `tune` (SPEC §8): each history is read
//! and decoded once, replayed once under the baseline, then under each candidate, and each
//! candidate's comparison is folded exactly as `simulate --baseline` folds it
//! (`replay::run::tally_job`), so that candidate i's numbers are what `simulate -f
//! <candidate i> --baseline …` prints.
//!
//! Owns: [`sweep`] — the jobs in parallel and in input order (`replay::parallel`), the
//! baseline's own totals (its final states and Pending jobs, for its expected successes and
//! cost), the trials (counted once: they depend on the history alone), and the messages a
//! replay has about its input (bad lines, missing queues), handed to a [`Listener`]. Must
//! not: rank candidates (that is `rank`), format or decide exit codes.
//!
//! Decisions where SPEC §8 is silent:
//! - a `scheduler:` vary changes the scheduler both sides run under, as `simulate
//!   --scheduler-config` would for that candidate: the baseline is replayed once per distinct
//!   scheduler setting among the candidates; the baseline's own row is the template's.
//! - a job that one candidate (or the baseline) cannot replay is an error of the whole job:
//!   it is counted for no candidate, reported once, and makes the exit status 3.

use std::io;

use crate::engine::simulator::Simulator;
use crate::engine::{Detail, JobReport, Settings};
use crate::model::duration::GoDuration;
use crate::model::failure_history::Final;
use crate::replay::backtest::Backtest;
use crate::replay::compare::{JobDiff, Side};
use crate::replay::estimate::{PendingSet, Rates};
use crate::replay::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::run::{
    fallback, replay_job_detailed, runs_left, tally_job, BacktestError, CompareTally, Fallback, Fallbacks, JobFacts,
    Options, TrialCount,
};
use crate::replay::sink::Message;
use crate::replay::source::{HistorySource, Progress};

/// One candidate to replay: its policies (and engine), and its own scheduler settings when
/// a `scheduler:` vary gives it some (`None`: the source's).
#[derive(Debug)]
pub struct Arm {
    pub sim: Simulator,
    pub settings: Option<Settings>,
}

/// The baseline's own totals (under the template's scheduler settings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BaselineTally {
    /// Jobs by final state, indexed by `Final as usize`.
    pub finals: [u64; 4],
    /// Its Pending jobs (their estimates: its expected successes and cost).
    pub pending: PendingSet,
    /// The run time of every recorded run it starts (`--max-compute P%`).
    pub compute: GoDuration,
}

impl BaselineTally {
    fn merge(&mut self, o: &BaselineTally) {
        for (mine, theirs) in self.finals.iter_mut().zip(o.finals) {
            *mine += theirs;
        }
        self.pending.merge(&o.pending);
        self.compute = GoDuration(self.compute.0.saturating_add(o.compute.0));
    }
}

/// What the pass found.
#[derive(Debug)]
pub struct Swept {
    /// Jobs replayed (every candidate's comparison counts them all).
    pub jobs: u64,
    /// Entries that could not be replayed.
    pub errors: u64,
    pub baseline: BaselineTally,
    /// One per arm, in order.
    pub arms: Vec<CompareTally>,
    pub rates: Rates,
    pub backtest: Option<Backtest>,
    /// Some job got the policies given on the command line (no queue, or one not given).
    pub used_given: bool,
}

/// Where the messages of the pass go (stderr, in the command).
pub trait Listener {
    fn message(&mut self, m: &Message<'_>) -> io::Result<()>;
    fn progress(&mut self, at: Progress);
}

/// A worker's fold over its unit.
#[derive(Default)]
struct Part {
    jobs: u64,
    trials: TrialCount,
    baseline: BaselineTally,
    arms: Vec<CompareTally>,
}

/// Replays every job of `source` under `baseline` and every arm, in one pass. `Err` inside:
/// `--backtest-at` has no answer (nothing else is wrong).
pub fn sweep<S: HistorySource>(
    source: S,
    baseline: &Simulator,
    arms: &[Arm],
    options: &Options,
    listener: &mut dyn Listener,
) -> io::Result<Result<Swept, BacktestError>> {
    // The distinct scheduler settings: 0 is the source's; each arm's index into them.
    let mut groups: Vec<Option<&Settings>> = vec![None];
    let group_of: Vec<usize> = arms
        .iter()
        .map(|a| match a.settings.as_ref() {
            None => 0,
            Some(s) => match groups.iter().position(|g| *g == Some(s)) {
                Some(i) => i,
                None => {
                    groups.push(Some(s));
                    groups.len() - 1
                }
            },
        })
        .collect();
    let fallback_sim = arms.first().map_or(baseline, |a| &a.sim);
    let work = |part: &mut Part, job: Decoded<'_>| {
        let h = job.history;
        let fail = |side: &str, e: String| format!("{}: job `{}`: {side}{e}", job.origin, h.job.id);
        // The baseline once per scheduler setting, with the runs it has left when Pending.
        let mut bases: Vec<(JobReport, u32)> = Vec::with_capacity(groups.len());
        for g in &groups {
            let settings = g.unwrap_or(job.settings);
            let b = replay_job_detailed(baseline, settings, h, Detail::Summary).map_err(|e| fail("baseline: ", e))?;
            let left = match b.status.final_state() {
                Final::Pending => runs_left(baseline, settings, h),
                _ => 0,
            };
            bases.push((b, left));
        }
        // Every candidate replayed before anything is counted: a job one of them cannot
        // replay counts for none.
        let mut diffs = Vec::with_capacity(arms.len());
        for (arm, &g) in arms.iter().zip(&group_of) {
            let settings = groups[g].unwrap_or(job.settings);
            let c = replay_job_detailed(&arm.sim, settings, h, Detail::Summary).map_err(|e| fail("", e))?;
            let (b, left) = &bases[g];
            let mut diff = JobDiff::new(b, c);
            diff.baseline.runs_left = *left;
            diffs.push(diff);
        }
        part.jobs += 1;
        part.trials.add(h, options);
        let facts = JobFacts::new(h);
        let (b, left) = &bases[0];
        let side = Side::of(b);
        let t = &mut part.baseline;
        t.finals[side.final_state as usize] += 1;
        t.compute = GoDuration(t.compute.0.saturating_add(side.compute.0));
        if side.final_state == Final::Pending {
            t.pending
                .add(facts.class().as_ref(), facts.depth, *left, h.job.resources.as_ref());
        }
        if part.arms.len() < arms.len() {
            part.arms.resize_with(arms.len(), CompareTally::default);
        }
        for (((diff, arm), &g), tally) in diffs.iter_mut().zip(arms).zip(&group_of).zip(&mut part.arms) {
            let settings = groups[g].unwrap_or(job.settings);
            tally_job(diff, &arm.sim, settings, &facts, tally);
        }
        Ok((h.job.id.clone(), fallback(fallback_sim, h)))
    };
    let mut total = Part::default();
    let mut errors = 0u64;
    let mut fallbacks = Fallbacks::default();
    let emit = |e: Emitted<(String, Option<Fallback>), Part>| -> io::Result<bool> {
        let p = match e {
            Emitted::Job(p) => p,
            Emitted::Unit(part, at) => {
                total.jobs += part.jobs;
                total.trials.merge(&part.trials);
                total.baseline.merge(&part.baseline);
                if total.arms.len() < part.arms.len() {
                    total.arms.resize_with(part.arms.len(), CompareTally::default);
                }
                for (mine, theirs) in total.arms.iter_mut().zip(&part.arms) {
                    mine.merge(theirs);
                }
                listener.progress(at);
                return Ok(true);
            }
        };
        match p {
            Processed::Done((job, f)) => {
                if let Some(queue) = fallbacks.add(f) {
                    listener.message(&Message::MissingQueue {
                        job: &job,
                        queue: &queue,
                        given: fallback_sim.given(),
                    })?;
                }
            }
            Processed::Error(m) => {
                errors += 1;
                listener.message(&Message::Error(&m))?;
            }
            Processed::Invalid(f) => {
                errors += 1;
                listener.message(&Message::Invalid(&f))?;
            }
            Processed::LeftOut(text) => listener.message(&Message::LeftOut(&text))?,
        }
        Ok(true)
    };
    for_each_ordered(source, work, emit)?;
    let (rates, backtest) = match total.trials.finish(options) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let mut arms_out = total.arms;
    arms_out.resize_with(arms.len(), CompareTally::default);
    for a in &mut arms_out {
        a.comparison.errors = errors;
    }
    Ok(Ok(Swept {
        jobs: total.jobs,
        errors,
        baseline: total.baseline,
        arms: arms_out,
        rates,
        backtest,
        used_given: fallbacks.used_given,
    }))
}
