//! A job twice in a history is refused (docs/simulate.md): a job id met a second time in one
//! `--history` (a file, stdin, the files of a directory: two overlapping exports put together)
//! is exit 3 in `simulate`, `tune` and `suggest`, naming the id and both places
//! (`FILE:LINE`); with `--skip-invalid` the first is kept, each repeat left out, said and
//! counted as a line that cannot be read, and the jobs are counted once.

use std::path::Path;

use crate::support::{format_output, retryctl, temp_home, UPSTREAM_SCHEDULER};
use crate::watch::{week, CURRENT};

const SAID: &str = "a history holds each job once, so this one is not replayed";

fn id(line: &str) -> String {
    let doc: serde_json::Value = serde_json::from_str(line).unwrap();
    doc["job"]["id"].as_str().unwrap().to_string()
}

/// The three verbs on `history` (a path, or `-` with `stdin`), with `extra` after.
pub(crate) fn verbs<'a>(history: &'a str, extra: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut all = vec![
        vec!["simulate", "-f", CURRENT, "--history", history, "-o", "json"],
        vec![
            "tune",
            "-f",
            CURRENT,
            "--history",
            history,
            "--vary",
            "ml-today:retryLimit=1..2",
            "--max-contradictions",
            "100%",
        ],
        vec![
            "suggest",
            "--baseline",
            CURRENT,
            "--history",
            history,
            "--max-contradictions",
            "100%",
        ],
    ];
    for args in &mut all {
        args.extend(UPSTREAM_SCHEDULER);
        args.extend(extra);
    }
    all
}

fn run(home: &Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut cmd = retryctl(home);
    cmd.args(args);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    cmd.output().unwrap()
}

#[test]
fn a_job_twice_in_a_file_or_on_stdin_is_refused_naming_both_places() {
    let lines = week();
    let (first, sixth) = (id(&lines[0]), id(&lines[5]));
    // Lines 21 and 22 repeat lines 1 and 6.
    let mut history: Vec<&str> = lines[..20].iter().map(String::as_str).collect();
    history.extend([lines[0].as_str(), lines[5].as_str()]);
    let text = history.join("\n") + "\n";
    let home = temp_home();
    let file = home.path().join("twice.jsonl");
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();
    for (history, name, stdin) in [(path, path, None), ("-", "<stdin>", Some(text.as_str()))] {
        let errors = format!(
            "error: {name}:21: job `{first}` is also at `{name}:1`: {SAID}\n\
             error: {name}:22: job `{sixth}` is also at `{name}:6`: {SAID}\n"
        );
        for args in verbs(history, &[]) {
            let out = run(home.path(), &args, stdin);
            assert_eq!(out.status.code(), Some(3), "{args:?}: {}", format_output(&out));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.starts_with(&errors), "{args:?}: {stderr}");
        }
        // With --skip-invalid: said as warnings, each repeat left out, 20 jobs counted once.
        let warnings = errors.replace("error: ", "warning: ");
        for args in verbs(history, &["--skip-invalid"]) {
            let out = run(home.path(), &args, stdin);
            assert_eq!(
                out.status.code().map(|c| c == 3),
                Some(false),
                "{args:?}: {}",
                format_output(&out)
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.starts_with(&warnings), "{args:?}: {stderr}");
            if args[0] == "simulate" {
                let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(record["summary"]["jobs"], 20, "{record}");
                assert_eq!(record["summary"]["errors"], 2, "{record}");
            }
        }
    }
    // The same 20 jobs once: what the skipped run replayed.
    let once = home.path().join("once.jsonl");
    std::fs::write(&once, lines[..20].join("\n") + "\n").unwrap();
    let plain = run(home.path(), &verbs(once.to_str().unwrap(), &[])[0], None);
    let skipped = run(home.path(), &verbs(path, &["--skip-invalid"])[0], None);
    let summary = |out: &std::process::Output| {
        let mut record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        record["summary"]["errors"] = 0.into();
        record["summary"].clone()
    };
    assert_eq!(summary(&skipped), summary(&plain));
}

#[test]
fn two_overlapping_exports_in_a_directory_are_refused_naming_both_places() {
    let lines = week();
    let home = temp_home();
    let dir = home.path().join("exports");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.jsonl"), lines[..10].join("\n") + "\n").unwrap();
    std::fs::write(dir.join("b.jsonl"), lines[8..14].join("\n") + "\n").unwrap();
    let (a, b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    let (a, b) = (a.display(), b.display());
    let want = format!(
        "error: {b}:1: job `{}` is also at `{a}:9`: {SAID}\nerror: {b}:2: job `{}` is also at `{a}:10`: {SAID}\n",
        id(&lines[8]),
        id(&lines[9])
    );
    for args in verbs(dir.to_str().unwrap(), &[]) {
        let out = run(home.path(), &args, None);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", format_output(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with(&want),
            "{args:?}: {}",
            format_output(&out)
        );
    }
}
