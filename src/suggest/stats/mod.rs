//! What suggest learns from a history (docs/reference/suggest.md "Per signature"): per
//! signature, its failed runs, jobs, trials and successes by depth, what today's
//! categorizer recorded, what the baseline decided, GPU- and CPU-hours, and nodes; per node,
//! its runs and failures (the suspect nodes' counts).
//!
//! One concern a file: [`UnitLearned`] (`unit`: what a worker's unit of jobs adds), one
//! signature's counts ([`SignatureStats`], `signature`), [`Learned`] (`learned`: the fold of
//! the units, in input order, so that the 10,000 signatures kept are the first met in the
//! source whatever the workers), and a shard's learning as its partial holds it (`shard`).
//! The baseline's decisions per signature are [`Current`] (counted from the comparison's own
//! decision records by `commands::suggest`). A sharded suggest (docs/past-one-machine.md)
//! learns each shard's share ([`Learned::of_a_shard`]) and hands it to `merge`: its first
//! 10,000 signatures as a [`ShardLearned`] (the first shard's `other` with them), a later
//! shard's signatures past those as [`PastSignature`]s, 10,000 at most at a time, so that a
//! shard holds about what one process holds whatever the signatures. The merge folds the
//! shards in the source's order ([`Learned::merge_shard`]), where the cap is applied as one
//! process applies it, then adds the rest where one process counts it
//! ([`Learned::merge_past`]). Pure: no I/O.
//!
//! This file declares and re-exports.

mod learned;
mod shard;
mod signature;
mod unit;

pub use learned::Learned;
pub use shard::{PastSignature, ShardLearned};
pub use signature::{
    day_of, pooled, rate_of, CollidedCost, Current, FutileDays, Hours, Map, NodeStats, SignatureStats, MAX_SIGNATURES,
    OTHER,
};
pub use unit::{UnitLearned, NO_CATEGORY};
