//! Where a replay's histories come from, for `simulate` and `tune` alike: a file, a directory
//! or stdin (`--history`), or Lookout's database (`--lookout-db DSN --queue Q` with its
//! filters, docs/serve.md), and with `--baseline-from-cluster` the baseline read from the same
//! database. The command hands over what it does with the source ([`Drive`]); this module
//! opens it, runs that, and afterwards says what the database export left out.
//!
//! Owns: the checks between these flags, the Lookout connection and filter, an empty history
//! (no entry with content before the first is handed over, so nothing is written: exit 3 with
//! the source and its filters named, and for Lookout a hint of where the queue's jobs are;
//! `--allow-empty` replays it; a shard or a partial is never empty, its merge decides), and the
//! `history` summary on stderr after a database replay (a connection lost midway: what was
//! replayed is printed, then the error, exit 4; `--strict` with rows left out: exit 1).
//! Must not: replay, count or render (that is the [`Drive`]'s).

use std::sync::{Arc, Mutex};

use crate::app::Context;
use crate::cli::ReplayArgs;
use crate::commands::history::{history_named, lookout_filter, no_job, no_job_in_lookout, now, FilterFlags};
use crate::commands::policy_set::{base_config, load_from_cluster, PolicyFlags};
use crate::connection::parse_timeout;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::{CliError, ExitCode};
use crate::lookout::export_source::{ExportSource, ExportState};
use crate::lookout::{cluster, db, Export};
use crate::output::history::write_summary;
use crate::output::simulate::Baseline;
use crate::replay::partial::Lookout;
use crate::replay::source::{Body, Digest, Entry, Files, HistorySource, Overrides, Stamps};

/// What a command does with its history source.
pub trait Drive {
    /// Replays `source`; `baseline` is the what-if's baseline (`--baseline` files or the
    /// cluster's), `from` says which; `about`, what a partial result says of the source.
    fn drive<S: HistorySource>(
        &mut self,
        ctx: &mut Context,
        source: S,
        baseline: Option<&Simulator>,
        from: Baseline,
        about: About,
    ) -> anyhow::Result<ExitCode>;

    /// What an empty history leaves the command (docs/cli.md, exit codes): the end of its
    /// error, `no job in … : nothing to compare`.
    fn nothing(&self) -> &'static str {
        "nothing to compare"
    }

    /// With `--allow-empty`, an empty history: `None`, it is replayed as any other (its
    /// totals are zero); `Some(code)`, the command ends there, printing nothing.
    fn allowed_empty(&self) -> Option<ExitCode> {
        None
    }
}

/// A source with the entries read ahead of the replay handed out first.
struct ReadAhead<S> {
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

    /// Never called after a read ahead: a shard's source is not read ahead ([`ahead`]).
    fn sift(&mut self, shard: crate::replay::shard::Shard) -> bool {
        self.source.sift(shard)
    }
}

/// Whether an entry holds something the replay reports: a job, or what could not be read
/// (an error, a row left out); blank lines and texts with no document do not.
fn has_content(entry: &Entry) -> bool {
    match &entry.body {
        Body::Lines(block) => block.lines().next().is_some(),
        Body::Empty => false,
        Body::Error(_) | Body::History(_) | Body::Invalid(_) | Body::LeftOut { .. } => true,
    }
}

