//! `retryctl simulate`: replay failure histories through the embedded evaluator (SPEC §3).
//!
//! Load (policies from `-f` or the server, baseline policies, the scheduler config) → run
//! the `replay` pipeline → render through `output::simulate` → the exit status. Must not:
//! print with `println!`, exit, read histories itself (that is `replay::source`) or format
//! records (that is `output::simulate`).
//!
//! Decisions where SPEC §3 is silent:
//! - a single YAML/JSON history file prints one table per job; a JSON Lines file, a
//!   directory or JSON Lines on stdin is "bulk": the table format prints only the summary;
//!   `-o json|yaml|jsonl` stream every job in every mode.
//! - `-o json` is always `{"jobs": [...], "summary": {...}}` and `-o yaml` the same shape;
//!   `-o jsonl` writes one job per line and the summary to stderr.
//! - `--baseline`: `-o json` is `{"comparison": {"changedJobs": [...], "jobs", "changed",
//!   "transitions", "retries", "delay", "compute", "errors"}}` (streamed: the per-job
//!   records are left out, they would double the output); `-o jsonl` writes one changed job
//!   per line and the totals to stderr; `--retry-policy` applies to both sides.
//! - a bad JSON line or a job naming a missing policy is reported (with its line number)
//!   and skipped; the other jobs still run and the exit status is 3.
//! - a closed stdout (`simulate … | head`) stops the replay quietly with the status so far.

use std::io;
use std::path::PathBuf;

use crate::app::Context;
use crate::cli::{SimulateArgs, SimulateOutput};
use crate::commands::policy_set::{base_config, load_from_server, load_policies, Side};
use crate::engine::{Detail, EngineKind};
use crate::error::{CliError, ExitCode};
use crate::output::progress::{finish, progress_bar};
use crate::output::report;
use crate::output::simulate::{missing_queue_warning, ComparisonSink, JobSink, Replayed};
use crate::replay::compare::JobDiff;
use crate::replay::run::{fallback, for_each_ordered, replay_job_detailed, Emitted, Fallback, Fallbacks, Job};
use crate::replay::source::{Files, HistorySource, Overrides, Progress};
use crate::replay::summary::Summary;
use crate::replay::Processed;

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
    let bar = progress_bar(source.progress());
    let tick = |p: Progress| {
        if let Some(b) = &bar {
            b.set_position(p.done);
        }
    };
    let (out, err, style, format) = (&mut *ctx.out, &mut *ctx.err, ctx.style, args.output);
    let mut fallbacks = Fallbacks::default();
    let warn_queue = |job: &str, q: Option<String>| {
        q.map(|q| missing_queue_warning(job, &q, args.retry_policies.is_some(), sim.given()))
    };
    let code = if let Some(old) = baseline {
        let mut sink = ComparisonSink::new(format, style);
        sink.begin(out)?;
        // A comparison is made of numbers only (final state, retries, delay, run times):
        // neither side needs the per-run texts.
        let work = |_: &mut (), job: Job<'_>| {
            let b = replay_job_detailed(&old, job.settings, job.history, Detail::Summary)
                .map_err(|e| format!("{}: job `{}`: baseline: {e}", job.origin, job.history.job.id))?;
            let c = replay_job_detailed(&sim, job.settings, job.history, Detail::Summary)
                .map_err(|e| format!("{}: job `{}`: {e}", job.origin, job.history.job.id))?;
            Ok((JobDiff::new(&b, c), fallback(&sim, job.history)))
        };
        let emit = |p: Emitted<(JobDiff, Option<Fallback>), ()>| -> io::Result<bool> {
            let Emitted::Job(p) = p else { return Ok(true) };
            match p {
                Processed::Done((d, f)) => {
                    if let Some(w) = warn_queue(&d.job, fallbacks.add(f)) {
                        sink.warning(err, &w)?;
                    }
                    write_or_stop(sink.job(out, &d))
                }
                Processed::Error(m) => sink.error(err, &m).map(|()| true),
                Processed::Invalid(f) => {
                    sink.comparison.errors += 1;
                    report::write_text(std::slice::from_ref(&*f), style, &mut Vec::new(), err).map(|_| true)
                }
            }
        };
        for_each_ordered(source, work, emit, tick)?;
        finish(&bar);
        ignore_closed(sink.end(out, err))?;
        let c = &sink.comparison;
        if c.errors > 0 {
            ExitCode::InvalidInput
        } else if args.exit_code && c.changed > 0 {
            ExitCode::Failure
        } else {
            ExitCode::Success
        }
    } else {
        let mut sink = JobSink::new(format, style, source.bulk());
        let summary_only = source.bulk() && format == SimulateOutput::Table;
        // Only the summary is printed: the per-run texts are not even written.
        let detail = if summary_only { Detail::Summary } else { Detail::Full };
        sink.begin(out)?;
        // Summary only: each worker adds its jobs to a summary of its unit.
        let work = |part: &mut Summary, job: Job<'_>| {
            let report = replay_job_detailed(&sim, job.settings, job.history, detail)
                .map_err(|e| format!("{}: job `{}`: {e}", job.origin, job.history.job.id))?;
            let f = fallback(&sim, job.history);
            Ok((Replayed::new(format, summary_only, part, report, f.is_some()), f))
        };
        let emit = |p: Emitted<(Replayed, Option<Fallback>), Summary>| -> io::Result<bool> {
            let p = match p {
                Emitted::Job(p) => p,
                Emitted::Unit(part) => {
                    sink.merge(part);
                    return Ok(true);
                }
            };
            match p {
                Processed::Done((job, f)) => {
                    if let Some(w) = warn_queue(job.job_id(), fallbacks.add(f)) {
                        sink.warning(err, &w)?;
                    }
                    write_or_stop(sink.replayed(out, err, &job))
                }
                Processed::Error(m) => sink.error(err, &m).map(|()| true),
                Processed::Invalid(f) => {
                    sink.summary.errors += 1;
                    report::write_text(std::slice::from_ref(&*f), style, &mut Vec::new(), err).map(|_| true)
                }
            }
        };
        for_each_ordered(source, work, emit, tick)?;
        finish(&bar);
        ignore_closed(sink.end(out, err))?;
        let s = &sink.summary;
        if s.errors > 0 {
            ExitCode::InvalidInput
        } else if s.expectation_failed_jobs > 0 || (args.strict && s.contradicted_jobs > 0) {
            ExitCode::Failure
        } else {
            ExitCode::Success
        }
    };
    if args.retry_policies.is_some() && !fallbacks.used_given {
        writeln!(ctx.err, "{}: --retry-policy was ignored: every job's queue is among the documents, and its queue's policies applied", ctx.style.warning("warning"))?;
    }
    Ok(code)
}

/// A closed stdout (`| head`) ends the replay quietly: nobody reads the rest.
fn write_or_stop(r: io::Result<()>) -> io::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

fn ignore_closed(r: io::Result<()>) -> io::Result<()> {
    write_or_stop(r).map(|_| ())
}
