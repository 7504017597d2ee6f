//! What the decisions so far say about the next run: when it may start and which nodes it
//! avoids (docs/engines.md), for the contradiction checks.
//!
//! Owns: [`Schedule`], [`Avoiding`] and [`NodesTried`] (the nodes of the runs that started,
//! named by the first run on each rather than copied). Must not: decide a run, or write a
//! report's records (that is `record`).

use crate::engine::decision::Avoid;
use crate::engine::job_state::JobState;
use crate::model::failure_history::{FailureHistory, Outcome};

use super::report::JobReport;
use super::words::format_instant;

/// What the decisions so far say about the next run: when it may start, which nodes it
/// avoids (docs/engines.md), for the contradiction checks.
#[derive(Default)]
pub(super) struct Schedule {
    pub(super) eligible_at: u64,
    /// Set by the last retry (`None`: no node is avoided).
    pub(super) avoid: Option<Avoiding>,
}

/// The nodes a retry avoids, named by where they are rather than copied: a copy per retry
/// (and of every node tried, per run) was most of a summary replay's allocations.
#[derive(Debug, Clone, Copy)]
pub(super) enum Avoiding {
    /// As the record of run `from` lists them (`Decision::avoid_nodes`).
    Listed { from: usize },
    /// Left out of the record of run `from` (a summary replay writes no words): docs/engines.md's
    /// list read from the history, as [`Avoid::nodes`] makes it — this run's node,
    /// and for `avoidSameNode` the nodes runs before it started on ([`NodesTried`]).
    Derived { from: usize, avoid: Avoid },
}

impl Avoiding {
    fn from(self) -> usize {
        match self {
            Avoiding::Listed { from } | Avoiding::Derived { from, .. } => from,
        }
    }

    fn contains(self, report: &JobReport, history: &FailureHistory, tried: &mut NodesTried, node: &str) -> bool {
        match self {
            Avoiding::Listed { from } => report.runs[from]
                .decision
                .as_ref()
                .is_some_and(|d| d.avoid_nodes.iter().any(|n| n == node)),
            Avoiding::Derived { from, avoid } => {
                let on = |k: usize| history.runs[k].node.as_deref() == Some(node);
                match avoid {
                    Avoid::Nothing => false,
                    Avoid::ThisNode => on(from),
                    Avoid::EveryNode => {
                        tried.look_at(history, from);
                        on(from) || tried.first_runs().take_while(|&k| k < from).any(on)
                    }
                }
            }
        }
    }
}

/// docs/engines.md: the nodes of the runs that started (first use order, no duplicates), for
/// `avoidSameNode`, named by the first run on each rather than copied, and gathered only
/// when read: by a decision that writes its words, as names (`JobState::nodes_tried`,
/// [`NodesTried::catch_up`]), or by the contradiction check of an untold `avoidSameNode`
/// retry. A summary replay copies no node name, and without `avoidSameNode` compares none.
///
/// The first [`INLINE_NODES`] indices are inline, more on the heap, so that nearly every
/// job allocates nothing for them.
#[derive(Default)]
pub(super) struct NodesTried {
    inline: [usize; INLINE_NODES],
    spill: Vec<usize>,
    /// Nodes so far.
    len: usize,
    /// Runs looked at so far.
    upto: usize,
}

const INLINE_NODES: usize = 8;

impl NodesTried {
    /// The index of the first run on each node, in increasing order.
    fn first_runs(&self) -> impl Iterator<Item = usize> + '_ {
        self.inline[..self.len.min(INLINE_NODES)]
            .iter()
            .chain(&self.spill)
            .copied()
    }

    /// Looks at the runs before run `k` not looked at yet: their nodes, if new and the run
    /// started.
    fn look_at(&mut self, history: &FailureHistory, k: usize) {
        for i in self.upto..k {
            let run = &history.runs[i];
            let Some(node) = run.node.as_ref().filter(|_| run.outcome != Outcome::LeaseReturned) else {
                continue;
            };
            if self.first_runs().any(|j| history.runs[j].node.as_ref() == Some(node)) {
                continue;
            }
            if self.len < INLINE_NODES {
                self.inline[self.len] = i;
            } else {
                self.spill.push(i);
            }
            self.len += 1;
        }
        self.upto = self.upto.max(k);
    }

    /// Brings `state.nodes_tried` up to date for the decision of run `k`: the same list, in
    /// the same order, as names. Never called for a run before one looked at already.
    pub(super) fn catch_up(&mut self, state: &mut JobState, history: &FailureHistory, k: usize) {
        self.look_at(history, k);
        for i in self.first_runs().skip(state.nodes_tried.len()) {
            state.nodes_tried.extend(history.runs[i].node.clone());
        }
    }
}

impl Schedule {
    /// Contradictions between a run's start and the decisions before it: it started before
    /// the retry was eligible, or on a node the last retry avoids.
    pub(super) fn check_start(
        &self,
        report: &mut JobReport,
        history: &FailureHistory,
        tried: &mut NodesTried,
        k: usize,
        started_at: u64,
    ) {
        let submitted = history.job.submitted_at;
        if started_at < self.eligible_at {
            report.contradictions.push(format!(
                "run {k} starts at {}, before the retry became eligible at {}",
                format_instant(started_at, submitted),
                format_instant(self.eligible_at, submitted)
            ));
        }
        if let (Some(node), Some(avoid)) = (&history.runs[k].node, self.avoid) {
            if avoid.contains(report, history, tried, node) {
                report.contradictions.push(format!(
                    "run {k} ran on `{node}`, a node the decision for run {} avoids",
                    avoid.from()
                ));
            }
        }
    }
}
