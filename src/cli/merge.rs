//! The arguments of `merge`: the partial results of one run's shards, joined into what one
//! process would have written; its output formats and examples.
//!
//! Owns: those clap types and examples. Must not: do I/O or hold logic.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The partial results of one run's shards (`--shard I/N -o partial`): each of 0..N−1
    /// once, in any order; a directory gives every partial result in it.
    #[arg(value_name = "PARTIAL", required = true)]
    pub partials: Vec<PathBuf>,

    /// Output format: the command's own (`tune` and `suggest` have no jsonl; `policy` is
    /// `suggest`'s alone).
    #[arg(short = 'o', long, value_enum, default_value_t = MergeOutput::Table)]
    pub output: MergeOutput,

    /// Write the result to this file instead of stdout: written beside it and renamed once
    /// complete; left as it was when no result is written.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MergeOutput {
    Table,
    Json,
    Yaml,
    Jsonl,
    Html,
    Markdown,
    Policy,
}

pub(super) const EX_MERGE: &str =
    "Examples:\n  retryctl merge p0.json p1.json p2.json p3.json     # the same bytes as one process
  retryctl merge parts/*.json -o html > plan.html
  retryctl simulate -f new/ --baseline old/ --history h.jsonl --shard 2/4 -o partial > p2.json";
