//! No lost updates (docs/reference/wire.md): concurrent `retryctl` processes editing one queue on a real
//! `retryctl serve` process (a file database), and the ETag / If-Match wire contract.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::serve::{call, err};
use crate::support::server::TestServer;
use crate::support::temp_home;

/// A `retryctl serve` child on a free port with a database file; its request log goes to a
/// file so that an unread pipe can never stall it.
struct ServeProc {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl ServeProc {
    fn start() -> ServeProc {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serve.log");
        let child = Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(dir.path().join("armada.db"))
            .env_clear()
            .env("HOME", dir.path())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn retryctl serve");
        let started = Instant::now();
        let url = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if let Some(url) = text
                .lines()
                .next()
                .and_then(|l| l.split_whitespace().find(|w| w.starts_with("http://")))
            {
                break url.to_string();
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "serve did not start: {text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        ServeProc { child, url, dir }
    }
}

impl Drop for ServeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `retryctl ARGS` against `url`, as a child process (not waited for).
fn spawn_cli(url: &str, home: &Path, args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .args(args)
        .env_clear()
        .env("HOME", home)
        .env("ARMADA_URL", url)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn retryctl")
}

/// Waits; returns (exit code, stdout, stderr).
fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn queue_json(url: &str, name: &str) -> serde_json::Value {
    let (status, body) = call("GET", &format!("{url}/v1/queue/{name}"), None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn attached(url: &str, name: &str) -> Vec<String> {
    let q = queue_json(url, name);
    q["retryPolicies"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn create_policies(url: &str, names: &[String]) {
    for n in names {
        let body = format!(r#"{{"name":"{n}","retryLimit":1,"defaultAction":"Fail"}}"#);
        assert_eq!(call("POST", &format!("{url}/v1/retry-policy"), Some(&body)).0, 200);
    }
}

/// Eight CI jobs add eight different policies to one
/// queue at the same moment; the queue ends with all eight and every job exits 0.
#[test]
fn eight_concurrent_additions_all_land_and_all_exit_0() {
    let server = ServeProc::start();
    let home = temp_home();
    let names: Vec<String> = (1..=8).map(|i| format!("p{i}")).collect();
    create_policies(&server.url, &names);
    assert_eq!(
        call(
            "POST",
            &format!("{}/v1/queue", server.url),
            Some(r#"{"name":"q","priorityFactor":1}"#)
        )
        .0,
        200
    );
    let children: Vec<Child> = names
        .iter()
        .map(|n| {
            spawn_cli(
                &server.url,
                home.path(),
                &["update", "queue", "q", "--add-retry-policy", n],
            )
        })
        .collect();
    for (n, child) in names.iter().zip(children) {
        let (code, stdout, stderr) = finish(child);
        assert_eq!(
            (code, stdout.as_str()),
            (0, "queue/q configured\n"),
            "adding {n}: {stderr}"
        );
    }
    let mut got = attached(&server.url, "q");
    got.sort();
    assert_eq!(got, names);
}

/// Four writers × 50 rounds on one queue: three add and remove their own policy in turn
/// (each also adds a policy it never removes), the fourth sets `--priority-factor` each
/// round while the others change the list. After every command its own change must be on
/// the server (nobody else touches it), every command exits 0, and at the end every
/// never-removed policy and the last priority factor are there.
#[test]
fn four_writers_fifty_rounds_lose_nothing() {
    const ROUNDS: usize = 50;
    let server = ServeProc::start();
    let url = server.url.clone();
    let mut names: Vec<String> = (0..3).map(|i| format!("w{i}")).collect();
    names.extend((0..4).map(|i| format!("s{i}")));
    create_policies(&url, &names);
    assert_eq!(
        call(
            "POST",
            &format!("{url}/v1/queue"),
            Some(r#"{"name":"q","priorityFactor":1}"#)
        )
        .0,
        200
    );
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let url = url.clone();
            std::thread::spawn(move || {
                let home = temp_home();
                let mut failures = Vec::new();
                for r in 0..ROUNDS {
                    let own = format!("w{w}");
                    let sticky = format!("s{w}");
                    let factor = format!("{}", r + 2);
                    let mut args: Vec<&str> = vec!["update", "queue", "q"];
                    if w == 3 {
                        args.extend(["--priority-factor", &factor]);
                    } else if r % 2 == 0 {
                        args.extend(["--add-retry-policy", &own]);
                    } else {
                        args.extend(["--remove-retry-policy", &own]);
                    }
                    if r == 0 {
                        args.extend(["--add-retry-policy", &sticky]);
                    }
                    let (code, stdout, stderr) = finish(spawn_cli(&url, home.path(), &args));
                    if (code, stdout.as_str()) != (0, "queue/q configured\n") {
                        failures.push(format!("writer {w} round {r}: exit {code}: {stdout}{stderr}"));
                        continue;
                    }
                    let q = queue_json(&url, "q");
                    let list: Vec<&str> = q["retryPolicies"]
                        .as_array()
                        .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
                        .unwrap_or_default();
                    let ok = if w == 3 {
                        q["priorityFactor"].as_f64() == Some((r + 2) as f64)
                    } else {
                        list.contains(&own.as_str()) == (r % 2 == 0)
                    };
                    if !ok || !list.contains(&sticky.as_str()) {
                        failures.push(format!("writer {w} round {r}: change lost, server has {q}"));
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = writers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let q = queue_json(&url, "q");
    let mut list = attached(&url, "q");
    list.sort();
    // 50 rounds end on a removal for w0..w2.
    assert_eq!(list, ["s0", "s1", "s2", "s3"]);
    assert_eq!(q["priorityFactor"].as_f64(), Some((ROUNDS + 1) as f64));
}

/// `delete retrypolicy --detach` racing an addition to the same queue keeps the addition.
#[test]
fn detach_keeps_a_concurrent_addition() {
    let server = ServeProc::start();
    let home = temp_home();
    let names: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
    create_policies(&server.url, &names);
    assert_eq!(
        call(
            "POST",
            &format!("{}/v1/queue", server.url),
            Some(r#"{"name":"q","priorityFactor":1,"retryPolicies":["p0"]}"#)
        )
        .0,
        200
    );
    let mut children = vec![spawn_cli(
        &server.url,
        home.path(),
        &["delete", "retrypolicy", "p0", "--detach"],
    )];
    for n in &names[1..] {
        children.push(spawn_cli(
            &server.url,
            home.path(),
            &["update", "queue", "q", "--add-retry-policy", n],
        ));
    }
    for child in children {
        let (code, stdout, stderr) = finish(child);
        assert_eq!(code, 0, "{stdout}{stderr}");
    }
    let mut got = attached(&server.url, "q");
    got.sort();
    assert_eq!(got, ["p1", "p2", "p3", "p4", "p5"]);
    assert_eq!(call("GET", &format!("{}/v1/retry-policy/p0", server.url), None).0, 404);
}

fn send(method: &str, url: &str, body: Option<&str>, if_match: Option<&str>) -> (u16, Option<String>, String) {
    let client = reqwest::blocking::Client::new();
    let mut req = client.request(method.parse().unwrap(), url);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    if let Some(m) = if_match {
        req = req.header("if-match", m);
    }
    let resp = req.send().unwrap();
    let etag = resp.headers().get("etag").map(|v| v.to_str().unwrap().to_string());
    (resp.status().as_u16(), etag, resp.text().unwrap())
}

#[test]
fn etags_and_a_stale_if_match_is_412() {
    let s = TestServer::start();
    let p = format!("{}/v1/retry-policy", s.url);
    let policy = r#"{"name":"p","retryLimit":1,"defaultAction":"Fail"}"#;
    let policy2 = r#"{"name":"p","retryLimit":2,"defaultAction":"Fail"}"#;
    assert_eq!(
        send("POST", &p, Some(policy), None),
        (200, Some("\"1\"".into()), "{}".into())
    );
    assert_eq!(
        send("GET", &format!("{p}/p"), None, None),
        (200, Some("\"1\"".into()), policy.into())
    );
    // The list is not one resource: no ETag.
    assert_eq!(send("GET", &format!("{}/v1/retry-policies", s.url), None, None).1, None);
    assert_eq!(
        send("PUT", &format!("{p}/p"), Some(policy2), Some("\"1\"")),
        (200, Some("\"2\"".into()), "{}".into())
    );
    let stale = err(
        9,
        "retry policy \"p\" has been modified since it was read (If-Match does not match its ETag); read it again and retry",
    );
    assert_eq!(
        send("PUT", &format!("{p}/p"), Some(policy), Some("\"1\"")),
        (412, None, stale.clone())
    );
    assert_eq!(
        send("DELETE", &format!("{p}/p"), None, Some("\"1\"")),
        (412, None, stale)
    );
    assert_eq!(
        send("GET", &format!("{p}/p"), None, None),
        (200, Some("\"2\"".into()), policy2.into())
    );
    // Upstream clients send no If-Match and keep working; `*` matches any existing version.
    assert_eq!(send("PUT", &format!("{p}/p"), Some(policy), None).0, 200);
    assert_eq!(
        send("PUT", &format!("{p}/p"), Some(policy2), Some("*")),
        (200, Some("\"4\"".into()), "{}".into())
    );

    let q = format!("{}/v1/queue", s.url);
    assert_eq!(
        send("POST", &q, Some(r#"{"name":"q","priorityFactor":1}"#), None).1,
        Some("\"1\"".into())
    );
    let stale_q = err(
        9,
        "queue \"q\" has been modified since it was read (If-Match does not match its ETag); read it again and retry",
    );
    assert_eq!(
        send(
            "PUT",
            &format!("{q}/q"),
            Some(r#"{"name":"q","priorityFactor":2}"#),
            Some("\"7\"")
        ),
        (412, None, stale_q)
    );
    assert_eq!(
        send(
            "PUT",
            &format!("{q}/q"),
            Some(r#"{"name":"q","priorityFactor":2}"#),
            Some("\"1\"")
        )
        .0,
        200
    );
    assert_eq!(send("GET", &format!("{q}/q"), None, None).1, Some("\"2\"".into()));
    // A queue that does not exist matches no If-Match (PUT on a missing queue is an upsert).
    assert_eq!(
        send(
            "PUT",
            &format!("{q}/new"),
            Some(r#"{"name":"new","priorityFactor":1}"#),
            Some("\"1\"")
        )
        .0,
        412
    );
    assert_eq!(send("DELETE", &format!("{q}/q"), None, Some("\"2\"")).0, 200);
}

/// The issue's acceptance case: a browser page posting `text/plain` gets 415 and creates
/// nothing.
#[test]
fn a_text_plain_write_is_415_and_creates_nothing() {
    let s = TestServer::start();
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}/v1/retry-policy", s.url))
        .header("content-type", "text/plain")
        .body(r#"{"name":"evil","retryLimit":1}"#)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 415);
    assert_eq!(
        resp.text().unwrap(),
        err(
            3,
            "request body must be sent with `Content-Type: application/json`, got `text/plain`"
        )
    );
    assert_eq!(
        call("GET", &format!("{}/v1/retry-policies", s.url), None),
        (200, "{}".into())
    );
}

/// A raw request, so that the `Host` header is exactly what the test says.
fn raw(url: &str, request: &str) -> String {
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn anonymous_mode_refuses_a_foreign_host() {
    let s = TestServer::start();
    let get = |host: &str| {
        raw(
            &s.url,
            &format!("GET /v1/retry-policies HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
    };
    let refused = get("evil.example:8080");
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(
        refused.ends_with(&err(
            7,
            "host `evil.example:8080` is not a loopback name or address; an anonymous server answers only requests addressed to localhost (protection against DNS rebinding)"
        )),
        "{refused}"
    );
    for host in ["localhost:1", "127.0.0.1", "[::1]:8080", "LOCALHOST"] {
        assert!(get(host).starts_with("HTTP/1.1 200"), "{host}");
    }
}

#[test]
fn a_401_says_which_scheme_to_use() {
    let s = TestServer::start_with_auth(&["admin:pw"], &[]);
    let resp = reqwest::blocking::get(format!("{}/v1/retry-policies", s.url)).unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(resp.headers()["www-authenticate"], "Basic realm=\"retryctl\"");
}

/// One server per database file: a second `serve` on the same `--db` exits non-zero,
/// naming the file, and the first keeps serving.
#[test]
fn a_second_server_on_the_same_database_is_refused() {
    let first = ServeProc::start();
    let db = first.dir.path().join("armada.db");
    let out = Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .env_clear()
        .env("HOME", first.dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: the database `{}` is in use by another process (another `retryctl serve`?); one server per database file\n",
            db.display()
        )
    );
    assert_eq!(call("GET", &format!("{}/health", first.url), None), (200, "ok".into()));
}

/// A server without versions (upstream: no dialect header, no ETag) where another writer's
/// PUT lands right after ours: `--priority-factor` keeps every other writer's change.
/// Returns the stub and the queue it holds.
fn racing_upstream(
    overwrites: usize,
) -> (
    crate::support::stub::Stub,
    std::sync::Arc<std::sync::Mutex<serde_json::Value>>,
) {
    use crate::support::stub::{Reply, Stub};
    use serde_json::json;
    let state = std::sync::Arc::new(std::sync::Mutex::new(
        json!({"name":"q","priorityFactor":1,"retryPolicies":["a"]}),
    ));
    let shared = state.clone();
    let mut puts = 0;
    let stub = Stub::start(move |r| {
        let mut q = shared.lock().unwrap();
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/health") => Reply::text(200, "text/plain", "ok"),
            ("GET", "/v1/queue/q") => Reply::json(200, q.clone()),
            ("PUT", "/v1/queue/q") => {
                puts += 1;
                *q = if puts <= overwrites {
                    // Another writer read before our write and wrote after it: ours is gone,
                    // theirs (a different policy each time) is there.
                    json!({"name":"q","priorityFactor":1,"retryPolicies":["a", format!("x{puts}")]})
                } else {
                    serde_json::from_str(&r.body).unwrap()
                };
                Reply::json(200, json!({}))
            }
            _ => Reply::text(404, "text/plain", "Not Found\n"),
        }
    });
    (stub, state)
}

#[test]
fn without_versions_an_overwritten_edit_is_applied_again() {
    let (stub, state) = racing_upstream(1);
    let home = temp_home();
    let (code, stdout, stderr) = finish(spawn_cli(
        &stub.url,
        home.path(),
        &["update", "queue", "q", "--add-retry-policy", "b"],
    ));
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (0, "queue/q configured\n", "")
    );
    assert_eq!(
        state.lock().unwrap()["retryPolicies"],
        serde_json::json!(["a", "x1", "b"])
    );
    // No If-Match to a server that gave no ETag.
    assert!(stub.requests().iter().all(|r| r.header("if-match").is_none()));
}

#[test]
fn without_versions_a_writer_that_keeps_overwriting_is_a_concurrent_modification() {
    let (stub, _) = racing_upstream(usize::MAX);
    let home = temp_home();
    let (code, stdout, stderr) = finish(spawn_cli(
        &stub.url,
        home.path(),
        &["update", "queue", "q", "--add-retry-policy", "b"],
    ));
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        "error: cannot update queue `q`: queue `q` was modified concurrently by another writer; gave up after 10 attempts to apply this change on top of the latest version, and the change is not applied\n"
    );
}

/// Failed authentication is rate-limited per client address: after 10 failures the address
/// gets 429 (even with the right password) until the minute is over.
#[test]
fn failed_authentication_is_rate_limited_per_address() {
    let s = TestServer::start_with_auth(&["admin:pw"], &[]);
    let url = format!("{}/v1/retry-policies", s.url);
    let client = reqwest::blocking::Client::new();
    assert_eq!(
        client
            .get(&url)
            .basic_auth("admin", Some("pw"))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    for _ in 0..10 {
        assert_eq!(
            client
                .get(&url)
                .basic_auth("admin", Some("guess"))
                .send()
                .unwrap()
                .status()
                .as_u16(),
            401
        );
    }
    let resp = client.get(&url).basic_auth("admin", Some("pw")).send().unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(
        resp.text().unwrap(),
        err(
            8,
            "too many failed authentication attempts from 127.0.0.1; try again in 60 seconds"
        )
    );
    // /health stays open (probes carry no credentials).
    assert_eq!(
        client
            .get(format!("{}/health", s.url))
            .send()
            .unwrap()
            .status()
            .as_u16(),
        200
    );
}
