//! The executor's error categorizer config (`errorCategories`, docs/categorizer.md): the
//! document, its decoding from both shapes and upstream's checks.
//!
//! Owns: the [`ErrorCategories`] type; recognising a categorizer document (no
//! `apiVersion`/`kind`, and `errorCategories` at its top or under `application`); decoding it
//! as the executor's config loader reads it (keys in any case, `enabled` false unless set,
//! every key outside `errorCategories` ignored); upstream's `NewClassifier` checks with
//! upstream's words, every one reported (upstream stops at the first), each placed at its
//! field; and the warnings of this kind (a key upstream does not know, a config that is not
//! enabled). Must not: classify runs (`engine::categorizer`), do I/O, or read the clock.
//!
//! Decisions where the executor's behaviour is not a rule of its own:
//! - Values are read as the loader's weak typing reads the common cases: `enabled` takes Go's
//!   `ParseBool` spellings (`true`, `1`, `t`, quoted or not); a list field given one scalar is
//!   that scalar split at commas (`onConditions: OOMKilled`); exit codes may be quoted. Any
//!   other type mismatch is an error, where the loader might still have coerced it.
//! - Two keys of one mapping that differ only in case are an error: the loader keeps one of
//!   them, which one is not defined.
//! - A message quotes user values in backticks where upstream's `%q` writes double quotes.
//! - A regex is compiled by the same matcher as a policy's `onTerminationMessage`, with its
//!   bounds (1024 bytes); its syntax error is worded by that matcher.

use crate::diag::{index, join, one_of, quote, suggest, Diagnostic};
use crate::yaml::{Node, Pos, Value};

use super::decode::Decoder;
use super::fields;
use super::validate::check_pattern;

/// Longest category, subcategory and default (upstream's `maxCategoryNameLen`, Lookout's
/// `varchar(63)` columns), in bytes as upstream counts.
pub const MAX_CATEGORY_LEN: usize = 63;

/// The most categories one config may hold (docs/categorizer.md): retryctl's cap, not
/// upstream's, so that a config's classification cost stays bounded.
pub const MAX_CATEGORIES: usize = 1_000;

/// The most rules one config may hold, all categories together.
pub const MAX_RULES: usize = 4_000;
/// Armada's own category (lease expiry, pod missing, …): set by Armada, never by the
/// categorizer, so a run recorded with it keeps it.
pub const CATEGORY_INTERNAL: &str = "internal";
/// The category newer Armada gives preempted runs: the categorizer never sees them.
pub const CATEGORY_PREEMPTION: &str = "preemption";
/// The conditions a rule's `onConditions` may name, in upstream's order.
pub const CONDITIONS: [&str; 3] = ["OOMKilled", "Evicted", "DeadlineExceeded"];
pub const ACTIONS: [&str; 2] = ["Retain", "Delete"];
pub const OPERATORS: [&str; 2] = ["In", "NotIn"];
pub const EVENT_TYPES: [&str; 2] = ["Normal", "Warning"];

/// Which of the two shapes a document has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// The executor's config as deployed: `application.errorCategories`.
    Executor,
    /// A document whose top level is `errorCategories:`.
    #[default]
    Bare,
}

impl Shape {
    /// The path of the `errorCategories` mapping from the document's top.
    pub fn prefix(self) -> &'static str {
        match self {
            Shape::Executor => "application.errorCategories",
            Shape::Bare => "errorCategories",
        }
    }
}

/// `errorCategories`, as written (strings unchecked: the checks are [`validate_error_categories`]'s).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorCategories {
    pub shape: Shape,
    /// Default false, as upstream's: a config that does not say assigns no category.
    pub enabled: bool,
    /// Empty: no category when no rule matches.
    pub default_category: String,
    pub default_subcategory: String,
    pub categories: Vec<Category>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Category {
    pub name: String,
    /// As written; empty means `Retain`.
    pub action: String,
    pub rules: Vec<CategoryRule>,
}

/// What the executor does with a failed pod of a category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PodAction {
    /// The pod stays until normal garbage collection (its logs remain): upstream's default.
    #[default]
    Retain,
    /// The pod is deleted before the failure is reported, freeing its name for a retry.
    Delete,
}

impl Category {
    /// The category's action, `None` when it is neither `Retain`, `Delete` nor unset.
    pub fn pod_action(&self) -> Option<PodAction> {
        match self.action.as_str() {
            "" | "Retain" => Some(PodAction::Retain),
            "Delete" => Some(PodAction::Delete),
            _ => None,
        }
    }
}

