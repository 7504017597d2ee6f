//! `--emit armada|kubernetes` (docs/past-one-machine.md, "Emitting the jobs"), and the files of
//! examples/shards/, which are its output: each is checked to be what the command prints
//! today, parsed as what it is, and every container's command is run here exactly as
//! written — its `args` given to the binary (the image's entrypoint) with no shell, after
//! Kubernetes' own `$(VAR)` expansion (the index an Indexed Job gives each pod), the
//! volume's mount moved to a temporary directory — and the merge's result is compared with
//! one process's output. Then the refusals: exit 2, nothing on stdout.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_yaml::Value;

use crate::support::{format_output, retryctl, root, temp_home};

/// Where the examples mount their volume.
const MOUNT: &str = "/data";

/// The sweep of the examples: the worked example of docs/estimates.md, on the volume as
/// `new/`, `old/` and `history.jsonl`, swept over twelve candidates, its result the HTML
/// page.
const SWEEP: &[&str] = &[
    "tune",
    "-f",
    "/data/new",
    "--baseline",
    "/data/old",
    "--history",
    "/data/history.jsonl",
    "--vary",
    "p:spec.retryLimit=1..6",
    "--vary",
    "p:spec.rules[1].action=Fail,Retry",
    // Shards leave the contention section out (the documents say so): one process too, so
    // that the merge's result is its bytes.
    "--contention",
    "off",
    "-o",
    "html",
];

/// The emit flags of each example, after [`SWEEP`].
fn examples() -> [(&'static str, Vec<&'static str>); 2] {
    let common = [
        "--shard-count",
        "4",
        "--image",
        "registry.example.com/platform/retryctl:0.1.0",
        "--volume",
        "retryctl-sweep:/data",
        "--emit-job-set",
        "retryctl-tune-sweep",
        "--namespace",
        "platform-tools",
    ];
    let mut armada = vec!["--emit", "armada", "--armada-queue", "platform-tools"];
    armada.extend(common);
    let mut kubernetes = vec!["--emit", "kubernetes"];
    kubernetes.extend(common);
    [("armada.yaml", armada), ("kubernetes.yaml", kubernetes)]
}

fn run_ok(args: &[&str]) -> String {
    let home = temp_home();
    let out = retryctl(home.path()).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}\n{}", format_output(&out));
    assert_eq!(out.stderr, b"", "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Set RETRYCTL_UPDATE_EXAMPLES=1 to rewrite the files instead of failing.
#[test]
fn the_examples_are_what_emit_prints() {
    let update = std::env::var_os("RETRYCTL_UPDATE_EXAMPLES").is_some();
    for (file, emit) in examples() {
        let printed = run_ok(&[SWEEP, &emit].concat());
        let path = root().join("examples/shards").join(file);
        if update {
            fs::write(&path, &printed).unwrap();
        }
        let checked_in = fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == printed,
            "{file} is not what `--emit` prints: RETRYCTL_UPDATE_EXAMPLES=1 cargo test --test integration shard_examples"
        );
    }
}

/// The YAML stream's documents.
fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// The pod spec's one container, checked to be what the docs say: args only (the image's
/// entrypoint runs them, no shell), the claim mounted at [`MOUNT`], requests equal to limits
/// (Armada requires it), the non-root user's group on the volume; and its args.
fn container_args(pod: &Value, claim: &str) -> Vec<String> {
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["securityContext"]["fsGroup"], 65532);
    let volumes = pod["volumes"].as_sequence().unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0]["persistentVolumeClaim"]["claimName"], claim);
    let containers = pod["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert!(c.get("command").is_none(), "no command: the entrypoint is retryctl");
    assert_eq!(c["volumeMounts"][0]["name"], volumes[0]["name"]);
    assert_eq!(c["volumeMounts"][0]["mountPath"], MOUNT);
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// What the kubelet makes of an argument: `$(NAME)` is the variable's value (left as written
/// when it has none), `$$` is `$`, any other `$` stays. Written here from Kubernetes' rules,
/// not taken from retryctl, which escapes for it.
fn kubelet_expand(arg: &str, vars: &[(&str, String)]) -> String {
    let re = regex::Regex::new(r"\$\$|\$\(([^)]*)\)").unwrap();
    re.replace_all(arg, |c: &regex::Captures| match c.get(1) {
        None => "$".to_string(),
        Some(name) => vars
            .iter()
            .find(|(n, _)| *n == name.as_str())
            .map_or_else(|| c[0].to_string(), |(_, v)| v.clone()),
    })
    .into_owned()
}

/// Runs a container's args as its pod would: expanded with `vars`, the binary given exactly
/// those words (no shell), the mount at `volume`.
fn run_container(args: &[String], vars: &[(&str, String)], volume: &Path) -> Output {
    let home = temp_home();
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            let a = kubelet_expand(a, vars);
            match a.strip_prefix(MOUNT) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{}{rest}", volume.display()),
                _ => a,
            }
        })
        .collect();
    Command::new(env!("CARGO_BIN_EXE_retryctl"))
        .args(&words)
        .current_dir(home.path())
        .env_clear()
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn succeeded(out: Output, what: &str) {
    assert_eq!(out.status.code(), Some(0), "{what}\n{}", format_output(&out));
    assert_eq!(out.stdout, b"", "{what}: the result goes to --output-file");
}

