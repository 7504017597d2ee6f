//! `suggest`'s proposal as today's policy edited, and its verdict (docs/reference/suggest.md
//! "Today's policy is the starting point", "The verdict"): every format, the rules kept, the
//! deployed categorizer's hints, the engine its baseline's dialect picks, and one policy's
//! numbers across suggest, simulate and tune. The planted history and its helpers are
//! `suggest`'s.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::suggest::{json_of, on_planted, path, run, setup, suggest_json, ANY_CONTRADICTIONS, BASELINE_UPSTREAM};
use crate::support::{root, temp_home};

/// The verdict (docs/reference/suggest.md "The verdict") in every format: the planted history
/// against a policy that retries everything 3 times gives the clean win, `adopt`, with the
/// write line, exit 0; `-o policy` is headed by it and says it on stderr. The decision reads
/// alike in every format, with its gloss.
#[test]
fn an_adopted_proposal_says_so_in_every_format() {
    let p = setup(7);
    let home = temp_home();
    let reason = "0 rescued, 0 lost; retries +0 −570; GPU-hours -6.2";
    let table = on_planted(&p, home.path(), &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(&format!(
            "\nVerdict: adopt (a change worth making): {reason}\nWrite the proposal:  "
        )),
        "{text}"
    );
    let v = suggest_json(&p, home.path(), &[]);
    assert_eq!(
        v["suggest"]["verdict"],
        json!({"decision": "adopt", "gloss": "a change worth making", "reasons": [reason]})
    );
    let yaml = on_planted(&p, home.path(), &["-o", "yaml"]);
    let y: Value = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(y["suggest"]["verdict"], v["suggest"]["verdict"]);
    let md = String::from_utf8(on_planted(&p, home.path(), &["-o", "markdown"]).stdout).unwrap();
    assert!(
        md.contains(&format!("**Verdict: adopt (a change worth making)** — {reason}\n")),
        "{md}"
    );
    assert!(md.contains("\nWrite it: `"), "{md}");
    let html = String::from_utf8(on_planted(&p, home.path(), &["-o", "html"]).stdout).unwrap();
    assert!(
        html.contains(&format!(
            "<p class=\"verdict\"><b>Verdict: adopt (a change worth making)</b> — {reason}</p>"
        )),
        "{html}"
    );
    let policy = on_planted(&p, home.path(), &["-o", "policy"]);
    assert_eq!(
        String::from_utf8_lossy(&policy.stderr),
        format!("verdict: adopt (a change worth making): {reason}\n")
    );
    assert!(policy
        .stdout
        .starts_with(format!("# verdict: adopt (a change worth making): {reason}\n# Proposed by").as_bytes()));
    assert_eq!(
        table.status.code(),
        Some(0),
        "{}",
        crate::support::format_output(&table)
    );
    assert_eq!(policy.status.code(), Some(0));
    // `--exit-code` is gone: the exit status is the gate.
    let out = on_planted(&p, home.path(), &["--exit-code"]);
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 2\n--- stdout\n--- stderr\nerror: `suggest --exit-code` is gone: suggest exits 1 when its verdict is `reject`, in every format, and 0 on `adopt` and `keep`\n\nhint: drop `--exit-code`: under `set -e` a script stops at a rejected proposal\n"
    );
    // The policy's one limit, alike in every format: today's 3.
    assert!(
        text.contains("Proposal: policy `suggested` (the design dialect, retryLimit 3), 8 rules"),
        "{text}"
    );
    assert_eq!(v["suggest"]["proposal"]["policyRetryLimit"], 3);
    // Under the learned default's evidence (docs/reference/suggest.md "The policy's defaults").
    assert!(String::from_utf8_lossy(&policy.stdout).contains(
        "\nspec:\n  # (default): learned from 1 signature: 120 failed runs; 90 retried, 0 succeeded: 0.0% (95%: 0.0–4.1%)\n  retryLimit: 3\n  defaultAction: Fail\n"
    ));
}

