//! Which sink a replay writes to (`simulate`, `merge`, the comparisons of `suggest`), by
//! `-o`.
//!
//! Owns: the choice only. It lives apart from the sinks because it imports every one of them
//! (`table`, `records`, `html`, `markdown`). Must not: render or count.

use std::io::Write;

use crate::replay::sink::Sink;

use super::html::HtmlSink;
use super::markdown::MarkdownSink;
use super::mode::Mode;
use super::records::{RecordSink, Records};
use super::stderr::Stderr;
use super::table::TableSink;
use super::Format;

/// The sink of `format`: a table for people, a stream of records, or a report.
pub fn sink<'a>(format: Format, mode: Mode, out: &'a mut dyn Write, stderr: Stderr<'a>) -> Box<dyn Sink + 'a> {
    match format {
        Format::Table => Box::new(TableSink::new(mode, out, stderr)),
        Format::Json => Box::new(RecordSink::new(Records::Json, mode, out, stderr)),
        Format::Yaml => Box::new(RecordSink::new(Records::Yaml, mode, out, stderr)),
        Format::Jsonl => Box::new(RecordSink::new(Records::Jsonl, mode, out, stderr)),
        Format::Html => Box::new(HtmlSink::new(mode, out, stderr)),
        Format::Markdown => Box::new(MarkdownSink::new(mode, out, stderr)),
    }
}
