//! docs/serve.md, RFC 9112 section 6.1: a request framed by both `Content-Length` and
//! `Transfer-Encoding` (how one request is smuggled inside another's body past a proxy that
//! reads the other header) is answered 400 and its connection closed, and is not processed:
//! nothing is created. The real `retryctl serve` process over raw TCP sockets.

use crate::serve::{call, err, raw_exchange, shown};
use crate::serve_process::spawn;

const BOTH: &str =
    "request has both `Content-Length` and `Transfer-Encoding` headers; HTTP/1.1 allows one (RFC 9112 section 6.1)";

const POLICY: &str = r#"{"name":"smuggled","retryLimit":1,"defaultAction":"Fail"}"#;

/// `POLICY` as one chunk, and the end of the chunks.
fn chunked() -> String {
    format!("{:x}\r\n{POLICY}\r\n0\r\n\r\n", POLICY.len())
}

#[test]
fn content_length_with_transfer_encoding_is_400_closed_and_not_processed() {
    let p = spawn(&["--listen", "127.0.0.1:0", "--in-memory"]);
    let refused = format!(
        "HTTP/1.1 400 Bad Request\ncontent-type: application/json\nconnection: close\n\n{}",
        err(3, BOTH)
    );
    let post = |headers: &str| {
        format!(
            "POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{headers}\r\n{}",
            chunked()
        )
    };
    for request in [
        post(&format!("Content-Length: {}\r\nTransfer-Encoding: chunked\r\n", POLICY.len())),
        post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
        post("transfer-encoding: chunked\r\ncontent-length: 0\r\n"),
        "GET /v1/retry-policies HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            .to_string(),
    ] {
        assert_eq!(shown(&raw_exchange(&p.url, request.as_bytes())), refused, "{request:?}");
        assert_eq!(
            call("GET", &format!("{}/v1/retry-policy/smuggled", p.url), None).0,
            404,
            "{request:?} created the policy"
        );
    }
    // Behind a request answered on the same connection: that one is answered, this one
    // refused, and the connection closed.
    let pipelined = format!(
        "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n{}",
        post(&format!(
            "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n",
            POLICY.len()
        ))
    );
    let answer = raw_exchange(&p.url, pipelined.as_bytes());
    let (first, second) = answer.split_at(answer.find("HTTP/1.1 400").expect("a 400 after the 200"));
    assert!(
        first.starts_with("HTTP/1.1 200 OK\r\n") && first.ends_with("ok"),
        "{answer}"
    );
    assert_eq!(shown(second), refused);
    assert_eq!(call("GET", &format!("{}/v1/retry-policy/smuggled", p.url), None).0, 404);
    // Behind a chunked request whose chunk size is written with more than 16 hex digits
    // (leading zeros): hyper does not read that body, and nothing behind it on the connection
    // is served (the reading follows such a size too, and refuses what it cannot follow).
    let padded = format!(
        "POST /v1/retry-policy HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n{:020x}\r\n{}\r\n0\r\n\r\n{}",
        POLICY.len(),
        POLICY.replace("smuggled", "padded"),
        post(&format!(
            "Content-Length: {}\r\nTransfer-Encoding: chunked\r\n",
            POLICY.len()
        ))
    );
    let answer = raw_exchange(&p.url, padded.as_bytes());
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer}");
    assert!(answer.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{answer}");
    assert_eq!(call("GET", &format!("{}/v1/retry-policy/padded", p.url), None).0, 404);
    assert_eq!(call("GET", &format!("{}/v1/retry-policy/smuggled", p.url), None).0, 404);
    // Chunked alone is a request like any other.
    let alone = shown(&raw_exchange(
        &p.url,
        post("Transfer-Encoding: chunked\r\nConnection: close\r\n").as_bytes(),
    ));
    assert!(alone.starts_with("HTTP/1.1 200 OK\n"), "{alone}");
    assert_eq!(call("GET", &format!("{}/v1/retry-policy/smuggled", p.url), None).0, 200);
    // Each refusal is on the request log, as any request is.
    let (code, lines) = p.terminate();
    assert_eq!(code, Some(0));
    let refusals: Vec<&String> = lines.iter().filter(|l| l.contains(" 400 ")).collect();
    assert_eq!(refusals.len(), 6, "{lines:#?}");
    assert!(
        refusals[0].starts_with("retryctl serve: POST /v1/retry-policy 400 "),
        "{lines:#?}"
    );
}