/// A proposal that loses a job today's policy saves is `reject (do not adopt)`, names the job,
/// prints no write line nor tune line, and exits 1 in every format, its output written whole.
#[test]
fn a_proposal_that_loses_a_job_is_rejected_without_a_write_line() {
    let home = temp_home();
    // 40 jobs of one signature whose one retry pays once in 40 (futile under `--futile
    // 0.05`): the proposal fails them at once, and loses `j0`, which today's retry saves.
    let mut jobs = String::new();
    for k in 0..40 {
        let failed = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 5}]});
        let second = if k == 0 {
            json!({"outcome": "succeeded"})
        } else {
            failed.clone()
        };
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [failed, second]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n",
    )
    .unwrap();
    let args = ["suggest", "--history", path(&history), "--baseline", path(&today)];
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(1), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.ends_with("\nVerdict: reject (do not adopt): loses 1 job today's policy saves (`j0`)\n"),
        "{text}"
    );
    assert!(
        !text.contains("Write the proposal") && !text.contains("Search its limits"),
        "{text}"
    );
    for format in ["json", "yaml", "markdown", "html", "policy"] {
        let out = run(home.path(), &[&args[..], &["-o", format]].concat());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{format}: {}",
            crate::support::format_output(&out)
        );
        assert!(!out.stdout.is_empty(), "{format}");
    }
    let v: Value = serde_json::from_slice(&run(home.path(), &[&args[..], &["-o", "json"]].concat()).stdout).unwrap();
    assert_eq!(
        v["suggest"]["verdict"],
        json!({"decision": "reject", "gloss": "do not adopt", "reasons": ["loses 1 job today's policy saves (`j0`)"]})
    );
    // The job a verdict names is the history's text: in `-o policy`'s comment a line break
    // in its id is escaped, so that it cannot end the comment and add a key.
    let hostile = std::fs::read_to_string(&history)
        .unwrap()
        .replacen("\"j0\"", "\"j0\\nkind: Evil\"", 1);
    std::fs::write(&history, hostile).unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(
            "# verdict: reject (do not adopt): loses 1 job today's policy saves (`j0\\x0akind: Evil`)\n# Proposed by"
        ),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("verdict: reject (do not adopt): loses 1 job today's policy saves (`j0\\x0akind: Evil`)\n"),
        "{}",
        crate::support::format_output(&out)
    );
}

/// The week's one rule of today's (lease expiry, retried once) has a single trial: the
/// proposal keeps it as written, so `ml-05`, which it saves, is not lost; nothing else has
/// evidence, so the verdict is to keep today's policy. In both dialects.
#[test]
fn a_rule_of_todays_with_one_trial_is_kept_and_its_job_is_not_lost() {
    let home = temp_home();
    for (engine, rule) in [
        (
            "design",
            "    # kept from today: ml-old/0 (decided 1 run)\n    - {action: Retry, onFailureCategory: [internal], onFailureSubcategory: [lease-expired], retryLimit: 1}\n",
        ),
        (
            "upstream",
            "  # kept from today: ml-old/0 (decided 1 run)\n  - {action: Retry, onCategory: internal, onSubcategory: lease-expired}\n",
        ),
    ] {
        let base = [
            "suggest",
            "--history",
            "docs/examples/lookout/week.jsonl",
            "--queue",
            "ml",
            "--baseline",
            "testdata/lookout/upstream-old/",
            "--engine",
            engine,
            // The Lookout guide's week retried OOMs and a preemption, which this upstream
            // policy never does: 6 of its 17 jobs contradict it.
            ANY_CONTRADICTIONS[0],
            ANY_CONTRADICTIONS[1],
        ];
        let out = run(home.path(), &[&base[..], &["-o", "policy"]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(rule), "{engine}: {text}");
        assert!(text.starts_with("# verdict: keep (keep today's policy): "), "{engine}: {text}");
        // First in the queue's list, never alone.
        assert!(text.ends_with("retryPolicies:\n- suggested\n- ml-old\n"), "{engine}: {text}");
        let v = json_of(&run(home.path(), &[&base[..], &["-o", "json"]].concat()));
        assert_eq!(
            v["suggest"]["proposal"]["kept"],
            json!([{"from": "ml-old/0", "decidedRuns": 1}]),
            "{engine}"
        );
        assert_eq!(v["suggest"]["verdict"]["decision"], json!("keep"), "{engine}");
        assert_eq!(
            v["suggest"]["proposal"]["comparison"]["transitions"]["lost"],
            json!(0),
            "{engine}: {v}"
        );
        let out = run(home.path(), &base);
        let text = String::from_utf8_lossy(&out.stdout);
        // Its row: decided by the kept rule today, and as today in the proposal.
        let row = text
            .lines()
            .find(|l| l.starts_with("category:internal/lease-expired "))
            .unwrap_or_else(|| panic!("{engine}: {text}"));
        let cells: Vec<&str> = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(
            cells,
            [
                "category:internal/lease-expired",
                "1",
                "1",
                "100.0% (20.7–100.0%)",
                "0.0",
                "Retry (ml-old/0)",
                "as today (too few trials: 1)"
            ],
            "{engine}"
        );
        assert!(
            text.contains("0 rules of its own (0 Retry, 0 Fail), then 1 rule kept from today."),
            "{engine}: {text}"
        );
    }
}

/// 30 OOM kills of `main` that a retry fixes, under today's rule that retries them with a
/// memory bump: the proposed Retry keeps the bump.
#[test]
fn an_oom_rule_keeps_todays_memory_bump() {
    let home = temp_home();
    let mut jobs = String::new();
    for k in 0..30 {
        let oom = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}]});
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [oom, {"outcome": "succeeded"}]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 2\n  defaultAction: Fail\n  rules:\n    - action: Retry\n      onConditions: [OOMKilled]\n      mutate: {resources: {memory: {factor: 1.5}}}\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("      onConditions: [OOMKilled]\n      retryLimit: 1\n      mutate: {resources: {memory: {factor: 1.5}}}\n"),
        "{text}"
    );
    assert!(
        text.contains("    # kept from today: today/0 (decided 30 runs)\n    - {action: Retry, onConditions: [OOMKilled], retryLimit: 2, mutate: {resources: {memory: {factor: 1.5}}}}\n"),
        "{text}"
    );
    let policy = home.path().join("p.yaml");
    std::fs::write(&policy, &out.stdout).unwrap();
    let out = run(home.path(), &["validate", "--strict", "-f", path(&policy)]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
}

