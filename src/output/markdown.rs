//! `simulate -o markdown`: the plan (or a plain replay's report) as GitHub-flavoured
//! Markdown, for a pull request comment (docs/estimates.md).
//!
//! Owns: the layout — a headline, the transitions table, retries/delay/compute, the
//! estimate, and at most [`MAX_ROWS`] changed jobs shared fairly between the transitions,
//! with the count of the rest; for a plain replay, outcomes, decisions per rule and by
//! kind, and the per-class table; Markdown's escaping (`text`, `code_span`), which the
//! reports of `tune` and `suggest` use too. Stable for diffs: no time, no path, nothing that depends
//! on the machine; the same input gives the same bytes. Must not: count (every number
//! comes from the replay's totals) or read anything.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::engine::job_report::plural;
use crate::replay::backtest::Backtest;
use crate::replay::compare::{Comparison, JobDiff};
use crate::replay::contention::{OfComparison, Side as ContentionSide};
use crate::replay::estimate::Estimate;
use crate::replay::sink::{Change, Estimates, Message, Needs, Sink, Totals};
use crate::replay::source::Progress;
use crate::replay::summary::Summary;

use super::groups::{class_rows, rule_rows, Listed, GROUPS};
use super::mode::{Baseline, Mode};
use super::stderr::Stderr;
use super::text::shown;
use super::words::{
    backtest_details, backtest_sentence, candidate_estimate_words, category_changes_words, collisions_words,
    comparison_sides, compute_recorded, contention_said, contention_words, estimate_words, expected_hours,
    expected_words, failed_expectations, hours_changes, incidents_line, overlap_change_words, plan_sentence,
    rate_words, recorded_replayed, runs_words, seconds_words, side_words, transition_note, with_errors,
    without_estimate, CLUSTER_BASELINE, CONTENTION_NOTE, CONTENTION_SHARDED, ESTIMATE_METHOD, PLAN_TITLE, RETRIES_ONLY,
};
use crate::replay::categorize::CategoryCounts;

/// Changed jobs listed at most.
pub const MAX_ROWS: usize = 50;

/// A changed job as the table shows it.
struct Row {
    diff: JobDiff,
    estimate: Option<Estimate>,
}

pub struct MarkdownSink<'a> {
    mode: Mode,
    out: &'a mut dyn Write,
    stderr: Stderr<'a>,
    listed: Listed<Row>,
}

impl<'a> MarkdownSink<'a> {
    pub fn new(mode: Mode, out: &'a mut dyn Write, stderr: Stderr<'a>) -> Self {
        MarkdownSink {
            mode,
            out,
            stderr,
            listed: Listed::default(),
        }
    }
}

impl Sink for MarkdownSink<'_> {
    fn needs(&self) -> Needs {
        Needs {
            breakdowns: true,
            ..Needs::default()
        }
    }

    fn progress(&mut self, at: Progress) {
        self.stderr.progress(at);
    }

    fn change(&mut self, c: &Change<'_>) -> io::Result<()> {
        // Enough of every group for any fair share of MAX_ROWS.
        self.listed.push(c.diff, MAX_ROWS, || Row {
            diff: c.diff.clone(),
            estimate: c.estimate().cloned(),
        });
        Ok(())
    }

    fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        self.stderr.message(m)
    }

    fn end(&mut self, totals: Totals<'_>) -> io::Result<()> {
        self.stderr.finish()?;
        let text = match totals {
            Totals::Compare {
                comparison, estimates, ..
            } => plan(comparison, estimates, &self.listed, self.mode),
            Totals::Replay { summary, estimates } => report(summary, estimates),
        };
        self.out.write_all(text.as_bytes())
    }
}

