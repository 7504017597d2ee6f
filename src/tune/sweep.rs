//! One pass over the history for every candidate of `tune` (docs/tune.md), a driver over the
//! replay's per-side step: each history is read and decoded once, classified and replayed
//! under the baseline (`replay::run::{as_side, replay_classified}`, the step `simulate
//! --baseline` runs for each side), then under each candidate, and each candidate's
//! comparison is folded exactly as `simulate --baseline` folds it (`replay::run::tally_job`),
//! so that candidate i's numbers are what `simulate -f <candidate i> --baseline …` prints.
//! What is the sweep's own: the groups of candidates that decide a job alike, their shared
//! lean replays and match tables; the groups by settings and categorizer are `groups`'s, the
//! match tables and the keys that say which candidates decide a job alike `keys`'s.
//!
//! Owns: [`sweep`] — the jobs in parallel and in input order (`replay::parallel`), the
//! baseline's own totals (its final states and Pending jobs, for its expected successes and
//! cost), each candidate's first lost jobs (`CompareTally::lost_jobs`, at most five, in input
//! order: `tune --pick N`'s warning names them), the trials (counted once: they depend on the
//! history alone), and the messages a replay has about its input (bad lines, missing
//! queues), handed to a [`Listener`]. Must not: rank candidates (that is `rank`), format or
//! decide exit codes.
//!
//! Decisions docs/tune.md leaves open:
//! - a `scheduler:` vary changes the scheduler both sides run under, as `simulate
//!   --scheduler-config` would for that candidate: the baseline is replayed once per distinct
//!   scheduler setting among the candidates; the baseline's own row is the template's.
//! - a job that one candidate (or the baseline) cannot replay is an error of the whole job:
//!   it is counted for no candidate, reported once, and makes the exit status 3.
//! - with the executor's categorizer (docs/categorizer.md), each side replays the runs as its
//!   own categorizer classifies them, as `simulate --categorizer … --baseline-categorizer …`
//!   does: the baseline under its categorizer, the candidates grouped by theirs (one compiled
//!   config, one group), each group's runs classified once; the recorded categories are put
//!   back before anything is counted (the estimates' failure classes keep them). Candidates
//!   of two groups never share a match table, a key or a replay. Collisions need every
//!   decision, which a lean replay does not keep: under the upstream engine a candidate with
//!   a categorizer is replayed once more with a report, for them.

mod groups;
mod keys;

use std::io;

use crate::engine::simulator::Simulator;
use crate::engine::{Detail, EngineKind, JobOutcome, Settings};
use crate::model::duration::{GoDuration, TotalDuration};
use crate::model::failure_history::{FailureHistory, Final};
use crate::replay::backtest::Backtest;
use crate::replay::categorize::{CategoryCounts, Reclassify};
use crate::replay::compare::{JobDiff, Side, Transition};
use crate::replay::contention::{OfComparison, Started};
use crate::replay::estimate::{PendingSet, Rates};
use crate::replay::explained::Explained;
use crate::replay::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::partial::Recorder;
use crate::replay::policy_sets::{PolicySet, PolicySets};
use crate::replay::recorded::Recorded;
use crate::replay::run::{
    as_side, fallback, record, replay_classified, runs_left_matched, tally_job_with, Collect, CompareTally, Fallback,
    Fallbacks, Finished, JobFacts, NoAnswer, NotReplayed, Options, SideAsks, Taken, TrialCount,
};
use crate::replay::sink::Message;
use crate::replay::source::{HistorySource, Progress};

use groups::Groups;
pub use keys::shares_matching;
use keys::{matched_keys, Ids, Key, KeyedOutcomes, KEY_WORDS};

/// The baseline's own totals (under the template's scheduler settings).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BaselineTally {
    /// Jobs by final state, indexed by `Final as usize`.
    pub finals: [u64; 4],
    /// Its Pending jobs (their estimates: its expected successes and cost).
    pub pending: PendingSet,
    /// The run time of every recorded run it starts (`--max-compute P%`).
    pub compute: TotalDuration,
    /// With a categorizer (either side's): what the baseline's changed, and its collisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<CategoryCounts>,
    /// Whether the baseline explains the record (docs/what-if.md "Does the baseline explain
    /// the record?"), under the source's own scheduler settings; `None` when it is no policy
    /// the cluster ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained: Option<Explained>,
}

