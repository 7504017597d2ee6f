//! What every API request is checked against before its handler runs, over REST and gRPC
//! alike: the credentials `serve` accepts ([`AcceptedCredentials`]), the per-address budget of
//! failed authentications, the DNS-rebinding check of an anonymous server's `Host`, and a
//! write's media type (docs/serve.md).
//!
//! Owns: [`Guard`] and the router's `authenticate` layer. Must not: read a body, answer
//! anything but the refusal, or log (the request log is `hygiene`'s).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use super::api::{ApiError, Code};
use super::config::Config;
use super::conn;
use crate::error::CliError;

/// Credentials the server accepts; empty means anonymous.
#[derive(Debug, Default)]
pub(super) struct AcceptedCredentials {
    basic: Vec<(String, String)>,
    tokens: Vec<String>,
}

impl AcceptedCredentials {
    pub(super) fn from_config(config: &Config) -> Result<AcceptedCredentials, CliError> {
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

    pub(super) fn required(&self) -> bool {
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

/// What every API request is checked against before its handler runs.
pub(super) struct Guard {
    pub(super) auth: Arc<AcceptedCredentials>,
    pub(super) check_host: bool,
    pub(super) failures: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (u32, Instant)>>,
}

/// Failed authentications one address may make per window before it is refused (429)
/// until the window ends: enough for typos, too few to guess a password.
pub(super) const MAX_AUTH_FAILURES: u32 = 10;
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
    pub(super) fn refusal(
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
    pub(super) fn screen(
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

/// Host check, credentials, then the write's media type; all before the body is read.
pub(super) async fn authenticate(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::store::Location;

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
}
