//! The pattern a message template becomes (docs/reference/suggest.md "The proposal"): its
//! masks as classes, its spaces as runs of blanks, the rest literal. Both the proposal (which
//! gives no rule to a signature whose pattern a rule cannot hold) and the documents (which
//! write it) build it here, so that what is checked is what is written.
//!
//! Owns: [`pattern`], [`pod_error_pattern`], [`quote_meta`], the masks' expressions and
//! [`too_long`], [`pod_error_too_long`]. Pure: text
//! in, text out; it compiles nothing (`validate` does, with the same byte limit).

use crate::model::signature::waiting_template;
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
    out.push_str(&body(template));
    if !cut {
        out.push_str("[ \\t\\r\\f]*(\\n|$)");
    }
    out
}

/// The pattern of a pod-error signature (docs/reference/suggest.md "The proposal"): it
/// matches the line the template was made of wherever that line sits in the executor's text
/// (a stuck pod's header and its checks' lines come before it, a hint may come after), as
/// Go's `MatchString` searches it: a container-state check's line from its start to its
/// reason, `(?m)^Container \S+ has been in state Waiting for reason ErrImagePull \(`; any
/// other line as a line of its own, `(?m)^…$` (without `$` when some line was cut). Never
/// anchored to the whole text, which starts with the header.
pub fn pod_error_pattern(template: &str, cut: bool) -> String {
    if let Some((state, reason)) = waiting_template(template) {
        return format!(
            "(?m)^Container \\S+ has been in state {} for reason {} \\(",
            quote_meta(state),
            quote_meta(reason)
        );
    }
    let mut out = String::from("(?m)^[ \\t\\r\\f]*");
    out.push_str(&body(template));
    if !cut {
        out.push_str("[ \\t\\r\\f]*$");
    }
    out
}

/// A template's masks as classes, its spaces as runs of blanks, the rest literal.
fn body(template: &str) -> String {
    let mut out = String::new();
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
    out
}

/// The length in bytes of `template`'s pattern when it is longer than a rule's pattern may be
/// ([`MAX_PATTERN_BYTES`], Go's and `validate`'s limit): a template of 160 characters can
/// hold some 30 `<hex>` masks, each a hundred bytes of pattern.
pub fn too_long(template: &str, cut: bool) -> Option<usize> {
    over_the_limit(&pattern(template, cut))
}

/// [`too_long`] of a pod-error signature's pattern ([`pod_error_pattern`]).
pub fn pod_error_too_long(template: &str, cut: bool) -> Option<usize> {
    over_the_limit(&pod_error_pattern(template, cut))
}

/// A pattern's length in bytes when it is over [`MAX_PATTERN_BYTES`].
fn over_the_limit(pattern: &str) -> Option<usize> {
    (pattern.len() > MAX_PATTERN_BYTES).then_some(pattern.len())
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
            let (t, cut) = crate::model::signature::template(message);
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
        let (t, cut) = crate::model::signature::template(&message);
        let bytes = too_long(&t, cut).unwrap();
        assert_eq!(bytes, pattern(&t, cut).len());
        assert!(!compiles(&t, cut));
        let (t, cut) = crate::model::signature::template(&["0x1f2e3d4c"; 7].join(" "));
        assert_eq!(too_long(&t, cut), None);
        assert!(compiles(&t, cut));
    }

    /// A pod-error signature's pattern matches its line where the executor's text has it
    /// (after the header and the checks' lines, before a hint), searched as Go's
    /// `MatchString` searches: never anchored to the whole text.
    #[test]
    fn pod_error_patterns_match_their_line_where_it_sits() {
        use crate::model::signature::pod_error_template;
        let waiting = "Unable to start pod.\nContainer main has been in state Waiting for reason ErrImagePull (Back-off pulling image \"reg/x:1\" - check \"check-2\") for more than timeout 15m0s";
        let (t, cut) = pod_error_template(waiting);
        let p = pod_error_pattern(&t, cut);
        assert_eq!(
            p,
            "(?m)^Container \\S+ has been in state Waiting for reason ErrImagePull \\("
        );
        let event = "Unable to start pod - encountered an unrecoverable problem.\nMatched check: \"check-0\"\nFailed to pull image \"reg/x:1\": not found";
        let (t, cut) = pod_error_template(event);
        let q = pod_error_pattern(&t, cut);
        assert_eq!(
            q,
            "(?m)^[ \\t\\r\\f]*Failed[ \\t\\r\\f]+to[ \\t\\r\\f]+pull[ \\t\\r\\f]+image[ \\t\\r\\f]+\"reg/x:[0-9]+\":[ \\t\\r\\f]+not[ \\t\\r\\f]+found[ \\t\\r\\f]*$"
        );
        let compile = |p: &str| crate::model::validate::compile_pattern(p).unwrap();
        let (p, q) = (compile(&p), compile(&q));
        let hinted = |t: &str| format!("{t}\n\nCheck the image name");
        for text in [waiting.to_string(), hinted(waiting)] {
            assert!(p.is_match(&text), "{text:?}");
            assert!(!q.is_match(&text), "{text:?}");
        }
        for text in [event.to_string(), hinted(event), event.replace("x:1", "x:22")] {
            assert!(q.is_match(&text), "{text:?}");
            assert!(!p.is_match(&text), "{text:?}");
        }
        // Another container's state, another reason, a longer line: no match.
        assert!(!p.is_match(&waiting.replace("ErrImagePull", "ImagePullBackOff")));
        assert!(!q.is_match(&format!("{event} (retrying)")));
        assert!(p.is_match(&waiting.replace("Container main", "Container sidecar-2")));
    }
}
