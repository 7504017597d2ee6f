//! `retryctl watch` as a process (docs/watch.md), against a real PostgreSQL built from
//! Lookout's migrations (support/pg.rs), rows inserted while it runs: each job counted once,
//! through a SIGKILL and a restart too; the counters over a window are `simulate
//! --baseline --lookout-db`'s numbers over the same jobs; a database stopped and started again
//! is survived and `/healthz` follows; `/metrics` passes `promtool check metrics`, the
//! PrometheusRule passes `promtool check rules` and its own rule tests, every metric an alert or
//! a panel names is one watch exports; a real Prometheus scrapes it; `--emit kubernetes`
//! prints deploy/watch/deployment.yaml.
//!
//! The week is testdata/route/week.jsonl (1,174 jobs of queue `ml`, every one with a run),
//! today's policy testdata/route/current/ and the candidate testdata/route/suggested.yaml, each
//! with its categorizer: the README's route. Nothing here hangs: every wait has a limit, and
//! each child starts with SIGTERM and SIGINT at their default action and no signal blocked,
//! whatever the test runner's own dispositions.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::pg::{self, OwnCluster};
use crate::support::{format_output, lookout_rows, retryctl, root, temp_home, Missing};

pub(crate) const WEEK: &str = "testdata/route/week.jsonl";
pub(crate) const CURRENT: &str = "testdata/route/current";
pub(crate) const CANDIDATE: &str = "testdata/route/suggested.yaml";

/// The flags of every watch here but `--state`, the DSN and `--poll` (300ms unless a test
/// gives its own): an address of its own, the week in reach.
const FLAGS: [&str; 8] = [
    "--baseline",
    CURRENT,
    "-f",
    CANDIDATE,
    "--listen",
    "127.0.0.1:0",
    "--since",
    "30d",
];

/// How long any one wait lasts at most.
pub(crate) const LIMIT: Duration = Duration::from_secs(90);

/// A `retryctl watch` child; its stderr collected line by line in the background.
pub(crate) struct Watch {
    pub(crate) child: Child,
    pub(crate) url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

/// Sets SIGTERM and SIGINT to their default action and unblocks every signal, in the child
/// before it runs: a runner started with them ignored (`nohup`) or blocked would make the
/// signal tests pass or hang for the runner's sake.
pub(crate) fn default_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal and sigprocmask are async-signal-safe, as pre_exec requires; the set
    // is a local initialised by sigemptyset.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
}

/// `retryctl watch` in `dir` with nothing of the environment but `HOME` and `$LOOKOUT_DB`, its
/// stderr piped and its signals at their defaults: the flags are the caller's.
pub(crate) fn bare_watch(home: &Path, dir: &Path, dsn: &str) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("retryctl"));
    cmd.current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("LOOKOUT_DB", dsn)
        .arg("watch")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    default_signals(&mut cmd);
    cmd
}

pub(crate) fn command_for(home: &Path, dsn: &str, state: &Path, extra: &[&str]) -> Command {
    let mut cmd = bare_watch(home, &root(), dsn);
    cmd.args(FLAGS)
        .arg("--state")
        .arg(state)
        .args(extra)
        .args(if extra.contains(&"--poll") {
            &[][..]
        } else {
            // The shortest poll watch takes.
            &["--poll", "1s"][..]
        });
    cmd
}

impl Watch {
    /// Starts watch on `dsn` with `--state STATE`, and waits for its start-up line.
    pub(crate) fn start(home: &Path, dsn: &str, state: &Path, extra: &[&str]) -> Watch {
        Watch::spawn(command_for(home, dsn, state, extra))
    }

