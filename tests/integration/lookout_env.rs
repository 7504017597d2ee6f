//! `$LOOKOUT_DB` (docs/lookout.md): the DSN of `--lookout-db` wherever a verb reads Lookout's
//! database. `history`, `simulate`, `tune` and `suggest` given no source read it; `--lookout-db`
//! without a value means it everywhere (`get` and `--baseline-from-cluster` included); the
//! variable alone never switches a source. Against a real PostgreSQL (support/pg.rs).

use std::path::Path;

use crate::support::pg::{self, fixture_db, WINDOW};
use crate::support::{format_output, retryctl, temp_home};

/// `retryctl ARGS` with `$LOOKOUT_DB` set to `dsn` (`None`: unset), formatted.
fn run(home: &Path, dsn: Option<&str>, args: &[&str]) -> String {
    let mut cmd = retryctl(home);
    if let Some(dsn) = dsn {
        cmd.env("LOOKOUT_DB", dsn);
    }
    format_output(&cmd.args(args).output().unwrap())
}

fn with(head: &[&str], tail: &[&str]) -> Vec<String> {
    head.iter().chain(tail).map(|s| s.to_string()).collect()
}

/// Each verb that replays Lookout: with `--lookout-db DSN`, with `--lookout-db` alone and the
/// variable, and with neither flag and the variable, the same output and exit status.
#[test]
fn every_replaying_verb_reads_lookout_at_the_variable_without_a_source() {
    let Some(db) = fixture_db("env_verbs") else { return };
    let home = temp_home();
    let mut filters = vec!["--queue", "ml"];
    filters.extend(WINDOW);
    let verbs: [&[&str]; 4] = [
        &["history"],
        &["simulate", "-f", "testdata/lookout/new", "-o", "json"],
        &[
            "tune",
            "-f",
            "testdata/lookout/upstream-new/",
            "--engine",
            "upstream",
            "--vary",
            "ml-new:retryLimit=1..2",
            "-o",
            "json",
        ],
        &[
            "suggest",
            "--baseline",
            "testdata/lookout/old",
            "--min-trials",
            "1",
            // The fixture's baseline is not what made its record: judged all the same.
            "--max-contradictions",
            "100%",
            "-o",
            "json",
        ],
    ];
    for verb in verbs {
        let explicit = with(verb, &[&["--lookout-db", &db.dsn][..], &filters].concat());
        let explicit: Vec<&str> = explicit.iter().map(String::as_str).collect();
        let expected = run(home.path(), None, &explicit);
        assert!(expected.starts_with("exit: 0\n"), "{verb:?}: {expected}");
        assert!(expected.contains("--- stdout\n{") || verb[0] == "history", "{expected}");
        let alone = with(verb, &[&["--lookout-db"][..], &filters].concat());
        let alone: Vec<&str> = alone.iter().map(String::as_str).collect();
        assert_eq!(
            run(home.path(), Some(&db.dsn), &alone),
            expected,
            "{verb:?} --lookout-db alone"
        );
        let neither = with(verb, &filters);
        let neither: Vec<&str> = neither.iter().map(String::as_str).collect();
        assert_eq!(
            run(home.path(), Some(&db.dsn), &neither),
            expected,
            "{verb:?} without a source"
        );
    }
}

/// The variable never replaces a source given on the command line: `--history` reads the
/// file, `history --lookout-url` the REST API, `get` the Armada server.
#[test]
fn the_variable_alone_never_switches_the_source() {
    let home = temp_home();
    // A database no one listens on: reading it would exit 4.
    let nowhere = Some("postgresql://lookout@127.0.0.1:1/lookout");
    let out = run(
        home.path(),
        nowhere,
        &[
            "simulate",
            "-f",
            "testdata/policies/valid",
            "--history",
            "testdata/histories/design-composition.yaml",
        ],
    );
    assert!(out.starts_with("exit: 0\n"), "{out}");
    let out = run(
        home.path(),
        nowhere,
        &["get", "queues", "--armada-url", "http://127.0.0.1:1"],
    );
    assert!(out.starts_with("exit: 4\n"), "{out}");
    assert!(
        out.contains("cannot reach the Armada server at `http://127.0.0.1:1`"),
        "{out}"
    );
    assert!(!out.contains("lookout"), "{out}");
}

/// `get --lookout-db` alone reads the database at the variable, as with its DSN.
#[test]
fn get_with_lookout_db_alone_reads_the_variable() {
    let Some(db) = pg::lookout_db("env_get") else { return };
    let home = temp_home();
    let expected = run(home.path(), None, &["get", "queues", "--lookout-db", &db.dsn]);
    assert!(expected.starts_with("exit: 0\n"), "{expected}");
    assert_eq!(
        run(home.path(), Some(&db.dsn), &["get", "queues", "--lookout-db"]),
        expected
    );
    assert_eq!(run(home.path(), Some(&db.dsn), &["get", "q", "--lookout-db"]), expected);
}

/// `--lookout-db` alone with the variable unset (or empty), and no source at all: usage
/// errors that say what to give.
#[test]
fn lookout_db_alone_without_the_variable_is_a_usage_error() {
    let home = temp_home();
    let alone = "exit: 2\n--- stdout\n--- stderr\nerror: `--lookout-db` without a value reads `$LOOKOUT_DB`, which is not set\n\nhint: give the database: `--lookout-db postgresql://user:password@host:5432/lookout`\n";
    for dsn in [None, Some("")] {
        for args in [
            &["history", "--queue", "ml", "--lookout-db"][..],
            &[
                "simulate",
                "-f",
                "testdata/lookout/new",
                "--queue",
                "ml",
                "--lookout-db",
            ],
            &["get", "queues", "--lookout-db"],
            &[
                "simulate",
                "-f",
                "testdata/lookout/new",
                "--queue",
                "ml",
                "--lookout-db",
                "--baseline-from-cluster",
            ],
        ] {
            assert_eq!(run(home.path(), dsn, args), alone, "{args:?}");
        }
    }
    let hint = "hint: or set `LOOKOUT_DB` to Lookout's database, which a command given neither reads\n";
    assert_eq!(
        run(home.path(), None, &["simulate", "-f", "testdata/lookout/new"]),
        format!("exit: 2\n--- stdout\n--- stderr\nerror: give the history: `--history PATH` or `--lookout-db DSN --queue Q`\n\n{hint}")
    );
    assert_eq!(
        run(home.path(), None, &["suggest", "--baseline", "testdata/lookout/old"]),
        format!("exit: 2\n--- stdout\n--- stderr\nerror: give the history: `--history PATH` or `--lookout-db DSN --queue Q`\n\n{hint}")
    );
    assert_eq!(
        run(home.path(), None, &["history", "--queue", "ml"]),
        format!("exit: 2\n--- stdout\n--- stderr\nerror: give `--lookout-db DSN` or `--lookout-url URL`\n\n{hint}")
    );
}
