//! Upstream's categorizer tables, `internal/executor/categorizer/classifier_test.go` at commit
//! `207cc9e`: `TestClassify` through `simulate --engine upstream --categorizer` (the category
//! and subcategory of the decision record, and whether the pod is kept), and
//! `TestNewClassifier_ValidationErrors` through `validate -f` on the categorizer document, in
//! the executor's words (docs/categorizer.md: values in backticks where the executor writes
//! double quotes).
//!
//! Upstream's "nil pod returns empty" is expressed as a run that carries nothing (no
//! containers, conditions, pod error or events): a FailureHistory run has no nil pod.
//!
//! Not expressible:
//! - `TestClassifyResult_AppendHint`, all 3 rows ("empty hint returns message unchanged",
//!   "non-empty hint is appended after a blank line", "empty message with hint preserves
//!   separator"): retryctl keeps a rule's `hint` but shows no run's failure message, so no
//!   output carries the message with the hint appended.
//! - `TestClassify_RecordsRuleEvaluationDuration`: its classification (`user_error` /
//!   `bad_exit`) is a case below; the Prometheus histogram of rule evaluations it counts is
//!   the executor's metric, which retryctl has no equivalent of.

use super::PodAction::{Delete, Retain};
use super::{classify, one_error, validate_file, PodAction};

/// One row of `TestClassify`: upstream's name, the `errorCategories` body, the run, and
/// upstream's (`expectedCategory`, `expectedSubcategory`, `expectedAction`).
fn row(name: &str, categories: &str, run: &str, want: (&str, &str, PodAction)) {
    let (category, subcategory, action) = classify(categories, run);
    assert_eq!(
        (category.as_str(), subcategory.as_str(), action),
        want,
        "classifier_test.go TestClassify {name:?}"
    );
}

// TestClassify

#[test]
fn on_pod_events_matches_a_warning_event_by_message_and_type() {
    row(
        "onPodEvents matches a warning event by message and type",
        "categories:\n- name: gpu_unavailable\n  action: Delete\n  rules:\n  - onPodEvents: {regexp: 'Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu.*', type: Warning}\n    subcategory: device_plugin",
        r#"{"events": [{"type": "Normal", "message": "Successfully assigned default/pod to node"}, {"type": "Warning", "reason": "UnexpectedAdmissionError", "message": "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0"}]}"#,
        ("gpu_unavailable", "device_plugin", Delete),
    );
}

