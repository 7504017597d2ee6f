//! The server-facing commands end to end, as a user runs them against a server: every
//! command, both noun spellings, every output format and exit code, the `get -o yaml |
//! update -f -` round trip, and the client commands' first acceptance cases.

use std::path::Path;

use crate::support::server::TestServer;
use crate::support::{exchange, Session};

const VALID: &str = "testdata/policies/valid";

/// The server under test: the real `retryctl serve`, in process, in memory.
fn server() -> TestServer {
    TestServer::start()
}

impl Session {
    /// The policies and queues of the example: infra, ml-training-oom, ml-queue.
    fn seed(&self) {
        self.ok(&[
            "create",
            "-f",
            &format!("{VALID}/infra.yaml"),
            "-f",
            &format!("{VALID}/ml-training-oom.yaml"),
            "-f",
            &format!("{VALID}/ml-queue.yaml"),
        ]);
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn create_every_document_in_order_then_list() {
    let srv = server();
    let s = Session::new(&srv.url);
    insta::assert_snapshot!(
        "create_files",
        s.run(&[
            "create",
            "-f",
            &format!("{VALID}/infra.yaml"),
            &format!("{VALID}/ml-training-oom.yaml"),
            &format!("{VALID}/ml-queue.yaml")
        ])
    );
    insta::assert_snapshot!("get_policies_table", s.run(&["get", "retrypolicies"]));
    insta::assert_snapshot!("get_policies_wide", s.run(&["get", "rp", "-o", "wide"]));
    insta::assert_snapshot!("get_queues_table", s.run(&["get", "queues"]));
    insta::assert_snapshot!("get_queue_wide", s.run(&["get", "q", "ml-queue", "-o", "wide"]));
    insta::assert_snapshot!(
        "get_policy_yaml",
        s.run(&["get", "retry-policy", "infra", "-o", "yaml"])
    );
    insta::assert_snapshot!("get_queue_json", s.run(&["get", "queue", "ml-queue", "-o", "json"]));
    insta::assert_snapshot!("get_policies_name", s.run(&["get", "retry-policies", "-o", "name"]));
}

#[test]
fn every_noun_spelling_works() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.seed();
    for noun in ["retrypolicy", "retry-policy", "retrypolicies", "retry-policies", "rp"] {
        assert_eq!(
            s.ok(&["get", noun, "infra", "-o", "name"]),
            "retrypolicy/infra\n",
            "{noun}"
        );
    }
    for noun in ["queue", "queues", "q"] {
        assert_eq!(
            s.ok(&["get", noun, "ml-queue", "-o", "name"]),
            "queue/ml-queue\n",
            "{noun}"
        );
    }
    for (i, noun) in ["queue", "queues", "q"].iter().enumerate() {
        let name = format!("q{i}");
        assert_eq!(s.ok(&["create", noun, &name]), format!("queue/{name} created\n"));
        assert_eq!(
            s.ok(&["update", noun, &name, "--priority-factor", "2"]),
            format!("queue/{name} configured\n")
        );
        assert_eq!(s.ok(&["delete", noun, &name]), format!("queue/{name} deleted\n"));
    }
    let file = format!("{VALID}/ml-training.yaml");
    for noun in ["retrypolicy", "retry-policy", "retrypolicies", "retry-policies", "rp"] {
        assert_eq!(
            s.ok(&["create", noun, "-f", &file]),
            "retrypolicy/ml-training created\n",
            "{noun}"
        );
        // Nothing differs: `update -f` says so rather than rewriting.
        assert_eq!(
            s.ok(&["update", noun, "-f", &file]),
            "retrypolicy/ml-training unchanged\n",
            "{noun}"
        );
        assert_eq!(
            s.ok(&["delete", noun, "ml-training"]),
            "retrypolicy/ml-training deleted\n",
            "{noun}"
        );
    }
}

#[test]
fn get_yaml_round_trips_through_update_unchanged() {
    let srv = server();
    let s = Session::new(&srv.url);
    for f in [
        "backoff-override",
        "container-targeting",
        "infra",
        "ml-training",
        "ml-training-oom",
        "upstream-v1beta1",
    ] {
        s.ok(&["create", "-f", &format!("{VALID}/{f}.yaml")]);
    }
    s.ok(&["create", "-f", &format!("{VALID}/ml-queue.yaml")]);
    let before_json = s.ok(&["get", "rp", "-o", "json"]);
    let yaml = s.ok(&["get", "rp", "infra", "-o", "yaml"]);
    let out = s.run_stdin(&["update", "-f", "-"], &yaml);
    assert_eq!(out, "exit: 0\n--- stdout\nretrypolicy/infra unchanged\n--- stderr\n");
    // Every policy at once, as one `kind: List`, and the queue.
    let all = s.ok(&["get", "rp", "-o", "yaml"]);
    assert!(all.starts_with("apiVersion: v1\nkind: List\nitems:\n"), "{all}");
    let out = s.run_stdin(&["update", "-f", "-"], &all);
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert_eq!(out.matches(" unchanged\n").count(), 6, "{out}");
    let q = s.ok(&["get", "q", "ml-queue", "-o", "yaml"]);
    assert_eq!(
        s.run_stdin(&["apply", "-f", "-"], &q),
        "exit: 0\n--- stdout\nqueue/ml-queue unchanged\n--- stderr\n"
    );
    assert_eq!(s.ok(&["get", "rp", "-o", "json"]), before_json);
    assert_eq!(s.ok(&["get", "rp", "-o", "yaml"]), all);
    // And apply of the same output changes nothing.
    let out = s.run_stdin(&["apply", "-f", "-"], &all);
    assert_eq!(out.matches(" unchanged\n").count(), 6, "{out}");
}

#[test]
fn create_of_an_existing_name_fails_and_suggests_apply() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.seed();
    insta::assert_snapshot!(
        "create_existing_policy",
        s.run(&[
            "create",
            "-f",
            &format!("{VALID}/infra.yaml"),
            "-f",
            &format!("{VALID}/ml-training.yaml")
        ])
    );
    insta::assert_snapshot!("create_existing_queue", s.run(&["create", "queue", "ml-queue"]));
}

