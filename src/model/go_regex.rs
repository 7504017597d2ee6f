//! Go's regexp syntax (RE2, as Armada's Go code compiles it) written as the `regex` crate's.
//!
//! Owns: [`to_rust`], the one translation every pattern Armada evaluates goes through before
//! any Rust regex engine sees it (a policy's `onTerminationMessage`; the categorizer's
//! `onTerminationMessage`, `onPodError` and `onPodEvents`; the patterns `suggest` writes), so
//! that it decides as Go's `MatchString` would:
//! - Go's Perl classes are ASCII (`\d` is `[0-9]`, `\w` `[0-9A-Za-z_]`, `\s` `[\t\n\f\r ]`,
//!   without `\v`), and so are `\b` and `\B`; the `regex` crate's are Unicode;
//! - inside a class Go reads `[`, `&&`, `--` and `~~` as themselves, where the `regex` crate
//!   nests classes and reads set operators;
//! - Go reads `\` before any ASCII punctuation as that character (`\<` is `<`), where the
//!   `regex` crate reads `\<` and `\>` as word boundaries;
//! - Go reads `\Q…\E` as literal text, and a `{` that starts no valid repetition as itself;
//! - Go refuses flags other than `i`, `m`, `s` and `U`, and repetition counts over 1000,
//!   with its own messages, which [`to_rust`] returns.
//!
//! Must not: compile anything (the callers do, with their own limits), or accept a pattern Go
//! refuses for any reason it knows of here.

use std::borrow::Cow;

/// Go's largest repetition count in `{n,m}` (`regexp/syntax`: "invalid repeat count" past it).
const MAX_REPEAT: u32 = 1000;

