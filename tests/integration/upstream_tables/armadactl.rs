//! Upstream's armadactl tables, `internal/armadactl/retrypolicy_test.go` at commit `207cc9e`:
//! armadactl's retry policy commands, as retryctl's against a server (`retryctl serve`, in
//! process): `get retrypolicy -o yaml --api-version armadaproject.io/v1beta1` for armadactl's
//! `get retry-policy`, `get retrypolicies -o yaml` for its list, `create`/`update`/`delete
//! retrypolicy` for its writes, and `create retrypolicy -f` for `retryPolicyFromFile`, which
//! refuses a file before anything is sent (exit 3, the server left untouched).
//!
//! Where retryctl's words differ from armadactl's by design, the row asserts retryctl's:
//! `retrypolicy/p1 created` (kubectl's) for `Created retry policy p1`, and a list as
//! `kind: List` with `items` (what `get -o yaml` prints for several resources,
//! docs/policies.md) for armadactl's `kind: RetryPolicy` with `retryPolicies`; the row's point,
//! one YAML mapping that reads back as the policies, holds either way.
//!
//! Not expressible: none; armadactl's `App` with its API stubbed is a server here.

use serde_json::Value;

use crate::support::server::TestServer;

use super::Scratch;

/// armadactl's `validPolicyFile`.
const VALID_POLICY_FILE: &str = "apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: p1
retryLimit: 3
defaultAction: Retry
rules:
  - action: Fail
    onCategory: UserError
";

fn exchange_ok(stdout: &str) -> String {
    format!("exit: 0\n--- stdout\n{stdout}--- stderr\n")
}

/// `get retrypolicy NAME -o json --api-version armadaproject.io/v1beta1`, decoded.
fn get_json(s: &Scratch, name: &str) -> Value {
    super::json(&s.output(&[
        "get",
        "retrypolicy",
        name,
        "-o",
        "json",
        "--api-version",
        "armadaproject.io/v1beta1",
    ]))
}

/// armadactl's checks on a parsed file: name `p1`, the limit, default `Retry`, one rule
/// `Fail` on `UserError`.
fn assert_parsed(v: &Value, limit: u64, row: &str) {
    assert_eq!(v["name"], "p1", "{row}: {v}");
    assert_eq!(v["retryLimit"].as_u64(), Some(limit), "{row}: {v}");
    assert_eq!(v["defaultAction"], "Retry", "{row}: {v}");
    assert_eq!(
        v["rules"],
        serde_json::json!([{"action": "Fail", "onCategory": "UserError"}]),
        "{row}: {v}"
    );
}

#[test]
fn get_retry_policy_renders_friendly_action_strings() {
    let srv = TestServer::start();
    let s = Scratch::remote(&srv.url);
    s.file(
        "p1.yaml",
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p1\nretryLimit: 3\ndefaultAction: Retry\nrules:\n  - action: Fail\n    onCategory: OutOfMemory\n",
    );
    assert_eq!(
        s.run(&["create", "retrypolicy", "-f", "p1.yaml"]),
        exchange_ok("retrypolicy/p1 created\n")
    );
    // Actions render as `Retry`/`Fail`, never the enum's numbers (`action: 1`).
    assert_eq!(
        s.run(&["get", "retrypolicy", "p1", "-o", "yaml", "--api-version", "armadaproject.io/v1beta1"]),
        exchange_ok("apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p1\nretryLimit: 3\ndefaultAction: Retry\nrules:\n- action: Fail\n  onCategory: OutOfMemory\n"),
        "retrypolicy_test.go TestGetRetryPolicy_RendersFriendlyActionStrings"
    );
}

/// `get retrypolicies -o yaml`: one YAML mapping that reads back as the policies, by name and
/// default action.
fn get_all_emits_valid_yaml(row: &str, policies: &[(&str, &str)], want: &str) {
    let srv = TestServer::start();
    let s = Scratch::remote(&srv.url);
    for (name, default) in policies {
        s.file(
            "p.yaml",
            &format!(
                "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: {name}\ndefaultAction: {default}\n"
            ),
        );
        assert_eq!(
            s.run(&["create", "retrypolicy", "-f", "p.yaml"]),
            exchange_ok(&format!("retrypolicy/{name} created\n"))
        );
    }
    let out = s.output(&[
        "get",
        "retrypolicies",
        "-o",
        "yaml",
        "--api-version",
        "armadaproject.io/v1beta1",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), text.as_str()),
        (Some(0), want),
        "retrypolicy_test.go TestGetAllRetryPolicies_EmitsValidYaml {row:?}"
    );
    let doc: serde_yaml::Value = serde_yaml::from_str(&text)
        .unwrap_or_else(|e| panic!("{row}: get-list output must be valid YAML: {e}: {text}"));
    assert_eq!(doc["kind"].as_str(), Some("List"), "{row}: {text}");
    let items = doc["items"].as_sequence().expect("items");
    let got: Vec<(&str, &str)> = items
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["defaultAction"].as_str().unwrap()))
        .collect();
    assert_eq!(got, policies, "{row}: {text}");
}

