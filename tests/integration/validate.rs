//! `retryctl validate`: exit codes, messages and positions as a user sees them.
//!
//! The invalid corpus (`testdata/policies/invalid/`, one defect per file) is snapshotted file
//! by file; `spec_rules_are_covered` maps every validation rule (docs/policies.md) to the file that breaks it,
//! so a missing or renamed case fails by name. Garbage inputs are generated into a tempdir.

use std::io::Write as _;

use retryctl::model::{parse_documents, Kind};

use crate::support::{exchange, retryctl, root, temp_home};

/// `validate -f FILE` (path relative to the repository root, as the user would type it).
fn validate(args: &[&str]) -> String {
    let home = temp_home();
    let mut cmd = retryctl(home.path());
    cmd.arg("validate").args(args);
    exchange(&mut cmd)
}

/// The JSON report of `validate -o json -f FILE`.
fn validate_json(file: &str) -> serde_json::Value {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["validate", "-o", "json", "-f", file])
        .output()
        .expect("runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{file}: not JSON ({e})"))
}

#[test]
fn valid_testdata_passes_and_counts_documents() {
    let out = validate(&["-f", "testdata/policies/valid"]);
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert!(
        out.contains("checked 7 documents in 7 files: 7 valid, 0 invalid"),
        "{out}"
    );
    // The design's examples carry no lint findings either.
    assert!(!out.contains("warning"), "{out}");
}

/// One reviewed snapshot per invalid file: exact output and exit code 3.
#[test]
fn invalid_corpus_snapshots() {
    insta::glob!("../../testdata/policies/invalid", "*.{yaml,json}", |path| {
        let rel = path.strip_prefix(root()).unwrap().to_str().unwrap().to_string();
        let out = validate(&["-f", &rel]);
        assert!(out.starts_with("exit: 3\n"), "{rel} must be invalid:\n{out}");
        assert!(!out.contains("panicked"), "{out}");
        insta::assert_snapshot!(out);
    });
}

#[test]
fn invalid_corpus_is_large_enough() {
    let n = std::fs::read_dir(root().join("testdata/policies/invalid"))
        .unwrap()
        .count();
    assert!(n >= 30, "only {n} invalid files");
}

