//! `retryctl simulate`: replay failure histories through the embedded evaluator (docs/simulate.md).
//!
//! Load (the sides, `commands::replay::sides::resolve`: policies from `-f` or the server,
//! baseline policies from files or the cluster's database, the categorizers, the scheduler
//! config; the history's source) → pick
//! the sink of the output format (`output::sinks::sink`) → `replay::run::{replay,
//! compare}`, which drives the whole path into it → the exit status, read off the totals
//! the replay returns. Must not: print with `println!`, exit, read histories itself (that
//! is `replay::source`), count (that is `replay`) or format records (that is `output`).
//!
//! Decisions docs/simulate.md leaves open:
//! - a single YAML/JSON history file prints one table per job; a JSON Lines file, a
//!   directory or JSON Lines on stdin is "bulk": the table format prints only the summary;
//!   `-o json|yaml|jsonl` stream every job in every mode.
//! - `-o json` is always `{"jobs": [...], "summary": {...}}` and `-o yaml` the same shape;
//!   `-o jsonl` writes one job per line and the summary to stderr.
//! - `--baseline`: `-o json` is `{"comparison": {"changedJobs": [...], "jobs", "changed",
//!   "transitions", "retries", "delay", "compute", "errors", "estimate"}}` (streamed: the
//!   per-job records are left out, they would double the output); `-o jsonl` writes one
//!   changed job per line and the totals to stderr; the table lists the first 20 changed
//!   jobs of each transition unless `--all-changes`; `--retry-policy` applies to both sides.
//! - `-o html` and `-o markdown` are reports of the whole replay, written at the end.
//! - a bad JSON line or a job naming a missing policy is reported (with its line number)
//!   and skipped; the other jobs still run and the exit status is 3.
//! - a closed stdout (`simulate … | head`) stops the replay quietly with the status so far.
//! - `--lookout-db DSN --queue Q` (docs/serve.md) replaces `--history`: `history`'s filter and
//!   export (`lookout::export_source`) feed the replay directly. The rows it leaves out are
//!   reported on stderr in `history`'s words, in order with the replay's messages, and are
//!   not replay errors (exit 0, or 1 with `--strict`, as `history`); `history`'s summary
//!   follows the replay's output on stderr. A connection lost midway: what was replayed is
//!   printed, then the error (exit 4).
//! - `--baseline-from-cluster`: the baseline is the policies and attachments stored in the same
//!   database; a row that does not decode stops it before the replay (exit 3, as invalid
//!   `--baseline` files do), a queue the cluster lacks is exit 1, and the plan says where its
//!   baseline came from (`output::mode::Baseline`).
//! - `--categorizer FILE` (docs/categorizer.md) is read before the history: exactly one
//!   categorizer document, valid, else exit 3 naming the file and each problem's line, with
//!   nothing on stdout; its warnings (not enabled, unknown keys) go to stderr and the replay
//!   runs. `--baseline-categorizer` needs a baseline (a usage error otherwise); the baseline
//!   never borrows the candidate's (`commands::replay::sides`).

use std::io::Write;

use crate::app::Context;
use crate::cli::{SimulateArgs, SimulateOutput};
use crate::commands::replay::checks::{
    backtest_refusal, contention_in_one_process, not_replayed_code, said_after_replay,
};
use crate::commands::replay::held::Held;
use crate::commands::replay::sides::{resolve, CandidateFrom, ReplaySpec, Sides, SidesSpec};
use crate::commands::replay::source::{self, check_flags, check_source, About, Open};
use crate::engine::simulator::Simulator;
use crate::error::{CliError, ExitCode};
use crate::output::mode::{Baseline, Mode};
use crate::output::progress::progress_bar;
use crate::output::records::render_change;
use crate::output::sinks::sink;
use crate::output::stderr::{invalid_text, Stderr};
use crate::output::Format;
use crate::replay::compare::Comparison;
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::policy_sets::{OneCandidate, PolicySets};
use crate::replay::recorded::Recorded;
use crate::replay::run::{compare, replay, NoAnswer, Options, Out};
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Tap;
use crate::replay::source::HistorySource;
use crate::replay::summary::Summary;