impl BaselineTally {
    fn merge(&mut self, o: &BaselineTally) {
        for (mine, theirs) in self.finals.iter_mut().zip(o.finals) {
            *mine += theirs;
        }
        self.pending.merge(&o.pending);
        self.compute.add_total(o.compute);
        if let Some(c) = &o.categories {
            self.categories.get_or_insert_with(CategoryCounts::default).merge(c);
        }
        if let Some(e) = &o.explained {
            self.explained.get_or_insert_with(Explained::default).merge(e);
        }
    }
}

/// What the pass found.
#[derive(Debug)]
pub struct Swept {
    /// Jobs replayed (every candidate's comparison counts them all).
    pub jobs: u64,
    /// Entries that could not be replayed.
    pub errors: u64,
    pub baseline: BaselineTally,
    /// One per arm, in order.
    pub arms: Vec<CompareTally>,
    pub rates: Rates,
    pub backtest: Option<Backtest>,
    /// With incidents looked for: what they left out of the rates.
    pub incidents: Option<crate::replay::incidents::SeenIncidents>,
    /// Some job got the policies given on the command line (no queue, or one not given).
    pub used_given: bool,
    /// The record's own totals (every candidate's comparison holds them too).
    pub recorded: Recorded,
}

/// Where the messages of the pass go (stderr, in the command).
pub trait Listener {
    fn message(&mut self, m: &Message<'_>) -> io::Result<()>;
    fn progress(&mut self, at: Progress);
}

/// The baseline's side of a job, under one scheduler setting.
struct Base {
    side: Side,
    /// Its collisions (with a categorizer, under the upstream engine).
    collisions: u64,
    /// `from[k]`: the run time of its runs from run `k` on (`from[runs]` is 0).
    from: Vec<GoDuration>,
}

/// What a pass over some jobs adds up: a worker's over its unit, the pass's over every
/// unit, and a shard's, which its partial holds (docs/past-one-machine.md). The same whatever the split.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Tallies {
    jobs: u64,
    trials: TrialCount,
    baseline: BaselineTally,
    arms: Vec<CompareTally>,
    /// The worker's scratch for classifying a history in place (with a categorizer only).
    #[serde(skip)]
    scratch: Reclassify,
    /// With a categorizer: the unit's category counts, not yet in each arm's tally. Added
    /// once per unit ([`Tallies::settle`]): once per job and arm cost tune with a
    /// categorizer half again its CPU (1.93 s against 1.33 s, 100 candidates, 1,000,000
    /// runs); once per unit, 1.07× (1.41 s against 1.32 s).
    #[serde(skip)]
    unsettled: Option<Box<Unsettled>>,
    /// With contention on: each job as the record holds it and the runs each arm, then each
    /// settings group's baseline, starts of it. Never in a partial: a shard is refused with
    /// contention on.
    #[serde(skip)]
    contention: Taken,
}

/// The category counts of a unit's jobs, by group ([`Tallies::unsettled`]).
#[derive(Debug, Default)]
struct Unsettled {
    /// Each arm's categorizer group and settings group.
    cat_of: Vec<usize>,
    set_of: Vec<usize>,
    /// The baseline's changes (the same under every scheduler setting), and its collisions
    /// under each setting.
    baseline: CategoryCounts,
    base_collisions: Vec<u64>,
    /// Each categorizer group's changes.
    changes: Vec<CategoryCounts>,
}

impl Tallies {
    /// Adds the unit's category counts to each arm's (`comparison.categories`, what
    /// `simulate --baseline` counts); before the unit is merged or recorded.
    fn settle(&mut self) {
        let Some(u) = self.unsettled.take() else { return };
        for (i, tally) in self.arms.iter_mut().enumerate() {
            let sides = tally.comparison.categories.get_or_insert_with(Box::default);
            sides.baseline.merge(&u.baseline);
            sides.baseline.collisions += u.base_collisions[u.set_of[i]];
            sides.candidate.merge(&u.changes[u.cat_of[i]]);
        }
    }

