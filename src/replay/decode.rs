//! One JSON line → a [`FailureHistory`] (SPEC §3.2 bulk input).
//!
//! Owns: two decoders with one answer. The fast path deserializes the line straight into
//! typed structs that borrow from the line (serde derive: no intermediate tree, no
//! `serde_json::Value`, no field path built); anything it is not sure of — an unknown or
//! duplicate field, a wrong type, a value that does not parse, a field today's model does
//! not have — makes it give up, and the line is re-read by the strict decoder
//! ([`decode_line_strict`], the same one YAML documents use), which either accepts it the same
//! way or says exactly where and why it is wrong. So valid lines are cheap and a bad line's
//! error names its field path and column, as before.
//!
//! Must not: do I/O, or accept a line the strict decoder rejects (the fast path is a
//! subset: every value it accepts is checked with the model's own parsers and
//! `validate_failure_history`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::model::document::decode_document;
use crate::model::duration::GoDuration;
use crate::model::history::{
    validate_failure_history, Container, FailureHistory, Final, Job, JobExpect, Outcome, Run, RunExpect, StartedAt,
    Timestamp, DECISION_KINDS,
};
use crate::model::policy::{Action, Condition};
use crate::model::quantity::parse_quantity;
use crate::model::{Kind, Resource};
use crate::yaml::{Node, Pos, Value};

/// Decodes one (trimmed, non-empty) JSON line; `Err` is the message for the user, without
/// the `file:line: ` prefix.
pub fn decode_line(line: &[u8], line_no: usize) -> Result<FailureHistory, String> {
    match decode_fast(line) {
        Some(h) => Ok(h),
        None => decode_line_strict(line, line_no),
    }
}

/// The typed fast path; `None` means "ask the strict decoder".
pub fn decode_fast(line: &[u8]) -> Option<FailureHistory> {
    // One UTF-8 check for the whole line: `from_slice` would check every string on its own
    // (~30 calls per line, measured at 6% of a bulk run).
    let text = std::str::from_utf8(line).ok()?;
    let raw: LineIn<'_> = serde_json::from_str(text).ok()?;
    let h = raw.into_model()?;
    validate_failure_history(&h).is_empty().then_some(h)
}

/// A string that borrows from the line unless it had escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl Str<'_> {
    fn owned(self) -> String {
        self.0.into_owned()
    }
}

/// `apiVersion` / `kind`: may be left out, but a `null` is an error in the strict decoder,
/// so it must not read as "left out" here.
fn present<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Str<'a>>, D::Error> {
    Str::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LineIn<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    api_version: Option<Str<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    job: Option<JobIn<'a>>,
    runs: Runs,
    #[serde(default, borrow)]
    expect: Option<JobExpectIn<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JobIn<'a> {
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    queue: Option<Str<'a>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default, borrow)]
    termination_grace_period: Option<Str<'a>>,
    #[serde(default, borrow)]
    memory: Option<Str<'a>>,
    #[serde(default, borrow)]
    submitted_at: Option<Str<'a>>,
    /// Accepted (a real job has one), any value, no effect on decisions.
    #[serde(default)]
    #[allow(dead_code)]
    job_set: Option<IgnoredAny>,
    /// `job.gang.cardinality` (the upstream engine's legacy path for gangs).
    #[serde(default)]
    gang: Option<GangIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GangIn {
    cardinality: u32,
}

/// `runs`, each converted to the model's [`Run`] as soon as it is read (no list of
/// intermediate structs); a run the fast path is not sure of fails the whole line over to
/// the strict decoder.
struct Runs(Vec<Run>);

