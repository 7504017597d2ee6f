//! The second table of upstream's `internal/scheduler/retry/engine_test.go` at commit
//! `207cc9e`, `TestValidatePolicy` (the scheduler's check of the policy it evaluates), through
//! `retryctl validate --upstream` on the v1beta1 document of each row's `retry.Policy`. The
//! file's first table, `TestEngine_Evaluate`, is `engine_test_table` in
//! `src/engine/upstream/tests.rs`, a case per row, except "nil error returns fail" (a
//! FailureHistory run always carries its failure).
//!
//! Every row is expressed.

use super::validate_upstream;

const HEAD: &str = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\n";

fn policy(body: &str) -> String {
    format!("{HEAD}{body}")
}

/// upstream: valid
#[test]
fn valid_policy_with_retry_default() {
    assert_eq!(
        validate_upstream(&policy("name: test\ndefaultAction: Retry\n")),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n",
        "engine_test.go TestValidatePolicy \"valid policy with Retry default\""
    );
}

/// upstream: valid
#[test]
fn valid_policy_with_on_category_rule() {
    assert_eq!(
        validate_upstream(&policy("name: test\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: transient\n")),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid; 0 errors, 1 warning\n--- stderr\np.yaml (RetryPolicy `test`)\n  warning: 6:5 rules[0]: this `Retry` rule never retries: the policy has no `retryLimit`, which `armadaproject.io/v1beta1` reads as 0; set `retryLimit`\n",
        "engine_test.go TestValidatePolicy \"valid policy with OnCategory rule\""
    );
}

/// upstream: `policy name must not be empty`
#[test]
fn empty_name_rejected() {
    assert_eq!(
        validate_upstream(&policy("name: \"\"\ndefaultAction: Retry\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy)\n  error: 3:7 name: must not be empty\n",
        "engine_test.go TestValidatePolicy \"empty name rejected\""
    );
}

/// upstream: `DefaultAction must be`
#[test]
fn empty_default_action_rejected() {
    assert_eq!(
        validate_upstream(&policy("name: test\ndefaultAction: \"\"\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `test`)\n  error: 4:16 defaultAction: no RetryAction of name \"\": expected `Retry` or `Fail`\n",
        "engine_test.go TestValidatePolicy \"empty DefaultAction rejected\""
    );
}

/// upstream: `DefaultAction must be`
#[test]
fn unknown_default_action_rejected() {
    assert_eq!(
        validate_upstream(&policy("name: test\ndefaultAction: Skip\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `test`)\n  error: 4:16 defaultAction: no RetryAction of name \"Skip\": expected `Retry` or `Fail`\n",
        "engine_test.go TestValidatePolicy \"unknown DefaultAction rejected\""
    );
}

/// upstream: `rule 0: OnCategory must be set`
#[test]
fn rule_without_on_category_rejected() {
    assert_eq!(
        validate_upstream(&policy("name: test\ndefaultAction: Retry\nrules:\n  - action: Retry\n    onCategory: \"\"\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `test`)\n  error: 7:17 rules[0].onCategory: must not be an empty string\n",
        "engine_test.go TestValidatePolicy \"rule without OnCategory rejected\""
    );
}
