//! Policies compiled once into matcher tables (docs/engines.md), read by both engines: the
//! design engine matches with them, the upstream engine reads the policy and its memory bumps.
//!
//! Owns: [`CompiledPolicy`] (`compiled_policy`), built from a
//! [`RetryPolicy`](crate::model::policy::RetryPolicy) in named steps — each rule's
//! matchers (`rule`), the rejection masks (`masks`: category index, conditions, exit codes,
//! named containers' exit codes and message prefixes), the policy's own search over its regex
//! message rules (`message_regexes`, with the literal prefilter of `regex_prefilter`), and
//! each rule's retry plan (`retry_plan`) — and the first match over one policy
//! (`first_match`). The list a job gets ([`Policies`], `policy_list`) adds one search of a
//! run's messages for the regex message rules of all its policies, over the DFA of
//! `list_dfa` ([`SharedRegexes`]; what a search found is `hits`). What a match saw is a [`Signal`] (`signal`), read from the
//! run's facts ([`RunFacts`], `run_facts`); a rule's message pattern is a [`Pattern`]
//! (`pattern`: a literal test, the `regex` crate's `Regex`, or for a pattern whose byte
//! automaton would be large a program over characters, `char_program`).
//!
//! Must not: allocate while matching (the evaluator's budget is zero heap allocations per
//! decision, `tests/alloc.rs`), do I/O, or change the order in which rules are tried: the
//! masks only skip rules that cannot match, and candidates are visited in rule order, so the
//! first matching rule still wins. This file only declares the parts and re-exports what the
//! engine uses; the parts import each other, never this file.

mod char_program;
mod compiled_policy;
mod first_match;
mod hits;
mod list_dfa;
mod masks;
mod message_regexes;
mod pattern;
mod policy_list;
mod regex_prefilter;
mod retry_plan;
mod rule;
mod run_facts;
mod signal;
#[cfg(test)]
mod tests;

pub use compiled_policy::CompiledPolicy;
pub use list_dfa::SharedRegexes;
pub(crate) use pattern::{Pattern, PatternPool};
pub use policy_list::Policies;
pub(crate) use regex_prefilter::required_of_all;
pub(crate) use retry_plan::RetryPlan;
pub(crate) use run_facts::RunFacts;
pub use signal::Signal;
