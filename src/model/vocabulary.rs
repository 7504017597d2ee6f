//! The fixed words of the documents that several modules spell: the `apiVersion` strings and
//! the value names of the history's enumerations (a run's outcome, how the record ends a job, a
//! job's final state, the pod-level conditions, the decision kinds of docs/engines.md).
//!
//! Owns: those constants. A leaf: `document` (the envelope), `fields` (the field tables that
//! `explain` and `schema` read), `failure_history`, `scheduler` and `encode` take them from here,
//! so that the field tables import neither the decoders that use them nor the types whose names
//! they list. Must not: import anything.

pub const API_V1: &str = "armadaproject.io/v1";
pub const API_V1BETA1: &str = "armadaproject.io/v1beta1";
pub const API_VERSIONS: [&str; 2] = [API_V1, API_V1BETA1];

/// A run's `outcome`, in the order of `failure_history::Outcome`.
pub const OUTCOMES: [&str; 4] = ["failed", "succeeded", "leaseReturned", "cancelled"];

/// A run's `executorPath`, in the order of `failure_history::ExecutorPath`: which of the
/// executor's paths failed or returned the run, and so what its classifier was given
/// (docs/categorizer.md "Which matchers see what").
pub const EXECUTOR_PATHS: [&str; 4] = ["stuckPod", "failedPodCheck", "failedPod", "unclassified"];

/// `job.state`, in the order of `failure_history::JobEnd`: how the record ends the job, as
/// Lookout holds it (docs/lookout.md).
pub const JOB_ENDS: [&str; 3] = ["succeeded", "failed", "cancelled"];

/// `expect.final`, in the order of `failure_history::Final`.
pub const FINAL_STATES: [&str; 4] = ["Succeeded", "Failed", "Cancelled", "Pending"];

/// The decision kinds of docs/engines.md (`expect.decision`), in the order of
/// `engine::DecisionKind`.
pub const DECISION_KINDS: [&str; 12] = [
    "retry",
    "fail_rule",
    "fail_rule_limit",
    "fail_global_limit",
    "fail_default",
    "fail_fast",
    "legacy_fail",
    "legacy_requeue",
    "lease_returned",
    "cancelled",
    "fail_policy_limit",
    "preempted",
];

/// The pod-level conditions a run takes (`OOMKilled` is a container's `reason`).
pub const POD_CONDITIONS: [&str; 4] = ["Evicted", "Preempted", "DeadlineExceeded", "Unschedulable"];
