//! One search per message for the regex message rules of every effective policy at once
//! (docs/engines.md), in place of one literal scan per policy and a regex search per rule left.
//!
//! Owns: [`SharedRegexes`], built once per effective policy list (the simulator keeps one per
//! resolved list): the patterns of the regex `onTerminationMessage` rules without
//! `containerName` of each policy of at most 64 rules, and one DFA over all of them
//! (`MatchKind::All`: an overlapping search reports every pattern that matches somewhere in a
//! message, each pattern's own `Regex::is_match`), built by regex-automata and then copied
//! into the tables of its walk ([`Walker`]: the states renumbered so that the few a walk must
//! look at are told by one comparison, literal runs compared as words, the walk ended as soon
//! as no later byte can change the answer). [`SharedRegexes::search`] answers, for a run,
//! which patterns match which eligible message.
//!
//! Why a walk of our own: a walk is a chain of dependent loads, one per byte, and the
//! worst-case decision of BENCHMARKS.md (60 anchored Xid rules, the last one matching) spends
//! about half its time in it. The library's search loop re-enters per match and checks each
//! state's kind separately; this one waits on one load per byte and on two per literal run.
//!
//! Must not: guess. The answer is exact, or there is none (`None`: the DFA could not be built,
//! or it gave up on a message) and the policies answer by their own per-policy path, which
//! gives the same decisions. It must not allocate per search (BENCHMARKS.md: the DFA is built on the
//! first search, once per list, like a `Regex` filling its cache), nor decide which rule wins:
//! it only says which patterns match.

use std::sync::OnceLock;

use regex_automata::dfa::{dense, Automaton};
use regex_automata::nfa::thompson;
use regex_automata::util::primitives::StateID;
use regex_automata::{Input, MatchKind};

use crate::model::failure_history::Run;
use crate::model::validate::MAX_REGEX_SIZE;

use super::compiled_policy::CompiledPolicy;
use super::hits::{Hits, KEPT_MESSAGES, SLOTS};

/// The DFA's size limit: a DFA larger than this is not built, and the policies keep their
/// own path. The size of a multi-pattern DFA grows with the patterns' mutual overlaps, not
/// only their number: the bench's 60-rule Xid catalog takes 141 KiB (its walk's tables
/// 155 KiB: 128 columns of 4 bytes per state), its 60 unanchored
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

/// The DFA as its walk reads it: the states a search from a message's first byte can reach,
/// renumbered so that one comparison tells the walk whether a state needs a look, and the
/// literal runs the walk skips.
///
/// - **Rows.** A state is a row of `trans`, one entry per byte class, holding the next
///   state's entry: its row (its index shifted left by `stride2`), and for the states the walk
///   must stop at ([`Stop`]: dead, quit, a match, an accelerated state, the first state of a
///   literal run) [`STOP`] and the length of its literal run. One comparison tells a stop;
///   every other state is walked through with one table load per byte. The run's length in
///   the entry lets the walk read the byte after the run while the stop is still loading.
///   Row 0 is the dead state, row 1 the quit state.
/// - **Literal runs** are byte strings the DFA can only go through one way. From a state whose
///   every byte but one leads to the dead state, and so on for the next states, a message
///   either has those bytes next (and the walk would end in the run's last state, through no
///   match, dead, quit or accelerated state) or soon goes dead. One comparison of the bytes
///   replaces a dependent table load per byte: the Xid catalog's `NVRM: Xid `, ` pid=`,
///   ` policy `, ` rule ` are 29 of the 43 bytes up to the match.
///
/// The library's own DFA is dropped once this is built: a walk needs only these tables.
struct Walker {
    /// Byte → its class in the DFA.
    classes: [u8; 256],
    /// Per row and class, the next state's entry.
    trans: Box<[u32]>,
    stride2: u32,
    /// The entry of a search from a message's first byte (no look-behind).
    start: u32,
    /// Per stop (its row shifted right by `stride2`; the stops come first): what to do there.
    stops: Box<[Stop]>,
    /// Per state: the rules matched by the end of a message in it, an index + 1 in `masks`
    /// (0 for none).
    eoi: Box<[u32]>,
    /// Per slot, the rule bits of a match state's patterns.
    masks: Box<[[u64; SLOTS]]>,
}

