//! What a sharded suggest's partials carry of the run that wrote them ([`SuggestRun`]), for
//! the merge to resolve the same sides and knobs again. Data only: no reading, no learning.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cli::SuggestArgs;
use crate::commands::replay::sides::ReplaySpec;
use crate::replay::explained::MaxContradictions;
use crate::suggest::propose::Knobs;

/// What `merge` needs to do the rest of a sharded suggest: a partial's `run`
/// (docs/past-one-machine.md): the sides as the shards' command line named them (the merge
/// resolves them again, with the same function, from the files at the same paths), the
/// history, and the knobs. The fingerprint holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuggestRun {
    /// Always `suggest`.
    pub command: String,
    pub history: PathBuf,
    /// What the replay flags said (the sides, `--queue`, `--backtest-at`, `--incidents`).
    pub spec: ReplaySpec,
    pub min_trials: u64,
    pub futile: f64,
    pub max_limit: u32,
    #[serde(default)]
    pub extrapolate: bool,
    pub name: String,
    /// `--skip-invalid`: entries not replayed are counted and said, and exit 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_invalid: bool,
    #[serde(default)]
    pub max_contradictions: MaxContradictions,
    /// `--keep-categorizer`: rules on today's categories only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_categorizer: bool,
}

impl SuggestRun {
    pub(super) fn new(args: &SuggestArgs, knobs: Knobs, spec: &ReplaySpec) -> SuggestRun {
        SuggestRun {
            command: "suggest".into(),
            // A shard's source is a file or directory (`check_sharded`).
            history: args.replay.history.clone().unwrap_or_default(),
            spec: spec.clone(),
            min_trials: knobs.min_trials,
            futile: knobs.futile,
            max_limit: knobs.max_limit,
            extrapolate: knobs.extrapolate,
            name: args.name.clone(),
            skip_invalid: args.replay.skip_invalid,
            max_contradictions: args.max_contradictions,
            keep_categorizer: args.keep_categorizer,
        }
    }
}
