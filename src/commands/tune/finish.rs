//! The end of a search, in one process or in `merge` (docs/past-one-machine.md): the swept
//! candidates ranked under the run's constraints ([`ranking`]), the answer in a format and
//! the exit status ([`finish`]).
//!
//! Owns: that ending. Must not: sweep (that is `tune::sweep`), rank (`tune::rank`) or render
//! (`output::tune`).

use crate::app::Context;
use crate::commands::replay::checks::said_after_replay;
use crate::commands::replay::held::Held;
use crate::error::ExitCode;
use crate::output::tune::{self as view, TuneView};
use crate::output::Format;
use crate::replay::estimate::Rates;
use crate::replay::run::CompareTally;
use crate::replay::shard::Shard;
use crate::tune::rank::{rank, Constraints, MaxCompute, Ranked};
use crate::tune::sweep::{BaselineTally, Swept};

use super::record::TuneRun;

/// The candidates ranked under the run's constraints.
pub fn ranking(
    arms: Vec<CompareTally>,
    run: &TuneRun,
    max_compute: Option<MaxCompute>,
    baseline: &BaselineTally,
    rates: &Rates,
) -> Ranked {
    let candidates: Vec<_> = run
        .ids
        .iter()
        .cloned()
        .zip(arms)
        .map(|((id, values), tally)| (id, values, tally))
        .collect();
    let constraints = Constraints {
        max_lost: run.max_lost,
        max_compute,
        max_contradictions: run.max_contradictions,
    };
    rank(candidates, baseline, rates, &constraints)
}

/// The sweep's answer in `format` (held until whole, so that a closed stdout is not an
/// error), and the exit status: entries not replayed 3, a recommendation with
/// `--exit-code` 1. `shard`: the one shard of `--shard I/N` these numbers are of; `merge`
/// ends a sharded tune here too, with `None`.
pub fn finish(
    ctx: &mut Context,
    swept: Swept,
    run: &TuneRun,
    max_compute: Option<MaxCompute>,
    format: Format,
    shard: Option<Shard>,
) -> anyhow::Result<ExitCode> {
    let ranked = ranking(swept.arms, run, max_compute, &swept.baseline, &swept.rates);
    let view = TuneView {
        ranked: &ranked,
        jobs: swept.jobs,
        errors: swept.errors,
        baseline_from: run.baseline_from,
        varied: &run.varied,
        columns: &run.columns,
        skipped: &run.skipped,
        max_lost: run.max_lost,
        max_compute: run.max_compute.as_deref(),
        backtest: swept.backtest.as_ref(),
        incidents: swept.incidents.as_ref(),
        pick_command: &run.pick_command,
        categorized: run.categorized,
        shard,
    };
    let mut held = Held::default();
    view::write(format, &view, ctx.style, &mut held)?;
    held.release(&mut *ctx.out)?;
    let not_replayed = said_after_replay(
        &mut *ctx.err,
        ctx.style,
        &swept.recorded,
        swept.errors,
        run.skip_invalid,
    )?;
    Ok(if let Some(code) = not_replayed {
        code
    } else if run.exit_code && ranked.recommended.is_some() {
        ExitCode::Failure
    } else {
        ExitCode::Success
    })
}
