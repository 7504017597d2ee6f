//! `suggest` on messages whose pattern a rule cannot hold (docs/reference/suggest.md "The
//! proposal"): a termination message (or, upstream, a pod error) of many hex words becomes a
//! pattern past the 1024 bytes `validate` takes, so its signature gets no rule of its own,
//! listed with the reason in the table and as `noRule`, exit 0, and `-o policy` validates;
//! never `a bug in retryctl`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::suggest_names::{history, path, run, validates};
use crate::support::{format_output, temp_home};

/// 40 hex words: 15 of them `<hex>` in the template's 160 characters.
fn hex_words() -> String {
    ["0x1f2e3d4c"; 40].join(" ")
}

/// 30 jobs of each failed run, each then succeeding (`suggest_names`' history): the message
/// of hex words in `main`, the same as a pod error, and exit 4 (a rule either way).
fn hex_history(dir: &Path) -> PathBuf {
    history(
        dir,
        &[
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 1, "message": hex_words()}]}),
            json!({"node": "n", "runFor": "60s", "podError": hex_words()}),
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 4}]}),
        ],
    )
}

fn suggest(home: &Path, history: &Path, engine: &str, extra: &[&str]) -> String {
    let mut args = vec!["suggest", "--history", path(history), "--engine", engine];
    args.extend_from_slice(extra);
    let out = run(home, &args);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    String::from_utf8(out.stdout).unwrap()
}

const REASON: &str = "its message's pattern would be 1891 bytes, and a rule takes at most 1024";
/// A pod error's pattern is 4 bytes longer: `(?m)` lets it match its line wherever the line
/// sits in the executor's text (the line was cut, so neither pattern has an end).
const POD_REASON: &str = "its message's pattern would be 1895 bytes, and a rule takes at most 1024";
const MESSAGE: &str =
    "exit:1@main \"<hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex>\"";
const POD_ERROR: &str =
    "podError \"<hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex>\"";

/// Each signature's `noRule` in `-o json`, and the rules' signatures.
fn verdicts(json_text: &str) -> (Vec<(String, Value)>, Vec<String>) {
    let v: Value = serde_json::from_str(json_text).unwrap();
    let no_rule = v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["signature"].as_str().unwrap().to_string(), s["noRule"].clone()))
        .collect();
    let rules = v["suggest"]["proposal"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["signature"].as_str().unwrap().to_string())
        .collect();
    (no_rule, rules)
}

/// The design dialect would write the pattern as the rule's `onTerminationMessage`: no rule,
/// the exact line in the table; the pod error has no matcher there at all.
#[test]
fn design_gives_a_pattern_too_long_no_rule_and_says_why() {
    let home = temp_home();
    let h = hex_history(home.path());
    let table = suggest(home.path(), &h, "design", &[]);
    assert!(
        table.contains(&format!(
            "\n  no rule for exit:1@main \"<hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex…: {REASON}\n"
        )),
        "{table}"
    );
    let (no_rule, rules) = verdicts(&suggest(home.path(), &h, "design", &["-o", "json"]));
    assert_eq!(
        no_rule,
        vec![
            (MESSAGE.to_string(), json!(REASON)),
            ("exit:4@main".to_string(), Value::Null),
            (
                POD_ERROR.to_string(),
                json!("the design dialect has no pod-error matcher (--engine upstream has)")
            ),
        ]
    );
    assert_eq!(rules, ["exit:4@main"]);
    let documents = suggest(home.path(), &h, "design", &["-o", "policy"]);
    assert!(!documents.contains("onTerminationMessage"), "{documents}");
    validates(home.path(), &documents, &[]);
}

/// Upstream the pattern would be the categorizer's `onTerminationMessage`, and a pod error's
/// its `onPodError`: neither signature gets a category or a rule.
#[test]
fn upstream_gives_a_pattern_too_long_no_category_and_says_why() {
    let home = temp_home();
    let h = hex_history(home.path());
    let table = suggest(home.path(), &h, "upstream", &[]);
    for line in [
        format!("\n  no rule for exit:1@main \"<hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex…: {REASON}\n"),
        format!("\n  no rule for podError \"<hex> <hex> <hex> <hex> <hex> <hex> <hex> <hex> <…: {POD_REASON}\n"),
    ] {
        assert!(table.contains(&line), "{line}\n{table}");
    }
    let (no_rule, rules) = verdicts(&suggest(home.path(), &h, "upstream", &["-o", "json"]));
    assert_eq!(
        no_rule,
        vec![
            (MESSAGE.to_string(), json!(REASON)),
            ("exit:4@main".to_string(), Value::Null),
            (POD_ERROR.to_string(), json!(POD_REASON)),
        ]
    );
    assert_eq!(rules, ["exit:4@main"]);
    let documents = suggest(home.path(), &h, "upstream", &["-o", "policy"]);
    assert!(!documents.contains("onTerminationMessage"), "{documents}");
    assert!(!documents.contains("onPodError"), "{documents}");
    validates(home.path(), &documents, &["--upstream"]);
}
