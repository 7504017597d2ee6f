//! `simulate --from-server`: the job's queue and its policies come from a real
//! `retryctl serve`, and the decisions are the same as from the files.

use crate::support::server::TestServer;
use crate::support::{exchange, format_output, retryctl, temp_home};

const HISTORY: &str = "testdata/histories/design-composition.yaml";
const FILES: [&str; 3] = [
    "testdata/policies/valid/infra.yaml",
    "testdata/policies/valid/ml-training-oom.yaml",
    "testdata/policies/valid/ml-queue.yaml",
];

/// `retryctl create -f FILE...` against `server`; fails the test unless it succeeds.
fn create(server: &TestServer, home: &std::path::Path, files: &[&str]) {
    let mut cmd = retryctl(home);
    cmd.env("ARMADA_URL", &server.url).arg("create");
    for f in files {
        cmd.args(["-f", f]);
    }
    let created = exchange(&mut cmd);
    assert!(created.starts_with("exit: 0\n"), "{created}");
}

#[test]
fn from_server_decides_exactly_as_from_files() {
    let server = TestServer::start();
    let home = temp_home();
    create(&server, home.path(), &FILES);

    let mut from_files = retryctl(home.path());
    from_files.args(["simulate", "--history", HISTORY, "-o", "json"]);
    for f in FILES {
        from_files.args(["-f", f]);
    }
    let from_files = from_files.output().unwrap();
    let from_server = retryctl(home.path())
        .env("ARMADA_URL", &server.url)
        .args(["simulate", "--from-server", "--history", HISTORY, "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(from_server.status.code(), Some(0), "{}", format_output(&from_server));
    assert_eq!(from_files.status.code(), Some(0), "{}", format_output(&from_files));
    assert!(!from_server.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&from_server.stdout),
        String::from_utf8_lossy(&from_files.stdout)
    );
}

#[test]
fn from_server_refuses_a_queue_the_server_does_not_have() {
    let server = TestServer::start();
    let home = temp_home();
    // The policies exist, the queue does not: no falling back to every policy on the server.
    create(&server, home.path(), &FILES[..2]);
    let out = exchange(retryctl(home.path()).env("ARMADA_URL", &server.url).args([
        "simulate",
        "--from-server",
        "--history",
        HISTORY,
    ]));
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains("queue `ml-queue` (the job's `queue`) does not exist on the server"),
        "{out}"
    );
}

#[test]
fn from_server_uses_retry_policy_for_a_job_without_a_known_queue() {
    let server = TestServer::start();
    let home = temp_home();
    create(&server, home.path(), &FILES[..2]);
    let out = exchange(retryctl(home.path()).env("ARMADA_URL", &server.url).args([
        "simulate",
        "--from-server",
        "--retry-policy",
        "infra,ml-training-oom",
        "--history",
        HISTORY,
    ]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert!(out.contains("policies:  infra, ml-training-oom"), "{out}");
}

#[test]
fn from_server_with_files_is_a_usage_error() {
    let home = temp_home();
    let out = exchange(retryctl(home.path()).args(["simulate", "--from-server", "-f", FILES[0], "--history", HISTORY]));
    assert_eq!(
        out,
        "exit: 2\n--- stdout\n--- stderr\nerror: `--from-server` reads the policies and queues from the server; do not also pass `-f`\n"
    );
}

#[test]
fn from_server_with_the_server_down_exits_4() {
    let home = temp_home();
    let out = exchange(retryctl(home.path()).env("ARMADA_URL", "http://127.0.0.1:9").args([
        "--timeout",
        "2s",
        "simulate",
        "--from-server",
        "--history",
        HISTORY,
    ]));
    assert!(out.starts_with("exit: 4\n"), "{out}");
    assert!(out.contains("http://127.0.0.1:9"), "{out}");
}