/// Every validation rule (docs/policies.md), the corpus file that breaks it, and the diagnostic code and path
/// that must come out (checked through the stable `-o json` report).
#[test]
fn spec_rules_are_covered() {
    let table: &[(&str, &str, &str, &str)] = &[
        // (rule, file, code, path)
        (
            "unknown apiVersion",
            "unknown-api-version.yaml",
            "unknown-api-version",
            "apiVersion",
        ),
        (
            "missing apiVersion",
            "missing-api-version.yaml",
            "missing-field",
            "apiVersion",
        ),
        ("unknown kind", "unknown-kind-typo.yaml", "unknown-kind", "kind"),
        (
            "missing metadata.name",
            "missing-metadata-name.yaml",
            "missing-field",
            "metadata.name",
        ),
        ("name empty", "name-empty.yaml", "invalid-name", "metadata.name"),
        (
            "name longer than 63",
            "name-too-long.yaml",
            "invalid-name",
            "metadata.name",
        ),
        (
            "name not RFC 1123 (case)",
            "name-uppercase.yaml",
            "invalid-name",
            "metadata.name",
        ),
        (
            "name not RFC 1123 (char)",
            "name-underscore.yaml",
            "invalid-name",
            "name",
        ),
        (
            "name not RFC 1123 (end)",
            "name-trailing-dash.yaml",
            "invalid-name",
            "metadata.name",
        ),
        (
            "action spelling",
            "action-typo.yaml",
            "invalid-value",
            "spec.rules[0].action",
        ),
        (
            "defaultAction spelling",
            "default-action-unknown.yaml",
            "invalid-value",
            "spec.defaultAction",
        ),
        (
            "action required",
            "action-missing.yaml",
            "missing-field",
            "spec.rules[0].action",
        ),
        (
            "rule without matcher",
            "rule-without-matcher.yaml",
            "no-matcher",
            "spec.rules[0]",
        ),
        (
            "more than 100 rules",
            "too-many-rules.yaml",
            "too-many-rules",
            "spec.rules",
        ),
        (
            "onConditions empty",
            "conditions-empty.yaml",
            "invalid-value",
            "spec.rules[0].onConditions",
        ),
        (
            "onConditions unknown",
            "condition-unknown.yaml",
            "invalid-value",
            "spec.rules[0].onConditions[1]",
        ),
        (
            "onConditions case-sensitive",
            "condition-wrong-case.yaml",
            "invalid-value",
            "spec.rules[0].onConditions[0]",
        ),
        (
            "onConditions duplicate",
            "condition-duplicate.yaml",
            "duplicate",
            "spec.rules[0].onConditions[2]",
        ),
        (
            "operator In|NotIn",
            "exit-codes-operator-unknown.yaml",
            "invalid-value",
            "spec.rules[0].onExitCodes.operator",
        ),
        (
            "values non-empty",
            "exit-codes-values-empty.yaml",
            "invalid-value",
            "spec.rules[0].onExitCodes.values",
        ),
        (
            "values unique",
            "exit-code-duplicate.yaml",
            "duplicate",
            "spec.rules[0].onExitCodes.values[2]",
        ),
        (
            "values 1..=255",
            "exit-code-out-of-range.yaml",
            "out-of-range",
            "spec.rules[0].onExitCodes.values[1]",
        ),
        (
            "values at most 255",
            "exit-codes-too-many.yaml",
            "invalid-value",
            "spec.rules[0].onExitCodes.values",
        ),
        (
            "exit code 0",
            "exit-code-zero.yaml",
            "invalid-value",
            "spec.rules[0].onExitCodes.values[0]",
        ),
        (
            "pattern compiles",
            "regex-invalid.yaml",
            "invalid-regex",
            "spec.rules[0].onTerminationMessage.pattern",
        ),
        (
            "pattern at most 1024 bytes",
            "regex-too-long.yaml",
            "invalid-regex",
            "spec.rules[0].onTerminationMessage.pattern",
        ),
        (
            "repeat counts multiplied at most 1,000, as Go",
            "regex-compiled-too-big.yaml",
            "invalid-regex",
            "spec.rules[0].onTerminationMessage.pattern",
        ),
        (
            "category non-empty string",
            "category-empty-string.yaml",
            "invalid-value",
            "spec.rules[0].onFailureCategory[0]",
        ),
        (
            "category list non-empty",
            "category-list-empty.yaml",
            "invalid-value",
            "spec.rules[0].onFailureCategory",
        ),
        (
            "category at most 63",
            "category-too-long.yaml",
            "out-of-range",
            "spec.rules[0].onFailureCategory[0]",
        ),
        (
            "category no whitespace",
            "category-whitespace.yaml",
            "invalid-value",
            "spec.rules[0].onFailureCategory[0]",
        ),
        (
            "subcategory requires category",
            "subcategory-without-category.yaml",
            "invalid-value",
            "spec.rules[0].onFailureSubcategory",
        ),
        (
            "subcategory requires category (v1beta1)",
            "upstream-subcategory-without-category.yaml",
            "invalid-value",
            "rules[0].onSubcategory",
        ),
        (
            "duration parses",
            "duration-unparseable.yaml",
            "invalid-value",
            "spec.backoff.initialDelay",
        ),
        (
            "duration has a unit",
            "duration-missing-unit.yaml",
            "invalid-value",
            "spec.backoff.initialDelay",
        ),
        (
            "duration non-negative",
            "duration-negative.yaml",
            "invalid-value",
            "spec.backoff.initialDelay",
        ),
        (
            "duration at most 24h",
            "duration-above-24h.yaml",
            "out-of-range",
            "spec.backoff.maxDelay",
        ),
        (
            "maxDelay >= initialDelay",
            "max-delay-below-initial.yaml",
            "invalid-value",
            "spec.backoff.maxDelay",
        ),
        (
            "maxDelay >= inherited initialDelay",
            "max-delay-below-inherited-initial.yaml",
            "invalid-value",
            "spec.rules[0].backoff.maxDelay",
        ),
        (
            "multiplier >= 1",
            "multiplier-below-one.yaml",
            "out-of-range",
            "spec.backoff.multiplier",
        ),
        (
            "multiplier <= 100",
            "multiplier-above-100.yaml",
            "out-of-range",
            "spec.rules[0].backoff.multiplier",
        ),
        (
            "multiplier finite",
            "multiplier-not-finite.yaml",
            "out-of-range",
            "spec.backoff.multiplier",
        ),
        (
            "jitter 0..=1",
            "jitter-above-one.yaml",
            "out-of-range",
            "spec.backoff.jitter",
        ),
        (
            "retryLimit <= 10000",
            "retry-limit-above-10000.yaml",
            "out-of-range",
            "spec.retryLimit",
        ),
        (
            "retryLimit >= 0",
            "retry-limit-negative.yaml",
            "invalid-value",
            "spec.rules[0].retryLimit",
        ),
        (
            "memory: not both",
            "memory-factor-and-static.yaml",
            "invalid-value",
            "spec.rules[0].mutate.resources.memory",
        ),
        (
            "memory: one of",
            "memory-neither-factor-nor-static.yaml",
            "invalid-value",
            "spec.rules[0].mutate.resources.memory",
        ),
        (
            "memory factor > 1",
            "memory-factor-not-above-one.yaml",
            "out-of-range",
            "spec.rules[0].mutate.resources.memory.factor",
        ),
        (
            "memory static is a quantity",
            "memory-static-invalid-quantity.yaml",
            "invalid-value",
            "rules[0].mutate.resources.memory.static",
        ),
        (
            "memory static positive",
            "memory-static-zero.yaml",
            "out-of-range",
            "spec.rules[0].mutate.resources.memory.static",
        ),
        ("queue name", "queue-name-invalid.yaml", "invalid-name", "name"),
        (
            "queue priorityFactor >= 1",
            "queue-priority-factor-below-one.yaml",
            "out-of-range",
            "priorityFactor",
        ),
        (
            "queue labels non-empty",
            "queue-label-empty-value.yaml",
            "invalid-value",
            "labels.team",
        ),
        (
            "queue retryPolicies names",
            "queue-retry-policy-invalid-name.yaml",
            "invalid-name",
            "retryPolicies[1]",
        ),
        (
            "queue retryPolicies unique",
            "queue-retry-policy-duplicate.yaml",
            "duplicate",
            "retryPolicies[2]",
        ),
        (
            "strict decoding",
            "unknown-field-snake-case.yaml",
            "unknown-field",
            "spec.retry_limit",
        ),
        (
            "strict decoding (v1beta1)",
            "upstream-unknown-field.yaml",
            "unknown-field",
            "rules[0].onExitCodes",
        ),
        (
            "strict decoding (JSON)",
            "json-unknown-field.json",
            "unknown-field",
            "spec.rules[0].retrylimit",
        ),
    ];
    let mut failures = Vec::new();
    for (rule, file, code, path) in table {
        let report = validate_json(&format!("testdata/policies/invalid/{file}"));
        let found = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == *code && d["path"] == *path && d["line"].is_u64());
        if !found {
            failures.push(format!(
                "{rule}: {file} has no `{code}` at `{path}` with a line: {report}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// The issue's acceptance list

#[test]
fn snake_case_field_names_the_field_its_line_and_the_spelling() {
    let out = validate(&["-f", "testdata/policies/invalid/unknown-field-snake-case.yaml"]);
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains("error: 7:3 spec.retry_limit: unknown field `retry_limit`, did you mean `retryLimit`?"),
        "{out}"
    );
}

#[test]
fn queue_where_a_policy_is_expected_is_rejected_by_kind() {
    let text = std::fs::read_to_string(root().join("testdata/policies/valid/ml-queue.yaml")).unwrap();
    let parsed = parse_documents(&text, Some(&[Kind::RetryPolicy]));
    let doc = &parsed.documents[0];
    assert!(doc.resource.is_none(), "the body must not be decoded: {doc:?}");
    assert_eq!(doc.diagnostics.len(), 1, "{:?}", doc.diagnostics);
    let d = &doc.diagnostics[0];
    assert_eq!((d.code, d.path.as_str()), ("unexpected-kind", "kind"));
    assert_eq!(d.message, "expected a `RetryPolicy` document here, found kind `Queue`");
    assert_eq!(d.pos.map(|p| (p.line, p.column)), Some((3, 7)));

    // Even a Queue carrying policy-looking fields is refused by kind, not by a field error.
    let text = "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nrules: [{action: Retry}]\n";
    let parsed = parse_documents(text, Some(&[Kind::RetryPolicy]));
    let codes: Vec<&str> = parsed.documents[0].diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["unexpected-kind"]);
}

#[test]
fn three_documents_two_broken_report_every_error_with_index_and_line() {
    let out = validate(&["-f", "testdata/policies/invalid/multi-document-two-broken.yaml"]);
    let expected = "\
exit: 3
--- stdout
checked 3 documents in 1 file: 1 valid, 2 invalid; 5 errors, 0 warnings
--- stderr
testdata/policies/invalid/multi-document-two-broken.yaml: document 1 (RetryPolicy `first`)
  error: 7:15 spec.retryLimit: must be at most 10000, got `20000`
  error: 9:15 spec.rules[0].action: no RetryAction of name \"Retri\": expected `Retry` or `Fail`; did you mean `Retry`?
testdata/policies/invalid/multi-document-two-broken.yaml: document 3 (RetryPolicy `Third`)
  error: 23:7 name: `Third` is not a valid name: character `T` at position 1 is not allowed (use lowercase); use lowercase letters, digits and `-`
  error: 26:17 rules[0].onCategory: `gpu error` must not contain whitespace
  error: 29:26 rules[0].mutate.resources.memory.factor: must be greater than 1.0, got `0.5`
";
    assert_eq!(out, expected);
}

#[test]
fn exit_code_zero_never_matches() {
    let out = validate(&["-f", "testdata/policies/invalid/exit-code-zero.yaml"]);
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains(
            "error: 8:44 spec.rules[0].onExitCodes.values[0]: exit code `0` means not set and never matches; remove it"
        ),
        "{out}"
    );
}

#[test]
fn invalid_regex_gives_the_engines_reason_and_the_line() {
    let out = validate(&["-f", "testdata/policies/invalid/regex-invalid.yaml"]);
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains(
            "error: 9:18 spec.rules[0].onTerminationMessage.pattern: invalid regular expression `(TRANSIENT|RETRY`: unclosed group"
        ),
        "{out}"
    );
}

