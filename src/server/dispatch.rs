//! The request service of `serve`: what every request on every connection goes through.
//!
//! Owns: [`App::call`], in this order: the framing checks RFC 9112 asks of a request's
//! header (one `Host`: 400 and close otherwise); the hot reads answered directly; the body
//! deadline ([`body::Deadline`](super::body::Deadline)) and the list of requests in flight
//! ([`Requests`]) around everything handed to the axum router.
//!
//! The fast path recognises `GET /health`, `GET /v1/retry-policies` and `GET
//! /v1/retry-policy/{name}` (a plain name: no `/`, no `%`) and answers them with the same
//! functions, checks and hygiene the router runs for them (`Guard::refusal`, `api::*_answer`,
//! `mark_and_log`, a panic → 500). Why: the router's matching, its two `from_fn` layers, the
//! body-limit layer and the boxed services they clone per request were ~20% of a GET's CPU
//! (perf under wrk, BENCHMARKS.md "serve"), and these three routes are what clients poll. Their
//! answers are ready at once, so they are never "in flight" and cost no timer.
//!
//! Must not: know connections, TLS or HTTP versions beyond a request's own header (that is
//! `accept`'s), or answer anything the router would answer differently. Any other method
//! (`HEAD` included), path, or a name the router would decode or refuse (`%`, `/`, empty)
//! goes to the router untouched, which keeps 404/405, the body limit, the media-type check
//! of writes and every other route exactly as they were; `tests` compares both paths
//! answer for answer.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Method, Request, Version};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::{Body, Bytes};
use hyper_util::service::TowerToHyperService;

use super::api::{self, ApiError};
use super::body::Deadline;
use super::conn::Peer;
use super::guard::Guard;
use super::hygiene::{log_start, logged_target, mark_and_log, panic_response, Log};
use super::store::Store;

/// What every connection serves requests with.
pub struct App {
    /// Every route, with its layers: what the fast path does not take.
    router: TowerToHyperService<Router>,
    /// The gRPC services (HTTP/2 requests with `content-type: application/grpc`).
    pub grpc: super::grpc::Grpc,
    store: Arc<Store>,
    guard: Arc<Guard>,
    log: Option<Log>,
    /// How long a request body may take after its header (docs/serve.md: 30 s).
    body_timeout: Duration,
    requests: Requests,
    /// Whether answers carry the dialect header (not in the upstream dialect).
    mark: bool,
}

/// The routes of the fast path.
enum Hot<'a> {
    Health,
    Policies,
    Policy(&'a str),
}

impl App {
    pub fn new(
        router: Router,
        store: Arc<Store>,
        guard: Arc<Guard>,
        log: Option<Log>,
        body_timeout: Duration,
        dialect: crate::wire::Dialect,
    ) -> App {
        App {
            router: TowerToHyperService::new(router),
            grpc: super::grpc::Grpc::new(store.clone(), guard.clone(), log.clone(), dialect),
            store,
            guard,
            log,
            body_timeout,
            requests: Requests::default(),
            mark: dialect == crate::wire::Dialect::V1,
        }
    }

    /// The requests handed to the router whose answer is not ready yet.
    pub fn requests(&self) -> Requests {
        self.requests.clone()
    }

