//! `--emit armada|kubernetes` (docs/past-one-machine.md, "Emitting the jobs"): a command line
//! → the documents that run it as N shards and a merge, an `armadactl submit` file or a
//! Kubernetes Indexed Job plus the merge's Job.
//!
//! Owns: the checks of the emit flags against the command line they go with (exit 2, before
//! anything is printed: [`plan`]), where the inputs, partials and result lie in the
//! containers (under the volume's mount), how a command line becomes a container's `args`
//! (no shell: Kubernetes' own `$(VAR)` expansion for the shard's index and the DSN, every
//! other `$` escaped), and [`Plan::write`], which prints the documents. Must not: do I/O
//! (the caller hands a writer), read the process's arguments (the caller hands the parsed
//! [`Invocation`]), or run anything.
//!
//! `watch` runs as a Deployment instead ([`watch`]): one long-running pod, no shards.
//!
//! The command line is carried flag by flag as the user gave it (every flag the parse
//! accepted, in the user's order), less the emit flags and what the shards and the merge
//! set themselves (`--shard`, `-o`, `--output-file`); paths are rewritten to where the
//! containers see them: an absolute path must lie under the mount, a relative one is taken
//! as relative to the mount.

pub mod armada;
pub mod kubernetes;
pub mod watch;

use std::io;
use std::path::{Component, Path, PathBuf};

use crate::cli::{EmitArgs, EmitKind, MAX_SHARDS};
use crate::error::CliError;

/// The most pods an Indexed Job may run at once (Kubernetes refuses a larger `parallelism`):
/// past it, the shards run in waves.
pub const MAX_PARALLELISM: u64 = 100_000;

/// The uid and gid of the image's non-root user (the repository's Dockerfile): the pods'
/// `fsGroup`, so that the volume is writable by it.
pub const NON_ROOT: u64 = 65532;

/// The environment variable the jobs read the DSN from (Kubernetes expands `$(LOOKOUT_DB)`
/// in the args from it).
pub const DSN_VAR: &str = "LOOKOUT_DB";

/// The environment variable Kubernetes sets to a pod's index in an Indexed Job.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// A command line as parsed: the subcommand and its flags in the order they were given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// `simulate`, `tune`, `suggest`.
    pub command: String,
    pub flags: Vec<Flag>,
}

/// One occurrence of a flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// Its long name without the dashes (`history`); empty for a positional argument.
    pub name: String,
    /// Its values (none for a switch; a delimited list as one value, `a,b`).
    pub values: Vec<String>,
    /// Whether its values are paths.
    pub path: bool,
}

impl Flag {
    /// The command-line words of this flag, `values` in place of its own.
    fn words(&self, values: &[String]) -> Vec<String> {
        if self.name.is_empty() {
            return values.to_vec();
        }
        match values {
            // A value that starts with `-` would read as a flag of its own.
            [one] if one.starts_with('-') => vec![format!("--{}={one}", self.name)],
            _ => std::iter::once(format!("--{}", self.name))
                .chain(values.iter().cloned())
                .collect(),
        }
    }
}

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
}

/// What [`Plan::write`] prints, as a string.
pub fn emit(emit: &EmitArgs, invocation: &Invocation) -> Result<String, CliError> {
    let plan = plan(emit, invocation)?;
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    plan.write(&mut out).expect("writing to memory");
    Ok(String::from_utf8(out).expect("the documents are UTF-8"))
}

