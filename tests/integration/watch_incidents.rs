//! `retryctl watch`'s incident and busy gauges (docs/watch.md "Incident windows"), by
//! suggest's rule (docs/reference/suggest.md "Incidents"), in Lookout's rows: three UTC days
//! of the usual mix of failures (three failures, on 13 nodes, each hour's jobs a job set of
//! their own), then one hour that is far busier than the same hour of the other days. A batch
//! of 250 ordinary jobs of that mix is a surge (`retryctl_watch_busy_active{kind="surge"}` 1,
//! `retryctl_watch_incidents_active` 0, no failed run counted as an incident's); one job set's
//! 120 jobs failing alike are its burst; an outage of the registry over 6 job sets and every
//! node is an incident, its failed runs counted apart, and a later ordinary hour puts the
//! gauge back to 0 and adds nothing.

use serde_json::{json, Value};

use retryctl::model::failure_history::Timestamp;

use crate::support::{lookout_rows, pg, temp_home};
use crate::watch::{state_file, Metrics, Watch};

const HOUR: i64 = 3_600;

/// A failure: exit code, reason, message.
type Failure = (i64, &'static str, &'static str);

const OOM: Failure = (137, "OOMKilled", "");
const CONFIG: Failure = (2, "Error", "ValueError: unknown config key");
const CUDA: Failure = (139, "Error", "CUDA error: an illegal memory access was encountered");
const UNAVAILABLE: Failure = (1, "Error", "rpc error: code = Unavailable desc = registry unavailable");

/// A job of queue `ml` in job set `set`, submitted (and so ended, in Lookout's rows) at `at`
/// (seconds since the epoch): `failures` runs failing with `failure` on `node`, then one
/// succeeding unless it failed 4 times.
fn job(id: &str, set: &str, at: i64, failure: Failure, failures: usize, node: &str) -> String {
    let (code, reason, message) = failure;
    let mut container = json!({"name": "main", "exitCode": code, "reason": reason});
    if !message.is_empty() {
        container["message"] = json!(message);
    }
    let failed = json!({"node": node, "queuedFor": "1s", "runFor": "1m",
        "containers": [container], "executorPath": "failedPod"});
    let mut runs: Vec<Value> = vec![failed; failures];
    if failures < 4 {
        runs.push(json!({"node": "node-ok", "queuedFor": "1s", "runFor": "1m", "outcome": "succeeded"}));
    }
    json!({"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
        "job": {"id": id, "queue": "ml", "jobSet": set,
                "submittedAt": Timestamp(at * 1_000_000_000).to_string(),
                "resources": {"cpu": "1", "gpu": "1"}},
        "runs": runs})
    .to_string()
}

/// Ordinary job `i` of the usual mix: 1 in 4 never fails; the others fail once with an OOM
/// kill, the config error or a CUDA error in turn, on node `7i mod 13`.
fn usual(id: &str, set: &str, at: i64, i: usize) -> String {
    let node = format!("node-{}", i * 7 % 13);
    match i % 4 {
        3 => job(id, set, at, OOM, 0, &node),
        k => job(id, set, at, [OOM, CONFIG, CUDA][k], 1, &node),
    }
}

/// The first hour of the history: 80 hours ago, on the hour.
fn base() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    (now / HOUR - 80) * HOUR
}

/// Hours 0 to 71 (three UTC days at least), 8 ordinary jobs each (6 failing), in job set
/// `batch-H`; and hour 74's own 8.
fn usual_days(base: i64) -> Vec<String> {
    let mut lines = Vec::new();
    for h in (0..72).chain([74]) {
        for k in 0..8 {
            lines.push(usual(
                &format!("usual-{h:02}-{k}"),
                &format!("batch-{h}"),
                base + h * HOUR + k * 420,
                k as usize,
            ));
        }
    }
    lines
}

