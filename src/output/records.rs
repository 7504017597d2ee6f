//! The records of `simulate -o json|yaml|jsonl` (the README's `## simulate`,
//! docs/estimates.md): a job, a changed job, the totals, and the sink that streams them.
//!
//! Owns: the record field names, which are stable (add fields, never rename); the records as
//! serde types written straight to the writer ([`JobOut`], [`RunOut`], [`ChangeOut`],
//! [`EstimateOut`]); the totals as JSON values (the `*_json` builders, which `tune` and
//! `suggest` reuse so that their numbers print as `simulate --baseline` prints them); and
//! [`RecordSink`], which streams the records one job at a time in constant memory. Must
//! not: count (every number comes from the replay's totals), put numbers into words (JSON
//! Lines' totals on stderr are the table's), or read files.
//!
//! Times are strings: RFC 3339 when the history gives `job.submittedAt`, else `T+<duration>`
//! since submission; durations are Go-style (`1m30s`); memory is a Kubernetes quantity.

use std::fmt;
use std::io::{self, Write};

use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};

use crate::engine::job_report::{JobInstant, JobReport, JobStatus, RuleLabel, RunRecord};
use crate::engine::DecisionKind;
use crate::engine::EngineKind;
use crate::model::failure_history::{Final, Timestamp};
use crate::model::quantity::format_bytes;
use crate::model::GoDuration;
use crate::replay::backtest::Backtest;
use crate::replay::categorize::CategoryCounts;
use crate::replay::compare::hours;
use crate::replay::compare::{Comparison, Transition};
use crate::replay::estimate::{Basis, Estimate, Sums};
use crate::replay::explained::Explained;
use crate::replay::sink::{Change, Estimates, Message, Needs, RenderJob, Sink, Totals};
use crate::replay::source::Progress;
use crate::replay::summary::Summary;

use super::mode::{Baseline, Mode};
use super::stderr::Stderr;
use super::table::{write_comparison, write_estimate_line, write_summary};
use super::words::ESTIMATE_METHOD;

/// A field written with its `Display` straight into the output (serde_json's `collect_str`
/// escapes as it writes): no `String` per time, duration or label of every run. Other
/// formats (`to_value`, YAML) collect it into a string, as the field was before.
struct Shown<T>(T);

impl<T: fmt::Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// One run as a record (docs/engines.md plus the run's own facts). Field order is the output
/// order; a succeeded run has `null` decision fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOut<'a> {
    run: usize,
    pod_name: &'a str,
    node: Option<&'a str>,
    started_at: Shown<JobInstant>,
    ended_at: Shown<JobInstant>,
    outcome: &'static str,
    failure: &'a str,
    /// With a categorizer only: the category the engine saw (`null`: none), and the
    /// recorded one where it differs (`null`: none was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subcategory: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded_category: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    recorded_subcategory: Option<Option<&'a str>>,
    action: Option<&'static str>,
    decision: Option<&'static str>,
    policy: Option<&'a str>,
    rule_index: Option<usize>,
    rule: Option<Shown<RuleLabel<'a>>>,
    signal: Option<&'a str>,
    counter: Option<u32>,
    limit: Option<u32>,
    total_retries: Option<u32>,
    global_max_retries: Option<u32>,
    delay: Option<Shown<GoDuration>>,
    delay_parts: Option<PartsOut>,
    retry_after: Option<Shown<JobInstant>>,
    avoid_nodes: &'a [String],
    memory: Option<String>,
    next_pod_name: Option<&'a str>,
    reason: &'a str,
}

#[derive(Serialize)]
pub struct PartsOut {
    backoff: Shown<GoDuration>,
    jitter: Shown<GoDuration>,
    grace: Shown<GoDuration>,
}

