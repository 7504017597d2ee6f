//! Upstream's executor tests of what its categorizer is given on each path, at commit
//! `207cc9e`: `internal/executor/service/pod_issue_handler_test.go` (a stuck pod, the
//! Delete-action check, Armada's own issues) and `job_state_reporter_test.go` (an ordinary
//! failed pod), each row a FailureHistory run that says its `executorPath`, through `simulate
//! --engine upstream --categorizer c.yaml -o json` as a user runs it (docs/categorizer.md
//! "Which matchers see what"). The pod-error texts are built from upstream's own format
//! strings (`contract/executor/formats.txt`), the pod checks' names and grace periods as
//! upstream's test configures them (`makePendingPodChecker`: unnamed checks, `1ns`).
//!
//! Not expressible: what these tests assert besides the classification (the events emitted,
//! the pod deleted before the report, the metrics counted, a report that fails and is tried
//! again): the executor's own mechanics, not what a run is categorized as. A retried stuck
//! pod's "nil classifier" row is a config that is not enabled (the executor builds no
//! classifier from it, `internal/executor/application.go:205-211`).

use serde_json::{json, Value};

use super::replayed;
use crate::support::executor_formats as formats;

/// What a run's decision record and the summary say under `config` (a whole `errorCategories`
/// mapping): (category, subcategory, "" for none; the pod kept, so that its Retry collides).
fn on_path(config: &str, run: Value) -> (String, String, bool) {
    let history = json!({"job": {"id": "j"}, "runs": [run, {"outcome": "succeeded"}]});
    let v = replayed(config, &history.to_string());
    let record = &v["jobs"][0]["runs"][0];
    let text = |field: &str| record[field].as_str().unwrap_or_default().to_string();
    let collisions = v["summary"]["collisions"].as_u64().expect("collisions");
    (text("category"), text("subcategory"), collisions == 1)
}

/// An enabled config of one category `name` (`action`) with one rule: `rule`, a YAML flow
/// mapping.
fn config(name: &str, action: &str, rule: &str) -> String {
    format!("errorCategories:\n  enabled: true\n  categories:\n  - name: {name}\n    action: {action}\n    rules:\n    - {rule}\n")
}

/// `podErrorClassifier(category, subcategory, pattern, hint)` (pod_issue_handler_test.go).
fn pod_error_classifier(category: &str, subcategory: &str, pattern: &str, hint: &str) -> String {
    config(
        category,
        "Retain",
        &format!("{{onPodError: {{pattern: {pattern:?}}}, subcategory: {subcategory}, hint: {hint:?}}}"),
    )
}

/// `classifierForExitCode(category, subcategory, exitCode, deleteOnFailure)`
/// (job_state_reporter_test.go).
fn classifier_for_exit_code(category: &str, subcategory: &str, code: i64, delete: bool) -> String {
    config(
        category,
        if delete { "Delete" } else { "Retain" },
        &format!("{{onExitCodes: {{operator: In, values: [{code}]}}, subcategory: {subcategory}}}"),
    )
}

/// `makeFailedPodWithExitCode(code)`: a failed pod whose container `main` ended with `code`
/// (`Error`), as Lookout's composed text reads back.
fn failed_pod_with_exit_code(code: i64) -> Value {
    json!({"executorPath": "failedPod", "containers": [{"name": "main", "exitCode": code, "reason": "Error"}]})
}

/// `makeUnretryableStuckPod` with the waiting message `message`, through `makePendingPodChecker`:
/// its unnamed container waiting for `ImagePullBackOff`, matched by the first container check
/// (`check-0`, Fail, `1ns`).
fn unretryable_stuck_pod(message: &str) -> String {
    formats::stuck_pod(
        false,
        &formats::waiting("", "ImagePullBackOff", message, "check-0", "1ns"),
    )
}

