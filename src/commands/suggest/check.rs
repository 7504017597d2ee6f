//! The checks of `suggest`'s flags before anything is read ([`check`], which `--emit` makes
//! too, in the same words), and the refusals of the resolved sides before the history is
//! opened: a design-dialect baseline for today's Armada, and the upstream-only flags with
//! the design engine.
//!
//! Owns: those refusals (usage errors, exit 2). Must not: read the history, learn or
//! render.

use std::path::PathBuf;

use crate::cli::{SuggestArgs, SuggestOutput};
use crate::commands::replay::sides::{CandidateFrom, ReplaySpec, Sides, SidesSpec};
use crate::commands::replay::source::{check_flags, check_source};
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::model::validate::name_reason;
use crate::replay::source::is_stream;
use crate::suggest::propose::{Knobs, MAX_LIMIT};

/// The checks of suggest's flags before anything is read (`--emit` makes them too, in the
/// same words): the knobs, what a sharded suggest cannot read, the source's flags, the time;
/// and the sides they name (the proposal, its baseline, `--categorizer` the deployed config).
pub fn check(args: &SuggestArgs) -> Result<(Knobs, ReplaySpec), CliError> {
    if args.exit_code {
        return Err(CliError::usage(
            "`suggest --exit-code` is gone: suggest exits 1 when its verdict is `reject`, in every format, and 0 on `adopt` and `keep`",
        )
        .with_hint("drop `--exit-code`: under `set -e` a script stops at a rejected proposal"));
    }
    let knobs = check_knobs(
        args.min_trials,
        args.futile,
        args.max_limit,
        args.extrapolate,
        &args.name,
    )?;
    check_queue(args.replay.queue.as_deref(), args.output)?;
    check_sharded(args)?;
    check_flags(&args.replay, &[])?;
    check_source(&args.replay, args.emit.emit.is_none())?;
    let sides = SidesSpec::of(
        &args.replay,
        CandidateFrom::Proposed,
        false,
        None,
        args.categorizer.clone(),
    );
    // Its comparison runs in one process, a sharded suggest's in its merge: never sharded.
    let spec = ReplaySpec::of(&args.replay, sides, false)?;
    Ok((knobs, spec))
}

/// The refusals of the resolved sides, before the history is opened: a design-dialect
/// baseline for today's Armada ([`refuse_design_baseline`]), and `--executor-config` or
/// `--keep-categorizer` with the design engine (they are for today's Armada).
pub(super) fn refuse_sides(args: &SuggestArgs, sides: &Sides) -> Result<(), CliError> {
    refuse_design_baseline(sides)?;
    if let (Some(path), EngineKind::Design) = (&args.executor_config, sides.engine) {
        return Err(CliError::usage(format!(
            "`--executor-config {}`: a proposal for the design engine has no executor config of its own; it is written for today's Armada (`--engine upstream`)",
            path.display()
        )));
    }
    if let (true, EngineKind::Design) = (args.keep_categorizer, sides.engine) {
        return Err(CliError::usage(
            "`--keep-categorizer`: a proposal for the design engine changes no executor config; it is for today's Armada (`--engine upstream`)",
        ));
    }
    Ok(())
}

