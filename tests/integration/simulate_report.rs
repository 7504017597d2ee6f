//! `simulate -o html|markdown` and the estimates past the end of the record
//! (docs/estimates.md), and the table's cut list of changed jobs: exact outputs on a history whose
//! answers are worked out by hand, and the HTML page rendered in a real browser (headless
//! Chromium).

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::{chromium, format_output, png, retryctl, temp_home};

pub(crate) const QUEUE: &str = "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nretryPolicies: [p]\n";

/// Old: one retry, on preemption or exit code 2. New: three retries, on preemption or a
/// CUDA error; exit code 2 fails at once.
pub(crate) const OLD: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n    - {action: Retry, onExitCodes: {operator: In, values: [2]}}\n";
pub(crate) const NEW: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n    - {action: Fail, onExitCodes: {operator: In, values: [2]}}\n    - {action: Retry, onFailureCategory: [cuda_error]}\n";

const PREEMPTED: &str = r#"{"conditions":["Preempted"],"runFor":"10m"}"#;
pub(crate) const CUDA: &str = r#"{"category":"cuda_error","containers":[{"name":"main","exitCode":1}],"runFor":"5m"}"#;
pub(crate) const EXIT2: &str = r#"{"containers":[{"name":"main","exitCode":2}],"runFor":"1m"}"#;
pub(crate) const OK: &str = r#"{"outcome":"succeeded","runFor":"1h"}"#;
const LEASE: &str = r#"{"outcome":"leaseReturned"}"#;

pub(crate) fn job(id: &str, runs: &[&str]) -> String {
    format!(r#"{{"job":{{"id":"{id}","queue":"q"}},"runs":[{}]}}"#, runs.join(","))
}

/// By hand. Trials (a failed run followed by another run, at its depth: the job's failed
/// runs so far, this one included):
/// - `condition:Preempted`: r1–r3 each P→P at depth 1 (fail) and P→ok at depth 2 (success);
///   p1, p2 P→P at depth 1 (fail); lease1's P→ok at depth 1 (success; its returned lease is
///   no failed run). Depth 1: 6 trials, 1 success; depth 2: 3 trials, 3 successes; in all
///   9 trials, 4 successes.
/// - `cuda_error`: cuda1–cuda5, each CUDA→ok at depth 1: 5 trials, 5 successes.
/// - `exit:2`: l1, l2, each exit 2→ok: 2 trials, 2 successes. Pooled: 16 trials, 11.
///
/// Changes (15 jobs): retries r* +1 each, cuda* +1, p* +1, c1 +1 = +11, l* −1 each = −2;
/// delay +1s per added retry after a preemption (the 1s grace period): +5s; compute:
/// the runs one side starts and the other does not, r*'s third and cuda*'s second (1h
/// each) +8h, l*'s second −2h.
///
/// Outcomes: r* and cuda* rescued (old: out of retries / no rule for CUDA), l* lost (new
/// fails exit 2 at once), p1, p2 and c1 Failed → Pending (new retries past the record).
/// Their estimates (docs/estimates.md):
/// - p*: 2 failed runs, so the pending run is at depth 2; the candidate has 3 retries and
///   used 2, so it starts 2 more runs (one retry, then the limit fails the job): runs left
///   2. Depth 2 has 3 trials (< 5), depth 3 none: both back off to the class at any depth,
///   4/9. pSucceeded = 1 − (5/9)² = 56/81; its bounds the same over Wilson(4, 9) = (0.18878,
///   0.73335). Expected compute: m = the mean runFor of the runs after a preemption, (3 ×
///   (10m + 1h) + 2 × 10m + 1h) / 9 = 290m / 9 = 1933.3 s, times 1 + 5/9: 3007.4 s.
/// - c1: 1 failed run (depth 1), 3 runs left (retries 2 and 3, then the limit). Depth 1 has
///   its own 5 trials, 5/5 (`cuda_error@1`); deeper ones back off to the class, 5/5.
///   pSucceeded = 1; low = 1 − (1 − 0.56552)³; expected compute m = 1h: 3600 s (the later
///   runs never start, by the estimate).
///
/// expectedRescued = 2 × 56/81 + 1 = 2.3827; expectedCompute = 2 × 3007.4 + 3600 s = 2h40m15s.
/// u1 and lease1 are unchanged.
pub(crate) fn history() -> String {
    let mut lines = Vec::new();
    for id in ["r1", "r2", "r3"] {
        lines.push(job(id, &[PREEMPTED, PREEMPTED, OK]));
    }
    for i in 1..=5 {
        lines.push(job(&format!("cuda{i}"), &[CUDA, OK]));
    }
    lines.push(job("l1", &[EXIT2, OK]));
    lines.push(job("l2", &[EXIT2, OK]));
    lines.push(job("p1", &[PREEMPTED, PREEMPTED]));
    lines.push(job("p2", &[PREEMPTED, PREEMPTED]));
    lines.push(job("c1", &[CUDA]));
    lines.push(job("u1", &[OK]));
    lines.push(job("lease1", &[LEASE, PREEMPTED, OK]));
    lines.join("\n") + "\n"
}

fn setup(dir: &Path, history: &str) {
    crate::support::write_what_if(dir, OLD, NEW, QUEUE, history);
}

fn simulate(dir: &Path, args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path())
        .current_dir(dir)
        .args(["simulate", "-f", "new", "--history", "h.jsonl"])
        .args(args)
        .output()
        .unwrap()
}