    /// Starts `cmd` (a `command_for`), and waits for its start-up line.
    pub(crate) fn spawn(mut cmd: Command) -> Watch {
        let mut child = cmd.spawn().expect("retryctl watch starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (first_tx, first) = std::sync::mpsc::channel::<String>();
        let sink = lines.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // In the log before it is handed on: a test that reads the log once the
                // start-up line came finds that line there (it raced, and lost once in CI).
                sink.lock().unwrap().push(line.clone());
                let _ = first_tx.send(line);
            }
        });
        // Notes may come first (a state resumed, the scheduler's settings assumed); the
        // start-up line names the address.
        let deadline = Instant::now() + LIMIT;
        let line = loop {
            match first.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line.starts_with("note: ") || line.starts_with("scheduler: ") => continue,
                Ok(line) => break line,
                Err(_) => {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    panic!("no start-up line within {LIMIT:?}: {}", format_output(&out));
                }
            }
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("no URL in the first line: {line:?}")
            })
            .to_string();
        Watch { child, url, lines }
    }

    pub(crate) fn log(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    pub(crate) fn get(&self, path: &str) -> (u16, String) {
        get(&format!("{}{path}", self.url))
    }

    pub(crate) fn metrics(&self) -> Metrics {
        let (status, text) = self.get("/metrics");
        assert_eq!(status, 200, "{text}");
        Metrics::parse(&text)
    }

    /// Waits until `what` holds of a scrape, and returns that scrape.
    pub(crate) fn until(&mut self, what: &str, holds: impl Fn(&Metrics) -> bool) -> Metrics {
        let deadline = Instant::now() + LIMIT;
        loop {
            let m = self.metrics();
            if holds(&m) {
                return m;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("watch exited ({status}) waiting for {what}:\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {LIMIT:?}; last scrape:\n{}\nlog:\n{}",
                m.text,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `/healthz` answers `status`.
    pub(crate) fn health(&mut self, status: u16) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            let (got, body) = self.get("/healthz");
            if got == status {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "/healthz is still {got} ({body}) after {LIMIT:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends `signal` and waits for the exit: its code and how long it took.
    pub(crate) fn signal(mut self, signal: &str) -> (Option<i32>, Duration, String) {
        let sent = Instant::now();
        let st = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = sent + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("watch did not exit within 30 s of {signal}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = sent.elapsed();
        // The reader thread has the last lines once the pipe closes.
        std::thread::sleep(Duration::from_millis(100));
        (status.code(), took, self.log())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn get(url: &str) -> (u16, String) {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let r = client.get(url).send().unwrap_or_else(|e| panic!("GET {url}: {e}"));
    (r.status().as_u16(), r.text().unwrap())
}

/// A scrape: every series (`name{labels}` as written) and its value, and the text.
pub(crate) struct Metrics {
    pub(crate) series: BTreeMap<String, f64>,
    pub(crate) text: String,
}

impl Metrics {
    pub(crate) fn parse(text: &str) -> Metrics {
        let series = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("a sample: {l:?}"));
                (k.to_string(), v.parse().unwrap_or_else(|_| panic!("a number: {l:?}")))
            })
            .collect();
        Metrics {
            series,
            text: text.to_string(),
        }
    }

    /// The sum of the family's series whose labels include every `labels` (`k="v"`).
    pub(crate) fn sum(&self, family: &str, labels: &[&str]) -> f64 {
        self.series
            .iter()
            .filter(|(k, _)| k == &family || k.starts_with(&format!("{family}{{")))
            .filter(|(k, _)| labels.iter().all(|l| k.contains(l)))
            .map(|(_, v)| v)
            .sum()
    }

    /// The counters alone (not the gauges, not the poll errors, which differ by how the
    /// process ran), for comparing two watches.
    pub(crate) fn counted(&self) -> BTreeMap<String, f64> {
        self.series
            .iter()
            .filter(|(k, _)| k.contains("_total") && !k.contains("poll_errors"))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    pub(crate) fn jobs(&self) -> f64 {
        self.sum("retryctl_watch_jobs_total", &[])
    }
}

/// The week's lines.
pub(crate) fn week() -> Vec<String> {
    std::fs::read_to_string(root().join(WEEK))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Loads `lines` as Lookout's rows, their jobs reaching their terminal state `ago` before the
/// database's now (as Lookout's ingester stamps a job it just heard of), in one transaction: a
/// poll never sees them with the time the rows were first written with.
pub(crate) fn arrive(client: &mut postgres::Client, lines: &[String], ago: &str) {
    lookout_rows::load_ended(client, &(lines.join("\n") + "\n"), "", Some(ago));
}

pub(crate) fn state_file(home: &Path) -> PathBuf {
    home.join("watch.json")
}

#[test]
fn rows_inserted_while_watch_runs_are_counted_once() {
    let Some(mut db) = pg::lookout_db("watch_live") else {
        return;
    };
    let home = temp_home();
    let state = state_file(home.path());
    let mut w = Watch::start(home.path(), &db.dsn, &state, &[]);
    w.health(200);
    assert_eq!(w.metrics().jobs(), 0.0);
    let lines = week();
    arrive(&mut db.client, &lines[..300], "0s");
    w.until("300 jobs", |m| m.jobs() == 300.0);
    arrive(&mut db.client, &lines[300..600], "0s");
    w.until("600 jobs", |m| m.jobs() == 600.0);
    // Ingested late: a job whose last transition is 2 minutes before the cursor is read by the
    // next poll (the span read again); one 10 minutes before it is not (docs/watch.md).
    arrive(&mut db.client, &lines[600..601], "2 minutes");
    arrive(&mut db.client, &lines[601..602], "10 minutes");
    w.until("the late job", |m| m.jobs() == 601.0);
    // Polls go on, over the same rows: nothing is counted again.
    let polls = |m: &Metrics| m.sum("retryctl_watch_last_poll_success_timestamp_seconds", &[]);
    let seen = polls(&w.metrics());
    w.until("three more polls", |m| polls(m) > seen + 0.8);
    let before = w.metrics();
    assert_eq!(before.jobs(), 601.0, "{}", before.text);
    let (code, took, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
    assert!(
        log.contains("retryctl watch: SIGTERM: stopped; the counters and cursor are saved in"),
        "{log}"
    );
    // Restarted on its state: the counters go on from where they were, none counted twice.
    let mut w = Watch::start(home.path(), &db.dsn, &state, &[]);
    w.health(200);
    let polls_then = polls(&w.metrics());
    let after = w.until("a poll after the restart", |m| polls(m) > polls_then);
    assert_eq!(after.counted(), before.counted());
    arrive(&mut db.client, &lines[602..610], "0s");
    w.until("8 more jobs", |m| m.jobs() == 609.0);
    let (code, took, log) = w.signal("INT");
    assert_eq!(code, Some(0), "{log}");
    assert!(took < Duration::from_secs(5), "SIGINT took {took:?}");
}

#[test]
fn a_sigkill_between_polls_and_a_restart_count_nothing_twice() {
    let Some(mut db) = pg::lookout_db("watch_kill") else {
        return;
    };
    let home = temp_home();
    let state = state_file(home.path());
    let lines = week();
    let mut w = Watch::start(home.path(), &db.dsn, &state, &[]);
    arrive(&mut db.client, &lines[..400], "0s");
    w.until("400 jobs", |m| m.jobs() == 400.0);
    let (code, _, _) = w.signal("KILL");
    assert_eq!(code, None, "killed by the signal");
    arrive(&mut db.client, &lines[400..800], "0s");
    let mut w = Watch::start(home.path(), &db.dsn, &state, &[]);
    let resumed = w.until("800 jobs", |m| m.jobs() == 800.0);
    // Killed again in the middle of its work, at once after a start: still consistent.
    let (code, _, _) = w.signal("KILL");
    assert_eq!(code, None);
    let mut w = Watch::start(home.path(), &db.dsn, &state, &[]);
    w.health(200);
    let again = w.until("a poll", |m| m.jobs() == 800.0);
    // One watch of a fresh state over the same rows counts the same, number for number.
    let fresh_home = temp_home();
    let mut fresh = Watch::start(fresh_home.path(), &db.dsn, &state_file(fresh_home.path()), &[]);
    let once = fresh.until("800 jobs", |m| m.jobs() == 800.0);
    assert_eq!(resumed.counted(), once.counted());
    assert_eq!(again.counted(), once.counted());
}

/// `simulate ARGS -o json --lookout-db DSN --queue ml --since 30d`'s record.
pub(crate) fn simulate(home: &Path, dsn: &str, args: &[&str]) -> Value {
    let out = retryctl(home)
        .arg("simulate")
        .args(args)
        .args(["-o", "json", "--lookout-db", dsn, "--queue", "ml", "--since", "30d"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_counters_over_a_window_are_simulate_baselines_numbers() {
    let Some(mut db) = pg::lookout_db("watch_window") else {
        return;
    };
    let lines = week();
    // As Lookout holds them: each job's last transition at its submission (lookout_rows).
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let home = temp_home();
    // Two candidates, each compared with today's policy as `simulate --baseline` compares it:
    // the README's proposal, and the same with one retry.
    let one = home.path().join("one-retry.yaml");
    let text = std::fs::read_to_string(root().join(CANDIDATE)).unwrap();
    std::fs::write(&one, text.replace("retryLimit: 3", "retryLimit: 1")).unwrap();
    let one = one.to_str().unwrap().to_string();
    // `/report`'s window covers the week too (the last transitions are its submissions).
    let mut w = Watch::start(
        home.path(),
        &db.dsn,
        &state_file(home.path()),
        &["-f", &one, "--window", "30d"],
    );
    let m = w.until("the week", |m| m.jobs() == lines.len() as f64);
    let n = |v: &Value| v.as_f64().unwrap();
    for (file, name) in [(CANDIDATE, "suggested.yaml"), (one.as_str(), "one-retry.yaml")] {
        let plan = simulate(home.path(), &db.dsn, &["-f", file, "--baseline", CURRENT]);
        let c = &plan["comparison"];
        let candidate = format!("candidate=\"{name}\"");
        let shadow = |change: &str| {
            m.sum(
                "retryctl_watch_shadow_jobs_total",
                &[&candidate, &format!("change=\"{change}\"")],
            )
        };
        assert_eq!(shadow("rescued"), n(&c["transitions"]["rescued"]), "{name}");
        assert_eq!(shadow("lost"), n(&c["transitions"]["lost"]), "{name}");
        assert_eq!(shadow("pending"), n(&c["transitions"]["toPending"]), "{name}");
        assert_eq!(
            shadow("retried_differently"),
            n(&c["transitions"]["other"]) + n(&c["transitions"]["retriesOnly"]),
            "{name}"
        );
        assert_eq!(shadow("same"), n(&c["unchanged"]), "{name}");
        assert_eq!(m.jobs(), n(&c["jobs"]));
        // The week has changes of every sign, so that the equalities above are not of zeros.
        assert!(n(&c["changed"]) > 0.0 && shadow("same") > 0.0, "{c}");
        let gpu = |direction: &str| {
            m.sum(
                "retryctl_watch_shadow_gpu_seconds_total",
                &[&candidate, &format!("direction=\"{direction}\"")],
            )
        };
        // What the candidate does not start is saved, or left out of a job it loses.
        for (seconds, hours) in [
            (gpu("saved") + gpu("lost"), &c["compute"]["gpuHours"]["removed"]),
            (gpu("added"), &c["compute"]["gpuHours"]["added"]),
        ] {
            let hours = n(hours);
            assert!(
                (seconds / 3600.0 - hours).abs() <= 1e-9 * hours.max(1.0),
                "{name}: {seconds} s against {hours} h"
            );
        }
        assert!(gpu("saved") > 0.0, "{}", m.text);
    }
    todays_side_is_simulates(home.path(), &db.dsn, &m, &lines);
    the_verdict_and_the_report(home.path(), &db.dsn, &mut w, &m);
}

/// Today's side of the window's counters: `simulate` of today's policy alone, with its
/// categorizer, and the outcomes as the rows were written.
fn todays_side_is_simulates(home: &Path, dsn: &str, m: &Metrics, lines: &[String]) {
    let n = |v: &Value| v.as_f64().unwrap();
    let today = simulate(home, dsn, &["-f", CURRENT]);
    let s = &today["summary"];
    let by_rule: BTreeMap<String, f64> = s["retriesByRule"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), n(v)))
        .collect();
    let watched: BTreeMap<String, f64> = m
        .series
        .iter()
        .filter_map(|(k, v)| {
            let rule = k.strip_prefix("retryctl_watch_retries_total{queue=\"ml\",rule=\"")?;
            Some((rule.trim_end_matches("\"}").to_string(), *v))
        })
        .collect();
    assert_eq!(watched, by_rule);
    assert_eq!(
        m.sum("retryctl_watch_contradictions_total", &[]),
        n(&s["contradictedJobs"])
    );
    // The futile retries are those of the jobs today's policy fails: at most its retries.
    let futile = m.sum("retryctl_watch_futile_retries_total", &[]);
    assert!(
        futile > 0.0 && futile < n(&s["retries"]),
        "{futile} of {}",
        s["retries"]
    );
    // The recorded outcomes: each job's last run, as the rows were written.
    let mut outcomes = BTreeMap::<&str, f64>::new();
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap();
        let last = v["runs"].as_array().unwrap().last().unwrap()["outcome"].clone();
        *outcomes
            .entry(match last.as_str() {
                Some("succeeded") => "succeeded",
                Some("cancelled") => "cancelled",
                _ => "failed",
            })
            .or_default() += 1.0;
    }
    for (outcome, jobs) in outcomes {
        assert_eq!(
            m.sum("retryctl_watch_jobs_total", &[&format!("outcome=\"{outcome}\"")]),
            jobs,
            "{outcome}"
        );
    }
}

/// Each candidate's verdict over the window, and `/report`: simulate's page of the same plan.
fn the_verdict_and_the_report(home: &Path, dsn: &str, w: &mut Watch, m: &Metrics) {
    // Each candidate's verdict over the window, as suggest judges it: the README's proposal
    // in suggest's own words and numbers on the same week.
    let verdict = |name: &str, v: &str| {
        m.sum(
            "retryctl_watch_shadow_verdict",
            &[&format!("candidate=\"{name}\""), &format!("verdict=\"{v}\"")],
        )
    };
    assert_eq!(verdict("suggested.yaml", "adopt"), 1.0, "{}", m.text);
    assert_eq!(
        verdict("suggested.yaml", "reject") + verdict("suggested.yaml", "keep"),
        0.0
    );
    // /report is simulate's page of the same plan, headed by the verdict.
    let (status, page) = w.get("/report");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<p class=\"sub\"><strong>Verdict over the last 30d: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −570; GPU-hours -6.2</strong></p>"),
        "{page}"
    );
    let out = retryctl(home)
        .args([
            "simulate",
            "-f",
            CANDIDATE,
            "--baseline",
            CURRENT,
            "--lookout-db",
            dsn,
            "--queue",
            "ml",
        ])
        .args(["--since", "30d", "-o", "html"])
        .output()
        .unwrap();
    let simulated = String::from_utf8(out.stdout).unwrap();
    let sentence = |page: &str| {
        let at = page.find("Plan: ").unwrap_or_else(|| panic!("no plan in {page}"));
        page[at..at + page[at..].find('<').unwrap()].to_string()
    };
    assert_eq!(sentence(&page), sentence(&simulated));
    let (status, body) = w.get("/report?candidate=nope");
    assert_eq!(
        (status, body.as_str()),
        (404, "no candidate `nope` (watched: suggested.yaml, one-retry.yaml)\n")
    );
    // The text format as Prometheus' own tool reads it.
    promtool_check_metrics(&m.text);
}

/// `promtool` (Debian's `prometheus` package), or `None` after naming the test as skipped.
fn promtool() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/bin/promtool");
    if p.is_file() {
        return Some(p);
    }
    Missing {
        what: "promtool not found (/usr/bin/promtool)".into(),
        install: "apt-get install -y prometheus".into(),
    }
    .skip();
    None
}

pub(crate) fn promtool_check_metrics(text: &str) {
    let Some(promtool) = promtool() else { return };
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}\n{text}",
        format_output(&out)
    );
    // It lints too: any finding is printed, and none is expected.
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{}",
        format_output(&out)
    );
}

/// More jobs than a page (5,000): the week five times over, each copy's ids its own. The next
/// page's keys are read while a page replays; every job is counted once, as `simulate
/// --baseline` counts the same jobs.
#[test]
fn jobs_past_the_first_page_are_counted_once_as_simulate_counts_them() {
    let Some(mut db) = pg::lookout_db("watch_pages") else {
        return;
    };
    let lines: Vec<String> = (0..5)
        .flat_map(|k| {
            week().into_iter().map(move |l| {
                let mut v: Value = serde_json::from_str(&l).unwrap();
                let id = format!("{}{k}", v["job"]["id"].as_str().unwrap());
                v["job"]["id"] = Value::String(id);
                v.to_string()
            })
        })
        .collect();
    assert!(lines.len() > 5000, "{}", lines.len());
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &["--window", "30d"]);
    let m = w.until("every copy of the week", |m| m.jobs() == lines.len() as f64);
    let plan = simulate(home.path(), &db.dsn, &["-f", CANDIDATE, "--baseline", CURRENT]);
    let c = &plan["comparison"];
    let shadow = |change: &str| m.sum("retryctl_watch_shadow_jobs_total", &[&format!("change=\"{change}\"")]);
    let n = |v: &Value| v.as_f64().unwrap();
    assert_eq!(m.jobs(), n(&c["jobs"]));
    assert_eq!(shadow("rescued"), n(&c["transitions"]["rescued"]));
    assert_eq!(shadow("lost"), n(&c["transitions"]["lost"]));
    assert_eq!(shadow("same"), n(&c["unchanged"]));
    // Polls go on over the same rows: nothing is counted again.
    let polls = |m: &Metrics| m.sum("retryctl_watch_last_poll_success_timestamp_seconds", &[]);
    let seen = polls(&w.metrics());
    let later = w.until("another poll", |m| polls(m) > seen);
    assert_eq!(later.counted(), m.counted());
}

/// The rule groups of deploy/watch/rules.yaml, and the PrometheusRule's `spec`.
fn rule_groups() -> (serde_yaml::Value, serde_yaml::Value) {
    let read = |f: &str| -> serde_yaml::Value {
        serde_yaml::from_str(&std::fs::read_to_string(root().join(f)).unwrap()).unwrap()
    };
    (
        read("deploy/watch/rules.yaml"),
        read("deploy/watch/prometheusrule.yaml")["spec"].clone(),
    )
}

/// docs/watch.md's promtool lines, run as printed from the repository's root: the plain rule
/// file checks, and its tests (a case for every alert, watch gone included) pass.
#[test]
fn the_alerts_pass_promtool_and_their_own_rule_tests_as_the_guide_prints_them() {
    let (plain, operator) = rule_groups();
    assert_eq!(
        plain, operator,
        "deploy/watch/rules.yaml and prometheusrule.yaml's spec differ"
    );
    let guide = std::fs::read_to_string(root().join("docs/watch.md")).unwrap();
    for line in [
        "promtool check rules deploy/watch/rules.yaml",
        "promtool test rules deploy/watch/rules_test.yaml",
    ] {
        assert!(guide.contains(line), "docs/watch.md lacks `{line}`");
    }
    let Some(promtool) = promtool() else { return };
    let out = Command::new(&promtool)
        .args(["check", "rules", "deploy/watch/rules.yaml"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", format_output(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("SUCCESS: 8 rules found"),
        "{}",
        format_output(&out)
    );
    let out = Command::new(&promtool)
        .args(["test", "rules", "deploy/watch/rules_test.yaml"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", format_output(&out));
    // Every alert has a case of its own.
    let tests = std::fs::read_to_string(root().join("deploy/watch/rules_test.yaml")).unwrap();
    for group in plain["groups"].as_sequence().unwrap() {
        for r in group["rules"].as_sequence().unwrap() {
            let alert = r["alert"].as_str().unwrap();
            assert!(
                tests.contains(&format!("alertname: {alert}\n")),
                "no promtool case for `{alert}`"
            );
        }
    }
}

/// Every `retryctl_watch_…` name in `text`.
fn names_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("retryctl_watch_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

#[test]
fn every_metric_an_alert_or_a_panel_names_is_one_watch_exports() {
    // No database: the first scrape names every family all the same.
    let home = temp_home();
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let w = Watch::start(home.path(), &dead, &state_file(home.path()), &[]);
    let (_, text) = w.get("/metrics");
    let exported: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(exported.len(), 22, "{text}");
    let (rule, _) = rule_groups();
    let mut named = Vec::new();
    let mut alerts = Vec::new();
    for group in rule["groups"].as_sequence().unwrap() {
        for r in group["rules"].as_sequence().unwrap() {
            alerts.push(r["alert"].as_str().unwrap().to_string());
            named.extend(names_in(r["expr"].as_str().unwrap()));
        }
    }
    // A burst or a surge pages nobody: no alert reads the busy gauge.
    assert!(
        !named.iter().any(|n| n == "retryctl_watch_busy_active"),
        "an alert reads retryctl_watch_busy_active"
    );
    // docs/watch.md quotes each alert's PromQL as the file holds it.
    let guide = std::fs::read_to_string(root().join("docs/watch.md")).unwrap();
    for group in rule["groups"].as_sequence().unwrap() {
        for r in group["rules"].as_sequence().unwrap() {
            let expr = r["expr"].as_str().unwrap();
            assert!(
                guide.contains(&format!("  expr: {expr}\n")),
                "docs/watch.md lacks `{expr}`"
            );
        }
    }
    assert_eq!(
        alerts,
        [
            "RetryctlFutileRetryGPUHoursHigh",
            "RetryctlShadowCandidateLosesJobs",
            "RetryctlShadowVerdictReject",
            "RetryctlBaselineContradicted",
            "RetryctlWatchLateJobs",
            "RetryctlWatchNotPolling",
            "RetryctlIncidentActive",
            "RetryctlWatchDown",
        ]
    );
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("deploy/watch/dashboard.json")).unwrap()).unwrap();
    let mut panels = 0;
    for p in dashboard["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            panels += 1;
            named.extend(names_in(t["expr"].as_str().unwrap()));
        }
    }
    for v in dashboard["templating"]["list"].as_array().unwrap() {
        named.extend(names_in(&v["query"].to_string()));
    }
    assert!(panels >= 10, "{panels} targets");
    for name in &named {
        // A name is the family or one of the series a histogram would add: only families here.
        assert!(
            exported.contains(&name.as_str()),
            "`{name}` is named by an alert or a panel, and watch does not export it"
        );
    }
    // Every family is on the dashboard.
    for family in &exported {
        assert!(named.iter().any(|n| n == family), "no panel or alert shows `{family}`");
    }
}

/// The dashboard shows the futile GPU-hours by signature beside the panel by category (a
/// registry outage told from a new NCCL bug), no panel lies over another (Grafana would
/// push one down, and every row after it out of place), and no two share an id.
#[test]
fn the_dashboard_shows_futile_gpu_hours_by_signature_beside_by_category_and_no_panel_overlaps() {
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("deploy/watch/dashboard.json")).unwrap()).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    let titled = |title: &str| {
        panels
            .iter()
            .find(|p| p["title"] == title)
            .unwrap_or_else(|| panic!("no panel `{title}`"))
    };
    let category = titled("Futile retries: GPU-hours per day, by category");
    let signature = titled("Futile retries: GPU-hours per day, by signature");
    assert_eq!(
        signature["targets"][0]["expr"],
        "sum by (signature) (increase(retryctl_watch_futile_retry_gpu_seconds_total{queue=~\"$queue\"}[1d])) / 3600"
    );
    assert_eq!(signature["targets"][0]["legendFormat"], "{{signature}}");
    let (c, s) = (&category["gridPos"], &signature["gridPos"]);
    assert_eq!(
        (s["y"].as_u64(), s["x"].as_u64()),
        (
            c["y"].as_u64(),
            Some(c["x"].as_u64().unwrap() + c["w"].as_u64().unwrap())
        ),
        "not side by side: {c} {s}"
    );
    let area = |p: &Value| {
        let g = &p["gridPos"];
        let n = |k: &str| g[k].as_u64().unwrap();
        (n("x"), n("y"), n("x") + n("w"), n("y") + n("h"))
    };
    for (i, a) in panels.iter().enumerate() {
        for b in &panels[i + 1..] {
            let (ax0, ay0, ax1, ay1) = area(a);
            let (bx0, by0, bx1, by1) = area(b);
            assert!(
                ax1 <= bx0 || bx1 <= ax0 || ay1 <= by0 || by1 <= ay0,
                "`{}` and `{}` overlap",
                a["title"],
                b["title"]
            );
            // Grafana keys a panel's links, its edits and its place by its id.
            assert_ne!(a["id"], b["id"], "`{}` and `{}` share an id", a["title"], b["title"]);
        }
    }
}

