//! One policy's own search over its regex message rules without `containerName` (docs/engines.md): the path a policy answers by when the list's shared DFA does not cover it
//! (`super::list_dfa`), or gave up on a run.
//!
//! Owns: [`MessageRegexes`]: for a policy of at most 64 rules, the literal prefilter
//! ([`Literals`]) and one multi-pattern search per message ([`RegexHits`], which also says
//! which message each rule matched first, [`MessageHits`]); for a larger one, a pattern set
//! that rejects every such rule when it matches no message, and sets over chunks of
//! [`REGEX_CHUNK`] rules; what a decision found ([`Searched`], [`ChunkHits`]); and where the
//! answer may come from instead ([`SharedAnswer`]: the list's shared search, or [`Alone`]).
//! Must not: reject a rule whose regex matches (each search answers as the rule's own
//! `Regex::is_match`), allocate per decision (the pattern set a search fills is one per
//! thread), or decide which rule wins: candidates are still tried in rule order.

use crate::model::policy::Rule;
use crate::model::validate::MAX_REGEX_SIZE;

use super::hits::{Hits, KEPT_MESSAGES};
use super::pattern::Pattern;
use super::regex_prefilter::Literals;
use super::rule::RuleMatcher;
use super::run_facts::RunFacts;

/// Where a policy's regex message rules get their answer in one decision: from the list's
/// shared search (`Covered`), or from nowhere ([`Alone`]: the policy's own literal scan and
/// search). A type rather than an `Option`, so that the path without shared regexes compiles to
/// what it was before they existed (as an `Option` it cost every decision 12-50 instructions).
pub(super) trait SharedAnswer {
    /// There may be an answer (`policy_hits` is not always `None`).
    fn present(&self) -> bool;
    /// The policy's rules whose regex matches a non-init message / any message, and the
    /// messages matched in `searched`; `None`: the policy answers by its own path.
    fn policy_hits(&mut self, facts: &RunFacts<'_>, searched: &mut Searched) -> Option<(u64, u64)>;
}

/// No shared answer: the policy searches on its own.
pub(super) struct Alone;

impl SharedAnswer for Alone {
    #[inline(always)]
    fn present(&self) -> bool {
        false
    }

