//! Today's policy in the proposal (docs/suggest.md "Today's policy is the starting point"):
//! the baseline's rules the proposal keeps after its own, each written with what it takes
//! today (its effective limit, backoff and anti-affinity), the runs each decided, and the
//! `mutate` a proposed Retry rule carries from the rule that decided its signature today.
//!
//! Owns: which of today's rules are kept and how each is written out. Pure: it reads the
//! baseline's policies and pass 1's counts of the baseline's decisions; it never replays,
//! and writes no document (that is `documents`).

use std::collections::HashMap;

use crate::engine::EngineKind;
use crate::model::policy::{Action, Backoff, Mutation, RetryPolicy, Rule};
use crate::model::validate::category_problem;

use super::exits::{unsplit, ExitCodes};
use super::pattern::pattern;
use super::propose::Proposed;
use super::stats::{Current, SignatureStats};
use crate::model::signature::Signature;

/// A rule of today's policy, kept in the proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// `POLICY/INDEX`, as the decision records name it.
    pub from: String,
    /// The rule as today's engine applies it: its `retryLimit` (and, design, `backoff` and
    /// `antiAffinity`) written out from its policy (and the global cap) where it has none.
    pub rule: Rule,
    /// Failed runs it decided in the baseline's replay (train jobs).
    pub decided_runs: u64,
    /// A rule before it in the proposal matches every failure it matches: it could never
    /// match, so it is not written, its comment saying so (`validate`'s `shadowed-rule`).
    pub shadowed: bool,
}

/// The rules of `policies` (the baseline's effective list for the proposal's queue: design,
/// every policy of it in order; upstream, the first), each with its runs from `decided`
/// (`POLICY/INDEX` → runs).
pub fn kept(policies: &[&RetryPolicy], engine: EngineKind, global: u32, decided: &HashMap<String, u64>) -> Vec<Kept> {
    let take = match engine {
        EngineKind::Design => policies.len(),
        EngineKind::Upstream => policies.len().min(1),
    };
    let mut out = Vec::new();
    for p in &policies[..take] {
        for (i, r) in p.rules.iter().enumerate() {
            let from = format!("{}/{i}", p.name);
            let mut rule = r.clone();
            if engine == EngineKind::Design {
                // What the design engine resolves at compile time (rule → policy → global),
                // written out so that the rule decides alike in the proposal's policy.
                rule.retry_limit = Some(r.retry_limit.or(p.retry_limit).unwrap_or(global));
                rule.backoff = Backoff {
                    initial_delay: r.backoff.initial_delay.or(p.backoff.initial_delay),
                    max_delay: r.backoff.max_delay.or(p.backoff.max_delay),
                    multiplier: r.backoff.multiplier.or(p.backoff.multiplier),
                    jitter: r.backoff.jitter.or(p.backoff.jitter),
                };
                rule.anti_affinity = r.anti_affinity.or(p.anti_affinity);
            }
            let decided_runs = decided.get(&from).copied().unwrap_or(0);
            out.push(Kept {
                from,
                rule,
                decided_runs,
                shadowed: false,
            });
        }
    }
    out
}

/// Failed runs per deciding rule (`POLICY/INDEX` or `POLICY/default`), over every signature.
pub fn decided_runs<'a>(signatures: impl Iterator<Item = &'a SignatureStats>) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = HashMap::new();
    for s in signatures {
        for (c, n) in &s.current {
            if let Current::Decided { rule, .. } = c {
                *out.entry(rule.clone()).or_default() += n;
            }
        }
    }
    out
}

/// The `mutate` a proposed Retry rule for `stats` carries: that of the kept rule that decided
/// most of its failed runs today (ties: the first in the policy's order); `None` when no kept
/// rule decided any, or that rule has none.
pub fn carried_mutate(stats: &SignatureStats, kept: &[Kept]) -> Option<Mutation> {
    let mut best: Option<(u64, usize)> = None;
    for (k, kr) in kept.iter().enumerate() {
        let runs: u64 = stats
            .current
            .iter()
            .filter(|(c, _)| matches!(c, Current::Decided { rule, .. } if *rule == kr.from))
            .map(|(_, n)| n)
            .sum();
        if runs > 0 && best.is_none_or(|(b, _)| runs > b) {
            best = Some((runs, k));
        }
    }
    best.and_then(|(_, k)| kept[k].rule.mutate.clone())
}

