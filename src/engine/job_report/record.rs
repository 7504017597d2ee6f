//! The replay that writes a report: each run's start (its own, or when it became eligible
//! plus its queueing), its decision by either engine as a record, that decision in words, and
//! the contradictions between the history and the decisions (its runs, and how it says the job
//! ended: `job.state`).
//!
//! Owns: [`replay_named`] and the steps it takes on a [`JobReport`]. Must not: replay without
//! a report (that is `quiet`), or check `expect` (that is `expect`).

use std::sync::Arc;

use crate::engine::decision::{pod_name, Avoid, Decision, DecisionKind};
use crate::engine::design::evaluate;
use crate::engine::inputs::{EngineKind, Settings, DEFAULT_GRACE, FAIL_FAST_ANNOTATION};
use crate::engine::job_state::{JobContext, JobState};
use crate::engine::matcher::Policies;
use crate::engine::upstream::{self, UpstreamJob};
use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, JobEnd, Outcome, Run, StartedAt};
use crate::model::policy::Action;

use super::expect::{check_job, check_run};
use super::report::{Detail, JobReport, JobStatus, PendingEngine, RunRecord};
use super::schedule::{Avoiding, NodesTried, Schedule};
use super::words::{describe_failure, explain};

/// [`replay_detailed`](super::replay_detailed) with the policies' names for the report given, so
/// that a caller that replays many jobs with the same list shares one copy (`Simulator` keeps one
/// per resolved list, with its shared regexes). `names[i]` is `policies[i]`'s name.
pub(in crate::engine) fn replay_named(
    history: &FailureHistory,
    policies: Policies<'_>,
    names: Arc<[String]>,
    settings: &Settings,
    engine: EngineKind,
    detail: Detail,
) -> JobReport {
    debug_assert!(names.iter().map(String::as_str).eq(policies.iter().map(|p| p.name())));
    let job = &history.job;
    let ctx = job_context(history);
    let mut settings = settings.clone();
    let mut report = JobReport::start(history, names, &settings, engine);
    let mut state = JobState::new(job.memory);
    let mut schedule = Schedule::default();
    let mut tried = NodesTried::default();
    let mut ended: Option<usize> = None;
    let checks = detail != Detail::Outcome;
    for (k, run) in history.runs.iter().enumerate() {
        if let Some(end) = ended {
            if checks {
                report.run_after_end(k, end, run);
            }
            break;
        }
        // docs/engines.md: a scheduler reload may lower the global limit between runs.
        if let Some(g) = run.global_max_retries {
            settings.global_max_retries = g;
        }
        let started_at = start_time(&mut report, history, k, schedule.eligible_at);
        if checks {
            schedule.check_start(&mut report, history, &mut tried, k, started_at);
        }
        let ended_at = started_at.saturating_add(run.run_for.0);
        // A run with an `expect` keeps its texts: a failed check quotes them.
        let texts = detail == Detail::Full || (checks && run.expect.is_some());
        if texts {
            tried.catch_up(&mut state, history, k);
        }
        // Used in place: a `Decision` is a few hundred bytes, and each move of it, or of
        // the record holding it, was a `memcpy` call per run.
        let decided = decide(
            policies, &settings, &ctx, history, &mut state, k, ended_at, engine, texts,
        );
        let decision = decided.0.as_ref();
        let avoiding = match decided.1 {
            Some(avoid) => Avoiding::Derived { from: k, avoid },
            None => Avoiding::Listed { from: k },
        };
        // The job-level `final` check quotes the reason of the run that failed the job.
        let final_reason = checks && history.expect.is_some() && decision.is_some_and(|d| d.action() == Action::Fail);
        let reason = if texts || final_reason {
            reason_text(&report, decision, &settings, k, engine)
        } else {
            String::new()
        };
        if report.advance(&mut schedule, k, decision, avoiding, &reason, ended_at) {
            ended = Some(k);
        }
        report.runs.push(RunRecord {
            index: k,
            // Upstream's executor reuses `armada-<jobId>-0` for every run (docs/engines.md is the
            // design's).
            pod_name: if texts {
                pod_name(&job.id, k, settings.enabled && engine == EngineKind::Design)
            } else {
                String::new()
            },
            node: if texts { run.node.clone() } else { None },
            started_at,
            ended_at,
            outcome: run.outcome,
            failure: if texts { describe_failure(run) } else { String::new() },
            decision: decided.0,
            reason: if texts { reason } else { String::new() },
            categories: None,
        });
        if let Some(e) = run.expect.as_ref().filter(|_| checks) {
            let mut failures = Vec::new();
            check_run(&report, &report.runs[k], e, &mut |m| failures.push(m));
            report.expectation_failures.extend(failures);
        }
    }
    report.retries = state.total_retries;
    report.memory = state.memory;
    if checks {
        report.ended_by_the_record(history);
    }
    if let JobStatus::Pending { retry_after } = report.status {
        // The node names are gathered only for the words of a record (`NodesTried`): no
        // decision of the runs left reads them, and without them the state is the same
        // whatever `detail` wrote.
        let mut state = state;
        state.nodes_tried.clear();
        report.pending = Some(Box::new(PendingEngine {
            state,
            global_max_retries: settings.global_max_retries,
            eligible_at: retry_after,
        }));
    }
    if let Some(e) = history.expect.as_ref().filter(|_| checks) {
        check_job(&mut report, e);
    }
    report
}