/// `pattern`, written in Go's syntax, as a pattern the `regex` crate reads the same way; or Go's
/// message for a pattern Go refuses (`invalid or unsupported Perl syntax: `(?x``).
pub fn to_rust(pattern: &str) -> Result<Cow<'_, str>, String> {
    // The common case (no escape, class, brace or group flag): the text is already the same.
    if !pattern.contains(['\\', '[', '{', '}', '(']) {
        return Ok(Cow::Borrowed(pattern));
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    // Where the current class began (its first item may be a literal `]`).
    let mut class_start = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let Some(&next) = chars.get(i + 1) else {
                return Err("trailing backslash at end of expression".to_string());
            };
            i += 2;
            match next {
                'Q' => {
                    // Literal text up to `\E` (or the end).
                    let mut literal = String::new();
                    while i < chars.len() {
                        if chars[i] == '\\' && chars.get(i + 1) == Some(&'E') {
                            i += 2;
                            break;
                        }
                        literal.push(chars[i]);
                        i += 1;
                    }
                    if in_class {
                        for ch in literal.chars() {
                            push_class_literal(&mut out, ch);
                        }
                    } else {
                        out.push_str(&regex_syntax::escape(&literal));
                    }
                }
                'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                    let (set, negated) = match next {
                        'd' => ("0-9", false),
                        'D' => ("0-9", true),
                        'w' => ("0-9A-Za-z_", false),
                        'W' => ("0-9A-Za-z_", true),
                        's' => ("\\t\\n\\x0C\\r ", false),
                        _ => ("\\t\\n\\x0C\\r ", true),
                    };
                    match (in_class, negated) {
                        (true, false) => out.push_str(set),
                        (true, true) => {
                            out.push_str("[^");
                            out.push_str(set);
                            out.push(']');
                        }
                        (false, _) => {
                            out.push('[');
                            if negated {
                                out.push('^');
                            }
                            out.push_str(set);
                            out.push(']');
                        }
                    }
                }
                'b' | 'B' if !in_class => {
                    out.push_str(if next == 'b' { "(?-u:\\b)" } else { "(?-u:\\B)" });
                }
                'p' | 'P' | 'x' => {
                    // `\pL`, `\p{Greek}`, `\x41`, `\x{263a}`: the same in both.
                    out.push('\\');
                    out.push(next);
                    if chars.get(i) == Some(&'{') {
                        while i < chars.len() {
                            out.push(chars[i]);
                            i += 1;
                            if chars[i - 1] == '}' {
                                break;
                            }
                        }
                    } else if next == 'x' {
                        for _ in 0..2 {
                            if let Some(&h) = chars.get(i) {
                                out.push(h);
                                i += 1;
                            }
                        }
                    } else if let Some(&l) = chars.get(i) {
                        out.push(l);
                        i += 1;
                    }
                }
                '0'..='7' if next == '0' || chars.get(i).is_some_and(|d| ('0'..='7').contains(d)) => {
                    // Go's octal escape (`\0`, `\12`, `\123`: up to three digits); the `regex`
                    // crate reads it only with a flag of its own, so write the character.
                    let mut value = next.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match chars.get(i).and_then(|d| d.to_digit(8)) {
                            Some(d) => {
                                value = value * 8 + d;
                                i += 1;
                            }
                            None => break,
                        }
                    }
                    out.push_str(&format!("\\x{{{value:X}}}"));
                }
                p if p.is_ascii_punctuation() => {
                    // Go: the punctuation itself. `\<`, `\>` are word boundaries to the `regex`
                    // crate, and it refuses to escape a few others: write the character as a
                    // literal the crate reads as such.
                    if in_class {
                        push_class_literal(&mut out, p);
                    } else {
                        out.push_str(&regex_syntax::escape(&p.to_string()));
                    }
                }
                other => {
                    // Everything else Go knows means the same to the `regex` crate (`\A`, `\z`,
                    // `\n`, `\t`, `\f`, `\r`, `\v`, `\a`); what Go refuses
                    // (`\e`, `\8`) the crate refuses too.
                    out.push('\\');
                    out.push(other);
                }
            }
            continue;
        }
        if in_class {
            match c {
                ']' if i > class_start => {
                    in_class = false;
                    out.push(']');
                }
                '[' if chars.get(i + 1) == Some(&':') => {
                    // A POSIX class (`[:alpha:]`), the same in both.
                    let rest: String = chars[i..].iter().collect();
                    match rest.find(":]") {
                        Some(end) => {
                            out.push_str(&rest[..end + 2]);
                            i += rest[..end + 2].chars().count();
                            continue;
                        }
                        None => push_class_literal(&mut out, c),
                    }
                }
                '[' | '&' | '~' => push_class_literal(&mut out, c),
                '-' if chars.get(i + 1) == Some(&'-') => push_class_literal(&mut out, c),
                _ => out.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push('[');
                i += 1;
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class_start = i;
                continue;
            }
            '{' => match repetition(&chars[i..]) {
                Some(Ok(len)) => {
                    out.extend(&chars[i..i + len]);
                    i += len;
                    continue;
                }
                Some(Err(text)) => return Err(format!("invalid repeat count: `{text}`")),
                None => out.push_str("\\{"),
            },
            '}' => out.push_str("\\}"),
            '(' if chars.get(i + 1) == Some(&'?') => {
                check_flags(&chars[i..])?;
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    Ok(Cow::Owned(out))
}

/// `c` inside a class, as a literal the `regex` crate cannot read as anything else.
fn push_class_literal(out: &mut String, c: char) {
    if c.is_ascii_punctuation() {
        out.push('\\');
    }
    out.push(c);
}

/// At a `{`: `Some(Ok(length))` of a repetition Go reads (`{n}`, `{n,}`, `{n,m}`, counts up to
/// 1000), `Some(Err(text))` for one whose count Go refuses, `None` when it is no repetition
/// (Go then reads the `{` literally).
fn repetition(chars: &[char]) -> Option<Result<usize, String>> {
    let end = chars.iter().position(|&c| c == '}')?;
    let inner: String = chars[1..end].iter().collect();
    let (lo, hi) = match inner.split_once(',') {
        Some((lo, hi)) => (lo, Some(hi)),
        None => (inner.as_str(), None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(lo) || hi.is_some_and(|h| !h.is_empty() && !digits(h)) {
        return None;
    }
    let text: String = chars[..=end].iter().collect();
    let count = |s: &str| s.parse::<u32>().ok().filter(|&n| n <= MAX_REPEAT);
    let lo_n = count(lo);
    let hi_n = match hi {
        Some(h) if !h.is_empty() => Some(count(h)),
        _ => None,
    };
    match (lo_n, hi_n) {
        (None, _) | (_, Some(None)) => Some(Err(text)),
        (Some(l), Some(Some(h))) if h < l => Some(Err(text)),
        _ => Some(Ok(end + 1)),
    }
}

/// At `(?`: Go's flags are `i`, `m`, `s` and `U` (and `-`); a named group (`(?P<`, `(?<`) is no
/// flag group.
fn check_flags(chars: &[char]) -> Result<(), String> {
    let rest = &chars[2..];
    if matches!(rest.first(), Some('P' | '<')) {
        return Ok(());
    }
    for (k, &c) in rest.iter().enumerate() {
        match c {
            ':' | ')' => return Ok(()),
            'i' | 'm' | 's' | 'U' | '-' => {}
            _ => {
                let seen: String = chars[..k + 3].iter().collect();
                return Err(format!("invalid or unsupported Perl syntax: `{seen}`"));
            }
        }
    }
    let seen: String = chars.iter().collect();
    Err(format!("missing closing ): `{seen}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(p: &str) -> regex::Regex {
        regex::Regex::new(&to_rust(p).unwrap()).unwrap()
    }

    #[test]
    fn perl_classes_are_ascii() {
        assert!(!go(r"\d").is_match("٣"));
        assert!(go(r"\d").is_match("3"));
        assert!(!go(r"\w").is_match("é"));
        assert!(go(r"^\W$").is_match("é"));
        assert!(!go(r"\s").is_match("\u{a0}"));
        assert!(!go(r"\s").is_match("\u{0b}"), "Go's \\s has no \\v");
        assert!(go(r"^\S$").is_match("\u{a0}"));
        assert!(go(r"^[\d.]+$").is_match("1.2"));
        assert!(!go(r"^[\d.]+$").is_match("١.٢"));
        assert!(go(r"^[^\d]+$").is_match("١"));
        assert!(go(r"^[\D]$").is_match("١"));
        assert!(!go(r"^[\D]$").is_match("1"));
    }

    #[test]
    fn word_boundaries_are_ascii() {
        // Go: `é` is no word character, so there is no boundary between it and a space…
        assert!(!go(r"é\b").is_match("café bar"));
        // …and there is one between `f` and `é`.
        assert!(go(r"f\b").is_match("café"));
        assert!(go(r"é\B ").is_match("café bar"));
    }

    #[test]
    fn go_literals_stay_literals() {
        assert!(go(r"\[Errno \<n\>\]").is_match("[Errno <n>]"));
        assert!(go(r"[a&&b]").is_match("&"));
        assert!(go(r"[[a]").is_match("["));
        assert!(go(r"a{x}").is_match("a{x}"));
        assert!(go(r"a{,2}").is_match("a{,2}"));
        assert!(go(r"^a{2}$").is_match("aa"));
        assert!(go(r"\Q.*+\E").is_match("a.*+b"));
        assert!(!go(r"\Q.*+\E").is_match("ab"));
        assert!(go(r"^[[:alpha:]]+$").is_match("abc"));
        assert!(go(r"^\101\0$").is_match("A\0"));
    }

    #[test]
    fn what_go_refuses_is_refused_with_its_message() {
        assert_eq!(
            to_rust("(?x)a").unwrap_err(),
            "invalid or unsupported Perl syntax: `(?x`"
        );
        assert_eq!(
            to_rust("(?-u:a)").unwrap_err(),
            "invalid or unsupported Perl syntax: `(?-u`"
        );
        assert_eq!(to_rust("a{1001}").unwrap_err(), "invalid repeat count: `{1001}`");
        assert_eq!(to_rust("a{2,1}").unwrap_err(), "invalid repeat count: `{2,1}`");
        assert_eq!(to_rust("a\\").unwrap_err(), "trailing backslash at end of expression");
        assert!(to_rust("(?P<n>a)(?<m>b)(?i:c)(?U)").is_ok());
    }
}
