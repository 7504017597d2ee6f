//! `retryctl watch` (docs/watch.md): follows Lookout's database, replays every job that
//! reaches a terminal state under today's policy and each candidate, and serves the counts as
//! Prometheus metrics, the window's plan as HTML and its health.
//!
//! Owns: the flags' checks (the same for `--emit kubernetes`, which `dispatch` runs instead),
//! the `--state` file (read at the start; written whole: `whole_file`), the process's life:
//! the poller on a thread of its own ([`poll`]), the HTTP server on a tokio runtime (its
//! routes [`http`], its bounded accept loop [`listen`]), stderr as the log, and SIGTERM and SIGINT (save, exit 0
//! within 5 s). Must not: count or decide what a job adds up to (that is `crate::watch`),
//! render (that is `output::watch` and `output`'s html sink), or exit the process.
//!
//! Signals: watch handles SIGTERM and SIGINT itself (tokio's handlers) and arms no path in
//! `on_signal`, whose handler would end the process before `--state` is saved. A temporary
//! state file a SIGKILL leaves (`.NAME.XXXXXX.tmp` beside it) is never read.

mod http;
mod listen;
mod poll;
mod shared;
mod state_file;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::app::Context;
use crate::cli::WatchArgs;
use crate::commands::replay::lookout::{duration_flag, resolve_dsn, time_flag, SET_LOOKOUT_DB};
use crate::commands::replay::sides::{candidate_name, resolve, ReplaySpec};
use crate::connection::parse_timeout;
use crate::error::{CliError, ExitCode};
use crate::model::duration::GoDuration;
use crate::watch::metrics::Counters;
use crate::watch::schedule::Health;
use crate::watch::state::State;
use crate::whole_file::{write_whole, Mode};
use shared::{cannot_write_state, now_micros, Flags, Shared, Stop, VerdictRule, Watched};

/// The checks of watch's flags before anything is read (`--emit` makes them too, in the same
/// words).
pub fn check(args: &WatchArgs) -> Result<(), CliError> {
    flags(args, now_micros()).map(|_| ())
}

/// The shortest `--poll` (docs/watch.md).
const POLL_FLOOR: Duration = Duration::from_secs(1);

fn flags(args: &WatchArgs, now: i64) -> Result<Flags, CliError> {
    crate::server::check_listen(&args.listen)?;
    // A floor, not just more than zero: each poll is a transaction on Lookout's database, and
    // `1ns` made some 570 of them a second on an empty one.
    let poll = match GoDuration::parse(&args.poll) {
        Ok(d) if u128::from(d.as_nanos()) >= POLL_FLOOR.as_nanos() => Duration::from_nanos(d.as_nanos()),
        _ => {
            return Err(CliError::usage(format!(
                "invalid `--poll` `{}`: expected a duration of at least `1s` such as `30s` or `1m`",
                args.poll
            )))
        }
    };
    let micros = |d: GoDuration| i64::try_from(d.as_nanos() / 1000).unwrap_or(i64::MAX);
    let window = micros(duration_flag("--window", &args.window)?);
    let settle = micros(duration_flag("--settle", &args.settle)?);
    let lookback = micros(duration_flag("--lookback", &args.lookback)?);
    if lookback > window {
        // The span read again is at most the window the verdicts are judged on.
        return Err(CliError::usage(format!(
            "invalid `--lookback` `{}`: longer than `--window` `{}`; give a duration of at most the window",
            crate::diag::shown(&args.lookback),
            crate::diag::shown(&args.window)
        )));
    }
    let (since, back) = match &args.since {
        None => (None, Some(0)),
        // A duration counts back from now; anything that starts like a date is a time.
        Some(s) if s.starts_with(|c: char| c.is_ascii_digit()) && s.len() >= 10 && s.as_bytes()[4] == b'-' => {
            (Some(time_flag("--since", s)?.0 / 1000), None)
        }
        Some(s) => {
            let back = micros(duration_flag("--since", s)?);
            (Some(now.saturating_sub(back)), Some(back))
        }
    };
    if since.is_some_and(|start| start > now) {
        // Every job ending before it would be skipped without a word, after a restart too:
        // a typo (`2062` for `2026`) must not start a watch that never counts.
        let now = crate::model::failure_history::Timestamp(now / 1_000_000 * 1_000_000_000);
        return Err(CliError::usage(format!(
            "invalid `--since` `{}`: later than now (`{now}`); give a time in the past or a duration back from now such as `7d`",
            crate::diag::shown(args.since.as_deref().unwrap_or_default()),
        )));
    }
    let mut names: Vec<String> = Vec::new();
    for path in &args.candidates {
        let name = candidate_name(path);
        if names.contains(&name) {
            return Err(CliError::usage(format!(
                "two candidates are named `{name}` (each `-f` is labelled by its file's base name): give them files of different names"
            )));
        }
        names.push(name);
    }
    if args.categorizer.is_some() && args.candidates.is_empty() {
        return Err(CliError::usage(
            "`--categorizer` is the candidates' categorizer: give a candidate with `-f`, or today's with `--baseline-categorizer`",
        ));
    }
    Ok(Flags {
        poll,
        window,
        settle,
        lookback,
        since,
        back,
    })
}

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
    let sets = sides
        .policy_sets(None, None)
        .expect("watch's sides are files, known before the history is read");
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
        names: names.clone(),
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
        names,
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

