//! `retryctl suggest`: a retry policy learned from the cluster's own failures
//! (docs/reference/suggest.md).
//!
//! Load (the baseline, the deployed categorizer, the history's source through
//! `replay_source`) → learn (pass 1: every job replayed under the baseline, its failed runs'
//! signatures counted, `suggest::stats`) → propose (`suggest::propose`, `suggest::documents`;
//! the documents read back through `validate`'s reader) → compare (pass 2: the what-if of
//! `simulate --baseline`, the proposal as the candidate, its rules checked on the
//! candidate's own decision records) → `output::suggest`. Must not: match rules, decide runs
//! or format output itself.
//!
//! Sharded (docs/past-one-machine.md): a shard (`--shard I/N -o partial`) runs pass 1 over
//! its share and writes it ([`SuggestTotals`]); `merge` folds the shards ([`SuggestFold`]) and
//! calls [`merge`], which loads the inputs again through the same `load` and ends through the
//! same `conclude` as one process: no second copy of the proposal, pass 2 or rendering.
//!
//! Decisions the docs leave open:
//! - a source that cannot be read twice (stdin or another stream, Lookout's database) is
//!   spooled to a temporary JSON Lines file in pass 1 and pass 2 reads that; entries that
//!   cannot be read are then reported in pass 1 (once), and the comparison counts the jobs it
//!   replayed;
//! - with `--backtest-at`, `proposal.comparison` is the proposal's effect on the whole
//!   history (as `simulate` would print it), and `backtest` the jobs at or after the time;
//! - `-o policy` prints the documents without the comparison pass;
//! - `--queue` (with `--history`) only names the Queue `-o policy` prints: the baseline's
//!   Queue of that name with the proposal as its only policy (the comparison replaced every
//!   policy with it), else a new one;
//! - a shard lists no entries: what pass 1 cannot read, the merge's pass 2 says (one process
//!   with a file says it in pass 2 too); `--shard` without `-o partial` is a usage error.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::app::Context;
use crate::cli::{ReplayArgs, SuggestArgs, SuggestOutput};
use crate::commands::replay::checks::{
    backtest_refusal, parse_backtest_at, said_of_the_shards, shards_backtest_refusal, shell_word,
};
use crate::commands::replay::lookout::{history_named, no_job};
use crate::commands::replay::policy_set::{base_config, PolicyFlags};
use crate::commands::replay::sides::{self, Baseline as Sides};
use crate::commands::replay::source::{self, check_flags, check_source, overrides, About, Open};
use crate::commands::replay::spool::{cannot_spool, spool_file, SpoolFile};
use crate::engine::categorizer::Classifier;
use crate::engine::simulator::Simulator;
use crate::engine::{EngineKind, JobReport};
use crate::error::{CliError, ExitCode};
use crate::input;
use crate::model::categorizer::ErrorCategories;
use crate::model::failure_history::{failure_history_json, FailureHistory, Timestamp};
use crate::model::Resource;
use crate::output::simulate::{invalid_text, render_change, Baseline, Stderr};
use crate::output::suggest::{self as view, Report};
use crate::replay::categorize::Reclassify;
use crate::replay::parallel::{for_each_ordered, Emitted, Processed};
use crate::replay::partial::{fingerprint, Header, Recorder};
use crate::replay::run::{compare_inspected, replay, replay_side, NoAnswer, Options, Out, TrialCount};
use crate::replay::shard::Shard;
use crate::replay::source::{is_stream, Altered, Files, HistorySource, Stamps};
use crate::suggest::check::{current_of, RuleCheck};
use crate::suggest::documents::{self, Documented, Settings, Upstream};
use crate::suggest::nodes::suspects;
use crate::suggest::propose::{propose, Knobs, MAX_LIMIT};
use crate::suggest::stats::{Current, Learned, UnitLearned};
use crate::suggest::today::{self, Kept};
use crate::suggest::verdict::{judge, Decision, Judged, Judgement, Later};

mod shards;
pub use shards::{merge, Shards, SuggestFold, SuggestRun, SuggestTotals, Unmergeable};

pub fn run(ctx: &mut Context, args: &SuggestArgs) -> anyhow::Result<ExitCode> {
    let knobs = check(args)?;
    let replay_args = replay_args(args);
    let flags = PolicyFlags::new(false, &replay_args);
    let Some((suggest, baseline)) = load(ctx, args, knobs)? else {
        return Ok(ExitCode::InvalidInput);
    };
    let open = Open {
        flags,
        baseline,
        partial: args.output == SuggestOutput::Partial,
        strict: false,
        nothing: NOTHING,
    };
    let Some(opened) = source::open(ctx, &replay_args, open)? else {
        return Ok(ExitCode::InvalidInput);
    };
    if opened.empty {
        // `--allow-empty`: nothing learned, nothing proposed: exit 0 with nothing printed.
        return Ok(ExitCode::Success);
    }
    let code = suggest.drive(ctx, opened.source, opened.baseline, opened.from, opened.about)?;
    opened.end.finish(ctx, code)
}

/// The checks of suggest's flags before anything is read (`--emit` makes them too, in the
/// same words): the knobs, what a sharded suggest cannot read, the source's flags, the time.
pub fn check(args: &SuggestArgs) -> Result<Knobs, CliError> {
    let knobs = check_knobs(args)?;
    check_sharded(args)?;
    check_flags(&replay_args(args), &[])?;
    check_source(&args.replay, args.emit.emit.is_none())?;
    args.replay.backtest_at.as_deref().map(parse_backtest_at).transpose()?;
    Ok(knobs)
}

