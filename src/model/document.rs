//! YAML/JSON text → typed documents: envelope first, then the body, strictly.
//!
//! Owns: multi-document parsing, the `apiVersion`/`kind` envelope check (done before the
//! body, so a Queue is never read as a policy), dispatch to each kind's decoder, running the
//! validator, and placing every diagnostic at a line and column. Must not: read files (see
//! `crate::input`), print, or lint across documents (see `lint`).

use crate::diag::{index, join, one_of, quote, suggest, Diagnostic};
use crate::yaml::{self, Node, Pos, Value};

use super::categorizer::{self, ErrorCategories};
pub use super::decode::locate;
use super::decode::{Decoder, Fields};
use super::failure_history::{self, FailureHistory};
use super::fields;
use super::policy::{
    Action, AffinityMutation, AntiAffinityMode, Backoff, Condition, ExitCodes, MemoryBump, Mutation, Operator,
    ResourceMutation, RetryPolicy, Rule,
};
use super::queue::{Permission, Queue, Subject};
use super::scheduler::{self, SchedulerConfig};
use super::validate;
use super::vocabulary::{API_V1, API_V1BETA1, API_VERSIONS};

/// The envelope of several resources, as kubectl prints and reads them.
pub const LIST_KIND: &str = "List";
pub const LIST_API_VERSION: &str = "v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Kind {
    RetryPolicy,
    Queue,
    FailureHistory,
    SchedulerConfig,
    /// The executor's categorizer config (`model::categorizer`): it has no envelope, so it is
    /// recognised by its `errorCategories` key, never named by a `kind`.
    ErrorCategories,
}

