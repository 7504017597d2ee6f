//! One job as `watch` sees it (docs/watch.md): replayed under today's policy (the baseline)
//! and under each candidate, with the same engines and categorizers `simulate --baseline`
//! gives the same sides, then added to the counters.
//!
//! Owns: [`see`] (one job → [`SeenJob`]:
//! the retries today's policy granted, by rule, whether the job failed anyway and what the
//! runs those retries started cost, whether the record contradicts today's policy, and each
//! candidate's change) and [`count`] (a [`SeenJob`] into [`Counters`]). Must not: read Lookout,
//! a clock or a file, or decide what a side is (the command resolves the sides); a job is
//! compared by `replay::run::compare`'s own per-job step (`compare_job`), so that a window's
//! counters are `simulate --baseline`'s numbers over the same jobs.

use crate::engine::job_report::RuleLabel;
use crate::engine::{DecisionKind, Detail, JobReport, Settings};
use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, Final, Outcome as RunOutcome, Run};
use crate::replay::categorize::Reclassify;
use crate::replay::compare::{request_time, JobDiff, Transition};
use crate::replay::policy_sets::PolicySets;
use crate::replay::recorded::Recorded;
use crate::replay::run::{compare_job, Asks};

use super::metrics::{Change, Counters, Family, Outcome, ADDED, LOST, NO_CATEGORY, SAVED};
use super::mix::JobMix;

/// A retry today's policy granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// `POLICY/INDEX` or `POLICY/default`; `(none)` for a retry no rule decided.
    pub rule: String,
    /// The failure category of the run it retried, as today's categorizer gave it (the
    /// recorded one without a categorizer); [`NO_CATEGORY`] when it has none.
    pub category: String,
    /// The signature of the run it retried, as suggest computes it
    /// (docs/reference/suggest.md "Signatures").
    pub signature: String,
    /// The run it started: its run time × the job's GPU request, and × its CPU request
    /// (nanoseconds × thousandths of a device).
    pub gpu: u128,
    pub cpu: u128,
}

/// What one candidate does to the job.
#[derive(Debug, Clone, PartialEq)]
pub struct Shadow {
    pub change: Change,
    /// GPU time of the runs today's policy starts and the candidate does not, on a job the
    /// candidate does not lose; of the runs it starts and today's does not; and of the runs it
    /// leaves out of a job it loses (nanoseconds × thousandths of a GPU).
    pub gpu_saved: u128,
    pub gpu_added: u128,
    pub gpu_lost: u128,
    /// The job's diff, as `simulate --baseline` counts it (the window's verdict adds it up).
    pub diff: JobDiff,
}

/// One job, seen.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenJob {
    pub job: String,
    pub queue: String,
    /// Every retry today's policy granted, in run order.
    pub retries: Vec<Retry>,
    /// Today's policy fails the job in the end: its retries were futile.
    pub failed: bool,
    /// The record contradicts today's decisions (a run after the job's end, a run it would
    /// not have started, …: `simulate`'s contradictions).
    pub contradicted: bool,
    /// Today's retries that collide with a failed pod the executor keeps.
    pub collisions: u64,
    /// Of those, the ones the record shows ran (suggest's `collisionsRan`).
    pub collisions_ran: u64,
    /// The record's failed runs: a job with one is in the verdict's sample, and an incident
    /// window's runs count them.
    pub failed_runs: u64,
    /// The record's own totals (the verdict's hours name what the jobs ask for).
    pub recorded: Recorded,
    /// Its job set, and the signatures and nodes of its failed runs: what tells an unusual
    /// hour's kind (`window`).
    pub mix: JobMix,
    /// Per candidate, in [`PolicySets::candidates`]' order; `None` when the candidate could not
    /// replay the job (`errors` says why).
    pub shadows: Vec<Option<Shadow>>,
    /// What a candidate could not replay, `job `ID`: CANDIDATE: why`.
    pub errors: Vec<String>,
}

