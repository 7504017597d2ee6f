//! The documents `tune`'s candidates are made from ([`Template`]: the `-f` documents and the
//! scheduler config's tree), its [`Template::check`] of the varies, their columns, and the
//! numbering of candidates ([`count`]).
//!
//! Owns: those. Must not: do I/O, or build a candidate (that is `candidates`).

use std::collections::HashMap;

use crate::diag::{quote, suggest, Diagnostic};
use crate::input::{SchedulerSource, SourceFile};
use crate::model::document::Document;
use crate::model::fields;
use crate::model::scheduler::{scheduler_config_from_node, SchedulerConfig};
use crate::model::{ApiVersion, Kind};
use crate::yaml::{Node, Pos, Value};

use super::vary::{self, resolve, typed, Layout, Scalar, Setting, Target, Typed, Vary};

/// A candidate's value of each vary: the vary as typed (`ml:spec.retryLimit`), the value as
/// output shows it (`3`, `unset`), in the order of the varies.
pub type Values = Vec<(String, String)>;

/// How many candidates `varies` make: the product of their value counts (saturating; 1 for
/// no varies). Cheap, so that `--max-candidates` is enforced before anything is built.
pub fn count(varies: &[Vary]) -> u128 {
    varies
        .iter()
        .fold(1u128, |n, v| n.saturating_mul(v.values.len() as u128))
}

/// The documents the candidates are made from.
#[derive(Debug)]
pub struct Template {
    pub(super) files: Vec<SourceFile>,
    pub(super) scheduler: Option<SchedulerSource>,
    /// The scheduler config's tree: the file's, or an empty mapping.
    pub(super) scheduler_node: Node,
    /// What a candidate's scheduler config is when no vary edits it.
    pub(super) scheduler_config: Result<SchedulerConfig, Vec<Diagnostic>>,
    /// Every RetryPolicy document: its name, file and position in the file.
    pub(super) policies: Vec<(String, usize, usize)>,
    /// The `--categorizer` file: its name and its one document (valid).
    pub(super) categorizer: Option<(String, Document)>,
}

impl Template {
    /// `files` as `input::read_sources` returns them; `scheduler` the `--scheduler-config`
    /// file, if one was given (without one, a `scheduler:` vary starts from an empty config).
    pub fn new(files: Vec<SourceFile>, scheduler: Option<SchedulerSource>) -> Template {
        let scheduler_node = scheduler.as_ref().map_or_else(
            || Node {
                pos: Pos::default(),
                value: Value::Map(Vec::new()),
            },
            |s| s.node.clone(),
        );
        let scheduler_config = scheduler_config_from_node(&scheduler_node);
        let mut policies = Vec::new();
        for (f, file) in files.iter().enumerate() {
            for (d, doc) in file.documents.iter().enumerate() {
                if let (Some(Kind::RetryPolicy), Some(name)) = (doc.kind, &doc.name) {
                    policies.push((name.clone(), f, d));
                }
            }
        }
        Template {
            files,
            scheduler,
            scheduler_node,
            scheduler_config,
            policies,
            categorizer: None,
        }
    }

    /// The `--categorizer` file (`name`, its one document, valid), which `categorizer:`
    /// varies edit.
    pub fn with_categorizer(mut self, name: String, doc: Document) -> Template {
        self.categorizer = Some((name, doc));
        self
    }

    /// The `--categorizer` file's name, if one was given.
    pub fn categorizer_name(&self) -> Option<&str> {
        self.categorizer.as_ref().map(|(n, _)| n.as_str())
    }

    /// The template's files, as given.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The `--scheduler-config` file, as given.
    pub fn scheduler(&self) -> Option<&SchedulerSource> {
        self.scheduler.as_ref()
    }

