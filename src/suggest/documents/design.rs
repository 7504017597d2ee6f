//! The design dialect's document: one `RetryPolicy` ([`design_policy`]).
//!
//! Owns: its text. Must not: decide a rule (that is `propose`) or write upstream's documents.

use crate::model::encode;
use crate::model::policy::Action;
use crate::model::signature::Signature;
use crate::suggest::pattern::pattern;
use crate::suggest::today::Kept;
use crate::yaml::quoted;

use super::rules::{comment, flow, kept_yaml, mutate_flow, no_rules_written, Documented, PolicySettings};

/// The design dialect: one RetryPolicy.
pub fn design_policy(settings: &PolicySettings, rules: &[Documented<'_>], kept: &[Kept], header: &str) -> String {
    let mut y = String::new();
    for line in header.lines() {
        y.push_str(&format!("# {}\n", comment(line)));
    }
    y.push_str("apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata:\n");
    y.push_str(&format!("  name: {}\nspec:\n", settings.name));
    y.push_str(&settings.default_comment("  "));
    if let Some(l) = settings.design_retry_limit() {
        y.push_str(&format!("  retryLimit: {l}\n"));
    }
    y.push_str(&format!(
        "  defaultAction: {}\n",
        settings.default_action.unwrap_or(Action::Fail).as_str()
    ));
    let mut extra = serde_json::Map::new();
    encode::insert_backoff_and_anti_affinity(&mut extra, &settings.backoff, settings.anti_affinity);
    for (k, v) in &extra {
        y.push_str(&format!("  {k}: {}\n", flow(v)));
    }
    if no_rules_written(rules.len(), kept) {
        y.push_str("  rules: []\n");
        for k in kept {
            y.push_str(&kept_yaml(k, &encode::rule_v1(&k.rule), "    "));
        }
        return y;
    }
    y.push_str("  rules:\n");
    for d in rules {
        let r = d.rule;
        y.push_str(&format!("    # {}\n", comment(&r.text)));
        y.push_str(&format!("    # {}\n", comment(&d.evidence)));
        y.push_str(&format!("    - action: {}\n", r.action.as_str()));
        match &r.signature {
            Signature::Condition(c) => y.push_str(&format!("      onConditions: [{}]\n", c.as_str())),
            Signature::Container {
                exit,
                name,
                init,
                template,
                ..
            } => {
                if !name.is_empty() {
                    y.push_str(&format!("      containerName: {}\n", quoted(name)));
                }
                if *init {
                    y.push_str("      includeInitContainers: true\n");
                }
                match exit {
                    None => y.push_str("      onConditions: [OOMKilled]\n"),
                    Some(code) => y.push_str(&format!("      onExitCodes: {{operator: In, values: [{code}]}}\n")),
                }
                if !template.is_empty() {
                    y.push_str(&format!(
                        "      onTerminationMessage: {{pattern: {}}}\n",
                        quoted(&pattern(template, r.cut))
                    ));
                }
            }
            Signature::Category { category, subcategory } => {
                y.push_str(&format!("      onFailureCategory: [{}]\n", quoted(category)));
                if let Some(s) = subcategory {
                    y.push_str(&format!("      onFailureSubcategory: [{}]\n", quoted(s)));
                }
            }
            // `propose` gives these no rule in this dialect.
            Signature::PodError { .. } | Signature::Unknown => {}
        }
        if let Some(l) = r.limit {
            match r.extrapolated_from {
                Some(0) => y.push_str(&format!("      retryLimit: {l}  # extrapolated from all depths\n")),
                Some(d) => y.push_str(&format!("      retryLimit: {l}  # extrapolated from depth {d}\n")),
                None => y.push_str(&format!("      retryLimit: {l}\n")),
            }
        }
        if let Some(m) = d.mutate() {
            y.push_str(&format!("      mutate: {}\n", mutate_flow(&m)));
        }
    }
    for k in kept {
        y.push_str(&kept_yaml(k, &encode::rule_v1(&k.rule), "    "));
    }
    y
}
