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
        text.starts_with("exit: 4\n--- stdout\n--- stderr\nerror: cannot get retry policy `p`: cannot reach the Armada server at `URL`: the server redirected to another host (http://elsewhere.invalid:9/v1/retry-policy/p); refusing to follow it\n"),
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
    // Nothing listens on port 9 of 127.0.0.1: the connection error names the URL, whose user
    // info was taken out of it (it is the credentials, docs/cli.md).
    let out = retryctl(home.path())
        .env("ARMADA_URL", "http://admin:s3cret@127.0.0.1:9")
        .args(["get", "retrypolicy", "p"])
        .output()
        .unwrap();
    let text = format_output(&out);
    assert!(!text.contains("s3cret"), "{text}");
    assert!(
        text.contains("cannot reach the Armada server at `http://127.0.0.1:9`: "),
        "{text}"
    );
}

/// `version` and the `-v` request log never show a URL's password: the user info is the
/// credentials (sent as basic auth, named by `-v`), not part of the server's address.
#[test]
fn a_password_in_the_url_is_masked_in_version_and_the_request_log() {
    let stub = Stub::start(|_| Reply::json(200, serde_json::json!({})).v1());
    let home = temp_home();
    let with_secret = stub.url.replace("http://", "http://admin:s3cret@");
    let masked = &stub.url;
    let out = retryctl(home.path())
        .env("ARMADA_URL", &with_secret)
        .args(["-v", "version"])
        .output()
        .unwrap();
    let text = format_output(&out);
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "client: retryctl {}\nserver: {masked} (dialect: v1)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert!(
        text.contains(&format!(
            "retryctl: GET {masked}/health (auth: basic from the URL, user `admin`)\n"
        )),
        "{text}"
    );
    let out = retryctl(home.path())
        .env("ARMADA_URL", &with_secret)
        .args(["version", "-o", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["server"]["url"], masked.as_str());
}

/// `-v` shows every redirect the client follows, with the URLs masked.
#[test]
fn verbose_shows_redirects() {
    let stub = Stub::start(|r| {
        if r.path == "/v1/retry-policies" {
            let mut reply = Reply::text(307, "text/plain", "");
            reply.headers.push(("Location".into(), "/v1/moved?token=t0k".into()));
            reply
        } else {
            Reply::json(200, serde_json::json!({})).v1()
        }
    });
    let home = temp_home();
    let with_secret = stub.url.replace("http://", "http://admin:s3cret@");
    let out = retryctl(home.path())
        .env("ARMADA_URL", &with_secret)
        .args(["-v", "get", "retrypolicies"])
        .output()
        .unwrap();
    let text = format_output(&out);
    assert!(text.starts_with("exit: 0\n"), "{text}");
    assert!(!text.contains("s3cret") && !text.contains("t0k"), "{text}");
    // reqwest has taken the user info out of the URL by then (it is sent as basic auth).
    let url = &stub.url;
    assert!(
        text.contains(&format!(
            "retryctl: redirected (307 Temporary Redirect): {url}/v1/retry-policies -> {url}/v1/moved?token=***\n"
        )),
        "{text}"
    );
    let paths: Vec<_> = stub.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/retry-policies", "/v1/moved?token=t0k"]);
    // Without `-v`, nothing about it.
    let out = retryctl(home.path())
        .env("ARMADA_URL", &stub.url)
        .args(["get", "retrypolicies"])
        .output()
        .unwrap();
    assert!(!format_output(&out).contains("redirected"));
}
