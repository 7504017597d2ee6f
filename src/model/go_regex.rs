//! Go's regexp syntax (RE2, as Armada's Go code compiles it) read as Go reads it, and written as
//! the `regex` crate's.
//!
//! Owns: [`to_rust`] (and [`parse`], its tree, for the evaluator's matcher over characters),
//! the one reading every pattern Armada evaluates goes through before any Rust regex engine sees
//! it (a policy's `onTerminationMessage`; the categorizer's
//! `onTerminationMessage`, `onPodError` and `onPodEvents`; the patterns `suggest` writes). It
//! parses the pattern as Go's `regexp/syntax` does with the flags `regexp.Compile` uses (Perl:
//! `ClassNL | OneLine | PerlX | UnicodeGroups`): a pattern Go refuses is refused with Go's
//! words, and a pattern Go accepts is written so that the `regex` crate accepts it and a search
//! answers as Go's `MatchString` does:
//! - Go's Perl and POSIX classes are ASCII (`\d` is `[0-9]`, `\s` `[\t\n\f\r ]`, without `\v`),
//!   and so are `\b` and `\B`; the `regex` crate's are Unicode;
//! - inside a class Go reads `[`, `&&`, `--` and `~~` as themselves, where the `regex` crate
//!   nests classes and reads set operators; `\` before any ASCII punctuation is that character
//!   (`\<` is `<`, a word boundary to the crate);
//! - Go reads `\Q…\E` as literal text, and a `{` that starts no repetition it accepts as itself
//!   (`{,2}`, `{01}`: Go refuses a count with a leading zero, so the brace is text);
//! - Go accepts flags the crate refuses (`(?ii)`, `(?i-i)`, `(?)`), `\p{^Greek}`, a group name
//!   that starts with a digit or repeats another, `^*`, and a repetition of what an empty flag
//!   group or `\Q\E` follows (`a(?i)*` is `a*`); it refuses what the crate accepts: stacked
//!   repetition operators (`a**`, `a{2}{3}`, `a*??`: "invalid nested repetition operator"),
//!   counts past 1,000, alone or multiplied by the counts around them (`(a{2}){501}`), flags
//!   other than `i`, `m`, `s` and `U`, Unicode names that are no category or script
//!   (`\p{Alphabetic}`), and trees over 1,000 deep;
//! - every flag is written at the piece it applies to (`(?i:abc)`, `(?s:.)`, `(?m:^)`), never as
//!   a flag group that lasts to the end of a group, so the crate's scoping of flags across `|`
//!   cannot differ from Go's; captures are written as plain groups (only `is_match` is asked).
//!
//! Go's words are `regexp.Compile`'s error less its `error parsing regexp: ` head (`invalid
//! nested repetition operator: `**``); three keep the words retryctl has always given (the
//! `regex` crate's): "unclosed group", "unopened group" and "unclosed character class", and a
//! trailing backslash has no expression to quote. Go's size limits (`maxSize`, `maxRunes`) are
//! out of reach of a pattern of at most `validate::MAX_PATTERN_BYTES` (1,024) bytes: its largest
//! program is about half of `maxSize`, and 27,000 `\pL` would be needed for `maxRunes`; Go's
//! nesting limit (`maxHeight`, 1,000) is too, since a group costs two bytes, but it is checked
//! here as Go counts it, for `to_rust` given longer text.
//!
//! Must not: compile anything (the callers do, with their own limits), or accept a pattern Go
//! refuses for any reason it knows of here. Unicode names are checked against the names the
//! `regex` crate gives a general category or a script (what Go's `unicode.Categories` and
//! `unicode.Scripts` hold); the crate also knows spellings Go may not (`Grek` for `Greek`).

use std::borrow::Cow;
use std::fmt;

/// Go's largest count in `{n,m}`, and of the counts of repetitions nested in one another
/// multiplied (`regexp/syntax`'s `maxRepeat`).
const MAX_REPEAT: u32 = 1000;

/// Go's largest height of a parse tree (`regexp/syntax`'s `maxHeight`).
const MAX_HEIGHT: u32 = 1000;

/// Go's largest program, in instructions as its parser estimates them (`regexp/syntax`'s
/// `maxSize`: 128 MiB of 40-byte instructions).
const MAX_SIZE: u64 = (128 << 20) / 40;

