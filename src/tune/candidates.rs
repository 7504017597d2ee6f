//! Each candidate of `tune --vary`: which value of each vary it takes (its id), and the
//! template's documents with those values set, decoded again.
//!
//! Owns: the numbering (the first vary varies slowest, ids from 1), the edit of a
//! document's tree (walk the path, create missing mappings, set an unquoted scalar or remove
//! the key, nothing else touched) and the candidate's errors as `validate` reports them.
//! Must not: check the varies (that is `Template::check`, which must have passed: a path it
//! would refuse is skipped here, not reported).
//!
//! Decisions: an edited document is decoded by `model::document::decode_document`, so its
//! diagnostics are exactly what `validate` reports for it (lint is not run); its nodes keep
//! the template's positions, and a node the edit creates takes its parent's. Documents no
//! vary touches are the template's, cloned.

use crate::model::lint::FAIL_NO_EFFECT;
use serde::Serialize;

use crate::diag::Diagnostic;
use crate::input::SourceFile;
use crate::model::document::{decode_document, Document};
use crate::model::policy::Action;
use crate::model::scheduler::{scheduler_config_from_node, SchedulerConfig};
use crate::model::Kind;
use crate::yaml::{Node, Value};

use super::template::{count, Template};
use super::vary::{Segment, Setting, Target, Vary};

/// One point of the search: its id, its values and the documents they make.
#[derive(Debug, Clone)]
pub struct CandidateDocuments {
    /// From 1; see [`Template::candidate`].
    pub id: u64,
    /// Each vary's `text` (`ml:spec.retryLimit`, as typed) and this candidate's value as
    /// output shows it (`3`, `Retry`, `30s`, `unset`), in the order of the varies.
    pub values: Vec<(String, String)>,
    /// The template's files, each varied document decoded again (its diagnostics are those
    /// `validate` would report; not linted).
    pub files: Vec<SourceFile>,
    /// The scheduler config: the template's (the default when none was given) with the
    /// `scheduler:` varies set, or its errors.
    pub scheduler: Result<SchedulerConfig, Vec<Diagnostic>>,
    /// The `--scheduler-config` file's name, for [`CandidateError::file`].
    scheduler_file: Option<String>,
    /// With a `categorizer:` vary: the `--categorizer` file's name and its document, varied
    /// and decoded again (`None`: the file as written).
    pub categorizer: Option<(String, Document)>,
}

/// One error of a candidate, placed as `validate` places it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CandidateError {
    /// The file (`<stdin>` for `-`); the scheduler config's file, or `<scheduler config>`
    /// when none was given.
    pub file: String,
    /// 1-based, as `validate` numbers documents; absent for an error about a whole file and
    /// for the scheduler config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document: Option<usize>,
    /// The policy's name, when the document has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The field path in the document (`spec.backoff.maxDelay`); empty for the document
    /// or file as a whole.
    pub path: String,
    pub message: String,
}

/// What [`CandidateError::file`] says for a scheduler config built from nothing.
pub const NO_SCHEDULER_FILE: &str = "<scheduler config>";

impl CandidateDocuments {
    /// Whether every document and the scheduler config are free of errors.
    pub fn is_valid(&self) -> bool {
        self.scheduler.is_ok()
            && self
                .categorizer
                .as_ref()
                .is_none_or(|(_, d)| !d.diagnostics.iter().any(Diagnostic::is_error))
            && self.files.iter().all(|f| {
                f.errors.iter().all(|d| !d.is_error())
                    && f.documents
                        .iter()
                        .all(|d| !d.diagnostics.iter().any(Diagnostic::is_error))
            })
    }

