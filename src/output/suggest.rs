//! Presentation of `retryctl suggest` (docs/reference/suggest.md "Output"): the table, the
//! `{suggest: …}` record as JSON or YAML (the comparisons streamed in place, exactly as
//! `simulate --baseline` writes them), the HTML page and the Markdown report.
//!
//! Owns: the words, the record's field names and the layout. Must not: count, propose or
//! replay; what it prints is handed over by `commands::suggest`.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::engine::job_report::plural;
use crate::engine::EngineKind;
use crate::model::failure_history::Final;
use crate::model::Action;
use crate::replay::compare::{hours, Comparison, Transition};
use crate::replay::sink::{Change, Estimates, Message, Needs, Sink, Totals};
use crate::replay::source::Progress;
use crate::suggest::documents::Upstream;
use crate::suggest::nodes::Suspect;
use crate::suggest::propose::{Knobs, NoRule, Proposed, Verdict};
use crate::suggest::stats::{rate_of, Hours, SignatureStats};
use crate::suggest::today::Kept;
use crate::suggest::verdict::{Decision, Judgement};

use super::html::esc;
use super::markdown::{code_span, text as md};
use super::mode::{Baseline, Mode};
use super::records::backtest_json;
use super::sinks::sink;
use super::stderr::Stderr;
use super::style::Style;
use super::table::{write_comparison, write_method_line};
use super::text::shown;
use super::words::{backtest_sentence, failed_to_pending_words, plan_sentence};
use super::Format;

/// Signatures the table, the page and the report list.
pub const TOP: usize = 20;

/// The commands the table ends with.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    /// Writes the proposal (`-o policy`).
    pub write: String,
    /// Searches its limits further; `None` without a Retry rule.
    pub tune: Option<String>,
}

/// `--backtest-at`'s split.
#[derive(Debug, Clone)]
pub struct BacktestHead {
    pub at: String,
    pub train_jobs: u64,
    pub test_jobs: u64,
}

/// What was learned and proposed: everything but the comparisons.
/// The proposal as its head says it, before the comparison.
#[derive(Clone, Copy)]
pub struct Head<'a> {
    pub engine: EngineKind,
    pub name: &'a str,
    pub rules: &'a [Proposed],
    /// Today's rules kept after the proposal's own.
    pub kept: &'a [Kept],
    pub upstream: Option<&'a Upstream>,
    /// The policy's `retryLimit` as `-o policy` writes it (`None`: not written, design only).
    pub policy_retry_limit: Option<u32>,
}

pub struct Report<'a> {
    pub engine: EngineKind,
    /// Why that engine decides (docs/engines.md "Which engine decides"): the flag, or the
    /// dialect it was taken from.
    pub engine_from: EngineFrom,
    pub name: &'a str,
    pub knobs: Knobs,
    /// Jobs learned from (before `--backtest-at`, when given).
    pub jobs: u64,
    pub failed_runs: u64,
    /// Every signature (sorted by hours) and its verdict.
    pub signatures: &'a [(&'a SignatureStats, Verdict)],
    /// The proposed rules in the policy's order.
    pub rules: &'a [Proposed],
    pub kept: &'a [Kept],
    pub upstream: Option<&'a Upstream>,
    /// The policy's `retryLimit` as `-o policy` writes it (`None`: not written, design only).
    pub policy_retry_limit: Option<u32>,
    /// The documents `-o policy` writes (markdown and html carry them).
    pub documents: &'a str,
    pub suspects: &'a [Suspect],
    pub baseline_from: Baseline,
    pub commands: Commands,
    pub backtest: Option<BacktestHead>,
}

/// What a comparison's sink saw, for the formats that put it in words.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub comparison: Comparison,
    pub estimates: Option<Estimates>,
    /// Jobs Succeeded under the baseline and not under the proposal.
    pub false_kills: u64,
    pub false_kill_jobs: Vec<String>,
    /// The first jobs lost (Succeeded under the baseline, Failed under the proposal).
    pub lost_jobs: Vec<String>,
}

/// The backtest's figures after its comparison.
#[derive(Debug, Clone)]
pub struct BacktestTail {
    pub false_kills: u64,
    pub false_kill_jobs: Vec<String>,
    pub gpu_hours_saved: f64,
    pub estimates: Option<Value>,
    /// The estimates' backtest in words.
    pub estimates_words: Option<String>,
}

/// `gpuHoursSaved` = removed − added − expected (the proposal's Pending jobs) + the
/// baseline's own expected GPU-hours over its Pending jobs.
pub fn backtest_tail(
    c: &Captured,
    baseline_pending_gpu_hours: f64,
    estimates: Option<&crate::replay::backtest::Backtest>,
) -> BacktestTail {
    let expected = c.estimates.as_ref().map_or(0.0, |e| e.pending.gpu_hours);
    BacktestTail {
        false_kills: c.false_kills,
        false_kill_jobs: c.false_kill_jobs.clone(),
        gpu_hours_saved: hours(c.comparison.gpu_removed) - hours(c.comparison.gpu_added) - expected
            + baseline_pending_gpu_hours,
        estimates: estimates.map(backtest_json),
        estimates_words: estimates.map(backtest_sentence),
    }
}

/// A sink that renders a comparison as `simulate` does (JSON, YAML, or nothing) and keeps
/// its totals and false kills.
pub struct CaptureSink<'a> {
    inner: Box<dyn Sink + 'a>,
    captured: Captured,
}

