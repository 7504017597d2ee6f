//! `retryctl watch` and the database's clock (docs/watch.md "What it reads"), against a real
//! PostgreSQL. On a database whose clock runs behind the machine's, a start counted back from
//! the machine's clock (the default, now, or `--since DURATION`) is counted again from the
//! database's `now()`, and a `--state` whose start lies past it starts within it, each said
//! once on the log with both times; the database's clock is put 2 hours behind by a `now()` of
//! its own ahead of `pg_catalog`'s on its search path, which every connection to it (watch's,
//! and the rows the test writes) reads. Jobs Lookout writes further behind the cursor than
//! `--lookback` are counted late and said, never counted as jobs.

use std::path::Path;
use std::process::Command;

use crate::support::pg::{self, Db};
use crate::support::{root, temp_home};
use crate::watch::{arrive, bare_watch, state_file, week, Metrics, Watch, CANDIDATE, CURRENT};

/// A fresh Lookout database whose `now()` is 2 hours behind the machine's clock.
fn two_hours_behind(test: &str) -> Option<Db> {
    let mut db = pg::lookout_db(test)?;
    db.client
        .batch_execute(&format!(
            "CREATE SCHEMA skew; \
             CREATE FUNCTION skew.now() RETURNS timestamptz LANGUAGE sql STABLE \
             AS $$ SELECT pg_catalog.now() - interval '2 hours' $$; \
             ALTER DATABASE {} SET search_path = skew, public, pg_catalog",
            db.name
        ))
        .unwrap();
    db.client = postgres::Client::connect(&db.dsn, postgres::NoTls).unwrap();
    let behind: f64 = db
        .client
        .query_one("SELECT EXTRACT(EPOCH FROM pg_catalog.now() - now())::float8", &[])
        .unwrap()
        .get(0);
    assert_eq!(behind, 7200.0);
    Some(db)
}

/// watch on `dsn` with `--state STATE` and `extra`, without the `--since` of `command_for`.
fn command(home: &Path, dsn: &str, state: &Path, extra: &[&str]) -> Command {
    let mut cmd = bare_watch(home, &root(), dsn);
    cmd.args(["--baseline", CURRENT, "-f", CANDIDATE])
        .args(["--listen", "127.0.0.1:0", "--poll", "1s", "--state"])
        .arg(state)
        .args(extra);
    cmd
}

/// The log's one warning that starts with `start`, and that it is one.
fn one_warning(w: &Watch, start: &str) -> String {
    let log = w.log();
    let found: Vec<&str> = log.lines().filter(|l| l.starts_with(start)).collect();
    assert_eq!(found.len(), 1, "{log}");
    found[0].to_string()
}

/// Whether `line` names two times 2 hours apart, the first the later (`… (T1) … (T2) …`).
fn two_hours_apart(line: &str) -> bool {
    let times: Vec<i64> = line
        .split(['(', ')', ' ', ','])
        .filter_map(retryctl::model::failure_history::Timestamp::parse)
        .map(|t| t.0 / 1_000_000_000)
        .collect();
    times.len() >= 2 && (times[0] - times[1] - 7200).abs() <= 60
}

