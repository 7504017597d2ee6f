//! The cluster's stored state (SPEC §5.4) in a real PostgreSQL built from Lookout's
//! migrations (support/pg.rs), with rows written as upstream's server writes them: the
//! `definition` bytes come from upstream's generated Python classes (PyPI `armada-client`,
//! support/python.rs), never from our encoder.
//!
//! - `get --lookout-db`: every form and format, printed exactly as `retryctl serve`
//!   prints the same resources; attachments in `ordinal` order; a corrupt row; missing
//!   tables (4), a wrong password (5).
//! - `simulate --lookout-db`: the same counts as `history`, the same results as
//!   `simulate --history` of `history`'s output; `--baseline-from-cluster`; flag misuse (2).

use std::path::Path;
use std::process::Output;

use crate::support::pg::{self, Db};
use crate::support::server::TestServer;
use crate::support::{format_output, python, retryctl, temp_home, Session};

/// Upstream's classes write the rows: `TABLE NAME HEX` lines. Policy `zeta-first` comes
/// first in `ml`'s attachments and last by name; `ml`'s own `retry_policies` field says
/// `alpha` only, which upstream does not read (the attachments table is the truth).
const ROWS_PY: &str = r#"
from armada_client.armada import submit_pb2 as s
RETRY, FAIL = s.RETRY_ACTION_RETRY, s.RETRY_ACTION_FAIL
def out(table, m):
    print(table, m.name, m.SerializeToString().hex())
out("retry_policy", s.RetryPolicy(name="zeta-first", retry_limit=3, default_action=FAIL, rules=[
    s.RetryRule(action=FAIL, on_category="user-error"),
    s.RetryRule(action=RETRY, on_category="oom", mutate=s.RetryMutation(
        resources=s.RetryResourceMutation(memory=s.RetryResourceBump(factor=1.5)))),
    s.RetryRule(action=RETRY, on_category="gpu", on_subcategory="transient", mutate=s.RetryMutation(
        affinity=s.RetryAffinityMutation(avoid_same_node=True))),
]))
out("retry_policy", s.RetryPolicy(name="alpha", retry_limit=1, default_action=RETRY, rules=[
    s.RetryRule(action=FAIL, on_category="preempted"),
]))
out("queue", s.Queue(name="ml", priority_factor=2.0, user_owners=["alice"], group_owners=["ml-team"],
    labels={"team": "ml"}, retry_policies=["alpha"]))
out("queue", s.Queue(name="batch", priority_factor=1.0, cordoned=True))
"#;

/// A Lookout database with upstream's rows: policies `alpha`, `zeta-first`; queues `batch`
/// (no policy), `ml` (`zeta-first`, then `alpha`, by `ordinal`).
fn cluster_db(test: &str) -> Option<Db> {
    let py = python::python()?;
    let mut db = pg::lookout_db(test)?;
    let rows = python::run(&py, ROWS_PY, &[]);
    for line in rows.lines() {
        let mut parts = line.split(' ');
        let (table, name, hex) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        db.client
            .execute(
                &format!("INSERT INTO {table} (name, definition) VALUES ($1, decode($2, 'hex'))"),
                &[&name, &hex],
            )
            .unwrap();
    }
    db.client
        .batch_execute(
            "INSERT INTO queue_retry_policy (queue_name, policy_name, ordinal) VALUES \
             ('ml', 'alpha', 1), ('ml', 'zeta-first', 0)",
        )
        .unwrap();
    Some(db)
}

fn get(home: &Path, db: &Db, args: &[&str]) -> Output {
    retryctl(home)
        .arg("get")
        .args(args)
        .args(["--lookout-db", &db.dsn])
        .output()
        .unwrap()
}

/// The same resources in `retryctl serve`, created through its API, as a user would.
const SAME_ON_A_SERVER: &str = "\
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: alpha
retryLimit: 1
defaultAction: Retry
rules:
  - {action: Fail, onCategory: preempted}
