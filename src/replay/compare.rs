//! `simulate --baseline` (docs/what-if.md): one job replayed under two policy sets → what the
//! change does to it, and the totals over every job.
//!
//! Owns: [`JobDiff`] (both sides of one job, as numbers) and [`Comparison`] (the totals,
//! folded in input order in constant memory). Each side is replayed by its own
//! `Simulator` (its policies and its engine), so a baseline engine can differ from the
//! candidate's. Must not: format (that is `output`) or do I/O.
//!
//! Decisions docs/what-if.md leaves open:
//! - a job changes when its final state or its retry count differs; delay and compute
//!   totals count every job (a new backoff changes the delay of unchanged jobs too).
//! - compute time: the `runFor` of the runs one side starts and the other does not (the
//!   runs after the earlier end). Runs past the end of the recorded history are not
//!   recorded: their expected run time is docs/estimates.md's estimate (`estimate`), summed apart.
//! - GPU- and CPU-hours (docs/estimates.md): the same run times × the job's request, summed as
//!   whole nanoseconds × thousandths (exact in any order); `withoutResources` counts the
//!   jobs with compute added or removed, or Pending in the candidate, that request neither.

use crate::engine::{DecisionKind, JobOutcome, JobReport};
use crate::model::duration::{GoDuration, TotalDuration};
use crate::model::failure_history::{FailureHistory, Final, Outcome, Resources};

use super::categorize::SideCategories;
pub use super::device_time::{add_device_time, hours, request_time, Overflow};
use super::estimate::{class_of, FailureClass, Smallest, MAX_CLASSES};
use super::recorded::Recorded;

/// One side of a job: what the policies made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Side {
    pub final_state: Final,
    pub retries: u32,
    pub delay: GoDuration,
    /// Runs the scheduler starts.
    pub runs: usize,
    /// Pending: the runs the side has left (docs/estimates.md), set by the replay; else 0.
    pub runs_left: u32,
    /// The run time of the recorded runs it starts.
    pub compute: GoDuration,
}

/// The run time of a report's runs from `from` on.
fn run_time(report: &JobReport, from: usize) -> GoDuration {
    GoDuration(
        report.runs[from.min(report.runs.len())..]
            .iter()
            .map(|r| r.ended_at.saturating_sub(r.started_at))
            .fold(0u64, u64::saturating_add),
    )
}

impl Side {
    pub fn of(report: &JobReport) -> Side {
        Side {
            final_state: report.status.final_state(),
            retries: report.retries,
            delay: report.total_delay,
            runs: report.runs.len(),
            runs_left: 0,
            compute: run_time(report, 0),
        }
    }

    /// The side of a lean replay ([`JobOutcome`]): the same numbers as [`Side::of`] its report.
    pub fn of_outcome(o: &JobOutcome) -> Side {
        Side {
            final_state: o.final_state,
            retries: o.retries,
            delay: o.delay,
            runs: o.runs,
            runs_left: 0,
            compute: o.compute,
        }
    }

    /// A job changes when its final state or its retry count differs.
    pub fn differs(&self, other: &Side) -> bool {
        self.final_state != other.final_state || self.retries != other.retries
    }
}

/// One job under both policy sets.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobDiff {
    pub job: String,
    pub baseline: Side,
    pub candidate: Side,
    /// `runFor` of runs the candidate starts and the baseline does not.
    pub compute_added: GoDuration,
    /// `runFor` of runs the baseline starts and the candidate does not.
    pub compute_removed: GoDuration,
    /// The job's requests (docs/estimates.md).
    pub resources: Option<Resources>,
}

/// Named transitions of the final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transition {
    /// `Failed → Succeeded`.
    Rescued,
    /// `Succeeded → Failed`.
    Lost,
    /// `→ Pending`: would retry past the end of the recorded history.
    ToPending,
    /// Any other change of final state.
    Other,
}

impl JobDiff {
    /// Whether a side would start a run the history does not record (docs/estimates.md).
    pub fn pending(&self) -> bool {
        self.baseline.final_state == Final::Pending || self.candidate.final_state == Final::Pending
    }

    pub fn new(baseline: &JobReport, candidate: JobReport) -> JobDiff {
        let (b, c) = (Side::of(baseline), Side::of(&candidate));
        let (compute_added, compute_removed) = if c.runs > b.runs {
            (run_time(&candidate, b.runs), GoDuration::ZERO)
        } else {
            (GoDuration::ZERO, run_time(baseline, c.runs))
        };
        JobDiff {
            job: candidate.job_id,
            baseline: b,
            candidate: c,
            compute_added,
            compute_removed,
            resources: candidate.resources,
        }
    }

