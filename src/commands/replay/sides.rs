//! The two sides of a comparison, each resolved once: its documents (a policy set), its
//! categorizer and its engine (docs/categorizer.md "Replaying with a categorizer",
//! docs/engines.md). `simulate --baseline`, `tune` and `suggest` take their sides from here,
//! so that they cannot disagree about a baseline.
//!
//! Owns: reading each categorizer file once (compiled, its document kept for `tune`'s
//! varies, its warnings said), the rule that the baseline never borrows the candidate's
//! categorizer, and the baseline's policies before the history is opened (files, the
//! template, or the cluster's, which [`super::source`] reads from the same database).
//! Must not: read the history, replay or render.

use std::path::Path;
use std::sync::Arc;

use crate::app::Context;
use crate::cli::ReplayArgs;
use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input::{self, CategorizerFile};

use super::policy_set::{load_policies, PolicyFlags, Side};

/// `--baseline-categorizer recorded`: the baseline keeps the recorded categories.
pub const RECORDED: &str = "recorded";

/// The executor's categorizer config of one side, read once: its file, its one document, its
/// config and the classifier compiled from it.
#[derive(Debug, Clone)]
pub struct Categorizer {
    pub file: CategorizerFile,
    pub compiled: Arc<Classifier>,
}

/// `FILE`, compiled, its warnings said on stderr (docs/categorizer.md): a bad file is exit 3
/// naming it and each problem's line, before the history is read.
pub fn read_categorizer(ctx: &mut Context, path: &Path) -> anyhow::Result<Categorizer> {
    let file = input::read_categorizer(path)?;
    for w in &file.warnings {
        writeln!(ctx.err, "{}: {w}", ctx.style.warning("warning"))?;
    }
    // Validated already: compiling cannot fail on what the checks let through.
    let classifier = Classifier::new(&file.config)
        .map_err(|e| CliError::invalid(format!("invalid categorizer `{}`: {e}", path.display())))?;
    Ok(Categorizer {
        file,
        compiled: Arc::new(classifier),
    })
}

/// `--categorizer FILE` when given.
pub fn categorizer(ctx: &mut Context, path: Option<&Path>) -> anyhow::Result<Option<Categorizer>> {
    path.map(|p| read_categorizer(ctx, p)).transpose()
}

/// The compiled classifier of a side, if it has a categorizer.
pub fn compiled(c: Option<&Categorizer>) -> Option<Arc<Classifier>> {
    c.map(|c| c.compiled.clone())
}

/// Whether the replay compares against a baseline: `--baseline` or `--baseline-from-cluster`.
pub fn what_if(replay: &ReplayArgs) -> bool {
    !replay.baseline.is_empty() || replay.baseline_from_cluster
}

/// The baseline never borrows the candidate's categorizer (docs/categorizer.md "Replaying
/// with a categorizer"): a what-if whose candidate has `--categorizer FILE` and whose baseline
/// has none is a usage error, before anything is read.
pub fn check_categorizers(
    replay: &ReplayArgs,
    candidate: Option<&Path>,
    baseline: Option<&Path>,
) -> Result<(), CliError> {
    match (candidate, baseline) {
        (Some(file), None) if what_if(replay) => Err(CliError::usage(format!(
            "the baseline has no categorizer while the candidate has `{}`: give the deployed one (`--baseline-categorizer FILE`), or `--baseline-categorizer recorded` to keep the categories Lookout recorded",
            file.display()
        ))),
        _ => Ok(()),
    }
}

/// `--baseline-categorizer`: `None` for `recorded` or without the flag (the recorded
/// categories), else the file read once.
pub fn baseline_categorizer(ctx: &mut Context, path: Option<&Path>) -> anyhow::Result<Option<Categorizer>> {
    match path {
        Some(p) if p.as_os_str() != RECORDED => read_categorizer(ctx, p).map(Some),
        _ => Ok(None),
    }
}

/// Where the baseline's policies come from, resolved before the history is opened.
pub enum BaselinePolicies {
    /// No baseline: a plain replay (or `suggest` without `--baseline`).
    None,
    /// `--baseline FILES`, or `tune`'s template as written.
    Given(Box<Simulator>),
    /// `--baseline-from-cluster`: read from Lookout's database when the source opens it.
    Cluster,
}

/// The baseline side: its policies, the engine that evaluates them and its categorizer.
pub struct Baseline {
    pub policies: BaselinePolicies,
    pub engine: EngineKind,
    pub categorizer: Option<Arc<Classifier>>,
}

impl Baseline {
    /// `--baseline FILES` read with `flags` and evaluated by `engine` (else, with
    /// `--baseline-from-cluster`, the cluster's; else none). `None` after writing the
    /// validation report of an invalid file (exit 3).
    pub fn from_flags(
        ctx: &mut Context,
        replay: &ReplayArgs,
        flags: PolicyFlags<'_>,
        engine: EngineKind,
        categorizer: Option<Arc<Classifier>>,
    ) -> anyhow::Result<Option<Baseline>> {
        let policies = if !replay.baseline.is_empty() {
            match load_policies(ctx, &replay.baseline, flags, engine, Side::Baseline)? {
                Some(b) => BaselinePolicies::Given(Box::new(b)),
                None => return Ok(None),
            }
        } else if replay.baseline_from_cluster {
            BaselinePolicies::Cluster
        } else {
            BaselinePolicies::None
        };
        Ok(Some(Baseline {
            policies,
            engine,
            categorizer,
        }))
    }

    /// The baseline's policy set with its categorizer: the one place a side's categorizer
    /// is attached to its policies.
    pub fn attach(&self, sim: Simulator) -> Simulator {
        sim.with_categorizer(self.categorizer.clone())
    }
}
