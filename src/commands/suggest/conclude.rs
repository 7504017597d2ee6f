//! After pass 1, the same for one process and for a sharded suggest's merge: propose (the
//! rules, the default, the documents), compare (pass 2: the proposal against the baseline on
//! the whole history, and on the test jobs with `--backtest-at`), judge (the verdict), write
//! (the format asked, `-o policy`'s documents, `--executor-config`) and the exit status.
//!
//! Owns: [`Suggest::conclude`] and its steps. Must not: read pass 1's history (it is given the
//! learning and the histories to read again), or decide a verdict's rules (`suggest::verdict`).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::app::Context;
use crate::cli::{ExecutorConfigFormat, SuggestOutput};
use crate::commands::replay::checks::said_after_replay;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::ExitCode;
use crate::model::categorizer::Shape;
use crate::model::duration::GoDuration;
use crate::model::Action;
use crate::output::mode::Baseline;
use crate::output::suggest::{self as view, Report};
use crate::output::Format;
use crate::replay::{self, sides::PolicySets};
use crate::suggest::check::RuleCheck;
use crate::suggest::documents;
use crate::suggest::exits::ExitCodes;
use crate::suggest::incidents::{short_backoff, Found, Sensitive};
use crate::suggest::nodes::suspects;
use crate::suggest::propose::{propose, Defaults, NoRule, Proposed, Verdict};
use crate::suggest::queues::{unseen, ByQueue, QueueCounts};
use crate::suggest::stats::{Learned, SignatureStats};
use crate::suggest::verdict::{Decision, Judgement, LetRun, Queues};

use super::compare::{judge_proposal, Pass2, Read};
use super::incidents;
use super::learn::Pass1;
use super::proposal::Proposal;
use super::{Concluded, Suggest};

/// What was proposed: each signature's verdict, the rules, the default and the documents;
/// with incident windows, the signatures whose verdict they change; the collided retries the
/// proposal's categorizer lets run.
struct Made<'a> {
    verdicts: Vec<(&'a SignatureStats, Verdict)>,
    rules: Vec<Proposed>,
    default: Defaults,
    proposal: Proposal,
    sensitive: Sensitive,
    let_run: LetRun,
}

