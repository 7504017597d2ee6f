//! Retries while others waited (docs/contention.md) as the replay verbs say it: `simulate`'s
//! one policy, `simulate --baseline`, `tune`, with `--contention on` and by default (`auto`);
//! none with `--contention off`, none in the words of a history with nothing requested; a
//! shard refused with it on, and a sharded run's merge saying it was not computed.
//! The history is the closed-form case: a 4-GPU job's retry runs 10:00–11:00 while a 2-GPU
//! job waits 10:30–12:00 in the same pool: retry 4, queued 3, while others waited 2,
//! overlap 1 GPU-hours.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::{format_output, retryctl, temp_home};

/// The case's two jobs, the retry after a preemption.
const HISTORY: &str = concat!(
    r#"{"job":{"id":"a","queue":"ml","submittedAt":"2026-01-01T09:00:00Z","resources":{"gpu":"4","cpu":"2"}},"runs":[{"conditions":["Preempted"],"runFor":"1h"},{"runFor":"1h","outcome":"succeeded"}]}"#,
    "\n",
    r#"{"job":{"id":"b","queue":"ml","submittedAt":"2026-01-01T10:30:00Z","resources":{"gpu":"2","cpu":"1"}},"runs":[{"queuedFor":"1h30m","runFor":"1h","outcome":"succeeded"}]}"#,
    "\n",
);

/// `ml`'s queue with a policy that retries a preemption (the record's decision), and one
/// that retries nothing.
const RETRIES: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: retry-preempted
spec:
  retryLimit: 3
  rules:
    - action: Retry
      onConditions: [Preempted]
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: ml
retryPolicies: [retry-preempted]
";

const NONE: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: fail-fast
spec:
  retryLimit: 3
  rules:
    - action: Fail
      onConditions: [Preempted]
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: ml
retryPolicies: [fail-fast]
";

fn files(dir: &Path) -> (String, String, String) {
    let (h, r, n) = (dir.join("h.jsonl"), dir.join("retries.yaml"), dir.join("none.yaml"));
    fs::write(&h, HISTORY).unwrap();
    fs::write(&r, RETRIES).unwrap();
    fs::write(&n, NONE).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    (s(&h), s(&r), s(&n))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let home = temp_home();
    let out = retryctl(home.path()).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout.clone()).unwrap(),
        format_output(&out),
    )
}

/// `simulate --contention on --history H ARGS…`.
fn on(h: &str, args: &[&str]) -> (i32, String, String) {
    run(&[&["simulate", "--contention", "on", "--history", h][..], args].concat())
}

/// A side's GPU numbers: retry, queued, while others waited, overlap; and its retry runs.
fn gpu(side: &Value) -> (f64, f64, f64, f64, u64) {
    let g = &side["gpu"];
    (
        g["retryHours"].as_f64().unwrap(),
        g["queuedHours"].as_f64().unwrap(),
        g["whileOthersWaitedHours"].as_f64().unwrap(),
        g["overlapHours"].as_f64().unwrap(),
        side["retryRuns"].as_u64().unwrap(),
    )
}

