//! Lint (docs/policies.md): findings that are legal but almost certainly not what the author meant.
//!
//! Owns: the warnings, within a policy (shadowed rules, settings with no effect, zero
//! limits, patterns matching the empty string, over-broad `NotIn`) and across documents
//! (scheduler limits, the default policy's presence, upstream fit, the two layers of
//! today's Armada: a policy's categories against the executor's categorizer). Must not:
//! produce errors (`--strict` is the caller's business) or do I/O.

use std::collections::HashSet;

use crate::diag::{index, quote, suggest, Diagnostic};

use super::categorizer::{ErrorCategories, PodAction, CATEGORY_INTERNAL, CATEGORY_PREEMPTION};
use super::document::{ApiVersion, Document, Resource};
use super::policy::{Action, ExitCodes, Operator, RetryPolicy, Rule};
use super::validate::compile_pattern;

/// A rule's settings that do nothing once its action is `Fail` (`no-effect`, which
/// `validate --strict` refuses), in the order a rule writes them.
pub const FAIL_NO_EFFECT: [&str; 4] = ["retryLimit", "backoff", "antiAffinity", "mutate"];

/// Context the warnings may use.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// From `--scheduler-config`: limits above it are capped.
    pub global_max_retries: Option<u32>,
    /// From `--scheduler-config`: must be among the documents.
    pub default_policy_name: Option<String>,
    /// The policies are headed for an upstream Armada server (docs/reference/wire.md).
    pub upstream: bool,
    /// The executor's categorizers given alongside (`-f` or `--categorizer`), each with the
    /// file it came from as the user should read it: every policy's categories are checked
    /// against each ([`lint_with_categorizer`]).
    pub categorizers: Vec<(String, ErrorCategories)>,
}

/// Warnings for one policy, in wire-layout paths (`rules[1]`).
pub fn lint_policy(policy: &RetryPolicy, options: &LintOptions) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, rule) in policy.rules.iter().enumerate() {
        let path = index("rules", i);
        if let Some(j) = policy.rules[..i].iter().position(|earlier| covers(earlier, rule)) {
            out.push(Diagnostic::warning(
                "shadowed-rule",
                &path,
                format!("rule {i} can never match: rule {j} comes first and matches every failure it matches"),
            ));
        }
        if rule.action == Action::Fail {
            let set = [
                rule.retry_limit.is_some(),
                !rule.backoff.is_empty(),
                rule.anti_affinity.is_some(),
                rule.mutate.is_some(),
            ];
            let useless = FAIL_NO_EFFECT.iter().zip(set).filter(|(_, set)| *set).map(|(f, _)| f);
            for field in useless {
                out.push(Diagnostic::warning(
                    "no-effect",
                    format!("{path}.{field}"),
                    format!("`{field}` has no effect on a `Fail` rule"),
                ));
            }
        } else {
            let limit = rule.retry_limit.or(policy.retry_limit);
            if limit == Some(0) {
                let from = if rule.retry_limit.is_some() {
                    "its own `retryLimit`"
                } else {
                    "the policy's `retryLimit`"
                };
                out.push(Diagnostic::warning(
                    "zero-limit",
                    &path,
                    format!("this `Retry` rule never retries: its effective limit is 0 (from {from})"),
                ));
            }
            // Only a limit the rule sets itself; an inherited one is reported once, at the
            // policy's `retryLimit`, not again at every rule that inherits it.
            if let (Some(global), Some(limit)) = (options.global_max_retries, rule.retry_limit) {
                if limit > global {
                    out.push(Diagnostic::warning(
                        "limit-above-global",
                        format!("{path}.retryLimit"),
                        format!("limit `{limit}` is above the scheduler's globalMaxRetries `{global}`; it is capped at {global}"),
                    ));
                }
            }
        }
        if let Some(pattern) = &rule.on_termination_message {
            if compile_pattern(pattern).is_ok_and(|re| re.is_match("")) {
                out.push(Diagnostic::warning(
                    "empty-match-pattern",
                    format!("{path}.onTerminationMessage.pattern"),
                    format!("pattern {} matches the empty string, but a failure without a termination message never matches: this rule only matches failures that carry a message", quote(pattern)),
                ));
            }
        }
        if let Some(ExitCodes {
            operator: Operator::NotIn,
            values,
        }) = &rule.on_exit_codes
        {
            let narrowed = rule.on_conditions.is_some()
                || rule.on_failure_category.is_some()
                || rule.on_termination_message.is_some();
            if !narrowed && values.len() < 128 {
                out.push(Diagnostic::warning(
                    "broad-not-in",
                    format!("{path}.onExitCodes"),
                    format!("`NotIn` with {} value(s) matches every other non-zero exit code ({} of 255), application bugs included; list the codes to match with `In`", values.len(), 255 - values.len()),
                ));
            }
        }
    }
    if let (Some(global), Some(limit)) = (options.global_max_retries, policy.retry_limit) {
        if limit > global {
            out.push(Diagnostic::warning(
                "limit-above-global",
                "retryLimit",
                format!(
                    "limit `{limit}` is above the scheduler's globalMaxRetries `{global}`; it is capped at {global}"
                ),
            ));
        }
    }
    out
}

