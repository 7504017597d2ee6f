//! A sharded `suggest` (docs/past-one-machine.md): what a shard's partial records of its
//! pass 1 ([`SuggestRun`], and `suggest::learn::ShardLearning`), the shards' pass 1 folded in the source's order
//! ([`SuggestFold`]), and `merge`'s end of it ([`merge`]): the inputs loaded again and found
//! unchanged, then the rest as one process does it (`Suggest::conclude`). Must not: learn,
//! propose, compare or render by itself (the command's own code does).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::app::Context;
use crate::cli::{EmitArgs, EngineArg, ReplayArgs, SuggestArgs, SuggestOutput, WindowArgs};
use crate::commands::replay::policy_set::base_config;
use crate::commands::replay::sides::BaselinePolicies;
use crate::commands::replay::source::{self, overrides};
use crate::engine::EngineKind;
use crate::error::ExitCode;
use crate::output::mode::Baseline;
use crate::replay::partial::fingerprint;
use crate::replay::source::Files;
use crate::suggest::learn::{Learning, ShardLearning};
use crate::suggest::stats::PastSignature;

use super::learn::Pass1;
use super::{check, check_queue, load};

/// What `merge` needs to do the rest of a sharded suggest: a partial's `run`
/// (docs/past-one-machine.md), the flags that change the answer, the paths as given (the
/// merge reads the baseline, the categorizer and the history again). The fingerprint holds
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuggestRun {
    /// Always `suggest`.
    pub command: String,
    pub history: PathBuf,
    pub baseline: Vec<PathBuf>,
    /// The engines, resolved (`design` or `upstream`).
    pub engine: String,
    /// `--engine` was given (else the baseline's dialect picked it, and the merge picks it
    /// again, saying so as one process does).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub engine_flag: bool,
    pub baseline_engine: String,
    pub scheduler_config: Option<PathBuf>,
    pub retry_policies: Option<Vec<String>>,
    pub global_max_retries: Option<u32>,
    pub default_policy: Option<String>,
    pub backtest_at: Option<String>,
    /// The Queue `-o policy` prints.
    pub queue: Option<String>,
    pub categorizer: Option<PathBuf>,
    pub min_trials: u64,
    pub futile: f64,
    pub max_limit: u32,
    #[serde(default)]
    pub extrapolate: bool,
    pub name: String,
}

impl SuggestRun {
    pub(super) fn new(args: &SuggestArgs, engine: EngineKind, baseline_engine: EngineKind) -> SuggestRun {
        let r = &args.replay;
        SuggestRun {
            command: "suggest".into(),
            // A shard's source is a file or directory (`check_sharded`).
            history: r.history.clone().unwrap_or_default(),
            baseline: r.baseline.clone(),
            engine: engine.as_str().into(),
            engine_flag: r.engine.is_some(),
            baseline_engine: baseline_engine.as_str().into(),
            scheduler_config: r.scheduler_config.clone(),
            retry_policies: r.retry_policies.clone(),
            global_max_retries: r.global_max_retries,
            default_policy: r.default_policy.clone(),
            backtest_at: r.backtest_at.clone(),
            queue: r.queue.clone(),
            categorizer: args.categorizer.clone(),
            min_trials: args.min_trials,
            futile: args.futile,
            max_limit: args.max_limit,
            extrapolate: args.extrapolate,
            name: args.name.clone(),
        }
    }

    /// The command line the shards ran, with `-o output` and no shard: what the merge
    /// concludes as one process would. `Err`: what of the run is not one a shard writes.
    fn args(&self, output: SuggestOutput) -> Result<SuggestArgs, String> {
        let engine = |e: &str| match e {
            "design" => Ok(EngineArg::Design),
            "upstream" => Ok(EngineArg::Upstream),
            other => Err(format!("its run's engine `{other}` is neither `design` nor `upstream`")),
        };
        Ok(SuggestArgs {
            replay: ReplayArgs {
                history: Some(self.history.clone()),
                lookout_db: None,
                queue: self.queue.clone(),
                jobset: None,
                window: WindowArgs::default(),
                baseline: self.baseline.clone(),
                baseline_from_cluster: false,
                engine: match self.engine_flag {
                    true => Some(engine(&self.engine)?),
                    false => {
                        engine(&self.engine)?;
                        None
                    }
                },
                baseline_engine: Some(engine(&self.baseline_engine)?),
                scheduler_config: self.scheduler_config.clone(),
                retry_policies: self.retry_policies.clone(),
                global_max_retries: self.global_max_retries,
                default_policy: self.default_policy.clone(),
                backtest_at: self.backtest_at.clone(),
                shard: None,
                allow_empty: false,
            },
            categorizer: self.categorizer.clone(),
            min_trials: self.min_trials,
            futile: self.futile,
            max_limit: self.max_limit,
            extrapolate: self.extrapolate,
            // The merge's exit status is its own (`merge`), not the shards' flag.
            exit_code: false,
            name: self.name.clone(),
            output,
            output_file: None,
            emit: EmitArgs::default(),
        })
    }
}

