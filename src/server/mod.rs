//! `retryctl serve`: a local Armada-compatible server over SQLite: the REST API (docs/reference/wire.md, docs/serve.md)
//! and Armada's gRPC services (docs/reference/wire.md) on the same address, over one store.
//!
//! Owns: binding (and loading the TLS certificate), the router, and graceful shutdown that
//! closes the database. Around every route: `guard` (authentication and the DNS-rebinding
//! check) and `hygiene` (the dialect header, the 1 MiB body limit of `body`, turning a
//! handler panic into a 500 with the error body, the one-line request log with credentials
//! in the query masked); `config` is what the command asked for. Connections are
//! `accept`'s and `conn`'s (`watch`'s plain HTTP/1.1 server, which closes its oldest
//! connection at the cap, `close_oldest`'s; HTTP/2 is `http2`'s; an HTTP/1.1 request's framing as sent,
//! `framing`'s); every request goes through `dispatch`
//! (framing checks, the hot reads answered with these same checks, the list of requests in
//! flight), and its body through `body`'s deadline, before the router sees it; `grpc`
//! answers gRPC calls with the same checks, store and validation.
//! Must not: print anything but the request log (the command prints the startup line), exit
//! the process, or read the environment; `api` has the handlers, `store` the data (its
//! group-commit writer, the read cache every GET answers from, and the SQLite file).
//!
//! Decisions the design leaves open: `/health` needs no credentials (load balancers and
//! readiness probes call it without any); unknown routes answer upstream's plain-text
//! `Not Found` so a client can tell "no such route" from "no such resource".

mod accept;
pub mod api;
mod body;
mod close_oldest;
mod config;
mod conn;
mod dispatch;
mod framing;
mod grpc;
mod guard;
mod http2;
mod hygiene;
pub mod store;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::middleware;
use axum::routing::{get, post};
use axum::Router;

use crate::error::CliError;
use crate::wire::Dialect;

pub use body::{BODY_READ_TIMEOUT, MAX_BODY};
pub use close_oldest::{serve_closing_oldest, Bounds};
pub use config::{Config, TlsFiles};
pub use dispatch::{InFlight, Requests};
use guard::{authenticate, AcceptedCredentials, Guard};
pub use hygiene::{count_dropped_log_lines, dropped_log_lines};
use hygiene::{hygiene, Log};
pub use store::Location;
use store::Store;

/// `--listen` (`serve`, `watch`) must be `HOST:PORT` (`127.0.0.1:8080`, `[::1]:0`, `localhost:8080`): anything
/// else is a usage error (exit 2) here, before binding, rather than a failed bind (exit 1).
/// Whether the host resolves and the port is free is left to the bind.
pub fn check_listen(addr: &str) -> Result<(), CliError> {
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

/// How [`Server::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Every in-flight request finished.
    Clean,
    /// Requests were still running when the grace period ran out.
    GraceExpired,
}

/// A bound server, ready to run.
pub struct Server {
    listener: conn::GuardedListener,
    options: accept::Options,
    grace: std::time::Duration,
    addr: SocketAddr,
    store: Arc<Store>,
    app: Arc<dispatch::App>,
    dialect: Dialect,
}

impl Server {
    /// Checks the flags, opens (and migrates) the database and binds the address. Refuses a
    /// non-loopback address without credentials unless `allow_anonymous`.
    pub async fn bind(config: Config) -> anyhow::Result<Server> {
        let auth = AcceptedCredentials::from_config(&config)?;
        // Before binding and opening the database: a bad certificate is refused at start,
        // naming the file, not discovered at the first handshake.
        let tls = match &config.tls {
            Some(files) => {
                let mut tls = crate::tls::server_config(&files.cert, &files.key)?;
                // gRPC over TLS needs HTTP/2, chosen by ALPN; REST clients keep HTTP/1.1.
                tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                Some(tokio_rustls::TlsAcceptor::from(Arc::new(tls)))
            }
            None => None,
        };
        let listener = listen(&config.listen).await.map_err(|e| {
            let err = CliError::failed(format!("cannot listen on `{}`: {e}", config.listen));
            if e.kind() == std::io::ErrorKind::AddrInUse {
                err.with_hint("another process uses that port: pick another with `--listen 127.0.0.1:PORT`")
            } else {
                err
            }
        })?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && !auth.required() && !config.allow_anonymous {
            return Err(CliError::usage(format!(
                "refusing to listen on {addr} without authentication: anyone who can reach it could change retry policies"
            ))
            .with_hint("add `--basic-auth USER:PASSWORD` or `--token TOKEN`, or `--allow-anonymous` on a trusted network")
            .into());
        }
        let db = config.db.clone();
        let store = tokio::task::spawn_blocking(move || Store::open(db)).await??;
        let store = Arc::new(store);
        // DNS-rebinding guard (docs/serve.md): only when nobody needs credentials and the operator
        // did not declare the network trusted with `--allow-anonymous`.
        let check_host = !auth.required() && !config.allow_anonymous;
        let guard = Guard {
            auth: Arc::new(auth),
            check_host,
            failures: Default::default(),
        };
        let guard = Arc::new(guard);
        let router = router(store.clone(), guard.clone(), config.request_log.clone(), config.dialect);
        let app = Arc::new(dispatch::App::new(
            router,
            store.clone(),
            guard,
            config.request_log,
            config.body_read_timeout,
            config.dialect,
        ));
        let max = config
            .max_connections
            .unwrap_or_else(|| conn::max_connections(conn::SERVE_RESERVED));
        Ok(Server {
            listener: conn::GuardedListener::new(listener, max, config.idle_timeout),
            options: accept::Options {
                header_read_timeout: config.header_read_timeout,
                tls,
            },
            grace: config.shutdown_grace,
            addr,
            store,
            app,
            dialect: config.dialect,
        })
    }

