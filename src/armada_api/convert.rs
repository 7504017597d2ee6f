//! The v1beta1 model ⇄ `api` protobuf messages, both directions, pure.
//!
//! Decisions:
//! - model → protobuf: only what upstream can store. A policy using design-dialect fields
//!   (an unset `retryLimit` included: protobuf would carry it as 0, never retry) is refused
//!   with those fields ([`RetryPolicy::upstream_incompatibilities`], the same list the REST
//!   client refuses by, docs/cli.md).
//! - protobuf → model: enums must be Fail or Retry (upstream's validation refuses
//!   `RETRY_ACTION_UNSPECIFIED` and so do we; a number outside the enum is refused the same
//!   way), and a rule must name a category (upstream: `on_category must be set`). Errors
//!   carry the field paths of the REST JSON (`rules[0].action`).
//! - Queue fields the model does not hold (`resourceLimits`, `resourceLimitsByPriorityClassName`,
//!   `labelsDeprecated`) are returned by name from [`queue_from_proto`]: `serve` refuses
//!   them as its REST does; a reader of stored rows can report them.

use crate::diag::{index, join, Diagnostic};
use crate::model::policy::{AffinityMutation, MemoryBump, Mutation, ResourceMutation, Rule};
use crate::model::queue::{Permission, Subject};
use crate::model::{Action, Queue, RetryPolicy};

use super::api;

// ---------------------------------------------------------------------------------------
// model → protobuf

/// `policy` as upstream's message; `Err` names the fields upstream cannot store.
pub fn policy_to_proto(policy: &RetryPolicy) -> Result<api::RetryPolicy, Vec<String>> {
    let incompatible = policy.upstream_incompatibilities();
    if !incompatible.is_empty() {
        return Err(incompatible);
    }
    Ok(api::RetryPolicy {
        name: policy.name.clone(),
        retry_limit: policy.retry_limit.unwrap_or(0),
        // Set: an unset one is among the incompatibilities refused above.
        default_action: action_number(policy.default_action()),
        rules: policy.rules.iter().map(rule_to_proto).collect(),
    })
}

fn action_number(action: Action) -> i32 {
    match action {
        Action::Fail => api::RetryAction::Fail as i32,
        Action::Retry => api::RetryAction::Retry as i32,
    }
}

/// A rule that passed `upstream_incompatibilities`: one category, at most one subcategory.
fn rule_to_proto(rule: &Rule) -> api::RetryRule {
    let first = |v: &Option<Vec<String>>| v.as_ref().and_then(|v| v.first()).cloned().unwrap_or_default();
    api::RetryRule {
        action: action_number(rule.action),
        on_category: first(&rule.on_failure_category),
        on_subcategory: first(&rule.on_failure_subcategory),
        mutate: rule.mutate.as_ref().map(mutation_to_proto),
    }
}

fn mutation_to_proto(m: &Mutation) -> api::RetryMutation {
    api::RetryMutation {
        affinity: m.affinity.as_ref().map(|a| api::RetryAffinityMutation {
            avoid_same_node: a.avoid_same_node,
        }),
        resources: m.resources.as_ref().map(|r| api::RetryResourceMutation {
            memory: r.memory.as_ref().map(|b| api::RetryResourceBump {
                r#static: b.fixed.clone().unwrap_or_default(),
                factor: b.factor.unwrap_or(0.0),
            }),
        }),
    }
}