/// docs/simulate.md: when run `k` started: its own `startedAt` (an offset, or an instant when the
/// submission time is known), else when it became eligible plus `queuedFor`.
fn start_time(report: &mut JobReport, history: &FailureHistory, k: usize, eligible_at: u64) -> u64 {
    let run = &history.runs[k];
    match run.started_at {
        None => eligible_at.saturating_add(run.queued_for.0),
        Some(StartedAt::Offset(d)) => d.0,
        Some(StartedAt::Absolute(t)) => match history.job.submitted_at {
            Some(s) => match t.since(s) {
                Some(d) => d.0,
                None => {
                    report
                        .contradictions
                        .push(format!("run {k} starts at {t}, before the job was submitted"));
                    eligible_at
                }
            },
            None => {
                report.contradictions.push(format!(
                    "run {k} gives an absolute startedAt `{t}` but job.submittedAt is not set; using the eligible time"
                ));
                eligible_at
            }
        },
    }
}

/// docs/engines.md: run `k`'s decision by `engine` (none for a run that succeeded), as a record;
/// without `texts`, the design engine leaves out its words (signal, nodes to avoid, next pod
/// name), and then also returns which nodes the record would list.
#[allow(clippy::too_many_arguments)]
fn decide(
    policies: Policies<'_>,
    settings: &Settings,
    ctx: &JobContext<'_>,
    history: &FailureHistory,
    state: &mut JobState,
    k: usize,
    ended_at: u64,
    engine: EngineKind,
    texts: bool,
) -> (Option<Decision>, Option<Avoid>) {
    let run = &history.runs[k];
    if run.outcome == Outcome::Succeeded {
        return (None, None);
    }
    match engine {
        EngineKind::Design => {
            let v = evaluate(policies, settings, ctx, state, run, k, ended_at);
            if texts {
                (
                    Some(Decision::from_verdict(&v, run, state, ctx.id, k, settings.enabled)),
                    None,
                )
            } else {
                (Some(Decision::from_verdict_untold(&v)), Some(v.avoid))
            }
        }
        EngineKind::Upstream => (
            Some(upstream::evaluate(
                policies.first().copied(),
                settings,
                ctx,
                UpstreamJob {
                    gang: history.job.gang_cardinality.is_some_and(|c| c > 1),
                },
                state,
                run,
                k,
                ended_at,
            )),
            // Upstream lists its nodes whatever the texts (its own rule, docs/engines.md).
            None,
        ),
    }
}

/// The decision of run `k` in words (upstream's own words under the upstream engine).
fn reason_text(
    report: &JobReport,
    decision: Option<&Decision>,
    settings: &Settings,
    k: usize,
    engine: EngineKind,
) -> String {
    let Some(d) = decision else {
        return "succeeded".to_string();
    };
    let label = d
        .policy
        .and_then(|p| Some(format!("{}/{}", report.policies.get(p)?, d.rule?)));
    let upstream_words = match engine {
        EngineKind::Upstream => upstream::reason(d, label.as_deref()),
        EngineKind::Design => None,
    };
    let mut text = upstream_words.unwrap_or_else(|| {
        explain(
            d,
            label.as_deref(),
            settings.max_attempted_runs,
            k + 1,
            settings.enabled,
        )
    });
    if let Some(note) = d.memory_note {
        text.push_str("; ");
        text.push_str(note.as_str());
    }
    text
}

