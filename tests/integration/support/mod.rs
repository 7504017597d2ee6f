//! Shared test helpers: a `retryctl` command with a scrubbed environment, and a formatter
//! that turns a whole exchange (exit code, stdout, stderr) into one snapshot string.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

#[cfg(unix)]
pub mod child;
pub mod chromium;
pub mod console;
pub mod executor_formats;
pub mod json_schema;
pub mod lookout_rows;
pub mod pg;
pub mod png;
pub mod python;
pub mod server;
pub mod shell;

/// The repository root (where Cargo.toml is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `retryctl` run from the repository root with a temporary HOME, no config, no colour and
/// none of the variables that would change its behaviour.
pub fn retryctl(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("retryctl").expect("binary built");
    cmd.current_dir(root())
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1");
    cmd
}

/// `--scheduler-config` with today's Armada's settings written out
/// (testdata/scheduler/upstream-enabled.yaml, a path from the repository root): for an
/// upstream replay whose subject is not what a replay assumes without a scheduler config
/// (docs/engines.md "The scheduler's settings"), which it then does not say on stderr.
pub const UPSTREAM_SCHEDULER: [&str; 2] = ["--scheduler-config", "testdata/scheduler/upstream-enabled.yaml"];

/// Runs and formats `exit: N`, stdout and stderr for a snapshot.
pub fn exchange(cmd: &mut Command) -> String {
    let output = cmd.output().expect("runs");
    format_output(&output)
}

pub fn format_output(output: &std::process::Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().map_or("signal".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A port on 127.0.0.1 that nothing listens on and that no server of the tests can take: one
/// below the kernel's range of ports given to a bind of port 0 (where every server the tests
/// start gets its port). A port bound and released at random in that range was given, at
/// times, to a server of a test running alongside before the command under test connected.
pub fn closed_port() -> u16 {
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    (1024..ephemeral)
        .rev()
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a closed port below the ephemeral range")
}

pub fn temp_home() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// The target directory the tests were built in (`$CARGO_TARGET_DIR`, else `target/`):
/// what the tests make once and keep (the Python virtualenv) lives there.
pub fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// A part of the tests' set-up this machine lacks and the tests cannot provide themselves
/// (it needs root): what is missing and why, and the command that installs it.
#[derive(Debug, Clone)]
pub struct Missing {
    /// "PostgreSQL not found (no `initdb` on PATH …)".
    pub what: String,
    /// The command that installs it.
    pub install: String,
}

impl Missing {
    /// The test that asked goes without (its caller returns early): recorded, and named at
    /// the end of the test binary's run on stderr, one line per missing part. Under
    /// `CI=true` a missing part is a broken set-up instead (`.ci/run` installs each): the
    /// test fails.
    pub fn skip(&self) {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} under CI=true; `.ci/run` installs it (`{}`)",
            self.what,
            self.install
        );
        skipped::record(self);
    }
}

/// The tests skipped for a missing part, announced where a person sees them: libtest
/// captures what a test prints with `print!`/`eprint!` (shown only when it fails), not what
/// is written to the process's stderr directly, and this is written at the process's exit
/// (after libtest's summary), once per missing part, naming every test it skipped.
mod skipped {
    use std::collections::BTreeMap;
    use std::io::Write;
    use std::sync::{Mutex, Once};

    /// Per missing part (its words and install command), the tests that went without.
    static SKIPPED: Mutex<BTreeMap<(String, String), Vec<String>>> = Mutex::new(BTreeMap::new());
    static AT_EXIT: Once = Once::new();

    pub fn record(missing: &super::Missing) {
        // libtest runs each test on a thread named after it.
        let test = match std::thread::current().name() {
            Some(name) if name != "main" => name.to_string(),
            _ => "(a test on the main thread)".to_string(),
        };
        SKIPPED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((missing.what.clone(), missing.install.clone()))
            .or_default()
            .push(test);
        // SAFETY: registers a plain function with the C library, called once at exit.
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(announce);
        });
    }

    extern "C" fn announce() {
        let skipped = std::mem::take(&mut *SKIPPED.lock().unwrap_or_else(|p| p.into_inner()));
        let mut text = String::new();
        for ((what, install), mut tests) in skipped {
            tests.sort();
            tests.dedup();
            text.push_str(&lines(&what, &install, &tests));
        }
        // Not `eprint!`: libtest would capture it. Nothing to do if stderr is gone.
        let _ = std::io::stderr().write_all(text.as_bytes());
    }

    /// The announcement of one missing part.
    pub fn lines(what: &str, install: &str, tests: &[String]) -> String {
        format!(
            "!!!!!!!! SKIPPED {} {}: {what}; install it: `{install}`; did NOT run: {}\n",
            tests.len(),
            if tests.len() == 1 { "test" } else { "tests" },
            tests.join(", ")
        )
    }
}
pub mod stub;

/// One user against one server: the CLI binary with its own empty home and `ARMADA_URL`
/// set, as the CRUD and kubectl-habit tests run it.
pub struct Session {
    pub home: tempfile::TempDir,
    pub url: String,
}

impl Session {
    pub fn new(url: &str) -> Session {
        Session {
            home: temp_home(),
            url: url.to_string(),
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = retryctl(self.home.path());
        c.env("ARMADA_URL", &self.url);
        c
    }

    /// Runs and returns the exchange with the server URL replaced by `URL`.
    pub fn run(&self, args: &[&str]) -> String {
        exchange(self.cmd().args(args)).replace(&self.url, "URL")
    }

    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> String {
        exchange(self.cmd().args(args).write_stdin(stdin)).replace(&self.url, "URL")
    }

    /// Stdout of a command that must succeed.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    }
}

/// The `*.yaml` files of a testdata directory, sorted: the histories a table test replays.
pub fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("yaml"))
        .collect();
    files.sort();
    files
}

/// A what-if in `dir`: `old/` and `new/` each hold one policy (`old`, `new`) and `queue`,
/// and `h.jsonl` the history, for `simulate -f new --baseline old --history h.jsonl`.
pub fn write_what_if(dir: &Path, old: &str, new: &str, queue: &str, history: &str) {
    for (sub, policy) in [("old", old), ("new", new)] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("p.yaml"), policy).unwrap();
        std::fs::write(dir.join(sub).join("q.yaml"), queue).unwrap();
    }
    std::fs::write(dir.join("h.jsonl"), history).unwrap();
}

/// `comparison.changedJobs` of `simulate --baseline -o json` as (job, baseline final,
/// baseline retries, candidate final, candidate retries).
pub fn changed_jobs(v: &serde_json::Value) -> Vec<(String, String, u64, String, u64)> {
    v["comparison"]["changedJobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["job"].as_str().unwrap().to_string(),
                j["baseline"]["final"].as_str().unwrap().to_string(),
                j["baseline"]["retries"].as_u64().unwrap(),
                j["candidate"]["final"].as_str().unwrap().to_string(),
                j["candidate"]["retries"].as_u64().unwrap(),
            )
        })
        .collect()
}
