//! The wire client: talking to an Armada server over REST (SPEC §5) or gRPC (§5.3).
//!
//! Owns: the [`Client`] trait the commands use, its two transports ([`rest`]: the REST API
//! over reqwest; [`grpc`]: Armada's gRPC services over tonic), [`ClientError`] (every
//! failure of either, with its exit code), and the transport-neutral writes ([`conflict`]:
//! the §5.1 refusal and read-back, the §5.2 retry on conflict). Must not: know about clap,
//! tables or output formats, or decide wording beyond what a failed request means.
//!
//! Which transport: the resolved server address decides (`settings`): `http(s)://` is REST,
//! `grpc://` / `grpcs://` (or a context's `armadaUrl: host:port`) is gRPC. Both answer the
//! same calls with the same model types and the same errors, so every command behaves the
//! same over either; what differs is said where it does (a design-dialect policy has no
//! protobuf form; gRPC has no versions, see [`grpc`]).

use std::fmt;
use std::io::Write;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::error::ExitCode;
use crate::model::{Queue, RetryPolicy};
// Re-exported: `history` masks its Lookout URLs with it too (one masking function).
pub use crate::redact::redact_url;
use crate::wire::{DIALECT_HEADER, DIALECT_V1};

pub mod conflict;
pub mod grpc;
pub mod rest;
mod trust;