/// The nesting limit the `regex` crate's parser is given for a pattern [`to_rust`] wrote: what
/// the longest pattern retryctl accepts can nest to, written out (every piece of it a group
/// inside a repetition inside a class at worst), so that no pattern Go accepts is refused for
/// its depth. The crate's own default, 250, refuses groups Go accepts (300 deep).
pub const NEST_LIMIT: u32 = 4 * 1024;

/// `pattern`, written in Go's syntax, as a pattern the `regex` crate reads the same way; or Go's
/// message for a pattern Go refuses (`invalid nested repetition operator: `**``).
pub fn to_rust(pattern: &str) -> Result<Cow<'_, str>, String> {
    // The common case (no metacharacter at all): the text is already the same.
    if !pattern.contains(|c| "\\[](){}*+?|^$.".contains(c)) {
        return Ok(Cow::Borrowed(pattern));
    }
    let tree = Parser::new(pattern).parse().map_err(|r| r.to_string())?;
    let mut out = String::with_capacity(pattern.len() * 2);
    tree.write(&mut out);
    Ok(Cow::Owned(out))
}

/// `pattern` as Go's parser reads it: the tree a matcher over characters is built from
/// (`engine::matcher`'s program for a pattern whose byte automaton would be large), or Go's
/// message when Go refuses it, as [`to_rust`] gives it.
pub(crate) fn parse(pattern: &str) -> Result<Node, String> {
    Parser::new(pattern).parse().map_err(|r| r.to_string())
}

/// The `regex-automata` syntax every engine of a pattern [`to_rust`] wrote is built with:
/// the `regex` crate's defaults (Unicode, UTF-8) with [`NEST_LIMIT`].
pub fn syntax_config() -> regex_automata::util::syntax::Config {
    regex_automata::util::syntax::Config::new()
        .utf8(true)
        .nest_limit(NEST_LIMIT)
}

/// Why Go refuses a pattern: its error code and the part of the pattern it quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    code: Code,
    expr: String,
}

/// Go's `regexp/syntax` error codes that a parse can give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidCharRange,
    InvalidEscape,
    InvalidNamedCapture,
    InvalidPerlOp,
    InvalidRepeatOp,
    InvalidRepeatSize,
    MissingBracket,
    MissingParen,
    MissingRepeatArgument,
    TrailingBackslash,
    UnexpectedParen,
    NestingDepth,
    Large,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words = match self.code {
            // The words retryctl gave before it read patterns itself (the `regex` crate's,
            // documented in docs/categorizer.md): the expression Go quotes is the whole pattern,
            // which the caller's message quotes already.
            Code::MissingParen => return f.write_str("unclosed group"),
            Code::UnexpectedParen => return f.write_str("unopened group"),
            Code::MissingBracket => return f.write_str("unclosed character class"),
            // Go quotes an empty expression here.
            Code::TrailingBackslash => return f.write_str("trailing backslash at end of expression"),
            Code::InvalidCharRange => "invalid character class range",
            Code::InvalidEscape => "invalid escape sequence",
            Code::InvalidNamedCapture => "invalid named capture",
            Code::InvalidPerlOp => "invalid or unsupported Perl syntax",
            Code::InvalidRepeatOp => "invalid nested repetition operator",
            Code::InvalidRepeatSize => "invalid repeat count",
            Code::MissingRepeatArgument => "missing argument to repetition operator",
            Code::NestingDepth => "expression nests too deeply",
            Code::Large => "expression too large",
        };
        // Quoted as every user value is (control characters escaped, a long one shortened).
        write!(f, "{words}: {}", crate::diag::quote(&self.expr))
    }
}

fn refuse<T>(code: Code, expr: &str) -> Result<T, Refusal> {
    Err(Refusal {
        code,
        expr: expr.to_string(),
    })
}

/// The flags a piece is read with. (`U` only changes which match a search prefers, never
/// whether there is one: not kept.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Flags {
    /// `i`: case-insensitive.
    fold: bool,
    /// `m`: `^` and `$` at line ends too (Go's `OneLine` cleared).
    multi_line: bool,
    /// `s`: `.` matches `\n`.
    dot_nl: bool,
}

/// A zero-width assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Look {
    BeginText,
    EndText,
    BeginLine,
    EndLine,
    WordBoundary,
    NotWordBoundary,
}

/// One member of a class as Go reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// Code points `lo..=hi` (Go's runes: a surrogate, which no text holds, included).
    Range(u32, u32),
    /// A Perl or POSIX class (ASCII ranges), or its negation.
    Ascii(&'static [(u32, u32)], bool),
    /// A Unicode category or script: `\p{name}` written for the `regex` crate, or its negation.
    Unicode(String, bool),
}