/// One rule; exactly one matcher must be set (checked, not enforced by the type).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CategoryRule {
    /// Empty: any container.
    pub container_name: String,
    pub on_conditions: Vec<String>,
    pub on_exit_codes: Option<ExitCodeMatcher>,
    /// The pattern of `onTerminationMessage`.
    pub on_termination_message: Option<String>,
    /// The pattern of `onPodError`.
    pub on_pod_error: Option<String>,
    pub on_pod_events: Option<PodEventMatcher>,
    pub subcategory: String,
    pub hint: String,
}

impl CategoryRule {
    /// How many matchers are set, as upstream counts them (an empty `onConditions` is none).
    pub fn matchers(&self) -> usize {
        usize::from(!self.on_conditions.is_empty())
            + usize::from(self.on_exit_codes.is_some())
            + usize::from(self.on_termination_message.is_some())
            + usize::from(self.on_pod_error.is_some())
            + usize::from(self.on_pod_events.is_some())
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ExitCodeMatcher {
    /// As written; `In` or `NotIn` when valid.
    pub operator: String,
    pub values: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodEventMatcher {
    /// Searched in the event's message.
    pub regexp: String,
    /// Empty: any reason.
    pub reason: String,
    /// `Normal` or `Warning` when valid.
    pub event_type: String,
}

/// Whether `node` is a categorizer document, and which shape: no `apiVersion` or `kind`,
/// and `errorCategories` (any case) at its top or under `application`. The executor shape
/// wins when both are there (the executor reads only that one).
pub fn shape_of(node: &Node) -> Option<Shape> {
    let Value::Map(entries) = &node.value else {
        return None;
    };
    if entries
        .iter()
        .any(|(k, _)| matches!(k.as_scalar(), Some("apiVersion" | "kind")))
    {
        return None;
    }
    let application = lookup(node, "application");
    if application.is_some_and(|a| lookup(a, "errorCategories").is_some()) {
        return Some(Shape::Executor);
    }
    lookup(node, "errorCategories").map(|_| Shape::Bare)
}

/// Keys match as the loader matches them: whatever their case.
fn same_key(written: &str, name: &str) -> bool {
    written.eq_ignore_ascii_case(name) || written.to_lowercase() == name.to_lowercase()
}

/// The value of a mapping's key, in any case.
fn lookup<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_scalar().is_some_and(|k| same_key(k, key)))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// Decodes a categorizer document of `shape` (from [`shape_of`]); the diagnostics go to
/// `dec`, placed, with paths from the document's top. `None` only when `errorCategories` is
/// not a mapping.
pub fn decode_error_categories(dec: &mut Decoder, node: &Node, shape: Shape) -> Option<ErrorCategories> {
    let prefix = shape.prefix();
    let body = match shape {
        Shape::Executor => lookup(node, "application").and_then(|a| lookup(a, "errorCategories")),
        Shape::Bare => lookup(node, "errorCategories"),
    }?;
    if shape == Shape::Executor {
        if let Some((k, _)) = entry(node, "errorCategories") {
            dec.diagnostics.push(
                Diagnostic::warning(
                    "ignored-field",
                    "errorCategories",
                    "ignored: the executor reads `application.errorCategories`",
                )
                .at(k.pos),
            );
        }
    }
    let mut config = ErrorCategories {
        shape,
        ..ErrorCategories::default()
    };
    let top = keys(dec, body, prefix, &fields::names(fields::ERROR_CATEGORIES))?;
    if let Some(n) = top.get("enabled") {
        config.enabled = weak_bool(dec, n, &top.path_of("enabled")).unwrap_or(false);
    }
    if let Some(n) = top.get("defaultCategory") {
        config.default_category = text(dec, n, &top.path_of("defaultCategory"));
    }
    if let Some(n) = top.get("defaultSubcategory") {
        config.default_subcategory = text(dec, n, &top.path_of("defaultSubcategory"));
    }
    if let Some(n) = top.get("categories") {
        let p = top.path_of("categories");
        if let Some(items) = dec.seq(n, &p) {
            for (i, item) in items.iter().enumerate() {
                config.categories.push(category(dec, item, &index(&p, i)));
            }
        }
    }
    if !config.enabled && !dec.has_errors() {
        let at = top.get("enabled").map_or(body.pos, |n| n.pos);
        dec.diagnostics.push(
            Diagnostic::warning(
                "categorizer-disabled",
                top.path_of("enabled"),
                "the categorizer is not enabled (`enabled` defaults to `false`): the executor assigns no category to any run; set `enabled: true`",
            )
            .at(at),
        );
    }
    Some(config)
}

fn entry<'n>(node: &'n Node, key: &str) -> Option<&'n (Node, Node)> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|e| e.0.as_scalar().is_some_and(|k| same_key(k, key))),
        _ => None,
    }
}

