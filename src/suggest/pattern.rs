//! The pattern a message template becomes (docs/reference/suggest.md "The proposal"): its
//! masks as classes, its spaces as runs of blanks, the rest literal. Both the proposal (which
//! gives no rule to a signature whose pattern a rule cannot hold) and the documents (which
//! write it) build it here, so that what is checked is what is written.
//!
//! Owns: [`pattern`], [`quote_meta`], the masks' expressions and [`too_long`]. Pure: text
//! in, text out; it compiles nothing (`validate` does, with the same byte limit).

use crate::model::validate::MAX_PATTERN_BYTES;

/// The regular expression of `<uuid>`.
pub const UUID_PATTERN: &str = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
/// The regular expression of `<hex>`.
pub const HEX_PATTERN: &str = "(0x[0-9a-fA-F]+|[0-9a-fA-F]*[0-9][0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*|[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*[0-9][0-9a-fA-F]*)";

/// Escapes `s` as Go's `regexp.QuoteMeta` does: `\.+*?()|[]{}^$` get a backslash.
pub fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if "\\.+*?()|[]{}^$".contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// The pattern that matches a message whose template is `template`: its masks as classes,
/// its spaces as runs of blanks, the rest literal; anchored at the line's end unless some
/// message's first line was cut (`cut`).
pub fn pattern(template: &str, cut: bool) -> String {
    let mut out = String::from("^[ \\t\\r\\f]*");
    let mut rest = template;
    let mut literal = String::new();
    while let Some(ch) = rest.chars().next() {
        let mask = [
            ("<uuid>", UUID_PATTERN),
            ("<hex>", HEX_PATTERN),
            ("<n>", "[0-9]+"),
            (" ", "[ \\t\\r\\f]+"),
        ]
        .into_iter()
        .find(|(m, _)| rest.starts_with(m));
        match mask {
            Some((m, re)) => {
                out.push_str(&quote_meta(&literal));
                literal.clear();
                out.push_str(re);
                rest = &rest[m.len()..];
            }
            None => {
                literal.push(ch);
                rest = &rest[ch.len_utf8()..];
            }
        }
    }
    out.push_str(&quote_meta(&literal));
    if !cut {
        out.push_str("[ \\t\\r\\f]*(\\n|$)");
    }
    out
}

/// The length in bytes of `template`'s pattern when it is longer than a rule's pattern may be
/// ([`MAX_PATTERN_BYTES`], Go's and `validate`'s limit): a template of 160 characters can
/// hold some 30 `<hex>` masks, each a hundred bytes of pattern.
pub fn too_long(template: &str, cut: bool) -> Option<usize> {
    let bytes = pattern(template, cut).len();
    (bytes > MAX_PATTERN_BYTES).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_built_from_templates() {
        assert_eq!(
            pattern("CUDA error <n>: x.y (z)", false),
            "^[ \\t\\r\\f]*CUDA[ \\t\\r\\f]+error[ \\t\\r\\f]+[0-9]+:[ \\t\\r\\f]+x\\.y[ \\t\\r\\f]+\\(z\\)[ \\t\\r\\f]*(\\n|$)"
        );
        assert_eq!(
            pattern("id <uuid>", true),
            format!("^[ \\t\\r\\f]*id[ \\t\\r\\f]+{UUID_PATTERN}")
        );
        assert_eq!(pattern("<hex>", true), format!("^[ \\t\\r\\f]*{HEX_PATTERN}"));
        assert_eq!(
            quote_meta("a.b*c?d(e)f|g[h]i{j}k^l$m\\n+"),
            "a\\.b\\*c\\?d\\(e\\)f\\|g\\[h\\]i\\{j\\}k\\^l\\$m\\\\n\\+"
        );
    }

    #[test]
    fn patterns_match_the_messages_they_came_from_and_no_other() {
        let rows = [
            "RuntimeError: CUDA error 700 at 0x7ffd12 for 123e4567-e89b-12d3-a456-426614174000 (step 4)",
            "  connection reset by peer [10.0.0.1:443]\tretry later  ",
            "a.b*c?d(e)f|g^h$i{j}k\\l",
            "weights sha deadbeef42 mismatch",
        ];
        for message in rows {
            let (t, cut) = super::super::signature::template(message);
            let re = crate::model::validate::compile_pattern(&pattern(&t, cut)).unwrap();
            assert!(re.is_match(message), "{message:?} !~ {t:?}");
            assert!(
                re.is_match(&format!("{message}\nsecond line")),
                "{message:?} with a second line"
            );
            assert!(!re.is_match(&format!("prefix {message}")), "{message:?} with a prefix");
            assert!(!re.is_match(&format!("{message} suffix")), "{message:?} with a suffix");
        }
    }

    /// Exactly the patterns `validate` refuses for their length are too long: one byte under
    /// the limit compiles, one over does not, and so for a template of hex words.
    #[test]
    fn too_long_is_validates_limit() {
        let compiles = |t: &str, cut| crate::model::validate::compile_pattern(&pattern(t, cut)).is_ok();
        // The anchors take 11 + 16 bytes: a literal of 997 fills the pattern to 1024.
        let fits = "a".repeat(MAX_PATTERN_BYTES - 27);
        assert_eq!(pattern(&fits, false).len(), MAX_PATTERN_BYTES);
        assert_eq!(too_long(&fits, false), None);
        assert!(compiles(&fits, false));
        let over = format!("{fits}a");
        assert_eq!(too_long(&over, false), Some(MAX_PATTERN_BYTES + 1));
        assert!(!compiles(&over, false));
        // Cut, the line's end is not matched: 16 bytes fewer.
        assert_eq!(too_long(&over, true), None);
        let message = ["0x1f2e3d4c"; 40].join(" ");
        let (t, cut) = super::super::signature::template(&message);
        let bytes = too_long(&t, cut).unwrap();
        assert_eq!(bytes, pattern(&t, cut).len());
        assert!(!compiles(&t, cut));
        let (t, cut) = super::super::signature::template(&["0x1f2e3d4c"; 7].join(" "));
        assert_eq!(too_long(&t, cut), None);
        assert!(compiles(&t, cut));
    }
}
