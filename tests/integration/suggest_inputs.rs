//! `suggest`'s inputs and their edges: its flags, stdin and Lookout giving what a file gives,
//! unreadable lines said as `simulate` says them, hostile messages kept inert, more than
//! 10,000 signatures, the html page in a browser, the guide's history, the OOM kills of two
//! containers, a spool that cannot be written. The planted history and its helpers are
//! `suggest`'s.

use serde_json::{json, Value};

use super::suggest::*;
use crate::support::{retryctl, root, temp_home};

#[test]
fn bad_flags_are_usage_errors_with_nothing_on_stdout() {
    let p = setup(3);
    let home = temp_home();
    let rows: [(&[&str], &str); 8] = [
        (&["--futile", "0"], "error: invalid `--futile` `0`: expected a share strictly between 0 and 1, such as `0.05`\n"),
        (&["--futile", "1"], "error: invalid `--futile` `1`: expected a share strictly between 0 and 1, such as `0.05`\n"),
        (&["--futile", "NaN"], "error: invalid `--futile` `NaN`: expected a share strictly between 0 and 1, such as `0.05`\n"),
        (&["--min-trials", "0"], "error: invalid `--min-trials` `0`: expected 1 or more\n"),
        (&["--max-limit", "0"], "error: invalid `--max-limit` `0`: expected 1 to 10000\n"),
        (&["--max-limit", "10001"], "error: invalid `--max-limit` `10001`: expected 1 to 10000\n"),
        (&["--name", ""], "error: invalid `--name` ``: expected a policy name (lowercase letters, digits and `-`, at most 63, starting and ending with a letter or digit)\n"),
        // A shard writes its learning for `merge`, and nothing else.
        (&["--shard", "0/2"], "error: `suggest --shard 0/2` writes what the shard learned: give `-o partial`, then `retryctl merge` the shards' partials\n"),
    ];
    for (flags, want) in rows {
        let mut args = vec!["suggest", "--history", path(&p.history)];
        args.extend_from_slice(flags);
        let out = run(home.path(), &args);
        assert_eq!(
            crate::support::format_output(&out),
            format!("exit: 2\n--- stdout\n--- stderr\n{want}"),
            "{flags:?}"
        );
    }
    // No job to learn from: exit 3, nothing on stdout.
    let empty = home.path().join("bad.jsonl");
    std::fs::write(&empty, "{not json\n").unwrap();
    let out = run(home.path(), &["suggest", "--history", path(&empty)]);
    assert_eq!(out.status.code(), Some(3), "{}", crate::support::format_output(&out));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .ends_with("error: no job could be replayed (1 entry not read): there is nothing to learn from\n"),
        "{}",
        crate::support::format_output(&out)
    );
}

