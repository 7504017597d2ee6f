//! `retryctl tune --categorizer` and `--vary 'categorizer:PATH=…'` (docs/tune.md,
//! docs/categorizer.md): candidate i's numbers, collisions included, are what `simulate -f
//! <candidate i> --categorizer <its categorizer> --baseline <baseline> --baseline-categorizer
//! <the file as written, or the flag's>` prints; a vary of a category's action changes the
//! collisions, a vary of its matcher the decisions; the refusals with their exact words.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{format_output, retryctl, temp_home};
use crate::tune::{json, simulate_numbers};

/// Upstream's layout: rules on the categories the categorizer assigns.
const POLICY: &str = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 3\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: oom}\n  - {action: Retry, onCategory: user_error}\n";

/// The categorizer as written: `oom` keeps its pods, `user_error` (exit code 1) deletes them.
fn categorizer(action: &str, code: &str) -> String {
    format!(
        "# an executor config as deployed\napplication:\n  clusterId: a\n  errorCategories:\n    enabled: true\n    defaultCategory: uncategorized\n    categories:\n      - name: oom\n        action: {action}\n        rules:\n          - onConditions: [OOMKilled]\n      - name: user_error\n        action: Delete\n        rules:\n          - onExitCodes: {{operator: In, values: [{code}]}}\n"
    )
}

const HISTORY: &str = r#"{"job":{"id":"oom1"},"runs":[{"node":"n1","containers":[{"name":"main","exitCode":137,"reason":"OOMKilled"}]},{"outcome":"succeeded","runFor":"1h"}]}
{"job":{"id":"oom2"},"runs":[{"node":"n1","containers":[{"name":"main","exitCode":137,"reason":"OOMKilled"}]},{"node":"n2","containers":[{"name":"main","exitCode":137,"reason":"OOMKilled"}]},{"outcome":"succeeded"}]}
{"job":{"id":"u1"},"runs":[{"node":"n1","category":"user-error","containers":[{"name":"main","exitCode":1}]},{"outcome":"succeeded"}]}
{"job":{"id":"u3"},"runs":[{"node":"n1","containers":[{"name":"main","exitCode":3}],"runFor":"10m"},{"node":"n2","containers":[{"name":"main","exitCode":3}]},{"outcome":"succeeded"}]}
{"job":{"id":"many"},"runs":[{"node":"n1","containers":[{"name":"main","exitCode":1}]},{"node":"n2","containers":[{"name":"main","exitCode":1}]},{"node":"n3","containers":[{"name":"main","exitCode":1}]},{"node":"n4","containers":[{"name":"main","exitCode":1}]},{"outcome":"succeeded"}]}
{"job":{"id":"lease"},"runs":[{"node":"n1","category":"internal","subcategory":"lease-expired"},{"outcome":"succeeded"}]}
"#;

const VARIES: [&str; 3] = [
    "p:retryLimit=1,3",
    "categorizer:errorCategories.categories[0].action=Retain,Delete",
    "categorizer:errorCategories.categories[1].rules[0].onExitCodes.values[0]=1,3",
];

fn setup(dir: &Path) {
    fs::write(dir.join("p.yaml"), POLICY).unwrap();
    fs::write(dir.join("c.yaml"), categorizer("Retain", "1")).unwrap();
    fs::write(dir.join("h.jsonl"), HISTORY).unwrap();
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path()).current_dir(dir).args(args).output().unwrap()
}

/// What tune and `simulate --baseline` both print of a candidate, keyed as tune names it.
fn numbers(c: &Value, collisions: &Value) -> Value {
    let mut n = simulate_numbers(c);
    n["collisions"] = collisions.clone();
    n
}

