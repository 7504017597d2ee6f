//! A policy's rejection masks (docs/engines.md): tables built once per policy that turn what a run
//! is — its category, pod conditions, selected exit codes, a named container's exit code or
//! message first byte — into bitsets over rule indices, so that a decision rejects most rules
//! with a few loads and mask operations before trying any.
//!
//! Owns: [`CategoryIndex`] (which rules are candidates at all), [`ConditionMasks`],
//! [`ExitMasks`] (rules without `containerName`), [`NamedExits`] and [`SlotPrefixes`] (per
//! named container), and [`ExitRows`], the exit code → rules table both exit masks use.
//! Must not: reject a rule that could match (a mask only filters; candidates are still tried
//! in rule order: `tests::masks_pick_the_rule_trying_every_rule_picks`), or allocate per
//! decision.

use crate::model::policy::{Condition, ExitCodes, Operator, Rule};

use super::pattern::Pattern;
use super::rule::RuleMatcher;
use super::run_facts::{resolve, same, word_hash, RunFacts, NAME_CACHE};

/// The word and the bit of rule `i` in a bitset over rule indices.
#[inline]
fn word_bit(i: usize) -> (usize, u64) {
    (i / 64, 1u64 << (i % 64))
}

/// An empty slot of the category table.
const NO_ROW: u32 = u32::MAX;

/// Which rules are candidates for a run: those that list no category, and per category the
/// rules listing it. A rule without matchers never matches and a subcategory without
/// a category is rejected by validation: neither is ever a candidate.
#[derive(Debug, Clone)]
pub(super) struct CategoryIndex {
    /// Rules that list no category, as a bitset over rule indices: candidates for every run.
    /// Its length is the policy's number of bitset words.
    pub(super) uncategorized: Box<[u64]>,
    /// Category → the rules that list it, a bitset row in `rows`: an open-addressed table
    /// of (hash, row) probed from `hash & (len - 1)` (a power of two, at most half full;
    /// empty when no rule lists a category), the row's name in `names[row]`. A binary
    /// search over the sorted hashes was a quarter of the per-policy set-up: its
    /// data-dependent steps over 40-byte entries stalled; a probe is usually one load.
    table: Box<[(u64, u32)]>,
    names: Box<[Box<str>]>,
    rows: Box<[u64]>,
}

impl CategoryIndex {
    pub(super) fn new(rules: &[Rule], words: usize) -> CategoryIndex {
        let mut uncategorized = vec![0u64; words];
        let mut by_name: Vec<(u64, Box<str>, u32)> = Vec::new();
        let mut rows: Vec<u64> = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if !rule.has_matcher() || (rule.on_failure_category.is_none() && rule.on_failure_subcategory.is_some()) {
                continue;
            }
            let (word, mask) = word_bit(i);
            match &rule.on_failure_category {
                None => uncategorized[word] |= mask,
                Some(names) => {
                    for name in names {
                        let row = match by_name.iter().find(|(_, n, _)| **n == **name) {
                            Some(&(_, _, row)) => row,
                            None => {
                                let row = (rows.len() / words) as u32;
                                rows.resize(rows.len() + words, 0);
                                by_name.push((word_hash(name), name.as_str().into(), row));
                                row
                            }
                        };
                        rows[row as usize * words + word] |= mask;
                    }
                }
            }
        }
        let mut table = vec![
            (0u64, NO_ROW);
            if by_name.is_empty() {
                0
            } else {
                (by_name.len() * 2).next_power_of_two()
            }
        ];
        let mut names: Vec<Box<str>> = vec![Box::from(""); by_name.len()];
        for (hash, name, row) in by_name {
            let mask = table.len() - 1;
            let mut at = hash as usize & mask;
            while table[at].1 != NO_ROW {
                at = (at + 1) & mask;
            }
            table[at] = (hash, row);
            names[row as usize] = name;
        }
        CategoryIndex {
            uncategorized: uncategorized.into(),
            table: table.into(),
            names: names.into(),
            rows: rows.into(),
        }
    }

    /// The bitset row of the rules listing the run's category, if any rule lists it.
    #[inline(always)]
    pub(super) fn row(&self, facts: &RunFacts<'_>) -> Option<&[u64]> {
        let (name, hash) = facts.category?;
        let mask = self.table.len().checked_sub(1)?;
        let mut at = hash as usize & mask;
        loop {
            let (h, row) = self.table[at];
            if row == NO_ROW {
                return None;
            }
            if h == hash && same(&self.names[row as usize], name) {
                let words = self.uncategorized.len();
                return Some(&self.rows[row as usize * words..][..words]);
            }
            at = (at + 1) & mask;
        }
    }
}

