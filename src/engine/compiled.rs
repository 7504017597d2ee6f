//! Policies compiled once into matcher tables (SPEC §2.2–2.3), and the signal a match
//! leaves behind.
//!
//! Owns: [`CompiledPolicy`] (per rule: condition bitmask, sorted exit-code set, compiled
//! message pattern, container name, and the retry plan — backoff, limit, anti-affinity
//! resolved rule → policy; per policy: the rules indexed by category, and the rejection
//! masks by condition, exit code (per named container too), message first byte, and which
//! regex message rules match: one multi-pattern search per message for a policy of at most
//! 64 rules, pattern sets for larger ones), the facts read from a run once per decision (`RunFacts`), the first-match
//! search over one policy — taking its regex message rules' answer from the list's shared
//! search when there is one (`SharedAnswer`: `Covered` or `Alone`, `SharedSearch`, the
//! per-decision memo of `super::shared`'s one search) — and [`Signal`], which names what
//! matched by indices into the run and is put into words only when a record is written
//! ([`Signal::write`]).
//!
//! Must not: allocate while matching (the evaluator's budget is zero heap allocations per
//! decision, `tests/alloc.rs`), do I/O, or change the order in which rules are tried: the
//! category index only skips rules that cannot match, and candidates are visited in rule
//! order, so the first matching rule still wins (§2.3).

use regex::Regex;

use crate::model::history::{Container, Run};
use crate::model::policy::{AntiAffinityMode, Backoff, Condition, ExitCodes, Operator, RetryPolicy, Rule};

use super::literals::Literals;
#[cfg(test)]
use super::shared::SLOTS;
use super::shared::{Hits, SharedRegexes, KEPT_MESSAGES};
use super::Avoid;
use crate::model::quantity::parse_quantity;
use crate::model::validate::{compile_pattern, MAX_REGEX_SIZE};

/// A compiled `onTerminationMessage` pattern. Literal patterns (the common `TRANSIENT`,
/// `^OOM`, `.*CUDA error.*`) skip the regex engine: a substring or prefix test gives the
/// same answer as Go's `MatchString` for them, several times faster.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    Contains(String),
    Prefix(String),
    Regex(Regex),
}

impl Pattern {
    pub(crate) fn new(p: &str) -> Result<Pattern, String> {
        let regex = compile_pattern(p)?;
        // No regex metacharacter (`-` is literal outside a class, unlike what `regex::escape`
        // would suggest).
        let literal = |t: &str| !t.is_empty() && !t.contains(|c| "\\.+*?()|[]{}^$".contains(c));
        let inner = p.strip_prefix(".*").unwrap_or(p);
        let inner = inner.strip_suffix(".*").filter(|i| !i.ends_with('\\')).unwrap_or(inner);
        Ok(if literal(inner) {
            Pattern::Contains(inner.to_string())
        } else if let Some(rest) = p.strip_prefix('^').filter(|r| literal(r)) {
            Pattern::Prefix(rest.to_string())
        } else {
            Pattern::Regex(regex)
        })
    }

    #[inline]
    pub(crate) fn is_match(&self, text: &str) -> bool {
        match self {
            Pattern::Contains(l) => text.len() >= l.len() && text.contains(l.as_str()),
            // The first byte inline: most messages differ there, and a call to `memcmp` per
            // rule tried was a visible share of the evaluator's time.
            Pattern::Prefix(l) => text.as_bytes().first() == l.as_bytes().first() && text.starts_with(l.as_str()),
            Pattern::Regex(r) => r.is_match(text),
        }
    }
}

/// The bit of a condition in a mask (`Condition` has five variants).
fn bit(c: Condition) -> u8 {
    1 << (c as u8)
}

/// `onExitCodes`, with the codes sorted for a binary search.
#[derive(Debug, Clone)]
struct ExitSet {
    member_matches: bool,
    codes: Box<[i64]>,
}

impl ExitSet {
    /// SPEC §2.3: exit code 0 never matches either operator.
    fn admits(&self, code: i64) -> bool {
        code != 0 && self.codes.binary_search(&code).is_ok() == self.member_matches
    }
}

/// One rule's matchers, in the shapes the search reads. Categories are not here: they
/// decide which rules are candidates at all ([`CompiledPolicy::candidates`]).
#[derive(Debug, Clone)]
struct RuleMatcher {
    /// The rule lists categories (it is a candidate only through the category index).
    category: bool,
    subcategories: Option<Box<[Box<str>]>>,
    /// `onConditions` in the order written: the first one that holds is the one reported.
    conditions: Option<Box<[Condition]>>,
    /// The pod-level conditions listed (OOMKilled excluded: it is a container's).
    pod_conditions: u8,
    oom: bool,
    exit: Option<ExitSet>,
    pattern: Option<Pattern>,
    container: Option<Box<str>>,
    /// The container name's slot in the per-decision cache of resolved names (the first
    /// [`NAME_CACHE`] distinct names of the policy).
    container_slot: Option<usize>,
    /// For a regex rule in the policy's pattern set: its chunk in `regex_chunks`.
    regex_chunk: Option<u8>,
    /// A regex message rule without `containerName` in a policy of at most 64 rules: a
    /// policy-wide search (`regex_hits`, or the list's `SharedRegexes`) may know its message.
    in_regex_hits: bool,
    include_init: bool,
    /// A container-level matcher reads the selected container (§2.2).
    needs_container: bool,
}

/// What matched, as indices into the run and flags: enough to write the signal of
/// SPEC §2.9 (`container main exit 137, category infra`) later, and nothing to allocate now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// No rule matched; a default action decided.
    NoRuleMatched,
    /// The matchers of the matched rule, in the order the signal names them.
    Rule {
        /// The condition that held, and for `OOMKilled` the container (index in the run).
        condition: Option<(Condition, Option<u32>)>,
        /// The container whose exit code matched.
        exit: Option<u32>,
        /// The container whose termination message matched.
        message: Option<u32>,
        /// The run's category matched (and its subcategory, when the rule lists some).
        category: Option<bool>,
    },
    /// Upstream (§2.10): a rule matched on the run's category and subcategory.
    Category,
}

impl Signal {
    /// The signal in words, as SPEC §2.9 writes it, for `run` (the run that was decided).
    pub fn write(&self, run: &Run, out: &mut String) {
        let container = |i: u32| &run.containers[i as usize];
        let mut add = |parts: &[&str]| {
            if !out.is_empty() {
                out.push_str(", ");
            }
            for p in parts {
                out.push_str(p);
            }
        };
        match *self {
            Signal::NoRuleMatched => add(&["no rule matched"]),
            Signal::Category => match (&run.category, &run.subcategory) {
                (Some(c), Some(s)) => add(&["category ", c, "/", s]),
                (Some(c), None) => add(&["category ", c]),
                _ => add(&["no category"]),
            },
            Signal::Rule {
                condition,
                exit,
                message,
                category,
            } => {
                match condition {
                    // An unnamed container (a Lookout import) reads `container exit 137`.
                    Some((Condition::OOMKilled, Some(i))) => {
                        let c = container(i);
                        add(&["container", sep(c), &c.name, " OOMKilled"]);
                    }
                    Some((hit, _)) => add(&["condition ", hit.as_str()]),
                    None => {}
                }
                if let Some(i) = exit {
                    let c = container(i);
                    add(&["container", sep(c), &c.name, " exit ", &c.exit_code.to_string()]);
                }
                if let Some(i) = message {
                    let c = container(i);
                    add(&["message of container", sep(c), &c.name, " matches"]);
                }
                let cat = run.category.as_deref().unwrap_or_default();
                match (category, run.subcategory.as_deref()) {
                    (Some(true), Some(sub)) => add(&["category ", cat, "/", sub]),
                    (Some(_), _) => add(&["category ", cat]),
                    (None, _) => {}
                }
            }
        }
    }

    /// [`Signal::write`] into a new string.
    pub fn to_text(&self, run: &Run) -> String {
        let mut s = String::with_capacity(48);
        self.write(run, &mut s);
        s
    }
}

/// The space before a container's name, none for an unnamed container.
fn sep(c: &Container) -> &'static str {
    if c.name.is_empty() {
        ""
    } else {
        " "
    }
}