/// Writes `bytes` to a fresh file and validates it; returns the exchange.
fn validate_bytes(name: &str, bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let out = validate(&["-f", path.to_str().unwrap()]);
    // Paths of the tempdir differ run to run.
    out.replace(dir.path().to_str().unwrap(), "TMP")
}

fn assert_clean_failure(out: &str, message: &str) {
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    assert!(out.contains(message), "expected {message:?} in:\n{out}");
}

#[test]
fn garbage_binary_bytes() {
    let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let out = validate_bytes("binary.yaml", &bytes);
    assert_clean_failure(
        &out,
        "TMP/binary.yaml\n  error: not a text file (it contains NUL bytes); expected YAML or JSON\n",
    );
    let out = validate_bytes("latin1.yaml", b"name: caf\xe9\n");
    assert_clean_failure(
        &out,
        "error: not UTF-8 text (invalid byte at offset 9); expected YAML or JSON",
    );
}

#[test]
fn garbage_empty_file() {
    let out = validate_bytes("empty.yaml", b"");
    assert_clean_failure(
        &out,
        "TMP/empty.yaml\n  error: no documents: the input is empty or holds only comments; expected a YAML or JSON document\n",
    );
    let out = validate_bytes("comments.yaml", b"# nothing here\n---\n");
    assert_clean_failure(&out, "error: no documents: the input is empty or holds only comments");
}

