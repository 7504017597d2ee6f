//! How the reports group what they list: the changed jobs by transition ([`GROUPS`],
//! [`Listed`]: kept in bounded memory and shared fairly when a list is cut), the failure
//! classes ([`class_rows`]) and the rules ([`rule_rows`]).
//!
//! Owns: which rows a report lists, and in which order. Must not: render a row, or count
//! jobs (every number comes from the replay's totals).

use crate::replay::compare::ClassChanges;
use crate::replay::compare::{JobDiff, Transition};
use crate::replay::estimate::{FailureClass, Fit, Rate, Tally, MAX_CLASSES};
use crate::replay::sink::Estimates;
use crate::replay::summary::Summary;

/// Changed jobs the table lists per transition, unless `--all-changes`: a screenful.
pub const LISTED_PER_TRANSITION: usize = 20;

/// The groups of changed jobs, in the order the plan names them.
pub const GROUPS: [&str; 5] = ["rescued", "lost", "toPending", "other", "retries"];

/// The group of a changed job ([`GROUPS`]).
pub fn group_of(d: &JobDiff) -> usize {
    match d.transition() {
        Some(Transition::Rescued) => 0,
        Some(Transition::Lost) => 1,
        Some(Transition::ToPending) => 2,
        Some(Transition::Other) => 3,
        None => 4,
    }
}

/// Changed jobs kept per group ([`GROUPS`]) up to a cap each, in input order, and how many
/// were not: what a format that cuts its list short shows, in bounded memory.
#[derive(Debug)]
pub struct Listed<T> {
    pub groups: [(Vec<T>, u64); 5],
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            groups: Default::default(),
        }
    }
}

impl<T> Listed<T> {
    /// Keeps `make()` in `d`'s group unless it holds `cap` already.
    pub fn push(&mut self, d: &JobDiff, cap: usize, make: impl FnOnce() -> T) {
        let (kept, more) = &mut self.groups[group_of(d)];
        if kept.len() < cap {
            kept.push(make());
        } else {
            *more += 1;
        }
    }

    /// Every job seen in group `g`.
    pub fn total(&self, g: usize) -> u64 {
        self.groups[g].0.len() as u64 + self.groups[g].1
    }

    /// At most `n` of the kept jobs, shared fairly between the groups (round robin, so
    /// that 5 lost jobs are not drowned by 90,000 rescued), each group in input order.
    pub fn fair(&self, n: usize) -> [&[T]; 5] {
        let mut take = [0usize; 5];
        let mut left = n;
        while left > 0 {
            let before = left;
            for (g, (kept, _)) in self.groups.iter().enumerate() {
                if left > 0 && take[g] < kept.len() {
                    take[g] += 1;
                    left -= 1;
                }
            }
            if left == before {
                break;
            }
        }
        std::array::from_fn(|g| &self.groups[g].0[..take[g]])
    }
}

/// `(policy/rule, retries granted, permanent failures)` of every rule (or `(decision kind)`)
/// that decided a run, by label.
pub fn rule_rows(s: &Summary) -> Vec<(String, u64, u64)> {
    let (retries, failures) = (s.retries_by_rule(), s.failures_by_rule());
    let mut keys: Vec<&String> = retries.keys().chain(failures.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let n = |m: &std::collections::BTreeMap<String, u64>| m.get(k).copied().unwrap_or(0);
            (k.clone(), n(&retries), n(&failures))
        })
        .collect()
}

/// One row of a per-failure-class table: the class's trials (docs/estimates.md) and its jobs.
#[derive(Debug, Clone)]
pub struct ClassRow {
    /// `None`: jobs with no failed run (they have no trials).
    pub class: Option<FailureClass>,
    /// The jobs of the classes past the first [`MAX_CLASSES`], together.
    pub rest: bool,
    pub tally: Tally,
    pub jobs: ClassChanges,
}

impl ClassRow {
    /// The class's name for people.
    pub fn name(&self) -> String {
        match &self.class {
            _ if self.rest => format!("(other classes, past the first {MAX_CLASSES})"),
            Some(c) => c.to_string(),
            None => "(no failed run)".to_string(),
        }
    }

