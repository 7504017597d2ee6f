//! One hour of the window's sums (docs/watch.md "A verdict per candidate"): the jobs with a
//! failed run, each candidate's comparison, the failed runs and futile retries by queue, and
//! the failing jobs' mix, as `--state` keeps them.
//!
//! Owns: [`Hour`], [`HOUR`], and the bound on a queue's signatures an hour keeps
//! ([`HOUR_SIGNATURES`], [`add_futile`]). Must not: add a job or judge an hour (that is
//! `window`'s and `hour_kind`'s), or read a clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::replay::compare::Comparison;

use super::metrics::OTHER_SIGNATURE;
use super::mix::HourMix;

/// An hour, in microseconds.
pub const HOUR: i64 = 3_600 * 1_000_000;

/// One hour's sums.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hour {
    /// Jobs counted whose record holds a failed run (a verdict's sample).
    pub failed_jobs: u64,
    /// Each candidate's comparison with today's policy, by its name.
    pub candidates: BTreeMap<String, Comparison>,
    /// The failed runs of the jobs counted, by queue.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_runs: BTreeMap<String, u64>,
    /// The hour was found an incident window, and its failed runs counted as the incident's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incident: bool,
    /// The futile retries of the jobs counted, by queue, then by the signature of the run
    /// retried ([`HOUR_SIGNATURES`] of them at most, the rest under `other`): which of a queue's
    /// signatures have a `signature` label of their own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub futile: BTreeMap<String, BTreeMap<String, u64>>,
    /// The jobs with a failed run by job set, signature and node: what tells an unusual hour's
    /// kind.
    #[serde(default, skip_serializing_if = "HourMix::is_empty")]
    pub mix: HourMix,
}

/// The signatures an hour keeps for a queue, at most: the hour's sums stay bounded whatever
/// the messages.
pub const HOUR_SIGNATURES: usize = 200;

/// Adds `n` futile retries of `signature` to a queue's signatures of an hour.
pub fn add_futile(of: &mut BTreeMap<String, u64>, signature: &str, n: u64) {
    let key = match of.contains_key(signature) || of.len() < HOUR_SIGNATURES {
        true => signature,
        false => OTHER_SIGNATURE,
    };
    *of.entry(key.to_string()).or_default() += n;
}
