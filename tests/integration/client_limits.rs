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
