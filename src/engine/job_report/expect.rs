//! The history's `expect` checks: the job's (final state, retries, last decision kind) and
//! each run's, against what the replay decided.
//!
//! Owns: [`check_job`] and [`check_run`] and their failure words. Must not: change a
//! decision or a record.

use crate::model::failure_history::{JobExpect, RunExpect};

use super::report::{JobReport, RunRecord};

/// The history's job-level `expect`: final state, total retries, last decision kind.
pub(super) fn check_job(report: &mut JobReport, e: &JobExpect) {
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

pub(super) fn check_run(report: &JobReport, rec: &RunRecord, e: &RunExpect, fail: &mut impl FnMut(String)) {
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
