//! What `history` writes, the readers read (docs/simulate.md, docs/lookout.md): a job of
//! 100,000 runs in a real Lookout database is one JSON line of some 13 MB, past the 8 MiB a
//! line once could be; `history` exports it and `simulate --history`, `tune` and `suggest`
//! read it back whole. A job whose line would pass the readers' 64 MiB is left out by
//! `history`, said and counted, never written.

use std::path::Path;

use crate::support::pg;
use crate::support::{format_output, lookout_rows, retryctl, temp_home};
use crate::watch::CURRENT;

/// `history --lookout-db DSN` over `pg::WINDOW` (exit 0): its stdout and stderr.
pub(crate) fn export(home: &Path, dsn: &str) -> (String, String) {
    let out = retryctl(home)
        .args(["history", "--lookout-db", dsn])
        .args(pg::WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// One failed run, then `more` copies of it 3 seconds apart, of job `id`; `message`: the
/// container's.
fn many_runs(db: &mut pg::Db, id: &str, message: &str, more: u32) {
    let doc = serde_json::json!({
        "apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
        "job": {"id": id, "queue": "ml", "memory": "1073741824", "submittedAt": "2026-11-16T00:00:00Z",
                "resources": {"cpu": "1"}, "state": "failed"},
        "runs": [{"node": "n", "queuedFor": "1s", "runFor": "1s",
                  "containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": message}],
                  "executorPath": "failedPod"}]
    });
    lookout_rows::load(db, &format!("{doc}\n"), "");
    db.client
        .batch_execute(&format!(
            "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, \
               error, exit_code, pool, failure_category, failure_subcategory, debug) \
             SELECT '{id}-' || lpad(g::text, 6, '0'), r.job_id, r.cluster, r.node, \
               r.leased + g * interval '3 seconds', r.pending + g * interval '3 seconds', \
               r.started + g * interval '3 seconds', r.finished + g * interval '3 seconds', r.job_run_state, \
               r.error, r.exit_code, r.pool, r.failure_category, r.failure_subcategory, r.debug \
             FROM job_run r, generate_series(1, {more}) g WHERE r.job_id = '{id}'"
        ))
        .unwrap();
}

#[test]
fn a_job_of_100000_runs_is_exported_and_replayed_whole() {
    let Some(mut db) = pg::lookout_db("many_runs") else {
        return;
    };
    many_runs(&mut db, "many-runs", "x", 99_999);
    let home = temp_home();
    let (export, _) = export(home.path(), &db.dsn);
    assert_eq!(export.lines().count(), 1);
    assert!(export.len() > 12_000_000, "{}", export.len());
    assert_eq!(export.matches("\"node\"").count(), 100_000);
    let file = home.path().join("many.jsonl");
    std::fs::write(&file, &export).unwrap();
    let file = file.to_str().unwrap();
    let simulate = retryctl(home.path())
        .args(["simulate", "-f", CURRENT, "--history", file, "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(simulate.status.code(), Some(0), "{}", format_output(&simulate));
    let record: serde_json::Value = serde_json::from_slice(&simulate.stdout).unwrap();
    assert_eq!(record["summary"]["jobs"], 1, "{record}");
    assert_eq!(record["summary"]["errors"], 0, "{record}");
    // tune and suggest, as twice.rs runs them.
    for args in &crate::twice::verbs(file, &[])[1..] {
        let out = retryctl(home.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("line longer than"),
            "{args:?}: {}",
            format_output(&out)
        );
        assert_ne!(out.status.code(), Some(3), "{args:?}: {}", format_output(&out));
    }
}

#[test]
fn a_job_whose_line_would_pass_what_the_readers_read_is_left_out_said_and_counted() {
    let Some(mut db) = pg::lookout_db("long_line") else {
        return;
    };
    // 64 KiB of a control character a run, which JSON writes as six bytes: some 390 KiB of a
    // line a run, 200 runs, for 13 MiB of error texts held.
    many_runs(&mut db, "escaped", &"\u{1}".repeat(60_000), 199);
    many_runs(&mut db, "short", "x", 2);
    let home = temp_home();
    let (stdout, stderr) = export(home.path(), &db.dsn);
    assert_eq!(stdout.lines().count(), 1);
    assert!(stdout.contains("\"short\""), "{stdout}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(
        said,
        ["warning: job `escaped`: its history is one JSON line of 68 MiB, past the 64 MiB a line `simulate --history` reads; job left out"],
        "{stderr}"
    );
    // The summary counts what was written: the job left out, its runs and what Lookout
    // could not tell of them are not among the exported (they were: 203 runs, and 203 without
    // a category).
    let summary: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("warning: ")).collect();
    assert_eq!(
        summary,
        [
            "history: exported 1 job and 3 runs of every queue",
            "history: left out 1 job and 0 runs whose rows could not be read (reported above)",
            "what Lookout could not tell (counts, nothing guessed):",
            "         3  failed or preempted runs without a failure category",
        ],
        "{stderr}"
    );
}
