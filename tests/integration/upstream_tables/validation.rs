//! Upstream's policy validation table, `internal/server/retrypolicy/validation_test.go` at
//! commit `207cc9e` (`TestValidatePolicy`, the server's check of a stored policy), through
//! `retryctl validate --upstream` on the v1beta1 document a user writes for each row's
//! `api.RetryPolicy`. Upstream stops at its first error; retryctl reports every error of the
//! document (docs/policies.md), so a row whose policy also lacks a default action shows that
//! error too.
//!
//! Not expressible:
//! - "nil policy": a nil `*api.RetryPolicy` reaches upstream's server only through its Go API;
//!   a document always holds a policy.
//!
//! "rule with no matchers" and "rule with unspecified action" are refused as upstream refuses
//! them, the rule told to set `onCategory` (upstream: `on_category must be set`).

use super::validate_upstream;

const HEAD: &str = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\n";

/// A v1beta1 policy document: `HEAD` and `body`.
fn policy(body: &str) -> String {
    format!("{HEAD}{body}")
}

/// Upstream's `policyWithMemoryBump`: one Retry rule on `oom` whose only interesting part is
/// the memory bump, `bump` as a YAML flow mapping.
fn policy_with_memory_bump(bump: &str) -> String {
    policy(&format!(
        "name: memory-bump\ndefaultAction: Retry\nrules:\n  - action: Retry\n    onCategory: oom\n    mutate:\n      resources:\n        memory: {bump}\n"
    ))
}

/// upstream: `exactly one of static and factor`
#[test]
fn memory_bump_with_both_static_and_factor_rejected() {
    assert_eq!(
        validate_upstream(&policy_with_memory_bump("{static: 1Gi, factor: 2}")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `memory-bump`)\n  error: 10:17 rules[0].mutate.resources.memory: set exactly one of `factor` and `static`, not both\n",
        "validation_test.go TestValidatePolicy \"memory bump with both static and factor rejected\""
    );
}

/// upstream: `exactly one of static and factor`
#[test]
fn memory_bump_with_neither_static_nor_factor_rejected() {
    assert_eq!(
        validate_upstream(&policy_with_memory_bump("{}")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `memory-bump`)\n  error: 10:17 rules[0].mutate.resources.memory: set exactly one of `factor` and `static`\n",
        "validation_test.go TestValidatePolicy \"memory bump with neither static nor factor rejected\""
    );
}

/// upstream: `greater than 1.0`
#[test]
fn memory_bump_factor_at_or_below_one_rejected() {
    assert_eq!(
        validate_upstream(&policy_with_memory_bump("{factor: 1.0}")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `memory-bump`)\n  error: 10:26 rules[0].mutate.resources.memory.factor: must be greater than 1.0, got `1`\n",
        "validation_test.go TestValidatePolicy \"memory bump factor at or below one rejected\""
    );
}

/// Not a row of upstream's: the factor of the row above printed as upstream prints it, Go's
/// `%v` of a float64 (`factor %v must be greater than 1.0`): `1e-05`, not `0.00001`.
#[test]
fn memory_bump_factor_is_printed_as_go_prints_a_float64() {
    assert_eq!(
        validate_upstream(&policy_with_memory_bump("{factor: 0.00001}")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `memory-bump`)\n  error: 10:26 rules[0].mutate.resources.memory.factor: must be greater than 1.0, got `1e-05`\n",
    );
}

/// upstream: `invalid static quantity`
#[test]
fn memory_bump_with_invalid_static_quantity_rejected() {
    assert_eq!(
        validate_upstream(&policy_with_memory_bump("{static: many}")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `memory-bump`)\n  error: 10:26 rules[0].mutate.resources.memory.static: invalid quantity `many`: quantities must match the regular expression `^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`\n",
        "validation_test.go TestValidatePolicy \"memory bump with invalid static quantity rejected\""
    );
}

/// upstream: `must be positive`
#[test]
fn memory_bump_with_negative_static_rejected() {
    assert_eq!(
        validate_upstream(&policy_with_memory_bump("{static: -1Gi}")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `memory-bump`)\n  error: 10:26 rules[0].mutate.resources.memory.static: quantity `-1Gi` must be positive\n",
        "validation_test.go TestValidatePolicy \"memory bump with negative static rejected\""
    );
}