    fn merge(&mut self, part: &Tallies) {
        self.jobs += part.jobs;
        self.trials.merge(&part.trials);
        self.baseline.merge(&part.baseline);
        if self.arms.len() < part.arms.len() {
            self.arms.resize_with(part.arms.len(), CompareTally::default);
        }
        for (mine, theirs) in self.arms.iter_mut().zip(&part.arms) {
            mine.merge(theirs);
        }
    }
}

/// What the candidates made of one job: their outcomes (shared by candidates that decide it
/// alike), each arm's outcome, runs left when Pending, and collisions; and each categorizer
/// group's category counts.
#[derive(Default)]
struct Candidates {
    outcomes: Vec<(JobOutcome, usize)>,
    which: Vec<usize>,
    lefts: Vec<Option<u32>>,
    collisions: Vec<u64>,
    changes: Vec<CategoryCounts>,
}

/// Replays every job of `source` under the baseline of `sets` and every candidate (an arm),
/// in one pass, into `emit`; `shared`: the arms match every run alike ([`shares_matching`]),
/// so each run is matched once.
fn pass<S, E>(source: S, sets: &PolicySets, shared: bool, options: &Options, emit: E) -> io::Result<()>
where
    S: HistorySource,
    E: FnMut(Emitted<(String, Option<Fallback>), Tallies>) -> io::Result<bool>,
{
    let (baseline, arms) = (&sets.baseline, sets.candidates.as_slice());
    let groups = Groups::of(baseline, arms);
    let fallback_sim = fallback_sim(sets);
    let ids = Ids::new(arms);
    let work = |part: &mut Tallies, job: Decoded<'_>| {
        let Decoded {
            origin,
            settings: job_settings,
            history,
        } = job;
        let fail = |id: &str, side: &str, e: String| format!("{origin}: job `{id}`: {side}{e}");
        // Every side replays the runs as its categorizer classifies them (then the recorded
        // categories are put back: the estimates' failure classes keep them), through the
        // per-side step `simulate --baseline` runs for each side.
        let mut base_counts = CategoryCounts::default();
        let (bases, contradicts) = as_side(
            baseline.categorizer(),
            history,
            &mut part.scratch,
            Some(&mut base_counts),
            None,
            |h, classified| replay_bases(baseline, &groups, job_settings, h, options, classified, &fail),
        )?;
        let job = Job {
            arms,
            groups: &groups,
            ids: &ids,
            shared,
            settings: job_settings,
            bases: &bases,
            fail: &fail,
        };
        let candidates = job.replay_candidates(history, &mut part.scratch)?;
        let h: &FailureHistory = history;
        job.tally(part, h, origin, options, contradicts, &base_counts, &candidates);
        Ok((h.job.id.clone(), fallback(fallback_sim, h)))
    };
    for_each_ordered(source, options.shard, work, emit)
}

/// The baseline once per scheduler setting, with the runs it has left when Pending and the run
/// time of its runs from each run on (for what a candidate removes); and whether the record
/// contradicts it under the source's settings.
fn replay_bases(
    baseline: &Simulator,
    groups: &Groups<'_>,
    job_settings: &Settings,
    h: &FailureHistory,
    options: &Options,
    classified: Option<&Reclassify>,
    fail: &dyn Fn(&str, &str, String) -> String,
) -> Result<(Vec<Base>, bool), String> {
    let mut bases: Vec<Base> = Vec::with_capacity(groups.settings.len());
    let mut contradicts = false;
    for (k, g) in groups.settings.iter().enumerate() {
        let settings = g.unwrap_or(job_settings);
        // Group 0 is the source's settings, what the cluster ran: there the record is checked
        // against the baseline (docs/what-if.md).
        let detail = if k == 0 && options.explain {
            Detail::Summary
        } else {
            Detail::Outcome
        };
        let asks = SideAsks {
            detail,
            runs_left: true,
            categories: false,
            annotate: false,
        };
        let replayed =
            replay_classified(baseline, settings, h, asks, classified).map_err(|e| fail(&h.job.id, "baseline: ", e))?;
        let b = &replayed.report;
        contradicts |= k == 0 && !b.contradictions.is_empty();
        let mut side = Side::of(b);
        if let Some(left) = replayed.runs_left {
            side.runs_left = left;
        }
        // Saturating sums of non-negative numbers: from the end, the same as from k on.
        let mut from = vec![GoDuration::ZERO; b.runs.len() + 1];
        for (k, r) in b.runs.iter().enumerate().rev() {
            from[k] = GoDuration(from[k + 1].0.saturating_add(r.ended_at.saturating_sub(r.started_at)));
        }
        bases.push(Base {
            side,
            from,
            collisions: replayed.collisions,
        });
    }
    Ok((bases, contradicts))
}

