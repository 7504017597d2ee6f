//! A sharded command line's plan ([`plan`]): the emit flags checked against the command line
//! they go with (exit 2, before anything is printed), where the inputs, partials and result
//! lie in the containers, and each container's `args` and pod spec.
//!
//! Owns: [`Plan`] and [`plan`]. Must not: do I/O or write the documents (`shards` does).

use crate::cli::{EmitArgs, EmitKind, MAX_SHARDS};
use crate::error::CliError;

use super::invocation::Invocation;
use super::pod::{escape, DSN_VAR, NON_ROOT};
use super::values::{check_name, container_path, parse_requests, parse_secret, required_image, required_volume};

/// What the documents run, checked: made by [`plan`].
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: EmitKind,
    pub command: String,
    pub shards: u64,
    pub image: String,
    pub claim: String,
    /// The mount path, normalised (no trailing `/`).
    pub mount: String,
    pub armada_queue: Option<String>,
    pub job_set: String,
    pub namespace: Option<String>,
    /// `--requests`, in order: requested and limited alike.
    pub resources: Vec<(String, String)>,
    /// The Secret and key the DSN is read from.
    pub dsn_secret: Option<(String, String)>,
    /// The shards' words after the subcommand, `$` escaped (`$(LOOKOUT_DB)` in place of a DSN).
    shard_words: Vec<String>,
    /// The merge's `-o` (the user's), when given.
    merge_format: Option<String>,
    /// Where the merge writes its result, as the containers see it.
    pub result: String,
    /// `--contention` left to its default in a command whose merge adds up the shards' sums
    /// (`simulate`, `tune`): the shards leave the section out, and the documents say so.
    pub contention_sharded: bool,
}

/// Checks `emit` against `invocation` and says what the documents run; every refusal is a
/// usage error (exit 2), found before anything is printed.
pub fn plan(emit: &EmitArgs, invocation: &Invocation) -> Result<Plan, CliError> {
    let kind = emit.emit.ok_or_else(|| CliError::usage("`--emit KIND` is missing"))?;
    let shards = shard_count(emit.shard_count)?;
    let image = required_image(emit.image.as_deref(), "the jobs run")?;
    let (claim, mount) = required_volume(
        emit.volume.as_deref(),
        "holds the inputs and where the jobs mount it (`retryctl-sweep:/data`)",
    )?;
    check_armada_queue(kind, emit.armada_queue.as_deref())?;
    let job_set = job_set(emit.job_set.as_deref(), invocation, kind, shards)?;
    if let Some(ns) = &emit.namespace {
        check_name(ns, 63)
            .map_err(|why| CliError::usage(format!("invalid `--namespace` `{ns}`: {why}, at most 63 characters")))?;
    }
    let resources = parse_requests(emit.requests.as_deref().unwrap_or("cpu=1,memory=1Gi"))?;
    let given = |name: &str| invocation.flags.iter().find(|f| f.name == name);
    let lookout = given("lookout-db").is_some();
    let dsn_secret = dsn_secret(emit.dsn_secret.as_deref(), lookout)?;
    refuse_flags(invocation, lookout)?;
    let merge_format = given("output").and_then(|f| f.values.first().cloned());
    let Words {
        shard_words,
        result,
        inputs,
    } = shard_words(invocation, &mount)?;
    let result = result.unwrap_or_else(|| default_result(merge_format.as_deref(), &mount));
    check_result(&result, &mount, shards, &inputs)?;
    let contention_sharded = contention_sharded(invocation);
    Ok(Plan {
        kind,
        command: invocation.command.clone(),
        shards,
        image,
        claim,
        mount,
        armada_queue: emit.armada_queue.clone(),
        job_set,
        namespace: emit.namespace.clone(),
        resources,
        dsn_secret,
        shard_words,
        merge_format,
        result,
        contention_sharded,
    })
}