    /// [`JobDiff::new`] of a candidate replayed lean, with `from` = the baseline's runs
    /// ([`JobOutcome::compute_from`]); `baseline_from(k)`: the run time of the baseline's runs
    /// from run `k` on. No job id: a search counts its jobs, it lists none.
    pub fn of_outcome(
        baseline: Side,
        baseline_from: impl FnOnce(usize) -> GoDuration,
        c: &JobOutcome,
        resources: Option<Resources>,
    ) -> JobDiff {
        let candidate = Side::of_outcome(c);
        let (compute_added, compute_removed) = if candidate.runs > baseline.runs {
            (c.compute_from, GoDuration::ZERO)
        } else {
            (GoDuration::ZERO, baseline_from(candidate.runs))
        };
        JobDiff {
            job: String::new(),
            baseline,
            candidate,
            compute_added,
            compute_removed,
            resources,
        }
    }

    pub fn changed(&self) -> bool {
        self.baseline.differs(&self.candidate)
    }

    pub fn transition(&self) -> Option<Transition> {
        Transition::between(self.baseline.final_state, self.candidate.final_state)
    }
}

impl Transition {
    /// Its name in records (`comparison.changedJobs[].transition`).
    pub fn name(self) -> &'static str {
        match self {
            Transition::Rescued => "rescued",
            Transition::Lost => "lost",
            Transition::ToPending => "toPending",
            Transition::Other => "other",
        }
    }

    /// The transition from one final state to another; `None` when they are the same.
    pub fn between(from: Final, to: Final) -> Option<Transition> {
        use Final::*;
        if from == to {
            return None;
        }
        Some(match (from, to) {
            (Failed, Succeeded) => Transition::Rescued,
            (Succeeded, Failed) => Transition::Lost,
            (_, Pending) => Transition::ToPending,
            _ => Transition::Other,
        })
    }
}

/// Totals over every job, folded in input order.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Comparison {
    pub jobs: u64,
    pub changed: u64,
    /// Changed jobs whose final state is the same (only the retry count differs).
    pub retries_only: u64,
    pub rescued: u64,
    pub lost: u64,
    pub to_pending: u64,
    pub other: u64,
    /// (baseline final, candidate final) → jobs, for every change of final state.
    /// Indexed `[baseline as usize][candidate as usize]` (a fixed table: counting a job is
    /// one addition, which a search does per candidate).
    pub by_state: [[u64; 4]; 4],
    pub retries_added: u64,
    pub retries_removed: u64,
    pub delay_added: TotalDuration,
    pub delay_removed: TotalDuration,
    pub compute_added: TotalDuration,
    pub compute_removed: TotalDuration,
    /// GPU and CPU time of the runs added and removed, in nanoseconds × thousandths.
    pub gpu_added: u128,
    pub gpu_removed: u128,
    pub cpu_added: u128,
    pub cpu_removed: u128,
    /// Jobs with compute added or removed, or Pending in the candidate, that request
    /// neither CPU nor GPU (their hours count 0).
    pub without_resources: u64,
    /// The run time of every recorded run each side starts (`--max-compute P%` is a share
    /// of the baseline's).
    pub baseline_compute: TotalDuration,
    pub candidate_compute: TotalDuration,
    /// Jobs that could not be replayed on one side or both.
    pub errors: u64,
    /// The first job whose GPU or CPU time took a sum past 128 bits (it then stays at the
    /// largest value): the command refuses the history (`Overflow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<Overflow>,
    /// The record's own totals (`replay::recorded`: every run, whatever a side starts),
    /// set once at the end by the fold, which counts them beside the trials; empty in the
    /// workers' comparisons.
    #[serde(default, skip_serializing_if = "Recorded::is_empty")]
    pub recorded: Recorded,
    /// With the executor's categorizer (`--categorizer`): what each side's changed, and its
    /// collisions (a plain replay's are the candidate's). `None` without one, so that
    /// nothing is added to what a replay without a categorizer prints or records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Box<SideCategories>>,
    /// With contention on (docs/contention.md): the record's and each side's, swept once at
    /// the end and set then; `None` when off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention: Option<Box<super::contention::OfComparison>>,
    /// Not computed: the default left it out of a sharded run, and the answer says so where
    /// the section would be ([`Options::contention_sharded`](super::run::Options)).
    #[serde(skip)]
    pub contention_sharded: bool,
    /// Whether the baseline explains the record: the jobs replayed against it and those whose
    /// record contradicts it. `None` when the baseline is no policy the cluster ran (`suggest`
    /// without one), whose contradictions say nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained: Option<super::explained::Explained>,
}

