//! The check of a proposal on its comparison's own replay (docs/reference/suggest.md "The
//! check"): per signature, the baseline's decision for each failed run of a train job
//! (`current`, `undecided`), and per proposed rule, the runs of its signature that another
//! rule decided (`shadowedRuns`).
//!
//! Owns: reading a job's two decision records against the learned signatures. Pure: it is
//! handed each job by the replay (`replay::run::compare_inspected`) and never replays or
//! matches itself; workers call it at once, so its counts are atomics and one lock per job.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::engine::job_report::RuleLabel;
use crate::engine::simulator::Simulator;
use crate::engine::{DecisionKind, JobReport, RuleRef};
use crate::model::failure_history::{FailureHistory, Outcome, Timestamp};
use crate::model::policy::Action;

use super::propose::Proposed;
use super::signature::{failed_containers, text_into};
use super::stats::{Current, Learned};

/// What pass 2 reads off the comparison's own decision records: the baseline's decision for
/// each failed run of a train job (by signature), and the check that every run of a
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
    /// The baseline's policies by name (a decision names its policy by its list's index).
    baseline_policies: HashMap<String, u32, Fold>,
    policy_names: Vec<String>,
    /// Per signature slot (`usize::MAX`, other, last): decisions counted.
    current: Mutex<HashMap<usize, HashMap<CurKey, u64, Fold>, Fold>>,
    backtest_at: Option<Timestamp>,
}

/// The hasher of the maps a run is counted into (keys are this process's own, not input an
/// adversary picks to collide).
type Fold = foldhash::fast::RandomState;

/// A baseline decision, without its text: the policy by index into the baseline's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum CurKey {
    Rule(u32, RuleRef, Action),
    Kind(DecisionKind, Action),
    Undecided,
}

thread_local! {
    /// A worker's buffers for a run's signature text and template.
    static TEXT: std::cell::RefCell<(String, String)> = const { std::cell::RefCell::new((String::new(), String::new())) };
}

impl<'l> RuleCheck<'l> {
    /// `rule_index`: upstream, per rule of `rules`, the v1beta1 rule that decides it (rules
    /// sharing a category share one); the design's rules are their own.
    pub fn new(
        rules: &[Proposed],
        rule_index: Option<&[usize]>,
        policy: &str,
        learned: &'l Learned,
        baseline: &Simulator,
        backtest_at: Option<Timestamp>,
    ) -> RuleCheck<'l> {
        let mut slots = vec![None; learned.signatures.len() + 1];
        for (k, r) in rules.iter().enumerate() {
            let index = rule_index.map_or(k, |ix| ix[k]);
            // `other` gets no rule: its slot is the last.
            let slot = learned.slot_of(&r.text).min(learned.signatures.len());
            slots[slot] = Some((k, index));
        }
        let policy_names: Vec<String> = baseline.policies().map(|p| p.name.clone()).collect();
        RuleCheck {
            learned,
            rules: slots,
            texts: rules.iter().map(|r| r.text.clone()).collect(),
            shadowed: rules.iter().map(|_| AtomicU64::new(0)).collect(),
            policy: policy.to_string(),
            baseline_policies: policy_names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i as u32))
                .collect(),
            policy_names,
            current: Mutex::new(HashMap::default()),
            backtest_at,
        }
    }

    /// Counts one job both sides replayed (`replay::run::Inspect`).
    pub fn look(&self, history: &FailureHistory, baseline: &JobReport, candidate: &JobReport) {
        let train = match (self.backtest_at, history.job.submitted_at) {
            (Some(at), Some(s)) => s < at,
            _ => true,
        };
        let mut counted: Vec<(usize, CurKey)> = Vec::new();
        let (mut b, mut c) = (baseline.runs.iter().peekable(), candidate.runs.iter().peekable());
        TEXT.with(|buf| {
            let (text, scratch) = &mut *buf.borrow_mut();
            for (k, run) in history.runs.iter().enumerate() {
                if run.outcome != Outcome::Failed {
                    continue;
                }
                let b_rec = b.find(|r| r.index >= k).filter(|r| r.index == k);
                let c_rec = c.find(|r| r.index >= k).filter(|r| r.index == k);
                text_into(run, text, scratch);
                let slot = self.learned.slot_of(text);
                if train {
                    let key = match b_rec.and_then(|r| r.decision.as_ref()) {
                        None => CurKey::Undecided,
                        Some(d) => match RuleLabel::of(&baseline.policies, d)
                            .and_then(|l| self.baseline_policies.get(l.policy).map(|&p| (p, l.rule)))
                        {
                            Some((p, rule)) => CurKey::Rule(p, rule, d.action()),
                            None => CurKey::Kind(d.kind, d.action()),
                        },
                    };
                    counted.push((slot, key));
                }
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
                let Some((rule, want)) = self.rules[slot.min(self.rules.len() - 1)] else {
                    continue;
                };
                if label.policy != self.policy || label.rule != RuleRef::Index(want) {
                    self.shadowed[rule].fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        if !counted.is_empty() {
            let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
            for (slot, key) in counted {
                *current.entry(slot).or_default().entry(key).or_default() += 1;
            }
        }
    }

    /// Per proposed rule, the runs of its signature another rule decided.
    pub fn shadowed(&self) -> Vec<(String, u64)> {
        self.texts
            .iter()
            .zip(&self.shadowed)
            .map(|(t, n)| (t.clone(), n.load(Ordering::Relaxed)))
            .collect()
    }

    /// The baseline's decisions per signature slot, in words.
    pub fn currents(&self) -> Vec<(usize, HashMap<Current, u64>)> {
        let current = std::mem::take(&mut *self.current.lock().unwrap_or_else(|e| e.into_inner()));
        current
            .into_iter()
            .map(|(slot, keys)| {
                let mut words: HashMap<Current, u64> = HashMap::new();
                for (key, n) in keys {
                    let c = match key {
                        CurKey::Undecided => Current::Undecided,
                        CurKey::Rule(p, rule, action) => Current::Decided {
                            rule: format!("{}/{rule}", self.policy_names[p as usize]),
                            action,
                        },
                        CurKey::Kind(kind, action) => Current::Decided {
                            rule: kind.as_str().to_string(),
                            action,
                        },
                    };
                    *words.entry(c).or_default() += n;
                }
                (slot, words)
            })
            .collect()
    }
}