#[test]
fn simulate_says_the_record_and_its_one_policy() {
    let dir = tempfile::tempdir().unwrap();
    let (h, r, _) = files(dir.path());
    let (code, stdout, all) = on(&h, &["-f", &r, "-o", "json"]);
    assert_eq!(code, 0, "{all}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let c = &v["summary"]["contention"];
    assert_eq!(gpu(&c["recorded"]), (4.0, 3.0, 2.0, 1.0, 1));
    assert_eq!(gpu(&c["replayed"]), (4.0, 3.0, 2.0, 1.0, 1));
    // Every field of a side, the splits by name.
    assert_eq!(
        c["recorded"],
        serde_json::json!({
            "gpu": {"retryHours": 4.0, "queuedHours": 3.0, "whileOthersWaitedHours": 2.0, "overlapHours": 1.0,
                    "overlapHoursByWaitingQueue": {"ml": 1.0}, "overlapHoursByRetryingQueue": {"ml": 1.0},
                    "overlapHoursByPool": {"default": 1.0}},
            "cpu": {"retryHours": 2.0, "queuedHours": 1.5, "whileOthersWaitedHours": 1.0, "overlapHours": 0.5,
                    "overlapHoursByWaitingQueue": {"ml": 0.5}, "overlapHoursByRetryingQueue": {"ml": 0.5},
                    "overlapHoursByPool": {"default": 0.5}},
            "inIncidents": {"gpu": {"retryHours": 0.0, "overlapHours": 0.0}, "cpu": {"retryHours": 0.0, "overlapHours": 0.0}},
            "retryRuns": 1, "untimedRuns": 0, "notPlacedRuns": 0
        })
    );

    let (code, stdout, all) = on(&h, &["-f", &r]);
    assert_eq!(code, 0, "{all}");
    let section: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("  contention:"))
        .take(5)
        .collect();
    assert_eq!(
        section,
        [
            "  contention: retries while others waited (what coincided in the record's times; the queue another policy would have made is not modelled)",
            "    recorded: retries ran 4.0 GPU-h; 2.0 (50.0%) while other jobs' GPUs waited; overlap with waiting demand 1.0 GPU-h (33.3% of the 3.0 GPU-h that waited)",
            "              retries ran 2.0 CPU-h; 1.0 (50.0%) while other jobs' CPUs waited; overlap with waiting demand 0.50 CPU-h (33.3% of the 1.5 CPU-h that waited)",
            "    replayed: retries ran 4.0 GPU-h; 2.0 (50.0%) while other jobs' GPUs waited; overlap with waiting demand 1.0 GPU-h (33.3% of the 3.0 GPU-h that waited)",
            "              retries ran 2.0 CPU-h; 1.0 (50.0%) while other jobs' CPUs waited; overlap with waiting demand 0.50 CPU-h (33.3% of the 1.5 CPU-h that waited)",
        ],
        "{stdout}"
    );
    assert!(
        !stdout.contains("freed") && !stdout.contains("saved for others"),
        "{stdout}"
    );

    for format in ["markdown", "html"] {
        let (code, stdout, all) = on(&h, &["-f", &r, "-o", format]);
        assert_eq!(code, 0, "{all}");
        assert!(
            stdout.contains("retries ran 4.0 GPU-h; 2.0 (50.0%) while other jobs&#39; GPUs waited")
                || stdout.contains("retries ran 4.0 GPU-h; 2.0 (50.0%) while other jobs' GPUs waited"),
            "{format}: {stdout}"
        );
        assert!(stdout.contains("Retries while others waited"), "{format}: {stdout}");
    }
}

#[test]
fn contention_off_leaves_the_section_out() {
    let dir = tempfile::tempdir().unwrap();
    let (h, r, _) = files(dir.path());
    let off = |args: &[&str]| {
        run(&[
            &["simulate", "--history", &h, "-f", &r, "--contention", "off"][..],
            args,
        ]
        .concat())
    };
    for (args, member) in [
        (&["-o", "json"][..], "summary"),
        (&["--baseline", &r, "-o", "json"][..], "comparison"),
    ] {
        let (code, stdout, all) = off(args);
        assert_eq!(code, 0, "{all}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v[member].get("contention"), None, "{args:?}");
        assert_eq!(v[member].get("contentionNotComputed"), None, "{args:?}");
    }
    for format in ["table", "markdown", "html"] {
        let (code, stdout, all) = off(&["-o", format]);
        assert_eq!(code, 0, "{all}");
        assert!(
            !stdout.to_lowercase().contains("while others waited"),
            "{format}: {stdout}"
        );
    }
}

/// No flag is `auto`: one process prints what `--contention on` prints, in every format, for
/// `simulate`, `simulate --baseline` and `suggest`.
#[test]
fn the_default_says_the_section_in_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let (h, r, n) = files(dir.path());
    let formats = ["table", "json", "yaml", "markdown", "html"];
    for format in formats {
        for args in [
            vec!["simulate", "--history", &h, "-f", &r, "-o", format],
            vec!["simulate", "--history", &h, "-f", &n, "--baseline", &r, "-o", format],
            vec!["suggest", "--history", &h, "--baseline", &r, "-o", format],
        ] {
            let (code, default, all) = run(&args);
            assert_eq!(code, 0, "{args:?}: {all}");
            if format == "markdown" {
                // The section's heading after one blank line, not two.
                assert!(!default.contains("\n\n\n"), "{args:?}: {default}");
            }
            let (code, on, all) = run(&[&args[..], &["--contention", "on"]].concat());
            assert_eq!(code, 0, "{args:?}: {all}");
            assert_eq!(default, on, "{args:?}");
            assert!(
                default.contains("overlap with waiting demand 1.0 GPU-h")
                    || default.contains("\"overlapHours\":1.0")
                    || default.contains("overlapHours: 1.0"),
                "{args:?}: {default}"
            );
        }
    }
}

