//! The engines (SPEC §2): pure, deterministic retry decisions. This file and `replay.rs` are
//! the design engine (§2.1–2.9) and the records both engines share; `upstream.rs` is the
//! engine Armada ships today (§2.10).
//!
//! Owns: effective-policy resolution (§2.1), container selection and matching (§2.2–2.3),
//! counting and limits (§2.4), backoff, deterministic jitter and the grace delay (§2.5),
//! anti-affinity and memory mutations (§2.6), pod names (§2.7), the bypass paths (§2.8) and
//! the decision record (§2.9); [`replay`] applies it to a whole FailureHistory.
//!
//! Must not: do I/O, read a clock or the environment, or use randomness. Time is an input
//! (nanoseconds since the job's submission); jitter comes from a stable hash of (job id, run
//! index) implemented here, never from `std`'s `DefaultHasher` (not stable across releases).
//!
//! Decisions where SPEC §2 is silent, as an operator would expect:
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

pub mod replay;
pub mod simulator;
pub mod upstream;

use regex::Regex;
use serde::Serialize;

use crate::model::duration::GoDuration;
use crate::model::history::{Container, Outcome, Run};
use crate::model::policy::{Action, AntiAffinityMode, Backoff, Condition, Operator, RetryPolicy, Rule};
use crate::model::quantity::parse_quantity;
use crate::model::scheduler::SchedulerConfig;
use crate::model::validate::compile_pattern;

pub use replay::{replay, JobReport, JobStatus, RunRecord};

/// The job annotation that adds policies (SPEC §2.1).
pub const POLICY_ANNOTATION: &str = "armadaproject.io/retry-policy";
/// The job annotation that bypasses the engine (SPEC §2.8).
pub const FAIL_FAST_ANNOTATION: &str = "armadaproject.io/failFast";

/// Built-in backoff (SPEC §2.5), the last level of inheritance.
pub const BUILTIN_INITIAL_DELAY: GoDuration = GoDuration(0);
pub const BUILTIN_MAX_DELAY: GoDuration = GoDuration(10 * 60 * 1_000_000_000);
pub const BUILTIN_MULTIPLIER: f64 = 2.0;
pub const BUILTIN_JITTER: f64 = 0.0;
/// Armada's default termination grace period for a job.
pub const DEFAULT_GRACE: GoDuration = GoDuration(1_000_000_000);

/// Which engine decides (SPEC §2.10): the design (§2.1–2.9, the default) or the engine
/// upstream Armada ships today ([`upstream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    #[default]
    Design,
    Upstream,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Design => "design",
            EngineKind::Upstream => "upstream",
        }
    }
}

/// The scheduler's retry settings, resolved (SPEC §3.1 defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub enabled: bool,
    pub global_max_retries: u32,
    pub default_policy_name: Option<String>,
    pub default_backoff: Backoff,
    pub max_attempted_runs: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            global_max_retries: 20,
            default_policy_name: None,
            default_backoff: Backoff::default(),
            max_attempted_runs: 5,
        }
    }
}

impl Settings {
    pub fn from_config(c: &SchedulerConfig) -> Settings {
        let d = Settings::default();
        Settings {
            enabled: c.enabled.unwrap_or(d.enabled),
            global_max_retries: c.global_max_retries.unwrap_or(d.global_max_retries),
            default_policy_name: c.default_policy_name.clone(),
            default_backoff: c.default_backoff,
            max_attempted_runs: c.max_attempted_runs.unwrap_or(d.max_attempted_runs),
        }
    }
}

/// A compiled `onTerminationMessage` pattern. Literal patterns (the common `TRANSIENT`,
/// `^OOM`, `.*CUDA error.*`) skip the regex engine: a substring or prefix test gives the
/// same answer as Go's `MatchString` for them, several times faster.
#[derive(Debug, Clone)]
enum Pattern {
    Contains(String),
    Prefix(String),
    Regex(Regex),
}

