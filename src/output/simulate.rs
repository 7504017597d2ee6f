//! Presentation of `simulate` results: the per-job table (borderless, kubectl-like), the
//! JSON/YAML/JSON Lines records and the bulk summary.
//!
//! Owns: how a [`JobReport`] and a [`Summary`] look, and the record field names, which are
//! stable (documented in the README section `## simulate`). Must not: evaluate, read files
//! or decide exit codes.
//!
//! Times are strings: RFC 3339 when the history gives `job.submittedAt`, else `T+<duration>`
//! since submission; durations are Go-style (`1m30s`); memory is a Kubernetes quantity.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{json, Map, Value};
use tabled::builder::Builder;
use tabled::settings::{Padding, Style as TableStyle};

use crate::eval::replay::{format_instant, rule_ref_label, JobReport, JobStatus, RunRecord};
use crate::eval::summary::Summary;
use crate::eval::DecisionKind;
use crate::model::quantity::format_bytes;

use super::Style;

/// One run as a record (SPEC §2.9 plus the run's own facts). Field order is the output
/// order; a succeeded run has `null` decision fields.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOut<'a> {
    run: usize,
    pod_name: &'a str,
    node: Option<&'a str>,
    started_at: String,
    ended_at: String,
    outcome: &'static str,
    failure: &'a str,
    action: Option<&'static str>,
    decision: Option<&'static str>,
    policy: Option<&'a str>,
    rule_index: Option<usize>,
    rule: Option<String>,
    signal: Option<&'a str>,
    counter: Option<u32>,
    limit: Option<u32>,
    total_retries: Option<u32>,
    global_max_retries: Option<u32>,
    delay: Option<String>,
    delay_parts: Option<PartsOut>,
    retry_after: Option<String>,
    avoid_nodes: &'a [String],
    memory: Option<String>,
    next_pod_name: Option<&'a str>,
    reason: &'a str,
}

#[derive(Serialize)]
pub struct PartsOut {
    backoff: String,
    jitter: String,
    grace: String,
}

pub fn run_record<'a>(report: &'a JobReport, run: &'a RunRecord) -> RunOut<'a> {
    let t = |ns: u64| format_instant(ns, report.submitted_at);
    let d = run.decision.as_ref();
    RunOut {
        run: run.index,
        pod_name: &run.pod_name,
        node: run.node.as_deref(),
        started_at: t(run.started_at),
        ended_at: t(run.ended_at),
        outcome: run.outcome.as_str(),
        failure: &run.failure,
        action: d.map(|d| d.action().as_str()),
        decision: d.map(|d| d.kind.as_str()),
        policy: d.and_then(|d| report.policies.get(d.policy?)).map(String::as_str),
        rule_index: d.and_then(|d| match d.rule {
            Some(crate::eval::RuleRef::Index(i)) => Some(i),
            _ => None,
        }),
        rule: d.and_then(|d| rule_ref_label(&report.policies, d)),
        signal: d.and_then(|d| d.signal.as_deref()),
        counter: d.and_then(|d| d.counter),
        limit: d.and_then(|d| d.limit),
        total_retries: d.map(|d| d.total_retries),
        global_max_retries: d.map(|d| d.global_max_retries),
        delay: d.map(|d| d.delay.to_string()),
        delay_parts: d.map(|d| PartsOut {
            backoff: d.delay_parts.backoff.to_string(),
            jitter: d.delay_parts.jitter.to_string(),
            grace: d.delay_parts.grace.to_string(),
        }),
        retry_after: d.and_then(|d| d.retry_after).map(t),
        avoid_nodes: d.map_or(&[], |d| d.avoid_nodes.as_slice()),
        memory: d.and_then(|d| d.memory).map(format_bytes),
        next_pod_name: d.and_then(|d| d.next_pod_name.as_deref()),
        reason: &run.reason,
    }
}

fn status_json(report: &JobReport) -> Value {
    let (run, kind, retry_after) = match &report.status {
        JobStatus::Succeeded { run } | JobStatus::Cancelled { run } => (Some(*run), None, None),
        JobStatus::Failed { run, kind, .. } => (Some(*run), Some(kind.as_str()), None),
        JobStatus::Pending { retry_after } => (None, None, Some(format_instant(*retry_after, report.submitted_at))),
    };
    json!({
        "final": report.status.final_state().as_str(),
        "run": run,
        "decision": kind,
        "retryAfter": retry_after,
        "text": report.outcome_text(),
    })
}

/// One job as a record, serialized straight to the writer (no intermediate `Value`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobOut<'a> {
    job: &'a str,
    queue: Option<&'a str>,
    policies: &'a [String],
    enabled: bool,
    global_max_retries: u32,
    submitted_at: Option<String>,
    runs: Vec<RunOut<'a>>,
    outcome: Value,
    retries: u32,
    total_delay: String,
    memory: Option<String>,
    expectation_failures: &'a [String],
    contradictions: &'a [String],
}