/// A history whose jobs request no GPU and no CPU (or whose runs have no times) has nothing
/// that coincided or waited: the table, markdown and html say no section; json and yaml
/// carry it, zeros and counts.
#[test]
fn a_history_with_nothing_requested_says_no_section_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let (_, r, n) = files(dir.path());
    let h = dir.path().join("bare.jsonl");
    fs::write(
        &h,
        concat!(
            r#"{"job":{"id":"a","queue":"ml","submittedAt":"2026-01-01T09:00:00Z"},"runs":[{"conditions":["Preempted"],"runFor":"1h"},{"runFor":"1h","outcome":"succeeded"}]}"#,
            "\n",
            r#"{"job":{"id":"b","queue":"ml","resources":{"gpu":"2"}},"runs":[{"conditions":["Preempted"],"runFor":"1h"},{"runFor":"1h","outcome":"succeeded"}]}"#,
            "\n",
        ),
    )
    .unwrap();
    let h = h.to_str().unwrap();
    for format in ["table", "markdown", "html"] {
        let (code, stdout, all) = run(&["simulate", "--history", h, "-f", &n, "--baseline", &r, "-o", format]);
        assert_eq!(code, 0, "{all}");
        assert!(
            !stdout.to_lowercase().contains("while others waited"),
            "{format}: {stdout}"
        );
    }
    let (code, stdout, all) = run(&["simulate", "--history", h, "-f", &n, "--baseline", &r, "-o", "json"]);
    assert_eq!(code, 0, "{all}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let c = &v["comparison"]["contention"];
    // `a` requests nothing; `b`'s runs have no submission to place them: untimed.
    assert_eq!(gpu(&c["recorded"]), (0.0, 0.0, 0.0, 0.0, 2));
    assert_eq!(c["recorded"]["untimedRuns"], 2, "{c}");
    assert_eq!(c["candidate"]["retryRuns"], 0, "{c}");
}

/// The default in shards: each shard leaves the section out, and the merge says, where the
/// section would be, that it was not computed, in every format (json and yaml: `contention:
/// null` and `contentionNotComputed: sharded`); `tune`'s merge too (the documents `--emit`
/// writes say it: `shard_examples`, and the plan's unit test).
#[test]
fn a_sharded_run_says_the_section_was_not_computed() {
    let dir = tempfile::tempdir().unwrap();
    let (h, r, n) = files(dir.path());
    let partials = |tag: &str, args: &[&str]| -> Vec<String> {
        (0..2)
            .map(|i| {
                let shard = format!("{i}/2");
                let (code, stdout, all) = run(&[args, &["--shard", &shard, "-o", "partial"]].concat());
                assert_eq!(code, 0, "{all}");
                let file = dir.path().join(format!("{tag}-{i}.json"));
                fs::write(&file, stdout).unwrap();
                file.to_str().unwrap().to_string()
            })
            .collect()
    };
    let merged = |files: &[String], format: &str| -> String {
        let mut args = vec!["merge"];
        args.extend(files.iter().map(String::as_str));
        args.extend(["-o", format]);
        let (code, stdout, all) = run(&args);
        assert_eq!(code, 0, "{all}");
        stdout
    };
    let said = "not computed for a sharded run (it needs every job in one process: run it without --shard or --emit)";
    for (tag, args, member) in [
        ("plain", vec!["simulate", "--history", &h, "-f", &r], "summary"),
        (
            "plan",
            vec!["simulate", "--history", &h, "-f", &n, "--baseline", &r],
            "comparison",
        ),
    ] {
        let files = partials(tag, &args);
        let table = merged(&files, "table");
        assert!(table.contains(&format!("\n  contention: {said}\n")), "{tag}: {table}");
        assert!(!table.contains("overlap with waiting demand"), "{tag}: {table}");
        let json: Value = serde_json::from_str(&merged(&files, "json")).unwrap();
        assert_eq!(json[member]["contention"], Value::Null, "{tag}: {json}");
        assert_eq!(json[member]["contentionNotComputed"], "sharded", "{tag}: {json}");
        let yaml = merged(&files, "yaml");
        assert!(
            yaml.contains("contention: null\n") && yaml.contains("contentionNotComputed: sharded\n"),
            "{tag}: {yaml}"
        );
        let markdown = merged(&files, "markdown");
        assert!(
            markdown.contains(&format!("**Retries while others waited:** {said}.")),
            "{tag}: {markdown}"
        );
        let html = merged(&files, "html");
        assert!(
            html.contains("<h2>Retries while others waited</h2>\n<p class=\"note\">Not computed for a sharded run"),
            "{tag}: {html}"
        );
    }
    let files = partials(
        "tune",
        &[
            "tune",
            "--history",
            &h,
            "-f",
            &r,
            "--vary",
            "retry-preempted:spec.retryLimit=0..1",
        ],
    );
    let table = merged(&files, "table");
    assert!(table.contains(&format!("\ncontention: {said}\n")), "{table}");
    assert!(!table.contains("OVERLAP"), "{table}");
    let json: Value = serde_json::from_str(&merged(&files, "json")).unwrap();
    for c in json["tune"]["candidates"].as_array().unwrap() {
        assert_eq!(c["contention"], Value::Null, "{c}");
        assert_eq!(c["contentionNotComputed"], "sharded", "{c}");
    }
}

