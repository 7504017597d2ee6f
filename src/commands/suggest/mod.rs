//! `retryctl suggest`: a retry policy learned from the cluster's own failures
//! (docs/reference/suggest.md).
//!
//! Check ([`check()`]: the flags; the resolved sides) → load (the baseline side and the
//! deployed categorizer, `commands::replay::sides`; the history's source,
//! `commands::replay::source`) → learn (`learn`: pass 1, every job's
//! failed runs counted and the baseline replayed, `suggest::learn`'s fold) → propose
//! (`suggest::propose`, and `propose`: the rules and the default; `proposal`: today's policy
//! edited, as documents read back through `validate`'s reader) → compare (`compare`: pass 2,
//! the what-if of `simulate --baseline` with the proposal as the candidate, its rules
//! checked on the candidate's own decision records; the verdict) → `output::suggest`, with
//! the commands to run next (`next`). Must not: match rules, decide runs or format output
//! itself.
//!
//! Each step is a free function over the fields it reads, as `commands::simulate` is
//! written: `drive` (one process: [`run()`]), `conclude` (what one process and a merge share
//! after pass 1), and the steps beside them; `given` holds what a run resolved once. This
//! file declares and re-exports.
//!
//! Sharded (docs/past-one-machine.md): a shard (`--shard I/N -o partial`) runs pass 1 over
//! its share and writes its learning; `merge` folds the shards ([`shards::SuggestFold`]) and
//! calls [`shards::merge`], which loads the inputs again through the same `resolve` and ends
//! through the same `conclude` as one process: no second copy of the proposal, pass 2 or
//! rendering.
//!
//! Decisions the docs leave open:
//! - every source is read once: pass 1 copies its jobs, packed, with what it could not read
//!   (`replay::source::copy`), and pass 2 replays the copy, saying and counting what could not
//!   be read as `simulate` does (a file changed meanwhile changes nothing);
//! - with `--backtest-at`, `proposal.comparison` is the proposal's effect on the whole
//!   history (as `simulate` would print it), and `backtest` the jobs at or after the time;
//! - `-o policy` replays the proposal too, for its verdict, and prints only the documents;
//! - `--queue` selects the queue's jobs from any source (docs/simulate.md "Inputs") and names
//!   the Queue `-o policy` prints: the baseline's Queue of that name with the proposal first
//!   in its list, else a new one;
//! - a shard lists no entry that cannot be read: the merge's pass 2 says it (one process
//!   says it in pass 2 too); a later shard's entries are its signatures past its
//!   first 10,000, written as pass 1 goes; `--shard` without `-o partial` is a usage error.

mod check;
mod compare;
mod conclude;
mod drive;
mod given;
mod incidents;
mod learn;
mod next;
mod proposal;
mod propose;
mod run;
pub mod shards;

pub use check::check;
pub use drive::run;
pub use run::SuggestRun;
