//! Bulk `simulate` and its traps (docs/simulate.md): stdin histories, the warnings that
//! replace silent fallbacks, every unevaluated `expect` reported, a closed stdout, and a
//! parallel run that is byte-identical to a single-threaded one.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command as StdCommand, Stdio};

use crate::support::{format_output, retryctl, temp_home};

const INFRA: &str = "testdata/policies/valid/infra.yaml";
const QUEUE: &str = "testdata/policies/valid/ml-queue.yaml";
const OOM: &str = "testdata/policies/valid/ml-training-oom.yaml";

/// Many jobs of every kind: retries, failures, a bad line, a missing policy (via a queue
/// that is not given), expectations met and not.
fn bulk_lines(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let line = match i % 7 {
            0 => format!(
                r#"{{"job":{{"id":"j{i}","queue":"ml-queue"}},"runs":[{{"node":"n{i}","conditions":["Preempted"]}},{{"node":"m{i}","outcome":"succeeded"}}],"expect":{{"final":"Succeeded"}}}}"#
            ),
            1 => format!(
                r#"{{"job":{{"id":"j{i}","queue":"ml-queue"}},"runs":[{{"containers":[{{"name":"main","exitCode":137,"reason":"OOMKilled"}}]}},{{"containers":[{{"name":"main","exitCode":1}}]}}]}}"#
            ),
            2 => format!(r#"{{"job":{{"id":"j{i}","queue":"ml-queue"}},"runs":[{{"nodee":"x"}}]}}"#),
            3 => r#"{"job":{"queue":"ml-queue","annotations":{"armadaproject.io/retry-policy":"gone"}},"runs":[{}]}"#
                .to_string(),
            4 => format!(
                r#"{{"job":{{"id":"j{i}","queue":"ml-queue"}},"runs":[{{"conditions":["Evicted"]}}],"expect":{{"final":"Succeeded"}}}}"#
            ),
            5 => "not json".to_string(),
            _ => format!(
                r#"{{"job":{{"id":"j\u0041{i}","queue":"ml-queue","terminationGracePeriod":"30s"}},"runs":[{{"conditions":["Preempted"],"runFor":"1h"}},{{"outcome":"succeeded"}}]}}"#
            ),
        };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

#[test]
fn a_parallel_run_is_byte_identical_to_a_single_threaded_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bulk.jsonl");
    // More lines than one chunk of work, so that several chunks are in flight.
    fs::write(&file, bulk_lines(5000)).unwrap();
    for format in ["table", "jsonl", "json", "yaml"] {
        let run = |threads: &str| {
            let home = temp_home();
            retryctl(home.path())
                .env("RAYON_NUM_THREADS", threads)
                .args([
                    "simulate",
                    "-f",
                    INFRA,
                    "-f",
                    OOM,
                    "-f",
                    QUEUE,
                    "-o",
                    format,
                    "--history",
                ])
                .arg(&file)
                .output()
                .unwrap()
        };
        let (one, many) = (run("1"), run("4"));
        assert_eq!(one.status.code(), Some(3), "{format}");
        assert_eq!(format_output(&one), format_output(&many), "{format}");
    }
}

#[test]
fn history_from_stdin_as_json_lines_or_yaml() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["simulate", "-f", INFRA, "--history", "-", "-o", "jsonl"])
        .write_stdin("\n{\"job\":{\"id\":\"s1\"},\"runs\":[{\"conditions\":[\"Preempted\"]},{\"outcome\":\"succeeded\"}]}\n{\"runs\":[{\"outcome\":\"succeeded\"}]}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let jobs: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["job"].as_str().unwrap(),
                v["outcome"]["final"].as_str().unwrap()
            )
        })
        .collect();
    // The second line has no id: `stdin-LINE`, counting the blank first line.
    assert_eq!(jobs, ["s1 Succeeded", "stdin-3 Succeeded"]);

    let yaml = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\nruns:\n  - conditions: [Evicted]\n  - outcome: succeeded\n";
    let out = retryctl(home.path())
        .args(["simulate", "-f", INFRA, "--history", "-", "-o", "json"])
        .write_stdin(yaml)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["job"], "stdin");
    assert_eq!(v["jobs"][0]["outcome"]["text"], "Succeeded at run 1 after 1 retry");

    // A YAML text's line numbers count the blank lines before it, as a file's do.
    let out = retryctl(home.path())
        .args(["simulate", "-f", INFRA, "--history", "-"])
        .write_stdin("\n \n\njob:\n  id: a\nruns: [\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "<stdin>\n  error: 7:1: invalid YAML: while parsing a node, did not find expected node content\n"
        ),
        "{}",
        format_output(&out)
    );
}

