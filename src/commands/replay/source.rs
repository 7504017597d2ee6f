//! Where a replay's histories come from, for `simulate`, `tune` and `suggest` alike: a file,
//! a directory or stdin (`--history`), or Lookout's database (`--lookout-db DSN --queue Q`
//! with its filters, docs/serve.md), and with `--baseline-from-cluster` the baseline read
//! from the same database. A verb [`open`]s the source, drives its replay over
//! [`Opened::source`], then [`End::finish`]es: open → drive → finish.
//!
//! Owns: the checks between these flags, the Lookout connection and filter, an empty history
//! (no entry with content before the first is handed over, so nothing is written: exit 3 with
//! the source and its filters named, and for Lookout a hint of where the queue's jobs are;
//! `--allow-empty` lets it through; a shard or a partial is never empty, its merge decides),
//! and the `history` summary on stderr after a database replay (a connection lost midway:
//! what was replayed is printed, then the error, exit 4; `--strict` with rows left out: exit
//! 1). Must not: replay, count or render (that is the verb's, through `replay` and `output`).

use std::sync::{Arc, Mutex};

use crate::app::Context;
use crate::cli::ReplayArgs;
use crate::connection::parse_timeout;
use crate::engine::simulator::Simulator;
use crate::error::{CliError, ExitCode};
use crate::lookout::executor_text::Hints;
use crate::lookout::export_source::{ExportSource, ExportState};
use crate::lookout::{cluster, db, Export};
use crate::output::history::write_summary;
use crate::output::mode::Baseline;
use crate::replay::baseline_from::BaselineFrom;
use crate::replay::json_lines::Scratch;
use crate::replay::partial::Lookout;
use crate::replay::source::{Body, Digest, Either, Entry, Files, HistorySource, OneQueue};

use super::lookout::{history_named, lookout_filter, no_job, no_job_in_lookout, now, FilterFlags, SET_LOOKOUT_DB};
use super::policy_set::load_from_cluster;
use super::sides::Sides;

/// A source with the entries read ahead of the replay handed out first.
pub struct ReadAhead<S> {
    ahead: std::collections::VecDeque<Entry>,
    source: S,
}

impl<S: HistorySource> Iterator for ReadAhead<S> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.ahead.pop_front().or_else(|| self.source.next())
    }
}

impl<S: HistorySource> HistorySource for ReadAhead<S> {
    fn progress(&self) -> crate::replay::source::Progress {
        self.source.progress()
    }

    fn bulk(&self) -> bool {
        self.source.bulk()
    }

    /// Never called after a read ahead: a shard's source is not read ahead ([`read_ahead`]).
    fn sift(&mut self, shard: crate::replay::shard::Shard) -> bool {
        self.source.sift(shard)
    }

    fn one_queue(&self) -> Option<OneQueue> {
        self.source.one_queue()
    }
}

/// Whether an entry holds something the replay reports: a job, or what could not be read
/// (an error, a row left out); blank lines and texts with no document do not.
fn has_content(entry: &Entry) -> bool {
    match &entry.body {
        Body::Lines(block) => block.lines().next().is_some(),
        Body::Empty => false,
        Body::Error(_) | Body::History(_) | Body::Invalid(_) | Body::LeftOut { .. } | Body::Copied(_) => true,
    }
}

/// What reading ahead does with an entry.
enum Ahead {
    /// It holds what the replay reports: the history is not empty.
    Content,
    /// Nothing to report (a text with no document): handed out first all the same.
    Nothing,
    /// Other queues' jobs alone (`--queue`): counted as left out, and dropped.
    OtherQueues,
}

