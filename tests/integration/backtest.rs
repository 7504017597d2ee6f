//! `--backtest-at` (docs/estimates.md): the estimates checked on the same history, with figures
//! worked out by hand, in every format, and its refusals (usage errors, nothing on stdout).

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::{chromium, format_output, retryctl, temp_home};

const QUEUE: &str = "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nretryPolicies: [p]\n";
const POLICY: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onExitCodes: {operator: In, values: [1]}}\n";
/// Exit 2: the policy fails it at once.
const EXIT1: &str = r#"{"containers":[{"name":"main","exitCode":1}],"runFor":"10m"}"#;
const EXIT2: &str = r#"{"containers":[{"name":"main","exitCode":2}],"runFor":"10m"}"#;
const OK: &str = r#"{"outcome":"succeeded","runFor":"1h"}"#;

fn job(id: &str, submitted: Option<&str>, runs: &[&str]) -> String {
    let at = submitted.map_or(String::new(), |t| format!(r#","submittedAt":"{t}""#));
    format!(
        r#"{{"job":{{"id":"{id}","queue":"q"{at}}},"runs":[{}]}}"#,
        runs.join(",")
    )
}

/// By hand: January (train), 8 jobs whose exit:1 failure is followed by a success in 6, by
/// an exit 2 in 2: exit:1 at depth 1, 8 trials, p = 0.75 (the pooled rate too). February
/// (test), 4 jobs: 1 success, 3 failures. Brier = (1 × 0.25² + 3 × 0.75²) / 4 = 0.4375;
/// the pooled rate is the same 0.75: brierPooled 0.4375, skill 0. One calibration bin,
/// [0.7, 0.8): predicted 0.75, observed 0.25, so N = 50 points. exit:1 has 4 test trials,
/// under 20: no class is checked.
fn history() -> String {
    let mut lines = Vec::new();
    for i in 0..8 {
        let at = format!("2026-01-{:02}T00:00:00Z", i + 1);
        lines.push(job(
            &format!("jan{i}"),
            Some(&at),
            &[EXIT1, if i < 6 { OK } else { EXIT2 }],
        ));
    }
    for i in 0..4 {
        let at = format!("2026-02-{:02}T00:00:00Z", i + 1);
        lines.push(job(
            &format!("feb{i}"),
            Some(&at),
            &[EXIT1, if i < 1 { OK } else { EXIT2 }],
        ));
    }
    lines.join("\n") + "\n"
}

const AT: &str = "2026-02-01T00:00:00Z";

fn setup(dir: &Path, history: &str) {
    fs::create_dir_all(dir.join("p")).unwrap();
    fs::write(dir.join("p/p.yaml"), POLICY).unwrap();
    fs::write(dir.join("p/q.yaml"), QUEUE).unwrap();
    fs::write(dir.join("h.jsonl"), history).unwrap();
}

fn simulate(dir: &Path, args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path())
        .current_dir(dir)
        .args(["simulate", "-f", "p", "--history", "h.jsonl"])
        .args(args)
        .output()
        .unwrap()
}

fn near(v: &serde_json::Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-12)
}