    /// Answers one request from `peer`. Any body type (HTTP/1.1's and HTTP/2's alike).
    pub fn call<B>(
        &self,
        req: Request<B>,
        peer: SocketAddr,
    ) -> impl Future<Output = Result<Response, Infallible>> + Send + 'static
    where
        B: Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        use futures_util::future::Either;
        let host = match host(&req) {
            Ok(host) => host,
            Err(message) => return Either::Left(std::future::ready(Ok(self.misframed(&req, message)))),
        };
        if let Some(resp) = self.fast(&req, host, peer) {
            return Either::Left(std::future::ready(Ok(resp)));
        }
        let registered = self.requests.register(&req, peer);
        let mut req = req.map(|body| Deadline::new(body, self.body_timeout));
        // What `authenticate` rate-limits failed attempts by.
        req.extensions_mut().insert(ConnectInfo(Peer(peer)));
        let answer = hyper::service::Service::call(&self.router, req);
        Either::Right(async move {
            let resp = answer.await;
            drop(registered);
            resp
        })
    }

    /// The 400 of a request [`host`] or `framing` refused (`message`), logged, with the
    /// connection closed: a client that frames its requests wrongly cannot be trusted to
    /// frame the next one right.
    pub(super) fn misframed<B>(&self, req: &Request<B>, message: String) -> Response {
        let started = Instant::now();
        let line = log_start(self.log.as_ref(), req.method(), req.uri());
        let mut resp = ApiError::invalid(message).into_response();
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        mark_and_log(&mut resp, self.log.as_ref(), line, started, self.mark);
        resp
    }

    /// The answer to `req` (whose `Host` is `host`) when it is one of the hot reads; `None`
    /// hands it to the router.
    pub fn fast<B>(&self, req: &Request<B>, host: Option<&HeaderValue>, peer: SocketAddr) -> Option<Response> {
        if req.method() != Method::GET {
            return None;
        }
        let hot = match req.uri().path() {
            "/health" => Hot::Health,
            "/v1/retry-policies" => Hot::Policies,
            path => {
                let name = path.strip_prefix("/v1/retry-policy/")?;
                // The router percent-decodes `{name}` and refuses a name with `/` in its own
                // way: leave both to it.
                if name.is_empty() || name.contains(['/', '%']) {
                    return None;
                }
                Hot::Policy(name)
            }
        };
        let started = Instant::now();
        let line = log_start(self.log.as_ref(), req.method(), req.uri());
        // AssertUnwindSafe: as in `catching`, nothing of the request is used after a panic
        // and the store's locks recover from poisoning.
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.answer(hot, req, host, peer)));
        let mut resp = answer.unwrap_or_else(|payload| panic_response(payload.as_ref()));
        mark_and_log(&mut resp, self.log.as_ref(), line, started, self.mark);
        // What axum's route future adds last to every answer whose length is known.
        if !resp.headers().contains_key(header::CONTENT_LENGTH) {
            if let Some(len) = axum::body::HttpBody::size_hint(resp.body()).exact() {
                resp.headers_mut()
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            }
        }
        Some(resp)
    }

    fn answer<B>(&self, hot: Hot<'_>, req: &Request<B>, host: Option<&HeaderValue>, peer: SocketAddr) -> Response {
        match hot {
            // Like the router's `/health`: no credentials, a `&str` answer.
            Hot::Health => "ok".into_response(),
            Hot::Policies | Hot::Policy(_) => {
                if let Some(resp) = self.guard.refusal(req.headers(), host, Some(peer.ip())) {
                    return resp;
                }
                match hot {
                    Hot::Policy(name) => api::policy_answer(&self.store, name),
                    _ => api::policies_answer(&self.store),
                }
            }
        }
    }
}

/// The request's one `Host` (what the DNS-rebinding check reads: looked up once here), or
/// why it is refused. RFC 9112 §3.2: a request with more than one, or an HTTP/1.1 request
/// without one, is answered 400. Which of two `Host`s would the rebinding check read?
/// Neither: the request is refused before it. HTTP/2 carries the authority in `:authority`,
/// so only more than one `Host` is refused there.
fn host<B>(req: &Request<B>) -> Result<Option<&HeaderValue>, String> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) if req.version() == Version::HTTP_11 => {
            Err("request has no `Host` header; HTTP/1.1 requires exactly one (RFC 9112 section 3.2)".to_string())
        }
        (Some(_), Some(_)) => Err(format!(
            "request has {} `Host` headers; HTTP allows exactly one (RFC 9112 section 3.2)",
            2 + hosts.count()
        )),
        (host, _) => Ok(host),
    }
}

/// The requests handed to the router whose answer is not ready yet (a body still arriving,
/// a write waiting for its commit): what a graceful shutdown waits for, listed by the
/// command when it is told to stop. Cheap to clone (one shared list).
///
/// Every write pays for its entry, so an entry is cheap: a slot in a vector (reused, no
/// hashing), the URI shared with the request (no copy; masked only when listed).
#[derive(Clone, Default)]
pub struct Requests(Arc<Mutex<Slots>>);

#[derive(Default)]
struct Slots {
    open: Vec<Option<Entry>>,
    free: Vec<usize>,
}

struct Entry {
    method: Method,
    uri: axum::http::Uri,
    peer: SocketAddr,
    since: Instant,
}

/// One request in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub method: Method,
    /// Path and query, credentials in the query masked as in the request log.
    pub target: String,
    pub peer: SocketAddr,
    /// When its header had been read.
    pub since: Instant,
}

impl Requests {
    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every request in flight, oldest first.
    pub fn in_flight(&self) -> Vec<InFlight> {
        let mut list: Vec<InFlight> = self
            .slots()
            .open
            .iter()
            .flatten()
            .map(|e| InFlight {
                method: e.method.clone(),
                target: logged_target(&e.uri),
                peer: e.peer,
                since: e.since,
            })
            .collect();
        list.sort_by_key(|r| r.since);
        list
    }

    /// Lists `req` until the returned guard is dropped.
    fn register<B>(&self, req: &Request<B>, peer: SocketAddr) -> Registered {
        let entry = Entry {
            method: req.method().clone(),
            uri: req.uri().clone(),
            peer,
            since: Instant::now(),
        };
        let mut slots = self.slots();
        let slot = match slots.free.pop() {
            Some(slot) => {
                slots.open[slot] = Some(entry);
                slot
            }
            None => {
                slots.open.push(Some(entry));
                slots.open.len() - 1
            }
        };
        Registered {
            list: self.clone(),
            slot,
        }
    }
}

