//! gRPC end to end (docs/reference/wire.md): upstream's own Python client (PyPI armada-client
//! 0.5.1) against `retryctl serve`, and retryctl's gRPC client against a gRPC-only stand-in
//! built on that package's generated servicers (support/armada_double.py) and against serve,
//! with a config context that has only armadactl's `armadaUrl: host:port`.

use std::path::{Path, PathBuf};

use retryctl::server::{Config, Location, TlsFiles};

use crate::support::python::{self, Double};
use crate::support::server::TestServer;
use crate::support::{format_output, retryctl, temp_home, Session};

const V1BETA1: &str = "testdata/policies/valid/upstream-v1beta1.yaml";
const DESIGN: &str = "testdata/policies/valid/infra.yaml";

/// `127.0.0.1:PORT` of a test server's `http://127.0.0.1:PORT`.
pub(crate) fn address(url: &str) -> String {
    url.split_once("://").map_or(url, |(_, rest)| rest).to_string()
}

/// What every Python script starts with: stubs on `sys.argv[1]` and `call(f)`, which prints
/// `ok` or the status code and details of a failed call.
const PY: &str = r#"
import sys, grpc
from armada_client.armada import submit_pb2 as pb, submit_pb2_grpc as g
from google.protobuf import empty_pb2, text_format
opts = [("grpc.default_compression_algorithm", 2)] if "--gzip" in sys.argv else []
ch = grpc.insecure_channel(sys.argv[1], options=opts)
rp, qs, sub = g.RetryPolicyServiceStub(ch), g.QueueServiceStub(ch), g.SubmitStub(ch)
md = [("authorization", "Bearer " + sys.argv[2])] if len(sys.argv) > 2 and sys.argv[2] != "--gzip" else []
def show(m):
    print(text_format.MessageToString(m, as_one_line=True))
def call(f):
    try:
        r = f()
        if r is not None and not isinstance(r, empty_pb2.Empty):
            show(r)
        else:
            print("ok")
    except grpc.RpcError as e:
        print(e.code().name, e.details())
"#;

pub(crate) fn py(python: &Path, body: &str, args: &[&str]) -> String {
    python::run(python, &format!("{PY}\n{body}"), args)
}

/// A config file whose only context has armadactl's `armadaUrl` (+ `forceNoTls`).
fn armadactl_config(dir: &Path, address: &str, extra: &str) -> PathBuf {
    let path = dir.join("armadactl.yaml");
    std::fs::write(
        &path,
        format!("currentContext: main\ncontexts:\n  main:\n    armadaUrl: {address}\n{extra}"),
    )
    .unwrap();
    path
}

/// The `ETag` serve answers a REST `GET` of `path` with.
fn etag(url: &str, path: &str) -> String {
    reqwest::blocking::get(format!("{url}{path}")).unwrap().headers()["etag"]
        .to_str()
        .unwrap()
        .to_string()
}

/// `retryctl --config CONFIG ARGS` as a snapshot string, the address replaced by `ADDR`.
fn run(home: &Path, config: &Path, address: &str, args: &[&str]) -> String {
    let out = retryctl(home).arg("--config").arg(config).args(args).output().unwrap();
    format_output(&out).replace(address, "ADDR")
}