#[test]
fn get_all_retry_policies_emits_valid_yaml_a_populated_store() {
    get_all_emits_valid_yaml(
        "a populated store",
        &[("p1", "Retry"), ("p2", "Fail")],
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: armadaproject.io/v1beta1\n  kind: RetryPolicy\n  name: p1\n  retryLimit: 0\n  defaultAction: Retry\n- apiVersion: armadaproject.io/v1beta1\n  kind: RetryPolicy\n  name: p2\n  retryLimit: 0\n  defaultAction: Fail\n",
    );
}

#[test]
fn get_all_retry_policies_emits_valid_yaml_an_empty_store() {
    get_all_emits_valid_yaml("an empty store", &[], "apiVersion: v1\nkind: List\nitems: []\n");
}

// TestRetryPolicyWriteCommands_CallAPIAndReport: each write hands the server what it was
// given and reports what it did.

/// A server holding armadactl's `validPolicyFile` (`p1`), and the scratch directory that
/// talks to it.
fn with_p1() -> (TestServer, Scratch) {
    let srv = TestServer::start();
    let s = Scratch::remote(&srv.url);
    s.file("p1.yaml", VALID_POLICY_FILE);
    (srv, s)
}

#[test]
fn write_commands_call_api_and_report_create() {
    let (_srv, s) = with_p1();
    assert_eq!(
        s.run(&["create", "retrypolicy", "-f", "p1.yaml"]),
        exchange_ok("retrypolicy/p1 created\n"),
        "retrypolicy_test.go TestRetryPolicyWriteCommands_CallAPIAndReport \"create\""
    );
    assert_eq!(get_json(&s, "p1")["name"], "p1");
}

#[test]
fn write_commands_call_api_and_report_update() {
    let (_srv, s) = with_p1();
    s.run(&["create", "retrypolicy", "-f", "p1.yaml"]);
    s.file("p1.yaml", &VALID_POLICY_FILE.replace("retryLimit: 3", "retryLimit: 4"));
    assert_eq!(
        s.run(&["update", "retrypolicy", "-f", "p1.yaml"]),
        exchange_ok("retrypolicy/p1 configured\n"),
        "retrypolicy_test.go TestRetryPolicyWriteCommands_CallAPIAndReport \"update\""
    );
    assert_eq!(get_json(&s, "p1")["retryLimit"], 4);
}

#[test]
fn write_commands_call_api_and_report_delete() {
    let (_srv, s) = with_p1();
    s.run(&["create", "retrypolicy", "-f", "p1.yaml"]);
    assert_eq!(
        s.run(&["delete", "retrypolicy", "p1"]),
        exchange_ok("retrypolicy/p1 deleted\n"),
        "retrypolicy_test.go TestRetryPolicyWriteCommands_CallAPIAndReport \"delete\""
    );
    assert_eq!(
        s.run(&["get", "retrypolicies"]),
        "exit: 0\n--- stdout\n--- stderr\nno retry policies found\n"
    );
}

// TestRetryPolicyFromFile_Parses

#[test]
fn retry_policy_from_file_parses_a_handwritten_document() {
    let (_srv, s) = with_p1();
    assert_eq!(
        s.run(&["create", "retrypolicy", "-f", "p1.yaml"]),
        exchange_ok("retrypolicy/p1 created\n")
    );
    assert_parsed(
        &get_json(&s, "p1"),
        3,
        "retrypolicy_test.go TestRetryPolicyFromFile_Parses \"a handwritten document\"",
    );
}