    #[inline(always)]
    fn policy_hits(&mut self, _: &RunFacts<'_>, _: &mut Searched) -> Option<(u64, u64)> {
        None
    }
}

/// A policy's regex message rules without `containerName`, and the searches over them.
#[derive(Debug, Clone)]
pub(super) struct MessageRegexes {
    /// The rules (\[0\]: non-init containers, \[1\]: `includeInitContainers`), a bitset over rule
    /// indices.
    rules: [Box<[u64]>; 2],
    /// In a policy of more than 64 rules, one set of their patterns ([`pattern_set`]): when
    /// the set matches no eligible message — one search per message per policy — every one
    /// of them is rejected untried. When it matches, each candidate still runs its own regex.
    /// (At most 64 rules: `hits`.)
    set: Option<PatternSet>,
    /// When the set matches, the rules' regexes are tried one by one in rule order; these
    /// smaller sets, over [`REGEX_CHUNK`] consecutive patterns each (only with more than
    /// that many), reject a chunk's rules with one search when none of them matches (3 × 20
    /// rules whose last one matches: 21 regex searches a decision without them, ~5,000
    /// instructions).
    chunks: Box<[PatternSet]>,
    /// For a policy of at most 64 rules, in place of `set` and `chunks`: one search per
    /// eligible message says which of those rules' regexes match it, so the others are
    /// rejected by mask and the candidates left know their message without a search of
    /// their own (3 × 20 anchored regex rules, the last one matching: 7,500 instructions a
    /// decision with the chunked sets, 4,578 with this).
    hits: Option<RegexHits>,
    /// For a policy of at most 64 rules, the literals its regex message rules need: one scan
    /// per eligible message rejects the rules none of whose literals it contains, before
    /// (often instead of) any regex search. When one rule is left it runs its own regex;
    /// `hits` searches only for two or more.
    literals: Option<Literals>,
}

impl MessageRegexes {
    /// The regex message rules of `rules` (their compiled `matchers`, which learn here whether
    /// a policy-wide search may know their message, and their chunk), in `words` words.
    /// A set too large to build only loses its shortcut.
    pub(super) fn new(rules: &[Rule], matchers: &mut [RuleMatcher], words: usize) -> MessageRegexes {
        let mut masked = [vec![0u64; words], vec![0u64; words]];
        let mut patterns: Vec<&str> = Vec::new();
        let mut ids: Vec<usize> = Vec::new();
        for (i, (rule, matcher)) in rules.iter().zip(matchers.iter()).enumerate() {
            if let (None, Some(Pattern::Regex(_)), Some(p)) =
                (&rule.container_name, &matcher.pattern, &rule.on_termination_message)
            {
                masked[usize::from(rule.include_init_containers)][i / 64] |= 1u64 << (i % 64);
                patterns.push(p);
                ids.push(i);
            }
        }
        let one_word = words == 1 && !patterns.is_empty();
        let hits = if one_word {
            RegexHits::new(&patterns, &ids)
        } else {
            None
        };
        let literals = if one_word { Literals::new(&patterns, &ids) } else { None };
        if words == 1 {
            for &i in &ids {
                matchers[i].in_regex_hits = true;
            }
        }
        let set = (hits.is_none() && !patterns.is_empty())
            .then(|| pattern_set(&patterns))
            .flatten();
        // Chunks only under a set that was built, at most 64 (a per-decision bitmask of
        // searched chunks), and all or none (a chunk too large to build only loses them).
        let chunks: Box<[PatternSet]> =
            if set.is_some() && patterns.len() > REGEX_CHUNK && patterns.len() <= REGEX_CHUNK * 64 {
                patterns
                    .chunks(REGEX_CHUNK)
                    .map(pattern_set)
                    .collect::<Option<Box<[_]>>>()
                    .unwrap_or_default()
            } else {
                Box::new([])
            };
        if !chunks.is_empty() {
            for (k, &i) in ids.iter().enumerate() {
                matchers[i].regex_chunk = Some((k / REGEX_CHUNK) as u8);
            }
        }
        let [plain, init] = masked;
        MessageRegexes {
            rules: [plain.into(), init.into()],
            set,
            chunks,
            hits,
            literals,
        }
    }

    /// Word `w` of the rules: those reading non-init containers' messages, and those with
    /// `includeInitContainers`.
    #[inline(always)]
    pub(super) fn rules(&self, w: usize) -> [u64; 2] {
        [self.rules[0][w], self.rules[1][w]]
    }

    /// The candidates `bits` (word `w`) less the regex message rules that no eligible
    /// message's search leaves: the pattern set's (larger policies), or the list's shared
    /// search when it answers (`shared`), else the policy's own literal scan and search.
    #[inline(always)]
    pub(super) fn candidates(
        &self,
        w: usize,
        mut bits: u64,
        facts: &RunFacts<'_>,
        searched: &mut Searched,
        mut shared: impl SharedAnswer,
    ) -> u64 {
        if let Some(set) = &self.set {
            if bits & (self.rules[0][w] | self.rules[1][w]) != 0 {
                let (plain, init) = *searched.set.get_or_insert_with(|| set_hits(set, facts));
                bits &= !((if plain { 0 } else { self.rules[0][w] }) | (if init { 0 } else { self.rules[1][w] }));
            }
        } else if self.literals.is_some() || self.hits.is_some() || shared.present() {
            // Only with one word of rules (w = 0), so called once per policy and decision.
            let [plain_rules, init_rules] = [self.rules[0][w], self.rules[1][w]];
            if bits & (plain_rules | init_rules) != 0 {
                // The list's one search answers exactly for every policy it covers; without it
                // (not built, or it gave up on this run), the policy's own literals and search.
                match shared.policy_hits(facts, searched) {
                    Some((plain, init)) => bits &= !((plain_rules & !plain) | (init_rules & !init)),
                    None => bits = self.own_candidates(bits, facts, searched),
                }
            }
        }
        bits
    }