#[test]
fn a_comparison_says_each_side_and_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let (h, r, n) = files(dir.path());
    let (code, stdout, all) = on(&h, &["-f", &n, "--baseline", &r, "-o", "json"]);
    assert_eq!(code, 0, "{all}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let c = &v["comparison"]["contention"];
    assert_eq!(gpu(&c["recorded"]), (4.0, 3.0, 2.0, 1.0, 1));
    assert_eq!(gpu(&c["baseline"]), (4.0, 3.0, 2.0, 1.0, 1));
    // The candidate fails the job at its preemption: no retry; the other job's recorded
    // wait is what it was.
    assert_eq!(gpu(&c["candidate"]), (0.0, 3.0, 0.0, 0.0, 0));

    let (code, stdout, all) = on(&h, &["-f", &n, "--baseline", &r]);
    assert_eq!(code, 0, "{all}");
    assert!(
        stdout.contains("    overlap: baseline 1.0 → candidate 0 GPU-h (−1.0)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    candidate: retries ran 0 GPU-h; 0 while other jobs' GPUs waited; overlap with waiting demand 0 GPU-h (0.0% of the 3.0 GPU-h that waited)\n"),
        "{stdout}"
    );
    for format in ["markdown", "html"] {
        let (code, stdout, all) = on(&h, &["-f", &n, "--baseline", &r, "-o", format]);
        assert_eq!(code, 0, "{all}");
        assert!(
            stdout.contains("overlap: baseline 1.0 → candidate 0 GPU-h (−1.0)"),
            "{format}: {stdout}"
        );
    }
}

#[test]
fn a_shard_with_contention_on_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (h, r, _) = files(dir.path());
    let (code, stdout, all) = on(&h, &["-f", &r, "--shard", "0/2", "-o", "partial"]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{all}");
    assert!(
        all.contains("error: `--shard` writes one shard's part of the answer, and retries while others waited are summed over every job's times in one process: a merge of shards cannot sum them\n\nhint: leave out `--contention on`: the default, `auto`, leaves the section out of a shard and says so; or run one process"),
        "{all}"
    );
    let (code, _, all) = on(&h, &["-f", &r, "--emit", "armada", "--shard-count", "2"]);
    assert_eq!(code, 2, "{all}");
    assert!(
        all.contains("error: `--emit` runs the command as shards, and retries while others waited"),
        "{all}"
    );
    let (code, _, all) = run(&[
        "simulate",
        "--history",
        &h,
        "-f",
        &r,
        "--shard",
        "0/2",
        "-o",
        "partial",
        "--contention",
        "off",
    ]);
    assert_eq!(code, 0, "{all}");
}

