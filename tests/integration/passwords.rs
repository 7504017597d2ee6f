//! A password is never shown (docs/lookout.md, "Connecting"): whatever a DSN's password holds
//! (`/`, `?`, `#`, `@`, percent-encoded or not, spaces in quotes, `PASSWORD=` in any case, a
//! line break), an error that names the database shows `***` in its place, and `--emit`
//! refuses a DSN holding a line break without echoing it.

use crate::support::{closed_port, format_output, retryctl, temp_home};

/// `history --lookout-db DSN` and `simulate --lookout-db DSN`, nothing listening: exit 4, the
/// DSN shown as `shown` (the password masked), the password nowhere in the output.
#[cfg(target_os = "linux")]
#[test]
fn an_unreachable_database_is_named_without_its_password() {
    let home = temp_home();
    let port = closed_port();
    let refused = "error connecting to server: connection refused";
    let cases = [
        (
            format!("postgresql://lookout:p/ss?w#rd@127.0.0.1:{port}/lookout"),
            format!("postgresql://lookout:***@127.0.0.1:{port}/lookout"),
            "p/ss?w#rd",
        ),
        (
            format!("postgresql://lookout:p%2Fss%3Fw%23rd%40@127.0.0.1:{port}/lookout"),
            format!("postgresql://lookout:***@127.0.0.1:{port}/lookout"),
            "p%2Fss",
        ),
        (
            format!("postgres://lookout:hunter2@127.0.0.1:{port}/lookout?sslmode=disable&password=x%23y"),
            format!("postgres://lookout:***@127.0.0.1:{port}/lookout?sslmode=disable&password=***"),
            "hunter2",
        ),
        (
            format!("host=127.0.0.1 port={port} user=lookout password=hunter2 dbname=lookout"),
            format!("host=127.0.0.1 port={port} user=lookout password=*** dbname=lookout"),
            "hunter2",
        ),
        (
            format!("host=127.0.0.1 port={port} password='hunter 2' user=lookout"),
            format!("host=127.0.0.1 port={port} password=*** user=lookout"),
            "hunter",
        ),
    ];
    for (dsn, shown, secret) in &cases {
        for verb in [
            &["history", "--queue", "ml"][..],
            &["simulate", "-f", "testdata/policies/valid", "--queue", "ml"],
        ] {
            let out = retryctl(home.path())
                .args(verb)
                .args(["--lookout-db", dsn])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(4), "{dsn}: {}", format_output(&out));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                stderr,
                format!("error: cannot reach the Lookout database at `{shown}`: {refused}\n"),
                "{verb:?} {dsn}"
            );
            assert!(!stderr.contains(secret), "{stderr}");
        }
    }
}

/// A DSN the driver cannot read (`PASSWORD=` is not a key it knows; a password's words that
/// are not `key=value`; a line break): exit 2 naming `--lookout-db`, the password masked.
#[test]
fn a_dsn_that_does_not_parse_is_named_without_its_password() {
    let home = temp_home();
    let cases = [
        (
            "host=127.0.0.1 PASSWORD=hunter2 user=lookout",
            "host=127.0.0.1 PASSWORD=*** user=lookout",
        ),
        (
            "host=127.0.0.1 password=hunter 2 x user=lookout",
            "host=127.0.0.1 password=*** user=lookout",
        ),
        (
            "host=127.0.0.1 password=hunter\n2 user=lookout",
            "host=127.0.0.1 password=*** user=lookout",
        ),
    ];
    for (dsn, shown) in cases {
        refused_dsn(home.path(), &["history"], dsn, shown, "invalid connection string");
    }
}

/// `verb --queue ml --lookout-db DSN`: exit 2, its one line naming `--lookout-db` as `shown`
/// and `why`.
fn refused_dsn(home: &std::path::Path, verb: &[&str], dsn: &str, shown: &str, why: &str) {
    let out = retryctl(home)
        .args(verb)
        .args(["--queue", "ml", "--lookout-db", dsn])
        .output()
        .unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stderr).as_ref()),
        (
            Some(2),
            format!("error: invalid `--lookout-db` `{shown}`: {why}\n").as_str()
        ),
        "{verb:?} {dsn:?}"
    );
}

/// A DSN that names no host (empty, keywords without `host`, a URL without one) is a usage
/// error, exit 2, as one that does not parse: the client has no default host to try, and
/// it was said as an unreachable database (exit 4). The password stays masked.
#[test]
fn a_dsn_without_a_host_is_a_usage_error() {
    let home = temp_home();
    for (dsn, shown) in [
        ("", ""),
        (
            "dbname=lookout user=lookout password=hunter2",
            "dbname=lookout user=lookout password=***",
        ),
        ("postgresql:///lookout", "postgresql:///lookout"),
    ] {
        for verb in [&["history"][..], &["simulate", "-f", "testdata/lookout/new"]] {
            let why = "no host (expected `postgresql://USER:PASSWORD@HOST:5432/DATABASE`)";
            refused_dsn(home.path(), verb, dsn, shown, why);
        }
    }
}

/// `--emit` with a DSN holding a line break: refused (exit 2, nothing printed), neither the DSN
/// nor the character shown, for the replay verbs and `watch` alike.
#[test]
fn emit_refuses_a_dsn_with_a_line_break_without_echoing_it() {
    let home = temp_home();
    let said =
        "error: `--lookout-db` holds a line break: no DSN does (the value is not shown: it may hold a password)\n";
    let dsn = "postgresql://lookout:hunter2@db/lookout\n- --evil";
    let emit = [
        "--emit",
        "kubernetes",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "data:/data",
        "--dsn-secret",
        "lookout",
    ];
    let cases: [&[&str]; 2] = [
        &[
            "simulate",
            "-f",
            "testdata/policies/valid",
            "--queue",
            "ml",
            "--shard-count",
            "2",
        ],
        &[
            "watch",
            "--baseline",
            "testdata/policies/valid",
            "--state",
            "/data/watch.json",
            "--listen",
            "0.0.0.0:9464",
        ],
    ];
    for command in cases {
        let out = retryctl(home.path())
            .args(command)
            .args(["--lookout-db", dsn])
            .args(emit)
            .output()
            .unwrap();
        assert_eq!(
            (
                out.status.code(),
                out.stdout.as_slice(),
                String::from_utf8_lossy(&out.stderr).as_ref()
            ),
            (Some(2), &b""[..], said),
            "{command:?}"
        );
    }
}
