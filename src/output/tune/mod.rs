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
//! This file owns the view handed over ([`TuneView`]) and which format writes it ([`write`]);
//! the rest by concept: `record` (json, yaml), `words` (what the formats say alike), then one
//! file per format: `table`, `markdown`, `html`.
//!
//! Owns: how a ranked search looks; each candidate's comparison is written with the records'
//! own pieces (`records::{transitions_json, compute_json, estimate_json}`), so that its numbers print as
//! `simulate --baseline` prints them. Must not: count, rank (that is `tune::rank`) or read anything.
//! Hostile values (a policy name, a value) are escaped as text in html and markdown.

mod html;
mod markdown;
mod record;
mod table;
mod words;

pub use words::{none_recommended, pick_refusal, pick_warning};

use std::io::{self, Write};

use crate::replay::backtest::Backtest;
use crate::replay::compare::hours;
use crate::replay::sink::Message;
use crate::replay::source::Progress;
use crate::tune::rank::{Excluded, Ranked, Scored};
use crate::tune::sweep::Listener;
use crate::tune::CandidateError;

use super::stderr::Stderr;
use super::words::{seconds_words, signed_nanos};
use super::{Format, Style};

use html::html;
use markdown::markdown;
use record::document;
use table::write_table;

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

/// A signed run time in seconds, for reading: `+1h2m`, `-30s`.
pub(super) fn signed_seconds(s: f64) -> String {
    if s < 0.0 {
        format!("-{}", seconds_words(-s))
    } else {
        format!("+{}", seconds_words(s))
    }
}

/// Whether any job requests a GPU (then the hours are shown).
pub(super) fn with_gpus(r: &Ranked) -> bool {
    r.candidates.iter().any(|s| {
        let c = &s.tally.comparison;
        c.gpu_added > 0 || c.gpu_removed > 0 || s.pending.gpu_hours > 0.0
    }) || r.baseline.pending.gpu_hours > 0.0
}

/// A candidate's GPU-hours: added − removed + expected.
pub(super) fn gpu_hours(s: &Scored) -> f64 {
    let c = &s.tally.comparison;
    hours(c.gpu_added) - hours(c.gpu_removed) + s.pending.gpu_hours
}

/// The candidate's collisions: its Retry decisions on runs whose pod the executor keeps
/// (docs/categorizer.md), as `simulate --baseline` counts the candidate side's.
pub(super) fn collisions(s: &Scored) -> u64 {
    s.tally
        .comparison
        .categories
        .as_ref()
        .map_or(0, |c| c.candidate.collisions)
}

/// Whether `s` breaks `--max-lost`, and whether it breaks `--max-compute`.
pub(super) fn over(s: &Scored) -> (bool, bool) {
    (
        s.excluded.iter().any(|e| matches!(e, Excluded::Lost { .. })),
        s.excluded.iter().any(|e| matches!(e, Excluded::Compute { .. })),
    )
}