---
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: zeta-first
retryLimit: 3
defaultAction: Fail
rules:
  - {action: Fail, onCategory: user-error}
  - {action: Retry, onCategory: oom, mutate: {resources: {memory: {factor: 1.5}}}}
  - {action: Retry, onCategory: gpu, onSubcategory: transient, mutate: {affinity: {avoidSameNode: true}}}
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: ml
priorityFactor: 2
userOwners: [alice]
groupOwners: [ml-team]
labels: {team: ml}
retryPolicies: [zeta-first, alpha]
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: batch
priorityFactor: 1
cordoned: true
";

#[test]
fn get_prints_what_the_cluster_stores_as_a_server_would() {
    let Some(db) = cluster_db("get_forms") else { return };
    let server = TestServer::start();
    let session = Session::new(&server.url);
    let file = session.home.path().join("same.yaml");
    std::fs::write(&file, SAME_ON_A_SERVER).unwrap();
    session.ok(&["apply", "-f", file.to_str().unwrap()]);
    let forms: &[&[&str]] = &[
        &["retrypolicies"],
        &["retrypolicy", "zeta-first"],
        &["rp", "alpha", "zeta-first"],
        &["queues"],
        &["queue", "ml"],
        &["q", "batch"],
        &["retrypolicy/alpha", "queue/ml"],
    ];
    let mut shown = String::new();
    for form in forms {
        for format in ["table", "wide", "yaml", "json", "name"] {
            let mut args = form.to_vec();
            args.extend(["-o", format]);
            let out = get(session.home.path(), &db, &args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", format_output(&out));
            assert!(out.stderr.is_empty(), "{args:?}: {}", format_output(&out));
            // Byte for byte what the server prints for the same resources.
            let mut get = vec!["get"];
            get.extend(&args);
            assert_eq!(String::from_utf8_lossy(&out.stdout), session.ok(&get), "{args:?}");
            if *form == ["retrypolicies"] || *form == ["queues"] || format == "yaml" && form.len() == 2 {
                shown.push_str(&format!(
                    "$ get {}\n{}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
        }
    }
    // v1beta1, upstream's own layout, as from a server too.
    let args = [
        "rp",
        "zeta-first",
        "-o",
        "yaml",
        "--api-version",
        "armadaproject.io/v1beta1",
    ];
    let out = get(session.home.path(), &db, &args);
    let mut server_get = vec!["get"];
    server_get.extend(args);
    assert_eq!(String::from_utf8_lossy(&out.stdout), session.ok(&server_get));
    shown.push_str(&format!(
        "$ get {}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout)
    ));
    insta::assert_snapshot!(shown);
}

#[test]
fn attachments_come_in_ordinal_order_not_from_the_queue_definition() {
    let Some(db) = cluster_db("get_ordinal") else { return };
    let home = temp_home();
    let out = get(home.path(), &db, &["queue", "ml", "-o", "jsonpath={.retryPolicies}"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), r#"["zeta-first","alpha"]"#);
    let out = get(home.path(), &db, &["queues"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "NAME    PRIORITY FACTOR   CORDONED   RETRY POLICIES\n\
         batch   1                 true       -\n\
         ml      2                 false      zeta-first,alpha\n"
    );
}

#[test]
fn a_corrupt_definition_is_named_and_the_other_rows_still_print() {
    let Some(mut db) = cluster_db("get_corrupt") else {
        return;
    };
    db.client
        .batch_execute(
            "INSERT INTO retry_policy (name, definition) VALUES ('broken', '\\xffff'::bytea); \
             INSERT INTO queue (name, definition) VALUES ('odd', '\\x0a'::bytea);",
        )
        .unwrap();
    let home = temp_home();
    let out = get(home.path(), &db, &["retrypolicies", "-o", "name"]);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 1
    --- stdout
    retrypolicy/alpha
    retrypolicy/zeta-first
    --- stderr
    error: table `retry_policy` row `broken`: column `definition`: not an `api.RetryPolicy` message (failed to decode Protobuf message: invalid varint)
    ");
    let out = get(home.path(), &db, &["queues", "-o", "name"]);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 1
    --- stdout
    queue/batch
    queue/ml
    --- stderr
    error: table `queue` row `odd`: column `definition`: not an `api.Queue` message (failed to decode Protobuf message: Queue.name: invalid varint)
    ");
    // By name: the bad row's error, not "not found"; the good one still printed.
    let out = get(home.path(), &db, &["rp", "broken", "alpha", "-o", "name"]);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 1
    --- stdout
    retrypolicy/alpha
    --- stderr
    error: table `retry_policy` row `broken`: column `definition`: not an `api.RetryPolicy` message (failed to decode Protobuf message: invalid varint)
    ");
}

#[test]
fn a_missing_name_is_the_servers_error() {
    let Some(db) = cluster_db("get_missing") else { return };
    let server = TestServer::start();
    let session = Session::new(&server.url);
    let file = session.home.path().join("same.yaml");
    std::fs::write(&file, SAME_ON_A_SERVER).unwrap();
    session.ok(&["apply", "-f", file.to_str().unwrap()]);
    for args in [
        &["rp", "nope"][..],
        &["queue", "nope", "ml"],
        &["retrypolicy/nope", "queue/gone"],
    ] {
        let from_db = get(session.home.path(), &db, args);
        let mut server_args = vec!["get"];
        server_args.extend(args);
        let from_server = session.cmd().args(&server_args).output().unwrap();
        assert_eq!(from_db.status.code(), Some(1), "{args:?}");
        assert_eq!(format_output(&from_db), format_output(&from_server), "{args:?}");
    }
    let out = get(session.home.path(), &db, &["rp", "nope"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: retry policy `nope` not found\n\nhint: list the existing ones with `retryctl get retrypolicies`\n"
    );
}

#[test]
fn missing_tables_exit_4_naming_them_and_a_wrong_password_5() {
    let Some(mut db) = pg::lookout_db("get_no035") else {
        return;
    };
    // A Lookout database from before migration 035.
    db.client
        .batch_execute("DROP TABLE queue_retry_policy; DROP TABLE retry_policy")
        .unwrap();
    let home = temp_home();
    let masked = db.dsn.replace(pg::PASSWORD, "***");
    let out = get(home.path(), &db, &["retrypolicies"]);
    assert_eq!(
        format_output(&out),
        format!(
            "exit: 4\n--- stdout\n--- stderr\nerror: database `{masked}` has no tables `retry_policy`, `queue_retry_policy`: \
             the Lookout migrations that create them have not run there (`035_create_retry_policy.sql`)\n\n\
             hint: point `--lookout-db` at the database of an Armada whose server stores retry policies (run Lookout's migrations: `lookout --migrateDatabase`)\n"
        )
    );
    db.client.batch_execute("DROP TABLE queue CASCADE").unwrap();
    let out = get(home.path(), &db, &["queues"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!(
            "error: database `{masked}` has no tables `queue`, `retry_policy`, `queue_retry_policy`: \
             the Lookout migrations that create them have not run there (`007_queue.sql`, `035_create_retry_policy.sql`)\n"
        )),
        "{}",
        format_output(&out)
    );
    // Not a Lookout database at all: said as `history` says it.
    let Some(empty) = pg::empty_db("get_empty") else { return };
    let out = get(home.path(), &empty, &["queues"]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no table `job`: it is not a Lookout database"));
    // Wrong password: 5, never printed.
    let wrong = db.dsn.replace(pg::PASSWORD, "wrong-pass");
    let out = retryctl(home.path())
        .args(["get", "rp", "--lookout-db", &wrong])
        .output()
        .unwrap();
    assert_eq!(
        format_output(&out),
        format!(
            "exit: 5\n--- stdout\n--- stderr\nerror: authentication to `{masked}` failed: password authentication failed for user \"lookout\"\n"
        )
    );
}
