//! The two sides of a comparison, each resolved once: its documents (a policy set), its
//! categorizer and its engine (docs/categorizer.md "Replaying with a categorizer",
//! docs/engines.md). `simulate --baseline`, `tune` and `suggest` take their sides from here,
//! so that they cannot disagree about a baseline.
//!
//! Owns: a side's files read (their categorizer document is that side's, one at most), the
//! engine their dialect picks, each categorizer read once (compiled, its document kept for
//! `tune`'s varies, its warnings said), the rule that the baseline never borrows the
//! candidate's categorizer, and the baseline's policies before the history is opened (files,
//! the template, or the cluster's, which [`super::source`] reads from the same database).
//! Must not: read the history, replay or render.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::app::Context;
use crate::cli::ReplayArgs;
use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input::{self, CategorizerFile, SourceFile};
use crate::model::{ApiVersion, Document, Kind, Resource};

use super::policy_set::{build, report_invalid, PolicyFlags, Side};

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
    Categorizer::compile(ctx, input::read_categorizer(path)?)
}

impl Categorizer {
    /// `file` (valid) compiled, its warnings said on stderr.
    fn compile(ctx: &mut Context, file: CategorizerFile) -> anyhow::Result<Categorizer> {
        for w in &file.warnings {
            writeln!(ctx.err, "{}: {w}", ctx.style.warning("warning"))?;
        }
        // Validated already: compiling cannot fail on what the checks let through.
        let classifier = Classifier::new(&file.config)
            .map_err(|e| CliError::invalid(format!("invalid categorizer `{}`: {e}", file.name)))?;
        Ok(Categorizer {
            file,
            compiled: Arc::new(classifier),
        })
    }

    /// The categorizer document `doc` of the file `name`, among a side's files (valid: the
    /// side's report refused it otherwise), its warnings placed as `--categorizer`'s are.
    fn of_document(ctx: &mut Context, name: &str, doc: Document) -> anyhow::Result<Categorizer> {
        let Some(Resource::ErrorCategories(config)) = doc.resource.clone() else {
            return Err(CliError::invalid(format!(
                "invalid categorizer in `{name}`: it holds no `errorCategories`"
            ))
            .into());
        };
        let warnings = doc.diagnostics.iter().map(|d| input::placed(name, d)).collect();
        Categorizer::compile(
            ctx,
            CategorizerFile {
                name: name.to_string(),
                document: doc,
                config,
                warnings,
            },
        )
    }
}

/// `--categorizer FILE` when given.
pub fn categorizer(ctx: &mut Context, path: Option<&Path>) -> anyhow::Result<Option<Categorizer>> {
    path.map(|p| read_categorizer(ctx, p)).transpose()
}

/// The compiled classifier of a side, if it has a categorizer.
pub fn compiled(c: Option<&Categorizer>) -> Option<Arc<Classifier>> {
    c.map(|c| c.compiled.clone())
}

/// One side's files (`-f`, `--baseline`, `tune`'s template): its policies and queues, and the
/// categorizer document among them, which is that side's (docs/categorizer.md): its file's
/// name and the document, read by [`Named::read`].
pub struct SideFiles {
    pub files: Vec<SourceFile>,
    pub categorizer: Option<(String, Document)>,
}

impl SideFiles {
    /// No files: a side with no policy (`simulate` without `-f`).
    pub fn none() -> SideFiles {
        SideFiles {
            files: Vec::new(),
            categorizer: None,
        }
    }
}

