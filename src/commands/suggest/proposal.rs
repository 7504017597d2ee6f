//! `suggest`'s proposal as documents (docs/reference/suggest.md "Today's policy is the
//! starting point"): the proposed rules, today's rules kept after them, today's defaults, and
//! for today's Armada the categorizer they match on; read back through `validate`'s reader,
//! and the Simulator (with its categorizer) that replays them in pass 2.
//!
//! Owns: what the proposal takes of the baseline (its first policy's settings, its
//! effective rules, its Queue). Must not: learn, compare or render (the documents' text is
//! `suggest::documents`').

use std::collections::HashMap;
use std::sync::Arc;

use crate::engine::job_report::plural;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input;
use crate::model::lint::covers;
use crate::model::signature::Signature;
use crate::model::validate::name_reason;
use crate::model::Action;
use crate::model::Resource;
use crate::output::suggest as view;
use crate::suggest::documents::{self, Documented, PolicySettings, Upstream};
use crate::suggest::exits::{unsplit, ExitCodes};
use crate::suggest::propose::Knobs;
use crate::suggest::propose::{collided_uncategorized, DefaultDecision, Defaults, NoRule, Room, Verdict, DEFAULT};
use crate::suggest::stats::Learned;
use crate::suggest::today::{self, Kept};

use crate::commands::replay::sides::{candidate_side, compile, compiled, Sides};

use super::given::deployed;
use super::run::SuggestRun;

/// What the proposal is made of besides what pass 1 learned: the sides (the baseline's
/// engine and documents, the deployed categorizer, the scheduler's settings), the run's name
/// and flags, the knobs, and the baseline's Simulator. Its steps are this file's and
/// `propose`'s.
pub(super) struct Proposer<'a> {
    pub sides: &'a Sides,
    pub run: &'a SuggestRun,
    pub knobs: Knobs,
    pub baseline: &'a Simulator,
}

/// The proposal as documents, read back through `validate`'s reader, and the Simulator (and
/// categorizer) that replays it.
pub(super) struct Proposal {
    /// What `-o policy` prints.
    pub text: String,
    /// Today's rules it keeps after its own.
    pub kept: Vec<Kept>,
    /// The design policy's `retryLimit` as written (upstream: [`Upstream::written_retry_limit`]).
    retry_limit: Option<u32>,
    pub upstream: Option<Upstream>,
    pub sim: Simulator,
}

impl Proposal {
    /// Whether it changes the cluster's categorizer (a new category, a split, an action):
    /// then it is compared on every queue.
    /// The policy's `retryLimit` as `-o policy` writes it (`None`: not written, design only).
    pub fn policy_retry_limit(&self) -> Option<u32> {
        match &self.upstream {
            Some(u) => Some(u.written_retry_limit),
            None => self.retry_limit,
        }
    }

    pub fn changes_categorizer(&self) -> bool {
        self.upstream
            .as_ref()
            .is_some_and(|u| !u.categories.is_empty() || !u.action_changes.is_empty())
    }
}

