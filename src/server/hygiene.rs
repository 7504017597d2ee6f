//! The request hygiene around every route (and the fast path's answers): the one-line
//! request log (credentials in the query masked), the dialect header, a handler panic turned
//! into a 500 with the error body, the body limit, and the plain-text answers to unknown
//! routes and methods.
//!
//! Owns: those layers, the log line's two halves and the count of dropped log lines. Must
//! not: check credentials (`guard`), route or answer a request itself, or write the log
//! anywhere but its channel (the command writes it out).

use std::future::Future;
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::api::{ApiError, Code};
use super::body::MAX_BODY;
use crate::wire::{DIALECT_HEADER, DIALECT_V1};

/// The layers every route gets, outermost first: request log + dialect header + panic → 500
/// (one layer), body limit. Unknown routes and methods answer plain text like grpc-gateway.
pub(super) fn hygiene(router: Router, log: Option<Log>, mark: bool) -> Router {
    router
        .fallback(|| async { (StatusCode::NOT_FOUND, "Not Found\n") })
        .method_not_allowed_fallback(|| async { (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state((log, mark), log_and_mark))
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
pub(super) fn panic_response(payload: &(dyn std::any::Any + Send)) -> Response {
    ApiError::new(
        Code::Internal,
        format!("internal server error: {}", panic_payload_text(payload)),
    )
    .into_response()
}

pub(super) fn panic_payload_text(payload: &(dyn std::any::Any + Send)) -> String {
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
pub(super) fn log_start(log: Option<&Log>, method: &Method, uri: &axum::http::Uri) -> Option<String> {
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
pub(super) fn logged_target(uri: &axum::http::Uri) -> String {
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
pub(super) fn mark_and_log<B>(
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

pub(super) type Log = tokio::sync::mpsc::Sender<String>;

#[cfg(test)]
mod tests {
    use axum::routing::get;

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
