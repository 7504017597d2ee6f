//! Semantic validation of decoded resources (docs/policies.md): the one implementation the CLI and
//! `retryctl serve` share.
//!
//! Owns: every rule that a well-typed value can still break (ranges, uniqueness, names,
//! regex compilation, cross-field rules). Paths are in the wire layout (`rules[2].action`,
//! `name`); the document layer maps them onto what the user wrote. Must not: do I/O, decide
//! exit codes, or emit warnings (that is `lint`).

use std::collections::HashSet;

use crate::diag::{index, quote, Diagnostic};

use super::duration::GoDuration;
use super::policy::{Backoff, RetryPolicy, Rule};
use super::quantity::parse_quantity;
use super::queue::Queue;

pub const MAX_NAME_LEN: usize = 63;
pub const MAX_RULES: usize = 100;
pub const MAX_RETRY_LIMIT: u32 = 10_000;
pub const MAX_EXIT_CODES: usize = 255;
pub const MAX_PATTERN_BYTES: usize = 1024;
/// The bound on the `regex` crate's automaton for one pattern (`compile_pattern`): past it the
/// crate does not build the pattern, and the evaluator matches it over characters instead
/// (`engine::matcher::Pattern`), whose program grows with the pattern as written. (Go's own
/// limits keep `(a{100}){100}` out: `check_pattern`.)
pub const MAX_REGEX_SIZE: usize = 256 * 1024;
pub const MAX_DELAY: GoDuration = GoDuration(24 * 3600 * 1_000_000_000);
pub const MAX_MULTIPLIER: f64 = 100.0;

/// Why `name` is not an RFC 1123 label, or `None` when it is one.
pub fn name_problem(name: &str) -> Option<String> {
    let why = name_reason(name)?;
    Some(if name.is_empty() || name.len() > MAX_NAME_LEN {
        why
    } else {
        format!("{} is not a valid name: {why}", quote(name))
    })
}

/// [`name_problem`] without the name: for a sentence that names it already (a flag's value).
pub fn name_reason(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!("must be at most {MAX_NAME_LEN} characters, got {}", name.len()));
    }
    if let Some((i, c)) = name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        let hint = if c.is_ascii_uppercase() { " (use lowercase)" } else { "" };
        return Some(format!(
            "character {} at position {} is not allowed{hint}; use lowercase letters, digits and `-`",
            quote(&c.to_string()),
            i + 1
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("must start and end with a letter or digit".into());
    }
    None
}

pub fn validate_policy(policy: &RetryPolicy) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(problem) = name_problem(&policy.name) {
        out.push(Diagnostic::error("invalid-name", "name", problem));
    }
    if let Some(limit) = policy.retry_limit {
        check_limit(&mut out, "retryLimit", limit);
    }
    check_backoff(&mut out, "backoff", &policy.backoff, &Backoff::default());
    if policy.rules.len() > MAX_RULES {
        out.push(Diagnostic::error(
            "too-many-rules",
            "rules",
            format!("at most {MAX_RULES} rules are allowed, got {}", policy.rules.len()),
        ));
    }
    for (i, rule) in policy.rules.iter().enumerate() {
        check_rule(&mut out, &index("rules", i), rule, policy);
    }
    out
}

fn check_limit(out: &mut Vec<Diagnostic>, path: &str, limit: u32) {
    if limit > MAX_RETRY_LIMIT {
        out.push(Diagnostic::error(
            "out-of-range",
            path,
            format!("must be at most {MAX_RETRY_LIMIT}, got `{limit}`"),
        ));
    }
}