/// The parse tree, as far as Go's checks, the writing and a matcher over characters need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Matches the empty string (`(?:)`, an empty branch).
    Empty,
    Char(u32, bool),
    /// Members, negated, case-insensitive.
    Class(Vec<Item>, bool, bool),
    /// `.`; with `s`, `\n` too.
    Any(bool),
    Look(Look),
    /// A capturing group: a node of Go's tree (its height counts), written as its content.
    Capture(Box<Node>),
    /// `sub{min,max}` (`max` `None`: unbounded); `counted` for `{…}`, not `*`, `+`, `?`.
    Repeat {
        sub: Box<Node>,
        min: u32,
        max: Option<u32>,
        counted: bool,
    },
    Concat(Vec<Node>),
    Alternate(Vec<Node>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// Its height as Go's `calcHeight` counts it (a leaf is 1).
    height: u32,
    /// Its program's size as Go's `calcSize` estimates it (a leaf is 1, a string one per
    /// character), before Go factors common prefixes out of an alternation (which only makes
    /// Go's smaller: no pattern within `validate::MAX_PATTERN_BYTES` comes near the limit).
    size: u64,
}

impl Node {
    fn leaf(kind: Kind) -> Node {
        Node {
            kind,
            height: 1,
            size: 1,
        }
    }

    fn capture(sub: Node) -> Node {
        Node {
            height: sub.height + 1,
            size: sub.size.saturating_add(2),
            kind: Kind::Capture(Box::new(sub)),
        }
    }

    fn repeat(sub: Node, min: u32, max: Option<u32>, counted: bool) -> Node {
        let (lo, below) = (u64::from(min), sub.size);
        let size = match (max, counted) {
            (None, _) if min == 0 => below.saturating_add(2),
            // `+` and `{n,}`: n copies and a loop.
            (None, _) => lo.saturating_mul(below).saturating_add(1),
            // `?`.
            (Some(_), false) => below.saturating_add(1),
            (Some(hi), true) => u64::from(hi).saturating_mul(below).saturating_add(u64::from(hi) - lo),
        };
        Node {
            height: sub.height + 1,
            size: size.max(1),
            kind: Kind::Repeat {
                sub: Box::new(sub),
                min,
                max,
                counted,
            },
        }
    }

    /// `items` as one node: nothing is the empty match, one is itself; a concatenation's own
    /// concatenations are taken apart (Go's `collapse`).
    fn concat(items: Vec<Node>) -> Node {
        let mut flat = Vec::with_capacity(items.len());
        for item in items {
            match item.kind {
                Kind::Concat(subs) => flat.extend(subs),
                _ => flat.push(item),
            }
        }
        match flat.len() {
            0 => Node::leaf(Kind::Empty),
            1 => flat.pop().unwrap_or_else(|| Node::leaf(Kind::Empty)),
            _ => {
                // Go merges adjacent literals into one string node (`maybeConcat`): a run of
                // characters alone is one leaf.
                let height = if flat.iter().all(|n| matches!(n.kind, Kind::Char(..))) {
                    1
                } else {
                    flat.iter().map(|n| n.height).max().unwrap_or(0) + 1
                };
                let size = flat.iter().fold(0u64, |sum, n| sum.saturating_add(n.size));
                Node {
                    kind: Kind::Concat(flat),
                    height,
                    size,
                }
            }
        }
    }

    /// `branches` as one node: one is itself; an alternation's own alternations are taken
    /// apart, and a run of empty branches is one (Go's `collapse` and `factor`, as far as the
    /// height needs them).
    fn alternate(branches: Vec<Node>) -> Node {
        let mut flat: Vec<Node> = Vec::with_capacity(branches.len());
        for branch in branches {
            let subs = match branch.kind {
                Kind::Alternate(subs) => subs,
                _ => vec![branch],
            };
            for sub in subs {
                if sub.kind == Kind::Empty && flat.last().is_some_and(|n| n.kind == Kind::Empty) {
                    continue;
                }
                flat.push(sub);
            }
        }
        if flat.len() == 1 {
            return flat.pop().unwrap_or_else(|| Node::leaf(Kind::Empty));
        }
        let height = flat.iter().map(|n| n.height).max().unwrap_or(0) + 1;
        let size = flat
            .iter()
            .fold(flat.len() as u64 - 1, |sum, n| sum.saturating_add(n.size));
        Node {
            kind: Kind::Alternate(flat),
            height,
            size,
        }
    }

