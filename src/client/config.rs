//! What a connection is made from: the server's address, the credentials ([`Auth`]), the
//! timeout and how TLS is verified ([`ClientTls`]), resolved by `connection`.
//!
//! Owns: [`ClientConfig`], [`Auth`] (never printing a secret) and [`ClientTls`] (the one place
//! a reqwest builder is given our verifier). Must not: make a request, or know the Client
//! trait or either transport; both transports and the Lookout source read it.

use std::fmt;
use std::time::Duration;

use super::trust;

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