pub fn run_record<'a>(report: &'a JobReport, run: &'a RunRecord) -> RunOut<'a> {
    let t = |offset: u64| {
        Shown(JobInstant {
            offset,
            submitted: report.submitted_at,
        })
    };
    let d = run.decision.as_ref();
    let cats = run.categories.as_deref();
    let recorded = cats.and_then(|c| c.recorded.as_ref());
    RunOut {
        run: run.index,
        pod_name: &run.pod_name,
        node: run.node.as_deref(),
        started_at: t(run.started_at),
        ended_at: t(run.ended_at),
        outcome: run.outcome.as_str(),
        failure: &run.failure,
        category: cats.map(|c| c.category.as_deref()),
        subcategory: cats.map(|c| c.subcategory.as_deref()),
        recorded_category: recorded.map(|r| r.0.as_deref()),
        recorded_subcategory: recorded.map(|r| r.1.as_deref()),
        action: d.map(|d| d.action().as_str()),
        decision: d.map(|d| d.kind.as_str()),
        policy: d.and_then(|d| report.policies.get(d.policy?)).map(String::as_str),
        rule_index: d.and_then(|d| match d.rule {
            Some(crate::engine::RuleRef::Index(i)) => Some(i),
            _ => None,
        }),
        rule: d.and_then(|d| RuleLabel::of(&report.policies, d)).map(Shown),
        signal: d.and_then(|d| d.signal.as_deref()),
        counter: d.and_then(|d| d.counter),
        limit: d.and_then(|d| d.limit),
        total_retries: d.map(|d| d.total_retries),
        global_max_retries: d.map(|d| d.global_max_retries),
        delay: d.map(|d| Shown(d.delay)),
        delay_parts: d.map(|d| PartsOut {
            backoff: Shown(d.delay_parts.backoff),
            jitter: Shown(d.delay_parts.jitter),
            grace: Shown(d.delay_parts.grace),
        }),
        retry_after: d.and_then(|d| d.retry_after).map(t),
        avoid_nodes: d.map_or(&[], |d| d.avoid_nodes.as_slice()),
        memory: d.and_then(|d| d.memory).map(format_bytes),
        next_pod_name: d.and_then(|d| d.next_pod_name.as_deref()),
        reason: &run.reason,
    }
}

/// A job's outcome as a record: `final`, `run`, `decision`, `retryAfter`, `text`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusOut {
    #[serde(rename = "final")]
    final_state: &'static str,
    run: Option<usize>,
    decision: Option<&'static str>,
    retry_after: Option<Shown<JobInstant>>,
    text: String,
}

fn status_record(report: &JobReport) -> StatusOut {
    let (run, decision, retry_after) = match &report.status {
        JobStatus::Succeeded { run } | JobStatus::Cancelled { run } => (Some(*run), None, None),
        JobStatus::Failed { run, kind, .. } => (Some(*run), Some(kind.as_str()), None),
        JobStatus::Pending { retry_after } => (
            None,
            None,
            Some(Shown(JobInstant {
                offset: *retry_after,
                submitted: report.submitted_at,
            })),
        ),
    };
    StatusOut {
        final_state: report.status.final_state().as_str(),
        run,
        decision,
        retry_after,
        text: report.outcome_text(),
    }
}

/// One job as a record, serialized straight to the writer (no intermediate `Value`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobOut<'a> {
    job: &'a str,
    queue: Option<&'a str>,
    policies: &'a [String],
    /// Only when not the design engine (keeps design output as it was).
    #[serde(skip_serializing_if = "Option::is_none")]
    engine: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    ignored_policies: &'a [String],
    enabled: bool,
    global_max_retries: u32,
    submitted_at: Option<Shown<Timestamp>>,
    runs: Vec<RunOut<'a>>,
    outcome: StatusOut,
    retries: u32,
    total_delay: Shown<GoDuration>,
    memory: Option<String>,
    expectation_failures: &'a [String],
    contradictions: &'a [String],
}

pub fn job_record(report: &JobReport) -> JobOut<'_> {
    JobOut {
        job: &report.job_id,
        queue: report.queue.as_deref(),
        policies: &report.policies,
        engine: (report.engine != EngineKind::Design).then(|| report.engine.as_str()),
        ignored_policies: &report.ignored_policies,
        enabled: report.enabled,
        global_max_retries: report.global_max_retries,
        submitted_at: report.submitted_at.map(Shown),
        runs: report.runs.iter().map(|r| run_record(report, r)).collect(),
        outcome: status_record(report),
        retries: report.retries,
        total_delay: Shown(report.total_delay),
        memory: report.memory.map(format_bytes),
        expectation_failures: &report.expectation_failures,
        contradictions: &report.contradictions,
    }
}