/// `entry` read ahead with `--queue` over a source of every queue's jobs: content when it
/// holds a job of `queue` or a text that does not read (the replay reports it); other
/// queues' jobs alone are counted as left out, the queues they name added to `seen` (a few,
/// for the hint of an empty history).
fn ahead_of_queue(entry: &Entry, queue: &OneQueue, scratch: &mut Scratch, seen: &mut Vec<String>) -> Ahead {
    let mut note = |other: Option<&str>| {
        let other = other.unwrap_or_default();
        if seen.len() < 5 && !seen.iter().any(|s| s == other) {
            seen.push(other.to_string());
        }
    };
    match &entry.body {
        Body::Lines(block) => {
            let mut others = 0;
            for (n, _, line) in block.lines() {
                match scratch.decode(line, || n) {
                    Ok(h) if h.job.queue.as_deref() == Some(queue.name()) => return Ahead::Content,
                    Ok(h) => note(h.job.queue.as_deref()),
                    Err(_) => return Ahead::Content,
                }
                others += 1;
            }
            if others == 0 {
                return Ahead::Nothing;
            }
            queue.add_left_out(others);
            Ahead::OtherQueues
        }
        Body::History(h) if h.job.queue.as_deref() != Some(queue.name()) => {
            note(h.job.queue.as_deref());
            queue.add_left_out(1);
            Ahead::OtherQueues
        }
        _ => ahead_of(entry),
    }
}

/// `entry` read ahead with no `--queue` filter.
fn ahead_of(entry: &Entry) -> Ahead {
    if has_content(entry) {
        Ahead::Content
    } else {
        Ahead::Nothing
    }
}

/// Why a history is empty: nothing was read, or (with `--queue`) only other queues' jobs, a
/// few of whose queues it names.
struct Empty<S> {
    source: ReadAhead<S>,
    other_queues: Vec<String>,
}

/// `source` read up to its first entry with content, before anything is written (an empty
/// history is an error, docs/cli.md); `Err`: it ended with none, and what it read (texts
/// with no document; with `--queue`, other queues' jobs, counted) is left out. Not `checks`:
/// nothing is read ahead (a shard's source, [`checks_empty`]).
fn read_ahead<S: HistorySource>(mut source: S, checks: bool) -> Result<ReadAhead<S>, Empty<S>> {
    let mut read = std::collections::VecDeque::new();
    if !checks {
        return Ok(ReadAhead { ahead: read, source });
    }
    let queue = source.one_queue();
    let mut scratch = Scratch::default();
    let mut other_queues = Vec::new();
    while let Some(entry) = source.next() {
        let ahead = match &queue {
            Some(q) => ahead_of_queue(&entry, q, &mut scratch, &mut other_queues),
            None => ahead_of(&entry),
        };
        match ahead {
            Ahead::Content => {
                read.push_back(entry);
                return Ok(ReadAhead { ahead: read, source });
            }
            Ahead::Nothing => read.push_back(entry),
            // Left out by the replay anyway: never held, whatever their number.
            Ahead::OtherQueues => {}
        }
    }
    Err(Empty {
        source: ReadAhead {
            ahead: std::collections::VecDeque::new(),
            source,
        },
        other_queues,
    })
}

/// Whether `run` looks for an empty history: not for a shard or a partial (their merge
/// decides, docs/past-one-machine.md).
fn checks_empty(args: &ReplayArgs, partial: bool) -> bool {
    !partial && args.shard.is_none()
}

/// What the source is, for a partial result (docs/past-one-machine.md): what its fingerprint holds, and the
/// digest `merge` compares across shards.
#[derive(Debug, Default)]
pub struct About {
    /// The source, what selects its jobs (not the shard) and the settings its jobs get.
    pub source: serde_json::Value,
    /// Files: each file's name, size and modification time and the first and last 64 KiB;
    /// stdin: every byte read, set once it is read. Never for a database, whose statement
    /// (with its `--to`) the fingerprint holds.
    pub digest: Digest,
    /// A database's export: whether it ended early (a lost connection), which the command
    /// says after the driver; and its queue.
    pub export: Option<(Arc<Mutex<ExportState>>, String)>,
}

impl About {
    /// The source stopped before its end: what was replayed is not the whole history (a
    /// partial result must not say it is).
    pub fn interrupted(&self) -> bool {
        self.export
            .as_ref()
            .is_some_and(|(s, _)| s.lock().unwrap_or_else(|e| e.into_inner()).error.is_some())
    }

