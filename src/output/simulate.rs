//! Presentation of `simulate` results: the per-job table (borderless, kubectl-like), the
//! JSON/YAML/JSON Lines records and the bulk summary.
//!
//! Owns: how a [`JobReport`], a [`Summary`] and a [`Comparison`] look, the record field
//! names, which are stable (documented in the README section `## simulate`), and the
//! streaming sinks of the `table` and record formats ([`TableSink`], [`RecordSink`]: the
//! replay's [`Sink`]s, picked by [`sink`]) that write them one job at a time in constant
//! memory, with stderr messages capped ([`Stderr`], shared by every format's sink). Must
//! not: count (every number comes from the replay's totals), evaluate, read files or
//! decide exit codes.
//!
//! Times are strings: RFC 3339 when the history gives `job.submittedAt`, else `T+<duration>`
//! since submission; durations are Go-style (`1m30s`); memory is a Kubernetes quantity.

use std::fmt;
use std::io::{self, Write};

use indicatif::ProgressBar;
use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};
use tabled::builder::Builder;
use tabled::settings::{Padding, Style as TableStyle};

use crate::engine::job_report::plural;
use crate::engine::job_report::{
    format_instant, rule_ref_label, JobInstant, JobReport, JobStatus, RuleLabel, RunRecord,
};
use crate::engine::DecisionKind;
use crate::engine::EngineKind;
use crate::model::failure_history::{Final, Timestamp};
use crate::model::quantity::format_bytes;
use crate::model::GoDuration;
use crate::replay::backtest::Backtest;
use crate::replay::categorize::CategoryCounts;
use crate::replay::compare::hours;
use crate::replay::compare::ClassChanges;
use crate::replay::compare::{Comparison, JobDiff, Transition};
use crate::replay::estimate::{Basis, Estimate, FailureClass, Fit, Rate, Sums, Tally, MAX_CLASSES};
use crate::replay::sink::{Change, Estimates, Message, Needs, RenderJob, Sink, Totals};
use crate::replay::source::Progress;
use crate::replay::summary::Summary;

use super::lines;
use super::progress::finish;
use super::report;
use super::text::shown;
use super::Style;

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

