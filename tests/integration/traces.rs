//! Real clusters' histories (SPEC §19, issue 72): what a public GPU cluster's trace,
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
