//! What the merges of the replay verbs share (docs/past-one-machine.md): why a merge stops
//! ([`Stop`], each problem naming its file), a partial's totals added one at a time after
//! their numbers are checked ([`add_totals`]), every entry in the source's order
//! ([`for_each_entry`]), and the words of what merge refuses. `merge` reads and checks the
//! partials together; each verb ends its own partials (`simulate`'s, `tune`'s and `suggest`'s
//! `shards` module) with these, as one process ends its replay.
//!
//! Owns: those steps and their words. Must not: read a partial's bytes or merge their entries
//! itself (that is `replay::partial`), or count, rank or render.

use crate::app::Context;
use crate::cli::{MergeArgs, MergeOutput};
use crate::commands::replay::checks::shards_backtest_refusal;
use crate::error::{CliError, ExitCode};
use crate::output::history::write_summary;
use crate::replay::partial::counts::{Counts, Sums};
use crate::replay::partial::streams::{self, StreamError};
use crate::replay::partial::{Entry, Item, Partial, ReadError};
use crate::replay::run::{Fallback, Folded, NoAnswer, NotReplayed};
use crate::replay::source::ExportTotals;

/// How a verb ends a merge of its partials, found to be of one run: one process's ending.
pub type End = fn(&mut Context, &MergeArgs, &mut [Partial]) -> anyhow::Result<ExitCode>;

/// Why merge stops before its answer: each problem is said (`error: …`), then the closing
/// line, `cannot merge: …`, whichever step found them.
#[derive(Debug)]
pub enum Stop {
    /// What is wrong with the partials, each naming its file (exit 3).
    Problems(Vec<String>),
    /// A partial (or a round's file) could not be opened: this process has as many files
    /// open as it may. A limit of the machine, not a fault of the input (exit 1).
    TooManyOpen(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Problems(p) => f.write_str(&p.join("\n")),
            Stop::TooManyOpen(name) => write!(f, "`{name}` cannot be opened: too many files are open"),
        }
    }
}

impl std::error::Error for Stop {}

/// One problem with the partials.
pub fn problem(why: impl Into<String>) -> anyhow::Error {
    Stop::Problems(vec![why.into()]).into()
}

/// A partial's read error as merge stops on it (`name`: the file, when the words lack it).
pub fn read_error(name: &str, e: ReadError) -> anyhow::Error {
    match e {
        ReadError::Bad(why) => problem(why),
        ReadError::TooManyOpen => Stop::TooManyOpen(name.to_string()).into(),
    }
}

/// What is wrong with `p` when its seal is ([`Partial::check`]), naming it.
pub fn seal_problem(p: &Partial) -> Result<Option<String>, Stop> {
    match p.check() {
        Ok(()) => Ok(None),
        Err(ReadError::Bad(why)) => Ok(Some(format!("`{}` {why}", p.name))),
        Err(ReadError::TooManyOpen) => Err(Stop::TooManyOpen(p.name.clone())),
    }
}

/// Every partial's seal checked, where its entries were not read to their end.
pub fn check_all(partials: &[Partial]) -> anyhow::Result<()> {
    for p in partials {
        if let Some(why) = seal_problem(p)? {
            return Err(problem(why));
        }
    }
    Ok(())
}

/// The first partial's run, in the shape of its command's.
pub fn run_of<T: serde::de::DeserializeOwned>(partials: &[Partial]) -> anyhow::Result<T> {
    decode(&partials[0], "its run", partials[0].header.run.clone())
}

pub fn damaged(p: &Partial, why: &str) -> anyhow::Error {
    problem(format!("`{}` is damaged: {why}", p.name))
}

