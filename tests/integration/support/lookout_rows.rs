//! FailureHistory documents → Lookout's rows: a `job` row and its `job_run` rows per job,
//! written as Lookout's ingester writes them, so that `retryctl history --lookout-db` maps
//! them back to the same documents (docs/lookout.md, "Mapping" and "Pod errors, events and
//! containers"; src/lookout/mapping.rs is the other direction).
//!
//! What each field becomes:
//! - the job: `cpu` in millicores and `gpu` in devices from `resources`, `memory` in bytes,
//!   `submitted`, `annotations`; its `state` the document's `job.state` (`failed` after a
//!   preempted run is PREEMPTED), else the last run's;
//! - a run's pool: its `pool`, else `default` (the ingester always writes one);
//! - a run's times: it starts `queuedFor` after the previous run finished (the first, after
//!   `submitted`) and finishes `runFor` later; `leased` and `pending` are a few seconds
//!   before the start (never before the previous run's end), so the runs sort as written;
//! - its state: `succeeded` 3, `leaseReturned` 8, `cancelled` 12; a failed run with the
//!   `Preempted` condition 6, one with Armada's `internal`/`lease-expired` category and
//!   nothing else 9, any other 4;
//! - named containers: the executor's composed `error` (`Container NAME failed with exit
//!   code N because REASON: MESSAGE`, a line each, regular containers then init ones,
//!   zlib-compressed) and the first one's code as `exit_code`; one unnamed container: its
//!   message as `error` and its code as `exit_code`;
//! - `executorPath`: `stuckPod`, its `podError` as `error` (state 4, or 8 for a returned
//!   lease) with exit code 0 and a debug document of a `Pending` pod; `failedPodCheck`, its
//!   `podError` as a returned lease's `error`; `failedPod` and `unclassified` as above (the
//!   export reads them back from the state, the category and the text);
//! - `events` and the init containers: the executor's debug document in `debug`;
//! - `category`/`subcategory`: `failure_category`/`failure_subcategory`, and the text they
//!   were given gets the deployed config's hint for them, as the executor's `AppendHint`
//!   appends it (`history --categorizer` takes it off).
//!
//! A document Lookout cannot hold (a condition other than `Preempted`, a container that
//! exited 0, an unnamed container with a reason, a run with a start time of its own…)
//! panics with the job and run: the round trip would fail for the converter's sake, not
//! history's.

use serde_json::{json, Value};

use retryctl::model::duration::GoDuration;
use retryctl::model::failure_history::Timestamp;

use super::pg::{zlib, Db};

/// Lookout's `job_run_state` values (contract/lookout/README.md).
const SUCCEEDED: i16 = 3;
const FAILED: i16 = 4;
const PREEMPTED: i16 = 6;
const LEASE_RETURNED: i16 = 8;
const LEASE_EXPIRED: i16 = 9;
const CANCELLED: i16 = 12;

/// Lookout's job states, as its fixture writes them (testdata/lookout/lookout.sql).
const JOB_SUCCEEDED: i16 = 4;
const JOB_FAILED: i16 = 5;
const JOB_CANCELLED: i16 = 6;
const JOB_PREEMPTED: i16 = 7;

/// Loads the FailureHistory documents of `jsonl` (one a line, as `history` writes them) into
/// `db`'s `job` and `job_run`, in one transaction; `deployed`: the executor's categorizer
/// config (its file's text, empty for none), whose hints the executor appended to the
/// categorized runs' texts.
pub fn load(db: &mut Db, jsonl: &str, deployed: &str) {
    load_ended(&mut db.client, jsonl, deployed, None);
}

