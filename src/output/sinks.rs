//! Which sink `simulate` writes to, by `-o`.
//!
//! Owns: the choice only. It lives apart from `simulate` (the table and record sinks and the
//! helpers every format shares) because the reports, `html` and `markdown`, build on those
//! helpers: were the choice in `simulate`, it would import the reports that import it. Must
//! not: render or count.

use std::io::Write;

use crate::cli::SimulateOutput;
use crate::replay::sink::Sink;

use super::html::HtmlSink;
use super::markdown::MarkdownSink;
use super::simulate::{Mode, RecordSink, Records, Stderr, TableSink};

/// The sink of `format`: a table for people, a stream of records, or a report.
pub fn sink<'a>(format: SimulateOutput, mode: Mode, out: &'a mut dyn Write, stderr: Stderr<'a>) -> Box<dyn Sink + 'a> {
    match format {
        SimulateOutput::Table => Box::new(TableSink::new(mode, out, stderr)),
        SimulateOutput::Json => Box::new(RecordSink::new(Records::Json, mode, out, stderr)),
        SimulateOutput::Yaml => Box::new(RecordSink::new(Records::Yaml, mode, out, stderr)),
        SimulateOutput::Jsonl => Box::new(RecordSink::new(Records::Jsonl, mode, out, stderr)),
        SimulateOutput::Html => Box::new(HtmlSink::new(mode, out, stderr)),
        SimulateOutput::Markdown => Box::new(MarkdownSink::new(mode, out, stderr)),
    }
}
