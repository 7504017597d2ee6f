//! Every queue a changed categorizer reaches (docs/suggest.md "Every queue the change
//! reaches"): the executor's categorizer is the cluster's, so when the proposal changes it,
//! suggest compares every queue of the history, each under its own policies, and says per
//! queue what changes.
//!
//! Owns: the per-queue counts of a comparison ([`ByQueue`], [`QueueCounts`]) and their words.
//! Must not: replay (the comparison's workers hand each job in), read or render.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::engine::job_report::plural;
use crate::engine::JobReport;
use crate::model::failure_history::FailureHistory;
use crate::replay::compare::{Side, Transition};

/// At most this many lost jobs are named per queue.
pub const NAMED: usize = 5;

/// What the proposal changes in one queue's jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueCounts {
    pub queue: String,
    pub jobs: u64,
    pub changed: u64,
    pub rescued: u64,
    pub lost: u64,
    pub to_pending: u64,
    /// The first lost jobs by id (ids sort by submission time as Armada makes them), at most
    /// [`NAMED`]: the same whatever order the workers finish in.
    pub lost_jobs: Vec<String>,
}

impl QueueCounts {
    /// `queue batch: 0 rescued, 10 lost, 0 → Pending; 10 of 40 jobs change`.
    pub fn words(&self) -> String {
        format!(
            "queue {}: {} rescued, {} lost, {} → Pending; {} of {} change",
            self.queue,
            self.rescued,
            self.lost,
            self.to_pending,
            self.changed,
            plural(self.jobs, "job", "jobs")
        )
    }
}

/// The per-queue counts, added to by the comparison's workers.
#[derive(Debug, Default)]
pub struct ByQueue(Mutex<BTreeMap<String, QueueCounts>>);

impl ByQueue {
    /// One job both sides replayed (`replay::run::Inspect`).
    pub fn look(&self, history: &FailureHistory, baseline: &JobReport, candidate: &JobReport) {
        let (b, c) = (Side::of(baseline), Side::of(candidate));
        let queue = history.job.queue.as_deref().unwrap_or_default();
        let Ok(mut all) = self.0.lock() else { return };
        let q = all.entry(queue.to_string()).or_insert_with(|| QueueCounts {
            queue: queue.to_string(),
            ..QueueCounts::default()
        });
        q.jobs += 1;
        if !b.differs(&c) {
            return;
        }
        q.changed += 1;
        match Transition::between(b.final_state, c.final_state) {
            Some(Transition::Rescued) => q.rescued += 1,
            Some(Transition::Lost) => {
                q.lost += 1;
                let id = &history.job.id;
                let at = q.lost_jobs.partition_point(|j| j < id);
                if at < NAMED {
                    q.lost_jobs.insert(at, id.clone());
                    q.lost_jobs.truncate(NAMED);
                }
            }
            Some(Transition::ToPending) => q.to_pending += 1,
            _ => {}
        }
    }

    /// Every queue's counts, by name.
    pub fn into_counts(self) -> Vec<QueueCounts> {
        self.0.into_inner().unwrap_or_default().into_values().collect()
    }
}

/// The queues the baseline's documents name that use a category the proposal changes, and of
/// which the history holds no job (`seen`: the queues it holds). A queue uses every category:
/// its policies name it, or their default decides its runs.
pub fn unseen(named: &[&str], seen: &[QueueCounts]) -> Vec<String> {
    named
        .iter()
        .filter(|q| !seen.iter().any(|s| s.queue == **q))
        .map(|q| q.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_unseen_queues() {
        let q = QueueCounts {
            queue: "batch".into(),
            jobs: 40,
            changed: 10,
            lost: 10,
            ..QueueCounts::default()
        };
        assert_eq!(
            q.words(),
            "queue batch: 0 rescued, 10 lost, 0 → Pending; 10 of 40 jobs change"
        );
        assert_eq!(unseen(&["batch", "eval", "ml"], &[q]), ["eval", "ml"]);
    }
}