    /// A leaf (a character, a class, `.`) written for the `regex` crate alone: what a matcher
    /// over characters reads its set of characters from, so that both engines read one text.
    pub(crate) fn leaf_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// What a capturing group holds, looking through the groups around it.
    pub(crate) fn content(&self) -> &Node {
        match &self.kind {
            Kind::Capture(sub) => sub.content(),
            _ => self,
        }
    }
}

/// Go's `repeatIsValid`: along every path down from `node`, the counts of the `{…}`
/// repetitions met, multiplied, are at most `n` (integer division as Go does it; a `{0}` or
/// `{0,}` ends the path, since it repeats nothing more than once).
fn repeat_is_valid(node: &Node, mut n: u32) -> bool {
    if let Kind::Repeat {
        min,
        max,
        counted: true,
        ..
    } = &node.kind
    {
        let m = max.unwrap_or(*min);
        if m == 0 {
            return true;
        }
        if m > n {
            return false;
        }
        n /= m;
    }
    match &node.kind {
        Kind::Capture(sub) | Kind::Repeat { sub, .. } => repeat_is_valid(sub, n),
        Kind::Concat(subs) | Kind::Alternate(subs) => subs.iter().all(|s| repeat_is_valid(s, n)),
        _ => true,
    }
}

/// An open group: its finished branches, the pieces of the branch being read, the flags to
/// restore when it closes, and whether it captures.
struct Frame {
    branches: Vec<Node>,
    items: Vec<Node>,
    restore: Flags,
    capture: bool,
}

struct Parser<'p> {
    whole: &'p str,
    flags: Flags,
    /// The top level first, then each open group.
    frames: Vec<Frame>,
}