/// Jobs in two pools, preempted up to three times, submitted minutes apart: retries and
/// waits that overlap in many ways, some Pending past the record under a higher limit.
fn busy_history() -> String {
    let mut s = String::new();
    for i in 0..24 {
        let pool = if i % 3 == 0 { "h100" } else { "a100" };
        let preempted = i % 4;
        let mut runs = Vec::new();
        for k in 0..preempted {
            runs.push(format!(
                r#"{{"pool":"{pool}","queuedFor":"{}m","conditions":["Preempted"],"runFor":"{}m"}}"#,
                5 + (i * 7 + k * 11) % 40,
                10 + (i * 13 + k * 5) % 50
            ));
        }
        runs.push(format!(
            r#"{{"pool":"{pool}","queuedFor":"{}m","runFor":"{}m","outcome":"succeeded"}}"#,
            (i * 3) % 25,
            20 + i % 30
        ));
        s.push_str(&format!(
            r#"{{"job":{{"id":"j{i}","queue":"{}","submittedAt":"2026-01-01T{:02}:{:02}:00Z","resources":{{"gpu":"{}","cpu":"{}"}}}},"runs":[{}]}}"#,
            if i % 2 == 0 { "ml" } else { "research" },
            9 + i / 6,
            (i * 9) % 60,
            1 + i % 4,
            2 + i % 3,
            runs.join(",")
        ));
        s.push('\n');
    }
    s
}

/// Candidate i's contention in `tune` is `simulate -f <candidate i> --baseline …`'s, side
/// for side, its `overlapChangeHours` the candidate's overlap less that baseline's, and its
/// OVERLAP column the change of its GPU overlap.
#[test]
fn tune_says_each_candidates_contention_as_simulate_does() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template.yaml");
    fs::write(&template, format!("{RETRIES}---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: research\nretryPolicies: [retry-preempted]\n")).unwrap();
    let template = template.to_str().unwrap().to_string();
    let h = dir.path().join("busy.jsonl");
    fs::write(&h, busy_history()).unwrap();
    let h = h.to_str().unwrap();
    let varies = [
        "--vary",
        "retry-preempted:spec.retryLimit=0..2",
        "--vary",
        "retry-preempted:spec.rules[0].action=Fail,Retry",
    ];
    let mut args = vec!["tune", "--contention", "on", "-f", &template, "--history", h];
    args.extend(varies);
    let (code, stdout, all) = run(&[&args[..], &["-o", "json"]].concat());
    assert_eq!(code, 0, "{all}");
    let tuned: Value = serde_json::from_str(&stdout).unwrap();
    let candidates = tuned["tune"]["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 6);
    let mut overlaps = Vec::new();
    for c in candidates {
        let id = c["id"].as_u64().unwrap().to_string();
        let (code, picked, all) =
            run(&[&["tune", "-f", &template][..], &varies, &["--pick", &id, "-o", "yaml"]].concat());
        assert_eq!(code, 0, "{all}");
        let file = dir.path().join(format!("c{id}.yaml"));
        fs::write(&file, picked).unwrap();
        let (code, simulated, all) = run(&[
            "simulate",
            "--contention",
            "on",
            "-f",
            file.to_str().unwrap(),
            "--baseline",
            &template,
            "--history",
            h,
            "-o",
            "json",
        ]);
        assert_eq!(code, 0, "{all}");
        let simulated: Value = serde_json::from_str(&simulated).unwrap();
        assert_eq!(
            c["contention"], simulated["comparison"]["contention"]["candidate"],
            "candidate {id}"
        );
        // Its OVERLAP column's number: the candidate's overlap less simulate's baseline's.
        let sides = &simulated["comparison"]["contention"];
        for resource in ["gpu", "cpu"] {
            let change = |side: &str| sides[side][resource]["overlapHours"].as_f64().unwrap();
            assert_eq!(
                c["overlapChangeHours"][resource].as_f64(),
                Some(change("candidate") - change("baseline")),
                "candidate {id}, {resource}"
            );
        }
        overlaps.push(c["contention"]["gpu"]["overlapHours"].as_f64().unwrap());
    }
    // The candidates do not all coincide alike: the check above compares different numbers.
    assert!(overlaps.iter().any(|o| *o != overlaps[0]), "{overlaps:?}");
    let (code, table, all) = run(&args);
    assert_eq!(code, 0, "{all}");
    assert!(table.contains("  OVERLAP  "), "{table}");
    assert!(
        table.contains(
            "(OVERLAP: the change of the retries' overlap with other jobs' waiting demand against the baseline"
        ),
        "{table}"
    );
}