fn check_backoff(out: &mut Vec<Diagnostic>, path: &str, own: &Backoff, inherited: &Backoff) {
    for (field, value) in [("initialDelay", own.initial_delay), ("maxDelay", own.max_delay)] {
        if let Some(d) = value {
            if d > MAX_DELAY {
                out.push(Diagnostic::error(
                    "out-of-range",
                    format!("{path}.{field}"),
                    format!("must be at most `24h`, got `{d}`"),
                ));
            }
        }
    }
    if let Some(m) = own.multiplier {
        if !m.is_finite() || !(1.0..=MAX_MULTIPLIER).contains(&m) {
            out.push(Diagnostic::error(
                "out-of-range",
                format!("{path}.multiplier"),
                format!("must be a number from 1.0 to {MAX_MULTIPLIER}, got `{m}`"),
            ));
        }
    }
    if let Some(j) = own.jitter {
        if !j.is_finite() || !(0.0..=1.0).contains(&j) {
            out.push(Diagnostic::error(
                "out-of-range",
                format!("{path}.jitter"),
                format!("must be a number from 0 to 1, got `{j}`"),
            ));
        }
    }
    let initial = own.initial_delay.or(inherited.initial_delay);
    let max = own.max_delay.or(inherited.max_delay);
    if let (Some(initial), Some(max)) = (initial, max) {
        // Report once, where the conflicting value is set.
        if max < initial && (own.initial_delay.is_some() || own.max_delay.is_some()) {
            let field = if own.max_delay.is_some() {
                "maxDelay"
            } else {
                "initialDelay"
            };
            out.push(Diagnostic::error(
                "invalid-value",
                format!("{path}.{field}"),
                format!("maxDelay `{max}` is shorter than initialDelay `{initial}`"),
            ));
        }
    }
}

fn check_rule(out: &mut Vec<Diagnostic>, path: &str, rule: &Rule, policy: &RetryPolicy) {
    let p = |f: &str| format!("{path}.{f}");
    if !rule.has_matcher() {
        out.push(Diagnostic::error(
            "no-matcher",
            path,
            "a rule needs at least one matcher (`onConditions`, `onExitCodes`, `onTerminationMessage`, `onFailureCategory`); write a catch-all as the policy's `defaultAction`",
        ));
    }
    if let Some(name) = &rule.container_name {
        if let Some(problem) = name_problem(name) {
            out.push(Diagnostic::error("invalid-name", p("containerName"), problem));
        }
    }
    if let Some(conditions) = &rule.on_conditions {
        if conditions.is_empty() {
            out.push(Diagnostic::error(
                "invalid-value",
                p("onConditions"),
                "must not be empty",
            ));
        }
        let mut seen = HashSet::new();
        for (i, c) in conditions.iter().enumerate() {
            if !seen.insert(c) {
                out.push(Diagnostic::error(
                    "duplicate",
                    index(&p("onConditions"), i),
                    format!("duplicate condition `{}`", c.as_str()),
                ));
            }
        }
    }
    if let Some(codes) = &rule.on_exit_codes {
        let vp = p("onExitCodes.values");
        if codes.values.is_empty() {
            out.push(Diagnostic::error("invalid-value", &vp, "must not be empty"));
        }
        if codes.values.len() > MAX_EXIT_CODES {
            out.push(Diagnostic::error(
                "invalid-value",
                &vp,
                format!(
                    "at most {MAX_EXIT_CODES} values are allowed, got {}",
                    codes.values.len()
                ),
            ));
        }
        let mut seen = HashSet::new();
        for (i, v) in codes.values.iter().enumerate() {
            let ip = index(&vp, i);
            if *v == 0 {
                out.push(Diagnostic::error(
                    "invalid-value",
                    ip,
                    "exit code `0` means not set and never matches; remove it",
                ));
            } else if !(1..=255).contains(v) {
                out.push(Diagnostic::error(
                    "out-of-range",
                    ip,
                    format!("exit codes are 1 to 255, got `{v}`"),
                ));
            } else if !seen.insert(*v) {
                out.push(Diagnostic::error("duplicate", ip, format!("duplicate exit code `{v}`")));
            }
        }
    }
    if let Some(pattern) = &rule.on_termination_message {
        if let Err(problem) = check_pattern(pattern) {
            out.push(Diagnostic::error(
                "invalid-regex",
                p("onTerminationMessage.pattern"),
                problem,
            ));
        }
    }
    check_categories(out, &p("onFailureCategory"), rule.on_failure_category.as_deref());
    check_categories(out, &p("onFailureSubcategory"), rule.on_failure_subcategory.as_deref());
    if rule.on_failure_subcategory.is_some() && rule.on_failure_category.is_none() {
        out.push(Diagnostic::error(
            "invalid-value",
            p("onFailureSubcategory"),
            "`onFailureSubcategory` narrows a category; it requires `onFailureCategory`",
        ));
    }
    if let Some(limit) = rule.retry_limit {
        check_limit(out, &p("retryLimit"), limit);
    }
    check_backoff(out, &p("backoff"), &rule.backoff, &policy.backoff);
    if let Some(memory) = rule
        .mutate
        .as_ref()
        .and_then(|m| m.resources.as_ref())
        .and_then(|r| r.memory.as_ref())
    {
        let mp = p("mutate.resources.memory");
        match (memory.factor, &memory.fixed) {
            (Some(_), Some(_)) => out.push(Diagnostic::error(
                "invalid-value",
                &mp,
                "set exactly one of `factor` and `static`, not both",
            )),
            (None, None) => out.push(Diagnostic::error(
                "invalid-value",
                &mp,
                "set exactly one of `factor` and `static`",
            )),
            (Some(f), None) => {
                if !f.is_finite() || f <= 1.0 {
                    out.push(Diagnostic::error(
                        "out-of-range",
                        format!("{mp}.factor"),
                        format!("must be greater than 1.0, got `{f}`"),
                    ));
                }
            }
            (None, Some(q)) => match parse_quantity(q) {
                Err(e) => out.push(Diagnostic::error(
                    "invalid-value",
                    format!("{mp}.static"),
                    format!("invalid quantity {}: {e}", quote(q)),
                )),
                Ok(v) if v <= 0.0 => out.push(Diagnostic::error(
                    "out-of-range",
                    format!("{mp}.static"),
                    format!("quantity {} must be positive", quote(q)),
                )),
                Ok(_) => {}
            },
        }
    }
}

