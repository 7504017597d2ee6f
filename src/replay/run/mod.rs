//! The replay, driven end to end: a source's histories → decode → one engine per side →
//! counting → a `Sink`, in input order.
//!
//! Owns: [`replay`] (a plain replay folded into a `Summary`) and [`compare`] (`--baseline`:
//! every job under two Simulators, folded into a `Comparison`), each the whole path from a
//! [`HistorySource`](super::source::HistorySource) to `Sink::end`: what each worker computes
//! for a job (only what the sink `Needs`), the per-unit partial summaries, the count of jobs
//! that could not be replayed, which missing queues to report (once each); and [`replay_job`]
//! (one history under one Simulator: a policy set plus its engine, so that `--baseline` runs
//! each side with its own). Must not: format text for people or write output (that is the
//! sink's), decide exit codes (the caller reads them off the totals), or parse the command
//! line.
//!
//! One part a file: this one declares and re-exports; `options` (what a replay is given:
//! [`Options`], and [`NoAnswer`]); `shared` (what it returns: [`Out`], [`Replayed`],
//! [`Compared`]; and how an entry or a message reaches the sink);
//! `counts` (what the workers count and the emitting side folds: [`TrialCount`],
//! [`CompareTally`], [`Folded`]); `plain` ([`replay`], [`ReplayFold`]); `baseline`
//! ([`compare`], [`CompareFold`]); `compared` (one job under every side: [`compare_job`]);
//! `side` (the per-side step, classify → replay → runs left, collisions → restore, that
//! `compare_job`, the plain replay and `tune`'s sweep run: [`replay_side`], [`as_side`]);
//! `job` (one job's replay and its estimates: [`replay_job`], [`runs_left`]); `contention`
//! (each side's runs as the contention sweep reads them, collected in input order and swept
//! at the end).

pub use super::fallback::{fallback, Fallback, Fallbacks};

mod baseline;
mod compared;
mod contention;
mod counts;
mod job;
mod options;
mod plain;
mod shared;
mod side;

pub use baseline::{compare, compare_inspected, CompareFold, Inspect};
pub use compared::{compare_job, Asks, JobCompared, SideCounts};
pub use contention::{started, Collect, Taken};
pub use counts::{tally_job, tally_job_with, CompareTally, Finished, Folded, IncidentCount, TrialCount, LOST_NAMED};
pub use job::{replay_job, replay_job_detailed, runs_left, runs_left_after, runs_left_matched, JobFacts};
pub use options::{NoAnswer, Options};
pub use plain::{replay, ReplayFold};
pub use shared::{record, Compared, NotReplayed, Out, Replayed};
pub use side::{as_side, replay_classified, replay_side, SideAsks, SideReplayed};

#[cfg(test)]
mod tests;
