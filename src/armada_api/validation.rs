//! Upstream Armada's server-side check of a retry policy, ported from
//! `internal/server/retrypolicy/validation.go` at `207cc9e` (`ValidatePolicy`), for `serve
//! --dialect upstream` (docs/serve.md): the same checks in the same order, the first failure
//! in upstream's words. The services wrap it as upstream's do: `invalid retry policy: …`,
//! InvalidArgument.
//!
//! Owns: that port. Must not: decode (the gateway's JSON is [`super::gateway`], protobuf is
//! tonic's), or report more than upstream does: `validate` (`model::validate`) is retryctl's own
//! check, every error with its place; this one answers as the real server would.

use super::api;
use crate::model::policy::{go_float, go_quote};

/// Policy names follow RFC 1123 label rules (upstream: they may end up in Kubernetes labels).
const MAX_POLICY_NAME_LENGTH: usize = 63;

/// `ValidatePolicy`: `Err` is upstream's message. `nil_rules` are the indexes of rules that
/// were `null` in a REST body (upstream's nil `*RetryRule`; protobuf cannot carry one).
pub fn validate_policy(p: &api::RetryPolicy, nil_rules: &[usize]) -> Result<(), String> {
    if p.name.is_empty() {
        return Err("retry policy name must not be empty".into());
    }
    if p.name.len() > MAX_POLICY_NAME_LENGTH {
        return Err(format!(
            "retry policy name {} must be at most {MAX_POLICY_NAME_LENGTH} characters",
            go_quote(&p.name)
        ));
    }
    if !is_policy_name(&p.name) {
        return Err(format!(
            "retry policy name {} is invalid: must consist of lowercase alphanumeric characters or '-', and must \
             start and end with an alphanumeric character",
            go_quote(&p.name)
        ));
    }
    for (i, rule) in p.rules.iter().enumerate() {
        let checked = if nil_rules.contains(&i) {
            Err("rule must not be nil".to_string())
        } else {
            validate_rule(rule)
        };
        if let Err(e) = checked {
            return Err(format!("retry policy {} rule {i}: {e}", go_quote(&p.name)));
        }
    }
    if !is_valid_action(p.default_action) {
        return Err(format!(
            "retry policy {} must set a default action (Fail or Retry)",
            go_quote(&p.name)
        ));
    }
    Ok(())
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (and at most 63 characters, said apart): the names
/// `validate` accepts.
fn is_policy_name(name: &str) -> bool {
    crate::model::validate::name_problem(name).is_none()
}

fn validate_rule(r: &api::RetryRule) -> Result<(), String> {
    if !is_valid_action(r.action) {
        return Err("action must be Fail or Retry".into());
    }
    // Upstream: on_subcategory only narrows an on_category match, so it does not count as a
    // matcher on its own.
    if r.on_category.is_empty() {
        return Err("on_category must be set".into());
    }
    let bump = r
        .mutate
        .as_ref()
        .and_then(|m| m.resources.as_ref())
        .and_then(|res| res.memory.as_ref());
    if let Some(b) = bump {
        validate_resource_bump(b).map_err(|e| format!("mutate.resources.memory: {e}"))?;
    }
    Ok(())
}

/// `validateResourceBump`.
fn validate_resource_bump(b: &api::RetryResourceBump) -> Result<(), String> {
    let fixed = &b.r#static;
    if !fixed.is_empty() && b.factor != 0.0 {
        return Err("set exactly one of static and factor, not both".into());
    }
    if fixed.is_empty() && b.factor == 0.0 {
        return Err("set exactly one of static and factor".into());
    }
    if !fixed.is_empty() {
        // The model's parser forgives surrounding blanks; Kubernetes' does not.
        let parsed = if fixed.trim() == fixed {
            crate::model::quantity::parse_quantity(fixed)
        } else {
            Err("quantities must match".into())
        };
        let quantity =
            parsed.map_err(|e| format!("invalid static quantity {}: {}", go_quote(fixed), quantity_error(&e)))?;
        if quantity <= 0.0 {
            return Err(format!("static quantity {} must be positive", go_quote(fixed)));
        }
        return Ok(());
    }
    if b.factor <= 1.0 {
        return Err(format!("factor {} must be greater than 1.0", go_float(b.factor)));
    }
    Ok(())
}

/// The error `resource.ParseQuantity` (k8s.io/apimachinery) returns for what the model's
/// parser refused: its three sentinel errors.
fn quantity_error(ours: &str) -> &'static str {
    if ours.starts_with("quantities must match") {
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    } else if ours.contains("suffix") {
        "unable to parse quantity's suffix"
    } else {
        "unable to parse numeric part of quantity"
    }
}