impl Pattern {
    fn new(p: &str) -> Result<Pattern, String> {
        let regex = compile_pattern(p)?;
        // No regex metacharacter (`-` is literal outside a class, unlike what `regex::escape`
        // would suggest).
        let literal = |t: &str| !t.is_empty() && !t.contains(|c| "\\.+*?()|[]{}^$".contains(c));
        let inner = p.strip_prefix(".*").unwrap_or(p);
        let inner = inner.strip_suffix(".*").filter(|i| !i.ends_with('\\')).unwrap_or(inner);
        Ok(if literal(inner) {
            Pattern::Contains(inner.to_string())
        } else if let Some(rest) = p.strip_prefix('^').filter(|r| literal(r)) {
            Pattern::Prefix(rest.to_string())
        } else {
            Pattern::Regex(regex)
        })
    }

    fn is_match(&self, text: &str) -> bool {
        match self {
            Pattern::Contains(l) => text.contains(l.as_str()),
            Pattern::Prefix(l) => text.starts_with(l.as_str()),
            Pattern::Regex(r) => r.is_match(text),
        }
    }
}

/// A policy with its termination-message patterns compiled once.
#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    pub policy: RetryPolicy,
    patterns: Vec<Option<Pattern>>,
    /// `mutate.resources.memory.static` in bytes, per rule.
    statics: Vec<Option<f64>>,
}

impl CompiledPolicy {
    /// Fails only on what validation already rejects (a bad pattern or quantity); callers
    /// validate first, so the error is a safety net, not the user-facing report.
    pub fn new(policy: RetryPolicy) -> Result<CompiledPolicy, String> {
        let mut patterns = Vec::with_capacity(policy.rules.len());
        let mut statics = Vec::with_capacity(policy.rules.len());
        for (i, rule) in policy.rules.iter().enumerate() {
            patterns.push(match &rule.on_termination_message {
                Some(p) => Some(Pattern::new(p).map_err(|e| format!("policy `{}` rule {i}: {e}", policy.name))?),
                None => None,
            });
            let fixed = rule
                .mutate
                .as_ref()
                .and_then(|m| m.resources.as_ref())
                .and_then(|r| r.memory.as_ref())
                .and_then(|m| m.fixed.as_deref());
            statics.push(match fixed {
                Some(q) => Some(parse_quantity(q).map_err(|e| format!("policy `{}` rule {i}: {e}", policy.name))?),
                None => None,
            });
        }
        Ok(CompiledPolicy {
            policy,
            patterns,
            statics,
        })
    }

    pub fn name(&self) -> &str {
        &self.policy.name
    }
}

/// Where a name in the effective list came from, for "missing policy" errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Queue(String),
    /// `--retry-policy` or, without it, every policy document given.
    Given,
    Annotation,
    DefaultPolicy,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Queue(q) => write!(f, "queue `{q}`"),
            Source::Given => write!(f, "--retry-policy"),
            Source::Annotation => write!(f, "the job annotation `{POLICY_ANNOTATION}`"),
            Source::DefaultPolicy => write!(f, "the scheduler's defaultPolicyName"),
        }
    }
}

/// SPEC §2.1: the effective policy names, in order, each with who referenced it.
pub fn effective_policy_names(
    base: &[String],
    base_source: &Source,
    annotation: Option<&str>,
    default_policy: Option<&str>,
) -> Vec<(String, Source)> {
    let mut out: Vec<(String, Source)> = Vec::new();
    for name in base {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.clone(), base_source.clone()));
        }
    }
    for name in annotation
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), Source::Annotation));
        }
    }
    if out.is_empty() {
        if let Some(d) = default_policy {
            out.push((d.to_string(), Source::DefaultPolicy));
        }
    }
    out
}

/// The decision kinds of SPEC §2.9, serialized as written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    Retry,
    FailRule,
    FailRuleLimit,
    FailGlobalLimit,
    FailDefault,
    FailFast,
    LegacyFail,
    LegacyRequeue,
    LeaseReturned,
    Cancelled,
    /// Upstream: `Retry` refused because the policy's limit is used up (SPEC §2.10).
    FailPolicyLimit,
    /// Upstream: a preemption ends the job, never evaluated (SPEC §2.10).
    Preempted,
}

