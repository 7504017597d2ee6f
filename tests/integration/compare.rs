//! `retryctl simulate --baseline` (docs/what-if.md): one history replayed under an old and a new
//! policy set, and what the change does, with exact outcomes.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::{format_output, retryctl, temp_home};

const QUEUE: &str = "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nretryPolicies: [p]\n";

/// Old: one retry on preemption, exit code 2 retried. New: three retries on preemption,
/// exit code 2 fails at once.
const OLD: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n    - {action: Retry, onExitCodes: {operator: In, values: [2]}}\n";
const NEW: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n    - {action: Fail, onExitCodes: {operator: In, values: [2]}}\n";

/// a: rescued (a third run the old policy never starts, 1h); b: unchanged; c: lost (its
/// second run, 1h, is no longer started); d: would retry past the end of its history.
const HISTORY: &str = r#"{"job":{"id":"a","queue":"q"},"runs":[{"conditions":["Preempted"],"runFor":"10m"},{"conditions":["Preempted"],"runFor":"20m"},{"outcome":"succeeded","runFor":"1h"}]}
{"job":{"id":"b","queue":"q"},"runs":[{"conditions":["Preempted"],"runFor":"5m"},{"outcome":"succeeded","runFor":"1h"}],"expect":{"final":"Failed"}}
{"job":{"id":"c","queue":"q"},"runs":[{"containers":[{"name":"main","exitCode":2}],"runFor":"30m"},{"outcome":"succeeded","runFor":"1h"}]}
{"job":{"id":"d","queue":"q"},"runs":[{"conditions":["Preempted"],"runFor":"1m"},{"conditions":["Preempted"],"runFor":"2m"}]}
"#;

fn setup(dir: &Path) {
    crate::support::write_what_if(dir, OLD, NEW, QUEUE, HISTORY);
}