#[test]
fn on_pod_events_reason_filter_rejects_a_different_reason() {
    row(
        "onPodEvents reason filter rejects a different reason",
        "categories:\n- name: gpu_unavailable\n  rules:\n  - onPodEvents: {regexp: '.*', reason: UnexpectedAdmissionError, type: Warning}",
        r#"{"events": [{"type": "Warning", "reason": "FailedScheduling", "message": "anything"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn on_pod_events_does_not_match_an_event_of_a_different_type() {
    row(
        "onPodEvents does not match an event of a different type",
        "categories:\n- name: gpu_unavailable\n  rules:\n  - onPodEvents: {regexp: '.*', type: Warning}",
        r#"{"events": [{"type": "Normal", "message": "anything"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn on_pod_events_does_not_match_without_events() {
    row(
        "onPodEvents does not match without events",
        "categories:\n- name: gpu_unavailable\n  rules:\n  - onPodEvents: {regexp: '.*', type: Warning}",
        r#"{"podError": "some pod error", "containers": [{"name": "main", "exitCode": 1, "reason": "Error"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn action_propagates_from_the_matched_category() {
    row(
        "action propagates from the matched category",
        "categories:\n- name: infra\n  action: Delete\n  rules:\n  - onExitCodes: {operator: In, values: [42]}",
        r#"{"containers": [{"name": "main", "exitCode": 42, "reason": "Error"}]}"#,
        ("infra", "", Delete),
    );
}

#[test]
fn oom_condition_matches() {
    row(
        "OOM condition matches",
        "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]\n    subcategory: kernel",
        r#"{"containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}]}"#,
        ("oom", "kernel", Retain),
    );
}

#[test]
fn exit_code_in_matches() {
    row(
        "exit code In matches",
        "categories:\n- name: cuda_error\n  rules:\n  - onExitCodes: {operator: In, values: [74, 75]}",
        r#"{"containers": [{"name": "main", "exitCode": 74, "reason": "Error"}]}"#,
        ("cuda_error", "", Retain),
    );
}

#[test]
fn exit_code_not_in_matches() {
    row(
        "exit code NotIn matches",
        "categories:\n- name: unexpected\n  rules:\n  - onExitCodes: {operator: NotIn, values: [1, 2]}",
        r#"{"containers": [{"name": "main", "exitCode": 42, "reason": "Error"}]}"#,
        ("unexpected", "", Retain),
    );
}

#[test]
fn termination_message_regex_matches() {
    row(
        "termination message regex matches",
        "categories:\n- name: gpu_error\n  rules:\n  - onTerminationMessage: {pattern: '(?i)cuda.*error'}\n    subcategory: cuda",
        r#"{"containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": "CUDA memory error on device 0"}]}"#,
        ("gpu_error", "cuda", Retain),
    );
}

#[test]
fn first_match_wins_across_categories() {
    row(
        "first match wins across categories",
        "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]\n- name: high_exit\n  rules:\n  - onExitCodes: {operator: In, values: [137]}",
        r#"{"containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}]}"#,
        ("oom", "", Retain),
    );
}

#[test]
fn no_match_returns_empty_when_no_default_set() {
    row(
        "no match returns empty when no default set",
        "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]",
        r#"{"containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": "normal failure"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn custom_default_category() {
    row(
        "custom default category",
        "defaultCategory: other\ncategories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]",
        r#"{"containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": "normal failure"}]}"#,
        ("other", "", Retain),
    );
}

#[test]
fn custom_default_category_and_subcategory() {
    row(
        "custom default category and subcategory",
        "defaultCategory: uncategorized\ndefaultSubcategory: unknown\ncategories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]",
        r#"{"containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": "normal failure"}]}"#,
        ("uncategorized", "unknown", Retain),
    );
}

#[test]
fn matching_rule_subcategory_wins_over_default_subcategory() {
    row(
        "matching rule subcategory wins over default subcategory",
        "defaultCategory: uncategorized\ndefaultSubcategory: unknown\ncategories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]\n    subcategory: kernel",
        r#"{"containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}]}"#,
        ("oom", "kernel", Retain),
    );
}

#[test]
fn nil_pod_returns_empty() {
    row(
        "nil pod returns empty",
        "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]",
        r#"{}"#,
        ("", "", Retain),
    );
}

#[test]
fn init_container_is_checked() {
    row(
        "init container is checked",
        "categories:\n- name: init_fail\n  rules:\n  - onExitCodes: {operator: In, values: [1]}",
        r#"{"containers": [{"name": "init", "init": true, "exitCode": 1, "reason": "Error"}]}"#,
        ("init_fail", "", Retain),
    );
}

#[test]
fn evicted_condition_matches() {
    row(
        "evicted condition matches",
        "categories:\n- name: evicted\n  rules:\n  - onConditions: [Evicted]",
        r#"{"conditions": ["Evicted"]}"#,
        ("evicted", "", Retain),
    );
}

#[test]
fn deadline_exceeded_condition_matches() {
    row(
        "deadline exceeded condition matches",
        "categories:\n- name: timeout\n  rules:\n  - onConditions: [DeadlineExceeded]",
        r#"{"conditions": ["DeadlineExceeded"]}"#,
        ("timeout", "", Retain),
    );
}

#[test]
fn rules_within_category_are_ored() {
    row(
        "rules within category are ORed",
        "categories:\n- name: infra\n  rules:\n  - onConditions: [OOMKilled]\n  - onExitCodes: {operator: In, values: [137]}",
        r#"{"containers": [{"name": "main", "exitCode": 137, "reason": "Error"}]}"#,
        ("infra", "", Retain),
    );
}

#[test]
fn exit_code_0_container_is_skipped() {
    row(
        "exit code 0 container is skipped",
        "categories:\n- name: msg_match\n  rules:\n  - onTerminationMessage: {pattern: success}",
        r#"{"containers": [{"name": "sidecar", "exitCode": 0, "reason": "Completed", "message": "success message"}, {"name": "main", "exitCode": 1, "reason": "Error", "message": "actual failure"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn container_name_targets_specific_container() {
    row(
        "containerName targets specific container",
        "categories:\n- name: main_oom\n  rules:\n  - containerName: main\n    onConditions: [OOMKilled]",
        r#"{"containers": [{"name": "sidecar", "exitCode": 137, "reason": "OOMKilled"}, {"name": "main", "exitCode": 1, "reason": "Error"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn container_name_matches_when_container_matches() {
    row(
        "containerName matches when container matches",
        "categories:\n- name: main_error\n  rules:\n  - containerName: main\n    onExitCodes: {operator: In, values: [42]}",
        r#"{"containers": [{"name": "main", "exitCode": 42, "reason": "Error"}]}"#,
        ("main_error", "", Retain),
    );
}

#[test]
fn no_container_name_matches_any_container() {
    row(
        "no containerName matches any container",
        "categories:\n- name: any_oom\n  rules:\n  - onConditions: [OOMKilled]",
        r#"{"containers": [{"name": "sidecar", "exitCode": 137, "reason": "OOMKilled"}]}"#,
        ("any_oom", "", Retain),
    );
}

#[test]
fn empty_config_returns_empty() {
    row(
        "empty config returns empty",
        "",
        r#"{"containers": [{"name": "main", "exitCode": 1, "reason": "Error"}]}"#,
        ("", "", Retain),
    );
}

#[test]
fn on_pod_error_matches_the_captured_kubelet_error() {
    row(
        "onPodError matches the captured kubelet error",
        "categories:\n- name: infrastructure\n  rules:\n  - onPodError: {pattern: no match for platform in manifest}\n    subcategory: platform_mismatch",
        r#"{"podError": "Failed to pull image \"amd64/busybox:latest\": no match for platform in manifest: not found", "containers": [{"name": "main"}]}"#,
        ("infrastructure", "platform_mismatch", Retain),
    );
}

#[test]
fn empty_pod_error_message_does_not_match_on_pod_error() {
    row(
        "empty podErrorMessage does not match onPodError",
        "categories:\n- name: infrastructure\n  rules:\n  - onPodError: {pattern: anything}\n    subcategory: x",
        r#"{"podError": ""}"#,
        ("", "", Retain),
    );
}

#[test]
fn classify_container_error_must_not_match_on_pod_error_even_when_regex_matches_empty() {
    row(
        "ClassifyContainerError must not match onPodError even when regex matches empty",
        "categories:\n- name: infrastructure\n  rules:\n  - onPodError: {pattern: '.*'}\n    subcategory: should_not_fire",
        r#"{}"#,
        ("", "", Retain),
    );
}

#[test]
fn on_pod_error_ignores_container_name_scope_pod_level_error_has_no_container_attribution() {
    row(
        "onPodError ignores ContainerName scope (pod-level error has no container attribution)",
        "categories:\n- name: infrastructure\n  rules:\n  - containerName: init\n    onPodError: {pattern: no match for platform in manifest}\n    subcategory: platform_mismatch",
        r#"{"podError": "Failed to pull image \"amd64/busybox:latest\": no match for platform in manifest: not found", "containers": [{"name": "main"}]}"#,
        ("infrastructure", "platform_mismatch", Retain),
    );
}

#[test]
fn on_termination_message_does_not_match_pod_level_pod_error_message() {
    row(
        "onTerminationMessage does not match pod-level podErrorMessage",
        "categories:\n- name: infrastructure\n  rules:\n  - onTerminationMessage: {pattern: no match for platform in manifest}\n    subcategory: should_not_fire",
        r#"{"podError": "Failed to pull image \"amd64/busybox:latest\": no match for platform in manifest: not found", "containers": [{"name": "main"}]}"#,
        ("", "", Retain),
    );
}

/// `TestClassify_RecordsRuleEvaluationDuration`'s classification: the first rule that
/// matches, across categories, gives the category and its subcategory (the histogram it
/// counts is not expressible).
#[test]
fn records_rule_evaluation_duration_classifies_by_the_first_matching_rule() {
    row(
        "TestClassify_RecordsRuleEvaluationDuration",
        "categories:\n- name: infra\n  rules:\n  - onConditions: [OOMKilled]\n    subcategory: oom\n- name: user_error\n  rules:\n  - onExitCodes: {operator: In, values: [42]}\n    subcategory: bad_exit\n  - onExitCodes: {operator: In, values: [74]}\n    subcategory: other_exit",
        r#"{"containers": [{"name": "main", "exitCode": 42, "reason": "Error"}]}"#,
        ("user_error", "bad_exit", Retain),
    );
}

// TestNewClassifier_ValidationErrors: `validate -f c.yaml` on the categorizer document, exit 3
// and the executor's error at its field.

/// `validate -f c.yaml` on an enabled `errorCategories` mapping whose body (indented under
/// it) is `body`: the whole exchange.
fn categorizer(body: &str) -> String {
    validate_file("c.yaml", &format!("errorCategories:\n  enabled: true\n{body}"))
}

/// upstream: `must have a name`
#[test]
fn empty_name() {
    assert_eq!(
        categorizer("  categories:\n  - name: \"\"\n    rules:\n    - onConditions: [OOMKilled]\n"),
        one_error(
            "c.yaml (ErrorCategories)",
            "4:11 errorCategories.categories[0].name: category config must have a name"
        ),
        "classifier_test.go TestNewClassifier_ValidationErrors \"empty name\""
    );
}

/// upstream: `must specify one of`
#[test]
fn empty_rule() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - {}\n"),
        one_error("c.yaml (ErrorCategories)", "6:7 errorCategories.categories[0].rules[0]: category `bad` rule 0: rule must specify one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"empty rule\""
    );
}

/// upstream: `must specify only one of`
#[test]
fn multiple_matchers_in_rule() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onConditions: [OOMKilled]\n      onExitCodes: {operator: In, values: [137]}\n"),
        one_error("c.yaml (ErrorCategories)", "6:7 errorCategories.categories[0].rules[0]: category `bad` rule 0: rule must specify only one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"multiple matchers in rule\""
    );
}

/// upstream: `unknown condition`
#[test]
fn unknown_condition() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onConditions: [NotARealCondition]\n"),
        one_error("c.yaml (ErrorCategories)", "6:22 errorCategories.categories[0].rules[0].onConditions[0]: category `bad` rule 0: unknown condition `NotARealCondition`, valid values: OOMKilled, Evicted, DeadlineExceeded"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"unknown condition\""
    );
}

/// upstream: `invalid action`
#[test]
fn invalid_category_action() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    action: Remove\n    rules:\n    - onExitCodes: {operator: In, values: [1]}\n"),
        one_error("c.yaml (ErrorCategories)", "5:13 errorCategories.categories[0].action: category `bad`: invalid action `Remove`: must be `Delete` or `Retain`"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"invalid category action\""
    );
}

/// upstream: `invalid onPodEvents regexp`
#[test]
fn invalid_on_pod_events_regexp() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onPodEvents: {regexp: \"([invalid\", type: Warning}\n"),
        one_error("c.yaml (ErrorCategories)", "6:29 errorCategories.categories[0].rules[0].onPodEvents.regexp: category `bad` rule 0: invalid onPodEvents regexp `([invalid`: unclosed character class"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"invalid onPodEvents regexp\""
    );
}

/// upstream: `invalid onPodEvents type`
#[test]
fn invalid_on_pod_events_type() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onPodEvents: {regexp: \".*\", type: Info}\n"),
        one_error("c.yaml (ErrorCategories)", "6:41 errorCategories.categories[0].rules[0].onPodEvents.type: category `bad` rule 0: invalid onPodEvents type `Info`, must be `Normal` or `Warning`"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"invalid onPodEvents type\""
    );
}