use serde::{Deserialize, Serialize};

pub mod shards;

pub fn run(ctx: &mut Context, args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let spec = check(args)?;
    if args.from_server && !args.source.files.is_empty() {
        return Err(CliError::usage(
            "`--from-server` reads the policies and queues from the server; do not also pass `-f`",
        )
        .into());
    }
    if args.source.files.is_empty() && !args.from_server {
        writeln!(
            ctx.err,
            "{}: no -f given: no retry policy applies, every job follows the legacy behaviour (a failed run is final)",
            ctx.style.warning("warning")
        )?;
    }
    let Some(sides) = resolve(ctx, spec)? else {
        return Ok(ExitCode::InvalidInput);
    };
    if !args.source.files.is_empty() && !sides.candidate().has_policies {
        writeln!(
            ctx.err,
            "{}: `-f` holds no retry policy: every job follows the legacy behaviour (a failed run is final)",
            ctx.style.warning("warning")
        )?;
    }
    let open = Open {
        replay: &args.replay,
        partial: args.output == SimulateOutput::Partial,
        strict: args.strict,
        nothing: "nothing to compare",
    };
    let Some(opened) = source::open(ctx, &sides, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
    let sim = sides
        .candidate()
        .sim
        .as_ref()
        .expect("simulate's candidate is files or the server's");
    let code = drive(
        ctx,
        args,
        &sides,
        sim,
        opened.source,
        // The baseline the source opened (the cluster's, or `--baseline`'s) and the candidate.
        opened
            .baseline
            .and_then(|b| sides.policy_sets(Some(b), None))
            .and_then(PolicySets::one)
            .as_ref(),
        opened.from,
        opened.about,
        opened.empty,
    )?;
    opened.end.finish(ctx, code)
}

/// The checks of simulate's flags before anything is read (`--emit` makes them too, in the
/// same words), and its sides as they name them.
pub fn check(args: &SimulateArgs) -> Result<ReplaySpec, CliError> {
    check_flags(&args.replay, &args.source.files)?;
    check_source(&args.replay, args.emit.emit.is_none())?;
    let candidate = match args.from_server {
        true => CandidateFrom::Server,
        false => CandidateFrom::Files(args.source.files.clone()),
    };
    let sides = SidesSpec::of(
        &args.replay,
        candidate,
        args.source.recursive,
        args.categorizer.clone(),
        args.baseline_categorizer.clone(),
    );
    let (shard, emit) = (args.replay.shard.is_some(), args.emit.emit.is_some());
    let spec = ReplaySpec::of(&args.replay, sides, shard || emit)?;
    contention_in_one_process(spec.contention, shard, emit)?;
    Ok(spec)
}

/// The replay (or, with a baseline, the comparison) into the sink of `-o`; `empty`: a history
/// with no job, `--allow-empty` given. With
/// `--backtest-at` stdout is held back until the backtest has an answer: without one, the
/// usage error is all that is printed.
#[allow(clippy::too_many_arguments)]
fn drive<S: HistorySource>(
    ctx: &mut Context,
    args: &SimulateArgs,
    sides: &Sides,
    sim: &Simulator,
    source: S,
    sets: Option<&OneCandidate>,
    from: Baseline,
    about: About,
    empty: bool,
) -> anyhow::Result<ExitCode> {
    let options = Options {
        backtest_at: sides.spec.backtest_time(),
        shard: args.replay.shard,
        explain: sides.baseline.explains(),
        incidents: sides.spec.look().clone(),
        contention: sides.spec.contention,
        contention_sharded: sides.spec.contention_sharded,
    };
    // `--allow-empty` on a history with no job: the table is the summary of 0 jobs, whatever
    // the source (a YAML file or stdin would print one table per job: none).
    let run = SimulateRun::new(args, sides, sim, sets.is_some(), from, source.bulk() || empty);
    let Ok(format) = Format::try_from(args.output) else {
        return write_partial(ctx, &run, sim, source, sets, about, &options);
    };
    let mut held = options.backtest_at.map(|_| Held::default());
    let out: &mut dyn Write = match &mut held {
        Some(h) => h,
        None => &mut *ctx.out,
    };
    let stderr = Stderr::new(
        &mut *ctx.err,
        ctx.style,
        progress_bar(source.progress()),
        run.retry_policy,
    )
    .skipping(run.skip_invalid);
    let mut sink = sink(format, run.mode(), out, stderr);
    let (code, used_given, refused, (errors, recorded)) = if let Some(sets) = sets {
        let done = compare(source, sets, &options, Out::Sink(&mut *sink))?;
        (
            compare_code(&done.comparison, run.exit_code, run.strict, run.skip_invalid),
            done.used_given,
            done.refused,
            (done.comparison.errors, done.comparison.recorded),
        )
    } else {
        let done = replay(source, sim, &options, Out::Sink(&mut *sink))?;
        (
            replay_code(&done.summary, run.strict, run.skip_invalid),
            done.used_given,
            done.refused,
            (done.summary.errors, done.summary.recorded),
        )
    };
    drop(sink);
    conclude(ctx, &run, held, refused, used_given)?;
    said_after(ctx, &run, errors, &recorded)?;
    Ok(code)
}

/// What `merge` needs to print what `simulate` prints, besides the entries and totals: a
/// partial result's `run` (docs/past-one-machine.md). Every field changes the output, so the fingerprint
/// holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulateRun {
    /// Always `simulate`.
    pub command: String,
    /// What the replay flags said (the sides, `--queue`, `--backtest-at`, `--incidents`).
    pub spec: ReplaySpec,
    /// `--baseline` or `--baseline-from-cluster`: a comparison.
    pub compare: bool,
    pub baseline_from_cluster: bool,
    /// Many jobs (the table prints only the summary).
    pub bulk: bool,
    pub all_changes: bool,
    pub exit_code: bool,
    pub strict: bool,
    /// `--retry-policy` was given (the missing-queue message says so).
    pub retry_policy: bool,
    /// The policies a job gets when its queue is not among the documents.
    pub given: Vec<String>,
    /// `--skip-invalid`: entries not replayed are counted and said, and exit 0.
    #[serde(default)]
    pub skip_invalid: bool,
    /// What the replay assumed of the scheduler, said on stderr (`SchedulerSettings::assumed`): the
    /// merge says it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
}

