//! A Go pattern compiled over characters, not bytes: the matcher of a pattern whose byte
//! automaton would be large (docs/categorizer.md: a categorizer within the caps).
//!
//! Owns: [`CharProgram`], Go's parse tree (`model::go_regex::parse`) compiled into a Thompson
//! program whose instructions test one character against a set of ranges (a class such as `\pL`
//! is one instruction, and one set shared by every copy a repetition makes), searched for a
//! match anywhere by running every thread at once (Pike's VM, what Go's `regexp` runs): memory
//! and build time grow with the pattern as written, never with the UTF-8 forms of its classes,
//! which make the `regex` crate's automaton of `x{100}\pL{6}` 90 KiB forward (and as much again
//! reversed) where this program is about 2 KiB. A search costs the text's characters times the
//! threads alive, a few times a lazy DFA's per character: the price of the rare pattern that
//! goes here ([`Pattern`](super::Pattern) sends only those).
//!
//! Must not: answer differently from the pattern's own `regex` crate `Regex`
//! (`validate::compile_pattern`, Go's `MatchString`) on any text (test
//! `char_programs_answer_as_the_regex_crate`): each set is read from the very text
//! `go_regex` writes for the crate, and each assertion is Go's (`\b` ASCII, `$` the end of the
//! text unless `m`). Nor allocate per search: the thread lists are one per thread, reused.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use regex_syntax::hir::{Class, HirKind};

use crate::model::go_regex::{Kind, Look, Node};

/// A pattern as a program over characters.
#[derive(Debug, Clone)]
pub(crate) struct CharProgram {
    insts: Box<[Inst]>,
    sets: Box<[Arc<CharSet>]>,
    start: u32,
    /// Every match starts at the text's start (`^…` without `m`): a search adds no thread
    /// past the first position, and ends when none is alive.
    anchored: bool,
}

#[derive(Debug, Clone, Copy)]
enum Inst {
    /// The character at the position is in set `.0`: go on at `.1` after it.
    Set(u32, u32),
    /// Both ways.
    Split(u32, u32),
    /// The assertion holds at the position: go on at `.1`.
    Look(Look, u32),
    Match,
}

/// A set of characters: ASCII as a bitmap, the rest as sorted, disjoint ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CharSet {
    ascii: u128,
    ranges: Box<[(u32, u32)]>,
}

impl CharSet {
    #[inline]
    fn contains(&self, c: char) -> bool {
        let c = c as u32;
        if c < 128 {
            return self.ascii & (1u128 << c) != 0;
        }
        let k = self.ranges.partition_point(|&(_, hi)| hi < c);
        self.ranges.get(k).is_some_and(|&(lo, _)| lo <= c)
    }

    /// The set the `regex` crate reads from `text` (a leaf `go_regex` wrote: a character, a
    /// class, `.`); `None` when that is not one set of characters (which `go_regex` never
    /// writes for a leaf).
    fn of(text: &str) -> Option<CharSet> {
        let hir = regex_syntax::ParserBuilder::new()
            .nest_limit(crate::model::go_regex::NEST_LIMIT)
            .build()
            .parse(text)
            .ok()?;
        let ranges: Vec<(u32, u32)> = match hir.kind() {
            HirKind::Literal(lit) => {
                let s = std::str::from_utf8(&lit.0).ok()?;
                let mut chars = s.chars();
                let c = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                vec![(c as u32, c as u32)]
            }
            HirKind::Class(Class::Unicode(class)) => class
                .ranges()
                .iter()
                .map(|r| (r.start() as u32, r.end() as u32))
                .collect(),
            // The crate's empty class (what matches nothing) is an empty class of bytes.
            HirKind::Class(Class::Bytes(class)) if class.ranges().is_empty() => Vec::new(),
            _ => return None,
        };
        let mut ascii = 0u128;
        for &(lo, hi) in &ranges {
            for c in lo..=hi.min(127) {
                ascii |= 1u128 << c;
            }
        }
        Some(CharSet {
            ascii,
            ranges: ranges.into_iter().filter(|&(_, hi)| hi >= 128).collect(),
        })
    }
}

/// The sets of characters of the programs a caller builds together, by the leaf text they are
/// read from: the 4,000 rules of a categorizer that each hold `\pL` share one set of its
/// ranges (5 KiB), not one each.
#[derive(Debug, Clone, Default)]
pub(crate) struct CharSets {
    by_text: HashMap<String, Arc<CharSet>>,
}