/// Checks `emit` against `invocation` and says what the documents run; every refusal is a
/// usage error (exit 2), found before anything is printed.
pub fn plan(emit: &EmitArgs, invocation: &Invocation) -> Result<Plan, CliError> {
    let kind = emit.emit.ok_or_else(|| CliError::usage("`--emit KIND` is missing"))?;
    let shards = match emit.shard_count {
        None => {
            return Err(CliError::usage(
                "`--emit` needs `--shard-count N`: how many shards to split the command into",
            ))
        }
        Some(n) if n == 0 || n > MAX_SHARDS => {
            return Err(CliError::usage(format!(
                "invalid `--shard-count` `{n}`: expected a number of shards from 1 to {MAX_SHARDS}"
            )))
        }
        Some(n) => n,
    };
    let image = required_image(emit.image.as_deref(), "the jobs run")?;
    let (claim, mount) = required_volume(
        emit.volume.as_deref(),
        "holds the inputs and where the jobs mount it (`retryctl-sweep:/data`)",
    )?;
    match (kind, &emit.armada_queue) {
        (EmitKind::Armada, None) => {
            return Err(CliError::usage(
                "`--emit armada` needs `--armada-queue QUEUE`: the Armada queue the jobs are submitted to",
            ))
        }
        (EmitKind::Kubernetes, Some(_)) => {
            return Err(CliError::usage(
                "`--armada-queue` is for `--emit armada`: a Kubernetes Job has no queue",
            ))
        }
        _ => {}
    }
    let job_set = match &emit.job_set {
        Some(name) => {
            check_name(name, 57).map_err(|why| {
                CliError::usage(format!(
                    "invalid `--emit-job-set` `{name}`: {why}, at most 57 characters (the merge's is NAME-merge)"
                ))
            })?;
            name.clone()
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
    if let Some(ns) = &emit.namespace {
        check_name(ns, 63)
            .map_err(|why| CliError::usage(format!("invalid `--namespace` `{ns}`: {why}, at most 63 characters")))?;
    }
    let resources = parse_requests(emit.requests.as_deref().unwrap_or("cpu=1,memory=1Gi"))?;
    let given = |name: &str| invocation.flags.iter().find(|f| f.name == name);
    let lookout = given("lookout-db").is_some();
    let dsn_secret = match (&emit.dsn_secret, lookout) {
        (Some(s), true) => Some(parse_secret(s)?),
        (Some(_), false) => {
            return Err(CliError::usage(
                "`--dsn-secret` is for `--lookout-db`: without it the jobs read no database",
            ))
        }
        (None, true) => {
            return Err(CliError::usage(
                "`--emit` with `--lookout-db` needs `--dsn-secret NAME[:KEY]`: the DSN is never written into the documents, the jobs read it from that Secret",
            ))
        }
        (None, false) => None,
    };
    refuse_flags(invocation, lookout)?;
    let merge_format = given("output").and_then(|f| f.values.first().cloned());
    let mut shard_words = Vec::new();
    let mut result = None;
    // (flag, path in the containers) of every input path.
    let mut inputs: Vec<(String, String)> = Vec::new();
    for flag in &invocation.flags {
        match flag.name.as_str() {
            // Set by the shards and the merge themselves.
            "output" => continue,
            "output-file" => {
                let value = flag.values.first().map(String::as_str).unwrap_or_default();
                result = Some(container_path(&mount, "output-file", value)?);
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
                    _ => container_path(&mount, &flag.name, v),
                })
                .collect::<Result<Vec<_>, _>>()?;
            inputs.extend(values.iter().map(|v| (flag.name.clone(), v.clone())));
            values
        } else {
            flag.values.clone()
        };
        shard_words.extend(flag.words(&values).iter().map(|w| escape(w)));
    }
    let result = result.unwrap_or_else(|| {
        let ext = match merge_format.as_deref() {
            None | Some("table") => "txt",
            Some("markdown") => "md",
            // `suggest -o policy`: the proposed documents.
            Some("policy") => "yaml",
            Some(other) => other,
        };
        format!("{mount}/result.{ext}")
    });
    check_result(&result, &mount, shards, &inputs)?;
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
    })
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

/// `--image IMAGE`, which every emitted document needs: the image `runs` (who runs it).
fn required_image(image: Option<&str>, runs: &str) -> Result<String, CliError> {
    match image {
        Some(i) if !i.trim().is_empty() => Ok(i.to_string()),
        _ => Err(CliError::usage(format!(
            "`--emit` needs `--image IMAGE`: the container image {runs}, its entrypoint retryctl"
        ))),
    }
}

/// `--volume CLAIM:MOUNT`, which every emitted document needs: the claim that `holds` (what,
/// where it is mounted, an example).
fn required_volume(volume: Option<&str>, holds: &str) -> Result<(String, String), CliError> {
    let Some(volume) = volume else {
        return Err(CliError::usage(format!(
            "`--emit` needs `--volume CLAIM:MOUNT`: the PersistentVolumeClaim that {holds}"
        )));
    };
    parse_volume(volume)
}