fn add(a: &mut TotalDuration, b: u64) {
    a.add(GoDuration(b));
}

impl Comparison {
    pub fn add(&mut self, d: &JobDiff) {
        self.jobs += 1;
        let (b, c) = (&d.baseline, &d.candidate);
        if d.changed() {
            self.changed += 1;
        }
        match d.transition() {
            None if d.changed() => self.retries_only += 1,
            None => {}
            Some(t) => {
                match t {
                    Transition::Rescued => self.rescued += 1,
                    Transition::Lost => self.lost += 1,
                    Transition::ToPending => self.to_pending += 1,
                    Transition::Other => self.other += 1,
                }
                self.by_state[b.final_state as usize][c.final_state as usize] += 1;
            }
        }
        self.retries_added += u64::from(c.retries.saturating_sub(b.retries));
        self.retries_removed += u64::from(b.retries.saturating_sub(c.retries));
        add(&mut self.delay_added, c.delay.0.saturating_sub(b.delay.0));
        add(&mut self.delay_removed, b.delay.0.saturating_sub(c.delay.0));
        add(&mut self.compute_added, d.compute_added.0);
        add(&mut self.compute_removed, d.compute_removed.0);
        add(&mut self.baseline_compute, b.compute.0);
        add(&mut self.candidate_compute, c.compute.0);
        let r = d.resources.as_ref();
        let (gpu, cpu) = (r.and_then(|r| r.gpu_milli), r.and_then(|r| r.cpu_milli));
        self.add_device_times(
            [
                request_time(d.compute_added, gpu),
                request_time(d.compute_removed, gpu),
                request_time(d.compute_added, cpu),
                request_time(d.compute_removed, cpu),
            ],
            &d.job,
        );
        let counted = d.compute_added.0 > 0 || d.compute_removed.0 > 0 || c.final_state == Final::Pending;
        if counted && Resources::is_none(r) {
            self.without_resources += 1;
        }
    }

    /// [`Comparison::add`] of a job both sides decide alike (same final state, retries,
    /// delay and runs): one more job, and its run time on both sides.
    pub fn unchanged(&mut self, compute: GoDuration) {
        self.jobs += 1;
        add(&mut self.baseline_compute, compute.0);
        add(&mut self.candidate_compute, compute.0);
    }

    /// Adds the totals of other jobs (another worker's, another shard's).
    pub fn merge(&mut self, o: &Comparison) {
        self.jobs += o.jobs;
        self.changed += o.changed;
        self.retries_only += o.retries_only;
        self.rescued += o.rescued;
        self.lost += o.lost;
        self.to_pending += o.to_pending;
        self.other += o.other;
        for (mine, theirs) in self.by_state.iter_mut().flatten().zip(o.by_state.iter().flatten()) {
            *mine += theirs;
        }
        self.retries_added += o.retries_added;
        self.retries_removed += o.retries_removed;
        for (mine, theirs) in [
            (&mut self.delay_added, o.delay_added),
            (&mut self.delay_removed, o.delay_removed),
            (&mut self.compute_added, o.compute_added),
            (&mut self.compute_removed, o.compute_removed),
            (&mut self.baseline_compute, o.baseline_compute),
            (&mut self.candidate_compute, o.candidate_compute),
        ] {
            mine.add_total(theirs);
        }
        if self.overflow.is_none() {
            self.overflow.clone_from(&o.overflow);
        }
        // Two workers' sums that fit apart and not together: no one job took them there.
        self.add_device_times([o.gpu_added, o.gpu_removed, o.cpu_added, o.cpu_removed], "");
        self.without_resources += o.without_resources;
        self.recorded.merge(&o.recorded);
        self.errors += o.errors;
        if let Some(theirs) = &o.categories {
            self.categories.get_or_insert_with(Box::default).merge(theirs);
        }
        if let Some(theirs) = &o.explained {
            self.explained.get_or_insert_with(Default::default).merge(theirs);
        }
    }

