//! Replaying a FailureHistory through the evaluator (docs/simulate.md): run timing, decisions,
//! contradictions between the history and the decisions, and `expect` checks.
//!
//! Owns: [`replay`] and its report types, and the words used for decisions and outcomes
//! (shared by every output format so that table and JSON never disagree). Must not: do I/O
//! or read a clock; it gets policies as values, so a server-side source can plug in later.

use std::sync::Arc;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{
    FailureHistory, Final, JobExpect, Outcome, Resources, Run, RunExpect, StartedAt, Timestamp,
};
use crate::model::policy::Action;

use super::upstream::{self, UpstreamJob};
use super::{
    copies_until_fail, evaluate, evaluate_matched, first_match, pod_name, Avoid, CompiledPolicy, Decision,
    DecisionKind, EngineKind, JobContext, JobState, Match, Policies, RuleRef, Settings,
};
use super::{DEFAULT_GRACE, FAIL_FAST_ANNOTATION};

/// One run as replayed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub index: usize,
    pub pod_name: String,
    pub node: Option<String>,
    /// Nanoseconds since submission.
    pub started_at: u64,
    pub ended_at: u64,
    pub outcome: Outcome,
    /// The failure in words (`Preempted`, `container main OOMKilled (exit 137)`).
    pub failure: String,
    /// `None` for a succeeded run (nothing to decide).
    pub decision: Option<Decision>,
    /// The decision in words (`retry 2 of 3 under infra/0 (attempt 3 of 4) …`).
    pub reason: String,
    /// With the executor's categorizer only (`simulate --categorizer`): the category the
    /// engine saw and the recorded one; `None` otherwise, so that a record without a
    /// categorizer is what it always was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Box<RunCategories>>,
}

/// A run's category as its engine saw it (its classification), and the recorded one when
/// the two differ (docs/categorizer.md). `None` stands for no category.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunCategories {
    pub category: Option<String>,
    pub subcategory: Option<String>,
    /// `Some` only when it differs from the classification.
    pub recorded: Option<(Option<String>, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JobStatus {
    Succeeded {
        run: usize,
    },
    Failed {
        run: usize,
        kind: DecisionKind,
        reason: String,
    },
    Cancelled {
        run: usize,
    },
    /// The last decision was a retry and the history ends there.
    Pending {
        retry_after: u64,
    },
}

impl JobStatus {
    pub fn final_state(&self) -> Final {
        match self {
            JobStatus::Succeeded { .. } => Final::Succeeded,
            JobStatus::Failed { .. } => Final::Failed,
            JobStatus::Cancelled { .. } => Final::Cancelled,
            JobStatus::Pending { .. } => Final::Pending,
        }
    }
}

/// A whole job replayed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobReport {
    pub job_id: String,
    pub queue: Option<String>,
    /// The effective policies' names, in order; shared by the reports of every job that
    /// got the same list (a bulk replay would otherwise copy them into each report).
    pub policies: Arc<[String]>,
    pub engine: EngineKind,
    /// Upstream: the queue's policies after the first, which that engine never reads.
    pub ignored_policies: Vec<String>,
    /// The limit at submission (runs may lower it later, see `Decision::global_max_retries`).
    pub global_max_retries: u32,
    pub enabled: bool,
    pub submitted_at: Option<Timestamp>,
    pub runs: Vec<RunRecord>,
    pub status: JobStatus,
    pub retries: u32,
    /// Delay added by granted retries, summed.
    pub total_delay: GoDuration,
    pub memory: Option<f64>,
    /// The job's requests (`job.resources`), for its cost in GPU- and CPU-hours.
    pub resources: Option<Resources>,
    pub expectation_failures: Vec<String>,
    pub contradictions: Vec<String>,
    /// A Pending job's engine as the record leaves it, for the runs it has left
    /// ([`JobReport::take_pending`]); `None` for a job that ended.
    #[serde(skip)]
    pub pending: Option<Box<PendingEngine>>,
}

