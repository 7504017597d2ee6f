//! `retryctl simulate`: replay failure histories through the embedded evaluator (SPEC §3).
//!
//! Owns: loading (policies and queues from `-f`, the scheduler config, histories from one
//! file, a JSON Lines file or a directory), streaming bulk input one job at a time, the
//! progress bar, and the exit status. The decisions come from `eval`, the words and
//! layout from `output::simulate`. Must not: print with `println!` or exit.
//!
//! Decisions where SPEC §3 is silent:
//! - a single YAML/JSON history file prints one table per job; a JSON Lines file or a
//!   directory is "bulk": the table format prints only the summary (a million tables help
//!   nobody); `-o json|yaml|jsonl` stream every job in every mode.
//! - `-o json` is always `{"jobs": [...], "summary": {...}}` and `-o yaml` the same shape,
//!   so scripts see one shape whatever the input; `-o jsonl` writes one job per line and
//!   the summary to stderr.
//! - a SchedulerConfig document inside a history file applies to that file's jobs (it
//!   replaces `--scheduler-config`); `--global-max-retries` / `--default-policy` override both.
//! - a bad JSON line or a job naming a missing policy is reported (with its line number)
//!   and skipped; the other jobs still run and the exit status is 3.
//! - JSON Lines: empty lines are skipped; a line longer than 8 MiB is an error.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::app::Context;
use crate::cli::{SimulateArgs, SimulateOutput};
use crate::commands::remote;
use crate::diag::Diagnostic;
use crate::error::{CliError, ExitCode};
use crate::eval::simulator::Simulator;
use crate::eval::summary::Summary;
use crate::eval::{JobReport, Settings};
use crate::input::{self, io_reason, SourceFile, MAX_FILE_BYTES};
use crate::model::document::decode_document;
use crate::model::history::FailureHistory;
use crate::model::scheduler::{parse_scheduler_config, SchedulerConfig};
use crate::model::{parse_documents, Kind, Resource};
use crate::output::{report, simulate as out, Style};
use crate::yaml::{Node, Pos, Value};

/// Messages printed per category before "… and N more" (bulk input can have millions).
const MAX_MESSAGES: u64 = 100;