/// `--queue` with `--history` names the Queue `-o policy` prints; with `--lookout-db` it also
/// selects the jobs, as for `simulate`.
fn replay_args(args: &SuggestArgs) -> ReplayArgs {
    let mut replay_args: ReplayArgs = args.replay.clone();
    if replay_args.lookout_db.is_none() {
        replay_args.queue = None;
    }
    replay_args
}

/// A sharded suggest (`--shard`, `-o partial`, `--emit`): its shards learn, and its merge
/// proposes and then compares over the whole history, which it reads again
/// (docs/past-one-machine.md). A source the merge cannot read again is refused, as is a
/// shard that would print anything but its learning.
fn check_sharded(args: &SuggestArgs) -> Result<(), CliError> {
    let r = &args.replay;
    let partial = args.output == SuggestOutput::Partial;
    // With `--emit`, deploy's own words: the documents run every shard themselves.
    if let (Some(shard), false, None) = (r.shard, partial, args.emit.emit) {
        return Err(CliError::usage(format!(
            "`suggest --shard {shard}` writes what the shard learned: give `-o partial`, then `retryctl merge` the shards' partials"
        )));
    }
    let sharded = partial || args.emit.emit.is_some();
    if !sharded {
        return Ok(());
    }
    let how = match (args.emit.emit, r.shard) {
        (Some(_), _) => "`--emit`",
        (None, Some(_)) => "`--shard`",
        (None, None) => "`-o partial`",
    };
    if let Some(h) = r.history.as_ref().filter(|h| is_stream(h)) {
        let once = if h.as_os_str() == "-" {
            "stdin is read once".to_string()
        } else {
            format!("`{}` is not a regular file: it is read once", h.display())
        };
        return Err(CliError::usage(format!(
            "`suggest` with {how} cannot read `--history {}`: its merge reads the history again to compare the proposal, and {once}",
            h.display()
        ))
        .with_hint("write the history to a file first (`retryctl history … --output-file FILE` exports one), then give `--history FILE`"));
    }
    if r.lookout_db.is_some() {
        return Err(CliError::usage(format!(
            "`suggest` with {how} cannot read `--lookout-db`: its merge reads the history again to compare the proposal, and it reads files only (a partial never holds the DSN)"
        ))
        .with_hint("export the jobs to a file first (`retryctl history --lookout-db DSN --queue Q --from … --to … --output-file FILE`), then give `--history FILE`"));
    }
    Ok(())
}

/// What every pass reads, loaded as one process loads it (a sharded suggest's merge loads it
/// again, from the shards' run, through this same function): the baseline side (its files,
/// `None` when invalid: the report written, exit 3; and the deployed categorizer, read once).
fn load<'a>(ctx: &mut Context, args: &'a SuggestArgs, knobs: Knobs) -> anyhow::Result<Option<(Suggest<'a>, Sides)>> {
    let replay_args = replay_args(args);
    let backtest_at = args.replay.backtest_at.as_deref().map(parse_backtest_at).transpose()?;
    let flags = PolicyFlags::new(false, &replay_args);
    let engine = args.replay.engine.map_or(EngineKind::Design, EngineKind::from);
    let baseline_engine = args.replay.baseline_engine.map_or(engine, EngineKind::from);
    let Some(mut baseline) = Sides::from_flags(ctx, &replay_args, flags, baseline_engine, None)? else {
        return Ok(None);
    };
    let deployed = sides::categorizer(ctx, args.categorizer.as_deref())?;
    baseline.categorizer = sides::compiled(deployed.as_ref());
    let suggest = Suggest {
        args,
        knobs,
        engine,
        baseline_engine,
        backtest_at,
        deployed: deployed.map(|c| c.file.config),
        categorizer: baseline.categorizer.clone(),
        merged: false,
    };
    Ok(Some((suggest, baseline)))
}

/// The knobs, each in its range (a usage error otherwise: exit 2, nothing on stdout).
fn check_knobs(args: &SuggestArgs) -> Result<Knobs, CliError> {
    if !(args.futile > 0.0 && args.futile < 1.0) {
        return Err(CliError::usage(format!(
            "invalid `--futile` `{}`: expected a share strictly between 0 and 1, such as `0.05`",
            args.futile
        )));
    }
    if args.min_trials < 1 {
        return Err(CliError::usage("invalid `--min-trials` `0`: expected 1 or more"));
    }
    if !(1..=MAX_LIMIT).contains(&args.max_limit) {
        return Err(CliError::usage(format!(
            "invalid `--max-limit` `{}`: expected 1 to {MAX_LIMIT}",
            args.max_limit
        )));
    }
    let name_ok = !args.name.is_empty()
        && args.name.len() <= 63
        && args
            .name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !args.name.starts_with('-')
        && !args.name.ends_with('-');
    if !name_ok {
        return Err(CliError::usage(format!(
            "invalid `--name` `{}`: expected a policy name (lowercase letters, digits and `-`, at most 63, starting and ending with a letter or digit)",
            args.name
        )));
    }
    Ok(Knobs {
        min_trials: args.min_trials,
        futile: args.futile,
        max_limit: args.max_limit,
        extrapolate: args.extrapolate,
    })
}

pub(super) struct Suggest<'a> {
    args: &'a SuggestArgs,
    knobs: Knobs,
    engine: EngineKind,
    baseline_engine: EngineKind,
    backtest_at: Option<Timestamp>,
    /// `--categorizer`'s config (the upstream proposal keeps its categories) and compiled.
    deployed: Option<ErrorCategories>,
    categorizer: Option<Arc<Classifier>>,
    /// A sharded suggest's merge: its refusals of `--backtest-at` name the shards' flag.
    merged: bool,
}