/// Replays `history` under every side of `sets` (the one per-job comparison,
/// `replay::run::compare_job`, as `simulate --baseline` replays it); `Err` when today's policy
/// cannot replay it (the job is then not counted, as `simulate --baseline` does not compare
/// it). `reclassify`: the worker's scratch; `sign`: a failed run's signature (suggest's, which
/// the command gives: `watch` does not import `suggest`).
pub fn see(
    sets: &PolicySets,
    settings: &Settings,
    history: &mut FailureHistory,
    reclassify: &mut Reclassify,
    sign: fn(&Run) -> String,
) -> Result<SeenJob, String> {
    // The contradiction checks need the summary's detail; the decisions are the outcome's.
    let asks = Asks {
        baseline_detail: Detail::Summary,
        baseline_categories: true,
        // A window counts no estimate.
        runs_left: false,
    };
    let compared = compare_job(sets.view(), settings, history, asks, reclassify, None)
        .map_err(|e| format!("job `{}`: today's policy: {e}", history.job.id))?;
    let today = compared.baseline;
    let baseline = &today.report;
    let mut recorded = Recorded::default();
    recorded.add(history);
    let mut seen = SeenJob {
        job: history.job.id.clone(),
        queue: history.job.queue.clone().unwrap_or_default(),
        retries: retries(baseline, &today.categories, history, sign),
        failed: baseline.status.final_state() == Final::Failed,
        contradicted: !baseline.contradictions.is_empty(),
        collisions: today.collisions,
        collisions_ran: today.collisions_ran,
        failed_runs: history.runs.iter().filter(|r| r.outcome == RunOutcome::Failed).count() as u64,
        recorded,
        mix: JobMix::of(history),
        shadows: Vec::with_capacity(sets.candidates.len()),
        errors: Vec::new(),
    };
    for (c, replayed) in sets.candidates.iter().zip(compared.candidates) {
        match replayed {
            Ok(r) => seen.shadows.push(Some(shadow(JobDiff::new(baseline, r.report)))),
            Err(e) => {
                seen.errors.push(format!("job `{}`: {}: {e}", history.job.id, c.name));
                seen.shadows.push(None);
            }
        }
    }
    Ok(seen)
}

/// The retries of a report, each with the rule that granted it, the category of the run it
/// retried (`categories`, by run index) and its signature (`sign` of `history`'s run), and the
/// cost of the run it started (the next run of the report: a retry at its last run leaves the
/// job Pending).
fn retries(
    report: &JobReport,
    categories: &[Option<String>],
    history: &FailureHistory,
    sign: fn(&Run) -> String,
) -> Vec<Retry> {
    let r = report.resources.as_ref();
    let (gpu, cpu) = (r.and_then(|r| r.gpu_milli), r.and_then(|r| r.cpu_milli));
    let mut out = Vec::new();
    for (k, run) in report.runs.iter().enumerate() {
        let Some(d) = run.decision.as_ref().filter(|d| d.kind == DecisionKind::Retry) else {
            continue;
        };
        let rule = RuleLabel::of(&report.policies, d).map_or_else(|| "(none)".to_string(), |l| l.to_string());
        let category = categories
            .get(run.index)
            .and_then(|c| c.as_deref())
            .filter(|c| !c.is_empty())
            .unwrap_or(NO_CATEGORY)
            .to_string();
        let ran = report.runs.get(k + 1).map_or(GoDuration::ZERO, |next| {
            GoDuration(next.ended_at.saturating_sub(next.started_at))
        });
        out.push(Retry {
            rule,
            category,
            signature: history.runs.get(run.index).map_or_else(String::new, sign),
            gpu: request_time(ran, gpu),
            cpu: request_time(ran, cpu),
        });
    }
    out
}

/// A candidate's change, as the plan names it, and the GPU time of the runs it adds or drops:
/// dropped from a job it loses is no saving.
fn shadow(diff: JobDiff) -> Shadow {
    let change = match diff.transition() {
        Some(Transition::Rescued) => Change::Rescued,
        Some(Transition::Lost) => Change::Lost,
        Some(Transition::ToPending) => Change::Pending,
        Some(Transition::Other) => Change::RetriedDifferently,
        None if diff.changed() => Change::RetriedDifferently,
        None => Change::Same,
    };
    let gpu = diff.resources.as_ref().and_then(|r| r.gpu_milli);
    let removed = request_time(diff.compute_removed, gpu);
    let (gpu_saved, gpu_lost) = match change {
        Change::Lost => (0, removed),
        _ => (removed, 0),
    };
    Shadow {
        change,
        gpu_saved,
        gpu_added: request_time(diff.compute_added, gpu),
        gpu_lost,
        diff,
    }
}