#[test]
fn stdin_gives_what_the_file_gives() {
    let p = setup(5);
    let home = temp_home();
    let from_file = on_planted(&p, home.path(), &[]);
    let out = retryctl(home.path())
        .current_dir(root())
        .args(["suggest", "--history", "-", "--baseline", path(&p.baseline)])
        .write_stdin(std::fs::read(&p.history).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let file_text = String::from_utf8(from_file.stdout).unwrap();
    // The same but for the history's name in the commands at the end.
    assert_eq!(
        text.replace("--history -", &format!("--history {}", path(&p.history))),
        file_text
    );
}

/// Lines that cannot be read, on stdin as in a file: said once, on stderr, in the history's
/// words, and counted in the comparison as `simulate --baseline` counts them (the second pass
/// replays pass 1's copy, which holds them in their place: docs/reference/suggest.md "Sources
/// and passes").
#[test]
fn unreadable_lines_are_said_once_and_counted_as_simulate_counts_them() {
    let p = setup(5);
    let home = temp_home();
    let mut history = std::fs::read_to_string(&p.history).unwrap();
    let at = history.lines().count() + 1;
    history.push_str("{\"job\":{\"id\":\"bad\"},\"runs\":[{\"outcome\":\"nope\"}]}\n{not json\n");
    let file = p.history.with_file_name("with-bad-lines.jsonl");
    std::fs::write(&file, &history).unwrap();
    let said = |name: &str| {
        format!(
            "error: {name}:{at}: runs[0].outcome: unknown value `nope`, expected one of `failed`, `succeeded`, `leaseReturned`, `cancelled`\n\
             error: {name}:{}: ",
            at + 1
        )
    };
    let json = ["-o", "json", "--baseline", path(&p.baseline)];
    let from_file = run(
        home.path(),
        &[&["suggest", "--history", path(&file)][..], &json].concat(),
    );
    let from_stdin = retryctl(home.path())
        .current_dir(root())
        .args([&["suggest", "--history", "-"][..], &json].concat())
        .write_stdin(history)
        .output()
        .unwrap();
    let simulate = run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&p.baseline),
            "--baseline",
            path(&p.baseline),
            "--history",
            path(&file),
            "-o",
            "json",
        ],
    );
    let errors = |out: &std::process::Output, at: &str| -> Value {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v.pointer(at).cloned().unwrap()
    };
    assert_eq!(
        errors(&simulate, "/comparison/errors"),
        json!(2),
        "{}",
        String::from_utf8_lossy(&simulate.stdout)
    );
    for (out, name) in [(&from_file, path(&file)), (&from_stdin, "<stdin>")] {
        // Unreadable lines are invalid input in every verb (exit 3), its output whole.
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(errors(out, "/suggest/proposal/comparison/errors"), json!(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(&said(name)), "{stderr}");
        assert_eq!(stderr.matches("error: ").count(), 2, "{stderr}");
    }
}

/// A failed run whose message is hostile text: markup, Markdown, regex metacharacters.
const HOSTILE: &str = "<script>alert(1)</script> | `rm -rf` [x](y) .*+?^$ \\d {3} \"q\" 'a' & é";