/// The volume the examples expect: docs/estimates.md's worked example.
fn volume() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = root().join("docs/examples/estimates");
    for side in ["old", "new"] {
        fs::create_dir_all(dir.path().join(side)).unwrap();
        for file in fs::read_dir(example.join(side)).unwrap() {
            let file = file.unwrap();
            fs::copy(file.path(), dir.path().join(side).join(file.file_name())).unwrap();
        }
    }
    fs::copy(example.join("history.jsonl"), dir.path().join("history.jsonl")).unwrap();
    dir
}

/// One process's output for `args` with the mount at `volume`.
fn one_process(args: &[&str], volume: &Path) -> Vec<u8> {
    let home = temp_home();
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix(MOUNT) {
            Some(rest) => format!("{}{rest}", volume.display()),
            None => a.to_string(),
        })
        .collect();
    let out = retryctl(home.path()).args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    out.stdout
}

/// Only the partials and the result are left on the volume: no temporary file.
fn left_on_volume(volume: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(volume)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["old", "new", "history.jsonl"].contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

const FOUR_AND_RESULT: [&str; 5] = [
    "partial-0.json",
    "partial-1.json",
    "partial-2.json",
    "partial-3.json",
    "result.html",
];

#[test]
fn the_indexed_job_runs_the_sweep_in_shards_and_its_merge_prints_one_process() {
    let text = fs::read_to_string(root().join("examples/shards/kubernetes.yaml")).unwrap();
    let docs = documents(&text);
    assert_eq!(docs.len(), 2);
    let (job, merge) = (&docs[0], &docs[1]);
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["name"], "retryctl-tune-sweep");
    assert_eq!(job["metadata"]["namespace"], "platform-tools");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], 4);
    assert_eq!(job["spec"]["parallelism"], 4);
    let args = container_args(&job["spec"]["template"]["spec"], "retryctl-sweep");
    assert!(args.iter().any(|a| a == "$(JOB_COMPLETION_INDEX)/4"), "{args:?}");
    // Created suspended: resumed once the shards are complete.
    assert_eq!(merge["kind"], "Job");
    assert_eq!(merge["metadata"]["name"], "retryctl-tune-sweep-merge");
    assert_eq!(merge["spec"]["suspend"], true);
    let merge_args = container_args(&merge["spec"]["template"]["spec"], "retryctl-sweep");

    let data = volume();
    for i in 0..4 {
        let out = run_container(&args, &[("JOB_COMPLETION_INDEX", i.to_string())], data.path());
        succeeded(out, &format!("shard {i}"));
    }
    succeeded(run_container(&merge_args, &[], data.path()), "merge");
    assert_eq!(left_on_volume(data.path()), FOUR_AND_RESULT);
    let result = fs::read(data.path().join("result.html")).unwrap();
    assert!(
        result == one_process(SWEEP, data.path()),
        "the merge's result is not one process's"
    );
}

#[test]
fn the_armada_job_set_runs_the_sweep_in_shards_and_its_merge_prints_one_process() {
    let text = fs::read_to_string(root().join("examples/shards/armada.yaml")).unwrap();
    let docs = documents(&text);
    assert_eq!(docs.len(), 2);
    let (shards, merge) = (&docs[0], &docs[1]);
    assert_eq!(shards["queue"], "platform-tools");
    assert_eq!(shards["jobSetId"], "retryctl-tune-sweep");
    let jobs = shards["jobs"].as_sequence().unwrap();
    assert_eq!(jobs.len(), 4);
    let data = volume();
    for (i, job) in jobs.iter().enumerate() {
        assert_eq!(job["namespace"], "platform-tools");
        let args = container_args(&job["podSpec"], "retryctl-sweep");
        assert!(args.contains(&format!("{i}/4")), "{args:?}");
        succeeded(run_container(&args, &[], data.path()), &format!("job {i}"));
    }
    assert_eq!(merge["queue"], "platform-tools");
    assert_eq!(merge["jobSetId"], "retryctl-tune-sweep-merge");
    let jobs = merge["jobs"].as_sequence().unwrap();
    assert_eq!(jobs.len(), 1);
    let merge_args = container_args(&jobs[0]["podSpec"], "retryctl-sweep");
    succeeded(run_container(&merge_args, &[], data.path()), "merge");
    assert_eq!(left_on_volume(data.path()), FOUR_AND_RESULT);
    let result = fs::read(data.path().join("result.html")).unwrap();
    assert!(
        result == one_process(SWEEP, data.path()),
        "the merge's result is not one process's"
    );
}

