//! `retryctl merge`: the partial results of a sharded `simulate` or `tune` (docs/past-one-machine.md), added
//! up into what the command prints unsharded, byte for byte.
//!
//! Load (each partial's header and end, checked on its own: `replay::partial`; then together:
//! one fingerprint, one history, the shards 0..N−1 once each) → the fold the command itself
//! runs (`replay::run::{ReplayFold, CompareFold}`, `tune::sweep::SweepFold`), given every
//! shard's totals and then every entry in the source's order (a merge of the shards' streams
//! by position) → the command's own ending (`simulate::conclude`, `tune::finish`). Must not:
//! count, rank or render itself: what would differ from one process is then nothing.
//!
//! Decisions docs/past-one-machine.md leaves open:
//! - stdout is held until the whole answer is made: a partial found damaged halfway (an entry
//!   that does not read) prints nothing on stdout (exit 3). What the replay says on stderr
//!   (its messages, capped as one process caps them) is said as the fold goes.
//! - the exit status is the unsharded command's (3 for entries not replayed, 1 for failed
//!   expectations, `--exit-code`, `--strict`: as the shards' command line gave them); the
//!   shards themselves exit 0 once their partial is written.
//! - what each shard said of its own source (a Lookout export's summary, the progress bar)
//!   stays in its own log: merge prints the replay's answer and messages, not the shards'.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use crate::app::Context;
use crate::cli::{MergeArgs, MergeOutput};
use crate::commands::held::Held;
use crate::commands::simulate::{compare_code, conclude, parse_backtest_at, replay_code, SimulateRun};
use crate::commands::tune::{self as tune_command, parse_max_compute, TuneRun};
use crate::error::{CliError, ExitCode};
use crate::lookout::ExportTotals;
use crate::output::history::write_summary;
use crate::output::simulate::Stderr;
use crate::output::sinks::{sink, Format};
use crate::output::tune::{self as view, StderrListener};
use crate::replay::partial::{Entry, Item, Partial};
use crate::replay::run::{CompareFold, Fallback, Folded, NotReplayed, Options, ReplayFold};
use crate::tune::sweep::{SweepFold, Tallies};

pub fn run(ctx: &mut Context, args: &MergeArgs) -> anyhow::Result<ExitCode> {
    let mut problems = Vec::new();
    let mut partials = Vec::new();
    for path in &args.partials {
        match Partial::open(path) {
            Ok(p) => partials.push(p),
            Err(why) => problems.push(format!("`{}` {why}", path.display())),
        }
    }
    if problems.is_empty() {
        problems = together(&partials);
    }
    if !problems.is_empty() {
        for p in &problems {
            writeln!(ctx.err, "{}: {p}", ctx.style.error("error"))?;
        }
        return Err(CliError::invalid(format!(
            "cannot merge: {} (nothing was printed)",
            if problems.len() == 1 {
                "1 problem above".to_string()
            } else {
                format!("{} problems above", problems.len())
            }
        ))
        .into());
    }
    // `together` found them all of one run: the first says what it is.
    let run = &partials[0].header.run;
    match run.get("command").and_then(|c| c.as_str()) {
        Some("simulate") => {
            let run: SimulateRun = decode(&partials[0], "its run", run.clone())?;
            merge_simulate(ctx, &partials, &run, args.output)
        }
        Some("tune") => {
            let run: TuneRun = decode(&partials[0], "its run", run.clone())?;
            merge_tune(ctx, &partials, &run, args.output)
        }
        _ => Err(damaged(&partials[0], "its run names no command this retryctl merges").into()),
    }
}

