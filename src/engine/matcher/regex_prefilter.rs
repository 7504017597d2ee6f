//! The literal prefilter of a policy's regex message rules: which rules' regexes can match a
//! message at all, from the literals each regex needs, in one scan of the message.
//!
//! Owns: the extraction of a pattern's required literals (a set of strings such that every
//! match of the pattern contains one of them, compiled once from the pattern's syntax tree)
//! and [`Literals`], one Aho-Corasick automaton over a policy's required literals that maps a
//! message to the rules it leaves possible.
//!
//! Must not: reject a rule whose regex matches the message (a false "possible" only costs a
//! regex search; a false "impossible" would change a decision), allocate per message, or
//! decide a match: the possible rules still run a regex.

use aho_corasick::packed::{self, Searcher};
use aho_corasick::Span;
use regex_automata::util::syntax;
use regex_syntax::hir::{Class, Hir, HirKind};

/// Literals per set (a class expanded, a cross product of a concatenation, an alternation's
/// union): past this a set stops being tracked, which only loses precision.
const MAX_SET: usize = 64;

/// Characters of a class expanded into literals (`[0-9]`, `[Xx]`, `(?i)é`); a larger class
/// (`\w`, `.`) is a gap between literals.
const MAX_CLASS: usize = 16;

/// The shortest literal worth a search: every rule whose set has a shorter one is always
/// possible. One- and two-byte literals occur in most messages, and each occurrence costs
/// the scan a reported match.
const MIN_LITERAL: usize = 3;

/// A set of byte strings. When a policy's patterns ignore ASCII case somewhere (`(?i)`,
/// `[Xx]`), its literals are lowercased and searched for in a lowercased copy of the
/// message: `(?i)policy` is one literal then, not 64.
type Set = Vec<Vec<u8>>;

/// Longest message searched in a lowercased copy (on the stack); a longer one leaves every
/// rule of such a policy possible.
const FOLD_BUFFER: usize = 1024;

/// What the prefilter knows of a sub-expression: every string it matches, when they are
/// few (`exact`), and a set one of which every match contains (`need`, the best known).
struct Info {
    exact: Option<Set>,
    need: Option<Set>,
}

impl Info {
    fn exact(set: Set) -> Info {
        Info {
            need: Some(set.clone()),
            exact: Some(set),
        }
    }

    fn unknown() -> Info {
        Info {
            exact: None,
            need: None,
        }
    }
}

/// A pattern's syntax tree, parsed as the rule's own regex is compiled (`compile_pattern`: Go's
/// syntax written as the `regex` crate's, then regex's defaults, UTF-8 mode).
fn parse(pattern: &str) -> Option<Hir> {
    let rust = crate::model::go_regex::to_rust(pattern).ok()?;
    syntax::parse_with(&rust, &crate::model::go_regex::syntax_config()).ok()
}

/// The literals one of which every match of `pattern` contains (ASCII letters lowercased
/// with `fold`); `None` when none of at least [`MIN_LITERAL`] bytes is known (the rule is
/// always possible).
pub(crate) fn required(pattern: &str, fold: bool) -> Option<Set> {
    info(&parse(pattern)?, fold)
        .need
        .filter(|set| !set.is_empty() && set.iter().all(|l| l.len() >= MIN_LITERAL))
}

/// For patterns searched together in one scan, however many (the categorizer's rules):
/// whether the scan ignores ASCII case (some pattern does, and then every literal is
/// lowercased, as [`Literals`] does), and each pattern's required literals (`None`: the
/// pattern is always possible).
pub(crate) fn required_of_all(patterns: &[&str]) -> (bool, Vec<Option<Set>>) {
    let fold = patterns.iter().any(|p| parse(p).is_some_and(|h| ignores_case(&h)));
    (fold, patterns.iter().map(|p| required(p, fold)).collect())
}

/// Some small class of `hir` holds both cases of an ASCII letter (`(?i)x`, `[Xx]`): its
/// literals are worth searching for without regard to ASCII case.
fn ignores_case(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Class(c) => class(c, false).is_some_and(|set| {
            set.iter()
                .any(|l| l.len() == 1 && l[0].is_ascii_uppercase() && set.contains(&vec![l[0].to_ascii_lowercase()]))
        }),
        HirKind::Capture(c) => ignores_case(&c.sub),
        HirKind::Repetition(r) => ignores_case(&r.sub),
        HirKind::Concat(hs) | HirKind::Alternation(hs) => hs.iter().any(ignores_case),
        HirKind::Empty | HirKind::Literal(_) | HirKind::Look(_) => false,
    }
}

