//! What a person reads in the table outputs (docs/cli.md, "Output width"), on the repository's own
//! example data: every stdout line of `simulate`, `tune` and `suggest` at most 160
//! characters, except a table's rows (4 or more cells apart by 2 or more spaces) and a
//! printed `retryctl …` command; long lists one item a line; the estimates' method said once
//! per output; today's share said as what it counts; a plan's other changes said as
//! retries; tune's columns naming a rule by its matcher.

use std::path::Path;

use crate::support::{format_output, retryctl, root, temp_home};

/// stdout of `args` run from the repository's root, after checking the exit status.
fn stdout(args: &[&str], code: i32) -> String {
    let home = temp_home();
    let out = retryctl(home.path()).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", format_output(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `suggest`'s proposal for the planted history, written where `tune` can read it.
fn suggested(dir: &Path) -> String {
    let policy = stdout(
        &[
            "suggest",
            "--history",
            "testdata/suggest/planted.jsonl",
            "--baseline",
            "testdata/suggest/today.yaml",
            "-o",
            "policy",
        ],
        0,
    );
    let path = dir.join("suggested.yaml");
    std::fs::write(&path, policy).unwrap();
    path.to_str().unwrap().to_string()
}

/// A line the width rule allows at any length: a table's row, or a printed command (alone
/// or after a label such as `write it:`).
fn exempt(line: &str) -> bool {
    let cells = line.split("  ").filter(|c| !c.trim().is_empty()).count();
    let command = line
        .trim_start()
        .split_once("retryctl ")
        .is_some_and(|(before, _)| before.is_empty() || before.trim_end().ends_with(':'));
    cells >= 4 || command
}

#[test]
fn every_line_of_the_table_outputs_on_the_example_data_fits_160_characters() {
    let dir = tempfile::tempdir().unwrap();
    let suggested = suggested(dir.path());
    let mut runs: Vec<(Vec<String>, i32)> = Vec::new();
    let mut add = |args: &[&str], code: i32| runs.push((args.iter().map(|s| s.to_string()).collect(), code));
    for history in std::fs::read_dir(root().join("testdata/histories")).unwrap() {
        let path = history.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let h = path.strip_prefix(root()).unwrap().to_str().unwrap().to_string();
            let home = temp_home();
            let code = retryctl(home.path())
                .args(["simulate", "-f", "testdata/policies/valid", "--history", &h])
                .output()
                .unwrap()
                .status
                .code()
                .unwrap();
            // Whatever the history expects (some fail their expectations: exit 1); one that
            // these policies cannot replay prints no table.
            if code < 2 {
                add(&["simulate", "-f", "testdata/policies/valid", "--history", &h], code);
            }
        }
    }
    let estimates = ["--history", "docs/examples/estimates/history.jsonl"];
    let backtest = [
        "--history",
        "docs/examples/estimates/backtest.jsonl",
        "--backtest-at",
        "2026-11-09T00:00:00Z",
    ];
    let week = ["--history", "docs/examples/lookout/week.jsonl"];
    let new = ["-f", "docs/examples/estimates/new"];
    let old = ["--baseline", "docs/examples/estimates/old"];
    add(&[&["simulate"][..], &new, &estimates].concat(), 0);
    add(&[&["simulate"][..], &new, &old, &estimates].concat(), 0);
    add(&[&["simulate"][..], &new, &backtest].concat(), 0);
    add(&[&["simulate"][..], &new, &old, &backtest].concat(), 0);
    add(
        &[
            &[
                "simulate",
                "-f",
                "testdata/lookout/new/",
                "--baseline",
                "testdata/lookout/old/",
            ][..],
            &week,
        ]
        .concat(),
        0,
    );
    add(
        &[
            &[
                "simulate",
                "-f",
                "testdata/lookout/upstream-new/",
                "--engine",
                "upstream",
                "--baseline",
                "testdata/lookout/upstream-old/",
            ][..],
            &week,
        ]
        .concat(),
        0,
    );
    add(
        &[
            "simulate",
            "-f",
            "testdata/categorizer/retry.yaml",
            "--history",
            "testdata/categorizer/history.jsonl",
            "--engine",
            "upstream",
            "--categorizer",
            "testdata/categorizer/executor-config.yaml",
            "--baseline",
            "testdata/categorizer/retry.yaml",
            "--baseline-categorizer",
            "recorded",
        ],
        0,
    );
    let upstream_tune = [
        "tune",
        "-f",
        "testdata/lookout/upstream-new/",
        "--baseline",
        "testdata/lookout/upstream-old/",
        "--engine",
        "upstream",
        "--categorizer",
        "testdata/categorizer/executor-config.yaml",
        "--baseline-categorizer",
        "recorded",
        "--vary",
        "ml-new:retryLimit=0..4",
        "--vary",
        "ml-new:rules[0].action=Retry,Fail",
        "--vary",
        "ml-new:rules[2].action=Retry,Fail",
    ];
    add(&[&upstream_tune[..], &week].concat(), 0);
    add(&[&upstream_tune[..], &week, &["--max-compute", "100%"]].concat(), 0);
    let planted = [
        "--history",
        "testdata/suggest/planted.jsonl",
        "--baseline",
        "testdata/suggest/today.yaml",
    ];
    add(
        &[
            &["tune", "-f", &suggested][..],
            &planted,
            &[
                "--vary",
                "suggested:spec.rules[2].retryLimit=1..5",
                "--vary",
                "suggested:spec.rules[4].retryLimit=1..5",
            ],
        ]
        .concat(),
        0,
    );
    add(&[&["suggest"][..], &planted].concat(), 0);
    // Today's Armada stores v1beta1: its baseline is the same policy in that dialect.
    add(
        &[
            &["suggest", "--history", "testdata/suggest/planted.jsonl"][..],
            &["--baseline", "testdata/suggest/today-upstream.yaml"],
            &["--engine", "upstream"],
            &crate::suggest::ANY_CONTRADICTIONS,
        ]
        .concat(),
        0,
    );
    // Rejected (negative GPU-hours saved on the later jobs): exit 1, its output whole.
    add(&[&["suggest"][..], &backtest].concat(), 1);
    // Today's Armada from its baseline's dialect: the proposal's line names both halves.
    add(
        &[
            "suggest",
            "--history",
            "testdata/route/week.jsonl",
            "--queue",
            "ml",
            "--baseline",
            "testdata/route/current/",
        ],
        0,
    );
    let mut long = Vec::new();
    for (args, code) in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = stdout(&args, *code);
        assert!(!out.is_empty(), "{args:?} printed nothing");
        for line in out.lines() {
            if line.chars().count() > 160 && !exempt(line) {
                long.push(format!("{}: {line}", args.join(" ")));
            }
        }
    }
    assert_eq!(long, Vec::<String>::new());
}

