//! `retryctl merge`: the partial results of a sharded `simulate`, `tune` or `suggest`
//! (docs/past-one-machine.md), added up into what the command prints unsharded, byte for byte
//! (`suggest`'s shards learn; its merge proposes and compares, `commands::suggest::shards::merge`).
//!
//! Load (each partial's header and end, checked on its own: `replay::partial`, its seal
//! when its entries have been read, each file read once; a file whose seal is wrong is said
//! first, whatever else the merge found: [`damaged_first`]; then together:
//! one fingerprint, one history, the same settings in every header, the shards 0..N−1 once
//! each, and no job of a directory given by two of its files, each copy replayed by the shard
//! whose range holds it: [`twice`], `replay::shard_ids`) → the command's own end of its
//! partials, which `commands::dispatch` hands over (`merged::End`: the verbs the verb table
//! marks mergeable): the fold the command itself runs (`replay::run::{ReplayFold,
//! CompareFold}`, `tune::sweep::SweepFold`), given every shard's totals, one partial at a
//! time, each checked as numbers first (`replay::partial::counts`), then every entry in the
//! source's order (`replay::partial::streams`: a merge of the shards' streams by position, in
//! rounds through temporary files past [`FAN_IN`] partials, a position met in two partials
//! refused: a job is one shard's; what stops it worded in `commands::replay::merged`), then
//! the command's own ending. Must not: import a verb, read a partial's bytes or merge their
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
use crate::cli::MergeArgs;
use crate::commands::replay::merged::{problem, read_error, seal_problem, End, Stop};
use crate::error::{CliError, ExitCode};
use crate::output::text::shown as escaped;
use crate::replay::partial::streams::{open_files_limit, FAN_IN};
use crate::replay::partial::{Partial, ReadError, ShardOut};
use crate::replay::shard::Shard;
use crate::replay::shard_ids::Twice;

/// `merge` of `args`' partials, each command's ended by `ends` (`commands::dispatch`'s).
pub fn run(ctx: &mut Context, args: &MergeArgs, ends: fn(&str) -> Option<End>) -> anyhow::Result<ExitCode> {
    let e = match merge(ctx, args, ends) {
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

fn merge(ctx: &mut Context, args: &MergeArgs, ends: fn(&str) -> Option<End>) -> anyhow::Result<ExitCode> {
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
    let merged = merge_run(ctx, args, &mut partials, ends);
    merged.map_err(|e| damaged_first(&partials, e))
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

/// The merge of partials found to be of one run: the first says which command's, and that
/// command ends it.
fn merge_run(
    ctx: &mut Context,
    args: &MergeArgs,
    partials: &mut [Partial],
    ends: fn(&str) -> Option<End>,
) -> anyhow::Result<ExitCode> {
    let command = partials[0].header.run.get("command").and_then(|c| c.as_str());
    match command.and_then(ends) {
        Some(end) => end(ctx, args, partials),
        None => Err(problem(format!(
            "`{}` is damaged: its run names no command this retryctl merges",
            partials[0].name
        ))),
    }
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