/// Watch over the usual days and `busy` (at hour 74), once it has counted every job: its
/// scrape, the database and the watch (for what a test adds next).
fn watched(name: &str, busy: impl Fn(i64) -> Vec<String>) -> Option<(Metrics, pg::Db, Watch, tempfile::TempDir)> {
    let mut db = pg::lookout_db(name)?;
    let base = base();
    let mut lines = usual_days(base);
    lines.extend(busy(base + 74 * HOUR));
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    let total = lines.len() as f64;
    let m = w.until("every job counted", |m| m.jobs() == total);
    Some((m, db, w, home))
}

/// The gauges: (incidents_active, busy_active{kind="burst"}, busy_active{kind="surge"}),
/// each series required.
fn gauges(m: &Metrics) -> (f64, f64, f64) {
    let one = |series: &str| {
        *m.series
            .get(series)
            .unwrap_or_else(|| panic!("no `{series}` in the scrape:\n{}", m.text))
    };
    (
        one("retryctl_watch_incidents_active"),
        one("retryctl_watch_busy_active{kind=\"burst\"}"),
        one("retryctl_watch_busy_active{kind=\"surge\"}"),
    )
}

/// The scrape's gauges are `want` and `retryctl_watch_incident_failed_runs_total{queue="ml"}`
/// is `incident_runs`.
fn expect(m: &Metrics, want: (f64, f64, f64), incident_runs: f64) {
    assert_eq!(gauges(m), want, "{}", m.text);
    assert_eq!(
        m.sum("retryctl_watch_incident_failed_runs_total", &["queue=\"ml\""]),
        incident_runs,
        "{}",
        m.text
    );
}

#[test]
fn a_batch_of_250_ordinary_jobs_is_a_surge_and_pages_nobody() {
    // 250 jobs of the usual mix in 25 job sets of 10: 187 failing where the same hour of the
    // other days had 6 (or none, before the history): no job set explains it, and neither
    // the top signature (a third of the failing jobs, as always) nor the top node is over
    // its share.
    let Some((m, ..)) = watched("watch_surge", |at| {
        (0..250)
            .map(|i| {
                usual(
                    &format!("sweep-{i:03}"),
                    &format!("sweep-{}", i / 10),
                    at + 300 + i as i64 * 12,
                    i,
                )
            })
            .collect()
    }) else {
        return;
    };
    expect(&m, (0.0, 0.0, 1.0), 0.0);
}

#[test]
fn one_job_sets_batch_failing_alike_is_its_burst() {
    // 120 jobs of `sweep-17`, each failing 4 times on the config error: without them the
    // hour holds its usual 6 failing jobs, not unusual.
    let Some((m, ..)) = watched("watch_burst", |at| {
        (0..120)
            .map(|i| {
                job(
                    &format!("sweep-{i:03}"),
                    "sweep-17",
                    at + 300 + i * 25,
                    CONFIG,
                    4,
                    &format!("node-{}", i % 13),
                )
            })
            .collect()
    }) else {
        return;
    };
    expect(&m, (0.0, 1.0, 0.0), 0.0);
}

#[test]
fn an_outage_over_many_job_sets_and_nodes_is_an_incident_and_its_failed_runs_are_counted_apart() {
    // 120 jobs of 6 job sets on every node, each failing 4 times on the registry: no job set
    // explains the hour, and the registry's failure is far over its share.
    let Some((m, mut db, mut w, _home)) = watched("watch_outage", |at| {
        (0..120)
            .map(|i| {
                let (id, set, node) = (
                    format!("outage-{i:03}"),
                    format!("train-{}", i % 6),
                    format!("node-{}", i % 13),
                );
                job(&id, &set, at + 300 + i * 25, UNAVAILABLE, 4, &node)
            })
            .collect()
    }) else {
        return;
    };
    // The hour's failed runs: the outage's 480 and the usual jobs' 6.
    expect(&m, (1.0, 0.0, 0.0), 486.0);
    // An ordinary hour after it: the gauge falls back, the outage's count stays.
    let after = base() + 78 * HOUR;
    lookout_rows::load(&mut db, &(usual("after", "after", after, 0) + "\n"), "");
    let total = m.jobs() + 1.0;
    let m = w.until("the next hour counted", |m| m.jobs() == total);
    expect(&m, (0.0, 0.0, 0.0), 486.0);
}
