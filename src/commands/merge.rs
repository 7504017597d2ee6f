//! `retryctl merge`: the partial results of a sharded `simulate`, `tune` or `suggest`
//! (docs/past-one-machine.md), added up into what the command prints unsharded, byte for byte
//! (`suggest`'s shards learn; its merge proposes and compares, `suggest::merge`).
//!
//! Load (each partial's header and end, checked on its own: `replay::partial`, its seal
//! when its entries have been read, each file read once; a file whose seal is wrong is said
//! first, whatever else the merge found: [`damaged_first`]; then together:
//! one fingerprint, one history, the same settings in every header, the shards 0..N−1 once
//! each, and no job of a directory given by two of its files, each copy replayed by the shard
//! whose range holds it: [`twice`], `replay::shard_ids`) → the fold the command itself runs
//! (`replay::run::{ReplayFold, CompareFold}`, `tune::sweep::SweepFold`), given every shard's
//! totals, one partial at a time, each checked as numbers first (`replay::partial::counts`),
//! and then every entry in the source's order
//! (`replay::partial::streams`: a merge of the shards' streams by position, in rounds through
//! temporary files past [`FAN_IN`] partials, a position met in two partials refused: a job is
//! one shard's; what stops it worded here: [`stream_error`]) → the command's own ending
//! (`simulate::conclude`, `tune::finish`). Must not: read a partial's bytes or merge their
//! entries itself (that is `replay::partial`), or count, rank or render itself: what would
//! differ from one process is then nothing.
//!
//! Every problem with the partials, whichever step finds it, is said as `error: …` and closed
//! by `error: cannot merge: …` (exit 3); a file that cannot be opened because too many are
//! open is the machine's limit, not the input's fault: exit 1, with the hint to raise it.
//!
//! Decisions docs/past-one-machine.md leaves open:
//! - stdout is held until the whole answer is made: a partial found damaged halfway (an entry
//!   that does not read, its seal at its end) prints nothing on stdout (exit 3). What the
//!   replay says on stderr (its messages, capped as one process caps them) is held too, and
//!   said once every entry is read: nothing a damaged file made the fold say is said.
//! - the exit status is the unsharded command's (3 for entries not replayed, 1 for failed
//!   expectations, `--exit-code`, `--strict`: as the shards' command line gave them); the
//!   shards themselves exit 0 once their partial is written.
//! - when the merged trials leave the shards' `--backtest-at` without an answer, the exit
//!   status is one process's (2), and the words are its words said of the shards' flag, with
//!   what to do (run the shards again): merge itself was given no `--backtest-at`.
//! - what each shard said of its own source (a Lookout export's summary, the progress bar)
//!   stays in its own log: merge prints the replay's answer and messages, not the shards'.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;

use crate::app::Context;
use crate::cli::{MergeArgs, MergeOutput, SuggestOutput};
use crate::commands::replay::checks::{parse_backtest_at, parse_max_compute, shards_backtest_refusal};
use crate::commands::replay::held::Held;
use crate::commands::simulate::{compare_code, conclude, replay_code, SimulateRun};
use crate::commands::suggest::{
    self as suggest_command, Shards as SuggestShards, SuggestFold, SuggestRun, Unmergeable,
};
use crate::commands::tune::{self as tune_command, TuneRun};
use crate::error::{CliError, ExitCode};
use crate::output::history::write_summary;
use crate::output::sinks::sink;
use crate::output::stderr::Stderr;
use crate::output::text::shown as escaped;
use crate::output::tune::StderrListener;
use crate::output::Format;
use crate::replay::partial::counts::{Counts, Sums};
use crate::replay::partial::streams::{self, open_files_limit, StreamError, FAN_IN};
use crate::replay::partial::{decode_learned, Entry, Item, Partial, ReadError, ShardOut};
use crate::replay::run::{CompareFold, Fallback, Folded, NoAnswer, NotReplayed, Options, ReplayFold};
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Twice;
use crate::replay::source::ExportTotals;
use crate::suggest::learn::ShardLearning;
use crate::tune::sweep::{SweepFold, Tallies};