#[test]
fn garbage_50_mb_file_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.yaml");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let line = format!("- {}\n", "x".repeat(1021));
    for _ in 0..(50 * 1024) {
        f.write_all(line.as_bytes()).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    assert!(std::fs::metadata(&path).unwrap().len() >= 50 * 1024 * 1024);
    let out = validate(&["-f", path.to_str().unwrap()]);
    assert_clean_failure(
        &out,
        "error: file is larger than 8 MiB; policy and queue files are a few KiB",
    );
}

#[test]
fn garbage_deeply_nested_yaml() {
    let out = validate_bytes("flow.yaml", "[".repeat(100_000).as_bytes());
    assert_clean_failure(&out, "invalid YAML: nesting deeper than 64 levels");
    let mut block = String::new();
    for depth in 0..200 {
        block.push_str(&"  ".repeat(depth));
        block.push_str("a:\n");
    }
    let out = validate_bytes("block.yaml", block.as_bytes());
    assert_clean_failure(&out, "error: 65:129: invalid YAML: nesting deeper than 64 levels");
}

#[test]
fn garbage_alias_bomb() {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..=9 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let out = validate_bytes("bomb.yaml", text.as_bytes());
    assert_clean_failure(
        &out,
        "invalid YAML: aliases expand the input to more than 250000 nodes (an alias bomb?); refusing to read further",
    );
}

