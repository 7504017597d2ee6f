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
//! This file owns which format writes the view ([`write()`]) and the sweep's stderr side; the
//! rest by concept: `view` (the view handed over, [`TuneView`], and the figures every format
//! reads off it), `record` (json, yaml), `words` (what the formats say alike), then one file
//! per format: `table`, `markdown`, `html`.
//!
//! Owns: how a ranked search looks; each candidate's comparison is written with the records'
//! own pieces (`records::{transitions_json, compute_json, estimate_json}`), so that its numbers print as
//! `simulate --baseline` prints them. Must not: count, rank (that is `tune::rank`) or read anything.
//! Hostile values (a policy name, a value) are escaped as text in html and markdown.

mod html;
mod markdown;
mod record;
mod table;
mod view;
mod words;

pub use view::{Skipped, TuneView, TOP};
pub use words::{
    error_words, none_recommended, pick_refusal, pick_rejected_warning, pick_unexplained_refusal, pick_verdict_line,
    pick_warning, values_words, PICK_UNEXPLAINED_HINT,
};

use std::io::{self, Write};

use crate::replay::sink::Message;
use crate::replay::source::Progress;
use crate::tune::sweep::Listener;

use super::stderr::Stderr;
use super::{Format, Style};

use html::html;
use markdown::markdown;
use record::document;
use table::write_table;

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
