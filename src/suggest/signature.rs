//! A failed run's signature (docs/reference/suggest.md "Signatures"): the text that names what
//! went wrong in it, from its own signals, so that a reader can recompute it by hand.
//!
//! Owns: [`signature`] (one run → its signature), [`template`] (a message → its masked
//! template) and the parts a proposed rule is built from ([`Signature`]). Pure: no I/O, and
//! no regular expressions (the masks are scanned by hand so that every step is the one the
//! docs write down, in their order).

use crate::model::failure_history::{Container, Run};
use crate::model::policy::Condition;

/// Characters of a message's first line a template keeps.
pub const TEMPLATE_CHARS: usize = 160;

/// The pod-level conditions a signature names, in their order of precedence.
pub const CONDITIONS: [Condition; 4] = [
    Condition::Evicted,
    Condition::DeadlineExceeded,
    Condition::Preempted,
    Condition::Unschedulable,
];

/// What a signature is made of: enough to print it and to build its rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    Condition(Condition),
    Container {
        /// `None`: an OOM kill (`oom`); else the exit code.
        exit: Option<i64>,
        /// Empty for an unnamed container.
        name: String,
        init: bool,
        /// The termination message's template; empty when it has none.
        template: String,
        /// The message's first line was longer than [`TEMPLATE_CHARS`].
        cut: bool,
    },
    PodError {
        template: String,
        cut: bool,
    },
    Category {
        category: String,
        subcategory: Option<String>,
    },
    Unknown,
}

impl Signature {
    /// The printed signature: its identity.
    pub fn text(&self) -> String {
        match self {
            Signature::Condition(c) => format!("condition:{}", c.as_str()),
            Signature::Container {
                exit,
                name,
                init,
                template,
                ..
            } => {
                let mut s = match exit {
                    None => "oom".to_string(),
                    Some(code) => format!("exit:{code}"),
                };
                match (init, name.is_empty()) {
                    (true, true) => s.push_str("@init"),
                    (true, false) => {
                        s.push_str("@init:");
                        s.push_str(name);
                    }
                    (false, false) => {
                        s.push('@');
                        s.push_str(name);
                    }
                    (false, true) => {}
                }
                if !template.is_empty() {
                    s.push_str(" \"");
                    s.push_str(template);
                    s.push('"');
                }
                s
            }
            Signature::PodError { template, .. } => format!("podError \"{template}\""),
            Signature::Category {
                category,
                subcategory: Some(sub),
            } => format!("category:{category}/{sub}"),
            Signature::Category { category, .. } => format!("category:{category}"),
            Signature::Unknown => "unknown".to_string(),
        }
    }

    /// The message template of a container or pod-error signature (empty for others).
    pub fn template(&self) -> &str {
        match self {
            Signature::Container { template, .. } | Signature::PodError { template, .. } => template,
            _ => "",
        }
    }
}

/// The first failed non-init container of `run`, else its first failed init container.
pub fn failed_container(run: &Run) -> Option<&Container> {
    run.containers
        .iter()
        .find(|c| !c.init && c.failed())
        .or_else(|| run.containers.iter().find(|c| c.init && c.failed()))
}

/// How many of `run`'s containers failed (init containers included).
pub fn failed_containers(run: &Run) -> usize {
    run.containers.iter().filter(|c| c.failed()).count()
}

