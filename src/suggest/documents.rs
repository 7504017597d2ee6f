//! The proposed rules as documents (docs/reference/suggest.md "The proposal"): a design
//! `RetryPolicy`; or, for today's Armada, the executor's `errorCategories` config and a
//! v1beta1 `RetryPolicy` whose rules match its categories; and with `--queue`, the Queue
//! with the proposal first.
//!
//! Owns: the documents' text (each rule under a comment with its evidence), the pattern a
//! message template becomes, and the categories' names. Pure: text in, text out; whether the
//! documents validate is checked by the command, through `validate`'s own reader.

use crate::model::policy::{Action, Condition};

use super::propose::Proposed;
use super::signature::Signature;

/// The regular expression of `<uuid>`.
pub const UUID_PATTERN: &str = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
/// The regular expression of `<hex>`.
pub const HEX_PATTERN: &str = "(0x[0-9a-fA-F]+|[0-9a-fA-F]*[0-9][0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*|[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]*[0-9][0-9a-fA-F]*)";

/// Escapes `s` as Go's `regexp.QuoteMeta` does: `\.+*?()|[]{}^$` get a backslash.
pub fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if "\\.+*?()|[]{}^$".contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// The pattern that matches a message whose template is `template`: its masks as classes,
/// its spaces as runs of blanks, the rest literal; anchored at the line's end unless some
/// message's first line was cut (`cut`).
pub fn pattern(template: &str, cut: bool) -> String {
    let mut out = String::from("^[ \\t\\r\\f]*");
    let mut rest = template;
    let mut literal = String::new();
    while let Some(ch) = rest.chars().next() {
        let mask = [
            ("<uuid>", UUID_PATTERN),
            ("<hex>", HEX_PATTERN),
            ("<n>", "[0-9]+"),
            (" ", "[ \\t\\r\\f]+"),
        ]
        .into_iter()
        .find(|(m, _)| rest.starts_with(m));
        match mask {
            Some((m, re)) => {
                out.push_str(&quote_meta(&literal));
                literal.clear();
                out.push_str(re);
                rest = &rest[m.len()..];
            }
            None => {
                literal.push(ch);
                rest = &rest[ch.len_utf8()..];
            }
        }
    }
    out.push_str(&quote_meta(&literal));
    if !cut {
        out.push_str("[ \\t\\r\\f]*(\\n|$)");
    }
    out
}

/// A YAML double-quoted scalar of `s`: printable ASCII as is, everything else escaped, so
/// that no message text can end the scalar or the line.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            ' '..='~' => out.push(ch),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// A comment line's text: one line for every YAML reader. Control characters and every line
/// break YAML 1.1 knows (`\n`, `\r`, U+0085, U+2028, U+2029: PyYAML and go-yaml, the readers
/// of kubectl, armadactl and the executor's config, end a comment at each) are written as
/// escapes (`\x1b`, `\u2028`), so that no message text can end the comment and add a key.
fn comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if (c as u32) < 0x80 && c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// The policy's settings besides its rules: the baseline's first policy's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub name: String,
    pub default_action: Option<Action>,
    pub retry_limit: Option<u32>,
}

/// A rule and the words of its evidence (a comment above it).
pub struct Documented<'a> {
    pub rule: &'a Proposed,
    pub evidence: String,
}