/// The shards' pass 1 folded as one process folds its units: in the source's order (shard
/// order, for byte ranges), so that the signatures kept are the first 10,000 met.
#[derive(Default)]
pub struct SuggestFold(Learning);

impl SuggestFold {
    /// Adds the next shard's learning. `Err`: what is wrong with it (after the file's name).
    pub fn add(&mut self, t: ShardLearning) -> Result<(), String> {
        self.0.add_shard(t)
    }

    /// Adds a later shard's counts of a signature past its first 10,000 (an entry of its
    /// partial), once every shard's learning is added. `Err`: what is wrong with it.
    pub fn add_past(&mut self, past: PastSignature) -> Result<(), String> {
        self.0.add_past(past)
    }
}

/// What the shards of a sharded suggest were, for its merge to find its own inputs theirs.
pub struct Shards<'a> {
    pub count: u64,
    pub fingerprint: &'a str,
    /// The history's digest the shards recorded.
    pub source: Option<&'a str>,
}

/// Why a merge of suggest's partials stops before its answer: the words after the first
/// partial's name (exit 3, as merge's other problems).
#[derive(Debug)]
pub struct Unmergeable(pub String);

impl std::fmt::Display for Unmergeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unmergeable {}

/// `merge` of a sharded suggest (docs/past-one-machine.md): the shards' learning folded, the
/// inputs loaded again from the shards' run (and found unchanged), then the rest as one
/// process does it (`Suggest::conclude`): the proposal, and pass 2 over the history.
pub fn merge(
    ctx: &mut Context,
    run: &SuggestRun,
    fold: SuggestFold,
    output: SuggestOutput,
    shards: Shards<'_>,
) -> anyhow::Result<ExitCode> {
    let args = run.args(output).map_err(Unmergeable)?;
    // The merge's `-o policy` writes the shards' `--queue` as a Queue: its flag, refused alike.
    check_queue(&args)?;
    // What the shard's own checks accepted: another run was written in by hand.
    let knobs = check(&args).map_err(|e| Unmergeable(format!("is damaged: its run: {}", e.message)))?;
    let Some((mut driver, sides)) = load(ctx, &args, knobs)? else {
        return Ok(ExitCode::InvalidInput);
    };
    driver.merged = true;
    // A shard's baseline is files (`check_sharded`), read again here with their categorizer.
    let given = match &sides.policies {
        BaselinePolicies::Given(sim) => Some(sides.attach((**sim).clone())),
        _ => None,
    };
    let baseline = driver.baseline(given)?;
    let replay = &args.replay;
    let (base, settings) = (base_config(replay)?, overrides(replay));
    let source = source::files_source(&run.history, &settings, &base, run.queue.as_deref());
    let inputs = driver.inputs(run, &baseline, shards.count, &source);
    if fingerprint(&inputs) != shards.fingerprint {
        return Err(Unmergeable(
            "is of inputs that changed since its shards read them: the baseline, the categorizer or the scheduler config at the paths its run names are not the same (the fingerprint differs); merge where the shards' inputs are, unchanged"
                .into(),
        )
        .into());
    }
    let digest = Files::open(&run.history, base, settings)?
        .digest()
        .get()
        .map(|d| format!("{d:016x}"));
    if digest.as_deref() != shards.source {
        return Err(Unmergeable(format!(
            "was made from another history than `{}` is now (the history's digest differs: was it changed since the shards read it?)",
            run.history.display()
        ))
        .into());
    }
    driver.conclude(ctx, &baseline, Baseline::Files, Pass1::merged(fold.0))
}