impl Suggest {
    /// Propose → compare → judge → write, after pass 1 (`pass`).
    pub(super) fn conclude(
        &self,
        ctx: &mut Context,
        baseline: &Simulator,
        from: Baseline,
        mut pass: Pass1,
    ) -> anyhow::Result<Concluded> {
        self.after_pass1(ctx, &mut pass)?;
        // The incident windows, their runs left out of what pass 1 learned.
        let incidents = self.incidents(&mut pass, baseline)?;
        // What incidents left out, said on stderr in every format.
        let left_out = incidents.found.as_ref().and_then(view::left_out);
        if let Some(l) = &left_out {
            writeln!(ctx.err, "{}", l.stderr)?;
            if let Some(w) = &l.warning {
                writeln!(ctx.err, "{}: {w}", ctx.style.warning("warning"))?;
            }
        }
        let estimates_backtest = self.backtest_estimates(&mut pass, &incidents.detected)?;
        let learned = &pass.learning.learned;
        let sorted = learned.sorted();
        let made = self.propose_from(
            ctx,
            baseline,
            learned,
            &pass.learning.exits,
            &sorted,
            incidents.with.as_deref(),
        )?;
        let (rules, default, proposal) = (&made.rules, &made.default, &made.proposal);
        // The categorizer is the cluster's: a proposal that changes it is compared on every
        // queue (docs/suggest.md "Every queue the change reaches").
        let every_queue = proposal.changes_categorizer();
        let histories = self.histories(&pass, every_queue)?;
        let by_queue = every_queue.then(ByQueue::default);
        // `-o policy` replays the proposal too, for its verdict, and prints none of it.
        let policy = self.output == SuggestOutput::Policy;
        let mut discard = io::sink();
        let out: &mut dyn Write = if policy { &mut discard } else { &mut *ctx.out };
        let format = Format::from(self.output);
        let mut doc = view::Doc::new(format, ctx.style);
        // The policy's `retryLimit` as `-o policy` writes it, said alike in every format.
        let policy_retry_limit = proposal.policy_retry_limit();
        let engine = self.sides.engine;
        doc.proposal_head(
            &mut *out,
            &view::Head {
                engine,
                name: &self.run.name,
                rules,
                kept: &proposal.kept,
                upstream: proposal.upstream.as_ref(),
                policy_retry_limit,
            },
        )?;
        // Compare: the proposal against the baseline on the whole history; the baseline's
        // decisions (of the train jobs) and the proposal's rules checked on the way.
        let check = RuleCheck::new(
            rules,
            proposal.upstream.as_ref().map(|u| &u.rule_index[..]),
            &self.run.name,
            learned,
        );
        let proposed = replay::sides::Candidate {
            name: String::new(),
            simulator: proposal.sim.clone(),
            settings: None,
        };
        let sets = self
            .sides
            .policy_sets(Some(baseline.clone()), Some(vec![proposed]))
            .and_then(PolicySets::one)
            .expect("a baseline and one proposal");
        let side = Pass2 {
            sets: &sets,
            format,
            incidents: incidents::known(&incidents),
        };
        let whole = self.open(&histories, &pass, Read::Whole)?;
        let err = (&mut *ctx.err as &mut dyn Write, ctx.style);
        let whole_cmp = self.compare(err, &mut doc, &mut *out, &side, whole, Some(&check), by_queue.as_ref())?;
        // Every queue compared, and today's queues the history lacks, when the categorizer
        // changes.
        let queue_counts = by_queue.map(ByQueue::into_counts).unwrap_or_default();
        let suspects = suspects(learned);
        let report =
            Report {
                engine,
                engine_from: self.sides.engine_from,
                name: &self.run.name,
                knobs: self.knobs,
                jobs: pass.learning.train_jobs,
                failed_runs: learned.failed_runs,
                signatures: &made.verdicts,
                rules,
                default,
                kept: &proposal.kept,
                upstream: proposal.upstream.as_ref(),
                policy_retry_limit,
                documents: &proposal.text,
                suspects: &suspects,
                nodes_named: !learned.nodes.is_empty(),
                baseline_from: from,
                commands: self.commands(rules, default, proposal),
                backtest: self.sides.spec.backtest_at.as_ref().map(|b| view::BacktestHead {
                    at: b.text.clone(),
                    train_jobs: pass.learning.train_jobs,
                    test_jobs: pass.learning.test_jobs,
                }),
                queues: &queue_counts,
                // Bursts and surges alone leave nothing out: no `Incidents:` block.
                incidents: incidents.found.as_ref().filter(|f| !f.windows.is_empty()).map(|found| {
                    view::IncidentsView {
                        found,
                        sensitive: &made.sensitive,
                        short_backoff: self.short_backoff(baseline, rules, learned, found),
                    }
                }),
                collisions_ran: learned.collisions_ran,
                busy: incidents.found.as_ref().map_or(&[][..], |f| &f.busy[..]),
            };
        doc.after_comparison(&mut *out, &report, &check.shadowed())?;
        let backtest = match &report.backtest {
            Some(_) => {
                doc.backtest_head(&mut *out, &report)?;
                let test = self.open(&histories, &pass, Read::Test)?;
                let test_cmp =
                    self.compare((&mut *ctx.err, ctx.style), &mut doc, &mut *out, &side, test, None, None)?;
                let again = self.open(&histories, &pass, Read::Test)?;
                let pending = self.pending_gpu_hours(ctx.style, &side, again)?;
                let tail = view::backtest_tail(&test_cmp, pending, estimates_backtest.as_ref());
                doc.backtest_tail(&mut *out, &tail)?;
                Some((test_cmp, tail))
            }
            _ => None,
        };
        // Judge.
        let judgement = self.judge(
            baseline,
            &made,
            &whole_cmp,
            backtest.as_ref(),
            every_queue,
            &queue_counts,
        );
        // Write. The reasons name jobs, whose ids are the history's text: escaped, on stderr
        // as everywhere, and in a written file's comment so that no id ends it and adds a
        // key. Both halves of the proposal carry the verdict: either file may travel alone.
        let verdict = format!("# verdict: {}\n", documents::comment(&judgement.line()));
        if policy {
            writeln!(ctx.err, "verdict: {}", crate::output::text::shown(&judgement.line()))?;
            if let Some(l) = &left_out {
                writeln!(ctx.out, "# {}", documents::comment(&l.policy))?;
            }
            ctx.out.write_all(verdict.as_bytes())?;
            ctx.out.write_all(proposal.text.as_bytes())?;
        } else {
            doc.finish(&mut *out, &report, &whole_cmp, backtest.as_ref(), &judgement)?;
        }
        if let (Some((path, format)), Some(u)) = (&self.executor_config, &proposal.upstream) {
            write_executor_config(path, *format, &verdict, &u.executor_config(), u.shape)?;
        }
        let code = self.exit_status(ctx, &whole_cmp, &judgement)?;
        Ok(Concluded { code, every_queue })
    }

