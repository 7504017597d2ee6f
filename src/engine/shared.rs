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

use super::literals::equal;
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
    dfa: OnceLock<Option<Walker>>,
}

/// The DFA and what its walk over a message skips: the literal runs, byte strings the DFA can
/// only go through one way. From a state whose every byte but one leads to the dead state,
/// and so on for the next states, a message either has those bytes next — and the walk would
/// end in the run's last state, through no match, dead, quit or accelerated state — or
/// soon goes dead. One comparison of the bytes replaces a walk of one dependent table load per
/// byte: the Xid catalog's `NVRM: Xid `, `, pid=`, ` policy `, ` rule ` are 29 of the 43
/// bytes up to the match.
struct Walker {
    dfa: dense::DFA<Vec<u32>>,
    /// The start state of a search from a message's first byte (no look-behind).
    start: StateID,
    /// Per state (its ID shifted right by the DFA's `stride2`): its literal run, as an index
    /// + 1 in `runs`, 0 for none (and for every special state).
    run_of: Box<[u32]>,
    /// (first byte in `run_bytes`, length, the state after the run).
    runs: Box<[(u32, u32, StateID)]>,
    run_bytes: Box<[u8]>,
}

/// The shortest literal run worth a comparison instead of a walk, and the longest one.
const MIN_RUN: usize = 3;
const MAX_RUN: usize = 16;

impl Walker {
    fn new(dfa: dense::DFA<Vec<u32>>) -> Option<Walker> {
        let start = dfa.start_state_forward(&Input::new("")).ok()?;
        let stride2 = dfa.stride2();
        let index = |sid: StateID| sid.as_usize() >> stride2;
        // Every state a search from `start` can reach, and each one's only way out (a byte and
        // a non-special state), when it has exactly one byte that does not lead to the dead state.
        let mut seen = std::collections::HashSet::new();
        let mut queue = vec![start];
        let mut only: std::collections::HashMap<StateID, (u8, StateID)> = std::collections::HashMap::new();
        seen.insert(start);
        while let Some(sid) = queue.pop() {
            let (mut live, mut way) = (0, None);
            for b in 0..=255u8 {
                let next = dfa.next_state(sid, b);
                if !dfa.is_dead_state(next) {
                    live += 1;
                    way = Some((b, next));
                }
                if seen.insert(next) {
                    queue.push(next);
                }
            }
            if let (1, Some((b, next))) = (live, way) {
                if !dfa.is_special_state(sid) && !dfa.is_special_state(next) {
                    only.insert(sid, (b, next));
                }
            }
        }
        let mut run_of = vec![0u32; seen.iter().map(|&s| index(s) + 1).max().unwrap_or(0)];
        let (mut runs, mut run_bytes) = (Vec::new(), Vec::new());
        for &sid in &seen {
            let (mut bytes, mut at) = (Vec::new(), sid);
            while let Some(&(b, next)) = only.get(&at) {
                bytes.push(b);
                at = next;
                // A longer run is this one and the next state's own: a comparison of at most
                // 16 bytes is two words (`literals::equal`), no `memcmp` call.
                if bytes.len() >= MAX_RUN {
                    break;
                }
            }
            if bytes.len() >= MIN_RUN {
                runs.push((run_bytes.len() as u32, bytes.len() as u32, at));
                run_bytes.extend_from_slice(&bytes);
                run_of[index(sid)] = runs.len() as u32;
            }
        }
        Some(Walker {
            dfa,
            start,
            run_of: run_of.into(),
            runs: runs.into(),
            run_bytes: run_bytes.into(),
        })
    }
}

