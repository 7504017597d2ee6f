//! `retryctl tune`'s output (docs/tune.md): the table (the inputs a line each: the search, the
//! varies by their columns' names, the constraints; the top 20 candidates in the
//! recommendation order, the recommendation in words, its values and the command that writes
//! it, a line when the estimates alone decided it and no `--max-compute` caps it, the
//! estimates' method in one line that points to docs/estimates.md; every line within
//! `output::lines`' width but the table's rows and the command),
//! `-o json|yaml` (every candidate and every skipped one), `-o markdown` (the top table and
//! the recommendation, for the pull request that changes the policy) and `-o html` (the
//! frontier as an SVG scatter, expected successes against cost, the baseline marked, the
//! recommendation highlighted, `--max-compute` a dashed line, then the table; the page fits
//! 1280 pixels: the varied columns wrap).
//!
//! Owns: how a ranked search looks; each candidate's comparison is written with the records'
//! own pieces (`records::{transitions_json, compute_json, estimate_json}`), so that its numbers print as
//! `simulate --baseline` prints them. Must not: count, rank (that is `tune::rank`) or read anything.
//! Hostile values (a policy name, a value) are escaped as text in html and markdown.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{json, Map, Value};
use tabled::builder::Builder;
use tabled::settings::{Padding, Style as TableStyle};

use crate::engine::job_report::plural;
use crate::model::failure_history::Final;
use crate::replay::backtest::Backtest;
use crate::replay::compare::hours;
use crate::replay::sink::Message;
use crate::replay::source::Progress;
use crate::tune::rank::{EstimatesDecide, Excluded, Ranked, Scored};
use crate::tune::sweep::Listener;
use crate::tune::CandidateError;

use super::html::esc;
use super::lines;
use super::markdown::{self, code_span, text as markdown_text};
use super::records::{backtest_json, compute_json, estimate_json, transitions_json};
use super::stderr::Stderr;
use super::table::{write_backtest, write_errors};
use super::text::shown;
use super::words::{
    backtest_details, backtest_sentence, hours_words, seconds_words, COLLISION, ESTIMATE_METHOD, METHOD_LINE,
};
use super::{Format, Style};

/// Candidates the table, markdown and html list at most, in the recommendation order.
pub const TOP: usize = 20;

/// A candidate whose documents do not validate.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub id: u64,
    pub values: Vec<(String, String)>,
    pub errors: Vec<CandidateError>,
}

/// Where the baseline came from (`baselineFrom`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BaselineFrom {
    /// The template as written (no `--baseline`).
    Template,
    /// `--baseline FILES`.
    Files,
    /// `--baseline-from-cluster`.
    Cluster,
}

impl BaselineFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineFrom::Template => "template",
            BaselineFrom::Files => "files",
            BaselineFrom::Cluster => "cluster",
        }
    }

    fn words(self) -> &'static str {
        match self {
            BaselineFrom::Template => "the template as written",
            BaselineFrom::Files => "the --baseline files",
            BaselineFrom::Cluster => "what the cluster runs (its Lookout database)",
        }
    }
}

/// Everything a format shows.
#[derive(Debug)]
pub struct TuneView<'a> {
    pub ranked: &'a Ranked,
    pub jobs: u64,
    pub errors: u64,
    pub baseline_from: BaselineFrom,
    /// Each vary as typed, and its values as typed.
    pub varied: &'a [(String, Vec<String>)],
    /// Each vary's column in the tables, in the same order (`Template::columns`).
    pub columns: &'a [String],
    pub skipped: &'a [Skipped],
    pub max_lost: u64,
    /// `--max-compute` as typed.
    pub max_compute: Option<&'a str>,
    pub backtest: Option<&'a Backtest>,
    /// The command that writes a candidate, up to `--pick` (` --pick ID -o yaml` follows).
    pub pick_command: &'a str,
    /// A side classifies runs with the executor's categorizer: each candidate's collisions
    /// are shown (`collisions` in json and yaml, a COLLISIONS column in the tables).
    pub categorized: bool,
    /// `--shard I/N` printed on its own (not as a partial): its numbers are its jobs' alone.
    pub shard: Option<crate::replay::shard::Shard>,
}

