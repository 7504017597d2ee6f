//! The sides of a comparison (a baseline and N candidates), resolved once ([`resolve`]) from
//! what a verb says of them ([`SidesSpec`]): each side's documents, its categorizer and its engine, and the scheduler's
//! settings every job gets (docs/categorizer.md "Replaying with a categorizer",
//! docs/engines.md "Which engine decides"). `simulate --baseline`, `tune` and `suggest` take
//! their sides from here, so that they cannot disagree about a baseline.
//!
//! The order is the documented one: the files of every side (each valid, each side's
//! categorizer document taken out: [`files`]), the scheduler's settings ([`settings`]), the
//! dialect and the engine it picks ([`dialect`]), each side's categorizer named, the rule that
//! the baseline never borrows the candidate's, each categorizer compiled ([`categorizer`]),
//! the policy sets, and each categorizer attached to its side's policy set.
//!
//! `watch`'s sides are resolved here too: today's, and one candidate per `-f`
//! ([`SidesSpec::of_watch`]), each with its own files and categorizer, every candidate against
//! the same baseline.
//!
//! Owns: [`Sides`], [`resolve`] and [`candidate_side`] (every candidate's policy set made as it
//! is replayed). Must not: read the history, replay or render; the
//! cluster's baseline is read from Lookout's database when the source opens it
//! ([`super::source`]), and attached there with [`Baseline::attach`].

pub mod categorizer;
pub mod dialect;
pub mod files;
pub mod settings;
pub mod spec;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::app::Context;
use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::{EngineFrom, EngineKind};
use crate::error::CliError;
use crate::input::SourceFile;
use crate::model::{Kind, Resource};
use crate::replay::baseline_from::BaselineFrom;
use crate::replay::{self, policy_sets::PolicySets};

use super::policy_set::{build, load_from_server, policy_set, Side, Unusable};
pub use categorizer::{attach, compile, compiled, Categorizer, RECORDED};
use categorizer::{borrow_rule, Named};
use dialect::{CandidateDialect, Dialect};
use files::{read_side, SideFiles};
pub use settings::SchedulerSettings;
pub use spec::{BacktestAt, CandidateFrom, ReplaySpec, SidesSpec};

/// The sides, resolved: what every replay verb compares.
pub struct Sides {
    /// What the verb's command line said: of them, and of its replay.
    pub spec: ReplaySpec,
    /// The candidates: one for `simulate`, `tune` (its template) and `suggest` (its proposal,
    /// built later); one per `-f` for `watch`, each named by its base name.
    pub candidates: Vec<Candidate>,
    pub baseline: Baseline,
    /// The candidates' engine (the baseline's is [`Baseline::engine`]), and why it decides.
    pub engine: EngineKind,
    pub engine_from: EngineFrom,
    pub settings: SchedulerSettings,
}

impl Sides {
    /// The candidate of a verb that compares one (`simulate`, `tune`, `suggest`).
    pub fn candidate(&self) -> &Candidate {
        &self.candidates[0]
    }

    /// The categorizer the cluster runs, as the verb names it: the baseline's (`suggest`'s
    /// `--categorizer`, `--baseline-categorizer FILE`, `tune`'s template), else in a replay
    /// without a baseline the candidate's. A database's export takes its hints off the
    /// executor's texts (docs/lookout.md); none: the texts are kept whole, counted.
    pub fn deployed_categorizer(&self) -> Option<&Categorizer> {
        match (&self.baseline.categorizer, self.spec.sides.what_if()) {
            (Some(c), _) => Some(c),
            (None, false) => self.candidate().categorizer.as_ref(),
            (None, true) => None,
        }
    }

    /// What is replayed: the one constructor of the policy sets. `baseline`: what the source
    /// adds (`Opened::baseline`, the cluster's read from Lookout's database, else this
    /// baseline's); without one, the baseline's own policy set. `candidates`: what the verb
    /// adds (`tune`'s candidates, `suggest`'s proposal); without them, every candidate's own
    /// (`watch`'s, `simulate`'s). `None`: no baseline (a plain replay), or a candidate not
    /// known yet.
    pub fn policy_sets(
        &self,
        baseline: Option<Simulator>,
        candidates: Option<Vec<replay::policy_sets::PolicySet>>,
    ) -> Option<PolicySets> {
        let baseline = match baseline {
            Some(b) => b,
            None => self.baseline.simulator()?.clone(),
        };
        let candidates = match candidates {
            Some(c) => c,
            None => self
                .candidates
                .iter()
                .map(|c| {
                    c.sim.clone().map(|simulator| replay::policy_sets::PolicySet {
                        name: c.name.clone(),
                        simulator,
                        settings: None,
                    })
                })
                .collect::<Option<Vec<_>>>()?,
        };
        Some(PolicySets { baseline, candidates })
    }