fn category(dec: &mut Decoder, node: &Node, path: &str) -> Category {
    let mut c = Category::default();
    let Some(f) = keys(dec, node, path, &fields::names(fields::ERROR_CATEGORY)) else {
        return c;
    };
    if let Some(n) = f.get("name") {
        c.name = text(dec, n, &f.path_of("name"));
    }
    if let Some(n) = f.get("action") {
        c.action = text(dec, n, &f.path_of("action"));
    }
    if let Some(n) = f.get("rules") {
        let p = f.path_of("rules");
        if let Some(items) = dec.seq(n, &p) {
            for (i, item) in items.iter().enumerate() {
                c.rules.push(rule(dec, item, &index(&p, i)));
            }
        }
    }
    c
}

fn rule(dec: &mut Decoder, node: &Node, path: &str) -> CategoryRule {
    let mut r = CategoryRule::default();
    let Some(f) = keys(dec, node, path, &fields::names(fields::CATEGORY_RULE)) else {
        return r;
    };
    if let Some(n) = f.get("containerName") {
        r.container_name = text(dec, n, &f.path_of("containerName"));
    }
    if let Some(n) = f.get("onConditions") {
        r.on_conditions = list(dec, n, &f.path_of("onConditions"))
            .into_iter()
            .map(|(item, p)| text(dec, &item, &p))
            .collect();
    }
    if let Some(n) = f.get("onExitCodes") {
        let p = f.path_of("onExitCodes");
        if let Some(e) = keys(dec, n, &p, &fields::names(fields::CATEGORY_EXIT_CODES)) {
            let mut m = ExitCodeMatcher::default();
            if let Some(o) = e.get("operator") {
                m.operator = text(dec, o, &e.path_of("operator"));
            }
            if let Some(v) = e.get("values") {
                m.values = list(dec, v, &e.path_of("values"))
                    .into_iter()
                    .filter_map(|(item, p)| exit_code(dec, &item, &p))
                    .collect();
            }
            r.on_exit_codes = Some(m);
        }
    }
    for (key, slot) in [
        ("onTerminationMessage", &mut r.on_termination_message),
        ("onPodError", &mut r.on_pod_error),
    ] {
        if let Some(n) = f.get(key) {
            let p = f.path_of(key);
            if let Some(m) = keys(dec, n, &p, &fields::names(fields::CATEGORY_PATTERN)) {
                *slot = Some(
                    m.get("pattern")
                        .map(|v| text(dec, v, &m.path_of("pattern")))
                        .unwrap_or_default(),
                );
            }
        }
    }
    if let Some(n) = f.get("onPodEvents") {
        let p = f.path_of("onPodEvents");
        if let Some(m) = keys(dec, n, &p, &fields::names(fields::CATEGORY_POD_EVENTS)) {
            let mut e = PodEventMatcher::default();
            for (key, slot) in [
                ("regexp", &mut e.regexp),
                ("reason", &mut e.reason),
                ("type", &mut e.event_type),
            ] {
                if let Some(v) = m.get(key) {
                    *slot = text(dec, v, &m.path_of(key));
                }
            }
            r.on_pod_events = Some(e);
        }
    }
    if let Some(n) = f.get("subcategory") {
        r.subcategory = text(dec, n, &f.path_of("subcategory"));
    }
    if let Some(n) = f.get("hint") {
        r.hint = text(dec, n, &f.path_of("hint"));
    }
    r
}

/// The keys of one mapping, matched to the table's names in any case.
struct Keys<'n> {
    entries: Vec<(&'static str, &'n Node)>,
    path: String,
}

impl<'n> Keys<'n> {
    /// A key's value; null is not set (the loader leaves the zero value).
    fn get(&self, name: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
            .filter(|v| !v.is_null())
    }

    fn path_of(&self, name: &str) -> String {
        join(&self.path, name)
    }
}