fn check_categories(out: &mut Vec<Diagnostic>, path: &str, values: Option<&[String]>) {
    let Some(values) = values else { return };
    if values.is_empty() {
        out.push(Diagnostic::error("invalid-value", path, "must not be empty"));
    }
    let mut seen = HashSet::new();
    for (i, v) in values.iter().enumerate() {
        let ip = index(path, i);
        if let Some((code, problem)) = category_problem(v) {
            out.push(Diagnostic::error(code, ip, problem));
        } else if !seen.insert(v) {
            out.push(Diagnostic::error(
                "duplicate",
                ip,
                format!("duplicate value {}", quote(v)),
            ));
        }
    }
}

/// Why `value` cannot be a category (or subcategory) a rule matches (`onFailureCategory`,
/// `onCategory`), with the diagnostic's code; `None` when it can.
pub fn category_problem(value: &str) -> Option<(&'static str, String)> {
    if value.is_empty() {
        Some(("invalid-value", "must not be an empty string".into()))
    } else if value.chars().count() > MAX_NAME_LEN {
        Some((
            "out-of-range",
            format!(
                "must be at most {MAX_NAME_LEN} characters, got {}",
                value.chars().count()
            ),
        ))
    } else if value.chars().any(char::is_whitespace) {
        Some(("invalid-value", format!("{} must not contain whitespace", quote(value))))
    } else if let Some((i, c)) = value
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_control() || crate::diag::is_bidi_control(*c))
    {
        // As upstream refuses them in names: a category is a name the executor writes and
        // Lookout shows, and such a character would act on a terminal or reorder the line.
        let what = if c.is_control() {
            "a control character"
        } else {
            "a bidirectional control"
        };
        Some((
            "invalid-value",
            format!(
                "{} must not contain {what} ({} at position {})",
                quote(value),
                quote(&c.to_string()),
                i + 1
            ),
        ))
    } else {
        None
    }
}

/// Whether a pattern (a policy's `onTerminationMessage`, the categorizer's patterns) is one
/// retryctl evaluates: at most [`MAX_PATTERN_BYTES`] bytes, and one Go's `regexp.Compile`
/// accepts (`go_regex`); else why not. What validation asks: it compiles nothing, so a config of
/// 4,000 patterns is checked in milliseconds, and no pattern Go accepts is refused for the size
/// of the `regex` crate's automaton for it (the evaluator runs such a pattern on a matcher over
/// characters, `engine::matcher::Pattern`).
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    go_pattern(pattern).map(drop)
}

