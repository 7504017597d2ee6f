//! The armadactl config file (`~/.armadactl.yaml`), read and rewritten as armadactl does.
//!
//! Owns: finding the file (`--config`, `$ARMADACTL_CONFIG`, `$HOME/.armadactl.yaml`), reading
//! its contexts, masking secrets for `config view`, and rewriting
//! `currentContext` while keeping every other key. Must not: resolve precedence against
//! flags and environment (that is `connection`), talk to a server, or run `execAuth`.
//!
//! The file stays a `serde_yaml::Value`: armadactl's config carries many keys retryctl does
//! not use (`openIdAuth`, `executorClusters`, ...), and a rewrite must keep them all. Keys are
//! looked up case-insensitively, as viper does. The legacy flat form (connection keys at the
//! top level, no `contexts`) is read as one unnamed context.
//!
//! Decision: the home is `$HOME` alone, as armadactl (`$HOME/.armadactl.yaml`) and kubectl
//! read it, not the password database: with `$HOME` unset or empty there is no default file
//! ([`Origin::NoHome`]), and what needs one says so (docs/cli.md).

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};

use crate::error::CliError;
use crate::whole_file::{write_whole, Mode};

/// Where the config file comes from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Env,
    Home,
    /// Neither `--config` nor `$ARMADACTL_CONFIG`, and `$HOME` is not set: no file is read.
    NoHome,
}

/// Why there is no config file when `$HOME` is not set: where it was looked for.
pub const NO_HOME: &str =
    "`--config` and `$ARMADACTL_CONFIG` are not given and `$HOME` is not set, so there is no `~/.armadactl.yaml` to read";

#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub origin: Origin,
    /// False when the default `~/.armadactl.yaml` does not exist (that is fine).
    pub exists: bool,
    pub root: Value,
}

