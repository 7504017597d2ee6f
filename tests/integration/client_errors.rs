//! Failures only a scripted stub can produce: nothing listening, a hang, an HTML 500, a
//! plain-text 404, 401/403, 503 then success, and an upstream Armada that drops fields.
//! Each asserts what the user sees (message, hint, exit code) and what reached the server.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::stub::{Reply, Stub};
use crate::support::{exchange, retryctl, temp_home};

/// A URL where nothing listens, and no server of a test running alongside can start to.
fn dead_url() -> String {
    format!("http://127.0.0.1:{}", crate::support::closed_port())
}

fn run(home: &std::path::Path, url: &str, args: &[&str]) -> String {
    exchange(retryctl(home).arg("--armada-url").arg(url).args(args)).replace(url, "URL")
}

#[test]
fn every_server_command_says_it_cannot_reach_the_url_and_exits_4() {
    let home = temp_home();
    let url = dead_url();
    let commands: [&[&str]; 11] = [
        &["get", "retrypolicies"],
        &["get", "queue", "q1"],
        &["create", "-f", "testdata/policies/valid/infra.yaml"],
        &["create", "queue", "q1"],
        &["update", "-f", "testdata/policies/valid/infra.yaml"],
        &["update", "queue", "q1", "--add-retry-policy", "x"],
        &["apply", "-f", "testdata/policies/valid/infra.yaml"],
        &["diff", "-f", "testdata/policies/valid/infra.yaml"],
        &["delete", "retrypolicy", "infra"],
        &["delete", "queue", "q1"],
        &["version"],
    ];
    for args in commands {
        let out = run(home.path(), &url, args);
        assert!(out.starts_with("exit: 4\n"), "{args:?}: {out}");
        assert!(
            out.contains("cannot reach the Armada server at `URL`: connection refused"),
            "{args:?}: {out}"
        );
        assert!(
            out.contains("point retryctl elsewhere with `--armada-url URL`, `$ARMADA_URL`"),
            "{args:?}: {out}"
        );
    }
    insta::assert_snapshot!(run(home.path(), &url, &["get", "retrypolicies"]), @r"
    exit: 4
    --- stdout
    --- stderr
    error: cannot list retry policies: cannot reach the Armada server at `URL`: connection refused

    hint: start a server (`retryctl serve`), or point retryctl elsewhere with `--armada-url URL`, `$ARMADA_URL` or a config context (`retryctl config get-contexts`); this URL came from `--armada-url`
    ");
}

#[test]
fn the_default_url_is_localhost_8080_and_env_overrides_it() {
    let home = temp_home();
    let url = dead_url();
    let out = exchange(retryctl(home.path()).env("ARMADA_URL", &url).args(["get", "rp"])).replace(&url, "URL");
    assert!(out.contains("at `URL`: connection refused"), "{out}");
    assert!(out.contains("this URL came from `$ARMADA_URL`"), "{out}");
    // Without flag, env or config the request goes to localhost:8080 (seen in the -v log,
    // whether or not something happens to listen there).
    let out = exchange(retryctl(home.path()).args(["-v", "--timeout", "1s", "get", "rp"]));
    assert!(
        out.contains("retryctl: GET http://localhost:8080/v1/retry-policies (auth: anonymous)"),
        "{out}"
    );
}

#[test]
fn a_hung_server_times_out_with_exit_4_within_the_timeout() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::json(200, json!({})).delayed(Duration::from_secs(5)));
    let started = Instant::now();
    let out = run(home.path(), &stub.url, &["--timeout", "300ms", "get", "rp", "p1"]);
    let took = started.elapsed();
    assert!(out.starts_with("exit: 4\n"), "{out}");
    assert!(
        out.contains("error: cannot get retry policy `p1`: the Armada server at `URL` did not answer within 300ms"),
        "{out}"
    );
    // Not a timing assertion on speed: it proves the timeout was not retried 3 times over
    // a 5 s delay (that would take 5 s at the least).
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert_eq!(stub.requests().len(), 1);
}

#[test]
fn html_500_is_an_unexpected_answer_exit_4() {
    let home = temp_home();
    let stub = Stub::start(|_| {
        Reply::text(
            500,
            "text/html",
            "<html><body><h1>500 Internal Server Error</h1></body></html>",
        )
    });
    insta::assert_snapshot!(run(home.path(), &stub.url, &["get", "queues"]), @r"
    exit: 4
    --- stdout
    --- stderr
    error: cannot list queues: unexpected answer to GET URL/v1/batched/queues: HTTP 500: body is not an Armada error: <html><body><h1>500 Internal Server Error</h1></body></html>
    ");
}

#[test]
fn plain_text_404_means_no_such_route() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::text(404, "text/plain", "Not Found\n"));
    insta::assert_snapshot!(run(home.path(), &stub.url, &["get", "rp", "p1"]), @r"
    exit: 4
    --- stdout
    --- stderr
    error: cannot get retry policy `p1`: this server has no route GET URL/v1/retry-policy/p1 (404 without an Armada error body): it is not an Armada server, or an older one without retry policy support

    hint: check that URL is the Armada REST (HTTP gateway) URL, not the gRPC port
    ");
}

