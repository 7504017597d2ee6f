//! A rule's compiled `onTerminationMessage` pattern (docs/engines.md), with the literal fast path.
//!
//! Owns: [`Pattern`]: a literal pattern (the common `TRANSIENT`, `^OOM`, `.*CUDA error.*`) as a
//! substring or prefix test, anything else as the rule's own `Regex` (`compile_pattern`).
//! Must not: answer differently from Go's `MatchString` on the pattern (test
//! `literal_pattern_fast_paths_agree_with_the_regex`).

use regex::Regex;

use crate::model::validate::compile_pattern;

/// A compiled `onTerminationMessage` pattern. Literal patterns (the common `TRANSIENT`,
/// `^OOM`, `.*CUDA error.*`) skip the regex engine: a substring or prefix test gives the
/// same answer as Go's `MatchString` for them, several times faster.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    Contains(String),
    Prefix(String),
    Regex(Regex),
}

impl Pattern {
    pub(crate) fn new(p: &str) -> Result<Pattern, String> {
        let regex = compile_pattern(p)?;
        // No regex metacharacter (`-` is literal outside a class, unlike what `regex::escape`
        // would suggest).
        let literal = |t: &str| !t.is_empty() && !t.contains(|c| "\\.+*?()|[]{}^$".contains(c));
        let inner = p.strip_prefix(".*").unwrap_or(p);
        let inner = inner.strip_suffix(".*").filter(|i| !i.ends_with('\\')).unwrap_or(inner);
        Ok(if literal(inner) {
            Pattern::Contains(inner.to_string())
        } else if let Some(rest) = p.strip_prefix('^').filter(|r| literal(r)) {
            Pattern::Prefix(rest.to_string())
        } else {
            Pattern::Regex(regex)
        })
    }

    #[inline]
    pub(crate) fn is_match(&self, text: &str) -> bool {
        match self {
            Pattern::Contains(l) => text.len() >= l.len() && text.contains(l.as_str()),
            // The first byte inline: most messages differ there, and a call to `memcmp` per
            // rule tried was a visible share of the evaluator's time.
            Pattern::Prefix(l) => text.as_bytes().first() == l.as_bytes().first() && text.starts_with(l.as_str()),
            Pattern::Regex(r) => r.is_match(text),
        }
    }
}
