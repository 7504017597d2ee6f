//! Traps a kubectl user falls into, and editor support: `validate --upstream` refuses what `create` against
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
    // Refused before sending, as invalid input for that server, as `validate --upstream` says.
    assert!(create.starts_with("exit: 3\n"), "{create}");
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
    // One schema for both dialects, told apart by `apiVersion`.
    let layouts = schema["oneOf"].as_array().unwrap();
    assert_eq!(layouts.len(), 2);
    assert_eq!(
        layouts[0]["properties"]["apiVersion"]["enum"],
        serde_json::json!(["armadaproject.io/v1"])
    );
    assert_eq!(
        layouts[1]["properties"]["apiVersion"]["enum"],
        serde_json::json!(["armadaproject.io/v1beta1"])
    );
    assert_eq!(
        layouts[1]["required"],
        serde_json::json!(["apiVersion", "kind", "name", "defaultAction"])
    );
    let spec = &layouts[0]["properties"]["spec"];
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

/// Every `*.yaml`/`*.json` file under `dir`, recursively, sorted.
fn files_under(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "json")) {
            out.push(path);
        }
    }
    out.sort();
}

/// Invalid documents whose defect is in a value the validator checks and JSON Schema cannot
/// express (a pattern that must compile, a relation between two fields, a compiled size, a
/// bound on a duration's value, uniqueness of values in different spellings); the schema
/// accepts them, the test checks it does, so this list stays exact.
const SCHEMA_CANNOT_TELL: &[&str] = &[
    // A categorizer's RE2 syntax, and a category name given twice (a unique key of items).
    "testdata/categorizer/duplicate.yaml",
    // A duration's value (24h at most): a pattern over Go duration text cannot bound it.
    "testdata/policies/invalid/duration-above-24h.yaml",
    // maxDelay >= initialDelay, across fields and inherited from the policy.
    "testdata/policies/invalid/max-delay-below-inherited-initial.yaml",
    "testdata/policies/invalid/max-delay-below-initial.yaml",
    // `.inf`: JSON has no infinity (it becomes null, which reads as not set).
    "testdata/policies/invalid/multiplier-not-finite.yaml",
    // RE2 compilation (syntax and compiled size): JSON Schema's regexes are ECMA-262's.
    "testdata/policies/invalid/regex-compiled-too-big.yaml",
    "testdata/policies/invalid/regex-invalid.yaml",
];