/// What pass 1 hands over besides the counts.
struct Pass1 {
    learned: Learned,
    /// Jobs replayed, on each side of `--backtest-at`.
    train_jobs: u64,
    test_jobs: u64,
    errors: u64,
    not_submitted: Option<(u64, String)>,
    /// The trials of every job (for the backtest of the estimates).
    trials: TrialCount,
    /// Every job (a source read once), when the second pass needs it.
    spool: Option<SpoolFile>,
    /// The jobs at or after `--backtest-at`.
    test: Option<SpoolFile>,
    /// A history read again: its files as they were before pass 1 read them.
    stamps: Option<Stamps>,
    /// What a source read twice would say of its unreadable entries in pass 2, as stderr
    /// has it (capped as `Stderr` caps it): said instead when pass 1's counts stop the
    /// command before pass 2 (no job replayed), so that an unreadable history is named with
    /// its file, line and reason as `simulate` names it.
    unsaid: Vec<u8>,
}

/// A worker's unit of pass 1: its scratch and the trials it counted.
#[derive(Default)]
struct Unit {
    learned: UnitLearned,
    trials: TrialCount,
    reclassify: Reclassify,
}

/// One job as pass 1's workers leave it.
struct Learnt {
    test: bool,
    spool: Option<Vec<u8>>,
    not_submitted: Option<String>,
}

/// The jobs submitted at or after `at`, copied from `source` (a sharded suggest's merge:
/// its shards learned, and the backtest's comparison replays these alone, as one process
/// replays the copy its pass 1 made). What cannot be read is pass 2's to say.
fn spool_test<S: HistorySource>(source: S, at: Timestamp) -> anyhow::Result<SpoolFile> {
    let mut file = spool_file().map_err(cannot_spool)?;
    let work = |_: &mut (), job: crate::replay::parallel::Decoded<'_>| -> Result<Option<Vec<u8>>, String> {
        let history = job.history;
        Ok(history.job.submitted_at.is_some_and(|s| s >= at).then(|| {
            let mut line = failure_history_json(history).to_string().into_bytes();
            line.push(b'\n');
            line
        }))
    };
    let mut failed: Option<io::Error> = None;
    for_each_ordered(source, None, work, |e| {
        if let Emitted::Job(_, Processed::Done(Some(line))) = e {
            if let Err(e) = file.write_all(&line) {
                failed.get_or_insert(e);
            }
        }
        Ok(true)
    })?;
    if let Some(e) = failed {
        return Err(cannot_spool(e));
    }
    file.flush().map_err(cannot_spool)?;
    Ok(file)
}

