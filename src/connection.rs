//! Connection settings: where the Armada server is, the one set of credentials to send, TLS
//! and the timeout, from flags > environment > config file > defaults (docs/cli.md).
//!
//! Owns: the precedence rules, the rules a server URL must follow, reading `--token-file`
//! and running `execAuth`. Must not: send requests (that is `client`), print anything, or
//! read the config file's format (that is `armadactl_config`).
//!
//! Resolution is in two steps, so that a command resolves only what it uses:
//! - [`resolve`] reads what every server-facing command shares (the timeout, the context,
//!   TLS, `-v`) and the candidates for the address and the credentials. It fails only on
//!   those: a bad `--timeout`, an unknown context, an unreadable config file, contradicting
//!   TLS settings, an empty `--token` or one given twice.
//! - [`ConnectionSettings::server`] chooses the Armada address and
//!   [`ConnectionSettings::credentials`] the credentials, on demand. Commands that talk to
//!   Armada get both from [`ConnectionSettings::armada_client`]; `history --lookout-url` talks
//!   to Lookout alone and uses [`ConnectionSettings::lookout_client`], which never resolves
//!   the Armada address, so a context it cannot use for Armada (a gRPC-only one) does not
//!   stop it. Commands that talk to no server (`validate`, `simulate -f`, `explain`,
//!   `schema`, `completion`, `config`) call neither.
//!
//! The address resolves into an [`Endpoint`] whose [`Address`] is a REST base URL or a gRPC
//! target (docs/serve.md); the credential order does not depend on the transport.
//!
//! Precedence, and the Decisions the design leaves open:
//! - Address: `--armada-url`, `$ARMADA_URL`, the context's `armadaRestUrl`, then its
//!   `armadaUrl`, else `http://localhost:8080`. Which protocol (docs/cli.md, docs/serve.md): `http(s)://`
//!   is REST; `grpc://` / `grpcs://` is gRPC (plaintext / TLS), `host[:port]` only (port 443
//!   when none is given, as grpc-go dials). A context's `armadaUrl` that is not `http(s)://`
//!   is armadactl's gRPC `host:port`, with TLS as armadactl decides it: on unless the context
//!   sets `forceNoTls: true` or the address contains `localhost`. A context with both keys is
//!   spoken to over REST (`armadaRestUrl`): only REST carries the design dialect.
//! - A server URL, from any source (and `--lookout-url` alike): without a scheme it gets
//!   `http://`, as armadactl does for `armadaRestUrl`; the scheme must be `http` or `https`,
//!   with a host; a path prefix is kept (`https://gw/armada/` → `https://gw/armada/v1/...`);
//!   a query string or fragment is a usage error, never pasted before the API path; a
//!   `user:password@` is taken out of the URL and becomes credential source 3, so the HTTP
//!   layer never adds an `Authorization` header of its own.
//! - Context: `--context`, else the file's `currentContext`, else the flat legacy keys.
//! - Credentials: exactly one set, one `Authorization` header: the first given of `--token`
//!   or `--token-file` (both at once is a usage error), `$ARMADA_TOKEN`, the server URL's
//!   `user:password`, then the context's `bearerToken`, `basicAuth` (when it has a username),
//!   `execAuth`. The command line wins over the environment, which wins over the file: the
//!   more specific source. (armadactl, which has no `bearerToken`, checks `basicAuth` before
//!   `execAuth` too.) [`Credentials::from`] names the source for `-v` and hints, never the
//!   secret.
//! - `--token-file` is read, and `execAuth` run, only when chosen; the file, like
//!   `execAuth`'s output, holds the token alone on one line.
//! - TLS: `--certificate-authority` and `--insecure-skip-tls-verify` win over the context's
//!   `certificateAuthority` and `insecureSkipTlsVerify` (a flag replaces the context's TLS
//!   settings as a whole); both at once, from the flags or from one context, is a usage error
//!   (kubectl refuses the pair too: one trusts a CA, the other anything). A relative
//!   `certificateAuthority` is relative to the config file's directory, as in a kubeconfig.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::armadactl_config::{self, ConfigFile, ContextConfig, ExecAuth, Origin, NO_HOME};
use crate::cli::GlobalArgs;
use crate::client::{Auth, ClientConfig, ClientTls};
use crate::error::{CliError, ExitCode};
use crate::model::duration::GoDuration;
use crate::redact::redact_url;

pub const DEFAULT_URL: &str = "http://localhost:8080";

/// Where the address came from, so that "cannot reach" can say how to point elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlSource {
    Flag,
    Env,
    Context(String),
    Default,
}

/// What a server-facing command shares. The address and the credentials are kept as given
/// and chosen only when a command asks ([`ConnectionSettings::server`],
/// [`ConnectionSettings::credentials`]).
#[derive(Debug, Clone)]
pub struct ConnectionSettings {
    pub timeout: Duration,
    pub verbose: bool,
    pub context: Option<String>,
    pub tls: TlsSettings,
    /// The Armada address given first, before its URL is checked.
    address: FirstAddress,
    credentials: Given,
}

/// The Armada address [`resolve`] found first, checked only by [`ConnectionSettings::server`].
#[derive(Debug, Clone, PartialEq)]
enum FirstAddress {
    /// A URL, or a `host:port` taken as `http://`; `from` names its source in messages.
    Url {
        raw: String,
        source: UrlSource,
        from: String,
    },
    /// A context whose only address is an `armadaUrl` that is not `http(s)://`: armadactl's
    /// gRPC address, `host:port`.
    Grpc {
        raw: String,
        source: UrlSource,
        from: String,
        /// armadactl's `forceNoTls`.
        force_no_tls: bool,
    },
}

/// Every credential given, before docs/cli.md's order picks one
/// ([`ConnectionSettings::credentials`]).
#[derive(Clone, Default, PartialEq)]
struct Given {
    token: Option<String>,
    token_file: Option<PathBuf>,
    env_token: Option<String>,
    bearer_token: Option<String>,
    basic_auth: Option<(String, String)>,
    exec_auth: Option<ExecAuth>,
    /// How messages name the context: "context `prod`", or "config file `PATH`" for the
    /// flat legacy keys.
    whose: String,
}

impl fmt::Debug for Given {
    // Which sources are set, never what they hold.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Given")
            .field("token", &self.token.is_some())
            .field("token_file", &self.token_file)
            .field("env_token", &self.env_token.is_some())
            .field("bearer_token", &self.bearer_token.is_some())
            .field("basic_auth", &self.basic_auth.as_ref().map(|(user, _)| user))
            .field("exec_auth", &self.exec_auth.as_ref().map(|e| &e.cmd))
            .field("whose", &self.whose)
            .finish()
    }
}

