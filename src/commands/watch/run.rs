//! `retryctl watch`'s start (docs/watch.md): the flags checked, Lookout's DSN, `--listen`
//! resolved, `--state` locked and read (or started afresh), the sides resolved once (the sides
//! kit's, `ReplaySpec::of_watch`), `--state` written before anything else, then the process's
//! life (`live`).
//!
//! Owns: [`run`], and the state as read fitted to what is watched now. Must not: poll, serve,
//! or count.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::app::Context;
use crate::cli::WatchArgs;
use crate::commands::replay::lookout::{resolve_dsn, SET_LOOKOUT_DB};
use crate::commands::replay::sides::{resolve, ReplaySpec};
use crate::connection::parse_timeout;
use crate::error::{CliError, ExitCode};
use crate::watch::metrics::Counters;
use crate::watch::schedule::Health;
use crate::watch::state::State;
use crate::whole_file::{write_whole, Mode};

use super::flags::flags;
use super::live::live;
use super::shared::{cannot_write_state, now_micros, Shared, Stop, VerdictRule, Watched};
use super::{listen, state_file};

/// `--state` as it is (`text`, as read), or a fresh state starting at `start` when there is no
/// such file. The series of a queue or candidate no longer watched are dropped, said in a
/// note; the ones a scrape shows at 0 are added.
fn load_state(
    ctx: &mut Context,
    path: &Path,
    text: Option<String>,
    start: i64,
    queues: &[String],
    names: &[String],
) -> anyhow::Result<State> {
    let zeros = Counters::zeros(queues, names);
    let Some(text) = text else {
        return Ok(State::new(start, zeros));
    };
    let mut state = State::from_json(&text).map_err(|why| {
        CliError::invalid(format!("`--state` `{}` cannot be read: {why}", path.display()))
            .with_hint("move it away to start counting afresh")
    })?;
    let dropped = state.counters.retain(|family, labels| {
        family.labels().iter().zip(labels).all(|(k, v)| match *k {
            "queue" => queues.contains(v),
            "candidate" => names.contains(v),
            _ => true,
        })
    });
    if dropped > 0 {
        writeln!(
            ctx.err,
            "note: `--state` `{}`: dropped {dropped} series of queues or candidates no longer watched",
            path.display()
        )?;
    }
    state.counters.merge(&zeros);
    state.waiting.retain_queues(|q| queues.iter().any(|w| w == q));
    state.window.retain_candidates(|c| names.iter().any(|n| n == c));
    Ok(state)
}

pub fn run(ctx: &mut Context, args: &WatchArgs) -> anyhow::Result<ExitCode> {
    let now = now_micros();
    let mut flags = flags(args, now)?;
    let dsn = resolve_dsn(args.lookout_db.clone(), true)?
        .ok_or_else(|| CliError::usage("give Lookout's database: `--lookout-db DSN`").with_hint(SET_LOOKOUT_DB))?;
    // What no poll can fix is refused at the start: a DSN that does not parse, an address that
    // names no host to listen on.
    crate::lookout::db::check_dsn(&dsn)?;
    listen::resolves(&args.listen)?;
    // One watch on a --state, held until the process ends, and only a state read: both before
    // anything else is said.
    let lock = state_file::lock(&args.state)?;
    let text = state_file::read(&args.state)?;
    let timeout = parse_timeout(&ctx.global.timeout)?;
    let Some(sides) = resolve(ctx, ReplaySpec::of_watch(args))? else {
        return Ok(ExitCode::InvalidInput);
    };
    let queues = if args.queues.is_empty() {
        sides.queue_documents()
    } else {
        args.queues.clone()
    };
    if queues.is_empty() {
        return Err(CliError::usage(
            "no queue to watch: the files hold no Queue document; give `--queue QUEUE` (repeatable)",
        )
        .into());
    }
    let sets = Arc::new(
        sides
            .policy_sets(None, None)
            .expect("watch's sides are files, known before the history is read"),
    );
    let names = sets.names();
    let settings = sides.settings.applied();
    let text_was_read = text.is_some();
    let mut state = load_state(ctx, &args.state, text, flags.since.unwrap_or(now), &queues, &names)?;
    if state.cursor.is_some() && args.since.is_some() {
        writeln!(
            ctx.err,
            "note: `--state` `{}` holds a cursor: resuming there (`--since` starts a fresh state only)",
            args.state.display()
        )?;
    }
    if state.cursor.is_none() {
        // A fresh state, or one that never counted: `--since` (or now) says where it starts.
        state.start = flags.since.unwrap_or(state.start);
    }
    // Only a start this process counted back from the machine's clock is counted again from
    // the database's.
    if state.cursor.is_some() || (args.since.is_none() && text_was_read) {
        flags.back = None;
    }
    // Written before anything else, so that a `--state` that cannot be written stops here.
    write_whole(&args.state, state.to_json().as_bytes(), Mode::New)
        .map_err(|e| CliError::failed(cannot_write_state(&args.state, &e)))?;
    let mut shared = Shared {
        state: Mutex::new(State::default()),
        published: Mutex::default(),
        health: Mutex::new(Health::Starting),
        saving: Mutex::new(()),
        path: args.state.clone(),
        stop: Stop::default(),
        sets: sets.clone(),
        rule: VerdictRule {
            window: flags.window,
            min_jobs: args.min_jobs,
            max_contradictions: args.max_contradictions,
        },
    };
    // What the file holds is what is served, from the first scrape.
    shared.published = Mutex::new(shared.publishable(&state));
    shared.state = Mutex::new(state);
    let shared = Arc::new(shared);
    let watched = Arc::new(Watched {
        sets,
        settings,
        queues,
        dsn,
        timeout,
        flags,
        window_words: args.window.clone(),
        lookback_words: crate::diag::shown(&args.lookback).into_owned(),
    });
    let code = live(ctx, &args.listen, shared, watched);
    drop(lock);
    code
}