#[test]
fn upstreams_python_client_round_trips_policies_and_queues_through_serve() {
    let Some(python) = python::python() else { return };
    let srv = TestServer::start();
    let addr = address(&srv.url);
    let s = Session::new(&srv.url);
    let out = py(
        &python,
        r#"
call(lambda: sub.Health(empty_pb2.Empty()))
p = pb.RetryPolicy(name="p1", retry_limit=3, default_action=pb.RETRY_ACTION_FAIL, rules=[
    pb.RetryRule(action=pb.RETRY_ACTION_RETRY, on_category="oom", on_subcategory="small",
        mutate=pb.RetryMutation(resources=pb.RetryResourceMutation(memory=pb.RetryResourceBump(factor=1.5)))),
    pb.RetryRule(action=pb.RETRY_ACTION_FAIL, on_category="user-error")])
call(lambda: rp.CreateRetryPolicy(p))
call(lambda: rp.CreateRetryPolicy(p))
call(lambda: rp.GetRetryPolicy(pb.RetryPolicyGetRequest(name="p1")))
call(lambda: qs.CreateQueue(pb.Queue(name="q1", priority_factor=1, retry_policies=["p1", "ghost", "other"])))
call(lambda: qs.CreateQueue(pb.Queue(name="q1", priority_factor=2, retry_policies=["p1"], labels={"team": "ml"})))
"#,
        &[&addr],
    );
    assert_eq!(
        out,
        "status: SERVING\n\
         ok\n\
         ALREADY_EXISTS retry policy \"p1\" already exists\n\
         name: \"p1\" retry_limit: 3 default_action: RETRY_ACTION_FAIL rules { action: RETRY_ACTION_RETRY on_category: \"oom\" on_subcategory: \"small\" mutate { resources { memory { factor: 1.5 } } } } rules { action: RETRY_ACTION_FAIL on_category: \"user-error\" }\n\
         INVALID_ARGUMENT error creating queue: retry policies do not exist: \"ghost\", \"other\"\n\
         ok\n"
    );
    // What gRPC wrote, REST reads: one store.
    assert_eq!(
        s.ok(&[
            "get",
            "rp",
            "p1",
            "-o",
            "jsonpath={.spec.retryLimit} {.spec.rules[0].mutate.resources.memory.factor}"
        ]),
        "3 1.5"
    );
    assert_eq!(
        s.ok(&["get", "q", "q1", "-o", "jsonpath={.priorityFactor} {.retryPolicies}"]),
        "2.0 [\"p1\"]"
    );
    // ... and what REST wrote, gRPC reads; REST's versions count gRPC's writes too.
    s.ok(&["create", "-f", V1BETA1]);
    let etag = |path: &str| etag(&srv.url, path);
    assert_eq!(etag("/v1/retry-policy/p1"), "\"1\"");
    let out = py(
        &python,
        r#"
r = rp.GetRetryPolicy(pb.RetryPolicyGetRequest(name="ml-training-retries"))
print(r.name, r.retry_limit, len(r.rules), r.rules[3].mutate.resources.memory.static)
call(lambda: rp.UpdateRetryPolicy(pb.RetryPolicy(name="p1", retry_limit=5, default_action=pb.RETRY_ACTION_RETRY)))
call(lambda: rp.UpdateRetryPolicy(pb.RetryPolicy(name="nope", default_action=pb.RETRY_ACTION_RETRY)))
print([p.name for p in rp.GetRetryPolicies(pb.RetryPolicyListRequest()).retry_policies])
call(lambda: qs.UpdateQueue(pb.Queue(name="q1", priority_factor=2, retry_policies=["ml-training-retries", "p1"])))
for m in qs.GetQueues(pb.StreamingQueueGetRequest()):
    show(m)
for m in qs.GetQueues(pb.StreamingQueueGetRequest(num=1)):
    print(m.WhichOneof("event"))
call(lambda: rp.DeleteRetryPolicy(pb.RetryPolicyDeleteRequest(name="p1")))
call(lambda: qs.DeleteQueue(pb.QueueDeleteRequest(name="q1")))
call(lambda: rp.DeleteRetryPolicy(pb.RetryPolicyDeleteRequest(name="p1")))
call(lambda: rp.GetRetryPolicy(pb.RetryPolicyGetRequest(name="p1")))
call(lambda: qs.GetQueue(pb.QueueGetRequest(name="q1")))
"#,
        &[&addr],
    );
    assert_eq!(
        out,
        "ml-training-retries 3 4 512Mi\n\
         ok\n\
         NOT_FOUND error: could not find retry policy \"nope\"\n\
         ['ml-training-retries', 'p1']\n\
         ok\n\
         queue { name: \"q1\" priority_factor: 2.0 retry_policies: \"ml-training-retries\" retry_policies: \"p1\" }\n\
         end { }\n\
         queue\n\
         end\n\
         FAILED_PRECONDITION retry policy \"p1\" is attached to queues \"q1\"; detach it from them first\n\
         ok\n\
         ok\n\
         NOT_FOUND error: could not find retry policy \"p1\"\n\
         NOT_FOUND error: could not find queue \"q1\"\n"
    );
    // The labels set over gRPC before the update were replaced by it (update is a full replace).
    assert_eq!(
        s.run(&["get", "q"]),
        "exit: 0\n--- stdout\n--- stderr\nno queues found\n"
    );
}