    /// Adds GPU time added and removed, CPU time added and removed (in that order), of `job`
    /// (empty: of no one job), each sum saturating and the first past 128 bits named.
    fn add_device_times(&mut self, times: [u128; 4], job: &str) {
        let over = &mut self.overflow;
        for ((sum, n), figure) in [
            &mut self.gpu_added,
            &mut self.gpu_removed,
            &mut self.cpu_added,
            &mut self.cpu_removed,
        ]
        .into_iter()
        .zip(times)
        .zip([
            "GPU time added",
            "GPU time removed",
            "CPU time added",
            "CPU time removed",
        ]) {
            add_device_time(sum, n, over, figure, job);
        }
    }

    /// The comparison of the jobs this one counts and `part` does not, `part` being a
    /// comparison of some of the same jobs (the later jobs of a backtest): every count and sum
    /// taken away, each at least 0. The categorizer's counts cannot be told apart by job:
    /// `None` (the verdict reads none of them).
    pub fn less(&self, part: &Comparison) -> Comparison {
        let mut out = self.clone();
        for (mine, theirs) in [
            (&mut out.jobs, part.jobs),
            (&mut out.changed, part.changed),
            (&mut out.retries_only, part.retries_only),
            (&mut out.lost, part.lost),
            (&mut out.rescued, part.rescued),
            (&mut out.to_pending, part.to_pending),
            (&mut out.other, part.other),
            (&mut out.retries_added, part.retries_added),
            (&mut out.retries_removed, part.retries_removed),
            (&mut out.without_resources, part.without_resources),
            (&mut out.errors, part.errors),
        ] {
            *mine = mine.saturating_sub(theirs);
        }
        for (mine, theirs) in out.by_state.iter_mut().flatten().zip(part.by_state.iter().flatten()) {
            *mine = mine.saturating_sub(*theirs);
        }
        for (mine, theirs) in [
            (&mut out.gpu_added, part.gpu_added),
            (&mut out.gpu_removed, part.gpu_removed),
            (&mut out.cpu_added, part.cpu_added),
            (&mut out.cpu_removed, part.cpu_removed),
            (&mut out.delay_added.0, part.delay_added.0),
            (&mut out.delay_removed.0, part.delay_removed.0),
            (&mut out.compute_added.0, part.compute_added.0),
            (&mut out.compute_removed.0, part.compute_removed.0),
            (&mut out.baseline_compute.0, part.baseline_compute.0),
            (&mut out.candidate_compute.0, part.candidate_compute.0),
        ] {
            *mine = mine.saturating_sub(theirs);
        }
        out.categories = None;
        // Not a difference of sides: an overlap of part of the jobs is not the whole's less
        // another part's.
        out.contention = None;
        out.contention_sharded = false;
        out
    }

    /// Jobs Failed in the baseline and Pending in the candidate.
    pub fn failed_to_pending(&self) -> u64 {
        self.by_state[Final::Failed as usize][Final::Pending as usize]
    }

    /// `by_state` with the states named, those seen only, in a stable order (by baseline,
    /// then candidate state).
    pub fn transitions(&self) -> impl Iterator<Item = (Final, Final, u64)> + '_ {
        self.by_state.iter().enumerate().flat_map(|(f, row)| {
            row.iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(move |(t, &n)| (Final::ALL[f], Final::ALL[t], n))
        })
    }
}

/// What one side did with one recorded run (or that it never started it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Step {
    /// The side ends before this run.
    NotStarted,
    /// The run failed and the side retries it.
    Retried,
    /// The run's lease was returned (or the legacy path requeued it): another run follows
    /// without a retry.
    Requeued,
    Succeeded,
    /// The run failed and the side fails the job for good.
    Failed,
    Cancelled,
}

impl Step {
    pub const ALL: [Step; 6] = [
        Step::NotStarted,
        Step::Retried,
        Step::Requeued,
        Step::Succeeded,
        Step::Failed,
        Step::Cancelled,
    ];

    fn of(report: &JobReport, run: usize) -> Step {
        let Some(r) = report.runs.get(run) else {
            return Step::NotStarted;
        };
        match r.decision.as_ref().map(|d| d.kind) {
            None => Step::Succeeded,
            Some(DecisionKind::Retry) => Step::Retried,
            Some(DecisionKind::LeaseReturned | DecisionKind::LegacyRequeue) => Step::Requeued,
            Some(DecisionKind::Cancelled) => Step::Cancelled,
            Some(_) => Step::Failed,
        }
    }
}

