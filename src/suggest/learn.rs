//! Pass 1's fold (docs/reference/suggest.md "How it learns"): what one job adds
//! ([`learn_job`]: its failed runs' signatures, and what the baseline, replayed under its own
//! categorizer through `replay::run::as_side`, decided of each), what a worker's unit of
//! jobs holds ([`Unit`]), and the fold of units and jobs in the source's order ([`Learning`]).
//! One fold for one process, a shard and `merge`: a shard's [`Learning`] travels in its
//! partial as a [`ShardLearning`], added to the others in shard order, and a later shard's
//! signatures past its first 10,000 as [`PastSignature`]s, added last.
//!
//! Owns: the split at `--backtest-at` (jobs before it are learned from, the later ones
//! tested on), the counts beside the signatures (jobs on each side, entries not read, jobs
//! without `submittedAt`, the estimates' trials), the failed runs' times of every job read
//! for the incident windows ([`see_job`]: every queue's, docs/reference/suggest.md
//! "Incidents"), and which retries collided ([`collisions`]). Pure: no I/O; what is spooled
//! or said on stderr is `commands::suggest`'s.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::engine::job_report::RuleLabel;
use crate::engine::simulator::Simulator;
use crate::engine::{EngineKind, Settings};
use crate::model::failure_history::{FailureHistory, Outcome, Run, Timestamp};
use crate::model::policy::Action;
use crate::model::signature::FailedTexts;
use crate::replay::categorize::Reclassify;
use crate::replay::incidents::kinds::Gather;
use crate::replay::incidents::{self, Detector, Look};
use crate::replay::run::{as_side, Options, TrialCount};
use crate::replay::source::copy::FailedTimes;
use crate::replay::source::Origin;

use super::exits::ExitCodes;
use super::stats::{Learned, PastSignature, ShardLearned, UnitLearned};

/// A worker's unit of pass 1: what its jobs added, the trials it counted, its scratch.
#[derive(Default)]
pub struct Unit {
    learned: UnitLearned,
    trials: TrialCount,
    /// Every queue's failed runs' exit codes, by container.
    exits: ExitCodes,
    reclassify: Reclassify,
    /// The job's runs as the baseline decided them: the action and, in `labels`, the rule
    /// (`policy/index`, `policy/default`, or the decision's kind); `None`: not reached.
    today: Vec<Option<(Action, std::ops::Range<usize>)>>,
    labels: String,
    /// Every job's failed runs' times (every queue's).
    detector: Detector,
    /// The job's runs' times ([`see_job`]), its failed runs' times, and which of its failed
    /// runs' next runs collided (scratch).
    ends: Vec<Option<i64>>,
    /// The job's failed runs' signature texts, computed once for the mix and learning.
    texts: FailedTexts,
    times: Vec<i64>,
    collided: Vec<bool>,
}

/// Every job read, whatever its queue: its runs' times, and with `detect` its failed runs'
/// for the incident windows (docs/reference/suggest.md "Incidents": detection spans every job
/// the verb reads) and its part of the mix, as `gather` says (the span's alone when the
/// unusual windows' jobs are read again from the copy). Before [`learn_job`], which reads the
/// times.
pub fn see_job(unit: &mut Unit, history: &FailureHistory, detect: Option<Gather>) {
    incidents::ends(history, &mut unit.ends);
    unit.texts.clear();
    if let Some(gather) = detect {
        let untimed = incidents::failed_times(history, &unit.ends, &mut unit.times);
        unit.detector.add_job(&unit.times, untimed);
        // Only a failed run with a time is in the mix; learning computes the texts when it
        // needs them (another queue's job's are never read).
        if !unit.times.is_empty() {
            let texts = unit.texts.of(&history.runs);
            unit.detector.mix.add_history(history, &unit.ends, texts, gather);
        }
    }
}

/// When `history`'s failed runs ended, as [`see_job`] placed them: written into its record of
/// pass 1's copy, so that reading again what the incident windows hold skips the other jobs.
pub fn failed_times(unit: &Unit, history: &FailureHistory) -> FailedTimes {
    let ended = history
        .runs
        .iter()
        .zip(&unit.ends)
        .filter(|(run, _)| run.outcome == Outcome::Failed)
        .filter_map(|(_, end)| *end);
    match ended.fold(None, |span: Option<(i64, i64)>, t| {
        Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))))
    }) {
        Some((a, b)) => FailedTimes::Between(a, b),
        None => FailedTimes::None,
    }
}