fn compare(dir: &Path, extra: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path())
        .current_dir(dir)
        .args(["simulate", "-f", "new", "--baseline", "old", "--history", "h.jsonl"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn the_table_names_each_changed_job_and_the_totals_like_a_plan() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // Job b's failing expectation is not checked in this mode: exit 0. d's estimate: it is
    // Pending at depth 2 with 2 runs left (retry 3, then the limit). Its class (Preempted)
    // has 4 trials (a: P→P at depth 1, P→ok at 2; b: P→ok; d: P→P), under 5, and so has
    // every class at depths 2 and 3: the pooled rate, those and c's exit 2→ok, 3 successes
    // of 5, Wilson 95% (0.2307, 0.8824). pSucceeded = 1 − 0.4² = 84%, bounds 1 − (1 −
    // 0.2307)² = 41% and 1 − (1 − 0.8824)² = 99%. Expected run time: the mean runFor of every
    // next run (20m, 1h, 1h, 1h, 2m: 40.4m, pooled too) × (1 + 0.4) = 3393.6 s.
    assert_eq!(
        format_output(&compare(dir.path(), &[])),
        "exit: 0
--- stdout
jobs the candidate policies change (baseline → candidate):
  ~ a: Failed after 1 retry → Succeeded after 2 retries  (rescued)
  ~ c: Succeeded after 1 retry → Failed after 0 retries  (lost)
  ~ d: Failed after 1 retry → Pending after 2 retries  (toPending; estimate 84% (41–99%) over 2 runs left; next run 60%, basis all: 5 trials)

Plan: 1 rescued, 1 lost, 1 → Pending, 0 retried differently; 3 of 4 jobs change.
  Succeeded → Failed: 1  (lost)
  Failed → Succeeded: 1  (rescued)
  Failed → Pending: 1  (would retry past the end of the recorded history)
  retries:   +2 added, -1 removed
  delay:     +2s added, -0s removed
  compute:   +1h added, -1h removed (runFor of the runs one side starts and the other does not)
  record:    4h8m recorded; replayed: 3h8m by the baseline, 3h8m by the candidate
  today's policy explains 3 of 4 jobs (1 contradicts it: a)
  estimate:  ≈ 0.8 (0.4–1.0) of 1 job Failed → Pending would succeed over the runs the candidate has left
  expected:  ≈ 56m34s more run time for the 1 job Pending in the candidate
             (estimates: this history's share of failed runs whose next run succeeded, by failure class and depth; what they assume: docs/estimates.md)
--- stderr
"
    );
}

#[test]
fn json_lists_changed_jobs_with_both_sides_and_the_totals() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = compare(dir.path(), &["-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["comparison"];
    let changed = crate::support::changed_jobs(&v);
    let s = |x: &str| x.to_string();
    assert_eq!(
        changed,
        vec![
            (s("a"), s("Failed"), 1, s("Succeeded"), 2),
            (s("c"), s("Succeeded"), 1, s("Failed"), 0),
            (s("d"), s("Failed"), 1, s("Pending"), 2),
        ]
    );
    assert_eq!(c["changedJobs"][0]["computeAdded"], "1h");
    assert_eq!(c["changedJobs"][1]["computeRemoved"], "1h");
    assert_eq!(
        (c["jobs"].as_u64(), c["changed"].as_u64(), c["unchanged"].as_u64()),
        (Some(4), Some(3), Some(1))
    );
    let t = &c["transitions"];
    assert_eq!(
        (
            t["rescued"].as_u64(),
            t["lost"].as_u64(),
            t["toPending"].as_u64(),
            t["other"].as_u64()
        ),
        (Some(1), Some(1), Some(1), Some(0))
    );
    assert_eq!(t["byState"]["Failed → Succeeded"], 1);
    assert_eq!(c["retries"], serde_json::json!({"added": 2, "removed": 1}));
    assert_eq!(c["delay"], serde_json::json!({"added": "2s", "removed": "0s"}));
    // The expected run time of d's runs left (see the table test); no job requests anything:
    // a, c (compute added, removed) and d (Pending) are counted without requests.
    assert_eq!(
        c["compute"],
        serde_json::json!({
            "added": "1h",
            "removed": "1h",
            "expected": 2424.0 * 1.4,
            // Every recorded run (a: 1h30m, b: 1h5m, c: 1h30m, d: 3m); each side leaves
            // out one hour-long run the other starts.
            "recorded": "4h8m",
            "replayed": {"baseline": "3h8m", "candidate": "3h8m"},
            "gpuHours": {"added": 0.0, "removed": 0.0, "expected": 0.0, "recorded": 0.0},
            "cpuHours": {"added": 0.0, "removed": 0.0, "expected": 0.0, "recorded": 0.0},
            "withoutResources": 3,
        })
    );
}

#[test]
fn exit_code_says_whether_anything_changed() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    assert_eq!(compare(dir.path(), &["--exit-code"]).status.code(), Some(1));
    // The same policies on both sides: nothing changes, exit 0 even with --exit-code.
    let home = temp_home();
    let same = retryctl(home.path())
        .current_dir(dir.path())
        .args([
            "simulate",
            "-f",
            "old",
            "--baseline",
            "old",
            "--history",
            "h.jsonl",
            "--exit-code",
        ])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&same),
        "exit: 0
--- stdout
jobs the candidate policies change (baseline → candidate):
  (none)

Plan: 0 rescued, 0 lost, 0 → Pending, 0 retried differently; 0 of 4 jobs change.
  retries:   +0 added, -0 removed
  delay:     +0s added, -0s removed
  compute:   +0s added, -0s removed (runFor of the runs one side starts and the other does not)
  record:    4h8m recorded; replayed: 3h8m by the baseline, 3h8m by the candidate
  today's policy explains 3 of 4 jobs (1 contradicts it: a)
--- stderr
"
    );
}

#[test]
fn a_job_one_side_cannot_replay_is_an_error_naming_the_side() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // The baseline's queue attaches a policy that the baseline does not define.
    fs::write(
        dir.path().join("old/q.yaml"),
        "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nretryPolicies: [p, gone]\n",
    )
    .unwrap();
    let out = compare(dir.path(), &["-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: h.jsonl:1: job `a`: baseline: policy `gone` (referenced by queue `q`) is not among the documents given with -f (known: `p`)\n"),
        "{stderr}"
    );
    assert!(stderr.contains("not compared: 4 jobs with errors"), "{stderr}");
    assert_eq!(out.stdout, b"");
}
