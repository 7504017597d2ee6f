//! `retryctl history` against a real PostgreSQL built from Lookout's migrations
//! (support/pg.rs), and against a Lookout REST fixture server that answers per swagger.yaml;
//! then `simulate` on what was imported, with exact outcomes.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::support::pg::{self, export_week, fixture_db, Db, WINDOW};
use crate::support::stub::{Reply, Stub};
use crate::support::{retryctl, temp_home};

pub(crate) fn history(home: &Path, args: &[&str]) -> Output {
    retryctl(home).arg("history").args(args).output().unwrap()
}

pub(crate) fn ids(stdout: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["job"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn db_export_of_the_fixture_is_exact() {
    let Some(db) = fixture_db("export") else { return };
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["history", "--queue", "ml", "--lookout-db", &db.dsn])
        .args(WINDOW)
        .output()
        .unwrap();
    let text = crate::support::format_output(&out).replace(&db.dsn, "DSN");
    insta::assert_snapshot!(text);
}

#[test]
fn db_filters_queue_jobset_job_and_time() {
    let Some(db) = fixture_db("filters") else { return };
    let home = temp_home();
    let h = |extra: &[&str]| {
        let mut args = vec!["--lookout-db", db.dsn.as_str()];
        args.extend_from_slice(extra);
        let out = history(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        ids(&out.stdout)
    };
    assert_eq!(h(&["--queue", "batch"]), ["b-01", "b-02", "b-03", "b-04", "b-05"]);
    // Without `--queue`, every queue's jobs (by id), each with its own queue: the lines of
    // the two queues' exports, one line a job.
    let both = |extra: &[&str]| {
        let mut args = vec!["--lookout-db", db.dsn.as_str()];
        args.extend_from_slice(extra);
        let out = history(home.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let all = both(&[]);
    let mut lines: Vec<String> = String::from_utf8_lossy(&all.stdout).lines().map(String::from).collect();
    let mut each: Vec<String> = ["ml", "batch"]
        .iter()
        .flat_map(|q| {
            let out = both(&["--queue", q]);
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut by_id = ids(&all.stdout);
    by_id.sort();
    assert_eq!(ids(&all.stdout), by_id);
    lines.sort();
    each.sort();
    assert_eq!(lines, each);
    let err = String::from_utf8_lossy(&all.stderr);
    assert!(
        err.contains(&format!("history: exported {} jobs and ", each.len())),
        "{err}"
    );
    assert!(err.contains(" runs of every queue\n"), "{err}");
    assert_eq!(h(&["--queue", "ml", "--jobset", "nightly"]), ["ml-19", "ml-20"]);
    assert_eq!(
        h(&["--queue", "ml", "--job", "ml-03", "--job", "ml-01", "--job", "b-01"]),
        ["ml-01", "ml-03"]
    );
    // ml-18 was submitted on 2026-11-01: inside `--from 2026-10-01`, outside the window.
    assert!(h(&["--queue", "ml", "--from", "2026-10-01T00:00:00Z"]).contains(&"ml-18".to_string()));
    assert!(!h(&["--queue", "ml", "--from", "2026-11-15T00:00:00Z"]).contains(&"ml-18".to_string()));
    assert_eq!(h(&["--queue", "ml", "--to", "2026-11-02T00:00:00Z"]), ["ml-18"]);
    // `--since` counts back from the clock: 100 years back covers the whole fixture.
    assert_eq!(h(&["--queue", "ml", "--since", "36500d"]).len(), 18);
    // A queue with no job is an empty input (exit 3, tests/integration/empty_input.rs);
    // `--allow-empty` exports nothing and exits 0.
    assert_eq!(h(&["--queue", "nope", "--allow-empty"]), Vec::<String>::new());
    let out = history(home.path(), &["--lookout-db", db.dsn.as_str(), "--queue", "nope"]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
}

#[test]
fn imported_history_replays_through_simulate_with_exact_outcomes() {
    let Some(db) = fixture_db("replay") else { return };
    let home = temp_home();
    let (file, _) = export_week(home.path(), &db);
    let finals = |policies: &str| -> Vec<(String, String, u64)> {
        let out = retryctl(home.path())
            .args(["simulate", "-f", policies, "-o", "jsonl", "--history"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (
                    v["job"].as_str().unwrap().to_string(),
                    v["outcome"]["final"].as_str().unwrap().to_string(),
                    v["retries"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let old = finals("testdata/lookout/old");
    let new = finals("testdata/lookout/new");
    insta::assert_snapshot!(
        "replay_old_vs_new",
        old.iter()
            .zip(&new)
            .map(|(o, n)| format!("{:6} old {:9} {}  new {:9} {}", o.0, o.1, o.2, n.1, n.2))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The two policy sets disagree on some jobs: `simulate --baseline` names exactly those.
    assert_ne!(old, new);
    let differing: Vec<&str> = old
        .iter()
        .zip(&new)
        .filter(|(o, n)| o != n)
        .map(|(o, _)| o.0.as_str())
        .collect();
    assert_eq!(differing, ["ml-02", "ml-05", "ml-08", "ml-09", "ml-19"]);

    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/lookout/new",
            "--baseline",
            "testdata/lookout/old",
        ])
        .args(["--exit-code", "-o", "json", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "--exit-code: jobs changed\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["comparison"];
    let changed = crate::support::changed_jobs(&v);
    // Both sides as the two plain replays above saw them.
    let expected: Vec<(String, String, u64, String, u64)> = old
        .iter()
        .zip(&new)
        .filter(|(o, n)| o != n)
        .map(|(o, n)| (o.0.clone(), o.1.clone(), o.2, n.1.clone(), n.2))
        .collect();
    assert_eq!(changed, expected);
    let t = &c["transitions"];
    assert_eq!(
        (t["rescued"].as_u64(), t["lost"].as_u64(), t["toPending"].as_u64()),
        (Some(2), Some(0), Some(3))
    );
}

#[test]
fn yaml_output_is_read_by_simulate() {
    let Some(db) = fixture_db("yaml") else { return };
    let home = temp_home();
    let file = home.path().join("week.yaml");
    let out = retryctl(home.path())
        .args([
            "history",
            "--queue",
            "ml",
            "--job",
            "ml-01",
            "-o",
            "yaml",
            "--lookout-db",
            &db.dsn,
            "--output-file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    insta::assert_snapshot!(std::fs::read_to_string(&file).unwrap());
    let out = retryctl(home.path())
        .args(["simulate", "-f", "testdata/lookout/new", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A YAML export past the 250,000 nodes `simulate --history` reads of one YAML text is
/// written (it is for reading) and says so, with what to export instead; the replay refuses
/// it as the warning says. One under the bound says nothing.
#[test]
fn a_yaml_export_past_what_simulate_reads_says_so() {
    let Some(mut db) = pg::lookout_db("yaml_big") else {
        return;
    };
    pg::numbered_jobs(&mut db.client, 6000);
    let home = temp_home();
    let export = |args: &[&str], file: &str| -> String {
        let path = home.path().join(file);
        let mut all = vec!["--queue", "q", "--lookout-db", &db.dsn, "-o", "yaml"];
        all.extend(args);
        let out = retryctl(home.path())
            .arg("history")
            .args(&all)
            .arg("--output-file")
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stderr).unwrap()
    };
    let stderr = export(&[], "big.yaml");
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("warning: the YAML written"))
        .unwrap_or_default();
    let words = regex::Regex::new(r"^warning: the YAML written is \d+ MiB of (\d+) nodes, past the 8 MiB and 250000 nodes `simulate --history` reads of a YAML text: it is for reading; export JSON Lines \(the default, `-o jsonl`\) for the replays$").unwrap();
    let nodes: u64 = words.captures(warning).expect(&stderr)[1].parse().unwrap();
    assert!(nodes > 250_000, "{warning}");
    let out = retryctl(home.path())
        .args(["simulate", "-f", "testdata/lookout/new", "--history"])
        .arg(home.path().join("big.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the input has more than 250000 nodes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The first 2,000 jobs: under the bound, read, and nothing said.
    let stderr = export(
        &["--from", "2026-11-16T00:00:00Z", "--to", "2026-11-16T00:33:20Z"],
        "small.yaml",
    );
    assert!(!stderr.contains("warning: the YAML"), "{stderr}");
    let out = retryctl(home.path())
        .args(["simulate", "-f", "testdata/lookout/new", "--history"])
        .arg(home.path().join("small.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_job_is_read_whatever_the_number() {
    let Some(mut db) = pg::lookout_db("paging") else { return };
    pg::numbered_jobs(&mut db.client, 2500);
    let home = temp_home();
    let out = history(home.path(), &["--queue", "q", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(0));
    let got = ids(&out.stdout);
    assert_eq!(got.len(), 2500);
    assert_eq!(got[0], "j000001");
    assert_eq!(got[2499], "j002500");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().next().unwrap(),
        "history: exported 2500 jobs and 7500 runs of queue `q`"
    );
}

// ---- hostile rows (docs/lookout.md) ----

/// A `job` row of queue `h`: `submitted`, `memory` and `annotations` as SQL expressions.
fn job_sql(id: &str, submitted: &str, memory: &str, annotations: &str) -> String {
    format!(
        "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations) \
         VALUES ('{id}', 'h', 'o', 's', 1, {memory}, 0, 0, 1, {submitted}, 4, now(), 0, {annotations});\n"
    )
}

/// A `job_run` row: times (leased, started, finished) and `error` as SQL expressions.
fn run_sql(
    job: &str,
    run: &str,
    state: &str,
    [leased, started, finished]: [&str; 3],
    exit: &str,
    error: &str,
) -> String {
    format!(
        "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, error) \
         VALUES ('{run}', '{job}', 'c', 'node-{run}', {leased}, {leased}, {started}, {finished}, {state}, {exit}, {error});\n"
    )
}

/// A failed run (exit 1) at minute `m` of 2026-11-16 10:00, and a success after it.
fn ok_runs(job: &str, m: u32) -> String {
    let at = |s: u32| format!("'2026-11-16 10:{m:02}:{s:02}'");
    run_sql(job, &format!("{job}-a"), "4", [&at(0), &at(1), &at(2)], "1", "NULL")
        + &run_sql(job, &format!("{job}-c"), "3", [&at(10), &at(11), &at(12)], "0", "NULL")
}

fn hostile_db(test: &str) -> Option<Db> {
    let mut db = pg::lookout_db(test)?;
    let sub = "'2026-11-16 09:00:00'";
    let obj = "'{}'::jsonb";
    // Lookout's schema forbids these NULLs; a database is input like any file.
    let mut sql = String::from(
        "ALTER TABLE job ALTER submitted DROP NOT NULL; ALTER TABLE job_run ALTER job_run_state DROP NOT NULL;\n",
    );
    let bad_run = |job: &str, col: &str, value: &str| {
        let at = |s: u32| format!("'2026-11-16 10:05:{s:02}'");
        let (mut leased, mut started, mut finished, mut state, mut error) =
            (at(0), at(1), at(2), "4".to_string(), "NULL".to_string());
        match col {
            "leased" => leased = value.into(),
            "started" => started = value.into(),
            "finished" => finished = value.into(),
            "job_run_state" => state = value.into(),
            "error" => error = value.into(),
            _ => unreachable!(),
        }
        run_sql(
            job,
            &format!("{job}-b"),
            &state,
            [&leased, &started, &finished],
            "1",
            &error,
        )
    };
    for (job, col, value) in [
        ("h-01", "finished", "'infinity'"),
        ("h-02", "started", "'294276-12-31 00:00:00'"),
        ("h-03", "leased", "'1500-01-01 00:00:00'"),
        ("h-04", "error", "'\\x6e6f74207a6c6962'::bytea"),
        ("h-05", "job_run_state", "NULL"),
    ] {
        sql += &job_sql(job, sub, "1024", obj);
        sql += &ok_runs(job, 1);
        sql += &bad_run(job, col, value);
    }
    for (job, submitted, memory, annotations) in [
        ("h-06", sub, "1024", "'[1]'::jsonb"),
        ("h-07", sub, "1024", r#"'{"team": 1}'::jsonb"#),
        ("h-08", "NULL", "1024", obj),
        ("h-09", "'-infinity'", "1024", obj),
        ("h-10", sub, "-1", obj),
        ("h-11", sub, "1024", obj),
    ] {
        sql += &job_sql(job, submitted, memory, annotations);
        sql += &ok_runs(job, 1);
    }
    db.client.batch_execute(&sql).unwrap();
    Some(db)
}

#[test]
fn a_row_that_cannot_be_read_is_reported_left_out_and_the_rest_exported() {
    let Some(db) = hostile_db("hostile") else { return };
    let home = temp_home();
    let out = history(home.path(), &["--queue", "h", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Every job whose own row reads is exported, with the runs that read.
    assert_eq!(ids(&out.stdout), ["h-01", "h-02", "h-03", "h-04", "h-05", "h-11"]);
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(
        first["runs"],
        json!([
            {"node": "node-h-01-a", "queuedFor": "1h1m1s", "runFor": "1s", "containers": [{"exitCode": 1}], "executorPath": "failedPod"},
            {"node": "node-h-01-c", "queuedFor": "9s", "runFor": "1s", "outcome": "succeeded"}
        ])
    );
    let range = "(retryctl's times span 1677-09-21 to 2262-04-11)";
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "warning: job `h-01` run `h-01-b`: column finished: `infinity` is not a time {range}; run left out\n\
             warning: job `h-02` run `h-02-b`: column started: a time after 2262 is out of range {range}; run left out\n\
             warning: job `h-03` run `h-03-b`: column leased: a time before 1677 is out of range {range}; run left out\n\
             warning: job `h-04` run `h-04-b`: column error: not a zlib stream (no zlib header); run left out\n\
             warning: job `h-05` run `h-05-b`: column job_run_state: NULL, which Lookout's schema does not allow; run left out\n\
             warning: job `h-06`: column annotations: not a JSON object (found `[1]`); job left out\n\
             warning: job `h-07`: column annotations: annotation `team` is not a string (found `1`); job left out\n\
             warning: job `h-08`: column submitted: NULL, which Lookout's schema does not allow; job left out\n\
             warning: job `h-09`: column submitted: `-infinity` is not a time {range}; job left out\n\
             warning: job `h-10`: column memory: `-1` where a byte count of 0 or more was expected; job left out\n\
             history: exported 6 jobs and 12 runs of queue `h`\n\
             history: left out 5 jobs and 5 runs whose rows could not be read (reported above)\n\
             what Lookout could not tell (counts, nothing guessed):\n\
             \x20        6  failed or preempted runs without a failure category\n\
             \x20        6  exit codes are the first non-zero container's only (one unnamed container written)\n"
        )
    );
    // `--strict`: the same export, then exit 1.
    let strict = history(home.path(), &["--queue", "h", "--strict", "--lookout-db", &db.dsn]);
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(strict.stdout, out.stdout);
    assert_eq!(strict.stderr, out.stderr);
    // Without a bad row `--strict` changes nothing.
    let clean = history(
        home.path(),
        &["--queue", "h", "--job", "h-11", "--strict", "--lookout-db", &db.dsn],
    );
    assert_eq!(clean.status.code(), Some(0));
    assert_eq!(ids(&clean.stdout), ["h-11"]);
}

/// `text` repeated to `bytes`, zlib-compressed as a stream (never held whole).
fn zlib_of_repeated(text: &str, bytes: usize, level: u32) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
    let chunk = text.repeat((1 << 20) / text.len());
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len());
        e.write_all(&chunk.as_bytes()[..n]).unwrap();
        left -= n;
    }
    e.finish().unwrap()
}

#[test]
fn a_zlib_bomb_is_cut_at_64_kib() {
    let Some(mut db) = pg::lookout_db("bomb") else { return };
    // 256 MiB of text in well under 1 MiB, and 200 KiB stored (level 0): both past the cap.
    let bomb = zlib_of_repeated("OOMKilled ", 256 << 20, 9);
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let stored = zlib_of_repeated("x", 200 << 10, 0);
    let fine = pg::zlib("fine");
    let mut sql = job_sql("bomb-1", "'2026-11-16 09:00:00'", "1024", "'{}'::jsonb");
    sql += &run_sql(
        "bomb-1",
        "r1",
        "4",
        [
            "'2026-11-16 10:00:00'",
            "'2026-11-16 10:00:01'",
            "'2026-11-16 10:00:02'",
        ],
        "137",
        "$1",
    );
    sql += &run_sql(
        "bomb-1",
        "r2",
        "4",
        [
            "'2026-11-16 10:01:00'",
            "'2026-11-16 10:01:01'",
            "'2026-11-16 10:01:02'",
        ],
        "1",
        "$2",
    );
    sql += &run_sql(
        "bomb-1",
        "r3",
        "4",
        [
            "'2026-11-16 10:02:00'",
            "'2026-11-16 10:02:01'",
            "'2026-11-16 10:02:02'",
        ],
        "1",
        "$3",
    );
    for (i, stmt) in sql.lines().enumerate() {
        match i {
            0 => db.client.batch_execute(stmt).unwrap(),
            n => {
                let e = [&bomb, &stored, &fine][n - 1];
                db.client
                    .execute(stmt.replace(&format!("${n}"), "$1").as_str(), &[e])
                    .unwrap();
            }
        }
    }
    let home = temp_home();
    let out = history(home.path(), &["--queue", "h", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let message = |i: usize| v["runs"][i]["containers"][0]["message"].as_str().unwrap().to_string();
    let cut = "OOMKilled ".repeat(6554);
    assert_eq!(message(0), format!("{}… [truncated]", &cut[..64 * 1024]));
    assert_eq!(message(1), format!("{}… [truncated]", "x".repeat(64 * 1024)));
    assert_eq!(message(2), "fine");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "history: exported 1 job and 3 runs of queue `h`\n\
         what Lookout could not tell (counts, nothing guessed):\n\
         \x20        3  failed or preempted runs without a failure category\n\
         \x20        3  exit codes are the first non-zero container's only (one unnamed container written)\n\
         \x20        2  error texts cut at 64 KiB (they end with `… [truncated]`)\n"
    );
}

// ---- progress ----

#[test]
fn no_progress_is_drawn_when_stderr_is_not_a_terminal() {
    let Some(db) = fixture_db("noprogress") else { return };
    let home = temp_home();
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("history: exported 18 jobs and "), "{err}");
    assert!(
        !err.contains("reading Lookout") && !err.contains('\r') && !err.contains('\x1b'),
        "{err:?}"
    );
}

/// `retryctl ARGS` with stdin, stdout and stderr on a terminal (util-linux `script`), as the
/// terminal shows it; `None` (after a loud SKIP) when `script` is not installed.
fn on_a_terminal(home: &Path, args: &[&str]) -> Option<String> {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        // Under CI a missing tool is a failure, not a skip (`.ci/run` runs on Debian, whose
        // essential `bsdutils` has `script`), as for PostgreSQL, Python and Chromium.
        assert!(
            std::env::var_os("CI").is_none(),
            "`script` (util-linux) not found, and CI is set: the terminal progress tests must run"
        );
        eprintln!(
            "\n!!!!!!!! SKIP: `script` (util-linux) not found: the terminal progress test did NOT run !!!!!!!!\n"
        );
        return None;
    }
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let mut line = format!("'{}'", bin.display());
    for a in args {
        assert!(!a.contains('\''), "{a}");
        line.push_str(&format!(" '{a}'"));
    }
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .current_dir(crate::support::root())
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::null());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_terminal_shows_progress_from_the_first_row_then_the_summary() {
    let Some(db) = fixture_db("progress") else { return };
    let home = temp_home();
    let file = home.path().join("week.jsonl");
    let file = file.to_str().unwrap();
    let Some(screen) = on_a_terminal(
        home.path(),
        &[
            "history",
            "--queue",
            "ml",
            "--lookout-db",
            &db.dsn,
            "--output-file",
            file,
        ],
    ) else {
        return;
    };
    // Drawn before the first row arrives, then cleared (`\r`, erase line) before the summary.
    assert!(screen.contains(" reading Lookout: 0 jobs, 0 runs read"), "{screen:?}");
    let summary = screen.find("history: exported 18 jobs and ").expect("summary");
    assert!(screen[..summary].ends_with("\r\x1b[2K"), "{screen:?}");
    assert_eq!(std::fs::read_to_string(file).unwrap().lines().count(), 18);
}

#[test]
fn bad_databases_exit_4_or_5_with_the_password_masked() {
    let Some(db) = pg::empty_db("notlookout") else { return };
    let home = temp_home();
    // A database without the Lookout tables.
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &db.dsn]);
    assert_eq!(out.status.code(), Some(4));
    let masked = db.masked();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: database `{masked}` has no table `job`: it is not a Lookout database\n\nhint: point `--lookout-db` at the database Lookout's ingester writes (its `postgres` connection in lookout's config)\n"
        )
    );
    // Wrong password: 5, and the wrong password is not printed either.
    let wrong = db.dsn.replace(pg::PASSWORD, "wrong-pass");
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &wrong]);
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: authentication to `{masked}` failed: password authentication failed for user \"lookout\"\n")
    );
    // Nothing listens on the port: 4 at once, the address shown, no password.
    let port = crate::support::closed_port();
    let dsn = format!("postgresql://lookout:hunter2@127.0.0.1:{port}/lookout");
    let out = history(home.path(), &["--queue", "ml", "--lookout-db", &dsn]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "error: cannot reach the Lookout database at `postgresql://lookout:***@127.0.0.1:{port}/lookout`: "
        )),
        "{err}"
    );
    assert!(err.contains("refused"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn source_is_required_and_flags_are_checked() {
    let home = temp_home();
    let out = history(home.path(), &["--queue", "ml"]);
    assert_eq!(out.status.code(), Some(2));
    let out = history(
        home.path(),
        &["--queue", "ml", "--lookout-url", "http://x", "--from", "yesterday"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: invalid `--from` `yesterday`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`\n"
    );
    let out = history(
        home.path(),
        &["--queue", "ml", "--lookout-url", "http://x", "--since", "soon"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: invalid `--since` `soon`: expected a duration such as `7d`, `36h` or `1d12h`\n"
    );
}

#[test]
fn an_unnamed_container_is_matched_only_by_rules_without_container_name() {
    let home = temp_home();
    let h = home.path().join("h.jsonl");
    std::fs::write(
        &h,
        r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{"id":"j","queue":"ml"},"runs":[{"node":"n1","runFor":"1m","containers":[{"exitCode":137}]},{"node":"n2","outcome":"succeeded"}]}"#,
    )
    .unwrap();
    let policy = |container: &str| {
        let p = home.path().join(format!("p{}.yaml", container.len()));
        std::fs::write(
            &p,
            format!(
                "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {{name: p}}\nspec:\n  rules:\n    - action: Retry\n      {container}onExitCodes: {{operator: In, values: [137]}}\n"
            ),
        )
        .unwrap();
        p
    };
    let decision = |p: &Path| -> Value {
        let out = retryctl(home.path())
            .args(["simulate", "--retry-policy", "p", "-o", "jsonl", "-f"])
            .arg(p)
            .arg("--history")
            .arg(&h)
            .output()
            .unwrap();
        let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
        v["runs"][0]["decision"].clone()
    };
    assert_eq!(decision(&policy("")), json!("retry"));
    assert_eq!(decision(&policy("containerName: main\n      ")), json!("fail_default"));
}

#[test]
fn rest_source_reports_bad_rows_and_cuts_a_huge_error_text() {
    let job = |id: &str, runs: Value| {
        json!({
            "jobId": id, "queue": "ml", "owner": "alice", "jobSet": "s", "cpu": 1000, "memory": 1024,
            "ephemeralStorage": 0, "gpu": 0, "priority": 1, "submitted": "2026-11-16T08:00:00Z",
            "state": "FAILED", "lastTransitionTime": "2026-11-16T09:00:00Z", "duplicate": false,
            "annotations": {}, "runs": runs
        })
    };
    let failed = |id: &str, finished: &str| {
        json!({"runId": id, "cluster": "c1", "node": "n", "leased": "2026-11-16T08:00:10Z",
               "started": "2026-11-16T08:00:15Z", "finished": finished, "jobRunState": "RUN_FAILED", "exitCode": 1})
    };
    let mut bad_annotations = job("api-2", json!([failed("r2", "2026-11-16T08:01:00Z")]));
    bad_annotations["annotations"] = json!({"team": 1});
    let mut no_submitted = job("api-3", json!([]));
    no_submitted.as_object_mut().unwrap().remove("submitted");
    let jobs = vec![
        job(
            "api-1",
            json!([failed("r1a", "infinity"), failed("r1b", "2026-11-16T08:01:00Z")]),
        ),
        bad_annotations,
        no_submitted,
        job("api-4", json!([failed("bomb", "2026-11-16T08:01:00Z")])),
    ];
    let huge = "OOMKilled ".repeat(400_000); // 4 MB of text in one answer
    let stub = Stub::start(move |req| match req.path.as_str() {
        "/api/v1/jobs" => Reply::json(200, json!({ "jobs": jobs })),
        "/api/v1/jobRunError" => {
            let run: Value = serde_json::from_str(&req.body).unwrap();
            let text = match run["runId"].as_str().unwrap() {
                "bomb" => huge.clone(),
                other => format!("error of {other}"),
            };
            Reply::json(200, json!({ "errorString": text }))
        }
        _ => Reply::json(404, json!({"error": "not found"})),
    });
    let home = temp_home();
    let out = history(home.path(), &["--queue", "ml", "--lookout-url", &stub.url]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(ids(&out.stdout), ["api-1", "api-4"]);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["runs"].as_array().unwrap().len(), 1);
    assert_eq!(lines[0]["runs"][0]["containers"][0]["message"], "error of r1b");
    let cut = "OOMKilled ".repeat(6554);
    assert_eq!(
        lines[1]["runs"][0]["containers"][0]["message"].as_str().unwrap(),
        format!("{}… [truncated]", &cut[..64 * 1024])
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: job `api-1` run `r1a`: field finished: `infinity` is not an RFC 3339 time retryctl can represent; run left out\n\
         warning: job `api-2`: field annotations: annotation `team` is not a string (found `1`); job left out\n\
         warning: job `api-3`: not a Lookout job (missing field `submitted`); job left out\n\
         history: exported 2 jobs and 2 runs of queue `ml`\n\
         history: left out 2 jobs and 1 run whose rows could not be read (reported above)\n\
         what Lookout could not tell (counts, nothing guessed):\n\
         \x20        2  failed or preempted runs without a failure category\n\
         \x20        2  exit codes are the first non-zero container's only (one unnamed container written)\n\
         \x20        1  error texts cut at 64 KiB (they end with `… [truncated]`)\n"
    );
    // The same on a terminal, with the progress line drawn first.
    let Some(screen) = on_a_terminal(home.path(), &["history", "--queue", "ml", "--lookout-url", &stub.url]) else {
        return;
    };
    assert!(screen.contains(" reading Lookout: 0 jobs, 0 runs read"), "{screen:?}");
    assert!(
        screen.contains("history: exported 2 jobs and 2 runs of queue `ml`"),
        "{screen:?}"
    );
}

/// The walkthrough's what-if for today's Armada. `testdata/lookout/upstream-old`
/// and `upstream-new` fit upstream's dialect, so `--engine upstream` replays them (the
/// design-dialect sets are refused there, exit 3); the README pastes this comparison.
#[test]
fn upstream_policy_pair_replays_the_week_under_the_upstream_engine() {
    let Some(db) = fixture_db("upstream") else { return };
    let home = temp_home();
    let (file, _) = export_week(home.path(), &db);
    let upstream = |policies: &str| {
        retryctl(home.path())
            .args(["simulate", "-f", policies, "--engine", "upstream", "--history"])
            .arg(&file)
            .output()
            .unwrap()
    };
    assert_eq!(upstream("testdata/lookout/new").status.code(), Some(3));
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/lookout/upstream-new",
            "--baseline",
            "testdata/lookout/upstream-old",
            "--engine",
            "upstream",
        ])
        .args(["-o", "json", "--history"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let changed = crate::support::changed_jobs(&v);
    let s = |x: &str| x.to_string();
    assert_eq!(
        changed,
        [
            (s("ml-01"), s("Failed"), 0, s("Succeeded"), 1),
            (s("ml-02"), s("Failed"), 0, s("Pending"), 3),
            (s("ml-08"), s("Failed"), 0, s("Pending"), 1),
            (s("ml-09"), s("Failed"), 0, s("Pending"), 2),
            (s("ml-10"), s("Failed"), 0, s("Pending"), 1),
            (s("ml-15"), s("Failed"), 0, s("Pending"), 1),
            (s("ml-16"), s("Failed"), 0, s("Succeeded"), 1),
            (s("ml-19"), s("Failed"), 0, s("Succeeded"), 2),
            (s("ml-20"), s("Failed"), 0, s("Pending"), 1),
        ]
    );
    // Upstream ends a job at its preemption: ml-03's later run contradicts that engine.
    let out = upstream("testdata/lookout/upstream-new");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "job `ml-03`: history contradicts the decisions: run 1 follows the end of the job at run 0 (Failed)"
        ),
        "{err}"
    );
}

/// Cost in resources (docs/estimates.md) from real rows: the fixture's `job.cpu` (millicores) and `job.gpu` become
/// `job.resources` — ml-08 and ml-19 are GPU jobs (1 and 2 GPUs, 8 CPUs), every other job
/// requests 4 CPUs and no GPU — and the hours of a what-if straight from the database are
/// those requests × the run times. ml-19 is rescued (the upstream pair retries its CUDA
/// errors): its two later runs, 10m each, are added: 2 GPUs × 20m = 2/3 GPU-hour, the only
/// GPU time added. ml-08 (1 GPU) is the only GPU job Pending: the expected GPU-hours are its
/// expected run time × 1 GPU; the expected CPU-hours are every Pending job's × its CPUs.
#[test]
fn resources_from_lookout_rows_count_gpu_and_cpu_hours() {
    let Some(db) = fixture_db("resources") else { return };
    let home = temp_home();
    let (file, _) = export_week(home.path(), &db);
    let text = std::fs::read_to_string(&file).unwrap();
    let job = |id: &str| {
        let line = text.lines().find(|l| l.contains(&format!("\"id\":\"{id}\""))).unwrap();
        serde_json::from_str::<Value>(line).unwrap()["job"]["resources"].clone()
    };
    assert_eq!(job("ml-08"), json!({"cpu": "8", "gpu": "1"}));
    assert_eq!(job("ml-19"), json!({"cpu": "8", "gpu": "2"}));
    assert_eq!(job("ml-01"), json!({"cpu": "4"}));
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/lookout/upstream-new",
            "--baseline",
            "testdata/lookout/upstream-old",
            "--engine",
            "upstream",
            "--lookout-db",
            &db.dsn,
            "--queue",
            "ml",
            "-o",
            "json",
        ])
        .args(WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["comparison"];
    let compute = &c["compute"];
    let hours = |k: &str, w: &str| compute[k][w].as_f64().unwrap();
    assert!(
        (hours("gpuHours", "added") - 2.0 * 20.0 / 60.0).abs() < 1e-12,
        "{compute}"
    );
    assert_eq!(hours("gpuHours", "removed"), 0.0);
    assert_eq!(compute["withoutResources"], 0);
    let pending: Vec<&Value> = c["changedJobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["candidate"]["final"] == "Pending")
        .collect();
    let expected = |j: &Value| j["candidate"]["estimate"]["expectedCompute"].as_f64().unwrap();
    let ml08 = pending.iter().find(|j| j["job"] == "ml-08").unwrap();
    assert!(
        (hours("gpuHours", "expected") - expected(ml08) / 3600.0).abs() < 1e-9,
        "{compute}"
    );
    let cpu: f64 = pending
        .iter()
        .map(|j| expected(j) * if j["job"] == "ml-08" { 8.0 } else { 4.0 } / 3600.0)
        .sum();
    assert!((hours("cpuHours", "expected") - cpu).abs() < 1e-9, "{compute} vs {cpu}");
    assert!((compute["expected"].as_f64().unwrap() - pending.iter().map(|j| expected(j)).sum::<f64>()).abs() < 1e-6);
}

/// Lookout's `job.jobset` is exported as `jobSet` (a job set's burst, docs/reference/suggest.md
/// "Incidents"); Lookout's empty one is none, and the export reads back as it was written.
#[test]
fn the_job_set_is_exported() {
    let Some(mut db) = pg::lookout_db("job_set") else {
        return;
    };
    let job = |id: &str, set: &str| {
        let set = match set {
            "" => String::new(),
            s => format!(r#","jobSet":"{s}""#),
        };
        format!(
            r#"{{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{{"id":"{id}","queue":"ml"{set},"submittedAt":"2026-11-16T08:00:00Z","state":"succeeded"}},"runs":[{{"node":"n1","queuedFor":"10s","runFor":"1m","outcome":"succeeded"}}]}}"#
        )
    };
    let week = [job("s-1", "sweep-17"), job("s-2", ""), job("s-3", "nightly")].join("\n");
    crate::support::lookout_rows::load(&mut db, &week, "");
    let sets: Vec<String> = db
        .client
        .query("SELECT jobset FROM job ORDER BY job_id", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(sets, ["sweep-17", "", "nightly"]);
    let home = temp_home();
    let (file, _) = export_week(home.path(), &db);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{week}\n"));
}

/// How each job ended (docs/lookout.md "Mapping"): Lookout's `job.state` is exported as
/// `state` for a job whose record is complete, and only then (a job ending before a run still
/// in flight is written without it). Replayed against a baseline that retries the failure, the
/// job the record ends `failed` contradicts it, with its words; a user's cancel does not; and
/// the same history without `state` (as a hand-written one) replays as it always did.
#[test]
fn the_jobs_end_is_exported_and_contradicts_a_baseline_that_runs_it_again() {
    let Some(mut db) = pg::lookout_db("job_end") else {
        return;
    };
    let failed = r#"{"node":"n1","queuedFor":"10s","runFor":"1m","containers":[{"exitCode":1,"message":"boom"}],"executorPath":"failedPod"}"#;
    let job = |id: &str, state: &str, runs: &str| {
        format!(
            r#"{{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{{"id":"{id}","queue":"ml","submittedAt":"2026-11-16T08:00:00Z","state":"{state}"}},"runs":[{runs}]}}"#
        )
    };
    let week = [
        job("e-cancelled", "cancelled", failed),
        job("e-failed", "failed", failed),
        job("e-flight", "failed", &format!("{failed},{failed}")),
    ]
    .join("\n");
    crate::support::lookout_rows::load(&mut db, &week, "");
    // Read between the ingester's transactions: the job FAILED, its second run still running.
    db.client
        .batch_execute(
            "UPDATE job_run SET job_run_state = 2, finished = NULL WHERE run_id = \
             (SELECT latest_run_id FROM job WHERE job_id = 'e-flight')",
        )
        .unwrap();
    let home = temp_home();
    let (file, err) = export_week(home.path(), &db);
    assert_eq!(
        err,
        "history: exported 3 jobs and 3 runs of queue `ml`\n\
         what Lookout could not tell (counts, nothing guessed):\n\
         \x20        1  jobs end before a run still in flight (pending, leased or running)\n\
         \x20        1  runs left out: in flight, or after one in flight\n\
         \x20        3  failed or preempted runs without a failure category\n\
         \x20        3  exit codes are the first non-zero container's only (one unnamed container written)\n"
    );
    let exported = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = week.lines().collect();
    assert_eq!(
        exported,
        format!(
            "{}\n{}\n{}\n",
            lines[0],
            lines[1],
            job("e-flight", "", failed).replace(r#","state":"""#, "")
        )
    );

    let policy = home.path().join("today.yaml");
    std::fs::write(
        &policy,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onExitCodes: {operator: In, values: [1]}}\n\
         ---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: ml\npriorityFactor: 1.0\nretryPolicies: [today]\n",
    )
    .unwrap();
    let simulate = |history: &Path, extra: &[&str]| {
        retryctl(home.path())
            .args(["simulate", "-f"])
            .arg(&policy)
            .args(extra)
            .arg("--history")
            .arg(history)
            .output()
            .unwrap()
    };
    let baseline = ["--baseline", policy.to_str().unwrap()];
    let out = simulate(&file, &baseline);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  today's policy explains 2 of 3 jobs (1 contradicts it: e-failed)\n"),
        "{text}"
    );
    let out = simulate(&file, &[]);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "warning: job `e-failed`: history contradicts the decisions: the record ends it after run 0; today's policy runs it again\n"
    );

    // Without `state`, as a hand-written history: every job Pending, none contradicting.
    let bare = home.path().join("bare.jsonl");
    std::fs::write(
        &bare,
        exported
            .replace(r#","state":"cancelled""#, "")
            .replace(r#","state":"failed""#, ""),
    )
    .unwrap();
    let out = simulate(&bare, &baseline);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  today's policy explains 3 of 3 jobs (none contradicts it)\n"),
        "{text}"
    );
    let out = simulate(&bare, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  outcomes:  0 succeeded, 0 failed, 0 cancelled, 3 pending\n"),
        "{text}"
    );
}

/// Bytes that are not UTF-8 in Lookout's text columns (a `SQL_ASCII` database keeps whatever
/// it is given) make that row unreadable, as an `infinity` time does (docs/lookout.md): it is
/// left out, said on stderr in the words of any row left out (the id's bytes that are not
/// UTF-8 as `\xNN`, its ESC escaped, so the row can be found), counted in the summary, and the
/// rows after it are read; exit 0, `--strict` 1 with the same output. Here a copy of `b-1`
/// whose `job_id` holds ESC and 0xFF (sorted between `b-1` and `b-2`: the job left out), and
/// the failed run of `b-2` whose `node` and `failure_category` hold bytes that are not UTF-8
/// (that run left out, `b-2` exported with its other run, its end unsaid as for any job with a
/// run left out). Nothing is read with `�`.
#[test]
fn a_row_whose_text_is_not_utf8_is_left_out_counted_and_the_rows_after_it_exported() {
    let Some(mut db) = pg::lookout_db_encoded("history_bytes", "SQL_ASCII") else {
        return;
    };
    let failed = r#"{"node":"n1","queuedFor":"10s","runFor":"1m","containers":[{"exitCode":1,"message":"boom"}],"executorPath":"failedPod"}"#;
    let succeeded = r#"{"node":"n2","queuedFor":"10s","runFor":"1m","outcome":"succeeded"}"#;
    let job = |id: &str, runs: &str| {
        format!(
            r#"{{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","job":{{"id":"{id}","queue":"ml","submittedAt":"2026-11-16T08:00:00Z","state":"succeeded"}},"runs":[{runs}]}}"#
        )
    };
    let both = format!("{failed},{succeeded}");
    let week = [job("b-1", &both), job("b-2", &both), job("b-3", succeeded)].join("\n");
    crate::support::lookout_rows::load(&mut db, &week, "");
    db.client
        .batch_execute(
            "CREATE TEMP TABLE j AS SELECT * FROM job WHERE job_id = 'b-1'; \
             CREATE TEMP TABLE r AS SELECT * FROM job_run WHERE job_id = 'b-1'; \
             UPDATE j SET job_id = E'b-1\\x1b\\xff'; \
             UPDATE r SET job_id = E'b-1\\x1b\\xff', run_id = 'f' || substr(run_id, 2); \
             INSERT INTO job SELECT * FROM j; INSERT INTO job_run SELECT * FROM r; \
             UPDATE job_run SET node = E'n\\xfe1', failure_category = E'oom\\xc3' \
             WHERE job_id = 'b-2' AND node = 'n1'",
        )
        .unwrap();
    let bad_run: String = db
        .client
        .query_one("SELECT run_id FROM job_run WHERE job_id = 'b-2' AND node <> 'n2'", &[])
        .unwrap()
        .get(0);
    let home = temp_home();
    let args = [
        "--queue",
        "ml",
        "--lookout-db",
        &db.dsn,
        WINDOW[0],
        WINDOW[1],
        WINDOW[2],
        WINDOW[3],
    ];
    let out = history(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    // The jobs around the bad rows whole; `b-2` with the run that could be read, its end
    // unsaid and its wait counted from the submission (a run of it left out, as mapped for
    // any run left out).
    let lines: Vec<&str> = week.lines().collect();
    let b2 = job("b-2", &succeeded.replacen("10s", "1m20s", 1)).replacen(r#","state":"succeeded""#, "", 1);
    assert_eq!(
        String::from_utf8(out.stdout.clone()).unwrap(),
        format!("{}\n{b2}\n{}\n", lines[0], lines[2])
    );
    assert_eq!(
        String::from_utf8(out.stderr.clone()).unwrap(),
        format!(
            "warning: job `b-1\\x1b\\xff`: column job_id: not UTF-8 (byte 4); job left out\n\
             warning: job `b-2` run `{bad_run}`: column node: not UTF-8 (byte 1); run left out\n\
             history: exported 3 jobs and 4 runs of queue `ml`\n\
             history: left out 1 job and 1 run whose rows could not be read (reported above)\n\
             what Lookout could not tell (counts, nothing guessed):\n\
             \x20        1  failed or preempted runs without a failure category\n\
             \x20        1  exit codes are the first non-zero container's only (one unnamed container written)\n"
        )
    );
    let strict = history(home.path(), &[&args[..], &["--strict"]].concat());
    assert_eq!(
        strict.status.code(),
        Some(1),
        "{}",
        crate::support::format_output(&strict)
    );
    assert_eq!(strict.stdout, out.stdout);
    assert_eq!(strict.stderr, out.stderr);
}