    /// Every error, in `validate`'s order (file by file, each document's findings, then the
    /// file's own), then the scheduler config's.
    pub fn errors(&self) -> Vec<CandidateError> {
        let mut out = Vec::new();
        for f in &self.files {
            for doc in &f.documents {
                for d in doc.diagnostics.iter().filter(|d| d.is_error()) {
                    out.push(CandidateError {
                        file: f.name.clone(),
                        document: Some(doc.index + 1),
                        name: doc.name.clone(),
                        path: d.path.clone(),
                        message: d.message.clone(),
                    });
                }
            }
            for d in f.errors.iter().filter(|d| d.is_error()) {
                out.push(CandidateError {
                    file: f.name.clone(),
                    document: None,
                    name: None,
                    path: d.path.clone(),
                    message: d.message.clone(),
                });
            }
        }
        if let Some((file, doc)) = &self.categorizer {
            for d in doc.diagnostics.iter().filter(|d| d.is_error()) {
                out.push(CandidateError {
                    file: file.clone(),
                    document: None,
                    name: None,
                    path: d.path.clone(),
                    message: d.message.clone(),
                });
            }
        }
        if let Err(errors) = &self.scheduler {
            for d in errors.iter().filter(|d| d.is_error()) {
                out.push(CandidateError {
                    file: self.scheduler_file.as_deref().unwrap_or(NO_SCHEDULER_FILE).to_string(),
                    document: None,
                    name: None,
                    path: d.path.clone(),
                    message: d.message.clone(),
                });
            }
        }
        out
    }
}

/// Which value of each vary candidate `id` takes: `id - 1` in mixed radix, the last vary
/// the fastest digit.
pub(super) fn picks(sizes: &[usize], id: u64) -> Vec<usize> {
    let mut rest = u128::from(id - 1);
    let mut out = vec![0; sizes.len()];
    for (i, &n) in sizes.iter().enumerate().rev() {
        let n = n as u128;
        out[i] = (rest % n) as usize;
        rest /= n;
    }
    out
}

impl Template {
    /// Candidate `id` of `varies` (checked by [`Template::check`]): with varies A = [a1, a2]
    /// and B = [b1, b2, b3], 1 = (a1, b1), 2 = (a1, b2), 3 = (a1, b3), 4 = (a2, b1), …
    ///
    /// # Panics
    /// When `id` is not in `1..=count(varies)`.
    pub fn candidate(&self, varies: &[Vary], id: u64) -> CandidateDocuments {
        assert!(
            id >= 1 && u128::from(id) <= count(varies),
            "candidate {id} of {} does not exist",
            count(varies)
        );
        let sizes: Vec<usize> = varies.iter().map(|v| v.values.len()).collect();
        let picks = picks(&sizes, id);
        let mut edited: Vec<((usize, usize), Node)> = Vec::new();
        let mut scheduler: Option<Node> = None;
        let mut categorizer: Option<Node> = None;
        let mut values = Vec::with_capacity(varies.len());
        for (v, &pick) in varies.iter().zip(&picks) {
            let setting = &v.values[pick];
            values.push((v.text.clone(), setting.to_string()));
            let node = match &v.target {
                Target::Scheduler => scheduler.get_or_insert_with(|| self.scheduler_node.clone()),
                Target::Categorizer => {
                    let Some((_, doc)) = &self.categorizer else { continue };
                    let node = categorizer.get_or_insert_with(|| doc.node.clone());
                    let segments = categorizer_segments(node, &v.segments);
                    apply(node, &segments, setting);
                    continue;
                }
                Target::Policy(name) => {
                    let Some(&(_, f, d)) = self.policies.iter().find(|(n, _, _)| n == name) else {
                        continue;
                    };
                    let at = match edited.iter().position(|(key, _)| *key == (f, d)) {
                        Some(at) => at,
                        None => {
                            edited.push(((f, d), self.files[f].documents[d].node.clone()));
                            edited.len() - 1
                        }
                    };
                    &mut edited[at].1
                }
            };
            apply(node, &v.segments, setting);
            if matches!(v.target, Target::Policy(_)) {
                quiet_fail_rule(node, &v.segments);
            }
        }
        let mut files = self.files.clone();
        for ((f, d), node) in edited {
            let index = files[f].documents[d].index;
            files[f].documents[d] = decode_document(node, index, None);
        }
        CandidateDocuments {
            id,
            values,
            files,
            scheduler: match scheduler {
                Some(node) => scheduler_config_from_node(&node),
                None => self.scheduler_config.clone(),
            },
            scheduler_file: self.scheduler.as_ref().map(|s| s.name.clone()),
            categorizer: categorizer.zip(self.categorizer.as_ref()).map(|(node, (name, doc))| {
                (
                    name.clone(),
                    decode_document(node, doc.index, Some(&[Kind::ErrorCategories])),
                )
            }),
        }
    }

