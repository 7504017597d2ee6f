//! Retries while others waited (docs/contention.md), read from a real Lookout database: the
//! rows written as Lookout's ingester writes them (a job, then its runs), exported by
//! `retryctl history --lookout-db`, and the export's numbers checked against sums computed
//! here straight from the rows.

use std::collections::BTreeMap;

use retryctl::model::failure_history::FailureHistory;
use retryctl::model::{parse_documents, Resource};
use retryctl::replay::contention::{run_spans, tally, JobRuns, Side, Started};
use retryctl::replay::incidents::Windows;

use crate::support::pg;
use crate::support::{format_output, retryctl, temp_home};

/// 2026-11-16T10:00:00Z in seconds since the epoch: the rows' times are seconds after it.
const TEN: i64 = 1_794_823_200;

/// A job of queue `ml`: id, submitted (seconds after 10:00), GPUs, millicores, its runs.
struct JobRow {
    id: &'static str,
    submitted: i64,
    gpu: u64,
    cpu: u64,
    runs: Vec<RunRow>,
}

/// A run: Lookout's state, pool, and leased, started and finished (seconds after 10:00).
struct RunRow {
    state: i16,
    pool: Option<&'static str>,
    leased: i64,
    started: i64,
    finished: i64,
}

fn run(state: i16, pool: Option<&'static str>, [leased, started, finished]: [i64; 3]) -> RunRow {
    RunRow {
        state,
        pool,
        leased,
        started,
        finished,
    }
}

const FAILED: i16 = 4;
const SUCCEEDED: i16 = 3;
const MIN: i64 = 60;

/// Retries in two pools while jobs wait in both; one job's second run starts before its
/// first finished (clock skew), so it is written with its start.
fn rows() -> Vec<JobRow> {
    vec![
        JobRow {
            id: "c-retry",
            submitted: 0,
            gpu: 4,
            cpu: 8000,
            runs: vec![
                run(FAILED, Some("a100"), [0, 10, 60 * MIN]),
                run(SUCCEEDED, Some("a100"), [60 * MIN + 5, 60 * MIN + 30, 120 * MIN]),
            ],
        },
        JobRow {
            id: "c-wait",
            submitted: 30 * MIN,
            gpu: 2,
            cpu: 4000,
            runs: vec![run(SUCCEEDED, Some("a100"), [120 * MIN, 120 * MIN + 20, 180 * MIN])],
        },
        JobRow {
            id: "c-default",
            submitted: 45 * MIN,
            gpu: 1,
            cpu: 500,
            runs: vec![run(SUCCEEDED, None, [90 * MIN, 90 * MIN, 150 * MIN])],
        },
        JobRow {
            id: "c-skew",
            submitted: 5 * MIN,
            gpu: 1,
            cpu: 2000,
            runs: vec![
                run(FAILED, None, [10 * MIN, 10 * MIN + 7, 20 * MIN]),
                run(FAILED, None, [15 * MIN, 18 * MIN, 100 * MIN]),
                run(SUCCEEDED, None, [130 * MIN, 131 * MIN, 140 * MIN]),
            ],
        },
    ]
}

fn sql(rows: &[JobRow]) -> String {
    let at = |s: i64| format!("to_timestamp({}) AT TIME ZONE 'UTC'", TEN + s);
    let mut sql = String::new();
    let mut next = 0;
    for j in rows {
        let last = j.runs.last().unwrap();
        sql += &format!(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, annotations) \
             VALUES ('{}', 'ml', 'o', 's', {}, 1024, 0, {}, 1, {}, {}, {}, 0, '{{}}'::jsonb);\n",
            j.id,
            j.cpu,
            j.gpu,
            at(j.submitted),
            if last.state == SUCCEEDED { 4 } else { 5 },
            at(last.finished),
        );
        for r in &j.runs {
            next += 1;
            let pool = r.pool.map_or("NULL".to_string(), |p| format!("'{p}'"));
            sql += &format!(
                "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, pool) \
                 VALUES ('run-{next}', '{}', 'c', 'node-{next}', {}, {}, {}, {}, {}, {}, {pool});\n",
                j.id,
                at(r.leased),
                at(r.leased),
                at(r.started),
                at(r.finished),
                r.state,
                if r.state == FAILED { 1 } else { 0 },
            );
        }
    }
    sql
}

/// One resource's sums from the rows, in hours, on a grid of seconds: what waits and what
/// retries in each pool at each second.
#[derive(Debug, PartialEq)]
struct Sums {
    retry: f64,
    queued: f64,
    while_others_waited: f64,
    overlap: f64,
    by_pool: BTreeMap<String, f64>,
}