/// `--shard-count`: given, from 1 to [`MAX_SHARDS`].
fn shard_count(count: Option<u64>) -> Result<u64, CliError> {
    match count {
        None => Err(CliError::usage(
            "`--emit` needs `--shard-count N`: how many shards to split the command into",
        )),
        Some(n) if n == 0 || n > MAX_SHARDS => Err(CliError::usage(format!(
            "invalid `--shard-count` `{n}`: expected a number of shards from 1 to {MAX_SHARDS}"
        ))),
        Some(n) => Ok(n),
    }
}

/// `--armada-queue`: given with `--emit armada`, and only with it.
fn check_armada_queue(kind: EmitKind, queue: Option<&str>) -> Result<(), CliError> {
    match (kind, queue) {
        (EmitKind::Armada, None) => Err(CliError::usage(
            "`--emit armada` needs `--armada-queue QUEUE`: the Armada queue the jobs are submitted to",
        )),
        (EmitKind::Kubernetes, Some(_)) => Err(CliError::usage(
            "`--armada-queue` is for `--emit armada`: a Kubernetes Job has no queue",
        )),
        _ => Ok(()),
    }
}

/// The job set (`--emit-job-set`, else `retryctl-COMMAND`), a name Kubernetes can give
/// every shard's pod.
fn job_set(name: Option<&str>, invocation: &Invocation, kind: EmitKind, shards: u64) -> Result<String, CliError> {
    let job_set = match name {
        Some(name) => {
            check_name(name, 57).map_err(|why| {
                CliError::usage(format!(
                    "invalid `--emit-job-set` `{name}`: {why}, at most 57 characters (the merge's is NAME-merge)"
                ))
            })?;
            name.to_string()
        }
        None => format!("retryctl-{}", invocation.command),
    };
    // The Job controller names each pod's host NAME-INDEX, which must be a DNS label: a name
    // it cannot give the last shard's pod is refused by the API server, so here first. (The
    // default name is short enough for any count.)
    let last_index = (shards - 1).to_string();
    if kind == EmitKind::Kubernetes && job_set.len() + 1 + last_index.len() > 63 {
        return Err(CliError::usage(format!(
            "invalid `--emit-job-set` `{job_set}` with `--shard-count {shards}`: Kubernetes names the last shard's pod `{job_set}-{last_index}`, longer than the 63 characters it allows; give a name of at most {} characters",
            63 - 1 - last_index.len()
        )));
    }
    Ok(job_set)
}

/// `--dsn-secret`: given with `--lookout-db`, and only with it.
fn dsn_secret(secret: Option<&str>, lookout: bool) -> Result<Option<(String, String)>, CliError> {
    match (secret, lookout) {
        (Some(s), true) => Ok(Some(parse_secret(s)?)),
        (Some(_), false) => Err(CliError::usage(
            "`--dsn-secret` is for `--lookout-db`: without it the jobs read no database",
        )),
        (None, true) => Err(CliError::usage(
            "`--emit` with `--lookout-db` needs `--dsn-secret NAME[:KEY]`: the DSN is never written into the documents, the jobs read it from that Secret",
        )),
        (None, false) => Ok(None),
    }
}

/// The shards' command line as the containers run it.
struct Words {
    /// The words after the subcommand, `$` escaped.
    shard_words: Vec<String>,
    /// `--output-file`, as the containers see it.
    result: Option<String>,
    /// (flag, path in the containers) of every input path.
    inputs: Vec<(String, String)>,
}