/// `tune` over [`VARIES`] with `extra` flags, then for every candidate its policy (`--pick`)
/// and its categorizer (written here from its values) through `simulate`, compared number by
/// number. Returns tune's candidates.
fn assert_invariant(dir: &Path, extra: &[&str], baseline_categorizer: &str) -> Vec<Value> {
    let varies: Vec<&str> = VARIES.iter().flat_map(|v| ["--vary", *v]).collect();
    let mut args = vec![
        "tune",
        "-f",
        "p.yaml",
        "--history",
        "h.jsonl",
        "--categorizer",
        "c.yaml",
    ];
    args.extend(&varies);
    args.extend(extra);
    args.extend(["-o", "json", "--contention", "off"]);
    let tuned = json(&run(dir, &args));
    let candidates = tuned["tune"]["candidates"].as_array().unwrap().clone();
    assert_eq!(candidates.len(), 8, "{tuned}");
    for c in &candidates {
        let id = c["id"].as_u64().unwrap().to_string();
        let mut pick = vec!["tune", "-f", "p.yaml", "--categorizer", "c.yaml"];
        pick.extend(&varies);
        pick.extend(["--pick", id.as_str(), "-o", "yaml"]);
        let picked = run(dir, &pick);
        assert_eq!(picked.status.code(), Some(0), "{}", format_output(&picked));
        let policy = format!("cand-{id}.yaml");
        fs::write(dir.join(&policy), &picked.stdout).unwrap();
        let value = |v: &str| c["values"][v].as_str().unwrap().to_string();
        let categorizer_file = format!("cat-{id}.yaml");
        fs::write(
            dir.join(&categorizer_file),
            categorizer(
                &value(VARIES[1].split('=').next().unwrap()),
                &value(VARIES[2].split('=').next().unwrap()),
            ),
        )
        .unwrap();
        let mut sim = vec![
            "simulate",
            "-f",
            policy.as_str(),
            "--categorizer",
            categorizer_file.as_str(),
            "--baseline",
            "p.yaml",
            "--baseline-categorizer",
            baseline_categorizer,
            "--history",
            "h.jsonl",
        ];
        sim.extend(
            extra
                .iter()
                .filter(|a| !a.starts_with("--baseline-categorizer") && **a != "recorded"),
        );
        sim.extend(["-o", "json", "--contention", "off"]);
        let simulated = json(&run(dir, &sim));
        let comparison = &simulated["comparison"];
        assert_eq!(
            numbers(c, &c["collisions"]),
            numbers(comparison, &comparison["categories"]["candidate"]["collisions"]),
            "candidate {id} ({}) differs from `{}`",
            c["values"],
            sim.join(" ")
        );
    }
    candidates
}

/// The candidate whose values are `retryLimit`, `action`, `code`.
fn candidate<'c>(candidates: &'c [Value], limit: &str, action: &str, code: &str) -> &'c Value {
    candidates
        .iter()
        .find(|c| {
            let v = &c["values"];
            v[VARIES[0].split('=').next().unwrap()] == limit
                && v[VARIES[1].split('=').next().unwrap()] == action
                && v[VARIES[2].split('=').next().unwrap()] == code
        })
        .unwrap()
}

#[test]
fn every_candidate_is_what_simulate_prints_for_it_under_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    for engine in ["upstream", "design"] {
        let candidates = assert_invariant(dir.path(), &["--engine", engine], "c.yaml");
        // The design engine gives every retry a new pod name: no collision.
        if engine == "design" {
            assert!(candidates.iter().all(|c| c["collisions"] == 0), "{candidates:?}");
        }
    }
    // The baseline keeping the recorded categories.
    assert_invariant(
        dir.path(),
        &["--engine", "upstream", "--baseline-categorizer", "recorded"],
        "recorded",
    );
}

/// `oom` retained: each retry of an OOM-killed run collides (oom1 once, oom2 twice); deleted:
/// none does. The exit code's category deletes its pods either way.
#[test]
fn a_vary_of_the_action_changes_the_collisions() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let candidates = assert_invariant(dir.path(), &["--engine", "upstream"], "c.yaml");
    let retained = candidate(&candidates, "3", "Retain", "1");
    let deleted = candidate(&candidates, "3", "Delete", "1");
    assert_eq!(retained["collisions"], 3, "{retained}");
    assert_eq!(deleted["collisions"], 0, "{deleted}");
    // The same decisions otherwise: the action is the pod's, not the policy's.
    assert_eq!(retained["retries"], deleted["retries"]);
    assert_eq!(retained["final"], deleted["final"]);
}

/// `user_error` on exit code 1 (as written, the baseline) or 3: with 3, u3's runs are retried
/// and rescued; u1, now uncategorized, fails at once (lost), and so does `many` (which the
/// baseline retried 3 times and failed all the same: only its retries change).
#[test]
fn a_vary_of_a_matcher_changes_the_decisions() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let candidates = assert_invariant(dir.path(), &["--engine", "upstream"], "c.yaml");
    let written = candidate(&candidates, "3", "Retain", "1");
    let three = candidate(&candidates, "3", "Retain", "3");
    assert_eq!(written["changed"], 0, "{written}");
    assert_eq!(three["transitions"]["rescued"], 1, "{three}");
    assert_eq!(three["transitions"]["lost"], 1, "{three}");
    assert_eq!(three["transitions"]["retriesOnly"], 1, "{three}");
}