impl<'de> Deserialize<'de> for Runs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Runs;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of runs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Runs, A::Error> {
                let mut runs = Vec::with_capacity(seq.size_hint().unwrap_or(8));
                while let Some(r) = seq.next_element::<RunIn<'de>>()? {
                    runs.push(
                        r.into_model()
                            .ok_or_else(|| de::Error::custom("not on the fast path"))?,
                    );
                }
                Ok(Runs(runs))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RunIn<'a> {
    #[serde(default, borrow)]
    node: Option<Str<'a>>,
    #[serde(default, borrow)]
    queued_for: Option<Str<'a>>,
    #[serde(default, borrow)]
    started_at: Option<Str<'a>>,
    #[serde(default, borrow)]
    run_for: Option<Str<'a>>,
    #[serde(default, borrow)]
    conditions: Option<Vec<Str<'a>>>,
    #[serde(default, borrow)]
    termination_confirmed_after: Option<Str<'a>>,
    #[serde(default, borrow)]
    containers: Option<Vec<ContainerIn<'a>>>,
    #[serde(default, borrow)]
    category: Option<Str<'a>>,
    #[serde(default, borrow)]
    subcategory: Option<Str<'a>>,
    #[serde(default, borrow)]
    outcome: Option<Str<'a>>,
    #[serde(default)]
    global_max_retries: Option<u32>,
    /// Boxed: rare, and it would double the size of every run moved during decoding.
    #[serde(default, borrow)]
    expect: Option<Box<RunExpectIn<'a>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ContainerIn<'a> {
    /// Optional, as in the model: Lookout keeps no container names.
    #[serde(default, borrow)]
    name: Option<Str<'a>>,
    #[serde(default)]
    init: Option<bool>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default, borrow)]
    reason: Option<Str<'a>>,
    #[serde(default, borrow)]
    message: Option<Str<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RunExpectIn<'a> {
    #[serde(default, borrow)]
    action: Option<Str<'a>>,
    #[serde(default, borrow)]
    decision: Option<Str<'a>>,
    #[serde(default, borrow)]
    rule: Option<Str<'a>>,
    #[serde(default, borrow)]
    delay: Option<Str<'a>>,
    #[serde(default)]
    retries: Option<u32>,
    #[serde(default, borrow)]
    pod_name: Option<Str<'a>>,
    #[serde(default, borrow)]
    avoid_nodes: Option<Vec<Str<'a>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobExpectIn<'a> {
    #[serde(default, borrow, rename = "final")]
    final_state: Option<Str<'a>>,
    #[serde(default)]
    retries: Option<u32>,
    #[serde(default, borrow)]
    decision: Option<Str<'a>>,
}

fn duration(s: Option<Str<'_>>) -> Option<Option<GoDuration>> {
    match s {
        None => Some(None),
        Some(s) => GoDuration::parse(&s.0).ok().map(Some),
    }
}

fn decision_kind(s: Option<Str<'_>>) -> Option<Option<String>> {
    match s {
        None => Some(None),
        Some(s) => DECISION_KINDS.contains(&&*s.0).then(|| Some(s.owned())),
    }
}

impl LineIn<'_> {
    fn into_model(self) -> Option<FailureHistory> {
        if self.api_version.is_some_and(|v| v.0 != "armadaproject.io/v1")
            || self.kind.is_some_and(|k| k.0 != "FailureHistory")
        {
            return None;
        }
        let mut h = FailureHistory {
            job: Job::default(),
            runs: self.runs.0,
            expect: None,
        };
        if let Some(job) = self.job {
            h.job.gang_cardinality = job.gang.map(|g| g.cardinality);
            h.job.id = job.id.map(Str::owned).unwrap_or_default();
            h.job.queue = job.queue.map(Str::owned);
            h.job.annotations = job.annotations.unwrap_or_default();
            h.job.termination_grace_period = duration(job.termination_grace_period)?;
            if let Some(m) = job.memory {
                match parse_quantity(&m.0) {
                    Ok(b) if b > 0.0 => h.job.memory = Some(b),
                    _ => return None,
                }
            }
            if let Some(t) = job.submitted_at {
                h.job.submitted_at = Some(Timestamp::parse(&t.0)?);
            }
        }
        if let Some(e) = self.expect {
            h.expect = Some(JobExpect {
                final_state: match e.final_state {
                    None => None,
                    Some(f) => Some(Final::parse(&f.0)?),
                },
                retries: e.retries,
                decision: decision_kind(e.decision)?,
            });
        }
        Some(h)
    }
}

