//! `suggest` in one process ([`run`]): check → resolve the sides → open the history → pass 1
//! → the rest ([`conclude`]); with `-o partial`, pass 1 alone, written for `merge`
//! ([`write_partial`]).
//!
//! Owns: that order, and a shard's partial. Must not: learn (that is `learn`), propose,
//! compare or render.

use crate::app::Context;
use crate::cli::{SuggestArgs, SuggestOutput};
use crate::commands::replay::sides::{resolve, Sides};
use crate::commands::replay::source::{self, About, Open};
use crate::engine::simulator::Simulator;
use crate::error::ExitCode;
use crate::output::mode::Baseline;
use crate::output::records::render_change;
use crate::output::stderr::invalid_text;
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Tap;
use crate::replay::source::HistorySource;

use super::check::{check, check_executor_config, refuse_sides};
use super::conclude::conclude;
use super::given::{fingerprint_inputs, Concluded, History, Suggest, NOTHING};
use super::learn::learn;
use super::run::SuggestRun;

pub fn run(ctx: &mut Context, args: &SuggestArgs) -> anyhow::Result<ExitCode> {
    let (knobs, spec) = check(args)?;
    check_executor_config(args)?;
    let Some(sides) = resolve(ctx, spec)? else {
        return Ok(ExitCode::InvalidInput);
    };
    refuse_sides(args, &sides)?;
    let replay_args = &args.replay;
    let open = Open {
        replay: replay_args,
        partial: args.output == SuggestOutput::Partial,
        strict: false,
        nothing: NOTHING,
    };
    let Some(opened) = source::open(ctx, &sides, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
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
        allow_empty: opened.empty,
        executor_config: args.executor_config.clone().map(|p| (p, args.executor_config_format)),
    };
    let done = drive(ctx, &suggest, opened.source, opened.baseline, opened.from, opened.about)?;
    let end = match done.every_queue {
        true => opened.end.learned_only(),
        false => opened.end,
    };
    end.finish(ctx, done.code)
}

/// Pass 1 over `source`, then the rest ([`conclude`]); with `-o partial`, pass 1 alone,
/// written for `merge`.
fn drive<S: HistorySource>(
    ctx: &mut Context,
    suggest: &Suggest,
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
    if suggest.output == SuggestOutput::Partial {
        let shard = suggest.shard.unwrap_or(Shard::WHOLE);
        let code = write_partial(ctx, &suggest.run, &suggest.sides, shard, source, &baseline, about)?;
        return Ok(Concluded {
            code,
            every_queue: false,
        });
    }
    // Every source is read once: pass 2 replays pass 1's copy.
    let spec = &suggest.sides.spec;
    let pass = learn(ctx.style, source, &baseline, spec.backtest_time(), spec.look(), None)?;
    conclude(ctx, suggest, &baseline, from, pass)
}

/// `-o partial`: the shard's learning (pass 1 over its share), for `merge`, which
/// proposes and compares. Exit 0 once it is written: the answer is the merge's.
fn write_partial<S: HistorySource>(
    ctx: &mut Context,
    run: &SuggestRun,
    sides: &Sides,
    shard: Shard,
    source: S,
    baseline: &Simulator,
    about: About,
) -> anyhow::Result<ExitCode> {
    let inputs = fingerprint_inputs(run, sides, baseline, shard.count, &about.source);
    let header = Header::new(shard, fingerprint(&inputs), serde_json::to_value(run)?);
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
        sides.spec.backtest_time(),
        sides.spec.look(),
        partial,
    )?;
    rec.job_ids(noted.take());
    rec.end(about.digest.get(), pass.learning.into_shard(), None)?;
    Ok(ExitCode::Success)
}