#[test]
fn grpc_writes_bump_the_versions_rest_clients_see() {
    let Some(python) = python::python() else { return };
    let srv = TestServer::start();
    let addr = address(&srv.url);
    let etag = |path: &str| etag(&srv.url, path);
    py(
        &python,
        r#"
call(lambda: rp.CreateRetryPolicy(pb.RetryPolicy(name="p1", retry_limit=1, default_action=1)))
call(lambda: qs.CreateQueue(pb.Queue(name="q1", priority_factor=1)))
"#,
        &[&addr],
    );
    assert_eq!(
        (etag("/v1/retry-policy/p1"), etag("/v1/queue/q1")),
        ("\"1\"".into(), "\"1\"".into())
    );
    py(
        &python,
        r#"
call(lambda: rp.UpdateRetryPolicy(pb.RetryPolicy(name="p1", retry_limit=2, default_action=1)))
call(lambda: qs.CordonQueue(pb.QueueCordonRequest(name="q1")))
call(lambda: qs.CordonQueue(pb.QueueCordonRequest(name="")))
call(lambda: qs.PreemptOnQueue(pb.QueuePreemptRequest(name="q1")))
"#,
        &[&addr],
    );
    assert_eq!(
        (etag("/v1/retry-policy/p1"), etag("/v1/queue/q1")),
        ("\"2\"".into(), "\"2\"".into())
    );
    let q: serde_json::Value = reqwest::blocking::get(format!("{}/v1/queue/q1", srv.url))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(q["cordoned"], true);
}

#[test]
fn armadactls_submit_methods_gzip_and_credentials() {
    let Some(python) = python::python() else { return };
    let srv = TestServer::start_with_auth(&[], &["tok-1"]);
    let addr = address(&srv.url);
    let script = r#"
call(lambda: sub.Health(empty_pb2.Empty()))
call(lambda: sub.CreateQueue(pb.Queue(name="q1", priority_factor=1), metadata=md))
call(lambda: sub.GetQueue(pb.QueueGetRequest(name="q1"), metadata=md))
print([m.WhichOneof("event") for m in sub.GetQueues(pb.StreamingQueueGetRequest(), metadata=md)] if md else "-")
call(lambda: sub.SubmitJobs(pb.JobSubmitRequest(queue="q1"), metadata=md))
"#;
    // Without credentials: Unauthenticated, as REST's 401 (Health needs none, like /health).
    assert_eq!(
        py(&python, script, &[&addr]),
        "status: SERVING\n\
         UNAUTHENTICATED request could not be authenticated: no credentials presented; this server requires a bearer token\n\
         UNAUTHENTICATED request could not be authenticated: no credentials presented; this server requires a bearer token\n\
         -\n\
         UNAUTHENTICATED request could not be authenticated: no credentials presented; this server requires a bearer token\n"
    );
    // armadactl's way: the token in `authorization`, every request gzip-compressed; the
    // Submit service's queue methods answer, its job methods are Unimplemented.
    assert_eq!(
        py(&python, script, &[&addr, "tok-1", "--gzip"]),
        "status: SERVING\n\
         ok\n\
         name: \"q1\" priority_factor: 1.0\n\
         ['queue', 'end']\n\
         UNIMPLEMENTED retryctl serve runs no jobs: api.Submit/SubmitJobs is not served (its queue methods and Health are)\n"
    );
    let wrong = py(
        &python,
        "call(lambda: sub.GetQueue(pb.QueueGetRequest(name=\"q1\"), metadata=md))",
        &[&addr, "nope"],
    );
    assert_eq!(
        wrong,
        "UNAUTHENTICATED request could not be authenticated: invalid bearer token\n"
    );
}