#[test]
fn apply_reports_created_configured_unchanged() {
    let srv = server();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "p.yaml",
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p1}\nspec:\n  retryLimit: 2\n  rules:\n  - {action: Retry, onExitCodes: {operator: In, values: [137]}}\n",
    );
    assert_eq!(
        s.run(&["apply", "-f", &p]),
        "exit: 0\n--- stdout\nretrypolicy/p1 created\n--- stderr\n"
    );
    assert_eq!(
        s.run(&["apply", "-f", &p]),
        "exit: 0\n--- stdout\nretrypolicy/p1 unchanged\n--- stderr\n"
    );
    assert_eq!(s.run(&["diff", "-f", &p]), "exit: 0\n--- stdout\n--- stderr\n");
    let p2 = write(
        dir.path(),
        "p.yaml",
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p1}\nspec:\n  retryLimit: 3\n  rules:\n  - {action: Retry, onExitCodes: {operator: In, values: [137]}}\n",
    );
    insta::assert_snapshot!("diff_differs", s.run(&["diff", "-f", &p2]).replace(&p2, "FILE"));
    assert_eq!(
        s.run(&["apply", "-f", &p2, "--dry-run=server"]),
        "exit: 0\n--- stdout\nretrypolicy/p1 configured (dry run)\n--- stderr\nnote: the server has no dry-run support (the Armada REST API has none); fell back to --dry-run=client: nothing written\n"
    );
    assert_eq!(
        s.run(&["apply", "-f", &p2]),
        "exit: 0\n--- stdout\nretrypolicy/p1 configured\n--- stderr\n"
    );
    assert_eq!(s.run(&["diff", "-f", &p2]), "exit: 0\n--- stdout\n--- stderr\n");
    let missing = write(
        dir.path(),
        "q.yaml",
        "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: newq\npriorityFactor: 1\n",
    );
    insta::assert_snapshot!(
        "diff_missing",
        s.run(&["diff", "-f", &missing]).replace(&missing, "FILE")
    );
}

