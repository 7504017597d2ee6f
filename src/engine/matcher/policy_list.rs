//! The effective policy list (docs/engines.md) as the design engine matches it: the first matching
//! rule across the concatenated rules of its policies, each policy's regex message rules
//! answered by the list's one shared search where it covers them.
//!
//! Owns: [`Policies`] (the list and its [`SharedRegexes`]), the list's first match, and the
//! per-decision link between a policy and the shared search: [`Covered`], the
//! `SharedAnswer` of a policy the search covers, and [`SharedSearch`], which searches a
//! run's messages once, when the first policy needs the answer, and hands each covered
//! policy its part. Must not: allocate, or change which rule wins: a policy asks the shared
//! search only for what its own path would have found.

use super::compiled_policy::CompiledPolicy;
use super::hits::Hits;
use super::list_dfa::SharedRegexes;
use super::message_regexes::{Alone, Searched, SharedAnswer};
use super::run_facts::RunFacts;
use super::signal::Signal;

/// The effective policies of a job (docs/engines.md, in order; empty = legacy) as `evaluate` takes
/// them: the list, and the [`SharedRegexes`] built from that same list when the caller keeps
/// one (the simulator does, per resolved list), which search a message once for the regex
/// message rules of every policy. Without them each policy searches on its own, with the same
/// answers. Reads as the list (`Deref`).
#[derive(Debug, Clone, Copy)]
pub struct Policies<'a> {
    list: &'a [&'a CompiledPolicy],
    shared: Option<&'a SharedRegexes>,
}

impl<'a> Policies<'a> {
    /// `list` with `shared`, which is used only if it was built from this very list
    /// ([`SharedRegexes::new`] of the same policies, in the same order).
    pub fn new(list: &'a [&'a CompiledPolicy], shared: Option<&'a SharedRegexes>) -> Policies<'a> {
        Policies {
            list,
            shared: shared.filter(|s| s.built_from(list)),
        }
    }

    /// `list` alone: each policy searches its messages on its own.
    pub fn alone(list: &'a [&'a CompiledPolicy]) -> Policies<'a> {
        Policies { list, shared: None }
    }
}

impl<'a> std::ops::Deref for Policies<'a> {
    type Target = [&'a CompiledPolicy];

    fn deref(&self) -> &Self::Target {
        self.list
    }
}

impl Policies<'_> {
    /// docs/engines.md: the first matching rule across the concatenated rules of the effective
    /// policies, as (policy index, rule index, signal). The list's shared regexes search the
    /// run's messages once, when the first policy they cover needs their answer.
    // `inline`: the design engine's one call per decision, inlined there as it was when this
    // was a function of the engine's own module.
    #[inline]
    pub(crate) fn first_match(&self, facts: &RunFacts<'_>) -> Option<(usize, usize, Signal)> {
        // Without the shared DFA (too large to build), each policy on its own, as without them.
        let Some(regexes) = self.shared.filter(|s| s.usable()) else {
            return self
                .iter()
                .enumerate()
                .find_map(|(p, cp)| cp.first_match(facts, Alone).map(|(r, signal)| (p, r, signal)));
        };
        let mut search = SharedSearch::new(regexes);
        self.iter().enumerate().find_map(|(p, cp)| {
            match regexes.slot(p) {
                Some(slot) if cp.shared_rejects_all(&mut search, slot, facts) => None,
                Some(slot) => cp.first_match(
                    facts,
                    Covered {
                        search: &mut search,
                        slot,
                    },
                ),
                None => cp.first_match(facts, Alone),
            }
            .map(|(r, signal)| (p, r, signal))
        })
    }
}

/// The list's shared search, for the policy of `slot` (one it covers).
pub(super) struct Covered<'a, 's> {
    pub(super) search: &'a mut SharedSearch<'s>,
    pub(super) slot: usize,
}

impl SharedAnswer for Covered<'_, '_> {
    #[inline(always)]
    fn present(&self) -> bool {
        true
    }

    #[inline(always)]
    fn policy_hits(&mut self, facts: &RunFacts<'_>, searched: &mut Searched) -> Option<(u64, u64)> {
        self.search.policy_hits(self.slot, facts, searched)
    }
}

/// Per decision: the list's [`SharedRegexes`] and what their one search found (made when the
/// first policy needs it, then read by every policy it covers).
pub(super) struct SharedSearch<'s> {
    regexes: &'s SharedRegexes,
    found: Found,
    /// Filled in place by the search (`Option::insert`): returned by value and moved into an
    /// enum, it was a `memcpy` call per decision.
    hits: Option<Hits>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    Unsearched,
    Hits,
    /// The search gave up on this run (or the DFA is not there): each policy answers alone.
    Unavailable,
}

impl<'s> SharedSearch<'s> {
    pub(super) fn new(regexes: &'s SharedRegexes) -> SharedSearch<'s> {
        SharedSearch {
            regexes,
            found: Found::Unsearched,
            hits: None,
        }
    }

    /// What the one search found, searching on the first call; `None` when it has no answer
    /// for this run.
    #[inline(always)]
    pub(super) fn hits(&mut self, facts: &RunFacts<'_>) -> Option<&Hits> {
        if self.found == Found::Unsearched {
            let hits = self.hits.insert(Hits::NONE);
            self.found = if self.regexes.search(facts.run, hits) {
                Found::Hits
            } else {
                Found::Unavailable
            };
        }
        self.hits.as_ref().filter(|_| self.found == Found::Hits)
    }

    /// For policy `p` (covered): its regex message rules that match a non-init message / any
    /// message, as a policy's own `RegexHits::search` answers, and the messages matched in `searched`.
    /// `None` when the shared search has no answer for this run.
    #[inline]
    fn policy_hits(&mut self, slot: usize, facts: &RunFacts<'_>, searched: &mut Searched) -> Option<(u64, u64)> {
        let hits = self.hits(facts)?;
        let (plain, any) = (hits.plain[slot], hits.any[slot]);
        if any != 0 {
            searched.take_shared(hits, slot);
        }
        Some((plain, any))
    }
}