/// Upstream: a baseline in the design dialect (here a rule today's Armada cannot store, a
/// design matcher) is not what today's Armada runs: exit 2 naming the cause (the file's
/// dialect) and the `get` that writes it right, nothing on stdout.
#[test]
fn a_design_rule_cannot_be_kept_in_an_upstream_proposal() {
    let home = temp_home();
    let history = failed_once_then_succeeded(home.path());
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 1\n  defaultAction: Fail\n  rules:\n    - action: Retry\n      onExitCodes: {operator: In, values: [3]}\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "--engine",
            "upstream",
            "--baseline-engine",
            "design",
            crate::support::UPSTREAM_SCHEDULER[0],
            crate::support::UPSTREAM_SCHEDULER[1],
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", crate::support::format_output(&out));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    let today = path(&today);
    assert_eq!(
        err,
        format!(
            "error: `{today}` holds armadaproject.io/v1 documents (policy `today`), and the proposal is for today's Armada (`--engine upstream`): today's Armada stores v1beta1: get them with `retryctl get retrypolicies -o yaml --api-version armadaproject.io/v1beta1`\n\n\
             hint: write `{today}` again from the cluster with `--api-version armadaproject.io/v1beta1` (`get retrypolicies` and `get queues`), or propose in the design dialect with `--engine design`\n"
        )
    );
}