/// What decides a Pending job's next runs, as its replay leaves it: the engine's counter
/// state, the global limit as the last reload left it, and when the next run may start.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingEngine {
    state: JobState,
    global_max_retries: u32,
    eligible_at: u64,
}

impl JobReport {
    /// The Pending job's engine state (once: the runs-left walk moves it on).
    pub fn take_pending(&mut self) -> Option<Box<PendingEngine>> {
        self.pending.take()
    }

    pub fn outcome_text(&self) -> String {
        match &self.status {
            JobStatus::Succeeded { run } => format!(
                "Succeeded at run {run} after {}",
                plural(u64::from(self.retries), "retry", "retries")
            ),
            JobStatus::Failed { run, reason, .. } => format!("Failed permanently at run {run}: {reason}"),
            JobStatus::Cancelled { run } => format!("Cancelled at run {run}"),
            JobStatus::Pending { retry_after } => format!(
                "Pending: retry eligible at {} (the history ends here)",
                format_instant(*retry_after, self.submitted_at)
            ),
        }
    }

    /// `policy/rule` of a decision, with the policy's name.
    pub fn rule_label(&self, d: &Decision) -> Option<String> {
        rule_ref_label(&self.policies, d)
    }
}

pub fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `T+2h15m` since submission, or an RFC 3339 time when the submission time is known.
pub fn format_instant(offset: u64, submitted: Option<Timestamp>) -> String {
    JobInstant { offset, submitted }.to_string()
}

/// An instant of a job as [`format_instant`] writes it, for outputs that write it in place.
#[derive(Debug, Clone, Copy)]
pub struct JobInstant {
    /// Nanoseconds since submission.
    pub offset: u64,
    pub submitted: Option<Timestamp>,
}

impl std::fmt::Display for JobInstant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.submitted {
            Some(t) => t.plus(GoDuration(self.offset)).fmt(f),
            None => write!(f, "T+{}", GoDuration(self.offset)),
        }
    }
}

/// The failure of a run in words.
pub fn describe_failure(run: &Run) -> String {
    match run.outcome {
        Outcome::Succeeded => return "succeeded".to_string(),
        Outcome::Cancelled => return "cancelled".to_string(),
        Outcome::LeaseReturned => return "lease returned".to_string(),
        Outcome::Failed => {}
    }
    let mut parts: Vec<String> = run.conditions.iter().map(|c| c.as_str().to_string()).collect();
    for c in run.containers.iter().filter(|c| c.failed()) {
        let init = if c.init { "init container" } else { "container" };
        // An unnamed container (a Lookout import) reads `container exit 137`.
        let who = match c.name() {
            Some(name) => format!("{init} {name}"),
            None => init.to_string(),
        };
        match c.reason.as_deref() {
            Some("OOMKilled") => parts.push(format!("{who} OOMKilled (exit {})", c.exit_code)),
            _ => parts.push(format!("{who} exit {}", c.exit_code)),
        }
    }
    if let Some(cat) = &run.category {
        match &run.subcategory {
            Some(sub) => parts.push(format!("category {cat}/{sub}")),
            None => parts.push(format!("category {cat}")),
        }
    }
    if parts.is_empty() {
        "failed (no signal)".to_string()
    } else {
        parts.join(", ")
    }
}

