//! `simulate --categorizer`: every failed run classified by the executor's categorizer before
//! the engine decides (docs/categorizer.md) — the what-if of a categorizer alone, collisions
//! under the upstream engine, the decision records' categories, `categoryChanges` in order,
//! every format, and the refusals of a bad categorizer or a flag without its baseline.

use crate::support::{exchange, retryctl, temp_home};

const POLICY: &str = "testdata/categorizer/retry.yaml";
const HISTORY: &str = "testdata/categorizer/history.jsonl";
const CATEGORIZER: &str = "testdata/categorizer/executor-config.yaml";
/// The upstream replays here are about the categorizer, not the scheduler's defaults.
const SCHEDULER: [&str; 2] = crate::support::UPSTREAM_SCHEDULER;

fn run(args: &[&str]) -> String {
    let home = temp_home();
    exchange(retryctl(home.path()).args(args))
}

fn simulate(extra: &[&str]) -> String {
    let mut args = vec!["simulate", "-f", POLICY, "--history", HISTORY];
    args.extend_from_slice(extra);
    run(&args)
}

fn json(extra: &[&str]) -> serde_json::Value {
    let home = temp_home();
    let mut args = vec!["simulate", "-f", POLICY, "--history", HISTORY, "-o", "json"];
    args.extend_from_slice(extra);
    let out = retryctl(home.path()).args(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The candidate changes only its categorizer (the same policy on both sides, the baseline
/// on the categories as recorded): three jobs rescued, the candidate's changes and its
/// collisions, the baseline's none.
#[test]
fn a_what_if_of_the_categorizer_alone() {
    let want = [
        "exit: 1\n--- stdout\n",
        "jobs the candidate policies change (baseline → candidate):\n",
        "  ~ oom: Failed after 0 retries → Succeeded after 1 retry  (rescued)\n",
        "  ~ user: Failed after 0 retries → Succeeded after 2 retries  (rescued)\n",
        "  ~ other: Failed after 0 retries → Succeeded after 1 retry  (rescued)\n",
        "\n",
        "Plan: 3 rescued, 0 lost, 0 → Pending, 0 retried differently; 3 of 5 jobs change.\n",
        "  Failed → Succeeded: 3  (rescued)\n",
        "  retries:   +4 added, -0 removed\n",
        "  delay:     +0s added, -0s removed\n",
        "  compute:   +0s added, -0s removed (runFor of the runs one side starts and the other does not)\n",
        "  today's policy explains 2 of 5 jobs (3 contradict it: oom, user, other)\n",
        "  baseline: category changes: none\n",
        "  baseline: collisions: 0\n",
        "  candidate: category changes: user-error → user_error 2, none → oom/kernel 1, none → uncategorized 1\n",
        "  candidate: collisions: 3\n",
        "  warning: candidate: 3 retries reuse the name of a failed pod the executor keeps:\n",
        "    the new pod collides with it, the lease is returned and the job takes the legacy path\n",
        "--- stderr\n",
    ]
    .concat();
    assert_eq!(
        simulate(&[
            "--baseline",
            POLICY,
            "--categorizer",
            CATEGORIZER,
            "--baseline-categorizer",
            "recorded",
            "--engine",
            "upstream",
            "--exit-code",
            SCHEDULER[0],
            SCHEDULER[1],
        ]),
        want
    );
    // The same categorizer on both sides, named for each: nothing changes, and each side
    // counts the same.
    let v = json(&[
        "--baseline",
        POLICY,
        "--categorizer",
        CATEGORIZER,
        "--baseline-categorizer",
        CATEGORIZER,
        "--engine",
        "upstream",
    ]);
    let c = &v["comparison"];
    assert_eq!(c["changed"], 0);
    assert_eq!(c["categories"]["baseline"], c["categories"]["candidate"]);
    assert_eq!(c["categories"]["candidate"]["collisions"], 3);
    let v = json(&[
        "--baseline",
        POLICY,
        "--categorizer",
        CATEGORIZER,
        "--baseline-categorizer",
        "recorded",
        "--engine",
        "upstream",
    ]);
    // The baseline never borrows the candidate's categorizer: without one of its own, the
    // what-if is refused before anything is read.
    let home = temp_home();
    let out = retryctl(home.path())
        .current_dir(crate::support::root())
        .args([
            "simulate",
            "-f",
            POLICY,
            "--history",
            HISTORY,
            "--baseline",
            POLICY,
            "--categorizer",
            CATEGORIZER,
        ])
        .output()
        .unwrap();
    assert_eq!(
        crate::support::format_output(&out),
        format!("exit: 2\n--- stdout\n--- stderr\nerror: the baseline has no categorizer while the candidate has `{CATEGORIZER}`: give the deployed one (`--baseline-categorizer FILE`), or `--baseline-categorizer recorded` to keep the categories Lookout recorded\n")
    );
    // Nor the candidate the baseline's: a categorizer on the baseline alone is refused too.
    let out = retryctl(home.path())
        .current_dir(crate::support::root())
        .args([
            "simulate",
            "-f",
            POLICY,
            "--history",
            HISTORY,
            "--baseline",
            POLICY,
            "--baseline-categorizer",
            CATEGORIZER,
        ])
        .output()
        .unwrap();
    assert_eq!(
        crate::support::format_output(&out),
        format!("exit: 2\n--- stdout\n--- stderr\nerror: the candidate has no categorizer while the baseline has `{CATEGORIZER}`: give the candidate's (`--categorizer FILE`), or compare both on the categories Lookout recorded (`--baseline-categorizer recorded`)\n")
    );
    assert_eq!(
        v["comparison"]["categories"],
        serde_json::json!({
            "baseline": {"categoryChanges": [], "collisions": 0},
            "candidate": {
                "categoryChanges": [
                    {"from": "user-error", "to": "user_error", "runs": 2},
                    {"from": "none", "to": "oom/kernel", "runs": 1},
                    {"from": "none", "to": "uncategorized", "runs": 1},
                ],
                "collisions": 3,
            },
        })
    );
}

/// Under the upstream engine a retry reuses the pod's name: the Retry decisions on runs
/// whose category keeps the pod (`user_error` twice, the default `uncategorized` once)
/// collide, those on `Delete` categories (`oom`, `gpu_unavailable`) do not, nor the
/// `internal` run the classifier never sees. The design engine gives every retry a new name.
#[test]
fn collisions_under_the_upstream_engine() {
    let want = [
        "exit: 0\n--- stdout\n",
        "summary\n",
        "  jobs:      5 (10 runs)\n",
        "  outcomes:  4 succeeded, 1 failed, 0 cancelled, 0 pending\n",
        "  retries:   5 granted, 0s total delay added\n",
        "  compute:   0s recorded\n",
        "  POLICY/RULE          RETRIES GRANTED   PERMANENT FAILURES\n",
        "  categories/0         1                 0\n",
        "  categories/1         2                 0\n",
        "  categories/2         1                 0\n",
        "  categories/3         1                 0\n",
        "  categories/default   0                 1\n",
        "  decisions: retry 5, fail_default 1\n",
        "  category changes: user-error → user_error 2, none → oom/kernel 1, none → uncategorized 1\n",
        "  collisions: 3\n",
        "  warning: 3 retries reuse the name of a failed pod the executor keeps: the new pod collides with it, the lease is returned and the job takes the legacy path\n",
        "  expectations: all met\n",
        "--- stderr\n",
    ]
    .concat();
    assert_eq!(
        simulate(&[
            "--categorizer",
            CATEGORIZER,
            "--engine",
            "upstream",
            SCHEDULER[0],
            SCHEDULER[1]
        ]),
        want
    );
    // The policy is `armadaproject.io/v1beta1`: without `--engine` its dialect picks upstream.
    assert_eq!(
        simulate(&["--categorizer", CATEGORIZER, SCHEDULER[0], SCHEDULER[1]]),
        want
    );
    let design = json(&["--categorizer", CATEGORIZER, "--engine", "design"]);
    assert_eq!(design["summary"]["collisions"], 0);
    assert_eq!(design["summary"]["retries"], 5);
}

/// A decision record carries the category the engine saw and, where it differs, the
/// recorded one (`null`: none recorded); a run the classifier never sees keeps its own and
/// has no recorded fields. Without a categorizer, no record has any of them.
#[test]
fn decision_records_carry_both_categories() {
    let v = json(&["--categorizer", CATEGORIZER, "--engine", "upstream"]);
    let run = |job: usize, run: usize| {
        let r = &v["jobs"][job]["runs"][run];
        let f = |k: &str| r.get(k).cloned();
        (
            f("category"),
            f("subcategory"),
            f("recordedCategory"),
            f("recordedSubcategory"),
        )
    };
    let s = |t: &str| Some(serde_json::json!(t));
    let null = Some(serde_json::Value::Null);
    // oom: no category recorded, classified oom/kernel.
    assert_eq!(run(0, 0), (s("oom"), s("kernel"), null.clone(), null.clone()));
    // user: recorded `user-error`, classified `user_error`.
    assert_eq!(
        run(1, 1),
        (s("user_error"), null.clone(), s("user-error"), null.clone())
    );
    // lease: Armada's own category, never classified.
    assert_eq!(run(2, 0), (s("internal"), s("lease-expired"), None, None));
    // gpu: recorded as the categorizer would classify it: no recorded fields.
    assert_eq!(run(4, 0), (s("gpu_unavailable"), s("device_plugin"), None, None));
    let plain = json(&["--engine", "upstream"]);
    for job in plain["jobs"].as_array().unwrap() {
        for r in job["runs"].as_array().unwrap() {
            assert!(
                r.get("category").is_none() && r.get("recordedCategory").is_none(),
                "{r}"
            );
        }
    }
    assert!(plain["summary"].get("categoryChanges").is_none());
    assert!(plain["summary"].get("collisions").is_none());
}

/// By runs descending, then from, then to: `none → oom/kernel` before `none →
/// uncategorized` (same runs, same from).
#[test]
fn category_changes_are_ordered() {
    let v = json(&["--categorizer", CATEGORIZER]);
    assert_eq!(
        v["summary"]["categoryChanges"],
        serde_json::json!([
            {"from": "user-error", "to": "user_error", "runs": 2},
            {"from": "none", "to": "oom/kernel", "runs": 1},
            {"from": "none", "to": "uncategorized", "runs": 1},
        ])
    );
}

/// Every format says what the categorizer changed and warns of the collisions.
#[test]
fn every_format_shows_them() {
    let base = ["--categorizer", CATEGORIZER, "--engine", "upstream"];
    let changes = "user-error → user_error 2, none → oom/kernel 1, none → uncategorized 1";
    for (format, want) in [
        (
            "table",
            vec![changes, "collisions: 3", "warning: 3 retries reuse the name"],
        ),
        (
            "yaml",
            vec![
                "categoryChanges:",
                "- from: user-error",
                "  to: user_error",
                "collisions: 3",
                "recordedCategory: user-error",
            ],
        ),
        (
            "jsonl",
            vec![changes, "collisions: 3", "\"recordedCategory\":\"user-error\""],
        ),
        (
            "markdown",
            vec![
                "**Category changes**",
                "user\\_error 2",
                "**collisions:** 3",
                "> **Warning:** 3 retries",
            ],
        ),
        (
            "html",
            vec![
                "Category changes (the executor's categorizer)",
                "collisions: 3.",
                "Warning: 3 retries reuse",
            ],
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(["-o", format]);
        let out = simulate(&args);
        assert!(out.starts_with("exit: 0\n"), "{format}: {out}");
        for w in want {
            assert!(out.contains(w), "{format}: `{w}` not in {out}");
        }
    }
    // A comparison, too: both sides in each format.
    for (format, want) in [
        ("table", "candidate: category changes: user-error"),
        ("yaml", "categories:"),
        ("jsonl", "candidate: collisions: 3"),
        ("markdown", "(candidate: the executor's categorizer)"),
        ("html", "Candidate: category changes"),
    ] {
        let mut args = base.to_vec();
        args.extend(["--baseline", POLICY, "--baseline-categorizer", "recorded", "-o", format]);
        let out = simulate(&args);
        assert!(out.contains(want), "{format}: `{want}` not in {out}");
    }
}

/// A categorizer that cannot be read, is not YAML, or breaks the executor's checks: exit 3,
/// the file and line named, nothing on stdout. `--baseline-categorizer` without a baseline
/// is a usage error.
#[test]
fn a_bad_categorizer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let not_yaml = write("not-yaml.yaml", "errorCategories:\n  enabled: true\n  categories: [\n");
    let bad = write(
        "bad.yaml",
        "errorCategories:\n  enabled: true\n  categories:\n    - name: oom\n      rules:\n        - onTerminationMessage: {pattern: \"(cuda\"}\n    - name: oom\n      rules:\n        - onConditions: [OOMKilled]\n",
    );
    let missing = dir.path().join("missing.yaml").display().to_string();
    assert_eq!(
        simulate(&["--categorizer", &missing]),
        format!(
            "exit: 3\n--- stdout\n--- stderr\nerror: cannot read categorizer `{missing}`: no such file or directory\n"
        )
    );
    assert_eq!(
        simulate(&["--categorizer", &not_yaml]),
        format!("exit: 3\n--- stdout\n--- stderr\nerror: invalid categorizer `{not_yaml}`\n  {not_yaml}:4:1: invalid YAML: while parsing a node, did not find expected node content\n")
    );
    assert_eq!(
        simulate(&["--categorizer", &bad]),
        format!(
            "exit: 3\n--- stdout\n--- stderr\nerror: invalid categorizer `{bad}`\n  {bad}:6:43: errorCategories.categories[0].rules[0].onTerminationMessage.pattern: category `oom` rule 0: invalid onTerminationMessage regex `(cuda`: unclosed group\n  {bad}:7:13: errorCategories.categories[1].name: duplicate category name `oom`\n"
        )
    );
    // The baseline's categorizer is checked as strictly.
    let out = simulate(&[
        "--baseline",
        POLICY,
        "--categorizer",
        CATEGORIZER,
        "--baseline-categorizer",
        &bad,
    ]);
    assert!(
        out.starts_with("exit: 3\n--- stdout\n--- stderr\nerror: invalid categorizer `"),
        "{out}"
    );
    // A policy where the categorizer belongs.
    assert_eq!(
        simulate(&["--categorizer", POLICY]),
        "exit: 3\n--- stdout\n--- stderr\nerror: invalid categorizer `testdata/categorizer/retry.yaml`\n  testdata/categorizer/retry.yaml:3:7: kind: expected the executor's categorizer config (`errorCategories` at its top or under `application`) here, found kind `RetryPolicy`\n"
    );
    let out = simulate(&["--categorizer", CATEGORIZER, "--baseline-categorizer", "recorded"]);
    assert!(out.starts_with("exit: 2\n--- stdout\n--- stderr\nerror: the following required arguments were not provided:\n  <--baseline <PATH>...|--baseline-from-cluster>\n"), "{out}");
}

/// The counts are sums the shards' partials carry: merging two shards prints what one
/// process does, the decision records' categories included.
#[test]
fn shards_merge_to_the_whole() {
    let home = temp_home();
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "simulate",
        "-f",
        POLICY,
        "--history",
        HISTORY,
        "--categorizer",
        CATEGORIZER,
        "--engine",
        "upstream",
    ];
    for what_if in [
        &[][..],
        &["--baseline", POLICY, "--baseline-categorizer", "recorded"][..],
    ] {
        let mut parts = Vec::new();
        for i in 0..2 {
            let shard = format!("{i}/2");
            let mut args = base.to_vec();
            args.extend_from_slice(what_if);
            // The section is not summed in shards: one process leaves it out too.
            args.extend(["--shard", &shard, "-o", "partial", "--contention", "off"]);
            let out = retryctl(home.path()).args(&args).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let p = dir.path().join(format!("p{i}.json"));
            std::fs::write(&p, &out.stdout).unwrap();
            parts.push(p.display().to_string());
        }
        let merged = retryctl(home.path())
            .args(["merge", &parts[0], &parts[1], "-o", "json"])
            .output()
            .unwrap();
        let mut args = base.to_vec();
        args.extend_from_slice(what_if);
        args.extend(["-o", "json", "--contention", "off"]);
        let whole = retryctl(home.path()).args(&args).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&merged.stdout),
            String::from_utf8_lossy(&whole.stdout),
            "{what_if:?}"
        );
        assert!(String::from_utf8_lossy(&whole.stdout).contains("\"collisions\":3"));
    }
}

/// One history prints its own table, then what the categorizer changed and the collision.
#[test]
fn one_history_says_what_its_categorizer_changed() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("one.yaml");
    std::fs::write(
        &h,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: one}\nruns:\n  - node: n1\n    category: user-error\n    containers: [{name: main, exitCode: 1}]\n  - outcome: succeeded\n",
    )
    .unwrap();
    let h = h.display().to_string();
    let out = run(&[
        "simulate",
        "-f",
        POLICY,
        "--history",
        &h,
        "--categorizer",
        CATEGORIZER,
        "--engine",
        "upstream",
        SCHEDULER[0],
        SCHEDULER[1],
    ]);
    assert!(
        out.ends_with(concat!(
            "  outcome: Succeeded at run 1 after 1 retry\n",
            "\n",
            "  category changes: user-error → user_error 1\n",
            "  collisions: 1\n",
            "  warning: 1 retry reuses the name of a failed pod the executor keeps: the new pod collides with it, the lease is returned and the job takes the legacy path\n",
            "--- stderr\n",
        )),
        "{out}"
    );
    assert!(out.contains("container main exit 1, category user_error"), "{out}");
}