/// The exemptions are what the rule says, and no more.
#[test]
fn a_long_line_is_exempt_only_as_a_table_row_or_a_command() {
    let words = "word ".repeat(40);
    assert!(!exempt(&words));
    assert!(!exempt(&format!("  note:  {words}  end")));
    assert!(exempt(&format!("  1   2   3   {words}")));
    assert!(exempt(&format!("  write it: retryctl tune {words}")));
    assert!(exempt(&format!("Search its limits:   retryctl tune {words}")));
    assert!(!exempt(&format!("a note about retryctl tune {words}")));
}

/// The upstream proposal names a category per signature: its comparison's category changes
/// are one a line.
#[test]
fn the_upstream_category_changes_wrap_one_a_line() {
    let out = stdout(
        &[
            "suggest",
            "--history",
            "testdata/suggest/planted.jsonl",
            "--baseline",
            "testdata/suggest/today-upstream.yaml",
            "--engine",
            "upstream",
            crate::suggest::ANY_CONTRADICTIONS[0],
            crate::suggest::ANY_CONTRADICTIONS[1],
        ],
        0,
    );
    assert!(
        out.contains(
            "  candidate: category changes:\n\
             \x20   none → s-valueerror-unknown-config-key-lr-n-401097c5 480\n\
             \x20   none → s-oom-main-ffa7ead7 225\n\
             \x20   none → s-cuda-error-an-illegal-memory-access-was-379842d3 203\n\
             \x20   none → s-connectionreseterror-errno-n-peer-n-n-n-f02f47c9 177\n\
             \x20   none → s-exit-2-setup-51f181b2 160\n\
             \x20   none → s-failed-to-pull-image-registry-team-model-3e085408 120\n\
             \x20 candidate: collisions: 0\n"
        ),
        "{out}"
    );
    // A short list stays on its line.
    assert!(out.contains("\n  baseline: category changes: none\n"), "{out}");
}

