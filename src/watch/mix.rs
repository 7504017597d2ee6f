//! An hour's failing jobs by what tells an unusual hour's kind (docs/reference/suggest.md
//! "Incidents"): by job set, by the signatures of their failed runs and by the nodes those
//! ran on, each as the failing jobs of a name, so that `watch` tells one job set's burst and a
//! surge of the usual mix from an incident by suggest's own rule (`replay::incidents::kinds`,
//! which `window` applies).
//!
//! Owns: [`JobMix`] (one job's part), [`HourMix`] and [`Tally`], and their bound: an hour
//! keeps the [`HOUR_NAMES`] names of each part with the most failing jobs (ties: the first in
//! name order), the jobs of the others summed in `other`, which counts in no name's share and
//! is never a top one; while a page is added up a part may hold twice as many before it is cut
//! back. Must not: read a clock, or judge an hour.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::signature::text_into;
use crate::replay::incidents::kinds::set_key;

/// The names an hour keeps of each part (job sets, signatures, nodes), at most: the hour's
/// sums stay bounded whatever the job sets, messages and nodes.
pub const HOUR_NAMES: usize = 100;

/// One failing job's part of its hour's mix: its job set (`kinds::set_key` of its queue and
/// `job.jobSet`; `None`: it names none), the distinct signatures of its failed runs and the
/// distinct nodes they ran on, each sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobMix {
    pub set: Option<String>,
    pub signatures: Vec<String>,
    pub nodes: Vec<String>,
}

impl JobMix {
    /// `history`'s part, its signatures as suggest computes them (`model::signature`).
    pub fn of(history: &FailureHistory) -> JobMix {
        let set = history.job.job_set.as_deref().map(|s| {
            let mut key = String::new();
            set_key(history.job.queue.as_deref().unwrap_or_default(), s, &mut key);
            key
        });
        let (mut signatures, mut nodes) = (Vec::new(), Vec::new());
        let (mut text, mut scratch) = (String::new(), String::new());
        for run in history.runs.iter().filter(|r| r.outcome == Outcome::Failed) {
            text_into(run, &mut text, &mut scratch);
            signatures.push(text.clone());
            nodes.extend(run.node.clone());
        }
        for names in [&mut signatures, &mut nodes] {
            names.sort_unstable();
            names.dedup();
        }
        JobMix { set, signatures, nodes }
    }
}

/// The failing jobs of one part of an hour, by name: the names kept, and the jobs of the
/// others.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    named: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "is_zero")]
    other: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Tally {
    /// Adds `n` jobs of `name`.
    pub fn add(&mut self, name: &str, n: u64) {
        match self.named.get_mut(name) {
            Some(m) => *m += n,
            None => {
                self.named.insert(name.to_string(), n);
            }
        }
        // Cut back now and then, not at every new name: a page of unique messages stays
        // linear.
        if self.named.len() > 2 * HOUR_NAMES {
            self.bound();
        }
    }

    /// Adds another tally of the same hour (a page's, into the state's), and keeps the bound.
    pub fn merge(&mut self, other: Tally) {
        for (name, n) in other.named {
            *self.named.entry(name).or_default() += n;
        }
        self.other += other.other;
        self.bound();
    }

    /// Keeps the [`HOUR_NAMES`] names with the most jobs (ties: the first in name order), the
    /// rest into `other`.
    fn bound(&mut self) {
        if self.named.len() <= HOUR_NAMES {
            return;
        }
        let mut all: Vec<(String, u64)> = std::mem::take(&mut self.named).into_iter().collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        self.other += all.drain(HOUR_NAMES..).map(|(_, n)| n).sum::<u64>();
        self.named = all.into_iter().collect();
    }

    /// The names kept, with their jobs, in name order.
    pub fn named(&self) -> impl Iterator<Item = (&str, u64)> {
        self.named.iter().map(|(k, n)| (k.as_str(), *n))
    }

    /// The jobs of `name` (0 when it is not kept).
    pub fn get(&self, name: &str) -> u64 {
        self.named.get(name).copied().unwrap_or(0)
    }

    /// The jobs of the names not kept.
    pub fn other(&self) -> u64 {
        self.other
    }

    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.other == 0
    }
}

/// An hour's failing jobs by job set, by signature and by node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HourMix {
    #[serde(default, skip_serializing_if = "Tally::is_empty")]
    pub sets: Tally,
    #[serde(default, skip_serializing_if = "Tally::is_empty")]
    pub signatures: Tally,
    #[serde(default, skip_serializing_if = "Tally::is_empty")]
    pub nodes: Tally,
}

impl HourMix {
    /// Adds a failing job.
    pub fn add(&mut self, job: &JobMix) {
        if let Some(set) = &job.set {
            self.sets.add(set, 1);
        }
        for s in &job.signatures {
            self.signatures.add(s, 1);
        }
        for n in &job.nodes {
            self.nodes.add(n, 1);
        }
    }

    /// Adds another mix of the same hour.
    pub fn merge(&mut self, other: HourMix) {
        self.sets.merge(other.sets);
        self.signatures.merge(other.signatures);
        self.nodes.merge(other.nodes);
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty() && self.signatures.is_empty() && self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{parse_documents, Resource};

    #[test]
    fn an_hour_keeps_its_hundred_busiest_names_and_sums_the_rest() {
        let mut t = Tally::default();
        // 150 names of 1 job, then `big` with 5: cut back at 201 names, never past.
        for i in 0..250 {
            t.add(&format!("n{i:03}"), 1);
            assert!(t.named.len() <= 2 * HOUR_NAMES);
        }
        t.add("big", 5);
        let mut page = Tally::default();
        page.add("big", 2);
        page.add("n000", 1);
        t.merge(page);
        assert_eq!(t.named.len(), HOUR_NAMES);
        assert_eq!(t.get("big"), 7);
        // Every job is counted once: named or other.
        assert_eq!(t.named().map(|(_, n)| n).sum::<u64>() + t.other(), 250 + 5 + 3);
        // Ties kept by name order: `n000` (2 jobs) and the first 98 of the rest.
        assert_eq!(t.get("n000"), 2);
        assert_eq!(t.get("n098"), 1);
        assert_eq!(t.get("n099"), 0);
    }

    #[test]
    fn a_job_counts_once_for_each_of_its_signatures_and_nodes() {
        let body = r#"{"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
            "job": {"id": "j", "queue": "ml", "jobSet": "sweep-17"},
            "runs": [{"node": "n1", "runFor": "1m", "containers": [{"name": "main", "exitCode": 2, "message": "bad key 17"}]},
                     {"node": "n1", "runFor": "1m", "containers": [{"name": "main", "exitCode": 2, "message": "bad key 18"}]},
                     {"node": "n2", "runFor": "1m", "outcome": "succeeded"}]}"#;
        let Some(Resource::FailureHistory(h)) = parse_documents(body, None).documents.remove(0).resource else {
            panic!("not a history")
        };
        let job = JobMix::of(&h);
        assert_eq!(job.set.as_deref(), Some("ml\nsweep-17"));
        assert_eq!(job.signatures, ["exit:2@main \"bad key <n>\""]);
        assert_eq!(job.nodes, ["n1"]);
        let mut m = HourMix::default();
        m.add(&job);
        m.add(&job);
        assert_eq!(m.sets.get("ml\nsweep-17"), 2);
        assert_eq!(m.nodes.get("n2"), 0);
    }
}