impl Kind {
    /// The kinds an envelope's `kind` names, in the order of [`Kind::NAMES`].
    pub const ALL: [Kind; 4] = [
        Kind::RetryPolicy,
        Kind::Queue,
        Kind::FailureHistory,
        Kind::SchedulerConfig,
    ];
    pub const NAMES: [&'static str; 4] = ["RetryPolicy", "Queue", "FailureHistory", "SchedulerConfig"];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ErrorCategories => "ErrorCategories",
            other => Self::NAMES[other as usize],
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Self::NAMES.iter().position(|n| *n == text).map(|i| Self::ALL[i])
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ApiVersion {
    #[serde(rename = "armadaproject.io/v1")]
    V1,
    #[serde(rename = "armadaproject.io/v1beta1")]
    V1beta1,
}

impl ApiVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1 => API_V1,
            ApiVersion::V1beta1 => API_V1BETA1,
        }
    }

    pub fn parse(text: &str) -> Option<ApiVersion> {
        match text {
            API_V1 => Some(ApiVersion::V1),
            API_V1BETA1 => Some(ApiVersion::V1beta1),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Resource {
    RetryPolicy(RetryPolicy),
    Queue(Queue),
    FailureHistory(Box<FailureHistory>),
    SchedulerConfig(SchedulerConfig),
    ErrorCategories(ErrorCategories),
}

impl Resource {
    pub fn kind(&self) -> Kind {
        match self {
            Resource::RetryPolicy(_) => Kind::RetryPolicy,
            Resource::Queue(_) => Kind::Queue,
            Resource::FailureHistory(_) => Kind::FailureHistory,
            Resource::SchedulerConfig(_) => Kind::SchedulerConfig,
            Resource::ErrorCategories(_) => Kind::ErrorCategories,
        }
    }

    pub fn name(&self) -> Option<&str> {
        match self {
            Resource::RetryPolicy(p) => Some(&p.name),
            Resource::Queue(q) => Some(&q.name),
            Resource::FailureHistory(h) => Some(&h.job.id),
            Resource::SchedulerConfig(_) | Resource::ErrorCategories(_) => None,
        }
    }
}

/// One document of a file, decoded as far as it could be.
#[derive(Debug, Clone)]
pub struct Document {
    /// 0-based position in its file.
    pub index: usize,
    pub pos: Pos,
    pub api_version: Option<ApiVersion>,
    pub kind: Option<Kind>,
    /// The name as written, even when the document is otherwise invalid.
    pub name: Option<String>,
    /// Present when the body decoded; it may still carry validation errors.
    pub resource: Option<Resource>,
    pub diagnostics: Vec<Diagnostic>,
    /// The marked tree, kept so that later checks (lint) can place their findings.
    pub node: Node,
}

impl Document {
    pub fn is_valid(&self) -> bool {
        self.resource.is_some() && !self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Adds a finding from a later pass (lint), placed at the field it names.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        let pos = diagnostic.pos.or_else(|| locate(&self.node, &diagnostic.path));
        self.diagnostics.push(Diagnostic { pos, ..diagnostic });
    }
}

/// Every document of one text, plus a syntax error that ended it early, if any.
#[derive(Debug, Default)]
pub struct ParsedText {
    pub documents: Vec<Document>,
    pub syntax_error: Option<Diagnostic>,
}

/// Parses, decodes and validates every document of `text`. `expected` restricts the kinds
/// accepted (a Queue where a RetryPolicy is expected is refused by its `kind`).
pub fn parse_documents(text: &str, expected: Option<&[Kind]>) -> ParsedText {
    let stream = yaml::parse_stream(text);
    let mut out = ParsedText::default();
    // Items of a `kind: List` are numbered as documents of their own, after the documents
    // before them, so that reports say "document N" of the file consistently.
    let mut index = 0;
    for node in stream.documents {
        // `---` at the end of a file, or a comment-only document: nothing to check.
        if node.is_null() {
            index += 1;
            continue;
        }
        if is_list(&node) {
            match list_items(&node) {
                Ok(items) => {
                    for item in items {
                        out.documents.push(decode_document(item, index, expected));
                        index += 1;
                    }
                }
                Err(d) => {
                    out.documents.push(Document {
                        index,
                        pos: node.pos,
                        api_version: None,
                        kind: None,
                        name: None,
                        resource: None,
                        diagnostics: vec![d],
                        node,
                    });
                    index += 1;
                }
            }
            continue;
        }
        out.documents.push(decode_document(node, index, expected));
        index += 1;
    }
    if let Some(e) = stream.error {
        // After earlier documents, say which one broke: the report lists the earlier ones by
        // number, and this one has no entry of its own.
        let message = if e.documents_before > 0 {
            format!("invalid YAML in document {}: {}", e.documents_before + 1, e.message)
        } else {
            format!("invalid YAML: {}", e.message)
        };
        out.syntax_error = Some(Diagnostic::error("syntax", "", message).at(e.pos));
    }
    out
}

/// `kind: List` (what `get -o json|yaml` prints for several resources, kubectl's shape).
fn is_list(node: &Node) -> bool {
    node.get("kind").and_then(Node::as_scalar) == Some(LIST_KIND)
}

/// The `items` of a List, each to be decoded as a document. The List's own `apiVersion` is
/// `v1` as kubectl writes it; any of ours is accepted too, and `metadata` is ignored.
fn list_items(node: &Node) -> Result<Vec<Node>, Diagnostic> {
    if let Value::Map(entries) = &node.value {
        for (k, v) in entries {
            match k.as_scalar() {
                Some("apiVersion") => {
                    let version = v.as_scalar().unwrap_or_default();
                    if version != LIST_API_VERSION && ApiVersion::parse(version).is_none() {
                        return Err(Diagnostic::error(
                            "unknown-api-version",
                            "apiVersion",
                            format!(
                                "unknown apiVersion {} for kind `List`, expected `{LIST_API_VERSION}`",
                                quote(version)
                            ),
                        )
                        .at(v.pos));
                    }
                }
                Some("kind" | "items" | "metadata") => {}
                other => {
                    let key = other.unwrap_or_default();
                    return Err(Diagnostic::error(
                        "unknown-field",
                        key,
                        format!(
                            "unknown field {} in a `List`, expected one of `apiVersion`, `kind`, `metadata`, `items`",
                            quote(key)
                        ),
                    )
                    .at(k.pos));
                }
            }
        }
    }
    match node.get("items") {
        Some(Node {
            value: Value::Seq(items),
            ..
        }) => Ok(items.clone()),
        Some(n) if n.is_null() => Ok(Vec::new()),
        Some(n) => Err(Diagnostic::error(
            "invalid-type",
            "items",
            format!("`items` must be a list of documents, found a {}", n.kind_name()),
        )
        .at(n.pos)),
        None => Err(Diagnostic::error("missing-field", "items", "a `List` needs `items`").at(node.pos)),
    }
}

/// Decodes one document node.
pub fn decode_document(node: Node, index: usize, expected: Option<&[Kind]>) -> Document {
    let mut doc = Document {
        index,
        pos: node.pos,
        api_version: None,
        kind: None,
        name: None,
        resource: None,
        diagnostics: Vec::new(),
        node,
    };
    let mut dec = Decoder::default();
    let node = &doc.node;
    if !matches!(node.value, Value::Map(_)) {
        let what = if node.is_null() {
            "an empty document".to_string()
        } else {
            format!("a {}", node.kind_name())
        };
        dec.error(
            node,
            "invalid-type",
            "",
            format!("expected a mapping with `apiVersion` and `kind`, found {what}"),
        );
        doc.diagnostics = dec.diagnostics;
        return doc;
    }
    if let Some(shape) = categorizer::shape_of(node) {
        decode_categorizer(&mut doc, shape, expected);
        return doc;
    }
    doc.name = node
        .get("name")
        .or_else(|| node.get("metadata").and_then(|m| m.get("name")))
        .and_then(Node::as_scalar)
        .map(str::to_string);
    let (api_version, kind) = envelope(&mut dec, node, expected);
    doc.api_version = api_version;
    doc.kind = kind;
    if let (Some(version), Some(kind)) = (api_version, kind) {
        let resource = match (kind, version) {
            (Kind::RetryPolicy, _) => decode_policy(&mut dec, node, version).map(Resource::RetryPolicy),
            (Kind::Queue, _) => decode_queue(&mut dec, node).map(Resource::Queue),
            (Kind::FailureHistory, _) => {
                failure_history::decode_failure_history(&mut dec, node).map(|h| Resource::FailureHistory(Box::new(h)))
            }
            (Kind::SchedulerConfig, _) => {
                scheduler::decode_scheduler_config(&mut dec, node).map(Resource::SchedulerConfig)
            }
            // Never named by an envelope (`Kind::parse` does not know it).
            (Kind::ErrorCategories, _) => None,
        };
        // Semantic rules run even when some fields failed to decode, so that every error of
        // the document is reported; a finding on (or above, or below) a field that already
        // failed to decode is dropped, since it would only repeat that error.
        if let Some(resource) = &resource {
            let failed: Vec<String> = dec
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.path.clone())
                .collect();
            for d in validate_resource(resource) {
                let path = document_path(&d.path, kind, version);
                if failed.iter().any(|f| masks(f, &path, d.code)) {
                    continue;
                }
                let pos = locate(node, &path);
                let message = if d.code == "no-matcher" && (kind, version) == (Kind::RetryPolicy, ApiVersion::V1beta1) {
                    // A v1beta1 rule has one matcher, its category (upstream's server:
                    // `on_category must be set`); the design dialect's others have no place.
                    "a rule needs `onCategory` (upstream: `on_category must be set`); write a catch-all as the policy's `defaultAction`"
                        .to_string()
                } else {
                    document_message(&d.message, kind, version)
                };
                dec.diagnostics.push(Diagnostic {
                    path,
                    pos,
                    message,
                    ..d
                });
            }
        }
        doc.resource = resource;
    }
    doc.diagnostics = dec.diagnostics;
    // Decoder findings come before validator findings; a reader goes down the file, so the
    // report does too. Stable: findings at one place keep the order they were found in.
    doc.diagnostics
        .sort_by_key(|d| d.pos.map_or((usize::MAX, usize::MAX), |p| (p.line, p.column)));
    doc
}

/// Every validation rule of the resource's kind.
fn validate_resource(resource: &Resource) -> Vec<Diagnostic> {
    match resource {
        Resource::RetryPolicy(p) => validate::validate_policy(p),
        Resource::Queue(q) => validate::validate_queue(q),
        Resource::FailureHistory(h) => failure_history::validate_failure_history(h),
        Resource::SchedulerConfig(c) => scheduler::validate_scheduler_config(c),
        Resource::ErrorCategories(c) => categorizer::validate_error_categories(c),
    }
}

/// A categorizer document (no envelope): decoded, upstream's checks placed at their fields
/// (paths from the document's top, keys matched in any case), a decode failure masking the
/// checks it would only repeat, as for the other kinds.
fn decode_categorizer(doc: &mut Document, shape: categorizer::Shape, expected: Option<&[Kind]>) {
    let mut dec = Decoder::default();
    let node = &doc.node;
    doc.kind = Some(Kind::ErrorCategories);
    if let Some(expected) = expected.filter(|e| !e.contains(&Kind::ErrorCategories)) {
        let names: Vec<&str> = expected.iter().map(|k| k.as_str()).collect();
        dec.error(
            node,
            "unexpected-kind",
            "",
            format!(
                "expected a {} document here, found the executor's categorizer config (`{}`)",
                one_of(&names).replace(", ", " or "),
                shape.prefix()
            ),
        );
        doc.kind = None;
        doc.diagnostics = dec.diagnostics;
        return;
    }
    let config = categorizer::decode_error_categories(&mut dec, node, shape);
    if let (Some(config), Some(body)) = (&config, categorizer::body(node, shape)) {
        let failed: Vec<String> = dec
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.path.clone())
            .collect();
        for d in categorizer::validate_error_categories(config) {
            let path = join(shape.prefix(), &d.path);
            if failed.iter().any(|f| masks(f, &path, d.code)) {
                continue;
            }
            let pos = categorizer::locate(body, &d.path);
            dec.diagnostics.push(Diagnostic { path, ..d }.at(pos));
        }
    }
    doc.resource = config.map(Resource::ErrorCategories);
    doc.diagnostics = dec.diagnostics;
    doc.diagnostics
        .sort_by_key(|d| d.pos.map_or((usize::MAX, usize::MAX), |p| (p.line, p.column)));
}

