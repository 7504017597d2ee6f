//! What `serve` was asked to do ([`Config`], [`TlsFiles`]): the command's flags, resolved.
//!
//! Owns: those settings and their defaults. Must not: check or act on them (binding and its
//! refusals are `Server::bind`'s, the credentials `guard`'s).

use std::path::PathBuf;

use super::body::BODY_READ_TIMEOUT;
use super::store::Location;
use crate::wire::Dialect;

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