/// `CLAIM:MOUNT`.
fn parse_volume(text: &str) -> Result<(String, String), CliError> {
    let bad = |why: &str| {
        CliError::usage(format!(
            "invalid `--volume` `{text}`: {why} (expected `CLAIM:MOUNT`, a PersistentVolumeClaim and the absolute path the jobs mount it at, such as `retryctl-sweep:/data`)"
        ))
    };
    let (claim, mount) = text.split_once(':').ok_or_else(|| bad("no `:`"))?;
    check_subdomain(claim).map_err(|why| bad(&format!("the claim's name: {why}")))?;
    let path = Path::new(mount);
    if !path.is_absolute() {
        return Err(bad("the mount path is not absolute"));
    }
    let normal = normalise(path).ok_or_else(|| bad("the mount path goes up with `..`"))?;
    if normal.parent().is_none() {
        return Err(bad("the mount path is `/`"));
    }
    let normal = normal
        .to_str()
        .ok_or_else(|| bad("the mount path is not UTF-8"))?
        .to_string();
    Ok((claim.to_string(), normal))
}

/// Lowercase letters, digits and `-`, a letter or digit at each end, at most `max` bytes:
/// a Kubernetes name (DNS-1123 label).
fn check_name(name: &str, max: usize) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err("expected lowercase letters, digits and `-`, starting and ending with a letter or digit".into())
    }
}

/// Labels of [`check_name`] joined by `.`, at most 253 bytes: the name of a
/// PersistentVolumeClaim or a Secret (DNS-1123 subdomain).
fn check_subdomain(name: &str) -> Result<(), String> {
    let ok = !name.is_empty() && name.len() <= 253 && name.split('.').all(|label| check_name(label, 63).is_ok());
    if ok {
        Ok(())
    } else {
        Err("expected lowercase letters, digits, `-` and `.`, each part between dots starting and ending with a letter or digit, at most 253 characters".into())
    }
}

/// `NAME=QUANTITY,…`: Kubernetes resource names and quantities.
fn parse_requests(text: &str) -> Result<Vec<(String, String)>, CliError> {
    let bad = |why: String| {
        CliError::usage(format!(
            "invalid `--requests` `{text}`: {why} (expected NAME=QUANTITY pairs separated by commas, such as `cpu=2,memory=4Gi`)"
        ))
    };
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in text.split(',') {
        let (name, quantity) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("`{pair}` has no `=`")))?;
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
        if !name_ok {
            return Err(bad(format!("`{name}` is not a resource name")));
        }
        if !is_quantity(quantity) {
            return Err(bad(format!("`{quantity}` is not a quantity (`500m`, `2`, `4Gi`)")));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(bad(format!("`{name}` is given twice")));
        }
        out.push((name.to_string(), quantity.to_string()));
    }
    Ok(out)
}

/// A Kubernetes quantity: a decimal number and an optional suffix (binary `Ki`…`Ei`,
/// decimal `n`, `u`, `m`, `k`, `M`…`E`, or an exponent `e3`).
fn is_quantity(text: &str) -> bool {
    let digits = text.trim_start_matches(['+', '-']);
    let number_end = digits
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(digits.len());
    let (number, suffix) = digits.split_at(number_end);
    let number_ok = !number.is_empty() && number != "." && number.matches('.').count() <= 1;
    let suffix_ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        s => s
            .strip_prefix(['e', 'E'])
            .map(|e| e.trim_start_matches(['+', '-']))
            .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())),
    };
    number_ok && suffix_ok
}

/// `NAME[:KEY]`, the key `dsn` when not given.
fn parse_secret(text: &str) -> Result<(String, String), CliError> {
    let (name, key) = text.split_once(':').unwrap_or((text, "dsn"));
    check_subdomain(name).map_err(|why| {
        CliError::usage(format!(
            "invalid `--dsn-secret` `{text}`: the Secret's name: {why} (expected `NAME` or `NAME:KEY`)"
        ))
    })?;
    let key_ok = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !key_ok {
        return Err(CliError::usage(format!(
            "invalid `--dsn-secret` `{text}`: the key `{key}` is not a Secret's key (letters, digits, `-`, `_`, `.`)"
        )));
    }
    Ok((name.to_string(), key.to_string()))
}

/// `path` without `.` components; `None` when it has a `..`.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => return None,
            other => out.push(other),
        }
    }
    Some(out)
}

