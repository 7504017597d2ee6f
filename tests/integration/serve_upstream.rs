//! `retryctl serve --dialect upstream` (docs/serve.md): a local rehearsal of today's Armada.
//! Policy bodies are decoded as its gateway decodes them, checked by its service's
//! validation (`internal/server/retrypolicy/validation.go`), refused in its words over REST
//! and gRPC, and nothing is stored after a refusal; answers carry no dialect header, so the
//! CLI treats the server as upstream Armada.

use reqwest::blocking::Client;
use retryctl::server::{Config, Location};
use retryctl::wire::Dialect;

use crate::serve::err;
use crate::support::python;
use crate::support::server::TestServer;
use crate::support::Session;

fn upstream() -> TestServer {
    TestServer::start_config(Config {
        dialect: Dialect::Upstream,
        ..Config::new("127.0.0.1:0", Location::InMemory)
    })
}

/// One exchange: status and body. No answer carries the dialect header.
fn call(method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    let mut req = Client::new().request(method.parse().unwrap(), url);
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    let resp = req.send().unwrap();
    assert!(
        resp.headers().get("armada-retry-policy-dialect").is_none(),
        "{method} {url} carries the dialect header"
    );
    let status = resp.status().as_u16();
    (status, resp.text().unwrap())
}

#[test]
fn rest_refuses_as_upstream_words_it_and_stores_nothing() {
    let s = upstream();
    let u = &s.url;
    let post = |body: &str| call("POST", &format!("{u}/v1/retry-policy"), Some(body));
    let refused = |m: &str| (400, err(3, m));
    // A v1 document: its `metadata` and `spec` have no place in upstream's message, so it
    // arrives without a name (POST) or without a default action (PUT, named by the path).
    let v1 = r#"{"apiVersion":"armadaproject.io/v1","kind":"RetryPolicy","metadata":{"name":"p1"},"spec":{"retryLimit":3,"defaultAction":"Fail"}}"#;
    assert_eq!(
        post(v1),
        refused("invalid retry policy: retry policy name must not be empty")
    );
    assert_eq!(
        call("PUT", &format!("{u}/v1/retry-policy/p1"), Some(v1)),
        refused("invalid retry policy: retry policy \"p1\" must set a default action (Fail or Retry)")
    );
    for (body, message) in [
        (
            r#"{"name":"MyPolicy","defaultAction":"Fail"}"#,
            "invalid retry policy: retry policy name \"MyPolicy\" is invalid: must consist of lowercase alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ),
        (
            r#"{"name":"p1","defaultAction":"Fail","rules":[{"action":"Retry","onSubcategory":"small"}]}"#,
            "invalid retry policy: retry policy \"p1\" rule 0: on_category must be set",
        ),
        (
            r#"{"name":"p1","defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"},null]}"#,
            "invalid retry policy: retry policy \"p1\" rule 1: rule must not be nil",
        ),
        (
            r#"{"name":"p1","defaultAction":"Fail","rules":[{"onCategory":"oom"}]}"#,
            "invalid retry policy: retry policy \"p1\" rule 0: action must be Fail or Retry",
        ),
        (
            r#"{"name":"p1","defaultAction":"Retry","rules":[{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":1}}}}]}"#,
            "invalid retry policy: retry policy \"p1\" rule 0: mutate.resources.memory: factor 1 must be greater than 1.0",
        ),
        (
            r#"{"name":"p1","defaultAction":"Unspecified"}"#,
            "invalid retry policy: retry policy \"p1\" must set a default action (Fail or Retry)",
        ),
        (
            r#"{"name":"p1","defaultAction":"retry_action_fail"}"#,
            "no RetryAction of name \"retry_action_fail\"",
        ),
        (
            r#"{"name":"p1","retryLimit":"3","defaultAction":"Fail"}"#,
            "json: cannot unmarshal string into Go struct field RetryPolicy.retryLimit of type uint32",
        ),
    ] {
        assert_eq!(post(body), refused(message), "{body}");
    }
    assert_eq!(call("GET", &format!("{u}/v1/retry-policies"), None), (200, "{}".into()));
    // What upstream stores of a body with fields it has not: they are dropped without a word,
    // and a zero limit is left out of the answer, as its gateway answers.
    assert_eq!(
        post(
            r#"{"name":"p1","retryLimit":0,"defaultAction":"fail","backoff":{"initialDelay":"10s"},"rules":[{"action":"RETRY_ACTION_RETRY","onCategory":"oom","onExitCodes":{"operator":"In","values":[137]}}]}"#
        ),
        (200, "{}".into())
    );
    assert_eq!(
        call("GET", &format!("{u}/v1/retry-policy/p1"), None),
        (
            200,
            r#"{"name":"p1","defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom"}]}"#.into()
        )
    );
}

/// The CLI against the rehearsal: it is told the server is upstream Armada (no header), so
/// it refuses a design policy before sending, as against the real one; the server refuses
/// what passed the client and upstream refuses (exit 3, upstream's words); `version` and
/// `describe` speak of today's Armada.
#[test]
fn the_cli_meets_what_todays_armada_would_answer() {
    let srv = upstream();
    let s = Session::new(&srv.url);
    assert_eq!(
        s.run(&["version"]),
        "exit: 0\n--- stdout\nclient: retryctl 0.1.0\nserver: URL (dialect: upstream)\n--- stderr\n"
    );
    let out = s.run(&["create", "-f", "testdata/policies/valid/infra.yaml"]);
    assert!(
        out.starts_with("exit: 3\n--- stdout\n--- stderr\nerror: testdata/policies/valid/infra.yaml: cannot create retry policy `infra`: the server is upstream Armada"),
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    // Kubernetes' quantity parser allows no blank around a quantity; retryctl's does.
    let blank = dir.path().join("blank.yaml");
    std::fs::write(
        &blank,
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: blank\nretryLimit: 2\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: oom\n    mutate: {resources: {memory: {static: \" 1Gi\"}}}\n",
    )
    .unwrap();
    let blank = blank.to_str().unwrap();
    assert_eq!(
        s.run(&["apply", "-f", blank]).replace(blank, "FILE"),
        "exit: 3\n--- stdout\n--- stderr\nerror: FILE: cannot apply retry policy `blank`: the server answered 400 Bad Request (InvalidArgument): invalid retry policy: retry policy \"blank\" rule 0: mutate.resources.memory: invalid static quantity \" 1Gi\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'\n"
    );
    assert_eq!(
        s.run(&["apply", "-f", "testdata/policies/valid/upstream-v1beta1.yaml"]),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries created\n--- stderr\n"
    );
    assert_eq!(s.ok(&["get", "rp", "-o", "name"]), "retrypolicy/ml-training-retries\n");
    let out = s.ok(&["describe", "rp", "ml-training-retries"]);
    assert!(
        out.contains("\nDialect:         armadaproject.io/v1beta1 (today's Armada: category rules, one retry limit, no backoff)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nBackoff:         none: today's Armada requeues a retry at once\n"),
        "{out}"
    );
}

/// Over gRPC: upstream's Python client sends what the CLI never would; the refusals are
/// upstream's service's (`invalid retry policy: …`, InvalidArgument), nothing is stored, and
/// what is stored reads back the same over gRPC and REST.
#[test]
fn grpc_refuses_as_upstream_words_it_and_stores_nothing() {
    let Some(python) = python::python() else { return };
    let srv = upstream();
    let addr = crate::grpc::address(&srv.url);
    let out = crate::grpc::py(
        &python,
        r#"
P, R = pb.RETRY_ACTION_FAIL, pb.RETRY_ACTION_RETRY
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(default_action=P)))
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(name="MyPolicy", default_action=P)))
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(name="p1")))
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(name="p1", default_action=P, rules=[pb.RetryRule(action=R)])))
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(name="p1", default_action=P, rules=[pb.RetryRule(action=R, on_category="oom",
    mutate=pb.RetryMutation(resources=pb.RetryResourceMutation(memory=pb.RetryResourceBump(static="1Gi", factor=2))))])))