impl<'a> CaptureSink<'a> {
    /// `format`: JSON and YAML render the comparison into `out`; the other formats (and
    /// `None`, a plain replay) only count, their sink's table going to `out`, which is then
    /// a writer that keeps nothing ([`Doc::member`] gives one for those formats).
    pub fn new(format: impl Into<Option<Format>>, out: &'a mut dyn Write, stderr: Stderr<'a>) -> CaptureSink<'a> {
        let (fmt, mode) = match format.into().map(one_record) {
            Some(f @ (Format::Json | Format::Yaml)) => (f, compare_mode()),
            Some(_) => (Format::Table, compare_mode()),
            None => (Format::Table, Mode::Replay { bulk: true }),
        };
        CaptureSink {
            inner: sink(fmt, mode, out, stderr),
            captured: Captured::default(),
        }
    }

    /// The totals, with the comparison the replay returned.
    pub fn finish(mut self, comparison: Comparison) -> Captured {
        self.captured.comparison = comparison;
        self.captured
    }

    /// A plain replay's expected GPU-hours over its Pending jobs.
    pub fn pending_gpu_hours(&self) -> f64 {
        self.captured.estimates.as_ref().map_or(0.0, |e| e.pending.gpu_hours)
    }
}

/// `{suggest: …}` is one record, on one line: its JSON Lines (which `suggest -o` does not
/// offer) is its JSON.
fn one_record(format: Format) -> Format {
    match format {
        Format::Jsonl => Format::Json,
        f => f,
    }
}

fn compare_mode() -> Mode {
    Mode::Compare {
        all_changes: false,
        baseline: Baseline::Files,
    }
}

impl Sink for CaptureSink<'_> {
    fn needs(&self) -> Needs {
        // It counts the false kills of each changed job it is handed: never a bare record.
        Needs {
            change_json: false,
            ..self.inner.needs()
        }
    }
    fn begin(&mut self) -> io::Result<()> {
        self.inner.begin()
    }
    fn progress(&mut self, at: Progress) {
        self.inner.progress(at)
    }
    fn job(&mut self, report: &crate::engine::JobReport, rendered: &[u8]) -> io::Result<()> {
        self.inner.job(report, rendered)
    }
    fn change(&mut self, change: &Change<'_>) -> io::Result<()> {
        let d = change.diff;
        if d.baseline.final_state == Final::Succeeded && d.candidate.final_state != Final::Succeeded {
            self.captured.false_kills += 1;
            if self.captured.false_kill_jobs.len() < 20 {
                self.captured.false_kill_jobs.push(d.job.clone());
            }
        }
        if d.transition() == Some(Transition::Lost) && self.captured.lost_jobs.len() < 20 {
            self.captured.lost_jobs.push(d.job.clone());
        }
        self.inner.change(change)
    }
    fn message(&mut self, message: &Message<'_>) -> io::Result<()> {
        // The proposal stands in for every policy: a queue without a document of its own
        // gets it by design, not by a mistake worth a warning.
        if matches!(message, Message::MissingQueue { .. }) {
            return Ok(());
        }
        self.inner.message(message)
    }
    fn end(&mut self, totals: Totals<'_>) -> io::Result<()> {
        let e = match totals {
            Totals::Replay { estimates, .. } | Totals::Compare { estimates, .. } => estimates,
        };
        self.captured.estimates = Some(e.clone());
        self.inner.end(totals)
    }
}

/// Where a streamed comparison goes: JSON without its outer braces, YAML indented, or
/// nowhere.
pub struct Member<'a> {
    out: &'a mut dyn Write,
    kind: Format,
    indent: usize,
    /// JSON: the opening brace is still to drop; the last bytes held back (the closing
    /// brace and newline).
    skipped_open: bool,
    held: Vec<u8>,
    /// YAML: at the start of a line.
    at_line_start: bool,
}

impl Write for Member<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.kind {
            Format::Json => {
                let mut b = buf;
                if !self.skipped_open && !b.is_empty() {
                    b = &b[1..];
                    self.skipped_open = true;
                }
                self.held.extend_from_slice(b);
                if self.held.len() > 2 {
                    let n = self.held.len() - 2;
                    self.out.write_all(&self.held[..n])?;
                    self.held.drain(..n);
                }
            }
            Format::Yaml => {
                let pad = " ".repeat(self.indent);
                for line in buf.split_inclusive(|&c| c == b'\n') {
                    if self.at_line_start {
                        self.out.write_all(pad.as_bytes())?;
                    }
                    self.out.write_all(line)?;
                    self.at_line_start = line.ends_with(b"\n");
                }
            }
            _ => {}
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Member<'_> {
    /// Drops the JSON's closing brace (and newline).
    pub fn finish(&mut self) -> io::Result<()> {
        if self.kind == Format::Json {
            let mut held = std::mem::take(&mut self.held);
            if held.last() == Some(&b'\n') {
                held.pop();
            }
            if held.last() == Some(&b'}') {
                held.pop();
            }
            self.out.write_all(&held)?;
        }
        Ok(())
    }
}

/// The `{suggest: …}` record written in pieces around the streamed comparisons, or the
/// other formats written at the end.
pub struct Doc {
    format: Format,
    style: Style,
}

fn hours_json(h: &Hours) -> Value {
    json!({"failed": hours(h.failed), "after": hours(h.after), "futile": hours(h.futile)})
}

fn tally_json(t: crate::replay::estimate::Tally) -> Value {
    json!({"trials": t.trials, "successes": t.successes})
}

fn no_rule_json(n: &NoRule) -> Value {
    Value::String(n.to_string())
}

