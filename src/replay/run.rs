//! The replay, driven end to end: a source's histories → decode → one engine per side →
//! counting → a [`Sink`], in input order.
//!
//! Owns: [`replay`] (a plain replay folded into a [`Summary`]) and [`compare`]
//! (`--baseline`: every job under two Simulators, folded into a [`Comparison`]), each the
//! whole path from a [`HistorySource`] to [`Sink::end`]: what each worker computes for a job
//! (only what the sink [`Needs`]), the per-unit partial summaries, the count of jobs that
//! could not be replayed, which missing queues to report (once each); and [`replay_job`]
//! (one history under one Simulator: a policy set plus its engine, so that `--baseline`
//! runs each side with its own). Must not: format text for people or write output (that is
//! the sink's), decide exit codes (the caller reads them off the totals), or parse the
//! command line.

use std::io;

use crate::engine::simulator::Simulator;
use crate::engine::{job_context, Detail, JobContext, JobReport, JobStatus, Match, PendingEngine, Settings};
use crate::model::failure_history::{FailureHistory, Final, Timestamp};

use super::backtest::Backtest;
use super::backtest::{backtest, Refusal};
use super::categorize::{CategoryCounts, Reclassify, SideCategories};
use super::compare::{ByClass, Comparison, JobDiff, Overflow, Side, Steps, Transition};
use super::estimate::{failed_runs, job_class, FailureClass, PendingSet, Rates, Trials, MAX_RUNS_LEFT};
pub use super::fallback::{fallback, Fallback, Fallbacks};
use super::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use super::partial::{self, Recorder};
use super::shard::Shard;
use super::sink::{Change, Estimates, Message, Needs, Sides, Sink, Totals};
use super::source::{HistorySource, Origin, Pos, Progress};
use super::spool::{Changed, Spool};
use super::summary::{keep_summary_fields, Summary};

/// What a plain replay found.
#[derive(Debug)]
pub struct Replayed {
    pub summary: Summary,
    /// Some job got the policies given on the command line (no queue, or a queue not
    /// among the documents).
    pub used_given: bool,
    /// `--backtest-at` could not be made: nothing was handed to [`Sink::end`].
    pub refused: Option<NoAnswer>,
    /// Into a partial: the shard's totals (its entries are recorded; `summary` is empty).
    pub totals: Option<Folded>,
}

/// What a comparison found.
#[derive(Debug)]
pub struct Compared {
    pub comparison: Comparison,
    /// As in [`Replayed`], for the candidate's side.
    pub used_given: bool,
    pub refused: Option<NoAnswer>,
    /// As in [`Replayed`].
    pub totals: Option<Folded>,
}

/// How a replay is run, besides its source, policies and sink.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--backtest-at` (docs/estimates.md): trials of jobs submitted before it fit, the others test.
    pub backtest_at: Option<Timestamp>,
    /// `--shard I/N` (docs/past-one-machine.md): only the jobs of shard I.
    pub shard: Option<Shard>,
}

/// Why a replay has no answer to print: `--backtest-at` has none (a usage error,
/// docs/estimates.md, exit 2), or a sum passed what retryctl can add up (exit 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoAnswer {
    /// Jobs without `job.submittedAt`: how many, and the first in input order.
    NotSubmitted { jobs: u64, first: String },
    /// The time leaves one side without trials.
    Refused(Refusal),
    /// A sum of device time past 128 bits.
    Overflow(Overflow),
}

/// One replayed job as a worker hands it over.
enum Done {
    /// The report, with its record rendered by [`Needs::render`] (empty without one).
    Report(Box<JobReport>, Vec<u8>),
    /// Counted into the worker's unit summary already; the report is kept only when there
    /// is something to say about the job (its messages, its missing queue).
    Counted(Option<Box<JobReport>>),
}

impl Done {
    fn report(&self) -> Option<&JobReport> {
        match self {
            Done::Report(r, _) | Done::Counted(Some(r)) => Some(r),
            Done::Counted(None) => None,
        }
    }
}

/// The trials of the jobs counted so far (docs/estimates.md), on the side of `--backtest-at`
/// each job was submitted on (docs/estimates.md), and the jobs that have no submission time to put them
/// on a side. Counted per unit in the workers (or per shard) and merged: the same whatever
/// the split.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TrialCount {
    pub trials: Trials,
    /// `--backtest-at`: jobs without `submittedAt`, and the first of them in input order
    /// (with its position, so that any split finds the same first).
    pub not_submitted: u64,
    pub first_not_submitted: Option<(Pos, String)>,
}

impl TrialCount {
    /// Counts `history`'s trials (`origin`: where it stands in the source).
    pub fn add(&mut self, history: &FailureHistory, origin: &Origin, options: &Options) {
        let test = match (options.backtest_at, history.job.submitted_at) {
            (None, _) => false,
            (Some(at), Some(submitted)) => submitted >= at,
            (Some(_), None) => {
                self.not_submitted += 1;
                let at = origin.pos();
                if self.first_not_submitted.as_ref().is_none_or(|(first, _)| at < *first) {
                    self.first_not_submitted = Some((at, history.job.id.clone()));
                }
                false
            }
        };
        self.trials.add_history(history, test);
    }

    /// Adds the trials of other jobs (a later unit, another shard).
    pub fn merge(&mut self, other: &TrialCount) {
        self.trials.merge(&other.trials);
        self.not_submitted += other.not_submitted;
        if let Some((at, id)) = &other.first_not_submitted {
            if self.first_not_submitted.as_ref().is_none_or(|(first, _)| at < first) {
                self.first_not_submitted = Some((*at, id.clone()));
            }
        }
    }

    /// The final rates and, with `--backtest-at`, the backtest; or why it has no answer.
    pub fn finish(self, options: &Options) -> Result<(Rates, Option<Backtest>), NoAnswer> {
        if let Some((_, first)) = self.first_not_submitted {
            return Err(NoAnswer::NotSubmitted {
                jobs: self.not_submitted,
                first,
            });
        }
        let rates = Rates::new(self.trials);
        let backtest = match options.backtest_at {
            Some(at) => Some(backtest(&rates, at).map_err(NoAnswer::Refused)?),
            None => None,
        };
        Ok((rates, backtest))
    }
}