/// `paths` read as `side`'s files: every document valid (else validate's report on stderr,
/// `nothing was DONE`, and `None`: exit 3), the categorizer document among them taken out as
/// the side's own. Two categorizer documents are a usage error naming both.
pub fn read_side(
    ctx: &mut Context,
    paths: &[PathBuf],
    recursive: bool,
    side: Side,
    done: &str,
) -> anyhow::Result<Option<SideFiles>> {
    let mut files = input::read_sources(
        paths,
        recursive,
        Some(&[Kind::RetryPolicy, Kind::Queue, Kind::ErrorCategories]),
    );
    if !report_invalid(ctx, &files, done)? {
        return Ok(None);
    }
    let mut found: Vec<(String, Document)> = Vec::new();
    for f in &mut files {
        let (categorizers, rest): (Vec<Document>, Vec<Document>) = std::mem::take(&mut f.documents)
            .into_iter()
            .partition(|d| d.kind == Some(Kind::ErrorCategories));
        f.documents = rest;
        found.extend(categorizers.into_iter().map(|d| (f.name.clone(), d)));
    }
    if let [(a, da), (b, db), ..] = &found[..] {
        let one = |file: &str, d: &Document| format!("`{file}` document {}", d.index + 1);
        return Err(two_categorizers(side, &one(a, da), &one(b, db)).into());
    }
    Ok(Some(SideFiles {
        files,
        categorizer: found.pop(),
    }))
}

/// A side given two categorizers: a usage error naming both (docs/categorizer.md).
fn two_categorizers(side: Side, a: &str, b: &str) -> CliError {
    let whose = match side {
        Side::Candidate => "the candidate",
        Side::Baseline => "the baseline",
    };
    CliError::usage(format!("{whose} has two categorizers, {a} and {b}: give one"))
}

/// Whether `a` and `b` name the same file (a flag naming the file a side's files hold is one
/// categorizer, not two).
fn same_file(a: &Path, b: &str) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == Path::new(b),
    }
}

/// A side's categorizer as named, before any is read: by its flag (`recorded`, for the
/// baseline, names the recorded categories) or by a document among its files.
pub struct Named<'a> {
    given: Option<&'a Path>,
    in_files: Option<(String, Document)>,
}

impl<'a> Named<'a> {
    /// `side`'s categorizer: `flag` given `given`, or `in_files` (from [`SideFiles`]). Both,
    /// unless the flag names the file that holds the document, is a usage error naming both;
    /// so are two documents ([`read_side`]).
    pub fn new(
        side: Side,
        flag: &str,
        given: Option<&'a Path>,
        in_files: Option<(String, Document)>,
    ) -> Result<Named<'a>, CliError> {
        if let (Some(p), Some((file, d))) = (given, &in_files) {
            if p.as_os_str() == RECORDED || !same_file(p, file) {
                return Err(two_categorizers(
                    side,
                    &format!("`{flag} {}`", p.display()),
                    &format!("`{file}` document {}", d.index + 1),
                ));
            }
        }
        Ok(Named { given, in_files })
    }

    /// The file it is read from, when the side has one (not `recorded`).
    pub fn file(&self) -> Option<String> {
        match (&self.in_files, self.given) {
            (Some((file, _)), _) => Some(file.clone()),
            (None, Some(p)) if p.as_os_str() != RECORDED => Some(p.display().to_string()),
            _ => None,
        }
    }

    /// Whether the side says which categories its runs get: a categorizer, or `recorded`.
    pub fn said(&self) -> bool {
        self.given.is_some() || self.in_files.is_some()
    }

    /// The categorizer read and compiled (its warnings said); `None`: the recorded
    /// categories.
    pub fn read(self, ctx: &mut Context) -> anyhow::Result<Option<Categorizer>> {
        match (self.in_files, self.given) {
            (Some((file, doc)), _) => Categorizer::of_document(ctx, &file, doc).map(Some),
            (None, Some(p)) if p.as_os_str() != RECORDED => read_categorizer(ctx, p).map(Some),
            _ => Ok(None),
        }
    }
}

/// The baseline's files (its policies and queues) and its categorizer as named: by
/// `--baseline-categorizer` (`flag`) or by a document among its files.
pub fn baseline_named(
    flag: Option<&Path>,
    files: Option<SideFiles>,
) -> Result<(Option<Vec<SourceFile>>, Named<'_>), CliError> {
    let (files, in_files) = match files {
        Some(SideFiles { files, categorizer }) => (Some(files), categorizer),
        None => (None, None),
    };
    Ok((
        files,
        Named::new(Side::Baseline, "--baseline-categorizer", flag, in_files)?,
    ))
}