impl RunIn<'_> {
    fn into_model(self) -> Option<Run> {
        // `queuedFor: 0s` together with `startedAt` is still a conflict (a `null` is not).
        let queued_for_given = self.queued_for.is_some();
        let mut run = Run {
            node: self.node.map(Str::owned),
            queued_for: duration(self.queued_for)?.unwrap_or_default(),
            run_for: duration(self.run_for)?.unwrap_or_default(),
            termination_confirmed_after: duration(self.termination_confirmed_after)?,
            category: self.category.map(Str::owned),
            subcategory: self.subcategory.map(Str::owned),
            global_max_retries: self.global_max_retries,
            ..Run::default()
        };
        if let Some(s) = self.started_at {
            if queued_for_given {
                return None;
            }
            run.started_at = Some(match GoDuration::parse(&s.0) {
                Ok(d) => StartedAt::Offset(d),
                Err(_) => StartedAt::Absolute(Timestamp::parse(&s.0)?),
            });
        }
        if let Some(conditions) = self.conditions {
            run.conditions.reserve(conditions.len());
            for c in conditions {
                // `OOMKilled` is a container reason: the strict decoder says so.
                if c.0 == "OOMKilled" {
                    return None;
                }
                run.conditions.push(Condition::parse(&c.0)?);
            }
        }
        if let Some(containers) = self.containers {
            run.containers.reserve(containers.len());
            for c in containers {
                // A missing name is an unnamed container (Lookout imports); an explicit empty
                // one is an error the strict decoder words.
                let name = match c.name {
                    None => String::new(),
                    Some(n) if n.0.is_empty() => return None,
                    Some(n) => n.owned(),
                };
                run.containers.push(Container {
                    name,
                    init: c.init.unwrap_or_default(),
                    exit_code: c.exit_code.unwrap_or_default(),
                    reason: c.reason.map(Str::owned),
                    message: c.message.map(Str::owned),
                });
            }
        }
        if let Some(o) = self.outcome {
            run.outcome = Outcome::parse(&o.0)?;
        }
        if let Some(e) = self.expect {
            run.expect = Some(Box::new(RunExpect {
                action: match e.action.as_ref().map(|a| &*a.0) {
                    None => None,
                    Some("Retry") => Some(Action::Retry),
                    Some("Fail") => Some(Action::Fail),
                    Some(_) => return None,
                },
                decision: decision_kind(e.decision)?,
                rule: e.rule.map(Str::owned),
                delay: duration(e.delay)?,
                retries: e.retries,
                pod_name: e.pod_name.map(Str::owned),
                avoid_nodes: e.avoid_nodes.map(|v| v.into_iter().map(Str::owned).collect()),
            }));
        }
        Some(run)
    }
}

/// One JSON line → the same strict decoder as YAML documents (so the errors are the same),
/// through a `yaml::Node` deserialized straight from the JSON text. `apiVersion`/`kind` may
/// be left out. Slow (a tree, a field path per field); used only for lines the fast path
/// gives up on.
pub fn decode_line_strict(line: &[u8], line_no: usize) -> Result<FailureHistory, String> {
    let pos = Pos {
        line: line_no,
        column: 1,
    };
    let mut de = serde_json::Deserializer::from_slice(line);
    let node = NodeSeed { pos }
        .deserialize(&mut de)
        .and_then(|n| de.end().map(|()| n))
        .map_err(|e| {
            // serde_json appends "at line 1 column N"; the line is ours to name, the column its.
            let text = e.to_string();
            let reason = text.split(" at line ").next().unwrap_or(&text).to_string();
            format!("invalid JSON at column {}: {reason}", e.column())
        })?;
    let Value::Map(mut entries) = node.value else {
        return Err("expected a JSON object (one FailureHistory per line)".to_string());
    };
    let scalar = |t: &str| Node {
        pos,
        value: Value::Scalar {
            text: t.to_string(),
            quoted: true,
        },
    };
    let has = |entries: &[(Node, Node)], key: &str| entries.iter().any(|(k, _)| k.as_scalar() == Some(key));
    if !has(&entries, "kind") {
        entries.insert(0, (scalar("kind"), scalar("FailureHistory")));
    }
    if !has(&entries, "apiVersion") {
        entries.insert(0, (scalar("apiVersion"), scalar("armadaproject.io/v1")));
    }
    let node = Node {
        pos,
        value: Value::Map(entries),
    };
    let doc = decode_document(node, 0, Some(&[Kind::FailureHistory]));
    let errors = crate::diag::describe_errors(&doc.diagnostics);
    match doc.resource {
        Some(Resource::FailureHistory(h)) if errors.is_empty() => Ok(*h),
        _ => Err(errors),
    }
}

/// Builds a `yaml::Node` from JSON: strings are quoted scalars, numbers and booleans plain
/// ones (spelled as serde_json spells them), so the YAML decoder's type checks apply as is.
#[derive(Clone, Copy)]
struct NodeSeed {
    pos: Pos,
}

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl NodeSeed {
    fn node(self, value: Value) -> Node {
        Node { pos: self.pos, value }
    }

    fn plain(self, text: String) -> Node {
        self.node(Value::Scalar { text, quoted: false })
    }
}