    /// `bits` less the regex message rules (one word of rules) that the policy's own literal
    /// scan and multi-pattern search reject.
    #[inline(always)]
    fn own_candidates(&self, mut bits: u64, facts: &RunFacts<'_>, searched: &mut Searched) -> u64 {
        let [plain_rules, init_rules] = [self.rules[0][0], self.rules[1][0]];
        if let Some(literals) = &self.literals {
            let (plain, init) = possible(literals, facts, init_rules != 0);
            bits &= !((plain_rules & !plain) | (init_rules & !init));
        }
        // One rule left runs its own regex (`RuleMatcher::matches`): one search of one
        // pattern, where the policy-wide search is an `is_match` and an overlapping scan.
        let left = bits & (plain_rules | init_rules);
        if let (Some(hits), true) = (&self.hits, left & left.wrapping_sub(1) != 0) {
            let (plain, init) = hits.search(facts, init_rules != 0, searched.messages.insert(MessageHits::default()));
            bits &= !((plain_rules & !plain) | (init_rules & !init));
        }
        bits
    }

    /// The chunk `c` of a candidate rule (reading init containers' messages too with
    /// `include_init`) matches an eligible message: searched once per decision, when its
    /// first candidate is reached.
    #[inline(always)]
    pub(super) fn chunk_matches(
        &self,
        c: u8,
        include_init: bool,
        chunks: &mut ChunkHits,
        facts: &RunFacts<'_>,
    ) -> bool {
        let bit = 1u64 << c;
        if chunks.searched & bit == 0 {
            let (plain, init) = set_hits(&self.chunks[c as usize], facts);
            chunks.searched |= bit;
            chunks.plain |= if plain { bit } else { 0 };
            chunks.init |= if init { bit } else { 0 };
        }
        (if include_init { chunks.init } else { chunks.plain }) & bit != 0
    }
}

/// Whether a set matches a message a rule without `containerName` reads: (one
/// of a non-init container, one of any container).
fn set_hits(set: &PatternSet, facts: &RunFacts<'_>) -> (bool, bool) {
    let hit = |init: bool| {
        facts
            .run
            .containers
            .iter()
            .any(|c| c.init == init && c.message.as_deref().is_some_and(|m| !m.is_empty() && set.is_match(m)))
    };
    let plain = hit(false);
    (plain, plain || (facts.has_init && hit(true)))
}

/// The rules of `literals` whose regex may match a message a rule without `containerName`
/// reads: (one of a non-init container, one of any container), as
/// [`RegexHits::search`] answers for the rules that do match.
#[inline(always)]
fn possible(literals: &Literals, facts: &RunFacts<'_>, with_init: bool) -> (u64, u64) {
    let (mut plain, mut init) = (0, 0);
    for c in facts.run.containers.iter() {
        if c.init && !with_init {
            continue;
        }
        if let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) {
            if c.init {
                init |= literals.possible(m);
            } else {
                plain |= literals.possible(m);
            }
        }
    }
    (plain, plain | init)
}

/// Several patterns as one regex, built as `regex::RegexSet` builds its own (`MatchKind::All`:
/// an overlapping search reports every pattern that matches anywhere in the haystack, and
/// `is_match` is whether one of them does), with the syntax of each pattern's own regex
/// (`compile_pattern`: Go's syntax written as the `regex` crate's, then regex's defaults,
/// Unicode, UTF-8) and its limits. `None` when too large.
///
/// Not `regex::RegexSet` itself: regex-automata 0.4.18's one-pass engine, which a set may use
/// for anchored patterns, panics (index out of bounds) on `^a*\b` against `é` when built
/// without capture slots, as a set is. The lazy DFA and the PikeVM answer every search it
/// would (test `pattern_sets_answer_a_word_boundary_after_an_optional_anchored_prefix`).
pub(super) fn pattern_set(patterns: &[&str]) -> Option<PatternSet> {
    use regex_automata::{meta, nfa::thompson::WhichCaptures, MatchKind};
    // Go's syntax written as the `regex` crate's, as `compile_pattern` does.
    let patterns = patterns
        .iter()
        .map(|p| crate::model::go_regex::to_rust(p).ok())
        .collect::<Option<Vec<_>>>()?;
    let patterns: Vec<&str> = patterns.iter().map(|p| p.as_ref()).collect();
    let patterns = patterns.as_slice();
    let regex = meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(MatchKind::All)
                .utf8_empty(true)
                .which_captures(WhichCaptures::None)
                .onepass(false)
                .nfa_size_limit(Some(MAX_REGEX_SIZE * 4))
                .hybrid_cache_capacity(MAX_REGEX_SIZE * 16),
        )
        .syntax(crate::model::go_regex::syntax_config())
        .build_many(patterns)
        .ok()?;
    let may_match_empty = patterns.iter().any(|p| {
        regex_syntax::ParserBuilder::new()
            .nest_limit(crate::model::go_regex::NEST_LIMIT)
            .build()
            .parse(p)
            .map_or(true, |hir| hir.properties().minimum_len() == Some(0))
    });
    Some(PatternSet { regex, may_match_empty })
}