#[test]
fn bad_messages_are_refused_as_invalid_never_with_a_panic() {
    let Some(python) = python::python() else { return };
    let srv = TestServer::start();
    let addr = address(&srv.url);
    let out = py(
        &python,
        r#"
raw = ch.unary_unary("/api.RetryPolicyService/CreateRetryPolicy",
    request_serializer=lambda b: b, response_deserializer=lambda b: empty_pb2.Empty.FromString(b))
policy = pb.RetryPolicy(name="p1", retry_limit=1, default_action=1,
    rules=[pb.RetryRule(action=2, on_category="oom")]).SerializeToString()
# Field 99 (varint 1), unknown to the contract.
call(lambda: raw(policy + b"\x98\x06\x01"))
# Rule field 2: upstream's reserved `on_conditions`.
rule = pb.RetryRule(action=2, on_category="oom").SerializeToString() + b"\x10\x01"
call(lambda: raw(pb.RetryPolicy(name="p2", default_action=1).SerializeToString() + b"\x22" + bytes([len(rule)]) + rule))
# An action that is no RetryAction, and none at all.
call(lambda: raw(pb.RetryPolicy(name="p3", default_action=1, rules=[pb.RetryRule(action=7, on_category="x")]).SerializeToString()))
call(lambda: raw(pb.RetryPolicy(name="p4").SerializeToString()))
call(lambda: raw(b"\x0a\xff"))
call(lambda: raw(pb.RetryPolicy(name="p5", default_action=1, rules=[pb.RetryRule(action=2, on_category="x" * (5 << 20))]).SerializeToString()))
call(lambda: raw(pb.RetryPolicy(name="Bad_Name", default_action=1).SerializeToString()))
call(lambda: rp.GetRetryPolicy(pb.RetryPolicyGetRequest(name="")))
call(lambda: ch.unary_unary("/api.Nope/Nothing", request_serializer=lambda b: b)(b""))
call(lambda: raw(policy))
# GetRetryPolicy: the same answer compressed (tonic's path) or not (serve's own), the same checks.
get = pb.RetryPolicyGetRequest(name="p1")
print(rp.GetRetryPolicy(get) == rp.GetRetryPolicy(get, compression=grpc.Compression.Gzip))
raw_get = ch.unary_unary("/api.RetryPolicyService/GetRetryPolicy",
    request_serializer=lambda b: b, response_deserializer=pb.RetryPolicy.FromString)
call(lambda: raw_get(get.SerializeToString() + b"\x10\x01"))
call(lambda: raw_get(b"\x0a\x05p"))
"#,
        &[&addr],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "INVALID_ARGUMENT the request has fields Armada's API does not define, refused rather than dropped: unknown field number `99` of api.RetryPolicy",
            "INVALID_ARGUMENT the request has fields Armada's API does not define, refused rather than dropped: unknown field number `2` of api.RetryRule at rules[0]",
            "INVALID_ARGUMENT invalid retry policy: rules[0].action: must be `Fail` (1) or `Retry` (2), got `7`, not a RetryAction",
            "INVALID_ARGUMENT invalid retry policy: defaultAction: must be `Fail` or `Retry`, got `RETRY_ACTION_UNSPECIFIED` (0): the action is not set",
            "INTERNAL grpc: error unmarshalling request: failed to decode Protobuf message: RetryPolicy.name: invalid varint",
        ],
        "{out}"
    );
    assert!(lines[5].starts_with("RESOURCE_EXHAUSTED "), "{out}");
    assert!(
        lines[6].starts_with("INVALID_ARGUMENT invalid retry policy: name: "),
        "{out}"
    );
    assert_eq!(
        lines[7..],
        [
            "INVALID_ARGUMENT retry policy name must not be empty",
            "UNIMPLEMENTED unknown service or method /api.Nope/Nothing",
            "ok",
            "True",
            "INVALID_ARGUMENT the request has fields Armada's API does not define, refused rather than dropped: unknown field number `2` of api.RetryPolicyGetRequest",
            "INTERNAL grpc: error unmarshalling request: failed to decode Protobuf message: RetryPolicyGetRequest.name: buffer underflow",
        ],
        "{out}"
    );
    // None of it was stored but the last; the server still answers REST.
    let s = Session::new(&srv.url);
    assert_eq!(s.ok(&["get", "rp", "-o", "name"]), "retrypolicy/p1\n");
}

#[test]
fn a_design_dialect_policy_is_never_answered_lossy_over_grpc() {
    let Some(python) = python::python() else { return };
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["create", "-f", DESIGN]);
    let out = py(
        &python,
        r#"
call(lambda: rp.GetRetryPolicy(pb.RetryPolicyGetRequest(name="infra")))
call(lambda: rp.GetRetryPolicies(pb.RetryPolicyListRequest()))
"#,
        &[&address(&srv.url)],
    );
    let refusal = "FAILED_PRECONDITION retry policy \"infra\" uses fields Armada's gRPC API cannot carry: \
                   `defaultAction (unset: upstream refuses a policy without one)`, `rules[0].onConditions`, \
                   `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`; \
                   read it over REST (GET /v1/retry-policy/infra)";
    assert_eq!(out, format!("{refusal}\n{refusal}\n"));
}

