//! `retryctl simulate`: replay failure histories through the embedded evaluator (SPEC §3).
//!
//! Load (policies from `-f` or the server, baseline policies, the scheduler config) → pick
//! the sink of the output format (`output::simulate::sink`) → `replay::run::{replay,
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

use std::path::PathBuf;

use crate::app::Context;
use crate::cli::SimulateArgs;
use crate::commands::policy_set::{base_config, load_from_server, load_policies, Side};
use crate::engine::EngineKind;
use crate::error::{CliError, ExitCode};
use crate::output::progress::progress_bar;
use crate::output::simulate::{sink, Mode, Stderr};
use crate::replay::run::{compare, replay};
use crate::replay::source::{Files, HistorySource, Overrides};

pub fn run(ctx: &mut Context, args: &SimulateArgs) -> anyhow::Result<ExitCode> {
    let stdin = |p: &PathBuf| p.as_os_str() == "-";
    if stdin(&args.history) && args.source.files.iter().chain(&args.baseline).any(stdin) {
        return Err(CliError::usage("stdin can be read once: give either `--history -` or `-f -`, not both").into());
    }
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
    let baseline = match (&candidate, args.baseline.is_empty()) {
        (Some(sim), false) => {
            let engine = args.baseline_engine.map_or(sim.engine(), EngineKind::from);
            load_policies(ctx, &args.baseline, args, engine, Side::Baseline)?.map(Some)
        }
        _ => Some(None),
    };
    let (Some(sim), Some(baseline)) = (candidate, baseline) else {
        return Ok(ExitCode::InvalidInput);
    };
    let overrides = Overrides {
        global_max_retries: args.global_max_retries,
        default_policy: args.default_policy.clone(),
    };
    let source = Files::open(&args.history, base_config(args)?, overrides).map_err(CliError::invalid)?;
    let stderr = Stderr::new(
        &mut *ctx.err,
        ctx.style,
        progress_bar(source.progress()),
        args.retry_policies.is_some(),
    );
    let (code, used_given) = if let Some(old) = baseline {
        let mode = Mode::Compare {
            all_changes: args.all_changes,
        };
        let mut sink = sink(args.output, mode, &mut *ctx.out, stderr);
        let done = compare(source, &old, &sim, &mut *sink)?;
        let c = &done.comparison;
        let code = if c.errors > 0 {
            ExitCode::InvalidInput
        } else if args.exit_code && c.changed > 0 {
            ExitCode::Failure
        } else {
            ExitCode::Success
        };
        (code, done.used_given)
    } else {
        let mode = Mode::Replay { bulk: source.bulk() };
        let mut sink = sink(args.output, mode, &mut *ctx.out, stderr);
        let done = replay(source, &sim, &mut *sink)?;
        let s = &done.summary;
        let code = if s.errors > 0 {
            ExitCode::InvalidInput
        } else if s.expectation_failed_jobs > 0 || (args.strict && s.contradicted_jobs > 0) {
            ExitCode::Failure
        } else {
            ExitCode::Success
        };
        (code, done.used_given)
    };
    if args.retry_policies.is_some() && !used_given {
        writeln!(ctx.err, "{}: --retry-policy was ignored: every job's queue is among the documents, and its queue's policies applied", ctx.style.warning("warning"))?;
    }
    Ok(code)
}
