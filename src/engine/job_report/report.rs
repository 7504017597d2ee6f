//! What a replay reports (docs/simulate.md): each run ([`RunRecord`], its categories), the
//! job's end ([`JobStatus`]), the whole [`JobReport`], the engine a Pending job leaves
//! ([`PendingEngine`]) and how much of it is written in words ([`Detail`]).
//!
//! Owns: those types and the report's own sentences. Must not: replay or decide anything
//! (that is `record` and `quiet`); every part of the replay imports it.

use std::sync::Arc;

use crate::engine::decision::{Decision, DecisionKind};
use crate::engine::inputs::EngineKind;
use crate::engine::job_state::JobState;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{Final, Outcome, Resources, Timestamp};

use super::words::{format_instant, plural, rule_ref_label};

/// One run as replayed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunRecord {
    pub index: usize,
    pub pod_name: String,
    pub node: Option<String>,
    /// Nanoseconds since submission.
    pub started_at: u64,
    pub ended_at: u64,
    pub outcome: Outcome,
    /// The failure in words (`Preempted`, `container main OOMKilled (exit 137)`).
    pub failure: String,
    /// `None` for a succeeded run (nothing to decide).
    pub decision: Option<Decision>,
    /// The decision in words (`retry 2 of 3 under infra/0 (attempt 3 of 4) …`).
    pub reason: String,
    /// With the executor's categorizer only (`simulate --categorizer`): the category the
    /// engine saw and the recorded one; `None` otherwise, so that a record without a
    /// categorizer is what it always was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Box<RunCategories>>,
}

/// A run's category as its engine saw it (its classification), and the recorded one when
/// the two differ (docs/categorizer.md). `None` stands for no category.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunCategories {
    pub category: Option<String>,
    pub subcategory: Option<String>,
    /// `Some` only when it differs from the classification.
    pub recorded: Option<(Option<String>, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JobStatus {
    Succeeded {
        run: usize,
    },
    Failed {
        run: usize,
        kind: DecisionKind,
        reason: String,
    },
    Cancelled {
        run: usize,
    },
    /// The last decision was a retry and the history ends there.
    Pending {
        retry_after: u64,
    },
}

impl JobStatus {
    pub fn final_state(&self) -> Final {
        match self {
            JobStatus::Succeeded { .. } => Final::Succeeded,
            JobStatus::Failed { .. } => Final::Failed,
            JobStatus::Cancelled { .. } => Final::Cancelled,
            JobStatus::Pending { .. } => Final::Pending,
        }
    }
}

/// A whole job replayed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobReport {
    pub job_id: String,
    pub queue: Option<String>,
    /// The effective policies' names, in order; shared by the reports of every job that
    /// got the same list (a bulk replay would otherwise copy them into each report).
    pub policies: Arc<[String]>,
    pub engine: EngineKind,
    /// Upstream: the queue's policies after the first, which that engine never reads.
    pub ignored_policies: Vec<String>,
    /// The limit at submission (runs may lower it later, see `Decision::global_max_retries`).
    pub global_max_retries: u32,
    pub enabled: bool,
    pub submitted_at: Option<Timestamp>,
    pub runs: Vec<RunRecord>,
    pub status: JobStatus,
    pub retries: u32,
    /// Delay added by granted retries, summed.
    pub total_delay: GoDuration,
    pub memory: Option<f64>,
    /// The job's requests (`job.resources`), for its cost in GPU- and CPU-hours.
    pub resources: Option<Resources>,
    pub expectation_failures: Vec<String>,
    pub contradictions: Vec<String>,
    /// A Pending job's engine as the record leaves it, for the runs it has left
    /// ([`JobReport::take_pending`]); `None` for a job that ended.
    #[serde(skip)]
    pub pending: Option<Box<PendingEngine>>,
}

/// What decides a Pending job's next runs, as its replay leaves it: the engine's counter
/// state, the global limit as the last reload left it, and when the next run may start.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingEngine {
    pub(super) state: JobState,
    pub(super) global_max_retries: u32,
    pub(super) eligible_at: u64,
}

impl JobReport {
    /// The Pending job's engine state (once: the runs-left walk moves it on).
    pub fn take_pending(&mut self) -> Option<Box<PendingEngine>> {
        self.pending.take()
    }

    pub fn outcome_text(&self) -> String {
        match &self.status {
            JobStatus::Succeeded { run } => format!(
                "Succeeded at run {run} after {}",
                plural(u64::from(self.retries), "retry", "retries")
            ),
            JobStatus::Failed { run, reason, .. } => format!("Failed permanently at run {run}: {reason}"),
            JobStatus::Cancelled { run } => format!("Cancelled at run {run}"),
            JobStatus::Pending { retry_after } => format!(
                "Pending: retry eligible at {} (the history ends here)",
                format_instant(*retry_after, self.submitted_at)
            ),
        }
    }

    /// `policy/rule` of a decision, with the policy's name.
    pub fn rule_label(&self, d: &Decision) -> Option<String> {
        rule_ref_label(&self.policies, d)
    }
}

/// How much of a [`JobReport`] a replay writes out in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Every per-run text (reason, failure, node, pod name, signal, next pod name): what
    /// the per-job outputs print.
    #[default]
    Full,
    /// Only what the summary counts, the expectation checks and the contradiction checks
    /// read: the per-run texts are left empty, except on a run with an `expect` (its
    /// messages quote them) and the final failure's reason when the job has an `expect`
    /// (the `final` message quotes it), so that every message is the same as under
    /// [`Detail::Full`]. For outputs that print only the summary (bulk `-o table`): the
    /// texts cost more than the decisions.
    Summary,
    /// Only the outcome: [`Detail::Summary`] without the contradiction and expectation
    /// checks (no message at all), for a replay that counts sides and prints no job
    /// (`simulate --baseline`, whose jobs' expectations are not checked, the runs a side
    /// has left, `tune`'s candidates). The decisions are the same.
    Outcome,
}