/// Builds a program: instructions are emitted from the end, each piece given where to go on
/// after it, so nothing is patched but a loop's head.
struct Compiler<'s> {
    insts: Vec<Inst>,
    sets: Vec<Arc<CharSet>>,
    /// A leaf's text → its set's index, so that the copies of a repetition share one.
    set_ids: HashMap<String, u32>,
    shared: &'s mut CharSets,
}

impl Compiler<'_> {
    fn push(&mut self, inst: Inst) -> u32 {
        self.insts.push(inst);
        (self.insts.len() - 1) as u32
    }

    fn set(&mut self, leaf: &Node) -> Option<u32> {
        let text = leaf.leaf_text();
        if let Some(&id) = self.set_ids.get(&text) {
            return Some(id);
        }
        let set = match self.shared.by_text.get(&text) {
            Some(set) => Arc::clone(set),
            None => {
                let set = Arc::new(CharSet::of(&text)?);
                self.shared.by_text.insert(text.clone(), Arc::clone(&set));
                set
            }
        };
        let id = self.sets.len() as u32;
        self.sets.push(set);
        self.set_ids.insert(text, id);
        Some(id)
    }

    /// The code of `node`, going on at `next`; its first instruction.
    fn emit(&mut self, node: &Node, next: u32) -> Option<u32> {
        Some(match &node.kind {
            Kind::Empty => next,
            Kind::Char(..) | Kind::Class(..) | Kind::Any(_) => {
                let set = self.set(node)?;
                self.push(Inst::Set(set, next))
            }
            Kind::Look(look) => self.push(Inst::Look(*look, next)),
            Kind::Capture(sub) => self.emit(sub, next)?,
            Kind::Concat(items) => {
                let mut at = next;
                for item in items.iter().rev() {
                    at = self.emit(item, at)?;
                }
                at
            }
            Kind::Alternate(branches) => {
                let mut entries = Vec::with_capacity(branches.len());
                for branch in branches {
                    entries.push(self.emit(branch, next)?);
                }
                let mut at = entries.pop()?;
                for &entry in entries.iter().rev() {
                    at = self.push(Inst::Split(entry, at));
                }
                at
            }
            Kind::Repeat { sub, min, max, .. } => self.repeat(sub, *min, *max, next)?,
        })
    }

    /// `sub{min,max}` as Go's compiler spells it: `min` copies, then `max - min` optional ones
    /// nested (`xx(x(x)?)?`), or a loop when unbounded.
    fn repeat(&mut self, sub: &Node, min: u32, max: Option<u32>, next: u32) -> Option<u32> {
        let mut at = match max {
            None => {
                // The loop's head, a `Split` into the body or on; the body goes back to it.
                let head = self.push(Inst::Match);
                let body = self.emit(sub, head)?;
                self.insts[head as usize] = Inst::Split(body, next);
                if min == 0 {
                    return Some(head);
                }
                // `x{n,}`: n - 1 copies, then `x+` (the body first, then the head).
                let mut at = body;
                for _ in 1..min {
                    at = self.emit(sub, at)?;
                }
                return Some(at);
            }
            Some(max) => {
                let mut at = next;
                for _ in min..max {
                    let body = self.emit(sub, at)?;
                    at = self.push(Inst::Split(body, next));
                }
                at
            }
        };
        for _ in 0..min {
            at = self.emit(sub, at)?;
        }
        Some(at)
    }
}

impl CharProgram {
    /// The program of a pattern Go accepts, its sets shared with the programs built with
    /// `shared`; `None` for one Go refuses (validation refused it first) or, never expected, a
    /// leaf that is no set of characters.
    pub(crate) fn new(pattern: &str, shared: &mut CharSets) -> Option<CharProgram> {
        let tree = crate::model::go_regex::parse(pattern).ok()?;
        let mut compiler = Compiler {
            insts: Vec::new(),
            sets: Vec::new(),
            set_ids: HashMap::new(),
            shared,
        };
        let done = compiler.push(Inst::Match);
        let start = compiler.emit(&tree, done)?;
        let anchored = starts_at_start(&tree);
        Some(CharProgram {
            insts: compiler.insts.into(),
            sets: compiler.sets.into(),
            start,
            anchored,
        })
    }

