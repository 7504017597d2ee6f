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

use std::io::{self, Write};
use std::sync::Arc;

use crate::app::Context;
use crate::cli::{SuggestArgs, SuggestOutput};
use crate::commands::replay::checks::{
    backtest_refusal, parse_backtest_at, said_of_the_shards, shards_backtest_refusal,
};
use crate::commands::replay::policy_set::{PolicyFlags, Side};
use crate::commands::replay::sides::{self, engine_of, read_side, Baseline as Sides, Dialect, Named, SideFiles};
use crate::commands::replay::source::{self, check_flags, check_source, About, Open};
use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::{CliError, ExitCode};
use crate::model::failure_history::Timestamp;
use crate::model::validate::name_reason;
use crate::output::mode::Baseline;
use crate::output::records::render_change;
use crate::output::stderr::invalid_text;
use crate::output::suggest::{self as view, EngineFrom, Report};
use crate::output::Format;
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::run::NoAnswer;
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Tap;
use crate::replay::source::{is_stream, HistorySource};
use crate::suggest::check::RuleCheck;
use crate::suggest::documents;
use crate::suggest::nodes::suspects;
use crate::suggest::propose::{propose, Knobs, MAX_LIMIT};
use crate::suggest::verdict::Decision;

mod compare;
mod learn;
mod next;
mod proposal;
mod shards;
pub use shards::{merge, Shards, SuggestFold, SuggestRun, Unmergeable};

use compare::{judge_proposal, Pass2, Read};
use learn::{learn, Pass1};