#[test]
fn update_queue_is_read_modify_write() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.seed();
    s.ok(&["create", "-f", &format!("{VALID}/ml-training.yaml")]);
    let before = s.ok(&["get", "q", "ml-queue", "-o", "yaml"]);
    assert_eq!(
        s.run(&["update", "queue", "ml-queue", "--add-retry-policy", "ml-training"]),
        "exit: 0\n--- stdout\nqueue/ml-queue configured\n--- stderr\n"
    );
    let after = s.ok(&["get", "q", "ml-queue", "-o", "yaml"]);
    assert_eq!(
        after,
        before.replace("- ml-training-oom\n", "- ml-training-oom\n- ml-training\n"),
        "only the list grew"
    );
    assert_eq!(
        s.ok(&[
            "update",
            "q",
            "ml-queue",
            "--remove-retry-policy",
            "infra",
            "--add-retry-policy",
            "ml-training"
        ]),
        "queue/ml-queue configured\n"
    );
    assert!(s
        .ok(&["get", "q", "ml-queue", "-o", "yaml"])
        .contains("retryPolicies:\n- ml-training-oom\n- ml-training\n"));
    assert_eq!(
        s.ok(&[
            "update",
            "q",
            "ml-queue",
            "--retry-policy",
            "ml-training,infra",
            "-l",
            "team=research"
        ]),
        "queue/ml-queue configured\n"
    );
    let now = s.ok(&["get", "q", "ml-queue", "-o", "yaml"]);
    assert!(now.contains("labels:\n  team: research\n"), "{now}");
    assert!(now.contains("retryPolicies:\n- ml-training\n- infra\n"), "{now}");
    assert!(now.contains("userOwners:\n- alice\n"), "{now}");
    assert_eq!(
        s.ok(&["update", "q", "ml-queue", "--add-retry-policy", "infra"]),
        "queue/ml-queue unchanged\n"
    );
    insta::assert_snapshot!(
        "update_queue_remove_unattached",
        s.run(&["update", "q", "ml-queue", "--remove-retry-policy", "nope"])
    );
    insta::assert_snapshot!("update_queue_missing", s.run(&["update", "q", "ghost", "--cordon"]));
    insta::assert_snapshot!(
        "update_queue_unknown_policy",
        s.run(&["update", "q", "ml-queue", "--add-retry-policy", "ghost"])
    );
}

/// `delete -f DIR` of resources that are not there: every one named, the hint once (issue
/// 25: it was printed after each of the seven).
#[test]
fn delete_of_a_directory_of_missing_resources_hints_once() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.ok(&["create", "-f", &format!("{VALID}/infra.yaml")]);
    assert_eq!(
        s.run(&["delete", "-f", VALID]),
        "exit: 1
--- stdout
retrypolicy/infra deleted
--- stderr
error: cannot delete queue `ml-queue`: it does not exist

hint: pass `--ignore-not-found` to skip missing names
error: cannot delete retry policy `backoff-override`: it does not exist
error: cannot delete retry policy `container-targeting`: it does not exist
error: cannot delete retry policy `ml-training-oom`: it does not exist
error: cannot delete retry policy `ml-training`: it does not exist
error: cannot delete retry policy `ml-training-retries`: it does not exist
"
    );
}

#[test]
fn deleting_an_attached_policy_is_refused_unless_detach() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.seed();
    s.ok(&["create", "queue", "other", "--retry-policy", "infra"]);
    let before = s.ok(&["get", "q", "-o", "yaml"]);
    insta::assert_snapshot!("delete_attached", s.run(&["delete", "rp", "infra"]));
    assert_eq!(s.ok(&["get", "q", "-o", "yaml"]), before, "nothing changed");
    assert_eq!(s.ok(&["get", "rp", "infra", "-o", "name"]), "retrypolicy/infra\n");
    insta::assert_snapshot!("delete_detach", s.run(&["delete", "rp", "infra", "--detach"]));
    let after = s.ok(&["get", "q", "-o", "wide"]);
    assert!(!after.contains("infra"), "{after}");
    assert!(after.contains("ml-training-oom"), "{after}");
    insta::assert_snapshot!("delete_missing", s.run(&["delete", "rp", "infra"]));
    assert_eq!(
        s.run(&["delete", "rp", "infra", "--ignore-not-found"]),
        "exit: 0\n--- stdout\n--- stderr\n"
    );
    assert_eq!(
        s.run(&["delete", "q", "nope", "--ignore-not-found"]),
        "exit: 0\n--- stdout\n--- stderr\n"
    );
    let out = s.run(&["delete", "q", "nope"]);
    assert!(out.starts_with("exit: 1\n"), "{out}");
}

