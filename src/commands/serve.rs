//! `retryctl serve`: run the local Armada-compatible API server (SPEC §6).
//!
//! Owns: turning flags into a [`server::Config`], the tokio runtime, the startup line and
//! SIGINT/SIGTERM handling. Must not: hold server logic (that is `crate::server`).

use crate::app::Context;
use crate::cli::ServeArgs;
use crate::error::{CliError, ExitCode};
use crate::server::{self, Config, Location};

/// `--listen` must be `HOST:PORT` (`127.0.0.1:8080`, `[::1]:0`, `localhost:8080`): anything
/// else is a usage error (exit 2) here, before binding, rather than a failed bind (exit 1).
/// Whether the host resolves and the port is free is left to the bind.
fn check_listen(addr: &str) -> Result<(), CliError> {
    if addr.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(());
    }
    let ok = match addr.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && !host.contains(':')
                && !host.chars().any(char::is_whitespace)
                && port.parse::<u16>().is_ok()
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "invalid `--listen` address `{addr}`: expected HOST:PORT with a port from 0 to 65535, \
             such as `127.0.0.1:8080` or `0.0.0.0:8443`"
        )))
    }
}

/// How long in-flight requests get after SIGINT/SIGTERM.
const GRACE: std::time::Duration = std::time::Duration::from_secs(10);

pub fn run(ctx: &mut Context, args: &ServeArgs) -> anyhow::Result<ExitCode> {
    check_listen(&args.listen)?;
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
        ..Config::new(String::new(), Location::InMemory)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("retryctl-serve")
        .build()?;
    runtime.block_on(async {
        let shutdown = shutdown_signal()?;
        let server = server::Server::bind(config).await?;
        writeln!(ctx.err, "{}", server.startup_line())?;
        ctx.err.flush()?;
        // The server runs on the runtime's workers, so that this thread blocking on a full
        // stderr pipe can never stall a request; a line stderr refuses is dropped and
        // counted, and a closed stderr does not stop the server (SPEC §6).
        let mut run = tokio::spawn(server.run(shutdown));
        // Lines are written in batches: what arrives within LOG_BATCH_WINDOW of a first line
        // goes out in one `write` (stderr is unbuffered, and a write per line and per format
        // fragment was a fifth of a GET's CPU under load). The window matters as much as the
        // write: woken for every line, this thread's wake-ups and context switches cost a
        // GET more than the write did (perf under wrk, server pinned to one core).
        let mut batch = String::new();
        let result = loop {
            tokio::select! {
                result = &mut run => break result,
                Some(line) = log_rx.recv() => {
                    push_line(&mut batch, &line);
                    tokio::time::sleep(LOG_BATCH_WINDOW).await;
                    while let Ok(line) = log_rx.try_recv() {
                        push_line(&mut batch, &line);
                        if batch.len() >= LOG_BATCH_BYTES {
                            break;
                        }
                    }
                    write_batch(ctx.err, &mut batch);
                }
            }
        };
        while let Ok(line) = log_rx.try_recv() {
            push_line(&mut batch, &line);
        }
        write_batch(ctx.err, &mut batch);
        let result = result.map_err(|e| anyhow::anyhow!("the server task failed: {e}"))?;
        if result? == server::Shutdown::GraceExpired {
            let _ = writeln!(
                ctx.err,
                "retryctl serve: requests still running after {}s were cut off",
                GRACE.as_secs()
            );
        }
        let dropped = server::dropped_log_lines();
        if dropped > 0 {
            let _ = writeln!(
                ctx.err,
                "retryctl serve: {dropped} request log lines were dropped (stderr was full or closed)"
            );
        }
        let _ = writeln!(ctx.err, "retryctl serve: stopped; database closed");
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

/// Writes the batch; lines that stderr refuses (full pipe gone, closed) are dropped and
/// counted, never retried: the server must not wait on its log (SPEC §6).
fn write_batch(err: &mut dyn std::io::Write, batch: &mut String) {
    if batch.is_empty() {
        return;
    }
    if err.write_all(batch.as_bytes()).is_err() {
        server::count_dropped_log_lines(batch.matches('\n').count() as u64);
    }
    batch.clear();
}

/// The credentials given on the command line plus the non-empty, non-`#` lines of `file`.
fn with_file_lines(given: &[String], file: Option<&std::path::Path>, flag: &str) -> Result<Vec<String>, CliError> {
    let mut out = given.to_vec();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::usage(format!("cannot read `{flag}` {}: {e}", path.display())))?;
        let before = out.len();
        out.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(String::from),
        );
        if out.len() == before {
            return Err(CliError::usage(format!(
                "`{flag}` {} holds no credentials (one per line expected)",
                path.display()
            )));
        }
    }
    Ok(out)
}

/// Installs the SIGINT/SIGTERM handlers now (before the startup line, so a signal sent as
/// soon as the line appears is already a graceful shutdown, not the default kill) and
/// returns a future that resolves on the first of them.
#[cfg(unix)]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => {},
            _ = term.recv() => {},
        }
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
