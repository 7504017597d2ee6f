//! One JSON line → a [`FailureHistory`] (docs/simulate.md bulk input).
//!
//! Owns: two decoders with one answer, and [`Scratch`], the history a worker decodes every
//! line into (its strings, runs and containers keep their buffers from line to line). The
//! fast path deserializes the line straight into that history — typed, borrowing from the
//! line until a string is copied into a kept buffer (no intermediate tree, no
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
use std::cell::Cell;
use std::collections::BTreeMap;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::diag::quote;
use crate::model::document::decode_document;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{
    validate_failure_history, Container, FailureHistory, Final, Job, JobExpect, Outcome, PodEvent, Resources, Run,
    RunExpect, StartedAt, Timestamp, DECISION_KINDS,
};
use crate::model::policy::{Action, Condition};
use crate::model::quantity::parse_quantity;
use crate::model::{Kind, Resource};
use crate::yaml::{Node, Pos, Value};

/// Decodes one (trimmed, non-empty) JSON line; `Err` is the message for the user, without
/// the `file:line: ` prefix.
pub fn decode_line(line: &[u8], line_no: usize) -> Result<FailureHistory, String> {
    let mut scratch = Scratch::default();
    scratch.decode(line, || line_no)?;
    Ok(scratch.history)
}

/// The typed fast path alone; `None` means "ask the strict decoder".
pub fn decode_fast(line: &[u8]) -> Option<FailureHistory> {
    let mut scratch = Scratch::default();
    scratch.decode_fast(line).then_some(scratch.history)
}

/// One worker's history, decoded into again and again: the strings, runs and containers of
/// earlier lines keep their buffers, so a typical line allocates nothing (a bulk run
/// allocated and freed every node, category and container name of every run).
#[derive(Default)]
pub struct Scratch {
    history: FailureHistory,
    /// Runs beyond the current history's length, kept with their buffers for a longer one.
    spare: Vec<Run>,
    strings: Pool,
}

/// The most runs, and emptied strings, a [`Scratch`] keeps between lines: enough for any
/// ordinary history, small enough that one huge line does not pin its memory.
const KEEP_RUNS: usize = 256;
const KEEP_STRINGS: usize = 1024;
const KEEP_CONTAINERS: usize = 256;
/// Larger buffers (a long message) are freed rather than kept.
const KEEP_STRING_BYTES: usize = 4096;

impl Scratch {
    /// Decodes `line` (fast path, else the strict decoder) into the scratch history.
    /// `line_no` is asked only by the strict decoder: a shard may have to count the lines
    /// before its range to know it (`source::Origin`).
    pub fn decode(&mut self, line: &[u8], line_no: impl FnOnce() -> usize) -> Result<&mut FailureHistory, String> {
        if !self.decode_fast(line) {
            self.history = decode_line_strict(line, line_no())?;
        }
        Ok(&mut self.history)
    }

    /// The typed fast path; `false` means "ask the strict decoder" (the history is then
    /// left half-written).
    fn decode_fast(&mut self, line: &[u8]) -> bool {
        // One UTF-8 check for the whole line: `from_slice` would check every string on its
        // own (~30 calls per line, measured at 6% of a bulk run).
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let ok = LineSeed(self).deserialize(&mut de).is_ok() && de.end().is_ok();
        if self.history.runs.capacity() > 4 * KEEP_RUNS {
            self.spare.clear();
            self.history.runs.shrink_to(KEEP_RUNS);
        }
        self.spare.truncate(KEEP_RUNS);
        ok && validate_failure_history(&self.history).is_empty()
    }
}

/// Emptied strings, and containers of runs that had more, handed out again before
/// allocating (a preempted run after an OOM-killed one: its containers wait here, strings
/// and all, for the next OOM kill).
#[derive(Default)]
struct Pool {
    strings: Vec<String>,
    containers: Vec<Container>,
}

impl Pool {
    /// `value` as a `String`, in `old`'s buffer or a pooled one.
    fn string(&mut self, old: Option<String>, value: Str<'_>) -> String {
        match value.0 {
            Cow::Owned(s) => {
                self.put(old);
                s
            }
            Cow::Borrowed(v) => {
                let mut s = old.or_else(|| self.strings.pop()).unwrap_or_default();
                s.clear();
                s.push_str(v);
                s
            }
        }
    }