    /// The class's rate at any depth (its own from 5 trials, else every class's); `None`
    /// for the classes past the cap or without a single trial.
    pub fn rate(&self, e: &Estimates) -> Option<Rate> {
        if self.rest {
            return None;
        }
        e.rates.rate(self.class.as_ref(), 0, Fit::All)
    }
}

/// Class rows a report lists at most, besides the classes of changed or Pending jobs.
pub const MAX_CLASS_ROWS: usize = 200;

/// The classes of changed or Pending jobs, and the classes with the most trials up to
/// [`MAX_CLASS_ROWS`] rows in all, sorted by class; then the classes past the cap together
/// (when they have jobs). Also how many classes with trials are not listed.
pub fn class_rows(e: &Estimates) -> (Vec<ClassRow>, usize) {
    let mut rows: Vec<ClassRow> = e
        .by_class
        .rows()
        .into_iter()
        .map(|(class, jobs)| ClassRow {
            class: class.cloned(),
            rest: false,
            tally: e.rates.tally_of(class),
            jobs,
        })
        .collect();
    let mut others: Vec<(FailureClass, Tally)> = e
        .rates
        .trials()
        .classes()
        .filter_map(|(c, t)| Some((c?, t.total(Fit::All))))
        .filter(|(c, _)| !rows.iter().any(|r| r.class.as_ref() == Some(c)))
        .collect();
    // Most trials first; the sort is stable, so equal counts keep the class order.
    others.sort_by_key(|(_, t)| std::cmp::Reverse(t.trials));
    let room = MAX_CLASS_ROWS.saturating_sub(rows.len()).min(others.len());
    let hidden = others.len() - room;
    rows.extend(others.into_iter().take(room).map(|(c, t)| ClassRow {
        class: Some(c),
        rest: false,
        tally: t,
        jobs: ClassChanges::default(),
    }));
    rows.sort_by(|a, b| a.class.cmp(&b.class));
    if e.by_class.rest != ClassChanges::default() {
        rows.push(ClassRow {
            class: None,
            rest: true,
            tally: Tally::default(),
            jobs: e.by_class.rest,
        });
    }
    (rows, hidden)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::Final;
    use crate::model::GoDuration;
    use crate::replay::compare::Side;

    fn diff(from: Final, to: Final) -> JobDiff {
        let side = |final_state| Side {
            final_state,
            retries: 0,
            delay: GoDuration::ZERO,
            runs: 1,
            runs_left: 0,
            compute: GoDuration::ZERO,
        };
        JobDiff {
            job: String::new(),
            baseline: side(from),
            candidate: side(to),
            compute_added: GoDuration::ZERO,
            compute_removed: GoDuration::ZERO,
            resources: None,
        }
    }

    /// 90 rescued, 2 lost, 30 → Pending: 10 rows go round the groups, so the 2 lost jobs
    /// are listed, and the rest is shared by the others in input order.
    #[test]
    fn a_fair_share_lists_every_group() {
        let mut listed: Listed<usize> = Listed::default();
        let mut n = 0;
        for (count, from, to) in [
            (90, Final::Failed, Final::Succeeded),
            (2, Final::Succeeded, Final::Failed),
            (30, Final::Failed, Final::Pending),
        ] {
            for _ in 0..count {
                listed.push(&diff(from, to), 50, || n);
                n += 1;
            }
        }
        assert_eq!((listed.total(0), listed.total(1), listed.total(2)), (90, 2, 30));
        assert_eq!(listed.groups[0].1, 40);
        let shown = listed.fair(10);
        assert_eq!(shown[0], [0, 1, 2, 3]);
        assert_eq!(shown[1], [90, 91]);
        assert_eq!(shown[2], [92, 93, 94, 95]);
        assert!(shown[3].is_empty() && shown[4].is_empty());
        // More rows than kept: every kept job.
        assert_eq!(listed.fair(1000).iter().map(|g| g.len()).sum::<usize>(), 50 + 2 + 30);
    }
}
