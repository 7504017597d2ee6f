//! The jobs `watch` read terminal whose record was not complete yet (docs/watch.md "A job is
//! counted once its record is complete"): Lookout's ingester commits a job's terminal state
//! before its runs' creations and last updates, so a poll can read a job ended while its runs
//! are missing or still running. Each is kept by id and read again at every poll until its
//! record is complete, or until `--settle` after `watch` first read it (its own clock: the
//! job's `last_transition_time` is the event's, older than the row by the ingester's
//! backlog); it is then counted as its record stands.
//!
//! Owns: [`Waiting`] (the jobs, and the queues they belong to, kept once) and [`Wait`]. Must
//! not: read Lookout or a clock: times are given, in microseconds since the Unix epoch.
//!
//! Memory: a job waiting costs its id and 24 bytes (its queue is an index into the queues
//! met), so that 200,000 jobs whose runs are late cost a few tens of MiB, not hundreds.

use std::collections::BTreeMap;

/// One job waiting for its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Its `last_transition_time` (microseconds since the Unix epoch).
    pub at: i64,
    /// When `watch` first read it terminal (its own clock).
    pub since: i64,
    /// Its queue, as an index into [`Waiting::queues`].
    queue: u32,
    /// Its `job.state`.
    pub state: i16,
}

/// The jobs waiting, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    jobs: BTreeMap<Box<str>, Wait>,
    queues: Vec<String>,
}

impl Waiting {
    /// Keeps `job` (of `queue`, ended at `at` in `state`) waiting since `since`; a job waiting
    /// already keeps its first `since`.
    pub fn insert(&mut self, job: &str, queue: &str, at: i64, state: i16, since: i64) {
        if self.jobs.contains_key(job) {
            return;
        }
        let queue = match self.queues.iter().position(|q| q == queue) {
            Some(i) => i,
            None => {
                self.queues.push(queue.to_string());
                self.queues.len() - 1
            }
        };
        self.jobs.insert(
            job.into(),
            Wait {
                at,
                since,
                queue: queue as u32,
                state,
            },
        );
    }

    pub fn contains(&self, job: &str) -> bool {
        self.jobs.contains_key(job)
    }

    pub fn get(&self, job: &str) -> Option<&Wait> {
        self.jobs.get(job)
    }

    /// The queue of `w`.
    pub fn queue_of(&self, w: &Wait) -> &str {
        self.queues.get(w.queue as usize).map_or("", String::as_str)
    }

    pub fn remove(&mut self, job: &str) -> Option<Wait> {
        self.jobs.remove(job)
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Every job waiting, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Wait)> {
        self.jobs.iter().map(|(k, v)| (&**k, v))
    }

    /// The next page of at most `page` ids, in id order, after `after` (from the first when
    /// `None`). A page at a time, so that reading 200,000 jobs again does not copy every id.
    pub fn page_after(&self, after: Option<&str>, page: usize) -> Vec<String> {
        use std::ops::Bound::{Excluded, Unbounded};
        let from = after.map_or(Unbounded, Excluded);
        self.jobs
            .range::<str, _>((from, Unbounded))
            .take(page.max(1))
            .map(|(k, _)| k.to_string())
            .collect()
    }

    /// Forgets the jobs of queues `keep` refuses (no longer watched); how many.
    pub fn retain_queues(&mut self, keep: impl Fn(&str) -> bool) -> usize {
        let before = self.jobs.len();
        let queues = &self.queues;
        self.jobs
            .retain(|_, w| queues.get(w.queue as usize).is_some_and(|q| keep(q)));
        before - self.jobs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_waits_once_from_when_it_was_first_read() {
        let mut w = Waiting::default();
        w.insert("a", "ml", 10, 5, 100);
        w.insert("a", "ml", 10, 5, 200);
        w.insert("b", "batch", 11, 4, 150);
        assert_eq!(w.len(), 2);
        let a = *w.get("a").unwrap();
        assert_eq!((a.at, a.since, a.state), (10, 100, 5));
        assert_eq!(w.queue_of(&a), "ml");
        assert_eq!(w.queue_of(w.get("b").unwrap()), "batch");
        assert_eq!(w.page_after(None, 1), ["a"]);
        assert_eq!(w.page_after(Some("a"), 5), ["b"]);
        assert!(w.page_after(Some("b"), 5).is_empty());
        assert_eq!(w.retain_queues(|q| q == "ml"), 1);
        assert!(w.remove("a").is_some());
        assert!(w.is_empty());
    }
}