/// A validator message names fields in the wire layout; a v1beta1 document spells the
/// category matchers `onCategory` / `onSubcategory`, so the message does too.
pub fn document_message(message: &str, kind: Kind, version: ApiVersion) -> String {
    match (kind, version) {
        (Kind::RetryPolicy, ApiVersion::V1beta1) => message
            .replace("`onFailureSubcategory`", "`onSubcategory`")
            .replace("`onFailureCategory`", "`onCategory`"),
        _ => message.to_string(),
    }
}

fn envelope(dec: &mut Decoder, node: &Node, expected: Option<&[Kind]>) -> (Option<ApiVersion>, Option<Kind>) {
    let version = match node.get("apiVersion") {
        None => {
            dec.error(
                node,
                "missing-field",
                "apiVersion",
                format!("missing `apiVersion`; expected one of {}", one_of(&API_VERSIONS)),
            );
            None
        }
        Some(v) => match v.as_scalar().and_then(ApiVersion::parse) {
            Some(version) => Some(version),
            None => {
                let text = v.as_scalar().unwrap_or_default();
                dec.error(
                    v,
                    "unknown-api-version",
                    "apiVersion",
                    format!(
                        "unknown apiVersion {}, expected one of {}",
                        quote(text),
                        one_of(&API_VERSIONS)
                    ),
                );
                None
            }
        },
    };
    let kind = match node.get("kind") {
        None => {
            dec.error(
                node,
                "missing-field",
                "kind",
                format!("missing `kind`; expected one of {}", one_of(&Kind::NAMES)),
            );
            None
        }
        Some(k) => match k.as_scalar() {
            Some(text) => match Kind::parse(text) {
                Some(kind) => Some(kind),
                None => {
                    let mut message = format!("unknown kind {}, expected one of {}", quote(text), one_of(&Kind::NAMES));
                    if let Some(s) = suggest(text, &Kind::NAMES) {
                        message.push_str(&format!("; did you mean `{s}`?"));
                    }
                    dec.error(k, "unknown-kind", "kind", message);
                    None
                }
            },
            None => {
                dec.error(k, "invalid-type", "kind", "expected a string");
                None
            }
        },
    };
    if let (Some(kind), Some(version)) = (kind, version) {
        if matches!(kind, Kind::FailureHistory | Kind::SchedulerConfig) && version != ApiVersion::V1 {
            dec.error(
                node.get("apiVersion").unwrap_or(node),
                "unknown-api-version",
                "apiVersion",
                format!("kind `{}` has apiVersion `{API_V1}` only", kind.as_str()),
            );
            return (None, Some(kind));
        }
        if let Some(expected) = expected {
            if !expected.contains(&kind) {
                let names: Vec<&str> = expected.iter().map(|k| k.as_str()).collect();
                // A categorizer has no `kind` to name: say what it is (`--categorizer FILE`).
                let wanted = if expected == [Kind::ErrorCategories] {
                    "the executor's categorizer config (`errorCategories` at its top or under `application`)"
                        .to_string()
                } else {
                    format!("a {} document", one_of(&names).replace(", ", " or "))
                };
                dec.error(
                    node.get("kind").unwrap_or(node),
                    "unexpected-kind",
                    "kind",
                    format!("expected {wanted} here, found kind `{}`", kind.as_str()),
                );
                return (Some(version), None);
            }
        }
    }
    (version, kind)
}

