//! Lookout's `job_run.debug` → a run's `events`, its pod-level conditions, and what tells a
//! failed-pod check from a failed submission. Pure: text in, fields out.
//!
//! Today's executor sends, with a failed (or returned, preempted, cancelled) pod, a JSON
//! document describing it (upstream `internal/executor/reporter/debug.go`); Lookout stores it
//! zlib-compressed in `job_run.debug`. Its shape (`schemaVersion` 1):
//!
//! ```json
//! {"schemaVersion": 1, "trigger": "podFailed",
//!  "pod": {"phase": "Failed", "reason": "Evicted",
//!          "initContainers": [{"name": "init", "state": "terminated", "exitCode": 0}],
//!          "containers": [{"name": "main", "state": "waiting", "reason": "ErrImagePull"}],
//!          "events": [{"type": "Warning", "reason": "Failed", "from": "kubelet",
//!                      "message": "Failed to pull image …", "timestamp": "…"}]},
//!  "node": {"name": "node-1", …}}
//! ```
//!
//! What is read: `pod.events` (oldest first, as the executor writes them) → `events`; the
//! pod's `reason` (`pod.Status.Reason`, which the categorizer's `onConditions: [Evicted]` and
//! `[DeadlineExceeded]` read); the `trigger` and the pod's `phase` (a `podFailed` document of
//! a `Failed` pod is the executor's own, never a failed submission's); the init containers'
//! names, so that a container named in the composed error text is known to be one. The
//! node's events are not the pod's: a categorizer's `onPodEvents` sees the pod's only. A
//! waiting container's reason (`ErrImagePull`) is not the pod's error text: the executor's
//! categorizer never sees it alone (docs/categorizer.md "Which matchers see what").
//!
//! Older executors wrote free text there (rendered events), and a document may be cut by the
//! 64 KiB cap: anything that is not a JSON object with a numeric `schemaVersion` and a `pod`
//! object of the shape above is not the document, and [`read`] says `None`.

use serde::Deserialize;

use crate::model::failure_history::PodEvent;

/// What a run takes from its debug document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodDebug {
    /// `pod.reason` (`Evicted`, `DeadlineExceeded`, `UnexpectedAdmissionError`), empty when
    /// the pod has none.
    pub reason: String,
    /// `trigger` (`podFailed`, `stuckTerminating`, …) and `pod.phase`, as written.
    pub trigger: String,
    pub phase: String,
    pub events: Vec<PodEvent>,
    /// The names of the pod's init containers.
    pub init_containers: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[allow(dead_code)] // required: it is what tells the document from other JSON
    schema_version: u32,
    #[serde(default)]
    trigger: String,
    pod: Pod,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Pod {
    phase: String,
    reason: String,
    init_containers: Vec<ContainerInfo>,
    containers: Vec<ContainerInfo>,
    events: Vec<EventInfo>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ContainerInfo {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct EventInfo {
    #[serde(rename = "type")]
    event_type: String,
    reason: String,
    message: String,
}

/// The fields of a debug text, or `None` when it is not the executor's structured document.
pub fn read(text: &str) -> Option<PodDebug> {
    let doc: Document = serde_json::from_str(text).ok()?;
    let pod = doc.pod;
    Some(PodDebug {
        reason: pod.reason,
        trigger: doc.trigger,
        phase: pod.phase,
        events: pod
            .events
            .into_iter()
            .map(|e| PodEvent {
                event_type: e.event_type,
                reason: e.reason,
                message: e.message,
            })
            .collect(),
        init_containers: pod.init_containers.into_iter().map(|c| c.name).collect(),
    })
}

impl PodDebug {
    /// A `podFailed` document of a `Failed` pod: the executor described a failed pod it
    /// handled (`reporter.TriggerPodFailed`), which a failed submission never sends.
    pub fn failed_pod(&self) -> bool {
        self.trigger == "podFailed" && self.phase == "Failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: &str, r: &str, m: &str) -> PodEvent {
        PodEvent {
            event_type: t.into(),
            reason: r.into(),
            message: m.into(),
        }
    }

    #[test]
    fn debug_texts_read_row_by_row() {
        let cases: Vec<(&str, &str, Option<PodDebug>)> = vec![
            (
                "a pod the kubelet refused, with its events",
                r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Failed","reason":"UnexpectedAdmissionError","events":[{"type":"Normal","reason":"Scheduled","from":"default-scheduler","message":"Successfully assigned"},{"type":"Warning","reason":"UnexpectedAdmissionError","from":"kubelet","message":"Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0","timestamp":"2026-11-16T10:00:00Z"}]},"node":{"name":"n1","events":[{"type":"Warning","reason":"NodeNotReady","message":"node's own"}]}}"#,
                Some(PodDebug {
                    reason: "UnexpectedAdmissionError".into(),
                    trigger: "podFailed".into(),
                    phase: "Failed".into(),
                    events: vec![
                        ev("Normal", "Scheduled", "Successfully assigned"),
                        ev("Warning", "UnexpectedAdmissionError", "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0"),
                    ],
                    init_containers: vec![],
                }),
            ),
            (
                "a pod stuck pending: a waiting container's reason is not read",
                r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Pending","initContainers":[{"name":"setup","state":"terminated","exitCode":0}],"containers":[{"name":"side","state":"running"},{"name":"main","state":"waiting","reason":"ErrImagePull"}]}}"#,
                Some(PodDebug {
                    trigger: "podFailed".into(),
                    phase: "Pending".into(),
                    init_containers: vec!["setup".into()],
                    ..PodDebug::default()
                }),
            ),
            (
                "an evicted pod",
                r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Failed","reason":"Evicted","containers":[{"name":"main","state":"terminated","exitCode":137,"reason":"Error"}]}}"#,
                Some(PodDebug {
                    reason: "Evicted".into(),
                    trigger: "podFailed".into(),
                    phase: "Failed".into(),
                    ..PodDebug::default()
                }),
            ),
            (
                "a later schema version is read for the fields it still has",
                r#"{"schemaVersion":2,"pod":{"events":[{"type":"Warning"}]},"extra":true}"#,
                Some(PodDebug {
                    events: vec![ev("Warning", "", "")],
                    ..PodDebug::default()
                }),
            ),
            ("an older executor's free text", "Events:\n  Warning  Failed  kubelet  Failed to pull image", None),
            ("JSON without a schema version", r#"{"pod":{"reason":"Evicted"}}"#, None),
            ("JSON without a pod", r#"{"schemaVersion":1}"#, None),
            ("a document cut by the cap", r#"{"schemaVersion":1,"pod":{"reason":"Evi… [truncated]"#, None),
            ("a field of the wrong type", r#"{"schemaVersion":1,"pod":{"events":"none"}}"#, None),
            ("empty", "", None),
        ];
        for (what, text, want) in cases {
            assert_eq!(read(text), want, "{what}");
        }
    }

    #[test]
    fn only_a_pod_failed_document_of_a_failed_pod_is_the_executors_own_failed_pod() {
        let doc = |trigger: &str, phase: &str| PodDebug {
            trigger: trigger.into(),
            phase: phase.into(),
            ..PodDebug::default()
        };
        assert!(doc("podFailed", "Failed").failed_pod());
        assert!(!doc("podFailed", "Pending").failed_pod());
        assert!(!doc("stuckTerminating", "Failed").failed_pod());
        assert!(!doc("", "").failed_pod());
    }
}