/// One signature's record.
pub fn signature_json(s: &SignatureStats, v: &Verdict) -> Value {
    let (rate, low, high) = match s.rate() {
        Some((r, l, h)) => (json!(r), json!(l), json!(h)),
        None => (Value::Null, Value::Null, Value::Null),
    };
    let depths: Vec<Value> = ["1", "2", "3", "4", "5+"]
        .iter()
        .zip(s.by_depth)
        .map(|(d, t)| json!({"depth": d, "trials": t.trials, "successes": t.successes}))
        .collect();
    let current: Vec<Value> = s
        .current_sorted()
        .into_iter()
        .map(|(rule, action, runs)| json!({"rule": rule, "action": action.as_str(), "runs": runs}))
        .collect();
    let top: Vec<Value> = s
        .top_nodes()
        .into_iter()
        .map(|(node, runs)| json!({"node": node, "runs": runs}))
        .collect();
    let mut m = Map::new();
    m.insert("signature".into(), json!(s.text));
    m.insert("failedRuns".into(), json!(s.failed_runs));
    m.insert("jobs".into(), json!(s.jobs));
    m.insert("trials".into(), json!(s.trials.trials));
    m.insert("successes".into(), json!(s.trials.successes));
    m.insert("rate".into(), rate);
    m.insert("low".into(), low);
    m.insert("high".into(), high);
    m.insert("byDepth".into(), Value::Array(depths));
    m.insert("recorded".into(), json!(s.recorded));
    m.insert("current".into(), Value::Array(current));
    m.insert("undecided".into(), json!(s.undecided()));
    m.insert("gpuHours".into(), hours_json(&s.gpu));
    m.insert("cpuHours".into(), hours_json(&s.cpu));
    m.insert(
        "nodes".into(),
        json!({
            "distinct": s.nodes.len(),
            "top": top,
            "sameNode": tally_json(s.same_node),
            "otherNode": tally_json(s.other_node),
        }),
    );
    match v {
        Verdict::Rule(p) => {
            m.insert("proposed".into(), rule_json(p));
        }
        Verdict::None(why) => {
            m.insert("proposed".into(), Value::Null);
            m.insert("noRule".into(), no_rule_json(why));
        }
    }
    Value::Object(m)
}

fn rule_json(p: &Proposed) -> Value {
    let mut rule = json!({
        "signature": p.text,
        "action": p.action.as_str(),
        "limit": p.limit,
        "avoidSameNode": p.avoid_same_node,
    });
    if let Some(d) = p.extrapolated_from {
        rule["extrapolatedFrom"] = json!(d);
    }
    rule
}

/// `(extrapolated from depth D)` after a limit `--extrapolate` took past its evidence.
pub fn extrapolated(p: &Proposed) -> String {
    match p.extrapolated_from {
        Some(0) => " (extrapolated from all depths)".to_string(),
        Some(d) => format!(" (extrapolated from depth {d})"),
        None => String::new(),
    }
}

fn suspect_json(s: &Suspect) -> Value {
    let sigs: Vec<Value> = s
        .signatures
        .iter()
        .map(|(sig, runs)| json!({"signature": sig, "runs": runs}))
        .collect();
    json!({"node": s.node, "runs": s.runs, "failed": s.failed, "tail": s.tail, "signatures": sigs})
}

/// A member of the record written one at a time ([`write_fields`]).
enum Field<'a> {
    One(&'static str, Value),
    /// A list whose items are built, written and dropped one by one: a list of every
    /// signature held whole as `Value`s (several copies of it, as JSON, YAML and text) took
    /// 280 MiB at 10,000 signatures.
    Each(&'static str, Box<dyn Iterator<Item = Value> + 'a>),
}

/// What was learned: the counts, every signature, the suspect nodes.
fn head_fields<'a>(r: &'a Report<'a>) -> [Field<'a>; 4] {
    [
        Field::One("jobs", json!(r.jobs)),
        Field::One("failedRuns", json!(r.failed_runs)),
        Field::Each(
            "signatures",
            Box::new(r.signatures.iter().map(|(s, v)| signature_json(s, v))),
        ),
        Field::Each("suspectNodes", Box::new(r.suspects.iter().map(suspect_json))),
    ]
}

/// `fields` as the members of a JSON object, without braces (`"k":v,"k":[…]`), or of a YAML
/// mapping indented by `indent`: the bytes [`json_fields`] and [`yaml_of`] give of the whole
/// map, a list's items rendered one at a time (a YAML block sequence is its items' texts one
/// after the other, at its key's indent).
fn write_fields<'a>(
    out: &mut dyn Write,
    format: Format,
    fields: impl IntoIterator<Item = Field<'a>>,
    indent: usize,
) -> io::Result<()> {
    for (k, field) in fields.into_iter().enumerate() {
        if k > 0 && format == Format::Json {
            out.write_all(b",")?;
        }
        let (key, value) = match field {
            Field::One(key, value) => (key, value),
            Field::Each(key, items) => {
                let mut items = items.peekable();
                if items.peek().is_none() {
                    // `[]` in both formats, as the whole map gives it.
                    (key, Value::Array(Vec::new()))
                } else {
                    write_items(out, format, key, items, indent)?;
                    continue;
                }
            }
        };
        let mut m = Map::new();
        m.insert(key.into(), value);
        match format {
            Format::Json => out.write_all(json_fields(&m).as_bytes())?,
            _ => out.write_all(yaml_of(&m, indent).as_bytes())?,
        }
    }
    Ok(())
}