/// The decision in words, saying both retries and attempts.
pub fn explain(d: &Decision, rule: Option<&str>, max_attempted_runs: u32, attempts: usize, enabled: bool) -> String {
    let rule = rule.unwrap_or("?");
    match d.kind {
        DecisionKind::Retry => {
            let (n, l) = (d.counter.unwrap_or(0), d.limit.unwrap_or(0));
            format!(
                "retry {n} of {l} under {rule} (attempt {} of {}); {} of {} retries overall",
                u64::from(n) + 1,
                u64::from(l) + 1,
                d.total_retries,
                d.global_max_retries
            )
        }
        DecisionKind::FailRule => format!("rule {rule} says Fail"),
        DecisionKind::FailRuleLimit => format!(
            "rule {rule} limit {} reached ({} used, attempt {} of {})",
            d.limit.unwrap_or(0),
            plural(u64::from(d.counter.unwrap_or(0)), "retry", "retries"),
            u64::from(d.counter.unwrap_or(0)) + 1,
            u64::from(d.limit.unwrap_or(0)) + 1
        ),
        DecisionKind::FailGlobalLimit if d.global_max_retries == 0 => {
            "retries disabled: globalMaxRetries is 0 (kill switch)".to_string()
        }
        DecisionKind::FailGlobalLimit => format!(
            "global limit {} reached ({} used; rule {rule})",
            d.global_max_retries,
            plural(u64::from(d.total_retries), "retry", "retries")
        ),
        DecisionKind::FailDefault => "no rule matched and no policy has defaultAction Retry".to_string(),
        DecisionKind::FailFast => "failFast job: the first failure is final".to_string(),
        DecisionKind::LegacyFail if !enabled => "retry policies disabled: a failed run is final (legacy)".to_string(),
        DecisionKind::LegacyFail if attempts as u64 >= u64::from(max_attempted_runs) && d.signal.is_none() => {
            format!("no retry policy applies: a failed run is final, and a returned lease only requeues below maxAttemptedRuns {max_attempted_runs} (legacy, attempt {attempts})")
        }
        DecisionKind::LegacyFail => "no retry policy applies: a failed run is final (legacy)".to_string(),
        DecisionKind::LegacyRequeue => {
            format!("lease returned: requeued (legacy, attempt {attempts} of {max_attempted_runs})")
        }
        DecisionKind::LeaseReturned => "lease returned before the run started: requeued, no budget used".to_string(),
        DecisionKind::Cancelled => "cancelled: never retried".to_string(),
        DecisionKind::FailPolicyLimit => format!(
            "policy limit {} of {rule} reached ({} used)",
            d.limit.unwrap_or(0),
            plural(u64::from(d.counter.unwrap_or(0)), "retry", "retries")
        ),
        DecisionKind::Preempted => "preempted: the job ends".to_string(),
    }
}

/// How much of a [`JobReport`] a replay writes out in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Every per-run text (reason, failure, node, pod name, signal, next pod name): what
    /// the per-job outputs print.
    #[default]
    Full,
    /// Only what the summary counts, the expectation checks and the contradiction checks
    /// read: the per-run texts are left empty, except on a run with an `expect` (its
    /// messages quote them) and the final failure's reason when the job has an `expect`
    /// (the `final` message quotes it), so that every message is the same as under
    /// [`Detail::Full`]. For outputs that print only the summary (bulk `-o table`): the
    /// texts cost more than the decisions.
    Summary,
    /// Only the outcome: [`Detail::Summary`] without the contradiction and expectation
    /// checks (no message at all), for a replay that counts sides and prints no job
    /// (`simulate --baseline`, whose jobs' expectations are not checked, the runs a side
    /// has left, `tune`'s candidates). The decisions are the same.
    Outcome,
}

/// Replays `history` with the effective `policies` (already resolved, docs/engines.md) under the
/// design engine.
pub fn replay(history: &FailureHistory, policies: &[&CompiledPolicy], settings: &Settings) -> JobReport {
    replay_with(history, policies, settings, EngineKind::Design)
}

/// Replays `history` under `engine`. For the upstream engine `policies` holds at most the
/// one policy it evaluates (docs/engines.md).
pub fn replay_with(
    history: &FailureHistory,
    policies: &[&CompiledPolicy],
    settings: &Settings,
    engine: EngineKind,
) -> JobReport {
    replay_detailed(history, policies, settings, engine, Detail::Full)
}

/// Replays `history` under `engine`, writing the texts `detail` asks for.
pub fn replay_detailed(
    history: &FailureHistory,
    policies: &[&CompiledPolicy],
    settings: &Settings,
    engine: EngineKind,
    detail: Detail,
) -> JobReport {
    let names = policies.iter().map(|p| p.name().to_string()).collect();
    replay_named(history, Policies::alone(policies), names, settings, engine, detail)
}