pub fn run(ctx: &mut Context, args: &SuggestArgs) -> anyhow::Result<ExitCode> {
    let knobs = check(args)?;
    let replay_args = &args.replay;
    let flags = PolicyFlags::new(false, replay_args);
    let Some((suggest, baseline)) = load(ctx, args, knobs)? else {
        return Ok(ExitCode::InvalidInput);
    };
    let open = Open {
        flags,
        baseline,
        partial: args.output == SuggestOutput::Partial,
        strict: false,
        nothing: NOTHING,
    };
    let Some(opened) = source::open(ctx, replay_args, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
    if opened.empty {
        // `--allow-empty`: nothing learned, nothing proposed: exit 0 with nothing printed.
        return Ok(ExitCode::Success);
    }
    let code = suggest.drive(ctx, opened.source, opened.baseline, opened.from, opened.about)?;
    opened.end.finish(ctx, code)
}

/// The checks of suggest's flags before anything is read (`--emit` makes them too, in the
/// same words): the knobs, what a sharded suggest cannot read, the source's flags, the time.
pub fn check(args: &SuggestArgs) -> Result<Knobs, CliError> {
    let knobs = check_knobs(args)?;
    check_queue(args)?;
    check_sharded(args)?;
    check_flags(&args.replay, &[])?;
    check_source(&args.replay, args.emit.emit.is_none())?;
    args.replay.backtest_at.as_deref().map(parse_backtest_at).transpose()?;
    Ok(knobs)
}

/// `--queue` names the Queue `-o policy` writes: there it must be a name `validate` takes
/// for one (docs/reference/suggest.md "Exit status"); the other outputs write no Queue.
fn check_queue(args: &SuggestArgs) -> Result<(), CliError> {
    let Some(q) = args
        .replay
        .queue
        .as_deref()
        .filter(|_| args.output == SuggestOutput::Policy)
    else {
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

/// What every pass reads, loaded as one process loads it (a sharded suggest's merge loads it
/// again, from the shards' run, through this same function): the baseline side (its files,
/// `None` when invalid: the report written, exit 3; the engine their dialect picks; the
/// deployed categorizer, read once).
fn load<'a>(ctx: &mut Context, args: &'a SuggestArgs, knobs: Knobs) -> anyhow::Result<Option<(Suggest<'a>, Sides)>> {
    let replay_args = &args.replay;
    let backtest_at = args.replay.backtest_at.as_deref().map(parse_backtest_at).transpose()?;
    let flags = PolicyFlags::new(false, replay_args);
    let baseline_files = match replay_args.baseline.is_empty() {
        true => None,
        false => match read_side(ctx, &replay_args.baseline, false, Side::Baseline, "simulated")? {
            Some(f) => Some(f),
            None => return Ok(None),
        },
    };
    // The proposal takes its baseline's dialect (docs/engines.md "Which engine decides"):
    // the files', the cluster's (upstream's server stores today's Armada's policies), else
    // the design's.
    let (engine, engine_from) = match (args.replay.engine, &baseline_files, replay_args.baseline_from_cluster) {
        (Some(e), _, _) => (EngineKind::from(e), EngineFrom::Flag),
        (None, Some(b), _) => {
            let dialect = Dialect::of(&b.files);
            (engine_of(&[dialect]), EngineFrom::Baseline(dialect.words()))
        }
        (None, None, true) => (EngineKind::Upstream, EngineFrom::Cluster),
        (None, None, false) => (EngineKind::Design, EngineFrom::NoBaseline),
    };
    let baseline_engine = args.replay.baseline_engine.map_or(engine, EngineKind::from);
    // `--categorizer` is the deployed config: the baseline's, and the base of the proposal's.
    let (baseline_files, in_files) = match baseline_files {
        Some(SideFiles { files, categorizer }) => (Some(files), categorizer),
        None => (None, None),
    };
    let deployed = Named::new(Side::Baseline, "--categorizer", args.categorizer.as_deref(), in_files)?.read(ctx)?;
    let baseline = Sides::of(
        replay_args,
        baseline_files.as_deref(),
        flags,
        baseline_engine,
        sides::compiled(deployed.as_ref()),
    )?;
    let suggest = Suggest {
        args,
        knobs,
        engine,
        engine_from,
        baseline_engine,
        backtest_at,
        deployed,
        categorizer: baseline.categorizer.clone(),
        merged: false,
    };
    Ok(Some((suggest, baseline)))
}

/// The knobs, each in its range (a usage error otherwise: exit 2, nothing on stdout).
fn check_knobs(args: &SuggestArgs) -> Result<Knobs, CliError> {
    if !(args.futile > 0.0 && args.futile < 1.0) {
        return Err(CliError::usage(format!(
            "invalid `--futile` `{}`: expected a share strictly between 0 and 1, such as `0.05`",
            args.futile
        )));
    }
    if args.min_trials < 1 {
        return Err(CliError::usage("invalid `--min-trials` `0`: expected 1 or more"));
    }
    if !(1..=MAX_LIMIT).contains(&args.max_limit) {
        return Err(CliError::usage(format!(
            "invalid `--max-limit` `{}`: expected 1 to {MAX_LIMIT}",
            args.max_limit
        )));
    }
    let name_ok = !args.name.is_empty()
        && args.name.len() <= 63
        && args
            .name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !args.name.starts_with('-')
        && !args.name.ends_with('-');
    if !name_ok {
        return Err(CliError::usage(format!(
            "invalid `--name` `{}`: expected a policy name (lowercase letters, digits and `-`, at most 63, starting and ending with a letter or digit)",
            args.name
        )));
    }
    Ok(Knobs {
        min_trials: args.min_trials,
        futile: args.futile,
        max_limit: args.max_limit,
        extrapolate: args.extrapolate,
    })
}

pub(super) struct Suggest<'a> {
    args: &'a SuggestArgs,
    knobs: Knobs,
    engine: EngineKind,
    /// Why `engine` decides, for the table's first line.
    engine_from: EngineFrom,
    baseline_engine: EngineKind,
    backtest_at: Option<Timestamp>,
    /// `--categorizer`'s config (the upstream proposal keeps its categories) and compiled.
    deployed: Option<sides::Categorizer>,
    categorizer: Option<Arc<Classifier>>,
    /// A sharded suggest's merge: its refusals of `--backtest-at` name the shards' flag.
    merged: bool,
}

impl Suggest<'_> {
    /// Pass 1 over `source`, then the rest (`Suggest::conclude`); with `-o partial`, pass 1
    /// alone, written for `merge`.
    fn drive<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: Option<Simulator>,
        from: Baseline,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let baseline = self.baseline(baseline)?;
        if self.args.output == SuggestOutput::Partial {
            return self.write_partial(ctx, source, &baseline, about);
        }
        // Every source is read once: pass 2 replays pass 1's copy.
        let pass = learn(ctx.style, source, &baseline, self.backtest_at, None)?;
        self.conclude(ctx, &baseline, from, pass)
    }
}

