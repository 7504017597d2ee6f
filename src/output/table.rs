//! `-o table` of a replay: the per-job table (borderless, kubectl-like), the bulk summary,
//! and a comparison's plan (its changed jobs by transition, then the totals in words, like
//! `terraform plan`), streamed by [`TableSink`].
//!
//! Owns: the table's layout (columns, labels, indentation, `lines`' width), which `suggest`'s
//! table and JSON Lines' totals on stderr print too. Must not: count (every number comes
//! from the replay's totals), or word a sentence another format says too (that is `words`).

use std::io::{self, Write};

use tabled::builder::Builder;
use tabled::settings::{Padding, Style as TableStyle};

use crate::engine::job_report::plural;
use crate::engine::job_report::{format_instant, rule_ref_label, JobReport, JobStatus};
use crate::engine::EngineKind;
use crate::model::quantity::format_bytes;
use crate::replay::backtest::Backtest;
use crate::replay::categorize::CategoryCounts;
use crate::replay::compare::{Comparison, Transition};
use crate::replay::contention::Side as ContentionSide;
use crate::replay::sink::{Change, Estimates, Message, Needs, Sink, Totals};
use crate::replay::source::Progress;
use crate::replay::summary::Summary;

use super::groups::{rule_rows, Listed, GROUPS, LISTED_PER_TRANSITION};
use super::lines;
use super::mode::{Baseline, Mode};
use super::stderr::Stderr;
use super::text::shown;
use super::words::{
    backtest_details, backtest_sentence, candidate_estimate_words, category_changes_items, collisions_words,
    comparison_sides, compute_recorded, contention_said, contention_words, estimate_words, expected_words,
    failed_expectations, hours_changes, incidents_line, overlap_change_words, plan_sentence, recorded_replayed,
    runs_words, seconds_words, side_words, successes_words, transition_note, with_errors, without_estimate,
    CLUSTER_BASELINE, CONTENTION_NOTE, CONTENTION_SHARDED, METHOD_LINE, RETRIES_ONLY,
};
use super::Style;

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

