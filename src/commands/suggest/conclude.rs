//! After pass 1, the same for one process and for a sharded suggest's merge: propose (the
//! rules, the default, the documents), compare (pass 2: the proposal against the baseline on
//! the whole history, and on the test jobs with `--backtest-at`), judge (the verdict), write
//! (the format asked, `-o policy`'s documents, `--executor-config`) and the exit status.
//!
//! Owns: [`conclude`] and its steps, and the report it hands to `output::suggest`. Must not:
//! read pass 1's history (it is given the learning and the histories to read again), or
//! decide a verdict's rules (`suggest::verdict`).

use std::io::{self, Write};

use crate::app::Context;
use crate::cli::{ExecutorConfigFormat, SuggestOutput};
use crate::commands::replay::checks::said_after_replay;
use crate::commands::replay::sides::Sides;
use crate::engine::simulator::Simulator;
use crate::engine::EngineFrom;
use crate::error::ExitCode;
use crate::model::categorizer::Shape;
use crate::output::mode::Baseline;
use crate::output::style::Style;
use crate::output::suggest::{self as view, Report};
use crate::output::Format;
use crate::replay::backtest::Backtest;
use crate::replay::policy_sets::{OneCandidate, PolicySets};
use crate::suggest::check::RuleCheck;
use crate::suggest::documents;
use crate::suggest::nodes::{suspects, Suspect};
use crate::suggest::queues::{unseen, ByQueue, QueueCounts};
use crate::suggest::verdict::{Decision, Judgement, Queues};

use super::compare::{after_pass1, backtest_estimates, histories, judge_proposal, Pass2, Read};
use super::given::{Concluded, Suggest};
use super::incidents::{self, incidents, Incidents};
use super::learn::Pass1;
use super::next::commands;
use super::proposal::{Proposal, Proposer};
use super::propose::Made;

/// Propose → compare → judge → write, after pass 1 (`pass`).
pub(super) fn conclude(
    ctx: &mut Context,
    s: &Suggest,
    baseline: &Simulator,
    from: Baseline,
    mut pass: Pass1,
) -> anyhow::Result<Concluded> {
    let sides = &s.sides;
    after_pass1(ctx, s, &mut pass)?;
    // The incident windows, their runs left out of what pass 1 learned.
    let incidents = incidents(&mut pass, baseline, sides, &s.history)?;
    // What incidents left out, said on stderr in every format.
    let left_out = incidents.found.as_ref().and_then(view::left_out);
    if let Some(l) = &left_out {
        writeln!(ctx.err, "{}", l.stderr)?;
        if let Some(w) = &l.warning {
            writeln!(ctx.err, "{}: {w}", ctx.style.warning("warning"))?;
        }
    }
    let estimates_backtest = backtest_estimates(&mut pass, &incidents.detected, &sides.spec, s.merged)?;
    let learned = &pass.learning.learned;
    let sorted = learned.sorted();
    let proposer = Proposer {
        sides,
        run: &s.run,
        knobs: s.knobs,
        baseline,
    };
    let with = incidents.with.as_deref();
    let made = proposer.propose(&mut *ctx.err, learned, &pass.learning.exits, &sorted, with)?;
    // The categorizer is the cluster's: a proposal that changes it is compared on every
    // queue (docs/suggest.md "Every queue the change reaches").
    let every_queue = made.proposal.changes_categorizer();
    let histories = histories(&pass, every_queue, sides, &s.history)?;
    let by_queue = every_queue.then(ByQueue::default);
    // `-o policy` replays the proposal too, for its verdict, and prints none of it.
    let policy = s.output == SuggestOutput::Policy;
    let mut discard = io::sink();
    let out: &mut dyn Write = if policy { &mut discard } else { &mut *ctx.out };
    let format = Format::from(s.output);
    let mut doc = view::Doc::new(format, ctx.style);
    proposal_head(&mut doc, &mut *out, s, &made)?;
    // Compare: the proposal against the baseline on the whole history; the baseline's
    // decisions (of the train jobs) and the proposal's rules checked on the way.
    let (rules, proposal) = (&made.rules, &made.proposal);
    let check = RuleCheck::new(
        rules,
        proposal.upstream.as_ref().map(|u| &u.rule_index[..]),
        &s.run.name,
        learned,
    );
    let sets = policy_sets(sides, baseline, proposal);
    let side = Pass2 {
        sets: &sets,
        format,
        incidents: incidents::known(&incidents),
        sides,
        skip_invalid: s.run.skip_invalid,
        histories: &histories,
        pass: &pass,
    };
    let whole = side.open(Read::Whole)?;
    let err = (&mut *ctx.err as &mut dyn Write, ctx.style);
    let whole_cmp = side.compare(err, &mut doc, &mut *out, whole, Some(&check), by_queue.as_ref())?;
    // Every queue compared, and today's queues the history lacks, when the categorizer
    // changes.
    let queue_counts = by_queue.map(ByQueue::into_counts).unwrap_or_default();
    let suspects = suspects(learned);
    let report = report(s, &proposer, from, &pass, &made, &suspects, &queue_counts, &incidents);
    doc.after_comparison(&mut *out, &report, &check.shadowed())?;
    let err = (&mut *ctx.err as &mut dyn Write, ctx.style);
    let backtest = backtest(err, &mut doc, &mut *out, &side, &report, estimates_backtest.as_ref())?;
    let judgement = match s.allow_empty {
        // `--allow-empty` on a history with no job: nothing learned, today's policy stays,
        // said as every verdict is.
        true => Judgement {
            decision: Decision::Keep,
            reasons: vec![format!(
                "no job in {}: nothing learned, nothing proposed",
                s.history.named()
            )],
        },
        false => judge(
            s,
            baseline,
            &made,
            &whole_cmp,
            backtest.as_ref(),
            every_queue.then_some(&queue_counts[..]),
        ),
    };
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
    if let (Some((path, format)), Some(u)) = (&s.executor_config, &proposal.upstream) {
        write_executor_config(path, *format, &verdict, &u.executor_config(), u.shape)?;
    }
    let code = exit_status(ctx, &whole_cmp, &judgement, s.run.skip_invalid)?;
    Ok(Concluded { code, every_queue })
}