    /// What a database's export read and left out, for a partial's end.
    pub fn lookout(&self) -> Option<Lookout> {
        self.export.as_ref().map(|(s, queue)| Lookout {
            queue: queue.clone(),
            totals: s.lock().unwrap_or_else(|e| e.into_inner()).totals,
        })
    }
}

/// A file, a directory or stdin opened as the sides read it (their settings, `--queue`'s
/// jobs alone), and what a partial's fingerprint holds of it: the path, the settings its
/// jobs get, and how shards split it (docs/past-one-machine.md: a shard of one rule cannot
/// be merged with a shard of the other). `suggest`'s merge opens the shards' history again
/// through it, and finds their fingerprint with it.
pub struct FileSource {
    pub files: Files,
    pub one_queue: Option<OneQueue>,
    pub described: serde_json::Value,
}

impl FileSource {
    pub fn open(sides: &Sides, history: &std::path::Path) -> anyhow::Result<FileSource> {
        let settings = &sides.settings;
        let shards = if crate::replay::source::is_stream(history) {
            "fnv1a64 of the job id"
        } else {
            "byte ranges"
        };
        let queue = sides.spec.queue.as_deref();
        let described = serde_json::json!({
            "history": history.display().to_string(),
            "queue": queue,
            "settings": format!("{:?}", settings.applied()),
            "shards": shards,
        });
        let one_queue = queue.map(OneQueue::new);
        let files = Files::open(history, settings.base.clone(), settings.overrides.clone())?.only(one_queue.clone());
        Ok(FileSource {
            files,
            one_queue,
            described,
        })
    }
}

/// What `--queue` (`queue`) left out of a file, a directory or stdin (docs/simulate.md
/// "Inputs"): `n` jobs of other queues. `learned_only`: suggest's,
/// when it compared every queue (its proposal changes the cluster's categorizer): they were
/// left out of its learning only.
pub fn left_out_note(queue: &str, n: u64, learned_only: bool) -> String {
    let jobs = crate::engine::job_report::plural(n, "job", "jobs");
    match learned_only {
        false => format!("left out {jobs} of other queues than `{queue}` (`--queue`)"),
        true => format!(
            "learned from queue `{queue}` alone: {jobs} of other queues were compared, since the proposal changes the cluster's categorizer, and not learned from"
        ),
    }
}

/// An empty history (docs/cli.md): with `--queue`, no job of that queue, and the queues its
/// jobs are of (a misspelt name is then plain).
fn no_job_of(history: &std::path::Path, queue: Option<&str>, others: &[String], nothing: &str) -> CliError {
    let Some(queue) = queue else {
        return no_job(&history_named(history), None, nothing);
    };
    let e = CliError::invalid(format!(
        "no job in {} (queue `{queue}`): {nothing}",
        history_named(history)
    ));
    if others.is_empty() {
        return e;
    }
    let named: Vec<String> = others
        .iter()
        .map(|q| match q.as_str() {
            "" => "none (no `job.queue`)".to_string(),
            q => format!("`{q}`"),
        })
        .collect();
    e.with_hint(format!(
        "its jobs are of {} {}{}; check `--queue`",
        if others.len() == 1 { "queue" } else { "queues" },
        named.join(", "),
        if others.len() == 5 { ", …" } else { "" }
    ))
}

/// What [`open`] needs besides the sides: the source's flags, and what the verb does with an
/// empty history.
pub struct Open<'a> {
    pub replay: &'a ReplayArgs,
    /// The verb writes a partial result (the source is digested, never checked empty).
    pub partial: bool,
    /// `--strict`: rows the export left out make the exit status 1 ([`End::finish`]).
    pub strict: bool,
    /// The end of an empty history's error: `no job in … : NOTHING` (docs/cli.md).
    pub nothing: &'static str,
}

/// The source opened: the history, the baseline with its categorizer, where that came from,
/// what a partial result says of the source, and what [`End::finish`] says afterwards.
pub struct Opened {
    pub source: Source,
    pub baseline: Option<Simulator>,
    pub from: Baseline,
    pub about: About,
    /// An empty history let through by `--allow-empty` (the source ended with no entry).
    pub empty: bool,
    pub end: End,
}