/// What comparing jobs under one candidate adds up (docs/what-if.md, docs/estimates.md): the totals, the
/// candidate's final states, and the Pending jobs whose estimates are summed. One per
/// candidate in a `tune` sweep; the same fold as `simulate --baseline`, so that a candidate's
/// numbers are what `simulate` prints for it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompareTally {
    pub comparison: Comparison,
    /// Jobs by the candidate's final state, indexed by `Final as usize`.
    pub finals: [u64; 4],
    /// Failed in the baseline and Pending in the candidate (`expectedRescued`).
    pub asked: PendingSet,
    /// Pending in the candidate (its expected compute).
    pub pending: PendingSet,
    /// The first jobs it loses (Succeeded in the baseline, Failed in it), in input order, at
    /// most [`LOST_NAMED`]: `tune --pick`'s warning names them. Kept by `tune`'s sweep only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_jobs: Vec<String>,
}

/// Most lost jobs a [`CompareTally`] names.
pub const LOST_NAMED: usize = 5;

impl CompareTally {
    /// A job the candidate decides exactly as the baseline did, and not Pending: what
    /// [`tally_job`] of its diff adds, in a few additions (a search's most common case).
    pub fn unchanged(&mut self, side: &Side) {
        self.finals[side.final_state as usize] += 1;
        self.comparison.unchanged(side.compute);
    }

    pub fn merge(&mut self, o: &CompareTally) {
        self.comparison.merge(&o.comparison);
        for (mine, theirs) in self.finals.iter_mut().zip(o.finals) {
            *mine += theirs;
        }
        self.asked.merge(&o.asked);
        self.pending.merge(&o.pending);
        let room = LOST_NAMED.saturating_sub(self.lost_jobs.len());
        self.lost_jobs.extend(o.lost_jobs.iter().take(room).cloned());
    }

    /// `job` is lost (after its diff is tallied): named when fewer than [`LOST_NAMED`] are.
    pub fn name_lost(&mut self, job: &str) {
        if self.lost_jobs.len() < LOST_NAMED {
            self.lost_jobs.push(job.to_string());
        }
    }
}

/// What the estimates need to know of a job, worked out at most once however many sides
/// ask: its class (its last failed run's) and its depth (its failed runs).
pub struct JobFacts<'a> {
    pub history: &'a FailureHistory,
    /// The job's facts the engines read (`engine::job_context`).
    pub ctx: JobContext<'a>,
    class: std::cell::OnceCell<Option<FailureClass>>,
    pub depth: u32,
}

impl<'a> JobFacts<'a> {
    pub fn new(history: &'a FailureHistory) -> JobFacts<'a> {
        JobFacts {
            history,
            ctx: job_context(history),
            class: std::cell::OnceCell::new(),
            depth: failed_runs(history),
        }
    }

    pub fn class(&self) -> &Option<FailureClass> {
        self.class.get_or_init(|| job_class(self.history))
    }
}

/// Counts `diff` (the candidate replayed by `candidate` with `settings`) into `tally`: its
/// Pending candidate side's runs left are worked out here (the baseline's are the caller's,
/// once per job), `longer_matches` the continued history's runs matched, when known
/// ([`runs_left_matched`]).
pub fn tally_job(
    diff: &mut JobDiff,
    candidate: &Simulator,
    settings: &Settings,
    facts: &JobFacts<'_>,
    longer_matches: Option<&[Match]>,
    tally: &mut CompareTally,
) {
    tally_job_with(
        diff,
        || runs_left_matched(candidate, settings, facts, longer_matches),
        facts,
        tally,
    );
}

/// [`tally_job`] with the runs a Pending candidate has left worked out by `runs_left`
/// (asked only then): a search that replays a job once for several candidates that decide
/// it alike works them out once too.
pub fn tally_job_with(
    diff: &mut JobDiff,
    runs_left: impl FnOnce() -> u32,
    facts: &JobFacts<'_>,
    tally: &mut CompareTally,
) {
    if diff.candidate.final_state == Final::Pending {
        let left = runs_left();
        diff.candidate.runs_left = left;
        let (class, r) = (facts.class(), facts.history.job.resources.as_ref());
        tally.pending.add(class, facts.depth, left, r);
        if diff.baseline.final_state == Final::Failed {
            tally.asked.add(class, facts.depth, left, r);
        }
    }
    tally.finals[diff.candidate.final_state as usize] += 1;
    tally.comparison.add(diff);
}

/// What a worker folds over the jobs of its unit, merged in input order after them. Every
/// part of it adds up the same whatever the split (see `estimate`'s module docs).
#[derive(Default)]
struct Part {
    /// Every job of a plain replay (summary only), or the candidate side's (a comparison's
    /// breakdowns).
    summary: Summary,
    /// The baseline side's (a comparison's breakdowns).
    baseline: Summary,
    trials: TrialCount,
    /// With breakdowns: jobs by class.
    by_class: ByClass,
    /// A comparison's totals; a plain replay's Pending jobs (in `pending`); with a
    /// categorizer, its counts (in `comparison.categories`).
    tally: CompareTally,
    /// The worker's scratch for classifying a history in place (with a categorizer only).
    reclassify: Reclassify,
}

/// The categorizers' counts of a part (`part.tally`), made on the first job that has one. A
/// function of the field, so that the part's scratch can be borrowed beside it.
fn categories(tally: &mut CompareTally) -> &mut SideCategories {
    tally.comparison.categories.get_or_insert_with(Box::default)
}

/// What the emitting side folds from the parts: the same sums whatever the split of the
/// jobs into units or shards, so that a partial result (docs/past-one-machine.md) holds them as its totals
/// and `merge` adds the shards' up.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Folded {
    trials: TrialCount,
    by_class: ByClass,
    tally: CompareTally,
    /// A comparison's sides (with breakdowns).
    sides: Sides,
}

impl Folded {
    fn add(&mut self, part: &Part) {
        self.trials.merge(&part.trials);
        self.by_class.merge(&part.by_class);
        self.tally.merge(&part.tally);
    }

    /// Adds another shard's.
    pub fn merge(&mut self, o: Folded) {
        self.trials.merge(&o.trials);
        self.by_class.merge(&o.by_class);
        self.tally.merge(&o.tally);
        self.sides.baseline.merge(o.sides.baseline);
        self.sides.candidate.merge(o.sides.candidate);
    }

