//! Shards of any history (property tests: any history, any N, any files split exactly), of a
//! directory of several files and of a YAML stream by byte range (N up to 16, diagnostics'
//! line numbers included), of Lookout's database at 20,000 jobs, and of stdin by the job id's
//! hash. The shards' helpers are `shards`'.

use std::fs;
use std::path::Path;
use std::process::Output;

use proptest::prelude::*;

use super::shards::*;
use crate::simulate_report::{job, CUDA, EXIT2, OK};
use crate::support::pg::WINDOW;
use crate::support::{format_output, retryctl, temp_home};

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
pub(crate) fn printed_jobs(out: &Output) -> Vec<String> {
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
    crate::support::pg::numbered_jobs(&mut db.client, 20000);
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