fn compare(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--baseline", "old"];
    all.extend_from_slice(args);
    simulate(dir, &all)
}

fn close(v: &serde_json::Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-9)
}

/// Wilson 95% of 4/9 and of 5/5, as tabled.
const LOW_4_9: f64 = 0.188_778_5;
const HIGH_4_9: f64 = 0.733_348_7;
const LOW_5_5: f64 = 0.565_517_5;

#[test]
fn json_estimates_are_worked_out_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = compare(dir.path(), &["-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["comparison"];
    let jobs = c["changedJobs"].as_array().unwrap();
    let by_id = |id: &str| jobs.iter().find(|j| j["job"] == id).unwrap();
    let near = |v: &serde_json::Value, want: f64| v.as_f64().is_some_and(|x| (x - want).abs() < 1e-6);
    let p1 = &by_id("p1")["candidate"]["estimate"];
    assert_eq!(
        (p1["trials"].as_u64(), p1["basis"].as_str(), p1["runsLeft"].as_u64()),
        (Some(9), Some("condition:Preempted"), Some(2)),
        "{p1}"
    );
    assert!(close(&p1["pNextRun"], 4.0 / 9.0), "{p1}");
    assert!(close(&p1["pSucceeded"], 56.0 / 81.0), "{p1}");
    assert!(near(&p1["low"], 1.0 - (1.0 - LOW_4_9).powi(2)), "{p1}");
    assert!(near(&p1["high"], 1.0 - (1.0 - HIGH_4_9).powi(2)), "{p1}");
    let m = 290.0 * 60.0 / 9.0;
    assert!(close(&p1["expectedCompute"], m * (1.0 + 5.0 / 9.0)), "{p1}");
    let c1 = &by_id("c1")["candidate"]["estimate"];
    assert_eq!(
        (c1["trials"].as_u64(), c1["basis"].as_str(), c1["runsLeft"].as_u64()),
        (Some(5), Some("cuda_error@1"), Some(3)),
        "{c1}"
    );
    assert!(
        close(&c1["pSucceeded"], 1.0) && close(&c1["high"], 1.0) && close(&c1["pNextRun"], 1.0),
        "{c1}"
    );
    assert!(near(&c1["low"], 1.0 - (1.0 - LOW_5_5).powi(3)), "{c1}");
    assert!(close(&c1["expectedCompute"], 3600.0), "{c1}");
    // Only the Pending side carries one; a job that is not Pending has none.
    assert!(by_id("p1")["baseline"].get("estimate").is_none());
    assert!(by_id("r1")["candidate"].get("estimate").is_none());
    let e = &c["estimate"];
    assert!(close(&e["expectedRescued"], 2.0 * 56.0 / 81.0 + 1.0), "{e}");
    assert!(
        near(
            &e["low"],
            2.0 * (1.0 - (1.0 - LOW_4_9).powi(2)) + 1.0 - (1.0 - LOW_5_5).powi(3)
        ),
        "{e}"
    );
    assert!(near(&e["high"], 2.0 * (1.0 - (1.0 - HIGH_4_9).powi(2)) + 1.0), "{e}");
    assert!(close(&e["expectedCompute"], 2.0 * m * 14.0 / 9.0 + 3600.0), "{e}");
    assert_eq!(e["withoutEstimate"], 0);
    // The compute object: recorded runs added and removed, and the expected ones, in
    // seconds; no job requests anything, so every hour is 0 and the changed jobs with
    // compute (r*, cuda*, l*) and the 3 Pending ones have no requests.
    let compute = &c["compute"];
    assert_eq!(
        (compute["added"].as_str(), compute["removed"].as_str()),
        (Some("8h"), Some("2h"))
    );
    assert!(close(&compute["expected"], 2.0 * m * 14.0 / 9.0 + 3600.0), "{compute}");
    assert_eq!(
        compute["gpuHours"],
        serde_json::json!({"added": 0.0, "removed": 0.0, "expected": 0.0, "recorded": 0.0})
    );
    // Every recorded run (the 12h22m the candidate replays, and l1's and l2's second runs,
    // 1h each, which it never starts), and what each side replays of it.
    assert_eq!(compute["recorded"], "14h22m");
    assert_eq!(
        compute["replayed"],
        serde_json::json!({"baseline": "6h22m", "candidate": "12h22m"})
    );
    assert_eq!(compute["withoutResources"], 13);
    assert_eq!(
        (
            c["transitions"]["rescued"].as_u64(),
            c["transitions"]["lost"].as_u64(),
            c["transitions"]["toPending"].as_u64()
        ),
        (Some(8), Some(2), Some(3))
    );
}

/// Changed jobs from the first Pending one on are held back until the rates are final:
/// from stdin (read once, never again) the records are the same as from the file.
#[test]
fn estimates_from_stdin_are_the_same_as_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let home = temp_home();
    let piped = retryctl(home.path())
        .current_dir(dir.path())
        .args([
            "simulate",
            "-f",
            "new",
            "--baseline",
            "old",
            "--history",
            "-",
            "-o",
            "jsonl",
        ])
        .write_stdin(history())
        .output()
        .unwrap();
    let file = compare(dir.path(), &["-o", "jsonl"]);
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(piped.stdout).unwrap(),
        String::from_utf8(file.stdout).unwrap()
    );
}