/// One job as a JSON value.
pub fn job_json(report: &JobReport) -> Value {
    serde_json::to_value(job_record(report)).unwrap_or(Value::Null)
}

/// A job's record as `-o json` writes it (a worker renders it, [`Needs::render`]).
pub fn render_json(report: &JobReport, buf: &mut Vec<u8>) {
    let _ = serde_json::to_writer(&mut *buf, &job_record(report));
}

/// A job's record as one line of `-o jsonl`.
pub fn render_jsonl(report: &JobReport, buf: &mut Vec<u8>) {
    render_json(report, buf);
    buf.push(b'\n');
}

/// A job's record as an item of `-o yaml`'s `jobs:` list.
pub fn render_yaml(report: &JobReport, buf: &mut Vec<u8>) {
    buf.extend_from_slice(yaml_item(&job_record(report), 0).as_bytes());
}

/// YAML of a value as a one-item list, indented by `indent` spaces (for streaming `jobs:`).
pub fn yaml_item<T: Serialize>(value: &T, indent: usize) -> String {
    let text = serde_yaml::to_string(&vec![value]).unwrap_or_default();
    let pad = " ".repeat(indent);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

pub fn summary_json(s: &Summary, e: &Estimates) -> Value {
    let decisions: Map<String, Value> = DecisionKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), json!(s.decision_count(*k))))
        .collect();
    let mut v = json!({
        "jobs": s.jobs,
        "runs": s.runs,
        "runsRecorded": s.recorded.runs,
        "outcomes": {
            "Succeeded": s.succeeded,
            "Failed": s.failed,
            "Cancelled": s.cancelled,
            "Pending": s.pending,
        },
        "retries": s.retries,
        "retriesByRule": s.retries_by_rule(),
        "failuresByRule": s.failures_by_rule(),
        "decisions": decisions,
        "totalDelay": s.total_delay.to_string(),
        "compute": {
            "recorded": s.recorded.compute.to_string(),
            "replayed": s.compute.to_string(),
            "expected": e.asked.expected_compute,
            "gpuHours": {"recorded": hours(s.recorded.gpu), "replayed": hours(s.gpu), "expected": e.asked.gpu_hours},
            "cpuHours": {"recorded": hours(s.recorded.cpu), "replayed": hours(s.cpu), "expected": e.asked.cpu_hours},
            "withoutResources": s.without_resources,
        },
        "estimate": {
            "pending": s.pending,
            "expectedToSucceed": e.asked.expected,
            "low": e.asked.low,
            "high": e.asked.high,
            "withoutEstimate": e.asked.without_estimate,
            "expectedCompute": e.asked.expected_compute,
            "method": ESTIMATE_METHOD,
        },
        "expectationFailedJobs": s.expectation_failed_jobs,
        "expectationFailedJobIds": s.expectation_failed_ids,
        "contradictedJobs": s.contradicted_jobs,
        "errors": s.errors,
    });
    if let (Some(b), Value::Object(m)) = (&e.backtest, &mut v) {
        m.insert("backtest".into(), backtest_json(b));
    }
    if let (Some(i), Value::Object(m)) = (incidents_json(e.incidents.as_ref()), &mut v) {
        m.insert("incidents".into(), i);
    }
    if let (Some(c), Value::Object(m)) = (&s.categories, &mut v) {
        m.extend(categories_json(c));
    }
    if let Value::Object(m) = &mut v {
        contention_json(m, s.contention.as_deref(), s.contention_sharded);
    }
    v
}

/// A burst's or a surge's entry in `bursts` or `surges` (docs/reference/suggest.md
/// "Incidents"): its window, and a burst's job set or a surge's busiest hour's jobs and the
/// count expected there. suggest's adds what it learned from it.
pub enum Busy {
    Burst(Map<String, Value>),
    Surge(Map<String, Value>),
}