/// Where the containers see the path `value` of `--flag`: under `mount`, as given when
/// absolute, joined to it when relative.
fn container_path(mount: &str, flag: &str, value: &str) -> Result<String, CliError> {
    if value == "-" {
        return Err(CliError::usage(format!(
            "`--{flag} -`: a job has no stdin to read; put the file on the volume and give its path under `{mount}`"
        )));
    }
    let outside = |why: &str| {
        CliError::usage(format!(
            "`--{flag} {value}` {why}: give the path as the containers see it, under the volume's mount `{mount}`, or relative to it"
        ))
    };
    let path = Path::new(value);
    let normal = normalise(path).ok_or_else(|| outside("goes up with `..`"))?;
    let inside = if normal.is_absolute() {
        if !normal.starts_with(mount) {
            return Err(outside("is not under the volume's mount"));
        }
        normal
    } else {
        Path::new(mount).join(normal)
    };
    if inside == Path::new(mount) {
        return Ok(mount.to_string());
    }
    // From UTF-8 words: still UTF-8.
    Ok(inside.to_string_lossy().into_owned())
}

/// `text` as a container's argument that Kubernetes leaves as it is: it expands `$(VAR)`
/// and turns `$$` into `$`, so every `$` is doubled.
pub fn escape(text: &str) -> String {
    text.replace('$', "$$")
}