/// Whether a validator finding (`code` at `path`) only repeats a decode error at `failed`:
/// the finding is at or under the failed field (the value there is a placeholder), or above
/// it and plausibly caused by the placeholder (`values` empty because its only item failed).
/// Two findings above a failure are independent of it and always kept: `too-many-rules`
/// (every rule is counted, decoded or not), and `no-matcher` unless the failure is in one of
/// the rule's matchers (a rule whose `action` is misspelt still has no matcher).
fn masks(failed: &str, path: &str, code: &str) -> bool {
    let under = |long: &str, short: &str| {
        long.strip_prefix(short)
            .filter(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
            .map(str::to_string)
    };
    if under(path, failed).is_some() {
        return true;
    }
    match (under(failed, path), code) {
        (None, _) => false,
        (Some(_), "too-many-rules") => false,
        (Some(rest), "no-matcher") => rest.starts_with(".on"),
        (Some(_), _) => true,
    }
}

/// Maps a validator path (the wire layout: `rules[0].onFailureCategory[1]`) onto the layout
/// of the document the user wrote.
pub fn document_path(path: &str, kind: Kind, version: ApiVersion) -> String {
    match (kind, version) {
        (Kind::RetryPolicy, ApiVersion::V1) => {
            if path == "name" {
                "metadata.name".to_string()
            } else if path.is_empty() {
                String::new()
            } else {
                format!("spec.{path}")
            }
        }
        (Kind::RetryPolicy, ApiVersion::V1beta1) => {
            let mut out = path.to_string();
            for (from, to) in [
                ("onFailureSubcategory", "onSubcategory"),
                ("onFailureCategory", "onCategory"),
            ] {
                if let Some(at) = out.find(from) {
                    // A v1beta1 document holds one category, written as a scalar.
                    out = format!("{}{to}", &out[..at]);
                }
            }
            out
        }
        _ => path.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// RetryPolicy

fn decode_policy(dec: &mut Decoder, node: &Node, version: ApiVersion) -> Option<RetryPolicy> {
    match version {
        ApiVersion::V1 => decode_policy_v1(dec, node),
        ApiVersion::V1beta1 => decode_policy_v1beta1(dec, node),
    }
}

fn decode_policy_v1(dec: &mut Decoder, node: &Node) -> Option<RetryPolicy> {
    let top = dec.fields(node, "", &fields::names(fields::RETRY_POLICY))?;
    let mut policy = RetryPolicy::default();
    if let Some(meta) = dec.require(&top, node, "metadata") {
        if let Some(fields) = dec.fields(meta, "metadata", &fields::names(fields::METADATA)) {
            if let Some(name) = dec.require(&fields, meta, "name") {
                policy.name = dec.string(name, "metadata.name").unwrap_or_default();
            }
        }
    }
    let spec = dec.require(&top, node, "spec")?;
    let spec_fields = dec.fields(spec, "spec", &fields::names(fields::SPEC_FIELDS))?;
    if let Some(n) = spec_fields.get("retryLimit") {
        policy.retry_limit = dec.u32(n, "spec.retryLimit");
    }
    if let Some(n) = spec_fields.get("defaultAction") {
        policy.default_action = action(dec, n, "spec.defaultAction");
    }
    if let Some(n) = spec_fields.get("backoff") {
        policy.backoff = backoff(dec, n, "spec.backoff");
    }
    if let Some(n) = spec_fields.get("antiAffinity") {
        policy.anti_affinity = anti_affinity(dec, n, "spec.antiAffinity");
    }
    if let Some(n) = spec_fields.get("rules") {
        if let Some(items) = dec.seq(n, "spec.rules") {
            for (i, item) in items.iter().enumerate() {
                policy.rules.push(rule_v1(dec, item, &index("spec.rules", i)));
            }
        }
    }
    Some(policy)
}

fn rule_v1(dec: &mut Decoder, node: &Node, path: &str) -> Rule {
    let mut rule = Rule::default();
    let Some(f) = dec.fields(node, path, &fields::names(fields::RULE)) else {
        return rule;
    };
    if let Some(n) = dec.require(&f, node, "action") {
        rule.action = action(dec, n, &f.path_of("action")).unwrap_or_default();
    }
    if let Some(n) = f.get("containerName") {
        rule.container_name = dec.string(n, &f.path_of("containerName"));
    }
    if let Some(n) = f.get("includeInitContainers") {
        rule.include_init_containers = dec.bool(n, &f.path_of("includeInitContainers")).unwrap_or(false);
    }
    if let Some(n) = f.get("onConditions") {
        let p = f.path_of("onConditions");
        if let Some(items) = dec.seq(n, &p) {
            // All or nothing: dropping only the bad items would shift the indices the
            // validator reports (`onConditions[1]` would name the wrong entry).
            let out: Vec<Option<Condition>> = items
                .iter()
                .enumerate()
                .map(|(i, item)| dec.enumeration(item, &index(&p, i), &Condition::NAMES, Condition::parse))
                .collect();
            rule.on_conditions = out.into_iter().collect();
        }
    }
    if let Some(n) = f.get("onExitCodes") {
        rule.on_exit_codes = exit_codes(dec, n, &f.path_of("onExitCodes"));
    }
    if let Some(n) = f.get("onTerminationMessage") {
        let p = f.path_of("onTerminationMessage");
        if let Some(m) = dec.fields(n, &p, &fields::names(fields::TERMINATION_MESSAGE)) {
            if let Some(pattern) = dec.require(&m, n, "pattern") {
                rule.on_termination_message = dec.string(pattern, &m.path_of("pattern"));
            }
        }
    }
    if let Some(n) = f.get("onFailureCategory") {
        rule.on_failure_category = category_list(dec, n, &f.path_of("onFailureCategory"));
    }
    if let Some(n) = f.get("onCategory") {
        if f.has("onFailureCategory") {
            dec.error(
                n,
                "invalid-value",
                &f.path_of("onCategory"),
                "set `onFailureCategory` or `onCategory`, not both",
            );
        } else {
            rule.on_failure_category = dec.string(n, &f.path_of("onCategory")).map(|c| vec![c]);
        }
    }
    if let Some(n) = f.get("onFailureSubcategory") {
        rule.on_failure_subcategory = category_list(dec, n, &f.path_of("onFailureSubcategory"));
    }
    if let Some(n) = f.get("retryLimit") {
        rule.retry_limit = dec.u32(n, &f.path_of("retryLimit"));
    }
    if let Some(n) = f.get("backoff") {
        rule.backoff = backoff(dec, n, &f.path_of("backoff"));
    }
    if let Some(n) = f.get("antiAffinity") {
        rule.anti_affinity = anti_affinity(dec, n, &f.path_of("antiAffinity"));
    }
    if let Some(n) = f.get("mutate") {
        rule.mutate = mutation(dec, n, &f.path_of("mutate"));
    }
    rule
}

/// `onFailureCategory: [a, b]`; a lone string gets a precise error, not a silent promotion.
fn category_list(dec: &mut Decoder, node: &Node, path: &str) -> Option<Vec<String>> {
    if let Some(text) = node.as_scalar() {
        dec.error(
            node,
            "invalid-type",
            path,
            format!("expected a list, found scalar {}; write `[{text}]`", quote(text)),
        );
        return None;
    }
    dec.strings(node, path)
}

fn decode_policy_v1beta1(dec: &mut Decoder, node: &Node) -> Option<RetryPolicy> {
    let top = dec.fields(node, "", &fields::names(fields::RETRY_POLICY_V1BETA1))?;
    let mut policy = RetryPolicy {
        // Upstream meaning: an absent limit is 0, never retry.
        retry_limit: Some(0),
        ..RetryPolicy::default()
    };
    if let Some(n) = dec.require(&top, node, "name") {
        policy.name = dec.string(n, "name").unwrap_or_default();
    }
    if let Some(n) = top.get("retryLimit") {
        policy.retry_limit = dec.u32(n, "retryLimit").or(Some(0));
    }
    match top.get("defaultAction") {
        Some(n) => policy.default_action = action(dec, n, "defaultAction"),
        // Upstream refuses a policy without one (`validation.go`), and its engine will not
        // default it: a truncated definition must not become "retry everything" or "fail
        // everything" silently. The design dialect (v1) keeps its documented `Fail`.
        None => dec.error(
            node,
            "missing-field",
            "defaultAction",
            "missing required field `defaultAction`: `armadaproject.io/v1beta1` (upstream Armada) \
             refuses a policy without one; write `defaultAction: Fail` or `defaultAction: Retry`",
        ),
    }
    if let Some(n) = top.get("rules") {
        if let Some(items) = dec.seq(n, "rules") {
            for (i, item) in items.iter().enumerate() {
                let path = index("rules", i);
                let mut rule = Rule::default();
                if let Some(f) = dec.fields(item, &path, &fields::names(fields::RULE_V1BETA1)) {
                    if let Some(a) = dec.require(&f, item, "action") {
                        rule.action = action(dec, a, &f.path_of("action")).unwrap_or_default();
                    }
                    if let Some(c) = f.get("onCategory") {
                        rule.on_failure_category = dec.string(c, &f.path_of("onCategory")).map(|c| vec![c]);
                    }
                    if let Some(c) = f.get("onSubcategory") {
                        rule.on_failure_subcategory = dec.string(c, &f.path_of("onSubcategory")).map(|c| vec![c]);
                    }
                    if let Some(m) = f.get("mutate") {
                        rule.mutate = mutation(dec, m, &f.path_of("mutate"));
                    }
                }
                policy.rules.push(rule);
            }
        }
    }
    Some(policy)
}

/// An action as upstream's decoder reads the JSON that armadactl makes of the YAML
/// (`sigs.k8s.io/yaml`): a plain integer is a number, anything else a name
/// ([`Action::parse`]), so a quoted `"1"` is a name and refused as upstream refuses it.
fn action(dec: &mut Decoder, node: &Node, path: &str) -> Option<Action> {
    let Value::Scalar { text, quoted } = &node.value else {
        return dec.enumeration(node, path, &Action::NAMES, Action::parse);
    };
    let number = (!quoted).then(|| text.parse::<i64>().ok()).flatten();
    let parsed = match number {
        Some(n) => Action::from_number(n),
        None => Action::parse(text),
    };
    if parsed.is_none() {
        let mut message = Action::refusal(text, number.is_some());
        if let Some(s) = suggest(text.trim(), &Action::NAMES) {
            message.push_str(&format!("; did you mean `{s}`?"));
        }
        dec.error(node, "invalid-value", path, message);
    }
    parsed
}

fn backoff(dec: &mut Decoder, node: &Node, path: &str) -> Backoff {
    let mut b = Backoff::default();
    let Some(f) = dec.fields(node, path, &fields::names(fields::BACKOFF)) else {
        return b;
    };
    if let Some(n) = f.get("initialDelay") {
        b.initial_delay = dec.duration(n, &f.path_of("initialDelay"));
    }
    if let Some(n) = f.get("maxDelay") {
        b.max_delay = dec.duration(n, &f.path_of("maxDelay"));
    }
    if let Some(n) = f.get("multiplier") {
        b.multiplier = dec.float(n, &f.path_of("multiplier"));
    }
    if let Some(n) = f.get("jitter") {
        b.jitter = dec.float(n, &f.path_of("jitter"));
    }
    b
}

fn anti_affinity(dec: &mut Decoder, node: &Node, path: &str) -> Option<AntiAffinityMode> {
    let f = dec.fields(node, path, &fields::names(fields::ANTI_AFFINITY))?;
    let mode = dec.require(&f, node, "mode")?;
    dec.enumeration(
        mode,
        &f.path_of("mode"),
        &AntiAffinityMode::NAMES,
        AntiAffinityMode::parse,
    )
}

fn exit_codes(dec: &mut Decoder, node: &Node, path: &str) -> Option<ExitCodes> {
    let f = dec.fields(node, path, &fields::names(fields::EXIT_CODES))?;
    let operator = dec.require(&f, node, "operator");
    let values = dec.require(&f, node, "values");
    let operator = operator.and_then(|n| dec.enumeration(n, &f.path_of("operator"), &Operator::NAMES, Operator::parse));
    let p = f.path_of("values");
    // All or nothing, as for `onConditions`: the validator's indices must be the user's.
    let values = values.and_then(|n| dec.seq(n, &p)).and_then(|items| {
        let parsed: Vec<Option<i64>> = items
            .iter()
            .enumerate()
            .map(|(i, item)| dec.int(item, &index(&p, i)))
            .collect();
        parsed.into_iter().collect::<Option<Vec<_>>>()
    });
    Some(ExitCodes {
        operator: operator?,
        values: values?,
    })
}

fn mutation(dec: &mut Decoder, node: &Node, path: &str) -> Option<Mutation> {
    let f = dec.fields(node, path, &fields::names(fields::MUTATE))?;
    let mut m = Mutation::default();
    if let Some(n) = f.get("affinity") {
        let p = f.path_of("affinity");
        if let Some(a) = dec.fields(n, &p, &fields::allowed(fields::MUTATE, "affinity")) {
            let avoid = a
                .get("avoidSameNode")
                .and_then(|v| dec.bool(v, &a.path_of("avoidSameNode")));
            m.affinity = Some(AffinityMutation {
                avoid_same_node: avoid.unwrap_or(false),
            });
        }
    }
    if let Some(n) = f.get("resources") {
        let p = f.path_of("resources");
        if let Some(r) = dec.fields(n, &p, &fields::allowed(fields::MUTATE, "resources")) {
            let mut resources = ResourceMutation::default();
            if let Some(mem) = r.get("memory") {
                let mp = r.path_of("memory");
                if let Some(mf) = dec.fields(mem, &mp, &fields::names(fields::MEMORY)) {
                    let factor = mf.get("factor").and_then(|v| dec.float(v, &mf.path_of("factor")));
                    let fixed = mf.get("static").and_then(|v| dec.string(v, &mf.path_of("static")));
                    resources.memory = Some(MemoryBump { factor, fixed });
                }
            }
            m.resources = Some(resources);
        }
    }
    Some(m)
}

// ---------------------------------------------------------------------------------------
// Queue

fn decode_queue(dec: &mut Decoder, node: &Node) -> Option<Queue> {
    let f = dec.fields(node, "", &fields::names(fields::QUEUE))?;
    let mut q = Queue::default();
    if let Some(n) = dec.require(&f, node, "name") {
        q.name = dec.string(n, "name").unwrap_or_default();
    }
    if let Some(n) = f.get("priorityFactor") {
        q.priority_factor = dec.float(n, "priorityFactor").unwrap_or(1.0);
    }
    if let Some(n) = f.get("userOwners") {
        q.user_owners = dec.strings(n, "userOwners").unwrap_or_default();
    }
    if let Some(n) = f.get("groupOwners") {
        q.group_owners = dec.strings(n, "groupOwners").unwrap_or_default();
    }
    if let Some(n) = f.get("cordoned") {
        q.cordoned = dec.bool(n, "cordoned").unwrap_or(false);
    }
    if let Some(n) = f.get("retryPolicies") {
        q.retry_policies = dec.strings(n, "retryPolicies").unwrap_or_default();
    }
    if let Some(n) = f.get("labels") {
        if let Value::Map(entries) = &n.value {
            for (k, v) in entries {
                let key = k.as_scalar().unwrap_or_default().to_string();
                let value = if v.is_null() {
                    Some(String::new())
                } else {
                    dec.string(v, &join("labels", &key))
                };
                if let Some(value) = value {
                    q.labels.insert(key, value);
                }
            }
        } else {
            dec.error(
                n,
                "invalid-type",
                "labels",
                format!("expected a mapping, found a {}", n.kind_name()),
            );
        }
    }
    if let Some(n) = f.get("permissions") {
        if let Some(items) = dec.seq(n, "permissions") {
            for (i, item) in items.iter().enumerate() {
                let p = index("permissions", i);
                let Some(pf) = dec.fields(item, &p, &fields::names(fields::PERMISSION)) else {
                    continue;
                };
                let mut perm = Permission::default();
                if let Some(v) = pf.get("verbs") {
                    perm.verbs = dec.strings(v, &pf.path_of("verbs")).unwrap_or_default();
                }
                if let Some(s) = pf.get("subjects") {
                    let sp = pf.path_of("subjects");
                    if let Some(subjects) = dec.seq(s, &sp) {
                        for (j, subject) in subjects.iter().enumerate() {
                            let subp = index(&sp, j);
                            let Some(sf) = dec.fields(subject, &subp, &fields::allowed(fields::PERMISSION, "subjects"))
                            else {
                                continue;
                            };
                            let kind = dec.require(&sf, subject, "kind").and_then(|k| {
                                dec.enumeration(k, &sf.path_of("kind"), &["User", "Group"], |t| {
                                    matches!(t, "User" | "Group").then(|| t.to_string())
                                })
                            });
                            let name = dec
                                .require(&sf, subject, "name")
                                .and_then(|k| dec.string(k, &sf.path_of("name")));
                            if let (Some(kind), Some(name)) = (kind, name) {
                                perm.subjects.push(Subject { kind, name });
                            }
                        }
                    }
                }
                q.permissions.push(perm);
            }
        }
    }
    Some(q)
}

/// Reads the fields of a mapping for callers outside this module (history, scheduler).
pub fn fields<'n>(dec: &mut Decoder, node: &'n Node, path: &str, allowed: &[&str]) -> Option<Fields<'n>> {
    dec.fields(node, path, allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_survives_keys_that_look_like_paths() {
        let root = yaml::parse_stream("labels:\n  \"a[b\": \"\"\n  c: d\n")
            .documents
            .remove(0);
        // The labels mapping, which starts at its first key.
        assert_eq!(locate(&root, "labels.a[b"), Some(Pos { line: 2, column: 3 }));
        assert_eq!(locate(&root, "labels.c"), Some(Pos { line: 3, column: 6 }));
    }

    #[test]
    fn label_key_with_bracket_is_placed() {
        let text = "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: q\nlabels: {\"a[b\": \"\"}\n";
        let parsed = parse_documents(text, None);
        let d = &parsed.documents[0].diagnostics;
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].pos.is_some(), "{d:?}");
    }

    #[test]
    fn syntax_error_after_a_document_names_its_document() {
        let parsed = parse_documents("a: 1\n---\nb: [\n", None);
        let e = parsed.syntax_error.unwrap();
        assert!(e.message.starts_with("invalid YAML in document 2: "), "{e:?}");
        let parsed = parse_documents("b: [\n", None);
        assert!(parsed.syntax_error.unwrap().message.starts_with("invalid YAML: "));
    }

    #[test]
    fn masking_keeps_independent_findings() {
        // A value that failed to decode hides findings at, under and above it...
        assert!(masks("spec.rules[0].action", "spec.rules[0].action", "invalid-value"));
        assert!(masks("metadata", "metadata.name", "invalid-name"));
        assert!(masks(
            "spec.rules[0].onExitCodes.values[0]",
            "spec.rules[0].onExitCodes.values",
            "invalid-value"
        ));
        assert!(masks(
            "spec.rules[0].onExitCodes.operator",
            "spec.rules[0]",
            "no-matcher"
        ));
        // ...but not a rule's missing matcher when the failure is elsewhere in the rule, nor
        // the rule count, nor a sibling whose name merely starts the same.
        assert!(!masks("spec.rules[0].action", "spec.rules[0]", "no-matcher"));
        assert!(!masks("spec.rules[3].action", "spec.rules", "too-many-rules"));
        assert!(!masks("spec.rules[1].action", "spec.rules[10].action", "invalid-value"));
    }
}