/// upstream: `invalid onPodEvents type`
#[test]
fn on_pod_events_type_is_required() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onPodEvents: {regexp: \".*\"}\n"),
        one_error("c.yaml (ErrorCategories)", "6:20 errorCategories.categories[0].rules[0].onPodEvents.type: category `bad` rule 0: invalid onPodEvents type ``, must be `Normal` or `Warning`"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"onPodEvents type is required\""
    );
}

/// upstream: `invalid exit code operator`
#[test]
fn invalid_exit_code_operator() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onExitCodes: {operator: Equals, values: [1]}\n"),
        one_error("c.yaml (ErrorCategories)", "6:31 errorCategories.categories[0].rules[0].onExitCodes.operator: category `bad` rule 0: invalid exit code operator `Equals`, must be `In` or `NotIn`"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"invalid exit code operator\""
    );
}

/// upstream: `requires at least one value`
#[test]
fn empty_exit_code_values() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onExitCodes: {operator: In}\n"),
        one_error("c.yaml (ErrorCategories)", "6:20 errorCategories.categories[0].rules[0].onExitCodes.values: category `bad` rule 0: exit code matcher requires at least one value"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"empty exit code values\""
    );
}

/// upstream: `invalid onTerminationMessage regex`
#[test]
fn invalid_on_termination_message_regex() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onTerminationMessage: {pattern: \"[invalid\"}\n"),
        one_error("c.yaml (ErrorCategories)", "6:39 errorCategories.categories[0].rules[0].onTerminationMessage.pattern: category `bad` rule 0: invalid onTerminationMessage regex `[invalid`: unclosed character class"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"invalid onTerminationMessage regex\""
    );
}