pub fn run(ctx: &mut Context, args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let simulator = if args.from_server {
        Some(load_from_server(ctx, args)?)
    } else {
        load_policies(ctx, args)?
    };
    let Some(simulator) = simulator else {
        return Ok(ExitCode::InvalidInput);
    };
    let base = base_settings(args)?;
    let mut sink = Sink::new(args.output, ctx.style);
    let history = &args.history;
    let meta = std::fs::metadata(history).map_err(|e| {
        CliError::invalid(format!(
            "cannot read history `{}`: {}",
            history.display(),
            io_reason(&e)
        ))
    })?;
    sink.begin(ctx.out)?;
    if meta.is_dir() {
        sink.bulk = true;
        let mut entries: Vec<PathBuf> = std::fs::read_dir(history)
            .map_err(|e| {
                CliError::invalid(format!(
                    "cannot read directory `{}`: {}",
                    history.display(),
                    io_reason(&e)
                ))
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && matches!(ext(p), "yaml" | "yml" | "json" | "jsonl" | "ndjson"))
            .collect();
        entries.sort();
        let bar = progress(entries.len() as u64, false);
        for path in &entries {
            if matches!(ext(path), "jsonl" | "ndjson") {
                run_jsonl(ctx, args, &simulator, &base, &mut sink, path, None)?;
            } else {
                run_file(ctx, args, &simulator, &base, &mut sink, path)?;
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    } else if matches!(ext(history), "jsonl" | "ndjson") {
        sink.bulk = true;
        let bar = progress(meta.len(), true);
        run_jsonl(ctx, args, &simulator, &base, &mut sink, history, bar.as_ref())?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    } else {
        run_file(ctx, args, &simulator, &base, &mut sink, history)?;
    }
    sink.end(ctx.out, ctx.err)?;
    let s = &sink.summary;
    Ok(if s.errors > 0 {
        ExitCode::InvalidInput
    } else if s.expectation_failed_jobs > 0 || (args.strict && s.contradicted_jobs > 0) {
        ExitCode::Failure
    } else {
        ExitCode::Success
    })
}

fn ext(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

fn progress(len: u64, bytes: bool) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    let template = if bytes {
        "simulating {bar:40} {bytes}/{total_bytes} ({eta} left)"
    } else {
        "simulating {bar:40} {pos}/{len} files ({eta} left)"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}

/// Policies and queues from the server (`--from-server`): every policy and queue, so that
/// each job gets its own queue's policies, as the scheduler would see them now.
fn load_from_server(ctx: &mut Context, args: &SimulateArgs) -> anyhow::Result<Simulator> {
    if !args.source.files.is_empty() {
        return Err(CliError::usage(
            "`--from-server` reads the policies and queues from the server; do not also pass `-f`",
        )
        .into());
    }
    let remote = remote::connect(ctx)?;
    let policies = remote
        .client
        .list_policies()
        .map_err(|e| remote.fail("cannot list retry policies", e))?;
    let queues = remote
        .client
        .list_queues()
        .map_err(|e| remote.fail("cannot list queues", e))?;
    // Only `--retry-policy` stands in for a missing queue: never "every policy on the server".
    let given = args.retry_policies.clone().unwrap_or_default();
    Simulator::new(policies, queues, Some(given))
        .map(Simulator::from_server)
        .map_err(|e| CliError::invalid(e).into())
}

/// Policies and queues from `-f`; `None` after writing the validation report when any
/// document is invalid.
fn load_policies(ctx: &mut Context, args: &SimulateArgs) -> anyhow::Result<Option<Simulator>> {
    let files = input::read_sources(
        &args.source.files,
        args.source.recursive,
        Some(&[Kind::RetryPolicy, Kind::Queue]),
    );
    if report::totals(&files).errors > 0 {
        // The report's summary line goes to stderr too: stdout carries simulation data only.
        let mut summary = Vec::new();
        report::write_text(&files, ctx.style, &mut summary, ctx.err)?;
        ctx.err.write_all(&summary)?;
        writeln!(ctx.err, "error: the policies are invalid; nothing was simulated")?;
        return Ok(None);
    }
    let mut policies = Vec::new();
    let mut queues = Vec::new();
    let mut seen: std::collections::HashMap<(bool, String), String> = std::collections::HashMap::new();
    for file in files {
        for doc in file.documents {
            let (is_policy, name) = match &doc.resource {
                Some(Resource::RetryPolicy(p)) => (true, p.name.clone()),
                Some(Resource::Queue(q)) => (false, q.name.clone()),
                _ => continue,
            };
            if let Some(first) = seen.insert((is_policy, name.clone()), file.name.clone()) {
                let kind = if is_policy { "policy" } else { "queue" };
                return Err(CliError::invalid(format!(
                    "{kind} `{name}` is given twice: in `{first}` and in `{}`",
                    file.name
                ))
                .with_hint("pass each file once (a directory given with -f already includes its files)")
                .into());
            }
            match doc.resource {
                Some(Resource::RetryPolicy(p)) => policies.push(p),
                Some(Resource::Queue(q)) => queues.push(q),
                _ => {}
            }
        }
    }
    Simulator::new(policies, queues, args.retry_policies.clone())
        .map(Some)
        .map_err(|e| CliError::invalid(e).into())
}

fn base_settings(args: &SimulateArgs) -> anyhow::Result<SchedulerConfig> {
    let Some(path) = &args.scheduler_config else {
        return Ok(SchedulerConfig::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::invalid(format!(
            "cannot read scheduler config `{}`: {}",
            path.display(),
            io_reason(&e)
        ))
    })?;
    parse_scheduler_config(&text).map_err(|errors| {
        let lines: Vec<String> = errors
            .iter()
            .map(|d| format!("  {}", place(&path.display().to_string(), d)))
            .collect();
        CliError::invalid(format!(
            "invalid scheduler config `{}`\n{}",
            path.display(),
            lines.join("\n")
        ))
        .into()
    })
}

fn place(file: &str, d: &Diagnostic) -> String {
    let path = if d.path.is_empty() {
        String::new()
    } else {
        format!("{}: ", d.path)
    };
    match d.pos {
        Some(p) => format!("{file}:{p}: {path}{}", d.message),
        None => format!("{file}: {path}{}", d.message),
    }
}

fn settings(config: &SchedulerConfig, args: &SimulateArgs) -> Settings {
    let mut s = Settings::from_config(config);
    if let Some(g) = args.global_max_retries {
        s.global_max_retries = g;
    }
    if let Some(d) = &args.default_policy {
        s.default_policy_name = Some(d.clone());
    }
    s
}

/// One YAML or JSON file of FailureHistory (and optionally SchedulerConfig) documents.
fn run_file(
    ctx: &mut Context,
    args: &SimulateArgs,
    sim: &Simulator,
    base: &SchedulerConfig,
    sink: &mut Sink,
    path: &Path,
) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let text = match read_limited(path) {
        Ok(t) => t,
        Err(msg) => {
            sink.error(ctx.err, &format!("{name}: {msg}"))?;
            return Ok(());
        }
    };
    let parsed = parse_documents(&text, Some(&[Kind::FailureHistory, Kind::SchedulerConfig]));
    let file = SourceFile {
        name: name.clone(),
        errors: parsed.syntax_error.into_iter().collect(),
        documents: parsed.documents,
    };
    if file.error_count() > 0 {
        let mut buf = Vec::new();
        report::write_text(std::slice::from_ref(&file), ctx.style, &mut buf, ctx.err)?;
        sink.summary.errors += 1;
        return Ok(());
    }
    let mut config = base.clone();
    for doc in &file.documents {
        if let Some(Resource::SchedulerConfig(c)) = &doc.resource {
            config = c.clone();
        }
    }
    let settings = settings(&config, args);
    if !file
        .documents
        .iter()
        .any(|d| matches!(d.resource, Some(Resource::FailureHistory(_))))
    {
        // An empty history is a mistake (a wrong path, a truncated file), not a pass.
        sink.error(ctx.err, &format!("{name}: no FailureHistory document"))?;
        return Ok(());
    }
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("job").to_string();
    for doc in file.documents {
        if let Some(Resource::FailureHistory(mut h)) = doc.resource {
            if h.job.id.is_empty() {
                h.job.id = stem.clone();
            }
            simulate_one(ctx, sim, &settings, sink, &h, &name)?;
        }
    }
    Ok(())
}

fn read_limited(path: &Path) -> Result<String, String> {
    let file = File::open(path).map_err(|e| io_reason(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_reason(&e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB; write bulk histories as JSON Lines (`.jsonl`), which is streamed",
            MAX_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

fn simulate_one(
    ctx: &mut Context,
    sim: &Simulator,
    settings: &Settings,
    sink: &mut Sink,
    h: &FailureHistory,
    origin: &str,
) -> anyhow::Result<()> {
    match sim.simulate(h, settings) {
        Ok(report) => sink.job(ctx.out, ctx.err, &report)?,
        Err(e) => sink.error(ctx.err, &format!("{origin}: job `{}`: {e}", h.job.id))?,
    }
    Ok(())
}

/// A JSON Lines file, streamed: one line, one job, then it is dropped.
fn run_jsonl(
    ctx: &mut Context,
    args: &SimulateArgs,
    sim: &Simulator,
    base: &SchedulerConfig,
    sink: &mut Sink,
    path: &Path,
    bar: Option<&ProgressBar>,
) -> anyhow::Result<()> {
    let name = path.display().to_string();
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            sink.error(ctx.err, &format!("{name}: {}", io_reason(&e)))?;
            return Ok(());
        }
    };
    let settings = settings(base, args);
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("job").to_string();
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0usize;
    let mut read_bytes = 0u64;
    loop {
        buf.clear();
        let n = (&mut reader).take(MAX_FILE_BYTES + 1).read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        line_no += 1;
        read_bytes += n as u64;
        if let Some(b) = bar {
            if line_no % 1024 == 0 {
                b.set_position(read_bytes);
            }
        }
        if n as u64 > MAX_FILE_BYTES {
            sink.error(ctx.err, &format!("{name}:{line_no}: line longer than 8 MiB"))?;
            // Skip the rest of the over-long line.
            let mut rest = Vec::new();
            reader.read_until(b'\n', &mut rest)?;
            continue;
        }
        let line = trim_ascii(&buf);
        if line.is_empty() {
            continue;
        }
        match decode_line(line, line_no) {
            Ok(mut h) => {
                if h.job.id.is_empty() {
                    h.job.id = format!("{stem}-{line_no}");
                }
                simulate_one(ctx, sim, &settings, sink, &h, &format!("{name}:{line_no}"))?;
            }
            Err(msg) => sink.error(ctx.err, &format!("{name}:{line_no}: {msg}"))?,
        }
    }
    Ok(())
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// One JSON line → the same strict decoder as YAML documents (so the errors are the same),
/// through a `yaml::Node` deserialized straight from the JSON text (no intermediate
/// `serde_json::Value`: its map hashing and copies were a fifth of the bulk run time).
/// `apiVersion`/`kind` may be left out.
pub fn decode_line(line: &[u8], line_no: usize) -> Result<FailureHistory, String> {
    let pos = Pos {
        line: line_no,
        column: 1,
    };
    let mut de = serde_json::Deserializer::from_slice(line);
    let node = NodeSeed { pos }
        .deserialize(&mut de)
        .and_then(|n| de.end().map(|()| n))
        .map_err(|e| {
            // serde_json appends "at line 1 column N"; the line is ours to name, the column its.
            let text = e.to_string();
            let reason = text.split(" at line ").next().unwrap_or(&text).to_string();
            format!("invalid JSON at column {}: {reason}", e.column())
        })?;
    let Value::Map(mut entries) = node.value else {
        return Err("expected a JSON object (one FailureHistory per line)".to_string());
    };
    let scalar = |t: &str| Node {
        pos,
        value: Value::Scalar {
            text: t.to_string(),
            quoted: true,
        },
    };
    let has = |entries: &[(Node, Node)], key: &str| entries.iter().any(|(k, _)| k.as_scalar() == Some(key));
    if !has(&entries, "kind") {
        entries.insert(0, (scalar("kind"), scalar("FailureHistory")));
    }
    if !has(&entries, "apiVersion") {
        entries.insert(0, (scalar("apiVersion"), scalar("armadaproject.io/v1")));
    }
    let node = Node {
        pos,
        value: Value::Map(entries),
    };
    let doc = decode_document(node, 0, Some(&[Kind::FailureHistory]));
    let errors = crate::diag::describe_errors(&doc.diagnostics);
    match doc.resource {
        Some(Resource::FailureHistory(h)) if errors.is_empty() => Ok(*h),
        _ => Err(errors),
    }
}

/// Builds a `yaml::Node` from JSON: strings are quoted scalars, numbers and booleans plain
/// ones (spelled as serde_json spells them), so the YAML decoder's type checks apply as is.
#[derive(Clone, Copy)]
struct NodeSeed {
    pos: Pos,
}

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl NodeSeed {
    fn node(self, value: Value) -> Node {
        Node { pos: self.pos, value }
    }

    fn plain(self, text: String) -> Node {
        self.node(Value::Scalar { text, quoted: false })
    }
}

impl<'de> Visitor<'de> for NodeSeed {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        // `137.0` stays `137.0` (not `137`), so an integer field still rejects it.
        Ok(self.plain(serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(self.node(Value::Scalar {
            text: v.to_string(),
            quoted: true,
        }))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(self.node(Value::Scalar { text: v, quoted: true }))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(self.node(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(self.node(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(self.node(Value::Seq(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            entries.push((
                self.node(Value::Scalar {
                    text: key,
                    quoted: true,
                }),
                value,
            ));
        }
        Ok(self.node(Value::Map(entries)))
    }
}

/// Where results go, one job at a time, so bulk input runs in constant memory.
struct Sink {
    format: SimulateOutput,
    style: Style,
    bulk: bool,
    jobs_written: u64,
    summary: Summary,
    messages: u64,
}

impl Sink {
    fn new(format: SimulateOutput, style: Style) -> Sink {
        Sink {
            format,
            style,
            bulk: false,
            jobs_written: 0,
            summary: Summary::default(),
            messages: 0,
        }
    }

    fn begin(&mut self, out: &mut dyn Write) -> std::io::Result<()> {
        match self.format {
            SimulateOutput::Json => write!(out, "{{\"jobs\":["),
            SimulateOutput::Yaml => writeln!(out, "jobs:"),
            _ => Ok(()),
        }
    }

    /// A stderr message, capped so that a bad million-line file stays readable.
    fn message(&mut self, err: &mut dyn Write, text: &str) -> std::io::Result<()> {
        self.messages += 1;
        if self.messages <= MAX_MESSAGES {
            writeln!(err, "{text}")?;
        }
        Ok(())
    }

    fn error(&mut self, err: &mut dyn Write, text: &str) -> std::io::Result<()> {
        self.summary.errors += 1;
        let line = format!("{}: {text}", self.style.error("error"));
        self.message(err, &line)
    }

    fn job(&mut self, out: &mut dyn Write, err: &mut dyn Write, report: &JobReport) -> std::io::Result<()> {
        self.summary.add(report);
        match self.format {
            SimulateOutput::Table => {
                if !self.bulk {
                    if self.jobs_written > 0 {
                        writeln!(out)?;
                    }
                    out::write_job_table(out, self.style, report)?;
                }
            }
            SimulateOutput::Json => {
                if self.jobs_written > 0 {
                    write!(out, ",")?;
                }
                serde_json::to_writer(&mut *out, &out::job_record(report))?;
            }
            SimulateOutput::Yaml => write!(out, "{}", out::yaml_item(&out::job_record(report), 0))?,
            SimulateOutput::Jsonl => {
                serde_json::to_writer(&mut *out, &out::job_record(report))?;
                writeln!(out)?;
            }
        }
        self.jobs_written += 1;
        for c in &report.contradictions {
            let line = format!(
                "{}: job `{}`: history contradicts the decisions: {c}",
                self.style.warning("warning"),
                report.job_id
            );
            self.message(err, &line)?;
        }
        for f in &report.expectation_failures {
            let line = format!(
                "{}: job `{}`: expectation not met: {f}",
                self.style.error("error"),
                report.job_id
            );
            self.message(err, &line)?;
        }
        Ok(())
    }

    fn end(&mut self, out: &mut dyn Write, err: &mut dyn Write) -> std::io::Result<()> {
        if self.messages > MAX_MESSAGES {
            writeln!(err, "… and {} more messages", self.messages - MAX_MESSAGES)?;
        }
        match self.format {
            SimulateOutput::Table => {
                // One history: its table says it all. None simulated (an error, reported on
                // stderr): an all-zero summary would only be noise on stdout.
                if self.bulk || self.jobs_written > 1 {
                    if !self.bulk {
                        writeln!(out)?;
                    }
                    out::write_summary(out, self.style, &self.summary)?;
                }
            }
            SimulateOutput::Json => {
                write!(out, "],\"summary\":")?;
                serde_json::to_writer(&mut *out, &out::summary_json(&self.summary))?;
                writeln!(out, "}}")?;
            }
            SimulateOutput::Yaml => {
                if self.jobs_written == 0 {
                    // `jobs:` alone would read as null; say empty.
                    writeln!(out, "  []")?;
                }
                let text = serde_yaml::to_string(&out::summary_json(&self.summary)).unwrap_or_default();
                writeln!(out, "summary:")?;
                for l in text.lines() {
                    writeln!(out, "  {l}")?;
                }
            }
            SimulateOutput::Jsonl => out::write_summary(err, self.style, &self.summary)?,
        }
        Ok(())
    }
}