fn sums_of_rows(rows: &[JobRow], gpu: bool) -> Sums {
    // (from, to, pool, job, request) in seconds after 10:00.
    let mut waits = Vec::new();
    let mut retries = Vec::new();
    for (j, job) in rows.iter().enumerate() {
        let request = if gpu { job.gpu * 1000 } else { job.cpu };
        let mut waited_from = job.submitted;
        for (k, r) in job.runs.iter().enumerate() {
            let pool = r.pool.unwrap_or("default").to_string();
            if waited_from < r.started {
                waits.push((waited_from, r.started, pool.clone(), j, request));
            }
            if k > 0 {
                retries.push((r.started, r.finished, pool, j, request));
            }
            waited_from = r.finished;
        }
    }
    let mut s = Sums {
        retry: 0.0,
        queued: 0.0,
        while_others_waited: 0.0,
        overlap: 0.0,
        by_pool: BTreeMap::new(),
    };
    let hours = |milli: u64| milli as f64 / 1000.0 / 3600.0;
    for t in 0..240 * MIN {
        for pool in ["a100", "default"] {
            let on = |i: &&(i64, i64, String, usize, u64)| i.0 <= t && t < i.1 && i.2 == pool;
            let waiting: Vec<_> = waits.iter().filter(on).collect();
            let running: Vec<_> = retries.iter().filter(on).collect();
            let q: u64 = waiting.iter().map(|w| w.4).sum();
            let r: u64 = running.iter().map(|w| w.4).sum();
            s.queued += hours(q);
            s.retry += hours(r);
            for x in &running {
                if waiting.iter().any(|w| w.3 != x.3 && w.4 > 0) {
                    s.while_others_waited += hours(x.4);
                }
            }
            if q.min(r) > 0 {
                s.overlap += hours(q.min(r));
                *s.by_pool.entry(pool.to_string()).or_default() += hours(q.min(r));
            }
        }
    }
    s
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// `history --lookout-db` writes each run's pool and times from which Lookout's `started` and
/// `finished` come back exactly; the export's numbers are the rows'.
#[test]
fn the_export_gives_back_the_rows_times_pools_and_numbers() {
    let Some(mut db) = pg::lookout_db("contention") else {
        return;
    };
    let rows = rows();
    db.client.batch_execute(&sql(&rows)).unwrap();
    let home = temp_home();
    let out = retryctl(home.path())
        .args(["history", "--queue", "ml", "--lookout-db", &db.dsn])
        .args(pg::WINDOW)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains(
            "1  runs written with their startedAt: they started before the run before them finished (or the job was submitted)"
        ),
        "{stderr}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let histories: Vec<FailureHistory> = text
        .lines()
        .flat_map(|line| parse_documents(line, None).documents)
        .map(|d| match d.resource {
            Some(Resource::FailureHistory(h)) => *h,
            other => panic!("not a history: {other:?}"),
        })
        .collect();
    let ids: Vec<&str> = histories.iter().map(|h| h.job.id.as_str()).collect();
    assert_eq!(ids, ["c-default", "c-retry", "c-skew", "c-wait"]);
    // Each run's start and end, and pool, as the rows have them.
    let mut spans = Vec::new();
    for h in &histories {
        let row = rows.iter().find(|r| r.id == h.job.id).unwrap();
        run_spans(h, &mut spans);
        let want: Vec<Option<(i64, i64)>> = row
            .runs
            .iter()
            .map(|r| Some(((TEN + r.started) * 1_000_000_000, (TEN + r.finished) * 1_000_000_000)))
            .collect();
        assert_eq!(spans, want, "{}", h.job.id);
        let pools: Vec<Option<&str>> = h.runs.iter().map(|r| r.pool.as_deref()).collect();
        let want: Vec<Option<&str>> = row.runs.iter().map(|r| r.pool).collect();
        assert_eq!(pools, want, "{}", h.job.id);
    }
    // The numbers of the export, and the rows'.
    let mut ends = Vec::new();
    let jobs: Vec<JobRuns> = histories
        .iter()
        .map(|h| JobRuns::of(h, Started::record(h), &mut ends))
        .collect();
    let side = Side::of(&tally(&jobs, &Windows::default()));
    assert_eq!((side.retry_runs, side.untimed_runs, side.not_placed_runs), (3, 0, 0));
    for (gpu, got) in [(true, &side.gpu), (false, &side.cpu)] {
        let want = sums_of_rows(&rows, gpu);
        assert!(want.overlap > 0.0 && want.while_others_waited > 0.0, "{want:?}");
        let pools: Vec<&String> = got.overlap_hours_by_pool.keys().collect();
        assert_eq!(pools, want.by_pool.keys().collect::<Vec<_>>());
        for (what, g, w) in [
            ("retry", got.retry_hours, want.retry),
            ("queued", got.queued_hours, want.queued),
            (
                "while others waited",
                got.while_others_waited_hours,
                want.while_others_waited,
            ),
            ("overlap", got.overlap_hours, want.overlap),
            ("a100", got.overlap_hours_by_pool["a100"], want.by_pool["a100"]),
            ("default", got.overlap_hours_by_pool["default"], want.by_pool["default"]),
        ] {
            assert!(close(g, w), "gpu: {gpu}, {what}: the export's {g}, the rows' {w}");
        }
    }
}