/// Writes `view` in `format`.
pub fn write(format: Format, view: &TuneView<'_>, style: Style, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Table => write_table(view, style, out),
        // One document on one line: its JSON Lines too (which `tune -o` does not offer).
        Format::Json | Format::Jsonl => {
            serde_json::to_writer(&mut *out, &document(view))?;
            writeln!(out)
        }
        Format::Yaml => out.write_all(serde_yaml::to_string(&document(view)).unwrap_or_default().as_bytes()),
        Format::Markdown => out.write_all(markdown(view).as_bytes()),
        Format::Html => out.write_all(html(view).as_bytes()),
    }
}

/// The stderr side of a sweep: `simulate`'s messages and progress bar.
pub struct StderrListener<'a>(pub Stderr<'a>);

impl Listener for StderrListener<'_> {
    fn message(&mut self, m: &Message<'_>) -> io::Result<()> {
        self.0.message(m)
    }

    fn progress(&mut self, at: Progress) {
        self.0.progress(at);
    }
}

fn finals_json(f: &[u64; 4]) -> Value {
    json!({
        "Succeeded": f[Final::Succeeded as usize],
        "Failed": f[Final::Failed as usize],
        "Pending": f[Final::Pending as usize],
        "Cancelled": f[Final::Cancelled as usize],
    })
}

