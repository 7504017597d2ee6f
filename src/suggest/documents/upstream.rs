//! What today's Armada's documents are made of ([`Upstream`]: the executor's
//! `errorCategories` config and a v1beta1 `RetryPolicy` matching its categories, and what the
//! report says of them): the deployed config they build on ([`Deployed`]) and its rules kept
//! as written, the actions they change ([`ActionChange`]), and the head comments under
//! `--keep-categorizer`.
//!
//! Owns: those types and what the proposal keeps of the deployed config. Must not: place a
//! rule (that is `placement`) or write the documents (that is `written`).

use crate::model::categorizer::Shape;
use crate::model::policy::{Action, Mutation};
use crate::suggest::exits::Unsplit;
use crate::yaml::quoted;

use super::categories::NewCategory;

/// The first line of the executor config's header under `--keep-categorizer`: nothing to
/// roll out, or the `added` categories after the deployed ones.
pub fn kept_head(added: usize) -> String {
    match added {
        0 => "# --keep-categorizer: today's executor config as it is; nothing to roll out.\n".to_string(),
        n => format!(
            "# --keep-categorizer: today's categories as they are, then {} for failures none of them takes; roll it out before the policy.\n",
            crate::engine::job_report::plural(n as u64, "new category", "new categories")
        ),
    }
}

/// The comment lines `suggest` writes (a verdict, its headers) taken off the head of a
/// deployed file written as it is: an earlier proposal's, rolled out, must not speak for
/// this one (`apply` reads a verdict there).
pub fn without_suggests_head(text: &str) -> String {
    let ours = [
        "# verdict: ",
        "# --keep-categorizer: ",
        "# Proposed by `retryctl suggest`",
        "# The executor's config (errorCategories), not a server resource",
    ];
    let mut out = String::with_capacity(text.len());
    let mut heading = true;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        heading &= t.is_empty() || t.starts_with('#');
        if heading && ours.iter().any(|o| t.starts_with(o)) {
            continue;
        }
        out.push_str(line);
    }
    out
}

/// What the categorizer document says, and stderr, without a deployed config to build on.
pub const NOT_COMPLETE: &str =
    "add these categories before the executor's existing errorCategories: they are not a complete config";

/// The upstream documents and what the report says of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// The header's comment lines of the executor's config.
    pub head: String,
    /// The rest of it: the bare `errorCategories:` document (under the deployed file's shape).
    pub config: String,
    /// Where `config` holds the `errorCategories` mapping: under `application:` (the
    /// executor's file), or at its top (a bare document, or no deployed file).
    pub shape: Shape,
    /// The v1beta1 RetryPolicy.
    pub policy: String,
    /// The largest limit among the Retry rules (`None`: no Retry rule).
    pub policy_retry_limit: Option<u32>,
    /// The policy's one `retryLimit` as written: that largest limit, else the baseline's,
    /// else 0.
    pub written_retry_limit: u32,
    /// Retry signatures whose own limit is below it (the policy raises them).
    pub raises: Vec<String>,
    /// Retry signatures whose own limit is above it, and the rule of today's a higher limit
    /// would retry further (`POLICY/INDEX`): the limit stays today's.
    pub cut: Vec<String>,
    pub cut_by: Option<String>,
    /// Per proposed rule (in `rules`' order): the index of the v1beta1 rule that decides it.
    pub rule_index: Vec<usize>,
    /// The new categories.
    pub categories: Vec<NewCategory>,
    /// Categories holding signatures whose proposals differ: no one matcher tells them apart.
    pub merged: Vec<Merged>,
    /// What the executor does with failed pods that changes, for every queue.
    pub action_changes: Vec<ActionChange>,
    /// The action of each rule the policy writes of its own (signatures proposing alike on
    /// one category share one), in order.
    pub rule_actions: Vec<Action>,
}

impl Upstream {
    /// The executor's config as `-o policy` prints it before the policy: told apart from it,
    /// since `apply` reads the file too.
    pub fn categorizer(&self) -> String {
        format!(
            "{}# The executor's config (errorCategories), not a server resource: `retryctl apply` skips it.\n{}",
            self.head, self.config
        )
    }

    /// The same as a file of its own (`--executor-config`), which has no policy beside it.
    pub fn executor_config(&self) -> String {
        format!("{}{}", self.head, self.config)
    }
}

/// A category that stands for signatures whose proposals differ, which no matcher upstream
/// allows can split (one rule, one matcher): it takes the decision that loses no job.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub category: String,
    pub signatures: Vec<String>,
    /// Why no `onExitCodes` rule splits them: each of its signatures that has a reason.
    pub unsplit: Vec<(String, Unsplit)>,
}

/// A category whose pods the executor treats otherwise under the proposal: cluster-wide.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionChange {
    pub category: String,
    /// A new category: the deployed one (`C` or `C/S`) it takes runs from.
    pub takes_from: Option<String>,
    /// Its pods are deleted on failure now (else kept).
    pub delete: bool,
}

impl ActionChange {
    /// `pods of category X are deleted on failure, for every queue (were kept)`.
    pub fn words(&self) -> String {
        let (now, was) = if self.delete {
            ("deleted", "kept")
        } else {
            ("kept", "deleted")
        };
        match &self.takes_from {
            Some(from) => format!(
                "pods of category `{}` (runs of `{from}` before) are {now} on failure, for every queue (were {was})",
                self.category
            ),
            None => format!(
                "pods of category `{}` are {now} on failure, for every queue (were {was})",
                self.category
            ),
        }
    }
}

