//! [`CompiledPolicy`]: one policy with its rules compiled once into matcher tables
//! (docs/engines.md), in named steps: each rule's matchers (`rule`), the rejection masks
//! (`masks`), the policy's own search over its regex message rules (`message_regexes`) and
//! each rule's retry plan (`retry_plan`).
//!
//! Owns: the compiled policy and its compilation. Must not: match a run (the first match is
//! `first_match`'s) or know the list a job gets (`policy_list`, `list_dfa`).

use crate::model::policy::RetryPolicy;
use crate::model::quantity::parse_quantity;

use super::masks::{CategoryIndex, ConditionMasks, ExitMasks, NamedExits, SlotPrefixes};
use super::message_regexes::MessageRegexes;
use super::retry_plan::{rule_plans, RetryPlan};
use super::rule::{compile_rule, RuleMatcher};
use super::run_facts::NAME_CACHE;

/// A policy with its rules compiled once into matcher tables.
#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    pub policy: RetryPolicy,
    pub(super) rules: Box<[RuleMatcher]>,
    /// Which rules are candidates for a run's category; its rules-without-category bitset
    /// gives the policy's number of bitset words ([`CompiledPolicy::words`]).
    pub(super) categories: CategoryIndex,
    /// The rejection masks: a run without any of a rule's pod conditions, a selected
    /// container's exit code that a rule does not admit, a named container's exit code or
    /// message first byte.
    pub(super) conditions: ConditionMasks,
    pub(super) exits: ExitMasks,
    pub(super) named_exits: Box<[NamedExits]>,
    pub(super) prefixes: Box<[SlotPrefixes]>,
    /// More than [`MASKED_RULES`] rules: worth the per-decision set-up of the rejection
    /// masks above. With fewer, trying the category candidates directly is cheaper (measured
    /// on `scripts/bench-simulate.sh`'s policies of 1–3 rules: the masks made a decision
    /// slower there).
    pub(super) use_masks: bool,
    /// With masks and one word of rules, every rule that can match is a regex message rule
    /// without `containerName` and without any other matcher (an Xid catalog): its candidates
    /// are exactly the rules a multi-pattern search says match, with no mask to compute.
    pub(super) pure_regex: bool,
    /// The regex message rules without `containerName` and the policy's own search over them.
    pub(super) regexes: MessageRegexes,
    /// `mutate.resources.memory.static` in bytes, per rule.
    pub(crate) statics: Vec<Option<f64>>,
    /// What a retry under each rule takes, and under the default action (`default_plan`).
    pub(super) plans: Box<[RetryPlan]>,
    pub(super) default_plan: RetryPlan,
}

/// Rules per policy up to which the rejection masks are not used (see `use_masks`).
pub(super) const MASKED_RULES: usize = 4;

impl CompiledPolicy {
    /// Fails only on what validation already rejects (a bad pattern or quantity); callers
    /// validate first, so the error is a safety net, not the user-facing report.
    pub fn new(policy: RetryPolicy) -> Result<CompiledPolicy, String> {
        let words = policy.rules.len().div_ceil(64).max(1);
        let CompiledRules {
            mut matchers,
            names,
            statics,
        } = compile_rules(&policy)?;
        let use_masks = policy.rules.len() > MASKED_RULES;
        let regexes = MessageRegexes::new(&policy.rules, &mut matchers, words);
        let pure_regex = words == 1 && use_masks && only_regex_rules(&policy, &regexes);
        Ok(CompiledPolicy {
            categories: CategoryIndex::new(&policy.rules, words),
            conditions: ConditionMasks::new(&policy.rules, words),
            exits: ExitMasks::new(&policy.rules, words),
            named_exits: NamedExits::new(&policy.rules, &matchers, &names, words),
            prefixes: SlotPrefixes::new(&matchers, &names, words),
            use_masks,
            pure_regex,
            regexes,
            statics,
            plans: rule_plans(&policy),
            default_plan: RetryPlan::new(None, &policy),
            rules: matchers.into(),
            policy,
        })
    }

    pub fn name(&self) -> &str {
        &self.policy.name
    }

    /// Words of 64 rules in the policy's bitsets.
    #[inline(always)]
    pub(super) fn words(&self) -> usize {
        self.categories.uncategorized.len()
    }

    /// The regex message rules without `containerName` of a policy of at most 64 rules, the
    /// ones a list's `SharedRegexes` may search for it: (rule, `includeInitContainers`,
    /// pattern), in rule order. Empty for a larger policy (it keeps its pattern sets), and for
    /// one of at most [`MASKED_RULES`] rules (it tries its rules directly).
    pub(crate) fn shared_regex_rules(&self) -> Vec<(usize, bool, &str)> {
        if self.words() != 1 || !self.use_masks {
            return Vec::new();
        }
        let [plain, init] = self.regexes.rules(0);
        let rules = plain | init;
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
}

/// A policy's rules compiled one by one: their matchers, the distinct `containerName`s they
/// name in the order first named (the first [`NAME_CACHE`] get a slot in the per-decision
/// cache of resolved names), and each rule's `mutate.resources.memory.static` in bytes.
struct CompiledRules<'p> {
    matchers: Vec<RuleMatcher>,
    names: Vec<&'p str>,
    statics: Vec<Option<f64>>,
}

/// Each rule of `policy` compiled, in rule order; the first error names its rule.
fn compile_rules(policy: &RetryPolicy) -> Result<CompiledRules<'_>, String> {
    let mut matchers = Vec::with_capacity(policy.rules.len());
    let mut names: Vec<&str> = Vec::new();
    let mut statics = Vec::with_capacity(policy.rules.len());
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
        matchers.push(matcher);
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
    }
    Ok(CompiledRules {
        matchers,
        names,
        statics,
    })
}

/// Every rule of a policy of one word that can match is a regex message rule without
/// `containerName` and without any other matcher (see `pure_regex`); there is one at least.
fn only_regex_rules(policy: &RetryPolicy, regexes: &MessageRegexes) -> bool {
    let [plain, init] = regexes.rules(0);
    let regex_only = plain | init;
    regex_only != 0
        && policy.rules.iter().enumerate().all(|(i, r)| {
            !r.has_matcher()
                || (regex_only & (1u64 << i) != 0
                    && r.on_conditions.is_none()
                    && r.on_exit_codes.is_none()
                    && r.on_failure_category.is_none()
                    && r.on_failure_subcategory.is_none())
        })
}