fn info(hir: &Hir, fold: bool) -> Info {
    match hir.kind() {
        // Zero-width: an anchor or a word boundary adds no byte to the text matched.
        HirKind::Empty | HirKind::Look(_) => Info::exact(vec![Vec::new()]),
        HirKind::Literal(l) if fold => Info::exact(vec![l.0.to_ascii_lowercase()]),
        HirKind::Literal(l) => Info::exact(vec![l.0.to_vec()]),
        HirKind::Class(c) => class(c, fold).map_or_else(Info::unknown, Info::exact),
        HirKind::Capture(c) => info(&c.sub, fold),
        HirKind::Repetition(r) => {
            if r.min == 0 {
                // May match nothing at all.
                return Info::unknown();
            }
            let sub = info(&r.sub, fold);
            // `x{3}`: exactly three copies; otherwise each match holds at least one.
            let exact = match &sub.exact {
                Some(e) if r.max == Some(r.min) && r.min <= 4 => {
                    (1..r.min).try_fold(e.clone(), |acc, _| product(&acc, e))
                }
                _ => None,
            };
            match exact {
                Some(e) => Info::exact(e),
                None => Info {
                    exact: None,
                    need: sub.need,
                },
            }
        }
        HirKind::Concat(parts) => {
            // Consecutive exact parts are matched by adjacent text: their cross product is a
            // literal set the match contains. Any part's own `need` is one too.
            let mut best = None;
            let mut run: Set = vec![Vec::new()];
            let mut whole = true;
            for part in parts {
                let part = info(part, fold);
                if let Some(need) = part.need {
                    consider(&mut best, need);
                }
                match part.exact {
                    Some(e) => match product(&run, &e) {
                        Some(p) => run = p,
                        None => {
                            consider(&mut best, std::mem::replace(&mut run, e));
                            whole = false;
                        }
                    },
                    None => {
                        consider(&mut best, std::mem::replace(&mut run, vec![Vec::new()]));
                        whole = false;
                    }
                }
            }
            if whole {
                return Info::exact(run);
            }
            consider(&mut best, run);
            Info {
                exact: None,
                need: best,
            }
        }
        HirKind::Alternation(branches) => {
            // A match is one branch's: the union of the branches' sets.
            let infos: Vec<Info> = branches.iter().map(|b| info(b, fold)).collect();
            let union = |sets: Vec<Option<Set>>| -> Option<Set> {
                let mut out: Set = Vec::new();
                for set in sets {
                    for l in set? {
                        if !out.contains(&l) {
                            out.push(l);
                        }
                    }
                }
                (out.len() <= MAX_SET).then_some(out)
            };
            let exact = union(infos.iter().map(|i| i.exact.clone()).collect());
            let need = union(infos.into_iter().map(|i| i.need).collect());
            match exact {
                Some(e) => Info::exact(e),
                None => Info { exact: None, need },
            }
        }
    }
}

/// The strings of a small class, one per member (UTF-8 encoded; ASCII letters lowercased
/// with `fold`).
fn class(c: &Class, fold: bool) -> Option<Set> {
    let mut out: Set = Vec::new();
    let mut add = |l: Vec<u8>| {
        let l = if fold { l.to_ascii_lowercase() } else { l };
        if !out.contains(&l) {
            out.push(l);
        }
    };
    match c {
        Class::Unicode(u) => {
            let size: u32 = u
                .ranges()
                .iter()
                .map(|r| u32::from(r.end()) - u32::from(r.start()) + 1)
                .sum();
            if size as usize > MAX_CLASS * 2 {
                return None;
            }
            for r in u.ranges() {
                for ch in r.start()..=r.end() {
                    add(ch.to_string().into_bytes());
                }
            }
        }
        Class::Bytes(b) => {
            let size: usize = b.ranges().iter().map(|r| usize::from(r.end() - r.start()) + 1).sum();
            if size > MAX_CLASS * 2 {
                return None;
            }
            for r in b.ranges() {
                for byte in r.start()..=r.end() {
                    add(vec![byte]);
                }
            }
        }
    }
    (out.len() <= MAX_CLASS).then_some(out)
}