/// A list of at least one item as a member of [`write_fields`]'s.
fn write_items(
    out: &mut dyn Write,
    format: Format,
    key: &str,
    items: impl Iterator<Item = Value>,
    indent: usize,
) -> io::Result<()> {
    if format == Format::Json {
        write!(out, "{}:[", json!(key))?;
        for (k, item) in items.enumerate() {
            if k > 0 {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut *out, &item).map_err(io::Error::other)?;
        }
        return out.write_all(b"]");
    }
    writeln!(out, "{}{key}:", " ".repeat(indent))?;
    for item in items {
        out.write_all(yaml_lines(&Value::Array(vec![item]), indent).as_bytes())?;
    }
    Ok(())
}

fn proposal_fields(head: &Head<'_>) -> Map<String, Value> {
    let Head {
        engine,
        name,
        rules,
        kept,
        upstream,
        policy_retry_limit,
    } = *head;
    let mut m = Map::new();
    m.insert(
        "engine".into(),
        json!(match engine {
            EngineKind::Design => "design",
            EngineKind::Upstream => "upstream",
        }),
    );
    m.insert("policy".into(), json!(name));
    m.insert("rules".into(), Value::Array(rules.iter().map(rule_json).collect()));
    m.insert(
        "kept".into(),
        Value::Array(
            kept.iter()
                .map(|k| json!({"from": k.from, "decidedRuns": k.decided_runs}))
                .collect(),
        ),
    );
    // The policy's `retryLimit` as `-o policy` writes it (`null`: not written, design only).
    m.insert("policyRetryLimit".into(), json!(policy_retry_limit));
    if let Some(u) = upstream {
        m.insert("raises".into(), json!(u.raises));
        if let Some(by) = &u.cut_by {
            m.insert("cut".into(), json!({"signatures": u.cut, "by": by}));
        }
        let cats: Vec<Value> = u
            .categories
            .iter()
            .map(|c| json!({"name": c.name, "action": if c.delete {"Delete"} else {"Retain"}, "signatures": c.signatures}))
            .collect();
        m.insert("categories".into(), Value::Array(cats));
    }
    m
}

fn yaml_of(m: &Map<String, Value>, indent: usize) -> String {
    yaml_lines(&Value::Object(m.clone()), indent)
}

/// `value` as YAML, each line indented by `indent`.
fn yaml_lines(value: &Value, indent: usize) -> String {
    let text = serde_yaml::to_string(value).unwrap_or_default();
    let pad = " ".repeat(indent);
    let mut out = String::new();
    for line in text.lines() {
        if line == "---" {
            continue;
        }
        out.push_str(&pad);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `"k":v,"k":v` of a map, without braces.
fn json_fields(m: &Map<String, Value>) -> String {
    let s = Value::Object(m.clone()).to_string();
    s[1..s.len() - 1].to_string()
}

impl Doc {
    /// `style`: the table's (the comparison's plan line is bold in colour).
    pub fn new(format: Format, style: Style) -> Doc {
        Doc {
            format: one_record(format),
            style,
        }
    }

    fn streams(&self) -> bool {
        matches!(self.format, Format::Json | Format::Yaml)
    }

    /// The proposal's rules, before its comparison (the record's first member: what is
    /// learned is complete only once the comparison has read the baseline's decisions).
    pub fn proposal_head(&mut self, out: &mut dyn Write, head: &Head<'_>) -> io::Result<()> {
        let fields = proposal_fields(head);
        match self.format {
            Format::Json => write!(out, "{{\"suggest\":{{\"proposal\":{{{}", json_fields(&fields)),
            Format::Yaml => write!(out, "suggest:\n  proposal:\n{}", yaml_of(&fields, 4)),
            _ => Ok(()),
        }
    }

    /// Where a comparison streams (`key` is the sink's own: `comparison`).
    pub fn member<'o>(&mut self, out: &'o mut dyn Write, _key: &str) -> io::Result<Member<'o>> {
        if self.format == Format::Json {
            out.write_all(b",")?;
        }
        Ok(Member {
            out,
            kind: if self.streams() { self.format } else { Format::Table },
            indent: 4,
            skipped_open: false,
            held: Vec::new(),
            at_line_start: true,
        })
    }

    /// The rules' check, after the proposal's comparison, which closes the proposal; then
    /// what was learned.
    pub fn after_comparison(
        &mut self,
        out: &mut dyn Write,
        r: &Report<'_>,
        shadowed: &[(String, u64)],
    ) -> io::Result<()> {
        let shadowed = Field::Each(
            "shadowedRuns",
            Box::new(shadowed.iter().map(|(s, n)| json!({"signature": s, "runs": n}))),
        );
        match self.format {
            Format::Json => {
                out.write_all(b",")?;
                write_fields(out, self.format, [shadowed], 4)?;
                out.write_all(b"},")?;
                write_fields(out, self.format, head_fields(r), 2)
            }
            Format::Yaml => {
                write_fields(out, self.format, [shadowed], 4)?;
                write_fields(out, self.format, head_fields(r), 2)
            }
            _ => Ok(()),
        }
    }

    pub fn backtest_head(&mut self, out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
        let Some(b) = &r.backtest else { return Ok(()) };
        let mut m = Map::new();
        m.insert("at".into(), json!(b.at));
        m.insert("trainJobs".into(), json!(b.train_jobs));
        m.insert("testJobs".into(), json!(b.test_jobs));
        match self.format {
            Format::Json => write!(out, ",\"backtest\":{{{}", json_fields(&m)),
            Format::Yaml => write!(out, "  backtest:\n{}", yaml_of(&m, 4)),
            _ => Ok(()),
        }
    }

    pub fn backtest_tail(&mut self, out: &mut dyn Write, t: &BacktestTail) -> io::Result<()> {
        let mut m = Map::new();
        m.insert("falseKills".into(), json!(t.false_kills));
        m.insert("falseKillJobs".into(), json!(t.false_kill_jobs));
        m.insert("gpuHoursSaved".into(), json!(t.gpu_hours_saved));
        m.insert("estimates".into(), t.estimates.clone().unwrap_or(Value::Null));
        match self.format {
            Format::Json => write!(out, ",{}}}", json_fields(&m)),
            Format::Yaml => write!(out, "{}", yaml_of(&m, 4)),
            _ => Ok(()),
        }
    }

    /// The end of the record, or the whole of the other formats.
    pub fn finish(
        &mut self,
        out: &mut dyn Write,
        r: &Report<'_>,
        whole: &Captured,
        backtest: Option<&(Captured, BacktestTail)>,
        judgement: &Judgement,
    ) -> io::Result<()> {
        let mut m = Map::new();
        m.insert(
            "verdict".into(),
            json!({"decision": judgement.decision.as_str(), "reasons": judgement.reasons}),
        );
        match self.format {
            Format::Json | Format::Jsonl => writeln!(out, ",{}}}}}", json_fields(&m)),
            Format::Yaml => write!(out, "{}", yaml_of(&m, 2)),
            Format::Table => table(out, self.style, r, whole, backtest, judgement),
            Format::Markdown => out.write_all(markdown(r, whole, backtest, judgement).as_bytes()),
            Format::Html => out.write_all(html(r, whole, backtest, judgement).as_bytes()),
        }
    }
}