/// One job against every arm: what `pass`'s worker holds for it.
struct Job<'j, 'a> {
    arms: &'j [PolicySet],
    groups: &'j Groups<'a>,
    ids: &'j Ids,
    shared: bool,
    settings: &'j Settings,
    bases: &'j [Base],
    fail: &'j dyn Fn(&str, &str, String) -> String,
}

impl Job<'_, '_> {
    /// Every candidate replayed before anything is counted: a job one of them cannot replay
    /// counts for none. Lean replays: a candidate's outcome is all it counts. When the
    /// candidates match alike, each run is matched once for all of a categorizer group, and
    /// candidates that decide this job alike (the same action and backoff for every rule its
    /// runs match, and limits as far as those runs reach them: `Ids::key`) share one replay.
    fn replay_candidates(&self, history: &mut FailureHistory, scratch: &mut Reclassify) -> Result<Candidates, String> {
        let arms = self.arms.len();
        let mut out = Candidates {
            which: vec![0usize; arms],
            // Each candidate's runs left when its outcome is Pending (on its classification).
            lefts: vec![None; arms],
            collisions: if self.groups.categorized {
                vec![0; arms]
            } else {
                Vec::new()
            },
            ..Candidates::default()
        };
        for (cg, (classifier, members)) in self.groups.categorizers.iter().enumerate() {
            let mut counts = CategoryCounts::default();
            as_side(
                *classifier,
                history,
                scratch,
                Some(&mut counts),
                None,
                |h, classified| self.replay_group(cg, members, h, classified, &mut out),
            )?;
            out.changes.push(counts);
        }
        Ok(out)
    }

    /// The candidates of categorizer group `cg`, on the job as that group classifies it
    /// (`classified`: the scratch that classified it, when the group has a categorizer).
    fn replay_group(
        &self,
        cg: usize,
        members: &[usize],
        h: &FailureHistory,
        classified: Option<&Reclassify>,
        out: &mut Candidates,
    ) -> Result<(), String> {
        let (arms, groups, fail) = (self.arms, self.groups, self.fail);
        let facts = JobFacts::new(h);
        let leader = members.first().map(|&i| &arms[i]).filter(|_| self.shared);
        let leader_settings =
            groups.settings[members.first().map_or(0, |&i| groups.set_of[i])].unwrap_or(self.settings);
        let table = leader.and_then(|a| a.simulator.match_table(h, leader_settings));
        // The rules the job's runs match, as indices into the policies given (the same in
        // every candidate: the template's, in its order).
        let list = match (&table, leader) {
            (Some(_), Some(a)) => a.simulator.list_of(h, leader_settings),
            _ => None,
        };
        let keys = match (&table, &list) {
            (Some(t), Some(list)) => Some(matched_keys(h, t, list)).filter(|k| k.len() < KEY_WORDS),
            _ => None,
        };
        let key_of = |i: usize, reach: bool| {
            let group = (cg as u64) << 32 | groups.set_of[i] as u64;
            keys.as_ref()
                .zip(list.as_deref())
                .map(|(keys, list)| self.ids.key(i, group, keys, list, reach))
        };
        // Runs left, worked out once per candidate that decides the job alike, limits as they
        // are (two that share an outcome may not share these: a limit the recorded runs do not
        // reach still bounds the runs to come).
        let mut left: Vec<(Option<Key>, usize, u32)> = Vec::new();
        let mut seen = KeyedOutcomes::default();
        for &i in members {
            let arm = &arms[i];
            let g = groups.set_of[i];
            let settings = groups.settings[g].unwrap_or(self.settings);
            let key = key_of(i, true);
            let j = match key.and_then(|k| seen.get(&k)) {
                Some(j) => j,
                None => {
                    #[cfg(test)]
                    tests::REPLAYS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let c = arm
                        .simulator
                        .simulate_outcome(h, &facts.ctx, settings, self.bases[g].side.runs, table.as_deref())
                        .map_err(|e| fail(&h.job.id, "", e))?;
                    out.outcomes.push((c, i));
                    if let Some(k) = key {
                        seen.insert(k, out.outcomes.len() - 1);
                    }
                    out.outcomes.len() - 1
                }
            };
            out.which[i] = j;
            if out.outcomes[j].0.final_state == Final::Pending {
                // Without a key, each candidate has an outcome of its own.
                let exact = key_of(i, false);
                let n = match left.iter().find(|(k, o, _)| *k == exact && *o == j) {
                    Some(&(_, _, n)) => n,
                    None => {
                        let n = runs_left_matched(&arm.simulator, settings, &facts, table.as_deref());
                        left.push((exact, j, n));
                        n
                    }
                };
                out.lefts[i] = Some(n);
            }
            // Collisions need each decision, which a lean replay does not keep: a report's
            // replay, only where collisions are counted.
            if let (Some(r), EngineKind::Upstream) = (classified, arm.simulator.engine()) {
                let replayed = replay_classified(&arm.simulator, settings, h, SideAsks::outcome(false), Some(r))
                    .map_err(|e| fail(&h.job.id, "", e))?;
                out.collisions[i] = replayed.collisions;
            }
        }
        Ok(())
    }

