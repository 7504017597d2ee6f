//! A plain replay: every job of a source under one Simulator, folded into a [`Summary`] and
//! handed to a sink in input order.
//!
//! Owns: [`replay`] (the workers' side: what each computes for a job, its unit's counts) and
//! [`ReplayFold`] (the emitting side, which `merge` runs over partials too). Must not: compare
//! two sides (that is `baseline`), or format anything for people.

use std::io;

use crate::engine::simulator::Simulator;
use crate::engine::{Detail, JobReport};
use crate::model::failure_history::FailureHistory;
use crate::replay::contention::OfReplay;
use crate::replay::fallback::{fallback, Fallback, Fallbacks};
use crate::replay::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::sink::{Message, Needs, Sink, Totals};
use crate::replay::source::{HistorySource, Progress};
use crate::replay::summary::{keep_summary_fields, Summary};

use super::contention::{refusal, started, Collect};
use super::counts::{categories, Folded, Part};
use super::job::JobFacts;
use super::options::{NoAnswer, Options};
use super::shared::{
    ignore_closed, job_messages, not_replayed, not_replayed_entry, record, write_or_stop, Done, NotReplayed, Out,
    Replayed,
};
use super::side::{replay_side, SideAsks, SideReplayed};

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
        // Pending job has left); everything after the per-side step reads the recorded ones.
        let asks = SideAsks {
            detail,
            runs_left: true,
            categories: false,
            annotate: needs.reports,
        };
        let counts = sim.categorizer().map(|_| &mut categories(&mut part.tally).candidate);
        let replayed = replay_side(sim, settings, history, asks, &mut part.reclassify, counts);
        let SideReplayed {
            mut report,
            runs_left: left,
            ..
        } = replayed.map_err(|e| format!("{origin}: job `{}`: {e}", history.job.id))?;
        let history: &FailureHistory = history;
        let f = fallback(sim, history);
        part.trials.add(history, origin, options);
        if options.contention {
            part.contention
                .add(history, &[started(&report, left)], part.trials.last_ends(options));
        }
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
            fold.contention(options.contention);
            for_each_ordered(source, options.shard, work, |e| match e {
                Emitted::Job(_, p) => fold.entry(p),
                Emitted::Unit(part, at) => fold.unit(part, at).map(|()| true),
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
    /// With contention on: the replayed side's collector, then the record's.
    contention: Option<Collect>,
}

impl<'s> ReplayFold<'s> {
    /// The replay classifies runs with a categorizer: its counts are printed even when no
    /// job was counted.
    pub fn categorized(&mut self, yes: bool) {
        self.categorized = yes;
    }

    /// Collect the contention of the record and the replayed side (docs/contention.md).
    pub fn contention(&mut self, on: bool) {
        self.contention = on.then(|| Collect::new(1));
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
            contention: None,
        })
    }

    fn unit(&mut self, part: Part, at: Progress) -> io::Result<()> {
        self.folded.add(&part);
        if let Some(c) = &mut self.contention {
            c.add(&part.contention)?;
        }
        self.summary.merge(part.summary);
        self.sink.progress(at);
        Ok(())
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
            contention,
            ..
        } = self;
        let used_given = fallbacks.used_given;
        let estimates = match folded.estimates(options, false, needs) {
            Ok((e, comparison, _)) => {
                summary.recorded = comparison.recorded;
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
        summary.contention_sharded = options.contention_sharded;
        let contention = contention.map(|c| c.finish(estimates.incidents.as_ref())).transpose()?;
        if let Some(o) = refusal(
            summary.overflow.as_ref(),
            summary.recorded.overflow.as_ref(),
            contention.as_ref(),
        ) {
            return Ok(Replayed {
                summary,
                used_given,
                refused: Some(NoAnswer::Overflow(o)),
                totals: None,
            });
        }
        if let Some(Ok(mut sides)) = contention {
            let recorded = sides.pop().unwrap_or_default();
            let replayed = sides.pop().unwrap_or_default();
            summary.contention = Some(Box::new(OfReplay { recorded, replayed }));
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