/// The shards' words: every flag but those the shards and the merge set themselves, each
/// path as the containers see it under `mount`, the DSN as the Secret's variable.
fn shard_words(invocation: &Invocation, mount: &str) -> Result<Words, CliError> {
    let mut shard_words = Vec::new();
    let mut result = None;
    let mut inputs: Vec<(String, String)> = Vec::new();
    for flag in &invocation.flags {
        match flag.name.as_str() {
            // Set by the shards and the merge themselves.
            "output" => continue,
            "output-file" => {
                let value = flag.values.first().map(String::as_str).unwrap_or_default();
                result = Some(container_path(mount, "output-file", value)?);
                continue;
            }
            "lookout-db" => {
                // Kubernetes expands it from the Secret's variable: no shell, and the DSN
                // given here goes nowhere.
                shard_words.push("--lookout-db".to_string());
                shard_words.push(format!("$({DSN_VAR})"));
                continue;
            }
            _ => {}
        }
        let values = if flag.path {
            let values = flag
                .values
                .iter()
                .map(|v| match (flag.name.as_str(), v.as_str()) {
                    // A word, not a path (`--baseline-categorizer recorded`).
                    ("baseline-categorizer", "recorded") => Ok(v.clone()),
                    _ => container_path(mount, &flag.name, v),
                })
                .collect::<Result<Vec<_>, _>>()?;
            inputs.extend(values.iter().map(|v| (flag.name.clone(), v.clone())));
            values
        } else {
            flag.values.clone()
        };
        shard_words.extend(flag.words(&values).iter().map(|w| escape(w)));
    }
    Ok(Words {
        shard_words,
        result,
        inputs,
    })
}

/// Where the merge writes its result without `--output-file`: `result.EXT` on the volume,
/// EXT the merge's `-o`.
fn default_result(merge_format: Option<&str>, mount: &str) -> String {
    let ext = match merge_format {
        None | Some("table") => "txt",
        Some("markdown") => "md",
        // `suggest -o policy`: the proposed documents.
        Some("policy") => "yaml",
        Some(other) => other,
    };
    format!("{mount}/result.{ext}")
}

/// Whether the shards leave the contention section out. `suggest` compares in its merge,
/// over the whole history: its section is there. The others' shards leave it out unless
/// `--contention off` already did (`on` is refused before: its command's check runs first);
/// the last occurrence is the one clap keeps.
fn contention_sharded(invocation: &Invocation) -> bool {
    let off = invocation
        .flags
        .iter()
        .rev()
        .find(|f| f.name == "contention")
        .is_some_and(|f| f.values == ["off"]);
    invocation.command != "suggest" && !off
}

/// The flags a sharded run cannot carry.
fn refuse_flags(invocation: &Invocation, lookout: bool) -> Result<(), CliError> {
    let given = |name: &str| invocation.flags.iter().find(|f| f.name == name);
    if let Some(f) = given("shard") {
        return Err(CliError::usage(format!(
            "`--emit` with `--shard {}`: the documents run every shard themselves; drop `--shard`",
            f.values.first().map(String::as_str).unwrap_or_default()
        )));
    }
    if given("output").is_some_and(|f| f.values.iter().any(|v| v == "partial")) {
        return Err(CliError::usage(
            "`--emit` with `-o partial`: the shards write their partials themselves; `-o` is the merged result's format (`-o html`), or none for the table",
        ));
    }
    if given("from-server").is_some() {
        return Err(CliError::usage(
            "`--emit` with `--from-server`: each shard would read the server's policies at its own time; put them on the volume (`retryctl get retrypolicies -o yaml`) and give `-f`",
        ));
    }
    if given("pick").is_some() {
        return Err(CliError::usage(
            "`--emit` with `--pick`: a picked candidate's documents need no shards; run the sweep with `--emit`, then `--pick ID` the candidate its merge recommends",
        ));
    }
    if given("since").is_some() {
        return Err(CliError::usage(
            "`--emit` with `--since`: it counts back from when each shard starts, so the shards would read different jobs; give `--from` and `--to` instead",
        ));
    }
    if lookout && given("to").is_none() {
        return Err(CliError::usage(
            "`--emit` with `--lookout-db` needs `--to TIME`: shards started at different times must read the same jobs; give a `--to` further back than the longest job",
        ));
    }
    Ok(())
}

