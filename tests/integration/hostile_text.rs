//! Text from the history never leaves its place (docs/cli.md "Text from the history"): job
//! ids, termination messages, node names, categories and file names holding terminal
//! escapes and line breaks are shown escaped (`\x1b`) in the table formats and on stderr of
//! every verb that prints them; markdown and html keep a file name inside its code span.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::support::stub::{Reply, Stub};
use crate::support::{format_output, retryctl, root, temp_home};

/// A job id made to attack a terminal: cursor up and erase line, an OSC title ended by BEL,
/// NUL, and every line break (`\n`, `\r`, U+0085, U+2028).
const HOSTILE: &str = "a\x1b[A\x1b[Kb\x1b]0;t\x07c\0d\ne\rf\u{85}g\u{2028}h";
/// [`HOSTILE`] as the terminal formats show it.
const SHOWN: &str = r"a\x1b[A\x1b[Kb\x1b]0;t\x07c\x00d\x0ae\x0df\u0085g\u2028h";

const POLICY: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  defaultAction: Fail\n  rules:\n    - {action: Retry, onExitCodes: {operator: In, values: [3]}}\n";
const FAIL_POLICY: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  defaultAction: Fail\n  rules:\n    - {action: Fail, onExitCodes: {operator: In, values: [3]}}\n";

/// The first control character or line break in `bytes` that reached the output raw
/// (newlines between lines aside).
fn raw_control(bytes: &[u8]) -> Option<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .find(|&c| c != '\n' && (c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')))
}

/// Asserts that neither stdout nor stderr holds a raw control character.
fn assert_escaped(out: &Output) {
    for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some(c) = raw_control(bytes) {
            panic!("{c:?} reached {what} raw:\n{}", format_output(out));
        }
    }
}

/// A job whose one failed run (exit 3 in `main`, on a hostile node, with a hostile category
/// and message) is followed by a success.
fn job(id: &str) -> Value {
    json!({
        "job": {"id": id, "queue": "q"},
        "runs": [
            {"node": format!("node{HOSTILE}"), "category": format!("cat{HOSTILE}"), "runFor": "60s",
             "containers": [{"name": "main", "exitCode": 3, "message": format!("boom {HOSTILE}")}]},
            {"outcome": "succeeded"}
        ]
    })
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// 12 hostile jobs (`HOSTILE-0` …) as JSON Lines, and the two policies, in `dir`.
fn bulk(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let lines: String = (0..12)
        .map(|k| format!("{}\n", job(&format!("{HOSTILE}-{k}"))))
        .collect();
    (
        write(dir, "h.jsonl", &lines),
        write(dir, "p.yaml", POLICY),
        write(dir, "fail.yaml", FAIL_POLICY),
    )
}

fn run(home: &Path, args: &[&str]) -> Output {
    retryctl(home).args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn missing_queue(id: &str) -> String {
    format!("warning: job `{id}`: queue `q` is not among the documents given with -f; using every policy given (`p`) for the jobs of this queue\n")
}

#[test]
fn simulate_shows_a_jobs_table_and_its_messages_escaped() {
    let home = temp_home();
    let mut one = job(HOSTILE);
    one["apiVersion"] = json!("armadaproject.io/v1");
    one["kind"] = json!("FailureHistory");
    one["expect"] = json!({"final": "Failed"});
    let history = write(home.path(), "one.yaml", &one.to_string());
    let policy = write(home.path(), "p.yaml", POLICY);
    let out = run(home.path(), &["simulate", "-f", s(&policy), "--history", s(&history)]);
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(1), "{}", format_output(&out));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], format!("job {SHOWN}"));
    let row = lines.iter().find(|l| l.starts_with("  0 ")).unwrap();
    for cell in [
        format!("armada-{SHOWN}-0"),
        format!("node{SHOWN}"),
        format!("container main exit 3, category cat{SHOWN}"),
    ] {
        assert!(row.contains(&cell), "{cell} not in {row}");
    }
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}error: job `{SHOWN}`: expectation not met: job: expected final `Failed`, got `Succeeded` (Succeeded at run 1 after 1 retry)\nwarning: 1 job id of the history cannot be part of a pod name (`armada-<id>-0` must be a lowercase RFC 1123 name) `{SHOWN}`: read all the same, the pod-name collisions and node anti-affinity replayed for them are approximate\n",
            missing_queue(SHOWN)
        )
    );
}