/// The Armada server a command talks to: where it is and where that came from. (`serve`'s
/// running server is `server::Server`.)
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub address: Address,
    pub source: UrlSource,
    /// The URL's `user:password` as basic auth: credential source 3, taken out of the URL.
    url_auth: Option<Auth>,
}

/// How the Armada server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A REST (grpc-gateway) base URL: `http(s)://host[:port][/prefix]`, without user info,
    /// query, fragment or trailing `/`.
    Rest(String),
    /// A gRPC target: `grpc://host:port` (plaintext) or `grpcs://host:port` (TLS).
    Grpc(String),
}

impl Address {
    /// The address as the client takes it and messages show it.
    pub fn url(&self) -> &str {
        match self {
            Address::Rest(url) | Address::Grpc(url) => url,
        }
    }
}

/// The one set of credentials sent, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    pub auth: Auth,
    /// Where `auth` came from, as `-v` and hints name it: "`$ARMADA_TOKEN`", "the URL",
    /// "`execAuth` of context `prod`"; empty when there are none.
    pub from: String,
}

/// How `https://` servers are verified, before the CA file is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// Extra trusted roots: the file, and how messages name it (with where it came from).
    pub ca_file: Option<(PathBuf, String)>,
    /// `Some(where it came from)`: verify nothing.
    pub insecure: Option<String>,
}

impl TlsSettings {
    /// The warning printed on every run that skips verification.
    pub fn warning(&self) -> Option<String> {
        self.insecure.as_ref().map(|from| {
            format!(
                "warning: TLS certificate verification is off ({from}): anyone on the network \
                 path can read and change this connection, credentials included"
            )
        })
    }
}

/// The environment variables settings read, passed in so tests need not touch the process.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub armada_url: Option<String>,
    pub armada_token: Option<String>,
    pub armadactl_config: Option<String>,
    /// `$HOME`, where the default config file is (none when unset or empty).
    pub home: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            armada_url: var("ARMADA_URL"),
            armada_token: var("ARMADA_TOKEN"),
            armadactl_config: var("ARMADACTL_CONFIG"),
            home: std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
        }
    }
}

/// Parses `--timeout`.
pub fn parse_timeout(text: &str) -> Result<Duration, CliError> {
    match GoDuration::parse(text) {
        Ok(d) if d.as_nanos() > 0 => Ok(Duration::from_nanos(d.as_nanos())),
        Ok(_) => Err(CliError::usage("invalid `--timeout` `0s`: must be greater than zero")),
        // Each of the parse's reasons says what was expected already.
        Err(e) => Err(CliError::usage(format!("invalid `--timeout` `{text}`: {e}"))),
    }
}

pub fn load_config(global: &GlobalArgs, env: &Env) -> Result<ConfigFile, CliError> {
    let (path, origin) = armadactl_config::locate(
        global.config.as_deref(),
        env.armadactl_config.as_deref(),
        env.home.as_deref(),
    );
    ConfigFile::load(path, origin)
}

pub fn resolve(global: &GlobalArgs, env: &Env) -> Result<ConnectionSettings, CliError> {
    let timeout = parse_timeout(&global.timeout)?;
    let file = load_config(global, env)?;
    let context = global.context.clone().or_else(|| file.current_context());
    let no_home = file.origin == Origin::NoHome;
    let ctx = match &context {
        Some(name) if no_home => {
            return Err(CliError::usage(format!(
                "context `{name}` given, but there is no config file: {NO_HOME}"
            ))
            .with_hint("name the config file with `--config FILE` or `$ARMADACTL_CONFIG`"))
        }
        Some(name) if !file.exists => {
            return Err(CliError::usage(format!(
                "context `{name}` given, but there is no config file at `{}`",
                file.path.display()
            ))
            .with_hint("create it (armadactl's format), or name one with `--config FILE`"))
        }
        Some(name) => file.context(Some(name))?,
        None if file.has_contexts() => {
            return Err(CliError::usage(format!(
                "config file `{}` defines contexts but no `currentContext`",
                file.path.display()
            ))
            .with_hint("pick one with `retryctl config use-context NAME` or `--context NAME`"))
        }
        None => file.context(None)?,
    };
    let tls = tls_settings(global, &ctx, context.as_deref(), &file)?;
    if global.token.is_some() && global.token_file.is_some() {
        return Err(CliError::usage(
            "`--token` and `--token-file` both give the bearer token: pass one of them",
        ));
    }
    if global.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        // Most likely `--token "$VAR"` with the variable unset: sending no credentials (or
        // the next source's) instead would hide that.
        return Err(CliError::usage("`--token` is empty: expected the bearer token"));
    }
    let whose = whose(context.as_deref(), &file);
    let url = |raw: &String, source: UrlSource, from: String| FirstAddress::Url {
        raw: raw.clone(),
        source,
        from,
    };
    let in_context = || UrlSource::Context(context.clone().unwrap_or_default());
    let address = if let Some(u) = &global.armada_url {
        url(u, UrlSource::Flag, "`--armada-url`".into())
    } else if let Some(u) = &env.armada_url {
        url(u, UrlSource::Env, "`$ARMADA_URL`".into())
    } else {
        match context_address(ctx.armada_rest_url.as_ref(), ctx.armada_url.as_ref()) {
            ContextAddress::Url { raw, key } => url(raw, in_context(), format!("`{key}` of {whose}")),
            ContextAddress::Grpc(raw) => FirstAddress::Grpc {
                raw: raw.clone(),
                source: in_context(),
                from: format!("`armadaUrl` of {whose}"),
                force_no_tls: ctx.force_no_tls,
            },
            // Without a home, the default server would hide that the config file (and the
            // server it names) was never looked for.
            ContextAddress::None if no_home => {
                return Err(CliError::usage(format!(
                    "no server given: `--armada-url` and `$ARMADA_URL` are not set, and no config file: {NO_HOME}"
                ))
                .with_hint("give the server with `--armada-url URL`, or the config file with `--config FILE`"))
            }
            ContextAddress::None => url(&DEFAULT_URL.to_string(), UrlSource::Default, "the default".into()),
        }
    };
    let credentials = Given {
        token: global.token.clone(),
        token_file: global.token_file.clone(),
        env_token: env.armada_token.clone(),
        bearer_token: ctx.bearer_token,
        basic_auth: ctx.basic_auth,
        exec_auth: ctx.exec_auth,
        whose,
    };
    Ok(ConnectionSettings {
        timeout,
        verbose: global.verbose > 0,
        context,
        tls,
        address,
        credentials,
    })
}

