//! `retryctl watch` on rows written as Lookout's ingester writes them (docs/watch.md "A job is
//! counted once its record is complete"): a job's terminal state committed before its runs'
//! creations and last updates, in transactions of their own. Every job is counted once, with
//! all its runs, through a SIGKILL and a restart while jobs wait; a record still incomplete
//! after `--settle` is counted as it stands and apart; 200,000 jobs whose runs come in a
//! second statement are all counted; and counters never go backwards across SIGKILLs while a
//! real Prometheus scrapes every second (`resets()` 0, totals exact).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::pg;
use crate::support::{lookout_rows, root, temp_home};
use crate::watch::{
    default_signals, simulate, state_file, week, Metrics, Prometheus, Watch, CANDIDATE, CURRENT, LIMIT,
};

/// The counters of `m` that `simulate --baseline` also counts: jobs, today's retries and their
/// futile share, each candidate's changes and GPU time. Not the incident runs: an hour is
/// judged against the hours counted before it as the jobs arrive, so a watch that read some
/// jobs later (their runs late) may judge an hour at the bound otherwise (docs/watch.md
/// "Incident windows").
fn replayed(m: &Metrics) -> Vec<(String, f64)> {
    m.counted()
        .into_iter()
        .filter(|(k, _)| !k.contains("incomplete_jobs") && !k.contains("unreadable") && !k.contains("incident"))
        .collect()
}

/// Holds back the runs of `jobs` (moved to `held`), and makes the last run of each of
/// `running` still running (its row kept in `held_last`): as a reader finds the rows between
/// the ingester's transactions.
fn as_between_transactions(client: &mut postgres::Client, jobs: &[String], running: &[String]) {
    let mut tx = client.transaction().unwrap();
    tx.execute(
        "CREATE TABLE held AS SELECT * FROM job_run WHERE job_id = ANY($1)",
        &[&jobs],
    )
    .unwrap();
    tx.execute("DELETE FROM job_run WHERE job_id = ANY($1)", &[&jobs])
        .unwrap();
    tx.execute(
        "CREATE TABLE held_last AS SELECT * FROM job_run r WHERE r.job_id = ANY($1) \
         AND r.started = (SELECT max(started) FROM job_run WHERE job_id = r.job_id)",
        &[&running],
    )
    .unwrap();
    tx.execute(
        "UPDATE job_run SET job_run_state = 2, finished = NULL WHERE run_id IN (SELECT run_id FROM held_last)",
        &[],
    )
    .unwrap();
    tx.commit().unwrap();
}

/// The ingester's later transactions: the held runs created, the running ones finished.
fn runs_land(client: &mut postgres::Client) {
    client
        .batch_execute(
            "INSERT INTO job_run SELECT * FROM held; \
             UPDATE job_run r SET job_run_state = h.job_run_state, finished = h.finished FROM held_last h \
             WHERE r.run_id = h.run_id",
        )
        .unwrap();
}