    /// The final estimates (and backtest): a comparison's sums over its Failed → Pending
    /// jobs and its Pending ones, a plain replay's over its Pending jobs. The breakdowns
    /// only when asked (a partial counts them for any format).
    fn estimates(
        self,
        options: &Options,
        compare: bool,
        needs: Needs,
    ) -> Result<(Estimates, Comparison, Sides), NoAnswer> {
        let (rates, backtest) = self.trials.finish(options)?;
        let t = self.tally;
        let asked = if compare { &t.asked } else { &t.pending };
        let by_class = if needs.breakdowns {
            self.by_class
        } else {
            ByClass::default()
        };
        Ok((
            Estimates::new(rates, by_class, asked, &t.pending, backtest),
            t.comparison,
            self.sides,
        ))
    }
}

/// docs/estimates.md: the runs a Pending side has left — its engine continued on copies of the job's
/// last recorded failed run (same containers, conditions, category; no node; starting when
/// the previous decision allows) until it decides Fail, at most [`MAX_RUNS_LEFT`]; the
/// pending run counts. A job with no failed run recorded (only returned leases) has the
/// pending run alone.
pub fn runs_left(sim: &Simulator, settings: &Settings, facts: &JobFacts<'_>) -> u32 {
    runs_left_matched(sim, settings, facts, None)
}

/// [`runs_left`] from the engine state the side's replay left (`pending`, taken from its
/// report), so that the recorded runs are not replayed again; without one, as [`runs_left`].
pub fn runs_left_after(
    sim: &Simulator,
    settings: &Settings,
    facts: &JobFacts<'_>,
    pending: Option<Box<PendingEngine>>,
) -> u32 {
    match pending {
        // An error is the recorded runs' (the side is Pending, so they replayed): it cannot be.
        Some(p) => sim
            .runs_left_after(facts.history, &facts.ctx, settings, p, MAX_RUNS_LEFT)
            .unwrap_or(1),
        None => runs_left(sim, settings, facts),
    }
}

/// [`runs_left`] with the recorded runs matched already (`Simulator::match_table` of the
/// job's history over a list with the same matchers).
pub fn runs_left_matched(sim: &Simulator, settings: &Settings, facts: &JobFacts<'_>, matches: Option<&[Match]>) -> u32 {
    // An error is the recorded runs' (the side is Pending, so they replayed): it cannot be.
    sim.runs_left(facts.history, &facts.ctx, settings, matches, MAX_RUNS_LEFT)
        .unwrap_or(1)
}

/// Where a replay's results go.
pub enum Out<'a, 'w> {
    /// A sink renders them as the replay goes.
    Sink(&'a mut dyn Sink),
    /// A partial result records them for `merge` (docs/past-one-machine.md): what any format prints.
    Partial(&'a mut Recorder<'w>),
}

impl Out<'_, '_> {
    fn needs(&self) -> Needs {
        match self {
            Out::Sink(s) => s.needs(),
            Out::Partial(_) => Needs {
                reports: true,
                render: Some(partial::render_job),
                breakdowns: true,
                steps: true,
                change_json: false,
            },
        }
    }
}

/// An entry of a partial that is not a replayed job.
#[derive(Debug)]
pub enum NotReplayed {
    Error(String),
    /// An invalid history file's diagnostics, rendered.
    Invalid(String),
    LeftOut(String),
}

/// What a partial records of an entry that was not replayed; `done` records a job.
pub fn record<T>(
    rec: &mut Recorder<'_>,
    at: &Pos,
    p: Processed<T>,
    done: impl FnOnce(&mut Recorder<'_>, T) -> io::Result<()>,
) -> io::Result<bool> {
    match p {
        Processed::Done(t) => done(rec, t)?,
        Processed::Error(m) => rec.error(at, &m)?,
        Processed::Invalid(f) => rec.invalid(at, &f)?,
        Processed::LeftOut(text) => rec.left_out(at, &text)?,
    }
    Ok(true)
}

/// An entry that was not replayed, into `sink`: errors counted in `errors`.
fn not_replayed_entry(errors: &mut u64, sink: &mut dyn Sink, n: &NotReplayed) -> io::Result<bool> {
    match n {
        NotReplayed::Error(m) => not_replayed(errors, sink, &Message::Error(m)),
        NotReplayed::Invalid(text) => not_replayed(errors, sink, &Message::Rendered(text)),
        NotReplayed::LeftOut(text) => sink.message(&Message::LeftOut(text)).map(|()| true),
    }
}

/// Replays every job of `source` under `sim` (docs/simulate.md) into `out`, and returns the totals
/// it handed to [`Sink::end`] (or, into a partial, the shard's totals).
pub fn replay<S: HistorySource>(
    source: S,
    sim: &Simulator,
    options: &Options,
    out: Out<'_, '_>,
) -> io::Result<Replayed> {
    let needs = out.needs();
    // Only the summary is printed: the per-run texts are not even written.
    let detail = if needs.reports { Detail::Full } else { Detail::Summary };
    // Summary only: each worker adds its jobs to a summary of its unit.
    let work = |part: &mut Part, job: Decoded<'_>| {
        let Decoded {
            origin,
            settings,
            history,
        } = job;
        // With a categorizer, the engine sees the classified runs (and so do the runs a
        // Pending job has left); everything after `restore` reads the recorded ones.
        let categorizer = sim.categorizer();
        if let Some(c) = categorizer {
            part.reclassify
                .apply(c, history, &mut categories(&mut part.tally).candidate, None);
        }
        let replayed = replay_job_detailed(sim, settings, history, detail);
        let mut report = match replayed {
            Ok(r) => r,
            Err(e) => {
                part.reclassify.restore(history);
                return Err(format!("{origin}: job `{}`: {e}", history.job.id));
            }
        };
        let left = matches!(report.status, JobStatus::Pending { .. })
            .then(|| runs_left_after(sim, settings, &JobFacts::new(history), report.take_pending()));
        if categorizer.is_some() {
            part.reclassify
                .collisions(sim.engine(), &report, &mut categories(&mut part.tally).candidate);
            if needs.reports {
                part.reclassify.annotate(history, &mut report);
            }
            part.reclassify.restore(history);
        }
        let history: &FailureHistory = history;
        let f = fallback(sim, history);
        part.trials.add(history, origin, options);
        if let Some(left) = left {
            let facts = JobFacts::new(history);
            let class = facts.class();
            part.tally
                .pending
                .add(class, facts.depth, left, history.job.resources.as_ref());
            if needs.breakdowns {
                part.by_class.add_pending(class);
            }
        }
        let done = if !needs.reports {
            part.summary.add(&report);
            let says = f.is_some() || !report.contradictions.is_empty() || !report.expectation_failures.is_empty();
            Done::Counted(says.then(|| Box::new(report)))
        } else {
            let mut rendered = Vec::new();
            if let Some(render) = needs.render {
                render(&report, &mut rendered);
                // Rendered: the sink reads only what the summary and the messages need, so
                // the texts are freed here, in parallel, rather than by the writing thread.
                keep_summary_fields(&mut report);
            }
            Done::Report(Box::new(report), rendered)
        };
        Ok((done, f))
    };
    match out {
        Out::Sink(sink) => {
            let mut fold = ReplayFold::new(sink, sim.given())?;
            fold.categorized(sim.categorizer().is_some());
            for_each_ordered(source, options.shard, work, |e| match e {
                Emitted::Job(_, p) => fold.entry(p),
                Emitted::Unit(part, at) => {
                    fold.unit(part, at);
                    Ok(true)
                }
            })?;
            fold.finish(options)
        }
        Out::Partial(rec) => {
            let mut folded = Folded::default();
            for_each_ordered(source, options.shard, work, |e| match e {
                Emitted::Job(at, p) => record(rec, &at, p, |rec, (done, f)| match &done {
                    Done::Report(_, rendered) => rec.job(&at, rendered, f),
                    // A partial asks for every report.
                    Done::Counted(_) => Ok(()),
                }),
                Emitted::Unit(part, _) => {
                    folded.add(&part);
                    Ok(true)
                }
            })?;
            Ok(Replayed {
                summary: Summary::default(),
                used_given: rec.used_given(),
                refused: None,
                totals: Some(folded),
            })
        }
    }
}

/// The emitting side of a plain replay: each entry, in input order, into the sink, the
/// summary and the missing queues; the estimates at the end. `merge` runs this same fold
/// over the entries and totals of every shard's partial (one process is one shard).
pub struct ReplayFold<'s> {
    sink: &'s mut dyn Sink,
    needs: Needs,
    given: &'s [String],
    summary: Summary,
    folded: Folded,
    fallbacks: Fallbacks,
    categorized: bool,
}

