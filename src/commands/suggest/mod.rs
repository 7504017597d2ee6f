//! `retryctl suggest`: a retry policy learned from the cluster's own failures
//! (docs/reference/suggest.md).
//!
//! Load (the baseline side and the deployed categorizer, `commands::replay::sides`; the
//! history's source, `commands::replay::source`) → learn ([`learn`]: pass 1, every job's
//! failed runs counted and the baseline replayed, `suggest::learn`'s fold) → propose
//! (`suggest::propose`, and [`proposal`]: today's policy edited, as documents read back
//! through `validate`'s reader) → compare ([`compare`]: pass 2, the what-if of `simulate
//! --baseline` with the proposal as the candidate, its rules checked on the candidate's own
//! decision records; the verdict) → `output::suggest`, with the commands to run next
//! ([`next`]). Must not: match rules, decide runs or format output itself.
//!
//! Sharded (docs/past-one-machine.md): a shard (`--shard I/N -o partial`) runs pass 1 over
//! its share and writes its learning; `merge` folds the shards ([`SuggestFold`]) and calls
//! [`merge`], which loads the inputs again through the same `load` and ends through the same
//! `conclude` as one process: no second copy of the proposal, pass 2 or rendering.
//!
//! Decisions the docs leave open:
//! - every source is read once: pass 1 copies its jobs, packed, with what it could not read
//!   (`replay::source::copy`), and pass 2 replays the copy, saying and counting what could not
//!   be read as `simulate` does (a file changed meanwhile changes nothing);
//! - with `--backtest-at`, `proposal.comparison` is the proposal's effect on the whole
//!   history (as `simulate` would print it), and `backtest` the jobs at or after the time;
//! - `-o policy` replays the proposal too, for its verdict, and prints only the documents;
//! - `--queue` selects the queue's jobs from any source (docs/simulate.md "Inputs") and names
//!   the Queue `-o policy` prints: the baseline's Queue of that name with the proposal first
//!   in its list, else a new one;
//! - a shard lists no entry that cannot be read: the merge's pass 2 says it (one process
//!   says it in pass 2 too); a later shard's entries are its signatures past its
//!   first 10,000, written as pass 1 goes; `--shard` without `-o partial` is a usage error.

use std::path::PathBuf;

use crate::app::Context;
use crate::cli::{ExecutorConfigFormat, SuggestArgs, SuggestOutput, WindowArgs};
use crate::commands::replay::checks::{backtest_refusal, said_of_the_shards, shards_backtest_refusal};
use crate::commands::replay::sides::{self, resolve, CandidateFrom, ReplaySpec, Sides, SidesSpec};
use crate::commands::replay::source::{self, check_flags, check_source, About, Open};
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::{CliError, ExitCode};
use crate::model::validate::name_reason;
use crate::output::mode::Baseline;
use crate::output::records::render_change;
use crate::output::stderr::invalid_text;
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::run::NoAnswer;
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Tap;
use crate::replay::source::{is_stream, HistorySource};
use crate::suggest::propose::{Knobs, MAX_LIMIT};

mod compare;
mod conclude;
mod incidents;
mod learn;
mod next;
mod proposal;
mod run;
pub mod shards;
pub use run::SuggestRun;

use learn::learn;

