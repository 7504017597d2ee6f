//! `retryctl serve`: a local Armada-compatible server over SQLite: the REST API (docs/reference/wire.md, docs/serve.md)
//! and Armada's gRPC services (docs/reference/wire.md) on the same address, over one store.
//!
//! Owns: binding (and loading the TLS certificate), the router, and the request hygiene
//! around every route: the dialect header, authentication, the 1 MiB body limit, turning a
//! handler panic into a 500 with the error body, the one-line request log (credentials in
//! the query masked), and graceful shutdown that closes the database. Connections are
//! `accept`'s and `conn`'s (HTTP/2 is `http2`'s); every request goes through `dispatch`
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
mod conn;
mod dispatch;
mod grpc;
mod http2;
pub mod store;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine as _;

use crate::error::CliError;
use crate::wire::{Dialect, DIALECT_HEADER, DIALECT_V1};

use api::{ApiError, Code};
pub use body::BODY_READ_TIMEOUT;
pub use dispatch::{InFlight, Requests};
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

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY: usize = 1024 * 1024;

/// What `serve` was asked to do.
#[derive(Debug, Clone)]
pub struct Config {
    /// `host:port`; port 0 picks a free one.
    pub listen: String,
    pub db: Location,
    /// `user:password` pairs.
    pub basic_auth: Vec<String>,
    pub tokens: Vec<String>,
    pub allow_anonymous: bool,
    /// Where the one-line-per-request log goes; `None` for no log. A channel rather than
    /// stderr itself: the binary's main thread holds the stderr lock for its whole run, and
    /// the command writes the lines through its own writer.
    pub request_log: Option<tokio::sync::mpsc::Sender<String>>,
    /// After the shutdown signal, how long in-flight requests get before the server stops
    /// anyway (a client that never finishes its request must not keep it up forever).
    pub shutdown_grace: std::time::Duration,
    /// A connection on which no byte moved for this long is closed (docs/serve.md: idle
    /// keep-alive timeout, 10 s).
    pub idle_timeout: std::time::Duration,
    /// The TLS handshake, and then each request header, must complete within this (each),
    /// however slowly the bytes trickle (docs/serve.md: header read timeout, 10 s).
    pub header_read_timeout: std::time::Duration,
    /// A request body must have arrived in full within this of its header, whatever its
    /// credentials (docs/serve.md: 30 s; 408 and the connection closed otherwise).
    pub body_read_timeout: std::time::Duration,
    /// `--tls-cert` and `--tls-key`: speak HTTPS only.
    pub tls: Option<TlsFiles>,
    /// Open connections at most; `None`: below the process's file limit.
    pub max_connections: Option<usize>,
    /// `--dialect`: `V1` (the design dialect, marked by the dialect header) or `Upstream`
    /// (policies decoded, checked and answered as today's Armada does, no header).
    pub dialect: Dialect,
}

/// The PEM files of `serve --tls-cert CERT --tls-key KEY`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How [`Server::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Every in-flight request finished.
    Clean,
    /// Requests were still running when the grace period ran out.
    GraceExpired,
}

impl Config {
    pub fn new(listen: impl Into<String>, db: Location) -> Config {
        Config {
            listen: listen.into(),
            db,
            basic_auth: Vec::new(),
            tokens: Vec::new(),
            allow_anonymous: false,
            request_log: None,
            shutdown_grace: std::time::Duration::from_secs(10),
            idle_timeout: std::time::Duration::from_secs(10),
            header_read_timeout: std::time::Duration::from_secs(10),
            body_read_timeout: BODY_READ_TIMEOUT,
            tls: None,
            max_connections: None,
            dialect: Dialect::V1,
        }
    }
}

/// Credentials the server accepts; empty means anonymous.
#[derive(Debug, Default)]
struct AcceptedCredentials {
    basic: Vec<(String, String)>,
    tokens: Vec<String>,
}