/// The design dialect: one RetryPolicy.
pub fn design_policy(settings: &Settings, rules: &[Documented<'_>], header: &str) -> String {
    let mut y = String::new();
    for line in header.lines() {
        y.push_str(&format!("# {}\n", comment(line)));
    }
    y.push_str("apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata:\n");
    y.push_str(&format!("  name: {}\nspec:\n", settings.name));
    if let Some(l) = settings.retry_limit {
        y.push_str(&format!("  retryLimit: {l}\n"));
    }
    y.push_str(&format!(
        "  defaultAction: {}\n",
        settings.default_action.unwrap_or(Action::Fail).as_str()
    ));
    if rules.is_empty() {
        y.push_str("  rules: []\n");
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
        if r.avoid_same_node {
            y.push_str("      mutate: {affinity: {avoidSameNode: true}}\n");
        }
    }
    y
}

/// FNV-1a 64 of `s`.
fn fnv1a64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The name of a new category: `s-` and the signature lowercased with every run of other
/// characters than `[a-z0-9]` made `-`, trimmed of `-`, cut to 54 characters, then `-` and
/// the low 32 bits of FNV-1a 64 of the signature in hex (63 characters at most).
pub fn category_name(signature: &str) -> String {
    let mut slug = String::new();
    let mut dash = false;
    for ch in signature.chars().flat_map(char::to_lowercase) {
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
    // 54 characters with the `s-`, so that the name (63 at most, as Kubernetes labels) has
    // room for the hash.
    let mut name = format!("s-{slug}");
    name.truncate(54);
    let name = name.trim_end_matches('-');
    format!("{name}-{:08x}", fnv1a64(signature) & 0xffff_ffff)
}

/// What a new category matches (upstream's categorizer takes one matcher per rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matcher {
    Condition(Condition),
    ExitCode { container: String, code: i64 },
    Message { container: String, pattern: String },
    PodError { pattern: String },
}

/// The matcher of a proposed signature's category; `None` for a category signature (it is
/// one already).
pub fn matcher(rule: &Proposed) -> Option<Matcher> {
    Some(match &rule.signature {
        Signature::Condition(c) => Matcher::Condition(*c),
        Signature::Container {
            exit: None, template, ..
        } if template.is_empty() => Matcher::Condition(Condition::OOMKilled),
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
            pattern: pattern(template, rule.cut),
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
    /// The signatures it stands for (several share a message matcher).
    pub signatures: Vec<String>,
}

/// A category's rule, as YAML lines under `rules:` (indent `pad`).
pub fn category_rule_yaml(m: &Matcher, pad: &str) -> String {
    match m {
        Matcher::Condition(c) => format!("{pad}- onConditions: [{}]\n", c.as_str()),
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
    fn patterns_are_built_from_templates() {
        assert_eq!(
            pattern("CUDA error <n>: x.y (z)", false),
            "^[ \\t\\r\\f]*CUDA[ \\t\\r\\f]+error[ \\t\\r\\f]+[0-9]+:[ \\t\\r\\f]+x\\.y[ \\t\\r\\f]+\\(z\\)[ \\t\\r\\f]*(\\n|$)"
        );
        assert_eq!(
            pattern("id <uuid>", true),
            format!("^[ \\t\\r\\f]*id[ \\t\\r\\f]+{UUID_PATTERN}")
        );
        assert_eq!(pattern("<hex>", true), format!("^[ \\t\\r\\f]*{HEX_PATTERN}"));
        assert_eq!(
            quote_meta("a.b*c?d(e)f|g[h]i{j}k^l$m\\n+"),
            "a\\.b\\*c\\?d\\(e\\)f\\|g\\[h\\]i\\{j\\}k\\^l\\$m\\\\n\\+"
        );
    }

    #[test]
    fn patterns_match_the_messages_they_came_from_and_no_other() {
        let rows = [
            "RuntimeError: CUDA error 700 at 0x7ffd12 for 123e4567-e89b-12d3-a456-426614174000 (step 4)",
            "  connection reset by peer [10.0.0.1:443]\tretry later  ",
            "a.b*c?d(e)f|g^h$i{j}k\\l",
            "weights sha deadbeef42 mismatch",
        ];
        for message in rows {
            let (t, cut) = super::super::signature::template(message);
            let re = crate::model::validate::compile_pattern(&pattern(&t, cut)).unwrap();
            assert!(re.is_match(message), "{message:?} !~ {t:?}");
            assert!(
                re.is_match(&format!("{message}\nsecond line")),
                "{message:?} with a second line"
            );
            assert!(!re.is_match(&format!("prefix {message}")), "{message:?} with a prefix");
            assert!(!re.is_match(&format!("{message} suffix")), "{message:?} with a suffix");
        }
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

    #[test]
    fn category_names_are_slugs_with_a_hash() {
        let n = category_name("exit:1@main \"RuntimeError: CUDA error <n>\"");
        assert!(n.starts_with("s-exit-1-main-runtimeerror-cuda-error-n-"), "{n}");
        assert_eq!(n.len(), "s-exit-1-main-runtimeerror-cuda-error-n-".len() + 8);
        let long = category_name(&"x".repeat(100));
        assert_eq!(long.len(), 54 + 1 + 8);
        assert_ne!(category_name("oom@a"), category_name("oom@A"));
    }
}

/// The upstream documents and what the report says of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Upstream {
    /// The bare `errorCategories:` document.
    pub categorizer: String,
    /// The v1beta1 RetryPolicy.
    pub policy: String,
    /// The largest limit among the Retry rules (`None`: no Retry rule).
    pub policy_retry_limit: Option<u32>,
    /// The policy's one `retryLimit` as written: that largest limit, else the baseline's,
    /// else 0.
    pub written_retry_limit: u32,
    /// Retry signatures whose own limit is below it (the policy raises them).
    pub raises: Vec<String>,
    /// Per proposed rule (in `rules`' order): the index of the v1beta1 rule that decides it.
    pub rule_index: Vec<usize>,
    /// The new categories.
    pub categories: Vec<NewCategory>,
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

/// A v1beta1 rule: its evidence lines, action, `onCategory`, `onSubcategory`, and
/// `avoidSameNode`.
type PolicyRule = (Vec<String>, Action, String, Option<String>, bool);

/// The upstream dialect: the executor's categorizer (`deployed` with the new categories
/// first, or a new one) and a v1beta1 policy whose rules match the categories.
pub fn upstream_documents(
    settings: &Settings,
    rules: &[Documented<'_>],
    deployed: Option<&crate::model::categorizer::ErrorCategories>,
    header: &str,
) -> Upstream {
    let mut categories: Vec<NewCategory> = Vec::new();
    let mut policy_rules: Vec<PolicyRule> = Vec::new();
    let mut rule_index = Vec::with_capacity(rules.len());
    let mut delete_existing: Vec<String> = Vec::new();
    for d in rules {
        let r = d.rule;
        let retry = r.action == Action::Retry;
        let (category, sub) = match (&r.signature, matcher(r)) {
            (Signature::Category { category, subcategory }, _) => {
                if retry && !delete_existing.contains(category) {
                    delete_existing.push(category.clone());
                }
                (category.clone(), subcategory.clone())
            }
            (_, Some(m)) => match categories.iter_mut().find(|c| c.matcher == m) {
                Some(c) => {
                    c.signatures.push(r.text.clone());
                    c.delete |= retry;
                    let at = policy_rules
                        .iter()
                        .position(|p| p.2 == c.name && p.3.is_none())
                        .expect("a category's rule is made with it");
                    policy_rules[at].0.push(format!("{}: {}", r.text, d.evidence));
                    rule_index.push(at);
                    continue;
                }
                None => {
                    let name = category_name(&r.text);
                    categories.push(NewCategory {
                        name: name.clone(),
                        delete: retry,
                        matcher: m,
                        signatures: vec![r.text.clone()],
                    });
                    (name, None)
                }
            },
            // `propose` gives no rule to signatures without a matcher.
            (_, None) => continue,
        };
        rule_index.push(policy_rules.len());
        policy_rules.push((
            vec![format!("{}: {}", r.text, d.evidence)],
            r.action,
            category,
            sub,
            r.avoid_same_node,
        ));
    }
    let policy_retry_limit = rules.iter().filter_map(|d| d.rule.limit).max();
    let raises = rules
        .iter()
        .filter(|d| d.rule.limit.is_some_and(|l| Some(l) < policy_retry_limit))
        .map(|d| d.rule.text.clone())
        .collect();

    let mut c = String::new();
    for line in header.lines() {
        c.push_str(&format!("# {}\n", comment(line)));
    }
    c.push_str("# The executor's config (errorCategories), not a server resource: `retryctl apply` skips it.\n");
    c.push_str("errorCategories:\n  enabled: true\n");
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
    for cat in &categories {
        for s in &cat.signatures {
            c.push_str(&format!("    # {}\n", comment(s)));
        }
        c.push_str(&format!("    - name: {}\n", cat.name));
        if cat.delete {
            c.push_str("      action: Delete\n");
        }
        c.push_str("      rules:\n");
        c.push_str(&category_rule_yaml(&cat.matcher, "        "));
    }
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

    let mut p = String::new();
    for line in header.lines() {
        p.push_str(&format!("# {}\n", comment(line)));
    }
    p.push_str("apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\n");
    p.push_str(&format!("name: {}\n", settings.name));
    let written_retry_limit = policy_retry_limit.or(settings.retry_limit).unwrap_or(0);
    p.push_str(&format!("retryLimit: {written_retry_limit}\n"));
    p.push_str(&format!(
        "defaultAction: {}\n",
        settings.default_action.unwrap_or(Action::Fail).as_str()
    ));
    if policy_rules.is_empty() {
        p.push_str("rules: []\n");
    } else {
        p.push_str("rules:\n");
    }
    for (evidence, action, category, sub, avoid) in &policy_rules {
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
        if *avoid {
            p.push_str("    mutate: {affinity: {avoidSameNode: true}}\n");
        }
    }
    Upstream {
        categorizer: c,
        policy: p,
        policy_retry_limit,
        written_retry_limit,
        raises,
        rule_index,
        categories,
    }
}