fn values_json(values: &[(String, String)]) -> Value {
    Value::Object(values.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

/// The constraint a candidate breaks, named as `constraints` names it.
fn excluded_key(e: &Excluded) -> &'static str {
    match e {
        Excluded::Lost { .. } => "maxLost",
        Excluded::Compute { .. } => "maxCompute",
    }
}

/// Whether `s` breaks `--max-lost`, and whether it breaks `--max-compute`.
fn over(s: &Scored) -> (bool, bool) {
    (
        s.excluded.iter().any(|e| matches!(e, Excluded::Lost { .. })),
        s.excluded.iter().any(|e| matches!(e, Excluded::Compute { .. })),
    )
}

/// A candidate as docs/tune.md's record.
fn candidate_json(s: &Scored, categorized: bool) -> Value {
    let c = &s.tally.comparison;
    let mut v = json!({
        "id": s.id,
        "values": values_json(&s.values),
        "final": finals_json(&s.tally.finals),
        "changed": c.changed,
        "transitions": transitions_json(c, false),
        "retries": {"added": c.retries_added, "removed": c.retries_removed},
        "delay": {"added": c.delay_added.to_string(), "removed": c.delay_removed.to_string()},
        "compute": compute_json(c, &s.pending),
        "estimate": estimate_json(&s.asked, &s.pending, false),
        "expectedSucceeded": s.expected_succeeded,
        "cost": s.cost,
        "frontier": s.frontier,
    });
    if let (false, Value::Object(m)) = (s.eligible(), &mut v) {
        let keys: Vec<&str> = s.excluded.iter().map(excluded_key).collect();
        m.insert("excluded".into(), json!(keys));
    }
    if let (true, Value::Object(m)) = (categorized, &mut v) {
        m.insert("collisions".into(), json!(collisions(s)));
    }
    v
}

/// The candidate's collisions: its Retry decisions on runs whose pod the executor keeps
/// (docs/categorizer.md), as `simulate --baseline` counts the candidate side's.
fn collisions(s: &Scored) -> u64 {
    s.tally
        .comparison
        .categories
        .as_ref()
        .map_or(0, |c| c.candidate.collisions)
}

/// `{tune: {…}}`, every candidate in id order.
pub fn document(view: &TuneView<'_>) -> Value {
    let r = view.ranked;
    let varied: Vec<Value> = view
        .varied
        .iter()
        .map(|(vary, values)| json!({"vary": vary, "values": values}))
        .collect();
    let skipped: Vec<Value> = view
        .skipped
        .iter()
        .map(|s| {
            let errors: Vec<Value> = s
                .errors
                .iter()
                .map(|e| {
                    let mut m = Map::new();
                    m.insert("path".into(), json!(e.path));
                    m.insert("message".into(), json!(e.message));
                    m.insert("file".into(), json!(e.file));
                    if let Some(d) = e.document {
                        m.insert("document".into(), json!(d));
                    }
                    if let Some(n) = &e.name {
                        m.insert("name".into(), json!(n));
                    }
                    Value::Object(m)
                })
                .collect();
            json!({"id": s.id, "values": values_json(&s.values), "errors": errors})
        })
        .collect();
    let mut tune = json!({
        "jobs": view.jobs,
        "errors": view.errors,
        "baselineFrom": view.baseline_from.as_str(),
        "baseline": {
            "final": finals_json(&r.baseline.finals),
            "expectedSucceeded": r.baseline.expected_succeeded,
            "cost": r.baseline.cost,
        },
        "varied": varied,
        "candidates": r.candidates.iter().map(|s| candidate_json(s, view.categorized)).collect::<Vec<_>>(),
        "skipped": skipped,
        "recommended": r.recommended.map(|i| r.candidates[i].id),
        "constraints": {
            "maxLost": view.max_lost,
            "maxCompute": view.max_compute,
            "maxComputeSeconds": r.max_compute,
        },
        "method": ESTIMATE_METHOD,
    });
    if let (Some(b), Value::Object(m)) = (view.backtest, &mut tune) {
        m.insert("backtest".into(), backtest_json(b));
    }
    json!({ "tune": tune })
}

/// A signed run time in seconds, for reading: `+1h2m`, `-30s`.
fn signed_seconds(s: f64) -> String {
    if s < 0.0 {
        format!("-{}", seconds_words(-s))
    } else {
        format!("+{}", seconds_words(s))
    }
}

/// Whether any job requests a GPU (then the hours are shown).
fn with_gpus(r: &Ranked) -> bool {
    r.candidates.iter().any(|s| {
        let c = &s.tally.comparison;
        c.gpu_added > 0 || c.gpu_removed > 0 || s.pending.gpu_hours > 0.0
    }) || r.baseline.pending.gpu_hours > 0.0
}

/// A candidate's GPU-hours: added − removed + expected.
fn gpu_hours(s: &Scored) -> f64 {
    let c = &s.tally.comparison;
    hours(c.gpu_added) - hours(c.gpu_removed) + s.pending.gpu_hours
}

/// The header and rows of the top table, as plain text cells.
fn top_rows(view: &TuneView<'_>) -> (Vec<String>, Vec<Vec<String>>) {
    let r = view.ranked;
    let gpus = with_gpus(r);
    let mut header = vec!["ID".to_string()];
    header.extend(view.columns.iter().cloned());
    header.extend(["EXPECTED", "SUCCEEDED", "PENDING", "RESCUED", "LOST", "COST"].map(String::from));
    if gpus {
        header.push("GPU-HOURS".into());
    }
    if view.categorized {
        header.push("COLLISIONS".into());
    }
    header.push("FRONTIER".into());
    let rows = r
        .order
        .iter()
        .take(TOP)
        .map(|&i| {
            let s = &r.candidates[i];
            let c = &s.tally.comparison;
            let mark = if r.recommended == Some(i) { "*" } else { "" };
            let (lost_over, compute_over) = over(s);
            let mut row = vec![format!("{}{mark}", s.id)];
            row.extend(s.values.iter().map(|(_, v)| v.clone()));
            row.extend([
                format!("{:.1}", s.expected_succeeded),
                s.tally.finals[Final::Succeeded as usize].to_string(),
                s.tally.finals[Final::Pending as usize].to_string(),
                c.rescued.to_string(),
                if lost_over {
                    format!("{} (over)", c.lost)
                } else {
                    c.lost.to_string()
                },
                if compute_over {
                    format!("{} (over)", signed_seconds(s.cost))
                } else {
                    signed_seconds(s.cost)
                },
            ]);
            if gpus {
                row.push(hours_words(gpu_hours(s)));
            }
            if view.categorized {
                row.push(collisions(s).to_string());
            }
            row.push(if s.frontier { "yes" } else { "" }.to_string());
            row
        })
        .collect();
    (header, rows)
}

/// The recommended candidate's values as `--vary` names them (`ml:spec.retryLimit=3`), or
/// `None` without a recommendation.
fn recommended_values(view: &TuneView<'_>) -> Option<Vec<String>> {
    let r = view.ranked;
    r.recommended
        .map(|i| r.candidates[i].values.iter().map(|(k, v)| format!("{k}={v}")).collect())
}

/// The recommendation in words.
fn recommendation(view: &TuneView<'_>) -> String {
    let r = view.ranked;
    match r.recommended {
        Some(i) => {
            let s = &r.candidates[i];
            let c = &s.tally.comparison;
            format!(
                "recommended: candidate {}: ≈ {:.1} expected successes, {:+.1} over the baseline; {} rescued, {} lost, {} → Pending; cost {}",
                s.id,
                s.expected_succeeded,
                s.expected_succeeded - r.baseline.expected_succeeded,
                c.rescued,
                c.lost,
                c.to_pending,
                signed_seconds(s.cost)
            )
        }
        None => "recommended: none: no candidate within the constraints beats the baseline's expected successes or matches them for less cost; keep the baseline".to_string(),
    }
}

/// A recommendation that only the estimates put ahead, in one line, and, without
/// `--max-compute`, how to cap what it may cost.
fn estimates_decide_line(view: &TuneView<'_>) -> Option<String> {
    let r = view.ranked;
    let recommended = &r.candidates[r.recommended?];
    let (rival, theirs) = match r.estimates_decide? {
        EstimatesDecide::Baseline => ("the baseline".to_string(), r.baseline.finals[Final::Succeeded as usize]),
        EstimatesDecide::Candidate(i) => (format!("candidate {}", r.candidates[i].id), r.candidates[i].succeeded()),
    };
    let ours = recommended.succeeded();
    let counts = if ours == theirs {
        format!("{} each", plural(ours, "job", "jobs"))
    } else {
        format!("{ours} jobs against {theirs}")
    };
    // Said with a cap too: the cap bounds what the estimates may cost, not whether they
    // decided.
    let advice = match view.max_compute {
        Some(_) => "",
        None => "; give --max-compute (10h, or 50% of the baseline's compute) to cap the compute it adds",
    };
    Some(format!(
        "decided by estimates alone: in the record, candidate {} succeeds no more often than {rival} ({counts}){advice}",
        recommended.id
    ))
}

/// `--max-compute` (`max`, as typed; `applied`, in seconds) as the inputs line says it:
/// `cost ≤ 8h`, `cost ≤ 100% of the baseline's compute (2h25m56s)`, `cost unbounded`.
fn compute_words(max: Option<&str>, applied: Option<f64>) -> String {
    max.map_or("cost unbounded".to_string(), |m| match applied {
        Some(s) if m.ends_with('%') => format!("cost ≤ {m} of the baseline's compute ({})", seconds_words(s)),
        _ => format!("cost ≤ {m}"),
    })
}

/// `tune --pick ID` after a search (docs/tune.md): what candidate `index` of `ranked` gives
/// up, when it loses a job the baseline saves or breaks a constraint (each said as the
/// inputs line says it), and what is recommended instead; `None` when it does neither.
/// `max_compute`: `--max-compute` as typed.
pub fn pick_warning(ranked: &Ranked, index: usize, max_compute: Option<&str>) -> Option<String> {
    let c = &ranked.candidates[index];
    let lost = c.tally.comparison.lost;
    if lost == 0 && c.excluded.is_empty() {
        return None;
    }
    let mut clauses = Vec::new();
    let over_lost = c.excluded.iter().find_map(|e| match e {
        Excluded::Lost { max, .. } => Some(*max),
        Excluded::Compute { .. } => None,
    });
    if lost > 0 {
        let list = crate::diag::named(&c.tally.lost_jobs, lost, usize::MAX);
        let over = over_lost.map_or(String::new(), |max| format!(", over the constraint lost ≤ {max}"));
        clauses.push(format!(
            "loses {lost} {} the baseline saves{list}{over}",
            if lost == 1 { "job" } else { "jobs" }
        ));
    }
    for e in &c.excluded {
        if let Excluded::Compute { cost, .. } = e {
            clauses.push(format!(
                "costs {}, over the constraint {}",
                signed_seconds(*cost),
                compute_words(max_compute, ranked.max_compute)
            ));
        }
    }
    let recommendation = match ranked.recommended {
        Some(i) => format!("candidate {}", ranked.candidates[i].id),
        None => "none".to_string(),
    };
    Some(format!(
        "candidate {} {}; the recommendation is {recommendation}",
        c.id,
        clauses.join(", and ")
    ))
}

/// The inputs in three parts: what is searched over which jobs against which baseline, the
/// varies, the constraints.
fn inputs(view: &TuneView<'_>) -> (String, String) {
    let r = view.ranked;
    let compute = compute_words(view.max_compute, r.max_compute);
    let skipped = if view.skipped.is_empty() {
        String::new()
    } else {
        format!(" ({})", skipped_words(view.skipped.len()))
    };
    // A shard's own table ranks its jobs alone: said where the jobs are counted.
    let shard = view.shard.map_or(String::new(), |s| {
        format!(
            " (shard {} of {}: its jobs alone, not the cluster's; `retryctl merge` every shard's `-o partial` for those)",
            s.index, s.count
        )
    });
    let head = format!(
        "tune: {}{skipped} over {}{shard}; baseline: {}",
        plural(r.candidates.len() as u64, "candidate", "candidates"),
        plural(view.jobs, "job", "jobs"),
        view.baseline_from.words(),
    );
    (head, format!("constraints: lost ≤ {}, {compute}", view.max_lost))
}

/// The inputs in one line (the reports' subtitle).
fn inputs_line(view: &TuneView<'_>) -> String {
    let (head, constraints) = inputs(view);
    format!("{head}; varying {}; {constraints}", view.columns.join(" × "))
}

/// The inputs in the table: the search, the varies (one a line when they do not fit on
/// one), the constraints.
fn inputs_lines(view: &TuneView<'_>) -> Vec<String> {
    let (head, constraints) = inputs(view);
    let mut out = lines::wrap("", "  ", &head);
    out.extend(lines::list("  varying: ", view.columns, " × ", "    "));
    out.push(format!("  {constraints}"));
    out
}

fn write_table(view: &TuneView<'_>, style: Style, out: &mut dyn Write) -> io::Result<()> {
    let r = view.ranked;
    for line in inputs_lines(view) {
        writeln!(out, "{}", style.bold(&line))?;
    }
    let (header, rows) = top_rows(view);
    let mut b = Builder::default();
    b.push_record(header);
    for row in rows {
        b.push_record(row);
    }
    let mut table = b.build();
    table.with(TableStyle::blank()).with(Padding::new(0, 2, 0, 0));
    for line in table.to_string().lines() {
        writeln!(out, "  {}", line.trim_end())?;
    }
    if r.candidates.len() > TOP {
        writeln!(
            out,
            "  (the first {TOP} of {} in the recommendation order; -o json lists every one)",
            r.candidates.len()
        )?;
    }
    let base = &r.baseline;
    writeln!(
        out,
        "baseline: ≈ {:.1} expected successes ({} succeeded, {} pending), cost {}",
        base.expected_succeeded,
        base.finals[Final::Succeeded as usize],
        base.finals[Final::Pending as usize],
        signed_seconds(base.cost)
    )?;
    let words = recommendation(view);
    writeln!(
        out,
        "{}",
        if r.recommended.is_some() {
            style.bold(&words)
        } else {
            style.warning(&words)
        }
    )?;
    if let (Some(i), Some(values)) = (r.recommended, recommended_values(view)) {
        for line in lines::list("  values: ", &values, ", ", "    ") {
            writeln!(out, "{line}")?;
        }
        writeln!(
            out,
            "  write it: {} --pick {} -o yaml",
            shown(view.pick_command),
            r.candidates[i].id
        )?;
    }
    if let Some(line) = estimates_decide_line(view) {
        for l in lines::wrap("", "  ", &line) {
            writeln!(out, "{}", style.warning(&l))?;
        }
    }
    if let Some(b) = view.backtest {
        write_backtest(out, "backtest: ", "  ", b)?;
    }
    write_errors(out, style, "", "not replayed", view.errors)?;
    if view.categorized {
        for line in lines::wrap(
            "",
            " ",
            &format!("(COLLISIONS: under --engine upstream, the candidate's retries that reuse {COLLISION})"),
        ) {
            writeln!(out, "{line}")?;
        }
    }
    writeln!(
        out,
        "(EXPECTED: succeeded + Σ the estimated chance of each Pending job; COST: compute added − removed + expected, against the baseline; * recommended)"
    )?;
    writeln!(out, "{METHOD_LINE}")
}

/// `N skipped: …`, said once for every format.
fn skipped_words(n: usize) -> String {
    format!(
        "{} skipped: {} documents do not validate",
        plural(n as u64, "candidate", "candidates"),
        whose(n)
    )
}

/// The skipped candidates' (`its`, `their`).
fn whose(n: usize) -> &'static str {
    if n == 1 {
        "its"
    } else {
        "their"
    }
}

