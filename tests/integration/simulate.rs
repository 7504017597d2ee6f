//! `retryctl simulate` as a user runs it: the design example's table, the JSON record, failed
//! expectations, contradictions, bulk JSON Lines, and every testdata history.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::{exchange, retryctl, root, temp_home};

const DESIGN: [&str; 8] = [
    "-f",
    "testdata/policies/valid/infra.yaml",
    "-f",
    "testdata/policies/valid/ml-training-oom.yaml",
    "-f",
    "testdata/policies/valid/ml-queue.yaml",
    "--history",
    "testdata/histories/design-composition.yaml",
];

/// `retryctl simulate -f infra.yaml --history HISTORY EXTRA...`, the setup most of the
/// history-file tests below share.
fn simulate_infra(home: &Path, history: &Path, extra: &[&str]) -> Output {
    retryctl(home)
        .args(["simulate", "-f", "testdata/policies/valid/infra.yaml", "--history"])
        .arg(history)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn design_example_table() {
    let home = temp_home();
    insta::assert_snapshot!(exchange(retryctl(home.path()).arg("simulate").args(DESIGN)));
}

#[test]
fn json_has_every_decision_field_for_every_run() {
    let home = temp_home();
    let out = retryctl(home.path())
        .arg("simulate")
        .args(DESIGN)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["job"], "train-42");
    let runs = job["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 14);
    let fields = [
        "run",
        "podName",
        "node",
        "startedAt",
        "endedAt",
        "outcome",
        "failure",
        "action",
        "decision",
        "policy",
        "ruleIndex",
        "rule",
        "signal",
        "counter",
        "limit",
        "totalRetries",
        "globalMaxRetries",
        "delay",
        "delayParts",
        "retryAfter",
        "avoidNodes",
        "memory",
        "nextPodName",
        "reason",
    ];
    for run in runs {
        let keys: Vec<&str> = run.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, fields);
    }
    assert_eq!(runs[0]["decision"], "retry");
    assert_eq!(runs[0]["signal"], "condition Preempted");
    assert_eq!(
        runs[0]["delayParts"],
        serde_json::json!({"backoff": "0s", "jitter": "0s", "grace": "5s"})
    );
    assert_eq!(runs[0]["retryAfter"], "T+2h5s");
    assert_eq!(runs[0]["avoidNodes"], serde_json::json!(["node-a"]));
    assert_eq!(runs[13]["decision"], "fail_rule_limit");
    assert_eq!(runs[13]["rule"], "ml-training-oom/0");
    assert_eq!(runs[13]["counter"], 3);
    assert_eq!(runs[13]["limit"], 3);
    assert_eq!(job["outcome"]["final"], "Failed");
    assert_eq!(v["summary"]["decisions"]["retry"], 13);
}

#[test]
fn yaml_output_is_the_same_data() {
    let home = temp_home();
    let json = retryctl(home.path())
        .arg("simulate")
        .args(DESIGN)
        .args(["-o", "json"])
        .output()
        .unwrap();
    let yaml = retryctl(home.path())
        .arg("simulate")
        .args(DESIGN)
        .args(["-o", "yaml"])
        .output()
        .unwrap();
    let a: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let b: serde_json::Value = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(a, b);
}

