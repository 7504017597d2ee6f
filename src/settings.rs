//! Connection settings: URL, credentials and timeout, resolved from flags > environment >
//! config file > defaults (SPEC §4).
//!
//! Owns: the precedence rules and running `execAuth`. Must not: send requests (that is
//! `client`) or print anything.
//!
//! Precedence, and the decisions where SPEC is silent:
//! - URL: `--armada-url`, `$ARMADA_URL`, the context's `armadaRestUrl`, then its `armadaUrl`,
//!   else `http://localhost:8080`. Which protocol (SPEC §4, §5.3): `http(s)://` is REST,
//!   `grpc://` / `grpcs://` is gRPC (plaintext / TLS). A context's `armadaUrl` without a
//!   scheme is armadactl's gRPC `host:port`, with TLS as armadactl decides it: on unless the
//!   context sets `forceNoTls: true` or the address contains `localhost`; it becomes
//!   `grpc(s)://host:port` (port 443 when none is given, as grpc-go dials). A flag or
//!   variable without a scheme gets `http://`, as armadactl does for `armadaRestUrl`. A
//!   context with both keys is spoken to over REST (`armadaRestUrl`): only REST carries the
//!   design dialect.
//! - Context: `--context`, else the file's `currentContext`, else the flat legacy keys.
//! - Credentials: `$ARMADA_TOKEN` (bearer) wins over the file, since the environment is the
//!   more specific source; then the context's `basicAuth` (when it has a username), then
//!   `bearerToken`, then `execAuth` (armadactl's order: basic before exec).
//! - `execAuth` runs only when a command actually talks to the server.
//! - TLS: `--certificate-authority` and `--insecure-skip-tls-verify` win over the context's
//!   `certificateAuthority` and `insecureSkipTlsVerify` (a flag replaces the context's TLS
//!   settings as a whole); both at once, from the flags or from one context, is a usage error
//!   (kubectl refuses the pair too: one trusts a CA, the other anything). A relative
//!   `certificateAuthority` is relative to the config file's directory, as in a kubeconfig.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::GlobalArgs;
use crate::client::{Auth, ClientConfig, ClientTls};
use crate::config::{self, ConfigFile, ContextConfig, ExecAuth};
use crate::error::{CliError, ExitCode};
use crate::model::duration::GoDuration;

pub const DEFAULT_URL: &str = "http://localhost:8080";

/// Where the URL came from, so that "cannot reach" can say how to point elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlSource {
    Flag,
    Env,
    Context(String),
    Default,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub url: String,
    pub url_source: UrlSource,
    pub timeout: Duration,
    pub verbose: bool,
    pub context: Option<String>,
    /// Credentials before `execAuth` is run.
    pub auth: PendingAuth,
    pub tls: TlsSettings,
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

#[derive(Debug, Clone, PartialEq)]
pub enum PendingAuth {
    Ready(Auth),
    Exec(ExecAuth),
}

/// The environment variables settings read, passed in so tests need not touch the process.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub armada_url: Option<String>,
    pub armada_token: Option<String>,
    pub armadactl_config: Option<String>,
}

impl Env {
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            armada_url: var("ARMADA_URL"),
            armada_token: var("ARMADA_TOKEN"),
            armadactl_config: var("ARMADACTL_CONFIG"),
        }
    }
}

/// Parses `--timeout`.
pub fn parse_timeout(text: &str) -> Result<Duration, CliError> {
    match GoDuration::parse(text) {
        Ok(d) if d.as_nanos() > 0 => Ok(Duration::from_nanos(d.as_nanos())),
        Ok(_) => Err(CliError::usage("invalid `--timeout` `0s`: must be greater than zero")),
        Err(e) => Err(CliError::usage(format!(
            "invalid `--timeout` `{text}`: {e}; expected a duration such as `10s` or `500ms`"
        ))),
    }
}

pub fn load_config(global: &GlobalArgs, env: &Env) -> Result<ConfigFile, CliError> {
    let (path, origin) = config::locate(global.config.as_deref(), env.armadactl_config.as_deref())?;
    ConfigFile::load(path, origin)
}