impl AcceptedCredentials {
    fn from_config(config: &Config) -> Result<AcceptedCredentials, CliError> {
        let mut auth = AcceptedCredentials::default();
        for pair in &config.basic_auth {
            match pair.split_once(':') {
                Some((user, pass)) if !user.is_empty() => auth.basic.push((user.to_string(), pass.to_string())),
                _ => {
                    return Err(CliError::usage(
                        "`--basic-auth` expects `USER:PASSWORD` with a non-empty user",
                    ))
                }
            }
        }
        for token in &config.tokens {
            if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(CliError::usage("`--token` must be non-empty and contain no whitespace"));
            }
            auth.tokens.push(token.clone());
        }
        Ok(auth)
    }

    fn required(&self) -> bool {
        !self.basic.is_empty() || !self.tokens.is_empty()
    }

    /// `Ok` when the request may proceed. Messages name the user but never a secret.
    fn check(&self, header: Option<&HeaderValue>) -> Result<(), ApiError> {
        if !self.required() {
            return Ok(());
        }
        let unauth = |m: String| ApiError::new(Code::Unauthenticated, m);
        let Some(value) = header else {
            return Err(unauth(format!(
                "request could not be authenticated: no credentials presented; this server requires {}",
                self.schemes()
            )));
        };
        let text = value
            .to_str()
            .map_err(|_| unauth("request could not be authenticated: the Authorization header is not ASCII".into()))?;
        let (scheme, rest) = text.split_once(' ').unwrap_or((text, ""));
        let rest = rest.trim();
        if scheme.eq_ignore_ascii_case("basic") && !self.basic.is_empty() {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .ok()
                .and_then(|b| String::from_utf8(b).ok());
            let Some((user, pass)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
                return Err(unauth(
                    "request could not be authenticated: malformed basic credentials".into(),
                ));
            };
            let ok = self
                .basic
                .iter()
                .any(|(u, p)| same(u.as_bytes(), user.as_bytes()) & same(p.as_bytes(), pass.as_bytes()));
            return if ok {
                Ok(())
            } else {
                Err(unauth(format!(
                    "request could not be authenticated: invalid credentials presented for user {user:?}"
                )))
            };
        }
        if scheme.eq_ignore_ascii_case("bearer") && !self.tokens.is_empty() {
            let ok = self.tokens.iter().any(|t| same(t.as_bytes(), rest.as_bytes()));
            return if ok {
                Ok(())
            } else {
                Err(unauth(
                    "request could not be authenticated: invalid bearer token".into(),
                ))
            };
        }
        Err(unauth(format!(
            "request could not be authenticated: unsupported scheme {scheme:?}; this server requires {}",
            self.schemes()
        )))
    }

    /// The `WWW-Authenticate` challenge of a 401 (RFC 9110 §11.6.1).
    fn challenge(&self) -> HeaderValue {
        HeaderValue::from_static(match (self.basic.is_empty(), self.tokens.is_empty()) {
            (false, false) => "Basic realm=\"retryctl\", Bearer realm=\"retryctl\"",
            (false, true) => "Basic realm=\"retryctl\"",
            _ => "Bearer realm=\"retryctl\"",
        })
    }

    fn schemes(&self) -> &'static str {
        match (self.basic.is_empty(), self.tokens.is_empty()) {
            (false, false) => "basic auth or a bearer token",
            (false, true) => "basic auth",
            _ => "a bearer token",
        }
    }
}

/// Comparison whose time does not depend on where the inputs differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
        let max = config.max_connections.unwrap_or_else(conn::default_max_connections);
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

/// What every API request is checked against before its handler runs.
struct Guard {
    auth: Arc<AcceptedCredentials>,
    check_host: bool,
    failures: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (u32, Instant)>>,
}

/// Failed authentications one address may make per window before it is refused (429)
/// until the window ends: enough for typos, too few to guess a password.
const MAX_AUTH_FAILURES: u32 = 10;
const AUTH_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

