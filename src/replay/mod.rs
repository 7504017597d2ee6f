//! The replay pipeline (docs/simulate.md, docs/what-if.md), as a library: where a bulk `simulate` reads its
//! histories, decodes them, runs them through the engines, counts them into a summary or a
//! comparison, and hands everything to a [`Sink`].
//!
//! ```text
//! source (file, directory, JSON Lines, stdin; later Lookout)  → Entry (a block of lines, …)
//!   → parallel: workers split the lines and
//!     → decode (typed fast path into a reused history; strict re-read only for a failing
//!       line) → FailureHistory
//!     → run: one job through a Simulator (two with --baseline) → JobReport / JobDiff,
//!       counted per unit in the workers where nothing else is printed
//!     → estimate: the trials of docs/estimates.md, counted per unit in the workers
//!   → run: in input order, folded into summary / compare, and handed to a Sink
//!     (sink.rs: begin, job | change, message, end(totals)); changed jobs from the first
//!     Pending one on wait in spool.rs until the class rates are final
//!   → output::{table, records, html, markdown}: the sinks, one per format
//! ```
//!
//! Owns: the order of that stream and its memory bound (a bounded number of entries in
//! flight, whatever the input size), and every count. Must not: format text for people
//! (that is the sinks in `output`), decide exit codes or parse the command line (that is
//! `commands::simulate`), or evaluate (that is `engine`).

pub mod backtest;
pub mod baseline_from;
pub mod categorize;
pub mod compare;
pub mod contention;
pub mod device_time;
#[cfg(test)]
pub mod drawn;
pub mod estimate;
pub mod explained;
mod export_totals;
pub mod fallback;
pub mod incidents;
pub mod json_lines;
pub mod packed;
pub mod parallel;
pub mod partial;
pub mod policy_sets;
pub mod recorded;
pub mod run;
pub mod shard;
pub mod shard_ids;
pub mod sink;
pub mod source;
pub mod spool;
pub mod summary;
pub mod temp_file;

pub use parallel::{Decoded, Processed};
pub use sink::Sink;
pub use source::{Entry, HistorySource, Origin};
