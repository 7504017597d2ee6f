//! A side's executor categorizer (docs/categorizer.md "Replaying with a categorizer"): named
//! by a flag or by a document among the side's files, never both; the rule that the baseline
//! never borrows the candidate's; read and compiled once; attached to a policy set.
//!
//! Owns: [`Categorizer`], [`Named`], [`borrow_rule`], [`compile`] (every classifier a verb
//! replays with is compiled here) and [`attach`] (the one place a categorizer meets its
//! policy set). Must not: read histories or build policy sets.

use std::path::Path;
use std::sync::Arc;

use crate::app::Context;
use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::error::CliError;
use crate::input::{self, CategorizerFile};
use crate::model::categorizer::ErrorCategories;
use crate::model::{Document, Resource};

use crate::commands::replay::policy_set::Side;

/// `--baseline-categorizer recorded`: the baseline keeps the recorded categories.
pub const RECORDED: &str = "recorded";

/// The executor's categorizer config of one side, read once: its file, its one document, its
/// config and the classifier compiled from it.
#[derive(Debug, Clone)]
pub struct Categorizer {
    pub file: CategorizerFile,
    pub compiled: Arc<Classifier>,
}

/// `config` compiled (validated already: what the checks let through compiles).
pub fn compile(config: &ErrorCategories) -> Result<Classifier, String> {
    Classifier::new(config)
}

/// `sim` with `categorizer` (none: the recorded categories): the one place a side's
/// categorizer is attached to its policy set.
pub fn attach(sim: Simulator, categorizer: Option<Arc<Classifier>>) -> Simulator {
    sim.with_categorizer(categorizer)
}

impl Categorizer {
    /// `file` (valid) compiled, its warnings said on stderr.
    fn compile(ctx: &mut Context, file: CategorizerFile) -> anyhow::Result<Categorizer> {
        for w in &file.warnings {
            writeln!(ctx.err, "{}: {w}", ctx.style.warning("warning"))?;
        }
        let classifier = compile(&file.config)
            .map_err(|e| CliError::invalid(format!("invalid categorizer `{}`: {e}", file.name)))?;
        Ok(Categorizer {
            file,
            compiled: Arc::new(classifier),
        })
    }

    /// `--categorizer FILE` (or a side's flag): exit 3 naming it and each problem's line, before
    /// the history is read.
    pub fn read(ctx: &mut Context, path: &Path) -> anyhow::Result<Categorizer> {
        Categorizer::compile(ctx, input::read_categorizer(path)?)
    }

    /// The categorizer document `doc` of the file `name`, among a side's files (valid: the
    /// side's report refused it otherwise), its warnings placed as a flag's are.
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

/// The compiled classifier of a side, if it has a categorizer.
pub fn compiled(c: Option<&Categorizer>) -> Option<Arc<Classifier>> {
    c.map(|c| c.compiled.clone())
}

/// A side given two categorizers: a usage error naming both (docs/categorizer.md).
pub fn two_categorizers(side: Side, a: &str, b: &str) -> CliError {
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
    /// `side`'s categorizer: `flag` given `given`, or `in_files` (a document among the
    /// side's files). Both, unless the flag names the file that holds the document, is a
    /// usage error naming both; so are two documents (`super::files::read_side`).
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
            (None, Some(p)) if p.as_os_str() != RECORDED => Categorizer::read(ctx, p).map(Some),
            _ => Ok(None),
        }
    }
}

/// The baseline never borrows the candidate's categorizer, nor the candidate the baseline's
/// (docs/categorizer.md "Replaying with a categorizer"): in a what-if, a side with a
/// categorizer beside a side that says none (not even `--baseline-categorizer recorded`) is a
/// usage error, whichever side has it, before any is read. `suggest`'s candidate is the
/// proposal it builds on the deployed config (`proposed`): not checked.
pub fn borrow_rule(what_if: bool, proposed: bool, candidate: &Named<'_>, baseline: &Named<'_>) -> Result<(), CliError> {
    if !what_if || proposed {
        return Ok(());
    }
    match (candidate.file(), baseline.file()) {
        (Some(file), None) if !baseline.said() => Err(CliError::usage(format!(
            "the baseline has no categorizer while the candidate has `{file}`: give the deployed one (`--baseline-categorizer FILE`), or `--baseline-categorizer recorded` to keep the categories Lookout recorded"
        ))),
        (None, Some(file)) if !candidate.said() => Err(CliError::usage(format!(
            "the candidate has no categorizer while the baseline has `{file}`: give the candidate's (`--categorizer FILE`), or compare both on the categories Lookout recorded (`--baseline-categorizer recorded`)"
        ))),
        _ => Ok(()),
    }
}