#[test]
fn bulk_summaries_comparisons_and_merges_show_ids_and_categories_escaped() {
    let home = temp_home();
    let (history, policy, fail) = bulk(home.path());
    let categorizer = root().join("testdata/categorizer/executor-config.yaml");
    let out = run(
        home.path(),
        &[
            "simulate",
            "-f",
            s(&policy),
            "--history",
            s(&history),
            "--categorizer",
            s(&categorizer),
        ],
    );
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(
        text(&out.stdout).contains(&format!("\n  category changes: cat{SHOWN} → uncategorized 12\n")),
        "{}",
        format_output(&out)
    );
    // Only the first job's warning: one per queue.
    assert_eq!(
        text(&out.stderr),
        format!(
            "{}warning: 12 job ids of the history cannot be part of a pod name (`armada-<id>-0` must be a lowercase RFC 1123 name), the first `{SHOWN}-0`: read all the same, the pod-name collisions and node anti-affinity replayed for them are approximate\n",
            missing_queue(&format!("{SHOWN}-0"))
        )
    );

    let compare = [
        "simulate",
        "-f",
        s(&policy),
        "--history",
        s(&history),
        "--baseline",
        s(&fail),
        "--all-changes",
    ];
    let out = run(home.path(), &compare);
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let stdout = text(&out.stdout);
    for k in 0..12 {
        let line = format!("\n  ~ {SHOWN}-{k}: Failed");
        assert!(stdout.contains(&line), "{line} not in {stdout}");
    }

    // Shards and their merge: the same bytes as one process, escaped alike.
    // The contention section is not summed in shards: one process leaves it out too.
    let whole = run(home.path(), &[&compare[..7], &["--contention", "off"]].concat());
    let mut partials = Vec::new();
    for i in 0..2 {
        let shard = format!("{i}/2");
        let out = run(
            home.path(),
            &[
                &compare[..7],
                &["--shard", &shard, "-o", "partial", "--contention", "off"],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        partials.push(write(home.path(), &format!("s{i}.partial"), &text(&out.stdout)));
    }
    let merged = run(home.path(), &["merge", s(&partials[0]), s(&partials[1])]);
    assert_escaped(&merged);
    assert_eq!(merged.status.code(), Some(0), "{}", format_output(&merged));
    assert_eq!(text(&merged.stdout), text(&whole.stdout));
    assert_eq!(
        text(&merged.stderr),
        format!(
            "{}warning: 12 job ids of the history cannot be part of a pod name (`armada-<id>-0` must be a lowercase RFC 1123 name), the first `{SHOWN}-0`: read all the same, the pod-name collisions and node anti-affinity replayed for them are approximate\n",
            missing_queue(&format!("{SHOWN}-0"))
        )
    );
}

#[test]
fn tune_and_suggest_show_ids_nodes_and_signatures_escaped() {
    let home = temp_home();
    let (history, policy, _) = bulk(home.path());
    // Candidate 2 fails every job the baseline retries: its warning names the lost jobs.
    let out = run(
        home.path(),
        &[
            "tune",
            "-f",
            s(&policy),
            "--history",
            s(&history),
            "--vary",
            "p:spec.rules[0].action=Retry,Fail",
            "--pick",
            "2",
            "--force",
        ],
    );
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("loses 12 jobs the baseline saves (`{SHOWN}-0`, `{SHOWN}-1`")),
        "{stderr}"
    );
    let out = run(
        home.path(),
        &[
            "tune",
            "-f",
            s(&policy),
            "--history",
            s(&history),
            "--vary",
            "p:spec.rules[0].action=Retry,Fail",
        ],
    );
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));

    for format in ["table", "markdown"] {
        let out = run(
            home.path(),
            &["suggest", "--history", s(&history), "--min-trials", "5", "-o", format],
        );
        assert_escaped(&out);
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    }
}