/// Whether the replay compares against a baseline: `--baseline` or `--baseline-from-cluster`.
pub fn what_if(replay: &ReplayArgs) -> bool {
    !replay.baseline.is_empty() || replay.baseline_from_cluster
}

/// The baseline never borrows the candidate's categorizer (docs/categorizer.md "Replaying
/// with a categorizer"): a what-if whose candidate has a categorizer and whose baseline says
/// none, not even `--baseline-categorizer recorded`, is a usage error, before any is read.
pub fn check_categorizers(replay: &ReplayArgs, candidate: &Named<'_>, baseline: &Named<'_>) -> Result<(), CliError> {
    match candidate.file() {
        Some(file) if what_if(replay) && !baseline.said() => Err(no_baseline_categorizer(&file)),
        _ => Ok(()),
    }
}

/// The refusal of a baseline with no categorizer beside a candidate's `file`.
pub fn no_baseline_categorizer(file: &str) -> CliError {
    CliError::usage(format!(
        "the baseline has no categorizer while the candidate has `{file}`: give the deployed one (`--baseline-categorizer FILE`), or `--baseline-categorizer recorded` to keep the categories Lookout recorded"
    ))
}

/// What a side's files say of the engine: whether they hold a RetryPolicy document, and
/// whether every one is today's Armada's (`armadaproject.io/v1beta1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    policies: bool,
    all_v1beta1: bool,
    any_v1beta1: bool,
}

impl Dialect {
    /// The dialect of `files`' RetryPolicy documents (Queues read the same in both and do not
    /// count).
    pub fn of(files: &[SourceFile]) -> Dialect {
        let mut versions = files
            .iter()
            .flat_map(|f| &f.documents)
            .filter(|d| d.kind == Some(Kind::RetryPolicy))
            .map(|d| d.api_version);
        let (mut policies, mut all_v1beta1, mut any_v1beta1) = (false, true, false);
        for v in versions.by_ref() {
            policies = true;
            let upstream = v == Some(ApiVersion::V1beta1);
            all_v1beta1 &= upstream;
            any_v1beta1 |= upstream;
        }
        Dialect {
            policies,
            all_v1beta1,
            any_v1beta1,
        }
    }

    /// What the documents are, in words (`suggest`'s table says where its engine came from).
    pub fn words(self) -> &'static str {
        match (self.policies, self.all_v1beta1, self.any_v1beta1) {
            (false, _, _) => "holds no RetryPolicy",
            (true, true, _) => "is `armadaproject.io/v1beta1`",
            (true, false, true) => "mixes both dialects",
            (true, false, false) => "is `armadaproject.io/v1`",
        }
    }
}

/// The engine the documents pick (docs/engines.md "Which engine decides"): `upstream` when
/// every RetryPolicy document of the sides is today's Armada's, and there is one; else
/// `design`, the only engine that reads both dialects.
pub fn engine_of(sides: &[Dialect]) -> EngineKind {
    if sides.iter().any(|d| d.policies) && sides.iter().all(|d| d.all_v1beta1) {
        EngineKind::Upstream
    } else {
        EngineKind::Design
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
    /// The baseline's policies: `--baseline`'s files (`files`, read by [`read_side`]) built
    /// with `flags` for `engine` (refused, exit 3, when they make no policy set the engine
    /// can evaluate), else with `--baseline-from-cluster` the cluster's, else none.
    pub fn of(
        replay: &ReplayArgs,
        files: Option<&[SourceFile]>,
        flags: PolicyFlags<'_>,
        engine: EngineKind,
        categorizer: Option<Arc<Classifier>>,
    ) -> anyhow::Result<Baseline> {
        let policies = match files {
            Some(files) => BaselinePolicies::Given(Box::new(build(files, flags, engine, Side::Baseline)?)),
            None if replay.baseline_from_cluster => BaselinePolicies::Cluster,
            None => BaselinePolicies::None,
        };
        Ok(Baseline {
            policies,
            engine,
            categorizer,
        })
    }

    /// The baseline's policy set with its categorizer: the one place a side's categorizer
    /// is attached to its policies.
    pub fn attach(&self, sim: Simulator) -> Simulator {
        sim.with_categorizer(self.categorizer.clone())
    }
}
