//! Pass 2 of `suggest`: the refusals pass 1's counts call for before anything is printed,
//! the histories pass 2 reads (pass 1's copies, or a merge's files read again), the proposal
//! compared with the baseline as `simulate --baseline` compares them (on the whole history,
//! and with `--backtest-at` on the later jobs), and the verdict on it (docs/suggest.md "The
//! verdict").
//!
//! Owns: the order of those steps. Must not: learn, propose or render (the comparisons are
//! `replay`'s, their text `output::suggest`'s).

use std::io::{self, Write};
use std::path::PathBuf;

use crate::app::Context;
use crate::commands::replay::checks::{backtest_refusal, said_of_the_shards, shards_backtest_refusal};
use crate::commands::replay::lookout::{history_named, no_job};
use crate::commands::replay::sides::{ReplaySpec, Sides};
use crate::commands::replay::source::FileSource;
use crate::commands::replay::spool::{cannot_read_back, SpoolFile};
use crate::engine::JobReport;
use crate::error::CliError;
use crate::model::failure_history::FailureHistory;
use crate::output::stderr::Stderr;
use crate::output::style::Style;
use crate::output::suggest as view;
use crate::output::Format;
use crate::replay::backtest::Backtest;
use crate::replay::explained::MaxContradictions;
use crate::replay::incidents::{Detected, Look};
use crate::replay::policy_sets::OneCandidate;
use crate::replay::run::{compare_inspected, replay, NoAnswer, Options, Out};
use crate::replay::source::copy::{Copy, ReadAgain};
use crate::replay::source::{Either, OneQueue};
use crate::suggest::check::RuleCheck;
use crate::suggest::queues::ByQueue;
use crate::suggest::verdict::{judge_letting_run, Judged, Judgement, Later, LetRun, Queues};

use super::given::{History, Suggest, NOTHING};
use super::learn::{spool_test, Pass1};

/// The two sides pass 2 replays, what it reads, and the format its comparisons are captured
/// in.
pub(super) struct Pass2<'a> {
    /// The baseline and the proposal.
    pub sets: &'a OneCandidate,
    pub format: Format,
    /// What pass 1 found: the incident windows, whose trials the estimates' rates leave out,
    /// and the bursts and surges, said as `simulate --baseline` says them.
    pub incidents: Look,
    /// The sides as resolved: how the history's files are read again, whether the baseline
    /// explains the record, the flags of the replay.
    pub sides: &'a Sides,
    /// `--skip-invalid`: entries not replayed are counted and said.
    pub skip_invalid: bool,
    /// What pass 2 reads ([`histories`]), of pass 1's copies.
    pub histories: &'a Histories,
    pub pass: &'a Pass1,
}

/// The histories pass 2 reads: the whole history (pass 1's copy, or a merge's files read
/// again), and with `--backtest-at` the later jobs (pass 1's copy, or for a merge's shards,
/// which copied none, copied from the history here).
pub(super) struct Histories {
    whole: Whole,
    copied: Option<SpoolFile>,
    /// The proposal changes the cluster's categorizer: every queue's jobs are compared, not
    /// `--queue`'s alone (docs/suggest.md "Every queue the change reaches").
    pub every_queue: bool,
}

/// One history pass 2 reads.
#[derive(Clone, Copy)]
pub(super) enum Read {
    /// The whole history.
    Whole,
    /// The later jobs (`--backtest-at`).
    Test,
}

/// Where pass 2 reads the whole history from.
enum Whole {
    Copy,
    Files(PathBuf),
}

/// The refusals pass 1's counts call for, before anything is printed (a history changed
/// since pass 1 read it; jobs without `submittedAt`; nothing replayed; `--backtest-at`
/// leaving one side empty).
pub(super) fn after_pass1(ctx: &mut Context, s: &Suggest, pass: &mut Pass1) -> anyhow::Result<()> {
    let learning = &pass.learning;
    // Stopped before pass 2, which would have said why each unreadable entry was not
    // read: said here, before the error (as `simulate` says it).
    let nothing_replayed = learning.train_jobs + learning.test_jobs == 0 && !s.allow_empty;
    let one_side = s.sides.spec.backtest_at.is_some() && (learning.train_jobs == 0 || learning.test_jobs == 0);
    if learning.not_submitted.is_some() || nothing_replayed || one_side {
        ctx.err.write_all(&pass.unsaid)?;
    }
    let at = s.sides.spec.backtest_text();
    if let Some((jobs, first)) = learning.not_submitted.clone() {
        return Err(backtest_refused(s.merged, &NoAnswer::NotSubmitted { jobs, first }, at));
    }
    if nothing_replayed {
        // No entry at all (a merge's shards all empty): an empty history, in its words.
        if let (0, History::File(history)) = (learning.errors, &s.history) {
            return Err(no_job(&history_named(history), None, NOTHING).into());
        }
        return Err(CliError::invalid(format!(
            "no job could be replayed ({} not read): there is nothing to learn from",
            crate::engine::job_report::plural(learning.errors, "entry", "entries")
        ))
        .into());
    }
    if one_side {
        let one = CliError::usage(format!(
            "`--backtest-at {at}` leaves {} jobs to learn from and {} to test on: both need at least one",
            learning.train_jobs, learning.test_jobs
        ))
        .with_hint("pick a time between the first and the last submission");
        return Err(refused(
            s.merged,
            one,
            "run the shards again with a `--backtest-at` between the first and the last submission",
        ));
    }
    Ok(())
}

