//! The executor's categorizer config (`errorCategories`) through `validate`, `schema` and
//! `explain`: both shapes, upstream's checks with every error placed, warnings, exit codes.

use crate::support::{exchange, retryctl, temp_home};

fn run(args: &[&str]) -> String {
    let home = temp_home();
    exchange(retryctl(home.path()).args(args))
}

#[test]
fn valid_configs_of_both_shapes_pass() {
    for file in [
        "testdata/categorizer/executor-config.yaml",
        "testdata/categorizer/bare.yaml",
    ] {
        assert_eq!(
            run(&["validate", "-f", file]),
            "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n",
            "{file}"
        );
    }
}

/// Every check of upstream's `NewClassifier` that the file breaks, each at its field, where
/// upstream would have stopped at the first.
#[test]
fn every_error_is_reported_with_its_place() {
    let want = [
        "exit: 3\n",
        "--- stdout\n",
        "checked 1 document in 1 file: 0 valid, 1 invalid; 16 errors, 0 warnings\n",
        "--- stderr\n",
        "testdata/categorizer/invalid.yaml (ErrorCategories)\n",
        "  error: 3:20 errorCategories.defaultCategory: defaultCategory `this-default-category-is-much-too-long-for-a-lookout-column-of-6` exceeds maximum length 63\n",
        "  error: 6:15 errorCategories.categories[0].action: category `oom`: invalid action `Remove`: must be `Delete` or `Retain`\n",
        "  error: 8:11 errorCategories.categories[0].rules[0]: category `oom` rule 0: rule must specify only one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents\n",
        "  error: 8:37 errorCategories.categories[0].rules[0].onConditions[1]: category `oom` rule 0: unknown condition `NotARealCondition`, valid values: OOMKilled, Evicted, DeadlineExceeded\n",
        "  error: 9:35 errorCategories.categories[0].rules[0].onExitCodes.operator: category `oom` rule 0: invalid exit code operator `Equals`, must be `In` or `NotIn`\n",
        "  error: 9:51 errorCategories.categories[0].rules[0].onExitCodes.values: category `oom` rule 0: exit code matcher requires at least one value\n",
        "  error: 10:13 errorCategories.categories[1].name: duplicate category name `oom`\n",
        "  error: 11:14 errorCategories.categories[1].rules: category `oom` must have at least one rule\n",
        "  error: 12:7 errorCategories.categories[2].name: category config must have a name\n",
        "  error: 13:11 errorCategories.categories[2].rules[0]: category `` rule 0: rule must specify one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents\n",
        "  error: 14:43 errorCategories.categories[2].rules[1].onTerminationMessage.pattern: category `` rule 1: invalid onTerminationMessage regex `[invalid`: unclosed character class\n",
        "  error: 15:33 errorCategories.categories[2].rules[2].onPodError.pattern: category `` rule 2: invalid onPodError regex `(unclosed`: unclosed group\n",
        "  error: 16:33 errorCategories.categories[2].rules[3].onPodEvents.regexp: category `` rule 3: invalid onPodEvents regexp `([invalid`: unclosed character class\n",
        "  error: 16:52 errorCategories.categories[2].rules[3].onPodEvents.type: category `` rule 3: invalid onPodEvents type `Info`, must be `Normal` or `Warning`\n",
        "  error: 17:24 errorCategories.categories[2].rules[4].onPodEvents.type: category `` rule 4: invalid onPodEvents type ``, must be `Normal` or `Warning`\n",
        "  error: 18:24 errorCategories.categories[2].rules[4].subcategory: category `` rule 4: subcategory `this-subcategory-is-much-too-long-for-a-lookout-column-of-63-chr` exceeds maximum length 63\n",
    ]
    .concat();
    assert_eq!(run(&["validate", "-f", "testdata/categorizer/invalid.yaml"]), want);
}

