//! `watch --emit kubernetes` (docs/watch.md "On Kubernetes"): a `watch` command line → the
//! Deployment that runs it, one YAML document for `kubectl apply -f`.
//!
//! Owns: the checks of the emit flags against that command line (exit 2, before anything is
//! printed), and the Deployment: one replica replaced, never rolled (`Recreate`: one process
//! writes `--state`), the DSN from a Secret as `$LOOKOUT_DB` (never written out), the
//! volume that holds the policies and `--state`, the metrics port named `metrics` (what
//! deploy/watch/'s Service and ServiceMonitor select), a readiness probe on `/healthz` and a
//! liveness probe on `/metrics` (a database that is down makes the pod unready, not
//! restarted: a restart would not bring the database back). Must not: do I/O (the caller
//! hands a writer), or read the process's arguments (the caller hands the parsed
//! [`Invocation`]).

use std::io;

use crate::cli::WatchEmitArgs;
use crate::error::CliError;

use super::invocation::Invocation;
use super::pod::{escape, DSN_VAR, NON_ROOT};
use super::text::{comment, yaml};
use super::values::{check_name, container_path, parse_requests, parse_secret, required_image, required_volume};

/// The Deployment's name, and the `app.kubernetes.io/name` its pod, Service and
/// ServiceMonitor carry (deploy/watch/).
pub const NAME: &str = "retryctl-watch";

/// `--listen`'s default, which no Service can reach in a pod.
const DEFAULT_LISTEN: &str = "127.0.0.1:9464";

