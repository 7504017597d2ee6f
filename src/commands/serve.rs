//! `retryctl serve`: run the local Armada-compatible API server (docs/serve.md).
//!
//! Owns: turning flags into a [`server::Config`], the tokio runtime, stderr as the server's
//! log (batched, dropped and counted when stderr refuses it, never a reason to stop), and
//! SIGINT/SIGTERM: the first stops gracefully saying what it waits for, a second exits at
//! once (130/143; the one process exit outside `main`, see `exit_at_once`).
//! Must not: hold server logic (that is `crate::server`).

use crate::app::Context;
use crate::cli::ServeArgs;
use crate::error::{CliError, ExitCode};
use crate::server::{self, Config, Location};

/// How long in-flight requests get after SIGINT/SIGTERM.
const GRACE: std::time::Duration = std::time::Duration::from_secs(10);

pub fn run(ctx: &mut Context, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    server::check_listen(&args.listen)?;
    let db = if args.in_memory {
        Location::InMemory
    } else if let Some(path) = &args.db {
        Location::File(path.clone())
    } else {
        let dir = dirs::data_dir().ok_or_else(|| {
            CliError::failed("cannot find the user data directory for the default database")
                .with_hint("pass `--db PATH` or `--in-memory`")
        })?;
        Location::File(dir.join("retryctl").join("armada.db"))
    };
    // Request log lines come back over this channel and are written here, through the
    // command's own stderr writer.
    let (log_tx, mut log_rx) = tokio::sync::mpsc::channel::<String>(4096);
    let config = Config {
        listen: args.listen.clone(),
        db,
        basic_auth: with_file_lines(&args.basic_auth, args.basic_auth_file.as_deref(), "--basic-auth-file")?,
        tokens: with_file_lines(&args.token, args.token_file.as_deref(), "--token-file")?,
        allow_anonymous: args.allow_anonymous,
        // clap makes the two flags go together (exit 2 otherwise).
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(server::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        },
        request_log: Some(log_tx),
        shutdown_grace: GRACE,
        dialect: match args.dialect {
            crate::cli::ServeDialect::V1 => crate::wire::Dialect::V1,
            crate::cli::ServeDialect::Upstream => crate::wire::Dialect::Upstream,
        },
        ..Config::new(String::new(), Location::InMemory)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("retryctl-serve")
        .build()?;
    runtime.block_on(async {
        let mut signals = Signals::install()?;
        let server = server::Server::bind(config).await?;
        let requests = server.requests();
        // From here on stderr is the server's log: a write it refuses costs the line, never
        // the server (docs/serve.md), the startup line included.
        let mut log = Log::new(ctx.err);
        log.line(&server.startup_line());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // The server runs on the runtime's workers, so that this thread blocking on a full
        // stderr pipe can never stall a request.
        let mut run = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        // The signals are watched on a worker too: the second one must end the process
        // whatever this thread is blocked on (a full stderr pipe, the database's close).
        let (first_tx, mut first) = tokio::sync::oneshot::channel::<ShutdownSignal>();
        let watched = requests.clone();
        tokio::spawn(async move {
            let signal = signals.recv().await;
            let _ = stop.send(());
            let _ = first_tx.send(signal);
            let again = signals.recv().await;
            exit_at_once(again, &watched);
        });
        // Lines are written in batches: what arrives within LOG_BATCH_WINDOW of a first line
        // goes out in one `write` (stderr is unbuffered, and a write per line and per format
        // fragment was a fifth of a GET's CPU under load). The window matters as much as the
        // write: woken for every line, this thread's wake-ups and context switches cost a
        // GET more than the write did (perf under wrk, server pinned to one core).
        let mut batch = String::new();
        let mut stopping = false;
        let result = loop {
            tokio::select! {
                result = &mut run => break result,
                Ok(signal) = &mut first, if !stopping => {
                    stopping = true;
                    if let Some(text) = waiting_for(signal, &requests.in_flight(), std::time::Instant::now()) {
                        log.line(&text);
                    }
                }
                Some(line) = log_rx.recv() => {
                    push_line(&mut batch, &line);
                    tokio::time::sleep(LOG_BATCH_WINDOW).await;
                    while let Ok(line) = log_rx.try_recv() {
                        push_line(&mut batch, &line);
                        if batch.len() >= LOG_BATCH_BYTES {
                            break;
                        }
                    }
                    log.batch(&mut batch);
                }
            }
        };
        while let Ok(line) = log_rx.try_recv() {
            push_line(&mut batch, &line);
        }
        log.batch(&mut batch);
        let result = result.map_err(|e| anyhow::anyhow!("the server task failed: {e}"))?;
        if result? == server::Shutdown::GraceExpired {
            log.line(&format!(
                "retryctl serve: requests still running after {}s were cut off",
                GRACE.as_secs()
            ));
        }
        log.dropped_total();
        log.line("retryctl serve: stopped; database closed");
        Ok(ExitCode::Success)
    })
}

/// At most this much log text goes out in one write, so that a burst cannot grow the batch
/// without bound while stderr is slow.
const LOG_BATCH_BYTES: usize = 64 * 1024;

/// How long a first log line waits for others to join its write: short enough that the log
/// reads as live, long enough that a busy server wakes this thread at most 200 times a
/// second. The channel (4,096 lines) holds what a window brings at well over 100,000
/// requests a second.
const LOG_BATCH_WINDOW: std::time::Duration = std::time::Duration::from_millis(5);

fn push_line(batch: &mut String, line: &str) {
    batch.push_str(line);
    batch.push('\n');
}

/// stderr as the server's log (docs/serve.md: the log never blocks a request and never stops the
/// server). A line stderr refuses is dropped and counted, never retried; once a write meets
/// a closed pipe (the reader is gone for good) nothing more is tried. That lines were dropped
/// is said once, as soon as stderr takes a line again, and their number when the server
/// stops (if it can still be written).
struct Log<'a> {
    err: &'a mut dyn std::io::Write,
    /// A write met a closed pipe: every later line is dropped without a try.
    gone: bool,
    /// Dropped lines already reported.
    reported: u64,
}