#[test]
fn unknown_keys_and_a_disabled_config_are_warnings() {
    let warnings = concat!(
        "testdata/categorizer/warnings.yaml (ErrorCategories)\n",
        "  warning: 2:3 errorCategories.enabled: the executor skips this categorizer: it is not enabled (`enabled` defaults to `false`), so the executor neither loads it nor assigns a category to any run; set `enabled: true`\n",
        "  warning: 5:7 errorCategories.categories[0].actoin: unknown field `actoin`, did you mean `action`? (the executor ignores it)\n",
        "  warning: 8:11 errorCategories.categories[0].rules[0].retryLimit: unknown field `retryLimit`, expected one of `containerName`, `onConditions`, `onExitCodes`, `onTerminationMessage`, `onPodError`, `onPodEvents`, `subcategory`, `hint` (the executor ignores it)\n",
    );
    let summary = "checked 1 document in 1 file: 1 valid, 0 invalid; 0 errors, 3 warnings\n";
    assert_eq!(
        run(&["validate", "-f", "testdata/categorizer/warnings.yaml"]),
        format!("exit: 0\n--- stdout\n{summary}--- stderr\n{warnings}")
    );
    assert_eq!(
        run(&["validate", "--strict", "-f", "testdata/categorizer/warnings.yaml"]),
        format!("exit: 3\n--- stdout\n{summary}--- stderr\n{warnings}error: warnings with --strict\n")
    );
}

#[test]
fn the_json_report_names_the_kind_and_places_each_finding() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["validate", "-o", "json", "-f", "testdata/categorizer/invalid.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["errors"], 16);
    assert_eq!(
        report["diagnostics"][1],
        serde_json::json!({
            "severity": "error",
            "code": "invalid-value",
            "file": "testdata/categorizer/invalid.yaml",
            "document": 1,
            "kind": "ErrorCategories",
            "path": "errorCategories.categories[0].action",
            "line": 6,
            "column": 15,
            "message": "category `oom`: invalid action `Remove`: must be `Delete` or `Retain`"
        })
    );
}

/// A categorizer beside policies in one `validate` (checked together: the policy's categories
/// are not the categorizer's), and a categorizer where `simulate` wants
/// policies: named for what it is, not read as a policy without `apiVersion`.
#[test]
fn a_categorizer_is_told_apart_from_policies() {
    assert_eq!(
        run(&[
            "validate",
            "-f",
            "testdata/categorizer/executor-config.yaml",
            "-f",
            "testdata/policies/valid/upstream-v1beta1.yaml",
        ]),
        [
            "exit: 0\n--- stdout\nchecked 2 documents in 2 files: 2 valid, 0 invalid; 0 errors, 3 warnings\n--- stderr\n",
            "testdata/policies/valid/upstream-v1beta1.yaml (RetryPolicy `ml-training-retries`)\n",
            "  warning: 9:17 rules[0].onCategory: the categorizer `testdata/categorizer/executor-config.yaml` never assigns category `user-error` (neither a category's `name` nor its `defaultCategory`): this rule never matches a failure the executor categorizes, did you mean `user_error`?\n",
            "  warning: 11:17 rules[1].onCategory: the categorizer `testdata/categorizer/executor-config.yaml` never assigns category `gpu` (neither a category's `name` nor its `defaultCategory`): this rule never matches a failure the executor categorizes\n",
            "  warning: 23:17 rules[3].onCategory: the categorizer `testdata/categorizer/executor-config.yaml` never assigns category `oom-small` (neither a category's `name` nor its `defaultCategory`): this rule never matches a failure the executor categorizes\n",
        ]
        .concat()
    );
    // Among `-f`'s files, a categorizer is the candidate's (docs/categorizer.md), not a
    // policy: the jobs are classified by it, and no policy applies.
    let out = run(&[
        "simulate",
        "-f",
        "testdata/categorizer/bare.yaml",
        "--history",
        "testdata/histories/design-composition.yaml",
    ]);
    assert!(
        out.contains("--- stderr\nwarning: `-f` holds no retry policy: every job follows the legacy behaviour (a failed run is final)\n"),
        "{out}"
    );
    assert_eq!(
        out,
        run(&[
            "simulate",
            "-f",
            "testdata/categorizer/bare.yaml",
            "--categorizer",
            "testdata/categorizer/bare.yaml",
            "--history",
            "testdata/histories/design-composition.yaml",
        ]),
    );
    // Two categorizers for one side: a usage error naming both, nothing read.
    assert_eq!(
        run(&[
            "simulate",
            "-f",
            "testdata/categorizer/bare.yaml",
            "--categorizer",
            "testdata/categorizer/executor-config.yaml",
            "--history",
            "testdata/histories/design-composition.yaml",
        ]),
        "exit: 2\n--- stdout\n--- stderr\nerror: the candidate has two categorizers, `--categorizer testdata/categorizer/executor-config.yaml` and `testdata/categorizer/bare.yaml` document 1: give one\n"
    );
}