    /// The job counted into `part`: the baseline's side, the category counts, and each arm's
    /// comparison with its group's baseline.
    #[allow(clippy::too_many_arguments)] // the job's parts, each counted once
    fn tally(
        &self,
        part: &mut Tallies,
        h: &FailureHistory,
        origin: &crate::replay::source::Origin,
        options: &Options,
        contradicts: bool,
        base_counts: &CategoryCounts,
        c: &Candidates,
    ) {
        let (arms, groups, bases) = (self.arms, self.groups, self.bases);
        let facts = JobFacts::new(h);
        part.jobs += 1;
        // First: the contention takes the runs' ends it computes.
        part.trials.add(h, origin, options);
        if options.contention {
            // Each arm's runs, then each settings group's baseline's: `SweepFold::finish`
            // reads them in this order.
            let arm = |i: usize| {
                let o = &c.outcomes[c.which[i]].0;
                Started {
                    recorded: o.runs,
                    beyond: c.lefts[i].unwrap_or(0),
                }
            };
            let base = |b: &Base| Started {
                recorded: b.side.runs,
                beyond: if b.side.final_state == Final::Pending {
                    b.side.runs_left
                } else {
                    0
                },
            };
            let sides: Vec<Started> = (0..arms.len()).map(arm).chain(bases.iter().map(base)).collect();
            part.contention.add(h, &sides, part.trials.last_ends(options));
        }
        let side = bases[0].side;
        let t = &mut part.baseline;
        t.finals[side.final_state as usize] += 1;
        t.compute.add(side.compute);
        if options.explain {
            t.explained
                .get_or_insert_with(Explained::default)
                .add(origin.pos(), &h.job.id, contradicts);
        }
        if side.final_state == Final::Pending {
            t.pending
                .add(facts.class(), facts.depth, side.runs_left, h.job.resources.as_ref());
        }
        if groups.categorized {
            let own = t.categories.get_or_insert_with(CategoryCounts::default);
            own.merge(base_counts);
            own.collisions += bases[0].collisions;
            let u = part.unsettled.get_or_insert_with(|| {
                Box::new(Unsettled {
                    cat_of: groups.cat_of.clone(),
                    set_of: groups.set_of.clone(),
                    base_collisions: vec![0; groups.settings.len()],
                    changes: vec![CategoryCounts::default(); groups.categorizers.len()],
                    ..Unsettled::default()
                })
            });
            u.baseline.merge(base_counts);
            for (mine, b) in u.base_collisions.iter_mut().zip(bases) {
                *mine += b.collisions;
            }
            for (mine, c) in u.changes.iter_mut().zip(&c.changes) {
                mine.merge(c);
            }
        }
        if part.arms.len() < arms.len() {
            part.arms.resize_with(arms.len(), CompareTally::default);
        }
        // Whether an outcome is the baseline's own (then it changes nothing: counted in a few
        // additions, what `Comparison::add` of its diff would add).
        let same: Vec<bool> = c
            .outcomes
            .iter()
            .map(|(o, by)| {
                let b = bases[groups.set_of[*by]].side;
                let c = Side::of_outcome(o);
                c.final_state != Final::Pending && Side { runs_left: 0, ..b } == c
            })
            .collect();
        for (i, ((&j, &g), tally)) in c.which.iter().zip(&groups.set_of).zip(&mut part.arms).enumerate() {
            let base = &bases[g];
            // The candidate's own collisions; the rest of `comparison.categories` is the same
            // for every arm of a group, added up per unit (`Tallies::settle`).
            if c.collisions.get(i).is_some_and(|&n| n > 0) {
                let sides = tally.comparison.categories.get_or_insert_with(Box::default);
                sides.candidate.collisions += c.collisions[i];
            }
            if same[j] {
                tally.unchanged(&base.side);
                continue;
            }
            let from = |k: usize| base.from[k.min(base.from.len() - 1)];
            let mut diff = JobDiff::of_outcome(base.side, from, &c.outcomes[j].0, h.job.resources);
            // Worked out above, on the candidate's classification, exactly when it is Pending.
            tally_job_with(&mut diff, || c.lefts[i].unwrap_or(1), &facts, tally);
            if diff.transition() == Some(Transition::Lost) {
                tally.name_lost(&h.job.id);
            }
        }
    }
}