/// A shard that has not run: the merge fails loudly, exit 3, and writes no result.
#[test]
fn the_merge_refuses_a_missing_shard_and_writes_nothing() {
    let text = fs::read_to_string(root().join("examples/shards/kubernetes.yaml")).unwrap();
    let docs = documents(&text);
    let args = container_args(&docs[0]["spec"]["template"]["spec"], "retryctl-sweep");
    let merge_args = container_args(&docs[1]["spec"]["template"]["spec"], "retryctl-sweep");
    let data = volume();
    for i in [0, 1, 3] {
        succeeded(
            run_container(&args, &[("JOB_COMPLETION_INDEX", i.to_string())], data.path()),
            "shard",
        );
    }
    let out = run_container(&merge_args, &[], data.path());
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("partial-2.json"), "{stderr}");
    assert_eq!(
        left_on_volume(data.path()),
        ["partial-0.json", "partial-1.json", "partial-3.json"]
    );
}

/// `simulate` too, with what a shell or Kubernetes would misread: relative paths (under the
/// mount), a `$(…)` in a file name (escaped for the kubelet), the table as the result.
#[test]
fn a_simulate_with_relative_paths_and_dollars_runs_as_written() {
    let data = volume();
    fs::rename(data.path().join("history.jsonl"), data.path().join("h$(X).jsonl")).unwrap();
    let emitted = run_ok(&[
        "simulate",
        "-f",
        "new",
        "--baseline",
        "./old",
        "--history",
        "h$(X).jsonl",
        "--exit-code",
        "--contention",
        "off",
        "--emit",
        "kubernetes",
        "--shard-count",
        "3",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "sweep:/data",
    ]);
    let docs = documents(&emitted);
    let args = container_args(&docs[0]["spec"]["template"]["spec"], "sweep");
    assert_eq!(
        args[..10],
        [
            "simulate",
            "--filename",
            "/data/new",
            "--baseline",
            "/data/old",
            "--history",
            "/data/h$$(X).jsonl",
            "--exit-code",
            "--contention",
            "off"
        ]
    );
    assert_eq!(docs[0]["metadata"]["name"], "retryctl-simulate");
    for i in 0..3 {
        let vars = [("JOB_COMPLETION_INDEX", i.to_string()), ("X", "wrong".to_string())];
        succeeded(run_container(&args, &vars, data.path()), "shard");
    }
    let merge_args = container_args(&docs[1]["spec"]["template"]["spec"], "sweep");
    let out = run_container(&merge_args, &[], data.path());
    // `--exit-code` and changed jobs: exit 1, as one process; the result is written anyway.
    assert_eq!(out.status.code(), Some(1), "{}", format_output(&out));
    let home = temp_home();
    let d = data.path().display();
    let one = retryctl(home.path())
        .args(["simulate", "-f", &format!("{d}/new"), "--baseline", &format!("{d}/old")])
        .args([
            "--history",
            &format!("{d}/h$(X).jsonl"),
            "--exit-code",
            "--contention",
            "off",
        ])
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(1));
    assert!(fs::read(data.path().join("result.txt")).unwrap() == one.stdout);
}