/// Whether a returned lease's text is Kubernetes' refusal of a pod whose name is taken
/// (`pods "armada-…-0" already exists`).
fn already_exists(text: &str) -> bool {
    text.find("pods \"")
        .is_some_and(|at| text[at..].contains("\" already exists"))
}

/// The texts a run carries: its pod error, its containers' messages.
fn texts(run: &Run) -> impl Iterator<Item = &str> {
    run.pod_error
        .as_deref()
        .into_iter()
        .chain(run.containers.iter().filter_map(|c| c.message.as_deref()))
        .filter(|t| !t.is_empty())
}

/// Per run of `history`, into `out`: whether it is a failed run whose next run is a collided
/// retry (docs/reference/suggest.md "A collided retry is no trial"): a returned lease whose
/// text is Kubernetes' `pods "…" already exists`, or one without any text right after a
/// failure whose pod `baseline`'s categorizer keeps (a run that started, failing with its own
/// error or succeeding, is never one: its pod was made).
pub fn collisions(history: &FailureHistory, baseline: &Simulator, out: &mut Vec<bool>) {
    out.clear();
    out.resize(history.runs.len(), false);
    for (k, pair) in history.runs.windows(2).enumerate() {
        let (run, next) = (&pair[0], &pair[1]);
        if run.outcome != Outcome::Failed || next.outcome != Outcome::LeaseReturned {
            continue;
        }
        let mut said = texts(next).peekable();
        out[k] = match said.peek() {
            Some(_) => said.any(already_exists),
            None => baseline.categorizer().is_some_and(|c| c.classify(run).pod_retained()),
        };
    }
}

/// Where a job falls at `--backtest-at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Submitted at or after it: tested on, not learned from.
    pub test: bool,
    /// It has no `submittedAt` (with `--backtest-at`): its id.
    pub not_submitted: Option<String>,
}

/// What a job of any queue adds to `unit` whatever `--queue` learns from: its failed runs'
/// exit codes by container (a category the proposal splits by one is every queue's).
pub fn note_exits(unit: &mut Unit, history: &FailureHistory) {
    unit.exits.add_job(history);
}

/// What `history` adds to `unit` (after [`see_job`]): with `at`, its trials for the
/// estimates' backtest (`look`: the windows given, and detection, as the backtest's rates
/// leave incidents out); before `at` (or without it), its failed runs' signatures and what
/// `baseline` decided of each.
pub fn learn_job(
    unit: &mut Unit,
    history: &mut FailureHistory,
    settings: &Settings,
    origin: &Origin,
    baseline: &Simulator,
    at: Option<Timestamp>,
    look: &Look,
) -> Placed {
    // The estimates' trials, split at `--backtest-at` (their backtest; without one, the
    // comparison counts its own).
    if at.is_some() {
        let options = Options {
            backtest_at: at,
            shard: None,
            explain: false,
            incidents: look.clone(),
            contention: false,
            contention_sharded: false,
        };
        unit.trials.add(history, origin, &options);
    }
    let placed = match (at, history.job.submitted_at) {
        (None, _) => Placed {
            test: false,
            not_submitted: None,
        },
        (Some(at), Some(s)) => Placed {
            test: s >= at,
            not_submitted: None,
        },
        (Some(_), None) => Placed {
            test: false,
            not_submitted: Some(history.job.id.clone()),
        },
    };
    if !placed.test {
        // What the history says, and what today's policy does with it: the proposal keeps
        // the rules that decide today, so it must know them before pass 2 compares.
        collisions(history, baseline, &mut unit.collided);
        let texts = unit.texts.of(&history.runs);
        unit.learned.add_job(history, &unit.ends, &unit.collided, texts);
        let Unit {
            learned,
            reclassify,
            today,
            labels,
            ..
        } = unit;
        as_side(baseline.categorizer(), history, reclassify, None, None, |seen, _| {
            // The decisions alone, not a report of the job: pass 1 reads only which rule
            // decided each failed run (`Simulator::simulate_decisions`).
            today.clear();
            today.resize(seen.runs.len(), None);
            labels.clear();
            let replayed = baseline
                .simulate_decisions(seen, settings, &mut |k, kind, policy, rule| {
                    let start = labels.len();
                    match (policy, rule) {
                        (Some(policy), Some(rule)) => {
                            // As the decision records name it (`policy/index`, `policy/default`).
                            let _ = write!(labels, "{}", RuleLabel { policy, rule });
                        }
                        _ => labels.push_str(kind.as_str()),
                    }
                    if let Some(slot) = today.get_mut(k) {
                        *slot = Some((kind.action(), start..labels.len()));
                    }
                })
                .is_ok();
            learned.add_today(seen, |k| {
                let (action, at) = today.get(k).filter(|_| replayed)?.clone()?;
                Some((action, &labels[at]))
            });
        });
        // Retries the replay says collide (upstream, a Retry of a failure whose pod the
        // categorizer keeps) that the record shows ran: the record is right, the categorizer
        // is not the one the cluster ran.
        if baseline.categorizer().is_some() && baseline.engine() == EngineKind::Upstream {
            for (k, pair) in history.runs.windows(2).enumerate() {
                let retried = unit.today.get(k).is_some_and(|d| matches!(d, Some((Action::Retry, _))));
                let started = matches!(pair[1].outcome, Outcome::Failed | Outcome::Succeeded);
                if pair[0].outcome == Outcome::Failed && retried && started && unit.reclassify.retained(k) {
                    unit.learned.collisions_ran += 1;
                }
            }
        }
    }
    placed
}