/// The merge's result must not overwrite what the jobs read: the mount itself, a shard's
/// partial (a merge run again would read the result as one), or an input.
fn check_result(result: &str, mount: &str, shards: u64, inputs: &[(String, String)]) -> Result<(), CliError> {
    let refuse = |what: String| {
        Err(CliError::usage(format!(
            "`--output-file {result}` is {what}: give the merge's result a path of its own under `{mount}`"
        )))
    };
    if result == mount {
        return refuse("the volume's mount".into());
    }
    let partial = result
        .strip_prefix(mount)
        .and_then(|r| r.strip_prefix("/partial-"))
        .and_then(|r| r.strip_suffix(".json"))
        .and_then(|i| i.parse::<u64>().ok().filter(|n| *n < shards && n.to_string() == i));
    if let Some(i) = partial {
        return refuse(format!("where shard {i} writes its partial"));
    }
    if let Some((flag, _)) = inputs.iter().find(|(_, path)| path == result) {
        return refuse(format!("the `--{flag}` the jobs read"));
    }
    Ok(())
}

impl Plan {
    /// The lines both kinds of documents say about the volume, the partials and a missing
    /// shard; and, when the shards leave it out, the contention section.
    pub fn volume_note(&self) -> Vec<String> {
        let mut lines = vec![
            format!(
                "The claim `{}` (ReadWriteMany) is mounted at {}: the inputs lie there;",
                self.claim, self.mount
            ),
            format!(
                "shard I writes {}/partial-I.json, the merge {}. A shard that has not",
                self.mount, self.result
            ),
            "finished is a missing shard: the merge fails (exit 3) and names it.".into(),
        ];
        if self.contention_sharded {
            lines.extend([
                "contention: not computed for a sharded run (it needs every job in one process: run it".into(),
                "without --shard or --emit); the merged result says so.".into(),
            ]);
        }
        lines
    }

    /// The shard `index`'s container args (`index` a number, or `$(JOB_COMPLETION_INDEX)`
    /// for Kubernetes to expand).
    pub fn shard_args(&self, index: &str) -> Vec<String> {
        let mut args = vec![self.command.clone()];
        args.extend(self.shard_words.iter().cloned());
        args.extend([
            "--shard".to_string(),
            format!("{index}/{}", self.shards),
            "-o".to_string(),
            "partial".to_string(),
            "--output-file".to_string(),
            format!("{}/partial-{index}.json", escape(&self.mount)),
        ]);
        args
    }

    /// The merge's container args: every shard's partial, by name.
    pub fn merge_args(&self) -> Vec<String> {
        let mut args = vec!["merge".to_string()];
        args.extend((0..self.shards).map(|i| format!("{}/partial-{i}.json", escape(&self.mount))));
        if let Some(format) = &self.merge_format {
            args.extend(["-o".to_string(), escape(format)]);
        }
        args.extend(["--output-file".to_string(), escape(&self.result)]);
        args
    }

    /// The pod spec of a container named `name` running `args`; `dsn`: it gets the DSN.
    pub fn pod_spec(&self, name: &str, args: Vec<String>, dsn: bool) -> serde_json::Value {
        let resources: serde_json::Map<String, serde_json::Value> = self
            .resources
            .iter()
            .map(|(n, q)| (n.clone(), serde_json::Value::String(q.clone())))
            .collect();
        let mut container = serde_json::json!({
            "name": name,
            "image": self.image,
            "args": args,
        });
        if let (true, Some((secret, key))) = (dsn, &self.dsn_secret) {
            container["env"] = serde_json::json!([{
                "name": DSN_VAR,
                "valueFrom": {"secretKeyRef": {"name": secret, "key": key}},
            }]);
        }
        container["resources"] = serde_json::json!({"requests": resources, "limits": resources});
        container["volumeMounts"] = serde_json::json!([{"name": "data", "mountPath": self.mount}]);
        serde_json::json!({
            "restartPolicy": "Never",
            "securityContext": {"fsGroup": NON_ROOT},
            "containers": [container],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": self.claim}}],
        })
    }
}
