//! The design engine (docs/engines.md): one finished run of a job decided against its
//! effective policies, in the steps docs/engines.md describes.
//!
//! Owns: [`evaluate`] and its steps: the bypass paths, the first match across the list
//! (over the compiled matcher: [`Policies`]), the default action and counting with its
//! limits, backoff, jitter and the grace delay (`backoff`), anti-affinity and the
//! memory bump. It returns a [`Verdict`] (`verdict`): numbers and indices, put into
//! words only for a record.
//!
//! Must not: allocate (BENCHMARKS.md; `tests/alloc.rs` counts), do I/O, read a clock or the
//! environment.
//!
//! Decisions docs/engines.md leaves open, as an operator would expect:
//! - a `Fail` rule or a `Fail` default decides `fail_rule` / `fail_default` even under the
//!   kill switch (`globalMaxRetries: 0`): the policy's own verdict is the more precise reason,
//!   and the outcome (no retry) is the same.
//! - a default-action retry takes its policy's `backoff` and `antiAffinity` (they are policy
//!   settings, not mutations); it carries no `mutate`.
//! - `avoidSameNode` and `antiAffinity: node` together avoid the union (every earlier node).
//! - memory mutations compound as upstream does: one kind per job; factors multiply
//!   (`ceil(original × product)`), statics add; a bump of the other kind is skipped and the
//!   record says so.
//! - `armadaproject.io/failFast: "true"` also ends the job on a returned lease, as upstream
//!   (`!failFast && returned` gates the legacy requeue).
//! - jitter is truncated to whole milliseconds (readable delays; still deterministic).
//! - legacy requeue counts every run so far (including this one) as an attempt.

mod backoff;
#[cfg(test)]
mod tests;
mod verdict;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{Outcome, Run};
use crate::model::policy::{Action, Backoff, Condition};

use super::decision::{DecisionKind, DelayParts};
use super::inputs::Settings;
use super::job_state::{JobContext, JobState};
use super::matcher::RunFacts;
use super::matcher::{CompiledPolicy, Policies, Signal};
use super::memory_bump::apply_memory_bump;
use super::rule_ref::RuleRef;
use backoff::jitter_from_hash;
pub use backoff::{
    backoff_delay, jitter_fraction, resolve_backoff, BUILTIN_INITIAL_DELAY, BUILTIN_JITTER, BUILTIN_MAX_DELAY,
    BUILTIN_MULTIPLIER,
};
pub use verdict::Verdict;

/// Evaluates one finished run (docs/engines.md) and updates `state`. Allocates nothing: the
/// result holds indices and numbers ([`Verdict`]), put into words only for records.
///
/// `policies` is the effective list (empty = legacy), `run_index` the run's position
/// in the job, `failed_at` when it ended (ns since submission). Each step below is one
/// numbered section of docs/engines.md.
pub fn evaluate(
    policies: Policies<'_>,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Verdict {
    evaluate_with(
        policies,
        settings,
        job,
        state,
        run,
        run_index,
        failed_at,
        |run, policies| policies.first_match(&RunFacts::new(run)),
    )
}

/// A run's first match over a policy list (docs/engines.md): the policy, the rule and its signal.
pub type Match = Option<(usize, usize, Signal)>;

/// [`evaluate`] with the first match already known: `matched` is what [`first_match`] of
/// the same run over a list with the same matchers, in the same order, gave. For a search
/// whose candidates differ only in what matching does not read (limits, actions, backoff,
/// the default action): the match is worked out once per run for all of them.
///
/// [`first_match`]: Policies::first_match
#[allow(clippy::too_many_arguments)]
pub fn evaluate_matched(
    policies: Policies<'_>,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
    matched: Match,
) -> Verdict {
    evaluate_with(policies, settings, job, state, run, run_index, failed_at, |_, _| {
        matched
    })
}

/// The first match of `run` over `policies` ([`Match`]).
pub fn first_match(policies: Policies<'_>, run: &Run) -> Match {
    policies.first_match(&RunFacts::new(run))
}