#[test]
fn dry_run_client_sends_nothing_and_invalid_input_sends_nothing() {
    let srv = server();
    let s = Session::new(&srv.url);
    let out = s.run(&["create", "-f", &format!("{VALID}/infra.yaml"), "--dry-run"]);
    assert_eq!(
        out,
        "exit: 0\n--- stdout\nretrypolicy/infra created (dry run)\n--- stderr\n"
    );
    // The real run would be refused (`a`, `b` do not exist), so the dry run is too.
    let out = s.run(&["create", "queue", "q1", "--dry-run=client", "--retry-policy", "a,b"]);
    assert!(out.starts_with("exit: 3\n--- stdout\n--- stderr\nerror: nothing was sent: the command line: queue `q1` attaches retry policies `a`, `b`"), "{out}");
    let out = s.run(&["create", "queue", "q1", "--dry-run=client"]);
    assert_eq!(out, "exit: 0\n--- stdout\nqueue/q1 created (dry run)\n--- stderr\n");
    let nothing = "exit: 0\n--- stdout\n--- stderr\nno retry policies found\n";
    assert_eq!(s.run(&["get", "rp"]), nothing);
    assert_eq!(
        s.run(&["get", "q"]),
        "exit: 0\n--- stdout\n--- stderr\nno queues found\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.yaml",
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: ok}\nspec: {retryLimit: 1}\n---\napiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: bad}\nspec:\n  rules:\n  - {action: Retri, onExitCodes: {operator: In, values: [0]}}\n",
    );
    insta::assert_snapshot!("create_invalid", s.run(&["create", "-f", &bad]).replace(&bad, "FILE"));
    let out = s.run(&["create", "queue", "q1", "--priority-factor", "0.5", "-l", "=x"]);
    insta::assert_snapshot!("create_queue_invalid", out);
    assert_eq!(s.run(&["get", "rp"]), nothing);
}

#[test]
fn create_queue_from_flags() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.seed();
    let out = s.run(&[
        "create",
        "queue",
        "gpu",
        "--retry-policy",
        "ml-training-oom,infra",
        "--priority-factor",
        "2.5",
        "--owner",
        "bob",
        "--group-owner",
        "ml,ops",
        "-l",
        "team=ml",
        "-l",
        "tier=gold",
        "--cordon",
    ]);
    assert_eq!(out, "exit: 0\n--- stdout\nqueue/gpu created\n--- stderr\n");
    insta::assert_snapshot!("create_queue_flags_yaml", s.run(&["get", "q", "gpu", "-o", "yaml"]));
    insta::assert_snapshot!(
        "create_queue_unknown_policy",
        s.run(&["create", "q", "q2", "--retry-policy", "ghost,infra"])
    );
}

