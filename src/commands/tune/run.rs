//! `retryctl tune`'s run, as a sequence of named steps: its flags checked (`check`), the sides
//! resolved (the template, its documents valid, the baseline and both categorizers, before any
//! work), the template's varies checked and counted, an early `--pick` written (`pick`), the
//! candidates' policy sets built (`arms`), the run's record made (`record`), the history
//! opened, and the search driven over it (`drive`).
//!
//! Owns: that order, the bound on the candidates (`--max-candidates`) and `--contention
//! auto`'s bound. Must not: build a candidate, replay, rank or format.

use crate::app::Context;
use crate::cli::{ContentionArg, TuneArgs, TuneOutput};
use crate::commands::replay::sides::{resolve, Sides};
use crate::commands::replay::source::{self, Open};
use crate::error::{CliError, ExitCode};
use crate::replay::run::Options;
use crate::tune::{count, Template, Vary};

use super::arms::Arms;
use super::check::{check, Checked};
use super::drive::Tune;
use super::pick::{template_rejects, Picking};
use super::record::TuneRun;

/// The most candidates `--contention auto` computes the section for (docs/contention.md "Cost").
pub const AUTO_CONTENTION_CANDIDATES: u128 = 100;

pub fn run(ctx: &mut Context, args: &TuneArgs) -> anyhow::Result<ExitCode> {
    let replay = &args.replay;
    let Checked {
        varies,
        pick,
        format,
        max_compute,
        sides,
    } = check(args)?;
    let history = replay.history.is_some() || replay.lookout_db.is_some();
    // The template (its documents valid), the baseline and both categorizers, before any work.
    let Some(mut sides) = resolve(ctx, sides)? else {
        return Ok(ExitCode::InvalidInput);
    };
    let template = template_of(&sides);
    // The template's varies right, its size bounded.
    template.check(&varies).map_err(CliError::usage)?;
    let n = bounded(&varies, args.max_candidates)?;
    contention_bound(ctx, args, &mut sides, n)?;
    let mut picking = Picking {
        pick,
        force: args.force,
        rejects: template_rejects(&sides),
        template: &template,
        varies: &varies,
    };
    picking.own_candidate()?;
    if let Some(code) = picking.before_search(ctx, n, history)? {
        return Ok(code);
    }
    let arms = Arms::of(&template, &varies, &sides)?;
    arms.some_validate(ctx, n)?;
    let (run, arms) = TuneRun::of(args, &sides, &template, &varies, arms);
    let tune = Tune {
        format,
        picking,
        run,
        max_compute,
        options: Options {
            backtest_at: sides.spec.backtest_time(),
            shard: replay.shard,
            explain: sides.baseline.explains(),
            incidents: sides.spec.look().clone(),
            contention: sides.spec.contention,
            contention_sharded: sides.spec.contention_sharded,
        },
        varies: &varies,
    };
    let open = Open {
        replay,
        partial: format == Some(TuneOutput::Partial),
        strict: false,
        nothing: "nothing to compare",
    };
    let Some(opened) = source::open(ctx, &sides, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
    // The baseline the source opened (the cluster's, or the sides' own) and the candidates.
    let sets = opened.baseline.and_then(|b| sides.policy_sets(Some(b), Some(arms)));
    let code = tune.drive(ctx, opened.source, sets, opened.about)?;
    opened.end.finish(ctx, code)
}

/// The template the candidates are made of: the candidate side's files, the scheduler config
/// and the categorizer, as the sides read them.
fn template_of(sides: &Sides) -> Template {
    let template = Template::new(sides.candidate().files.clone(), sides.settings.source.clone());
    match &sides.candidate().categorizer {
        Some(c) => template.with_categorizer(c.file.name.clone(), c.file.document.clone()),
        None => template,
    }
}

/// The number of candidates `varies` make, at most `--max-candidates`.
fn bounded(varies: &[Vary], max_candidates: u64) -> Result<u128, CliError> {
    let n = count(varies);
    if n > u128::from(max_candidates) {
        return Err(CliError::usage(format!(
            "the varies make {n} candidates, more than --max-candidates {max_candidates}"
        ))
        .with_hint("vary fewer values (a range with a step: `0..100/10`), or raise --max-candidates"));
    }
    Ok(n)
}

/// `--contention auto` over many candidates: the events are sorted once for all of them, but
/// each candidate that starts different runs is a sweep of its own over them (a thousand
/// candidates over a million edges: a thousand million steps), so past this many the section
/// waits to be asked for (docs/contention.md "Cost"). Said, never silently left out.
fn contention_bound(ctx: &mut Context, args: &TuneArgs, sides: &mut Sides, n: u128) -> anyhow::Result<()> {
    if args.replay.contention == ContentionArg::Auto && sides.spec.contention && n > AUTO_CONTENTION_CANDIDATES {
        sides.spec.contention = false;
        writeln!(
            ctx.err,
            "note: contention: not computed for {n} candidates (more than {AUTO_CONTENTION_CANDIDATES}: each one is a sweep of its own over the history's retries and waits); pass --contention on to compute it"
        )?;
    }
    Ok(())
}
