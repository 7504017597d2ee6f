//! `retryctl watch` past the happy path (docs/watch.md "Its HTTP server", "Durable", "When the
//! database goes away"): a header trickled is closed after the header timeout, a header past 64 KiB
//! or of more than 100 fields is 431, idle and half-sent connections past the file limit never lock
//! a scrape out; a job stamped in the future does not hide the jobs after it; `--state` is one
//! watch's (a second refused once its 2 seconds' wait for the lock is over, one started right after
//! a `kill -9` of the one before starting, a FIFO refused without blocking, bytes that are not a
//! state refused and kept); a database that accepts and then answers nothing makes `/healthz` 503,
//! and reports asked for and left there start one replay at a time; what no poll can fix is refused
//! at the start.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::pg;
use crate::support::{lookout_rows, retryctl, temp_home};
use crate::watch::{state_file, week, Watch, CURRENT};

/// The open descriptors of process `pid`.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// The most descriptors a process holds while it is watched: sampled without a pause, on a
/// thread of its own, until [`MostDescriptors::finish`]; a test that fails first stops it when
/// it drops, so that no thread spins on through the rest of the suite.
struct MostDescriptors {
    running: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl MostDescriptors {
    fn start(pid: u32) -> MostDescriptors {
        let running = Arc::new(AtomicBool::new(true));
        let thread = std::thread::spawn({
            let running = running.clone();
            move || {
                let mut most = 0;
                while running.load(Ordering::Relaxed) {
                    most = most.max(descriptors(pid));
                }
                most
            }
        });
        MostDescriptors {
            running,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> usize {
        self.running.store(false, Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

impl Drop for MostDescriptors {
    fn drop(&mut self) {
        self.running.store(false, Ordering::Relaxed);
    }
}

/// Raises this process's soft file limit to its hard one (the test opens many sockets).
fn more_files() {
    // SAFETY: getrlimit/setrlimit on a struct of this function's.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

#[test]
fn the_http_server_is_bounded_whatever_the_clients_do() {
    more_files();
    let home = temp_home();
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let state = state_file(home.path());
    // Run under a file limit of 1,024, as a pod's default.
    let mut cmd = crate::watch::command_for(home.path(), &dead, &state, &[]);
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            Ok(())
        });
    }
    let w = Watch::spawn(cmd);
    let addr = w.url.trim_start_matches("http://").to_string();
    // 64 KiB of header and more: 431, and the connection closed.
    let mut big = TcpStream::connect(&addr).unwrap();
    let header = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(70 * 1024)
    );
    let _ = big.write_all(header.as_bytes());
    let mut answer = String::new();
    big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = big.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer:?}");
    // More than 100 header fields, however short: 431, and the connection closed.
    let mut many = TcpStream::connect(&addr).unwrap();
    let fields: String = (0..101).map(|i| format!("X-{i}: a\r\n")).collect();
    let _ = many.write_all(format!("GET /metrics HTTP/1.1\r\n{fields}\r\n").as_bytes());
    let mut answer = String::new();
    many.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = many.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer:?}");
    // 1,500 half-sent requests: more than the file limit allows at once. The descriptors are
    // sampled all along, not once at the end: an accept loop that runs ahead of the closes
    // of the oldest passes the cap in the burst and is back under it a moment later.
    let sampled = MostDescriptors::start(w.child.id());
    let mut half: Vec<TcpStream> = Vec::new();
    for _ in 0..1500 {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
            half.push(s);
        }
    }
    // A scrape still answers, and the descriptors stay under the limit: the connections'
    // 960 (1,024 less the 64 kept back) and one waiting for the oldest to go, with room to
    // spare for the database, the log and `--state`.
    let started = Instant::now();
    let (status, body) = w.get("/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // The sockets of the connections closed last are let go after the scrape's answer.
    std::thread::sleep(Duration::from_millis(200));
    let most = sampled.finish();
    assert!(
        most <= 1024 - 32,
        "{most} descriptors open at the most, expected at most {}",
        1024 - 32
    );
    drop(half);
    // A header trickled a byte every 5 seconds is closed once 30 seconds have passed.
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 256];
    let closed = loop {
        if slow.write_all(b"X").is_err() {
            break start.elapsed();
        }
        match slow.read(&mut buf) {
            Ok(0) => break start.elapsed(),
            Ok(_) => break start.elapsed(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break start.elapsed(),
        }
        assert!(start.elapsed() < Duration::from_secs(60), "still open after 60 s");
        std::thread::sleep(Duration::from_secs(5));
    };
    assert!(closed >= Duration::from_secs(25), "closed after {closed:?}");
}

#[test]
fn a_job_stamped_in_the_future_hides_none_of_the_jobs_after_it() {
    let Some(mut db) = pg::lookout_db("watch_future") else {
        return;
    };
    let lines = week();
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    w.health(200);
    // One job ends "20 minutes from now" (a skewed ingester's clock)…
    lookout_rows::load_ended(&mut db.client, &(lines[0].clone() + "\n"), "", Some("-20 minutes"));
    w.until("the job from the future", |m| m.jobs() == 1.0);
    // … and 10 jobs end after it, in real time: every one is counted.
    crate::watch::arrive(&mut db.client, &lines[1..11], "0s");
    w.until("the 10 jobs after it", |m| m.jobs() == 11.0);
}

#[test]
fn a_state_is_one_watchs_own_and_only_a_state_is_read() {
    let home = temp_home();
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let state = state_file(home.path());
    let first = Watch::start(home.path(), &dead, &state, &["--poll", "1h"]);
    // A second watch on the same --state: refused at the start.
    let out = crate::watch::command_for(home.path(), &dead, &state, &["--poll", "1h"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lock = home.path().join(".watch.json.lock");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: `--state` `{}` is in use: another retryctl watch holds it (its lock `{}`, waited for 2 seconds)\n\nhint: stop the other watch, or give this one a --state of its own\n",
            state.display(),
            lock.display()
        )
    );
    drop(first);
    // A FIFO: refused at once, without opening it (which would block).
    let fifo = home.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let started = Instant::now();
    let out = crate::watch::command_for(home.path(), &dead, &fifo, &[])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: `--state` `{}` is not a regular file (a FIFO): watch keeps its state in a file of its own\n",
            fifo.display()
        )
    );
    // Bytes that are not a state: exit 3, and the file is left as it was.
    let junk = home.path().join("junk.json");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    std::fs::write(&junk, &bytes).unwrap();
    let out = crate::watch::command_for(home.path(), &dead, &junk, &[])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&junk).unwrap(), bytes);
    // A link planted at a temporary name of the state's is never written through.
    let victim = home.path().join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    let state2 = home.path().join("s2.json");
    std::os::unix::fs::symlink(&victim, home.path().join(".s2.json.tmp")).unwrap();
    let w = Watch::start(home.path(), &dead, &state2, &["--poll", "1h"]);
    let (code, _, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    assert!(std::fs::read_to_string(&state2)
        .unwrap()
        .contains("retryctl watch state"));
}

