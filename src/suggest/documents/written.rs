//! Today's Armada's two documents written ([`upstream_documents`]): the rules placed among
//! the categories (`placement`), then the YAML of the head comments, the categories, the
//! policy's rules and the actions changed.
//!
//! Owns: their text. Must not: decide where a rule goes (that is `placement`).

use crate::model::encode;
use crate::model::policy::Action;
use crate::suggest::today::Kept;
use crate::yaml::quoted;

use super::categories::{category_rule_yaml, NewCategory};
use super::placement::{Limits, Placement};
use super::rules::{comment, kept_yaml, mutate_flow, no_rules_written, Documented, PolicySettings};
use super::upstream::{existing_rule_yaml, shaped, ActionChange, Deployed, PolicyRule, Upstream, NOT_COMPLETE};

/// `header`'s lines as comment lines.
fn header_comments(header: &str) -> String {
    let mut head = String::new();
    for line in header.lines() {
        head.push_str(&format!("# {}\n", comment(line)));
    }
    head
}

/// The `errorCategories` mapping, at the top of its own lines ([`shaped`] places it): the
/// deployed defaults, the new `categories` (each under its signatures), then the deployed
/// ones, those of `delete_existing` made `Delete`; with `kept_first`, the deployed ones
/// before the new ones.
fn categories_yaml(
    deployed: Option<&crate::model::categorizer::ErrorCategories>,
    categories: &[NewCategory],
    delete_existing: &[String],
    kept_first: bool,
) -> String {
    let mut c = String::from("errorCategories:\n  enabled: true\n");
    if let Some(dep) = deployed {
        if !dep.default_category.is_empty() {
            c.push_str(&format!("  defaultCategory: {}\n", quoted(&dep.default_category)));
        }
        if !dep.default_subcategory.is_empty() {
            c.push_str(&format!("  defaultSubcategory: {}\n", quoted(&dep.default_subcategory)));
        }
    }
    let existing = deployed.map_or(&[][..], |d| &d.categories[..]);
    if categories.is_empty() && existing.is_empty() {
        c.push_str("  categories: []\n");
    } else {
        c.push_str("  categories:\n");
    }
    let new = |c: &mut String| {
        for cat in categories {
            for s in &cat.signatures {
                c.push_str(&format!("    # {}\n", comment(s)));
            }
            c.push_str(&format!("    - name: {}\n", cat.name));
            if cat.delete {
                c.push_str("      action: Delete\n");
            }
            c.push_str("      rules:\n");
            c.push_str(&category_rule_yaml(&cat.matcher, "        "));
            if let Some(sub) = &cat.subcategory {
                c.push_str(&format!("          subcategory: {}\n", quoted(sub)));
            }
            if let Some(hint) = &cat.hint {
                c.push_str(&format!("          hint: {}\n", quoted(hint)));
            }
        }
    };
    let deployed_ones = |c: &mut String| {
        for cat in existing {
            c.push_str(&format!("    - name: {}\n", quoted(&cat.name)));
            let action = if delete_existing.contains(&cat.name) {
                "Delete"
            } else {
                cat.action.as_str()
            };
            if !action.is_empty() {
                c.push_str(&format!("      action: {}\n", quoted(action)));
            }
            if cat.rules.is_empty() {
                c.push_str("      rules: []\n");
            } else {
                c.push_str("      rules:\n");
            }
            for r in &cat.rules {
                c.push_str(&existing_rule_yaml(r, "        "));
            }
        }
    };
    if kept_first {
        deployed_ones(&mut c);
        new(&mut c);
    } else {
        new(&mut c);
        deployed_ones(&mut c);
    }
    c
}

