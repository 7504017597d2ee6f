//! One search per message for the regex message rules of every effective policy at once
//! (SPEC §2.2–2.3), in place of one literal scan per policy and a regex search per rule left.
//!
//! Owns: [`SharedRegexes`], built once per effective policy list (the simulator keeps one per
//! resolved list): the patterns of the regex `onTerminationMessage` rules without
//! `containerName` of each policy of at most 64 rules, and one dense DFA over all of them
//! (`MatchKind::All`: an overlapping search reports every pattern that matches somewhere in a
//! message, each pattern's own `Regex::is_match`). [`SharedRegexes::search`] answers, for a
//! run, which patterns match which eligible message.
//!
//! Must not: guess. The answer is exact, or there is none (`None`: the DFA could not be built,
//! or it gave up on a message) and the policies answer by their own per-policy path, which
//! gives the same decisions. It must not allocate per search (SPEC §7: the DFA is built on the
//! first search, once per list, like a `Regex` filling its cache), nor decide which rule wins:
//! it only says which patterns match.

use std::sync::OnceLock;

use regex_automata::dfa::{dense, Automaton};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind};

use crate::model::history::Run;
use crate::model::validate::MAX_REGEX_SIZE;

use super::CompiledPolicy;

/// Policies a `SharedRegexes` covers, each with one word of rule bits in a search's answer:
/// the first [`SLOTS`] policies of a list that have regex message rules (a later one keeps its
/// own path).
pub(crate) const SLOTS: usize = 4;

/// Messages whose hits a search keeps (as `compiled::MessageHits` does per policy): past
/// these, a rule that matched finds its message with its own regex.
pub(crate) const KEPT_MESSAGES: usize = 4;

/// The DFA's size limit: a DFA larger than this is not built, and the policies keep their
/// own path. The size of a multi-pattern DFA grows with the patterns' mutual overlaps, not
/// only their number: the bench's 60-rule Xid catalog takes 141 KiB, its 60 unanchored
/// `…|ECC error.*bank N` rules would take ~920 KiB. The limit also bounds the time a build
/// that fails takes (it stops on reaching it): ~30 ms in a debug build at 192 KiB, ~65 ms at
/// 256 KiB, once per policy list.
const DFA_LIMIT: usize = 192 << 10;

/// The regex message rules of a policy list, searched together.
pub struct SharedRegexes {
    /// Each policy's address, in list order: a [`super::Policies`] pairs these regexes only
    /// with the very list they were built from.
    ids: Box<[usize]>,
    /// Per policy: its slot in a search's answer, [`NO_SLOT`] when it is not covered (it
    /// answers by its own path).
    slots: Box<[u8]>,
    /// Per pattern: its policy's slot and its rule's bit in that policy.
    targets: Box<[(u8, u64)]>,
    patterns: Box<[Box<str>]>,
    /// Some covered rule has `includeInitContainers`: init containers' messages are searched.
    with_init: bool,
    /// Built on the first search (`None`: too large, or not buildable).
    dfa: OnceLock<Option<dense::DFA<Vec<u32>>>>,
}

impl std::fmt::Debug for SharedRegexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegexes")
            .field("slots", &self.slots)
            .field("patterns", &self.patterns)
            .field(
                "dfa_bytes",
                &self.dfa.get().map(|d| d.as_ref().map(|d| d.memory_usage())),
            )
            .finish()
    }
}

impl Clone for SharedRegexes {
    /// A clone builds its own DFA (the clone of a list is searched as rarely as the list).
    fn clone(&self) -> SharedRegexes {
        SharedRegexes {
            ids: self.ids.clone(),
            slots: self.slots.clone(),
            targets: self.targets.clone(),
            patterns: self.patterns.clone(),
            with_init: self.with_init,
            dfa: OnceLock::new(),
        }
    }
}

/// What one search found, per policy slot (its rule bits): the rules whose regex matches a
/// non-init message (`plain`) or any searched message (`any`), and the first
/// [`KEPT_MESSAGES`] messages with a match, in container order: (container, init container,
/// rules matching it); `len` counts them all.
pub(crate) struct Hits {
    pub(crate) plain: [u64; SLOTS],
    pub(crate) any: [u64; SLOTS],
    pub(crate) len: usize,
    pub(crate) at: [(u32, bool, [u64; SLOTS]); KEPT_MESSAGES],
}

impl Hits {
    pub(crate) const NONE: Hits = Hits {
        plain: [0; SLOTS],
        any: [0; SLOTS],
        len: 0,
        at: [(0, false, [0; SLOTS]); KEPT_MESSAGES],
    };
}

