//! The writing half of [`super::to_rust`]: a tree Go's reading accepted, written in the
//! `regex` crate's syntax so that a search answers as Go's `MatchString` does (the parent's
//! doc lists what differs between the two syntaxes).
//!
//! Owns: `Node::write` and the writing of characters and classes. Must not: refuse a pattern
//! (the reading has already decided) or compile one.

use super::{Item, Kind, Look, Node};

/// A class that matches nothing: what Go's class of surrogates alone is (no text holds one),
/// and its empty class.
const NOTHING: &str = r"[^\x{0}-\x{10FFFF}]";

/// Surrogates: Go's runes, never a `char` (the `regex` crate refuses them).
const SURROGATES: (u32, u32) = (0xD800, 0xDFFF);

impl Node {
    /// The node written for the `regex` crate, as a piece of a concatenation (an alternation
    /// is not wrapped here; its parent does that).
    pub(super) fn write(&self, out: &mut String) {
        match &self.kind {
            Kind::Empty => out.push_str("(?:)"),
            Kind::Char(c, fold) => write_chars(out, &[*c], *fold),
            Kind::Class(items, negated, fold) => write_class(out, items, *negated, *fold),
            Kind::Any(false) => out.push_str(r"[^\n]"),
            Kind::Any(true) => out.push_str("(?s:.)"),
            Kind::Look(look) => out.push_str(match look {
                Look::BeginText => r"\A",
                Look::EndText => r"\z",
                Look::BeginLine => "(?m:^)",
                Look::EndLine => "(?m:$)",
                // Go's `\b` is ASCII.
                Look::WordBoundary => r"(?-u:\b)",
                Look::NotWordBoundary => r"(?-u:\B)",
            }),
            Kind::Capture(sub) => sub.write(out),
            Kind::Repeat { sub, min, max, counted } => {
                let (sub, min, max) = squash(sub, *min, *max, *counted);
                // What the crate repeats without a group: a character (or the group or class
                // `write_chars` makes of it), a class, `.`, and the assertions written as groups.
                let atom = matches!(sub.kind, Kind::Char(..) | Kind::Class(..) | Kind::Any(_) | Kind::Empty)
                    || matches!(sub.kind, Kind::Look(l) if !matches!(l, Look::BeginText | Look::EndText));
                if atom {
                    sub.write(out);
                } else {
                    out.push_str("(?:");
                    sub.write(out);
                    out.push(')');
                }
                match (min, max) {
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (0, Some(1)) if !counted => out.push('?'),
                    (n, None) => out.push_str(&format!("{{{n},}}")),
                    (n, Some(m)) if n == m => out.push_str(&format!("{{{n}}}")),
                    (n, Some(m)) => out.push_str(&format!("{{{n},{m}}}")),
                }
            }
            Kind::Concat(items) => {
                let mut k = 0;
                while k < items.len() {
                    // A run of characters with one case rule: one literal (`(?i:abc)`).
                    if let Kind::Char(_, fold) = items[k].kind {
                        let run: Vec<u32> = items[k..]
                            .iter()
                            .map_while(|n| match n.kind {
                                Kind::Char(c, f) if f == fold => Some(c),
                                _ => None,
                            })
                            .collect();
                        write_chars(out, &run, fold);
                        k += run.len();
                        continue;
                    }
                    let item = items[k].content();
                    if matches!(item.kind, Kind::Alternate(_)) {
                        out.push_str("(?:");
                        item.write(out);
                        out.push(')');
                    } else {
                        item.write(out);
                    }
                    k += 1;
                }
            }
            Kind::Alternate(branches) => {
                for (k, branch) in branches.iter().enumerate() {
                    if k > 0 {
                        out.push('|');
                    }
                    branch.write(out);
                }
            }
        }
    }
}