pub fn run(ctx: &mut Context, args: &SuggestArgs) -> anyhow::Result<ExitCode> {
    let (knobs, spec) = check(args)?;
    check_executor_config(args)?;
    let Some(sides) = resolve(ctx, spec)? else {
        return Ok(ExitCode::InvalidInput);
    };
    refuse_design_baseline(&sides)?;
    if let (Some(path), EngineKind::Design) = (&args.executor_config, sides.engine) {
        return Err(CliError::usage(format!(
            "`--executor-config {}`: a proposal for the design engine has no executor config of its own; it is written for today's Armada (`--engine upstream`)",
            path.display()
        ))
        .into());
    }
    if let (true, EngineKind::Design) = (args.keep_categorizer, sides.engine) {
        return Err(CliError::usage(
            "`--keep-categorizer`: a proposal for the design engine changes no executor config; it is for today's Armada (`--engine upstream`)",
        )
        .into());
    }
    let replay_args = &args.replay;
    let suggest = Suggest {
        run: SuggestRun::new(args, knobs, &sides.spec),
        knobs,
        output: args.output,
        shard: replay_args.shard,
        history: match (&replay_args.history, &replay_args.lookout_db) {
            (Some(h), _) => History::File(h.clone()),
            (None, _) => History::Lookout(replay_args.window.clone()),
        },
        sides,
        merged: false,
        allow_empty: false,
        executor_config: args.executor_config.clone().map(|p| (p, args.executor_config_format)),
    };
    let open = Open {
        replay: replay_args,
        partial: args.output == SuggestOutput::Partial,
        strict: false,
        nothing: NOTHING,
    };
    let Some(opened) = source::open(ctx, &suggest.sides, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
    let suggest = Suggest {
        allow_empty: opened.empty,
        ..suggest
    };
    let done = suggest.drive(ctx, opened.source, opened.baseline, opened.from, opened.about)?;
    let end = match done.every_queue {
        true => opened.end.learned_only(),
        false => opened.end,
    };
    end.finish(ctx, done.code)
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

/// `--executor-config FILE` is written at the end, over FILE: a FILE this run reads (the
/// deployed config of `--categorizer`, a `--baseline` file or one in a `--baseline`
/// directory, whose categorizer document is the deployed config too, the history, the
/// scheduler's config) or writes (`--output-file`) is refused, exit 2, before anything is read,
/// naming both flags. Paths are compared canonical (a link, `./`, `..`); a directory holds
/// every file under it, even one not there yet (the next run would read it).
fn check_executor_config(args: &SuggestArgs) -> Result<(), CliError> {
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
fn check_queue(queue: Option<&str>, output: SuggestOutput) -> Result<(), CliError> {
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
fn check_knobs(min_trials: u64, futile: f64, max_limit: u32, extrapolate: bool, name: &str) -> Result<Knobs, CliError> {
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

/// Where the history comes from, as the commands suggest prints name it.
pub(super) enum History {
    /// `--history PATH` (a merge's: the shards' file).
    File(PathBuf),
    /// `--lookout-db`, with its window.
    Lookout(WindowArgs),
}

impl History {
    /// As an error or a verdict names it: `` `PATH` ``, stdin, or Lookout's window.
    fn named(&self) -> String {
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

pub(super) struct Suggest {
    /// What a shard records of the command line, and a merge reads back.
    run: SuggestRun,
    knobs: Knobs,
    output: SuggestOutput,
    history: History,
    /// `--shard`: a shard's learning, written for `merge`.
    shard: Option<Shard>,
    /// The proposal's side (its engine, why it decides) and the baseline's: its policies, its
    /// engine, its categorizer, the deployed config (the upstream proposal keeps its
    /// categories).
    sides: Sides,
    /// A sharded suggest's merge: its refusals of `--backtest-at` name the shards' flag.
    merged: bool,
    /// `--allow-empty` and a history with no job: the answer of no job, exit 0 (nothing
    /// learned, nothing proposed, the verdict `keep`), in every format.
    allow_empty: bool,
    /// `--executor-config FILE` and its shape: the proposed executor config alone, written
    /// once the output is.
    executor_config: Option<(PathBuf, ExecutorConfigFormat)>,
}

impl Suggest {
    /// Pass 1 over `source`, then the rest (`Suggest::conclude`); with `-o partial`, pass 1
    /// alone, written for `merge`.
    fn drive<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: Option<Simulator>,
        from: Baseline,
        about: About,
    ) -> anyhow::Result<Concluded> {
        // Every baseline of suggest is known when the source opens: files, the cluster's, or
        // no policy.
        let Some(baseline) = baseline else {
            unreachable!("suggest's baseline is files, the cluster's, or no policy")
        };
        if self.output == SuggestOutput::Partial {
            let code = self.write_partial(ctx, source, &baseline, about)?;
            return Ok(Concluded {
                code,
                every_queue: false,
            });
        }
        // Every source is read once: pass 2 replays pass 1's copy.
        let pass = learn(
            ctx.style,
            source,
            &baseline,
            self.sides.spec.backtest_time(),
            self.sides.spec.look(),
            None,
        )?;
        self.conclude(ctx, &baseline, from, pass)
    }
}

/// The end of the error for an empty history (docs/cli.md, exit codes).
const NOTHING: &str = "nothing to learn from";

impl Suggest {
    /// `-o partial`: the shard's learning (pass 1 over its share), for `merge`, which
    /// proposes and compares. Exit 0 once it is written: the answer is the merge's.
    fn write_partial<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: &Simulator,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let shard = self.shard.unwrap_or(Shard::WHOLE);
        let inputs = self.inputs(baseline, shard.count, &about.source);
        let header = Header::new(shard, fingerprint(&inputs), serde_json::to_value(&self.run)?);
        // What pass 1 could not read is said by the merge's pass 2, which reads it again
        // (as one process says it): the partial counts it. Its entries are a later shard's
        // signatures past its first 10,000, written as pass 1 goes.
        let mut rec = Recorder::new(&mut *ctx.out, &header, invalid_text, render_change)?;
        let (source, noted) = Tap::new(source);
        let partial = Some((shard, &mut rec));
        let pass = learn(
            ctx.style,
            source,
            baseline,
            self.sides.spec.backtest_time(),
            self.sides.spec.look(),
            partial,
        )?;
        rec.job_ids(noted.take());
        rec.end(about.digest.get(), pass.learning.into_shard(), None)?;
        Ok(ExitCode::Success)
    }

    /// What a partial's fingerprint holds: every input that changes the answer (the run's
    /// flags, the baseline's documents and categorizer, the deployed categorizer's config,
    /// the source and its settings, N). The merge computes it again from what it loads.
    fn inputs(&self, baseline: &Simulator, shards: u64, source: &serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "run": self.run,
            "shards": shards,
            "baseline": baseline.fingerprint(),
            "deployed": self.deployed().map(|d| format!("{:?}", d.file.config)),
            "source": source,
        })
    }

    /// The deployed categorizer: `--categorizer`'s, or the one among the baseline's files.
    fn deployed(&self) -> Option<&sides::Categorizer> {
        self.sides.baseline.categorizer.as_ref()
    }

    /// A refusal of `--backtest-at` after pass 1: one process's; a merge's in the same words
    /// said of the shards' flag (merge itself was given none), with what to do: `again`.
    fn refused(&self, one: CliError, again: &str) -> anyhow::Error {
        if self.merged {
            said_of_the_shards(one, again)
        } else {
            one
        }
        .into()
    }

    /// `--backtest-at` without an answer from pass 1's counts, as `simulate` (or, merged,
    /// `merge`) says it.
    fn backtest_refused(&self, e: &NoAnswer, at: &str) -> anyhow::Error {
        if self.merged {
            shards_backtest_refusal(e, at)
        } else {
            backtest_refusal(e, at)
        }
        .into()
    }
}