    /// The names of the Queue documents among the files of every side, each once, in order
    /// (`watch`'s queues when no `--queue` is given).
    pub fn queue_documents(&self) -> Vec<String> {
        let files = self
            .baseline
            .files
            .iter()
            .chain(self.candidates.iter().flat_map(|c| &c.files));
        let mut out: Vec<String> = Vec::new();
        for doc in files.flat_map(|f| &f.documents) {
            if let (Some(Kind::Queue), Some(Resource::Queue(q))) = (doc.kind, &doc.resource) {
                if !out.contains(&q.name) {
                    out.push(q.name.clone());
                }
            }
        }
        out
    }
}

/// A candidate side.
pub struct Candidate {
    /// Its label: `watch`'s `-f` base name, extension kept (`candidate.yaml`); empty for the
    /// one candidate of the other verbs.
    pub name: String,
    /// Its documents (valid), without its categorizer document: `-f`'s or the template's.
    pub files: Vec<SourceFile>,
    /// Whether they hold a RetryPolicy document.
    pub has_policies: bool,
    /// Its categorizer, read once (its document kept: `tune` varies it).
    pub categorizer: Option<Categorizer>,
    /// Its policy set, its categorizer attached: `-f`'s or the server's (`simulate`); a
    /// template's candidates and a proposal are the verb's to build ([`candidate_side`]).
    pub sim: Option<Simulator>,
}

/// The baseline side: where its policies come from, their policy set, the engine that
/// evaluates them and its categorizer.
pub struct Baseline {
    pub from: BaselineFrom,
    /// Its policy set, its categorizer attached, when it is known before the history is
    /// opened: `--baseline`'s, `tune`'s template as written or `suggest`'s no policy; `None`
    /// without a baseline, and for the cluster's (read when the source opens it).
    pub sim: Option<Simulator>,
    pub engine: EngineKind,
    pub categorizer: Option<Categorizer>,
    /// `--baseline`'s documents (valid), without its categorizer document.
    pub files: Vec<SourceFile>,
}

impl Baseline {
    /// Its policy set, when it is known before the history is opened.
    pub fn simulator(&self) -> Option<&Simulator> {
        self.sim.as_ref()
    }

    /// `--baseline`'s policy set: the one whose queues a candidate's files do not name are
    /// replayed under ([`candidate_side`]).
    pub fn given(&self) -> Option<&Simulator> {
        self.sim.as_ref().filter(|_| self.from == BaselineFrom::Files)
    }

    /// Whether it is a policy the cluster ran, whose fit to the record is counted
    /// (docs/what-if.md "Does the baseline explain the record?"): not no policy at all.
    pub fn explains(&self) -> bool {
        // tune's template as written is the search's starting point, not a record of what
        // the cluster ran: it is not held to the record either.
        matches!(self.from, BaselineFrom::Files | BaselineFrom::Cluster)
    }

    /// The cluster's policy set with the baseline's categorizer.
    pub fn attach(&self, sim: Simulator) -> Simulator {
        attach(sim, compiled(self.categorizer.as_ref()))
    }
}

/// A candidate's policy set as it is replayed: a queue its files do not name replays under
/// `today`'s documents (docs/what-if.md "Queues the candidate does not name"), so that a
/// candidate that says nothing of a queue changes none of its jobs; then its categorizer
/// attached. Every candidate is made here: `-f`'s, `watch`'s, each of `tune`'s and
/// `suggest`'s proposal.
pub fn candidate_side(
    sim: Simulator,
    today: Option<&Simulator>,
    categorizer: Option<Arc<Classifier>>,
) -> Result<Simulator, String> {
    let sim = match today {
        Some(today) => sim.with_queues_of(today)?,
        None => sim,
    };
    Ok(attach(sim, categorizer))
}