/// upstream: valid
#[test]
fn valid_memory_bumps_accepted() {
    assert_eq!(
        validate_upstream(&policy("name: good-bumps\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: oom\n    mutate:\n      affinity: {avoidSameNode: true}\n      resources:\n        memory: {factor: 1.25}\n  - action: Retry\n    onCategory: oom\n    onSubcategory: small\n    mutate:\n      resources:\n        memory: {static: 256Mi}\n")),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid; 0 errors, 3 warnings\n--- stderr\np.yaml (RetryPolicy `good-bumps`)\n  warning: 6:5 rules[0]: this `Retry` rule never retries: the policy has no `retryLimit`, which `armadaproject.io/v1beta1` reads as 0; set `retryLimit`\n  warning: 12:5 rules[1]: rule 1 can never match: rule 0 comes first and matches every failure it matches\n  warning: 12:5 rules[1]: this `Retry` rule never retries: the policy has no `retryLimit`, which `armadaproject.io/v1beta1` reads as 0; set `retryLimit`\n",
        "validation_test.go TestValidatePolicy \"valid memory bumps accepted\""
    );
}

/// upstream: `name must not be empty`
#[test]
fn empty_name() {
    assert_eq!(
        validate_upstream(&policy("defaultAction: Fail\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy)\n  error: 1:1 name: missing required field `name`\n",
        "validation_test.go TestValidatePolicy \"empty name\""
    );
}

/// upstream: `is invalid`
#[test]
fn name_with_uppercase_characters() {
    assert_eq!(
        validate_upstream(&policy("name: MyPolicy\ndefaultAction: Fail\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `MyPolicy`)\n  error: 3:7 name: `MyPolicy` is not a valid name: character `M` at position 1 is not allowed (use lowercase); use lowercase letters, digits and `-`\n",
        "validation_test.go TestValidatePolicy \"name with uppercase characters\""
    );
}

/// upstream: `is invalid`
#[test]
fn name_with_leading_dash() {
    assert_eq!(
        validate_upstream(&policy("name: -policy\ndefaultAction: Fail\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `-policy`)\n  error: 3:7 name: `-policy` is not a valid name: must start and end with a letter or digit\n",
        "validation_test.go TestValidatePolicy \"name with leading dash\""
    );
}

/// upstream: `is invalid`
#[test]
fn name_with_trailing_dash() {
    assert_eq!(
        validate_upstream(&policy("name: policy-\ndefaultAction: Fail\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `policy-`)\n  error: 3:7 name: `policy-` is not a valid name: must start and end with a letter or digit\n",
        "validation_test.go TestValidatePolicy \"name with trailing dash\""
    );
}

/// upstream: `at most 63 characters`
#[test]
fn name_too_long() {
    assert_eq!(
        validate_upstream(&policy(&format!("name: {}\ndefaultAction: Fail\n", "a".repeat(64)))),
        format!("exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `{long}`)\n  error: 3:7 name: must be at most 63 characters, got 64\n", long = "a".repeat(64)),
        "validation_test.go TestValidatePolicy \"name too long\""
    );
}

/// upstream: `must set a default action (Fail or Retry)`
#[test]
fn default_action_unspecified() {
    assert_eq!(
        validate_upstream(&policy("name: p1\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\np.yaml (RetryPolicy `p1`)\n  error: 1:1 defaultAction: missing required field `defaultAction`: `armadaproject.io/v1beta1` (upstream Armada) refuses a policy without one; write `defaultAction: Fail` or `defaultAction: Retry`\n",
        "validation_test.go TestValidatePolicy \"default action unspecified\""
    );
}

/// upstream: `rule must not be nil`
#[test]
fn nil_rule() {
    assert_eq!(
        validate_upstream(&policy("name: p1\nrules:\n  - null\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 2 errors, 0 warnings\n--- stderr\np.yaml (RetryPolicy `p1`)\n  error: 1:1 defaultAction: missing required field `defaultAction`: `armadaproject.io/v1beta1` (upstream Armada) refuses a policy without one; write `defaultAction: Fail` or `defaultAction: Retry`\n  error: 5:5 rules[0]: expected a mapping, found a null\n",
        "validation_test.go TestValidatePolicy \"nil rule\""
    );
}

/// upstream: `action must be Fail or Retry`. The rule's matcher error is pinned by
/// `a_rule_without_on_category_is_told_to_set_it`.
#[test]
fn rule_with_unspecified_action() {
    let out = validate_upstream(&policy("name: p1\nrules:\n  - {}\n"));
    let row = "validation_test.go TestValidatePolicy \"rule with unspecified action\"";
    assert!(
        out.starts_with("exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 3 errors, 0 warnings\n--- stderr\np.yaml (RetryPolicy `p1`)\n  error: 1:1 defaultAction: missing required field `defaultAction`: `armadaproject.io/v1beta1` (upstream Armada) refuses a policy without one; write `defaultAction: Fail` or `defaultAction: Retry`\n  error: 5:5 rules[0].action: missing required field `action`\n  error: 5:5 rules[0]: "),
        "{row}: {out}"
    );
}

/// upstream: `on_category must be set`. The wording is pinned by
/// `a_rule_without_on_category_is_told_to_set_it`.
#[test]
fn rule_with_no_matchers() {
    let out = validate_upstream(&policy("name: p1\nrules:\n  - action: Retry\n"));
    let row = "validation_test.go TestValidatePolicy \"rule with no matchers\"";
    assert!(
        out.starts_with("exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 2 errors, 0 warnings\n--- stderr\np.yaml (RetryPolicy `p1`)\n  error: 1:1 defaultAction: missing required field `defaultAction`: `armadaproject.io/v1beta1` (upstream Armada) refuses a policy without one; write `defaultAction: Fail` or `defaultAction: Retry`\n  error: 5:5 rules[0]: "),
        "{row}: {out}"
    );
}

/// "rule with no matchers" and "rule with unspecified action" again: upstream's error is
/// `on_category must be set`, and `--upstream` refuses every other matcher, so the error
/// about the rule's matcher must ask for `onCategory` and offer none of the matchers
/// `--upstream` refuses.
#[test]
fn a_rule_without_on_category_is_told_to_set_it() {
    for (row, body) in [
        (
            "rule with no matchers",
            "name: p1\ndefaultAction: Retry\nrules:\n  - action: Retry\n",
        ),
        (
            "rule with unspecified action",
            "name: p1\ndefaultAction: Retry\nrules:\n  - {}\n",
        ),
    ] {
        let out = validate_upstream(&policy(body));
        let line = out
            .lines()
            .find(|l| l.starts_with("  error: ") && l.contains(" rules[0]: "))
            .unwrap_or_else(|| panic!("{row}: no error on the rule: {out}"));
        assert!(out.starts_with("exit: 3\n"), "{row}: {out}");
        assert!(line.contains("`onCategory`"), "{row}: {line}");
        for refused in ["onConditions", "onExitCodes", "onTerminationMessage"] {
            assert!(!line.contains(refused), "{row}: offers `{refused}`: {line}");
        }
    }
}

/// upstream: `on_category must be set`
#[test]
fn rule_with_only_subcategory() {
    assert_eq!(
        validate_upstream(&policy("name: p1\nrules:\n  - action: Retry\n    onSubcategory: oom\n")),
        "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 2 errors, 0 warnings\n--- stderr\np.yaml (RetryPolicy `p1`)\n  error: 1:1 defaultAction: missing required field `defaultAction`: `armadaproject.io/v1beta1` (upstream Armada) refuses a policy without one; write `defaultAction: Fail` or `defaultAction: Retry`\n  error: 6:20 rules[0].onSubcategory: `onSubcategory` narrows a category; it requires `onCategory`\n",
        "validation_test.go TestValidatePolicy \"rule with only subcategory\""
    );
}

/// upstream: valid
#[test]
fn valid_policy_with_default_action_only() {
    assert_eq!(
        validate_upstream(&policy("name: p1\ndefaultAction: Fail\n")),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n",
        "validation_test.go TestValidatePolicy \"valid policy with default action only\""
    );
}

/// upstream: valid
#[test]
fn valid_policy_with_on_category_rule() {
    assert_eq!(
        validate_upstream(&policy("name: p1\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: transient\n")),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid; 0 errors, 1 warning\n--- stderr\np.yaml (RetryPolicy `p1`)\n  warning: 6:5 rules[0]: this `Retry` rule never retries: the policy has no `retryLimit`, which `armadaproject.io/v1beta1` reads as 0; set `retryLimit`\n",
        "validation_test.go TestValidatePolicy \"valid policy with on_category rule\""
    );
}