/// One context's connection settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContextConfig {
    pub armada_rest_url: Option<String>,
    pub armada_url: Option<String>,
    pub basic_auth: Option<(String, String)>,
    pub bearer_token: Option<String>,
    pub exec_auth: Option<ExecAuth>,
    /// `certificateAuthority`: a PEM file of extra trusted roots, as written in the file
    /// (`connection` resolves a relative path against the file's directory).
    pub certificate_authority: Option<String>,
    /// `insecureSkipTlsVerify: true`.
    pub insecure_skip_tls_verify: bool,
    /// armadactl's `forceNoTls: true`: speak gRPC to `armadaUrl` without TLS.
    pub force_no_tls: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecAuth {
    pub cmd: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

const SECRET_KEYS: [&str; 4] = ["password", "bearerToken", "clientSecret", "token"];
pub const MASK: &str = "********";

/// The config file path: `--config`, else `$ARMADACTL_CONFIG`, else `$HOME/.armadactl.yaml`
/// (`home`: `$HOME`, when set and not empty); with none of them, `~/.armadactl.yaml` as a
/// name for messages, [`Origin::NoHome`].
pub fn locate(flag: Option<&Path>, env: Option<&str>, home: Option<&Path>) -> (PathBuf, Origin) {
    if let Some(p) = flag {
        return (p.to_path_buf(), Origin::Flag);
    }
    if let Some(p) = env.filter(|p| !p.is_empty()) {
        return (PathBuf::from(p), Origin::Env);
    }
    match home {
        Some(h) => (h.join(".armadactl.yaml"), Origin::Home),
        None => (PathBuf::from("~/.armadactl.yaml"), Origin::NoHome),
    }
}

impl ConfigFile {
    /// Reads the file. A missing default file is an empty config; a missing file named by
    /// `--config` or `$ARMADACTL_CONFIG` is an error (the user asked for it).
    pub fn load(path: PathBuf, origin: Origin) -> Result<ConfigFile, CliError> {
        if origin == Origin::NoHome {
            return Ok(ConfigFile {
                path,
                origin,
                exists: false,
                root: Value::Mapping(Mapping::new()),
            });
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && origin == Origin::Home => {
                return Ok(ConfigFile {
                    path,
                    origin,
                    exists: false,
                    root: Value::Mapping(Mapping::new()),
                })
            }
            Err(e) => {
                let from = match origin {
                    Origin::Flag => " (from --config)",
                    Origin::Env => " (from $ARMADACTL_CONFIG)",
                    Origin::Home | Origin::NoHome => "",
                };
                return Err(CliError::usage(format!(
                    "cannot read config file `{}`{from}: {}",
                    path.display(),
                    crate::input::io_reason(&e)
                )));
            }
        };
        let root: Value = if text.trim().is_empty() {
            Value::Mapping(Mapping::new())
        } else {
            serde_yaml::from_str(&text).map_err(|e| {
                let at = e
                    .location()
                    .map(|l| format!(":{}:{}", l.line(), l.column()))
                    .unwrap_or_default();
                CliError::invalid(format!("invalid config file `{}{at}`: {e}", path.display()))
            })?
        };
        if !matches!(root, Value::Mapping(_)) {
            return Err(CliError::invalid(format!(
                "invalid config file `{}`: expected a mapping at the top level",
                path.display()
            )));
        }
        Ok(ConfigFile {
            path,
            origin,
            exists: true,
            root,
        })
    }

    pub fn current_context(&self) -> Option<String> {
        get(&self.root, "currentContext").and_then(scalar)
    }

    /// Context names in file order.
    pub fn context_names(&self) -> Vec<String> {
        match get(&self.root, "contexts") {
            Some(Value::Mapping(m)) => m.keys().filter_map(scalar).collect(),
            _ => Vec::new(),
        }
    }

    pub fn has_contexts(&self) -> bool {
        !self.context_names().is_empty()
    }

    /// The settings of context `name`, or the flat top-level keys when `name` is `None`.
    pub fn context(&self, name: Option<&str>) -> Result<ContextConfig, CliError> {
        let node = match name {
            None => &self.root,
            Some(n) => {
                let contexts = get(&self.root, "contexts");
                match contexts.and_then(|c| get(c, n)) {
                    Some(node) => node,
                    None => return Err(self.unknown_context(n)),
                }
            }
        };
        let where_ = |key: &str| match name {
            Some(n) => format!("contexts.{n}.{key}"),
            None => key.to_string(),
        };
        let s = |key: &str| get(node, key).and_then(scalar).filter(|s| !s.is_empty());
        let basic_auth = match get(node, "basicAuth") {
            Some(b) => {
                let user = get(b, "username").and_then(scalar).unwrap_or_default();
                let pass = get(b, "password").and_then(scalar).unwrap_or_default();
                (!user.is_empty()).then_some((user, pass))
            }
            None => None,
        };
        let exec_auth = match get(node, "execAuth") {
            Some(e) => {
                let cmd = get(e, "cmd").and_then(scalar).unwrap_or_default();
                if cmd.is_empty() {
                    None
                } else {
                    let args = match get(e, "args") {
                        Some(Value::Sequence(s)) => s.iter().filter_map(scalar).collect(),
                        Some(_) => return Err(self.bad(&where_("execAuth.args"), "expected a list of strings")),
                        None => Vec::new(),
                    };
                    let env = match get(e, "env") {
                        // armadactl's form: a list of {name, value}.
                        Some(Value::Sequence(s)) => s
                            .iter()
                            .map(|item| {
                                let n = get(item, "name").and_then(scalar);
                                let v = get(item, "value").and_then(scalar).unwrap_or_default();
                                n.map(|n| (n, v))
                                    .ok_or_else(|| self.bad(&where_("execAuth.env"), "each entry needs a `name`"))
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                        Some(Value::Mapping(m)) => m
                            .iter()
                            .filter_map(|(k, v)| Some((scalar(k)?, scalar(v).unwrap_or_default())))
                            .collect(),
                        Some(_) => return Err(self.bad(&where_("execAuth.env"), "expected a list of {name, value}")),
                        None => Vec::new(),
                    };
                    Some(ExecAuth { cmd, args, env })
                }
            }
            None => None,
        };
        let insecure_skip_tls_verify = match get(node, "insecureSkipTlsVerify") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(self.bad(&where_("insecureSkipTlsVerify"), "expected `true` or `false`")),
        };
        let force_no_tls = match get(node, "forceNoTls") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(self.bad(&where_("forceNoTls"), "expected `true` or `false`")),
        };
        Ok(ContextConfig {
            force_no_tls,
            armada_rest_url: s("armadaRestUrl"),
            armada_url: s("armadaUrl"),
            basic_auth,
            bearer_token: s("bearerToken"),
            exec_auth,
            certificate_authority: s("certificateAuthority"),
            insecure_skip_tls_verify,
        })
    }

    fn bad(&self, path: &str, what: &str) -> CliError {
        CliError::invalid(format!("invalid config file `{}`: {path}: {what}", self.path.display()))
    }

    pub fn unknown_context(&self, name: &str) -> CliError {
        let names = self.context_names();
        let err = CliError::usage(format!(
            "context `{name}` not found under `contexts` in `{}`",
            self.path.display()
        ));
        if names.is_empty() {
            err.with_hint("the file defines no contexts; add one under `contexts:`")
        } else {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let list = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            match crate::diag::suggest(name, &refs) {
                Some(s) => err.with_hint(format!("did you mean `{s}`? defined contexts: {list}")),
                None => err.with_hint(format!("defined contexts: {list}")),
            }
        }
    }

    /// The file with every secret replaced by `********`, and every password or token in a
    /// URL by `***` (`https://user:***@host`).
    pub fn masked(&self) -> Value {
        let mut v = self.root.clone();
        mask(&mut v);
        v
    }

    /// Sets `currentContext` and writes the file back, keeping every other key (comments are
    /// not kept: serde_yaml does not carry them).
    pub fn use_context(&mut self, name: &str) -> Result<(), CliError> {
        if !self.context_names().iter().any(|n| n == name) {
            // The operation failed (exit 1, as kubectl's), unlike `--context nope`, which is
            // a bad flag value (exit 2).
            return Err(CliError {
                code: crate::error::ExitCode::Failure,
                ..self.unknown_context(name)
            });
        }
        let Value::Mapping(m) = &mut self.root else {
            unreachable!("load checks the top level is a mapping")
        };
        // Keep the key's existing spelling if the file has one in another case.
        let key = m
            .keys()
            .find(|k| scalar(k).is_some_and(|k| k.eq_ignore_ascii_case("currentContext")))
            .cloned()
            .unwrap_or_else(|| Value::String("currentContext".into()));
        m.insert(key, Value::String(name.to_string()));
        let text = serde_yaml::to_string(&self.root)
            .map_err(|e| CliError::failed(format!("cannot render the config file: {e}")))?;
        // Replaced whole, so a failure never leaves half a file. The file may hold passwords:
        // the new one keeps the old one's permissions (0600 stays 0600) rather than getting
        // the umask's default.
        let mode = match std::fs::metadata(&self.path) {
            Ok(m) => Mode::As(m.permissions()),
            Err(_) => Mode::New,
        };
        let write = write_whole(&self.path, text.as_bytes(), mode);
        write.map_err(|e| {
            CliError::failed(format!(
                "cannot write config file `{}`: {}",
                self.path.display(),
                crate::input::io_reason(&e)
            ))
        })
    }
}

fn mask(v: &mut Value) {
    match v {
        Value::Mapping(m) => {
            for (k, val) in m.iter_mut() {
                let secret = scalar(k).is_some_and(|k| SECRET_KEYS.iter().any(|s| s.eq_ignore_ascii_case(&k)));
                if secret && !val.is_null() {
                    *val = Value::String(MASK.into());
                } else if scalar(k).is_some_and(|k| k.eq_ignore_ascii_case("env")) {
                    // execAuth env values often carry tokens: keep the names, hide the values.
                    if let Value::Sequence(items) = val {
                        for item in items {
                            if let Value::Mapping(im) = item {
                                for (ik, iv) in im.iter_mut() {
                                    if scalar(ik).as_deref() == Some("value") {
                                        *iv = Value::String(MASK.into());
                                    }
                                }
                            }
                        }
                    } else if let Value::Mapping(em) = val {
                        for (_, ev) in em.iter_mut() {
                            *ev = Value::String(MASK.into());
                        }
                    }
                } else {
                    mask(val);
                }
            }
        }
        Value::Sequence(s) => s.iter_mut().for_each(mask),
        // A URL under any key (`armadaRestUrl`, `providerUrl`, ...) may carry a password.
        Value::String(s) => *s = crate::redact::redact_url(s),
        _ => {}
    }
}

/// A key of a mapping, matched case-insensitively as viper does.
fn get<'v>(node: &'v Value, key: &str) -> Option<&'v Value> {
    let Value::Mapping(m) = node else { return None };
    m.iter()
        .find(|(k, _)| scalar(k).is_some_and(|k| k.eq_ignore_ascii_case(key)))
        .map(|(_, v)| v)
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--config`, then `$ARMADACTL_CONFIG` (unless empty), then `$HOME`'s; with none of
    /// them, no file, and nothing read.
    #[test]
    fn locate_takes_the_flag_the_variable_then_home() {
        let home = Some(Path::new("/home/u"));
        assert_eq!(
            locate(Some(Path::new("f.yaml")), Some("e.yaml"), home),
            ("f.yaml".into(), Origin::Flag)
        );
        assert_eq!(locate(None, Some("e.yaml"), home), ("e.yaml".into(), Origin::Env));
        assert_eq!(
            locate(None, Some(""), home),
            ("/home/u/.armadactl.yaml".into(), Origin::Home)
        );
        let (path, origin) = locate(None, None, None);
        assert_eq!((path.clone(), origin), ("~/.armadactl.yaml".into(), Origin::NoHome));
        let none = ConfigFile::load(path, origin).unwrap();
        assert!(!none.exists && none.context_names().is_empty());
    }

    fn file(text: &str) -> ConfigFile {
        ConfigFile {
            path: "cfg.yaml".into(),
            origin: Origin::Flag,
            exists: true,
            root: serde_yaml::from_str(text).unwrap(),
        }
    }

    #[test]
    fn reads_armadactl_contexts_case_insensitively() {
        let f = file(
            "currentContext: main\ncontexts:\n  main:\n    armadaRestUrl: http://a:8080\n    BasicAuth: {username: u, password: p}\n  exec:\n    armadaUrl: host:50051\n    execAuth: {cmd: auth, args: [armada], env: [{name: K, value: V}]}\n",
        );
        assert_eq!(f.current_context().as_deref(), Some("main"));
        assert_eq!(f.context_names(), vec!["main", "exec"]);
        let main = f.context(Some("main")).unwrap();
        assert_eq!(main.armada_rest_url.as_deref(), Some("http://a:8080"));
        assert_eq!(main.basic_auth, Some(("u".into(), "p".into())));
        let exec = f.context(Some("exec")).unwrap().exec_auth.unwrap();
        assert_eq!(
            (exec.cmd.as_str(), exec.args.len(), exec.env[0].0.as_str()),
            ("auth", 1, "K")
        );
        let err = f.context(Some("mian")).unwrap_err();
        assert_eq!(err.message, "context `mian` not found under `contexts` in `cfg.yaml`");
        assert_eq!(
            err.hint.as_deref(),
            Some("did you mean `main`? defined contexts: `main`, `exec`")
        );
    }

    #[test]
    fn masks_every_secret() {
        let f = file("contexts:\n  a:\n    basicAuth: {username: u, password: hunter2}\n    bearerToken: tok\n    execAuth: {cmd: x, env: [{name: T, value: secret}]}\n");
        let text = serde_yaml::to_string(&f.masked()).unwrap();
        for secret in ["hunter2", "tok\n", "secret"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("username: u"), "{text}");
    }
}