/// A [`pattern_set`]: its `is_match` is whether some pattern's own regex matches.
#[derive(Debug, Clone)]
pub(super) struct PatternSet {
    regex: regex_automata::meta::Regex,
    /// Some pattern can match the empty string. Then `is_match` is the overlapping search's
    /// answer, not the meta regex's `is_match`: with `utf8_empty`, regex-automata 0.4's
    /// `is_match` loses a match when another pattern's empty match splits a character before
    /// it ends (`\w+\w+` and `(?-u:\B)` on `_é0`: the empty match inside `é` is skipped and
    /// the search resumes past it, after `\w+\w+` began). Without empty matches every match
    /// ends on a character boundary and `is_match` is exact (test
    /// `a_set_finds_a_match_begun_before_an_empty_match_that_splits_a_character`).
    may_match_empty: bool,
}

impl PatternSet {
    /// Whether one of the patterns matches `message`.
    #[inline]
    pub(super) fn is_match(&self, message: &str) -> bool {
        if !self.may_match_empty {
            return self.regex.is_match(message);
        }
        self.with_matches(message, |set| !set.is_empty())
    }

    /// `answer` of the patterns that match `message` anywhere (an overlapping search into the
    /// thread's reused scratch set: no allocation once it is as large as the largest set).
    #[inline]
    fn with_matches<T>(&self, message: &str, answer: impl FnOnce(&regex_automata::PatternSet) -> T) -> T {
        HIT_SCRATCH.with(|scratch| {
            let mut set = scratch.borrow_mut();
            if set.capacity() < self.regex.pattern_len() {
                *set = regex_automata::PatternSet::new(self.regex.pattern_len());
            }
            set.clear();
            self.regex
                .which_overlapping_matches(&regex_automata::Input::new(message), &mut set);
            answer(&set)
        })
    }
}

/// A policy's regex message rules without `containerName` (at most 64 rules in the policy) as
/// one multi-pattern regex, built as `regex::RegexSet` builds its own (`MatchKind::All`: an
/// overlapping search reports every pattern that matches anywhere in the haystack, the
/// `is_match` of each pattern's own `Regex`).
#[derive(Debug, Clone)]
pub(super) struct RegexHits {
    set: PatternSet,
    /// Per pattern, its rule's bit.
    rules: Box<[u64]>,
}

impl RegexHits {
    /// `None` when the patterns are too many for one word or too large to build together
    /// (the policy then keeps the pattern-set shortcut or tries each rule's regex).
    pub(super) fn new(patterns: &[&str], rule_ids: &[usize]) -> Option<RegexHits> {
        if patterns.len() > HIT_PATTERNS {
            return None;
        }
        let set = pattern_set(patterns)?;
        Some(RegexHits {
            set,
            rules: rule_ids.iter().map(|&i| 1u64 << i).collect(),
        })
    }

    /// The rules whose regex matches `message`.
    #[inline]
    pub(super) fn matching(&self, message: &str) -> u64 {
        // `is_match` first: it stops at the first match or dead state and can use a literal
        // prefilter; the overlapping search scans to the end of the message byte by byte
        // (~1,000 instructions on a 70-byte message), needed only when something matches.
        if !self.set.may_match_empty && !self.set.regex.is_match(message) {
            return 0;
        }
        self.set.with_matches(message, |set| {
            let mut out = 0;
            for (k, &rule) in self.rules.iter().enumerate() {
                if set.contains(regex_automata::PatternID::new_unchecked(k)) {
                    out |= rule;
                }
            }
            out
        })
    }