/// [`check_pattern`], giving the pattern written for the `regex` crate.
fn go_pattern(pattern: &str) -> Result<std::borrow::Cow<'_, str>, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!(
            "pattern is {} bytes, at most {MAX_PATTERN_BYTES} are allowed",
            pattern.len()
        ));
    }
    super::go_regex::to_rust(pattern)
        .map_err(|reason| format!("invalid regular expression {}: {reason}", quote(pattern)))
}

/// Compiles a termination-message pattern, read as Go reads it (`go_regex`), with the `regex`
/// crate and the bounds of its automaton ([`MAX_REGEX_SIZE`]): for what needs that crate's
/// `Regex` (a lint's look at the empty string, tests). A pattern [`check_pattern`] accepts may
/// still be too large here; the evaluator has its own way for those.
pub fn compile_pattern(pattern: &str) -> Result<regex::Regex, String> {
    let rust = go_pattern(pattern)?;
    regex::RegexBuilder::new(&rust)
        .size_limit(MAX_REGEX_SIZE)
        .dfa_size_limit(MAX_REGEX_SIZE * 4)
        // Go nests to 1,000; the crate's default (250) would refuse what Go reads.
        .nest_limit(super::go_regex::NEST_LIMIT)
        .build()
        .map_err(|e| {
            let reason = match &e {
                regex::Error::Syntax(text) => text
                    .lines()
                    .rev()
                    .find_map(|l| l.strip_prefix("error: "))
                    .unwrap_or(text.as_str())
                    .to_string(),
                regex::Error::CompiledTooBig(_) => {
                    "the compiled pattern is too large; simplify it (fewer repetitions)".to_string()
                }
                other => other.to_string(),
            };
            format!("invalid regular expression {}: {reason}", quote(pattern))
        })
}

pub fn validate_queue(queue: &Queue) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(problem) = name_problem(&queue.name) {
        out.push(Diagnostic::error("invalid-name", "name", problem));
    }
    let f = queue.priority_factor;
    if !f.is_finite() || f < 1.0 {
        out.push(Diagnostic::error(
            "out-of-range",
            "priorityFactor",
            format!("must be at least 1.0, got `{f}`"),
        ));
    }
    for (k, v) in &queue.labels {
        if k.is_empty() || v.is_empty() {
            out.push(Diagnostic::error(
                "invalid-value",
                format!("labels.{k}"),
                format!(
                    "labels must not have an empty key or value (key {}, value {})",
                    quote(k),
                    quote(v)
                ),
            ));
        }
    }
    let mut seen = HashSet::new();
    for (i, name) in queue.retry_policies.iter().enumerate() {
        let path = index("retryPolicies", i);
        if let Some(problem) = name_problem(name) {
            out.push(Diagnostic::error("invalid-name", path, problem));
        } else if !seen.insert(name) {
            out.push(Diagnostic::error(
                "duplicate",
                path,
                format!("duplicate retry policy {}", quote(name)),
            ));
        }
    }
    for (i, perm) in queue.permissions.iter().enumerate() {
        for (j, s) in perm.subjects.iter().enumerate() {
            if s.kind != "User" && s.kind != "Group" {
                out.push(Diagnostic::error(
                    "invalid-value",
                    format!("permissions[{i}].subjects[{j}].kind"),
                    format!("unknown subject kind {}, expected `User` or `Group`", quote(&s.kind)),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(name_problem("ml-training"), None);
        assert!(name_problem("").unwrap().contains("empty"));
        assert!(name_problem("ML").unwrap().contains("use lowercase"));
        assert!(name_problem("a_b").unwrap().contains("`_` at position 2"));
        assert!(name_problem("-a").unwrap().contains("start and end"));
        assert!(name_problem(&"a".repeat(64)).unwrap().contains("at most 63"));
    }

    #[test]
    fn regex_errors_are_one_line() {
        let e = compile_pattern("(foo").unwrap_err();
        assert_eq!(e, "invalid regular expression `(foo`: unclosed group");
    }
}
