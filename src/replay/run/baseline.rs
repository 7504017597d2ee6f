//! A comparison (`--baseline`): every job under two Simulators, the changed ones handed to
//! a sink in input order, folded into a [`Comparison`].
//!
//! Owns: [`compare`] and [`compare_inspected`] (the workers' side: both sides of a job by
//! [`compare_job`], its diff, what it adds up to) and [`CompareFold`] (the emitting side, changed
//! jobs held back until the estimates are final; `merge` runs it over partials too). Must
//! not: replay without a baseline (that is `plain`), or format anything for people.

use std::io;

use crate::engine::{Detail, JobReport};
use crate::model::failure_history::{FailureHistory, Final};
use crate::replay::compare::{Comparison, JobDiff, Side, Steps, Transition};
use crate::replay::contention::OfComparison;
use crate::replay::fallback::{fallback, Fallback, Fallbacks};
use crate::replay::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::policy_sets::OneCandidate;
use crate::replay::sink::{Change, Message, Needs, Sink, Totals};
use crate::replay::source::{HistorySource, Progress};
use crate::replay::spool::{Changed, Spool};

use super::compared::{compare_job, Asks, JobCompared, SideCounts};
use super::contention::{refusal, started, Collect};
use super::counts::{categories, tally_job_with, Folded, Part};
use super::job::JobFacts;
use super::options::{NoAnswer, Options};
use super::shared::{
    ignore_closed, not_replayed, not_replayed_entry, record, write_or_stop, Compared, NotReplayed, Out,
};

/// Replays every job of `source` under `sets`' baseline and its candidate (docs/what-if.md, docs/estimates.md) into
/// `out`: each changed job to [`Sink::change`], with the estimate of each side that is
/// Pending; returns the totals it handed to [`Sink::end`] (or, into a partial, the shard's
/// totals). Expectations are not checked in this mode.
pub fn compare<S: HistorySource>(
    source: S,
    sets: &OneCandidate,
    options: &Options,
    out: Out<'_, '_>,
) -> io::Result<Compared> {
    compare_inspected(source, sets, options, out, None)
}

/// A look at each job both sides replayed: its history as recorded (categories put back),
/// the baseline's report and the candidate's. `suggest` reads the baseline's decisions and
/// checks its rules through it.
pub type Inspect<'a> = &'a (dyn Fn(&FailureHistory, &JobReport, &JobReport) + Sync);

/// [`compare`], showing `inspect` every job both sides replayed.
pub fn compare_inspected<S: HistorySource>(
    source: S,
    sets: &OneCandidate,
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
    // The baseline with its contradiction checks when it is a policy the cluster ran:
    // whether it explains the record (docs/what-if.md).
    let baseline_detail = if options.explain {
        Detail::Summary
    } else {
        Detail::Outcome
    };
    let categorized = sets.view().categorized();
    let candidate = &sets.candidate.simulator;
    let work = |part: &mut Part, job: Decoded<'_>| {
        let Decoded {
            origin,
            settings,
            history,
        } = job;
        let counts = categorized.then(|| {
            let s = categories(&mut part.tally);
            SideCounts {
                baseline: &mut s.baseline,
                candidates: std::slice::from_mut(&mut s.candidate),
            }
        });
        let asks = Asks {
            baseline_detail,
            baseline_categories: false,
            runs_left: true,
        };
        let compared = compare_job(sets.view(), settings, history, asks, &mut part.reclassify, counts)
            .map_err(|e| format!("{origin}: job `{}`: baseline: {e}", history.job.id))?;
        let JobCompared { baseline, candidates } = compared;
        let (b, b_left) = (baseline.report, baseline.runs_left);
        // One candidate, one replay (`SetsView` of a `OneCandidate`).
        let (c, c_left) = match candidates.into_iter().next() {
            Some(Ok(c)) => (c.report, c.runs_left),
            Some(Err(e)) => return Err(format!("{origin}: job `{}`: {e}", history.job.id)),
            None => return Err(format!("{origin}: job `{}`: no candidate replayed it", history.job.id)),
        };
        let h: &FailureHistory = history;
        if options.explain {
            part.tally
                .comparison
                .explained
                .get_or_insert_with(Default::default)
                .add(origin.pos(), &h.job.id, !b.contradictions.is_empty());
        }
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
        if options.contention {
            let ends = part.trials.last_ends(options);
            part.contention
                .add(h, &[started(&b, b_left), started(&c, c_left)], ends);
        }
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
    fold_compared(source, options, out, work, candidate.given(), categorized)
}

/// The workers' `work` over `source`, each job's result handed to a [`CompareFold`] into the
/// sink in input order, or recorded into a partial.
fn fold_compared<S: HistorySource>(
    source: S,
    options: &Options,
    out: Out<'_, '_>,
    work: impl Fn(&mut Part, Decoded<'_>) -> Result<(Changed, Option<Fallback>), String> + Sync,
    given: &[String],
    categorized: bool,
) -> io::Result<Compared> {
    match out {
        Out::Sink(sink) => {
            let mut fold = CompareFold::new(sink, given)?;
            fold.categorized(categorized);
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
    /// With contention on: the baseline's collector, the candidate's, then the record's.
    contention: Option<Collect>,
}

impl<'s> CompareFold<'s> {
    /// A side classifies runs with a categorizer: both sides' counts are printed even when
    /// no job was counted.
    pub fn categorized(&mut self, yes: bool) {
        self.categorized = yes;
    }

    /// Collect the contention of the record and of each side (docs/contention.md).
    pub fn contention(&mut self, on: bool) {
        self.contention = on.then(|| Collect::new(2));
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
            contention: None,
        })
    }

    fn unit(&mut self, part: Part, at: Progress) -> io::Result<()> {
        self.folded.add(&part);
        if let Some(c) = &mut self.contention {
            c.add(&part.contention)?;
        }
        if self.needs.breakdowns {
            self.folded.sides.baseline.merge(part.baseline);
            self.folded.sides.candidate.merge(part.summary);
        }
        self.sink.progress(at);
        Ok(())
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
            contention,
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
        let contention = contention.map(|c| c.finish(estimates.incidents.as_ref())).transpose()?;
        if let Some(o) = refusal(
            comparison.overflow.as_ref(),
            comparison.recorded.overflow.as_ref(),
            contention.as_ref(),
        ) {
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
        if let Some(Ok(mut sides)) = contention {
            let recorded = sides.pop().unwrap_or_default();
            let candidate = sides.pop().unwrap_or_default();
            let baseline = sides.pop().unwrap_or_default();
            comparison.contention = Some(Box::new(OfComparison {
                recorded,
                baseline,
                candidate,
            }));
        }
        comparison.contention_sharded = options.contention_sharded;
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
