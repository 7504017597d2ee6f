//! The two sides of a comparison, resolved once ([`resolve`]) from what a verb says of them
//! ([`SidesSpec`]): each side's documents, its categorizer and its engine, and the scheduler's
//! settings every job gets (docs/categorizer.md "Replaying with a categorizer",
//! docs/engines.md "Which engine decides"). `simulate --baseline`, `tune` and `suggest` take
//! their sides from here, so that they cannot disagree about a baseline.
//!
//! The order is the documented one: the files of both sides (each valid, each side's
//! categorizer document taken out: [`files`]), the scheduler's settings ([`settings`]), the
//! dialect and the engine it picks ([`dialect`]), each side's categorizer named, the rule that
//! the baseline never borrows the candidate's, each categorizer compiled ([`categorizer`]),
//! the policy sets, and each categorizer attached to its side's policy set.
//!
//! `watch`'s sides, today's and one shadow per candidate, are resolved with the same pieces
//! in [`shadows`].
//!
//! Owns: [`Sides`] and [`resolve`]. Must not: read the history, replay or render; the
//! cluster's baseline is read from Lookout's database when the source opens it
//! ([`super::source`]), and attached there with [`Baseline::attach`].

pub mod categorizer;
pub mod dialect;
pub mod files;
pub mod settings;
pub mod shadows;
pub mod spec;

use std::path::PathBuf;

use crate::app::Context;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input::SourceFile;
use crate::output::suggest::EngineFrom;

use super::policy_set::{build, load_from_server, policy_set, Side, Unusable};
pub use categorizer::{attach, compile, compiled, Categorizer, RECORDED};
use categorizer::{borrow_rule, Named};
use dialect::{BaselineDialect, CandidateDialect, Dialect};
use files::{read_side, SideFiles};
pub use settings::Settings;
pub use spec::{BacktestAt, CandidateFrom, SidesSpec};

/// The two sides, resolved: what every replay verb compares.
pub struct Sides {
    /// What the verb said of them.
    pub spec: SidesSpec,
    pub candidate: Candidate,
    pub baseline: Baseline,
    /// The candidate's engine (the baseline's is [`Baseline::engine`]), and why it decides.
    pub engine: EngineKind,
    pub engine_from: EngineFrom,
    pub settings: Settings,
}

impl Sides {
    /// The categorizer the cluster runs, as the verb names it: the baseline's (`suggest`'s
    /// `--categorizer`, `--baseline-categorizer FILE`, `tune`'s template), else in a replay
    /// without a baseline the candidate's. A database's export takes its hints off the
    /// executor's texts (docs/lookout.md); none: the texts are kept whole, counted.
    pub fn deployed_categorizer(&self) -> Option<&Categorizer> {
        match (&self.baseline.categorizer, self.spec.what_if()) {
            (Some(c), _) => Some(c),
            (None, false) => self.candidate.categorizer.as_ref(),
            (None, true) => None,
        }
    }
}

/// The candidate side.
pub struct Candidate {
    /// Its documents (valid), without its categorizer document: `-f`'s or the template's.
    pub files: Vec<SourceFile>,
    /// Whether they hold a RetryPolicy document.
    pub has_policies: bool,
    /// Its categorizer, read once (its document kept: `tune` varies it).
    pub categorizer: Option<Categorizer>,
    /// Its policy set, its categorizer attached: `-f`'s or the server's (`simulate`); a
    /// template's candidates and a proposal are the verb's to build.
    pub sim: Option<Simulator>,
}

/// Where the baseline's policies come from, each (but the cluster's) with its categorizer
/// attached.
pub enum BaselinePolicies {
    /// No baseline: a plain replay.
    None,
    /// `--baseline FILES`.
    Given(Box<Simulator>),
    /// `tune` without a baseline: the template as written.
    Template(Box<Simulator>),
    /// `suggest` without a baseline: no policy, the engine's default path.
    NoPolicy(Box<Simulator>),
    /// `--baseline-from-cluster`: read from Lookout's database when the source opens it.
    Cluster,
}

/// The baseline side: its policies, the engine that evaluates them and its categorizer.
pub struct Baseline {
    pub policies: BaselinePolicies,
    pub engine: EngineKind,
    pub categorizer: Option<Categorizer>,
}

impl Baseline {
    /// Its policy set, when it is known before the history is opened.
    pub fn simulator(&self) -> Option<&Simulator> {
        match &self.policies {
            BaselinePolicies::Given(s) | BaselinePolicies::Template(s) | BaselinePolicies::NoPolicy(s) => Some(s),
            BaselinePolicies::None | BaselinePolicies::Cluster => None,
        }
    }

    /// Whether it is a policy the cluster ran, whose fit to the record is counted
    /// (docs/what-if.md "Does the baseline explain the record?"): not no policy at all.
    pub fn explains(&self) -> bool {
        // tune's template as written is the search's starting point, not a record of what
        // the cluster ran: it is not held to the record either.
        matches!(self.policies, BaselinePolicies::Given(_) | BaselinePolicies::Cluster)
    }

    /// The cluster's policy set with the baseline's categorizer.
    pub fn attach(&self, sim: Simulator) -> Simulator {
        attach(sim, compiled(self.categorizer.as_ref()))
    }
}

