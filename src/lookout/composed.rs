//! Lookout's `job_run.error` back into the containers it names. Pure: text in, containers out.
//!
//! The executor does not send a container's termination message as the run's error: it
//! composes one line per failed container (terminated, non-zero exit code; regular containers
//! then init containers),
//!
//! ```text
//! Container NAME failed with exit code N because REASON: MESSAGE
//! ```
//!
//! each ended by a newline, or sends the pod's own status message instead. Lookout stores that
//! text as it came. [`containers`] reads the composed form back: a container's `MESSAGE` is
//! its raw termination message, whose own newlines belong to it until the next line that
//! starts another container's record. A text that does not start with a record (the pod's
//! status message, an executor's issue text, anything else) is not this form: `None`, and the
//! caller keeps it whole as one unnamed container's message.
//!
//! Why a record must start its line and be whole (a name without spaces, an `int32` exit code,
//! `because`, a `: ` after the reason): a termination message is the application's text and
//! can say anything, including "Container x failed"; only the executor's exact shape at the
//! start of a line ends the message before it. A reason holds no `: ` (Kubernetes' reasons
//! are single words such as `Error`, `OOMKilled`, `ContainerCannotRun`), so the first `: `
//! after `because ` ends it; an empty reason (`because : …`) is no reason.

/// One container named by a composed error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    pub name: String,
    pub exit_code: i32,
    /// `None` when the executor had none (`because : …`).
    pub reason: Option<String>,
    /// The raw termination message; `None` when it was empty.
    pub message: Option<String>,
}

/// The containers of a composed error text, in its order; `None` when `text` is not in the
/// composed form (the caller keeps it as one unnamed container's message).
pub fn containers(text: &str) -> Option<Vec<Composed>> {
    let mut out: Vec<Composed> = Vec::new();
    // The message of the record being read, as byte offsets into `text`.
    let mut body: Option<(usize, usize)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        if let Some((name, exit_code, reason, first)) = record(content) {
            if let Some((a, b)) = body.take() {
                set_message(out.last_mut(), &text[a..b]);
            }
            out.push(Composed {
                name: name.to_string(),
                exit_code,
                reason: (!reason.is_empty()).then(|| reason.to_string()),
                message: None,
            });
            let start = at + (content.len() - first.len());
            body = Some((start, at + line.len()));
        } else if let Some((_, end)) = &mut body {
            *end = at + line.len();
        } else {
            // The first line is not a record: not the composed form.
            return None;
        }
        at += line.len();
    }
    if let Some((a, b)) = body {
        set_message(out.last_mut(), &text[a..b]);
    }
    (!out.is_empty()).then_some(out)
}

/// `message` without the one newline the executor ends each record with.
fn set_message(c: Option<&mut Composed>, message: &str) {
    let message = message.strip_suffix('\n').unwrap_or(message);
    if let Some(c) = c {
        c.message = (!message.is_empty()).then(|| message.to_string());
    }
}

/// `(name, exit code, reason, the message's first line)` when `line` is a record's first line.
fn record(line: &str) -> Option<(&str, i32, &str, &str)> {
    let rest = line.strip_prefix("Container ")?;
    let (name, rest) = rest.split_once(" failed with exit code ")?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let (code, rest) = rest.split_once(" because ")?;
    let digits = code.strip_prefix('-').unwrap_or(code);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let exit_code: i32 = code.parse().ok()?;
    let (reason, message) = rest.split_once(": ")?;
    Some((name, exit_code, reason, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, code: i32, reason: Option<&str>, message: Option<&str>) -> Composed {
        Composed {
            name: name.into(),
            exit_code: code,
            reason: reason.map(String::from),
            message: message.map(String::from),
        }
    }

    #[test]
    fn composed_texts_read_back_row_by_row() {
        let cases: Vec<(&str, &str, Option<Vec<Composed>>)> = vec![
            (
                "one container",
                "Container main failed with exit code 1 because Error: boom\n",
                Some(vec![c("main", 1, Some("Error"), Some("boom"))]),
            ),
            (
                "several, regular then init, as the executor writes them",
                "Container main failed with exit code 2 because Error: bad input\nContainer sidecar failed with exit code 143 because Error: \nContainer init-db failed with exit code 1 because Error: no database\n",
                Some(vec![
                    c("main", 2, Some("Error"), Some("bad input")),
                    c("sidecar", 143, Some("Error"), None),
                    c("init-db", 1, Some("Error"), Some("no database")),
                ]),
            ),
            (
                "a message's own newlines belong to it until the next record",
                "Container main failed with exit code 1 because Error: Traceback:\n  File \"x.py\"\nValueError: bad\n\nContainer side failed with exit code 3 because Error: line one\nline two\n",
                Some(vec![
                    c("main", 1, Some("Error"), Some("Traceback:\n  File \"x.py\"\nValueError: bad\n")),
                    c("side", 3, Some("Error"), Some("line one\nline two")),
                ]),
            ),
            (
                "no reason",
                "Container main failed with exit code 127 because : exec: not found\n",
                Some(vec![c("main", 127, None, Some("exec: not found"))]),
            ),
            (
                "OOMKilled, no message (upstream's own OOM test case)",
                "Container oom failed with exit code 137 because OOMKilled: \n",
                Some(vec![c("oom", 137, Some("OOMKilled"), None)]),
            ),
            (
                "a negative exit code is an int32 like any other",
                "Container main failed with exit code -1 because ContainerCannotRun: no such file\n",
                Some(vec![c("main", -1, Some("ContainerCannotRun"), Some("no such file"))]),
            ),
            (
                "a text cut at the cap keeps its last message as cut",
                "Container main failed with exit code 1 because Error: long… [truncated]",
                Some(vec![c("main", 1, Some("Error"), Some("long… [truncated]"))]),
            ),
            (
                "a message quoting the shape mid-line stays in its message",
                "Container main failed with exit code 1 because Error: said Container x failed with exit code 2 because Error: y\n",
                Some(vec![c("main", 1, Some("Error"), Some("said Container x failed with exit code 2 because Error: y"))]),
            ),
            (
                "a line in a message that only looks like a record stays in the message",
                "Container main failed with exit code 1 because Error: first\nContainer main failed with exit code one because Error: x\nContainer failed with exit code 2 because Error: y\nContainer a b failed with exit code 2 because Error: z\nContainer c failed with exit code 2 because Error\n",
                Some(vec![c(
                    "main",
                    1,
                    Some("Error"),
                    Some("first\nContainer main failed with exit code one because Error: x\nContainer failed with exit code 2 because Error: y\nContainer a b failed with exit code 2 because Error: z\nContainer c failed with exit code 2 because Error"),
                )]),
            ),
            ("the pod's own status message", "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi.", None),
            ("garbage", "\u{0}\u{7f}garbage: Container", None),
            ("empty", "", None),
            (
                "a first line that only looks like a record",
                "Container main failed with exit code 99999999999 because Error: too big\n",
                None,
            ),
            ("lower case is not the executor's", "container main failed with exit code 1 because Error: x\n", None),
            (
                "text before the first record: not the composed form",
                "Lease expired\nContainer main failed with exit code 1 because Error: x\n",
                None,
            ),
        ];
        for (what, text, want) in cases {
            assert_eq!(containers(text), want, "{what}");
        }
    }
}
