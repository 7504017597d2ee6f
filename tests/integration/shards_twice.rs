//! A job two files of a directory give (docs/simulate.md: a directory's files hold different
//! jobs), read by real shard processes: one process replays the first copy and refuses the
//! second, naming both files; shards whose ranges hold both copies do the same, and their
//! merge prints one process's bytes; shards that each hold one copy each replay it, and
//! `merge` refuses them (exit 3, naming both files and both shards, nothing printed), never a
//! job counted twice. `simulate`, `tune` and `suggest` alike.

use std::fs;
use std::path::Path;

use crate::shards::{merges_to, refused, run, shards};
use crate::support::format_output;

const POLICY: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata:\n  name: today\nspec:\n  retryLimit: 3\n  defaultAction: Retry\n  rules: []\n";

/// Job `j{i}`: exit 3 in `main`, then a success (a failure again for odd `i`).
fn job(i: usize) -> String {
    let last = if i % 2 == 0 {
        r#"{"node":"m","runFor":"60s","outcome":"succeeded"}"#.to_string()
    } else {
        r#"{"node":"m","runFor":"60s","containers":[{"name":"main","exitCode":3}]}"#.to_string()
    };
    format!(
        "{{\"job\":{{\"id\":\"j{i}\",\"queue\":\"ml\"}},\"runs\":[{{\"node\":\"n\",\"runFor\":\"60s\",\"containers\":[{{\"name\":\"main\",\"exitCode\":3}}]}},{last}]}}\n"
    )
}

fn jobs(ids: impl IntoIterator<Item = usize>) -> String {
    ids.into_iter().map(job).collect()
}

/// `dir/today.yaml`, and `dir/d`: `a.jsonl` with jobs 0–39, `b.jsonl` with jobs 40–69, a
/// copy of job 5 (its line 31, 58% into the directory's bytes), then jobs 70–119. Two
/// shards split it before the copy, three before and after it (the second holds it): the
/// first copy is in the first shard, the second in another.
fn apart(dir: &Path) {
    fs::write(dir.join("today.yaml"), POLICY).unwrap();
    fs::create_dir(dir.join("d")).unwrap();
    fs::write(dir.join("d/a.jsonl"), jobs(0..40)).unwrap();
    fs::write(dir.join("d/b.jsonl"), jobs((40..70).chain([5]).chain(70..120))).unwrap();
}

const SIMULATE: [&str; 5] = ["simulate", "-f", "today.yaml", "--history", "d"];
const SUGGEST: [&str; 5] = ["suggest", "--history", "d", "--min-trials", "5"];
const TUNE: [&str; 7] = [
    "tune",
    "-f",
    "today.yaml",
    "--history",
    "d",
    "--vary",
    "today:spec.retryLimit=1..3",
];

/// What one process says of the copy, on stderr.
const ONE_PROCESS: &str = "error: d/b.jsonl:31: job `j5` is also at `d/a.jsonl:6`: a history holds each job once, so this one is not replayed\n";

/// What merge says of two shards that each replayed a copy.
fn merge_says(shard: &str, first: &str) -> String {
    format!(
        "error: job `j5` of `d/b.jsonl` (shard {shard}) is also in `d/a.jsonl` (shard {first}): a directory's files hold different jobs, and each shard replayed its copy, which the merge would count twice\n\
         error: cannot merge: 1 problem above (nothing was printed)\n"
    )
}

fn with_output(args: &[&str], format: &str) -> Vec<String> {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.extend(["-o", format].map(String::from));
    // As `shards` runs them.
    all.extend(crate::shards::contention_off(args).iter().map(|a| a.to_string()));
    all
}

#[test]
fn one_process_replays_the_first_copy_and_refuses_the_second() {
    let dir = tempfile::tempdir().unwrap();
    apart(dir.path());
    let out = run(dir.path(), &SIMULATE);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.ends_with(ONE_PROCESS), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("jobs:      120 (240 runs)"));
}