/// docs/cli.md: `schema KIND` accepts what `validate` accepts. Every document of every testdata
/// file is checked with a real JSON Schema validator (draft 2020-12) against the schema of
/// its kind: a document `validate` finds valid must be valid against it, an invalid one
/// must be rejected unless it is in `SCHEMA_CANNOT_TELL`.
#[test]
fn the_schemas_accept_what_validate_accepts() {
    let Some(python) = crate::support::python::python() else {
        return;
    };
    let home = temp_home();
    // The schemas in this order: `checked` below names each by its index.
    let (policy, queue, history, categorizer) = (0, 1, 2, 3);
    let schemas: Vec<serde_json::Value> = ["retrypolicy", "queue", "failurehistory", "errorcategories"]
        .map(|kind| {
            let out = retryctl(home.path()).args(["schema", kind]).output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .to_vec();
    // Each document with its schema, then whether `validate` finds it valid and its label:
    // checked in one batch by the validator.
    let mut checked: Vec<(usize, serde_json::Value)> = Vec::new();
    let mut told: Vec<(bool, String, String, Vec<String>)> = Vec::new();
    let mut files = Vec::new();
    files_under(&crate::support::root().join("testdata"), &mut files);
    let (mut accepted, mut rejected) = (0, 0);
    let mut wrong = Vec::new();
    let mut cannot_tell = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(crate::support::root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let parsed = retryctl::model::parse_documents(&text, None);
        let docs: Vec<serde_json::Value> = match serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).map(|v: serde_yaml::Value| serde_json::to_value(v)))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(docs) => docs.into_iter().map(|v| v.unwrap_or(serde_json::Value::Null)).collect(),
            // Not YAML a schema can be applied to (a syntax error, a duplicate key): the
            // validator must refuse it too.
            Err(_) => {
                assert!(
                    parsed.syntax_error.is_some() || parsed.documents.iter().any(|d| !d.is_valid()),
                    "{rel}: serde_yaml refuses it but validate accepts it"
                );
                continue;
            }
        };
        for (i, doc) in docs.iter().enumerate() {
            let Some(decoded) = parsed.documents.iter().find(|d| d.index == i) else {
                continue;
            };
            let kind = doc.get("kind").and_then(|k| k.as_str());
            let v = match kind {
                Some("Queue") => queue,
                Some("FailureHistory") => history,
                Some("RetryPolicy") => policy,
                // A SchedulerConfig, a List: no schema of their own.
                Some("SchedulerConfig" | "List") => continue,
                // An unknown or missing kind: the schema the file's folder is for.
                _ if rel.starts_with("testdata/histories") => history,
                // No envelope: the executor's categorizer config.
                _ if rel.starts_with("testdata/categorizer") => categorizer,
                // Elsewhere, a document with `errorCategories` at its top or under
                // `application` is one too (docs/categorizer.md): the executor's config beside
                // the policies (testdata/route/current/), or in the file `suggest` writes.
                None if doc.get("errorCategories").is_some()
                    || doc
                        .get("application")
                        .is_some_and(|a| a.get("errorCategories").is_some()) =>
                {
                    categorizer
                }
                _ => policy,
            };
            let valid = decoded.is_valid() && parsed.syntax_error.is_none();
            let label = format!("{rel} document {}", i + 1);
            let diagnostics = decoded.diagnostics.iter().map(|d| d.message.clone()).collect();
            checked.push((v, doc.clone()));
            told.push((valid, label, rel.clone(), diagnostics));
        }
    }
    let errors = crate::support::json_schema::errors(&python, &schemas, &checked);
    for ((valid, label, rel, diagnostics), errors) in told.into_iter().zip(errors) {
        match (valid, errors.is_empty()) {
            (true, true) => accepted += 1,
            (true, false) => wrong.push(format!("{label}: valid, but the schema says: {}", errors.join("; "))),
            (false, false) => {
                rejected += 1;
                if SCHEMA_CANNOT_TELL.contains(&rel.as_str()) {
                    wrong.push(format!(
                        "{label}: the schema rejects it; take it off SCHEMA_CANNOT_TELL"
                    ));
                }
            }
            (false, true) if SCHEMA_CANNOT_TELL.contains(&rel.as_str()) => cannot_tell.push(rel.clone()),
            (false, true) => wrong.push(format!("{label}: invalid ({diagnostics:?}), but the schema accepts it")),
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    cannot_tell.sort();
    cannot_tell.dedup();
    assert_eq!(cannot_tell, SCHEMA_CANNOT_TELL, "every file on the list is checked");
    // Both dialects, queues and histories are among the accepted.
    assert!(accepted >= 60, "only {accepted} valid documents checked");
    assert!(rejected >= 30, "only {rejected} invalid documents rejected");
}

/// `explain` finds a field the path misplaces (`retrypolicy.rules` is
/// `retrypolicy.spec.rules`), explains upstream's flat layout with `--api-version` (as
/// `kubectl explain --api-version`), points from one dialect to the other, and `explain` or
/// `schema` without a kind is a usage error that lists the kinds (as `kubectl explain`).
#[test]
fn explain_finds_misplaced_fields_and_the_v1beta1_layout() {
    let home = temp_home();
    let run = |args: &[&str]| exchange(retryctl(home.path()).args(args));
    assert_eq!(
        run(&["explain", "retrypolicy.rules"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: field `rules` does not exist in `retrypolicy`; its fields are `apiVersion`, `kind`, `metadata`, `spec`; did you mean `retrypolicy.spec.rules`?\n"
    );
    assert_eq!(
        run(&["explain", "rp.rules.onExitCodes.operator"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: field `rules` does not exist in `rp`; its fields are `apiVersion`, `kind`, `metadata`, `spec`; did you mean `rp.spec.rules.onExitCodes.operator`?\n"
    );
    let flat = run(&["explain", "retrypolicy", "--api-version", "armadaproject.io/v1beta1"]);
    assert!(
        flat.starts_with("exit: 0\n--- stdout\nKIND:     RetryPolicy (armadaproject.io/v1beta1)\n"),
        "{flat}"
    );
    assert!(flat.contains("   defaultAction\t<enum> -required-\n"), "{flat}");
    let rule = run(&["explain", "rp.rules", "--api-version", "armadaproject.io/v1beta1"]);
    assert!(rule.contains("FIELD:    rules <[]object>"), "{rule}");
    for field in ["action", "onCategory", "onSubcategory", "mutate"] {
        assert!(rule.contains(&format!("   {field}\t<")), "{field}: {rule}");
    }
    assert_eq!(
        run(&["explain", "rp.metadata", "--api-version", "armadaproject.io/v1beta1"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: field `metadata` does not exist in `rp`; its fields are `apiVersion`, `kind`, `name`, `retryLimit`, `defaultAction`, `rules`; `rp.metadata` is in the `armadaproject.io/v1` layout (`--api-version armadaproject.io/v1`)\n"
    );
    assert_eq!(
        run(&["explain", "failurehistory", "--api-version", "armadaproject.io/v1beta1"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: a FailureHistory has no `armadaproject.io/v1beta1` layout: it is `armadaproject.io/v1` only\n"
    );
    assert_eq!(
        run(&["schema"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: name the kind of document: `retrypolicy` (`rp`), `queue` (`q`), `failurehistory` or `errorcategories`\n\nhint: for example `retryctl schema retrypolicy > .schemas/retrypolicy.json`\n"
    );
    assert_eq!(
        run(&["explain"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: name the kind of document to explain: `retrypolicy` (`rp`), `queue` (`q`), `failurehistory` or `errorcategories`\n\nhint: for example `retryctl explain retrypolicy.spec.rules`\n"
    );
}

/// The section headings of `retryctl ARGS`' stdout, in order.
fn headings(home: &std::path::Path, args: &[&str]) -> Vec<String> {
    let out = retryctl(home).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.ends_with(':') && !l.starts_with(' '))
        .map(str::to_string)
        .collect()
}

/// `-h` is the short form of `--help` on every verb: the same sections in the same order (a
/// verb whose arguments clap defined after the global flags listed those first).
#[test]
fn short_help_has_the_sections_of_long_help_on_every_verb() {
    let home = temp_home();
    let verbs = [
        "validate",
        "create",
        "get",
        "update",
        "apply",
        "diff",
        "delete",
        "simulate",
        "tune",
        "suggest",
        "merge",
        "serve",
        "completion",
        "config",
        "version",
        "describe",
        "explain",
        "schema",
        "history",
    ];
    let text = |args: &[&str]| {
        let out = retryctl(home.path()).args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    for verb in verbs {
        let short = headings(home.path(), &[verb, "-h"]);
        assert_eq!(short, headings(home.path(), &[verb, "--help"]), "{verb}");
        assert!(short.contains(&"Options:".to_string()), "{verb}: {short:?}");
        // One shape on every verb: `-h` the summary that points to `--help`, `--help` more.
        let (summary, whole) = (text(&[verb, "-h"]), text(&[verb, "--help"]));
        assert!(
            summary.contains("Print help (see more with '--help')"),
            "{verb}: {summary}"
        );
        assert!(
            whole.contains("Print help (see a summary with '-h')"),
            "{verb}: {whole}"
        );
        assert!(summary.lines().count() < whole.lines().count(), "{verb}");
    }
    assert_eq!(
        headings(home.path(), &["suggest", "-h"]),
        ["Options:", "Run in shards (--emit):", "Global options:", "Examples:"]
    );
}

/// Connection and TLS flags appear only on verbs that talk to a server; still accepted
/// elsewhere (a shell alias that adds `--context` keeps working).
#[test]
fn server_flags_show_only_on_verbs_that_talk_to_a_server() {
    let home = temp_home();
    let help = |verb: &str| {
        let out = retryctl(home.path()).args([verb, "--help"]).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let server = [
        "--armada-url",
        "--context",
        "--config",
        "--timeout",
        "--token",
        "--token-file",
        "--certificate-authority",
        "--insecure-skip-tls-verify",
        "--verbose",
    ];
    for verb in [
        "validate",
        "tune",
        "suggest",
        "merge",
        "explain",
        "schema",
        "completion",
    ] {
        let text = help(verb);
        for flag in server {
            assert!(
                !text.contains(&format!("{flag} ")) && !text.contains(&format!("{flag}\n")),
                "{verb} shows {flag}"
            );
        }
    }
    for verb in ["get", "apply", "diff", "simulate", "history", "describe"] {
        let text = help(verb);
        for flag in server {
            assert!(text.contains(flag), "{verb} hides {flag}");
        }
    }
    let out = retryctl(home.path())
        .args(["suggest", "--history", "/nonexistent.jsonl", "--context", "prod"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(2), "{}", format_output(&out));
}

/// `diff` writes nothing, so it takes no `--dry-run`: clap's unknown argument, exit 2.
#[test]
fn diff_takes_no_dry_run() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["diff", "-f", "testdata/policies/valid", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 2\n--- stdout\n--- stderr\nerror: unexpected argument `--dry-run` found\n\nUsage: retryctl diff --filename <PATH>...\n\nFor more information, try `--help`.\n"
    );
}

/// A `--retry-policy` name no document holds is refused once, before any job is replayed,
/// by simulate and tune alike (it was an error on every job, then a warning that the flag
/// was ignored because every queue was among the documents, which none was).
#[test]
fn a_retry_policy_no_document_holds_is_refused_once() {
    let home = temp_home();
    let refused = "exit: 3\n--- stdout\n--- stderr\nerror: `--retry-policy` names policies `nosuch`, `other` that are not among the documents given with -f (known: `infra`)\n";
    for verb in [&["simulate"][..], &["tune", "--vary", "infra:retryLimit=1..3"]] {
        let out = retryctl(home.path())
            .args(verb)
            .args([
                "-f",
                "testdata/policies/valid/infra.yaml",
                "--retry-policy",
                "nosuch,infra,other",
            ])
            .args(["--history", "testdata/route/week.jsonl"])
            .output()
            .unwrap();
        assert_eq!(format_output(&out), refused, "{verb:?}");
    }
}

/// A field path with an empty name (`..`, a dot at either end) is refused, not read as the
/// path without it.
#[test]
fn explain_refuses_an_empty_field_name() {
    let home = temp_home();
    for path in ["retrypolicy..spec", "retrypolicy.spec.", ".spec"] {
        let out = retryctl(home.path()).args(["explain", path]).output().unwrap();
        assert_eq!(
            format_output(&out),
            format!(
                "exit: 2\n--- stdout\n--- stderr\nerror: invalid field path `{path}`: a field name is empty (expected names joined by single dots, such as `retrypolicy.spec.rules`)\n"
            )
        );
    }
}

/// A default policy no document holds is said once at the start (only a job whose queue
/// names no policy would need it: it passed unseen otherwise), and the replay goes on.
#[test]
fn a_default_policy_no_document_holds_is_a_warning() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/route/current",
            "--history",
            "testdata/route/week.jsonl",
        ])
        .args(["--default-policy", "nosuch", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("warning: the scheduler's defaultPolicyName `nosuch` is not among the documents given with -f: a job whose queue names no policy cannot be replayed\n"),
        "{err}"
    );
}