/// The sides `spec` names, resolved in the documented order (this module's doc). `None`:
/// documents that do not validate, reported (exit 3).
pub fn resolve(ctx: &mut Context, spec: SidesSpec) -> anyhow::Result<Option<Sides>> {
    let done = spec.candidate.done();
    // The files of both sides.
    let read = |ctx: &mut Context, paths: &[PathBuf], side| read_side(ctx, paths, spec.recursive, side, done);
    let candidate_files = match &spec.candidate {
        CandidateFrom::Files(paths) | CandidateFrom::Template(paths) => match read(ctx, paths, Side::Candidate)? {
            Some(f) => f,
            None => return Ok(None),
        },
        CandidateFrom::Server | CandidateFrom::Proposed => SideFiles::none(),
    };
    let baseline_files = match spec.baseline.is_empty() {
        true => None,
        false => match read(ctx, &spec.baseline, Side::Baseline)? {
            Some(f) => Some(f),
            None => return Ok(None),
        },
    };
    let settings = Settings::read(spec.scheduler_config.as_deref(), spec.overrides())?;
    // The dialect picks the engine.
    let candidate_dialect = Dialect::of(&candidate_files.files);
    let (engine, engine_from) = dialect::engine(
        spec.engine,
        match spec.candidate {
            CandidateFrom::Proposed => CandidateDialect::Proposed,
            _ => CandidateDialect::Files(candidate_dialect),
        },
        match (&baseline_files, spec.baseline_from_cluster) {
            (Some(b), _) => BaselineDialect::Files(Dialect::of(&b.files)),
            (None, true) => BaselineDialect::Cluster,
            (None, false) => BaselineDialect::None,
        },
    );
    // Each side's categorizer named, the borrow rule, each compiled.
    let SideFiles {
        files: candidate_files,
        categorizer: candidate_document,
    } = candidate_files;
    let (baseline_files, baseline_document) = match baseline_files {
        Some(SideFiles { files, categorizer }) => (Some(files), categorizer),
        None => (None, None),
    };
    let candidate_named = Named::new(
        Side::Candidate,
        "--categorizer",
        spec.categorizer.as_deref(),
        candidate_document,
    )?;
    let baseline_named = Named::new(
        Side::Baseline,
        spec.baseline_categorizer_flag(),
        spec.baseline_categorizer.as_deref(),
        baseline_document,
    )?;
    let proposed = spec.candidate == CandidateFrom::Proposed;
    borrow_rule(spec.what_if(), proposed, &candidate_named, &baseline_named)?;
    let baseline_said = baseline_named.said();
    let candidate_categorizer = candidate_named.read(ctx)?;
    let baseline_categorizer = match (&spec.candidate, baseline_said, spec.what_if()) {
        // tune without a baseline: the template as written, its categorizer included.
        (CandidateFrom::Template(_), false, false) => candidate_categorizer.clone(),
        _ => baseline_named.read(ctx)?,
    };
    // The policy sets, each with its categorizer.
    let retry_policies = spec.retry_policies.as_deref();
    let candidate_sim = match &spec.candidate {
        CandidateFrom::Files(_) => Some(build(&candidate_files, retry_policies, engine, Side::Candidate)?),
        CandidateFrom::Server => Some(load_from_server(ctx, retry_policies, spec.engine)?),
        CandidateFrom::Template(_) | CandidateFrom::Proposed => None,
    };
    // A server without the dialect header decides its own engine (docs/engines.md).
    let engine = candidate_sim.as_ref().map_or(engine, Simulator::engine);
    let baseline_engine = spec.baseline_engine.unwrap_or(engine);
    let with_baseline_categorizer = |sim| Box::new(attach(sim, compiled(baseline_categorizer.as_ref())));
    let policies =
        match (&baseline_files, &spec.candidate) {
            (Some(files), _) => BaselinePolicies::Given(with_baseline_categorizer(build(
                files,
                retry_policies,
                baseline_engine,
                Side::Baseline,
            )?)),
            (None, _) if spec.baseline_from_cluster => BaselinePolicies::Cluster,
            (None, CandidateFrom::Template(_)) => BaselinePolicies::Template(with_baseline_categorizer(
                template_baseline(&candidate_files, retry_policies, baseline_engine)?,
            )),
            (None, CandidateFrom::Proposed) => {
                let none = Simulator::new(Vec::new(), Vec::new(), None).map_err(CliError::invalid)?;
                BaselinePolicies::NoPolicy(with_baseline_categorizer(none.with_engine(baseline_engine)))
            }
            (None, _) => BaselinePolicies::None,
        };
    // A queue the candidate's files do not name replays under the baseline's documents
    // (docs/what-if.md "Queues the candidate does not name").
    let candidate_sim = match (candidate_sim, &policies) {
        (Some(sim), BaselinePolicies::Given(today)) => Some(sim.with_queues_of(today).map_err(CliError::invalid)?),
        (sim, _) => sim,
    };
    let candidate = Candidate {
        has_policies: candidate_dialect.has_policies(),
        sim: candidate_sim.map(|s| attach(s, compiled(candidate_categorizer.as_ref()))),
        files: candidate_files,
        categorizer: candidate_categorizer,
    };
    Ok(Some(Sides {
        spec,
        candidate,
        baseline: Baseline {
            policies,
            engine: baseline_engine,
            categorizer: baseline_categorizer,
        },
        engine,
        engine_from,
        settings,
    }))
}

/// `tune`'s baseline without `--baseline`: the template as written, for `engine`.
fn template_baseline(
    files: &[SourceFile],
    retry_policies: Option<&[String]>,
    engine: EngineKind,
) -> anyhow::Result<Simulator> {
    match policy_set(files, retry_policies, engine) {
        Ok(sim) => Ok(sim),
        Err(Unusable::Invalid(e)) => Err(e.into()),
        Err(Unusable::Unreadable(fields)) => Err(CliError::invalid(format!(
            "the baseline (the template as written) has fields the upstream engine cannot evaluate:\n{}",
            fields.join("\n")
        ))
        .with_hint("use --baseline-engine design, or give a baseline upstream can store with --baseline")
        .into()),
    }
}