/// Whether raising an upstream policy's `retryLimit` keeps every kept rule's runs decided as
/// today: no kept Retry rule's run reached the limit today (it failed under a Retry rule),
/// else the first such rule (`POLICY/INDEX`), which a higher limit would retry further.
pub fn raise_blocked_by<'a>(kept: &'a [Kept], signatures: &[SignatureStats]) -> Option<&'a str> {
    kept.iter()
        .filter(|k| k.rule.action == Action::Retry)
        .find(|k| {
            signatures.iter().any(|s| {
                s.current.iter().any(|(c, n)| {
                    *n > 0 && matches!(c, Current::Decided { rule, action: Action::Fail } if *rule == k.from)
                })
            })
        })
        .map(|k| k.from.as_str())
}

/// The first kept rule a v1beta1 policy cannot hold, and its fields that have no place there.
pub fn not_upstream(kept: &[Kept]) -> Option<(&str, Vec<String>)> {
    kept.iter().find_map(|k| {
        let alone = RetryPolicy {
            retry_limit: Some(0),
            default_action: Some(Action::Fail),
            rules: vec![k.rule.clone()],
            ..RetryPolicy::default()
        };
        let fields: Vec<String> = alone
            .upstream_incompatibilities()
            .into_iter()
            // The fields it has; a rule without a category is said by the caller's words.
            .filter_map(|f| f.strip_prefix("rules[0].").map(str::to_string))
            .collect();
        (!fields.is_empty()).then_some((k.from.as_str(), fields))
    })
}

/// Where an upstream proposal's rule for a signature matches (docs/suggest.md "Categories"):
/// on the deployed category its runs already have, or on a new category that splits one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Every failed run of the signature is in this category (and subcategory), and no
    /// signature proposed otherwise shares it: the rule matches it, no category is made.
    Reuse {
        category: String,
        subcategory: Option<String>,
    },
    /// A new category; `of`: the deployed category (and subcategory) most of its runs had,
    /// which it splits (its subcategory and hint are copied).
    Split { of: Option<(String, Option<String>)> },
    /// A new category of its own exit code: an `onExitCodes` rule with `containerName`,
    /// before the other new categories, which takes its runs from the other signatures of
    /// its message (the code is its alone in the container, every queue's failed runs).
    Exit {
        container: String,
        code: i64,
        of: Option<(String, Option<String>)>,
    },
}

/// What today's policy does with a signature: the action of the rule (or default) that
/// decided most of its failed runs, Retry when it retried any of them (a Retry rule's last
/// run fails at its limit); `None` when nothing decided any.
fn today_action(s: &SignatureStats) -> Option<Action> {
    let mut by_rule: HashMap<&str, (u64, bool)> = HashMap::new();
    for (c, n) in &s.current {
        if let Current::Decided { rule, action } = c {
            let e = by_rule.entry(rule.as_str()).or_default();
            e.0 += n;
            e.1 |= *action == Action::Retry;
        }
    }
    by_rule
        .into_iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0.cmp(a.0)))
        .map(|(_, (_, retried))| if retried { Action::Retry } else { Action::Fail })
}

/// The signatures that move to a category of their own exit code (docs/suggest.md
/// "Categories"): among the signatures of one message (one `onTerminationMessage` matcher)
/// whose proposals differ, each whose exit code is its alone in its container
/// ([`unsplit`]) and whose proposal differs from what today's policy does with it; the
/// others keep the message's category. Keyed by the signature, with its container and code.
fn exit_splits<'a>(
    rules: &'a [Proposed],
    by_text: &HashMap<&str, &SignatureStats>,
    exits: &ExitCodes,
) -> HashMap<&'a str, (String, i64)> {
    let mut groups: HashMap<(&str, String), Vec<&Proposed>> = HashMap::new();
    for r in rules {
        if let Signature::Container { name, template, .. } = &r.signature {
            if !template.is_empty() {
                groups
                    .entry((name.as_str(), pattern(template, r.cut)))
                    .or_default()
                    .push(r);
            }
        }
    }
    let mut out = HashMap::new();
    for group in groups.values() {
        if group.iter().all(|r| r.action == group[0].action) {
            continue;
        }
        for r in group {
            let Signature::Container {
                exit: Some(code), name, ..
            } = &r.signature
            else {
                continue;
            };
            let today = by_text.get(r.text.as_str()).and_then(|s| today_action(s));
            if today != Some(r.action) && unsplit(&r.signature, &r.text, exits).is_none() {
                out.insert(r.text.as_str(), (name.clone(), *code));
            }
        }
    }
    out
}