/// The process's life: the HTTP server and the poller, until SIGTERM or SIGINT; then the
/// poller's page finished (3 s at most: one stuck on the database is not waited for),
/// `--state` saved, exit 0.
fn live(ctx: &mut Context, listen: &str, shared: Arc<Shared>, watched: Arc<Watched>) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("retryctl-watch")
        .build()?;
    let result = runtime.block_on(async {
        let mut signals = Signals::install()?;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| CliError::failed(format!("cannot listen on `{listen}`: {e}")))?;
        let addr = listener.local_addr()?;
        let candidates = match watched.names.as_slice() {
            [] => "no candidate".to_string(),
            names => format!("candidates {}", names.join(", ")),
        };
        writeln!(
            ctx.err,
            "retryctl watch: listening on http://{addr} (queues {}; {candidates}; state `{}`)",
            watched.queues.join(", "),
            shared.path.display()
        )?;
        // The poller's lines come back here: this thread holds stderr.
        let (log, mut lines) = tokio::sync::mpsc::channel::<String>(1024);
        let poller = poll::spawn(shared.clone(), watched.clone(), log);
        let (stop_http, http_stopped) = tokio::sync::oneshot::channel::<()>();
        let router = http::router(shared.clone(), watched.clone());
        let server = tokio::spawn(listen::serve(listener, router, async move {
            let _ = http_stopped.await;
        }));
        let signal = loop {
            tokio::select! {
                signal = signals.recv() => break signal,
                Some(line) = lines.recv() => { let _ = writeln!(ctx.err, "{line}"); }
            }
        };
        shared.stop.set();
        let deadline = tokio::time::Instant::now() + STOP_WAIT;
        while !poller.is_finished() && tokio::time::Instant::now() < deadline {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                Some(line) = lines.recv() => { let _ = writeln!(ctx.err, "{line}"); }
            }
        }
        // A finished poller saved on its way out; else what its last whole page counted.
        let saved = if poller.is_finished() {
            poller.join().unwrap_or_else(|_| shared.save())
        } else {
            shared.save()
        };
        while let Ok(line) = lines.try_recv() {
            let _ = writeln!(ctx.err, "{line}");
        }
        let _ = stop_http.send(());
        let _ = tokio::time::timeout(Duration::from_secs(1), server).await;
        saved.map_err(|e| CliError::failed(cannot_write_state(&shared.path, &e)))?;
        writeln!(
            ctx.err,
            "retryctl watch: {signal}: stopped; the counters and cursor are saved in `{}`",
            shared.path.display()
        )?;
        anyhow::Ok(ExitCode::Success)
    });
    // A `/report` still replaying is not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    result
}