pub fn summary_json(s: &Summary, e: &Estimates) -> Value {
    let decisions: Map<String, Value> = DecisionKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), json!(s.decision_count(*k))))
        .collect();
    let mut v = json!({
        "jobs": s.jobs,
        "runs": s.runs,
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
            "recorded": s.compute.to_string(),
            "expected": e.asked.expected_compute,
            "gpuHours": {"recorded": hours(s.gpu), "expected": e.asked.gpu_hours},
            "cpuHours": {"recorded": hours(s.cpu), "expected": e.asked.cpu_hours},
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
    if let (Some(c), Value::Object(m)) = (&s.categories, &mut v) {
        m.extend(categories_json(c));
    }
    v
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

/// docs/estimates.md's sentence: `estimates were within N points on jobs submitted at or after T`.
pub fn backtest_sentence(b: &Backtest) -> String {
    format!(
        "estimates were within {:.1} points on jobs submitted at or after {}",
        b.within_points, b.at
    )
}

/// The backtest's other figures in words, after [`backtest_sentence`].
pub fn backtest_details(b: &Backtest) -> String {
    let skill = b.skill.map_or_else(
        || "no skill to measure".to_string(),
        |s| format!("skill {:.0}%", s * 100.0),
    );
    let classes = if b.classes_checked == 0 {
        "no class had enough trials to be checked on its own (20+ test, 5+ train)".to_string()
    } else {
        format!(
            "{} of {} well-sampled classes (20+ test, 5+ train trials) within their train interval",
            b.classes_covered, b.classes_checked
        )
    };
    format!(
        "Brier score {:.3} against {:.3} for one pooled rate ({skill}); {classes}; {} train and {} test trials",
        b.brier, b.brier_pooled, b.train_trials, b.test_trials
    )
}

/// Hours for reading: one decimal, two under 1.
pub fn hours_words(h: f64) -> String {
    if h == 0.0 {
        "0".to_string()
    } else if h.abs() < 1.0 {
        format!("{h:.2}")
    } else {
        format!("{h:.1}")
    }
}

/// An expected run time in seconds as a duration, to the second (for reading).
pub fn seconds_words(secs: f64) -> String {
    let whole = secs.round().clamp(0.0, u64::MAX as f64 / 1e9);
    GoDuration((whole * 1e9) as u64).to_string()
}

/// YAML of a value as a one-item list, indented by `indent` spaces (for streaming `jobs:`).
pub fn yaml_item<T: Serialize>(value: &T, indent: usize) -> String {
    let text = serde_yaml::to_string(&vec![value]).unwrap_or_default();
    let pad = " ".repeat(indent);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

fn dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_string()
    } else {
        shown(s).into_owned()
    }
}

/// The per-job report: header, one row per run, the reasons, the outcome.
pub fn write_job_table(out: &mut dyn Write, style: Style, report: &JobReport) -> io::Result<()> {
    writeln!(out, "{}", style.bold(&format!("job {}", shown(&report.job_id))))?;
    writeln!(out, "  queue:     {}", shown(report.queue.as_deref().unwrap_or("-")))?;
    let policies = if !report.enabled {
        "none: retry policies are disabled in the scheduler config (legacy behaviour)".to_string()
    } else if report.policies.is_empty() {
        "none (legacy behaviour)".to_string()
    } else if report.engine == EngineKind::Upstream {
        let ignored = if report.ignored_policies.is_empty() {
            String::new()
        } else {
            format!("; ignored: {}", report.ignored_policies.join(", "))
        };
        format!(
            "{} (upstream evaluates only the queue's first policy{ignored})",
            report.policies.join(", ")
        )
    } else {
        format!(
            "{} (first matching rule wins, in this order)",
            report.policies.join(", ")
        )
    };
    if report.engine == EngineKind::Upstream {
        writeln!(
            out,
            "  engine:    upstream (Armada today: categories only, preemption ends the job, no backoff)"
        )?;
    }
    writeln!(out, "  policies:  {policies}")?;
    writeln!(
        out,
        "  global:    at most {} retries per job (globalMaxRetries)",
        report.global_max_retries
    )?;
    if let Some(t) = report.submitted_at {
        writeln!(out, "  submitted: {t}")?;
    }
    let with_memory = report.memory.is_some();
    let mut b = Builder::default();
    let mut header = vec![
        "RUN",
        "POD",
        "NODE",
        "FAILED AT",
        "FAILURE",
        "RULE",
        "RULE RETRIES",
        "JOB RETRIES",
        "DECISION",
        "DELAY",
        "ELIGIBLE AT",
        "AVOID NODES",
    ];
    if with_memory {
        header.push("MEMORY");
    }
    b.push_record(header);
    for run in &report.runs {
        let t = |ns: u64| format_instant(ns, report.submitted_at);
        let mut row = vec![
            run.index.to_string(),
            shown(&run.pod_name).into_owned(),
            dash(run.node.as_deref().unwrap_or("")),
            t(run.ended_at),
            shown(&run.failure).into_owned(),
        ];
        match &run.decision {
            None => {
                row.extend(["-", "-", "-", "succeeded", "-", "-", "-"].map(String::from));
                if with_memory {
                    row.push("-".into());
                }
            }
            Some(d) => {
                row.push(rule_ref_label(&report.policies, d).unwrap_or_else(|| "-".into()));
                row.push(match (d.counter, d.limit) {
                    (Some(c), Some(l)) => format!("{c} of {l}"),
                    _ => "-".into(),
                });
                row.push(format!("{} of {}", d.total_retries, d.global_max_retries));
                row.push(d.kind.as_str().to_string());
                let retry = d.action() == crate::model::Action::Retry;
                row.push(if retry { d.delay.to_string() } else { "-".into() });
                row.push(d.retry_after.map_or("-".into(), t));
                row.push(dash(&d.avoid_nodes.join(",")));
                if with_memory {
                    row.push(d.memory.map_or("-".into(), format_bytes));
                }
            }
        }
        b.push_record(row);
    }
    let mut table = b.build();
    table.with(TableStyle::blank()).with(Padding::new(0, 2, 0, 0));
    for line in table.to_string().lines() {
        writeln!(out, "  {}", line.trim_end())?;
    }
    writeln!(out)?;
    for run in &report.runs {
        if run.decision.is_some() {
            writeln!(out, "  run {}: {}", run.index, shown(&run.reason))?;
        }
    }
    let outcome = shown(&report.outcome_text()).into_owned();
    let styled = match report.status {
        JobStatus::Succeeded { .. } => style.bold(&outcome),
        JobStatus::Failed { .. } | JobStatus::Cancelled { .. } => style.error(&outcome),
        JobStatus::Pending { .. } => style.warning(&outcome),
    };
    writeln!(out, "  outcome: {styled}")?;
    Ok(())
}

/// `(policy/rule, retries granted, permanent failures)` of every rule (or `(decision kind)`)
/// that decided a run, by label.
pub fn rule_rows(s: &Summary) -> Vec<(String, u64, u64)> {
    let (retries, failures) = (s.retries_by_rule(), s.failures_by_rule());
    let mut keys: Vec<&String> = retries.keys().chain(failures.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let n = |m: &std::collections::BTreeMap<String, u64>| m.get(k).copied().unwrap_or(0);
            (k.clone(), n(&retries), n(&failures))
        })
        .collect()
}

/// The plan's first line, like the last line of `terraform plan`.
pub fn plan_sentence(c: &Comparison) -> String {
    format!(
        "Plan: {} rescued, {} lost, {} → Pending, {} retried differently; {} of {} change.",
        c.rescued,
        c.lost,
        c.to_pending,
        c.other + c.retries_only,
        c.changed,
        plural(c.jobs, "job", "jobs"),
    )
}

/// The bulk summary in words.
/// A categorizer's changes in words, most runs first (`none → oom/kernel 2, x → user_error
/// 1`), or `none`: every format's line (docs/categorizer.md).
pub fn category_changes_words(c: &CategoryCounts) -> String {
    let words = category_changes_items(c);
    if words.is_empty() {
        return "none".to_string();
    }
    words.join(", ")
}

/// A categorizer's changes, one item each, most runs first (`none → oom/kernel 2`).
fn category_changes_items(c: &CategoryCounts) -> Vec<String> {
    c.changes()
        .iter()
        .map(|(from, to, runs)| format!("{} → {} {runs}", shown(from), shown(to)))
        .collect()
}