/// Every `a` followed by every `b`; `None` past [`MAX_SET`] strings.
fn product(a: &Set, b: &Set) -> Option<Set> {
    if a.len() * b.len() > MAX_SET {
        return None;
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            let l = [x.as_slice(), y.as_slice()].concat();
            if !out.contains(&l) {
                out.push(l);
            }
        }
    }
    Some(out)
}

/// Keeps the better of `best` and `candidate`: the longer shortest literal (rarer in a
/// message, so fewer rules left possible), then fewer literals.
fn consider(best: &mut Option<Set>, candidate: Set) {
    let score = |s: &Set| (s.iter().map(Vec::len).min().unwrap_or(0), std::cmp::Reverse(s.len()));
    if candidate.is_empty() || score(&candidate).0 == 0 {
        return;
    }
    if best.as_ref().is_none_or(|b| score(&candidate) > score(b)) {
        *best = Some(candidate);
    }
}

/// One policy's required literals, searched for in one scan of a message: every rule one
/// of whose literals occurs is possible.
#[derive(Debug, Clone)]
pub(crate) struct Literals {
    scan: Scan,
    /// The rules with no usable literal: possible for every message.
    always: u64,
    /// Every rule of the prefilter: possible for a message too long to fold, or with more
    /// occurrences of the common part than are worth checking.
    all: u64,
    /// Literals are lowercased; the message is searched lowercased.
    fold: bool,
}

#[derive(Debug, Clone)]
enum Scan {
    /// Every literal contains `common` (a catalog's rules share a prefix such as
    /// `NVRM: Xid \d+, ..., policy 2 rule `): one `memmem` search finds its occurrences —
    /// none rejects every rule at once — and each literal is compared around each of them.
    Common {
        finder: Box<memchr::memmem::Finder<'static>>,
        len: usize,
        around: Box<[Around]>,
        /// Per [`pair_key`] of the two bytes after the common part, the literals (bits of
        /// `around`) whose `after` starts with a pair of that key: a catalog's literals
        /// differ right after their common part, so an occurrence is compared with one or
        /// two of them, not all.
        by_pair: Box<[u64; 256]>,
        /// The literals with fewer than two bytes after the common part: compared at every
        /// occurrence.
        short: u64,
    },
    /// A packed (SIMD) multi-literal search, leftmost-longest: at each start the longest
    /// literal found stands for the literals that are its prefixes (`rules` includes
    /// theirs); the scan resumes one byte after each start found, so every start of every
    /// literal is visited.
    Packed { searcher: Searcher, rules: Box<[u64]> },
}

/// A literal as the bytes before and after the common part in it, and the rules needing it.
#[derive(Debug, Clone)]
struct Around {
    before: Box<[u8]>,
    after: Box<[u8]>,
    rules: u64,
}

/// The shortest common part worth a `memmem` search.
const MIN_COMMON: usize = 4;

/// Occurrences of the common part checked per message; past them every rule is possible.
const MAX_OCCURRENCES: usize = 16;