/// A `seen` key (`C` or `C/S`) as its category and subcategory; `None` for `none`.
fn label(key: &str) -> Option<(&str, Option<&str>)> {
    if key == super::stats::NO_CATEGORY {
        return None;
    }
    Some(match key.split_once('/') {
        Some((c, s)) => (c, Some(s)),
        None => (key, None),
    })
}

/// The place of each rule of `rules` (upstream), from the categories the baseline saw
/// (`SignatureStats::seen`) of `signatures`, every signature learned. Signatures proposing
/// alike (action and limit) may share a category; a signature without a rule of its own
/// (decided as today) proposes something else than any rule.
pub fn places(rules: &[Proposed], signatures: &[SignatureStats], exits: &ExitCodes) -> Vec<Place> {
    let by_text: HashMap<&str, &SignatureStats> = signatures.iter().map(|s| (s.text.as_str(), s)).collect();
    let moved = exit_splits(rules, &by_text, exits);
    let proposal: HashMap<&str, (Action, Option<u32>)> =
        rules.iter().map(|r| (r.text.as_str(), (r.action, r.limit))).collect();
    rules
        .iter()
        .map(|r| {
            let Some(s) = by_text.get(r.text.as_str()) else {
                return Place::Split { of: None };
            };
            let top = s
                .seen
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .and_then(|(k, _)| label(k))
                .map(|(c, sub)| (c.to_string(), sub.map(str::to_string)));
            if let Some((container, code)) = moved.get(r.text.as_str()) {
                return Place::Exit {
                    container: container.clone(),
                    code: *code,
                    of: top,
                };
            }
            let (Some((c, sub)), 1) = (&top, s.seen.len()) else {
                return Place::Split { of: top };
            };
            // A category a v1beta1 rule cannot name (`validate` refuses `onCategory: gpu
            // error`, which the categorizer accepts): a new category, named as ours are.
            let writable = |n: &str| category_problem(n).is_none();
            if !writable(c) || sub.as_deref().is_some_and(|s| !writable(s)) {
                return Place::Split { of: top };
            }
            // Runs a rule on `c` (and `sub`) would match: those in `c/sub`, or, without a
            // subcategory, every run of `c`; a signature moved to its exit code's category
            // has none there.
            let shares = |t: &SignatureStats| {
                !moved.contains_key(t.text.as_str())
                    && t.seen
                        .keys()
                        .filter_map(|k| label(k))
                        .any(|(tc, ts)| tc == c && (sub.is_none() || ts == sub.as_deref()))
            };
            let mine = (r.action, r.limit);
            let conflict = signatures
                .iter()
                .filter(|t| t.text != s.text && shares(t))
                .any(|t| proposal.get(t.text.as_str()) != Some(&mine));
            if conflict {
                Place::Split { of: top }
            } else {
                Place::Reuse {
                    category: c.clone(),
                    subcategory: sub.clone(),
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::{AffinityMutation, AntiAffinityMode};

    fn policy(name: &str, limit: Option<u32>, rules: Vec<Rule>) -> RetryPolicy {
        RetryPolicy {
            name: name.into(),
            retry_limit: limit,
            rules,
            ..RetryPolicy::default()
        }
    }

    fn decided(stats: &mut SignatureStats, rule: &str, action: Action, n: u64) {
        stats.current.insert(
            Current::Decided {
                rule: rule.into(),
                action,
            },
            n,
        );
    }

    #[test]
    fn design_rules_are_written_with_their_effective_limit_and_settings() {
        let mut p = policy(
            "a",
            Some(3),
            vec![
                Rule {
                    action: Action::Retry,
                    ..Rule::default()
                },
                Rule {
                    action: Action::Retry,
                    retry_limit: Some(1),
                    ..Rule::default()
                },
            ],
        );
        p.anti_affinity = Some(AntiAffinityMode::Node);
        let q = policy(
            "b",
            None,
            vec![Rule {
                action: Action::Fail,
                ..Rule::default()
            }],
        );
        let decided: HashMap<String, u64> = [("a/1".to_string(), 4)].into_iter().collect();
        let k = kept(&[&p, &q], EngineKind::Design, 20, &decided);
        let limits: Vec<(String, Option<u32>, u64)> = k
            .iter()
            .map(|k| (k.from.clone(), k.rule.retry_limit, k.decided_runs))
            .collect();
        assert_eq!(
            limits,
            vec![
                ("a/0".into(), Some(3), 0),
                ("a/1".into(), Some(1), 4),
                ("b/0".into(), Some(20), 0)
            ]
        );
        assert_eq!(k[0].rule.anti_affinity, Some(AntiAffinityMode::Node));
        // Upstream: the first policy only, as written (its one limit is the policy's).
        let k = kept(&[&p, &q], EngineKind::Upstream, 20, &decided);
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].rule.retry_limit, None);
    }

    #[test]
    fn a_retry_carries_the_mutate_of_the_rule_that_decided_most_of_its_runs() {
        let bump = Mutation {
            affinity: Some(AffinityMutation { avoid_same_node: true }),
            resources: None,
        };
        let p = policy(
            "a",
            Some(3),
            vec![
                Rule {
                    action: Action::Retry,
                    ..Rule::default()
                },
                Rule {
                    action: Action::Retry,
                    mutate: Some(bump.clone()),
                    ..Rule::default()
                },
            ],
        );
        let k = kept(&[&p], EngineKind::Design, 20, &HashMap::new());
        let mut s = SignatureStats::default();
        decided(&mut s, "a/0", Action::Retry, 1);
        decided(&mut s, "a/1", Action::Retry, 2);
        decided(&mut s, "a/1", Action::Fail, 1);
        assert_eq!(carried_mutate(&s, &k), Some(bump));
        // A tie goes to the first in order (which has none).
        decided(&mut s, "a/0", Action::Retry, 3);
        assert_eq!(carried_mutate(&s, &k), None);
        assert_eq!(raise_blocked_by(&k, std::slice::from_ref(&s)), Some("a/1"));
        assert_eq!(raise_blocked_by(&k[..1], std::slice::from_ref(&s)), None);
    }

    #[test]
    fn a_deployed_category_is_reused_only_where_it_separates_the_signature() {
        let stats = |text: &str, seen: &[(&str, u64)]| SignatureStats {
            text: text.into(),
            seen: seen.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            ..SignatureStats::default()
        };
        let rule = |text: &str, action: Action, limit: Option<u32>| {
            Proposed::for_test(text, crate::model::signature::Signature::Unknown, action, limit)
        };
        let signatures = [
            stats("oom@main", &[("oom/kernel", 30)]),
            stats("oom@loader", &[("oom/kernel", 30)]),
            stats("exit:3@main", &[("app", 20)]),
            stats("exit:4@main", &[("app/x", 2)]),
            stats("exit:5@main", &[("cuda", 3), ("none", 1)]),
        ];
        let rules = [
            rule("oom@main", Action::Retry, Some(1)),
            rule("oom@loader", Action::Fail, None),
            rule("exit:3@main", Action::Retry, Some(2)),
            rule("exit:5@main", Action::Retry, Some(2)),
        ];
        let kernel = Some(("oom".to_string(), Some("kernel".to_string())));
        let none = ExitCodes::default();
        assert_eq!(
            places(&rules, &signatures, &none),
            vec![
                // Proposed apart on one category: each splits it.
                Place::Split { of: kernel.clone() },
                Place::Split { of: kernel },
                // A rule on bare `app` would also take `exit:4@main`'s runs (`app/x`), which
                // is decided as today.
                Place::Split {
                    of: Some(("app".to_string(), None))
                },
                // Runs in two categories: no one category holds the signature.
                Place::Split {
                    of: Some(("cuda".to_string(), None))
                },
            ]
        );
        // A deployed category no rule can name (`onCategory` takes no blank) is split.
        let blank = [stats("exit:3@main", &[("gpu error/xid", 30)])];
        assert_eq!(
            places(&rules[2..3], &blank, &none),
            vec![Place::Split {
                of: Some(("gpu error".to_string(), Some("xid".to_string())))
            }]
        );
        // Alone on its category, the rule matches it.
        assert_eq!(
            places(&rules[..1], &signatures[..1], &none),
            vec![Place::Reuse {
                category: "oom".into(),
                subcategory: Some("kernel".into())
            }]
        );
        // Two signatures proposing alike share it.
        let alike = [
            rule("oom@main", Action::Retry, Some(1)),
            rule("oom@loader", Action::Retry, Some(1)),
        ];
        assert!(places(&alike, &signatures[..2], &none)
            .iter()
            .all(|p| matches!(p, Place::Reuse { category, .. } if category == "oom")));
    }
}