impl<'s> ReplayFold<'s> {
    /// The replay classifies runs with a categorizer: its counts are printed even when no
    /// job was counted.
    pub fn categorized(&mut self, yes: bool) {
        self.categorized = yes;
    }

    /// `given`: the policies a job without its queue's gets (`--retry-policy`, else every
    /// policy given), for the missing-queue message.
    pub fn new(sink: &'s mut dyn Sink, given: &'s [String]) -> io::Result<ReplayFold<'s>> {
        let needs = sink.needs();
        sink.begin()?;
        Ok(ReplayFold {
            sink,
            needs,
            given,
            summary: Summary::default(),
            folded: Folded::default(),
            fallbacks: Fallbacks::default(),
            categorized: false,
        })
    }

    fn unit(&mut self, part: Part, at: Progress) {
        self.folded.add(&part);
        self.summary.merge(part.summary);
        self.sink.progress(at);
    }

    /// A shard's totals (`merge`); `used_given`: some job of it got the policies given.
    pub fn totals(&mut self, folded: Folded, used_given: bool) {
        self.folded.merge(folded);
        self.fallbacks.used_given |= used_given;
    }

    /// A job from a partial (`merge`): what a worker does with a report, then its entry.
    pub fn job(&mut self, report: JobReport, missing_queue: Option<String>) -> io::Result<bool> {
        let f = missing_queue.map(Fallback::Missing);
        let done = if self.needs.reports {
            let mut rendered = Vec::new();
            if let Some(render) = self.needs.render {
                render(&report, &mut rendered);
            }
            Done::Report(Box::new(report), rendered)
        } else {
            self.summary.add(&report);
            let says = f.is_some() || !report.contradictions.is_empty() || !report.expectation_failures.is_empty();
            Done::Counted(says.then(|| Box::new(report)))
        };
        self.entry(Processed::Done((done, f)))
    }

    /// An entry of a partial that was not replayed (`merge`).
    pub fn not_replayed(&mut self, n: &NotReplayed) -> io::Result<bool> {
        not_replayed_entry(&mut self.summary.errors, self.sink, n)
    }

    fn entry(&mut self, p: Processed<(Done, Option<Fallback>)>) -> io::Result<bool> {
        let sink = &mut *self.sink;
        match p {
            Processed::Done((done, f)) => {
                if let Some(queue) = self.fallbacks.add(f) {
                    let job = done.report().map_or("", |r| &r.job_id);
                    sink.message(&Message::MissingQueue {
                        job,
                        queue: &queue,
                        given: self.given,
                    })?;
                }
                let summary = &mut self.summary;
                write_or_stop((|| {
                    if let Done::Report(report, rendered) = &done {
                        summary.add(report);
                        sink.job(report, rendered)?;
                    }
                    match done.report() {
                        Some(r) => job_messages(sink, r),
                        None => Ok(()),
                    }
                })())
            }
            Processed::Error(m) => not_replayed(&mut self.summary.errors, sink, &Message::Error(&m)),
            Processed::Invalid(f) => not_replayed(&mut self.summary.errors, sink, &Message::Invalid(&f)),
            Processed::LeftOut(text) => sink.message(&Message::LeftOut(&text)).map(|()| true),
        }
    }

    /// The estimates, then [`Sink::end`].
    pub fn finish(self, options: &Options) -> io::Result<Replayed> {
        let ReplayFold {
            sink,
            needs,
            mut summary,
            folded,
            fallbacks,
            categorized,
            ..
        } = self;
        let used_given = fallbacks.used_given;
        let estimates = match folded.estimates(options, false, needs) {
            Ok((e, comparison, _)) => {
                let counts = comparison.categories.map(|c| Box::new(c.candidate));
                summary.categories = counts.or_else(|| categorized.then(Box::default));
                e
            }
            Err(refused) => {
                return Ok(Replayed {
                    summary,
                    used_given,
                    refused: Some(refused),
                    totals: None,
                })
            }
        };
        if let Some(o) = summary.overflow.clone() {
            return Ok(Replayed {
                summary,
                used_given,
                refused: Some(NoAnswer::Overflow(o)),
                totals: None,
            });
        }
        ignore_closed(sink.end(Totals::Replay {
            summary: &summary,
            estimates: &estimates,
        }))?;
        Ok(Replayed {
            summary,
            used_given,
            refused: None,
            totals: None,
        })
    }
}