/// The policies whose `given` list a job without its queue's gets: the first candidate's
/// (every candidate's documents name the same policies), else the baseline's.
fn fallback_sim(sets: &PolicySets) -> &Simulator {
    sets.candidates.first().map_or(&sets.baseline, |a| &a.simulator)
}

/// Replays every job of `source` under the baseline of `sets` and every candidate, in one
/// pass ([`pass`]), the messages to `listener`. `Err` inside: `--backtest-at` has no answer
/// (nothing else is wrong).
pub fn sweep<S: HistorySource>(
    source: S,
    sets: &PolicySets,
    shared: bool,
    options: &Options,
    listener: &mut dyn Listener,
) -> io::Result<Result<Swept, NoAnswer>> {
    let mut fold = SweepFold::new(listener, fallback_sim(sets).given(), sets.candidates.len());
    if options.contention {
        let groups = Groups::of(&sets.baseline, &sets.candidates);
        fold.contention = Some((
            Collect::new(sets.candidates.len() + groups.settings.len()),
            groups.set_of,
        ));
    }
    pass(source, sets, shared, options, |e| match e {
        Emitted::Job(_, p) => fold.entry(p),
        Emitted::Unit(part, at) => {
            let mut part = part;
            part.settle();
            fold.unit(&part, at)?;
            Ok(true)
        }
    })?;
    fold.finish(options)
}

/// [`sweep`] into a partial result (docs/past-one-machine.md): the jobs to list recorded, the shard's
/// tallies returned.
pub fn sweep_partial<S: HistorySource>(
    source: S,
    sets: &PolicySets,
    shared: bool,
    options: &Options,
    rec: &mut Recorder<'_>,
) -> io::Result<Tallies> {
    let mut total = Tallies::default();
    pass(source, sets, shared, options, |e| match e {
        Emitted::Job(at, p) => record(rec, &at, p, |rec, (job, f)| rec.fallback(&at, &job, f)),
        Emitted::Unit(part, _) => {
            let mut part = part;
            part.settle();
            total.merge(&part);
            Ok(true)
        }
    })?;
    total.arms.resize_with(sets.candidates.len(), CompareTally::default);
    Ok(total)
}

/// The emitting side of a sweep: the messages about the input, in order, to the listener,
/// and the tallies; the rates at the end. `merge` runs this same fold over the entries and
/// tallies of every shard's partial.
pub struct SweepFold<'s> {
    listener: &'s mut dyn Listener,
    given: &'s [String],
    arms: usize,
    errors: u64,
    fallbacks: Fallbacks,
    total: Tallies,
    /// With contention on: one collector per arm, then per settings group's baseline, then
    /// the record's; and each arm's settings group.
    contention: Option<(Collect, Vec<usize>)>,
}