#[test]
fn warns_when_no_policy_file_is_given() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "simulate",
            "--history",
            "testdata/histories/cuda-error.yaml",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("warning: no -f given: no retry policy applies, every job follows the legacy behaviour (a failed run is final)\n"),
        "{stderr}"
    );
}

#[test]
fn warns_once_per_queue_not_among_the_documents_and_when_retry_policy_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.jsonl");
    fs::write(
        &file,
        "{\"job\":{\"id\":\"a\",\"queue\":\"other\"},\"runs\":[{\"outcome\":\"succeeded\"}]}\n{\"job\":{\"id\":\"b\",\"queue\":\"other\"},\"runs\":[{\"outcome\":\"succeeded\"}]}\n",
    )
    .unwrap();
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            INFRA,
            "-f",
            OOM,
            "--retry-policy",
            "infra",
            "-o",
            "jsonl",
            "--history",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().next(),
        Some("warning: job `a`: queue `other` is not among the documents given with -f; using --retry-policy (`infra`) for the jobs of this queue")
    );
    assert_eq!(stderr.matches("is not among the documents").count(), 1, "{stderr}");

    // Every job's queue is given: --retry-policy is never used, and that is said.
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            INFRA,
            "-f",
            OOM,
            "-f",
            QUEUE,
            "--retry-policy",
            "infra",
        ])
        .args(["--history", "testdata/histories/design-composition.yaml", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: --retry-policy was ignored: every job's queue is among the documents, and its queue's policies applied\n"
    );
}

#[test]
fn every_run_after_the_end_with_expectations_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.yaml");
    fs::write(
        &file,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j}\nruns:\n  - outcome: succeeded\n  - expect: {action: Retry}\n  - conditions: [Evicted]\n  - expect: {action: Fail}\nexpect: {retries: 1}\n",
    )
    .unwrap();
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["simulate", "-f", INFRA, "-o", "json", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["jobs"][0]["expectationFailures"],
        serde_json::json!([
            "run 1: has expectations but is never evaluated (the job ended at run 0)",
            "run 3: has expectations but is never evaluated (the job ended at run 0)",
            "job: expected retries `1`, got `0`"
        ])
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bulk.jsonl");
    let line = "{\"runs\":[{\"conditions\":[\"Preempted\"]},{\"outcome\":\"succeeded\"}]}\n";
    fs::write(&file, line.repeat(200_000)).unwrap();
    let home = temp_home();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .current_dir(crate::support::root())
        .env_clear()
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .args(["simulate", "-f", INFRA, "-o", "jsonl", "--history"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Like `| head -1`: read one line, then close the pipe.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"job\":\"bulk-1\""), "{first}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("error"));
    let _ = std::io::stdout().flush();
}

#[test]
fn stdin_is_read_once() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["simulate", "-f", "-", "--history", "-"])
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 2\n--- stdout\n--- stderr\nerror: stdin can be read once: give either `--history -` or `-f -`, not both\n"
    );
}

#[test]
fn retry_policy_used_by_a_job_without_queue_is_not_called_ignored() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            INFRA,
            "-f",
            OOM,
            "--retry-policy",
            "infra",
            "--history",
            "-",
            "-o",
            "jsonl",
        ])
        .write_stdin("{\"runs\":[{\"conditions\":[\"Preempted\"]},{\"outcome\":\"succeeded\"}]}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policies"], serde_json::json!(["infra"]));
}