/// The slot of a policy that is not covered.
const NO_SLOT: u8 = u8::MAX;

impl SharedRegexes {
    /// The regexes of `policies` (the effective list, in order). `None` when no policy has
    /// a regex message rule it can share.
    pub fn new(policies: &[&CompiledPolicy]) -> Option<SharedRegexes> {
        let mut slots = Vec::with_capacity(policies.len());
        let mut targets = Vec::new();
        let mut patterns: Vec<Box<str>> = Vec::new();
        let (mut with_init, mut used) = (false, 0u8);
        for cp in policies {
            let rules = cp.shared_regex_rules();
            let fits = !rules.is_empty() && usize::from(used) < SLOTS && rules.iter().all(|(_, _, p)| shareable(p));
            if !fits {
                slots.push(NO_SLOT);
                continue;
            }
            slots.push(used);
            for (i, init, p) in rules {
                targets.push((used, 1u64 << i));
                patterns.push(p.into());
                with_init |= init;
            }
            used += 1;
        }
        if patterns.is_empty() {
            return None;
        }
        Some(SharedRegexes {
            ids: policies.iter().map(|&p| p as *const CompiledPolicy as usize).collect(),
            slots: slots.into(),
            targets: targets.into(),
            patterns: patterns.into(),
            with_init,
            dfa: OnceLock::new(),
        })
    }

    /// These regexes were built from exactly `policies`.
    pub(crate) fn built_from(&self, policies: &[&CompiledPolicy]) -> bool {
        self.ids.len() == policies.len()
            && self
                .ids
                .iter()
                .zip(policies)
                .all(|(&id, &p)| id == p as *const CompiledPolicy as usize)
    }

    /// Policy `p`'s slot in a search's answer, if these regexes cover it.
    #[inline]
    pub(crate) fn slot(&self, p: usize) -> Option<usize> {
        self.slots.get(p).filter(|&&s| s != NO_SLOT).map(|&s| usize::from(s))
    }

    /// Which rules match which message a rule without `containerName` reads (§2.2–2.3), into
    /// `hits` (empty); `false` when the DFA is not there (too large) or gave up on a message
    /// (a Unicode word boundary next to a non-ASCII byte).
    pub(crate) fn search(&self, run: &Run, hits: &mut Hits) -> bool {
        let Some(dfa) = self.dfa.get_or_init(|| build(&self.patterns)).as_ref() else {
            return false;
        };
        for (i, c) in run.containers.iter().enumerate() {
            if c.init && !self.with_init {
                continue;
            }
            let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) else {
                continue;
            };
            let Some(found) = self.matching(dfa, m) else {
                return false;
            };
            if found == [0; SLOTS] {
                continue;
            }
            if hits.len < KEPT_MESSAGES {
                hits.at[hits.len] = (i as u32, c.init, found);
            }
            hits.len += 1;
            let into = if c.init { &mut hits.any } else { &mut hits.plain };
            for (a, f) in into.iter_mut().zip(found) {
                *a |= f;
            }
        }
        for (a, p) in hits.any.iter_mut().zip(hits.plain) {
            *a |= p;
        }
        true
    }

    /// The rules whose pattern matches `message` anywhere, per slot; `None` when the DFA quit.
    ///
    /// What `Automaton::try_which_overlapping_matches` answers (every pattern with a match
    /// ending anywhere, `MatchKind::All`), walked here in one loop: the library's overlapping
    /// search returns at each match and is re-entered, and fills a `PatternSet` (which
    /// allocates). A match state reports its patterns for the match ending one byte before
    /// (a DFA's matches are delayed by one byte), the end-of-input transition the matches at
    /// the end. A list of anchored patterns stops at the dead state; a state that loops on
    /// every byte but a few (accelerated) skips to the next of those with `memchr`.
    #[inline]
    fn matching(&self, dfa: &dense::DFA<Vec<u32>>, message: &str) -> Option<[u64; SLOTS]> {
        let bytes = message.as_bytes();
        let mut out = [0u64; SLOTS];
        let mut sid = dfa.start_state_forward(&Input::new(message)).ok()?;
        let mut at = 0;
        while at < bytes.len() {
            sid = dfa.next_state(sid, bytes[at]);
            if dfa.is_special_state(sid) {
                if dfa.is_match_state(sid) {
                    self.record(dfa, sid, &mut out);
                } else if dfa.is_dead_state(sid) {
                    return Some(out);
                } else if dfa.is_quit_state(sid) {
                    return None;
                } else if dfa.is_accel_state(sid) {
                    at = accelerate(dfa.accelerator(sid), bytes, at + 1);
                    continue;
                }
            }
            at += 1;
        }
        sid = dfa.next_eoi_state(sid);
        if dfa.is_match_state(sid) {
            self.record(dfa, sid, &mut out);
        }
        Some(out)
    }

    /// The rules of the patterns match state `sid` reports, into `out`.
    #[inline]
    fn record(&self, dfa: &dense::DFA<Vec<u32>>, sid: StateID, out: &mut [u64; SLOTS]) {
        for k in 0..dfa.match_len(sid) {
            let (slot, bit) = self.targets[dfa.match_pattern(sid, k).as_usize()];
            out[usize::from(slot)] |= bit;
        }
    }
}

