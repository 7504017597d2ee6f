//! Concurrency against the real server: the existence checks and the writes are one
//! transaction, so racing requests can neither both create a name nor leave a queue
//! referencing a deleted policy. Assertions are on outcomes, never on timing.

use std::sync::{Arc, Barrier};

use crate::serve::call;
use retryctl::server::{Config, Location};

use crate::support::server::TestServer;

#[test]
fn thirty_two_racing_creates_of_one_name_give_one_200_and_31_409() {
    let s = TestServer::start();
    let url = format!("{}/v1/retry-policy", s.url);
    let barrier = Arc::new(Barrier::new(32));
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                let body = format!(r#"{{"name":"same","retryLimit":{i},"defaultAction":"Fail"}}"#);
                barrier.wait();
                call("POST", &url, Some(&body)).0
            })
        })
        .collect();
    let mut statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    statuses.sort();
    let mut expected = vec![200];
    expected.extend([409; 31]);
    assert_eq!(statuses, expected);
    let (status, body) = call("GET", &format!("{}/v1/retry-policies", s.url), None);
    assert_eq!(status, 200);
    assert_eq!(body.matches("\"name\":\"same\"").count(), 1, "{body}");
}

/// A deterministic pseudo-random sequence per thread (no `rand` dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn attach_detach_delete_storm_never_leaves_a_dangling_reference() {
    storm(TestServer::start());
}

/// The same storm on a database file (WAL, background checkpoints), then the file itself
/// is checked: no join row names a missing policy, and integrity_check is `ok`.
#[test]
fn attach_detach_delete_storm_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("armada.db");
    let s = TestServer::start_config(Config::new("127.0.0.1:0", Location::File(db.clone())));
    storm(s); // dropped inside: graceful shutdown closes the database
    let conn = rusqlite::Connection::open(&db).unwrap();
    let dangling: i64 = conn
        .query_row(
            "SELECT count(*) FROM queue_retry_policy WHERE policy_name NOT IN (SELECT name FROM retry_policy)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dangling, 0);
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

fn storm(s: TestServer) {
    const THREADS: u64 = 10;
    const OPS_PER_THREAD: u64 = 50; // 500 operations in all
    let policies = ["p0", "p1", "p2", "p3", "p4"];
    let queues = ["q0", "q1", "q2", "q3"];
    let base = s.url.clone();
    for p in policies {
        let body = format!(r#"{{"name":"{p}","defaultAction":"Retry"}}"#);
        assert_eq!(call("POST", &format!("{base}/v1/retry-policy"), Some(&body)).0, 200);
    }
    let barrier = Arc::new(Barrier::new(THREADS as usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (base, barrier) = (base.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut rng = Lcg(t + 1);
                let mut statuses = Vec::new();
                barrier.wait();
                for _ in 0..OPS_PER_THREAD {
                    let q = queues[rng.next(queues.len() as u64) as usize];
                    let p = policies[rng.next(policies.len() as u64) as usize];
                    let (op, status) = match rng.next(4) {
                        0 => {
                            // attach: two distinct policies, in either order
                            let other = policies
                                [(rng.next(4) as usize + 1 + policies.iter().position(|x| *x == p).unwrap()) % 5];
                            let body = format!(r#"{{"priorityFactor":1,"retryPolicies":["{p}","{other}"]}}"#);
                            ("attach", call("PUT", &format!("{base}/v1/queue/{q}"), Some(&body)).0)
                        }
                        1 => {
                            let body = r#"{"priorityFactor":1}"#;
                            ("detach", call("PUT", &format!("{base}/v1/queue/{q}"), Some(body)).0)
                        }
                        2 => ("delete", call("DELETE", &format!("{base}/v1/retry-policy/{p}"), None).0),
                        _ => {
                            let body = format!(r#"{{"name":"{p}","defaultAction":"Retry"}}"#);
                            (
                                "create",
                                call("POST", &format!("{base}/v1/retry-policy"), Some(&body)).0,
                            )
                        }
                    };
                    statuses.push((op, status));
                }
                statuses
            })
        })
        .collect();
    let all: Vec<(&str, u16)> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(all.len(), 500);
    for (op, status) in &all {
        let allowed: &[u16] = match *op {
            "attach" => &[200, 400], // 400: a policy was deleted
            "detach" => &[200],
            "delete" => &[200, 400, 404], // 400: still attached; 404: already gone
            _ => &[200, 409],
        };
        assert!(allowed.contains(status), "{op} answered {status}");
    }
    // Every attachment that exists names an existing policy.
    let (status, stream) = call("GET", &format!("{base}/v1/batched/queues"), None);
    assert_eq!(status, 200);
    for line in stream.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(queue) = v["result"]["Event"].get("queue") else {
            continue;
        };
        for p in queue["retryPolicies"].as_array().into_iter().flatten() {
            let p = p.as_str().unwrap();
            assert_eq!(
                call("GET", &format!("{base}/v1/retry-policy/{p}"), None).0,
                200,
                "queue {} references deleted policy {p}",
                queue["name"]
            );
        }
    }
}

/// A client that never finishes its request cannot keep the server from stopping: after the
/// grace period the server closes the database and returns.
#[test]
fn a_stuck_client_does_not_block_shutdown_past_the_grace_period() {
    use std::io::Write;
    let mut config = Config::new("127.0.0.1:0", Location::InMemory);
    config.shutdown_grace = std::time::Duration::from_millis(200);
    let s = TestServer::start_config(config);
    let addr = s.url.trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    // Headers promise a body that never comes.
    write!(
        conn,
        "POST /v1/retry-policy HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 100\r\n\r\n{{"
    )
    .unwrap();
    conn.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100)); // the request is in flight
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(s); // graceful shutdown, then the grace period
        let _ = done_tx.send(());
    });
    // A liveness bound (150× the grace period), not a performance assertion.
    assert!(
        done_rx.recv_timeout(std::time::Duration::from_secs(30)).is_ok(),
        "the server is still waiting for the stuck request"
    );
    drop(conn);
}