/// The collisions' warning, in every format's words.
pub fn collisions_words(n: u64) -> String {
    format!(
        "{} the name of a failed pod the executor keeps: the new pod collides with it, the lease is returned and the job takes the legacy path",
        plural(n, "retry reuses", "retries reuse")
    )
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

/// The table's lines of a side's categorizer: its changes, its collisions, and the warning
/// when there are any. `side`: `baseline: ` or `candidate: ` in a comparison.
fn write_categories(out: &mut dyn Write, style: Style, c: &CategoryCounts, side: &str) -> io::Result<()> {
    let items = category_changes_items(c);
    if items.is_empty() {
        writeln!(out, "  {side}category changes: none")?;
    } else {
        for line in lines::list(&format!("  {side}category changes: "), &items, ", ", "    ") {
            writeln!(out, "{line}")?;
        }
    }
    writeln!(out, "  {side}collisions: {}", c.collisions)?;
    if c.collisions > 0 {
        let warning = lines::wrap(&format!("  warning: {side}"), "    ", &collisions_words(c.collisions));
        for (i, line) in warning.iter().enumerate() {
            match line.strip_prefix("  warning") {
                Some(rest) if i == 0 => writeln!(out, "  {}{rest}", style.warning("warning"))?,
                _ => writeln!(out, "{line}")?,
            }
        }
    }
    Ok(())
}

pub fn write_summary(out: &mut dyn Write, style: Style, s: &Summary, e: &Estimates) -> io::Result<()> {
    writeln!(out, "{}", style.bold("summary"))?;
    writeln!(out, "  jobs:      {} ({} runs)", s.jobs, s.runs)?;
    writeln!(
        out,
        "  outcomes:  {} succeeded, {} failed, {} cancelled, {} pending",
        s.succeeded, s.failed, s.cancelled, s.pending
    )?;
    writeln!(
        out,
        "  retries:   {} granted, {} total delay added",
        s.retries, s.total_delay
    )?;
    writeln!(
        out,
        "  compute:   {} recorded{}",
        s.compute,
        request_hours(s.gpu, s.cpu, s.without_resources)
    )?;
    if s.pending > 0 {
        let a = &e.asked;
        let without = without_estimate(a);
        if a.without_estimate < s.pending {
            writeln!(
                out,
                "  pending:   ≈ {:.1} ({:.1}–{:.1}) of {} would succeed over the runs the policies have left{without}, ≈ {} more run time (estimates)",
                a.expected,
                a.low,
                a.high,
                plural(s.pending, "Pending job", "Pending jobs"),
                seconds_words(a.expected_compute)
            )?;
            writeln!(out, "             {METHOD_LINE}")?;
        } else {
            writeln!(
                out,
                "  pending:   {}{without}",
                plural(s.pending, "Pending job", "Pending jobs")
            )?;
        }
    }
    if let Some(b) = &e.backtest {
        write_backtest(out, "  backtest:  ", "             ", b)?;
    }
    let mut b = Builder::default();
    b.push_record(["POLICY/RULE", "RETRIES GRANTED", "PERMANENT FAILURES"]);
    let rows = rule_rows(s);
    for (rule, retries, failures) in &rows {
        b.push_record([rule.clone(), retries.to_string(), failures.to_string()]);
    }
    if !rows.is_empty() {
        let mut table = b.build();
        table.with(TableStyle::blank()).with(Padding::new(0, 2, 0, 0));
        for line in table.to_string().lines() {
            writeln!(out, "  {}", line.trim_end())?;
        }
    }
    let kinds: Vec<String> = s.decisions().map(|(k, v)| format!("{} {v}", k.as_str())).collect();
    writeln!(
        out,
        "  decisions: {}",
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    )?;
    if let Some(c) = &s.categories {
        write_categories(out, style, c, "")?;
    }
    if s.expectation_failed_jobs > 0 {
        let list = failed_expectations(s, |id| shown(id).into_owned());
        writeln!(
            out,
            "  {}",
            style.error(&format!(
                "expectations failed in {}: {list}",
                plural(s.expectation_failed_jobs, "job", "jobs")
            ))
        )?;
    } else {
        writeln!(out, "  expectations: all met")?;
    }
    if s.contradicted_jobs > 0 {
        writeln!(
            out,
            "  contradictions: {} (reported on stderr)",
            plural(s.contradicted_jobs, "job", "jobs")
        )?;
    }
    if s.errors > 0 {
        writeln!(
            out,
            "  {}",
            style.error(&format!(
                "not simulated: {} with errors (reported on stderr)",
                plural(s.errors, "job", "jobs")
            ))
        )?;
    }
    Ok(())
}

/// The jobs whose expectations failed, each id written by `id` (plain, `<code>`, backticks),
/// joined, then `and N more` for those past the ids the summary keeps: every format's list.
pub fn failed_expectations(s: &Summary, id: impl Fn(&str) -> String) -> String {
    let mut list = s
        .expectation_failed_ids
        .iter()
        .map(|i| id(i))
        .collect::<Vec<_>>()
        .join(", ");
    let more = s
        .expectation_failed_jobs
        .saturating_sub(s.expectation_failed_ids.len() as u64);
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// Messages printed per category before "… and N more" (bulk input can have millions).
const MAX_MESSAGES: u64 = 100;

/// Capped stderr messages.
#[derive(Debug, Default)]
pub struct Messages {
    count: u64,
}

impl Messages {
    pub fn write(&mut self, err: &mut dyn Write, text: &str) -> io::Result<()> {
        self.count += 1;
        if self.count <= MAX_MESSAGES {
            writeln!(err, "{text}")?;
        }
        Ok(())
    }

    pub fn finish(&self, err: &mut dyn Write) -> io::Result<()> {
        if self.count > MAX_MESSAGES {
            writeln!(err, "… and {} more messages", self.count - MAX_MESSAGES)?;
        }
        Ok(())
    }
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

/// The warning for a job whose queue is not among the documents.
pub fn missing_queue_warning(job: &str, queue: &str, retry_policy: bool, given: &[String]) -> String {
    let what = if retry_policy {
        "--retry-policy"
    } else {
        "every policy given"
    };
    let names: Vec<String> = given.iter().map(|n| format!("`{n}`")).collect();
    let names = if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    };
    format!(
        "job `{}`: queue `{}` is not among the documents given with -f; using {what} ({names}) for the jobs of this queue",
        shown(job),
        shown(queue)
    )
}

/// An invalid history file's diagnostics as [`Stderr`] writes them, without colour: what a
/// partial result holds (`Message::Rendered`).
pub fn invalid_text(file: &crate::input::SourceFile) -> String {
    let mut text = Vec::new();
    let _ = report::write_text(std::slice::from_ref(file), Style::default(), &mut Vec::new(), &mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// What every `simulate` sink writes to stderr, whatever its format: the replay's messages
/// (capped at [`MAX_MESSAGES`], then a count), invalid history files, the progress bar.
pub struct Stderr<'a> {
    err: &'a mut dyn Write,
    style: Style,
    messages: Messages,
    bar: Option<ProgressBar>,
    /// The policies given on the command line came from `--retry-policy` (not every policy).
    retry_policy_flag: bool,
}

impl<'a> Stderr<'a> {
    pub fn new(err: &'a mut dyn Write, style: Style, bar: Option<ProgressBar>, retry_policy_flag: bool) -> Self {
        Stderr {
            err,
            style,
            messages: Messages::default(),
            bar,
            retry_policy_flag,
        }
    }

    pub fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        let style = self.style;
        let line = match m {
            Message::Error(text) => format!("{}: {}", style.error("error"), shown(text)),
            Message::Invalid(file) => {
                return report::write_text(std::slice::from_ref(*file), style, &mut Vec::new(), self.err).map(|_| ())
            }
            // A shard's `invalid_text`, read back from its partial (a file like any other):
            // its lines kept, anything else escaped.
            Message::Rendered(text) => return super::text::Escaping::new(&mut *self.err).write_all(text.as_bytes()),
            Message::MissingQueue { job, queue, given } => format!(
                "{}: {}",
                style.warning("warning"),
                missing_queue_warning(job, queue, self.retry_policy_flag, given)
            ),
            // As `history` prints it (`output::history::left_out_line`).
            Message::LeftOut(text) => format!("{}: {}", style.warning("warning"), shown(text)),
            Message::Contradiction { job, text } => format!(
                "{}: job `{}`: history contradicts the decisions: {}",
                style.warning("warning"),
                shown(job),
                shown(text)
            ),
            Message::ExpectationFailed { job, text } => format!(
                "{}: job `{}`: expectation not met: {}",
                style.error("error"),
                shown(job),
                shown(text)
            ),
        };
        self.messages.write(self.err, &line)
    }

    pub fn progress(&mut self, at: Progress) {
        if let Some(b) = &self.bar {
            b.set_position(at.done);
        }
    }

    /// Clears the bar and says how many messages were left out; then the writer, for what
    /// a format writes to stderr at the end.
    pub fn finish(&mut self) -> io::Result<&mut dyn Write> {
        finish(&self.bar);
        self.messages.finish(self.err)?;
        Ok(&mut *self.err)
    }
}

/// Which results a sink is given: a plain replay's jobs, or `--baseline`'s changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A plain replay; `bulk`: many jobs (JSON Lines, a directory), so the table format
    /// prints only the summary.
    Replay { bulk: bool },
    /// `--baseline`; `all_changes`: the table lists every changed job, not the first
    /// [`LISTED_PER_TRANSITION`] of each transition.
    Compare { all_changes: bool, baseline: Baseline },
}

/// Where a what-if's baseline policies come from: a plan whose baseline is the cluster's
/// says so in its header (table, markdown, html) and its data (`baselineFrom: cluster`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// `--baseline FILES`.
    Files,
    /// `--baseline-from-cluster`: the policies and attachments stored in Lookout's database.
    Cluster,
}

