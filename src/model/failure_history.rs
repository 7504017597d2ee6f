//! The FailureHistory document (docs/simulate.md): a job and its runs, for `simulate`.
//!
//! Owns: the types, their strict decoding (every unknown field is an error with a
//! suggestion, every error has a path and a position) and the few checks that need no
//! policy (`validate_failure_history`). Also owns [`Timestamp`], the RFC 3339 instant of
//! `job.submittedAt`. Must not: evaluate anything, read a clock, or do I/O.
//!
//! Decisions docs/simulate.md leaves open (written down here because operators will ask):
//! - `job.id` may be omitted; the command then uses the file stem (or `line-N` in JSON Lines).
//! - a run may give `startedAt` (a duration since submission, or an RFC 3339 time when
//!   `job.submittedAt` is set) instead of `queuedFor`; that is how a history states "this run
//!   started at …", which `simulate` checks against the previous decision's `retryAfter`.
//! - a run may give `globalMaxRetries`: the scheduler's limit from that run on, modelling a
//!   config reload in the middle of a job's life (docs/engines.md).
//! - pod-level `conditions` take `Evicted`, `Preempted`, `DeadlineExceeded`, `Unschedulable`;
//!   `OOMKilled` is a container `reason` and is rejected at pod level with that advice.
//! - a container's `name` may be left out (docs/lookout.md: Lookout keeps no container names). An
//!   unnamed container is held as an empty `name` (see [`Container::name`]), so the evaluator,
//!   which compares names, matches it only with rules that have no `containerName`; an
//!   explicitly empty `name: ""` is still an error.

use std::collections::BTreeMap;

use crate::diag::{index, quote, Diagnostic};
use crate::yaml::Node;

use super::decode::Decoder;
use super::duration::{DurationError, GoDuration};
use super::policy::{Action, Condition};
use super::quantity::{parse_quantity, thousandths_up};
pub use super::timestamp::{TimeError, Timestamp};
use super::vocabulary;
pub use super::vocabulary::{DECISION_KINDS, EXECUTOR_PATHS, POD_CONDITIONS};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct FailureHistory {
    pub job: Job,
    pub runs: Vec<Run>,
    pub expect: Option<JobExpect>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Job {
    /// Empty when the document does not say; the command fills in the file stem.
    pub id: String,
    pub queue: Option<String>,
    /// `job.jobSet`: with the queue, the job set it was submitted in (docs/reference/suggest.md
    /// "Incidents": one job set's burst). No effect on decisions.
    pub job_set: Option<String>,
    pub annotations: BTreeMap<String, String>,
    /// Default 1s, as Armada assigns.
    pub termination_grace_period: Option<GoDuration>,
    /// Bytes, from a Kubernetes quantity (`8Gi`).
    pub memory: Option<f64>,
    pub submitted_at: Option<Timestamp>,
    /// `job.gang.cardinality`: upstream sends a gang of more than one job down the legacy
    /// path (docs/engines.md); the design engine ignores it.
    pub gang_cardinality: Option<u32>,
    /// `job.resources` (docs/estimates.md): what the job requests, for its cost in GPU- and
    /// CPU-hours. No effect on decisions.
    pub resources: Option<Resources>,
    /// `job.state`: how the record ends the job (docs/lookout.md: Lookout's `job.state` of a
    /// job whose record is complete). `None`: the history does not say, and a replay that
    /// retries after the last run leaves the job Pending. No effect on decisions: a replay
    /// that would run a job the record ends `succeeded` or `failed` again is contradicted by
    /// it (docs/what-if.md).
    pub state: Option<JobEnd>,
}

/// How the record ends a job (`job.state`), as Lookout holds it: `succeeded`, `failed`
/// (Lookout's FAILED, PREEMPTED and REJECTED) or `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JobEnd {
    Succeeded,
    Failed,
    Cancelled,
}

impl JobEnd {
    pub const NAMES: [&'static str; 3] = vocabulary::JOB_ENDS;
    /// Every end, in the order of [`JobEnd::NAMES`].
    pub const ALL: [JobEnd; 3] = [JobEnd::Succeeded, JobEnd::Failed, JobEnd::Cancelled];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(text: &str) -> Option<JobEnd> {
        Self::NAMES.iter().position(|n| *n == text).map(|i| Self::ALL[i])
    }
}

/// A job's resource requests (docs/estimates.md), each a Kubernetes quantity in the document
/// (`cpu: "4"`, `cpu: 500m`, `gpu: 1`, `memory: 8Gi`). CPU and GPU are kept in thousandths,
/// whole numbers, so that sums of run time × request are exact whatever their order (the
/// shards of docs/past-one-machine.md add them in another order than one process does).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Resources {
    /// Thousandths of a CPU (millicores).
    pub cpu_milli: Option<u64>,
    /// Bytes.
    pub memory: Option<f64>,
    /// Thousandths of a GPU.
    pub gpu_milli: Option<u64>,
}

impl Resources {
    /// The most thousandths of a CPU or GPU a request may be (2^53, ~9×10^12 devices): past
    /// it a request is absurd, and the sums of run time × request it would enter could not
    /// be exact. Every reader holds requests to it (`simulate --history`'s documents,
    /// Lookout's rows).
    pub const MILLI_MAX: u64 = 1 << 53;

    /// A quantity's text of CPUs or GPUs in thousandths, exactly and rounded up as Kubernetes
    /// reads a request ([`thousandths_up`]); `None` for a negative or absurd one (past
    /// [`Resources::MILLI_MAX`]), or a text that is no quantity.
    pub fn milli(quantity: &str) -> Option<u64> {
        thousandths_up(quantity, Self::MILLI_MAX)
    }