call(lambda: rp.GetRetryPolicies(pb.RetryPolicyListRequest()))
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(name="p1", default_action=R, rules=[pb.RetryRule(action=R, on_category="oom")])))
call(lambda: rp.UpdateRetryPolicy(pb.RetryPolicy(name="p1", retry_limit=2)))
call(lambda: rp.GetRetryPolicy(pb.RetryPolicyGetRequest(name="p1")))
"#,
        &[&addr],
    );
    assert_eq!(
        out,
        "INVALID_ARGUMENT invalid retry policy: retry policy name must not be empty\n\
         INVALID_ARGUMENT invalid retry policy: retry policy name \"MyPolicy\" is invalid: must consist of lowercase alphanumeric characters or '-', and must start and end with an alphanumeric character\n\
         INVALID_ARGUMENT invalid retry policy: retry policy \"p1\" must set a default action (Fail or Retry)\n\
         INVALID_ARGUMENT invalid retry policy: retry policy \"p1\" rule 0: on_category must be set\n\
         INVALID_ARGUMENT invalid retry policy: retry policy \"p1\" rule 0: mutate.resources.memory: set exactly one of static and factor, not both\n\
         \n\
         ok\n\
         INVALID_ARGUMENT invalid retry policy: retry policy \"p1\" must set a default action (Fail or Retry)\n\
         name: \"p1\" default_action: RETRY_ACTION_RETRY rules { action: RETRY_ACTION_RETRY on_category: \"oom\" }\n"
    );
    assert_eq!(
        call("GET", &format!("{}/v1/retry-policies", srv.url), None),
        (
            200,
            r#"{"retryPolicies":[{"name":"p1","defaultAction":"Retry","rules":[{"action":"Retry","onCategory":"oom"}]}]}"#.into()
        )
    );
    // The CLI's own gRPC client reads it as upstream Armada's: an absent limit is 0 (shown in
    // v1beta1, today's Armada's dialect).
    let s = Session::new(&format!("grpc://{addr}"));
    assert_eq!(
        s.ok(&["get", "rp", "p1", "-o", "jsonpath={.retryLimit} {.defaultAction}"]),
        "0 Retry"
    );
}