/// The words a plan's header uses for a baseline read from the cluster.
pub const CLUSTER_BASELINE: &str =
    "the retry policies and queue attachments the cluster runs (read from its Lookout database)";

/// Changed jobs the table lists per transition, unless `--all-changes`: a screenful.
pub const LISTED_PER_TRANSITION: usize = 20;

/// The groups of changed jobs, in the order the plan names them.
pub const GROUPS: [&str; 5] = ["rescued", "lost", "toPending", "other", "retries"];

/// The group of a changed job ([`GROUPS`]).
pub fn group_of(d: &JobDiff) -> usize {
    match d.transition() {
        Some(Transition::Rescued) => 0,
        Some(Transition::Lost) => 1,
        Some(Transition::ToPending) => 2,
        Some(Transition::Other) => 3,
        None => 4,
    }
}

/// Changed jobs kept per group ([`GROUPS`]) up to a cap each, in input order, and how many
/// were not: what a format that cuts its list short shows, in bounded memory.
#[derive(Debug)]
pub struct Listed<T> {
    pub groups: [(Vec<T>, u64); 5],
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            groups: Default::default(),
        }
    }
}

impl<T> Listed<T> {
    /// Keeps `make()` in `d`'s group unless it holds `cap` already.
    pub fn push(&mut self, d: &JobDiff, cap: usize, make: impl FnOnce() -> T) {
        let (kept, more) = &mut self.groups[group_of(d)];
        if kept.len() < cap {
            kept.push(make());
        } else {
            *more += 1;
        }
    }