/// Matches a mapping's keys to `allowed` in any case. A key upstream does not know is a
/// warning (the loader ignores it); two keys that differ only in case are an error. Null is an
/// empty mapping, as the loader reads it.
fn keys<'n>(dec: &mut Decoder, node: &'n Node, path: &str, allowed: &[&'static str]) -> Option<Keys<'n>> {
    let entries = match &node.value {
        Value::Map(entries) => entries.as_slice(),
        Value::Null => &[],
        _ => {
            dec.error(
                node,
                "invalid-type",
                path,
                format!("expected a mapping, found a {}", node.kind_name()),
            );
            return None;
        }
    };
    let mut out: Vec<(&'static str, &'n Node)> = Vec::with_capacity(entries.len());
    let mut firsts: Vec<(&'static str, Pos)> = Vec::new();
    for (key, value) in entries {
        let written = key.as_scalar().unwrap_or_default();
        match allowed.iter().find(|a| same_key(written, a)) {
            Some(name) => {
                if let Some((_, first)) = firsts.iter().find(|(n, _)| n == name) {
                    dec.error(
                        key,
                        "duplicate-key",
                        &join(path, name),
                        format!(
                            "duplicate key {} (first at {first}): keys are case-insensitive, and the executor would keep only one of them",
                            quote(written)
                        ),
                    );
                    continue;
                }
                firsts.push((name, key.pos));
                out.push((name, value));
            }
            None => {
                let known = match suggest(written, allowed) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("expected one of {}", one_of(allowed)),
                };
                dec.diagnostics.push(
                    Diagnostic::warning(
                        "unknown-field",
                        join(path, written),
                        format!("unknown field {}, {known} (the executor ignores it)", quote(written)),
                    )
                    .at(key.pos),
                );
            }
        }
    }
    Some(Keys {
        entries: out,
        path: path.to_string(),
    })
}

/// A string field: any scalar, as its text.
fn text(dec: &mut Decoder, node: &Node, path: &str) -> String {
    dec.string(node, path).unwrap_or_default()
}

/// A bool as Go's `strconv.ParseBool` reads it, the loader's weak typing.
fn weak_bool(dec: &mut Decoder, node: &Node, path: &str) -> Option<bool> {
    match node.as_scalar() {
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Some(true),
        Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Some(false),
        _ => {
            let found = match node.as_scalar() {
                Some(t) => quote(t),
                None => format!("a {}", node.kind_name()),
            };
            dec.error(
                node,
                "invalid-type",
                path,
                format!("expected `true` or `false`, found {found}"),
            );
            None
        }
    }
}

/// The items of a list field with their paths: a list's items, or a lone scalar split at
/// commas as the loader's string-to-slice hook splits it (each part placed at the scalar).
/// Anything else is a type error.
fn list(dec: &mut Decoder, node: &Node, path: &str) -> Vec<(Node, String)> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), index(path, i)))
            .collect(),
        Value::Scalar { text, .. } if text.is_empty() => Vec::new(),
        Value::Scalar { text, .. } => text
            .split(',')
            .map(|part| {
                (
                    Node {
                        pos: node.pos,
                        value: Value::Scalar {
                            text: part.to_string(),
                            quoted: true,
                        },
                    },
                    path.to_string(),
                )
            })
            .collect(),
        _ => {
            dec.error(
                node,
                "invalid-type",
                path,
                format!("expected a list, found a {}", node.kind_name()),
            );
            Vec::new()
        }
    }
}

/// One exit code: an integer in 32 bits, quoted or not.
fn exit_code(dec: &mut Decoder, node: &Node, path: &str) -> Option<i32> {
    let Some(t) = node.as_scalar() else {
        dec.error(
            node,
            "invalid-type",
            path,
            format!("expected an integer, found a {}", node.kind_name()),
        );
        return None;
    };
    let t = t.trim();
    match t.strip_prefix('+').unwrap_or(t).parse::<i64>() {
        Ok(v) => match i32::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => {
                dec.error(
                    node,
                    "out-of-range",
                    path,
                    format!("exit code {} is out of range: exit codes are 32-bit integers", quote(t)),
                );
                None
            }
        },
        Err(_) => {
            dec.error(
                node,
                "invalid-type",
                path,
                format!("expected an integer, found {}", quote(t)),
            );
            None
        }
    }
}