/// What is wrong with `partials` as one set: not of one run (fingerprint, retryctl), not of
/// one history, not the shards 0..N−1 once each.
fn together(partials: &[Partial]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(first) = partials.first() else {
        return problems;
    };
    let shard = |p: &Partial| format!("{}/{}", p.header.shard.index, p.header.shard.count);
    for p in &partials[1..] {
        let (h, f) = (&p.header, &first.header);
        if h.retryctl != f.retryctl {
            problems.push(format!(
                "`{}` was written by retryctl {} and `{}` by retryctl {}: make every shard with one retryctl",
                p.name, h.retryctl, first.name, f.retryctl
            ));
        } else if h.shard.count != f.shard.count {
            problems.push(format!(
                "`{}` is shard {} and `{}` shard {}: the shards of one run share N",
                p.name,
                shard(p),
                first.name,
                shard(first)
            ));
        } else if h.fingerprint != f.fingerprint {
            problems.push(format!(
                "`{}` is of another run than `{}`: its documents, flags or source differ (its fingerprint is not the same)",
                p.name, first.name
            ));
        } else if p.end.source != first.end.source {
            problems.push(format!(
                "`{}` was made from another history than `{}` (the history's digest differs: was it changed between the shards?)",
                p.name, first.name
            ));
        }
    }
    if !problems.is_empty() {
        return problems;
    }
    let count = first.header.shard.count;
    let mut seen: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for p in partials {
        seen.entry(p.header.shard.index).or_default().push(&p.name);
    }
    for (index, names) in &seen {
        if names.len() > 1 {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            problems.push(format!(
                "shard {index}/{count} is given {} times: {}",
                names.len(),
                names.join(", ")
            ));
        }
    }
    // A million missing shards say no more than the first few, and are counted, not listed
    // (a partial of another count, refused above, may hold an index past this one's).
    let missing = count - seen.keys().filter(|&&i| i < count).count() as u64;
    if missing > 0 {
        let shown: Vec<String> = (0..count)
            .filter(|i| !seen.contains_key(i))
            .take(10)
            .map(|i| format!("{i}/{count}"))
            .collect();
        let more = if missing > 10 {
            format!(" and {} more", missing - 10)
        } else {
            String::new()
        };
        let noun = if missing == 1 { "shard" } else { "shards" };
        let verb = if missing == 1 { "is" } else { "are" };
        problems.push(format!("{noun} {}{more} {verb} missing", shown.join(", ")));
    }
    problems
}

fn damaged(p: &Partial, why: &str) -> CliError {
    CliError::invalid(format!("`{}` is damaged: {why}", p.name))
}

/// An entry of a kind the partial's command never writes (a job's record in a comparison's
/// partial, any job in a sweep's): the file was not made by its shard as it is.
fn foreign(p: &Partial, item: &Item, command: &str) -> CliError {
    let kind = match item {
        Item::Job(_) => "a job's record",
        Item::Change(_) => "a changed job",
        Item::Fallback(_) => "a missing queue's first job",
        Item::Error(_) | Item::Invalid(_) | Item::LeftOut(_) => "an entry that was not replayed",
    };
    damaged(
        p,
        &format!("it holds {kind}, which a partial of `{command}` never holds"),
    )
}

/// An entry that did not replay, as the folds take it. Any other entry reaching here is one
/// that a partial of `command` never holds: refused ([`foreign`]).
fn not_replayed(p: &Partial, item: Item, command: &str) -> Result<NotReplayed, CliError> {
    match item {
        Item::Error(m) => Ok(NotReplayed::Error(m)),
        Item::Invalid(text) => Ok(NotReplayed::Invalid(text)),
        Item::LeftOut(text) => Ok(NotReplayed::LeftOut(text)),
        item => Err(foreign(p, &item, command)),
    }
}

/// A part of `p` in the shape its command gives it.
fn decode<T: serde::de::DeserializeOwned>(p: &Partial, what: &str, value: serde_json::Value) -> Result<T, CliError> {
    serde_json::from_value(value).map_err(|e| damaged(p, &format!("{what}: {e}")))
}

/// Every entry of every partial, in the source's order, to `f` until it returns `false`.
fn for_each_entry(
    partials: &[Partial],
    mut f: impl FnMut(&Partial, Entry) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let mut streams = partials
        .iter()
        .map(Partial::entries)
        .collect::<Result<Vec<_>, String>>()
        .map_err(CliError::invalid)?;
    let mut heads: Vec<Option<Entry>> = Vec::with_capacity(streams.len());
    let mut heap = BinaryHeap::new();
    for (i, s) in streams.iter_mut().enumerate() {
        let head = s.next().transpose().map_err(CliError::invalid)?;
        if let Some(e) = &head {
            heap.push(Reverse((e.at, i)));
        }
        heads.push(head);
    }
    while let Some(Reverse((at, i))) = heap.pop() {
        let Some(entry) = heads[i].take() else { continue };
        if !f(&partials[i], entry)? {
            return Ok(());
        }
        let next = streams[i].next().transpose().map_err(CliError::invalid)?;
        if let Some(e) = &next {
            if e.at < at {
                return Err(damaged(&partials[i], "its entries are not in the source's order").into());
            }
            heap.push(Reverse((e.at, i)));
        }
        heads[i] = next;
    }
    Ok(())
}

/// The missing queue an entry is the first job of, as a replay hands it on.
fn missing(queue: Option<String>) -> Option<Fallback> {
    queue.map(Fallback::Missing)
}