/// How long a signal waits for the poller to finish its page.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// SIGTERM and SIGINT, installed before the start-up line, so that a signal sent once it is
/// printed saves and exits 0.
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(Signals {
                int: signal(SignalKind::interrupt())?,
                term: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next one's name.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => "SIGINT",
                _ = self.term.recv() => "SIGTERM",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The flags of `retryctl watch WORDS`.
    fn args(words: &str) -> WatchArgs {
        let line = format!("retryctl watch --baseline b --state s.json {words}");
        match crate::cli::Cli::try_parse_from(line.split_whitespace())
            .unwrap()
            .command
        {
            crate::cli::Command::Watch(a) => a,
            _ => unreachable!("a watch command line"),
        }
    }

    const NOW: i64 = 1_800_000_000_000_000;

    #[test]
    fn since_is_a_time_or_a_duration_back_from_now() {
        let f = flags(&args("--since 2026-11-15T00:00:00Z"), NOW).unwrap();
        assert_eq!(f.since, Some(1_794_700_800_000_000));
        let f = flags(&args("--since 1d12h"), NOW).unwrap();
        assert_eq!(f.since, Some(NOW - 36 * 3600 * 1_000_000));
        assert_eq!(flags(&args(""), NOW).unwrap().since, None);
        assert_eq!(
            flags(&args("--since 2026-13-01T00:00:00Z"), NOW).err().unwrap().code,
            ExitCode::Usage
        );
        // Later than now, by a year or a second: refused, naming `--since` and now.
        for later in ["2099-01-01T00:00:00Z", "2027-01-15T08:00:01Z"] {
            let err = flags(&args(&format!("--since {later}")), NOW).err().unwrap();
            assert_eq!(err.code, ExitCode::Usage);
            assert_eq!(
                err.message,
                format!("invalid `--since` `{later}`: later than now (`2027-01-15T08:00:00Z`); give a time in the past or a duration back from now such as `7d`")
            );
        }
        assert!(flags(&args("--since 2027-01-15T08:00:00Z"), NOW).is_ok());
        assert_eq!(
            flags(&args("--since soon"), NOW).err().unwrap().message,
            "invalid `--since` `soon`: expected a duration such as `7d`, `36h` or `1d12h`"
        );
    }

    #[test]
    fn poll_window_and_listen_are_checked() {
        let f = flags(&args("--poll 1m30s --window 2d"), NOW).unwrap();
        assert_eq!((f.poll, f.window), (Duration::from_secs(90), 2 * 86_400 * 1_000_000));
        assert_eq!(flags(&args("--poll 1s"), NOW).unwrap().poll, Duration::from_secs(1));
        for below in ["0s", "1ns", "500ms", "999999us"] {
            let err = flags(&args(&format!("--poll {below}")), NOW).err().unwrap();
            assert_eq!(err.code, ExitCode::Usage);
            assert_eq!(
                err.message,
                format!("invalid `--poll` `{below}`: expected a duration of at least `1s` such as `30s` or `1m`")
            );
        }
        assert_eq!(
            flags(&args("--window 0s"), NOW).err().unwrap().message,
            "invalid `--window` `0s`: expected a duration such as `7d`, `36h` or `1d12h`"
        );
        assert!(flags(&args("--listen nowhere"), NOW)
            .err()
            .unwrap()
            .message
            .starts_with("invalid `--listen` address `nowhere`"));
    }

    #[test]
    fn lookback_is_at_most_the_window_and_a_start_counted_back_is_said() {
        let f = flags(&args(""), NOW).unwrap();
        assert_eq!((f.lookback, f.back), (5 * 60 * 1_000_000, Some(0)));
        let f = flags(&args("--lookback 15m --since 1d"), NOW).unwrap();
        assert_eq!((f.lookback, f.back), (15 * 60 * 1_000_000, Some(86_400 * 1_000_000)));
        assert_eq!(flags(&args("--since 2026-11-15T00:00:00Z"), NOW).unwrap().back, None);
        let err = flags(&args("--window 1h --lookback 2h"), NOW).err().unwrap();
        assert_eq!(err.code, ExitCode::Usage);
        assert_eq!(
            err.message,
            "invalid `--lookback` `2h`: longer than `--window` `1h`; give a duration of at most the window"
        );
        assert!(flags(&args("--window 1h --lookback 1h"), NOW).is_ok());
    }

    #[test]
    fn candidates_are_named_by_their_base_name() {
        assert!(flags(&args("-f a/c.yaml -f b/c.yaml"), NOW).is_err());
        assert!(flags(&args("-f a/c.yaml -f b/d.yaml"), NOW).is_ok());
        assert_eq!(
            flags(&args("--categorizer e.yaml"), NOW).err().unwrap().code,
            ExitCode::Usage
        );
    }
}