    /// Every candidate, by id.
    pub fn candidates<'a>(&'a self, varies: &'a [Vary]) -> impl Iterator<Item = CandidateDocuments> + 'a {
        let n = u64::try_from(count(varies)).unwrap_or(u64::MAX);
        (1..=n).map(move |id| self.candidate(varies, id))
    }
}

/// A categorizer vary's path (from `errorCategories`) in `node`, the file's tree: under
/// `application` in an executor config, and each key spelled as the file spells it (the
/// executor reads keys in any case, so `Enabled` is the field `enabled` names).
fn categorizer_segments(node: &Node, segments: &[Segment]) -> Vec<Segment> {
    let mut out = Vec::with_capacity(segments.len() + 1);
    let mut cur = Some(node);
    let executor = crate::model::categorizer::shape_of(node) == Some(crate::model::categorizer::Shape::Executor);
    let application = [Segment::Key("application".into())];
    let path = if executor { &application[..] } else { &[][..] };
    for seg in path.iter().chain(segments) {
        match seg {
            Segment::Key(k) => {
                let found = cur.and_then(|n| match &n.value {
                    Value::Map(entries) => entries
                        .iter()
                        .find(|(key, _)| key.as_scalar().is_some_and(|s| s.eq_ignore_ascii_case(k))),
                    _ => None,
                });
                match found {
                    Some((key, child)) => {
                        out.push(Segment::Key(key.as_scalar().unwrap_or(k).to_string()));
                        cur = Some(child);
                    }
                    None => {
                        out.push(seg.clone());
                        cur = None;
                    }
                }
            }
            Segment::Index(i) => {
                out.push(seg.clone());
                cur = cur.and_then(|n| match &n.value {
                    Value::Seq(items) => items.get(*i),
                    _ => None,
                });
            }
        }
    }
    out
}

fn scalar(text: &str, at: &Node) -> Node {
    Node {
        pos: at.pos,
        value: Value::Scalar {
            text: text.to_string(),
            quoted: false,
        },
    }
}