#[test]
fn refusals_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let cases: [(&[&str], &str); 3] = [
        (
            &["--vary", "categorizer:errorCategories.categories[0].action=Delete"],
            "error: invalid `--vary` `categorizer:errorCategories.categories[0].action`: `categorizer:` varies the `--categorizer` file, and none was given: give `--categorizer FILE`\n",
        ),
        (
            &["--categorizer", "c.yaml", "--vary", "categorizer:errorCategories.categories[2].action=Delete"],
            "error: invalid `--vary` `categorizer:errorCategories.categories[2].action`: `errorCategories.categories[2]` does not exist: `errorCategories.categories` of the categorizer config `c.yaml` has 2 items, `errorCategories.categories[0]`..`errorCategories.categories[1]`\n",
        ),
        (
            &["--categorizer", "c.yaml", "--vary", "categorizer:categories[0].action=Delete"],
            "error: invalid `--vary` `categorizer:categories[0].action`: field `categories` does not exist in the categorizer config `c.yaml`; its fields are `errorCategories`; did you mean `errorCategories.categories[0].action`?\n",
        ),
    ];
    // The refusals are the subject, not the scheduler's defaults (said before them).
    let scheduler = crate::support::root().join(crate::support::UPSTREAM_SCHEDULER[1]);
    let scheduler = scheduler.to_str().unwrap();
    for (flags, want) in cases {
        let mut args = vec![
            "tune",
            "-f",
            "p.yaml",
            "--history",
            "h.jsonl",
            "--scheduler-config",
            scheduler,
        ];
        args.extend(flags);
        let out = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", format_output(&out));
        assert!(out.stdout.is_empty(), "{flags:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{flags:?}");
    }
}

/// A varied categorizer that breaks upstream's checks is a skipped candidate with its
/// errors, as an invalid policy is; the others run.
#[test]
fn an_invalid_varied_categorizer_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(
        dir.path(),
        &[
            "tune",
            "-f",
            "p.yaml",
            "--history",
            "h.jsonl",
            "--categorizer",
            "c.yaml",
            "--vary",
            "categorizer:errorCategories.defaultCategory=ok,this-default-category-is-much-too-long-for-a-lookout-column-of-6",
            "-o",
            "json",
        ],
    );
    let t = &json(&out)["tune"];
    assert_eq!(t["candidates"].as_array().unwrap().len(), 1, "{t}");
    assert_eq!(
        t["skipped"],
        serde_json::json!([{
            "id": 2,
            "values": {"categorizer:errorCategories.defaultCategory": "this-default-category-is-much-too-long-for-a-lookout-column-of-6"},
            "errors": [{
                "file": "c.yaml",
                "path": "application.errorCategories.defaultCategory",
                "message": "defaultCategory `this-default-category-is-much-too-long-for-a-lookout-column-of-6` exceeds maximum length 63",
            }],
        }])
    );
}

/// Shards merged print the bytes one process prints, collisions included.
#[test]
fn shards_merge_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let mut args = vec![
        "tune",
        "-f",
        "p.yaml",
        "--history",
        "h.jsonl",
        "--engine",
        "upstream",
        "--categorizer",
        "c.yaml",
    ];
    args.extend(VARIES.iter().flat_map(|v| ["--vary", *v]));
    let whole = run(
        dir.path(),
        &[&args[..], &["-o", "json", "--contention", "off"]].concat(),
    );
    assert_eq!(whole.status.code(), Some(0), "{}", format_output(&whole));
    for i in 0..3 {
        let shard = format!("{i}/3");
        let out = run(
            dir.path(),
            &[&args[..], &["--shard", &shard, "-o", "partial", "--contention", "off"]].concat(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        fs::write(dir.path().join(format!("part-{i}.json")), &out.stdout).unwrap();
    }
    let merged = run(
        dir.path(),
        &["merge", "part-0.json", "part-1.json", "part-2.json", "-o", "json"],
    );
    assert_eq!(merged.status.code(), Some(0), "{}", format_output(&merged));
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole.stdout)
    );
}