/// A refusal of `--backtest-at` after pass 1: one process's; a merge's in the same words
/// said of the shards' flag (merge itself was given none), with what to do: `again`.
fn refused(merged: bool, one: CliError, again: &str) -> anyhow::Error {
    if merged { said_of_the_shards(one, again) } else { one }.into()
}

/// `--backtest-at` without an answer from pass 1's counts, as `simulate` (or, merged,
/// `merge`) says it.
fn backtest_refused(merged: bool, e: &NoAnswer, at: &str) -> anyhow::Error {
    if merged {
        shards_backtest_refusal(e, at)
    } else {
        backtest_refusal(e, at)
    }
    .into()
}

/// The estimates' backtest at `--backtest-at`, its rates without the incident windows
/// `detected` (as pass 2's), refused (no trials on a side) as `simulate --backtest-at`
/// refuses it (`merged`: as a merge refuses it).
pub(super) fn backtest_estimates(
    pass: &mut Pass1,
    detected: &Detected,
    spec: &ReplaySpec,
    merged: bool,
) -> anyhow::Result<Option<Backtest>> {
    let Some(backtest_at) = spec.backtest_time() else {
        return Ok(None);
    };
    let options = Options {
        backtest_at: Some(backtest_at),
        shard: None,
        explain: false,
        incidents: spec.look().clone(),
        contention: false,
        contention_sharded: false,
    };
    let finished = std::mem::take(&mut pass.learning.trials)
        .finish_with(&options, Some(detected))
        .map_err(|e| backtest_refused(merged, &e, spec.backtest_text()))?;
    Ok(finished.backtest)
}

/// What pass 2 reads ([`Histories`]), the later jobs copied before anything is printed.
pub(super) fn histories(
    pass: &Pass1,
    every_queue: bool,
    sides: &Sides,
    history: &History,
) -> anyhow::Result<Histories> {
    let whole = match (&pass.copy, history) {
        (Some(_), _) => Whole::Copy,
        (None, History::File(path)) => Whole::Files(path.clone()),
        (None, History::Lookout(_)) => unreachable!("one process copies its history, a merge reads files"),
    };
    let mut histories = Histories {
        whole,
        copied: None,
        every_queue,
    };
    // A merge's shards copied no test jobs: they are copied from the history here.
    if let (Some(at), None) = (sides.spec.backtest_time(), &pass.test) {
        let source = open(&histories, pass, Read::Whole, sides)?;
        histories.copied = Some(spool_test(source, at, &pass.places)?);
    }
    Ok(histories)
}

/// What pass 2 reads as `read`: a copy of pass 1's, or the files again (with the
/// command's scheduler config and overrides).
fn open(histories: &Histories, pass: &Pass1, read: Read, sides: &Sides) -> anyhow::Result<ReadAgain> {
    let copy = match (read, &histories.whole) {
        (Read::Test, _) => pass.test.as_ref().or(histories.copied.as_ref()),
        (Read::Whole, Whole::Copy) => pass.copy.as_ref(),
        (Read::Whole, Whole::Files(path)) => {
            // Pass 2 replays the jobs pass 1 learned from: `--queue`'s alone (their
            // count said once, after pass 1's source).
            let files = FileSource::open(sides, path)?.files;
            return Ok(Either::Right(match histories.every_queue {
                true => files.only(None),
                false => files,
            }));
        }
    };
    let Some(copy) = copy else {
        unreachable!("a history pass 2 reads is copied or read again")
    };
    let copy = copy
        .reader()
        .and_then(|f| Copy::open(f, &pass.places, pass.bulk))
        .map_err(cannot_read_back)?;
    // The copy holds every queue's jobs. Their own filter: pass 1 counted and said those
    // of other queues.
    let queue = match histories.every_queue {
        true => None,
        false => pass.queue.as_ref().map(|q| OneQueue::new(q.name())),
    };
    Ok(Either::Left(copy.only(queue)))
}

