//! `suggest` on more signatures with a rule than the documents have room for
//! (docs/reference/suggest.md "The proposal"): a policy holds at most 100 rules, today's
//! kept ones among them, and the categorizer at most 1,000 categories, the deployed ones
//! among them. The signatures with the most GPU- then CPU-hours get the rules; the others
//! get no rule, with the reason, decided as today; `-o policy` validates; never `a bug in
//! retryctl`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::suggest_names::{path, run, validates};
use crate::support::{format_output, temp_home};

/// 30 jobs of each exit code in `main`, each failing once and then succeeding; the jobs of
/// `gpu` codes ask for a GPU (the others for nothing: no hours, ranked by their text).
fn history(dir: &Path, codes: std::ops::RangeInclusive<u32>, gpu: &[u32]) -> PathBuf {
    let mut jobs = String::new();
    for code in codes {
        for k in 0..30 {
            let mut job = json!({"id": format!("j{code}-{k}"), "queue": "ml"});
            if gpu.contains(&code) {
                job["resources"] = json!({"cpu": "4", "gpu": "1"});
            }
            let failed = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": code}]});
            jobs.push_str(&format!(
                "{}\n",
                json!({"job": job, "runs": [failed, {"node": "m", "runFor": "60s", "outcome": "succeeded"}]})
            ));
        }
    }
    let history = dir.join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    history
}

fn suggest(home: &Path, args: &[&str]) -> String {
    let mut all = vec!["suggest"];
    all.extend_from_slice(args);
    let out = run(home, &all);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The signatures `-o json` gives no rule, with the reason, and how many rules it proposes.
fn no_room(json_text: &str) -> (Vec<(String, String)>, usize) {
    let v: Value = serde_json::from_str(json_text).unwrap();
    let none = v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["noRule"].is_null())
        .map(|s| {
            (
                s["signature"].as_str().unwrap().to_string(),
                s["noRule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (none, v["suggest"]["proposal"]["rules"].as_array().unwrap().len())
}

/// Today's policy: two rules, both kept after the proposal's, and a default that retries, as
/// the history's jobs were.
const TODAY: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: today
spec:
  retryLimit: 3
  defaultAction: Retry
  rules:
    - action: Retry
      onConditions: [Preempted]
    - action: Retry
      onConditions: [Evicted]
";

/// 102 signatures with a rule each, 2 rules of today's kept: 98 proposed. exit 98 and 99
/// have the GPU-hours and keep theirs; of the others, the last four by their text lose
/// theirs, and the policy validates with 100 rules.
#[test]
fn design_keeps_the_rules_with_most_hours_within_a_policy_s_100() {
    let home = temp_home();
    let h = history(home.path(), 1..=102, &[98, 99]);
    let today = home.path().join("today.yaml");
    std::fs::write(&today, TODAY).unwrap();
    let args = ["--history", path(&h), "--baseline", path(&today), "--engine", "design"];
    let reason =
        "the policy's 100 rules are taken by the 2 of today's it keeps and by signatures with more GPU- then CPU-hours";
    let (none, rules) = no_room(&suggest(home.path(), &[&args[..], &["-o", "json"]].concat()));
    assert_eq!(rules, 98);
    let dropped: Vec<(String, String)> = ["exit:95@main", "exit:96@main", "exit:97@main", "exit:9@main"]
        .iter()
        .map(|s| (s.to_string(), reason.to_string()))
        .collect();
    let mut none = none;
    none.sort();
    assert_eq!(none, dropped);
    let table = suggest(home.path(), &args);
    assert!(
        table.contains(&format!("\n  no rule for exit:9@main: {reason}\n")),
        "{table}"
    );
    let documents = suggest(home.path(), &[&args[..], &["-o", "policy"]].concat());
    assert_eq!(documents.matches("\n    - ").count(), 100, "{documents}");
    assert!(
        documents.contains("onExitCodes: {operator: In, values: [99]}"),
        "{documents}"
    );
    assert!(!documents.contains("values: [9]}"), "{documents}");
    validates(home.path(), &documents, &[]);
}

/// A deployed categorizer of 995 categories leaves room for 5 new ones: 8 signatures, the
/// 3 past it decided as today, and the categorizer and policy validate.
#[test]
fn upstream_keeps_the_categorizer_within_its_1000_categories() {
    let home = temp_home();
    let h = history(home.path(), 1..=8, &[8]);
    let mut config = String::from("application:\n  errorCategories:\n    categories:\n");
    for i in 0..995 {
        config.push_str(&format!(
            "      - name: c{i}\n        rules:\n          - onExitCodes: {{operator: In, values: [200]}}\n"
        ));
    }
    let executor = home.path().join("executor.yaml");
    std::fs::write(&executor, config).unwrap();
    let args = [
        "--history",
        path(&h),
        "--categorizer",
        path(&executor),
        "--engine",
        "upstream",
    ];
    let (mut none, rules) = no_room(&suggest(home.path(), &[&args[..], &["-o", "json"]].concat()));
    none.sort();
    let reason = "the categorizer's 1,000 categories are taken by the 995 deployed and by signatures with more GPU- then CPU-hours";
    assert_eq!(
        none,
        ["exit:5@main", "exit:6@main", "exit:7@main"]
            .iter()
            .map(|s| (s.to_string(), reason.to_string()))
            .collect::<Vec<_>>()
    );
    assert_eq!(rules, 5);
    let documents = suggest(home.path(), &[&args[..], &["-o", "policy"]].concat());
    assert!(documents.contains("values: [8]}"), "{documents}");
    assert!(!documents.contains("values: [7]}"), "{documents}");
    validates(home.path(), &documents, &["--upstream"]);
}
