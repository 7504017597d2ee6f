//! `retryctl simulate`: replay failure histories through the embedded evaluator (SPEC §3).
//!
//! Load (policies from `-f` or the server, baseline policies from files or the cluster's
//! database, the scheduler config, the history's source) → pick
//! the sink of the output format (`output::sinks::sink`) → `replay::run::{replay,
//! compare}`, which drives the whole path into it → the exit status, read off the totals
//! the replay returns. Must not: print with `println!`, exit, read histories itself (that
//! is `replay::source`), count (that is `replay`) or format records (that is `output`).
//!
//! Decisions where SPEC §3 is silent:
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
//! - `--lookout-db DSN --queue Q` (SPEC §5.4) replaces `--history`: `history`'s filter and
//!   export (`lookout::export_source`) feed the replay directly. The rows it leaves out are
//!   reported on stderr in `history`'s words, in order with the replay's messages, and are
//!   not replay errors (exit 0, or 1 with `--strict`, as `history`); `history`'s summary
//!   follows the replay's output on stderr. A connection lost midway: what was replayed is
//!   printed, then the error (exit 4).
//! - `--baseline-from-cluster`: the baseline is the policies and attachments stored in the same
//!   database; a row that does not decode stops it before the replay (exit 3, as invalid
//!   `--baseline` files do), a queue the cluster lacks is exit 1, and the plan says where its
//!   baseline came from (`output::simulate::Baseline`).

use std::io::Write;
use std::path::PathBuf;

use crate::app::Context;
use crate::cli::SimulateArgs;
use crate::commands::held::Held;
use crate::commands::history::{lookout_filter, now, FilterFlags};
use crate::commands::policy_set::{base_config, load_from_cluster, load_from_server, load_policies, Side};
use crate::connection::parse_timeout;
use crate::engine::job_report::plural;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::{CliError, ExitCode};
use crate::lookout::export_source::ExportSource;
use crate::lookout::{cluster, db, Export};
use crate::model::failure_history::Timestamp;
use crate::output::history::write_summary;
use crate::output::progress::progress_bar;
use crate::output::simulate::{Baseline, Mode, Stderr};
use crate::output::sinks::sink;
use crate::replay::backtest::Refusal;
use crate::replay::run::{compare, replay, BacktestError, Options};
use crate::replay::source::{Files, HistorySource, Overrides};

pub fn run(ctx: &mut Context, args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let stdin = |p: &PathBuf| p.as_os_str() == "-";
    if args.history.as_ref().is_some_and(stdin) && args.source.files.iter().chain(&args.baseline).any(stdin) {
        return Err(CliError::usage("stdin can be read once: give either `--history -` or `-f -`, not both").into());
    }
    check_lookout_flags(args)?;
    if args.source.files.is_empty() && !args.from_server {
        writeln!(
            ctx.err,
            "{}: no -f given: no retry policy applies, every job follows the legacy behaviour (a failed run is final)",
            ctx.style.warning("warning")
        )?;
    }
    let engine = args.engine.map(EngineKind::from);
    let candidate = if args.from_server {
        Some(load_from_server(ctx, args, engine)?)
    } else {
        load_policies(
            ctx,
            &args.source.files,
            args,
            engine.unwrap_or_default(),
            Side::Candidate,
        )?
    };
    let Some(sim) = candidate else {
        return Ok(ExitCode::InvalidInput);
    };
    let baseline_engine = args.baseline_engine.map_or(sim.engine(), EngineKind::from);
    let overrides = Overrides {
        global_max_retries: args.global_max_retries,
        default_policy: args.default_policy.clone(),
    };
    let base = base_config(args)?;
    // `--baseline FILES` serves either history source; `--baseline-from-cluster` (exclusive
    // with it) is read from the database below.
    let file_baseline = if args.baseline.is_empty() {
        None
    } else {
        match load_policies(ctx, &args.baseline, args, baseline_engine, Side::Baseline)? {
            Some(b) => Some(b),
            None => return Ok(ExitCode::InvalidInput),
        }
    };
    let (Some(dsn), Some(queue)) = (&args.lookout_db, &args.queue) else {
        // clap's `histories` group makes one of the two required; `check_lookout_flags` that
        // `--lookout-db` comes with `--queue`.
        let Some(history) = &args.history else {
            return Err(CliError::usage("give `--history PATH` or `--lookout-db DSN --queue Q`").into());
        };
        let source = Files::open(history, base, overrides).map_err(CliError::invalid)?;
        return drive(ctx, args, source, &sim, file_baseline.as_ref(), Baseline::Files);
    };
    let settings = overrides.apply(&base);
    // SPEC §5.4: the history straight from Lookout's database, and with
    // --baseline-from-cluster the baseline from the same database.
    let filter = lookout_filter(
        &FilterFlags {
            queue,
            jobset: args.jobset.as_deref(),
            jobs: &[],
            window: &args.window,
        },
        now(),
    )?;
    let mut tables = db::HISTORY_TABLES.to_vec();
    if args.baseline_from_cluster {
        tables.extend_from_slice(cluster::CLUSTER_TABLES);
    }
    let db = db::connect_with(dsn, parse_timeout(&ctx.global.timeout)?, &tables)?;
    let (baseline, from) = if args.baseline_from_cluster {
        let state = cluster::read(&db)?;
        match load_from_cluster(ctx, state, args, queue, baseline_engine)? {
            Some(b) => (Some(b), Baseline::Cluster),
            None => return Ok(ExitCode::InvalidInput),
        }
    } else {
        (file_baseline, Baseline::Files)
    };
    if ctx.global.verbose > 0 {
        writeln!(ctx.err, "lookout-db: {}", db::statement(&filter)?)?;
    }
    let source = ExportSource::new(Export::new(db::jobs(db, &filter)?), settings, "lookout-db");
    let state = source.state();
    let code = drive(ctx, args, source, &sim, baseline.as_ref(), from)?;
    let state = std::mem::take(&mut *state.lock().unwrap_or_else(|e| e.into_inner()));
    // `history`'s summary: what was read, left out, and what Lookout could not tell.
    write_summary(ctx.err, queue, &state.totals)?;
    if let Some(e) = state.error {
        // The connection was lost: what was printed covers the jobs read before.
        return Err(e);
    }
    Ok(
        if code == ExitCode::Success && args.strict && state.totals.left_out() > 0 {
            ExitCode::Failure
        } else {
            code
        },
    )
}

