//! Upstream's decoding tables, `pkg/api/deserialize_test.go` at commit `207cc9e`, for the one
//! type retryctl reads: `RetryAction`, a policy's `defaultAction` (and a rule's `action`).
//!
//! `TestUnmarshalRetryAction`: each row's JSON value is a policy's `defaultAction`, in a JSON
//! document (`p.json`, the row's text verbatim) and in a YAML one (`p.yaml`), as `retryctl`
//! reads both. What it decoded to is what `simulate --engine upstream` then decides for one
//! failed run (`fail_default` for Fail, `retry` for Retry); a refused value is `validate
//! --upstream`'s error, exit 3.
//!
//! `TestMarshalRetryAction`: what retryctl writes for an action is `get -o json` of a stored
//! v1beta1 policy (`"defaultAction": "Fail"`), and the round trip is `apply -f -` of that output,
//! which finds nothing to change.
//!
//! Not expressible:
//! - `TestMarshalRetryAction` "Unspecified" and "unknown value rejected": retryctl's action is
//!   `Fail` or `Retry`; a policy without one is refused (validation.rs, "default action
//!   unspecified"), so neither `RETRY_ACTION_UNSPECIFIED` nor `RetryAction(99)` is ever written.
//! - `TestMarshalJsonIngressType` (2 rows), `TestMarshalJsonIngressType_InvalidEnumValues` (2),
//!   `TestMarshalJsonServiceType` (4), `TestMarshalJsonServiceType_InvalidEnumValues` (2),
//!   `TestDeserializeJobState` (3), `TestDeserializeJobStateInt` (3) and
//!   `TestDeserializeJobState_WhenInputInvalid` (1): a job's ingress and service types and its
//!   state are fields of Armada's job API, which retryctl has no document for.
//!
//! Beyond the table: what `RetryAction.UnmarshalJSON` in `pkg/api/deserialize.go` refuses,
//! `"retry_action_fail"`, `"Retry_Action_Retry"`, `"1"` and `" Fail"`, refused with its words.

use crate::support::server::TestServer;

use super::{json, Scratch};

/// One failed run, which the engine decides with the policy's default action.
const HISTORY: &str = "{\"job\":{\"id\":\"j\"},\"runs\":[{\"node\":\"n1\",\"category\":\"c\"}]}\n";

