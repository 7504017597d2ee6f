//! The proposed rules as documents (docs/reference/suggest.md "The proposal"): a design
//! `RetryPolicy`; or, for today's Armada, the executor's `errorCategories` config and a
//! v1beta1 `RetryPolicy` whose rules match its categories; and with `--queue`, the Queue
//! with the proposal first.
//!
//! Owns: the documents' text (each rule under a comment with its evidence, a template's
//! pattern as `pattern` builds it) and the categories' names. Pure: text in, text out;
//! whether the documents validate is checked by the command, through `validate`'s own reader.

use crate::model::categorizer::Shape;
use crate::model::encode;
use crate::model::policy::{Action, AntiAffinityMode, Backoff, Condition, Mutation};

use super::exits::Unsplit;
use super::pattern::{pattern, pod_error_pattern};
use super::propose::Proposed;
use super::today::{Kept, Place};
use crate::model::signature::Signature;

pub use crate::yaml::quoted;

/// A comment line's text: one line for every YAML reader. Control characters and every line
/// break YAML 1.1 knows (`\n`, `\r`, U+0085, U+2028, U+2029: PyYAML and go-yaml, the readers
/// of kubectl, armadactl and the executor's config, end a comment at each) are written as
/// escapes (`\x1b`, `\u2028`), so that no message text can end the comment and add a key.
pub fn comment(s: &str) -> String {
    crate::diag::shown(s).into_owned()
}

/// The policy's settings besides its rules: the baseline's first policy's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
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

impl Settings {
    /// The design policy's `retryLimit` as written: a learned Retry default's, else today's.
    pub fn design_retry_limit(&self) -> Option<u32> {
        self.default_limit.or(self.retry_limit)
    }

    /// The learned default's evidence as comment lines at `pad`, none when today's stays.
    fn default_comment(&self, pad: &str) -> String {
        self.default_note
            .as_deref()
            .map_or_else(String::new, |n| format!("{pad}# {}\n", comment(n)))
    }
}

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
fn mutate_flow(m: &Mutation) -> String {
    flow(&encode::mutation(m))
}

/// A value on one line in YAML's flow style (`{affinity: {avoidSameNode: true}}`): a string
/// plain when it reads back as itself, else [`quoted`].
fn flow(v: &serde_json::Value) -> String {
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
fn kept_yaml(k: &Kept, rule: &serde_json::Value, pad: &str) -> String {
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
fn no_rules_written(proposed: usize, kept: &[Kept]) -> bool {
    proposed == 0 && kept.iter().all(|k| k.shadowed)
}

/// The design dialect: one RetryPolicy.
pub fn design_policy(settings: &Settings, rules: &[Documented<'_>], kept: &[Kept], header: &str) -> String {
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

/// FNV-1a 64 of `s`.
pub fn fnv1a64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The name of a new category for `rule` (docs/suggest.md "Categories"): `s-`, the first
/// words of its template (else its kind and container: `oom-loader`, `exit-2-main`)
/// lowercased with every run of other characters than `[a-z0-9]` made `-`, at most 40
/// characters, then `-` and the low 32 bits of FNV-1a 64 of the signature in hex. A category
/// split off for the signature's exit code (`Place::Exit`) is named so too: from its
/// failure's words (`s-lost-connection-to-parameter-server-…`), not from the code it matches.
pub fn short_category_name(rule: &Proposed) -> String {
    let words = match &rule.signature {
        Signature::Container { template, .. } | Signature::PodError { template, .. } if !template.is_empty() => {
            template.clone()
        }
        Signature::Container { exit: None, name, .. } => format!("oom {name}"),
        Signature::Container {
            exit: Some(code), name, ..
        } => format!("exit {code} {name}"),
        Signature::Condition(c) => c.as_str().to_string(),
        _ => rule.text.clone(),
    };
    let mut slug = String::new();
    let mut dash = false;
    for ch in words.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
            if dash && !slug.is_empty() {
                slug.push('-');
            }
            dash = false;
            slug.push(ch);
        } else {
            dash = true;
        }
    }
    slug.truncate(40);
    let slug = slug.trim_end_matches('-');
    let hash = fnv1a64(&rule.text) & 0xffff_ffff;
    if slug.is_empty() {
        format!("s-{hash:08x}")
    } else {
        format!("s-{slug}-{hash:08x}")
    }
}

/// What a new category matches (upstream's categorizer takes one matcher per rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    Condition(Condition),
    /// An OOM kill of one container (signatures of two containers may be proposed apart).
    Oom {
        container: String,
    },
    ExitCode {
        container: String,
        code: i64,
    },
    Message {
        container: String,
        pattern: String,
    },
    PodError {
        pattern: String,
    },
}

/// The matcher of a proposed signature's category; `None` for a category signature (it is
/// one already).
pub fn matcher(rule: &Proposed) -> Option<Matcher> {
    Some(match &rule.signature {
        Signature::Condition(c) => Matcher::Condition(*c),
        Signature::Container {
            exit: None,
            template,
            name,
            ..
        } if template.is_empty() => Matcher::Oom {
            container: name.clone(),
        },
        Signature::Container { name, template, .. } if !template.is_empty() => Matcher::Message {
            container: name.clone(),
            pattern: pattern(template, rule.cut),
        },
        Signature::Container {
            name, exit: Some(code), ..
        } => Matcher::ExitCode {
            container: name.clone(),
            code: *code,
        },
        Signature::Container { .. } => return None,
        Signature::PodError { template, .. } => Matcher::PodError {
            pattern: pod_error_pattern(template, rule.cut),
        },
        Signature::Category { .. } | Signature::Unknown => return None,
    })
}

/// One category of the proposed categorizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCategory {
    pub name: String,
    pub delete: bool,
    pub matcher: Matcher,
    /// The deployed category (`C` or `C/S`) it splits, and the subcategory and hint it
    /// copies from the deployed rule that classified most of its runs.
    pub splits: Option<String>,
    pub subcategory: Option<String>,
    pub hint: Option<String>,
    /// The signatures it stands for (several share a message matcher).
    pub signatures: Vec<String>,
    /// A category of one signature's exit code (`Place::Exit`), written before the others.
    pub exit_split: bool,
}

