//! `watch`'s HTTP server, bounded (docs/watch.md "Its HTTP server"): whatever the clients do,
//! `/metrics` and `/healthz` are served, the poller reaches the database and `--state` is
//! written. A request whose header is not complete within [`HEADER_READ_TIMEOUT`] is closed
//! (a header trickled a byte every few seconds included), one whose header passes
//! [`MAX_HEADER_BYTES`] is answered 431 and closed, and the open connections are capped below
//! the process's file limit, with descriptors kept back for the database connections, the
//! log and `--state`: at the cap, the oldest connection is closed to let the new one in, so
//! that idle or half-sent connections can never lock a scrape out.
//!
//! Owns: the accept loop and each connection's task. Must not: know the routes (the router
//! has them), count or read the state.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

/// How long a client has to send a request's whole header, from the connection's start or the
/// end of the previous request.
pub(super) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes of one request's header: past them, 431 and the connection closed.
pub(super) const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Descriptors kept back from the connections: the two database connections, `--state` and
/// its temporary file, the log, the listener, and the runtime's own.
const RESERVED_DESCRIPTORS: usize = 64;

/// The open connections' cap: the soft file limit less [`RESERVED_DESCRIPTORS`], at least 16.
fn max_connections() -> usize {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            let soft = usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX);
            return soft.saturating_sub(RESERVED_DESCRIPTORS).clamp(16, 65_536);
        }
    }
    1024
}

/// `--listen`'s host resolved to an address to listen on (its syntax is checked with the other
/// flags); a usage error naming `--listen` when it names none (`256.0.0.1:80`).
pub(super) fn resolves(listen: &str) -> Result<(), crate::error::CliError> {
    use std::net::ToSocketAddrs;
    match listen.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(no_address(listen, "it resolves to no address")),
        Err(e) => Err(no_address(listen, &e.to_string())),
    }
}

fn no_address(listen: &str, why: &str) -> crate::error::CliError {
    crate::error::CliError::usage(format!(
        "invalid `--listen` address `{listen}`: not an address to listen on ({why}); give HOST:PORT such as `0.0.0.0:9464`"
    ))
}

/// The open connections, oldest first: each one's number and what closes it.
type Open = Arc<Mutex<VecDeque<(u64, oneshot::Sender<()>)>>>;

/// Serves `router` on `listener` until `stop` resolves; then stops accepting and lets each
/// connection finish its request in flight (the caller bounds that wait).
pub(super) async fn serve(listener: TcpListener, router: Router, stop: impl Future<Output = ()>) {
    let cap = max_connections();
    let open: Open = Arc::default();
    let (shutdown, shutdown_rx) = watch::channel(());
    tokio::pin!(stop);
    let mut next = 0u64;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                // EMFILE and friends: wait and try again.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        next += 1;
        let (close, closed) = oneshot::channel();
        {
            let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
            if open.len() >= cap {
                // The oldest goes: a scrape takes milliseconds, a connection that has been
                // open longest is the likeliest idle or stalled.
                if let Some((_, oldest)) = open.pop_front() {
                    let _ = oldest.send(());
                }
            }
            open.push_back((next, close));
        }
        let (router, open, mut shutdown) = (router.clone(), open.clone(), shutdown_rx.clone());
        let id = next;
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(MAX_HEADER_BYTES);
            let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = closed => {}
                _ = shutdown.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            open.lock().unwrap_or_else(|e| e.into_inner()).retain(|(n, _)| *n != id);
        });
    }
    drop(listener);
    drop(shutdown);
}