fn markdown(view: &TuneView<'_>) -> String {
    let r = view.ranked;
    let mut m = String::new();
    let _ = writeln!(m, "## retryctl tune: which policy should this cluster run?\n");
    let _ = writeln!(m, "{}\n", markdown_text(&inputs_line(view)));
    let _ = writeln!(m, "**{}**\n", markdown_text(&recommendation(view)));
    if let Some(values) = recommended_values(view) {
        let values: Vec<String> = values.iter().map(|v| code_span(v)).collect();
        let _ = writeln!(m, "Values: {}\n", values.join(", "));
    }
    if let Some(line) = estimates_decide_line(view) {
        let _ = writeln!(m, "{}\n", markdown_text(&line));
    }
    if let Some(i) = r.recommended {
        let _ = writeln!(
            m,
            "Write it: {}\n",
            code_span(&format!("{} --pick {} -o yaml", view.pick_command, r.candidates[i].id))
        );
    }
    let (header, rows) = top_rows(view);
    let _ = writeln!(
        m,
        "| {} |\n|{}|",
        header.iter().map(|h| markdown_text(h)).collect::<Vec<_>>().join(" | "),
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        let _ = writeln!(
            m,
            "| {} |",
            row.iter().map(|c| markdown_text(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    if r.candidates.len() > TOP {
        let _ = writeln!(
            m,
            "\n… the first {TOP} of {} candidates in the recommendation order; `-o json` lists every one.",
            r.candidates.len()
        );
    }
    let base = &r.baseline;
    let _ = writeln!(
        m,
        "\n**Baseline** ({}): ≈ {:.1} expected successes, cost {}.",
        view.baseline_from.words(),
        base.expected_succeeded,
        signed_seconds(base.cost)
    );
    if !view.skipped.is_empty() {
        let _ = writeln!(
            m,
            "\n{} (`-o json` lists {} errors).",
            markdown_text(&skipped_words(view.skipped.len())),
            whose(view.skipped.len())
        );
    }
    if let Some(b) = view.backtest {
        let _ = writeln!(m, "\n{}", markdown::backtest_line(b));
    }
    let _ = writeln!(
        m,
        "\n<sub>EXPECTED: succeeded + Σ the estimated chance of each Pending job; COST: compute added − removed + expected, against the baseline; * recommended. {}</sub>",
        markdown::estimates_note()
    );
    m
}

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f5f7fa;color:#1f2933}main{max-width:1200px;margin:0 auto;padding:24px}section{background:#fff;border-radius:8px;padding:16px 20px;margin:16px 0;box-shadow:0 1px 2px #0001}h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 12px}.sub{color:#52606d;margin:0}table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #e4e7eb;font-variant-numeric:tabular-nums}.v{overflow-wrap:anywhere;min-width:6em}th{font-weight:600;color:#52606d}.n{text-align:right}.rec td{background:#e3f8ee;font-weight:600}.plan{font-size:15px}.note{color:#52606d;font-size:12px}code{background:#f0f4f8;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}svg{max-width:100%;height:auto}.est{font-style:italic;color:#8a4b08}svg text{font:11px system-ui,sans-serif;fill:#52606d}svg text.cap{fill:#d64545}";

fn html(view: &TuneView<'_>) -> String {
    let r = view.ranked;
    let mut b = String::new();
    b.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>retryctl tune</title><meta name=\"viewport\" content=\"width=device-width\"><style>");
    b.push_str(CSS);
    b.push_str("</style></head><body><main>\n<header><h1>Which policy should this cluster run?</h1>");
    let _ = writeln!(b, "<p class=\"sub\">{}</p></header>", esc(&inputs_line(view)));
    let _ = writeln!(
        b,
        "<section><p class=\"plan\"><b>{}</b></p>",
        esc(&recommendation(view))
    );
    if let Some(values) = recommended_values(view) {
        let values: Vec<String> = values.iter().map(|v| format!("<code>{}</code>", esc(v))).collect();
        let _ = writeln!(b, "<p>Values: {}</p>", values.join(", "));
    }
    if let Some(line) = estimates_decide_line(view) {
        let _ = writeln!(b, "<p class=\"est\">{}</p>", esc(&line));
    }
    if let Some(i) = r.recommended {
        let _ = writeln!(
            b,
            "<p>Write it: <code>{} --pick {} -o yaml</code></p>",
            esc(&shown(view.pick_command)),
            r.candidates[i].id
        );
    }
    b.push_str("</section>\n<section><h2>The frontier: expected successes against cost</h2>\n");
    b.push_str(&scatter(r, view.max_compute));
    let cap = if view.max_compute.is_some() {
        " the dashed red line is <code>--max-compute</code>: a candidate right of it costs more than it allows;"
    } else {
        ""
    };
    let _ = writeln!(
        b,
        "<p class=\"note\">Each dot a candidate; the ringed dots are the frontier (no other candidate has as many expected successes for less cost), joined by the line; the square is the baseline;{cap} the green dot the recommendation. Hover a dot for its values.</p></section>"
    );
    b.push_str("<section><h2>Candidates</h2><table>\n<tr>");
    let (header, rows) = top_rows(view);
    // The varied columns (after ID) wrap, as much as it takes: what a user varies and names
    // can be long, and the page stays within its width; the numbers never break.
    let varied = |k: usize| {
        if (1..=view.columns.len()).contains(&k) {
            " class=\"v\""
        } else {
            ""
        }
    };
    for (k, h) in header.iter().enumerate() {
        let _ = write!(b, "<th{}>{}</th>", varied(k), esc(h));
    }
    b.push_str("</tr>\n");
    for (row, &i) in rows.iter().zip(&r.order) {
        let class = if r.recommended == Some(i) { " class=\"rec\"" } else { "" };
        let _ = write!(b, "<tr{class}>");
        for (k, c) in row.iter().enumerate() {
            let _ = write!(b, "<td{}>{}</td>", varied(k), esc(c));
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</table>");
    if r.candidates.len() > TOP {
        let _ = write!(
            b,
            "<p class=\"note\">The first {TOP} of {} candidates in the recommendation order; <code>-o json</code> lists every one.</p>",
            r.candidates.len()
        );
    }
    let base = &r.baseline;
    let _ = writeln!(
        b,
        "<p>Baseline ({}): <span class=\"est\">≈ {:.1}</span> expected successes, cost {}.</p></section>",
        esc(view.baseline_from.words()),
        base.expected_succeeded,
        esc(&signed_seconds(base.cost))
    );
    if let Some(bt) = view.backtest {
        let _ = writeln!(
            b,
            "<section><h2>Backtest</h2><p>{}.</p><p class=\"note\">{}.</p></section>",
            esc(&backtest_sentence(bt)),
            esc(&backtest_details(bt))
        );
    }
    if !view.skipped.is_empty() {
        let _ = writeln!(
            b,
            "<section><p>{} (<code>-o json</code> lists {} errors).</p></section>",
            esc(&skipped_words(view.skipped.len())),
            whose(view.skipped.len())
        );
    }
    let _ = writeln!(
        b,
        "<footer class=\"note\"><p>Expected successes: the jobs that succeed + the estimated chance of each Pending job. Cost: compute added − removed + expected, against the baseline. Estimates (in italics): {}.</p><p>Made by <code>retryctl tune -o html</code>.</p></footer>",
        esc(ESTIMATE_METHOD)
    );
    b.push_str("</main></body></html>\n");
    b
}

/// The scatter: cost (x) against expected successes (y), every candidate, the frontier
/// joined and ringed, the baseline a square, the recommendation green, and `--max-compute`
/// (`max`, as typed) as a dashed vertical line at the cost it allows, inside the axis even
/// when no candidate comes near it.
fn scatter(r: &Ranked, max: Option<&str>) -> String {
    const W: f64 = 720.0;
    const H: f64 = 360.0;
    const LEFT: f64 = 70.0;
    const BOTTOM: f64 = 40.0;
    const TOP_PAD: f64 = 12.0;
    let cap = r.max_compute.zip(max);
    let points = r
        .candidates
        .iter()
        .map(|s| (s.cost, s.expected_succeeded))
        .chain([(r.baseline.cost, r.baseline.expected_succeeded)])
        .chain(cap.map(|(c, _)| (c, r.baseline.expected_succeeded)));
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    let pad = |lo: f64, hi: f64| {
        let span = (hi - lo).abs().max(1e-9);
        (lo - span * 0.05, hi + span * 0.05)
    };
    let ((x0, x1), (y0, y1)) = (pad(x0, x1), pad(y0, y1));
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - 12.0);
    let py = |y: f64| TOP_PAD + (1.0 - (y - y0) / (y1 - y0)) * (H - BOTTOM - TOP_PAD);
    let mut s = format!(
        "<svg class=\"frontier\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"expected successes against cost, one dot per candidate\">"
    );
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#9aa5b1\"/><line x1=\"{LEFT}\" y1=\"{TOP_PAD}\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"#9aa5b1\"/>",
        H - BOTTOM,
        W - 12.0,
        H - BOTTOM,
        H - BOTTOM
    );
    for t in [0.0, 0.5, 1.0] {
        let (x, y) = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
        // The last cost ends at the axis' end, inside the picture.
        let anchor = if t == 1.0 { "end" } else { "middle" };
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{:.1}</text>",
            px(x),
            H - BOTTOM + 16.0,
            esc(&signed_seconds(x)),
            LEFT - 6.0,
            py(y) + 4.0,
            y
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">cost (compute added − removed + expected)</text><text x=\"14\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">expected successes</text>",
        LEFT + (W - LEFT) / 2.0,
        H - 6.0,
        (H - BOTTOM) / 2.0,
        (H - BOTTOM) / 2.0
    );
    if let Some((c, typed)) = cap {
        let x = px(c);
        // Its label left of the line, or right of it when the line is near the axis.
        let (label_x, anchor) = if x - LEFT > 140.0 {
            (x - 4.0, "end")
        } else {
            (x + 4.0, "start")
        };
        let _ = write!(
            s,
            "<line class=\"cap\" x1=\"{x:.1}\" y1=\"{TOP_PAD}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#d64545\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"><title>--max-compute: {}; a candidate right of the line costs more</title></line><text class=\"cap\" x=\"{label_x:.1}\" y=\"{}\" text-anchor=\"{anchor}\">--max-compute {}</text>",
            H - BOTTOM,
            esc(&compute_words(Some(typed), Some(c))),
            TOP_PAD + 10.0,
            esc(typed)
        );
    }
    let mut front: Vec<&Scored> = r.candidates.iter().filter(|c| c.frontier).collect();
    front.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|c| format!("{:.1},{:.1}", px(c.cost), py(c.expected_succeeded)))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"front\" points=\"{}\" fill=\"none\" stroke=\"#3f83f8\" stroke-width=\"1.5\"/>",
            path.join(" ")
        );
    }
    for (i, c) in r.candidates.iter().enumerate() {
        let recommended = r.recommended == Some(i);
        let (fill, radius) = match (recommended, c.frontier) {
            (true, _) => ("#1f9d55", 7.0),
            (false, true) => ("#3f83f8", 5.0),
            (false, false) => ("#9aa5b1", 3.5),
        };
        let ring = if c.frontier {
            " stroke=\"#1f2933\" stroke-width=\"1\""
        } else {
            ""
        };
        let values: Vec<String> = c.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            s,
            "<circle class=\"cand{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\" fill=\"{fill}\"{ring}><title>candidate {}: {}; ≈ {:.1} expected successes, cost {}</title></circle>",
            if recommended { " rec" } else { "" },
            px(c.cost),
            py(c.expected_succeeded),
            c.id,
            esc(&values.join(", ")),
            c.expected_succeeded,
            esc(&signed_seconds(c.cost))
        );
    }
    let (bx, by) = (px(r.baseline.cost), py(r.baseline.expected_succeeded));
    let _ = write!(
        s,
        "<rect class=\"baseline\" x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"#d9822b\"><title>the baseline: ≈ {:.1} expected successes, cost {}</title></rect><text x=\"{:.1}\" y=\"{:.1}\">baseline</text>",
        bx - 5.0,
        by - 5.0,
        r.baseline.expected_succeeded,
        esc(&signed_seconds(r.baseline.cost)),
        bx + 8.0,
        by - 8.0
    );
    s.push_str("</svg>");
    s
}