/// Upstream: OOM kills of `main` (a retry pays) and of `loader` (it never does) share the
/// deployed category `oom`: each gets a new category that splits it, named after its kind and
/// container, carrying the deployed rule's hint; alone, `main`'s rule matches `oom` itself.
#[test]
fn a_deployed_category_with_a_hint_keeps_the_hint() {
    let home = temp_home();
    let categorizer = home.path().join("executor.yaml");
    std::fs::write(
        &categorizer,
        "errorCategories:\n  enabled: true\n  categories:\n    - name: oom\n      rules:\n        - onConditions: [OOMKilled]\n          hint: Increase the memory request\n",
    )
    .unwrap();
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: today\nretryLimit: 1\ndefaultAction: Retry\n",
    )
    .unwrap();
    let write = |containers: &[(&str, bool)]| {
        let mut jobs = String::new();
        for (name, pays) in containers {
            for k in 0..30 {
                let oom = json!({"node": "n", "runFor": "60s", "containers": [{"name": name, "exitCode": 137, "reason": "OOMKilled"}]});
                let next = if *pays {
                    json!({"outcome": "succeeded"})
                } else {
                    oom.clone()
                };
                jobs.push_str(&format!(
                    "{}\n",
                    json!({"job": {"id": format!("{name}-{k}")}, "runs": [oom, next]})
                ));
            }
        }
        let history = home.path().join("h.jsonl");
        std::fs::write(&history, jobs).unwrap();
        history
    };
    let suggest = |history: &Path| {
        let out = run(
            home.path(),
            &[
                "suggest",
                "--history",
                path(history),
                "--baseline",
                path(&today),
                "--engine",
                "upstream",
                "--categorizer",
                path(&categorizer),
                "-o",
                "policy",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = suggest(&write(&[("main", true), ("loader", false)]));
    let names: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("    - name: ")).collect();
    // The new ones first, in the rules' order (container name), named after kind and
    // container; the deployed one after them.
    assert_eq!(
        names,
        ["s-oom-loader-7a963f69", "s-oom-main-ffa7ead7", "\"oom\""],
        "{text}"
    );
    // Both new categories and the deployed one.
    assert_eq!(
        text.matches("          hint: \"Increase the memory request\"\n")
            .count(),
        3,
        "{text}"
    );
    assert!(text.contains("          containerName: \"main\"\n"), "{text}");
    let history = write(&[("main", true)]);
    let text = suggest(&history);
    assert!(!text.contains("name: s-"), "{text}");
    // The `tune` line suggest prints gives both sides their categorizer: the proposal's is in
    // its file, the baseline's the deployed one.
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "--engine",
            "upstream",
            "--categorizer",
            path(&categorizer),
        ],
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!(
            "--engine upstream --baseline-categorizer {} --vary 'suggested:retryLimit=1..3'",
            path(&categorizer)
        )),
        "{table}"
    );
    assert!(text.contains("  - action: Retry\n    onCategory: \"oom\"\n"), "{text}");
}

/// A history whose proposal decides every job as today's policy does: `keep`, nothing to write.
#[test]
fn a_proposal_that_changes_nothing_keeps_todays_policy() {
    let home = temp_home();
    let history = failed_once_then_succeeded(home.path());
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &["suggest", "--history", path(&history), "--baseline", path(&today)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nVerdict: keep (keep today's policy): the proposal changes nothing that matters: no job changes outcome, no retry is added or removed\n"),
        "{text}"
    );
    assert!(!text.contains("Write the proposal"), "{text}");
}

/// Depths never tried raise no limit; `--extrapolate` raises it and says so in every format.
#[test]
fn extrapolate_marks_every_limit_it_extrapolates() {
    let home = temp_home();
    let history = failed_once_then_succeeded(home.path());
    let base = ["suggest", "--history", path(&history)];
    let v = json_of(&run(home.path(), &[&base[..], &["-o", "json"]].concat()));
    assert_eq!(
        v["suggest"]["proposal"]["rules"],
        json!([{"signature": "exit:3@main", "action": "Retry", "limit": 1, "avoidSameNode": false}])
    );
    let v = json_of(&run(
        home.path(),
        &[&base[..], &["--extrapolate", "-o", "json"]].concat(),
    ));
    assert_eq!(
        v["suggest"]["proposal"]["rules"],
        json!([{"signature": "exit:3@main", "action": "Retry", "limit": 5, "avoidSameNode": false, "extrapolatedFrom": 1}])
    );
    let table = run(home.path(), &[&base[..], &["--extrapolate"]].concat());
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("Retry ×5 (extrapolated from depth 1)"), "{text}");
    assert!(text.contains(" --extrapolate -o policy > suggested.yaml"), "{text}");
    let policy = run(home.path(), &[&base[..], &["--extrapolate", "-o", "policy"]].concat());
    let text = String::from_utf8_lossy(&policy.stdout);
    assert!(
        text.contains("      retryLimit: 5  # extrapolated from depth 1\n"),
        "{text}"
    );
    let md = run(home.path(), &[&base[..], &["--extrapolate", "-o", "markdown"]].concat());
    assert!(String::from_utf8_lossy(&md.stdout).contains("| Retry ×5 (extrapolated from depth 1) |"));
}

