//! Pod errors as the executor sees them (docs/lookout.md "Pod errors, events and containers",
//! docs/categorizer.md "Which matchers see what"), on a real PostgreSQL built from Lookout's
//! migrations: the rows are what upstream's executor and Lookout ingester write (the texts
//! built from upstream's format strings, `contract/executor/formats.txt`; the hint appended
//! as `AppendHint` appends it; `job_run.error` and `debug` zlib-compressed), each with the
//! category the executor recorded under the deployed categorizer. `history --lookout-db`
//! exports them with their executor path, `simulate --lookout-db` replays them and must
//! assign the categories Lookout recorded, and `suggest`'s pod-error rules must match the
//! stored texts.

use serde_json::Value;

use crate::support::executor_formats as formats;
use crate::support::pg;
use crate::support::{format_output, retryctl, temp_home};

/// One `job_run` row as the executor and the ingester left it.
struct Row {
    run: &'static str,
    state: i16,
    exit_code: Option<i32>,
    /// The text, stored zlib-compressed (`None`: NULL).
    error: Option<String>,
    debug: Option<String>,
    category: Option<&'static str>,
    subcategory: Option<&'static str>,
}

impl Row {
    fn new(run: &'static str, state: i16) -> Row {
        Row {
            run,
            state,
            exit_code: None,
            error: None,
            debug: None,
            category: None,
            subcategory: None,
        }
    }

    fn exit(mut self, code: i32) -> Row {
        self.exit_code = Some(code);
        self
    }

    fn error(mut self, text: impl Into<String>) -> Row {
        self.error = Some(text.into());
        self
    }

    fn debug(mut self, text: &str) -> Row {
        self.debug = Some(text.into());
        self
    }

    fn category(mut self, category: &'static str, subcategory: Option<&'static str>) -> Row {
        self.category = Some(category);
        self.subcategory = subcategory;
        self
    }
}

/// A job of queue `pe` submitted at 09:00 (minute `m` of the day's jobs) and its runs, one a
/// minute from 10:`m`.
fn insert(db: &mut pg::Db, job: &str, m: u32, runs: Vec<Row>) {
    insert_on(db, job, 16, m, runs)
}

/// [`insert`] on 2026-11-`day`.
fn insert_on(db: &mut pg::Db, job: &str, day: u32, m: u32, runs: Vec<Row>) {
    db.client
        .execute(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations) \
             VALUES ($1, 'pe', 'o', 's', 1000, 1073741824, 0, 0, 1, $2::text::timestamp, 5, now(), 0, '{}'::jsonb)",
            &[&job, &format!("2026-11-{day} 09:{m:02}:00")],
        )
        .unwrap();
    for (k, r) in runs.into_iter().enumerate() {
        let at = |s: u32| format!("2026-11-{day} {:02}:{:02}:{s:02}", 10 + k, m);
        db.client
            .execute(
                "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, error, debug, failure_category, failure_subcategory) \
                 VALUES ($1, $2, 'c', 'node-1', $3::text::timestamp, $3::text::timestamp, $4::text::timestamp, $5::text::timestamp, $6, $7, $8, $9, $10, $11)",
                &[
                    &format!("{job}-{}", r.run),
                    &job,
                    &at(0),
                    &at(1),
                    &at(2),
                    &r.state,
                    &r.exit_code,
                    &r.error.as_deref().map(pg::zlib),
                    &r.debug.as_deref().map(pg::zlib),
                    &r.category,
                    &r.subcategory,
                ],
            )
            .unwrap();
    }
}

const FAILED: i16 = 4;
const SUCCEEDED: i16 = 3;
const LEASE_RETURNED: i16 = 8;