impl<'p> Parser<'p> {
    fn new(whole: &'p str) -> Parser<'p> {
        Parser {
            whole,
            flags: Flags::default(),
            frames: vec![Frame {
                branches: Vec::new(),
                items: Vec::new(),
                restore: Flags::default(),
                capture: false,
            }],
        }
    }

    fn push(&mut self, kind: Kind) {
        self.push_node(Node::leaf(kind));
    }

    fn push_node(&mut self, node: Node) {
        if let Some(frame) = self.frames.last_mut() {
            frame.items.push(node);
        }
    }

    fn push_char(&mut self, c: u32) {
        self.push(Kind::Char(c, self.flags.fold));
    }

    fn parse(mut self) -> Result<Node, Refusal> {
        let s = self.whole;
        let mut i = 0;
        // Where the repetition operator just read began, if the last thing read was one: Go
        // refuses another right after it.
        let mut last_repeat: Option<usize> = None;
        while let Some(c) = s[i..].chars().next() {
            let mut repeat = None;
            match c {
                '(' if s[i + 1..].starts_with('?') => i += self.perl_flags(i)?,
                '(' => {
                    self.open(true);
                    i += 1;
                }
                '|' => {
                    self.bar();
                    i += 1;
                }
                ')' => {
                    self.close()?;
                    i += 1;
                }
                '^' => {
                    self.push(Kind::Look(if self.flags.multi_line {
                        Look::BeginLine
                    } else {
                        Look::BeginText
                    }));
                    i += 1;
                }
                '$' => {
                    self.push(Kind::Look(if self.flags.multi_line {
                        Look::EndLine
                    } else {
                        Look::EndText
                    }));
                    i += 1;
                }
                '.' => {
                    self.push(Kind::Any(self.flags.dot_nl));
                    i += 1;
                }
                '[' => i += self.class(i)?,
                '*' | '+' | '?' => {
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    let end = self.repeat(i, i + 1, min, max, false, last_repeat)?;
                    repeat = Some(i);
                    i = end;
                }
                '{' => match counts(&s[i..]) {
                    // Not a repetition Go reads: the brace is text.
                    None => {
                        self.push_char('{' as u32);
                        i += 1;
                    }
                    Some((min, max, len)) => {
                        let too_large = |n: Option<u32>| n.is_some_and(|n| n > MAX_REPEAT);
                        let (Some(lo), hi) = (min, max) else {
                            return refuse(Code::InvalidRepeatSize, &s[i..i + len]);
                        };
                        let hi = match hi {
                            Count::Unbounded => None,
                            Count::Bounded(None) => return refuse(Code::InvalidRepeatSize, &s[i..i + len]),
                            Count::Bounded(Some(h)) => Some(h),
                        };
                        if too_large(Some(lo)) || too_large(hi) || hi.is_some_and(|h| lo > h) {
                            return refuse(Code::InvalidRepeatSize, &s[i..i + len]);
                        }
                        let end = self.repeat(i, i + len, lo, hi, true, last_repeat)?;
                        repeat = Some(i);
                        i = end;
                    }
                },
                '\\' => i += self.escape(i)?,
                _ => {
                    self.push_char(c as u32);
                    i += c.len_utf8();
                }
            }
            last_repeat = repeat;
        }
        if self.frames.len() > 1 {
            return refuse(Code::MissingParen, s);
        }
        let top = self.frames.pop().map(finish).unwrap_or_else(|| Node::leaf(Kind::Empty));
        self.check_limits(&top)?;
        Ok(top)
    }

    /// Go's `checkLimits` on a node just made (its count of runes in classes, `maxRunes`, is
    /// not kept: out of reach, see the module's doc).
    fn check_limits(&self, node: &Node) -> Result<(), Refusal> {
        if node.size > MAX_SIZE {
            return refuse(Code::Large, self.whole);
        }
        if node.height > MAX_HEIGHT {
            return refuse(Code::NestingDepth, self.whole);
        }
        Ok(())
    }

    fn open(&mut self, capture: bool) {
        self.frames.push(Frame {
            branches: Vec::new(),
            items: Vec::new(),
            restore: self.flags,
            capture,
        });
    }

    fn bar(&mut self) {
        if let Some(frame) = self.frames.last_mut() {
            let items = std::mem::take(&mut frame.items);
            frame.branches.push(Node::concat(items));
        }
    }

    fn close(&mut self) -> Result<(), Refusal> {
        if self.frames.len() < 2 {
            return refuse(Code::UnexpectedParen, self.whole);
        }
        let Some(frame) = self.frames.pop() else {
            return refuse(Code::UnexpectedParen, self.whole);
        };
        self.flags = frame.restore;
        let capture = frame.capture;
        let inner = finish(frame);
        let node = if capture { Node::capture(inner) } else { inner };
        self.check_limits(&node)?;
        self.push_node(node);
        Ok(())
    }

    /// A repetition operator from `start` (its text ending at `after`, before a `?` that makes
    /// it non-greedy) applied to the last piece read; returns where the text goes on.
    fn repeat(
        &mut self,
        start: usize,
        mut after: usize,
        min: u32,
        max: Option<u32>,
        counted: bool,
        last_repeat: Option<usize>,
    ) -> Result<usize, Refusal> {
        let s = self.whole;
        if s[after..].starts_with('?') {
            after += 1;
        }
        if let Some(previous) = last_repeat {
            // Go quotes both operators: `**`, `{2}{3}`, `*??`.
            return refuse(Code::InvalidRepeatOp, &s[previous..after]);
        }
        let Some(sub) = self.frames.last_mut().and_then(|f| f.items.pop()) else {
            // At the start, after `(` or `|`, or after a flag group or `\Q\E` there.
            return refuse(Code::MissingRepeatArgument, &s[start..after]);
        };
        let node = Node::repeat(sub, min, max, counted);
        self.check_limits(&node)?;
        if counted && (min >= 2 || max.is_some_and(|m| m >= 2)) && !repeat_is_valid(&node, MAX_REPEAT) {
            return refuse(Code::InvalidRepeatSize, &s[start..after]);
        }
        self.push_node(node);
        Ok(after)
    }

    /// At `(?`: a named group, a non-capturing group with flags, or flags alone; returns the
    /// length read.
    fn perl_flags(&mut self, i: usize) -> Result<usize, Refusal> {
        let t = &self.whole[i..];
        let b = t.as_bytes();
        let name_at = if t.len() > 4 && b[2] == b'P' && b[3] == b'<' {
            Some(4)
        } else if t.len() > 3 && b[2] == b'<' {
            Some(3)
        } else {
            None
        };
        if let Some(at) = name_at {
            let Some(end) = t.find('>') else {
                return refuse(Code::InvalidNamedCapture, t);
            };
            let name = &t[at..end];
            // Go: `[A-Za-z0-9_]+`, a leading digit and a name used twice allowed.
            if name.is_empty() || !name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric()) {
                return refuse(Code::InvalidNamedCapture, &t[..=end]);
            }
            self.open(true);
            return Ok(end + 1);
        }
        let mut flags = self.flags;
        let mut negated = false;
        let mut saw_flag = false;
        for (k, c) in t[2..].char_indices() {
            let read = 2 + k + c.len_utf8();
            match c {
                'i' => flags.fold = !negated,
                'm' => flags.multi_line = !negated,
                's' => flags.dot_nl = !negated,
                'U' => {}
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                    continue;
                }
                // After `-`, a flag must come before the end.
                ':' | ')' if !negated || saw_flag => {
                    if c == ':' {
                        self.open(false);
                    }
                    self.flags = flags;
                    return Ok(read);
                }
                _ => return refuse(Code::InvalidPerlOp, &t[..read]),
            }
            saw_flag = true;
        }
        refuse(Code::InvalidPerlOp, t)
    }

    /// At `\` outside a class; returns the length read.
    fn escape(&mut self, i: usize) -> Result<usize, Refusal> {
        let t = &self.whole[i..];
        match t[1..].chars().next() {
            Some('A') => self.push(Kind::Look(Look::BeginText)),
            Some('z') => self.push(Kind::Look(Look::EndText)),
            Some('b') => self.push(Kind::Look(Look::WordBoundary)),
            Some('B') => self.push(Kind::Look(Look::NotWordBoundary)),
            Some('C') => return refuse(Code::InvalidEscape, &t[..2]),
            Some('Q') => {
                let rest = &t[2..];
                let (text, len) = match rest.find("\\E") {
                    Some(end) => (&rest[..end], 2 + end + 2),
                    None => (rest, t.len()),
                };
                for c in text.chars() {
                    self.push_char(c as u32);
                }
                return Ok(len);
            }
            Some('p' | 'P') => {
                let (item, len) = unicode_class(t)?;
                self.push(Kind::Class(vec![item], false, self.flags.fold));
                return Ok(len);
            }
            Some(c) if perl_class(c).is_some() => {
                let (ranges, negated) = perl_class(c).unwrap_or((&[], false));
                self.push(Kind::Class(vec![Item::Ascii(ranges, negated)], false, self.flags.fold));
            }
            _ => {
                let (c, len) = single_escape(t)?;
                self.push_char(c);
                return Ok(len);
            }
        }
        Ok(2)
    }

    /// At `[`: the class, pushed; returns the length read.
    fn class(&mut self, i: usize) -> Result<usize, Refusal> {
        let whole_class = &self.whole[i..];
        let mut k = 1;
        let negated = whole_class[k..].starts_with('^');
        if negated {
            k += 1;
        }
        let mut items = Vec::new();
        let mut first = true;
        loop {
            let rest = &whole_class[k..];
            // `]` first is a member (`[]a]`), and ends the class anywhere else.
            if rest.starts_with(']') && !first {
                k += 1;
                break;
            }
            first = false;
            if rest.len() > 2 && rest.starts_with("[:") {
                // Go looks for the `:]` anywhere after, past this class's end too.
                if let Some(end) = rest[2..].find(":]") {
                    let name = &rest[..end + 4];
                    let Some((ranges, negated)) = posix_class(name) else {
                        return refuse(Code::InvalidCharRange, name);
                    };
                    items.push(Item::Ascii(ranges, negated));
                    k += name.len();
                    continue;
                }
            }
            if rest.starts_with("\\p") || rest.starts_with("\\P") {
                let (item, len) = unicode_class(rest)?;
                items.push(item);
                k += len;
                continue;
            }
            if let Some((ranges, negated)) = rest
                .strip_prefix('\\')
                .and_then(|r| r.chars().next())
                .and_then(perl_class)
            {
                items.push(Item::Ascii(ranges, negated));
                k += 2;
                continue;
            }
            let start = k;
            let (lo, len) = class_char(rest, whole_class)?;
            k += len;
            let mut hi = lo;
            let after = &whole_class.as_bytes()[k..];
            // `a-]` is `a` and `-`.
            if after.len() >= 2 && after[0] == b'-' && after[1] != b']' {
                k += 1;
                let (h, len) = class_char(&whole_class[k..], whole_class)?;
                k += len;
                hi = h;
                if hi < lo {
                    return refuse(Code::InvalidCharRange, &whole_class[start..k]);
                }
            }
            items.push(Item::Range(lo, hi));
        }
        self.push(Kind::Class(items, negated, self.flags.fold));
        Ok(k)
    }
}

