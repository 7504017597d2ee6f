//! What both levels of the fast path share: a line's strings, borrowed from it or copied
//! into a pooled buffer ([`Str`], [`Pool`]), the values parsed from them, a field's value
//! handed to its visitor ([`FieldSeed`]), a struct read from an object only ([`MapOnly`]),
//! and giving up.
//!
//! Owns: the string pool and its bounds, and the parsers of a duration and a decision kind.
//! Must not: accept a value the strict decoder refuses (a value it is not sure of gives up).

use std::borrow::Cow;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{Container, DECISION_KINDS};

/// The most runs, and emptied strings, a `Scratch` keeps between lines: enough for any
/// ordinary history, small enough that one huge line does not pin its memory.
pub(super) const KEEP_RUNS: usize = 256;
pub(super) const KEEP_STRINGS: usize = 1024;
pub(super) const KEEP_CONTAINERS: usize = 256;
/// Larger buffers (a long message) are freed rather than kept.
pub(super) const KEEP_STRING_BYTES: usize = 4096;

/// Emptied strings, and containers of runs that had more, handed out again before
/// allocating (a preempted run after an OOM-killed one: its containers wait here, strings
/// and all, for the next OOM kill).
#[derive(Default)]
pub(super) struct Pool {
    strings: Vec<String>,
    pub(super) containers: Vec<Container>,
}

impl Pool {
    /// `value` as a `String`, in `old`'s buffer or a pooled one.
    pub(super) fn string(&mut self, old: Option<String>, value: Str<'_>) -> String {
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
    pub(super) fn set(&mut self, slot: &mut Option<String>, value: Option<Str<'_>>) {
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
pub(super) struct Str<'a>(pub(super) Cow<'a, str>);

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
    pub(super) fn owned(self) -> String {
        self.0.into_owned()
    }
}

/// Gives up on the fast path (the strict decoder then reads the line and words the error).
pub(super) fn give_up<E: de::Error>() -> E {
    E::custom("not on the fast path")
}

/// `Some(v)` or give up.
pub(super) fn or_give_up<T, E: de::Error>(v: Option<T>) -> Result<T, E> {
    v.ok_or_else(give_up)
}

pub(super) fn parse_duration(s: Option<Str<'_>>) -> Option<Option<GoDuration>> {
    match s {
        None => Some(None),
        Some(s) => GoDuration::parse(&s.0).ok().map(Some),
    }
}

pub(super) fn decision_kind(s: Option<Str<'_>>) -> Option<Option<String>> {
    match s {
        None => Some(None),
        Some(s) => DECISION_KINDS.contains(&&*s.0).then(|| Some(s.owned())),
    }
}

/// Hands one field's value to `line::LineVisitor::field` (or a run's to
/// `runs::RunVisitor::field`).
pub(super) struct FieldSeed<'v, V, F>(pub(super) &'v mut V, pub(super) F);

/// A struct read from a JSON object only. serde's derive also reads a JSON array as a struct,
/// field by field in declaration order (`"job":["j1"]`), which the strict decoder rejects;
/// the fast path must not accept more than it does (fuzz target `jsonl_decode`).
pub(super) struct MapOnly<T>(pub(super) T);

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