    fn put(&mut self, s: Option<String>) {
        if let Some(s) = s {
            if (1..=KEEP_STRING_BYTES).contains(&s.capacity()) && self.strings.len() < KEEP_STRINGS {
                self.strings.push(s);
            }
        }
    }

    /// `slot` := `value`, reusing its buffer; `None` gives the buffer back to the pool.
    fn set(&mut self, slot: &mut Option<String>, value: Option<Str<'_>>) {
        match value {
            Some(v) => {
                let old = slot.take();
                *slot = Some(self.string(old, v));
            }
            None => self.put(slot.take()),
        }
    }
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

/// Gives up on the fast path (the strict decoder then reads the line and words the error).
fn give_up<E: de::Error>() -> E {
    E::custom("not on the fast path")
}

/// `Some(v)` or give up.
fn or_give_up<T, E: de::Error>(v: Option<T>) -> Result<T, E> {
    v.ok_or_else(give_up)
}

// The top level, a run, a run's containers and conditions are decoded by hand, straight
// into the scratch history (serde's derive can only build new values). They accept exactly
// what the derived structs they replace accepted: the same fields and value types, a
// duplicate or unknown field gives up, and — as derived structs do — a JSON array is read
// as the fields in declaration order, missing trailing ones left out.

/// The fields of a line, in declaration order (for the array form).
#[derive(Deserialize, Clone, Copy)]
#[serde(field_identifier, rename_all = "camelCase")]
enum LineField {
    ApiVersion,
    Kind,
    Job,
    Runs,
    Expect,
}

const LINE_NAMES: &[&str] = &["apiVersion", "kind", "job", "runs", "expect"];

struct LineSeed<'s>(&'s mut Scratch);

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let s = self.0;
        let job = &mut s.history.job;
        job.id.clear();
        s.strings.set(&mut job.queue, None);
        job.annotations.clear();
        job.termination_grace_period = None;
        job.memory = None;
        job.submitted_at = None;
        job.gang_cardinality = None;
        job.resources = None;
        s.history.expect = None;
        let mut v = LineVisitor { s, seen: 0 };
        d.deserialize_struct("LineIn", LINE_NAMES, &mut v)?;
        if v.seen & (1 << LineField::Runs as u32) == 0 {
            return Err(give_up());
        }
        Ok(())
    }
}

struct LineVisitor<'s> {
    s: &'s mut Scratch,
    seen: u32,
}

impl<'de> LineVisitor<'_> {
    fn field<D: Deserializer<'de>>(&mut self, f: LineField, d: D) -> Result<(), D::Error> {
        let bit = 1 << f as u32;
        if self.seen & bit != 0 {
            return Err(give_up());
        }
        self.seen |= bit;
        let s = &mut *self.s;
        match f {
            // May be left out, but a `null` is an error in the strict decoder.
            LineField::ApiVersion => {
                if Str::deserialize(d)?.0 != "armadaproject.io/v1" {
                    return Err(give_up());
                }
            }
            LineField::Kind => {
                if Str::deserialize(d)?.0 != "FailureHistory" {
                    return Err(give_up());
                }
            }
            LineField::Job => {
                if let Some(MapOnly(job)) = Option::<MapOnly<JobIn<'de>>>::deserialize(d)? {
                    or_give_up(job.into_model(&mut s.history.job, &mut s.strings))?;
                }
            }
            LineField::Runs => RunsSeed(s).deserialize(d)?,
            LineField::Expect => {
                if let Some(MapOnly(e)) = Option::<MapOnly<JobExpectIn<'de>>>::deserialize(d)? {
                    s.history.expect = Some(or_give_up(e.into_model())?);
                }
            }
        }
        Ok(())
    }
}

/// Hands one field's value to [`LineVisitor::field`] (or a run's to [`RunVisitor::field`]).
struct FieldSeed<'v, V, F>(&'v mut V, F);

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, LineVisitor<'_>, LineField> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.field(self.1, d)
    }
}