/// What the walk does in a stop, in this order: record a match (`matched`), end the walk
/// (`end`), compare a literal run (`run`) and jump over it when the message has it, and skip
/// with `memchr` to the next of an accelerated state's bytes out (every other byte loops on
/// it). Rows 0 and 1, the dead and the quit state, are stops that only end the walk.
#[derive(Debug, Clone, Copy, Default)]
struct Stop {
    /// The literal run from here (`len` 0: none), in the stop itself: the walk's next step
    /// waits on one load, not two.
    run: Lit,
    /// The patterns matched on entering it: an index + 1 in [`Walker::masks`], 0 for none.
    matched: u32,
    /// [`DEAD`], [`QUIT`] or [`FINAL`]: the walk ends here.
    end: u8,
    accel_len: u8,
    accel: [u8; 3],
}

/// How a walk ends in a [`Stop`]: the dead state (the answer is what was found so far), the
/// quit state (no answer).
const DEAD: u8 = 1;
const QUIT: u8 = 2;
/// A match state whose every byte leads to the dead state (the last pattern that could
/// still match has matched): the walk ends after recording it, a step before the dead state.
const FINAL: u8 = 3;

/// A literal run: its bytes as two little-endian words (zero past its length), the mask of
/// its bytes in them, its length, and the row after it. Compared with two masked words where
/// 16 bytes of the message are left, byte by byte nearer its end.
#[derive(Debug, Clone, Copy, Default)]
struct Lit {
    words: [u64; 2],
    masks: [u64; 2],
    len: u32,
    to: u32,
}

impl Lit {
    fn new(bytes: &[u8], to: u32) -> Lit {
        let (mut words, mut masks) = ([0u64; 2], [0u64; 2]);
        for (i, &b) in bytes.iter().take(MAX_RUN).enumerate() {
            words[i / 8] |= u64::from(b) << (8 * (i % 8));
            masks[i / 8] |= 0xff << (8 * (i % 8));
        }
        Lit {
            words,
            masks,
            len: bytes.len().min(MAX_RUN) as u32,
            to,
        }
    }

    /// Byte `i` of the run.
    fn byte(&self, i: usize) -> u8 {
        (self.words[i / 8] >> (8 * (i % 8))) as u8
    }

    /// The run's bytes, for tests.
    #[cfg(test)]
    fn bytes(&self) -> Vec<u8> {
        (0..self.len as usize).map(|i| self.byte(i)).collect()
    }

    /// `message` has the run's bytes from `at`.
    #[inline(always)]
    fn is_at(&self, message: &[u8], at: usize) -> bool {
        match message.get(at..at + 16) {
            Some(next) => {
                let word = |i: usize| u64::from_le_bytes(next[i..i + 8].try_into().unwrap_or_default());
                (word(0) ^ self.words[0]) & self.masks[0] == 0 && (word(8) ^ self.words[1]) & self.masks[1] == 0
            }
            None => message
                .get(at..at + self.len as usize)
                .is_some_and(|next| next.iter().enumerate().all(|(i, &b)| b == self.byte(i))),
        }
    }
}

/// The shortest literal run worth a comparison instead of a walk, and the longest one.
const MIN_RUN: usize = 3;
const MAX_RUN: usize = 16;

/// The dead state's entry; the quit state's index is 1.
const DEAD_ENTRY: u32 = STOP;
const QUIT_INDEX: usize = 1;

/// An entry of [`Walker::trans`]: the row in its low 24 bits; a stop has bit 31 set and the
/// length of its literal run (0 for none) in bits 24–30.
const STOP: u32 = 1 << 31;
const ROW_MASK: u32 = (1 << LEN_SHIFT) - 1;
const LEN_SHIFT: u32 = 24;

