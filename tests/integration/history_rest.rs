//! `retryctl history --lookout-url`: against a Lookout REST fixture server that answers per
//! contract/lookout/swagger.yaml (its pages, its errors, its damaged answers).

use serde_json::{json, Value};

use super::history::{history, ids};
use crate::support::pg::WINDOW;
use crate::support::stub::{Reply, Stub};
use crate::support::{retryctl, temp_home};

/// A swagger `job` with two runs: a failed one (exit 137, error looked up) and a success.
fn api_job(i: usize) -> Value {
    json!({
        "jobId": format!("api-{i:05}"), "queue": "ml", "owner": "alice", "jobSet": "s",
        "cpu": 1000, "memory": 2147483648u64, "ephemeralStorage": 0, "gpu": 0, "priority": 1,
        "submitted": "2026-11-16T08:00:00Z", "state": "SUCCEEDED",
        "lastTransitionTime": "2026-11-16T09:00:00Z", "duplicate": false,
        "annotations": {"team": "vision"}, "cluster": "c1", "runtimeSeconds": 60,
        "runs": [
            {"runId": format!("run-{i}-a"), "cluster": "c1", "node": "node-a", "leased": "2026-11-16T08:00:10Z",
             "pending": "2026-11-16T08:00:12Z", "started": "2026-11-16T08:00:15Z", "finished": "2026-11-16T08:10:15Z",
             "jobRunState": "RUN_FAILED", "exitCode": 137, "failureCategory": "oom"},
            {"runId": format!("run-{i}-b"), "cluster": "c1", "node": "node-b", "leased": "2026-11-16T08:11:15Z",
             "started": "2026-11-16T08:11:20Z", "finished": "2026-11-16T08:21:20Z", "jobRunState": "RUN_SUCCEEDED", "exitCode": 0}
        ]
    })
}

/// Lookout's REST API holding `total` jobs of queue `ml` ([`api_job`]), for the bearer token
/// `tok`; other files' tests export from it too.
pub(crate) fn lookout_stub(total: usize) -> Stub {
    Stub::start(move |req| match req.path.as_str() {
        "/api/v1/jobs" => {
            if req.header("authorization") != Some("Bearer tok") {
                return Reply::json(401, json!({"error": "unauthenticated"}));
            }
            let body: Value = serde_json::from_str(&req.body).unwrap();
            let (skip, take) = (
                body["skip"].as_u64().unwrap() as usize,
                body["take"].as_u64().unwrap() as usize,
            );
            let jobs: Vec<Value> = (skip..total.min(skip + take)).map(api_job).collect();
            Reply::json(200, json!({ "jobs": jobs }))
        }
        "/api/v1/jobRunError" => {
            let body: Value = serde_json::from_str(&req.body).unwrap();
            Reply::json(
                200,
                json!({"errorString": format!("OOMKilled in {}", body["runId"].as_str().unwrap())}),
            )
        }
        _ => Reply::json(404, json!({"error": "not found"})),
    })
}

#[test]
fn rest_source_pages_and_looks_up_run_errors() {
    let stub = lookout_stub(1100);
    let home = temp_home();
    let out = retryctl(home.path())
        .env("ARMADA_TOKEN", "tok")
        .args(["history", "--queue", "ml", "--jobset", "s", "--lookout-url", &stub.url])
        .args(WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 1100);
    assert_eq!(
        lines[1099],
        r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{"id":"api-01099","queue":"ml","jobSet":"s","annotations":{"team":"vision"},"memory":"2147483648","submittedAt":"2026-11-16T08:00:00Z","resources":{"cpu":"1"},"state":"succeeded"},"runs":[{"node":"node-a","queuedFor":"15s","runFor":"10m","containers":[{"exitCode":137,"message":"OOMKilled in run-1099-a"}],"category":"oom","executorPath":"failedPod"},{"node":"node-b","queuedFor":"1m5s","runFor":"10m","outcome":"succeeded"}]}"#
    );
    let reqs = stub.requests();
    let pages: Vec<Value> = reqs
        .iter()
        .filter(|r| r.path == "/api/v1/jobs")
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    assert_eq!(pages.len(), 3);
    assert_eq!(
        pages[1],
        json!({
            "filters": [
                {"field": "queue", "value": "ml", "match": "exact"},
                {"field": "jobSet", "value": "s", "match": "exact"},
                {"field": "submitted", "value": "2026-11-15T00:00:00Z", "match": "greaterThanOrEqualTo"},
                {"field": "submitted", "value": "2026-11-22T00:00:00Z", "match": "lessThan"}
            ],
            "order": {"field": "jobId", "direction": "ASC"},
            "skip": 500,
            "take": 500
        })
    );
    assert_eq!(reqs.iter().filter(|r| r.path == "/api/v1/jobRunError").count(), 1100);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "history: exported 1100 jobs and 2200 runs of queue `ml`\nwhat Lookout could not tell (counts, nothing guessed):\n      1100  exit codes are the first non-zero container's only (one unnamed container written)\n      1100  error texts kept whole: a hint the executor appended cannot be told from them without the deployed categorizer\n"
    );
}