    /// Checks every vary against the template: its policy exists (once), its path names a
    /// scalar field there (an index within its list), each value fits the field, `unset`
    /// only where the field may be absent, and no field is varied twice. `Err` is the first
    /// problem, a usage error naming the vary and, where there are some, the nearest names.
    pub fn check(&self, varies: &[Vary]) -> Result<(), String> {
        for (i, v) in varies.iter().enumerate() {
            let fail = |why: String| format!("invalid `--vary` {}: {why}", quote(&v.text));
            let scalar = self.field(v).map_err(fail)?;
            if let Target::Policy(_) = &v.target {
                match v.path.as_str() {
                    "apiVersion" | "kind" => {
                        return Err(fail(format!(
                            "`{}` cannot be varied: it says what the document is",
                            v.path
                        )))
                    }
                    "metadata.name" | "name" => {
                        return Err(fail(format!("`{}` cannot be varied: it names the policy", v.path)))
                    }
                    _ => {}
                }
            }
            // A map: a vary may list up to `MAX_VALUES` values, and a list searched for each
            // took seconds to refuse 100,000 of them (`--max-candidates` is checked after).
            let mut seen: HashMap<Typed, &str> = HashMap::new();
            for value in &v.values {
                match value {
                    Setting::Unset if scalar.item => {
                        return Err(fail(format!(
                            "`unset` cannot remove `{}`, an item of a list (`unset` removes a field)",
                            v.path
                        )))
                    }
                    Setting::Unset if scalar.required => {
                        return Err(fail(format!("`{}` is required: it cannot be `unset`", v.path)))
                    }
                    Setting::Unset => {}
                    Setting::To(text) => {
                        let t = typed(scalar.ty, text).map_err(fail)?;
                        if let Some(first) = seen.get(&t) {
                            return Err(fail(format!(
                                "{} and {} are the same value of `{}` (list each value once)",
                                quote(first),
                                quote(text),
                                v.path
                            )));
                        }
                        seen.insert(t, text);
                    }
                }
            }
            if let Some(first) = varies[..i].iter().find(|w| w.target == v.target && w.path == v.path) {
                return Err(fail(format!(
                    "it varies the same field as `--vary` {} (`{}` of {}); vary each field once",
                    quote(&first.text),
                    v.path,
                    v.target
                )));
            }
        }
        Ok(())
    }

    /// The candidate whose every varied value is the template's own as written, a field the
    /// template leaves out counting as `unset` (`tune --pick template`: suggest's proposal
    /// searched around its own values, with no number to copy). `varies` passed
    /// [`Template::check`]. `Err` names the first vary none of whose values is the
    /// template's.
    pub fn own_candidate(&self, varies: &[Vary]) -> Result<u64, String> {
        let mut index: u128 = 0;
        for v in varies {
            let scalar = self
                .field(v)
                .map_err(|why| format!("invalid `--vary` {}: {why}", quote(&v.text)))?;
            let own = match &scalar.written {
                None => None,
                Some(Ok(text)) => Some(typed(scalar.ty, text)),
                Some(Err(kind)) => {
                    return Err(format!(
                        "the template's {} is {}, not a value a candidate can have",
                        quote(&v.text),
                        vary::a(kind)
                    ))
                }
            };
            let at = v.values.iter().position(|value| match (value, &own) {
                (Setting::Unset, None) => true,
                (Setting::To(text), Some(Ok(own))) => typed(scalar.ty, text).as_ref() == Ok(own),
                _ => false,
            });
            let Some(at) = at else {
                let written = match &scalar.written {
                    Some(Ok(text)) => format!("sets {} to {}", quote(&v.text), quote(text)),
                    _ => format!("leaves {} unset", quote(&v.text)),
                };
                return Err(format!(
                    "no candidate has the template's own values: the template {written}, a value its `--vary` \
                     does not list (add it, or pick a candidate by its id)"
                ));
            };
            index = index * v.values.len() as u128 + at as u128;
        }
        u64::try_from(index + 1)
            .map_err(|_| "the template's own candidate is past the last id a search can number".to_string())
    }

    /// The scalar field `v` names in the template: its type, and its value as written. `Err`
    /// says why the path names none (without the vary: the caller says which).
    fn field(&self, v: &Vary) -> Result<Scalar, String> {
        // A categorizer's path starts at `errorCategories` whatever the file's shape: it
        // is resolved in a tree holding only that mapping.
        let categorizer_root;
        let (layout, node) = match &v.target {
            Target::Categorizer => {
                let Some((name, doc)) = &self.categorizer else {
                    return Err(
                        "`categorizer:` varies the `--categorizer` file, and none was given: give \
                         `--categorizer FILE`"
                            .into(),
                    );
                };
                let body = crate::model::categorizer::shape_of(&doc.node)
                    .and_then(|shape| crate::model::categorizer::body(&doc.node, shape))
                    .cloned()
                    .unwrap_or(Node {
                        pos: doc.node.pos,
                        value: Value::Null,
                    });
                categorizer_root = Node {
                    pos: doc.node.pos,
                    value: Value::Map(vec![(
                        Node {
                            pos: body.pos,
                            value: Value::Scalar {
                                text: "errorCategories".into(),
                                quoted: false,
                            },
                        },
                        body,
                    )]),
                };
                let owner = format!("the categorizer config {}", quote(name));
                (
                    Layout {
                        root: fields::CATEGORIZER_TOP,
                        top: owner.clone(),
                        owner,
                        other: None,
                        version: None,
                    },
                    &categorizer_root,
                )
            }
            Target::Scheduler => (
                Layout {
                    root: fields::SCHEDULER_CONFIG,
                    owner: v.target.to_string(),
                    top: v.target.to_string(),
                    other: None,
                    version: None,
                },
                &self.scheduler_node,
            ),
            Target::Policy(name) => {
                let doc = self.policy(name)?;
                (policy_layout(name, doc)?, &doc.node)
            }
        };
        resolve(&layout, &v.segments, node)
    }