impl std::fmt::Debug for SharedRegexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegexes")
            .field("slots", &self.slots)
            .field("patterns", &self.patterns)
            .field(
                "dfa_bytes",
                &self.dfa.get().map(|w| w.as_ref().map(|w| w.dfa.memory_usage())),
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

    /// The DFA was built, or may still be (it is built on the first search).
    #[inline]
    pub(crate) fn usable(&self) -> bool {
        !self.dfa.get().is_some_and(Option::is_none)
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
        let Some(walker) = self
            .dfa
            .get_or_init(|| build(&self.patterns).and_then(Walker::new))
            .as_ref()
        else {
            return false;
        };
        for (i, c) in run.containers.iter().enumerate() {
            if c.init && !self.with_init {
                continue;
            }
            let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) else {
                continue;
            };
            let found = if walker.runs.is_empty() {
                self.matching::<false>(walker, m)
            } else {
                self.matching::<true>(walker, m)
            };
            let Some(found) = found else {
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
    /// With `RUNS`, the walk skips the literal runs ([`Walker`]).
    #[inline]
    fn matching<const RUNS: bool>(&self, walker: &Walker, message: &str) -> Option<[u64; SLOTS]> {
        let dfa = &walker.dfa;
        let bytes = message.as_bytes();
        let mut out = [0u64; SLOTS];
        // From the first byte there is no look-behind: always the same start state.
        let mut sid = walker.start;
        let mut at = 0;
        while at < bytes.len() {
            if RUNS {
                let run = walker.run_of.get(sid.as_usize() >> dfa.stride2()).copied().unwrap_or(0);
                if let Some(&(from, len, to)) = walker.runs.get((run as usize).wrapping_sub(1)) {
                    let (from, len) = (from as usize, len as usize);
                    let run = walker.run_bytes.get(from..from + len).unwrap_or_default();
                    if bytes.get(at..at + len).is_some_and(|next| equal(next, run)) {
                        at += len;
                        sid = to;
                        continue;
                    }
                }
            }
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

/// A pattern the DFA answers for exactly as its own `Regex` (`compile_pattern`) does, and
/// quickly:
/// - one that cannot match the empty string. The `Regex` skips empty matches that split a
///   character (UTF-8 mode) and a DFA search does not; a match of at least one character is of
///   whole characters of a `str` in both.
/// - one anchored at the start of the message (`^`, `\A`, not `(?m)^`). A DFA over anchored
///   patterns only walks the bytes that some pattern can still match from the first one, and
///   stops at the dead state (the Xid catalog: 43 bytes, 29 of them literal runs). An
///   unanchored pattern makes it walk every message to its end, ~12 instructions per byte,
///   where the policy's own literal scan rejects most messages at `memchr` speed: with two
///   policies of unanchored regex rules (`Xid (79|48)\b`, `illegal\s+memory\s+acc[a-z]ss`,
///   `encountered$`…) shared, `simulate` of 1M runs took ~14% longer on one core.
pub(crate) fn shareable(pattern: &str) -> bool {
    regex_automata::util::syntax::parse_with(pattern, &syntax::Config::new().utf8(true)).is_ok_and(|hir| {
        let props = hir.properties();
        props.minimum_len().is_some_and(|n| n > 0) && props.look_set_prefix().contains(regex_syntax::hir::Look::Start)
    })
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
    use proptest::prelude::*;

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
        let catalog = catalog
            .filter(|d| d.memory_usage() < DFA_LIMIT)
            .and_then(Walker::new)
            .unwrap();
        // Its literal runs, from the start and from the states before `, pid=`,
        // ` policy `, ` rule ` (the `,` is a way out of the `\d+` loop, not a run's first byte).
        let runs: Vec<&[u8]> = catalog
            .runs
            .iter()
            .map(|&(from, len, _)| &catalog.run_bytes[from as usize..][..len as usize])
            .collect();
        for run in [&b"NVRM: Xid "[..], b" pid=", b" policy ", b" rule "] {
            assert!(runs.contains(&run), "{:?} in {:?}", String::from_utf8_lossy(run), runs);
        }
        let wide = build(&patterns(|p, r| {
            format!(r"Xid \d+ in policy {p} rule {r}|ECC error.*bank {r}")
        }));
        assert!(wide.is_none());
    }

    fn arb_anchored() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec!["NVRM: Xid ", "NVRM: ", "Xid ", "(?i)xid "]);
        let atom = prop::sample::select(vec![r"\d+", "[0-9]+", "79", r"\w+", ".*", "", "é?"]);
        let suffix = prop::sample::select(vec![
            "",
            ", pid=",
            ", pid=\\d+, policy 2 rule 1",
            " rule 1:",
            r"\b",
            "$",
        ]);
        (prefix, atom, suffix).prop_map(|(p, a, s)| format!("^{p}{a}{s}"))
    }

    fn arb_catalog_message() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "NVRM: ",
            "Xid ",
            "xID ",
            "79",
            "7",
            ", pid=",
            "1234",
            ", policy 2",
            " rule 1",
            ":",
            "é",
            " ",
            "NVR",
        ]);
        prop::collection::vec(piece, 1..8).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Anchored patterns sharing literal prefixes, which give the DFA literal runs: the
        /// walk that skips them answers, per pattern, what the pattern's own regex answers.
        #[test]
        fn literal_runs_skip_only_what_a_walk_would_go_through(
            patterns in prop::collection::vec(arb_anchored(), 1..6),
            messages in prop::collection::vec(arb_catalog_message(), 1..6),
        ) {
            let patterns: Vec<Box<str>> = patterns.into_iter().filter(|p| shareable(p)).map(Into::into).collect();
            prop_assume!(!patterns.is_empty());
            let shared = SharedRegexes {
                ids: Box::new([]),
                slots: Box::new([0]),
                targets: (0..patterns.len()).map(|k| (0, 1u64 << k)).collect(),
                patterns: patterns.clone().into(),
                with_init: false,
                dfa: OnceLock::new(),
            };
            for m in &messages {
                let run = Run {
                    containers: vec![crate::model::history::Container { message: Some(m.clone()), ..Default::default() }],
                    ..Run::default()
                };
                let mut hits = Hits::NONE;
                if !shared.search(&run, &mut hits) {
                    // Only a DFA too large (Unicode `\w+`) or a quit byte (a Unicode `\b`
                    // next to a non-ASCII one) has no answer.
                    prop_assert!(shared.dfa.get().is_some_and(Option::is_none) || !m.is_ascii());
                    continue;
                }
                let own = patterns
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| crate::model::validate::compile_pattern(p).unwrap().is_match(m))
                    .fold(0u64, |out, (k, _)| out | 1 << k);
                prop_assert_eq!(hits.plain[0], own, "message {:?}, patterns {:?}", m, patterns);
            }
        }
    }

    /// Which patterns the DFA takes: anchored ones that cannot match the empty string.
    #[test]
    fn what_is_shared() {
        // Empty matches, and unanchored patterns (the DFA would walk whole messages).
        for p in [
            "^a*",
            "",
            "^",
            r"^(?-u:\B)",
            "^x|",
            r"\b",
            "a+",
            r"\bkilled\b",
            "(?i)oom",
            "(?m)^OOM",
            "^a|b",
        ] {
            assert!(!shareable(p), "{p}");
        }
        for p in [r"^NVRM: Xid \d+", r"\Akilled\b", "(?i)^oom", "^a|^b", "^(?m)^OOM"] {
            assert!(shareable(p), "{p}");
        }
    }
}