#[test]
fn a_class_under_five_trials_takes_the_pooled_rate_and_no_trials_no_estimate() {
    let dir = tempfile::tempdir().unwrap();
    // Preempted at depth 1: q1's P→ok and p1's P→P, 2 trials, 1 success. p1 is Pending at
    // depth 2 with 2 runs left: depth 2 and 3 have no trials, the class has 2 (< 5), every
    // class at those depths none: every class at any depth, 1/2. pSucceeded = 1 − ½ × ½.
    setup(
        dir.path(),
        &[job("q1", &[PREEMPTED, OK]), job("p1", &[PREEMPTED, PREEMPTED])].join("\n"),
    );
    let v: serde_json::Value = serde_json::from_slice(&compare(dir.path(), &["-o", "json"]).stdout).unwrap();
    let e = &v["comparison"]["changedJobs"][0]["candidate"]["estimate"];
    assert_eq!(
        (e["trials"].as_u64(), e["basis"].as_str(), e["runsLeft"].as_u64()),
        (Some(2), Some("all"), Some(2)),
        "{e}"
    );
    assert!(close(&e["pNextRun"], 0.5) && close(&e["pSucceeded"], 0.75), "{e}");
    // No failed run followed by another: no estimate at all (null), and it is counted.
    setup(dir.path(), &job("c1", &[CUDA]));
    let v: serde_json::Value = serde_json::from_slice(&compare(dir.path(), &["-o", "json"]).stdout).unwrap();
    let c = &v["comparison"];
    assert_eq!(c["changedJobs"][0]["candidate"]["estimate"], serde_json::Value::Null);
    assert_eq!(c["estimate"]["withoutEstimate"], 1);
    assert!(close(&c["estimate"]["expectedRescued"], 0.0));
}

