//! An absurd request is a row that cannot be read, everywhere (docs/lookout.md): a Lookout
//! job whose `job.gpu` or `job.cpu` is 9223372036854775807 (past the 2^53 thousandths
//! `simulate --history` reads) is left out as any unreadable row, said in `history`'s words
//! and counted, the rows after it read: by `history`, `simulate`, `tune` and `suggest
//! --lookout-db`, and `watch` (`retryctl_watch_unreadable_rows_total`). No export, figure or
//! counter carries a saturated number. A real PostgreSQL.

use crate::support::pg;
use crate::support::{format_output, retryctl, temp_home};
use crate::watch::{arrive, state_file, week, Watch, CURRENT};

#[test]
fn a_request_past_2_53_thousandths_leaves_its_job_out_in_every_reader() {
    let Some(mut db) = pg::lookout_db("absurd") else { return };
    let lines = week();
    arrive(&mut db.client, &lines[..6], "3 minutes");
    let id = |n: usize| {
        let doc: serde_json::Value = serde_json::from_str(&lines[n]).unwrap();
        doc["job"]["id"].as_str().unwrap().to_string()
    };
    let (gpu, cpu) = (id(0), id(1));
    db.client
        .batch_execute(&format!(
            "UPDATE job SET gpu = 9223372036854775807 WHERE job_id = '{gpu}'; \
             UPDATE job SET cpu = 9223372036854775807 WHERE job_id = '{cpu}'; \
             UPDATE job SET gpu = 9007199254740, cpu = 9007199254740992 WHERE job_id = '{}'",
            id(2)
        ))
        .unwrap();
    let said = [
        format!(
            "warning: job `{gpu}`: column gpu: `9223372036854775807` where a request of at most 9007199254740 GPUs was expected; job left out"
        ),
        format!(
            "warning: job `{cpu}`: column cpu: `9223372036854775807` where a request of at most 9007199254740992 millicores was expected; job left out"
        ),
    ];
    let home = temp_home();
    // history: 4 jobs exported, 2 left out and said; the one at the bound is exported.
    let (export, stderr) = crate::long_history::export(home.path(), &db.dsn);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings, said, "{stderr}");
    assert!(stderr.contains("history: left out 2 jobs"), "{stderr}");
    assert_eq!(export.lines().count(), 4, "{export}");
    assert!(!export.contains(&gpu) && !export.contains(&cpu), "{export}");
    // What history wrote, simulate --history reads: the job at the bound too.
    let file = home.path().join("export.jsonl");
    std::fs::write(&file, &export).unwrap();
    let read = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            CURRENT,
            "--history",
            file.to_str().unwrap(),
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(read.status.code(), Some(0), "{}", format_output(&read));
    // simulate --lookout-db: the same lines, the same jobs replayed.
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            CURRENT,
            "--lookout-db",
            &db.dsn,
            "--queue",
            "ml",
            "-o",
            "json",
        ])
        .args(pg::WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let stderr = String::from_utf8(out.stderr).unwrap();
    for line in &said {
        assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    }
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let direct: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(record["summary"]["jobs"], 4, "{record}");
    assert_eq!(record["summary"], direct["summary"]);
    // tune and suggest read the same rows alike: each job left out, said.
    for args in [
        &["tune", "-f", CURRENT, "--vary", "ml-today:retryLimit=1..2"][..],
        &["suggest", "--baseline", CURRENT, "--min-trials", "1"][..],
    ] {
        let out = retryctl(home.path())
            .args(args)
            .args(["--lookout-db", &db.dsn, "--queue", "ml"])
            .args(pg::WINDOW)
            .output()
            .unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{args:?}: {}",
            format_output(&out)
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        for line in &said {
            assert!(stderr.lines().any(|l| l == line), "{args:?}: {line}\n{stderr}");
        }
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("409927646082434"),
            "{args:?}"
        );
    }
    // watch: counted as 2 rows that cannot be read; the 4 others counted; no counter
    // saturated (the job at the bound's GPU-seconds are its hour at 9×10^12 GPUs, no more).
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    let m = w.until("4 jobs", |m| m.jobs() == 4.0);
    assert_eq!(m.sum("retryctl_watch_unreadable_rows_total", &[]), 2.0, "{}", m.text);
    for line in m.text.lines().filter(|l| !l.starts_with('#')) {
        let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(value < 1e20, "{line}");
    }
    let log = w.log();
    for line in &said {
        assert!(log.lines().any(|l| l == line), "{line}\n{log}");
    }
}