/// When `segments` is a rule's `action` (`spec.rules[i].action`, `rules[i].action`) and the
/// rule's action is now `Fail`: the rule's settings `model::lint` calls of no effect ([`FAIL_NO_EFFECT`]) removed (its `mutate`,
/// say), so that the candidate passes `validate --strict` when the template does. A `Fail`
/// rule never retries, so the replay is the same either way.
fn quiet_fail_rule(node: &mut Node, segments: &[Segment]) {
    let [rule_path @ .., Segment::Key(rules), Segment::Index(i), Segment::Key(action)] = segments else {
        return;
    };
    if rules != "rules" || action != "action" {
        return;
    }
    let mut cur = node;
    for seg in rule_path
        .iter()
        .chain([&Segment::Key("rules".into()), &Segment::Index(*i)])
    {
        let next = match (seg, &mut cur.value) {
            (Segment::Key(k), Value::Map(entries)) => entries
                .iter_mut()
                .find(|(key, _)| key.as_scalar() == Some(k.as_str()))
                .map(|(_, v)| v),
            (Segment::Index(i), Value::Seq(items)) => items.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else { return };
        cur = next;
    }
    let Value::Map(entries) = &mut cur.value else {
        return;
    };
    let fail = entries.iter().any(|(key, value)| {
        key.as_scalar() == Some("action")
            && value.as_scalar().is_some_and(|text| {
                text.parse::<i64>()
                    .ok()
                    .map_or_else(|| Action::parse(text), Action::from_number)
                    == Some(Action::Fail)
            })
    });
    if fail {
        entries.retain(|(key, _)| !key.as_scalar().is_some_and(|k| FAIL_NO_EFFECT.contains(&k)));
    }
}

/// Sets (or removes) the field at `segments` in `node`: mappings on the way are created
/// when missing (a null one becomes a mapping), lists are only entered; nothing else
/// changes. A path that does not fit the tree (one `check` refuses) changes nothing.
fn apply(node: &mut Node, segments: &[Segment], setting: &Setting) {
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let unset = matches!(setting, Setting::Unset);
    let mut cur = node;
    for seg in parents {
        match seg {
            Segment::Key(k) => {
                if cur.is_null() {
                    if unset {
                        return;
                    }
                    cur.value = Value::Map(Vec::new());
                }
                let parent = Node {
                    pos: cur.pos,
                    value: Value::Null,
                };
                let Value::Map(entries) = &mut cur.value else {
                    return;
                };
                let at = match entries.iter().position(|(key, _)| key.as_scalar() == Some(k)) {
                    Some(at) => at,
                    None if unset => return,
                    None => {
                        entries.push((
                            scalar(k, &parent),
                            Node {
                                pos: parent.pos,
                                value: Value::Map(Vec::new()),
                            },
                        ));
                        entries.len() - 1
                    }
                };
                cur = &mut entries[at].1;
            }
            Segment::Index(i) => {
                let Value::Seq(items) = &mut cur.value else {
                    return;
                };
                let Some(item) = items.get_mut(*i) else {
                    return;
                };
                cur = item;
            }
        }
    }
    match (last, setting) {
        (Segment::Key(k), Setting::Unset) => {
            if let Value::Map(entries) = &mut cur.value {
                entries.retain(|(key, _)| key.as_scalar() != Some(k));
            }
        }
        (Segment::Key(k), Setting::To(text)) => {
            if cur.is_null() {
                cur.value = Value::Map(Vec::new());
            }
            let parent = Node {
                pos: cur.pos,
                value: Value::Null,
            };
            let Value::Map(entries) = &mut cur.value else {
                return;
            };
            match entries.iter_mut().find(|(key, _)| key.as_scalar() == Some(k)) {
                Some((_, value)) => *value = scalar(text, value),
                None => entries.push((scalar(k, &parent), scalar(text, &parent))),
            }
        }
        (Segment::Index(i), Setting::To(text)) => {
            if let Value::Seq(items) = &mut cur.value {
                if let Some(item) = items.get_mut(*i) {
                    *item = scalar(text, item);
                }
            }
        }
        // `check` refuses `unset` on a list item: removing it would renumber the others.
        (Segment::Index(_), Setting::Unset) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::model::{Action, GoDuration, Resource, RetryPolicy};

    /// The decoded policy named `name` among `files`.
    fn policy(files: &[SourceFile], name: &str) -> RetryPolicy {
        files
            .iter()
            .flat_map(|f| &f.documents)
            .find_map(|d| match &d.resource {
                Some(Resource::RetryPolicy(p)) if p.name == name => Some(p.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no policy `{name}`"))
    }

    /// Candidate `id` of `args` on `t`, after checking them.
    fn candidate(t: &Template, args: &[&str], id: u64) -> CandidateDocuments {
        let v = varies(args);
        t.check(&v).unwrap();
        t.candidate(&v, id)
    }

    fn values(c: &CandidateDocuments) -> Vec<(&str, &str)> {
        c.values.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn the_first_vary_varies_slowest_from_id_1() {
        let t = template(None);
        let v = varies(&["ml:spec.rules[1].action=Retry,Fail", "ml:spec.retryLimit=1,2,3"]);
        let all: Vec<Vec<(String, String)>> = t.candidates(&v).map(|c| c.values).collect();
        let expected: Vec<Vec<(String, String)>> = [
            ("Retry", "1"),
            ("Retry", "2"),
            ("Retry", "3"),
            ("Fail", "1"),
            ("Fail", "2"),
            ("Fail", "3"),
        ]
        .iter()
        .map(|(a, b)| {
            vec![
                ("ml:spec.rules[1].action".to_string(), a.to_string()),
                ("ml:spec.retryLimit".to_string(), b.to_string()),
            ]
        })
        .collect();
        assert_eq!(all, expected);
        let ids: Vec<u64> = t.candidates(&v).map(|c| c.id).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
        // Candidate 5 is what it says it is.
        let c = t.candidate(&v, 5);
        let p = policy(&c.files, "ml");
        assert_eq!((p.rules[1].action, p.retry_limit), (Action::Fail, Some(2)));
    }

    #[test]
    #[should_panic(expected = "candidate 7 of 6 does not exist")]
    fn an_id_past_the_count_is_a_bug() {
        let t = template(None);
        t.candidate(
            &varies(&["ml:spec.rules[1].action=Retry,Fail", "ml:spec.retryLimit=1,2,3"]),
            7,
        );
    }

    proptest::proptest! {
        /// Ids 1..=count enumerate every combination once, in lexicographic order.
        #[test]
        fn picks_count_in_mixed_radix(sizes in proptest::collection::vec(1usize..5, 0..5)) {
            let total: usize = sizes.iter().product();
            let mut previous: Option<Vec<usize>> = None;
            for id in 1..=total as u64 {
                let p = picks(&sizes, id);
                proptest::prop_assert!(p.iter().zip(&sizes).all(|(i, n)| i < n));
                if let Some(prev) = &previous {
                    proptest::prop_assert!(*prev < p, "{:?} then {:?}", prev, p);
                }
                previous = Some(p);
            }
            proptest::prop_assert_eq!(picks(&sizes, 1), vec![0; sizes.len()]);
        }
    }

    #[test]
    fn a_candidate_sets_the_varied_field_and_nothing_else() {
        let t = template(None);
        let base = policy(t.files(), "ml");

        let c = candidate(&t, &["ml:spec.retryLimit=0..10"], 4);
        assert_eq!(values(&c), [("ml:spec.retryLimit", "3")]);
        assert!(c.is_valid(), "{:?}", c.errors());
        let mut expected = base.clone();
        expected.retry_limit = Some(3);
        assert_eq!(policy(&c.files, "ml"), expected);

        let c = candidate(&t, &["ml:spec.rules[1].action=Retry,Fail"], 2);
        let mut expected = base.clone();
        expected.rules[1].action = Action::Fail;
        assert_eq!(policy(&c.files, "ml"), expected);

        let c = candidate(&t, &["ml:spec.rules[0].retryLimit=unset,1,3"], 1);
        assert_eq!(values(&c), [("ml:spec.rules[0].retryLimit", "unset")]);
        let mut expected = base.clone();
        expected.rules[0].retry_limit = None;
        assert_eq!(policy(&c.files, "ml"), expected);

        // `spec.backoff` is not in the template: it is created.
        let c = candidate(&t, &["ml:spec.backoff.initialDelay=0s,30s,5m"], 2);
        assert_eq!(values(&c), [("ml:spec.backoff.initialDelay", "30s")]);
        let mut expected = base.clone();
        expected.backoff.initial_delay = Some(GoDuration::from_secs(30));
        assert_eq!(policy(&c.files, "ml"), expected);

        // An item of a list of scalars.
        let c = candidate(&t, &["ml:spec.rules[1].onExitCodes.values[1]=143,255"], 2);
        let mut expected = base.clone();
        expected.rules[1].on_exit_codes.as_mut().unwrap().values[1] = 255;
        assert_eq!(policy(&c.files, "ml"), expected);

        // Several varies of one policy, and one of another: each document decoded once.
        let c = candidate(
            &t,
            &[
                "ml:spec.defaultAction=unset,Retry",
                "infra:retryLimit=1..5/2",
                "ml:spec.retryLimit=unset",
            ],
            6,
        );
        assert_eq!(
            values(&c),
            [
                ("ml:spec.defaultAction", "Retry"),
                ("infra:retryLimit", "5"),
                ("ml:spec.retryLimit", "unset")
            ]
        );
        let mut expected = base.clone();
        expected.default_action = Some(Action::Retry);
        expected.retry_limit = None;
        assert_eq!(policy(&c.files, "ml"), expected);
        assert_eq!(policy(&c.files, "infra").retry_limit, Some(5));

        // The documents no vary touches are the template's, position for position.
        let c = candidate(&t, &["ml:spec.retryLimit=7"], 1);
        assert_eq!(c.files.len(), 2);
        assert_eq!(c.files[0].name, "policies.yaml");
        let (was, now) = (&t.files()[0].documents[1], &c.files[0].documents[1]);
        assert_eq!(
            (&was.node, &was.resource, &was.diagnostics),
            (&now.node, &now.resource, &now.diagnostics)
        );
        let (was, now) = (&t.files()[1].documents[0], &c.files[1].documents[0]);
        assert_eq!((&was.node, &was.resource), (&now.node, &now.resource));
        assert_eq!(c.scheduler, Ok(SchedulerConfig::default()));
        // The edited one keeps its place and the positions of what did not change.
        let now = &c.files[0].documents[0];
        assert_eq!((now.index, now.name.as_deref()), (0, Some("ml")));
        assert_eq!(now.node.get("metadata"), t.files()[0].documents[0].node.get("metadata"));
    }

    /// A vary that makes a rule `Fail` removes what has no effect on a `Fail` rule (its
    /// `retryLimit`, `mutate`, …: `validate --strict` refuses them); a `Retry` keeps them.
    #[test]
    fn a_rule_varied_to_fail_drops_what_a_fail_rule_cannot_use() {
        let t = template(None);
        let args = ["ml:spec.rules[0].action=Retry,Fail"];
        let kept = policy(&candidate(&t, &args, 1).files, "ml");
        assert_eq!(kept.rules[0].retry_limit, Some(2));
        let failed = policy(&candidate(&t, &args, 2).files, "ml");
        assert_eq!(failed.rules[0].action, Action::Fail);
        assert_eq!(failed.rules[0].retry_limit, None);
        // Only the varied rule.
        assert_eq!(failed.rules[1], kept.rules[1]);
        // Upstream's flat layout, its `mutate`.
        let files = vec![file(
            "infra.yaml",
            "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: infra\nretryLimit: 3\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: gpu\n    mutate: {affinity: {avoidSameNode: true}}\n",
        )];
        let t = Template::new(files, None);
        let args = ["infra:rules[0].action=Retry,Fail"];
        assert!(policy(&candidate(&t, &args, 1).files, "infra").rules[0]
            .mutate
            .is_some());
        let failed = candidate(&t, &args, 2);
        assert!(failed.is_valid(), "{:?}", failed.errors());
        assert_eq!(policy(&failed.files, "infra").rules[0].mutate, None);
    }

    #[test]
    fn a_v1beta1_template() {
        let t = template(None);
        let base = policy(t.files(), "infra");
        let v = varies(&["infra:retryLimit=unset,1..5/2", "infra:rules[0].action=Retry,Fail"]);
        t.check(&v).unwrap();
        assert_eq!(count(&v), 8);
        let c = t.candidate(&v, 4);
        assert_eq!(
            values(&c),
            [("infra:retryLimit", "1"), ("infra:rules[0].action", "Fail")]
        );
        let mut expected = base.clone();
        expected.retry_limit = Some(1);
        expected.rules[0].action = Action::Fail;
        assert_eq!(policy(&c.files, "infra"), expected);
        // Upstream's meaning: no `retryLimit` is 0.
        let c = t.candidate(&v, 1);
        let mut expected = base.clone();
        expected.retry_limit = Some(0);
        assert_eq!(policy(&c.files, "infra"), expected);
        assert!(c.is_valid(), "{:?}", c.errors());
    }

    #[test]
    fn a_scheduler_vary_without_a_scheduler_config() {
        let t = template(None);
        let c = candidate(&t, &["scheduler:scheduling.retryPolicy.globalMaxRetries=5,10,20"], 2);
        assert_eq!(
            values(&c),
            [("scheduler:scheduling.retryPolicy.globalMaxRetries", "10")]
        );
        let expected = SchedulerConfig {
            global_max_retries: Some(10),
            ..SchedulerConfig::default()
        };
        assert_eq!(c.scheduler, Ok(expected));
        // The policies are the template's.
        assert_eq!(policy(&c.files, "ml"), policy(t.files(), "ml"));

        let c = candidate(
            &t,
            &[
                "scheduler:scheduling.retryPolicy.defaultBackoff.initialDelay=1m",
                "scheduler:scheduling.retryPolicy.defaultBackoff.maxDelay=10s,5m",
            ],
            1,
        );
        assert!(!c.is_valid());
        assert_eq!(
            c.errors(),
            [CandidateError {
                file: "<scheduler config>".into(),
                document: None,
                name: None,
                path: "scheduling.retryPolicy.defaultBackoff.maxDelay".into(),
                message: "maxDelay `10s` is shorter than initialDelay `1m`".into(),
            }]
        );
    }

    #[test]
    fn a_scheduler_vary_with_a_scheduler_config() {
        let config = "\
grpc:
  port: 50052
scheduling:
  maxAttemptedRuns: 4
  retryPolicy:
    enabled: true
    globalMaxRetries: 20
    defaultPolicyName: ml
  nodeIdLabel: kubernetes.io/hostname
";
        let t = template(Some(config));
        let base = t.scheduler().unwrap().config.clone();
        assert_eq!(base.global_max_retries, Some(20));
        // Without a scheduler vary, the config is the file's.
        let c = candidate(&t, &["ml:spec.retryLimit=1"], 1);
        assert_eq!(c.scheduler, Ok(base.clone()));

        let c = candidate(
            &t,
            &[
                "scheduler:scheduling.retryPolicy.globalMaxRetries=5,unset",
                "scheduler:scheduling.retryPolicy.defaultBackoff.initialDelay=30s",
            ],
            2,
        );
        let mut expected = base.clone();
        expected.global_max_retries = None;
        expected.default_backoff.initial_delay = Some(GoDuration::from_secs(30));
        assert_eq!(c.scheduler, Ok(expected));

        let c = candidate(
            &t,
            &["scheduler:scheduling.maxAttemptedRuns=2", "ml:spec.retryLimit=3"],
            1,
        );
        let mut expected = base.clone();
        expected.max_attempted_runs = Some(2);
        assert_eq!(c.scheduler, Ok(expected));
        assert_eq!(policy(&c.files, "ml").retry_limit, Some(3));

        // An invalid config names the file it came from.
        let c = candidate(&t, &["scheduler:scheduling.retryPolicy.defaultPolicyName=Bad"], 1);
        let errors = c.errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            (errors[0].file.as_str(), errors[0].path.as_str()),
            ("scheduler.yaml", "scheduling.retryPolicy.defaultPolicyName")
        );
    }

    #[test]
    fn an_invalid_candidate_has_validate_s_errors() {
        let t = template(None);
        let v = varies(&["ml:spec.backoff.initialDelay=10s", "ml:spec.backoff.maxDelay=5s,1m"]);
        t.check(&v).unwrap();
        let bad = t.candidate(&v, 1);
        assert!(!bad.is_valid());
        let errors = bad.errors();
        assert_eq!(
            errors,
            [CandidateError {
                file: "policies.yaml".into(),
                document: Some(1),
                name: Some("ml".into()),
                path: "spec.backoff.maxDelay".into(),
                message: "maxDelay `5s` is shorter than initialDelay `10s`".into(),
            }]
        );
        assert_eq!(
            serde_json::to_value(&errors[0]).unwrap(),
            serde_json::json!({"file": "policies.yaml", "document": 1, "name": "ml",
                               "path": "spec.backoff.maxDelay",
                               "message": "maxDelay `5s` is shorter than initialDelay `10s`"})
        );
        // What `validate` reports for the same document, written out.
        let text = ML.replace(
            "  retryLimit: 5\n",
            "  retryLimit: 5\n  backoff: {initialDelay: 10s, maxDelay: 5s}\n",
        );
        let written = crate::model::parse_documents(&text, None);
        let diagnostics: Vec<(&str, &str)> = written.documents[0]
            .diagnostics
            .iter()
            .map(|d| (d.path.as_str(), d.message.as_str()))
            .collect();
        assert_eq!(diagnostics, [(errors[0].path.as_str(), errors[0].message.as_str())]);
        assert!(t.candidate(&v, 2).is_valid());

        // A regex is not checked by `check`: a pattern that does not compile is a skipped candidate.
        let c = candidate(&t, &["ml:spec.rules[0].onTerminationMessage.pattern=("], 1);
        let errors = c.errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "spec.rules[0].onTerminationMessage.pattern");
    }
}