impl<'de> Visitor<'de> for &mut LineVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a FailureHistory")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(f) = map.next_key::<LineField>()? {
            map.next_value_seed(FieldSeed(&mut *self, f))?;
        }
        Ok(())
    }

    // No `visit_seq`: serde's derive would read a JSON array positionally as a struct, which
    // the strict decoder rejects (`expected a mapping`); the fast path must accept only what
    // it accepts, so an array here gives up (serde's default `visit_seq` is an error).
}

/// A struct read from a JSON object only. serde's derive also reads a JSON array as a struct,
/// field by field in declaration order (`"job":["j1"]`), which the strict decoder rejects;
/// the fast path must not accept more than it does (fuzz target `jsonl_decode`).
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData)).map(MapOnly)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JobIn<'a> {
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    queue: Option<Str<'a>>,
    #[serde(default)]
    annotations: Option<UniqueMap>,
    #[serde(default, borrow)]
    termination_grace_period: Option<Str<'a>>,
    #[serde(default, borrow)]
    memory: Option<Str<'a>>,
    #[serde(default, borrow)]
    submitted_at: Option<Str<'a>>,
    /// Accepted (a real job has one), any value, no effect on decisions.
    #[serde(default)]
    #[allow(dead_code)]
    job_set: Option<Unique>,
    /// `job.gang.cardinality` (the upstream engine's legacy path for gangs).
    #[serde(default)]
    gang: Option<MapOnly<GangIn>>,
    /// `job.resources`: quantities as strings only; a number (`"gpu": 1`) gives up to the
    /// strict decoder, which reads it.
    #[serde(default)]
    resources: Option<MapOnly<ResourcesIn<'a>>>,
}