/// [`load`], the jobs' last transition `ago` (an SQL interval: `'2 minutes'`) before the
/// database's now when given, in the same transaction: a reader never sees them with another
/// (as Lookout's ingester stamps a job it just heard of). Through `client` (a cluster of the
/// test's own, `pg::OwnCluster`).
pub fn load_ended(client: &mut postgres::Client, jsonl: &str, deployed: &str, ago: Option<&str>) {
    let hints = hints(deployed);
    let mut tx = client.transaction().unwrap();
    // Run ids go on from the runs loaded before: a test may load a history in parts.
    let loaded: i64 = tx.query_one("SELECT count(*) FROM job_run", &[]).unwrap().get(0);
    let mut next_run = loaded as u64;
    for (n, line) in jsonl.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let doc: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
        insert_job(&mut tx, &doc, &mut next_run, &hints);
        if let Some(ago) = ago {
            tx.execute(
                &format!(
                    "UPDATE job SET last_transition_time = (now() AT TIME ZONE 'UTC') - interval '{ago}' WHERE job_id = $1"
                ),
                &[&text(&doc["job"], "id")],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// `(category, subcategory)` → the hint the rule that gives them carries (the first such rule
/// of the config that has one: the executor appends the matched rule's).
type Hints = Vec<((String, String), String)>;

fn hints(deployed: &str) -> Hints {
    if deployed.is_empty() {
        return Hints::new();
    }
    let parsed = retryctl::model::parse_documents(deployed, None);
    let Some(retryctl::model::Resource::ErrorCategories(config)) =
        parsed.documents.into_iter().next().and_then(|d| d.resource)
    else {
        panic!("the deployed config holds no errorCategories");
    };
    let mut out = Hints::new();
    for c in &config.categories {
        for r in c.rules.iter().filter(|r| !r.hint.is_empty()) {
            let key = (c.name.clone(), r.subcategory.clone());
            if !out.iter().any(|(k, _)| *k == key) {
                out.push((key, r.hint.clone()));
            }
        }
    }
    out
}

/// `text` as the executor sends it for a run categorized `category`/`subcategory`:
/// `AppendHint`'s `\n\n<hint>` after it when that rule has one (formats.txt,
/// `classifier.go:63`).
fn with_hint(text: String, category: Option<&str>, subcategory: Option<&str>, hints: &Hints) -> String {
    let key = (
        category.unwrap_or("").to_string(),
        subcategory.unwrap_or("").to_string(),
    );
    match hints.iter().find(|(k, _)| *k == key) {
        Some((_, hint)) if category.is_some() => super::executor_formats::append_hint(&text, hint),
        _ => text,
    }
}

fn insert_job(tx: &mut postgres::Transaction, doc: &Value, next_run: &mut u64, hints: &Hints) {
    let job = &doc["job"];
    let id = text(job, "id");
    let at = |what: &str| format!("job `{id}`: {what}");
    only(doc, &["apiVersion", "kind", "job", "runs"], &at("document"));
    let known = [
        "id",
        "queue",
        "jobSet",
        "memory",
        "submittedAt",
        "resources",
        "annotations",
        "state",
    ];
    only(job, &known, &at("job"));
    let submitted = Timestamp::parse(text(job, "submittedAt")).unwrap_or_else(|| panic!("{}", at("submittedAt")));
    let memory: i64 = job["memory"]
        .as_str()
        .map_or(0, |m| m.parse().unwrap_or_else(|_| panic!("{}", at("memory"))));
    let resources = &job["resources"];
    let cpu = resources["cpu"].as_str().map_or(0, |c| millis(c, &at("resources.cpu")));
    let gpu = resources["gpu"].as_str().map_or(0, |g| {
        let m = millis(g, &at("resources.gpu"));
        assert_eq!(m % 1000, 0, "{}: Lookout counts whole GPUs", at("resources.gpu"));
        m / 1000
    });
    let annotations = job.get("annotations").cloned().unwrap_or_else(|| json!({}));
    let runs = doc["runs"].as_array().unwrap_or_else(|| panic!("{}", at("runs")));
    let last = runs.last().unwrap_or_else(|| panic!("{}", at("no run")));
    let ended = match last["outcome"].as_str() {
        Some("succeeded") => JOB_SUCCEEDED,
        Some("cancelled") => JOB_CANCELLED,
        _ if is_preempted(last) => JOB_PREEMPTED,
        _ => JOB_FAILED,
    };
    // The document's own end when it says one (a job Lookout ended otherwise than its last run
    // did: a policy that stopped retrying), else its last run's.
    let state = match job["state"].as_str() {
        None => ended,
        Some("succeeded") => JOB_SUCCEEDED,
        Some("cancelled") => JOB_CANCELLED,
        Some("failed") if ended == JOB_PREEMPTED => JOB_PREEMPTED,
        Some("failed") => JOB_FAILED,
        Some(other) => panic!("{}", at(&format!("state `{other}`"))),
    };
    tx.execute(
        "INSERT INTO job (job_id, queue, owner, jobset, namespace, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, priority_class, annotations) \
         VALUES ($1, $2, 'ml-team', $10, 'default', $3, $4, 0, $5, 1, $6::text::timestamp, $7, $6::text::timestamp, $8, 'armada-default', $9::text::jsonb)",
        &[
            &id,
            &text(job, "queue"),
            &cpu,
            &memory,
            &gpu,
            &submitted.to_string(),
            &state,
            &(submitted.0 / 1_000_000_000),
            &annotations.to_string(),
            // The document's job set; none is Lookout's empty one (the column is NOT NULL).
            &job["jobSet"].as_str().unwrap_or_default(),
        ],
    )
    .unwrap();
    let mut prev_end = submitted;
    let mut latest = String::new();
    for (k, run) in runs.iter().enumerate() {
        let at = |what: &str| format!("job `{id}` run {k}: {what}");
        let known = [
            "node",
            "pool",
            "queuedFor",
            "runFor",
            "conditions",
            "containers",
            "category",
            "subcategory",
            "outcome",
            "executorPath",
            "podError",
            "events",
        ];
        only(run, &known, &at("run"));
        let start = prev_end.plus(duration(run, "queuedFor", &at("queuedFor")));
        let finished = start.plus(duration(run, "runFor", &at("runFor")));
        let queued = start.since(prev_end).unwrap();
        let lead = |secs: u64| Timestamp(start.0 - queued.0.min(secs * 1_000_000_000) as i64);
        prev_end = finished;
        *next_run += 1;
        let run_id = format!("00000000-0000-4000-8000-{:012}", *next_run);
        let mut row = Row::of(run, &at);
        row.error = row
            .error
            .map(|e| with_hint(e, row.category.as_deref(), row.subcategory.as_deref(), hints));
        tx.execute(
            "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, error, exit_code, pool, failure_category, failure_subcategory, debug) \
             VALUES ($1, $2, 'ml-gpu-a', $3, $4::text::timestamp, $5::text::timestamp, $6::text::timestamp, $7::text::timestamp, $8, $9, $10, $14, $11, $12, $13)",
            &[
                &run_id,
                &id,
                &run["node"].as_str(),
                &lead(3).to_string(),
                &lead(1).to_string(),
                &start.to_string(),
                &finished.to_string(),
                &row.state,
                &row.error.as_deref().map(zlib),
                &row.exit_code,
                &row.category,
                &row.subcategory,
                &row.debug.as_deref().map(zlib),
                &run["pool"].as_str().unwrap_or("default"),
            ],
        )
        .unwrap();
        latest = run_id;
    }
    tx.execute("UPDATE job SET latest_run_id = $1 WHERE job_id = $2", &[&latest, &id])
        .unwrap();
}

/// What a run's row says besides its ids and times.
struct Row {
    state: i16,
    error: Option<String>,
    exit_code: Option<i32>,
    category: Option<String>,
    subcategory: Option<String>,
    debug: Option<String>,
}

impl Row {
    fn of(run: &Value, at: &dyn Fn(&str) -> String) -> Row {
        let category = run["category"].as_str().map(String::from);
        let subcategory = run["subcategory"].as_str().map(String::from);
        let containers = run["containers"].as_array().cloned().unwrap_or_default();
        let conditions = run["conditions"].as_array().cloned().unwrap_or_default();
        let mut row = Row {
            state: FAILED,
            error: None,
            exit_code: None,
            category: category.clone(),
            subcategory: subcategory.clone(),
            debug: None,
        };
        if let Some(outcome) = run["outcome"].as_str() {
            row.state = match outcome {
                "succeeded" => SUCCEEDED,
                "leaseReturned" => LEASE_RETURNED,
                "cancelled" => CANCELLED,
                other => panic!("{}", at(&format!("outcome `{other}`"))),
            };
            row.exit_code = (row.state == SUCCEEDED).then_some(0);
            if row.state == LEASE_RETURNED && run.get("podError").is_some() {
                // A pod issue's returned lease: its text and category, no exit code.
                row.error = run["podError"].as_str().map(String::from);
                row.debug = debug(run, "Pending", &[], &[]);
                return row;
            }
            let failed_only = [
                "conditions",
                "containers",
                "category",
                "subcategory",
                "executorPath",
                "podError",
                "events",
            ];
            assert!(
                failed_only.iter().all(|f| run.get(f).is_none()),
                "{}",
                at("a run that did not fail holds what only a failed run's row can")
            );
            return row;
        }
        if run["executorPath"] == "stuckPod" {
            assert!(containers.is_empty(), "{}", at("a stuck pod's containers never ran"));
            row.error = run["podError"].as_str().map(String::from);
            row.exit_code = Some(0);
            row.debug = debug(run, "Pending", &[], &[]);
            return row;
        }
        assert!(
            run.get("podError").is_none(),
            "{}",
            at("a failed pod's text is its containers'")
        );
        if is_preempted(run) {
            assert_eq!(
                conditions.len(),
                1,
                "{}",
                at("Lookout records `Preempted` and no other condition")
            );
            row.state = PREEMPTED;
        } else if !conditions.is_empty() {
            panic!("{}", at("Lookout records no condition but `Preempted`"));
        } else if containers.is_empty()
            && category.as_deref() == Some("internal")
            && subcategory.as_deref() == Some("lease-expired")
        {
            // Lookout records no category on an expired lease: its state says it.
            row.state = LEASE_EXPIRED;
            row.category = None;
            row.subcategory = None;
        }
        let named = containers.iter().filter(|c| c.get("name").is_some()).count();
        if named == containers.len() && !containers.is_empty() {
            let (regular, init): (Vec<&Value>, Vec<&Value>) =
                containers.iter().partition(|c| !c["init"].as_bool().unwrap_or(false));
            let ordered: Vec<&Value> = regular.iter().chain(&init).copied().collect();
            assert!(
                ordered.iter().zip(&containers).all(|(a, b)| *a == b),
                "{}",
                at("the executor names regular containers before init containers")
            );
            let mut error = String::new();
            for c in &containers {
                let code = exit_code(c, at);
                assert_ne!(code, 0, "{}", at("the executor's error names failed containers only"));
                error.push_str(&super::executor_formats::failed_container(
                    text(c, "name"),
                    i64::from(code),
                    c["reason"].as_str().unwrap_or(""),
                    c["message"].as_str().unwrap_or(""),
                ));
            }
            row.exit_code = Some(exit_code(&containers[0], at));
            row.error = Some(error);
        } else if let [c] = &containers[..] {
            assert!(
                c.get("reason").is_none() && c.get("init").is_none(),
                "{}",
                at("an unnamed container has an exit code and a message only")
            );
            row.exit_code = Some(exit_code(c, at));
            row.error = c["message"].as_str().map(String::from);
        } else if !containers.is_empty() {
            panic!("{}", at("several containers, some unnamed"));
        }
        let init: Vec<Value> = containers
            .iter()
            .filter(|c| c["init"].as_bool().unwrap_or(false))
            .map(|c| json!({"name": c["name"], "state": "terminated", "exitCode": c["exitCode"], "reason": c["reason"].as_str().unwrap_or("")}))
            .collect();
        let regular: Vec<Value> = containers
            .iter()
            .filter(|c| c.get("name").is_some() && !c["init"].as_bool().unwrap_or(false))
            .map(|c| json!({"name": c["name"], "state": "terminated", "exitCode": c["exitCode"], "reason": c["reason"].as_str().unwrap_or("")}))
            .collect();
        row.debug = debug(run, "Failed", &init, &regular);
        row
    }
}

/// The executor's debug document of `run`'s pod in `phase` (its init and regular containers,
/// its events), when it has anything to say.
fn debug(run: &Value, phase: &str, init: &[Value], regular: &[Value]) -> Option<String> {
    let events = run["events"].as_array().cloned().unwrap_or_default();
    if events.is_empty() && init.is_empty() {
        return None;
    }
    let events: Vec<Value> = events
        .iter()
        .map(|e| {
            json!({
                "type": e["type"].as_str().unwrap_or(""),
                "reason": e["reason"].as_str().unwrap_or(""),
                "from": "kubelet",
                "message": e["message"].as_str().unwrap_or(""),
            })
        })
        .collect();
    Some(
        json!({
            "schemaVersion": 1,
            "trigger": "podFailed",
            "pod": {
                "phase": phase,
                "initContainers": init,
                "containers": regular,
                "events": events,
            },
        })
        .to_string(),
    )
}

fn is_preempted(run: &Value) -> bool {
    run["outcome"].is_null()
        && run["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c == "Preempted"))
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("`{field}` is not a string in {v}"))
}

fn exit_code(c: &Value, at: &dyn Fn(&str) -> String) -> i32 {
    c["exitCode"]
        .as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or_else(|| panic!("{}", at("an exit code Lookout can hold (int32)")))
}

fn duration(run: &Value, field: &str, at: &str) -> GoDuration {
    run[field].as_str().map_or(GoDuration::ZERO, |d| {
        GoDuration::parse(d).unwrap_or_else(|e| panic!("{at}: {e}"))
    })
}

/// A Kubernetes quantity of CPUs or GPUs (`4`, `500m`) in thousandths.
fn millis(q: &str, at: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or_else(|_| panic!("{at}: `{q}`")),
        None => {
            let v: f64 = q.parse().unwrap_or_else(|_| panic!("{at}: `{q}`"));
            (v * 1000.0).round() as i64
        }
    }
}

/// Panics on a field the converter does not know: it would be dropped, and the round trip
/// would blame `history`.
fn only(v: &Value, known: &[&str], at: &str) {
    for k in v.as_object().unwrap_or_else(|| panic!("{at}: not an object")).keys() {
        assert!(
            known.contains(&k.as_str()),
            "{at}: field `{k}` has no Lookout column here"
        );
    }
}