impl Guard {
    /// Whether `ip` is over its failed-authentication budget.
    fn throttled(&self, ip: std::net::IpAddr) -> bool {
        let map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&ip)
            .is_some_and(|(n, since)| *n >= MAX_AUTH_FAILURES && since.elapsed() < AUTH_WINDOW)
    }

    /// Host check, then credentials (and their per-address budget): what every API route
    /// checks before it reads the body. `host` is the request's (only) `Host`, looked up once
    /// by the caller. `Some` is the refusal, the whole answer.
    fn refusal(
        &self,
        headers: &axum::http::HeaderMap,
        host: Option<&HeaderValue>,
        ip: Option<std::net::IpAddr>,
    ) -> Option<Response> {
        let e = self.screen(headers, host, ip).err()?;
        let challenge = e.code == Code::Unauthenticated;
        let mut resp = e.into_response();
        if challenge {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, self.auth.challenge());
        }
        Some(resp)
    }

    /// The checks of [`Guard::refusal`] for either front door: `host` is the `Host` (REST) or
    /// the `:authority` (gRPC); the credentials are `headers`' `Authorization` (gRPC: the
    /// `authorization` metadata, which is that header).
    fn screen(
        &self,
        headers: &axum::http::HeaderMap,
        host: Option<&HeaderValue>,
        ip: Option<std::net::IpAddr>,
    ) -> Result<(), ApiError> {
        if self.check_host {
            check_host(host)?;
        }
        if let Some(ip) = ip.filter(|ip| self.auth.required() && self.throttled(*ip)) {
            return Err(ApiError::new(
                Code::TooManyRequests,
                format!(
                    "too many failed authentication attempts from {ip}; try again in {} seconds",
                    AUTH_WINDOW.as_secs()
                ),
            ));
        }
        // Without credentials to check, the header is not even looked up (every GET pays it).
        if !self.auth.required() {
            return Ok(());
        }
        if let Err(e) = self.auth.check(headers.get(header::AUTHORIZATION)) {
            if let Some(ip) = ip {
                self.record_failure(ip);
            }
            return Err(e);
        }
        Ok(())
    }

    fn record_failure(&self, ip: std::net::IpAddr) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > 10_000 {
            map.retain(|_, (_, since)| since.elapsed() < AUTH_WINDOW);
        }
        let entry = map.entry(ip).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= AUTH_WINDOW {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
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

/// The layers every route gets, outermost first: request log + dialect header + panic → 500
/// (one layer), body limit. Unknown routes and methods answer plain text like grpc-gateway.
fn hygiene(router: Router, log: Option<Log>, mark: bool) -> Router {
    router
        .fallback(|| async { (StatusCode::NOT_FOUND, "Not Found\n") })
        .method_not_allowed_fallback(|| async { (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state((log, mark), log_and_mark))
}

/// Host check, credentials, then the write's media type; all before the body is read.
async fn authenticate(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let ip = req
        .extensions()
        .get::<axum::extract::ConnectInfo<conn::Peer>>()
        .map(|c| c.0 .0.ip());
    if let Some(resp) = guard.refusal(req.headers(), req.headers().get(header::HOST), ip) {
        return resp;
    }
    if matches!(*req.method(), Method::POST | Method::PUT) {
        if let Err(e) = check_json(req.headers().get(header::CONTENT_TYPE)) {
            return e.into_response();
        }
    }
    next.run(req).await
}

/// A write's body must be declared JSON: a browser page can send `text/plain` (or a form)
/// to any address without a CORS preflight, but not `application/json` (docs/serve.md).
fn check_json(value: Option<&HeaderValue>) -> Result<(), ApiError> {
    let text = value.and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = text.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    let got = if text.is_empty() {
        "none".to_string()
    } else {
        format!("`{text}`")
    };
    Err(ApiError::new(
        Code::UnsupportedMediaType,
        format!("request body must be sent with `Content-Type: application/json`, got {got}"),
    ))
}

/// In anonymous mode, the `Host` must be a loopback name or address, as `kubectl proxy`
/// checks: a web page that rebinds its own DNS name to 127.0.0.1 sends its own name.
fn check_host(value: Option<&HeaderValue>) -> Result<(), ApiError> {
    let text = value.and_then(|v| v.to_str().ok()).unwrap_or("");
    // Strip the port: `[::1]:8080`, `127.0.0.1:8080`, `localhost:8080`.
    let host = if let Some(rest) = text.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        text.rsplit_once(':').map_or(text, |(h, _)| h)
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        // Without lowercasing a copy: this runs on every anonymous request.
        || host
            .len()
            .checked_sub(".localhost".len())
            .is_some_and(|at| host.as_bytes()[at..].eq_ignore_ascii_case(b".localhost"))
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback {
        return Ok(());
    }
    Err(ApiError::new(
        Code::PermissionDenied,
        format!(
            "host `{}` is not a loopback name or address; an anonymous server answers only requests addressed to localhost (protection against DNS rebinding)",
            text.escape_default()
        ),
    ))
}

async fn catching(handler: impl Future<Output = Response>) -> Response {
    use futures_util::FutureExt;
    // AssertUnwindSafe: after a panic nothing of the request is used again; shared state
    // (the store) is behind locks that recover from poisoning.
    match std::panic::AssertUnwindSafe(handler).catch_unwind().await {
        Ok(resp) => resp,
        Err(payload) => panic_response(payload.as_ref()),
    }
}

/// The 500 a panicking handler answers.
fn panic_response(payload: &(dyn std::any::Any + Send)) -> Response {
    ApiError::new(
        Code::Internal,
        format!("internal server error: {}", panic_payload_text(payload)),
    )
    .into_response()
}

fn panic_payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("handler panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("handler panicked: {s}")
    } else {
        "handler panicked".into()
    }
}

/// Adds the dialect header to every response, turns a panic anywhere in a handler into a 500
/// with the error body instead of a dropped connection, and logs one line per request:
/// method, path and query (credential values masked: [`logged_target`]), status, duration.
/// Headers, where credentials travel, are never logged.
///
/// One layer for the three, and one `String` per line: every layer and allocation is paid by
/// every GET (BENCHMARKS.md "serve"). The panic is caught where the handler's future is polled, on
/// the request's own task: a task spawned per request for this cost a fifth of a GET's CPU.
async fn log_and_mark(State((log, mark)): State<(Option<Log>, bool)>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let line = log_start(log.as_ref(), req.method(), req.uri());
    let mut resp = catching(next.run(req)).await;
    mark_and_log(&mut resp, log.as_ref(), line, started, mark);
    resp
}

/// The first half of a request's log line, `retryctl serve: GET /path?query`, taken before
/// the request is handed on; `None` without a log.
fn log_start(log: Option<&Log>, method: &Method, uri: &axum::http::Uri) -> Option<String> {
    use std::fmt::Write as _;
    log.map(|_| {
        let mut line = String::with_capacity(48 + uri.path().len() + uri.query().map_or(0, str::len));
        let _ = write!(line, "retryctl serve: {method} ");
        push_target(&mut line, uri);
        line
    })
}

/// A request's path and query as logged: the values of credential parameters (`token`,
/// `access_token`, `password`, `key`, `secret`, … as in `redact`) are masked, as a client
/// that puts its token in the URL must not find it in the server's log (docs/serve.md).
fn logged_target(uri: &axum::http::Uri) -> String {
    let mut out = String::with_capacity(uri.path().len() + uri.query().map_or(0, |q| q.len() + 1));
    push_target(&mut out, uri);
    out
}

fn push_target(out: &mut String, uri: &axum::http::Uri) {
    let path = uri.path();
    out.push_str(if path.is_empty() { "/" } else { path });
    if let Some(query) = uri.query() {
        out.push('?');
        crate::redact::push_masked_params(out, query);
    }
}

/// Adds the dialect header (with `mark`: not in the upstream dialect, whose server is today's
/// Armada to its clients) and sends the log line, completed with the status and the time
/// since `started`. Shared by the router's layer and the fast path (`dispatch`).
fn mark_and_log<B>(
    resp: &mut axum::http::Response<B>,
    log: Option<&Log>,
    line: Option<String>,
    started: Instant,
    mark: bool,
) {
    use std::fmt::Write as _;
    if mark {
        resp.headers_mut()
            .insert(DIALECT_HEADER, HeaderValue::from_static(DIALECT_V1));
    }
    if let (Some(log), Some(mut line)) = (log, line) {
        let micros = started.elapsed().as_micros();
        let _ = write!(
            line,
            " {} {}.{:03}ms",
            resp.status().as_u16(),
            micros / 1000,
            micros % 1000
        );
        // Never waits: a reader that is behind (a full pipe) or gone costs the line, counted,
        // not the request (docs/serve.md).
        if log.try_send(line).is_err() {
            count_dropped_log_lines(1);
        }
    }
}

static DROPPED_LOG_LINES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts request-log lines that could not be written (also used by the command when
/// stderr refuses a batch of lines).
pub fn count_dropped_log_lines(n: u64) {
    DROPPED_LOG_LINES.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
}

/// How many request-log lines were dropped since the process started.
pub fn dropped_log_lines() -> u64 {
    DROPPED_LOG_LINES.load(std::sync::atomic::Ordering::Relaxed)
}

type Log = tokio::sync::mpsc::Sender<String>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handler_panic_is_a_500_with_the_error_body() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let resp = rt.block_on(catching(async {
            if true {
                panic!("boom");
            }
            StatusCode::OK.into_response()
        }));
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = rt.block_on(axum::body::to_bytes(resp.into_body(), 1 << 16)).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["message"], "internal server error: handler panicked: boom");
        assert_eq!(v["code"], 13);
    }

    #[test]
    fn basic_and_bearer_credentials() {
        let mut c = Config::new("127.0.0.1:0", Location::InMemory);
        c.basic_auth = vec!["admin:s3cret".into()];
        c.tokens = vec!["tok".into()];
        let auth = AcceptedCredentials::from_config(&c).unwrap();
        let hv = |s: &str| HeaderValue::from_str(s).unwrap();
        let basic = |s: &str| {
            hv(&format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            ))
        };
        assert!(auth.check(Some(&basic("admin:s3cret"))).is_ok());
        assert!(auth.check(Some(&hv("bearer tok"))).is_ok());
        assert_eq!(
            auth.check(Some(&basic("admin:nope"))).unwrap_err().message,
            "request could not be authenticated: invalid credentials presented for user \"admin\""
        );
        assert_eq!(
            auth.check(None).unwrap_err().message,
            "request could not be authenticated: no credentials presented; this server requires basic auth or a bearer token"
        );
        assert_eq!(
            auth.check(Some(&hv("Bearer tok2"))).unwrap_err().message,
            "request could not be authenticated: invalid bearer token"
        );
        let mut bad = Config::new("127.0.0.1:0", Location::InMemory);
        bad.basic_auth = vec!["nopassword".into()];
        assert!(AcceptedCredentials::from_config(&bad).is_err());
    }

    /// Loopback names and addresses pass the DNS-rebinding check, with or without a port,
    /// in any case; anything else is refused.
    #[test]
    fn only_loopback_hosts_pass_the_rebinding_check() {
        let pass = |h: &str| check_host(Some(&HeaderValue::from_str(h).unwrap())).is_ok();
        for ok in [
            "localhost",
            "LocalHost:8080",
            "app.localhost",
            "A.LOCALHOST:80",
            ".localhost",
            "127.0.0.1:8080",
            "127.1.2.3",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(pass(ok), "{ok}");
        }
        for refused in [
            "",
            "xlocalhost",
            "localhost.evil.example",
            "evil.localhost.example:80",
            "localhos",
            "10.0.0.1:8080",
            "[::2]:80",
            "example.com",
        ] {
            assert!(!pass(refused), "{refused}");
        }
        assert!(check_host(None).is_err());
    }

    async fn boom() -> &'static str {
        panic!("kaboom")
    }

    /// A handler that panics answers 500 with the error body and the dialect header, and
    /// the server keeps serving.
    #[test]
    fn a_panicking_handler_answers_500() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (addr, stop) = rt.block_on(async {
            let app = hygiene(
                Router::new()
                    .route("/boom", get(boom))
                    .route("/fine", get(|| async { "fine" })),
                None,
                true,
            );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            tokio::spawn(async move {
                axum::serve(l, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await
                    .unwrap()
            });
            (addr, tx)
        });
        let client = reqwest::blocking::Client::new();
        let resp = client.get(format!("http://{addr}/boom")).send().unwrap();
        assert_eq!(resp.status().as_u16(), 500);
        assert_eq!(resp.headers()[DIALECT_HEADER], "v1");
        assert_eq!(
            resp.text().unwrap(),
            r#"{"error":"internal server error: handler panicked: kaboom","code":13,"message":"internal server error: handler panicked: kaboom"}"#
        );
        let resp = client.get(format!("http://{addr}/fine")).send().unwrap();
        assert_eq!(resp.text().unwrap(), "fine");
        let _ = stop.send(());
    }
}
