//! Retries while others waited (docs/contention.md): what retries ran while other jobs'
//! requests waited in the same pool, read from the record's times.
//!
//! From a stream of jobs, for GPU and for CPU: `retryHours` (Σ over retries of request ×
//! length), `queuedHours` (∫ Σ_p `Q_p`), `whileOthersWaitedHours` (Σ over retries of request
//! × the time during which another job's requests wait in its pool) and `overlapHours`
//! (Σ_p ∫ min(`R_p`, `Q_p`) dt), the overlap split exactly by waiting queue, retrying queue
//! and pool, and the part of the retries after a failed run that ended inside an incident
//! window. `Q_p(t)`: the requests of the jobs waiting in pool `p`; `R_p(t)`: of the retries
//! (every run after a job's first) running there. The record's numbers take every recorded
//! run ([`Started::record`]); a side's, the recorded runs that side starts, with the waits
//! before them, and its runs beyond the record counted as not placed.
//!
//! ```text
//! job  → Job (job.rs: the runs the record holds, timed, pooled;         in a worker, its
//!        names numbered: run::Taken, then again in the history's Names)  unit's names
//!      → events (events.rs: waits and retries),                          in input order
//!        each once, for the sides that start its run (collect.rs: Sides)
//!      → Spill (spill.rs: an external sort by time, every side at once)
//!      → Sweep (sweep.rs: one a class of sides handed the same events,    once, at the end
//!        each pool settled at its own events) → Tally
//!      → Side (side.rs: hours, by name)
//! ```
//!
//! **Why a sweep over sorted events, and an external sort.** The sums are integrals over time
//! of what waits and runs at once in a pool, so they need the record in time order; a history
//! comes in job order, and one job's life spans its whole record. Holding every job's
//! intervals would grow with the history. The events are sorted instead: in memory while
//! they fit one chunk (a test, a small record: no file), else chunk by chunk into one
//! anonymous temporary file and merged back (spill.rs). The sweep then holds one state a
//! pool: each queue's waiting and retrying requests there, sums rather than runs. So memory
//! is a fixed chunk plus the pools and queues, whatever the number of jobs or of runs that
//! overlap in time; the temporary file grows with the history. Sides (a comparison's, `tune`'s
//! candidates) start the record's runs of a job or fewer of them, with the same events, so
//! each event of a job is written once, tagged with the set of sides that start its run,
//! sorted once, and handed to the sweep of each side of the set: the file and the sort grow
//! with the record's events, not with the number of sides. The replay's spool of changed
//! jobs and suggest's copy keep input order, which is not the order needed here, so neither
//! is reused; the windows of `incidents` come from the whole history too, and are given to
//! the sweep at the end ([`Contention::finish`]), which is why an event carries the time of
//! the failed run before its retry rather than a decision.
//!
//! Owns: the times of docs/contention.md, the events, their sort, the sweep and the numbers.
//! Pure but for `spill` (the temporary file): no clock, no environment. Must not: replay a
//! policy (a side's runs are its caller's, from the replay) or format for people (`output`).

mod collect;
mod events;
mod job;
mod side;
mod spill;
mod sweep;

pub use collect::{tally, Contention, Sides};
pub use events::{events_started, Change, Counts, Event, Kind, Names, Widths};
pub use job::{each_run, requests, run_spans, Job, JobRuns, Run, RunSpan, Started, DEFAULT_POOL};
pub use side::{InIncidents, IncidentHours, OfComparison, OfReplay, Resource, Side};
pub use spill::Spill;
pub use sweep::{Sums, Sweep, Tally};

#[cfg(test)]
mod tests;
