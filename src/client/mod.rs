//! The wire client: routes, JSON and status codes of the Armada REST API (SPEC §5).
//!
//! Owns: talking to a server (reqwest, blocking, rustls): the routes, the error body of §5
//! mapped to [`ClientError`] and from there to exit codes, timeouts, retries of idempotent
//! requests, the `-v` request log (credentials never printed), the server dialect (§5.1) with
//! its pre-send refusal and post-write read-back. Must not: know about clap, tables or output
//! formats, or decide wording beyond what a failed request means.
//!
//! Decisions where SPEC is silent:
//! - Retries: GET/PUT/DELETE are tried at most 3 times, on connection errors and 503, with
//!   a 200 ms then 400 ms pause. POST is never retried (it is not idempotent: a lost answer
//!   to a create would turn into a 409 on the retry). Timeouts are not retried, so a command
//!   against a hung server ends within about one `--timeout`.
//! - A read-back that differs from what was written is [`ClientError::Dropped`], exit 4: the
//!   server answered something unexpected, and the write must not be taken as done.
//! - Concurrency (SPEC §5.2): the ETag of every single-resource answer is kept per path and
//!   sent as `If-Match` with the next `PUT` of that path, so a write based on a read is
//!   refused (412, exit 1) when someone wrote in between; `DELETE` sends none (deleting by
//!   name is not a read-modify-write). Read-modify-writes go through
//!   [`Client::modify_queue`], which re-reads and re-applies the edit up to
//!   [`CONFLICT_ATTEMPTS`] times, then fails with [`ClientError::Conflict`] (exit 1). A
//!   read-back whose ETag is newer than the write's shows a later writer's change, not a
//!   dropped field.
//! - Server-side validation errors (400 InvalidArgument) exit 3, like the same errors found
//!   offline; FailedPrecondition (400, code 9), NotFound and AlreadyExists exit 1.
//! - TLS (exit 4, never retried: trying again cannot help): a certificate that does not
//!   verify is [`ClientError::Certificate`]; `http://` to a TLS port (recognised by the 400
//!   body `retryctl serve` and Go servers send, [`crate::tls::PLAIN_HTTP_ON_TLS`]) and
//!   `https://` to a plain one (the answer to the TLS hello is not TLS) are
//!   [`ClientError::WrongScheme`], naming the URL to use.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::blocking::{Client as Http, Response};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::error::ExitCode;
use crate::model::{Queue, RetryPolicy};
// Re-exported: `history` masks its Lookout URLs with it too (one masking function).
pub use crate::redact::redact_url;
use crate::wire::{self, Dialect, DIALECT_HEADER, DIALECT_V1};

mod trust;

/// How requests authenticate. Resolved by `connection`; exec auth is already run by then.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    Basic { username: String, password: String },
    Bearer(String),
}

impl fmt::Debug for Auth {
    // Never print a secret, not even in a debug dump.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Auth {
    /// The scheme and user, never the secret.
    pub fn redacted(&self) -> String {
        match self {
            Auth::None => "anonymous".into(),
            Auth::Basic { username, .. } => format!("basic `{username}`"),
            Auth::Bearer(_) => "bearer".into(),
        }
    }

    /// How the `-v` log and hints show the credentials sent: the scheme, where they came from
    /// (`from`, e.g. "`$ARMADA_TOKEN`") and the user, never the secret.
    pub fn shown(&self, from: &str) -> String {
        match self {
            Auth::None => "anonymous".into(),
            Auth::Basic { username, .. } => format!("basic from {from}, user `{username}`"),
            Auth::Bearer(_) => format!("bearer from {from}"),
        }
    }
}

/// Connection settings for one process.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// REST base URL without a trailing slash or user info, e.g. `http://localhost:8080`
    /// (`connection` takes a URL's `user:password` out: reqwest would send it as a second
    /// `Authorization` header).
    pub base_url: String,
    /// The one set of credentials sent (one `Authorization` header).
    pub auth: Auth,
    /// Where `auth` came from, for the `-v` log (see [`Auth::shown`]).
    pub auth_from: String,
    /// Per request, including reading the body.
    pub timeout: Duration,
    /// Log each request and its status to stderr.
    pub verbose: bool,
    pub tls: ClientTls,
}