/// [`Busy`] of the window `w` of kind `kind`; `None` for an incident.
pub fn busy_entry(w: &crate::replay::incidents::Window, kind: &crate::replay::incidents::Kind) -> Option<Busy> {
    use crate::replay::incidents::Kind;
    let mut m = Map::new();
    m.insert("from".into(), json!(w.from.to_string()));
    m.insert("to".into(), json!(w.to.to_string()));
    match kind {
        Kind::Burst { queue, job_set, .. } => {
            m.insert("queue".into(), json!(queue));
            m.insert("jobSet".into(), json!(job_set));
            Some(Busy::Burst(m))
        }
        Kind::Surge { jobs, expected } => {
            m.insert("jobs".into(), json!(jobs));
            m.insert("expected".into(), json!((expected * 100.0).round() / 100.0));
            Some(Busy::Surge(m))
        }
        Kind::Incident => None,
    }
}

/// The incident windows a replay found or was given, and what they left out of the estimates
/// (docs/reference/suggest.md "Incidents"), with the bursts and surges found and learned from
/// (as suggest's `bursts` and `surges`); `None` without a window of any kind.
pub fn incidents_json(s: Option<&crate::replay::incidents::SeenIncidents>) -> Option<Value> {
    let s = s.filter(|s| !s.windows.is_empty() || !s.busy.is_empty())?;
    let windows: Vec<Value> = s
        .windows
        .iter()
        .map(|w| json!({"from": w.from.to_string(), "to": w.to.to_string(), "detected": w.detected, "given": w.given}))
        .collect();
    let (mut bursts, mut surges) = (Vec::new(), Vec::new());
    for (w, kind) in &s.busy {
        match busy_entry(w, kind) {
            Some(Busy::Burst(m)) => bursts.push(Value::Object(m)),
            Some(Busy::Surge(m)) => surges.push(Value::Object(m)),
            None => {}
        }
    }
    Some(json!({
        "windows": windows,
        "failedRuns": s.failed_runs,
        "inWindows": s.in_windows,
        "trialsLeftOut": s.trials_left_out,
        "bursts": bursts,
        "surges": surges,
    }))
}

/// docs/estimates.md's `backtest` object, figures unrounded.
pub fn backtest_json(b: &Backtest) -> Value {
    let bins: Vec<Value> = b
        .calibration
        .iter()
        .map(|x| {
            json!({
                "from": x.from,
                "to": x.to,
                "trials": x.trials,
                "predicted": x.predicted,
                "observed": x.observed,
            })
        })
        .collect();
    json!({
        "at": b.at.to_string(),
        "trainTrials": b.train_trials,
        "testTrials": b.test_trials,
        "brier": b.brier,
        "brierPooled": b.brier_pooled,
        "skill": b.skill,
        "calibration": bins,
        "classesChecked": b.classes_checked,
        "classesCovered": b.classes_covered,
        "withinPoints": b.within_points,
    })
}

/// A side's `{categoryChanges, collisions}`.
pub fn categories_json(c: &CategoryCounts) -> Map<String, Value> {
    let changes: Vec<Value> = c
        .changes()
        .into_iter()
        .map(|(from, to, runs)| json!({"from": from, "to": to, "runs": runs}))
        .collect();
    let mut m = Map::new();
    m.insert("categoryChanges".into(), Value::Array(changes));
    m.insert("collisions".into(), json!(c.collisions));
    m
}

/// One side of a changed job; a Pending side carries its `estimate` (`null`: no trials at
/// all).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SideOut<'a> {
    #[serde(rename = "final")]
    final_state: &'static str,
    retries: u32,
    delay: Shown<GoDuration>,
    runs: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimate: Option<Option<EstimateOut<'a>>>,
}

fn side_record<'a>(s: &crate::replay::compare::Side, estimate: Option<&'a Estimate>) -> SideOut<'a> {
    SideOut {
        final_state: s.final_state.as_str(),
        retries: s.retries,
        delay: Shown(s.delay),
        runs: s.runs,
        estimate: (s.final_state == Final::Pending).then(|| estimate.map(estimate_record)),
    }
}

/// docs/estimates.md's `estimate` object, figures unrounded.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EstimateOut<'a> {
    p_succeeded: f64,
    low: f64,
    high: f64,
    p_next_run: f64,
    runs_left: u32,
    basis: Shown<&'a Basis>,
    trials: u64,
    expected_compute: f64,
}

