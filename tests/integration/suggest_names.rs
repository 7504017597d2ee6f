//! `suggest` on names a rule cannot hold (docs/reference/suggest.md "The proposal"): a
//! container, a recorded category or a deployed category that `validate` refuses in a rule
//! gives its signature no rule of its own, listed with the reason in every format (upstream,
//! a new category where one can match the runs), never `a bug in retryctl`; and `--queue` is
//! checked as a Queue's name only where `-o policy` writes one.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{format_output, retryctl, root, temp_home};

pub(crate) fn run(home: &Path, args: &[&str]) -> std::process::Output {
    retryctl(home).current_dir(root()).args(args).output().unwrap()
}

pub(crate) fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 30 jobs of each `failed` run, each followed by a success: a first retry with evidence.
pub(crate) fn history(dir: &Path, failed: &[Value]) -> PathBuf {
    let mut jobs = String::new();
    for (i, f) in failed.iter().enumerate() {
        for k in 0..30 {
            jobs.push_str(&format!(
                "{}\n",
                json!({"job": {"id": format!("j{i}-{k}"), "queue": "ML_Team"}, "runs": [f, {"outcome": "succeeded"}]})
            ));
        }
    }
    let history = dir.join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    history
}

/// A container named `Main_Upper`, a recorded category `gpu error` (Lookout stores what the
/// categorizer, whose own check takes it, assigned), and a signature a rule can hold.
fn odd_names(dir: &Path) -> PathBuf {
    history(
        dir,
        &[
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "Main_Upper", "exitCode": 3}]}),
            json!({"node": "n", "runFor": "60s", "category": "gpu error"}),
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 4}]}),
        ],
    )
}

const CONTAINER: &str = "container `Main_Upper` is not a valid container name in a rule";
const CATEGORY: &str = "category `gpu error` is not a valid category in a rule";

fn suggest(home: &Path, history: &Path, engine: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "suggest",
        "--history",
        path(history),
        "--engine",
        engine,
        "--min-trials",
        "5",
    ];
    if engine == "upstream" {
        // The names are the subject here, not the scheduler's defaults.
        args.extend(crate::support::UPSTREAM_SCHEDULER);
    }
    args.extend_from_slice(extra);
    run(home, &args)
}

fn ok(out: &std::process::Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", format_output(out));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// `-o policy`'s documents pass `validate` (`extra`: `--upstream` for upstream's).
pub(crate) fn validates(home: &Path, documents: &str, extra: &[&str]) {
    let policy = home.join("p.yaml");
    std::fs::write(&policy, documents).unwrap();
    let mut args = vec!["validate"];
    args.extend_from_slice(extra);
    args.extend(["-f", path(&policy)]);
    let out = run(home, &args);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
}

/// 30 jobs whose run fails with exit 3 in `main`, then succeeds.
fn exit_3_in_main(dir: &Path) -> PathBuf {
    history(
        dir,
        &[json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3}]})],
    )
}

/// The design dialect writes `containerName` and `onFailureCategory`: neither name fits, so
/// both signatures are decided as today, with the reason in the table, json, markdown and
/// html, and the policy validates with the one rule it can hold.
#[test]
fn design_gives_a_name_it_cannot_write_no_rule_and_says_why() {
    let home = temp_home();
    let h = odd_names(home.path());
    let table = ok(&suggest(home.path(), &h, "design", &[]));
    assert!(
        table.contains(&format!("\n  no rule for exit:3@Main_Upper: {CONTAINER}\n")),
        "{table}"
    );
    assert!(
        table.contains(&format!("\n  no rule for category:gpu error: {CATEGORY}\n")),
        "{table}"
    );
    let v: Value = serde_json::from_str(&ok(&suggest(home.path(), &h, "design", &["-o", "json"]))).unwrap();
    let no_rule: Vec<(String, Value)> = v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["signature"].as_str().unwrap().to_string(), s["noRule"].clone()))
        .collect();
    assert_eq!(
        no_rule,
        vec![
            ("category:gpu error".to_string(), json!(CATEGORY)),
            ("exit:3@Main_Upper".to_string(), json!(CONTAINER)),
            ("exit:4@main".to_string(), Value::Null),
        ]
    );
    assert_eq!(
        v["suggest"]["proposal"]["rules"],
        json!([{"signature": "exit:4@main", "action": "Retry", "limit": 1, "avoidSameNode": false}])
    );
    let md = ok(&suggest(home.path(), &h, "design", &["-o", "markdown"]));
    assert!(
        md.contains("|\n\n- no rule for category:gpu error: category \\`gpu error\\` is not a valid category in a rule\n- no rule for exit:3@Main\\_Upper: container \\`Main\\_Upper\\` is not a valid container name in a rule\n"),
        "{md}"
    );
    let html = ok(&suggest(home.path(), &h, "design", &["-o", "html"]));
    assert!(
        html.contains(&format!(
            "<p class=\"no-rule\">No rule for <code>exit:3@Main_Upper</code>: {CONTAINER}</p>"
        )),
        "{html}"
    );
    validates(
        home.path(),
        &ok(&suggest(home.path(), &h, "design", &["-o", "policy"])),
        &[],
    );
}

