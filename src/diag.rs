//! Diagnostics: one error or warning about one place in one document.
//!
//! Owns: the [`Diagnostic`] value every checker produces (decoder, validator, linter,
//! simulate's history checks) and the rule for writing user values in messages. Must not:
//! print, decide exit codes, or know which file a document came from (the caller adds that).

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Serialize;

use crate::yaml::Pos;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding. `path` is the field path inside the document (`spec.rules[2].action`), empty
/// for the document as a whole; `pos` is where it stands when the source text is known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// A stable, kebab-case identifier (`unknown-field`, `shadowed-rule`) for scripts.
    pub code: &'static str,
    pub path: String,
    #[serde(skip)]
    pub pos: Option<Pos>,
    pub message: String,
}

impl Diagnostic {
    pub fn error(code: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            path: path.into(),
            pos: None,
            message: message.into(),
        }
    }

    pub fn warning(code: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            code,
            path: path.into(),
            pos: None,
            message: message.into(),
        }
    }

    pub fn at(mut self, pos: Pos) -> Self {
        self.pos = Some(pos);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The errors among `diagnostics` on one line, `path: message; path: message`, for places
/// that have no room for a report (an HTTP error body, a one-line error).
pub fn describe_errors(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            if d.path.is_empty() {
                d.message.clone()
            } else {
                format!("{}: {}", d.path, d.message)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Joins a field path and a child key: `join("spec", "rules")` is `spec.rules`.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `index("spec.rules", 2)` is `spec.rules[2]`.
pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// A user value for a message: backticked, shortened when long, control characters and
/// line breaks escaped by [`shown`]'s rule. Only those are escaped: a regex such as `\d+`
/// must read as the user wrote it, not as `\\d+`.
pub fn quote(value: &str) -> String {
    const MAX: usize = 80;
    let short: String = value.chars().take(MAX).collect();
    let more = if value.chars().count() > MAX { "…" } else { "" };
    format!("`{}{more}`", shown(&short))
}

/// ` (`a`, `b` and 3 more)`: the first of `total` items named (each escaped), what is left
/// counted; empty when none is named.
pub fn named(items: &[String], total: u64, max: usize) -> String {
    let list: Vec<String> = items.iter().take(max).map(|j| format!("`{}`", shown(j))).collect();
    let more = total.saturating_sub(list.len() as u64);
    match (list.is_empty(), more) {
        (true, _) => String::new(),
        (false, 0) => format!(" ({})", list.join(", ")),
        (false, more) => format!(" ({} and {more} more)", list.join(", ")),
    }
}

/// `1,234,567`: a count with its thousands grouped, as the reports and messages write it.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Whether `c` is written as an escape: every control character (C0, DEL, C1), the line
/// breaks a terminal or a YAML 1.1 reader knows that are not control characters (U+2028,
/// U+2029), and the bidirectional controls (U+202A–U+202E embeddings and overrides, U+2066–U+2069
/// isolates): shown raw, one would reorder what follows it on the line, so that a name reads
/// as another ("Trojan Source").
pub fn is_escaped(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') || is_bidi_control(c)
}

/// The bidirectional embedding, override and isolate controls: U+202A–U+202E, U+2066–U+2069.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every control character, line break and bidirectional control escaped (`\x1b`,
/// `\x07`, `\x00`, `\x0a`, `\u0085`, `\u2028`, `\u202e`): one line, and nothing a terminal
/// acts on, reorders, or a YAML reader ends a comment at. The one rule for history text on a terminal (`output::text`), in a
/// message ([`quote`]) and in a YAML comment (`suggest::documents`). Borrowed when there is
/// nothing to escape, the usual case.
pub fn shown(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_escaped) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_escaped(c) {
            out.push(c);
        } else if c.is_ascii() {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// `one of `a`, `b`, `c``.
pub fn one_of(values: &[&str]) -> String {
    let list: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
    list.join(", ")
}

/// The closest candidate to `input` when it is close enough to be a likely typo: same text
/// ignoring case, `_`/`-`; or an edit distance of at most 2, or a fifth of the length for
/// long words (at most 1 for short ones).
pub fn suggest<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let fold = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let folded = fold(input);
    if let Some(c) = candidates.iter().find(|c| fold(c) == folded) {
        return Some(c);
    }
    let best = candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(&folded, &fold(c)), *c))
        .min_by_key(|(d, _)| *d)?;
    let len = folded.chars().count().max(fold(best.1).chars().count());
    let allowed = if len <= 4 { 1 } else { 2.max(len / 5) };
    (best.0 <= allowed).then_some(best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DSN without a password is shown as any other value a user gave: `redact` (a leaf)
    /// escapes the same characters the same way.
    #[test]
    fn a_dsn_is_escaped_as_every_value() {
        let text = "host=db\nuser=\u{1b}[31m\u{85}\u{2028}\u{202e}\u{2066} dbname=é\t";
        assert_eq!(crate::redact::redact_dsn(text), shown(text));
    }

    #[test]
    fn suggestions() {
        let fields = ["retryLimit", "defaultAction", "rules"];
        assert_eq!(suggest("retry_limit", &fields), Some("retryLimit"));
        assert_eq!(suggest("RetryLimit", &fields), Some("retryLimit"));
        assert_eq!(suggest("rulez", &fields), Some("rules"));
        assert_eq!(suggest("zzz", &fields), None);
        assert_eq!(suggest("Retri", &["Retry", "Fail"]), Some("Retry"));
    }

    #[test]
    fn quoting_escapes_and_truncates() {
        // Control characters and line breaks as the terminal formats show them.
        assert_eq!(quote("a\nb\x1b[2J\u{85}\u{2028}"), "`a\\x0ab\\x1b[2J\\u0085\\u2028`");
        assert!(quote(&"x".repeat(200)).ends_with("…`"));
        // Backslashes are the user's own text (regexes), not escapes.
        assert_eq!(quote(r"\d+\s"), r"`\d+\s`");
        assert_eq!(quote("tab\there"), "`tab\\x09here`");
    }
}