impl<'a> Log<'a> {
    fn new(err: &'a mut dyn std::io::Write) -> Self {
        Log {
            err,
            gone: false,
            reported: 0,
        }
    }

    /// One line (no newline at its end).
    fn line(&mut self, line: &str) {
        let mut text = String::with_capacity(line.len() + 1);
        push_line(&mut text, line);
        self.batch(&mut text);
    }

    /// Writes and empties `batch` (whole lines).
    fn batch(&mut self, batch: &mut String) {
        if batch.is_empty() {
            return;
        }
        if self.write(batch.as_bytes()) {
            self.say_dropped_once();
        } else {
            // Counted only here: a scan of every batch written was 2% of a GET's instructions.
            server::count_dropped_log_lines(batch.matches('\n').count() as u64);
        }
        batch.clear();
    }

    fn write(&mut self, text: &[u8]) -> bool {
        if self.gone {
            return false;
        }
        match self.err.write_all(text).and_then(|()| self.err.flush()) {
            Ok(()) => true,
            Err(e) => {
                // A full pipe blocks rather than fails; anything else that fails may pass
                // later (a file system that was full), but a closed pipe never reopens.
                self.gone = e.kind() == std::io::ErrorKind::BrokenPipe;
                false
            }
        }
    }

    /// The first time lines were lost and stderr takes text again: say so, once.
    fn say_dropped_once(&mut self) {
        if self.reported > 0 {
            return;
        }
        let dropped = server::dropped_log_lines();
        if dropped == 0 {
            return;
        }
        let text = format!(
            "retryctl serve: {dropped} request log lines dropped so far (stderr was full or refused them); the total is printed when the server stops\n"
        );
        if self.write(text.as_bytes()) {
            self.reported = dropped;
        }
    }

    /// When the server stops: how many lines were dropped, unless that was said already.
    fn dropped_total(&mut self) {
        let dropped = server::dropped_log_lines();
        if dropped > self.reported {
            let text =
                format!("retryctl serve: {dropped} request log lines were dropped (stderr was full or closed)\n");
            if self.write(text.as_bytes()) {
                self.reported = dropped;
            }
        }
    }
}

