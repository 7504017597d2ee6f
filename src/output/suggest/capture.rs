//! The capture of a streamed comparison: [`CaptureSink`] renders it as `simulate --baseline`
//! does and keeps its totals, false kills and lost jobs for the formats that put it in words;
//! [`Member`] fits the rendering into the `{suggest: …}` record; [`backtest_tail`] turns
//! the backtest's capture into its figures.
//!
//! Owns: what is kept of a comparison and how its bytes nest in the record. Must not: say
//! anything in words (`words`, the formats do) or write the record's own members (`record`).

use std::io::{self, Write};

use serde_json::Value;

use crate::model::failure_history::Final;
use crate::output::mode::{Baseline, Mode};
use crate::output::records::backtest_json;
use crate::output::sinks::sink;
use crate::output::stderr::Stderr;
use crate::output::words::backtest_sentence;
use crate::output::Format;
use crate::replay::compare::{hours, Comparison, Transition};
use crate::replay::sink::{Change, Estimates, Message, Needs, Sink, Totals};
use crate::replay::source::Progress;

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
    /// a writer that keeps nothing ([`Doc::member`](super::Doc::member) gives one for those
    /// formats).
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
pub(super) fn one_record(format: Format) -> Format {
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

impl<'a> Member<'a> {
    /// Writes into `out`: `kind` JSON or YAML (`indent` spaces), any other nothing.
    pub(super) fn new(out: &'a mut dyn Write, kind: Format, indent: usize) -> Member<'a> {
        Member {
            out,
            kind,
            indent,
            skipped_open: false,
            held: Vec::new(),
            at_line_start: true,
        }
    }

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