/// A category's rule, as YAML lines under `rules:` (indent `pad`).
pub fn category_rule_yaml(m: &Matcher, pad: &str) -> String {
    match m {
        Matcher::Condition(c) => format!("{pad}- onConditions: [{}]\n", c.as_str()),
        Matcher::Oom { container } => {
            let mut s = format!("{pad}- onConditions: [OOMKilled]\n");
            if !container.is_empty() {
                s.push_str(&format!("{pad}  containerName: {}\n", quoted(container)));
            }
            s
        }
        Matcher::ExitCode { container, code } => {
            let mut s = format!("{pad}- onExitCodes: {{operator: In, values: [{code}]}}\n");
            if !container.is_empty() {
                s.push_str(&format!("{pad}  containerName: {}\n", quoted(container)));
            }
            s
        }
        Matcher::Message { container, pattern } => {
            let mut s = format!("{pad}- onTerminationMessage: {{pattern: {}}}\n", quoted(pattern));
            if !container.is_empty() {
                s.push_str(&format!("{pad}  containerName: {}\n", quoted(container)));
            }
            s
        }
        Matcher::PodError { pattern } => format!("{pad}- onPodError: {{pattern: {}}}\n", quoted(pattern)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployed_file_written_as_it_is_loses_only_an_earlier_proposals_comment_lines() {
        let earlier = "# verdict: reject (do not adopt): loses 2 jobs\n\
                       # --keep-categorizer: today's executor config as it is; nothing to roll out.\n\
                       # Proposed by `retryctl suggest` from 9 jobs (9 failed runs); --min-trials 5.\n\
                       # edited by bob\n\
                       errorCategories:\n  # verdict: reject (a value's comment, not the head's)\n  enabled: true\n";
        assert_eq!(
            without_suggests_head(earlier),
            "# edited by bob\nerrorCategories:\n  # verdict: reject (a value's comment, not the head's)\n  enabled: true\n"
        );
        assert_eq!(
            kept_head(1),
            "# --keep-categorizer: today's categories as they are, then 1 new category for failures none of them takes; roll it out before the policy.\n"
        );
    }

    #[test]
    fn comments_escape_every_line_break_a_yaml_reader_knows() {
        assert_eq!(
            comment("a\nb\rc\u{85}d\u{2028}e\u{2029}f\u{1b}[Ag\u{7}é"),
            "a\\x0ab\\x0dc\\u0085d\\u2028e\\u2029f\\x1b[Ag\\x07é"
        );
    }

    #[test]
    fn quoted_scalars_escape_everything_but_printable_ascii() {
        assert_eq!(
            quoted("a\"b\\c\nd\u{85}é😀"),
            "\"a\\\"b\\\\c\\u000Ad\\u0085\\u00E9\\U0001F600\""
        );
    }

    /// A learned Retry default's limit is one more in upstream's one `retryLimit`: it raises
    /// it past today's where nothing blocks the raise, and is cut with the rules where a kept
    /// rule would retry further; its evidence heads the policy's settings.
    #[test]
    fn a_learned_default_joins_the_one_retry_limit() {
        let rule = Proposed::for_test(
            "category:gpu",
            Signature::Category {
                category: "gpu".into(),
                subcategory: None,
            },
            Action::Retry,
            Some(3),
        );
        let documented = [Documented {
            rule: &rule,
            evidence: String::new(),
            mutate: None,
            place: None,
            unsplit: None,
        }];
        let settings = Settings {
            name: "suggested".into(),
            default_action: Some(Action::Retry),
            retry_limit: Some(2),
            default_limit: Some(4),
            default_note: Some("(default): learned from 1 signature".into()),
            ..Settings::default()
        };
        let u = upstream_documents(&settings, &documented, &[], None, None, "h", &[]);
        assert_eq!((u.policy_retry_limit, u.written_retry_limit), (Some(4), 4));
        assert_eq!(
            (u.raises.as_slice(), u.cut.as_slice()),
            (&["category:gpu".to_string()][..], &[][..])
        );
        assert!(
            u.policy.contains(
                "name: suggested\n# (default): learned from 1 signature\nretryLimit: 4\ndefaultAction: Retry\n"
            ),
            "{}",
            u.policy
        );
        let u = upstream_documents(&settings, &documented, &[], Some("today/0"), None, "h", &[]);
        assert_eq!(u.written_retry_limit, 2);
        assert_eq!(u.cut, ["category:gpu", "(default)"]);
        assert_eq!(u.cut_by.as_deref(), Some("today/0"));
    }

    #[test]
    fn category_names_are_short_slugs_with_a_hash() {
        let rule = |text: &str, signature: Signature| Proposed::for_test(text, signature, Action::Retry, Some(1));
        let container = |exit, name: &str, template: &str| Signature::Container {
            exit,
            name: name.into(),
            init: false,
            template: template.into(),
            cut: false,
        };
        let n = short_category_name(&rule(
            "exit:139@main \"CUDA error: an illegal memory access was encountered\"",
            container(
                Some(139),
                "main",
                "CUDA error: an illegal memory access was encountered",
            ),
        ));
        assert!(n.starts_with("s-cuda-error-an-illegal-memory-access-was-"), "{n}");
        assert!(n.len() <= 2 + 40 + 1 + 8, "{n}");
        let oom = short_category_name(&rule("oom@loader", container(None, "loader", "")));
        assert!(oom.starts_with("s-oom-loader-"), "{oom}");
        let exit = short_category_name(&rule("exit:2@main", container(Some(2), "main", "")));
        assert!(exit.starts_with("s-exit-2-main-"), "{exit}");
        // With a message, the exit code is no part of the name.
        let split = short_category_name(&rule(
            "exit:4@main \"Lost connection to parameter server <n>\"",
            container(Some(4), "main", "Lost connection to parameter server <n>"),
        ));
        assert!(split.starts_with("s-lost-connection-to-parameter-server-n-"), "{split}");
        assert_ne!(
            short_category_name(&rule("oom@a", container(None, "a", ""))),
            short_category_name(&rule("oom@A", container(None, "A", "")))
        );
    }
}

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
fn deployed_rule<'d>(
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

fn existing_rule_yaml(r: &crate::model::categorizer::CategoryRule, pad: &str) -> String {
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
type PolicyRule = (Vec<String>, Action, String, Option<String>, Option<Mutation>);

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

/// The upstream dialect: the executor's categorizer (`deployed` with the new categories
/// first, or a new one) and a v1beta1 policy whose rules match the categories.
/// `kept`: today's first policy's rules (after the proposed ones); `raise_blocked`: the rule
/// of today's that a higher `retryLimit` would retry further (`today::raise_blocked_by`);
/// `collide`: deployed categories made `Delete` because today's retries of them collide.
#[allow(clippy::too_many_arguments)] // the documents' inputs, each its own part of the proposal
pub fn upstream_documents(
    settings: &Settings,
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

/// Where the proposed rules go upstream ([`Placement::of`]): the new categories and the
/// v1beta1 rules that match them, in the order they are written.
struct Placement {
    /// The new categories (those of one signature's exit code first).
    categories: Vec<NewCategory>,
    /// The policy's own rules.
    policy_rules: Vec<PolicyRule>,
    /// Per proposed rule that has one: the index of the v1beta1 rule that decides it.
    rule_index: Vec<usize>,
    /// Deployed categories made `Delete`.
    delete_existing: Vec<String>,
    /// New categories holding signatures whose proposals differ.
    merged: Vec<Merged>,
}

impl Placement {
    /// Each of `rules` on its category, in order. Deployed categories whose kept pods today's
    /// retries collide with (`collide`: no trial of theirs ever ran) are deleted so that
    /// they can.
    fn of(
        rules: &[Documented<'_>],
        deployed: Option<&crate::model::categorizer::ErrorCategories>,
        collide: &[String],
    ) -> Placement {
        let mut placed = Placement {
            categories: Vec::new(),
            policy_rules: Vec::new(),
            rule_index: Vec::with_capacity(rules.len()),
            delete_existing: collide.to_vec(),
            merged: Vec::new(),
        };
        for d in rules {
            placed.place(d, deployed);
        }
        placed.say_why_unsplit(rules);
        placed
    }

    /// One proposed rule: on the deployed category its signature has (or reuses), on the
    /// new category of its matcher that another signature made, or on a category of its own.
    fn place(&mut self, d: &Documented<'_>, deployed: Option<&crate::model::categorizer::ErrorCategories>) {
        let r = d.rule;
        let reuse = match (&r.signature, &d.place) {
            (Signature::Category { category, subcategory }, _) => Some((category.clone(), subcategory.clone())),
            (_, Some(Place::Reuse { category, subcategory })) => Some((category.clone(), subcategory.clone())),
            _ => None,
        };
        // A signature whose exit code is its alone: a category of that code in its container.
        let exit = match &d.place {
            Some(Place::Exit { container, code, .. }) => Some(Matcher::ExitCode {
                container: container.clone(),
                code: *code,
            }),
            _ => None,
        };
        let (category, sub) = match (reuse, exit.clone().or_else(|| matcher(r))) {
            (Some((category, subcategory)), _) => match self.reuse(d, category, subcategory) {
                Some(own) => own,
                None => return,
            },
            (None, Some(m)) => match self.categories.iter().position(|c| c.matcher == m) {
                Some(at) => return self.join(d, at),
                None => (self.new_category(d, m, exit.is_some(), deployed), None),
            },
            // `propose` gives no rule to signatures without a matcher.
            (None, None) => return,
        };
        self.rule_index.push(self.policy_rules.len());
        self.policy_rules.push((
            vec![format!("{}: {}", r.text, d.evidence)],
            r.action,
            category,
            sub,
            d.mutate(),
        ));
    }

    /// A rule on a deployed category (made `Delete` for a Retry rule): its category and
    /// subcategory, or `None` when a rule of the same action on it takes the signature
    /// already (signatures proposing alike on one deployed category share its rule).
    fn reuse(
        &mut self,
        d: &Documented<'_>,
        category: String,
        subcategory: Option<String>,
    ) -> Option<(String, Option<String>)> {
        let r = d.rule;
        if r.action == Action::Retry && !self.delete_existing.contains(&category) {
            self.delete_existing.push(category.clone());
        }
        if let Some(at) = self
            .policy_rules
            .iter()
            .position(|p| p.2 == category && p.3 == subcategory && p.1 == r.action)
        {
            self.policy_rules[at].0.push(format!("{}: {}", r.text, d.evidence));
            self.rule_index.push(at);
            return None;
        }
        Some((category, subcategory))
    }

    /// A rule whose matcher new category `at` has already: the signature joins it and its
    /// rule.
    fn join(&mut self, d: &Documented<'_>, at: usize) {
        let r = d.rule;
        let retry = r.action == Action::Retry;
        let c = &mut self.categories[at];
        c.signatures.push(r.text.clone());
        c.delete |= retry;
        let at = self
            .policy_rules
            .iter()
            .position(|p| p.2 == c.name && p.3.is_none())
            .expect("a category's rule is made with it");
        self.policy_rules[at].0.push(format!("{}: {}", r.text, d.evidence));
        // One matcher for signatures whose proposals differ (a message with two
        // exit codes: a rule has one matcher): no category tells them apart, so
        // the one they share takes the decision that loses no job, Retry (the one
        // `retryLimit` is every Retry rule's), with the Retry signature's mutate.
        if self.policy_rules[at].1 != r.action {
            if retry {
                self.policy_rules[at].1 = Action::Retry;
                self.policy_rules[at].4 = d.mutate();
            }
            match self.merged.iter_mut().find(|g: &&mut Merged| g.category == c.name) {
                Some(g) => g.signatures.push(r.text.clone()),
                None => self.merged.push(Merged {
                    category: c.name.clone(),
                    signatures: c.signatures.clone(),
                    unsplit: Vec::new(),
                }),
            }
        } else if let Some(g) = self.merged.iter_mut().find(|g| g.category == c.name) {
            g.signatures.push(r.text.clone());
        }
        self.rule_index.push(at);
    }

    /// A new category of matcher `m` for the rule (`exit`: of its signature's exit code,
    /// written before the message's category, which would take its runs first), with the
    /// subcategory and hint of the deployed rule it splits; its name.
    fn new_category(
        &mut self,
        d: &Documented<'_>,
        m: Matcher,
        exit: bool,
        deployed: Option<&crate::model::categorizer::ErrorCategories>,
    ) -> String {
        let r = d.rule;
        let name = short_category_name(r);
        let of = match &d.place {
            Some(Place::Split { of } | Place::Exit { of, .. }) => of.clone(),
            _ => None,
        };
        let (subcategory, hint) = of
            .as_ref()
            .and_then(|(c, s)| deployed_rule(deployed, c, s.as_deref()))
            .map_or((None, None), |r| {
                (
                    (!r.subcategory.is_empty()).then(|| r.subcategory.clone()),
                    (!r.hint.is_empty()).then(|| r.hint.clone()),
                )
            });
        // Before the message's category, which would take its runs first.
        let at = if exit {
            self.categories.iter().take_while(|c| c.exit_split).count()
        } else {
            self.categories.len()
        };
        self.categories.insert(
            at,
            NewCategory {
                exit_split: exit,
                name: name.clone(),
                delete: r.action == Action::Retry,
                matcher: m,
                splits: of.map(|(c, s)| match s {
                    Some(s) => format!("{c}/{s}"),
                    None => c,
                }),
                subcategory,
                hint,
                signatures: vec![r.text.clone()],
            },
        );
        name
    }

    /// Each merged category's signatures that say why no `onExitCodes` rule splits them.
    fn say_why_unsplit(&mut self, rules: &[Documented<'_>]) {
        for g in &mut self.merged {
            g.unsplit = g
                .signatures
                .iter()
                .filter_map(|s| {
                    let d = rules.iter().find(|d| d.rule.text == *s)?;
                    Some((s.clone(), d.unsplit.clone()?))
                })
                .collect();
        }
    }
}

/// The policy's one `retryLimit`, and the Retry signatures whose own limit it raises or
/// cuts (the fields of [`Upstream`] of the same names).
struct Limits {
    policy_retry_limit: Option<u32>,
    written_retry_limit: u32,
    raises: Vec<String>,
    cut: Vec<String>,
    cut_by: Option<String>,
}

impl Limits {
    fn of(settings: &Settings, rules: &[Documented<'_>], raise_blocked: Option<&str>) -> Limits {
        let policy_retry_limit = rules
            .iter()
            .filter_map(|d| d.rule.limit)
            .chain(settings.default_limit)
            .max();
        // Today's limit, raised to the proposal's only where no rule of today's would retry
        // further for it.
        let (written_retry_limit, cut_by) = match (policy_retry_limit, settings.retry_limit) {
            (Some(l), Some(today)) if l > today => match raise_blocked {
                Some(by) => (today, Some(by.to_string())),
                None => (l, None),
            },
            (l, today) => (today.or(l).unwrap_or(0), None),
        };
        // The learned default's limit is one more (docs/reference/suggest.md "The policy's
        // defaults").
        let limits = || {
            rules
                .iter()
                .map(|d| (d.rule.limit, d.rule.text.as_str()))
                .chain(std::iter::once((settings.default_limit, super::propose::DEFAULT)))
        };
        let raises = limits()
            .filter(|(l, _)| l.is_some_and(|l| l < written_retry_limit))
            .map(|(_, t)| t.to_string())
            .collect();
        let cut = limits()
            .filter(|(l, _)| l.is_some_and(|l| l > written_retry_limit))
            .map(|(_, t)| t.to_string())
            .collect();
        Limits {
            policy_retry_limit,
            written_retry_limit,
            raises,
            cut,
            cut_by,
        }
    }
}

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
    settings: &Settings,
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