/// What the first SIGINT/SIGTERM waits for, when it waits for anything: the requests in
/// flight (at most `SHOWN` named), the grace period, and how to stop at once. `None`
/// when nothing is in flight (the server stops at once).
fn waiting_for(signal: ShutdownSignal, in_flight: &[server::InFlight], now: std::time::Instant) -> Option<String> {
    use std::fmt::Write as _;
    const SHOWN: usize = 3;
    if in_flight.is_empty() {
        return None;
    }
    let n = in_flight.len();
    let mut text = format!(
        "retryctl serve: {}: stopping; waiting up to {}s for {n} request{} in flight: ",
        signal.name,
        GRACE.as_secs(),
        if n == 1 { "" } else { "s" }
    );
    for (i, r) in in_flight.iter().take(SHOWN).enumerate() {
        if i > 0 {
            text.push_str(", ");
        }
        let age = now.saturating_duration_since(r.since);
        let _ = write!(
            text,
            "{} {} from {} (for {}.{}s)",
            r.method,
            r.target,
            r.peer,
            age.as_secs(),
            age.subsec_millis() / 100
        );
    }
    if n > SHOWN {
        let _ = write!(text, " and {} more", n - SHOWN);
    }
    text.push_str("; send SIGINT or SIGTERM again to exit at once");
    Some(text)
}

/// A second SIGINT/SIGTERM: the process ends now with status 128 + the signal's number (130
/// for SIGINT, 143 for SIGTERM: what a shell reports for a process that signal killed),
/// without waiting for requests in flight or closing the database. Safe for the data: a
/// write is acknowledged only once committed, and SQLite's WAL recovers at the next start
/// exactly as after `kill -9` (docs/serve.md). The one exit outside `main`: this runs on a worker
/// because the main thread may be blocked on stderr or on the database.
fn exit_at_once(signal: ShutdownSignal, requests: &server::Requests) -> ! {
    let n = requests.in_flight().len();
    let code = 128 + signal.number;
    let note = format!(
        "retryctl serve: {} again: exiting at once with status {code}{}\n",
        signal.name,
        match n {
            0 => String::new(),
            1 => "; 1 request in flight cut off".to_string(),
            n => format!("; {n} requests in flight cut off"),
        }
    );
    write_if_it_fits(note.as_bytes());
    std::process::exit(code)
}

/// Writes `text` to fd 2 directly (the main thread holds std's stderr lock for the whole
/// run) when that cannot block: a full stderr pipe must not delay the exit.
#[cfg(unix)]
fn write_if_it_fits(text: &[u8]) {
    let mut fd = libc::pollfd {
        fd: 2,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait; `write` reads `text.len()` bytes of `text`.
    unsafe {
        if libc::poll(&mut fd, 1, 0) == 1 && fd.revents & libc::POLLOUT != 0 {
            let _ = libc::write(2, text.as_ptr().cast(), text.len());
        }
    }
}

#[cfg(not(unix))]
fn write_if_it_fits(_text: &[u8]) {}

/// The credentials given on the command line plus the non-empty, non-`#` lines of `file`.
fn with_file_lines(given: &[String], file: Option<&std::path::Path>, flag: &str) -> Result<Vec<String>, CliError> {
    let mut out = given.to_vec();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!(
                "cannot read `{flag}` `{}`: {}",
                path.display(),
                crate::input::io_reason(&e)
            ))
        })?;
        let before = out.len();
        out.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
        if out.len() == before {
            return Err(CliError::usage(format!(
                "`{flag}` `{}` holds no credentials (one per line expected)",
                path.display()
            )));
        }
    }
    Ok(out)
}

/// A shutdown signal: its name and number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShutdownSignal {
    name: &'static str,
    number: i32,
}

const SIGINT: ShutdownSignal = ShutdownSignal {
    name: "SIGINT",
    number: 2,
};
#[cfg(unix)]
const SIGTERM: ShutdownSignal = ShutdownSignal {
    name: "SIGTERM",
    number: 15,
};

