//! `history --lookout-db` on runs whose `job_run.debug` holds the executor's debug document
//! and whose `job_run.error` is the executor's composed per-container text (docs/lookout.md,
//! "Pod errors, events and containers"): on a real PostgreSQL built from Lookout's migrations.

use crate::support::pg;
use crate::support::{retryctl, temp_home};

/// A `job_run` row: `(run, state, exit_code, error, debug)`; `error` is zlib-compressed as
/// Lookout's ingester stores it, `debug` is the column's bytes as given (`None`: NULL).
type RunRow<'a> = (&'a str, i16, Option<i32>, Option<&'a str>, Option<Vec<u8>>);

/// A job of queue `pe` and its runs, one a minute from 10:00.
fn insert(db: &mut pg::Db, job: &str, runs: &[RunRow]) {
    db.client
        .execute(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations) \
             VALUES ($1, 'pe', 'o', 's', 1000, 1073741824, 0, 0, 1, '2026-11-16 09:00:00', 5, now(), 0, '{}'::jsonb)",
            &[&job],
        )
        .unwrap();
    for (m, (run, state, exit, error, debug)) in runs.iter().enumerate() {
        let at = |s: u32| format!("2026-11-16 10:{m:02}:{s:02}");
        db.client
            .execute(
                "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, error, debug, failure_category) \
                 VALUES ($1, $2, 'c', 'node-1', $3::text::timestamp, $3::text::timestamp, $4::text::timestamp, $5::text::timestamp, $6, $7, $8, $9, 'infrastructure')",
                &[run, &job, &at(0), &at(1), &at(2), state, exit, &error.map(pg::zlib), debug],
            )
            .unwrap();
    }
}

const DOC: &str = r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Failed","reason":"UnexpectedAdmissionError","restartPolicy":"Never","initContainers":[{"name":"fetch","state":"terminated","exitCode":2,"reason":"Error"}],"containers":[{"name":"main","state":"terminated","exitCode":137,"reason":"OOMKilled","runSeconds":40}],"events":[{"type":"Normal","reason":"Scheduled","from":"default-scheduler","message":"Successfully assigned pe/p to node-1","timestamp":"2026-11-16T10:00:00Z"},{"type":"Warning","reason":"UnexpectedAdmissionError","from":"kubelet","message":"Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0","timestamp":"2026-11-16T10:00:01Z"}]},"node":{"name":"node-1","exists":true,"events":[{"type":"Warning","reason":"NodeNotReady","message":"the node's, not the pod's"}]}}"#;

const PULL: &str = r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Pending","containers":[{"name":"main","state":"waiting","reason":"ErrImagePull"}],"events":[{"type":"Warning","reason":"Failed","from":"kubelet","message":"Failed to pull image \"x:1\": no match for platform in manifest"}]}}"#;