/// A map of strings (`annotations`) that gives up on a key met twice: a `BTreeMap` would
/// keep the last, where the strict decoder refuses the line.
struct UniqueMap(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for UniqueMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UniqueMap;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueMap, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((k, v)) = map.next_entry::<String, String>()? {
                    if out.insert(k, v).is_some() {
                        return Err(give_up());
                    }
                }
                Ok(UniqueMap(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Any value, read and dropped (`jobSet`), giving up on a key met twice in any of its
/// objects, as the strict decoder refuses it.
struct Unique;

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Unique;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_none<E: de::Error>(self) -> Result<Unique, E> {
                Ok(Unique)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Unique, D::Error> {
                Unique::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
                while seq.next_element::<Unique>()?.is_some() {}
                Ok(Unique)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
                let mut keys: Vec<Str<'de>> = Vec::new();
                while let Some(k) = map.next_key::<Str<'de>>()? {
                    if keys.iter().any(|seen| seen.0 == k.0) {
                        return Err(give_up());
                    }
                    keys.push(k);
                    map.next_value::<Unique>()?;
                }
                Ok(Unique)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourcesIn<'a> {
    #[serde(default, borrow)]
    cpu: Option<Str<'a>>,
    #[serde(default, borrow)]
    memory: Option<Str<'a>>,
    #[serde(default, borrow)]
    gpu: Option<Str<'a>>,
}

impl ResourcesIn<'_> {
    fn into_model(self) -> Option<Resources> {
        let quantity = |s: Option<Str<'_>>| -> Option<Option<f64>> {
            match s {
                None => Some(None),
                Some(s) => parse_quantity(&s.0).ok().filter(|q| *q >= 0.0).map(Some),
            }
        };
        let milli = |q: Option<f64>| -> Option<Option<u64>> {
            match q {
                None => Some(None),
                Some(q) => Resources::milli(q).map(Some),
            }
        };
        Some(Resources {
            cpu_milli: milli(quantity(self.cpu)?)?,
            memory: quantity(self.memory)?,
            gpu_milli: milli(quantity(self.gpu)?)?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GangIn {
    cardinality: u32,
}

/// `runs`, each decoded into a run of the scratch history (a spare one when the history
/// grows); a run the fast path is not sure of fails the whole line over to the strict
/// decoder.
struct RunsSeed<'s>(&'s mut Scratch);

impl<'de> DeserializeSeed<'de> for RunsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RunsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of runs")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let s = self.0;
        let runs = &mut s.history.runs;
        let mut n = 0;
        let result = loop {
            if n == runs.len() {
                runs.push(s.spare.pop().unwrap_or_default());
            }
            match seq.next_element_seed(RunSeed(&mut runs[n], &mut s.strings)) {
                Ok(Some(())) => n += 1,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        s.spare.extend(runs.drain(n..));
        result
    }
}

/// The fields of a run.
#[derive(Deserialize, Clone, Copy)]
#[serde(field_identifier, rename_all = "camelCase")]
enum RunField {
    Node,
    QueuedFor,
    StartedAt,
    RunFor,
    Conditions,
    TerminationConfirmedAfter,
    Containers,
    Category,
    Subcategory,
    Outcome,
    GlobalMaxRetries,
    Expect,
    PodError,
    Events,
}

const RUN_NAMES: &[&str] = &[
    "node",
    "queuedFor",
    "startedAt",
    "runFor",
    "conditions",
    "terminationConfirmedAfter",
    "containers",
    "category",
    "subcategory",
    "outcome",
    "globalMaxRetries",
    "expect",
    "podError",
    "events",
];

/// One run, decoded into `.0` (every field reset first; strings keep their buffers).
struct RunSeed<'s>(&'s mut Run, &'s mut Pool);

impl<'de> DeserializeSeed<'de> for RunSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let RunSeed(run, strings) = self;
        run.queued_for = GoDuration::default();
        run.started_at = None;
        run.run_for = GoDuration::default();
        run.conditions.clear();
        run.termination_confirmed_after = None;
        run.outcome = Outcome::default();
        run.global_max_retries = None;
        run.expect = None;
        let mut v = RunVisitor {
            run,
            strings,
            seen: 0,
            queued_for_given: false,
            started_at_given: false,
        };
        d.deserialize_struct("RunIn", RUN_NAMES, &mut v)?;
        let (run, strings, seen) = (v.run, v.strings, v.seen);
        // Fields this run leaves out: empty, their buffers back to the pool.
        let absent = |f: RunField| seen & (1 << f as u32) == 0;
        if absent(RunField::Node) {
            strings.set(&mut run.node, None);
        }
        if absent(RunField::Category) {
            strings.set(&mut run.category, None);
        }
        if absent(RunField::Subcategory) {
            strings.set(&mut run.subcategory, None);
        }
        if absent(RunField::Containers) {
            recycle_containers(&mut run.containers, 0, strings);
        }
        // Rare fields: when absent, one test each and nothing else.
        if absent(RunField::PodError) && run.pod_error.is_some() {
            strings.set(&mut run.pod_error, None);
        }
        if absent(RunField::Events) && !run.events.is_empty() {
            run.events.clear();
        }
        // `queuedFor: 0s` together with `startedAt` is still a conflict (a `null` is not).
        if v.queued_for_given && v.started_at_given {
            return Err(give_up());
        }
        Ok(())
    }
}

/// Containers past the first `keep` go to the pool.
fn recycle_containers(containers: &mut Vec<Container>, keep: usize, pool: &mut Pool) {
    if containers.len() > keep {
        let room = KEEP_CONTAINERS.saturating_sub(pool.containers.len());
        let end = containers.len().min(keep + room);
        for mut c in containers.drain(keep..end) {
            // A long message is freed, not kept.
            if c.message.as_ref().is_some_and(|m| m.capacity() > KEEP_STRING_BYTES) {
                c.message = None;
            }
            pool.containers.push(c);
        }
        containers.truncate(keep);
    }
}

struct RunVisitor<'s> {
    run: &'s mut Run,
    strings: &'s mut Pool,
    seen: u32,
    queued_for_given: bool,
    started_at_given: bool,
}

fn duration<E: de::Error>(s: Option<Str<'_>>) -> Result<Option<GoDuration>, E> {
    match s {
        None => Ok(None),
        Some(s) => GoDuration::parse(&s.0).map(Some).map_err(|_| give_up()),
    }
}

impl<'de> RunVisitor<'_> {
    fn field<D: Deserializer<'de>>(&mut self, f: RunField, d: D) -> Result<(), D::Error> {
        let bit = 1 << f as u32;
        if self.seen & bit != 0 {
            return Err(give_up());
        }
        self.seen |= bit;
        let run = &mut *self.run;
        match f {
            RunField::Node => self.strings.set(&mut run.node, Option::<Str<'de>>::deserialize(d)?),
            RunField::QueuedFor => {
                let v = Option::<Str<'de>>::deserialize(d)?;
                self.queued_for_given = v.is_some();
                run.queued_for = duration(v)?.unwrap_or_default();
            }
            RunField::StartedAt => {
                if let Some(s) = Option::<Str<'de>>::deserialize(d)? {
                    self.started_at_given = true;
                    run.started_at = Some(match GoDuration::parse(&s.0) {
                        Ok(d) => StartedAt::Offset(d),
                        Err(_) => StartedAt::Absolute(or_give_up(Timestamp::parse(&s.0))?),
                    });
                }
            }
            RunField::RunFor => run.run_for = duration(Option::<Str<'de>>::deserialize(d)?)?.unwrap_or_default(),
            RunField::Conditions => d.deserialize_option(ConditionsSeed(&mut run.conditions))?,
            RunField::TerminationConfirmedAfter => {
                run.termination_confirmed_after = duration(Option::<Str<'de>>::deserialize(d)?)?;
            }
            RunField::Containers => d.deserialize_option(ContainersSeed(&mut run.containers, self.strings))?,
            RunField::Category => self.strings.set(&mut run.category, Option::<Str<'de>>::deserialize(d)?),
            RunField::Subcategory => self
                .strings
                .set(&mut run.subcategory, Option::<Str<'de>>::deserialize(d)?),
            RunField::Outcome => {
                if let Some(o) = Option::<Str<'de>>::deserialize(d)? {
                    run.outcome = or_give_up(Outcome::parse(&o.0))?;
                }
            }
            RunField::GlobalMaxRetries => run.global_max_retries = Option::<u32>::deserialize(d)?,
            RunField::Expect => {
                if let Some(MapOnly(e)) = Option::<MapOnly<Box<RunExpectIn<'de>>>>::deserialize(d)? {
                    run.expect = Some(Box::new(or_give_up(e.into_model())?));
                }
            }
            RunField::PodError => self
                .strings
                .set(&mut run.pod_error, Option::<Str<'de>>::deserialize(d)?),
            RunField::Events => d.deserialize_option(EventsSeed(&mut run.events))?,
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, RunVisitor<'_>, RunField> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.0.field(self.1, d)
    }
}

impl<'de> Visitor<'de> for &mut RunVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a run")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(f) = map.next_key::<RunField>()? {
            map.next_value_seed(FieldSeed(&mut *self, f))?;
        }
        Ok(())
    }

    // No `visit_seq`, as for the line: a run written as an array is the strict decoder's
    // to reject.
}

/// `conditions` (a list, or `null` for none), parsed as they are read.
struct ConditionsSeed<'s>(&'s mut Vec<Condition>);