fn merge_simulate(
    ctx: &mut Context,
    partials: &[Partial],
    run: &SimulateRun,
    format: Format,
) -> anyhow::Result<ExitCode> {
    let options = Options {
        backtest_at: run.backtest_at.as_deref().map(parse_backtest_at).transpose()?,
        shard: None,
    };
    let mut totals = Vec::with_capacity(partials.len());
    for p in partials {
        totals.push((
            decode::<Folded>(p, "its totals", p.end.totals.clone())?,
            p.end.used_given,
        ));
    }
    let mut held = Held::new()?;
    let stderr = Stderr::new(&mut *ctx.err, ctx.style, None, run.retry_policy);
    let mut sink = sink(format, run.mode(), &mut held, stderr);
    let command = if run.compare { "simulate --baseline" } else { "simulate" };
    let (code, used_given, refused) = if run.compare {
        let mut fold = CompareFold::new(&mut *sink, &run.given)?;
        for (t, used) in totals {
            fold.totals(t, used);
        }
        for_each_entry(partials, |p, e| {
            Ok(match e.item {
                Item::Change(ch) => {
                    fold.fallback(&ch.diff.job.clone(), missing(e.missing_queue))?;
                    fold.change(*ch)?
                }
                Item::Fallback(job) => {
                    fold.fallback(&job, missing(e.missing_queue))?;
                    true
                }
                item => fold.not_replayed(&not_replayed(p, item, command)?)?,
            })
        })?;
        let done = fold.finish(&options)?;
        (
            compare_code(&done.comparison, run.exit_code),
            done.used_given,
            done.refused,
        )
    } else {
        let mut fold = ReplayFold::new(&mut *sink, &run.given)?;
        for (t, used) in totals {
            fold.totals(t, used);
        }
        for_each_entry(partials, |p, e| {
            Ok(match e.item {
                Item::Job(report) => fold.job(*report, e.missing_queue)?,
                item => fold.not_replayed(&not_replayed(p, item, command)?)?,
            })
        })?;
        let done = fold.finish(&options)?;
        (replay_code(&done.summary, run.strict), done.used_given, done.refused)
    };
    drop(sink);
    conclude(ctx, run, Some(held), refused, used_given)?;
    let left_out = lookout_summary(ctx, partials)?;
    // `--strict` with a Lookout source: rows left out make the status 1 (as `simulate`).
    Ok(if code == ExitCode::Success && run.strict && left_out > 0 {
        ExitCode::Failure
    } else {
        code
    })
}

/// A database's export, as the command says it after its answer: `history`'s summary over
/// every shard's counts. The rows left out in all.
fn lookout_summary(ctx: &mut Context, partials: &[Partial]) -> anyhow::Result<u64> {
    let mut queue = None;
    let mut totals = ExportTotals::default();
    for p in partials {
        if let Some(l) = &p.end.lookout {
            queue = Some(l.queue.as_str());
            totals.add(&l.totals);
        }
    }
    if let Some(queue) = queue {
        write_summary(ctx.err, queue, &totals)?;
    }
    Ok(totals.left_out())
}

fn merge_tune(ctx: &mut Context, partials: &[Partial], run: &TuneRun, output: MergeOutput) -> anyhow::Result<ExitCode> {
    let format = match output {
        MergeOutput::Table => view::Format::Table,
        MergeOutput::Json => view::Format::Json,
        MergeOutput::Yaml => view::Format::Yaml,
        MergeOutput::Html => view::Format::Html,
        MergeOutput::Markdown => view::Format::Markdown,
        MergeOutput::Jsonl => {
            return Err(CliError::usage(
                "`-o jsonl` is not an output of `tune`: give table, json, yaml, html or markdown",
            )
            .into())
        }
    };
    let options = Options {
        backtest_at: run.backtest_at.as_deref().map(parse_backtest_at).transpose()?,
        shard: None,
    };
    let max_compute = run.max_compute.as_deref().map(parse_max_compute).transpose()?;
    let mut tallies = Vec::with_capacity(partials.len());
    for p in partials {
        tallies.push((
            decode::<Tallies>(p, "its totals", p.end.totals.clone())?,
            p.end.used_given,
        ));
    }
    let mut listener = StderrListener(Stderr::new(&mut *ctx.err, ctx.style, None, run.retry_policy));
    let mut fold = SweepFold::new(&mut listener, &run.given, run.ids.len());
    for (t, used) in &tallies {
        fold.totals(t, *used);
    }
    for_each_entry(partials, |p, e| {
        Ok(match e.item {
            Item::Fallback(job) => {
                fold.fallback(&job, missing(e.missing_queue))?;
                true
            }
            item => fold.not_replayed(&not_replayed(p, item, "tune")?)?,
        })
    })?;
    let swept = fold.finish(&options);
    listener.0.finish()?;
    let swept = match swept {
        Ok(s) => s,
        Err(refused) => {
            return Err(crate::commands::simulate::backtest_refusal(
                &refused,
                run.backtest_at.as_deref().unwrap_or_default(),
            )
            .into())
        }
    };
    let code = tune_command::finish(ctx, swept, run, max_compute, format, None)?;
    lookout_summary(ctx, partials)?;
    Ok(code)
}