/// Upstream's `NewClassifier` checks, every one (upstream returns the first), in upstream's
/// order and words; paths are relative to `errorCategories`.
///
/// A config past [`MAX_CATEGORIES`] or [`MAX_RULES`] gets that error alone: its other checks
/// (a regex compiled per rule) would cost in proportion to what is refused anyway.
pub fn validate_error_categories(config: &ErrorCategories) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let rules: usize = config.categories.iter().map(|c| c.rules.len()).sum();
    if config.categories.len() > MAX_CATEGORIES {
        out.push(Diagnostic::error(
            "out-of-range",
            "categories",
            format!(
                "{} categories: a categorizer holds at most {} (docs/categorizer.md)",
                crate::diag::thousands(config.categories.len() as u64),
                crate::diag::thousands(MAX_CATEGORIES as u64)
            ),
        ));
    }
    if rules > MAX_RULES {
        out.push(Diagnostic::error(
            "out-of-range",
            "categories",
            format!(
                "{} rules in all categories: a categorizer holds at most {} (docs/categorizer.md)",
                crate::diag::thousands(rules as u64),
                crate::diag::thousands(MAX_RULES as u64)
            ),
        ));
    }
    if !out.is_empty() {
        return out;
    }
    for (field, value) in [
        ("defaultCategory", &config.default_category),
        ("defaultSubcategory", &config.default_subcategory),
    ] {
        if value.len() > MAX_CATEGORY_LEN {
            out.push(Diagnostic::error(
                "out-of-range",
                field,
                format!("{field} {} exceeds maximum length {MAX_CATEGORY_LEN}", quote(value)),
            ));
        }
    }
    // A set: a list searched per category had cost the check the square of the categories.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, cat) in config.categories.iter().enumerate() {
        let path = index("categories", i);
        let p = |f: &str| join(&path, f);
        let name = quote(&cat.name);
        if cat.name.is_empty() {
            out.push(Diagnostic::error(
                "missing-field",
                p("name"),
                "category config must have a name",
            ));
        } else if cat.name.len() > MAX_CATEGORY_LEN {
            out.push(Diagnostic::error(
                "out-of-range",
                p("name"),
                format!("category name {name} exceeds maximum length {MAX_CATEGORY_LEN}"),
            ));
        }
        if !cat.name.is_empty() && !seen.insert(&cat.name) {
            out.push(Diagnostic::error(
                "duplicate",
                p("name"),
                format!("duplicate category name {name}"),
            ));
        }
        if cat.rules.is_empty() {
            out.push(Diagnostic::error(
                "invalid-value",
                p("rules"),
                format!("category {name} must have at least one rule"),
            ));
        }
        if cat.pod_action().is_none() {
            out.push(Diagnostic::error(
                "invalid-value",
                p("action"),
                format!(
                    "category {name}: invalid action {}: must be `Delete` or `Retain`",
                    quote(&cat.action)
                ),
            ));
        }
        for (j, rule) in cat.rules.iter().enumerate() {
            check_rule(
                &mut out,
                &index(&p("rules"), j),
                &format!("category {name} rule {j}: "),
                rule,
            );
        }
    }
    out
}