    /// Every job seen in group `g`.
    pub fn total(&self, g: usize) -> u64 {
        self.groups[g].0.len() as u64 + self.groups[g].1
    }

    /// At most `n` of the kept jobs, shared fairly between the groups (round robin, so
    /// that 5 lost jobs are not drowned by 90,000 rescued), each group in input order.
    pub fn fair(&self, n: usize) -> [&[T]; 5] {
        let mut take = [0usize; 5];
        let mut left = n;
        while left > 0 {
            let before = left;
            for (g, (kept, _)) in self.groups.iter().enumerate() {
                if left > 0 && take[g] < kept.len() {
                    take[g] += 1;
                    left -= 1;
                }
            }
            if left == before {
                break;
            }
        }
        std::array::from_fn(|g| &self.groups[g].0[..take[g]])
    }
}

/// One row of a per-failure-class table: the class's trials (docs/estimates.md) and its jobs.
#[derive(Debug, Clone)]
pub struct ClassRow {
    /// `None`: jobs with no failed run (they have no trials).
    pub class: Option<FailureClass>,
    /// The jobs of the classes past the first [`MAX_CLASSES`], together.
    pub rest: bool,
    pub tally: Tally,
    pub jobs: ClassChanges,
}

impl ClassRow {
    /// The class's name for people.
    pub fn name(&self) -> String {
        match &self.class {
            _ if self.rest => format!("(other classes, past the first {MAX_CLASSES})"),
            Some(c) => c.to_string(),
            None => "(no failed run)".to_string(),
        }
    }

    /// The class's rate at any depth (its own from 5 trials, else every class's); `None`
    /// for the classes past the cap or without a single trial.
    pub fn rate(&self, e: &Estimates) -> Option<Rate> {
        if self.rest {
            return None;
        }
        e.rates.rate(self.class.as_ref(), 0, Fit::All)
    }
}

/// Class rows a report lists at most, besides the classes of changed or Pending jobs.
pub const MAX_CLASS_ROWS: usize = 200;

/// The classes of changed or Pending jobs, and the classes with the most trials up to
/// [`MAX_CLASS_ROWS`] rows in all, sorted by class; then the classes past the cap together
/// (when they have jobs). Also how many classes with trials are not listed.
pub fn class_rows(e: &Estimates) -> (Vec<ClassRow>, usize) {
    let mut rows: Vec<ClassRow> = e
        .by_class
        .rows()
        .into_iter()
        .map(|(class, jobs)| ClassRow {
            class: class.cloned(),
            rest: false,
            tally: e.rates.tally_of(class),
            jobs,
        })
        .collect();
    let mut others: Vec<(FailureClass, Tally)> = e
        .rates
        .trials()
        .classes()
        .filter_map(|(c, t)| Some((c?, t.total(Fit::All))))
        .filter(|(c, _)| !rows.iter().any(|r| r.class.as_ref() == Some(c)))
        .collect();
    // Most trials first; the sort is stable, so equal counts keep the class order.
    others.sort_by_key(|(_, t)| std::cmp::Reverse(t.trials));
    let room = MAX_CLASS_ROWS.saturating_sub(rows.len()).min(others.len());
    let hidden = others.len() - room;
    rows.extend(others.into_iter().take(room).map(|(c, t)| ClassRow {
        class: Some(c),
        rest: false,
        tally: t,
        jobs: ClassChanges::default(),
    }));
    rows.sort_by(|a, b| a.class.cmp(&b.class));
    if e.by_class.rest != ClassChanges::default() {
        rows.push(ClassRow {
            class: None,
            rest: true,
            tally: Tally::default(),
            jobs: e.by_class.rest,
        });
    }
    (rows, hidden)
}

/// A share and its interval: `60%`, `(23–88%)`; with one decimal when the interval is
/// narrower than two points (many trials), so that it does not read `21% (21–21%)`.
pub fn shares(p: f64, low: f64, high: f64) -> (String, String) {
    let digits = if high - low < 0.02 { 1 } else { 0 };
    let pct = |x: f64| format!("{:.*}", digits, x * 100.0);
    (format!("{}%", pct(p)), format!("({}–{}%)", pct(low), pct(high)))
}

/// An estimate's share and interval ([`shares`]).
pub fn estimate_shares(e: &Estimate) -> (String, String) {
    shares(e.p_succeeded, e.low, e.high)
}

