//! `suggest` under today's Armada, as a cluster runs it (docs/reference/suggest.md "The
//! cluster is the unit"): one proposal said one way (a category no matcher can split takes
//! the decision that loses no job), the executor config's changes that reach every queue.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{format_output, retryctl, temp_home};

/// One message under two exit codes: exit 3 pays on its retry, exit 4 never does. A rule of
/// the categorizer has one matcher, so no category tells the two apart: the category they
/// share retries both (the decision that loses no job), every format says so, and the
/// written policy and the table agree on what it does.
#[test]
fn a_category_no_matcher_can_split_takes_the_decision_that_loses_no_job() {
    let home = temp_home();
    let dir = home.path();
    let mut jobs = String::new();
    let failed = |code: i64| json!({"node": "n1", "runFor": "60s", "containers": [{"name": "main", "exitCode": code, "message": "boom: lost the lock"}]});
    for k in 0..30 {
        let job = json!({"job": {"id": format!("a{k}"), "queue": "ml"}, "runs": [failed(3), {"node": "n2", "outcome": "succeeded"}]});
        jobs.push_str(&format!("{job}\n"));
    }
    for k in 0..30 {
        let job = json!({"job": {"id": format!("b{k}"), "queue": "ml"}, "runs": [failed(4), failed(4), failed(4)]});
        jobs.push_str(&format!("{job}\n"));
    }
    std::fs::write(dir.join("h.jsonl"), jobs).unwrap();
    std::fs::write(
        dir.join("today.yaml"),
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: today\nretryLimit: 2\ndefaultAction: Retry\nrules:\n  - action: Retry\n    onCategory: boom\n---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: ml\npriorityFactor: 1\nretryPolicies: [today]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("executor.yaml"),
        "errorCategories:\n  enabled: true\n  categories:\n    - name: boom\n      action: Delete\n      rules:\n        - onTerminationMessage: {pattern: \"boom\"}\n",
    )
    .unwrap();
    let (h, today, executor) = (p(dir, "h.jsonl"), p(dir, "today.yaml"), p(dir, "executor.yaml"));
    let run = |extra: &[&str]| {
        let args = [
            &[
                "suggest",
                "--history",
                &h,
                "--queue",
                "ml",
                "--baseline",
                &today,
                "--categorizer",
                &executor,
                "--min-trials",
                "10",
            ][..],
            extra,
        ]
        .concat();
        retryctl(dir).args(args).output().unwrap()
    };
    let table = run(&[]);
    assert_eq!(table.status.code(), Some(0), "{}", format_output(&table));
    let text = String::from_utf8_lossy(&table.stdout);
    let category = text
        .split('`')
        .find(|w| w.starts_with("s-boom-lost-the-lock-"))
        .expect("a new category")
        .to_string();
    // The exit-4 signature is retried with its category: the cell says what the policy does.
    assert!(
        text.contains(&format!(
            "Retry ×2 (merged in `{category}`: no matcher splits it from a Retry signature)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("  category `{category}` stands for exit:3@main \"boom: lost the lock\", exit:4@main \"boom: lost the lock\":\n    no one matcher tells them apart (a rule has one matcher), so it retries them all, the decision that loses no job\n")),
        "{text}"
    );
    assert!(
        text.contains("  1 rule of its own (1 Retry, 0 Fail), then 1 rule kept from today.\n"),
        "{text}"
    );
    // No job of today's is lost: the shared category retries them all, as today.
    assert!(text.contains("Plan: 0 rescued, 0 lost,"), "{text}");
    assert!(!text.contains("reject"), "{text}");
    let v: Value = serde_json::from_slice(&run(&["-o", "json"]).stdout).unwrap();
    assert_eq!(
        v["suggest"]["proposal"]["merged"],
        json!([{"category": category, "signatures": ["exit:3@main \"boom: lost the lock\"", "exit:4@main \"boom: lost the lock\""]}])
    );
    // The written policy has the one Retry rule on the shared category.
    let policy = String::from_utf8(run(&["-o", "policy"]).stdout).unwrap();
    assert!(
        policy.contains(&format!("  - action: Retry\n    onCategory: \"{category}\"\n")),
        "{policy}"
    );
    assert!(!policy.contains("action: Fail"), "{policy}");
    let md = String::from_utf8(run(&["-o", "markdown"]).stdout).unwrap();
    assert!(md.contains("no one matcher tells them apart"), "{md}");
    let html = String::from_utf8(run(&["-o", "html"]).stdout).unwrap();
    assert!(html.contains("no one matcher tells them apart"), "{html}");
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}