#[test]
fn garbage_many_nodes_without_aliases() {
    let text = format!("a: [{}1]\n", "1,".repeat(300_000));
    let out = validate_bytes("flat.yaml", text.as_bytes());
    assert_clean_failure(&out, "the input has more than 250000 nodes");
}

// ---------------------------------------------------------------------------------------
// Output formats

#[test]
fn json_output_for_a_multi_error_file() {
    let out = validate(&[
        "-o",
        "json",
        "-f",
        "testdata/policies/invalid/multi-document-two-broken.yaml",
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn github_output_for_a_multi_error_file() {
    let out = validate(&[
        "-o",
        "github",
        "-f",
        "testdata/policies/invalid/multi-document-two-broken.yaml",
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn stdin_is_read_with_dash() {
    let home = temp_home();
    let text = std::fs::read(root().join("testdata/policies/invalid/action-typo.yaml")).unwrap();
    let out = exchange(retryctl(home.path()).args(["validate", "-f", "-"]).write_stdin(text));
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains("<stdin> (RetryPolicy `p`)\n  error: 7:15 spec.rules[0].action"),
        "{out}"
    );
}

#[test]
fn missing_file_is_invalid_input() {
    let out = validate(&["-f", "testdata/policies/no-such-file.yaml"]);
    assert_clean_failure(&out, "error: cannot read: no such file or directory");
}

// ---------------------------------------------------------------------------------------
// Lint (docs/policies.md)

/// One reviewed snapshot per lint case: warnings, exit 0.
#[test]
fn lint_corpus_snapshots() {
    insta::glob!("../../testdata/policies/lint", "*.yaml", |path| {
        let rel = path.strip_prefix(root()).unwrap().to_str().unwrap().to_string();
        let out = validate(&["-f", &rel]);
        assert!(out.starts_with("exit: 0\n"), "{rel} must pass without --strict:\n{out}");
        assert!(out.contains("warning: "), "{rel} must warn:\n{out}");
        assert!(!out.contains("error: "), "{rel} must have no errors:\n{out}");
        insta::assert_snapshot!(out);
    });
}

#[test]
fn strict_turns_warnings_into_exit_3() {
    let dir = root().join("testdata/policies/lint");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path.strip_prefix(root()).unwrap().to_str().unwrap().to_string();
        let out = validate(&["--strict", "-f", &rel]);
        assert!(out.starts_with("exit: 3\n"), "{rel}:\n{out}");
        assert!(out.contains("with --strict"), "{rel}:\n{out}");
    }
}

#[test]
fn shadowed_rules_are_reported_at_the_later_rule() {
    let report = validate_json("testdata/policies/lint/shadowed-rules.yaml");
    let shadowed: Vec<(String, u64)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "shadowed-rule")
        .map(|d| (d["path"].as_str().unwrap().to_string(), d["line"].as_u64().unwrap()))
        .collect();
    let paths: Vec<&str> = shadowed.iter().map(|(p, _)| p.as_str()).collect();
    // Rules 1, 3, 5, 7 and 9 are shadowed; 10 to 13 differ from their look-alikes in
    // container selection, an extra exit code, a category, or a message pattern.
    assert_eq!(
        paths,
        [
            "spec.rules[1]",
            "spec.rules[3]",
            "spec.rules[5]",
            "spec.rules[7]",
            "spec.rules[9]"
        ],
        "{report}"
    );
}

#[test]
fn scheduler_config_lint() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "scheduling:\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 3\n    defaultPolicyName: missing\n",
    )
    .unwrap();
    let out = validate(&[
        "--scheduler-config",
        config.to_str().unwrap(),
        "-f",
        "testdata/policies/valid/ml-training.yaml",
    ]);
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert!(
        out.contains("spec.retryLimit: limit `5` is above the scheduler's globalMaxRetries `3`; it is capped at 3"),
        "{out}"
    );
    assert!(
        out.contains("the scheduler's defaultPolicyName `missing` is not among the documents"),
        "{out}"
    );
}

/// `validate` and `simulate` read `--scheduler-config` alike: one line per problem, at its
/// position, the field named only when there is one (a YAML error has none).
#[test]
fn a_broken_scheduler_config_reads_the_same_in_validate_simulate_and_describe() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(&config, "scheduling: [\n").unwrap();
    let config = config.to_str().unwrap();
    let policy = "testdata/policies/valid/ml-training.yaml";
    let expected = "\
exit: 3
--- stdout
--- stderr
error: invalid scheduler config `TMP/scheduler.yaml`
  TMP/scheduler.yaml:2:1: invalid YAML: while parsing a node, did not find expected node content
";
    let tmp = dir.path().to_str().unwrap();
    let out = validate(&["--scheduler-config", config, "-f", policy]);
    assert_eq!(out.replace(tmp, "TMP"), expected);
    let home = temp_home();
    let mut cmd = retryctl(home.path());
    cmd.args([
        "simulate",
        "-f",
        policy,
        "--history",
        "testdata/histories/cuda-error.yaml",
    ])
    .args(["--scheduler-config", config]);
    assert_eq!(exchange(&mut cmd).replace(tmp, "TMP"), expected);
    let mut cmd = retryctl(home.path());
    cmd.args(["describe", "-f", policy, "--scheduler-config", config]);
    assert_eq!(exchange(&mut cmd).replace(tmp, "TMP"), expected);
}