/// A baseline in the design dialect for a proposal for today's Armada (docs/suggest.md "On
/// today's Armada"): `--engine upstream`, or without `--engine` the deployed categorizer an
/// executor's config (`application.errorCategories`: only today's Armada runs one) beside
/// `armadaproject.io/v1` policies, which is what `get -o yaml` of today's Armada wrote before
/// it wrote v1beta1 by default. Today's Armada stores none of those: refused (exit 2, as a
/// rule the proposal cannot keep is) naming the file and the `get` that writes it right,
/// before it could end in a rule the proposal cannot keep or a proposal in the wrong
/// dialect.
fn refuse_design_baseline(sides: &Sides) -> Result<(), CliError> {
    let executor = sides.baseline.categorizer.as_ref().filter(|c| {
        crate::model::categorizer::shape_of(&c.file.document.node) == Some(crate::model::categorizer::Shape::Executor)
    });
    let why = match (sides.spec.sides.engine, executor) {
        (Some(EngineKind::Upstream), _) => "`--engine upstream`".to_string(),
        (None, Some(c)) => format!("`{}` is an executor's config", crate::diag::shown(&c.file.name)),
        _ => return Ok(()),
    };
    let found = sides.baseline.files.iter().find_map(|f| {
        f.documents
            .iter()
            .find(|d| {
                d.kind == Some(crate::model::Kind::RetryPolicy) && d.api_version == Some(crate::model::ApiVersion::V1)
            })
            .map(|d| (f, d))
    });
    let Some((file, doc)) = found else {
        return Ok(());
    };
    // The `--baseline` path as typed that holds the file (`current/`), else the file.
    let given = sides
        .spec
        .sides
        .baseline
        .iter()
        .find(|p| std::path::Path::new(&file.name).starts_with(p))
        .map_or_else(|| file.name.clone(), |p| p.display().to_string());
    let policy = format!(
        "policy `{}`",
        crate::diag::shown(doc.name.as_deref().unwrap_or_default())
    );
    let which = if given == file.name {
        policy
    } else {
        format!("{policy} in `{}`", crate::diag::shown(&file.name))
    };
    Err(CliError::usage(format!(
        "`{}` holds armadaproject.io/v1 documents ({which}), and the proposal is for today's Armada ({why}): today's Armada stores v1beta1: get them with `retryctl get retrypolicies -o yaml --api-version armadaproject.io/v1beta1`",
        crate::diag::shown(&given),
    ))
    .with_hint(format!(
        "write `{}` again from the cluster with `--api-version armadaproject.io/v1beta1` (`get retrypolicies` and `get queues`), or propose in the design dialect with `--engine design`",
        crate::diag::shown(&given)
    )))
}

/// `--executor-config FILE` is written at the end, over FILE: a FILE this run reads (the
/// deployed config of `--categorizer`, a `--baseline` file or one in a `--baseline`
/// directory, whose categorizer document is the deployed config too, the history, the
/// scheduler's config) or writes (`--output-file`) is refused, exit 2, before anything is read,
/// naming both flags. Paths are compared canonical (a link, `./`, `..`); a directory holds
/// every file under it, even one not there yet (the next run would read it).
pub(super) fn check_executor_config(args: &SuggestArgs) -> Result<(), CliError> {
    let Some(exec) = &args.executor_config else {
        return Ok(());
    };
    let Some(target) = canonical(exec) else {
        return Ok(());
    };
    let r = &args.replay;
    let inputs = std::iter::empty()
        .chain(args.categorizer.iter().map(|p| ("--categorizer", p)))
        .chain(r.baseline.iter().map(|p| ("--baseline", p)))
        .chain(r.history.iter().map(|p| ("--history", p)))
        .chain(r.scheduler.scheduler_config.iter().map(|p| ("--scheduler-config", p)))
        .chain(args.output_file.iter().map(|p| ("--output-file", p)));
    for (flag, path) in inputs {
        if path.as_os_str() == "-" {
            continue;
        }
        let Some(input) = canonical(path) else { continue };
        let (exec, path) = (exec.display(), path.display());
        if input == target {
            let what = match flag {
                "--output-file" => "the two outputs would be written over each other",
                _ => "the proposed config would be written over an input of this run",
            };
            return Err(CliError::usage(format!(
                "`--executor-config {exec}` is also `{flag} {path}`: {what}; give another file"
            )));
        }
        if input.is_dir() && target.starts_with(&input) {
            return Err(CliError::usage(format!(
                "`--executor-config {exec}` lies in `{flag} {path}`, a directory this run reads: the proposed config would be written among its files; give a file outside it"
            )));
        }
    }
    Ok(())
}

/// `path` with every link, `.` and `..` resolved; for a file not there yet, its directory's.
/// `None` when neither is there.
fn canonical(path: &std::path::Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(path) {
        return Some(c);
    }
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    std::fs::canonicalize(dir).ok().map(|d| d.join(name))
}