/// `suggest` (docs/suggest.md): its shards learn, its merge proposes and reads the history on
/// the volume again for the comparison; the result is one process's, for the documents of
/// both kinds (`-o policy` a YAML result, `-o markdown` a `.md` one).
#[test]
fn a_suggest_runs_in_shards_and_its_merge_prints_one_process() {
    for (kind, format, result) in [
        ("kubernetes", "policy", "result.yaml"),
        ("armada", "markdown", "result.md"),
    ] {
        let data = tempfile::tempdir().unwrap();
        let planted = root().join("testdata/suggest");
        fs::copy(planted.join("planted.jsonl"), data.path().join("history.jsonl")).unwrap();
        fs::copy(planted.join("today.yaml"), data.path().join("today.yaml")).unwrap();
        let command = [
            "suggest",
            "--history",
            "/data/history.jsonl",
            "--baseline",
            "today.yaml",
            "--min-trials",
            "10",
            "-o",
            format,
        ];
        let mut emit = vec![
            "--emit",
            kind,
            "--shard-count",
            "3",
            "--image",
            "retryctl:0.1.0",
            "--volume",
            "sweep:/data",
        ];
        if kind == "armada" {
            emit.extend(["--armada-queue", "tools"]);
        }
        let docs = documents(&run_ok(&[&command[..], &emit].concat()));
        assert_eq!(docs.len(), 2);
        let (shard_pods, merge_pod) = match kind {
            "armada" => {
                let jobs = docs[0]["jobs"].as_sequence().unwrap();
                assert_eq!(jobs.len(), 3);
                (
                    jobs.iter().map(|j| j["podSpec"].clone()).collect::<Vec<_>>(),
                    docs[1]["jobs"][0]["podSpec"].clone(),
                )
            }
            _ => {
                assert_eq!(docs[0]["spec"]["completions"], 3);
                (
                    vec![docs[0]["spec"]["template"]["spec"].clone()],
                    docs[1]["spec"]["template"]["spec"].clone(),
                )
            }
        };
        for i in 0..3 {
            let pod = &shard_pods[i.min(shard_pods.len() - 1)];
            let args = container_args(pod, "sweep");
            assert_eq!(
                args[..5],
                [
                    "suggest",
                    "--history",
                    "/data/history.jsonl",
                    "--baseline",
                    "/data/today.yaml"
                ]
            );
            let vars = [("JOB_COMPLETION_INDEX", i.to_string())];
            succeeded(run_container(&args, &vars, data.path()), &format!("{kind} shard {i}"));
        }
        let merge_args = container_args(&merge_pod, "sweep");
        assert_eq!(
            merge_args[merge_args.len() - 4..],
            [
                "-o".to_string(),
                format.to_string(),
                "--output-file".into(),
                format!("/data/{result}")
            ]
        );
        succeeded(run_container(&merge_args, &[], data.path()), &format!("{kind} merge"));
        let one = one_process(
            &[
                "suggest",
                "--history",
                "/data/history.jsonl",
                "--baseline",
                "/data/today.yaml",
                "--min-trials",
                "10",
                "-o",
                format,
            ],
            data.path(),
        );
        assert!(!one.is_empty());
        assert!(
            fs::read(data.path().join(result)).unwrap() == one,
            "{kind}: the merge's result is not one process's"
        );
    }
}

/// `suggest --emit` refuses what its merge could not read again, and what `suggest` itself
/// refuses, in its own words, before any document is printed.
#[test]
fn a_suggest_emit_refuses_a_source_its_merge_cannot_read_again() {
    let emit = [
        "--emit",
        "kubernetes",
        "--shard-count",
        "2",
        "--image",
        "i",
        "--volume",
        "c:/data",
    ];
    let cases: [(Vec<&str>, &str); 3] = [
        (
            vec!["suggest", "--history", "-"],
            "error: `suggest` with `--emit` cannot read `--history -`: its merge reads the history again to compare the proposal, and stdin is read once\n\n\
             hint: write the history to a file first (`retryctl history … --output-file FILE` exports one), then give `--history FILE`\n",
        ),
        (
            vec!["suggest", "--lookout-db", "x", "--queue", "q", "--to", "2026-01-01T00:00:00Z", "--dsn-secret", "s"],
            "error: `suggest` with `--emit` cannot read `--lookout-db`: its merge reads the history again to compare the proposal, and it reads files only (a partial never holds the DSN)\n\n\
             hint: export the jobs to a file first (`retryctl history --lookout-db DSN --queue Q --from … --to … --output-file FILE`), then give `--history FILE`\n",
        ),
        (
            vec!["suggest", "--history", "/data/h.jsonl", "--futile", "2"],
            "error: invalid `--futile` `2`: expected a share strictly between 0 and 1, such as `0.05`\n",
        ),
    ];
    for (args, want) in cases {
        let home = temp_home();
        let out = retryctl(home.path()).args(&args).args(emit).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", format_output(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{args:?}");
    }
}

/// A Lookout source: the DSN is read from the Secret by the variable Kubernetes expands, and
/// never written into the documents.
#[test]
fn the_dsn_comes_from_the_secret_and_is_never_written() {
    for kind in ["armada", "kubernetes"] {
        let mut args = vec![
            "tune",
            "-f",
            "/data/p",
            "--lookout-db",
            "postgresql://retry:hunter2@db:5432/lookout",
            "--queue",
            "ml",
            "--from",
            "2026-01-01T00:00:00Z",
            "--to",
            "2026-02-01T00:00:00Z",
            "--vary",
            "p:retryLimit=1..3",
            "--emit",
            kind,
            "--shard-count",
            "2",
            "--image",
            "retryctl:0.1.0",
            "--volume",
            "sweep:/data",
            "--dsn-secret",
            "lookout:url",
            "--requests",
            "cpu=500m,memory=2Gi",
        ];
        if kind == "armada" {
            args.extend(["--armada-queue", "tools"]);
        }
        let emitted = run_ok(&args);
        assert!(
            !emitted.contains("hunter2") && !emitted.contains("postgresql"),
            "{emitted}"
        );
        let docs = documents(&emitted);
        let pod = match kind {
            "armada" => docs[0]["jobs"][0]["podSpec"].clone(),
            _ => docs[0]["spec"]["template"]["spec"].clone(),
        };
        let c = &pod["containers"][0];
        let args = container_args(&pod, "sweep");
        let at = args.iter().position(|a| a == "--lookout-db").unwrap();
        assert_eq!(args[at + 1], "$(LOOKOUT_DB)");
        let from = args.iter().position(|a| a == "--from").unwrap();
        assert_eq!(
            args[from..from + 4],
            ["--from", "2026-01-01T00:00:00Z", "--to", "2026-02-01T00:00:00Z"]
        );
        assert_eq!(c["env"][0]["name"], "LOOKOUT_DB");
        assert_eq!(c["env"][0]["valueFrom"]["secretKeyRef"]["name"], "lookout");
        assert_eq!(c["env"][0]["valueFrom"]["secretKeyRef"]["key"], "url");
        assert_eq!(c["resources"]["requests"]["cpu"], "500m");
        assert_eq!(c["resources"]["limits"]["memory"], "2Gi");
        // The merge reads partials only.
        let merge = match kind {
            "armada" => docs[1]["jobs"][0]["podSpec"]["containers"][0].clone(),
            _ => docs[1]["spec"]["template"]["spec"]["containers"][0].clone(),
        };
        assert!(merge.get("env").is_none());
    }
}

