//! Which jobs got the policies given on the command line instead of their queue's, and
//! which missing queues to report (each once, in input order).
//!
//! Owns: [`Fallback`], [`fallback`] and the fold [`Fallbacks`], shared by the replay's fold
//! (`run`) and a partial result's records (`partial`), which `run` writes: apart from both,
//! so that neither imports the other for it. Must not: format text or do I/O.

use std::collections::HashSet;

use crate::engine::simulator::Simulator;
use crate::model::failure_history::FailureHistory;

/// Whether a job got the policies given on the command line (`--retry-policy`, or every
/// policy) instead of its queue's: `None` when its queue was given.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Fallback {
    /// The job names no queue.
    NoQueue,
    /// The job's queue is not among the documents.
    Missing(String),
}

pub fn fallback(sim: &Simulator, history: &FailureHistory) -> Option<Fallback> {
    match history.job.queue.as_deref() {
        None => Some(Fallback::NoQueue),
        Some(q) if sim.has_queue(q) => None,
        Some(q) => Some(Fallback::Missing(q.to_string())),
    }
}

/// Folds [`Fallback`]s in input order: which missing queue to report (each once), and
/// whether the given policies were used at all.
#[derive(Debug, Default)]
pub struct Fallbacks {
    seen: HashSet<String>,
    pub used_given: bool,
}

/// Distinct missing queues reported at most (a bad file must not fill the memory).
const MAX_REPORTED_QUEUES: usize = 1000;

impl Fallbacks {
    /// The missing queue to report now, if this is its first job.
    pub fn add(&mut self, f: Option<Fallback>) -> Option<String> {
        match f? {
            Fallback::NoQueue => {
                self.used_given = true;
                None
            }
            Fallback::Missing(q) => {
                self.used_given = true;
                (self.seen.len() < MAX_REPORTED_QUEUES && !self.seen.contains(&q)).then(|| {
                    self.seen.insert(q.clone());
                    q
                })
            }
        }
    }
}