/// A closed group's (or the whole pattern's) branches as one node.
fn finish(mut frame: Frame) -> Node {
    let last = Node::concat(std::mem::take(&mut frame.items));
    if frame.branches.is_empty() {
        return last;
    }
    frame.branches.push(last);
    Node::alternate(frame.branches)
}

/// A count of `{…}` as Go's `parseInt` reads it: `None` past 99,999,999 (Go refuses the
/// repetition then, rather than reading the brace as text).
type Number = Option<u32>;

/// The upper count of `{…}`.
enum Count {
    /// `{n,}`.
    Unbounded,
    /// `{n}` (the same as the lower) or `{n,m}`.
    Bounded(Number),
}

/// At `{`: `(min, max, length)` of a repetition Go reads (`{n}`, `{n,}`, `{n,m}`, digits
/// without a leading zero), whatever its counts; `None` when Go reads the brace as text.
fn counts(t: &str) -> Option<(Number, Count, usize)> {
    let (min, mut k) = number(t, 1)?;
    let max = match t.as_bytes().get(k)? {
        b',' => {
            k += 1;
            if t.as_bytes().get(k)? == &b'}' {
                Count::Unbounded
            } else {
                let (max, end) = number(t, k)?;
                k = end;
                Count::Bounded(max)
            }
        }
        _ => Count::Bounded(min),
    };
    (t.as_bytes().get(k)? == &b'}').then_some((min, max, k + 1))
}

