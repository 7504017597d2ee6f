//! `retryctl tune`: which retry policy should this cluster run? (docs/tune.md)
//!
//! Load (the template, its varies checked and counted before anything else, each candidate's
//! documents, the baseline) → `tune::sweep` over the history source `commands::replay::source` opens →
//! `tune::rank` → `output::tune`. `--pick N` without a history writes candidate N's documents
//! without a replay; given one, it searches as `--pick recommended` does, and writes candidate
//! N unless N loses a job the baseline saves or breaks a constraint (then exit 1, nothing
//! written; `--force` writes it with a warning), or the search finds the baseline does not
//! explain the record (exit 1; `--force` writes it headed by that reject verdict, which
//! `apply` refuses unless forced). A pick of a template headed by a reject verdict begins
//! with that verdict too.
//!
//! Decision docs/tune.md leaves open: without `--baseline` or `--baseline-from-cluster` the
//! baseline is the template as written, with the template's scheduler config.
//!
//! The rooms, each a concept: `run` (the sequence of steps), `check` (the flags, before
//! anything is read: a run's and `--emit`'s), `arms` (the candidates' policy sets), `record`
//! (what a run records: [`TuneRun`]), `drive` (the search over the opened source), `pick`
//! (`--pick`), `finish` (the ranking, the output and the exit status, in one process and in a
//! merge), `shards` (a sharded tune's merge).
//!
//! Owns: the verb's entry points ([`run()`], [`check()`]). Must not: replay, count, rank or
//! format itself; hold logic of its own (it declares and re-exports).

mod arms;
mod check;
mod drive;
mod finish;
mod pick;
mod record;
mod run;
pub mod shards;

pub use check::{check, Checked};
pub use record::TuneRun;
pub use run::{run, AUTO_CONTENTION_CANDIDATES};