/// Adds `seen` to `counters`: the job under its recorded `outcome`, its retries by rule (and,
/// when today's policy failed it anyway, as futile, by rule and category, with their runs' GPU
/// and CPU time), its collisions (and those the record shows ran) and contradiction, and each candidate's change and GPU time
/// under the candidate's name.
pub fn count(counters: &mut Counters, seen: &SeenJob, outcome: Outcome, names: &[String]) {
    let q = seen.queue.as_str();
    counters.add(Family::Jobs, &[q, outcome.as_str()], 1);
    for r in &seen.retries {
        counters.add(Family::Retries, &[q, r.rule.as_str()], 1);
        if seen.failed {
            // The signature as it is: `HourlySums::bound_signatures` keeps a queue's 20 most
            // futile of the window, the others `other`, before the page is counted.
            let labels = [q, r.rule.as_str(), r.category.as_str(), r.signature.as_str()];
            counters.add(Family::FutileRetries, &labels, 1);
            counters.add(Family::FutileRetryGpuSeconds, &labels, r.gpu);
            counters.add(Family::FutileRetryCpuSeconds, &labels, r.cpu);
        }
    }
    if seen.collisions > 0 {
        counters.add(Family::Collisions, &[q], u128::from(seen.collisions));
    }
    if seen.collisions_ran > 0 {
        counters.add(Family::CollisionsRan, &[q], u128::from(seen.collisions_ran));
    }
    if seen.contradicted {
        counters.add(Family::Contradictions, &[q], 1);
    }
    for (name, shadow) in names.iter().zip(&seen.shadows) {
        let Some(s) = shadow else { continue };
        counters.add(Family::ShadowJobs, &[q, name, s.change.as_str()], 1);
        counters.add(Family::ShadowGpuSeconds, &[q, name, SAVED], s.gpu_saved);
        counters.add(Family::ShadowGpuSeconds, &[q, name, ADDED], s.gpu_added);
        counters.add(Family::ShadowGpuSeconds, &[q, name, LOST], s.gpu_lost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::simulator::Simulator;
    use crate::model::failure_history::{Container, Job, Resources, Run};
    use crate::model::test_policies;
    use crate::replay::policy_sets::PolicySet;

    fn sim(limit: u32) -> Simulator {
        let yaml = format!(
            "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {{name: p}}\nspec:\n  retryLimit: {limit}\n  rules:\n    - {{action: Retry, onExitCodes: {{operator: In, values: [1]}}}}\n"
        );
        Simulator::new(test_policies(&yaml), Vec::new(), Some(vec!["p".into()])).unwrap()
    }

    /// `failed` runs of exit code 1 of an hour each, then a success when `ends`; 2 GPUs.
    fn history(failed: usize, ends: bool) -> FailureHistory {
        let hour = GoDuration::from_secs(3600);
        let mut runs: Vec<Run> = (0..failed)
            .map(|_| Run {
                containers: vec![Container {
                    exit_code: 1,
                    ..Container::default()
                }],
                category: Some("oom".into()),
                run_for: hour,
                ..Run::default()
            })
            .collect();
        if ends {
            runs.push(Run {
                outcome: crate::model::failure_history::Outcome::Succeeded,
                run_for: hour,
                ..Run::default()
            });
        }
        FailureHistory {
            job: Job {
                id: "j".into(),
                queue: Some("ml".into()),
                resources: Some(Resources {
                    gpu_milli: Some(2000),
                    cpu_milli: Some(500),
                    memory: None,
                }),
                ..Job::default()
            },
            runs,
            expect: None,
        }
    }

    fn seen(today: u32, candidate: u32, h: &mut FailureHistory) -> SeenJob {
        let sets = PolicySets {
            baseline: sim(today),
            candidates: vec![PolicySet {
                name: "c.yaml".into(),
                simulator: sim(candidate),
                settings: None,
            }],
        };
        see(&sets, &Settings::default(), h, &mut Reclassify::default(), |r| {
            format!("exit:{}", r.containers[0].exit_code)
        })
        .unwrap()
    }

    const HOUR_OF_2_GPUS: u128 = 3600 * 1_000_000_000 * 2000;

    /// Each candidate's change and its GPU time saved, added and lost.
    fn shadows(s: &SeenJob) -> Vec<Option<(Change, u128, u128, u128)>> {
        s.shadows
            .iter()
            .map(|x| x.as_ref().map(|x| (x.change, x.gpu_saved, x.gpu_added, x.gpu_lost)))
            .collect()
    }

    #[test]
    fn a_rescue_is_counted_with_what_it_costs() {
        // Today: 1 retry, then the second failure fails the job; the candidate retries twice
        // and reaches the success: rescued, one more hour of 2 GPUs.
        let s = seen(1, 2, &mut history(2, true));
        assert!(s.failed);
        assert_eq!(
            s.retries,
            [Retry {
                rule: "p/0".into(),
                category: "oom".into(),
                signature: "exit:1".into(),
                gpu: HOUR_OF_2_GPUS,
                cpu: 3600 * 1_000_000_000 * 500,
            }]
        );
        assert_eq!(shadows(&s), [Some((Change::Rescued, 0, HOUR_OF_2_GPUS, 0))]);
        let mut c = Counters::default();
        count(&mut c, &s, Outcome::Failed, &["c.yaml".into()]);
        assert_eq!(c.get(Family::Jobs, &["ml", "failed"]), 1);
        assert_eq!(c.get(Family::FutileRetries, &["ml", "p/0", "oom", "exit:1"]), 1);
        assert_eq!(
            c.get(Family::FutileRetryGpuSeconds, &["ml", "p/0", "oom", "exit:1"]),
            HOUR_OF_2_GPUS
        );
        assert_eq!(c.get(Family::ShadowJobs, &["ml", "c.yaml", "rescued"]), 1);
        assert_eq!(
            c.get(Family::ShadowGpuSeconds, &["ml", "c.yaml", "added"]),
            HOUR_OF_2_GPUS
        );
    }

    #[test]
    fn retries_of_a_job_that_succeeds_are_not_futile() {
        let s = seen(3, 3, &mut history(2, true));
        assert!(!s.failed);
        assert_eq!(s.retries.len(), 2);
        assert_eq!(shadows(&s), [Some((Change::Same, 0, 0, 0))]);
        let mut c = Counters::default();
        count(&mut c, &s, Outcome::Succeeded, &["c.yaml".into()]);
        assert_eq!(c.get(Family::Retries, &["ml", "p/0"]), 2);
        assert_eq!(c.get(Family::FutileRetries, &["ml", "p/0", "oom", "exit:1"]), 0);
        assert_eq!(c.get(Family::ShadowJobs, &["ml", "c.yaml", "same"]), 1);
    }

    #[test]
    fn the_runs_of_a_job_a_candidate_loses_are_lost_not_saved() {
        let s = seen(3, 0, &mut history(1, true));
        assert_eq!(shadows(&s), [Some((Change::Lost, 0, 0, HOUR_OF_2_GPUS))]);
        let mut c = Counters::default();
        count(&mut c, &s, Outcome::Succeeded, &["c.yaml".into()]);
        assert_eq!(c.get(Family::ShadowGpuSeconds, &["ml", "c.yaml", "saved"]), 0);
        assert_eq!(
            c.get(Family::ShadowGpuSeconds, &["ml", "c.yaml", "lost"]),
            HOUR_OF_2_GPUS
        );
        // Past the record: the candidate would retry again.
        let s = seen(1, 5, &mut history(2, false));
        assert_eq!(s.shadows[0].as_ref().map(|s| s.change), Some(Change::Pending));
    }

    #[test]
    fn a_candidate_that_drops_a_futile_retry_saves_its_run() {
        // Today retries twice and fails anyway; the candidate once: the same end, one run
        // fewer.
        let s = seen(2, 1, &mut history(3, false));
        assert!(s.failed);
        assert_eq!(shadows(&s), [Some((Change::RetriedDifferently, HOUR_OF_2_GPUS, 0, 0))]);
    }
}
