//! `retryctl watch` (docs/watch.md): follows Lookout's database, replays every job that
//! reaches a terminal state under today's policy and each candidate, and serves the counts as
//! Prometheus metrics, the window's plan as HTML and its health.
//!
//! Owns, each in its file: the flags' checks ([`flags`]; the same for `--emit kubernetes`,
//! which `dispatch` runs instead), the start ([`run()`]: the sides resolved, the `--state` file
//! read at the start, [`state_file`], and written whole: `whole_file`), the process's life
//! ([`live`]: the poller on a thread of its own, the HTTP server on a tokio runtime, stderr as
//! the log, SIGTERM and SIGINT: save, exit 0 within 5 s), the poller as pages → count ([`pages`]
//! read Lookout, [`count`] replays and counts a page, [`poll`] is the loop between them: it
//! waits, commits and reports), the HTTP routes ([`http`]) and the server's bounds
//! ([`listen`]), and what they share ([`shared`]). Must not: count or decide what a job adds
//! up to (that is `crate::watch`), render (that is `output::watch` and `output`'s html sink),
//! or exit the process.
//!
//! A temporary state file a SIGKILL leaves (`.NAME.XXXXXX.tmp` beside it) is never read.

mod count;
mod flags;
mod http;
mod listen;
mod live;
mod pages;
mod poll;
mod run;
mod shared;
mod state_file;

pub use flags::check;
pub use run::run;
