//! The Armada REST JSON shapes (docs/reference/wire.md), both directions, shared by the client and `serve`.
//!
//! Owns: model ⇄ upstream JSON. Output follows upstream (lowerCamelCase, zero values omitted,
//! actions as `"Fail"`/`"Retry"`, upstream's key order) plus the design-dialect extension
//! fields; a rule with one category and at most one subcategory is written as `onCategory` /
//! `onSubcategory` so upstream servers accept it. Input accepts every upstream spelling: keys
//! in any case (Go's encoding/json matches them case-insensitively), actions as numbers 1/2,
//! `RETRY_ACTION_*` or any case. Unknown keys are errors (upstream silently drops them, which
//! is how `retry_limit` becomes 0), except `apiVersion` and `kind`, which upstream tolerates.
//! Must not: do I/O, know routes or status codes.

use serde_json::{json, Map, Value};

use crate::diag::{index, join, quote, suggest, Diagnostic};
use crate::model::duration::GoDuration;
use crate::model::encode;
use crate::model::policy::{
    AffinityMutation, AntiAffinityMode, Backoff, Condition, ExitCodes, MemoryBump, Mutation, Operator,
    ResourceMutation, Rule,
};
use crate::model::queue::{Permission, Subject};
use crate::model::{Action, Queue, RetryPolicy};

/// The header `retryctl serve` puts on every response; its absence means an upstream server.
pub const DIALECT_HEADER: &str = "Armada-Retry-Policy-Dialect";
pub const DIALECT_V1: &str = "v1";

/// How to read an absent `retryLimit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `retryctl serve` and its clients: absent means unset (inherit, docs/engines.md).
    V1,
    /// Upstream Armada: absent means 0 (never retry), since upstream omits zero values.
    Upstream,
}

// ---------------------------------------------------------------------------------------
// model → JSON

pub fn policy_to_json(policy: &RetryPolicy) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(policy.name));
    if let Some(l) = policy.retry_limit {
        m.insert("retryLimit".into(), json!(l));
    }
    // Unset stays unset: the design dialect reads it as `Fail`; an upstream server never
    // gets such a policy (the client refuses it first, docs/reference/wire.md).
    if let Some(action) = policy.default_action {
        m.insert("defaultAction".into(), json!(action.as_str()));
    }
    if !policy.rules.is_empty() {
        m.insert(
            "rules".into(),
            Value::Array(policy.rules.iter().map(rule_to_json).collect()),
        );
    }
    encode::insert_backoff_and_anti_affinity(&mut m, &policy.backoff, policy.anti_affinity);
    Value::Object(m)
}

fn rule_to_json(rule: &Rule) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(rule.action.as_str()));
    let single = rule.on_failure_category.as_ref().is_some_and(|c| c.len() == 1)
        && rule.on_failure_subcategory.as_ref().is_none_or(|s| s.len() == 1);
    if single {
        m.insert(
            "onCategory".into(),
            json!(rule.on_failure_category.as_ref().unwrap()[0]),
        );
        if let Some(s) = &rule.on_failure_subcategory {
            m.insert("onSubcategory".into(), json!(s[0]));
        }
    }
    if let Some(mutate) = &rule.mutate {
        m.insert("mutate".into(), encode::mutation(mutate));
    }
    encode::insert_rule_matchers(&mut m, rule);
    if !single {
        if let Some(c) = &rule.on_failure_category {
            m.insert("onFailureCategory".into(), json!(c));
        }
        if let Some(s) = &rule.on_failure_subcategory {
            m.insert("onFailureSubcategory".into(), json!(s));
        }
    }
    encode::insert_rule_retry(&mut m, rule);
    Value::Object(m)
}

/// A queue in upstream's key order; empty and false fields omitted.
pub fn queue_to_json(queue: &Queue) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(queue.name));
    m.insert("priorityFactor".into(), json!(queue.priority_factor));
    if !queue.user_owners.is_empty() {
        m.insert("userOwners".into(), json!(queue.user_owners));
    }
    if !queue.group_owners.is_empty() {
        m.insert("groupOwners".into(), json!(queue.group_owners));
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
    if queue.cordoned {
        m.insert("cordoned".into(), json!(true));
    }
    if !queue.labels.is_empty() {
        m.insert("labels".into(), json!(queue.labels));
    }
    if !queue.retry_policies.is_empty() {
        m.insert("retryPolicies".into(), json!(queue.retry_policies));
    }
    Value::Object(m)
}

