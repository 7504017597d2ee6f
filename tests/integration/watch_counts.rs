//! `retryctl watch`'s counters beside `suggest`'s numbers over the same jobs (docs/watch.md
//! "What each metric counts"), against a real PostgreSQL: the retries the baseline's
//! categorizer says collide that the record shows ran.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::incidents::{EXECUTOR, POLICIES};
use crate::support::pg;
use crate::support::{format_output, lookout_rows, retryctl, temp_home};
use crate::watch::{bare_watch, Metrics, Watch};

/// watch of `dir`'s `current/` on `dsn`, queue `ml`, from 30 days back.
fn command(home: &Path, dir: &Path, dsn: &str) -> Command {
    let mut cmd = bare_watch(home, dir, dsn);
    cmd.args(["--baseline", "current/", "--queue", "ml", "--since", "30d"])
        .args(["--listen", "127.0.0.1:0", "--poll", "1s", "--state"])
        .arg(home.join("watch.json"));
    cmd
}

/// Three connection resets whose retry ran (it succeeded: the pod was deleted after all), two
/// whose retry collided (the lease returned without a word), and a CUDA error (its pod deleted:
/// no collision) retried into a success.
fn week() -> String {
    let mut jobs = Vec::new();
    let reset = |id: String, next: Value| {
        json!({"job": {"id": id, "queue": "ml", "submittedAt": "2026-11-10T10:00:00Z"},
            "runs": [
                {"node": "node-1", "runFor": "60s", "category": "network", "containers": [{"name": "main", "exitCode": 1, "message": "ConnectionResetError: reset"}]},
                next]})
    };
    for i in 0..3 {
        jobs.push(reset(
            format!("ran-{i}"),
            json!({"node": "node-1", "runFor": "60s", "outcome": "succeeded"}),
        ));
    }
    for i in 0..2 {
        jobs.push(reset(
            format!("collided-{i}"),
            json!({"node": "node-1", "outcome": "leaseReturned"}),
        ));
    }
    jobs.push(json!({"job": {"id": "cuda", "queue": "ml", "submittedAt": "2026-11-10T10:00:00Z"},
        "runs": [
            {"node": "node-1", "runFor": "60s", "category": "gpu", "containers": [{"name": "main", "exitCode": 1, "message": "CUDA error: illegal memory access"}]},
            {"node": "node-2", "runFor": "60s", "outcome": "succeeded"}]}));
    jobs.iter().map(|j| format!("{j}\n")).collect()
}

#[test]
fn retries_said_to_collide_that_ran_are_counted_as_suggest_counts_them() {
    let Some(mut db) = pg::lookout_db("watch_collisions_ran") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("current")).unwrap();
    std::fs::write(d.join("current/executor.yaml"), EXECUTOR).unwrap();
    std::fs::write(d.join("current/policies.yaml"), POLICIES).unwrap();
    let week = week();
    std::fs::write(d.join("week.jsonl"), &week).unwrap();
    lookout_rows::load_ended(&mut db.client, &week, EXECUTOR, Some("1 minute"));
    // suggest's count over the jobs as history exports them from the same rows.
    let home = temp_home();
    let exported = retryctl(home.path())
        .current_dir(d)
        .env("LOOKOUT_DB", &db.dsn)
        .args(["history", "--lookout-db", &db.dsn, "--queue", "ml", "--since", "30d"])
        .args(["--output-file", "week-db.jsonl"])
        .output()
        .unwrap();
    assert_eq!(exported.status.code(), Some(0), "{}", format_output(&exported));
    let out = retryctl(home.path())
        .current_dir(d)
        .args([
            "suggest",
            "--history",
            "week-db.jsonl",
            "--baseline",
            "current/",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", format_output(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["suggest"]["collisionsRan"], 3, "{}", v["suggest"]);
    // watch's, over the same rows: the same 3, beside the 5 retries it says collide.
    let mut w = Watch::spawn(command(home.path(), d, &db.dsn));
    let m = w.until("the 6 jobs", |m| m.jobs() == 6.0);
    let q = |m: &Metrics, family: &str| m.sum(family, &["queue=\"ml\""]);
    assert_eq!(q(&m, "retryctl_watch_collisions_ran_total"), 3.0, "{}", m.text);
    assert_eq!(q(&m, "retryctl_watch_collisions_total"), 5.0, "{}", m.text);
}

/// A futile retry names its failure (docs/watch.md "What each metric counts"): 22 failures no
/// category takes (`category="none"`), each its own exit code, the one of exit code `10 + i`
/// failing `i + 1` jobs twice (today's policy retries each once, in vain). The 20 with the most
/// futile retries over the window have a `signature` of their own, as suggest writes it
/// (`exit:31@main`); the two with the fewest (1 and 2 jobs) count under `other`.
#[test]
fn a_futile_retry_carries_its_signature_and_a_queue_has_twenty_at_most() {
    let Some(mut db) = pg::lookout_db("watch_signatures") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("current")).unwrap();
    std::fs::write(
        d.join("current/policies.yaml"),
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: ml-today\nretryLimit: 1\ndefaultAction: Retry\n",
    )
    .unwrap();
    let mut week = String::new();
    for i in 0..22u64 {
        for j in 0..=i {
            let failed =
                json!({"node": "node-1", "runFor": "60s", "containers": [{"name": "main", "exitCode": 10 + i}]});
            let job = json!({"job": {"id": format!("j-{i}-{j}"), "queue": "ml", "submittedAt": "2026-11-10T10:00:00Z", "resources": {"gpu": "1"}},
                "runs": [failed, failed]});
            week.push_str(&format!("{job}\n"));
        }
    }
    lookout_rows::load_ended(&mut db.client, &week, "", Some("1 minute"));
    let home = temp_home();
    let mut w = Watch::spawn(command(home.path(), d, &db.dsn));
    let m = w.until("the 253 jobs", |m| m.jobs() == 253.0);
    let futile: Vec<(&str, f64)> = m
        .series
        .iter()
        .filter_map(|(k, v)| {
            let labels = k.strip_prefix("retryctl_watch_futile_retries_total{")?;
            Some((labels, *v))
        })
        .collect();
    assert_eq!(futile.len(), 21, "{}", m.text);
    for i in 2..22u64 {
        let labels = format!(
            "queue=\"ml\",rule=\"ml-today/default\",category=\"none\",signature=\"exit:{}@main\"}}",
            10 + i
        );
        assert!(
            futile.contains(&(labels.as_str(), (i + 1) as f64)),
            "{labels} in {futile:?}"
        );
    }
    let other = "queue=\"ml\",rule=\"ml-today/default\",category=\"none\",signature=\"other\"}";
    assert!(futile.contains(&(other, 3.0)), "{futile:?}");
    // The GPU-seconds beside them carry the same signatures: a minute of 1 GPU a retry.
    let gpu = m.sum(
        "retryctl_watch_futile_retry_gpu_seconds_total",
        &["signature=\"exit:31@main\""],
    );
    assert_eq!(gpu, 22.0 * 60.0, "{}", m.text);
}
