//! The cluster's stored state (docs/lookout.md) in a real PostgreSQL built from Lookout's
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

use crate::support::pg::{self, export_week, Db, WINDOW};
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

/// Inserts the `TABLE NAME HEX` lines a script printed as `(name, definition)` rows.
fn insert_rows(db: &mut Db, rows: &str) {
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
}

/// A Lookout database with upstream's rows: policies `alpha`, `zeta-first`; queues `batch`
/// (no policy), `ml` (`zeta-first`, then `alpha`, by `ordinal`).
fn cluster_db(test: &str) -> Option<Db> {
    let py = python::python()?;
    let mut db = pg::lookout_db(test)?;
    insert_rows(&mut db, &python::run(&py, ROWS_PY, &[]));
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

/// `retryctl serve --dialect upstream` (the cluster's server is today's Armada) holding
/// [`SAME_ON_A_SERVER`], and a user of it.
fn same_on_a_server() -> (TestServer, Session) {
    let server = TestServer::start_config(retryctl::server::Config {
        dialect: retryctl::wire::Dialect::Upstream,
        ..retryctl::server::Config::new("127.0.0.1:0", retryctl::server::Location::InMemory)
    });
    let session = Session::new(&server.url);
    let file = session.home.path().join("same.yaml");
    std::fs::write(&file, SAME_ON_A_SERVER).unwrap();
    session.ok(&["apply", "-f", file.to_str().unwrap()]);
    (server, session)
}

#[test]
fn get_prints_what_the_cluster_stores_as_a_server_would() {
    let Some(db) = cluster_db("get_forms") else { return };
    let (_server, session) = same_on_a_server();
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
    // The design dialect when asked for, as from a server too.
    let args = ["rp", "zeta-first", "-o", "yaml", "--api-version", "armadaproject.io/v1"];
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

/// A rule that carries field 100, which the contract does not define (as a newer Armada
/// would write a matcher retryctl does not know): upstream's classes keep the unknown field
/// when they parse it and write it back.
const NEWER_PY: &str = r#"
from armada_client.armada import submit_pb2 as s
rule = s.RetryRule(action=s.RETRY_ACTION_RETRY, on_category="oom").SerializeToString() + bytes([0xa0, 0x06, 0x01])
p = s.RetryPolicy(name="newer", retry_limit=2, default_action=s.RETRY_ACTION_FAIL)
p.rules.add().MergeFromString(rule)
print("retry_policy", p.name, p.SerializeToString().hex())
"#;

/// Appends field 99 (a varint, 1), which the contract does not define, to a row's definition.
fn append_field_99(table: &str, name: &str) -> String {
    format!("UPDATE {table} SET definition = definition || '\\x980601'::bytea WHERE name = '{name}'")
}

#[test]
fn fields_a_newer_armada_wrote_are_named_never_dropped() {
    let Some(mut db) = cluster_db("get_newer") else { return };
    let py = python::python().unwrap();
    insert_rows(&mut db, &python::run(&py, NEWER_PY, &[]));
    // Field 99 (a varint) at the end of queue `ml`'s definition.
    db.client.batch_execute(&append_field_99("queue", "ml")).unwrap();
    let home = temp_home();
    // A rule read without its unknown matcher would retry more than the cluster does: the
    // policy is a bad row, not a wider policy.
    let out = get(home.path(), &db, &["retrypolicies", "-o", "name"]);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 1
    --- stdout
    retrypolicy/alpha
    retrypolicy/zeta-first
    --- stderr
    error: table `retry_policy` row `newer`: column `definition`: has fields not in retryctl's copy of Armada's API (upstream 207cc9e; a newer Armada may have written them): unknown field number `100` of api.RetryRule at rules[0]; a policy read without them could decide differently from the cluster's
    ");
    // A queue: named, as the fields the model does not hold are.
    let out = get(home.path(), &db, &["queues", "-o", "name"]);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 1
    --- stdout
    queue/batch
    --- stderr
    error: table `queue` row `ml`: column `definition`: has fields not in retryctl's copy of Armada's API (upstream 207cc9e; a newer Armada may have written them): unknown field number `99` of api.Queue
    ");
}

#[test]
fn a_missing_name_is_the_servers_error() {
    let Some(db) = cluster_db("get_missing") else { return };
    let (_server, session) = same_on_a_server();
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
        // The same answer as the server's, but for the hint, which lists from the database.
        assert_eq!(
            format_output(&from_db),
            format_output(&from_server)
                .replace(
                    "retryctl get retrypolicies`",
                    "retryctl get retrypolicies --lookout-db DSN`"
                )
                .replace("retryctl get queues`", "retryctl get queues --lookout-db DSN`"),
            "{args:?}"
        );
    }
    let out = get(session.home.path(), &db, &["rp", "nope"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: retry policy `nope` not found\n\nhint: list the existing ones with `retryctl get retrypolicies --lookout-db DSN`\n"
    );
}

/// What a command that reads the cluster's tables says of a database from before migration
/// 035 (exit 4), `masked` its DSN as shown.
fn without_035(masked: &str) -> String {
    format!(
        "exit: 4\n--- stdout\n--- stderr\nerror: database `{masked}` has no tables `retry_policy`, `queue_retry_policy`: \
         the Lookout migrations that create them have not run there (`035_create_retry_policy.sql`)\n\n\
         hint: point `--lookout-db` at the database of an Armada whose server stores retry policies (run Lookout's migrations: `lookout --migrateDatabase`)\n"
    )
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
    let masked = db.masked();
    let out = get(home.path(), &db, &["retrypolicies"]);
    assert_eq!(format_output(&out), without_035(&masked));
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

// ---------------------------------------------------------------------------------------
// simulate --lookout-db

/// The history fixture (testdata/lookout/lookout.sql) plus two hostile jobs in queue `ml`:
/// `ml-zy`'s own row does not read (annotations not an object: the job is left out),
/// `ml-zz`'s second run finished at `infinity` (that run is left out).
fn history_db(test: &str) -> Option<Db> {
    let mut db = pg::fixture_db(test)?;
    let job = |id: &str, annotations: &str| {
        format!(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, \
             last_transition_time, last_transition_time_seconds, annotations) VALUES ('{id}', 'ml', 'o', 'train', 1, 1024, 0, 0, 1, \
             '2026-11-17 09:00:00', 4, now(), 0, {annotations});\n"
        )
    };
    let run = |job: &str, run: &str, minute: u32, finished: &str| {
        format!(
            "INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code) \
             VALUES ('{run}', '{job}', 'c', 'node-{run}', '2026-11-17 10:{minute:02}:00', '2026-11-17 10:{minute:02}:00', \
             '2026-11-17 10:{minute:02}:01', {finished}, 4, 1);\n"
        )
    };
    let mut sql = job("ml-zy", "'[1]'::jsonb");
    sql += &run("ml-zy", "zy-a", 1, "'2026-11-17 10:01:30'");
    sql += &job("ml-zz", "'{}'::jsonb");
    sql += &run("ml-zz", "zz-a", 1, "'2026-11-17 10:01:30'");
    sql += &run("ml-zz", "zz-b", 2, "'infinity'");
    db.client.batch_execute(&sql).unwrap();
    Some(db)
}

fn simulate(home: &Path, args: &[&str]) -> Output {
    retryctl(home).arg("simulate").args(args).output().unwrap()
}

#[test]
fn simulate_from_the_database_replays_exactly_what_history_exports() {
    let Some(db) = history_db("sim_same") else { return };
    let home = temp_home();
    let (file, history_err) = export_week(home.path(), &db);
    // The left-out rows and the counts, as `history` prints them.
    assert!(
        history_err.contains("warning: job `ml-zy`: column annotations:"),
        "{history_err}"
    );
    assert!(
        history_err.contains("warning: job `ml-zz` run `zz-b`: column finished: `infinity` is not a time"),
        "{history_err}"
    );
    assert!(
        history_err.contains("history: exported 18 jobs and 29 runs of queue `ml`"),
        "{history_err}"
    );
    let file = file.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["-f", "testdata/lookout/new", "-o", "jsonl"],
        &["-f", "testdata/lookout/new", "-o", "json"],
        &["-f", "testdata/lookout/new", "-o", "yaml"],
        &["-f", "testdata/lookout/new"],
        &["-f", "testdata/lookout/new", "-o", "markdown"],
        &[
            "-f",
            "testdata/lookout/new",
            "--baseline",
            "testdata/lookout/old",
            "-o",
            "json",
        ],
        &["-f", "testdata/lookout/new", "--baseline", "testdata/lookout/old"],
        &[
            "-f",
            "testdata/lookout/upstream-new",
            "--baseline",
            "testdata/lookout/upstream-old",
            "--engine",
            "upstream",
            "-o",
            "html",
        ],
    ];
    for case in cases {
        let mut from_file = case.to_vec();
        from_file.extend(["--history", file]);
        let from_file = simulate(home.path(), &from_file);
        let mut from_db = case.to_vec();
        from_db.extend(["--lookout-db", db.dsn.as_str(), "--queue", "ml"]);
        from_db.extend(WINDOW);
        let from_db = simulate(home.path(), &from_db);
        assert_eq!(
            from_db.status.code(),
            from_file.status.code(),
            "{case:?}: {}",
            format_output(&from_db)
        );
        // Byte-identical results.
        assert!(
            from_db.stdout == from_file.stdout,
            "{case:?}:\n{}\n---\n{}",
            format_output(&from_db),
            format_output(&from_file)
        );
        // stderr: the replay's own lines as from the file, and `history`'s, every one.
        let err = String::from_utf8(from_db.stderr).unwrap();
        let file_err = String::from_utf8(from_file.stderr).unwrap();
        for line in file_err.lines().chain(history_err.lines()) {
            assert!(err.contains(line), "{case:?}: `{line}` missing from\n{err}");
        }
        assert_eq!(
            err.lines().count(),
            file_err.lines().count() + history_err.lines().count(),
            "{case:?}:\n{err}"
        );
    }
    // --strict: the left-out rows make it exit 1 after the replay, as `history --strict`.
    let mut args = vec![
        "-f",
        "testdata/lookout/new",
        "-o",
        "jsonl",
        "--strict",
        "--lookout-db",
        &db.dsn,
        "--queue",
        "ml",
    ];
    args.extend(WINDOW);
    assert_eq!(simulate(home.path(), &args).status.code(), Some(1));
    // Without them (--jobset nightly: ml-19, ml-20), exit 0 under --strict too; the
    // replay's summary, then `history`'s.
    let mut args = vec![
        "-f",
        "testdata/lookout/new",
        "--strict",
        "--lookout-db",
        &db.dsn,
        "--queue",
        "ml",
    ];
    args.extend(["--jobset", "nightly"]);
    args.extend(WINDOW);
    let out = simulate(home.path(), &args);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 0
    --- stdout
    summary
      jobs:      2 (4 runs)
      outcomes:  1 succeeded, 1 failed, 0 cancelled, 0 pending
      retries:   2 granted, 0s total delay added
      compute:   31m recorded (1.0 GPU-hours, 4.1 CPU-hours)
      POLICY/RULE      RETRIES GRANTED   PERMANENT FAILURES
      (fail_default)   0                 1
      ml-new/1         2                 0
      decisions: retry 2, fail_default 1
      contention: retries while others waited (what coincided in the record's times; the queue another policy would have made is not modelled)
        recorded: retries ran 0.67 GPU-h; 0 (0.0%) while other jobs' GPUs waited; overlap with waiting demand 0 GPU-h (0.0% of the 0.06 GPU-h that waited)
                  retries ran 2.7 CPU-h; 0 (0.0%) while other jobs' CPUs waited; overlap with waiting demand 0 CPU-h (0.0% of the 0.24 CPU-h that waited)
        replayed: retries ran 0.67 GPU-h; 0 (0.0%) while other jobs' GPUs waited; overlap with waiting demand 0 GPU-h (0.0% of the 0.06 GPU-h that waited)
                  retries ran 2.7 CPU-h; 0 (0.0%) while other jobs' CPUs waited; overlap with waiting demand 0 CPU-h (0.0% of the 0.24 CPU-h that waited)
      expectations: all met
    --- stderr
    history: exported 2 jobs and 4 runs of queue `ml`
    what Lookout could not tell (counts, nothing guessed):
             1  failed or preempted runs without a failure category
             3  exit codes are the first non-zero container's only (one unnamed container written)
             2  error texts kept whole: a hint the executor appended cannot be told from them without the deployed categorizer
    ");
}

#[test]
fn simulate_from_a_database_exits_4_or_5_as_history_does() {
    let Some(mut db) = pg::lookout_db("sim_errors") else {
        return;
    };
    let home = temp_home();
    let masked = db.masked();
    let run = |dsn: &str, extra: &[&str]| {
        let mut args = vec!["-f", "testdata/lookout/new", "--lookout-db", dsn, "--queue", "ml"];
        args.extend(extra);
        simulate(home.path(), &args)
    };
    // The history's tables are there, 035's are not: only --baseline-from-cluster needs them.
    db.client
        .batch_execute("DROP TABLE queue_retry_policy; DROP TABLE retry_policy")
        .unwrap();
    // No job in it: an empty input (exit 3), read through once the tables are found.
    assert_eq!(run(&db.dsn, &["--allow-empty"]).status.code(), Some(0));
    assert_eq!(run(&db.dsn, &[]).status.code(), Some(3));
    let out = run(&db.dsn, &["--baseline-from-cluster"]);
    assert_eq!(format_output(&out), without_035(&masked));
    let Some(empty) = pg::empty_db("sim_empty") else { return };
    let out = run(&empty.dsn, &[]);
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no table `job`: it is not a Lookout database"));
    let wrong = db.dsn.replace(pg::PASSWORD, "wrong-pass");
    let out = run(&wrong, &[]);
    assert_eq!(
        format_output(&out),
        format!(
            "exit: 5\n--- stdout\n--- stderr\nerror: authentication to `{masked}` failed: password authentication failed for user \"lookout\"\n"
        )
    );
}

#[test]
fn simulate_flag_misuse_is_a_usage_error() {
    let home = temp_home();
    let dsn = "postgresql://lookout:pw@127.0.0.1:1/lookout";
    let cases: &[&[&str]] = &[
        &["--history", "h.jsonl", "--baseline-from-cluster"],
        &["--history", "h.jsonl", "--lookout-db", dsn, "--queue", "ml"],
        &["--lookout-db", dsn],
        &["--history", "h.jsonl", "--jobset", "js"],
        &["--history", "h.jsonl", "--since", "7d"],
        &[],
        &[
            "--lookout-db",
            dsn,
            "--queue",
            "ml",
            "--baseline-from-cluster",
            "--baseline",
            "old/",
        ],
        &[
            "--lookout-db",
            dsn,
            "--queue",
            "ml",
            "--since",
            "7d",
            "--from",
            "2026-01-01T00:00:00Z",
        ],
        &["--lookout-db", dsn, "--queue", "ml", "--baseline-engine", "upstream"],
        &["--lookout-db", dsn, "--queue", "ml", "--since", "week"],
        &[
            "--history",
            "h.jsonl",
            "--lookout-db",
            dsn,
            "--baseline-from-cluster",
            "--since",
            "7d",
        ],
    ];
    let mut shown = String::new();
    for case in cases {
        let mut args = vec!["-f", "testdata/lookout/new"];
        args.extend(*case);
        let out = simulate(home.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{case:?}: {}", format_output(&out));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!err.contains(":pw@"), "{err}");
        let head: Vec<&str> = err.lines().take_while(|l| !l.is_empty()).collect();
        shown.push_str(&format!(
            "$ simulate {}\n{}\n",
            args.join(" ").replace(dsn, "DSN"),
            head.join("\n")
        ));
    }
    insta::assert_snapshot!(shown, @r"
    $ simulate -f testdata/lookout/new --history h.jsonl --baseline-from-cluster
    error: `--baseline-from-cluster` reads Lookout's database: give `--lookout-db DSN` (of a `--history`, `--queue` alone selects the jobs, and `--lookout-db` beside it gives the cluster's policies)
    $ simulate -f testdata/lookout/new --history h.jsonl --lookout-db DSN --queue ml
    error: `--history` and `--lookout-db` are two histories: give one (beside `--history`, `--lookout-db` is only where `--baseline-from-cluster` reads the cluster's policies)
    $ simulate -f testdata/lookout/new --lookout-db DSN
    error: `--lookout-db` replays the jobs of one queue: give `--queue QUEUE`
    $ simulate -f testdata/lookout/new --history h.jsonl --jobset js
    error: `--jobset` reads Lookout's database: give `--lookout-db DSN` (of a `--history`, `--queue` alone selects the jobs)
    $ simulate -f testdata/lookout/new --history h.jsonl --since 7d
    error: `--since` reads Lookout's database: give `--lookout-db DSN` (of a `--history`, `--queue` alone selects the jobs)
    $ simulate -f testdata/lookout/new
    error: give the history: `--history PATH` or `--lookout-db DSN --queue Q`
    $ simulate -f testdata/lookout/new --lookout-db DSN --queue ml --baseline-from-cluster --baseline old/
    error: the argument `--baseline-from-cluster` cannot be used with `--baseline <PATH>...`
    $ simulate -f testdata/lookout/new --lookout-db DSN --queue ml --since 7d --from 2026-01-01T00:00:00Z
    error: the argument `--since <DURATION>` cannot be used with `--from <TIME>`
    $ simulate -f testdata/lookout/new --lookout-db DSN --queue ml --baseline-engine upstream
    error: the following required arguments were not provided:
      <--baseline <PATH>...|--baseline-from-cluster>
    $ simulate -f testdata/lookout/new --lookout-db DSN --queue ml --since week
    error: invalid `--since` `week`: expected a duration such as `7d`, `36h` or `1d12h`
    $ simulate -f testdata/lookout/new --history h.jsonl --lookout-db DSN --baseline-from-cluster --since 7d
    error: `--since` selects Lookout's jobs, and the jobs are `--history`'s: with `--history`, `--lookout-db` only gives `--baseline-from-cluster` the cluster's policies (`--queue` alone selects the file's jobs)
    ");
}

// ---------------------------------------------------------------------------------------
// --baseline-from-cluster

/// `testdata/lookout/upstream-old` as upstream's server stores it, written by upstream's
/// classes: what the cluster runs.
const UPSTREAM_OLD_PY: &str = r#"
from armada_client.armada import submit_pb2 as s
def out(table, m):
    print(table, m.name, m.SerializeToString().hex())
out("retry_policy", s.RetryPolicy(name="ml-old", retry_limit=1, default_action=s.RETRY_ACTION_FAIL, rules=[
    s.RetryRule(action=s.RETRY_ACTION_RETRY, on_category="internal", on_subcategory="lease-expired"),
]))
out("queue", s.Queue(name="ml", priority_factor=1.0))
out("queue", s.Queue(name="batch", priority_factor=1.0, resource_limits={"cpu": 0.5}))
"#;

fn cluster_history_db(test: &str) -> Option<Db> {
    let py = python::python()?;
    let mut db = history_db(test)?;
    insert_rows(&mut db, &python::run(&py, UPSTREAM_OLD_PY, &[]));
    db.client
        .batch_execute(
            "INSERT INTO queue_retry_policy (queue_name, policy_name, ordinal) VALUES ('ml', 'ml-old', 0), ('batch', 'ml-old', 0)",
        )
        .unwrap();
    Some(db)
}

#[test]
fn the_baseline_from_the_cluster_is_the_same_plan_as_from_its_files() {
    let Some(db) = cluster_history_db("sim_cluster") else {
        return;
    };
    let home = temp_home();
    let (file, _) = export_week(home.path(), &db);
    let file = file.to_str().unwrap();
    let run = |candidate: &[&str], baseline: &[&str], format: &str| {
        let mut args = candidate.to_vec();
        args.extend(baseline);
        args.extend(["-o", format]);
        simulate(home.path(), &args)
    };
    let mut from_db = vec![
        "--lookout-db",
        db.dsn.as_str(),
        "--queue",
        "ml",
        "--baseline-from-cluster",
    ];
    from_db.extend(WINDOW);
    let from_files = ["--baseline", "testdata/lookout/upstream-old", "--history", file];
    // Both engines upstream; then the README's usual: the design candidate against what the
    // cluster's scheduler does today.
    let candidates: [&[&str]; 2] = [
        &["-f", "testdata/lookout/upstream-new", "--engine", "upstream"],
        &["-f", "testdata/lookout/new", "--baseline-engine", "upstream"],
    ];
    // The cluster's policies from the database, the jobs from the file: `--history` beside
    // `--lookout-db`, with or without `--queue`.
    let from_file_and_db = [
        "--history",
        file,
        "--lookout-db",
        db.dsn.as_str(),
        "--baseline-from-cluster",
    ];
    let from_file_and_db_ml = [&from_file_and_db[..], &["--queue", "ml"]].concat();
    for candidate in candidates {
        let (a, b) = (run(candidate, &from_files, "json"), run(candidate, &from_db, "json"));
        assert_eq!(b.status.code(), Some(0), "{}", format_output(&b));
        for mixed in [&from_file_and_db[..], &from_file_and_db_ml] {
            let c = run(candidate, mixed, "json");
            assert_eq!(c.status.code(), Some(0), "{}", format_output(&c));
            assert_eq!(c.stdout, b.stdout, "{candidate:?} {mixed:?}");
        }
        // Another queue's fields the model does not hold (`batch`'s `resourceLimits`) are
        // not the replay's: nothing is said of them.
        assert!(
            !String::from_utf8_lossy(&b.stderr).contains("`batch`"),
            "{}",
            format_output(&b)
        );
        let expected = String::from_utf8(a.stdout).unwrap().replacen(
            "{\"comparison\":{",
            "{\"comparison\":{\"baselineFrom\":\"cluster\",",
            1,
        );
        assert_eq!(String::from_utf8(b.stdout).unwrap(), expected, "{candidate:?}");
        let (a, b) = (run(candidate, &from_files, "yaml"), run(candidate, &from_db, "yaml"));
        let expected =
            String::from_utf8(a.stdout)
                .unwrap()
                .replacen("comparison:\n", "comparison:\n  baselineFrom: cluster\n", 1);
        assert_eq!(String::from_utf8(b.stdout).unwrap(), expected, "{candidate:?}");
    }
    // The plan's header says whose baseline it is.
    let candidate = candidates[1];
    let (a, b) = (run(candidate, &from_files, "table"), run(candidate, &from_db, "table"));
    let b = String::from_utf8(b.stdout).unwrap();
    assert_eq!(
        b,
        format!(
            "baseline: the retry policies and queue attachments the cluster runs (read from its Lookout database)\n{}",
            String::from_utf8(a.stdout).unwrap()
        )
    );
    insta::assert_snapshot!(b);
    let md = String::from_utf8(run(candidate, &from_db, "markdown").stdout).unwrap();
    assert!(
        md.starts_with(
            "## retryctl simulate: what the candidate policies change\n\n\
             Baseline: the retry policies and queue attachments the cluster runs (read from its Lookout database).\n\n"
        ),
        "{md}"
    );
    let html = String::from_utf8(run(candidate, &from_db, "html").stdout).unwrap();
    assert!(
        html.contains(
            "replayed under the baseline, the retry policies and queue attachments the cluster runs (read from its Lookout database), \
             and the candidate policies, by <code>retryctl simulate --baseline-from-cluster</code>"
        ),
        "{html}"
    );
    // --exit-code: jobs change.
    let mut args = from_db.clone();
    args.push("--exit-code");
    assert_eq!(run(candidate, &args, "json").status.code(), Some(1));
}

/// `simulate` of `testdata/lookout/new` against the cluster's own policies, over `WINDOW`.
fn from_cluster(dsn: &str) -> Vec<&str> {
    let mut args = vec![
        "-f",
        "testdata/lookout/new",
        "--lookout-db",
        dsn,
        "--baseline-from-cluster",
    ];
    args.extend(WINDOW);
    args
}

#[test]
fn a_cluster_baseline_that_cannot_be_read_simulates_nothing() {
    let Some(mut db) = cluster_history_db("sim_cluster_bad") else {
        return;
    };
    let home = temp_home();
    let dsn = db.dsn.clone();
    let args = from_cluster(&dsn);
    // A queue the cluster does not have: no baseline for its jobs.
    let mut other = args.clone();
    other.extend(["--queue", "nope"]);
    let out = simulate(home.path(), &other);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 1
    --- stdout
    --- stderr
    error: queue `nope` is not in the cluster's `queue` table: the cluster has no policies for its jobs

    hint: check `--queue` (`retryctl get queues --lookout-db DSN` lists the cluster's), or give the baseline's policies with --retry-policy
    ");
    db.client
        .batch_execute("INSERT INTO retry_policy (name, definition) VALUES ('broken', '\\x08'::bytea)")
        .unwrap();
    let mut args = vec![
        "-f",
        "testdata/lookout/new",
        "--lookout-db",
        dsn.as_str(),
        "--baseline-from-cluster",
    ];
    args.extend(["--queue", "ml"]);
    let out = simulate(home.path(), &args);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 3
    --- stdout
    --- stderr
    error: table `retry_policy` row `broken`: column `definition`: not an `api.RetryPolicy` message (failed to decode Protobuf message: RetryPolicy.name: invalid wire type: Varint (expected LengthDelimited))
    error: the cluster's retry policies and queues cannot all be read; nothing was simulated
    ");
}

#[test]
fn a_cluster_baseline_with_fields_a_newer_armada_wrote() {
    let Some(mut db) = cluster_history_db("sim_cluster_newer") else {
        return;
    };
    let home = temp_home();
    let dsn = db.dsn.clone();
    let mut args = from_cluster(&dsn);
    args.extend(["--queue", "ml", "-o", "json"]);
    let before = simulate(home.path(), &args);
    assert_eq!(before.status.code(), Some(0), "{}", format_output(&before));
    // Queue `ml` as upstream's classes write it with limits, then field 99 (a varint) after
    // it: both said, and the replay goes on with the same results.
    let py = python::python().unwrap();
    let ml = python::run(
        &py,
        "from armada_client.armada import submit_pb2 as s\n\
         print(s.Queue(name='ml', priority_factor=1.0, resource_limits={'cpu': 0.5}).SerializeToString().hex())",
        &[],
    );
    db.client
        .batch_execute(&format!(
            "UPDATE queue SET definition = decode('{}', 'hex') WHERE name = 'ml'",
            ml.trim()
        ))
        .unwrap();
    db.client.batch_execute(&append_field_99("queue", "ml")).unwrap();
    let out = simulate(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert_eq!(out.stdout, before.stdout);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with(
            "note: table `queue` row `ml`: column `definition`: `resourceLimits` not read: it does not change a retry \
             decision\n\
             warning: table `queue` row `ml`: column `definition`: has fields not in retryctl's copy of Armada's API \
             (upstream 207cc9e; a newer Armada may have written them): unknown field number `99` of api.Queue; not read, \
             and whether it changes a retry decision is not known\n\
             warning: job `ml-zy`"
        ),
        "{err}"
    );
    // In a policy: nothing is simulated.
    db.client
        .batch_execute(&append_field_99("retry_policy", "ml-old"))
        .unwrap();
    let out = simulate(home.path(), &args);
    insta::assert_snapshot!(format_output(&out), @r"
    exit: 3
    --- stdout
    --- stderr
    error: table `retry_policy` row `ml-old`: column `definition`: has fields not in retryctl's copy of Armada's API (upstream 207cc9e; a newer Armada may have written them): unknown field number `99` of api.RetryPolicy; a policy read without them could decide differently from the cluster's
    error: the cluster's retry policies and queues cannot all be read; nothing was simulated
    ");
}

/// The README walkthrough's `testdata/lookout/cluster.sql` holds what upstream's classes write
/// for `upstream-old/` today (a re-generated armada-client would show here).
#[test]
fn the_walkthroughs_cluster_rows_are_upstreams_bytes() {
    let Some(py) = python::python() else { return };
    let rows = python::run(
        &py,
        &UPSTREAM_OLD_PY.replace(", resource_limits={\"cpu\": 0.5}", ""),
        &[],
    );
    let sql = std::fs::read_to_string(crate::support::root().join("testdata/lookout/cluster.sql")).unwrap();
    assert_eq!(rows.lines().count(), 3);
    for line in rows.lines() {
        let mut parts = line.split(' ');
        let (table, name, hex) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        let insert = format!("INSERT INTO {table} (name, definition) VALUES ('{name}', '\\x{hex}'::bytea);");
        assert!(sql.contains(&insert), "{insert}");
    }
}

/// A connection lost in the middle of the stream: what was replayed is printed, then the
/// error, exit 4 (as `history`), never a clean exit 0 with a partial history.
#[test]
fn a_connection_lost_midway_exits_4() {
    let Some(mut db) = pg::lookout_db("sim_lost") else {
        return;
    };
    db.client
        .batch_execute(
            "INSERT INTO job (job_id, queue, owner, jobset, cpu, memory, ephemeral_storage, gpu, priority, submitted, state, \
             last_transition_time, last_transition_time_seconds, annotations) \
             SELECT format('job-%s', lpad(i::text, 8, '0')), 'ml', 'o', 's', 1, 1, 0, 0, 1, timestamp '2026-11-16' + i * interval '1 second', \
             4, now(), 0, '{}'::jsonb FROM generate_series(1, 400000) i; \
             INSERT INTO job_run (run_id, job_id, cluster, node, leased, pending, started, finished, job_run_state, exit_code) \
             SELECT format('run-%s', i), format('job-%s', lpad(i::text, 8, '0')), 'c', 'n', timestamp '2026-11-16', \
             timestamp '2026-11-16', timestamp '2026-11-16 00:00:01', timestamp '2026-11-16 00:00:02', 4, 1 \
             FROM generate_series(1, 400000) i;",
        )
        .unwrap();
    let home = temp_home();
    // A plain process (assert_cmd's Command only runs to completion), set up like `retryctl()`.
    #[allow(deprecated)]
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let child = std::process::Command::new(bin)
        .current_dir(crate::support::root())
        .env_clear()
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .env("RAYON_NUM_THREADS", "1")
        .args([
            "simulate",
            "-f",
            "testdata/lookout/new",
            "-o",
            "jsonl",
            "--lookout-db",
            &db.dsn,
            "--queue",
            "ml",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first replayed record (the COPY is streaming: ending its backend before
    // its first row would be a failed query, not a connection lost midway), then end the
    // backend from the server side, and read the rest.
    let mut child = child;
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert!(!first.is_empty(), "nothing was replayed");
    let ended: i64 = db
        .client
        .query_one(
            // This test's database only: the cluster is shared, and another test's export
            // runs the same COPY at the same time.
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE query LIKE 'COPY (SELECT j.job_id%' AND pid <> pg_backend_pid() \
             AND datname = current_database()) t",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(ended, 1, "the export's backend was not found");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    let masked = db.masked();
    // The server's FATAL message arrives before the socket closes, or the close is seen first
    // (the client is reading the COPY stream when the backend ends): either is the answer,
    // and a close is said as a lost connection, not as an answer.
    let lost = format!("error: lost the connection to the Lookout database at `{masked}`: connection closed\n");
    let fatal = format!(
        "error: the Lookout database at `{masked}` answered an error: terminating connection due to administrator command\n"
    );
    assert!(err.ends_with(&lost) || err.ends_with(&fatal), "{err}");
    // The jobs replayed before are printed, and said in the summary.
    let replayed = 1 + rest.lines().count();
    assert!(replayed < 400_000, "{replayed}");
    assert!(
        err.contains(&format!(
            "history: exported {replayed} jobs and {replayed} runs of queue `ml`"
        )),
        "{err}"
    );
}
