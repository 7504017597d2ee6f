//! Typed resources → documents (`apiVersion`, `kind`, body) as ordered JSON values, which the
//! output layer prints as YAML or JSON.
//!
//! Owns: the canonical document form of each kind, in both policy dialects. The key order is
//! fixed so that output, `diff` and round-trips are stable. Must not: print or do I/O.

use serde_json::{json, Map, Value};

use super::document::ApiVersion;
use super::policy::{AntiAffinityMode, Backoff, Mutation, RetryPolicy, Rule};
use super::queue::Queue;
use super::vocabulary::{API_V1, API_V1BETA1};

/// A policy as a document of `version`. `Err` lists the fields that do not fit v1beta1.
pub fn policy_document(policy: &RetryPolicy, version: ApiVersion) -> Result<Value, Vec<String>> {
    match version {
        ApiVersion::V1 => Ok(policy_v1(policy)),
        ApiVersion::V1beta1 => policy_v1beta1(policy),
    }
}

fn policy_v1(policy: &RetryPolicy) -> Value {
    let mut spec = Map::new();
    if let Some(limit) = policy.retry_limit {
        spec.insert("retryLimit".into(), json!(limit));
    }
    // Unset stays unset (read as `Fail`), so that what is printed reads back the same.
    if let Some(action) = policy.default_action {
        spec.insert("defaultAction".into(), json!(action.as_str()));
    }
    insert_backoff_and_anti_affinity(&mut spec, &policy.backoff, policy.anti_affinity);
    if !policy.rules.is_empty() {
        spec.insert("rules".into(), Value::Array(policy.rules.iter().map(rule_v1).collect()));
    }
    json!({
        "apiVersion": API_V1,
        "kind": "RetryPolicy",
        "metadata": { "name": policy.name },
        "spec": spec,
    })
}

/// A rule as the `armadaproject.io/v1` dialect writes it under `spec.rules`.
pub fn rule_v1(rule: &Rule) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(rule.action.as_str()));
    insert_rule_matchers(&mut m, rule);
    if let Some(c) = &rule.on_failure_category {
        m.insert("onFailureCategory".into(), json!(c));
    }
    if let Some(c) = &rule.on_failure_subcategory {
        m.insert("onFailureSubcategory".into(), json!(c));
    }
    insert_rule_retry(&mut m, rule);
    if let Some(mutate) = &rule.mutate {
        m.insert("mutate".into(), mutation(mutate));
    }
    Value::Object(m)
}

/// A rule's container-level matchers, in the order both dialects write them (v1 documents and
/// the REST JSON, `crate::wire`): `containerName`, `includeInitContainers`, `onConditions`,
/// `onExitCodes`, `onTerminationMessage`.
pub fn insert_rule_matchers(m: &mut Map<String, Value>, rule: &Rule) {
    if let Some(c) = &rule.container_name {
        m.insert("containerName".into(), json!(c));
    }
    if rule.include_init_containers {
        m.insert("includeInitContainers".into(), json!(true));
    }
    if let Some(c) = &rule.on_conditions {
        m.insert(
            "onConditions".into(),
            json!(c.iter().map(|c| c.as_str()).collect::<Vec<_>>()),
        );
    }
    if let Some(e) = &rule.on_exit_codes {
        m.insert(
            "onExitCodes".into(),
            json!({ "operator": e.operator.as_str(), "values": e.values }),
        );
    }
    if let Some(p) = &rule.on_termination_message {
        m.insert("onTerminationMessage".into(), json!({ "pattern": p }));
    }
}

/// What a retry under a rule takes, in the order both dialects write it: `retryLimit`, then
/// [`insert_backoff_and_anti_affinity`].
pub fn insert_rule_retry(m: &mut Map<String, Value>, rule: &Rule) {
    if let Some(l) = rule.retry_limit {
        m.insert("retryLimit".into(), json!(l));
    }
    insert_backoff_and_anti_affinity(m, &rule.backoff, rule.anti_affinity);
}

/// `backoff` (when a field of it is set) and `antiAffinity`, as a policy and a rule write
/// them in both dialects.
pub fn insert_backoff_and_anti_affinity(m: &mut Map<String, Value>, b: &Backoff, mode: Option<AntiAffinityMode>) {
    if let Some(b) = backoff(b) {
        m.insert("backoff".into(), b);
    }
    if let Some(mode) = mode {
        m.insert("antiAffinity".into(), json!({ "mode": mode.as_str() }));
    }
}