/// Whether `earlier` matches every failure `later` matches, with the same container
/// selection. Conservative: `false` whenever coverage cannot be shown.
pub fn covers(earlier: &Rule, later: &Rule) -> bool {
    if !earlier.has_matcher()
        || earlier.container_name != later.container_name
        || earlier.include_init_containers != later.include_init_containers
    {
        return false;
    }
    let subset = |e: &Option<Vec<String>>, l: &Option<Vec<String>>| match (e, l) {
        (None, _) => true,
        (Some(e), Some(l)) => l.iter().all(|x| e.contains(x)),
        (Some(_), None) => false,
    };
    let conditions = match (&earlier.on_conditions, &later.on_conditions) {
        (None, _) => true,
        (Some(e), Some(l)) => l.iter().all(|x| e.contains(x)),
        (Some(_), None) => false,
    };
    let exit_codes = match (&earlier.on_exit_codes, &later.on_exit_codes) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(e), Some(l)) => {
            let ev: HashSet<i64> = e.values.iter().copied().collect();
            match (e.operator, l.operator) {
                (Operator::In, Operator::In) => l.values.iter().all(|v| ev.contains(v)),
                (Operator::NotIn, Operator::NotIn) => e.values.iter().all(|v| l.values.contains(v)),
                (Operator::NotIn, Operator::In) => l.values.iter().all(|v| !ev.contains(v)),
                (Operator::In, Operator::NotIn) => false,
            }
        }
    };
    let message = match (&earlier.on_termination_message, &later.on_termination_message) {
        (None, _) => true,
        (Some(e), Some(l)) => e == l,
        (Some(_), None) => false,
    };
    conditions
        && exit_codes
        && message
        && subset(&earlier.on_failure_category, &later.on_failure_category)
        && subset(&earlier.on_failure_subcategory, &later.on_failure_subcategory)
}

/// Adds warnings to every valid document, then the cross-document ones.
/// `--upstream`: exactly what `create` against an upstream server refuses (the client's
/// check, `RetryPolicy::upstream_incompatibilities`, is the one implementation), as errors.
pub fn upstream_errors(policy: &RetryPolicy) -> Vec<Diagnostic> {
    policy
        .upstream_incompatibilities()
        .into_iter()
        .map(|entry| {
            // Entries are a field path, optionally followed by ` (why)`.
            let (path, why) = match entry.split_once(" (") {
                Some((p, w)) => (p.to_string(), format!(" ({w}")),
                None => (entry.clone(), String::new()),
            };
            let message = if path == "retryLimit" {
                "no `spec.retryLimit`: an upstream Armada server reads an absent limit as 0 (never retry), so \
                 `create` refuses it; set it explicitly"
                    .to_string()
            } else if path == "defaultAction" {
                "no `spec.defaultAction`: upstream Armada refuses a policy without one (it will not default \
                 to `Fail`), so `create` against an upstream server and `--engine upstream` refuse it; \
                 write `defaultAction: Fail` or `defaultAction: Retry`"
                    .to_string()
            } else if !path.ends_with(']') {
                let field = path.rsplit('.').next().unwrap_or(&path);
                match why.as_str() {
                    " (more than one category)" | " (more than one subcategory)" => format!(
                        "upstream Armada stores one {} per rule, and `{field}` lists more than one; \
                         `create` against an upstream server refuses this policy",
                        if field.ends_with("Subcategory") {
                            "subcategory"
                        } else {
                            "category"
                        }
                    ),
                    _ => format!(
                        "upstream Armada cannot store `{field}`{why}; `create` against an upstream server \
                         refuses this policy"
                    ),
                }
            } else {
                // The rule itself (`rules[0]`): what it lacks has no field to name.
                "this rule has no category, and upstream Armada stores only category rules \
                 (`onCategory`, optionally `onSubcategory`); `create` against an upstream server \
                 refuses this policy"
                    .to_string()
            };
            Diagnostic::error("upstream-incompatible", path, message)
        })
        .collect()
}