/// The earlier documents are checked as usual; the one the YAML error stopped counts as a
/// document, and an invalid one, in the summary (and in `-o json`'s counts).
#[test]
fn syntax_error_in_a_later_document_keeps_the_earlier_ones() {
    let text = "\
apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata: {name: first}
spec:
  rules:
    - action: Retri
      onConditions: [Evicted]
---
apiVersion: armadaproject.io/v1
kind: Queue
name: q
retryPolicies: [first
";
    let out = validate_bytes("broken.yaml", text.as_bytes());
    let expected = "\
exit: 3
--- stdout
checked 2 documents in 1 file: 0 valid, 2 invalid; 2 errors, 0 warnings
--- stderr
TMP/broken.yaml (RetryPolicy `first`)
  error: 6:15 spec.rules[0].action: no RetryAction of name \"Retri\": expected `Retry` or `Fail`; did you mean `Retry`?
TMP/broken.yaml
  error: 13:1: invalid YAML in document 2: while parsing a flow sequence, expected ',' or ']'
";
    assert_eq!(out, expected);
    // A valid first document: one valid, the stopped one invalid.
    let fixed = text.replace("Retri", "Retry");
    let out = validate_bytes("broken.yaml", fixed.as_bytes());
    assert!(
        out.starts_with(
            "exit: 3\n--- stdout\nchecked 2 documents in 1 file: 1 valid, 1 invalid; 1 error, 0 warnings\n"
        ),
        "{out}"
    );
    let home = temp_home();
    let file = home.path().join("broken.yaml");
    std::fs::write(&file, fixed).unwrap();
    let out = retryctl(home.path())
        .args(["validate", "-o", "json", "-f", file.to_str().unwrap()])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&report["documents"], &report["invalidDocuments"], &report["errors"]),
        (&serde_json::json!(2), &serde_json::json!(1), &serde_json::json!(1)),
        "{report}"
    );
}