/// [`replay_detailed`] with the policies' names for the report given, so that a caller
/// that replays many jobs with the same list shares one copy (`Simulator` keeps one per
/// resolved list, with its shared regexes). `names[i]` is `policies[i]`'s name.
pub(super) fn replay_named(
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

/// What a comparison counts of one side of a job, and nothing else (docs/what-if.md): its final
/// state, retries, delay, the runs it starts and their run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobOutcome {
    pub final_state: Final,
    pub retries: u32,
    /// Delay added by granted retries, summed.
    pub delay: GoDuration,
    /// Runs started.
    pub runs: usize,
    /// The run time of the runs started, in all and from run `from` on (see
    /// [`outcome_named`]).
    pub compute: GoDuration,
    pub compute_from: GoDuration,
}

/// [`replay_named`]'s decisions and nothing else: the same steps (a scheduler reload between
/// runs, each start from the last decision, `decide`, the end of the job), with no record,
/// no text and no check, so that a search over many candidates (`tune`) replays each one at
/// a fraction of a report's cost. Equal, field by field, to what the report of
/// [`Detail::Outcome`] gives (a test holds the two together); `from`: the run from which
/// [`JobOutcome::compute_from`] counts (a comparison's other side's runs); `matches`: each
/// run's first match over a list with these matchers, when the caller knows them
/// (`Simulator::match_table`; the design engine only).
#[allow(clippy::too_many_arguments)]
pub(super) fn outcome_named(
    history: &FailureHistory,
    ctx: &JobContext<'_>,
    policies: Policies<'_>,
    settings: &Settings,
    engine: EngineKind,
    from: usize,
    matches: Option<&[Match]>,
) -> JobOutcome {
    Quiet::new(history, ctx, policies, settings, engine)
        .replay(from, matches)
        .out
}

/// The runs a side Pending after `history` has left (docs/estimates.md): its engine
/// continued past the record on copies of the job's last failed run, each starting when the
/// previous decision allows, until it decides Fail, at most `max` runs; the pending run
/// counts, so the answer is 1..=`max`. A job with no failed run recorded, or one the
/// recorded runs end, has the pending run alone. The recorded runs are replayed first (a
/// search that has only the outcome); [`runs_left_after`] goes on from a report's state.
#[allow(clippy::too_many_arguments)]
pub(super) fn runs_left_named(
    history: &FailureHistory,
    ctx: &JobContext<'_>,
    policies: Policies<'_>,
    settings: &Settings,
    engine: EngineKind,
    matches: Option<&[Match]>,
    max: u32,
) -> u32 {
    if !history.runs.iter().any(|r| r.outcome == Outcome::Failed) {
        return 1;
    }
    let quiet = Quiet::new(history, ctx, policies, settings, engine).replay(0, matches);
    if quiet.out.final_state != Final::Pending {
        return 1;
    }
    quiet.continued(matches, max)
}

/// [`runs_left_named`] from the state a Pending job's replay left (`pending`, taken from its
/// report with [`JobReport::take_pending`]): the recorded runs are not replayed again.
#[allow(clippy::too_many_arguments)]
pub(super) fn runs_left_after(
    history: &FailureHistory,
    ctx: &JobContext<'_>,
    policies: Policies<'_>,
    settings: &Settings,
    engine: EngineKind,
    pending: Box<PendingEngine>,
    max: u32,
) -> u32 {
    let PendingEngine {
        state,
        global_max_retries,
        eligible_at,
    } = *pending;
    let mut quiet = Quiet::new(history, ctx, policies, settings, engine);
    if global_max_retries != settings.global_max_retries {
        quiet.reloaded = Some(Settings {
            global_max_retries,
            ..settings.clone()
        });
    }
    quiet.state = state;
    quiet.eligible_at = eligible_at;
    quiet.continued(None, max)
}