/// Why merge stops before its answer: each problem is said (`error: …`), then the closing
/// line, `cannot merge: …`, whichever step found them.
#[derive(Debug)]
enum Stop {
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
fn problem(why: impl Into<String>) -> anyhow::Error {
    Stop::Problems(vec![why.into()]).into()
}

/// A partial's read error as merge stops on it (`name`: the file, when the words lack it).
fn read_error(name: &str, e: ReadError) -> anyhow::Error {
    match e {
        ReadError::Bad(why) => problem(why),
        ReadError::TooManyOpen => Stop::TooManyOpen(name.to_string()).into(),
    }
}

pub fn run(ctx: &mut Context, args: &MergeArgs) -> anyhow::Result<ExitCode> {
    let e = match merge(ctx, args) {
        Ok(code) => return Ok(code),
        Err(e) => e,
    };
    let stop = e.downcast::<Stop>()?;
    let (problems, closing) = match stop {
        Stop::Problems(problems) => {
            let n = problems.len();
            let closing = CliError::invalid(format!(
                "cannot merge: {} (nothing was printed)",
                if n == 1 {
                    "1 problem above".to_string()
                } else {
                    format!("{n} problems above")
                }
            ));
            (problems, closing)
        }
        Stop::TooManyOpen(name) => {
            let limit = open_files_limit().map_or(String::new(), |l| format!(" (this process may open {l})"));
            (
                vec![format!("`{name}` cannot be opened: too many files are open{limit}")],
                CliError::failed("cannot merge: 1 problem above (nothing was printed)").with_hint(format!(
                    "raise the limit of open files (`ulimit -n 1024`) and merge again: merge keeps at most {FAN_IN} partials open at once, and fewer under a lower limit"
                )),
            )
        }
    };
    for p in &problems {
        writeln!(ctx.err, "{}: {}", ctx.style.error("error"), escaped(p))?;
    }
    Err(closing.into())
}

fn merge(ctx: &mut Context, args: &MergeArgs) -> anyhow::Result<ExitCode> {
    // Each file's problem in the order given: one that does not open, or (once one does
    // not) one whose seal is wrong.
    let mut opened: Vec<Result<Partial, String>> = Vec::new();
    // What each partial's run says unlike the first's (compared as each is read: only the
    // first keeps its run, which names every candidate of a sweep).
    let mut runs_differ = Vec::new();
    for path in &partial_paths(ctx, &args.partials)? {
        match Partial::open(path) {
            Ok(mut p) => {
                if let Some(first) = opened.iter().find_map(|o| o.as_ref().ok()) {
                    runs_differ.push(run_differs(first, &p));
                    p.header.run = serde_json::Value::Null;
                } else {
                    runs_differ.push(None);
                }
                opened.push(Ok(p));
            }
            Err(ReadError::Bad(why)) => opened.push(Err(format!("`{}` {why}", path.display()))),
            Err(ReadError::TooManyOpen) => return Err(Stop::TooManyOpen(path.display().to_string()).into()),
        }
    }
    if opened.iter().any(Result::is_err) {
        let mut problems = Vec::new();
        for p in &opened {
            match p {
                Err(why) => problems.push(why.clone()),
                Ok(p) => problems.extend(seal_problem(p)?),
            }
        }
        return Err(Stop::Problems(problems).into());
    }
    let mut partials: Vec<Partial> = opened.into_iter().flatten().collect();
    let problems = together(&partials, &runs_differ);
    if !problems.is_empty() {
        return Err(damaged_first(&partials, Stop::Problems(problems).into()));
    }
    let problems = twice(&partials).map_err(|e| damaged_first(&partials, e))?;
    if !problems.is_empty() {
        return Err(damaged_first(&partials, Stop::Problems(problems).into()));
    }
    let merged = merge_run(ctx, args, &mut partials);
    merged.map_err(|e| damaged_first(&partials, e))
}

/// What is wrong with `p` when its seal is ([`Partial::check`]), naming it.
fn seal_problem(p: &Partial) -> Result<Option<String>, Stop> {
    match p.check() {
        Ok(()) => Ok(None),
        Err(ReadError::Bad(why)) => Ok(Some(format!("`{}` {why}", p.name))),
        Err(ReadError::TooManyOpen) => Err(Stop::TooManyOpen(p.name.clone())),
    }
}

/// `e`, unless some partial's seal is wrong: then what is wrong with each such file, in
/// the words a file read through gets ([`Partial::check`]). A partial is read once, its
/// seal checked at its end: what the merge found wrong before that (its totals, an entry,
/// a header unlike the others) may be what a damaged file says.
fn damaged_first(partials: &[Partial], e: anyhow::Error) -> anyhow::Error {
    if matches!(e.downcast_ref::<Stop>(), Some(Stop::TooManyOpen(_))) {
        return e;
    }
    let mut problems = Vec::new();
    for p in partials {
        match seal_problem(p) {
            Ok(why) => problems.extend(why),
            Err(stop) => return stop.into(),
        }
    }
    if problems.is_empty() {
        e
    } else {
        Stop::Problems(problems).into()
    }
}

/// Every partial's seal checked, where its entries were not read to their end.
fn check_all(partials: &[Partial]) -> anyhow::Result<()> {
    for p in partials {
        if let Some(why) = seal_problem(p)? {
            return Err(problem(why));
        }
    }
    Ok(())
}

/// A command whose shards merge (docs/past-one-machine.md): the name its partials' run
/// gives, and how merge ends it. The one place merge reaches into the replay verbs.
struct Mergeable {
    command: &'static str,
    end: fn(&mut Context, &MergeArgs, &mut [Partial]) -> anyhow::Result<ExitCode>,
}

/// Every command that writes `-o partial`, each ended as one process ends it.
const MERGEABLE: [Mergeable; 3] = [
    Mergeable {
        command: "simulate",
        end: merge_simulate,
    },
    Mergeable {
        command: "tune",
        end: merge_tune,
    },
    Mergeable {
        command: "suggest",
        end: merge_suggest,
    },
];

/// The merge of partials found to be of one run: the first says which command's.
fn merge_run(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
    let command = partials[0].header.run.get("command").and_then(|c| c.as_str());
    match MERGEABLE.iter().find(|m| Some(m.command) == command) {
        Some(m) => (m.end)(ctx, args, partials),
        None => Err(damaged(&partials[0], "its run names no command this retryctl merges")),
    }
}

/// The first partial's run, in the shape of its command's.
fn run_of<T: serde::de::DeserializeOwned>(partials: &[Partial]) -> anyhow::Result<T> {
    decode(&partials[0], "its run", partials[0].header.run.clone())
}

/// The partials named: a file as given; a directory's files that begin as a partial does,
/// by name (hidden files, such as a shard's result still being written, left out; any other
/// file said on stderr and skipped). A symbolic link is followed to its file, wherever that
/// is; one that leads to no file (broken, a directory) is said and skipped. A directory
/// holding none is an error (exit 3).
fn partial_paths(ctx: &mut Context, given: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in given {
        if !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let cannot = |e: std::io::Error| {
            CliError::invalid(format!(
                "cannot read the directory `{}`: {}",
                path.display(),
                crate::input::io_reason(&e)
            ))
        };
        let mut names: Vec<(PathBuf, bool)> = std::fs::read_dir(path)
            .map_err(cannot)?
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|e| {
                let kind = e.file_type().ok()?;
                (kind.is_file() || kind.is_symlink()).then(|| (e.path(), kind.is_symlink()))
            })
            .collect();
        names.sort();
        let before = out.len();
        for (file, link) in names {
            // A link is followed (a directory of links to the shards' results is a way to
            // gather them); one that leads to no file is said, never silently missing.
            if link {
                if let Some(why) = not_a_file(&file) {
                    writeln!(
                        ctx.err,
                        "note: skipped `{}`: {why}",
                        escaped(&file.display().to_string())
                    )?;
                    continue;
                }
            }
            let mut start = [0u8; 40];
            let n = File::open(&file)
                .and_then(|mut f| {
                    use std::io::Read;
                    f.read(&mut start)
                })
                .unwrap_or(0);
            if crate::replay::partial::looks_like_partial(&start[..n]) {
                out.push(file);
            } else {
                writeln!(
                    ctx.err,
                    "note: skipped `{}`: not a partial result",
                    escaped(&file.display().to_string())
                )?;
            }
        }
        if out.len() == before {
            return Err(CliError::invalid(format!(
                "no partial results in the directory `{}` (`simulate … --shard I/N -o partial` writes them)",
                path.display()
            ))
            .into());
        }
    }
    Ok(out)
}