/// The executor's categorizer as deployed, with an `onPodError` rule on image pulls.
const EXECUTOR: &str = "application:
  clusterId: c
  errorCategories:
    enabled: true
    defaultCategory: other
    categories:
      - name: infrastructure
        rules:
          - onPodError: {pattern: \"not found|NotFound\"}
            subcategory: image-pull
            hint: Check the image name and that the registry holds it
      - name: oom
        action: Delete
        rules:
          - onConditions: [OOMKilled]
      - name: stuck
        rules:
          - onPodError: {pattern: \"Unable to start pod\"}
            subcategory: pending
";

/// A policy that retries every run, so that every run of the week gets a decision record.
const RETRY_ALL: &str =
    "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: all\nretryLimit: 9\ndefaultAction: Retry\n";

/// That config's hint on `infrastructure/image-pull`.
const HINT: &str = "Check the image name and that the registry holds it";

/// An event of a kubelet that cannot pull an image that does not exist.
const NOT_FOUND: &str = "Failed to pull image \"reg.example/team/train:v7\": rpc error: code = NotFound desc = failed to pull and unpack image \"reg.example/team/train:v7\": not found";

/// The week: stuck pods whose image cannot be pulled (failed, and retried as a returned
/// lease), a stuck pod on a bad node, an OOM kill, a failed pod whose own message says "not
/// found", a lease expiry a policy declined; each with the category the executor recorded
/// under [`EXECUTOR`], and its text as the executor composed it (the hint appended).
fn pod_error_week(db: &mut pg::Db) {
    let image_fail = formats::stuck_pod(
        false,
        &formats::checks(&[&formats::matched_check("check-0", NOT_FOUND)]),
    );
    let image_retry = formats::stuck_pod(
        true,
        &formats::waiting("main", "ErrImagePull", NOT_FOUND, "check-2", "15m0s"),
    );
    let bad_node = formats::stuck_pod(
        true,
        "Pod has received no updates within 5m0s deadline - likely the node is bad. Retrying",
    );
    let oom = formats::failed_container("main", 137, "OOMKilled", "");
    let own_message = formats::failed_container("main", 1, "Error", "model file /data/w.pt not found");
    let image = Some("image-pull");
    insert(
        db,
        "pe-01",
        1,
        vec![
            Row::new("r0", FAILED)
                .exit(0)
                .error(formats::append_hint(&image_fail, HINT))
                .category("infrastructure", image),
            Row::new("r1", SUCCEEDED).exit(0),
        ],
    );
    insert(
        db,
        "pe-02",
        2,
        vec![
            Row::new("r0", LEASE_RETURNED)
                .error(formats::append_hint(&image_retry, HINT))
                .category("infrastructure", image),
            Row::new("r1", SUCCEEDED).exit(0),
        ],
    );
    insert(
        db,
        "pe-03",
        3,
        vec![
            Row::new("r0", LEASE_RETURNED)
                .error(bad_node)
                .category("stuck", Some("pending")),
            Row::new("r1", FAILED).exit(137).error(oom).category("oom", None),
            Row::new("r2", SUCCEEDED).exit(0),
        ],
    );
    insert(
        db,
        "pe-04",
        4,
        vec![
            // A Retain category's `onPodError` never sees an ordinary failed pod's text: the
            // executor recorded the default.
            Row::new("r0", FAILED)
                .exit(1)
                .error(own_message)
                .category("other", None),
            Row::new("r1", FAILED)
                .exit(0)
                .error(formats::unknown_error())
                .category("internal", Some("lease-expired")),
        ],
    );
}

/// `(job, category, subcategory)` of every classified run, in the jobs' and runs' order, as
/// Lookout recorded them (`failure_category`, `failure_subcategory`).
fn recorded(db: &mut pg::Db) -> Vec<(String, Option<String>, Option<String>)> {
    db.client
        .query(
            "SELECT job_id, failure_category, failure_subcategory FROM job_run WHERE job_run_state IN (4, 8) ORDER BY job_id, leased",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

fn write(home: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = home.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `history --lookout-db --categorizer FILE`: each failed run and returned lease says its
/// executor path; a pod issue's text is its `podError` without the hint; a returned lease
/// keeps its text and category; a failed pod's text stays containers. Without the
/// categorizer the texts are kept whole, said once.
#[test]
fn history_exports_each_runs_executor_path_and_pod_error_text() {
    let Some(mut db) = pg::lookout_db("pod_paths") else {
        return;
    };
    pod_error_week(&mut db);
    let home = temp_home();
    let executor = write(home.path(), "executor.yaml", EXECUTOR);
    let out = retryctl(home.path())
        .args(["history", "--queue", "pe", "--lookout-db", &db.dsn, "--categorizer"])
        .arg(&executor)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let runs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .flat_map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["runs"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    let field = |k: usize, f: &str| runs[k][f].clone();
    let image_fail = formats::stuck_pod(
        false,
        &formats::checks(&[&formats::matched_check("check-0", NOT_FOUND)]),
    );
    let image_retry = formats::stuck_pod(
        true,
        &formats::waiting("main", "ErrImagePull", NOT_FOUND, "check-2", "15m0s"),
    );
    let paths: Vec<Value> = (0..runs.len()).map(|k| field(k, "executorPath")).collect();
    assert_eq!(
        paths,
        [
            "stuckPod",
            "null",
            "stuckPod",
            "null",
            "stuckPod",
            "failedPod",
            "null",
            "failedPod",
            "unclassified"
        ]
        .map(|p| if p == "null" { Value::Null } else { p.into() })
    );
    assert_eq!(field(0, "podError"), Value::from(image_fail.as_str()));
    assert_eq!(
        field(0, "containers"),
        Value::Null,
        "a stuck pod's exit code 0 is no container"
    );
    assert_eq!(field(2, "podError"), Value::from(image_retry.as_str()));
    assert_eq!(
        (field(2, "outcome"), field(2, "category"), field(2, "subcategory")),
        ("leaseReturned".into(), "infrastructure".into(), "image-pull".into())
    );
    assert_eq!(field(4, "category"), Value::from("stuck"));
    assert_eq!(
        field(5, "containers"),
        serde_json::json!([{"name": "main", "exitCode": 137, "reason": "OOMKilled"}])
    );
    assert_eq!(
        field(7, "containers"),
        serde_json::json!([{"name": "main", "exitCode": 1, "reason": "Error", "message": "model file /data/w.pt not found"}])
    );
    assert_eq!(
        field(7, "podError"),
        Value::Null,
        "a failed pod's text is its containers"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        concat!(
            "history: exported 4 jobs and 9 runs of queue `pe`\n",
            "what Lookout could not tell (counts, nothing guessed):\n",
            "         1  exit codes are the first non-zero container's only (one unnamed container written)\n",
        )
    );

    // Without the deployed categorizer: the hint stays, and the summary says so once.
    let out = retryctl(home.path())
        .args(["history", "--queue", "pe", "--lookout-db", &db.dsn])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(
        first["runs"][0]["podError"],
        Value::from(formats::append_hint(&image_fail, HINT))
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        concat!(
            "history: exported 4 jobs and 9 runs of queue `pe`\n",
            "what Lookout could not tell (counts, nothing guessed):\n",
            "         1  exit codes are the first non-zero container's only (one unnamed container written)\n",
            "         5  error texts kept whole: a hint the executor appended cannot be told from them without the deployed categorizer\n",
        )
    );
}

/// The replay of that week under the deployed config assigns the categories the executor
/// recorded, on every path: the `onPodError` rule matches the stuck pods' texts (the failed
/// one and the retried one) and not the failed pod whose own message says "not found".
#[test]
fn the_replay_assigns_the_categories_the_executor_recorded() {
    let Some(mut db) = pg::lookout_db("pod_replay") else {
        return;
    };
    pod_error_week(&mut db);
    let home = temp_home();
    let executor = write(home.path(), "executor.yaml", EXECUTOR);
    let policy = write(home.path(), "policy.yaml", RETRY_ALL);
    let replayed = |db: &pg::Db, extra: &[&str]| -> Value {
        let out = retryctl(home.path())
            .args([
                "simulate",
                "--engine",
                "upstream",
                "-o",
                "json",
                "--queue",
                "pe",
                "--lookout-db",
                &db.dsn,
                "-f",
            ])
            .arg(&policy)
            .arg("--categorizer")
            .arg(&executor)
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let v = replayed(&db, &[]);
    let text = |r: &Value, f: &str| r[f].as_str().map(str::to_string);
    let got: Vec<(String, Option<String>, Option<String>)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| {
            let id = j["job"].as_str().unwrap().to_string();
            j["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["outcome"] != "succeeded")
                .map(move |r| (id.clone(), text(r, "category"), text(r, "subcategory")))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(got, recorded(&mut db));
    assert_eq!(
        v["summary"]["categoryChanges"],
        serde_json::json!([]),
        "{}",
        v["summary"]
    );
}

/// A deployed categorizer with `onPodEvents`: the executor reads the pod's events only in the
/// Delete-action check of a failed pod, so only a `Delete` category's rule ever matches, and
/// never on a stuck pod; the replay of what it recorded assigns the same.
#[test]
fn on_pod_events_matches_only_where_the_delete_action_check_reads_the_events() {
    let Some(mut db) = pg::lookout_db("pod_events") else {
        return;
    };
    let allocate = "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected";
    let debug = |phase: &str, reason: &str, warning: (&str, &str)| {
        serde_json::json!({
            "schemaVersion": 1,
            "trigger": "podFailed",
            "pod": {"phase": phase, "reason": reason, "events": [
                {"type": "Normal", "reason": "Scheduled", "message": "Successfully assigned pe/p to node-1"},
                {"type": "Warning", "reason": warning.0, "message": warning.1},
            ]},
        })
        .to_string()
    };
    let admission = ("UnexpectedAdmissionError", allocate);
    let rejected = format!("Pod was rejected: {allocate}");
    insert(
        &mut db,
        "pe-gpu-1",
        1,
        vec![
            // The kubelet refused the pod: its status message is the failure text.
            Row::new("r0", FAILED)
                .exit(0)
                .error(rejected.clone())
                .debug(&debug("Failed", "UnexpectedAdmissionError", admission))
                .category("gpu-admission", None),
            Row::new("r1", SUCCEEDED).exit(0),
        ],
    );
    insert(
        &mut db,
        "pe-gpu-2",
        2,
        vec![
            // The same events on a pod stuck pending: the issue handler passes no events.
            Row::new("r0", FAILED)
                .exit(0)
                .error(formats::stuck_pod(
                    false,
                    &formats::checks(&[&formats::matched_check("check-1", allocate)]),
                ))
                .debug(&debug("Pending", "", admission)),
            // An ordinary failed pod whose event only a Retain category's rule matches: the
            // Delete-action check discards that match, and no category is recorded.
            Row::new("r1", FAILED)
                .exit(1)
                .error(formats::failed_container("main", 1, "Error", "CUDA error: Xid 79"))
                .debug(&debug(
                    "Failed",
                    "",
                    ("Failed", "Pod Allocate failed: the device plugin is restarting"),
                )),
            Row::new("r2", SUCCEEDED).exit(0),
        ],
    );
    let home = temp_home();
    let events = write(
        home.path(),
        "events.yaml",
        "errorCategories:
  enabled: true
  categories:
    - name: gpu-admission
      action: Delete
      rules:
        - onPodEvents: {regexp: \"devices unavailable for nvidia.com/gpu\", reason: UnexpectedAdmissionError, type: Warning}
    - name: gpu-kept
      rules:
        - onPodEvents: {regexp: \"Pod Allocate failed\", type: Warning}
",
    );
    // Exported: the rejected pod's status message stays its text, its events are the pod's.
    let out = retryctl(home.path())
        .args(["history", "--queue", "pe", "--lookout-db", &db.dsn, "--categorizer"])
        .arg(&events)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(
        first["runs"][0],
        serde_json::json!({
            "node": "node-1", "queuedFor": "1h1s", "runFor": "1s",
            "containers": [{"exitCode": 0, "message": rejected}],
            "category": "gpu-admission", "executorPath": "failedPod",
            "events": [
                {"type": "Normal", "reason": "Scheduled", "message": "Successfully assigned pe/p to node-1"},
                {"type": "Warning", "reason": "UnexpectedAdmissionError", "message": allocate},
            ],
        })
    );
    let policy = write(home.path(), "policy.yaml", RETRY_ALL);
    let out = retryctl(home.path())
        .args([
            "simulate",
            "--engine",
            "upstream",
            "-o",
            "json",
            "--queue",
            "pe",
            "--lookout-db",
            &db.dsn,
            "-f",
        ])
        .arg(&policy)
        .arg("--categorizer")
        .arg(&events)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let categories: Vec<Value> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| {
            j["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["category"].clone())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        categories,
        ["gpu-admission", "null", "null", "null", "null"].map(|c| if c == "null" { Value::Null } else { c.into() })
    );
    assert_eq!(
        v["summary"]["categoryChanges"],
        serde_json::json!([]),
        "{}",
        v["summary"]
    );
}

/// `suggest` on stuck pods of one deployed category whose retries fare differently: each
/// signature is its text's distinguishing line, the category is split, and each new
/// category's `onPodError` pattern matches the texts Lookout stores for its runs (header,
/// check lines and hint included) and not the other's.
#[test]
fn suggests_pod_error_rules_match_the_stored_texts() {
    let Some(mut db) = pg::lookout_db("pod_suggest") else {
        return;
    };
    // Pulls from a mirror that did not have the image yet: the retry succeeds. The deployed
    // config's `onPodError` puts them in `infrastructure/image-pull` with the others.
    let waiting = |k: u32| {
        formats::append_hint(
            &formats::stuck_pod(
                false,
                &formats::waiting(
                    "main",
                    "ErrImagePull",
                    &format!("Back-off pulling image \"reg.example/team/train:v{k}\": not found in the mirror yet"),
                    "check-2",
                    "15m0s",
                ),
            ),
            HINT,
        )
    };
    // An image that does not exist: the retry fails alike.
    let missing = |k: u32| {
        formats::append_hint(
            &formats::stuck_pod(
                false,
                &formats::checks(&[&formats::matched_check(
                    "check-0",
                    &NOT_FOUND.replace("v7", &format!("v{k}")),
                )]),
            ),
            HINT,
        )
    };
    let mut stored = Vec::new();
    for k in 1..=6u32 {
        let (w, m) = (waiting(k), missing(k));
        stored.push((w.clone(), m.clone()));
        let image = Some("image-pull");
        // A day each: a Fail needs futile retries on two days, and a day's failures
        // bunched in an hour would be an incident (docs/reference/suggest.md "Incidents").
        insert_on(
            &mut db,
            &format!("pe-w{k}"),
            16 + k,
            k,
            vec![
                Row::new("r0", FAILED)
                    .exit(0)
                    .error(w)
                    .category("infrastructure", image),
                Row::new("r1", SUCCEEDED).exit(0),
            ],
        );
        insert_on(
            &mut db,
            &format!("pe-m{k}"),
            16 + k,
            10 + k,
            vec![
                Row::new("r0", FAILED)
                    .exit(0)
                    .error(m.clone())
                    .category("infrastructure", image),
                Row::new("r1", FAILED)
                    .exit(0)
                    .error(m)
                    .category("infrastructure", image),
            ],
        );
    }
    let home = temp_home();
    let executor = write(home.path(), "executor.yaml", EXECUTOR);
    // suggest of queue `pe` straight from the database, with the deployed categorizer.
    let suggest = |format: &str| {
        retryctl(home.path())
            .args([
                "suggest",
                "--engine",
                "upstream",
                "--queue",
                "pe",
                "--lookout-db",
                &db.dsn,
            ])
            .args(["--min-trials", "5", "--categorizer"])
            .arg(&executor)
            .args(["-o", format])
            .output()
            .unwrap()
    };
    let out = suggest("json");
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let signatures: Vec<&str> = v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["signature"].as_str().unwrap())
        .collect();
    assert!(
        signatures.contains(&"podError \"Container <name> has been in state Waiting for reason ErrImagePull\""),
        "{signatures:?}"
    );
    assert!(
        signatures.contains(&"podError \"Failed to pull image \"reg.example/team/train:v<n>\": rpc error: code = NotFound desc = failed to pull and unpack image \"reg.example/team/train:v<n>\": not found\""),
        "{signatures:?}"
    );
    let out = suggest("policy");
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let parsed = retryctl::model::parse_documents(&text, None);
    let patterns: Vec<String> = parsed
        .documents
        .iter()
        .filter_map(|d| match &d.resource {
            Some(retryctl::model::Resource::ErrorCategories(c)) => Some(c),
            _ => None,
        })
        .flat_map(|c| c.categories.iter().flat_map(|cat| cat.rules.iter()))
        .filter_map(|r| r.on_pod_error.clone())
        .filter(|p| p.starts_with("(?m)"))
        .collect();
    // The container state's, and the event's line.
    let waiting_pattern = "(?m)^Container \\S+ has been in state Waiting for reason ErrImagePull \\(";
    assert_eq!(patterns.len(), 2, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(patterns.iter().any(|p| p == waiting_pattern), "{text}");
    let mut patterns = patterns;
    patterns.sort_by_key(|p| p != waiting_pattern);
    let compiled: Vec<_> = patterns
        .iter()
        .map(|p| retryctl::model::validate::compile_pattern(p).unwrap())
        .collect();
    for (w, m) in &stored {
        assert!(compiled[0].is_match(w) && !compiled[0].is_match(m), "{w:?} / {m:?}");
        assert!(compiled[1].is_match(m) && !compiled[1].is_match(w), "{m:?} / {w:?}");
    }
    // The comparison's replay (the json above) found every run of a proposed signature
    // decided by its rule.
    let shadowed = v["suggest"]["proposal"]["shadowedRuns"].as_array().unwrap();
    assert!(shadowed.iter().all(|s| s["runs"] == 0), "{}", v["suggest"]["proposal"]);
}