/// A replay that keeps only what decides the next run: the engine's counter state, the
/// settings as the last reload left them, when the next run may start, and the outcome so
/// far. [`outcome_named`] runs it over the recorded runs; [`runs_left_named`] goes on past
/// them.
struct Quiet<'q, 'h> {
    history: &'h FailureHistory,
    ctx: &'q JobContext<'h>,
    policies: Policies<'q>,
    settings: &'q Settings,
    engine: EngineKind,
    /// Copied only when a run reloads the global limit (rare): a clone per job was a
    /// noticeable share of a candidate's replay.
    reloaded: Option<Settings>,
    state: JobState,
    eligible_at: u64,
    out: JobOutcome,
    /// The design engine's copies are counted, not decided one by one
    /// (`design::copies_until_fail`); off in the test that holds the two together.
    counted: bool,
}

impl<'q, 'h> Quiet<'q, 'h> {
    fn new(
        history: &'h FailureHistory,
        ctx: &'q JobContext<'h>,
        policies: Policies<'q>,
        settings: &'q Settings,
        engine: EngineKind,
    ) -> Self {
        Quiet {
            history,
            ctx,
            policies,
            settings,
            engine,
            reloaded: None,
            state: JobState::new(history.job.memory),
            eligible_at: 0,
            out: JobOutcome {
                final_state: Final::Pending,
                retries: 0,
                delay: GoDuration::ZERO,
                runs: 0,
                compute: GoDuration::ZERO,
                compute_from: GoDuration::ZERO,
            },
            counted: true,
        }
    }

    /// The recorded runs, until one ends the job.
    fn replay(mut self, from: usize, matches: Option<&[Match]>) -> Self {
        for (k, run) in self.history.runs.iter().enumerate() {
            if let Some(g) = run.global_max_retries {
                self.reloaded
                    .get_or_insert_with(|| self.settings.clone())
                    .global_max_retries = g;
            }
            let started_at = start_time_quiet(self.history, k, self.eligible_at);
            let ended_at = started_at.saturating_add(run.run_for.0);
            let ran = ended_at - started_at;
            self.out.compute = GoDuration(self.out.compute.0.saturating_add(ran));
            if k >= from {
                self.out.compute_from = GoDuration(self.out.compute_from.0.saturating_add(ran));
            }
            if self.step(run, k, ended_at, matches.and_then(|m| m.get(k).copied())) {
                break;
            }
        }
        self.out.retries = self.state.total_retries;
        self
    }

    /// The runs a job Pending after its recorded runs has left (see [`runs_left_named`]),
    /// from this state on. Continued on the recorded run itself: a copy differs from it only
    /// in what no decision reads (its node, which only a record's words name; its times,
    /// which only move the start; its expectations), and it matches as that run does, so
    /// it is matched once. Nothing is allocated per continued run (the upstream engine's
    /// records aside).
    fn continued(mut self, matches: Option<&[Match]>, max: u32) -> u32 {
        let Some(last) = self.history.runs.iter().rposition(|r| r.outcome == Outcome::Failed) else {
            return 1;
        };
        let run = &self.history.runs[last];
        let matched = match (self.engine, matches.and_then(|m| m.get(last).copied())) {
            (EngineKind::Design, None) => Some(first_match(self.policies, run)),
            (_, m) => m,
        };
        let n = self.history.runs.len();
        if let (EngineKind::Design, Some(m), true) = (self.engine, matched, self.counted) {
            let settings = self.reloaded.as_ref().unwrap_or(self.settings);
            let counted = copies_until_fail(self.policies, settings, self.ctx, &self.state, run, n, m, max);
            if let Some(left) = counted {
                return left;
            }
        }
        for j in 0..max.max(1) as usize {
            // A copy has no `startedAt` and no `queuedFor`: it starts when it may.
            let ended_at = self.eligible_at.saturating_add(run.run_for.0);
            if self.step(run, n + j, ended_at, matched) {
                return j as u32 + 1;
            }
        }
        max.max(1)
    }