/// A share as a percentage with one decimal.
fn pct(p: f64) -> String {
    format!("{:.1}%", p * 100.0)
}

/// `12.5%  (8.1–18.3%)`, or `-` without trials.
fn rate_words(s: &SignatureStats) -> String {
    match s.rate() {
        Some((r, l, h)) => format!("{} ({:.1}–{})", pct(r), l * 100.0, pct(h)),
        None => "-".into(),
    }
}

/// The evidence of a rule, in one line (a comment above it in the documents).
pub fn evidence(s: &SignatureStats) -> String {
    let mut e = format!(
        "{} failed runs in {}; {} retried, {} succeeded",
        s.failed_runs,
        plural(s.jobs, "job", "jobs"),
        s.trials.trials,
        s.trials.successes
    );
    if let Some((r, l, h)) = s.rate() {
        let _ = write!(e, ": {} (95%: {:.1}–{})", pct(r), l * 100.0, pct(h));
    }
    let gpu = hours(s.gpu.failed + s.gpu.after);
    if gpu > 0.0 {
        let _ = write!(e, "; {gpu:.1} GPU-hours, {:.1} of them futile", hours(s.gpu.futile));
    }
    e
}

/// What the baseline does with a signature, in a few words: its commonest decision, and the
/// share of the signature's failed runs it decided when that is not all of them, said as
/// what it did (`Retry (today/default, 89.2% of runs retried)`): a bare share read as a
/// success rate.
fn today(s: &SignatureStats) -> String {
    match s.current_sorted().first() {
        Some((rule, action, runs)) => {
            let share = *runs as f64 / s.failed_runs.max(1) as f64;
            if share >= 0.995 {
                format!("{} ({rule})", action.as_str())
            } else {
                let did = match action {
                    Action::Retry => "retried",
                    Action::Fail => "failed",
                };
                format!("{} ({rule}, {} of runs {did})", action.as_str(), pct(share))
            }
        }
        None => "undecided".into(),
    }
}

fn proposal_words(v: &Verdict) -> String {
    match v {
        Verdict::Rule(p) => match p.limit {
            Some(l) if p.avoid_same_node => format!("Retry ×{l}, other node{}", extrapolated(p)),
            Some(l) => format!("Retry ×{l}{}", extrapolated(p)),
            None => "Fail".into(),
        },
        Verdict::None(NoRule::TooFewTrials { trials, .. }) => format!("as today (too few trials: {trials})"),
        Verdict::None(_) => "as today (no rule)".into(),
    }
}

/// The first 5 signatures without a rule of their own for another reason than too few
/// trials (which their cell says), each with its reason: listed under the signatures.
fn no_rules<'r>(r: &'r Report<'_>) -> impl Iterator<Item = (&'r SignatureStats, &'r NoRule)> {
    r.signatures
        .iter()
        .filter_map(|(s, v)| match v {
            Verdict::None(w) if !matches!(w, NoRule::TooFewTrials { .. }) => Some((*s, w)),
            _ => None,
        })
        .take(5)
}

/// A signature cut for a table cell, [`shown`] escaped first so that the cut counts what the
/// terminal shows.
fn short(s: &str, n: usize) -> String {
    let s = shown(s);
    if s.chars().count() <= n {
        return s.into_owned();
    }
    let mut t: String = s.chars().take(n - 1).collect();
    t.push('…');
    t
}

fn gpu_cell(s: &SignatureStats) -> String {
    format!("{:.1}", hours(s.gpu.failed + s.gpu.after))
}

/// Where the engine came from (docs/engines.md "Which engine decides").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineFrom {
    /// `--engine`.
    Flag,
    /// The `--baseline` files' RetryPolicy documents, all `armadaproject.io/v1beta1` (upstream)
    /// or not (design): what they are, in words (`is armadaproject.io/v1`).
    Baseline(&'static str),
    /// `--baseline-from-cluster`: upstream's server stores today's Armada's policies.
    Cluster,
    /// No baseline to take a dialect from: the design's.
    NoBaseline,
}

