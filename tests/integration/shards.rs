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

use super::shards_ranges::printed_jobs;
use crate::simulate_report::{history as report_history, job, CUDA, EXIT2, NEW, OK, OLD, QUEUE};
use crate::support::pg::{fixture_db, WINDOW};
use crate::support::{format_output, retryctl, temp_home, write_what_if};
use crate::tune::sweep;

pub(crate) const SIMULATE_FORMATS: [&str; 6] = ["table", "json", "yaml", "jsonl", "html", "markdown"];
pub(crate) const TUNE_FORMATS: [&str; 5] = ["table", "json", "yaml", "html", "markdown"];

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

/// `--contention off` for a `simulate` or `tune` command line, as both its shards and its one
/// process run in these tests: a shard cannot sum the contention section, and the default's
/// merge says so (`contention_verbs`) where one process prints it. None for `suggest`, whose
/// merge compares the whole history and says the section as one process does.
pub(crate) fn contention_off(args: &[&str]) -> &'static [&'static str] {
    if args.first() == Some(&"suggest") {
        &[]
    } else {
        &["--contention", "off"]
    }
}

/// Each shard of `args` (a `simulate`, `tune` or `suggest` command line) into
/// `DIR/TAG-I.json`: exit 0 and nothing on stdout but the partial; [`contention_off`].
pub(crate) fn shards(dir: &Path, tag: &str, args: &[&str], n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            let mut all = args.to_vec();
            all.extend(["--shard", &shard, "-o", "partial"]);
            all.extend(contention_off(args));
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
pub(crate) fn same(dir: &Path, args: &[&str], partials: &[String], format: &str) -> Output {
    let mut one = args.to_vec();
    one.extend(["-o", format]);
    one.extend(contention_off(args));
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
pub(crate) fn every_split(dir: &Path, tag: &str, args: &[&str], formats: &[&str]) -> Vec<Output> {
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

pub(crate) const PLAIN: [&str; 5] = ["simulate", "-f", "new", "--history", "h.jsonl"];
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
    // An hour apart: all at once, each day's failures were an incident window of their own.
    for (k, line) in report_history().lines().enumerate() {
        let day = if k % 2 == 0 { "01" } else { "08" };
        h.push_str(&line.replacen(
            r#""queue":"q"}"#,
            &format!(r#""queue":"q","submittedAt":"2026-11-{day}T{k:02}:00:00Z"}}"#),
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
                .args(["--shard", &shard, "-o", "partial", "--contention", "off"])
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
            .args(["-o", format, "--contention", "off"])
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
        assert_eq!(
            err,
            format!("error: invalid `--shard` `{shard}`: {why} (expected `I/N` with 0 ≤ I < N, such as `0/4`)\n")
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
