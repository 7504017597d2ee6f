//! A sharded suggest (docs/past-one-machine.md, docs/suggest.md): the shards learn (pass 1
//! over their byte range), the merge folds their learning, proposes and compares over the
//! history it reads again. For N in {1, 2, 3, 7} the merge prints the bytes (stdout and
//! stderr) and the exit status of one process, for every `-o`; also with `--engine upstream
//! --categorizer`, with `--backtest-at`, and over a directory of two history files. Then the
//! refusals in their exact words: a source the merge cannot read again, a missing shard, a
//! history or baseline changed since the shards read them, a format of another command.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::shards::{merges_to, refused, run, shards};
use crate::support::{format_output, root};

const FORMATS: [&str; 6] = ["table", "json", "yaml", "policy", "markdown", "html"];

/// The planted history and today's policy, as `h.jsonl` and `today.yaml` in a directory.
fn planted() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = root().join("testdata/suggest");
    fs::copy(data.join("planted.jsonl"), dir.path().join("h.jsonl")).unwrap();
    fs::copy(data.join("today.yaml"), dir.path().join("today.yaml")).unwrap();
    dir
}

const SUGGEST: [&str; 5] = ["suggest", "--history", "h.jsonl", "--baseline", "today.yaml"];

/// `args -o FORMAT` in one process: its output, checked to have answered (exit 0).
fn one(dir: &Path, args: &[&str], format: &str) -> Output {
    let mut all = args.to_vec();
    all.extend(["-o", format]);
    let out = run(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{all:?}: {}", format_output(&out));
    assert!(!out.stdout.is_empty(), "{all:?}");
    out
}

/// For each N, the shards of `args`, merged with each format, print one process's bytes.
fn every_split(dir: &Path, tag: &str, args: &[&str], ns: &[u64], formats: &[&str]) {
    let wholes: Vec<Output> = formats.iter().map(|f| one(dir, args, f)).collect();
    for &n in ns {
        let partials = shards(dir, &format!("{tag}{n}"), args, n);
        for (format, whole) in formats.iter().zip(&wholes) {
            merges_to(dir, whole, &partials, format, &format!("{args:?}"));
        }
    }
}

#[test]
fn a_sharded_suggest_merges_to_one_process_in_every_format() {
    let dir = planted();
    every_split(dir.path(), "p", &SUGGEST, &[1, 2, 3, 7], &FORMATS);
}

#[test]
fn an_upstream_proposal_with_the_deployed_categorizer_merges_to_one_process() {
    let dir = planted();
    fs::copy(
        root().join("testdata/categorizer/executor-config.yaml"),
        dir.path().join("executor.yaml"),
    )
    .unwrap();
    // Today's policy as today's Armada stores it (v1beta1).
    fs::copy(
        root().join("testdata/suggest/today-upstream.yaml"),
        dir.path().join("today-upstream.yaml"),
    )
    .unwrap();
    // Today's Armada never retries the planted preemptions: the shards' merge is the subject.
    let args = [
        &["suggest", "--history", "h.jsonl", "--baseline", "today-upstream.yaml"][..],
        &["--engine", "upstream", "--categorizer", "executor.yaml"],
        &crate::suggest::ANY_CONTRADICTIONS,
    ]
    .concat();
    every_split(dir.path(), "u", &args, &[3], &["table", "json", "policy"]);
}

#[test]
fn a_backtest_merges_to_one_process() {
    let dir = planted();
    let args = [&SUGGEST[..], &["--backtest-at", "2026-11-15T00:00:00Z"]].concat();
    let json = one(dir.path(), &args, "json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(v["suggest"]["backtest"].is_object(), "the one process backtests: {v}");
    every_split(dir.path(), "b", &args, &[2, 3], &["table", "json", "html"]);
}

#[test]
fn a_directory_of_two_history_files_merges_to_one_process() {
    let dir = planted();
    let text = fs::read_to_string(dir.path().join("h.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (a, b) = lines.split_at(lines.len() / 3);
    fs::create_dir(dir.path().join("hist")).unwrap();
    fs::write(dir.path().join("hist/a.jsonl"), a.join("\n") + "\n").unwrap();
    fs::write(dir.path().join("hist/b.jsonl"), b.join("\n") + "\n").unwrap();
    let args = ["suggest", "--history", "hist", "--baseline", "today.yaml"];
    every_split(dir.path(), "d", &args, &[2, 7], &["json", "table"]);
}

/// `--queue ml` over a week of two queues: each shard reads every queue's jobs (the incident
/// windows are the cluster's) and learns from `ml`'s alone, as one process does. A shard once
/// learned from every queue: its merge proposed a rule for the other queue's failures and
/// gave another verdict and exit status than one process.
#[test]
fn a_sharded_suggest_of_one_queue_learns_from_that_queue_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = root().join("testdata/suggest/two-queues");
    fs::copy(data.join("week.jsonl"), dir.path().join("week.jsonl")).unwrap();
    fs::create_dir(dir.path().join("current")).unwrap();
    for f in ["policies.yaml", "executor.yaml"] {
        fs::copy(data.join("current").join(f), dir.path().join("current").join(f)).unwrap();
    }
    let args = [
        "suggest",
        "--history",
        "week.jsonl",
        "--queue",
        "ml",
        "--baseline",
        "current/",
    ];
    for format in ["json", "table"] {
        let mut all = args.to_vec();
        all.extend(["-o", format]);
        let whole = run(dir.path(), &all);
        let stderr = String::from_utf8_lossy(&whole.stderr);
        assert!(
            stderr.contains("note: learned from queue `ml` alone: 10 jobs of other queues were compared"),
            "{}",
            format_output(&whole)
        );
        for n in [2, 3] {
            let partials = shards(dir.path(), &format!("q{format}{n}"), &args, n);
            merges_to(dir.path(), &whole, &partials, format, &format!("{args:?}"));
        }
    }
}

/// `args` refused before anything is read (stdin included): exit 2, nothing on stdout; its
/// stderr.
fn usage_error(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", format_output(&out));
    assert!(out.stdout.is_empty(), "{args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_source_the_merge_cannot_read_again_is_refused() {
    let dir = planted();
    assert_eq!(
        usage_error(
            dir.path(),
            &["suggest", "--history", "-", "--shard", "0/2", "-o", "partial"]
        ),
        "error: `suggest` with `--shard` cannot read `--history -`: its merge reads the history again to compare the proposal, and stdin is read once\n\n\
         hint: write the history to a file first (`retryctl history … --output-file FILE` exports one), then give `--history FILE`\n"
    );
    assert_eq!(
        usage_error(
            dir.path(),
            &[
                "suggest",
                "--lookout-db",
                "postgresql://nowhere/lookout",
                "--queue",
                "ml",
                "--to",
                "2026-11-01T00:00:00Z",
                "--shard",
                "1/4",
                "-o",
                "partial"
            ]
        ),
        "error: `suggest` with `--shard` cannot read `--lookout-db`: its merge reads the history again to compare the proposal, and it reads files only (a partial never holds the DSN)\n\n\
         hint: export the jobs to a file first (`retryctl history --lookout-db DSN --queue Q --from … --to … --output-file FILE`), then give `--history FILE`\n"
    );
    // `-o partial` alone is one shard of one: the same refusal.
    assert!(usage_error(dir.path(), &["suggest", "--history", "-", "-o", "partial"])
        .starts_with("error: `suggest` with `-o partial` cannot read `--history -`"));
    // A shard prints its learning, nothing else.
    assert_eq!(
        usage_error(dir.path(), &[&SUGGEST[..], &["--shard", "0/2"]].concat()),
        "error: `suggest --shard 0/2` writes what the shard learned: give `-o partial`, then `retryctl merge` the shards' partials\n"
    );
}

#[test]
fn merge_refuses_a_missing_shard_and_inputs_changed_since_the_shards() {
    let dir = planted();
    let partials = shards(dir.path(), "m", &SUGGEST, 3);
    assert_eq!(
        refused(dir.path(), &["m-0.json", "m-2.json"]),
        "error: shard 1/3 is missing\nerror: cannot merge: 1 problem above (nothing was printed)\n"
    );
    let all: Vec<&str> = partials.iter().map(String::as_str).collect();
    // Today's policy edited since: the comparison would not be the shards' run.
    let today = fs::read_to_string(dir.path().join("today.yaml")).unwrap();
    fs::write(
        dir.path().join("today.yaml"),
        today.replace("retryLimit: 3", "retryLimit: 4"),
    )
    .unwrap();
    assert_eq!(
        refused(dir.path(), &all),
        "error: `m-0.json` is of inputs that changed since its shards read them: the baseline, the categorizer or the scheduler config at the paths its run names are not the same (the fingerprint differs); merge where the shards' inputs are, unchanged\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
    fs::write(dir.path().join("today.yaml"), &today).unwrap();
    // The history grown since: the digest says it.
    let mut h = fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("h.jsonl"))
        .unwrap();
    std::io::Write::write_all(
        &mut h,
        b"{\"job\":{\"id\":\"late\"},\"runs\":[{\"outcome\":\"succeeded\"}]}\n",
    )
    .unwrap();
    assert_eq!(
        refused(dir.path(), &all),
        "error: `m-0.json` was made from another history than `h.jsonl` is now (the history's digest differs: was it changed since the shards read it?)\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    );
}

#[test]
fn merge_refuses_a_format_the_partials_command_does_not_have() {
    let dir = planted();
    let partials = shards(dir.path(), "f", &SUGGEST, 2);
    let out = run(dir.path(), &["merge", &partials[0], &partials[1], "-o", "jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `-o jsonl` is not an output of `suggest`: give table, json, yaml, html, markdown or policy\n"
    );
    let plan = crate::shards::what_if(&crate::shards::history());
    let partials = shards(plan.path(), "s", &crate::shards::PLAN, 2);
    let out = run(plan.path(), &["merge", &partials[0], &partials[1], "-o", "policy"]);
    assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: `-o policy` is not an output of `simulate`: give table, json, yaml, jsonl, html or markdown\n"
    );
}

/// Lines that cannot be read: one process says them in its comparison pass, in the history's
/// order with their line numbers; so does the merge's, which reads the history again (the
/// shards only count them).
#[test]
fn entries_that_cannot_be_read_are_said_by_the_merge_as_by_one_process() {
    let dir = planted();
    let text = fs::read_to_string(dir.path().join("h.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for at in [3, lines.len() / 2, lines.len() - 2] {
        lines.insert(at, "{\"job\": not json".to_string());
    }
    fs::write(dir.path().join("h.jsonl"), lines.join("\n") + "\n").unwrap();
    let whole = run(dir.path(), &[&SUGGEST[..], &["-o", "json"]].concat());
    let stderr = String::from_utf8_lossy(&whole.stderr);
    assert_eq!(stderr.matches("h.jsonl:").count(), 3, "{stderr}");
    for n in [2, 7] {
        let partials = shards(dir.path(), &format!("e{n}"), &SUGGEST, n);
        merges_to(dir.path(), &whole, &partials, "json", "suggest with bad lines");
    }
}

/// A `--backtest-at` that leaves no job to test on: one process's usage error (exit 2), said
/// by the merge of the shards' flag, with what to do; nothing on stdout.
#[test]
fn a_backtest_without_test_jobs_is_refused_of_the_shards_flag() {
    let dir = planted();
    let args = [&SUGGEST[..], &["--backtest-at", "2030-01-01T00:00:00Z"]].concat();
    let one = run(dir.path(), &args);
    assert_eq!(one.status.code(), Some(2), "{}", format_output(&one));
    let partials = shards(dir.path(), "t", &args, 2);
    let out = run(dir.path(), &["merge", &partials[0], &partials[1]]);
    assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    let jobs = fs::read_to_string(dir.path().join("h.jsonl")).unwrap().lines().count();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: the shards' `--backtest-at 2030-01-01T00:00:00Z` leaves {jobs} jobs to learn from and 0 to test on: both need at least one\n\n\
             hint: run the shards again with a `--backtest-at` between the first and the last submission\n"
        )
    );
    assert_eq!(
        String::from_utf8_lossy(&one.stderr),
        format!(
            "error: `--backtest-at 2030-01-01T00:00:00Z` leaves {jobs} jobs to learn from and 0 to test on: both need at least one\n\n\
             hint: pick a time between the first and the last submission\n"
        )
    );
}

/// A word of letters g–z for `i`, its own: a template keeps it whole (no digit, no hex).
fn word(mut i: usize) -> String {
    let mut w = String::new();
    loop {
        w.push(char::from(b'g' + (i % 20) as u8));
        i /= 20;
        if i == 0 {
            return w;
        }
    }
}

/// `n` jobs, each failing once with a message of its own (more signatures than suggest keeps,
/// 10,000, past which it counts `other`), most then succeeding; the first 400 and one in 30
/// of the last 1,500 also fail with one of 8 shared messages, which the last shard meets
/// again after its own first 10,000 signatures (docs/past-one-machine.md).
fn many_signatures(n: usize) -> String {
    let mut h = String::new();
    for k in 0..n {
        let node = format!("node-{:02}", k % 37);
        let mut runs = Vec::new();
        if k < 400 || (k + 1_500 >= n && k % 30 == 0) {
            runs.push(format!(
                r#"{{"node":"{node}","runFor":"90s","containers":[{{"name":"main","exitCode":2,"message":"loader failed: shard {} unavailable"}}]}}"#,
                word(k % 8)
            ));
        }
        runs.push(format!(
            r#"{{"node":"{node}","runFor":"60s","containers":[{{"name":"main","exitCode":1,"message":"ValueError: no handler named {}"}}]}}"#,
            word(k)
        ));
        if k % 5 != 0 {
            runs.push(format!(r#"{{"node":"{node}","runFor":"300s"}}"#));
        }
        h.push_str(&format!(
            r#"{{"job":{{"id":"job-{k:05}","queue":"ml","resources":{{"gpu":1,"cpu":4}}}},"runs":[{}]}}"#,
            runs.join(",")
        ));
        h.push('\n');
    }
    h
}

#[test]
fn more_signatures_than_one_process_keeps_merge_to_one_process() {
    let dir = planted();
    // 12,000 signatures or more in every shard of 2 and of 3.
    fs::write(dir.path().join("h.jsonl"), many_signatures(36_000)).unwrap();
    let json = one(dir.path(), &SUGGEST, "json");
    let text = String::from_utf8_lossy(&json.stdout);
    assert!(
        text.contains(r#""signature":"other""#),
        "{}",
        &text[..text.len().min(2000)]
    );
    every_split(dir.path(), "s", &SUGGEST, &[2, 3], &["json", "table"]);
    // The first shard counts `other` in its totals; a later one, past its own first 10,000
    // signatures, writes entries (the shared messages among them), each a line of its own.
    for n in [2, 3] {
        let first = fs::read_to_string(dir.path().join(format!("s{n}-0.json"))).unwrap();
        assert_eq!(first.lines().count(), 2, "s{n}-0.json");
        assert!(first.contains(r#""other":{"text":"other""#));
        let last = fs::read_to_string(dir.path().join(format!("s{n}-{}.json", n - 1))).unwrap();
        let learned = last.lines().filter(|l| l.contains(r#""learned":"#)).count();
        assert!(learned > 1_000, "s{n}-{}.json: {learned} entries", n - 1);
        assert!(last.contains("loader failed: shard"));
        assert!(last.lines().all(|l| l.len() < 8 << 20));
    }
}