impl Suggest<'_> {
    /// Pass 1: the train jobs' failed runs counted; the test jobs (and, for a source read
    /// once, every job) spooled. `shard`: a shard's learning, for its partial: its own jobs
    /// only, every signature kept (the merge caps them), nothing spooled (the merge reads
    /// the history again).
    fn learn<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: &Simulator,
        spool_all: bool,
        shard: Option<Shard>,
    ) -> anyhow::Result<Pass1> {
        let at = self.backtest_at;
        let mut pass = Pass1 {
            learned: if shard.is_some() {
                Learned::uncapped()
            } else {
                Learned::default()
            },
            train_jobs: 0,
            test_jobs: 0,
            errors: 0,
            not_submitted: None,
            trials: TrialCount::default(),
            spool: spool_all.then(spool_file).transpose().map_err(cannot_spool)?,
            test: (at.is_some() && shard.is_none())
                .then(spool_file)
                .transpose()
                .map_err(cannot_spool)?,
            stamps: None,
            unsaid: Vec::new(),
        };
        let trial_options = Options {
            backtest_at: at,
            shard: None,
        };
        // Pass 1 counts what the history says, and what today's policy does with it (the
        // baseline replayed under its own categorizer): the proposal keeps the rules that
        // decide today, so it must know them before pass 2 compares.
        let work = |unit: &mut Unit, job: crate::replay::parallel::Decoded<'_>| -> Result<Learnt, String> {
            let history = job.history;
            let settings = job.settings;
            // The estimates' trials, split at `--backtest-at` (their backtest; without one,
            // the comparison counts its own).
            if at.is_some() {
                unit.trials.add(history, job.origin, &trial_options);
            }
            let (test, not_submitted) = match (at, history.job.submitted_at) {
                (None, _) => (false, None),
                (Some(at), Some(s)) => (s >= at, None),
                (Some(_), None) => (false, Some(history.job.id.clone())),
            };
            let spool = (spool_all || (test && shard.is_none())).then(|| {
                let mut line = failure_history_json(history).to_string().into_bytes();
                line.push(b'\n');
                line
            });
            if !test {
                unit.learned.add_job(history);
                let Unit {
                    learned, reclassify, ..
                } = unit;
                replay_side(baseline, settings, history, reclassify, |seen, report| {
                    learned.add_today(seen, |k| report.map_or(Current::Undecided, |r| current_of(r, k)));
                });
            }
            Ok(Learnt {
                test,
                spool,
                not_submitted,
            })
        };
        let mut stderr = Stderr::new(&mut *ctx.err, ctx.style, None, false);
        let mut unsaid = Vec::new();
        let mut kept = Stderr::new(&mut unsaid, ctx.style, None, false);
        let mut failed: Option<io::Error> = None;
        for_each_ordered(source, shard, work, |e| {
            let p = match e {
                Emitted::Job(_, p) => p,
                Emitted::Unit(unit, _) => {
                    pass.trials.merge(&unit.trials);
                    pass.learned.merge_unit(unit.learned);
                    return Ok(true);
                }
            };
            match p {
                Processed::Done(l) => {
                    if let Some(id) = l.not_submitted {
                        let n = pass.not_submitted.get_or_insert((0, id));
                        n.0 += 1;
                    }
                    if let Some(line) = &l.spool {
                        // A test job goes to the test file, and to the whole copy too.
                        let test = if l.test { pass.test.as_mut() } else { None };
                        let all = if spool_all { pass.spool.as_mut() } else { None };
                        for f in test.into_iter().chain(all) {
                            if let Err(e) = f.write_all(line) {
                                failed.get_or_insert(e);
                            }
                        }
                    }
                    if l.test {
                        pass.test_jobs += 1;
                    } else {
                        pass.train_jobs += 1;
                    }
                }
                // A source read twice says these in pass 2, as `simulate` does.
                Processed::Error(m) => {
                    pass.errors += 1;
                    let said = if spool_all { &mut stderr } else { &mut kept };
                    said.message(&crate::replay::sink::Message::Error(&m))?;
                }
                Processed::Invalid(f) => {
                    pass.errors += 1;
                    let said = if spool_all { &mut stderr } else { &mut kept };
                    said.message(&crate::replay::sink::Message::Invalid(&f))?;
                }
                Processed::LeftOut(text) => {
                    let said = if spool_all { &mut stderr } else { &mut kept };
                    said.message(&crate::replay::sink::Message::LeftOut(&text))?;
                }
            }
            Ok(true)
        })?;
        drop(stderr);
        kept.finish()?;
        drop(kept);
        pass.unsaid = unsaid;
        if let Some(e) = failed {
            return Err(cannot_spool(e));
        }
        for f in pass.spool.iter_mut().chain(pass.test.iter_mut()) {
            f.flush().map_err(cannot_spool)?;
        }
        Ok(pass)
    }

    /// The baseline's first policy's settings (the Queue's first with `--queue`), under the
    /// proposal's name.
    fn settings(&self, baseline: &Simulator) -> Settings {
        let queue_first = self
            .args
            .replay
            .queue
            .as_deref()
            .and_then(|q| baseline.queue(q))
            .and_then(|q| q.retry_policies.first())
            .and_then(|name| baseline.policies().find(|p| &p.name == name));
        let first = queue_first.or_else(|| baseline.policies().next());
        Settings {
            name: self.args.name.clone(),
            default_action: first.map(|p| p.default_action()),
            retry_limit: first.and_then(|p| p.retry_limit),
            backoff: first.map(|p| p.backoff).unwrap_or_default(),
            anti_affinity: first.and_then(|p| p.anti_affinity),
        }
    }

    /// The Queue `-o policy` prints with `--queue`.
    fn queue_document(&self, baseline: &Simulator) -> Option<String> {
        let name = self.args.replay.queue.as_deref()?;
        let mut q = baseline
            .queue(name)
            .cloned()
            .unwrap_or_else(|| crate::model::queue::Queue {
                name: name.to_string(),
                ..Default::default()
            });
        // First in the queue's list, never alone: the rest decides after it as today (the
        // file holds the proposal and the Queue; the others are on the server already).
        let name = &self.args.name;
        let rest: Vec<String> = q.retry_policies.iter().filter(|p| *p != name).cloned().collect();
        q.retry_policies = std::iter::once(name.clone()).chain(rest).collect();
        Some(crate::model::encode::to_yaml(&crate::model::encode::queue_document(&q)))
    }
}

/// The proposal as documents, read back through `validate`'s reader, and the Simulator (and
/// categorizer) that replays it.
struct Proposal {
    /// What `-o policy` prints.
    text: String,
    /// Today's rules it keeps after its own.
    kept: Vec<Kept>,
    upstream: Option<Upstream>,
    sim: Simulator,
}

impl Suggest<'_> {
    /// Pass 1 over `source`, then the rest ([`Suggest::conclude`]); with `-o partial`, pass 1
    /// alone, written for `merge`.
    fn drive<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: Option<Simulator>,
        from: Baseline,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let baseline = self.baseline(baseline)?;
        if self.args.output == SuggestOutput::Partial {
            return self.write_partial(ctx, source, &baseline, about);
        }
        // A file or directory is read again; stdin and the database are spooled.
        let spool_all = self.reread().is_none();
        let mut pass = self.learn(ctx, source, &baseline, spool_all, None)?;
        pass.stamps = about.stamps;
        self.conclude(ctx, &baseline, from, pass)
    }
}

/// The end of the error for an empty history (docs/cli.md, exit codes).
const NOTHING: &str = "nothing to learn from";