    /// Whether the pattern matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            scratch.fit(self.insts.len());
            self.search(text, &mut scratch)
        })
    }

    fn search(&self, text: &str, scratch: &mut Scratch) -> bool {
        let Scratch { now, next, stack } = scratch;
        now.clear();
        let mut at = 0;
        let mut before: Option<char> = None;
        loop {
            let here = text[at..].chars().next();
            let around = Around {
                before,
                here,
                start: at == 0,
            };
            // A match may start at every position (at the first only, when anchored).
            if (at == 0 || !self.anchored) && self.add(now, stack, self.start, around) {
                return true;
            }
            let Some(c) = here else {
                return false;
            };
            if now.is_empty() && self.anchored {
                return false;
            }
            next.clear();
            let after_at = at + c.len_utf8();
            let after = Around {
                before: Some(c),
                here: text[after_at..].chars().next(),
                start: false,
            };
            for k in 0..now.len() {
                if let Inst::Set(set, to) = self.insts[now.dense[k] as usize] {
                    if self.sets[set as usize].contains(c) && self.add(next, stack, to, after) {
                        return true;
                    }
                }
            }
            std::mem::swap(now, next);
            before = Some(c);
            at = after_at;
        }
    }

    /// Adds the thread at `pc` and every one it reaches without reading a character (the
    /// assertions holding `around`) to `list`; whether one of them is the match.
    fn add(&self, list: &mut SparseSet, stack: &mut Vec<u32>, pc: u32, around: Around) -> bool {
        stack.clear();
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            if !list.insert(pc) {
                continue;
            }
            match self.insts[pc as usize] {
                Inst::Match => {
                    stack.clear();
                    return true;
                }
                Inst::Split(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                Inst::Look(look, to) => {
                    if around.holds(look) {
                        stack.push(to);
                    }
                }
                Inst::Set(..) => {}
            }
        }
        false
    }
}

/// Every match of `node` begins at the text's start: it begins with `\A` (`^` without `m`), or
/// is an alternation whose every branch does.
fn starts_at_start(node: &Node) -> bool {
    match &node.content().kind {
        Kind::Look(Look::BeginText) => true,
        Kind::Concat(items) => items.first().is_some_and(starts_at_start),
        Kind::Alternate(branches) => branches.iter().all(starts_at_start),
        _ => false,
    }
}

/// A position of the text: the characters on either side, and whether it is the start.
#[derive(Clone, Copy)]
struct Around {
    before: Option<char>,
    here: Option<char>,
    start: bool,
}

impl Around {
    /// Go's assertions: `\b` between an ASCII word character and anything else (or an end).
    fn holds(&self, look: Look) -> bool {
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        match look {
            Look::BeginText => self.start,
            Look::EndText => self.here.is_none(),
            Look::BeginLine => self.start || self.before == Some('\n'),
            Look::EndLine => self.here.is_none() || self.here == Some('\n'),
            Look::WordBoundary => word(self.before) != word(self.here),
            Look::NotWordBoundary => word(self.before) == word(self.here),
        }
    }
}

/// A set of instruction indices with O(1) insert, membership and clear (the visited threads of
/// one position, in the order added).
#[derive(Default)]
struct SparseSet {
    dense: Vec<u32>,
    sparse: Vec<u32>,
}

impl SparseSet {
    fn fit(&mut self, n: usize) {
        if self.sparse.len() < n {
            self.sparse.resize(n, 0);
            // Each instruction at most once: never grown by a search.
            self.dense.reserve(n - self.dense.len());
        }
    }

    fn clear(&mut self) {
        self.dense.clear();
    }

    fn len(&self) -> usize {
        self.dense.len()
    }

    fn is_empty(&self) -> bool {
        self.dense.is_empty()
    }

    /// Inserts `pc`; false when it was there already.
    fn insert(&mut self, pc: u32) -> bool {
        let k = self.sparse[pc as usize] as usize;
        if k < self.dense.len() && self.dense[k] == pc {
            return false;
        }
        self.sparse[pc as usize] = self.dense.len() as u32;
        self.dense.push(pc);
        true
    }
}

/// A search's thread lists (this position's and the next's) and its closure stack.
#[derive(Default)]
struct Scratch {
    now: SparseSet,
    next: SparseSet,
    stack: Vec<u32>,
}

impl Scratch {
    /// Room for a program of `n` instructions: grown once to the largest program a thread
    /// searches with, never per search.
    fn fit(&mut self, n: usize) {
        self.now.fit(n);
        self.next.fit(n);
        // A closure pushes at most two per instruction it adds, and adds each once.
        if self.stack.capacity() < 2 * n + 1 {
            self.stack.reserve(2 * n + 1 - self.stack.len());
        }
    }
}