/// A history source as [`open`] opens it: a file, directory or stdin (left), or Lookout's
/// database export (right), with what was read ahead of the replay handed out first.
pub type Source = Either<ReadAhead<Files>, ReadAhead<ExportSource<'static>>>;

/// What is said after the replay: a database export's summary, its lost connection, and
/// `--strict`'s verdict on the rows it left out.
pub struct End {
    export: Option<(Arc<Mutex<ExportState>>, String)>,
    /// `--queue` over a file, a directory or stdin: the jobs of other queues it left out.
    one_queue: Option<OneQueue>,
    strict: bool,
    partial: bool,
    /// suggest compared every queue (its proposal changes the cluster's categorizer): the
    /// jobs `--queue` left out were left out of its learning only.
    learned_only: bool,
}

impl End {
    /// suggest's, when it compared every queue: the note says the other queues' jobs were
    /// left out of the learning only.
    pub fn learned_only(self) -> End {
        End {
            learned_only: true,
            ..self
        }
    }

    /// After the verb's replay ended with `code`: for a database export, `history`'s summary
    /// on stderr (what was read, left out, and what Lookout could not tell), then the lost
    /// connection's error, or exit 1 with `--strict` and rows left out.
    pub fn finish(self, ctx: &mut Context, code: ExitCode) -> anyhow::Result<ExitCode> {
        if let Some(q) = self.one_queue.as_ref().filter(|q| q.left_out() > 0) {
            writeln!(
                ctx.err,
                "note: {}",
                left_out_note(q.name(), q.left_out(), self.learned_only)
            )?;
        }
        let Some((state, queue)) = self.export else {
            return Ok(code);
        };
        let state = std::mem::take(&mut *state.lock().unwrap_or_else(|e| e.into_inner()));
        write_summary(ctx.err, Some(&queue), &state.totals)?;
        if let Some(e) = state.error {
            // The connection was lost: what was printed covers the jobs read before.
            return Err(e);
        }
        // A partial's verdict is `merge`'s.
        Ok(
            if code == ExitCode::Success && self.strict && !self.partial && state.totals.left_out() > 0 {
                ExitCode::Failure
            } else {
                code
            },
        )
    }
}