#[test]
fn markdown_plan_for_a_pull_request() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = compare(dir.path(), &["-o", "markdown", "--exit-code"]);
    assert_eq!(
        format_output(&out),
        r"exit: 1
--- stdout
## retryctl simulate: what the candidate policies change

**Plan: 8 rescued, 2 lost, 3 → Pending, 0 retried differently; 13 of 15 jobs change.**

| baseline → candidate | jobs |
|---|---:|
| Succeeded → Failed (lost) | 2 |
| Failed → Succeeded (rescued) | 8 |
| Failed → Pending (would retry past the end of the recorded history) | 3 |
| same outcome, other retry count | 0 |
| unchanged | 2 |

| | added | removed |
|---|---:|---:|
| retries | +11 | −2 |
| delay | +5s | −0s |
| compute (`runFor` of runs one side starts and the other does not) | +8h | −2h |

**Record:** 14h22m recorded; replayed: 6h22m by the baseline, 12h22m by the candidate.

**Baseline:** today's policy explains 7 of 15 jobs (8 contradict it: `r1`, `r2`, `r3`, `cuda1`, `cuda2` and 3 more).

**Estimate:** ≈ 2.4 (1.6–2.9) of 3 jobs Failed → Pending would succeed over the runs the candidate has left.

**Expected:** ≈ 2h40m15s more run time for the 3 jobs Pending in the candidate.

### Changed jobs (13 of 13)

| job | baseline | candidate | transition | estimate (succeeds over the runs left) |
|---|---|---|---|---|
| `r1` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |
| `r2` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |
| `r3` | Failed after 1 retry | Succeeded after 2 retries | rescued |  |
| `cuda1` | Failed after 0 retries | Succeeded after 1 retry | rescued |  |
| `cuda2` | Failed after 0 retries | Succeeded after 1 retry | rescued |  |
| `cuda3` | Failed after 0 retries | Succeeded after 1 retry | rescued |  |
| `cuda4` | Failed after 0 retries | Succeeded after 1 retry | rescued |  |
| `cuda5` | Failed after 0 retries | Succeeded after 1 retry | rescued |  |
| `l1` | Succeeded after 1 retry | Failed after 0 retries | lost |  |
| `l2` | Succeeded after 1 retry | Failed after 0 retries | lost |  |
| `p1` | Failed after 1 retry | Pending after 2 retries | toPending | 69% (34–93%) over 2 runs left; next run 44%, basis condition:Preempted: 9 trials |
| `p2` | Failed after 1 retry | Pending after 2 retries | toPending | 69% (34–93%) over 2 runs left; next run 44%, basis condition:Preempted: 9 trials |
| `c1` | Failed after 0 retries | Pending after 1 retry | toPending | 100% (92–100%) over 3 runs left; next run 100%, basis cuda\_error@1: 5 trials |

<sub>Estimates: each Pending job's chance to succeed over the runs its policy has left (the engine followed on copies of its last failed run until it fails the job, at most 100 runs), from the share of failed runs of its failure class (its last failed run's category, else exit code, else condition) at the same depth (failed runs so far, 5+ together) whose next run succeeded, in this history; a level with fewer than 5 trials backs off to the class at any depth, then all classes at that depth, then all; (low–high): Wilson 95% bounds; runs assumed independent given class and depth, and a class the recorded policies never retried has no trials.</sub>
--- stderr
"
    );
}