impl DecisionKind {
    pub const ALL: [DecisionKind; 12] = [
        DecisionKind::Retry,
        DecisionKind::FailRule,
        DecisionKind::FailRuleLimit,
        DecisionKind::FailGlobalLimit,
        DecisionKind::FailDefault,
        DecisionKind::FailFast,
        DecisionKind::LegacyFail,
        DecisionKind::LegacyRequeue,
        DecisionKind::LeaseReturned,
        DecisionKind::Cancelled,
        DecisionKind::FailPolicyLimit,
        DecisionKind::Preempted,
    ];

    pub fn as_str(self) -> &'static str {
        crate::model::history::DECISION_KINDS[self as usize]
    }

    pub fn action(self) -> Action {
        match self {
            DecisionKind::Retry | DecisionKind::LegacyRequeue | DecisionKind::LeaseReturned => Action::Retry,
            _ => Action::Fail,
        }
    }
}

/// Which counter a decision used: a rule by index, or the policy's default action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleRef {
    Index(usize),
    Default,
}

impl std::fmt::Display for RuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleRef::Index(i) => write!(f, "{i}"),
            RuleRef::Default => write!(f, "default"),
        }
    }
}

/// What the job carries between runs (SPEC §2.4, §2.6).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobState {
    pub total_retries: u32,
    /// (index in the effective list, rule) → retries granted under it.
    counters: Vec<((usize, RuleRef), u32)>,
    /// Nodes of the runs that started, first use order, no duplicates.
    pub nodes_tried: Vec<String>,
    /// Current memory in bytes, when the history gives the job's memory.
    pub memory: Option<f64>,
    /// Upstream's `FailureCount`: failed runs so far, this one included, excluding
    /// preempted and returned ones (SPEC §2.10).
    pub failures: u32,
    /// Nodes of every attempted run, returned leases included (upstream's avoidSameNode).
    pub nodes_attempted: Vec<String>,
    original_memory: Option<f64>,
    memory_factor: Option<f64>,
    memory_static: Option<f64>,
}

impl JobState {
    pub fn new(memory: Option<f64>) -> JobState {
        JobState {
            memory,
            original_memory: memory,
            ..JobState::default()
        }
    }

    pub fn counter(&self, policy: usize, rule: RuleRef) -> u32 {
        self.counters
            .iter()
            .find(|(k, _)| *k == (policy, rule))
            .map_or(0, |(_, v)| *v)
    }

    fn bump(&mut self, policy: usize, rule: RuleRef) -> u32 {
        self.total_retries += 1;
        if let Some((_, v)) = self.counters.iter_mut().find(|(k, _)| *k == (policy, rule)) {
            *v += 1;
            return *v;
        }
        self.counters.push(((policy, rule), 1));
        1
    }

    /// All counters, for property tests and summaries.
    pub fn counters(&self) -> impl Iterator<Item = (usize, RuleRef, u32)> + '_ {
        self.counters.iter().map(|((p, r), v)| (*p, *r, *v))
    }
}

/// Per-job facts the evaluator needs besides the run.
#[derive(Debug, Clone, Copy)]
pub struct JobContext<'a> {
    pub id: &'a str,
    pub fail_fast: bool,
    pub termination_grace_period: GoDuration,
}

/// The parts of a retry's delay (SPEC §2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DelayParts {
    /// `min(initialDelay × multiplier^(n−1), maxDelay)`.
    pub backoff: GoDuration,
    /// What jitter added (after the cap at `maxDelay`).
    pub jitter: GoDuration,
    /// The graceful-shutdown floor of a preempted run (0 otherwise).
    pub grace: GoDuration,
}