/// `makeRetryableStuckPod` with its Warning event `Some other message`, through
/// `makePendingPodChecker`: the second event check and the second container check (`check-1`,
/// Retry, `1ns`) both match, their messages joined.
fn retryable_stuck_pod() -> String {
    formats::stuck_pod(
        true,
        &formats::checks(&[
            &formats::matched_check("check-1", "Some other message"),
            &formats::waiting("", "Some reason", "Some other message", "check-1", "1ns"),
        ]),
    )
}

// pod_issue_handler_test.go

/// `TestPodIssueService_OnPodErrorClassifies` "platform mismatch from kubelet error with hint":
/// a stuck pod's text, header and container check included, is what `onPodError` searches.
#[test]
fn on_pod_error_classifies_a_stuck_pod_by_its_text() {
    let text =
        unretryable_stuck_pod("Failed to pull image \"amd64/busybox:latest\": no match for platform in manifest");
    assert_eq!(
        on_path(
            &pod_error_classifier(
                "infrastructure",
                "platform_mismatch",
                "no match for platform in manifest",
                "Build for the cluster's CPU architecture (typically x64/arm64 mismatch)",
            ),
            json!({"executorPath": "stuckPod", "podError": text}),
        ),
        // The issue handler deletes the pod whatever the category: no collision.
        ("infrastructure".into(), "platform_mismatch".into(), false),
        "pod_issue_handler_test.go TestPodIssueService_OnPodErrorClassifies"
    );
}

/// `TestPodIssueService_RetryableIssue_LeaseReturnClassification`, each row: the returned
/// lease of a stuck pod is classified on its text (`Unable to start pod` matches the header).
#[test]
fn a_stuck_pods_returned_lease_is_classified_on_its_text() {
    let run = json!({"outcome": "leaseReturned", "executorPath": "stuckPod", "podError": retryable_stuck_pod()});
    let hint = "Check the image reference and registry availability";
    let rows = [
        (
            "matching rule sets category and records failure",
            pod_error_classifier("pih-retry-cat", "pih-retry-sub", "Unable to start pod", hint),
            ("pih-retry-cat", "pih-retry-sub"),
        ),
        (
            "no matching rule leaves category empty",
            pod_error_classifier("pih-retry-nomatch-cat", "pih-retry-nomatch-sub", "pattern that never matches", ""),
            ("", ""),
        ),
        (
            "nil classifier leaves category empty",
            "errorCategories:\n  enabled: false\n  categories:\n  - name: any\n    rules:\n    - onPodError: {pattern: '.*'}\n"
                .to_string(),
            ("", ""),
        ),
    ];
    for (name, c, (category, subcategory)) in rows {
        assert_eq!(
            on_path(&c, run.clone()),
            (category.to_string(), subcategory.to_string(), false),
            "pod_issue_handler_test.go TestPodIssueService_RetryableIssue_LeaseReturnClassification {name:?}"
        );
    }
}