/// The category index is keyed by a hash computed once per run and shared by every policy.
/// Eight bytes at a time (a byte-at-a-time FNV was a visible share of a decision; std's
/// SipHash costs more than the comparisons it would save). Any value works: it only picks
/// which names to compare.
fn word_hash(s: &str) -> u64 {
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
    run: &'r Run,
    /// The run's pod-level conditions as a mask.
    conditions: u8,
    /// The run's category and its hash.
    category: Option<(&'r str, u64)>,
    /// The first failed non-init container (§2.2).
    first_failed: Option<u32>,
    /// The first failed container, init containers first.
    first_failed_with_init: Option<u32>,
    /// The exit codes of those two containers, 0 for none (no failed container).
    exit_codes: [i64; 2],
    /// The run has an init container.
    has_init: bool,
}

impl<'r> RunFacts<'r> {
    pub(crate) fn run(&self) -> &'r Run {
        self.run
    }

    /// The run's pod-level `condition` holds (not `OOMKilled`, a container's).
    pub(crate) fn has_condition(&self, condition: Condition) -> bool {
        self.conditions & bit(condition) != 0
    }

    pub(crate) fn new(run: &'r Run) -> RunFacts<'r> {
        // One pass over the containers (§2.2): the first failed non-init container, the
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

/// A policy with its rules compiled once into matcher tables.
#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    pub policy: RetryPolicy,
    rules: Box<[RuleMatcher]>,
    /// Rules that list no category, as a bitset over rule indices: candidates for every run.
    uncategorized: Box<[u64]>,
    /// Category → the rules that list it, a bitset row in `rows`: an open-addressed table
    /// of (hash, row) probed from `hash & (len - 1)` (a power of two, at most half full;
    /// empty when no rule lists a category), the row's name in `category_names[row]`. A
    /// binary search over the sorted hashes was a quarter of the per-policy set-up: its
    /// data-dependent steps over 40-byte entries stalled; a probe is usually one load.
    categories: Box<[(u64, u32)]>,
    category_names: Box<[Box<str>]>,
    rows: Box<[u64]>,
    /// Rules whose `onConditions` lists only pod-level conditions, and per condition bit
    /// (`Condition as usize`) the ones listing it: a run without any of a rule's conditions
    /// rejects it with a few mask operations.
    pod_condition_rules: Box<[u64]>,
    pod_condition_rows: Box<[u64]>,
    /// Rules with `onExitCodes` and no `containerName` ([0]: failed non-init container
    /// selected, [1]: `includeInitContainers`), those with operator `In`, and per exit code
    /// listed the rules listing it: the selected container's code rejects the others at once.
    exit_rules: [Box<[u64]>; 2],
    exit_in: Box<[u64]>,
    exit_codes: Box<[(i64, u32)]>,
    exit_rows: Box<[u64]>,
    /// `exit_codes` for the codes 0–255 (a process's own exit codes) as a direct table:
    /// code → row + 1, 0 for a code no rule lists; empty when no rule lists a code. The
    /// binary search it replaces was the costliest step of a policy's set-up (a chain of
    /// dependent loads and compares per decision).
    exit_small: Box<[u32]>,
    /// Some rule is in `exit_rules` (else the run's exit codes are not looked up).
    has_exit_rules: bool,
    /// The literal fast path as a mask: per cached `containerName`, the rules whose message
    /// pattern is a literal prefix, and per first byte the ones starting with it. A run whose
    /// container's message starts with another byte (or has none) rejects them untried.
    prefixes: Box<[SlotPrefixes]>,
    /// Rules with `onExitCodes` on a named container, per cached `containerName`: that
    /// container's exit code rejects the others by mask, as for the unnamed ones above
    /// (tried one by one, 3 × 20 such rules cost ~7,000 instructions a decision).
    named_exits: Box<[NamedExits]>,
    /// More than [`MASKED_RULES`] rules: worth the per-decision set-up of the rejection
    /// masks above. With fewer, trying the category candidates directly is cheaper (measured
    /// on `scripts/bench-simulate.sh`'s policies of 1–3 rules: the masks made a decision
    /// slower there).
    use_masks: bool,
    /// With masks and one word of rules, every rule that can match is a regex message rule
    /// without `containerName` and without any other matcher (an Xid catalog): its candidates
    /// are exactly the rules a multi-pattern search says match, with no mask to compute.
    pure_regex: bool,
    /// Rules whose message pattern is a real regex and that name no container ([0]: non-init
    /// containers, [1]: `includeInitContainers`). In a policy of more than 64 rules, one
    /// set of their patterns ([`pattern_set`]): when the set matches no eligible message — one search
    /// per message per policy — every one of them is rejected untried. When it matches, each
    /// candidate still runs its own regex. (At most 64 rules: `regex_hits`.)
    regex_rules: [Box<[u64]>; 2],
    regex_set: Option<regex_automata::meta::Regex>,
    /// When the set matches, the rules' regexes are tried one by one in rule order; these
    /// smaller sets, over [`REGEX_CHUNK`] consecutive patterns each (only with more than
    /// that many), reject a chunk's rules with one search when none of them matches (3 × 20
    /// rules whose last one matches: 21 regex searches a decision without them, ~5,000
    /// instructions).
    regex_chunks: Box<[regex_automata::meta::Regex]>,
    /// For a policy of at most 64 rules, in place of `regex_set` and `regex_chunks`: one
    /// search per eligible message says which of those rules' regexes match it, so the others
    /// are rejected by mask and the candidates left know their message without a search of
    /// their own (3 × 20 anchored regex rules, the last one matching: 7,500 instructions a
    /// decision with the chunked sets, 4,578 with this).
    regex_hits: Option<RegexHits>,
    /// For a policy of at most 64 rules, the literals its regex message rules without
    /// `containerName` need: one scan per eligible message rejects the rules none of whose
    /// literals it contains, before (often instead of) any regex search. When one rule is
    /// left it runs its own regex; `regex_hits` searches only for two or more.
    regex_literals: Option<Literals>,
    /// `mutate.resources.memory.static` in bytes, per rule.
    pub(crate) statics: Vec<Option<f64>>,
    /// What a retry under each rule takes, and under the default action (`default_plan`).
    plans: Box<[RetryPlan]>,
    default_plan: RetryPlan,
}

/// What a retry under one rule (or the policy's default action) takes from the rule and the
/// policy, resolved once at compile time rather than through both levels per decision:
/// each backoff field rule → policy (the scheduler's level and the built-in one are added
/// per decision: settings are not the policy's), the retry limit rule → policy (§2.4), the
/// nodes to avoid (§2.6), and whether the rule mutates memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPlan {
    pub(crate) backoff: Backoff,
    pub(crate) limit: Option<u32>,
    pub(crate) avoid: Avoid,
    pub(crate) memory: bool,
}

impl RetryPlan {
    /// SPEC §2.4–2.6 for `rule` of `policy`, or for its default action (`None`: a default
    /// retry takes the policy's backoff and antiAffinity, and carries no mutation).
    fn new(rule: Option<&Rule>, policy: &RetryPolicy) -> RetryPlan {
        let (r, p) = (rule.map(|r| &r.backoff), &policy.backoff);
        let backoff = Backoff {
            initial_delay: r.and_then(|b| b.initial_delay).or(p.initial_delay),
            max_delay: r.and_then(|b| b.max_delay).or(p.max_delay),
            multiplier: r.and_then(|b| b.multiplier).or(p.multiplier),
            jitter: r.and_then(|b| b.jitter).or(p.jitter),
        };
        let mutate = rule.and_then(|r| r.mutate.as_ref());
        // `avoidSameNode` (a rule's mutation) avoids every node so far, else
        // `antiAffinity: node` (rule → policy) this run's node.
        let avoid_same = mutate
            .and_then(|m| m.affinity.as_ref())
            .is_some_and(|a| a.avoid_same_node);
        let mode = rule
            .and_then(|r| r.anti_affinity)
            .or(policy.anti_affinity)
            .unwrap_or_default();
        RetryPlan {
            backoff,
            limit: rule.and_then(|r| r.retry_limit).or(policy.retry_limit),
            avoid: if avoid_same {
                Avoid::EveryNode
            } else if mode == AntiAffinityMode::Node {
                Avoid::ThisNode
            } else {
                Avoid::Nothing
            },
            memory: mutate
                .and_then(|m| m.resources.as_ref())
                .is_some_and(|r| r.memory.is_some()),
        }
    }
}

impl CompiledPolicy {
    /// Fails only on what validation already rejects (a bad pattern or quantity); callers
    /// validate first, so the error is a safety net, not the user-facing report.
    pub fn new(policy: RetryPolicy) -> Result<CompiledPolicy, String> {
        let words = policy.rules.len().div_ceil(64).max(1);
        let mut rules = Vec::with_capacity(policy.rules.len());
        let mut statics = Vec::with_capacity(policy.rules.len());
        let mut uncategorized = vec![0u64; words];
        let mut by_name: Vec<(u64, Box<str>, u32)> = Vec::new();
        let mut rows: Vec<u64> = Vec::new();
        let mut pod_condition_rules = vec![0u64; words];
        let mut pod_condition_rows = vec![0u64; words * Condition::ALL.len()];
        let mut exit_rules = [vec![0u64; words], vec![0u64; words]];
        let mut exit_in = vec![0u64; words];
        let mut exit_codes: Vec<(i64, u32)> = Vec::new();
        let mut exit_rows: Vec<u64> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        let mut prefixes: Vec<SlotPrefixes> = Vec::new();
        let mut named_exits: Vec<NamedExits> = Vec::new();
        let mut regex_rules = [vec![0u64; words], vec![0u64; words]];
        let mut regex_patterns: Vec<&str> = Vec::new();
        let mut regex_rule_ids: Vec<usize> = Vec::new();
        for (i, rule) in policy.rules.iter().enumerate() {
            let at = |e: String| format!("policy `{}` rule {i}: {e}", policy.name);
            let mut matcher = compile_rule(rule).map_err(at)?;
            if let Some(name) = rule.container_name.as_deref() {
                let slot = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                    names.push(name);
                    names.len() - 1
                });
                matcher.container_slot = (slot < NAME_CACHE).then_some(slot);
            }
            if let (Some(slot), Some(codes)) = (matcher.container_slot, &rule.on_exit_codes) {
                let at = match named_exits.iter().position(|x: &NamedExits| x.slot == slot) {
                    Some(at) => at,
                    None => {
                        named_exits.push(NamedExits::new(slot, names[slot], words));
                        named_exits.len() - 1
                    }
                };
                named_exits[at].add(i, codes);
            }
            if let (Some(slot), Some(Pattern::Prefix(l))) = (matcher.container_slot, &matcher.pattern) {
                let at = match prefixes.iter().position(|x: &SlotPrefixes| x.slot == slot) {
                    Some(at) => at,
                    None => {
                        prefixes.push(SlotPrefixes {
                            slot,
                            name: names[slot].into(),
                            rules: vec![0; words].into(),
                            by_byte: Box::new([]),
                            first: vec![0; 256].into(),
                        });
                        prefixes.len() - 1
                    }
                };
                let x = &mut prefixes[at];
                let (word, mask) = (i / 64, 1u64 << (i % 64));
                x.rules[word] |= mask;
                // A literal prefix is never empty (`Pattern::new`).
                let byte = l.as_bytes()[0];
                let mut by_byte = std::mem::take(&mut x.by_byte).into_vec();
                match by_byte.iter().position(|(b, _)| *b == byte) {
                    Some(k) => by_byte[k].1[word] |= mask,
                    None => {
                        let mut row = vec![0u64; words];
                        row[word] |= mask;
                        by_byte.push((byte, row.into()));
                    }
                }
                for (k, (b, _)) in by_byte.iter().enumerate() {
                    x.first[*b as usize] = k as u32 + 1;
                }
                x.by_byte = by_byte.into();
            }
            if let (None, Some(Pattern::Regex(_)), Some(p)) =
                (&rule.container_name, &matcher.pattern, &rule.on_termination_message)
            {
                regex_rules[usize::from(rule.include_init_containers)][i / 64] |= 1u64 << (i % 64);
                regex_patterns.push(p);
                regex_rule_ids.push(i);
            }
            rules.push(matcher);
            let (word, mask) = (i / 64, 1u64 << (i % 64));
            if let Some(conditions) = rule
                .on_conditions
                .as_ref()
                .filter(|c| !c.contains(&Condition::OOMKilled))
            {
                pod_condition_rules[word] |= mask;
                for &c in conditions {
                    pod_condition_rows[c as usize * words + word] |= mask;
                }
            }
            if let (Some(codes), None) = (&rule.on_exit_codes, &rule.container_name) {
                exit_rules[usize::from(rule.include_init_containers)][word] |= mask;
                if codes.operator == Operator::In {
                    exit_in[word] |= mask;
                }
                for &code in &codes.values {
                    let row = match exit_codes.iter().find(|(c, _)| *c == code) {
                        Some(&(_, row)) => row,
                        None => {
                            let row = (exit_rows.len() / words) as u32;
                            exit_rows.resize(exit_rows.len() + words, 0);
                            exit_codes.push((code, row));
                            row
                        }
                    };
                    exit_rows[row as usize * words + word] |= mask;
                }
            }
            let fixed = rule
                .mutate
                .as_ref()
                .and_then(|m| m.resources.as_ref())
                .and_then(|r| r.memory.as_ref())
                .and_then(|m| m.fixed.as_deref());
            statics.push(match fixed {
                Some(q) => Some(parse_quantity(q).map_err(at)?),
                None => None,
            });
            // A rule without matchers never matches (§2.3), and validation rejects a
            // subcategory without a category; neither is ever a candidate.
            if !rule.has_matcher() || (rule.on_failure_category.is_none() && rule.on_failure_subcategory.is_some()) {
                continue;
            }
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
        let mut categories = vec![
            (0u64, NO_ROW);
            if by_name.is_empty() {
                0
            } else {
                (by_name.len() * 2).next_power_of_two()
            }
        ];
        let mut category_names: Vec<Box<str>> = vec![Box::from(""); by_name.len()];
        for (hash, name, row) in by_name {
            let mask = categories.len() - 1;
            let mut at = hash as usize & mask;
            while categories[at].1 != NO_ROW {
                at = (at + 1) & mask;
            }
            categories[at] = (hash, row);
            category_names[row as usize] = name;
        }
        exit_codes.sort_unstable();
        let mut exit_small = vec![0u32; if exit_codes.is_empty() { 0 } else { 256 }];
        for &(code, row) in exit_codes.iter().filter(|(c, _)| (0..256).contains(c)) {
            exit_small[code as usize] = row + 1;
        }
        let has_exit_rules = exit_rules.iter().flatten().any(|&w| w != 0);
        let use_masks = policy.rules.len() > MASKED_RULES;
        let regex_only = regex_rules[0][0] | regex_rules[1][0];
        let pure_regex = words == 1
            && use_masks
            && regex_only != 0
            && policy.rules.iter().enumerate().all(|(i, r)| {
                !r.has_matcher()
                    || (regex_only & (1u64 << i) != 0
                        && r.on_conditions.is_none()
                        && r.on_exit_codes.is_none()
                        && r.on_failure_category.is_none()
                        && r.on_failure_subcategory.is_none())
            });
        // A set too large to build only loses the shortcut.
        let set_of = |patterns: &[&str]| pattern_set(patterns);
        let regex_hits = if words == 1 && !regex_patterns.is_empty() {
            RegexHits::new(&regex_patterns, &regex_rule_ids)
        } else {
            None
        };
        let regex_literals = if words == 1 && !regex_patterns.is_empty() {
            Literals::new(&regex_patterns, &regex_rule_ids)
        } else {
            None
        };
        if words == 1 {
            for &i in &regex_rule_ids {
                rules[i].in_regex_hits = true;
            }
        }
        let regex_set = (regex_hits.is_none() && !regex_patterns.is_empty())
            .then(|| set_of(&regex_patterns))
            .flatten();
        // Chunks only under a set that was built, at most 64 (a per-decision bitmask of
        // searched chunks), and all or none (a chunk too large to build only loses them).
        let regex_chunks: Box<[regex_automata::meta::Regex]> =
            if regex_set.is_some() && regex_patterns.len() > REGEX_CHUNK && regex_patterns.len() <= REGEX_CHUNK * 64 {
                regex_patterns
                    .chunks(REGEX_CHUNK)
                    .map(set_of)
                    .collect::<Option<Box<[_]>>>()
                    .unwrap_or_default()
            } else {
                Box::new([])
            };
        if !regex_chunks.is_empty() {
            for (k, &i) in regex_rule_ids.iter().enumerate() {
                rules[i].regex_chunk = Some((k / REGEX_CHUNK) as u8);
            }
        }
        let [regex_plain, regex_init] = regex_rules;
        let [exit_plain, exit_init] = exit_rules;
        Ok(CompiledPolicy {
            rules: rules.into(),
            uncategorized: uncategorized.into(),
            categories: categories.into(),
            category_names: category_names.into(),
            rows: rows.into(),
            pod_condition_rules: pod_condition_rules.into(),
            pod_condition_rows: pod_condition_rows.into(),
            exit_rules: [exit_plain.into(), exit_init.into()],
            exit_in: exit_in.into(),
            exit_codes: exit_codes.into(),
            exit_rows: exit_rows.into(),
            exit_small: exit_small.into(),
            has_exit_rules,
            prefixes: prefixes.into(),
            named_exits: named_exits.into_iter().map(NamedExits::finish).collect(),
            use_masks,
            pure_regex,
            regex_rules: [regex_plain.into(), regex_init.into()],
            regex_set,
            regex_chunks,
            regex_hits,
            regex_literals,
            statics,
            plans: policy_rules_plans(&policy),
            default_plan: RetryPlan::new(None, &policy),
            policy,
        })
    }

    pub fn name(&self) -> &str {
        &self.policy.name
    }

    /// The regex message rules without `containerName` of a policy of at most 64 rules, the
    /// ones a list's [`SharedRegexes`] may search for it: (rule, `includeInitContainers`,
    /// pattern), in rule order. Empty for a larger policy (it keeps its pattern sets), and for
    /// one of at most [`MASKED_RULES`] rules (it tries its rules directly).
    pub(crate) fn shared_regex_rules(&self) -> Vec<(usize, bool, &str)> {
        if self.uncategorized.len() != 1 || !self.use_masks {
            return Vec::new();
        }
        let rules = self.regex_rules[0][0] | self.regex_rules[1][0];
        (0..self.rules.len())
            .filter(|&i| rules & (1u64 << i) != 0)
            .filter_map(|i| {
                let rule = &self.policy.rules[i];
                Some((i, rule.include_init_containers, rule.on_termination_message.as_deref()?))
            })
            .collect()
    }

    /// What a retry under `rule` (an index, `None` for the default action) takes.
    #[inline]
    pub(crate) fn plan(&self, rule: Option<usize>) -> &RetryPlan {
        match rule {
            Some(r) => &self.plans[r],
            None => &self.default_plan,
        }
    }

    /// The bitset row of the rules listing the run's category, if any rule lists it.
    #[inline(always)]
    fn category_row(&self, facts: &RunFacts<'_>) -> Option<&[u64]> {
        let (name, hash) = facts.category?;
        let mask = self.categories.len().checked_sub(1)?;
        let mut at = hash as usize & mask;
        loop {
            let (h, row) = self.categories[at];
            if row == NO_ROW {
                return None;
            }
            if h == hash && same(&self.category_names[row as usize], name) {
                let words = self.uncategorized.len();
                return Some(&self.rows[row as usize * words..][..words]);
            }
            at = (at + 1) & mask;
        }
    }

    /// The exit-code row of `code`, if a rule lists it.
    #[inline(always)]
    fn exit_row(&self, code: i64) -> Option<&[u64]> {
        let words = self.uncategorized.len();
        let row = match self.exit_small.get(code as usize) {
            Some(&row) if (0..256).contains(&code) => (row as usize).checked_sub(1)?,
            _ => {
                let at = self.exit_codes.binary_search_by_key(&code, |(c, _)| *c).ok()?;
                self.exit_codes[at].1 as usize
            }
        };
        Some(&self.exit_rows[row * words..][..words])
    }

    /// Word `w` of the rules the run's exit codes reject: `onExitCodes` rules (without
    /// `containerName`) whose selected container has no failure code, code 0, a code an `In`
    /// rule does not list or a code a `NotIn` rule lists (§2.3).
    // `inline(always)` here and on the helpers below: first_match is large enough that
    // LLVM stopped inlining them, and their calls cost more than their bodies.
    #[inline(always)]
    fn exit_rejects(&self, w: usize, codes: &[SelectedCode<'_>; 2]) -> u64 {
        let mut out = 0;
        for (rules, code) in self.exit_rules.iter().zip(codes) {
            out |= rules[w]
                & match code {
                    Some(row) => {
                        let listed = row.map_or(0, |r| r[w]);
                        (self.exit_in[w] & !listed) | (!self.exit_in[w] & listed)
                    }
                    None => !0,
                };
        }
        out
    }

    /// Word `w` of the candidates: rules without a category and those listing the run's
    /// (`row`), less those the run's conditions, exit codes (`codes`), message first bytes
    /// and messages (the pattern set) reject.
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
        mut shared: impl SharedAnswer,
    ) -> u64 {
        let words = self.uncategorized.len();
        let (mut held, mut conditions) = (0, facts.conditions);
        while conditions != 0 {
            let c = conditions.trailing_zeros() as usize;
            conditions &= conditions - 1;
            held |= self.pod_condition_rows[c * words + w];
        }
        let mut rejected = self.pod_condition_rules[w] & !held;
        if self.has_exit_rules {
            rejected |= self.exit_rejects(w, codes);
        }
        for x in self.named_exits.iter() {
            let code = resolve(names, x.slot, &x.name, facts).map_or(0, |i| facts.run.containers[i as usize].exit_code);
            rejected |= x.rejects(w, code);
        }
        for x in self.prefixes.iter() {
            let first = resolve(names, x.slot, &x.name, facts)
                .and_then(|i| facts.run.containers[i as usize].message.as_deref())
                .and_then(|m| m.as_bytes().first());
            let allowed = first
                .and_then(|&b| (x.first[b as usize] as usize).checked_sub(1))
                .map_or(0, |k| x.by_byte[k].1[w]);
            rejected |= x.rules[w] & !allowed;
        }
        let mut bits = (self.uncategorized[w] | row.map_or(0, |r| r[w])) & !rejected;
        if let Some(set) = &self.regex_set {
            if bits & (self.regex_rules[0][w] | self.regex_rules[1][w]) != 0 {
                let (plain, init) = *searched.set.get_or_insert_with(|| set_hits(set, facts));
                bits &= !((if plain { 0 } else { self.regex_rules[0][w] })
                    | (if init { 0 } else { self.regex_rules[1][w] }));
            }
        } else if self.regex_literals.is_some() || self.regex_hits.is_some() || shared.present() {
            // Only with one word of rules (w = 0), so called once per policy and decision.
            let [plain_rules, init_rules] = [self.regex_rules[0][w], self.regex_rules[1][w]];
            if bits & (plain_rules | init_rules) != 0 {
                // The list's one search answers exactly for every policy it covers; without it
                // (not built, or it gave up on this run), the policy's own literals and search.
                match shared.policy_hits(facts, searched) {
                    Some((plain, init)) => bits &= !((plain_rules & !plain) | (init_rules & !init)),
                    None => bits = self.own_regex_candidates(bits, facts, searched),
                }
            }
        }
        bits
    }

    /// `bits` less the regex message rules (without `containerName`, one word of rules) that
    /// the policy's own literal scan and multi-pattern search reject.
    #[inline(always)]
    fn own_regex_candidates(&self, mut bits: u64, facts: &RunFacts<'_>, searched: &mut Searched) -> u64 {
        let [plain_rules, init_rules] = [self.regex_rules[0][0], self.regex_rules[1][0]];
        if let Some(literals) = &self.regex_literals {
            let (plain, init) = possible(literals, facts, init_rules != 0);
            bits &= !((plain_rules & !plain) | (init_rules & !init));
        }
        // One rule left runs its own regex (`RuleMatcher::matches`): one search of one
        // pattern, where the policy-wide search is an `is_match` and an overlapping scan.
        let left = bits & (plain_rules | init_rules);
        if let (Some(hits), true) = (&self.regex_hits, left & left.wrapping_sub(1) != 0) {
            let (plain, init) = hits.search(facts, init_rules != 0, searched.messages.insert(MessageHits::default()));
            bits &= !((plain_rules & !plain) | (init_rules & !init));
        }
        bits
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
                // Searched once per decision, when its first candidate is reached.
                let bit = 1u64 << c;
                if chunks.searched & bit == 0 {
                    let (plain, init) = set_hits(&self.regex_chunks[c as usize], facts);
                    chunks.searched |= bit;
                    chunks.plain |= if plain { bit } else { 0 };
                    chunks.init |= if init { bit } else { 0 };
                }
                if (if rule.include_init { chunks.init } else { chunks.plain }) & bit == 0 {
                    continue;
                }
            }
            // A rule of `regex_hits` still a candidate: its regex matches an eligible
            // message, and the search says which one comes first (unless it had too many).
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
    pub(crate) fn shared_rejects_all(&self, search: &mut SharedSearch<'_>, slot: usize, facts: &RunFacts<'_>) -> bool {
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
        (self.regex_rules[0][0] & plain) | (self.regex_rules[1][0] & any)
    }

    /// SPEC §2.3 over this policy's rules: the first rule that matches, with its signal.
    /// Only candidates are tried — rules without a category and those listing the run's,
    /// less those the run's conditions or exit codes reject by mask — in rule order.
    /// `shared`: where the answer for its regex message rules may come from (the list's shared
    /// search, with what it found so far in this decision), or [`Alone`].
    pub(crate) fn first_match(&self, facts: &RunFacts<'_>, shared: impl SharedAnswer) -> Option<(usize, Signal)> {
        let words = self.uncategorized.len();
        if !self.use_masks {
            let row = self.category_row(facts);
            let mut names = [UNRESOLVED; NAME_CACHE];
            for (w, &free) in self.uncategorized.iter().enumerate() {
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
                return self.try_candidates(0, bits, facts, &mut names, &mut chunks, searched.messages.as_ref());
            }
        }
        let row = self.category_row(facts);
        // The codes were read from the run once per decision (`RunFacts::exit_codes`); per
        // policy only their rows are looked up, once when both selections agree.
        let codes = if !self.has_exit_rules {
            [None, None]
        } else {
            let [plain, init] = facts.exit_codes;
            let listing = |code: i64| (code != 0).then(|| self.exit_row(code));
            let first = listing(plain);
            [first, if init == plain { first } else { listing(init) }]
        };
        // What the policy's regex message rules' search found (`Searched`).
        let mut searched = Searched::default();
        let mut chunks = ChunkHits::default();
        let mut names = [UNRESOLVED; NAME_CACHE];
        if words == 1 {
            // At most 64 rules, nearly every policy: straight-line code. The loop over words
            // kept every table's address live across iterations and spilled them to the
            // stack, ~60 instructions of set-up per policy per decision.
            let bits = self.candidates(0, facts, row, &codes, &mut names, &mut searched, shared);
            return self.try_candidates(0, bits, facts, &mut names, &mut chunks, searched.messages.as_ref());
        }
        for w in 0..words {
            let bits = self.candidates(w, facts, row, &codes, &mut names, &mut searched, Alone);
            if let Some(found) =
                self.try_candidates(w, bits, facts, &mut names, &mut chunks, searched.messages.as_ref())
            {
                return Some(found);
            }
        }
        None
    }
}

