//! An empty history (docs/cli.md, exit codes): a file, a directory, stdin or a Lookout window
//! with no job makes `simulate`, `tune`, `suggest` and `history` exit 3 with nothing on
//! stdout; `--allow-empty` makes it exit 0 with the answer of no job (suggest's: the verdict
//! `keep`, in every format); a shard with no job writes its partial.

use std::path::Path;
use std::process::Output;

use crate::support::pg::{fixture_db, Db, WINDOW};
use crate::support::{format_output, retryctl, temp_home};

/// Each replaying verb: its arguments before the source, and the end of its error.
const VERBS: [(&[&str], &str); 3] = [
    (&["simulate", "-f", "testdata/lookout/new"], "nothing to compare"),
    (
        &[
            "tune",
            "-f",
            "testdata/lookout/new",
            "--vary",
            "ml-new:spec.retryLimit=1..2",
        ],
        "nothing to compare",
    ),
    (&["suggest"], "nothing to learn from"),
];

fn run(home: &Path, args: &[&str], stdin: &str) -> Output {
    retryctl(home).args(args).write_stdin(stdin).output().unwrap()
}

/// Exit 3, `want` exactly on stderr, nothing on stdout.
fn refused(out: &Output, want: &str) {
    assert_eq!(out.status.code(), Some(3), "{}", format_output(out));
    assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{}", format_output(out));
    assert!(out.stdout.is_empty(), "{}", format_output(out));
}

#[test]
fn an_empty_file_directory_or_stdin_is_refused_by_every_replaying_verb() {
    let home = temp_home();
    let file = home.path().join("week.jsonl");
    std::fs::write(&file, "").unwrap();
    let yaml = home.path().join("week.yaml");
    std::fs::write(&yaml, "# a quiet week\n").unwrap();
    let dir = home.path().join("weeks");
    std::fs::create_dir(&dir).unwrap();
    for (verb, nothing) in VERBS {
        for (path, named, stdin) in [
            (file.display().to_string(), format!("`{}`", file.display()), ""),
            (yaml.display().to_string(), format!("`{}`", yaml.display()), ""),
            (dir.display().to_string(), format!("`{}`", dir.display()), ""),
            ("-".to_string(), "stdin".to_string(), ""),
            ("-".to_string(), "stdin".to_string(), "\n  \n"),
        ] {
            let mut args = verb.to_vec();
            args.extend(["--history", path.as_str()]);
            refused(
                &run(home.path(), &args, stdin),
                &format!("error: no job in {named}: {nothing}\n"),
            );
            // `--allow-empty`: exit 0 as before, with the answer of no job.
            args.push("--allow-empty");
            let out = run(home.path(), &args, stdin);
            assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
            assert!(!out.stdout.is_empty(), "{}", format_output(&out));
        }
    }
}

/// suggest `--allow-empty` on a history with no job writes a valid answer in every format:
/// 0 jobs and the verdict `keep`, naming the history; `-o policy` today's policy as the
/// baseline gives it, headed by the verdict; an `--output-file` gets the document, never
/// 0 bytes in place of what it held.
#[test]
fn suggest_allow_empty_writes_the_answer_of_no_job_in_every_format() {
    let home = temp_home();
    let file = home.path().join("week.jsonl");
    std::fs::write(&file, "").unwrap();
    let history = file.display().to_string();
    let verdict = format!("keep (keep today's policy): no job in `{history}`: nothing learned, nothing proposed");
    let base = [
        "suggest",
        "--baseline",
        "testdata/route/current/",
        "--history",
        history.as_str(),
        "--allow-empty",
        // Its subject is the empty input, not the scheduler's defaults.
        crate::support::UPSTREAM_SCHEDULER[0],
        crate::support::UPSTREAM_SCHEDULER[1],
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        let out = run(home.path(), &args, "");
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        out
    };
    let stdout = |out: &Output| String::from_utf8(out.stdout.clone()).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&with(&["-o", "json"]).stdout).unwrap();
    assert_eq!(json["suggest"]["jobs"], 0);
    assert_eq!(
        json["suggest"]["verdict"],
        serde_json::json!({
            "decision": "keep",
            "gloss": "keep today's policy",
            "reasons": [format!("no job in `{history}`: nothing learned, nothing proposed")],
        })
    );
    let yaml: serde_json::Value = serde_yaml::from_slice(&with(&["-o", "yaml"]).stdout).unwrap();
    assert_eq!(yaml, json);
    let table = stdout(&with(&[]));
    assert!(table.contains(&format!("\nVerdict: {verdict}\n")), "{table}");
    let policy = with(&["-o", "policy"]);
    let text = stdout(&policy);
    assert!(text.starts_with(&format!("# verdict: {verdict}\n")), "{text}");
    assert_eq!(String::from_utf8_lossy(&policy.stderr), format!("verdict: {verdict}\n"));
    // Today's policy, as the baseline gives it: its rules kept, its limit.
    assert!(text.contains("retryLimit: 3\n"), "{text}");
    assert!(
        text.contains("# kept from today: ml-today/0 (decided 0 runs)\n"),
        "{text}"
    );
    let validated = run(home.path(), &["validate", "--upstream", "-f", "-"], &text);
    assert_eq!(validated.status.code(), Some(0), "{}", format_output(&validated));
    // An `--output-file` that held a document gets the new one.
    let kept = home.path().join("suggested.yaml");
    std::fs::write(&kept, "# last week's proposal\n").unwrap();
    with(&["-o", "policy", "--output-file", kept.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), text);
}

