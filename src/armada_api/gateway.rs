//! A retry policy's REST JSON read and written as upstream Armada's grpc-gateway does it
//! (`runtime.JSONBuiltin`: Go's `encoding/json` over the generated `api.RetryPolicy`), for
//! `serve --dialect upstream` (docs/serve.md).
//!
//! Owns: the decoding rules of `encoding/json` that a policy body meets — keys matched exactly,
//! then in any case; a key the message has not (`metadata`, `spec`, `backoff`, …) dropped
//! without a word; `null` leaving a field at its zero; a value of the wrong type refused in
//! Go's words (`json: cannot unmarshal string into Go struct field RetryPolicy.retryLimit of
//! type uint32`); actions by upstream's `RetryAction.UnmarshalJSON` (`pkg/api/deserialize.go`)
//! — and the answer's encoding (`omitempty`: zero values left out, actions `"Fail"` /
//! `"Retry"`, the message's field order). Must not: validate (that is [`super::validation`]),
//! or know HTTP.
//!
//! Where it is knowingly not Go: the first wrong value found is the one reported (Go reports
//! the earliest of the type errors but stops at an action's), fields are read in the
//! message's order rather than the body's.

use serde_json::{json, Map, Value};

use super::api;
use crate::model::policy::{go_quote, Action};

/// A decoded body: the message, and the indexes of the rules that were `null` (a nil
/// `*RetryRule` in Go, which a protobuf list cannot hold: a default rule stands in its place).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decoded {
    pub policy: api::RetryPolicy,
    pub nil_rules: Vec<usize>,
}

/// Decodes a policy body as upstream's gateway does; `Err` is the gateway's message.
pub fn policy_from_json(value: &Value) -> Result<Decoded, String> {
    let Value::Object(map) = value else {
        if value.is_null() {
            return Ok(Decoded::default());
        }
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type api.RetryPolicy",
            kind(value)
        ));
    };
    let mut out = Decoded::default();
    let at = Place {
        strukt: "RetryPolicy",
        path: String::new(),
    };
    let p = &mut out.policy;
    if let Some(v) = field(map, "name") {
        p.name = string(v, &at.of("name"))?;
    }
    if let Some(v) = field(map, "retryLimit") {
        p.retry_limit = uint32(v, &at.of("retryLimit"))?;
    }
    if let Some(v) = field(map, "defaultAction") {
        p.default_action = action(v)?;
    }
    if let Some(v) = field(map, "rules") {
        let Value::Array(items) = v else {
            return Err(at.of("rules").wrong(v, "[]*api.RetryRule"));
        };
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::Null => {
                    out.nil_rules.push(i);
                    p.rules.push(api::RetryRule::default());
                }
                Value::Object(rule) => p.rules.push(self::rule(rule, &at.of("rules"))?),
                other => return Err(at.of("rules").wrong(other, "api.RetryRule")),
            }
        }
    }
    Ok(out)
}

fn rule(map: &Map<String, Value>, at: &Place) -> Result<api::RetryRule, String> {
    let at = Place {
        strukt: "RetryRule",
        path: at.path.clone(),
    };
    let mut r = api::RetryRule::default();
    if let Some(v) = field(map, "action") {
        r.action = action(v)?;
    }
    if let Some(v) = field(map, "onCategory") {
        r.on_category = string(v, &at.of("onCategory"))?;
    }
    if let Some(v) = field(map, "onSubcategory") {
        r.on_subcategory = string(v, &at.of("onSubcategory"))?;
    }
    if let Some(v) = field(map, "mutate") {
        let at = at.of("mutate");
        let m = object(v, &at, "api.RetryMutation")?;
        let at = Place {
            strukt: "RetryMutation",
            path: at.path,
        };
        let mut mutation = api::RetryMutation::default();
        if let Some(v) = field(m, "affinity") {
            let at = at.of("affinity");
            let a = object(v, &at, "api.RetryAffinityMutation")?;
            let at = Place {
                strukt: "RetryAffinityMutation",
                path: at.path,
            };
            let mut affinity = api::RetryAffinityMutation::default();
            if let Some(v) = field(a, "avoidSameNode") {
                affinity.avoid_same_node = match v {
                    Value::Bool(b) => *b,
                    other => return Err(at.of("avoidSameNode").wrong(other, "bool")),
                };
            }
            mutation.affinity = Some(affinity);
        }
        if let Some(v) = field(m, "resources") {
            let at = at.of("resources");
            let res = object(v, &at, "api.RetryResourceMutation")?;
            let at = Place {
                strukt: "RetryResourceMutation",
                path: at.path,
            };
            let mut resources = api::RetryResourceMutation::default();
            if let Some(v) = field(res, "memory") {
                let at = at.of("memory");
                let mem = object(v, &at, "api.RetryResourceBump")?;
                let at = Place {
                    strukt: "RetryResourceBump",
                    path: at.path,
                };
                let mut bump = api::RetryResourceBump::default();
                if let Some(v) = field(mem, "static") {
                    bump.r#static = string(v, &at.of("static"))?;
                }
                if let Some(v) = field(mem, "factor") {
                    bump.factor = match v.as_f64() {
                        Some(f) => f,
                        None => return Err(at.of("factor").wrong(v, "float64")),
                    };
                }
                resources.memory = Some(bump);
            }
            mutation.resources = Some(resources);
        }
        r.mutate = Some(mutation);
    }
    Ok(r)
}

