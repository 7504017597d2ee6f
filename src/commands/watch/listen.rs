//! `watch`'s HTTP server, bounded (docs/watch.md "Its HTTP server"): whatever the clients do,
//! `/metrics` and `/healthz` are served, the poller reaches the database and `--state` is
//! written. The server's own accept loop closes the oldest connection at the cap
//! (`server::serve_closing_oldest`); what bounds it is said here: a request whose header is
//! not complete within [`HEADER_READ_TIMEOUT`] is closed, one whose header passes
//! [`MAX_HEADER_BYTES`] is answered 431 and closed, and descriptors are kept back for the
//! database connections, the log and `--state` ([`RESERVED_DESCRIPTORS`]).
//!
//! Owns: those bounds, and `--listen` resolved before anything is read. Must not: accept a
//! connection itself (`server` does), know the routes (the router has them), count or read
//! the state.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use crate::server::{serve_closing_oldest, Bounds};

/// How long a client has to send a request's whole header, from the connection's start or the
/// end of the previous request.
pub(super) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes of one request's header: past them, 431 and the connection closed.
pub(super) const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Descriptors kept back from the connections: the two database connections, `--state` and
/// its temporary file, the log, the listener, and the runtime's own.
const RESERVED_DESCRIPTORS: usize = 64;

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

/// Serves `router` on `listener` until `stop` resolves, within watch's bounds; then lets each
/// connection finish its request in flight (the caller bounds that wait).
pub(super) async fn serve(listener: TcpListener, router: Router, stop: impl Future<Output = ()>) {
    let bounds = Bounds {
        header_read_timeout: HEADER_READ_TIMEOUT,
        max_header_bytes: MAX_HEADER_BYTES,
        reserved: RESERVED_DESCRIPTORS,
    };
    serve_closing_oldest(listener, router, bounds, stop).await;
}