impl SimulateRun {
    fn new(
        args: &SimulateArgs,
        sides: &Sides,
        sim: &Simulator,
        compare: bool,
        from: Baseline,
        bulk: bool,
    ) -> SimulateRun {
        SimulateRun {
            command: "simulate".into(),
            spec: sides.spec.clone(),
            compare,
            baseline_from_cluster: from == Baseline::Cluster,
            bulk,
            all_changes: args.all_changes,
            exit_code: args.exit_code,
            strict: args.strict,
            retry_policy: args.replay.scheduler.retry_policies.is_some(),
            given: sim.given().to_vec(),
            skip_invalid: args.replay.skip_invalid,
            scheduler: sides.settings.assumed(),
        }
    }

    /// What the sinks are given.
    pub fn mode(&self) -> Mode {
        if self.compare {
            Mode::Compare {
                all_changes: self.all_changes,
                baseline: if self.baseline_from_cluster {
                    Baseline::Cluster
                } else {
                    Baseline::Files
                },
            }
        } else {
            Mode::Replay { bulk: self.bulk }
        }
    }
}

/// `-o partial`: the shard's part, for `merge`. Exit 0 once it is written: the verdict
/// (failed expectations, entries not replayed) is the merge's, which has every shard.
fn write_partial<S: HistorySource>(
    ctx: &mut Context,
    run: &SimulateRun,
    sim: &Simulator,
    source: S,
    sets: Option<&OneCandidate>,
    about: About,
    options: &Options,
) -> anyhow::Result<ExitCode> {
    let shard = options.shard.unwrap_or(Shard::WHOLE);
    let inputs = serde_json::json!({
        "run": run,
        "shards": shard.count,
        "candidate": sim.fingerprint(),
        "baseline": sets.map(|s| s.baseline.fingerprint()),
        "source": about.source,
    });
    let header = Header::new(shard, fingerprint(&inputs), serde_json::to_value(run)?);
    let mut rec = Recorder::new(&mut *ctx.out, &header, invalid_text, render_change)?;
    rec.keep_steps(crate::output::html::ROWS_PER_GROUP);
    let (source, noted) = Tap::new(source);
    let totals = match sets {
        Some(sets) => compare(source, sets, options, Out::Partial(&mut rec))?.totals,
        None => replay(source, sim, options, Out::Partial(&mut rec))?.totals,
    };
    // A source cut short (a lost connection, said after this) leaves the partial without
    // its end: `merge` refuses it as truncated.
    if !about.interrupted() {
        rec.job_ids(noted.take());
        rec.end(about.digest.get(), totals, about.lookout())?;
    }
    Ok(ExitCode::Success)
}