/// An entry of a kind the partial's command never writes (a job's record in a comparison's
/// partial, any job in a sweep's): the file was not made by its shard as it is.
pub fn foreign(p: &Partial, item: &Item, command: &str) -> anyhow::Error {
    let kind = match item {
        Item::Job(_) => "a job's record",
        Item::Change(_) | Item::Record(_) => "a changed job",
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
pub fn not_replayed(p: &Partial, item: Item, command: &str) -> anyhow::Result<NotReplayed> {
    match item {
        Item::Error(m) => Ok(NotReplayed::Error(m)),
        Item::Invalid(text) => Ok(NotReplayed::Invalid(text)),
        Item::LeftOut(text) => Ok(NotReplayed::LeftOut(text)),
        item => Err(foreign(p, &item, command)),
    }
}

/// A part of `p` in the shape its command gives it.
pub fn decode<T: serde::de::DeserializeOwned>(p: &Partial, what: &str, value: serde_json::Value) -> anyhow::Result<T> {
    serde_json::from_value(value).map_err(|e| damaged(p, &format!("{what}: {e}")))
}

/// Every partial's totals, in the shape `T` of its command, to `add`, one partial at a
/// time (a sweep's are megabytes each: merge holds one partial's beside the running
/// totals, whatever N). Each is checked first: its numbers ([`Counts`]: successes within
/// trials, and every partial's together within their types: [`Sums`]), then `check`, what
/// its command knows (`Err`: the words after the file's name). Every partial is checked,
/// and every problem said, before merge stops; `add` is not called past the first. `add`
/// may find a problem too, in what only adding reads (`Err`: the words after the name).
/// Returns every partial's numbers added up, for what the merge adds besides the totals.
pub fn add_totals<T: serde::de::DeserializeOwned>(
    partials: &[Partial],
    check: impl Fn(&Counts) -> Result<(), String>,
    mut add: impl FnMut(T, bool) -> Result<(), String>,
) -> anyhow::Result<Sums> {
    let mut problems = Vec::new();
    let mut sums = Sums::default();
    for (place, p) in partials.iter().enumerate() {
        let counts: Counts = match p.totals() {
            Ok(c) => c,
            Err(ReadError::Bad(why)) => {
                problems.push(why);
                continue;
            }
            Err(limit) => return Err(read_error(&p.name, limit)),
        };
        if let Err(why) = counts.check().and_then(|()| check(&counts)) {
            problems.push(format!("`{}` {why}", p.name));
            continue;
        }
        if let Err(o) = sums.add(&counts, place) {
            // The partial that holds the impossible number, not the one that came after it.
            let named = o.partial.map_or(&p.name, |at| &partials[at].name);
            problems.push(format!("`{named}` {}", o.why));
            continue;
        }
        match p.totals::<T>() {
            Ok(t) if problems.is_empty() => {
                if let Err(why) = add(t, p.end.used_given) {
                    problems.push(format!("`{}` {why}", p.name));
                }
            }
            Ok(_) => {}
            Err(ReadError::Bad(why)) => problems.push(why),
            Err(limit) => return Err(read_error(&p.name, limit)),
        }
    }
    if problems.is_empty() {
        Ok(sums)
    } else {
        Err(Stop::Problems(problems).into())
    }
}

/// [`add_totals`] of a replay's or a comparison's totals ([`Folded`]), which adding cannot
/// refuse.
pub fn add_folded(partials: &[Partial], mut add: impl FnMut(Folded, bool)) -> anyhow::Result<()> {
    add_totals(
        partials,
        |_| Ok(()),
        |t: Folded, used| {
            add(t, used);
            Ok(())
        },
    )
    .map(drop)
}

/// Every entry of every partial, in the source's order, to `f` until it returns `false`
/// ([`streams::for_each_entry`]); then the seals of those whose entries were not read to
/// their end (`f` stopped early).
pub fn for_each_entry(
    partials: &[Partial],
    records: bool,
    f: impl FnMut(&Partial, Entry) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    streams::for_each_entry(partials, records, f).map_err(|e| match e.downcast::<StreamError>() {
        Ok(e) => stream_error(e),
        Err(e) => e,
    })?;
    check_all(partials)
}

/// What stopped the merge of the entries, as merge says it: a problem with the partials
/// (exit 3), too many files open (exit 1, [`Stop::TooManyOpen`]), a temporary file of the
/// rounds that cannot be used (exit 1, with what to do).
pub fn stream_error(e: StreamError) -> anyhow::Error {
    match e {
        StreamError::Bad(why) => problem(why),
        StreamError::TooManyOpen(name) => Stop::TooManyOpen(name).into(),
        e @ (StreamError::TempDir { .. } | StreamError::Round { .. }) => CliError::failed(e.to_string())
            .with_hint("set TMPDIR to a directory with room to write")
            .into(),
        e @ StreamError::RoundChanged => anyhow::Error::msg(e.to_string()),
        StreamError::RoundRead(e) => e.into(),
    }
}

/// `-o FORMAT` of a command that has no such output (exit 2).
pub fn not_an_output(output: MergeOutput, command: &str, formats: &str) -> anyhow::Error {
    use clap::ValueEnum;
    let name = output
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    CliError::usage(format!("`-o {name}` is not an output of `{command}`: give {formats}")).into()
}

/// Why the shards' `--backtest-at` has no answer from the merged trials: one process's
/// refusal (the same usage error, exit 2), said of the shards' flag, since merge was given
/// none, and what to do about it: run the shards again.
pub fn backtest_refused(refused: &NoAnswer, at: Option<&str>) -> anyhow::Error {
    shards_backtest_refusal(refused, at.unwrap_or_default()).into()
}

/// The missing queue an entry is the first job of, as a replay hands it on.
pub fn missing(queue: Option<String>) -> Option<Fallback> {
    queue.map(Fallback::Missing)
}

/// A database's export, as the command says it after its answer: `history`'s summary over
/// every shard's counts. The rows left out in all.
pub fn lookout_summary(ctx: &mut Context, partials: &[Partial]) -> anyhow::Result<u64> {
    let mut queue = None;
    let mut totals = ExportTotals::default();
    for p in partials {
        if let Some(l) = &p.end.lookout {
            queue = Some(l.queue.as_str());
            totals.add(&l.totals);
        }
    }
    if let Some(queue) = queue {
        write_summary(ctx.err, Some(queue), &totals)?;
    }
    Ok(totals.left_out())
}