/// `--queue` names the Queue `-o policy` writes: there it must be a name `validate` takes
/// for one (docs/reference/suggest.md "Exit status"); the other outputs write no Queue.
pub(super) fn check_queue(queue: Option<&str>, output: SuggestOutput) -> Result<(), CliError> {
    let Some(q) = queue.filter(|_| output == SuggestOutput::Policy) else {
        return Ok(());
    };
    match name_reason(q) {
        Some(why) => Err(CliError::usage(format!(
            "invalid `--queue` `{q}`: the Queue `-o policy` writes cannot have this name: {why}"
        ))),
        None => Ok(()),
    }
}

/// A sharded suggest (`--shard`, `-o partial`, `--emit`): its shards learn, and its merge
/// proposes and then compares over the whole history, which it reads again
/// (docs/past-one-machine.md). A source the merge cannot read again is refused, as is a
/// shard that would print anything but its learning.
fn check_sharded(args: &SuggestArgs) -> Result<(), CliError> {
    let r = &args.replay;
    let partial = args.output == SuggestOutput::Partial;
    // With `--emit`, deploy's own words: the documents run every shard themselves.
    if let (Some(shard), false, None) = (r.shard, partial, args.emit.emit) {
        return Err(CliError::usage(format!(
            "`suggest --shard {shard}` writes what the shard learned: give `-o partial`, then `retryctl merge` the shards' partials"
        )));
    }
    let sharded = partial || args.emit.emit.is_some();
    if !sharded {
        return Ok(());
    }
    let how = match (args.emit.emit, r.shard) {
        (Some(_), _) => "`--emit`",
        (None, Some(_)) => "`--shard`",
        (None, None) => "`-o partial`",
    };
    if let Some(h) = r.history.as_ref().filter(|h| is_stream(h)) {
        let once = if h.as_os_str() == "-" {
            "stdin is read once".to_string()
        } else {
            format!("`{}` is not a regular file: it is read once", h.display())
        };
        return Err(CliError::usage(format!(
            "`suggest` with {how} cannot read `--history {}`: its merge reads the history again to compare the proposal, and {once}",
            h.display()
        ))
        .with_hint("write the history to a file first (`retryctl history … --output-file FILE` exports one), then give `--history FILE`"));
    }
    if r.lookout_db.is_some() {
        return Err(CliError::usage(format!(
            "`suggest` with {how} cannot read `--lookout-db`: its merge reads the history again to compare the proposal, and it reads files only (a partial never holds the DSN)"
        ))
        .with_hint("export the jobs to a file first (`retryctl history --lookout-db DSN --queue Q --from … --to … --output-file FILE`), then give `--history FILE`"));
    }
    Ok(())
}

/// The knobs, each in its range (a usage error otherwise: exit 2, nothing on stdout).
pub(super) fn check_knobs(
    min_trials: u64,
    futile: f64,
    max_limit: u32,
    extrapolate: bool,
    name: &str,
) -> Result<Knobs, CliError> {
    if !(futile > 0.0 && futile < 1.0) {
        return Err(CliError::usage(format!(
            "invalid `--futile` `{futile}`: expected a share strictly between 0 and 1, such as `0.05`"
        )));
    }
    if min_trials < 1 {
        return Err(CliError::usage("invalid `--min-trials` `0`: expected 1 or more"));
    }
    if !(1..=MAX_LIMIT).contains(&max_limit) {
        return Err(CliError::usage(format!(
            "invalid `--max-limit` `{max_limit}`: expected 1 to {MAX_LIMIT}"
        )));
    }
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !name_ok {
        return Err(CliError::usage(format!(
            "invalid `--name` `{name}`: expected a policy name (lowercase letters, digits and `-`, at most 63, starting and ending with a letter or digit)"
        )));
    }
    Ok(Knobs {
        min_trials,
        futile,
        max_limit,
        extrapolate,
    })
}
