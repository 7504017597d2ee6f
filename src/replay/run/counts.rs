//! What a replay counts: per unit in the workers ([`Part`]), folded in input order on the
//! emitting side ([`Folded`]), the same whatever the split into units or shards.
//!
//! Owns: the trials for the estimates ([`TrialCount`]), a comparison's tally of one candidate
//! ([`CompareTally`], [`tally_job`]), and the final estimates from the folded sums. Must not:
//! replay a job (that is `job`), or hand anything to a sink (that is `plain` and `baseline`).

use crate::engine::simulator::Simulator;
use crate::engine::{Match, Settings};
use std::collections::BTreeMap;

use crate::model::failure_history::{FailureHistory, Final, Outcome};
use crate::model::signature::FailedTexts;
use crate::replay::backtest::{backtest, Backtest};
use crate::replay::categorize::{Reclassify, SideCategories};
use crate::replay::compare::{ByClass, Comparison, JobDiff, Side};
use crate::replay::estimate::{PendingSet, Place, Rates, TimedTrials, Trials};
use crate::replay::incidents::kinds::Gather;
use crate::replay::incidents::{self, Detected, Detector, Rule, SeenIncidents};
use crate::replay::recorded::Recorded;
use crate::replay::sink::{Estimates, Needs, SideSummaries};
use crate::replay::source::{Origin, Pos};
use crate::replay::summary::Summary;

use super::contention::Taken;
use super::job::{runs_left_matched, JobFacts};
use super::options::{NoAnswer, Options};

/// The trials of the jobs counted so far (docs/estimates.md), on the side of `--backtest-at`
/// each job was submitted on (docs/estimates.md), and the jobs that have no submission time to put them
/// on a side. Counted per unit in the workers (or per shard) and merged: the same whatever
/// the split.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TrialCount {
    pub trials: Trials,
    /// The record's own totals (every run of every job counted here, whatever a side
    /// replays of it): the same for every side, counted where the trials are.
    #[serde(default, skip_serializing_if = "Recorded::is_empty")]
    pub recorded: Recorded,
    /// `--backtest-at`: jobs without `submittedAt`, and the first of them in input order
    /// (with its position, so that any split finds the same first).
    pub not_submitted: u64,
    pub first_not_submitted: Option<(Pos, String)>,
    /// With `--incidents` on (or a window given): what leaving incidents out needs.
    #[serde(default, skip_serializing_if = "IncidentCount::is_empty")]
    pub incidents: IncidentCount,
}

/// What the trials' count keeps of its failed runs' times (docs/reference/suggest.md
/// "Incidents"): the trials in a window known already are left out as they come; the others
/// with a time are kept by 5-minute slot as well, so that those a window found at the end
/// holds can be taken out then, and the failed runs too, for the count of those in windows.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct IncidentCount {
    pub detector: Detector,
    timed: TimedTrials,
    /// Failed runs outside the known windows, by 5-minute slot.
    #[serde(with = "slots")]
    failed_by_slot: BTreeMap<i64, u64>,
    /// Failed runs counted, those in the known windows, and the trials left out there.
    failed_runs: u64,
    known_failed: u64,
    known_trials: u64,
    #[serde(skip)]
    ends: Vec<Option<i64>>,
    #[serde(skip)]
    times: Vec<i64>,
    #[serde(skip)]
    texts: FailedTexts,
}

mod slots {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(m: &BTreeMap<i64, u64>, s: S) -> Result<S::Ok, S::Error> {
        m.iter().collect::<Vec<_>>().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<i64, u64>, D::Error> {
        Ok(Vec::<(i64, u64)>::deserialize(d)?.into_iter().collect())
    }
}

impl IncidentCount {
    fn is_empty(&self) -> bool {
        self.failed_runs == 0 && self.detector.untimed == 0 && self.detector.timed == 0
    }