/// Where a value sits, as Go's `UnmarshalTypeError` names it: the innermost struct's type
/// and the keys from the top, dotted, without indexes.
struct Place {
    strukt: &'static str,
    path: String,
}

impl Place {
    fn of(&self, key: &str) -> Place {
        Place {
            strukt: self.strukt,
            path: if self.path.is_empty() {
                key.to_string()
            } else {
                format!("{}.{key}", self.path)
            },
        }
    }

    fn wrong(&self, value: &Value, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {go_type}",
            kind(value),
            self.strukt,
            self.path
        )
    }
}

/// The value of `key`, matched as `encoding/json` matches a field: exactly, else in any case.
/// `null` is absent (it leaves the field at its zero, or a pointer nil).
fn field<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    map.get(key)
        .or_else(|| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v))
        .filter(|v| !v.is_null())
}

/// A JSON value's kind as Go's errors name it; a number that does not fit is named with its
/// text (`number 3.5`), as Go names it.
fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn string(value: &Value, at: &Place) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(at.wrong(other, "string")),
    }
}

fn uint32(value: &Value, at: &Place) -> Result<u32, String> {
    match value {
        Value::Number(n) => n.as_u64().and_then(|v| u32::try_from(v).ok()).ok_or_else(|| {
            format!(
                "json: cannot unmarshal number {n} into Go struct field {}.{} of type uint32",
                at.strukt, at.path
            )
        }),
        other => Err(at.wrong(other, "uint32")),
    }
}

fn object<'v>(value: &'v Value, at: &Place, go_type: &str) -> Result<&'v Map<String, Value>, String> {
    match value {
        Value::Object(m) => Ok(m),
        other => Err(at.wrong(other, go_type)),
    }
}

/// Upstream's `RetryAction.UnmarshalJSON`: an `int32` that is an enum value, else a string
/// that is an enum name or, upper-cased behind `RETRY_ACTION_`, one; its errors are its own.
fn action(value: &Value) -> Result<i32, String> {
    if let Some(n) = value.as_i64().and_then(|n| i32::try_from(n).ok()) {
        return match (n, Action::from_number(i64::from(n))) {
            (0, _) => Ok(0),
            (_, Some(a)) => Ok(a.number()),
            (_, None) => Err(format!("no RetryAction of value {n}")),
        };
    }
    let Value::String(s) = value else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            kind(value)
        ));
    };
    match Action::parse(s) {
        Some(a) => Ok(a.number()),
        None if Action::is_unspecified_name(s) => Ok(0),
        None => Err(format!("no RetryAction of name {}", go_quote(s))),
    }
}

