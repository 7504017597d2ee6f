//! `simulate -o html`: one self-contained page to share the plan of a comparison (or a
//! plain replay's report) with people who will not run the terminal (docs/estimates.md).
//!
//! Owns: the page — inline CSS and SVG, nothing fetched, no JavaScript (it reads the same
//! with scripts off and prints): the headline numbers, a chart of the transitions,
//! retries/delay/compute added and removed, the breakdowns by failure class and by rule,
//! and the changed jobs per transition, each with a timeline of its runs under both sides.
//! A plain replay gets outcomes, decisions per rule and by kind, and the per-class table.
//! Also html's escaping (`esc`), which the pages of `tune` and `suggest` use too.
//!
//! Bounded: at most [`ROWS_PER_GROUP`] changed jobs per transition and [`ROW_BYTES`] of
//! rows in all are kept (rendered as they come, in input order); the page says how many
//! it lists of how many. Whatever the history, the page stays under 5 MiB (rows ≤ 3 MiB,
//! the per-class table ≤ 1,000 classes, the rule table as many rows as the policies have
//! rules). Must not: count (every number comes from the replay's totals) or read anything.

use crate::diag::thousands as num;
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::engine::job_report::plural;
use crate::model::failure_history::{Final, Outcome};
use crate::replay::backtest::Backtest;
use crate::replay::compare::{Comparison, JobDiff, Step, Steps};
use crate::replay::contention::{OfComparison, Side as ContentionSide};
use crate::replay::estimate::{Estimate, FailureClass, Rate};
use crate::replay::sink::{Change, Estimates, Message, Needs, SideSummaries, Sink, Totals};
use crate::replay::source::Progress;
use crate::replay::summary::Summary;

use super::groups::{class_rows, rule_rows, Listed, GROUPS};
use super::mode::{Baseline, Mode};
use super::stderr::Stderr;
use super::text::shown_lines;
use super::words::{
    backtest_details, backtest_sentence, category_changes_words, collisions_words, comparison_sides, compute_recorded,
    contention_said, contention_words, estimate_shares, expected_hours, failed_expectations, hours_changes,
    incidents_line, overlap_change_words, plan_sentence, recorded_replayed, runs_words, seconds_words, shares,
    side_words, with_errors, CLUSTER_BASELINE, CONTENTION_NOTE, CONTENTION_SHARDED, ESTIMATE_METHOD, PAST_THE_RECORD,
    PLAN_TITLE, RETRIES_ONLY,
};
use crate::replay::categorize::CategoryCounts;

/// Changed jobs listed per transition at most.
pub const ROWS_PER_GROUP: usize = 500;

/// Bytes of changed-job rows kept at most (the rest are counted, not listed).
pub const ROW_BYTES: usize = 3 << 20;

/// Each group as the page names it, and its colour class.
const GROUP_NAMES: [(&str, &str); 5] = [
    ("rescued", "Failed → Succeeded"),
    ("lost", "Succeeded → Failed"),
    ("→ Pending", PAST_THE_RECORD),
    ("other", "another change of final state"),
    ("retries only", RETRIES_ONLY),
];

pub struct HtmlSink<'a> {
    mode: Mode,
    out: &'a mut dyn Write,
    stderr: Stderr<'a>,
    /// Rendered rows per group.
    listed: Listed<String>,
    bytes: usize,
    estimated: bool,
}

impl<'a> HtmlSink<'a> {
    pub fn new(mode: Mode, out: &'a mut dyn Write, stderr: Stderr<'a>) -> Self {
        HtmlSink {
            mode,
            out,
            stderr,
            listed: Listed::default(),
            bytes: 0,
            estimated: false,
        }
    }
}

impl Sink for HtmlSink<'_> {
    fn needs(&self) -> Needs {
        Needs {
            breakdowns: true,
            steps: matches!(self.mode, Mode::Compare { .. }),
            ..Needs::default()
        }
    }

    fn progress(&mut self, at: Progress) {
        self.stderr.progress(at);
    }

    fn change(&mut self, c: &Change<'_>) -> io::Result<()> {
        self.estimated |= c.estimate().is_some();
        let cap = if self.bytes < ROW_BYTES { ROWS_PER_GROUP } else { 0 };
        let mut size = 0;
        self.listed.push(c.diff, cap, || {
            let row = job_row(c);
            size = row.len();
            row
        });
        self.bytes += size;
        Ok(())
    }

    fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        self.stderr.message(m)
    }

    fn end(&mut self, totals: Totals<'_>) -> io::Result<()> {
        self.stderr.finish()?;
        let page = match totals {
            Totals::Compare {
                comparison,
                estimates,
                sides,
            } => {
                let cluster = matches!(
                    self.mode,
                    Mode::Compare {
                        baseline: Baseline::Cluster,
                        ..
                    }
                );
                plan_page(comparison, estimates, sides, &self.listed, self.estimated, cluster)
            }
            Totals::Replay { summary, estimates } => replay_page(summary, estimates),
        };
        self.out.write_all(page.as_bytes())
    }
}

