//! Presentation of `retryctl suggest` (docs/reference/suggest.md "Output"): the table, the
//! `{suggest: …}` record as JSON or YAML (the comparisons streamed in place, exactly as
//! `simulate --baseline` writes them), the HTML page and the Markdown report.
//!
//! Owns: the words, the record's field names and the layout. Must not: count, propose or
//! replay; what it prints is handed over by `commands::suggest`.
//!
//! This file owns [`Doc`]: which format writes what, and when. The rest by concept, each
//! file below the ones that use it: `report` (what `commands::suggest` hands over), `record`
//! (the record's members and their field names), `fields` (a map's members written one list
//! item at a time, the whole map's bytes), `capture` (the streamed comparison, kept for the
//! formats that put it in words), `words` (what the table, the page and the report say
//! alike), then one file per format: `table`, `markdown`, `html`.

mod capture;
mod fields;
mod html;
mod markdown;
mod record;
mod report;
mod table;
mod words;

use std::io::{self, Write};

use crate::suggest::verdict::Judgement;

use super::style::Style;
use super::Format;

pub use capture::{backtest_tail, BacktestTail, CaptureSink, Captured, Member};
pub use report::{BacktestHead, Commands, Head, IncidentsView, Report};
pub use words::{evidence, kept_and_added, left_out, LeftOut};

/// The `{suggest: …}` record written in pieces around the streamed comparisons, or the
/// other formats written at the end.
pub struct Doc {
    format: Format,
    style: Style,
}

impl Doc {
    /// `style`: the table's (the comparison's plan line is bold in colour).
    pub fn new(format: Format, style: Style) -> Doc {
        Doc {
            format: capture::one_record(format),
            style,
        }
    }

    fn streams(&self) -> bool {
        matches!(self.format, Format::Json | Format::Yaml)
    }

    /// The proposal's rules, before its comparison (the record's first member: what is
    /// learned is complete only once the comparison has read the baseline's decisions).
    pub fn proposal_head(&mut self, out: &mut dyn Write, head: &Head<'_>) -> io::Result<()> {
        record::proposal_head(out, self.format, head)
    }

    /// Where a comparison streams (`key` is the sink's own: `comparison`).
    pub fn member<'o>(&mut self, out: &'o mut dyn Write, _key: &str) -> io::Result<Member<'o>> {
        if self.format == Format::Json {
            out.write_all(b",")?;
        }
        let kind = if self.streams() { self.format } else { Format::Table };
        Ok(Member::new(out, kind, 4))
    }

    /// The rules' check, after the proposal's comparison, which closes the proposal; then
    /// what was learned.
    pub fn after_comparison(
        &mut self,
        out: &mut dyn Write,
        r: &Report<'_>,
        shadowed: &[(String, u64)],
    ) -> io::Result<()> {
        record::after_comparison(out, self.format, r, shadowed)
    }

    pub fn backtest_head(&mut self, out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
        record::backtest_head(out, self.format, r)
    }

    pub fn backtest_tail(&mut self, out: &mut dyn Write, t: &BacktestTail) -> io::Result<()> {
        record::backtest_tail(out, self.format, t)
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
        match self.format {
            Format::Json | Format::Jsonl | Format::Yaml => record::verdict(out, self.format, r, judgement),
            Format::Table => table::table(out, self.style, r, whole, backtest, judgement),
            Format::Markdown => out.write_all(markdown::markdown(r, whole, backtest, judgement).as_bytes()),
            Format::Html => out.write_all(html::html(r, whole, backtest, judgement).as_bytes()),
        }
    }
}
