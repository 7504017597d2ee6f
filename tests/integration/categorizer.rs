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
        "  warning: 2:3 errorCategories.enabled: the categorizer is not enabled (`enabled` defaults to `false`): the executor assigns no category to any run; set `enabled: true`\n",
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

/// A categorizer beside policies in one `validate`, and a categorizer where `simulate` wants
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
        "exit: 0\n--- stdout\nchecked 2 documents in 2 files: 2 valid, 0 invalid\n--- stderr\n"
    );
    let out = run(&[
        "simulate",
        "-f",
        "testdata/categorizer/bare.yaml",
        "--history",
        "testdata/histories",
    ]);
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains("expected a `RetryPolicy` or `Queue` document here, found the executor's categorizer config (`errorCategories`)"),
        "{out}"
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
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for (doc, valid) in [
        (serde_json::json!({"errorCategories": {"enabled": true}}), true),
        (serde_json::json!({"ERRORCATEGORIES": {"enabled": true}}), true),
        (
            serde_json::json!({"Application": {"errorCategories": null}, "kubernetes": {}}),
            true,
        ),
        (serde_json::json!({"application": {"clusterId": "a"}}), false),
        (serde_json::json!({"errorCategories": {"enabled": "sometimes"}}), false),
    ] {
        assert_eq!(validator.is_valid(&doc), valid, "{doc}");
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