#[test]
fn a_database_stopped_and_started_again_is_survived() {
    let Some(cluster) = OwnCluster::start() else { return };
    let home = temp_home();
    let lines = week();
    cluster.down();
    let mut w = Watch::start(home.path(), &cluster.dsn, &state_file(home.path()), &[]);
    // No poll has succeeded yet.
    let body = w.health(503);
    assert_eq!(body, "waiting for the first poll of Lookout to succeed\n");
    cluster.up();
    w.health(200);
    let mut client = cluster.client();
    arrive(&mut client, &lines[..50], "0s");
    w.until("50 jobs", |m| m.jobs() == 50.0);
    cluster.down();
    // Three failed polls in a row: 503, the errors counted, the process still there.
    let body = w.health(503);
    assert!(body.starts_with("3 polls failed in a row; the last: "), "{body}");
    let m = w.until("the failed polls counted", |m| {
        m.sum("retryctl_watch_poll_errors_total", &["reason=\"connect\""])
            + m.sum("retryctl_watch_poll_errors_total", &["reason=\"read\""])
            >= 3.0
    });
    assert_eq!(m.jobs(), 50.0);
    assert!(w.child.try_wait().unwrap().is_none(), "watch exited:\n{}", w.log());
    assert!(w.log().contains("retryctl watch: poll failed ("), "{}", w.log());
    cluster.up();
    let mut client = cluster.client();
    arrive(&mut client, &lines[50..100], "0s");
    w.until("100 jobs", |m| m.jobs() == 100.0);
    w.health(200);
    let (code, took, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
}

#[test]
fn sigterm_saves_and_exits_while_the_database_hangs_up() {
    // The database gone mid-run: the poller waits between tries; SIGTERM does not wait for it.
    let home = temp_home();
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let state = state_file(home.path());
    let mut w = Watch::start(home.path(), &dead, &state, &["--poll", "1h"]);
    w.until("the first poll's failure", |m| {
        m.sum("retryctl_watch_poll_errors_total", &["reason=\"connect\""]) == 1.0
    });
    let (code, took, log) = w.signal("TERM");
    assert_eq!(code, Some(0), "{log}");
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(saved["kind"], "retryctl watch state");
    assert!(
        saved["counters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["metric"] == "retryctl_watch_poll_errors_total"
                && c["labels"]["reason"] == "connect"
                && c["value"] == "1"),
        "{saved}"
    );
}

#[test]
fn prometheus_scrapes_watch_and_answers_its_counter() {
    let Some(mut db) = pg::lookout_db("watch_prom") else {
        return;
    };
    let home = temp_home();
    let lines = week();
    arrive(&mut db.client, &lines[..120], "0s");
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &[]);
    w.until("120 jobs", |m| m.jobs() == 120.0);
    let Some(prometheus) = Prometheus::start(w.url.trim_start_matches("http://")) else {
        return;
    };
    let deadline = Instant::now() + LIMIT;
    let answer = loop {
        if let Some(value) = prometheus.query("sum(retryctl_watch_jobs_total)") {
            break value;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus answered no sample within {LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(answer, 120.0);
}

/// A Prometheus scraping `target` every second, killed on drop.
pub(crate) struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    pub(crate) fn start(target: &str) -> Option<Prometheus> {
        let prometheus = Path::new("/usr/bin/prometheus");
        if !prometheus.is_file() {
            Missing {
                what: "Prometheus not found (/usr/bin/prometheus)".into(),
                install: "apt-get install -y prometheus".into(),
            }
            .skip();
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: retryctl-watch\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = pg::free_port();
        let mut cmd = Command::new(prometheus);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        default_signals(&mut cmd);
        Some(Prometheus {
            child: cmd.spawn().unwrap(),
            port,
            _dir: dir,
        })
    }

    /// The value of `query` (an instant query), when Prometheus answers one.
    pub(crate) fn query(&self, query: &str) -> Option<f64> {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let r = reqwest::blocking::Client::new()
            .get(url)
            .query(&[("query", query)])
            .timeout(Duration::from_secs(5))
            .send()
            .ok()?;
        let v: Value = r.json().ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

#[test]
fn emit_kubernetes_prints_the_deployment_of_deploy_watch() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "watch",
            "--baseline",
            "/data/current",
            "-f",
            "/data/suggested.yaml",
            "--state",
            "/data/watch.json",
        ])
        .args([
            "--listen",
            "0.0.0.0:9464",
            "--emit",
            "kubernetes",
            "--image",
            "ghcr.io/armadaproject/retryctl:0.1.0",
        ])
        .args([
            "--volume",
            "retryctl-watch:/data",
            "--dsn-secret",
            "lookout-db",
            "--namespace",
            "armada",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let file = std::fs::read_to_string(root().join("deploy/watch/deployment.yaml")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), file);
    // The Service and the ServiceMonitor select its pod and its port by the names it gives them.
    let deployment: serde_yaml::Value = serde_yaml::from_str(&file).unwrap();
    let pod = &deployment["spec"]["template"];
    let label = &pod["metadata"]["labels"]["app.kubernetes.io/name"];
    let port = &pod["spec"]["containers"][0]["ports"][0];
    for other in ["service.yaml", "servicemonitor.yaml"] {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(root().join("deploy/watch").join(other)).unwrap()).unwrap();
        let selected = match other {
            "service.yaml" => &doc["spec"]["selector"]["app.kubernetes.io/name"],
            _ => &doc["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
        };
        assert_eq!(selected, label, "{other}");
    }
    let service: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root().join("deploy/watch/service.yaml")).unwrap()).unwrap();
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port["name"]);
    assert_eq!(service["spec"]["ports"][0]["port"], port["containerPort"]);
}

