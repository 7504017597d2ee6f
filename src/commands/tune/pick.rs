//! `--pick` (docs/tune.md "Writing the choice", "Picking a candidate"): which candidate it
//! names ([`Pick`]), and that candidate's documents written as YAML on stdout, before a search
//! (`--pick N` without a history, `--pick template`) or after one (`--pick recommended`, and
//! `--pick N` given a history: refused when N loses a job the baseline saves or breaks a
//! constraint, or when the search finds the baseline does not explain the record, unless
//! `--force`). A template `suggest` rejected heads every pick with that verdict: a pick is
//! never cleaner than what it was made from.
//!
//! Decisions docs/tune.md leaves open:
//! - `--pick N` with a history and `--shard`: refused as `--pick recommended` is (a shard's
//!   jobs alone cannot say what N loses; that is `check`); a candidate that does not
//!   validate is refused before the replay;
//! - `--pick` prints the candidate's policy and queue documents in their own dialect (the
//!   encoder `get -o yaml` uses: comments and key order are the canonical ones), separated
//!   by `---`; the varied scheduler settings, which `apply` does not take, are said on stderr;
//! - `--pick template` is `--pick N` with N the candidate whose varied values are the
//!   template's own as written (`unset` for a field it leaves out), found before anything
//!   is replayed; none is exit 1, naming the vary that does not list the template's value.
//!
//! Owns: [`Picking`] and the pick's words on stderr. Must not: replay, rank (that is
//! `tune::rank`, through [`ranking`]) or word a refusal (that is `output::tune`).

use crate::app::Context;
use crate::commands::replay::checks::said_after_replay;
use crate::commands::replay::sides::Sides;
use crate::error::{CliError, ExitCode};
use crate::input::SourceFile;
use crate::model::encode::{policy_document, queue_document, to_yaml};
use crate::model::Resource;
use crate::output::text::shown;
use crate::output::tune::{self as view, error_words, values_words};
use crate::tune::rank::MaxCompute;
use crate::tune::sweep::Swept;
use crate::tune::{CandidateDocuments, Target, Template, Vary};

use super::finish::ranking;
use super::record::TuneRun;

/// `--pick`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Id(u64),
    /// The candidate whose varied values are the template's own, as written: an id once the
    /// template is read.
    Template,
    Recommended,
}

/// What a pick is made of: which candidate, `--force`, the reject verdict heading the
/// template, and the template and varies its documents are made from.
pub struct Picking<'a> {
    /// `None`: no `--pick`.
    pub pick: Option<Pick>,
    /// `--force`: write a pick that loses a job or breaks a constraint, or that a search
    /// whose baseline does not explain the record made.
    pub force: bool,
    /// The reasons of the reject verdict heading the template (`suggest -o policy`'s): every
    /// pick begins with that verdict.
    pub rejects: Vec<String>,
    pub template: &'a Template,
    pub varies: &'a [Vary],
}

/// The reasons of the reject verdicts heading the template's files, each once.
pub fn template_rejects(sides: &Sides) -> Vec<String> {
    let mut rejects: Vec<String> = Vec::new();
    for reason in sides.candidate().files.iter().flat_map(SourceFile::rejected) {
        if !rejects.iter().any(|r| r == reason) {
            rejects.push(reason.to_string());
        }
    }
    rejects
}

impl Picking<'_> {
    /// `--pick template` made `--pick N`, with N the template's own candidate (docs/tune.md
    /// "Writing the choice"), once the varies are checked.
    pub fn own_candidate(&mut self) -> Result<(), CliError> {
        if self.pick == Some(Pick::Template) {
            let id = self
                .template
                .own_candidate(self.varies)
                .map_err(|why| CliError::failed(format!("`--pick template`: {why}")))?;
            self.pick = Some(Pick::Id(id));
        }
        Ok(())
    }

    /// `--pick N` before the search, the `n` candidates counted: N must be one of them;
    /// without a history (or when its documents do not validate, which [`write_candidate`]
    /// says), nothing to replay: its documents as they are (`Some`: the exit status). With a
    /// history, the search first (`None`).
    pub fn before_search(&self, ctx: &mut Context, n: u128, history: bool) -> anyhow::Result<Option<ExitCode>> {
        let Some(Pick::Id(id)) = self.pick else {
            return Ok(None);
        };
        if id == 0 || u128::from(id) > n {
            return Err(CliError::usage(format!("`--pick {id}`: the candidates are numbered 1 to {n}")).into());
        }
        let candidate = self.template.candidate(self.varies, id);
        // Without a history, nothing to replay: the documents as they are. With one (or
        // when they do not validate, which `write_candidate` says), the search first.
        if !history || !candidate.is_valid() {
            return write_candidate(ctx, &candidate, self.varies, &self.rejects).map(Some);
        }
        Ok(None)
    }

    /// `--pick recommended`: the recommended candidate's documents. `--pick ID` (given a
    /// history): candidate ID's; one that loses a job the baseline saves or breaks a
    /// constraint is refused (exit 1), or with `--force` written with a warning
    /// (`output::tune::{pick_refusal, pick_warning}`).
    pub fn after_search(
        &self,
        ctx: &mut Context,
        swept: Swept,
        run: &TuneRun,
        max_compute: Option<MaxCompute>,
    ) -> anyhow::Result<ExitCode> {
        let errors_code = said_after_replay(
            &mut *ctx.err,
            ctx.style,
            &swept.recorded,
            swept.errors,
            run.skip_invalid,
        )?
        .unwrap_or(ExitCode::Success);
        let ranked = ranking(swept.arms, run, max_compute, &swept.baseline, &swept.rates);
        let mut rejects = self.rejects.clone();
        let (id, warning) = match self.pick {
            Some(Pick::Id(id)) => {
                // The search found the baseline does not explain the record: nothing it
                // measured holds, so the pick is refused as `--pick recommended` is, or
                // forced and written headed by that reject.
                if let (Some(e), true) = (&ranked.baseline.explained, ranked.baseline.unexplained) {
                    if !self.force {
                        return Err(CliError::failed(view::pick_unexplained_refusal(id, e))
                            .with_hint(view::PICK_UNEXPLAINED_HINT)
                            .into());
                    }
                    rejects.push(e.unexplained_words());
                }
                let at = ranked.candidates.iter().position(|c| c.id == id);
                let max_compute = run.max_compute.as_deref();
                // A pick that loses a job or breaks a constraint is not written unless
                // forced: a script under `set -e` stops here (docs/tune.md "Picking a
                // candidate").
                if let (Some(i), false) = (at, self.force) {
                    if let Some(refusal) = view::pick_refusal(&ranked, i, max_compute) {
                        return Err(CliError::failed(refusal).into());
                    }
                }
                (id, at.and_then(|i| view::pick_warning(&ranked, i, max_compute)))
            }
            _ => match ranked.recommended {
                Some(i) => (ranked.candidates[i].id, None),
                None => {
                    writeln!(
                        ctx.err,
                        "{}: no candidate is recommended: {}",
                        ctx.style.error("error"),
                        view::none_recommended(&ranked, "none")
                    )?;
                    return Ok(ExitCode::Failure);
                }
            },
        };
        let code = write_candidate(ctx, &self.template.candidate(self.varies, id), self.varies, &rejects)?;
        if let Some(warning) = warning {
            writeln!(ctx.err, "{}: {warning}", ctx.style.warning("warning"))?;
        }
        Ok(if code != ExitCode::Success {
            code
        } else if errors_code != ExitCode::Success {
            errors_code
        } else if run.exit_code && ranked.recommended.is_some() {
            // `--exit-code` means one thing, with or without `--pick`: a candidate is
            // recommended.
            ExitCode::Failure
        } else {
            ExitCode::Success
        })
    }
}