// ---------------------------------------------------------------------------------------
// JSON → model

/// Reads a policy from JSON. Errors carry wire paths (`rules[0].action`). Semantic
/// validation is not run here: call `model::validate::validate_policy` on the result.
pub fn policy_from_json(value: &Value, dialect: Dialect) -> Result<RetryPolicy, Vec<Diagnostic>> {
    let mut r = Reader::default();
    let policy = r.policy(value, dialect);
    match policy {
        Some(p) if r.errors.is_empty() => Ok(p),
        _ => Err(r.errors),
    }
}

pub fn queue_from_json(value: &Value) -> Result<Queue, Vec<Diagnostic>> {
    let mut r = Reader::default();
    let queue = r.queue(value);
    match queue {
        Some(q) if r.errors.is_empty() => Ok(q),
        _ => Err(r.errors),
    }
}

const POLICY_KEYS: [&str; 6] = [
    "name",
    "retryLimit",
    "defaultAction",
    "rules",
    "backoff",
    "antiAffinity",
];
const RULE_KEYS: [&str; 14] = [
    "action",
    "onCategory",
    "onSubcategory",
    "mutate",
    "containerName",
    "includeInitContainers",
    "onConditions",
    "onExitCodes",
    "onTerminationMessage",
    "onFailureCategory",
    "onFailureSubcategory",
    "retryLimit",
    "backoff",
    "antiAffinity",
];
const QUEUE_KEYS: [&str; 11] = [
    "name",
    "priorityFactor",
    "userOwners",
    "groupOwners",
    "permissions",
    "cordoned",
    "labels",
    "retryPolicies",
    "resourceLimits",
    "resourceLimitsByPriorityClassName",
    "labelsDeprecated",
];
/// Keys upstream ignores and so do we (a document pasted as JSON carries them).
const TOLERATED: [&str; 2] = ["apiVersion", "kind"];

#[derive(Default)]
struct Reader {
    errors: Vec<Diagnostic>,
}

/// An object's entries, looked up case-insensitively like Go's encoding/json.
struct Obj<'v> {
    map: &'v Map<String, Value>,
    path: String,
}

impl<'v> Obj<'v> {
    fn get(&self, key: &str) -> Option<&'v Value> {
        self.map
            .get(key)
            .or_else(|| {
                self.map
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(key))
                    .map(|(_, v)| v)
            })
            .filter(|v| !v.is_null())
    }

    fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

impl Reader {
    fn error(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(Diagnostic::error("invalid-value", path, message));
    }

