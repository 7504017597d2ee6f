//! A replay's decisions and nothing else: no record, no text and no check, for a search over
//! many candidates (`tune`), for the runs a Pending side has left (docs/estimates.md), and for
//! which rule decided each run (`suggest`'s first pass).
//!
//! Owns: [`JobOutcome`], [`outcome_named`], [`runs_left_named`], [`runs_left_after`],
//! [`decisions_named`] and [`Quiet`], which must decide as the report's replay does (a test
//! holds the two together).
//! Must not: write words, records or contradictions (that is `record`).

use crate::engine::decision::DecisionKind;
use crate::engine::design::{copies_until_fail, evaluate, evaluate_matched, first_match, Match};
use crate::engine::inputs::{EngineKind, Settings};
use crate::engine::job_state::{JobContext, JobState};
use crate::engine::matcher::Policies;
use crate::engine::rule_ref::RuleRef;
use crate::engine::upstream::{self, UpstreamJob};
use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, Final, Outcome, Run, StartedAt};
use crate::model::policy::Action;

use super::report::PendingEngine;

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

/// [`replay_named`](super::record::replay_named)'s decisions and nothing else: the same steps
/// (a scheduler reload between runs, each start from the last decision, `decide`, the end of
/// the job), with no record, no text and no check, so that a search over many candidates
/// (`tune`) replays each one at a fraction of a report's cost. Equal, field by field, to what
/// the report of [`Detail::Outcome`](super::report::Detail::Outcome) gives (a test holds the two
/// together); `from`: the run from which [`JobOutcome::compute_from`] counts (a comparison's
/// other side's runs); `matches`: each run's first match over a list with these matchers, when
/// the caller knows them (`Simulator::match_table`; the design engine only).
#[allow(clippy::too_many_arguments)]
pub(in crate::engine) fn outcome_named(
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

/// [`outcome_named`]'s replay of the recorded runs, telling `each` every decision it makes,
/// with the rule that made it: what a report of [`Detail::Outcome`](super::report::Detail::Outcome)
/// records of each run's decision, without the records (`suggest`'s first pass reads only
/// which rule of today's decided each failed run; a test holds the two together).
pub(in crate::engine) fn decisions_named<'q>(
    history: &FailureHistory,
    ctx: &'q JobContext<'_>,
    policies: Policies<'q>,
    settings: &'q Settings,
    engine: EngineKind,
    each: &'q mut Each<'q>,
) {
    let mut quiet = Quiet::new(history, ctx, policies, settings, engine);
    quiet.each = Some(each);
    quiet.replay(0, None);
}

/// The runs a side Pending after `history` has left (docs/estimates.md): its engine
/// continued past the record on copies of the job's last failed run, each starting when the
/// previous decision allows, until it decides Fail, at most `max` runs; the pending run
/// counts, so the answer is 1..=`max`. A job with no failed run recorded, or one the
/// recorded runs end, has the pending run alone. The recorded runs are replayed first (a
/// search that has only the outcome); [`runs_left_after`] goes on from a report's state.
#[allow(clippy::too_many_arguments)]
pub(in crate::engine) fn runs_left_named(
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

/// [`runs_left_named`] from the state a Pending job's replay left (`pending`, taken from its report
/// with [`JobReport::take_pending`](super::report::JobReport::take_pending)): the recorded runs are not
/// replayed again.
#[allow(clippy::too_many_arguments)]
pub(in crate::engine) fn runs_left_after(
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
    /// Told each decision of a recorded run ([`decisions_named`]).
    each: Option<&'q mut Each<'q>>,
}

/// What [`decisions_named`] tells of each decided run: its index, the decision's kind, and the
/// policy and rule that decided it (`None`: no rule did).
pub type Each<'e> = dyn FnMut(usize, DecisionKind, Option<&str>, Option<RuleRef>) + 'e;

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
            each: None,
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
        if let (Some(d), Some(each)) = (&decided, self.each.as_mut()) {
            let policy = d.policy.and_then(|p| self.policies.get(p)).map(|p| p.name());
            each(k, d.kind, policy, d.rule);
        }
        match decided {
            None => {
                self.out.final_state = Final::Succeeded;
                true
            }
            Some(Quietly {
                kind: DecisionKind::Cancelled,
                ..
            }) => {
                self.out.final_state = Final::Cancelled;
                true
            }
            Some(Quietly { kind, .. }) if kind.action() == Action::Fail => {
                self.out.final_state = Final::Failed;
                true
            }
            Some(Quietly {
                kind,
                retry_after,
                delay,
                ..
            }) => {
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

/// `record::decide` without a record: the decision's kind, when the job may run again, and the
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
) -> Option<Quietly> {
    if run.outcome == Outcome::Succeeded {
        return None;
    }
    Some(match engine {
        EngineKind::Design => {
            let v = match matched {
                Some(m) => evaluate_matched(policies, settings, ctx, state, run, k, ended_at, m),
                None => evaluate(policies, settings, ctx, state, run, k, ended_at),
            };
            Quietly {
                kind: v.kind,
                retry_after: v.retry_after(),
                delay: v.delay(),
                policy: v.policy(),
                rule: v.rule(),
            }
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
            Quietly {
                kind: d.kind,
                retry_after: d.retry_after,
                delay: d.delay,
                policy: d.policy,
                rule: d.rule,
            }
        }
    })
}

/// A decision as [`decide_quiet`] gives it: what the replay goes on with, and the rule that
/// decided ([`decisions_named`]'s callers name it).
struct Quietly {
    kind: DecisionKind,
    retry_after: Option<u64>,
    delay: GoDuration,
    /// Index in the job's effective list, and the rule of that policy.
    policy: Option<usize>,
    rule: Option<RuleRef>,
}

/// `record::start_time` without a report to write its contradictions to.
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
