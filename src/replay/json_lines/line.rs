//! The fast path's top level: a line (`apiVersion`, `kind`, `job`, `runs`, `expect`) and its
//! job, decoded straight into the scratch history.
//!
//! Owns: the line's and the job's fields, and the maps that give up on a key met twice.
//! Must not: read a run (that is `runs`), or accept what the strict decoder refuses.

use std::collections::BTreeMap;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::model::failure_history::{Final, Job, JobEnd, JobExpect, Resources, Timestamp};
use crate::model::quantity::parse_quantity;

use super::runs::RunsSeed;
use super::scratch::Scratch;
use super::values::{decision_kind, give_up, or_give_up, parse_duration, FieldSeed, MapOnly, Pool, Str};

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

pub(super) struct LineSeed<'s>(pub(super) &'s mut Scratch);

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let s = self.0;
        let job = &mut s.history.job;
        job.id.clear();
        s.strings.set(&mut job.queue, None);
        s.strings.set(&mut job.job_set, None);
        job.annotations.clear();
        job.termination_grace_period = None;
        job.memory = None;
        job.submitted_at = None;
        job.gang_cardinality = None;
        job.resources = None;
        job.state = None;
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
    /// No effect on decisions (a burst's job set); a value not a string gives up.
    #[serde(default, borrow)]
    job_set: Option<Str<'a>>,
    /// `job.gang.cardinality` (the upstream engine's legacy path for gangs).
    #[serde(default)]
    gang: Option<MapOnly<GangIn>>,
    /// `job.resources`: quantities as strings only; a number (`"gpu": 1`) gives up to the
    /// strict decoder, which reads it.
    #[serde(default)]
    resources: Option<MapOnly<ResourcesIn<'a>>>,
    /// `job.state`: how the record ends the job.
    #[serde(default, borrow)]
    state: Option<Str<'a>>,
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
        // Exact thousandths: `None` for a text that is no quantity, a negative or an absurd one
        // alike (the strict decoder then says which).
        let milli = |s: Option<Str<'_>>| -> Option<Option<u64>> {
            match s {
                None => Some(None),
                Some(s) => Resources::milli(&s.0).map(Some),
            }
        };
        Some(Resources {
            cpu_milli: milli(self.cpu)?,
            memory: quantity(self.memory)?,
            gpu_milli: milli(self.gpu)?,
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GangIn {
    cardinality: u32,
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
        strings.set(&mut job.job_set, self.job_set);
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
        if let Some(e) = self.state {
            job.state = Some(JobEnd::parse(&e.0)?);
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
