//! A new category of the proposed categorizer (today's Armada): its name
//! ([`short_category_name`]), what it matches ([`Matcher`]) and its rule's YAML.
//!
//! Owns: a category's name and matcher. Must not: place rules among the categories (that
//! is `placement`).

use crate::model::policy::Condition;
use crate::model::signature::Signature;
use crate::suggest::pattern::{pattern, pod_error_pattern};
use crate::suggest::propose::Proposed;
use crate::yaml::quoted;

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
