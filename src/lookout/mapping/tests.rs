//! Table tests of the Lookout → FailureHistory mapping: one row per run state and per time
//! oddity, each asserting the run written (as the JSON `history` writes) and the counts.

use super::*;
use crate::model::categorizer::{Category, CategoryRule, ErrorCategories};
use crate::model::failure_history::failure_history_json;

/// Upstream's executor texts, built from `contract/executor/formats.txt` as the integration
/// tests build them.
#[path = "../../../tests/integration/support/executor_formats.rs"]
mod formats;

fn t(s: &str) -> Option<Timestamp> {
    Some(Timestamp::parse(s).unwrap())
}

fn job(runs: Vec<RunRow>) -> LookoutJob {
    LookoutJob {
        job: JobRow {
            job_id: "j1".into(),
            queue: "ml".into(),
            job_set: Some("sweep-17".into()),
            memory: 8 * 1024 * 1024 * 1024,
            cpu: 0,
            gpu: 0,
            submitted: t("2026-01-01T00:00:00Z"),
            annotations: [("armadaproject.io/retry-policy".to_string(), "extra".to_string())].into(),
            state: None,
        },
        runs,
        unreadable_runs: 0,
    }
}

/// A run leased at minute `m`, started 10s later, finished 1m after that.
fn run(id: &str, m: u32, state: i16) -> RunRow {
    RunRow {
        run_id: id.into(),
        node: Some(format!("node-{id}")),
        state,
        leased: t(&format!("2026-01-01T00:{m:02}:00Z")),
        pending: t(&format!("2026-01-01T00:{m:02}:05Z")),
        started: t(&format!("2026-01-01T00:{m:02}:10Z")),
        finished: t(&format!("2026-01-01T00:{:02}:10Z", m + 1)),
        ..RunRow::default()
    }
}

fn runs_json(m: &Mapped) -> String {
    match &m.history {
        Some(h) => failure_history_json(h)["runs"].to_string(),
        None => "none".into(),
    }
}

