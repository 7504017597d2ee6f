//! What one run of `suggest` was given, resolved once ([`Suggest`]: one process's, or a
//! sharded suggest's merge's), where its history comes from ([`History`]), how it ended
//! ([`Concluded`]), and what a partial's fingerprint holds of it ([`fingerprint_inputs`]).
//!
//! Owns: those values. Must not: read, learn, propose, compare or render (the steps beside
//! it do, each over the fields it reads).

use std::path::PathBuf;

use crate::cli::{ExecutorConfigFormat, SuggestOutput, WindowArgs};
use crate::commands::replay::sides::{self, Sides};
use crate::engine::simulator::Simulator;
use crate::error::ExitCode;
use crate::replay::shard::Shard;
use crate::suggest::propose::Knobs;

use super::run::SuggestRun;

/// The end of the error for an empty history (docs/cli.md, exit codes).
pub(super) const NOTHING: &str = "nothing to learn from";

/// What one run of suggest was given, resolved: its flags as a partial records them, its
/// knobs and output, the history and the sides.
pub(super) struct Suggest {
    /// What a shard records of the command line, and a merge reads back.
    pub run: SuggestRun,
    pub knobs: Knobs,
    pub output: SuggestOutput,
    pub history: History,
    /// `--shard`: a shard's learning, written for `merge`.
    pub shard: Option<Shard>,
    /// The proposal's side (its engine, why it decides) and the baseline's: its policies, its
    /// engine, its categorizer, the deployed config (the upstream proposal keeps its
    /// categories).
    pub sides: Sides,
    /// A sharded suggest's merge: its refusals of `--backtest-at` name the shards' flag.
    pub merged: bool,
    /// `--allow-empty` and a history with no job: the answer of no job, exit 0 (nothing
    /// learned, nothing proposed, the verdict `keep`), in every format.
    pub allow_empty: bool,
    /// `--executor-config FILE` and its shape: the proposed executor config alone, written
    /// once the output is.
    pub executor_config: Option<(PathBuf, ExecutorConfigFormat)>,
}

/// Where the history comes from, as the commands suggest prints name it.
pub(super) enum History {
    /// `--history PATH` (a merge's: the shards' file).
    File(PathBuf),
    /// `--lookout-db`, with its window.
    Lookout(WindowArgs),
}

impl History {
    /// As an error or a verdict names it: `` `PATH` ``, stdin, or Lookout's window.
    pub fn named(&self) -> String {
        match self {
            History::File(path) => crate::commands::replay::lookout::history_named(path),
            History::Lookout(_) => "the Lookout window".to_string(),
        }
    }
}

/// How suggest ended: its exit status, and whether the proposal changed the categorizer and
/// every queue was compared (the jobs `--queue` left out were then left out of the learning
/// only).
pub(super) struct Concluded {
    pub code: ExitCode,
    pub every_queue: bool,
}

/// The deployed categorizer: `--categorizer`'s, or the one among the baseline's files.
pub(super) fn deployed(sides: &Sides) -> Option<&sides::Categorizer> {
    sides.baseline.categorizer.as_ref()
}

/// What a partial's fingerprint holds: every input that changes the answer (the run's
/// flags, the baseline's documents and categorizer, the deployed categorizer's config,
/// the source and its settings, N). The merge computes it again from what it loads.
pub(super) fn fingerprint_inputs(
    run: &SuggestRun,
    sides: &Sides,
    baseline: &Simulator,
    shards: u64,
    source: &serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "run": run,
        "shards": shards,
        "baseline": baseline.fingerprint(),
        "deployed": deployed(sides).map(|d| format!("{:?}", d.file.config)),
        "source": source,
    })
}
