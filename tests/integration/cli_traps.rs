//! Issue 11's traps and editor support: `validate --upstream` refuses what `create` against
//! an upstream server refuses (one implementation), a closed stdout is not an error,
//! `explain` and `schema` come from the table the decoder reads.

use std::process::Stdio;

use crate::support::stub::Stub;
use crate::support::{exchange, format_output, retryctl, temp_home};

/// The field paths named by an error text, in order (`spec.rules[0].onConditions` and the
/// client's `rules[0].onConditions` both become `rules[0].onConditions`).
fn fields_named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("error: ") {
            // validate: `error: L:C spec.path: message`
            if let Some((_, after_pos)) = rest.split_once(' ') {
                if let Some((path, _)) = after_pos.split_once(": ") {
                    if rest.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                        out.push(path.trim_start_matches("spec.").to_string());
                    }
                }
            }
        }
    }
    out
}

#[test]
fn validate_upstream_reports_exactly_what_create_against_upstream_refuses() {
    let stub = Stub::upstream(false);
    let home = temp_home();
    let file = "testdata/policies/valid/ml-training.yaml";
    let validate = exchange(retryctl(home.path()).args(["validate", "--upstream", "-f", file]));
    assert!(validate.starts_with("exit: 3\n"), "{validate}");
    let create = exchange(
        retryctl(home.path())
            .env("ARMADA_URL", &stub.url)
            .args(["create", "-f", file]),
    );
    assert!(create.starts_with("exit: 1\n"), "{create}");
    // The client's refusal lists the fields as `a`, `b`, ...
    let refused: Vec<String> = create
        .split("cannot store these fields of retry policy `ml-training`: ")
        .nth(1)
        .expect("the upstream refusal")
        .lines()
        .next()
        .unwrap()
        .split(", ")
        .map(|f| f.trim_matches('`').split(" (").next().unwrap().to_string())
        .collect();
    let mut reported = fields_named(&validate);
    let mut refused_sorted = refused.clone();
    reported.sort();
    refused_sorted.sort();
    assert!(!refused_sorted.is_empty());
    assert_eq!(reported, refused_sorted, "validate:\n{validate}\ncreate:\n{create}");
    // Nothing was sent.
    assert!(
        stub.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        stub.requests()
    );
    // A policy that fits upstream passes both.
    let fits = "testdata/policies/valid/upstream-v1beta1.yaml";
    let out = exchange(retryctl(home.path()).args(["validate", "--upstream", "-f", fits]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let home = temp_home();
    for args in [
        &["explain", "retrypolicy", "--recursive"][..],
        &["validate", "-f", "testdata/policies/valid", "-o", "json"][..],
        &["schema", "retrypolicy"][..],
    ] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
            .args(args)
            .env("HOME", home.path())
            .current_dir(crate::support::root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before the command writes, as `| head -0` would.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

#[test]
fn explain_documents_the_fields_the_decoder_accepts() {
    let home = temp_home();
    insta::assert_snapshot!(
        "explain_exit_codes",
        exchange(retryctl(home.path()).args(["explain", "retrypolicy.spec.rules.onExitCodes"]))
    );
    insta::assert_snapshot!(
        "explain_recursive",
        exchange(retryctl(home.path()).args(["explain", "rp.spec", "--recursive"]))
    );
    assert_eq!(
        exchange(retryctl(home.path()).args(["explain", "retrypolicy.spec.retry_limit"])),
        "exit: 2\n--- stdout\n--- stderr\nerror: field `retry_limit` does not exist in `retrypolicy.spec`; its fields are `retryLimit`, `defaultAction`, `backoff`, `antiAffinity`, `rules`; did you mean `retryLimit`?\n"
    );
}

#[test]
fn the_schema_flags_unknown_fields_and_lists_every_rule_field() {
    let home = temp_home();
    let out = retryctl(home.path()).args(["schema", "retrypolicy"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let spec = &schema["properties"]["spec"];
    // `retry_limit:` is flagged: no field outside the table.
    assert_eq!(spec["additionalProperties"], false);
    assert!(spec["properties"].get("retry_limit").is_none());
    let rule = &spec["properties"]["rules"]["items"];
    assert_eq!(rule["additionalProperties"], false);
    assert_eq!(rule["required"], serde_json::json!(["action"]));
    // `onExitCodes` is completed with its operator values.
    assert_eq!(
        rule["properties"]["onExitCodes"]["properties"]["operator"]["enum"],
        serde_json::json!(["In", "NotIn"])
    );
    // Every field the schema lists decodes; the decoder reads the same table.
    let queue = retryctl(home.path()).args(["schema", "queue"]).output().unwrap();
    let queue: serde_json::Value = serde_json::from_slice(&queue.stdout).unwrap();
    assert_eq!(queue["properties"]["retryPolicies"]["uniqueItems"], true);
}

#[test]
fn the_failurehistory_schema_comes_from_the_table_the_decoder_reads() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["schema", "failurehistory"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["required"], serde_json::json!(["runs"]));
    let run = &schema["properties"]["runs"]["items"];
    assert_eq!(run["additionalProperties"], false);
    // A container's name is optional (Lookout imports have none).
    let container = &run["properties"]["containers"]["items"];
    assert!(container.get("required").is_none(), "{container}");
    assert_eq!(
        schema["properties"]["job"]["properties"]["gang"]["required"],
        serde_json::json!(["cardinality"])
    );
    // A field the table does not list is refused by the decoder, with the table's names.
    let bad = home.path().join("h.yaml");
    std::fs::write(
        &bad,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\nruns:\n  - nodee: a\n",
    )
    .unwrap();
    let out = retryctl(home.path())
        .args(["simulate", "-f", "testdata/policies/valid", "--history"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field `nodee`, did you mean `node`?"));
}

#[test]
fn version_as_json() {
    let home = temp_home();
    let out = exchange(retryctl(home.path()).args(["version", "--client", "-o", "json"]));
    assert_eq!(
        out,
        format!(
            "exit: 0\n--- stdout\n{{\n  \"client\": {{\n    \"version\": \"{}\"\n  }}\n}}\n--- stderr\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let srv = crate::support::server::TestServer::start();
    let out = retryctl(home.path())
        .env("ARMADA_URL", &srv.url)
        .args(["version", "-o", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["server"]["dialect"], "v1");
    assert_eq!(v["server"]["url"], srv.url.as_str());
}

/// A `--listen` that is not `HOST:PORT` is a usage error (exit 2) saying what is expected.
#[test]
fn a_bad_listen_address_is_a_usage_error() {
    let home = temp_home();
    for addr in ["nonsense", "127.0.0.1:99999", ":8080"] {
        let out = exchange(retryctl(home.path()).args(["serve", "--in-memory", "--listen", addr]));
        assert_eq!(
            out,
            format!(
                "exit: 2\n--- stdout\n--- stderr\nerror: invalid `--listen` address `{addr}`: expected \
                 HOST:PORT with a port from 0 to 65535, such as `127.0.0.1:8080` or `0.0.0.0:8443`\n"
            )
        );
    }
}

/// Descriptors 0–2 closed at start (`retryctl ... <&-`) are open on `/dev/null` (std's
/// runtime start-up opens them): otherwise the next file the command opens takes the
/// descriptor, and output meant for stdout or stderr goes into it.
/// Seen from inside: `/proc/self/fd/0` reads as an empty file, not a missing one.
#[test]
fn descriptors_closed_at_start_are_open_on_dev_null() {
    use std::os::unix::process::CommandExt;
    let home = temp_home();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("retryctl"));
    cmd.args(["validate", "-f", "/proc/self/fd/0"])
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .current_dir(crate::support::root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: `close` is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(0);
            Ok(())
        });
    }
    assert_eq!(
        format_output(&cmd.output().unwrap()),
        "exit: 3\n--- stdout\nchecked 0 documents in 1 file: 0 valid, 0 invalid; 1 error, 0 warnings\n--- stderr\n/proc/self/fd/0\n  error: no documents: the input is empty or holds only comments; expected a YAML or JSON document\n"
    );
}