/// Past 100 candidates, the default leaves the section to be asked for, and says so: every
/// candidate is a sweep of its own over the history's retries and waits. `--contention on` computes it.
#[test]
fn tune_past_a_hundred_candidates_says_the_section_waits_for_contention_on() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template.yaml");
    fs::write(&template, RETRIES).unwrap();
    let template = template.to_str().unwrap().to_string();
    let h = dir.path().join("busy.jsonl");
    fs::write(&h, busy_history()).unwrap();
    let h = h.to_str().unwrap();
    let search = [
        "tune",
        "-f",
        &template,
        "--history",
        h,
        "--vary",
        "retry-preempted:spec.retryLimit=0..100",
    ];
    let (code, stdout, all) = run(&[&search[..], &["-o", "json"]].concat());
    assert_eq!(code, 0, "{all}");
    assert!(
        all.contains("note: contention: not computed for 101 candidates (more than 100: each one is a sweep of its own over the history's retries and waits); pass --contention on to compute it\n"),
        "{all}"
    );
    let tuned: Value = serde_json::from_str(&stdout).unwrap();
    let candidates = tuned["tune"]["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 101);
    assert!(
        candidates.iter().all(|c| c.get("contention").is_none()),
        "{}",
        candidates[0]
    );
    let (code, stdout, all) = run(&[&search[..], &["--contention", "on", "-o", "json"]].concat());
    assert_eq!(code, 0, "{all}");
    assert!(!all.contains("not computed"), "{all}");
    let tuned: Value = serde_json::from_str(&stdout).unwrap();
    let candidates = tuned["tune"]["candidates"].as_array().unwrap();
    assert!(
        candidates.iter().all(|c| c["contention"]["retryRuns"].is_u64()),
        "{}",
        candidates[0]
    );
    // 100 candidates: computed by default.
    let (code, _, all) = run(&[
        &search[..5],
        &["--vary", "retry-preempted:spec.retryLimit=1..100", "-o", "json"],
    ]
    .concat());
    assert_eq!(code, 0, "{all}");
    assert!(!all.contains("not computed"), "{all}");
}

/// Requests past what a pool's sums hold at once (2^64 − 1 thousandths of a device: 2,100 jobs
/// of 9,007,199,254,740 GPUs each, the most a quantity reads as, all waiting at once) are
/// refused by every verb with the section, exit 3 and the same words, rather than summed wrong (the sums wrapped
/// and said 468,374,361,244,448 GPU-hours waited where the compute line said
/// 18,915,118,434,954,000); `--contention off` replays them.
#[test]
fn requests_past_what_a_pool_holds_at_once_are_refused_not_summed_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let h = dir.path().join("absurd.jsonl");
    let jobs: String = (0..2100)
        .map(|i| {
            format!(
                "{{\"job\":{{\"id\":\"j{i}\",\"queue\":\"ml\",\"submittedAt\":\"2026-11-16T10:00:00Z\",\
                 \"resources\":{{\"gpu\":\"9007199254740\"}}}},\"runs\":[{{\"pool\":\"a\",\"queuedFor\":\"1h\",\
                 \"runFor\":\"1h\",\"outcome\":\"succeeded\"}}]}}\n"
            )
        })
        .collect();
    fs::write(&h, jobs).unwrap();
    let (_, retries, none) = files(dir.path());
    let h = h.to_str().unwrap();
    let refused = "error: the history's requests, each × twice its job's runs and one, add up past \
                   18446744073709551615 thousandths of a device (2^64 − 1), the most the contention section \
                   adds up in a pool at once; check the history's `resources`, or pass --contention off\n";
    let runs: [Vec<&str>; 3] = [
        vec!["simulate", "--history", h, "-f", &retries, "-o", "json"],
        vec![
            "simulate",
            "--history",
            h,
            "-f",
            &retries,
            "--baseline",
            &none,
            "-o",
            "json",
        ],
        vec![
            "tune",
            "--history",
            h,
            "-f",
            &retries,
            "--baseline",
            &none,
            "--vary",
            "retry-preempted:spec.retryLimit=1..2",
        ],
    ];
    // What a failure prints: the end of the output (a plain replay's JSON streams its jobs
    // before the refusal, as it does for the record's own sums).
    let end = |all: &str| {
        all.chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<String>()
    };
    for args in &runs {
        let (code, _, all) = run(args);
        assert_eq!(code, 3, "{args:?}: {}", end(&all));
        assert!(all.ends_with(refused), "{args:?}: {}", end(&all));
        let (code, _, all) = run(&[&args[..], &["--contention", "off"][..]].concat());
        assert_eq!(code, 0, "{args:?} --contention off: {}", end(&all));
    }
}