/// A restart right after a kill starts (docs/watch.md "Exit status"): a watch finds its
/// `--state` locked by the one before until the kernel has closed that one's files, and waits
/// up to 2 seconds for the lock before it refuses. Started at once after `kill -9` of the one
/// before (a supervisor's tight loop), it starts; started while the test itself holds the lock
/// and lets it go a second later, it starts too.
#[test]
fn a_restart_right_after_a_kill_starts() {
    use std::os::fd::AsRawFd;
    let home = temp_home();
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let state = state_file(home.path());
    for _ in 0..3 {
        let mut first = Watch::start(home.path(), &dead, &state, &["--poll", "1h"]);
        // SAFETY: kill on a child of this process, not yet reaped.
        assert_eq!(unsafe { libc::kill(first.child.id() as i32, libc::SIGKILL) }, 0);
        let mut second = Watch::start(home.path(), &dead, &state, &["--poll", "1h"]);
        assert!(second.child.try_wait().unwrap().is_none(), "{}", second.log());
        let _ = first.child.wait();
        let (code, _, log) = second.signal("TERM");
        assert_eq!(code, Some(0), "{log}");
    }
    // The lock held by another process for a second: waited for.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(home.path().join(".watch.json.lock"))
        .unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
        0
    );
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        drop(lock);
    });
    let w = Watch::start(home.path(), &dead, &state, &["--poll", "1h"]);
    release.join().unwrap();
    let (code, _, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");
}

/// A database that accepts connections and then answers nothing (no reset), and the number of
/// connections it has accepted.
fn black_hole() -> (String, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (held, count) = (stop.clone(), accepted.clone());
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for s in listener.incoming() {
            if held.load(Ordering::Relaxed) {
                break;
            }
            if let Ok(s) = s {
                count.fetch_add(1, Ordering::SeqCst);
                open.push(s);
            }
        }
    });
    (
        format!("postgresql://lookout@127.0.0.1:{}/lookout", addr.port()),
        stop,
        accepted,
    )
}