/// How messages name the keys of a context: "context `NAME`", or "config file `PATH`" for
/// the flat legacy keys.
fn whose(context: Option<&str>, file: &ConfigFile) -> String {
    match context {
        Some(name) => format!("context `{name}`"),
        None => format!("config file `{}`", file.path.display()),
    }
}

fn tls_settings(
    global: &GlobalArgs,
    ctx: &ContextConfig,
    context: Option<&str>,
    file: &ConfigFile,
) -> Result<TlsSettings, CliError> {
    if global.certificate_authority.is_some() || global.insecure_skip_tls_verify {
        if global.insecure_skip_tls_verify && global.certificate_authority.is_some() {
            return Err(CliError::usage(
                "`--certificate-authority` and `--insecure-skip-tls-verify` contradict each other: \
                 one trusts a CA, the other any certificate",
            ));
        }
        return Ok(TlsSettings {
            ca_file: global.certificate_authority.clone().map(|p| {
                let what = format!("`--certificate-authority` file `{}`", p.display());
                (p, what)
            }),
            insecure: global
                .insecure_skip_tls_verify
                .then(|| "`--insecure-skip-tls-verify`".to_string()),
        });
    }
    let whose = whose(context, file);
    if ctx.insecure_skip_tls_verify && ctx.certificate_authority.is_some() {
        return Err(CliError::usage(format!(
            "{whose} sets both `certificateAuthority` and `insecureSkipTlsVerify: true`: one trusts \
             a CA, the other any certificate"
        ))
        .with_hint("remove one of them from the config file"));
    }
    let ca_file = ctx.certificate_authority.as_ref().map(|given| {
        let path = PathBuf::from(given);
        let path = match file.path.parent() {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path,
        };
        let what = format!(
            "certificate authority file `{}` (`certificateAuthority` of {whose})",
            path.display()
        );
        (path, what)
    });
    Ok(TlsSettings {
        ca_file,
        insecure: ctx
            .insecure_skip_tls_verify
            .then(|| format!("`insecureSkipTlsVerify` of {whose}")),
    })
}

/// The address a context gives, as [`resolve`] takes it.
enum ContextAddress<'a> {
    /// Its `armadaRestUrl`, else its `armadaUrl` written with a scheme (`http(s)://`,
    /// `grpc(s)://`), taken as written.
    Url {
        raw: &'a String,
        key: &'static str,
    },
    /// Its `armadaUrl` as armadactl writes it: a gRPC `host:port`.
    Grpc(&'a String),
    None,
}

fn context_address<'a>(rest_url: Option<&'a String>, armada_url: Option<&'a String>) -> ContextAddress<'a> {
    match (rest_url, armada_url) {
        (Some(raw), _) => ContextAddress::Url {
            raw,
            key: "armadaRestUrl",
        },
        (None, Some(raw)) if is_http(raw) || is_grpc(raw) => ContextAddress::Url { raw, key: "armadaUrl" },
        (None, Some(raw)) => ContextAddress::Grpc(raw),
        (None, None) => ContextAddress::None,
    }
}

/// Whether the address a context gives holds a `user:password` that is sent (credential
/// source 3, before the context's own `bearerToken`): an HTTP URL that [`server_url`]
/// accepts, with a user. `config get-contexts` says so; a gRPC address takes no user.
pub fn context_url_has_auth(rest_url: Option<&String>, armada_url: Option<&String>) -> bool {
    match context_address(rest_url, armada_url) {
        ContextAddress::Url { raw, .. } if !is_grpc(raw) => {
            server_url(raw, ARMADA_URL, "").is_ok_and(|(_, auth)| auth.is_some())
        }
        _ => false,
    }
}

fn is_http(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// armadactl's gRPC `armadaUrl` (`host:port`) as a `grpc://` or `grpcs://` target: TLS
/// unless `forceNoTls` or the address contains `localhost` (`pkg/client/connection.go`).
fn grpc_target(host_port: &str, force_no_tls: bool) -> String {
    let plain = force_no_tls || host_port.contains("localhost");
    format!("{}://{}", if plain { "grpc" } else { "grpcs" }, host_port.trim())
}

/// Whether `raw` names a gRPC server by its scheme (`grpc://`, `grpcs://`).
fn is_grpc(raw: &str) -> bool {
    crate::client::grpc::is_grpc_url(raw.trim())
}

/// A gRPC target checked: `grpc(s)://host[:port]` and nothing more (no path, query, user),
/// the port 443 when none is given, as grpc-go dials. `from` names the source in errors
/// (usage errors, exit 2).
pub fn grpc_url(raw: &str, from: &str) -> Result<String, CliError> {
    let shown = redact_url(raw.trim());
    let bad = |why: &str| {
        CliError::usage(format!("invalid Armada gRPC address `{shown}` (from {from}): {why}"))
            .with_hint("pass `grpc://HOST:PORT` (plaintext) or `grpcs://HOST:PORT` (TLS)")
    };
    let url = reqwest::Url::parse(raw.trim()).map_err(|e| bad(&e.to_string()))?;
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
    if !matches!(url.path(), "" | "/")
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(bad(
            "a gRPC address is `host:port` and nothing more (no path, query or user)",
        ));
    }
    Ok(format!("{}://{host}:{}", url.scheme(), url.port().unwrap_or(443)))
}

/// Which server a URL is for, in messages.
#[derive(Debug, Clone, Copy)]
pub struct UrlKind {
    /// "Armada URL".
    pub what: &'static str,
    /// A flag with an example value, for the hint of a URL that does not parse.
    pub example: &'static str,
    /// An API path appended to the URL, for the error of a URL with a query or fragment.
    pub api_path: &'static str,
}

pub const ARMADA_URL: UrlKind = UrlKind {
    what: "Armada URL",
    example: "`--armada-url http://localhost:8080`",
    api_path: "`/v1/queue/NAME`",
};

pub const LOOKOUT_URL: UrlKind = UrlKind {
    what: "Lookout URL",
    example: "`--lookout-url http://localhost:10000`",
    api_path: "`/api/v1/jobs`",
};