/// The head of the proposal, before its comparison: its engine, name and rules, said alike
/// in every format (the policy's `retryLimit` as `-o policy` writes it).
fn proposal_head(doc: &mut view::Doc, out: &mut dyn Write, s: &Suggest, made: &Made<'_>) -> io::Result<()> {
    let proposal = &made.proposal;
    doc.proposal_head(
        out,
        &view::Head {
            engine: s.sides.engine,
            name: &s.run.name,
            rules: &made.rules,
            kept: &proposal.kept,
            upstream: proposal.upstream.as_ref(),
            policy_retry_limit: proposal.policy_retry_limit(),
        },
    )
}

/// What pass 2 replays: the baseline and the proposal, as the sides make every verb's.
fn policy_sets(sides: &Sides, baseline: &Simulator, proposal: &Proposal) -> OneCandidate {
    let proposed = crate::replay::policy_sets::PolicySet {
        name: String::new(),
        simulator: proposal.sim.clone(),
        settings: None,
    };
    sides
        .policy_sets(Some(baseline.clone()), Some(vec![proposed]))
        .and_then(PolicySets::one)
        .expect("a baseline and one proposal")
}

/// Why the engine decides, in the words the report's first line says it with
/// (docs/engines.md "Which engine decides").
fn engine_why(from: EngineFrom) -> String {
    match from {
        EngineFrom::Flag => "`--engine`".to_string(),
        EngineFrom::Baseline(what) => format!("the baseline {what}"),
        EngineFrom::Cluster => "the cluster stores today's Armada's policies".to_string(),
        EngineFrom::NoBaseline => "no baseline to take a dialect from".to_string(),
    }
}