    fn merge(&mut self, o: &IncidentCount) {
        self.detector.merge(&o.detector);
        self.timed.merge(&o.timed);
        for (k, n) in &o.failed_by_slot {
            *self.failed_by_slot.entry(*k).or_default() += n;
        }
        self.failed_runs += o.failed_runs;
        self.known_failed += o.known_failed;
        self.known_trials += o.known_trials;
    }
}

impl TrialCount {
    /// The runs' ends (`incidents::ends`) of the history [`TrialCount::add`] took last with
    /// `options`, when it needed them (incidents looked at): the contention's worker takes
    /// them rather than computing them again.
    pub fn last_ends(&self, options: &Options) -> Option<&[Option<i64>]> {
        options.incidents.active().then_some(&self.incidents.ends[..])
    }

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
        let look = &options.incidents;
        if look.active() {
            let c = &mut self.incidents;
            incidents::ends(history, &mut c.ends);
            c.times.clear();
            let mut untimed = 0;
            for (run, end) in history.runs.iter().zip(&c.ends) {
                if run.outcome != Outcome::Failed {
                    continue;
                }
                c.failed_runs += 1;
                let Some(t) = *end else {
                    untimed += 1;
                    continue;
                };
                if look.known.contains(t) {
                    c.known_failed += 1;
                } else if look.detect {
                    *c.failed_by_slot.entry(incidents::slot_of(t)).or_default() += 1;
                }
                c.times.push(t);
            }
            if look.detect {
                c.detector.add_job(&c.times, untimed);
                // Only a failed run with a time is in the mix: the texts of the others are
                // never read (a record without times would compute every one for nothing).
                if !c.times.is_empty() {
                    c.texts.clear();
                    c.detector
                        .mix
                        .add_history(history, &c.ends, c.texts.of(&history.runs), Gather::Windows);
                }
            }
            let ends = &c.ends;
            let place = |k: usize| match ends.get(k).copied().flatten() {
                Some(t) if look.known.contains(t) => Place::Leave,
                Some(t) if look.detect => Place::Slot(incidents::slot_of(t)),
                _ => Place::Count,
            };
            c.known_trials += self.trials.add_history_where(history, test, place, &mut c.timed);
        } else {
            self.trials.add_history(history, test);
        }
        self.recorded.add(history);
    }

    /// Adds the trials of other jobs (a later unit, another shard).
    pub fn merge(&mut self, other: &TrialCount) {
        self.trials.merge(&other.trials);
        self.recorded.merge(&other.recorded);
        self.incidents.merge(&other.incidents);
        self.not_submitted += other.not_submitted;
        if let Some((at, id)) = &other.first_not_submitted {
            if self.first_not_submitted.as_ref().is_none_or(|(first, _)| at < first) {
                self.first_not_submitted = Some((*at, id.clone()));
            }
        }
    }

    /// The final rates and, with `--backtest-at`, the backtest, and what incidents left out
    /// of them; or why it has no answer.
    pub fn finish(self, options: &Options) -> Result<Finished, NoAnswer> {
        self.finish_with(options, None)
    }

    /// [`TrialCount::finish`], with the windows `found` by another count of the same jobs
    /// (suggest's pass 1, over every queue) instead of its own.
    pub fn finish_with(mut self, options: &Options, found: Option<&Detected>) -> Result<Finished, NoAnswer> {
        if let Some((_, first)) = self.first_not_submitted {
            return Err(NoAnswer::NotSubmitted {
                jobs: self.not_submitted,
                first,
            });
        }
        let look = &options.incidents;
        let seen = (look.active() || found.is_some()).then(|| {
            let c = &self.incidents;
            let detected = match found {
                Some(d) => d.clone(),
                None if look.detect => c.detector.detect(Rule::default(), &look.known.0),
                None => Detected {
                    busy: look.busy.to_vec(),
                    ..Detected::given(&look.known)
                },
            };
            // The known windows' trials were left out as they came; the windows found since
            // lie on the slots' grid.
            let later = &detected.found;
            let taken = self.trials.take_out(&c.timed, |slot| later.holds_slot(slot));
            let in_later: u64 = c
                .failed_by_slot
                .iter()
                .filter(|(slot, _)| later.holds_slot(**slot))
                .map(|(_, n)| n)
                .sum();
            SeenIncidents {
                windows: detected.windows,
                busy: detected.busy,
                failed_runs: c.failed_runs,
                in_windows: c.known_failed + in_later,
                trials_left_out: c.known_trials + taken,
            }
        });
        let rates = Rates::new(self.trials);
        let backtest = match options.backtest_at {
            Some(at) => Some(backtest(&rates, at).map_err(NoAnswer::Refused)?),
            None => None,
        };
        Ok(Finished { rates, backtest, seen })
    }
}

