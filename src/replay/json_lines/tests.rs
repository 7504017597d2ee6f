//! The two decoders held together: the same history, or the strict decoder's error.

use super::*;
use crate::model::failure_history::PodEvent;

/// Both decoders, on lines the fast path accepts and lines it gives up on: the same
/// history, or the strict decoder's error.
#[test]
fn the_fast_path_agrees_with_the_strict_decoder() {
    let lines = [
        r#"{"job":{"id":"j","queue":"q","terminationGracePeriod":"30s","memory":"8Gi","submittedAt":"2026-01-01T00:00:00Z","annotations":{"a":"b"},"jobSet":"sweep-17"},"runs":[{"node":"n1","queuedFor":"5m","runFor":"2h","conditions":["Preempted"],"terminationConfirmedAfter":"5s","expect":{"action":"Retry","rule":"infra/0","delay":"0s","retries":1,"podName":"armada-j-0","avoidNodes":["n1"],"decision":"retry"}},{"node":"n\u00e9","containers":[{"name":"main","exitCode":137,"reason":"OOMKilled","message":"a \"quoted\" message"},{"name":"side","init":true}],"category":"c","subcategory":"s","globalMaxRetries":3},{"outcome":"succeeded","startedAt":"3h"}],"expect":{"final":"Succeeded","retries":2,"decision":"retry"}}"#,
        r#"{"apiVersion":"armadaproject.io/v1","kind":"FailureHistory","runs":[{"node":null,"conditions":null}]}"#,
        r#"{"runs":[{"startedAt":"2026-01-01T00:00:00Z"}],"job":{"submittedAt":"2026-01-01T00:00:00Z"}}"#,
        // An unnamed container, as `retryctl history` writes Lookout's runs.
        r#"{"job":{"id":"ml-01","queue":"ml"},"runs":[{"node":"n1","containers":[{"exitCode":137,"message":"OOM"}],"category":"oom"}]}"#,
        // The categorizer's pod-level inputs; a field of an event may be left out or null.
        r#"{"runs":[{"podError":"Failed to pull image \"x\": no match for platform in manifest","events":[{"type":"Warning","reason":"UnexpectedAdmissionError","message":"Pod Allocate failed"},{"type":"Normal","reason":null}]},{"podError":null,"events":null},{"events":[]}]}"#,
        // Each executor path, as `retryctl history` writes them.
        r#"{"runs":[{"executorPath":"stuckPod","podError":"Unable to start pod.\nx"},{"executorPath":"failedPodCheck","outcome":"leaseReturned"},{"executorPath":"failedPod"},{"executorPath":"unclassified","category":"internal"},{"executorPath":null}]}"#,
        // How the record ends the job, as `retryctl history` writes it (or says nothing).
        r#"{"job":{"id":"a","state":"failed"},"runs":[{}]}"#,
        r#"{"job":{"id":"b","state":"succeeded"},"runs":[{"outcome":"succeeded"}]}"#,
        r#"{"job":{"id":"c","state":"cancelled"},"runs":[{"outcome":"cancelled"}]}"#,
        r#"{"job":{"id":"d","state":null},"runs":[{}]}"#,
        // Each run's pool, as `retryctl history` writes it (left out: `default`).
        r#"{"runs":[{"pool":"gpu-a100"},{"pool":null},{}]}"#,
    ];
    for line in lines {
        let fast = decode_fast(line.as_bytes()).unwrap_or_else(|| panic!("fast path gave up on {line}"));
        assert_eq!(Ok(fast), decode_line_strict(line.as_bytes(), 1), "{line}");
    }
    let pools = decode_fast(lines[lines.len() - 1].as_bytes()).unwrap();
    let pools: Vec<Option<&str>> = pools.runs.iter().map(|r| r.pool.as_deref()).collect();
    assert_eq!(pools, [Some("gpu-a100"), None, None]);
    // A worker's scratch reused: a run without `pool` has none, whatever the line before.
    let mut scratch = Scratch::default();
    assert!(scratch.decode_fast(br#"{"runs":[{"pool":"a"}]}"#));
    assert!(scratch.decode_fast(br#"{"runs":[{}]}"#));
    assert_eq!(scratch.history.runs[0].pool, None);
    // The fast path gives up; the strict decoder answers (accepting, or with the error).
    let strict = [
        (r#"{"runs":[{"node":5}]}"#, Ok(())),
        // A job set is a string.
        (r#"{"job":{"jobSet":{"x":1}},"runs":[{}]}"#, Err("job.jobSet: expected a string, found a mapping")),
        (r#"{"job":{"annotations":{"a":5}},"runs":[{}]}"#, Ok(())),
        (r#"{"runs":[{"nodee":"a"}]}"#, Err("runs[0].nodee: unknown field `nodee`, did you mean `node`?")),
        // A key met twice, in any object (a run, the annotations, a value of the wrong type,
        // the line; spelled with an escape), as a `.json` history's.
        (r#"{"runs":[{"node":"a","node":"b"}]}"#, Err("invalid JSON at column 22: duplicate key `node` (first at column 11)")),
        (r#"{"job":{"annotations":{"a":"1", "a":"2"}},"runs":[{}]}"#, Err("invalid JSON at column 33: duplicate key `a` (first at column 24)")),
        (r#"{"job":{"jobSet":{"x":[{"y":1,"y":2}]}},"runs":[{}]}"#, Err("invalid JSON at column 31: duplicate key `y` (first at column 25)")),
        (r#"{"runs":[{}],"runs":[{}]}"#, Err("invalid JSON at column 14: duplicate key `runs` (first at column 2)")),
        (r#"{"runs":[{"node":"a","node":"b"}]}"#, Err("invalid JSON at column 22: duplicate key `node` (first at column 11)")),
        // A time that does not exist, with the field it is in.
        (r#"{"job":{"submittedAt":"2026-02-30T00:00:00Z"},"runs":[{}]}"#, Err("job.submittedAt: invalid time `2026-02-30T00:00:00Z`: day `30` does not exist in 2026-02 (28 days)")),
        (r#"{"runs":[{"startedAt":"2026-01-01T00:00:60Z"}]}"#, Err("runs[0].startedAt: invalid start `2026-01-01T00:00:60Z`: second `60` is out of range (00–59; a leap second is not read)")),
        (r#"{"runs":[{"queuedFor":"0s","startedAt":"1s"}]}"#, Err("runs[0].startedAt: set either `startedAt` or `queuedFor`, not both")),
        (r#"{"runs":[{"conditions":["OOMKilled"]}]}"#, Err("runs[0].conditions[0]: `OOMKilled` is a container reason, not a pod condition; write it as `containers: [{name: main, reason: OOMKilled, exitCode: 137}]`")),
        (r#"{"kind":null,"runs":[{}]}"#, Err("kind: expected a string")),
        (r#"{"runs":[]}"#, Err("runs: a history needs at least one run")),
        (r#"{"runs":[{"containers":[{"name":"","exitCode":1}]}]}"#, Err("runs[0].containers[0].name: container name must not be empty; leave `name` out for an unnamed container")),
        (r#"{"runs":[{"containers":[{"name":"m","exitCode":1.0}]}]}"#, Err("runs[0].containers[0].exitCode: expected an integer, found scalar `1.0`")),
        (r#"{"runs":[{"runFor":"5"}]}"#, Err("runs[0].runFor: invalid duration `5`: missing unit; expected a duration such as `10s` (units: `ns`, `us`, `ms`, `s`, `m`, `h`)")),
        // A JSON array where an object belongs: serde's derive would read it field by
        // field; the strict decoder rejects it, so the fast path must too.
        (r#"{"runs":[[]]}"#, Err("runs[0]: expected a mapping, found a sequence")),
        (r#"{"runs":[["n1","5m"]]}"#, Err("runs[0]: expected a mapping, found a sequence")),
        (r#"{"job":["j1"],"runs":[{}]}"#, Err("job: expected a mapping, found a sequence")),
        (r#"{"job":{"gang":[3]},"runs":[{}]}"#, Err("job.gang: expected a mapping, found a sequence")),
        (r#"{"runs":[{"containers":[["main",137]]}]}"#, Err("runs[0].containers[0]: expected a mapping, found a sequence")),
        (r#"{"runs":[{"expect":["Retry"]}]}"#, Err("runs[0].expect: expected a mapping, found a sequence")),
        (r#"{"runs":[{}],"expect":["Failed"]}"#, Err("expect: expected a mapping, found a sequence")),
        (r#"{"runs":[{"events":[{"type":"Warning","kind":"x"}]}]}"#, Err("runs[0].events[0].kind: unknown field `kind`, expected one of `type`, `reason`, `message`")),
        (r#"{"runs":[{"events":[["Warning"]]}]}"#, Err("runs[0].events[0]: expected a mapping, found a sequence")),
        (r#"{"runs":[{"events":{"type":"Warning"}}]}"#, Err("runs[0].events: expected a list, found a mapping")),
        (r#"{"runs":[{"podError":5}]}"#, Ok(())),
        (r#"{"job":{"state":"FAILED"},"runs":[{}]}"#, Err("job.state: unknown value `FAILED`, expected one of `succeeded`, `failed`, `cancelled`; did you mean `failed`?")),
        (r#"{"job":{"state":5},"runs":[{}]}"#, Err("job.state: unknown value `5`, expected one of `succeeded`, `failed`, `cancelled`")),
        (r#"{"runs":[{"executorPath":"stuck"}]}"#, Err("runs[0].executorPath: unknown value `stuck`, expected one of `stuckPod`, `failedPodCheck`, `failedPod`, `unclassified`")),
    ];
    for (line, want) in strict {
        assert!(decode_fast(line.as_bytes()).is_none(), "fast path accepted {line}");
        let got = decode_line(line.as_bytes(), 1);
        match want {
            Ok(()) => assert!(got.is_ok(), "{line}: {got:?}"),
            Err(e) => assert_eq!(got.unwrap_err(), e, "{line}"),
        }
    }
}

/// A worker's scratch history keeps its runs from line to line: a run's `podError` and
/// `events`, and a job's `state`, do not leak into the next line's that has none.
#[test]
fn pod_errors_and_events_do_not_outlive_their_line() {
    let mut scratch = Scratch::default();
    let with = br#"{"runs":[{"podError":"e","executorPath":"stuckPod","events":[{"type":"Warning","message":"m"},{"type":"Normal"}]}]}"#;
    let h = scratch.decode(with, || 1).unwrap();
    assert_eq!(h.runs[0].pod_error.as_deref(), Some("e"));
    assert_eq!(
        h.runs[0].executor_path,
        Some(crate::model::failure_history::ExecutorPath::StuckPod)
    );
    assert_eq!(h.runs[0].events.len(), 2);
    let fewer = br#"{"runs":[{"events":[{"reason":"r"}]}]}"#;
    let h = scratch.decode(fewer, || 2).unwrap();
    assert_eq!(h.runs[0].pod_error, None);
    assert_eq!(h.runs[0].executor_path, None);
    assert_eq!(
        h.runs[0].events,
        vec![PodEvent {
            reason: "r".into(),
            ..PodEvent::default()
        }]
    );
    let ended = br#"{"job":{"state":"failed"},"runs":[{}]}"#;
    let h = scratch.decode(ended, || 3).unwrap();
    assert_eq!(h.job.state, Some(crate::model::failure_history::JobEnd::Failed));
    let h = scratch.decode(br#"{"runs":[{}]}"#, || 3).unwrap();
    assert_eq!(h.job.state, None);
    assert!(h.runs[0].events.is_empty());
    assert_eq!(Ok(h.clone()), decode_line_strict(br#"{"runs":[{}]}"#, 3));
}