    /// Each vary's column in the tables, short and the same for the same command line: its
    /// path without the design dialect's `spec.`, and a rule named by its first matcher
    /// (`rules[2] (exit 139) retryLimit`: an index alone says little), so that a column reads
    /// without the policy file open. The policy's name comes first (`ml:retryLimit`) only when
    /// the varies change more than one document; the scheduler's and the categorizer's keep
    /// the vary as typed. `-o json|yaml` and `--pick` keep the vary as typed.
    pub fn columns(&self, varies: &[Vary]) -> Vec<String> {
        let one_document = varies.iter().all(|v| v.target == varies[0].target);
        varies
            .iter()
            .map(|v| {
                let Target::Policy(name) = &v.target else {
                    return v.text.clone();
                };
                let mut segments = v.segments.as_slice();
                if let [vary::Segment::Key(k), rest @ ..] = segments {
                    if k == "spec" && !rest.is_empty() {
                        segments = rest;
                    }
                }
                let label = match segments {
                    [vary::Segment::Key(k), vary::Segment::Index(i), rest @ ..] if k == "rules" => {
                        let matcher = self
                            .policy(name)
                            .ok()
                            .and_then(|d| match &d.resource {
                                Some(crate::model::document::Resource::RetryPolicy(p)) => p.rules.get(*i),
                                _ => None,
                            })
                            .and_then(|r| r.first_matcher())
                            .map_or(String::new(), |m| format!(" ({m})"));
                        let field = if rest.is_empty() {
                            String::new()
                        } else {
                            format!(" {}", vary::render(rest))
                        };
                        format!("rules[{i}]{matcher}{field}")
                    }
                    _ => vary::render(segments),
                };
                let label = if one_document { label } else { format!("{name}:{label}") };
                // A matcher is a file's text (a pattern may hold ESC or a bidirectional
                // control): escaped as every table cell is.
                crate::diag::shown(&label).into_owned()
            })
            .collect()
    }

    /// The one RetryPolicy document named `name`.
    fn policy(&self, name: &str) -> Result<&Document, String> {
        let found: Vec<(usize, usize)> = self
            .policies
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, f, d)| (*f, *d))
            .collect();
        match found[..] {
            [(f, d)] => Ok(&self.files[f].documents[d]),
            [] => {
                let mut names: Vec<&str> = Vec::new();
                for (n, _, _) in &self.policies {
                    if !names.contains(&n.as_str()) {
                        names.push(n);
                    }
                }
                let mut message = if names.is_empty() {
                    format!("no RetryPolicy named {} in the template, which has none", quote(name))
                } else {
                    format!(
                        "no RetryPolicy named {} in the template; its policies are {}",
                        quote(name),
                        names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ")
                    )
                };
                names.push("scheduler");
                if let Some(s) = suggest(name, &names) {
                    message.push_str(&format!("; did you mean `{s}`?"));
                }
                Err(message)
            }
            _ => {
                let places: Vec<String> = found
                    .iter()
                    .map(|&(f, d)| {
                        format!(
                            "{} document {}",
                            quote(&self.files[f].name),
                            self.files[f].documents[d].index + 1
                        )
                    })
                    .collect();
                Err(format!(
                    "{} RetryPolicy documents are named {} in the template ({}); `--vary` cannot tell which to vary",
                    found.len(),
                    quote(name),
                    places.join(", ")
                ))
            }
        }
    }
}

/// The field table of a policy document's dialect, and how messages name it.
fn policy_layout(name: &str, doc: &Document) -> Result<Layout, String> {
    let (root, version, other) = match doc.api_version {
        Some(ApiVersion::V1) => (
            fields::RETRY_POLICY,
            ApiVersion::V1,
            (fields::RETRY_POLICY_V1BETA1, ApiVersion::V1beta1),
        ),
        Some(ApiVersion::V1beta1) => (
            fields::RETRY_POLICY_V1BETA1,
            ApiVersion::V1beta1,
            (fields::RETRY_POLICY, ApiVersion::V1),
        ),
        None => {
            return Err(format!(
                "policy {} has no valid `apiVersion` in the template (fix the template first)",
                quote(name)
            ))
        }
    };
    let owner = format!("policy {}", quote(name));
    Ok(Layout {
        root,
        top: format!("{owner} (`{}`)", version.as_str()),
        owner,
        other: Some((other.0, other.1.as_str())),
        version: Some(version.as_str()),
    })
}