impl Walker {
    /// The walk of `dfa` (anchored start), whose pattern `k` is rule bit `targets[k].1` of
    /// slot `targets[k].0`. `None` when the DFA has no anchored start state or its states do
    /// not fit 32-bit rows.
    fn new(dfa: &dense::DFA<Vec<u32>>, targets: &[(u8, u64)]) -> Option<Walker> {
        use std::collections::HashMap;
        let start = dfa
            .start_state_forward(&Input::new("").anchored(regex_automata::Anchored::Yes))
            .ok()?;
        let mut classes = [0u8; 256];
        for (b, class) in classes.iter_mut().enumerate() {
            *class = dfa.byte_classes().get(b as u8);
        }
        let class_count = usize::from(*classes.iter().max().unwrap_or(&0)) + 1;
        // One byte of each class, and how many bytes it has.
        let mut first_byte = vec![None; class_count];
        let mut class_size = vec![0usize; class_count];
        for (b, &c) in classes.iter().enumerate() {
            first_byte[usize::from(c)].get_or_insert(b as u8);
            class_size[usize::from(c)] += 1;
        }
        let first_byte: Vec<u8> = first_byte.into_iter().map(Option::unwrap_or_default).collect();
        let special = |sid: StateID| dfa.is_special_state(sid) && !dfa.is_start_state(sid);
        // Every state a search from `start` can reach (but dead and quit), its transitions per
        // class, and its only way out (a byte and a non-special state) when exactly one byte
        // does not lead to the dead state.
        let mut order = vec![start];
        let mut seen: HashMap<StateID, usize> = HashMap::from([(start, 0)]);
        let mut next_of: Vec<Vec<StateID>> = Vec::new();
        let mut only: HashMap<StateID, (u8, StateID)> = HashMap::new();
        let mut at = 0;
        while let Some(&sid) = order.get(at) {
            at += 1;
            let row: Vec<StateID> = first_byte.iter().map(|&b| dfa.next_state(sid, b)).collect();
            let mut live = (0..class_count).filter(|&c| !dfa.is_dead_state(row[c]));
            if let (Some(c), None) = (live.next(), live.next()) {
                if class_size[c] == 1 && !special(sid) && !special(row[c]) {
                    only.insert(sid, (first_byte[c], row[c]));
                }
            }
            for &next in &row {
                if !dfa.is_dead_state(next) && !dfa.is_quit_state(next) && !seen.contains_key(&next) {
                    seen.insert(next, order.len());
                    order.push(next);
                }
            }
            next_of.push(row);
        }
        // The literal runs, from every state that has one.
        let (mut runs, mut run_of) = (Vec::new(), HashMap::new());
        for &sid in &order {
            let (mut bytes, mut to) = (Vec::new(), sid);
            while let Some(&(b, next)) = only.get(&to) {
                bytes.push(b);
                to = next;
                // A longer run is this one and the next state's own: a comparison of at most
                // 16 bytes is two masked words ([`Lit`]), no `memcmp` call.
                if bytes.len() >= MAX_RUN {
                    break;
                }
            }
            if bytes.len() >= MIN_RUN {
                run_of.insert(sid, runs.len());
                runs.push((bytes, to));
            }
        }
        // The patterns a match state reports.
        let patterns_of = |sid: StateID| -> Vec<usize> {
            if !dfa.is_match_state(sid) {
                return Vec::new();
            }
            let mut ps: Vec<usize> = (0..dfa.match_len(sid))
                .map(|k| dfa.match_pattern(sid, k).as_usize())
                .collect();
            ps.sort_unstable();
            ps
        };
        // A match state whose every byte leads to the dead state: nothing more can match.
        let is_final = |sid: StateID| {
            dfa.is_match_state(sid)
                && seen
                    .get(&sid)
                    .is_some_and(|&i| next_of[i].iter().all(|&next| dfa.is_dead_state(next)))
        };
        // A state whose answer no later byte changes: every byte leads to the same final match
        // state, and the end of the message there reports the same patterns (the state right
        // after a pattern's last byte, its match delayed by one byte). Its walk ends there with
        // that state's patterns, and its own if it is a match state too.
        let settled = |sid: StateID| -> Option<Vec<usize>> {
            let row = &next_of[*seen.get(&sid)?];
            let next = *row.first()?;
            if next == sid || !row.iter().all(|&n| n == next) || !is_final(next) {
                return None;
            }
            let then = patterns_of(next);
            // A guard more than a case: a match that holds whatever byte comes next holds at
            // the end too with regex's look-arounds, and a walk that ends in a settled state
            // at the message's end adds that state's own end-of-message patterns anyway.
            (patterns_of(dfa.next_eoi_state(sid)) == then).then(|| {
                let mut all = patterns_of(sid);
                all.extend(then);
                all.sort_unstable();
                all.dedup();
                all
            })
        };
        // Per state (in `order`): what it settles to, and whether the walk goes through it
        // without a look.
        let settles: Vec<Option<Vec<usize>>> = order.iter().map(|&sid| settled(sid)).collect();
        let plain: Vec<bool> = order
            .iter()
            .zip(&settles)
            .map(|(&sid, settles)| {
                !(dfa.is_match_state(sid) || dfa.is_accel_state(sid) || run_of.contains_key(&sid) || settles.is_some())
            })
            .collect();
        // Rows: dead, quit, the stops, then the plain states.
        let mut ranked: Vec<usize> = (0..order.len()).collect();
        ranked.sort_by_key(|&i| plain[i]);
        let stride2 = class_count.next_power_of_two().trailing_zeros();
        let rows = ranked.len().checked_add(2)?;
        if (rows << stride2) > ROW_MASK as usize {
            return None;
        }
        let mut index_of = vec![0usize; order.len()];
        for (k, &i) in ranked.iter().enumerate() {
            index_of[i] = k + 2;
        }
        let entry_of = |sid: StateID| -> u32 {
            if dfa.is_dead_state(sid) {
                DEAD_ENTRY
            } else if dfa.is_quit_state(sid) {
                STOP | (QUIT_INDEX << stride2) as u32
            } else {
                // Every state reached was numbered above.
                seen.get(&sid).map_or(DEAD_ENTRY, |&i| {
                    let row = (index_of[i] << stride2) as u32;
                    if plain[i] {
                        row
                    } else {
                        let run = run_of
                            .get(&sid)
                            .and_then(|&k| runs.get(k))
                            .map_or(0, |(bytes, _)| bytes.len());
                        STOP | (run as u32) << LEN_SHIFT | row
                    }
                })
            }
        };
        let mut masks: Vec<[u64; SLOTS]> = Vec::new();
        let mut mask_of = |patterns: &[usize]| -> u32 {
            if patterns.is_empty() {
                return 0;
            }
            let mut mask = [0u64; SLOTS];
            for &(slot, bit) in patterns.iter().filter_map(|&p| targets.get(p)) {
                mask[usize::from(slot)] |= bit;
            }
            masks.push(mask);
            masks.len() as u32
        };
        let mut trans = vec![DEAD_ENTRY; rows << stride2];
        let mut eoi = vec![0u32; rows];
        let mut stops = vec![Stop::default(); rows];
        stops[0].end = DEAD;
        stops[QUIT_INDEX].end = QUIT;
        for (i, &sid) in order.iter().enumerate() {
            let index = index_of[i];
            for (c, &next) in next_of[i].iter().enumerate() {
                trans[(index << stride2) + c] = entry_of(next);
            }
            eoi[index] = mask_of(&patterns_of(dfa.next_eoi_state(sid)));
            if !plain[i] {
                let (end, matched) = match &settles[i] {
                    Some(all) => (FINAL, mask_of(all)),
                    None => (if is_final(sid) { FINAL } else { 0 }, mask_of(&patterns_of(sid))),
                };
                let mut stop = Stop {
                    end,
                    matched,
                    run: run_of
                        .get(&sid)
                        .and_then(|&k| runs.get(k))
                        .map_or_else(Lit::default, |(bytes, to)| Lit::new(bytes, entry_of(*to))),
                    ..Stop::default()
                };
                if dfa.is_accel_state(sid) {
                    let needles = dfa.accelerator(sid);
                    if needles.len() <= 3 {
                        stop.accel_len = needles.len() as u8;
                        stop.accel[..needles.len()].copy_from_slice(needles);
                    }
                }
                stops[index] = stop;
            }
        }
        stops.truncate(2 + plain.iter().filter(|&&p| !p).count());
        Some(Walker {
            classes,
            trans: trans.into(),
            stride2,
            start: entry_of(start),
            stops: stops.into(),
            eoi: eoi.into(),
            masks: masks.into(),
        })
    }