pub fn estimate_record(e: &Estimate) -> EstimateOut<'_> {
    EstimateOut {
        p_succeeded: e.p_succeeded,
        low: e.low,
        high: e.high,
        p_next_run: e.p_next_run,
        runs_left: e.runs_left,
        basis: Shown(&e.basis),
        trials: e.trials,
        expected_compute: e.expected_compute,
    }
}

/// One changed job as a record (`comparison.changedJobs[]`), serialized straight to the
/// writer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeOut<'a> {
    job: &'a str,
    baseline: SideOut<'a>,
    candidate: SideOut<'a>,
    transition: Option<&'static str>,
    compute_added: Shown<GoDuration>,
    compute_removed: Shown<GoDuration>,
}

/// A changed job's JSON record, as [`RecordSink`] prints it (a partial keeps it:
/// [`crate::replay::sink::RenderChange`]).
pub fn render_change(c: &Change<'_>, buf: &mut Vec<u8>) {
    // A record is numbers and strings: it always serializes.
    let _ = serde_json::to_writer(buf, &change_record(c));
}

pub fn change_record<'a>(c: &Change<'a>) -> ChangeOut<'a> {
    let d = c.diff;
    ChangeOut {
        job: &d.job,
        baseline: side_record(&d.baseline, c.baseline_estimate),
        candidate: side_record(&d.candidate, c.candidate_estimate),
        transition: d.transition().map(Transition::name),
        compute_added: Shown(d.compute_added),
        compute_removed: Shown(d.compute_removed),
    }
}

/// The comparison totals as data.
pub fn comparison_totals_json(c: &Comparison, e: &Estimates) -> Map<String, Value> {
    let v = json!({
        "jobs": c.jobs,
        "changed": c.changed,
        "unchanged": c.jobs - c.changed,
        "transitions": transitions_json(c, true),
        "retries": {"added": c.retries_added, "removed": c.retries_removed},
        "delay": {"added": c.delay_added.to_string(), "removed": c.delay_removed.to_string()},
        "compute": compute_json(c, &e.pending),
        "errors": c.errors,
        "estimate": estimate_json(&e.asked, &e.pending, true),
    });
    let mut m = match v {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if let Some(b) = &e.backtest {
        m.insert("backtest".into(), backtest_json(b));
    }
    if let Some(i) = incidents_json(e.incidents.as_ref()) {
        m.insert("incidents".into(), i);
    }
    if let Some(e) = &c.explained {
        m.insert("explained".into(), explained_json(e));
    }
    if let Some(s) = &c.categories {
        m.insert(
            "categories".into(),
            json!({"baseline": categories_json(&s.baseline), "candidate": categories_json(&s.candidate)}),
        );
    }
    contention_json(&mut m, c.contention.as_deref(), c.contention_sharded);
    m
}

/// Whether the baseline explains the record (docs/what-if.md "Does the baseline explain the
/// record?"): the jobs compared, those that contradict it and the first of them, and the words.
pub fn explained_json(e: &Explained) -> Value {
    json!({
        "jobs": e.jobs,
        "explained": e.explained(),
        "contradicted": e.contradicted,
        "firstContradicting": e.ids(),
        "words": e.words(|id| id.to_string()),
    })
}

/// A comparison's `transitions`: its changed jobs by group (`rescued`, …, `retriesOnly`);
/// with `by_state`, then by pair of final states (`byState`: `Failed → Succeeded`, …).
pub fn transitions_json(c: &Comparison, by_state: bool) -> Value {
    let mut v = json!({
        "rescued": c.rescued,
        "lost": c.lost,
        "toPending": c.to_pending,
        "other": c.other,
        "retriesOnly": c.retries_only,
    });
    if let (true, Value::Object(m)) = (by_state, &mut v) {
        let states: Map<String, Value> = c
            .transitions()
            .map(|(f, t, n)| (format!("{} → {}", f.as_str(), t.as_str()), json!(n)))
            .collect();
        m.insert("byState".into(), Value::Object(states));
    }
    v
}

/// docs/estimates.md's `compute` of a comparison: the run time added and removed (durations), the
/// expected run time of the candidate's `pending` jobs (seconds), the record's run time and
/// what each side replays of it (durations), and the hours of each.
pub fn compute_json(c: &Comparison, pending: &Sums) -> Value {
    let r = &c.recorded;
    json!({
        "added": c.compute_added.to_string(),
        "removed": c.compute_removed.to_string(),
        "expected": pending.expected_compute,
        "recorded": r.compute.to_string(),
        "replayed": {
            "baseline": c.baseline_compute.to_string(),
            "candidate": c.candidate_compute.to_string(),
        },
        "gpuHours": {
            "added": hours(c.gpu_added),
            "removed": hours(c.gpu_removed),
            "expected": pending.gpu_hours,
            "recorded": hours(r.gpu),
        },
        "cpuHours": {
            "added": hours(c.cpu_added),
            "removed": hours(c.cpu_removed),
            "expected": pending.cpu_hours,
            "recorded": hours(r.cpu),
        },
        "withoutResources": c.without_resources,
    })
}

/// docs/estimates.md's `comparison.estimate`: the sums over the Failed → Pending jobs (`asked`) and
/// the expected compute of every Pending one; `method`: the words, for a format that names
/// them here.
pub fn estimate_json(asked: &Sums, pending: &Sums, method: bool) -> Value {
    let mut v = json!({
        "expectedRescued": asked.expected,
        "low": asked.low,
        "high": asked.high,
        "withoutEstimate": asked.without_estimate,
        "expectedCompute": pending.expected_compute,
    });
    if let (true, Value::Object(m)) = (method, &mut v) {
        m.insert("method".into(), json!(ESTIMATE_METHOD));
    }
    v
}

/// The record formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Records {
    /// One JSON document, streamed.
    Json,
    /// One YAML document, streamed.
    Yaml,
    /// One record per line; the totals, in words, on stderr.
    Jsonl,
}