/// The sides `spec` names, resolved in the documented order (this module's doc). `None`:
/// documents that do not validate, reported (exit 3).
pub fn resolve(ctx: &mut Context, replay: ReplaySpec) -> anyhow::Result<Option<Sides>> {
    let spec = &replay.sides;
    let Some((candidate_files, baseline_files)) = read_files(ctx, spec)? else {
        return Ok(None);
    };
    let settings = SchedulerSettings::read(spec.scheduler_config.as_deref(), spec.overrides())?;
    let (engine, engine_from) = pick_engine(spec, &candidate_files, baseline_files.as_ref());
    let (baseline_files, baseline_document) = match baseline_files {
        Some(SideFiles { files, categorizer }) => (files, categorizer),
        None => (Vec::new(), None),
    };
    let (named, baseline_named) = name_categorizers(spec, candidate_files, baseline_document)?;
    let mut read = Vec::with_capacity(named.len());
    for (name, files, n) in named {
        let categorizer = n.read(ctx)?;
        read.push((name, files, categorizer));
    }
    let baseline_categorizer = match (&spec.candidate, baseline_named.said(), spec.what_if()) {
        // tune without a baseline: the template as written, its categorizer included.
        (CandidateFrom::Template(_), false, false) => read.first().and_then(|c| c.2.clone()),
        _ => baseline_named.read(ctx)?,
    };
    // The policy sets, each with its categorizer.
    let retry_policies = spec.retry_policies.as_deref();
    let mut candidates = Vec::with_capacity(read.len());
    for (name, files, categorizer) in read {
        let sim = match &spec.candidate {
            CandidateFrom::Files(_) | CandidateFrom::Each(_) => {
                Some(build(&files, retry_policies, engine, Side::Candidate)?)
            }
            CandidateFrom::Server => Some(load_from_server(ctx, retry_policies, spec.engine)?),
            CandidateFrom::Template(_) | CandidateFrom::Proposed => None,
        };
        candidates.push((name, files, categorizer, sim));
    }
    // A server without the dialect header decides its own engine (docs/engines.md).
    let engine = candidates
        .first()
        .and_then(|c| c.3.as_ref())
        .map_or(engine, Simulator::engine);
    let baseline_engine = spec.baseline_engine.unwrap_or(engine);
    let template = candidates.first().map_or(&[][..], |c| &c.1[..]);
    let from = baseline_from(spec);
    let baseline = Baseline {
        from,
        sim: baseline_policies(
            from,
            spec,
            &baseline_files,
            template,
            &baseline_categorizer,
            baseline_engine,
        )?,
        engine: baseline_engine,
        categorizer: baseline_categorizer,
        files: baseline_files,
    };
    let today = baseline.given();
    let candidates = candidates
        .into_iter()
        .map(|(name, files, categorizer, sim)| {
            let sim = sim
                .map(|s| candidate_side(s, today, compiled(categorizer.as_ref())))
                .transpose()
                .map_err(CliError::invalid)?;
            Ok(Candidate {
                name,
                has_policies: Dialect::of(&files).has_policies(),
                files,
                categorizer,
                sim,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    warn_unknown_default(ctx, &settings, &candidates)?;
    Ok(Some(Sides {
        spec: replay,
        candidates,
        baseline,
        engine,
        engine_from,
        settings: settings.for_engine(engine, &mut *ctx.err)?,
    }))
}

/// The scheduler's `defaultPolicyName` (`--default-policy`, or the config's) that a
/// candidate's documents do not hold: said once, since no job may need it (a job whose queue
/// names no policy does, and is then refused), and a typo in it otherwise passes unseen.
fn warn_unknown_default(
    ctx: &mut Context,
    settings: &SchedulerSettings,
    candidates: &[Candidate],
) -> std::io::Result<()> {
    let Some(name) = settings.applied().default_policy_name else {
        return Ok(());
    };
    let lacks = |sim: &Simulator| !sim.policies().any(|p| p.name == name);
    if candidates.iter().filter_map(|c| c.sim.as_ref()).any(lacks) {
        writeln!(
            ctx.err,
            "{}: the scheduler's defaultPolicyName {} is not among the documents given with -f: a job whose queue names no policy cannot be replayed",
            ctx.style.warning("warning"),
            crate::diag::quote(&name)
        )?;
    }
    Ok(())
}

/// Each candidate's files (named) and the baseline's, when it has files: every document
/// valid (`None` after reporting one that is not: exit 3). A candidate of no file (the
/// server's, a proposal) has none.
#[allow(clippy::type_complexity)]
fn read_files(
    ctx: &mut Context,
    spec: &SidesSpec,
) -> anyhow::Result<Option<(Vec<(String, SideFiles)>, Option<SideFiles>)>> {
    let done = spec.candidate.done();
    let read = |ctx: &mut Context, paths: &[PathBuf], side| read_side(ctx, paths, spec.recursive, side, done);
    let mut candidates = Vec::new();
    match &spec.candidate {
        CandidateFrom::Files(paths) | CandidateFrom::Template(paths) => match read(ctx, paths, Side::Candidate)? {
            Some(f) => candidates.push((String::new(), f)),
            None => return Ok(None),
        },
        CandidateFrom::Each(paths) => {
            for path in paths {
                match read(ctx, std::slice::from_ref(path), Side::Candidate)? {
                    Some(f) => candidates.push((candidate_name(path), f)),
                    None => return Ok(None),
                }
            }
        }
        CandidateFrom::Server | CandidateFrom::Proposed => candidates.push((String::new(), SideFiles::none())),
    }
    let baseline = match spec.baseline.is_empty() {
        true => None,
        false => match read(ctx, &spec.baseline, Side::Baseline)? {
            Some(f) => Some(f),
            None => return Ok(None),
        },
    };
    Ok(Some((candidates, baseline)))
}

/// The engine the documents of the sides pick, and why (docs/engines.md "Which engine
/// decides"): every candidate's files count together, against the baseline's.
fn pick_engine(
    spec: &SidesSpec,
    candidates: &[(String, SideFiles)],
    baseline: Option<&SideFiles>,
) -> (EngineKind, EngineFrom) {
    let files: Vec<SourceFile> = candidates.iter().flat_map(|(_, f)| f.files.iter().cloned()).collect();
    dialect::engine(
        spec.engine,
        match spec.candidate {
            CandidateFrom::Proposed => CandidateDialect::Proposed,
            _ => CandidateDialect::Files(Dialect::of(&files)),
        },
        baseline_from(spec),
        Dialect::of(baseline.map_or(&[][..], |b| &b.files[..])),
    )
}

/// Where the spec takes the baseline's policies from: `--baseline`'s files, else the
/// cluster's, else `tune`'s template as written or `suggest`'s no policy; else none.
fn baseline_from(spec: &SidesSpec) -> BaselineFrom {
    match &spec.candidate {
        _ if !spec.baseline.is_empty() => BaselineFrom::Files,
        _ if spec.baseline_from_cluster => BaselineFrom::Cluster,
        CandidateFrom::Template(_) => BaselineFrom::Template,
        CandidateFrom::Proposed => BaselineFrom::NoPolicy,
        _ => BaselineFrom::None,
    }
}

/// Each side's categorizer named (its flag or the document among its files, never both)
/// and the rule that neither side borrows the other's, checked for every candidate before
/// any is read. Each candidate with its name and files.
#[allow(clippy::type_complexity)]
fn name_categorizers<'s>(
    spec: &'s SidesSpec,
    candidates: Vec<(String, SideFiles)>,
    baseline_document: Option<(String, crate::model::Document)>,
) -> Result<(Vec<(String, Vec<SourceFile>, Named<'s>)>, Named<'s>), CliError> {
    let mut named = Vec::with_capacity(candidates.len());
    for (name, SideFiles { files, categorizer }) in candidates {
        let n = Named::new(
            Side::Candidate,
            "--categorizer",
            spec.categorizer.as_deref(),
            categorizer,
        )?;
        named.push((name, files, n));
    }
    let baseline = Named::new(
        Side::Baseline,
        spec.baseline_categorizer_flag(),
        spec.baseline_categorizer.as_deref(),
        baseline_document,
    )?;
    let proposed = spec.candidate == CandidateFrom::Proposed;
    for (_, _, n) in &named {
        borrow_rule(spec.what_if(), proposed, n, &baseline)?;
    }
    Ok((named, baseline))
}

/// The baseline's policy set, from where it comes, with its categorizer: `--baseline`'s
/// files, `tune`'s template as written, or no policy (`suggest` without a baseline); none
/// without a baseline, and for the cluster's (read when the source opens).
fn baseline_policies(
    from: BaselineFrom,
    spec: &SidesSpec,
    files: &[SourceFile],
    template: &[SourceFile],
    categorizer: &Option<Categorizer>,
    engine: EngineKind,
) -> anyhow::Result<Option<Simulator>> {
    let retry_policies = spec.retry_policies.as_deref();
    let with_categorizer = |sim| Some(attach(sim, compiled(categorizer.as_ref())));
    Ok(match from {
        BaselineFrom::Files => with_categorizer(build(files, retry_policies, engine, Side::Baseline)?),
        BaselineFrom::Template => with_categorizer(template_baseline(template, retry_policies, engine)?),
        BaselineFrom::NoPolicy => {
            let none = Simulator::new(Vec::new(), Vec::new(), None).map_err(CliError::invalid)?;
            with_categorizer(none.with_engine(engine))
        }
        BaselineFrom::Cluster | BaselineFrom::None => None,
    })
}

/// A candidate's label: its file's (or directory's) base name, extension kept.
pub fn candidate_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
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