#[test]
fn watch_refuses_what_it_cannot_watch() {
    let home = temp_home();
    let dir = home.path();
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let policy = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n";
    for f in ["a/p.yaml", "b/p.yaml"] {
        std::fs::write(dir.join(f), policy).unwrap();
    }
    let run = |args: &[&str]| {
        let out = retryctl(dir)
            .env("LOOKOUT_DB", "postgresql://lookout@127.0.0.1:1/lookout")
            .arg("watch")
            .args(args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let state = dir.join("s.json");
    let state = state.to_str().unwrap();
    let a = dir.join("a");
    let a = a.to_str().unwrap();
    let b = dir.join("b/p.yaml");
    let b = b.to_str().unwrap();
    assert_eq!(
        run(&["--baseline", a, "--state", state]),
        (
            Some(2),
            "error: no queue to watch: the files hold no Queue document; give `--queue QUEUE` (repeatable)\n".into()
        )
    );
    let a_p = dir.join("a/p.yaml");
    assert_eq!(
        run(&["--baseline", a, "-f", a_p.to_str().unwrap(), "-f", b, "--state", state]),
        (
            Some(2),
            "error: two candidates are named `p.yaml` (each `-f` is labelled by its file's base name): give them files of different names\n".into()
        )
    );
    assert_eq!(
        run(&["--baseline", a, "--state", state, "--queue", "q", "--poll", "0s"]),
        (
            Some(2),
            "error: invalid `--poll` `0s`: expected a duration of at least `1s` such as `30s` or `1m`\n".into()
        )
    );
    std::fs::write(dir.join("s.json"), "{\"kind\": \"something else\"}").unwrap();
    let (code, err) = run(&["--baseline", a, "--state", state, "--queue", "q"]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(
        err,
        format!("error: `--state` `{state}` cannot be read: not a watch state (no `\"kind\": \"retryctl watch state\"`)\n\nhint: move it away to start counting afresh\n")
    );
    // Lookout given nowhere.
    let out = retryctl(dir)
        .args(["watch", "--baseline", a, "--state", state, "--queue", "q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("error: give Lookout's database: `--lookout-db DSN`\n"),
        "{}",
        format_output(&out)
    );
}

/// A page's rows are read by its span of Lookout's index (`last_transition_time`, `job_id`),
/// in that order, and only the jobs its keys named: a job inside the span that the page does
/// not name (here every other one; in a poll, one that reached its terminal state after the
/// keys were read, or one counted before) is left out of the page's stream.
#[test]
fn a_page_reads_its_span_and_only_the_jobs_its_keys_named() {
    use retryctl::lookout::db::connect;
    use retryctl::lookout::terminal::{jobs_in, terminal_page, Span};
    use retryctl::lookout::Item;
    let Some(mut db) = pg::lookout_db("watch_span") else {
        return;
    };
    lookout_rows::load(&mut db, &(week().join("\n") + "\n"), "");
    let conn = Arc::new(connect(&db.dsn, Duration::from_secs(10)).unwrap());
    let queues = vec!["ml".to_string(), "batch".to_string()];
    let keys = terminal_page(&conn, &queues, (0, ""), 40).unwrap();
    assert_eq!(keys.len(), 40);
    let last = keys.last().unwrap();
    let span = Span {
        after: (0, ""),
        last: (last.at, &last.job_id),
    };
    let named: Vec<String> = keys.iter().step_by(2).map(|k| k.job_id.clone()).collect();
    let mut read: Vec<String> = Vec::new();
    for item in jobs_in(conn.clone(), &queues, span, named.iter().cloned().collect()) {
        let id = match item.unwrap() {
            Item::Job(j) => j.job.job_id,
            Item::Bad(e) => e.job_id,
        };
        if read.last() != Some(&id) {
            read.push(id);
        }
    }
    assert_eq!(read, named);
}

/// watch's start-up log says which scheduler settings it assumed for today's Armada (the
/// route's documents are v1beta1: the upstream engine), first, before the line naming its
/// address; given `--scheduler-config`, nothing is assumed and nothing said.
#[test]
fn the_start_up_log_says_the_scheduler_settings_it_assumed() {
    let home = temp_home();
    let dead = format!("postgresql://lookout@127.0.0.1:{}/lookout", pg::free_port());
    let w = Watch::start(home.path(), &dead, &state_file(home.path()), &[]);
    // Every line before the start-up line is in the log by the time `start` returns.
    let log = w.log();
    assert_eq!(log.lines().next(), Some(crate::engines::SHIPPED), "{log}");
    drop(w);
    let given = Watch::start(
        home.path(),
        &dead,
        &home.path().join("other.json"),
        &crate::support::UPSTREAM_SCHEDULER,
    );
    let log = given.log();
    assert!(!log.contains("scheduler:"), "{log}");
}
