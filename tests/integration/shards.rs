//! Shards and merge (docs/past-one-machine.md): for N in {1, 2, 3, 7} and every `-o`, the
//! shards' partials merged print the bytes (stdout and stderr) and exit with the status of one
//! process — a plain replay (expectations failing past the message cap, missing queues,
//! contradictions), one with entries that do not replay, a `--baseline` plan with Pending jobs
//! and estimates, a backtest, a tune sweep, a directory of YAML files, Lookout's database (real
//! PostgreSQL, 20,000 jobs too), a history whose jobs all fall in one shard; byte-range shards
//! of a directory of several files and of a YAML stream for N up to 16, diagnostics' line
//! numbers included; a Lookout shard receives only its own jobs and needs `--to`; every
//! refusal of `merge` in its exact words; and property tests: any history, any N, and any
//! files split exactly.

use std::fs;
use std::path::Path;
use std::process::Output;

use proptest::prelude::*;

use crate::simulate_report::{history as report_history, job, CUDA, EXIT2, NEW, OK, OLD, QUEUE};
use crate::support::pg::{fixture_db, WINDOW};
use crate::support::{format_output, retryctl, temp_home, write_what_if};
use crate::tune::sweep;

const SIMULATE_FORMATS: [&str; 6] = ["table", "json", "yaml", "jsonl", "html", "markdown"];
const TUNE_FORMATS: [&str; 5] = ["table", "json", "yaml", "html", "markdown"];

/// FNV-1a 64, as docs/past-one-machine.md defines a stdin job's shard (written out here, not
/// taken from the crate).
pub(crate) fn fnv(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

pub(crate) fn run(dir: &Path, args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path()).current_dir(dir).args(args).output().unwrap()
}

/// `merge FILES…` in `dir`, refused: exit 3 and nothing on stdout; its stderr.
pub(crate) fn refused(dir: &Path, files: &[&str]) -> String {
    let mut args = vec!["merge"];
    args.extend(files);
    let out = run(dir, &args);
    assert_eq!(out.status.code(), Some(3), "{files:?}: {}", format_output(&out));
    assert!(out.stdout.is_empty(), "{files:?}: {}", format_output(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Each shard of `args` (a `simulate` or `tune` command line) into `DIR/TAG-I.json`: exit 0
/// and nothing on stdout but the partial.
pub(crate) fn shards(dir: &Path, tag: &str, args: &[&str], n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            let mut all = args.to_vec();
            all.extend(["--shard", &shard, "-o", "partial"]);
            let out = run(dir, &all);
            assert_eq!(
                out.status.code(),
                Some(0),
                "shard {shard} of {args:?}: {}",
                format_output(&out)
            );
            let name = format!("{tag}-{i}.json");
            fs::write(dir.join(&name), &out.stdout).unwrap();
            name
        })
        .collect()
}

/// `merge PARTIALS -o FORMAT` prints what `args -o FORMAT` prints, stdout and stderr, with
/// its exit status; the output of one process, for the caller's own checks.
fn same(dir: &Path, args: &[&str], partials: &[String], format: &str) -> Output {
    let mut one = args.to_vec();
    one.extend(["-o", format]);
    let whole = run(dir, &one);
    merges_to(dir, &whole, partials, format, &format!("{args:?}"));
    whole
}

/// Merges `partials` with `-o format` and checks that it prints `whole` (the one process's
/// output of `what`, with that format): stdout, stderr and exit status.
pub(crate) fn merges_to(dir: &Path, whole: &Output, partials: &[String], format: &str, what: &str) {
    let mut merge = vec!["merge"];
    merge.extend(partials.iter().map(String::as_str));
    merge.extend(["-o", format]);
    let merged = run(dir, &merge);
    let what = format!("{what} -o {format} over {} shards", partials.len());
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole.stdout),
        "stdout of {what}"
    );
    assert_eq!(
        String::from_utf8_lossy(&merged.stderr),
        String::from_utf8_lossy(&whole.stderr),
        "stderr of {what}"
    );
    assert_eq!(merged.status.code(), whole.status.code(), "exit status of {what}");
}

/// Every N of the issue and every format.
fn every_split(dir: &Path, tag: &str, args: &[&str], formats: &[&str]) -> Vec<Output> {
    let mut outputs = Vec::new();
    for n in [1, 2, 3, 7] {
        let partials = shards(dir, &format!("{tag}{n}"), args, n);
        for format in formats {
            outputs.push(same(dir, args, &partials, format));
        }
    }
    outputs
}