/// The deployed rule that classifies into `category` (and `subcategory`): the first of that
/// category with that subcategory.
pub(super) fn deployed_rule<'d>(
    deployed: Option<&'d crate::model::categorizer::ErrorCategories>,
    category: &str,
    subcategory: Option<&str>,
) -> Option<&'d crate::model::categorizer::CategoryRule> {
    deployed?
        .categories
        .iter()
        .filter(|c| c.name == category)
        .flat_map(|c| c.rules.iter())
        .find(|r| r.subcategory == subcategory.unwrap_or(""))
}

pub(super) fn existing_rule_yaml(r: &crate::model::categorizer::CategoryRule, pad: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    if !r.on_conditions.is_empty() {
        let c: Vec<String> = r.on_conditions.iter().map(|c| quoted(c)).collect();
        lines.push(format!("onConditions: [{}]", c.join(", ")));
    }
    if let Some(e) = &r.on_exit_codes {
        let v: Vec<String> = e.values.iter().map(i32::to_string).collect();
        lines.push(format!(
            "onExitCodes: {{operator: {}, values: [{}]}}",
            quoted(&e.operator),
            v.join(", ")
        ));
    }
    if let Some(p) = &r.on_termination_message {
        lines.push(format!("onTerminationMessage: {{pattern: {}}}", quoted(p)));
    }
    if let Some(p) = &r.on_pod_error {
        lines.push(format!("onPodError: {{pattern: {}}}", quoted(p)));
    }
    if let Some(e) = &r.on_pod_events {
        let mut f = vec![format!("regexp: {}", quoted(&e.regexp))];
        if !e.reason.is_empty() {
            f.push(format!("reason: {}", quoted(&e.reason)));
        }
        if !e.event_type.is_empty() {
            f.push(format!("type: {}", quoted(&e.event_type)));
        }
        lines.push(format!("onPodEvents: {{{}}}", f.join(", ")));
    }
    if !r.container_name.is_empty() {
        lines.push(format!("containerName: {}", quoted(&r.container_name)));
    }
    if !r.subcategory.is_empty() {
        lines.push(format!("subcategory: {}", quoted(&r.subcategory)));
    }
    if !r.hint.is_empty() {
        lines.push(format!("hint: {}", quoted(&r.hint)));
    }
    let mut out = String::new();
    for (k, l) in lines.iter().enumerate() {
        out.push_str(pad);
        out.push_str(if k == 0 { "- " } else { "  " });
        out.push_str(l);
        out.push('\n');
    }
    if lines.is_empty() {
        out.push_str(&format!("{pad}- {{}}\n"));
    }
    out
}

/// A v1beta1 rule: its evidence lines, action, `onCategory`, `onSubcategory`, and `mutate`.
pub(super) type PolicyRule = (Vec<String>, Action, String, Option<String>, Option<Mutation>);

/// The deployed categorizer a proposal builds on: its config and its document as read (the
/// file's other keys, which the proposal's document keeps).
#[derive(Debug, Clone, Copy)]
pub struct Deployed<'a> {
    pub config: &'a crate::model::categorizer::ErrorCategories,
    pub document: &'a crate::yaml::Node,
    /// `--keep-categorizer`: its categories first, as they are, and the new ones after
    /// them (they take only the runs none of the deployed ones takes); else the new ones
    /// first, which take their runs from the deployed ones.
    pub kept_first: bool,
}

/// The `errorCategories` mapping `block` (written from the first column) in the deployed
/// file's shape (docs/reference/suggest.md "The categorizer document"), and that shape: under
/// `application:` when the deployed config's categories were (the executor's file: its
/// `errorCategories` at the top, if it has one too, is not the executor's and is kept as
/// it is), at the top when they were (a bare document), every other key of the document
/// kept, in its order, with its value (not its comments); without a deployed file, or one
/// whose shape cannot be followed, the mapping alone (bare).
pub fn shaped(block: &str, deployed: Option<&Deployed<'_>>) -> (String, Shape) {
    use crate::yaml::{write_entry, Value};
    let alone = || (block.to_string(), Shape::Bare);
    let Some(deployed) = deployed else { return alone() };
    let Value::Map(top) = &deployed.document.value else {
        return alone();
    };
    let shape = deployed.config.shape;
    let is = |k: &crate::yaml::Node, name: &str| k.as_scalar().is_some_and(|t| t.eq_ignore_ascii_case(name));
    let indented = |indent: usize| -> String {
        let pad = " ".repeat(indent);
        block.lines().map(|l| format!("{pad}{l}\n")).collect()
    };
    let mut out = String::new();
    let mut placed = false;
    for (key, value) in top {
        match &value.value {
            Value::Map(app) if shape == Shape::Executor && is(key, "application") && !placed => {
                out.push_str("application:\n");
                for (k, v) in app {
                    if is(k, "errorCategories") && !placed {
                        out.push_str(&indented(2));
                        placed = true;
                    } else {
                        write_entry(k, v, 2, &mut out);
                    }
                }
                if !placed {
                    out.push_str(&indented(2));
                    placed = true;
                }
            }
            _ if shape == Shape::Bare && is(key, "errorCategories") && !placed => {
                out.push_str(block);
                placed = true;
            }
            _ => write_entry(key, value, 0, &mut out),
        }
    }
    if !placed {
        return alone();
    }
    (out, shape)
}
