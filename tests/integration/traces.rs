//! Real clusters' histories: what a public GPU cluster's trace,
//! converted to FailureHistory lines, asks of every verb — times past the nanosecond range,
//! ids that no pod name may hold, no node and no reason in any run, unreadable lines said
//! alike by `simulate`, `tune` and `suggest`. `testdata/trace/philly.jsonl` is such a trace
//! (scripts/gen-trace.py).

use std::path::Path;

use crate::support::{format_output, retryctl, temp_home};

/// The comparing verbs over `p.yaml` and `h.jsonl` (written by each test): tune's sweep and
/// suggest against the same baseline as `simulate --baseline p.yaml`.
const TUNE: &[&str] = &[
    "tune",
    "-f",
    "p.yaml",
    "--baseline",
    "p.yaml",
    "--vary",
    "p:spec.retryLimit=1..2",
];
const SUGGEST: &[&str] = &["suggest", "--baseline", "p.yaml"];

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// A time past 2262-04-11T23:47:16Z is out of range, said as such (not as text of the
/// wrong shape), in a JSON line (the fast decoder gives up, the strict one words it), in a
/// YAML document and in a flag; the last second of the range is read.
#[test]
fn a_time_past_the_nanosecond_range_is_out_of_range_not_invalid() {
    let home = temp_home();
    let lines = write(
        home.path(),
        "late.jsonl",
        concat!(
            r#"{"job":{"id":"late","queue":"q","submittedAt":"2300-01-01T00:00:00Z"},"runs":[{"runFor":"1h","outcome":"succeeded"}]}"#,
            "\n",
            r#"{"job":{"id":"edge","queue":"q","submittedAt":"2262-04-11T23:47:16Z"},"runs":[{"outcome":"succeeded"}]}"#,
            "\n",
            r#"{"job":{"id":"run","queue":"q","submittedAt":"2026-01-01T00:00:00Z"},"runs":[{"startedAt":"2262-04-11T23:47:17Z","outcome":"succeeded"}]}"#,
            "\n",
        ),
    );
    let out = retryctl(home.path())
        .args(["simulate", "--history", &lines, "-o", "jsonl"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        said,
        [
            format!("error: {lines}:1: job.submittedAt: time `2300-01-01T00:00:00Z` is past the latest time retryctl reads, 2262-04-11T23:47:16Z (the nanoseconds since 1970 that 64 bits hold)"),
            format!("error: {lines}:3: runs[0].startedAt: start `2262-04-11T23:47:17Z` is past the latest time retryctl reads, 2262-04-11T23:47:16Z (the nanoseconds since 1970 that 64 bits hold)"),
        ],
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(r#""submittedAt":"2262-04-11T23:47:16Z""#),
        "the last second is read: {stdout}"
    );

    let yaml = write(
        home.path(),
        "early.yaml",
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: early, submittedAt: 1677-09-21T00:12:43Z}\nruns: [{outcome: succeeded}]\n",
    );
    let out = retryctl(home.path())
        .args(["simulate", "--history", &yaml])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("job.submittedAt: time `1677-09-21T00:12:43Z` is before the earliest time retryctl reads, 1677-09-21T00:12:44Z (the nanoseconds since 1970 that 64 bits hold)"),
        "{stderr}"
    );
    assert!(!stderr.contains("RFC 3339"), "{stderr}");

    let out = retryctl(home.path())
        .args(["simulate", "--history", &lines, "--backtest-at", "2262-04-11T23:47:17Z"])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--backtest-at` `2262-04-11T23:47:17Z` is past the latest time retryctl reads, 2262-04-11T23:47:16Z (the nanoseconds since 1970 that 64 bits hold)\n"
    );
}

/// A run that starts six centuries after its job's submission, both inside the range, starts
/// after it: no contradiction said (the difference passes 64 signed bits, and was read as
/// "before").
#[test]
fn a_run_centuries_after_its_submission_starts_after_it() {
    let home = temp_home();
    let lines = write(
        home.path(),
        "span.jsonl",
        concat!(
            r#"{"job":{"id":"old","queue":"q","submittedAt":"1678-01-01T00:00:00Z"},"runs":[{"startedAt":"2262-01-01T00:00:00Z","runFor":"1s","outcome":"failed","conditions":["Preempted"]},{"outcome":"succeeded"}]}"#,
            "\n",
        ),
    );
    let policy = write(
        home.path(),
        "p.yaml",
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n",
    );
    let out = retryctl(home.path())
        .args(["simulate", "--history", &lines, "-f", &policy, "-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(!stderr.contains("contradicts"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["contradictedJobs"], 0, "{v}");
}

/// The trace the tests read is what its script writes (scripts/gen-trace.py): regenerated,
/// not edited by hand.
#[test]
fn the_trace_is_its_scripts_output() {
    let out = std::process::Command::new("python3")
        .arg(crate::support::root().join("scripts/gen-trace.py"))
        .output()
        .expect("python3 runs scripts/gen-trace.py");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let committed = std::fs::read(crate::support::root().join("testdata/trace/philly.jsonl")).unwrap();
    assert!(
        out.stdout == committed,
        "testdata/trace/philly.jsonl differs from scripts/gen-trace.py's output"
    );
}

/// The trace's own figures, counted from its lines here (not by retryctl): its runs, and the
/// run time and GPU time of every run of every job.
struct Raw {
    runs: u64,
    seconds: u64,
    gpu_seconds: u64,
}

fn raw(path: &Path) -> Raw {
    let text = std::fs::read_to_string(path).unwrap();
    let mut raw = Raw {
        runs: 0,
        seconds: 0,
        gpu_seconds: 0,
    };
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let gpus: u64 = v["job"]["resources"]["gpu"].as_str().unwrap().parse().unwrap();
        for run in v["runs"].as_array().unwrap() {
            // The script writes `1h2m3s`, zero units left out.
            let (mut secs, mut n) = (0, 0);
            for c in run["runFor"].as_str().unwrap().chars() {
                match c {
                    '0'..='9' => n = n * 10 + u64::from(c.to_digit(10).unwrap()),
                    'h' | 'm' | 's' => {
                        secs += n * [3600, 60, 1]["hms".find(c).unwrap()];
                        n = 0;
                    }
                    _ => panic!("{c}"),
                }
            }
            raw.runs += 1;
            raw.seconds += secs;
            raw.gpu_seconds += secs * gpus;
        }
    }
    raw
}

fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    [(h, "h"), (m, "m"), (s, "s")]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, u)| format!("{n}{u}"))
        .collect()
}

const RETRY_3: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  defaultAction: Retry\n";

/// `compute: … recorded` is the whole record's: every run of the trace, the runs after a
/// job's replayed end included, as counted from its lines; what a side starts is
/// `replayed`, and both are said where they differ, in simulate, simulate --baseline, tune
/// and suggest, in the table and in JSON.
#[test]
fn the_record_and_what_a_side_replays_are_said_apart() {
    let home = temp_home();
    let trace = crate::support::root().join("testdata/trace/philly.jsonl");
    let raw = raw(&trace);
    let trace = trace.to_str().unwrap().to_string();
    let recorded = go_duration(raw.seconds);
    let gpu_hours = format!("{:.1}", raw.gpu_seconds as f64 / 3600.0);
    let new = write(home.path(), "new.yaml", RETRY_3);
    let old = write(
        home.path(),
        "old.yaml",
        &RETRY_3.replace("retryLimit: 3", "retryLimit: 1"),
    );
    let run = |args: &[&str]| {
        let out = retryctl(home.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };

    // No policy: every job ends at its first run, and the runs after it are the record's.
    let table = run(&["simulate", "--history", &trace]);
    let line = |text: &str, label: &str| -> String {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` in {text}"))
            .trim()
            .to_string()
    };
    assert_eq!(
        line(&table, "jobs:"),
        format!("jobs:      3000 ({} runs recorded, 3000 replayed)", raw.runs)
    );
    assert!(
        line(&table, "compute:").starts_with(&format!("compute:   {recorded} recorded ({gpu_hours} GPU-hours), ")),
        "{table}"
    );
    let json: serde_json::Value = serde_json::from_str(&run(&["simulate", "--history", &trace, "-o", "json"])).unwrap();
    let compute = &json["summary"]["compute"];
    assert_eq!(compute["recorded"], recorded.as_str(), "{compute}");
    let hours = |v: &serde_json::Value| v.as_f64().unwrap();
    assert!(
        (hours(&compute["gpuHours"]["recorded"]) - raw.gpu_seconds as f64 / 3600.0).abs() < 1e-6,
        "{compute}"
    );
    assert_eq!(json["summary"]["runsRecorded"], raw.runs);
    assert_ne!(compute["replayed"], compute["recorded"], "{compute}");

    // A plan: the record, and each side's replayed runs.
    let plan = run(&["simulate", "-f", &new, "--baseline", &old, "--history", &trace]);
    let record = line(&plan, "record:");
    assert!(
        record.starts_with(&format!(
            "record:    {recorded} recorded ({gpu_hours} GPU-hours); replayed: "
        )),
        "{plan}"
    );
    let json: serde_json::Value = serde_json::from_str(&run(&[
        "simulate",
        "-f",
        &new,
        "--baseline",
        &old,
        "--history",
        &trace,
        "-o",
        "json",
    ]))
    .unwrap();
    let compute = &json["comparison"]["compute"];
    assert_eq!(compute["recorded"], recorded.as_str(), "{compute}");
    assert!(
        (hours(&compute["gpuHours"]["recorded"]) - raw.gpu_seconds as f64 / 3600.0).abs() < 1e-6,
        "{compute}"
    );
    let replayed = &compute["replayed"];
    assert_eq!(
        record,
        format!(
            "record:    {recorded} recorded ({gpu_hours} GPU-hours); replayed: {} by the baseline, {} by the candidate",
            replayed["baseline"].as_str().unwrap(),
            replayed["candidate"].as_str().unwrap()
        )
    );

    // tune: the baseline's line; suggest: its plan, and its JSON comparison as simulate's.
    let tune = run(&[
        "tune",
        "-f",
        &new,
        "--baseline",
        &old,
        "--history",
        &trace,
        "--vary",
        "p:spec.retryLimit=1..2",
    ]);
    assert_eq!(
        line(&tune, "compute:"),
        format!(
            "compute: {recorded} recorded ({gpu_hours} GPU-hours), {} replayed by the baseline",
            replayed["baseline"].as_str().unwrap()
        ),
        "{tune}"
    );
    // The trace's runs after a job's end contradict any baseline: the record is compared all
    // the same (`--max-contradictions 100%`, so that the verdict does not reject on them).
    let suggest = run(&[
        "suggest",
        "--history",
        &trace,
        "--baseline",
        &old,
        "--max-contradictions",
        "100%",
    ]);
    assert!(
        line(&suggest, "record:").starts_with(&format!(
            "record:    {recorded} recorded ({gpu_hours} GPU-hours); replayed: "
        )),
        "{suggest}"
    );
    let json: serde_json::Value = serde_json::from_str(&run(&[
        "suggest",
        "--history",
        &trace,
        "--baseline",
        &old,
        "--max-contradictions",
        "100%",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(
        json["suggest"]["proposal"]["comparison"]["compute"]["recorded"],
        recorded.as_str()
    );
}

/// A job line that cannot be read is handled alike by `simulate`, `tune` and `suggest`:
/// said on stderr and exit 3; with `--skip-invalid`, said as a warning, counted after the
/// answer, exit 0.
#[test]
fn unreadable_lines_are_exit_3_in_every_verb_or_skipped_and_counted() {
    let home = temp_home();
    let dir = home.path();
    write(
        dir,
        "p.yaml",
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  defaultAction: Retry\n---\napiVersion: armadaproject.io/v1\nkind: Queue\nname: q\nretryPolicies: [p]\n",
    );
    write(
        dir,
        "h.jsonl",
        concat!(
            r#"{"job":{"id":"a","queue":"q"},"runs":[{"runFor":"1h","containers":[{"exitCode":1}]},{"runFor":"1h","outcome":"succeeded"}]}"#,
            "\n",
            r#"{"job":{"id":"b","queue":"q""#,
            "\n",
            r#"{"job":{"id":"c","queue":"q"},"runs":[{"runFor":"1h","outcome":"wat"}]}"#,
            "\n",
            r#"{"job":{"id":"d","queue":"q"},"runs":[{"runFor":"1h","outcome":"succeeded"}]}"#,
            "\n",
        ),
    );
    let said = |level: &str| {
        format!(
            "{level}: h.jsonl:2: invalid JSON at column 28: EOF while parsing an object\n{level}: h.jsonl:3: runs[0].outcome: unknown value `wat`, expected one of `failed`, `succeeded`, `leaseReturned`, `cancelled`\n"
        )
    };
    for verb in [
        &["simulate", "-f", "p.yaml"][..],
        &["simulate", "-f", "p.yaml", "--baseline", "p.yaml"],
        TUNE,
        SUGGEST,
    ] {
        let run = |extra: &[&str]| {
            retryctl(dir)
                .current_dir(dir)
                .args(verb)
                .args(["--history", "h.jsonl", "-o", "json"])
                .args(extra)
                .output()
                .unwrap()
        };
        let out = run(&[]);
        assert_eq!(out.status.code(), Some(3), "{verb:?}: {}", format_output(&out));
        assert_eq!(String::from_utf8_lossy(&out.stderr), said("error"), "{verb:?}");
        let out = run(&["--skip-invalid"]);
        assert_eq!(out.status.code(), Some(0), "{verb:?}: {}", format_output(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            said("warning") + "note: 2 entries of the history could not be read and were skipped (--skip-invalid)\n",
            "{verb:?}"
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("the answer over the lines read");
    }
}

/// tune's COST comes from the exact sums: 3 retries of Go's longest duration that a
/// candidate removes are 7,686,141 hours, past the 5,124,095 hours that 64 bits of
/// nanoseconds hold, printed whole (it showed `-5124095h34m33.709551615s`), as
/// `simulate --baseline` prints the same sum.
#[test]
fn tunes_cost_is_the_exact_sum_past_64_bits() {
    let home = temp_home();
    let dir = home.path();
    let policy = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n---\napiVersion: armadaproject.io/v1\nkind: Queue\nname: q\nretryPolicies: [p]\n";
    write(dir, "today.yaml", policy);
    write(dir, "p.yaml", &policy.replace("retryLimit: 1", "retryLimit: 0"));
    let history: String = (0..3)
        .map(|j| format!("{{\"job\":{{\"id\":\"long-{j}\",\"queue\":\"q\"}},\"runs\":[{{\"runFor\":\"2562047h\",\"containers\":[{{\"exitCode\":1}}]}},{{\"runFor\":\"2562047h\",\"outcome\":\"succeeded\"}}]}}\n"))
        .collect();
    write(dir, "h.jsonl", &history);
    let out = retryctl(dir)
        .current_dir(dir)
        .args([
            "tune",
            "-f",
            "p.yaml",
            "--baseline",
            "today.yaml",
            "--history",
            "h.jsonl",
            "--vary",
            "p:spec.retryLimit=0..1",
        ])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 0
--- stdout
tune: 2 candidates over 3 jobs; baseline: the --baseline files
  varying: retryLimit
  constraints: lost ≤ 0, cost unbounded
  ID   retryLimit   EXPECTED   SUCCEEDED   PENDING   RESCUED   LOST       COST        FRONTIER
  2    1            3.0        3           0         0         0          +0s         yes
  1    0            0.0        0           0         0         3 (over)   -7686141h   yes
baseline: ≈ 3.0 expected successes (3 succeeded, 0 pending), cost +0s
  today's policy explains 3 of 3 jobs (none contradicts it)
recommended: none: no candidate within the constraints beats the baseline's expected successes or matches them for less cost; keep the baseline
(EXPECTED: succeeded + Σ the estimated chance of each Pending job; COST: compute added − removed + expected, against the baseline; * recommended)
(estimates: this history's share of failed runs whose next run succeeded, by failure class and depth; what they assume: docs/estimates.md)
--- stderr
"
    );
    let out = retryctl(dir)
        .current_dir(dir)
        .args([
            "simulate",
            "-f",
            "p.yaml",
            "--baseline",
            "today.yaml",
            "--history",
            "h.jsonl",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("  compute:   +0s added, -7686141h removed"), "{stdout}");
}

/// A sum past 2^128 (4,100 runs of Go's longest duration on 2^53 thousandths of a GPU) is
/// exit 3 in `tune` and `suggest` as in `simulate --baseline`, naming the figure.
#[test]
fn a_sum_past_128_bits_is_refused_by_tune_and_suggest_too() {
    let home = temp_home();
    let dir = home.path();
    write(
        dir,
        "p.yaml",
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n---\napiVersion: armadaproject.io/v1\nkind: Queue\nname: ml\nretryPolicies: [p]\n",
    );
    let history: String = (0..4100)
        .map(|j| format!("{{\"job\":{{\"id\":\"absurd-{j}\",\"queue\":\"ml\",\"resources\":{{\"gpu\":\"9007199254740\"}}}},\"runs\":[{{\"runFor\":\"2562047h\",\"outcome\":\"succeeded\"}}]}}\n"))
        .collect();
    write(dir, "h.jsonl", &history);
    let refused = "error: the GPU time recorded passes 340282366920938463463374607431768211455 nanoseconds × thousandths of a device (2^128 − 1), the most retryctl can add up; check the history's `runFor` and `resources`\n";
    for verb in [&["simulate", "-f", "p.yaml", "--baseline", "p.yaml"][..], TUNE, SUGGEST] {
        let out = retryctl(dir)
            .current_dir(dir)
            .args(verb)
            .args(["--history", "h.jsonl", "-o", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{verb:?}: {}", format_output(&out));
        assert_eq!(String::from_utf8_lossy(&out.stderr), refused, "{verb:?}");
    }
}

/// Ids as the cluster made them (`application_1506638472019_1503`: no pod name may hold
/// an underscore) are read, and one warning after the answer, with the count, says that
/// what depends on the pod's name is approximate for them; ids that can be part of a pod
/// name get none.
#[test]
fn ids_no_pod_name_may_hold_are_read_with_one_warning() {
    let home = temp_home();
    let trace = crate::support::root().join("testdata/trace/philly.jsonl");
    let trace = trace.to_str().unwrap();
    let warning = "warning: 3000 job ids of the history cannot be part of a pod name (`armada-<id>-0` must be a lowercase RFC 1123 name), the first `application_1506638472019_1503`: read all the same, the pod-name collisions and node anti-affinity replayed for them are approximate";
    for verb in [
        &["simulate"][..],
        &[
            "tune",
            "-f",
            "testdata/suggest/today.yaml",
            "--vary",
            "today:spec.retryLimit=1..2",
        ],
        &["suggest"],
    ] {
        let out = retryctl(home.path())
            .args(verb)
            .args(["--history", trace])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{verb:?}: {}", format_output(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said: Vec<&str> = stderr.lines().filter(|l| l.contains("pod name")).collect();
        assert_eq!(said, [warning], "{verb:?}");
    }
    let out = retryctl(home.path())
        .args(["simulate", "--history", "testdata/suggest/planted.jsonl"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("pod name"),
        "{}",
        format_output(&out)
    );
}

/// On a history with no node and no policy, suggest says what is not there: no run names a
/// node (not that no node is an outlier), and TODAY is the legacy path (not a rule named
/// `legacy_fail` and a share of runs). Its GPU-H counts each run once: at most the
/// history's GPU-hours.
#[test]
fn suggest_says_what_is_not_there_and_counts_each_hour_once() {
    let home = temp_home();
    let path = crate::support::root().join("testdata/trace/philly.jsonl");
    let raw = raw(&path);
    let trace = path.to_str().unwrap();
    let out = retryctl(home.path())
        .args(["suggest", "--history", trace])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("SIGNATURE"))
        .expect("the table");
    assert_eq!(
        lines[head..head + 2],
        [
            "SIGNATURE  RUNS  TRIALS  RETRY SUCCESS (95%)  GPU-H   TODAY                              PROPOSED",
            "unknown    2329  1688    28.1% (26.0–30.3%)   5747.5  Fail: no policy (the legacy path)  by the default: Retry ×5",
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("\nSuspect nodes: none (no run names a node).\n"),
        "{stdout}"
    );
    let out = retryctl(home.path())
        .args(["suggest", "--history", trace, "-o", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let signatures = v["suggest"]["signatures"].as_array().expect("signatures");
    let once: f64 = signatures.iter().map(|s| s["gpuHours"]["once"].as_f64().unwrap()).sum();
    assert!((once - 5747.5).abs() < 0.05, "{once}");
    assert!(
        once <= raw.gpu_seconds as f64 / 3600.0,
        "{once} > the history's GPU-hours"
    );
}

/// On a history with no reasons (every failure `unknown`), suggest proposes the policy's
/// default, learned from the pooled runs by the limit rule (docs/reference/suggest.md "The
/// policy's defaults"): the `(default)` row below `unknown`, the proposal line, the verdict
/// from the comparison, and `-o policy` in both dialects writing `defaultAction: Retry` with
/// the limit; json says the default, today's and how many signatures were pooled.
#[test]
fn with_no_reasons_suggest_proposes_the_default_that_pays() {
    let home = temp_home();
    let path = crate::support::root().join("testdata/trace/philly.jsonl");
    let trace = path.to_str().unwrap();
    let run = |extra: &[&str]| {
        let out = retryctl(home.path())
            .args(["suggest", "--history", trace])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = run(&[]);
    let lines: Vec<&str> = table.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("SIGNATURE"))
        .expect("the table");
    assert_eq!(
        lines[head + 1..head + 4],
        [
            "unknown    2329  1688    28.1% (26.0–30.3%)   5747.5  Fail: no policy (the legacy path)  by the default: Retry ×5",
            "(default)  2329  1688    28.1% (26.0–30.3%)   5747.5  Fail: no policy (the legacy path)  Retry ×5",
            "  no rule for unknown: no signal to match on",
        ],
        "{table}"
    );
    for line in [
        "Proposal: policy `suggested` (the design dialect, retryLimit 5), 0 rules of its own (0 Retry, 0 Fail); default Retry ×5 (today's: Fail).",
        "Plan: 441 rescued, 0 lost, 604 → Pending, 108 retried differently; 1153 of 3000 jobs change.",
        "Verdict: adopt (a change worth making): 441 rescued, 0 lost; retries +1888 −0; GPU-hours +3185.5",
    ] {
        assert!(lines.contains(&line), "{line}\n{table}");
    }
    let evidence = "(default): learned from 1 signature: 2329 failed runs; 1688 retried, 474 succeeded: 28.1% (95%: 26.0–30.3%); 5747.5 GPU-hours, 1350.9 of them futile";
    let design = run(&["-o", "policy"]);
    assert!(
        design.ends_with(&format!(
            "  name: suggested\nspec:\n  # {evidence}\n  retryLimit: 5\n  defaultAction: Retry\n  rules: []\n"
        )),
        "{design}"
    );
    let upstream = run(&["--engine", "upstream", "-o", "policy"]);
    assert!(
        upstream.ends_with(&format!(
            "name: suggested\n# {evidence}\nretryLimit: 5\ndefaultAction: Retry\nrules: []\n"
        )),
        "{upstream}"
    );
    let v: serde_json::Value = serde_json::from_str(&run(&["-o", "json"])).unwrap();
    let d = &v["suggest"]["default"];
    assert_eq!(
        [
            &d["pooledSignatures"],
            &d["today"],
            &d["proposed"]["action"],
            &d["proposed"]["limit"],
            &d["changes"]
        ],
        [
            &serde_json::json!(1),
            &serde_json::json!({"action": "Fail", "limit": null}),
            &serde_json::json!("Retry"),
            &serde_json::json!(5),
            &serde_json::json!(true)
        ]
    );
    assert_eq!(
        d["byDepth"][0],
        serde_json::json!({"depth": "1", "trials": 630, "successes": 288})
    );
}