/// `1 job`, `1,234 jobs`.
fn jobs(n: u64) -> String {
    if n == 1 {
        "1 job".to_string()
    } else {
        format!("{} jobs", num(n))
    }
}

/// Text for HTML (element content and quoted attribute values).
pub(crate) fn esc(s: &str) -> String {
    // Control characters as escapes first (`\x1b`): a page is read in a browser, its source
    // in a terminal.
    let s = shown_lines(s);
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

const STYLE: &str = r#"
:root{--fg:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;
--rescued:#1f9d55;--lost:#d64545;--pending:#d9822b;--other:#7b8794;--retries:#9aa5b1;--retry:#3f83f8;--requeue:#a4cafe}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1120px;margin:0 auto;padding:28px 24px 48px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:17px;margin:0 0 12px}
h3{font-size:14px;margin:0}
.sub{color:var(--muted);margin:0 0 20px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:18px 20px;margin:0 0 18px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;background:none;border:0;padding:0}
.card{background:var(--card);border:1px solid var(--line);border-top:4px solid var(--other);border-radius:8px;padding:12px 14px}
.card b{display:block;font-size:28px;line-height:1.1}
.card span{font-weight:600}
.card small{display:block;color:var(--muted)}
.c-rescued{border-top-color:var(--rescued)}.c-lost{border-top-color:var(--lost)}.c-pending{border-top-color:var(--pending)}
.c-other{border-top-color:var(--other)}.c-plain{border-top-color:var(--line)}
.plan{font-weight:600;font-size:15px;margin:0 0 18px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:5px 10px 5px 0;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.02em}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.add{color:var(--lost)}.rem{color:var(--rescued)}
.est{font-style:italic;color:#8a4b08}
.est small{font-style:normal;color:var(--muted)}
code{font:12px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--bg);padding:1px 4px;border-radius:3px}
details{margin:0 0 10px}
summary{cursor:pointer;padding:6px 0;font-weight:600}
summary .cnt{color:var(--muted);font-weight:400}
.jobs td{font-size:13px}
.jobs code{word-break:break-all}
tr:has(+ tr.more) td{border-bottom:0}
tr.more td{padding-top:0}
.tl{line-height:14px}
.tl div{min-height:15px}
.tl em{display:inline-block;width:30px;font-style:normal;font-size:11px;color:var(--muted)}
.tl i,.legend i{display:inline-block;width:11px;height:11px;margin-right:2px;border-radius:2px;vertical-align:-1px}
i.R{background:var(--retry)}i.Q{background:var(--requeue)}i.S{background:var(--rescued)}i.F{background:var(--lost)}
i.C{background:var(--other)}i.N{border:1px dashed #cbd2d9}
i.P{background:repeating-linear-gradient(135deg,var(--pending) 0 2px,#fff 2px 4px);border:1px solid var(--pending)}
i.G{width:auto;font-style:normal;font-size:10px;color:var(--muted);padding:0 2px}
.legend{color:var(--muted);margin:0 0 12px}
.legend span{white-space:nowrap}
.legend i{margin:0 4px 0 10px}
.status{margin:0 0 18px}
.status p{margin:0 0 4px}
.bar{display:inline-block;height:9px;background:var(--retry);border-radius:2px;vertical-align:middle;margin-right:6px}
footer{color:var(--muted);font-size:12px}
.note{color:var(--muted);font-size:12px;margin:8px 0 0}
@media print{body{background:#fff}section{break-inside:avoid}}
"#;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style></head>\n<body><main>\n{body}</main></body></html>\n",
        esc(title)
    )
}

fn card(class: &str, value: &str, name: &str, note: &str) -> String {
    format!(
        "<div class=\"card {class}\"><b>{value}</b><span>{}</span><small>{note}</small></div>\n",
        esc(name)
    )
}

/// Horizontal bars with a label and a count each, scaled to the largest.
fn bars(rows: &[(&str, u64, &str)], label: &str) -> String {
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let (row_h, label_w, bar_w) = (30, 230, 560);
    let h = row_h * rows.len();
    let mut s = format!(
        "<svg role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {} {h}\" width=\"100%\" style=\"max-width:{}px\" font-size=\"13\">",
        esc(label),
        label_w + bar_w + 90,
        label_w + bar_w + 90
    );
    for (i, (name, n, color)) in rows.iter().enumerate() {
        let y = i * row_h;
        let w = if *n == 0 {
            0.0
        } else {
            (*n as f64 / max as f64 * bar_w as f64).max(2.0)
        };
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\" fill=\"#1f2933\">{}</text><rect x=\"{label_w}\" y=\"{}\" width=\"{bar_w}\" height=\"18\" rx=\"3\" fill=\"#f0f2f5\"/><rect x=\"{label_w}\" y=\"{}\" width=\"{w:.1}\" height=\"18\" rx=\"3\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\" fill=\"#1f2933\" font-weight=\"600\">{}</text>",
            y + 18,
            esc(name),
            y + 4,
            y + 4,
            label_w + bar_w + 10,
            y + 18,
            num(*n),
        );
    }
    s.push_str("</svg>");
    s
}

fn estimate_cell(e: Option<&Estimate>, pending: bool) -> String {
    match e {
        Some(e) => {
            let (share, interval) = estimate_shares(e);
            let left = if e.runs_left == 1 {
                "1 run left".to_string()
            } else {
                format!("{} runs left, next {:.0}%", e.runs_left, e.p_next_run * 100.0)
            };
            format!(
                "<span class=\"est\">{share} <small>{interval} · {left} · {} · {} trials</small></span>",
                esc(&e.basis.to_string()),
                num(e.trials)
            )
        }
        None if pending => "<small>no trials</small>".to_string(),
        None => String::new(),
    }
}

/// A class's rate at any depth, as the per-class table shows it.
fn rate_cell(r: Option<&Rate>) -> String {
    match r {
        Some(r) => {
            let (share, interval) = shares(r.p, r.low, r.high);
            format!(
                "<span class=\"est\">{share} <small>{interval} · {} · {} trials</small></span>",
                esc(&r.basis.to_string()),
                num(r.trials)
            )
        }
        None => "<small>no trials</small>".to_string(),
    }
}

fn step_class(s: Step) -> (&'static str, &'static str) {
    match s {
        Step::NotStarted => ("N", "not started"),
        Step::Retried => ("R", "retried"),
        Step::Requeued => ("Q", "requeued (no retry used)"),
        Step::Succeeded => ("S", "succeeded"),
        Step::Failed => ("F", "failed for good"),
        Step::Cancelled => ("C", "cancelled"),
    }
}

fn recorded(outcome: Outcome, class: Option<&FailureClass>) -> String {
    match (outcome, class) {
        (Outcome::Failed, Some(c)) => c.to_string(),
        (o, _) => o.as_str().to_string(),
    }
}

/// Two rows of boxes, one per recorded run: what each side does with it, and where the
/// side ends (a striped box: the run it would start past the end of the record).
fn timeline(steps: &Steps, d: &JobDiff) -> String {
    let mut s = String::new();
    for (name, side, pick) in [
        (
            "base",
            &d.baseline,
            (|r: &crate::replay::compare::RunStep| r.baseline) as fn(&_) -> Step,
        ),
        ("cand", &d.candidate, |r| r.candidate),
    ] {
        let _ = write!(s, "<div><em>{name}</em>");
        for (i, r) in steps.runs.iter().enumerate() {
            if let Some((at, n)) = steps.gap {
                if at == i {
                    let _ = write!(s, "<i class=\"G\" title=\"{n} runs not shown\">+{n}</i>");
                }
            }
            let (c, what) = step_class(pick(r));
            let _ = write!(
                s,
                "<i class=\"{c}\" title=\"run {} · {} · {what}\"></i>",
                r.run,
                esc(&recorded(r.outcome, r.class.as_ref()))
            );
        }
        if side.final_state == Final::Pending {
            s.push_str("<i class=\"P\" title=\"the next run: past the end of the record\"></i>");
        }
        s.push_str("</div>");
    }
    s
}

/// Runs a timeline shows in the row's own cell; a longer one gets a row of its own, the
/// table's width, so that each side stays on one line.
const INLINE_RUNS: usize = 8;

/// One changed job as a table row.
fn job_row(c: &Change<'_>) -> String {
    let d = c.diff;
    let pending = d.pending();
    let class = c
        .class
        .map_or_else(|| "(no failed run)".to_string(), ToString::to_string);
    let (cell, below) = match c.steps {
        Some(s) if s.runs.len() > INLINE_RUNS => (
            "<td class=\"tl\"><small>below</small></td>".to_string(),
            format!(
                "<tr class=\"more\"><td></td><td colspan=\"5\" class=\"tl\">{}</td></tr>\n",
                timeline(s, d)
            ),
        ),
        Some(s) => (format!("<td class=\"tl\">{}</td>", timeline(s, d)), String::new()),
        None => ("<td></td>".to_string(), String::new()),
    };
    format!(
        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{cell}</tr>\n{below}",
        esc(&d.job),
        esc(&class),
        side_words(&d.baseline),
        side_words(&d.candidate),
        estimate_cell(c.estimate(), pending)
    )
}

const LEGEND: &str = "<p class=\"legend\">Runs: one box per recorded run, for the baseline (base) and the candidate (cand): <span><i class=\"R\"></i>retried</span> <span><i class=\"Q\"></i>requeued</span> <span><i class=\"S\"></i>succeeded</span> <span><i class=\"F\"></i>failed for good</span> <span><i class=\"C\"></i>cancelled</span> <span><i class=\"N\"></i>not started</span> <span><i class=\"P\"></i>would start another run, past the end of the record</span>. Hover a box for the run and its failure.</p>\n";

fn plan_page(
    c: &Comparison,
    e: &Estimates,
    sides: Option<&SideSummaries>,
    listed: &Listed<String>,
    estimated: bool,
    cluster: bool,
) -> String {
    let mut b = String::new();
    plan_header(&mut b, c, cluster);
    let failed_to_pending = plan_cards(&mut b, c, e);
    transitions_section(&mut b, c);
    costs_section(&mut b, c, e);
    if let Some(s) = &c.contention {
        comparison_contention(&mut b, s);
    } else if c.contention_sharded {
        contention_sharded(&mut b);
    }
    if let Some(bt) = &e.backtest {
        backtest_section(&mut b, bt);
    }
    class_section(&mut b, e, true);
    if let Some(sides) = sides {
        rule_section(&mut b, sides);
    }
    changed_jobs_section(&mut b, c, listed);
    footer(&mut b, estimated || failed_to_pending > 0 || e.pending.jobs > 0, true);
    page(PLAN_TITLE, &b)
}

/// The plan page's title and what was replayed.
fn plan_header(b: &mut String, c: &Comparison, cluster: bool) {
    b.push_str("<header><h1>What the candidate policies change</h1>");
    if cluster {
        let _ = writeln!(
            b,
            "<p class=\"sub\">{} replayed under the baseline, {CLUSTER_BASELINE}, and the candidate policies, by <code>retryctl simulate --baseline-from-cluster</code></p></header>",
            jobs(c.jobs)
        );
    } else {
        let _ = writeln!(
            b,
            "<p class=\"sub\">{} replayed under the baseline and the candidate policies, by <code>retryctl simulate --baseline</code></p></header>",
            jobs(c.jobs)
        );
    }
}

/// The cards of the plan (rescued, lost, → Pending, other, unchanged), its sentence, the
/// category changes and the jobs not compared; returns the jobs Failed → Pending.
fn plan_cards(b: &mut String, c: &Comparison, e: &Estimates) -> u64 {
    let failed_to_pending = c.failed_to_pending();
    let pending_note = if failed_to_pending > 0 {
        format!(
            "≈ {:.1} of {failed_to_pending} Failed → Pending would succeed over the runs left (estimate)",
            e.asked.expected
        )
    } else {
        "would retry past the end of the record".to_string()
    };
    b.push_str("<section class=\"cards\">\n");
    b.push_str(&card("c-rescued", &num(c.rescued), "rescued", "Failed → Succeeded"));
    b.push_str(&card("c-lost", &num(c.lost), "lost", "Succeeded → Failed"));
    b.push_str(&card("c-pending", &num(c.to_pending), "→ Pending", &esc(&pending_note)));
    b.push_str(&card(
        "c-other",
        &num(c.other + c.retries_only),
        "other",
        &format!("{} other final state, {} retries only", c.other, c.retries_only),
    ));
    b.push_str(&card(
        "c-plain",
        &num(c.jobs - c.changed),
        "unchanged",
        &format!("of {}", jobs(c.jobs)),
    ));
    b.push_str("</section>\n");
    let _ = writeln!(b, "<p class=\"plan\">{}</p>", esc(&plan_sentence(c)));
    if let Some(s) = &c.categories {
        categories(b, &s.baseline, "Baseline: ");
        categories(b, &s.candidate, "Candidate: ");
    }
    if c.errors > 0 {
        let _ = writeln!(b, "<p class=\"plan add\">Not compared: {}.</p>", with_errors(c.errors));
    }
    failed_to_pending
}

/// The changed jobs by transition, and by final state.
fn transitions_section(b: &mut String, c: &Comparison) {
    b.push_str("<section><h2>Transitions (baseline → candidate)</h2>\n");
    b.push_str(&bars(
        &[
            ("rescued (Failed → Succeeded)", c.rescued, "#1f9d55"),
            ("lost (Succeeded → Failed)", c.lost, "#d64545"),
            ("→ Pending", c.to_pending, "#d9822b"),
            ("other final state", c.other, "#7b8794"),
            ("same outcome, other retries", c.retries_only, "#9aa5b1"),
        ],
        "changed jobs by transition",
    ));
    let states: Vec<String> = c
        .transitions()
        .map(|(f, t, n)| format!("{} → {}: {}", f.as_str(), t.as_str(), num(n)))
        .collect();
    if !states.is_empty() {
        let _ = writeln!(b, "<p class=\"note\">By final state: {}.</p>", esc(&states.join(" · ")));
    }
    b.push_str("</section>\n");
}

/// Retries, delay and compute added and removed, the record, the runs past its end, and what
/// the baseline explains.
fn costs_section(b: &mut String, c: &Comparison, e: &Estimates) {
    b.push_str("<section><h2>Retries, delay and compute</h2><table><tr><th></th><th class=\"n\">added</th><th class=\"n\">removed</th></tr>\n");
    let _ = writeln!(
        b,
        "<tr><td>retries</td><td class=\"n add\">+{}</td><td class=\"n rem\">−{}</td></tr>",
        num(c.retries_added),
        num(c.retries_removed)
    );
    let _ = writeln!(
        b,
        "<tr><td>delay before retries</td><td class=\"n add\">+{}</td><td class=\"n rem\">−{}</td></tr>",
        c.delay_added, c.delay_removed
    );
    let _ = writeln!(
        b,
        "<tr><td>compute: <code>runFor</code> of the runs one side starts and the other does not</td><td class=\"n add\">+{}</td><td class=\"n rem\">−{}</td></tr>",
        c.compute_added, c.compute_removed
    );
    for (name, added, removed) in hours_changes(c) {
        let _ = writeln!(
            b,
            "<tr><td>{name}-hours of those runs</td><td class=\"n add\">+{added}</td><td class=\"n rem\">−{removed}</td></tr>"
        );
    }
    let p = &e.pending;
    b.push_str("</table>");
    if let Some(record) = recorded_replayed(c) {
        let _ = writeln!(b, "<p class=\"note\">Record: {}.</p>", esc(&record));
    }
    if p.jobs > 0 {
        let _ = writeln!(
            b,
            "<p class=\"note\">Runs past the end of the record: <span class=\"est\">≈ {}{}</span> more run time expected for the {} Pending in the candidate (estimate{}).</p>",
            seconds_words(p.expected_compute),
            esc(&expected_hours(p)),
            plural(p.jobs, "job", "jobs"),
            if p.without_estimate > 0 {
                format!("; {} without one: no trials", num(p.without_estimate))
            } else {
                String::new()
            }
        );
    }
    if c.without_resources > 0 && (c.gpu_added | c.gpu_removed | c.cpu_added | c.cpu_removed) > 0 {
        let _ = writeln!(
            b,
            "<p class=\"note\">{} with compute counted request neither CPU nor GPU: their hours count 0.</p>",
            plural(c.without_resources, "job", "jobs")
        );
    }
    if let Some(x) = &c.explained {
        let _ = writeln!(
            b,
            "<p class=\"note\">Baseline: {}.</p>",
            x.words(|id| format!("<code>{}</code>", esc(id)))
        );
    }
    if let Some(line) = e.incidents.as_ref().and_then(incidents_line) {
        let _ = writeln!(b, "<p class=\"note\">Incidents: {}.</p>", esc(&line));
    }
    b.push_str("</section>\n");
}

/// The changed jobs, group by group (at most the rows listed, and how many more).
fn changed_jobs_section(b: &mut String, c: &Comparison, listed: &Listed<String>) {
    b.push_str("<section><h2>Changed jobs</h2>\n");
    if c.changed == 0 {
        b.push_str("<p>No job changes.</p>");
    } else {
        b.push_str(LEGEND);
    }
    for (g, (rows, more)) in listed.groups.iter().enumerate() {
        let total = listed.total(g);
        if total == 0 {
            continue;
        }
        let (name, what) = GROUP_NAMES[g];
        let shown = if *more > 0 {
            format!("{} listed of {}", num(rows.len() as u64), num(total))
        } else {
            format!("{}, all listed", num(total))
        };
        let _ = writeln!(
            b,
            "<details open><summary>{} <span class=\"cnt\">({}) · {shown}</span></summary>",
            esc(name),
            esc(what)
        );
        // The same column widths in every group, so that the groups line up.
        b.push_str("<table class=\"jobs\"><colgroup><col style=\"width:11%\"><col style=\"width:15%\"><col style=\"width:19%\"><col style=\"width:19%\"><col style=\"width:22%\"><col style=\"width:14%\"></colgroup>\n<tr><th>job</th><th>failure class</th><th>baseline</th><th>candidate</th><th>succeeds over the runs left (estimate)</th><th>runs</th></tr>\n");
        for r in rows {
            b.push_str(r);
        }
        b.push_str("</table>");
        if *more > 0 {
            let _ = write!(
                b,
                "<p class=\"note\">… and {} more {} not listed (<code>-o json</code> lists every one).</p>",
                num(*more),
                GROUPS[g]
            );
        }
        b.push_str("</details>\n");
    }
    b.push_str("</section>\n");
}

/// The per-class table: trials and the estimate of each class, and its jobs.
fn class_section(b: &mut String, e: &Estimates, compare: bool) {
    let (rows, hidden) = class_rows(e);
    b.push_str("<section><h2>By failure class</h2>\n");
    if rows.is_empty() {
        b.push_str("<p>No failed run in the history.</p></section>\n");
        return;
    }
    b.push_str("<table><tr><th>failure class</th>");
    if compare {
        b.push_str("<th class=\"n\">rescued</th><th class=\"n\">lost</th><th class=\"n\">→ Pending</th><th class=\"n\">other</th>");
    } else {
        b.push_str("<th class=\"n\">Pending jobs</th>");
    }
    b.push_str(
        "<th class=\"n\">trials</th><th class=\"n\">next run succeeded</th><th>rate, any depth (estimate)</th></tr>\n",
    );
    for r in &rows {
        let _ = write!(b, "<tr><td><code>{}</code></td>", esc(&r.name()));
        let j = &r.jobs;
        if compare {
            let _ = write!(
                b,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                num(j.rescued),
                num(j.lost),
                num(j.to_pending),
                num(j.other + j.retries_only)
            );
        } else {
            let _ = write!(b, "<td class=\"n\">{}</td>", num(j.pending));
        }
        let _ = writeln!(
            b,
            "<td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            num(r.tally.trials),
            num(r.tally.successes),
            rate_cell(r.rate(e).as_ref())
        );
    }
    b.push_str("</table>");
    if hidden > 0 {
        let _ = write!(
            b,
            "<p class=\"note\">… and {} more classes with trials and no changed or Pending job, not listed.</p>",
            num(hidden as u64)
        );
    }
    b.push_str("<p class=\"note\">A trial: a failed run followed by another run of the same job; a success when that run succeeded (a returned lease is not). A job's class is its last failed run's.</p></section>\n");
}

/// Retries granted and permanent failures per rule, on each side.
fn rule_section(b: &mut String, s: &SideSummaries) {
    let (rb, rc) = (s.baseline.retries_by_rule(), s.candidate.retries_by_rule());
    let (fb, fc) = (s.baseline.failures_by_rule(), s.candidate.failures_by_rule());
    let mut keys: Vec<&String> = rb.keys().chain(rc.keys()).chain(fb.keys()).chain(fc.keys()).collect();
    keys.sort();
    keys.dedup();
    b.push_str("<section><h2>By rule</h2>\n");
    if keys.is_empty() {
        b.push_str("<p>No rule decided any run.</p></section>\n");
        return;
    }
    b.push_str("<table><tr><th>policy/rule</th><th class=\"n\">retries granted: baseline</th><th class=\"n\">candidate</th><th class=\"n\">change</th><th class=\"n\">permanent failures: baseline</th><th class=\"n\">candidate</th><th class=\"n\">change</th></tr>\n");
    let get = |m: &std::collections::BTreeMap<String, u64>, k: &str| m.get(k).copied().unwrap_or(0);
    for k in keys {
        let (r0, r1, f0, f1) = (get(&rb, k), get(&rc, k), get(&fb, k), get(&fc, k));
        let _ = writeln!(
            b,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(k),
            num(r0),
            num(r1),
            delta(r0, r1),
            num(f0),
            num(f1),
            delta(f0, f1)
        );
    }
    b.push_str("</table></section>\n");
}

fn delta(a: u64, b: u64) -> String {
    match b.cmp(&a) {
        std::cmp::Ordering::Greater => format!("+{}", num(b - a)),
        std::cmp::Ordering::Less => format!("−{}", num(a - b)),
        std::cmp::Ordering::Equal => "0".to_string(),
    }
}

fn footer(b: &mut String, estimated: bool, compare: bool) {
    b.push_str("<footer>");
    if estimated {
        let _ = write!(b, "<p><b>Estimates</b> (in italics): {}.</p>", esc(ESTIMATE_METHOD));
    }
    b.push_str("<p>Made by <code>retryctl simulate -o html</code>.");
    if compare {
        let _ = write!(
            b,
            " At most {ROWS_PER_GROUP} changed jobs are listed per transition (and {} MiB of rows in all), so the page stays under 5 MiB whatever the history.",
            ROW_BYTES >> 20
        );
    }
    b.push_str("</p></footer>\n");
}

/// A side's categorizer: its changes and collisions, then the collisions' warning.
fn categories(b: &mut String, c: &CategoryCounts, side: &str) {
    let _ = writeln!(
        b,
        "<p class=\"plan\">{}ategory changes (the executor's categorizer): {}; collisions: {}.</p>",
        if side.is_empty() {
            "C".to_string()
        } else {
            format!("{side}c")
        },
        esc(&category_changes_words(c)),
        c.collisions
    );
    if c.collisions > 0 {
        let _ = writeln!(
            b,
            "<p class=\"plan add\">Warning: {}{}.</p>",
            side.to_lowercase(),
            esc(&collisions_words(c.collisions))
        );
    }
}

/// The contention section (docs/contention.md): each side's sentences, then a comparison's
/// change of the overlap.
fn contention(b: &mut String, sides: &[(&str, &ContentionSide)], changes: &[String]) {
    if !contention_said(sides.iter().map(|(_, s)| *s)) {
        return;
    }
    let _ = writeln!(
        b,
        "<section><h2>Retries while others waited</h2>\n<p class=\"note\">{}.</p><ul>",
        esc(&capitalized(CONTENTION_NOTE))
    );
    for (label, side) in sides {
        let _ = writeln!(
            b,
            "<li><b>{label}</b>: {}</li>",
            esc(&contention_words(side).join("; "))
        );
    }
    for change in changes {
        let _ = writeln!(b, "<li>{}</li>", esc(change));
    }
    b.push_str("</ul></section>\n");
}

/// What a sharded run says where the contention section would be.
pub(crate) fn contention_sharded(b: &mut String) {
    let _ = writeln!(
        b,
        "<section><h2>Retries while others waited</h2>\n<p class=\"note\">{}.</p></section>",
        esc(&capitalized(CONTENTION_SHARDED))
    );
}

/// A comparison's contention section (`simulate --baseline`, `suggest`).
pub(crate) fn comparison_contention(b: &mut String, s: &OfComparison) {
    contention(
        b,
        &comparison_sides(s),
        &overlap_change_words(&s.baseline, &s.candidate),
    );
}

fn replay_page(s: &Summary, e: &Estimates) -> String {
    let mut b = String::new();
    b.push_str("<header><h1>Replay of the failure history</h1>");
    let _ = writeln!(
        b,
        "<p class=\"sub\">{} ({}) replayed under the policies given, by <code>retryctl simulate</code></p></header>",
        jobs(s.jobs),
        runs_words(s)
    );
    let pending_note = if s.pending > 0 && e.asked.without_estimate < s.pending {
        format!(
            "≈ {:.1} would succeed over the runs left, ≈ {} more run time (estimate)",
            e.asked.expected,
            seconds_words(e.asked.expected_compute)
        )
    } else {
        "retry past the end of the record".to_string()
    };
    b.push_str("<section class=\"cards\">\n");
    b.push_str(&card("c-rescued", &num(s.succeeded), "succeeded", ""));
    b.push_str(&card("c-lost", &num(s.failed), "failed", "for good"));
    b.push_str(&card("c-other", &num(s.cancelled), "cancelled", ""));
    b.push_str(&card("c-pending", &num(s.pending), "Pending", &esc(&pending_note)));
    b.push_str(&card(
        "c-plain",
        &num(s.retries),
        "retries granted",
        &format!("{} delay added", s.total_delay),
    ));
    b.push_str("</section>\n");
    let _ = writeln!(b, "<p class=\"plan\">Compute: {}.</p>", esc(&compute_recorded(s)));
    b.push_str("<div class=\"status\">");
    let expectations = if s.expectation_failed_jobs > 0 {
        format!(
            "<p class=\"plan add\">Expectations failed in {}: {}.</p>",
            plural(s.expectation_failed_jobs, "job", "jobs"),
            failed_expectations(s, |i| format!("<code>{}</code>", esc(i)))
        )
    } else {
        "<p class=\"plan\">Expectations: all met.</p>".to_string()
    };
    b.push_str(&expectations);
    if let Some(c) = &s.categories {
        categories(&mut b, c, "");
    }
    if s.contradicted_jobs > 0 {
        let _ = writeln!(
            b,
            "<p class=\"note\">The history contradicts the decisions in {} (reported on stderr).</p>",
            plural(s.contradicted_jobs, "job", "jobs")
        );
    }
    if s.errors > 0 {
        let _ = writeln!(b, "<p class=\"plan add\">Not simulated: {}.</p>", with_errors(s.errors));
    }
    b.push_str("</div>\n<section><h2>Outcomes</h2>\n");
    b.push_str(&bars(
        &[
            ("Succeeded", s.succeeded, "#1f9d55"),
            ("Failed", s.failed, "#d64545"),
            ("Cancelled", s.cancelled, "#7b8794"),
            ("Pending", s.pending, "#d9822b"),
        ],
        "jobs by outcome",
    ));
    b.push_str("</section>\n");
    if let Some(c) = &s.contention {
        contention(&mut b, &[("recorded", &c.recorded), ("replayed", &c.replayed)], &[]);
    } else if s.contention_sharded {
        contention_sharded(&mut b);
    }

    let rules = rule_rows(s);
    b.push_str("<section><h2>Decisions per rule</h2>\n");
    if rules.is_empty() {
        b.push_str("<p>No rule decided any run.</p>");
    } else {
        let max = rules.iter().map(|r| r.1.max(r.2)).max().unwrap_or(1).max(1);
        let bar = |n: u64, color: &str| {
            if n == 0 {
                return String::new();
            }
            format!(
                "<span class=\"bar\" style=\"width:{}px;background:{color}\"></span>",
                (n * 160).div_ceil(max)
            )
        };
        b.push_str("<table><tr><th>policy/rule</th><th>retries granted</th><th>permanent failures</th></tr>\n");
        for (rule, r, f) in &rules {
            let _ = writeln!(
                b,
                "<tr><td><code>{}</code></td><td>{}{}</td><td>{}{}</td></tr>",
                esc(rule),
                bar(*r, "#3f83f8"),
                num(*r),
                bar(*f, "#d64545"),
                num(*f)
            );
        }
        b.push_str("</table>");
    }
    let kinds: Vec<String> = s
        .decisions()
        .map(|(k, n)| format!("<code>{}</code> {}", k.as_str(), num(n)))
        .collect();
    if !kinds.is_empty() {
        let _ = write!(b, "<p class=\"note\">Decisions by kind: {}.</p>", kinds.join(" · "));
    }
    if let Some(line) = e.incidents.as_ref().and_then(incidents_line) {
        let _ = writeln!(b, "<p class=\"note\">Incidents: {}.</p>", esc(&line));
    }
    b.push_str("</section>\n");
    if let Some(bt) = &e.backtest {
        backtest_section(&mut b, bt);
    }
    class_section(&mut b, e, false);
    footer(&mut b, e.rates.pooled().trials > 0, false);
    page("retryctl simulate: replay report", &b)
}

/// docs/estimates.md in words and as a reliability diagram: each calibration bin a dot at
/// (predicted, observed), its area by its trials, against the diagonal of perfect
/// calibration; then the bins as a table.
fn backtest_section(b: &mut String, bt: &Backtest) {
    let _ = writeln!(
        b,
        "<section><h2>Backtest</h2>\n<p class=\"plan\">{}.</p>\n<p class=\"note\">{}.</p>",
        esc(&capitalized(&backtest_sentence(bt))),
        esc(&backtest_details(bt))
    );
    b.push_str(&reliability(bt));
    b.push_str("<table><tr><th>predicted</th><th class=\"n\">trials</th><th class=\"n\">mean predicted</th><th class=\"n\">observed</th></tr>\n");
    for bin in &bt.calibration {
        let _ = writeln!(
            b,
            "<tr><td>{:.0}–{:.0}%</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td><td class=\"n\">{:.1}%</td></tr>",
            bin.from * 100.0,
            bin.to * 100.0,
            num(bin.trials),
            bin.predicted * 100.0,
            bin.observed * 100.0
        );
    }
    b.push_str("</table><p class=\"note\">The trials of jobs submitted before the time fit the rates (class and depth, with the same back-off as the estimates); the trials of jobs submitted at or after it test them. A class the recorded policies never retried has no trials, and cannot be checked.</p></section>\n");
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The reliability diagram: predicted (x) against observed (y), both 0–100%.
fn reliability(bt: &Backtest) -> String {
    const SIZE: f64 = 240.0;
    const LEFT: f64 = 48.0;
    const TOP: f64 = 12.0;
    let x = |p: f64| LEFT + p.clamp(0.0, 1.0) * SIZE;
    let y = |p: f64| TOP + (1.0 - p.clamp(0.0, 1.0)) * SIZE;
    let mut s = format!(
        "<svg class=\"rel\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"reliability diagram: predicted against observed success, per bin\">",
        w = LEFT + SIZE + 16.0,
        h = TOP + SIZE + 40.0
    );
    let _ = write!(
        s,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{SIZE}\" height=\"{SIZE}\" fill=\"none\" stroke=\"#cbd2d9\"/>"
    );
    for t in [0.0, 0.5, 1.0] {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{:.0}%</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.0}%</text>",
            x(t),
            TOP + SIZE + 14.0,
            t * 100.0,
            LEFT - 4.0,
            y(t) + 4.0,
            t * 100.0
        );
    }
    let _ = write!(
        s,
        "<line class=\"diag\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#7b8794\" stroke-dasharray=\"4 3\"/>",
        x(0.0),
        y(0.0),
        x(1.0),
        y(1.0)
    );
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">predicted</text><text x=\"12\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 12 {})\">observed</text>",
        LEFT + SIZE / 2.0,
        TOP + SIZE + 32.0,
        TOP + SIZE / 2.0,
        TOP + SIZE / 2.0
    );
    let most = bt.calibration.iter().map(|b| b.trials).max().unwrap_or(1).max(1) as f64;
    for bin in &bt.calibration {
        let r = 3.0 + 9.0 * (bin.trials as f64 / most).sqrt();
        let _ = write!(
            s,
            "<circle class=\"bin\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r:.1}\" fill=\"#3f83f8\" fill-opacity=\"0.6\"><title>predicted {:.1}%, observed {:.1}%, {} trials</title></circle><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{}</text>",
            x(bin.predicted),
            y(bin.observed),
            bin.predicted * 100.0,
            bin.observed * 100.0,
            num(bin.trials),
            x(bin.predicted) + r + 2.0,
            y(bin.observed) + 3.0,
            num(bin.trials)
        );
    }
    s.push_str("</svg>");
    s
}