/// Rules whose `onConditions` lists only pod-level conditions, and per condition bit
/// (`Condition as usize`) the ones listing it: a run without any of a rule's conditions
/// rejects it with a few mask operations.
#[derive(Debug, Clone)]
pub(super) struct ConditionMasks {
    rules: Box<[u64]>,
    rows: Box<[u64]>,
}

impl ConditionMasks {
    pub(super) fn new(rules: &[Rule], words: usize) -> ConditionMasks {
        let mut masked = vec![0u64; words];
        let mut rows = vec![0u64; words * Condition::ALL.len()];
        for (i, rule) in rules.iter().enumerate() {
            let (word, mask) = word_bit(i);
            if let Some(conditions) = rule
                .on_conditions
                .as_ref()
                .filter(|c| !c.contains(&Condition::OOMKilled))
            {
                masked[word] |= mask;
                for &c in conditions {
                    rows[c as usize * words + word] |= mask;
                }
            }
        }
        ConditionMasks {
            rules: masked.into(),
            rows: rows.into(),
        }
    }

    /// Word `w` of the rules the run's pod-level `conditions` (a mask) reject.
    #[inline(always)]
    pub(super) fn rejects(&self, w: usize, conditions: u8, words: usize) -> u64 {
        let (mut held, mut conditions) = (0, conditions);
        while conditions != 0 {
            let c = conditions.trailing_zeros() as usize;
            conditions &= conditions - 1;
            held |= self.rows[c * words + w];
        }
        self.rules[w] & !held
    }
}

/// A set of `onExitCodes` rules, their codes by row: the rules with operator `In`, and exit
/// code → its row in `rows` (the rules listing it, `words` words), sorted by code; for the
/// codes 0–255 (a process's own exit codes) also a direct table, code → row + 1 (0 for a
/// code no rule lists), empty when no rule lists a code. The binary search it replaces was
/// the costliest step of a policy's set-up (a chain of dependent loads and compares per
/// decision).
#[derive(Debug, Clone)]
pub(super) struct ExitRows {
    member: Box<[u64]>,
    codes: Box<[(i64, u32)]>,
    rows: Box<[u64]>,
    small: Box<[u32]>,
}

/// An [`ExitRows`] being built: codes in the order first listed.
struct ExitRowsBuilder {
    words: usize,
    member: Vec<u64>,
    codes: Vec<(i64, u32)>,
    rows: Vec<u64>,
}

