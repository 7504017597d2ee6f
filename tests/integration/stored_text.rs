//! Stored text is shown escaped (docs/cli.md "Text from the history"): a resource on the
//! server is anyone's text (a pattern, a label, an owner, a category today's Armada stores as
//! sent), and its control characters and bidirectional controls (U+202A–U+202E,
//! U+2066–U+2069, which reorder what follows on the line) are shown as escapes in `get`'s
//! tables (`-o wide`, custom columns) and in `describe`, as history text is in every table,
//! markdown, html and YAML comment; the design dialect refuses them in category names.

use std::process::Output;

use serde_json::json;

use crate::serve_process::spawn;
use crate::support::{format_output, retryctl, temp_home, Session};

/// ESC and BEL (an OSC title), then a right-to-left override: valid in a regular expression.
const PATTERN: &str = "x\x1b]0;t\x07\u{202e}y";
const PATTERN_SHOWN: &str = r"x\x1b]0;t\x07\u202ey";

/// Whether `c` would act on a terminal or reorder its line: a control character (newlines
/// between lines aside), a YAML line break, a bidirectional control.
fn acts(c: char) -> bool {
    c != '\n'
        && (c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
}

/// Stdout of a run that succeeds, with nothing on it that [`acts`].
fn shown(out: Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.chars().any(acts), "raw: {text:?}");
    text
}

#[test]
fn get_and_describe_show_a_stored_resources_text_escaped() {
    let srv = spawn(&["--listen", "127.0.0.1:0", "--in-memory"]);
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    let policy = json!({
        "apiVersion": "armadaproject.io/v1", "kind": "RetryPolicy", "metadata": {"name": "p"},
        "spec": {"retryLimit": 3, "defaultAction": "Fail",
                 "rules": [{"action": "Retry", "onTerminationMessage": {"pattern": PATTERN}}]}
    });
    let queue = json!({
        "apiVersion": "armadaproject.io/v1beta1", "kind": "Queue", "name": "q", "priorityFactor": 1,
        "userOwners": ["al\x1bice\u{2067}"], "labels": {"team": "a\x1b[31mb\u{202a}"}, "retryPolicies": ["p"]
    });
    // JSON is YAML: the file holds the characters as escapes, the documents the characters.
    std::fs::write(&file, format!("{policy}\n---\n{queue}\n")).unwrap();
    s.ok(&["apply", "-f", file.to_str().unwrap()]);
    assert_eq!(
        shown(s.cmd().args(["get", "rp", "-o", "wide"]).output().unwrap()),
        "NAME   RETRY LIMIT   DEFAULT   RULES   BACKOFF   ANTI-AFFINITY   MATCHES\n\
         p      3             Fail      1       -         -               Retry:message\n"
    );
    assert_eq!(
        shown(s.cmd().args(["get", "q", "-o", "wide"]).output().unwrap()),
        "NAME   PRIORITY FACTOR   CORDONED   RETRY POLICIES   OWNERS            GROUPS   LABELS\n\
         q      1                 false      p                al\\x1bice\\u2067   -        team=a\\x1b[31mb\\u202a\n"
    );
    assert_eq!(
        shown(
            s.cmd()
                .args([
                    "get",
                    "q",
                    "-o",
                    "custom-columns=NAME:.name,TEAM:.labels.team,OWNER:.userOwners[0]"
                ])
                .output()
                .unwrap()
        ),
        "NAME   TEAM               OWNER\nq      a\\x1b[31mb\\u202a   al\\x1bice\\u2067\n"
    );
    let described = shown(s.cmd().args(["describe", "rp", "p"]).output().unwrap());
    assert!(
        described.contains(&format!(
            "  1. Retry when the termination message matches `{PATTERN_SHOWN}`\n"
        )),
        "{described}"
    );
    let described = shown(s.cmd().args(["describe", "queue", "q"]).output().unwrap());
    assert!(
        described.contains(&format!(
            "     1. when the termination message matches `{PATTERN_SHOWN}`: retry up to 3"
        )),
        "{described}"
    );
    // The data formats keep the text, as their own escapes write it.
    let json = s.ok(&["get", "rp", "p", "-o", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["spec"]["rules"][0]["onTerminationMessage"]["pattern"], PATTERN);
}

/// Today's Armada stores a category as sent: `retryctl serve --dialect upstream` too. `get -o
/// wide` and `describe` (in today's Armada's terms) show it escaped.
#[test]
fn a_category_todays_armada_stored_is_shown_escaped() {
    let srv = spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    let body = json!({"name": "p", "retryLimit": 3, "defaultAction": "Fail",
                      "rules": [{"action": "Retry", "onCategory": "oom\x1b[2J\u{202e}x", "onSubcategory": "s\x07"}]});
    let answer = reqwest::blocking::Client::new()
        .post(format!("{}/v1/retry-policy", srv.url))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200, "{}", answer.text().unwrap());
    let s = Session::new(&srv.url);
    assert_eq!(
        shown(s.cmd().args(["get", "rp", "-o", "wide"]).output().unwrap()),
        "NAME   RETRY LIMIT   DEFAULT   RULES   BACKOFF   ANTI-AFFINITY   MATCHES\n\
         p      3             Fail      1       -         -               Retry:category oom\\x1b[2J\\u202ex\n"
    );
    let described = shown(s.cmd().args(["describe", "rp", "p"]).output().unwrap());
    assert!(
        described
            .contains("  1. Retry when the failure category is oom\\x1b[2J\\u202ex and the subcategory is s\\x07\n"),
        "{described}"
    );
}