impl Literals {
    /// `patterns[k]` is the pattern of rule `rule_ids[k]` (at most 64 rules in the policy).
    /// `None` when no pattern has a usable literal (the prefilter would say "possible" to
    /// everything) or no searcher can be built for them (too many, or no SIMD).
    pub(crate) fn new(patterns: &[&str], rule_ids: &[usize]) -> Option<Literals> {
        let fold = patterns.iter().any(|p| parse(p).is_some_and(|h| ignores_case(&h)));
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut needed_by: Vec<u64> = Vec::new();
        let (mut always, mut all) = (0, 0);
        for (p, &i) in patterns.iter().zip(rule_ids) {
            let bit = 1u64 << i;
            all |= bit;
            match required(p, fold) {
                Some(set) => {
                    for l in set {
                        match literals.iter().position(|x| *x == l) {
                            Some(k) => needed_by[k] |= bit,
                            None => {
                                literals.push(l);
                                needed_by.push(bit);
                            }
                        }
                    }
                }
                None => always |= bit,
            }
        }
        if literals.is_empty() {
            return None;
        }
        let common = common_part(&literals).filter(|_| literals.len() <= 64);
        let scan = match common {
            Some(common) => {
                let around: Box<[Around]> = literals
                    .iter()
                    .zip(&needed_by)
                    .map(|(l, &rules)| {
                        // Its first occurrence: an occurrence of the literal holds one there.
                        let at = memchr::memmem::find(l, &common).unwrap_or_default();
                        Around {
                            before: l[..at].into(),
                            after: l[at + common.len()..].into(),
                            rules,
                        }
                    })
                    .collect();
                let (mut by_pair, mut short) = (Box::new([0u64; 256]), 0);
                for (k, a) in around.iter().enumerate() {
                    match a.after.get(..2) {
                        Some(&[b0, b1]) => by_pair[pair_key(b0, b1)] |= 1 << k,
                        _ => short |= 1 << k,
                    }
                }
                Scan::Common {
                    around,
                    by_pair,
                    short,
                    len: common.len(),
                    finder: Box::new(memchr::memmem::Finder::new(&common).into_owned()),
                }
            }
            None => Scan::Packed {
                rules: literals
                    .iter()
                    .map(|l| {
                        literals
                            .iter()
                            .zip(&needed_by)
                            .filter(|(x, _)| l.starts_with(x))
                            .fold(0, |out, (_, &bits)| out | bits)
                    })
                    .collect(),
                searcher: packed::Config::new()
                    .match_kind(packed::MatchKind::LeftmostLongest)
                    .builder()
                    .extend(&literals)
                    .build()?,
            },
        };
        Some(Literals {
            scan,
            always,
            all,
            fold,
        })
    }

    /// The rules whose regex may match `message`: those with no usable literal, and those one
    /// of whose literals occurs in it.
    #[inline]
    pub(crate) fn possible(&self, message: &str) -> u64 {
        if !self.fold {
            return self.scan(message.as_bytes());
        }
        let mut folded = [0u8; FOLD_BUFFER];
        match folded.get_mut(..message.len()) {
            Some(folded) => {
                folded.copy_from_slice(message.as_bytes());
                folded.make_ascii_lowercase();
                self.scan(folded)
            }
            None => self.all,
        }
    }

    fn scan(&self, haystack: &[u8]) -> u64 {
        let mut out = self.always;
        match &self.scan {
            Scan::Common {
                finder,
                len,
                around,
                by_pair,
                short,
            } => {
                let mut at = 0;
                let mut seen = 0;
                while let Some(found) = haystack.get(at..).and_then(|h| finder.find(h)) {
                    let start = at + found;
                    seen += 1;
                    if seen > MAX_OCCURRENCES {
                        return self.all;
                    }
                    let end = start + len;
                    let mut candidates = *short
                        | match haystack.get(end..end + 2) {
                            Some(&[b0, b1]) => by_pair[pair_key(b0, b1)],
                            _ => 0,
                        };
                    while candidates != 0 {
                        let a = &around[candidates.trailing_zeros() as usize];
                        candidates &= candidates - 1;
                        if start >= a.before.len()
                            && equal(&haystack[start - a.before.len()..start], &a.before)
                            && haystack
                                .get(end..end + a.after.len())
                                .is_some_and(|h| equal(h, &a.after))
                        {
                            out |= a.rules;
                        }
                    }
                    at = start + 1;
                }
            }
            Scan::Packed { searcher, rules } => {
                let mut at = 0;
                while let Some(m) = searcher.find_in(haystack, Span::from(at..haystack.len())) {
                    out |= rules[m.pattern().as_usize()];
                    at = m.start() + 1;
                }
            }
        }
        out
    }
}

/// The row of `by_pair` for the two bytes after a common part: digits, letters and
/// punctuation pairs of one catalog land in different rows.
#[inline(always)]
fn pair_key(b0: u8, b1: u8) -> usize {
    (usize::from(b0) * 8 + usize::from(b1)) & 255
}

/// The longest string of at least [`MIN_COMMON`] bytes every literal contains, if any.
fn common_part(literals: &[Vec<u8>]) -> Option<Vec<u8>> {
    let shortest = literals.iter().min_by_key(|l| l.len())?;
    (MIN_COMMON..=shortest.len()).rev().find_map(|len| {
        shortest
            .windows(len)
            .find(|c| literals.iter().all(|l| memchr::memmem::find(l, c).is_some()))
            .map(<[u8]>::to_vec)
    })
}

