//! The wire client: talking to an Armada server over REST or gRPC (docs/reference/wire.md).
//!
//! Owns: the [`Client`] trait the commands use and what a connection is made from
//! ([`ClientConfig`], [`Auth`], [`ClientTls`]); this file holds those and [`connect`]. The
//! parts: the two transports ([`rest`]: the REST API over reqwest; [`grpc`]: Armada's gRPC
//! services over tonic), `error.rs` ([`ClientError`]: every failure of either, with its exit
//! code and words), the transport-neutral writes ([`conflict`]: the dialect refusal and
//! read-back, the retry on conflict), `read_back.rs` (what a read-back lost) and
//! `trust.rs` (the rustls verifier and the TLS diagnosis). Must not: know about clap, tables
//! or output formats, or decide wording beyond what a failed request means.
//!
//! Which transport: the resolved server address decides (`connection`): `http(s)://` is REST,
//! `grpc://` / `grpcs://` (or a context's `armadaUrl: host:port`) is gRPC. Both answer the
//! same calls with the same model types and the same errors, so every command behaves the
//! same over either; what differs is said where it does (a design-dialect policy has no
//! protobuf form; gRPC has no versions, see [`grpc`]).

use std::fmt;
use std::io::Write;
use std::time::Duration;

use crate::model::{Queue, RetryPolicy};
// Re-exported: `history` masks its Lookout URLs with it too (one masking function).
pub use crate::redact::redact_url;

pub mod conflict;
mod error;
pub mod grpc;
mod read_back;
pub mod rest;
mod trust;

pub use conflict::{Modified, ModifyError, CONFLICT_ATTEMPTS};
pub use error::{codes, root_cause, ClientError, Result};
pub use grpc::GrpcClient;
pub use read_back::{diff_fields, queue_differences};
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
    /// `REST` or `gRPC`, for messages.
    fn protocol(&self) -> &'static str;
    /// Over gRPC, which stores only what upstream's protobuf can hold.
    fn is_grpc(&self) -> bool {
        false
    }
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

    /// Creates or replaces a policy, with the dialect checks (docs/reference/wire.md): refused before sending when the
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