/// `validate --upstream`: findings in source order (upstream's, the linter's and the
/// validator's mixed), an unset `defaultAction` named (docs/reference/wire.md: upstream refuses it), and a
/// rule without a category named by the rule, not by a field the user did not write. Plain
/// `validate` keeps v1's documented default (`Fail`).
#[test]
fn validate_upstream_reports_in_source_order_and_refuses_an_unset_default_action() {
    let out = validate(&["--upstream", "-f", "testdata/policies/valid/infra.yaml"]);
    assert_eq!(
        out,
        "exit: 3
--- stdout
checked 1 document in 1 file: 0 valid, 1 invalid; 4 errors, 0 warnings
--- stderr
testdata/policies/valid/infra.yaml (RetryPolicy `infra`)
  error: 7:3 spec.defaultAction: no `spec.defaultAction`: upstream Armada refuses a policy without one (it will not default to `Fail`), so `create` against an upstream server and `--engine upstream` refuse it; write `defaultAction: Fail` or `defaultAction: Retry`
  error: 9:7 spec.rules[0]: this rule has no category, and upstream Armada stores only category rules (`onCategory`, optionally `onSubcategory`); `create` against an upstream server refuses this policy
  error: 10:21 spec.rules[0].onConditions: upstream Armada cannot store `onConditions`; `create` against an upstream server refuses this policy
  error: 12:9 spec.rules[0].antiAffinity: upstream Armada cannot store `antiAffinity`; `create` against an upstream server refuses this policy
hint: today's Armada stores armadaproject.io/v1beta1: regenerate with `--engine upstream`
"
    );
    let out = validate(&["-f", "testdata/policies/valid/infra.yaml"]);
    assert!(out.starts_with("exit: 0\n"), "{out}");
    // Positions never go back up the file, whatever found them.
    let out = validate(&["--upstream", "-f", "testdata/policies/valid/ml-training.yaml"]);
    let lines: Vec<(usize, usize)> = out
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("error: "))
        .map(|l| {
            let (line, col) = l.split_once(' ').unwrap().0.split_once(':').unwrap();
            (line.parse().unwrap(), col.parse().unwrap())
        })
        .collect();
    assert!(lines.len() >= 10, "{out}");
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{out}");
}

/// `-o json` has camelCase keys, as every other verb's JSON, and `--help` names the guide.
#[test]
fn json_keys_are_camel_case_and_help_points_to_the_policies_guide() {
    let home = crate::support::temp_home();
    let out = crate::support::retryctl(home.path())
        .args(["validate", "-f", "testdata/policies/valid", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "valid",
            "files",
            "documents",
            "invalidDocuments",
            "errors",
            "warnings",
            "diagnostics"
        ]
    );
    for flag in ["-h", "--help"] {
        let out = crate::support::retryctl(home.path())
            .args(["validate", flag])
            .output()
            .unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.starts_with("Parse, validate and lint documents offline (what each check means: docs/policies.md)\n"),
            "{help}"
        );
    }
}

/// The pre-commit hooks (`.pre-commit-hooks.yaml`) by default hand `validate` the policy and
/// queue files under a `policies/` directory, and not the repository's other YAML: a CI
/// workflow is no policy, and `validate --strict` would fail every commit that touches one.
/// pre-commit selects a file when `files:` (a Python regex) is found in its path; these
/// patterns read the same in Rust's regex.
#[test]
fn pre_commit_hooks_select_policy_files_and_not_ci_workflows() {
    let text = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    let hooks: Vec<serde_yaml::Value> = serde_yaml::from_str(&text).unwrap();
    let paths = [
        "policies/ml.yaml",
        "policies/queues/gpu.json",
        "clusters/eu/policies/infra.yml",
        ".github/workflows/ci.yml",
        ".github/workflows/release.yaml",
        "charts/armada/values.yaml",
        "mypolicies/ml.yaml",
        "policies/README.md",
    ];
    let mut selected = Vec::new();
    for hook in &hooks {
        let files = regex::Regex::new(hook["files"].as_str().expect("a files: pattern")).unwrap();
        let chosen: Vec<&str> = paths.iter().copied().filter(|p| files.is_match(p)).collect();
        selected.push(format!("{}: {chosen:?}", hook["id"].as_str().unwrap()));
    }
    assert_eq!(
        selected,
        [
            r#"retryctl-validate: ["policies/ml.yaml", "policies/queues/gpu.json", "clusters/eu/policies/infra.yml"]"#,
            r#"retryctl-validate-upstream: ["policies/ml.yaml", "policies/queues/gpu.json", "clusters/eu/policies/infra.yml"]"#,
        ]
    );
}