    /// The rules whose pattern matches `message` anywhere, per slot; `None` when the DFA quit.
    ///
    /// What `Automaton::try_which_overlapping_matches` answers (every pattern with a match
    /// ending anywhere, `MatchKind::All`), walked here in one loop: the library's overlapping
    /// search returns at each match and is re-entered, and fills a `PatternSet` (which
    /// allocates). A match state reports its patterns for the match ending one byte before
    /// (a DFA's matches are delayed by one byte), the end-of-input transition the matches at
    /// the end. The walk stops at the dead state: every pattern is anchored at the start.
    #[inline]
    fn matching(&self, message: &str) -> Option<[u64; SLOTS]> {
        let bytes = message.as_bytes();
        let mut out = [0u64; SLOTS];
        let (mut entry, mut at) = (self.start, 0);
        loop {
            let mut row = entry;
            if entry >= STOP {
                row = entry & ROW_MASK;
                let stop = self.stops.get((row >> self.stride2) as usize)?;
                if let Some(mask) = self.masks.get((stop.matched as usize).wrapping_sub(1)) {
                    for (o, m) in out.iter_mut().zip(mask) {
                        *o |= m;
                    }
                }
                match stop.end {
                    0 => {}
                    DEAD => return Some(out),
                    QUIT => return None,
                    // FINAL: every byte leads to the dead state; only the end of the message
                    // may still add a match.
                    _ if at < bytes.len() => return Some(out),
                    _ => break,
                }
                let run = ((entry & !STOP) >> LEN_SHIFT) as usize;
                if run > 0 && stop.run.is_at(bytes, at) {
                    at += run;
                    entry = stop.run.to;
                    continue;
                }
                if stop.accel_len > 0 {
                    at = accelerate(&stop.accel[..usize::from(stop.accel_len)], bytes, at);
                }
            }
            let Some(&b) = bytes.get(at) else { break };
            entry = self.trans[row as usize + usize::from(self.classes[usize::from(b)])];
            at += 1;
        }
        if let Some(mask) = self
            .eoi
            .get(((entry & ROW_MASK) >> self.stride2) as usize)
            .and_then(|&m| self.masks.get((m as usize).wrapping_sub(1)))
        {
            for (o, m) in out.iter_mut().zip(mask) {
                *o |= m;
            }
        }
        Some(out)
    }