impl Suggest<'_> {
    /// The baseline both passes replay: `--baseline`'s, its categorizer the deployed one
    /// (the source attached it), or none: no policy, the engine's default path, with the
    /// deployed categorizer.
    fn baseline(&self, given: Option<Simulator>) -> anyhow::Result<Simulator> {
        match given {
            Some(b) => Ok(b),
            None => Ok(Simulator::new(Vec::new(), Vec::new(), None)
                .map_err(CliError::invalid)?
                .with_engine(self.baseline_engine)
                .with_categorizer(self.categorizer.clone())),
        }
    }

    /// The history file or directory, which pass 2 reads again (`None`: a source read once,
    /// stdin or another stream, or the database).
    fn reread(&self) -> Option<PathBuf> {
        self.args.replay.history.clone().filter(|h| !is_stream(h))
    }

    /// `-o partial`: the shard's learning (pass 1 over its share), for `merge`, which
    /// proposes and compares. Exit 0 once it is written: the answer is the merge's.
    fn write_partial<S: HistorySource>(
        &self,
        ctx: &mut Context,
        source: S,
        baseline: &Simulator,
        about: About,
    ) -> anyhow::Result<ExitCode> {
        let shard = self.args.replay.shard.unwrap_or(Shard::WHOLE);
        let run = SuggestRun::new(self.args, self.engine, self.baseline_engine);
        let inputs = self.inputs(&run, baseline, shard.count, &about.source);
        let pass = self.learn(ctx, source, baseline, false, Some(shard))?;
        let header = Header::new(shard, fingerprint(&inputs), serde_json::to_value(&run)?);
        // What pass 1 could not read is said by the merge's pass 2, which reads it again
        // (as one process says it): the partial lists no entries, it counts them.
        let rec = Recorder::new(&mut *ctx.out, &header, invalid_text, render_change)?;
        rec.end(about.digest.get(), SuggestTotals::of(pass), None)?;
        Ok(ExitCode::Success)
    }

    /// What a partial's fingerprint holds: every input that changes the answer (the run's
    /// flags, the baseline's documents and categorizer, the deployed categorizer's config,
    /// the source and its settings, N). The merge computes it again from what it loads.
    fn inputs(
        &self,
        run: &SuggestRun,
        baseline: &Simulator,
        shards: u64,
        source: &serde_json::Value,
    ) -> serde_json::Value {
        serde_json::json!({
            "run": run,
            "shards": shards,
            "baseline": baseline.fingerprint(),
            "deployed": self.deployed.as_ref().map(|d| format!("{d:?}")),
            "source": source,
        })
    }

    /// A refusal of `--backtest-at` after pass 1: one process's; a merge's in the same words
    /// said of the shards' flag (merge itself was given none), with what to do: `again`.
    fn refused(&self, one: CliError, again: &str) -> anyhow::Error {
        if self.merged {
            said_of_the_shards(one, again)
        } else {
            one
        }
        .into()
    }

    /// `--backtest-at` without an answer from pass 1's counts, as `simulate` (or, merged,
    /// `merge`) says it.
    fn backtest_refused(&self, e: &NoAnswer, at: &str) -> anyhow::Error {
        if self.merged {
            shards_backtest_refusal(e, at)
        } else {
            backtest_refusal(e, at)
        }
        .into()
    }

    /// After pass 1, the same for one process and for a sharded suggest's merge: the
    /// refusals pass 1's counts call for, the proposal, its documents, pass 2 (the
    /// comparison, over the history read again or its spooled copy) and the output.
    fn conclude(
        &self,
        ctx: &mut Context,
        baseline: &Simulator,
        from: Baseline,
        mut pass: Pass1,
    ) -> anyhow::Result<ExitCode> {
        let args = self.args;
        let reread = self.reread();
        if let (Some(path), Some(before)) = (&reread, &pass.stamps) {
            changed_since(path, before, &base_config(&args.replay)?, &overrides(&args.replay))?;
        }
        // Stopped before pass 2, which would have said why each unreadable entry was not
        // read: said here, before the error (as `simulate` says it).
        let nothing_replayed = pass.train_jobs + pass.test_jobs == 0;
        let one_side = self.backtest_at.is_some() && (pass.train_jobs == 0 || pass.test_jobs == 0);
        if pass.not_submitted.is_some() || nothing_replayed || one_side {
            ctx.err.write_all(&pass.unsaid)?;
        }
        if let Some((jobs, first)) = pass.not_submitted.clone() {
            let at = args.replay.backtest_at.as_deref().unwrap_or_default();
            return Err(self.backtest_refused(&NoAnswer::NotSubmitted { jobs, first }, at));
        }
        if nothing_replayed {
            // No entry at all (a merge's shards all empty): an empty history, in its words.
            if let (0, None, Some(history)) = (pass.errors, &args.replay.lookout_db, &args.replay.history) {
                return Err(no_job(&history_named(history), None, NOTHING).into());
            }
            return Err(CliError::invalid(format!(
                "no job could be replayed ({} not read): there is nothing to learn from",
                crate::engine::job_report::plural(pass.errors, "entry", "entries")
            ))
            .into());
        }
        if one_side {
            let at = args.replay.backtest_at.as_deref().unwrap_or_default();
            let one = CliError::usage(format!(
                "`--backtest-at {at}` leaves {} jobs to learn from and {} to test on: both need at least one",
                pass.train_jobs, pass.test_jobs
            ))
            .with_hint("pick a time between the first and the last submission");
            return Err(self.refused(
                one,
                "run the shards again with a `--backtest-at` between the first and the last submission",
            ));
        }
        // The estimates' backtest at the same time: refused (no trials on a side) before
        // anything is printed, as `simulate --backtest-at` refuses it.
        let estimates_backtest = match self.backtest_at {
            Some(_) => {
                let at = args.replay.backtest_at.as_deref().unwrap_or_default();
                let options = Options {
                    backtest_at: self.backtest_at,
                    shard: None,
                };
                let (_, b) = std::mem::take(&mut pass.trials)
                    .finish(&options)
                    .map_err(|e| self.backtest_refused(&e, at))?;
                b
            }
            None => None,
        };
        // The rules (owned: the counts are given the baseline's decisions after pass 2).
        let rules = {
            let sorted = pass.learned.sorted();
            propose(&sorted, &self.knobs, self.engine).1
        };
        let proposal = self.documents(baseline, &pass.learned, &rules)?;
        if self.deployed.is_none() && proposal.upstream.as_ref().is_some_and(|u| !u.categories.is_empty()) {
            writeln!(ctx.err, "note: {}", documents::NOT_COMPLETE)?;
        }
        // `-o policy` replays the proposal too, for its verdict, and prints none of it.
        let policy = args.output == SuggestOutput::Policy;
        let mut discard = io::sink();
        let out: &mut dyn Write = if policy { &mut discard } else { &mut *ctx.out };
        let commands = self.commands(&rules, &proposal);
        let base = base_config(&args.replay)?;
        let open = |path: &std::path::Path| {
            Files::open(path, base.clone(), overrides(&args.replay)).map_err(CliError::invalid)
        };
        let whole: PathBuf = match (&reread, &pass.spool) {
            (Some(p), _) => p.clone(),
            (None, Some(f)) => f.path().to_path_buf(),
            (None, None) => unreachable!("a source read once is spooled"),
        };
        // A merge's shards spooled no test jobs: they are copied from the history here,
        // before anything is printed.
        let copied = match (self.backtest_at, &pass.test) {
            (Some(at), None) => Some(spool_test(open(&whole)?, at)?),
            _ => None,
        };
        let test_jobs = pass.test.as_ref().or(copied.as_ref());
        let format = view::Format::of(args.output);
        let mut doc = view::Doc::new(format, ctx.style);
        // The policy's `retryLimit` as `-o policy` writes it, said alike in every format.
        let policy_retry_limit = match &proposal.upstream {
            Some(u) => Some(u.written_retry_limit),
            None => self.settings(baseline).retry_limit,
        };
        doc.proposal_head(
            &mut *out,
            &view::Head {
                engine: self.engine,
                name: &args.name,
                rules: &rules,
                kept: &proposal.kept,
                upstream: proposal.upstream.as_ref(),
                policy_retry_limit,
            },
        )?;
        // Pass 2: the proposal against the baseline on the whole history; the baseline's
        // decisions (of the train jobs) and the proposal's rules checked on the way.
        let check = RuleCheck::new(
            &rules,
            proposal.upstream.as_ref().map(|u| &u.rule_index[..]),
            &args.name,
            &pass.learned,
        );
        let options = Options {
            backtest_at: None,
            shard: None,
        };
        let whole_cmp = {
            let mut out = doc.member(&mut *out, "comparison")?;
            let stderr = Stderr::new(&mut *ctx.err, ctx.style, None, args.replay.retry_policies.is_some());
            let mut sink = view::CaptureSink::new(format, &mut out, stderr);
            let look = |h: &FailureHistory, b: &JobReport, c: &JobReport| check.look(h, b, c);
            let done = compare_inspected(
                open(&whole)?,
                baseline,
                &proposal.sim,
                &options,
                Out::Sink(&mut sink),
                Some(&look),
            )?;
            let captured = sink.finish(done.comparison);
            out.finish()?;
            captured
        };
        let shadowed = check.shadowed();
        let learned = &pass.learned;
        let sorted = learned.sorted();
        let (verdicts, _) = propose(&sorted, &self.knobs, self.engine);
        let suspects = suspects(learned);
        let report = Report {
            engine: self.engine,
            name: &args.name,
            knobs: self.knobs,
            jobs: pass.train_jobs,
            failed_runs: learned.failed_runs,
            signatures: &verdicts,
            rules: &rules,
            kept: &proposal.kept,
            upstream: proposal.upstream.as_ref(),
            policy_retry_limit,
            documents: &proposal.text,
            suspects: &suspects,
            baseline_from: from,
            commands,
            backtest: self.backtest_at.map(|_| view::BacktestHead {
                at: args.replay.backtest_at.clone().unwrap_or_default(),
                train_jobs: pass.train_jobs,
                test_jobs: pass.test_jobs,
            }),
        };
        doc.after_comparison(&mut *out, &report, &shadowed)?;
        let mut backtest = None;
        if let (Some(_), Some(test)) = (&report.backtest, test_jobs) {
            doc.backtest_head(&mut *out, &report)?;
            let test_cmp = {
                let mut out = doc.member(&mut *out, "comparison")?;
                let mut quiet = io::sink();
                let stderr = Stderr::new(&mut quiet, ctx.style, None, false);
                let mut sink = view::CaptureSink::new(format, &mut out, stderr);
                let done = compare_inspected(
                    open(test.path())?,
                    baseline,
                    &proposal.sim,
                    &options,
                    Out::Sink(&mut sink),
                    None,
                )?;
                let captured = sink.finish(done.comparison);
                out.finish()?;
                captured
            };
            // The baseline's own expected GPU-hours over its Pending jobs: a plain replay.
            let base_pending = {
                let (mut quiet, mut nothing) = (io::sink(), io::sink());
                let stderr = Stderr::new(&mut quiet, ctx.style, None, false);
                let mut sink = view::CaptureSink::new(None, &mut nothing, stderr);
                replay(open(test.path())?, baseline, &options, Out::Sink(&mut sink))?;
                sink.pending_gpu_hours()
            };
            let tail = view::backtest_tail(&test_cmp, base_pending, estimates_backtest.as_ref());
            doc.backtest_tail(&mut *out, &tail)?;
            backtest = Some((test_cmp, tail));
        }
        let judgement = judge_proposal(&whole_cmp, backtest.as_ref());
        if policy {
            // The reasons name jobs, whose ids are the history's text: escaped, on stderr as
            // everywhere, and in the comment so that no id ends it and adds a key.
            let line = judgement.line();
            writeln!(ctx.err, "verdict: {}", crate::output::text::shown(&line))?;
            writeln!(ctx.out, "# verdict: {}", documents::comment(&line))?;
            ctx.out.write_all(proposal.text.as_bytes())?;
        } else {
            doc.finish(&mut *out, &report, &whole_cmp, backtest.as_ref(), &judgement)?;
        }
        Ok(if args.exit_code && judgement.decision == Decision::Adopt {
            ExitCode::Failure
        } else {
            ExitCode::Success
        })
    }
}

