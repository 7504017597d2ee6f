//! Lookout's `job_run.debug` → a run's `podError` and `events`. Pure: text in, fields out.
//!
//! Today's executor sends, with a failed (or returned, preempted, cancelled) pod, a JSON
//! document describing it; Lookout stores it zlib-compressed in `job_run.debug`. Its shape
//! (`schemaVersion` 1):
//!
//! ```json
//! {"schemaVersion": 1, "trigger": "podFailed",
//!  "pod": {"phase": "Failed", "reason": "UnexpectedAdmissionError",
//!          "initContainers": [{"name": "init", "state": "terminated", "exitCode": 0}],
//!          "containers": [{"name": "main", "state": "waiting", "reason": "ErrImagePull"}],
//!          "events": [{"type": "Warning", "reason": "Failed", "from": "kubelet",
//!                      "message": "Failed to pull image …", "timestamp": "…"}]},
//!  "node": {"name": "node-1", …}}
//! ```
//!
//! What is read: `pod.events` (oldest first, as the executor writes them) → `events`; the
//! pod's `reason`, else the first waiting container's `reason` (init containers first: a
//! waiting init container holds the others back) → `podError`; the init containers' names,
//! so that a container named in the composed error text is known to be one. The node's events
//! are not the pod's: a categorizer's `onPodEvents` sees the pod's only.
//!
//! Older executors wrote free text there (rendered events), and a document may be cut by the
//! 64 KiB cap: anything that is not a JSON object with a numeric `schemaVersion` and a `pod`
//! object of the shape above is not the document, and [`read`] says `None`.

use serde::Deserialize;

use crate::model::failure_history::PodEvent;

/// What a run takes from its debug document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodDebug {
    pub pod_error: Option<String>,
    pub events: Vec<PodEvent>,
    /// The names of the pod's init containers.
    pub init_containers: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[allow(dead_code)] // required: it is what tells the document from other JSON
    schema_version: u32,
    pod: Pod,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Pod {
    reason: String,
    init_containers: Vec<ContainerInfo>,
    containers: Vec<ContainerInfo>,
    events: Vec<EventInfo>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ContainerInfo {
    name: String,
    state: String,
    reason: String,
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
    let waiting = pod
        .init_containers
        .iter()
        .chain(&pod.containers)
        .find(|c| c.state == "waiting" && !c.reason.is_empty())
        .map(|c| c.reason.clone());
    let pod_error = Some(pod.reason).filter(|r| !r.is_empty()).or(waiting);
    Some(PodDebug {
        pod_error,
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
                    pod_error: Some("UnexpectedAdmissionError".into()),
                    events: vec![
                        ev("Normal", "Scheduled", "Successfully assigned"),
                        ev("Warning", "UnexpectedAdmissionError", "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0"),
                    ],
                    init_containers: vec![],
                }),
            ),
            (
                "an image that cannot be pulled: the waiting container's reason, init first",
                r#"{"schemaVersion":1,"trigger":"podFailed","pod":{"phase":"Pending","initContainers":[{"name":"setup","state":"terminated","exitCode":0}],"containers":[{"name":"side","state":"running"},{"name":"main","state":"waiting","reason":"ErrImagePull"}]}}"#,
                Some(PodDebug {
                    pod_error: Some("ErrImagePull".into()),
                    events: vec![],
                    init_containers: vec!["setup".into()],
                }),
            ),
            (
                "terminated containers' reasons are not a pod error",
                r#"{"schemaVersion":1,"pod":{"containers":[{"name":"main","state":"terminated","exitCode":137,"reason":"OOMKilled"}]}}"#,
                Some(PodDebug::default()),
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
}