/// The table's first line: which engine decided, why, and how to pick the other.
fn engine_line(engine: EngineKind, from: EngineFrom) -> String {
    let why = match (from, engine) {
        (EngineFrom::Flag, _) => "`--engine`",
        (EngineFrom::Baseline(what), _) => &format!("the baseline {what}"),
        (EngineFrom::Cluster, _) => "the cluster stores today's Armada's policies",
        (EngineFrom::NoBaseline, _) => "no baseline to take a dialect from",
    };
    let other = match engine {
        EngineKind::Upstream => "`--engine design` proposes for the design",
        EngineKind::Design => "`--engine upstream` proposes for today's Armada",
    };
    format!("Engine: {} ({why}); {other}.", engine.as_str())
}

fn table(
    out: &mut dyn Write,
    style: Style,
    r: &Report<'_>,
    whole: &Captured,
    backtest: Option<&(Captured, BacktestTail)>,
    judgement: &Judgement,
) -> io::Result<()> {
    writeln!(out, "{}", engine_line(r.engine, r.engine_from))?;
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
    let rows: Vec<[String; 7]> = r
        .signatures
        .iter()
        .take(TOP)
        .map(|(s, v)| {
            [
                short(&s.text, 48),
                s.failed_runs.to_string(),
                s.trials.trials.to_string(),
                rate_words(s),
                gpu_cell(s),
                today(s),
                proposal_words(v),
            ]
        })
        .collect();
    let head = [
        "SIGNATURE",
        "RUNS",
        "TRIALS",
        "RETRY SUCCESS (95%)",
        "GPU-H",
        "TODAY",
        "PROPOSED",
    ];
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
    writeln!(out, "{}", line(head.to_vec()))?;
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
    writeln!(out)?;
    if r.suspects.is_empty() {
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
    // The policy's `retryLimit` as `-o policy` writes it, in both dialects.
    let limit = match r.policy_retry_limit {
        Some(l) => format!("retryLimit {l}"),
        None => "retryLimit unset: each rule's own, else the global limit".to_string(),
    };
    let dialect = match r.engine {
        EngineKind::Design => format!("the design dialect, {limit}"),
        EngineKind::Upstream => format!("today's Armada: a categorizer and a v1beta1 policy, {limit}"),
    };
    let retry = r.rules.iter().filter(|p| p.limit.is_some()).count();
    let kept = match r.kept.len() {
        0 => String::new(),
        n => format!(", then {} kept from today", plural(n as u64, "rule", "rules")),
    };
    writeln!(
        out,
        "Proposal: policy `{}` ({dialect}), {} of its own ({retry} Retry, {} Fail){kept}.",
        r.name,
        plural(r.rules.len() as u64, "rule", "rules"),
        r.rules.len() - retry
    )?;
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
    }
    writeln!(out, "Against the baseline on the same history:")?;
    write_comparison(out, style, &whole.comparison)?;
    if let Some(e) = &whole.estimates {
        estimate_lines(out, &whole.comparison, e)?;
    }
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
    writeln!(out)?;
    writeln!(
        out,
        "Verdict: {}: {}",
        judgement.decision.words(),
        judgement.reasons.join("; ")
    )?;
    // The proposal is worth writing only when it is worth adopting.
    if judgement.decision == Decision::Adopt {
        writeln!(out, "Write the proposal:  {}", shown(&r.commands.write))?;
    }
    if let Some(t) = &r.commands.tune {
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

/// What the comparison observed, as the headlines say it (the estimate is said apart).
fn observed(c: &Comparison) -> String {
    format!(
        "{} rescued, {} lost; retries +{} / −{}; GPU-hours +{:.1} / −{:.1}",
        c.rescued,
        c.lost,
        c.retries_added,
        c.retries_removed,
        hours(c.gpu_added),
        hours(c.gpu_removed)
    )
}

/// The estimate for the Pending jobs, apart from what was observed (docs/suggest.md "The
/// verdict"): the expected successes of the Failed → Pending jobs and the GPU-hours the
/// Pending jobs are expected to take; `None` without a Pending job.
fn estimated(c: &Comparison, e: &Estimates) -> Option<String> {
    let n = c.failed_to_pending();
    let p = &e.pending;
    let mut parts = Vec::new();
    if n > 0 {
        parts.push(failed_to_pending_words(n, &e.asked));
    }
    if p.jobs > p.without_estimate {
        parts.push(format!(
            "{:.1} more GPU-hours for the {} Pending",
            p.gpu_hours,
            plural(p.jobs, "job", "jobs")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn markdown(
    r: &Report<'_>,
    whole: &Captured,
    backtest: Option<&(Captured, BacktestTail)>,
    judgement: &Judgement,
) -> String {
    let mut m = String::new();
    let c = &whole.comparison;
    let _ = writeln!(m, "## Proposed retry policy `{}`\n", md(r.name));
    let _ = writeln!(
        m,
        "**Verdict: {}** — {}\n",
        judgement.decision.words(),
        md(&judgement.reasons.join("; "))
    );
    let _ = writeln!(
        m,
        "Learned from {} ({} failed runs, {}).\n",
        plural(r.jobs, "job", "jobs"),
        r.failed_runs,
        plural(r.signatures.len() as u64, "signature", "signatures")
    );
    let _ = writeln!(m, "**Observed against the baseline:** {}.\n", observed(c));
    if let Some(line) = whole.estimates.as_ref().and_then(|e| estimated(c, e)) {
        let _ = writeln!(m, "**Estimated** (not observed): {}.\n", md(&line));
    }
    let _ = writeln!(m, "{}\n", md(&plan_sentence(c)));
    if let (Some(b), Some((bc, t))) = (&r.backtest, backtest) {
        let _ = writeln!(
            m,
            "**Backtest** (learned before {}, judged on {}): {} rescued, {} lost, **{} false kills**, **{:.1} GPU-hours saved**.\n",
            md(&b.at),
            plural(b.test_jobs, "later job", "later jobs"),
            bc.comparison.rescued,
            bc.comparison.lost,
            t.false_kills,
            t.gpu_hours_saved
        );
    }
    let _ = writeln!(
        m,
        "| signature | runs | retry success (95%) | GPU-h | today | proposed |"
    );
    let _ = writeln!(m, "|---|---:|---|---:|---|---|");
    for (s, v) in r.signatures.iter().take(TOP) {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} |",
            md(&short(&s.text, 80)),
            s.failed_runs,
            rate_words(s),
            gpu_cell(s),
            md(&today(s)),
            md(&proposal_words(v))
        );
    }
    for (k, (s, why)) in no_rules(r).enumerate() {
        let head = if k == 0 { "\n" } else { "" };
        let _ = writeln!(
            m,
            "{head}- no rule for {}: {}",
            md(&short(&s.text, 80)),
            md(&why.to_string())
        );
    }
    if !r.suspects.is_empty() {
        let _ = writeln!(m, "\n**Suspect nodes:**\n");
        for s in r.suspects.iter().take(TOP) {
            let _ = writeln!(
                m,
                "- {}: {} of {} runs failed (p = {:.1e})",
                md(&s.node),
                s.failed,
                s.runs,
                s.tail
            );
        }
    }
    let _ = writeln!(
        m,
        "\n<details><summary>The proposed documents</summary>\n\n~~~yaml\n{}~~~\n\n</details>",
        r.documents
    );
    if judgement.decision == Decision::Adopt {
        let _ = writeln!(m, "\nWrite it: {}", code_span(&r.commands.write));
    }
    m
}

fn html(
    r: &Report<'_>,
    whole: &Captured,
    backtest: Option<&(Captured, BacktestTail)>,
    judgement: &Judgement,
) -> String {
    let mut b = String::new();
    let c = &whole.comparison;
    let verdict = format!(
        "<p class=\"verdict\"><b>Verdict: {}</b> — {}</p>\n",
        esc(judgement.decision.words()),
        esc(&judgement.reasons.join("; "))
    );
    let _ = writeln!(b, "<h1>Proposed retry policy <code>{}</code></h1>", esc(r.name));
    b.push_str(&verdict);
    let _ = writeln!(
        b,
        "<p class=\"observed\">Observed against the baseline: {}.</p>",
        esc(&observed(c))
    );
    if let Some(line) = whole.estimates.as_ref().and_then(|e| estimated(c, e)) {
        let _ = writeln!(
            b,
            "<p class=\"estimated\">Estimated (not observed): {}.</p>",
            esc(&line)
        );
    }
    let _ = writeln!(
        b,
        "<p>{}</p>\n<p>Learned from {} ({} failed runs, {}).</p>",
        esc(&plan_sentence(c)),
        esc(&plural(r.jobs, "job", "jobs")),
        r.failed_runs,
        esc(&plural(r.signatures.len() as u64, "signature", "signatures"))
    );
    if let Some(u) = r.upstream {
        if !u.categories.is_empty() {
            b.push_str("<p>New categories of the executor's config:</p>\n<ul>\n");
            for cat in &u.categories {
                let splits = cat
                    .splits
                    .as_ref()
                    .map(|s| format!(" (splits <code>{}</code>)", esc(s)))
                    .unwrap_or_default();
                let _ = writeln!(
                    b,
                    "<li><code>{}</code>{splits}: {}</li>",
                    esc(&cat.name),
                    esc(&cat.signatures.join(", "))
                );
            }
            b.push_str("</ul>\n");
        }
    }
    if let (Some(bh), Some((bc, t))) = (&r.backtest, backtest) {
        let _ = writeln!(
            b,
            "<p class=\"backtest\">Backtest (learned before {}, judged on {}): {} rescued, {} lost, <b>{} false kills</b>, <b>{:.1} GPU-hours saved</b>.</p>",
            esc(&bh.at),
            esc(&plural(bh.test_jobs, "later job", "later jobs")),
            bc.comparison.rescued,
            bc.comparison.lost,
            t.false_kills,
            t.gpu_hours_saved
        );
    }
    // Hours by signature: recovered (the runs after a failure that led to success) vs futile.
    let top: Vec<&(&SignatureStats, Verdict)> = r.signatures.iter().take(TOP).collect();
    let max = top
        .iter()
        .map(|(s, _)| hours(s.gpu.failed + s.gpu.after))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let _ = write!(
        b,
        "<h2>GPU-hours by signature</h2>\n<p class=\"note\">Bars: the failed runs (grey), the runs after them that a retry recovered (green) and those in jobs that never succeeded (red).</p>\n<svg role=\"img\" aria-label=\"GPU-hours by signature\" viewBox=\"0 0 900 {}\" width=\"100%\" font-size=\"12\">",
        24 * top.len().max(1)
    );
    for (i, (s, _)) in top.iter().enumerate() {
        let y = i * 24;
        let scale = |h: u128| hours(h) / max * 480.0;
        let failed = scale(s.gpu.failed);
        let futile = scale(s.gpu.futile);
        let recovered = scale(s.gpu.after - s.gpu.futile.min(s.gpu.after));
        let _ = write!(
            b,
            "<text x=\"0\" y=\"{}\">{}</text><rect class=\"failed\" x=\"360\" y=\"{}\" width=\"{failed:.1}\" height=\"16\" fill=\"#9aa5b1\"/><rect class=\"recovered\" x=\"{:.1}\" y=\"{}\" width=\"{recovered:.1}\" height=\"16\" fill=\"#2f9e44\"/><rect class=\"futile\" x=\"{:.1}\" y=\"{}\" width=\"{futile:.1}\" height=\"16\" fill=\"#e03131\"/><text x=\"{:.1}\" y=\"{}\">{:.1}</text>",
            y + 14,
            esc(&short(&s.text, 52)),
            y + 2,
            360.0 + failed,
            y + 2,
            360.0 + failed + recovered,
            y + 2,
            366.0 + failed + recovered + futile,
            y + 14,
            hours(s.gpu.failed + s.gpu.after)
        );
    }
    b.push_str("</svg>\n");
    let _ = write!(
        b,
        "<h2>Signatures</h2>\n<table><thead><tr><th>signature</th><th>runs</th><th>retry success (95%)</th><th>by attempt</th><th>today</th><th>proposed</th></tr></thead><tbody>\n"
    );
    for (s, v) in &top {
        let mut depths = String::new();
        for (d, t) in ["1", "2", "3", "4", "5+"].iter().zip(s.by_depth) {
            match rate_of(t) {
                Some((p, l, h)) => {
                    let _ = write!(
                        depths,
                        "{d}: {} ({:.0}–{:.0}%, n={}) ",
                        pct(p),
                        l * 100.0,
                        h * 100.0,
                        t.trials
                    );
                }
                None => {
                    let _ = write!(depths, "{d}: – ");
                }
            }
        }
        let _ = writeln!(
            b,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"depths\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.text),
            s.failed_runs,
            esc(&rate_words(s)),
            esc(depths.trim_end()),
            esc(&today(s)),
            esc(&proposal_words(v))
        );
    }
    b.push_str("</tbody></table>\n");
    for (s, why) in no_rules(r) {
        let _ = writeln!(
            b,
            "<p class=\"no-rule\">No rule for <code>{}</code>: {}</p>",
            esc(&s.text),
            esc(&why.to_string())
        );
    }
    b.push_str("<h2>Suspect nodes</h2>\n");
    if r.suspects.is_empty() {
        b.push_str("<p>None: no node's failure share is an outlier.</p>\n");
    } else {
        b.push_str("<table><thead><tr><th>node</th><th>runs</th><th>failed</th><th>p</th><th>commonest signatures</th></tr></thead><tbody>\n");
        for s in r.suspects.iter().take(TOP) {
            let sigs: Vec<String> = s.signatures.iter().map(|(t, n)| format!("{} ×{n}", esc(t))).collect();
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1e}</td><td>{}</td></tr>",
                esc(&s.node),
                s.runs,
                s.failed,
                s.tail,
                sigs.join("<br>")
            );
        }
        b.push_str("</tbody></table>\n");
    }
    let _ = writeln!(
        b,
        "<details><summary>The proposed documents</summary><pre>{}</pre></details>",
        esc(r.documents)
    );
    if judgement.decision == Decision::Adopt {
        let _ = writeln!(
            b,
            "<p class=\"note\">Write it: <code>{}</code></p>",
            esc(&shown(&r.commands.write))
        );
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>retryctl suggest: {}</title>\n<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#1f2933}}table{{border-collapse:collapse;margin:8px 0}}td,th{{border-bottom:1px solid #e4e7eb;padding:4px 8px;text-align:left;vertical-align:top}}.note{{color:#616e7c;font-size:12px}}.depths{{font-size:12px}}</style></head>\n<body><main>\n{b}</main></body></html>\n",
        esc(r.name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields written one item at a time are the bytes of the whole map rendered at once, in
    /// JSON and in YAML at any indent: empty lists, one item, many, nested maps and lists, and
    /// strings YAML must quote or break.
    #[test]
    fn fields_streamed_are_the_whole_maps_bytes() {
        let items = || {
            vec![
                json!({"signature": "exit:1@main \"a: b\"", "runs": 3, "nodes": {"top": [{"node": "n", "runs": 1}], "distinct": 1}}),
                json!({"signature": "- x\nsecond line", "runs": null, "empty": [], "map": {}}),
                json!({"signature": "", "rate": 0.5, "deep": [[1, 2], ["x", {"y": "z"}]]}),
            ]
        };
        let fields = |n: usize| {
            [
                Field::One("jobs", json!(7)),
                Field::Each("none", Box::new(std::iter::empty())),
                Field::Each("some", Box::new(items().into_iter().take(n))),
                Field::One("after", json!({"a": [1], "b": "c"})),
            ]
        };
        for n in 0..=3 {
            let mut whole = Map::new();
            whole.insert("jobs".into(), json!(7));
            whole.insert("none".into(), json!([]));
            whole.insert("some".into(), Value::Array(items().into_iter().take(n).collect()));
            whole.insert("after".into(), json!({"a": [1], "b": "c"}));
            let mut json = Vec::new();
            write_fields(&mut json, Format::Json, fields(n), 2).unwrap();
            assert_eq!(String::from_utf8(json).unwrap(), json_fields(&whole), "{n} items");
            for indent in [0, 2, 4] {
                let mut yaml = Vec::new();
                write_fields(&mut yaml, Format::Yaml, fields(n), indent).unwrap();
                assert_eq!(
                    String::from_utf8(yaml).unwrap(),
                    yaml_of(&whole, indent),
                    "{n} items at {indent}"
                );
            }
        }
    }
}