    /// Propose: the rules of the signatures learned (`sorted`), the default, and the
    /// documents of today's policy edited with them.
    fn propose_from<'a>(
        &self,
        ctx: &mut Context,
        baseline: &Simulator,
        learned: &Learned,
        exits: &ExitCodes,
        sorted: &[&'a SignatureStats],
        with: Option<&[SignatureStats]>,
    ) -> anyhow::Result<Made<'a>> {
        // The rules (owned: the counts are given the baseline's decisions after pass 2).
        let kept = self.kept(baseline, learned)?;
        let room = self.room(&kept);
        let proposed = propose(
            sorted,
            &self.knobs,
            self.sides.engine,
            room,
            self.default_today(baseline),
        );
        let (mut verdicts, mut rules, default) = (proposed.verdicts, proposed.rules, proposed.default);
        self.categories_for_collisions(&mut verdicts, &mut rules, room, baseline);
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
                let mut with = propose(
                    &with_sorted,
                    &self.knobs,
                    self.sides.engine,
                    room,
                    self.default_today(baseline),
                );
                self.categories_for_collisions(&mut with.verdicts, &mut with.rules, room, baseline);
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
        let proposal = self.documents(baseline, learned, exits, &rules, kept, &default, &collide)?;
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
        if self.deployed().is_none() && proposal.upstream.as_ref().is_some_and(|u| !u.categories.is_empty()) {
            writeln!(ctx.err, "note: {}", documents::NOT_COMPLETE)?;
        }
        if let (true, Some(u)) = (self.run.keep_categorizer, upstream) {
            if !u.categories.is_empty() {
                writeln!(ctx.err, "note: {}", view::kept_and_added(&u.categories))?;
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
    fn short_backoff(
        &self,
        baseline: &Simulator,
        rules: &[Proposed],
        learned: &Learned,
        found: &Found,
    ) -> Vec<(String, GoDuration)> {
        let Some(median) = found.median().filter(|_| self.sides.engine == EngineKind::Design) else {
            return Vec::new();
        };
        let delay = self
            .settings(baseline)
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

    /// Judge: the verdict on the comparison (and the backtest), every queue's counts with it
    /// when the categorizer changes, the retries `made`'s categorizer lets run.
    fn judge(
        &self,
        baseline: &Simulator,
        made: &Made<'_>,
        whole: &view::Captured,
        backtest: Option<&(view::Captured, view::BacktestTail)>,
        every_queue: bool,
        counts: &[QueueCounts],
    ) -> Judgement {
        if self.allow_empty {
            // `--allow-empty` on a history with no job: nothing learned, today's policy
            // stays, said as every verdict is.
            return Judgement {
                decision: Decision::Keep,
                reasons: vec![format!(
                    "no job in {}: nothing learned, nothing proposed",
                    self.history.named()
                )],
            };
        }
        let unseen = match every_queue {
            true => unseen(&baseline.queue_names(), counts),
            false => Vec::new(),
        };
        let cluster_wide: Vec<String> = made
            .proposal
            .upstream
            .iter()
            .flat_map(|u| u.action_changes.iter().map(|a| a.words()))
            .collect();
        judge_proposal(
            whole,
            backtest,
            self.run.max_contradictions,
            every_queue.then_some(Queues {
                counts,
                unseen: &unseen,
                cluster_wide: &cluster_wide,
            }),
            made.let_run,
        )
    }

    /// The exit status: entries not read are exit 3 as in `simulate` and `tune` (the proposal
    /// was learned without them), unless `--skip-invalid`, which says how many. Then a script
    /// stops on a proposal that must not be applied: `reject` is exit 1, in every format,
    /// once the output is written in full (docs/reference/suggest.md "Exit status").
    fn exit_status(
        &self,
        ctx: &mut Context,
        whole: &view::Captured,
        judgement: &Judgement,
    ) -> anyhow::Result<ExitCode> {
        let not_replayed = said_after_replay(
            &mut *ctx.err,
            ctx.style,
            &whole.comparison.recorded,
            whole.comparison.errors,
            self.run.skip_invalid,
        )?;
        Ok(match not_replayed {
            Some(code) => code,
            None if judgement.decision == Decision::Reject => ExitCode::Failure,
            None => ExitCode::Success,
        })
    }
}

/// `--executor-config FILE`: the proposed executor config alone, as deployed (docs/suggest.md
/// "The two halves, in order"): the config file's shape, or the executor chart's values with
/// it under `applicationConfig:` (`helm upgrade … -f FILE`), headed by the `verdict` comment
/// line. Written beside FILE and renamed once whole, as `--output-file` is. The chart's
/// values hold the executor's whole config, which reads its categories at
/// `application.errorCategories`: a bare config (`errorCategories` at its top, `shape`) is
/// that `application:` part, so it goes under `applicationConfig.application`.
fn write_executor_config(
    path: &std::path::Path,
    format: ExecutorConfigFormat,
    verdict: &str,
    config: &str,
    shape: Shape,
) -> anyhow::Result<()> {
    let text = match format {
        ExecutorConfigFormat::Config => format!("{verdict}{config}"),
        ExecutorConfigFormat::Helm => {
            let mut v =
                format!("{verdict}# The executor chart's values: helm upgrade … -f this file.\napplicationConfig:\n");
            let pad = match shape {
                Shape::Executor => "  ",
                Shape::Bare => {
                    v.push_str("  application:\n");
                    "    "
                }
            };
            for line in config.lines() {
                match line.starts_with('#') || line.is_empty() {
                    true => v.push_str(&format!("{line}\n")),
                    false => v.push_str(&format!("{pad}{line}\n")),
                }
            }
            v
        }
    };
    let mut file = crate::commands::output_file::OutputFile::create(path)?;
    file.write_all(text.as_bytes())?;
    file.commit()
}