/// The trials' count, final.
#[derive(Debug)]
pub struct Finished {
    pub rates: Rates,
    pub backtest: Option<Backtest>,
    /// With incidents looked for: what they left out.
    pub seen: Option<SeenIncidents>,
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
    /// Pending in the baseline and not in the candidate: only whether they have an estimate
    /// is read (`withoutEstimate` counts a Pending job without one on either side).
    #[serde(default, skip_serializing_if = "PendingSet::is_empty")]
    pub baseline_pending: PendingSet,
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
        self.baseline_pending.merge(&o.baseline_pending);
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
    } else if diff.baseline.final_state == Final::Pending {
        let r = facts.history.job.resources.as_ref();
        tally
            .baseline_pending
            .add(facts.class(), facts.depth, diff.baseline.runs_left, r);
    }
    tally.finals[diff.candidate.final_state as usize] += 1;
    tally.comparison.add(diff);
}

/// What a worker folds over the jobs of its unit, merged in input order after them. Every
/// part of it adds up the same whatever the split (see `estimate`'s module docs).
#[derive(Default)]
pub(super) struct Part {
    /// Every job of a plain replay (summary only), or the candidate side's (a comparison's
    /// breakdowns).
    pub(super) summary: Summary,
    /// The baseline side's (a comparison's breakdowns).
    pub(super) baseline: Summary,
    pub(super) trials: TrialCount,
    /// With breakdowns: jobs by class.
    pub(super) by_class: ByClass,
    /// A comparison's totals; a plain replay's Pending jobs (in `pending`); with a
    /// categorizer, its counts (in `comparison.categories`).
    pub(super) tally: CompareTally,
    /// The worker's scratch for classifying a history in place (with a categorizer only).
    pub(super) reclassify: Reclassify,
    /// With contention on: each job's runs as the record and each side start them.
    pub(super) contention: Taken,
}

/// The categorizers' counts of a part (`part.tally`), made on the first job that has one. A
/// function of the field, so that the part's scratch can be borrowed beside it.
pub(super) fn categories(tally: &mut CompareTally) -> &mut SideCategories {
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
    pub(super) sides: SideSummaries,
}

impl Folded {
    pub(super) fn add(&mut self, part: &Part) {
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
    pub(super) fn estimates(
        self,
        options: &Options,
        compare: bool,
        needs: Needs,
    ) -> Result<(Estimates, Comparison, SideSummaries), NoAnswer> {
        let mut trials = self.trials;
        let recorded = std::mem::take(&mut trials.recorded);
        let Finished { rates, backtest, seen } = trials.finish(options)?;
        let mut t = self.tally;
        t.comparison.recorded = recorded;
        let asked = if compare { &t.asked } else { &t.pending };
        let by_class = if needs.breakdowns {
            self.by_class
        } else {
            ByClass::default()
        };
        // A comparison's jobs without an estimate: every Pending one, on either side.
        let unknown = compare.then(|| rates.unknown(&t.pending, &t.baseline_pending));
        let mut estimates = Estimates::new(rates, by_class, asked, &t.pending, backtest);
        if let Some(n) = unknown {
            estimates.asked.without_estimate = n;
        }
        estimates.incidents = seen;
        Ok((estimates, t.comparison, self.sides))
    }
}