/// A termination message cannot end the `# signature` comment above its rule for a YAML 1.1
/// reader (PyYAML, as go-yaml: kubectl, armadactl, the executor's config loader): U+2028,
/// U+2029, U+0085, `\r` are escaped, so PyYAML reads the same documents `validate` reads.
#[test]
fn a_message_cannot_inject_yaml_into_the_policy() {
    let Some(python) = crate::support::python::python() else {
        return;
    };
    let home = temp_home();
    let mut jobs = String::new();
    for (k, sep) in ["\u{2028}", "\u{2029}", "\u{85}", "\r"]
        .iter()
        .cycle()
        .take(40)
        .enumerate()
    {
        let message = format!("boom{sep}injected: true{sep}rules: []");
        let failed =
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3, "message": message}]});
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [failed, {"outcome": "succeeded"}]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--min-trials",
            "5",
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let file = home.path().join("p.yaml");
    std::fs::write(&file, &out.stdout).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for c in ['\u{2028}', '\u{2029}', '\u{85}', '\r'] {
        assert!(!text.contains(c), "{c:?} in {text}");
    }
    // YAML 1.2 (validate) and YAML 1.1 (PyYAML) read the same: one policy, its four rules,
    // no key a message added.
    let out = run(home.path(), &["validate", "-f", path(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let read = crate::support::python::run(
        &python,
        "import sys, yaml\nfor d in yaml.safe_load_all(open(sys.argv[1])):\n    print(sorted(d), sorted(d['spec']), len(d['spec']['rules']))",
        &[path(&file)],
    );
    assert_eq!(
        read,
        "['apiVersion', 'kind', 'metadata', 'spec'] ['defaultAction', 'rules'] 4\n"
    );
}

/// 30 jobs whose one failed run (exit 3 in `main`) is followed by a success: a first retry
/// with evidence, no deeper depth tried. Written to `dir/h.jsonl`.
fn failed_once_then_succeeded(dir: &Path) -> PathBuf {
    let mut jobs = String::new();
    for k in 0..30 {
        let failed = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3}]});
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [failed, {"outcome": "succeeded"}]})
        ));
    }
    let history = dir.join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    history
}

/// Upstream without the deployed categorizer: the new categories are said to go before the
/// executor's own (in the document and on stderr), never written as a complete config.
#[test]
fn without_the_deployed_categorizer_the_new_categories_are_not_a_complete_config() {
    let home = temp_home();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            "testdata/suggest/planted.jsonl",
            "--baseline",
            "testdata/policies/valid/upstream-v1beta1.yaml",
            "--engine",
            "upstream",
            "-o",
            "policy",
            ANY_CONTRADICTIONS[0],
            ANY_CONTRADICTIONS[1],
            crate::support::UPSTREAM_SCHEDULER[0],
            crate::support::UPSTREAM_SCHEDULER[1],
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("note: add these categories before the executor's existing errorCategories: they are not a complete config\n"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("# add these categories before the executor's existing errorCategories: they are not a complete config\nerrorCategories:\n"),
        "{text}"
    );
}