/// Refuses a history whose files are not as they were when pass 1 began (`before`): pass 2
/// would not compare over the history the proposal was learned from (exit 3, naming the file).
fn changed_since(
    path: &std::path::Path,
    before: &Stamps,
    base: &crate::model::scheduler::SchedulerConfig,
    overrides: &crate::replay::source::Overrides,
) -> Result<(), CliError> {
    let now = Files::open(path, base.clone(), overrides.clone())
        .map_err(CliError::invalid)?
        .stamps();
    let Some((file, how)) = now.and_then(|now| before.changed(&now)) else {
        return Ok(());
    };
    let how = match how {
        Altered::Added => "it was added to the directory",
        Altered::Removed => "it is gone",
        Altered::Written => "its size or modification time is not what it was",
    };
    Err(CliError::invalid(format!(
        "`{}` changed between suggest's two passes ({how}): the comparison would not replay the history the proposal was learned from",
        file.display()
    ))
    .with_hint("run suggest again once the history is complete (or give it a copy that does not change)"))
}

/// The verdict on the proposal (docs/suggest.md "The verdict"): on the learned history (with
/// `--backtest-at`, the whole history's comparison less the later jobs'), and on the later jobs.
fn judge_proposal(whole: &view::Captured, backtest: Option<&(view::Captured, view::BacktestTail)>) -> Judgement {
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
    judge(
        Judged {
            comparison: &learned,
            lost_jobs: &lost_jobs,
        },
        backtest.map(|(_, tail)| Later {
            false_kills: tail.false_kills,
            false_kill_jobs: &tail.false_kill_jobs,
            gpu_hours_saved: tail.gpu_hours_saved,
        }),
    )
}