impl JobReport {
    /// The report before any run is replayed.
    fn start(history: &FailureHistory, policies: Arc<[String]>, settings: &Settings, engine: EngineKind) -> Self {
        let job = &history.job;
        JobReport {
            job_id: job.id.clone(),
            queue: job.queue.clone(),
            policies,
            engine,
            ignored_policies: Vec::new(),
            global_max_retries: settings.global_max_retries,
            enabled: settings.enabled,
            submitted_at: job.submitted_at,
            runs: Vec::with_capacity(history.runs.len()),
            status: JobStatus::Pending { retry_after: 0 },
            retries: 0,
            total_delay: GoDuration::ZERO,
            memory: job.memory,
            resources: job.resources,
            expectation_failures: Vec::new(),
            contradictions: Vec::new(),
            pending: None,
        }
    }

    /// Run `k` comes after the job ended at run `end`: a contradiction, and its
    /// expectations are never checked.
    fn run_after_end(&mut self, k: usize, end: usize, run: &Run) {
        self.contradictions.push(format!(
            "run {k} follows the end of the job at run {end} ({}): the scheduler never starts it",
            self.status.final_state().as_str()
        ));
        if run.expect.is_some() {
            self.expectation_failures.push(format!(
                "run {k}: has expectations but is never evaluated (the job ended at run {end})"
            ));
        }
    }

    /// The record's end of the job (`job.state`) is not the one these decisions give its
    /// runs: a contradiction, in either direction. Ended `succeeded` or `failed` after its
    /// last run where these decisions would start another (the job is Pending); ended
    /// `succeeded` where they fail it at its last run (a failed run, not retried); ended
    /// `failed` (FAILED, PREEMPTED, REJECTED) where its last run succeeded. A user's cancel
    /// ends a job whatever the policy, and a history that does not say how the job ended
    /// leaves it as replayed, as it always did.
    fn ended_by_the_record(&mut self, history: &FailureHistory) {
        let Some(last) = history.runs.len().checked_sub(1) else {
            return;
        };
        let said = match (history.job.state, &self.status) {
            (Some(JobEnd::Succeeded | JobEnd::Failed), JobStatus::Pending { .. }) => {
                format!("the record ends it after run {last}; today's policy runs it again")
            }
            (Some(JobEnd::Succeeded), JobStatus::Failed { run, .. }) if *run == last => {
                format!("the record ends it succeeded, but run {last} failed and today's policy fails the job there")
            }
            (Some(JobEnd::Failed), JobStatus::Succeeded { run, .. }) if *run == last => {
                format!("the record ends it failed, but run {last} succeeded")
            }
            _ => return,
        };
        self.contradictions.push(said);
    }

    /// The job's status after run `k`'s decision; `true` when the job ended there.
    fn advance(
        &mut self,
        schedule: &mut Schedule,
        k: usize,
        decision: Option<&Decision>,
        avoiding: Avoiding,
        reason: &str,
        ended_at: u64,
    ) -> bool {
        let ended = match decision {
            None => {
                self.status = JobStatus::Succeeded { run: k };
                true
            }
            Some(d) if d.kind == DecisionKind::Cancelled => {
                self.status = JobStatus::Cancelled { run: k };
                true
            }
            Some(d) if d.action() == Action::Fail => {
                self.status = JobStatus::Failed {
                    run: k,
                    kind: d.kind,
                    reason: reason.to_string(),
                };
                true
            }
            Some(d) => {
                let after = d.retry_after.unwrap_or(ended_at);
                self.status = JobStatus::Pending { retry_after: after };
                schedule.eligible_at = after;
                if d.kind == DecisionKind::Retry {
                    self.total_delay = GoDuration(self.total_delay.0.saturating_add(d.delay.0));
                }
                // In the design a returned lease or a legacy requeue changes no scheduling
                // constraint: the nodes the last retry avoids stay avoided. Upstream's every
                // record lists all the job avoids (docs/engines.md).
                if d.kind == DecisionKind::Retry || self.engine == EngineKind::Upstream {
                    schedule.avoid = Some(avoiding);
                }
                false
            }
        };
        if decision.is_none_or(|d| d.action() == Action::Fail) {
            schedule.avoid = None;
        }
        ended
    }
}

/// The job's facts an engine reads besides its runs: its id (and the id's hash),
/// `failFast`, its grace period. Worked out once per job: a search replaying it under many
/// candidates passes it to each ([`crate::engine::simulator::Simulator::simulate_outcome`]).
pub fn job_context(history: &FailureHistory) -> JobContext<'_> {
    let job = &history.job;
    JobContext::new(
        &job.id,
        job.annotations.get(FAIL_FAST_ANNOTATION).is_some_and(|v| v == "true"),
        job.termination_grace_period.unwrap_or(DEFAULT_GRACE),
    )
}