/// Replays every job of `source` under `baseline` and `candidate` (docs/what-if.md, docs/estimates.md) into
/// `out`: each changed job to [`Sink::change`], with the estimate of each side that is
/// Pending; returns the totals it handed to [`Sink::end`] (or, into a partial, the shard's
/// totals). Expectations are not checked in this mode.
pub fn compare<S: HistorySource>(
    source: S,
    baseline: &Simulator,
    candidate: &Simulator,
    options: &Options,
    out: Out<'_, '_>,
) -> io::Result<Compared> {
    compare_inspected(source, baseline, candidate, options, out, None)
}

/// A look at each job both sides replayed: its history as recorded (categories put back),
/// the baseline's report and the candidate's. `suggest` reads the baseline's decisions and
/// checks its rules through it.
pub type Inspect<'a> = &'a (dyn Fn(&FailureHistory, &JobReport, &JobReport) + Sync);

/// [`compare`], showing `inspect` every job both sides replayed.
pub fn compare_inspected<S: HistorySource>(
    source: S,
    baseline: &Simulator,
    candidate: &Simulator,
    options: &Options,
    out: Out<'_, '_>,
    inspect: Option<Inspect<'_>>,
) -> io::Result<Compared> {
    let needs = out.needs();
    let cut = match &out {
        Out::Partial(r) => Some(r.steps_cut()),
        Out::Sink(_) => None,
    };
    // A comparison is made of numbers only (final state, retries, delay, run times):
    // neither side needs the per-run texts, nor the checks whose messages it never prints.
    let work = |part: &mut Part, job: Decoded<'_>| {
        let Decoded {
            origin,
            settings,
            history,
        } = job;
        // Each side under its own categorizer (the engine and the runs a Pending side has
        // left see its classification); then the recorded categories are put back for the
        // rest (the estimates' failure classes keep them). One categorizer for both sides
        // (no --baseline-categorizer) classifies the history once for both.
        let shared = matches!(
            (baseline.categorizer(), candidate.categorizer()),
            (Some(a), Some(b)) if std::ptr::eq(a, b)
        );
        if let (true, Some(c)) = (shared, candidate.categorizer()) {
            let s = categories(&mut part.tally);
            part.reclassify
                .apply(c, history, &mut s.baseline, Some(&mut s.candidate));
        }
        let mut side = |sim: &Simulator, counts: fn(&mut SideCategories) -> &mut CategoryCounts, what: &str| {
            let categorizer = sim.categorizer();
            if let (false, Some(c)) = (shared, categorizer) {
                part.reclassify
                    .apply(c, history, counts(categories(&mut part.tally)), None);
            }
            let r = replay_job_detailed(sim, settings, history, Detail::Outcome).map(|mut r| {
                let pending = r.take_pending();
                let left = (r.status.final_state() == Final::Pending)
                    .then(|| runs_left_after(sim, settings, &JobFacts::new(history), pending));
                (r, left)
            });
            if categorizer.is_some() {
                if let Ok((r, _)) = &r {
                    part.reclassify
                        .collisions(sim.engine(), r, counts(categories(&mut part.tally)));
                }
                if !shared {
                    part.reclassify.restore(history);
                }
            }
            r.map_err(|e| format!("{origin}: job `{}`: {what}{e}", history.job.id))
        };
        let b = side(baseline, |s| &mut s.baseline, "baseline: ");
        // The candidate only when the baseline replayed (its error is the one reported).
        let c = match &b {
            Ok(_) => side(candidate, |s| &mut s.candidate, ""),
            Err(_) => Err(String::new()),
        };
        if shared {
            part.reclassify.restore(history);
        }
        let (b, b_left) = b?;
        let (c, c_left) = c?;
        let h: &FailureHistory = history;
        if let Some(look) = inspect {
            look(h, &b, &c);
        }
        part.trials.add(h, origin, options);
        if needs.breakdowns {
            part.baseline.add(&b);
            part.summary.add(&c);
        }
        let (sb, sc) = (Side::of(&b), Side::of(&c));
        let changed = sb.differs(&sc);
        let wanted = || {
            cut.as_ref()
                .is_none_or(|cut| cut.wanted(Transition::between(sb.final_state, sc.final_state), origin.pos()))
        };
        let steps = (changed && needs.steps && wanted()).then(|| Box::new(Steps::new(h, &b, &c)));
        let facts = JobFacts::new(h);
        let mut diff = JobDiff::new(&b, c);
        if let Some(left) = b_left {
            diff.baseline.runs_left = left;
        }
        // Worked out above, on the candidate's classification, exactly when it is Pending.
        tally_job_with(&mut diff, || c_left.unwrap_or(1), &facts, &mut part.tally);
        if changed && needs.breakdowns {
            part.by_class.add_change(facts.class(), &diff);
        }
        Ok((
            Changed {
                class: if changed { facts.class().clone() } else { None },
                depth: facts.depth,
                diff,
                steps,
            },
            fallback(candidate, h),
        ))
    };
    match out {
        Out::Sink(sink) => {
            let mut fold = CompareFold::new(sink, candidate.given())?;
            fold.categorized(baseline.categorizer().is_some() || candidate.categorizer().is_some());
            for_each_ordered(source, options.shard, work, |e| match e {
                Emitted::Job(_, p) => fold.entry(p),
                Emitted::Unit(part, at) => {
                    fold.unit(part, at);
                    Ok(true)
                }
            })?;
            fold.finish(options)
        }
        Out::Partial(rec) => {
            let mut folded = Folded::default();
            for_each_ordered(source, options.shard, work, |e| match e {
                Emitted::Job(at, p) => record(rec, &at, p, |rec, (ch, f)| {
                    if ch.diff.changed() {
                        rec.change(&at, ch, f)
                    } else {
                        rec.fallback(&at, &ch.diff.job, f)
                    }
                }),
                Emitted::Unit(part, _) => {
                    folded.add(&part);
                    folded.sides.baseline.merge(part.baseline);
                    folded.sides.candidate.merge(part.summary);
                    Ok(true)
                }
            })?;
            Ok(Compared {
                comparison: Comparison::default(),
                used_given: rec.used_given(),
                refused: None,
                totals: Some(folded),
            })
        }
    }
}

