//! A rule's compiled message pattern (docs/engines.md): a policy's `onTerminationMessage`, the
//! categorizer's `onTerminationMessage`, `onPodError` and `onPodEvents`.
//!
//! Owns: [`Pattern`]: a literal pattern (the common `TRANSIENT`, `^OOM`, `.*CUDA error.*`) as a
//! substring or prefix test; anything else as the rule's own `Regex` (`compile_pattern`) when
//! the `regex` crate's automaton for it is small enough, alone and within the
//! [`PatternPool`] its caller gives all its patterns, else as a [`CharProgram`] (a program
//! over characters, whose memory grows with the pattern as written); and which of those a
//! pattern gets ([`crate_bytes`], from Go's parse tree, before anything is compiled). A
//! categorizer of 4,000 rules of `x{k}\pL{6}` (90 KiB of forward automaton each in the crate)
//! so costs a few MiB, not 1.25 GB.
//!
//! Must not: answer differently from Go's `MatchString` on the pattern, whichever form it gets
//! (tests `literal_pattern_fast_paths_agree_with_the_regex`,
//! `char_programs_answer_as_the_regex_crate`), or refuse a pattern `validate::check_pattern`
//! accepts.

use std::sync::Arc;

use regex::Regex;

use crate::model::go_regex::{Item, Kind, Node};
use crate::model::validate::{check_pattern, compile_pattern, MAX_REGEX_SIZE};

use super::char_program::{CharProgram, CharSets};

/// A compiled message pattern. Literal patterns (the common `TRANSIENT`, `^OOM`,
/// `.*CUDA error.*`) skip the regex engine: a substring or prefix test gives the same answer
/// as Go's `MatchString` for them, several times faster.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    Contains(String),
    Prefix(String),
    Regex(Regex),
    /// A pattern whose `regex` crate automaton is too large for it or for its caller's budget.
    Program(Arc<CharProgram>),
}

/// What the patterns a caller compiles together share: how many bytes of the `regex` crate's
/// compiled regexes they may take, in [`crate_bytes`]' estimate (a pattern past what is left
/// is a [`CharProgram`]), and their programs' sets of characters. The categorizer gives its
/// thousands of rules one (`engine::categorizer`); a policy's rules, at most 100, none: only
/// each pattern's own bound.
#[derive(Debug, Clone)]
pub(crate) struct PatternPool {
    left: u64,
    sets: CharSets,
}

impl PatternPool {
    pub(crate) fn new(bytes: u64) -> PatternPool {
        PatternPool {
            left: bytes,
            sets: CharSets::default(),
        }
    }

    pub(crate) fn unlimited() -> PatternPool {
        PatternPool::new(u64::MAX)
    }

    /// Takes `bytes` if that many are left.
    fn take(&mut self, bytes: u64) -> bool {
        let fits = bytes <= self.left;
        if fits {
            self.left -= bytes;
        }
        fits
    }
}

impl Pattern {
    /// `p` compiled on its own (a policy's rule): only each pattern's own bound.
    pub(crate) fn new(p: &str) -> Result<Pattern, String> {
        Pattern::within(p, &mut PatternPool::unlimited())
    }

    /// `p` compiled with what is left of `pool` for the `regex` crate.
    pub(crate) fn within(p: &str, pool: &mut PatternPool) -> Result<Pattern, String> {
        check_pattern(p)?;
        // No regex metacharacter (`-` is literal outside a class, unlike what `regex::escape`
        // would suggest).
        let literal = |t: &str| !t.is_empty() && !t.contains(|c| "\\.+*?()|[]{}^$".contains(c));
        let inner = p.strip_prefix(".*").unwrap_or(p);
        let inner = inner.strip_suffix(".*").filter(|i| !i.ends_with('\\')).unwrap_or(inner);
        if literal(inner) {
            return Ok(Pattern::Contains(inner.to_string()));
        }
        if let Some(rest) = p.strip_prefix('^').filter(|r| literal(r)) {
            return Ok(Pattern::Prefix(rest.to_string()));
        }
        let tree = crate::model::go_regex::parse(p)?;
        let bytes = crate_bytes(&tree);
        if bytes <= MAX_REGEX_SIZE as u64 && pool.take(bytes) {
            // The estimate is no bound: a pattern the crate finds too large after all is a
            // program too.
            if let Ok(regex) = compile_pattern(p) {
                return Ok(Pattern::Regex(regex));
            }
        }
        CharProgram::new(p, &mut pool.sets)
            .map(|program| Pattern::Program(Arc::new(program)))
            .ok_or_else(|| format!("invalid regular expression {}", crate::diag::quote(p)))
    }

    #[inline]
    pub(crate) fn is_match(&self, text: &str) -> bool {
        match self {
            Pattern::Contains(l) => text.len() >= l.len() && text.contains(l.as_str()),
            // The first byte inline: most messages differ there, and a call to `memcmp` per
            // rule tried was a visible share of the evaluator's time.
            Pattern::Prefix(l) => text.as_bytes().first() == l.as_bytes().first() && text.starts_with(l.as_str()),
            Pattern::Regex(r) => r.is_match(text),
            Pattern::Program(p) => p.is_match(text),
        }
    }
}

/// What one pattern's `regex::Regex` takes, estimated from Go's tree before anything is built:
/// a fixed part (the meta regex, its forward and reverse NFAs' frames, a cache) and a part per
/// piece, each piece counted once per copy a counted repetition makes (the crate's NFA repeats
/// it). Measured (release build, 4,000 patterns after one search each): `error code E17 in
/// module [a-z]+` 13 KiB (estimate 14 KiB), `(?i)fatal: code f17 at [0-9]+` 21 KiB (16 KiB),
/// `x{17}\pL{6}` 304 KiB (302 KiB): a Unicode class is hundreds of UTF-8 states in each NFA.
pub(crate) fn crate_bytes(tree: &Node) -> u64 {
    const FIXED: u64 = 12 << 10;
    const PER_WEIGHT: u64 = 96;
    FIXED.saturating_add(weight(tree).saturating_mul(PER_WEIGHT))
}

/// A Unicode category or script's weight: `\pL` is ~300 states in the forward NFA alone.
const UNICODE_WEIGHT: u64 = 512;

/// A piece's share of the automaton, in units of an ASCII character.
fn weight(node: &Node) -> u64 {
    match &node.kind {
        Kind::Empty => 0,
        Kind::Look(_) => 1,
        Kind::Char(c, fold) => 1 + u64::from(*c >= 0x80) + u64::from(*fold),
        // `.` and negations are every character but a few: a few UTF-8 states.
        Kind::Any(_) => 4,
        Kind::Class(items, negated, fold) => {
            let items: u64 = items
                .iter()
                .map(|item| match item {
                    Item::Range(_, hi) if *hi < 0x80 => 1,
                    Item::Range(..) => 4,
                    Item::Ascii(_, false) => 1,
                    Item::Ascii(_, true) => 4,
                    Item::Unicode(..) => UNICODE_WEIGHT,
                })
                .sum();
            items + 4 * u64::from(*negated) + u64::from(*fold)
        }
        Kind::Capture(sub) => weight(sub),
        Kind::Repeat { sub, min, max, .. } => weight(sub).saturating_mul(u64::from(max.unwrap_or(*min).max(1))),
        Kind::Concat(items) | Kind::Alternate(items) => items.iter().fold(0, |sum, n| sum.saturating_add(weight(n))),
    }
}