/// One evaluation's result (SPEC §2.9). Times are nanoseconds since submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub kind: DecisionKind,
    /// Index in the effective list.
    pub policy: Option<usize>,
    pub rule: Option<RuleRef>,
    pub signal: Option<String>,
    /// The matched counter after this decision, and its effective limit.
    pub counter: Option<u32>,
    pub limit: Option<u32>,
    pub total_retries: u32,
    pub global_max_retries: u32,
    pub delay: GoDuration,
    pub delay_parts: DelayParts,
    /// `None` when the job does not run again.
    pub retry_after: Option<u64>,
    pub avoid_nodes: Vec<String>,
    pub memory: Option<f64>,
    /// Set when a memory bump of the other kind was skipped.
    pub memory_note: Option<&'static str>,
    pub next_pod_name: Option<String>,
}

impl Decision {
    pub fn action(&self) -> Action {
        self.kind.action()
    }

    pub(crate) fn fail(kind: DecisionKind, state: &JobState, global: u32) -> Decision {
        Decision {
            kind,
            policy: None,
            rule: None,
            signal: None,
            counter: None,
            limit: None,
            total_retries: state.total_retries,
            global_max_retries: global,
            delay: GoDuration::ZERO,
            delay_parts: DelayParts::default(),
            retry_after: None,
            avoid_nodes: Vec::new(),
            memory: state.memory,
            memory_note: None,
            next_pod_name: None,
        }
    }
}

/// SPEC §2.7.
pub fn pod_name(job_id: &str, run: usize, feature_enabled: bool) -> String {
    let mut name = String::with_capacity(job_id.len() + 16);
    name.push_str("armada-");
    name.push_str(job_id);
    name.push_str("-0");
    if feature_enabled && run > 0 {
        name.push('-');
        name.push_str(&run.to_string());
    }
    name
}

/// SPEC §2.2: the containers a rule's container-level matchers look at.
fn selected_container<'r>(rule: &Rule, run: &'r Run) -> Option<&'r Container> {
    if let Some(name) = &rule.container_name {
        return run.containers.iter().find(|c| &c.name == name);
    }
    if rule.include_init_containers {
        if let Some(c) = run.containers.iter().find(|c| c.init && c.failed()) {
            return Some(c);
        }
    }
    run.containers.iter().find(|c| !c.init && c.failed())
}

/// SPEC §2.3. Returns the signal in words when every matcher of the rule matches.
///
/// Matchers are tried cheapest first (category, pod conditions, exit codes, then the
/// regular expression), and the container is selected only when a container-level matcher
/// needs it: a rule that misses costs a few comparisons. The signal is written only for
/// the rule that matched, in a fixed order.
fn rule_matches(rule: &Rule, pattern: Option<&Pattern>, run: &Run) -> Option<String> {
    if !rule.has_matcher() {
        return None;
    }
    let category = match &rule.on_failure_category {
        Some(categories) => {
            let cat = run.category.as_deref()?;
            if !categories.iter().any(|c| c == cat) {
                return None;
            }
            match &rule.on_failure_subcategory {
                Some(subs) => {
                    let sub = run.subcategory.as_deref()?;
                    if !subs.iter().any(|s| s == sub) {
                        return None;
                    }
                    Some((cat, Some(sub)))
                }
                None => Some((cat, None)),
            }
        }
        // Validation rejects a subcategory without a category; never match if one slips by.
        None if rule.on_failure_subcategory.is_some() => return None,
        None => None,
    };
    // Pod-level conditions first: they need no container.
    let needs_container = rule.on_exit_codes.is_some()
        || (pattern.is_some() && rule.container_name.is_some())
        || rule
            .on_conditions
            .as_ref()
            .is_some_and(|c| c.contains(&Condition::OOMKilled));
    if let Some(conditions) = &rule.on_conditions {
        if !needs_container && !conditions.iter().any(|c| run.conditions.contains(c)) {
            return None;
        }
    }
    let selected = if needs_container {
        selected_container(rule, run)
    } else {
        None
    };
    let condition = match &rule.on_conditions {
        Some(conditions) => Some(*conditions.iter().find(|c| match c {
            Condition::OOMKilled => selected.is_some_and(|s| s.reason.as_deref() == Some("OOMKilled")),
            other => run.conditions.contains(other),
        })?),
        None => None,
    };
    let exit = match &rule.on_exit_codes {
        Some(codes) => {
            let c = selected?;
            if c.exit_code == 0 {
                return None;
            }
            let member = codes.values.contains(&c.exit_code);
            let ok = match codes.operator {
                Operator::In => member,
                Operator::NotIn => !member,
            };
            if !ok {
                return None;
            }
            Some(c)
        }
        None => None,
    };
    let message = match pattern {
        Some(re) => {
            let hit = |c: &&Container| c.message.as_deref().is_some_and(|m| !m.is_empty() && re.is_match(m));
            let found = if rule.container_name.is_some() {
                selected.filter(hit)
            } else {
                run.containers
                    .iter()
                    .filter(|c| !c.init || rule.include_init_containers)
                    .find(hit)
            };
            Some(found?)
        }
        None => None,
    };
    // Built with `push_str` rather than `format!`: this runs once per decision and the
    // formatting machinery was a visible share of the evaluator's time.
    let mut signal = String::with_capacity(48);
    let mut add = |parts: &[&str]| {
        if !signal.is_empty() {
            signal.push_str(", ");
        }
        for p in parts {
            signal.push_str(p);
        }
    };
    match (condition, selected) {
        // An unnamed container (a Lookout import) reads `container exit 137`.
        (Some(Condition::OOMKilled), Some(c)) => add(&["container", sep(c), &c.name, " OOMKilled"]),
        (Some(hit), _) => add(&["condition ", hit.as_str()]),
        (None, _) => {}
    }
    if let Some(c) = exit {
        add(&["container", sep(c), &c.name, " exit ", &c.exit_code.to_string()]);
    }
    if let Some(c) = message {
        add(&["message of container", sep(c), &c.name, " matches"]);
    }
    match category {
        Some((cat, Some(sub))) => add(&["category ", cat, "/", sub]),
        Some((cat, None)) => add(&["category ", cat]),
        None => {}
    }
    Some(signal)
}

