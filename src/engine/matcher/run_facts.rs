//! What the matchers read from a run (docs/engines.md), computed once per decision rather than once
//! per rule: the pod-level conditions as a mask, the category and its hash, the containers a
//! rule without `containerName` selects and their exit codes; and the per-decision lookup of
//! a named container.
//!
//! Owns: [`RunFacts`], the category hash (`word_hash`) and the container-name cache
//! (`resolve`). Must not: allocate, or decide anything: these are facts every policy reads.

use crate::model::failure_history::Run;
use crate::model::policy::Condition;

use super::regex_prefilter;

/// The bit of a condition in a mask (`Condition` has five variants).
#[inline]
pub(super) fn bit(c: Condition) -> u8 {
    1 << (c as u8)
}

/// The category index is keyed by a hash computed once per run and shared by every policy.
/// Eight bytes at a time (a byte-at-a-time FNV was a visible share of a decision; std's
/// SipHash costs more than the comparisons it would save). Any value works: it only picks
/// which names to compare.
pub(super) fn word_hash(s: &str) -> u64 {
    let bytes = s.as_bytes();
    let n = bytes.len();
    let mix = |h: u64, word: u64| (h ^ word).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(29);
    let w4 = |i: usize| u64::from(u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default()));
    let w8 = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
    let mut h = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // Whole words, then the tail as the last 8 (or 4 + 4) bytes, overlapping what came
    // before: no loop over tail bytes and no copy into a zeroed word (a `memcpy` call).
    match n {
        0 => {}
        1..=3 => {
            h = mix(
                h,
                u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16,
            )
        }
        4..=7 => h = mix(h, w4(0) | w4(n - 4) << 32),
        _ => {
            let mut chunks = bytes.chunks_exact(8);
            for chunk in &mut chunks {
                h = mix(h, u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
            }
            if !chunks.remainder().is_empty() {
                h = mix(h, w8(n - 8));
            }
        }
    }
    h ^ (h >> 31)
}

/// What the matchers read from a run, computed once per decision rather than once per rule.
pub(crate) struct RunFacts<'r> {
    pub(super) run: &'r Run,
    /// The run's pod-level conditions as a mask.
    pub(super) conditions: u8,
    /// The run's category and its hash.
    pub(super) category: Option<(&'r str, u64)>,
    /// The first failed non-init container.
    pub(super) first_failed: Option<u32>,
    /// The first failed container, init containers first.
    pub(super) first_failed_with_init: Option<u32>,
    /// The exit codes of those two containers, 0 for none (no failed container).
    pub(super) exit_codes: [i64; 2],
    /// The run has an init container.
    pub(super) has_init: bool,
}

impl<'r> RunFacts<'r> {
    pub(crate) fn new(run: &'r Run) -> RunFacts<'r> {
        // One pass over the containers: the first failed non-init container, the
        // first failed init container, and whether there is an init container at all.
        let (mut first_failed, mut first_failed_init, mut has_init) = (None, None, false);
        for (i, c) in run.containers.iter().enumerate() {
            has_init |= c.init;
            let slot = if c.init {
                &mut first_failed_init
            } else {
                &mut first_failed
            };
            if slot.is_none() && c.failed() {
                *slot = Some(i as u32);
            }
        }
        let first_failed_with_init = first_failed_init.or(first_failed);
        let code = |i: Option<u32>| i.map_or(0, |i| run.containers[i as usize].exit_code);
        RunFacts {
            run,
            conditions: run.conditions.iter().fold(0, |m, &c| m | bit(c)),
            category: run.category.as_deref().map(|c| (c, word_hash(c))),
            first_failed,
            first_failed_with_init,
            exit_codes: [code(first_failed), code(first_failed_with_init)],
            has_init,
        }
    }
}

/// Distinct `containerName`s per policy whose lookup in a run is cached for one decision.
pub(super) const NAME_CACHE: usize = 8;
/// A cache slot not looked up yet; `ABSENT`: the run has no such container.
pub(super) const UNRESOLVED: u32 = u32::MAX;
const ABSENT: u32 = u32::MAX - 1;

/// `a == b` for the short names compared per decision (containers, categories), without a
/// `memcmp` call (whose call and set-up cost more than comparing `main` with `main`, once
/// per policy per decision): the prefilter's word-wise comparison.
#[inline(always)]
pub(super) fn same(a: &str, b: &str) -> bool {
    regex_prefilter::equal(a.as_bytes(), b.as_bytes())
}

/// The index of the container named `name` in the run.
#[inline(always)]
pub(super) fn find_container(facts: &RunFacts<'_>, name: &str) -> Option<u32> {
    facts
        .run
        .containers
        .iter()
        .position(|c| same(&c.name, name))
        .map(|i| i as u32)
}

/// [`find_container`] through the per-decision cache slot of a policy's container name.
#[inline(always)]
pub(super) fn resolve(names: &mut [u32; NAME_CACHE], slot: usize, name: &str, facts: &RunFacts<'_>) -> Option<u32> {
    if names[slot] == UNRESOLVED {
        names[slot] = find_container(facts, name).unwrap_or(ABSENT);
    }
    Some(names[slot]).filter(|&i| i != ABSENT)
}