/// Text with Markdown's special characters escaped (a job id, a file name is input), its
/// control characters and line breaks [`shown`] (`\x0a`): one line that cannot open a block,
/// a span or an html tag.
pub(crate) fn text(s: &str) -> String {
    let s = shown(s);
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' | '`' | '*' | '_' | '|' | '<' | '>' | '[' | ']' | '#' | '~' | '!' | '&' => {
                out.push('\\');
                out.push(ch);
            }
            _ => out.push(ch),
        }
    }
    out
}

/// `s` as one code span, whatever it holds: its line breaks [`shown`], and fenced by one
/// more backtick than its longest run of them (a space inside when it starts or ends with
/// one), so that no backtick in a file name can end the span early. A code span shows `<`
/// as it is: no html.
pub(crate) fn code_span(s: &str) -> String {
    let s = shown(s);
    let (mut run, mut longest) = (0, 0);
    for ch in s.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// `**Backtest:** estimates were within … . Brier score … .`: the backtest in a report.
pub(crate) fn backtest_line(b: &Backtest) -> String {
    format!(
        "**Backtest:** {}. {}.",
        text(&backtest_sentence(b)),
        text(&backtest_details(b))
    )
}

/// `Estimates: …`: the estimates' method in full, for a report's footnote.
pub(crate) fn estimates_note() -> String {
    format!("Estimates: {}.", text(ESTIMATE_METHOD))
}

/// A name as code, safe inside a table cell.
fn code(s: &str) -> String {
    if s.is_empty() {
        return text(s);
    }
    // GFM splits a row at every `|` not escaped, inside a code span too.
    code_span(s).replace('|', "\\|")
}

/// The plan of a comparison.
fn plan(c: &Comparison, e: &Estimates, listed: &Listed<Row>, mode: Mode) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "## {PLAN_TITLE}\n");
    if let Mode::Compare {
        baseline: Baseline::Cluster,
        ..
    } = mode
    {
        let _ = writeln!(m, "Baseline: {CLUSTER_BASELINE}.\n");
    }
    let _ = writeln!(m, "**{}**\n", plan_sentence(c));
    let _ = writeln!(m, "| baseline → candidate | jobs |\n|---|---:|");
    for (f, t, n) in c.transitions() {
        let name = transition_note(f, t).map_or_else(String::new, |note| format!(" ({note})"));
        let _ = writeln!(m, "| {} → {}{name} | {n} |", f.as_str(), t.as_str());
    }
    let _ = writeln!(m, "| {RETRIES_ONLY} | {} |", c.retries_only);
    let _ = writeln!(m, "| unchanged | {} |\n", c.jobs - c.changed);
    let _ = writeln!(m, "| | added | removed |\n|---|---:|---:|");
    let _ = writeln!(m, "| retries | +{} | −{} |", c.retries_added, c.retries_removed);
    let _ = writeln!(m, "| delay | +{} | −{} |", c.delay_added, c.delay_removed);
    let _ = writeln!(
        m,
        "| compute (`runFor` of runs one side starts and the other does not) | +{} | −{} |",
        c.compute_added, c.compute_removed
    );
    for (name, added, removed) in hours_changes(c) {
        let _ = writeln!(m, "| {name}-hours | +{added} | −{removed} |");
    }
    m.push('\n');
    if let Some(record) = recorded_replayed(c) {
        let _ = writeln!(m, "**Record:** {record}.\n");
    }
    if let Some(e) = &c.explained {
        let _ = writeln!(m, "**Baseline:** {}.\n", e.words(code));
    }
    let failed_to_pending = c.failed_to_pending();
    let estimated = listed
        .groups
        .iter()
        .any(|(rows, _)| rows.iter().any(|r| r.estimate.is_some()));
    if failed_to_pending > 0 {
        let _ = writeln!(
            m,
            "**Estimate:** {}.\n",
            candidate_estimate_words(failed_to_pending, &e.asked)
        );
    }
    let p = &e.pending;
    if p.jobs > p.without_estimate {
        let _ = writeln!(m, "**Expected:** {}.\n", expected_words(p));
    }
    if let Some(b) = &e.backtest {
        let _ = writeln!(m, "{}\n", backtest_line(b));
    }
    if let Some(line) = e.incidents.as_ref().and_then(incidents_line) {
        let _ = writeln!(m, "**Incidents:** {}.\n", text(&line));
    }
    if let Some(s) = &c.contention {
        comparison_contention(&mut m, s);
    } else if c.contention_sharded {
        let _ = writeln!(m, "{}\n", contention_sharded());
    }
    if let Some(s) = &c.categories {
        for (side, counts) in [("baseline", &s.baseline), ("candidate", &s.candidate)] {
            categories(&mut m, counts, &format!("{side}: "));
        }
    }
    if c.errors > 0 {
        let _ = writeln!(m, "**Not compared:** {}.\n", with_errors(c.errors));
    }
    let shown = listed.fair(MAX_ROWS);
    let n_shown: usize = shown.iter().map(|g| g.len()).sum();
    if c.changed == 0 {
        let _ = writeln!(m, "No job changes.");
    } else {
        let _ = writeln!(m, "### Changed jobs ({} of {})\n", n_shown, c.changed);
        let _ = writeln!(
            m,
            "| job | baseline | candidate | transition | estimate (succeeds over the runs left) |\n|---|---|---|---|---|"
        );
        for (g, rows) in shown.iter().enumerate() {
            for r in *rows {
                let est = r
                    .estimate
                    .as_ref()
                    .map_or_else(String::new, |e| text(&estimate_words(e)));
                let _ = writeln!(
                    m,
                    "| {} | {} | {} | {} | {est} |",
                    code(&r.diff.job),
                    side_words(&r.diff.baseline),
                    side_words(&r.diff.candidate),
                    GROUPS[g]
                );
            }
        }
        let rest: Vec<String> = (0..GROUPS.len())
            .filter_map(|g| {
                let more = listed.total(g) - shown[g].len() as u64;
                (more > 0).then(|| format!("{more} {}", GROUPS[g]))
            })
            .collect();
        if !rest.is_empty() {
            let _ = writeln!(
                m,
                "\n… and {} more not listed ({}); `-o json` lists every one.",
                c.changed - n_shown as u64,
                rest.join(", ")
            );
        }
    }
    if failed_to_pending > 0 || estimated {
        let _ = writeln!(m, "\n<sub>{}</sub>", estimates_note());
    }
    m
}

/// The report of a plain replay.
/// A side's categorizer: its changes and collisions, then the collisions' warning.
fn categories(m: &mut String, c: &CategoryCounts, side: &str) {
    let _ = writeln!(
        m,
        "**Category changes** ({side}the executor's categorizer): {} · **collisions:** {}\n",
        text(&category_changes_words(c)),
        c.collisions
    );
    if c.collisions > 0 {
        let _ = writeln!(m, "> **Warning:** {side}{}\n", text(&collisions_words(c.collisions)));
    }
}

/// The contention section (docs/contention.md): each side's sentences, then a comparison's
/// change of the overlap.
fn contention(m: &mut String, sides: &[(&str, &ContentionSide)], changes: &[String]) -> bool {
    if !contention_said(sides.iter().map(|(_, s)| *s)) {
        return false;
    }
    // One blank line before the heading: what comes before it may end in one already.
    if !m.is_empty() && !m.ends_with("\n\n") {
        m.push('\n');
    }
    let _ = writeln!(m, "**Retries while others waited** ({}):\n", text(CONTENTION_NOTE));
    for (label, side) in sides {
        let _ = writeln!(m, "- {label}: {}", text(&contention_words(side).join("; ")));
    }
    for change in changes {
        let _ = writeln!(m, "- {}", text(change));
    }
    true
}

/// What a sharded run says where the contention section would be.
pub(crate) fn contention_sharded() -> String {
    format!("**Retries while others waited:** {}.", text(CONTENTION_SHARDED))
}

/// A comparison's contention section (`simulate --baseline`, `suggest`), then a blank line.
pub(crate) fn comparison_contention(m: &mut String, s: &OfComparison) {
    if contention(
        m,
        &comparison_sides(s),
        &overlap_change_words(&s.baseline, &s.candidate),
    ) {
        m.push('\n');
    }
}

fn report(s: &Summary, e: &Estimates) -> String {
    let mut m = String::new();
    let _ = writeln!(
        m,
        "## retryctl simulate: {} ({})\n",
        plural(s.jobs, "job", "jobs"),
        runs_words(s)
    );
    let _ = writeln!(m, "| outcome | jobs |\n|---|---:|");
    for (name, n) in [
        ("Succeeded", s.succeeded),
        ("Failed", s.failed),
        ("Cancelled", s.cancelled),
        ("Pending", s.pending),
    ] {
        let _ = writeln!(m, "| {name} | {n} |");
    }
    let _ = writeln!(
        m,
        "\n**Retries granted:** {} · **delay added:** {} · **compute:** {}",
        s.retries,
        s.total_delay,
        compute_recorded(s)
    );
    if let Some(c) = &s.contention {
        let _ = contention(&mut m, &[("recorded", &c.recorded), ("replayed", &c.replayed)], &[]);
    } else if s.contention_sharded {
        let _ = writeln!(m, "\n{}", contention_sharded());
    }
    if s.expectation_failed_jobs > 0 {
        let _ = writeln!(
            m,
            "\n**Expectations failed** in {}: {}",
            plural(s.expectation_failed_jobs, "job", "jobs"),
            failed_expectations(s, code)
        );
    } else {
        let _ = writeln!(m, "\n**Expectations:** all met");
    }
    if let Some(c) = &s.categories {
        m.push('\n');
        categories(&mut m, c, "");
    }
    if s.contradicted_jobs > 0 {
        let _ = writeln!(
            m,
            "\n**Contradictions:** {} (the history contradicts the decisions; reported on stderr)",
            plural(s.contradicted_jobs, "job", "jobs")
        );
    }
    if s.errors > 0 {
        let _ = writeln!(m, "\n**Not simulated:** {}", with_errors(s.errors));
    }
    let rules = rule_rows(s);
    if !rules.is_empty() {
        let _ = writeln!(
            m,
            "\n### Decisions per rule\n\n| policy/rule | retries granted | permanent failures |\n|---|---:|---:|"
        );
        for (rule, retries, failures) in &rules {
            let _ = writeln!(m, "| {} | {retries} | {failures} |", code(rule));
        }
    }
    let kinds: Vec<_> = s.decisions().collect();
    if !kinds.is_empty() {
        let _ = writeln!(m, "\n### Decisions by kind\n\n| decision | runs |\n|---|---:|");
        for (k, n) in kinds {
            let _ = writeln!(m, "| `{}` | {n} |", k.as_str());
        }
    }
    let (rows, hidden) = class_rows(e);
    if !rows.is_empty() {
        let _ = writeln!(
            m,
            "\n### By failure class\n\n| failure class | trials | next run succeeded | rate (any depth) | Pending jobs |\n|---|---:|---:|---|---:|"
        );
        for r in &rows {
            let rate = r
                .rate(e)
                .map_or_else(|| "no trials".to_string(), |x| text(&rate_words(&x)));
            let _ = writeln!(
                m,
                "| {} | {} | {} | {rate} | {} |",
                code(&r.name()),
                r.tally.trials,
                r.tally.successes,
                r.jobs.pending
            );
        }
        if hidden > 0 {
            let _ = writeln!(
                m,
                "\n… and {hidden} more classes with trials and no Pending job, not listed."
            );
        }
    }
    let a = &e.asked;
    if s.pending > a.without_estimate {
        let _ = writeln!(
            m,
            "\n**Estimate:** ≈ {:.1} ({:.1}–{:.1}) of {} Pending would succeed over the runs the policies have left{}, ≈ {} more run time{}.",
            a.expected,
            a.low,
            a.high,
            plural(s.pending, "job", "jobs"),
            without_estimate(a),
            seconds_words(a.expected_compute),
            expected_hours(a)
        );
    }
    if let Some(b) = &e.backtest {
        let _ = writeln!(m, "\n{}", backtest_line(b));
    }
    if let Some(line) = e.incidents.as_ref().and_then(incidents_line) {
        let _ = writeln!(m, "\n**Incidents:** {}.", text(&line));
    }
    if !rows.is_empty() || s.pending > a.without_estimate {
        let _ = writeln!(m, "\n<sub>{}</sub>", estimates_note());
    }
    m
}
