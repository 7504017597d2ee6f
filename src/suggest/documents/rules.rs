//! What both dialects' documents share: a comment line ([`comment`]), the policy's settings
//! besides its rules ([`PolicySettings`]), a proposed rule's evidence and `mutate`
//! ([`Documented`]), a value in YAML's flow style, and today's rules kept after the proposed
//! ones.
//!
//! Owns: those pieces of text. Must not: write a whole document (that is `design` and
//! `written`).

use crate::model::encode;
use crate::model::policy::{Action, AntiAffinityMode, Backoff, Mutation};
use crate::suggest::exits::Unsplit;
use crate::suggest::propose::Proposed;
use crate::suggest::today::{Kept, Place};
use crate::yaml::quoted;

/// A rule and the words of its evidence (a comment above it).
pub struct Documented<'a> {
    pub rule: &'a Proposed,
    pub evidence: String,
    /// A Retry rule's `mutate`, carried from the rule of today's that decided its signature
    /// (`today::carried_mutate`); `avoidSameNode` is added on the rule's own evidence.
    pub mutate: Option<Mutation>,
    /// Upstream: where its rule matches (`today::places`); `None`: a new category.
    pub place: Option<Place>,
    /// Upstream: why no `onExitCodes` rule splits it from the other signatures of its
    /// message (`exits::unsplit`), said when a category merges them; `None`: one does.
    pub unsplit: Option<Unsplit>,
}

impl Documented<'_> {
    /// The rule's `mutate` as written: the carried one, with `avoidSameNode` when the
    /// evidence says so; none on a Fail rule.
    pub fn mutate(&self) -> Option<Mutation> {
        if self.rule.action != Action::Retry {
            return None;
        }
        let mut m = self.mutate.clone().unwrap_or_default();
        if self.rule.avoid_same_node {
            m.affinity = Some(crate::model::policy::AffinityMutation { avoid_same_node: true });
        }
        (m.affinity.is_some() || m.resources.is_some()).then_some(m)
    }
}

/// A `mutate:` value on one line (JSON is YAML's flow style).
pub(super) fn mutate_flow(m: &Mutation) -> String {
    flow(&encode::mutation(m))
}

/// A value on one line in YAML's flow style (`{affinity: {avoidSameNode: true}}`): a string
/// plain when it reads back as itself, else [`quoted`].
pub(super) fn flow(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let items: Vec<String> = m.iter().map(|(k, v)| format!("{}: {}", flow_str(k), flow(v))).collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(flow).collect::<Vec<_>>().join(", ")),
        Value::String(s) => flow_str(s),
        other => other.to_string(),
    }
}

fn flow_str(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "nan" | "inf"
        );
    if plain {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// The comment above a rule of today's in the proposal.
fn kept_comment(k: &Kept) -> String {
    format!(
        "kept from today: {} (decided {})",
        k.from,
        crate::engine::job_report::plural(k.decided_runs, "run", "runs")
    )
}

/// A rule of today's as an item of a `rules:` list at `pad`: its comment, then the rule on one
/// line in flow style; one a rule before it shadows, its comment alone, saying why.
pub(super) fn kept_yaml(k: &Kept, rule: &serde_json::Value, pad: &str) -> String {
    if k.shadowed {
        return format!(
            "{pad}# {}: dropped, a rule before it matches every failure it matches: {}\n",
            comment(&kept_comment(k)),
            comment(&flow(rule))
        );
    }
    format!("{pad}# {}\n{pad}- {}\n", comment(&kept_comment(k)), flow(rule))
}

/// Whether no rule is written: none proposed, and every kept one shadowed.
pub(super) fn no_rules_written(proposed: usize, kept: &[Kept]) -> bool {
    proposed == 0 && kept.iter().all(|k| k.shadowed)
}

/// A comment line's text: one line for every YAML reader. Control characters and every line
/// break YAML 1.1 knows (`\n`, `\r`, U+0085, U+2028, U+2029: PyYAML and go-yaml, the readers
/// of kubectl, armadactl and the executor's config, end a comment at each) are written as
/// escapes (`\x1b`, `\u2028`), so that no message text can end the comment and add a key.
pub fn comment(s: &str) -> String {
    crate::diag::shown(s).into_owned()
}

/// The policy's settings besides its rules: the baseline's first policy's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicySettings {
    pub name: String,
    pub default_action: Option<Action>,
    pub retry_limit: Option<u32>,
    /// What a default-action retry takes (design): the baseline's first policy's.
    pub backoff: Backoff,
    pub anti_affinity: Option<AntiAffinityMode>,
    /// A learned Retry default's limit (docs/reference/suggest.md "The policy's defaults"):
    /// design, the policy's `retryLimit` (every other rule writes its own); upstream, it
    /// joins the rules' in the one `retryLimit`.
    pub default_limit: Option<u32>,
    /// The learned default's evidence, a comment above the policy's settings.
    pub default_note: Option<String>,
}

impl PolicySettings {
    /// The design policy's `retryLimit` as written: a learned Retry default's, else today's.
    pub fn design_retry_limit(&self) -> Option<u32> {
        self.default_limit.or(self.retry_limit)
    }

    /// The learned default's evidence as comment lines at `pad`, none when today's stays.
    pub(super) fn default_comment(&self, pad: &str) -> String {
        self.default_note
            .as_deref()
            .map_or_else(String::new, |n| format!("{pad}# {}\n", comment(n)))
    }
}