/// `None` when no field is set, so that an empty `backoff: {}` is not printed.
pub fn backoff(b: &Backoff) -> Option<Value> {
    let mut m = Map::new();
    if let Some(d) = b.initial_delay {
        m.insert("initialDelay".into(), json!(d.to_string()));
    }
    if let Some(d) = b.max_delay {
        m.insert("maxDelay".into(), json!(d.to_string()));
    }
    if let Some(x) = b.multiplier {
        m.insert("multiplier".into(), json!(x));
    }
    if let Some(x) = b.jitter {
        m.insert("jitter".into(), json!(x));
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

pub fn mutation(mutate: &Mutation) -> Value {
    let mut m = Map::new();
    if let Some(a) = &mutate.affinity {
        m.insert("affinity".into(), json!({ "avoidSameNode": a.avoid_same_node }));
    }
    if let Some(r) = &mutate.resources {
        let mut resources = Map::new();
        if let Some(mem) = &r.memory {
            let mut bump = Map::new();
            if let Some(s) = &mem.fixed {
                bump.insert("static".into(), json!(s));
            }
            if let Some(f) = mem.factor {
                bump.insert("factor".into(), json!(f));
            }
            resources.insert("memory".into(), Value::Object(bump));
        }
        m.insert("resources".into(), Value::Object(resources));
    }
    Value::Object(m)
}

fn policy_v1beta1(policy: &RetryPolicy) -> Result<Value, Vec<String>> {
    // An unset `defaultAction` means `Fail` in v1, which v1beta1 can say: written out below,
    // not a misfit. (Sending it unset to an upstream server is still refused, as upstream
    // refuses it: docs/cli.md.)
    let misfits: Vec<String> = policy
        .upstream_incompatibilities()
        .into_iter()
        .filter(|f| !f.starts_with("defaultAction"))
        .collect();
    if !misfits.is_empty() {
        return Err(misfits);
    }
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(API_V1BETA1));
    m.insert("kind".into(), json!("RetryPolicy"));
    m.insert("name".into(), json!(policy.name));
    m.insert("retryLimit".into(), json!(policy.retry_limit.unwrap_or(0)));
    m.insert("defaultAction".into(), json!(policy.default_action().as_str()));
    let rules: Vec<Value> = policy.rules.iter().map(rule_v1beta1).collect();
    if !rules.is_empty() {
        m.insert("rules".into(), Value::Array(rules));
    }
    Ok(Value::Object(m))
}

/// A rule as the `armadaproject.io/v1beta1` dialect writes it (a rule that fits it: see
/// [`RetryPolicy::upstream_incompatibilities`]).
pub fn rule_v1beta1(r: &Rule) -> Value {
    let mut rm = Map::new();
    rm.insert("action".into(), json!(r.action.as_str()));
    if let Some(c) = r.on_failure_category.as_ref().and_then(|c| c.first()) {
        rm.insert("onCategory".into(), json!(c));
    }
    if let Some(s) = r.on_failure_subcategory.as_ref().and_then(|s| s.first()) {
        rm.insert("onSubcategory".into(), json!(s));
    }
    if let Some(mutate) = &r.mutate {
        rm.insert("mutate".into(), mutation(mutate));
    }
    Value::Object(rm)
}

/// A queue as a `armadaproject.io/v1beta1` document (upstream's only queue version).
pub fn queue_document(queue: &Queue) -> Value {
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!(API_V1BETA1));
    m.insert("kind".into(), json!("Queue"));
    m.insert("name".into(), json!(queue.name));
    m.insert("priorityFactor".into(), json!(queue.priority_factor));
    if !queue.user_owners.is_empty() {
        m.insert("userOwners".into(), json!(queue.user_owners));
    }
    if !queue.group_owners.is_empty() {
        m.insert("groupOwners".into(), json!(queue.group_owners));
    }
    if !queue.labels.is_empty() {
        m.insert("labels".into(), json!(queue.labels));
    }
    if queue.cordoned {
        m.insert("cordoned".into(), json!(true));
    }
    if !queue.retry_policies.is_empty() {
        m.insert("retryPolicies".into(), json!(queue.retry_policies));
    }
    if !queue.permissions.is_empty() {
        let perms: Vec<Value> = queue
            .permissions
            .iter()
            .map(|p| {
                json!({
                    "subjects": p.subjects.iter().map(|s| json!({"kind": s.kind, "name": s.name})).collect::<Vec<_>>(),
                    "verbs": p.verbs,
                })
            })
            .collect();
        m.insert("permissions".into(), Value::Array(perms));
    }
    Value::Object(m)
}

/// YAML text of a document value, as every reader reads it back (`crate::yaml::from_json`:
/// a string a YAML 1.1 reader such as kubectl's would retype, `on`, `1_000`, quoted; a value
/// holding U+2028 written as JSON).
pub fn to_yaml(value: &Value) -> String {
    crate::yaml::from_json::yaml_of(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::document::parse_documents;
    use crate::model::document::Resource;

    #[test]
    fn yaml11_line_separators_round_trip() {
        let value = json!({"a": "x\u{2028}y", "b": ["\u{2029}"], "c": 1});
        let text = to_yaml(&value);
        assert!(text.contains("\"x\\u2028y\""), "{text}");
        let node = &crate::yaml::parse_stream(&text).documents[0];
        assert_eq!(node.get("a").and_then(|n| n.as_scalar()), Some("x\u{2028}y"));
        // Everything else stays YAML.
        assert_eq!(to_yaml(&json!({"a": "x\u{85}y"})), "a: \"x\\Ny\"\n");
    }

    #[test]
    fn v1_round_trip() {
        let text = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  backoff: {initialDelay: 10s, multiplier: 2.0}\n  rules:\n  - action: Retry\n    onExitCodes: {operator: In, values: [137]}\n    mutate: {resources: {memory: {factor: 1.5}}}\n";
        let parsed = parse_documents(text, None);
        let Some(Resource::RetryPolicy(p)) = &parsed.documents[0].resource else {
            panic!("{parsed:?}")
        };
        let yaml = to_yaml(&policy_document(p, ApiVersion::V1).unwrap());
        let again = parse_documents(&yaml, None);
        assert_eq!(again.documents[0].resource, parsed.documents[0].resource, "{yaml}");
    }
}