/// Errors and the report of an invalid history file name the file as it is, escaped.
#[test]
fn file_names_in_errors_and_reports_are_escaped() {
    let home = temp_home();
    let policy = write(home.path(), "p.yaml", POLICY);
    let dir = home.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    write(
        &dir,
        "x\x1b[2Jy.yaml",
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j}\nruns: [{bogus: 1}]\n",
    );
    let out = run(home.path(), &["simulate", "-f", s(&policy), "--history", s(&dir)]);
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(r"x\x1b[2Jy.yaml"), "{stderr}");

    let missing = home.path().join("gone\x1b]0;t\x07.jsonl");
    let out = run(home.path(), &["simulate", "-f", s(&policy), "--history", s(&missing)]);
    assert_escaped(&out);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: ") && stderr.contains(r"gone\x1b]0;t\x07.jsonl"),
        "{stderr}"
    );
}

/// `history`'s report of a row it left out names the job as Lookout holds it, escaped.
#[test]
fn history_reports_a_left_out_row_escaped() {
    let jobs = json!([{
        "jobId": HOSTILE, "queue": "ml", "owner": "alice", "jobSet": "s", "cpu": 1000, "memory": 1024,
        "ephemeralStorage": 0, "gpu": 0, "priority": 1, "submitted": "2026-11-16T08:00:00Z",
        "state": "FAILED", "lastTransitionTime": "2026-11-16T09:00:00Z", "duplicate": false,
        "annotations": {},
        "runs": [
            {"runId": "r1", "cluster": "c1", "node": "n", "leased": "2026-11-16T08:00:10Z",
             "started": "2026-11-16T08:00:15Z", "finished": "infinity", "jobRunState": "RUN_FAILED", "exitCode": 1},
            {"runId": "r2", "cluster": "c1", "node": "n", "leased": "2026-11-16T08:00:10Z",
             "started": "2026-11-16T08:00:15Z", "finished": "2026-11-16T08:01:00Z", "jobRunState": "RUN_FAILED", "exitCode": 1}
        ]
    }]);
    let stub = Stub::start(move |req| match req.path.as_str() {
        "/api/v1/jobs" => Reply::json(200, json!({ "jobs": jobs })),
        "/api/v1/jobRunError" => Reply::json(200, json!({ "errorString": "boom" })),
        _ => Reply::json(404, json!({"error": "not found"})),
    });
    let home = temp_home();
    let out = run(home.path(), &["history", "--queue", "ml", "--lookout-url", &stub.url]);
    assert_eq!(raw_control(&out.stderr), None, "{}", format_output(&out));
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().next().unwrap(),
        format!("warning: job `{SHOWN}` run `r1`: field finished: `infinity` is not an RFC 3339 time retryctl can represent; run left out")
    );
    // The document itself is data: JSON escapes the id, which reads back as it was.
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["job"]["id"], HOSTILE);
}