/// The space before a container's name, none for an unnamed container.
fn sep(c: &Container) -> &'static str {
    if c.name.is_empty() {
        ""
    } else {
        " "
    }
}

/// A stable `u` in [0, 1) from (job id, run index): FNV-1a over the id, mixed with the run
/// index by SplitMix64. Stable across platforms and Rust releases.
pub fn jitter_fraction(job_id: &str, run_index: usize) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in job_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = h ^ (run_index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Backoff with each field resolved on its own: rule → policy → scheduler → built-in.
pub fn resolve_backoff(
    rule: Option<&Backoff>,
    policy: &Backoff,
    scheduler: &Backoff,
) -> (GoDuration, GoDuration, f64, f64) {
    let pick = |f: fn(&Backoff) -> Option<GoDuration>, builtin| {
        rule.and_then(f)
            .or_else(|| f(policy))
            .or_else(|| f(scheduler))
            .unwrap_or(builtin)
    };
    let pickf = |f: fn(&Backoff) -> Option<f64>, builtin| {
        rule.and_then(f)
            .or_else(|| f(policy))
            .or_else(|| f(scheduler))
            .unwrap_or(builtin)
    };
    (
        pick(|b| b.initial_delay, BUILTIN_INITIAL_DELAY),
        pick(|b| b.max_delay, BUILTIN_MAX_DELAY),
        pickf(|b| b.multiplier, BUILTIN_MULTIPLIER),
        pickf(|b| b.jitter, BUILTIN_JITTER),
    )
}

/// `min(initial × multiplier^(n−1), max)`, saturating: never overflows, never NaN.
pub fn backoff_delay(initial: GoDuration, max: GoDuration, multiplier: f64, n: u32) -> GoDuration {
    if initial.0 == 0 || n == 0 {
        return GoDuration(initial.0.min(max.0));
    }
    let m = if multiplier.is_finite() && multiplier >= 1.0 {
        multiplier
    } else {
        1.0
    };
    let exp = i32::try_from(n - 1).unwrap_or(i32::MAX);
    let v = initial.0 as f64 * m.powi(exp);
    if !v.is_finite() || v >= max.0 as f64 {
        max
    } else {
        // Rounded, not truncated: 10s × 1.15² is 13.225s, not 13.224999999s.
        GoDuration(v.round() as u64)
    }
}

/// Evaluates one finished run (SPEC §2.4–2.9) and updates `state`.
///
/// `policies` is the effective list (§2.1, empty = legacy), `run_index` the run's position
/// in the job, `failed_at` when it ended (ns since submission).
pub fn evaluate(
    policies: &[&CompiledPolicy],
    settings: &Settings,
    job: &JobContext<'_>,
    state: &mut JobState,
    run: &Run,
    run_index: usize,
    failed_at: u64,
) -> Decision {
    let global = settings.global_max_retries;
    let requeue = |kind: DecisionKind, state: &JobState| Decision {
        retry_after: Some(failed_at),
        next_pod_name: Some(pod_name(job.id, run_index + 1, settings.enabled)),
        ..Decision::fail(kind, state, global)
    };
    if run.outcome == Outcome::Cancelled {
        return Decision::fail(DecisionKind::Cancelled, state, global);
    }
    if job.fail_fast && matches!(run.outcome, Outcome::Failed | Outcome::LeaseReturned) {
        return Decision::fail(DecisionKind::FailFast, state, global);
    }
    let attempts = u32::try_from(run_index + 1).unwrap_or(u32::MAX);
    if !settings.enabled || policies.is_empty() {
        return if run.outcome == Outcome::LeaseReturned && attempts < settings.max_attempted_runs {
            requeue(DecisionKind::LegacyRequeue, state)
        } else {
            Decision::fail(DecisionKind::LegacyFail, state, global)
        };
    }
    if run.outcome == Outcome::LeaseReturned {
        // Upstream sends a returned lease down the legacy path even with the engine on: it
        // consumes no retry budget, but `maxAttemptedRuns` still bounds it, so that a job
        // whose leases keep coming back is not requeued forever.
        return if attempts < settings.max_attempted_runs {
            requeue(DecisionKind::LeaseReturned, state)
        } else {
            Decision::fail(DecisionKind::LegacyFail, state, global)
        };
    }

    // First match across the concatenated rules.
    let mut matched: Option<(usize, usize, String)> = None;
    'outer: for (p, cp) in policies.iter().enumerate() {
        for (r, rule) in cp.policy.rules.iter().enumerate() {
            if let Some(signal) = rule_matches(rule, cp.patterns[r].as_ref(), run) {
                matched = Some((p, r, signal));
                break 'outer;
            }
        }
    }
    let (p, rule_ref, rule, signal) = match matched {
        Some((p, r, signal)) => {
            let rule = &policies[p].policy.rules[r];
            if rule.action == Action::Fail {
                return Decision {
                    policy: Some(p),
                    rule: Some(RuleRef::Index(r)),
                    signal: Some(signal),
                    ..Decision::fail(DecisionKind::FailRule, state, global)
                };
            }
            (p, RuleRef::Index(r), Some(rule), signal)
        }
        None => match policies.iter().position(|cp| cp.policy.default_action == Action::Retry) {
            Some(p) => (p, RuleRef::Default, None, "no rule matched".to_string()),
            None => {
                return Decision {
                    signal: Some("no rule matched".to_string()),
                    ..Decision::fail(DecisionKind::FailDefault, state, global)
                }
            }
        },
    };
    let policy = &policies[p].policy;
    let limit = rule
        .and_then(|r| r.retry_limit)
        .or(policy.retry_limit)
        .unwrap_or(global);
    let count = state.counter(p, rule_ref);
    let global_hit = state.total_retries >= global;
    let rule_hit = count >= limit;
    if global_hit || rule_hit {
        let kind = if global_hit {
            DecisionKind::FailGlobalLimit
        } else {
            DecisionKind::FailRuleLimit
        };
        return Decision {
            policy: Some(p),
            rule: Some(rule_ref),
            signal: Some(signal),
            counter: Some(count),
            limit: Some(limit),
            ..Decision::fail(kind, state, global)
        };
    }
    let n = state.bump(p, rule_ref);

    // Delay (SPEC §2.5).
    let (initial, max, multiplier, jitter) =
        resolve_backoff(rule.map(|r| &r.backoff), &policy.backoff, &settings.default_backoff);
    let backoff = backoff_delay(initial, max, multiplier, n);
    let mut with_jitter = backoff;
    if jitter > 0.0 && backoff.0 > 0 {
        let add = backoff.0 as f64 * jitter.min(1.0) * jitter_fraction(job.id, run_index);
        let total = (backoff.0 as f64 + add).min(max.0 as f64);
        // Whole milliseconds: a delay of `58.100503407s` is noise to an operator.
        let ms = if total.is_finite() {
            total as u64 / 1_000_000 * 1_000_000
        } else {
            max.0
        };
        with_jitter = GoDuration(ms.min(max.0)).max(backoff);
    }
    let grace = if run.conditions.contains(&Condition::Preempted) {
        match run.termination_confirmed_after {
            Some(t) => t.min(job.termination_grace_period),
            None => job.termination_grace_period,
        }
    } else {
        GoDuration::ZERO
    };
    let delay = with_jitter.max(grace);

    // Anti-affinity and mutations (SPEC §2.6). Default-action retries carry no mutation.
    let mode = rule
        .and_then(|r| r.anti_affinity)
        .or(policy.anti_affinity)
        .unwrap_or_default();
    let mutation = rule.and_then(|r| r.mutate.as_ref());
    let avoid_same = mutation
        .and_then(|m| m.affinity.as_ref())
        .is_some_and(|a| a.avoid_same_node);
    let mut avoid_nodes = Vec::new();
    if avoid_same {
        avoid_nodes = state.nodes_tried.clone();
        if let Some(node) = &run.node {
            if !avoid_nodes.contains(node) {
                avoid_nodes.push(node.clone());
            }
        }
    } else if mode == AntiAffinityMode::Node {
        if let Some(node) = &run.node {
            avoid_nodes.push(node.clone());
        }
    }
    let memory_note = match rule_ref {
        RuleRef::Index(r) => apply_memory_bump(state, policies[p], r),
        RuleRef::Default => None,
    };

    Decision {
        kind: DecisionKind::Retry,
        policy: Some(p),
        rule: Some(rule_ref),
        signal: Some(signal),
        counter: Some(n),
        limit: Some(limit),
        total_retries: state.total_retries,
        global_max_retries: global,
        delay,
        delay_parts: DelayParts {
            backoff,
            jitter: GoDuration(with_jitter.0 - backoff.0),
            grace,
        },
        retry_after: Some(failed_at.saturating_add(delay.0)),
        avoid_nodes,
        memory: state.memory,
        memory_note,
        next_pod_name: Some(pod_name(job.id, run_index + 1, settings.enabled)),
    }
}