#[test]
fn retry_policy_from_file_parses_the_output_of_get() {
    let (_first, s) = with_p1();
    s.file("p1.yaml", &VALID_POLICY_FILE.replace("retryLimit: 3", "retryLimit: 2"));
    s.run(&["create", "retrypolicy", "-f", "p1.yaml"]);
    let got = s.output(&[
        "get",
        "retrypolicy",
        "p1",
        "-o",
        "yaml",
        "--api-version",
        "armadaproject.io/v1beta1",
    ]);
    assert!(got.status.success());
    // The output of get, as the file of a create on another server.
    let second = TestServer::start();
    let t = Scratch::remote(&second.url);
    t.file("got.yaml", std::str::from_utf8(&got.stdout).unwrap());
    assert_eq!(
        t.run(&["create", "retrypolicy", "-f", "got.yaml"]),
        exchange_ok("retrypolicy/p1 created\n")
    );
    assert_parsed(
        &get_json(&t, "p1"),
        2,
        "retrypolicy_test.go TestRetryPolicyFromFile_Parses \"the output of get\"",
    );
}

// TestRetryPolicyFromFile_Rejects: `create retrypolicy -f p.yaml` refuses the file and sends
// nothing.

fn rejects(row: &str, file: Option<&str>, stderr: &str) {
    let srv = TestServer::start();
    let s = Scratch::remote(&srv.url);
    if let Some(text) = file {
        s.file("p.yaml", text);
    }
    assert_eq!(
        s.run(&["create", "retrypolicy", "-f", "p.yaml"]),
        format!("exit: 3\n--- stdout\n--- stderr\n{stderr}"),
        "retrypolicy_test.go TestRetryPolicyFromFile_Rejects {row:?}"
    );
    assert_eq!(
        s.run(&["get", "retrypolicies"]),
        "exit: 0\n--- stdout\n--- stderr\nno retry policies found\n",
        "{row}: nothing was sent"
    );
}

#[test]
fn retry_policy_from_file_rejects_a_mistyped_field() {
    rejects(
        "a mistyped field",
        Some("apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p1\nretry_limit: 5\ndefaultAction: Retry\n"),
        "p.yaml (RetryPolicy `p1`)\n  error: 4:1 retry_limit: unknown field `retry_limit`, did you mean `retryLimit`?\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n",
    );
}

#[test]
fn retry_policy_from_file_rejects_a_file_describing_another_resource() {
    rejects(
        "a file describing another resource",
        Some("apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q1\n"),
        "p.yaml\n  error: 2:7 kind: expected a `RetryPolicy` document here, found kind `Queue`\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n",
    );
}

#[test]
fn retry_policy_from_file_rejects_a_bare_document_with_no_envelope() {
    rejects(
        "a bare document with no envelope",
        Some("name: p1\nretryLimit: 3\ndefaultAction: Retry\n"),
        "p.yaml\n  error: 1:1 apiVersion: missing `apiVersion`; expected one of `armadaproject.io/v1`, `armadaproject.io/v1beta1`\n  error: 1:1 kind: missing `kind`; expected one of `RetryPolicy`, `Queue`, `FailureHistory`, `SchedulerConfig`\nchecked 1 document in 1 file: 0 valid, 1 invalid; 2 errors, 0 warnings\nerror: nothing was sent: 2 errors in the input\n",
    );
}

#[test]
fn retry_policy_from_file_rejects_an_unknown_kind() {
    rejects(
        "an unknown kind",
        Some("apiVersion: armadaproject.io/v1beta1\nkind: Nonsense\nname: p1\n"),
        "p.yaml\n  error: 2:7 kind: unknown kind `Nonsense`, expected one of `RetryPolicy`, `Queue`, `FailureHistory`, `SchedulerConfig`\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n",
    );
}

#[test]
fn retry_policy_from_file_rejects_an_unknown_api_version() {
    rejects(
        "an unknown apiVersion",
        Some("apiVersion: armadaproject.io/v2\nkind: RetryPolicy\nname: p1\n"),
        "p.yaml (RetryPolicy `p1`)\n  error: 1:13 apiVersion: unknown apiVersion `armadaproject.io/v2`, expected one of `armadaproject.io/v1`, `armadaproject.io/v1beta1`\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n",
    );
}

#[test]
fn retry_policy_from_file_rejects_malformed_yaml() {
    rejects(
        "malformed yaml",
        Some("apiVersion: [unclosed\n"),
        "p.yaml\n  error: 2:1: invalid YAML: while parsing a flow sequence, expected ',' or ']'\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n",
    );
}

#[test]
fn retry_policy_from_file_rejects_a_missing_file() {
    rejects(
        "a missing file",
        None,
        "p.yaml\n  error: cannot read: no such file or directory\nchecked 0 documents in 1 file: 0 valid, 0 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n",
    );
}