pub fn job_record(report: &JobReport) -> JobOut<'_> {
    JobOut {
        job: &report.job_id,
        queue: report.queue.as_deref(),
        policies: &report.policies,
        enabled: report.enabled,
        global_max_retries: report.global_max_retries,
        submitted_at: report.submitted_at.map(|t| t.to_string()),
        runs: report.runs.iter().map(|r| run_record(report, r)).collect(),
        outcome: status_json(report),
        retries: report.retries,
        total_delay: report.total_delay.to_string(),
        memory: report.memory.map(format_bytes),
        expectation_failures: &report.expectation_failures,
        contradictions: &report.contradictions,
    }
}

/// One job as a JSON value.
pub fn job_json(report: &JobReport) -> Value {
    serde_json::to_value(job_record(report)).unwrap_or(Value::Null)
}

pub fn summary_json(s: &Summary) -> Value {
    let decisions: Map<String, Value> = DecisionKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), json!(s.decisions.get(k).copied().unwrap_or(0))))
        .collect();
    json!({
        "jobs": s.jobs,
        "runs": s.runs,
        "outcomes": {
            "Succeeded": s.succeeded,
            "Failed": s.failed,
            "Cancelled": s.cancelled,
            "Pending": s.pending,
        },
        "retries": s.retries,
        "retriesByRule": s.retries_by_rule,
        "failuresByRule": s.failures_by_rule,
        "decisions": decisions,
        "totalDelay": s.total_delay.to_string(),
        "expectationFailedJobs": s.expectation_failed_jobs,
        "expectationFailedJobIds": s.expectation_failed_ids,
        "contradictedJobs": s.contradicted_jobs,
        "errors": s.errors,
    })
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
        s.to_string()
    }
}

/// The per-job report: header, one row per run, the reasons, the outcome.
pub fn write_job_table(out: &mut dyn Write, style: Style, report: &JobReport) -> io::Result<()> {
    writeln!(out, "{}", style.bold(&format!("job {}", report.job_id)))?;
    writeln!(out, "  queue:     {}", report.queue.as_deref().unwrap_or("-"))?;
    let policies = if !report.enabled {
        "none: retry policies are disabled in the scheduler config (legacy behaviour)".to_string()
    } else if report.policies.is_empty() {
        "none (legacy behaviour)".to_string()
    } else {
        format!(
            "{} (first matching rule wins, in this order)",
            report.policies.join(", ")
        )
    };
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
            run.pod_name.clone(),
            dash(run.node.as_deref().unwrap_or("")),
            t(run.ended_at),
            run.failure.clone(),
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
            writeln!(out, "  run {}: {}", run.index, run.reason)?;
        }
    }
    let outcome = report.outcome_text();
    let styled = match report.status {
        JobStatus::Succeeded { .. } => style.bold(&outcome),
        JobStatus::Failed { .. } | JobStatus::Cancelled { .. } => style.error(&outcome),
        JobStatus::Pending { .. } => style.warning(&outcome),
    };
    writeln!(out, "  outcome: {styled}")?;
    Ok(())
}

/// The bulk summary in words.
pub fn write_summary(out: &mut dyn Write, style: Style, s: &Summary) -> io::Result<()> {
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
    let mut b = Builder::default();
    b.push_record(["POLICY/RULE", "RETRIES GRANTED", "PERMANENT FAILURES"]);
    let mut keys: Vec<&String> = s.retries_by_rule.keys().chain(s.failures_by_rule.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in &keys {
        b.push_record([
            k.to_string(),
            s.retries_by_rule.get(*k).copied().unwrap_or(0).to_string(),
            s.failures_by_rule.get(*k).copied().unwrap_or(0).to_string(),
        ]);
    }
    if !keys.is_empty() {
        let mut table = b.build();
        table.with(TableStyle::blank()).with(Padding::new(0, 2, 0, 0));
        for line in table.to_string().lines() {
            writeln!(out, "  {}", line.trim_end())?;
        }
    }
    let kinds: Vec<String> = s.decisions.iter().map(|(k, v)| format!("{} {v}", k.as_str())).collect();
    writeln!(
        out,
        "  decisions: {}",
        if kinds.is_empty() {
            "none".into()
        } else {
            kinds.join(", ")
        }
    )?;
    if s.expectation_failed_jobs > 0 {
        let more = s
            .expectation_failed_jobs
            .saturating_sub(s.expectation_failed_ids.len() as u64);
        let mut list = s.expectation_failed_ids.join(", ");
        if more > 0 {
            list.push_str(&format!(" and {more} more"));
        }
        writeln!(
            out,
            "  {}",
            style.error(&format!(
                "expectations failed in {}: {list}",
                crate::eval::replay::plural(s.expectation_failed_jobs, "job", "jobs")
            ))
        )?;
    } else {
        writeln!(out, "  expectations: all met")?;
    }
    if s.contradicted_jobs > 0 {
        writeln!(
            out,
            "  contradictions: {} (reported on stderr)",
            crate::eval::replay::plural(s.contradicted_jobs, "job", "jobs")
        )?;
    }
    if s.errors > 0 {
        writeln!(
            out,
            "  {}",
            style.error(&format!(
                "not simulated: {} with errors (reported on stderr)",
                crate::eval::replay::plural(s.errors, "job", "jobs")
            ))
        )?;
    }
    Ok(())
}