/// Pass 1's counts, folded in the source's order.
#[derive(Debug)]
pub struct Learning {
    pub learned: Learned,
    /// Jobs replayed, on each side of `--backtest-at`.
    pub train_jobs: u64,
    pub test_jobs: u64,
    /// Entries that could not be read.
    pub errors: u64,
    /// Jobs without `submittedAt` (with `--backtest-at`), and the first of them.
    pub not_submitted: Option<(u64, String)>,
    /// The trials of every job (for the backtest of the estimates).
    pub trials: TrialCount,
    /// Every job's failed runs' times, every queue's (the incident windows).
    pub detector: Detector,
    /// Every queue's failed runs' exit codes, by container (`suggest::exits`).
    pub exits: ExitCodes,
    /// Jobs of other queues than `--queue`: read (for the incident windows and the exit
    /// codes) and not learned from.
    pub other_queues: u64,
}

impl Default for Learning {
    fn default() -> Learning {
        Learning::new(Learned::default())
    }
}

impl Learning {
    /// A shard's learning: its own jobs only. `first`: the first shard in the source's order
    /// (shard 0 of a file source's byte ranges), which keeps what one process keeps; a later
    /// one hands what is past its first 10,000 signatures over as it goes
    /// ([`Learning::take_past`]).
    pub fn of_a_shard(first: bool) -> Learning {
        Learning::new(Learned::of_a_shard(first))
    }

    fn new(learned: Learned) -> Learning {
        Learning {
            learned,
            train_jobs: 0,
            test_jobs: 0,
            errors: 0,
            not_submitted: None,
            trials: TrialCount::default(),
            detector: Detector::default(),
            exits: ExitCodes::default(),
            other_queues: 0,
        }
    }

    /// A worker's unit, in the source's order.
    pub fn add_unit(&mut self, unit: Unit) {
        self.trials.merge(&unit.trials);
        self.detector.merge(&unit.detector);
        self.learned.merge_unit(unit.learned);
        self.exits.merge(unit.exits);
    }

    /// One job replayed, in the source's order.
    pub fn add_job(&mut self, placed: Placed) {
        if let Some(id) = placed.not_submitted {
            self.not_submitted.get_or_insert((0, id)).0 += 1;
        }
        if placed.test {
            self.test_jobs += 1;
        } else {
            self.train_jobs += 1;
        }
    }

    /// An entry that could not be read.
    pub fn add_error(&mut self) {
        self.errors += 1;
    }

    /// A later shard's signatures past its first 10,000, for its partial's entries:
    /// `Learned::take_past` (none held after; with `all` false, only once 10,000 are held).
    pub fn take_past(&mut self, all: bool) -> Vec<PastSignature> {
        self.learned.take_past(all)
    }