/// The design dialect refuses a control character or a bidirectional control in a category
/// name, as upstream refuses them in names, at the field and its line:column; a condition
/// name is one of the conditions, so such text is an unknown value.
#[test]
fn a_category_or_condition_name_with_a_control_character_is_invalid() {
    let home = temp_home();
    let file = home.path().join("p.yaml");
    std::fs::write(
        &file,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata:\n  name: p\nspec:\n  defaultAction: Fail\n  rules:\n    - action: Retry\n      onFailureCategory: [\"oom\\e[2J\"]\n      onFailureSubcategory: [\"a\\u202Eb\"]\n    - action: Retry\n      onConditions: [\"OOM\\aKilled\"]\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = retryctl(home.path()).args(["validate", "-f", f]).output().unwrap();
    assert_eq!(
        format_output(&out),
        format!(
            "exit: 3\n--- stdout\nchecked 1 document in 1 file: 0 valid, 1 invalid; 3 errors, 0 warnings\n--- stderr\n{f} (RetryPolicy `p`)\n\
             \x20 error: 9:27 spec.rules[0].onFailureCategory[0]: `oom\\x1b[2J` must not contain a control character (`\\x1b` at position 4)\n\
             \x20 error: 10:30 spec.rules[0].onFailureSubcategory[0]: `a\\u202eb` must not contain a bidirectional control (`\\u202e` at position 2)\n\
             \x20 error: 12:22 spec.rules[1].onConditions[0]: unknown value `OOM\\x07Killed`, expected one of `OOMKilled`, `Evicted`, `Preempted`, `DeadlineExceeded`, `Unschedulable`; did you mean `OOMKilled`?\n"
        )
    );
}

/// History text holding bidirectional controls is escaped where control characters already
/// were: the table, markdown and html of `simulate`, the YAML comments of `suggest -o policy`.
#[test]
fn history_text_with_bidirectional_controls_is_escaped() {
    let home = temp_home();
    let id = "job\u{202e}fdp.exe\u{2066}";
    let history = home.path().join("h.yaml");
    let document = json!({"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory", "job": {"id": id, "queue": "q"},
                          "runs": [{"runFor": "60s", "containers": [{"name": "main", "exitCode": 3}]}, {"outcome": "succeeded"}]});
    std::fs::write(&history, document.to_string()).unwrap();
    let policy = home.path().join("p.yaml");
    std::fs::write(
        &policy,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  defaultAction: Fail\n  rules:\n    - {action: Retry, onExitCodes: {operator: In, values: [3]}}\n",
    )
    .unwrap();
    let baseline = home.path().join("fail.yaml");
    std::fs::write(
        &baseline,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  defaultAction: Fail\n  rules:\n    - {action: Fail, onExitCodes: {operator: In, values: [3]}}\n",
    )
    .unwrap();
    let (p, h, b) = (
        policy.to_str().unwrap(),
        history.to_str().unwrap(),
        baseline.to_str().unwrap(),
    );
    // The job's table; the changed job of a comparison in each report format.
    for args in [
        vec!["simulate", "-f", p, "--history", h],
        vec!["simulate", "-f", p, "--baseline", b, "--history", h, "-o", "table"],
        vec!["simulate", "-f", p, "--baseline", b, "--history", h, "-o", "markdown"],
        vec!["simulate", "-f", p, "--baseline", b, "--history", h, "-o", "html"],
    ] {
        let text = shown(retryctl(home.path()).args(&args).output().unwrap());
        assert!(text.contains(r"job\u202efdp.exe\u2066"), "{args:?}: {text}");
    }
    // `suggest -o policy`: a termination message in the comment above its rule.
    let lines: String = (0..30)
        .map(|k| {
            let failed = json!({"node": "n", "runFor": "60s",
                                "containers": [{"name": "main", "exitCode": 3, "message": "Error: disk \u{202e}full\u{2066} now"}]});
            format!("{}\n", json!({"job": {"id": format!("j{k}")}, "runs": [failed, {"outcome": "succeeded"}]}))
        })
        .collect();
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, lines).unwrap();
    let args = [
        "suggest",
        "--history",
        history.to_str().unwrap(),
        "--min-trials",
        "5",
        "-o",
        "policy",
    ];
    let text = shown(retryctl(home.path()).args(args).output().unwrap());
    assert!(
        text.contains("    # exit:3@main \"Error: disk \\u202efull\\u2066 now\"\n"),
        "{text}"
    );
}

/// `tune` names a varied rule by its first matcher: a pattern's text, escaped in its table.
#[test]
fn tune_shows_a_rules_pattern_escaped() {
    let home = temp_home();
    let dir = home.path().join("new");
    std::fs::create_dir(&dir).unwrap();
    let policy = json!({
        "apiVersion": "armadaproject.io/v1", "kind": "RetryPolicy", "metadata": {"name": "p"},
        "spec": {"retryLimit": 3, "defaultAction": "Fail",
                 "rules": [{"action": "Retry", "onTerminationMessage": {"pattern": PATTERN}},
                           {"action": "Retry", "onExitCodes": {"operator": "In", "values": [3]}}]}
    });
    std::fs::write(dir.join("p.yaml"), policy.to_string()).unwrap();
    let root = crate::support::root();
    let examples = root.join("docs/examples/estimates");
    std::fs::copy(examples.join("new/queue.yaml"), dir.join("queue.yaml")).unwrap();
    let out = retryctl(home.path())
        .args(["tune", "-f", dir.to_str().unwrap(), "--baseline"])
        .arg(examples.join("old"))
        .arg("--history")
        .arg(examples.join("history.jsonl"))
        .args(["--vary", "p:spec.rules[0].retryLimit=1..2"])
        .output()
        .unwrap();
    let text = shown(out);
    assert!(
        text.contains(&format!(
            "  varying: rules[0] (message \"{PATTERN_SHOWN}\") retryLimit\n"
        )),
        "{text}"
    );
}
