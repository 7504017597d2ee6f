//! The verdict on a proposal (docs/suggest.md "The verdict"): whether to adopt it, keep today's
//! policy, or not adopt it, with the reasons, from the comparisons of the proposal against
//! today's policy.
//!
//! Owns: the rule that decides, and the words of each reason. Must not: replay, count jobs
//! (the comparisons are handed over) or format a whole output.

use crate::diag::named;
use crate::engine::job_report::plural;
use crate::replay::compare::{hours, Comparison};
use crate::replay::explained::{Explained, MaxContradictions};
use crate::suggest::queues::QueueCounts;
use crate::suggest::stats::CollidedCost;

/// The next step a reject for a changed categorizer's lost jobs names.
pub const KEEP_CATEGORIZER: &str =
    "hint: propose with --keep-categorizer to keep today's categories as they are (new ones only for failures none of them takes)";

/// At most this many job ids are named in a reason.
pub const NAMED: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A change worth making.
    Adopt,
    /// Nothing that matters changes: keep today's policy.
    Keep,
    /// Do not adopt it: it loses jobs, kills falsely, or costs more for nothing.
    Reject,
}

impl Decision {
    /// As json and yaml write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Adopt => "adopt",
            Decision::Keep => "keep",
            Decision::Reject => "reject",
        }
    }

    /// What it means, in plain words: said beside the decision in every format.
    pub fn gloss(self) -> &'static str {
        match self {
            Decision::Adopt => "a change worth making",
            Decision::Keep => "keep today's policy",
            Decision::Reject => "do not adopt",
        }
    }

    /// The decision and its gloss (`reject (do not adopt)`), as every format says it.
    pub fn words(self) -> String {
        format!("{} ({})", self.as_str(), self.gloss())
    }
}

/// One comparison of the proposal against today's policy, and the jobs it names.
#[derive(Debug, Clone, Copy)]
pub struct Judged<'a> {
    pub comparison: &'a Comparison,
    /// The first jobs it lost (Succeeded today, Failed under the proposal).
    pub lost_jobs: &'a [String],
    /// Whether today's policy explains the whole record, and how many jobs may contradict it
    /// (`--max-contradictions`): past that, nothing measured against it holds.
    pub explained: Option<(&'a Explained, MaxContradictions)>,
    /// When the proposal changes the cluster's categorizer: every queue compared.
    pub queues: Option<Queues<'a>>,
}

/// Every queue a changed categorizer reaches (docs/suggest.md "Every queue the change
/// reaches").
#[derive(Debug, Clone, Copy)]
pub struct Queues<'a> {
    /// Each queue of the history, compared under its own policies.
    pub counts: &'a [QueueCounts],
    /// Queues today's documents name whose jobs the history does not hold.
    pub unseen: &'a [String],
    /// What the executor does otherwise for every queue (`pods of category X are deleted…`).
    pub cluster_wide: &'a [String],
}

/// The backtest's side (`--backtest-at`): the later jobs.
#[derive(Debug, Clone, Copy)]
pub struct Later<'a> {
    pub false_kills: u64,
    pub false_kill_jobs: &'a [String],
    pub gpu_hours_saved: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub decision: Decision,
    pub reasons: Vec<String>,
}

impl Judgement {
    /// `DECISION (GLOSS): REASON; REASON`, as every format says it (the table's, markdown's
    /// and html's `Verdict:` line, `-o policy`'s head, stderr).
    pub fn line(&self) -> String {
        format!("{}: {}", self.decision.words(), self.reasons.join("; "))
    }
}

/// Observed hours the proposal adds (negative: saves), and what they count: GPU-hours when
/// the jobs compared ask for GPUs, else CPU-hours when they ask for CPUs, else run hours
/// (a history without resources: the run time itself, never a `+0.0` of hours no job asks
/// for).
pub fn observed_hours(c: &Comparison) -> (f64, &'static str) {
    let gpu = c.recorded.gpu > 0 || c.gpu_added > 0 || c.gpu_removed > 0;
    let cpu = c.recorded.cpu > 0 || c.cpu_added > 0 || c.cpu_removed > 0;
    if gpu {
        (hours(c.gpu_added) - hours(c.gpu_removed), "GPU-hours")
    } else if cpu {
        (hours(c.cpu_added) - hours(c.cpu_removed), "CPU-hours")
    } else {
        let run = |d: crate::model::TotalDuration| d.as_secs_f64() / 3600.0;
        (run(c.compute_added) - run(c.compute_removed), "run hours")
    }
}

/// Jobs whose final state changes.
fn changed_outcomes(c: &Comparison) -> u64 {
    c.rescued + c.lost + c.to_pending + c.other
}

