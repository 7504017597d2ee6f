//! What a comparison replays: one baseline and N candidates ([`PolicySets`]), each a policy set
//! with its engine and categorizer attached. `simulate --baseline`, `suggest`'s second pass
//! and `/report` compare the baseline with one candidate; `watch` with one per `-f`. The
//! commands' sides kit (`commands::replay::sides`) resolves them from what a verb says; the
//! replay compares them job by job with one function (`replay::run::compare_job`).
//!
//! Owns: [`PolicySets`], [`PolicySet`], [`OneCandidate`] (what `compare` takes) and
//! [`SetsView`]. Must not: read a file or decide what a side is
//! (the kit does), replay or count (that is `replay::run`). Pure.

use crate::engine::simulator::Simulator;
use crate::engine::Settings;

/// A candidate side: its label (`watch`'s `-f` base name, `candidate.yaml`; empty where a
/// verb compares one unnamed candidate), its policy set, and its own scheduler settings when
/// it has some (`tune`'s `scheduler:` vary; `None`: the source's, every job's own).
#[derive(Debug, Clone)]
pub struct PolicySet {
    pub name: String,
    pub simulator: Simulator,
    pub settings: Option<Settings>,
}

/// The baseline (today's policy, or what a verb compares against) and the candidates, each
/// replayed on every job.
#[derive(Debug, Clone)]
pub struct PolicySets {
    pub baseline: Simulator,
    pub candidates: Vec<PolicySet>,
}

/// The baseline and exactly one candidate: what `compare` replays (`simulate --baseline`,
/// `suggest`'s second pass, `/report` of one of `watch`'s candidates).
#[derive(Debug, Clone)]
pub struct OneCandidate {
    pub baseline: Simulator,
    pub candidate: PolicySet,
}

/// A borrowed view of a baseline and its candidates: what the per-job comparison
/// (`replay::run::compare_job`) replays, from a [`PolicySets`] or a [`OneCandidate`].
#[derive(Debug, Clone, Copy)]
pub struct SetsView<'a> {
    pub baseline: &'a Simulator,
    pub candidates: &'a [PolicySet],
}

impl SetsView<'_> {
    /// Every side shares one categorizer (no `--baseline-categorizer`): a history is
    /// classified once for every side.
    pub fn shared_categorizer(&self) -> bool {
        let Some(b) = self.baseline.categorizer() else {
            return false;
        };
        !self.candidates.is_empty()
            && self
                .candidates
                .iter()
                .all(|c| c.simulator.categorizer().is_some_and(|c| std::ptr::eq(b, c)))
    }

    /// Some side classifies runs with a categorizer.
    pub fn categorized(&self) -> bool {
        self.baseline.categorizer().is_some() || self.candidates.iter().any(|c| c.simulator.categorizer().is_some())
    }
}

impl OneCandidate {
    pub fn view(&self) -> SetsView<'_> {
        SetsView {
            baseline: &self.baseline,
            candidates: std::slice::from_ref(&self.candidate),
        }
    }
}

impl PolicySets {
    /// The baseline and one unnamed candidate (tests; the commands' sides kit builds the
    /// policy sets a verb replays).
    #[cfg(test)]
    pub fn pair(baseline: Simulator, candidate: Simulator) -> PolicySets {
        PolicySets {
            baseline,
            candidates: vec![PolicySet {
                name: String::new(),
                simulator: candidate,
                settings: None,
            }],
        }
    }

    pub fn view(&self) -> SetsView<'_> {
        SetsView {
            baseline: &self.baseline,
            candidates: &self.candidates,
        }
    }

    /// The baseline and its one candidate; `None` when it holds another number of them.
    pub fn one(self) -> Option<OneCandidate> {
        let mut candidates = self.candidates.into_iter();
        match (candidates.next(), candidates.next()) {
            (Some(candidate), None) => Some(OneCandidate {
                baseline: self.baseline,
                candidate,
            }),
            _ => None,
        }
    }

    /// The baseline and candidate `i` alone (`/report` of one of `watch`'s candidates).
    pub fn only(&self, i: usize) -> Option<OneCandidate> {
        let c = self.candidates.get(i)?;
        Some(OneCandidate {
            baseline: self.baseline.clone(),
            candidate: c.clone(),
        })
    }

    /// The candidates' labels, in order.
    pub fn names(&self) -> Vec<String> {
        self.candidates.iter().map(|c| c.name.clone()).collect()
    }
}