/// A server URL checked by the rules of the module docs: the base URL to append API paths
/// to (no trailing `/`), and its `user:password` as basic auth. `from` names the source
/// (`` `--armada-url` ``) in the errors, which are usage errors (exit 2).
pub fn server_url(raw: &str, kind: UrlKind, from: &str) -> Result<(String, Option<Auth>), CliError> {
    let trimmed = raw.trim();
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_string()
    } else {
        format!("http://{trimmed}")
    };
    let shown = redact_url(raw.trim());
    let bad = |why: &str| {
        CliError::usage(format!("invalid {} `{shown}` (from {from}): {why}", kind.what))
            .with_hint(format!("pass a base URL such as {}", kind.example))
    };
    let mut url = reqwest::Url::parse(&with_scheme).map_err(|e| bad(&e.to_string()))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(bad("the scheme must be `http` or `https`"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    // API paths are appended to the base as text: after a `?` or `#` they would become part
    // of the query or fragment, and the request would go to the base path. The parts are cut
    // from the text as given (masked), so that the user sees what they typed.
    let end = shown.len();
    let fragment = shown.find('#').unwrap_or(end);
    let query = shown[..fragment].find('?').unwrap_or(fragment);
    let part = |what: &str, text: &str| {
        CliError::usage(format!(
            "invalid {} `{shown}` (from {from}): a server URL takes no {what} (`{text}`); API \
             paths such as {} are appended to it",
            kind.what, kind.api_path,
        ))
        .with_hint(format!("use `{}`", &shown[..query]))
    };
    if url.query().is_some() {
        return Err(part("query string", &shown[query..fragment]));
    }
    if url.fragment().is_some() {
        return Err(part("fragment", &shown[fragment..]));
    }
    // `http://:pw@host` too: reqwest would have sent it, so it is a credential, not noise.
    let auth = (!url.username().is_empty() || url.password().is_some()).then(|| Auth::Basic {
        username: percent_decode(url.username()),
        password: percent_decode(url.password().unwrap_or("")),
    });
    let base = if url.username().is_empty() && url.password().is_none() {
        // As typed: a URL without credentials is shown in messages just as the user wrote it.
        with_scheme
    } else {
        // Out of the URL, or the HTTP layer would send them as a second header. From the
        // parsed URL, not the text: the host is the one the URL parser found.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.to_string()
    };
    Ok((base.trim_end_matches('/').to_string(), auth))
}

/// `%40` → `@`: the user info of a URL is percent-encoded; the header carries the raw text.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl ConnectionSettings {
    /// The Armada server: the address [`resolve`] found first, checked.
    pub fn server(&self) -> Result<Endpoint, CliError> {
        match &self.address {
            FirstAddress::Url { raw, source, from } if is_grpc(raw) => Ok(Endpoint {
                address: Address::Grpc(grpc_url(raw, from)?),
                source: source.clone(),
                url_auth: None,
            }),
            FirstAddress::Url { raw, source, from } => {
                let (url, url_auth) = server_url(raw, ARMADA_URL, from)?;
                Ok(Endpoint {
                    address: Address::Rest(url),
                    source: source.clone(),
                    url_auth,
                })
            }
            FirstAddress::Grpc {
                raw,
                source,
                from,
                force_no_tls,
            } => Ok(Endpoint {
                address: Address::Grpc(grpc_url(&grpc_target(raw, *force_no_tls), from)?),
                source: source.clone(),
                url_auth: None,
            }),
        }
    }

    /// The one set of credentials to send to a server whose URL held `url_auth`: the first
    /// given, in docs/cli.md's order. Reads `--token-file` or runs `execAuth` only when it is
    /// the one chosen.
    pub fn credentials(&self, url_auth: Option<&Auth>) -> Result<Credentials, CliError> {
        let g = &self.credentials;
        let found = |auth: Auth, from: String| Ok(Credentials { auth, from });
        if let Some(t) = &g.token {
            let from = "`--token`".to_string();
            return found(Auth::Bearer(sendable(t.trim(), &from, CliError::usage)?), from);
        }
        if let Some(path) = &g.token_file {
            let from = format!("`--token-file` `{}`", path.display());
            let token = read_token_file(path, &from)?;
            return found(Auth::Bearer(sendable(&token, &from, CliError::usage)?), from);
        }
        if let Some(t) = &g.env_token {
            let from = "`$ARMADA_TOKEN`".to_string();
            return found(Auth::Bearer(sendable(t.trim(), &from, CliError::usage)?), from);
        }
        if let Some(auth) = url_auth {
            return found(auth.clone(), "the URL".into());
        }
        if let Some(t) = &g.bearer_token {
            let from = format!("`bearerToken` of {}", g.whose);
            return found(Auth::Bearer(sendable(t, &from, CliError::invalid)?), from);
        }
        if let Some((username, password)) = &g.basic_auth {
            let auth = Auth::Basic {
                username: username.clone(),
                password: password.clone(),
            };
            return found(auth, format!("`basicAuth` of {}", g.whose));
        }
        if let Some(e) = &g.exec_auth {
            return found(Auth::Bearer(run_exec(e)?), format!("`execAuth` of {}", g.whose));
        }
        found(Auth::None, String::new())
    }

    /// The trust settings, with the CA file read.
    fn client_tls(&self) -> Result<ClientTls, CliError> {
        let extra_roots = match &self.tls.ca_file {
            Some((path, what)) => crate::tls::roots(path, what)?
                .into_iter()
                .map(|c| c.as_ref().to_vec())
                .collect(),
            None => Vec::new(),
        };
        Ok(ClientTls {
            extra_roots,
            insecure: self.tls.insecure.is_some(),
        })
    }

    /// The Armada server and what `Client::new` needs to talk to it. In this order: the
    /// address, the CA file, then the credentials, so that a bad URL or file does not cost
    /// an `execAuth` login.
    pub fn armada_client(&self) -> Result<(Endpoint, ClientConfig), CliError> {
        let server = self.server()?;
        let tls = self.client_tls()?;
        let credentials = self.credentials(server.url_auth.as_ref())?;
        let config = ClientConfig {
            base_url: server.address.url().to_string(),
            auth: credentials.auth,
            auth_from: credentials.from,
            timeout: self.timeout,
            verbose: self.verbose,
            tls,
        };
        Ok((server, config))
    }

    /// What `history --lookout-url` needs: Lookout's base URL (checked as a server URL, its
    /// `user:password` taken out), the credentials to send it and the trust settings. The
    /// Armada address is never resolved: Lookout is the only server the command talks to.
    pub fn lookout_client(&self, raw: &str) -> Result<(String, Credentials, ClientTls), CliError> {
        let (url, url_auth) = server_url(raw, LOOKOUT_URL, "`--lookout-url`")?;
        let tls = self.client_tls()?;
        let credentials = self.credentials(url_auth.as_ref())?;
        Ok((url, credentials, tls))
    }
}