/// Warnings for one policy read with the executor's categorizer `config` (from `file`), the
/// other layer of today's Armada (docs/categorizer.md): a rule on a category the categorizer
/// never assigns (neither a category's `name` nor its `defaultCategory`; Armada's own
/// `internal` and `preemption` are exempt, Armada assigns them) never matches a categorized failure; a `Retry`
/// rule on a category whose failed pod the executor keeps collides with that pod, since a
/// retried pod reuses its name. Paths in wire layout (`rules[0].onFailureCategory[1]`).
pub fn lint_with_categorizer(policy: &RetryPolicy, config: &ErrorCategories, file: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let default = (!config.default_category.is_empty()).then_some(config.default_category.as_str());
    for (i, rule) in policy.rules.iter().enumerate() {
        let Some(categories) = &rule.on_failure_category else {
            continue;
        };
        for (j, category) in categories.iter().enumerate() {
            // Armada sets these itself, never the categorizer: `internal` (lease expiry, a
            // missing pod) and `preemption` (a preempted run, with its type as subcategory).
            if category == CATEGORY_INTERNAL || category == CATEGORY_PREEMPTION {
                continue;
            }
            let path = index(&format!("{}.onFailureCategory", index("rules", i)), j);
            let named = config.categories.iter().find(|c| c.name == *category);
            let is_default = default == Some(category.as_str());
            if !config.enabled {
                out.push(Diagnostic::warning(
                    "category-never-assigned",
                    &path,
                    format!(
                        "the categorizer `{file}` is not enabled, so the executor assigns no category and this \
                         rule never matches on {}; set `enabled: true` in `{file}`",
                        quote(category)
                    ),
                ));
                continue;
            }
            if named.is_none() && !is_default {
                let names: Vec<&str> = config
                    .categories
                    .iter()
                    .map(|c| c.name.as_str())
                    .chain(default)
                    .collect();
                let guess = suggest(category, &names)
                    .map(|g| format!(", did you mean {}?", quote(g)))
                    .unwrap_or_default();
                out.push(Diagnostic::warning(
                    "category-never-assigned",
                    &path,
                    format!(
                        "the categorizer `{file}` never assigns category {} (neither a category's `name` nor its \
                         `defaultCategory`): this rule never matches a failure the executor categorizes{guess}",
                        quote(category)
                    ),
                ));
                continue;
            }
            if rule.action != Action::Retry {
                continue;
            }
            let kept_by_name = named.is_some_and(|c| c.pod_action() != Some(PodAction::Delete));
            if kept_by_name {
                out.push(Diagnostic::warning(
                    "retry-retained-pod",
                    &path,
                    format!(
                        "this `Retry` rule retries category {c}, whose failed pod the executor keeps (its \
                         category in `{file}` has no `action: Delete`): the retry reuses the pod's name, collides \
                         with the kept pod and its lease is returned; set `action: Delete` on category {c} in \
                         `{file}`",
                        c = quote(category)
                    ),
                ));
            } else if is_default {
                out.push(Diagnostic::warning(
                    "retry-retained-pod",
                    &path,
                    format!(
                        "this `Retry` rule retries category {}, the `defaultCategory` of `{file}`, whose failed pods \
                         the executor keeps: the retry reuses the pod's name, collides with the kept pod and its \
                         lease is returned",
                        quote(category)
                    ),
                ));
            }
        }
    }
    out
}