/// The same `retryctl` command against serve over REST and against the double over gRPC
/// prints the same.
#[test]
fn retryctl_over_grpc_against_upstreams_servicers_prints_what_rest_prints() {
    let Some(python) = python::python() else { return };
    let double = Double::start(&python, &[]);
    let addr = format!("127.0.0.1:{}", double.port);
    let home = temp_home();
    let config = armadactl_config(home.path(), &addr, "    forceNoTls: true\n");
    let grpc = |args: &[&str]| run(home.path(), &config, &addr, args);
    // Today's Armada over REST too (`serve --dialect upstream`): `get -o yaml` prints each
    // server's own dialect.
    let srv = TestServer::start_config(retryctl::server::Config {
        dialect: retryctl::wire::Dialect::Upstream,
        ..retryctl::server::Config::new("127.0.0.1:0", retryctl::server::Location::InMemory)
    });
    let rest = Session::new(&srv.url);

    assert_eq!(
        grpc(&["get", "rp"]),
        "exit: 0\n--- stdout\n--- stderr\nno retry policies found\n"
    );
    for args in [
        &["apply", "-f", V1BETA1][..],
        &[
            "create",
            "queue",
            "ml-queue",
            "--retry-policy",
            "ml-training-retries",
            "-l",
            "team=ml",
        ],
        &["apply", "-f", V1BETA1],
        &["get", "rp", "ml-training-retries", "-o", "yaml"],
        &["get", "rp", "-o", "wide"],
        &["get", "q", "ml-queue", "-o", "json"],
        &["get", "queues"],
        &["update", "queue", "ml-queue", "--cordon"],
        &["diff", "-f", V1BETA1],
        &["get", "rp", "nope"],
    ] {
        assert_eq!(grpc(args), rest.run(args).replace("URL", "ADDR"), "{args:?}");
    }
    // `describe` speaks the server's dialect: the double is today's Armada.
    let described = grpc(&["describe", "rp", "ml-training-retries"]);
    assert!(
        described.starts_with("exit: 0\n--- stdout\nName:            ml-training-retries\nDialect:         armadaproject.io/v1beta1 (today's Armada: category rules, one retry limit, no backoff)\nUsed by queues:  ml-queue\n"),
        "{described}"
    );
    assert_eq!(
        grpc(&["version"]),
        format!(
            "exit: 0\n--- stdout\nclient: retryctl {}\nserver: grpc://ADDR (gRPC, dialect: upstream)\n--- stderr\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    // `simulate --from-server` decides from what the server holds, as from the same files
    // (with upstream's engine: the double is no `retryctl serve`).
    let dir = tempfile::tempdir().unwrap();
    let queue = dir.path().join("q.yaml");
    std::fs::write(
        &queue,
        "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: ml-queue\nretryPolicies: [ml-training-retries]\n",
    )
    .unwrap();
    let history = "testdata/histories/design-composition.yaml";
    let from_server = retryctl(home.path())
        .arg("--config")
        .arg(&config)
        .args(["simulate", "--from-server", "--history", history, "-o", "json"])
        .output()
        .unwrap();
    let from_files = retryctl(home.path())
        .args([
            "simulate",
            "--engine",
            "upstream",
            "--history",
            history,
            "-o",
            "json",
            "-f",
            V1BETA1,
            "-f",
        ])
        .arg(&queue)
        .output()
        .unwrap();
    assert_eq!(from_server.status.code(), from_files.status.code());
    assert!(from_server.stdout.starts_with(b"{\"jobs\":[{\"job\":\"train-42\""));
    assert_eq!(
        String::from_utf8_lossy(&from_server.stdout),
        String::from_utf8_lossy(&from_files.stdout)
    );
    assert!(
        String::from_utf8_lossy(&from_server.stderr).starts_with("note: the server is upstream Armada"),
        "{}",
        format_output(&from_server)
    );
    // A design-dialect policy is refused before anything is sent.
    assert_eq!(
        grpc(&["create", "-f", DESIGN]),
        "exit: 3\n--- stdout\n--- stderr\nerror: testdata/policies/valid/infra.yaml: cannot create retry policy `infra`: \
         Armada's gRPC API cannot carry these fields of retry policy `infra` (they have no protobuf form): \
         `defaultAction (unset: upstream refuses a policy without one)`, `rules[0].onConditions`, \
         `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`\n\n\
         hint: write it over REST (`--armada-url http://…` of `retryctl serve`, or a context's `armadaRestUrl`), or remove these fields\n"
    );
    assert_eq!(
        grpc(&["delete", "q", "ml-queue"]),
        "exit: 0\n--- stdout\nqueue/ml-queue deleted\n--- stderr\n"
    );
}

#[test]
fn grpc_errors_have_the_exit_codes_and_words_of_rest() {
    let Some(python) = python::python() else { return };
    let home = temp_home();
    // InvalidArgument: the server's text, exit 3 as over REST (validation refused).
    let double = Double::start(&python, &[]);
    let addr = format!("127.0.0.1:{}", double.port);
    let config = armadactl_config(home.path(), &addr, "    forceNoTls: true\n");
    assert_eq!(
        run(
            home.path(),
            &config,
            &addr,
            &["create", "queue", "q2", "--retry-policy", "ghost"]
        ),
        "exit: 3\n--- stdout\n--- stderr\nerror: cannot create queue `q2`: the server answered InvalidArgument: \
         error creating queue: retry policies do not exist: \"ghost\"\n"
    );
    assert_eq!(
        run(home.path(), &config, &addr, &["update", "-f", V1BETA1]),
        "exit: 1\n--- stdout\n--- stderr\nerror: testdata/policies/valid/upstream-v1beta1.yaml: cannot update retry policy \
         `ml-training-retries`: the server answered NotFound: retry policy `ml-training-retries` does not exist\n\n\
         hint: create it first with `retryctl create -f` or `retryctl apply -f`\n"
    );
    drop(double);

    // Unauthenticated (5), then the token from the environment.
    let double = Double::start(&python, &["--token", "tok-1"]);
    let addr = format!("127.0.0.1:{}", double.port);
    let config = armadactl_config(home.path(), &addr, "    forceNoTls: true\n");
    assert_eq!(
        run(home.path(), &config, &addr, &["get", "rp"]),
        "exit: 5\n--- stdout\n--- stderr\nerror: cannot list retry policies: the server answered Unauthenticated: \
         Request could not be authenticated: Request could not be authenticated with any of the supported schemes.\n\n\
         hint: give credentials: `--token`, `--token-file` or `$ARMADA_TOKEN`, or the config context's \
         `bearerToken`, `basicAuth` or `execAuth`\n"
    );
    let out = retryctl(home.path())
        .env("ARMADA_TOKEN", "tok-1")
        .arg("--config")
        .arg(&config)
        .args(["apply", "-f", V1BETA1])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries created\n--- stderr\n"
    );
    drop(double);

    // PermissionDenied (5).
    let double = Double::start(&python, &["--deny-writes"]);
    let addr = format!("127.0.0.1:{}", double.port);
    let config = armadactl_config(home.path(), &addr, "    forceNoTls: true\n");
    assert_eq!(
        run(home.path(), &config, &addr, &["apply", "-f", V1BETA1]),
        "exit: 5\n--- stdout\n--- stderr\nerror: testdata/policies/valid/upstream-v1beta1.yaml: cannot apply retry policy \
         `ml-training-retries`: the server answered PermissionDenied: error creating retry policy: anonymous lacks \
         permission create_retry_policy\n"
    );
    let port = double.port;
    drop(double);

    // Unreachable (4): nothing listens there any more.
    let out = run(home.path(), &config, &addr, &["get", "rp"]);
    assert!(
        out.starts_with(
            "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: cannot reach the Armada server at \
             `grpc://ADDR`: connection refused\n\nhint: start a server"
        ),
        "{out} (port {port})"
    );
    assert!(
        out.contains("this URL came from context `main` of the config file"),
        "{out}"
    );
}

#[test]
fn an_armadactl_context_works_unchanged_against_serve_plain_and_tls() {
    let home = temp_home();
    // Plain: `forceNoTls`.
    let srv = TestServer::start();
    let addr = address(&srv.url);
    let config = armadactl_config(home.path(), &addr, "    forceNoTls: true\n");
    assert_eq!(
        run(home.path(), &config, &addr, &["apply", "-f", V1BETA1]),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries created\n--- stderr\n"
    );
    assert_eq!(
        run(home.path(), &config, &addr, &["get", "rp", "-o", "name"]),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries\n--- stderr\n"
    );
    assert_eq!(
        run(home.path(), &config, &addr, &["version"]),
        format!(
            "exit: 0\n--- stdout\nclient: retryctl {}\nserver: grpc://ADDR (gRPC, dialect: v1)\n--- stderr\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    // Without `forceNoTls` a non-localhost address is TLS, as armadactl decides: a plaintext
    // server says it does not speak it.
    let tls_config = armadactl_config(home.path(), &addr, "");
    let out = run(home.path(), &tls_config, &addr, &["get", "rp"]);
    assert_eq!(
        out,
        "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: the server at `grpcs://ADDR` \
         does not speak TLS: use `grpc://ADDR`\n"
    );

    // TLS (ALPN h2) with the context's `certificateAuthority`.
    let dir = tempfile::tempdir().unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.key_pair.serialize_pem()).unwrap();
    let mut c = Config::new("127.0.0.1:0", Location::InMemory);
    c.tls = Some(TlsFiles {
        cert: cert.clone(),
        key,
    });
    let tls = TestServer::start_config(c);
    let addr = address(&tls.url);
    let config = armadactl_config(
        home.path(),
        &addr,
        &format!("    certificateAuthority: {}\n", cert.display()),
    );
    assert_eq!(
        run(home.path(), &config, &addr, &["apply", "-f", V1BETA1]),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries created\n--- stderr\n"
    );
    // REST on the same TLS port still answers (ALPN http/1.1).
    let out = retryctl(home.path())
        .args(["--certificate-authority"])
        .arg(&cert)
        .args(["get", "rp", "-o", "name", "--armada-url", &tls.url])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries\n--- stderr\n"
    );
    // `insecureSkipTlsVerify`: any certificate, with the warning.
    let insecure = armadactl_config(home.path(), &addr, "    insecureSkipTlsVerify: true\n");
    let out = run(home.path(), &insecure, &addr, &["get", "rp", "-o", "name"]);
    assert!(
        out.starts_with(
            "exit: 0\n--- stdout\nretrypolicy/ml-training-retries\n--- stderr\nwarning: TLS certificate verification is off"
        ),
        "{out}"
    );
    // Without the CA: the certificate does not verify (4).
    let untrusted = armadactl_config(home.path(), &addr, "");
    let out = run(home.path(), &untrusted, &addr, &["get", "rp"]);
    assert!(
        out.starts_with(
            "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: the TLS certificate of the server at \
             `grpcs://ADDR` does not verify"
        ),
        "{out}"
    );
}

#[test]
fn a_replace_over_grpc_is_refused_when_someone_wrote_since_the_read() {
    use retryctl::client::{Auth, Client, ClientConfig, GrpcClient, WriteOp};
    let srv = TestServer::start();
    let session = Session::new(&srv.url);
    session.ok(&["apply", "-f", V1BETA1]);
    session.ok(&["create", "queue", "q1"]);
    let config = ClientConfig {
        base_url: format!("grpc://{}", address(&srv.url)),
        auth: Auth::None,
        auth_from: String::new(),
        timeout: std::time::Duration::from_secs(5),
        verbose: false,
        tls: Default::default(),
    };
    let a = GrpcClient::new(config.clone()).unwrap();
    let b = GrpcClient::new(config).unwrap();
    let mut mine = a.get_queue("q1").unwrap();
    let mut theirs = b.get_queue("q1").unwrap();
    theirs.labels.insert("team".into(), "ml".into());
    b.send_queue(WriteOp::Update, &theirs).unwrap();
    mine.retry_policies = vec!["ml-training-retries".into()];
    let e = a.send_queue(WriteOp::Update, &mine).unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(
        e.to_string(),
        "queue `q1` was changed by someone else since this command read it; nothing was written"
    );
    // Their change is kept; a read-modify-write on top of it keeps both.
    let client: Box<dyn Client> = Box::new(a);
    client
        .modify_queue("q1", |q| {
            q.retry_policies = vec!["ml-training-retries".into()];
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(
        session.ok(&["get", "q", "q1", "-o", "jsonpath={.labels.team} {.retryPolicies}"]),
        "ml [\"ml-training-retries\"]"
    );
}

#[test]
fn an_answer_over_4_mib_is_refused_by_the_client() {
    let Some(python) = python::python() else { return };
    let double = Double::start(&python, &[]);
    let addr = format!("127.0.0.1:{}", double.port);
    // 48 policies of 100 KB each: one 4.8 MB list.
    py(
        &python,
        r#"
for i in range(48):
    rp.CreateRetryPolicy(pb.RetryPolicy(name="p%02d" % i, retry_limit=1, default_action=1,
        rules=[pb.RetryRule(action=2, on_category="c" * 100000)]))
print("ok")
"#,
        &[&addr],
    );
    let home = temp_home();
    let config = armadactl_config(home.path(), &addr, "    forceNoTls: true\n");
    let out = run(home.path(), &config, &addr, &["get", "rp", "-o", "name"]);
    assert!(
        out.starts_with(
            "exit: 4\n--- stdout\n--- stderr\nerror: cannot list retry policies: unexpected answer to \
             api.RetryPolicyService/GetRetryPolicies from grpc://ADDR: it is larger than the 4 MiB a gRPC message may be (Error, decoded message length too large: found"
        ),
        "{out}"
    );
}

/// `apply -f DIR` over gRPC checks every document before sending any, and lists every one
/// the wire cannot carry (it stopped at the first, after sending those before it, with "N
/// later documents were not sent"). Exit 1, as the refusal of one; a dry run says the same.
#[test]
fn a_batch_over_grpc_lists_every_document_grpc_cannot_carry_and_sends_none() {
    let srv = TestServer::start();
    let addr = address(&srv.url);
    let home = temp_home();
    let grpc = |args: &[&str]| {
        let out = retryctl(home.path())
            .args(["--armada-url", &format!("grpc://{addr}")])
            .args(args)
            .output()
            .unwrap();
        format_output(&out).replace(&addr, "ADDR")
    };
    let refusal = "exit: 3\n--- stdout\n--- stderr\nerror: nothing was sent: 5 of the 7 documents cannot be sent to `grpc://ADDR`:
  testdata/policies/valid/backoff-override.yaml: cannot apply retry policy `backoff-override`: Armada's gRPC API cannot carry these fields of retry policy `backoff-override` (they have no protobuf form): `defaultAction (unset: upstream refuses a policy without one)`, `backoff`, `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].backoff`, `rules[1].onConditions`, `rules[1] (no category: upstream stores only category rules)`
  testdata/policies/valid/container-targeting.yaml: cannot apply retry policy `container-targeting`: Armada's gRPC API cannot carry these fields of retry policy `container-targeting` (they have no protobuf form): `defaultAction (unset: upstream refuses a policy without one)`, `rules[0].containerName`, `rules[0].onExitCodes`, `rules[0] (no category: upstream stores only category rules)`, `rules[1].containerName`, `rules[1].onConditions`, `rules[1] (no category: upstream stores only category rules)`, `rules[2].containerName`, `rules[2].onTerminationMessage`, `rules[2] (no category: upstream stores only category rules)`
  testdata/policies/valid/infra.yaml: cannot apply retry policy `infra`: Armada's gRPC API cannot carry these fields of retry policy `infra` (they have no protobuf form): `defaultAction (unset: upstream refuses a policy without one)`, `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`
  testdata/policies/valid/ml-training-oom.yaml: cannot apply retry policy `ml-training-oom`: Armada's gRPC API cannot carry these fields of retry policy `ml-training-oom` (they have no protobuf form): `defaultAction (unset: upstream refuses a policy without one)`, `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].retryLimit`
  testdata/policies/valid/ml-training.yaml: cannot apply retry policy `ml-training`: Armada's gRPC API cannot carry these fields of retry policy `ml-training` (they have no protobuf form): `backoff`, `antiAffinity`, `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`, `rules[1].onConditions`, `rules[1] (no category: upstream stores only category rules)`, `rules[1].retryLimit`, `rules[2].onExitCodes`, `rules[2] (no category: upstream stores only category rules)`, `rules[3].onFailureCategory (more than one category)`

hint: write it over REST (`--armada-url http://…` of `retryctl serve`, or a context's `armadaRestUrl`), or remove these fields
";
    assert_eq!(grpc(&["apply", "-f", "testdata/policies/valid"]), refusal);
    assert_eq!(grpc(&["apply", "-f", "testdata/policies/valid", "--dry-run"]), refusal);
    // Nothing was sent: not the policy gRPC can carry (upstream-v1beta1.yaml), not the queue.
    assert_eq!(grpc(&["get", "rp", "-o", "name"]), "exit: 0\n--- stdout\n--- stderr\n");
    assert_eq!(grpc(&["get", "q", "-o", "name"]), "exit: 0\n--- stdout\n--- stderr\n");
    // What it can carry goes through.
    assert_eq!(
        grpc(&["apply", "-f", V1BETA1]),
        "exit: 0\n--- stdout\nretrypolicy/ml-training-retries created\n--- stderr\n"
    );
}