/// The flag on the real binary: the startup line says which dialect it answers in.
#[test]
fn the_flag_starts_a_server_that_answers_as_upstream() {
    let p = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    assert!(
        p.first_line.ends_with(" (database: in memory, dialect: upstream)"),
        "{}",
        p.first_line
    );
    assert_eq!(
        call("POST", &format!("{}/v1/retry-policy", p.url), Some(r#"{"name":"p1"}"#)),
        (
            400,
            err(
                3,
                "invalid retry policy: retry policy \"p1\" must set a default action (Fail or Retry)"
            )
        )
    );
    assert_eq!(p.terminate().0, Some(0));
}

/// A v1 document the rehearsal would refuse, as today's Armada would, is invalid input for
/// it: exit 3 from the CLI (as `validate --upstream` says of it), whether `create`, `apply`
/// or a dry run, against the real `retryctl serve --dialect upstream` process; nothing is
/// stored.
#[test]
fn a_v1_document_upstream_refuses_is_exit_3_against_the_real_server() {
    let srv = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    let s = Session::new(&srv.url);
    let file = "testdata/policies/valid/infra.yaml";
    let fields = "`defaultAction (unset: upstream refuses a policy without one)`, `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`";
    for (args, verb) in [
        (&["create", "-f", file][..], "create"),
        (&["apply", "-f", file][..], "apply"),
        (&["apply", "-f", file, "--dry-run"][..], "apply"),
    ] {
        assert_eq!(
            s.run(args),
            format!(
                "exit: 3\n--- stdout\n--- stderr\nerror: {file}: cannot {verb} retry policy `infra`: the server is upstream Armada (no `Armada-Retry-Policy-Dialect: v1` header), which cannot store these fields of retry policy `infra`: {fields}\n\n\
                 hint: set `spec.defaultAction` explicitly (upstream refuses a policy without one) and remove the other fields, or use a server that speaks the design dialect (`retryctl serve`)\n"
            ),
            "{args:?}"
        );
    }
    let validate = s.run(&["validate", "--upstream", "-f", file]);
    assert!(validate.starts_with("exit: 3\n"), "{validate}");
    assert_eq!(s.ok(&["get", "rp", "-o", "name"]), "");
}

/// `get -o yaml` from today's Armada writes what it stores: v1beta1 policies (and queues)
/// without `--api-version`, which `current/` then holds as the README's route wants; the
/// design dialect when asked for; a design server's default is unchanged (v1).
#[test]
fn get_yaml_from_today_s_armada_is_v1beta1_unless_asked_otherwise() {
    let policy = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: ml-today\nretryLimit: 3\ndefaultAction: Retry\nrules:\n  - {action: Retry, onCategory: oom}\n---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: ml\npriorityFactor: 1\nretryPolicies: [ml-today]\n";
    let v1beta1 = "exit: 0\n--- stdout\napiVersion: v1\nkind: List\nitems:\n- apiVersion: armadaproject.io/v1beta1\n  kind: RetryPolicy\n  name: ml-today\n  retryLimit: 3\n  defaultAction: Retry\n  rules:\n  - action: Retry\n    onCategory: oom\n--- stderr\n";
    let v1 = "exit: 0\n--- stdout\napiVersion: v1\nkind: List\nitems:\n- apiVersion: armadaproject.io/v1\n  kind: RetryPolicy\n  metadata:\n    name: ml-today\n  spec:\n    retryLimit: 3\n    defaultAction: Retry\n    rules:\n    - action: Retry\n      onFailureCategory:\n      - oom\n--- stderr\n";
    let queues = "exit: 0\n--- stdout\napiVersion: v1\nkind: List\nitems:\n- apiVersion: armadaproject.io/v1beta1\n  kind: Queue\n  name: ml\n  priorityFactor: 1.0\n  retryPolicies:\n  - ml-today\n--- stderr\n";
    let today = upstream();
    let s = Session::new(&today.url);
    s.run_stdin(&["apply", "-f", "-"], policy);
    assert_eq!(s.run(&["get", "retrypolicies", "-o", "yaml"]), v1beta1);
    assert_eq!(s.run(&["get", "queues", "-o", "yaml"]), queues);
    assert_eq!(
        s.run(&["get", "rp", "ml-today", "-o", "jsonpath={.apiVersion}"]),
        "exit: 0\n--- stdout\narmadaproject.io/v1beta1--- stderr\n"
    );
    assert_eq!(
        s.run(&[
            "get",
            "retrypolicies",
            "-o",
            "yaml",
            "--api-version",
            "armadaproject.io/v1"
        ]),
        v1
    );
    // What it wrote applies back unchanged.
    let written = s.ok(&["get", "retrypolicies", "-o", "yaml"]);
    assert_eq!(
        s.run_stdin(&["apply", "-f", "-"], &written),
        "exit: 0\n--- stdout\nretrypolicy/ml-today unchanged\n--- stderr\n"
    );
    let design = TestServer::start();
    let d = Session::new(&design.url);
    d.run_stdin(&["apply", "-f", "-"], policy);
    assert_eq!(d.run(&["get", "retrypolicies", "-o", "yaml"]), v1);
    assert_eq!(d.run(&["get", "queues", "-o", "yaml"]), queues);
    assert_eq!(
        d.run(&[
            "get",
            "retrypolicies",
            "-o",
            "yaml",
            "--api-version",
            "armadaproject.io/v1beta1"
        ]),
        v1beta1
    );
}