/// The JSON and YAML documents of a policy whose `defaultAction` is the JSON text `value`.
fn documents(value: &str) -> [(&'static str, String); 2] {
    [
        (
            "p.json",
            format!(
                "{{\"apiVersion\": \"armadaproject.io/v1beta1\", \"kind\": \"RetryPolicy\", \"name\": \"p\", \"retryLimit\": 1, \"defaultAction\": {value}}}\n"
            ),
        ),
        (
            "p.yaml",
            format!(
                "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 1\ndefaultAction: {value}\n"
            ),
        ),
    ]
}

/// The action `value` decodes to, in each document: the record's `action` and `decision` of
/// `simulate --engine upstream` on one failed run no rule matches.
fn decoded(row: &str, value: &str, want: &str) {
    let decision = match want {
        "Fail" => "fail_default",
        "Retry" => "retry",
        other => panic!("{other}"),
    };
    for (file, text) in documents(value) {
        let s = Scratch::new();
        s.file(file, &text).file("h.jsonl", HISTORY);
        let v = json(&s.output(&[
            "simulate",
            "-f",
            file,
            "--engine",
            "upstream",
            "--history",
            "h.jsonl",
            "-o",
            "json",
        ]));
        let record = &v["jobs"][0]["runs"][0];
        assert_eq!(
            (record["action"].as_str(), record["decision"].as_str()),
            (Some(want), Some(decision)),
            "deserialize_test.go TestUnmarshalRetryAction {row:?} ({file}): {record}"
        );
    }
}

/// `validate --upstream` of each document refuses `value`: exit 3 and `error` (the part after
/// `defaultAction: `) at the value's position, 1:114 in `p.json`, 5:16 in `p.yaml`.
fn refused(row: &str, value: &str, error: &str) {
    for ((file, text), position) in documents(value).into_iter().zip(["1:114", "5:16"]) {
        let s = Scratch::new();
        assert_eq!(
            s.file(file, &text).run(&["validate", "--upstream", "-f", file]),
            format!(
                "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\n{file} (RetryPolicy `p`)\n  error: {position} defaultAction: {error}\n"
            ),
            "deserialize_test.go TestUnmarshalRetryAction {row:?} ({file})"
        );
    }
}

// TestUnmarshalRetryAction

#[test]
fn canonical_fail() {
    decoded("canonical FAIL", "\"RETRY_ACTION_FAIL\"", "Fail");
}

#[test]
fn canonical_retry() {
    decoded("canonical RETRY", "\"RETRY_ACTION_RETRY\"", "Retry");
}

#[test]
fn alias_fail() {
    decoded("alias Fail", "\"Fail\"", "Fail");
}

#[test]
fn alias_retry() {
    decoded("alias Retry", "\"Retry\"", "Retry");
}

#[test]
fn alias_fail_upper_case() {
    decoded("alias FAIL", "\"FAIL\"", "Fail");
}

#[test]
fn alias_retry_lower_case() {
    decoded("alias retry", "\"retry\"", "Retry");
}

#[test]
fn numeric_1() {
    decoded("numeric 1", "1", "Fail");
}

#[test]
fn numeric_2() {
    decoded("numeric 2", "2", "Retry");
}

#[test]
fn unknown_name() {
    refused(
        "unknown name",
        "\"BANANAS\"",
        r#"no RetryAction of name "BANANAS": expected `Retry` or `Fail`"#,
    );
}

#[test]
fn out_of_range_number() {
    refused(
        "out-of-range number",
        "99",
        "no RetryAction of value 99: expected `Retry` or `Fail`",
    );
}

#[test]
fn non_string_non_int() {
    refused(
        "non-string non-int",
        "{}",
        "expected one of `Retry`, `Fail`, found a mapping",
    );
}

// Beyond the table: spellings `RetryAction.UnmarshalJSON` refuses (an exact proto name, or a
// short name in any case with nothing around it; a number only as a JSON number).

#[test]
fn a_lower_case_proto_name_is_refused() {
    refused(
        "\"retry_action_fail\"",
        "\"retry_action_fail\"",
        r#"no RetryAction of name "retry_action_fail": expected `Retry` or `Fail`"#,
    );
}

#[test]
fn a_mixed_case_proto_name_is_refused() {
    refused(
        "\"Retry_Action_Retry\"",
        "\"Retry_Action_Retry\"",
        r#"no RetryAction of name "Retry_Action_Retry": expected `Retry` or `Fail`"#,
    );
}

#[test]
fn a_quoted_number_is_refused() {
    refused(
        "\"1\"",
        "\"1\"",
        r#"no RetryAction of name "1": expected `Retry` or `Fail`"#,
    );
}

#[test]
fn a_name_with_a_leading_space_is_refused() {
    refused(
        "\" Fail\"",
        "\" Fail\"",
        r#"no RetryAction of name " Fail": expected `Retry` or `Fail`; did you mean `Fail`?"#,
    );
}

// TestMarshalRetryAction: retryctl writes the short name, and reads back what it wrote.

/// `get -o json` of a stored v1beta1 policy whose default action is `action` writes it as
/// `"defaultAction": "<action>"`, and `apply -f -` of that output changes nothing.
fn written(row: &str, action: &str) {
    let srv = TestServer::start();
    let s = crate::support::Session::new(&srv.url);
    let policy = format!(
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 1\ndefaultAction: {action}\n"
    );
    assert_eq!(
        s.run_stdin(&["create", "-f", "-"], &policy),
        "exit: 0\n--- stdout\nretrypolicy/p created\n--- stderr\n"
    );
    let out = s.ok(&[
        "get",
        "retrypolicy",
        "p",
        "-o",
        "json",
        "--api-version",
        "armadaproject.io/v1beta1",
    ]);
    assert_eq!(
        out,
        format!(
            "{{\n  \"apiVersion\": \"armadaproject.io/v1beta1\",\n  \"kind\": \"RetryPolicy\",\n  \"name\": \"p\",\n  \"retryLimit\": 1,\n  \"defaultAction\": \"{action}\"\n}}\n"
        ),
        "deserialize_test.go TestMarshalRetryAction {row:?}"
    );
    assert_eq!(
        s.run_stdin(&["apply", "-f", "-"], &out),
        "exit: 0\n--- stdout\nretrypolicy/p unchanged\n--- stderr\n",
        "deserialize_test.go TestMarshalRetryAction {row:?}: the round trip"
    );
}

#[test]
fn marshal_fail() {
    written("Fail", "Fail");
}

#[test]
fn marshal_retry() {
    written("Retry", "Retry");
}