    /// What a shard's partial records of its learning as its totals (what
    /// [`Learning::take_past`] handed over is in its entries).
    pub fn into_shard(self) -> ShardLearning {
        ShardLearning {
            learned: self.learned.into_shard(),
            train_jobs: self.train_jobs,
            test_jobs: self.test_jobs,
            errors: self.errors,
            not_submitted: self.not_submitted,
            trials: self.trials,
            detector: self.detector,
            exits: self.exits,
            other_queues: self.other_queues,
        }
    }

    /// Adds the next shard's learning, in shard order. `Err`: what is wrong with it.
    pub fn add_shard(&mut self, t: ShardLearning) -> Result<(), String> {
        self.learned
            .merge_shard(t.learned)
            .map_err(|why| format!("is damaged: {why}"))?;
        self.train_jobs += t.train_jobs;
        self.test_jobs += t.test_jobs;
        self.errors += t.errors;
        if let Some((n, first)) = t.not_submitted {
            self.not_submitted.get_or_insert((0, first)).0 += n;
        }
        self.trials.merge(&t.trials);
        self.detector.merge(&t.detector);
        self.exits.merge(t.exits);
        self.other_queues += t.other_queues;
        Ok(())
    }

    /// Adds a later shard's counts of a signature past its first 10,000, once every shard's
    /// totals are added (`Learned::merge_past`). `Err`: what is wrong with it.
    pub fn add_past(&mut self, past: PastSignature) -> Result<(), String> {
        self.learned.merge_past(past)
    }
}

/// A shard's [`Learning`] as its partial's totals (docs/past-one-machine.md).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardLearning {
    learned: ShardLearned,
    train_jobs: u64,
    test_jobs: u64,
    errors: u64,
    not_submitted: Option<(u64, String)>,
    trials: TrialCount,
    #[serde(default)]
    detector: Detector,
    #[serde(default)]
    exits: ExitCodes,
    #[serde(default)]
    other_queues: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::Container;

    fn failed(category: &str) -> Run {
        Run {
            outcome: Outcome::Failed,
            category: Some(category.into()),
            containers: vec![Container {
                name: "main".into(),
                exit_code: 1,
                ..Container::default()
            }],
            ..Run::default()
        }
    }

    fn returned(text: Option<&str>) -> Run {
        Run {
            outcome: Outcome::LeaseReturned,
            pod_error: text.map(str::to_string),
            ..Run::default()
        }
    }

    /// A returned lease saying Kubernetes' `already exists` is a collision whatever the
    /// categorizer; one saying anything else is not; one saying nothing is when the baseline's
    /// categorizer keeps the failed run's pod (none here: it keeps none); a run that started
    /// never is.
    #[test]
    fn a_collision_is_a_returned_lease_after_a_kept_pod() {
        let h = FailureHistory {
            runs: vec![
                failed("network"),
                returned(Some("pods \"armada-01h-0\" already exists")),
                failed("network"),
                returned(Some("node drained")),
                failed("network"),
                returned(None),
                failed("network"),
                Run {
                    outcome: Outcome::Succeeded,
                    ..Run::default()
                },
            ],
            ..FailureHistory::default()
        };
        let none = Simulator::new(Vec::new(), Vec::new(), None).unwrap();
        let mut out = Vec::new();
        collisions(&h, &none, &mut out);
        assert_eq!(out, vec![true, false, false, false, false, false, false, false]);
        // A categorizer that keeps `network`'s pods: the silent returned lease collided.
        let yaml = "errorCategories:\n  enabled: true\n  categories:\n    - name: network\n      rules:\n        - onExitCodes: {operator: In, values: [1]}\n";
        let parsed = crate::model::parse_documents(yaml, None);
        let Some(crate::model::Resource::ErrorCategories(config)) = &parsed.documents[0].resource else {
            panic!("{:?}", parsed.documents[0].diagnostics)
        };
        let classifier = crate::engine::categorizer::Classifier::new(config).unwrap();
        let keeps = none.with_categorizer(Some(std::sync::Arc::new(classifier)));
        collisions(&h, &keeps, &mut out);
        assert_eq!(out, vec![true, false, false, false, true, false, false, false]);
    }
}
