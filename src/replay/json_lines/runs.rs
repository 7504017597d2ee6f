//! The fast path's runs: each decoded into a run of the scratch history, its containers,
//! conditions, events and expectations with it, strings reusing their buffers.
//!
//! Owns: a run's fields, and which containers go back to the pool. Must not: read the line's
//! top level (that is `line`), or accept what the strict decoder refuses.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{Container, ExecutorPath, Outcome, PodEvent, Run, RunExpect, StartedAt, Timestamp};
use crate::model::policy::{Action, Condition};

use super::scratch::Scratch;
use super::values::{decision_kind, give_up, or_give_up, parse_duration, FieldSeed, MapOnly, Pool, Str};
use super::values::{KEEP_CONTAINERS, KEEP_STRING_BYTES};

/// `runs`, each decoded into a run of the scratch history (a spare one when the history
/// grows); a run the fast path is not sure of fails the whole line over to the strict
/// decoder.
pub(super) struct RunsSeed<'s>(pub(super) &'s mut Scratch);

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
    ExecutorPath,
    Pool,
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
    "executorPath",
    "pool",
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
        run.executor_path = None;
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
        if absent(RunField::Pool) {
            strings.set(&mut run.pool, None);
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
            RunField::Pool => self.strings.set(&mut run.pool, Option::<Str<'de>>::deserialize(d)?),
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
            RunField::ExecutorPath => {
                if let Some(p) = Option::<Str<'de>>::deserialize(d)? {
                    run.executor_path = Some(or_give_up(ExecutorPath::parse(&p.0))?);
                }
            }
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