/// An estimate in a few words: `62% (31–85%) over 3 runs left; next run 33%, basis
/// exit:1@1: 15 trials`.
pub fn estimate_words(e: &Estimate) -> String {
    let (share, interval) = estimate_shares(e);
    let basis = format!("basis {}: {}", e.basis, plural(e.trials, "trial", "trials"));
    if e.runs_left == 1 {
        return format!("{share} {interval} on its one run left, {basis}");
    }
    format!(
        "{share} {interval} over {} runs left; next run {:.0}%, {basis}",
        e.runs_left,
        e.p_next_run * 100.0
    )
}

/// A class's rate in a few words: `60% (23–88%), basis all: 5 trials`.
pub fn rate_words(r: &Rate) -> String {
    let (share, interval) = shares(r.p, r.low, r.high);
    format!(
        "{share} {interval}, basis {}: {}",
        r.basis,
        plural(r.trials, "trial", "trials")
    )
}

/// ` (N without an estimate: no trials)`, or nothing when every job asked about has one.
pub fn without_estimate(s: &Sums) -> String {
    if s.without_estimate > 0 {
        format!(" ({} without an estimate: no trials)", s.without_estimate)
    } else {
        String::new()
    }
}

/// `; 3.5 GPU-hours, 50.0 CPU-hours; 3 jobs request neither` — the hours that are not 0, and
/// the jobs they miss (nothing when no job requests anything).
pub fn request_hours(gpu: u128, cpu: u128, without: u64) -> String {
    let mut parts = Vec::new();
    if gpu > 0 {
        parts.push(format!("{} GPU-hours", hours_words(hours(gpu))));
    }
    if cpu > 0 {
        parts.push(format!("{} CPU-hours", hours_words(hours(cpu))));
    }
    if parts.is_empty() {
        return String::new();
    }
    if without > 0 {
        parts.push(format!("{} without requests", plural(without, "job", "jobs")));
    }
    format!(" ({})", parts.join(", "))
}

/// The estimates' method in one line for the table outputs, said once per output (after the
/// plan or the summary that has estimates): it points to docs/estimates.md for the rest, as
/// `-o json`'s `method` ([`ESTIMATE_METHOD`]) and the reports say it in full.
pub const METHOD_LINE: &str = "(estimates: this history's share of failed runs whose next run succeeded, by failure class and depth; what they assume: docs/estimates.md)";

/// The backtest of the estimates in the table outputs: its sentence after `label`, then its
/// details in parentheses under it, wrapped within the line width after `indent`.
pub fn write_backtest(out: &mut dyn Write, label: &str, indent: &str, b: &Backtest) -> io::Result<()> {
    writeln!(out, "{label}{}", backtest_sentence(b))?;
    for line in lines::wrap(indent, &format!("{indent} "), &format!("({})", backtest_details(b))) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// How the estimates are made, named once per output: what they assume.
pub const ESTIMATE_METHOD: &str = "each Pending job's chance to succeed over the runs its policy has left (the engine followed on copies of its last failed run until it fails the job, at most 100 runs), from the share of failed runs of its failure class (its last failed run's category, else exit code, else condition) at the same depth (failed runs so far, 5+ together) whose next run succeeded, in this history; a level with fewer than 5 trials backs off to the class at any depth, then all classes at that depth, then all; (low–high): Wilson 95% bounds; runs assumed independent given class and depth, and a class the recorded policies never retried has no trials";

/// `-o table`: one table per job (or the summary alone, in bulk), or the plan of a
/// comparison: its changed jobs grouped by transition (the first
/// [`LISTED_PER_TRANSITION`] of each, unless `--all-changes`, which lists every one as it
/// comes), then the totals.
pub struct TableSink<'a> {
    out: &'a mut dyn Write,
    stderr: Stderr<'a>,
    style: Style,
    mode: Mode,
    written: u64,
    /// The lines kept per group, and how many were not.
    listed: Listed<String>,
    /// A line showed an estimate: the plan names the method.
    estimated: bool,
}

impl<'a> TableSink<'a> {
    pub fn new(mode: Mode, out: &'a mut dyn Write, stderr: Stderr<'a>) -> Self {
        TableSink {
            style: stderr.style,
            out,
            stderr,
            mode,
            written: 0,
            listed: Listed::default(),
            estimated: false,
        }
    }
}