#[test]
fn a_start_counted_from_a_machine_clock_ahead_of_the_databases_counts_from_the_databases() {
    let Some(mut db) = two_hours_behind("watch_clock_now") else {
        return;
    };
    let lines = week();
    // Ended 3 minutes ago by the database's clock: within the span read again.
    arrive(&mut db.client, &lines[..5], "3 minutes");
    let home = temp_home();
    let mut w = Watch::spawn(command(home.path(), &db.dsn, &state_file(home.path()), &[]));
    w.until("the 5 jobs of 3 minutes ago", |m| m.jobs() == 5.0);
    let warning = one_warning(&w, "warning: the machine's clock (");
    assert!(
        warning.contains(" runs ahead of the database's (")
            && warning.ends_with(", counted back from the database's now"),
        "{warning}"
    );
    assert!(two_hours_apart(&warning), "{warning}");
    // Jobs that end now, by the database's clock: counted.
    arrive(&mut db.client, &lines[5..15], "0s");
    w.until("10 jobs more", |m| m.jobs() == 15.0);
    let (code, _, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");

    // `--since 30d`: 30 days back from the database's now, not from the machine's.
    let Some(mut db) = two_hours_behind("watch_clock_since") else {
        return;
    };
    arrive(&mut db.client, &lines[..3], "29 days 23 hours");
    let home = temp_home();
    let mut w = Watch::spawn(command(
        home.path(),
        &db.dsn,
        &state_file(home.path()),
        &["--since", "30d"],
    ));
    w.until("the 3 jobs of 29 days 23 hours ago", |m| m.jobs() == 3.0);
    let warning = one_warning(&w, "warning: the machine's clock (");
    assert!(two_hours_apart(&warning), "{warning}");
}

#[test]
fn a_state_that_starts_past_the_databases_clock_starts_within_it() {
    let Some(mut db) = two_hours_behind("watch_clock_state") else {
        return;
    };
    let home = temp_home();
    let state = state_file(home.path());
    // A state that counted nothing, started an hour ago by the machine's clock: an hour past
    // the database's now.
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let w = Watch::spawn(command(home.path(), &dead, &state, &["--since", "1h"]));
    let (code, _, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");
    let lines = week();
    arrive(&mut db.client, &lines[..4], "2 minutes");
    let mut w = Watch::spawn(command(home.path(), &db.dsn, &state, &[]));
    w.until("the 4 jobs of 2 minutes ago", |m| m.jobs() == 4.0);
    let warning = one_warning(&w, &format!("warning: `--state` `{}` starts at ", state.display()));
    assert!(
        warning.contains(", past the database's clock ")
            && warning.ends_with(": reading from --lookback (5m) before the database's now"),
        "{warning}"
    );
}

/// The example of docs/watch.md "What it reads": a watch at `--poll 2s` that has counted a job,
/// given 20 jobs that ended 8 minutes ago and 20 that ended 3 minutes ago, counts the 20 recent
/// ones and 20 late ones, said once with the oldest one's hour; with `--lookback 15m`, all 40
/// and no late one.
#[test]
fn jobs_written_behind_the_lookback_are_counted_late_and_said() {
    let lines = week();
    let late = |m: &Metrics| m.sum("retryctl_watch_late_jobs_total", &["queue=\"ml\""]);
    let polls = |m: &Metrics| m.sum("retryctl_watch_last_poll_success_timestamp_seconds", &[]);
    for (lookback, counted, late_jobs) in [("5m", 21.0, 20.0), ("15m", 41.0, 0.0)] {
        let Some(mut db) = pg::lookout_db("watch_late") else {
            return;
        };
        let home = temp_home();
        let state = state_file(home.path());
        let mut w = Watch::start(home.path(), &db.dsn, &state, &["--poll", "2s", "--lookback", lookback]);
        arrive(&mut db.client, &lines[..1], "0s");
        let seen = w.until("a job", |m| m.jobs() == 1.0);
        // The poll that counted it has counted what lies behind the span too.
        w.until("the poll after it", |m| polls(m) > polls(&seen));
        arrive(&mut db.client, &lines[1..21], "8 minutes");
        arrive(&mut db.client, &lines[21..41], "3 minutes");
        let m = w.until("the jobs", |m| m.jobs() == counted && late(m) == late_jobs);
        // Polls go on: nothing more is counted, late or not.
        w.until("two more polls", |later| polls(later) > polls(&m) + 2.0);
        let after = w.metrics();
        assert_eq!((after.jobs(), late(&after)), (counted, late_jobs), "{}", w.log());
        let log = w.log();
        let said: Vec<&str> = log.lines().filter(|l| l.contains(" behind the cursor")).collect();
        if late_jobs == 0.0 {
            assert!(said.is_empty(), "{log}");
            continue;
        }
        assert_eq!(said.len(), 1, "{log}");
        let prefix = "warning: 20 jobs of queue `ml` written more than --lookback (5m) behind the cursor, the oldest ending between ";
        let suffix = ": never counted (retryctl_watch_late_jobs_total); raise --lookback";
        assert!(said[0].starts_with(prefix) && said[0].ends_with(suffix), "{}", said[0]);
        // The oldest's hour, within the range counted: it ends before the span read again.
        let between: Vec<&str> = said[0][prefix.len()..said[0].len() - suffix.len()]
            .split(" and ")
            .collect();
        let t = |s: &str| retryctl::model::failure_history::Timestamp::parse(s).unwrap().0;
        assert!(t(between[0]) < t(between[1]), "{}", said[0]);
        // `--state` keeps it: restarted, the counter goes on and nothing is counted again.
        let (code, _, log) = w.signal("TERM");
        assert_eq!(code, Some(0), "{log}");
        let mut w = Watch::start(home.path(), &db.dsn, &state, &["--poll", "2s", "--lookback", lookback]);
        let first = w.until("a poll", |m| polls(m) > 0.0);
        w.until("two polls", |m| polls(m) > polls(&first) + 2.0);
        let again = w.metrics();
        assert_eq!((again.jobs(), late(&again)), (counted, late_jobs), "{}", w.log());
    }
}

#[test]
fn a_lookback_longer_than_the_window_is_refused() {
    let home = temp_home();
    let out = crate::support::retryctl(home.path())
        .env("LOOKOUT_DB", "postgresql://lookout@127.0.0.1:1/lookout")
        .args(["watch", "--baseline", CURRENT, "--state"])
        .arg(home.path().join("s.json"))
        .args(["--window", "1h", "--lookback", "2h"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: invalid `--lookback` `2h`: longer than `--window` `1h`; give a duration of at most the window\n"
    );
    assert!(!home.path().join("s.json").exists());
}