/// [`evaluate`]'s steps, the first match found by `find`.
#[allow(clippy::too_many_arguments)]
fn evaluate_with(
    policies: Policies<'_>,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
    find: impl FnOnce(&Run, &Policies<'_>) -> Match,
) -> Verdict {
    let global = settings.global_max_retries;
    if let Some(v) = bypass_paths(&policies, settings, job, state, run, run_index, failed_at) {
        return v;
    }
    let (p, rule_ref, signal) = match find(run, &policies) {
        Some((p, r, signal)) if policies[p].policy.rules[r].action == Action::Fail => {
            return Verdict::fail(DecisionKind::FailRule, state, global).with_rule(p, RuleRef::Index(r), signal);
        }
        Some((p, r, signal)) => (p, RuleRef::Index(r), signal),
        None => match default_retry(&policies) {
            Some(p) => (p, RuleRef::Default, Signal::NoRuleMatched),
            None => {
                return Verdict {
                    signal: Some(Signal::NoRuleMatched),
                    ..Verdict::fail(DecisionKind::FailDefault, state, global)
                };
            }
        },
    };
    let compiled = policies[p];
    let rule = match rule_ref {
        RuleRef::Index(r) => Some(r),
        RuleRef::Default => None,
    };
    // The rule's backoff, limit and anti-affinity, resolved with its policy's at compile time.
    let plan = compiled.plan(rule);
    let (n, limit) = match count_within_limits(settings, state, p, rule_ref, plan.limit) {
        Ok(granted) => granted,
        Err(kind) => {
            return Verdict::fail(kind, state, global)
                .with_rule(p, rule_ref, signal)
                .with_count(state.counter(p, rule_ref), plan.limit.unwrap_or(global));
        }
    };
    let delay_parts = backoff_and_grace(settings, job, run, run_index, &plan.backoff, n);
    let memory_note = match rule {
        Some(r) if plan.memory => apply_memory_bump(state, compiled, r),
        _ => None,
    };
    let verdict = Verdict {
        avoid: plan.avoid,
        next_pod: true,
        memory_note,
        delay_parts,
        ..Verdict::fail(DecisionKind::Retry, state, global)
    };
    Verdict {
        retry_after: failed_at.saturating_add(verdict.delay().0),
        ..verdict.with_rule(p, rule_ref, signal).with_count(n, limit)
    }
}

/// How many runs copies of a failed `run` (same match, `matched`; the first of them is run
/// `run_index`) start from `state` before one is decided Fail, that one included, at most
/// `max` (≥ 1): what [`evaluate_matched`] decides copy after copy, without deciding each.
/// Such copies are decided by the counters alone (docs/engines.md): every one takes the same
/// path, and a retry under a rule is granted while the rule's counter is below its limit and
/// the job's total below `globalMaxRetries`, each grant adding one to both. The bypass paths
/// of a failed run, a `Fail` rule and no retrying default all fail the first copy. `None`
/// for a run that did not fail (its copies are not decided by the counters alone).
#[allow(clippy::too_many_arguments)]
pub fn copies_until_fail(
    policies: Policies<'_>,
    settings: &Settings,
    job: &JobContext<'_>,
    state: &JobState,
    run: &Run,
    run_index: usize,
    matched: Match,
    max: u32,
) -> Option<u32> {
    if run.outcome != Outcome::Failed {
        return None;
    }
    let max = max.max(1);
    // `failed_at` moves only a requeue's time, never whether a run fails.
    if bypass_paths(&policies, settings, job, state, run, run_index, 0).is_some() {
        return Some(1);
    }
    let (p, rule_ref) = match matched {
        Some((p, r, _)) if policies[p].policy.rules[r].action == Action::Fail => return Some(1),
        Some((p, r, _)) => (p, RuleRef::Index(r)),
        None => match default_retry(&policies) {
            Some(p) => (p, RuleRef::Default),
            None => return Some(1),
        },
    };
    let rule = match rule_ref {
        RuleRef::Index(r) => Some(r),
        RuleRef::Default => None,
    };
    let global = settings.global_max_retries;
    let limit = policies[p].plan(rule).limit.unwrap_or(global);
    let granted = global
        .saturating_sub(state.total_retries)
        .min(limit.saturating_sub(state.counter(p, rule_ref)));
    Some(granted.saturating_add(1).min(max))
}

/// docs/engines.md: cancelled, failFast, the legacy path (feature off or no policy) and a
/// returned lease are decided without the policies.
fn bypass_paths(
    policies: &[&CompiledPolicy],
    settings: &Settings,
    job: &JobContext<'_>,
    state: &JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Option<Verdict> {
    let global = settings.global_max_retries;
    let requeue = |kind: DecisionKind| Verdict {
        retry_after: failed_at,
        next_pod: true,
        ..Verdict::fail(kind, state, global)
    };
    if run.outcome == Outcome::Cancelled {
        return Some(Verdict::fail(DecisionKind::Cancelled, state, global));
    }
    if job.fail_fast && matches!(run.outcome, Outcome::Failed | Outcome::LeaseReturned) {
        return Some(Verdict::fail(DecisionKind::FailFast, state, global));
    }
    let below_attempts = u32::try_from(run_index + 1).unwrap_or(u32::MAX) < settings.max_attempted_runs;
    if !settings.enabled || policies.is_empty() {
        return Some(if run.outcome == Outcome::LeaseReturned && below_attempts {
            requeue(DecisionKind::LegacyRequeue)
        } else {
            Verdict::fail(DecisionKind::LegacyFail, state, global)
        });
    }
    if run.outcome == Outcome::LeaseReturned {
        // Upstream sends a returned lease down the legacy path even with the engine on: it
        // consumes no retry budget, but `maxAttemptedRuns` still bounds it, so that a job
        // whose leases keep coming back is not requeued forever.
        return Some(if below_attempts {
            requeue(DecisionKind::LeaseReturned)
        } else {
            Verdict::fail(DecisionKind::LegacyFail, state, global)
        });
    }
    None
}

/// docs/engines.md, no rule matched: the first effective policy whose default action is `Retry`.
fn default_retry(policies: &[&CompiledPolicy]) -> Option<usize> {
    policies
        .iter()
        .position(|cp| cp.policy.default_action() == Action::Retry)
}

/// docs/engines.md: a retry is granted iff the matched counter is below its effective limit
/// (`rule.retryLimit ?? policy.retryLimit ?? globalMaxRetries`; the first two are resolved in
/// the compiled policy, `limit`) and the total below `globalMaxRetries`; then both grow:
/// `Ok((counter after, limit))`. Otherwise the bound that was hit, the global one when both
/// are.
fn count_within_limits(
    settings: &Settings,
    state: &mut JobState,
    p: usize,
    rule_ref: RuleRef,
    limit: Option<u32>,
) -> Result<(u32, u32), DecisionKind> {
    let global = settings.global_max_retries;
    let limit = limit.unwrap_or(global);
    if state.total_retries >= global {
        return Err(DecisionKind::FailGlobalLimit);
    }
    if state.counter(p, rule_ref) >= limit {
        return Err(DecisionKind::FailRuleLimit);
    }
    Ok((state.bump(p, rule_ref), limit))
}

/// docs/engines.md: backoff for the `n`th retry under the counter, deterministic jitter, and the
/// graceful-shutdown floor of a preempted run: the parts of the delay.
fn backoff_and_grace(
    settings: &Settings,
    job: &JobContext<'_>,
    run: &Run,
    run_index: usize,
    backoff: &Backoff,
    n: u32,
) -> DelayParts {
    // `backoff`: the rule's fields over its policy's, resolved at compile time.
    let (initial, max, multiplier, jitter) = resolve_backoff(None, backoff, &settings.default_backoff);
    let backoff = backoff_delay(initial, max, multiplier, n);
    let mut with_jitter = backoff;
    if jitter > 0.0 && backoff.0 > 0 {
        let add = backoff.0 as f64 * jitter.min(1.0) * jitter_from_hash(job.id_hash, run_index);
        let total = (backoff.0 as f64 + add).min(max.0 as f64);
        // Whole milliseconds: a delay of `58.100503407s` is noise to an operator.
        let ms = if total.is_finite() {
            total as u64 / 1_000_000 * 1_000_000
        } else {
            max.0
        };
        with_jitter = GoDuration(ms.min(max.0)).max(backoff);
    }
    // A pod-level condition (not a container's `OOMKilled`), as the matcher reads it
    // (`RunFacts::conditions`).
    let grace = if run.conditions.contains(&Condition::Preempted) {
        match run.termination_confirmed_after {
            Some(t) => t.min(job.termination_grace_period),
            None => job.termination_grace_period,
        }
    } else {
        GoDuration::ZERO
    };
    // The delay itself, `with_jitter.max(grace)`, is derived from the parts
    // ([`Verdict::delay`]).
    DelayParts {
        backoff,
        jitter: GoDuration(with_jitter.0 - backoff.0),
        grace,
    }
}