/// Shards that each hold a copy: every merge is refused, whatever N splits them so.
#[test]
fn shards_each_holding_a_copy_are_refused_by_merge() {
    let dir = tempfile::tempdir().unwrap();
    apart(dir.path());
    for (args, tag) in [(&SIMULATE[..], "sim"), (&SUGGEST[..], "sug"), (&TUNE[..], "tune")] {
        for (n, shard, first) in [(2, "1/2", "0/2"), (3, "1/3", "0/3")] {
            let partials = shards(dir.path(), &format!("{tag}{n}"), args, n);
            let names: Vec<&str> = partials.iter().map(String::as_str).collect();
            assert_eq!(
                refused(dir.path(), &names),
                merge_says(shard, first),
                "{args:?} over {n}"
            );
        }
    }
}

/// One shard holding both copies refuses the second as one process does: the merge prints
/// one process's bytes and exit status (N = 1; N = 2 with both copies in the first half).
#[test]
fn a_shard_holding_both_copies_merges_to_one_process() {
    let dir = tempfile::tempdir().unwrap();
    apart(dir.path());
    for args in [&SIMULATE[..], &SUGGEST[..]] {
        let partials = shards(dir.path(), "one", args, 1);
        let one: Vec<String> = with_output(args, "json");
        let one: Vec<&str> = one.iter().map(String::as_str).collect();
        merges_to(
            dir.path(),
            &run(dir.path(), &one),
            &partials,
            "json",
            &format!("{args:?}"),
        );
    }
    // Both copies in the first third: `a.jsonl`, then `b.jsonl` the copy alone, then
    // `c.jsonl` with twice as many jobs as the two.
    fs::remove_dir_all(dir.path().join("d")).unwrap();
    fs::create_dir(dir.path().join("d")).unwrap();
    fs::write(dir.path().join("d/a.jsonl"), jobs(0..40)).unwrap();
    fs::write(dir.path().join("d/b.jsonl"), jobs([5])).unwrap();
    fs::write(dir.path().join("d/c.jsonl"), jobs(40..120)).unwrap();
    for (args, format) in [
        (&SIMULATE[..], "json"),
        (&SIMULATE[..], "table"),
        (&SUGGEST[..], "table"),
    ] {
        let partials = shards(dir.path(), "both", args, 2);
        let one = with_output(args, format);
        let one: Vec<&str> = one.iter().map(String::as_str).collect();
        let whole = run(dir.path(), &one);
        assert!(
            String::from_utf8_lossy(&whole.stderr).contains(
                "d/b.jsonl:1: job `j5` is also at `d/a.jsonl:6`: a history holds each job once, so this one is not replayed"
            ),
            "{}",
            format_output(&whole)
        );
        merges_to(dir.path(), &whole, &partials, format, &format!("{args:?}"));
    }
}

/// A directory copied whole: the first ten jobs are named, the rest counted.
#[test]
fn merge_names_the_first_ten_jobs_of_two_files() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("today.yaml"), POLICY).unwrap();
    fs::create_dir(dir.path().join("d")).unwrap();
    fs::write(dir.path().join("d/a.jsonl"), jobs(0..40)).unwrap();
    fs::write(dir.path().join("d/b.jsonl"), jobs(0..40)).unwrap();
    let partials = shards(dir.path(), "copy", &SIMULATE, 2);
    let names: Vec<&str> = partials.iter().map(String::as_str).collect();
    let stderr = refused(dir.path(), &names);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 12, "{stderr}");
    assert!(
        lines[0].starts_with("error: job `j0` of `d/b.jsonl` (shard 1/2) is also in `d/a.jsonl` (shard 0/2): "),
        "{stderr}"
    );
    assert_eq!(lines[10], "error: 30 more jobs are given by two files of the directory");
    assert_eq!(
        lines[11],
        "error: cannot merge: 11 problems above (nothing was printed)"
    );
}