    fn obj<'v>(&mut self, value: &'v Value, path: &str, keys: &[&str]) -> Option<Obj<'v>> {
        let Value::Object(map) = value else {
            self.error(path, format!("expected an object, found {}", type_name(value)));
            return None;
        };
        for key in map.keys() {
            let known = keys.iter().chain(&TOLERATED).any(|k| k.eq_ignore_ascii_case(key));
            if !known {
                let message = match suggest(key, keys) {
                    Some(s) => format!("unknown field {}, did you mean `{s}`?", quote(key)),
                    None => format!("unknown field {}", quote(key)),
                };
                self.errors
                    .push(Diagnostic::error("unknown-field", join(path, key), message));
            }
        }
        Some(Obj {
            map,
            path: path.to_string(),
        })
    }

    fn string(&mut self, value: &Value, path: &str) -> Option<String> {
        match value {
            Value::String(s) => Some(s.clone()),
            other => {
                self.error(path, format!("expected a string, found {}", type_name(other)));
                None
            }
        }
    }

    fn bool(&mut self, value: &Value, path: &str) -> Option<bool> {
        match value {
            Value::Bool(b) => Some(*b),
            other => {
                self.error(path, format!("expected true or false, found {}", type_name(other)));
                None
            }
        }
    }

    fn u32(&mut self, value: &Value, path: &str) -> Option<u32> {
        match value.as_u64().and_then(|v| u32::try_from(v).ok()) {
            Some(v) => Some(v),
            None => {
                self.error(
                    path,
                    format!("expected an integer from 0 to 4294967295, found {}", short(value)),
                );
                None
            }
        }
    }

    fn f64(&mut self, value: &Value, path: &str) -> Option<f64> {
        match value.as_f64() {
            Some(v) => Some(v),
            None => {
                self.error(path, format!("expected a number, found {}", type_name(value)));
                None
            }
        }
    }

    fn strings(&mut self, value: &Value, path: &str) -> Option<Vec<String>> {
        let Value::Array(items) = value else {
            self.error(
                path,
                format!("expected an array of strings, found {}", type_name(value)),
            );
            return None;
        };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| self.string(v, &index(path, i)))
            .collect()
    }

    fn action(&mut self, value: &Value, path: &str) -> Option<Action> {
        // As upstream's `RetryAction.UnmarshalJSON` (`pkg/api/deserialize.go`): a number is
        // the enum's value, a string a name.
        let parsed = match value {
            Value::Number(n) => n.as_i64().and_then(Action::from_number),
            Value::String(s) => Action::parse(s),
            _ => None,
        };
        if parsed.is_none() {
            let message = match value {
                Value::Number(n) => Action::refusal(&n.to_string(), true),
                Value::String(s) => Action::refusal(s, false),
                _ => format!("unknown action {}, expected `Retry` or `Fail`", short(value)),
            };
            self.error(path, message);
        }
        parsed
    }

    fn duration(&mut self, value: &Value, path: &str) -> Option<GoDuration> {
        let text = self.string(value, path)?;
        match GoDuration::parse(&text) {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(path, format!("invalid duration {}: {e}", quote(&text)));
                None
            }
        }
    }

    fn policy(&mut self, value: &Value, dialect: Dialect) -> Option<RetryPolicy> {
        let o = self.obj(value, "", &POLICY_KEYS)?;
        let mut p = RetryPolicy {
            retry_limit: match dialect {
                Dialect::V1 => None,
                Dialect::Upstream => Some(0),
            },
            ..RetryPolicy::default()
        };
        if let Some(v) = o.get("name") {
            p.name = self.string(v, "name").unwrap_or_default();
        }
        if let Some(v) = o.get("retryLimit") {
            p.retry_limit = self.u32(v, "retryLimit");
        }
        if let Some(v) = o.get("defaultAction") {
            // Upstream's UNSPECIFIED (0) is what an omitted action means: Fail.
            if v.as_u64() != Some(0) {
                p.default_action = self.action(v, "defaultAction");
            }
        }
        if let Some(v) = o.get("backoff") {
            p.backoff = self.backoff(v, "backoff");
        }
        if let Some(v) = o.get("antiAffinity") {
            p.anti_affinity = self.anti_affinity(v, "antiAffinity");
        }
        if let Some(v) = o.get("rules") {
            match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(rule) = self.rule(item, &index("rules", i)) {
                            p.rules.push(rule);
                        }
                    }
                }
                other => self.error("rules", format!("expected an array, found {}", type_name(other))),
            }
        }
        Some(p)
    }

    fn rule(&mut self, value: &Value, path: &str) -> Option<Rule> {
        let o = self.obj(value, path, &RULE_KEYS)?;
        let mut r = Rule::default();
        match o.get("action") {
            Some(v) => r.action = self.action(v, &o.path("action")).unwrap_or_default(),
            None => self.error(&o.path("action"), "missing `action`; expected `Retry` or `Fail`"),
        }
        if let Some(v) = o.get("onCategory") {
            let c = self.string(v, &o.path("onCategory"))?;
            if !c.is_empty() {
                r.on_failure_category = Some(vec![c]);
            }
        }
        if let Some(v) = o.get("onSubcategory") {
            let c = self.string(v, &o.path("onSubcategory"))?;
            if !c.is_empty() {
                r.on_failure_subcategory = Some(vec![c]);
            }
        }
        if let Some(v) = o.get("onFailureCategory") {
            if r.on_failure_category.is_some() {
                self.error(
                    &o.path("onFailureCategory"),
                    "set `onCategory` or `onFailureCategory`, not both",
                );
            }
            r.on_failure_category = self.strings(v, &o.path("onFailureCategory"));
        }
        if let Some(v) = o.get("onFailureSubcategory") {
            if r.on_failure_subcategory.is_some() {
                self.error(
                    &o.path("onFailureSubcategory"),
                    "set `onSubcategory` or `onFailureSubcategory`, not both",
                );
            }
            r.on_failure_subcategory = self.strings(v, &o.path("onFailureSubcategory"));
        }
        if let Some(v) = o.get("mutate") {
            r.mutate = self.mutation(v, &o.path("mutate"));
        }
        if let Some(v) = o.get("containerName") {
            r.container_name = self.string(v, &o.path("containerName")).filter(|s| !s.is_empty());
        }
        if let Some(v) = o.get("includeInitContainers") {
            r.include_init_containers = self.bool(v, &o.path("includeInitContainers")).unwrap_or(false);
        }
        if let Some(v) = o.get("onConditions") {
            let p = o.path("onConditions");
            if let Some(names) = self.strings(v, &p) {
                let mut out = Vec::new();
                for (i, n) in names.iter().enumerate() {
                    match Condition::parse(n) {
                        Some(c) => out.push(c),
                        None => {
                            let mut m = format!("unknown condition {}", quote(n));
                            if let Some(s) = suggest(n, &Condition::NAMES) {
                                m.push_str(&format!("; did you mean `{s}`?"));
                            }
                            self.error(&index(&p, i), m);
                        }
                    }
                }
                r.on_conditions = Some(out);
            }
        }
        if let Some(v) = o.get("onExitCodes") {
            let p = o.path("onExitCodes");
            if let Some(e) = self.obj(v, &p, &["operator", "values"]) {
                let operator = match e.get("operator") {
                    Some(op) => {
                        let text = self.string(op, &e.path("operator")).unwrap_or_default();
                        let parsed = Operator::parse(&text);
                        if parsed.is_none() {
                            self.error(
                                &e.path("operator"),
                                format!("unknown operator {}, expected `In` or `NotIn`", quote(&text)),
                            );
                        }
                        parsed
                    }
                    None => {
                        self.error(&e.path("operator"), "missing `operator`; expected `In` or `NotIn`");
                        None
                    }
                };
                let values = match e.get("values") {
                    Some(Value::Array(items)) => items
                        .iter()
                        .enumerate()
                        .filter_map(|(i, v)| match v.as_i64() {
                            Some(n) => Some(n),
                            None => {
                                self.error(
                                    &index(&e.path("values"), i),
                                    format!("expected an integer, found {}", short(v)),
                                );
                                None
                            }
                        })
                        .collect(),
                    Some(other) => {
                        self.error(
                            &e.path("values"),
                            format!("expected an array, found {}", type_name(other)),
                        );
                        Vec::new()
                    }
                    None => Vec::new(),
                };
                if let Some(operator) = operator {
                    r.on_exit_codes = Some(ExitCodes { operator, values });
                }
            }
        }
        if let Some(v) = o.get("onTerminationMessage") {
            let p = o.path("onTerminationMessage");
            if let Some(m) = self.obj(v, &p, &["pattern"]) {
                r.on_termination_message = match m.get("pattern") {
                    Some(pv) => self.string(pv, &m.path("pattern")),
                    None => Some(String::new()),
                };
            }
        }
        if let Some(v) = o.get("retryLimit") {
            r.retry_limit = self.u32(v, &o.path("retryLimit"));
        }
        if let Some(v) = o.get("backoff") {
            r.backoff = self.backoff(v, &o.path("backoff"));
        }
        if let Some(v) = o.get("antiAffinity") {
            r.anti_affinity = self.anti_affinity(v, &o.path("antiAffinity"));
        }
        Some(r)
    }

    fn backoff(&mut self, value: &Value, path: &str) -> Backoff {
        let mut b = Backoff::default();
        let Some(o) = self.obj(value, path, &["initialDelay", "maxDelay", "multiplier", "jitter"]) else {
            return b;
        };
        if let Some(v) = o.get("initialDelay") {
            b.initial_delay = self.duration(v, &o.path("initialDelay"));
        }
        if let Some(v) = o.get("maxDelay") {
            b.max_delay = self.duration(v, &o.path("maxDelay"));
        }
        if let Some(v) = o.get("multiplier") {
            b.multiplier = self.f64(v, &o.path("multiplier"));
        }
        if let Some(v) = o.get("jitter") {
            b.jitter = self.f64(v, &o.path("jitter"));
        }
        b
    }

    fn anti_affinity(&mut self, value: &Value, path: &str) -> Option<AntiAffinityMode> {
        let o = self.obj(value, path, &["mode"])?;
        let text = match o.get("mode") {
            Some(v) => self.string(v, &o.path("mode"))?,
            None => return Some(AntiAffinityMode::None),
        };
        let mode = AntiAffinityMode::parse(&text);
        if mode.is_none() {
            self.error(
                &o.path("mode"),
                format!("unknown mode {}, expected `none` or `node`", quote(&text)),
            );
        }
        mode
    }

    fn mutation(&mut self, value: &Value, path: &str) -> Option<Mutation> {
        let o = self.obj(value, path, &["affinity", "resources"])?;
        let mut m = Mutation::default();
        if let Some(v) = o.get("affinity") {
            if let Some(a) = self.obj(v, &o.path("affinity"), &["avoidSameNode"]) {
                let avoid = match a.get("avoidSameNode") {
                    Some(b) => self.bool(b, &a.path("avoidSameNode")).unwrap_or(false),
                    None => false,
                };
                m.affinity = Some(AffinityMutation { avoid_same_node: avoid });
            }
        }
        if let Some(v) = o.get("resources") {
            if let Some(r) = self.obj(v, &o.path("resources"), &["memory"]) {
                let mut resources = ResourceMutation::default();
                if let Some(mem) = r.get("memory") {
                    if let Some(mo) = self.obj(mem, &r.path("memory"), &["static", "factor"]) {
                        let fixed = mo
                            .get("static")
                            .and_then(|s| self.string(s, &mo.path("static")))
                            .filter(|s| !s.is_empty());
                        let factor = mo
                            .get("factor")
                            .and_then(|f| self.f64(f, &mo.path("factor")))
                            .filter(|f| *f != 0.0);
                        resources.memory = Some(MemoryBump { factor, fixed });
                    }
                }
                m.resources = Some(resources);
            }
        }
        Some(m)
    }

    fn queue(&mut self, value: &Value) -> Option<Queue> {
        let o = self.obj(value, "", &QUEUE_KEYS)?;
        let mut q = Queue {
            // Upstream omits a zero factor; its validation then refuses it, and so do we.
            priority_factor: 0.0,
            ..Queue::default()
        };
        if let Some(v) = o.get("name") {
            q.name = self.string(v, "name").unwrap_or_default();
        }
        if let Some(v) = o.get("priorityFactor") {
            q.priority_factor = self.f64(v, "priorityFactor").unwrap_or(0.0);
        }
        if let Some(v) = o.get("userOwners") {
            q.user_owners = self.strings(v, "userOwners").unwrap_or_default();
        }
        if let Some(v) = o.get("groupOwners") {
            q.group_owners = self.strings(v, "groupOwners").unwrap_or_default();
        }
        if let Some(v) = o.get("cordoned") {
            q.cordoned = self.bool(v, "cordoned").unwrap_or(false);
        }
        if let Some(v) = o.get("retryPolicies") {
            q.retry_policies = self.strings(v, "retryPolicies").unwrap_or_default();
        }
        if let Some(v) = o.get("labels") {
            match v {
                Value::Object(map) => {
                    for (k, lv) in map {
                        if let Some(s) = self.string(lv, &join("labels", k)) {
                            q.labels.insert(k.clone(), s);
                        }
                    }
                }
                other => self.error("labels", format!("expected an object, found {}", type_name(other))),
            }
        }
        for dropped in [
            "resourceLimits",
            "resourceLimitsByPriorityClassName",
            "labelsDeprecated",
        ] {
            if o.get(dropped).is_some_and(|v| !is_empty(v)) {
                self.error(dropped, format!("`{dropped}` is not supported by this server"));
            }
        }
        if let Some(v) = o.get("permissions") {
            match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let p = index("permissions", i);
                        let Some(po) = self.obj(item, &p, &["subjects", "verbs"]) else {
                            continue;
                        };
                        let mut perm = Permission::default();
                        if let Some(verbs) = po.get("verbs") {
                            perm.verbs = self.strings(verbs, &po.path("verbs")).unwrap_or_default();
                        }
                        if let Some(Value::Array(subjects)) = po.get("subjects") {
                            for (j, s) in subjects.iter().enumerate() {
                                let sp = index(&po.path("subjects"), j);
                                let Some(so) = self.obj(s, &sp, &["kind", "name"]) else {
                                    continue;
                                };
                                let kind = so
                                    .get("kind")
                                    .and_then(|k| self.string(k, &so.path("kind")))
                                    .unwrap_or_default();
                                let name = so
                                    .get("name")
                                    .and_then(|k| self.string(k, &so.path("name")))
                                    .unwrap_or_default();
                                perm.subjects.push(Subject { kind, name });
                            }
                        }
                        q.permissions.push(perm);
                    }
                }
                other => self.error("permissions", format!("expected an array, found {}", type_name(other))),
            }
        }
        Some(q)
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// A JSON value's type in words, for "expected an object, found an array".
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn short(v: &Value) -> String {
    quote(&v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        /// Every valid policy (the model's generator) survives the REST JSON both ways.
        #[test]
        fn valid_policy_round_trips_through_wire_json(policy in crate::model::proptests::policy()) {
            let json = policy_to_json(&policy);
            let back = policy_from_json(&json, Dialect::V1);
            proptest::prop_assert_eq!(back.as_ref().ok(), Some(&policy), "{:?}\n{}", back.as_ref().err(), json);
        }
    }

    #[test]
    fn upstream_example_round_trips_byte_for_byte() {
        let text = r#"{"name":"ml-training-retries","retryLimit":3,"defaultAction":"Fail","rules":[{"action":"Fail","onCategory":"user-error"},{"action":"Retry","onCategory":"gpu","onSubcategory":"transient","mutate":{"affinity":{"avoidSameNode":true}}},{"action":"Retry","onCategory":"oom","mutate":{"resources":{"memory":{"factor":1.5}}}},{"action":"Retry","onCategory":"oom","onSubcategory":"small","mutate":{"resources":{"memory":{"static":"512Mi"}}}}]}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let policy = policy_from_json(&value, Dialect::Upstream).unwrap();
        assert_eq!(serde_json::to_string(&policy_to_json(&policy)).unwrap(), text);
    }

    #[test]
    fn accepts_upstream_spellings() {
        for action in [
            json!(2),
            json!("RETRY_ACTION_RETRY"),
            json!("retry"),
            json!("RETRY"),
            json!("Retry"),
        ] {
            let v = json!({"name": "p", "DefaultAction": action});
            assert_eq!(
                policy_from_json(&v, Dialect::V1).unwrap().default_action,
                Some(Action::Retry),
                "{action}"
            );
        }
        let v = json!({"name": "p", "retrylimit": 4});
        assert_eq!(policy_from_json(&v, Dialect::V1).unwrap().retry_limit, Some(4));
    }

    #[test]
    fn absent_limit_depends_on_dialect() {
        let v = json!({"name": "p"});
        assert_eq!(policy_from_json(&v, Dialect::V1).unwrap().retry_limit, None);
        assert_eq!(policy_from_json(&v, Dialect::Upstream).unwrap().retry_limit, Some(0));
    }

    #[test]
    fn unknown_fields_are_errors() {
        let v = json!({"name": "p", "retry_limit": 5});
        let e = policy_from_json(&v, Dialect::V1).unwrap_err();
        assert_eq!(e[0].message, "unknown field `retry_limit`, did you mean `retryLimit`?");
    }

    #[test]
    fn design_fields_round_trip() {
        let text = r#"{"name":"p","defaultAction":"Retry","rules":[{"action":"Retry","containerName":"main","onConditions":["OOMKilled"],"onExitCodes":{"operator":"In","values":[137]},"onTerminationMessage":{"pattern":"x"},"onFailureCategory":["a","b"],"retryLimit":0,"backoff":{"initialDelay":"10s"},"antiAffinity":{"mode":"node"}}],"backoff":{"maxDelay":"5m","jitter":0.1}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        let policy = policy_from_json(&value, Dialect::V1).unwrap();
        assert_eq!(serde_json::to_string(&policy_to_json(&policy)).unwrap(), text);
    }
}