#[test]
fn rest_source_errors_exit_4_and_5() {
    let stub = lookout_stub(3);
    let home = temp_home();
    // No token: 401 → 5.
    let out = history(home.path(), &["--queue", "ml", "--lookout-url", &stub.url]);
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: Lookout at `{}/api/v1/jobs` refused the credentials (401 Unauthorized)\n",
            stub.url
        )
    );
    // Nothing listening: 4; the credentials in the URL are taken out of it, never shown.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://me:hunter2@127.0.0.1:{port}");
    let out = history(home.path(), &["--queue", "ml", "--lookout-url", &url]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.ends_with(&format!(
            "error: Lookout at `http://127.0.0.1:{port}/api/v1/jobs` is unreachable: connection refused\n"
        )),
        "{err}"
    );
    assert!(!err.contains("hunter2"));
}

/// A Lookout (or a proxy before it) that ignores `skip` answers every page with the first:
/// the export stops at the second page (exit 4), naming its offset and why, instead of
/// looping forever; one that starts the next page back inside the last one (a body that
/// differs) stops at the first job met again.
#[test]
fn rest_source_stops_when_pages_repeat() {
    // Always the first full page, whatever `skip` asks.
    let stub = Stub::start(|req| match req.path.as_str() {
        "/api/v1/jobs" => Reply::json(200, json!({ "jobs": (0..500).map(api_job).collect::<Vec<_>>() })),
        "/api/v1/jobRunError" => Reply::json(200, json!({"errorString": "OOMKilled"})),
        _ => Reply::json(404, json!({"error": "not found"})),
    });
    let home = temp_home();
    // Killed after a minute should it loop, as it did (no exit 4 then).
    let out = retryctl(home.path())
        .args(["history", "--queue", "ml", "--lookout-url", &stub.url])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: Lookout at `{}` answered `/api/v1/jobs` with an unexpected body: the page at offset 500 is the page at offset 0 again (Lookout ignores `skip`?); stopped rather than loop\n",
            stub.url
        )
    );
    assert_eq!(ids(&out.stdout).len(), 500);
    assert_eq!(stub.requests().iter().filter(|r| r.path == "/api/v1/jobs").count(), 2);

    // The second page starts back at job 250, with a field that changes from answer to answer.
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stub = Stub::start(move |req| match req.path.as_str() {
        "/api/v1/jobs" => {
            let n = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let from = if n == 0 { 0 } else { 250 };
            let jobs: Vec<Value> = (from..from + 500).map(api_job).collect();
            Reply::json(200, json!({ "jobs": jobs, "answer": n }))
        }
        "/api/v1/jobRunError" => Reply::json(200, json!({"errorString": "OOMKilled"})),
        _ => Reply::json(404, json!({"error": "not found"})),
    });
    let out = history(home.path(), &["--queue", "ml", "--lookout-url", &stub.url]);
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: Lookout at `{}` answered `/api/v1/jobs` with an unexpected body: job `api-00250` at offset 500 (the page at offset 500) was met already at offset 250 (Lookout ignores `skip`?); stopped rather than repeat jobs\n",
            stub.url
        )
    );
}

/// A run error Lookout answers with a body that is not `{"errorString": "…"}` ends the export
/// (exit 4), naming the route and the run it was for.
#[test]
fn rest_source_names_the_run_whose_error_body_is_not_lookouts() {
    let jobs = vec![json!({
        "jobId": "api-1", "queue": "ml", "owner": "alice", "jobSet": "s", "cpu": 1000, "memory": 1024,
        "ephemeralStorage": 0, "gpu": 0, "priority": 1, "submitted": "2026-11-16T08:00:00Z",
        "state": "FAILED", "lastTransitionTime": "2026-11-16T09:00:00Z", "duplicate": false,
        "annotations": {}, "runs": [{"runId": "r1", "cluster": "c1", "node": "n", "leased": "2026-11-16T08:00:10Z",
               "started": "2026-11-16T08:00:15Z", "finished": "2026-11-16T08:01:00Z", "jobRunState": "RUN_FAILED", "exitCode": 1}]
    })];
    let stub = Stub::start(move |req| match req.path.as_str() {
        "/api/v1/jobs" => Reply::json(200, json!({ "jobs": jobs })),
        "/api/v1/jobRunError" => Reply::json(200, json!({ "errorString": 1 })),
        _ => Reply::json(404, json!({"error": "not found"})),
    });
    let home = temp_home();
    let out = history(home.path(), &["--queue", "ml", "--lookout-url", &stub.url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(
        err,
        format!(
            "error: Lookout at `{}` answered `/api/v1/jobRunError` with an unexpected body: for run `r1`: \
             `1` where `\"` was expected\n",
            stub.url
        )
    );
}