impl Sink for TableSink<'_> {
    fn needs(&self) -> Needs {
        Needs {
            reports: self.mode == Mode::Replay { bulk: false },
            ..Needs::default()
        }
    }

    fn begin(&mut self) -> io::Result<()> {
        match self.mode {
            Mode::Compare { baseline, .. } => {
                if baseline == Baseline::Cluster {
                    writeln!(self.out, "baseline: {CLUSTER_BASELINE}")?;
                }
                writeln!(
                    self.out,
                    "{}",
                    self.style
                        .bold("jobs the candidate policies change (baseline → candidate):")
                )
            }
            Mode::Replay { .. } => Ok(()),
        }
    }

    fn progress(&mut self, at: Progress) {
        self.stderr.progress(at);
    }

    fn job(&mut self, report: &JobReport, _: &[u8]) -> io::Result<()> {
        if self.written > 0 {
            writeln!(self.out)?;
        }
        self.written += 1;
        write_job_table(self.out, self.style, report)
    }

    fn change(&mut self, c: &Change<'_>) -> io::Result<()> {
        self.written += 1;
        self.estimated |= c.estimate().is_some();
        if matches!(self.mode, Mode::Compare { all_changes: true, .. }) {
            return writeln!(self.out, "{}", change_line(self.style, c));
        }
        let style = self.style;
        self.listed
            .push(c.diff, LISTED_PER_TRANSITION, || change_line(style, c));
        Ok(())
    }

    fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        self.stderr.message(m)
    }

    fn end(&mut self, totals: Totals<'_>) -> io::Result<()> {
        self.stderr.finish()?;
        match (totals, self.mode) {
            (Totals::Replay { summary, estimates }, Mode::Replay { bulk }) => {
                // One history: its table says it all. None simulated (an error, reported on
                // stderr): an all-zero summary would only be noise on stdout.
                if bulk || self.written > 1 {
                    if !bulk {
                        writeln!(self.out)?;
                    }
                    write_summary(self.out, self.style, summary, estimates)?;
                } else if let (1, Some(c)) = (self.written, &summary.categories) {
                    // One history with a categorizer: what it changed, and its collisions.
                    writeln!(self.out)?;
                    write_categories(self.out, self.style, c, "")?;
                }
                Ok(())
            }
            (
                Totals::Compare {
                    comparison, estimates, ..
                },
                _,
            ) => {
                let mut cut = false;
                for ((lines, more), name) in self.listed.groups.iter().zip(GROUPS) {
                    for l in lines {
                        writeln!(self.out, "{l}")?;
                    }
                    if *more > 0 {
                        cut = true;
                        writeln!(self.out, "  … and {more} more {name}")?;
                    }
                }
                if cut {
                    writeln!(
                        self.out,
                        "  (the first {LISTED_PER_TRANSITION} of each transition; --all-changes lists every one)"
                    )?;
                }
                if self.written == 0 {
                    writeln!(self.out, "  (none)")?;
                }
                writeln!(self.out)?;
                write_comparison(self.out, self.style, comparison)?;
                write_estimate_line(self.out, comparison, estimates, self.estimated)
            }
            (Totals::Replay { .. }, Mode::Compare { .. }) => Ok(()),
        }
    }
}

/// The plan's estimate: Σ pSucceeded over the Failed → Pending jobs with its bounds, the
/// expected run time of every Pending job, the method once (when any job is estimated), and
/// the backtest.
pub fn write_estimate_line(out: &mut dyn Write, c: &Comparison, e: &Estimates, estimated: bool) -> io::Result<()> {
    let failed_to_pending = c.failed_to_pending();
    if failed_to_pending > 0 {
        let a = &e.asked;
        writeln!(
            out,
            "  estimate:  ≈ {:.1} ({:.1}–{:.1}) of {} Failed → Pending would succeed over the runs the candidate has left{}",
            a.expected,
            a.low,
            a.high,
            plural(failed_to_pending, "job", "jobs"),
            without_estimate(a)
        )?;
    }
    let p = &e.pending;
    if p.jobs > p.without_estimate {
        writeln!(
            out,
            "  expected:  ≈ {} more run time for the {} Pending in the candidate{}",
            seconds_words(p.expected_compute),
            plural(p.jobs, "job", "jobs"),
            expected_hours(p)
        )?;
    }
    if failed_to_pending > 0 || estimated {
        writeln!(out, "             {METHOD_LINE}")?;
    }
    if let Some(b) = &e.backtest {
        write_backtest(out, "  backtest:  ", "             ", b)?;
    }
    Ok(())
}