/// A repetition of a repetition by `*`, `+` and `?` alone is one repetition: `(a*)+` and
/// `(a+)?` are `a*`, `(a+)+` is `a+`, `(a?)?` is `a?` (the same strings, so the same matches;
/// one group less for the crate's nesting limit). Counted ones are kept as written.
fn squash(sub: &Node, min: u32, max: Option<u32>, counted: bool) -> (&Node, u32, Option<u32>) {
    let simple = |min: u32, max: Option<u32>| matches!((min, max), (0, None) | (1, None) | (0, Some(1)));
    let mut sub = sub.content();
    let (mut min, mut max) = (min, max);
    if counted {
        return (sub, min, max);
    }
    while let Kind::Repeat {
        sub: inner,
        min: lo,
        max: hi,
        counted: false,
    } = &sub.kind
    {
        if !simple(min, max) || !simple(*lo, *hi) {
            break;
        }
        (min, max) = if (min, max) == (*lo, *hi) {
            (min, max)
        } else {
            (0, None)
        };
        sub = inner.content();
    }
    (sub, min, max)
}

/// Characters as literal text (one group for all when case-insensitive); a surrogate, which no
/// text holds, as a class that matches nothing.
fn write_chars(out: &mut String, chars: &[u32], fold: bool) {
    if fold {
        out.push_str("(?i:");
    }
    for &c in chars {
        match char::from_u32(c) {
            Some(c) if regex_syntax::is_meta_character(c) => {
                out.push('\\');
                out.push(c);
            }
            Some(c) => out.push(c),
            None => out.push_str(NOTHING),
        }
    }
    if fold {
        out.push(')');
    }
}

/// A class: each member written so that the crate reads it as Go does (ranges with every
/// endpoint escaped, Go's ASCII classes as ranges, Unicode classes by the crate's name).
fn write_class(out: &mut String, items: &[Item], negated: bool, fold: bool) {
    let mut body = String::new();
    for item in items {
        match item {
            Item::Range(lo, hi) => {
                // Without the surrogates (no text holds one; the crate refuses them).
                let (s_lo, s_hi) = SURROGATES;
                let mut parts = Vec::with_capacity(2);
                if *lo < s_lo {
                    parts.push((*lo, (*hi).min(s_lo - 1)));
                }
                if *hi > s_hi {
                    parts.push(((*lo).max(s_hi + 1), *hi));
                }
                for (lo, hi) in parts {
                    push_range(&mut body, lo, hi);
                }
            }
            Item::Ascii(ranges, false) => {
                for &(lo, hi) in ranges.iter() {
                    push_range(&mut body, lo, hi);
                }
            }
            Item::Ascii(ranges, true) => {
                body.push_str("[^");
                for &(lo, hi) in ranges.iter() {
                    push_range(&mut body, lo, hi);
                }
                body.push(']');
            }
            Item::Unicode(name, negated) => {
                body.push_str(if *negated { r"\P{" } else { r"\p{" });
                body.push_str(name);
                body.push('}');
            }
        }
    }
    if fold {
        out.push_str("(?i:");
    }
    match (body.is_empty(), negated) {
        // Only surrogates were named: nothing, or (negated) everything.
        (true, false) => out.push_str(NOTHING),
        (true, true) => out.push_str("(?s:.)"),
        (false, _) => {
            out.push('[');
            if negated {
                out.push('^');
            }
            out.push_str(&body);
            out.push(']');
        }
    }
    if fold {
        out.push(')');
    }
}

/// `lo-hi` (or `lo`) in a class, each endpoint a `\x{…}` escape unless a letter or digit, so
/// that no character of Go's class is an operator of the crate's (`[`, `&&`, `--`, `~~`).
fn push_range(body: &mut String, lo: u32, hi: u32) {
    let endpoint = |body: &mut String, c: u32| match char::from_u32(c) {
        Some(ch) if ch.is_alphanumeric() => body.push(ch),
        _ => body.push_str(&format!(r"\x{{{c:X}}}")),
    };
    endpoint(body, lo);
    if hi != lo {
        body.push('-');
        endpoint(body, hi);
    }
}