impl Pass2<'_> {
    /// What pass 2 reads as `read` (see [`open`]).
    pub(super) fn open(&self, read: Read) -> anyhow::Result<ReadAgain> {
        open(self.histories, self.pass, read, self.sides)
    }

    /// The proposal against the baseline over `path`, written as the `comparison` member of
    /// `doc` and captured for the verdict; `check`: the proposal's rules checked on the
    /// candidate's decision records (the whole history), whose messages go to stderr (the
    /// later jobs' were said already).
    pub(super) fn compare(
        &self,
        (err, style): (&mut dyn Write, Style),
        doc: &mut view::Doc,
        out: &mut dyn Write,
        source: ReadAgain,
        check: Option<&RuleCheck>,
        by_queue: Option<&ByQueue>,
    ) -> anyhow::Result<view::Captured> {
        let options = Options {
            backtest_at: None,
            shard: None,
            explain: self.sides.baseline.explains(),
            incidents: self.incidents.clone(),
            // The whole history's comparison (the one whose rules are checked) says the
            // contention; the backtest's later jobs' does not.
            contention: self.sides.spec.contention && check.is_some(),
            contention_sharded: false,
        };
        let mut out = doc.member(out, "comparison")?;
        let mut quiet = io::sink();
        let stderr = match check {
            Some(_) => Stderr::new(err, style, None, self.sides.spec.sides.retry_policies.is_some())
                .skipping(self.skip_invalid),
            None => Stderr::new(&mut quiet, style, None, false),
        };
        let mut sink = view::CaptureSink::new(self.format, &mut out, stderr);
        // The proposal's rules are checked on the learned queue's jobs (other queues' jobs
        // replay under their own policies); every queue's are counted apart.
        let learned = self.sides.spec.queue.as_deref();
        let look = |h: &FailureHistory, b: &JobReport, p: &JobReport| {
            if let Some(c) = check.filter(|_| learned.is_none_or(|q| h.job.queue.as_deref() == Some(q))) {
                c.look(h, b, p);
            }
            if let Some(q) = by_queue {
                q.look(h, b, p);
            }
        };
        let inspect = check.is_some() || by_queue.is_some();
        let done = compare_inspected(
            source,
            self.sets,
            &options,
            Out::Sink(&mut sink),
            inspect.then_some(&look as _),
        )?;
        // A sum past 128 bits refuses the history, as `simulate --baseline` refuses it (the
        // other refusals are pass 1's, said before anything is printed).
        if let Some(NoAnswer::Overflow(o)) = &done.refused {
            return Err(CliError::invalid(o.message()).into());
        }
        let captured = sink.finish(done.comparison);
        out.finish()?;
        Ok(captured)
    }

    /// The baseline's own expected GPU-hours over its Pending jobs of `path`: a plain replay.
    pub(super) fn pending_gpu_hours(&self, style: Style, source: ReadAgain) -> anyhow::Result<f64> {
        let options = Options {
            backtest_at: None,
            shard: None,
            explain: false,
            incidents: self.incidents.clone(),
            contention: false,
            contention_sharded: false,
        };
        let (mut quiet, mut nothing) = (io::sink(), io::sink());
        let stderr = Stderr::new(&mut quiet, style, None, false);
        let mut sink = view::CaptureSink::new(None, &mut nothing, stderr);
        replay(source, &self.sets.baseline, &options, Out::Sink(&mut sink))?;
        Ok(sink.pending_gpu_hours())
    }
}

/// The verdict on the proposal (docs/suggest.md "The verdict"): on the learned history (with
/// `--backtest-at`, the whole history's comparison less the later jobs'), and on the later jobs.
pub(super) fn judge_proposal(
    whole: &view::Captured,
    backtest: Option<&(view::Captured, view::BacktestTail)>,
    max_contradictions: MaxContradictions,
    queues: Option<Queues<'_>>,
    let_run: LetRun,
) -> Judgement {
    let (learned, lost_jobs) = match backtest {
        Some((test, _)) => (
            whole.comparison.less(&test.comparison),
            whole
                .lost_jobs
                .iter()
                .filter(|j| !test.lost_jobs.contains(j))
                .cloned()
                .collect(),
        ),
        None => (whole.comparison.clone(), whole.lost_jobs.clone()),
    };
    judge_letting_run(
        Judged {
            comparison: &learned,
            lost_jobs: &lost_jobs,
            // The whole record, learned and later jobs: it is what the cluster ran.
            explained: whole.comparison.explained.as_ref().map(|e| (e, max_contradictions)),
            queues,
        },
        backtest.map(|(_, tail)| Later {
            false_kills: tail.false_kills,
            false_kill_jobs: &tail.false_kill_jobs,
            gpu_hours_saved: tail.gpu_hours_saved,
        }),
        let_run,
    )
}