/// The verdict on `learned` (the learned history: with `--backtest-at`, the jobs before it)
/// and, with `--backtest-at`, `later`:
/// - `reject` when it loses a job, or costs more observed device-hours while no job changes
///   outcome, or on the later jobs kills falsely or saves negative GPU-hours;
/// - `keep` when no job changes outcome and no retry is added or removed;
/// - `adopt` otherwise, saying when its gain is Pending jobs alone (an estimate).
pub fn judge(learned: Judged<'_>, later: Option<Later<'_>>) -> Judgement {
    judge_letting_run(learned, later, LetRun::default())
}

/// Retries the record shows collided with the pods the executor kept that the proposal's
/// categorizer lets run (their pods deleted), and the most they may cost: each retry the
/// proposal grants such a job, at the longest run the job had in the record, times its
/// request (their outcome is not in the record).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LetRun {
    pub retries: u64,
    pub most: CollidedCost,
}

impl LetRun {
    /// `up to +150.0 GPU-hours`: in GPU-hours when the jobs ask for GPUs, else CPU-hours,
    /// else run hours, as [`observed_hours`] counts.
    pub fn most_words(&self) -> String {
        let (h, unit) = if self.most.gpu > 0 {
            (hours(self.most.gpu), "GPU-hours")
        } else if self.most.cpu > 0 {
            (hours(self.most.cpu), "CPU-hours")
        } else {
            (self.most.run as f64 / 1e9 / 3600.0, "run hours")
        };
        format!("up to {h:+.1} {unit}, outcome not in the record")
    }
}

