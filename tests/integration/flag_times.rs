//! A time given as a flag (`--from`, `--to`, `--backtest-at`) is read as a history's times
//! are (docs/simulate.md "Inputs"): one that does not exist (February 30th, an offset past
//! `±23:59`, second 60) is a usage error (exit 2, nothing on stdout) with the reason the
//! history reader gives for that time in a file, never accepted or refused in vaguer words.

use std::path::Path;

use crate::support::{format_output, retryctl, root, temp_home};

/// Times of RFC 3339's shape that do not exist.
const IMPOSSIBLE: [&str; 5] = [
    "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:00+25:00",
    "2026-01-01T00:00:00+99:99",
    "2026-01-01T00:00:60Z",
    "2026-01-01T24:00:00Z",
];

/// Nothing listens there: the flags are checked before any connection.
const DSN: &str = "postgresql://nobody@127.0.0.1:1/none";

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    retryctl(home).current_dir(root()).args(args).output().unwrap()
}

/// The reason the history reader gives for `time` as a job's `submittedAt` in a file.
fn reader_reason(home: &Path, time: &str) -> String {
    let file = home.join("h.jsonl");
    std::fs::write(
        &file,
        format!("{{\"job\":{{\"id\":\"a\",\"submittedAt\":\"{time}\"}},\"runs\":[{{\"outcome\":\"succeeded\"}}]}}\n"),
    )
    .unwrap();
    let out = run(
        home,
        &[
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "--history",
            file.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let head = format!("job.submittedAt: invalid time `{time}`: ");
    let at = err.find(&head).unwrap_or_else(|| panic!("{err}"));
    err[at + head.len()..].lines().next().unwrap().to_string()
}

#[test]
fn an_impossible_time_flag_is_refused_with_the_readers_reason() {
    let home = temp_home();
    let history = "testdata/suggest/planted.jsonl";
    for time in IMPOSSIBLE {
        let reason = reader_reason(home.path(), time);
        let commands: Vec<(&str, Vec<&str>)> = vec![
            (
                "--from",
                vec!["history", "--lookout-db", DSN, "--queue", "ml", "--from", time],
            ),
            (
                "--to",
                vec!["history", "--lookout-db", DSN, "--queue", "ml", "--to", time],
            ),
            (
                "--from",
                vec![
                    "simulate",
                    "-f",
                    "testdata/policies/valid/infra.yaml",
                    "--lookout-db",
                    DSN,
                    "--queue",
                    "ml",
                    "--from",
                    time,
                ],
            ),
            (
                "--backtest-at",
                vec![
                    "simulate",
                    "-f",
                    "testdata/policies/valid/infra.yaml",
                    "--history",
                    history,
                    "--backtest-at",
                    time,
                ],
            ),
            (
                "--to",
                vec!["suggest", "--lookout-db", DSN, "--queue", "ml", "--to", time],
            ),
            (
                "--backtest-at",
                vec!["suggest", "--history", history, "--backtest-at", time],
            ),
        ];
        for (flag, args) in commands {
            let out = run(home.path(), &args);
            assert_eq!(
                format_output(&out),
                format!("exit: 2\n--- stdout\n--- stderr\nerror: invalid `{flag}` `{time}`: {reason}\n"),
                "{args:?}"
            );
        }
    }
}

/// The reasons themselves, as the reader words them: what the flags now say.
#[test]
fn the_readers_reasons_say_what_does_not_exist() {
    let home = temp_home();
    let reasons: Vec<String> = IMPOSSIBLE.iter().map(|t| reader_reason(home.path(), t)).collect();
    assert_eq!(
        reasons,
        [
            "day `30` does not exist in 2026-02 (28 days)",
            "offset `+25:00` is out of range (hours 00–23, minutes 00–59)",
            "offset `+99:99` is out of range (hours 00–23, minutes 00–59)",
            "second `60` is out of range (00–59; a leap second is not read)",
            "hour `24` is out of range (00–23)",
        ]
    );
}