impl Suggest<'_> {
    /// Today's rules the proposal keeps after its own (docs/suggest.md "Today's policy is the
    /// starting point"): the baseline's effective list for `--queue` (else its policies in
    /// order), as its engine reads it.
    fn kept(&self, baseline: &Simulator, learned: &Learned) -> anyhow::Result<Vec<Kept>> {
        let names: Vec<String> = match self.args.replay.queue.as_deref().and_then(|q| baseline.queue(q)) {
            Some(q) => q.retry_policies.clone(),
            None => baseline.given().to_vec(),
        };
        let policies: Vec<&crate::model::policy::RetryPolicy> = names
            .iter()
            .filter_map(|n| baseline.policies().find(|p| &p.name == n))
            .collect();
        let config = base_config(&self.args.replay)?;
        let global = self
            .args
            .replay
            .global_max_retries
            .unwrap_or(crate::engine::Settings::from_config(&config).global_max_retries);
        let decided = today::decided_runs(learned.signatures.iter().chain(learned.other.as_ref()));
        let kept = today::kept(&policies, self.baseline_engine, global, &decided);
        if self.engine == EngineKind::Upstream {
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

    /// The documents of `rules`, checked by `validate`'s reader, and their Simulator.
    fn documents(
        &self,
        baseline: &Simulator,
        learned: &Learned,
        rules: &[crate::suggest::propose::Proposed],
    ) -> anyhow::Result<Proposal> {
        let settings = self.settings(baseline);
        let kept = self.kept(baseline, learned)?;
        let by_text: HashMap<&str, &crate::suggest::stats::SignatureStats> =
            learned.signatures.iter().map(|s| (s.text.as_str(), s)).collect();
        // Upstream: the deployed category each rule can match on, where one separates it.
        let places: Vec<Option<today::Place>> = match self.engine {
            EngineKind::Design => vec![None; rules.len()],
            EngineKind::Upstream => today::places(rules, &learned.signatures)
                .into_iter()
                .map(Some)
                .collect(),
        };
        let documented: Vec<Documented<'_>> = rules
            .iter()
            .zip(places)
            .map(|(r, place)| {
                let stats = by_text.get(r.text.as_str());
                Documented {
                    rule: r,
                    evidence: stats.map_or_else(String::new, |s| view::evidence(s)),
                    mutate: stats.and_then(|s| today::carried_mutate(s, &kept)),
                    place,
                }
            })
            .collect();
        let header = format!(
            "Proposed by `retryctl suggest` from {} jobs ({} failed runs); --min-trials {} --futile {} --max-limit {}.",
            learned.jobs, learned.failed_runs, self.knobs.min_trials, self.knobs.futile, self.knobs.max_limit
        );
        let queue = self.queue_document(baseline);
        let (mut text, upstream) = match self.engine {
            EngineKind::Design => (documents::design_policy(&settings, &documented, &kept, &header), None),
            EngineKind::Upstream => {
                let blocked = today::raise_blocked_by(&kept, &learned.signatures);
                let u = documents::upstream_documents(
                    &settings,
                    &documented,
                    &kept,
                    blocked,
                    self.deployed.as_ref(),
                    &header,
                );
                (format!("{}---\n{}", u.categorizer, u.policy), Some(u))
            }
        };
        if let Some(q) = queue {
            text.push_str("---\n");
            text.push_str(&q);
        }
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
        for p in baseline.policies() {
            if named.contains(&p.name) && !policies.iter().any(|q| q.name == p.name) {
                policies.push(p.clone());
            }
        }
        let sim = Simulator::new(policies, queues, Some(vec![self.args.name.clone()]))
            .map(|s| s.with_engine(self.engine))
            .map_err(|e| {
                CliError::failed(format!(
                    "the proposed policy cannot be replayed (a bug in retryctl): {e}"
                ))
            })?;
        let classifier = match categorizer {
            Some(c) => {
                let compiled = Classifier::new(&c).map_err(|e| {
                    CliError::failed(format!(
                        "the proposed categorizer does not compile (a bug in retryctl): {e}"
                    ))
                })?;
                // Without the deployed config, the new categories go before it: a run they
                // do not match keeps the category it was recorded with.
                Some(Arc::new(match self.deployed {
                    Some(_) => compiled,
                    None => compiled.prepended(),
                }))
            }
            None => self.categorizer.clone(),
        };
        Ok(Proposal {
            text,
            kept,
            upstream,
            sim: sim.with_categorizer(classifier),
        })
    }

    /// The command that writes the proposal, and the `tune` search of its limits.
    fn commands(&self, rules: &[crate::suggest::propose::Proposed], proposal: &Proposal) -> view::Commands {
        let a = self.args;
        let r = &a.replay;
        let mut source = Vec::new();
        match (&r.history, &r.lookout_db) {
            (Some(h), _) => source.push(format!("--history {}", shell_word(&h.display().to_string()))),
            (None, Some(dsn)) => {
                // The DSN holds credentials: never printed, the reader's own variable instead.
                let _ = dsn;
                source.push("--lookout-db \"$LOOKOUT_DB\"".to_string());
                if let Some(q) = &r.queue {
                    source.push(format!("--queue {}", shell_word(q)));
                }
                for (flag, v) in [
                    ("--from", &r.window.from),
                    ("--to", &r.window.to),
                    ("--since", &r.window.since),
                ] {
                    if let Some(v) = v {
                        source.push(format!("{flag} {}", shell_word(v)));
                    }
                }
            }
            (None, None) => {}
        }
        let mut baseline = Vec::new();
        if !r.baseline.is_empty() {
            let files: Vec<String> = r
                .baseline
                .iter()
                .map(|p| shell_word(&p.display().to_string()))
                .collect();
            baseline.push(format!("--baseline {}", files.join(" ")));
        }
        if r.baseline_from_cluster {
            baseline.push("--baseline-from-cluster".into());
        }
        let mut knobs = Vec::new();
        if self.engine == EngineKind::Upstream {
            knobs.push("--engine upstream".to_string());
        }
        if let Some(c) = &a.categorizer {
            knobs.push(format!("--categorizer {}", shell_word(&c.display().to_string())));
        }
        if a.min_trials != 20 {
            knobs.push(format!("--min-trials {}", a.min_trials));
        }
        if a.futile != 0.05 {
            knobs.push(format!("--futile {}", a.futile));
        }
        if a.max_limit != 5 {
            knobs.push(format!("--max-limit {}", a.max_limit));
        }
        if a.extrapolate {
            knobs.push("--extrapolate".to_string());
        }
        if a.name != "suggested" {
            knobs.push(format!("--name {}", a.name));
        }
        if let Some(t) = &r.backtest_at {
            knobs.push(format!("--backtest-at {}", shell_word(t)));
        }
        if a.replay.lookout_db.is_none() {
            if let Some(q) = &r.queue {
                knobs.push(format!("--queue {}", shell_word(q)));
            }
        }
        let file = format!("{}.yaml", a.name);
        let mut write = vec!["retryctl suggest".to_string()];
        write.extend(source.iter().cloned());
        write.extend(baseline.iter().cloned());
        write.extend(knobs);
        write.push(format!("-o policy > {file}"));
        // tune: the limits of the Retry rules with most hours (two at most: the candidates
        // multiply).
        let mut varies = Vec::new();
        match &proposal.upstream {
            None => {
                let mut retry: Vec<(usize, &crate::suggest::propose::Proposed)> =
                    rules.iter().enumerate().filter(|(_, r)| r.limit.is_some()).collect();
                retry.sort_by(|a, b| b.1.gpu.cmp(&a.1.gpu).then(b.1.cpu.cmp(&a.1.cpu)).then(a.0.cmp(&b.0)));
                for (k, r) in retry.into_iter().take(2) {
                    let l = r.limit.unwrap_or(1);
                    varies.push(format!(
                        "--vary '{}:spec.rules[{k}].retryLimit={}..{}'",
                        a.name,
                        l.saturating_sub(2).max(1),
                        (l + 2).min(MAX_LIMIT)
                    ));
                }
            }
            Some(u) => {
                if let Some(l) = u.policy_retry_limit {
                    varies.push(format!(
                        "--vary '{}:retryLimit={}..{}'",
                        a.name,
                        l.saturating_sub(2).max(1),
                        (l + 2).min(MAX_LIMIT)
                    ));
                }
            }
        }
        let tune = (!varies.is_empty()).then(|| {
            let mut t = vec![format!("retryctl tune -f {file}")];
            t.extend(source.iter().cloned());
            t.extend(baseline.iter().cloned());
            if self.engine == EngineKind::Upstream {
                // Both sides' categorizers: the baseline never borrows the proposal's.
                let deployed = a
                    .categorizer
                    .as_ref()
                    .map_or_else(|| "recorded".to_string(), |c| shell_word(&c.display().to_string()));
                t.push(format!(
                    "--engine upstream --categorizer {file} --baseline-categorizer {deployed}"
                ));
            }
            t.extend(varies);
            t.join(" ")
        });
        view::Commands {
            write: write.join(" "),
            tune,
        }
    }
}