/// A history whose only file cannot be read (a YAML error on line 3): `suggest` names the
/// file, the line and the reason in `simulate`'s words before saying there is nothing to
/// learn from, for a file read twice as for stdin read once.
#[test]
fn an_unreadable_history_is_named_with_its_line_and_reason_as_simulate_names_it() {
    let home = temp_home();
    let history = home.path().join("h.yaml");
    std::fs::write(
        &history,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j1, queue: [q\nruns: [{outcome: succeeded}]\n",
    )
    .unwrap();
    let report = format!(
        "{}\n  error: 5:1: invalid YAML: while parsing a flow sequence, expected ',' or ']'\n",
        history.display()
    );
    let simulate = run(
        home.path(),
        &[
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "--history",
            path(&history),
        ],
    );
    assert_eq!(
        simulate.status.code(),
        Some(3),
        "{}",
        crate::support::format_output(&simulate)
    );
    assert!(
        String::from_utf8_lossy(&simulate.stderr).starts_with(&report),
        "{}",
        crate::support::format_output(&simulate)
    );
    let suggest = run(home.path(), &["suggest", "--history", path(&history)]);
    assert_eq!(
        suggest.status.code(),
        Some(3),
        "{}",
        crate::support::format_output(&suggest)
    );
    assert_eq!(
        String::from_utf8_lossy(&suggest.stderr),
        format!("{report}error: no job could be replayed (1 entry not read): there is nothing to learn from\n")
    );
    assert_eq!(suggest.stdout, b"");
}

/// Without `--engine`, suggest proposes in its baseline's dialect (docs/engines.md "Which
/// engine decides"), and its table's first line says which engine decided and how to pick
/// the other; a v1beta1 baseline proposes for today's Armada as `--engine upstream` does.
#[test]
fn the_engine_follows_the_baselines_dialect_and_the_table_says_so() {
    let p = setup(23);
    let home = temp_home();
    let upstream = home.path().join("today-up.yaml");
    std::fs::write(&upstream, BASELINE_UPSTREAM).unwrap();
    let first_line = |args: &[&str]| {
        let out = run(home.path(), &[args, &ANY_CONTRADICTIONS[..]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let history = path(&p.history);
    assert_eq!(
        first_line(&["suggest", "--history", history]),
        "Engine: design (no baseline to take a dialect from); `--engine upstream` proposes for today's Armada."
    );
    assert_eq!(
        first_line(&["suggest", "--history", history, "--baseline", path(&p.baseline)]),
        "Engine: design (the baseline is `armadaproject.io/v1`); `--engine upstream` proposes for today's Armada."
    );
    assert_eq!(
        first_line(&["suggest", "--history", history, "--baseline", path(&upstream)]),
        "Engine: upstream (the baseline is `armadaproject.io/v1beta1`); `--engine design` proposes for the design."
    );
    assert_eq!(
        first_line(&[
            "suggest",
            "--history",
            history,
            "--baseline",
            path(&upstream),
            "--engine",
            "upstream"
        ]),
        "Engine: upstream (`--engine`); `--engine design` proposes for the design."
    );
    // The dialect's pick is `--engine upstream`'s proposal, byte for byte.
    let policy = |extra: &[&str]| {
        let mut args = vec![
            "suggest",
            "--history",
            history,
            "--baseline",
            path(&upstream),
            "-o",
            "policy",
        ];
        args.extend_from_slice(&ANY_CONTRADICTIONS);
        args.extend_from_slice(extra);
        run(home.path(), &args).stdout
    };
    let picked = policy(&[]);
    assert!(String::from_utf8_lossy(&picked).contains("apiVersion: armadaproject.io/v1beta1\n"));
    assert_eq!(picked, policy(&["--engine", "upstream"]));
}

/// One policy, one set of numbers (docs/reference/suggest.md "Its effect"): the proposal's
/// comparison in suggest's json is `simulate --baseline`'s for the same two sides, and tune's
/// candidate equal to the proposal (its `retryLimit` varied to its own value) counts the same
/// changes, in both dialects (upstream: each side with its own categorizer, the proposal's in
/// its file).
#[test]
fn one_policys_numbers_agree_across_suggest_simulate_and_tune() {
    let p = setup(29);
    let home = temp_home();
    let upstream = home.path().join("today-up.yaml");
    std::fs::write(&upstream, BASELINE_UPSTREAM).unwrap();
    let deployed = root().join("testdata/categorizer/executor-config.yaml");
    let history = path(&p.history);
    for (baseline, categorizer, limit) in [
        (path(&p.baseline), None, "suggested:spec.retryLimit"),
        (path(&upstream), Some(path(&deployed)), "suggested:retryLimit"),
    ] {
        let sides: Vec<&str> = match categorizer {
            Some(c) => vec!["--baseline", baseline, "--baseline-categorizer", c],
            None => vec!["--baseline", baseline],
        };
        let mut suggest = vec!["suggest", "--history", history, "--baseline", baseline];
        suggest.extend(ANY_CONTRADICTIONS);
        if let Some(c) = categorizer {
            suggest.extend(["--categorizer", c]);
        }
        let policy = home.path().join("proposal.yaml");
        let out = run(home.path(), &[&suggest[..], &["-o", "policy"]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        std::fs::write(&policy, &out.stdout).unwrap();
        let v = json_of(&run(home.path(), &[&suggest[..], &["-o", "json"]].concat()));
        let proposal = &v["suggest"]["proposal"];
        let sim = json_of(&run(
            home.path(),
            &[
                &["simulate", "-f", path(&policy), "--history", history][..],
                &sides,
                &["-o", "json"],
            ]
            .concat(),
        ));
        assert_eq!(proposal["comparison"], sim["comparison"], "{baseline}");
        let n = proposal["policyRetryLimit"].as_u64().unwrap();
        let vary = format!("{limit}={n}..{n}");
        let tune = json_of(&run(
            home.path(),
            &[
                &["tune", "-f", path(&policy), "--history", history][..],
                &sides,
                &["--vary", &vary, "-o", "json"],
                &ANY_CONTRADICTIONS,
            ]
            .concat(),
        ));
        let candidate = &tune["tune"]["candidates"][0];
        let cmp = &sim["comparison"];
        for key in ["changed", "retries", "delay", "compute"] {
            assert_eq!(candidate[key], cmp[key], "{baseline}: {key}");
        }
        for key in ["rescued", "lost", "toPending", "other", "retriesOnly"] {
            assert_eq!(
                candidate["transitions"][key], cmp["transitions"][key],
                "{baseline}: {key}"
            );
        }
        for key in ["expectedRescued", "low", "high", "withoutEstimate", "expectedCompute"] {
            assert_eq!(candidate["estimate"][key], cmp["estimate"][key], "{baseline}: {key}");
        }
        assert_eq!(tune["tune"]["jobs"], cmp["jobs"], "{baseline}");
    }
}

/// The commands suggest prints carry what decided its verdict and what it read, as given:
/// `--max-contradictions`, `--skip-invalid`, and in the write line `--executor-config`, so
/// that running them writes what suggest judged.
#[test]
fn the_printed_commands_carry_the_gates_and_the_executor_config() {
    let home = temp_home();
    let exec = home.path().join("exec.yaml");
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            "testdata/route/week.jsonl",
            "--queue",
            "ml",
            "--baseline",
            "testdata/route/current/",
            "--max-contradictions",
            "2%",
            "--skip-invalid",
            "--executor-config",
            path(&exec),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Write") || l.starts_with("Search"))
        .collect();
    assert_eq!(
        lines,
        [
            format!("Write the proposal:  retryctl suggest --history testdata/route/week.jsonl --queue ml --baseline testdata/route/current/ --max-contradictions 2% --skip-invalid -o policy --executor-config {} > suggested.yaml", path(&exec)),
            "Search its limits:   retryctl tune -f suggested.yaml --history testdata/route/week.jsonl --baseline testdata/route/current/ --max-contradictions 2% --skip-invalid --vary 'suggested:retryLimit=1..5'".to_string(),
        ]
    );
}

/// The README's route given a `current/` in the design dialect (what `get -o yaml` wrote from
/// today's Armada before it wrote v1beta1 by default): its executor's config says the cluster
/// runs today's Armada, so the proposal is refused naming the cause and the fix (exit 2,
/// nothing on stdout), as with `--engine upstream`; `--engine design` proposes in the design
/// dialect all the same (rejected: that engine runs again the jobs the record ends).
#[test]
fn a_current_in_the_design_dialect_is_refused_for_today_s_armada() {
    let home = temp_home();
    let dir = home.path();
    let current = dir.join("current");
    std::fs::create_dir(&current).unwrap();
    for f in ["queues.yaml", "executor.yaml"] {
        std::fs::copy(root().join("testdata/route/current").join(f), current.join(f)).unwrap();
    }
    std::fs::write(
        current.join("policies.yaml"),
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: armadaproject.io/v1\n  kind: RetryPolicy\n  metadata:\n    name: ml-today\n  spec:\n    retryLimit: 3\n    defaultAction: Retry\n    rules:\n    - action: Retry\n      onFailureCategory: [oom]\n      mutate: {resources: {memory: {factor: 1.5}}}\n    - action: Retry\n      onFailureCategory: [app-42]\n",
    )
    .unwrap();
    let week = root().join("testdata/route/week.jsonl");
    let suggest = |extra: &[&str]| {
        crate::support::retryctl(dir)
            .current_dir(dir)
            .args([
                "suggest",
                "--history",
                week.to_str().unwrap(),
                "--queue",
                "ml",
                "--baseline",
                "current/",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let hint = "\nhint: write `current/` again from the cluster with `--api-version armadaproject.io/v1beta1` (`get retrypolicies` and `get queues`), or propose in the design dialect with `--engine design`\n";
    let refused = |why: &str| {
        format!(
            "exit: 2\n--- stdout\n--- stderr\nerror: `current/` holds armadaproject.io/v1 documents (policy `ml-today` in `current/policies.yaml`), and the proposal is for today's Armada ({why}): today's Armada stores v1beta1: get them with `retryctl get retrypolicies -o yaml --api-version armadaproject.io/v1beta1`\n{hint}"
        )
    };
    assert_eq!(
        crate::support::format_output(&suggest(&["-o", "policy"])),
        refused("`current/executor.yaml` is an executor's config")
    );
    let upstream = suggest(&[
        "-o",
        "policy",
        "--engine",
        "upstream",
        crate::support::UPSTREAM_SCHEDULER[0],
        &root().join(crate::support::UPSTREAM_SCHEDULER[1]).display().to_string(),
    ]);
    assert_eq!(crate::support::format_output(&upstream), refused("`--engine upstream`"));
    // Proposed, not refused: in the design dialect, whose engine runs again the 60 jobs the
    // record ends at their preemption (`failed`), so the baseline does not explain the week
    // and the verdict is reject (exit 1), the proposal written all the same.
    let design = suggest(&["-o", "policy", "--engine", "design"]);
    assert_eq!(
        design.status.code(),
        Some(1),
        "{}",
        crate::support::format_output(&design)
    );
    let proposal = String::from_utf8_lossy(&design.stdout);
    assert!(
        proposal.starts_with(
            "# verdict: reject (do not adopt): the baseline does not explain the record: 60 jobs contradict it; \
             is it what the cluster ran?\n"
        ),
        "{proposal}"
    );
    assert!(
        proposal.contains("apiVersion: armadaproject.io/v1\nkind: RetryPolicy\n"),
        "{proposal}"
    );
}

/// A proposal validates clean: at 50 copies of the route's week (each job's id made its own),
/// the proposed `app-42` rule covers today's `ml-today/1` after it, which could never match;
/// it is not written, its comment says so, and `validate --upstream --categorizer` of what
/// suggest writes, with the config it writes, finds no `shadowed-rule`.
#[test]
fn a_kept_rule_a_proposed_one_covers_is_dropped_and_the_proposal_validates_clean() {
    let home = temp_home();
    let dir = home.path();
    let week = std::fs::read_to_string(root().join("testdata/route/week.jsonl")).unwrap();
    let mut copies = String::new();
    for c in 0..50 {
        for line in week.lines() {
            let mut v: Value = serde_json::from_str(line).unwrap();
            v["job"]["id"] = json!(format!("{}c{c:02}", v["job"]["id"].as_str().unwrap()));
            copies.push_str(&v.to_string());
            copies.push('\n');
        }
    }
    std::fs::write(dir.join("week50.jsonl"), copies).unwrap();
    let exec = dir.join("executor-suggested.yaml");
    let out = crate::support::retryctl(dir)
        .current_dir(root())
        .args(["suggest", "--history"])
        .arg(dir.join("week50.jsonl"))
        .args([
            "--queue",
            "ml",
            "--baseline",
            "testdata/route/current/",
            "-o",
            "policy",
            "--executor-config",
        ])
        .arg(&exec)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let written = String::from_utf8(out.stdout).unwrap();
    assert!(
        written.contains(
            "\n  # kept from today: ml-today/1 (decided 350 runs): dropped, a rule before it matches every failure it matches: {action: Retry, onCategory: app-42}\n"
        ),
        "{written}"
    );
    let policy = dir.join("suggested.yaml");
    std::fs::write(&policy, &written).unwrap();
    let validated = crate::support::retryctl(dir)
        .args(["validate", "--upstream", "-f"])
        .arg(&policy)
        .arg("--categorizer")
        .arg(&exec)
        .output()
        .unwrap();
    let said = crate::support::format_output(&validated);
    assert_eq!(validated.status.code(), Some(0), "{said}");
    assert!(!said.contains("can never match"), "{said}");
}
