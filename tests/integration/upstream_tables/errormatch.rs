//! Upstream's error matcher tables, `internal/common/errormatch/match_test.go` at commit
//! `207cc9e`: `MatchExitCode` and `MatchPattern` are what the executor's categorizer matches a
//! failed container with, so each row is a categorizer rule (`onExitCodes`,
//! `onTerminationMessage`) against a run with one container `main`, through `simulate
//! --engine upstream --categorizer`: the row's `true` is the rule's category assigned, its
//! `false` no category.
//!
//! Not expressible:
//! - `TestMatchExitCode` "nil matcher returns false": a nil `*ExitCodeMatcher` exists only in
//!   Go; a categorizer rule always has a matcher (`validate` refuses one without).
//!
//! Beyond the table, the Go regular expressions `MatchPattern` takes: `\d`, `\w`, `\s` and
//! `\b` are ASCII, as retryctl reads them too.

use super::classify;

/// A categorizer whose one category, `matched`, has the one rule `rule`.
fn one_rule(rule: &str) -> String {
    format!("categories:\n- name: matched\n  rules:\n  - {rule}")
}

/// Whether the categorizer of `one_rule(rule)` assigns its category to a run whose container
/// `main` failed with `container` (a JSON object's fields).
fn assigns(rule: &str, container: &str) -> bool {
    let run = format!("{{\"containers\": [{{\"name\": \"main\", {container}}}]}}");
    match classify(&one_rule(rule), &run).0.as_str() {
        "matched" => true,
        "" => false,
        other => panic!("category `{other}`"),
    }
}

/// `MatchExitCode(matcher, exitCode)` as the rule `onExitCodes: matcher` on a container that
/// exited with `exit_code`.
fn match_exit_code(matcher: &str, exit_code: i32) -> bool {
    assigns(
        &format!("onExitCodes: {matcher}"),
        &format!("\"exitCode\": {exit_code}"),
    )
}

/// `MatchPattern(regexp.MustCompile(pattern), value)` as the rule `onTerminationMessage:
/// {pattern}` on a container that failed (exit code 1) with the termination message `value`.
fn match_pattern(pattern: &str, value: &str) -> bool {
    assigns(
        &format!("onTerminationMessage: {{pattern: '{pattern}'}}"),
        &format!("\"exitCode\": 1, \"message\": {}", serde_json::Value::from(value)),
    )
}

// TestMatchExitCode

#[test]
fn in_matches() {
    assert!(
        match_exit_code("{operator: In, values: [74, 75]}", 74),
        "match_test.go TestMatchExitCode \"In matches\""
    );
}

#[test]
fn in_does_not_match() {
    assert!(
        !match_exit_code("{operator: In, values: [74, 75]}", 1),
        "match_test.go TestMatchExitCode \"In does not match\""
    );
}

#[test]
fn not_in_matches_when_code_absent() {
    assert!(
        match_exit_code("{operator: NotIn, values: [1, 2]}", 42),
        "match_test.go TestMatchExitCode \"NotIn matches when code absent\""
    );
}

#[test]
fn not_in_does_not_match_when_code_present() {
    assert!(
        !match_exit_code("{operator: NotIn, values: [1, 2]}", 1),
        "match_test.go TestMatchExitCode \"NotIn does not match when code present\""
    );
}

#[test]
fn exit_code_0_never_matches_in() {
    assert!(
        !match_exit_code("{operator: In, values: [0]}", 0),
        "match_test.go TestMatchExitCode \"exit code 0 never matches In\""
    );
}

#[test]
fn exit_code_0_never_matches_not_in() {
    assert!(
        !match_exit_code("{operator: NotIn, values: [1]}", 0),
        "match_test.go TestMatchExitCode \"exit code 0 never matches NotIn\""
    );
}

// TestMatchPattern

#[test]
fn matches() {
    assert!(
        match_pattern("(?i)cuda.*error", "CUDA memory error on device 0"),
        "match_test.go TestMatchPattern \"matches\""
    );
}

#[test]
fn does_not_match() {
    assert!(
        !match_pattern("(?i)cuda.*error", "segfault"),
        "match_test.go TestMatchPattern \"does not match\""
    );
}

#[test]
fn empty_value_never_matches() {
    assert!(
        !match_pattern(".*", ""),
        "match_test.go TestMatchPattern \"empty value never matches\""
    );
}

// Beyond the table: `MatchPattern` takes a Go `*regexp.Regexp`, whose `\d`, `\w`, `\s` and
// `\b` are ASCII only (RE2 syntax); a non-ASCII digit, letter or space is none of them.

#[test]
fn a_digit_class_is_ascii() {
    assert!(!match_pattern("^exit \\d$", "exit ٣"), "`\\d` against U+0663");
}

#[test]
fn a_word_class_is_ascii() {
    assert!(!match_pattern("^caf\\w$", "café"), "`\\w` against U+00E9");
}

#[test]
fn a_space_class_is_ascii() {
    assert!(!match_pattern("^no\\sspace$", "no\u{a0}space"), "`\\s` against U+00A0");
}

#[test]
fn a_word_boundary_is_ascii() {
    assert!(match_pattern("caf\\b", "café"), "`\\b` between `f` and U+00E9");
}

/// Each class still matches its ASCII members, so the cases above fail only on the non-ASCII
/// character.
#[test]
fn the_ascii_classes_match_ascii() {
    assert!(match_pattern("^exit \\d$", "exit 3"));
    assert!(match_pattern("^caf\\w$", "cafe"));
    assert!(match_pattern("^no\\sspace$", "no space"));
    assert!(!match_pattern("caf\\b", "cafe"));
}