/// docs/serve.md: idle sockets (opened, nothing sent) are closed after the idle timeout, and at
/// the connection cap a new client waits only until one of them is, not forever.
#[test]
fn idle_sockets_at_the_cap_lock_nobody_out_for_long() {
    use std::io::Read;
    let mut config = retryctl::server::Config::new("127.0.0.1:0", retryctl::server::Location::InMemory);
    config.idle_timeout = std::time::Duration::from_millis(500);
    config.max_connections = Some(4);
    let s = TestServer::start_config(config);
    let addr = s.url.trim_start_matches("http://").to_string();
    let mut idle: Vec<std::net::TcpStream> = (0..8).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
    // Without the idle timeout this request would wait behind the idle sockets until the
    // client's own timeout: its answering at all is the check.
    let resp = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .unwrap()
        .get(format!("{}/health", s.url))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // The first idle socket was closed by the server: EOF (or a reset), not a hang.
    idle[0]
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 16];
    match idle[0].read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the idle socket is still open: {other:?}"),
    }
}

/// docs/serve.md: the real process under `ulimit -n 1024`, 1,100 sockets opened
/// against it and left silent (more than its file limit allows it to hold), then a new
/// client's `/health` still answers: the connection cap keeps the server below its limit (its
/// descriptors are counted) and the idle timeout frees the held sockets (so this test takes
/// about one idle timeout).
#[test]
fn eleven_hundred_idle_sockets_under_ulimit_1024_lock_nobody_out() {
    // The test itself needs more than 1,100 descriptors: raise its soft limit to the hard one.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct they are given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        if lim.rlim_cur < 4096 && lim.rlim_max > lim.rlim_cur {
            lim.rlim_cur = lim.rlim_max.min(65_536);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 1024 && exec "$0" serve --listen "127.0.0.1:$1" --in-memory 2>/dev/null"#)
        .arg(assert_cmd::cargo::cargo_bin("retryctl"))
        .arg(port.to_string())
        .env_clear()
        .env("HOME", home.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Kill(child);
    let addr = format!("127.0.0.1:{port}");
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(started.elapsed().as_secs() < 20, "serve did not come up");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let count = || std::fs::read_dir(format!("/proc/{}/fd", child.0.id())).unwrap().count();
    let base = count();
    // Opened in batches that the server is given time to accept: a burst overflows the
    // kernel's listen queue, and a connection dropped there (after a SYN cookie told the
    // client it was connected) is one the server never sees, so the cap would not be reached.
    let mut idle = Vec::with_capacity(1_100);
    for i in 0..1_100 {
        idle.push(std::net::TcpStream::connect(&addr).unwrap_or_else(|e| panic!("socket {i}: {e}")));
        if (i + 1) % 50 == 0 {
            let want = (base + i + 1 - 10).min(base + 900);
            let waited = std::time::Instant::now();
            while count() < want && waited.elapsed() < std::time::Duration::from_secs(2) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
    // The cap holds the server below its file limit (without it, accept would run into
    // EMFILE at 1,024): its descriptors, polled briefly, well within the idle timeout (10 s)
    // after which it starts closing them.
    let mut most = 0;
    for _ in 0..10 {
        most = most.max(count());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        (900..1_000).contains(&most),
        "the server held at most {most} descriptors"
    );
    // A liveness bound far above the idle timeout (10 s), not a performance assertion.
    let resp = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap()
        .get(format!("http://{addr}/health"))
        .send()
        .expect("/health answers after the idle sockets time out");
    assert_eq!(resp.status().as_u16(), 200);
    assert!(child.0.try_wait().unwrap().is_none(), "the server is still running");
    drop(idle);
}
