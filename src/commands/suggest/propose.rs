//! Propose, after pass 1 (docs/reference/suggest.md "How it learns"): the rules of the
//! signatures learned and the default (`suggest::propose`), the categories the collided
//! retries need, which of them the incident windows change, the documents (`proposal`), and
//! the collided retries the proposal's categorizer lets run.
//!
//! Owns: [`Made`] and the steps of [`Proposer::propose`]. Must not: learn, compare or render
//! (the notes it says on stderr are `output::suggest`'s words).

use std::collections::HashMap;
use std::io::Write;

use crate::engine::EngineKind;
use crate::model::duration::GoDuration;
use crate::model::Action;
use crate::output::suggest as view;
use crate::suggest::documents;
use crate::suggest::exits::ExitCodes;
use crate::suggest::incidents::{short_backoff, Found, Sensitive};
use crate::suggest::propose::{propose, Defaults, NoRule, Proposed, Verdict};
use crate::suggest::stats::{Learned, SignatureStats};
use crate::suggest::verdict::LetRun;

use super::given::deployed;
use super::proposal::{Proposal, Proposer};

/// What was proposed: each signature's verdict, the rules, the default and the documents;
/// with incident windows, the signatures whose verdict they change; the collided retries the
/// proposal's categorizer lets run.
pub(super) struct Made<'a> {
    pub verdicts: Vec<(&'a SignatureStats, Verdict)>,
    pub rules: Vec<Proposed>,
    pub default: Defaults,
    pub proposal: Proposal,
    pub sensitive: Sensitive,
    pub let_run: LetRun,
}

impl Proposer<'_> {
    /// Propose: the rules of the signatures learned (`sorted`), the default, and the
    /// documents of today's policy edited with them.
    pub(super) fn propose<'a>(
        &self,
        err: &mut dyn Write,
        learned: &Learned,
        exits: &ExitCodes,
        sorted: &[&'a SignatureStats],
        with: Option<&[SignatureStats]>,
    ) -> anyhow::Result<Made<'a>> {
        // The rules (owned: the counts are given the baseline's decisions after pass 2).
        let kept = self.kept(learned)?;
        let room = self.room(&kept);
        let proposed = propose(sorted, &self.knobs, self.sides.engine, room, self.default_today());
        let (mut verdicts, mut rules, default) = (proposed.verdicts, proposed.rules, proposed.default);
        self.categories_for_collisions(&mut verdicts, &mut rules, room);
        if self.run.keep_categorizer {
            self.on_todays_categories(learned, &mut verdicts, &mut rules);
        }
        // With incident windows: the same proposal with their runs counted, in the same order,
        // to tell which signatures they change.
        let sensitive = match with {
            Some(with) => {
                let by_text: HashMap<&str, &SignatureStats> = with.iter().map(|s| (s.text.as_str(), s)).collect();
                let with_sorted: Vec<&SignatureStats> = sorted
                    .iter()
                    .filter_map(|s| by_text.get(s.text.as_str()).copied())
                    .collect();
                let mut with = propose(&with_sorted, &self.knobs, self.sides.engine, room, self.default_today());
                self.categories_for_collisions(&mut with.verdicts, &mut with.rules, room);
                if self.run.keep_categorizer {
                    self.on_todays_categories(learned, &mut with.verdicts, &mut with.rules);
                }
                let mut sensitive = Sensitive::of(verdicts.iter().map(|(s, v)| (*s, v)), &with.verdicts);
                // The default like any signature: its pool with the incident runs counted.
                sensitive.mark(&default.stats.text, &default.verdict, &with.default.verdict);
                sensitive
            }
            None => Sensitive::default(),
        };
        // A signature whose every retry collided keeps its Retry, its category's pods
        // deleted (upstream: the one change that lets its retries run), unless
        // `--keep-categorizer` changes no category's action; one whose runs no category
        // takes has a rule writing today's Retry, and a category of its own.
        let collided_in = |s: &SignatureStats| {
            let (label, _) = s.seen.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
            Some(label.split('/').next().unwrap_or(label).to_string())
        };
        let collide: Vec<String> = verdicts
            .iter()
            .filter(|_| !self.run.keep_categorizer)
            .filter(|(_, v)| matches!(v, Verdict::None(NoRule::RetriesCollide)))
            .filter_map(|(s, _)| collided_in(s))
            .collect();
        let proposal = self.documents(learned, exits, &rules, kept, &default, &collide)?;
        // Those whose category's pods the proposal deletes can run: a deployed category's
        // action changed, or a category of their own.
        let upstream = proposal.upstream.as_ref();
        let deleted = |c: &str| upstream.is_some_and(|u| u.action_changes.iter().any(|a| a.delete && a.category == c));
        let own = |text: &str| {
            upstream.is_some_and(|u| {
                u.categories
                    .iter()
                    .any(|c| c.delete && c.signatures.iter().any(|s| s == text))
            })
        };
        // Each, with the most its retries may cost: every retry the policy grants a job, at
        // the job's longest recorded run.
        let granted = upstream.map_or(0, |u| u.written_retry_limit);
        let mut let_run = LetRun::default();
        let let_run_of = verdicts.iter().filter(|(s, v)| match v {
            // As `collided` lists them: by the category most of their runs had.
            Verdict::None(NoRule::RetriesCollide) if !self.run.keep_categorizer => {
                collided_in(s).is_some_and(|c| deleted(&c))
            }
            Verdict::Rule(p) => p.as_today == Some(NoRule::RetriesCollide) && own(&s.text),
            _ => false,
        });
        for (s, _) in let_run_of {
            let_run.retries += s.collided;
            let_run.most.add(s.collided_cost.times(granted));
        }
        if deployed(self.sides).is_none() && proposal.upstream.as_ref().is_some_and(|u| !u.categories.is_empty()) {
            writeln!(err, "note: {}", documents::NOT_COMPLETE)?;
        }
        if let (true, Some(u)) = (self.run.keep_categorizer, upstream) {
            if !u.categories.is_empty() {
                writeln!(err, "note: {}", view::kept_and_added(&u.categories))?;
            }
        }
        Ok(Made {
            verdicts,
            rules,
            default,
            proposal,
            sensitive,
            let_run,
        })
    }

    /// The design dialect's Retry rules whose first delay is shorter than the median incident
    /// window, for a signature hit inside one (docs/reference/suggest.md "Incidents"): their
    /// retries come back while the incident lasts. Upstream's backoff is the scheduler's.
    pub(super) fn short_backoff(
        &self,
        rules: &[Proposed],
        learned: &Learned,
        found: &Found,
    ) -> Vec<(String, GoDuration)> {
        let Some(median) = found.median().filter(|_| self.sides.engine == EngineKind::Design) else {
            return Vec::new();
        };
        let delay = self
            .settings()
            .backoff
            .initial_delay
            .or(self.sides.settings.applied().default_backoff.initial_delay)
            .unwrap_or_default();
        rules
            .iter()
            .filter(|p| p.action == Action::Retry && p.as_today.is_none())
            .filter(|p| {
                let s = learned.signatures.get(learned.slot_of(&p.text));
                s.is_some_and(|s| short_backoff(delay, median, s.in_incidents))
            })
            .map(|p| (p.text.clone(), delay))
            .collect()
    }
}