impl ExitRowsBuilder {
    fn new(words: usize) -> ExitRowsBuilder {
        ExitRowsBuilder {
            words,
            member: vec![0; words],
            codes: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Rule `i` lists `codes`.
    fn add(&mut self, i: usize, codes: &ExitCodes) {
        let (word, mask) = word_bit(i);
        if codes.operator == Operator::In {
            self.member[word] |= mask;
        }
        for &code in &codes.values {
            let row = match self.codes.iter().find(|(c, _)| *c == code) {
                Some(&(_, row)) => row,
                None => {
                    let row = (self.rows.len() / self.words) as u32;
                    self.rows.resize(self.rows.len() + self.words, 0);
                    self.codes.push((code, row));
                    row
                }
            };
            self.rows[row as usize * self.words + word] |= mask;
        }
    }

    fn finish(mut self) -> ExitRows {
        self.codes.sort_unstable();
        let mut small = vec![0u32; if self.codes.is_empty() { 0 } else { 256 }];
        for &(code, row) in self.codes.iter().filter(|(c, _)| (0..256).contains(c)) {
            small[code as usize] = row + 1;
        }
        ExitRows {
            member: self.member.into(),
            codes: self.codes.into(),
            rows: self.rows.into(),
            small: small.into(),
        }
    }
}

impl ExitRows {
    /// The row of `code`, if a rule lists it.
    #[inline(always)]
    fn row(&self, code: i64) -> Option<usize> {
        match self.small.get(code as usize) {
            Some(&row) if (0..256).contains(&code) => (row as usize).checked_sub(1),
            _ => self
                .codes
                .binary_search_by_key(&code, |(c, _)| *c)
                .ok()
                .map(|at| self.codes[at].1 as usize),
        }
    }

    /// Word `w` of the rules of this set that a code whose row has word `listed` rejects, if
    /// they list codes at all: an `In` rule that does not list it, a `NotIn` rule that does
    /// (as `ExitSet::admits`).
    #[inline(always)]
    fn rejecting(&self, w: usize, listed: u64) -> u64 {
        (self.member[w] & !listed) | (!self.member[w] & listed)
    }
}

/// The rules listing the exit code of the container a rule without `containerName` selects:
/// `None` when that container has no failure code (no failed container, or code 0, which
/// rejects every exit-code rule), `Some(None)` for a code no rule lists.
pub(super) type SelectedCode<'a> = Option<Option<&'a [u64]>>;

/// Rules with `onExitCodes` and no `containerName` (\[0\]: failed non-init container
/// selected, \[1\]: `includeInitContainers`), and their codes by row: the selected container's
/// code rejects the others at once.
#[derive(Debug, Clone)]
pub(super) struct ExitMasks {
    rules: [Box<[u64]>; 2],
    rows: ExitRows,
    /// Some rule is in `rules` (else the run's exit codes are not looked up).
    any: bool,
}

impl ExitMasks {
    pub(super) fn new(rules: &[Rule], words: usize) -> ExitMasks {
        let mut masked = [vec![0u64; words], vec![0u64; words]];
        let mut rows = ExitRowsBuilder::new(words);
        for (i, rule) in rules.iter().enumerate() {
            if let (Some(codes), None) = (&rule.on_exit_codes, &rule.container_name) {
                let (word, mask) = word_bit(i);
                masked[usize::from(rule.include_init_containers)][word] |= mask;
                rows.add(i, codes);
            }
        }
        let any = masked.iter().flatten().any(|&w| w != 0);
        let [plain, init] = masked;
        ExitMasks {
            rules: [plain.into(), init.into()],
            rows: rows.finish(),
            any,
        }
    }

    /// The rows of the two containers a rule without `containerName` may select (the first
    /// failed non-init one, and with init containers), from the codes read from the run once
    /// per decision (`RunFacts::exit_codes`): per policy only their rows are looked up, once
    /// when both selections agree.
    #[inline(always)]
    pub(super) fn selected(&self, facts: &RunFacts<'_>, words: usize) -> [SelectedCode<'_>; 2] {
        if !self.any {
            return [None, None];
        }
        let [plain, init] = facts.exit_codes;
        let listing =
            |code: i64| (code != 0).then(|| self.rows.row(code).map(|row| &self.rows.rows[row * words..][..words]));
        let first = listing(plain);
        [first, if init == plain { first } else { listing(init) }]
    }

    /// Word `w` of the rules the run's exit codes reject: `onExitCodes` rules (without
    /// `containerName`) whose selected container has no failure code, code 0, a code an `In`
    /// rule does not list or a code a `NotIn` rule lists.
    #[inline(always)]
    pub(super) fn rejects(&self, w: usize, codes: &[SelectedCode<'_>; 2]) -> u64 {
        let mut out = 0;
        for (rules, code) in self.rules.iter().zip(codes) {
            out |= rules[w]
                & match code {
                    Some(row) => self.rows.rejecting(w, row.map_or(0, |r| r[w])),
                    None => !0,
                };
        }
        out
    }

    /// Some rule is an exit-code rule without `containerName` (else the run's exit codes need
    /// not be looked up, nor rejected by).
    #[inline(always)]
    pub(super) fn any(&self) -> bool {
        self.any
    }
}

/// Rules with `onExitCodes` on one named container: that container's exit code rejects the
/// others by mask, as for the unnamed ones (tried one by one, 3 × 20 such rules cost ~7,000
/// instructions a decision).
#[derive(Debug, Clone)]
pub(super) struct NamedExits {
    slot: usize,
    name: Box<str>,
    rules: Box<[u64]>,
    rows: ExitRows,
}

impl NamedExits {
    /// One per cached container name (`container_slot`) that exit-code rules name, in the
    /// order first named.
    pub(super) fn new(rules: &[Rule], matchers: &[RuleMatcher], names: &[&str], words: usize) -> Box<[NamedExits]> {
        let mut found: Vec<(usize, Vec<u64>, ExitRowsBuilder)> = Vec::new();
        for (i, (rule, matcher)) in rules.iter().zip(matchers).enumerate() {
            let (Some(slot), Some(codes)) = (matcher.container_slot, &rule.on_exit_codes) else {
                continue;
            };
            let at = match found.iter().position(|(s, _, _)| *s == slot) {
                Some(at) => at,
                None => {
                    found.push((slot, vec![0; words], ExitRowsBuilder::new(words)));
                    found.len() - 1
                }
            };
            let (_, masked, rows) = &mut found[at];
            let (word, mask) = word_bit(i);
            masked[word] |= mask;
            rows.add(i, codes);
        }
        found
            .into_iter()
            .map(|(slot, rules, rows)| NamedExits {
                slot,
                name: names[slot].into(),
                rules: rules.into(),
                rows: rows.finish(),
            })
            .collect()
    }

    /// Word `w` of the rules the named container's exit code rejects: all of them when there
    /// is no such container or its code is 0 (no rule admits 0), else as [`ExitRows::rejecting`].
    #[inline(always)]
    pub(super) fn rejects(&self, w: usize, facts: &RunFacts<'_>, names: &mut [u32; NAME_CACHE]) -> u64 {
        let code =
            resolve(names, self.slot, &self.name, facts).map_or(0, |i| facts.run.containers[i as usize].exit_code);
        if code == 0 {
            return self.rules[w];
        }
        let words = self.rules.len();
        let listed = self.rows.row(code).map_or(0, |row| self.rows.rows[row * words + w]);
        self.rules[w] & self.rows.rejecting(w, listed)
    }
}

/// The literal fast path as a mask, for one named container: the rules whose message pattern
/// is a literal prefix, and per first byte the ones starting with it. A run whose container's
/// message starts with another byte (or has none) rejects them untried.
#[derive(Debug, Clone)]
pub(super) struct SlotPrefixes {
    slot: usize,
    name: Box<str>,
    rules: Box<[u64]>,
    /// (first byte, rules whose prefix starts with it).
    by_byte: Box<[(u8, Box<[u64]>)]>,
    /// Per byte value, its index in `by_byte` + 1, 0 if no prefix starts with it: one load
    /// rather than a binary search per decision.
    first: Box<[u32]>,
}

impl SlotPrefixes {
    /// One per cached container name that literal prefix rules name, in the order first
    /// named.
    pub(super) fn new(matchers: &[RuleMatcher], names: &[&str], words: usize) -> Box<[SlotPrefixes]> {
        let mut out: Vec<SlotPrefixes> = Vec::new();
        for (i, matcher) in matchers.iter().enumerate() {
            let (Some(slot), Some(Pattern::Prefix(l))) = (matcher.container_slot, &matcher.pattern) else {
                continue;
            };
            let at = match out.iter().position(|x| x.slot == slot) {
                Some(at) => at,
                None => {
                    out.push(SlotPrefixes {
                        slot,
                        name: names[slot].into(),
                        rules: vec![0; words].into(),
                        by_byte: Box::new([]),
                        first: vec![0; 256].into(),
                    });
                    out.len() - 1
                }
            };
            // A literal prefix is never empty (`Pattern::new`).
            out[at].add(i, l.as_bytes()[0], words);
        }
        out.into()
    }

    /// Rule `i`'s prefix starts with `byte`.
    fn add(&mut self, i: usize, byte: u8, words: usize) {
        let (word, mask) = word_bit(i);
        self.rules[word] |= mask;
        let mut by_byte = std::mem::take(&mut self.by_byte).into_vec();
        match by_byte.iter().position(|(b, _)| *b == byte) {
            Some(k) => by_byte[k].1[word] |= mask,
            None => {
                let mut row = vec![0u64; words];
                row[word] |= mask;
                by_byte.push((byte, row.into()));
            }
        }
        for (k, (b, _)) in by_byte.iter().enumerate() {
            self.first[*b as usize] = k as u32 + 1;
        }
        self.by_byte = by_byte.into();
    }

    /// Word `w` of the prefix rules the named container's message rejects.
    #[inline(always)]
    pub(super) fn rejects(&self, w: usize, facts: &RunFacts<'_>, names: &mut [u32; NAME_CACHE]) -> u64 {
        let first = resolve(names, self.slot, &self.name, facts)
            .and_then(|i| facts.run.containers[i as usize].message.as_deref())
            .and_then(|m| m.as_bytes().first());
        let allowed = first
            .and_then(|&b| (self.first[b as usize] as usize).checked_sub(1))
            .map_or(0, |k| self.by_byte[k].1[w]);
        self.rules[w] & !allowed
    }
}
