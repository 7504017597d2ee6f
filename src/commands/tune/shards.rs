//! A sharded `tune`'s end (docs/past-one-machine.md): `merge`'s partials of one run, their
//! tallies folded as one process folds its sweep, then its ranking and output
//! ([`super::finish::finish`]).
//!
//! Owns: that ending. Must not: read or check the partials (that is `merge`, and
//! `commands::replay::merged`), rank or render.

use crate::app::Context;
use crate::cli::{MergeArgs, MergeOutput};
use crate::commands::replay::checks::{contention_in_one_process, parse_max_compute};
use crate::commands::replay::merged::{
    add_totals, backtest_refused, damaged, for_each_entry, lookout_summary, missing, not_an_output, not_replayed,
    run_of,
};
use crate::error::ExitCode;
use crate::output::stderr::Stderr;
use crate::output::tune::StderrListener;
use crate::output::Format;
use crate::replay::partial::counts::Counts;
use crate::replay::partial::{Item, Partial};
use crate::replay::run::Options;
use crate::tune::sweep::{SweepFold, Tallies};

use super::finish::finish;
use super::record::TuneRun;

/// A sharded tune's partials: the shards' tallies folded as one process folds them, then its
/// ranking and output (`commands::tune::finish`).
pub fn merge(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
    if matches!(args.output, MergeOutput::Jsonl | MergeOutput::Policy) {
        return Err(not_an_output(
            args.output,
            "tune",
            "table, json, yaml, html or markdown",
        ));
    }
    let format = Format::from(args.output);
    let run: TuneRun = run_of(partials)?;
    let run = &run;
    // No shard writes one with contention on; a partial that says so was not written by one,
    // and its merge would lack the section one process prints.
    contention_in_one_process(run.spec.contention, true, false)?;
    let options = Options {
        backtest_at: run.spec.backtest_time(),
        shard: None,
        explain: false,
        incidents: run.spec.look().clone(),
        contention: false,
        contention_sharded: run.spec.contention_sharded,
    };
    // What the shard's own parse accepted: another value was written in by hand.
    let max_compute = match run.max_compute.as_deref().map(parse_max_compute).transpose() {
        Ok(m) => m,
        Err(_) => {
            return Err(damaged(
                &partials[0],
                "its run's `maxCompute` is not a duration or a percentage",
            ))
        }
    };
    // The replay's messages held until every partial's seal is checked, as simulate's merge holds them.
    let mut said = Vec::new();
    let mut listener =
        StderrListener(Stderr::new(&mut said, ctx.style, None, run.retry_policy).skipping(run.skip_invalid));
    let mut fold = SweepFold::new(&mut listener, &run.given, run.ids.len());
    // Each candidate's tallies, in the order of the header's candidates: as many of both.
    let candidates = run.ids.len();
    let check = |c: &Counts| {
        let arms = c.length("arms").unwrap_or(0);
        if arms == candidates {
            return Ok(());
        }
        Err(format!(
            "is damaged: its totals' `arms` hold {arms} candidates' tallies, and its header's `run.ids` names {candidates} candidates"
        ))
    };
    add_totals(partials, check, |t: Tallies, used| {
        fold.totals(&t, used);
        Ok(())
    })?;
    for_each_entry(partials, false, |p, e| {
        Ok(match e.item {
            Item::Fallback(job) => {
                fold.fallback(&job, missing(e.missing_queue))?;
                true
            }
            item => fold.not_replayed(&not_replayed(p, item, "tune")?)?,
        })
    })?;
    let swept = fold.finish(&options)?;
    listener.0.finish()?;
    drop(listener);
    // What the replay assumed of the scheduler, first, as one process says it; once every
    // partial is read whole (a damaged one is said alone).
    if let Some(note) = &run.scheduler {
        writeln!(ctx.err, "{note}")?;
    }
    ctx.err.write_all(&said)?;
    let swept = match swept {
        Ok(s) => s,
        Err(refused) => {
            return Err(backtest_refused(
                &refused,
                run.spec.backtest_at.as_ref().map(|b| b.text.as_str()),
            ))
        }
    };
    let code = finish(ctx, swept, run, max_compute, format, None)?;
    lookout_summary(ctx, partials)?;
    Ok(code)
}