/// Markdown and html keep a file name with a backtick, a newline and `<` inside the `Write it:`
/// command's code span: escaped as a job id is, nothing injected.
#[test]
fn markdown_and_html_reports_escape_file_names() {
    let home = temp_home();
    let (history, _, fail) = bulk(home.path());
    let name = "h`x\n# injected <b>y.jsonl";
    let hostile_history = home.path().join(name);
    std::fs::rename(&history, &hostile_history).unwrap();
    let hostile_policy = home.path().join("p`\n<i>.yaml");
    std::fs::rename(&fail, &hostile_policy).unwrap();
    // Quoted as bash decodes them back (`$'…'`), so the command runs as printed.
    let shown_history = format!(r"$'{}/h`x\n# injected <b>y.jsonl'", home.path().display());
    let shown_policy = format!(r"$'{}/p`\n<i>.yaml'", home.path().display());
    let html = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('\'', "&#39;")
    };

    let suggest = ["suggest", "--history", s(&hostile_history), "--min-trials", "5"];
    let out = run(home.path(), &[&suggest[..], &["-o", "markdown"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let command = format!("retryctl suggest --history {shown_history} --min-trials 5 -o policy > suggested.yaml");
    let md = text(&out.stdout);
    assert!(md.contains(&format!("\nWrite it: ``{command}``\n")), "{md}");
    assert!(!md.contains("\n# injected"), "{md}");
    let out = run(home.path(), &[&suggest[..], &["-o", "html"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let page = text(&out.stdout);
    assert!(
        page.contains(&format!("Write it: <code>{}</code>", html(&command))),
        "{page}"
    );
    assert!(!page.contains("<b>y"), "{page}");
    let out = run(home.path(), &suggest);
    assert_escaped(&out);
    assert!(text(&out.stdout).contains(&format!("\nWrite the proposal:  {command}\n")));

    let tune = [
        "tune",
        "-f",
        s(&hostile_policy),
        "--history",
        s(&hostile_history),
        "--vary",
        "p:spec.rules[0].action=Retry,Fail",
    ];
    let command =
        format!("retryctl tune -f {shown_policy} --vary 'p:spec.rules[0].action=Retry,Fail' --pick 1 -o yaml");
    let out = run(home.path(), &[&tune[..], &["-o", "markdown"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let md = text(&out.stdout);
    assert!(md.contains(&format!("\nWrite it: ``{command}``\n")), "{md}");
    let out = run(home.path(), &[&tune[..], &["-o", "html"]].concat());
    let page = text(&out.stdout);
    assert!(
        page.contains(&format!("<p>Write it: <code>{}</code></p>", html(&command))),
        "{page}"
    );
    assert!(!page.contains("<i>"), "{page}");
    let out = run(home.path(), &tune);
    assert_escaped(&out);
    assert!(text(&out.stdout).contains(&format!("\n  write it: {command}\n")));
}

/// The proposal's scalars (a container name in the executor's config) and `-o yaml` hold a
/// name with every YAML 1.1 line break and control characters escaped: PyYAML reads back
/// exactly the name the history holds, and one document per document written.
#[test]
fn suggest_yaml_scalars_escape_line_breaks_and_control_characters() {
    let Some(python) = crate::support::python::python() else {
        return;
    };
    let home = temp_home();
    let container = "main\u{2028}x: 1\u{2029}y\u{85}z\rw\x1b[2J\x07";
    let lines: String = (0..30)
        .map(|k| {
            let failed = json!({"node": "n", "runFor": "60s", "containers": [{"name": container, "exitCode": 3}]});
            format!(
                "{}\n",
                json!({"job": {"id": format!("j{k}")}, "runs": [failed, {"outcome": "succeeded"}]})
            )
        })
        .collect();
    let history = write(home.path(), "h.jsonl", &lines);
    let base = [
        "suggest",
        "--history",
        s(&history),
        "--min-trials",
        "5",
        "--engine",
        "upstream",
    ];
    let out = run(home.path(), &[&base[..], &["-o", "policy"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert_eq!(raw_control(&out.stdout), None, "{}", format_output(&out));
    let policy = write(home.path(), "policy.yaml", &text(&out.stdout));
    let read = crate::support::python::run(
        &python,
        "import sys, yaml\nd = list(yaml.safe_load_all(open(sys.argv[1], encoding='utf-8')))\nprint(len(d), ascii(d[0]['errorCategories']['categories'][0]['rules'][0]['containerName']))",
        &[s(&policy)],
    );
    assert_eq!(read, format!("2 {}\n", ascii(container)));
    let out = run(home.path(), &[&base[..], &["-o", "yaml"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert_eq!(raw_control(&out.stdout), None, "{}", format_output(&out));
    let doc = write(home.path(), "out.yaml", &text(&out.stdout));
    let read = crate::support::python::run(
        &python,
        "import sys, yaml\nd = yaml.safe_load(open(sys.argv[1], encoding='utf-8'))\nprint(ascii(d['suggest']['proposal']['rules'][0]['signature']))",
        &[s(&doc)],
    );
    assert_eq!(read, format!("{}\n", ascii(&format!("exit:3@{container}"))));
}

/// Python's `ascii()` of a string: how the test reads PyYAML's answer back without a raw
/// control character in the test's own output.
fn ascii(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    out.push('\'');
    out
}

/// The commands `suggest` and `tune` print to be run next run as printed, whatever the file
/// names hold: a history and a policy whose names hold a line break and a quote, pasted into
/// bash from the table, do what the same command given the names does.
#[test]
fn printed_commands_run_in_bash_as_printed() {
    let home = temp_home();
    let dir = home.path().join("work");
    std::fs::create_dir(&dir).unwrap();
    let data = root().join("testdata/suggest");
    let history = "we\nek's.jsonl";
    std::fs::copy(data.join("planted.jsonl"), dir.join(history)).unwrap();
    std::fs::copy(data.join("today.yaml"), dir.join("today.yaml")).unwrap();
    let bin_dir = assert_cmd::cargo::cargo_bin("retryctl").parent().unwrap().to_path_buf();
    let in_dir = |args: &[&str]| retryctl(home.path()).current_dir(&dir).args(args).output().unwrap();
    // The printed line, run by bash in the same directory, `retryctl` found on PATH.
    let bash = |line: &str| {
        let out = std::process::Command::new("bash")
            .current_dir(&dir)
            .env_clear()
            .env("HOME", home.path())
            .env("NO_COLOR", "1")
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .args(["-c", line])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{line}: {}", format_output(&out));
        out
    };
    let printed = |stdout: &[u8], label: &str| -> String {
        let text = text(stdout);
        let line = text
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(label))
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{text}"))
            .trim_start()
            .to_string();
        assert!(line.contains(r"$'we\nek\'s.jsonl'"), "{line}");
        line
    };

    let out = in_dir(&["suggest", "--baseline", "today.yaml", "--history", history]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let write = printed(&out.stdout, "Write the proposal:");
    let search = printed(&out.stdout, "Search its limits:");
    bash(&write);
    let direct = in_dir(&[
        "suggest",
        "--history",
        history,
        "--baseline",
        "today.yaml",
        "-o",
        "policy",
    ]);
    assert_eq!(direct.status.code(), Some(0), "{}", format_output(&direct));
    assert_eq!(
        text(&std::fs::read(dir.join("suggested.yaml")).unwrap()),
        text(&direct.stdout)
    );

    // `tune`, as suggest printed it, of the proposal renamed to hold a line break too; then
    // the line tune prints to write its pick.
    let policy = "sug\ngested.yaml";
    std::fs::rename(dir.join("suggested.yaml"), dir.join(policy)).unwrap();
    let searched = bash(&search.replace("-f suggested.yaml", r"-f $'sug\ngested.yaml'"));
    let pick = text(&searched.stdout)
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("write it:"))
        .unwrap_or_else(|| panic!("no `write it:` line in:\n{}", text(&searched.stdout)))
        .trim_start()
        .to_string();
    assert!(pick.contains(r"-f $'sug\ngested.yaml'"), "{pick}");
    let written = bash(&pick);
    assert!(
        text(&written.stdout).contains("kind: RetryPolicy"),
        "{}",
        text(&written.stdout)
    );
}

/// A line break in a value the command line gave stays on the error's line (`\x0a`), as its
/// escapes do, in the house's errors and in clap's refusals alike: a name cannot forge a
/// second `error:` line for a script that reads them.
#[test]
fn a_line_break_in_an_argument_stays_on_the_error_line() {
    let home = temp_home();
    for (args, want) in [
        (
            vec!["get", "rp", "a\x1b[31mb\nerror: forged", "--armada-url", "http://127.0.0.1:1"],
            "exit: 2\n--- stdout\n--- stderr\nerror: invalid retry policy name `a\\x1b[31mb\\x0aerror: forged`: character `\\x1b` at position 2 is not allowed; use lowercase letters, digits and `-`\n",
        ),
        (
            vec!["delete", "bo\ngus/foo"],
            "exit: 2\n--- stdout\n--- stderr\nerror: unknown resource type `bo\\x0agus` in `bo\\x0agus/foo`: expected `retrypolicy` (`rp`) or `queue` (`q`)\n",
        ),
        (
            vec!["simulate", "--contention", "a\nerror: forged"],
            "exit: 2\n--- stdout\n--- stderr\nerror: invalid value `a\\x0aerror: forged` for `--contention <MODE>`\n  [possible values: auto, on, off]\n\nFor more information, try `--help`.\n",
        ),
    ] {
        let out = retryctl(home.path()).args(&args).output().unwrap();
        assert_eq!(format_output(&out), want, "{args:?}");
    }
}