#[test]
fn lookout_debug_documents_and_composed_errors_are_exported_exactly() {
    let Some(mut db) = pg::lookout_db("poderrors") else {
        return;
    };
    let composed = "Container main failed with exit code 137 because OOMKilled: \nContainer fetch failed with exit code 2 because Error: fetch: 404\nwhile reading s3://b/k\n";
    insert(
        &mut db,
        "pe-1",
        &[
            ("r1", 4, Some(137), Some(composed), Some(pg::zlib(DOC))),
            ("r2", 4, Some(1), Some("Failed to pull image"), Some(pg::zlib(PULL))),
            // An older executor's free text: read as nothing, counted.
            (
                "r3",
                4,
                Some(1),
                Some("Container main failed with exit code 1 because Error: x\n"),
                Some(pg::zlib("Events:\n  Warning  Failed  kubelet")),
            ),
            // Not a zlib stream: the row does not decode, so the run is left out and reported.
            ("r4", 4, Some(1), None, Some(b"not zlib".to_vec())),
            ("r5", 3, Some(0), None, None),
        ],
    );
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["history", "--queue", "pe", "--lookout-db", &db.dsn])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        concat!(
            r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{"id":"pe-1","queue":"pe","memory":"1073741824","submittedAt":"2026-11-16T09:00:00Z","resources":{"cpu":"1"}},"runs":["#,
            r#"{"node":"node-1","queuedFor":"1h1s","runFor":"1s","containers":[{"name":"main","exitCode":137,"reason":"OOMKilled"},{"name":"fetch","init":true,"exitCode":2,"reason":"Error","message":"fetch: 404\nwhile reading s3://b/k"}],"category":"infrastructure","podError":"UnexpectedAdmissionError","events":[{"type":"Normal","reason":"Scheduled","message":"Successfully assigned pe/p to node-1"},{"type":"Warning","reason":"UnexpectedAdmissionError","message":"Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0"}]},"#,
            r#"{"node":"node-1","queuedFor":"59s","runFor":"1s","containers":[{"exitCode":1,"message":"Failed to pull image"}],"category":"infrastructure","podError":"ErrImagePull","events":[{"type":"Warning","reason":"Failed","message":"Failed to pull image \"x:1\": no match for platform in manifest"}]},"#,
            r#"{"node":"node-1","queuedFor":"59s","runFor":"1s","containers":[{"name":"main","exitCode":1,"reason":"Error","message":"x"}],"category":"infrastructure"},"#,
            r#"{"node":"node-1","queuedFor":"1m59s","runFor":"1s","outcome":"succeeded"}]}"#,
            "\n"
        )
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        concat!(
            "warning: job `pe-1` run `r4`: column debug: not a zlib stream (no zlib header); run left out\n",
            "history: exported 1 job and 4 runs of queue `pe`\n",
            "history: left out 0 jobs and 1 run whose rows could not be read (reported above)\n",
            "what Lookout could not tell (counts, nothing guessed):\n",
            "         1  exit codes are the first non-zero container's only (one unnamed container written)\n",
            "         1  debug texts that are not the executor's debug document (no podError, no events)\n",
        )
    );
}

/// `simulate --lookout-db` reads the same rows: a categorizer's `onPodEvents`, `onPodError`
/// and `containerName` rules match the imported runs as the executor's would have.
#[test]
fn lookout_imported_pod_errors_events_and_containers_feed_the_categorizer() {
    let Some(mut db) = pg::lookout_db("poderrors_sim") else {
        return;
    };
    insert(
        &mut db,
        "pe-1",
        &[
            ("r1", 4, Some(1), Some("Pod rejected"), Some(pg::zlib(DOC))),
            ("r2", 4, Some(1), Some("Failed to pull image"), Some(pg::zlib(PULL))),
            (
                "r3",
                4,
                Some(2),
                Some("Container main failed with exit code 2 because Error: bad input\nsee above\n"),
                None,
            ),
            (
                "r4",
                4,
                Some(2),
                Some("Container side failed with exit code 2 because Error: bad input\nsee above\n"),
                None,
            ),
            ("r5", 3, Some(0), None, None),
        ],
    );
    let home = temp_home();
    let categorizer = home.path().join("categorizer.yaml");
    std::fs::write(
        &categorizer,
        "errorCategories:\n  enabled: true\n  defaultCategory: other\n  categories:\n  \
         - name: gpu\n    rules:\n    - onPodEvents: {regexp: Pod Allocate failed, reason: UnexpectedAdmissionError, type: Warning}\n  \
         - name: pull\n    rules:\n    - onPodError: {pattern: ErrImagePull}\n  \
         - name: input\n    rules:\n    - containerName: main\n      onTerminationMessage: {pattern: \"bad input\\nsee above$\"}\n",
    )
    .unwrap();
    let policy = home.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: all\nretryLimit: 9\ndefaultAction: Fail\nrules:\n  \
         - {action: Retry, onCategory: gpu}\n  - {action: Retry, onCategory: pull}\n  - {action: Retry, onCategory: input}\n  \
         - {action: Retry, onCategory: other}\n",
    )
    .unwrap();
    let out = retryctl(home.path())
        .args(["simulate", "-o", "json", "--queue", "pe", "--lookout-db", &db.dsn, "-f"])
        .arg(&policy)
        .arg("--categorizer")
        .arg(&categorizer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let categories: Vec<_> = v["jobs"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["category"].clone())
        .collect();
    assert_eq!(
        categories,
        ["gpu", "pull", "input", "other", "null"].map(|c| if c == "null" { serde_json::Value::Null } else { c.into() })
    );
}