impl Proposer<'_> {
    /// The baseline's first policy's settings (the Queue's first with `--queue`), under the
    /// proposal's name.
    pub(super) fn settings(&self) -> PolicySettings {
        let queue_first = self
            .sides
            .spec
            .queue
            .as_deref()
            .and_then(|q| self.baseline.queue(q))
            .and_then(|q| q.retry_policies.first())
            .and_then(|name| self.baseline.policies().find(|p| &p.name == name));
        let first = queue_first.or_else(|| self.baseline.policies().next());
        PolicySettings {
            name: self.run.name.clone(),
            default_action: first.map(|p| p.default_action()),
            retry_limit: first.and_then(|p| p.retry_limit),
            backoff: first.map(|p| p.backoff).unwrap_or_default(),
            anti_affinity: first.and_then(|p| p.anti_affinity),
            default_limit: None,
            default_note: None,
        }
    }

    /// Today's default, as the proposal's settings take it from the baseline
    /// (`DefaultDecision::today`).
    pub(super) fn default_today(&self) -> DefaultDecision {
        let settings = self.settings();
        let global = self.sides.settings.applied().global_max_retries;
        DefaultDecision::today(settings.default_action, settings.retry_limit, global)
    }

    /// The proposal's settings: today's, with the learned default when it differs
    /// (docs/reference/suggest.md "The policy's defaults").
    pub(super) fn proposed_settings(&self, default: &Defaults) -> PolicySettings {
        let mut settings = self.settings();
        if let (true, Verdict::Rule(p)) = (default.changes(), &default.verdict) {
            settings.default_action = Some(p.action);
            settings.default_limit = p.limit;
            settings.default_note = Some(format!(
                "{DEFAULT}: learned from {}: {}",
                plural(default.pooled.len() as u64, "signature", "signatures"),
                view::evidence(&default.stats)
            ));
        }
        settings
    }

    /// The Queue `-o policy` prints with `--queue`.
    fn queue_document(&self) -> Option<String> {
        // A name no Queue can have (`check_queue` refuses it with `-o policy`) is no
        // baseline Queue's either: the proposal stands in for every policy without it.
        let name = self.sides.spec.queue.as_deref().filter(|q| name_reason(q).is_none())?;
        let mut q = self
            .baseline
            .queue(name)
            .cloned()
            .unwrap_or_else(|| crate::model::queue::Queue {
                name: name.to_string(),
                ..Default::default()
            });
        // First in the queue's list, never alone: the rest decides after it as today (the
        // file holds the proposal and the Queue; the others are on the server already).
        let name = &self.run.name;
        let rest: Vec<String> = q.retry_policies.iter().filter(|p| *p != name).cloned().collect();
        q.retry_policies = std::iter::once(name.clone()).chain(rest).collect();
        Some(crate::model::encode::to_yaml(&crate::model::encode::queue_document(&q)))
    }

    /// Today's rules the proposal keeps after its own (docs/suggest.md "Today's policy is the
    /// starting point"): the baseline's effective list for `--queue` (else its policies in
    /// order), as its engine reads it.
    pub(super) fn kept(&self, learned: &Learned) -> anyhow::Result<Vec<Kept>> {
        let names: Vec<String> = match self.sides.spec.queue.as_deref().and_then(|q| self.baseline.queue(q)) {
            Some(q) => q.retry_policies.clone(),
            None => self.baseline.given().to_vec(),
        };
        let policies: Vec<&crate::model::policy::RetryPolicy> = names
            .iter()
            .filter_map(|n| self.baseline.policies().find(|p| &p.name == n))
            .collect();
        let global = self.sides.settings.applied().global_max_retries;
        let decided = today::decided_runs(learned.signatures.iter().chain(learned.other.as_ref()));
        let kept = today::kept(&policies, self.sides.baseline.engine, global, &decided);
        if self.sides.engine == EngineKind::Upstream {
            if let Some((from, fields)) = today::not_upstream(&kept) {
                return Err(CliError::usage(format!(
                    "the baseline's rule `{from}` cannot be kept in a proposal for today's Armada: a v1beta1 rule matches a category only, and has no place for its {}",
                    fields.join(", ")
                ))
                .with_hint("give the baseline as today's Armada stores it (`retryctl get retrypolicies -o yaml --api-version armadaproject.io/v1beta1`), or propose in the design dialect (`--engine design`)")
                .into());
            }
        }
        Ok(kept)
    }

    /// The room the documents leave for proposed rules: the policy's after the `kept` rules,
    /// and upstream the categorizer's after the deployed config's categories and rules.
    pub(super) fn room(&self, kept: &[Kept]) -> Room {
        let upstream = (self.sides.engine == EngineKind::Upstream).then(|| match deployed(self.sides) {
            Some(d) => {
                let c = &d.file.config.categories;
                (c.len(), c.iter().map(|c| c.rules.len()).sum())
            }
            None => (0, 0),
        });
        Room::new(kept.len(), upstream)
    }

    /// Upstream: the signatures whose every retry collided and whose runs no category takes
    /// get a rule writing today's Retry, and with it a category of their own that deletes
    /// their pods ([`collided_uncategorized`]); with `--keep-categorizer`, after the deployed
    /// ones, and only where none of them takes any of their runs
    /// ([`Proposer::on_todays_categories`]).
    pub(super) fn categories_for_collisions(
        &self,
        verdicts: &mut [(&crate::suggest::stats::SignatureStats, Verdict)],
        rules: &mut Vec<crate::suggest::propose::Proposed>,
        room: Room,
    ) {
        if self.sides.engine == EngineKind::Upstream {
            collided_uncategorized(verdicts, rules, room, self.default_today());
        }
    }

    /// `--keep-categorizer` (upstream): the rules a proposal that keeps every deployed
    /// category as it is holds, the others decided as today ([`NoRule::KeepCategorizer`]): a
    /// rule matching a deployed category (`today::places`' `Reuse`, or a category
    /// signature), for a Retry rule one whose pods the executor deletes already; and a rule
    /// for failures no deployed category takes (every failed run of its signature without a
    /// category), on a category added after the deployed ones, which takes no run they take.
    /// Again until none is left out, since a signature left without a rule shares its
    /// category with the others.
    pub(super) fn on_todays_categories(
        &self,
        learned: &Learned,
        verdicts: &mut [(&crate::suggest::stats::SignatureStats, Verdict)],
        rules: &mut Vec<crate::suggest::propose::Proposed>,
    ) {
        if self.sides.engine != EngineKind::Upstream {
            return;
        }
        let deployed = deployed(self.sides).map(|d| &d.file.config.categories);
        let deletes =
            |c: &str| deployed.is_none_or(|cs| cs.iter().any(|k| k.name == c && k.action.as_str() == "Delete"));
        let by_text: HashMap<&str, &crate::suggest::stats::SignatureStats> =
            learned.signatures.iter().map(|s| (s.text.as_str(), s)).collect();
        let uncategorized = |text: &str| {
            by_text
                .get(text)
                .is_some_and(|s| s.seen.keys().all(|k| k == crate::suggest::stats::NO_CATEGORY))
        };
        let none = ExitCodes::default();
        loop {
            let places = today::places(rules, &learned.signatures, &none);
            let out: Vec<String> = rules
                .iter()
                .zip(&places)
                .filter(|(r, place)| match (&r.signature, place) {
                    (Signature::Category { category, .. }, _) | (_, today::Place::Reuse { category, .. }) => {
                        r.action == Action::Retry && !deletes(category)
                    }
                    // A category of its own, added after the deployed ones: only for runs
                    // none of them takes.
                    _ => !uncategorized(&r.text),
                })
                .map(|(r, _)| r.text.clone())
                .collect();
            if out.is_empty() {
                return;
            }
            rules.retain(|r| !out.contains(&r.text));
            for (_, v) in verdicts.iter_mut() {
                if let Verdict::Rule(p) = v {
                    if out.contains(&p.text) {
                        // A rule writing today's decision goes back to the reason it had.
                        *v = Verdict::None(p.as_today.clone().unwrap_or(NoRule::KeepCategorizer));
                    }
                }
            }
        }
    }

    /// The documents of `rules` (within [`Proposer::room`]) and today's `kept` rules after
    /// them, checked by `validate`'s reader, and their Simulator; upstream, the categories in
    /// `collide` (their signatures' retries collide with the pods they keep) deleted.
    pub(super) fn documents(
        &self,
        learned: &Learned,
        exits: &ExitCodes,
        rules: &[crate::suggest::propose::Proposed],
        mut kept: Vec<Kept>,
        default: &Defaults,
        collide: &[String],
    ) -> anyhow::Result<Proposal> {
        let (text, upstream) = self.written(learned, exits, rules, &kept, default, collide);
        // A rule of today's that a rule before it already covers can never match
        // (`validate`'s `shadowed-rule`): written again without it, its comment saying so.
        let file = input::parse_text("<proposal>", &text, None);
        let shadowed = shadowed_kept(&file, &self.proposed_settings(default).name, kept.len());
        let (text, upstream) = if shadowed.is_empty() {
            (text, upstream)
        } else {
            for at in shadowed {
                kept[at].shadowed = true;
            }
            self.written(learned, exits, rules, &kept, default, collide)
        };
        self.checked(default, text, upstream, kept)
    }

    /// The documents' text (`documents`' inputs), and upstream the executor's config beside it.
    fn written(
        &self,
        learned: &Learned,
        exits: &ExitCodes,
        rules: &[crate::suggest::propose::Proposed],
        kept: &[Kept],
        default: &Defaults,
        collide: &[String],
    ) -> (String, Option<documents::Upstream>) {
        let settings = self.proposed_settings(default);
        let documented = self.documented(learned, exits, rules, kept);
        let header = format!(
            "Proposed by `retryctl suggest` from {} jobs ({} failed runs); --min-trials {} --futile {} --max-limit {}.",
            learned.jobs, learned.failed_runs, self.knobs.min_trials, self.knobs.futile, self.knobs.max_limit
        );
        let queue = self.queue_document();
        let (mut text, upstream) = match self.sides.engine {
            EngineKind::Design => (documents::design_policy(&settings, &documented, kept, &header), None),
            EngineKind::Upstream => {
                let blocked = today::raise_blocked_by(kept, &learned.signatures);
                let mut u = documents::upstream_documents(
                    &settings,
                    &documented,
                    kept,
                    blocked,
                    deployed(self.sides).map(|d| documents::Deployed {
                        config: &d.file.config,
                        document: &d.file.document.node,
                        kept_first: self.run.keep_categorizer,
                    }),
                    &header,
                    collide,
                );
                // Kept, the config is still written whole (`-o policy`, `--executor-config`):
                // the route's later commands read it, and a file an earlier run left (a
                // rejected proposal's) must not stand for today's. With nothing added, it
                // is the deployed file as written, its comments and quoting kept.
                if self.run.keep_categorizer {
                    let as_written = deployed(self.sides).and_then(|d| input::categorizer_as_written(&d.file));
                    u.head.insert_str(0, &documents::kept_head(u.categories.len()));
                    if let (true, Some(text)) = (u.categories.is_empty() && u.action_changes.is_empty(), as_written) {
                        u.config = documents::without_suggests_head(&text);
                    }
                }
                (format!("{}---\n{}", u.categorizer(), u.policy), Some(u))
            }
        };
        if let Some(q) = queue {
            text.push_str("---\n");
            text.push_str(&q);
        }
        (text, upstream)
    }

    /// The documents checked by `validate`'s reader, and their Simulator.
    fn checked(
        &self,
        default: &Defaults,
        text: String,
        upstream: Option<documents::Upstream>,
        kept: Vec<Kept>,
    ) -> anyhow::Result<Proposal> {
        let settings = self.proposed_settings(default);
        let file = input::parse_text("<proposal>", &text, None);
        if file.error_count() > 0 {
            let mut problems = Vec::new();
            crate::output::report::write_text(
                std::slice::from_ref(&file),
                // Plain: the text is carried in the error's message.
                crate::output::style::Style { color: false },
                &mut Vec::new(),
                &mut problems,
            )?;
            return Err(CliError::failed(format!(
                "the proposed documents do not validate (a bug in retryctl; please report it):\n{}",
                String::from_utf8_lossy(&problems)
            ))
            .into());
        }
        let sim = self.replayed(&file)?;
        Ok(Proposal {
            text,
            kept,
            retry_limit: settings.design_retry_limit(),
            upstream,
            sim,
        })
    }

    /// Each proposed rule with what its documents write beside it: its evidence, the
    /// mutation it carries from today's rule, and upstream the deployed category it can match
    /// on and the exit codes that do not split it.
    fn documented<'a>(
        &self,
        learned: &Learned,
        exits: &ExitCodes,
        rules: &'a [crate::suggest::propose::Proposed],
        kept: &[Kept],
    ) -> Vec<Documented<'a>> {
        let by_text: HashMap<&str, &crate::suggest::stats::SignatureStats> =
            learned.signatures.iter().map(|s| (s.text.as_str(), s)).collect();
        // Upstream: the deployed category each rule can match on, where one separates it.
        let places: Vec<Option<today::Place>> = match self.sides.engine {
            EngineKind::Design => vec![None; rules.len()],
            EngineKind::Upstream => today::places(rules, &learned.signatures, exits)
                .into_iter()
                .map(Some)
                .collect(),
        };
        rules
            .iter()
            .zip(places)
            .map(|(r, place)| {
                let stats = by_text.get(r.text.as_str());
                let mut evidence = stats.map_or_else(String::new, |s| view::evidence(s));
                // A rule keeping today's default's decision carries no mutation, as that
                // default's retries do not (docs/engines.md).
                let mutate = match &r.as_today {
                    Some(why) => {
                        let reason = match why {
                            NoRule::RetriesCollide => "its runs have no category whose pods to delete: one of its own",
                            _ => "the proposed default differs",
                        };
                        evidence.push_str(&format!("; as today ({why}): today's default decided it, and {reason}"));
                        None
                    }
                    None => stats.and_then(|s| today::carried_mutate(s, kept)),
                };
                let unsplit = match self.sides.engine {
                    EngineKind::Design => None,
                    EngineKind::Upstream => unsplit(&r.signature, &r.text, exits),
                };
                Documented {
                    rule: r,
                    evidence,
                    mutate,
                    place,
                    unsplit,
                }
            })
            .collect()
    }

    /// The Simulator that replays the proposal's documents (`file`, read back): its policy,
    /// its categorizer, and the baseline's queues it does not name.
    fn replayed(&self, file: &input::SourceFile) -> anyhow::Result<Simulator> {
        let categorizer = file.documents.iter().find_map(|d| match &d.resource {
            Some(Resource::ErrorCategories(c)) => Some(c.clone()),
            _ => None,
        });
        // The proposal replays as the cluster would run it: its policy, and with `--queue` the
        // Queue's list, whose other policies are today's (on the server, not in the file).
        let mut policies = Vec::new();
        let mut queues = Vec::new();
        for d in &file.documents {
            match &d.resource {
                Some(Resource::RetryPolicy(p)) => policies.push(p.clone()),
                Some(Resource::Queue(q)) => queues.push(q.clone()),
                _ => {}
            }
        }
        let named: Vec<String> = queues.iter().flat_map(|q| q.retry_policies.iter().cloned()).collect();
        for p in self.baseline.policies() {
            if named.contains(&p.name) && !policies.iter().any(|q| q.name == p.name) {
                policies.push(p.clone());
            }
        }
        // Every other queue of today's documents as it is: the categorizer is the cluster's,
        // and their jobs are compared too when it changes (docs/suggest.md "Every queue").
        let classifier = match categorizer {
            Some(c) => {
                let compiled = compile(&c).map_err(|e| {
                    CliError::failed(format!(
                        "the proposed categorizer does not compile (a bug in retryctl): {e}"
                    ))
                })?;
                // Without the deployed config, the new categories go before it: a run they
                // do not match keeps the category it was recorded with.
                Some(Arc::new(match deployed(self.sides) {
                    Some(_) => compiled,
                    None => compiled.prepended(),
                }))
            }
            None => compiled(deployed(self.sides)),
        };
        let sim = Simulator::new(policies, queues, Some(vec![self.run.name.clone()]))
            .and_then(|s| candidate_side(s.with_engine(self.sides.engine), Some(self.baseline), classifier))
            .map_err(|e| {
                CliError::failed(format!(
                    "the proposed policy cannot be replayed (a bug in retryctl): {e}"
                ))
            })?;
        Ok(sim)
    }
}

/// The indices among `kept` (today's rules, the last `kept` rules of the policy named `name`
/// in `file`) of those a rule before them covers (`model::lint::covers`: `validate`'s
/// `shadowed-rule`).
fn shadowed_kept(file: &input::SourceFile, name: &str, kept: usize) -> Vec<usize> {
    let policy = file.documents.iter().find_map(|d| match &d.resource {
        Some(Resource::RetryPolicy(p)) if p.name == name => Some(p),
        _ => None,
    });
    let Some(policy) = policy else {
        return Vec::new();
    };
    let first = policy.rules.len().saturating_sub(kept);
    (first..policy.rules.len())
        .filter(|&i| policy.rules[..i].iter().any(|e| covers(e, &policy.rules[i])))
        .map(|i| i - first)
        .collect()
}