/// `n` job ids of the database with at least two runs, in `state`.
fn jobs_with_runs(client: &mut postgres::Client, state: i16, n: i64) -> Vec<String> {
    client
        .query(
            "SELECT job_id FROM job j WHERE state = $1 AND (SELECT count(*) FROM job_run r WHERE r.job_id = j.job_id) >= 2 \
             ORDER BY job_id LIMIT $2",
            &[&state, &n],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[test]
fn jobs_whose_runs_land_after_their_state_are_counted_once_whole() {
    let Some(mut db) = pg::lookout_db("watch_ingester") else {
        return;
    };
    let lines = week();
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    // 20 failed jobs whose runs are not written yet, 50 succeeded ones whose last run still
    // says it runs.
    let failed = jobs_with_runs(&mut db.client, 5, 20);
    let succeeded = jobs_with_runs(&mut db.client, 4, 50);
    assert_eq!((failed.len(), succeeded.len()), (20, 50));
    as_between_transactions(&mut db.client, &failed, &succeeded);
    let home = temp_home();
    let state = state_file(home.path());
    let total = lines.len() as f64;
    let mut w = Watch::start(home.path(), &db.dsn, &state, &["--window", "30d"]);
    let before = w.until("the complete jobs", |m| m.jobs() == total - 70.0);
    assert_eq!(w.health(200), "ok; 70 wait for their runs\n");
    assert!(w.log().contains("; 70 wait for their runs; cursor "), "{}", w.log());
    // Killed while they wait, and started again on its state: they still wait, and nothing
    // is counted twice.
    let (code, _, _) = w.signal("KILL");
    assert_eq!(code, None);
    let mut w = Watch::start(home.path(), &db.dsn, &state, &["--window", "30d"]);
    assert_eq!(w.health(200), "ok; 70 wait for their runs\n");
    assert_eq!(w.metrics().counted(), before.counted());
    runs_land(&mut db.client);
    let after = w.until("every job", |m| m.jobs() == total);
    assert_eq!(w.health(200), "ok; no job waits for its runs\n");
    assert_eq!(after.sum("retryctl_watch_incomplete_jobs_total", &[]), 0.0);
    // Counted whole, once: as a watch that read the complete record at once counts it, and as
    // `simulate --baseline --lookout-db` replays the same jobs.
    let fresh_home = temp_home();
    let mut fresh = Watch::start(
        fresh_home.path(),
        &db.dsn,
        &state_file(fresh_home.path()),
        &["--window", "30d"],
    );
    let once = fresh.until("every job", |m| m.jobs() == total);
    assert_eq!(replayed(&after), replayed(&once));
    let plan = simulate(home.path(), &db.dsn, &["-f", CANDIDATE, "--baseline", CURRENT]);
    let c = &plan["comparison"];
    let n = |v: &Value| v.as_f64().unwrap();
    let shadow = |change: &str| after.sum("retryctl_watch_shadow_jobs_total", &[&format!("change=\"{change}\"")]);
    assert_eq!(after.jobs(), n(&c["jobs"]));
    assert_eq!(shadow("same"), n(&c["unchanged"]));
    assert_eq!(shadow("rescued"), n(&c["transitions"]["rescued"]));
    // The 20 failed jobs' retries are there: today's futile retries include theirs.
    assert!(
        after.sum("retryctl_watch_futile_retries_total", &[]) > before.sum("retryctl_watch_futile_retries_total", &[]),
        "{}",
        after.text
    );
}

#[test]
fn a_record_still_incomplete_after_settle_is_counted_as_it_stands_and_apart() {
    let Some(mut db) = pg::lookout_db("watch_settle") else {
        return;
    };
    let lines = week();
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let failed = jobs_with_runs(&mut db.client, 5, 3);
    let succeeded = jobs_with_runs(&mut db.client, 4, 2);
    as_between_transactions(&mut db.client, &failed, &succeeded);
    let home = temp_home();
    let total = lines.len() as f64;
    let mut w = Watch::start(
        home.path(),
        &db.dsn,
        &state_file(home.path()),
        &["--window", "30d", "--settle", "2s"],
    );
    // The 3 jobs with no run have nothing to replay: counted apart only. The 2 whose last
    // run never finished are counted without it, and apart.
    let m = w.until("the settled jobs", |m| {
        m.sum("retryctl_watch_incomplete_jobs_total", &[]) == 5.0
    });
    assert_eq!(m.jobs(), total - 3.0, "{}", m.text);
    assert_eq!(w.health(200), "ok; no job waits for its runs\n");
    // Their runs landing later count nothing again.
    runs_land(&mut db.client);
    let polls = |m: &Metrics| m.sum("retryctl_watch_last_poll_success_timestamp_seconds", &[]);
    let seen = polls(&w.metrics());
    let later = w.until("two more polls", |m| polls(m) > seen + 0.5);
    assert_eq!(later.counted(), m.counted());
}

#[test]
fn two_hundred_thousand_jobs_whose_runs_come_in_a_second_statement_are_all_counted() {
    let Some(mut db) = pg::lookout_db("watch_bulk") else {
        return;
    };
    const JOBS: i64 = 200_000;
    // The jobs' terminal states in one statement (failed a minute ago), as the ingester's
    // job updates; their runs in a second one, after watch has read the jobs.
    db.client
        .execute(
            "INSERT INTO job (job_id, queue, owner, jobset, namespace, cpu, memory, ephemeral_storage, gpu, priority, \
             submitted, state, last_transition_time, last_transition_time_seconds, priority_class, annotations) \
             SELECT 'bulk-' || lpad(g::text, 6, '0'), 'ml', 'ml-team', 'train', 'default', 1000, 0, 0, 1, 1, \
             (now() AT TIME ZONE 'UTC') - interval '3 hours', 5, (now() AT TIME ZONE 'UTC') - interval '1 minute', \
             extract(epoch FROM now())::bigint, 'armada-default', '{}'::jsonb FROM generate_series(1, $1::bigint) g",
            &[&JOBS],
        )
        .unwrap();
    let home = temp_home();
    let mut w = Watch::start(
        home.path(),
        &db.dsn,
        &state_file(home.path()),
        &["--queue", "ml", "--poll", "1s"],
    );
    let deadline = Instant::now() + 4 * LIMIT;
    loop {
        let (status, body) = w.get("/healthz");
        if status == 200 && body == format!("ok; {JOBS} wait for their runs\n") {
            break;
        }
        assert!(Instant::now() < deadline, "/healthz: {status} {body}\n{}", w.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(w.metrics().jobs(), 0.0);
    // Two runs a job, failed with exit code 1 an hour each, in one statement.
    db.client
        .execute(
            "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code, pool) \
             SELECT 'run-' || g || '-' || k, 'bulk-' || lpad(g::text, 6, '0'), 'ml-gpu-a', 'node-' || (g % 7), \
             (now() AT TIME ZONE 'UTC') - interval '3 hours' + k * interval '1 hour', \
             (now() AT TIME ZONE 'UTC') - interval '3 hours' + k * interval '1 hour', \
             (now() AT TIME ZONE 'UTC') - interval '3 hours' + k * interval '1 hour', \
             (now() AT TIME ZONE 'UTC') - interval '2 hours' + k * interval '1 hour' - interval '1 second', \
             4, 1, 'gpu' FROM generate_series(1, $1::bigint) g, generate_series(0, 1) k",
            &[&JOBS],
        )
        .unwrap();
    let deadline = Instant::now() + 4 * LIMIT;
    let m = loop {
        let m = w.metrics();
        if m.jobs() == JOBS as f64 {
            break m;
        }
        assert!(Instant::now() < deadline, "{} jobs counted\n{}", m.jobs(), w.log());
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(w.health(200), "ok; no job waits for its runs\n");
    let plan = simulate(home.path(), &db.dsn, &["-f", CANDIDATE, "--baseline", CURRENT]);
    let c = &plan["comparison"];
    let n = |v: &Value| v.as_f64().unwrap();
    assert_eq!(m.jobs(), n(&c["jobs"]));
    let shadow = |change: &str| m.sum("retryctl_watch_shadow_jobs_total", &[&format!("change=\"{change}\"")]);
    assert_eq!(shadow("same"), n(&c["unchanged"]));
    assert_eq!(
        shadow("retried_differently"),
        n(&c["transitions"]["other"]) + n(&c["transitions"]["retriesOnly"])
    );
}

/// `retryctl watch` on a fixed address (the one Prometheus scrapes), started again and again.
fn watch_on(home: &Path, dsn: &str, listen: &str) -> Child {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("retryctl"));
    cmd.current_dir(root())
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("LOOKOUT_DB", dsn)
        .args([
            "watch",
            "--baseline",
            CURRENT,
            "-f",
            CANDIDATE,
            "--since",
            "30d",
            "--poll",
            "1s",
        ])
        .args(["--listen", listen, "--window", "30d"])
        .arg("--state")
        .arg(state_file(home))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log(home));
    default_signals(&mut cmd);
    cmd.spawn().unwrap()
}

/// Every start's stderr, one after the other, in `home`'s `watch.log`.
fn log(home: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("watch.log"))
        .unwrap()
}

#[test]
fn counters_never_go_back_across_sigkills_while_prometheus_scrapes() {
    let Some(mut db) = pg::lookout_db("watch_resets") else {
        return;
    };
    // The week twenty times over, each copy's ids its own: a first poll of several pages.
    let lines: Vec<String> = (0..20)
        .flat_map(|k| {
            week().into_iter().map(move |l| {
                let mut v: Value = serde_json::from_str(&l).unwrap();
                let id = format!("{}{k}", v["job"]["id"].as_str().unwrap());
                v["job"]["id"] = Value::String(id);
                v.to_string()
            })
        })
        .collect();
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let listen = format!("127.0.0.1:{}", pg::free_port());
    let Some(prometheus) = Prometheus::start(&listen) else {
        return;
    };
    let home = temp_home();
    // Killed at once, and at points inside its first poll, page after page.
    for wait in [0u64, 100, 300, 500, 200, 700, 400, 900] {
        let mut child = watch_on(home.path(), &db.dsn, &listen);
        std::thread::sleep(Duration::from_millis(wait + 600));
        let _ = child.kill();
        let _ = child.wait();
    }
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut last = Kill(watch_on(home.path(), &db.dsn, &listen));
    let total = lines.len() as f64;
    let deadline = Instant::now() + 2 * LIMIT;
    // The last watch answers with every job counted (a killed one may have counted them all
    // already, and Prometheus still shows its last scrape: the last must be scraped too).
    let last_jobs = || {
        let text = reqwest::blocking::get(format!("http://{listen}/metrics"))
            .ok()?
            .text()
            .ok()?;
        Some(Metrics::parse(&text).jobs())
    };
    while last_jobs() != Some(total) {
        assert!(
            Instant::now() < deadline,
            "the last watch has {:?} jobs of {total} ({:?})",
            last_jobs(),
            last.0.try_wait()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let answered = Instant::now();
    while prometheus.query("sum(retryctl_watch_jobs_total)") != Some(total)
        || answered.elapsed() < Duration::from_millis(2500)
    {
        assert!(
            Instant::now() < deadline,
            "Prometheus has {:?} jobs of {total}",
            prometheus.query("sum(retryctl_watch_jobs_total)")
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Every counter of every scrape, across every kill: never a decrease.
    let log = || std::fs::read_to_string(home.path().join("watch.log")).unwrap_or_default();
    let (status, text) = match reqwest::blocking::get(format!("http://{listen}/metrics")) {
        Ok(r) => (r.status().as_u16(), r.text().unwrap()),
        Err(e) => panic!(
            "the last watch does not answer ({e:?}; {:?}):\n{}",
            last.0.try_wait(),
            log()
        ),
    };
    assert_eq!(status, 200, "{text}");
    let counters: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    assert_eq!(counters.len(), 15, "{text}");
    for counter in counters {
        // A family of no series yet has no sample to reset.
        let resets = prometheus.query(&format!("sum(resets({counter}[1h]))")).unwrap_or(0.0);
        assert_eq!(resets, 0.0, "{counter}");
    }
    assert_eq!(
        prometheus.query("sum(resets(retryctl_watch_jobs_total[1h]))"),
        Some(0.0),
        "Prometheus answers resets() of the jobs it scraped"
    );
    // And the totals are exact: what one watch of a fresh state counts.
    let fresh_home = temp_home();
    let mut fresh = Watch::start(
        fresh_home.path(),
        &db.dsn,
        &state_file(fresh_home.path()),
        &["--window", "30d"],
    );
    let once = fresh.until("every job", |m| m.jobs() == total);
    assert_eq!(
        replayed(&Metrics::parse(&text)),
        replayed(&once),
        "{}",
        format_output_of(&text)
    );
}

fn format_output_of(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}
