//! `retryctl watch` (docs/watch.md): today's policy and the candidates, on Lookout's live
//! record, as counters. What the command's loop, HTTP and database are for, decided here.
//!
//! Owns: [`job`] (one job replayed under every side and added to the counters), [`metrics`]
//! (the one table of families, and their series), [`cursor`] (where the record is read from
//! and which jobs were counted), [`waiting`] (the jobs read before their record was
//! complete), [`late`] (the jobs Lookout wrote behind the span each poll reads again),
//! [`window`] (the last `--window` as hourly sums, which a candidate's verdict is
//! judged on; an [`hour`] of them), [`hour_kind`] (what an hour is, by suggest's incident
//! rule), [`mix`] (an hour's failing
//! jobs by job set, signature and node, bounded), [`state`] (what `--state` holds, as text) and [`schedule`] (the wait after a
//! poll, `/healthz`). Pure, as `replay` is: no I/O, clock, environment or randomness; the
//! command (`commands::watch`) polls, serves and writes the file, `output::watch` renders
//! the text format. Reads `replay` (its replay of a job under a side, its comparison of two)
//! and `engine`; imports nothing above it.

pub mod cursor;
pub mod hour;
pub mod hour_kind;
pub mod job;
pub mod late;
pub mod metrics;
pub mod mix;
pub mod schedule;
pub mod state;
pub mod waiting;
pub mod window;