/// A policy as upstream's gateway answers it: Go's `encoding/json` of the message, every
/// field `omitempty`, actions by `RetryAction.MarshalJSON`.
pub fn policy_to_json(p: &api::RetryPolicy) -> Value {
    let mut m = Map::new();
    if !p.name.is_empty() {
        m.insert("name".into(), json!(p.name));
    }
    if p.retry_limit != 0 {
        m.insert("retryLimit".into(), json!(p.retry_limit));
    }
    if let Some(a) = action_name(p.default_action) {
        m.insert("defaultAction".into(), json!(a));
    }
    if !p.rules.is_empty() {
        let rules = p.rules.iter().map(|r| {
            let mut m = Map::new();
            if let Some(a) = action_name(r.action) {
                m.insert("action".into(), json!(a));
            }
            if !r.on_category.is_empty() {
                m.insert("onCategory".into(), json!(r.on_category));
            }
            if !r.on_subcategory.is_empty() {
                m.insert("onSubcategory".into(), json!(r.on_subcategory));
            }
            if let Some(mutate) = &r.mutate {
                let mut mm = Map::new();
                if let Some(a) = &mutate.affinity {
                    let mut am = Map::new();
                    if a.avoid_same_node {
                        am.insert("avoidSameNode".into(), json!(true));
                    }
                    mm.insert("affinity".into(), Value::Object(am));
                }
                if let Some(res) = &mutate.resources {
                    let mut rm = Map::new();
                    if let Some(b) = &res.memory {
                        let mut bm = Map::new();
                        if !b.r#static.is_empty() {
                            bm.insert("static".into(), json!(b.r#static));
                        }
                        if b.factor != 0.0 {
                            bm.insert("factor".into(), json!(b.factor));
                        }
                        rm.insert("memory".into(), Value::Object(bm));
                    }
                    mm.insert("resources".into(), Value::Object(rm));
                }
                m.insert("mutate".into(), Value::Object(mm));
            }
            Value::Object(m)
        });
        m.insert("rules".into(), Value::Array(rules.collect()));
    }
    Value::Object(m)
}

/// `"Fail"` / `"Retry"`; `None` for the zero value, which `omitempty` leaves out.
fn action_name(n: i32) -> Option<&'static str> {
    match api::RetryAction::try_from(n) {
        Ok(api::RetryAction::Fail) => Some("Fail"),
        Ok(api::RetryAction::Retry) => Some("Retry"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<Decoded, String> {
        policy_from_json(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn a_v1_document_decodes_to_an_empty_policy_as_in_go() {
        let d = decode(r#"{"apiVersion":"armadaproject.io/v1","kind":"RetryPolicy","metadata":{"name":"p"},"spec":{"retryLimit":3}}"#)
            .unwrap();
        assert_eq!(d, Decoded::default());
    }

    #[test]
    fn keys_in_any_case_and_actions_as_upstream_reads_them() {
        let d = decode(
            r#"{"NAME":"p","retrylimit":2,"defaultAction":"retry","rules":[{"action":2,"onCategory":"oom"},null]}"#,
        )
        .unwrap();
        assert_eq!(d.policy.name, "p");
        assert_eq!(d.policy.retry_limit, 2);
        assert_eq!(d.policy.default_action, 2);
        assert_eq!(d.policy.rules[0].action, 2);
        assert_eq!(d.nil_rules, [1]);
        assert_eq!(
            decode(r#"{"defaultAction":"retry_action_fail"}"#).unwrap_err(),
            r#"no RetryAction of name "retry_action_fail""#
        );
        assert_eq!(
            decode(r#"{"defaultAction":3}"#).unwrap_err(),
            "no RetryAction of value 3"
        );
        assert_eq!(
            decode(r#"{"defaultAction":true}"#).unwrap_err(),
            "json: cannot unmarshal bool into Go value of type string"
        );
    }

    #[test]
    fn wrong_types_are_named_as_go_names_them() {
        assert_eq!(
            decode(r#"{"retryLimit":"3"}"#).unwrap_err(),
            "json: cannot unmarshal string into Go struct field RetryPolicy.retryLimit of type uint32"
        );
        assert_eq!(
            decode(r#"{"retryLimit":-1}"#).unwrap_err(),
            "json: cannot unmarshal number -1 into Go struct field RetryPolicy.retryLimit of type uint32"
        );
        assert_eq!(
            decode(r#"{"rules":[{"mutate":{"resources":{"memory":{"factor":"2"}}}}]}"#).unwrap_err(),
            "json: cannot unmarshal string into Go struct field RetryResourceBump.rules.mutate.resources.memory.factor of type float64"
        );
        assert_eq!(
            decode("[]").unwrap_err(),
            "json: cannot unmarshal array into Go value of type api.RetryPolicy"
        );
    }

    #[test]
    fn the_answer_leaves_zero_values_out() {
        let d = decode(r#"{"name":"p","retryLimit":0,"defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom","mutate":{"affinity":{}}}]}"#)
            .unwrap();
        assert_eq!(
            policy_to_json(&d.policy).to_string(),
            r#"{"name":"p","defaultAction":"Fail","rules":[{"action":"Retry","onCategory":"oom","mutate":{"affinity":{}}}]}"#
        );
    }
}