/// How `https://` servers are verified.
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    /// Trusted in addition to the system roots (DER certificates).
    pub extra_roots: Vec<Vec<u8>>,
    /// Accept any certificate (`--insecure-skip-tls-verify`).
    pub insecure: bool,
}

impl ClientTls {
    /// `builder`, for a server at `url`, verifying as these settings say: the one place that
    /// does it, for the Armada client and the Lookout source alike. Our own rustls
    /// configuration (trust.rs): the system's roots, as kubectl trusts them, and a
    /// self-signed certificate the user trusts by file accepted as kubectl and curl accept
    /// it. For a plain `http://` URL the store is not read (it costs a few milliseconds).
    pub fn apply(
        &self,
        builder: reqwest::blocking::ClientBuilder,
        url: &str,
    ) -> std::result::Result<reqwest::blocking::ClientBuilder, String> {
        if self.insecure {
            return Ok(builder.danger_accept_invalid_certs(true));
        }
        let https = url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        if !https && self.extra_roots.is_empty() {
            return Ok(builder);
        }
        Ok(builder.use_preconfigured_tls(trust::client_config(&self.extra_roots)?))
    }
}

/// Everything that can go wrong talking to a server, each with its exit code.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// No connection (refused, DNS, TLS, reset).
    Unreachable { url: String, reason: String },
    /// No answer within the timeout.
    Timeout { url: String, timeout: Duration },
    /// The server's TLS certificate does not verify.
    Certificate { url: String, reason: String },
    /// `http://` to a server that speaks only TLS (`server_tls`), or `https://` to one that
    /// does not speak it.
    WrongScheme { url: String, server_tls: bool },
    /// The §5 error body: the server understood and said no.
    Api {
        status: u16,
        /// The gRPC code from the body, when present.
        code: Option<i64>,
        message: String,
    },
    /// 404 with a body that is not the §5 error shape: the route does not exist.
    NoRoute { method: String, url: String },
    /// A status or body this client cannot make sense of (HTML error page, bad JSON).
    Unexpected {
        method: String,
        url: String,
        status: u16,
        detail: String,
    },
    /// The server is upstream Armada and cannot store these fields (§5.1): nothing was sent.
    Incompatible {
        kind: &'static str,
        name: String,
        fields: Vec<String>,
    },
    /// The write was acknowledged but the read-back differs: the server dropped fields.
    Dropped {
        kind: &'static str,
        name: String,
        fields: Vec<String>,
    },
    /// Another writer changed the resource every time this client tried to (SPEC §5.2): the
    /// edit was given up after `attempts` tries.
    Conflict {
        kind: &'static str,
        name: String,
        attempts: u32,
    },
}

/// gRPC codes the client looks at.
pub mod grpc {
    pub const INVALID_ARGUMENT: i64 = 3;
    pub const NOT_FOUND: i64 = 5;
    pub const ALREADY_EXISTS: i64 = 6;
    pub const PERMISSION_DENIED: i64 = 7;
    pub const FAILED_PRECONDITION: i64 = 9;
    pub const UNAVAILABLE: i64 = 14;
    pub const UNAUTHENTICATED: i64 = 16;

    pub fn name(code: i64) -> &'static str {
        match code {
            1 => "Canceled",
            2 => "Unknown",
            3 => "InvalidArgument",
            4 => "DeadlineExceeded",
            5 => "NotFound",
            6 => "AlreadyExists",
            7 => "PermissionDenied",
            8 => "ResourceExhausted",
            9 => "FailedPrecondition",
            10 => "Aborted",
            11 => "OutOfRange",
            12 => "Unimplemented",
            13 => "Internal",
            14 => "Unavailable",
            15 => "DataLoss",
            16 => "Unauthenticated",
            _ => "Unknown",
        }
    }
}