    /// The requests the server is busy with; still valid after [`Server::run`] took it.
    pub fn requests(&self) -> Requests {
        self.app.requests()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:8080`, or `https://...` with TLS.
    pub fn url(&self) -> String {
        let scheme = if self.options.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `retryctl serve: listening on http://127.0.0.1:8080 (database: PATH)` (`https://`
    /// with TLS), and `, dialect: upstream` when it answers as today's Armada.
    pub fn startup_line(&self) -> String {
        format!(
            "retryctl serve: listening on {} (database: {}{})",
            self.url(),
            self.store.location(),
            if self.dialect == Dialect::Upstream {
                ", dialect: upstream"
            } else {
                ""
            }
        )
    }

    /// Serves until `shutdown` resolves, lets in-flight requests finish (for at most the
    /// grace period), then checkpoints and closes the database. A write still running when
    /// the grace period ends either commits before the close (the store's writer thread
    /// orders them) or fails with 503; it is never half-applied.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<Shutdown> {
        let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
        let signal = async move {
            shutdown.await;
            let _ = signalled_tx.send(());
        };
        let grace = self.grace;
        let deadline = async move {
            match signalled_rx.await {
                Ok(()) => tokio::time::sleep(grace).await,
                // The serve future ended (and dropped the signal) before any signal.
                Err(_) => std::future::pending::<()>().await,
            }
        };
        let serve = accept::serve(self.listener, self.app, self.options, signal);
        let outcome = tokio::select! {
            () = serve => Shutdown::Clean,
            () = deadline => Shutdown::GraceExpired,
        };
        let store = self.store;
        tokio::task::spawn_blocking(move || store.close())
            .await?
            .map_err(|e| anyhow::anyhow!("cannot close the database cleanly: {e}"))?;
        Ok(outcome)
    }
}

/// How many connections the kernel holds for `accept`. `TcpListener::bind` (mio) asks for
/// 128, as std does: a burst of more new connections than that overflows the queue, and a
/// client the kernel then answered with a SYN cookie believes it is connected while the
/// server never sees it (seen with 1,100 sockets opened at once). 1,024 is what tokio asked
/// for before mio changed, and the kernel caps it at `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 1024;

/// Binds `address` (`HOST:PORT`; the first address the host resolves to) the way
/// `TcpListener::bind` does (`SO_REUSEADDR`), with [`LISTEN_BACKLOG`].
async fn listen(address: &str) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(address).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(addr).and_then(|()| socket.listen(LISTEN_BACKLOG)) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last
        .unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the address resolves to nothing")))
}

fn router(store: Arc<Store>, auth: Arc<Guard>, log: Option<Log>, dialect: Dialect) -> Router {
    use api::*;
    let api = Router::new()
        .route("/v1/retry-policy", post(create_policy))
        .route(
            "/v1/retry-policy/",
            get(empty_policy_name).put(empty_policy_name).delete(empty_policy_name),
        )
        // A catch-all, so that a name containing `/` is refused as an invalid name (400)
        // rather than falling through to "no such route".
        .route(
            "/v1/retry-policy/{*name}",
            get(get_policy).put(update_policy).delete(delete_policy),
        )
        .route("/v1/retry-policies", get(list_policies))
        .route("/v1/queue", post(create_queue))
        .route(
            "/v1/queue/",
            get(empty_queue_name).put(empty_queue_name).delete(empty_queue_name),
        )
        .route(
            "/v1/queue/{*name}",
            get(get_queue).put(update_queue).delete(delete_queue),
        )
        .route("/v1/batched/queues", get(stream_queues))
        .route("/v1/batched/create_queues", post(create_queues))
        .route("/v1/batched/update_queues", axum::routing::put(update_queues))
        .route_layer(middleware::from_fn_with_state(auth, authenticate))
        .layer(axum::Extension(dialect))
        .with_state(store);
    hygiene(
        api.route("/health", get(|| async { "ok" })),
        log,
        dialect == Dialect::V1,
    )
}
