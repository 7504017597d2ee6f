//! `--queue Q` over a file, a directory or stdin (docs/simulate.md "Inputs"): the jobs of
//! other queues are left out of learning and comparing, and counted on stderr, in
//! `simulate`, `tune` and `suggest` alike; shards select alike, and a name no job has is an
//! empty history that says whose jobs it holds.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{format_output, retryctl, root, temp_home};

/// 30 jobs of queue `ml` (exit 3, then a success) and 10 of `batch` (exit 4 twice), mixed.
fn two_queues(dir: &Path) -> PathBuf {
    let mut text = String::new();
    for i in 0..40 {
        let job = if i % 4 == 3 {
            json!({"job": {"id": format!("b{i}"), "queue": "batch"}, "runs": [
                {"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 4}]},
                {"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 4}]}]})
        } else {
            json!({"job": {"id": format!("m{i}"), "queue": "ml"}, "runs": [
                {"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3}]},
                {"node": "n", "runFor": "60s", "outcome": "succeeded"}]})
        };
        text.push_str(&format!("{job}\n"));
    }
    let file = dir.join("week.jsonl");
    std::fs::write(&file, text).unwrap();
    file
}

const POLICY: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: retry-once
spec:
  retryLimit: 1
  defaultAction: Retry
  rules: []
---
apiVersion: armadaproject.io/v1
kind: Queue
name: ml
retryPolicies: [retry-once]
";

const NOTE: &str = "note: left out 10 jobs of other queues than `ml` (`--queue`)\n";

fn run(home: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    retryctl(home)
        .current_dir(root())
        .args(args)
        .write_stdin(stdin)
        .output()
        .unwrap()
}

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", format_output(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", format_output(out)))
}

#[test]
fn every_verb_replays_the_queues_jobs_alone_from_any_source() {
    let home = temp_home();
    let file = two_queues(home.path());
    let dir = home.path().join("weeks");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&file, dir.join("week.jsonl")).unwrap();
    let policy = home.path().join("p.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let (f, p, d) = (file.to_str().unwrap(), policy.to_str().unwrap(), dir.to_str().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    for (history, stdin) in [(f, ""), (d, ""), ("-", text.as_str())] {
        let out = run(
            home.path(),
            &["simulate", "-f", p, "--history", history, "--queue", "ml", "-o", "json"],
            stdin,
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), NOTE, "{history}");
        let v = json_of(&out);
        assert_eq!(v["summary"]["jobs"], 30, "{history}");
        assert_eq!(v["summary"]["outcomes"]["Succeeded"], 30, "{history}");
    }
    // tune's baseline and candidates, suggest's learning: the 30 jobs of `ml`.
    let out = run(
        home.path(),
        &[
            "tune",
            "-f",
            p,
            "--history",
            f,
            "--queue",
            "ml",
            "--vary",
            "retry-once:spec.retryLimit=0..1",
            "-o",
            "json",
        ],
        "",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with(NOTE),
        "{}",
        format_output(&out)
    );
    let tune = json_of(&out);
    assert_eq!(tune["tune"]["jobs"], 30);
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            f,
            "--queue",
            "ml",
            "--min-trials",
            "5",
            "-o",
            "json",
        ],
        "",
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with(NOTE),
        "{}",
        format_output(&out)
    );
    let v = json_of(&out);
    assert_eq!(v["suggest"]["jobs"], 30);
    let learned: Vec<&str> = v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["signature"].as_str().unwrap())
        .collect();
    assert_eq!(learned, ["exit:3@main"]);
    assert_eq!(v["suggest"]["proposal"]["comparison"]["jobs"], 30);
}

/// Shards of a file select the queue's jobs as one process does: merged, the same bytes.
#[test]
fn shards_of_a_file_select_the_queue_alike() {
    let home = temp_home();
    let file = two_queues(home.path());
    let policy = home.path().join("p.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let (f, p) = (file.to_str().unwrap(), policy.to_str().unwrap());
    let one = run(
        home.path(),
        &[
            "simulate",
            "-f",
            p,
            "--history",
            f,
            "--queue",
            "ml",
            "-o",
            "json",
            "--contention",
            "off",
        ],
        "",
    );
    let mut partials = Vec::new();
    for i in 0..2 {
        let part = home.path().join(format!("p{i}.json"));
        let shard = format!("{i}/2");
        let out = run(
            home.path(),
            &[
                "simulate",
                "-f",
                p,
                "--history",
                f,
                "--queue",
                "ml",
                "--shard",
                &shard,
                "-o",
                "partial",
                "--contention",
                "off",
            ],
            "",
        );
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        std::fs::write(&part, &out.stdout).unwrap();
        partials.push(part);
    }
    let mut args = vec!["merge", "-o", "json"];
    args.extend(partials.iter().map(|p| p.to_str().unwrap()));
    let merged = run(home.path(), &args, "");
    assert_eq!(merged.status.code(), Some(0), "{}", format_output(&merged));
    assert!(merged.stdout == one.stdout, "{}", format_output(&merged));
}

/// A queue no job of the history has: an empty history (exit 3, nothing on stdout), naming
/// the queues its jobs are of; `--allow-empty` for a script that expects quiet weeks.
#[test]
fn a_queue_no_job_has_is_an_empty_history_naming_the_queues() {
    let home = temp_home();
    let file = two_queues(home.path());
    let policy = home.path().join("p.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let (f, p) = (file.to_str().unwrap(), policy.to_str().unwrap());
    let out = run(
        home.path(),
        &["simulate", "-f", p, "--history", f, "--queue", "mll"],
        "",
    );
    assert_eq!(
        format_output(&out),
        format!(
            "exit: 3\n--- stdout\n--- stderr\nerror: no job in `{f}` (queue `mll`): nothing to compare\n\nhint: its jobs are of queues `ml`, `batch`; check `--queue`\n"
        )
    );
    let out = run(
        home.path(),
        &["simulate", "-f", p, "--history", f, "--queue", "mll", "--allow-empty"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
}