/// From `at`, the next byte of `needles` (the bytes that leave an accelerated state; every
/// other byte loops on it), or the end.
#[inline]
fn accelerate(needles: &[u8], bytes: &[u8], at: usize) -> usize {
    let rest = bytes.get(at..).unwrap_or_default();
    let found = match *needles {
        [a] => memchr::memchr(a, rest),
        [a, b] => memchr::memchr2(a, b, rest),
        [a, b, c] => memchr::memchr3(a, b, c, rest),
        // An accelerator has one to three bytes; anything else walks byte by byte.
        _ => return at,
    };
    found.map_or(bytes.len(), |i| at + i)
}

/// A pattern the DFA answers for exactly as its own `Regex` (`compile_pattern`) does: one that
/// cannot match the empty string. The `Regex` skips empty matches that split a character (UTF-8
/// mode) and a DFA search does not; a match of at least one character is of whole characters
/// of a `str` in both.
fn shareable(pattern: &str) -> bool {
    regex_automata::util::syntax::parse_with(pattern, &syntax::Config::new().utf8(true))
        .is_ok_and(|hir| hir.properties().minimum_len().is_some_and(|n| n > 0))
}

/// The DFA over `patterns`, with the syntax of each pattern's own regex (`compile_pattern`:
/// regex's defaults, Unicode and UTF-8); `None` when it would be larger than [`DFA_LIMIT`].
fn build(patterns: &[Box<str>]) -> Option<dense::DFA<Vec<u32>>> {
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                // A Unicode `\b` makes every non-ASCII byte a quit byte (the search then
                // fails and the policies answer by their own path), not a failed build.
                .unicode_word_boundary(true)
                .dfa_size_limit(Some(DFA_LIMIT))
                .determinize_size_limit(Some(DFA_LIMIT * 4)),
        )
        .syntax(syntax::Config::new().utf8(true))
        .thompson(
            thompson::Config::new()
                .utf8(true)
                .which_captures(thompson::WhichCaptures::None)
                .nfa_size_limit(Some(MAX_REGEX_SIZE * 4)),
        )
        .build_many(patterns)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3 policies × 20 patterns, `f(policy, rule)`.
    fn patterns(f: impl Fn(usize, usize) -> String) -> Vec<Box<str>> {
        (0..3)
            .flat_map(|p| (0..20).map(move |r| (p, r)))
            .map(|(p, r)| f(p, r).into())
            .collect()
    }

    /// The evaluator bench's Xid catalog (60 anchored patterns, a Unicode `\d` each) gets its
    /// DFA (141 KiB); 60 unanchored alternations with a `.*` each (its `regex_rules_no_match`)
    /// would take ~920 KiB and are given up at the limit, their policies keeping their own
    /// path.
    #[test]
    fn the_catalog_fits_and_a_blow_up_does_not() {
        let catalog = build(&patterns(|p, r| {
            format!(r"^NVRM: Xid \d+, pid=\d+, policy {p} rule {r}:")
        }));
        assert!(catalog.is_some_and(|d| d.memory_usage() < DFA_LIMIT));
        let wide = build(&patterns(|p, r| {
            format!(r"Xid \d+ in policy {p} rule {r}|ECC error.*bank {r}")
        }));
        assert!(wide.is_none());
    }

    /// Patterns that can match the empty string stay with their own regex.
    #[test]
    fn empty_matches_are_not_shared() {
        for p in ["a*", "", "^", r"(?-u:\B)", "x|", r"\b"] {
            assert!(!shareable(p), "{p}");
        }
        for p in ["a+", r"^NVRM: Xid \d+", r"\bkilled\b", "(?i)oom"] {
            assert!(shareable(p), "{p}");
        }
    }
}