#[test]
fn wrong_expectation_exits_1_and_says_which_run() {
    let home = temp_home();
    let text = fs::read_to_string(root().join("testdata/histories/design-composition.yaml")).unwrap();
    let changed = text.replace(
        "expect: {action: Fail, decision: fail_rule_limit, rule: ml-training-oom/0}",
        "expect: {action: Retry, decision: retry, rule: ml-training-oom/0}",
    );
    assert_ne!(text, changed);
    let path = home.path().join("wrong.yaml");
    fs::write(&path, changed).unwrap();
    let out = retryctl(home.path())
        .arg("simulate")
        .args(&DESIGN[..6])
        .arg("--history")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_testdata_history_meets_its_expectations() {
    let home = temp_home();
    let mut count = 0;
    for path in crate::support::yaml_files("testdata/histories") {
        count += 1;
        let out = retryctl(home.path())
            .args([
                "simulate",
                "-f",
                "testdata/policies/valid",
                "-f",
                "testdata/histories/policies",
                "--history",
            ])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}:\n{}",
            path.display(),
            crate::support::format_output(&out)
        );
        assert!(
            out.stderr.is_empty(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(count >= 10, "only {count} histories");
}

#[test]
fn directory_bulk_summary() {
    let home = temp_home();
    insta::assert_snapshot!(exchange(retryctl(home.path()).args([
        "simulate",
        "-f",
        "testdata/policies/valid",
        "-f",
        "testdata/histories/policies",
        "--history",
        "testdata/histories",
    ])));
}

#[test]
fn invalid_policy_refuses_to_simulate() {
    let home = temp_home();
    let bad = home.path().join("bad.yaml");
    fs::write(
        &bad,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: bad}\nspec:\n  rules:\n    - {action: Retri, onConditions: [Preempted]}\n",
    )
    .unwrap();
    let out = retryctl(home.path())
        .args(["simulate", "-f"])
        .arg(&bad)
        .args(["--history", "testdata/histories/global-cap.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("6:16 spec.rules[0].action: no RetryAction of name \"Retri\""),
        "{err}"
    );
    assert!(
        err.ends_with("error: the policies are invalid; nothing was simulated\n"),
        "{err}"
    );
}

#[test]
fn missing_policy_is_named_with_who_referenced_it() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "-f",
            "testdata/policies/valid/ml-queue.yaml",
            "--history",
            "testdata/histories/global-cap.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: testdata/histories/global-cap.yaml: job `busy-cluster-job`: policy `ml-training-oom` (referenced by queue `ml-queue`) is not among the documents given with -f (known: `infra`)\n"
    );
}

#[test]
fn history_errors_have_positions() {
    let home = temp_home();
    let path = home.path().join("h.yaml");
    fs::write(
        &path,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j}\nruns:\n  - {node: a, exitCode: 1}\n",
    )
    .unwrap();
    let out = simulate_infra(home.path(), &path, &[]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("5:15 runs[0].exitCode: unknown field `exitCode`"), "{err}");
}

#[test]
fn contradictions_warn_and_strict_fails() {
    let home = temp_home();
    let path = home.path().join("c.yaml");
    fs::write(
        &path,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: c}\nruns:\n  - {node: a, conditions: [Preempted]}\n  - {node: a, conditions: [Evicted]}\n  - {outcome: succeeded}\n  - {node: z}\n",
    )
    .unwrap();
    let run = |strict: bool| {
        let extra: &[&str] = if strict {
            &["-o", "jsonl", "--strict"]
        } else {
            &["-o", "jsonl"]
        };
        simulate_infra(home.path(), &path, extra)
    };
    let out = run(false);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with(
        "warning: job `c`: history contradicts the decisions: run 1 ran on `a`, a node the decision for run 0 avoids\n\
         warning: job `c`: history contradicts the decisions: run 3 follows the end of the job at run 2 (Succeeded): the scheduler never starts it\n"
    ), "{err}");
    assert_eq!(run(true).status.code(), Some(1));
}

