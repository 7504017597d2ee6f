//! `retryctl serve` against the real server on 127.0.0.1:0: every route's happy path and
//! error paths, asserting status, the dialect header and the exact body.

use reqwest::blocking::Client;

use crate::support::server::TestServer;

/// One exchange: status, body. Asserts the dialect header on every answer.
pub fn call(method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    call_with(method, url, body, None)
}

pub fn call_with(method: &str, url: &str, body: Option<&str>, auth: Option<&str>) -> (u16, String) {
    let client = Client::new();
    let mut req = client.request(method.parse().unwrap(), url);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let resp = req.send().unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    assert_eq!(
        resp.headers()
            .get("armada-retry-policy-dialect")
            .map(|v| v.to_str().unwrap()),
        Some("v1"),
        "{method} {url} carries the dialect header"
    );
    let status = resp.status().as_u16();
    (status, resp.text().unwrap())
}

/// The error body for `message` with gRPC `code`.
pub fn err(code: u8, message: &str) -> String {
    let m = serde_json::to_string(message).unwrap();
    format!(r#"{{"error":{m},"code":{code},"message":{m}}}"#)
}

const ML: &str = r#"{"name":"ml-training-retries","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Fail","onCategory":"user-error"},{"action":"Retry","onCategory":"gpu","onSubcategory":"transient","mutate":{"affinity":{"avoidSameNode":true}}},{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":1.5}}}},{"action":"Retry","onCategory":"oom","onSubcategory":"small","mutate":{"resources":{"memory":{"static":"512Mi"}}}}]}"#;

#[test]
fn upstream_policy_round_trips_byte_for_byte() {
    let s = TestServer::start();
    let u = &s.url;
    assert_eq!(call("GET", &format!("{u}/v1/retry-policies"), None), (200, "{}".into()));
    assert_eq!(
        call("POST", &format!("{u}/v1/retry-policy"), Some(ML)),
        (200, "{}".into())
    );
    assert_eq!(
        call("GET", &format!("{u}/v1/retry-policy/ml-training-retries"), None),
        (200, ML.into())
    );
    // Upstream's omitted zero values: no retryLimit stays unset (the v1 dialect).
    let p0 = r#"{"name":"p0","defaultAction":"Retry"}"#;
    assert_eq!(
        call("POST", &format!("{u}/v1/retry-policy"), Some(p0)),
        (200, "{}".into())
    );
    assert_eq!(
        call("GET", &format!("{u}/v1/retry-policies"), None),
        (200, format!(r#"{{"retryPolicies":[{ML},{p0}]}}"#))
    );
}

/// `METHOD path [body]` → `STATUS body`, one exchange per line pair, for snapshots.
fn transcript(base: &str, steps: &[(&str, &str, Option<&str>)]) -> String {
    let mut out = String::new();
    for (method, path, body) in steps {
        let (status, text) = call(method, &format!("{base}{path}"), *body);
        out.push_str(&format!("{method} {path}"));
        if let Some(b) = body {
            let shown: String = if b.len() > 200 {
                format!("<{} bytes>", b.len())
            } else {
                b.to_string()
            };
            out.push_str(&format!(" {shown}"));
        }
        out.push_str(&format!("\n  → {status} {}\n", text.trim_end()));
    }
    out
}

#[test]
fn retry_policy_routes() {
    let s = TestServer::start();
    let steps: &[(&str, &str, Option<&str>)] = &[
        ("GET", "/v1/retry-policy/p1", None),
        (
            "PUT",
            "/v1/retry-policy/p1",
            Some(r#"{"name":"p1","defaultAction":"Retry"}"#),
        ),
        ("DELETE", "/v1/retry-policy/p1", None),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","retryLimit":0,"defaultAction":"RETRY_ACTION_RETRY"}"#),
        ),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","defaultAction":"Fail"}"#),
        ),
        ("GET", "/v1/retry-policy/p1", None),
        // Every upstream spelling of an action is accepted; output is always `Fail`/`Retry`.
        (
            "PUT",
            "/v1/retry-policy/p1",
            Some(
                r#"{"RetryLimit":5,"defaultaction":1,"rules":[{"action":2,"onCategory":"oom"},{"action":"retry","onCategory":"gpu"}]}"#,
            ),
        ),
        ("GET", "/v1/retry-policy/p1", None),
        (
            "PUT",
            "/v1/retry-policy/p1",
            Some(r#"{"name":"p2","defaultAction":"Fail"}"#),
        ),
        // The design-dialect fields are stored and returned losslessly.
        (
            "POST",
            "/v1/retry-policy",
            Some(
                r#"{"name":"design","retryLimit":4,"defaultAction":"Fail","rules":[{"action":"Retry","onConditions":["OOMKilled","Evicted"],"retryLimit":2,"backoff":{"initialDelay":"10s","maxDelay":"5m0s","multiplier":2,"jitter":0.1},"antiAffinity":{"mode":"node"}},{"action":"Fail","onExitCodes":{"operator":"In","values":[1,2]},"containerName":"main","includeInitContainers":true},{"action":"Retry","onTerminationMessage":{"pattern":"CUDA error: .*"}},{"action":"Retry","onFailureCategory":["oom","gpu"],"onFailureSubcategory":["a"]}],"backoff":{"initialDelay":"1s"},"antiAffinity":{"mode":"node"}}"#,
            ),
        ),
        ("GET", "/v1/retry-policy/design", None),
        ("GET", "/v1/retry-policies", None),
        ("DELETE", "/v1/retry-policy/p1", None),
        ("DELETE", "/v1/retry-policy/p1", None),
        ("GET", "/v1/retry-policy/", None),
        ("PUT", "/v1/retry-policy/", Some("{}")),
        ("DELETE", "/v1/retry-policy/", None),
        ("POST", "/v1/retry-policy", Some("")),
    ];
    insta::assert_snapshot!(transcript(&s.url, steps));
}

#[test]
fn queue_routes() {
    let s = TestServer::start();
    let steps: &[(&str, &str, Option<&str>)] = &[
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","defaultAction":"Fail"}"#),
        ),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p2","defaultAction":"Retry"}"#),
        ),
        ("GET", "/v1/queue/q1", None),
        (
            "POST",
            "/v1/queue",
            Some(r#"{"name":"q1","priorityFactor":1,"retryPolicies":["ghost","p1","other"]}"#),
        ),
        ("GET", "/v1/queue/q1", None),
        (
            "POST",
            "/v1/queue",
            Some(
                r#"{"name":"q1","priorityFactor":1,"userOwners":["alice"],"groupOwners":["ml"],"labels":{"team":"ml"},"cordoned":true,"retryPolicies":["p2","p1"]}"#,
            ),
        ),
        ("GET", "/v1/queue/q1", None),
        ("POST", "/v1/queue", Some(r#"{"name":"q1","priorityFactor":1}"#)),
        // PUT of a missing queue creates it (upstream's upsert); PUT is a full replace.
        (
            "PUT",
            "/v1/queue/q2",
            Some(r#"{"priorityFactor":2.5,"retryPolicies":["p1"]}"#),
        ),
        ("GET", "/v1/queue/q2", None),
        ("PUT", "/v1/queue/q2", Some(r#"{"name":"q3","priorityFactor":1}"#)),
        ("PUT", "/v1/queue/q2", Some(r#"{"name":"q2","priorityFactor":0.5}"#)),
        ("DELETE", "/v1/retry-policy/p1", None),
        ("GET", "/v1/batched/queues", None),
        ("GET", "/v1/batched/queues?num=1", None),
        ("GET", "/v1/batched/queues?num=x", None),
        ("PUT", "/v1/queue/q2", Some(r#"{"priorityFactor":2.5}"#)),
        (
            "PUT",
            "/v1/queue/q1",
            Some(r#"{"priorityFactor":1,"retryPolicies":["p2"]}"#),
        ),
        ("DELETE", "/v1/retry-policy/p1", None),
        ("DELETE", "/v1/queue/q2", None),
        ("DELETE", "/v1/queue/q2", None),
        ("GET", "/v1/queue/", None),
        (
            "POST",
            "/v1/batched/create_queues",
            Some(
                r#"{"queues":[{"name":"b1","priorityFactor":1},{"name":"q1","priorityFactor":1},{"name":"b2","priorityFactor":1,"retryPolicies":["nope"]}]}"#,
            ),
        ),
        (
            "PUT",
            "/v1/batched/update_queues",
            Some(r#"{"queues":[{"name":"b1","priorityFactor":3},{"name":"b3","priorityFactor":0}]}"#),
        ),
        (
            "PUT",
            "/v1/batched/update_queues",
            Some(r#"{"queues":[{"name":"b1","priorityFactor":4}]}"#),
        ),
        ("POST", "/v1/batched/create_queues", Some(r#"{"queue":[]}"#)),
        ("GET", "/v1/batched/queues", None),
    ];
    insta::assert_snapshot!(transcript(&s.url, steps));
}

/// Malformed, mistyped and hostile input: always a 4xx with the error body, never a 5xx.
#[test]
fn bad_input_is_a_4xx_with_the_error_body() {
    let s = TestServer::start();
    let big = format!(
        r#"{{"name":"big","defaultAction":"Fail","x":"{}"}}"#,
        "a".repeat(2 << 20)
    );
    let steps: &[(&str, &str, Option<&str>)] = &[
        ("POST", "/v1/retry-policy", Some(r#"{"name":"p1","#)),
        ("POST", "/v1/retry-policy", Some(r#"[1,2]"#)),
        ("POST", "/v1/retry-policy", Some(r#"{"name":7,"retryLimit":"3"}"#)),
        ("POST", "/v1/retry-policy", Some(r#"{"name":"p1","retryLimit":-1}"#)),
        ("POST", "/v1/retry-policy", Some(r#"{"name":"p1","retryLimit":10001}"#)),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","defaultAction":"Retri"}"#),
        ),
        ("POST", "/v1/retry-policy", Some(r#"{"name":"p1","retry_limit":5}"#)),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","rules":[{"action":"Retry","onConditions":["OOMKiled"]}]}"#),
        ),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","rules":[{"action":"Retry"}]}"#),
        ),
        (
            "POST",
            "/v1/retry-policy",
            Some(
                r#"{"name":"p1","rules":[{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":0.5}}}}]}"#,
            ),
        ),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"p1","rules":[{"action":"Retry","onTerminationMessage":{"pattern":"(unclosed"}}]}"#),
        ),
        ("POST", "/v1/retry-policy", Some(&big)),
        ("POST", "/v1/retry-policy", Some(r#"{"name":"a/b"}"#)),
        ("POST", "/v1/retry-policy", Some(r#"{"name":".."}"#)),
        (
            "POST",
            "/v1/retry-policy",
            Some(r#"{"name":"x'; DROP TABLE retry_policy; --"}"#),
        ),
        ("POST", "/v1/retry-policy", Some(r#"{"name":"\"quoted\""}"#)),
        ("GET", "/v1/retry-policy/a%2Fb", None),
        ("GET", "/v1/retry-policy/a/b", None),
        ("GET", "/v1/retry-policy/..%2F..%2Fetc", None),
        ("GET", "/v1/retry-policy/%22q%22", None),
        ("GET", "/v1/retry-policy/x'%20OR%20'1'='1", None),
        ("DELETE", "/v1/queue/x';DROP%20TABLE%20queue;--", None),
        ("POST", "/v1/queue", Some(r#"{"name":"q1","priorityFactor":"high"}"#)),
        (
            "POST",
            "/v1/queue",
            Some(r#"{"name":"q1","priorityFactor":1,"retryPolicies":["p1","p1"]}"#),
        ),
        (
            "POST",
            "/v1/queue",
            Some(r#"{"name":"q1","priorityFactor":1,"labels":{"":"x"}}"#),
        ),
        ("POST", "/v1/batched/create_queues", Some(r#"{"queues":{}}"#)),
        // A queue that does not decode fails the whole batch (nothing is written), as upstream.
        (
            "PUT",
            "/v1/batched/update_queues",
            Some(r#"{"queues":[{"name":"ok","priorityFactor":1},{"name":"b","userOwners":[{}]}]}"#),
        ),
        ("GET", "/v1/queue/ok", None),
        // Found by schemathesis: a repeated or non-numeric `num` is a JSON 400, not plain text.
        ("GET", "/v1/batched/queues?num=null&num=null", None),
        ("GET", "/v1/batched/queues?num=-1", None),
        ("GET", "/v1/retry-policies", None),
        ("GET", "/v1/no-such-route", None),
        ("PATCH", "/v1/retry-policy/p1", Some("{}")),
    ];
    let text = transcript(&s.url, steps);
    for line in text.lines().filter(|l| l.starts_with("  → ")) {
        let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!((200..500).contains(&status), "no 5xx: {line}");
    }
    insta::assert_snapshot!(text);
}

#[test]
fn credentials_are_required_when_configured() {
    let s = TestServer::start_with_auth(&["admin:s3cret", "ci:other"], &["tok-123"]);
    let url = format!("{}/v1/retry-policies", s.url);
    let basic = |up: &str| {
        use base64::Engine as _;
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(up))
    };
    assert_eq!(
        call_with("GET", &url, None, None),
        (
            401,
            err(
                16,
                "request could not be authenticated: no credentials presented; this server requires basic auth or a bearer token"
            )
        )
    );
    assert_eq!(
        call_with("GET", &url, None, Some(&basic("admin:wrong"))),
        (
            401,
            err(
                16,
                "request could not be authenticated: invalid credentials presented for user \"admin\""
            )
        )
    );
    assert_eq!(
        call_with("GET", &url, None, Some("Bearer tok-999")),
        (401, err(16, "request could not be authenticated: invalid bearer token"))
    );
    assert_eq!(
        call_with("GET", &url, None, Some("Negotiate abc")),
        (
            401,
            err(
                16,
                "request could not be authenticated: unsupported scheme \"Negotiate\"; this server requires basic auth or a bearer token"
            )
        )
    );
    // Writes are refused too, and nothing is stored.
    let create = format!("{}/v1/retry-policy", s.url);
    let body = Some(r#"{"name":"p1","defaultAction":"Fail"}"#);
    assert_eq!(call_with("POST", &create, body, None).0, 401);
    assert_eq!(call_with("GET", &url, None, Some("Bearer tok-123")), (200, "{}".into()));
    assert_eq!(
        call_with("POST", &create, body, Some(&basic("ci:other"))),
        (200, "{}".into())
    );
    assert_eq!(
        call_with(
            "GET",
            &format!("{}/v1/retry-policy/p1", s.url),
            None,
            Some(&basic("admin:s3cret"))
        )
        .0,
        200
    );
    // Probes need no credentials.
    assert_eq!(
        call_with("GET", &format!("{}/health", s.url), None, None),
        (200, "ok".into())
    );
}

/// Sends `request` on a new connection and reads the answer until the server closes (EOF,
/// or a reset after the answer: a server closing with unread request bytes resets).
pub(crate) fn raw_exchange(url: &str, request: &[u8]) -> String {
    use std::io::Write;
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    stream.write_all(request).unwrap();
    read_until_closed(&mut stream)
}

fn read_until_closed(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !out.is_empty() => break,
            Err(e) => panic!("reading the answer: {e} (got {:?})", String::from_utf8_lossy(&out)),
        }
    }
    String::from_utf8(out).unwrap()
}

/// The status line, the headers that say how the connection ends, and the body of a raw
/// answer (the date and lengths left out).
pub(crate) fn shown(answer: &str) -> String {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let mut lines = head.lines();
    let mut out = lines.next().unwrap_or("").to_string();
    for line in lines {
        let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
        if ["connection", "content-type"].contains(&name.as_str()) {
            out.push_str(&format!("\n{}", line.to_ascii_lowercase()));
        }
    }
    format!("{out}\n\n{body}")
}

/// docs/serve.md / RFC 9112 §3.2: two `Host` headers (or none, in HTTP/1.1) are 400 and the
/// connection closed, on the hot reads and on the router's routes alike, before the
/// DNS-rebinding check could read either. One `Host`, or HTTP/1.0 without any, is answered as
/// before.
#[test]
fn a_request_framed_against_rfc_9112_is_400() {
    let s = TestServer::start();
    let two = "request has 2 `Host` headers; HTTP allows exactly one (RFC 9112 section 3.2)";
    for (request, want) in [
        (
            "GET /v1/retry-policies HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n",
            format!("HTTP/1.1 400 Bad Request\ncontent-type: application/json\nconnection: close\n\n{}", err(3, two)),
        ),
        (
            "GET /v1/retry-policies HTTP/1.1\r\nHost: evil.example\r\nHost: localhost\r\n\r\n",
            format!("HTTP/1.1 400 Bad Request\ncontent-type: application/json\nconnection: close\n\n{}", err(3, two)),
        ),
        (
            "POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            format!("HTTP/1.1 400 Bad Request\ncontent-type: application/json\nconnection: close\n\n{}", err(3, two)),
        ),
        (
            "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\nHost: c\r\n\r\n",
            format!(
                "HTTP/1.1 400 Bad Request\ncontent-type: application/json\nconnection: close\n\n{}",
                err(3, "request has 3 `Host` headers; HTTP allows exactly one (RFC 9112 section 3.2)")
            ),
        ),
        (
            "GET /v1/retry-policies HTTP/1.1\r\n\r\n",
            format!(
                "HTTP/1.1 400 Bad Request\ncontent-type: application/json\nconnection: close\n\n{}",
                err(3, "request has no `Host` header; HTTP/1.1 requires exactly one (RFC 9112 section 3.2)")
            ),
        ),
        (
            "GET /health HTTP/1.0\r\n\r\n",
            "HTTP/1.0 200 OK\ncontent-type: text/plain; charset=utf-8\n\nok".to_string(),
        ),
        (
            "GET /v1/retry-policies HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            "HTTP/1.1 200 OK\ncontent-type: application/json\nconnection: close\n\n{}".to_string(),
        ),
    ] {
        assert_eq!(shown(&raw_exchange(&s.url, request.as_bytes())), want, "{request:?}");
    }
    // Both `Content-Length` and `Transfer-Encoding`: tests/integration/serve_framing.rs.
    assert_eq!(
        call("GET", &format!("{}/v1/retry-policies", s.url), None),
        (200, "{}".into())
    );
}

/// docs/serve.md: a body still trickling in when the deadline after its header passes is answered
/// 408 and its connection closed, with valid credentials too (here 1 s instead of 30 s; a
/// byte every 100 ms keeps the idle timeout from ever firing). A body that is slow but in
/// time is stored; without credentials the body is never read at all (401 at once).
#[test]
fn a_body_that_trickles_past_its_deadline_is_408_and_closed() {
    use std::io::Write;
    let mut config = retryctl::server::Config::new("127.0.0.1:0", retryctl::server::Location::InMemory);
    config.tokens = vec!["tok".into()];
    config.body_read_timeout = std::time::Duration::from_secs(1);
    let s = TestServer::start_config(config);
    let addr = s.url.trim_start_matches("http://").to_string();
    let head = "POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n";
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let mut writer = conn.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        // Until the server has closed (a write fails), for at most 10 s.
        for _ in 0..100 {
            if writer.write_all(b" ").is_err() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        false
    });
    conn.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    let answer = read_until_closed(&mut conn);
    assert_eq!(
        shown(&answer),
        format!(
            "HTTP/1.1 408 Request Timeout\ncontent-type: application/json\nconnection: close\n\n{}",
            err(4, "the request body did not arrive within 1s of the request header")
        )
    );
    assert!(trickle.join().unwrap(), "the server closed the connection");

    // In time, however slowly: stored.
    let body = r#"{"name":"slow","defaultAction":"Fail"}"#;
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        conn,
        "POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    for part in body.as_bytes().chunks(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        conn.write_all(part).unwrap();
    }
    let answer = read_until_closed(&mut conn);
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert_eq!(
        call_with(
            "GET",
            &format!("{}/v1/retry-policy/slow", s.url),
            None,
            Some("Bearer tok")
        )
        .0,
        200
    );

    // No credentials: refused before the body is read, and the connection closed.
    let answer = raw_exchange(
        &s.url,
        b"POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{",
    );
    assert!(answer.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{answer}");
}

/// A body that stops arriving altogether is cut off by the idle timeout (here 500 ms), and
/// that is a 408 too, not a 400 about an unreadable body.
#[test]
fn a_body_that_stops_arriving_is_408() {
    let mut config = retryctl::server::Config::new("127.0.0.1:0", retryctl::server::Location::InMemory);
    config.idle_timeout = std::time::Duration::from_millis(500);
    let s = TestServer::start_config(config);
    let answer = raw_exchange(
        &s.url,
        b"POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":",
    );
    assert_eq!(
        shown(&answer),
        format!(
            "HTTP/1.1 408 Request Timeout\ncontent-type: application/json\nconnection: close\n\n{}",
            err(
                4,
                "the request body stopped arriving: no byte for the connection's idle timeout"
            )
        )
    );
}
