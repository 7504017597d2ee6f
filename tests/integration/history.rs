//! `retryctl history` against a real PostgreSQL built from Lookout's migrations
//! (support/pg.rs), and against a Lookout REST fixture server that answers per swagger.yaml;
//! then `simulate` on what was imported, with exact outcomes.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::support::pg::{self, Db};
use crate::support::stub::{Reply, Stub};
use crate::support::{retryctl, temp_home};

const WINDOW: [&str; 4] = ["--from", "2026-11-15T00:00:00Z", "--to", "2026-11-22T00:00:00Z"];

fn fixture_db(test: &str) -> Option<Db> {
    let mut db = pg::lookout_db(test)?;
    let sql = std::fs::read_to_string(crate::support::root().join("testdata/lookout/lookout.sql")).unwrap();
    db.client.batch_execute(&sql).unwrap();
    Some(db)
}

fn history(home: &Path, args: &[&str]) -> Output {
    retryctl(home).arg("history").args(args).output().unwrap()
}

fn ids(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["job"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn db_export_of_the_fixture_is_exact() {
    let Some(db) = fixture_db("export") else { return };
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["history", "--queue", "ml", "--lookout-db", &db.dsn])
        .args(WINDOW)
        .output()
        .unwrap();
    let text = crate::support::format_output(&out).replace(&db.dsn, "DSN");
    insta::assert_snapshot!(text);
}

#[test]
fn db_filters_queue_jobset_job_and_time() {
    let Some(db) = fixture_db("filters") else { return };
    let home = temp_home();
    let h = |extra: &[&str]| {
        let mut args = vec!["--lookout-db", db.dsn.as_str()];
        args.extend_from_slice(extra);
        let out = history(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        ids(&out.stdout)
    };
    assert_eq!(h(&["--queue", "batch"]), ["b-01", "b-02", "b-03", "b-04", "b-05"]);
    assert_eq!(h(&["--queue", "ml", "--jobset", "nightly"]), ["ml-19", "ml-20"]);
    assert_eq!(
        h(&["--queue", "ml", "--job", "ml-03", "--job", "ml-01", "--job", "b-01"]),
        ["ml-01", "ml-03"]
    );
    // ml-18 was submitted on 2026-11-01: inside `--from 2026-10-01`, outside the window.
    assert!(h(&["--queue", "ml", "--from", "2026-10-01T00:00:00Z"]).contains(&"ml-18".to_string()));
    assert!(!h(&["--queue", "ml", "--from", "2026-11-15T00:00:00Z"]).contains(&"ml-18".to_string()));
    assert_eq!(h(&["--queue", "ml", "--to", "2026-11-02T00:00:00Z"]), ["ml-18"]);
    // `--since` counts back from the clock: 100 years back covers the whole fixture.
    assert_eq!(h(&["--queue", "ml", "--since", "36500d"]).len(), 18);
    assert_eq!(h(&["--queue", "nope"]), Vec::<String>::new());
}

/// The fixture's week of queue `ml`, exported to `HOME/week.jsonl` (nothing on stdout).
fn export_week(home: &Path, db: &Db) -> std::path::PathBuf {
    let file = home.join("week.jsonl");
    let out = retryctl(home)
        .args(["history", "--queue", "ml", "--lookout-db", &db.dsn, "--output-file"])
        .arg(&file)
        .args(WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    file
}

#[test]
fn imported_history_replays_through_simulate_with_exact_outcomes() {
    let Some(db) = fixture_db("replay") else { return };
    let home = temp_home();
    let file = export_week(home.path(), &db);
    let finals = |policies: &str| -> Vec<(String, String, u64)> {
        let out = retryctl(home.path())
            .args(["simulate", "-f", policies, "-o", "jsonl", "--history"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["job"].as_str().unwrap().to_string(),
                    v["outcome"]["final"].as_str().unwrap().to_string(),
                    v["retries"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let old = finals("testdata/lookout/old");
    let new = finals("testdata/lookout/new");
    insta::assert_snapshot!(
        "replay_old_vs_new",
        old.iter()
            .zip(&new)
            .map(|(o, n)| format!("{:6} old {:9} {}  new {:9} {}", o.0, o.1, o.2, n.1, n.2))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The two policy sets disagree on some jobs: `simulate --baseline` names exactly those.
    assert_ne!(old, new);
    let differing: Vec<&str> = old
        .iter()
        .zip(&new)
        .filter(|(o, n)| o != n)
        .map(|(o, _)| o.0.as_str())
        .collect();
    assert_eq!(differing, ["ml-02", "ml-05", "ml-08", "ml-09", "ml-19"]);

    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/lookout/new",
            "--baseline",
            "testdata/lookout/old",
        ])
        .args(["--exit-code", "-o", "json", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "--exit-code: jobs changed\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["comparison"];
    let changed = crate::support::changed_jobs(&v);
    // Both sides as the two plain replays above saw them.
    let expected: Vec<(String, String, u64, String, u64)> = old
        .iter()
        .zip(&new)
        .filter(|(o, n)| o != n)
        .map(|(o, n)| (o.0.clone(), o.1.clone(), o.2, n.1.clone(), n.2))
        .collect();
    assert_eq!(changed, expected);
    let t = &c["transitions"];
    assert_eq!(
        (t["rescued"].as_u64(), t["lost"].as_u64(), t["toPending"].as_u64()),
        (Some(2), Some(0), Some(3))
    );
}

#[test]
fn yaml_output_is_read_by_simulate() {
    let Some(db) = fixture_db("yaml") else { return };
    let home = temp_home();
    let file = home.path().join("week.yaml");
    let out = retryctl(home.path())
        .args([
            "history",
            "--queue",
            "ml",
            "--job",
            "ml-01",
            "-o",
            "yaml",
            "--lookout-db",
            &db.dsn,
            "--output-file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    insta::assert_snapshot!(std::fs::read_to_string(&file).unwrap());
    let out = retryctl(home.path())
        .args(["simulate", "-f", "testdata/lookout/new", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn keyset_paging_reads_every_job_across_pages() {
    let Some(mut db) = pg::lookout_db("paging") else { return };
    db.client
        .batch_execute(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations)
             SELECT format('j%s', lpad(i::text, 6, '0')), 'q', 'o', 's', 1, 1024, 0, 0, 1, timestamp '2026-11-16' + i * interval '1 second', 4, now(), 0, '{}'::jsonb
               FROM generate_series(1, 2500) i;
             INSERT INTO job_run (run_id, job_id, cluster, node, leased, started, finished, job_run_state, exit_code)
             SELECT format('r%s-%s', i, k), format('j%s', lpad(i::text, 6, '0')), 'c', 'n', timestamp '2026-11-16' + (i * 10 + k) * interval '1 second',
                    timestamp '2026-11-16' + (i * 10 + k) * interval '1 second', timestamp '2026-11-16' + (i * 10 + k + 1) * interval '1 second',
                    CASE WHEN k = 2 THEN 3 ELSE 4 END, CASE WHEN k = 2 THEN 0 ELSE 137 END
               FROM generate_series(1, 2500) i, generate_series(0, 2) k;",
        )
        .unwrap();
    let home = temp_home();
    let out = history(home.path(), &["--queue", "q", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(0));
    let got = ids(&out.stdout);
    assert_eq!(got.len(), 2500);
    assert_eq!(got[0], "j000001");
    assert_eq!(got[2499], "j002500");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().next().unwrap(),
        "history: exported 2500 jobs and 7500 runs of queue `q`"
    );
}

#[test]
fn a_row_that_cannot_be_mapped_is_named_skipped_and_exits_1() {
    let Some(mut db) = fixture_db("badrow") else { return };
    db.client
        .execute(
            "INSERT INTO job_run (run_id, job_id, cluster, node, leased, started, finished, job_run_state, exit_code, error)
             VALUES ('bad-run', 'b-04', 'c1', 'n', '2026-11-16 11:10:00', '2026-11-16 11:10:01', '2026-11-16 11:10:02', 4, 1, $1)",
            &[&b"not a zlib stream".to_vec()],
        )
        .unwrap();
    let home = temp_home();
    let out = history(home.path(), &["--queue", "batch", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(ids(&out.stdout), ["b-01", "b-02", "b-03", "b-05"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "error: job `b-04` run `bad-run`: `error` is not a zlib stream: corrupt deflate stream; job skipped\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("       1  jobs skipped: a row could not be mapped (reported above)\n"),
        "{err}"
    );
}

#[test]
fn bad_databases_exit_4_or_5_with_the_password_masked() {
    let Some(db) = pg::empty_db("notlookout") else { return };
    let home = temp_home();
    // A database without the Lookout tables.
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(4));
    let masked = db.dsn.replace(pg::PASSWORD, "***");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: database `{masked}` has no table `job`: it is not a Lookout database\n\nhint: point `--lookout-db` at the database Lookout's ingester writes (its `postgres` connection in lookout's config)\n"
        )
    );
    // Wrong password: 5, and the wrong password is not printed either.
    let wrong = db.dsn.replace(pg::PASSWORD, "wrong-pass");
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &wrong]);
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: authentication to `{masked}` failed: password authentication failed for user \"lookout\"\n")
    );
    // Nothing listens on the port: 4 at once, the address shown, no password.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dsn = format!("postgresql://lookout:hunter2@127.0.0.1:{port}/lookout");
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &dsn]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "error: cannot reach the Lookout database at `postgresql://lookout:***@127.0.0.1:{port}/lookout`: "
        )),
        "{err}"
    );
    assert!(err.contains("refused"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn source_is_required_and_flags_are_checked() {
    let home = temp_home();
    let out = history(home.path(), &["--queue", "ml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = history(
        home.path(),
        &["--queue", "ml", "--lookout-url", "http://x", "--from", "yesterday"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: invalid `--from` `yesterday`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`\n"
    );
    let out = history(
        home.path(),
        &["--queue", "ml", "--lookout-url", "http://x", "--since", "soon"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: invalid `--since` `soon`: expected a duration such as `7d`, `36h` or `1d12h`\n"
    );
}

// ---- REST: a Lookout fixture server answering per contract/lookout/swagger.yaml ----

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

fn lookout_stub(total: usize) -> Stub {
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
        r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{"id":"api-01099","queue":"ml","annotations":{"team":"vision"},"memory":"2147483648","submittedAt":"2026-11-16T08:00:00Z"},"runs":[{"node":"node-a","queuedFor":"15s","runFor":"10m","containers":[{"exitCode":137,"message":"OOMKilled in run-1099-a"}],"category":"oom"},{"node":"node-b","queuedFor":"1m5s","runFor":"10m","outcome":"succeeded"}]}"#
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
        "history: exported 1100 jobs and 2200 runs of queue `ml`\nwhat Lookout could not tell (counts, nothing guessed):\n      1100  exit codes are the first non-zero container's only (one unnamed container written)\n"
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
        err.starts_with(&format!(
            "error: Lookout at `http://127.0.0.1:{port}/api/v1/jobs` is unreachable: Connection refused"
        )),
        "{err}"
    );
    assert!(!err.contains("hunter2"));
}

#[test]
fn an_unnamed_container_is_matched_only_by_rules_without_container_name() {
    let home = temp_home();
    let h = home.path().join("h.jsonl");
    std::fs::write(
        &h,
        r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{"id":"j","queue":"ml"},"runs":[{"node":"n1","runFor":"1m","containers":[{"exitCode":137}]},{"node":"n2","outcome":"succeeded"}]}"#,
    )
    .unwrap();
    let policy = |container: &str| {
        let p = home.path().join(format!("p{}.yaml", container.len()));
        std::fs::write(
            &p,
            format!(
                "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {{name: p}}\nspec:\n  rules:\n    - action: Retry\n      {container}onExitCodes: {{operator: In, values: [137]}}\n"
            ),
        )
        .unwrap();
        p
    };
    let decision = |p: &Path| -> Value {
        let out = retryctl(home.path())
            .args(["simulate", "--retry-policy", "p", "-o", "jsonl", "-f"])
            .arg(p)
            .arg("--history")
            .arg(&h)
            .output()
            .unwrap();
        let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
        v["runs"][0]["decision"].clone()
    };
    assert_eq!(decision(&policy("")), json!("retry"));
    assert_eq!(decision(&policy("containerName: main\n      ")), json!("fail_default"));
}

/// Issue 25: the walkthrough's what-if for today's Armada. `testdata/lookout/upstream-old`
/// and `upstream-new` fit upstream's dialect, so `--engine upstream` replays them (the
/// design-dialect sets are refused there, exit 3); the README pastes this comparison.
#[test]
fn upstream_policy_pair_replays_the_week_under_the_upstream_engine() {
    let Some(db) = fixture_db("upstream") else { return };
    let home = temp_home();
    let file = export_week(home.path(), &db);
    let upstream = |policies: &str| {
        retryctl(home.path())
            .args(["simulate", "-f", policies, "--engine", "upstream", "--history"])
            .arg(&file)
            .output()
            .unwrap()
    };
    assert_eq!(upstream("testdata/lookout/new").status.code(), Some(3));
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/lookout/upstream-new",
            "--baseline",
            "testdata/lookout/upstream-old",
            "--engine",
            "upstream",
        ])
        .args(["-o", "json", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let changed = crate::support::changed_jobs(&v);
    let s = |x: &str| x.to_string();
    assert_eq!(
        changed,
        [
            (s("ml-01"), s("Failed"), 0, s("Succeeded"), 1),
            (s("ml-02"), s("Failed"), 0, s("Pending"), 3),
            (s("ml-08"), s("Failed"), 0, s("Pending"), 1),
            (s("ml-09"), s("Failed"), 0, s("Pending"), 2),
            (s("ml-10"), s("Failed"), 0, s("Pending"), 1),
            (s("ml-15"), s("Failed"), 0, s("Pending"), 1),
            (s("ml-16"), s("Failed"), 0, s("Succeeded"), 1),
            (s("ml-19"), s("Failed"), 0, s("Succeeded"), 2),
            (s("ml-20"), s("Failed"), 0, s("Pending"), 1),
        ]
    );
    // Upstream ends a job at its preemption: ml-03's later run contradicts that engine.
    let out = upstream("testdata/lookout/upstream-new");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "job `ml-03`: history contradicts the decisions: run 1 follows the end of the job at run 0 (Failed)"
        ),
        "{err}"
    );
}