/// `-o json|yaml|jsonl`: the records of [`job_record`] and [`change_record`], then the totals.
pub struct RecordSink<'a> {
    format: Records,
    mode: Mode,
    out: &'a mut dyn Write,
    stderr: Stderr<'a>,
    written: u64,
    /// A record carried an estimate: the totals name the method.
    estimated: bool,
    /// A changed job's JSON record, reused ([`render_change`]).
    record: Vec<u8>,
}

impl<'a> RecordSink<'a> {
    pub fn new(format: Records, mode: Mode, out: &'a mut dyn Write, stderr: Stderr<'a>) -> Self {
        RecordSink {
            format,
            mode,
            out,
            stderr,
            written: 0,
            estimated: false,
            record: Vec::new(),
        }
    }
}

impl Sink for RecordSink<'_> {
    fn needs(&self) -> Needs {
        let render: RenderJob = match self.format {
            Records::Json => render_json,
            Records::Yaml => render_yaml,
            Records::Jsonl => render_jsonl,
        };
        Needs {
            reports: true,
            render: Some(render),
            change_json: self.format != Records::Yaml,
            ..Needs::default()
        }
    }

    fn begin(&mut self) -> io::Result<()> {
        match (self.mode, self.format) {
            (Mode::Replay { .. }, Records::Json) => write!(self.out, "{{\"jobs\":["),
            (Mode::Replay { .. }, Records::Yaml) => writeln!(self.out, "jobs:"),
            (Mode::Compare { baseline, .. }, Records::Json) => {
                write!(self.out, "{{\"comparison\":{{")?;
                if baseline == Baseline::Cluster {
                    write!(self.out, "\"baselineFrom\":\"cluster\",")?;
                }
                write!(self.out, "\"changedJobs\":[")
            }
            (Mode::Compare { baseline, .. }, Records::Yaml) => {
                writeln!(self.out, "comparison:")?;
                if baseline == Baseline::Cluster {
                    writeln!(self.out, "  baselineFrom: cluster")?;
                }
                writeln!(self.out, "  changedJobs:")
            }
            (_, Records::Jsonl) => Ok(()),
        }
    }

    fn progress(&mut self, at: Progress) {
        self.stderr.progress(at);
    }

    fn job(&mut self, _: &JobReport, rendered: &[u8]) -> io::Result<()> {
        if self.format == Records::Json && self.written > 0 {
            write!(self.out, ",")?;
        }
        self.written += 1;
        self.out.write_all(rendered)
    }

    fn change_json(&mut self, record: &[u8]) -> io::Result<()> {
        match self.format {
            Records::Json if self.written > 0 => self.out.write_all(b",")?,
            Records::Yaml => return Err(io::Error::other("a YAML record is not JSON")),
            _ => {}
        }
        self.out.write_all(record)?;
        if self.format == Records::Jsonl {
            self.out.write_all(b"\n")?;
        }
        self.written += 1;
        Ok(())
    }

    fn change(&mut self, c: &Change<'_>) -> io::Result<()> {
        self.estimated |= c.estimate().is_some();
        if self.format == Records::Yaml {
            write!(self.out, "{}", yaml_item(&change_record(c), 2))?;
            self.written += 1;
            return Ok(());
        }
        // JSON: the record a partial keeps too, printed as a merge prints a partial's.
        let mut record = std::mem::take(&mut self.record);
        record.clear();
        render_change(c, &mut record);
        let written = self.change_json(&record);
        self.record = record;
        written
    }

    fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        self.stderr.message(m)
    }

    fn end(&mut self, totals: Totals<'_>) -> io::Result<()> {
        let style = self.stderr.style();
        let err = self.stderr.finish()?;
        let out = &mut *self.out;
        match (totals, self.format) {
            (
                Totals::Replay {
                    summary: s,
                    estimates: e,
                },
                Records::Json,
            ) => {
                write!(out, "],\"summary\":")?;
                serde_json::to_writer(&mut *out, &summary_json(s, e))?;
                writeln!(out, "}}")?;
            }
            (
                Totals::Replay {
                    summary: s,
                    estimates: e,
                },
                Records::Yaml,
            ) => {
                if self.written == 0 {
                    // `jobs:` alone would read as null; say empty.
                    writeln!(out, "  []")?;
                }
                let text = serde_yaml::to_string(&summary_json(s, e)).unwrap_or_default();
                writeln!(out, "summary:")?;
                for l in text.lines() {
                    writeln!(out, "  {l}")?;
                }
            }
            (
                Totals::Replay {
                    summary: s,
                    estimates: e,
                },
                Records::Jsonl,
            ) => write_summary(err, style, s, e)?,
            (
                Totals::Compare {
                    comparison: c,
                    estimates: e,
                    ..
                },
                Records::Json,
            ) => {
                write!(out, "]")?;
                for (k, v) in comparison_totals_json(c, e) {
                    write!(out, ",{}:", Value::String(k))?;
                    serde_json::to_writer(&mut *out, &v)?;
                }
                writeln!(out, "}}}}")?;
            }
            (
                Totals::Compare {
                    comparison: c,
                    estimates: e,
                    ..
                },
                Records::Yaml,
            ) => {
                if self.written == 0 {
                    writeln!(out, "    []")?;
                }
                let text = serde_yaml::to_string(&Value::Object(comparison_totals_json(c, e))).unwrap_or_default();
                for l in text.lines() {
                    writeln!(out, "  {l}")?;
                }
            }
            (
                Totals::Compare {
                    comparison: c,
                    estimates: e,
                    ..
                },
                Records::Jsonl,
            ) => {
                write_comparison(err, style, c)?;
                write_estimate_line(err, c, e, self.estimated)?;
            }
        }
        Ok(())
    }
}

/// `contention` (docs/contention.md) when computed; in a sharded run's answer, which the
/// default leaves it out of, `null` and `contentionNotComputed` saying why; else nothing.
pub fn contention_json<T: serde::Serialize>(m: &mut Map<String, Value>, c: Option<&T>, sharded: bool) {
    if let Some(c) = c {
        m.insert("contention".into(), json!(c));
    } else if sharded {
        m.insert("contention".into(), Value::Null);
        m.insert(
            "contentionNotComputed".into(),
            json!(crate::output::words::CONTENTION_SHARDED_REASON),
        );
    }
}