/// One row of upstream's table: its name, the categorizer, the run, and the expected
/// category, subcategory and whether the pod is kept.
type DeleteRow = (&'static str, String, Value, (&'static str, &'static str, bool));

/// `TestDetectAndRegisterDeleteActionIssue`, each row the Delete-action check can express: a
/// failed pod's category and whether it is kept. A Retain category is still the run's (the
/// container-only classification gives it), its pod kept.
#[test]
fn the_delete_action_check_keeps_only_a_delete_category() {
    let rows: [DeleteRow; 4] = [
        (
            "failed pod in a delete-action category",
            classifier_for_exit_code("pih-del-cat", "pih-del-sub", 42, true),
            failed_pod_with_exit_code(42),
            ("pih-del-cat", "pih-del-sub", false),
        ),
        (
            "failed pod in a retain category",
            classifier_for_exit_code("pih-del-cat", "pih-del-sub", 42, false),
            failed_pod_with_exit_code(42),
            ("pih-del-cat", "pih-del-sub", true),
        ),
        (
            // No container statuses: only the pod's status message classifies it.
            "rejected pod matches an onPodError delete rule",
            config(
                "pih-rejected-cat",
                "Delete",
                "{onPodError: {pattern: 'Pod was rejected.*'}}",
            ),
            json!({"executorPath": "failedPod", "podError": "Pod was rejected: not enough cpus available to satisfy request"}),
            ("pih-rejected-cat", "", false),
        ),
        (
            "rejected pod matches an onPodEvents delete rule",
            config(
                "pih-gpu-cat",
                "Delete",
                "{onPodEvents: {regexp: 'devices unavailable for nvidia.com/gpu', type: Warning}}",
            ),
            json!({"executorPath": "failedPod", "events": [{"type": "Warning", "reason": "UnexpectedAdmissionError", "message": "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0"}]}),
            ("pih-gpu-cat", "", false),
        ),
    ];
    for (name, c, run, (category, subcategory, kept)) in rows {
        assert_eq!(
            on_path(&c, run),
            (category.to_string(), subcategory.to_string(), kept),
            "pod_issue_handler_test.go TestDetectAndRegisterDeleteActionIssue {name:?}"
        );
    }
}

/// `TestPodIssueService_StructuralIssueIsInternal_RegardlessOfClassifier`: a pod stuck
/// terminating is `internal/stuck-terminating` even when an OOMKilled rule would match it.
#[test]
fn a_structural_issue_is_internal_regardless_of_the_classifier() {
    let run = json!({
        "executorPath": "unclassified",
        "category": "internal",
        "subcategory": "stuck-terminating",
        "containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}],
    });
    assert_eq!(
        on_path(
            &config(
                "oom-failure",
                "Retain",
                "{onConditions: [OOMKilled], subcategory: kernel-oom}"
            ),
            run
        ),
        ("internal".into(), "stuck-terminating".into(), false),
        "pod_issue_handler_test.go TestPodIssueService_StructuralIssueIsInternal_RegardlessOfClassifier"
    );
}

// job_state_reporter_test.go

/// `TestJobStateReporter_PodFailed_EmitsJobFailedEventWhenClassifierMatches` and
/// `TestJobStateReporter_PodFailed_KeepsPodWhenActionRetain`: an ordinary failed pod gets
/// its containers' category and keeps its pod.
#[test]
fn an_ordinary_failed_pod_is_classified_on_its_containers_and_kept() {
    for (name, category) in [
        (
            "TestJobStateReporter_PodFailed_EmitsJobFailedEventWhenClassifierMatches",
            "jsr-emit",
        ),
        ("TestJobStateReporter_PodFailed_KeepsPodWhenActionRetain", "jsr-keep"),
    ] {
        assert_eq!(
            on_path(
                &classifier_for_exit_code(&format!("{category}-cat"), &format!("{category}-sub"), 42, false),
                failed_pod_with_exit_code(42)
            ),
            (format!("{category}-cat"), format!("{category}-sub"), true),
            "job_state_reporter_test.go {name}"
        );
    }
}

/// Not a row of upstream's: `ClassifyContainerError` passes no pod-error text and no events
/// (`classifier.go:229-231`), so on an ordinary failed pod a Retain category's `onPodError`
/// and `onPodEvents` never match, whatever the text and the events (the Delete-action check
/// that saw them discards a Retain result).
#[test]
fn an_ordinary_failed_pod_never_matches_a_pod_level_rule_of_a_retain_category() {
    let run = json!({
        "executorPath": "failedPod",
        "containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": "pull: not found"}],
        "events": [{"type": "Warning", "reason": "Failed", "message": "Failed to pull image: not found"}],
    });
    for rule in [
        "{onPodError: {pattern: 'not found|NotFound'}}",
        "{onPodEvents: {regexp: 'not found', type: Warning}}",
    ] {
        assert_eq!(
            on_path(&config("image", "Retain", rule), run.clone()),
            (String::new(), String::new(), true),
            "{rule}"
        );
    }
    // A Delete category's, the check keeps.
    for rule in [
        "{onPodError: {pattern: 'not found|NotFound'}}",
        "{onPodEvents: {regexp: 'not found', type: Warning}}",
    ] {
        assert_eq!(
            on_path(&config("image", "Delete", rule), run.clone()),
            ("image".into(), String::new(), false),
            "{rule}"
        );
    }
}