#[test]
fn the_backtest_figures_are_worked_out_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = simulate(dir.path(), &["--backtest-at", AT, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = &v["summary"]["backtest"];
    assert_eq!(b["at"], AT);
    assert_eq!(
        (b["trainTrials"].as_u64(), b["testTrials"].as_u64()),
        (Some(8), Some(4))
    );
    assert!(near(&b["brier"], 0.4375) && near(&b["brierPooled"], 0.4375), "{b}");
    assert!(near(&b["skill"], 0.0), "{b}");
    assert_eq!(
        b["calibration"],
        serde_json::json!([{"from": 0.7, "to": 0.8, "trials": 4, "predicted": 0.75, "observed": 0.25}])
    );
    assert_eq!(
        (b["classesChecked"].as_u64(), b["classesCovered"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(near(&b["withinPoints"], 50.0), "{b}");
    // Without the flag the summary has no backtest, and the estimates are the same: they use
    // every trial either way.
    let plain: serde_json::Value = serde_json::from_slice(&simulate(dir.path(), &["-o", "json"]).stdout).unwrap();
    assert!(plain["summary"].get("backtest").is_none());
    assert_eq!(plain["summary"]["estimate"], v["summary"]["estimate"]);
}

#[test]
fn every_format_says_it_in_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let sentence = format!("estimates were within 50.0 points on jobs submitted at or after {AT}");
    let table = String::from_utf8(simulate(dir.path(), &["--backtest-at", AT]).stdout).unwrap();
    assert!(table.contains(&format!("  backtest:  {sentence}\n             (Brier score 0.438 against 0.438 for one pooled rate (skill 0%); no class had enough trials to be checked on its own (20+ test, 5+ train);\n              8 train and 4 test trials)\n")), "{table}");
    let md = String::from_utf8(simulate(dir.path(), &["--backtest-at", AT, "-o", "markdown"]).stdout).unwrap();
    assert!(
        md.contains(&format!("**Backtest:** {sentence}. Brier score 0.438")),
        "{md}"
    );
    // What-if: the same backtest, in the plan.
    fs::create_dir_all(dir.path().join("old")).unwrap();
    fs::write(
        dir.path().join("old/p.yaml"),
        POLICY.replace("retryLimit: 3", "retryLimit: 0"),
    )
    .unwrap();
    fs::write(dir.path().join("old/q.yaml"), QUEUE).unwrap();
    let plan = simulate(dir.path(), &["--baseline", "old", "--backtest-at", AT, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert!(near(&v["comparison"]["backtest"]["withinPoints"], 50.0), "{v}");
    let html = String::from_utf8(simulate(dir.path(), &["--backtest-at", AT, "-o", "html"]).stdout).unwrap();
    assert!(html.contains(&format!(
        "<p class=\"plan\">Estimates were within 50.0 points on jobs submitted at or after {AT}.</p>"
    )));
    // The reliability diagram: the diagonal and one dot for the one bin, at (75%, 25%).
    assert_eq!(html.matches("<circle class=\"bin\"").count(), 1);
    assert!(html.contains("<title>predicted 75.0%, observed 25.0%, 4 trials</title>"));
    assert!(html.contains("<line class=\"diag\""));
    let Some(browser) = chromium::chromium() else { return };
    let page = dir.path().join("backtest.html");
    fs::write(&page, &html).unwrap();
    let dom = chromium::dump_dom(&browser, &page);
    assert!(
        dom.contains("Backtest") && dom.contains("reliability diagram"),
        "no diagram in the rendered page"
    );
}

/// A job without `submittedAt` cannot be put on either side: a usage error naming the first,
/// and nothing on stdout, in every format (the output is held back until the end).
#[test]
fn a_job_without_a_submission_time_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = history();
    h.push_str(&job("nodate", None, &[EXIT1, OK]));
    h.push('\n');
    h.push_str(&job("nodate2", None, &[OK]));
    h.push('\n');
    setup(dir.path(), &h);
    for format in ["table", "json", "yaml", "jsonl", "html", "markdown"] {
        let out = simulate(dir.path(), &["--backtest-at", AT, "-o", format]);
        assert_eq!(
            format_output(&out),
            "exit: 2\n--- stdout\n--- stderr\nerror: `--backtest-at` splits the jobs by `job.submittedAt`, and 2 jobs have none (the first: job `nodate`)\n\nhint: give every job its submission time (`retryctl history` writes it), or leave out --backtest-at\n",
            "{format}"
        );
    }
}

#[test]
fn a_time_that_leaves_a_side_without_trials_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let early = simulate(dir.path(), &["--backtest-at", "2025-12-01T00:00:00Z"]);
    assert_eq!(
        format_output(&early),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--backtest-at 2025-12-01T00:00:00Z` leaves no trials to fit the rates: no job submitted before it has a failed run followed by another run\n\nhint: pick a later time\n"
    );
    let late = simulate(dir.path(), &["--backtest-at", "2026-03-01T00:00:00Z"]);
    assert_eq!(
        format_output(&late),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--backtest-at 2026-03-01T00:00:00Z` leaves no trials to test the rates: no job submitted at or after it has a failed run followed by another run\n\nhint: pick an earlier time\n"
    );
    let bad = simulate(dir.path(), &["--backtest-at", "last tuesday"]);
    assert_eq!(
        format_output(&bad),
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid `--backtest-at` `last tuesday`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`\n"
    );
}