/// The bulk summary in words.
pub fn write_summary(out: &mut dyn Write, style: Style, s: &Summary, e: &Estimates) -> io::Result<()> {
    writeln!(out, "{}", style.bold("summary"))?;
    writeln!(out, "  jobs:      {} ({})", s.jobs, runs_words(s))?;
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
    writeln!(out, "  compute:   {}", compute_recorded(s))?;
    if let Some(line) = e.incidents.as_ref().and_then(incidents_line) {
        writeln!(out, "  incidents: {line}")?;
    }
    if s.pending > 0 {
        let a = &e.asked;
        let without = without_estimate(a);
        if a.without_estimate < s.pending {
            writeln!(
                out,
                "  pending:   {} of {} would succeed over the runs the policies have left{without}, ≈ {} more run time (estimates)",
                successes_words(a),
                plural(s.pending, "Pending job", "Pending jobs"),
                seconds_words(a.expected_compute)
            )?;
            write_method_line(out)?;
        } else {
            writeln!(
                out,
                "  pending:   {}{without}",
                plural(s.pending, "Pending job", "Pending jobs")
            )?;
        }
    }
    if let Some(b) = &e.backtest {
        write_backtest(out, "  backtest:  ", UNDER_LABEL, b)?;
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
    if let Some(c) = &s.contention {
        write_contention(out, &[("recorded", &c.recorded), ("replayed", &c.replayed)], &[])?;
    } else if s.contention_sharded {
        writeln!(out, "  contention: {CONTENTION_SHARDED}")?;
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
    write_errors(out, style, "  ", "not simulated", s.errors)
}

/// The contention section (docs/contention.md): each side's sentences under its label, then
/// `changes`, a comparison's change of the overlap.
pub fn write_contention(out: &mut dyn Write, sides: &[(&str, &ContentionSide)], changes: &[String]) -> io::Result<()> {
    if !contention_said(sides.iter().map(|(_, s)| *s)) {
        return Ok(());
    }
    writeln!(out, "  contention: retries while others waited ({CONTENTION_NOTE})")?;
    let width = sides.iter().map(|(label, _)| label.len()).max().unwrap_or(0) + 2;
    let rest = " ".repeat(4 + width);
    for (label, side) in sides {
        for (i, sentence) in contention_words(side).iter().enumerate() {
            let label = if i == 0 { format!("{label}:") } else { String::new() };
            for line in lines::wrap(&format!("    {label:width$}"), &rest, sentence) {
                writeln!(out, "{line}")?;
            }
        }
    }
    for change in changes {
        writeln!(out, "    {change}")?;
    }
    Ok(())
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

/// The comparison totals in words, like the last lines of `terraform plan`.
pub fn write_comparison(out: &mut dyn Write, style: Style, c: &Comparison) -> io::Result<()> {
    writeln!(out, "{}", style.bold(&plan_sentence(c)))?;
    for (f, t, n) in c.transitions() {
        let name = transition_note(f, t).map_or_else(String::new, |note| format!("  ({note})"));
        writeln!(out, "  {} → {}: {n}{name}", f.as_str(), t.as_str())?;
    }
    if c.retries_only > 0 {
        writeln!(out, "  {RETRIES_ONLY}: {}", plural(c.retries_only, "job", "jobs"))?;
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
    if let Some(record) = recorded_replayed(c) {
        writeln!(out, "  record:    {record}")?;
    }
    if let Some(e) = &c.explained {
        writeln!(out, "  {}", e.words(|id| shown(id).into_owned()))?;
    }
    if let Some(s) = &c.contention {
        write_contention(
            out,
            &comparison_sides(s),
            &overlap_change_words(&s.baseline, &s.candidate),
        )?;
    } else if c.contention_sharded {
        writeln!(out, "  contention: {CONTENTION_SHARDED}")?;
    }
    if let Some(s) = &c.categories {
        write_categories(out, style, &s.baseline, "baseline: ")?;
        write_categories(out, style, &s.candidate, "candidate: ")?;
    }
    write_errors(out, style, "  ", "not compared", c.errors)
}

/// `; GPU-hours +2.0, -0.5; CPU-hours …` of a comparison, the kinds any job requests.
pub fn compute_hours(c: &Comparison) -> String {
    let mut out = String::new();
    for (name, added, removed) in hours_changes(c) {
        out.push_str(&format!("; {name}-hours +{added}, -{removed}"));
    }
    if !out.is_empty() && c.without_resources > 0 {
        out.push_str(&format!(
            "; {} without requests",
            plural(c.without_resources, "job", "jobs")
        ));
    }
    out
}

/// The plan's estimate: Σ pSucceeded over the Failed → Pending jobs with its bounds, the
/// expected run time of every Pending job, the method once (when any job is estimated), and
/// the backtest.
pub fn write_estimate_line(out: &mut dyn Write, c: &Comparison, e: &Estimates, estimated: bool) -> io::Result<()> {
    let failed_to_pending = c.failed_to_pending();
    if failed_to_pending > 0 {
        writeln!(
            out,
            "  estimate:  {}",
            candidate_estimate_words(failed_to_pending, &e.asked)
        )?;
    }
    let p = &e.pending;
    if p.jobs > p.without_estimate {
        writeln!(out, "  expected:  {}", expected_words(p))?;
    }
    if failed_to_pending > 0 || estimated {
        write_method_line(out)?;
    }
    if let Some(b) = &e.backtest {
        write_backtest(out, "  backtest:  ", UNDER_LABEL, b)?;
    }
    Ok(())
}

/// `not simulated: 3 jobs with errors (reported on stderr)` after `indent`, in the error
/// colour, when any job had errors; `not_done`: what was not done to them.
pub fn write_errors(out: &mut dyn Write, style: Style, indent: &str, not_done: &str, errors: u64) -> io::Result<()> {
    if errors == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "{indent}{}",
        style.error(&format!("{not_done}: {}", with_errors(errors)))
    )
}

/// Where a line under a label (`  pending:   `, `  estimate:  `) starts.
const UNDER_LABEL: &str = "             ";

/// The estimates' method in one line ([`METHOD_LINE`]), under the label of the estimate it
/// follows: said once per table output, `suggest`'s too.
pub fn write_method_line(out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{UNDER_LABEL}{METHOD_LINE}")
}

/// The backtest of the estimates in the table outputs: its sentence after `label`, then its
/// details in parentheses under it, wrapped within the line width after `indent`.
pub fn write_backtest(out: &mut dyn Write, label: &str, indent: &str, b: &Backtest) -> io::Result<()> {
    writeln!(out, "{label}{}", backtest_sentence(b))?;
    for line in lines::wrap(indent, &format!("{indent} "), &format!("({})", backtest_details(b))) {
        writeln!(out, "{line}")?;
    }
    Ok(())
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
            style: stderr.style(),
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
                if let Some(line) = estimates.incidents.as_ref().and_then(incidents_line) {
                    writeln!(self.out, "  incidents: {line}")?;
                }
                write_estimate_line(self.out, comparison, estimates, self.estimated)
            }
            (Totals::Replay { .. }, Mode::Compare { .. }) => Ok(()),
        }
    }
}