/// The 64 MiB limit is on a line's text: a line of exactly 64 MiB is read (and the line after
/// it too); one byte more is `line longer than 64 MiB`, and only that line is lost.
#[test]
fn the_64_mib_line_limit_is_exact() {
    const MIB64: usize = 64 * 1024 * 1024;
    // A valid history padded with JSON whitespace to `len` bytes.
    let padded = |id: &str, len: usize| {
        let head = format!(r#"{{"job":{{"id":"{id}"}},"runs":[{{}}]"#);
        format!("{head}{}}}", " ".repeat(len - head.len() - 1))
    };
    let small = |id: &str| format!(r#"{{"job":{{"id":"{id}"}},"runs":[{{}}]}}"#);
    let text = [
        small("first"),
        padded("exactly-64-mib", MIB64),
        small("after-the-64-mib-line"),
        padded("one-byte-over", MIB64 + 1),
        small("after-the-long-line"),
    ]
    .join("\n")
        + "\n";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.jsonl");
    fs::write(&file, text).unwrap();
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["simulate", "-f", INFRA, "-o", "jsonl", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ids: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split(r#""job":""#).nth(1))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "first",
            "exactly-64-mib",
            "after-the-64-mib-line",
            "after-the-long-line"
        ],
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!("error: {}:4: line longer than 64 MiB\n", file.display())),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(3), "{stderr}");
}

/// On stdin too, a first line over the limit, of JSON or of blanks only, is an over-long
/// JSON line (not a YAML text too large to read, nor two blank lines): it alone is lost,
/// as in a file, and the lines after it keep their numbers.
#[test]
fn an_over_long_first_line_on_stdin_is_a_json_line_too_long() {
    const MIB64: usize = 64 * 1024 * 1024;
    let head = r#"{"job":{"id":"over-the-limit"},"runs":[{}]"#;
    // Longer than the limit plus the byte that tells it is over: cut before its end.
    let json = format!("{head}{}}}", " ".repeat(MIB64 + 100 - head.len() - 1));
    let blanks = " ".repeat(MIB64 + 100);
    for long in [json, blanks] {
        // The job after it is on line 3; its run's outcome is not one there is.
        let text = format!("\n{long}\n{}\n", r#"{"job":{"id":"after"},"runs":[{"outcome":"x"}]}"#);
        let home = temp_home();
        let out = retryctl(home.path())
            .args(["simulate", "-f", INFRA, "-o", "jsonl", "--history", "-"])
            .write_stdin(text)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: <stdin>:2: line longer than 64 MiB\nerror: <stdin>:3: "),
            "{stderr}"
        );
        assert_eq!(out.status.code(), Some(3), "{stderr}");
    }
}

/// A job id given by two files of a directory is an error naming both places (the file read
/// later, with its line, and the first, with its), and that job is not replayed again (exit
/// 3); the other jobs are. (A job twice in one file or on stdin: tests/integration/twice.rs.)
#[test]
fn a_job_id_in_two_files_of_a_directory_is_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir(d.join("hist")).unwrap();
    let job = |id: &str| format!("{{\"job\":{{\"id\":\"{id}\"}},\"runs\":[{{}}]}}\n");
    fs::write(d.join("hist/a.jsonl"), job("a1") + &job("x")).unwrap();
    fs::write(d.join("hist/b.jsonl"), job("b1") + &job("x") + &job("b2")).unwrap();
    fs::write(
        d.join("hist/c.yaml"),
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob:\n  id: a1\nruns:\n- {}\n",
    )
    .unwrap();
    fs::copy(crate::support::root().join(INFRA), d.join("infra.yaml")).unwrap();
    let home = temp_home();
    let out = retryctl(home.path())
        .current_dir(d)
        .args(["simulate", "-f", "infra.yaml", "-o", "jsonl", "--history", "hist"])
        .output()
        .unwrap();
    let said = "a history holds each job once, so this one is not replayed";
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: hist/b.jsonl:2: job `x` is also at `hist/a.jsonl:2`: {said}\n\
             error: hist/c.yaml: job `a1` is also at `hist/a.jsonl:1`: {said}\n\
             summary\n  jobs:      4 (4 runs)\n  outcomes:  0 succeeded, 4 failed, 0 cancelled, 0 pending\n\
             \x20 retries:   0 granted, 0s total delay added\n  compute:   0s recorded\n\
             \x20 POLICY/RULE      RETRIES GRANTED   PERMANENT FAILURES\n  (fail_default)   0                 4\n\
             \x20 decisions: fail_default 4\n  expectations: all met\n\
             \x20 not simulated: 2 jobs with errors (reported on stderr)\n"
        )
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ids: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split(r#""job":""#).nth(1))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(ids, ["a1", "x", "b1", "b2"], "{stdout}");
    assert_eq!(out.status.code(), Some(3));
}