    /// Decides run `k` (`run`, ended at `ended_at`) and counts it started; `true` when the
    /// decision ends the job.
    fn step(&mut self, run: &Run, k: usize, ended_at: u64, matched: Option<Match>) -> bool {
        self.out.runs = k + 1;
        let settings = self.reloaded.as_ref().unwrap_or(self.settings);
        let gang = self.history.job.gang_cardinality.is_some_and(|c| c > 1);
        let decided = decide_quiet(
            self.policies,
            settings,
            self.ctx,
            gang,
            &mut self.state,
            run,
            k,
            ended_at,
            self.engine,
            matched,
        );
        match decided {
            None => {
                self.out.final_state = Final::Succeeded;
                true
            }
            Some((DecisionKind::Cancelled, ..)) => {
                self.out.final_state = Final::Cancelled;
                true
            }
            Some((kind, ..)) if kind.action() == Action::Fail => {
                self.out.final_state = Final::Failed;
                true
            }
            Some((kind, retry_after, delay)) => {
                self.out.final_state = Final::Pending;
                self.eligible_at = retry_after.unwrap_or(ended_at);
                if kind == DecisionKind::Retry {
                    self.out.delay = GoDuration(self.out.delay.0.saturating_add(delay.0));
                }
                false
            }
        }
    }
}

/// [`decide`] without a record: the decision's kind, when the job may run again, and the
/// delay (`None`: the run succeeded). The same numbers as `decide`'s record, without making
/// one (a `Decision` is a few hundred bytes, moved for nothing here). `gang`: the job is a
/// gang of more than one (upstream never retries those).
#[allow(clippy::too_many_arguments)]
fn decide_quiet(
    policies: Policies<'_>,
    settings: &Settings,
    ctx: &JobContext<'_>,
    gang: bool,
    state: &mut JobState,
    run: &Run,
    k: usize,
    ended_at: u64,
    engine: EngineKind,
    matched: Option<Match>,
) -> Option<(DecisionKind, Option<u64>, GoDuration)> {
    if run.outcome == Outcome::Succeeded {
        return None;
    }
    Some(match engine {
        EngineKind::Design => {
            let v = match matched {
                Some(m) => evaluate_matched(policies, settings, ctx, state, run, k, ended_at, m),
                None => evaluate(policies, settings, ctx, state, run, k, ended_at),
            };
            (v.kind, v.retry_after(), v.delay())
        }
        EngineKind::Upstream => {
            let d = upstream::evaluate(
                policies.first().copied(),
                settings,
                ctx,
                UpstreamJob { gang },
                state,
                run,
                k,
                ended_at,
            );
            (d.kind, d.retry_after, d.delay)
        }
    })
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

/// [`start_time`] without a report to write its contradictions to.
fn start_time_quiet(history: &FailureHistory, k: usize, eligible_at: u64) -> u64 {
    let run = &history.runs[k];
    match run.started_at {
        None => eligible_at.saturating_add(run.queued_for.0),
        Some(StartedAt::Offset(d)) => d.0,
        Some(StartedAt::Absolute(t)) => history
            .job
            .submitted_at
            .and_then(|s| t.since(s))
            .map_or(eligible_at, |d| d.0),
    }
}

/// What the decisions so far say about the next run: when it may start, which nodes it
/// avoids (docs/engines.md), for the contradiction checks.
#[derive(Default)]
struct Schedule {
    eligible_at: u64,
    /// Set by the last retry (`None`: no node is avoided).
    avoid: Option<Avoiding>,
}

/// The nodes a retry avoids, named by where they are rather than copied: a copy per retry
/// (and of every node tried, per run) was most of a summary replay's allocations.
#[derive(Debug, Clone, Copy)]
enum Avoiding {
    /// As the record of run `from` lists them (`Decision::avoid_nodes`).
    Listed { from: usize },
    /// Left out of the record of run `from` (a summary replay writes no words): docs/engines.md's
    /// list read from the history, as [`Avoid::nodes`] makes it — this run's node,
    /// and for `avoidSameNode` the nodes runs before it started on ([`NodesTried`]).
    Derived { from: usize, avoid: Avoid },
}

impl Avoiding {
    fn from(self) -> usize {
        match self {
            Avoiding::Listed { from } | Avoiding::Derived { from, .. } => from,
        }
    }

    fn contains(self, report: &JobReport, history: &FailureHistory, tried: &mut NodesTried, node: &str) -> bool {
        match self {
            Avoiding::Listed { from } => report.runs[from]
                .decision
                .as_ref()
                .is_some_and(|d| d.avoid_nodes.iter().any(|n| n == node)),
            Avoiding::Derived { from, avoid } => {
                let on = |k: usize| history.runs[k].node.as_deref() == Some(node);
                match avoid {
                    Avoid::Nothing => false,
                    Avoid::ThisNode => on(from),
                    Avoid::EveryNode => {
                        tried.look_at(history, from);
                        on(from) || tried.first_runs().take_while(|&k| k < from).any(on)
                    }
                }
            }
        }
    }
}

/// docs/engines.md: the nodes of the runs that started (first use order, no duplicates), for
/// `avoidSameNode`, named by the first run on each rather than copied, and gathered only
/// when read: by a decision that writes its words, as names (`JobState::nodes_tried`,
/// [`NodesTried::catch_up`]), or by the contradiction check of an untold `avoidSameNode`
/// retry. A summary replay copies no node name, and without `avoidSameNode` compares none.
///
/// The first [`INLINE_NODES`] indices are inline, more on the heap, so that nearly every
/// job allocates nothing for them.
#[derive(Default)]
struct NodesTried {
    inline: [usize; INLINE_NODES],
    spill: Vec<usize>,
    /// Nodes so far.
    len: usize,
    /// Runs looked at so far.
    upto: usize,
}

const INLINE_NODES: usize = 8;

impl NodesTried {
    /// The index of the first run on each node, in increasing order.
    fn first_runs(&self) -> impl Iterator<Item = usize> + '_ {
        self.inline[..self.len.min(INLINE_NODES)]
            .iter()
            .chain(&self.spill)
            .copied()
    }

    /// Looks at the runs before run `k` not looked at yet: their nodes, if new and the run
    /// started.
    fn look_at(&mut self, history: &FailureHistory, k: usize) {
        for i in self.upto..k {
            let run = &history.runs[i];
            let Some(node) = run.node.as_ref().filter(|_| run.outcome != Outcome::LeaseReturned) else {
                continue;
            };
            if self.first_runs().any(|j| history.runs[j].node.as_ref() == Some(node)) {
                continue;
            }
            if self.len < INLINE_NODES {
                self.inline[self.len] = i;
            } else {
                self.spill.push(i);
            }
            self.len += 1;
        }
        self.upto = self.upto.max(k);
    }

    /// Brings `state.nodes_tried` up to date for the decision of run `k`: the same list, in
    /// the same order, as names. Never called for a run before one looked at already.
    fn catch_up(&mut self, state: &mut JobState, history: &FailureHistory, k: usize) {
        self.look_at(history, k);
        for i in self.first_runs().skip(state.nodes_tried.len()) {
            state.nodes_tried.extend(history.runs[i].node.clone());
        }
    }
}

