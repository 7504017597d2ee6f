//! Upstream's executor texts, built as upstream builds them: the Go literals vendored in
//! `contract/executor/formats.txt` (each under its `PATH:LINE`), read when the tests run and
//! formatted as Go's `fmt.Sprintf` formats the verbs they use (`%s`, `%d`, `%q`, `%v`). So a
//! text a test stores in Lookout is one the executor writes, not one the test's author
//! remembers. The crate's own unit tests include this file too (`#[path]`): it reads the
//! file from the repository's root and needs nothing else of the test support.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The file's entries: `PATH:LINE` → the literal, unquoted.
fn entries() -> &'static HashMap<String, String> {
    static ENTRIES: OnceLock<HashMap<String, String>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contract/executor/formats.txt");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut out = HashMap::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(head) = line.strip_prefix("# ") else { continue };
            let at = head.split_once(' ').map_or(head, |(at, _)| at).to_string();
            let literal = lines.next().unwrap_or_else(|| panic!("{at}: no literal"));
            out.insert(at, unquote(literal));
        }
        out
    })
}

/// A Go double-quoted literal's text (the escapes the file's literals use); any other form
/// (a raw string, an SQL fragment) as it is.
fn unquote(literal: &str) -> String {
    let Some(inner) = literal.strip_prefix('"').and_then(|l| l.strip_suffix('"')) else {
        return literal.to_string();
    };
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            other => panic!("an escape the formats do not use: \\{other:?}"),
        }
    }
    out
}

/// The literal at `at` (`internal/executor/podchecks/event_checks.go:102`).
pub fn literal(at: &str) -> &'static str {
    entries()
        .get(at)
        .unwrap_or_else(|| panic!("no entry `{at}` in contract/executor/formats.txt"))
}

/// One argument of a Go format verb.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// `%s` or `%v` of a string (a `time.Duration` written as Go writes it: `15m0s`).
    Text(&'a str),
    /// `%d`.
    Int(i64),
}

/// `fmt.Sprintf(format, args...)` for the verbs the formats use: `%s`, `%v`, `%d`, and `%q`
/// (`strconv.Quote` of a plain name: in double quotes, `"` and `\` escaped).
pub fn sprintf(format: &str, args: &[Arg]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let verb = chars.next().expect("a verb after %");
        let arg = args
            .next()
            .unwrap_or_else(|| panic!("no argument for %{verb} in {format:?}"));
        match (verb, arg) {
            ('s' | 'v', Arg::Text(t)) => out.push_str(t),
            ('d', Arg::Int(n)) => out.push_str(&n.to_string()),
            ('q', Arg::Text(t)) => {
                out.push('"');
                out.push_str(&t.replace('\\', "\\\\").replace('"', "\\\""));
                out.push('"');
            }
            _ => panic!("%{verb} of {arg:?} in {format:?}"),
        }
    }
    assert!(args.next().is_none(), "arguments left over for {format:?}");
    out
}

/// `sprintf` of the literal at `at`.
pub fn format(at: &str, args: &[Arg]) -> String {
    sprintf(literal(at), args)
}

use Arg::{Int, Text};

/// `createStuckPodMessage(retryable, checks)` (`pod_issue_handler.go:789-794`).
pub fn stuck_pod(retryable: bool, checks: &str) -> String {
    let at = if retryable { "791" } else { "793" };
    format(
        &format!("internal/executor/service/pod_issue_handler.go:{at}"),
        &[Text(checks)],
    )
}

/// An event check's message (`event_checks.go:102`).
pub fn matched_check(check: &str, event_message: &str) -> String {
    format(
        "internal/executor/podchecks/event_checks.go:102",
        &[Text(check), Text(event_message)],
    )
}

/// A container-state check's message (`container_state_checks.go:116`), in state `Waiting`
/// (`configuration/podchecks/types.go:19`, the only state upstream checks).
pub fn waiting(container: &str, reason: &str, message: &str, check: &str, timeout: &str) -> String {
    let waiting = literal("internal/executor/configuration/podchecks/types.go:19");
    format(
        "internal/executor/podchecks/container_state_checks.go:116",
        &[
            Text(container),
            Text(waiting),
            Text(reason),
            Text(message),
            Text(check),
            Text(timeout),
        ],
    )
}

/// The pod checks' messages joined as `PodChecks.GetAction` joins them (`pod_checks.go:103`).
pub fn checks(messages: &[&str]) -> String {
    messages.join(literal("internal/executor/podchecks/pod_checks.go:103"))
}

/// One line of `ExtractPodFailedReason` (`util/pod_status.go:31`), its newline included.
pub fn failed_container(name: &str, exit_code: i64, reason: &str, message: &str) -> String {
    format(
        "internal/executor/util/pod_status.go:31",
        &[Text(name), Int(exit_code), Text(reason), Text(message)],
    )
}

/// `ClassifyResult.AppendHint(message)` (`classifier.go:59-64`): the message alone when the
/// rule has no hint.
pub fn append_hint(message: &str, hint: &str) -> String {
    if hint.is_empty() {
        return message.to_string();
    }
    format(
        "internal/executor/categorizer/classifier.go:63",
        &[Text(message), Text(hint)],
    )
}

/// The text the Lookout ingester stores for a reason it has no case for
/// (`instructions.go:490`): a lease expiry a retry policy declined.
pub fn unknown_error() -> &'static str {
    literal("internal/lookoutingester/instructions/instructions.go:490")
}

/// A structural issue's fixed text (`pod_issue_handler.go:352`, active deadline).
pub fn active_deadline() -> &'static str {
    literal("internal/executor/service/pod_issue_handler.go:352")
}
