//! The REST transport (docs/reference/wire.md): Armada's REST API (grpc-gateway) and `retryctl serve`'s, over
//! reqwest (blocking, rustls).
//!
//! Owns: the routes, the JSON bodies (`wire`), the error body (docs/reference/wire.md) mapped to
//! [`ClientError`], timeouts, retries of idempotent requests, the `-v` request log
//! (credentials never printed), the server dialect (from the response header) and the
//! versions (ETags kept per resource path, sent back as `If-Match`). Must not: decide
//! what a write means or retry a conflict (that is `conflict`, over either transport).
//!
//! Decisions the design leaves open:
//! - Retries: GET/PUT/DELETE are tried at most 3 times, on connection errors and 503, with
//!   a 200 ms then 400 ms pause. POST is never retried (it is not idempotent: a lost answer
//!   to a create would turn into a 409 on the retry). Timeouts are not retried, so a command
//!   against a hung server ends within about one `--timeout`.
//! - The ETag of every single-resource answer is kept per path and sent as `If-Match` with
//!   the next `PUT` of that path, so a write based on a read is refused (412) when someone
//!   wrote in between; `DELETE` sends none (deleting by name is not a read-modify-write).
//! - Server-side validation errors (400 InvalidArgument) exit 3, like the same errors found
//!   offline; FailedPrecondition (400, code 9), NotFound and AlreadyExists exit 1.
//! - TLS (exit 4, never retried: trying again cannot help): a certificate that does not
//!   verify is [`ClientError::Certificate`]; `http://` to a TLS port (recognised by the 400
//!   body `retryctl serve` and Go servers send, [`crate::tls::PLAIN_HTTP_ON_TLS`]) and
//!   `https://` to a plain one (the answer to the TLS hello is not TLS) are
//!   [`ClientError::WrongScheme`], naming the URL to use.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::blocking::{Client as Http, Response};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::config::{Auth, ClientConfig};
use super::error::{codes, ClientError, Result};
use super::transport::{log, Client, Noun, WriteOp};
use super::trust;
use crate::model::{Queue, RetryPolicy};
use crate::redact::redact_url;
use crate::wire::{self, Dialect, DIALECT_HEADER, DIALECT_V1};

/// A REST client for one server.
pub struct RestClient {
    config: ClientConfig,
    http: Http,
    /// `Some(true)` once a response carried the dialect header, `Some(false)` once one did
    /// not; `None` before the first response.
    dialect: Cell<Option<bool>>,
    /// The `ETag` last seen per resource path (from a GET or a write's answer): what a later
    /// `PUT` of that path sends as `If-Match`, so that every read-modify-write is refused
    /// (412) when someone else wrote in between (docs/reference/wire.md). Upstream sends none.
    etags: RefCell<HashMap<String, String>>,
    /// `-v` lines about redirects followed, queued by the redirect policy for `send`.
    redirects: Arc<Mutex<Vec<String>>>,
}

/// The largest answer body read (a list of thousands of queues is a few MiB).
const MAX_BODY: u64 = 64 << 20;

const MAX_TRIES: u32 = 3;
const FIRST_PAUSE: Duration = Duration::from_millis(200);

impl RestClient {
    pub fn new(config: ClientConfig) -> Result<RestClient> {
        let verbose = config.verbose;
        // The redirect policy runs on reqwest's own thread, while `main` holds the stderr
        // lock: it queues its `-v` lines here and `send` prints them.
        let redirects = Arc::new(Mutex::new(Vec::new()));
        let redirect_log = redirects.clone();
        let builder =
            config
                .tls
                .apply(Http::builder(), &config.base_url)
                .map_err(|reason| ClientError::Unreachable {
                    url: config.base_url.clone(),
                    reason: format!("cannot set up TLS: {reason}"),
                })?;
        let http = builder
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(concat!("retryctl/", env!("CARGO_PKG_VERSION")))
            // A redirect to another host would carry the request (and its body) there: refuse
            // it and say where it pointed.
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                let first = &attempt.previous()[0];
                if verbose {
                    let from = attempt.previous().last().map_or("?", |u| u.as_str());
                    let line = format!(
                        "redirected ({}): {} -> {}",
                        attempt.status(),
                        redact_url(from),
                        redact_url(attempt.url().as_str())
                    );
                    redirect_log.lock().unwrap_or_else(|p| p.into_inner()).push(line);
                }
                let same = attempt.url().host_str() == first.host_str()
                    && attempt.url().port_or_known_default() == first.port_or_known_default();
                if !same {
                    let to = redact_url(attempt.url().as_str());
                    attempt.error(format!(
                        "the server redirected to another host ({to}); refusing to follow it"
                    ))
                } else if attempt.previous().len() > 5 {
                    attempt.error("more than 5 redirects")
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| ClientError::Unreachable {
                url: config.base_url.clone(),
                reason: format!("cannot set up HTTP: {e}"),
            })?;
        Ok(RestClient {
            config,
            http,
            dialect: Cell::new(None),
            etags: RefCell::new(HashMap::new()),
            redirects,
        })
    }

