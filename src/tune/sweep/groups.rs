//! The candidates of a sweep grouped by what a job is replayed once for ([`Groups`]): their
//! scheduler settings (the baseline is replayed once per setting) and their categorizers
//! (one compiled config, one group: a group's runs are classified once for all its
//! candidates, and only candidates of one group share a match table, a key or a replay).
//!
//! Owns: that grouping. Must not: replay or count (that is the sweep). Pure.

use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::Settings;
use crate::replay::policy_sets::PolicySet;

/// The arms grouped by what a job is replayed once for: their scheduler settings (the
/// baseline replays once per setting) and their categorizers (the same compiled config, or
/// none: a group's runs are classified once for all its candidates, and only candidates of one
/// group share a match table or a replay, the group being part of their keys: another
/// categorizer gives runs other categories, so other matches).
pub(super) struct Groups<'a> {
    /// The distinct scheduler settings: 0 is the source's.
    pub(super) settings: Vec<Option<&'a Settings>>,
    /// Each arm's index into `settings`.
    pub(super) set_of: Vec<usize>,
    /// The candidates by categorizer.
    pub(super) categorizers: Vec<(Option<&'a Classifier>, Vec<usize>)>,
    /// Each arm's index into `categorizers`.
    pub(super) cat_of: Vec<usize>,
    /// A side classifies runs: category counts and collisions are kept.
    pub(super) categorized: bool,
}

impl<'a> Groups<'a> {
    pub(super) fn of(baseline: &Simulator, arms: &'a [PolicySet]) -> Groups<'a> {
        let mut settings: Vec<Option<&Settings>> = vec![None];
        let set_of: Vec<usize> = arms
            .iter()
            .map(|a| match a.settings.as_ref() {
                None => 0,
                Some(s) => match settings.iter().position(|g| *g == Some(s)) {
                    Some(i) => i,
                    None => {
                        settings.push(Some(s));
                        settings.len() - 1
                    }
                },
            })
            .collect();
        let mut categorizers: Vec<(Option<&Classifier>, Vec<usize>)> = Vec::new();
        let mut cat_of = vec![0usize; arms.len()];
        for (i, a) in arms.iter().enumerate() {
            let c = a.simulator.categorizer();
            let same = |k: &Option<&Classifier>| match (k, c) {
                (None, None) => true,
                (Some(k), Some(c)) => std::ptr::eq(*k, c),
                _ => false,
            };
            match categorizers.iter().position(|(k, _)| same(k)) {
                Some(at) => {
                    categorizers[at].1.push(i);
                    cat_of[i] = at;
                }
                None => {
                    cat_of[i] = categorizers.len();
                    categorizers.push((c, vec![i]));
                }
            }
        }
        let categorized = baseline.categorizer().is_some() || categorizers.iter().any(|(c, _)| c.is_some());
        Groups {
            settings,
            set_of,
            categorizers,
            cat_of,
            categorized,
        }
    }
}