/// The end of the error for an empty history (docs/cli.md, exit codes).
const NOTHING: &str = "nothing to learn from";

impl Suggest<'_> {
    /// The baseline both passes replay: `--baseline`'s, its categorizer the deployed one
    /// (the source attached it), or none: no policy, the engine's default path, with the
    /// deployed categorizer.
    fn baseline(&self, given: Option<Simulator>) -> anyhow::Result<Simulator> {
        match given {
            Some(b) => Ok(b),
            None => Ok(Simulator::new(Vec::new(), Vec::new(), None)
                .map_err(CliError::invalid)?
                .with_engine(self.baseline_engine)
                .with_categorizer(self.categorizer.clone())),
        }
    }

    /// `-o partial`: the shard's learning (pass 1 over its share), for `merge`, which
    /// proposes and compares. Exit 0 once it is written: the answer is the merge's.
    fn write_partial<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: &Simulator,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let shard = self.args.replay.shard.unwrap_or(Shard::WHOLE);
        let run = SuggestRun::new(self.args, self.engine, self.baseline_engine);
        let inputs = self.inputs(&run, baseline, shard.count, &about.source);
        let header = Header::new(shard, fingerprint(&inputs), serde_json::to_value(&run)?);
        // What pass 1 could not read is said by the merge's pass 2, which reads it again
        // (as one process says it): the partial counts it. Its entries are a later shard's
        // signatures past its first 10,000, written as pass 1 goes.
        let mut rec = Recorder::new(&mut *ctx.out, &header, invalid_text, render_change)?;
        let (source, noted) = Tap::new(source);
        let partial = Some((shard, &mut rec));
        let pass = learn(ctx.style, source, baseline, self.backtest_at, partial)?;
        rec.job_ids(noted.take());
        rec.end(about.digest.get(), pass.learning.into_shard(), None)?;
        Ok(ExitCode::Success)
    }

    /// What a partial's fingerprint holds: every input that changes the answer (the run's
    /// flags, the baseline's documents and categorizer, the deployed categorizer's config,
    /// the source and its settings, N). The merge computes it again from what it loads.
    fn inputs(
        &self,
        run: &SuggestRun,
        baseline: &Simulator,
        shards: u64,
        source: &serde_json::Value,
    ) -> serde_json::Value {
        serde_json::json!({
            "run": run,
            "shards": shards,
            "baseline": baseline.fingerprint(),
            "deployed": self.deployed.as_ref().map(|d| format!("{:?}", d.file.config)),
            "source": source,
        })
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

    /// After pass 1, the same for one process and for a sharded suggest's merge: the
    /// refusals pass 1's counts call for, the proposal, its documents, pass 2 (the
    /// comparison, over the history read again or its spooled copy) and the output.
    fn conclude(
        &self,
        ctx: &mut Context,
        baseline: &Simulator,
        from: Baseline,
        mut pass: Pass1,
    ) -> anyhow::Result<ExitCode> {
        let args = self.args;
        let estimates_backtest = self.after_pass1(ctx, &mut pass)?;
        let learned = &pass.learning.learned;
        let sorted = learned.sorted();
        // The rules (owned: the counts are given the baseline's decisions after pass 2).
        let kept = self.kept(baseline, learned)?;
        let (verdicts, rules) = propose(&sorted, &self.knobs, self.engine, self.room(&kept));
        let proposal = self.documents(baseline, learned, &rules, kept)?;
        if self.deployed.is_none() && proposal.upstream.as_ref().is_some_and(|u| !u.categories.is_empty()) {
            writeln!(ctx.err, "note: {}", documents::NOT_COMPLETE)?;
        }
        let histories = self.histories(&pass)?;
        // `-o policy` replays the proposal too, for its verdict, and prints none of it.
        let policy = args.output == SuggestOutput::Policy;
        let mut discard = io::sink();
        let out: &mut dyn Write = if policy { &mut discard } else { &mut *ctx.out };
        let format = Format::from(args.output);
        let mut doc = view::Doc::new(format, ctx.style);
        // The policy's `retryLimit` as `-o policy` writes it, said alike in every format.
        let policy_retry_limit = match &proposal.upstream {
            Some(u) => Some(u.written_retry_limit),
            None => self.settings(baseline).retry_limit,
        };
        doc.proposal_head(
            &mut *out,
            &view::Head {
                engine: self.engine,
                name: &args.name,
                rules: &rules,
                kept: &proposal.kept,
                upstream: proposal.upstream.as_ref(),
                policy_retry_limit,
            },
        )?;
        // Pass 2: the proposal against the baseline on the whole history; the baseline's
        // decisions (of the train jobs) and the proposal's rules checked on the way.
        let check = RuleCheck::new(
            &rules,
            proposal.upstream.as_ref().map(|u| &u.rule_index[..]),
            &args.name,
            learned,
        );
        let side = Pass2 {
            baseline,
            proposal: &proposal.sim,
            format,
        };
        let whole_cmp = self.compare(
            (&mut *ctx.err, ctx.style),
            &mut doc,
            &mut *out,
            &side,
            self.open(&histories, &pass, Read::Whole)?,
            Some(&check),
        )?;
        let suspects = suspects(learned);
        let report = Report {
            engine: self.engine,
            engine_from: self.engine_from,
            name: &args.name,
            knobs: self.knobs,
            jobs: pass.learning.train_jobs,
            failed_runs: learned.failed_runs,
            signatures: &verdicts,
            rules: &rules,
            kept: &proposal.kept,
            upstream: proposal.upstream.as_ref(),
            policy_retry_limit,
            documents: &proposal.text,
            suspects: &suspects,
            baseline_from: from,
            commands: self.commands(&rules, &proposal),
            backtest: self.backtest_at.map(|_| view::BacktestHead {
                at: args.replay.backtest_at.clone().unwrap_or_default(),
                train_jobs: pass.learning.train_jobs,
                test_jobs: pass.learning.test_jobs,
            }),
        };
        doc.after_comparison(&mut *out, &report, &check.shadowed())?;
        let backtest = match &report.backtest {
            Some(_) => {
                doc.backtest_head(&mut *out, &report)?;
                let test = self.open(&histories, &pass, Read::Test)?;
                let test_cmp = self.compare((&mut *ctx.err, ctx.style), &mut doc, &mut *out, &side, test, None)?;
                let again = self.open(&histories, &pass, Read::Test)?;
                let tail = view::backtest_tail(
                    &test_cmp,
                    self.pending_gpu_hours(ctx.style, &side, again)?,
                    estimates_backtest.as_ref(),
                );
                doc.backtest_tail(&mut *out, &tail)?;
                Some((test_cmp, tail))
            }
            _ => None,
        };
        let judgement = judge_proposal(&whole_cmp, backtest.as_ref());
        if policy {
            // The reasons name jobs, whose ids are the history's text: escaped, on stderr as
            // everywhere, and in the comment so that no id ends it and adds a key.
            let line = judgement.line();
            writeln!(ctx.err, "verdict: {}", crate::output::text::shown(&line))?;
            writeln!(ctx.out, "# verdict: {}", documents::comment(&line))?;
            ctx.out.write_all(proposal.text.as_bytes())?;
        } else {
            doc.finish(&mut *out, &report, &whole_cmp, backtest.as_ref(), &judgement)?;
        }
        Ok(if args.exit_code && judgement.decision == Decision::Adopt {
            ExitCode::Failure
        } else {
            ExitCode::Success
        })
    }
}