#[test]
fn hostile_messages_stay_inert() {
    let home = temp_home();
    let mut jobs = String::new();
    for k in 0..30 {
        let run =
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3, "message": HOSTILE}]});
        let next = if k % 2 == 0 {
            json!({"outcome": "succeeded"})
        } else {
            run.clone()
        };
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [run, next]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let run_o = |o: &str| {
        run(
            home.path(),
            &["suggest", "--history", path(&history), "--min-trials", "5", "-o", o],
        )
    };
    let html = String::from_utf8(run_o("html").stdout).unwrap();
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(&lt;n&gt;)&lt;/script&gt;"), "{html}");
    let md = String::from_utf8(run_o("markdown").stdout).unwrap();
    assert!(
        md.contains("\\<script\\>alert(\\<n\\>)\\</script\\> \\| \\`rm -rf\\`"),
        "{md}"
    );
    // The proposed pattern matches the message literally: the rule decides its own runs.
    let policy = run_o("policy");
    assert_eq!(
        policy.status.code(),
        Some(0),
        "{}",
        crate::support::format_output(&policy)
    );
    let file = home.path().join("p.yaml");
    std::fs::write(&file, &policy.stdout).unwrap();
    let out = run(home.path(), &["validate", "-f", path(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let v = json_of(&run_o("json"));
    assert_eq!(v["suggest"]["proposal"]["rules"][0]["action"], "Retry");
    assert_eq!(
        v["suggest"]["proposal"]["shadowedRuns"],
        json!([{"signature": v["suggest"]["proposal"]["rules"][0]["signature"], "runs": 0}])
    );
    let sim = json_of(&run(
        home.path(),
        &["simulate", "-f", path(&file), "--history", path(&history), "-o", "json"],
    ));
    // Every first failure retried by the rule: 30 jobs, the limit 1 (no history shows a
    // second retry, so none is proposed).
    assert_eq!(sim["summary"]["retriesByRule"], json!({"suggested/0": 30}));
}

#[test]
fn past_ten_thousand_signatures_the_rest_count_as_other() {
    let home = temp_home();
    let word = |mut n: usize| {
        let mut w = String::new();
        for _ in 0..4 {
            w.push((b'a' + (n % 26) as u8) as char);
            n /= 26;
        }
        w
    };
    let mut jobs = String::new();
    for k in 0..10_050 {
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [{"containers": [{"name": "main", "exitCode": 1, "message": format!("error {}", word(k))}]}]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let v = json_of(&run(
        home.path(),
        &["suggest", "--history", path(&history), "-o", "json"],
    ));
    let sigs = v["suggest"]["signatures"].as_array().unwrap();
    assert_eq!(sigs.len(), 10_001);
    let other = sigs.iter().find(|s| s["signature"] == "other").unwrap();
    assert_eq!(
        (&other["failedRuns"], &other["jobs"], &other["noRule"]),
        (&json!(50), &json!(50), &json!("no signal to match on"))
    );
    // The first 10,000 met are kept: the last job's signature is not.
    assert!(!sigs
        .iter()
        .any(|s| s["signature"] == format!("exit:1@main \"error {}\"", word(10_049))));
}

#[test]
fn the_html_page_opens_in_a_browser() {
    let p = setup(7);
    let home = temp_home();
    let out = on_planted(
        &p,
        home.path(),
        &["--backtest-at", "2026-11-15T00:00:00Z", "-o", "html"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<rect class=\"futile\"").count(), 9);
    let Some(browser) = crate::support::chromium::chromium() else {
        return;
    };
    let page = home.path().join("suggest.html");
    std::fs::write(&page, &html).unwrap();
    let dom = crate::support::chromium::dump_dom(&browser, &page);
    assert!(dom.contains("Proposed retry policy"), "{dom}");
    assert!(dom.contains("gpu-bad-1"), "{dom}");
    assert!(dom.contains("false kills"), "{dom}");
}

#[test]
fn lookout_gives_what_its_export_gives() {
    let Some(db) = crate::support::pg::fixture_db("suggest_lookout") else {
        return;
    };
    let home = temp_home();
    let (file, _) = crate::support::pg::export_week(home.path(), &db);
    for o in ["json", "yaml", "markdown"] {
        let from_file = run(
            home.path(),
            &[
                "suggest",
                "--history",
                path(&file),
                "--baseline",
                "testdata/lookout/old",
                "--min-trials",
                "1",
                // The fixture's baseline is not what made its record: judged all the same.
                "--max-contradictions",
                "100%",
                "-o",
                o,
            ],
        );
        let mut args = vec!["suggest", "--lookout-db", &db.dsn, "--queue", "ml"];
        args.extend_from_slice(&crate::support::pg::WINDOW);
        args.extend_from_slice(&[
            "--baseline",
            "testdata/lookout/old",
            "--min-trials",
            "1",
            "--max-contradictions",
            "100%",
            "-o",
            o,
        ]);
        let from_db = run(home.path(), &args);
        assert_eq!(
            from_db.status.code(),
            Some(0),
            "{}",
            crate::support::format_output(&from_db)
        );
        assert!(!from_file.stdout.is_empty());
        let (db_text, file_text) = (
            String::from_utf8_lossy(&from_db.stdout),
            String::from_utf8_lossy(&from_file.stdout),
        );
        if o == "markdown" {
            // The command that writes the proposal (only when the verdict is to adopt it:
            // here today's rules are kept and nothing has evidence) names the source; the
            // DSN never shows.
            // The documents differ by the Queue that `--queue` (given to the database's run)
            // writes.
            let cut = |t: &str| t[..t.find("<details>").unwrap_or(t.len())].to_string();
            assert_eq!(cut(&db_text), cut(&file_text));
            assert!(
                db_text.contains("**Verdict: keep (keep today's policy)** — the proposal changes nothing that matters"),
                "{db_text}"
            );
            assert!(!db_text.contains(&db.dsn), "{db_text}");
        } else {
            assert_eq!(db_text, file_text, "-o {o}");
        }
        // The database is read once: `history`'s summary is said once.
        let err = String::from_utf8_lossy(&from_db.stderr);
        assert_eq!(err.matches("history: exported").count(), 1, "{err}");
    }
}

/// The history the suggest guide (docs/suggest.md) runs on is [`planted`]'s, seed 7
/// (`RETRYCTL_UPDATE_TESTDATA=1` writes it after a change of the generator).
#[test]
fn the_guides_history_is_the_planted_one() {
    let want: String = planted(7).iter().map(|j| format!("{j}\n")).collect();
    let file = root().join("testdata/suggest/planted.jsonl");
    if std::env::var_os("RETRYCTL_UPDATE_TESTDATA").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &want).unwrap();
        std::fs::write(root().join("testdata/suggest/today.yaml"), BASELINE).unwrap();
    }
    assert!(
        std::fs::read_to_string(&file).unwrap() == want,
        "testdata/suggest/planted.jsonl is stale: RETRYCTL_UPDATE_TESTDATA=1 rewrites it"
    );
    assert_eq!(
        std::fs::read_to_string(root().join("testdata/suggest/today.yaml")).unwrap(),
        BASELINE
    );
}

/// Upstream names the container of an OOM category (`containerName` with `onConditions:
/// [OOMKilled]`): two containers' OOM signatures, which may be proposed apart, get a category
/// and a rule each, and each one's runs are decided by its own rule.
#[test]
fn oom_kills_of_two_containers_get_a_category_each() {
    let home = temp_home();
    let mut jobs = String::new();
    for k in 0..20 {
        for (name, id) in [("main", "m"), ("side", "s")] {
            let oom = json!({"node": "n", "runFor": "60s", "containers": [{"name": name, "exitCode": 137, "reason": "OOMKilled"}]});
            jobs.push_str(&format!(
                "{}\n",
                json!({"job": {"id": format!("{id}{k}")}, "runs": [oom, {"outcome": "succeeded"}]})
            ));
        }
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let args = [
        "suggest",
        "--history",
        path(&history),
        "--engine",
        "upstream",
        "--min-trials",
        "5",
        "-o",
        "json",
    ];
    let v = json_of(&run(home.path(), &args));
    let p = &v["suggest"]["proposal"];
    assert_eq!(
        p["rules"],
        json!([
            {"signature": "oom@main", "action": "Retry", "limit": 1, "avoidSameNode": false},
            {"signature": "oom@side", "action": "Retry", "limit": 1, "avoidSameNode": false},
        ])
    );
    assert_eq!(
        p["categories"],
        json!([
            {"name": "s-oom-main-ffa7ead7", "action": "Delete", "signatures": ["oom@main"]},
            {"name": "s-oom-side-ad0ca28d", "action": "Delete", "signatures": ["oom@side"]},
        ])
    );
    assert_eq!(
        p["shadowedRuns"],
        json!([{"signature": "oom@main", "runs": 0}, {"signature": "oom@side", "runs": 0}])
    );
    // Every run was retried by its own rule.
    let c = &p["comparison"];
    assert_eq!(c["jobs"], 40);
}

/// stdin is read once and spooled: a temporary directory that cannot be written is said,
/// with where, and nothing is printed (exit 1).
#[test]
fn a_spool_that_cannot_be_written_says_where() {
    let home = temp_home();
    let out = retryctl(home.path())
        .current_dir(root())
        .env("TMPDIR", "/nonexistent-retryctl-tmp")
        .args(["suggest", "--history", "-"])
        .write_stdin(r#"{"job":{"id":"a"},"runs":[{"containers":[{"name":"m","exitCode":1}]}]}"#)
        .output()
        .unwrap();
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 1\n--- stdout\n--- stderr\nerror: cannot write the temporary copy of the history in `/nonexistent-retryctl-tmp`: no such file or directory\n\nhint: set TMPDIR to a directory with room to write\n"
    );
}
