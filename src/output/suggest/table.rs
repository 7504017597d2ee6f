//! `suggest`'s table (the default `-o`): the engine, what was learned, the signatures, the
//! suspect nodes, the proposal, its comparison and backtest, the verdict and the commands to
//! run next.
//!
//! Owns: the table's layout and its lines no other format says. Must not: write the record,
//! the page or the report.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::engine::job_report::plural;
use crate::engine::EngineKind;
use crate::output::style::Style;
use crate::output::table::{write_comparison, write_method_line};
use crate::output::text::shown;
use crate::replay::compare::Comparison;
use crate::replay::sink::Estimates;
use crate::suggest::verdict::{Decision, Judgement};

use super::capture::{BacktestTail, Captured};
use super::report::Report;
use super::words::{
    as_written, backoff_words, busy_words, collisions_ran_words, decision_words, default_row, distinct_shorts,
    estimated, gpu_cell, incidents_words, merged_words, no_rules, rate_words, sensitive_words, short, today,
    window_words, TOP,
};

/// Incident windows the table lists (json lists every one).
const WINDOWS: usize = 10;

/// The table's first line: which engine decided, why (`why`, in words: `--engine`, the
/// baseline's dialect, the cluster's), and how to pick the other.
fn engine_line(engine: EngineKind, why: &str) -> String {
    let other = match engine {
        EngineKind::Upstream => "`--engine design` proposes for the design",
        EngineKind::Design => "`--engine upstream` proposes for today's Armada",
    };
    format!("Engine: {} ({why}); {other}.", engine.as_str())
}

pub(super) fn table(
    out: &mut dyn Write,
    style: Style,
    r: &Report<'_>,
    whole: &Captured,
    backtest: Option<&(Captured, BacktestTail)>,
    judgement: &Judgement,
) -> io::Result<()> {
    writeln!(out, "{}", engine_line(r.engine, &r.engine_why))?;
    learned_section(out, r)?;
    signatures_section(out, r)?;
    incidents_section(out, r)?;
    busy_section(out, r)?;
    suspects_section(out, r)?;
    proposal_section(out, r)?;
    comparison_section(out, style, r, whole)?;
    backtest_section(out, style, r, backtest)?;
    verdict_section(out, r, judgement)
}

/// What was learned from: the jobs (before `--backtest-at`), their failed runs, the
/// signatures.
fn learned_section(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let learned_from = match &r.backtest {
        Some(b) => format!(" submitted before {}", b.at),
        None => String::new(),
    };
    writeln!(
        out,
        "Learned from {}{learned_from}: {} failed runs, {}.",
        plural(r.jobs, "job", "jobs"),
        r.failed_runs,
        plural(r.signatures.len() as u64, "signature", "signatures")
    )?;
    writeln!(out)?;
    Ok(())
}