/// Opens the source `args` name, and the baseline's policies from the cluster when
/// `--baseline-from-cluster` asks (read from the same database), its categorizer attached.
/// `None` after reporting a cluster whose policies cannot all be read (exit 3). An empty
/// history is an error here (docs/cli.md), unless `--allow-empty` ([`Opened::empty`]).
pub fn open(ctx: &mut Context, sides: &Sides, open: Open<'_>) -> anyhow::Result<Option<Opened>> {
    let Open {
        replay: args,
        partial,
        strict,
        nothing,
    } = open;
    let checks = checks_empty(args, partial);
    if let Some(history) = &args.history {
        // `--baseline-from-cluster` beside `--history`: the cluster's policies from the
        // database (`check_flags` let `--lookout-db` through for that alone), the jobs from
        // the file.
        let db = match (sides.baseline.from, &args.lookout_db) {
            (BaselineFrom::Cluster, Some(Some(dsn))) => Some(db::connect_with(
                dsn,
                parse_timeout(&ctx.global.timeout)?,
                cluster::CLUSTER_TABLES,
            )?),
            _ => None,
        };
        let Some((baseline, from)) = baseline_of(ctx, sides, db.as_ref(), args.queue.as_deref())? else {
            return Ok(None);
        };
        let FileSource {
            mut files,
            one_queue,
            described,
        } = FileSource::open(sides, history)?;
        let about = About {
            source: described,
            digest: if partial { files.digest() } else { Digest::default() },
            export: None,
        };
        let (source, empty) = match read_ahead(files, checks) {
            Ok(source) => (source, false),
            // `--allow-empty`: the (ended) source, its texts with no document left out.
            Err(e) if args.allow_empty => (e.source, true),
            Err(e) => return Err(no_job_of(history, args.queue.as_deref(), &e.other_queues, nothing).into()),
        };
        return Ok(Some(Opened {
            source: Either::Left(source),
            baseline,
            from,
            about,
            empty,
            end: End {
                export: None,
                one_queue,
                strict,
                partial,
                learned_only: false,
            },
        }));
    }
    // `check_source` makes one of the two required, `check_flags` `--queue` beside
    // `--lookout-db`.
    let (Some(Some(dsn)), Some(queue)) = (&args.lookout_db, &args.queue) else {
        return Err(CliError::usage("give `--history PATH` or `--lookout-db DSN --queue Q`").into());
    };
    let settings = sides.settings.applied();
    let mut filter = lookout_filter(
        &FilterFlags {
            queue: Some(queue),
            jobset: args.jobset.as_deref(),
            jobs: &[],
            window: &args.window,
        },
        now(),
    )?;
    let mut tables = db::HISTORY_TABLES.to_vec();
    if args.baseline_from_cluster {
        tables.extend_from_slice(cluster::CLUSTER_TABLES);
    }
    let db = db::connect_with(dsn, parse_timeout(&ctx.global.timeout)?, &tables)?;
    let Some((sim, from)) = baseline_of(ctx, sides, Some(&db), Some(queue))? else {
        return Ok(None);
    };
    let mut about = About {
        source: serde_json::json!({
            "lookoutDb": db.shown(),
            "statement": db::statement(&filter)?,
            "settings": format!("{settings:?}"),
            "shards": "hashtextextended of the job id",
        }),
        digest: Digest::default(),
        export: None,
    };
    // A shard's jobs are chosen by the database, which sends only theirs, and their places
    // among the history's, for `merge` (docs/past-one-machine.md).
    filter.shard = args.shard;
    let ranks = match args.shard {
        Some(_) => Some(db::shard_ranks(&db, &filter)?),
        None => None,
    };
    if ctx.global.verbose > 0 {
        writeln!(ctx.err, "lookout-db: {}", db::statement(&filter)?)?;
    }
    let hints = sides.deployed_categorizer().map(|c| Hints::of(&c.file.config));
    let export = Export::new(db::jobs(db, &filter)?).with_hints(hints);
    let mut export = ExportSource::new(export, settings, "lookout-db");
    if let Some(ranks) = ranks {
        export = export.with_ranks(ranks);
    }
    let state = export.state();
    about.export = Some((state.clone(), queue.clone()));
    let end = End {
        export: Some((state.clone(), queue.clone())),
        one_queue: None,
        strict,
        partial,
        learned_only: false,
    };
    let (source, empty) = match read_ahead(export, checks) {
        Ok(source) => (source, false),
        Err(Empty { source, .. }) => {
            let (read, lost) = {
                let s = state.lock().unwrap_or_else(|e| e.into_inner());
                (s.totals.jobs_read, s.error.is_some())
            };
            if read > 0 || lost {
                // Not empty: jobs read with no run to replay (the summary says why), or
                // the connection lost before the first (the error follows the summary).
                (source, false)
            } else if args.allow_empty {
                (source, true)
            } else {
                let named = format!("Lookout `{}`", crate::redact::redact_dsn(dsn));
                let timeout = parse_timeout(&ctx.global.timeout)?;
                return Err(no_job_in_lookout(&named, Some(dsn), timeout, &filter, nothing).into());
            }
        }
    };
    Ok(Some(Opened {
        source: Either::Right(source),
        baseline: sim,
        from,
        about,
        empty,
        end,
    }))
}

/// The baseline as the source opens it: the cluster's policies and queue attachments read
/// from Lookout's database `db` (`--baseline-from-cluster`), with the baseline's categorizer,
/// else the policies the sides resolved; and where it came from. `queue`: the queue replayed
/// (`None`: a `--history` of any queue). `None` after reporting stored rows that cannot be
/// read (exit 3).
fn baseline_of(
    ctx: &mut Context,
    sides: &Sides,
    db: Option<&db::Db>,
    queue: Option<&str>,
) -> anyhow::Result<Option<(Option<Simulator>, Baseline)>> {
    let (BaselineFrom::Cluster, Some(db)) = (sides.baseline.from, db) else {
        return Ok(Some((sides.baseline.simulator().cloned(), Baseline::Files)));
    };
    let state = cluster::read(db)?;
    let retry_policies = sides.spec.sides.retry_policies.as_deref();
    Ok(
        load_from_cluster(ctx, state, retry_policies, queue, sides.baseline.engine)?
            .map(|b| (Some(sides.baseline.attach(b)), Baseline::Cluster)),
    )
}