/// Go's `parseInt` at `t[at..]`: the digits there (at least one; no leading zero before
/// another digit) and where they end; the value `None` when it reaches 100,000,000.
fn number(t: &str, at: usize) -> Option<(Number, usize)> {
    let digits = t.as_bytes()[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || (digits >= 2 && t.as_bytes()[at] == b'0') {
        return None;
    }
    let mut n: u32 = 0;
    for &d in &t.as_bytes()[at..at + digits] {
        if n >= 100_000_000 {
            return Some((None, at + digits));
        }
        n = n * 10 + u32::from(d - b'0');
    }
    Some((Some(n), at + digits))
}

/// `\p…` or `\P…` at the start of `t`: the class and the length read.
fn unicode_class(t: &str) -> Result<(Item, usize), Refusal> {
    let mut negated = t.as_bytes()[1] == b'P';
    let (len, name) = match t[2..].chars().next() {
        Some('{') => match t.find('}') {
            Some(end) => (end + 1, &t[3..end]),
            None => return refuse(Code::InvalidCharRange, t),
        },
        Some(c) => (2 + c.len_utf8(), &t[2..2 + c.len_utf8()]),
        None => (2, ""),
    };
    let name = match name.strip_prefix('^') {
        Some(rest) => {
            negated = !negated;
            rest
        }
        None => name,
    };
    match unicode_name(name) {
        Some(rust) => Ok((Item::Unicode(rust, negated), len)),
        None => refuse(Code::InvalidCharRange, &t[..len]),
    }
}

/// A Unicode name Go knows (`Any`, `Assigned`, `ASCII`, a general category or its alias, a
/// script), written as the `regex` crate reads that class; `None` for any other name (a
/// binary property such as `Alphabetic`, `sc=Greek`).
fn unicode_name(name: &str) -> Option<String> {
    // Go (1.25 on) reads a name in any case, without its spaces, underscores and hyphens
    // (`\p{upper case-let ter}`), as the crate does; no name of Go's holds anything else.
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b' ' | b'-'))
    {
        return None;
    }
    for special in ["Any", "Assigned", "ASCII"] {
        if name.eq_ignore_ascii_case(special) {
            return Some(special.to_string());
        }
    }
    // Go looks among the categories first, then the scripts.
    ["gc", "sc"]
        .iter()
        .map(|property| format!("{property}={name}"))
        .find(|query| regex_syntax::Parser::new().parse(&format!("\\p{{{query}}}")).is_ok())
}

/// `\d`, `\D`, `\s`, `\S`, `\w`, `\W` (the letter after the backslash): Go's ASCII ranges and
/// whether they are negated.
fn perl_class(c: char) -> Option<(&'static [(u32, u32)], bool)> {
    const DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
    const SPACE: &[(u32, u32)] = &[(0x09, 0x0a), (0x0c, 0x0d), (0x20, 0x20)];
    const WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)];
    Some(match c {
        'd' => (DIGIT, false),
        'D' => (DIGIT, true),
        's' => (SPACE, false),
        'S' => (SPACE, true),
        'w' => (WORD, false),
        'W' => (WORD, true),
        _ => return None,
    })
}