/// `--lookout-db` needs `--queue`; the filters and `--baseline-from-cluster` need
/// `--lookout-db`.
fn check_lookout_flags(args: &SimulateArgs) -> Result<(), CliError> {
    if args.lookout_db.is_some() {
        return match args.queue {
            Some(_) => Ok(()),
            None => Err(CliError::usage(
                "`--lookout-db` replays the jobs of one queue: give `--queue QUEUE`",
            )),
        };
    }
    let given = [
        ("--baseline-from-cluster", args.baseline_from_cluster),
        ("--queue", args.queue.is_some()),
        ("--jobset", args.jobset.is_some()),
        ("--since", args.window.since.is_some()),
        ("--from", args.window.from.is_some()),
        ("--to", args.window.to.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(CliError::usage(format!(
            "`{flag}` reads Lookout's database: give `--lookout-db DSN` (with `--history`, the file is the whole history)"
        ))),
        None => Ok(()),
    }
}

/// The replay (or, with a baseline, the comparison) of `source` into the sink of `-o`, and
/// its exit status. With `--backtest-at` stdout is held back until the backtest has an
/// answer: without one, the usage error is all that is printed.
fn drive<S: HistorySource>(
    ctx: &mut Context,
    args: &SimulateArgs,
    source: S,
    sim: &Simulator,
    baseline: Option<&Simulator>,
    from: Baseline,
) -> anyhow::Result<ExitCode> {
    let options = Options {
        backtest_at: args.backtest_at.as_deref().map(parse_backtest_at).transpose()?,
    };
    let mut held = options.backtest_at.map(|_| Held::new()).transpose()?;
    let out: &mut dyn Write = match &mut held {
        Some(h) => h,
        None => &mut *ctx.out,
    };
    let stderr = Stderr::new(
        &mut *ctx.err,
        ctx.style,
        progress_bar(source.progress()),
        args.retry_policies.is_some(),
    );
    let (code, used_given, refused) = if let Some(old) = baseline {
        let mode = Mode::Compare {
            all_changes: args.all_changes,
            baseline: from,
        };
        let mut sink = sink(args.output, mode, out, stderr);
        let done = compare(source, old, sim, &options, &mut *sink)?;
        let c = &done.comparison;
        let code = if c.errors > 0 {
            ExitCode::InvalidInput
        } else if args.exit_code && c.changed > 0 {
            ExitCode::Failure
        } else {
            ExitCode::Success
        };
        (code, done.used_given, done.refused)
    } else {
        let mode = Mode::Replay { bulk: source.bulk() };
        let mut sink = sink(args.output, mode, out, stderr);
        let done = replay(source, sim, &options, &mut *sink)?;
        let s = &done.summary;
        let code = if s.errors > 0 {
            ExitCode::InvalidInput
        } else if s.expectation_failed_jobs > 0 || (args.strict && s.contradicted_jobs > 0) {
            ExitCode::Failure
        } else {
            ExitCode::Success
        };
        (code, done.used_given, done.refused)
    };
    if let Some(refused) = refused {
        return Err(backtest_refusal(&refused, args.backtest_at.as_deref().unwrap_or_default()).into());
    }
    if let Some(h) = held {
        h.release(&mut *ctx.out)?;
    }
    if args.retry_policies.is_some() && !used_given {
        writeln!(ctx.err, "{}: --retry-policy was ignored: every job's queue is among the documents, and its queue's policies applied", ctx.style.warning("warning"))?;
    }
    Ok(code)
}

/// `--backtest-at TIME`: an RFC 3339 time.
pub fn parse_backtest_at(text: &str) -> Result<Timestamp, CliError> {
    Timestamp::parse(text).ok_or_else(|| {
        CliError::usage(format!(
            "invalid `--backtest-at` `{text}`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`"
        ))
    })
}

/// Why `--backtest-at` has no answer, as the usage error it is (SPEC §3.8).
pub fn backtest_refusal(refused: &BacktestError, at: &str) -> CliError {
    match refused {
        BacktestError::NotSubmitted { jobs, first } => CliError::usage(format!(
            "`--backtest-at` splits the jobs by `job.submittedAt`, and {} {} none (the first: job `{first}`)",
            plural(*jobs, "job", "jobs"),
            if *jobs == 1 { "has" } else { "have" }
        ))
        .with_hint("give every job its submission time (`retryctl history` writes it), or leave out --backtest-at"),
        BacktestError::Refused(Refusal::NoTrain) => CliError::usage(format!(
            "`--backtest-at {at}` leaves no trials to fit the rates: no job submitted before it has a failed run followed by another run"
        ))
        .with_hint("pick a later time"),
        BacktestError::Refused(Refusal::NoTest) => CliError::usage(format!(
            "`--backtest-at {at}` leaves no trials to test the rates: no job submitted at or after it has a failed run followed by another run"
        ))
        .with_hint("pick an earlier time"),
    }
}