fn check_rule(out: &mut Vec<Diagnostic>, path: &str, prefix: &str, rule: &CategoryRule) {
    let p = |f: &str| join(path, f);
    let mut push = |code: &'static str, at: String, message: String| {
        out.push(Diagnostic::error(code, at, format!("{prefix}{message}")));
    };
    if rule.subcategory.len() > MAX_CATEGORY_LEN {
        push(
            "out-of-range",
            p("subcategory"),
            format!(
                "subcategory {} exceeds maximum length {MAX_CATEGORY_LEN}",
                quote(&rule.subcategory)
            ),
        );
    }
    const MATCHERS: &str = "onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents";
    match rule.matchers() {
        0 => push(
            "no-matcher",
            path.to_string(),
            format!("rule must specify one of {MATCHERS}"),
        ),
        1 => {}
        _ => push(
            "conflicting-fields",
            path.to_string(),
            format!("rule must specify only one of {MATCHERS}"),
        ),
    }
    for (k, c) in rule.on_conditions.iter().enumerate() {
        if !CONDITIONS.contains(&c.as_str()) {
            push(
                "invalid-value",
                index(&p("onConditions"), k),
                format!(
                    "unknown condition {}, valid values: {}",
                    quote(c),
                    CONDITIONS.join(", ")
                ),
            );
        }
    }
    if let Some(m) = &rule.on_exit_codes {
        if !OPERATORS.contains(&m.operator.as_str()) {
            push(
                "invalid-value",
                p("onExitCodes.operator"),
                format!(
                    "invalid exit code operator {}, must be `In` or `NotIn`",
                    quote(&m.operator)
                ),
            );
        }
        if m.values.is_empty() {
            push(
                "invalid-value",
                p("onExitCodes.values"),
                "exit code matcher requires at least one value".to_string(),
            );
        }
    }
    for (field, pattern, words) in [
        (
            "onTerminationMessage.pattern",
            &rule.on_termination_message,
            "onTerminationMessage regex",
        ),
        ("onPodError.pattern", &rule.on_pod_error, "onPodError regex"),
        (
            "onPodEvents.regexp",
            &rule.on_pod_events.as_ref().map(|e| e.regexp.clone()),
            "onPodEvents regexp",
        ),
    ] {
        if let Some(pattern) = pattern {
            if let Err(reason) = regex_reason(pattern) {
                push(
                    "invalid-regex",
                    p(field),
                    format!("invalid {words} {}: {reason}", quote(pattern)),
                );
            }
        }
    }
    if let Some(e) = &rule.on_pod_events {
        if !EVENT_TYPES.contains(&e.event_type.as_str()) {
            push(
                "invalid-value",
                p("onPodEvents.type"),
                format!(
                    "invalid onPodEvents type {}, must be `Normal` or `Warning`",
                    quote(&e.event_type)
                ),
            );
        }
    }
}

/// Why `pattern` does not compile with the rules' matcher: its reason alone (the matcher's
/// message, less its `invalid regular expression `…`: ` head, which the caller words).
fn regex_reason(pattern: &str) -> Result<(), String> {
    check_pattern(pattern).map_err(|e| {
        let head = format!("invalid regular expression {}: ", quote(pattern));
        e.strip_prefix(&head).map_or(e.clone(), str::to_string)
    })
}