/// The rules listing the exit code of the container a rule without `containerName` selects:
/// `None` when that container has no failure code (no failed container, or code 0: §2.3
/// rejects every exit-code rule), `Some(None)` for a code no rule lists.
type SelectedCode<'a> = Option<Option<&'a [u64]>>;

/// Where a policy's regex message rules get their answer in one decision: from the list's
/// shared search ([`Covered`]), or from nowhere ([`Alone`]: the policy's own literal scan and
/// search). A type rather than an `Option`, so that the path without shared regexes compiles to
/// what it was before they existed (as an `Option` it cost every decision 12-50 instructions).
pub(crate) trait SharedAnswer {
    /// There may be an answer (`policy_hits` is not always `None`).
    fn present(&self) -> bool;
    /// The policy's rules whose regex matches a non-init message / any message, and the
    /// messages matched in `searched`; `None`: the policy answers by its own path.
    fn policy_hits(&mut self, facts: &RunFacts<'_>, searched: &mut Searched) -> Option<(u64, u64)>;
}

/// No shared answer: the policy searches on its own.
pub(crate) struct Alone;

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

/// The list's shared search, for the policy of `slot` (one it covers).
pub(crate) struct Covered<'a, 's> {
    pub(crate) search: &'a mut SharedSearch<'s>,
    pub(crate) slot: usize,
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
pub(crate) struct SharedSearch<'s> {
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
    pub(crate) fn new(regexes: &'s SharedRegexes) -> SharedSearch<'s> {
        SharedSearch {
            regexes,
            found: Found::Unsearched,
            hits: None,
        }
    }

    /// What the one search found, searching on the first call; `None` when it has no answer
    /// for this run.
    #[inline(always)]
    fn hits(&mut self, facts: &RunFacts<'_>) -> Option<&Hits> {
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
    /// message, as [`RegexHits::search`] answers, and the messages matched in `searched`.
    /// `None` when the shared search has no answer for this run.
    #[inline]
    fn policy_hits(&mut self, slot: usize, facts: &RunFacts<'_>, searched: &mut Searched) -> Option<(u64, u64)> {
        let hits = self.hits(facts)?;
        let (plain, any) = (hits.plain[slot], hits.any[slot]);
        if any != 0 {
            let messages = searched.messages.insert(MessageHits::default());
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
        Some((plain, any))
    }
}

/// Whether a set matches a message a rule without `containerName` reads (§2.2–2.3): (one
/// of a non-init container, one of any container).
fn set_hits(set: &regex_automata::meta::Regex, facts: &RunFacts<'_>) -> (bool, bool) {
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
/// reads (§2.2–2.3): (one of a non-init container, one of any container), as
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
/// (`compile_pattern`: regex's defaults, Unicode, UTF-8) and its limits. `None` when too large.
///
/// Not `regex::RegexSet` itself: regex-automata 0.4.18's one-pass engine, which a set may use
/// for anchored patterns, panics (index out of bounds) on `^a*\b` against `é` when built
/// without capture slots, as a set is. The lazy DFA and the PikeVM answer every search it
/// would (test `pattern_sets_answer_a_word_boundary_after_an_optional_anchored_prefix`).
fn pattern_set(patterns: &[&str]) -> Option<regex_automata::meta::Regex> {
    use regex_automata::{meta, nfa::thompson::WhichCaptures, util::syntax, MatchKind};
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .match_kind(MatchKind::All)
                .utf8_empty(true)
                .which_captures(WhichCaptures::None)
                .onepass(false)
                .nfa_size_limit(Some(MAX_REGEX_SIZE * 4))
                .hybrid_cache_capacity(MAX_REGEX_SIZE * 16),
        )
        .syntax(syntax::Config::new().utf8(true))
        .build_many(patterns)
        .ok()
}

/// A policy's regex message rules without `containerName` (at most 64 rules in the policy) as
/// one multi-pattern regex, built as `regex::RegexSet` builds its own (`MatchKind::All`: an
/// overlapping search reports every pattern that matches anywhere in the haystack, the
/// `is_match` of each pattern's own `Regex`).
#[derive(Debug, Clone)]
struct RegexHits {
    regex: regex_automata::meta::Regex,
    /// Per pattern, its rule's bit.
    rules: Box<[u64]>,
}

impl RegexHits {
    /// `None` when the patterns are too many for one word or too large to build together
    /// (the policy then keeps the pattern-set shortcut or tries each rule's regex).
    fn new(patterns: &[&str], rule_ids: &[usize]) -> Option<RegexHits> {
        if patterns.len() > HIT_PATTERNS {
            return None;
        }
        let regex = pattern_set(patterns)?;
        Some(RegexHits {
            regex,
            rules: rule_ids.iter().map(|&i| 1u64 << i).collect(),
        })
    }

    /// The rules whose regex matches `message`.
    #[inline]
    fn matching(&self, message: &str) -> u64 {
        // `is_match` first: it stops at the first match or dead state and can use a literal
        // prefilter; the overlapping search scans to the end of the message byte by byte
        // (~1,000 instructions on a 70-byte message), needed only when something matches.
        if !self.regex.is_match(message) {
            return 0;
        }
        HIT_SCRATCH.with(|scratch| {
            let mut set = scratch.borrow_mut();
            set.clear();
            self.regex
                .which_overlapping_matches(&regex_automata::Input::new(message), &mut set);
            if set.is_empty() {
                return 0;
            }
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
    /// (§2.2–2.3): (one of a non-init container, one of any container). Init containers'
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
pub(crate) struct Searched {
    set: Option<(bool, bool)>,
    /// `None` until searched: a `MessageHits` made per policy and decision, searched or not,
    /// cost every decision 30-70 instructions.
    messages: Option<MessageHits>,
}

/// Per decision, the messages a policy's `RegexHits` matched, in container order: (the
/// container, whether it is an init container, the rules whose regex matches its message).
/// Kept for the first [`HIT_MESSAGES`]; past those a rule's message is found by its own regex.
#[derive(Default)]
struct MessageHits {
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
    fn first(&self, rule: u64, include_init: bool) -> Option<u32> {
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
const HIT_PATTERNS: usize = 64;

thread_local! {
    /// The pattern set a `RegexHits` search fills, one per thread and reused: made on a
    /// thread's first search, not per decision.
    static HIT_SCRATCH: std::cell::RefCell<regex_automata::PatternSet> =
        std::cell::RefCell::new(regex_automata::PatternSet::new(HIT_PATTERNS));
}

/// Per decision, which of a policy's `regex_chunks` were searched, and which matched a
/// non-init message / any message (bit `c` for chunk `c`).
#[derive(Default)]
struct ChunkHits {
    searched: u64,
    plain: u64,
    init: u64,
}

/// Consecutive regex patterns per chunk set (see `regex_chunks`).
const REGEX_CHUNK: usize = 8;

/// Rules with `onExitCodes` on one named container (see `named_exits`).
#[derive(Debug, Clone)]
struct NamedExits {
    slot: usize,
    name: Box<str>,
    /// The rules, and those with operator `In`.
    rules: Box<[u64]>,
    member: Box<[u64]>,
    /// Code → its row in `rows` (the rules listing it), sorted; for codes 0–255 also
    /// `small` (code → row + 1, 0 for none).
    codes: Vec<(i64, u32)>,
    rows: Vec<u64>,
    small: Box<[u32]>,
}

impl NamedExits {
    fn new(slot: usize, name: &str, words: usize) -> NamedExits {
        NamedExits {
            slot,
            name: name.into(),
            rules: vec![0; words].into(),
            member: vec![0; words].into(),
            codes: Vec::new(),
            rows: Vec::new(),
            small: Box::new([]),
        }
    }

    fn add(&mut self, i: usize, codes: &ExitCodes) {
        let words = self.rules.len();
        let (word, mask) = (i / 64, 1u64 << (i % 64));
        self.rules[word] |= mask;
        if codes.operator == Operator::In {
            self.member[word] |= mask;
        }
        for &code in &codes.values {
            let row = match self.codes.iter().find(|(c, _)| *c == code) {
                Some(&(_, row)) => row,
                None => {
                    let row = (self.rows.len() / words) as u32;
                    self.rows.resize(self.rows.len() + words, 0);
                    self.codes.push((code, row));
                    row
                }
            };
            self.rows[row as usize * words + word] |= mask;
        }
    }

    fn finish(mut self) -> NamedExits {
        self.codes.sort_unstable();
        let mut small = vec![0u32; 256];
        for &(code, row) in self.codes.iter().filter(|(c, _)| (0..256).contains(c)) {
            small[code as usize] = row + 1;
        }
        self.small = small.into();
        self
    }

    /// Word `w` of the rules the container's exit `code` rejects (0: no such container or
    /// code 0, which no rule admits; else a code an `In` rule does not list or a code a
    /// `NotIn` rule lists), as `ExitSet::admits` decides for each (§2.3).
    #[inline(always)]
    fn rejects(&self, w: usize, code: i64) -> u64 {
        if code == 0 {
            return self.rules[w];
        }
        let words = self.rules.len();
        let row = match self.small.get(code as usize) {
            Some(&row) if (0..256).contains(&code) => (row as usize).checked_sub(1),
            _ => self
                .codes
                .binary_search_by_key(&code, |(c, _)| *c)
                .ok()
                .map(|at| self.codes[at].1 as usize),
        };
        let listed = row.map_or(0, |row| self.rows[row * words + w]);
        self.rules[w] & ((self.member[w] & !listed) | (!self.member[w] & listed))
    }
}

/// Rules with a literal prefix pattern on one named container (see `prefixes`).
#[derive(Debug, Clone)]
struct SlotPrefixes {
    slot: usize,
    name: Box<str>,
    rules: Box<[u64]>,
    /// (first byte, rules whose prefix starts with it).
    by_byte: Box<[(u8, Box<[u64]>)]>,
    /// Per byte value, its index in `by_byte` + 1, 0 if no prefix starts with it: one load
    /// rather than a binary search per decision.
    first: Box<[u32]>,
}

fn policy_rules_plans(policy: &RetryPolicy) -> Box<[RetryPlan]> {
    policy.rules.iter().map(|r| RetryPlan::new(Some(r), policy)).collect()
}

/// An empty slot of the category table.
const NO_ROW: u32 = u32::MAX;

/// Rules per policy up to which the rejection masks are not used (see `use_masks`).
const MASKED_RULES: usize = 4;

/// Distinct `containerName`s per policy whose lookup in a run is cached for one decision.
const NAME_CACHE: usize = 8;
/// A cache slot not looked up yet; `ABSENT`: the run has no such container.
const UNRESOLVED: u32 = u32::MAX;
const ABSENT: u32 = u32::MAX - 1;

fn compile_rule(rule: &Rule) -> Result<RuleMatcher, String> {
    let boxed = |l: &Vec<String>| l.iter().map(|s| s.as_str().into()).collect::<Box<[Box<str>]>>();
    let conditions = rule.on_conditions.as_ref();
    let oom = conditions.is_some_and(|c| c.contains(&Condition::OOMKilled));
    let pattern = match &rule.on_termination_message {
        Some(p) => Some(Pattern::new(p)?),
        None => None,
    };
    Ok(RuleMatcher {
        category: rule.on_failure_category.is_some(),
        subcategories: rule.on_failure_subcategory.as_ref().map(boxed),
        conditions: conditions.map(|c| c.as_slice().into()),
        pod_conditions: conditions.map_or(0, |c| {
            c.iter()
                .filter(|&&c| c != Condition::OOMKilled)
                .fold(0, |m, &c| m | bit(c))
        }),
        oom,
        exit: rule.on_exit_codes.as_ref().map(|e| {
            let mut codes = e.values.clone();
            codes.sort_unstable();
            codes.dedup();
            ExitSet {
                member_matches: e.operator == Operator::In,
                codes: codes.into(),
            }
        }),
        needs_container: rule.on_exit_codes.is_some() || (pattern.is_some() && rule.container_name.is_some()) || oom,
        pattern,
        container: rule.container_name.as_deref().map(Into::into),
        container_slot: None,
        regex_chunk: None,
        in_regex_hits: false,
        include_init: rule.include_init_containers,
    })
}

/// `a == b` for the short names compared per decision (containers, categories), without a
/// `memcmp` call (whose call and set-up cost more than comparing `main` with `main`, once
/// per policy per decision): the prefilter's word-wise comparison.
#[inline(always)]
fn same(a: &str, b: &str) -> bool {
    super::literals::equal(a.as_bytes(), b.as_bytes())
}

/// The index of the container named `name` in the run.
#[inline(always)]
fn find_container(facts: &RunFacts<'_>, name: &str) -> Option<u32> {
    facts
        .run
        .containers
        .iter()
        .position(|c| same(&c.name, name))
        .map(|i| i as u32)
}

/// [`find_container`] through the per-decision cache slot of a policy's container name.
#[inline(always)]
fn resolve(names: &mut [u32; NAME_CACHE], slot: usize, name: &str, facts: &RunFacts<'_>) -> Option<u32> {
    if names[slot] == UNRESOLVED {
        names[slot] = find_container(facts, name).unwrap_or(ABSENT);
    }
    Some(names[slot]).filter(|&i| i != ABSENT)
}

impl RuleMatcher {
    /// SPEC §2.2: the container the rule's container-level matchers look at.
    fn selected(&self, facts: &RunFacts<'_>, names: &mut [u32; NAME_CACHE]) -> Option<u32> {
        match &self.container {
            Some(name) => match self.container_slot {
                Some(slot) => resolve(names, slot, name, facts),
                None => find_container(facts, name),
            },
            None if self.include_init => facts.first_failed_with_init,
            None => facts.first_failed,
        }
    }

    /// SPEC §2.3 for a candidate rule (its category, if it lists any, already matched).
    /// Cheapest first: subcategory, pod-level conditions (a mask test), then the container
    /// only when a container-level matcher needs it, then exit codes, then the message.
    /// `known_message`: the container whose message the rule's pattern matches first, when
    /// a policy-wide search already found it (a rule of `regex_hits`).
    fn matches(
        &self,
        facts: &RunFacts<'_>,
        names: &mut [u32; NAME_CACHE],
        known_message: Option<u32>,
    ) -> Option<Signal> {
        let run = facts.run;
        if let Some(subs) = &self.subcategories {
            let sub = run.subcategory.as_deref()?;
            if !subs.iter().any(|s| **s == *sub) {
                return None;
            }
        }
        if self.conditions.is_some() && !self.oom && self.pod_conditions & facts.conditions == 0 {
            return None;
        }
        let selected = if self.needs_container {
            self.selected(facts, names)
        } else {
            None
        };
        let condition = match &self.conditions {
            Some(conditions) => Some(*conditions.iter().find(|&&c| match c {
                Condition::OOMKilled => {
                    selected.is_some_and(|i| run.containers[i as usize].reason.as_deref() == Some("OOMKilled"))
                }
                other => facts.conditions & bit(other) != 0,
            })?),
            None => None,
        };
        let exit = match &self.exit {
            Some(set) => {
                let i = selected?;
                if !set.admits(run.containers[i as usize].exit_code) {
                    return None;
                }
                Some(i)
            }
            None => None,
        };
        let message = match &self.pattern {
            Some(_) if known_message.is_some() => known_message,
            Some(re) => {
                let hit = |c: &Container| c.message.as_deref().is_some_and(|m| !m.is_empty() && re.is_match(m));
                let found = if self.container.is_some() {
                    selected.filter(|&i| hit(&run.containers[i as usize]))
                } else {
                    run.containers
                        .iter()
                        .position(|c| (!c.init || self.include_init) && hit(c))
                        .map(|i| i as u32)
                };
                Some(found?)
            }
            None => None,
        };
        Some(Signal::Rule {
            condition: condition.map(|c| (c, selected.filter(|_| c == Condition::OOMKilled))),
            exit,
            message,
            category: self.category.then_some(self.subcategories.is_some()),
        })
    }
}

/// The rejection masks are only a filter: on any policy and any run, the first match with
/// them is the first match of trying every rule in order (`use_masks` forced off). Policies
/// of 5–130 rules (so several 64-bit words) mixing every matcher kind, runs with several
/// containers, init containers and messages.
#[cfg(test)]
mod mask_props {
    use super::*;
    use crate::model::history::Container;
    use crate::model::policy::{Action, ExitCodes, Operator};
    use proptest::prelude::*;

    /// Found by `regex_hits_are_each_regexs_is_match` (saved in proptest-regressions): an
    /// anchored pattern with an optional prefix and a word boundary, on a non-ASCII message.
    /// regex-automata 0.4.18's one-pass engine indexed a capture slot that a search without
    /// captures does not have, and panicked; `regex::RegexSet` does the same. Both the
    /// policy-wide search and the sets of larger policies are [`pattern_set`]s now.
    #[test]
    fn pattern_sets_answer_a_word_boundary_after_an_optional_anchored_prefix() {
        let hits = RegexHits::new(&["^a*\\b"], &[0]).unwrap();
        let set = pattern_set(&["^a*\\b"]).unwrap();
        for (message, matches) in [("é", 1), ("aé", 1), ("-", 0), ("-é", 0)] {
            assert_eq!(hits.matching(message), matches, "{message}");
            assert_eq!(u64::from(set.is_match(message)), matches, "{message}");
            assert_eq!(own_regexes_matching(&["^a*\\b"], message), matches, "{message}");
        }
    }

    fn arb_rule() -> impl Strategy<Value = Rule> {
        let cat = prop::option::of(prop::sample::subsequence(vec!["a", "b", "c"], 1..=2));
        let sub = prop::option::of(prop::sample::select(vec!["x", "y"]));
        let cond = prop::option::of(prop::sample::subsequence(
            vec![Condition::OOMKilled, Condition::Evicted, Condition::Preempted],
            1..=2,
        ));
        let exit = prop::option::of((prop::bool::ANY, prop::collection::vec(0i64..5, 1..3)));
        let pattern = prop::option::of(prop::sample::select(vec![
            "^OOM",
            "^Xid",
            "Xid [0-9]+",
            "M k",
            "(?i)oom",
            "^X",
            "init-fail.*x",
            "O",
            r"\bk$",
            r"^\w+ \d+$",
            "9|oo",
            // Regexes with required literals (the literal prefilter): case-insensitive,
            // alternations, a literal spanning lines.
            "(?i)xid 7",
            r"OOM\s+k|Xid 79",
            r"(?m)^Xid 79\nk",
            r"\bkilled\b",
        ]));
        let container = prop::option::of(prop::sample::select(vec!["main", "side", "i"]));
        (
            cat,
            sub,
            cond,
            exit,
            pattern,
            container,
            prop::bool::ANY,
            prop::bool::ANY,
        )
            .prop_map(|(cat, sub, cond, exit, pattern, container, init, retry)| Rule {
                action: if retry { Action::Retry } else { Action::Fail },
                on_failure_subcategory: sub.filter(|_| cat.is_some()).map(|s| vec![s.to_string()]),
                on_failure_category: cat.map(|c| c.into_iter().map(String::from).collect()),
                on_conditions: cond,
                on_exit_codes: exit.map(|(not_in, values)| ExitCodes {
                    operator: if not_in { Operator::NotIn } else { Operator::In },
                    values,
                }),
                on_termination_message: pattern.map(String::from),
                container_name: container.map(String::from),
                include_init_containers: init,
                ..Rule::default()
            })
    }

    fn arb_run() -> impl Strategy<Value = Run> {
        let container = (
            prop::sample::select(vec!["main", "side", "i", ""]),
            prop::bool::weighted(0.3),
            0i64..5,
            prop::option::of(prop::sample::select(vec!["OOMKilled", "Error"])),
            prop::option::of(prop::sample::select(vec![
                "OOM killed",
                "Xid 79",
                "xOOM k",
                "",
                "oom",
                "init-fail: x",
                "Xid abc",
                "XID 79\nk",
                "a OOM  k",
            ])),
        )
            .prop_map(|(name, init, exit_code, reason, message)| Container {
                name: name.into(),
                init,
                exit_code,
                reason: reason.map(String::from),
                message: message.map(String::from),
            });
        (
            prop::option::of(prop::sample::select(vec!["a", "b", "c", "d"])),
            prop::option::of(prop::sample::select(vec!["x", "y"])),
            prop::sample::subsequence(vec![Condition::Evicted, Condition::Preempted], 0..=2),
            // Up to 6: more messages than `MessageHits` keeps.
            prop::collection::vec(container, 0..7),
        )
            .prop_map(|(category, subcategory, conditions, containers)| Run {
                category: category.map(String::from),
                subcategory: subcategory.map(String::from),
                conditions,
                containers,
                ..Run::default()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn masks_pick_the_rule_trying_every_rule_picks(
            rules in prop::collection::vec(arb_rule(), 5..130),
            runs in prop::collection::vec(arb_run(), 1..8),
        ) {
            let policy = RetryPolicy { name: "p".into(), rules, ..RetryPolicy::default() };
            let masked = CompiledPolicy::new(policy).unwrap();
            prop_assert!(masked.use_masks);
            let mut plain = CompiledPolicy::new(masked.policy.clone()).unwrap();
            plain.use_masks = false;
            for run in &runs {
                let facts = RunFacts::new(run);
                prop_assert_eq!(masked.first_match(&facts, Alone), plain.first_match(&facts, Alone), "run {:?}", run);
            }
        }

        /// One multi-pattern search answers, for every pattern, what that pattern's own
        /// regex (`compile_pattern`, the rule's `Pattern::Regex`) answers with `is_match`:
        /// anchors, word boundaries (Unicode and ASCII), flags, empty matches, alternations,
        /// patterns that match anywhere, on messages with multi-byte characters and lines.
        #[test]
        fn regex_hits_are_each_regexs_is_match(
            patterns in arb_compiling_patterns(),
            messages in prop::collection::vec(arb_message(), 1..8),
        ) {
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            let ids: Vec<usize> = (0..refs.len()).collect();
            // Too large to build together (64 Unicode `\w+`, say) is a real answer: the
            // policy then keeps its pattern sets, which the mask property above covers.
            let hits = RegexHits::new(&refs, &ids);
            prop_assume!(hits.is_some());
            let hits = hits.unwrap();
            for m in &messages {
                let want = own_regexes_matching(&refs, m);
                prop_assert_eq!(hits.matching(m), want, "message {:?}, patterns {:?}", m, refs);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// The literal prefilter never rejects a rule whose regex matches: for every message,
        /// each pattern whose own regex matches it is among the possible ones. (Which rules it
        /// rejects is a matter of speed; `literals::tests` checks it rejects the ones it should.)
        #[test]
        fn literals_keep_every_rule_whose_regex_matches(
            patterns in arb_compiling_patterns(),
            messages in prop::collection::vec(arb_message(), 1..8),
        ) {
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            let ids: Vec<usize> = (0..refs.len()).collect();
            let Some(literals) = Literals::new(&refs, &ids) else {
                // No pattern has a literal: every rule is always possible, nothing to check.
                return Ok(());
            };
            for m in &messages {
                let matching = own_regexes_matching(&refs, m);
                let possible = literals.possible(m);
                prop_assert_eq!(matching & !possible, 0, "message {:?}, patterns {:?}", m, refs);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// The list's one search (`SharedRegexes`) answers, for every regex message rule of
        /// every policy it covers, what that rule's own regex (`compile_pattern`) answers with
        /// `is_match` over the messages the rule reads: non-init containers' (`plain`), and
        /// init containers' too when some rule includes them (`any`); and it lists the messages
        /// with a match in container order. The patterns are split over one to three policies;
        /// half the time each is anchored (`^`), which gives the DFA literal runs to skip.
        #[test]
        fn shared_regexes_hit_as_each_regex(
            patterns in arb_compiling_patterns(),
            anchored in prop::bool::ANY,
            parts in 1usize..=3,
            init_rules in prop::collection::vec(prop::bool::ANY, 64),
            messages in prop::collection::vec((prop::bool::ANY, prop::option::of(arb_message())), 0..7),
        ) {
            let patterns: Vec<String> = if anchored {
                patterns.iter().map(|p| format!("^{p}")).collect()
            } else {
                patterns
            };
            let size = patterns.len().div_ceil(parts);
            let compiled = catalog_policies(patterns.chunks(size), &init_rules);
            let list: Vec<&CompiledPolicy> = compiled.iter().collect();
            let run = run_of_messages(&messages);
            let Some(shared) = SharedRegexes::new(&list) else {
                // No policy has a regex rule the search can take (all literal, or all able to
                // match the empty string): nothing to check.
                return Ok(());
            };
            let mut hits = Hits::NONE;
            if !shared.search(&run, &mut hits) {
                // The DFA gave up (a Unicode `\b` next to a non-ASCII byte) or is too large:
                // the policies then answer by their own path, which the properties above cover.
                return Ok(());
            }
            let with_init = list
                .iter()
                .enumerate()
                .filter(|(p, _)| shared.slot(*p).is_some())
                .any(|(_, cp)| cp.shared_regex_rules().iter().any(|&(_, init, _)| init));
            let searched: Vec<(u32, bool, &str)> = run
                .containers
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.init || with_init)
                .filter_map(|(i, c)| Some((i as u32, c.init, c.message.as_deref().filter(|m| !m.is_empty())?)))
                .collect();
            let mut kept = vec![Vec::new(); SLOTS];
            for (p, cp) in list.iter().enumerate() {
                let Some(slot) = shared.slot(p) else { continue };
                let rules = cp.shared_regex_rules();
                let own = |m: &str| {
                    rules
                        .iter()
                        .filter(|(_, _, pattern)| compile_pattern(pattern).unwrap().is_match(m))
                        .fold(0u64, |out, &(i, _, _)| out | 1 << i)
                };
                let (mut plain, mut any) = (0, 0);
                for &(i, init, m) in &searched {
                    let bits = own(m);
                    if init { any |= bits } else { plain |= bits }
                    kept[slot].push((i, init, bits));
                }
                prop_assert_eq!(hits.plain[slot], plain, "policy {}, run {:?}", p, run);
                prop_assert_eq!(hits.any[slot], plain | any, "policy {}, run {:?}", p, run);
            }
            // The messages with a match for some policy, in container order.
            let expected: Vec<(u32, bool, [u64; SLOTS])> = searched
                .iter()
                .enumerate()
                .map(|(k, &(i, init, _))| {
                    let mut bits = [0u64; SLOTS];
                    for (slot, found) in kept.iter().enumerate() {
                        if let Some(&(_, _, b)) = found.get(k) {
                            bits[slot] = b;
                        }
                    }
                    (i, init, bits)
                })
                .filter(|(_, _, bits)| *bits != [0; SLOTS])
                .collect();
            prop_assert_eq!(hits.len, expected.len(), "run {:?}", run);
            let n = expected.len().min(KEPT_MESSAGES);
            prop_assert_eq!(&hits.at[..n], &expected[..n], "run {:?}", run);
        }

        /// Policies of regex message rules only (`pure_regex`, their candidates straight from
        /// the shared search): the first match, and the message its signal names, are the
        /// ones each policy finds on its own.
        #[test]
        fn pure_regex_policies_pick_what_each_policy_picks(
            patterns in arb_compiling_patterns(),
            anchored in prop::bool::ANY,
            parts in 1usize..=3,
            init_rules in prop::collection::vec(prop::bool::ANY, 64),
            messages in prop::collection::vec((prop::bool::ANY, prop::option::of(arb_message())), 0..7),
        ) {
            // Real regexes only (a literal pattern is a `Pattern::Contains`, not in the search).
            let patterns: Vec<String> = patterns
                .iter()
                .map(|p| if anchored { format!("^{p}") } else { p.clone() })
                .filter(|p| matches!(Pattern::new(p), Ok(Pattern::Regex(_))))
                // and none that can match the empty string (it keeps its policy's own path).
                .filter(|p| super::super::shared::shareable(p))
                .collect();
            prop_assume!(patterns.len() > MASKED_RULES);
            let compiled = catalog_policies(patterns.chunks(patterns.len().div_ceil(parts).max(MASKED_RULES + 1)), &init_rules);
            let list: Vec<&CompiledPolicy> = compiled.iter().collect();
            let run = run_of_messages(&messages);
            prop_assert!(compiled[0].pure_regex);
            let shared = SharedRegexes::new(&list);
            prop_assert!(shared.as_ref().is_some_and(|s| s.slot(0).is_some()));
            let facts = RunFacts::new(&run);
            let first = |shared: Option<&SharedRegexes>| {
                let mut search = shared.map(SharedSearch::new);
                list.iter().enumerate().find_map(|(p, cp)| {
                    match (search.as_mut(), shared.and_then(|s| s.slot(p))) {
                        (Some(search), Some(slot)) => cp.first_match(&facts, Covered { search, slot }),
                        _ => cp.first_match(&facts, Alone),
                    }
                    .map(|(r, signal)| (p, r, signal))
                })
            };
            prop_assert_eq!(first(shared.as_ref()), first(None), "run {:?}", run);
        }

        /// The whole first match across a list of policies is the same with the list's shared
        /// search and with each policy's own (literal scan, multi-pattern search, a rule's own
        /// regex): the rule, and the message its signal names.
        #[test]
        fn shared_regexes_pick_what_each_policy_picks(
            policies in prop::collection::vec(prop::collection::vec(arb_rule(), 5..40), 1..4),
            anchored in prop::bool::ANY,
            runs in prop::collection::vec(arb_run(), 1..8),
        ) {
            let compiled: Vec<CompiledPolicy> = policies
                .into_iter()
                .enumerate()
                .map(|(k, mut rules)| {
                    // Half the time every pattern anchored, so that the DFA covers the policies.
                    for r in rules.iter_mut().filter(|_| anchored) {
                        r.on_termination_message =
                            r.on_termination_message.take().map(|p| if p.starts_with('^') { p } else { format!("^{p}") });
                    }
                    CompiledPolicy::new(RetryPolicy { name: format!("p{k}"), rules, ..RetryPolicy::default() }).unwrap()
                })
                .collect();
            let list: Vec<&CompiledPolicy> = compiled.iter().collect();
            let shared = SharedRegexes::new(&list);
            let first = |shared: Option<&SharedRegexes>, facts: &RunFacts<'_>| {
                let mut search = shared.map(SharedSearch::new);
                list.iter().enumerate().find_map(|(p, cp)| {
                    match (search.as_mut(), shared.and_then(|s| s.slot(p))) {
                        (Some(search), Some(slot)) => cp.first_match(facts, Covered { search, slot }),
                        _ => cp.first_match(facts, Alone),
                    }
                    .map(|(r, signal)| (p, r, signal))
                })
            };
            for run in &runs {
                let facts = RunFacts::new(run);
                prop_assert_eq!(first(shared.as_ref(), &facts), first(None, &facts), "run {:?}", run);
            }
        }
    }

    /// 1–`HIT_PATTERNS` patterns, those that compile as a rule's regex (at least one): the
    /// regex properties above take them.
    /// One policy per chunk of `patterns` (`p0`, `p1`…), each pattern a retrying message
    /// rule, `includeInitContainers` from `init_rules` by its place in its chunk.
    fn catalog_policies<'a>(chunks: impl Iterator<Item = &'a [String]>, init_rules: &[bool]) -> Vec<CompiledPolicy> {
        chunks
            .enumerate()
            .map(|(k, chunk)| {
                let rules = chunk
                    .iter()
                    .enumerate()
                    .map(|(i, p)| Rule {
                        action: Action::Retry,
                        on_termination_message: Some(p.clone()),
                        include_init_containers: init_rules[i],
                        ..Rule::default()
                    })
                    .collect();
                CompiledPolicy::new(RetryPolicy {
                    name: format!("p{k}"),
                    rules,
                    ..RetryPolicy::default()
                })
                .unwrap()
            })
            .collect()
    }

    /// A run with one container per message (`c0`, `c1`…): (init container, message).
    fn run_of_messages(messages: &[(bool, Option<String>)]) -> Run {
        Run {
            containers: messages
                .iter()
                .enumerate()
                .map(|(i, (init, m))| Container {
                    name: format!("c{i}"),
                    init: *init,
                    message: m.clone(),
                    ..Container::default()
                })
                .collect(),
            ..Run::default()
        }
    }

    fn arb_compiling_patterns() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(arb_pattern(), 1..=HIT_PATTERNS)
            .prop_map(|ps| {
                ps.into_iter()
                    .filter(|p| compile_pattern(p).is_ok())
                    .collect::<Vec<_>>()
            })
            .prop_filter("no pattern compiles", |ps| !ps.is_empty())
    }

    /// The patterns whose own regex (`compile_pattern`, a rule's `Pattern::Regex`) matches
    /// `m`, as a mask by position: what both properties above compare with.
    fn own_regexes_matching(patterns: &[&str], m: &str) -> u64 {
        patterns
            .iter()
            .enumerate()
            .filter(|(_, p)| compile_pattern(p).unwrap().is_match(m))
            .fold(0u64, |out, (k, _)| out | 1 << k)
    }

    /// A message from pieces: random characters (ASCII, multi-byte, newlines) and the
    /// literals `arb_pattern` uses, in other cases too, so literal patterns match often.
    fn arb_message() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-zA-Z0-9 :._é∂αΣ\n-]{0,6}",
            prop::sample::select(vec![
                "Xid ",
                "XID ",
                "xid",
                "rule 1:",
                "RULE 1:",
                "ECC error",
                "ecc ERROR",
                "k\nx",
                "K\nX",
                "ÉC",
                "éc",
                "ok",
                "ſ",
                "\u{212A}",
                "policy 2",
            ])
            .prop_map(String::from),
        ];
        prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
    }

    /// A pattern from pieces: an optional anchor or flag, one to three atoms, an optional end.
    fn arb_pattern() -> impl Strategy<Value = String> {
        let start = prop::sample::select(vec![
            "",
            "",
            "^",
            r"\A",
            "(?m)^",
            "(?i)",
            r"\b",
            r"(?-u:\b)",
            r"\B",
            "(?s)",
        ]);
        let atom = prop::sample::select(vec![
            "Xid",
            "[0-9]+",
            r"\d+",
            r"\w+",
            r"\W",
            "a*",
            "",
            ".",
            ".*",
            "x|y",
            "(oo|O)",
            "é",
            r"\p{Greek}",
            r"(?-u:\B)",
            r"\s",
            "[^a]",
            "b?",
            "(?i:s)",
            "Σ",
            "-",
            // Literals for the prefilter (`literals::required`): long enough to be searched,
            // case variants, non-ASCII letters, a newline inside.
            "Xid ",
            "rule 1:",
            "(?i:ecc error)",
            "[Xx]id",
            "k\nx",
            "(?i)éc",
            "ok|Xid ",
        ]);
        let end = prop::sample::select(vec!["", "", "$", r"\z", "(?m)$", r"\b", r"\B"]);
        (start, prop::collection::vec(atom, 1..=3), end).prop_map(|(s, atoms, e)| format!("{s}{}{e}", atoms.concat()))
    }
}
