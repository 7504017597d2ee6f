//! The replay pipeline (SPEC §3.2, §3.4), as a library: where a bulk `simulate` reads its
//! histories, decodes them, runs them through the evaluator, and folds them into a summary
//! or a comparison.
//!
//! ```text
//! source (file, directory, JSON Lines, stdin; later Lookout)  → Entry (a block of lines, …)
//!   → run: workers split the lines and
//!     → decode (typed fast path into a reused history; strict re-read only for a failing
//!       line) → FailureHistory
//!     → one job through a Simulator → JobReport (parallel, order kept)
//!   → summary / compare (folded in input order; per unit in the workers when only the
//!     summary is printed) → output::simulate (every format)
//! ```
//!
//! Owns: the order of that stream and its memory bound (a bounded number of entries in
//! flight, whatever the input size). Must not: format text for people (that is
//! `output::simulate`), decide exit codes or parse the command line (that is
//! `commands::simulate`), or evaluate (that is `engine`).

pub mod compare;
pub mod decode;
pub mod run;
pub mod source;
pub mod summary;

pub use run::{Job, Processed};
pub use source::{Entry, HistorySource, Origin};