impl<'de> Visitor<'de> for NodeSeed {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(self.plain(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        // `137.0` stays `137.0` (not `137`), so an integer field still rejects it.
        Ok(self.plain(serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        Ok(self.node(Value::Scalar {
            text: v.to_string(),
            quoted: true,
        }))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        Ok(self.node(Value::Scalar { text: v, quoted: true }))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(self.node(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(self.node(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(self.node(Value::Seq(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            entries.push((
                self.node(Value::Scalar {
                    text: key,
                    quoted: true,
                }),
                value,
            ));
        }
        Ok(self.node(Value::Map(entries)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both decoders, on lines the fast path accepts and lines it gives up on: the same
    /// history, or the strict decoder's error.
    #[test]
    fn the_fast_path_agrees_with_the_strict_decoder() {
        let lines = [
            r#"{"job":{"id":"j","queue":"q","terminationGracePeriod":"30s","memory":"8Gi","submittedAt":"2026-01-01T00:00:00Z","annotations":{"a":"b"},"jobSet":{"x":1}},"runs":[{"node":"n1","queuedFor":"5m","runFor":"2h","conditions":["Preempted"],"terminationConfirmedAfter":"5s","expect":{"action":"Retry","rule":"infra/0","delay":"0s","retries":1,"podName":"armada-j-0","avoidNodes":["n1"],"decision":"retry"}},{"node":"n\u00e9","containers":[{"name":"main","exitCode":137,"reason":"OOMKilled","message":"a \"quoted\" message"},{"name":"side","init":true}],"category":"c","subcategory":"s","globalMaxRetries":3},{"outcome":"succeeded","startedAt":"3h"}],"expect":{"final":"Succeeded","retries":2,"decision":"retry"}}"#,
            r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","runs":[{"node":null,"conditions":null}]}"#,
            r#"{"runs":[{"startedAt":"2026-01-01T00:00:00Z"}],"job":{"submittedAt":"2026-01-01T00:00:00Z"}}"#,
            // An unnamed container, as `retryctl history` writes Lookout's runs.
            r#"{"job":{"id":"ml-01","queue":"ml"},"runs":[{"node":"n1","containers":[{"exitCode":137,"message":"OOM"}],"category":"oom"}]}"#,
        ];
        for line in lines {
            let fast = decode_fast(line.as_bytes()).unwrap_or_else(|| panic!("fast path gave up on {line}"));
            assert_eq!(Ok(fast), decode_line_strict(line.as_bytes(), 1), "{line}");
        }
        // The fast path gives up; the strict decoder answers (accepting, or with the error).
        let strict = [
            (r#"{"runs":[{"node":5}]}"#, Ok(())),
            (r#"{"job":{"annotations":{"a":5}},"runs":[{}]}"#, Ok(())),
            (r#"{"runs":[{"nodee":"a"}]}"#, Err("runs[0].nodee: unknown field `nodee`, did you mean `node`?")),
            (r#"{"runs":[{"node":"a","node":"b"}]}"#, Ok(())),
            (r#"{"runs":[{"queuedFor":"0s","startedAt":"1s"}]}"#, Err("runs[0].startedAt: set either `startedAt` or `queuedFor`, not both")),
            (r#"{"runs":[{"conditions":["OOMKilled"]}]}"#, Err("runs[0].conditions[0]: `OOMKilled` is a container reason, not a pod condition; write it as `containers: [{name: main, reason: OOMKilled, exitCode: 137}]`")),
            (r#"{"kind":null,"runs":[{}]}"#, Err("kind: expected a string")),
            (r#"{"runs":[]}"#, Err("runs: a history needs at least one run")),
            (r#"{"runs":[{"containers":[{"name":"","exitCode":1}]}]}"#, Err("runs[0].containers[0].name: container name must not be empty; leave `name` out for an unnamed container")),
            (r#"{"runs":[{"containers":[{"name":"m","exitCode":1.0}]}]}"#, Err("runs[0].containers[0].exitCode: expected an integer, found scalar `1.0`")),
            (r#"{"runs":[{"runFor":"5"}]}"#, Err("runs[0].runFor: invalid duration `5`: missing unit; expected a duration such as `10s` (units: `ns`, `us`, `ms`, `s`, `m`, `h`)")),
        ];
        for (line, want) in strict {
            assert!(decode_fast(line.as_bytes()).is_none(), "fast path accepted {line}");
            let got = decode_line(line.as_bytes(), 1);
            match want {
                Ok(()) => assert!(got.is_ok(), "{line}: {got:?}"),
                Err(e) => assert_eq!(got.unwrap_err(), e, "{line}"),
            }
        }
    }
}
