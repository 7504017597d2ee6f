//! What the client refuses to take from a server: an answer body without end.

use crate::support::stub::{Reply, Stub};
use crate::support::{format_output, retryctl, temp_home};

/// A server answering 70 MiB where a policy is expected: exit 4 naming the limit, after
/// reading at most 64 MiB of it.
#[test]
fn an_endless_answer_is_exit_4_not_all_memory() {
    let huge = format!("{{\"name\":\"p\",\"pad\":\"{}\"}}", "x".repeat(70 << 20));
    let stub = Stub::start(move |_| Reply::text(200, "application/json", &huge).v1());
    let home = temp_home();
    let out = retryctl(home.path())
        .env("ARMADA_URL", &stub.url)
        .args(["get", "retrypolicy", "p"])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out).replace(&stub.url, "URL"),
        "exit: 4\n--- stdout\n--- stderr\nerror: cannot get retry policy `p`: unexpected answer to GET URL/v1/retry-policy/p: HTTP 200: the answer is larger than 64 MiB\n"
    );
}

/// A redirect to another host is refused and named, never followed.
#[test]
fn a_redirect_to_another_host_is_refused_and_named() {
    let stub = Stub::start(|_| {
        let mut r = Reply::text(302, "text/plain", "");
        r.headers
            .push(("Location".into(), "http://elsewhere.invalid:9/v1/retry-policy/p".into()));
        r
    });
    let home = temp_home();
    let out = retryctl(home.path())
        .env("ARMADA_URL", &stub.url)
        .args(["get", "retrypolicy", "p"])
        .output()
        .unwrap();
    let text = format_output(&out).replace(&stub.url, "URL");
    assert!(
        text.starts_with("exit: 4\n--- stdout\n--- stderr\nerror: cannot get retry policy `p`: cannot reach the Armada server at URL: the server redirected to another host (http://elsewhere.invalid:9/v1/retry-policy/p); refusing to follow it\n"),
        "{text}"
    );
    assert_eq!(stub.requests().len(), 1);
}

/// A password in the server URL never appears in an error message.
#[test]
fn a_password_in_the_url_is_masked_in_errors() {
    let stub = Stub::start(|_| Reply::text(500, "text/html", "<html>oops</html>"));
    let home = temp_home();
    let with_secret = stub.url.replace("http://", "http://admin:s3cret@");
    let out = retryctl(home.path())
        .env("ARMADA_URL", &with_secret)
        .args(["get", "retrypolicy", "p"])
        .output()
        .unwrap();
    let text = format_output(&out);
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.starts_with("exit: 4\n"), "{text}");
    // Nothing listens on port 9 of 127.0.0.1: the connection error names the URL, masked.
    let out = retryctl(home.path())
        .env("ARMADA_URL", "http://admin:s3cret@127.0.0.1:9")
        .args(["get", "retrypolicy", "p"])
        .output()
        .unwrap();
    let text = format_output(&out);
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        text.contains("cannot reach the Armada server at http://127.0.0.1:9"),
        "{text}"
    );
}