#[test]
fn json_404_is_not_found_exit_1() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::error(404, 5, "retry policy \"p1\" not found").v1());
    insta::assert_snapshot!(run(home.path(), &stub.url, &["get", "rp", "p1"]), @r"
    exit: 1
    --- stdout
    --- stderr
    error: retry policy `p1` not found

    hint: list the existing ones with `retryctl get retrypolicies`
    ");
}

#[test]
fn unauthenticated_and_forbidden_exit_5() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::error(401, 16, "request could not be authenticated"));
    insta::assert_snapshot!(run(home.path(), &stub.url, &["get", "rp"]), @r"
    exit: 5
    --- stdout
    --- stderr
    error: cannot list retry policies: the server answered 401 Unauthorized (Unauthenticated): request could not be authenticated

    hint: give credentials: `--token`, `--token-file` or `$ARMADA_TOKEN`, or the config context's `bearerToken`, `basicAuth` or `execAuth`
    ");
    let stub = Stub::start(|_| Reply::text(403, "text/html", "<h1>Forbidden</h1>"));
    let out = run(home.path(), &stub.url, &["delete", "queue", "q1"]);
    assert!(out.starts_with("exit: 5\n"), "{out}");
    assert!(
        out.contains(
            "error: cannot delete queue `q1`: the server answered 403 Forbidden (PermissionDenied): <h1>Forbidden</h1>"
        ),
        "{out}"
    );
}

#[test]
fn idempotent_requests_retry_503_but_posts_do_not() {
    let home = temp_home();
    let mut n = 0;
    let stub = Stub::start(move |_| {
        n += 1;
        if n < 3 {
            Reply::error(503, 14, "try later")
        } else {
            Reply::json(
                200,
                json!({"retryPolicies":[{"name":"p1","retryLimit":2,"defaultAction":"Fail"}]}),
            )
            .v1()
        }
    });
    let out = run(home.path(), &stub.url, &["get", "rp", "-o", "name"]);
    assert_eq!(out, "exit: 0\n--- stdout\nretrypolicy/p1\n--- stderr\n");
    assert_eq!(stub.requests().len(), 3);

    let stub = Stub::start(|r| {
        if r.method == "POST" {
            Reply::error(503, 14, "try later").v1()
        } else {
            Reply::text(200, "text/plain", "ok").v1()
        }
    });
    let out = run(
        home.path(),
        &stub.url,
        &["create", "-f", "testdata/policies/valid/infra.yaml"],
    );
    assert!(out.starts_with("exit: 4\n"), "{out}");
    assert!(
        out.contains("the server answered 503 Service Unavailable (Unavailable): try later"),
        "{out}"
    );
    let posts = stub.requests().iter().filter(|r| r.method == "POST").count();
    assert_eq!(posts, 1);
}

#[test]
fn verbose_logs_requests_without_secrets() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::json(200, json!({})).v1());
    let out = exchange(retryctl(home.path()).env("ARMADA_TOKEN", "s3cret-token").args([
        "-v",
        "--armada-url",
        &stub.url,
        "get",
        "rp",
    ]))
    .replace(&stub.url, "URL");
    assert!(!out.contains("s3cret"), "{out}");
    assert!(
        out.contains("retryctl: GET URL/v1/retry-policies (auth: bearer from `$ARMADA_TOKEN`)\n"),
        "{out}"
    );
    assert!(
        out.contains("retryctl: GET URL/v1/retry-policies -> 200 OK in "),
        "{out}"
    );
    assert_eq!(stub.requests()[0].header("authorization"), Some("Bearer s3cret-token"));
}