/// The position of the field at `path` (relative to `body`, the `errorCategories` mapping),
/// keys matched in any case, or of its nearest existing ancestor.
pub fn locate(body: &Node, path: &str) -> Pos {
    let mut node = body;
    for segment in path.split('.').filter(|s| !s.is_empty()) {
        let (key, indices) = segment.split_once('[').map_or((segment, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            match lookup(node, key) {
                Some(n) if !n.is_null() => node = n,
                _ => return node.pos,
            }
        }
        for i in indices.split('[').filter(|s| !s.is_empty()) {
            let Ok(i) = i.trim_end_matches(']').parse::<usize>() else {
                return node.pos;
            };
            match &node.value {
                Value::Seq(items) if i < items.len() => node = &items[i],
                _ => return node.pos,
            }
        }
    }
    node.pos
}

/// The `errorCategories` mapping of a document of `shape` (the node paths are relative to).
pub fn body(node: &Node, shape: Shape) -> Option<&Node> {
    match shape {
        Shape::Executor => lookup(node, "application").and_then(|a| lookup(a, "errorCategories")),
        Shape::Bare => lookup(node, "errorCategories"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::document::{parse_documents, Kind, Resource};

    /// (config, every finding as `line:col path: message`).
    fn decode(text: &str) -> (Option<ErrorCategories>, Vec<String>) {
        let doc = parse_documents(text, None).documents.remove(0);
        assert_eq!(doc.kind, Some(Kind::ErrorCategories), "{:?}", doc.diagnostics);
        let findings = doc
            .diagnostics
            .iter()
            .map(|d| {
                let pos = d.pos.map_or("-".to_string(), |p| p.to_string());
                let severity = if d.is_error() { "error" } else { "warning" };
                format!("{severity} {pos} {}: {}", d.path, d.message)
            })
            .collect();
        let config = match doc.resource {
            Some(Resource::ErrorCategories(c)) => Some(c),
            _ => None,
        };
        (config, findings)
    }

    /// Each row of upstream's `TestNewClassifier_ValidationErrors`: the config, and the one
    /// error it gives (upstream checks a substring; this is the whole message and its place).
    #[test]
    fn upstream_validation_errors() {
        let long = "a".repeat(64);
        let rows: Vec<(String, &str, String)> = vec![
            ("- rules: [{onConditions: [OOMKilled]}]".into(), "categories[0].name", "category config must have a name".into()),
            ("- name: c\n  rules: [{}]".into(), "categories[0].rules[0]", "category `c` rule 0: rule must specify one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents".into()),
            ("- name: c\n  rules: [{onConditions: [OOMKilled], onExitCodes: {operator: In, values: [1]}}]".into(), "categories[0].rules[0]", "category `c` rule 0: rule must specify only one of onConditions, onExitCodes, onTerminationMessage, onPodError, or onPodEvents".into()),
            ("- name: c\n  rules: [{onConditions: [NotARealCondition]}]".into(), "categories[0].rules[0].onConditions[0]", "category `c` rule 0: unknown condition `NotARealCondition`, valid values: OOMKilled, Evicted, DeadlineExceeded".into()),
            ("- name: c\n  action: Remove\n  rules: [{onConditions: [OOMKilled]}]".into(), "categories[0].action", "category `c`: invalid action `Remove`: must be `Delete` or `Retain`".into()),
            ("- name: c\n  rules: [{onPodEvents: {regexp: '([invalid', type: Warning}}]".into(), "categories[0].rules[0].onPodEvents.regexp", "category `c` rule 0: invalid onPodEvents regexp `([invalid`: unclosed character class".into()),
            ("- name: c\n  rules: [{onPodEvents: {regexp: x, type: Info}}]".into(), "categories[0].rules[0].onPodEvents.type", "category `c` rule 0: invalid onPodEvents type `Info`, must be `Normal` or `Warning`".into()),
            ("- name: c\n  rules: [{onPodEvents: {regexp: x}}]".into(), "categories[0].rules[0].onPodEvents.type", "category `c` rule 0: invalid onPodEvents type ``, must be `Normal` or `Warning`".into()),
            ("- name: c\n  rules: [{onExitCodes: {operator: Equals, values: [1]}}]".into(), "categories[0].rules[0].onExitCodes.operator", "category `c` rule 0: invalid exit code operator `Equals`, must be `In` or `NotIn`".into()),
            ("- name: c\n  rules: [{onExitCodes: {operator: In}}]".into(), "categories[0].rules[0].onExitCodes.values", "category `c` rule 0: exit code matcher requires at least one value".into()),
            ("- name: c\n  rules: [{onTerminationMessage: {pattern: '[invalid'}}]".into(), "categories[0].rules[0].onTerminationMessage.pattern", "category `c` rule 0: invalid onTerminationMessage regex `[invalid`: unclosed character class".into()),
            ("- name: c\n  rules: [{onPodError: {pattern: '[invalid'}}]".into(), "categories[0].rules[0].onPodError.pattern", "category `c` rule 0: invalid onPodError regex `[invalid`: unclosed character class".into()),
            ("- name: c".into(), "categories[0].rules", "category `c` must have at least one rule".into()),
            ("- name: oom\n  rules: [{onConditions: [OOMKilled]}]\n- name: oom\n  rules: [{onConditions: [OOMKilled]}]".into(), "categories[1].name", "duplicate category name `oom`".into()),
            (format!("- name: {long}\n  rules: [{{onConditions: [OOMKilled]}}]"), "categories[0].name", format!("category name `{long}` exceeds maximum length 63")),
            (format!("- name: c\n  rules: [{{onConditions: [OOMKilled], subcategory: {long}}}]"), "categories[0].rules[0].subcategory", format!("category `c` rule 0: subcategory `{long}` exceeds maximum length 63")),
        ];
        for (categories, path, message) in rows {
            let indented: String = categories.lines().map(|l| format!("    {l}\n")).collect();
            let text = format!("errorCategories:\n  enabled: true\n  categories:\n{indented}");
            let (_, findings) = decode(&text);
            let errors: Vec<&String> = findings.iter().filter(|f| f.starts_with("error")).collect();
            assert_eq!(errors.len(), 1, "{text}\n{findings:#?}");
            assert!(
                errors[0].ends_with(&format!(" errorCategories.{path}: {message}")),
                "{text}\n{errors:#?}"
            );
        }
        for (field, value) in [("defaultCategory", &long), ("defaultSubcategory", &long)] {
            let text = format!("errorCategories:\n  enabled: true\n  {field}: {value}\n");
            let (_, findings) = decode(&text);
            assert_eq!(
                findings,
                vec![format!(
                    "error 3:{} errorCategories.{field}: {field} `{long}` exceeds maximum length 63",
                    field.len() + 5
                )]
            );
        }
    }

    #[test]
    fn both_shapes_any_case_and_positions() {
        let executor = "application:\n  clusterId: a\n  errorCategories:\n    enabled: true\n    categories:\n      - name: oom\n        action: Delete\n        rules:\n          - onConditions: [OOMKilled]\n            subcategory: kernel\nkubernetes: {x: 1}\n";
        let (config, findings) = decode(executor);
        assert_eq!(findings, Vec::<String>::new());
        let config = config.unwrap();
        assert_eq!(config.shape, Shape::Executor);
        assert!(config.enabled);
        assert_eq!(config.categories[0].pod_action(), Some(PodAction::Delete));
        assert_eq!(config.categories[0].rules[0].subcategory, "kernel");

        let bare = "ERRORCATEGORIES:\n  Enabled: 'true'\n  DefaultCategory: other\n  Categories:\n    - Name: user\n      RULES:\n        - onexitcodes: {Operator: In, Values: [1, '2']}\n        - OnConditions: OOMKilled,Evicted\n";
        let (config, findings) = decode(bare);
        assert_eq!(findings, Vec::<String>::new());
        let config = config.unwrap();
        assert_eq!(config.shape, Shape::Bare);
        assert!(config.enabled);
        assert_eq!(config.default_category, "other");
        assert_eq!(config.categories[0].name, "user");
        assert_eq!(
            config.categories[0].rules[0].on_exit_codes.as_ref().unwrap().values,
            vec![1, 2]
        );
        assert_eq!(
            config.categories[0].rules[1].on_conditions,
            vec!["OOMKilled", "Evicted"]
        );

        // Executor shape wins; a top-level errorCategories beside it is ignored, with a warning.
        let both = "errorCategories: {enabled: true}\napplication:\n  errorCategories: {enabled: true}\n";
        let (config, findings) = decode(both);
        assert_eq!(config.unwrap().shape, Shape::Executor);
        assert_eq!(
            findings,
            vec!["warning 1:1 errorCategories: ignored: the executor reads `application.errorCategories`"]
        );

        // Errors and warnings are placed, in the executor shape too.
        let bad = "application:\n  errorCategories:\n    enabled: yes\n    Enabled: true\n    categories:\n      - name: c\n        rules:\n          - onExitCodes: {operator: In, values: [1, x, 99999999999]}\n            retryLimit: 3\n";
        let (_, findings) = decode(bad);
        assert_eq!(
            findings,
            vec![
                "error 3:14 application.errorCategories.enabled: expected `true` or `false`, found `yes`",
                "error 4:5 application.errorCategories.enabled: duplicate key `Enabled` (first at 3:5): keys are case-insensitive, and the executor would keep only one of them",
                "error 8:53 application.errorCategories.categories[0].rules[0].onExitCodes.values[1]: expected an integer, found `x`",
                "error 8:56 application.errorCategories.categories[0].rules[0].onExitCodes.values[2]: exit code `99999999999` is out of range: exit codes are 32-bit integers",
                "warning 9:13 application.errorCategories.categories[0].rules[0].retryLimit: unknown field `retryLimit`, expected one of `containerName`, `onConditions`, `onExitCodes`, `onTerminationMessage`, `onPodError`, `onPodEvents`, `subcategory`, `hint` (the executor ignores it)",
            ]
        );
    }

    #[test]
    fn recognised_only_without_an_envelope() {
        let yaml = crate::yaml::parse_stream("apiVersion: armadaproject.io/v1\nkind: Queue\nerrorCategories: {}\n");
        assert_eq!(shape_of(&yaml.documents[0]), None);
        let yaml = crate::yaml::parse_stream("application: {clusterId: a}\n");
        assert_eq!(shape_of(&yaml.documents[0]), None);
        let yaml = crate::yaml::parse_stream("application: {errorcategories: }\n");
        assert_eq!(shape_of(&yaml.documents[0]), Some(Shape::Executor));
        // Where another kind is expected, the categorizer is named, not half-read.
        let doc = parse_documents(
            "errorCategories: {enabled: true}\n",
            Some(&[Kind::RetryPolicy, Kind::Queue]),
        )
        .documents
        .remove(0);
        assert!(doc.resource.is_none());
        assert_eq!(
            doc.diagnostics[0].message,
            "expected a `RetryPolicy` or `Queue` document here, found the executor's categorizer config (`errorCategories`)"
        );
    }
}