/// What Kubernetes makes of a container's argument (its `$(VAR)` expansion, as the kubelet
/// does it): `$(NAME)` is `var(NAME)`'s value, or left as written when it has none; `$$` is
/// `$`; any other `$` stays. The inverse of [`escape`] for text without variables.
pub fn expand(text: &str, var: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            out.push_str(&text[copied..i]);
            match bytes[i + 1] {
                b'$' => {
                    out.push('$');
                    i += 2;
                }
                b'(' => match text[i + 2..].find(')') {
                    Some(end) => {
                        let name = &text[i + 2..i + 2 + end];
                        match var(name) {
                            Some(v) => out.push_str(&v),
                            None => out.push_str(&text[i..i + 3 + end]),
                        }
                        i += 3 + end;
                    }
                    None => {
                        out.push_str("$(");
                        i += 2;
                    }
                },
                _ => {
                    out.push('$');
                    i += 1;
                }
            }
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

impl Plan {
    /// The lines both kinds of documents say about the volume, the partials and a missing
    /// shard.
    pub fn volume_note(&self) -> [String; 3] {
        [
            format!(
                "The claim `{}` (ReadWriteMany) is mounted at {}: the inputs lie there;",
                self.claim, self.mount
            ),
            format!(
                "shard I writes {}/partial-I.json, the merge {}. A shard that has not",
                self.mount, self.result
            ),
            "finished is a missing shard: the merge fails (exit 3) and names it.".into(),
        ]
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
    fn pod_spec(&self, name: &str, args: Vec<String>, dsn: bool) -> serde_json::Value {
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

    /// Prints the documents: a YAML stream of two, the shards' and the merge's.
    pub fn write(&self, out: &mut dyn io::Write) -> io::Result<()> {
        match self.kind {
            EmitKind::Armada => armada::write(self, out),
            EmitKind::Kubernetes => kubernetes::write(self, out),
        }
    }
}

/// `value` as YAML (a block mapping; serializing JSON values cannot fail).
fn yaml(value: &serde_json::Value) -> String {
    serde_yaml::to_string(value).expect("a JSON value is YAML")
}

/// `text` (YAML lines) as the item of a block sequence: `- ` before its first line, two
/// spaces before the others.
fn list_item(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in text.lines().enumerate() {
        out.push_str(match (i, line.is_empty()) {
            (0, _) => "- ",
            (_, true) => "",
            _ => "  ",
        });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `lines` as YAML comment lines.
fn comment(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {l}\n")
            }
        })
        .collect()
}

/// A `command` line of `flags` (name, values, whether they are paths), for the tests of what
/// is emitted from one.
#[cfg(test)]
pub(crate) fn test_invocation(command: &str, flags: &[(&str, &[&str], bool)]) -> Invocation {
    Invocation {
        command: command.into(),
        flags: flags
            .iter()
            .map(|(n, v, p)| Flag {
                name: n.to_string(),
                values: v.iter().map(|s| s.to_string()).collect(),
                path: *p,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(flags: &[(&str, &[&str], bool)]) -> Invocation {
        test_invocation("tune", flags)
    }

    fn emit_args() -> EmitArgs {
        EmitArgs {
            emit: Some(EmitKind::Kubernetes),
            shard_count: Some(3),
            image: Some("img".into()),
            volume: Some("claim:/data/".into()),
            ..EmitArgs::default()
        }
    }

    #[test]
    fn escape_and_expand_are_inverse_and_expand_is_the_kubelets() {
        for text in ["plain", "$", "a$b", "$$", "$(X)", "$$(X)", "x$(", "end$", "$((a))"] {
            assert_eq!(expand(&escape(text), &|_| Some("!".into())), text, "{text}");
        }
        let var = |n: &str| (n == "I").then(|| "7".to_string());
        assert_eq!(expand("p-$(I).json", &var), "p-7.json");
        assert_eq!(expand("$(UNSET)/$(I)", &var), "$(UNSET)/7");
        assert_eq!(expand("$$(I)", &var), "$(I)");
        assert_eq!(expand("$(I", &var), "$(I");
        assert_eq!(expand("a$b$", &var), "a$b$");
    }

    #[test]
    fn paths_lie_under_the_mount() {
        assert_eq!(container_path("/data", "history", "h.jsonl").unwrap(), "/data/h.jsonl");
        assert_eq!(container_path("/data", "history", "./p/./h").unwrap(), "/data/p/h");
        assert_eq!(container_path("/data", "history", "/data/x/").unwrap(), "/data/x");
        assert_eq!(container_path("/data", "filename", ".").unwrap(), "/data");
        for bad in ["/database/h", "/tmp/h", "../h", "/data/../etc", "-"] {
            let e = container_path("/data", "history", bad).unwrap_err();
            assert_eq!(e.code, crate::error::ExitCode::Usage, "{bad}");
            assert!(e.message.contains(&format!("`--history {bad}`")), "{}", e.message);
        }
    }

    #[test]
    fn claims_and_secrets_are_subdomains_job_sets_labels() {
        for ok in ["sweep", "retryctl.sweep-1", "a", "0.a"] {
            assert_eq!(check_subdomain(ok), Ok(()), "{ok}");
        }
        for bad in ["", "Sweep", "a..b", ".a", "a.", "a_b", "-a.b", "a-.b"] {
            assert!(check_subdomain(bad).is_err(), "{bad}");
        }
        assert!(check_subdomain(&"a".repeat(64)).is_err());
        let long = vec!["a".repeat(63); 4].join(".");
        assert_eq!(check_subdomain(&long[..253]), Ok(()));
        assert!(check_subdomain(&format!("{long}a")).is_err());
        assert!(check_name("retryctl.sweep", 57).is_err());
    }

    #[test]
    fn quantities_are_kubernetes_quantities() {
        for ok in ["1", "500m", "2.5", "4Gi", "1e3", "128974848", "0.5Ki", "+1"] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "Gi", "1GB", "1..2", "one", "1e", ".", "1 Gi"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }

    #[test]
    fn the_shards_carry_the_flags_with_paths_moved_and_dollars_escaped() {
        let inv = invocation(&[
            ("filename", &["new", "/data/old"], true),
            ("history", &["h.jsonl"], true),
            ("vary", &["p:spec.rules[0].onTerminationMessage.pattern=a$(b),c"], false),
            ("baseline-categorizer", &["recorded"], true),
            ("max-compute", &["-5%"], false),
            ("exit-code", &[], false),
            ("output", &["html"], false),
        ]);
        let plan = plan(&emit_args(), &inv).unwrap();
        assert_eq!(
            plan.shard_args("$(JOB_COMPLETION_INDEX)"),
            [
                "tune",
                "--filename",
                "/data/new",
                "/data/old",
                "--history",
                "/data/h.jsonl",
                "--vary",
                "p:spec.rules[0].onTerminationMessage.pattern=a$$(b),c",
                "--baseline-categorizer",
                "recorded",
                "--max-compute=-5%",
                "--exit-code",
                "--shard",
                "$(JOB_COMPLETION_INDEX)/3",
                "-o",
                "partial",
                "--output-file",
                "/data/partial-$(JOB_COMPLETION_INDEX).json",
            ]
        );
        assert_eq!(
            plan.merge_args(),
            [
                "merge",
                "/data/partial-0.json",
                "/data/partial-1.json",
                "/data/partial-2.json",
                "-o",
                "html",
                "--output-file",
                "/data/result.html"
            ]
        );
        assert_eq!(plan.job_set, "retryctl-tune");
    }
}