/// One recorded run, and what each side did with it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunStep {
    pub run: usize,
    pub outcome: Outcome,
    /// The failure class of a failed run.
    pub class: Option<FailureClass>,
    pub baseline: Step,
    pub candidate: Step,
}

/// A changed job's runs under both sides, for a timeline: every recorded run when there
/// are at most [`MAX_STEPS`], else the first and the last ones with the count left out
/// between them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Steps {
    pub runs: Vec<RunStep>,
    /// `(i, n)`: `n` runs are left out before `runs[i]`.
    pub gap: Option<(usize, usize)>,
}

/// Runs a timeline shows at most (the first 40 and the last 20 of a longer history).
pub const MAX_STEPS: usize = 60;

impl Steps {
    pub fn new(history: &FailureHistory, baseline: &JobReport, candidate: &JobReport) -> Steps {
        let n = history.runs.len();
        let step = |k: usize| {
            let run = &history.runs[k];
            RunStep {
                run: k,
                outcome: run.outcome,
                class: (run.outcome == Outcome::Failed).then(|| class_of(run)),
                baseline: Step::of(baseline, k),
                candidate: Step::of(candidate, k),
            }
        };
        if n <= MAX_STEPS {
            return Steps {
                runs: (0..n).map(step).collect(),
                gap: None,
            };
        }
        let (head, tail) = (MAX_STEPS * 2 / 3, MAX_STEPS / 3);
        Steps {
            runs: (0..head).chain(n - tail..n).map(step).collect(),
            gap: Some((head, n - head - tail)),
        }
    }
}

/// Changed jobs by transition, for one failure class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassChanges {
    pub rescued: u64,
    pub lost: u64,
    pub to_pending: u64,
    pub other: u64,
    pub retries_only: u64,
    /// Of `to_pending`: Failed in the baseline (what `expectedRescued` sums over).
    pub failed_to_pending: u64,
    /// Jobs Pending at the end (a plain replay's, or the candidate's): whose estimate is asked.
    pub pending: u64,
}

impl ClassChanges {
    fn merge(&mut self, o: &ClassChanges) {
        self.rescued += o.rescued;
        self.lost += o.lost;
        self.to_pending += o.to_pending;
        self.other += o.other;
        self.retries_only += o.retries_only;
        self.failed_to_pending += o.failed_to_pending;
        self.pending += o.pending;
    }
}

/// Counts by job class (its last recorded failed run's; `None`: no failed run), the
/// [`MAX_CLASSES`] smallest classes, the rest together: the same whatever the order jobs
/// are counted in.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ByClass {
    rows: Smallest<Option<FailureClass>, ClassChanges, MAX_CLASSES>,
    /// The classes past the cap, together.
    pub rest: ClassChanges,
}

impl ByClass {
    fn row(&mut self, class: &Option<FailureClass>) -> &mut ClassChanges {
        let rest = &mut self.rest;
        match self.rows.get_or_make(class, |dropped| rest.merge(&dropped)) {
            Some(row) => row,
            None => rest,
        }
    }

    /// Adds the counts of other jobs.
    pub fn merge(&mut self, other: &ByClass) {
        for (class, counts) in other.rows.iter() {
            self.row(class).merge(counts);
        }
        self.rest.merge(&other.rest);
    }

    /// A changed job of `class`.
    pub fn add_change(&mut self, class: &Option<FailureClass>, d: &JobDiff) {
        let row = self.row(class);
        match d.transition() {
            None => row.retries_only += 1,
            Some(Transition::Rescued) => row.rescued += 1,
            Some(Transition::Lost) => row.lost += 1,
            Some(Transition::ToPending) => {
                row.to_pending += 1;
                if d.baseline.final_state == Final::Failed {
                    row.failed_to_pending += 1;
                }
            }
            Some(Transition::Other) => row.other += 1,
        }
        if d.candidate.final_state == Final::Pending {
            row.pending += 1;
        }
    }

    /// A job Pending at the end of a plain replay.
    pub fn add_pending(&mut self, class: &Option<FailureClass>) {
        self.row(class).pending += 1;
    }