impl Endpoint {
    /// The next step when the server cannot be reached, naming where the address came from.
    pub fn unreachable_hint(&self) -> String {
        let from = match &self.source {
            UrlSource::Flag => "this URL came from `--armada-url`".to_string(),
            UrlSource::Env => "this URL came from `$ARMADA_URL`".to_string(),
            UrlSource::Context(c) => format!("this URL came from context `{c}` of the config file"),
            UrlSource::Default => {
                "this URL is the default (no flag, `$ARMADA_URL` or config context set one)".to_string()
            }
        };
        format!(
            "start a server (`retryctl serve`), or point retryctl elsewhere with `--armada-url URL`, \
             `$ARMADA_URL` or a config context (`retryctl config get-contexts`); {from}"
        )
    }
}

/// `token` when every character of it can go in an HTTP header and in gRPC metadata
/// (printable ASCII, no space); else the refusal `refuse` makes (a usage error for a flag or a
/// variable, invalid input for a config file), which never quotes the token: it is a secret.
/// Sent as it was, it failed at the request, as a server that could not be reached (exit 4).
fn sendable(token: &str, from: &str, refuse: fn(String) -> CliError) -> Result<String, CliError> {
    match token.chars().find(|c| !c.is_ascii_graphic()) {
        None => Ok(token.to_string()),
        Some(c) => {
            let what = match c {
                '\n' | '\r' => "a line break, which no HTTP header or gRPC metadata can carry",
                ' ' | '\t' => "a space, which no bearer token holds (RFC 6750)",
                c if c.is_control() => "a control character, which no HTTP header or gRPC metadata can carry",
                _ => "a character that is not ASCII, which gRPC metadata cannot carry and no bearer token holds",
            };
            Err(refuse(format!(
                "{from} holds {what}: expected the bearer token alone (not shown here: it is a secret)"
            )))
        }
    }
}

/// The token of `--token-file`: the file's one non-empty line, trimmed. Problems are usage
/// errors (the flag's value is wrong) that never quote the file: it holds a secret.
fn read_token_file(path: &Path, from: &str) -> Result<String, CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("cannot read {from}: {}", crate::input::io_reason(&e))))?;
    one_line(&bytes).map_err(|lines| {
        CliError::usage(match lines {
            0 => format!("{from} holds no token (expected the bearer token on one line)"),
            n => format!(
                "{from} holds {n} non-empty lines; expected the bearer token alone on one line \
                 (not shown here: it may hold secrets)"
            ),
        })
    })
}

/// How long `execAuth` may run. Generous, since the command may open a browser login, but
/// bounded: a hung helper must not hang the CLI.
pub const EXEC_AUTH_LIMIT: Duration = Duration::from_secs(60);

/// How long, once the helper has exited, its stdout may stay open before what it printed is
/// taken as the token: a child it left running in the background may hold the pipe forever.
const EXEC_AUTH_GRACE: Duration = Duration::from_millis(200);

/// Runs the exec-auth command; its trimmed stdout is the bearer token.
fn run_exec(e: &ExecAuth) -> Result<String, CliError> {
    run_exec_within(e, EXEC_AUTH_LIMIT)
}

/// Runs `e` with `limit` over the whole exchange (start, output, exit). The helper gets its
/// own process group, so that on timeout the group is killed: a helper is often a shell
/// script whose real work is a grandchild, which killing the shell alone would leave running.
/// Stdout is read until the helper exits, not until EOF: a child it left in the background
/// may keep the pipe open, and the token was printed by then.
fn run_exec_within(e: &ExecAuth, limit: Duration) -> Result<String, CliError> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::Instant;

    let started = Instant::now();
    let deadline = started + limit;
    let auth_err = |msg: String| CliError::new(ExitCode::Auth, msg);
    let mut child = Command::new(&e.cmd)
        .args(&e.args)
        .envs(e.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|err| {
            auth_err(format!(
                "execAuth command `{}` could not be run: {}",
                e.cmd,
                crate::input::io_reason(&err)
            ))
        })?;
    // The group id is the helper's pid (`process_group(0)`).
    let group = child.id() as libc::pid_t;
    // Both pipes are read on threads, so a chatty helper cannot block on a full pipe.
    let out = PipeReader::start(child.stdout.take().expect("piped"));
    let err = PipeReader::start(child.stderr.take().expect("piped"));
    let timed_out = || {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        auth_err(format!(
            "execAuth command `{}` did not finish within {}; it and its process group were killed",
            e.cmd,
            GoDuration(limit.as_nanos() as u64)
        ))
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let err = timed_out();
                // The helper itself, in case the group kill failed.
                let _ = child.kill();
                let _ = child.wait();
                return Err(err);
            }
            Err(x) => return Err(auth_err(format!("execAuth command `{}`: {x}", e.cmd))),
        }
    };
    // The helper has exited; give the readers a moment to drain what it wrote, bounded by
    // the limit and the grace period (a background child may never close the pipes).
    let until = deadline.min(Instant::now() + EXEC_AUTH_GRACE);
    let stdout = out.finish(until);
    let stderr = err.finish(until);
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        let tail = stderr.trim();
        let code = status.code().map_or("a signal".to_string(), |c| format!("status {c}"));
        let mut msg = format!("execAuth command `{}` failed with {code}", e.cmd);
        if !tail.is_empty() {
            msg.push_str(&format!(": {}", tail.lines().last().unwrap_or(tail)));
        }
        return Err(auth_err(msg));
    }
    token_of(&e.cmd, &stdout).map_err(auth_err)
}

/// The token in a helper's stdout: exactly one non-empty line, trimmed. The message never
/// quotes the output: it is, or holds, a secret.
fn token_of(cmd: &str, stdout: &[u8]) -> Result<String, String> {
    one_line(stdout).map_err(|lines| match lines {
        0 => format!("execAuth command `{cmd}` printed no token (expected the bearer token on stdout)"),
        n => format!(
            "execAuth command `{cmd}` printed {n} non-empty lines; expected the bearer token \
             alone on one line (not shown here: it may hold secrets)"
        ),
    })
}

/// The one non-empty line of `text`, trimmed (blank lines around it are fine: a trailing
/// newline is the norm); else how many non-empty lines there are.
fn one_line(text: &[u8]) -> Result<String, usize> {
    let text = String::from_utf8_lossy(text);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match lines.as_slice() {
        [token] => Ok(token.to_string()),
        many => Err(many.len()),
    }
}