/// The emitting side of a comparison: each changed job, in input order, into the sink
/// (those from the first Pending one on held back until the estimates are final), the
/// missing queues, the errors; the estimates at the end. `merge` runs this same fold over
/// the entries and totals of every shard's partial.
pub struct CompareFold<'s> {
    sink: &'s mut dyn Sink,
    needs: Needs,
    given: &'s [String],
    errors: u64,
    folded: Folded,
    fallbacks: Fallbacks,
    spool: Spool,
    stopped: bool,
    categorized: bool,
}

impl<'s> CompareFold<'s> {
    /// A side classifies runs with a categorizer: both sides' counts are printed even when
    /// no job was counted.
    pub fn categorized(&mut self, yes: bool) {
        self.categorized = yes;
    }

    /// `given`: the candidate's policies for a job without its queue's.
    pub fn new(sink: &'s mut dyn Sink, given: &'s [String]) -> io::Result<CompareFold<'s>> {
        let needs = sink.needs();
        sink.begin()?;
        Ok(CompareFold {
            sink,
            needs,
            given,
            errors: 0,
            folded: Folded::default(),
            fallbacks: Fallbacks::default(),
            spool: Spool::default(),
            stopped: false,
            categorized: false,
        })
    }

    fn unit(&mut self, part: Part, at: Progress) {
        self.folded.add(&part);
        if self.needs.breakdowns {
            self.folded.sides.baseline.merge(part.baseline);
            self.folded.sides.candidate.merge(part.summary);
        }
        self.sink.progress(at);
    }

    /// A shard's totals (`merge`); `used_given`: some job of it got the policies given.
    pub fn totals(&mut self, folded: Folded, used_given: bool) {
        self.folded.merge(folded);
        self.fallbacks.used_given |= used_given;
    }

    /// A job's missing queue, said at its first job.
    pub fn fallback(&mut self, job: &str, f: Option<Fallback>) -> io::Result<()> {
        if let Some(queue) = self.fallbacks.add(f) {
            self.sink.message(&Message::MissingQueue {
                job,
                queue: &queue,
                given: self.given,
            })?;
        }
        Ok(())
    }

    /// A job, to the sink when it changed.
    pub fn change(&mut self, mut ch: Changed) -> io::Result<bool> {
        let d = &ch.diff;
        if !d.changed() {
            return Ok(true);
        }
        if !self.needs.steps {
            ch.steps = None;
        }
        // Its estimate is final only after the last job: hold it back, and every later one,
        // to keep the order.
        if d.pending() || self.spool.active() {
            self.spool.push(&ch)?;
            return Ok(true);
        }
        let change = Change {
            diff: d,
            class: ch.class.as_ref(),
            baseline_estimate: None,
            candidate_estimate: None,
            steps: ch.steps.as_deref(),
        };
        let go_on = write_or_stop(self.sink.change(&change))?;
        self.stopped = !go_on;
        Ok(go_on)
    }

    /// A changed job of a partial with no side Pending, as its JSON record: copied to a
    /// sink that prints those ([`Needs::change_json`]) when no job is held back before it;
    /// else read into a job by `full` and handed on as [`CompareFold::change`] does.
    pub fn change_json(&mut self, record: &[u8], full: impl FnOnce() -> io::Result<Changed>) -> io::Result<bool> {
        if !self.needs.change_json || self.spool.active() {
            return self.change(full()?);
        }
        let go_on = write_or_stop(self.sink.change_json(record))?;
        self.stopped = !go_on;
        Ok(go_on)
    }

    /// An entry of a partial that was not replayed (`merge`).
    pub fn not_replayed(&mut self, n: &NotReplayed) -> io::Result<bool> {
        not_replayed_entry(&mut self.errors, self.sink, n)
    }

    fn entry(&mut self, p: Processed<(Changed, Option<Fallback>)>) -> io::Result<bool> {
        match p {
            Processed::Done((ch, f)) => {
                self.fallback(&ch.diff.job, f)?;
                self.change(ch)
            }
            Processed::Error(m) => not_replayed(&mut self.errors, self.sink, &Message::Error(&m)),
            Processed::Invalid(f) => not_replayed(&mut self.errors, self.sink, &Message::Invalid(&f)),
            Processed::LeftOut(text) => self.sink.message(&Message::LeftOut(&text)).map(|()| true),
        }
    }

    /// The estimates, the changed jobs held back with theirs, then [`Sink::end`].
    pub fn finish(self, options: &Options) -> io::Result<Compared> {
        let CompareFold {
            sink,
            needs,
            errors,
            folded,
            fallbacks,
            spool,
            stopped,
            categorized,
            ..
        } = self;
        let used_given = fallbacks.used_given;
        let (estimates, mut comparison, sides) = match folded.estimates(options, true, needs) {
            Ok(e) => e,
            Err(refused) => {
                return Ok(Compared {
                    comparison: Comparison {
                        errors,
                        ..Comparison::default()
                    },
                    used_given,
                    refused: Some(refused),
                    totals: None,
                })
            }
        };
        comparison.errors = errors;
        if let Some(o) = comparison.overflow.clone() {
            return Ok(Compared {
                comparison,
                used_given,
                refused: Some(NoAnswer::Overflow(o)),
                totals: None,
            });
        }
        if categorized && comparison.categories.is_none() {
            comparison.categories = Some(Box::default());
        }
        if !stopped {
            spool.drain(|ch| {
                let d = &ch.diff;
                let estimate = |s: &Side| {
                    (s.final_state == Final::Pending)
                        .then(|| estimates.rates.estimate(ch.class.as_ref(), ch.depth, s.runs_left))
                        .flatten()
                };
                let (b, c) = (estimate(&d.baseline), estimate(&d.candidate));
                write_or_stop(sink.change(&Change {
                    diff: d,
                    class: ch.class.as_ref(),
                    baseline_estimate: b.as_ref(),
                    candidate_estimate: c.as_ref(),
                    steps: ch.steps.as_deref(),
                }))
            })?;
        }
        ignore_closed(sink.end(Totals::Compare {
            comparison: &comparison,
            estimates: &estimates,
            sides: needs.breakdowns.then_some(&sides),
        }))?;
        Ok(Compared {
            comparison,
            used_given,
            refused: None,
            totals: None,
        })
    }
}