    /// Every class, sorted (jobs without a failed run first).
    pub fn rows(&self) -> Vec<(Option<&FailureClass>, ClassChanges)> {
        self.rows.iter().map(|(c, n)| (c.as_ref(), *n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The learned jobs' comparison is the whole history's less the later jobs': counts taken
    /// away, never below 0.
    #[test]
    fn less_takes_the_later_jobs_away() {
        let mut whole = Comparison {
            jobs: 10,
            changed: 4,
            lost: 2,
            rescued: 1,
            retries_added: 5,
            gpu_added: 7,
            ..Comparison::default()
        };
        whole.by_state[Final::Succeeded as usize][Final::Failed as usize] = 2;
        let mut later = Comparison {
            jobs: 3,
            changed: 1,
            lost: 1,
            rescued: 2,
            retries_added: 1,
            gpu_added: 3,
            ..Comparison::default()
        };
        later.by_state[Final::Succeeded as usize][Final::Failed as usize] = 1;
        let learned = whole.less(&later);
        assert_eq!(
            (
                learned.jobs,
                learned.changed,
                learned.lost,
                learned.rescued,
                learned.retries_added,
                learned.gpu_added
            ),
            (7, 3, 1, 0, 4, 4)
        );
        assert_eq!(learned.by_state[Final::Succeeded as usize][Final::Failed as usize], 1);
        // Every sum, not only what the verdict reads today.
        whole.compute_added = TotalDuration(90);
        whole.retries_only = 2;
        later.compute_added = TotalDuration(30);
        later.retries_only = 3;
        let learned = whole.less(&later);
        assert_eq!((learned.compute_added, learned.retries_only), (TotalDuration(60), 0));
    }
    use crate::engine::simulator::Simulator;
    use crate::engine::Settings;
    use crate::model::test_policies;

    fn sim(limit: u32) -> Simulator {
        let yaml = format!(
            "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {{name: p}}\nspec:\n  retryLimit: {limit}\n  rules:\n    - {{action: Retry, onConditions: [Preempted]}}\n"
        );
        Simulator::new(test_policies(&yaml), Vec::new(), None).unwrap()
    }

    /// `n` preempted runs, then a returned lease and a success when `ends`.
    fn history(n: usize, ends: bool) -> FailureHistory {
        let mut runs: Vec<crate::model::failure_history::Run> = (0..n)
            .map(|_| crate::model::failure_history::Run {
                conditions: vec![crate::model::policy::Condition::Preempted],
                ..Default::default()
            })
            .collect();
        if ends {
            for outcome in [Outcome::LeaseReturned, Outcome::Succeeded] {
                runs.push(crate::model::failure_history::Run {
                    outcome,
                    ..Default::default()
                });
            }
        }
        FailureHistory {
            runs,
            ..FailureHistory::default()
        }
    }

    fn steps(h: &FailureHistory, old: u32, new: u32) -> Steps {
        let settings = Settings::default();
        let (b, c) = (
            sim(old).simulate(h, &settings).unwrap(),
            sim(new).simulate(h, &settings).unwrap(),
        );
        Steps::new(h, &b, &c)
    }

    #[test]
    fn a_timeline_says_what_each_side_does_with_each_run() {
        // Old: one retry, so run 1 fails the job; new: five, through to the success.
        let s = steps(&history(3, true), 1, 5);
        let sides: Vec<(Step, Step)> = s.runs.iter().map(|r| (r.baseline, r.candidate)).collect();
        use Step::*;
        assert_eq!(
            sides,
            [
                (Retried, Retried),
                (Failed, Retried),
                (NotStarted, Retried),
                (NotStarted, Requeued),
                (NotStarted, Succeeded)
            ]
        );
        let preempted = Some(FailureClass::Condition(crate::model::policy::Condition::Preempted));
        assert_eq!(s.runs[0].class, preempted);
        assert_eq!((s.runs[3].outcome, &s.runs[3].class), (Outcome::LeaseReturned, &None));
        assert_eq!(s.gap, None);
    }

    #[test]
    fn a_long_timeline_keeps_its_first_40_and_last_20_runs() {
        let s = steps(&history(100, false), 1, 200);
        assert_eq!(s.runs.len(), MAX_STEPS);
        assert_eq!(s.gap, Some((40, 40)));
        let at: Vec<usize> = s.runs.iter().map(|r| r.run).collect();
        assert_eq!(&at[38..42], [38, 39, 80, 81]);
        assert_eq!(at.last(), Some(&99));
        // The candidate stops at the global limit (20 retries): its run 20 fails the job.
        let at_run = |k: usize| s.runs.iter().find(|r| r.run == k).unwrap();
        assert_eq!(
            (at_run(1).baseline, at_run(19).candidate, at_run(20).candidate),
            (Step::Failed, Step::Retried, Step::Failed)
        );
        assert_eq!(at_run(99).candidate, Step::NotStarted);
    }
}