/// Takes its request off the list when dropped: answered, failed, or its connection gone.
struct Registered {
    list: Requests,
    slot: usize,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut slots = self.list.slots();
        slots.open[self.slot] = None;
        slots.free.push(self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::guard::AcceptedCredentials;
    use crate::server::store::Location;
    use crate::server::{router, Config};
    use axum::body::Body;
    use axum::http::StatusCode;
    use base64::Engine as _;
    use tower::ServiceExt as _;

    /// The app, the router inside it (to call it directly) and the request log.
    fn app(config: &Config) -> (App, Router, tokio::sync::mpsc::Receiver<String>) {
        let auth = AcceptedCredentials::from_config(config).unwrap();
        let check_host = !auth.required() && !config.allow_anonymous;
        let guard = Arc::new(Guard {
            auth: Arc::new(auth),
            check_host,
            failures: Default::default(),
        });
        let store = Arc::new(Store::open(Location::InMemory).unwrap());
        let body = api::encode(&serde_json::json!({
            "name": "bench", "retryLimit": 3, "defaultAction": "Fail",
            "rules": [{"action": "Retry", "onCategory": "oom"}]
        }));
        store.create_policy("bench", body).wait().unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let router = router(store.clone(), guard.clone(), Some(tx.clone()), crate::wire::Dialect::V1);
        let app = App::new(
            router.clone(),
            store,
            guard,
            Some(tx),
            super::super::body::BODY_READ_TIMEOUT,
            crate::wire::Dialect::V1,
        );
        (app, router, rx)
    }

    /// Status, headers (in order) and body of an answer.
    async fn parts(resp: Response) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, headers, body.to_vec())
    }

    fn request(method: &Method, uri: &str, headers: &[(&str, &str)]) -> Request<Body> {
        let mut b = Request::builder().method(method.clone()).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(Body::empty()).unwrap()
    }

    /// Every request the fast path takes is answered exactly as the router answers it
    /// (status, headers in order, body), and the ones it must leave are left.
    #[test]
    fn the_fast_path_answers_like_the_router() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let peer: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("admin:s3cret")
        );
        let wrong = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("admin:nope")
        );
        let anonymous = Config::new("127.0.0.1:0", Location::InMemory);
        let mut authed = Config::new("127.0.0.1:0", Location::InMemory);
        authed.basic_auth = vec!["admin:s3cret".into()];
        authed.tokens = vec!["tok".into()];
        let mut trusted = Config::new("127.0.0.1:0", Location::InMemory);
        trusted.allow_anonymous = true;
        let local: &[(&str, &str)] = &[("host", "127.0.0.1:8080")];
        // (server flags, method, URI, headers, whether the fast path takes it)
        type Case<'a> = (&'a Config, Method, &'a str, Vec<(&'a str, &'a str)>, bool);
        let cases: Vec<Case> = vec![
            (&anonymous, Method::GET, "/health", local.to_vec(), true),
            (&anonymous, Method::GET, "/health", vec![("host", "evil.example")], true),
            (&anonymous, Method::GET, "/v1/retry-policies", local.to_vec(), true),
            (&anonymous, Method::GET, "/v1/retry-policies?x=1", local.to_vec(), true),
            (&anonymous, Method::GET, "/v1/retry-policy/bench", local.to_vec(), true),
            (
                &anonymous,
                Method::GET,
                "/v1/retry-policy/bench?a=b",
                local.to_vec(),
                true,
            ),
            (
                &anonymous,
                Method::GET,
                "/v1/retry-policy/missing",
                local.to_vec(),
                true,
            ),
            (
                &anonymous,
                Method::GET,
                "/v1/retry-policy/Not_A_Name",
                local.to_vec(),
                true,
            ),
            (
                &anonymous,
                Method::GET,
                "/v1/retry-policy/bench",
                vec![("host", "evil.example")],
                true,
            ),
            (&anonymous, Method::GET, "/v1/retry-policies", vec![], true),
            (
                &trusted,
                Method::GET,
                "/v1/retry-policy/bench",
                vec![("host", "evil.example")],
                true,
            ),
            (&authed, Method::GET, "/v1/retry-policy/bench", vec![], true),
            (
                &authed,
                Method::GET,
                "/v1/retry-policy/bench",
                vec![("authorization", &basic)],
                true,
            ),
            (
                &authed,
                Method::GET,
                "/v1/retry-policies",
                vec![("authorization", "Bearer tok")],
                true,
            ),
            (
                &authed,
                Method::GET,
                "/v1/retry-policies",
                vec![("authorization", "Bearer no")],
                true,
            ),
            (
                &authed,
                Method::GET,
                "/v1/retry-policy/bench",
                vec![("authorization", &wrong)],
                true,
            ),
            (&authed, Method::GET, "/health", vec![], true),
            // Left to the router.
            (
                &anonymous,
                Method::HEAD,
                "/v1/retry-policy/bench",
                local.to_vec(),
                false,
            ),
            (&anonymous, Method::HEAD, "/health", local.to_vec(), false),
            (&anonymous, Method::POST, "/v1/retry-policies", local.to_vec(), false),
            (&anonymous, Method::DELETE, "/health", local.to_vec(), false),
            (&anonymous, Method::GET, "/v1/retry-policy/", local.to_vec(), false),
            (&anonymous, Method::GET, "/v1/retry-policy/a/b", local.to_vec(), false),
            (
                &anonymous,
                Method::GET,
                "/v1/retry-policy/b%65nch",
                local.to_vec(),
                false,
            ),
            (&anonymous, Method::GET, "/v1/retry-policy", local.to_vec(), false),
            (&anonymous, Method::GET, "/v1/retry-policies/", local.to_vec(), false),
            (&anonymous, Method::GET, "/health/", local.to_vec(), false),
            (&anonymous, Method::GET, "/v1/queue/x", local.to_vec(), false),
            (&anonymous, Method::GET, "/nope", local.to_vec(), false),
        ];
        for (config, method, uri, headers, taken) in cases {
            let what = format!("{method} {uri} {headers:?} (auth: {})", !config.basic_auth.is_empty());
            // A fresh app each time: failed attempts are counted per app.
            let (fast_app, _, mut fast_log) = app(config);
            let req = request(&method, uri, &headers);
            let fast = fast_app.fast(&req, req.headers().get(header::HOST), peer);
            assert_eq!(fast.is_some(), taken, "{what}");
            let Some(fast) = fast else { continue };
            let (_, routed, mut routed_log) = app(config);
            let mut req = request(&method, uri, &headers);
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(crate::server::conn::Peer(peer)));
            let routed = rt.block_on(routed.oneshot(req)).unwrap();
            let (fast, routed) = rt.block_on(async { (parts(fast).await, parts(routed).await) });
            assert_eq!(fast, routed, "{what}");
            // The log lines too, but for the duration at their end.
            let line = |rx: &mut tokio::sync::mpsc::Receiver<String>| {
                let line = rx.try_recv().unwrap();
                line.rsplit_once(' ').unwrap().0.to_string()
            };
            assert_eq!(line(&mut fast_log), line(&mut routed_log), "{what}");
        }
    }

    /// The failed-attempt budget is shared by both paths: the fast path counts failures and
    /// refuses (429) once the budget is spent, as the router does.
    #[test]
    fn the_fast_path_counts_failed_attempts() {
        let mut authed = Config::new("127.0.0.1:0", Location::InMemory);
        authed.tokens = vec!["tok".into()];
        let (app, _, _log) = app(&authed);
        let peer: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let bad = [("authorization", "Bearer no")];
        for _ in 0..super::super::guard::MAX_AUTH_FAILURES {
            let resp = app
                .fast(&request(&Method::GET, "/v1/retry-policies", &bad), None, peer)
                .unwrap();
            assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        }
        let resp = app
            .fast(
                &request(
                    &Method::GET,
                    "/v1/retry-policy/bench",
                    &[("authorization", "Bearer tok")],
                ),
                None,
                peer,
            )
            .unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    }

    /// A request is listed from its registration until its guard is dropped, its query's
    /// credentials masked, oldest first; slots are reused.
    #[test]
    fn requests_in_flight_are_listed_until_answered() {
        let requests = Requests::default();
        let peer: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let first = requests.register(&request(&Method::POST, "/v1/queue?token=t&x=1", &[]), peer);
        let second = requests.register(&request(&Method::PUT, "/v1/queue/q", &[]), peer);
        let listed = |r: &Requests| -> Vec<String> {
            r.in_flight()
                .iter()
                .map(|r| format!("{} {} {}", r.method, r.target, r.peer))
                .collect()
        };
        assert_eq!(
            listed(&requests),
            [
                "POST /v1/queue?token=***&x=1 127.0.0.1:5555",
                "PUT /v1/queue/q 127.0.0.1:5555"
            ]
        );
        drop(first);
        assert_eq!(listed(&requests), ["PUT /v1/queue/q 127.0.0.1:5555"]);
        let third = requests.register(&request(&Method::DELETE, "/v1/queue/r", &[]), peer);
        assert_eq!(third.slot, 0, "the freed slot is reused");
        drop((second, third));
        assert!(requests.in_flight().is_empty());
    }
}