    /// The ETag last seen for `path`.
    fn etag(&self, path: &str) -> Option<String> {
        self.etags.borrow().get(path).cloned()
    }

    fn read_dialect(&self) -> Dialect {
        if self.dialect.get() == Some(true) {
            Dialect::V1
        } else {
            Dialect::Upstream
        }
    }

    fn read_policy(&self, v: &Value, name: &str) -> Result<RetryPolicy> {
        wire::policy_from_json(v, self.read_dialect()).map_err(|d| {
            self.bad_body(
                Method::GET,
                &format!("/v1/retry-policy/{}", seg(name)),
                &crate::diag::describe_errors(&d),
            )
        })
    }

    // -----------------------------------------------------------------------------------
    // Transport

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.config.base_url, path)
    }

    fn bad_body(&self, method: Method, path: &str, detail: &str) -> ClientError {
        ClientError::Unexpected {
            method: method.to_string(),
            url: self.url(path),
            status: 200,
            detail: format!("cannot read the body: {detail}"),
        }
    }

    /// A request whose 2xx body is JSON (`{}` when empty).
    fn json(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        let resp = self.send(method.clone(), path, body)?;
        let status = resp.status().as_u16();
        let text = self.body_text(&method, path, resp)?;
        if text.trim().is_empty() {
            return Ok(Value::Object(Default::default()));
        }
        serde_json::from_str(&text).map_err(|e| ClientError::Unexpected {
            method: method.to_string(),
            url: self.url(path),
            status,
            detail: format!("the body is not JSON ({e}): {}", snippet(&text)),
        })
    }

    fn text(&self, method: Method, path: &str) -> Result<String> {
        let resp = self.send(method.clone(), path, None)?;
        self.body_text(&method, path, resp)
    }

    /// The body as text, at most [`MAX_BODY`] bytes: a server that streams without end is
    /// an unexpected answer (exit 4), not a client that eats all memory.
    fn body_text(&self, method: &Method, path: &str, resp: Response) -> Result<String> {
        use std::io::Read as _;
        let status = resp.status().as_u16();
        let mut buf = Vec::new();
        resp.take(MAX_BODY + 1).read_to_end(&mut buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut || e.to_string().contains("timed out") {
                ClientError::Timeout {
                    url: self.config.base_url.clone(),
                    timeout: self.config.timeout,
                }
            } else {
                ClientError::Unreachable {
                    url: self.config.base_url.clone(),
                    reason: format!("reading the answer failed: {e}"),
                }
            }
        })?;
        if buf.len() as u64 > MAX_BODY {
            return Err(ClientError::Unexpected {
                method: method.to_string(),
                url: redact_url(&self.url(path)),
                status,
                detail: format!("the answer is larger than {} MiB", MAX_BODY >> 20),
            });
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Sends with retries; returns a 2xx response or the error its status means.
    fn send(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Response> {
        let idempotent = method != Method::POST;
        let url = self.url(path);
        let mut pause = FIRST_PAUSE;
        let mut attempt = 1;
        loop {
            let started = Instant::now();
            if self.config.verbose {
                log(&format!(
                    "{method} {} (auth: {})",
                    redact_url(&url),
                    self.config.auth.shown(&self.config.auth_from)
                ));
            }
            let mut req = self.http.request(method.clone(), &url);
            req = match &self.config.auth {
                Auth::None => req,
                Auth::Basic { username, password } => req.basic_auth(username, Some(password)),
                Auth::Bearer(t) => req.bearer_auth(t),
            };
            if let Some(b) = body {
                req = req.json(b);
            }
            if method == Method::PUT {
                if let Some(tag) = self.etag(path) {
                    req = req.header(reqwest::header::IF_MATCH, tag);
                }
            }
            let result = req.send();
            let tls = result.as_ref().err().and_then(|e| self.tls_error(e));
            let retry = match &result {
                Err(e) => !e.is_timeout() && e.is_connect() && tls.is_none(),
                Ok(r) => r.status() == StatusCode::SERVICE_UNAVAILABLE,
            };
            if self.config.verbose {
                for line in self.redirects.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
                    log(&line);
                }
                let what = match &result {
                    Ok(r) => r.status().to_string(),
                    Err(e) if e.is_timeout() => "timed out".into(),
                    Err(_) => "connection failed".into(),
                };
                log(&format!(
                    "{method} {} -> {what} in {}ms",
                    redact_url(&url),
                    started.elapsed().as_millis()
                ));
            }
            if retry && idempotent && attempt < MAX_TRIES {
                if self.config.verbose {
                    log(&format!(
                        "retrying in {}ms (try {} of {MAX_TRIES})",
                        pause.as_millis(),
                        attempt + 1
                    ));
                }
                std::thread::sleep(pause);
                pause *= 2;
                attempt += 1;
                continue;
            }
            if let Some(tls) = tls {
                return Err(tls);
            }
            let resp = result.map_err(|e| self.transport_error(path, e))?;
            self.dialect.set(Some(
                resp.headers()
                    .get(DIALECT_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case(DIALECT_V1)),
            ));
            if resp.status().is_success() {
                self.remember_etag(&method, path, &resp);
                return Ok(resp);
            }
            return Err(self.status_error(&method, &url, resp));
        }
    }

    /// Keeps the ETag of a GET or a write of one resource, for the next `PUT` of it.
    fn remember_etag(&self, method: &Method, path: &str, resp: &Response) {
        let tag = resp
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut etags = self.etags.borrow_mut();
        match tag {
            Some(tag) if *method != Method::DELETE => {
                // A create answers for the new resource, whose path is not the POST's.
                if *method != Method::POST {
                    etags.insert(path.to_string(), tag);
                }
            }
            _ => {
                etags.remove(path);
            }
        }
    }

    fn transport_error(&self, _path: &str, e: reqwest::Error) -> ClientError {
        if e.is_timeout() {
            return ClientError::Timeout {
                url: self.config.base_url.clone(),
                timeout: self.config.timeout,
            };
        }
        ClientError::Unreachable {
            url: self.config.base_url.clone(),
            reason: root_cause(&e),
        }
    }

    /// What a failed connection says about TLS, if anything ([`trust::tls_failure`]).
    fn tls_error(&self, e: &reqwest::Error) -> Option<ClientError> {
        trust::tls_failure(e, &self.config.base_url)
    }

    fn status_error(&self, method: &Method, url: &str, resp: Response) -> ClientError {
        let status = resp.status().as_u16();
        let text = resp.text().unwrap_or_default();
        if status == 400 && text.trim_end() == crate::tls::PLAIN_HTTP_ON_TLS.trim_end() && url.starts_with("http://") {
            return ClientError::WrongScheme {
                url: self.config.base_url.clone(),
                server_tls: true,
            };
        }
        let body: Option<Value> = serde_json::from_str(&text).ok();
        let message = body.as_ref().and_then(|b| {
            b.get("message")
                .or_else(|| b.get("error"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        match message {
            Some(message) => ClientError::Api {
                status: Some(status),
                code: body.as_ref().and_then(|b| b.get("code")).and_then(Value::as_i64),
                message,
            },
            None if status == 404 => ClientError::NoRoute {
                method: method.to_string(),
                url: redact_url(url),
            },
            // 401/403 mean the same whatever the body looks like (a proxy's HTML page).
            None if status == 401 || status == 403 => ClientError::Api {
                status: Some(status),
                code: Some(if status == 401 {
                    codes::UNAUTHENTICATED
                } else {
                    codes::PERMISSION_DENIED
                }),
                message: if text.trim().is_empty() {
                    "no message".into()
                } else {
                    snippet(&text)
                },
            },
            None => ClientError::Unexpected {
                method: method.to_string(),
                url: redact_url(url),
                status,
                detail: if text.trim().is_empty() {
                    "empty body".into()
                } else {
                    format!("body is not an Armada error: {}", snippet(&text))
                },
            },
        }
    }

    fn policy_path(name: &str) -> String {
        format!("/v1/retry-policy/{}", seg(name))
    }

    fn queue_path(name: &str) -> String {
        format!("/v1/queue/{}", seg(name))
    }
}

impl Client for RestClient {
    fn base_url(&self) -> &str {
        &self.config.base_url
    }

    // -----------------------------------------------------------------------------------
    // Retry policies

    fn get_policy(&self, name: &str) -> Result<RetryPolicy> {
        let v = self.json(Method::GET, &format!("/v1/retry-policy/{}", seg(name)), None)?;
        self.read_policy(&v, name)
    }

    /// Every policy, ordered by name as the server lists them.
    fn list_policies(&self) -> Result<Vec<RetryPolicy>> {
        let path = "/v1/retry-policies";
        let v = self.json(Method::GET, path, None)?;
        // Only `{"retryPolicies":[...]}` or `{}` (none, zero values omitted) is a list: any
        // other shape is another API (`[...]`, `{"items":[...]}`), and reading it as "no
        // policies" would tell a script that the server is empty.
        const EXPECTED: &str = "expected `{\"retryPolicies\": [...]}` (or `{}` when there are none)";
        let shape = match &v {
            Value::Object(m) => {
                let other: Vec<String> = m
                    .keys()
                    .filter(|k| *k != "retryPolicies")
                    .map(|k| format!("`{k}`"))
                    .collect();
                (!other.is_empty()).then(|| format!("an object with {}", other.join(", ")))
            }
            Value::Array(_) => Some("a JSON array".to_string()),
            other => Some(format!("`{}`", snippet(&other.to_string()))),
        };
        if let Some(got) = shape {
            return Err(self.bad_body(Method::GET, path, &format!("{EXPECTED}, got {got}")));
        }
        let items = match v.get("retryPolicies") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err(self.bad_body(Method::GET, path, "`retryPolicies` is not a list")),
        };
        items
            .iter()
            .map(|p| self.read_policy(p, p.get("name").and_then(Value::as_str).unwrap_or("?")))
            .collect()
    }

    fn delete_policy(&self, name: &str) -> Result<()> {
        self.json(Method::DELETE, &format!("/v1/retry-policy/{}", seg(name)), None)
            .map(drop)
    }

    // -----------------------------------------------------------------------------------
    // Queues

    fn get_queue(&self, name: &str) -> Result<Queue> {
        let path = format!("/v1/queue/{}", seg(name));
        let v = self.json(Method::GET, &path, None)?;
        wire::queue_from_json(&v).map_err(|d| self.bad_body(Method::GET, &path, &crate::diag::describe_errors(&d)))
    }

    /// Every queue, from the streaming `GET /v1/batched/queues`.
    fn list_queues(&self) -> Result<Vec<Queue>> {
        let path = "/v1/batched/queues";
        let text = self.text(Method::GET, path)?;
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| self.bad_body(Method::GET, path, &format!("a stream line is not JSON: {e}")))?;
            if let Some(err) = v.get("error") {
                // A stream error chunk (as grpc-gateway writes one): `{"error":{"grpc_code":..,"http_code":..,"message":..}}`.
                return Err(ClientError::Api {
                    status: Some(err.get("http_code").and_then(Value::as_u64).unwrap_or(500) as u16),
                    code: err.get("grpc_code").and_then(Value::as_i64),
                    message: err.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                });
            }
            let event = v.pointer("/result/Event").or_else(|| v.pointer("/result"));
            match event {
                Some(e) if e.get("end").is_some() => return Ok(out),
                Some(e) if e.get("queue").is_some() => {
                    let q = wire::queue_from_json(&e["queue"])
                        .map_err(|d| self.bad_body(Method::GET, path, &crate::diag::describe_errors(&d)))?;
                    out.push(q);
                }
                _ => return Err(self.bad_body(Method::GET, path, &format!("unexpected stream line {line}"))),
            }
        }
        // Without the end marker the list may be cut short: never present it as complete.
        Err(self.bad_body(Method::GET, path, "the queue stream ended without its end marker"))
    }

    fn delete_queue(&self, name: &str) -> Result<()> {
        self.json(Method::DELETE, &format!("/v1/queue/{}", seg(name)), None)
            .map(drop)
    }

    // -----------------------------------------------------------------------------------
    // Dialect

    /// Whether the server speaks the design dialect (`retryctl serve`). Asks `/health` when
    /// no response has been seen yet.
    fn is_v1(&self) -> Result<bool> {
        if let Some(v1) = self.dialect.get() {
            return Ok(v1);
        }
        // Any answer tells the dialect, even an error status; a connection that failed (TLS
        // included) does not, and its error is the one to report: taken for "no header", it
        // would turn a certificate problem into "the server is upstream Armada".
        match self.send(Method::GET, "/health", None) {
            Ok(_) => {}
            Err(
                e @ (ClientError::Unreachable { .. }
                | ClientError::Timeout { .. }
                | ClientError::Certificate { .. }
                | ClientError::WrongScheme { .. }),
            ) => return Err(e),
            Err(_) => {}
        }
        Ok(self.dialect.get().unwrap_or(false))
    }

    fn protocol(&self) -> &'static str {
        "REST"
    }

    fn send_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()> {
        let body = wire::policy_to_json(policy);
        match op {
            WriteOp::Create => self.json(Method::POST, "/v1/retry-policy", Some(&body))?,
            WriteOp::Update => self.json(Method::PUT, &Self::policy_path(&policy.name), Some(&body))?,
        };
        Ok(())
    }

    fn send_queue(&self, op: WriteOp, queue: &Queue) -> Result<()> {
        let body = wire::queue_to_json(queue);
        match op {
            WriteOp::Create => self.json(Method::POST, "/v1/queue", Some(&body))?,
            WriteOp::Update => self.json(Method::PUT, &Self::queue_path(&queue.name), Some(&body))?,
        };
        Ok(())
    }

    fn version(&self, noun: Noun, name: &str) -> Option<String> {
        self.etag(&match noun {
            Noun::Policy => Self::policy_path(name),
            Noun::Queue => Self::queue_path(name),
        })
    }

    /// As the gateway would answer `code` (grpc-gateway's `HTTPStatusFromCode`).
    fn refused(&self, code: i64, message: String) -> ClientError {
        let status = match code {
            codes::NOT_FOUND => 404,
            codes::ALREADY_EXISTS => 409,
            codes::PERMISSION_DENIED => 403,
            codes::UNAUTHENTICATED => 401,
            codes::UNAVAILABLE => 503,
            _ => 400,
        };
        ClientError::Api {
            status: Some(status),
            code: Some(code),
            message,
        }
    }

    fn verbose(&self) -> bool {
        self.config.verbose
    }
}
/// A path segment, percent-encoded so that a name can never change the route.
fn seg(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The innermost cause of a transport error, which is the one that says what happened
/// (`Connection refused (os error 111)`), without reqwest's outer wrapping.
fn root_cause(e: &reqwest::Error) -> String {
    let text = super::error::root_cause(e);
    if text.contains("Connection refused") {
        "connection refused".into()
    } else {
        text
    }
}

/// The first line of a body, short enough for an error message.
fn snippet(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 120 {
        format!("{}…", flat.chars().take(120).collect::<String>())
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_change_the_route_and_urls_hide_passwords() {
        assert_eq!(seg("a/../b c"), "a%2F..%2Fb%20c");
        assert_eq!(redact_url("http://u:secret@h:1/v1/x"), "http://u:***@h:1/v1/x");
        assert_eq!(redact_url("http://h:1/v1/x"), "http://h:1/v1/x");
    }
}
