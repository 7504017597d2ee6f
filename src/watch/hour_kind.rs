//! What an hour of the window is (docs/watch.md "Incident windows"): suggest's rule,
//! docs/reference/suggest.md "Incidents", on hours instead of 10-minute steps, by
//! `replay::incidents::kinds`' own functions: the expected count by hour of day once the
//! window's hours fall on 3 UTC days, then an unusual hour's kind by its failing jobs' mix
//! (`mix`: by job set, signature and node, bounded) against the window's.
//!
//! Owns: [`kind_of_hour`], [`active`] (what the gauges say of an hour) and [`Active`]. Must
//! not: add to the hours (`window`'s) or read a clock.

use std::collections::BTreeMap;

use crate::replay::incidents::kinds::{self, Expected, Grid, Top, Tops};
use crate::replay::incidents::Kind;

use super::hour::{Hour, HOUR};
use super::metrics::Busy;
use super::mix::{HourMix, Tally};

/// The hours counted before an hour that it is judged against, at least: a watch that
/// started an hour ago has no rate to call an hour unusual against.
pub const INCIDENT_HOURS_BEFORE: i64 = 24;

/// What the hour of the last job counted is, as the gauges say it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Active {
    /// Not unusual (or not judged yet).
    #[default]
    Usual,
    /// An incident window.
    Incident,
    /// Unusual, and no incident: a job set's burst or a surge of the usual mix.
    Busy(Busy),
}

impl Active {
    pub fn is_incident(self) -> bool {
        self == Active::Incident
    }

    /// The kind of a busy hour.
    pub fn busy(self) -> Option<Busy> {
        match self {
            Active::Busy(b) => Some(b),
            _ => None,
        }
    }
}

/// What the hour holding `at` is, by suggest's rule (docs/reference/suggest.md
/// "Incidents") over the hours from the one holding `from` up to it (an hour with no job
/// counts 0): `k`, its jobs with a failed run, is unusual when `k ≥ 5` and
/// `P(X ≥ k) < 0.01 / B`, `X ~ Poisson(λ)`, `B` the hours judged, `λ` the mean `k` of the
/// same UTC hour of day on the other days once the hours fall on 3 UTC days (else, or with
/// none, the mean of all); an unusual hour's kind is told by its mix against theirs
/// ([`kinds::kind_of`]). `None`: not unusual, or fewer than [`INCIDENT_HOURS_BEFORE`] hours
/// are counted before it.
pub fn kind_of_hour(hours: &BTreeMap<i64, Hour>, at: i64, from: i64) -> Option<Kind> {
    let (hour, first) = (at.div_euclid(HOUR), from.div_euclid(HOUR));
    if hour - first < INCIDENT_HOURS_BEFORE {
        return None;
    }
    let this = hours.get(&(hour * HOUR))?;
    let span: Vec<&Hour> = hours.range(first * HOUR..=hour * HOUR).map(|(_, h)| h).collect();
    let segments: Vec<(i64, i64, u64)> = hours
        .range(first * HOUR..=hour * HOUR)
        .filter(|(_, h)| h.failed_jobs > 0)
        .map(|(at, h)| (at.div_euclid(HOUR), at.div_euclid(HOUR), h.failed_jobs))
        .collect();
    let tests = (hour - first + 1) as u64;
    let expected = Expected::of(Grid::HOURS, &segments, first, hour);
    let unusual = kinds::unusual_at(hour, this.failed_jobs, &expected, tests)?;
    let jobs: u64 = span.iter().map(|h| h.failed_jobs).sum();
    // The hour's top name of a part, and its share of the span's failing jobs.
    let share = |part: fn(&HourMix) -> &Tally| {
        let ((), name, n) = kinds::top(part(&this.mix).named().map(|(k, n)| ((), k, n)))?;
        let of_span: u64 = span.iter().map(|h| part(&h.mix).get(name)).sum();
        Some(Top {
            jobs: n,
            share: of_span as f64 / jobs.max(1) as f64,
        })
    };
    let tops = Tops {
        set: kinds::top(this.mix.sets.named().map(|(k, n)| ((), k, n))).map(|((), name, n)| {
            let (queue, job_set) = kinds::split_set(name);
            (queue, job_set, n)
        }),
        signature: share(|m| &m.signatures),
        node: share(|m| &m.nodes),
        can_tell: can_tell(&span),
    };
    Some(kinds::kind_of(&unusual, tests, &tops))
}

/// What the hour holding `at` is for the gauges, judged from `from`: an incident once its
/// failed runs were counted as one (`HourlySums::merge_counting_incidents`), else its kind.
pub fn active(hours: &BTreeMap<i64, Hour>, at: i64, from: i64) -> Active {
    if hours.get(&(at.div_euclid(HOUR) * HOUR)).is_some_and(|h| h.incident) {
        return Active::Incident;
    }
    match kind_of_hour(hours, at, from) {
        None => Active::Usual,
        Some(Kind::Incident) => Active::Incident,
        Some(Kind::Burst { .. }) => Active::Busy(Busy::Burst),
        Some(Kind::Surge { .. }) => Active::Busy(Busy::Surge),
    }
}

/// Whether the mix of `hours` can be told: their failed runs hold more than one signature, or
/// a node (`kinds::Tops::can_tell`).
fn can_tell(hours: &[&Hour]) -> bool {
    let mut one: Option<&str> = None;
    for h in hours {
        if !h.mix.nodes.is_empty() || h.mix.signatures.other() > 0 {
            return true;
        }
        for (name, _) in h.mix.signatures.named() {
            match one {
                Some(o) if o != name => return true,
                _ => one = Some(name),
            }
        }
    }
    false
}