/// What is said on stderr after the answer, whatever the format: the job ids that cannot
/// be part of a pod name, and `--skip-invalid`'s count.
pub fn said_after(ctx: &mut Context, run: &SimulateRun, errors: u64, recorded: &Recorded) -> anyhow::Result<()> {
    // The exit status is the verb's own (`replay_code`, `compare_code`).
    said_after_replay(&mut *ctx.err, ctx.style, recorded, errors, run.skip_invalid)?;
    Ok(())
}

/// A plain replay's exit status (docs/cli.md): entries not replayed 3 (unless
/// `--skip-invalid`), failed expectations (and
/// contradictions with `--strict`) 1.
pub fn replay_code(s: &Summary, strict: bool, skip_invalid: bool) -> ExitCode {
    if let Some(code) = not_replayed_code(s.errors, skip_invalid) {
        code
    } else if s.expectation_failed_jobs > 0 || (strict && s.contradicted_jobs > 0) {
        ExitCode::Failure
    } else {
        ExitCode::Success
    }
}

/// A comparison's exit status: entries not replayed 3 (unless `--skip-invalid`), a change
/// with `--exit-code` 1, and with `--strict` a job whose record contradicts the baseline 1
/// (as a plain replay's).
pub fn compare_code(c: &Comparison, exit_code: bool, strict: bool, skip_invalid: bool) -> ExitCode {
    let contradicted = c.explained.as_ref().is_some_and(|e| e.contradicted > 0);
    if let Some(code) = not_replayed_code(c.errors, skip_invalid) {
        code
    } else if (exit_code && c.changed > 0) || (strict && contradicted) {
        ExitCode::Failure
    } else {
        ExitCode::Success
    }
}

/// After the replay: `--backtest-at`'s refusal (nothing on stdout), else stdout released;
/// then whether `--retry-policy` was used at all.
pub fn conclude(
    ctx: &mut Context,
    run: &SimulateRun,
    held: Option<Held>,
    refused: Option<NoAnswer>,
    used_given: bool,
) -> anyhow::Result<()> {
    if let Some(refused) = refused {
        return Err(backtest_refusal(&refused, run.spec.backtest_text()).into());
    }
    if let Some(h) = held {
        h.release(&mut *ctx.out)?;
    }
    if run.retry_policy && !used_given {
        writeln!(ctx.err, "{}: --retry-policy was ignored: every job's queue is among the documents, and its queue's policies applied", ctx.style.warning("warning"))?;
    }
    Ok(())
}
