//! The data formats keep every value a string for a YAML 1.1 reader too (docs/cli.md):
//! `get -o yaml` (every kind, both API versions) and `history -o yaml` quote each string that
//! kubectl's, armadactl's or PyYAML's reader would read as something else (`yes`, `on`, `~`,
//! `1_000`, `0x1F`, `12:30`, `1e3`…). Read back by PyYAML (a YAML 1.1 reader), the YAML
//! equals the `-o json` of the same objects; and `get -o yaml | apply -f -` is `unchanged`.
//! Against the real `retryctl serve` (in process) and a real PostgreSQL.

use std::path::Path;

use crate::support::pg;
use crate::support::python;
use crate::support::server::TestServer;
use crate::support::{format_output, lookout_rows, retryctl, temp_home, Session};

/// What a YAML 1.1 reader retypes, as names (lowercase letters, digits, `-`: what a name
/// may be) and as any other text.
const NAMES: [&str; 10] = ["yes", "no", "on", "off", "y", "n", "true", "null", "1e3", "0x1f"];
const TEXTS: [&str; 12] = [
    "Yes",
    "ON",
    "~",
    "1_000",
    "0x1F",
    "12:30",
    "1e3",
    "NULL",
    "n",
    "False",
    ".inf",
    "2026-11-28",
];

/// PyYAML reads `yaml` (every document of it) and Python's json reads `json` (one value, or
/// one a line with `lines`): `equal`, or both as PyYAML and json read them.
const SAME_PY: &str = r#"
import json, sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
text = open(sys.argv[2]).read()
if sys.argv[3] == "lines":
    want = [json.loads(l) for l in text.splitlines() if l.strip()]
else:
    want = [json.loads(text)]
if docs == want:
    print("equal")
else:
    print("yaml:", json.dumps(docs, sort_keys=True, default=repr))
    print("json:", json.dumps(want, sort_keys=True, default=repr))
"#;

fn same(py: &Path, dir: &Path, yaml: &str, json: &str, lines: bool) -> String {
    let (y, j) = (dir.join("read.yaml"), dir.join("read.json"));
    std::fs::write(&y, yaml).unwrap();
    std::fs::write(&j, json).unwrap();
    python::run(
        py,
        SAME_PY,
        &[
            y.to_str().unwrap(),
            j.to_str().unwrap(),
            if lines { "lines" } else { "one" },
        ],
    )
}

#[test]
fn get_o_yaml_is_what_a_yaml_1_1_reader_reads_as_the_json() {
    let Some(py) = python::python() else { return };
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let mut files = String::new();
    for (i, name) in NAMES.iter().enumerate() {
        files.push_str(&format!(
            "---\napiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: '{name}'\nretryLimit: 2\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: '{}'\n",
            TEXTS[i]
        ));
    }
    let labels: String = TEXTS.iter().map(|t| format!("    '{t}': '{t}'\n")).collect();
    let owners: String = TEXTS.iter().map(|t| format!("  - '{t}'\n")).collect();
    for name in NAMES {
        files.push_str(&format!(
            "---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: '{name}'\npriorityFactor: 1\nuserOwners:\n{owners}groupOwners:\n{owners}labels:\n{labels}retryPolicies: ['{name}']\n"
        ));
    }
    let file = dir.path().join("all.yaml");
    std::fs::write(&file, &files).unwrap();
    s.ok(&["apply", "-f", file.to_str().unwrap()]);
    for version in ["armadaproject.io/v1beta1", "armadaproject.io/v1"] {
        let mut gets: Vec<Vec<&str>> = vec![vec!["retrypolicies"], vec!["queues"]];
        for name in NAMES {
            gets.push(vec!["retrypolicy", name]);
            gets.push(vec!["queue", name]);
        }
        for get in gets {
            let run = |format: &str| {
                let mut args = vec!["get"];
                args.extend(&get);
                args.extend(["-o", format, "--api-version", version]);
                s.ok(&args)
            };
            let (yaml, json) = (run("yaml"), run("json"));
            assert_eq!(
                same(&py, dir.path(), &yaml, &json, false),
                "equal\n",
                "{get:?} {version}:\n{yaml}"
            );
            // And written back, what the server holds.
            let applied = s
                .cmd()
                .args(["apply", "-f", "-"])
                .write_stdin(yaml.as_str())
                .output()
                .unwrap();
            assert_eq!(applied.status.code(), Some(0), "{}", format_output(&applied));
            let out = String::from_utf8(applied.stdout).unwrap();
            assert!(
                !out.is_empty() && out.lines().all(|l| l.ends_with(" unchanged")),
                "{get:?} {version}: {out}"
            );
        }
    }
}

/// One job a line, each of its texts one a YAML 1.1 reader retypes.
fn retyped_week() -> String {
    let mut out = String::new();
    for (i, id) in ["yes", "0x1F", "1_000", "12:30", "1e3", "~", "null", "True"]
        .iter()
        .enumerate()
    {
        let t = |k: usize| TEXTS[(i + k) % TEXTS.len()];
        out.push_str(&serde_json::json!({
            "apiVersion": "armadaproject.io/v1",
            "kind": "FailureHistory",
            "job": {"id": id, "queue": "on", "memory": "1073741824", "submittedAt": format!("2026-11-16T0{i}:00:00Z"),
                    "resources": {"cpu": "1"}, "state": "succeeded"},
            "runs": [
                {"node": t(1), "queuedFor": "1m", "runFor": "10m",
                 "containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": t(2)}],
                 "category": t(3), "subcategory": t(4), "executorPath": "failedPod"},
                {"node": t(5), "queuedFor": "1m", "runFor": "1h", "outcome": "succeeded"}
            ]
        }).to_string());
        out.push('\n');
    }
    out
}

#[test]
fn history_o_yaml_is_what_a_yaml_1_1_reader_reads_as_the_jsonl() {
    let Some(py) = python::python() else { return };
    let Some(mut db) = pg::lookout_db("yaml11") else { return };
    lookout_rows::load(&mut db, &retyped_week(), "");
    let home = temp_home();
    let export = |format: &str| {
        let out = retryctl(home.path())
            .args(["history", "--lookout-db", &db.dsn, "-o", format])
            .args(pg::WINDOW)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let (yaml, jsonl) = (export("yaml"), export("jsonl"));
    assert_eq!(jsonl.lines().count(), 8, "{jsonl}");
    assert_eq!(same(&py, home.path(), &yaml, &jsonl, true), "equal\n", "{yaml}");
}