/// The signatures with most GPU-hours, a row each, the default's below them; then the
/// signatures left without a rule, and the collided retries that ran.
fn signatures_section(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    // Each signature's row, then the default's below them. With incident windows, the runs
    // each left out (RUNS keeps them); with collided retries, those (no trials).
    let in_incidents = r.incidents.is_some();
    let collided = r.signatures.iter().any(|(s, _)| s.collided > 0);
    let listed: Vec<_> = r
        .signatures
        .iter()
        .take(TOP)
        .map(|(s, v)| (*s, sensitive_words(r, s, v)))
        .chain(default_row(r))
        .collect();
    let texts = distinct_shorts(listed.iter().map(|(s, _)| s.text.as_str()), 48);
    let rows: Vec<Vec<String>> = listed
        .into_iter()
        .zip(texts)
        .map(|((s, proposed), text)| {
            let mut row = vec![text, s.failed_runs.to_string(), s.trials.trials.to_string()];
            if in_incidents {
                row.push(s.in_incidents.to_string());
            }
            if collided {
                row.push(s.collided.to_string());
            }
            row.extend([rate_words(s), gpu_cell(s), today(s), proposed]);
            row
        })
        .collect();
    let mut head = vec!["SIGNATURE", "RUNS", "TRIALS"];
    if in_incidents {
        head.push("IN INCIDENTS");
    }
    if collided {
        head.push("COLLIDED");
    }
    head.extend(["RETRY SUCCESS (95%)", "GPU-H", "TODAY", "PROPOSED"]);
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (k, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if k + 1 == cells.len() {
                s.push_str(c);
            } else {
                let _ = write!(s, "{c}{}  ", " ".repeat(w - c.chars().count()));
            }
        }
        s.trim_end().to_string()
    };
    writeln!(out, "{}", line(head.clone()))?;
    for row in &rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    if r.signatures.len() > TOP {
        writeln!(
            out,
            "(the {TOP} with most GPU-hours of {}; -o json lists every one)",
            r.signatures.len()
        )?;
    }
    for (s, why) in no_rules(r) {
        writeln!(out, "  no rule for {}: {}", short(&s.text, 60), shown(&why.to_string()))?;
    }
    if r.collisions_ran > 0 {
        for line in crate::output::lines::wrap("  note: ", "    ", &collisions_ran_words(r.collisions_ran)) {
            writeln!(out, "{line}")?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// The incident windows, their runs left out of the learning (the first [`WINDOWS`]), and
/// the Retry rules whose first delay is shorter than the median window.
fn incidents_section(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(i) = &r.incidents else {
        return Ok(());
    };
    for line in crate::output::lines::wrap("Incidents: ", "  ", &incidents_words(i.found)) {
        writeln!(out, "{line}")?;
    }
    for (w, l) in i.found.windows.iter().take(WINDOWS) {
        for line in crate::output::lines::wrap("  ", "    ", &window_words(w, l)) {
            writeln!(out, "{line}")?;
        }
    }
    if i.found.windows.len() > WINDOWS {
        writeln!(
            out,
            "  … and {} more (-o json lists every one)",
            plural((i.found.windows.len() - WINDOWS) as u64, "window", "windows")
        )?;
    }
    if let Some(words) = i.found.median().and_then(|m| backoff_words(&i.short_backoff, m)) {
        for line in crate::output::lines::wrap("  ", "    ", &words) {
            writeln!(out, "{line}")?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// The bursts and surges, learned from (the first [`WINDOWS`]).
fn busy_section(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    if r.busy.is_empty() {
        return Ok(());
    }
    writeln!(out, "Busy, learned from:")?;
    for (w, k, l) in r.busy.iter().take(WINDOWS) {
        for line in crate::output::lines::wrap("  ", "    ", &busy_words(w, k, l)) {
            writeln!(out, "{line}")?;
        }
    }
    if r.busy.len() > WINDOWS {
        writeln!(
            out,
            "  … and {} more (-o json lists every one)",
            plural((r.busy.len() - WINDOWS) as u64, "window", "windows")
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The suspect nodes, or why there are none.
fn suspects_section(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    if !r.nodes_named {
        writeln!(out, "Suspect nodes: none (no run names a node).")?;
    } else if r.suspects.is_empty() {
        writeln!(out, "Suspect nodes: none (no node's failure share is an outlier).")?;
    } else {
        writeln!(out, "Suspect nodes (failure share far above the other nodes'):")?;
        for s in r.suspects.iter().take(TOP) {
            let sigs: Vec<String> = s
                .signatures
                .iter()
                .map(|(t, n)| format!("{} ×{n}", short(t, 40)))
                .collect();
            writeln!(
                out,
                "  {}  {} of {} runs failed (p = {:.1e})  {}",
                shown(&s.node),
                s.failed,
                s.runs,
                s.tail,
                sigs.join(", ")
            )?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// The proposal: its policy, dialect and rules, its default; upstream, its one
/// `retryLimit`, the categories merged and the actions changed cluster-wide.
fn proposal_section(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    // The policy's `retryLimit` as `-o policy` writes it, in both dialects.
    let limit = match r.policy_retry_limit {
        Some(l) => format!("retryLimit {l}"),
        None => "retryLimit unset: each rule's own, else the global limit".to_string(),
    };
    let dialect = match r.engine {
        EngineKind::Design => format!("the design dialect, {limit}"),
        EngineKind::Upstream => format!("today's Armada: a categorizer and a v1beta1 policy, {limit}"),
    };
    // The rules the document writes: upstream, signatures proposing alike on one category
    // share one.
    let (rules, retry) = match r.upstream {
        Some(u) => (
            u.rule_actions.len(),
            u.rule_actions
                .iter()
                .filter(|a| **a == crate::model::Action::Retry)
                .count(),
        ),
        None => (r.rules.len(), r.rules.iter().filter(|p| p.limit.is_some()).count()),
    };
    // A rule of today's a proposed one shadows is not written (its comment says so).
    let kept = match r.kept.iter().filter(|k| !k.shadowed).count() {
        0 => String::new(),
        n => format!(", then {} kept from today", plural(n as u64, "rule", "rules")),
    };
    // One line when it fits, else the policy, its rules and its default a line each.
    let mut parts = vec![
        format!("policy `{}` ({dialect}),", r.name),
        format!(
            "{} of its own ({retry} Retry, {} Fail){kept}{}",
            plural(rules as u64, "rule", "rules"),
            rules - retry,
            if r.default.changes() { ";" } else { "." }
        ),
    ];
    if r.default.changes() {
        parts.push(format!(
            "default {} (today's: {}).",
            decision_words(as_written(r.default.proposed(), r.upstream)),
            decision_words(r.default.today)
        ));
    }
    for line in crate::output::lines::list("Proposal: ", &parts, " ", "  ") {
        writeln!(out, "{line}")?;
    }
    if let Some(u) = r.upstream {
        if let Some(by) = &u.cut_by {
            writeln!(
                out,
                "  the one retryLimit stays today's {}: a higher one would retry `{by}` (kept from today) further; cut: {}",
                u.written_retry_limit,
                u.cut.iter().map(|s| short(s, 40)).collect::<Vec<_>>().join(", ")
            )?;
        }
        if !u.raises.is_empty() {
            writeln!(
                out,
                "  the one retryLimit raises {}: {}",
                plural(u.raises.len() as u64, "signature", "signatures"),
                u.raises.iter().map(|s| short(s, 40)).collect::<Vec<_>>().join(", ")
            )?;
        }
        for g in &u.merged {
            for line in crate::output::lines::wrap("  ", "    ", &merged_words(g)) {
                writeln!(out, "{line}")?;
            }
        }
        for a in &u.action_changes {
            writeln!(out, "  cluster-wide: {}", shown(&a.words()))?;
        }
    }
    Ok(())
}

/// The proposal against the baseline on the whole history, each queue it changes, the
/// estimates.
fn comparison_section(out: &mut dyn Write, style: Style, r: &Report<'_>, whole: &Captured) -> io::Result<()> {
    writeln!(out, "Against the baseline on the same history:")?;
    write_comparison(out, style, &whole.comparison)?;
    for q in r.queues.iter().filter(|q| q.changed > 0) {
        writeln!(out, "  {}", shown(&q.words()))?;
    }
    if let Some(e) = &whole.estimates {
        estimate_lines(out, &whole.comparison, e)?;
    }
    Ok(())
}

/// With `--backtest-at`: the comparison on the later jobs, its false kills and hours saved.
fn backtest_section(
    out: &mut dyn Write,
    style: Style,
    r: &Report<'_>,
    backtest: Option<&(Captured, BacktestTail)>,
) -> io::Result<()> {
    if let (Some(b), Some((c, t))) = (&r.backtest, backtest) {
        writeln!(out)?;
        writeln!(
            out,
            "Backtest: learned from the {} submitted before {}, judged on the {} at or after it:",
            plural(b.train_jobs, "job", "jobs"),
            b.at,
            plural(b.test_jobs, "job", "jobs")
        )?;
        write_comparison(out, style, &c.comparison)?;
        writeln!(
            out,
            "  false kills: {} (Succeeded under the baseline, not under the proposal){}",
            t.false_kills,
            if t.false_kill_jobs.is_empty() {
                String::new()
            } else {
                let jobs: Vec<_> = t.false_kill_jobs.iter().map(|j| shown(j)).collect();
                format!(": {}", jobs.join(", "))
            }
        )?;
        writeln!(out, "  GPU-hours saved: {:.1}", t.gpu_hours_saved)?;
        if let Some(w) = &t.estimates_words {
            writeln!(out, "  estimates: {w}")?;
        }
    }
    Ok(())
}

/// The verdict, and the commands to run next.
fn verdict_section(out: &mut dyn Write, r: &Report<'_>, judgement: &Judgement) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "Verdict: {}", judgement.line())?;
    // The proposal is worth writing only when it is worth adopting, and its limits worth
    // searching only when it is not rejected.
    if judgement.decision == Decision::Adopt {
        writeln!(out, "Write the proposal:  {}", shown(&r.commands.write))?;
    }
    if let (Some(t), false) = (&r.commands.tune, judgement.decision == Decision::Reject) {
        writeln!(out, "Search its limits:   {}", shown(t))?;
    }
    Ok(())
}

/// The estimates of the Pending jobs, in two lines, then their method in the one line every
/// table output says it with (once: the backtest's plan says no estimates).
fn estimate_lines(out: &mut dyn Write, c: &Comparison, e: &Estimates) -> io::Result<()> {
    if let Some(line) = estimated(c, e) {
        writeln!(out, "  estimated: {line}")?;
        write_method_line(out)?;
    }
    Ok(())
}
