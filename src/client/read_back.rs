//! The read-back check of a write (docs/reference/wire.md): which fields of what was sent the server did
//! not keep. [`conflict`](super::conflict) reads the resource back after each write and
//! fails it with `ClientError::Dropped` when this finds any.
//!
//! Must not: send requests; it compares two values it is given.

use serde_json::Value;

use crate::model::Queue;

/// Paths (wire layout) where `sent` and `back` differ, for the read-back check.
pub fn diff_fields(sent: &Value, back: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_into("", sent, back, &mut out);
    out
}

fn diff_into(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = crate::diag::join(path, k);
                match y.get(k) {
                    Some(vb) => diff_into(&p, va, vb, out),
                    None => out.push(p),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{} (added by the server)", crate::diag::join(path, k)));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff_into(&crate::diag::index(path, i), va, vb, out);
            }
        }
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => {}
        _ if a == b => {}
        _ => out.push(if path.is_empty() {
            "(everything)".into()
        } else {
            path.to_string()
        }),
    }
}

/// The fields of `sent` that the server did not keep. Owners are compared loosely: upstream
/// turns `userOwners`/`groupOwners` into a `permissions` entry and never returns them, and
/// fills in the caller as owner when none is given; neither loses what the user asked for.
pub fn queue_differences(sent: &Queue, back: &Queue) -> Vec<String> {
    let mut out = Vec::new();
    if sent.priority_factor != back.priority_factor {
        out.push("priorityFactor".to_string());
    }
    let has_subject = |kind: &str, name: &str, direct: &[String]| {
        direct.iter().any(|o| o == name)
            || back
                .permissions
                .iter()
                .flat_map(|p| &p.subjects)
                .any(|s| s.kind == kind && s.name == name)
    };
    if !sent
        .user_owners
        .iter()
        .all(|o| has_subject("User", o, &back.user_owners))
    {
        out.push("userOwners".to_string());
    }
    if !sent
        .group_owners
        .iter()
        .all(|o| has_subject("Group", o, &back.group_owners))
    {
        out.push("groupOwners".to_string());
    }
    if sent.labels != back.labels {
        out.push("labels".to_string());
    }
    if sent.cordoned != back.cordoned {
        out.push("cordoned".to_string());
    }
    if sent.retry_policies != back.retry_policies {
        out.push("retryPolicies".to_string());
    }
    if !sent.permissions.is_empty() && sent.permissions != back.permissions {
        out.push("permissions".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_fields_names_dropped_and_changed_paths() {
        let sent = json!({"name":"p","retryLimit":3,"rules":[{"action":"Retry","onCategory":"gpu","mutate":{"affinity":{"avoidSameNode":true}}}]});
        let back = json!({"name":"p","retryLimit":2,"rules":[{"action":"Retry","onCategory":"gpu"}]});
        assert_eq!(diff_fields(&sent, &back), vec!["retryLimit", "rules[0].mutate"]);
        assert!(diff_fields(&json!({"f":1.0}), &json!({"f":1})).is_empty());
    }

    #[test]
    fn queue_owners_folded_into_permissions_are_not_dropped() {
        use crate::model::queue::{Permission, Subject};
        let sent = Queue {
            name: "q".into(),
            user_owners: vec!["alice".into()],
            retry_policies: vec!["a".into(), "b".into()],
            ..Queue::default()
        };
        let mut back = Queue {
            name: "q".into(),
            permissions: vec![Permission {
                subjects: vec![Subject {
                    kind: "User".into(),
                    name: "alice".into(),
                }],
                verbs: vec!["submit".into()],
            }],
            ..Queue::default()
        };
        assert_eq!(queue_differences(&sent, &back), vec!["retryPolicies"]);
        back.retry_policies = vec!["a".into(), "b".into()];
        assert!(queue_differences(&sent, &back).is_empty());
    }
}