#[test]
fn allow_empty_changes_nothing_of_a_history_with_jobs() {
    let home = temp_home();
    let history = "testdata/histories";
    for (verb, _) in VERBS {
        let mut args = verb.to_vec();
        args.extend(["--history", history, "-o", "json"]);
        let without = run(home.path(), &args, "");
        args.push("--allow-empty");
        let with = run(home.path(), &args, "");
        assert_eq!(format_output(&with), format_output(&without));
        assert!(!with.stdout.is_empty(), "{}", format_output(&with));
    }
}

#[test]
fn an_empty_shard_still_writes_its_partial() {
    let home = temp_home();
    let file = home.path().join("week.jsonl");
    std::fs::write(&file, "").unwrap();
    for verb in [VERBS[0].0, VERBS[2].0] {
        let mut partials = Vec::new();
        for shard in ["0/2", "1/2"] {
            let mut args = verb.to_vec();
            args.extend(["--history", file.to_str().unwrap(), "--shard", shard, "-o", "partial"]);
            let out = run(home.path(), &args, "");
            assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
            assert!(!out.stdout.is_empty(), "{}", format_output(&out));
            let partial = home.path().join(format!("{}-{}.json", verb[0], partials.len()));
            std::fs::write(&partial, &out.stdout).unwrap();
            partials.push(partial.display().to_string());
        }
        // A sharded suggest's merge learns from nothing: the empty input's words.
        if verb[0] == "suggest" {
            let mut merge = vec!["merge"];
            merge.extend(partials.iter().map(String::as_str));
            refused(
                &run(home.path(), &merge, ""),
                &format!("error: no job in `{}`: nothing to learn from\n", file.display()),
            );
        }
    }
}

/// `VERB --lookout-db DSN --queue QUEUE WINDOW…` (history: `history --queue …`).
fn lookout(home: &Path, db: &Db, verb: &[&str], queue: &str, window: &[&str], extra: &[&str]) -> Output {
    let mut args = verb.to_vec();
    args.extend(["--lookout-db", db.dsn.as_str(), "--queue", queue]);
    args.extend_from_slice(window);
    args.extend_from_slice(extra);
    run(home, &args, "")
}

#[test]
fn a_lookout_window_or_queue_with_no_job_names_where_the_jobs_are() {
    let Some(db) = fixture_db("empty_input") else { return };
    let home = temp_home();
    let masked = db.masked();
    // The fixture's `ml` jobs: ml-18 on 2026-11-01, the others from 2026-11-16 on.
    let quiet = ["--from", "2026-11-02T00:00:00Z", "--to", "2026-11-16T00:00:00Z"];
    let verbs = VERBS.iter().copied().chain([(&["history"][..], "nothing to export")]);
    for (verb, nothing) in verbs {
        refused(
            &lookout(home.path(), &db, verb, "ml", &quiet, &[]),
            &format!(
                "error: no job in Lookout `{masked}` (queue `ml`, 2026-11-02T00:00:00Z–2026-11-16T00:00:00Z): {nothing}\n\n\
                 hint: queue `ml` has jobs submitted on 2026-11-01 (before the window) and 2026-11-16 (after it)\n"
            ),
        );
        refused(
            &lookout(home.path(), &db, verb, "mll", &WINDOW, &[]),
            &format!(
                "error: no job in Lookout `{masked}` (queue `mll`, 2026-11-15T00:00:00Z–2026-11-22T00:00:00Z): {nothing}\n\n\
                 hint: queue `mll` has no job in Lookout; check the name\n"
            ),
        );
        // One side of the window: the date on that side only; no window: no parenthesis
        // but the queue.
        refused(
            &lookout(home.path(), &db, verb, "ml", &["--to", "2026-11-01T00:00:00Z"], &[]),
            &format!(
                "error: no job in Lookout `{masked}` (queue `ml`, before 2026-11-01T00:00:00Z): {nothing}\n\n\
                 hint: queue `ml` has jobs submitted on 2026-11-01 (after the window)\n"
            ),
        );
        refused(
            &lookout(home.path(), &db, verb, "mll", &[], &[]),
            &format!(
                "error: no job in Lookout `{masked}` (queue `mll`): {nothing}\n\n\
                 hint: queue `mll` has no job in Lookout; check the name\n"
            ),
        );
        // `--allow-empty`: exit 0 as before.
        let out = lookout(home.path(), &db, verb, "ml", &quiet, &["--allow-empty"]);
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    }
}

#[test]
fn an_empty_lookout_shard_still_writes_its_partial() {
    let Some(db) = fixture_db("empty_shard") else { return };
    let home = temp_home();
    let quiet = ["--from", "2026-11-02T00:00:00Z", "--to", "2026-11-16T00:00:00Z"];
    let out = lookout(
        home.path(),
        &db,
        VERBS[0].0,
        "ml",
        &quiet,
        &["--shard", "0/2", "-o", "partial"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(!out.stdout.is_empty(), "{}", format_output(&out));
}
