//! Unknown is not zero (docs/estimates.md "The sums", docs/tune.md): a history with no retry in
//! it (the shape of a public trace that records one attempt a job) has no trial, so no Pending
//! job has an estimate. `simulate --baseline` counts every such job in `withoutEstimate`,
//! whichever side it is Pending on, and `tune` says it beside EXPECTED and recommends no
//! candidate on a gain that leaves them out.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{format_output, retryctl, temp_home};

/// 200 jobs of one attempt each, 120 failing with exit code 1 and 80 succeeding; `limit0.yaml`
/// and `limit3.yaml`, policy `p` retrying everything 0 and 3 times.
fn setup(dir: &Path) {
    let mut lines = String::new();
    for i in 0..200 {
        let runs = match i % 5 < 3 {
            true => json!([{"runFor": "300s", "containers": [{"name": "main", "exitCode": 1, "message": "boom"}]}]),
            false => json!([{"runFor": "300s", "outcome": "succeeded"}]),
        };
        let at = format!("2026-11-16T{:02}:{:02}:00Z", i % 24, i * 7 % 60);
        let line = json!({"job": {"id": format!("j{i:03}"), "queue": "q", "submittedAt": at}, "runs": runs});
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(dir.join("h.jsonl"), lines).unwrap();
    for n in [0, 3] {
        std::fs::write(
            dir.join(format!("limit{n}.yaml")),
            format!("apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata:\n  name: p\nspec:\n  retryLimit: {n}\n  defaultAction: Retry\n  rules: []\n"),
        )
        .unwrap();
    }
}

fn run(dir: &Path, args: &[&str]) -> String {
    let home = temp_home();
    let out = retryctl(home.path()).current_dir(dir).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn compared(dir: &Path, candidate: &str, baseline: &str) -> (Value, Value) {
    let out = run(
        dir,
        &[
            "simulate",
            "-f",
            candidate,
            "--baseline",
            baseline,
            "--history",
            "h.jsonl",
            "-o",
            "json",
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let c = &v["comparison"];
    (c["transitions"]["byState"].clone(), c["estimate"].clone())
}

#[test]
fn pending_jobs_without_an_estimate_are_counted_on_either_side() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // Limit 0 against limit 3: the baseline's retries are not in the record (Pending), the
    // candidate fails them.
    let (by_state, estimate) = compared(dir.path(), "limit0.yaml", "limit3.yaml");
    assert_eq!(by_state, json!({"Pending → Failed": 120}));
    assert_eq!(estimate["withoutEstimate"], 120, "{estimate}");
    // And the other way.
    let (by_state, estimate) = compared(dir.path(), "limit3.yaml", "limit0.yaml");
    assert_eq!(by_state, json!({"Failed → Pending": 120}));
    assert_eq!(estimate["withoutEstimate"], 120, "{estimate}");
    assert_eq!(estimate["expectedRescued"], 0.0);
}

#[test]
fn tune_says_the_pending_jobs_without_an_estimate_and_recommends_no_gain_on_them() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let sweep = [
        "tune",
        "-f",
        "limit0.yaml",
        "--vary",
        "p:spec.retryLimit=0..3",
        "--history",
        "h.jsonl",
    ];
    let table = run(dir.path(), &sweep);
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(['1', '2', '3', '4']))
        .collect();
    assert_eq!(rows.len(), 4, "{table}");
    assert!(
        rows[0].contains("  0  ") && !rows[0].contains("without estimate"),
        "{table}"
    );
    for row in &rows[1..] {
        assert!(row.contains("80.0 (120 Pending without estimate)"), "{table}");
    }
    assert!(
        table.contains("3 of 4 candidates not recommended: their comparison has Pending jobs without an estimate (no trial of their class at any depth), which EXPECTED counts as 0"),
        "{table}"
    );
    let v: Value = serde_json::from_str(&run(dir.path(), &[&sweep[..], &["-o", "json"]].concat())).unwrap();
    let t = &v["tune"];
    assert_eq!(t["recommended"], Value::Null);
    for c in t["candidates"].as_array().unwrap() {
        let unknown = c["estimate"]["withoutEstimate"].as_u64().unwrap();
        let limit = c["values"]["p:spec.retryLimit"].as_str().unwrap();
        assert_eq!(unknown, if limit == "0" { 0 } else { 120 }, "{c}");
        let excluded = c.get("excluded").cloned().unwrap_or(json!([]));
        assert_eq!(
            excluded.as_array().unwrap().contains(&json!("withoutEstimate")),
            unknown > 0,
            "{c}"
        );
    }
}