/// The SIGINT/SIGTERM handlers, installed before the startup line, so that a signal sent as
/// soon as the line appears is already a graceful shutdown, not the default kill.
#[cfg(unix)]
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// The next SIGINT or SIGTERM.
    async fn recv(&mut self) -> ShutdownSignal {
        tokio::select! {
            _ = self.int.recv() => SIGINT,
            _ = self.term.recv() => SIGTERM,
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals)
    }

    async fn recv(&mut self) -> ShutdownSignal {
        let _ = tokio::signal::ctrl_c().await;
        SIGINT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn request(method: &str, target: &str, port: u16, age_ms: u64, now: Instant) -> server::InFlight {
        server::InFlight {
            method: method.parse().unwrap(),
            target: target.into(),
            peer: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            since: now - Duration::from_millis(age_ms),
        }
    }

    #[test]
    fn the_first_signal_says_what_it_waits_for() {
        let now = Instant::now();
        assert_eq!(waiting_for(SIGINT, &[], now), None);
        assert_eq!(
            waiting_for(
                SIGINT,
                &[request("POST", "/v1/retry-policy", 40000, 2_345, now)],
                now
            )
            .unwrap(),
            "retryctl serve: SIGINT: stopping; waiting up to 10s for 1 request in flight: POST /v1/retry-policy from 127.0.0.1:40000 (for 2.3s); send SIGINT or SIGTERM again to exit at once"
        );
        let many: Vec<_> = (0..5)
            .map(|i| request("PUT", &format!("/v1/queue/q{i}"), 40000 + i, 100, now))
            .collect();
        assert_eq!(
            waiting_for(SIGTERM, &many, now).unwrap(),
            "retryctl serve: SIGTERM: stopping; waiting up to 10s for 5 requests in flight: PUT /v1/queue/q0 from 127.0.0.1:40000 (for 0.1s), PUT /v1/queue/q1 from 127.0.0.1:40001 (for 0.1s), PUT /v1/queue/q2 from 127.0.0.1:40002 (for 0.1s) and 2 more; send SIGINT or SIGTERM again to exit at once"
        );
    }

    /// A stderr whose writes fail with `refuse` while it is set.
    struct Stderr {
        refuse: std::rc::Rc<std::cell::Cell<Option<std::io::ErrorKind>>>,
        tries: usize,
        got: String,
    }

    impl std::io::Write for Stderr {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.tries += 1;
            if let Some(kind) = self.refuse.get() {
                return Err(kind.into());
            }
            self.got.push_str(std::str::from_utf8(buf).unwrap());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn stderr(
        refuse: Option<std::io::ErrorKind>,
    ) -> (Stderr, std::rc::Rc<std::cell::Cell<Option<std::io::ErrorKind>>>) {
        let switch = std::rc::Rc::new(std::cell::Cell::new(refuse));
        let err = Stderr {
            refuse: switch.clone(),
            tries: 0,
            got: String::new(),
        };
        (err, switch)
    }

    /// A write stderr refuses costs its lines (counted, never retried), and after a closed
    /// pipe nothing more is tried; a stderr that takes text again is told once that lines
    /// were lost, and the total at the end.
    #[test]
    fn a_refusing_stderr_drops_lines_and_is_told_once() {
        // The count is process-wide (other tests drop lines too): compare differences.
        let before = server::dropped_log_lines();
        let (mut err, _) = stderr(Some(std::io::ErrorKind::BrokenPipe));
        let mut log = Log::new(&mut err);
        log.line("retryctl serve: listening on …");
        log.batch(&mut "a\nb\n".to_string());
        log.dropped_total();
        assert!(log.gone);
        assert_eq!(err.tries, 1, "nothing is tried after a closed pipe");
        assert!(server::dropped_log_lines() - before >= 3);

        let (mut err, refuse) = stderr(Some(std::io::ErrorKind::Other));
        let mut log = Log::new(&mut err);
        log.line("lost");
        assert!(!log.gone, "another error may pass");
        refuse.set(None);
        log.line("one");
        log.line("two");
        log.dropped_total();
        let got = regex::Regex::new(r"\d+").unwrap().replace_all(&err.got, "N");
        assert_eq!(
            got,
            "one\nretryctl serve: N request log lines dropped so far (stderr was full or refused them); the total is printed when the server stops\ntwo\n"
        );
    }
}