#[test]
fn each_run_state_maps_as_the_module_table_says() {
    let failed = |code: Option<i32>, cat: Option<&str>, err: Option<&str>| {
        let mut r = run("a", 1, state::FAILED);
        r.exit_code = code;
        r.category = cat.map(String::from);
        r.subcategory = cat.map(|_| "xid-79".to_string());
        r.error = err.map(String::from);
        r
    };
    let with = |state: i16| run("a", 1, state);
    let base = r#""node":"node-a","queuedFor":"1m10s","runFor":"1m""#;
    let cases: Vec<(&str, RunRow, String, Notes)> = vec![
        (
            "failed with everything",
            failed(Some(137), Some("gpu"), Some("CUDA error: uncorrectable ECC")),
            format!(
                r#"[{{{base},"containers":[{{"exitCode":137,"message":"CUDA error: uncorrectable ECC"}}],"category":"gpu","subcategory":"xid-79","executorPath":"failedPod"}}]"#
            ),
            Notes {
                runs: 1,
                first_exit_code_only: 1,
                hint_kept: 1,
                ..Notes::default()
            },
        ),
        (
            "failed, no category",
            failed(Some(1), None, Some("boom")),
            format!(r#"[{{{base},"containers":[{{"exitCode":1,"message":"boom"}}],"executorPath":"failedPod"}}]"#),
            Notes {
                runs: 1,
                first_exit_code_only: 1,
                no_category: 1,
                ..Notes::default()
            },
        ),
        (
            "failed, its error text cut by the source",
            {
                let mut r = failed(Some(1), Some("gpu"), Some("boo… [truncated]"));
                r.error_truncated = true;
                r
            },
            format!(
                r#"[{{{base},"containers":[{{"exitCode":1,"message":"boo… [truncated]"}}],"category":"gpu","subcategory":"xid-79","executorPath":"failedPod"}}]"#
            ),
            Notes {
                runs: 1,
                first_exit_code_only: 1,
                error_text_truncated: 1,
                hint_kept: 1,
                ..Notes::default()
            },
        ),
        (
            "failed without an exit code: no container, error text counted",
            failed(None, Some("gpu"), Some("lost")),
            format!(r#"[{{{base},"category":"gpu","subcategory":"xid-79","executorPath":"failedPod"}}]"#),
            Notes {
                runs: 1,
                no_exit_code: 1,
                error_text_dropped: 1,
                hint_kept: 1,
                ..Notes::default()
            },
        ),
        (
            "succeeded",
            with(state::SUCCEEDED),
            format!(r#"[{{{base},"outcome":"succeeded"}}]"#),
            Notes {
                runs: 1,
                ..Notes::default()
            },
        ),
        (
            "preempted",
            with(state::PREEMPTED),
            format!(r#"[{{{base},"conditions":["Preempted"],"executorPath":"unclassified"}}]"#),
            Notes {
                runs: 1,
                no_category: 1,
                ..Notes::default()
            },
        ),
        (
            "lease returned",
            with(state::LEASE_RETURNED),
            format!(r#"[{{{base},"outcome":"leaseReturned"}}]"#),
            Notes {
                runs: 1,
                ..Notes::default()
            },
        ),
        (
            "lease expired",
            with(state::LEASE_EXPIRED),
            format!(
                r#"[{{{base},"category":"internal","subcategory":"lease-expired","executorPath":"unclassified"}}]"#
            ),
            Notes {
                runs: 1,
                ..Notes::default()
            },
        ),
        (
            "cancelled",
            with(state::CANCELLED),
            format!(r#"[{{{base},"outcome":"cancelled"}}]"#),
            Notes {
                runs: 1,
                ..Notes::default()
            },
        ),
        (
            "unable to schedule",
            with(state::UNABLE_TO_SCHEDULE),
            format!(r#"[{{{base},"outcome":"leaseReturned"}}]"#),
            Notes {
                runs: 1,
                unable_to_schedule: 1,
                ..Notes::default()
            },
        ),
        (
            "terminated",
            with(state::TERMINATED),
            "none".into(),
            Notes {
                terminated: 1,
                ..Notes::default()
            },
        ),
        (
            "max runs exceeded",
            with(state::MAX_RUNS_EXCEEDED),
            "none".into(),
            Notes {
                max_runs_exceeded: 1,
                ..Notes::default()
            },
        ),
        (
            "pending",
            with(state::PENDING),
            "none".into(),
            Notes {
                in_flight_jobs: 1,
                in_flight_runs: 1,
                ..Notes::default()
            },
        ),
        (
            "running",
            with(state::RUNNING),
            "none".into(),
            Notes {
                in_flight_jobs: 1,
                in_flight_runs: 1,
                ..Notes::default()
            },
        ),
        (
            "leased",
            with(state::LEASED),
            "none".into(),
            Notes {
                in_flight_jobs: 1,
                in_flight_runs: 1,
                ..Notes::default()
            },
        ),
        (
            "unknown state",
            with(42),
            "none".into(),
            Notes {
                unknown_state: 1,
                ..Notes::default()
            },
        ),
    ];
    for (name, row, want, notes) in cases {
        let m = map_job(job(vec![row]), None).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(runs_json(&m), want, "{name}");
        assert_eq!(m.notes, notes, "{name}");
    }
}

#[test]
fn job_fields_and_runs_in_leased_order() {
    // Given out of order; the in-flight run ends the history, the run after it is dropped too.
    let mut late = run("c", 5, state::RUNNING);
    late.finished = None;
    let m = map_job(
        job(vec![
            run("b", 3, state::FAILED),
            late,
            run("a", 1, state::PREEMPTED),
            run("d", 7, state::SUCCEEDED),
        ]),
        None,
    )
    .unwrap();
    let h = failure_history_json(m.history.as_ref().unwrap());
    assert_eq!(
        h.to_string(),
        r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{"id":"j1","queue":"ml","jobSet":"sweep-17","annotations":{"armadaproject.io/retry-policy":"extra"},"memory":"8589934592","submittedAt":"2026-01-01T00:00:00Z"},"runs":[{"node":"node-a","queuedFor":"1m10s","runFor":"1m","conditions":["Preempted"],"executorPath":"unclassified"},{"node":"node-b","queuedFor":"1m","runFor":"1m","executorPath":"failedPod"}]}"#
    );
    assert_eq!(m.notes.in_flight_jobs, 1);
    assert_eq!(m.notes.in_flight_runs, 2);
    assert_eq!(m.notes.runs, 2);
}

#[test]
fn out_of_order_and_missing_times_are_written_as_the_record_places_them_and_counted() {
    let mut r = run("a", 1, state::FAILED);
    // Finished before started, and started before submission.
    r.started = t("2025-12-31T23:00:00Z");
    r.finished = t("2025-12-31T22:00:00Z");
    let m = map_job(job(vec![r]), None).unwrap();
    assert_eq!(
        runs_json(&m),
        r#"[{"node":"node-a","startedAt":"2025-12-31T23:00:00Z","executorPath":"failedPod"}]"#
    );
    assert_eq!((m.notes.out_of_order_times, m.notes.started_early), (1, 1));

    let mut r = run("a", 1, state::FAILED);
    r.finished = None;
    let mut j = job(vec![r]);
    j.job.submitted = None;
    let m = map_job(j, None).unwrap();
    assert_eq!(runs_json(&m), r#"[{"node":"node-a","executorPath":"failedPod"}]"#);
    assert_eq!(m.notes.missing_times, 2);
}

#[test]
fn rows_that_cannot_be_mapped_name_job_and_column() {
    let mut j = job(vec![]);
    j.job.memory = -1;
    assert_eq!(
        map_job(j, None).unwrap_err().to_string(),
        "job `j1`: column memory: `-1` where a byte count of 0 or more was expected"
    );
    assert_eq!(
        annotations(&serde_json::json!({"a": 1})).unwrap_err(),
        "annotation `a` is not a string (found `1`)"
    );
    assert_eq!(
        annotations(&serde_json::json!([1])).unwrap_err(),
        "not a JSON object (found `[1]`)"
    );
    assert_eq!(annotations(&serde_json::Value::Null), Ok(BTreeMap::new()));
    let e = RowError::run("j", "r", Place::Field("finished"), "why");
    assert_eq!(e.to_string(), "job `j` run `r`: field finished: why");
    let e = RowError::job("j", Place::Row, "why");
    assert_eq!(e.to_string(), "job `j`: why");
}

#[test]
fn error_text_is_cut_on_a_character_boundary() {
    assert_eq!(error_text(b"plain", false), "plain");
    assert_eq!(error_text(b"bad \xff byte", false), "bad \u{fffd} byte");
    assert_eq!(error_text(b"bad \xff", false), "bad \u{fffd}");
    let mut long = vec![b'a'; ERROR_TEXT_MAX - 2];
    long.extend_from_slice("€".as_bytes()); // 3 bytes: cut after its first two
    assert_eq!(
        error_text(&long, true),
        format!("{}… [truncated]", "a".repeat(ERROR_TEXT_MAX - 2))
    );
    let mut fits = vec![b'a'; ERROR_TEXT_MAX - 3];
    fits.extend_from_slice("€".as_bytes());
    assert_eq!(
        error_text(&fits, true),
        format!("{}€… [truncated]", "a".repeat(ERROR_TEXT_MAX - 3))
    );
}

#[test]
fn state_names_round_trip() {
    for v in 1..=12i16 {
        assert_eq!(state::from_name(state::NAMES[v as usize - 1]), Some(v));
    }
    assert_eq!(state::from_name("RUN_NOPE"), None);
}

/// `job.state` is written when the record is complete and whole: Lookout's terminal states
/// as `watch`'s outcome reads them; not for a job still running, one whose record is not
/// complete (a run in flight, a run without its `finished`), or one with a run left out.
#[test]
fn the_jobs_end_is_written_for_a_complete_whole_record() {
    let end = |state: Option<i16>, runs: Vec<RunRow>, unreadable_runs: u32| {
        let mut j = job(runs);
        j.job.state = state;
        j.unreadable_runs = unreadable_runs;
        let m = map_job(j, None).unwrap();
        failure_history_json(m.history.as_ref().unwrap())["job"]["state"].clone()
    };
    let two = || vec![run("a", 1, state::FAILED), run("b", 4, state::FAILED)];
    for (s, want) in [
        (job_state::SUCCEEDED, "succeeded"),
        (job_state::FAILED, "failed"),
        (job_state::PREEMPTED, "failed"),
        (job_state::REJECTED, "failed"),
        (job_state::CANCELLED, "cancelled"),
    ] {
        assert_eq!(end(Some(s), two(), 0), want, "{s}");
    }
    let null = serde_json::Value::Null;
    // Not terminal; not said.
    assert_eq!(end(Some(3), two(), 0), null);
    assert_eq!(end(None, two(), 0), null);
    // Not complete: a run in flight (the history ends before it), a run not finished.
    let mut running = two();
    running.push(run("c", 7, state::RUNNING));
    assert_eq!(end(Some(job_state::FAILED), running, 0), null);
    let mut unfinished = two();
    unfinished[1].finished = None;
    assert_eq!(end(Some(job_state::FAILED), unfinished, 0), null);
    // Not whole: a run left out by the mapping, or one its source could not read.
    for left_out in [state::TERMINATED, state::MAX_RUNS_EXCEEDED, 99] {
        let mut runs = two();
        runs.push(run("c", 7, left_out));
        assert_eq!(end(Some(job_state::FAILED), runs, 0), null, "{left_out}");
    }
    assert_eq!(end(Some(job_state::FAILED), two(), 1), null);
    // The names of the REST API's `state`.
    for v in 1..=9i16 {
        assert_eq!(job_state::from_name(job_state::NAMES[v as usize - 1]), Some(v));
    }
    assert_eq!(job_state::from_name("DONE"), None);
}

#[test]
fn written_history_reads_back_through_the_simulate_decoder() {
    let mut r = run("a", 1, state::FAILED);
    r.exit_code = Some(3);
    r.error = Some("oops".into());
    let m = map_job(job(vec![r, run("b", 4, state::SUCCEEDED)]), None).unwrap();
    let h = m.history.unwrap();
    let line = failure_history_json(&h).to_string();
    let back = crate::replay::json_lines::decode_line(line.as_bytes(), 1).unwrap();
    assert_eq!(back, h);
    assert_eq!(back.runs[0].containers[0].name(), None);
}

#[test]
fn composed_errors_name_their_containers_and_debug_documents_fill_events_and_conditions() {
    let doc = r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Failed","reason":"UnexpectedAdmissionError","initContainers":[{"name":"init-db","state":"terminated","exitCode":1}],"events":[{"type":"Warning","reason":"UnexpectedAdmissionError","message":"Pod Allocate failed"}]}}"#;
    let evicted = r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Failed","reason":"Evicted"}}"#;
    let failed = |error: &str, exit: Option<i32>, debug: Option<&str>| {
        let mut r = run("a", 1, state::FAILED);
        r.exit_code = exit;
        r.error = Some(error.into());
        r.debug = debug.map(String::from);
        r
    };
    let composed = [
        formats::failed_container("main", 137, "OOMKilled", ""),
        formats::failed_container("init-db", 1, "Error", "no db\nretrying"),
    ]
    .concat();
    let base = r#""node":"node-a","queuedFor":"1m10s","runFor":"1m""#;
    let cases: Vec<(&str, RunRow, String, Notes)> = vec![
        (
            "composed text and a debug document",
            failed(&composed, Some(137), Some(doc)),
            format!(
                r#"[{{{base},"containers":[{{"name":"main","exitCode":137,"reason":"OOMKilled"}},{{"name":"init-db","init":true,"exitCode":1,"reason":"Error","message":"no db\nretrying"}}],"executorPath":"failedPod","events":[{{"type":"Warning","reason":"UnexpectedAdmissionError","message":"Pod Allocate failed"}}]}}]"#
            ),
            Notes {
                runs: 1,
                no_category: 1,
                ..Notes::default()
            },
        ),
        (
            "composed text without an exit code column: the text has the codes",
            failed(&composed, None, None),
            format!(
                r#"[{{{base},"containers":[{{"name":"main","exitCode":137,"reason":"OOMKilled"}},{{"name":"init-db","exitCode":1,"reason":"Error","message":"no db\nretrying"}}],"executorPath":"failedPod"}}]"#
            ),
            Notes {
                runs: 1,
                no_category: 1,
                ..Notes::default()
            },
        ),
        (
            "other text stays one unnamed container; free-text debug is counted, not read",
            failed("Pod was evicted", Some(1), Some("Events: Warning Evicted")),
            format!(
                r#"[{{{base},"containers":[{{"exitCode":1,"message":"Pod was evicted"}}],"executorPath":"failedPod"}}]"#
            ),
            Notes {
                runs: 1,
                no_category: 1,
                first_exit_code_only: 1,
                debug_not_document: 1,
                ..Notes::default()
            },
        ),
        (
            "an evicted pod's reason is the condition `onConditions` reads",
            failed("The node was low on resource: memory.", Some(137), Some(evicted)),
            format!(
                r#"[{{{base},"conditions":["Evicted"],"containers":[{{"exitCode":137,"message":"The node was low on resource: memory."}}],"executorPath":"failedPod"}}]"#
            ),
            Notes {
                runs: 1,
                no_category: 1,
                first_exit_code_only: 1,
                ..Notes::default()
            },
        ),
        (
            "a returned lease without a text keeps its pod's events",
            {
                let mut r = run("a", 1, state::LEASE_RETURNED);
                r.debug = Some(doc.into());
                r
            },
            format!(
                r#"[{{{base},"outcome":"leaseReturned","events":[{{"type":"Warning","reason":"UnexpectedAdmissionError","message":"Pod Allocate failed"}}]}}]"#
            ),
            Notes {
                runs: 1,
                ..Notes::default()
            },
        ),
    ];
    for (what, row, want, notes) in cases {
        let m = map_job(job(vec![row]), None).unwrap();
        assert_eq!(runs_json(&m), want, "{what}");
        assert_eq!(m.notes, notes, "{what}");
    }
}

/// The deployed categorizer of the pod-issue rows: `image` (hint on its `pull` rule) and
/// `quota` (no hint).
fn deployed() -> Hints {
    let rule = |sub: &str, hint: &str| CategoryRule {
        subcategory: sub.into(),
        hint: hint.into(),
        on_pod_error: Some("not found|NotFound".into()),
        ..CategoryRule::default()
    };
    Hints::of(&ErrorCategories {
        enabled: true,
        categories: vec![
            Category {
                name: "image".into(),
                action: String::new(),
                rules: vec![rule("pull", "Check the image name and the registry")],
            },
            Category {
                name: "quota".into(),
                action: String::new(),
                rules: vec![rule("", "")],
            },
        ],
        ..ErrorCategories::default()
    })
}

/// Each executor path Lookout's state and text tell (docs/lookout.md "Pod errors, events and
/// containers"), the texts built from upstream's formats: the path said, a pod issue's text
/// as `podError` without the deployed hint (kept whole and counted without the config), a
/// returned lease's text and category kept.
#[test]
fn each_executor_path_is_read_from_the_state_and_the_text() {
    let hint = "Check the image name and the registry";
    let event = "Failed to pull image \"reg/x:1\": rpc error: code = NotFound desc = failed to pull and unpack image \"reg/x:1\": not found";
    let fail = formats::stuck_pod(false, &formats::checks(&[&formats::matched_check("check-0", event)]));
    let retry = formats::stuck_pod(
        true,
        &formats::waiting(
            "main",
            "ErrImagePull",
            "Back-off pulling image \"reg/x:1\"",
            "check-2",
            "15m0s",
        ),
    );
    let row = |state: i16, error: &str, exit: Option<i32>, cat: Option<(&str, &str)>, debug: Option<&str>| {
        let mut r = run("a", 1, state);
        r.exit_code = exit;
        r.error = Some(error.into());
        r.category = cat.map(|c| c.0.to_string());
        r.subcategory = cat.map(|c| c.1.to_string()).filter(|s| !s.is_empty());
        r.debug = debug.map(String::from);
        r
    };
    let json = |s: &str| serde_json::to_string(s).unwrap();
    let base = r#""node":"node-a","queuedFor":"1m10s","runFor":"1m""#;
    let failed_debug = r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Failed"}}"#;
    let hinted = |text: &str| formats::append_hint(text, hint);
    let composed = formats::failed_container("main", 1, "Error", "pull: not found");
    let one = Notes {
        runs: 1,
        ..Notes::default()
    };
    let cases: Vec<(&str, RunRow, bool, String, Notes)> = vec![
        (
            "a stuck pod the checks fail: state 4, its text without the hint",
            row(state::FAILED, &hinted(&fail), Some(0), Some(("image", "pull")), None),
            true,
            format!(
                r#"[{{{base},"category":"image","subcategory":"pull","executorPath":"stuckPod","podError":{}}}]"#,
                json(&fail)
            ),
            one,
        ),
        (
            "the same without the deployed categorizer: kept whole, counted",
            row(state::FAILED, &hinted(&fail), Some(0), Some(("image", "pull")), None),
            false,
            format!(
                r#"[{{{base},"category":"image","subcategory":"pull","executorPath":"stuckPod","podError":{}}}]"#,
                json(&hinted(&fail))
            ),
            Notes { hint_kept: 1, ..one },
        ),
        (
            "a stuck pod retried: a returned lease keeps its text and category",
            row(
                state::LEASE_RETURNED,
                &hinted(&retry),
                None,
                Some(("image", "pull")),
                None,
            ),
            true,
            format!(
                r#"[{{{base},"category":"image","subcategory":"pull","outcome":"leaseReturned","executorPath":"stuckPod","podError":{}}}]"#,
                json(&retry)
            ),
            one,
        ),
        (
            "a stuck pod whose init container failed: Lookout's one exit code, no message",
            row(state::FAILED, &fail, Some(2), None, None),
            true,
            format!(
                r#"[{{{base},"containers":[{{"exitCode":2}}],"executorPath":"stuckPod","podError":{}}}]"#,
                json(&fail)
            ),
            Notes {
                no_category: 1,
                first_exit_code_only: 1,
                ..one
            },
        ),
        (
            "a failed-pod check: a returned lease with a category",
            row(state::LEASE_RETURNED, "quota exceeded", None, Some(("quota", "")), None),
            true,
            format!(
                r#"[{{{base},"category":"quota","outcome":"leaseReturned","executorPath":"failedPodCheck","podError":"quota exceeded"}}]"#
            ),
            one,
        ),
        (
            "a failed-pod check without a category, told by its debug document",
            row(state::LEASE_RETURNED, "quota exceeded", None, None, Some(failed_debug)),
            true,
            format!(
                r#"[{{{base},"outcome":"leaseReturned","executorPath":"failedPodCheck","podError":"quota exceeded"}}]"#
            ),
            one,
        ),
        (
            "a returned lease Lookout cannot place: kept, no path, counted",
            row(
                state::LEASE_RETURNED,
                "pods \"armada-x-0\" already exists",
                None,
                None,
                None,
            ),
            true,
            format!(r#"[{{{base},"outcome":"leaseReturned","podError":"pods \"armada-x-0\" already exists"}}]"#),
            Notes {
                lease_return_unplaced: 1,
                ..one
            },
        ),
        (
            "a failed pod: its containers, the hint off the last message",
            row(
                state::FAILED,
                &hinted(&composed),
                Some(1),
                Some(("image", "pull")),
                None,
            ),
            true,
            format!(
                r#"[{{{base},"containers":[{{"name":"main","exitCode":1,"reason":"Error","message":"pull: not found"}}],"category":"image","subcategory":"pull","executorPath":"failedPod"}}]"#
            ),
            one,
        ),
        (
            "Armada's own failure: never classified, its text as before",
            row(
                state::FAILED,
                formats::active_deadline(),
                Some(0),
                Some(("internal", "active-deadline")),
                None,
            ),
            true,
            format!(
                r#"[{{{base},"containers":[{{"exitCode":0,"message":"pod has exceeded active deadline seconds"}}],"category":"internal","subcategory":"active-deadline","executorPath":"unclassified"}}]"#
            ),
            Notes {
                first_exit_code_only: 1,
                ..one
            },
        ),
    ];
    let hints = deployed();
    for (what, row, with_hints, want, notes) in cases {
        let m = map_job(job(vec![row]), with_hints.then_some(&hints)).unwrap();
        assert_eq!(runs_json(&m), want, "{what}");
        assert_eq!(m.notes, notes, "{what}");
    }
}

/// Each run's start and end come back exactly as Lookout has them, read as the history
/// format places a run (`replay::contention::run_spans`), also when a run starts before the
/// one before it finished; each run's `pool` is written, a NULL one left out.
#[test]
fn times_come_back_exactly_and_each_runs_pool_is_written() {
    let mut a = run("a", 1, state::FAILED);
    a.pool = Some("gpu-a100".into());
    // Leased, pending and started before `a` finished (00:02:10).
    let mut b = run("b", 1, state::FAILED);
    b.leased = t("2026-01-01T00:01:30Z");
    b.pending = t("2026-01-01T00:01:35Z");
    b.started = t("2026-01-01T00:01:40Z");
    b.finished = t("2026-01-01T00:03:10Z");
    b.pool = Some(String::new());
    let c = run("c", 5, state::SUCCEEDED);
    let rows = vec![a, b, c];
    let m = map_job(job(rows.clone()), None).unwrap();
    assert_eq!(
        runs_json(&m),
        r#"[{"node":"node-a","pool":"gpu-a100","queuedFor":"1m10s","runFor":"1m","executorPath":"failedPod"},{"node":"node-b","startedAt":"2026-01-01T00:01:40Z","runFor":"1m30s","executorPath":"failedPod"},{"node":"node-c","queuedFor":"1m30s","runFor":"1m","outcome":"succeeded"}]"#
    );
    assert_eq!((m.notes.started_early, m.notes.out_of_order_times), (1, 0));
    let h = m.history.unwrap();
    let mut spans = Vec::new();
    crate::replay::contention::run_spans(&h, &mut spans);
    let lookout: Vec<Option<(i64, i64)>> = rows
        .iter()
        .map(|r| Some((r.started.unwrap().0, r.finished.unwrap().0)))
        .collect();
    assert_eq!(spans, lookout);
}
