//! `watch`'s life once started (docs/watch.md "Durable"): the HTTP server on a tokio runtime,
//! the poller on a thread of its own, stderr as the log (the poller's lines come back here),
//! and SIGTERM and SIGINT: the poller's page finished, `--state` saved, exit 0 within 5 s.
//!
//! Signals: watch handles SIGTERM and SIGINT itself (tokio's handlers) and arms no path in
//! `on_signal`, whose handler would end the process before `--state` is saved.
//!
//! Owns: [`live`] and the signals. Must not: count, render, or exit the process.

use std::sync::Arc;
use std::time::Duration;

use crate::app::Context;
use crate::error::{CliError, ExitCode};

use super::shared::{cannot_write_state, Shared, Watched};
use super::{http, listen, poll};

/// The process's life: the HTTP server and the poller, until SIGTERM or SIGINT; then the
/// poller's page finished (3 s at most: one stuck on the database is not waited for),
/// `--state` saved, exit 0.
pub(super) fn live(
    ctx: &mut Context,
    listen: &str,
    shared: Arc<Shared>,
    watched: Arc<Watched>,
) -> anyhow::Result<ExitCode> {
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
        let candidates = match watched.sets.names().as_slice() {
            [] => "no candidate".to_string(),
            names => format!("candidates {}", names.join(", ")),
        };
        writeln!(
            ctx.err,
            "retryctl watch: listening on http://{addr} (queues {}; {candidates}; state `{}`)",
            // Names from anywhere: a line break in one would start a line of its own.
            crate::output::text::shown(&watched.queues.join(", ")),
            crate::output::text::shown(&shared.path.display().to_string())
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