/// What was learned and proposed, for `output::suggest`: everything but the comparisons.
// Each argument is a part of what `conclude` already holds apart (the run, the proposer, the
// pass, what was proposed, the counts made after pass 2, the windows); a struct of them
// would be built for this one call.
#[allow(clippy::too_many_arguments)]
fn report<'a>(
    s: &'a Suggest,
    proposer: &Proposer<'_>,
    from: Baseline,
    pass: &'a Pass1,
    made: &'a Made<'a>,
    suspects: &'a [Suspect],
    queues: &'a [QueueCounts],
    incidents: &'a Incidents,
) -> Report<'a> {
    let learned = &pass.learning.learned;
    let (rules, default, proposal) = (&made.rules, &made.default, &made.proposal);
    Report {
        engine: s.sides.engine,
        engine_why: engine_why(s.sides.engine_from),
        name: &s.run.name,
        knobs: s.knobs,
        jobs: pass.learning.train_jobs,
        failed_runs: learned.failed_runs,
        signatures: &made.verdicts,
        rules,
        default,
        kept: &proposal.kept,
        upstream: proposal.upstream.as_ref(),
        policy_retry_limit: proposal.policy_retry_limit(),
        documents: &proposal.text,
        suspects,
        nodes_named: !learned.nodes.is_empty(),
        baseline_from: from,
        commands: commands(s, rules, default, proposal),
        backtest: s.sides.spec.backtest_at.as_ref().map(|b| view::BacktestHead {
            at: b.text.clone(),
            train_jobs: pass.learning.train_jobs,
            test_jobs: pass.learning.test_jobs,
        }),
        queues,
        // Bursts and surges alone leave nothing out: no `Incidents:` block.
        incidents: incidents
            .found
            .as_ref()
            .filter(|f| !f.windows.is_empty())
            .map(|found| view::IncidentsView {
                found,
                sensitive: &made.sensitive,
                short_backoff: proposer.short_backoff(rules, learned, found),
            }),
        collisions_ran: learned.collisions_ran,
        busy: incidents.found.as_ref().map_or(&[][..], |f| &f.busy[..]),
    }
}

/// With `--backtest-at`: the proposal against the baseline on the later jobs, written after
/// the backtest's head, and its tail (false kills, hours saved, the estimates' backtest).
fn backtest(
    (err, style): (&mut dyn Write, Style),
    doc: &mut view::Doc,
    out: &mut dyn Write,
    side: &Pass2<'_>,
    report: &Report<'_>,
    estimates: Option<&Backtest>,
) -> anyhow::Result<Option<(view::Captured, view::BacktestTail)>> {
    if report.backtest.is_none() {
        return Ok(None);
    }
    doc.backtest_head(&mut *out, report)?;
    let test = side.open(Read::Test)?;
    let test_cmp = side.compare((err, style), doc, &mut *out, test, None, None)?;
    let again = side.open(Read::Test)?;
    let pending = side.pending_gpu_hours(style, again)?;
    let tail = view::backtest_tail(&test_cmp, pending, estimates);
    doc.backtest_tail(&mut *out, &tail)?;
    Ok(Some((test_cmp, tail)))
}

/// Judge: the verdict on the comparison (and the backtest), every queue's counts with it
/// when the categorizer changes (`counts`), the retries `made`'s categorizer lets run.
fn judge(
    s: &Suggest,
    baseline: &Simulator,
    made: &Made<'_>,
    whole: &view::Captured,
    backtest: Option<&(view::Captured, view::BacktestTail)>,
    counts: Option<&[QueueCounts]>,
) -> Judgement {
    let unseen = match counts {
        Some(counts) => unseen(&baseline.queue_names(), counts),
        None => Vec::new(),
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
        s.run.max_contradictions,
        counts.map(|counts| Queues {
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
    ctx: &mut Context,
    whole: &view::Captured,
    judgement: &Judgement,
    skip_invalid: bool,
) -> anyhow::Result<ExitCode> {
    let not_replayed = said_after_replay(
        &mut *ctx.err,
        ctx.style,
        &whole.comparison.recorded,
        whole.comparison.errors,
        skip_invalid,
    )?;
    Ok(match not_replayed {
        Some(code) => code,
        None if judgement.decision == Decision::Reject => ExitCode::Failure,
        None => ExitCode::Success,
    })
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