/// ` (2.5 GPU-hours, 10.0 CPU-hours)` of an expected run time, or nothing.
pub fn expected_hours(s: &Sums) -> String {
    let mut parts = Vec::new();
    if s.gpu_hours > 0.0 {
        parts.push(format!("{} GPU-hours", hours_words(s.gpu_hours)));
    }
    if s.cpu_hours > 0.0 {
        parts.push(format!("{} CPU-hours", hours_words(s.cpu_hours)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// One changed job as a line of the plan.
fn change_line(style: Style, change: &Change<'_>) -> String {
    let d = change.diff;
    let (b, c) = (&d.baseline, &d.candidate);
    let mut what = match d.transition() {
        Some(t) => t.name(),
        None => "retries",
    }
    .to_string();
    if let Some(e) = change.estimate() {
        what.push_str(&format!("; estimate {}", estimate_words(e)));
    }
    let head = format!("  ~ {}: {} → {}", shown(&d.job), side_words(b), side_words(c));
    let line = format!("{head}  ({what})");
    // A long job id or estimate puts the parenthesis on a line of its own, under the job.
    let lines = if line.chars().count() > lines::WIDTH {
        vec![head, format!("      ({what})")]
    } else {
        vec![line]
    };
    let paint = |l: &String| match d.transition() {
        Some(Transition::Rescued) => style.bold(l),
        Some(Transition::Lost) => style.error(l),
        _ => style.warning(l),
    };
    lines.iter().map(paint).collect::<Vec<_>>().join("\n")
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
        let style = self.stderr.style;
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
    let by_state: Map<String, Value> = c
        .transitions()
        .map(|(f, t, n)| (format!("{} → {}", f.as_str(), t.as_str()), json!(n)))
        .collect();
    let v = json!({
        "jobs": c.jobs,
        "changed": c.changed,
        "unchanged": c.jobs - c.changed,
        "transitions": {
            "rescued": c.rescued,
            "lost": c.lost,
            "toPending": c.to_pending,
            "other": c.other,
            "retriesOnly": c.retries_only,
            "byState": by_state,
        },
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
    if let Some(s) = &c.categories {
        m.insert(
            "categories".into(),
            json!({"baseline": categories_json(&s.baseline), "candidate": categories_json(&s.candidate)}),
        );
    }
    m
}

/// docs/estimates.md's `compute` of a comparison: the run time added and removed (durations), the
/// expected run time of the candidate's `pending` jobs (seconds) and the hours of each.
pub fn compute_json(c: &Comparison, pending: &Sums) -> Value {
    json!({
        "added": c.compute_added.to_string(),
        "removed": c.compute_removed.to_string(),
        "expected": pending.expected_compute,
        "gpuHours": {
            "added": hours(c.gpu_added),
            "removed": hours(c.gpu_removed),
            "expected": pending.gpu_hours,
        },
        "cpuHours": {
            "added": hours(c.cpu_added),
            "removed": hours(c.cpu_removed),
            "expected": pending.cpu_hours,
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

/// One side of a changed job in words: `Failed after 1 retry`, in every format.
pub fn side_words(s: &crate::replay::compare::Side) -> String {
    format!(
        "{} after {}",
        s.final_state.as_str(),
        plural(u64::from(s.retries), "retry", "retries")
    )
}

/// `; GPU-hours +2.0, -0.5; CPU-hours …` of a comparison, the kinds any job requests.
pub fn compute_hours(c: &Comparison) -> String {
    let mut out = String::new();
    for (name, added, removed) in [("GPU", c.gpu_added, c.gpu_removed), ("CPU", c.cpu_added, c.cpu_removed)] {
        if added > 0 || removed > 0 {
            out.push_str(&format!(
                "; {name}-hours +{}, -{}",
                hours_words(hours(added)),
                hours_words(hours(removed))
            ));
        }
    }
    if !out.is_empty() && c.without_resources > 0 {
        out.push_str(&format!(
            "; {} without requests",
            plural(c.without_resources, "job", "jobs")
        ));
    }
    out
}

/// The comparison totals in words, like the last lines of `terraform plan`.
pub fn write_comparison(out: &mut dyn Write, style: Style, c: &Comparison) -> io::Result<()> {
    writeln!(out, "{}", style.bold(&plan_sentence(c)))?;
    for (f, t, n) in c.transitions() {
        let name = match (f.as_str(), t.as_str()) {
            ("Failed", "Succeeded") => "  (rescued)",
            ("Succeeded", "Failed") => "  (lost)",
            (_, "Pending") => "  (would retry past the end of the recorded history)",
            _ => "",
        };
        writeln!(out, "  {} → {}: {n}{name}", f.as_str(), t.as_str())?;
    }
    if c.retries_only > 0 {
        writeln!(
            out,
            "  same outcome, other retry count: {}",
            plural(c.retries_only, "job", "jobs")
        )?;
    }
    writeln!(
        out,
        "  retries:   +{} added, -{} removed",
        c.retries_added, c.retries_removed
    )?;
    writeln!(
        out,
        "  delay:     +{} added, -{} removed",
        c.delay_added, c.delay_removed
    )?;
    writeln!(
        out,
        "  compute:   +{} added, -{} removed (runFor of the runs one side starts and the other does not){}",
        c.compute_added,
        c.compute_removed,
        compute_hours(c)
    )?;
    if let Some(s) = &c.categories {
        write_categories(out, style, &s.baseline, "baseline: ")?;
        write_categories(out, style, &s.candidate, "candidate: ")?;
    }
    if c.errors > 0 {
        writeln!(
            out,
            "  {}",
            style.error(&format!(
                "not compared: {} with errors (reported on stderr)",
                plural(c.errors, "job", "jobs")
            ))
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::compare::Side;

    fn diff(from: Final, to: Final) -> JobDiff {
        let side = |final_state| Side {
            final_state,
            retries: 0,
            delay: GoDuration::ZERO,
            runs: 1,
            runs_left: 0,
            compute: GoDuration::ZERO,
        };
        JobDiff {
            job: String::new(),
            baseline: side(from),
            candidate: side(to),
            compute_added: GoDuration::ZERO,
            compute_removed: GoDuration::ZERO,
            resources: None,
        }
    }

    /// 90 rescued, 2 lost, 30 → Pending: 10 rows go round the groups, so the 2 lost jobs
    /// are listed, and the rest is shared by the others in input order.
    #[test]
    fn a_fair_share_lists_every_group() {
        let mut listed: Listed<usize> = Listed::default();
        let mut n = 0;
        for (count, from, to) in [
            (90, Final::Failed, Final::Succeeded),
            (2, Final::Succeeded, Final::Failed),
            (30, Final::Failed, Final::Pending),
        ] {
            for _ in 0..count {
                listed.push(&diff(from, to), 50, || n);
                n += 1;
            }
        }
        assert_eq!((listed.total(0), listed.total(1), listed.total(2)), (90, 2, 30));
        assert_eq!(listed.groups[0].1, 40);
        let shown = listed.fair(10);
        assert_eq!(shown[0], [0, 1, 2, 3]);
        assert_eq!(shown[1], [90, 91]);
        assert_eq!(shown[2], [92, 93, 94, 95]);
        assert!(shown[3].is_empty() && shown[4].is_empty());
        // More rows than kept: every kept job.
        assert_eq!(listed.fair(1000).iter().map(|g| g.len()).sum::<usize>(), 50 + 2 + 30);
    }
}
