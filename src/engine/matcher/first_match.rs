//! docs/engines.md over one compiled policy, per decision: the candidates the masks leave, tried in
//! rule order; the first that matches wins.
//!
//! Owns: [`CompiledPolicy::first_match`] and its steps: the candidate bitset of a word of
//! rules (category row, less what the run's conditions, exit codes, named containers and
//! messages reject), the trial of the candidates, and the shortcut of a policy of regex
//! message rules only, whose candidates are the shared search's answer. Must not: allocate,
//! or try a rule out of order.

use super::compiled_policy::CompiledPolicy;
use super::masks::SelectedCode;
use super::message_regexes::{Alone, ChunkHits, MessageHits, Searched, SharedAnswer};
use super::policy_list::SharedSearch;
use super::run_facts::{RunFacts, NAME_CACHE, UNRESOLVED};
use super::signal::Signal;

impl CompiledPolicy {
    /// docs/engines.md over this policy's rules: the first rule that matches, with its signal.
    /// Only candidates are tried — rules without a category and those listing the run's,
    /// less those the run's conditions or exit codes reject by mask — in rule order.
    /// `shared`: where the answer for its regex message rules may come from (the list's shared
    /// search, with what it found so far in this decision), or [`Alone`].
    pub(super) fn first_match(&self, facts: &RunFacts<'_>, shared: impl SharedAnswer) -> Option<(usize, Signal)> {
        let words = self.words();
        if !self.use_masks {
            let row = self.categories.row(facts);
            let mut names = [UNRESOLVED; NAME_CACHE];
            for (w, &free) in self.categories.uncategorized.iter().enumerate() {
                let mut bits = free | row.map_or(0, |r| r[w]);
                while bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if let Some(signal) = self.rules[i].matches(facts, &mut names, None) {
                        return Some((i, signal));
                    }
                }
            }
            return None;
        }
        let mut shared = shared;
        if self.pure_regex {
            // Every rule that can match reads messages only: the shared search's answer is
            // the candidates (rules without a matcher are never candidates).
            let mut searched = Searched::default();
            if let Some((plain, any)) = shared.policy_hits(facts, &mut searched) {
                let bits = self.pure_candidates(plain, any);
                let mut names = [UNRESOLVED; NAME_CACHE];
                let mut chunks = ChunkHits::default();
                return self.try_candidates(0, bits, facts, &mut names, &mut chunks, searched.messages());
            }
        }
        let row = self.categories.row(facts);
        let codes = self.exits.selected(facts, words);
        // What the policy's regex message rules' search found (`Searched`).
        let mut searched = Searched::default();
        let mut chunks = ChunkHits::default();
        let mut names = [UNRESOLVED; NAME_CACHE];
        if words == 1 {
            // At most 64 rules, nearly every policy: straight-line code. The loop over words
            // kept every table's address live across iterations and spilled them to the
            // stack, ~60 instructions of set-up per policy per decision.
            let bits = self.candidates(0, facts, row, &codes, &mut names, &mut searched, shared);
            return self.try_candidates(0, bits, facts, &mut names, &mut chunks, searched.messages());
        }
        for w in 0..words {
            let bits = self.candidates(w, facts, row, &codes, &mut names, &mut searched, Alone);
            if let Some(found) = self.try_candidates(w, bits, facts, &mut names, &mut chunks, searched.messages()) {
                return Some(found);
            }
        }
        None
    }

    /// Word `w` of the candidates: rules without a category and those listing the run's
    /// (`row`), less those the run's conditions, exit codes (`codes`), named containers'
    /// exit codes and message first bytes, and messages (the regex searches) reject.
    // `inline(always)` here and on the helpers it calls: first_match is large enough that
    // LLVM stopped inlining them, and their calls cost more than their bodies.
    #[inline(always)]
    // Each argument is a per-decision value the caller already holds; a struct of them would be
    // built per policy and decision for this one call.
    #[allow(clippy::too_many_arguments)]
    fn candidates(
        &self,
        w: usize,
        facts: &RunFacts<'_>,
        row: Option<&[u64]>,
        codes: &[SelectedCode<'_>; 2],
        names: &mut [u32; NAME_CACHE],
        searched: &mut Searched,
        shared: impl SharedAnswer,
    ) -> u64 {
        let mut rejected = self.conditions.rejects(w, facts.conditions, self.words());
        if self.exits.any() {
            rejected |= self.exits.rejects(w, codes);
        }
        for x in self.named_exits.iter() {
            rejected |= x.rejects(w, facts, names);
        }
        for x in self.prefixes.iter() {
            rejected |= x.rejects(w, facts, names);
        }
        let bits = (self.categories.uncategorized[w] | row.map_or(0, |r| r[w])) & !rejected;
        self.regexes.candidates(w, bits, facts, searched, shared)
    }

    /// The candidates `bits` of word `w` tried in rule order: the first that matches.
    #[inline(always)]
    fn try_candidates(
        &self,
        w: usize,
        mut bits: u64,
        facts: &RunFacts<'_>,
        names: &mut [u32; NAME_CACHE],
        chunks: &mut ChunkHits,
        messages: Option<&MessageHits>,
    ) -> Option<(usize, Signal)> {
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let rule = &self.rules[i];
            if let Some(c) = rule.regex_chunk {
                if !self.regexes.chunk_matches(c, rule.include_init, chunks, facts) {
                    continue;
                }
            }
            // A rule of the policy-wide search still a candidate: its regex matches an
            // eligible message, and the search says which one comes first (unless it had too
            // many).
            let message = match messages {
                Some(m) if rule.in_regex_hits => m.first(1u64 << (i % 64), rule.include_init),
                _ => None,
            };
            if let Some(signal) = rule.matches(facts, names, message) {
                return Some((i, signal));
            }
        }
        None
    }

    /// The shared search says that no rule of this policy can match: it is made of regex
    /// message rules only (`pure_regex`), and none of their regexes matches a message they
    /// read. Asked before [`CompiledPolicy::first_match`], so that a policy of a catalog
    /// that has nothing for this run costs a few instructions, not a call's set-up.
    #[inline(always)]
    pub(super) fn shared_rejects_all(&self, search: &mut SharedSearch<'_>, slot: usize, facts: &RunFacts<'_>) -> bool {
        self.pure_regex
            && search
                .hits(facts)
                .is_some_and(|hits| self.pure_candidates(hits.plain[slot], hits.any[slot]) == 0)
    }

    /// For a `pure_regex` policy, its candidates from the shared search's answer: its rules
    /// whose regex matches a non-init message (`plain`) or, with `includeInitContainers`, any
    /// message (`any`). Rules without a matcher are never candidates.
    #[inline(always)]
    fn pure_candidates(&self, plain: u64, any: u64) -> u64 {
        let [plain_rules, init_rules] = self.regexes.rules(0);
        (plain_rules & plain) | (init_rules & any)
    }
}
