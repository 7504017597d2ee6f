//! One pass over the history for every candidate of `tune` (SPEC §8): each history is read
//! and decoded once, replayed once under the baseline, then under each candidate, and each
//! candidate's comparison is folded exactly as `simulate --baseline` folds it
//! (`replay::run::tally_job`), so that candidate i's numbers are what `simulate -f
//! <candidate i> --baseline …` prints.
//!
//! Owns: [`sweep`] — the jobs in parallel and in input order (`replay::parallel`), the
//! baseline's own totals (its final states and Pending jobs, for its expected successes and
//! cost), the trials (counted once: they depend on the history alone), and the messages a
//! replay has about its input (bad lines, missing queues), handed to a [`Listener`]. Must
//! not: rank candidates (that is `rank`), format or decide exit codes.
//!
//! Decisions where SPEC §8 is silent:
//! - a `scheduler:` vary changes the scheduler both sides run under, as `simulate
//!   --scheduler-config` would for that candidate: the baseline is replayed once per distinct
//!   scheduler setting among the candidates; the baseline's own row is the template's.
//! - a job that one candidate (or the baseline) cannot replay is an error of the whole job:
//!   it is counted for no candidate, reported once, and makes the exit status 3.

use std::collections::HashMap;
use std::io;

use crate::engine::simulator::Simulator;
use crate::engine::{Detail, JobOutcome, Match, Settings};
use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, Final, Outcome};
use crate::replay::backtest::Backtest;
use crate::replay::compare::{JobDiff, Side};
use crate::replay::estimate::{PendingSet, Rates};
use crate::replay::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::partial::Recorder;
use crate::replay::run::{
    fallback, record, replay_job_detailed, runs_left, runs_left_matched, tally_job_with, BacktestError, CompareTally,
    Fallback, Fallbacks, JobFacts, NotReplayed, Options, TrialCount,
};
use crate::replay::sink::Message;
use crate::replay::source::{HistorySource, Progress};

use super::Vary;

/// One candidate to replay: its policies (and engine), and its own scheduler settings when
/// a `scheduler:` vary gives it some (`None`: the source's).
#[derive(Debug)]
pub struct Arm {
    pub sim: Simulator,
    pub settings: Option<Settings>,
}

/// The baseline's own totals (under the template's scheduler settings).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BaselineTally {
    /// Jobs by final state, indexed by `Final as usize`.
    pub finals: [u64; 4],
    /// Its Pending jobs (their estimates: its expected successes and cost).
    pub pending: PendingSet,
    /// The run time of every recorded run it starts (`--max-compute P%`).
    pub compute: GoDuration,
}