/// Some history to replay: `--history`, or `--lookout-db` (`$LOOKOUT_DB` resolved before,
/// `commands::replay::lookout::resolve_replay_dsn`; `env`: it was, `--emit` reads no variable).
pub fn check_source(args: &ReplayArgs, env: bool) -> Result<(), CliError> {
    if args.history.is_none() && args.lookout_db.is_none() {
        let e = CliError::usage("give the history: `--history PATH` or `--lookout-db DSN --queue Q`");
        return Err(if env { e.with_hint(SET_LOOKOUT_DB) } else { e });
    }
    Ok(())
}

/// `--lookout-db` needs `--queue`; the filters and `--baseline-from-cluster` need
/// `--lookout-db`; beside `--history`, `--lookout-db` is only where `--baseline-from-cluster`
/// reads the cluster's policies; stdin is read once.
pub fn check_flags(args: &ReplayArgs, files: &[std::path::PathBuf]) -> Result<(), CliError> {
    let stdin = |p: &std::path::PathBuf| p.as_os_str() == "-";
    if args.history.as_ref().is_some_and(stdin) && files.iter().chain(&args.baseline).any(stdin) {
        return Err(CliError::usage(
            "stdin can be read once: give either `--history -` or `-f -`, not both",
        ));
    }
    if args.shard.is_some_and(|s| s.count > 1) && args.window.since.is_some() {
        return Err(CliError::usage(
            "`--since` counts back from when each shard starts, so the shards would read different jobs: give `--from` and `--to` instead",
        ));
    }
    if args.history.is_some() && args.lookout_db.is_some() {
        // The cluster's policies from the database, the jobs from the file.
        if !args.baseline_from_cluster {
            return Err(CliError::usage(
                "`--history` and `--lookout-db` are two histories: give one (beside `--history`, `--lookout-db` is only where `--baseline-from-cluster` reads the cluster's policies)",
            ));
        }
        return match lookout_filter_given(args) {
            Some(flag) => Err(CliError::usage(format!(
                "`{flag}` selects Lookout's jobs, and the jobs are `--history`'s: with `--history`, `--lookout-db` only gives `--baseline-from-cluster` the cluster's policies (`--queue` alone selects the file's jobs)"
            ))),
            None => Ok(()),
        };
    }
    if args.lookout_db.is_some() {
        if args.shard.is_some() && args.window.to.is_none() {
            return Err(CliError::usage(
                "`--shard` with `--lookout-db` needs `--to`: shards started at different times would read different jobs",
            )
            .with_hint("give every shard the same `--to`, further back than the longest job runs"));
        }
        return match args.queue {
            Some(_) => Ok(()),
            None => Err(CliError::usage(
                "`--lookout-db` replays the jobs of one queue: give `--queue QUEUE`",
            )),
        };
    }
    let reads_lookout = |flag: &str, beside: &str| {
        CliError::usage(format!(
            "`{flag}` reads Lookout's database: give `--lookout-db DSN` (of a `--history`, `--queue` alone selects the jobs{beside})"
        ))
    };
    if args.baseline_from_cluster {
        return Err(reads_lookout(
            "--baseline-from-cluster",
            ", and `--lookout-db` beside it gives the cluster's policies",
        ));
    }
    match lookout_filter_given(args) {
        Some(flag) => Err(reads_lookout(flag, "")),
        None => Ok(()),
    }
}

/// The first of Lookout's filters given (`--jobset`, `--since`, `--from`, `--to`), which
/// select the jobs of a database export.
fn lookout_filter_given(args: &ReplayArgs) -> Option<&'static str> {
    [
        ("--jobset", args.jobset.is_some()),
        ("--since", args.window.since.is_some()),
        ("--from", args.window.from.is_some()),
        ("--to", args.window.to.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, set)| set.then_some(flag))
}