/// Upstream, a container's name goes into the categorizer's `containerName`, which takes it:
/// `Main_Upper` gets its rule on a new category. A recorded category is matched by name in
/// the v1beta1 policy (`onCategory`), which `validate --upstream` refuses with a blank in it.
#[test]
fn upstream_matches_the_container_and_gives_the_category_no_rule() {
    let home = temp_home();
    let h = odd_names(home.path());
    let table = ok(&suggest(home.path(), &h, "upstream", &[]));
    assert!(
        table.contains(&format!("\n  no rule for category:gpu error: {CATEGORY}\n")),
        "{table}"
    );
    assert!(!table.contains("no rule for exit:3@Main_Upper"), "{table}");
    let v: Value = serde_json::from_str(&ok(&suggest(home.path(), &h, "upstream", &["-o", "json"]))).unwrap();
    let rules: Vec<&str> = v["suggest"]["proposal"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["signature"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["exit:3@Main_Upper", "exit:4@main"]);
    let documents = ok(&suggest(home.path(), &h, "upstream", &["-o", "policy"]));
    validates(home.path(), &documents, &["--upstream"]);
}

/// A deployed category `gpu error` (the categorizer's check takes it) that alone holds a
/// signature's runs: its rule cannot name it, so a new category splits it, keeping the
/// deployed rule's subcategory and hint; the deployed category stays as it was.
#[test]
fn upstream_splits_a_deployed_category_no_rule_can_name() {
    let home = temp_home();
    let h = exit_3_in_main(home.path());
    let deployed = home.path().join("executor.yaml");
    std::fs::write(
        &deployed,
        "errorCategories:\n  enabled: true\n  categories:\n    - name: gpu error\n      rules:\n        - onExitCodes: {operator: In, values: [3]}\n          subcategory: xid\n          hint: Try another node\n",
    )
    .unwrap();
    // The categorizer's own check takes the name.
    validates(home.path(), &std::fs::read_to_string(&deployed).unwrap(), &[]);
    let text = ok(&suggest(
        home.path(),
        &h,
        "upstream",
        &["--categorizer", path(&deployed), "-o", "policy"],
    ));
    assert!(
        text.contains("    # exit:3@main\n    - name: s-exit-3-main-6f16ab67\n      action: Delete\n      rules:\n        - onExitCodes: {operator: In, values: [3]}\n          containerName: \"main\"\n          subcategory: \"xid\"\n          hint: \"Try another node\"\n    - name: \"gpu error\"\n"),
        "{text}"
    );
    assert!(
        text.contains("  - action: Retry\n    onCategory: \"s-exit-3-main-6f16ab67\"\n"),
        "{text}"
    );
    validates(home.path(), &text, &["--upstream"]);
}

/// `--queue ML_Team`: `-o policy` would write a Queue `validate` refuses, so it is a usage
/// error naming the flag (exit 2, nothing on stdout); the other outputs write no Queue and
/// propose as without `--queue`, their write line without it.
#[test]
fn a_queue_name_is_checked_only_where_a_queue_is_written() {
    let home = temp_home();
    let h = exit_3_in_main(home.path());
    for engine in ["design", "upstream"] {
        let out = suggest(home.path(), &h, engine, &["--queue", "ML_Team", "-o", "policy"]);
        assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
        assert_eq!(out.stdout, b"");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "error: invalid `--queue` `ML_Team`: the Queue `-o policy` writes cannot have this name: character `M` at position 1 is not allowed (use lowercase); use lowercase letters, digits and `-`\n"
        );
        let table = ok(&suggest(home.path(), &h, engine, &["--queue", "ML_Team"]));
        // The engine as given and the queue whose jobs were read: the printed command reads
        // the same jobs (its `-o policy` then refuses the name, as above), and for today's
        // Armada writes the executor's config too.
        let executor = if engine == "upstream" {
            " --executor-config executor-suggested.yaml"
        } else {
            ""
        };
        assert!(
            table.contains(&format!(
                "Write the proposal:  retryctl suggest --history {} --queue ML_Team --engine {engine} --min-trials 5 -o policy{executor} > suggested.yaml\n",
                h.display()
            )),
            "{table}"
        );
        let with: Value = serde_json::from_str(&ok(&suggest(
            home.path(),
            &h,
            engine,
            &["--queue", "ML_Team", "-o", "json"],
        )))
        .unwrap();
        let without: Value = serde_json::from_str(&ok(&suggest(home.path(), &h, engine, &["-o", "json"]))).unwrap();
        assert_eq!(with, without);
        // `--queue` selects the jobs of a file too (docs/simulate.md "Inputs"): a name none of
        // them has leaves nothing to learn from, and the error says whose jobs it holds.
        let out = suggest(home.path(), &h, engine, &["--queue", "ml-team", "-o", "policy"]);
        assert_eq!(
            format_output(&out),
            format!(
                "exit: 3\n--- stdout\n--- stderr\nerror: no job in `{}` (queue `ml-team`): nothing to learn from\n\nhint: its jobs are of queue `ML_Team`; check `--queue`\n",
                h.display()
            )
        );
    }
}