impl<'de> Visitor<'de> for ConditionsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of conditions")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(c) = seq.next_element::<Str<'de>>()? {
            // `OOMKilled` is a container reason: the strict decoder says so.
            if c.0 == "OOMKilled" {
                return Err(give_up());
            }
            self.0.push(or_give_up(Condition::parse(&c.0))?);
        }
        Ok(())
    }
}

/// `containers` (a list, or `null` for none), each into a container of the run.
struct ContainersSeed<'s>(&'s mut Vec<Container>, &'s mut Pool);

impl<'de> Visitor<'de> for ContainersSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of containers")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        recycle_containers(self.0, 0, self.1);
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let ContainersSeed(containers, strings) = self;
        let mut n = 0;
        let result = loop {
            match seq.next_element::<MapOnly<ContainerIn<'de>>>() {
                Ok(Some(MapOnly(c))) => {
                    if n == containers.len() {
                        containers.push(strings.containers.pop().unwrap_or_default());
                    }
                    if c.into_model(&mut containers[n], strings).is_none() {
                        break Err(give_up());
                    }
                    n += 1;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        recycle_containers(containers, n, strings);
        result
    }
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

/// `events` (a list, or `null` for none), each into an event of the run, reusing its
/// strings' buffers.
struct EventsSeed<'s>(&'s mut Vec<PodEvent>);

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of events")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.0.clear();
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let events = self.0;
        let mut n = 0;
        let result = loop {
            match seq.next_element::<MapOnly<EventIn<'de>>>() {
                Ok(Some(MapOnly(e))) => {
                    if n == events.len() {
                        events.push(PodEvent::default());
                    }
                    let slot = &mut events[n];
                    for (text, value) in [
                        (&mut slot.event_type, e.event_type),
                        (&mut slot.reason, e.reason),
                        (&mut slot.message, e.message),
                    ] {
                        text.clear();
                        if let Some(v) = value {
                            text.push_str(&v.0);
                        }
                    }
                    n += 1;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        events.truncate(n);
        result
    }
}