    /// The rules whose regex matches a message a rule without `containerName` reads
    /// (one of a non-init container, one of any container). Init containers'
    /// messages are searched only for `with_init` (some rule has `includeInitContainers`).
    /// Each message with a match is recorded in `messages`, in container order.
    #[inline(always)]
    fn search(&self, facts: &RunFacts<'_>, with_init: bool, messages: &mut MessageHits) -> (u64, u64) {
        let (mut plain, mut init) = (0, 0);
        for (i, c) in facts.run.containers.iter().enumerate() {
            if c.init && !with_init {
                continue;
            }
            if let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) {
                let hits = self.matching(m);
                if hits != 0 {
                    messages.push(i as u32, c.init, hits);
                }
                if c.init {
                    init |= hits;
                } else {
                    plain |= hits;
                }
            }
        }
        (plain, plain | init)
    }
}

/// Per decision and policy, what the search over its regex message rules found: with a
/// pattern set, whether it matches a non-init message / any message (searched at most once,
/// and only if a regex rule is still a candidate); with `RegexHits`, the messages matched.
#[derive(Default)]
pub(super) struct Searched {
    set: Option<(bool, bool)>,
    /// `None` until searched: a `MessageHits` made per policy and decision, searched or not,
    /// cost every decision 30-70 instructions.
    messages: Option<MessageHits>,
}

impl Searched {
    /// The messages the policy-wide search matched, in container order, once searched.
    #[inline(always)]
    pub(super) fn messages(&self) -> Option<&MessageHits> {
        self.messages.as_ref()
    }

    /// For a policy the list's shared search covers (`slot`), the messages that search matched
    /// for its rules, as [`RegexHits::search`] records its own.
    #[inline(always)]
    pub(super) fn take_shared(&mut self, hits: &Hits, slot: usize) {
        let messages = self.messages.insert(MessageHits::default());
        if hits.len > KEPT_MESSAGES {
            // Not all kept: each rule finds its message with its own regex.
            messages.len = HIT_MESSAGES + 1;
        } else {
            for &(c, init, bits) in &hits.at[..hits.len] {
                let rules = bits[slot];
                if rules != 0 {
                    messages.push(c, init, rules);
                }
            }
        }
    }
}

/// Per decision, the messages a policy's `RegexHits` matched, in container order: (the
/// container, whether it is an init container, the rules whose regex matches its message).
/// Kept for the first [`HIT_MESSAGES`]; past those a rule's message is found by its own regex.
#[derive(Default)]
pub(super) struct MessageHits {
    len: usize,
    at: [(u32, bool, u64); HIT_MESSAGES],
}

impl MessageHits {
    fn push(&mut self, container: u32, init: bool, hits: u64) {
        if self.len < HIT_MESSAGES {
            self.at[self.len] = (container, init, hits);
        }
        self.len += 1;
    }

    /// The first container whose message the rule of bit `rule` reads and matches; `None`
    /// when not known (more messages matched than were kept).
    #[inline]
    pub(super) fn first(&self, rule: u64, include_init: bool) -> Option<u32> {
        if self.len > HIT_MESSAGES {
            return None;
        }
        self.at[..self.len]
            .iter()
            .find(|&&(_, init, hits)| (!init || include_init) && hits & rule != 0)
            .map(|&(i, _, _)| i)
    }
}

/// Messages kept per decision in [`MessageHits`].
const HIT_MESSAGES: usize = 4;

/// Patterns per `RegexHits` (the rules of one bitset word, and `HIT_SCRATCH`'s capacity).
pub(super) const HIT_PATTERNS: usize = 64;

thread_local! {
    /// The pattern set a `PatternSet` search fills, one per thread and reused: made on a
    /// thread's first search (and grown for a set of more than 64 patterns), not per decision.
    static HIT_SCRATCH: std::cell::RefCell<regex_automata::PatternSet> =
        std::cell::RefCell::new(regex_automata::PatternSet::new(HIT_PATTERNS));
}

/// Per decision, which of a policy's `MessageRegexes::chunks` were searched, and which matched a
/// non-init message / any message (bit `c` for chunk `c`).
#[derive(Default)]
pub(super) struct ChunkHits {
    searched: u64,
    plain: u64,
    init: u64,
}

/// Consecutive regex patterns per chunk set (see `MessageRegexes::chunks`).
const REGEX_CHUNK: usize = 8;