#[test]
fn a_database_that_answers_nothing_makes_healthz_503() {
    let home = temp_home();
    let (dsn, _stop, _) = black_hole();
    let state = state_file(home.path());
    let started = Instant::now();
    // A `--timeout` of 3 s, not the default 30 s: the same path, a tenth of the wait.
    let mut w = Watch::start(home.path(), &dsn, &state, &["--poll", "2s", "--timeout", "3s"]);
    let body = w.health(503);
    // 3 polls failed in a row within 3 × (--poll + --timeout), and room for a loaded
    // machine (the default's 30 s, once).
    assert!(
        started.elapsed() <= 3 * Duration::from_secs(2 + 3) + Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(
        body.starts_with("waiting for the first poll") || body.contains("polls failed in a row"),
        "{body}"
    );
    w.until("3 failed polls", |m| {
        m.sum("retryctl_watch_poll_errors_total", &["reason=\"connect\""]) >= 3.0
    });
    assert!(w.log().contains("answered nothing within 3s"), "{}", w.log());
}

/// `/report` replays the window with a connection of its own to Lookout. Clients that ask and
/// leave (a scraper's timeout, or the server closing the oldest connection) must not each start
/// one more: one replay at a time, whoever is still waiting for it.
#[test]
fn reports_asked_for_and_left_start_one_replay_at_a_time() {
    let home = temp_home();
    let (dsn, _stop, accepted) = black_hole();
    let state = state_file(home.path());
    // The poller's one connection (its first poll hangs for `--timeout`, the next is an hour
    // away), then the reports'.
    let w = Watch::start(home.path(), &dsn, &state, &["--poll", "1h", "--timeout", "60s"]);
    let addr = w.url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while accepted.load(Ordering::SeqCst) < 1 {
        assert!(
            Instant::now() < deadline,
            "the first poll never reached the database:\n{}",
            w.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..20 {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(b"GET /report HTTP/1.1\r\nHost: watch\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        drop(s);
    }
    // Room for the last report to reach the database.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "connections to the database: the poller's and one report's expected\n{}",
        w.log()
    );
    // The server still answers, the replay in flight notwithstanding.
    let (status, _) = w.get("/metrics");
    assert_eq!(status, 200);
}

#[test]
fn watch_refuses_at_the_start_what_no_poll_can_fix() {
    let home = temp_home();
    let run = |dsn: &str, extra: &[&str]| {
        let out = retryctl(home.path())
            .env("LOOKOUT_DB", dsn)
            .args(["watch", "--baseline", CURRENT, "--state"])
            .arg(home.path().join("s.json"))
            .args(extra)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let dead = "postgresql://lookout@127.0.0.1:1/lookout";
    let (code, err) = run(dead, &["--listen", "256.0.0.1:80"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("error: invalid `--listen` address `256.0.0.1:80`: not an address to listen on ("),
        "{err}"
    );
    let (code, err) = run("postgresql://lookout:s3cret@127.0.0.1:notaport/lookout", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("error: invalid `--lookout-db` `"), "{err}");
    assert!(!err.contains("s3cret"), "{err}");
    assert!(!Path::new(&home.path().join("s.json")).exists());
}

/// Loads the week's first 5 jobs (ended 3 minutes ago) and a copy of the first whose id ends
/// with `suffix` (a SQL literal) that ends after them (2 minutes ago), `copy` (SQL `SET`
/// items, or none) set in the copy's own row and `run` (a SQL `SET` item) in the second's
/// one run. The first's and the second's ids, and the second's run's.
fn five_and_a_copy(db: &mut pg::Db, suffix: &str, copy: &str, run: &str) -> (String, String, String) {
    let lines = week();
    crate::watch::arrive(&mut db.client, &lines[..5], "3 minutes");
    let id = |n: usize| {
        let doc: serde_json::Value = serde_json::from_str(&lines[n]).unwrap();
        doc["job"]["id"].as_str().unwrap().to_string()
    };
    let (first, second) = (id(0), id(1));
    db.client
        .batch_execute(&format!(
            "CREATE TEMP TABLE j AS SELECT * FROM job WHERE job_id = '{first}'; \
             CREATE TEMP TABLE r AS SELECT * FROM job_run WHERE job_id = '{first}'; \
             UPDATE j SET job_id = job_id || {suffix}, \
             last_transition_time = (now() AT TIME ZONE 'UTC') - interval '2 minutes'{copy}; \
             UPDATE r SET job_id = job_id || {suffix}, run_id = 'f' || substr(run_id, 2); \
             INSERT INTO job SELECT * FROM j; INSERT INTO job_run SELECT * FROM r; \
             UPDATE job_run SET {run} WHERE job_id = '{second}'"
        ))
        .unwrap();
    let runs = db
        .client
        .query("SELECT run_id FROM job_run WHERE job_id = $1", &[&second])
        .unwrap();
    assert_eq!(runs.len(), 1, "the second job has one run");
    (first, second, runs[0].get(0))
}

/// Bytes that are not UTF-8 in Lookout's text columns (a `SQL_ASCII` database) make that row
/// unreadable, as an `infinity` time does (docs/lookout.md): a job whose `job_id` holds ESC
/// and 0xFF, the last of the jobs ended, is left out, and so is the one run of a job whose
/// `node` does not decode (that job then waits `--settle` for a run and is counted as its
/// record stands). Each row is said once on the log in `history`'s words and counted once in
/// `retryctl_watch_unreadable_rows_total`, however many polls read it again (its span, or the
/// job waiting); every poll succeeds, and the cursor goes on past the id's exact bytes: the
/// jobs that end after it are counted. The counters are those of the same rows made
/// unreadable by an `infinity` time in a UTF-8 database.
#[test]
fn a_row_whose_text_is_not_utf8_is_left_out_counted_once_and_the_jobs_after_it_are_counted() {
    let Some(mut db) = pg::lookout_db_encoded("watch_bytes", "SQL_ASCII") else {
        return;
    };
    let Some(mut plain) = pg::lookout_db("watch_bytes_plain") else {
        return;
    };
    let lines = week();
    let (first, second, run) = five_and_a_copy(&mut db, r"E'\x1b\xff'", "", r"node = E'node-36\xfe'");
    five_and_a_copy(
        &mut plain,
        "'-copy'",
        ", submitted = 'infinity'",
        "finished = 'infinity'",
    );
    crate::watch::arrive(&mut plain.client, &lines[5..10], "1 minute");
    let unreadable = |m: &crate::watch::Metrics| m.sum("retryctl_watch_unreadable_rows_total", &[]);
    let polls = |m: &crate::watch::Metrics| m.sum("retryctl_watch_last_poll_success_timestamp_seconds", &[]);
    let settle = ["--settle", "2s"];
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &settle);
    // The second job counted once it waited `--settle`, as its record stands (no run to
    // replay: not among the jobs); 2 rows left out (the copy's, the second's run), not one
    // more for each poll that read the waiting job again.
    let incomplete = |m: &crate::watch::Metrics| m.sum("retryctl_watch_incomplete_jobs_total", &[]);
    let m = w.until("the second job counted", |m| incomplete(m) == 1.0);
    assert_eq!((m.jobs(), unreadable(&m)), (4.0, 2.0), "{}", m.text);
    // Three more polls over the same span (read again for 5 minutes): nothing is counted or
    // said twice, at any scrape.
    let seen = polls(&m);
    w.until("three more polls", |m| {
        assert_eq!((m.jobs(), incomplete(m), unreadable(m)), (4.0, 1.0, 2.0), "{}", m.text);
        polls(m) > seen + 0.8
    });
    // Jobs that end after it: the cursor, at its bytes, goes on past them.
    crate::watch::arrive(&mut db.client, &lines[5..10], "1 minute");
    let m = w.until("the 5 jobs after it", |m| m.jobs() == 9.0);
    assert_eq!(unreadable(&m), 2.0, "{}", m.text);
    assert_eq!(m.sum("retryctl_watch_poll_errors_total", &[]), 0.0, "{}", m.text);
    w.health(200);
    // Counted as the same rows left out for an `infinity` time are.
    let home_plain = temp_home();
    let mut reference = Watch::start(home_plain.path(), &plain.dsn, &state_file(home_plain.path()), &settle);
    let expected = reference.until("the 9 jobs and the second", |m| m.jobs() == 9.0 && incomplete(m) == 1.0);
    assert_eq!(m.counted(), expected.counted());
    let log = w.log();
    let said: Vec<&str> = log.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(
        said,
        [
            format!("warning: job `{first}\\x1b\\xff`: column job_id: not UTF-8 (byte 27); job left out"),
            format!("warning: job `{second}` run `{run}`: column node: not UTF-8 (byte 7); run left out"),
        ],
        "{log}"
    );
}

/// A watched queue's name is anyone's text: on the start-up line, a line break in it is
/// shown escaped, not the start of a line of its own.
#[test]
fn a_queue_name_with_a_line_break_is_shown_escaped_on_the_start_up_line() {
    let Some(db) = pg::lookout_db("watch_queue_name") else {
        return;
    };
    let home = temp_home();
    let w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &["--queue", "we\nird"]);
    let log = w.log();
    let line = log
        .lines()
        .find(|l| l.starts_with("retryctl watch: listening on"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("(queues we\\x0aird;"), "{log}");
}