/// One pod event; a field left out (or `null`) is empty, as in the strict decoder.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventIn<'a> {
    #[serde(default, borrow, rename = "type")]
    event_type: Option<Str<'a>>,
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

fn parse_duration(s: Option<Str<'_>>) -> Option<Option<GoDuration>> {
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

impl JobIn<'_> {
    /// Into `job`, which the caller has reset.
    fn into_model(self, job: &mut Job, strings: &mut Pool) -> Option<()> {
        job.gang_cardinality = self.gang.map(|g| g.0.cardinality);
        if let Some(r) = self.resources {
            job.resources = Some(r.0.into_model()?);
        }
        if let Some(id) = self.id {
            job.id.push_str(&id.0);
        }
        strings.set(&mut job.queue, self.queue);
        job.annotations = self.annotations.map(|m| m.0).unwrap_or_default();
        job.termination_grace_period = parse_duration(self.termination_grace_period)?;
        if let Some(m) = self.memory {
            match parse_quantity(&m.0) {
                Ok(b) if b > 0.0 => job.memory = Some(b),
                _ => return None,
            }
        }
        if let Some(t) = self.submitted_at {
            job.submitted_at = Some(Timestamp::parse(&t.0)?);
        }
        Some(())
    }
}

impl JobExpectIn<'_> {
    fn into_model(self) -> Option<JobExpect> {
        Some(JobExpect {
            final_state: match self.final_state {
                None => None,
                Some(f) => Some(Final::parse(&f.0)?),
            },
            retries: self.retries,
            decision: decision_kind(self.decision)?,
        })
    }
}

impl ContainerIn<'_> {
    /// Into `slot`, reusing its strings' buffers.
    fn into_model(self, slot: &mut Container, strings: &mut Pool) -> Option<()> {
        // A missing name is an unnamed container (Lookout imports); an explicit empty one
        // is an error the strict decoder words.
        match self.name {
            None => slot.name.clear(),
            Some(n) if n.0.is_empty() => return None,
            Some(n) => {
                let old = std::mem::take(&mut slot.name);
                slot.name = strings.string(Some(old), n);
            }
        }
        slot.init = self.init.unwrap_or_default();
        slot.exit_code = self.exit_code.unwrap_or_default();
        strings.set(&mut slot.reason, self.reason);
        strings.set(&mut slot.message, self.message);
        Some(())
    }
}

impl RunExpectIn<'_> {
    fn into_model(self) -> Option<RunExpect> {
        Some(RunExpect {
            action: match self.action.as_ref().map(|a| &*a.0) {
                None => None,
                Some("Retry") => Some(Action::Retry),
                Some("Fail") => Some(Action::Fail),
                Some(_) => return None,
            },
            decision: decision_kind(self.decision)?,
            rule: self.rule.map(Str::owned),
            delay: parse_duration(self.delay)?,
            retries: self.retries,
            pod_name: self.pod_name.map(Str::owned),
            avoid_nodes: self.avoid_nodes.map(|v| v.into_iter().map(Str::owned).collect()),
        })
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
    let track = Track {
        line,
        read: Cell::new(0),
        duplicate: Cell::new(None),
    };
    // Read through a counter of the bytes read, for the columns of a duplicate key (the
    // fast path, which reads the slice, gives up on one).
    let mut de = serde_json::Deserializer::from_reader(Counting {
        rest: line,
        read: &track.read,
    });
    let node = NodeSeed { pos, track: &track }
        .deserialize(&mut de)
        .and_then(|n| de.end().map(|()| n))
        .map_err(|e| {
            if let Some((key, at, first)) = track.duplicate.take() {
                // The words a `.json` or YAML history's duplicate key gets (`yaml`).
                return format!(
                    "invalid JSON at column {at}: duplicate key {} (first at column {first})",
                    quote(&key)
                );
            }
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

/// What the strict decoder has read of its line: the bytes ([`Counting`]), and the duplicate
/// key it stopped at, with its column and its first one's.
struct Track<'a> {
    line: &'a [u8],
    read: Cell<usize>,
    duplicate: Cell<Option<(String, usize, usize)>>,
}

impl Track<'_> {
    /// The column of the key about to be read, `read` the bytes read before it: its opening
    /// quote is the first after them (serde_json reads at most one byte ahead, and only
    /// whitespace, `{` and `,` come before a key).
    fn key_column(&self, read: usize) -> usize {
        let rest = self.line.get(read..).unwrap_or_default();
        read + memchr::memchr(b'"', rest).unwrap_or(0) + 1
    }
}

/// The line as an `io::Read` that counts the bytes read (serde_json reads a reader byte by
/// byte).
struct Counting<'a> {
    rest: &'a [u8],
    read: &'a Cell<usize>,
}