impl<'s> SweepFold<'s> {
    /// `given`: the policies a job without its queue's gets; `arms`: the candidates swept.
    pub fn new(listener: &'s mut dyn Listener, given: &'s [String], arms: usize) -> SweepFold<'s> {
        SweepFold {
            listener,
            given,
            arms,
            errors: 0,
            fallbacks: Fallbacks::default(),
            total: Tallies::default(),
            contention: None,
        }
    }

    fn unit(&mut self, part: &Tallies, at: Progress) -> io::Result<()> {
        self.total.merge(part);
        if let Some((c, _)) = &mut self.contention {
            c.add(&part.contention)?;
        }
        self.listener.progress(at);
        Ok(())
    }

    /// A shard's tallies (`merge`); `used_given`: some job of it got the policies given.
    pub fn totals(&mut self, t: &Tallies, used_given: bool) {
        self.total.merge(t);
        self.fallbacks.used_given |= used_given;
    }

    /// A job's missing queue, said at its first job.
    pub fn fallback(&mut self, job: &str, f: Option<Fallback>) -> io::Result<()> {
        if let Some(queue) = self.fallbacks.add(f) {
            self.listener.message(&Message::MissingQueue {
                job,
                queue: &queue,
                given: self.given,
            })?;
        }
        Ok(())
    }

    /// An entry of a partial that was not replayed (`merge`).
    pub fn not_replayed(&mut self, n: &NotReplayed) -> io::Result<bool> {
        let m = match n {
            NotReplayed::Error(m) => Message::Error(m),
            NotReplayed::Invalid(text) => Message::Rendered(text),
            NotReplayed::LeftOut(text) => {
                self.listener.message(&Message::LeftOut(text))?;
                return Ok(true);
            }
        };
        self.errors += 1;
        self.listener.message(&m)?;
        Ok(true)
    }

    fn entry(&mut self, p: Processed<(String, Option<Fallback>)>) -> io::Result<bool> {
        match p {
            Processed::Done((job, f)) => self.fallback(&job, f)?,
            Processed::Error(m) => {
                self.errors += 1;
                self.listener.message(&Message::Error(&m))?;
            }
            Processed::Invalid(f) => {
                self.errors += 1;
                self.listener.message(&Message::Invalid(&f))?;
            }
            Processed::LeftOut(text) => self.listener.message(&Message::LeftOut(&text))?,
        }
        Ok(true)
    }

    /// The rates and the backtest, and every arm's tally; `Err`: `--backtest-at` has no
    /// answer.
    pub fn finish(self, options: &Options) -> io::Result<Result<Swept, NoAnswer>> {
        let SweepFold {
            arms,
            errors,
            fallbacks,
            total,
            contention,
            ..
        } = self;
        let mut trials = total.trials;
        let recorded = std::mem::take(&mut trials.recorded);
        let Finished { rates, backtest, seen } = match trials.finish(options) {
            Ok(f) => f,
            Err(no) => return Ok(Err(no)),
        };
        // A sum past 128 bits (the record's, or a candidate's compute added or removed)
        // refuses the history, as `simulate --baseline` refuses it: no figure is printed
        // from a sum that stopped adding.
        let overflow = recorded
            .overflow
            .clone()
            .or_else(|| total.arms.iter().find_map(|a| a.comparison.overflow.clone()));
        if let Some(o) = overflow {
            return Ok(Err(NoAnswer::Overflow(o)));
        }
        let mut arms_out = total.arms;
        arms_out.resize_with(arms, CompareTally::default);
        for a in &mut arms_out {
            a.comparison.errors = errors;
            // The record is every candidate's, as `simulate --baseline` prints it in each.
            a.comparison.recorded = recorded.clone();
        }
        for a in &mut arms_out {
            a.comparison.contention_sharded = options.contention_sharded;
        }
        if let Some((c, set_of)) = contention {
            let mut sides = match c.finish(seen.as_ref())? {
                Ok(sides) => sides,
                Err(o) => return Ok(Err(NoAnswer::Overflow(o))),
            };
            let recorded = sides.pop().unwrap_or_default();
            let bases = sides.split_off(arms.min(sides.len()));
            // Each candidate against its own settings group's baseline, as `simulate
            // --baseline` compares them.
            for ((a, candidate), g) in arms_out.iter_mut().zip(sides).zip(set_of) {
                a.comparison.contention = Some(Box::new(OfComparison {
                    recorded: recorded.clone(),
                    baseline: bases.get(g).cloned().unwrap_or_default(),
                    candidate,
                }));
            }
        }
        Ok(Ok(Swept {
            jobs: total.jobs,
            errors,
            baseline: total.baseline,
            arms: arms_out,
            rates,
            backtest,
            incidents: seen,
            used_given: fallbacks.used_given,
            recorded,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::model::scheduler::SchedulerConfig;
    use crate::replay::drawn::{history, Draw, Fields};
    use crate::replay::source::{Files, Overrides};

    /// Candidates' replays of a job, counted by [`pass`] (only the test below sweeps in
    /// this test binary: a count taken while another sweep ran would be too high).
    pub(super) static REPLAYS: AtomicU64 = AtomicU64::new(0);

    struct Quiet;

    impl Listener for Quiet {
        fn message(&mut self, _: &Message<'_>) -> io::Result<()> {
            Ok(())
        }

        fn progress(&mut self, _: Progress) {}
    }

    /// Candidates that share a replay (the same matches, and limits as far as a job's runs
    /// reach them) count exactly what each counts replayed on its own, Pending jobs' runs
    /// left included; candidates drawn as a search makes them, a few fields of a template
    /// varied (rule, policy and default limits, actions), over drawn histories (memory
    /// bumps, policy lists in other orders, `globalMaxRetries` reloaded by runs or lowered
    /// for some candidates, the feature off for others). And they do share, limits clamped
    /// to what the runs reach: far fewer replays than candidates × jobs.
    #[test]
    fn candidates_that_share_replays_count_what_each_replayed_alone_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.jsonl");
        let (mut shared, mut alone, mut pending) = (0, 0, Vec::new());
        for seed in 1..=10u64 {
            let mut d = Draw(0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x1234_5678_9abc_def1));
            std::fs::write(&path, history(&mut d, 300)).unwrap();
            let baseline = Fields::drawn(&mut d).sim();
            let template = Fields::drawn(&mut d);
            let candidates: Vec<PolicySet> = (0..100)
                .map(|_| {
                    let (global, enabled) = match d.below(5) {
                        0 => (Some(2), None),
                        1 => (Some(1), Some(false)),
                        _ => (None, None),
                    };
                    let config = SchedulerConfig {
                        enabled,
                        ..SchedulerConfig::default()
                    };
                    let overrides = Overrides {
                        global_max_retries: global,
                        ..Overrides::default()
                    };
                    PolicySet {
                        name: String::new(),
                        simulator: template.varied(&mut d).sim(),
                        settings: global.map(|_| overrides.apply(&config)),
                    }
                })
                .collect();
            let sets = PolicySets { baseline, candidates };
            let swept = |share: bool, count: &mut u64| {
                let source = Files::open(&path, SchedulerConfig::default(), Overrides::default()).unwrap();
                let before = REPLAYS.load(Ordering::Relaxed);
                let s = sweep(source, &sets, share, &Options::default(), &mut Quiet)
                    .unwrap()
                    .unwrap();
                *count += REPLAYS.load(Ordering::Relaxed) - before;
                s
            };
            let (together, apart) = (swept(true, &mut shared), swept(false, &mut alone));
            assert_eq!(
                (together.jobs, together.errors),
                (apart.jobs, apart.errors),
                "seed {seed}"
            );
            assert_eq!(together.baseline, apart.baseline, "seed {seed}");
            for (i, (t, a)) in together.arms.iter().zip(&apart.arms).enumerate() {
                assert_eq!(t, a, "seed {seed}, candidate {i}");
            }
            pending.extend(together.arms.iter().map(|t| t.finals[Final::Pending as usize]));
        }
        assert_eq!(alone, 10 * 300 * 100, "every candidate replays every job on its own");
        // Exact limits alone (the key before limits were clamped) share 52,679 replays here.
        assert!(shared * 6 < alone, "{shared} replays shared, {alone} alone");
        // Pending jobs, in numbers that differ between candidates.
        assert!(pending.iter().min() < pending.iter().max(), "{pending:?}");
    }
}