thread_local! {
    /// One per thread: a search allocates nothing once it has grown to the largest program.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::validate::compile_pattern;
    use proptest::prelude::*;

    /// Patterns of Go's syntax built from pieces that exercise every instruction and set:
    /// Unicode classes and their negations, case folding, `.` with and without `s`, anchors in
    /// both modes, ASCII word boundaries, counted repetitions, empty alternatives.
    fn arb_pattern() -> impl Strategy<Value = String> {
        let atom = prop::sample::select(vec![
            "a",
            "b",
            "é",
            "x",
            r"\pL",
            r"\PL",
            r"\p{Greek}",
            r"\p{^Greek}",
            r"[a-c]",
            r"[^ab]",
            r"\d",
            r"\W",
            r"\s",
            ".",
            "(?s:.)",
            "(?i:k)",
            "(?i)é",
            "[[:alpha:]]",
            r"\b",
            r"\B",
            "^",
            "$",
            "(?m:^)",
            "(?m:$)",
            r"\A",
            r"\z",
            "(?:)",
            r"\x{D800}",
        ]);
        let op = prop::sample::select(vec!["", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,}", "{0}"]);
        let piece = (atom, op).prop_map(|(a, o)| {
            // An operator after an assertion or an empty group is Go's too (`^*`).
            format!("(?:{a}){o}")
        });
        let branch = prop::collection::vec(piece, 0..4).prop_map(|p| p.concat());
        prop::collection::vec(branch, 1..3).prop_map(|b| b.join("|"))
    }

    fn arb_text() -> impl Strategy<Value = String> {
        let c = prop::sample::select(vec![
            "a", "b", "x", "é", "É", "K", "\u{212a}", "α", "\n", " ", "1", "_", "-",
        ]);
        prop::collection::vec(c, 0..8).prop_map(|cs| cs.concat())
    }

    proptest! {
        /// The program answers as the `regex` crate's `Regex` for the same pattern (Go's
        /// `MatchString`), on texts of the characters the sets and assertions tell apart.
        #[test]
        fn char_programs_answer_as_the_regex_crate(pattern in arb_pattern(), texts in prop::collection::vec(arb_text(), 1..6)) {
            let program = CharProgram::new(&pattern, &mut CharSets::default()).unwrap();
            let regex = compile_pattern(&pattern).unwrap();
            for t in &texts {
                // `find`, not `is_match`: regex 1.13.1's `is_match` says no where `find` finds the
                // match (`\p{Greek}|(?-u:\B)` on `aαa`: `α`), as Go's `MatchString` does.
                prop_assert_eq!(program.is_match(t), regex.find(t).is_some(), "{:?} on {:?}", pattern, t);
            }
        }
    }

    /// The case the `regex` crate's `is_match` gets wrong: a Greek letter matches whatever
    /// the ASCII `\B` beside it in the alternation does.
    #[test]
    fn an_alternation_with_an_ascii_non_boundary_still_matches_its_other_branch() {
        let pattern = r"(?:\p{Greek})|(?:\B)";
        let program = CharProgram::new(pattern, &mut CharSets::default()).unwrap();
        assert!(program.is_match("aαa"));
        assert!(compile_pattern(pattern).unwrap().find("aαa").is_some());
    }

    #[test]
    fn a_large_class_is_one_set_however_often_repeated() {
        let program = CharProgram::new(r"x{100}\pL{6}", &mut CharSets::default()).unwrap();
        assert_eq!(program.sets.len(), 2);
        assert_eq!(program.insts.len(), 100 + 6 + 1);
        assert!(program.is_match(&format!("{}Fehler", "x".repeat(100))));
        assert!(program.is_match(&format!("..{}Ωmegas!", "x".repeat(101))));
        assert!(!program.is_match(&format!("{}Fehle", "x".repeat(100))));
        assert!(!program.is_match(&format!("{}Fehler", "x".repeat(99))));
    }

    #[test]
    fn anchored_programs_stop_when_no_thread_is_left() {
        let program = CharProgram::new("^ab|^c", &mut CharSets::default()).unwrap();
        assert!(program.anchored);
        assert!(program.is_match("abz"));
        assert!(program.is_match("c"));
        assert!(!program.is_match("zab"));
        let program = CharProgram::new("(?m)^ab", &mut CharSets::default()).unwrap();
        assert!(!program.anchored);
        assert!(program.is_match("z\nab"));
    }
}
