//! `retryctl watch`'s incident metrics (docs/watch.md "Incident windows"): two days of jobs at
//! their usual rate, then one hour of an outage (30 jobs, every run failing), in Lookout's
//! rows. Once watch has counted them, `retryctl_watch_incidents_active` is 1 and
//! `retryctl_watch_incident_failed_runs_total` holds the outage's failed runs and no other;
//! a later ordinary hour puts the gauge back to 0 and adds nothing.

use serde_json::{json, Value};

use retryctl::model::failure_history::Timestamp;

use crate::support::{lookout_rows, pg, temp_home};
use crate::watch::{state_file, Watch};

const HOUR: i64 = 3_600;

/// A job of queue `ml` submitted at `at` (seconds since the epoch) whose first `failures` runs
/// fail (exit 1, `boom`), then one succeeds when `then_succeeds`.
fn job(id: &str, at: i64, failures: usize, then_succeeds: bool) -> String {
    let failed = json!({"node": "node-1", "queuedFor": "1s", "runFor": "1m",
        "containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": "boom"}],
        "executorPath": "failedPod"});
    let mut runs: Vec<Value> = vec![failed; failures];
    if then_succeeds {
        runs.push(json!({"node": "node-2", "queuedFor": "1s", "runFor": "1m", "outcome": "succeeded"}));
    }
    json!({"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
        "job": {"id": id, "queue": "ml", "submittedAt": Timestamp(at * 1_000_000_000).to_string(),
                "resources": {"cpu": "1", "gpu": "1"}},
        "runs": runs})
    .to_string()
}

#[test]
fn an_outage_hour_is_an_incident_and_its_failed_runs_are_counted_apart() {
    let Some(mut db) = pg::lookout_db("watch_incidents") else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Hour 0 starts 60 hours ago, on the hour.
    let base = (now / HOUR - 60) * HOUR;
    let mut lines = Vec::new();
    // Two days at the usual rate: 2 jobs an hour, each failing once, then succeeding.
    for h in 0..48 {
        for (k, minute) in [10, 30].into_iter().enumerate() {
            lines.push(job(
                &format!("usual-{h:02}-{k}"),
                base + h * HOUR + minute * 60,
                1,
                true,
            ));
        }
    }
    // Hour 50: 30 jobs a minute apart, every run failing (3 each: 90 failed runs).
    for i in 0..30 {
        lines.push(job(&format!("outage-{i:02}"), base + 50 * HOUR + i * 60, 3, false));
    }
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    let m = w.until("the outage counted", |m| m.jobs() == 126.0);
    assert_eq!(m.sum("retryctl_watch_incidents_active", &[]), 1.0, "{}", m.text);
    assert_eq!(
        m.sum("retryctl_watch_incident_failed_runs_total", &["queue=\"ml\""]),
        90.0,
        "{}",
        m.text
    );
    // An ordinary hour after it: the gauge falls back, the outage's count stays.
    lookout_rows::load(&mut db, &(job("after", base + 58 * HOUR, 1, true) + "\n"), "");
    let m = w.until("the next hour counted", |m| m.jobs() == 127.0);
    assert_eq!(m.sum("retryctl_watch_incidents_active", &[]), 0.0, "{}", m.text);
    assert_eq!(
        m.sum("retryctl_watch_incident_failed_runs_total", &[]),
        90.0,
        "{}",
        m.text
    );
}