    /// Whether the job requests neither CPU nor GPU (its hours count 0: `withoutResources`).
    pub fn is_none(r: Option<&Resources>) -> bool {
        r.is_none_or(|r| r.cpu_milli.is_none() && r.gpu_milli.is_none())
    }

    /// Thousandths as a quantity's text: `4`, `500m`, `1500m`.
    pub fn milli_text(m: u64) -> String {
        if m % 1000 == 0 {
            (m / 1000).to_string()
        } else {
            format!("{m}m")
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Outcome {
    #[default]
    Failed,
    Succeeded,
    LeaseReturned,
    Cancelled,
}

impl Outcome {
    pub const NAMES: [&'static str; 4] = vocabulary::OUTCOMES;
    /// Every outcome, in the order of [`Outcome::NAMES`].
    pub const ALL: [Outcome; 4] = [
        Outcome::Failed,
        Outcome::Succeeded,
        Outcome::LeaseReturned,
        Outcome::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        Self::NAMES.iter().position(|n| *n == text).map(|i| Self::ALL[i])
    }
}

/// Which of the executor's paths ended the run (docs/categorizer.md "Which matchers see
/// what", after upstream's `pod_issue_handler.go` and `job_state_reporter.go` at 207cc9e),
/// and so what its categorizer was given: the pod-error text, the pod's events, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExecutorPath {
    /// A pod stuck pending (`Unable to start pod…`): classified on that text (`podError`),
    /// with no events; the executor deletes the pod whatever the category.
    StuckPod,
    /// A failed pod claimed by a legacy failed-pod check (its lease returned): classified on
    /// the check's message (`podError`), with no events; the pod is deleted.
    FailedPodCheck,
    /// A failed pod: classified on its containers and conditions alone, except that the
    /// Delete-action check first classifies it on its failure text (the pod's status message,
    /// else its containers' lines) with its events, and keeps that result only for a
    /// category whose action is `Delete`.
    FailedPod,
    /// Armada failed the run itself (an internal issue, a lease expiry, a preemption): the
    /// executor's classifier never sees it, and it keeps its recorded category.
    Unclassified,
}

impl ExecutorPath {
    pub const NAMES: [&'static str; 4] = vocabulary::EXECUTOR_PATHS;
    /// Every path, in the order of [`ExecutorPath::NAMES`].
    pub const ALL: [ExecutorPath; 4] = [
        ExecutorPath::StuckPod,
        ExecutorPath::FailedPodCheck,
        ExecutorPath::FailedPod,
        ExecutorPath::Unclassified,
    ];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(text: &str) -> Option<ExecutorPath> {
        Self::NAMES.iter().position(|n| *n == text).map(|i| Self::ALL[i])
    }

    /// Whether the executor classified the run on a pod issue (a stuck pod, a failed-pod
    /// check): on its `podError` text, with no events, deleting the pod whatever the
    /// category. Such a run is classified even when its lease was returned.
    pub fn pod_issue(self) -> bool {
        matches!(self, ExecutorPath::StuckPod | ExecutorPath::FailedPodCheck)
    }
}

/// When a run started, if the history says so (else it is derived, docs/simulate.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartedAt {
    /// Since submission.
    Offset(GoDuration),
    Absolute(Timestamp),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Container {
    /// Empty when the history gives no name (Lookout imports); see [`Container::name`].
    pub name: String,
    pub init: bool,
    pub exit_code: i64,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl Container {
    /// The container's name, `None` for an unnamed container.
    pub fn name(&self) -> Option<&str> {
        (!self.name.is_empty()).then_some(self.name.as_str())
    }

    /// docs/engines.md: failed means a non-zero exit code or an OOM kill.
    pub fn failed(&self) -> bool {
        self.exit_code != 0 || self.reason.as_deref() == Some("OOMKilled")
    }
}

/// The pool of a run whose history names none (`pool` left out, or empty).
pub const DEFAULT_POOL: &str = "default";

/// The pool a run's `pool` names: [`DEFAULT_POOL`] when it names none (left out, or empty, as
/// Lookout's `job_run.pool` can be). The one reading of a run's pool: the contention section
/// counts by it and the export leaves out what it reads as the default.
pub fn pool_or_default(pool: Option<&str>) -> &str {
    pool.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_POOL)
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Run {
    pub node: Option<String>,
    /// `pool`: the pool the run was scheduled in (Lookout's `job_run.pool`); `None`: the
    /// history does not say, read as [`DEFAULT_POOL`] ([`pool_or_default`], docs/contention.md).
    pub pool: Option<String>,
    pub queued_for: GoDuration,
    pub started_at: Option<StartedAt>,
    pub run_for: GoDuration,
    pub conditions: Vec<Condition>,
    pub termination_confirmed_after: Option<GoDuration>,
    pub containers: Vec<Container>,
    pub category: Option<String>,
    pub subcategory: Option<String>,
    pub outcome: Outcome,
    pub global_max_retries: Option<u32>,
    /// The pod-error text the executor's classifier was given (what a categorizer's
    /// `onPodError` matches): on a pod issue (`executorPath` `stuckPod`, `failedPodCheck`)
    /// the issue's message, as Lookout stores it without the hint; on a `failedPod`, the
    /// pod's status message when the executor sent one instead of its containers' lines.
    pub pod_error: Option<String>,
    /// Which of the executor's paths ended the run; `None` when the history does not say
    /// (every matcher then sees the run's `podError` and `events`, as upstream's
    /// `ClassifyPodError` called with both).
    pub executor_path: Option<ExecutorPath>,
    /// The pod's Kubernetes events, in order: what a categorizer's `onPodEvents` matches.
    pub events: Vec<PodEvent>,
    /// Boxed: few runs have one, and a `Run` is moved whole while a history is decoded.
    pub expect: Option<Box<RunExpect>>,
}

/// One Kubernetes event of a run's pod (`{type: Warning, reason: …, message: …}`). A field
/// the history leaves out is empty, as Kubernetes leaves it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodEvent {
    /// `Normal` or `Warning` in Kubernetes; any text is kept as written.
    pub event_type: String,
    pub reason: String,
    pub message: String,
}

/// Assertions on one run's decision. Every field optional; each set one is checked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunExpect {
    pub action: Option<Action>,
    /// A decision kind of docs/engines.md (`fail_rule_limit`).
    pub decision: Option<String>,
    /// `policy/index` or `policy/default`.
    pub rule: Option<String>,
    pub delay: Option<GoDuration>,
    /// Total retries of the job after this decision.
    pub retries: Option<u32>,
    pub pod_name: Option<String>,
    pub avoid_nodes: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Final {
    Succeeded,
    Failed,
    Cancelled,
    Pending,
}

impl Final {
    pub const NAMES: [&'static str; 4] = vocabulary::FINAL_STATES;
    /// Every final state, in the order of [`Final::NAMES`].
    pub const ALL: [Final; 4] = [Final::Succeeded, Final::Failed, Final::Cancelled, Final::Pending];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(text: &str) -> Option<Final> {
        Self::NAMES.iter().position(|n| *n == text).map(|i| Final::ALL[i])
    }
}

/// Assertions on the whole job.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobExpect {
    pub final_state: Option<Final>,
    pub retries: Option<u32>,
    /// The decision kind of the last evaluated run.
    pub decision: Option<String>,
}

// The fields each level accepts come from `fields`, the one table `explain` and `schema` read;
// the names of the enumerations from `vocabulary`.

pub fn decode_failure_history(dec: &mut Decoder, node: &Node) -> Option<FailureHistory> {
    let top = dec.fields(node, "", &super::fields::names(super::fields::FAILURE_HISTORY))?;
    let mut h = FailureHistory::default();
    // `job` may be left out entirely: the id then defaults to the file stem and the job has
    // no queue (it gets the policies given on the command line).
    if let Some(job) = top.get("job") {
        if let Some(f) = dec.fields(job, "job", &super::fields::names(super::fields::HISTORY_JOB)) {
            decode_job(dec, &f, &mut h.job);
        }
    }
    if let Some(runs) = dec.require(&top, node, "runs") {
        if let Some(items) = dec.seq(runs, "runs") {
            for (i, item) in items.iter().enumerate() {
                h.runs.push(decode_run(dec, item, &index("runs", i)));
            }
        }
    }
    if let Some(n) = top.get("expect") {
        if let Some(f) = dec.fields(n, "expect", &super::fields::names(super::fields::JOB_EXPECT)) {
            let mut e = JobExpect::default();
            if let Some(v) = f.get("final") {
                e.final_state = dec.enumeration(v, &f.path_of("final"), &Final::NAMES, Final::parse);
            }
            if let Some(v) = f.get("retries") {
                e.retries = dec.u32(v, &f.path_of("retries"));
            }
            if let Some(v) = f.get("decision") {
                e.decision = decision_kind(dec, v, &f.path_of("decision"));
            }
            h.expect = Some(e);
        }
    }
    Some(h)
}

fn decode_job(dec: &mut Decoder, f: &super::decode::Fields<'_>, job: &mut Job) {
    if let Some(v) = f.get("id") {
        job.id = dec.string(v, &f.path_of("id")).unwrap_or_default();
    }
    if let Some(v) = f.get("queue") {
        job.queue = dec.string(v, &f.path_of("queue"));
    }
    // No effect on decisions; a burst's job set.
    if let Some(v) = f.get("jobSet") {
        job.job_set = dec.string(v, &f.path_of("jobSet"));
    }
    if let Some(v) = f.get("annotations") {
        let p = f.path_of("annotations");
        if let crate::yaml::Value::Map(entries) = &v.value {
            for (k, val) in entries {
                let key = k.as_scalar().unwrap_or_default().to_string();
                if let Some(s) = dec.string(val, &crate::diag::join(&p, &key)) {
                    job.annotations.insert(key, s);
                }
            }
        } else {
            dec.error(
                v,
                "invalid-type",
                &p,
                format!("expected a mapping, found a {}", v.kind_name()),
            );
        }
    }
    if let Some(v) = f.get("terminationGracePeriod") {
        job.termination_grace_period = dec.duration(v, &f.path_of("terminationGracePeriod"));
    }
    if let Some(v) = f.get("memory") {
        let p = f.path_of("memory");
        if let Some(s) = dec.string(v, &p) {
            match parse_quantity(&s) {
                Ok(b) if b > 0.0 => job.memory = Some(b),
                Ok(_) => dec.error(v, "invalid-value", &p, format!("memory {} must be positive", quote(&s))),
                Err(e) => dec.error(v, "invalid-value", &p, format!("invalid quantity {}: {e}", quote(&s))),
            }
        }
    }
    if let Some(v) = f.get("submittedAt") {
        let p = f.path_of("submittedAt");
        if let Some(s) = dec.string(v, &p) {
            match Timestamp::read(&s) {
                Ok(t) => job.submitted_at = Some(t),
                Err(e) => dec.error(
                    v,
                    "invalid-value",
                    &p,
                    Timestamp::refusal(&e, "time", &s, "expected RFC 3339 such as `2026-01-01T00:00:00Z`"),
                ),
            }
        }
    }
    if let Some(v) = f.get("gang") {
        if let Some(g) = dec.fields(v, &f.path_of("gang"), &["cardinality"]) {
            if let Some(c) = g.get("cardinality") {
                job.gang_cardinality = dec.u32(c, &g.path_of("cardinality"));
            }
        }
    }
    if let Some(v) = f.get("state") {
        job.state = dec.enumeration(v, &f.path_of("state"), &JobEnd::NAMES, JobEnd::parse);
    }
    if let Some(v) = f.get("resources") {
        let p = f.path_of("resources");
        if let Some(r) = dec.fields(v, &p, &super::fields::names(super::fields::HISTORY_RESOURCES)) {
            let mut res = Resources::default();
            for (name, slot) in [("cpu", &mut res.cpu_milli), ("gpu", &mut res.gpu_milli)] {
                if let Some(n) = r.get(name) {
                    *slot = request(dec, n, &r.path_of(name)).and_then(|_| {
                        let m = Resources::milli(n.as_scalar().unwrap_or_default());
                        if m.is_none() {
                            dec.error(
                                n,
                                "invalid-value",
                                &r.path_of(name),
                                format!("{name} {} is too large", quote(n.as_scalar().unwrap_or_default())),
                            );
                        }
                        m
                    });
                }
            }
            if let Some(n) = r.get("memory") {
                res.memory = request(dec, n, &r.path_of("memory"));
            }
            job.resources = Some(res);
        }
    }
}

/// One resource request: a quantity of 0 or more.
fn request(dec: &mut Decoder, v: &Node, p: &str) -> Option<f64> {
    let s = dec.string(v, p)?;
    match parse_quantity(&s) {
        Ok(q) if q >= 0.0 => Some(q),
        Ok(_) => {
            dec.error(
                v,
                "invalid-value",
                p,
                format!("request {} must not be negative", quote(&s)),
            );
            None
        }
        Err(e) => {
            dec.error(v, "invalid-value", p, format!("invalid quantity {}: {e}", quote(&s)));
            None
        }
    }
}

fn decode_run(dec: &mut Decoder, node: &Node, path: &str) -> Run {
    let mut run = Run::default();
    let Some(f) = dec.fields(node, path, &super::fields::names(super::fields::HISTORY_RUN)) else {
        return run;
    };
    if let Some(v) = f.get("node") {
        run.node = dec.string(v, &f.path_of("node"));
    }
    if let Some(v) = f.get("pool") {
        run.pool = dec.string(v, &f.path_of("pool"));
    }
    if let Some(v) = f.get("queuedFor") {
        run.queued_for = dec.duration(v, &f.path_of("queuedFor")).unwrap_or_default();
    }
    if let Some(v) = f.get("startedAt") {
        let p = f.path_of("startedAt");
        if let Some(s) = dec.string(v, &p) {
            match GoDuration::parse(&s) {
                Ok(d) => run.started_at = Some(StartedAt::Offset(d)),
                // A duration, but one no start can be: said as `runFor`'s would be, not as a
                // time of the wrong shape.
                Err(e @ (DurationError::TooLarge | DurationError::Negative)) => {
                    dec.error(v, "invalid-value", &p, format!("invalid start {}: {e}", quote(&s)))
                }
                Err(_) => match Timestamp::read(&s) {
                    Ok(t) => run.started_at = Some(StartedAt::Absolute(t)),
                    Err(e) => dec.error(
                        v,
                        "invalid-value",
                        &p,
                        Timestamp::refusal(
                            &e,
                            "start",
                            &s,
                            "expected a duration since submission (`90s`) or an RFC 3339 time",
                        ),
                    ),
                },
            }
        }
        if f.get("queuedFor").is_some() {
            dec.error(
                v,
                "conflicting-fields",
                &p,
                "set either `startedAt` or `queuedFor`, not both",
            );
        }
    }
    if let Some(v) = f.get("runFor") {
        run.run_for = dec.duration(v, &f.path_of("runFor")).unwrap_or_default();
    }
    if let Some(v) = f.get("conditions") {
        let p = f.path_of("conditions");
        if let Some(items) = dec.seq(v, &p) {
            for (i, item) in items.iter().enumerate() {
                let ip = index(&p, i);
                if item.as_scalar() == Some("OOMKilled") {
                    dec.error(
                        item,
                        "invalid-value",
                        &ip,
                        "`OOMKilled` is a container reason, not a pod condition; write it as `containers: [{name: main, reason: OOMKilled, exitCode: 137}]`",
                    );
                    continue;
                }
                if let Some(c) = dec.enumeration(item, &ip, &POD_CONDITIONS, Condition::parse) {
                    run.conditions.push(c);
                }
            }
        }
    }
    if let Some(v) = f.get("terminationConfirmedAfter") {
        run.termination_confirmed_after = dec.duration(v, &f.path_of("terminationConfirmedAfter"));
    }
    if let Some(v) = f.get("containers") {
        let p = f.path_of("containers");
        if let Some(items) = dec.seq(v, &p) {
            for (i, item) in items.iter().enumerate() {
                let cp = index(&p, i);
                let Some(cf) = dec.fields(item, &cp, &super::fields::names(super::fields::HISTORY_CONTAINER)) else {
                    continue;
                };
                let mut c = Container::default();
                if let Some(n) = cf.get("name") {
                    let np = cf.path_of("name");
                    match dec.string(n, &np) {
                        Some(s) if s.is_empty() => dec.error(
                            n,
                            "invalid-value",
                            &np,
                            "container name must not be empty; leave `name` out for an unnamed container",
                        ),
                        Some(s) => c.name = s,
                        None => {}
                    }
                }
                if let Some(n) = cf.get("init") {
                    c.init = dec.bool(n, &cf.path_of("init")).unwrap_or_default();
                }
                if let Some(n) = cf.get("exitCode") {
                    c.exit_code = dec.int(n, &cf.path_of("exitCode")).unwrap_or_default();
                }
                if let Some(n) = cf.get("reason") {
                    c.reason = dec.string(n, &cf.path_of("reason"));
                }
                if let Some(n) = cf.get("message") {
                    c.message = dec.string(n, &cf.path_of("message"));
                }
                run.containers.push(c);
            }
        }
    }
    if let Some(v) = f.get("category") {
        run.category = dec.string(v, &f.path_of("category"));
    }
    if let Some(v) = f.get("subcategory") {
        run.subcategory = dec.string(v, &f.path_of("subcategory"));
    }
    if let Some(v) = f.get("outcome") {
        if let Some(o) = dec.enumeration(v, &f.path_of("outcome"), &Outcome::NAMES, Outcome::parse) {
            run.outcome = o;
        }
    }
    if let Some(v) = f.get("globalMaxRetries") {
        run.global_max_retries = dec.u32(v, &f.path_of("globalMaxRetries"));
    }
    if let Some(v) = f.get("podError") {
        run.pod_error = dec.string(v, &f.path_of("podError"));
    }
    if let Some(v) = f.get("executorPath") {
        run.executor_path = dec.enumeration(v, &f.path_of("executorPath"), &ExecutorPath::NAMES, ExecutorPath::parse);
    }
    if let Some(v) = f.get("events") {
        let p = f.path_of("events");
        if let Some(items) = dec.seq(v, &p) {
            for (i, item) in items.iter().enumerate() {
                let ep = index(&p, i);
                let Some(ef) = dec.fields(item, &ep, &super::fields::names(super::fields::HISTORY_EVENT)) else {
                    continue;
                };
                let mut e = PodEvent::default();
                for (key, slot) in [
                    ("type", &mut e.event_type),
                    ("reason", &mut e.reason),
                    ("message", &mut e.message),
                ] {
                    if let Some(n) = ef.get(key) {
                        *slot = dec.string(n, &ef.path_of(key)).unwrap_or_default();
                    }
                }
                run.events.push(e);
            }
        }
    }
    if let Some(v) = f.get("expect") {
        let p = f.path_of("expect");
        if let Some(ef) = dec.fields(v, &p, &super::fields::names(super::fields::RUN_EXPECT)) {
            let mut e = RunExpect::default();
            if let Some(n) = ef.get("action") {
                e.action = dec.enumeration(n, &ef.path_of("action"), &Action::NAMES, |s| match s {
                    "Retry" => Some(Action::Retry),
                    "Fail" => Some(Action::Fail),
                    _ => None,
                });
            }
            if let Some(n) = ef.get("decision") {
                e.decision = decision_kind(dec, n, &ef.path_of("decision"));
            }
            if let Some(n) = ef.get("rule") {
                e.rule = dec.string(n, &ef.path_of("rule"));
            }
            if let Some(n) = ef.get("delay") {
                e.delay = dec.duration(n, &ef.path_of("delay"));
            }
            if let Some(n) = ef.get("retries") {
                e.retries = dec.u32(n, &ef.path_of("retries"));
            }
            if let Some(n) = ef.get("podName") {
                e.pod_name = dec.string(n, &ef.path_of("podName"));
            }
            if let Some(n) = ef.get("avoidNodes") {
                e.avoid_nodes = dec.strings(n, &ef.path_of("avoidNodes"));
            }
            run.expect = Some(Box::new(e));
        }
    }
    run
}

fn decision_kind(dec: &mut Decoder, node: &Node, path: &str) -> Option<String> {
    dec.enumeration(node, path, &DECISION_KINDS, |s| {
        DECISION_KINDS.contains(&s).then(|| s.to_string())
    })
}

/// Checks that need no policy: the job's id is usable in a pod name, and `expect.rule`
/// is written `policy/index` or `policy/default`.
pub fn validate_failure_history(history: &FailureHistory) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if history.runs.is_empty() {
        out.push(Diagnostic::error(
            "invalid-value",
            "runs",
            "a history needs at least one run",
        ));
    }
    for (i, run) in history.runs.iter().enumerate() {
        if let Some(rule) = run.expect.as_ref().and_then(|e| e.rule.as_deref()) {
            let ok = rule
                .split_once('/')
                .is_some_and(|(p, r)| !p.is_empty() && (r == "default" || r.parse::<usize>().is_ok()));
            if !ok {
                out.push(Diagnostic::error(
                    "invalid-value",
                    format!("runs[{i}].expect.rule"),
                    format!(
                        "invalid rule {}, expected `policy/index` or `policy/default` such as `infra/0`",
                        quote(rule)
                    ),
                ));
            }
        }
    }
    out
}

/// The document as JSON (one line of `retryctl history`'s JSON Lines), in the field order of
/// docs/simulate.md, leaving out what is unset so `decode_failure_history` reads back the same value.
/// An unnamed container is written without `name`. Memory is written in bytes.
pub fn failure_history_json(h: &FailureHistory) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let mut job = Map::new();
    if !h.job.id.is_empty() {
        job.insert("id".into(), json!(h.job.id));
    }
    if let Some(q) = &h.job.queue {
        job.insert("queue".into(), json!(q));
    }
    if let Some(s) = &h.job.job_set {
        job.insert("jobSet".into(), json!(s));
    }
    if !h.job.annotations.is_empty() {
        job.insert("annotations".into(), json!(h.job.annotations));
    }
    if let Some(g) = h.job.termination_grace_period {
        job.insert("terminationGracePeriod".into(), json!(g.to_string()));
    }
    if let Some(m) = h.job.memory {
        // Plain bytes, exactly (a fraction of a byte included): `{m:.0}` would round it.
        job.insert("memory".into(), json!(format!("{m}")));
    }
    if let Some(t) = h.job.submitted_at {
        job.insert("submittedAt".into(), json!(t.to_string()));
    }
    if let Some(c) = h.job.gang_cardinality {
        job.insert("gang".into(), json!({ "cardinality": c }));
    }
    if let Some(r) = &h.job.resources {
        let mut m = Map::new();
        if let Some(c) = r.cpu_milli {
            m.insert("cpu".into(), json!(Resources::milli_text(c)));
        }
        if let Some(b) = r.memory {
            m.insert("memory".into(), json!(format!("{b}")));
        }
        if let Some(g) = r.gpu_milli {
            m.insert("gpu".into(), json!(Resources::milli_text(g)));
        }
        job.insert("resources".into(), Value::Object(m));
    }
    if let Some(e) = h.job.state {
        job.insert("state".into(), json!(e.as_str()));
    }
    let runs: Vec<Value> = h
        .runs
        .iter()
        .map(|r| {
            let mut m = Map::new();
            if let Some(n) = &r.node {
                m.insert("node".into(), json!(n));
            }
            if let Some(p) = &r.pool {
                m.insert("pool".into(), json!(p));
            }
            match r.started_at {
                Some(StartedAt::Offset(d)) => {
                    m.insert("startedAt".into(), json!(d.to_string()));
                }
                Some(StartedAt::Absolute(t)) => {
                    m.insert("startedAt".into(), json!(t.to_string()));
                }
                None if r.queued_for.0 != 0 => {
                    m.insert("queuedFor".into(), json!(r.queued_for.to_string()));
                }
                None => {}
            }
            if r.run_for.0 != 0 {
                m.insert("runFor".into(), json!(r.run_for.to_string()));
            }
            if !r.conditions.is_empty() {
                let c: Vec<&str> = r.conditions.iter().map(|c| c.as_str()).collect();
                m.insert("conditions".into(), json!(c));
            }
            if let Some(d) = r.termination_confirmed_after {
                m.insert("terminationConfirmedAfter".into(), json!(d.to_string()));
            }
            if !r.containers.is_empty() {
                let cs: Vec<Value> = r
                    .containers
                    .iter()
                    .map(|c| {
                        let mut cm = Map::new();
                        if let Some(n) = c.name() {
                            cm.insert("name".into(), json!(n));
                        }
                        if c.init {
                            cm.insert("init".into(), json!(true));
                        }
                        cm.insert("exitCode".into(), json!(c.exit_code));
                        if let Some(x) = &c.reason {
                            cm.insert("reason".into(), json!(x));
                        }
                        if let Some(x) = &c.message {
                            cm.insert("message".into(), json!(x));
                        }
                        Value::Object(cm)
                    })
                    .collect();
                m.insert("containers".into(), Value::Array(cs));
            }
            if let Some(c) = &r.category {
                m.insert("category".into(), json!(c));
            }
            if let Some(c) = &r.subcategory {
                m.insert("subcategory".into(), json!(c));
            }
            if r.outcome != Outcome::Failed {
                m.insert("outcome".into(), json!(r.outcome.as_str()));
            }
            if let Some(g) = r.global_max_retries {
                m.insert("globalMaxRetries".into(), json!(g));
            }
            if let Some(p) = r.executor_path {
                m.insert("executorPath".into(), json!(p.as_str()));
            }
            if let Some(e) = &r.pod_error {
                m.insert("podError".into(), json!(e));
            }
            if !r.events.is_empty() {
                let es: Vec<Value> = r
                    .events
                    .iter()
                    .map(|e| {
                        let mut em = Map::new();
                        for (key, text) in [("type", &e.event_type), ("reason", &e.reason), ("message", &e.message)] {
                            if !text.is_empty() {
                                em.insert(key.into(), json!(text));
                            }
                        }
                        Value::Object(em)
                    })
                    .collect();
                m.insert("events".into(), Value::Array(es));
            }
            Value::Object(m)
        })
        .collect();
    let mut top = Map::new();
    top.insert("apiVersion".into(), json!("armadaproject.io/v1"));
    top.insert("kind".into(), json!("FailureHistory"));
    top.insert("job".into(), Value::Object(job));
    top.insert("runs".into(), Value::Array(runs));
    Value::Object(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::document::parse_documents;
    use crate::model::{Kind, Resource};

    fn decode(text: &str) -> (Option<FailureHistory>, Vec<String>) {
        let parsed = parse_documents(text, Some(&[Kind::FailureHistory]));
        let doc = parsed.documents.into_iter().next().unwrap();
        let errors = doc
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| {
                format!(
                    "{}:{} {}: {}",
                    d.pos.map_or(0, |p| p.line),
                    d.pos.map_or(0, |p| p.column),
                    d.path,
                    d.message
                )
            })
            .collect();
        let h = match doc.resource {
            Some(Resource::FailureHistory(h)) => Some(*h),
            _ => None,
        };
        (h, errors)
    }

    #[test]
    fn decodes_the_spec_example() {
        let text = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob:\n  id: job-1\n  queue: ml-queue\n  annotations: {armadaproject.io/retry-policy: extra-retry}\n  terminationGracePeriod: 30s\n  memory: 8Gi\n  submittedAt: 2026-01-01T00:00:00Z\nruns:\n  - node: node-a\n    queuedFor: 5m\n    runFor: 2h\n    conditions: [Preempted]\n    terminationConfirmedAfter: 5s\n    expect: {action: Retry, rule: infra/0}\n  - node: node-b\n    containers:\n      - {name: main, exitCode: 137, reason: OOMKilled}\n    expect: {action: Retry, delay: 0s}\n  - outcome: succeeded\nexpect: {final: Succeeded, retries: 3}\n";
        let (h, errors) = decode(text);
        assert_eq!(errors, Vec::<String>::new());
        let h = h.unwrap();
        assert_eq!(h.job.id, "job-1");
        assert_eq!(h.job.memory, Some(8.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(h.job.submitted_at.unwrap().to_string(), "2026-01-01T00:00:00Z");
        assert_eq!(h.runs.len(), 3);
        assert_eq!(h.runs[0].conditions, vec![Condition::Preempted]);
        assert_eq!(h.runs[1].containers[0].exit_code, 137);
        assert_eq!(h.runs[2].outcome, Outcome::Succeeded);
        assert_eq!(h.expect.unwrap().final_state, Some(Final::Succeeded));
    }

    #[test]
    fn unknown_fields_and_bad_values_are_reported_with_positions() {
        let text = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j}\nruns:\n  - nodee: a\n    conditions: [OOMKilled, Preemptd]\n    outcome: success\n";
        let (_, errors) = decode(text);
        assert_eq!(
            errors,
            vec![
                "5:5 runs[0].nodee: unknown field `nodee`, did you mean `node`?".to_string(),
                "6:18 runs[0].conditions[0]: `OOMKilled` is a container reason, not a pod condition; write it as `containers: [{name: main, reason: OOMKilled, exitCode: 137}]`".to_string(),
                "6:29 runs[0].conditions[1]: unknown value `Preemptd`, expected one of `Evicted`, `Preempted`, `DeadlineExceeded`, `Unschedulable`; did you mean `Preempted`?".to_string(),
                "7:14 runs[0].outcome: unknown value `success`, expected one of `failed`, `succeeded`, `leaseReturned`, `cancelled`".to_string(),
            ]
        );
    }

    #[test]
    fn pod_errors_and_events_decode_strictly_and_round_trip() {
        let text = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\nruns:\n  - podError: 'Failed to pull image: no match for platform in manifest'\n    events:\n      - {type: Warning, reason: UnexpectedAdmissionError, message: Pod Allocate failed}\n      - {type: Normal}\n";
        let (h, errors) = decode(text);
        assert_eq!(errors, Vec::<String>::new());
        let h = h.unwrap();
        let run = &h.runs[0];
        assert_eq!(
            run.pod_error.as_deref(),
            Some("Failed to pull image: no match for platform in manifest")
        );
        assert_eq!(
            run.events[0],
            PodEvent {
                event_type: "Warning".into(),
                reason: "UnexpectedAdmissionError".into(),
                message: "Pod Allocate failed".into(),
            }
        );
        assert_eq!(run.events[1].reason, "");
        // The JSON form reads back as the same history.
        let json = failure_history_json(&h).to_string();
        let (back, errors) = decode(&json);
        assert_eq!(errors, Vec::<String>::new());
        assert_eq!(back.unwrap(), h);
        // Unknown keys inside an event are errors, as elsewhere in the history.
        let bad = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\nruns:\n  - events:\n      - {type: Warning, reasn: X}\n";
        let (_, errors) = decode(bad);
        assert_eq!(
            errors,
            vec!["5:25 runs[0].events[0].reasn: unknown field `reasn`, did you mean `reason`?".to_string()]
        );
    }

    /// `job.state` decodes strictly and round-trips; a history without it has none.
    #[test]
    fn the_jobs_end_decodes_strictly_and_round_trips() {
        let text = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j, state: failed}\nruns: [{}]\n";
        let (h, errors) = decode(text);
        assert_eq!(errors, Vec::<String>::new());
        let h = h.unwrap();
        assert_eq!(h.job.state, Some(JobEnd::Failed));
        let json = failure_history_json(&h);
        assert_eq!(json["job"].to_string(), r#"{"id":"j","state":"failed"}"#);
        let (back, _) = decode(&json.to_string());
        assert_eq!(back.unwrap(), h);
        let (h, _) = decode("apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j}\nruns: [{}]\n");
        assert_eq!(h.unwrap().job.state, None);
        let (_, errors) =
            decode("apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {state: Pending}\nruns: [{}]\n");
        assert_eq!(
            errors,
            ["3:14 job.state: unknown value `Pending`, expected one of `succeeded`, `failed`, `cancelled`"]
        );
    }

    /// A run's `pool` decodes, round-trips through the JSON `history` writes, and is absent
    /// (the pool `default`) when left out.
    #[test]
    fn a_runs_pool_decodes_and_round_trips() {
        let text =
            "apiVersion: armadaproject.io/v1\nkind: FailureHistory\nruns:\n  - {pool: gpu-a100, runFor: 1m}\n  - {}\n";
        let (h, errors) = decode(text);
        assert_eq!(errors, Vec::<String>::new());
        let h = h.unwrap();
        assert_eq!(h.runs[0].pool.as_deref(), Some("gpu-a100"));
        assert_eq!(h.runs[1].pool, None);
        let json = failure_history_json(&h);
        assert_eq!(json["runs"].to_string(), r#"[{"pool":"gpu-a100","runFor":"1m"},{}]"#);
        let (back, _) = decode(&json.to_string());
        assert_eq!(back.unwrap(), h);
        let (_, errors) = decode("apiVersion: armadaproject.io/v1\nkind: FailureHistory\nruns:\n  - {pools: a}\n");
        assert_eq!(
            errors,
            ["4:6 runs[0].pools: unknown field `pools`, did you mean `pool`?"]
        );
    }

    #[test]
    fn timestamps_round_trip() {
        for (input, out) in [
            ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
            ("2024-02-29T23:59:59.5+01:00", "2024-02-29T22:59:59.5Z"),
            ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),
        ] {
            assert_eq!(Timestamp::parse(input).unwrap().to_string(), out);
        }
        assert_eq!(Timestamp::parse("1970-01-01T00:00:01Z"), Some(Timestamp(1_000_000_000)));
        assert!(Timestamp::parse("2026-13-01T00:00:00Z").is_none());
        assert!(Timestamp::parse("yesterday").is_none());
    }

    /// A time of RFC 3339's shape that does not exist is refused with its reason, never
    /// carried into the next day, month or hour; the last instant of each field is read.
    #[test]
    fn a_time_that_does_not_exist_is_refused_with_its_reason() {
        let range = |r: &str| Err(TimeError::Range(r.to_string()));
        for (input, want) in [
            (
                "2026-02-30T00:00:00Z",
                range("day `30` does not exist in 2026-02 (28 days)"),
            ),
            (
                "2026-02-29T00:00:00Z",
                range("day `29` does not exist in 2026-02 (28 days)"),
            ),
            (
                "1900-02-29T00:00:00Z",
                range("day `29` does not exist in 1900-02 (28 days)"),
            ),
            (
                "2026-04-31T00:00:00Z",
                range("day `31` does not exist in 2026-04 (30 days)"),
            ),
            (
                "2026-01-00T00:00:00Z",
                range("day `00` does not exist in 2026-01 (31 days)"),
            ),
            ("2026-00-10T00:00:00Z", range("month `00` is out of range (01–12)")),
            ("2026-01-01T24:00:00Z", range("hour `24` is out of range (00–23)")),
            ("2026-01-01T00:60:00Z", range("minute `60` is out of range (00–59)")),
            (
                "2026-12-31T23:59:60Z",
                range("second `60` is out of range (00–59; a leap second is not read)"),
            ),
            (
                "2026-01-01T00:00:00+25:00",
                range("offset `+25:00` is out of range (hours 00–23, minutes 00–59)"),
            ),
            (
                "2026-01-01T00:00:00+99:99",
                range("offset `+99:99` is out of range (hours 00–23, minutes 00–59)"),
            ),
            (
                "2026-01-01T00:00:00-00:60",
                range("offset `-00:60` is out of range (hours 00–23, minutes 00–59)"),
            ),
            ("2026-01-01T00:00:00", Err(TimeError::Shape)),
            ("2026-01-01T00:00:00+0100", Err(TimeError::Shape)),
            // Past the 64 bits of nanoseconds: out of range, not a text of the wrong shape.
            ("2262-04-11T23:47:17Z", Err(TimeError::Beyond { later: true })),
            ("2262-04-11T23:47:16.000000001Z", Err(TimeError::Beyond { later: true })),
            ("2262-04-12T00:47:17+01:00", Err(TimeError::Beyond { later: true })),
            ("9999-12-31T23:59:59Z", Err(TimeError::Beyond { later: true })),
            ("1677-09-21T00:12:43Z", Err(TimeError::Beyond { later: false })),
            ("0000-01-01T00:00:00Z", Err(TimeError::Beyond { later: false })),
        ] {
            assert_eq!(Timestamp::read(input), want, "{input}");
        }
        for (input, out) in [
            ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00Z"),
            ("2000-02-29T00:00:00Z", "2000-02-29T00:00:00Z"),
            ("2026-12-31T23:59:59Z", "2026-12-31T23:59:59Z"),
            ("2026-01-01T00:00:00+23:59", "2025-12-31T00:01:00Z"),
            ("2026-01-01T00:00:00-23:59", "2026-01-01T23:59:00Z"),
            // The first and last whole seconds of the range are read.
            ("2262-04-11T23:47:16Z", "2262-04-11T23:47:16Z"),
            ("2262-04-12T00:47:16+01:00", "2262-04-11T23:47:16Z"),
            ("1677-09-21T00:12:44Z", "1677-09-21T00:12:44Z"),
        ] {
            assert_eq!(
                Timestamp::read(input).map(|t| t.to_string()),
                Ok(out.to_string()),
                "{input}"
            );
        }
    }

    /// The names are indexed by the variants' order: each variant reads back as itself.
    #[test]
    fn outcome_and_final_names_follow_the_variants() {
        for (i, o) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(o as usize, i);
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
        for (i, f) in Final::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, i);
            assert_eq!(Final::parse(f.as_str()), Some(f));
        }
        for (i, e) in JobEnd::ALL.into_iter().enumerate() {
            assert_eq!(e as usize, i);
            assert_eq!(JobEnd::parse(e.as_str()), Some(e));
        }
        assert_eq!(Outcome::LeaseReturned.as_str(), "leaseReturned");
        assert_eq!(Final::Pending.as_str(), "Pending");
    }
}