/// `a == b` for the short strings compared per message (and the names compared per
/// decision, `run_facts::same`), without a `memcmp` call: up to 16 bytes as two overlapping
/// words.
#[inline(always)]
pub(super) fn equal(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w4 = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or_default());
    let w8 = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or_default());
    match n {
        0 => true,
        // Bytes 0, n/2 and n-1 cover every byte of 1–3.
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        8..=16 => w8(a, 0) == w8(b, 0) && w8(a, n - 8) == w8(b, n - 8),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(pattern: &str) -> Option<Vec<String>> {
        let fold = parse(pattern).is_some_and(|h| ignores_case(&h));
        let mut set: Vec<String> = required(pattern, fold)?
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect();
        set.sort();
        Some(set)
    }

    #[test]
    fn required_literals_of_real_patterns() {
        // The longest literal run of a concatenation, across anchors and small classes.
        assert_eq!(
            strings(r"^NVRM: Xid \d+, pid=\d+, policy 2 rule 19:"),
            Some(vec![", policy 2 rule 19:".into()])
        );
        // An alternation: one literal per branch.
        assert_eq!(
            strings(r"Xid \d+ in policy 0 rule 5|ECC error.*bank 5"),
            Some(vec![" in policy 0 rule 5".into(), "ECC error".into()])
        );
        // Case-insensitive: one lowercased literal (the scan ignores ASCII case); a
        // non-ASCII letter's case variants are literals of their own.
        assert_eq!(strings(r"(?i)out of memory\s+"), Some(vec!["out of memory".into()]));
        assert_eq!(strings(r"(?i)é\d+ fail"), Some(vec![" fail".into()]));
        assert_eq!(strings(r"(?i)échec"), Some(vec!["Échec".into(), "échec".into()]));
        // A small class expands; word boundaries and line anchors add nothing.
        assert_eq!(strings(r"\bXid[ :]7\b"), Some(vec!["Xid 7".into(), "Xid:7".into()]));
        assert_eq!(strings("(?m)^panic:\nline$"), Some(vec!["panic:\nline".into()]));
        assert_eq!(strings("(ab){2}cd"), Some(vec!["ababcd".into()]));
        // Nothing usable: rules always possible.
        assert_eq!(strings(r"\w+ \d+"), None);
        assert_eq!(strings("a*"), None);
        assert_eq!(strings("(OOM)?x"), None);
        assert_eq!(strings("ab|cdef"), None);
        assert_eq!(strings(r"[0-9]{2}\s+"), None);
    }

    #[test]
    fn a_scan_leaves_the_rules_whose_literal_occurs() {
        let patterns: Vec<String> = (0..20)
            .map(|r| format!(r"^NVRM: Xid \d+, pid=\d+, policy 2 rule {r}:"))
            .chain([r"\w+ \d+".to_string()])
            .collect();
        let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
        let ids: Vec<usize> = (0..refs.len()).collect();
        let literals = Literals::new(&refs, &ids).unwrap();
        assert!(!literals.fold);
        let always = 1 << 20;
        let xid = "NVRM: Xid 79, pid=1234, policy 2 rule 19: GPU has fallen off the bus";
        assert_eq!(literals.possible(xid), always | 1 << 19);
        assert_eq!(literals.possible(&xid.to_uppercase()), always);
        // Overlapping and nested literals: rule 1's literal is a prefix of none here, each
        // start is found.
        assert_eq!(
            literals.possible("x, policy 2 rule 1:, policy 2 rule 9:"),
            always | 1 << 1 | 1 << 9
        );
        assert_eq!(literals.possible("CUDA error"), always);

        // A literal that is a prefix of another (`abc`, `abcd`) and one inside another
        // (`bcd`): one start each, all three found; case ignored for all once one ignores it.
        let refs = ["abc.", "abcd", "(?i)bcd", "x+"];
        let literals = Literals::new(&refs, &[0, 1, 2, 3]).unwrap();
        assert!(literals.fold);
        assert_eq!(literals.possible("xxABCD"), 0b1111);
        assert_eq!(literals.possible("xbCd"), 0b1100);
        assert_eq!(literals.possible("abx"), 0b1000);
        assert_eq!(literals.possible(&"abcd".repeat(FOLD_BUFFER)), 0b1111);
    }
}