/// [`judge`], where `let_run`'s retries the record shows collided are ones the proposal's
/// categorizer lets run: a change worth making that the record cannot show as an outcome, said
/// with the most they may cost.
pub fn judge_letting_run(learned: Judged<'_>, later: Option<Later<'_>>, let_run: LetRun) -> Judgement {
    let unblocked = let_run.retries;
    let c = learned.comparison;
    let mut reject = Vec::new();
    if let Some((e, _)) = learned.explained.filter(|(e, max)| max.exceeded(e)) {
        reject.push(e.unexplained_words());
    }
    match learned.queues {
        Some(q) => {
            if !q.unseen.is_empty() {
                let (queues, verb) = match q.unseen.len() {
                    1 => ("queue", "uses"),
                    _ => ("queues", "use"),
                };
                reject.push(format!(
                    "the categorizer is the cluster's: {queues} {} {verb} categories it changes and the history holds none of their jobs (export the week without --queue: `retryctl history --lookout-db … --from … --to …`)",
                    q.unseen.join(", ")
                ));
            }
            for lost in q.counts.iter().filter(|q| q.lost > 0) {
                reject.push(format!(
                    "loses {} of queue {} today's policy saves{}",
                    plural(lost.lost, "job", "jobs"),
                    lost.queue,
                    named(&lost.lost_jobs, lost.lost, NAMED)
                ));
            }
            // The way past a split the cluster's categorizer cannot take: the policy alone.
            if q.counts.iter().any(|q| q.lost > 0) {
                reject.push(KEEP_CATEGORIZER.to_string());
            }
        }
        None if c.lost > 0 => reject.push(format!(
            "loses {} today's policy saves{}",
            plural(c.lost, "job", "jobs"),
            named(learned.lost_jobs, c.lost, NAMED)
        )),
        None => {}
    }
    let (more, unit) = observed_hours(c);
    if more > 0.0 && changed_outcomes(c) == 0 {
        reject.push(format!("costs {more:+.1} observed {unit} and changes no job's outcome"));
    }
    if let Some(l) = later {
        if l.false_kills > 0 {
            reject.push(format!(
                "kills {} falsely on the later jobs (Succeeded today){}",
                plural(l.false_kills, "job", "jobs"),
                named(l.false_kill_jobs, l.false_kills, NAMED)
            ));
        }
        if l.gpu_hours_saved < 0.0 {
            reject.push(format!("saves {:.1} GPU-hours on the later jobs", l.gpu_hours_saved));
        }
    }
    if !reject.is_empty() {
        return Judgement {
            decision: Decision::Reject,
            reasons: reject,
        };
    }
    if changed_outcomes(c) == 0 && c.retries_added == 0 && c.retries_removed == 0 && unblocked == 0 {
        return Judgement {
            decision: Decision::Keep,
            reasons: vec![
                "the proposal changes nothing that matters: no job changes outcome, no retry is added or removed"
                    .into(),
            ],
        };
    }
    let pending = c.failed_to_pending();
    let mut reasons = Vec::new();
    if c.rescued == 0 && pending > 0 && c.retries_removed == 0 {
        reasons.push(format!(
            "the gain is estimated: {} Pending",
            plural(pending, "job", "jobs")
        ));
    }
    reasons.push(format!(
        "{} rescued, 0 lost; retries +{} −{}; {} {:+.1}",
        c.rescued, c.retries_added, c.retries_removed, unit, more
    ));
    if unblocked > 0 {
        reasons.push(format!(
            "lets {} that collided in the record run (the pods they collided with are deleted), {}",
            plural(unblocked, "retry", "retries"),
            let_run.most_words()
        ));
    }
    // A cluster-wide change is adopted knowingly.
    reasons.extend(learned.queues.iter().flat_map(|q| q.cluster_wide.iter().cloned()));
    Judgement {
        decision: Decision::Adopt,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u128 = 3_600_000_000_000 * 1000;

    fn judged(c: &Comparison) -> Judged<'_> {
        Judged {
            comparison: c,
            lost_jobs: &[],
            explained: None,
            queues: None,
        }
    }

    /// Retries today's collide with the kept pods, and the proposal's categorizer deletes
    /// them: a change worth making, though no job changes outcome in the record.
    #[test]
    fn retries_let_run_are_a_change() {
        let c = Comparison::default();
        let let_run = LetRun {
            retries: 100,
            most: CollidedCost {
                gpu: 150 * H,
                cpu: 0,
                run: 0,
            },
        };
        let j = judge_letting_run(judged(&c), None, let_run);
        assert_eq!(j.decision, Decision::Adopt);
        assert_eq!(
            j.reasons[1],
            "lets 100 retries that collided in the record run (the pods they collided with are deleted), up to +150.0 GPU-hours, outcome not in the record"
        );
        assert_eq!(judge(judged(&c), None).decision, Decision::Keep);
    }

    #[test]
    fn hours_name_what_the_jobs_ask_for() {
        let ns_milli = |h: u128, devices: u128| h * 3_600 * 1_000_000_000 * devices * 1000;
        let mut c = Comparison {
            cpu_added: ns_milli(2, 4),
            compute_added: crate::model::TotalDuration(2 * 3_600 * 1_000_000_000),
            ..Comparison::default()
        };
        // CPU jobs: CPU-hours.
        c.recorded.cpu = ns_milli(10, 4);
        assert_eq!(observed_hours(&c), (8.0, "CPU-hours"));
        // Jobs that ask for GPUs are judged in GPU-hours, even when no GPU time changes.
        c.recorded.gpu = ns_milli(10, 1);
        assert_eq!(observed_hours(&c), (0.0, "GPU-hours"));
        // A history without resources: the run time itself.
        let c = Comparison {
            compute_added: crate::model::TotalDuration(3 * 3_600 * 1_000_000_000),
            compute_removed: crate::model::TotalDuration(3_600 * 1_000_000_000),
            ..Comparison::default()
        };
        assert_eq!(observed_hours(&c), (2.0, "run hours"));
    }

    #[test]
    fn a_lost_job_rejects_and_is_named() {
        let c = Comparison {
            lost: 1,
            rescued: 4,
            retries_added: 3,
            ..Comparison::default()
        };
        let lost = ["ml-05".to_string()];
        let v = judge(
            Judged {
                comparison: &c,
                lost_jobs: &lost,
                explained: None,
                queues: None,
            },
            None,
        );
        assert_eq!(v.decision, Decision::Reject);
        assert_eq!(
            v.line(),
            "reject (do not adopt): loses 1 job today's policy saves (`ml-05`)"
        );
    }

    /// A baseline the record contradicts past `--max-contradictions` rejects whatever the
    /// proposal gains: nothing measured against it holds.
    #[test]
    fn an_unexplained_record_rejects() {
        let c = Comparison {
            rescued: 4,
            retries_removed: 30,
            ..Comparison::default()
        };
        let e = Explained {
            jobs: 100,
            contradicted: 2,
            first: Vec::new(),
        };
        let judged = |max| Judged {
            comparison: &c,
            lost_jobs: &[],
            explained: Some((&e, max)),
            queues: None,
        };
        assert_eq!(
            judge(judged(MaxContradictions::Percent(1.0)), None).line(),
            "reject (do not adopt): the baseline does not explain the record: 2 jobs contradict it; is it what the cluster ran?"
        );
        assert_eq!(
            judge(judged(MaxContradictions::Jobs(2)), None).decision,
            Decision::Adopt
        );
    }

    /// A changed categorizer: a lost job of another queue rejects, naming the queue; a queue
    /// of today's documents the history does not hold rejects; a cluster-wide change is
    /// among an adopt's reasons.
    #[test]
    fn every_queue_a_changed_categorizer_reaches() {
        let c = Comparison {
            lost: 2,
            rescued: 4,
            changed: 6,
            ..Comparison::default()
        };
        let counts = [
            QueueCounts {
                queue: "batch".into(),
                jobs: 10,
                changed: 2,
                lost: 2,
                lost_jobs: vec!["b-1".into(), "b-2".into()],
                ..QueueCounts::default()
            },
            QueueCounts {
                queue: "ml".into(),
                jobs: 10,
                changed: 4,
                rescued: 4,
                ..QueueCounts::default()
            },
        ];
        let unseen = ["eval".to_string()];
        let v = judge(
            Judged {
                comparison: &c,
                lost_jobs: &[],
                explained: None,
                queues: Some(Queues {
                    counts: &counts,
                    unseen: &unseen,
                    cluster_wide: &[],
                }),
            },
            None,
        );
        assert_eq!(
            v.line(),
            "reject (do not adopt): the categorizer is the cluster's: queue eval uses categories it changes and the history holds none of their jobs (export the week without --queue: `retryctl history --lookout-db … --from … --to …`); loses 2 jobs of queue batch today's policy saves (`b-1`, `b-2`); hint: propose with --keep-categorizer to keep today's categories as they are (new ones only for failures none of them takes)"
        );
        let fine = Comparison {
            rescued: 4,
            changed: 4,
            ..Comparison::default()
        };
        let wide = ["pods of category `gpu` are deleted on failure, for every queue (were kept)".to_string()];
        let v = judge(
            Judged {
                comparison: &fine,
                lost_jobs: &[],
                explained: None,
                queues: Some(Queues {
                    counts: &counts[1..],
                    unseen: &[],
                    cluster_wide: &wide,
                }),
            },
            None,
        );
        assert_eq!(
            v.line(),
            "adopt (a change worth making): 4 rescued, 0 lost; retries +0 −0; run hours +0.0; pods of category `gpu` are deleted on failure, for every queue (were kept)"
        );
    }

    #[test]
    fn more_hours_for_no_outcome_rejects() {
        let c = Comparison {
            retries_added: 10,
            gpu_added: 2 * H,
            ..Comparison::default()
        };
        assert_eq!(
            judge(judged(&c), None).line(),
            "reject (do not adopt): costs +2.0 observed GPU-hours and changes no job's outcome"
        );
    }

    #[test]
    fn the_backtest_rejects_false_kills_and_negative_savings() {
        let c = Comparison {
            rescued: 2,
            ..Comparison::default()
        };
        let kills = ["a".to_string(), "b".to_string()];
        let v = judge(
            judged(&c),
            Some(Later {
                false_kills: 7,
                false_kill_jobs: &kills,
                gpu_hours_saved: -16.7,
            }),
        );
        assert_eq!(
            v.reasons,
            [
                "kills 7 jobs falsely on the later jobs (Succeeded today) (`a`, `b` and 5 more)",
                "saves -16.7 GPU-hours on the later jobs"
            ]
        );
    }

    #[test]
    fn nothing_that_matters_keeps() {
        let c = Comparison {
            jobs: 17,
            changed: 2,
            ..Comparison::default()
        };
        assert_eq!(judge(judged(&c), None).decision, Decision::Keep);
    }

    #[test]
    fn a_gain_in_pending_jobs_alone_is_said_to_be_estimated() {
        let mut c = Comparison {
            to_pending: 65,
            retries_added: 130,
            gpu_added: H,
            ..Comparison::default()
        };
        // Failed → Pending, 65 jobs.
        c.by_state[crate::model::failure_history::Final::Failed as usize]
            [crate::model::failure_history::Final::Pending as usize] = 65;
        let v = judge(judged(&c), None);
        assert_eq!(v.decision, Decision::Adopt);
        assert_eq!(
            v.reasons,
            [
                "the gain is estimated: 65 jobs Pending",
                "0 rescued, 0 lost; retries +130 −0; GPU-hours +1.0"
            ]
        );
    }

    #[test]
    fn fewer_futile_retries_adopt() {
        let c = Comparison {
            retries_removed: 480,
            cpu_removed: 6 * H,
            changed: 100,
            ..Comparison::default()
        };
        assert_eq!(
            judge(judged(&c), None).line(),
            "adopt (a change worth making): 0 rescued, 0 lost; retries +0 −480; CPU-hours -6.0"
        );
    }
}