/// 25 rescued, 3 lost, 22 → Pending: the table lists the first 20 of each transition,
/// says how many more, and `--all-changes` lists all 50; the records are the same either
/// way.
#[test]
fn the_table_lists_a_screenful_per_transition_unless_all_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..25 {
        lines.push(job(&format!("r{i:02}"), &[PREEMPTED, PREEMPTED, OK]));
        if i < 3 {
            lines.push(job(&format!("l{i:02}"), &[EXIT2, OK]));
        }
        if i < 22 {
            lines.push(job(&format!("p{i:02}"), &[PREEMPTED, PREEMPTED]));
        }
    }
    setup(dir.path(), &(lines.join("\n") + "\n"));
    let out = compare(dir.path(), &[]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let listed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("  ~ ")).collect();
    assert_eq!(listed.len(), 43, "{stdout}");
    // Preempted at depth 1: r* and p* each P→P, 47 trials, no success; at depth 2: r*'s
    // P→ok, 25 of 25. A p* job is Pending at depth 2 with 2 runs left (retry 3, then the
    // limit): its own depth's rate, 25/25 = 100%; low = 1 − (1 − 0.86681)(1 − 0.24749), the
    // Wilson bounds of 25/25 at depth 2 and of the class at any depth (25/72) at depth 3:
    // 0.8998. 22 × 1.0 = 22.0 expected.
    let estimate =
        "(toPending; estimate 100% (90–100%) over 2 runs left; next run 100%, basis condition:Preempted@2: 25 trials)";
    let expected_head = [
        "jobs the candidate policies change (baseline → candidate):".to_string(),
        "  ~ r00: Failed after 1 retry → Succeeded after 2 retries  (rescued)".to_string(),
    ];
    assert_eq!(stdout.lines().take(2).collect::<Vec<_>>(), expected_head);
    let tail: Vec<&str> = stdout.lines().skip(1).collect();
    let at = |needle: &str| {
        tail.iter()
            .position(|l| *l == needle)
            .unwrap_or_else(|| panic!("no `{needle}` in\n{stdout}"))
    };
    // Each group in input order, cut after 20, then its count; the groups in plan order.
    assert_eq!(
        tail[19],
        "  ~ r19: Failed after 1 retry → Succeeded after 2 retries  (rescued)"
    );
    assert_eq!(tail[20], "  … and 5 more rescued");
    assert_eq!(
        tail[21],
        "  ~ l00: Succeeded after 1 retry → Failed after 0 retries  (lost)"
    );
    assert_eq!(
        tail[23],
        "  ~ l02: Succeeded after 1 retry → Failed after 0 retries  (lost)"
    );
    // Past 160 characters on one line, a job's estimate goes on the line under it.
    assert_eq!(tail[24], "  ~ p00: Failed after 1 retry → Pending after 2 retries");
    assert_eq!(tail[25], format!("      {estimate}"));
    assert_eq!(tail[62], "  ~ p19: Failed after 1 retry → Pending after 2 retries");
    assert_eq!(tail[63], format!("      {estimate}"));
    assert_eq!(tail[64], "  … and 2 more toPending");
    assert_eq!(
        tail[65],
        "  (the first 20 of each transition; --all-changes lists every one)"
    );
    assert_eq!(tail[66], "");
    assert_eq!(
        tail[67],
        "Plan: 25 rescued, 3 lost, 22 → Pending, 0 retried differently; 50 of 50 jobs change."
    );
    at("  estimate:  ≈ 22.0 (19.8–22.0) of 22 jobs Failed → Pending would succeed over the runs the candidate has left");

    let all = String::from_utf8(compare(dir.path(), &["--all-changes"]).stdout).unwrap();
    let listed: Vec<&str> = all.lines().filter(|l| l.starts_with("  ~ ")).collect();
    assert_eq!(listed.len(), 50);
    // In input order, as replayed: r00, l00, p00, r01, …
    assert!(
        listed[0].starts_with("  ~ r00:") && listed[1].starts_with("  ~ l00:") && listed[2].starts_with("  ~ p00:")
    );
    assert!(!all.contains("more rescued") && !all.contains("--all-changes lists"));
    // The plan's totals are the same either way.
    assert_eq!(all.split("\nPlan:").nth(1), stdout.split("\nPlan:").nth(1));
    // The records do not depend on the table's flag.
    for format in ["json", "jsonl", "yaml", "markdown", "html"] {
        assert_eq!(
            compare(dir.path(), &["-o", format]).stdout,
            compare(dir.path(), &["-o", format, "--all-changes"]).stdout,
            "{format}"
        );
    }
}

