//! A side's contention numbers as a record says them (docs/contention.md): hours of a GPU or
//! a CPU, the splits by name.
//!
//! Owns: [`Side`], [`Resource`], [`InIncidents`] and their conversion from a [`Tally`]. Pure.
//! Must not: count (the sweep does) or format text for people (that is `output`'s).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::replay::device_time::hours;

use super::sweep::{Sums, Tally};

/// One side: `{gpu, cpu, inIncidents, retryRuns, untimedRuns, notPlacedRuns}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Side {
    pub gpu: Resource,
    pub cpu: Resource,
    pub in_incidents: InIncidents,
    pub retry_runs: u64,
    pub untimed_runs: u64,
    pub not_placed_runs: u64,
}

/// The four numbers of one resource, in hours, and the overlap's splits (only the names with
/// a share: the shares add up to `overlapHours`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resource {
    pub retry_hours: f64,
    pub queued_hours: f64,
    pub while_others_waited_hours: f64,
    pub overlap_hours: f64,
    pub overlap_hours_by_waiting_queue: BTreeMap<String, f64>,
    pub overlap_hours_by_retrying_queue: BTreeMap<String, f64>,
    pub overlap_hours_by_pool: BTreeMap<String, f64>,
}

/// The retries after a failed run that ended inside an incident window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InIncidents {
    pub gpu: IncidentHours,
    pub cpu: IncidentHours,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IncidentHours {
    pub retry_hours: f64,
    pub overlap_hours: f64,
}

/// The shares with a part, by name.
fn named(parts: &[u128], names: &[String]) -> BTreeMap<String, f64> {
    parts
        .iter()
        .zip(names)
        .filter(|(part, _)| **part > 0)
        .map(|(part, name)| (name.clone(), hours(*part)))
        .collect()
}

impl Resource {
    fn of(sums: &Sums, tally: &Tally) -> Resource {
        Resource {
            retry_hours: hours(sums.retry),
            queued_hours: hours(sums.queued),
            while_others_waited_hours: hours(sums.while_others_waited),
            overlap_hours: hours(sums.overlap),
            overlap_hours_by_waiting_queue: named(&sums.overlap_by_waiting_queue, &tally.names.queues),
            overlap_hours_by_retrying_queue: named(&sums.overlap_by_retrying_queue, &tally.names.queues),
            overlap_hours_by_pool: named(&sums.overlap_by_pool, &tally.names.pools),
        }
    }
}

impl Side {
    pub fn of(tally: &Tally) -> Side {
        let incidents = |sums: &Sums| IncidentHours {
            retry_hours: hours(sums.in_incidents_retry),
            overlap_hours: hours(sums.in_incidents_overlap),
        };
        Side {
            gpu: Resource::of(&tally.gpu, tally),
            cpu: Resource::of(&tally.cpu, tally),
            in_incidents: InIncidents {
                gpu: incidents(&tally.gpu),
                cpu: incidents(&tally.cpu),
            },
            retry_runs: tally.counts.retry_runs,
            untimed_runs: tally.counts.untimed_runs,
            not_placed_runs: tally.counts.not_placed_runs,
        }
    }
}

/// A plain replay's contention (`simulate`'s one policy): the record's, and the side that
/// policy replays.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfReplay {
    pub recorded: Side,
    pub replayed: Side,
}

/// A comparison's contention: the record's, and each side's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfComparison {
    pub recorded: Side,
    pub baseline: Side,
    pub candidate: Side,
}

impl OfComparison {
    /// The candidate's overlap less the baseline's, GPU's and CPU's, in hours.
    pub fn overlap_change(&self) -> [f64; 2] {
        [
            self.candidate.gpu.overlap_hours - self.baseline.gpu.overlap_hours,
            self.candidate.cpu.overlap_hours - self.baseline.cpu.overlap_hours,
        ]
    }
}