/// The Deployment of `invocation` (a `watch` command line), checked against `emit`.
pub fn deployment(emit: &WatchEmitArgs, invocation: &Invocation) -> Result<Deployment, CliError> {
    let image = required_image(emit.image.as_deref(), "the pod runs")?;
    let (claim, mount) = required_volume(
        emit.volume.as_deref(),
        "holds the policies and `--state`, and where the pod mounts it (`retryctl-watch:/data`)",
    )?;
    let Some(secret) = emit.dsn_secret.as_deref() else {
        return Err(CliError::usage(
            "`--emit` needs `--dsn-secret NAME[:KEY]`: the DSN is never written into the documents, the pod reads it from that Secret",
        ));
    };
    let (secret, key) = parse_secret(secret)?;
    if let Some(ns) = &emit.namespace {
        check_name(ns, 63)
            .map_err(|why| CliError::usage(format!("invalid `--namespace` `{ns}`: {why}, at most 63 characters")))?;
    }
    let resources = parse_requests(emit.requests.as_deref().unwrap_or("cpu=1,memory=256Mi"))?;
    let listen = invocation
        .flags
        .iter()
        .find(|f| f.name == "listen")
        .and_then(|f| f.values.first().cloned())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
    let port = reachable_port(&listen)?;
    // `--lookout-db` first, from the Secret's variable (Kubernetes expands `$(VAR)`): the DSN
    // given on the command line, if any, goes nowhere.
    let mut args = vec!["watch".to_string(), "--lookout-db".to_string(), format!("$({DSN_VAR})")];
    for flag in &invocation.flags {
        if flag.name == "lookout-db" {
            continue;
        }
        let values = if flag.path {
            flag.values
                .iter()
                .map(|v| match (flag.name.as_str(), v.as_str()) {
                    // A word, not a path.
                    ("baseline-categorizer", "recorded") => Ok(v.clone()),
                    _ => container_path(&mount, &flag.name, v),
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            flag.values.clone()
        };
        args.extend(flag.words(&values).iter().map(|w| escape(w)));
    }
    Ok(Deployment {
        image,
        claim,
        mount,
        secret,
        key,
        namespace: emit.namespace.clone(),
        resources,
        port,
        args,
    })
}

/// The port of `--listen`, refused when a pod's Service and probes could not reach it (a
/// loopback host).
fn reachable_port(listen: &str) -> Result<u16, CliError> {
    let (host, port) = listen.rsplit_once(':').unwrap_or((listen, ""));
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    let port: u16 = port.parse().unwrap_or(0);
    if loopback || port == 0 {
        return Err(CliError::usage(format!(
            "`--emit kubernetes` with `--listen {listen}`: the pod's Service and probes reach it on its own address and a fixed port; give `--listen 0.0.0.0:9464`"
        )));
    }
    Ok(port)
}

/// What the Deployment runs, checked: made by [`deployment`].
#[derive(Debug, Clone)]
pub struct Deployment {
    pub image: String,
    pub claim: String,
    pub mount: String,
    pub secret: String,
    pub key: String,
    pub namespace: Option<String>,
    pub resources: Vec<(String, String)>,
    pub port: u16,
    /// The container's args, `$` escaped (`$(LOOKOUT_DB)` in place of a DSN).
    pub args: Vec<String>,
}

impl Deployment {
    /// Prints the Deployment, headed by how to apply it.
    pub fn write(&self, out: &mut dyn io::Write) -> io::Result<()> {
        let ns = self
            .namespace
            .as_deref()
            .map(|n| format!(" -n {n}"))
            .unwrap_or_default();
        out.write_all(
            comment(&[
                "retryctl watch as a Kubernetes Deployment (`--emit kubernetes`): one replica, replaced".into(),
                "rather than rolled, since one process writes --state. Saved as watch.yaml:".into(),
                format!("  kubectl{ns} apply -f watch.yaml"),
                format!(
                    "The claim `{}` is mounted at {}: the policies lie there, and --state is kept there",
                    self.claim, self.mount
                ),
                format!(
                    "across restarts. The DSN is the Secret `{}`'s key `{}`. deploy/watch/ holds the Service,",
                    self.secret, self.key
                ),
                "ServiceMonitor, alerts and dashboard that go with it.".into(),
            ])
            .as_bytes(),
        )?;
        let labels = serde_json::json!({"app.kubernetes.io/name": NAME});
        let mut metadata = serde_json::json!({"name": NAME, "labels": labels});
        if let Some(ns) = &self.namespace {
            metadata["namespace"] = serde_json::Value::String(ns.clone());
        }
        let resources: serde_json::Map<String, serde_json::Value> = self
            .resources
            .iter()
            .map(|(n, q)| (n.clone(), serde_json::Value::String(q.clone())))
            .collect();
        let probe = |path: &str| {
            serde_json::json!({
                "httpGet": {"path": path, "port": "metrics"},
                "periodSeconds": 10,
                "failureThreshold": 3,
            })
        };
        let deployment = serde_json::json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": metadata,
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "securityContext": {"fsGroup": NON_ROOT},
                        // SIGTERM saves --state and exits within 5 s.
                        "terminationGracePeriodSeconds": 10,
                        "containers": [{
                            "name": "watch",
                            "image": self.image,
                            "args": self.args,
                            "env": [{
                                "name": DSN_VAR,
                                "valueFrom": {"secretKeyRef": {"name": self.secret, "key": self.key}},
                            }],
                            "ports": [{"name": "metrics", "containerPort": self.port}],
                            "readinessProbe": probe("/healthz"),
                            "livenessProbe": probe("/metrics"),
                            "resources": {"requests": resources, "limits": resources},
                            "volumeMounts": [{"name": "data", "mountPath": self.mount}],
                        }],
                        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": self.claim}}],
                    },
                },
            },
        });
        out.write_all(yaml(&deployment).as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(flags: &[(&str, &[&str], bool)]) -> Invocation {
        super::super::invocation::test_invocation("watch", flags)
    }

    fn emit() -> WatchEmitArgs {
        WatchEmitArgs {
            emit: Some(crate::cli::WatchEmitKind::Kubernetes),
            image: Some("img".into()),
            volume: Some("watch:/data".into()),
            dsn_secret: Some("lookout".into()),
            ..WatchEmitArgs::default()
        }
    }

    #[test]
    fn the_pod_runs_the_flags_under_the_mount_with_the_dsn_from_the_secret() {
        let inv = invocation(&[
            ("lookout-db", &["postgresql://u:secret@db/lookout"], false),
            ("baseline", &["current"], true),
            ("filename", &["/data/new.yaml"], true),
            ("baseline-categorizer", &["recorded"], true),
            ("state", &["watch.json"], true),
            ("listen", &["0.0.0.0:9100"], false),
            ("queue", &["a$b"], false),
        ]);
        let d = deployment(&emit(), &inv).unwrap();
        assert_eq!(
            d.args,
            [
                "watch",
                "--lookout-db",
                "$(LOOKOUT_DB)",
                "--baseline",
                "/data/current",
                "--filename",
                "/data/new.yaml",
                "--baseline-categorizer",
                "recorded",
                "--state",
                "/data/watch.json",
                "--listen",
                "0.0.0.0:9100",
                "--queue",
                "a$$b",
            ]
        );
        assert_eq!((d.port, d.secret.as_str(), d.key.as_str()), (9100, "lookout", "dsn"));
        let mut out = Vec::new();
        d.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("secret@db"), "{text}");
    }

    #[test]
    fn what_a_pod_cannot_run_is_refused() {
        let listen = |l: &str| invocation(&[("state", &["s.json"], true), ("listen", &[l], false)]);
        for l in ["127.0.0.1:9464", "localhost:9464", "[::1]:9464", "0.0.0.0:0"] {
            let e = deployment(&emit(), &listen(l)).unwrap_err();
            assert!(e.message.contains("give `--listen 0.0.0.0:9464`"), "{l}: {}", e.message);
        }
        // Not given: the default, 127.0.0.1.
        assert!(deployment(&emit(), &invocation(&[])).is_err());
        let outside = invocation(&[("state", &["/tmp/s.json"], true), ("listen", &["0.0.0.0:9464"], false)]);
        let e = deployment(&emit(), &outside).unwrap_err();
        assert!(
            e.message
                .starts_with("`--state /tmp/s.json` is not under the volume's mount"),
            "{}",
            e.message
        );
        let no_secret = WatchEmitArgs {
            dsn_secret: None,
            ..emit()
        };
        let e = deployment(&no_secret, &listen("0.0.0.0:9464")).unwrap_err();
        assert!(
            e.message.starts_with("`--emit` needs `--dsn-secret NAME[:KEY]`"),
            "{}",
            e.message
        );
        let no_image = WatchEmitArgs { image: None, ..emit() };
        assert_eq!(
            deployment(&no_image, &listen("0.0.0.0:9464")).unwrap_err().message,
            "`--emit` needs `--image IMAGE`: the container image the pod runs, its entrypoint retryctl"
        );
        let no_volume = WatchEmitArgs { volume: None, ..emit() };
        assert_eq!(
            deployment(&no_volume, &listen("0.0.0.0:9464")).unwrap_err().message,
            "`--emit` needs `--volume CLAIM:MOUNT`: the PersistentVolumeClaim that holds the policies and `--state`, and where the pod mounts it (`retryctl-watch:/data`)"
        );
    }
}