pub use conflict::{Modified, ModifyError, CONFLICT_ATTEMPTS};
pub use grpc::GrpcClient;
pub use rest::RestClient;

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
    /// The server: a REST base URL without a trailing slash or user info
    /// (`http://localhost:8080`; `connection` takes a URL's `user:password` out: reqwest would
    /// send it as a second `Authorization` header), or a gRPC address as `grpc://host:port`
    /// (plaintext) or `grpcs://host:port` (TLS).
    pub base_url: String,
    /// The one set of credentials sent (one `Authorization` header; gRPC: `authorization`
    /// metadata).
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
    /// The server understood and said no: the §5 error body over REST, the status over gRPC.
    Api {
        /// The HTTP status of a REST answer; `None` over gRPC.
        status: Option<u16>,
        /// The gRPC code (from the REST body, when present).
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
    /// The server is upstream Armada and cannot store these fields (§5.1), or the connection
    /// is gRPC, whose messages cannot carry them (§5.3): nothing was sent.
    Incompatible {
        kind: &'static str,
        name: String,
        fields: Vec<String>,
        grpc: bool,
    },
    /// A gRPC answer this client cannot make sense of (a stream cut short, a message that
    /// does not convert).
    BadAnswer {
        call: &'static str,
        url: String,
        detail: String,
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

/// gRPC status codes the client looks at (over either transport: the REST error body
/// carries them too).
pub mod codes {
    pub const INVALID_ARGUMENT: i64 = 3;
    pub const NOT_FOUND: i64 = 5;
    pub const ALREADY_EXISTS: i64 = 6;
    pub const PERMISSION_DENIED: i64 = 7;
    pub const FAILED_PRECONDITION: i64 = 9;
    /// What the gRPC client answers itself when a resource changed between its read and its
    /// write (its stand-in for REST's 412, see `client::grpc`).
    pub const ABORTED: i64 = 10;
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
            | ClientError::BadAnswer { .. }
            | ClientError::Dropped { .. } => ExitCode::Unreachable,
            ClientError::Incompatible { .. } | ClientError::Conflict { .. } => ExitCode::Failure,
            ClientError::Api {
                status: Some(status),
                code,
                ..
            } => match (*status, *code) {
                (401 | 403, _) => ExitCode::Auth,
                (400, Some(codes::INVALID_ARGUMENT)) => ExitCode::InvalidInput,
                (400 | 404 | 409 | 412, _) => ExitCode::Failure,
                _ => ExitCode::Unreachable,
            },
            // gRPC: the codes the REST statuses above stand for mean the same.
            ClientError::Api { status: None, code, .. } => match code.unwrap_or(2) {
                codes::UNAUTHENTICATED | codes::PERMISSION_DENIED => ExitCode::Auth,
                codes::INVALID_ARGUMENT => ExitCode::InvalidInput,
                codes::NOT_FOUND | codes::ALREADY_EXISTS | codes::FAILED_PRECONDITION | codes::ABORTED => {
                    ExitCode::Failure
                }
                _ => ExitCode::Unreachable,
            },
        }
    }

    /// Whether this is the server's `code` (gRPC) or `status` (REST).
    fn is(&self, code: i64, status: u16) -> bool {
        match self {
            ClientError::Api { status: Some(s), .. } => *s == status,
            ClientError::Api {
                status: None, code: c, ..
            } => *c == Some(code),
            _ => false,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.is(codes::NOT_FOUND, 404)
    }

    /// 412 (REST) or Aborted (gRPC): the resource changed since it was read; someone else
    /// wrote in between.
    pub fn is_conflict(&self) -> bool {
        self.is(codes::ABORTED, 412)
    }

    pub fn is_already_exists(&self) -> bool {
        self.is(codes::ALREADY_EXISTS, 409)
    }

    /// 401 (REST) or Unauthenticated (gRPC): no or wrong credentials.
    pub fn is_unauthenticated(&self) -> bool {
        self.is(codes::UNAUTHENTICATED, 401)
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
                let speaks = if *server_tls {
                    "speaks TLS"
                } else {
                    "does not speak TLS"
                };
                // The same address with the other scheme of its protocol.
                let other = [("http://", "https://"), ("grpc://", "grpcs://")]
                    .iter()
                    .find_map(|(plain, tls)| {
                        let (from, to) = if *server_tls { (plain, tls) } else { (tls, plain) };
                        url.strip_prefix(from).map(|rest| format!("{to}{rest}"))
                    })
                    .unwrap_or_else(|| url.clone());
                write!(f, "the server at `{url}` {speaks}: use `{other}`")
            }
            ClientError::Api {
                status: None,
                code,
                message,
            } => write!(f, "the server answered {}: {message}", codes::name(code.unwrap_or(2))),
            ClientError::Api {
                status: Some(status),
                code,
                message,
            } => {
                let code = code.map(codes::name).unwrap_or("");
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
            ClientError::Incompatible {
                kind,
                name,
                fields,
                grpc: false,
            } => write!(
                f,
                "the server is upstream Armada (no `{DIALECT_HEADER}: {DIALECT_V1}` header), which \
                 cannot store these fields of {kind} `{name}`: {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
            ClientError::Incompatible {
                kind,
                name,
                fields,
                grpc: true,
            } => write!(
                f,
                "Armada's gRPC API cannot carry these fields of {kind} `{name}` (they have no protobuf \
                 form): {}",
                fields.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")
            ),
            ClientError::BadAnswer { call, url, detail } => {
                write!(f, "unexpected answer to {call} from {}: {detail}", redact_url(url))
            }
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

/// The two kinds of resource, for the calls that take either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Noun {
    Policy,
    Queue,
}

/// A connection to one server, over either transport: what the commands call.
///
/// The transports implement the single requests; the writes the commands make
/// (`write_policy`, `write_queue`, `modify_queue`) are built on them once, in [`conflict`].
pub trait Client {
    /// The server's address as messages show it (`http://host:8080`, `grpcs://host:50051`).
    fn base_url(&self) -> &str;
    /// `REST` or `gRPC`.
    fn protocol(&self) -> &'static str;
    /// Whether the design dialect can be stored over this connection (`retryctl serve` over
    /// REST). Asks the server when nothing was heard from it yet; only a failed connection is
    /// an error.
    fn is_v1(&self) -> Result<bool>;
    /// The server's dialect for `version`: `v1` (`retryctl serve`) or `upstream`.
    fn dialect_name(&self) -> Result<&'static str> {
        Ok(if self.is_v1()? { "v1" } else { "upstream" })
    }

    fn get_policy(&self, name: &str) -> Result<RetryPolicy>;
    /// Every policy, ordered by name as the server lists them.
    fn list_policies(&self) -> Result<Vec<RetryPolicy>>;
    /// One create or replace of `policy`, as it is: no refusal, no read-back (`write_policy`
    /// adds those). A replace of a policy read before is refused as a conflict
    /// ([`ClientError::is_conflict`]) when it changed since that read.
    fn send_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()>;
    fn delete_policy(&self, name: &str) -> Result<()>;

    fn get_queue(&self, name: &str) -> Result<Queue>;
    /// Every queue, ordered by name as the server streams them.
    fn list_queues(&self) -> Result<Vec<Queue>>;
    /// [`Client::send_policy`] for a queue.
    fn send_queue(&self, op: WriteOp, queue: &Queue) -> Result<()>;
    fn delete_queue(&self, name: &str) -> Result<()>;

    /// The server's version of a resource as last read or written (REST: its ETag); `None`
    /// when the server keeps none (upstream Armada, gRPC).
    fn version(&self, noun: Noun, name: &str) -> Option<String>;
    /// The error the server would answer with `code` (a refusal the client found itself,
    /// such as a create of a name that exists), shaped like this transport's errors.
    fn refused(&self, code: i64, message: String) -> ClientError;
    /// Whether `-v` asked for the request log.
    fn verbose(&self) -> bool;

    /// Creates or replaces a policy, with the §5.1 checks: refused before sending when the
    /// server or the transport cannot store it; read back after and compared.
    fn write_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()> {
        conflict::write_policy(self, op, policy)
    }

    /// Creates or replaces (upserts) a queue, then reads it back and compares.
    fn write_queue(&self, op: WriteOp, queue: &Queue) -> Result<()> {
        conflict::write_queue(self, op, queue)
    }

    /// The pause before re-reading after a conflict (see [`conflict::pause`]).
    fn conflict_pause(&self, name: &str, attempt: u32) {
        conflict::pause(self, name, attempt)
    }
}

impl dyn Client + '_ {
    /// Reads queue `name`, applies `edit` and writes the result, again on a conflict: see
    /// [`conflict::modify_queue`].
    pub fn modify_queue<E>(
        &self,
        name: &str,
        edit: impl FnMut(&mut Queue) -> std::result::Result<(), E>,
    ) -> std::result::Result<Modified, ModifyError<E>> {
        conflict::modify_queue(self, name, edit)
    }
}

/// A client for the server `config` names: gRPC for a `grpc://` or `grpcs://` address,
/// REST otherwise.
pub fn connect(config: ClientConfig) -> Result<Box<dyn Client>> {
    if grpc::is_grpc_url(&config.base_url) {
        Ok(Box::new(GrpcClient::new(config)?))
    } else {
        Ok(Box::new(RestClient::new(config)?))
    }
}

pub(crate) fn log(line: &str) {
    // The request log is diagnostics, never data: stderr, unbuffered, best effort.
    let _ = writeln!(std::io::stderr(), "retryctl: {line}");
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
            status: Some(status),
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
        // gRPC: no HTTP status, the same exit code for the same meaning.
        let rpc = |code| ClientError::Api {
            status: None,
            code: Some(code),
            message: String::new(),
        };
        for (code, exit) in [
            (16, ExitCode::Auth),
            (7, ExitCode::Auth),
            (5, ExitCode::Failure),
            (6, ExitCode::Failure),
            (9, ExitCode::Failure),
            (10, ExitCode::Failure),
            (3, ExitCode::InvalidInput),
            (14, ExitCode::Unreachable),
            (13, ExitCode::Unreachable),
            (12, ExitCode::Unreachable),
        ] {
            assert_eq!(rpc(code).exit_code(), exit, "code {code}");
        }
        assert!(rpc(5).is_not_found() && rpc(10).is_conflict() && rpc(6).is_already_exists());
        assert!(
            !rpc(9).is_conflict(),
            "FailedPrecondition from a server is not a version conflict"
        );
        assert_eq!(rpc(5).to_string(), "the server answered NotFound: ");
    }
}