impl ClientError {
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ClientError::Unreachable { .. }
            | ClientError::Timeout { .. }
            | ClientError::Certificate { .. }
            | ClientError::WrongScheme { .. }
            | ClientError::NoRoute { .. }
            | ClientError::Unexpected { .. }
            | ClientError::Dropped { .. } => ExitCode::Unreachable,
            ClientError::Incompatible { .. } | ClientError::Conflict { .. } => ExitCode::Failure,
            ClientError::Api { status, code, .. } => match (*status, *code) {
                (401 | 403, _) => ExitCode::Auth,
                (400, Some(grpc::INVALID_ARGUMENT)) => ExitCode::InvalidInput,
                (400 | 404 | 409 | 412, _) => ExitCode::Failure,
                _ => ExitCode::Unreachable,
            },
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, ClientError::Api { status: 404, .. })
    }

    /// 412: the `If-Match` sent no longer matches; someone else wrote in between.
    pub fn is_conflict(&self) -> bool {
        matches!(self, ClientError::Api { status: 412, .. })
    }

    pub fn is_already_exists(&self) -> bool {
        matches!(self, ClientError::Api { status: 409, .. })
    }

    /// A connection-level failure: the server cannot be talked to at all.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ClientError::Unreachable { .. } | ClientError::Timeout { .. })
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Unreachable { url, reason } => {
                write!(f, "cannot reach the Armada server at {}: {reason}", redact_url(url))
            }
            ClientError::Timeout { url, timeout } => write!(
                f,
                "the Armada server at {} did not answer within {}",
                redact_url(url),
                crate::model::duration::GoDuration(timeout.as_nanos() as u64)
            ),
            ClientError::Certificate { url, reason } => write!(
                f,
                "the TLS certificate of the server at `{}` does not verify: {reason}",
                redact_url(url)
            ),
            ClientError::WrongScheme { url, server_tls } => {
                let url = redact_url(url);
                let (speaks, from, to) = if *server_tls {
                    ("speaks TLS", "http://", "https://")
                } else {
                    ("does not speak TLS", "https://", "http://")
                };
                let other = url.strip_prefix(from).map_or(url.clone(), |rest| format!("{to}{rest}"));
                write!(f, "the server at `{url}` {speaks}: use `{other}`")
            }
            ClientError::Api { status, code, message } => {
                let code = code.map(grpc::name).unwrap_or("");
                let status = StatusCode::from_u16(*status)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|_| status.to_string());
                if code.is_empty() {
                    write!(f, "the server answered {status}: {message}")
                } else {
                    write!(f, "the server answered {status} ({code}): {message}")
                }
            }
            ClientError::NoRoute { method, url } => write!(
                f,
                "this server has no route {method} {} (404 without an Armada error body): \
                 it is not an Armada server, or an older one without retry policy support",
                redact_url(url)
            ),
            ClientError::Unexpected {
                method,
                url,
                status,
                detail,
            } => {
                write!(
                    f,
                    "unexpected answer to {method} {}: HTTP {status}: {detail}",
                    redact_url(url)
                )
            }
            ClientError::Incompatible { kind, name, fields } => write!(
                f,
                "the server is upstream Armada (no `{DIALECT_HEADER}: {DIALECT_V1}` header), which \
                 cannot store these fields of {kind} `{name}`: {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
            ClientError::Conflict { kind, name, attempts } => write!(
                f,
                "{kind} `{name}` was modified concurrently by another writer; gave up after {attempts} \
                 attempts to apply this change on top of the latest version, and the change is not applied"
            ),
            ClientError::Dropped { kind, name, fields } => write!(
                f,
                "the server acknowledged {kind} `{name}` but reading it back shows it dropped or \
                 changed: {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl std::error::Error for ClientError {}

/// A client error as the CLI reports it: its words and its exit code.
impl From<ClientError> for crate::error::CliError {
    fn from(e: ClientError) -> Self {
        crate::error::CliError::new(e.exit_code(), e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, ClientError>;

/// What happened to a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    Create,
    Update,
}

/// A client for one server.
pub struct Client {
    config: ClientConfig,
    http: Http,
    /// `Some(true)` once a response carried the dialect header, `Some(false)` once one did
    /// not; `None` before the first response.
    dialect: Cell<Option<bool>>,
    /// The `ETag` last seen per resource path (from a GET or a write's answer): what a later
    /// `PUT` of that path sends as `If-Match`, so that every read-modify-write is refused
    /// (412) when someone else wrote in between (SPEC §5.2). Upstream sends none.
    etags: RefCell<HashMap<String, String>>,
    /// `-v` lines about redirects followed, queued by the redirect policy for `send`.
    redirects: Arc<Mutex<Vec<String>>>,
}

/// How many times a read-modify-write is tried when others keep writing (kubectl's
/// `retry.DefaultRetry` tries 5 times with 10 ms steps and jitter; more here because a CLI
/// process per edit is slower than a controller loop, so races last longer).
pub const CONFLICT_ATTEMPTS: u32 = 10;

/// What a read-modify-write did.
#[derive(Debug, Clone, PartialEq)]
pub enum Modified {
    /// The edit changed nothing: nothing was sent.
    Unchanged,
    /// The edited queue was written (the value written).
    Written(Queue),
}

/// Why a read-modify-write failed: the edit refused (its own error) or the server did.
#[derive(Debug)]
pub enum ModifyError<E> {
    Edit(E),
    Client(ClientError),
}

impl<E> From<ClientError> for ModifyError<E> {
    fn from(e: ClientError) -> Self {
        ModifyError::Client(e)
    }
}

/// The largest answer body read (a list of thousands of queues is a few MiB).
const MAX_BODY: u64 = 64 << 20;

const MAX_TRIES: u32 = 3;
const FIRST_PAUSE: Duration = Duration::from_millis(200);

impl Client {
    pub fn new(config: ClientConfig) -> Result<Client> {
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
        Ok(Client {
            config,
            http,
            dialect: Cell::new(None),
            etags: RefCell::new(HashMap::new()),
            redirects,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.config.base_url
    }

    // -----------------------------------------------------------------------------------
    // Retry policies

    pub fn get_policy(&self, name: &str) -> Result<RetryPolicy> {
        let v = self.json(Method::GET, &format!("/v1/retry-policy/{}", seg(name)), None)?;
        self.read_policy(&v, name)
    }

    /// Every policy, ordered by name as the server lists them.
    pub fn list_policies(&self) -> Result<Vec<RetryPolicy>> {
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

    /// Creates or replaces a policy, with the §5.1 checks: refused before sending when an
    /// upstream server cannot store it; read back after and compared.
    pub fn write_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()> {
        if !self.is_v1()? {
            let fields = policy.upstream_incompatibilities();
            if !fields.is_empty() {
                return Err(ClientError::Incompatible {
                    kind: "retry policy",
                    name: policy.name.clone(),
                    fields,
                });
            }
        }
        let body = wire::policy_to_json(policy);
        let path = format!("/v1/retry-policy/{}", seg(&policy.name));
        match op {
            WriteOp::Create => self.json(Method::POST, "/v1/retry-policy", Some(&body))?,
            WriteOp::Update => self.json(Method::PUT, &path, Some(&body))?,
        };
        let written = self.etag(&path);
        let back = self.get_policy(&policy.name)?;
        // Another write landed after ours: the read-back shows theirs, not a dropped field.
        let overtaken = written.is_some() && self.etag(&path) != written;
        let fields = diff_fields(&body, &wire::policy_to_json(&back));
        if fields.is_empty() || overtaken {
            Ok(())
        } else {
            Err(ClientError::Dropped {
                kind: "retry policy",
                name: policy.name.clone(),
                fields,
            })
        }
    }

    pub fn delete_policy(&self, name: &str) -> Result<()> {
        self.json(Method::DELETE, &format!("/v1/retry-policy/{}", seg(name)), None)
            .map(drop)
    }

    // -----------------------------------------------------------------------------------
    // Queues

    pub fn get_queue(&self, name: &str) -> Result<Queue> {
        let path = format!("/v1/queue/{}", seg(name));
        let v = self.json(Method::GET, &path, None)?;
        wire::queue_from_json(&v).map_err(|d| self.bad_body(Method::GET, &path, &crate::diag::describe_errors(&d)))
    }

    /// Every queue, from the streaming `GET /v1/batched/queues`.
    pub fn list_queues(&self) -> Result<Vec<Queue>> {
        let path = "/v1/batched/queues";
        let text = self.text(Method::GET, path)?;
        let mut out = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| self.bad_body(Method::GET, path, &format!("a stream line is not JSON: {e}")))?;
            if let Some(err) = v.get("error") {
                // A stream error chunk (upstream §1.6): `{"error":{"grpc_code":..,"http_code":..,"message":..}}`.
                return Err(ClientError::Api {
                    status: err.get("http_code").and_then(Value::as_u64).unwrap_or(500) as u16,
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

    /// Creates or replaces (upserts) a queue, then reads it back and compares. A `PUT` of a
    /// queue read before sends `If-Match` with the ETag read (412 → [`ClientError::is_conflict`]).
    pub fn write_queue(&self, op: WriteOp, queue: &Queue) -> Result<()> {
        let (back, overtaken) = self.put_queue(op, queue)?;
        let fields = queue_differences(queue, &back);
        if fields.is_empty() || overtaken {
            Ok(())
        } else {
            Err(ClientError::Dropped {
                kind: "queue",
                name: queue.name.clone(),
                fields,
            })
        }
    }

    /// Writes and reads back; `overtaken` when the ETags show another write landed after
    /// this one (the read-back then shows theirs, and says nothing about ours).
    fn put_queue(&self, op: WriteOp, queue: &Queue) -> Result<(Queue, bool)> {
        let body = wire::queue_to_json(queue);
        let path = format!("/v1/queue/{}", seg(&queue.name));
        match op {
            WriteOp::Create => self.json(Method::POST, "/v1/queue", Some(&body))?,
            WriteOp::Update => self.json(Method::PUT, &path, Some(&body))?,
        };
        let written = self.etag(&path);
        let back = self.get_queue(&queue.name)?;
        let overtaken = written.is_some() && self.etag(&path) != written;
        Ok((back, overtaken))
    }

    /// Reads queue `name`, applies `edit`, and writes the result with `If-Match`; when
    /// another writer got in between (412) reads again and re-applies the edit, up to
    /// [`CONFLICT_ATTEMPTS`] times with a short jittered pause, then gives up with
    /// [`ClientError::Conflict`]. `edit` returns an error to stop without writing.
    ///
    /// Against a server without versions (upstream: no ETag) the read-back decides: when it
    /// no longer shows this edit, another writer overwrote it and the edit is tried again;
    /// when it shows the edit plus other changes, those are another writer's and the edit
    /// landed. A server that answers the same read-back to two writes of the edit drops those
    /// fields itself: [`ClientError::Dropped`].
    pub fn modify_queue<E>(
        &self,
        name: &str,
        mut edit: impl FnMut(&mut Queue) -> std::result::Result<(), E>,
    ) -> std::result::Result<Modified, ModifyError<E>> {
        let path = format!("/v1/queue/{}", seg(name));
        let mut current = self.get_queue(name)?;
        // The previous read-back that lacked this edit (servers without versions only).
        let mut last_back: Option<Queue> = None;
        for attempt in 1..=CONFLICT_ATTEMPTS {
            let mut queue = current.clone();
            edit(&mut queue).map_err(ModifyError::Edit)?;
            if queue == current {
                return Ok(Modified::Unchanged);
            }
            let (back, overtaken) = match self.put_queue(WriteOp::Update, &queue) {
                Ok(r) => r,
                Err(e) if e.is_conflict() => {
                    self.conflict_pause(name, attempt);
                    current = self.get_queue(name)?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let fields = queue_differences(&queue, &back);
            if fields.is_empty() || overtaken {
                return Ok(Modified::Written(queue));
            }
            if self.etag(&path).is_some() {
                // A versioned server answered our write and nobody wrote since: the
                // difference is the server's own doing.
                return Err(ClientError::Dropped {
                    kind: "queue",
                    name: name.to_string(),
                    fields,
                }
                .into());
            }
            // No versions: does the read-back still carry this edit?
            let mut again = back.clone();
            edit(&mut again).map_err(ModifyError::Edit)?;
            if again == back {
                return Ok(Modified::Written(back));
            }
            // The same answer twice to two writes of the edit: nobody else is writing, the
            // server itself drops the fields.
            if last_back.as_ref() == Some(&back) {
                return Err(ClientError::Dropped {
                    kind: "queue",
                    name: name.to_string(),
                    fields,
                }
                .into());
            }
            last_back = Some(back.clone());
            self.conflict_pause(name, attempt);
            current = back;
        }
        Err(ClientError::Conflict {
            kind: "queue",
            name: name.to_string(),
            attempts: CONFLICT_ATTEMPTS,
        }
        .into())
    }

    /// The pause before re-reading after a conflict: 10 ms doubling per attempt, with up to
    /// 100% jitter so that racing writers spread out instead of colliding again.
    pub fn conflict_pause(&self, name: &str, attempt: u32) {
        let base = 10u64 << attempt.min(5);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
        let jitter = (nanos ^ (std::process::id() as u64).wrapping_mul(2654435761)) % (base + 1);
        let pause = Duration::from_millis(base + jitter);
        if self.config.verbose {
            log(&format!(
                "queue `{name}` changed since it was read (conflict {attempt} of {CONFLICT_ATTEMPTS}); re-reading in {}ms",
                pause.as_millis()
            ));
        }
        std::thread::sleep(pause);
    }

    /// The ETag last seen for `path`.
    fn etag(&self, path: &str) -> Option<String> {
        self.etags.borrow().get(path).cloned()
    }

    pub fn delete_queue(&self, name: &str) -> Result<()> {
        self.json(Method::DELETE, &format!("/v1/queue/{}", seg(name)), None)
            .map(drop)
    }

    // -----------------------------------------------------------------------------------
    // Dialect

    /// Whether the server speaks the design dialect (`retryctl serve`). Asks `/health` when
    /// no response has been seen yet.
    pub fn is_v1(&self) -> Result<bool> {
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

    /// The dialect name for `version`: `v1` or `upstream`.
    pub fn dialect_name(&self) -> Result<&'static str> {
        Ok(if self.is_v1()? { "v1" } else { "upstream" })
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

    /// What a failed connection says about TLS, if anything: the rustls error somewhere in
    /// the chain. An `io::Error` carries it as its payload (which may be another
    /// `io::Error`), and its `source()` skips the payload, so payloads are followed instead.
    fn tls_error(&self, e: &reqwest::Error) -> Option<ClientError> {
        use tokio_rustls::rustls::{CertificateError, Error as Tls, InvalidMessage};
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        let tls = loop {
            let err = cur?;
            if let Some(tls) = err.downcast_ref::<Tls>() {
                break tls;
            }
            cur = match err.downcast_ref::<std::io::Error>() {
                Some(io) => io.get_ref().map(|inner| inner as &(dyn std::error::Error + 'static)),
                None => err.source(),
            };
        };
        let url = self.config.base_url.clone();
        match tls {
            Tls::InvalidCertificate(CertificateError::UnknownIssuer) => Some(ClientError::Certificate {
                url,
                reason: "it is not signed by a certificate authority retryctl trusts (unknown issuer)".into(),
            }),
            // A trusted authority has the issuer's name but not its key: another CA of the same
            // name (a re-created test CA, an impostor) signed the certificate.
            Tls::InvalidCertificate(CertificateError::BadSignature) => Some(ClientError::Certificate {
                url,
                reason: "its signature does not match the key of the certificate authority of that name that retryctl trusts (bad signature): another authority with the same name signed it".into(),
            }),
            Tls::InvalidCertificate(_) if trust::is_ca_used_as_end_entity(tls) => Some(ClientError::Certificate {
                url,
                reason: "it is self-signed (a CA certificate presented as the server's own) and not among the certificates retryctl trusts".into(),
            }),
            Tls::InvalidCertificate(_) => Some(ClientError::Certificate {
                url,
                reason: tls.to_string(),
            }),
            // The answer to the hello is not a TLS record: a plain HTTP server's 400.
            Tls::InvalidMessage(InvalidMessage::InvalidContentType) => {
                Some(ClientError::WrongScheme { url, server_tls: false })
            }
            _ => None,
        }
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
                status,
                code: body.as_ref().and_then(|b| b.get("code")).and_then(Value::as_i64),
                message,
            },
            None if status == 404 => ClientError::NoRoute {
                method: method.to_string(),
                url: redact_url(url),
            },
            // 401/403 mean the same whatever the body looks like (a proxy's HTML page).
            None if status == 401 || status == 403 => ClientError::Api {
                status,
                code: Some(if status == 401 {
                    grpc::UNAUTHENTICATED
                } else {
                    grpc::PERMISSION_DENIED
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
}

fn log(line: &str) {
    // The request log is diagnostics, never data: stderr, unbuffered, best effort.
    let _ = writeln!(std::io::stderr(), "retryctl: {line}");
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
    let mut cur: &dyn std::error::Error = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    let text = cur.to_string();
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

/// Paths (wire layout) where `sent` and `back` differ, for the read-back check.
pub fn diff_fields(sent: &Value, back: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into("", sent, back, &mut out);
    out
}

fn diff_into(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = crate::diag::join(path, k);
                match y.get(k) {
                    Some(vb) => diff_into(&p, va, vb, out),
                    None => out.push(p),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{} (added by the server)", crate::diag::join(path, k)));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_into(&crate::diag::index(path, i), va, vb, out);
            }
        }
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => {}
        _ if a == b => {}
        _ => out.push(if path.is_empty() {
            "(everything)".into()
        } else {
            path.to_string()
        }),
    }
}

/// The fields of `sent` that the server did not keep. Owners are compared loosely: upstream
/// turns `userOwners`/`groupOwners` into a `permissions` entry and never returns them, and
/// fills in the caller as owner when none is given; neither loses what the user asked for.
pub fn queue_differences(sent: &Queue, back: &Queue) -> Vec<String> {
    let mut out = Vec::new();
    if sent.priority_factor != back.priority_factor {
        out.push("priorityFactor".to_string());
    }
    let has_subject = |kind: &str, name: &str, direct: &[String]| {
        direct.iter().any(|o| o == name)
            || back
                .permissions
                .iter()
                .flat_map(|p| &p.subjects)
                .any(|s| s.kind == kind && s.name == name)
    };
    if !sent
        .user_owners
        .iter()
        .all(|o| has_subject("User", o, &back.user_owners))
    {
        out.push("userOwners".to_string());
    }
    if !sent
        .group_owners
        .iter()
        .all(|o| has_subject("Group", o, &back.group_owners))
    {
        out.push("groupOwners".to_string());
    }
    if sent.labels != back.labels {
        out.push("labels".to_string());
    }
    if sent.cordoned != back.cordoned {
        out.push("cordoned".to_string());
    }
    if sent.retry_policies != back.retry_policies {
        out.push("retryPolicies".to_string());
    }
    if !sent.permissions.is_empty() && sent.permissions != back.permissions {
        out.push("permissions".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_fields_names_dropped_and_changed_paths() {
        let sent = json!({"name":"p","retryLimit":3,"rules":[{"action":"Retry","onCategory":"gpu","mutate":{"affinity":{"avoidSameNode":true}}}]});
        let back = json!({"name":"p","retryLimit":2,"rules":[{"action":"Retry","onCategory":"gpu"}]});
        assert_eq!(diff_fields(&sent, &back), vec!["retryLimit", "rules[0].mutate"]);
        assert!(diff_fields(&json!({"f":1.0}), &json!({"f":1})).is_empty());
    }

    #[test]
    fn queue_owners_folded_into_permissions_are_not_dropped() {
        use crate::model::queue::{Permission, Subject};
        let sent = Queue {
            name: "q".into(),
            user_owners: vec!["alice".into()],
            retry_policies: vec!["a".into(), "b".into()],
            ..Queue::default()
        };
        let mut back = Queue {
            name: "q".into(),
            permissions: vec![Permission {
                subjects: vec![Subject {
                    kind: "User".into(),
                    name: "alice".into(),
                }],
                verbs: vec!["submit".into()],
            }],
            ..Queue::default()
        };
        assert_eq!(queue_differences(&sent, &back), vec!["retryPolicies"]);
        back.retry_policies = vec!["a".into(), "b".into()];
        assert!(queue_differences(&sent, &back).is_empty());
    }

    #[test]
    fn exit_codes_follow_the_spec_table() {
        let api = |status, code| ClientError::Api {
            status,
            code,
            message: String::new(),
        };
        assert_eq!(api(401, Some(16)).exit_code(), ExitCode::Auth);
        assert_eq!(api(403, Some(7)).exit_code(), ExitCode::Auth);
        assert_eq!(api(404, Some(5)).exit_code(), ExitCode::Failure);
        assert_eq!(api(409, Some(6)).exit_code(), ExitCode::Failure);
        assert_eq!(api(400, Some(9)).exit_code(), ExitCode::Failure);
        assert_eq!(api(400, Some(3)).exit_code(), ExitCode::InvalidInput);
        assert_eq!(api(500, Some(13)).exit_code(), ExitCode::Unreachable);
        assert_eq!(api(503, Some(14)).exit_code(), ExitCode::Unreachable);
    }

    #[test]
    fn names_cannot_change_the_route_and_urls_hide_passwords() {
        assert_eq!(seg("a/../b c"), "a%2F..%2Fb%20c");
        assert_eq!(redact_url("http://u:secret@h:1/v1/x"), "http://u:***@h:1/v1/x");
        assert_eq!(redact_url("http://h:1/v1/x"), "http://h:1/v1/x");
    }
}