/// A POSIX class as Go names it (`[:alpha:]`, `[:^alpha:]`): its ASCII ranges and whether it is
/// negated.
fn posix_class(name: &str) -> Option<(&'static [(u32, u32)], bool)> {
    let inner = name.strip_prefix("[:")?.strip_suffix(":]")?;
    let (negated, inner) = match inner.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, inner),
    };
    let ranges: &'static [(u32, u32)] = match inner {
        "alnum" => &[(0x30, 0x39), (0x41, 0x5a), (0x61, 0x7a)],
        "alpha" => &[(0x41, 0x5a), (0x61, 0x7a)],
        "ascii" => &[(0x00, 0x7f)],
        "blank" => &[(0x09, 0x09), (0x20, 0x20)],
        "cntrl" => &[(0x00, 0x1f), (0x7f, 0x7f)],
        "digit" => &[(0x30, 0x39)],
        "graph" => &[(0x21, 0x7e)],
        "lower" => &[(0x61, 0x7a)],
        "print" => &[(0x20, 0x7e)],
        "punct" => &[(0x21, 0x2f), (0x3a, 0x40), (0x5b, 0x60), (0x7b, 0x7e)],
        "space" => &[(0x09, 0x0d), (0x20, 0x20)],
        "upper" => &[(0x41, 0x5a)],
        "word" => &[(0x30, 0x39), (0x41, 0x5a), (0x5f, 0x5f), (0x61, 0x7a)],
        "xdigit" => &[(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
        _ => return None,
    };
    Some((ranges, negated))
}

/// One member of a class at the start of `t` (an escape or a character) and its length; the
/// class ends too soon (`whole_class` quoted) when `t` is empty.
fn class_char(t: &str, whole_class: &str) -> Result<(u32, usize), Refusal> {
    match t.chars().next() {
        None => refuse(Code::MissingBracket, whole_class),
        Some('\\') => single_escape(t),
        Some(c) => Ok((c as u32, c.len_utf8())),
    }
}

/// A one-character escape at the start of `t` (Go's `parseEscape`): the character and the
/// length read.
fn single_escape(t: &str) -> Result<(u32, usize), Refusal> {
    let Some(c) = t[1..].chars().next() else {
        return refuse(Code::TrailingBackslash, "");
    };
    let mut k = 1 + c.len_utf8();
    let octal = |at: usize| {
        t.as_bytes()
            .get(at)
            .filter(|b| (b'0'..=b'7').contains(b))
            .map(|b| u32::from(b - b'0'))
    };
    let value = match c {
        // Up to three octal digits; `\1` to `\7` alone would be a backreference.
        '0'..='7' if c == '0' || octal(k).is_some() => {
            let mut r = c as u32 - '0' as u32;
            for _ in 1..3 {
                match octal(k) {
                    Some(d) => {
                        r = r * 8 + d;
                        k += 1;
                    }
                    None => break,
                }
            }
            r
        }
        'x' => {
            let Some(next) = t[k..].chars().next() else {
                return refuse(Code::InvalidEscape, &t[..k]);
            };
            k += next.len_utf8();
            if next == '{' {
                // Any number of hex digits, at least one, up to U+10FFFF.
                let mut r: u32 = 0;
                let mut digits = 0;
                loop {
                    let Some(d) = t[k..].chars().next() else {
                        return refuse(Code::InvalidEscape, &t[..k]);
                    };
                    k += d.len_utf8();
                    if d == '}' {
                        break;
                    }
                    let Some(v) = d.to_digit(16) else {
                        return refuse(Code::InvalidEscape, &t[..k]);
                    };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return refuse(Code::InvalidEscape, &t[..k]);
                    }
                    digits += 1;
                }
                if digits == 0 {
                    return refuse(Code::InvalidEscape, &t[..k]);
                }
                r
            } else {
                let low = t[k..].chars().next();
                k += low.map_or(0, char::len_utf8);
                match (next.to_digit(16), low.and_then(|l| l.to_digit(16))) {
                    (Some(x), Some(y)) => x * 16 + y,
                    _ => return refuse(Code::InvalidEscape, &t[..k]),
                }
            }
        }
        'a' => 0x07,
        'f' => 0x0c,
        'n' => 0x0a,
        'r' => 0x0d,
        't' => 0x09,
        'v' => 0x0b,
        // Any other ASCII character but a letter or digit is itself (`\<`, `\_`, `\ `).
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => c as u32,
        _ => return refuse(Code::InvalidEscape, &t[..k]),
    };
    Ok((value, k))
}

mod write;

#[cfg(test)]
pub(crate) mod tests;