impl Schedule {
    /// Contradictions between a run's start and the decisions before it: it started before
    /// the retry was eligible, or on a node the last retry avoids.
    fn check_start(
        &self,
        report: &mut JobReport,
        history: &FailureHistory,
        tried: &mut NodesTried,
        k: usize,
        started_at: u64,
    ) {
        let submitted = history.job.submitted_at;
        if started_at < self.eligible_at {
            report.contradictions.push(format!(
                "run {k} starts at {}, before the retry became eligible at {}",
                format_instant(started_at, submitted),
                format_instant(self.eligible_at, submitted)
            ));
        }
        if let (Some(node), Some(avoid)) = (&history.runs[k].node, self.avoid) {
            if avoid.contains(report, history, tried, node) {
                report.contradictions.push(format!(
                    "run {k} ran on `{node}`, a node the decision for run {} avoids",
                    avoid.from()
                ));
            }
        }
    }
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

/// The history's job-level `expect`: final state, total retries, last decision kind.
fn check_job(report: &mut JobReport, e: &JobExpect) {
    let mut failures = Vec::new();
    if let Some(f) = e.final_state {
        let got = report.status.final_state();
        if got != f {
            failures.push(format!(
                "job: expected final `{}`, got `{}` ({})",
                f.as_str(),
                got.as_str(),
                report.outcome_text()
            ));
        }
    }
    if let Some(r) = e.retries {
        if r != report.retries {
            failures.push(format!("job: expected retries `{r}`, got `{}`", report.retries));
        }
    }
    if let Some(kind) = &e.decision {
        let last = report
            .runs
            .iter()
            .rev()
            .find_map(|r| r.decision.as_ref())
            .map(|d| d.kind.as_str());
        if last != Some(kind.as_str()) {
            failures.push(format!(
                "job: expected last decision `{kind}`, got `{}`",
                last.unwrap_or("none")
            ));
        }
    }
    report.expectation_failures.extend(failures);
}

fn check_run(report: &JobReport, rec: &RunRecord, e: &RunExpect, fail: &mut impl FnMut(String)) {
    let k = rec.index;
    let Some(d) = &rec.decision else {
        if e.action.is_some() || e.decision.is_some() || e.rule.is_some() || e.delay.is_some() {
            fail(format!(
                "run {k}: has decision expectations but the run succeeded (nothing to decide)"
            ));
        }
        return;
    };
    let why = || format!(": {}", rec.reason);
    if let Some(a) = e.action {
        if a != d.action() {
            fail(format!(
                "run {k}: expected action `{}`, got `{}`{}",
                a.as_str(),
                d.action().as_str(),
                why()
            ));
        }
    }
    if let Some(kind) = &e.decision {
        if kind != d.kind.as_str() {
            fail(format!(
                "run {k}: expected decision `{kind}`, got `{}`{}",
                d.kind.as_str(),
                why()
            ));
        }
    }
    if let Some(rule) = &e.rule {
        let got = report.rule_label(d);
        if got.as_deref() != Some(rule.as_str()) {
            fail(format!(
                "run {k}: expected rule `{rule}`, got {}{}",
                got.map_or("no rule".to_string(), |g| format!("`{g}`")),
                why()
            ));
        }
    }
    if let Some(delay) = e.delay {
        if delay != d.delay {
            fail(format!("run {k}: expected delay `{delay}`, got `{}`{}", d.delay, why()));
        }
    }
    if let Some(r) = e.retries {
        if r != d.total_retries {
            fail(format!(
                "run {k}: expected retries `{r}`, got `{}`{}",
                d.total_retries,
                why()
            ));
        }
    }
    if let Some(p) = &e.pod_name {
        let got = d.next_pod_name.as_deref().unwrap_or("none");
        // `podName` names the pod of the run itself, which is what the table shows.
        if p != &rec.pod_name {
            fail(format!(
                "run {k}: expected podName `{p}`, got `{}` (next run: `{got}`)",
                rec.pod_name
            ));
        }
    }
    if let Some(nodes) = &e.avoid_nodes {
        if nodes != &d.avoid_nodes {
            fail(format!(
                "run {k}: expected avoidNodes [{}], got [{}]",
                nodes.join(", "),
                d.avoid_nodes.join(", ")
            ));
        }
    }
}

/// `RuleRef` label helper for outputs.
pub fn rule_ref_label(policies: &[String], d: &Decision) -> Option<String> {
    RuleLabel::of(policies, d).map(|l| l.to_string())
}

/// `policy/rule` (`infra/0`, `infra/default`) of a decision, for outputs that write it in place.
#[derive(Debug, Clone, Copy)]
pub struct RuleLabel<'a> {
    pub policy: &'a str,
    pub rule: RuleRef,
}

impl<'a> RuleLabel<'a> {
    /// The label of `d`, whose policy index is into `policies`; `None` without a rule.
    pub fn of(policies: &'a [String], d: &Decision) -> Option<RuleLabel<'a>> {
        Some(RuleLabel {
            policy: policies.get(d.policy?)?,
            rule: d.rule?,
        })
    }
}

impl std::fmt::Display for RuleLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.policy, self.rule)
    }
}