/// `isValidAction`: RETRY_ACTION_UNSPECIFIED is refused, so every action is explicit.
fn is_valid_action(action: i32) -> bool {
    action == api::RetryAction::Fail as i32 || action == api::RetryAction::Retry as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, default_action: i32, rules: Vec<api::RetryRule>) -> api::RetryPolicy {
        api::RetryPolicy {
            name: name.into(),
            retry_limit: 3,
            default_action,
            rules,
        }
    }

    fn rule(action: i32, category: &str, bump: Option<api::RetryResourceBump>) -> api::RetryRule {
        api::RetryRule {
            action,
            on_category: category.into(),
            on_subcategory: String::new(),
            mutate: bump.map(|b| api::RetryMutation {
                affinity: None,
                resources: Some(api::RetryResourceMutation { memory: Some(b) }),
            }),
        }
    }

    fn bump(fixed: &str, factor: f64) -> Option<api::RetryResourceBump> {
        Some(api::RetryResourceBump {
            r#static: fixed.into(),
            factor,
        })
    }

    /// `validation_test.go` `TestValidatePolicy`, each row's error text.
    #[test]
    fn upstreams_table() {
        let check = |p: &api::RetryPolicy| validate_policy(p, &[]);
        assert_eq!(
            check(&policy("", 1, vec![])).unwrap_err(),
            "retry policy name must not be empty"
        );
        assert_eq!(
            check(&policy("MyPolicy", 1, vec![])).unwrap_err(),
            "retry policy name \"MyPolicy\" is invalid: must consist of lowercase alphanumeric characters or '-', and must start and end with an alphanumeric character"
        );
        assert!(check(&policy("-p", 1, vec![])).unwrap_err().contains("is invalid"));
        assert!(check(&policy("p-", 1, vec![])).unwrap_err().contains("is invalid"));
        assert_eq!(
            check(&policy(&"a".repeat(64), 1, vec![])).unwrap_err(),
            format!("retry policy name \"{}\" must be at most 63 characters", "a".repeat(64))
        );
        assert_eq!(
            check(&policy("p1", 0, vec![])).unwrap_err(),
            "retry policy \"p1\" must set a default action (Fail or Retry)"
        );
        assert_eq!(
            validate_policy(&policy("p1", 1, vec![api::RetryRule::default()]), &[0]).unwrap_err(),
            "retry policy \"p1\" rule 0: rule must not be nil"
        );
        assert_eq!(
            check(&policy("p1", 1, vec![rule(0, "oom", None)])).unwrap_err(),
            "retry policy \"p1\" rule 0: action must be Fail or Retry"
        );
        assert_eq!(
            check(&policy("p1", 1, vec![rule(2, "", None)])).unwrap_err(),
            "retry policy \"p1\" rule 0: on_category must be set"
        );
        let bumped = |b| check(&policy("memory-bump", 2, vec![rule(2, "oom", b)]));
        assert_eq!(
            bumped(bump("1Gi", 2.0)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: set exactly one of static and factor, not both"
        );
        assert_eq!(
            bumped(bump("", 0.0)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: set exactly one of static and factor"
        );
        assert_eq!(
            bumped(bump("", 1.0)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: factor 1 must be greater than 1.0"
        );
        // `%v` of a float64, as Go prints it: an exponent below 1e-4.
        assert_eq!(
            bumped(bump("", 0.00001)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: factor 1e-05 must be greater than 1.0"
        );
        assert_eq!(
            bumped(bump("many", 0.0)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: invalid static quantity \"many\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        assert_eq!(
            bumped(bump("-1Gi", 0.0)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: static quantity \"-1Gi\" must be positive"
        );
        assert_eq!(
            bumped(bump(" 1Gi", 0.0)).unwrap_err(),
            "retry policy \"memory-bump\" rule 0: mutate.resources.memory: invalid static quantity \" 1Gi\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        );
        assert_eq!(bumped(bump("256Mi", 0.0)), Ok(()));
        assert_eq!(bumped(bump("", 1.25)), Ok(()));
        // Rules come before the default action, as upstream checks them.
        assert_eq!(
            check(&policy("p1", 0, vec![rule(2, "", None)])).unwrap_err(),
            "retry policy \"p1\" rule 0: on_category must be set"
        );
    }
}
