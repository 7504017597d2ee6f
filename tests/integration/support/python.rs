//! Upstream's own Python client (PyPI `armada-client==0.5.1`: `armada_client.armada.submit_pb2`,
//! `submit_pb2_grpc`) for the tests that need a real peer or bytes written by upstream's
//! generated classes.
//!
//! The interpreter is `$RETRYCTL_TEST_PYTHON`, else `target/test-venv/bin/python3`, the
//! virtualenv `.ci/run` makes (`scripts/test-venv.sh`). When neither has the package the tests
//! print a loud SKIP and return, except under `CI=true`, where a missing client is a broken
//! set-up and fails the test.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The Python interpreter with `armada_client` importable, or `None` (after the SKIP notice).
pub fn python() -> Option<PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND.get_or_init(find).clone()
}

fn find() -> Option<PathBuf> {
    let candidate = std::env::var_os("RETRYCTL_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::root().join("target/test-venv/bin/python3"));
    let works = Command::new(&candidate)
        .args(["-c", "import armada_client.armada.submit_pb2_grpc"])
        .output()
        .is_ok_and(|o| o.status.success());
    if works {
        return Some(candidate);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} cannot import armada_client under CI=true: .ci/run should have made the venv (scripts/test-venv.sh)",
        candidate.display()
    );
    eprintln!(
        "\n!!!!!!!! SKIP: upstream's Python client not found ({} cannot import armada_client); \
         the tests against Armada's own client did NOT run. Make the venv: \
         `scripts/test-venv.sh` (.ci/run does). !!!!!!!!\n",
        candidate.display()
    );
    None
}

/// Runs `script` (Python source) with `python`, `args` after it; its stdout, or a panic with
/// everything it printed when it fails.
pub fn run(python: &std::path::Path, script: &str, args: &[&str]) -> String {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python failed: {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The in-memory Armada test double (`armada_double.py`: upstream's generated servicers) on
/// 127.0.0.1; stopped when dropped (its stdin closes, and it is killed).
pub struct Double {
    child: std::process::Child,
    pub port: u16,
}

impl Double {
    pub fn start(python: &std::path::Path, args: &[&str]) -> Double {
        use std::io::BufRead;
        use std::process::Stdio;
        let mut child = Command::new(python)
            .arg(super::root().join("tests/integration/support/armada_double.py"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the double starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the double did not say its port: {line:?}"));
        Double { child, port }
    }
}

impl Drop for Double {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
