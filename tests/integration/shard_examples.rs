//! The files of examples/shards/ (issue 35): an Armada job set and a Kubernetes Indexed Job
//! that run a tune sweep in shards, and the jobs that merge them. Each is parsed as what it
//! is, each container's command line is run here exactly as written (`sh -c` with the
//! container's environment, the volume's mount path moved to a temporary directory, and for
//! the Indexed Job the index Kubernetes gives each pod), and the merge's files and log are
//! compared with one process's output for the same sweep.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_yaml::Value;

use crate::support::{format_output, retryctl, root, temp_home};

/// What the examples mount: one volume, here.
const MOUNT: &str = "/data";

/// One container of an example: its `sh -c` script and its environment.
struct Container {
    script: String,
    env: BTreeMap<String, String>,
}

fn load(name: &str) -> Value {
    let path = root().join("examples/shards").join(name);
    serde_yaml::from_str(&fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The pod spec's one container, checked to be what the docs say: `sh -c SCRIPT`, the
/// volume `data` from the claim `retryctl-sweep` mounted at [`MOUNT`], resources requested
/// as Armada requires (requests equal to limits).
fn container(pod: &Value) -> Container {
    assert_eq!(pod["restartPolicy"], "Never");
    let volumes = pod["volumes"].as_sequence().unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0]["name"], "data");
    assert_eq!(volumes[0]["persistentVolumeClaim"]["claimName"], "retryctl-sweep");
    let containers = pod["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["command"], serde_yaml::from_str::<Value>("[sh, -c]").unwrap());
    assert_eq!(c["volumeMounts"][0]["name"], "data");
    assert_eq!(c["volumeMounts"][0]["mountPath"], MOUNT);
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    let args = c["args"].as_sequence().unwrap();
    assert_eq!(args.len(), 1, "one script");
    let env = c["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    Container {
        script: args[0].as_str().unwrap().to_string(),
        env,
    }
}

/// Runs a container's script as its pod would, the volume at `data`, `extra` added to its
/// environment (the index Kubernetes sets), `retryctl` on the PATH: it must succeed.
fn run(c: &Container, data: &Path, extra: &[(&str, String)]) -> Output {
    let out = run_as_pod(c, data, extra);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", c.script, format_output(&out));
    out
}

/// [`run`], whatever the script's exit status.
fn run_as_pod(c: &Container, data: &Path, extra: &[(&str, String)]) -> Output {
    let home = temp_home();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_retryctl"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&c.script)
        .current_dir(home.path())
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", path)
        .env("NO_COLOR", "1");
    for (name, value) in &c.env {
        let value = match value.strip_prefix(MOUNT) {
            Some(rest) => format!("{}{rest}", data.display()),
            None => value.clone(),
        };
        cmd.env(name, value);
    }
    for (name, value) in extra {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// The volume as the docs lay it out: the worked example of docs/estimates.md, its
/// policies as the cluster's (current) and the template (candidate).
fn volume() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = root().join("docs/examples/estimates");
    for (from, to) in [("old", "current"), ("new", "candidate")] {
        let target = dir.path().join("policies").join(to);
        fs::create_dir_all(&target).unwrap();
        for file in fs::read_dir(example.join(from)).unwrap() {
            let file = file.unwrap();
            fs::copy(file.path(), target.join(file.file_name())).unwrap();
        }
    }
    fs::copy(example.join("history.jsonl"), dir.path().join("history.jsonl")).unwrap();
    dir
}

/// The merge job's files and log equal what one process prints for the sweep the shard
/// scripts run (their command without `--shard`, `-o` and the redirection).
fn merged_as_one_process(merge: &Container, data: &Path) {
    let log = run(merge, data, &[]);
    let d = data.display();
    let sweep = [
        "tune".to_string(),
        "-f".into(),
        format!("{d}/policies/candidate"),
        "--baseline".into(),
        format!("{d}/policies/current"),
        "--history".into(),
        format!("{d}/history.jsonl"),
        "--vary".into(),
        "p:spec.retryLimit=1..6".into(),
        "--vary".into(),
        "p:spec.rules[1].action=Fail,Retry".into(),
    ];
    let home = temp_home();
    let one = |format: &str| {
        let out = retryctl(home.path())
            .args(&sweep)
            .args(["-o", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(String::from_utf8(log.stdout).unwrap(), one("table"));
    assert_eq!(log.stderr, b"");
    for (file, format) in [("tune.html", "html"), ("tune.json", "json")] {
        let written = fs::read_to_string(data.join("sweep").join(file)).unwrap();
        assert_eq!(written, one(format), "{file}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(data.join("sweep/tune.json")).unwrap()).unwrap();
    assert_eq!(json["tune"]["candidates"].as_array().unwrap().len(), 12);
}

/// Only the four partials are left on the volume: no temporary file.
fn four_partials(data: &Path) {
    let mut names: Vec<String> = fs::read_dir(data.join("sweep"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("part-"))
        .collect();
    names.sort();
    assert_eq!(names, ["part-0.json", "part-1.json", "part-2.json", "part-3.json"]);
}

#[test]
fn the_armada_job_set_runs_the_sweep_in_shards_and_merges_to_one_process() {
    let set = load("armada-shards.yaml");
    assert_eq!(set["queue"], "platform-tools");
    assert_eq!(set["jobSetId"], "retryctl-tune-sweep");
    let jobs = set["jobs"].as_sequence().unwrap();
    assert_eq!(jobs.len(), 4);
    let data = volume();
    for (i, job) in jobs.iter().enumerate() {
        assert_eq!(job["namespace"], "platform-tools");
        let c = container(&job["podSpec"]);
        // Each job is shard I of 4, and otherwise the same command line as job 0.
        assert!(c.script.contains(&format!("--shard {i}/4 ")), "{}", c.script);
        let first = container(&jobs[0]["podSpec"]).script;
        assert_eq!(
            c.script
                .replace(&format!("{i}/4"), "0/4")
                .replace(&format!("part-{i}."), "part-0."),
            first
        );
        run(&c, data.path(), &[]);
    }
    four_partials(data.path());
    let merge = load("armada-merge.yaml");
    assert_eq!(merge["queue"], "platform-tools");
    let jobs = merge["jobs"].as_sequence().unwrap();
    assert_eq!(jobs.len(), 1);
    merged_as_one_process(&container(&jobs[0]["podSpec"]), data.path());
}

#[test]
fn the_indexed_job_runs_the_sweep_in_shards_and_merges_to_one_process() {
    let job = load("k8s-indexed-job.yaml");
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    let n = job["spec"]["completions"].as_u64().unwrap();
    assert_eq!(n, 4);
    assert_eq!(job["spec"]["parallelism"].as_u64(), Some(n));
    let c = container(&job["spec"]["template"]["spec"]);
    assert!(
        c.script.contains(&format!("--shard \"$JOB_COMPLETION_INDEX/{n}\"")),
        "{}",
        c.script
    );
    let data = volume();
    for i in 0..n {
        run(&c, data.path(), &[("JOB_COMPLETION_INDEX", i.to_string())]);
    }
    four_partials(data.path());
    let merge = load("k8s-merge-job.yaml");
    assert_eq!(merge["kind"], "Job");
    merged_as_one_process(&container(&merge["spec"]["template"]["spec"]), data.path());
}

/// A shard that has not run yet: the merge job fails loudly and writes no report.
#[test]
fn the_merge_job_refuses_a_missing_shard() {
    let job = load("k8s-indexed-job.yaml");
    let c = container(&job["spec"]["template"]["spec"]);
    let data = volume();
    for i in [0, 1, 3] {
        run(&c, data.path(), &[("JOB_COMPLETION_INDEX", i.to_string())]);
    }
    let merge = load("k8s-merge-job.yaml");
    let out = run_as_pod(&container(&merge["spec"]["template"]["spec"]), data.path(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shard 2/4 is missing"), "{stderr}");
    // The shell's redirection made the file; merge wrote nothing into it.
    assert_eq!(fs::read_to_string(data.path().join("sweep/tune.html")).unwrap(), "");
}