#[test]
fn schema_and_explain_know_the_kind() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["schema", "errorcategories"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let shapes = schema["anyOf"].as_array().unwrap();
    // Where the config is, in any case: `ErrorCategories:` is the bare shape too.
    let cases = [
        (serde_json::json!({"errorCategories": {"enabled": true}}), true),
        (serde_json::json!({"ERRORCATEGORIES": {"enabled": true}}), true),
        (
            serde_json::json!({"Application": {"errorCategories": null}, "kubernetes": {}}),
            true,
        ),
        (serde_json::json!({"application": {"clusterId": "a"}}), false),
        (serde_json::json!({"errorCategories": {"enabled": "sometimes"}}), false),
    ];
    if let Some(python) = crate::support::python::python() {
        let docs: Vec<_> = cases.iter().map(|(doc, _)| doc.clone()).collect();
        let valid = crate::support::json_schema::valid(&python, &schema, &docs);
        for ((doc, expected), valid) in cases.iter().zip(valid) {
            assert_eq!(valid, *expected, "{doc}");
        }
    }
    let body = &shapes[0]["properties"]["errorCategories"];
    let rule = &body["properties"]["categories"]["items"]["properties"]["rules"]["items"];
    assert_eq!(
        rule["properties"]["onPodEvents"]["properties"]["type"]["enum"],
        serde_json::json!(["Normal", "Warning"])
    );
    let explained = run(&["explain", "errorcategories.categories.action"]);
    assert!(
        explained.starts_with("exit: 0\n--- stdout\nKIND:     ErrorCategories (the executor's errorCategories, keys in any case)\nFIELD:    categories.action <enum>\n"),
        "{explained}"
    );
    assert_eq!(
        run(&["explain", "errorcategories.rules"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: field `rules` does not exist in `errorcategories`; its fields are `enabled`, `defaultCategory`, `defaultSubcategory`, `categories`; did you mean `errorcategories.categories.rules`?\n"
    );
}

/// Both layers of today's Armada checked together: a Retry rule on a category whose pod the
/// executor keeps (a `Retain` category, the default category), a rule on a category it never
/// assigns; `Delete` categories, a `Fail` rule and Armada's own `internal` pass. Warnings,
/// so `--strict` makes them exit 3; `--categorizer FILE` and a second `-f` say the same.
#[test]
fn validate_checks_policies_against_the_categorizer() {
    let c = "testdata/categorizer/executor-config.yaml";
    let warnings = [
        "testdata/categorizer/policy.yaml (RetryPolicy `two-layers`)\n",
        "  warning: 10:33 rules[1].onCategory: this `Retry` rule retries category `user_error`, whose failed pod the executor keeps (its category in `testdata/categorizer/executor-config.yaml` has no `action: Delete`): the retry reuses the pod's name, collides with the kept pod and its lease is returned; set `action: Delete` on category `user_error` in `testdata/categorizer/executor-config.yaml`\n",
        "  warning: 12:33 rules[3].onCategory: this `Retry` rule retries category `uncategorized`, the `defaultCategory` of `testdata/categorizer/executor-config.yaml`, whose failed pods the executor keeps: the retry reuses the pod's name, collides with the kept pod and its lease is returned\n",
        "  warning: 13:33 rules[4].onCategory: the categorizer `testdata/categorizer/executor-config.yaml` never assigns category `infrastucture` (neither a category's `name` nor its `defaultCategory`): this rule never matches a failure the executor categorizes, did you mean `infrastructure`?\n",
        "  warning: 14:33 rules[5].onCategory: the categorizer `testdata/categorizer/executor-config.yaml` never assigns category `cuda_error` (neither a category's `name` nor its `defaultCategory`): this rule never matches a failure the executor categorizes\n",
    ]
    .concat();
    let summary = "checked 2 documents in 2 files: 2 valid, 0 invalid; 0 errors, 4 warnings\n";
    let want = format!("exit: 0\n--- stdout\n{summary}--- stderr\n{warnings}");
    assert_eq!(
        run(&["validate", "-f", "testdata/categorizer/policy.yaml", "--categorizer", c]),
        want
    );
    assert_eq!(
        run(&["validate", "-f", "testdata/categorizer/policy.yaml", "-f", c]),
        want
    );
    assert_eq!(
        run(&[
            "validate",
            "--strict",
            "-f",
            "testdata/categorizer/policy.yaml",
            "--categorizer",
            c
        ]),
        format!("exit: 3\n--- stdout\n{summary}--- stderr\n{warnings}error: warnings with --strict\n")
    );
    // A config that is not enabled is skipped by the executor, errors and all (upstream's
    // `application.go` builds no classifier from it): said as a warning beside its errors,
    // which are still upstream's checks (exit 3).
    let scratch = tempfile::tempdir().unwrap();
    let disabled = scratch.path().join("disabled.yaml");
    std::fs::write(
        &disabled,
        "errorCategories:\n  enabled: false\n  categories:\n  - name: x\n    rules:\n    - {}\n",
    )
    .unwrap();
    let path = disabled.to_str().unwrap();
    assert_eq!(
        run(&["validate", "-f", path]),
        format!(
            "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 1 warning\n--- stderr\n{path} (ErrorCategories)\n{}{}",
            "  warning: 2:12 errorCategories.enabled: the executor skips this categorizer: it is not enabled (`enabled` defaults to `false`), so the executor neither loads it nor assigns a category to any run; set `enabled: true`\n",
            "  error: 6:7 errorCategories.categories[0].rules[0]: category `x` rule 0: rule must specify one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents\n",
        )
    );
    // A categorizer that is not enabled assigns nothing: every category rule is told so.
    let out = run(&[
        "validate",
        "-f",
        "testdata/categorizer/policy.yaml",
        "--categorizer",
        "testdata/categorizer/warnings.yaml",
    ]);
    assert!(out.contains("  warning: 9:33 rules[0].onCategory: the categorizer `testdata/categorizer/warnings.yaml` is not enabled, so the executor assigns no category and this rule never matches on `oom`; set `enabled: true` in `testdata/categorizer/warnings.yaml`\n"), "{out}");
    // `--categorizer` reads only a categorizer, and a missing one is a file error.
    assert_eq!(
        run(&["validate", "-f", c, "--categorizer", "/nonexistent/c.yaml"]),
        "exit: 3\n--- stdout\nchecked 1 document in 2 files: 1 valid, 0 invalid; 1 error, 0 warnings\n--- stderr\n/nonexistent/c.yaml\n  error: cannot read: no such file or directory\n"
    );
}

/// A config of `categories` categories of `rules` rules each, written to `dir/NAME`.
fn sized(dir: &std::path::Path, name: &str, categories: usize, rules: usize) -> String {
    let mut y = String::from("errorCategories:\n  enabled: true\n  categories:\n");
    for i in 0..categories {
        y.push_str(&format!("    - name: c{i}\n      rules:\n"));
        for r in 0..rules {
            y.push_str(&format!("        - onTerminationMessage: {{pattern: \"E{i}x{r}\"}}\n"));
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, y).unwrap();
    path.to_str().unwrap().to_string()
}

/// At most 1,000 categories and 4,000 rules in all (docs/categorizer.md): `validate` and
/// every verb that reads a categorizer refuse one past either, exit 3, naming the file, the
/// count and the cap; at the caps it is read.
#[test]
fn a_categorizer_past_its_caps_is_refused_by_validate_and_every_verb() {
    let home = temp_home();
    let dir = home.path();
    let at_caps = sized(dir, "at.yaml", 1000, 4);
    assert_eq!(
        run(&["validate", "-f", &at_caps]),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n"
    );
    let categories = sized(dir, "categories.yaml", 1001, 1);
    let rules = sized(dir, "rules.yaml", 1000, 5);
    let too_many_categories =
        "errorCategories.categories: 1,001 categories: a categorizer holds at most 1,000 (docs/categorizer.md)";
    for (file, said) in [
        (&categories, too_many_categories.to_string()),
        (
            &rules,
            "errorCategories.categories: 5,000 rules in all categories: a categorizer holds at most 4,000 (docs/categorizer.md)".to_string(),
        ),
    ] {
        assert_eq!(
            run(&["validate", "-f", file]),
            format!("exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\n--- stderr\n{file} (ErrorCategories)\n  error: 4:5 {said}\n")
        );
        let history = "testdata/categorizer/history.jsonl";
        let policy = "testdata/categorizer/policy.yaml";
        let refused = format!("exit: 3\n--- stdout\n--- stderr\nerror: invalid categorizer `{file}`\n  {file}:4:5: {said}\n");
        for verb in [
            vec!["simulate", "-f", policy, "--history", history, "--engine", "upstream", "--categorizer", file],
            vec![
                "tune", "-f", policy, "--history", history, "--engine", "upstream", "--categorizer", file, "--vary",
                "two-layers:retryLimit=1..2",
            ],
            vec!["suggest", "--history", history, "--engine", "upstream", "--categorizer", file],
        ] {
            assert_eq!(run(&verb), refused, "{verb:?}");
        }
    }
}

/// Go's regexp the rest of it: each pattern field refuses what Go's `regexp.Compile`
/// refuses, in Go's words (golang/go `regexp/syntax/parse.go`, `repeat`: stacked repetition
/// operators; `parseRepeat`: a count past 1,000), at its field and line, and reads what Go
/// reads (a brace count with a leading zero is text, flags twice or set and cleared or none,
/// `\p{^Greek}`, groups nested 300 deep).
#[test]
fn patterns_are_refused_in_gos_words_and_read_as_go_reads_them() {
    let home = temp_home();
    let deep = format!("{}a{}", "(".repeat(300), ")".repeat(300));
    let file = home.path().join("go.yaml");
    std::fs::write(
        &file,
        format!(
            "errorCategories:
  enabled: true
  categories:
    - name: go
      rules:
        - onTerminationMessage: {{pattern: 'a**'}}
        - onPodError: {{pattern: 'a{{2}}{{3}}'}}
        - onPodEvents: {{regexp: 'a*??', type: Warning}}
        - onTerminationMessage: {{pattern: '(a{{2}}){{501}}'}}
        - onTerminationMessage: {{pattern: '(?ii)a{{01}}{{00}}{{1,02}}'}}
        - onPodError: {{pattern: '(?i-i)\\p{{^Greek}}(?)b'}}
        - onPodEvents: {{regexp: '{deep}', type: Warning}}
"
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    assert_eq!(
        run(&["validate", "-f", file]),
        [
            "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 4 errors, 0 warnings\n--- stderr\n",
            &format!("{file} (ErrorCategories)\n"),
            "  error: 6:43 errorCategories.categories[0].rules[0].onTerminationMessage.pattern: category `go` rule 0: invalid onTerminationMessage regex `a**`: invalid nested repetition operator: `**`\n",
            "  error: 7:33 errorCategories.categories[0].rules[1].onPodError.pattern: category `go` rule 1: invalid onPodError regex `a{2}{3}`: invalid nested repetition operator: `{2}{3}`\n",
            "  error: 8:33 errorCategories.categories[0].rules[2].onPodEvents.regexp: category `go` rule 2: invalid onPodEvents regexp `a*??`: invalid nested repetition operator: `*??`\n",
            "  error: 9:43 errorCategories.categories[0].rules[3].onTerminationMessage.pattern: category `go` rule 3: invalid onTerminationMessage regex `(a{2}){501}`: invalid repeat count: `{501}`\n",
        ]
        .concat()
    );
}

/// bounded within the caps: 1,000 categories × 4 rules of `L{k}\pL{6}` (the last
/// ones `{1000}`, which Go reads and retryctl refused as a regex "too large" before its rules
/// could be matched over characters) pass `validate`, and `simulate` and `suggest` replay a
/// job under them, the one rule its message matches deciding (its memory and time:
/// tests/alloc.rs, scripts/bench-categorizer-caps.sh).
#[test]
fn a_categorizer_at_its_caps_of_unicode_classes_is_read_and_replayed() {
    let home = temp_home();
    let dir = home.path();
    let letters: Vec<char> = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN".chars().collect();
    let mut y = String::from("errorCategories:\n  enabled: true\n  defaultCategory: other\n  categories:\n");
    for i in 0..1000 {
        y.push_str(&format!("    - name: c{i}\n      action: Delete\n      rules:\n"));
        for r in 0..4 {
            let n = i * 4 + r;
            let k = if i >= 996 { 1000 } else { n % 100 + 1 };
            let field = if r % 2 == 0 {
                "onTerminationMessage"
            } else {
                "onPodError"
            };
            y.push_str(&format!(
                "        - {field}: {{pattern: '{}{{{k}}}\\pL{{6}}'}}\n",
                letters[n / 100]
            ));
        }
    }
    let config = dir.join("caps.yaml");
    std::fs::write(&config, y).unwrap();
    let config = config.to_str().unwrap();
    assert_eq!(
        run(&["validate", "-f", config]),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n"
    );
    std::fs::write(
        dir.join("p.yaml"),
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 1\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: c575}\n",
    )
    .unwrap();
    // Only `x{1}\pL{6}` (rule 2,300: category 575's first) matches `xαβγδεζ`.
    let history = dir.join("h.jsonl");
    std::fs::write(
        &history,
        concat!(
            r#"{"job":{"id":"greek"},"runs":[{"containers":[{"exitCode":1,"message":"failed: xαβγδεζ"}]},{"outcome":"succeeded"}]}"#,
            "\n",
            r#"{"job":{"id":"none"},"runs":[{"podError":"xxxx: pull failed","containers":[{"exitCode":1,"message":"xxx failed: Fehler über Ωmega"}]},{"outcome":"succeeded"}]}"#,
            "\n",
        ),
    )
    .unwrap();
    let (policy, history) = (dir.join("p.yaml"), history);
    let simulate = run(&[
        "simulate",
        "-f",
        policy.to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
        "--engine",
        "upstream",
        "--categorizer",
        config,
        "-o",
        "jsonl",
    ]);
    assert!(simulate.starts_with("exit: 0\n"), "{simulate}");
    let finals: Vec<(String, String)> = simulate
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["job"].as_str().unwrap().into(),
                v["outcome"]["final"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        finals,
        [("greek".into(), "Succeeded".into()), ("none".into(), "Failed".into())]
    );
    let suggest = run(&[
        "suggest",
        "--history",
        history.to_str().unwrap(),
        "--engine",
        "upstream",
        "--categorizer",
        config,
    ]);
    assert!(suggest.starts_with("exit: 0\n"), "{suggest}");
}

/// `apply --categorizer` of a file that cannot be read says so (it said the file held no
/// categorizer config), and sends nothing.
#[test]
fn apply_with_a_categorizer_that_cannot_be_read_says_why() {
    let home = temp_home();
    let missing = home.path().join("missing.yaml");
    let out = exchange(
        retryctl(home.path())
            .args([
                "apply",
                "-f",
                "testdata/policies/valid/infra.yaml",
                "--dry-run=client",
                "--categorizer",
            ])
            .arg(&missing),
    )
    .replace(&home.path().display().to_string(), "HOME");
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.ends_with(
            "error: `--categorizer` `HOME/missing.yaml`: cannot read: no such file or directory; nothing was sent\n"
        ),
        "{out}"
    );
}
