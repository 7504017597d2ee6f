//! A sharded `simulate`'s end (docs/past-one-machine.md): `merge`'s partials of one run
//! folded as one process folds its replay, into the sink of `-o`, and ended as one process
//! ends it ([`super::conclude`]).
//!
//! Owns: that ending. Must not: read or check the partials (that is `merge`, and
//! `commands::replay::merged`), count or render.

use crate::app::Context;
use crate::cli::{MergeArgs, MergeOutput};
use crate::commands::replay::checks::contention_in_one_process;
use crate::commands::replay::held::Held;
use crate::commands::replay::merged::{
    add_folded, backtest_refused, for_each_entry, lookout_summary, missing, not_an_output, not_replayed, run_of,
};
use crate::error::ExitCode;
use crate::output::sinks::sink;
use crate::output::stderr::Stderr;
use crate::output::Format;
use crate::replay::partial::{Item, Partial};
use crate::replay::run::{CompareFold, Options, ReplayFold};

use super::{compare_code, conclude, replay_code, said_after, SimulateRun};

/// A sharded simulate's partials: the shards' totals and entries folded as one process folds
/// them, into the sink of `-o`, and its ending (`simulate::conclude`).
pub fn merge(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
    if args.output == MergeOutput::Policy {
        return Err(not_an_output(
            args.output,
            "simulate",
            "table, json, yaml, jsonl, html or markdown",
        ));
    }
    let run: SimulateRun = run_of(partials)?;
    let run = &run;
    // No shard writes one with contention on; a partial that says so was not written by one,
    // and its merge would lack the section one process prints.
    contention_in_one_process(run.spec.contention, true, false)?;
    let format = Format::from(args.output);
    let options = Options {
        backtest_at: run.spec.backtest_time(),
        shard: None,
        explain: false,
        incidents: run.spec.look().clone(),
        contention: false,
        contention_sharded: run.spec.contention_sharded,
    };
    let mut held = Held::for_stdout(&mut *ctx.out, ctx.out_is_stdout)?;
    // The replay's messages too, until every partial's seal is checked (at its last
    // entry): a damaged file's are not said.
    let mut said = Vec::new();
    let stderr = Stderr::new(&mut said, ctx.style, None, run.retry_policy).skipping(run.skip_invalid);
    let mut sink = sink(format, run.mode(), &mut held, stderr);
    let command = if run.compare { "simulate --baseline" } else { "simulate" };
    let (code, used_given, refused, (errors, recorded)) = if run.compare {
        // A sink that prints JSON records is handed the shards' records as they are.
        let records = sink.needs().change_json;
        let mut fold = CompareFold::new(&mut *sink, &run.given)?;
        add_folded(partials, |t, used| fold.totals(t, used))?;
        for_each_entry(partials, records, |p, e| {
            Ok(match e.item {
                Item::Change(ch) => {
                    fold.fallback(&ch.diff.job.clone(), missing(e.missing_queue))?;
                    fold.change(*ch)?
                }
                Item::Record(r) => fold.change_json(r.json(), || r.changed(&p.name).map_err(std::io::Error::other))?,
                Item::Fallback(job) => {
                    fold.fallback(&job, missing(e.missing_queue))?;
                    true
                }
                item => fold.not_replayed(&not_replayed(p, item, command)?)?,
            })
        })?;
        let done = fold.finish(&options)?;
        (
            compare_code(&done.comparison, run.exit_code, run.strict, run.skip_invalid),
            done.used_given,
            done.refused,
            (done.comparison.errors, done.comparison.recorded),
        )
    } else {
        let mut fold = ReplayFold::new(&mut *sink, &run.given)?;
        add_folded(partials, |t, used| fold.totals(t, used))?;
        for_each_entry(partials, false, |p, e| {
            Ok(match e.item {
                Item::Job(report) => fold.job(*report, e.missing_queue)?,
                item => fold.not_replayed(&not_replayed(p, item, command)?)?,
            })
        })?;
        let done = fold.finish(&options)?;
        (
            replay_code(&done.summary, run.strict, run.skip_invalid),
            done.used_given,
            done.refused,
            (done.summary.errors, done.summary.recorded),
        )
    };
    drop(sink);
    // What the replay assumed of the scheduler, first, as one process says it; once every
    // partial is read whole (a damaged one is said alone).
    if let Some(note) = &run.scheduler {
        writeln!(ctx.err, "{note}")?;
    }
    ctx.err.write_all(&said)?;
    if let Some(refused) = refused {
        return Err(backtest_refused(
            &refused,
            run.spec.backtest_at.as_ref().map(|b| b.text.as_str()),
        ));
    }
    conclude(ctx, run, Some(held), None, used_given)?;
    said_after(ctx, run, errors, &recorded)?;
    let left_out = lookout_summary(ctx, partials)?;
    // `--strict` with a Lookout source: rows left out make the status 1 (as `simulate`).
    Ok(if code == ExitCode::Success && run.strict && left_out > 0 {
        ExitCode::Failure
    } else {
        code
    })
}