pub fn resolve(global: &GlobalArgs, env: &Env) -> Result<Settings, CliError> {
    let timeout = parse_timeout(&global.timeout)?;
    let file = load_config(global, env)?;
    let context = global.context.clone().or_else(|| file.current_context());
    let ctx = match &context {
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
    let (raw_url, url_source) = if let Some(u) = &global.armada_url {
        (u.clone(), UrlSource::Flag)
    } else if let Some(u) = &env.armada_url {
        (u.clone(), UrlSource::Env)
    } else if let Some(u) = context_url(&ctx) {
        (u, UrlSource::Context(context.clone().unwrap_or_default()))
    } else {
        (DEFAULT_URL.to_string(), UrlSource::Default)
    };
    let url = normalize_url(&raw_url)?;
    let tls = tls_settings(global, &ctx, context.as_deref(), &file)?;
    let auth = if let Some(t) = &env.armada_token {
        PendingAuth::Ready(Auth::Bearer(t.clone()))
    } else if let Some((u, p)) = ctx.basic_auth {
        PendingAuth::Ready(Auth::Basic {
            username: u,
            password: p,
        })
    } else if let Some(t) = ctx.bearer_token {
        PendingAuth::Ready(Auth::Bearer(t))
    } else if let Some(e) = ctx.exec_auth {
        PendingAuth::Exec(e)
    } else {
        PendingAuth::Ready(Auth::None)
    };
    Ok(Settings {
        url,
        url_source,
        timeout,
        verbose: global.verbose > 0,
        context,
        auth,
        tls,
    })
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
    let whose = match context {
        Some(name) => format!("context `{name}`"),
        None => format!("config file `{}`", file.path.display()),
    };
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

fn context_url(ctx: &ContextConfig) -> Option<String> {
    ctx.armada_rest_url.clone().or_else(|| {
        let url = ctx.armada_url.as_ref()?;
        if url.contains("://") {
            return Some(url.clone());
        }
        Some(grpc_address(url, ctx.force_no_tls))
    })
}

/// armadactl's gRPC `armadaUrl` (`host:port`) as a `grpc://` or `grpcs://` address: TLS
/// unless `forceNoTls` or the address contains `localhost` (`pkg/client/connection.go`).
fn grpc_address(host_port: &str, force_no_tls: bool) -> String {
    let plain = force_no_tls || host_port.contains("localhost");
    format!("{}://{}", if plain { "grpc" } else { "grpcs" }, host_port.trim())
}

/// `host:port` → `http://host:port`; no trailing slash; must parse as an http(s) URL, or be a
/// `grpc(s)://host[:port]` address (port 443 when none is given, as grpc-go dials).
pub fn normalize_url(raw: &str) -> Result<String, CliError> {
    let trimmed = raw.trim();
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_string()
    } else {
        format!("http://{trimmed}")
    };
    let bad = |why: &str| {
        CliError::usage(format!(
            "invalid Armada URL `{}`: {why}",
            crate::redact::redact_url(raw)
        ))
        .with_hint("pass a REST base URL such as `--armada-url http://localhost:8080`")
    };
    let url = reqwest::Url::parse(&with_scheme).map_err(|e| bad(&e.to_string()))?;
    let grpc = matches!(url.scheme(), "grpc" | "grpcs");
    if url.scheme() != "http" && url.scheme() != "https" && !grpc {
        return Err(bad(
            "the scheme must be `http` or `https` (REST), or `grpc` or `grpcs` (gRPC)",
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    if grpc {
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.username() != "" {
            return Err(bad(
                "a gRPC address is `grpc://host:port` or `grpcs://host:port`, nothing more",
            ));
        }
        let host = url.host_str().unwrap_or_default();
        return Ok(format!("{}://{host}:{}", url.scheme(), url.port().unwrap_or(443)));
    }
    Ok(with_scheme.trim_end_matches('/').to_string())
}

impl Settings {
    /// Runs `execAuth` if needed and returns what the client needs.
    pub fn client_config(&self) -> Result<ClientConfig, CliError> {
        // The CA file first: a bad file should not cost an `execAuth` login.
        let extra_roots = match &self.tls.ca_file {
            Some((path, what)) => crate::tls::roots(path, what)?
                .into_iter()
                .map(|c| c.as_ref().to_vec())
                .collect(),
            None => Vec::new(),
        };
        let auth = match &self.auth {
            PendingAuth::Ready(a) => a.clone(),
            PendingAuth::Exec(e) => Auth::Bearer(run_exec(e)?),
        };
        Ok(ClientConfig {
            base_url: self.url.clone(),
            auth,
            timeout: self.timeout,
            verbose: self.verbose,
            tls: ClientTls {
                extra_roots,
                insecure: self.tls.insecure.is_some(),
            },
        })
    }

    /// The next step when the server cannot be reached, naming where the URL came from.
    pub fn unreachable_hint(&self) -> String {
        let from = match &self.url_source {
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
    let text = String::from_utf8_lossy(stdout);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    match lines.as_slice() {
        [token] => Ok(token.to_string()),
        [] => Err(format!(
            "execAuth command `{cmd}` printed no token (expected the bearer token on stdout)"
        )),
        many => Err(format!(
            "execAuth command `{cmd}` printed {} non-empty lines; expected the bearer token \
             alone on one line (not shown here: it may hold secrets)",
            many.len()
        )),
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
        assert_eq!((s.url.as_str(), s.url_source), ("http://flag:3", UrlSource::Flag));
        let s = resolve(&global(&["--config", &cfg]), &env).unwrap();
        assert_eq!(s.url, "http://env:2");
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        assert_eq!(
            (s.url.as_str(), s.url_source),
            ("http://ctx:1", UrlSource::Context("a".into()))
        );
        // armadactl's gRPC host:port is spoken to over gRPC, with TLS unless `forceNoTls` or
        // `localhost` (SPEC §5.3), never replaced by the default URL.
        let s = resolve(&global(&["--config", &cfg, "-c", "b"]), &Env::default()).unwrap();
        assert_eq!(
            (s.url.as_str(), s.url_source),
            ("grpcs://grpc:50051", UrlSource::Context("b".into()))
        );
        let cfg2 = write(
            dir.path(),
            "contexts:\n  p: {armadaUrl: 'h:1', forceNoTls: true}\n  l: {armadaUrl: 'localhost:50051'}\n  both: {armadaUrl: 'h:1', armadaRestUrl: 'https://rest'}\n  bad: {armadaUrl: 'h:1', forceNoTls: yes please}\n",
        );
        for (ctx, want) in [
            ("p", "grpc://h:1"),
            ("l", "grpc://localhost:50051"),
            ("both", "https://rest"),
        ] {
            let s = resolve(&global(&["--config", &cfg2, "-c", ctx]), &Env::default()).unwrap();
            assert_eq!(s.url, want, "context {ctx}");
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
        // ... and the flag or the environment wins over it.
        let s = resolve(&global(&["--config", &cfg, "-c", "b"]), &env).unwrap();
        assert_eq!((s.url.as_str(), s.url_source), ("http://env:2", UrlSource::Env));
        // An `armadaUrl` that is an http(s) URL is used as the REST URL.
        let cfg = write(
            dir.path(),
            "currentContext: c\ncontexts:\n  c: {armadaUrl: 'https://rest:443'}\n",
        );
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        assert_eq!(
            (s.url.as_str(), s.url_source),
            ("https://rest:443", UrlSource::Context("c".into()))
        );
    }

    #[test]
    fn credentials_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write(
            dir.path(),
            "currentContext: a\ncontexts:\n  a: {basicAuth: {username: u, password: p}, bearerToken: t}\n  b: {bearerToken: t}\n",
        );
        let s = resolve(&global(&["--config", &cfg]), &Env::default()).unwrap();
        assert_eq!(
            s.auth,
            PendingAuth::Ready(Auth::Basic {
                username: "u".into(),
                password: "p".into()
            })
        );
        let s = resolve(&global(&["--config", &cfg, "-c", "b"]), &Env::default()).unwrap();
        assert_eq!(s.auth, PendingAuth::Ready(Auth::Bearer("t".into())));
        let env = Env {
            armada_token: Some("envtok".into()),
            ..Env::default()
        };
        let s = resolve(&global(&["--config", &cfg]), &env).unwrap();
        assert_eq!(s.auth, PendingAuth::Ready(Auth::Bearer("envtok".into())));
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
    fn bad_timeout_and_url_are_usage_errors() {
        assert_eq!(parse_timeout("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_timeout("ten").unwrap_err().code, ExitCode::Usage);
        assert_eq!(parse_timeout("0s").unwrap_err().code, ExitCode::Usage);
        assert_eq!(normalize_url("localhost:8080").unwrap(), "http://localhost:8080");
        assert_eq!(normalize_url("ftp://x").unwrap_err().code, ExitCode::Usage);
        assert_eq!(normalize_url("grpc://h:50051/").unwrap(), "grpc://h:50051");
        assert_eq!(normalize_url("grpcs://h").unwrap(), "grpcs://h:443");
        assert_eq!(
            normalize_url("grpc://h:1/v1").unwrap_err().message,
            "invalid Armada URL `grpc://h:1/v1`: a gRPC address is `grpc://host:port` or `grpcs://host:port`, nothing more"
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