/// upstream: `invalid onPodError regex`
#[test]
fn invalid_on_pod_error_regex() {
    assert_eq!(
        categorizer("  categories:\n  - name: bad\n    rules:\n    - onPodError: {pattern: \"[invalid\"}\n"),
        one_error("c.yaml (ErrorCategories)", "6:29 errorCategories.categories[0].rules[0].onPodError.pattern: category `bad` rule 0: invalid onPodError regex `[invalid`: unclosed character class"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"invalid onPodError regex\""
    );
}

/// upstream: `must have at least one rule`
#[test]
fn empty_rules() {
    assert_eq!(
        categorizer("  categories:\n  - name: empty\n"),
        one_error(
            "c.yaml (ErrorCategories)",
            "4:5 errorCategories.categories[0].rules: category `empty` must have at least one rule"
        ),
        "classifier_test.go TestNewClassifier_ValidationErrors \"empty rules\""
    );
}

/// upstream: `duplicate category name`
#[test]
fn duplicate_category_name() {
    assert_eq!(
        categorizer("  categories:\n  - name: oom\n    rules:\n    - onConditions: [OOMKilled]\n  - name: oom\n    rules:\n    - onExitCodes: {operator: In, values: [137]}\n"),
        one_error("c.yaml (ErrorCategories)", "7:11 errorCategories.categories[1].name: duplicate category name `oom`"),
        "classifier_test.go TestNewClassifier_ValidationErrors \"duplicate category name\""
    );
}

/// upstream: `category name`
#[test]
fn category_name_too_long() {
    assert_eq!(
        categorizer(&format!(
            "  categories:\n  - name: {long}\n    rules:\n    - onConditions: [OOMKilled]\n",
            long = "a".repeat(64)
        )),
        one_error(
            "c.yaml (ErrorCategories)",
            &format!(
                "4:11 errorCategories.categories[0].name: category name `{long}` exceeds maximum length 63",
                long = "a".repeat(64)
            )
        ),
        "classifier_test.go TestNewClassifier_ValidationErrors \"category name too long\""
    );
}

/// upstream: `subcategory`
#[test]
fn subcategory_too_long() {
    assert_eq!(
        categorizer(&format!("  categories:\n  - name: oom\n    rules:\n    - onConditions: [OOMKilled]\n      subcategory: {long}\n", long = "b".repeat(64))),
        one_error("c.yaml (ErrorCategories)", &format!("7:20 errorCategories.categories[0].rules[0].subcategory: category `oom` rule 0: subcategory `{long}` exceeds maximum length 63", long = "b".repeat(64))),
        "classifier_test.go TestNewClassifier_ValidationErrors \"subcategory too long\""
    );
}

/// upstream: `defaultCategory`
#[test]
fn default_category_too_long() {
    assert_eq!(
        categorizer(&format!("  defaultCategory: {long}\n", long = "c".repeat(64))),
        one_error(
            "c.yaml (ErrorCategories)",
            &format!(
                "3:20 errorCategories.defaultCategory: defaultCategory `{long}` exceeds maximum length 63",
                long = "c".repeat(64)
            )
        ),
        "classifier_test.go TestNewClassifier_ValidationErrors \"default category too long\""
    );
}

/// upstream: `defaultSubcategory`
#[test]
fn default_subcategory_too_long() {
    assert_eq!(
        categorizer(&format!("  defaultSubcategory: {long}\n", long = "d".repeat(64))),
        one_error(
            "c.yaml (ErrorCategories)",
            &format!(
                "3:23 errorCategories.defaultSubcategory: defaultSubcategory `{long}` exceeds maximum length 63",
                long = "d".repeat(64)
            )
        ),
        "classifier_test.go TestNewClassifier_ValidationErrors \"default subcategory too long\""
    );
}