#[test]
fn basic_and_exec_auth_from_the_config_context() {
    let home = temp_home();
    let stub = Stub::start(|_| Reply::json(200, json!({})).v1());
    let cfg = home.path().join(".armadactl.yaml");
    std::fs::write(
        &cfg,
        format!(
            "currentContext: basic\ncontexts:\n  basic:\n    armadaRestUrl: {0}\n    basicAuth: {{username: alice, password: pw}}\n  exec:\n    armadaRestUrl: {0}\n    execAuth: {{cmd: sh, args: ['-c', 'echo tok-$N'], env: [{{name: N, value: '7'}}]}}\n  broken:\n    armadaRestUrl: {0}\n    execAuth: {{cmd: sh, args: ['-c', 'echo expired >&2; exit 1']}}\n",
            stub.url
        ),
    )
    .unwrap();
    let out = exchange(retryctl(home.path()).args(["-v", "get", "rp"]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert!(
        out.contains("(auth: basic from `basicAuth` of context `basic`, user `alice`)"),
        "{out}"
    );
    assert!(!out.contains("pw"), "{out}");
    let out = exchange(retryctl(home.path()).args(["-c", "exec", "get", "rp"]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
    let auths: Vec<_> = stub
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_string())
        .collect();
    assert_eq!(auths, ["Basic YWxpY2U6cHc=", "Bearer tok-7"]);
    insta::assert_snapshot!(exchange(retryctl(home.path()).args(["-c", "broken", "get", "rp"])), @r"
    exit: 5
    --- stdout
    --- stderr
    error: execAuth command `sh` failed with status 1: expired
    ");
}

#[test]
fn upstream_server_refuses_design_fields_before_sending() {
    let home = temp_home();
    let stub = Stub::upstream(false);
    let out = run(
        home.path(),
        &stub.url,
        &["create", "-f", "testdata/policies/valid/infra.yaml"],
    );
    insta::assert_snapshot!(out, @r"
    exit: 3
    --- stdout
    --- stderr
    error: testdata/policies/valid/infra.yaml: cannot create retry policy `infra`: the server is upstream Armada (no `Armada-Retry-Policy-Dialect: v1` header), which cannot store these fields of retry policy `infra`: `defaultAction (unset: upstream refuses a policy without one)`, `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`

    hint: set `spec.defaultAction` explicitly (upstream refuses a policy without one) and remove the other fields, or use a server that speaks the design dialect (`retryctl serve`)
    ");
    assert!(
        stub.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        stub.requests()
    );
    // A category-only policy fits upstream and goes through, read back unchanged.
    let out = run(
        home.path(),
        &stub.url,
        &["create", "-f", "testdata/policies/valid/upstream-v1beta1.yaml"],
    );
    assert!(out.starts_with("exit: 0\n"), "{out}");
}

/// docs/reference/wire.md: upstream refuses a policy without `defaultAction` (and its engine will not
/// default it), so neither `create` nor `apply` sends one; a v1 policy that sets it goes.
#[test]
fn upstream_server_is_never_sent_a_policy_without_default_action() {
    let home = temp_home();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    let body = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onCategory: gpu}\n";
    std::fs::write(&file, body).unwrap();
    let path = file.to_str().unwrap();
    let stub = Stub::upstream(false);
    for verb in ["create", "apply"] {
        let out = run(home.path(), &stub.url, &[verb, "-f", path]).replace(path, "FILE");
        let done = if verb == "create" { "create" } else { "apply" };
        assert_eq!(
            out,
            format!(
                "exit: 3\n--- stdout\n--- stderr\nerror: FILE: cannot {done} retry policy `p`: the server is upstream Armada (no `Armada-Retry-Policy-Dialect: v1` header), which cannot store these fields of retry policy `p`: `defaultAction (unset: upstream refuses a policy without one)`\n\nhint: set `spec.defaultAction` explicitly (upstream refuses a policy without one), or use a server that speaks the design dialect (`retryctl serve`)\n"
            ),
            "{verb}"
        );
    }
    assert!(
        stub.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        stub.requests()
    );
    std::fs::write(
        &file,
        body.replace("retryLimit: 3\n", "retryLimit: 3\n  defaultAction: Fail\n"),
    )
    .unwrap();
    let out = run(home.path(), &stub.url, &["create", "-f", path]);
    assert!(out.starts_with("exit: 0\n"), "{out}");
}

#[test]
fn upstream_server_that_drops_fields_is_caught_by_the_read_back() {
    let home = temp_home();
    let stub = Stub::upstream(true);
    let out = run(
        home.path(),
        &stub.url,
        &["create", "queue", "q1", "--retry-policy", "a,b"],
    );
    insta::assert_snapshot!(out, @r"
    exit: 4
    --- stdout
    --- stderr
    error: cannot create queue `q1`: the server acknowledged queue `q1` but reading it back shows it dropped or changed: `retryPolicies`

    hint: the server does not keep these fields; see what it stored with `retryctl get queue q1 -o yaml`
    ");
    let out = run(
        home.path(),
        &stub.url,
        &["create", "-f", "testdata/policies/valid/upstream-v1beta1.yaml"],
    );
    assert!(out.starts_with("exit: 4\n"), "{out}");
    assert!(
        out.contains("reading it back shows it dropped or changed: `rules[1].mutate`"),
        "{out}"
    );
}

#[test]
fn queue_stream_error_chunk_and_missing_end_marker() {
    let home = temp_home();
    // Upstream reports a rejected stream in its last chunk (as grpc-gateway writes it), HTTP status 200
    // when something was already written.
    let stub = Stub::start(|_| {
        Reply::text(
            200,
            "application/json",
            "{\"result\":{\"Event\":{\"queue\":{\"name\":\"a\",\"priorityFactor\":1}}}}\n{\"error\":{\"grpc_code\":7,\"http_code\":403,\"message\":\"not allowed\",\"http_status\":\"Forbidden\"}}",
        )
    });
    let out = run(home.path(), &stub.url, &["get", "queues"]);
    assert_eq!(
        out,
        "exit: 5\n--- stdout\n--- stderr\nerror: cannot list queues: the server answered 403 Forbidden (PermissionDenied): not allowed\n"
    );
    // A stream cut short must not pass for the whole list.
    let stub = Stub::start(|_| {
        Reply::text(
            200,
            "application/json",
            "{\"result\":{\"Event\":{\"queue\":{\"name\":\"a\",\"priorityFactor\":1}}}}\n",
        )
    });
    let out = run(home.path(), &stub.url, &["get", "queues"]);
    assert!(out.starts_with("exit: 4\n--- stdout\n--- stderr\n"), "{out}");
    assert!(out.contains("the queue stream ended without its end marker"), "{out}");
}

#[test]
fn server_refusing_a_delete_after_the_check_names_its_reason_exit_1() {
    // A queue attached the policy between retryctl's check and its DELETE (a race no
    // single-client run against a real server produces on demand).
    let home = temp_home();
    let stub = Stub::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v1/retry-policy/p1") => {
            Reply::json(200, json!({"name":"p1","retryLimit":1,"defaultAction":"Fail"})).v1()
        }
        ("GET", "/v1/batched/queues") => {
            Reply::text(200, "application/json", "{\"result\":{\"Event\":{\"end\":{}}}}\n").v1()
        }
        _ => Reply::error(400, 9, "retry policy \"p1\" is in use by queues: \"q9\"").v1(),
    });
    insta::assert_snapshot!(run(home.path(), &stub.url, &["delete", "rp", "p1"]), @r#"
    exit: 1
    --- stdout
    --- stderr
    error: cannot delete retry policy `p1`: the server answered 400 Bad Request (FailedPrecondition): retry policy "p1" is in use by queues: "q9"
    "#);
}

/// A 200 list answer of another shape is an unexpected answer (exit 4) naming the expected
/// shape, never "no retry policies found" with exit 0; `{}` is the empty list.
#[test]
fn a_wrong_shaped_policy_list_is_exit_4() {
    let home = temp_home();
    for (body, got) in [
        (json!([{"name": "p"}]), "a JSON array"),
        (json!({"items": []}), "an object with `items`"),
        (json!({"retryPolicies": [], "items": []}), "an object with `items`"),
    ] {
        let stub = Stub::start(move |_| Reply::json(200, body.clone()).v1());
        let out = run(home.path(), &stub.url, &["get", "retrypolicies"]);
        assert_eq!(
            out,
            format!(
                "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: unexpected answer \
                 to GET URL/v1/retry-policies: HTTP 200: cannot read the body: expected \
                 `{{\"retryPolicies\": [...]}}` (or `{{}}` when there are none), got {got}\n"
            )
        );
    }
    let stub = Stub::start(|_| Reply::json(200, json!({})).v1());
    let out = run(home.path(), &stub.url, &["get", "retrypolicies"]);
    assert!(out.starts_with("exit: 0\n"), "{out}");
}

/// A bearer token no request can carry (a line break: `--token "$(cat two-line-file)"`) is a
/// usage error before anything is sent, not a server that could not be reached (exit 4), and
/// the token is never shown.
#[test]
fn a_token_no_request_can_carry_is_a_usage_error() {
    let home = temp_home();
    let out = exchange(retryctl(home.path()).args([
        "get",
        "rp",
        "--armada-url",
        "http://127.0.0.1:1",
        "--token",
        "se\ncret",
    ]));
    assert_eq!(
        out,
        "exit: 2\n--- stdout\n--- stderr\nerror: `--token` holds a line break, which no HTTP header or gRPC metadata can carry: expected the bearer token alone (not shown here: it is a secret)\n"
    );
}