/// What `--emit` refuses: exit 2, the reason on stderr, nothing on stdout.
#[test]
fn emit_refuses_what_cannot_run_in_shards() {
    let base = |emit: &[&str]| {
        let mut a = vec![
            "tune",
            "-f",
            "/data/p",
            "--history",
            "/data/h.jsonl",
            "--vary",
            "p:retryLimit=1..3",
        ];
        a.extend_from_slice(emit);
        a.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let ok = ["--shard-count", "2", "--image", "i", "--volume", "c:/data"];
    let with = |extra: &[&str]| {
        let mut a = base(&["--emit", "kubernetes"]);
        a.extend(ok.iter().map(|s| s.to_string()));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            base(&["--emit", "kubernetes", "--image", "i", "--volume", "c:/data"]),
            "error: `--emit` needs `--shard-count N`: how many shards to split the command into\n",
        ),
        (
            base(&["--emit", "kubernetes", "--shard-count", "0", "--image", "i", "--volume", "c:/data"]),
            "error: invalid `--shard-count` `0`: expected a number of shards from 1 to 1000000\n",
        ),
        (
            base(&["--emit", "kubernetes", "--shard-count", "1000001", "--image", "i", "--volume", "c:/data"]),
            "error: invalid `--shard-count` `1000001`: expected a number of shards from 1 to 1000000\n",
        ),
        (
            base(&["--emit", "kubernetes", "--shard-count", "2", "--volume", "c:/data"]),
            "error: `--emit` needs `--image IMAGE`: the container image the jobs run, its entrypoint retryctl\n",
        ),
        (
            base(&["--emit", "kubernetes", "--shard-count", "2", "--image", "i"]),
            "error: `--emit` needs `--volume CLAIM:MOUNT`: the PersistentVolumeClaim that holds the inputs and where the jobs mount it (`retryctl-sweep:/data`)\n",
        ),
        (
            base(&["--emit", "kubernetes", "--shard-count", "2", "--image", "i", "--volume", "c:data"]),
            "error: invalid `--volume` `c:data`: the mount path is not absolute (expected `CLAIM:MOUNT`, a PersistentVolumeClaim and the absolute path the jobs mount it at, such as `retryctl-sweep:/data`)\n",
        ),
        (
            base(&["--emit", "armada", "--shard-count", "2", "--image", "i", "--volume", "c:/data"]),
            "error: `--emit armada` needs `--armada-queue QUEUE`: the Armada queue the jobs are submitted to\n",
        ),
        (
            with(&["--armada-queue", "q"]),
            "error: `--armada-queue` is for `--emit armada`: a Kubernetes Job has no queue\n",
        ),
        (
            with(&["--shard", "0/2"]),
            "error: `--emit` with `--shard 0/2`: the documents run every shard themselves; drop `--shard`\n",
        ),
        (
            with(&["-o", "partial"]),
            "error: `--emit` with `-o partial`: the shards write their partials themselves; `-o` is the merged result's format (`-o html`), or none for the table\n",
        ),
        (
            with(&["--baseline", "/tmp/old"]),
            "error: `--baseline /tmp/old` is not under the volume's mount: give the path as the containers see it, under the volume's mount `/data`, or relative to it\n",
        ),
        (
            with(&["--scheduler-config", "../s.yaml"]),
            "error: `--scheduler-config ../s.yaml` goes up with `..`: give the path as the containers see it, under the volume's mount `/data`, or relative to it\n",
        ),
        (
            with(&["--output-file", "/tmp/r.html"]),
            "error: `--output-file /tmp/r.html` is not under the volume's mount: give the path as the containers see it, under the volume's mount `/data`, or relative to it\n",
        ),
        (
            base(&["--emit", "kubernetes", "--shard-count", "2", "--image", "i", "--volume", "Sweep_1:/data"]),
            "error: invalid `--volume` `Sweep_1:/data`: the claim's name: expected lowercase letters, digits, `-` and `.`, each part between dots starting and ending with a letter or digit, at most 253 characters (expected `CLAIM:MOUNT`, a PersistentVolumeClaim and the absolute path the jobs mount it at, such as `retryctl-sweep:/data`)\n",
        ),
        (
            with(&["--emit-job-set", "Sweep_1"]),
            "error: invalid `--emit-job-set` `Sweep_1`: expected lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 57 characters (the merge's is NAME-merge)\n",
        ),
        (
            // Its name before 0.1: clap's own tip would offer `--jobset`, Lookout's filter.
            with(&["--job-set", "sweep"]),
            "error: `--job-set` is now `--emit-job-set` (`--jobset` is Lookout's job set filter)\n",
        ),
        (
            with(&["--requests", "cpu=2,memory=4GB"]),
            "error: invalid `--requests` `cpu=2,memory=4GB`: `4GB` is not a quantity (`500m`, `2`, `4Gi`) (expected NAME=QUANTITY pairs separated by commas, such as `cpu=2,memory=4Gi`)\n",
        ),
        (
            with(&["--dsn-secret", "lookout"]),
            "error: `--dsn-secret` is for `--lookout-db`: without it the jobs read no database\n",
        ),
        (
            with(&["--pick", "2"]),
            "error: `--emit` with `--pick`: a picked candidate's documents need no shards; run the sweep with `--emit`, then `--pick ID` the candidate its merge recommends\n",
        ),
    ];
    let lookout = |extra: &[&str]| {
        let mut a: Vec<String> = [
            "simulate",
            "-f",
            "/data/p",
            "--lookout-db",
            "postgresql://x@db/l",
            "--queue",
            "ml",
            "--emit",
            "kubernetes",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(ok.iter().map(|s| s.to_string()));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let more: Vec<(Vec<String>, &str)> = vec![
        (
            lookout(&["--dsn-secret", "lookout", "--from", "2026-01-01T00:00:00Z"]),
            "error: `--emit` with `--lookout-db` needs `--to TIME`: shards started at different times must read the same jobs; give a `--to` further back than the longest job\n",
        ),
        (
            lookout(&["--to", "2026-01-01T00:00:00Z"]),
            "error: `--emit` with `--lookout-db` needs `--dsn-secret NAME[:KEY]`: the DSN is never written into the documents, the jobs read it from that Secret\n",
        ),
        (
            lookout(&["--dsn-secret", "lookout", "--since", "7d"]),
            "error: `--emit` with `--since`: it counts back from when each shard starts, so the shards would read different jobs; give `--from` and `--to` instead\n",
        ),
        (
            {
                let mut a = lookout(&["--dsn-secret", "lookout", "--to", "2026-01-01T00:00:00Z"]);
                a[2] = "-".into();
                a
            },
            "error: `--filename -`: a job has no stdin to read; put the file on the volume and give its path under `/data`\n",
        ),
        (
            {
                let mut a = lookout(&["--dsn-secret", "lookout", "--to", "2026-01-01T00:00:00Z"]);
                a.push("--from-server".into());
                a
            },
            "error: `--emit` with `--from-server`: each shard would read the server's policies at its own time; put them on the volume (`retryctl get retrypolicies -o yaml`) and give `-f`\n",
        ),
    ];
    // What `simulate` and `tune` refuse themselves before reading anything: every shard
    // would, so `--emit` does, in the same words.
    let checked: Vec<(Vec<String>, &str)> = vec![
        (
            {
                let mut a = with(&[]);
                a[6] = "retryLimit".into();
                a
            },
            "error: invalid `--vary` `retryLimit`: missing `=` (expected `NAME:PATH=VALUES`, e.g. `ml:spec.retryLimit=0..5`)\n",
        ),
        (
            with(&["--max-compute", "5x"]),
            "error: invalid `--max-compute` `5x`: expected a duration such as `10h` or a percentage of the baseline's recorded compute such as `5%`\n",
        ),
        (
            with(&["--backtest-at", "yesterday"]),
            "error: invalid `--backtest-at` `yesterday`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`\n",
        ),
        (
            with(&[]).into_iter().filter(|a| a != "-f" && a != "/data/p").collect(),
            "error: give the template's documents with `-f PATH`\n",
        ),
        (
            {
                let mut a = lookout(&["--dsn-secret", "lookout", "--to", "2026-01-01T00:00:00Z"]);
                a.retain(|w| w != "--queue" && w != "ml");
                a
            },
            "error: `--lookout-db` replays the jobs of one queue: give `--queue QUEUE`\n",
        ),
        (
            {
                let mut a = lookout(&["--dsn-secret", "lookout", "--to", "2026-01-01T00:00:00Z"]);
                a.extend(["--backtest-at".into(), "soon".into()]);
                a
            },
            "error: invalid `--backtest-at` `soon`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`\n",
        ),
        // The merge's result would overwrite what the jobs read.
        (
            with(&["--output-file", "partial-1.json"]),
            "error: `--output-file /data/partial-1.json` is where shard 1 writes its partial: give the merge's result a path of its own under `/data`\n",
        ),
        (
            with(&["--output-file", "/data/h.jsonl"]),
            "error: `--output-file /data/h.jsonl` is the `--history` the jobs read: give the merge's result a path of its own under `/data`\n",
        ),
        (
            with(&["--output-file", "/data/"]),
            "error: `--output-file /data` is the volume's mount: give the merge's result a path of its own under `/data`\n",
        ),
        // A name Kubernetes cannot give the last shard's pod (`NAME-INDEX`, a DNS label).
        (
            {
                let name = "a".repeat(57);
                base(&["--emit", "kubernetes", "--shard-count", "1000000", "--image", "i", "--volume", "c:/data", "--emit-job-set", &name])
            },
            "error: invalid `--emit-job-set` `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa` with `--shard-count 1000000`: Kubernetes names the last shard's pod `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-999999`, longer than the 63 characters it allows; give a name of at most 56 characters\n",
        ),
    ];
    for (args, stderr) in cases.into_iter().chain(more).chain(checked) {
        let home = temp_home();
        let out = retryctl(home.path()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{}", format_output(&out));
        assert_eq!(out.stdout, b"", "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), stderr, "{args:?}");
    }
    // The emit flags need --emit (clap's own usage error).
    let home = temp_home();
    let out = retryctl(home.path())
        .args(base(&["--shard-count", "2"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, b"");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--emit <KIND>"),
        "{}",
        format_output(&out)
    );
}

/// The longest name Kubernetes can give the last shard's pod, and past 100,000 shards the
/// most pods an Indexed Job may run at once: what the API server accepts.
#[test]
fn the_indexed_job_fits_kubernetes_limits() {
    let name = "a".repeat(56);
    let emitted = run_ok(&[
        "simulate",
        "-f",
        "/data/p",
        "--history",
        "/data/h.jsonl",
        "--emit",
        "kubernetes",
        "--shard-count",
        "100001",
        "--image",
        "i",
        "--volume",
        "c:/data",
        "--emit-job-set",
        &name,
    ]);
    let docs = documents(&emitted);
    assert_eq!(docs[0]["metadata"]["name"].as_str(), Some(name.as_str()));
    assert_eq!(docs[0]["spec"]["completions"], 100_001);
    assert_eq!(docs[0]["spec"]["parallelism"], 100_000);
    assert_eq!(
        docs[1]["metadata"]["name"].as_str(),
        Some(format!("{name}-merge").as_str())
    );
    let merge = container_args(&docs[1]["spec"]["template"]["spec"], "c");
    assert_eq!(merge.len(), 1 + 100_001 + 2);
    assert_eq!(merge[100_001], "/data/partial-100000.json");
    let four = run_ok(&[
        "simulate",
        "-f",
        "/data/p",
        "--history",
        "/data/h.jsonl",
        "--emit",
        "kubernetes",
        "--shard-count",
        "4",
        "--image",
        "i",
        "--volume",
        "c:/data",
    ]);
    assert_eq!(documents(&four)[0]["spec"]["parallelism"], 4);
}

/// `--emit` refuses a flag value holding a line break or a control character, the command's
/// own flags and its own alike (exit 2, nothing printed): in a document it would end a YAML
/// line or a container's argument where the user did not.
#[test]
fn emit_refuses_a_value_with_a_line_break_or_a_control_character() {
    let home = temp_home();
    let emit = [
        "--emit",
        "kubernetes",
        "--shard-count",
        "2",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "sweep:/data",
    ];
    let cases: [(&[&str], &[&str], &str); 5] = [
        (
            &["simulate", "-f", "new", "--history", "h\n- --evil.jsonl"],
            &[],
            r"error: `--history` `h\x0a- --evil.jsonl` holds a line break (`\x0a`): --emit cannot carry it into the documents",
        ),
        (
            &[
                "tune",
                "-f",
                "t",
                "--history",
                "h.jsonl",
                "--vary",
                "p:retryLimit=1..3\r",
            ],
            &[],
            r"error: `--vary` `p:retryLimit=1..3\x0d` holds a line break (`\x0d`): --emit cannot carry it into the documents",
        ),
        (
            &["suggest", "--history", "h.jsonl"],
            &["--emit-job-set", "a\u{2028}b"],
            r"error: `--emit-job-set` `a\u2028b` holds a line break (`\u2028`): --emit cannot carry it into the documents",
        ),
        (
            &["simulate", "-f", "new", "--history", "h.jsonl"],
            &["--namespace", "ns\x1b[2J"],
            r"error: `--namespace` `ns\x1b[2J` holds a control character (`\x1b`): --emit cannot carry it into the documents",
        ),
        (
            &["simulate", "-f", "new\tx", "--history", "h.jsonl"],
            &[],
            r"error: `--filename` `new\x09x` holds a control character (`\x09`): --emit cannot carry it into the documents",
        ),
    ];
    for (command, extra, said) in cases {
        let out = retryctl(home.path())
            .args(command)
            .args(emit)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command:?}\n{}", format_output(&out));
        assert_eq!(out.stdout, b"", "{command:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("{said}\n"), "{command:?}");
    }
}

/// Every value of an emitted document stays a string for a YAML 1.1 reader (kubectl's and
/// armadactl's go-yaml): a `--queue on`, an `--armada-queue yes`, a `--from` date and the like
/// are quoted, in the shards' and the merge's documents and in `watch`'s, and PyYAML (a YAML
/// 1.1 reader) reads them back as the strings given.
#[test]
fn emitted_values_stay_strings_for_a_yaml_1_1_reader() {
    let kubernetes = run_ok(&[
        "simulate",
        "-f",
        "/data/p",
        "--history",
        "/data/h.jsonl",
        "--queue",
        "on",
        "--emit",
        "kubernetes",
        "--shard-count",
        "2",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "sweep:/data",
    ]);
    assert!(
        kubernetes.contains(
            "        - --history\n        - /data/h.jsonl\n        - --queue\n        - 'on'\n        - --shard\n"
        ),
        "{kubernetes}"
    );
    let armada = run_ok(&[
        "tune",
        "-f",
        "/data/p",
        "--lookout-db",
        "postgresql://db/lookout",
        "--queue",
        "no",
        "--from",
        "2026-01-01",
        "--to",
        "2026-02-01T00:00:00Z",
        "--vary",
        "p:retryLimit=1..3",
        "--emit",
        "armada",
        "--armada-queue",
        "yes",
        "--emit-job-set",
        "0x1f",
        "--shard-count",
        "2",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "sweep:/data",
        "--dsn-secret",
        "lookout:1_000",
    ]);
    assert!(armada.contains("queue: 'yes'\njobSetId: '0x1f'\njobs:\n"), "{armada}");
    assert!(
        armada.contains("      - --queue\n      - 'no'\n      - --from\n      - '2026-01-01'\n      - --to\n      - '2026-02-01T00:00:00Z'\n"),
        "{armada}"
    );
    assert!(armada.contains("            key: '1_000'\n"), "{armada}");
    let watch = run_ok(&[
        "watch",
        "--baseline",
        "/data/current",
        "--state",
        "/data/watch.json",
        "--queue",
        "off",
        "--queue",
        "1:20",
        "--listen",
        "0.0.0.0:9464",
        "--emit",
        "kubernetes",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "watch:/data",
        "--dsn-secret",
        "lookout",
    ]);
    assert!(
        watch.contains("        - --queue\n        - 'off'\n        - --queue\n        - '1:20'\n"),
        "{watch}"
    );
    let Some(python) = crate::support::python::python() else {
        return;
    };
    let home = temp_home();
    // (the document, the path to a list of strings, the strings there that were given)
    let cases = [
        (
            &kubernetes,
            "d[0]['spec']['template']['spec']['containers'][0]['args']",
            vec!["on"],
        ),
        (
            &armada,
            "[d[0]['queue'], d[0]['jobSetId'], d[1]['queue']]",
            vec!["yes", "0x1f", "yes"],
        ),
        (
            &armada,
            "d[0]['jobs'][0]['podSpec']['containers'][0]['args']",
            vec!["no", "2026-01-01", "2026-02-01T00:00:00Z"],
        ),
        (
            &armada,
            "[d[0]['jobs'][0]['podSpec']['containers'][0]['env'][0]['valueFrom']['secretKeyRef']['key']]",
            vec!["1_000"],
        ),
        (
            &watch,
            "d[-1]['spec']['template']['spec']['containers'][0]['args']",
            vec!["off", "1:20"],
        ),
    ];
    for (text, path, given) in cases {
        let file = home.path().join("emitted.yaml");
        fs::write(&file, text).unwrap();
        let read = crate::support::python::run(
            &python,
            &format!(
                "import json, sys, yaml\nd = list(yaml.safe_load_all(open(sys.argv[1])))\nprint(json.dumps({path}))"
            ),
            &[file.to_str().unwrap()],
        );
        let read: Vec<serde_json::Value> = serde_json::from_str(&read).unwrap();
        for g in given {
            assert!(
                read.contains(&serde_json::json!(g)),
                "{path}: {g:?} is not a string in {read:?}"
            );
        }
        assert!(read.iter().all(|v| v.is_string()), "{path}: {read:?}");
    }
}