#[test]
fn json_lines_streams_reports_bad_lines_and_needs_no_envelope() {
    let home = temp_home();
    let path = home.path().join("bulk.jsonl");
    fs::write(
        &path,
        concat!(
            "{\"job\":{\"id\":\"a\",\"queue\":\"q\"},\"runs\":[{\"node\":\"n1\",\"conditions\":[\"Preempted\"]},{\"outcome\":\"succeeded\"}]}\n",
            "\n",
            "{\"job\":{\"id\":\"b\"},\"runs\":[{\"node\":\"n1\",\"contaners\":[]}]}\n",
            "{not json\n",
            "{\"apiVersion\":\"armadaproject.io/v1\",\"kind\":\"FailureHistory\",\"runs\":[{\"node\":\"n1\",\"conditions\":[\"Evicted\"]}],\"expect\":{\"final\":\"Succeeded\"}}\n",
        ),
    )
    .unwrap();
    let out = simulate_infra(home.path(), &path, &["-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let jobs: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["job"], "a");
    assert_eq!(jobs[0]["outcome"]["text"], "Succeeded at run 1 after 1 retry");
    // A line without job.id gets the file stem and its line number.
    assert_eq!(jobs[1]["job"], "bulk-5");
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "bulk.jsonl");
    insta::assert_snapshot!(stderr);
}

/// History files are read strictly as their format says: a key met twice in a JSON line is
/// refused as in a `.json` or YAML history (the same words), a time of RFC 3339's shape that
/// does not exist is refused naming its field, each line an error of its own (exit 3, the
/// other lines replayed), and a YAML history with such a time is refused whole, with its line.
/// A CPU or GPU request is read in exact thousandths, rounded up as Kubernetes reads one
/// (docs/estimates.md): `100u` and `2.4m` count `1m` and `3m`, not nothing and `2m`; one
/// thousandth past 2^53 is refused, not rounded to the nearest double.
#[test]
fn requests_are_exact_thousandths_rounded_up_and_refused_past_2_53() {
    let home = temp_home();
    let path = home.path().join("requests.jsonl");
    let line = |id: &str, gpu: &str| {
        format!(
            "{{\"job\":{{\"id\":\"{id}\",\"queue\":\"q\",\"resources\":{{\"gpu\":\"{gpu}\"}}}},\"runs\":[{{\"runFor\":\"1h\",\"outcome\":\"succeeded\"}}]}}\n"
        )
    };
    let hours = |gpus: &[&str]| {
        let text: String = gpus
            .iter()
            .enumerate()
            .map(|(k, g)| line(&format!("j{k}"), g))
            .collect();
        fs::write(&path, text).unwrap();
        let out = simulate_infra(home.path(), &path, &["-o", "json"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (out, doc["summary"]["compute"]["gpuHours"]["recorded"].as_f64().unwrap())
    };
    let (out, gpu) = hours(&["100u", "2.4m", "1e-4"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(gpu, 0.005);
    let (out, gpu) = hours(&["9007199254740992m"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(gpu, 9_007_199_254_740.992);
    let (out, gpu) = hours(&["9007199254740993m"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(gpu, 0.0);
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "requests.jsonl");
    assert!(
        stderr.contains("error: requests.jsonl:1: job.resources.gpu: gpu `9007199254740993m` is too large\n"),
        "{stderr}"
    );
}

#[test]
fn duplicate_keys_and_times_that_do_not_exist_are_errors_with_file_line_and_field() {
    let home = temp_home();
    let path = home.path().join("strict.jsonl");
    fs::write(
        &path,
        concat!(
            "{\"job\":{\"id\":\"ok\",\"queue\":\"q\"},\"runs\":[{\"node\":\"n1\"}]}\n",
            "{\"job\":{\"id\":\"dup\",\"queue\":\"q\"},\"runs\":[{\"node\":\"n1\",\"node\":\"n2\"}]}\n",
            "{\"job\":{\"id\":\"feb\",\"queue\":\"q\",\"submittedAt\":\"2026-02-30T00:00:00Z\"},\"runs\":[{}]}\n",
            "{\"job\":{\"id\":\"leap\",\"queue\":\"q\"},\"runs\":[{\"startedAt\":\"2026-12-31T23:59:60Z\"}]}\n",
            "{\"job\":{\"id\":\"tz\",\"queue\":\"q\",\"submittedAt\":\"2026-01-01T00:00:00+25:00\"},\"runs\":[{}]}\n",
            "{\"job\":{\"id\":\"tz2\",\"queue\":\"q\",\"submittedAt\":\"2026-01-01T00:00:00+99:99\"},\"runs\":[{}]}\n",
            // A character of two bytes where a digit belongs: refused, not a panic.
            "{\"job\":{\"id\":\"wide\",\"queue\":\"q\",\"submittedAt\":\"2026-01-01T00:00:0é\"},\"runs\":[{}]}\n",
            "{\"job\":{\"id\":\"wide2\",\"queue\":\"q\"},\"runs\":[{\"startedAt\":\"2026-01-01T00:00:00+0é00\"}]}\n",
            // A duration no start can be: said as a duration's error, not as a time's shape.
            "{\"job\":{\"id\":\"far\",\"queue\":\"q\"},\"runs\":[{\"startedAt\":\"9999999h\"}]}\n",
            "{\"job\":{\"id\":\"before\",\"queue\":\"q\"},\"runs\":[{\"startedAt\":\"-5m\"}]}\n",
        ),
    )
    .unwrap();
    let out = simulate_infra(home.path(), &path, &["-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let jobs: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["job"], "ok");
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "strict.jsonl");
    // Each error line (the queue's warning and the summary aside).
    let errors: String = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(stderr.contains("not simulated: 9 jobs with errors"), "{stderr}");
    assert_eq!(
        errors,
        "error: strict.jsonl:2: invalid JSON at column 54: duplicate key `node` (first at column 42)\n\
         error: strict.jsonl:3: job.submittedAt: invalid time `2026-02-30T00:00:00Z`: day `30` does not exist in 2026-02 (28 days)\n\
         error: strict.jsonl:4: runs[0].startedAt: invalid start `2026-12-31T23:59:60Z`: second `60` is out of range (00–59; a leap second is not read)\n\
         error: strict.jsonl:5: job.submittedAt: invalid time `2026-01-01T00:00:00+25:00`: offset `+25:00` is out of range (hours 00–23, minutes 00–59)\n\
         error: strict.jsonl:6: job.submittedAt: invalid time `2026-01-01T00:00:00+99:99`: offset `+99:99` is out of range (hours 00–23, minutes 00–59)\n\
         error: strict.jsonl:7: job.submittedAt: invalid time `2026-01-01T00:00:0é`, expected RFC 3339 such as `2026-01-01T00:00:00Z`\n\
         error: strict.jsonl:8: runs[0].startedAt: invalid start `2026-01-01T00:00:00+0é00`, expected a duration since submission (`90s`) or an RFC 3339 time\n\
         error: strict.jsonl:9: runs[0].startedAt: invalid start `9999999h`: too large\n\
         error: strict.jsonl:10: runs[0].startedAt: invalid start `-5m`: must not be negative\n"
    );

    let path = home.path().join("feb.yaml");
    fs::write(
        &path,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: feb, queue: q, submittedAt: \"2026-02-30T00:00:00Z\"}\nruns:\n  - {node: n1}\n",
    )
    .unwrap();
    let out = simulate_infra(home.path(), &path, &["-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "feb.yaml");
    assert!(stderr.contains("not simulated: 1 job with errors"), "{stderr}");
    assert_eq!(
        stderr.split("summary\n").next().unwrap(),
        "feb.yaml (FailureHistory)\n  error: 3:39 job.submittedAt: invalid time `2026-02-30T00:00:00Z`: day `30` does not exist in 2026-02 (28 days)\n"
    );
}

/// A UTF-8 byte order mark at the start of a history (a JSON Lines file, a YAML file, JSON
/// Lines on stdin) is skipped: line 1 is read as the job it holds.
#[test]
fn a_byte_order_mark_at_the_start_of_a_history_is_skipped() {
    let home = temp_home();
    let line = "{\"job\":{\"id\":\"a\",\"queue\":\"q\"},\"runs\":[{\"node\":\"n1\",\"conditions\":[\"Preempted\"]},{\"outcome\":\"succeeded\"}]}\n";
    let yaml = "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: a, queue: q}\nruns:\n  - {node: n1, conditions: [Preempted]}\n  - {outcome: succeeded}\n";
    for (name, text) in [("bom.jsonl", line), ("bom.yaml", yaml)] {
        let path = home.path().join(name);
        fs::write(&path, format!("\u{feff}{text}")).unwrap();
        let out = simulate_infra(home.path(), &path, &["-o", "jsonl"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let job: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(job["job"], "a", "{name}");
        assert_eq!(job["outcome"]["text"], "Succeeded at run 1 after 1 retry", "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("error"), "{name}: {stderr}");
    }
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "--history",
            "-",
            "-o",
            "jsonl",
        ])
        // Two jobs: a history holds each job once.
        .write_stdin(format!(
            "\u{feff}{line}{}",
            line.replace("\"id\":\"a\"", "\"id\":\"b\"")
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn a_history_file_without_histories_is_an_error() {
    let home = temp_home();
    let path = home.path().join("empty.yaml");
    fs::write(&path, "# nothing yet\n").unwrap();
    let out = simulate_infra(home.path(), &path, &["-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr).replace(&path.display().to_string(), "empty.yaml");
    assert_eq!(err, "error: no job in `empty.yaml`: nothing to compare\n");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_policy_given_twice_names_both_places() {
    let home = temp_home();
    insta::assert_snapshot!(exchange(retryctl(home.path()).args([
        "simulate",
        "-f",
        "testdata/policies/valid",
        "-f",
        "testdata/policies/valid/infra.yaml",
        "--history",
        "testdata/histories/fail-fast.yaml",
    ])));
}

/// docs/simulate.md: memory is printed exactly, in every format: 1100000000 bytes is `1100M` (it
/// was `1.02Gi`), each 1.5x bump is exact (`1650M`, `2475M`), and `2500k` + 512Mi, which no
/// suffix divides, is plain bytes. What is printed reads back as the same bytes.
#[test]
fn memory_is_printed_exactly_in_every_format() {
    let home = temp_home();
    let run = |history: &str, format: &str| {
        let out = retryctl(home.path())
            .args([
                "simulate",
                "-f",
                "testdata/policies/valid/upstream-v1beta1.yaml",
                "--history",
            ])
            .arg(format!("testdata/histories/memory/{history}"))
            .args(["-o", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // (history, memory after each retry, the job's memory at the end)
    let cases = [
        ("factor.yaml", vec!["1650M", "2475M"], "2475M"),
        ("static.yaml", vec!["539370912"], "539370912"),
    ];
    for (history, per_run, last) in &cases {
        let table = run(history, "table");
        let column: Vec<&str> = table
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains(" retry "))
            .map(|l| l.split_whitespace().last().unwrap())
            .collect();
        assert_eq!(&column, per_run, "{table}");
        let json: serde_json::Value = serde_json::from_str(&run(history, "json")).unwrap();
        let yaml: serde_json::Value = serde_yaml::from_str(&run(history, "yaml")).unwrap();
        let jsonl: serde_json::Value = serde_json::from_str(run(history, "jsonl").lines().next().unwrap()).unwrap();
        for (format, job) in [
            ("json", &json["jobs"][0]),
            ("yaml", &yaml["jobs"][0]),
            ("jsonl", &jsonl),
        ] {
            let memory: Vec<&str> = job["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|r| r["memory"].as_str())
                .collect();
            assert_eq!(&memory, per_run, "{format}");
            assert_eq!(job["memory"], *last, "{format}");
        }
        for printed in per_run {
            let bytes = retryctl::model::quantity::parse_quantity(printed).unwrap();
            assert_eq!(retryctl::model::quantity::format_bytes(bytes), *printed);
        }
    }
    assert_eq!(
        retryctl::model::quantity::parse_quantity("2475M"),
        Ok((1_100_000_000f64 * 1.5 * 1.5).ceil())
    );
}