#[test]
fn all_changes_needs_baseline() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = simulate(dir.path(), &["--all-changes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "the following required arguments were not provided:\n  <--baseline <PATH>...|--baseline-from-cluster>"
        ),
        "{}",
        format_output(&out)
    );
}

#[test]
fn markdown_report_of_a_plain_replay() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = simulate(dir.path(), &["-o", "markdown"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // 30 runs: l1 and l2 end at their first run (the second is reported as a
    // contradiction). Retries: r* 2 each, cuda* 1, p* 2, c1 1, lease1 1 (its returned lease
    // is none) = 17; a preemption's retry waits out the 1s grace period: 11 of them.
    // Compute, the runFor of every run started: r* 10m + 10m + 1h each (4h20m), cuda* 5m +
    // 1h (5h25m), l* 1m (2m), p* 20m (40m), c1 5m, u1 1h, lease1 0 + 10m + 1h: 12h22m
    // replayed; the record holds l1's and l2's second runs too (2 runs, 2h): 14h22m.
    assert!(stdout.starts_with("## retryctl simulate: 15 jobs (32 runs recorded, 30 replayed)\n\n| outcome | jobs |\n|---|---:|\n| Succeeded | 10 |\n| Failed | 2 |\n| Cancelled | 0 |\n| Pending | 3 |\n\n**Retries granted:** 17 · **delay added:** 11s · **compute:** 14h22m recorded, 12h22m replayed\n"), "{stdout}");
    assert!(
        stdout.contains("| `p/0` | 11 | 0 |\n| `p/1` | 0 | 2 |\n| `p/2` | 6 | 0 |\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| failure class | trials | next run succeeded | rate (any depth) | Pending jobs |\n|---|---:|---:|---|---:|\n\
             | `cuda_error` | 5 | 5 | 100% (57–100%), basis cuda\\_error: 5 trials | 1 |\n\
             | `exit:2` | 2 | 2 | 69% (44–86%), basis all: 16 trials | 0 |\n\
             | `condition:Preempted` | 9 | 4 | 44% (19–73%), basis condition:Preempted: 9 trials | 2 |\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("**Estimate:** ≈ 2.4 (1.6–2.9) of 3 jobs Pending would succeed over the runs the policies have left, ≈ 2h40m15s more run time."),
        "{stdout}"
    );
}

/// The page stands alone: nothing fetched, no script needed.
fn assert_self_contained(html: &str) {
    for banned in ["http://", "https://", "<script", "<link", "<img", "url(", "@import"] {
        assert!(!html.contains(banned), "the page has `{banned}`");
    }
}

/// Pixels whose colour is within `by` of `rgb` in each channel.
fn count_near(img: &png::Image, rgb: [u8; 3], by: u8) -> usize {
    img.pixels
        .iter()
        .filter(|p| p.iter().zip(rgb).all(|(a, b)| a.abs_diff(b) <= by))
        .count()
}

/// Renders `page` in Chromium and checks that a person sees a page: most of the pixels are
/// the background, but the headline's text, the cards' coloured borders and the chart's
/// bars are there; saves the screenshot under the test target dir for people to look at.
fn render(browser: &Path, page: &Path, name: &str, texts: &[&str]) -> png::Image {
    let shot = chromium::screenshot(browser, page, 1280, 1600);
    fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.png")),
        &shot,
    )
    .unwrap();
    let img = png::decode(&shot).unwrap();
    assert_eq!((img.width, img.height), (1280, 1600));
    // The page's background and the sections' white (apart by 10, 8 and 5 in each channel).
    let background = count_near(&img, [0xf5, 0xf7, 0xfa], 2);
    let white = count_near(&img, [0xff, 0xff, 0xff], 2);
    let ink = img.pixels.len() - background - white;
    // Not blank: a blank or unstyled page is one colour (or white with black text only).
    assert!(background > img.pixels.len() / 10, "no page background: {background}");
    assert!(white > img.pixels.len() / 10, "no card/section: {white}");
    assert!(ink > img.pixels.len() / 100, "hardly anything drawn: {ink} pixels");
    let dom = chromium::dump_dom(browser, page);
    for t in texts {
        assert!(dom.contains(t), "`{t}` not in the rendered page");
    }
    img
}

#[test]
fn html_plan_renders_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = compare(dir.path(), &["-o", "html"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let html = String::from_utf8(out.stdout).unwrap();
    assert_self_contained(&html);
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    // The numbers, the estimate (marked as such, the method once) and every changed job.
    for t in [
        "Plan: 8 rescued, 2 lost, 3 → Pending, 0 retried differently; 13 of 15 jobs change.",
        "≈ 2.4 of 3 Failed → Pending would succeed over the runs left (estimate)",
        "<td class=\"n add\">+11</td><td class=\"n rem\">−2</td>",
        "<code>condition:Preempted</code>",
        "69% <small>(34–93%) · 2 runs left, next 44% · condition:Preempted · 9 trials</small>",
        "100% <small>(92–100%) · 3 runs left, next 100% · cuda_error@1 · 5 trials</small>",
        "44% <small>(19–73%) · condition:Preempted · 9 trials</small>",
        "<span class=\"est\">≈ 2h40m15s</span> more run time expected for the 3 jobs Pending in the candidate (estimate)",
    ] {
        assert!(html.contains(t), "`{t}` not in the page");
    }
    assert_eq!(html.matches("<b>Estimates</b>").count(), 1);
    for id in ["r1", "cuda5", "l2", "p1", "c1"] {
        assert!(html.contains(&format!("<tr><td><code>{id}</code></td>")), "{id}");
    }
    // p1's timeline: both sides retry run 0; the baseline fails run 1 for good, the
    // candidate retries it and would start a run past the end of the record.
    assert!(html.contains(
        "<div><em>base</em><i class=\"R\" title=\"run 0 · condition:Preempted · retried\"></i><i class=\"F\" title=\"run 1 · condition:Preempted · failed for good\"></i></div>\
         <div><em>cand</em><i class=\"R\" title=\"run 0 · condition:Preempted · retried\"></i><i class=\"R\" title=\"run 1 · condition:Preempted · retried\"></i><i class=\"P\" title=\"the next run: past the end of the record\"></i></div>"
    ));
    let Some(browser) = chromium::chromium() else { return };
    let page = dir.path().join("plan.html");
    fs::write(&page, &html).unwrap();
    let img = render(
        &browser,
        &page,
        "report-plan",
        &[
            "What the candidate policies change",
            "By failure class",
            "By rule",
            "Changed jobs",
        ],
    );
    // The cards' top borders and the transition bars, in their colours.
    for (name, rgb) in [
        ("rescued", [0x1f, 0x9d, 0x55]),
        ("lost", [0xd6, 0x45, 0x45]),
        ("pending", [0xd9, 0x82, 0x2b]),
    ] {
        let n = count_near(&img, rgb, 24);
        assert!(n > 2_000, "hardly any {name} colour: {n}");
    }
}

#[test]
fn html_report_of_a_plain_replay_renders_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &history());
    let out = simulate(dir.path(), &["-o", "html"]);
    assert_eq!(out.status.code(), Some(0));
    let html = String::from_utf8(out.stdout).unwrap();
    assert_self_contained(&html);
    for t in [
        "15 jobs (32 runs recorded, 30 replayed) replayed",
        "<code>p/0</code>",
        "<code>cuda_error</code>",
        "≈ 2.4 would succeed over the runs left, ≈ 2h40m15s more run time (estimate)",
        "Compute: 14h22m recorded, 12h22m replayed.",
        "Expectations: all met.",
    ] {
        assert!(html.contains(t), "`{t}` not in the page");
    }
    let Some(browser) = chromium::chromium() else { return };
    let page = dir.path().join("replay.html");
    fs::write(&page, &html).unwrap();
    render(
        &browser,
        &page,
        "report-replay",
        &[
            "Replay of the failure history",
            "Decisions per rule",
            "By failure class",
        ],
    );
}