/// An entry that could not be replayed: counted in `errors`, said on stderr.
fn not_replayed(errors: &mut u64, sink: &mut dyn Sink, m: &Message<'_>) -> io::Result<bool> {
    *errors += 1;
    sink.message(m).map(|()| true)
}

/// A job's contradictions, then its failed expectations.
fn job_messages(sink: &mut dyn Sink, report: &JobReport) -> io::Result<()> {
    for c in &report.contradictions {
        sink.message(&Message::Contradiction {
            job: &report.job_id,
            text: c,
        })?;
    }
    for f in &report.expectation_failures {
        sink.message(&Message::ExpectationFailed {
            job: &report.job_id,
            text: f,
        })?;
    }
    Ok(())
}

/// A closed stdout (`| head`) ends the replay quietly: nobody reads the rest.
fn write_or_stop(r: io::Result<()>) -> io::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

fn ignore_closed(r: io::Result<()>) -> io::Result<()> {
    write_or_stop(r).map(|_| ())
}

/// One history under one Simulator, every text written. Every run after the end of the job
/// that has an `expect` is reported (the evaluator's replay names only the first).
pub fn replay_job(sim: &Simulator, settings: &Settings, history: &FailureHistory) -> Result<JobReport, String> {
    replay_job_detailed(sim, settings, history, Detail::Full)
}

/// One job replayed under `sim` alone as a comparison replays its side (under its
/// categorizer, when it has one), `look` shown the history as that side saw it and the
/// report (or the replay's error); the recorded categories are put back after. `suggest`'s
/// first pass reads what today's policy does through it.
pub fn replay_side(
    sim: &Simulator,
    settings: &Settings,
    history: &mut FailureHistory,
    reclassify: &mut Reclassify,
    look: impl FnOnce(&FailureHistory, Result<&JobReport, &str>),
) {
    let categorizer = sim.categorizer();
    if let Some(c) = categorizer {
        reclassify.apply(c, history, &mut CategoryCounts::default(), None);
    }
    match replay_job_detailed(sim, settings, history, Detail::Outcome) {
        Ok(report) => look(history, Ok(&report)),
        Err(e) => look(history, Err(&e)),
    }
    if categorizer.is_some() {
        reclassify.restore(history);
    }
}