impl std::io::Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.rest.read(buf)?;
        self.read.set(self.read.get() + n);
        Ok(n)
    }
}

/// Builds a `yaml::Node` from JSON: strings are quoted scalars, numbers and booleans plain
/// ones (spelled as serde_json spells them), so the YAML decoder's type checks apply as is.
/// A key met twice in one object is refused, as the YAML reader refuses it.
#[derive(Clone, Copy)]
struct NodeSeed<'t> {
    pos: Pos,
    track: &'t Track<'t>,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(self)
    }
}

impl NodeSeed<'_> {
    fn node(self, value: Value) -> Node {
        Node { pos: self.pos, value }
    }

    fn plain(self, text: String) -> Node {
        self.node(Value::Scalar { text, quoted: false })
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
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
        let mut entries: Vec<(Node, Node)> = Vec::with_capacity(map.size_hint().unwrap_or(8));
        let mut columns = Vec::with_capacity(entries.capacity());
        loop {
            let read = self.track.read.get();
            let Some(key) = map.next_key::<String>()? else { break };
            let column = self.track.key_column(read);
            if let Some(i) = entries.iter().position(|(k, _)| k.as_scalar() == Some(key.as_str())) {
                self.track.duplicate.set(Some((key, column, columns[i])));
                return Err(de::Error::custom("duplicate key"));
            }
            columns.push(column);
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
            // The categorizer's pod-level inputs; a field of an event may be left out or null.
            r#"{"runs":[{"podError":"Failed to pull image \"x\": no match for platform in manifest","events":[{"type":"Warning","reason":"UnexpectedAdmissionError","message":"Pod Allocate failed"},{"type":"Normal","reason":null}]},{"podError":null,"events":null},{"events":[]}]}"#,
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
            // A key met twice, in any object (a run, the annotations, a value that is
            // otherwise ignored, the line; spelled with an escape), as a `.json` history's.
            (r#"{"runs":[{"node":"a","node":"b"}]}"#, Err("invalid JSON at column 22: duplicate key `node` (first at column 11)")),
            (r#"{"job":{"annotations":{"a":"1", "a":"2"}},"runs":[{}]}"#, Err("invalid JSON at column 33: duplicate key `a` (first at column 24)")),
            (r#"{"job":{"jobSet":{"x":[{"y":1,"y":2}]}},"runs":[{}]}"#, Err("invalid JSON at column 31: duplicate key `y` (first at column 25)")),
            (r#"{"runs":[{}],"runs":[{}]}"#, Err("invalid JSON at column 14: duplicate key `runs` (first at column 2)")),
            (r#"{"runs":[{"node":"a","node":"b"}]}"#, Err("invalid JSON at column 22: duplicate key `node` (first at column 11)")),
            // A time that does not exist, with the field it is in.
            (r#"{"job":{"submittedAt":"2026-02-30T00:00:00Z"},"runs":[{}]}"#, Err("job.submittedAt: invalid time `2026-02-30T00:00:00Z`: day `30` does not exist in 2026-02 (28 days)")),
            (r#"{"runs":[{"startedAt":"2026-01-01T00:00:60Z"}]}"#, Err("runs[0].startedAt: invalid start `2026-01-01T00:00:60Z`: second `60` is out of range (00–59; a leap second is not read)")),
            (r#"{"runs":[{"queuedFor":"0s","startedAt":"1s"}]}"#, Err("runs[0].startedAt: set either `startedAt` or `queuedFor`, not both")),
            (r#"{"runs":[{"conditions":["OOMKilled"]}]}"#, Err("runs[0].conditions[0]: `OOMKilled` is a container reason, not a pod condition; write it as `containers: [{name: main, reason: OOMKilled, exitCode: 137}]`")),
            (r#"{"kind":null,"runs":[{}]}"#, Err("kind: expected a string")),
            (r#"{"runs":[]}"#, Err("runs: a history needs at least one run")),
            (r#"{"runs":[{"containers":[{"name":"","exitCode":1}]}]}"#, Err("runs[0].containers[0].name: container name must not be empty; leave `name` out for an unnamed container")),
            (r#"{"runs":[{"containers":[{"name":"m","exitCode":1.0}]}]}"#, Err("runs[0].containers[0].exitCode: expected an integer, found scalar `1.0`")),
            (r#"{"runs":[{"runFor":"5"}]}"#, Err("runs[0].runFor: invalid duration `5`: missing unit; expected a duration such as `10s` (units: `ns`, `us`, `ms`, `s`, `m`, `h`)")),
            // A JSON array where an object belongs: serde's derive would read it field by
            // field; the strict decoder rejects it, so the fast path must too.
            (r#"{"runs":[[]]}"#, Err("runs[0]: expected a mapping, found a sequence")),
            (r#"{"runs":[["n1","5m"]]}"#, Err("runs[0]: expected a mapping, found a sequence")),
            (r#"{"job":["j1"],"runs":[{}]}"#, Err("job: expected a mapping, found a sequence")),
            (r#"{"job":{"gang":[3]},"runs":[{}]}"#, Err("job.gang: expected a mapping, found a sequence")),
            (r#"{"runs":[{"containers":[["main",137]]}]}"#, Err("runs[0].containers[0]: expected a mapping, found a sequence")),
            (r#"{"runs":[{"expect":["Retry"]}]}"#, Err("runs[0].expect: expected a mapping, found a sequence")),
            (r#"{"runs":[{}],"expect":["Failed"]}"#, Err("expect: expected a mapping, found a sequence")),
            (r#"{"runs":[{"events":[{"type":"Warning","kind":"x"}]}]}"#, Err("runs[0].events[0].kind: unknown field `kind`, expected one of `type`, `reason`, `message`")),
            (r#"{"runs":[{"events":[["Warning"]]}]}"#, Err("runs[0].events[0]: expected a mapping, found a sequence")),
            (r#"{"runs":[{"events":{"type":"Warning"}}]}"#, Err("runs[0].events: expected a list, found a mapping")),
            (r#"{"runs":[{"podError":5}]}"#, Ok(())),
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

    /// A worker's scratch history keeps its runs from line to line: a run's `podError` and
    /// `events` do not leak into the next line's run that has none.
    #[test]
    fn pod_errors_and_events_do_not_outlive_their_line() {
        let mut scratch = Scratch::default();
        let with = br#"{"runs":[{"podError":"e","events":[{"type":"Warning","message":"m"},{"type":"Normal"}]}]}"#;
        let h = scratch.decode(with, || 1).unwrap();
        assert_eq!(h.runs[0].pod_error.as_deref(), Some("e"));
        assert_eq!(h.runs[0].events.len(), 2);
        let fewer = br#"{"runs":[{"events":[{"reason":"r"}]}]}"#;
        let h = scratch.decode(fewer, || 2).unwrap();
        assert_eq!(h.runs[0].pod_error, None);
        assert_eq!(
            h.runs[0].events,
            vec![PodEvent {
                reason: "r".into(),
                ..PodEvent::default()
            }]
        );
        let h = scratch.decode(br#"{"runs":[{}]}"#, || 3).unwrap();
        assert!(h.runs[0].events.is_empty());
        assert_eq!(Ok(h.clone()), decode_line_strict(br#"{"runs":[{}]}"#, 3));
    }
}
