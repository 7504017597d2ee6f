//! `watch`'s gauges of Lookout's present (docs/watch.md "Retries while others wait"), against a
//! real PostgreSQL built from Lookout's migrations: jobs queued now, retries holding capacity
//! now (a run after the job's first, leased, pending or running), first runs and another
//! queue's jobs that count for neither, and requests the export cannot read, left out. The
//! gauges equal what this test's own SQL reads of the same rows, and the scrape passes
//! `promtool check metrics`. In a `SQL_ASCII` database, a pool that is not UTF-8 is left out.

use std::collections::BTreeMap;

use crate::support::pg;
use crate::support::temp_home;
use crate::watch::{promtool_check_metrics, state_file, Watch};

/// `job.state` QUEUED and RUNNING; `job_run_state` FAILED, PENDING, RUNNING and LEASED.
const QUEUED: i16 = 1;
const JOB_RUNNING: i16 = 3;
const FAILED: i16 = 4;
const PENDING: i16 = 1;
const RUNNING: i16 = 2;
const LEASED: i16 = 11;

/// A job: id, queue, state, GPUs, millicores; its runs: (state, pool, minutes after 10:00 it
/// was leased).
type Row = (
    &'static str,
    &'static str,
    i16,
    i64,
    i64,
    Vec<(i16, Option<&'static str>, i64)>,
);

fn rows() -> Vec<Row> {
    vec![
        // Waiting now.
        ("w1", "ml", QUEUED, 2, 4000, vec![]),
        ("w2", "ml", QUEUED, 1, 500, vec![]),
        // Waiting again after a failed run: queued now too.
        ("w3", "ml", QUEUED, 4, 1000, vec![(FAILED, Some("a100"), 0)]),
        // Retries holding capacity: running, pending and leased second (or third) runs.
        (
            "r1",
            "ml",
            JOB_RUNNING,
            4,
            8000,
            vec![(FAILED, Some("a100"), 0), (RUNNING, Some("a100"), 30)],
        ),
        (
            "r2",
            "ml",
            JOB_RUNNING,
            2,
            2000,
            vec![(FAILED, None, 0), (FAILED, None, 10), (PENDING, None, 40)],
        ),
        // A retry in a pool Lookout gives as empty: the default pool, as the export reads it.
        (
            "r4",
            "ml",
            JOB_RUNNING,
            3,
            1000,
            vec![(FAILED, Some(""), 0), (RUNNING, Some(""), 45)],
        ),
        (
            "r3",
            "ml",
            JOB_RUNNING,
            1,
            250,
            vec![(FAILED, Some("h100"), 5), (LEASED, Some("h100"), 50)],
        ),
        // A first run holds capacity: not a retry.
        ("f1", "ml", JOB_RUNNING, 8, 16000, vec![(RUNNING, Some("a100"), 20)]),
        // Requests the export cannot read (negative, or Lookout's 64-bit bound): left out
        // of the gauges as the export leaves the jobs out.
        ("h1", "ml", QUEUED, -5, -8000, vec![]),
        ("h2", "ml", QUEUED, i64::MAX, i64::MAX, vec![]),
        (
            "h3",
            "ml",
            JOB_RUNNING,
            -4,
            1000,
            vec![(FAILED, Some("h100"), 0), (RUNNING, Some("h100"), 30)],
        ),
        // Another queue's jobs: not watched.
        ("o1", "other", QUEUED, 3, 3000, vec![]),
        (
            "o2",
            "other",
            JOB_RUNNING,
            3,
            3000,
            vec![(FAILED, Some("a100"), 0), (RUNNING, Some("a100"), 20)],
        ),
    ]
}

fn load(client: &mut postgres::Client) {
    let mut tx = client.transaction().unwrap();
    let mut run_id = 0;
    for (id, queue, state, gpu, cpu, runs) in rows() {
        tx.execute(
            "INSERT INTO job (job_id, queue, owner, jobset, namespace, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, priority_class, annotations) \
             VALUES ($1, $2, 'ml-team', 'js', 'default', $3, 0, 0, $4, 1, now() AT TIME ZONE 'UTC', $5, now() AT TIME ZONE 'UTC', 0, 'armada-default', '{}'::jsonb)",
            &[&id, &queue, &cpu, &gpu, &state],
        )
        .unwrap();
        for (state, pool, leased) in runs {
            run_id += 1;
            tx.execute(
                "INSERT INTO job_run (run_id, job_id, cluster, leased, pending, job_run_state, pool) \
                 VALUES ($1, $2, 'c', TIMESTAMP '2026-11-16 10:00:00' + $3 * interval '1 minute', TIMESTAMP '2026-11-16 10:00:00' + $3 * interval '1 minute', $4, $5)",
                &[&format!("run-{run_id:02}"), &id, &(leased as f64), &state, &pool],
            )
            .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// The database's present, by this test's own reading: `name{labels}` → value, as the
/// scrape writes them.
fn expected(client: &mut postgres::Client) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for r in client
        .query(
            "SELECT queue, sum(gpu)::float8, sum(cpu)::float8 FROM job WHERE state = 1 AND queue = 'ml' AND gpu BETWEEN 0 AND 9007199254740 AND cpu BETWEEN 0 AND 9007199254740992 GROUP BY queue",
            &[],
        )
        .unwrap()
    {
        let q: String = r.get(0);
        out.insert(
            format!("retryctl_watch_waiting_requests{{queue=\"{q}\",resource=\"gpu\"}}"),
            r.get::<_, f64>(1),
        );
        out.insert(
            format!("retryctl_watch_waiting_requests{{queue=\"{q}\",resource=\"cpu\"}}"),
            r.get::<_, f64>(2) / 1000.0,
        );
    }
    // A retry: a run holding capacity with an earlier run of its job.
    for r in client
        .query(
            "SELECT coalesce(nullif(r.pool, ''), 'default'), j.queue, sum(j.gpu)::float8, sum(j.cpu)::float8 FROM job_run r JOIN job j ON j.job_id = r.job_id \
             WHERE j.queue = 'ml' AND r.job_run_state IN (1, 2, 11) AND j.gpu BETWEEN 0 AND 9007199254740 AND j.cpu BETWEEN 0 AND 9007199254740992 \
             AND EXISTS (SELECT 1 FROM job_run e WHERE e.job_id = r.job_id AND e.leased < r.leased) GROUP BY 1, 2",
            &[],
        )
        .unwrap()
    {
        let (p, q): (String, String) = (r.get(0), r.get(1));
        let at = |resource: &str| {
            format!("retryctl_watch_retry_requests{{pool=\"{p}\",queue=\"{q}\",resource=\"{resource}\"}}")
        };
        out.insert(at("gpu"), r.get::<_, f64>(2));
        out.insert(at("cpu"), r.get::<_, f64>(3) / 1000.0);
    }
    out
}

#[test]
fn the_gauges_are_the_databases_present() {
    let Some(mut db) = pg::lookout_db("watch_present") else {
        return;
    };
    load(&mut db.client);
    let want = expected(&mut db.client);
    // The rows say what they should: three jobs wait (7 GPUs), four retries in three pools
    // (one in a pool Lookout gives as empty: `default`).
    assert_eq!(want.len(), 2 + 6, "{want:?}");
    assert_eq!(
        want["retryctl_watch_waiting_requests{queue=\"ml\",resource=\"gpu\"}"],
        7.0
    );
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    let m = w.until("the present's gauges", |m| {
        m.series.keys().any(|k| k.starts_with("retryctl_watch_retry_requests{"))
    });
    let got: BTreeMap<String, f64> = m
        .series
        .iter()
        .filter(|(k, _)| {
            k.starts_with("retryctl_watch_waiting_requests{") || k.starts_with("retryctl_watch_retry_requests{")
        })
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    assert_eq!(got, want, "{}", m.text);
    promtool_check_metrics(&m.text);

    // A retry that ends and a job that starts: the next poll reads the present again.
    db.client
        .batch_execute("UPDATE job_run SET job_run_state = 3 WHERE job_id = 'r1' AND job_run_state = 2; UPDATE job SET state = 3 WHERE job_id = 'w1'")
        .unwrap();
    let want = expected(&mut db.client);
    let m = w.until("the present read again", |m| {
        m.sum("retryctl_watch_waiting_requests", &["resource=\"gpu\""]) == 5.0
            && m.sum("retryctl_watch_retry_requests", &["pool=\"a100\""]) == 0.0
    });
    for (k, v) in &want {
        assert_eq!(m.series.get(k), Some(v), "{k}: {}", m.text);
    }
}

/// Pools that are not UTF-8 in a `SQL_ASCII` database: left out, as the export leaves their
/// runs out. Decoded with `�`, each was the same label, three series of one name.
#[test]
fn a_pool_that_is_not_utf8_is_left_out_of_the_gauges() {
    let Some(mut db) = pg::lookout_db_encoded("watch_present_bytes", "SQL_ASCII") else {
        return;
    };
    let mut tx = db.client.transaction().unwrap();
    for (i, (pool, gpu)) in [(r"E'gpu\xff'", 4), (r"E'gpu\xfe'", 2), (r"E'gpu\xef\xbf\xbd'", 1)]
        .into_iter()
        .enumerate()
    {
        tx.batch_execute(&format!(
            "INSERT INTO job (job_id, queue, owner, jobset, namespace, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, last_transition_time, last_transition_time_seconds, priority_class, annotations) \
             VALUES ('p{i}', 'ml', 'ml-team', 'js', 'default', 1000, 0, 0, {gpu}, 1, now() AT TIME ZONE 'UTC', {JOB_RUNNING}, now() AT TIME ZONE 'UTC', 0, 'armada-default', '{{}}'::jsonb); \
             INSERT INTO job_run (run_id, job_id, cluster, leased, pending, job_run_state, pool) VALUES \
               ('p{i}-0', 'p{i}', 'c', TIMESTAMP '2026-11-16 10:00:00', TIMESTAMP '2026-11-16 10:00:00', {FAILED}, {pool}), \
               ('p{i}-1', 'p{i}', 'c', TIMESTAMP '2026-11-16 10:30:00', TIMESTAMP '2026-11-16 10:30:00', {RUNNING}, {pool});"
        ))
        .unwrap();
    }
    tx.commit().unwrap();
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    let m = w.until("the present's gauges", |m| {
        m.series.keys().any(|k| k.starts_with("retryctl_watch_retry_requests{"))
    });
    let got: Vec<(&String, &f64)> = m
        .series
        .iter()
        .filter(|(k, _)| k.starts_with("retryctl_watch_retry_requests{"))
        .collect();
    let one = |resource: &str| {
        format!("retryctl_watch_retry_requests{{pool=\"gpu\u{fffd}\",queue=\"ml\",resource=\"{resource}\"}}")
    };
    assert_eq!(got, [(&one("cpu"), &1.0), (&one("gpu"), &1.0)], "{}", m.text);
    let lines = m
        .text
        .lines()
        .filter(|l| l.starts_with("retryctl_watch_retry_requests{"))
        .count();
    assert_eq!(lines, 2, "{}", m.text);
    promtool_check_metrics(&m.text);
}