/// [`replay_job`] with the texts `detail` asks for ([`Detail::Summary`] when only the
/// summary is printed).
pub fn replay_job_detailed(
    sim: &Simulator,
    settings: &Settings,
    history: &FailureHistory,
    detail: Detail,
) -> Result<JobReport, String> {
    let mut report = sim.simulate_detailed(history, settings, detail)?;
    let ended = !matches!(report.status, JobStatus::Pending { .. });
    if detail != Detail::Outcome && ended && history.runs.len() > report.runs.len() {
        let end = report.runs.len().saturating_sub(1);
        let at = report
            .expectation_failures
            .iter()
            .position(|f| f.starts_with("job: "))
            .unwrap_or(report.expectation_failures.len());
        let mut missing = Vec::new();
        for (k, run) in history.runs.iter().enumerate().skip(report.runs.len()) {
            if run.expect.is_none() {
                continue;
            }
            let prefix = format!("run {k}: ");
            if !report.expectation_failures.iter().any(|f| f.starts_with(&prefix)) {
                missing.push(format!(
                    "run {k}: has expectations but is never evaluated (the job ended at run {end})"
                ));
            }
        }
        report.expectation_failures.splice(at..at, missing);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::duration::GoDuration;

    /// The first [`LOST_NAMED`] lost jobs, in order, however the jobs are split into parts.
    #[test]
    fn a_tally_names_the_first_lost_jobs_only() {
        let ids: Vec<String> = (1..=8).map(|i| format!("j{i}")).collect();
        let mut whole = CompareTally::default();
        ids.iter().for_each(|j| whole.name_lost(j));
        assert_eq!(whole.lost_jobs, ids[..LOST_NAMED]);
        let mut parts = CompareTally::default();
        for chunk in ids.chunks(3) {
            let mut part = CompareTally::default();
            chunk.iter().for_each(|j| part.name_lost(j));
            parts.merge(&part);
        }
        assert_eq!(parts, whole);
    }
    use crate::model::failure_history::{Container, Outcome, Run};
    use crate::model::test_policies;

    fn sim(yaml: &str) -> Simulator {
        Simulator::new(test_policies(yaml), Vec::new(), None).unwrap()
    }

    fn cuda() -> Run {
        Run {
            category: Some("cuda_error".into()),
            containers: vec![Container {
                name: "main".into(),
                exit_code: 1,
                ..Container::default()
            }],
            ..Run::default()
        }
    }

    fn lease() -> Run {
        Run {
            outcome: Outcome::LeaseReturned,
            ..Run::default()
        }
    }

    fn job(runs: Vec<Run>) -> FailureHistory {
        FailureHistory {
            runs,
            ..FailureHistory::default()
        }
    }

    const DESIGN: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 10\n  rules:\n    - {action: Retry, onFailureCategory: [cuda_error], retryLimit: 3}\n";

    fn left(sim: &Simulator, settings: &Settings, runs: Vec<Run>) -> u32 {
        let h = job(runs);
        let report = sim.simulate(&h, settings).unwrap();
        assert!(
            matches!(report.status, JobStatus::Pending { .. }),
            "{:?}",
            report.status
        );
        runs_left(sim, settings, &JobFacts::new(&h))
    }

    /// docs/estimates.md to the letter: the job's recorded runs, then [`MAX_RUNS_LEFT`] copies of its
    /// last failed run (no node, start, queue time, reload or expectation) appended and
    /// replayed from the start; the runs started past the record.
    fn left_by_copies(sim: &Simulator, settings: &Settings, h: &FailureHistory) -> u32 {
        let Some(last) = h.runs.iter().rev().find(|r| r.outcome == Outcome::Failed) else {
            return 1;
        };
        let copy = Run {
            node: None,
            queued_for: GoDuration::ZERO,
            started_at: None,
            global_max_retries: None,
            expect: None,
            ..last.clone()
        };
        let mut longer = h.clone();
        longer.runs.extend(std::iter::repeat_n(copy, MAX_RUNS_LEFT as usize));
        let o = sim
            .simulate_outcome(&longer, &job_context(&longer), settings, 0, None)
            .unwrap();
        (o.runs.saturating_sub(h.runs.len()) as u32).clamp(1, MAX_RUNS_LEFT)
    }

    /// The runs a Pending side has left, however they are worked out — counted from the
    /// state the side's own replay left (a report's, texts or not), after replaying the
    /// recorded runs again (a search's), with the runs' matches known or not — are the
    /// copies of docs/estimates.md appended and replayed. Over drawn histories and policies, under
    /// both engines, with the global limit lowered, and the feature off.
    #[test]
    fn runs_left_from_the_replays_state_are_the_copies_replayed() {
        use crate::engine::EngineKind;
        use crate::replay::drawn::{history, Draw, Fields};
        use crate::replay::json_lines::decode_line;
        let (mut pending, mut seen) = (0, std::collections::BTreeSet::new());
        for seed in 1..=12u64 {
            let mut d = Draw(0x2545_f491_4f6c_dd1d ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let text = history(&mut d, 300);
            let fields = Fields::drawn(&mut d);
            for engine in [EngineKind::Design, EngineKind::Upstream] {
                let sim = fields.sim().with_engine(engine);
                for settings in [
                    Settings::default(),
                    Settings {
                        global_max_retries: 2,
                        ..Settings::default()
                    },
                    Settings {
                        enabled: false,
                        ..Settings::default()
                    },
                    Settings {
                        global_max_retries: 1000,
                        ..Settings::default()
                    },
                ] {
                    for (i, line) in text.lines().enumerate() {
                        let h = decode_line(line.as_bytes(), i + 1).unwrap();
                        let want = left_by_copies(&sim, &settings, &h);
                        let facts = JobFacts::new(&h);
                        let at = format!("seed {seed}, {engine:?}, {settings:?}, line {}", i + 1);
                        for detail in [Detail::Full, Detail::Outcome] {
                            let mut report = replay_job_detailed(&sim, &settings, &h, detail).unwrap();
                            if !matches!(report.status, JobStatus::Pending { .. }) {
                                assert!(report.take_pending().is_none(), "{at}");
                                continue;
                            }
                            pending += 1;
                            seen.insert(want);
                            let p = report.take_pending();
                            assert!(p.is_some(), "{at}");
                            assert_eq!(runs_left_after(&sim, &settings, &facts, p), want, "{at}, {detail:?}");
                        }
                        if !matches!(sim.simulate(&h, &settings).unwrap().status, JobStatus::Pending { .. }) {
                            continue;
                        }
                        assert_eq!(runs_left(&sim, &settings, &facts), want, "{at}");
                        let table = sim.match_table(&h, &settings);
                        assert_eq!(
                            runs_left_matched(&sim, &settings, &facts, table.as_deref()),
                            want,
                            "{at}"
                        );
                    }
                }
            }
        }
        // Enough Pending sides, and runs left of many sizes: one, a few, the cap of 100.
        assert!(pending > 1000, "{pending}");
        assert!(
            seen.contains(&1) && seen.contains(&MAX_RUNS_LEFT) && seen.len() > 8,
            "{seen:?}"
        );
    }

    /// A per-rule limit of 3 and one failure retried: the pending run is retry 2's, then
    /// retry 3's, then the limit fails the job: 3 runs left.
    #[test]
    fn a_rules_limit_bounds_the_runs_left() {
        let s = Settings::default();
        assert_eq!(left(&sim(DESIGN), &s, vec![cuda()]), 3);
        assert_eq!(left(&sim(DESIGN), &s, vec![cuda(), cuda()]), 2);
        assert_eq!(left(&sim(DESIGN), &s, vec![cuda(), cuda(), cuda()]), 1);
    }

    /// The global cap binds first: 2 retries in all, one used.
    #[test]
    fn the_global_cap_bounds_the_runs_left() {
        let s = Settings {
            global_max_retries: 2,
            ..Settings::default()
        };
        assert_eq!(left(&sim(DESIGN), &s, vec![cuda()]), 2);
    }

    /// No limit short of 100: the runs left stop at 100.
    #[test]
    fn runs_left_stop_at_100() {
        let unbounded = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 10000\n  rules:\n    - {action: Retry, onFailureCategory: [cuda_error]}\n";
        let s = Settings {
            global_max_retries: 10_000,
            ..Settings::default()
        };
        assert_eq!(left(&sim(unbounded), &s, vec![cuda()]), MAX_RUNS_LEFT);
    }

    /// Upstream: retries used = failed runs before this one; `retryLimit: 2`, one failure
    /// recorded: the pending run (retries used 1) retries, the next (2) fails: 2 runs left.
    #[test]
    fn the_upstream_engine_follows_its_own_budget() {
        let up = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 2\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: cuda_error}\n";
        let s = Settings::default();
        let sim = sim(up).with_engine(crate::engine::EngineKind::Upstream);
        assert_eq!(left(&sim, &s, vec![cuda()]), 2);
    }

    /// A job whose last run was a returned lease is Pending on the lease's requeue: the
    /// copies are of its last failed run (one retry used of 3: 2 more, then the limit: 3
    /// runs, the requeued one included). A job with no failed run has the pending run only.
    #[test]
    fn a_returned_lease_last_follows_the_last_failed_run() {
        let s = Settings::default();
        assert_eq!(left(&sim(DESIGN), &s, vec![cuda(), lease()]), 3);
        assert_eq!(left(&sim(DESIGN), &s, vec![lease()]), 1);
    }
}