/// `--pick`'s value read: a candidate's id, `template` or `recommended`.
pub fn parse_pick(text: &str) -> Result<Pick, CliError> {
    match text {
        "recommended" => return Ok(Pick::Recommended),
        "template" => return Ok(Pick::Template),
        _ => {}
    }
    text.parse::<u64>().map(Pick::Id).map_err(|_| {
        CliError::usage(format!(
            "invalid `--pick` `{text}`: expected a candidate's id (a number from the output's ID column), `template` or `recommended`"
        ))
    })
}

/// A candidate's documents as YAML on stdout (each in its own dialect), or its errors.
fn write_candidate(
    ctx: &mut Context,
    c: &CandidateDocuments,
    varies: &[Vary],
    rejects: &[String],
) -> anyhow::Result<ExitCode> {
    if !c.is_valid() {
        for e in c.errors() {
            writeln!(
                ctx.err,
                "{}: {}: {}",
                ctx.style.error("error"),
                shown(&e.file),
                shown(&error_words(&e))
            )?;
        }
        return Err(CliError::invalid(format!(
            "candidate {} ({}) does not validate; nothing was written",
            c.id,
            values_words(&c.values)
        ))
        .into());
    }
    let mut docs = Vec::new();
    for file in &c.files {
        docs.extend(documents(file)?);
    }
    let mut text = docs.join("---\n");
    if !rejects.is_empty() {
        // Its first line, where `apply` reads a reject, as `suggest -o policy` writes one.
        text.insert_str(0, &view::pick_verdict_line(rejects));
        writeln!(
            ctx.err,
            "{}: {}",
            ctx.style.warning("warning"),
            view::pick_rejected_warning(c.id, rejects)
        )?;
    }
    ctx.out.write_all(text.as_bytes())?;
    // The varied values of a config `apply` does not take.
    let set_in = |target: Target| -> Vec<String> {
        varies
            .iter()
            .zip(&c.values)
            .filter(|(v, _)| v.target == target)
            .map(|(v, (_, value))| format!("{}={value}", v.path))
            .collect()
    };
    let (scheduler, categorizer) = (set_in(Target::Scheduler), set_in(Target::Categorizer));
    if !categorizer.is_empty() {
        writeln!(
            ctx.err,
            "note: candidate {} also sets the categorizer config ({}): set it in the executor's config; `apply` does not take it",
            c.id,
            categorizer.join(", ")
        )?;
    }
    if !scheduler.is_empty() {
        writeln!(
            ctx.err,
            "note: candidate {} also sets the scheduler config ({}): set it in the scheduler's own config; `apply` does not take it",
            c.id,
            scheduler.join(", ")
        )?;
    }
    Ok(ExitCode::Success)
}

/// The YAML of each policy and queue of `file`, as `get -o yaml` writes them.
fn documents(file: &SourceFile) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for doc in &file.documents {
        let value = match &doc.resource {
            Some(Resource::RetryPolicy(p)) => {
                let version = doc.api_version.unwrap_or(crate::model::ApiVersion::V1);
                policy_document(p, version).map_err(|fields| {
                    CliError::invalid(format!(
                        "policy `{}` does not fit its dialect `{}`: {}",
                        p.name,
                        version.as_str(),
                        fields.join(", ")
                    ))
                })?
            }
            Some(Resource::Queue(q)) => queue_document(q),
            _ => continue,
        };
        out.push(to_yaml(&value));
    }
    Ok(out)
}