impl BaselineTally {
    fn merge(&mut self, o: &BaselineTally) {
        for (mine, theirs) in self.finals.iter_mut().zip(o.finals) {
            *mine += theirs;
        }
        self.pending.merge(&o.pending);
        self.compute = GoDuration(self.compute.0.saturating_add(o.compute.0));
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
    /// Some job got the policies given on the command line (no queue, or one not given).
    pub used_given: bool,
}

/// Where the messages of the pass go (stderr, in the command).
pub trait Listener {
    fn message(&mut self, m: &Message<'_>) -> io::Result<()>;
    fn progress(&mut self, at: Progress);
}

/// The rules a job's runs match (`table`: each run's first match over the job's list,
/// `list`: that list as indices into the policies given), each once, and the default
/// action (`(usize::MAX, None)`) when a failed run matches none: what decides the job
/// besides its runs ([`Simulator::decision_words`]).
fn matched_keys(h: &FailureHistory, table: &[Match], list: &[usize]) -> Vec<(usize, Option<usize>)> {
    let mut keys = Vec::new();
    for (run, m) in h.runs.iter().zip(table) {
        let key = match m {
            Some((p, r, _)) => match list.get(*p) {
                Some(&policy) => (policy, Some(*r)),
                None => return Vec::new(),
            },
            None if run.outcome == Outcome::Failed => (usize::MAX, None),
            None => continue,
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// Words a job's key holds at most: its settings group and the ids of what decides it; a
/// job whose runs match more rules than that is replayed under every candidate.
const KEY_WORDS: usize = 8;

/// What decides a job under one candidate, as interned ids (`Ids`), padded with
/// `u32::MAX`: equal keys, equal outcomes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key([u32; KEY_WORDS]);

impl std::hash::Hash for Key {
    /// One word for the hasher: the ids folded (an array's own `Hash` hands its bytes one
    /// at a time, which cost more than the lookup saves). Equality still compares them all.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let folded = self.0.iter().fold(0u64, |h, &w| {
            (h ^ u64::from(w)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
        });
        state.write_u64(folded);
    }
}

/// Each candidate's decision words ([`Simulator::decision_words`]) interned: equal words,
/// equal ids, so that a job's key is a few integers.
struct Ids {
    /// [arm][policy][rule].
    rules: Vec<Vec<Vec<u32>>>,
    /// [arm].
    defaults: Vec<u32>,
}

impl Ids {
    fn new(arms: &[Arm]) -> Ids {
        let mut interned: HashMap<Vec<u64>, u32> = HashMap::new();
        let mut id = |words: Vec<u64>| {
            let next = interned.len() as u32;
            *interned.entry(words).or_insert(next)
        };
        let (mut rules, mut defaults) = (Vec::with_capacity(arms.len()), Vec::with_capacity(arms.len()));
        for arm in arms {
            let (r, d) = arm.sim.decision_words();
            rules.push(r.into_iter().map(|p| p.into_iter().map(&mut id).collect()).collect());
            defaults.push(id(d));
        }
        Ids { rules, defaults }
    }

    /// Arm `arm`'s key for a job of `keys` ([`matched_keys`]) under settings group `g`.
    fn key(&self, arm: usize, g: usize, keys: &[(usize, Option<usize>)]) -> Key {
        let mut k = [u32::MAX; KEY_WORDS];
        k[0] = g as u32;
        for (slot, &(p, r)) in k[1..].iter_mut().zip(keys) {
            *slot = match r {
                Some(r) => self.rules[arm]
                    .get(p)
                    .and_then(|rs| rs.get(r))
                    .copied()
                    .unwrap_or(u32::MAX - 1),
                None => self.defaults[arm],
            };
        }
        Key(k)
    }
}

/// A hasher for [`Key`]s, which hash as one folded word: that word (SipHash cost more than
/// the replay the lookup saves).
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type BuildKeyHasher = std::hash::BuildHasherDefault<KeyHasher>;

/// The baseline's side of a job, under one scheduler setting.
struct Base {
    side: Side,
    /// `from[k]`: the run time of its runs from run `k` on (`from[runs]` is 0).
    from: Vec<GoDuration>,
}

/// What a pass over some jobs adds up: a worker's over its unit, the pass's over every
/// unit, and a shard's, which its partial holds (SPEC §9). The same whatever the split.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Tallies {
    jobs: u64,
    trials: TrialCount,
    baseline: BaselineTally,
    arms: Vec<CompareTally>,
}

impl Tallies {
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

/// The fields a rule's matching reads (SPEC §2.3): a vary of any of them gives candidates
/// different matchers; `defaultPolicyName` gives jobs a different list.
const MATCHING: [&str; 13] = [
    "onConditions",
    "onExitCodes",
    "operator",
    "values",
    "onTerminationMessage",
    "pattern",
    "onFailureCategory",
    "onFailureSubcategory",
    "onCategory",
    "onSubcategory",
    "containerName",
    "includeInitContainers",
    "defaultPolicyName",
];

/// Whether every candidate of `varies` matches each run as the others do: no vary touches a
/// field matching reads, nor the default policy. Then each run is matched once for all of
/// them (the sweep's fast path; which rule matches a run does not depend on limits,
/// actions or backoff).
pub fn shares_matching(varies: &[Vary]) -> bool {
    varies.iter().all(|v| {
        v.path
            .split('.')
            .map(|segment| segment.split('[').next().unwrap_or(segment))
            .all(|field| !MATCHING.contains(&field))
    })
}

/// Replays every job of `source` under `baseline` and every arm, in one pass, into `emit`;
/// `shared`: the arms match every run alike ([`shares_matching`]), so each run is matched
/// once.
fn pass<S, E>(source: S, baseline: &Simulator, arms: &[Arm], shared: bool, options: &Options, emit: E) -> io::Result<()>
where
    S: HistorySource,
    E: FnMut(Emitted<(String, Option<Fallback>), Tallies>) -> io::Result<bool>,
{
    // The distinct scheduler settings: 0 is the source's; each arm's index into them.
    let mut groups: Vec<Option<&Settings>> = vec![None];
    let group_of: Vec<usize> = arms
        .iter()
        .map(|a| match a.settings.as_ref() {
            None => 0,
            Some(s) => match groups.iter().position(|g| *g == Some(s)) {
                Some(i) => i,
                None => {
                    groups.push(Some(s));
                    groups.len() - 1
                }
            },
        })
        .collect();
    let fallback_sim = fallback_sim(baseline, arms);
    let ids = Ids::new(arms);
    let work = |part: &mut Tallies, job: Decoded<'_>| {
        let h = job.history;
        let fail = |side: &str, e: String| format!("{}: job `{}`: {side}{e}", job.origin, h.job.id);
        let facts = JobFacts::new(h);
        // The baseline once per scheduler setting, with the runs it has left when Pending and
        // the run time of its runs from each run on (for what a candidate removes).
        let mut bases: Vec<Base> = Vec::with_capacity(groups.len());
        for g in &groups {
            let settings = g.unwrap_or(job.settings);
            let b = replay_job_detailed(baseline, settings, h, Detail::Outcome).map_err(|e| fail("baseline: ", e))?;
            let mut side = Side::of(&b);
            if side.final_state == Final::Pending {
                side.runs_left = runs_left(baseline, settings, &facts);
            }
            // Saturating sums of non-negative numbers: from the end, the same as from k on.
            let mut from = vec![GoDuration::ZERO; b.runs.len() + 1];
            for (k, r) in b.runs.iter().enumerate().rev() {
                from[k] = GoDuration(from[k + 1].0.saturating_add(r.ended_at.saturating_sub(r.started_at)));
            }
            bases.push(Base { side, from });
        }
        // Every candidate replayed before anything is counted: a job one of them cannot
        // replay counts for none. Lean replays: a candidate's outcome is all it counts. When
        // the candidates match alike, each run is matched once for all, and candidates that
        // decide this job alike (the same action, limit and backoff for every rule its runs
        // match, `Simulator::decision_key`) share one replay.
        let leader = arms.first().filter(|_| shared);
        let leader_settings = groups[group_of.first().copied().unwrap_or(0)].unwrap_or(job.settings);
        let table = leader.and_then(|a| a.sim.match_table(h, leader_settings));
        // The rules the job's runs match, as indices into the policies given (the same in
        // every candidate: the template's, in its order).
        let keys = match (&table, leader) {
            (Some(t), Some(a)) => a
                .sim
                .list_of(h, leader_settings)
                .map(|list| matched_keys(h, t, &list))
                .filter(|k| k.len() < KEY_WORDS),
            _ => None,
        };
        let mut outcomes: Vec<(JobOutcome, usize)> = Vec::new();
        let mut which = Vec::with_capacity(arms.len());
        let mut seen: HashMap<Key, usize, BuildKeyHasher> = HashMap::default();
        for (i, (arm, &g)) in arms.iter().zip(&group_of).enumerate() {
            let settings = groups[g].unwrap_or(job.settings);
            let key = keys.as_ref().map(|keys| ids.key(i, g, keys));
            let j = match key.and_then(|k| seen.get(&k)) {
                Some(&j) => j,
                None => {
                    let c = arm
                        .sim
                        .simulate_outcome(h, &facts.ctx, settings, bases[g].side.runs, table.as_deref())
                        .map_err(|e| fail("", e))?;
                    outcomes.push((c, i));
                    if let Some(k) = key {
                        seen.insert(k, outcomes.len() - 1);
                    }
                    outcomes.len() - 1
                }
            };
            which.push(j);
        }
        part.jobs += 1;
        part.trials.add(h, job.origin, options);
        let side = bases[0].side;
        let t = &mut part.baseline;
        t.finals[side.final_state as usize] += 1;
        t.compute = GoDuration(t.compute.0.saturating_add(side.compute.0));
        if side.final_state == Final::Pending {
            t.pending
                .add(facts.class(), facts.depth, side.runs_left, h.job.resources.as_ref());
        }
        if part.arms.len() < arms.len() {
            part.arms.resize_with(arms.len(), CompareTally::default);
        }
        // The continued history's runs matched too, when some candidate is Pending: its
        // copies of the last failed run match as that run does (matching reads none of what
        // a copy changes: node, times, expectations).
        let pending = outcomes.iter().any(|(o, _)| o.final_state == Final::Pending);
        let longer_table = match &table {
            Some(t) if pending => {
                let last = h.runs.iter().rposition(|r| r.outcome == Outcome::Failed);
                last.zip(facts.longer()).map(|(i, longer)| {
                    let mut t = t.clone();
                    t.resize(longer.runs.len(), t[i]);
                    t
                })
            }
            _ => None,
        };
        // The runs each distinct outcome has left, worked out at most once; and whether it is
        // the baseline's own (then it changes nothing: counted in a few additions, what
        // `Comparison::add` of its diff would add).
        let mut left: Vec<Option<u32>> = vec![None; outcomes.len()];
        let same: Vec<bool> = outcomes
            .iter()
            .map(|(o, by)| {
                let b = bases[group_of[*by]].side;
                let c = Side::of_outcome(o);
                c.final_state != Final::Pending && Side { runs_left: 0, ..b } == c
            })
            .collect();
        for ((&j, &g), tally) in which.iter().zip(&group_of).zip(&mut part.arms) {
            let base = &bases[g];
            if same[j] {
                tally.unchanged(&base.side);
                continue;
            }
            let from = |k: usize| base.from[k.min(base.from.len() - 1)];
            let mut diff = JobDiff::of_outcome(base.side, from, &outcomes[j].0, h.job.resources);
            let runs_left = || {
                *left[j].get_or_insert_with(|| {
                    let (_, by) = outcomes[j];
                    let settings = groups[g].unwrap_or(job.settings);
                    runs_left_matched(&arms[by].sim, settings, &facts, longer_table.as_deref())
                })
            };
            tally_job_with(&mut diff, runs_left, &facts, tally);
        }
        Ok((h.job.id.clone(), fallback(fallback_sim, h)))
    };
    for_each_ordered(source, options.shard, work, emit)
}

/// The policies whose `given` list a job without its queue's gets: the first candidate's
/// (every candidate's documents name the same policies), else the baseline's.
fn fallback_sim<'a>(baseline: &'a Simulator, arms: &'a [Arm]) -> &'a Simulator {
    arms.first().map_or(baseline, |a| &a.sim)
}

/// Replays every job of `source` under `baseline` and every arm, in one pass ([`pass`]),
/// the messages to `listener`. `Err` inside: `--backtest-at` has no answer (nothing else is
/// wrong).
pub fn sweep<S: HistorySource>(
    source: S,
    baseline: &Simulator,
    arms: &[Arm],
    shared: bool,
    options: &Options,
    listener: &mut dyn Listener,
) -> io::Result<Result<Swept, BacktestError>> {
    let mut fold = SweepFold::new(listener, fallback_sim(baseline, arms).given(), arms.len());
    pass(source, baseline, arms, shared, options, |e| match e {
        Emitted::Job(_, p) => fold.entry(p),
        Emitted::Unit(part, at) => {
            fold.unit(&part, at);
            Ok(true)
        }
    })?;
    Ok(fold.finish(options))
}

/// [`sweep`] into a partial result (SPEC §9): the jobs to list recorded, the shard's
/// tallies returned.
pub fn sweep_partial<S: HistorySource>(
    source: S,
    baseline: &Simulator,
    arms: &[Arm],
    shared: bool,
    options: &Options,
    rec: &mut Recorder<'_>,
) -> io::Result<Tallies> {
    let mut total = Tallies::default();
    pass(source, baseline, arms, shared, options, |e| match e {
        Emitted::Job(at, p) => record(rec, &at, p, |rec, (job, f)| rec.fallback(&at, &job, f)),
        Emitted::Unit(part, _) => {
            total.merge(&part);
            Ok(true)
        }
    })?;
    total.arms.resize_with(arms.len(), CompareTally::default);
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
        }
    }

    fn unit(&mut self, part: &Tallies, at: Progress) {
        self.total.merge(part);
        self.listener.progress(at);
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
    pub fn finish(self, options: &Options) -> Result<Swept, BacktestError> {
        let SweepFold {
            arms,
            errors,
            fallbacks,
            total,
            ..
        } = self;
        let (rates, backtest) = total.trials.finish(options)?;
        let mut arms_out = total.arms;
        arms_out.resize_with(arms, CompareTally::default);
        for a in &mut arms_out {
            a.comparison.errors = errors;
        }
        Ok(Swept {
            jobs: total.jobs,
            errors,
            baseline: total.baseline,
            arms: arms_out,
            rates,
            backtest,
            used_given: fallbacks.used_given,
        })
    }
}