pub fn queue_to_proto(queue: &Queue) -> api::Queue {
    api::Queue {
        name: queue.name.clone(),
        priority_factor: queue.priority_factor,
        user_owners: queue.user_owners.clone(),
        group_owners: queue.group_owners.clone(),
        permissions: queue
            .permissions
            .iter()
            .map(|p| api::queue::Permissions {
                subjects: p
                    .subjects
                    .iter()
                    .map(|s| api::queue::permissions::Subject {
                        kind: s.kind.clone(),
                        name: s.name.clone(),
                    })
                    .collect(),
                verbs: p.verbs.clone(),
            })
            .collect(),
        cordoned: queue.cordoned,
        labels: queue.labels.clone(),
        retry_policies: queue.retry_policies.clone(),
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------------------
// protobuf → model

/// Upstream's message as a policy (v1beta1: the limit is always set). Semantic validation
/// is not run here: call `model::validate::validate_policy` on the result.
pub fn policy_from_proto(p: &api::RetryPolicy) -> Result<RetryPolicy, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let default_action = action(p.default_action, "defaultAction", &mut errors);
    let mut rules = Vec::with_capacity(p.rules.len());
    for (i, r) in p.rules.iter().enumerate() {
        let path = index("rules", i);
        let action = action(r.action, &join(&path, "action"), &mut errors);
        if r.on_category.is_empty() {
            errors.push(Diagnostic::error(
                "missing-field",
                join(&path, "onCategory"),
                "must be set: an Armada API rule matches on a failure category",
            ));
        }
        let some = |s: &str| (!s.is_empty()).then(|| vec![s.to_string()]);
        rules.push(Rule {
            action,
            on_failure_category: some(&r.on_category),
            on_failure_subcategory: some(&r.on_subcategory),
            mutate: r.mutate.as_ref().map(mutation_from_proto),
            ..Rule::default()
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(RetryPolicy {
        name: p.name.clone(),
        retry_limit: Some(p.retry_limit),
        default_action: Some(default_action),
        rules,
        ..RetryPolicy::default()
    })
}

fn action(number: i32, path: &str, errors: &mut Vec<Diagnostic>) -> Action {
    match api::RetryAction::try_from(number) {
        Ok(api::RetryAction::Fail) => Action::Fail,
        Ok(api::RetryAction::Retry) => Action::Retry,
        Ok(api::RetryAction::Unspecified) => {
            errors.push(Diagnostic::error(
                "invalid-value",
                path,
                "must be `Fail` or `Retry`, got `RETRY_ACTION_UNSPECIFIED` (0): the action is not set",
            ));
            Action::Fail
        }
        Err(_) => {
            errors.push(Diagnostic::error(
                "invalid-value",
                path,
                format!("must be `Fail` (1) or `Retry` (2), got `{number}`, not a RetryAction"),
            ));
            Action::Fail
        }
    }
}

fn mutation_from_proto(m: &api::RetryMutation) -> Mutation {
    Mutation {
        affinity: m.affinity.as_ref().map(|a| AffinityMutation {
            avoid_same_node: a.avoid_same_node,
        }),
        resources: m.resources.as_ref().map(|r| ResourceMutation {
            memory: r.memory.as_ref().map(|b| MemoryBump {
                factor: (b.factor != 0.0).then_some(b.factor),
                fixed: (!b.r#static.is_empty()).then(|| b.r#static.clone()),
            }),
        }),
    }
}

/// How a queue with fields the model does not hold is described (`has fields retryctl does
/// not handle: `resourceLimits``), wherever one is read.
pub fn unheld_fields(fields: &[&str]) -> String {
    format!("has fields retryctl does not handle: {}", crate::diag::one_of(fields))
}

/// Upstream's message as a queue, and the names of the non-empty fields the model does not
/// hold (`resourceLimits`, `resourceLimitsByPriorityClassName`, `labelsDeprecated`).
// Upstream marks two of those fields deprecated; they are read here only to refuse them.
#[allow(deprecated)]
pub fn queue_from_proto(q: &api::Queue) -> (Queue, Vec<&'static str>) {
    let mut unsupported = Vec::new();
    if !q.resource_limits.is_empty() {
        unsupported.push("resourceLimits");
    }
    if !q.resource_limits_by_priority_class_name.is_empty() {
        unsupported.push("resourceLimitsByPriorityClassName");
    }
    if !q.labels_deprecated.is_empty() {
        unsupported.push("labelsDeprecated");
    }
    let queue = Queue {
        name: q.name.clone(),
        priority_factor: q.priority_factor,
        user_owners: q.user_owners.clone(),
        group_owners: q.group_owners.clone(),
        labels: q.labels.clone(),
        cordoned: q.cordoned,
        retry_policies: q.retry_policies.clone(),
        permissions: q
            .permissions
            .iter()
            .map(|p| Permission {
                subjects: p
                    .subjects
                    .iter()
                    .map(|s| Subject {
                        kind: s.kind.clone(),
                        name: s.name.clone(),
                    })
                    .collect(),
                verbs: p.verbs.clone(),
            })
            .collect(),
    };
    (queue, unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::{Backoff, ExitCodes, Operator};
    use crate::wire::{policy_from_json, policy_to_json, Dialect};
    use prost::Message as _;

    /// Upstream's own example (the swagger docs under contract/), as JSON.
    const EXAMPLE: &str = r#"{"name":"ml-training-retries","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Fail","onCategory":"user-error"},{"action":"Retry","onCategory":"gpu","onSubcategory":"transient","mutate":{"affinity":{"avoidSameNode":true}}},{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":1.5}}}},{"action":"Retry","onCategory":"oom","onSubcategory":"small","mutate":{"resources":{"memory":{"static":"512Mi"}}}}]}"#;

    fn example() -> RetryPolicy {
        policy_from_json(&serde_json::from_str(EXAMPLE).unwrap(), Dialect::Upstream).unwrap()
    }

    #[test]
    fn a_v1beta1_policy_round_trips_through_protobuf_bytes() {
        let policy = example();
        let proto = policy_to_proto(&policy).unwrap();
        assert_eq!(proto.rules[1].on_subcategory, "transient");
        assert_eq!(
            proto.rules[3]
                .mutate
                .as_ref()
                .unwrap()
                .resources
                .as_ref()
                .unwrap()
                .memory
                .as_ref()
                .unwrap()
                .r#static,
            "512Mi"
        );
        let bytes = proto.encode_to_vec();
        let back = policy_from_proto(&api::RetryPolicy::decode(&bytes[..]).unwrap()).unwrap();
        assert_eq!(back, policy);
        assert_eq!(serde_json::to_string(&policy_to_json(&back)).unwrap(), EXAMPLE);
    }

    #[test]
    fn a_zero_limit_and_an_empty_mutate_survive() {
        let policy = RetryPolicy {
            name: "p0".into(),
            retry_limit: Some(0),
            default_action: Some(Action::Retry),
            rules: vec![Rule {
                action: Action::Retry,
                on_failure_category: Some(vec!["c".into()]),
                mutate: Some(Mutation {
                    affinity: Some(AffinityMutation { avoid_same_node: false }),
                    resources: None,
                }),
                ..Rule::default()
            }],
            ..RetryPolicy::default()
        };
        let bytes = policy_to_proto(&policy).unwrap().encode_to_vec();
        assert_eq!(
            policy_from_proto(&api::RetryPolicy::decode(&bytes[..]).unwrap()).unwrap(),
            policy
        );
    }

    #[test]
    fn design_dialect_fields_have_no_protobuf_form() {
        let mut policy = example();
        policy.retry_limit = None;
        policy.backoff = Backoff {
            multiplier: Some(2.0),
            ..Backoff::default()
        };
        policy.rules[0].on_exit_codes = Some(ExitCodes {
            operator: Operator::In,
            values: vec![137],
        });
        policy.rules[2].on_failure_category = Some(vec!["a".into(), "b".into()]);
        assert_eq!(
            policy_to_proto(&policy).unwrap_err(),
            vec![
                "retryLimit",
                "backoff",
                "rules[0].onExitCodes",
                "rules[2].onFailureCategory (more than one category)"
            ]
        );
    }

    #[test]
    fn unset_and_unknown_actions_and_a_rule_without_category_are_refused() {
        let p = api::RetryPolicy {
            name: "p".into(),
            default_action: 0,
            rules: vec![
                api::RetryRule {
                    action: 7,
                    on_category: "c".into(),
                    ..Default::default()
                },
                api::RetryRule {
                    action: 2,
                    on_subcategory: "s".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let errors = policy_from_proto(&p).unwrap_err();
        assert_eq!(
            crate::diag::describe_errors(&errors),
            "defaultAction: must be `Fail` or `Retry`, got `RETRY_ACTION_UNSPECIFIED` (0): the action is not set; \
             rules[0].action: must be `Fail` (1) or `Retry` (2), got `7`, not a RetryAction; \
             rules[1].onCategory: must be set: an Armada API rule matches on a failure category"
        );
    }

    #[test]
    fn a_queue_round_trips_and_names_what_the_model_cannot_hold() {
        let queue = Queue {
            name: "q".into(),
            priority_factor: 1.5,
            user_owners: vec!["alice".into()],
            group_owners: vec!["ml".into()],
            labels: [("team".to_string(), "ml".to_string())].into(),
            cordoned: true,
            retry_policies: vec!["b".into(), "a".into()],
            permissions: vec![Permission {
                subjects: vec![Subject {
                    kind: "Group".into(),
                    name: "ml".into(),
                }],
                verbs: vec!["submit".into(), "watch".into()],
            }],
        };
        let bytes = queue_to_proto(&queue).encode_to_vec();
        let decoded = api::Queue::decode(&bytes[..]).unwrap();
        assert_eq!(queue_from_proto(&decoded), (queue, vec![]));
        let mut more = decoded;
        more.resource_limits.insert("cpu".into(), 0.5);
        #[allow(deprecated)]
        more.labels_deprecated.push("x".into());
        assert_eq!(queue_from_proto(&more).1, vec!["resourceLimits", "labelsDeprecated"]);
    }
}