    /// Bytes held by the tables.
    fn memory_usage(&self) -> usize {
        std::mem::size_of::<Walker>()
            + self.trans.len() * 4
            + self.stops.len() * std::mem::size_of::<Stop>()
            + self.eoi.len() * 4
            + self.masks.len() * std::mem::size_of::<[u64; SLOTS]>()
    }
}

impl std::fmt::Debug for SharedRegexes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRegexes")
            .field("slots", &self.slots)
            .field("patterns", &self.patterns)
            .field(
                "dfa_bytes",
                &self.dfa.get().map(|w| w.as_ref().map(Walker::memory_usage)),
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

    /// Which rules match which message a rule without `containerName` reads, into
    /// `hits` (empty); `false` when the DFA is not there (too large) or gave up on a message
    /// (a Unicode word boundary next to a non-ASCII byte).
    pub(crate) fn search(&self, run: &Run, hits: &mut Hits) -> bool {
        let Some(walker) = self
            .dfa
            .get_or_init(|| build(&self.patterns).and_then(|dfa| Walker::new(&dfa, &self.targets)))
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
            let found = walker.matching(m);
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
    let Ok(rust) = crate::model::go_regex::to_rust(pattern) else {
        return false;
    };
    regex_automata::util::syntax::parse_with(&rust, &crate::model::go_regex::syntax_config()).is_ok_and(|hir| {
        let props = hir.properties();
        props.minimum_len().is_some_and(|n| n > 0) && props.look_set_prefix().contains(regex_syntax::hir::Look::Start)
    })
}

/// The DFA over `patterns`, with the syntax of each pattern's own regex (`compile_pattern`:
/// Go's syntax written as the `regex` crate's, then regex's defaults, Unicode and UTF-8);
/// `None` when it would be larger than [`DFA_LIMIT`].
pub(super) fn build(patterns: &[Box<str>]) -> Option<dense::DFA<Vec<u32>>> {
    let patterns = patterns
        .iter()
        .map(|p| crate::model::go_regex::to_rust(p).ok())
        .collect::<Option<Vec<_>>>()?;
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                // Every pattern is anchored at the start: no unanchored start state (half
                // the states, for a search that never uses them).
                .start_kind(regex_automata::dfa::StartKind::Anchored)
                // A Unicode `\b` makes every non-ASCII byte a quit byte (the search then
                // fails and the policies answer by their own path), not a failed build.
                .unicode_word_boundary(true)
                .dfa_size_limit(Some(DFA_LIMIT))
                .determinize_size_limit(Some(DFA_LIMIT * 4)),
        )
        .syntax(crate::model::go_regex::syntax_config())
        .thompson(
            thompson::Config::new()
                .utf8(true)
                .which_captures(thompson::WhichCaptures::None)
                .nfa_size_limit(Some(MAX_REGEX_SIZE * 4)),
        )
        .build_many(&patterns)
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

    /// The evaluator bench's Xid catalog (60 anchored patterns, a `\d` each, ASCII as Go reads
    /// it) gets its DFA; 60 unanchored alternations with a `.*` and a Unicode class (`\pN`)
    /// each would take more than the limit and are given up at it, their policies keeping
    /// their own path.
    #[test]
    fn the_catalog_fits_and_a_blow_up_does_not() {
        let catalog = build(&patterns(|p, r| {
            format!(r"^NVRM: Xid \d+, pid=\d+, policy {p} rule {r}:")
        }));
        let targets: Vec<(u8, u64)> = (0..60).map(|k| ((k / 20) as u8, 1u64 << (k % 20))).collect();
        let catalog = catalog
            .filter(|d| d.memory_usage() < DFA_LIMIT)
            .and_then(|d| Walker::new(&d, &targets))
            .unwrap();
        // Its literal runs, from the start and from the states before `, pid=`,
        // ` policy `, ` rule ` (the `,` is a way out of the `\d+` loop, not a run's first byte).
        let runs: Vec<Vec<u8>> = catalog
            .stops
            .iter()
            .filter(|s| s.run.len > 0)
            .map(|s| s.run.bytes())
            .collect();
        for run in [
            b"NVRM: Xid ".to_vec(),
            b" pid=".to_vec(),
            b" policy ".to_vec(),
            b" rule ".to_vec(),
        ] {
            assert!(runs.contains(&run), "{:?} in {:?}", String::from_utf8_lossy(&run), runs);
        }
        let wide = build(&patterns(|p, r| {
            format!(r"Xid \pN+ in policy {p} rule {r}|ECC error.*bank {r}")
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

    /// Messages built as [`arb_anchored`] builds its patterns (a prefix, an atom, a suffix),
    /// then a tail, some cut short: most of them match some pattern, or fail late in a run,
    /// so that the walk goes through literal runs, the states after them and the end of the
    /// message (random pieces, as [`arb_catalog_message`] makes, rarely match at all).
    fn arb_near_message() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec!["NVRM: Xid ", "NVRM: ", "Xid ", "xid ", "XID ", "NVRM: Xi"]);
        let atom = prop::sample::select(vec!["79", "1234", "٣", "abc", "", "é", "7"]);
        let suffix = prop::sample::select(vec![
            "",
            ", pid=",
            ", pid=1234, policy 2 rule 1",
            ", pid=12, policy 2 rule 1:",
            ", pid=12, policy 2 rule 2:",
            " rule 1:",
            " rule 1",
            ":",
            "\n",
        ]);
        let tail = prop::sample::select(vec!["", " GPU has fallen off the bus", "x", ":", "é", " ", "\nmore"]);
        (prefix, atom, suffix, tail, 0..4usize).prop_map(|(p, a, s, t, cut)| {
            let mut m = format!("{p}{a}{s}{t}");
            for _ in 0..cut {
                m.pop();
            }
            m
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Anchored patterns sharing literal prefixes, which give the DFA literal runs: the
        /// walk that skips them answers, per pattern, what the pattern's own regex answers.
        #[test]
        fn literal_runs_skip_only_what_a_walk_would_go_through(
            patterns in prop::collection::vec(arb_anchored(), 1..6),
            messages in prop::collection::vec(prop_oneof![arb_catalog_message(), arb_near_message()], 1..8),
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
            // Each pattern's own regex, compiled once for the case's messages.
            let regexes: Vec<_> =
                patterns.iter().map(|p| crate::model::validate::compile_pattern(p).unwrap()).collect();
            for m in &messages {
                let run = Run {
                    containers: vec![crate::model::failure_history::Container { message: Some(m.clone()), ..Default::default() }],
                    ..Run::default()
                };
                let mut hits = Hits::NONE;
                if !shared.search(&run, &mut hits) {
                    // Only a DFA too large or a quit byte (a Unicode word boundary next to a
                    // non-ASCII byte, which Go's syntax cannot write) has no answer.
                    prop_assert!(shared.dfa.get().is_some_and(Option::is_none) || !m.is_ascii());
                    continue;
                }
                let own = regexes
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.is_match(m))
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