/// `source` read up to its first entry with content, before anything is written (an empty
/// history is an error, docs/cli.md); `Err(source)`: it ended with none.
fn ahead<S: HistorySource>(mut source: S) -> Result<ReadAhead<S>, S> {
    let mut read = std::collections::VecDeque::new();
    while let Some(entry) = source.next() {
        let content = has_content(&entry);
        read.push_back(entry);
        if content {
            return Ok(ReadAhead { ahead: read, source });
        }
    }
    Err(source)
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
    /// Files: each one's size and modification time when the source was opened, before
    /// anything was read (`suggest` compares them with its second pass's).
    pub stamps: Option<Stamps>,
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

/// `--global-max-retries` / `--default-policy`.
pub fn overrides(args: &ReplayArgs) -> Overrides {
    Overrides {
        global_max_retries: args.global_max_retries,
        default_policy: args.default_policy.clone(),
    }
}

/// What a partial's fingerprint holds of a file source: the path, the settings its jobs
/// get, and how shards split it (docs/past-one-machine.md: a shard of one rule cannot be
/// merged with a shard of the other). `suggest`'s merge computes it again to find the
/// shards' inputs unchanged.
pub fn files_source(
    history: &std::path::Path,
    overrides: &Overrides,
    base: &crate::model::scheduler::SchedulerConfig,
) -> serde_json::Value {
    let shards = if crate::replay::source::is_stream(history) {
        "fnv1a64 of the job id"
    } else {
        "byte ranges"
    };
    serde_json::json!({
        "history": history.display().to_string(),
        "settings": format!("{:?}", overrides.apply(base)),
        "shards": shards,
    })
}

/// Opens the source `args` name and hands it to `driver`, with `file_baseline` (from
/// `--baseline` files) or the cluster's baseline; `strict`: rows the export left out make
/// the exit status 1; `partial`: the driver writes a partial result (the source is digested).
#[allow(clippy::too_many_arguments)]
pub fn run<D: Drive>(
    ctx: &mut Context,
    args: &ReplayArgs,
    flags: PolicyFlags<'_>,
    file_baseline: Option<Simulator>,
    baseline_engine: EngineKind,
    strict: bool,
    partial: bool,
    driver: &mut D,
) -> anyhow::Result<ExitCode> {
    let overrides = overrides(args);
    let base = base_config(args)?;
    let (Some(Some(dsn)), Some(queue)) = (&args.lookout_db, &args.queue) else {
        // clap's `histories` group makes one of the two required; `check_lookout_flags` that
        // `--lookout-db` comes with `--queue`.
        let Some(history) = &args.history else {
            return Err(CliError::usage("give `--history PATH` or `--lookout-db DSN --queue Q`").into());
        };
        let described = files_source(history, &overrides, &base);
        let mut source = Files::open(history, base, overrides).map_err(CliError::invalid)?;
        let about = About {
            source: described,
            digest: if partial { source.digest() } else { Digest::default() },
            stamps: source.stamps(),
            export: None,
        };
        if !checks_empty(args, partial) {
            return driver.drive(ctx, source, file_baseline.as_ref(), Baseline::Files, about);
        }
        return match ahead(source) {
            Ok(source) => driver.drive(ctx, source, file_baseline.as_ref(), Baseline::Files, about),
            // `--allow-empty`: the (ended) source replayed, its texts with no document
            // left out.
            Err(source) if args.allow_empty => match driver.allowed_empty() {
                Some(code) => Ok(code),
                None => driver.drive(ctx, source, file_baseline.as_ref(), Baseline::Files, about),
            },
            Err(_) => Err(no_job(&history_named(history), None, driver.nothing()).into()),
        };
    };
    let settings = overrides.apply(&base);
    let mut filter = lookout_filter(
        &FilterFlags {
            queue,
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
    let (baseline, from) = if args.baseline_from_cluster {
        let state = cluster::read(&db)?;
        match load_from_cluster(ctx, state, flags, queue, baseline_engine)? {
            Some(b) => (Some(b), Baseline::Cluster),
            None => return Ok(ExitCode::InvalidInput),
        }
    } else {
        (file_baseline, Baseline::Files)
    };
    let mut about = About {
        source: serde_json::json!({
            "lookoutDb": db.shown(),
            "statement": db::statement(&filter)?,
            "settings": format!("{settings:?}"),
            "shards": "hashtextextended of the job id",
        }),
        digest: Digest::default(),
        stamps: None,
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
    let mut source = ExportSource::new(Export::new(db::jobs(db, &filter)?), settings, "lookout-db");
    if let Some(ranks) = ranks {
        source = source.with_ranks(ranks);
    }
    let state = source.state();
    about.export = Some((state.clone(), queue.clone()));
    let code = if checks_empty(args, partial) {
        match ahead(source) {
            Ok(source) => driver.drive(ctx, source, baseline.as_ref(), from, about)?,
            Err(source) => {
                let (read, lost) = {
                    let s = state.lock().unwrap_or_else(|e| e.into_inner());
                    (s.totals.jobs_read, s.error.is_some())
                };
                if read > 0 || lost {
                    // Not empty: jobs read with no run to replay (the summary says why), or
                    // the connection lost before the first (the error follows the summary).
                    driver.drive(ctx, source, baseline.as_ref(), from, about)?
                } else if args.allow_empty {
                    match driver.allowed_empty() {
                        Some(code) => return Ok(code),
                        None => driver.drive(ctx, source, baseline.as_ref(), from, about)?,
                    }
                } else {
                    let named = format!("Lookout `{}`", crate::lookout::mask_dsn(dsn));
                    let timeout = parse_timeout(&ctx.global.timeout)?;
                    return Err(no_job_in_lookout(&named, Some(dsn), timeout, &filter, driver.nothing()).into());
                }
            }
        }
    } else {
        driver.drive(ctx, source, baseline.as_ref(), from, about)?
    };
    let state = std::mem::take(&mut *state.lock().unwrap_or_else(|e| e.into_inner()));
    // `history`'s summary: what was read, left out, and what Lookout could not tell.
    write_summary(ctx.err, queue, &state.totals)?;
    if let Some(e) = state.error {
        // The connection was lost: what was printed covers the jobs read before.
        return Err(e);
    }
    // A partial's verdict is `merge`'s.
    Ok(
        if code == ExitCode::Success && strict && !partial && state.totals.left_out() > 0 {
            ExitCode::Failure
        } else {
            code
        },
    )
}

/// Some history to replay: `--history`, or `--lookout-db` (`$LOOKOUT_DB` resolved before,
/// `history::resolve_replay_dsn`; `env`: it was, `--emit` reads no variable).
pub fn check_source(args: &ReplayArgs, env: bool) -> Result<(), CliError> {
    if args.history.is_none() && args.lookout_db.is_none() {
        let e = CliError::usage("give the history: `--history PATH` or `--lookout-db DSN --queue Q`");
        return Err(if env {
            e.with_hint(crate::commands::history::SET_LOOKOUT_DB)
        } else {
            e
        });
    }
    Ok(())
}

/// `--lookout-db` needs `--queue`; the filters and `--baseline-from-cluster` need
/// `--lookout-db`; stdin is read once.
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
    let given = [
        ("--baseline-from-cluster", args.baseline_from_cluster),
        ("--queue", args.queue.is_some()),
        ("--jobset", args.jobset.is_some()),
        ("--since", args.window.since.is_some()),
        ("--from", args.window.from.is_some()),
        ("--to", args.window.to.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(CliError::usage(format!(
            "`{flag}` reads Lookout's database: give `--lookout-db DSN` (with `--history`, the file is the whole history)"
        ))),
        None => Ok(()),
    }
}