#[test]
fn version_reports_the_dialect() {
    let srv = server();
    let s = Session::new(&srv.url);
    let out = s.run(&["version"]);
    assert_eq!(
        out,
        format!(
            "exit: 0\n--- stdout\nclient: retryctl {}\nserver: URL (dialect: v1)\n--- stderr\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let out = s.run(&["version", "--client"]);
    assert_eq!(
        out,
        format!(
            "exit: 0\n--- stdout\nclient: retryctl {}\n--- stderr\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

#[test]
fn empty_lists_and_v1beta1_output() {
    let srv = server();
    let s = Session::new(&srv.url);
    assert_eq!(
        s.run(&["get", "rp"]),
        "exit: 0\n--- stdout\n--- stderr\nno retry policies found\n"
    );
    assert_eq!(
        s.run(&["get", "q"]),
        "exit: 0\n--- stdout\n--- stderr\nno queues found\n"
    );
    s.ok(&[
        "create",
        "-f",
        &format!("{VALID}/upstream-v1beta1.yaml"),
        "-f",
        &format!("{VALID}/infra.yaml"),
    ]);
    insta::assert_snapshot!(
        "get_v1beta1",
        s.run(&[
            "get",
            "rp",
            "ml-training-retries",
            "-o",
            "yaml",
            "--api-version",
            "armadaproject.io/v1beta1"
        ])
    );
    insta::assert_snapshot!(
        "get_v1beta1_misfit",
        s.run(&[
            "get",
            "rp",
            "infra",
            "-o",
            "yaml",
            "--api-version",
            "armadaproject.io/v1beta1"
        ])
    );
}

#[test]
fn auth_against_a_server_that_requires_it() {
    let srv = TestServer::start_with_auth(&["alice:pw"], &["tok-1"]);
    let s = Session::new(&srv.url);
    let out = s.run(&["get", "rp"]);
    assert!(
        out.starts_with(
            "exit: 5\n--- stdout\n--- stderr\nerror: cannot list retry policies: the server answered 401 Unauthorized"
        ),
        "{out}"
    );
    assert!(out.contains("hint: give credentials"), "{out}");
    let out = exchange(s.cmd().env("ARMADA_TOKEN", "tok-1").args(["get", "rp"]));
    assert!(out.starts_with("exit: 0\n"), "{out}");
    let out = exchange(s.cmd().env("ARMADA_TOKEN", "wrong").args(["get", "rp"]));
    assert!(out.starts_with("exit: 5\n"), "{out}");
    std::fs::write(
        s.home.path().join(".armadactl.yaml"),
        "currentContext: a\ncontexts:\n  a:\n    basicAuth: {username: alice, password: pw}\n",
    )
    .unwrap();
    assert_eq!(s.ok(&["create", "queue", "q1"]), "queue/q1 created\n");
    assert_eq!(s.ok(&["get", "q", "-o", "name"]), "queue/q1\n");
}

#[test]
fn remaining_formats_json_round_trip_and_usage_errors() {
    let srv = server();
    let s = Session::new(&srv.url);
    s.seed();
    let json = s.ok(&["get", "rp", "infra", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["metadata"]["name"], "infra");
    assert_eq!(v["spec"]["retryLimit"], 10);
    assert_eq!(
        s.run_stdin(&["apply", "-f", "-"], &json),
        "exit: 0\n--- stdout\nretrypolicy/infra unchanged\n--- stderr\n"
    );
    let all: serde_json::Value = serde_json::from_str(&s.ok(&["get", "rp", "-o", "json"])).unwrap();
    assert_eq!(all["kind"], "List");
    assert_eq!(all["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(s.ok(&["get", "queues", "-o", "name"]), "queue/ml-queue\n");
    assert_eq!(s.ok(&["get", "q", "ml-queue", "-o", "table"]), s.ok(&["get", "q"]));
    assert_eq!(
        s.run(&["get", "rp", "Bad_Name"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid retry policy name `Bad_Name`: character `B` at position 1 is not allowed (use lowercase); use lowercase letters, digits and `-`\n"
    );
    let out = s.run(&["--timeout", "soon", "get", "rp"]);
    assert!(
        out.starts_with("exit: 2\n--- stdout\n--- stderr\nerror: invalid `--timeout` `soon`: "),
        "{out}"
    );
    let out = s.run(&["get", "rp", "-o", "xml"]);
    assert!(out.starts_with("exit: 2\n"), "{out}");
    let out = s.run(&["create", "queue", "q9", "-l", "team"]);
    assert_eq!(
        out,
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid label `team`: expected KEY=VALUE\n"
    );
}

/// Through the CLI: a Queue where a policy is expected is refused by its
/// `kind` (not by field errors), and nothing reaches the server.
#[test]
fn create_retrypolicy_refuses_a_queue_document_by_kind() {
    let server = server();
    let s = Session::new(&server.url);
    let out = s.run(&["create", "retrypolicy", "-f", "testdata/policies/valid/ml-queue.yaml"]);
    assert_eq!(
        out,
        "exit: 3\n--- stdout\n--- stderr\ntestdata/policies/valid/ml-queue.yaml\n  error: 3:7 kind: expected a `RetryPolicy` document here, found kind `Queue`\nchecked 1 document in 1 file: 0 valid, 1 invalid; 1 error, 0 warnings\nerror: nothing was sent: 1 error in the input\n"
    );
    let queues = s.run(&["get", "queues", "-o", "name"]);
    assert!(queues.starts_with("exit: 0\n--- stdout\n--- stderr\n"), "{queues}");
}
