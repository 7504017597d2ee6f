//! The request service of `serve`: the hot reads answered directly, everything else through
//! the axum router.
//!
//! Owns: recognising `GET /health`, `GET /v1/retry-policies` and `GET
//! /v1/retry-policy/{name}` (a plain name: no `/`, no `%`) and answering them with the same
//! functions, checks and hygiene the router runs for them (`Guard::refusal`, `api::*_answer`,
//! `mark_and_log`, a panic → 500). Why: the router's matching, its two `from_fn` layers, the
//! body-limit layer and the boxed services they clone per request were ~20% of a GET's CPU
//! (perf under wrk, issue 12 item 8), and these three routes are what clients poll.
//!
//! Must not: answer anything the router would answer differently. Any other method
//! (`HEAD` included), path, or a name the router would decode or refuse (`%`, `/`, empty)
//! goes to the router untouched, which keeps 404/405, the body limit, the media-type check
//! of writes and every other route exactly as they were; `tests` compares both paths
//! answer for answer.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::http::{header, HeaderValue, Method, Request};
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::store::Store;
use super::{api, log_start, mark_and_log, panic_response, Guard, Log};

/// What every connection serves requests with.
pub struct App {
    /// Every route, with its layers: what the fast path does not take.
    pub router: Router,
    /// The gRPC services (HTTP/2 requests with `content-type: application/grpc`).
    pub grpc: super::grpc::Grpc,
    store: Arc<Store>,
    guard: Arc<Guard>,
    log: Option<Log>,
}

/// The routes of the fast path.
enum Hot<'a> {
    Health,
    Policies,
    Policy(&'a str),
}

impl App {
    pub fn new(router: Router, store: Arc<Store>, guard: Arc<Guard>, log: Option<Log>) -> App {
        App {
            router,
            grpc: super::grpc::Grpc::new(store.clone(), guard.clone(), log.clone()),
            store,
            guard,
            log,
        }
    }

    /// The answer to `req` when it is one of the hot reads; `None` hands it to the router.
    pub fn fast<B>(&self, req: &Request<B>, peer: SocketAddr) -> Option<Response> {
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
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.answer(hot, req, peer)));
        let mut resp = answer.unwrap_or_else(|payload| panic_response(payload.as_ref()));
        mark_and_log(&mut resp, self.log.as_ref(), line, started);
        // What axum's route future adds last to every answer whose length is known.
        if !resp.headers().contains_key(header::CONTENT_LENGTH) {
            if let Some(len) = axum::body::HttpBody::size_hint(resp.body()).exact() {
                resp.headers_mut()
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            }
        }
        Some(resp)
    }

    fn answer<B>(&self, hot: Hot<'_>, req: &Request<B>, peer: SocketAddr) -> Response {
        match hot {
            // Like the router's `/health`: no credentials, a `&str` answer.
            Hot::Health => "ok".into_response(),
            Hot::Policies | Hot::Policy(_) => {
                if let Some(resp) = self.guard.refusal(req.headers(), Some(peer.ip())) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::store::Location;
    use crate::server::{router, Auth, Config};
    use axum::body::Body;
    use axum::http::StatusCode;
    use base64::Engine as _;
    use tower::ServiceExt as _;

    fn app(config: &Config) -> (App, tokio::sync::mpsc::Receiver<String>) {
        let auth = Auth::from_config(config).unwrap();
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
        let router = router(store.clone(), guard.clone(), Some(tx.clone()));
        (App::new(router, store, guard, Some(tx)), rx)
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
            let (fast_app, mut fast_log) = app(config);
            let fast = fast_app.fast(&request(&method, uri, &headers), peer);
            assert_eq!(fast.is_some(), taken, "{what}");
            let Some(fast) = fast else { continue };
            let (routed_app, mut routed_log) = app(config);
            let mut req = request(&method, uri, &headers);
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(crate::server::conn::Peer(peer)));
            let routed = rt.block_on(routed_app.router.clone().oneshot(req)).unwrap();
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
        let (app, _log) = app(&authed);
        let peer: SocketAddr = "127.0.0.1:5555".parse().unwrap();
        let bad = [("authorization", "Bearer no")];
        for _ in 0..super::super::MAX_AUTH_FAILURES {
            let resp = app
                .fast(&request(&Method::GET, "/v1/retry-policies", &bad), peer)
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
                peer,
            )
            .unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    }
}
