//! One rule's matchers (docs/engines.md), compiled into the shapes a decision reads, and the
//! test of one candidate rule against a run.
//!
//! Owns: [`RuleMatcher`] (subcategories, conditions as a mask, the sorted exit-code set, the
//! message [`Pattern`], the container the rule selects) and [`RuleMatcher::matches`], which
//! tries them cheapest first and returns the [`Signal`]. Must not: allocate, or decide which
//! rules are candidates: categories and the policy's rejection masks do that before a rule is
//! tried (`super::masks`).

use crate::model::failure_history::Container;
use crate::model::policy::{Condition, Operator, Rule};

use super::pattern::Pattern;
use super::run_facts::{bit, find_container, resolve, RunFacts, NAME_CACHE};
use super::signal::Signal;

/// `onExitCodes`, with the codes sorted for a binary search.
#[derive(Debug, Clone)]
struct ExitSet {
    member_matches: bool,
    codes: Box<[i64]>,
}

impl ExitSet {
    /// docs/engines.md: exit code 0 never matches either operator.
    fn admits(&self, code: i64) -> bool {
        code != 0 && self.codes.binary_search(&code).is_ok() == self.member_matches
    }
}

/// One rule's matchers, in the shapes the search reads. Categories are not here: they
/// decide which rules are candidates at all (`CompiledPolicy::candidates`).
#[derive(Debug, Clone)]
pub(super) struct RuleMatcher {
    /// The rule lists categories (it is a candidate only through the category index).
    pub(super) category: bool,
    subcategories: Option<Box<[Box<str>]>>,
    /// `onConditions` in the order written: the first one that holds is the one reported.
    conditions: Option<Box<[Condition]>>,
    /// The pod-level conditions listed (OOMKilled excluded: it is a container's).
    pod_conditions: u8,
    oom: bool,
    exit: Option<ExitSet>,
    pub(super) pattern: Option<Pattern>,
    container: Option<Box<str>>,
    /// The container name's slot in the per-decision cache of resolved names (the first
    /// [`NAME_CACHE`] distinct names of the policy).
    pub(super) container_slot: Option<usize>,
    /// For a regex rule in the policy's pattern set: its chunk in `MessageRegexes::chunks`.
    pub(super) regex_chunk: Option<u8>,
    /// A regex message rule without `containerName` in a policy of at most 64 rules: a
    /// policy-wide search (`MessageRegexes::hits`, or the list's `SharedRegexes`) may know its message.
    pub(super) in_regex_hits: bool,
    pub(super) include_init: bool,
    /// A container-level matcher reads the selected container.
    needs_container: bool,
}

pub(super) fn compile_rule(rule: &Rule) -> Result<RuleMatcher, String> {
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

impl RuleMatcher {
    /// docs/engines.md: the container the rule's container-level matchers look at.
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

    /// docs/engines.md for a candidate rule (its category, if it lists any, already matched).
    /// Cheapest first: subcategory, pod-level conditions (a mask test), then the container
    /// only when a container-level matcher needs it, then exit codes, then the message.
    /// `known_message`: the container whose message the rule's pattern matches first, when
    /// a policy-wide search already found it (a rule of `MessageRegexes::hits`).
    pub(super) fn matches(
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
