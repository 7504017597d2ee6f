//! The check of a proposal on its comparison's own replay (docs/reference/suggest.md "The
//! check"): per proposed rule, the runs of its signature that another rule decided
//! (`shadowedRuns`).
//!
//! Owns: reading a job's decision records against the learned signatures. Pure: it is
//! handed each job's reports by the replay and never replays or matches itself; workers call
//! it at once, so its counts are atomics.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::job_report::RuleLabel;
use crate::engine::{JobReport, RuleRef};
use crate::model::failure_history::{FailureHistory, Outcome};

use super::propose::Proposed;
use super::stats::Learned;
use crate::model::signature::{failed_containers, text_into};

/// What pass 2 reads off the comparison's own decision records: that every run of a
/// proposed signature (with at most one failed container) is decided by that signature's
/// rule.
pub struct RuleCheck<'l> {
    learned: &'l Learned,
    /// By signature slot ([`Learned::slot_of`]; `other` last): the proposed rule's slot in
    /// `rules` and the index of the rule that should decide its runs.
    rules: Vec<Option<(usize, usize)>>,
    texts: Vec<String>,
    shadowed: Vec<AtomicU64>,
    policy: String,
}

thread_local! {
    /// A worker's buffers for a run's signature text and template.
    static TEXT: std::cell::RefCell<(String, String)> = const { std::cell::RefCell::new((String::new(), String::new())) };
}

impl<'l> RuleCheck<'l> {
    /// `rule_index`: upstream, per rule of `rules`, the v1beta1 rule that decides it (rules
    /// sharing a category share one); the design's rules are their own.
    pub fn new(rules: &[Proposed], rule_index: Option<&[usize]>, policy: &str, learned: &'l Learned) -> RuleCheck<'l> {
        let mut slots = vec![None; learned.signatures.len() + 1];
        for (k, r) in rules.iter().enumerate() {
            let index = rule_index.map_or(k, |ix| ix[k]);
            // `other` gets no rule: its slot is the last.
            let slot = learned.slot_of(&r.text).min(learned.signatures.len());
            slots[slot] = Some((k, index));
        }
        RuleCheck {
            learned,
            rules: slots,
            texts: rules.iter().map(|r| r.text.clone()).collect(),
            shadowed: rules.iter().map(|_| AtomicU64::new(0)).collect(),
            policy: policy.to_string(),
        }
    }

    /// Counts one job both sides replayed (`replay::run::Inspect`).
    pub fn look(&self, history: &FailureHistory, _baseline: &JobReport, candidate: &JobReport) {
        let mut c = candidate.runs.iter().peekable();
        TEXT.with(|buf| {
            let (text, scratch) = &mut *buf.borrow_mut();
            for (k, run) in history.runs.iter().enumerate() {
                if run.outcome != Outcome::Failed {
                    continue;
                }
                let c_rec = c.find(|r| r.index >= k).filter(|r| r.index == k);
                let Some(d) = c_rec.and_then(|r| r.decision.as_ref()) else {
                    continue;
                };
                if failed_containers(run) > 1 {
                    continue;
                }
                // No rule decided (a global limit, a preemption upstream ends the job): no
                // rule took the run from its own.
                let Some(label) = RuleLabel::of(&candidate.policies, d) else {
                    continue;
                };
                text_into(run, text, scratch);
                let slot = self.learned.slot_of(text);
                let Some((rule, want)) = self.rules[slot.min(self.rules.len() - 1)] else {
                    continue;
                };
                if label.policy != self.policy || label.rule != RuleRef::Index(want) {
                    self.shadowed[rule].fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }

    /// Per proposed rule, the runs of its signature another rule decided.
    pub fn shadowed(&self) -> Vec<(String, u64)> {
        self.texts
            .iter()
            .zip(&self.shadowed)
            .map(|(t, n)| (t.clone(), n.load(Ordering::Relaxed)))
            .collect()
    }
}