/// The signature of a failed run, by the docs' order of precedence.
pub fn signature(run: &Run) -> Signature {
    if let Some(c) = CONDITIONS.iter().find(|c| run.conditions.contains(c)) {
        return Signature::Condition(*c);
    }
    if let Some(c) = failed_container(run) {
        let (template, cut) = c.message.as_deref().map_or((String::new(), false), template);
        return Signature::Container {
            exit: (c.reason.as_deref() != Some("OOMKilled")).then_some(c.exit_code),
            name: c.name.clone(),
            init: c.init,
            template,
            cut,
        };
    }
    if let Some(e) = run.pod_error.as_deref() {
        let (template, cut) = template(e);
        if !template.is_empty() {
            return Signature::PodError { template, cut };
        }
    }
    match run.category.as_deref() {
        Some(c) if !c.is_empty() => Signature::Category {
            category: c.to_string(),
            subcategory: run.subcategory.clone().filter(|s| !s.is_empty()),
        },
        _ => Signature::Unknown,
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A message's template, and whether its first line was longer than [`TEMPLATE_CHARS`]:
/// the first line, its first 160 characters, UUIDs → `<uuid>`, hex words → `<hex>`, runs
/// of digits → `<n>`, blanks → one space, trimmed.
pub fn template(message: &str) -> (String, bool) {
    let line = message.split('\n').next().unwrap_or("");
    let (line, cut) = match line.char_indices().nth(TEMPLATE_CHARS) {
        Some((at, _)) => (&line[..at], true),
        None => (line, false),
    };
    let s = mask_uuids(line);
    let s = mask_hex_words(&s);
    let s = mask_digits(&s);
    (squeeze_blanks(&s), cut)
}

/// `8-4-4-4-12` hex digits not inside a longer word → `<uuid>`.
fn mask_uuids(s: &str) -> String {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let b = s.as_bytes();
    let at = |i: usize| -> Option<usize> {
        if i > 0 && is_word(b[i - 1]) {
            return None;
        }
        let mut j = i;
        for (k, n) in GROUPS.iter().enumerate() {
            if k > 0 {
                if b.get(j) != Some(&b'-') {
                    return None;
                }
                j += 1;
            }
            if j + n > b.len() || !b[j..j + n].iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            j += n;
        }
        (j == b.len() || !is_word(b[j])).then_some(j)
    };
    let mut out = String::with_capacity(s.len());
    let (mut i, mut from) = (0, 0);
    while i < b.len() {
        match at(i) {
            Some(end) => {
                out.push_str(&s[from..i]);
                out.push_str("<uuid>");
                i = end;
                from = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&s[from..]);
    out
}

/// A word that is `0x` and hex digits, or 6 or more hex digits with both a digit and a
/// letter a–f.
fn is_hex_word(w: &[u8]) -> bool {
    if w.len() > 2 && w.starts_with(b"0x") && w[2..].iter().all(u8::is_ascii_hexdigit) {
        return true;
    }
    w.len() >= 6
        && w.iter().all(u8::is_ascii_hexdigit)
        && w.iter().any(u8::is_ascii_digit)
        && w.iter().any(u8::is_ascii_alphabetic)
}

fn mask_hex_words(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut i, mut from) = (0, 0);
    while i < b.len() {
        if !is_word(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_word(b[i]) {
            i += 1;
        }
        if is_hex_word(&b[start..i]) {
            out.push_str(&s[from..start]);
            out.push_str("<hex>");
            from = i;
        }
    }
    out.push_str(&s[from..]);
    out
}

fn mask_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_digits = false;
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                out.push_str("<n>");
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(ch);
        }
    }
    out
}

fn squeeze_blanks(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for ch in s.chars() {
        if matches!(ch, ' ' | '\t' | '\r' | '\x0c') {
            blank = true;
            continue;
        }
        if blank && !out.is_empty() {
            out.push(' ');
        }
        blank = false;
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::Outcome;

    fn t(s: &str) -> String {
        template(s).0
    }

    #[test]
    fn templates_mask_in_the_documented_order() {
        let rows = [
            (
                "RuntimeError: CUDA error 700 at step 1234",
                "RuntimeError: CUDA error <n> at step <n>",
            ),
            ("job 123e4567-e89b-12d3-a456-426614174000 failed", "job <uuid> failed"),
            // inside a longer word: not a UUID; its hex parts are words of their own.
            (
                "x123e4567-e89b-12d3-a456-426614174000",
                "x<n>e<n>-e<n>b-<n>d<n>-a<n>-<n>",
            ),
            ("addr 0x7ffd1234 and 0XAB", "addr <hex> and <n>XAB"),
            (
                "sha deadbeef1 vs cafe12 vs abcdef vs 123456",
                "sha <hex> vs <hex> vs abcdef vs <n>",
            ),
            ("DEADBEEF12 upper", "<hex> upper"),
            ("pod-7f9c4b-xk2 died", "pod-<hex>-xk<n> died"),
            ("  tabs\tand\r\x0c  spaces  ", "tabs and spaces"),
            ("first line\nsecond 42", "first line"),
            ("v1.2.3 ok", "v<n>.<n>.<n> ok"),
            ("", ""),
            ("   ", ""),
            ("literal <n> text", "literal <n> text"),
            ("ünïcödé 12", "ünïcödé <n>"),
        ];
        for (input, want) in rows {
            assert_eq!(t(input), want, "template of {input:?}");
        }
    }

    #[test]
    fn a_template_keeps_160_characters_of_the_first_line() {
        let long = "é".repeat(170);
        let (s, cut) = template(&long);
        assert_eq!(s.chars().count(), 160);
        assert!(cut);
        let (s, cut) = template(&"a".repeat(160));
        assert_eq!(s.len(), 160);
        assert!(!cut);
        // The cut is before masking: a number across the 160th character loses its tail.
        let (s, _) = template(&format!("{}12345", "z".repeat(158)));
        assert_eq!(s, format!("{}<n>", "z".repeat(158)));
    }

    fn run() -> Run {
        Run {
            outcome: Outcome::Failed,
            ..Run::default()
        }
    }

    fn container(name: &str, init: bool, exit: i64, reason: Option<&str>, message: Option<&str>) -> Container {
        Container {
            name: name.into(),
            init,
            exit_code: exit,
            reason: reason.map(Into::into),
            message: message.map(Into::into),
        }
    }

    #[test]
    fn signatures_follow_the_order_of_precedence() {
        let mut r = run();
        r.conditions = vec![Condition::OOMKilled, Condition::Preempted, Condition::Evicted];
        r.containers = vec![container("main", false, 137, Some("OOMKilled"), None)];
        assert_eq!(signature(&r).text(), "condition:Evicted");

        let mut r = run();
        r.conditions = vec![Condition::OOMKilled];
        r.containers = vec![
            container("init", true, 1, None, None),
            container("side", false, 0, None, None),
            container("main", false, 137, Some("OOMKilled"), Some("killed")),
        ];
        assert_eq!(signature(&r).text(), "oom@main \"killed\"");

        let mut r = run();
        r.containers = vec![
            container("setup", true, 2, None, Some("  ")),
            container("main", false, 0, None, None),
        ];
        assert_eq!(signature(&r).text(), "exit:2@init:setup");
        r.containers[0].name.clear();
        assert_eq!(signature(&r).text(), "exit:2@init");

        let mut r = run();
        r.containers = vec![container("", false, 1, None, Some("Error: id 42"))];
        assert_eq!(signature(&r).text(), "exit:1 \"Error: id <n>\"");

        let mut r = run();
        r.pod_error = Some("failed to pull image \"reg/x:1.2\": 404".into());
        r.category = Some("infra".into());
        assert_eq!(
            signature(&r).text(),
            "podError \"failed to pull image \"reg/x:<n>.<n>\": <n>\""
        );

        let mut r = run();
        r.category = Some("gpu".into());
        r.subcategory = Some("xid".into());
        assert_eq!(signature(&r).text(), "category:gpu/xid");
        r.subcategory = None;
        assert_eq!(signature(&r).text(), "category:gpu");
        r.category = Some(String::new());
        assert_eq!(signature(&r).text(), "unknown");
    }
}