/// Many changed jobs: the page lists a bounded number per transition and says so.
#[test]
fn html_lists_at_most_500_changed_jobs_per_transition() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = (0..1200).map(|i| job(&format!("l{i}"), &[EXIT2, OK])).collect();
    setup(dir.path(), &(lines.join("\n") + "\n"));
    let html = String::from_utf8(compare(dir.path(), &["-o", "html"]).stdout).unwrap();
    assert_eq!(html.matches("<tr><td><code>l").count(), 500);
    assert!(html.contains("<span class=\"cnt\">(Succeeded → Failed) · 500 listed of 1,200</span>"));
    assert!(html.contains("… and 700 more lost not listed"));
    let md = String::from_utf8(compare(dir.path(), &["-o", "markdown"]).stdout).unwrap();
    assert!(md.contains("### Changed jobs (50 of 1200)"));
    assert!(md.contains("\n… and 1150 more not listed (1150 lost); `-o json` lists every one.\n"));
}

/// A timeline of more than 8 runs gets a row of its own under its job, 60 runs at most
/// (the first 40 and the last 20, with the count between).
#[test]
fn long_timelines_get_a_row_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<&str> = std::iter::repeat_n(PREEMPTED, 99).chain([OK]).collect();
    setup(
        dir.path(),
        &(job("long", &runs) + "\n" + &job("short", &[PREEMPTED, PREEMPTED, OK]) + "\n"),
    );
    let out = compare(dir.path(), &["-o", "html"]);
    let html = String::from_utf8(out.stdout).unwrap();
    let long = html.split("<tr><td><code>long</code>").nth(1).unwrap();
    let (row, rest) = long.split_once("</tr>\n").unwrap();
    assert!(row.ends_with("<td class=\"tl\"><small>below</small></td>"), "{row}");
    let below = rest.split("</tr>\n").next().unwrap();
    assert!(below.starts_with("<tr class=\"more\"><td></td><td colspan=\"5\" class=\"tl\"><div><em>base</em>"));
    // Per side: 60 boxes and the gap of 40 runs after the 40th.
    assert_eq!(below.matches("<i class=\"").count(), 2 * 61, "{below}");
    assert_eq!(
        below
            .matches("<i class=\"G\" title=\"40 runs not shown\">+40</i>")
            .count(),
        2
    );
    // (Both sides ended by run 3: old at its one retry, new at its three.)
    assert!(below.contains("title=\"run 39 · condition:Preempted · not started\"></i><i class=\"G\""));
    assert!(below.contains("+40</i><i class=\"N\" title=\"run 80 · condition:Preempted · not started\">"));
    assert!(below.contains("<i class=\"F\" title=\"run 3 · condition:Preempted · failed for good\">"));
    // A short one stays in its cell.
    let short = html.split("<tr><td><code>short</code>").nth(1).unwrap();
    assert!(short
        .split_once("</tr>\n")
        .unwrap()
        .0
        .contains("<td class=\"tl\"><div><em>base</em>"));
}
