//! Real clusters' histories (issue 72): what a public GPU cluster's trace,
//! converted to FailureHistory lines, asks of every verb — times past the nanosecond range,
//! ids that no pod name may hold, no node and no reason in any run, unreadable lines said
//! alike by `simulate`, `tune` and `suggest`. `testdata/trace/philly.jsonl` is such a trace
//! (scripts/gen-trace.py).

use std::path::Path;

use crate::support::{format_output, retryctl, temp_home};

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
    let suggest = run(&["suggest", "--history", &trace, "--baseline", &old]);
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
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(
        json["suggest"]["proposal"]["comparison"]["compute"]["recorded"],
        recorded.as_str()
    );
}
