//! `retryctl suggest`'s learning (docs/reference/suggest.md): a failed run's signature, the
//! counts per signature and per node, the proposed rules and their documents, the suspect
//! nodes, and the verdict on the proposal.
//!
//! Pure, like `tune`'s ranking: no I/O, clock or environment. The replays it reads (the
//! baseline's decisions, the comparison of the proposal) are `replay`'s: pass 1's fold
//! ([`learn`]) replays one job's decisions as the baseline's side sees it
//! (`replay::run::as_side`, `Simulator::simulate_decisions`), and `commands::suggest`
//! drives the passes; nothing here matches rules or decides a run itself.

pub mod check;
pub mod documents;
pub mod exits;
pub mod incidents;
pub mod learn;
pub mod nodes;
pub mod pattern;
pub mod propose;
pub mod queues;
pub mod stats;
pub mod today;
pub mod verdict;