/// Why the symbolic link `link` leads to no file merge can read (`None`: it does).
fn not_a_file(link: &std::path::Path) -> Option<String> {
    let to = match std::fs::read_link(link) {
        Ok(to) => format!("a symbolic link to `{}`", escaped(&to.display().to_string())),
        Err(_) => "a symbolic link".to_string(),
    };
    match std::fs::metadata(link) {
        Ok(m) if m.is_file() => None,
        Ok(m) if m.is_dir() => Some(format!("{to}, a directory")),
        Ok(_) => Some(format!("{to}, which is not a file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!("{to}, which does not exist")),
        Err(e) => Some(format!("{to}, which cannot be read: {}", crate::input::io_reason(&e))),
    }
}

/// A value of a run's setting, as a message shows it (short ones only).
fn shown(v: Option<&serde_json::Value>) -> Option<String> {
    let text = match v {
        None => "nothing".to_string(),
        Some(v) => format!("`{v}`"),
    };
    (text.chars().count() <= 60).then_some(text)
}

/// The first setting of `p`'s run (its header's `run`) that is not the first partial's: the
/// fingerprint covers the inputs, but a partial sealed again after an edit keeps its
/// fingerprint, and merge would print the first partial's settings as the whole run's.
fn run_differs(first: &Partial, p: &Partial) -> Option<String> {
    let (a, b) = (&first.header.run, &p.header.run);
    if a == b {
        return None;
    }
    let (Some(am), Some(bm)) = (a.as_object(), b.as_object()) else {
        return Some(format!(
            "`{}` and `{}` do not hold the same run (their headers' `run` differ)",
            p.name, first.name
        ));
    };
    let keys = am.keys().chain(bm.keys().filter(|k| !am.contains_key(*k)));
    for key in keys {
        let (x, y) = (bm.get(key), am.get(key));
        if x == y {
            continue;
        }
        let values = match (shown(x), shown(y)) {
            (Some(x), Some(y)) => format!(": {x} in `{}`, {y} in `{}`", p.name, first.name),
            _ => String::new(),
        };
        return Some(format!(
            "`{}` and `{}` do not hold the same run: their headers' `run.{key}` differ{values} (the shards of one run share every setting: was one edited?)",
            p.name, first.name
        ));
    }
    None
}

/// What is wrong with `partials` as one set: not of one run (fingerprint, retryctl, the
/// settings their headers hold), not of one history, not the shards 0..N−1 once each.
/// `runs_differ`: [`run_differs`] of each against the first.
fn together(partials: &[Partial], runs_differ: &[Option<String>]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(first) = partials.first() else {
        return problems;
    };
    let shard = |p: &Partial| format!("{}/{}", p.header.shard.index, p.header.shard.count);
    for (p, run) in partials.iter().zip(runs_differ).skip(1) {
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
        } else if let Some(run) = run {
            problems.push(run.clone());
        } else if p.end.source != first.end.source {
            problems.push(format!(
                "`{}` was made from another history than `{}` (the history's digest differs: was it changed between the shards?)",
                p.name, first.name
            ));
        } else if p.end.lookout.as_ref().map(|l| &l.queue) != first.end.lookout.as_ref().map(|l| &l.queue) {
            problems.push(format!(
                "`{}` and `{}` do not hold the same run: their ends' `lookout.queue` differ (the shards of one run read one queue: was one edited?)",
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

/// The jobs two files of a directory give, each replayed by the shard whose range holds its
/// copy (one process replays the first and refuses the second, docs/simulate.md): found from
/// the job ids each shard of a directory lists, read in the source's order (shard after
/// shard), before anything is printed.
fn twice(partials: &[Partial]) -> anyhow::Result<Vec<String>> {
    let mut in_order: Vec<&Partial> = partials.iter().collect();
    in_order.sort_by_key(|p| p.header.shard.index);
    let mut twice = Twice::default();
    for p in in_order {
        if let Some(ids) = p.job_ids().map_err(|e| read_error(&p.name, e))? {
            let ShardOut { index, count } = p.header.shard;
            twice.add(Shard { index, count }, ids);
        }
    }
    Ok(twice.problems())
}

fn damaged(p: &Partial, why: &str) -> anyhow::Error {
    problem(format!("`{}` is damaged: {why}", p.name))
}

/// An entry of a kind the partial's command never writes (a job's record in a comparison's
/// partial, any job in a sweep's): the file was not made by its shard as it is.
fn foreign(p: &Partial, item: &Item, command: &str) -> anyhow::Error {
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
fn not_replayed(p: &Partial, item: Item, command: &str) -> anyhow::Result<NotReplayed> {
    match item {
        Item::Error(m) => Ok(NotReplayed::Error(m)),
        Item::Invalid(text) => Ok(NotReplayed::Invalid(text)),
        Item::LeftOut(text) => Ok(NotReplayed::LeftOut(text)),
        item => Err(foreign(p, &item, command)),
    }
}

/// A part of `p` in the shape its command gives it.
fn decode<T: serde::de::DeserializeOwned>(p: &Partial, what: &str, value: serde_json::Value) -> anyhow::Result<T> {
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
fn add_totals<T: serde::de::DeserializeOwned>(
    partials: &[Partial],
    check: impl Fn(&Counts) -> Result<(), String>,
    mut add: impl FnMut(T, bool) -> Result<(), String>,
) -> anyhow::Result<Sums> {
    let mut problems = Vec::new();
    let mut sums = Sums::default();
    for p in partials {
        let counts: Counts = match p.totals() {
            Ok(c) => c,
            Err(ReadError::Bad(why)) => {
                problems.push(why);
                continue;
            }
            Err(limit) => return Err(read_error(&p.name, limit)),
        };
        if let Err(why) = counts
            .check()
            .and_then(|()| check(&counts))
            .and_then(|()| sums.add(&counts))
        {
            problems.push(format!("`{}` {why}", p.name));
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
fn add_folded(partials: &[Partial], mut add: impl FnMut(Folded, bool)) -> anyhow::Result<()> {
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
fn for_each_entry(
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
fn stream_error(e: StreamError) -> anyhow::Error {
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
fn not_an_output(output: MergeOutput, command: &str, formats: &str) -> anyhow::Error {
    use clap::ValueEnum;
    let name = output
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    CliError::usage(format!("`-o {name}` is not an output of `{command}`: give {formats}")).into()
}

/// A sharded suggest's partials: their learning folded in shard order (byte ranges: the
/// source's, so the signatures kept are the first met), then the rest of suggest, as one
/// process does it (`suggest::merge`: it reads the history again for its comparison).
fn merge_suggest(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
    let run: SuggestRun = run_of(partials)?;
    let output = match args.output {
        MergeOutput::Table => SuggestOutput::Table,
        MergeOutput::Json => SuggestOutput::Json,
        MergeOutput::Yaml => SuggestOutput::Yaml,
        MergeOutput::Html => SuggestOutput::Html,
        MergeOutput::Markdown => SuggestOutput::Markdown,
        MergeOutput::Policy => SuggestOutput::Policy,
        MergeOutput::Jsonl => {
            return Err(not_an_output(
                args.output,
                "suggest",
                "table, json, yaml, html, markdown or policy",
            ))
        }
    };
    // A shard of suggest lists nothing to stream: its seal is checked here, before its totals
    // are read.
    check_all(partials)?;
    partials.sort_by_key(|p| p.header.shard.index);
    let mut fold = SuggestFold::default();
    let mut sums = add_totals(partials, |_| Ok(()), |t: ShardLearning, _| fold.add(t))?;
    // What pass 1 could not read, pass 2 says: a shard's entries are only what a later one
    // learned past its first 10,000 signatures, added once the first 10,000 are known.
    for p in partials.iter() {
        add_past(p, &mut sums, &mut fold)?;
    }
    let first = &partials[0];
    let shards = SuggestShards {
        count: first.header.shard.count,
        fingerprint: &first.header.fingerprint,
        source: first.end.source.as_deref(),
    };
    let name = first.name.clone();
    suggest_command::merge(ctx, &run, fold, output, shards).map_err(|e| match e.downcast::<Unmergeable>() {
        Ok(why) => problem(format!("`{name}` {why}")),
        Err(e) => e,
    })
}

/// A suggest shard's entries (docs/past-one-machine.md): its counts of the signatures past
/// its first 10,000, each checked as numbers with the totals' sums (`sums`, every partial's
/// so far), then added where one process counts it. Any other entry is refused: a shard of
/// suggest says nothing of what it could not read.
fn add_past(p: &Partial, sums: &mut Sums, fold: &mut SuggestFold) -> anyhow::Result<()> {
    let mut entries = p.entries().map_err(|e| read_error(&p.name, e))?;
    while let Some(raw) = entries.next_raw() {
        let raw = raw.map_err(problem)?;
        let counts: Counts = decode_learned(&p.name, raw.number, &raw.json).map_err(problem)?;
        counts
            .check()
            .and_then(|()| sums.add(&counts))
            .map_err(|why| problem(format!("`{}` {why} (entry {})", p.name, raw.number)))?;
        let past = decode_learned(&p.name, raw.number, &raw.json).map_err(problem)?;
        fold.add_past(past)
            .map_err(|why| damaged(p, &format!("entry {}: {why}", raw.number)))?;
    }
    Ok(())
}

/// The shards' `--backtest-at`, as their run records it (`p`: the partial it is read from).
fn backtest_at(p: &Partial, at: Option<&str>) -> anyhow::Result<Option<crate::model::failure_history::Timestamp>> {
    // What the shard's own parse accepted: another value was written in by hand.
    at.map(parse_backtest_at)
        .transpose()
        .map_err(|_| damaged(p, "its run's `backtestAt` is not an RFC 3339 time"))
}

/// Why the shards' `--backtest-at` has no answer from the merged trials: one process's
/// refusal (the same usage error, exit 2), said of the shards' flag, since merge was given
/// none, and what to do about it: run the shards again.
fn backtest_refused(refused: &NoAnswer, at: Option<&str>) -> anyhow::Error {
    shards_backtest_refusal(refused, at.unwrap_or_default()).into()
}

/// The missing queue an entry is the first job of, as a replay hands it on.
fn missing(queue: Option<String>) -> Option<Fallback> {
    queue.map(Fallback::Missing)
}

/// A sharded simulate's partials: the shards' totals and entries folded as one process folds
/// them, into the sink of `-o`, and its ending (`simulate::conclude`).
fn merge_simulate(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
    if args.output == MergeOutput::Policy {
        return Err(not_an_output(
            args.output,
            "simulate",
            "table, json, yaml, jsonl, html or markdown",
        ));
    }
    let run: SimulateRun = run_of(partials)?;
    let run = &run;
    let format = Format::from(args.output);
    let options = Options {
        backtest_at: backtest_at(&partials[0], run.backtest_at.as_deref())?,
        shard: None,
    };
    let mut held = Held::for_stdout(&mut *ctx.out, ctx.out_is_stdout)?;
    // The replay's messages too, until every partial's seal is checked (at its last
    // entry): a damaged file's are not said.
    let mut said = Vec::new();
    let stderr = Stderr::new(&mut said, ctx.style, None, run.retry_policy);
    let mut sink = sink(format, run.mode(), &mut held, stderr);
    let command = if run.compare { "simulate --baseline" } else { "simulate" };
    let (code, used_given, refused) = if run.compare {
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
            compare_code(&done.comparison, run.exit_code),
            done.used_given,
            done.refused,
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
        (replay_code(&done.summary, run.strict), done.used_given, done.refused)
    };
    drop(sink);
    ctx.err.write_all(&said)?;
    if let Some(refused) = refused {
        return Err(backtest_refused(&refused, run.backtest_at.as_deref()));
    }
    conclude(ctx, run, Some(held), None, used_given)?;
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

/// A sharded tune's partials: the shards' tallies folded as one process folds them, then its
/// ranking and output (`tune::finish`).
fn merge_tune(ctx: &mut Context, args: &MergeArgs, partials: &mut [Partial]) -> anyhow::Result<ExitCode> {
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
    let options = Options {
        backtest_at: backtest_at(&partials[0], run.backtest_at.as_deref())?,
        shard: None,
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
    // The replay's messages held until every partial's seal is checked, as `merge_simulate`.
    let mut said = Vec::new();
    let mut listener = StderrListener(Stderr::new(&mut said, ctx.style, None, run.retry_policy));
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
    let swept = fold.finish(&options);
    listener.0.finish()?;
    drop(listener);
    ctx.err.write_all(&said)?;
    let swept = match swept {
        Ok(s) => s,
        Err(refused) => return Err(backtest_refused(&refused, run.backtest_at.as_deref())),
    };
    let code = tune_command::finish(ctx, swept, run, max_compute, format, None)?;
    lookout_summary(ctx, partials)?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::MERGEABLE;

    /// Every verb whose `-o` offers `partial` is one merge ends, and no other: a verb given
    /// shards and forgotten here (or the reverse) fails this test.
    #[test]
    fn the_verbs_that_write_a_partial_are_the_ones_merge_ends() {
        let mut cmd = crate::cli::command();
        cmd.build();
        let mut writing: Vec<String> = cmd
            .get_subcommands()
            .filter(|sub| {
                sub.get_arguments().any(|a| {
                    a.get_id() == "output" && a.get_possible_values().iter().any(|v| v.get_name() == "partial")
                })
            })
            .map(|sub| sub.get_name().to_string())
            .collect();
        writing.sort();
        let mut merged: Vec<String> = MERGEABLE.iter().map(|m| m.command.to_string()).collect();
        merged.sort();
        assert_eq!(writing, merged);
    }
}