/// The report's history (Pending jobs, estimates, changes of every kind), a GPU job, jobs of
/// a queue the documents lack and of none, and 120 jobs whose expectations fail: more
/// messages than stderr prints (100), spread over the shards.
pub(crate) fn history() -> String {
    let mut h = report_history();
    h.push_str(r#"{"job":{"id":"gpu1","queue":"q","resources":{"cpu":"8","gpu":"2"}},"runs":[{"conditions":["Preempted"],"runFor":"30m"},{"outcome":"succeeded","runFor":"2h"}]}"#);
    h.push('\n');
    for id in ["x1", "x2"] {
        h.push_str(&format!(
            r#"{{"job":{{"id":"{id}","queue":"other"}},"runs":[{{"conditions":["Preempted"],"runFor":"1m"}}]}}"#
        ));
        h.push('\n');
    }
    h.push_str(r#"{"job":{"id":"n1"},"runs":[{"outcome":"succeeded","runFor":"1m"}]}"#);
    h.push('\n');
    for i in 0..120 {
        h.push_str(&format!(
            r#"{{"job":{{"id":"e{i}","queue":"q"}},"runs":[{{"containers":[{{"name":"main","exitCode":2}}],"runFor":"1m"}}],"expect":{{"final":"Succeeded"}}}}"#
        ));
        h.push('\n');
    }
    h
}

pub(crate) fn what_if(history: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_what_if(dir.path(), OLD, NEW, QUEUE, history);
    dir
}

const PLAIN: [&str; 5] = ["simulate", "-f", "new", "--history", "h.jsonl"];
pub(crate) const PLAN: [&str; 7] = ["simulate", "-f", "new", "--baseline", "old", "--history", "h.jsonl"];

#[test]
fn a_plain_replay_merges_to_one_process() {
    let dir = what_if(&history());
    let outputs = every_split(dir.path(), "plain", &PLAIN, &SIMULATE_FORMATS);
    // What was compared: failed expectations past the cap, the missing queue, exit 1.
    let table = &outputs[0];
    assert_eq!(table.status.code(), Some(1));
    let err = String::from_utf8_lossy(&table.stderr);
    assert!(err.contains("… and "), "{err}");
    assert!(err.contains("queue `other` is not among the documents"), "{err}");
}

#[test]
fn entries_that_do_not_replay_merge_too() {
    let mut h = history();
    h.push_str("not json\n");
    h.push_str("{\"job\": {\"id\": \"bad\", \"queue\": \"q\"}, \"runs\": [{\"outcome\": \"exploded\"}]}\n");
    let dir = what_if(&h);
    for args in [&PLAIN[..], &PLAN[..]] {
        let partials = shards(dir.path(), "bad", args, 3);
        for format in ["table", "json"] {
            let whole = same(dir.path(), args, &partials, format);
            assert_eq!(whole.status.code(), Some(3), "{}", format_output(&whole));
        }
    }
}

#[test]
fn a_plan_with_pending_jobs_and_estimates_merges_to_one_process() {
    let dir = what_if(&history());
    let outputs = every_split(dir.path(), "plan", &PLAN, &SIMULATE_FORMATS);
    let json: serde_json::Value = serde_json::from_slice(&outputs[1].stdout).unwrap();
    // The estimates were compared: p1's worked out in simulate_report.rs.
    let p1 = json["comparison"]["changedJobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "p1")
        .unwrap();
    assert_eq!(p1["candidate"]["estimate"]["runsLeft"], 2);
    let mut exit_code = PLAN.to_vec();
    exit_code.extend(["--exit-code", "--all-changes"]);
    let partials = shards(dir.path(), "exit", &exit_code, 2);
    assert_eq!(same(dir.path(), &exit_code, &partials, "table").status.code(), Some(1));
}

/// `--backtest-at`: the backtest made at merge from every shard's trials; and its refusal.
#[test]
fn a_backtest_is_made_from_the_merged_trials() {
    let mut h = String::new();
    for (k, line) in report_history().lines().enumerate() {
        let day = if k % 2 == 0 { "01" } else { "08" };
        h.push_str(&line.replacen(
            r#""queue":"q"}"#,
            &format!(r#""queue":"q","submittedAt":"2026-11-{day}T00:00:00Z"}}"#),
            1,
        ));
        h.push('\n');
    }
    let dir = what_if(&h);
    let mut args = PLAN.to_vec();
    args.extend(["--backtest-at", "2026-11-05T00:00:00Z"]);
    for n in [2, 3] {
        let partials = shards(dir.path(), &format!("bt{n}"), &args, n);
        for format in ["json", "table"] {
            let whole = same(dir.path(), &args, &partials, format);
            assert_eq!(whole.status.code(), Some(0), "{}", format_output(&whole));
        }
    }
    // Too late a time: no trials to test, the usage error, from the merged trials alike; said
    // of the shards' flag (merge was given none), with what to do.
    let mut late = PLAN.to_vec();
    late.extend(["--backtest-at", "2027-01-01T00:00:00Z"]);
    let partials = shards(dir.path(), "late", &late, 2);
    let whole = run(
        dir.path(),
        &late.iter().copied().chain(["-o", "json"]).collect::<Vec<_>>(),
    );
    assert_eq!(whole.status.code(), Some(2));
    assert!(whole.stdout.is_empty());
    let said = "error: `--backtest-at 2027-01-01T00:00:00Z` leaves no trials to test the rates";
    let hint = "hint: pick an earlier time\n";
    let one = String::from_utf8_lossy(&whole.stderr);
    assert!(one.starts_with(said) && one.ends_with(hint), "{one}");
    let merged = run(dir.path(), &["merge", &partials[0], &partials[1], "-o", "json"]);
    assert_eq!(merged.status.code(), Some(2), "{}", format_output(&merged));
    assert!(merged.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&merged.stderr),
        one.replacen(
            said,
            "error: the shards' `--backtest-at 2027-01-01T00:00:00Z` leaves no trials to test the rates",
            1
        )
        .replacen(hint, "hint: run the shards again with an earlier `--backtest-at`\n", 1)
    );
}

#[test]
fn a_tune_sweep_merges_to_one_process() {
    let dir = what_if(&history());
    let outputs = every_split(dir.path(), "tune", &sweep("new"), &TUNE_FORMATS);
    let json: serde_json::Value = serde_json::from_slice(&outputs[1].stdout).unwrap();
    assert_eq!(json["tune"]["candidates"].as_array().unwrap().len(), 6);
    // Tune has no JSON Lines: refused as a usage error, before anything is read.
    let partials = shards(dir.path(), "tj", &sweep("new"), 1);
    let out = run(dir.path(), &["merge", &partials[0], "-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `-o jsonl` is not an output of `tune`: give table, json, yaml, html or markdown\n"
    );
}

/// More changed jobs of a transition than the HTML report lists (500 each): a partial keeps
/// the steps of only its shard's first 500 of each, and the rest of a job with no side
/// Pending past them not at all; the merged report still has every timeline and class it
/// prints, in the same bytes, and every other output every job (Pending jobs first: the
/// jobs after them are held back with them until the estimates are made).
#[test]
fn a_report_past_its_row_cap_merges_to_one_process() {
    let mut h = history();
    for i in 0..1_300 {
        // Rescued: no rule for a CUDA error in the old policy; lost: the new fails exit 2.
        let line = if i % 2 == 0 {
            job(&format!("c{i}"), &[CUDA, OK])
        } else {
            job(&format!("l{i}"), &[EXIT2, OK])
        };
        h.push_str(&line);
        h.push('\n');
    }
    let dir = what_if(&h);
    // One shard passes the cap (650 > 500: its workers stop building steps past the 500th),
    // three and seven do not.
    for n in [1, 3, 7] {
        let partials = shards(dir.path(), &format!("cap{n}"), &PLAN, n);
        for format in SIMULATE_FORMATS {
            same(dir.path(), &PLAN, &partials, format);
        }
        let whole = same(dir.path(), &PLAN, &partials, "html");
        let page = String::from_utf8(whole.stdout).unwrap();
        // 650 rescued and more: the first 500 listed, the rest counted.
        assert!(page.contains("<code>c0</code>"));
        assert!(!page.contains("<code>c1298</code>"));
    }
    // Past its first 500 rescued, a shard's rescued jobs are their records alone.
    let one = fs::read_to_string(dir.path().join("cap1-0.json")).unwrap();
    let last = one.lines().find(|l| l.contains("\"job\":\"c1298\"")).unwrap();
    assert!(last.starts_with("{\"at\":") && !last.contains("\"more\""), "{last}");
}

/// From stdin, each shard reads the whole history through a pipe that the writer fills in
/// pieces of its own sizes (a shard's reads cut the history differently from another's):
/// the shards still agree on what they read, and merge to what one process prints from
/// stdin. A digest of the reads as they came (not of the lines) made them disagree.
#[test]
fn shards_from_stdin_merge_to_one_process() {
    use std::io::Write;
    use std::process::Stdio;
    let mut h = history();
    // Several of the reader's blocks (128 KiB each, cut where a read ends).
    for i in 0..4000 {
        h.push_str(&job(&format!("s{i}"), &[CUDA, OK]));
        h.push('\n');
    }
    let dir = what_if(&h);
    let args = ["simulate", "-f", "new", "--baseline", "old", "--history", "-"];
    let n = 3;
    let partials: Vec<String> = (0..n)
        .map(|i| {
            let home = temp_home();
            let shard = format!("{i}/{n}");
            let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
                .env_clear()
                .env("HOME", home.path())
                .env("NO_COLOR", "1")
                .current_dir(dir.path())
                .args(args)
                .args(["--shard", &shard, "-o", "partial"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let piece = [997, 4096 + 13, 70_001][i];
            let bytes = h.as_bytes().to_vec();
            let writer = std::thread::spawn(move || {
                for chunk in bytes.chunks(piece) {
                    stdin.write_all(chunk).unwrap();
                    stdin.flush().unwrap();
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            });
            let out = child.wait_with_output().unwrap();
            writer.join().unwrap();
            assert_eq!(out.status.code(), Some(0), "shard {shard}: {}", format_output(&out));
            let name = format!("stdin-{i}.json");
            fs::write(dir.path().join(&name), &out.stdout).unwrap();
            name
        })
        .collect();
    for format in ["table", "json"] {
        let home = temp_home();
        let whole = retryctl(home.path())
            .current_dir(dir.path())
            .args(args)
            .args(["-o", format])
            .write_stdin(h.clone())
            .output()
            .unwrap();
        merges_to(dir.path(), &whole, &partials, format, "stdin");
    }
}

/// What stdin's opening reads before the digest is asked for (the blank lines before the
/// first job; a YAML text whole) is in the digest too: shards fed other bytes there are
/// refused as another history, not merged.
#[test]
fn stdin_shards_of_other_histories_are_refused() {
    let h = history();
    let yaml = std::fs::read_to_string(crate::support::root().join("testdata/histories/cuda-error.yaml")).unwrap();
    let other_yaml = std::fs::read_to_string(crate::support::root().join("testdata/histories/fail-fast.yaml")).unwrap();
    let dir = what_if(&h);
    let shard = |name: &str, i: u64, input: String| {
        let home = temp_home();
        let out = retryctl(home.path())
            .current_dir(dir.path())
            .args([
                "simulate",
                "-f",
                "new",
                "--history",
                "-",
                "--shard",
                &format!("{i}/2"),
                "-o",
                "partial",
            ])
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", format_output(&out));
        fs::write(dir.path().join(name), &out.stdout).unwrap();
    };
    for (what, first, second) in [
        ("blank lines", format!("\n \n{h}"), h.clone()),
        ("yaml", yaml, other_yaml),
    ] {
        shard("a.json", 0, first);
        shard("b.json", 1, second);
        let out = run(dir.path(), &["merge", "a.json", "b.json"]);
        assert_eq!(out.status.code(), Some(3), "{what}: {}", format_output(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "error: `b.json` was made from another history than `a.json` (the history's digest differs: was it changed between the shards?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
            "{what}"
        );
    }
}

/// Hostile job ids (markup, a `|`, a newline) go through a partial and out of the merge as
/// the one process prints them: inert text in HTML, one table row in Markdown, as the report escapes input.
#[test]
fn hostile_values_merge_as_inert_text() {
    let mut h = String::new();
    for (k, id) in [
        "\"><script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "</style><svg onload=alert(1)>",
        "a|b\n# heading",
    ]
    .iter()
    .enumerate()
    {
        let line = serde_json::json!({
            "job": {"id": id, "queue": "q"},
            "runs": [
                {"category": "cuda_error", "containers": [{"name": "main", "exitCode": 1}], "runFor": "5m", "node": format!("<b>n{k}</b>")},
                {"outcome": "succeeded", "runFor": "1h"}
            ]
        });
        h.push_str(&line.to_string());
        h.push('\n');
    }
    let dir = what_if(&h);
    for n in [2, 3] {
        let partials = shards(dir.path(), &format!("hostile{n}"), &PLAN, n);
        let html = String::from_utf8(same(dir.path(), &PLAN, &partials, "html").stdout).unwrap();
        for raw in ["<script>alert", "<img src=x", "<svg onload", "<b>n0"] {
            assert!(!html.contains(raw), "{raw} is markup in the merged page");
        }
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        let md = String::from_utf8(same(dir.path(), &PLAN, &partials, "markdown").stdout).unwrap();
        assert!(!md.lines().any(|l| l.starts_with("# heading")), "{md}");
        assert!(md.contains("a\\|b"), "{md}");
    }
}

/// A directory of YAML histories, one of them invalid: the invalid file's diagnostics are
/// said once, by the shard owning its first byte.
#[test]
fn a_directory_of_yaml_files_merges_to_one_process() {
    let dir = what_if("");
    let hist = dir.path().join("hist");
    fs::create_dir(&hist).unwrap();
    for (k, line) in report_history().lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let yaml = format!(
            "apiVersion: armadaproject.io/v1\nkind: FailureHistory\n{}",
            serde_yaml::to_string(&v).unwrap()
        );
        fs::write(hist.join(format!("h{k:02}.yaml")), yaml).unwrap();
    }
    fs::write(
        hist.join("zz-broken.yaml"),
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: [\n",
    )
    .unwrap();
    let args = ["simulate", "-f", "new", "--baseline", "old", "--history", "hist"];
    for n in [2, 3] {
        let partials = shards(dir.path(), &format!("yaml{n}"), &args, n);
        for format in ["table", "json"] {
            let whole = same(dir.path(), &args, &partials, format);
            assert_eq!(whole.status.code(), Some(3), "{}", format_output(&whole));
            assert!(String::from_utf8_lossy(&whole.stderr).contains("zz-broken.yaml"));
        }
    }
}

/// Every job in the first third of the file's bytes (the rest is one line of blanks): the
/// other shards' partials hold nothing, and the merge is still the whole answer.
// Was: ids whose FNV-1a falls in shard 0 of 3; files are split by byte range now.
#[test]
fn a_history_whose_jobs_all_fall_in_one_shard() {
    let mut h = String::new();
    for k in 0..12 {
        let runs = match k % 3 {
            0 => r#"[{"conditions":["Preempted"],"runFor":"10m"},{"conditions":["Preempted"],"runFor":"10m"}]"#,
            1 => {
                r#"[{"category":"cuda_error","containers":[{"name":"main","exitCode":1}],"runFor":"5m"},{"outcome":"succeeded","runFor":"1h"}]"#
            }
            _ => {
                r#"[{"containers":[{"name":"main","exitCode":2}],"runFor":"1m"},{"outcome":"succeeded","runFor":"1h"}]"#
            }
        };
        h.push_str(&format!(r#"{{"job":{{"id":"job-{k}","queue":"q"}},"runs":{runs}}}"#));
        h.push('\n');
    }
    let blanks = 2 * h.len();
    h.push_str(&" ".repeat(blanks));
    h.push('\n');
    let dir = what_if(&h);
    let partials = shards(dir.path(), "one", &PLAN, 3);
    for p in &partials[1..] {
        let v: serde_json::Value = serde_json::from_slice(&fs::read(dir.path().join(p)).unwrap()).unwrap();
        assert_eq!(v["entries"], serde_json::json!([]), "{p}");
        assert_eq!(v["end"]["totals"]["tally"]["comparison"]["jobs"], 0, "{p}");
    }
    for format in SIMULATE_FORMATS {
        same(dir.path(), &PLAN, &partials, format);
    }
}

/// Lookout's database: the shards' partials merge to the unsharded replay of the same
/// window (`--strict` with the fixture's unreadable rows: exit 1 both ways).
#[test]
fn a_lookout_source_merges_to_one_process() {
    let Some(db) = fixture_db("shards") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = crate::support::root();
    let (new, old) = (
        root.join("testdata/lookout/upstream-new").display().to_string(),
        root.join("testdata/lookout/upstream-old").display().to_string(),
    );
    let mut args = vec![
        "simulate",
        "-f",
        new.as_str(),
        "--baseline",
        old.as_str(),
        "--engine",
        "upstream",
        "--lookout-db",
        db.dsn.as_str(),
        "--queue",
        "ml",
    ];
    args.extend(WINDOW);
    for n in [1, 2, 3, 7] {
        let partials = shards(dir.path(), &format!("lk{n}"), &args, n);
        for format in ["table", "json", "jsonl", "markdown"] {
            same(dir.path(), &args, &partials, format);
        }
    }
    let mut strict = args.clone();
    strict.retain(|a| *a != "--baseline" && *a != old.as_str());
    strict.push("--strict");
    let partials = shards(dir.path(), "strict", &strict, 2);
    let whole = same(dir.path(), &strict, &partials, "json");
    assert_eq!(whole.status.code(), Some(1), "{}", format_output(&whole));
    let tune = [
        "tune",
        "-f",
        new.as_str(),
        "--baseline",
        old.as_str(),
        "--engine",
        "upstream",
        "--lookout-db",
        db.dsn.as_str(),
        "--queue",
        "ml",
        "--vary",
        "ml-new:retryLimit=1..3",
    ];
    let mut tune = tune.to_vec();
    tune.extend(WINDOW);
    let partials = shards(dir.path(), "lktune", &tune, 3);
    same(dir.path(), &tune, &partials, "json");
}

/// A Lookout shard asks the database for its own jobs only: `-v` prints the statement, which
/// selects them with PostgreSQL's own hash and holds no list of ids, and the jobs the shard
/// replays are exactly those the hash puts in it (asked of the database here), each job in
/// one shard.
// Was: the statement's id list; the database picks a shard's jobs itself now.
#[test]
fn a_lookout_shard_reads_only_its_own_jobs() {
    let Some(db) = fixture_db("shard_sql") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = crate::support::root();
    let new = root.join("testdata/lookout/new").display().to_string();
    let mut args = vec![
        "-v",
        "simulate",
        "-f",
        new.as_str(),
        "--lookout-db",
        db.dsn.as_str(),
        "--queue",
        "ml",
        "-o",
        "jsonl",
    ];
    args.extend(WINDOW);
    let all = run(dir.path(), &args);
    let statement = |out: &Output| {
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .find(|l| l.starts_with("lookout-db: "))
            .unwrap()
            .to_string()
    };
    assert!(!statement(&all).contains("hashtextextended"), "{}", statement(&all));
    let mut client = postgres::Client::connect(&db.dsn, postgres::NoTls).unwrap();
    let mut seen = Vec::new();
    for i in 0..3u64 {
        let shard = format!("{i}/3");
        let mut sharded = args.clone();
        sharded.extend(["--shard", &shard]);
        let out = run(dir.path(), &sharded);
        let said = statement(&out);
        assert!(
            said.contains(&format!(
                "AND ((hashtextextended(j.job_id, 0) % 3) + 3) % 3 = {i} ORDER BY"
            )),
            "{said}"
        );
        assert!(!said.contains("unnest") && !said.contains(" IN ("), "{said}");
        let want: Vec<String> = client
            .query(
                "SELECT job_id FROM job WHERE queue = 'ml' AND submitted >= '2026-11-15' AND submitted < '2026-11-22' \
                 AND ((hashtextextended(job_id, 0) % 3) + 3) % 3 = $1 ORDER BY job_id",
                &[&(i as i64)],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let got = printed_jobs(&out);
        // Jobs with rows left out are not printed: the shard's are among its own.
        assert!(
            got.iter().all(|j| want.contains(j)),
            "shard {shard}: {got:?} of {want:?}"
        );
        seen.extend(got);
    }
    seen.sort();
    let mut whole = printed_jobs(&all);
    whole.sort();
    assert!(whole.len() > 3, "{whole:?}");
    assert_eq!(seen, whole, "every job in exactly one shard");
}

/// `text`, a partial, with its seal made again: what another build (or a careful hand)
/// would write, to reach the checks behind the seal.
pub(crate) fn reseal(text: &str) -> String {
    let at = text.rfind(",\"xxh3\":\"").unwrap();
    let seal = xxhash_rust::xxh3::xxh3_128(&text.as_bytes()[..at]);
    format!("{},\"xxh3\":\"{seal:032x}\"}}\n", &text[..at])
}

/// `--since` counts back from each shard's own start: refused with shards.
#[test]
fn since_is_refused_with_shards() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "simulate",
            "--lookout-db",
            "postgres://nowhere/x",
            "--queue",
            "ml",
            "--since",
            "7d",
            "--shard",
            "0/2",
            "-o",
            "partial",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `--since` counts back from when each shard starts, so the shards would read different jobs: give `--from` and `--to` instead\n"
    );
}

#[test]
fn a_bad_shard_is_a_usage_error() {
    let dir = what_if(&history());
    for (shard, why) in [
        ("3/3", "the shard index is not below the number of shards"),
        ("0/0", "there are no shards"),
        ("1", "no `/`"),
        ("a/2", "the shard index is not a whole number"),
        // Past the cap, up to u64's top: merge would have to name every missing shard.
        ("0/1000001", "more than 1000000 shards"),
        ("0/18446744073709551615", "more than 1000000 shards"),
    ] {
        let mut args = PLAN.to_vec();
        args.extend(["--shard", shard]);
        let out = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{shard}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!(
                "error: invalid value '{shard}' for '--shard <I/N>': invalid `--shard` `{shard}`: {why} (expected `I/N` with 0 ≤ I < N, such as `0/4`)"
            )),
            "{err}"
        );
    }
}

/// A shard's own table (not a partial) says whose jobs it ranks, in every format that
/// prints the inputs line; the merge of the shards, one process's table, does not.
#[test]
fn a_shards_own_tune_table_says_it_is_one_shard() {
    let dir = what_if(&history());
    let d = dir.path();
    for format in ["table", "markdown", "html"] {
        let mut args = sweep("new").to_vec();
        args.extend(["--shard", "1/3", "-o", format]);
        let out = run(d, &args);
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        // The start of the words, which no format escapes, then how to get the cluster's.
        assert!(
            text.contains(" (shard 1 of 3: its jobs alone, not the cluster"),
            "{format}: {text}"
        );
        assert!(text.contains("every shard"), "{format}: {text}");
    }
    let partials = shards(d, "t", &sweep("new"), 3);
    let mut args = vec!["merge"];
    args.extend(partials.iter().map(String::as_str));
    let merged = run(d, &args);
    assert_eq!(merged.status.code(), Some(0), "{}", format_output(&merged));
    assert!(!String::from_utf8_lossy(&merged.stdout).contains("shard"));
    let whole = run(d, &sweep("new"));
    assert_eq!(merged.stdout, whole.stdout);
}

/// A partial that claims a million shards names the first ten missing and counts the rest
/// (without building a list of them); one that claims more is damaged: no retryctl writes
/// it. Both resealed, as an edit by hand would be.
#[test]
fn merge_names_ten_missing_shards_and_refuses_more_than_a_million() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let text = fs::read_to_string(d.join(&p[0])).unwrap();
    let claim = |count: &str, name: &str| {
        let edited = text.replacen(
            "\"shard\":{\"index\":0,\"count\":3}",
            &format!("\"shard\":{{\"index\":0,\"count\":{count}}}"),
            1,
        );
        assert_ne!(edited, text);
        fs::write(d.join(name), reseal(&edited)).unwrap();
        let out = run(d, &["merge", name]);
        assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
        assert!(out.stdout.is_empty());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert_eq!(
        claim("1000000", "million.json"),
        "error: shards 1/1000000, 2/1000000, 3/1000000, 4/1000000, 5/1000000, 6/1000000, 7/1000000, 8/1000000, 9/1000000, 10/1000000 and 999989 more are missing\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
    assert_eq!(
        claim("18446744073709551615", "huge.json"),
        "error: `huge.json` is damaged: its header's shard is 0/18446744073709551615, of more than 1000000 shards\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
}

/// A named pipe that serves a partial is refused at once (merge reads a partial's end
/// first, which a pipe cannot give; opening one to read it waits for a writer), exit 3,
/// nothing on stdout.
#[test]
fn merge_refuses_a_pipe() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 2);
    let fifo = d.join("pipe.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // No writer: merge must not wait for one (opening a pipe to read it would).
    assert_eq!(
        refused(d, &[&p[0], "pipe.json"]),
        "error: `pipe.json` is not a regular file: merge reads a partial from its end first, which a pipe or a device cannot give; write it to a file first\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
}

/// `merge ARGS` in `dir` with stdout a regular file that holds `before` and is written at
/// its end, and stderr a pipe (`merge … >> FILE` after `before` was written there): its exit
/// status, its stderr and the file's bytes after.
fn merge_into_a_file(dir: &Path, args: &[String], before: &str) -> (Option<i32>, String, String) {
    use std::io::{Seek, SeekFrom};
    let path = dir.join("merged.txt");
    fs::write(&path, before).unwrap();
    let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.seek(SeekFrom::End(0)).unwrap();
    let home = temp_home();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .current_dir(dir)
        .env_clear()
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .arg("merge")
        .args(args)
        .stdout(file)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, fs::read_to_string(&path).unwrap())
}

/// Into a regular file, merge writes its output as it comes (it holds it back otherwise,
/// until every partial is checked); a partial found damaged at its end then leaves the file
/// as it was before the merge, bytes for bytes: the same "nothing was printed".
#[test]
fn a_merge_into_a_file_leaves_it_as_it_was_when_refused() {
    // Enough changed jobs that most of the output is written to the file before the last
    // shard's end is read (more than the 256 KiB merge buffers).
    let mut h = history();
    for i in 0..3_000 {
        h.push_str(&job(&format!("c{i}"), &[CUDA, OK]));
        h.push('\n');
    }
    let dir = what_if(&h);
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let whole = run(d, &PLAN.iter().copied().chain(["-o", "json"]).collect::<Vec<_>>());
    assert!(whole.stdout.len() > 512 << 10, "{} bytes", whole.stdout.len());
    let args = |last: &str| {
        vec![p[0].as_str(), p[1].as_str(), last, "-o", "json"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (code, stderr, file) = merge_into_a_file(d, &args(&p[2]), "kept\n");
    assert_eq!((code, stderr.as_bytes()), (Some(0), &whole.stderr[..]));
    assert!(
        file == format!("kept\n{}", String::from_utf8_lossy(&whole.stdout)),
        "the file after the merge"
    );
    // With `--output-file`, the output goes to that file (through its own), not to stdout's.
    let mut named = args(&p[2]);
    named.extend(["--output-file".into(), "named.json".into()]);
    let (code, stderr, file) = merge_into_a_file(d, &named, "kept\n");
    assert_eq!(
        (code, stderr.as_bytes(), file.as_str()),
        (Some(0), &whole.stderr[..], "kept\n")
    );
    assert!(
        fs::read(d.join("named.json")).unwrap() == whole.stdout,
        "--output-file's file"
    );
    // The last shard's last entry edited, not sealed again: found once merge has written
    // all but the end of the output.
    let text = fs::read_to_string(d.join(&p[2])).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.len() - 2;
    let edited = lines[last].replacen("\"job\":\"", "\"job\":\"z", 1);
    assert_ne!(edited, lines[last]);
    lines[last] = &edited;
    fs::write(d.join("edited.json"), lines.join("\n") + "\n").unwrap();
    let refused = merge_into_a_file(d, &args("edited.json"), "kept\n");
    assert_eq!(
        refused,
        (
            Some(3),
            "error: `edited.json` is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)\nerror: cannot merge: 1 problem above (nothing was printed)\n".to_string(),
            "kept\n".to_string()
        )
    );
}

/// Every refusal, each file named with what is wrong, nothing on stdout, exit 3.
#[test]
fn merge_refuses_what_is_not_one_whole_run() {
    let dir = what_if(&history());
    let d = dir.path();
    let p = shards(d, "p", &PLAN, 3);
    let refused = |files: &[&str], want: &str| assert_eq!(refused(d, files), want, "{files:?}");
    let (p0, p1, p2) = (p[0].as_str(), p[1].as_str(), p[2].as_str());
    refused(
        &[p0, p2],
        "error: shard 1/3 is missing\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    refused(
        &[p0, p1, p1, p2],
        "error: shard 1/3 is given 2 times: `p-1.json`, `p-1.json`\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Another N.
    let q = shards(d, "q", &PLAN, 2);
    refused(
        &[p0, p1, p2, &q[1]],
        "error: `q-1.json` is shard 1/2 and `p-0.json` shard 0/3: the shards of one run share N\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Another run: other flags.
    let mut other = PLAN.to_vec();
    other.push("--all-changes");
    let o = shards(d, "o", &other, 3);
    refused(
        &[p0, &o[1], p2],
        "error: `o-1.json` is of another run than `p-0.json`: its documents, flags or source differ (its fingerprint is not the same)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Another history under the same name.
    let keep = fs::read(d.join("h.jsonl")).unwrap();
    fs::write(d.join("h.jsonl"), history().replace("cuda5", "cuda6")).unwrap();
    let a = shards(d, "a", &PLAN, 3);
    fs::write(d.join("h.jsonl"), keep).unwrap();
    refused(
        &[p0, p1, &a[2]],
        "error: `a-2.json` was made from another history than `p-0.json` (the history's digest differs: was it changed between the shards?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // Not a partial, truncated, newer: each file on its own.
    let whole = run(d, &PLAN.iter().copied().chain(["-o", "json"]).collect::<Vec<_>>());
    fs::write(d.join("plan.json"), &whole.stdout).unwrap();
    let text = fs::read_to_string(d.join(p1)).unwrap();
    fs::write(d.join("cut.json"), &text[..text.len() / 2]).unwrap();
    fs::write(
        d.join("newer.json"),
        text.replacen("\"version\":6,", "\"version\":7,", 1),
    )
    .unwrap();
    let entries = text.lines().count() - 2;
    refused(
        &[p0, "plan.json", "cut.json", "newer.json"],
        &format!(
            "error: `plan.json` is not a retryctl partial result (one begins with `{{\"partial\":\"retryctl\"`; `simulate … -o partial` writes them)\n\
             error: `cut.json` is truncated: it ends after {} entries without its end (was its shard cut short?)\n\
             error: `newer.json` was written by a newer retryctl (partial version 7; this one reads version 6): merge with that retryctl\n\
             error: cannot merge: 3 problems above (nothing was printed)\n",
            text[..text.len() / 2].matches('\n').count() - 1
        ),
    );
    assert!(entries > 3);
    // Another retryctl: the header says which wrote it.
    let ours = env!("CARGO_PKG_VERSION");
    fs::write(
        d.join("old-build.json"),
        reseal(&text.replacen(&format!("\"retryctl\":\"{ours}\""), "\"retryctl\":\"0.0.1\"", 1)),
    )
    .unwrap();
    refused(
        &[p0, "old-build.json", p2],
        &format!("error: `old-build.json` was written by retryctl 0.0.1 and `p-0.json` by retryctl {ours}: make every shard with one retryctl\nerror: cannot merge: 1 problem above (nothing was printed)\n"),
    );
    // A damaged entry is found as the merge reads it: still nothing on stdout.
    let lines: Vec<&str> = text.lines().collect();
    let mut broken = lines.clone();
    // Its place in the source kept (entries must stay in order), its change made garbage.
    let at = &lines[2][..lines[2].find("],").unwrap() + 1];
    let garbage = format!("{at},\"change\":{{\"diff\":7}}}},");
    broken[2] = &garbage;
    fs::write(d.join("broken.json"), reseal(&(broken.join("\n") + "\n"))).unwrap();
    let out = run(d, &["merge", p0, "broken.json", p2, "-o", "json"]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.ends_with(&format!("error: `broken.json` is damaged: entry 2: unknown field `diff`, expected one of `job`, `baseline`, `candidate`, `transition`, `computeAdded`, `computeRemoved` at line 1 column {}\n\
             error: cannot merge: 1 problem above (nothing was printed)\n", garbage.find("\"diff\"").unwrap() + 6)),
        "{err}"
    );
    // Edited by hand: a count in the totals made larger. Refused, whatever it changed.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("\"errors\":0", "\"errors\":1", 1);
    assert_ne!(lines[last], text.lines().last().unwrap());
    fs::write(d.join("edited.json"), lines.join("\n") + "\n").unwrap();
    refused(
        &[p0, "edited.json", p2],
        "error: `edited.json` is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // An entry edited, not sealed again, that still reads: found by the seal once the
    // entries are read (a partial is read once), said in the same words, and nothing the
    // fold said of that file is printed.
    let lines: Vec<&str> = text.lines().collect();
    let mut job_edited = lines.clone();
    let edited_entry = lines[1].replacen("\"job\":\"", "\"job\":\"z", 1);
    assert_ne!(edited_entry, lines[1]);
    job_edited[1] = &edited_entry;
    fs::write(d.join("entry-edited.json"), job_edited.join("\n") + "\n").unwrap();
    refused(
        &[p0, "entry-edited.json", p2],
        "error: `entry-edited.json` is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
    // An entry its command never writes, in a file sealed again: named, not trusted.
    let tune = shards(d, "t", &sweep("new"), 1);
    let tune_text = fs::read_to_string(d.join(&tune[0])).unwrap();
    let mut tune_lines: Vec<&str> = tune_text.lines().collect();
    let held = tune_lines.len() - 2;
    let change = format!("{},", lines[1].trim_end_matches(','));
    let last = tune_lines.len() - 1;
    let end = tune_lines[last].replacen(&format!("\"entries\":{held}"), &format!("\"entries\":{}", held + 1), 1);
    tune_lines[last] = &end;
    assert!(held > 0, "the change goes before an entry: {tune_text}");
    tune_lines.insert(1, &change);
    fs::write(d.join("foreign.json"), reseal(&(tune_lines.join("\n") + "\n"))).unwrap();
    let out = run(d, &["merge", "foreign.json"]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `foreign.json` is damaged: it holds a changed job, which a partial of `tune` never holds\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
    // A missing file.
    refused(
        &[p0, "nowhere.json", p2],
        "error: `nowhere.json` cannot be read: no such file or directory\nerror: cannot merge: 1 problem above (nothing was printed)\n",
    );
}

fn job_line(id: &str, queue: Option<&str>, runs: &[u8]) -> String {
    const KINDS: [&str; 5] = [
        r#"{"conditions":["Preempted"],"runFor":"10m"}"#,
        r#"{"category":"cuda_error","containers":[{"name":"main","exitCode":1}],"runFor":"5m"}"#,
        r#"{"containers":[{"name":"main","exitCode":2}],"runFor":"1m"}"#,
        r#"{"outcome":"succeeded","runFor":"1h"}"#,
        r#"{"outcome":"leaseReturned"}"#,
    ];
    let runs: Vec<&str> = runs.iter().map(|&k| KINDS[k as usize % KINDS.len()]).collect();
    let queue = queue.map_or(String::new(), |q| format!(r#","queue":"{q}""#));
    format!(r#"{{"job":{{"id":"{id}"{queue}}},"runs":[{}]}}"#, runs.join(","))
}

fn any_history() -> impl Strategy<Value = String> {
    let job = (
        "[a-z0-9-]{1,12}",
        prop_oneof![Just(Some("q")), Just(Some("other")), Just(None)],
        proptest::collection::vec(0u8..5, 0..6),
    );
    proptest::collection::vec(job, 0..40).prop_map(|jobs| {
        let mut seen = std::collections::HashSet::new();
        jobs.into_iter()
            .filter(|(id, ..)| seen.insert(id.clone()))
            .map(|(id, q, runs)| job_line(&id, q, &runs) + "\n")
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Any history, any number of shards: the merge is one process's answer, plan and replay.
    #[test]
    fn any_split_merges_to_the_unsharded_answer(h in any_history(), n in 1u64..=6, plan in any::<bool>()) {
        let dir = what_if(&h);
        let mut args: Vec<&str> = if plan { PLAN.to_vec() } else { PLAIN.to_vec() };
        // No job: one process refuses it (exit 3) unless `--allow-empty`, whose answer is the
        // merge's of its shards (each writes its partial).
        if h.is_empty() {
            args.push("--allow-empty");
        }
        let partials = shards(dir.path(), "any", &args, n);
        same(dir.path(), &args, &partials, "json");
        same(dir.path(), &args, &partials, "table");
    }
}

/// The N the byte-range tests split into: 16 puts several shards inside one file.
const RANGE_SPLITS: [u64; 5] = [1, 2, 3, 7, 16];

/// A YAML stream of FailureHistory documents (`---` between them), a SchedulerConfig among
/// them (it applies to every job of the file, wherever it stands), `tag` in the ids.
fn yaml_stream(tag: &str, jobs: usize) -> String {
    let mut text = String::from("# a stream of histories\n");
    for k in 0..jobs {
        let runs = match k % 3 {
            0 => format!("[{CUDA}, {OK}]"),
            1 => format!("[{EXIT2}, {OK}]"),
            _ => r#"[{"conditions": ["Preempted"], "runFor": "10m"}, {"outcome": "succeeded", "runFor": "1h"}]"#
                .to_string(),
        };
        text.push_str(&format!(
            "---\napiVersion: armadaproject.io/v1\nkind: FailureHistory\njob:\n  id: {tag}-{k}\n  queue: q\nruns: {runs}\n"
        ));
        if k == jobs / 2 {
            text.push_str("---\napiVersion: armadaproject.io/v1\nkind: SchedulerConfig\nglobalMaxRetries: 2\n");
        }
    }
    text
}

/// The line of `c.jsonl`'s `i`th entry (from 0): one blank line after every 50th.
fn c_line(i: usize) -> usize {
    i + 1 + i.div_ceil(50)
}

/// A directory of several files: JSON Lines with a job without id and a bad line far into
/// the file, a YAML stream, one JSON document, an invalid YAML file, an empty file.
fn several_files(dir: &Path) -> (String, usize) {
    let hist = dir.join("hist");
    fs::create_dir(&hist).unwrap();
    let mut a = String::new();
    for i in 0..300 {
        a.push_str(&job(&format!("a{i}"), &[CUDA, OK]));
        a.push('\n');
    }
    fs::write(hist.join("a.jsonl"), &a).unwrap();
    fs::write(hist.join("b.yaml"), yaml_stream("b", 40)).unwrap();
    let mut c = String::new();
    let mut bad_line = 0;
    for i in 0..500 {
        match i {
            200 => c.push_str(&format!("{{\"runs\":[{EXIT2},{OK}]}}")),
            410 => {
                c.push_str("{\"job\": {\"id\": \"bad\", \"queue\": \"q\"}, \"runs\": [{\"outcome\": \"exploded\"}]}");
            }
            430 => {
                bad_line = i + 1;
                c.push_str("not json");
            }
            _ => c.push_str(&job(&format!("c{i}"), &[EXIT2, OK])),
        }
        // Blank lines and `\r`: numbered as lines, never jobs.
        c.push_str(if i % 50 == 0 { "\r\n\n" } else { "\n" });
    }
    // Line numbers count the blank lines before the bad one.
    let bad_line = c_line(bad_line - 1);
    fs::write(hist.join("c.jsonl"), &c).unwrap();
    fs::write(
        hist.join("d.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
            "job": {"id": "d1", "queue": "q"},
            "runs": [{"conditions": ["Preempted"], "runFor": "10m"}, {"outcome": "succeeded", "runFor": "1h"}]
        }))
        .unwrap(),
    )
    .unwrap();
    fs::write(
        hist.join("e-broken.yaml"),
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: [\n",
    )
    .unwrap();
    fs::write(hist.join("f-empty.jsonl"), "").unwrap();
    (c, bad_line)
}

/// A directory of several files, for every N up to 16 and every format: the merge prints
/// one process's bytes, the bad line's message with its line in its file (a shard past the
/// file's start counts the lines before its range), the job without id named by its line.
#[test]
fn byte_range_shards_of_a_directory_merge_to_one_process() {
    let dir = what_if("");
    let (c, bad_line) = several_files(dir.path());
    let args = ["simulate", "-f", "new", "--baseline", "old", "--history", "hist"];
    for n in RANGE_SPLITS {
        let partials = shards(dir.path(), &format!("dir{n}"), &args, n);
        for format in SIMULATE_FORMATS {
            let whole = same(dir.path(), &args, &partials, format);
            assert_eq!(whole.status.code(), Some(3), "{}", format_output(&whole));
            let err = String::from_utf8_lossy(&whole.stderr);
            assert!(
                err.contains(&format!(
                    "error: hist/c.jsonl:{bad_line}: invalid JSON at column 2: expected ident\n"
                )),
                "{err}"
            );
            assert!(err.contains("hist/e-broken.yaml"), "{err}");
        }
    }
    // The bad line is well inside the last third of c.jsonl: at 16 shards, not the first
    // shard's, nor the first of that file's.
    assert_eq!(c.lines().nth(bad_line - 1), Some("not json"));
    let mut owner = None;
    for i in 0..16 {
        let text = fs::read_to_string(dir.path().join(format!("dir16-{i}.json"))).unwrap();
        if text.contains("invalid JSON at column 2") {
            assert!(owner.is_none(), "said by two shards");
            owner = Some(i);
            assert!(text.contains(&format!("c.jsonl:{bad_line}:")), "{text}");
        }
    }
    assert!(owner.is_some_and(|i| i > 8), "{owner:?}");
    // The job without id has the id one process gives it: its line.
    let whole = run(
        dir.path(),
        &["simulate", "-f", "new", "--history", "hist", "-o", "jsonl"],
    );
    let without_id = String::from_utf8_lossy(&whole.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["job"].as_str().is_some_and(|j| j.starts_with("c-")))
        .map(|v| v["job"].clone());
    assert_eq!(without_id, Some(serde_json::json!(format!("c-{}", c_line(200)))));
}

/// A YAML stream (documents split by `---`, a SchedulerConfig in the middle) for every N up
/// to 16: one process's bytes in every format, and the shards' jobs split the stream.
#[test]
fn byte_range_shards_of_a_yaml_stream_merge_to_one_process() {
    let dir = what_if("");
    fs::write(dir.path().join("s.yaml"), yaml_stream("s", 60)).unwrap();
    let args = ["simulate", "-f", "new", "--baseline", "old", "--history", "s.yaml"];
    for n in RANGE_SPLITS {
        let partials = shards(dir.path(), &format!("ys{n}"), &args, n);
        for format in SIMULATE_FORMATS {
            same(dir.path(), &args, &partials, format);
        }
    }
    // A tune sweep over the same stream.
    let tune = [
        "tune",
        "-f",
        "new",
        "--baseline",
        "old",
        "--history",
        "s.yaml",
        "--vary",
        "p:spec.retryLimit=1..3",
    ];
    for n in [3, 16] {
        let partials = shards(dir.path(), &format!("yt{n}"), &tune, n);
        for format in TUNE_FORMATS {
            same(dir.path(), &tune, &partials, format);
        }
    }
}

/// The job ids `simulate -o jsonl` prints, in order.
fn printed_jobs(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["job"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Files of random lines: jobs, blank lines, padding, a YAML stream now and then.
fn any_files() -> impl Strategy<Value = Vec<(String, String)>> {
    let line = prop_oneof![
        6 => (0u8..5, 0usize..40).prop_map(|(k, pad)| (Some(k), pad)),
        1 => (0usize..300).prop_map(|pad| (None, pad)),
    ];
    let file = (any::<bool>(), proptest::collection::vec(line, 0..30));
    proptest::collection::vec(file, 1..5).prop_map(|files| {
        let mut next = 0;
        files
            .into_iter()
            .enumerate()
            .map(|(f, (yaml, lines))| {
                let mut text = String::new();
                for (kind, pad) in lines {
                    match kind {
                        Some(k) if yaml => {
                            text.push_str(&format!(
                                "---\n# {}\nkind: FailureHistory\napiVersion: armadaproject.io/v1\njob: {{id: j{next}, queue: q}}\nruns: [{}]\n",
                                "x".repeat(pad),
                                [CUDA, EXIT2, OK, CUDA, OK][k as usize]
                            ));
                            next += 1;
                        }
                        Some(k) => {
                            text.push_str(&job(&format!("j{next}"), &[[CUDA, EXIT2, OK, CUDA, OK][k as usize]]));
                            text.push_str(&" ".repeat(pad));
                            text.push('\n');
                            next += 1;
                        }
                        None => {
                            text.push_str(&" ".repeat(pad));
                            text.push('\n');
                        }
                    }
                }
                let name = format!("{f:02}.{}", if yaml { "yaml" } else { "jsonl" });
                (name, text)
            })
            .filter(|(name, text)| name.ends_with(".jsonl") || text.contains("FailureHistory"))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random files, random N: the shards' jobs, shard after shard, are the source's jobs,
    /// each once, in order.
    #[test]
    fn byte_range_shards_split_any_files_exactly(files in any_files(), n in 1u64..=20) {
        let dir = what_if("");
        let hist = dir.path().join("hist");
        fs::create_dir(&hist).unwrap();
        for (name, text) in &files {
            fs::write(hist.join(name), text).unwrap();
        }
        let args = ["simulate", "-f", "new", "--history", "hist", "-o", "jsonl"];
        let whole = printed_jobs(&run(dir.path(), &args));
        let mut split = Vec::new();
        for i in 0..n {
            let shard = format!("{i}/{n}");
            let mut sharded = args.to_vec();
            sharded.extend(["--shard", &shard]);
            split.extend(printed_jobs(&run(dir.path(), &sharded)));
        }
        let want: Vec<String> = (0..whole.len()).map(|k| format!("j{k}")).collect();
        prop_assert_eq!(&whole, &want);
        prop_assert_eq!(split, want);
    }
}

/// `--shard` with `--lookout-db` needs `--to`: a usage error, nothing on stdout.
#[test]
fn a_lookout_shard_needs_to() {
    let dir = tempfile::tempdir().unwrap();
    for extra in [&[][..], &["--from", "2026-11-15T00:00:00Z"][..]] {
        let mut args = vec![
            "simulate",
            "-f",
            "new",
            "--lookout-db",
            "postgres://nowhere/x",
            "--queue",
            "ml",
            "--shard",
            "1/4",
            "-o",
            "partial",
        ];
        args.extend(extra);
        let out = run(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
        assert!(out.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "error: `--shard` with `--lookout-db` needs `--to`: shards started at different times would read different jobs\n\nhint: give every shard the same `--to`, further back than the longest job runs\n"
        );
    }
}

/// 20,000 jobs of 3 runs each, 4 shards (the size at which shards once failed after 4,499
/// entries): each shard receives its own jobs only, and the merge prints one process's bytes.
#[test]
fn lookout_shards_of_twenty_thousand_jobs_merge_to_one_process() {
    let Some(mut db) = crate::support::pg::lookout_db("shards_20k") else {
        return;
    };
    db.client
        .batch_execute(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations)
             SELECT format('j%s', lpad(i::text, 6, '0')), 'q', 'o', 's', 1, 1024, 0, 0, 1, timestamp '2026-11-16' + i * interval '1 second', 4, now(), 0, '{}'::jsonb
               FROM generate_series(1, 20000) i;
             INSERT INTO job_run (run_id, job_id, cluster, node, leased, started, finished, job_run_state, exit_code)
             SELECT format('r%s-%s', i, k), format('j%s', lpad(i::text, 6, '0')), 'c', 'n', timestamp '2026-11-16' + (i * 10 + k) * interval '1 second',
                    timestamp '2026-11-16' + (i * 10 + k) * interval '1 second', timestamp '2026-11-16' + (i * 10 + k + 1) * interval '1 second',
                    CASE WHEN k = 2 THEN 3 ELSE 4 END, CASE WHEN k = 2 THEN 0 ELSE 137 END
               FROM generate_series(1, 20000) i, generate_series(0, 2) k;",
        )
        .unwrap();
    let dir = what_if("");
    let mut args = vec![
        "simulate",
        "-f",
        "new",
        "--baseline",
        "old",
        "--lookout-db",
        db.dsn.as_str(),
        "--queue",
        "q",
    ];
    args.extend(WINDOW);
    let partials = shards(dir.path(), "big", &args, 4);
    let mut jobs = 0;
    for p in &partials {
        let v: serde_json::Value = serde_json::from_slice(&fs::read(dir.path().join(p)).unwrap()).unwrap();
        let read = v["end"]["lookout"]["totals"]["jobs_read"].as_u64();
        let read = read.unwrap_or_else(|| panic!("{v}"));
        assert!((4000..6000).contains(&read), "{p} read {read} jobs");
        jobs += read;
    }
    assert_eq!(jobs, 20_000);
    for format in ["json", "table"] {
        let whole = same(dir.path(), &args, &partials, format);
        assert_eq!(whole.status.code(), Some(0), "{}", format_output(&whole));
    }
}

/// stdin cannot be read from the middle: its shards keep the FNV-1a 64 of the job id, each
/// reading the whole stream, and a line without id goes by its default id (`stdin-LINE`).
#[test]
fn stdin_shards_split_by_the_job_ids_hash() {
    let dir = what_if("");
    let mut h = String::new();
    let mut ids = Vec::new();
    for k in 0..40 {
        if k == 17 {
            h.push_str(&format!("{{\"runs\":[{OK}]}}\n"));
            ids.push(format!("stdin-{}", k + 1));
            continue;
        }
        let id = format!("s{k}");
        h.push_str(&job(&id, &[CUDA, OK]));
        h.push('\n');
        ids.push(id);
    }
    let n = 3;
    let mut seen = Vec::new();
    for i in 0..n {
        let home = temp_home();
        let out = retryctl(home.path())
            .current_dir(dir.path())
            .args([
                "simulate",
                "-f",
                "new",
                "--history",
                "-",
                "-o",
                "jsonl",
                "--shard",
                &format!("{i}/{n}"),
            ])
            .write_stdin(h.clone())
            .output()
            .unwrap();
        let want: Vec<String> = ids.iter().filter(|id| fnv(id) % n == i).cloned().collect();
        assert_eq!(printed_jobs(&out), want, "shard {i}/{n}");
        seen.extend(want);
    }
    assert_eq!(seen.len(), ids.len());
}

/// A YAML file past the 8 MiB limit, its `---` markers spread over several shards' ranges:
/// refused once, by the shard owning its first byte, as one process refuses it.
#[test]
fn a_yaml_file_past_the_limit_is_refused_once() {
    let dir = what_if("");
    let hist = dir.path().join("hist");
    fs::create_dir(&hist).unwrap();
    let mut a = String::new();
    for i in 0..50 {
        a.push_str(&job(&format!("a{i}"), &[CUDA, OK]));
        a.push('\n');
    }
    fs::write(hist.join("a.jsonl"), &a).unwrap();
    let doc = yaml_stream("big", 1);
    let mut big = String::new();
    while big.len() <= 9 << 20 {
        big.push_str(&doc);
    }
    fs::write(hist.join("b.yaml"), big).unwrap();
    fs::write(hist.join("c.jsonl"), a.replace("\"a", "\"c")).unwrap();
    let args = ["simulate", "-f", "new", "--baseline", "old", "--history", "hist"];
    for n in [3, 7] {
        let partials = shards(dir.path(), &format!("big{n}"), &args, n);
        let whole = same(dir.path(), &args, &partials, "table");
        assert_eq!(whole.status.code(), Some(3), "{}", format_output(&whole));
        let err = String::from_utf8_lossy(&whole.stderr);
        assert_eq!(err.matches("hist/b.yaml: larger than 8 MiB").count(), 1, "{err}");
    }
}