pub fn lint_documents<'a>(documents: impl IntoIterator<Item = &'a mut Document>, options: &LintOptions) {
    let mut documents: Vec<&mut Document> = documents.into_iter().collect();
    let mut policy_names = HashSet::new();
    for doc in documents.iter_mut() {
        if !doc.is_valid() {
            continue;
        }
        let (Some(Resource::RetryPolicy(policy)), Some(version)) = (&doc.resource, doc.api_version) else {
            continue;
        };
        policy_names.insert(policy.name.clone());
        let mut found = lint_policy(policy, options);
        for (file, config) in &options.categorizers {
            found.extend(lint_with_categorizer(policy, config, file));
        }
        if options.upstream {
            found.extend(upstream_errors(policy));
        }
        // The model cannot tell an absent v1beta1 `retryLimit` from an explicit 0 (upstream
        // reads both as 0); the text can, and "from the policy's `retryLimit`" would point the
        // reader at a field that is not there.
        let absent_limit = version == ApiVersion::V1beta1 && doc.node.get("retryLimit").is_none();
        for mut d in found {
            if absent_limit && d.code == "zero-limit" && d.message.ends_with("(from the policy's `retryLimit`)") {
                d.message = "this `Retry` rule never retries: the policy has no `retryLimit`, which `armadaproject.io/v1beta1` reads as 0; set `retryLimit`".to_string();
            }
            // Fields are named as the user wrote them (`onCategory` in a v1beta1 document),
            // in the path and in the message.
            let path = super::document::document_path(&d.path, super::document::Kind::RetryPolicy, version);
            let message = super::document::document_message(&d.message, super::document::Kind::RetryPolicy, version);
            doc.push(Diagnostic { path, message, ..d });
        }
        // A reader goes down the file, so the report does too (decoder and validator
        // findings are already in this order; stable: one place keeps its finding order).
        doc.diagnostics
            .sort_by_key(|d| d.pos.map_or((usize::MAX, usize::MAX), |p| (p.line, p.column)));
    }
    if let Some(default) = &options.default_policy_name {
        if !policy_names.contains(default) {
            if let Some(first) = documents.first_mut() {
                first.push(Diagnostic::warning(
                    "unknown-default-policy",
                    "",
                    format!(
                        "the scheduler's defaultPolicyName {} is not among the documents",
                        quote(default)
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Condition;

    fn rule(conditions: &[Condition]) -> Rule {
        Rule {
            action: Action::Retry,
            on_conditions: Some(conditions.to_vec()),
            ..Rule::default()
        }
    }

    #[test]
    fn shadowing() {
        let broad = rule(&[Condition::OOMKilled, Condition::Evicted]);
        let narrow = rule(&[Condition::OOMKilled]);
        assert!(covers(&broad, &narrow));
        assert!(!covers(&narrow, &broad));
        let mut other_container = narrow.clone();
        other_container.container_name = Some("main".into());
        assert!(!covers(&broad, &other_container));
        let in_codes = |op, v: &[i64]| Rule {
            on_exit_codes: Some(ExitCodes {
                operator: op,
                values: v.to_vec(),
            }),
            ..Rule::default()
        };
        assert!(covers(
            &in_codes(Operator::In, &[137, 143]),
            &in_codes(Operator::In, &[137])
        ));
        assert!(covers(
            &in_codes(Operator::NotIn, &[1]),
            &in_codes(Operator::In, &[137])
        ));
        assert!(!covers(
            &in_codes(Operator::NotIn, &[137]),
            &in_codes(Operator::In, &[137])
        ));
        assert!(covers(
            &in_codes(Operator::NotIn, &[1]),
            &in_codes(Operator::NotIn, &[1, 2])
        ));
        assert!(!covers(
            &in_codes(Operator::In, &[1]),
            &in_codes(Operator::NotIn, &[1, 2])
        ));
    }

    #[test]
    fn shadowing_by_categories_and_messages() {
        let cat = |c: &[&str], sub: Option<&[&str]>, msg: Option<&str>| Rule {
            action: Action::Retry,
            on_failure_category: Some(c.iter().map(|s| s.to_string()).collect()),
            on_failure_subcategory: sub.map(|s| s.iter().map(|s| s.to_string()).collect()),
            on_termination_message: msg.map(str::to_string),
            ..Rule::default()
        };
        // Categories: a subset is covered, a superset is not.
        assert!(covers(&cat(&["gpu", "net"], None, None), &cat(&["gpu"], None, None)));
        assert!(!covers(&cat(&["gpu"], None, None), &cat(&["gpu", "net"], None, None)));
        // An earlier rule without a subcategory covers a later one with one, not the reverse.
        assert!(covers(
            &cat(&["gpu"], None, None),
            &cat(&["gpu"], Some(&["transient"]), None)
        ));
        assert!(!covers(
            &cat(&["gpu"], Some(&["transient"]), None),
            &cat(&["gpu"], None, None)
        ));
        // Message: the earlier rule has none, or the same one.
        assert!(covers(&cat(&["gpu"], None, None), &cat(&["gpu"], None, Some("X"))));
        assert!(covers(&cat(&["gpu"], None, Some("X")), &cat(&["gpu"], None, Some("X"))));
        assert!(!covers(
            &cat(&["gpu"], None, Some("X")),
            &cat(&["gpu"], None, Some("Y"))
        ));
        assert!(!covers(&cat(&["gpu"], None, Some("X")), &cat(&["gpu"], None, None)));
        // Container selection must be equal, init containers included.
        let mut init = cat(&["gpu"], None, None);
        init.include_init_containers = true;
        assert!(!covers(&cat(&["gpu"], None, None), &init));
        assert!(!covers(&init, &cat(&["gpu"], None, None)));
    }
}