/// Reads a pipe to its end on a thread; what was read so far can be taken at any time.
struct PipeReader {
    buf: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl PipeReader {
    fn start(mut pipe: impl std::io::Read + Send + 'static) -> PipeReader {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, done) = std::sync::mpsc::channel();
        let sink = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => sink
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(());
        });
        PipeReader { buf, done }
    }

    /// What was read once the pipe closed, or at `until` if it is still open (the thread is
    /// then left blocked on the pipe; it ends with the process).
    fn finish(self, until: std::time::Instant) -> Vec<u8> {
        let wait = until.saturating_duration_since(std::time::Instant::now());
        let _ = self.done.recv_timeout(wait);
        let buf = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        buf.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn global(args: &[&str]) -> GlobalArgs {
        let mut v = vec!["retryctl"];
        v.extend_from_slice(args);
        v.push("version");
        crate::cli::Cli::parse_from(v).global
    }

    fn write(dir: &std::path::Path, text: &str) -> String {
        let p = dir.join("cfg.yaml");
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    /// The address and where it came from.
    fn address(s: &ConnectionSettings) -> (String, UrlSource) {
        let server = s.server().unwrap();
        (server.address.url().to_string(), server.source)
    }

    #[test]
    fn url_precedence_flag_env_context_default() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write(
            dir.path(),
            "currentContext: a\ncontexts:\n  a: {armadaRestUrl: ctx:1}\n  b: {armadaUrl: 'grpc:50051'}\n",
        );
        let env = Env {
            armada_url: Some("http://env:2".into()),
            ..Env::default()
        };
        let s = resolve(&global(&["--config", &cfg, "--armada-url", "http://flag:3/"]), &env).unwrap();
        assert_eq!(address(&s), ("http://flag:3".into(), UrlSource::Flag));
        let s = resolve(&global(&["--config", &cfg]), &env).unwrap();
        assert_eq!(address(&s), ("http://env:2".into(), UrlSource::Env));
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        assert_eq!(address(&s), ("http://ctx:1".into(), UrlSource::Context("a".into())));
        // armadactl's gRPC host:port is spoken to over gRPC, with TLS unless `forceNoTls` or
        // `localhost` (docs/serve.md), never replaced by the default URL.
        let s = resolve(&global(&["--config", &cfg, "-c", "b"]), &Env::default()).unwrap();
        assert_eq!(s.server().unwrap().address, Address::Grpc("grpcs://grpc:50051".into()));
        let cfg2 = write(
            dir.path(),
            "contexts:\n  p: {armadaUrl: 'h:1', forceNoTls: true}\n  l: {armadaUrl: 'localhost:50051'}\n  \
             both: {armadaUrl: 'h:1', armadaRestUrl: 'https://rest'}\n  noport: {armadaUrl: 'h'}\n  \
             scheme: {armadaUrl: 'grpc://h:2'}\n  bad: {armadaUrl: 'h:1', forceNoTls: yes please}\n",
        );
        for (ctx, want) in [
            ("p", Address::Grpc("grpc://h:1".into())),
            ("l", Address::Grpc("grpc://localhost:50051".into())),
            ("both", Address::Rest("https://rest".into())),
            ("noport", Address::Grpc("grpcs://h:443".into())),
            // A scheme is taken as written (it once became `grpcs://grpc://h:2`).
            ("scheme", Address::Grpc("grpc://h:2".into())),
        ] {
            let s = resolve(&global(&["--config", &cfg2, "-c", ctx]), &Env::default()).unwrap();
            assert_eq!(s.server().unwrap().address, want, "context {ctx}");
        }
        let e = resolve(&global(&["--config", &cfg2, "-c", "bad"]), &Env::default()).unwrap_err();
        assert_eq!(
            e.message,
            format!("invalid config file `{cfg2}`: contexts.bad.forceNoTls: expected `true` or `false`")
        );
        let cfg = write(
            dir.path(),
            "currentContext: a\ncontexts:\n  a: {armadaRestUrl: ctx:1}\n  b: {armadaUrl: 'grpc:50051'}\n",
        );
        // `grpc://` and `grpcs://` from the flag; nothing but `host:port`.
        let s = resolve(
            &global(&["--config", &cfg, "--armada-url", "GRPC://h:9/"]),
            &Env::default(),
        )
        .unwrap();
        assert_eq!(s.server().unwrap().address, Address::Grpc("grpc://h:9".into()));
        let s = resolve(
            &global(&["--config", &cfg, "--armada-url", "grpc://u:p@h:9/v1"]),
            &Env::default(),
        )
        .unwrap();
        assert_eq!(
            s.server().unwrap_err().message,
            "invalid Armada gRPC address `grpc://u:***@h:9/v1` (from `--armada-url`): a gRPC address is \
             `host:port` and nothing more (no path, query or user)"
        );
        // ... and the flag or the environment wins over the context.
        let s = resolve(&global(&["--config", &cfg, "-c", "b"]), &env).unwrap();
        assert_eq!(address(&s), ("http://env:2".into(), UrlSource::Env));
        // An `armadaUrl` that is an http(s) URL is used as the REST URL.
        let cfg = write(
            dir.path(),
            "currentContext: c\ncontexts:\n  c: {armadaUrl: 'https://rest:443'}\n",
        );
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        assert_eq!(address(&s), ("https://rest:443".into(), UrlSource::Context("c".into())));
        let bare = write(dir.path(), "");
        let s = resolve(&global(&["--config", &bare]), &Env::default()).unwrap();
        assert_eq!(address(&s), (DEFAULT_URL.into(), UrlSource::Default));
    }

    fn basic(user: &str, password: &str) -> Auth {
        Auth::Basic {
            username: user.into(),
            password: password.into(),
        }
    }

    /// The credentials chosen, and where from, for a server URL.
    fn chosen(args: &[&str], env: &Env) -> (Auth, String) {
        let s = resolve(&global(args), env).unwrap();
        let (_, config) = s.armada_client().unwrap();
        (config.auth, config.auth_from)
    }

    #[test]
    fn credentials_follow_spec_order_and_name_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write(
            dir.path(),
            "currentContext: a\ncontexts:\n  a:\n    basicAuth: {username: u, password: p}\n    bearerToken: t\n    execAuth: {cmd: sh, args: [-c, 'echo exec-tok']}\n  b: {basicAuth: {username: u, password: p}, execAuth: {cmd: sh, args: [-c, 'echo exec-tok']}}\n  c: {execAuth: {cmd: sh, args: [-c, 'echo exec-tok']}}\n  d: {}\n",
        );
        let tokens = dir.path().join("token");
        std::fs::write(&tokens, "\n  file-tok  \n").unwrap();
        let tokens = tokens.display().to_string();
        let env = Env {
            armada_token: Some("env-tok".into()),
            ..Env::default()
        };
        let url = "http://al%40ice:p%3Aw@h:1/";
        let bearer = |t: &str| Auth::Bearer(t.into());
        let from = |s: &str| s.to_string();
        assert_eq!(
            chosen(&["--config", &cfg, "--armada-url", url, "--token", "flag-tok"], &env),
            (bearer("flag-tok"), from("`--token`"))
        );
        assert_eq!(
            chosen(&["--config", &cfg, "--armada-url", url, "--token-file", &tokens], &env),
            (bearer("file-tok"), format!("`--token-file` `{tokens}`"))
        );
        assert_eq!(
            chosen(&["--config", &cfg, "--armada-url", url], &env),
            (bearer("env-tok"), from("`$ARMADA_TOKEN`"))
        );
        // The URL's user info, percent-decoded.
        assert_eq!(
            chosen(&["--config", &cfg, "--armada-url", url], &Env::default()),
            (basic("al@ice", "p:w"), from("the URL"))
        );
        let none = Env::default();
        assert_eq!(
            chosen(&["--config", &cfg], &none),
            (bearer("t"), from("`bearerToken` of context `a`"))
        );
        assert_eq!(
            chosen(&["--config", &cfg, "-c", "b"], &none),
            (basic("u", "p"), from("`basicAuth` of context `b`"))
        );
        assert_eq!(
            chosen(&["--config", &cfg, "-c", "c"], &none),
            (bearer("exec-tok"), from("`execAuth` of context `c`"))
        );
        assert_eq!(chosen(&["--config", &cfg, "-c", "d"], &none), (Auth::None, from("")));
    }

    #[test]
    fn exec_auth_runs_only_when_it_is_the_chosen_source() {
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        let cfg = write(
            dir.path(),
            &format!(
                "currentContext: a\ncontexts:\n  a: {{execAuth: {{cmd: sh, args: [-c, 'touch {}; echo tok']}}}}\n",
                ran.display()
            ),
        );
        let env = Env {
            armada_token: Some("env-tok".into()),
            ..Env::default()
        };
        assert_eq!(
            chosen(&["--config", &cfg], &env),
            (Auth::Bearer("env-tok".into()), "`$ARMADA_TOKEN`".into())
        );
        assert!(!ran.exists(), "execAuth ran though `$ARMADA_TOKEN` won");
        // Nor for resolving alone, or the address alone.
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        s.server().unwrap();
        assert!(!ran.exists(), "execAuth ran before the credentials were asked for");
        assert_eq!(s.credentials(None).unwrap().auth, Auth::Bearer("tok".into()));
        assert!(ran.exists());
    }

    #[test]
    fn token_flags_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write(dir.path(), "");
        let e = resolve(
            &global(&["--config", &cfg, "--token", "a", "--token-file", "f"]),
            &Env::default(),
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ExitCode::Usage,
                "`--token` and `--token-file` both give the bearer token: pass one of them"
            )
        );
        let e = resolve(&global(&["--config", &cfg, "--token", " "]), &Env::default()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ExitCode::Usage, "`--token` is empty: expected the bearer token")
        );
        let file = dir.path().join("tokens");
        let shown = file.display().to_string();
        let fails = |text: Option<&str>| {
            match text {
                Some(t) => std::fs::write(&file, t).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&file);
                }
            }
            let s = resolve(&global(&["--config", &cfg, "--token-file", &shown]), &Env::default()).unwrap();
            let e = s.credentials(None).unwrap_err();
            assert_eq!(e.code, ExitCode::Usage);
            e.message
        };
        assert_eq!(
            fails(None),
            format!("cannot read `--token-file` `{shown}`: no such file or directory")
        );
        assert_eq!(
            fails(Some("\n \n")),
            format!("`--token-file` `{shown}` holds no token (expected the bearer token on one line)")
        );
        assert_eq!(
            fails(Some("secret-1\nsecret-2\n")),
            format!(
                "`--token-file` `{shown}` holds 2 non-empty lines; expected the bearer token alone \
                 on one line (not shown here: it may hold secrets)"
            )
        );
        // What no request can carry is refused before any is sent (it failed at the request,
        // as a server that could not be reached: exit 4), never quoting the token.
        assert_eq!(
            fails(Some("s\x1bcret\n")),
            format!(
                "`--token-file` `{shown}` holds a control character, which no HTTP header or gRPC \
                 metadata can carry: expected the bearer token alone (not shown here: it is a secret)"
            )
        );
        let s = resolve(&global(&["--config", &cfg, "--token", "se\ncret"]), &Env::default()).unwrap();
        let e = s.credentials(None).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ExitCode::Usage,
                "`--token` holds a line break, which no HTTP header or gRPC metadata can carry: expected \
                 the bearer token alone (not shown here: it is a secret)"
            )
        );
    }

    #[test]
    fn server_urls_keep_their_path_and_refuse_a_query_or_fragment() {
        let ok = |raw: &str| server_url(raw, ARMADA_URL, "`--armada-url`").unwrap();
        assert_eq!(ok("localhost:8080"), ("http://localhost:8080".into(), None));
        assert_eq!(
            ok("https://gw.example/armada/"),
            ("https://gw.example/armada".into(), None)
        );
        assert_eq!(
            ok("https://u:p@gw.example:8443/armada/"),
            ("https://gw.example:8443/armada".into(), Some(basic("u", "p")))
        );
        // A user without a password is basic auth with an empty password, as curl sends it.
        assert_eq!(ok("http://u@h"), ("http://h".into(), Some(basic("u", ""))));
        assert_eq!(ok("http://:p@h"), ("http://h".into(), Some(basic("", "p"))));
        let err = |raw: &str, from: &str| {
            let e = server_url(raw, ARMADA_URL, from).unwrap_err();
            assert_eq!(e.code, ExitCode::Usage);
            (e.message, e.hint.unwrap_or_default())
        };
        assert_eq!(
            err("http://h:1/?x=1", "`--armada-url`"),
            (
                "invalid Armada URL `http://h:1/?x=1` (from `--armada-url`): a server URL takes no \
                 query string (`?x=1`); API paths such as `/v1/queue/NAME` are appended to it"
                    .into(),
                "use `http://h:1/`".into()
            )
        );
        // Masked in the message, from whichever source.
        assert_eq!(
            err("https://u:pw@gw/armada?token=s3cret#top", "`$ARMADA_URL`"),
            (
                "invalid Armada URL `https://u:***@gw/armada?token=***#top` (from `$ARMADA_URL`): a \
                 server URL takes no query string (`?token=***`); API paths such as \
                 `/v1/queue/NAME` are appended to it"
                    .into(),
                "use `https://u:***@gw/armada`".into()
            )
        );
        assert_eq!(
            err("h:1/#frag", "`armadaRestUrl` of context `a`").0,
            "invalid Armada URL `h:1/#frag` (from `armadaRestUrl` of context `a`): a server URL \
             takes no fragment (`#frag`); API paths such as `/v1/queue/NAME` are appended to it"
        );
        assert_eq!(
            err("ftp://x", "`--armada-url`"),
            (
                "invalid Armada URL `ftp://x` (from `--armada-url`): the scheme must be `http` or \
                 `https`"
                    .into(),
                "pass a base URL such as `--armada-url http://localhost:8080`".into()
            )
        );
    }

    #[test]
    fn bad_timeout_is_a_usage_error() {
        assert_eq!(parse_timeout("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_timeout("ten").unwrap_err().code, ExitCode::Usage);
        assert_eq!(parse_timeout("0s").unwrap_err().code, ExitCode::Usage);
    }

    #[test]
    fn tls_flags_win_over_the_context_and_relative_paths_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write(
            dir.path(),
            "currentContext: a\ncontexts:\n  a: {certificateAuthority: ca.pem}\n  b: {insecureSkipTlsVerify: true}\n  c: {certificateAuthority: /etc/ca.pem, insecureSkipTlsVerify: true}\n",
        );
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        let ca = dir.path().join("ca.pem");
        assert_eq!(
            s.tls,
            TlsSettings {
                ca_file: Some((
                    ca.clone(),
                    format!(
                        "certificate authority file `{}` (`certificateAuthority` of context `a`)",
                        ca.display()
                    )
                )),
                insecure: None,
            }
        );
        assert_eq!(s.tls.warning(), None);
        // A flag replaces the context's TLS settings as a whole.
        let s = resolve(
            &global(&["--config", &cfg, "--insecure-skip-tls-verify"]),
            &Env::default(),
        )
        .unwrap();
        assert_eq!(s.tls.ca_file, None);
        assert_eq!(s.tls.insecure.as_deref(), Some("`--insecure-skip-tls-verify`"));
        let s = resolve(
            &global(&["--config", &cfg, "-c", "b", "--certificate-authority", "x.pem"]),
            &Env::default(),
        )
        .unwrap();
        assert_eq!(s.tls.insecure, None);
        assert_eq!(
            s.tls.ca_file,
            Some(("x.pem".into(), "`--certificate-authority` file `x.pem`".into()))
        );
        let s = resolve(&global(&["--config", &cfg, "-c", "b"]), &Env::default()).unwrap();
        assert_eq!(
            s.tls.insecure.as_deref(),
            Some("`insecureSkipTlsVerify` of context `b`")
        );
        let e = resolve(&global(&["--config", &cfg, "-c", "c"]), &Env::default()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str(), e.hint.as_deref()),
            (
                ExitCode::Usage,
                "context `c` sets both `certificateAuthority` and `insecureSkipTlsVerify: true`: one \
                 trusts a CA, the other any certificate",
                Some("remove one of them from the config file")
            )
        );
    }

    #[test]
    fn exec_auth_token_and_failures() {
        let ok = ExecAuth {
            cmd: "sh".into(),
            args: vec!["-c".into(), "echo \"  $TOK \"".into()],
            env: vec![("TOK".into(), "abc".into())],
        };
        assert_eq!(run_exec(&ok).unwrap(), "abc");
        let fail = ExecAuth {
            cmd: "sh".into(),
            args: vec!["-c".into(), "echo nope >&2; exit 3".into()],
            env: vec![],
        };
        let e = run_exec(&fail).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ExitCode::Auth, "execAuth command `sh` failed with status 3: nope")
        );
        let empty = ExecAuth {
            cmd: "true".into(),
            ..ExecAuth::default()
        };
        let e = run_exec(&empty).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ExitCode::Auth,
                "execAuth command `true` printed no token (expected the bearer token on stdout)"
            )
        );
    }

    fn sh(script: &str) -> ExecAuth {
        ExecAuth {
            cmd: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
        }
    }

    /// Whether process `pid` is gone (or a zombie waiting for its new parent to reap it).
    fn gone(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    fn wait_gone(pid: &str) -> bool {
        (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(25));
            gone(pid)
        })
    }

    #[test]
    fn exec_auth_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // The real work in a grandchild, the shell waiting for it: killing the shell alone
        // would leave the grandchild running.
        let helper = sh(&format!("sleep 30 & echo $! > {}; wait", pidfile.display()));
        let e = run_exec_within(&helper, Duration::from_millis(300)).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ExitCode::Auth,
                "execAuth command `sh` did not finish within 300ms; it and its process group were killed"
            )
        );
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        assert!(wait_gone(pid.trim()), "grandchild {pid} still running");
    }

    #[test]
    fn exec_auth_token_is_read_when_the_helper_exits_not_at_eof() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // The background child inherits stdout and holds it open for 30 s; the limit is
        // longer than that, so only reading until the helper exits can return here.
        let helper = sh(&format!("echo tok-1; sleep 30 & echo $! > {}", pidfile.display()));
        let token = run_exec_within(&helper, Duration::from_secs(60));
        let pid = std::fs::read_to_string(&pidfile).unwrap();
        let still_running = !gone(pid.trim());
        // SAFETY: kill(2) on a pid this test started.
        unsafe { libc::kill(pid.trim().parse().unwrap(), libc::SIGKILL) };
        assert_eq!(token.unwrap(), "tok-1");
        assert!(
            still_running,
            "the background child was killed, so this test proves nothing"
        );
    }

    #[test]
    fn exec_auth_multi_line_or_empty_output_is_an_auth_error_without_the_token() {
        let e = run_exec(&sh("echo secret-a; echo; echo secret-b")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ExitCode::Auth,
                "execAuth command `sh` printed 2 non-empty lines; expected the bearer token alone \
                 on one line (not shown here: it may hold secrets)"
            )
        );
        let e = run_exec(&sh("printf '  \\n\\n'")).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ExitCode::Auth,
                "execAuth command `sh` printed no token (expected the bearer token on stdout)"
            )
        );
        // Blank lines around one token are fine (a trailing newline is the norm).
        assert_eq!(run_exec(&sh("echo; echo ' tok '; echo")).unwrap(), "tok");
    }
}