/// The estimates' method is one line per output, after the plan or summary that has
/// estimates (and pointing to the guide), however many plans the output holds.
#[test]
fn the_estimates_method_is_said_once_per_output() {
    let method = "(estimates: this history's share of failed runs whose next run succeeded, by failure class and depth; what they assume: docs/estimates.md)";
    let backtest = [
        "--history",
        "docs/examples/estimates/backtest.jsonl",
        "--backtest-at",
        "2026-11-09T00:00:00Z",
    ];
    let new = ["-f", "docs/examples/estimates/new"];
    let old = ["--baseline", "docs/examples/estimates/old"];
    let dir = tempfile::tempdir().unwrap();
    let suggested = suggested(dir.path());
    for args in [
        [
            &["simulate"][..],
            &new,
            &["--history", "docs/examples/estimates/history.jsonl"],
        ]
        .concat(),
        [&["simulate"][..], &new, &old, &backtest].concat(),
        [
            &["tune"][..],
            &new,
            &old,
            &backtest,
            &["--vary", "p:spec.retryLimit=1..3"],
        ]
        .concat(),
        [&["suggest"][..], &backtest].concat(),
        [
            &["tune", "-f", &suggested, "--history", "testdata/suggest/planted.jsonl"][..],
            &[
                "--baseline",
                "testdata/suggest/today.yaml",
                "--vary",
                "suggested:spec.rules[2].retryLimit=1..5",
            ],
        ]
        .concat(),
    ] {
        // A rejected proposal exits 1 (docs/reference/suggest.md "The verdict").
        let code = if args[0] == "suggest" { 1 } else { 0 };
        let out = stdout(&args, code);
        assert_eq!(out.matches("docs/estimates.md").count(), 1, "{args:?}:\n{out}");
        assert_eq!(
            out.lines().filter(|l| l.trim_start() == method).count(),
            1,
            "{args:?}:\n{out}"
        );
    }
}

/// suggest's TODAY column says what its share counts, and the plan calls the jobs whose
/// retries alone change `retried differently`.
#[test]
fn todays_share_and_the_plans_other_changes_say_what_they_count() {
    let out = stdout(
        &[
            "suggest",
            "--history",
            "testdata/suggest/planted.jsonl",
            "--baseline",
            "testdata/suggest/today.yaml",
        ],
        0,
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("exit:139@main"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains("  Retry (today/default, 89.2% of runs retried)  "),
        "{row}"
    );
    assert!(
        out.contains("\nPlan: 0 rescued, 0 lost, 0 → Pending, 190 retried differently; 190 of 1174 jobs change.\n"),
        "{out}"
    );
    // A signature that today's policy decides whole says no share.
    let preempted = out.lines().find(|l| l.starts_with("condition:Preempted")).unwrap();
    assert!(preempted.contains("  Retry (today/default)  "), "{preempted}");
}

/// tune's columns name a rule by its first matcher, without the design dialect's `spec.` or
/// the policy's name when one document is varied; the inputs line and the recommendation
/// keep within the width, the recommended values as `--vary` names them.
#[test]
fn tunes_columns_name_a_rule_by_its_matcher() {
    let dir = tempfile::tempdir().unwrap();
    let suggested = suggested(dir.path());
    let out = stdout(
        &[
            "tune",
            "-f",
            &suggested,
            "--history",
            "testdata/suggest/planted.jsonl",
            "--baseline",
            "testdata/suggest/today.yaml",
            "--vary",
            "suggested:spec.rules[2].retryLimit=1..5",
            "--vary",
            "suggested:spec.rules[4].retryLimit=1..5",
            "--max-compute",
            "10h",
        ],
        0,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "tune: 25 candidates over 1174 jobs; baseline: the --baseline files",
            "  varying: rules[2] (exit 139) retryLimit × rules[4] (OOMKilled) retryLimit",
            "  constraints: lost ≤ 0, cost ≤ 10h",
        ]
    );
    assert!(
        lines[3].starts_with("  ID    rules[2] (exit 139) retryLimit   rules[4] (OOMKilled) retryLimit   EXPECTED "),
        "{out}"
    );
    let at = lines
        .iter()
        .position(|l| l.starts_with("recommended: candidate "))
        .unwrap();
    assert!(
        lines[at + 1].starts_with("  values: suggested:spec.rules[2].retryLimit="),
        "{out}"
    );
    assert!(lines[at + 2].starts_with("  write it: retryctl tune -f "), "{out}");

    // Two documents varied: each column says its policy's name; the upstream dialect's
    // category matcher.
    let other = dir.path().join("other.yaml");
    std::fs::write(
        &other,
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: other\nretryLimit: 1\ndefaultAction: Fail\n",
    )
    .unwrap();
    let out = stdout(
        &[
            "tune",
            "-f",
            "testdata/lookout/upstream-new/",
            "-f",
            other.to_str().unwrap(),
            "--history",
            "docs/examples/lookout/week.jsonl",
            "--engine",
            "upstream",
            "--vary",
            "ml-new:rules[2].action=Retry,Fail",
            "--vary",
            "other:retryLimit=1,2",
        ],
        0,
    );
    assert_eq!(
        out.lines().nth(1),
        Some("  varying: ml-new:rules[2] (category cuda_error) action × other:retryLimit"),
        "{out}"
    );
}
