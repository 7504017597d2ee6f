//! The format a command prints in: one [`Format`] for every verb's renderer.
//!
//! Owns: the formats (the union of what `simulate`, `tune`, `suggest` and `merge` print), and
//! the conversion from each verb's `-o` value (its `cli` enum). A value that is no view
//! converts as its command handles it: `partial` (a shard's file for `merge`) and `policy`
//! (`suggest`'s documents). Must not: render, or know what a format looks like.

use crate::cli::{MergeOutput, SimulateOutput, SuggestOutput, TuneOutput};

/// What `-o` asked for. A verb that writes one record (`tune`, `suggest`) is given no
/// `Jsonl` by its command: its `Json` is one line already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people: aligned columns and sentences.
    Table,
    /// One JSON document.
    Json,
    /// One YAML document.
    Yaml,
    /// One JSON record per line; a replay's totals, in words, on stderr.
    Jsonl,
    /// One self-contained page.
    Html,
    /// GitHub-flavoured Markdown, for a pull request.
    Markdown,
}

/// `simulate -o partial`: a shard's partial result, which `merge` renders; no format does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoView;

impl TryFrom<SimulateOutput> for Format {
    type Error = NoView;

    fn try_from(o: SimulateOutput) -> Result<Format, NoView> {
        Ok(match o {
            SimulateOutput::Table => Format::Table,
            SimulateOutput::Json => Format::Json,
            SimulateOutput::Yaml => Format::Yaml,
            SimulateOutput::Jsonl => Format::Jsonl,
            SimulateOutput::Html => Format::Html,
            SimulateOutput::Markdown => Format::Markdown,
            SimulateOutput::Partial => return Err(NoView),
        })
    }
}

impl From<TuneOutput> for Format {
    /// `partial`: the table, which the shard does not print (it writes its tallies).
    fn from(o: TuneOutput) -> Format {
        match o {
            TuneOutput::Table | TuneOutput::Partial => Format::Table,
            TuneOutput::Json => Format::Json,
            TuneOutput::Yaml => Format::Yaml,
            TuneOutput::Html => Format::Html,
            TuneOutput::Markdown => Format::Markdown,
        }
    }
}

impl From<SuggestOutput> for Format {
    /// `policy`: the table, which `-o policy` replays for its verdict and does not print;
    /// `partial`: the table too, which the shard does not print (it writes its learning,
    /// `merge` renders).
    fn from(o: SuggestOutput) -> Format {
        match o {
            SuggestOutput::Json => Format::Json,
            SuggestOutput::Yaml => Format::Yaml,
            SuggestOutput::Html => Format::Html,
            SuggestOutput::Markdown => Format::Markdown,
            SuggestOutput::Table | SuggestOutput::Policy | SuggestOutput::Partial => Format::Table,
        }
    }
}

impl From<MergeOutput> for Format {
    /// `policy`: the table; it is `suggest`'s alone, and `merge` refuses it for the other
    /// verbs before any sink.
    fn from(o: MergeOutput) -> Format {
        match o {
            MergeOutput::Table | MergeOutput::Policy => Format::Table,
            MergeOutput::Json => Format::Json,
            MergeOutput::Yaml => Format::Yaml,
            MergeOutput::Jsonl => Format::Jsonl,
            MergeOutput::Html => Format::Html,
            MergeOutput::Markdown => Format::Markdown,
        }
    }
}