/// SPEC §2.6 / §2.10: the matched rule's `mutate.resources.memory` grows the job's memory
/// for the next run. One kind per job: factors multiply, each step rounding up from the
/// previous memory (as upstream's reservation does); statics add; a bump of the other kind
/// is skipped and the returned note says so. Shared by both engines.
pub(crate) fn apply_memory_bump(state: &mut JobState, policy: &CompiledPolicy, rule: usize) -> Option<&'static str> {
    let bump = policy.policy.rules[rule]
        .mutate
        .as_ref()
        .and_then(|m| m.resources.as_ref())
        .and_then(|r| r.memory.as_ref())?;
    if let Some(factor) = bump.factor {
        if state.memory_static.is_some() {
            return Some("memory factor skipped: the job already grew by a static amount");
        }
        state.memory_factor = Some(state.memory_factor.unwrap_or(1.0) * factor);
        state.memory = state.memory.map(|m| (m * factor).ceil());
    } else if let Some(add) = policy.statics[rule] {
        if state.memory_factor.is_some() {
            return Some("memory static skipped: the job already grew by a factor");
        }
        let s = state.memory_static.unwrap_or(0.0) + add;
        state.memory_static = Some(s);
        state.memory = state.original_memory.map(|m| m + s);
    }
    None
}

#[cfg(test)]
mod tests;