/// The v1beta1 RetryPolicy: `header`'s comment lines, the settings with `retryLimit`
/// `written_retry_limit`, the proposal's rules (each under its evidence), then today's
/// `kept`.
fn policy_yaml(
    header: &str,
    settings: &PolicySettings,
    written_retry_limit: u32,
    policy_rules: &[PolicyRule],
    kept: &[Kept],
) -> String {
    let mut p = header_comments(header);
    p.push_str("apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\n");
    p.push_str(&format!("name: {}\n", settings.name));
    p.push_str(&settings.default_comment(""));
    p.push_str(&format!("retryLimit: {written_retry_limit}\n"));
    p.push_str(&format!(
        "defaultAction: {}\n",
        settings.default_action.unwrap_or(Action::Fail).as_str()
    ));
    if no_rules_written(policy_rules.len(), kept) {
        p.push_str("rules: []\n");
    } else {
        p.push_str("rules:\n");
    }
    for (evidence, action, category, sub, mutate) in policy_rules {
        for e in evidence {
            p.push_str(&format!("  # {}\n", comment(e)));
        }
        p.push_str(&format!(
            "  - action: {}\n    onCategory: {}\n",
            action.as_str(),
            quoted(category)
        ));
        if let Some(s) = sub {
            p.push_str(&format!("    onSubcategory: {}\n", quoted(s)));
        }
        if let Some(m) = mutate {
            p.push_str(&format!("    mutate: {}\n", mutate_flow(m)));
        }
    }
    for k in kept {
        p.push_str(&kept_yaml(k, &encode::rule_v1beta1(&k.rule), "  "));
    }
    p
}

/// What the executor does differently with failed pods under the proposal, for every queue:
/// a deployed category a retried signature made `Delete` (its pods were kept), and a new
/// category whose action is not the one of the category it takes runs from.
fn action_changes(
    categories: &[NewCategory],
    existing: &[crate::model::categorizer::Category],
    delete_existing: &[String],
) -> Vec<ActionChange> {
    let deletes = |name: &str| existing.iter().any(|c| c.name == name && c.action.as_str() == "Delete");
    let mut changes: Vec<ActionChange> = existing
        .iter()
        .filter(|c| delete_existing.contains(&c.name) && c.action.as_str() != "Delete")
        .map(|c| ActionChange {
            category: c.name.clone(),
            takes_from: None,
            delete: true,
        })
        .collect();
    // A new category that takes no deployed category's runs is listed as new already.
    for c in categories.iter().filter(|c| c.splits.is_some()) {
        let was = c
            .splits
            .as_deref()
            .map(|s| s.split('/').next().unwrap_or(s))
            .is_some_and(deletes);
        if c.delete != was {
            changes.push(ActionChange {
                category: c.name.clone(),
                takes_from: c.splits.clone(),
                delete: c.delete,
            });
        }
    }
    changes
}

/// The upstream dialect: the executor's categorizer (`deployed` with the new categories
/// first, or a new one) and a v1beta1 policy whose rules match the categories.
/// `kept`: today's first policy's rules (after the proposed ones); `raise_blocked`: the rule
/// of today's that a higher `retryLimit` would retry further (`today::raise_blocked_by`);
/// `collide`: deployed categories made `Delete` because today's retries of them collide.
#[allow(clippy::too_many_arguments)] // the documents' inputs, each its own part of the proposal
pub fn upstream_documents(
    settings: &PolicySettings,
    rules: &[Documented<'_>],
    kept: &[Kept],
    raise_blocked: Option<&str>,
    deployed_file: Option<Deployed<'_>>,
    header: &str,
    collide: &[String],
) -> Upstream {
    let deployed = deployed_file.as_ref().map(|d| d.config);
    let placed = Placement::of(rules, deployed, collide);
    let limits = Limits::of(settings, rules, raise_blocked);
    let head = header_comments(header);
    let mut tail = String::new();
    if deployed.is_none() {
        tail.push_str(&format!("# {NOT_COMPLETE}\n"));
    }
    let kept_first = deployed_file.as_ref().is_some_and(|d| d.kept_first);
    let c = categories_yaml(deployed, &placed.categories, &placed.delete_existing, kept_first);
    let policy = policy_yaml(header, settings, limits.written_retry_limit, &placed.policy_rules, kept);
    let existing = deployed.map_or(&[][..], |d| &d.categories[..]);
    let action_changes = action_changes(&placed.categories, existing, &placed.delete_existing);
    let rule_actions = placed.policy_rules.iter().map(|r| r.1).collect();
    let (shaped, shape) = shaped(&c, deployed_file.as_ref());
    Upstream {
        head,
        config: tail + &shaped,
        shape,
        policy,
        policy_retry_limit: limits.policy_retry_limit,
        written_retry_limit: limits.written_retry_limit,
        raises: limits.raises,
        cut: limits.cut,
        cut_by: limits.cut_by,
        rule_index: placed.rule_index,
        categories: placed.categories,
        merged: placed.merged,
        action_changes,
        rule_actions,
    }
}
