//! What `--state` holds (docs/watch.md "Durable"): the cursor, the jobs counted within the
//! span read again, every counter, and when the last poll succeeded, as one JSON document.
//!
//! Owns: [`State`] and its text both ways. Must not: write or read the file (the command
//! writes it atomically: a temporary file, fsync, rename), or read a clock: the times it
//! holds are given.
//!
//! The document: `{"kind": "retryctl watch state", "version": 2, "start", "cursor": {"at",
//! "job"} | null, "lastPollSuccess", "counted", "counters": [{"metric", "labels", "value"}],
//! "waiting": [[id, queue, at, since, state]], "window": {HOUR: {"failedJobs", "candidates":
//! {NAME: comparison}}}, "behind": {"from", "to", "counts": {QUEUE: {HOUR: jobs}}}}` (a
//! document without `behind`, from before it was kept, reads with none). A version 1 document
//! (before `waiting` and `window`) reads with neither, its futile-retry series labelled
//! `category="unknown"` (counted before categories were kept), so that no counter goes back; a
//! futile-retry series without a `signature` (from before signatures were kept) reads as
//! `signature="unknown"`.
//! Times are integers (`start` and `cursor.at` microseconds since the Unix epoch, as Lookout
//! stores them; `lastPollSuccess` milliseconds); `counted` is the pairs of
//! [`super::cursor::CountedJobs`] as base64 of 16 little-endian bytes each (time, hash): a burst of
//! jobs costs 16 bytes a job, not a JSON array's 40; a counter's value is a decimal string,
//! since device time passes what a JSON number holds exactly.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::cursor::{CountedJobs, Cursor};
use super::late::Behind;
use super::metrics::{Counters, Family};
use super::waiting::Waiting;
use super::window::HourlySums;

const KIND: &str = "retryctl watch state";
const VERSION: u64 = 2;

/// The `category` of a futile-retry series read from a version 1 state.
pub const UNKNOWN_CATEGORY: &str = "unknown";

/// The `signature` of a futile-retry series read from a state written before they carried
/// one.
pub const UNKNOWN_SIGNATURE: &str = "unknown";

/// The document's top level as read: the large lists typed (no tree of values for 200,000
/// waiting jobs), the rest checked field by field.
/// A job waiting, as the document lists it: id, queue, time, since, state.
type WaitRow = (String, String, i64, i64, i16);

#[derive(serde::Deserialize)]
struct Doc {
    #[serde(default)]
    kind: Value,
    #[serde(default)]
    version: Value,
    #[serde(default)]
    start: Value,
    #[serde(default)]
    cursor: Value,
    #[serde(default, rename = "lastPollSuccess")]
    last_poll_success: Value,
    #[serde(default)]
    counted: Value,
    #[serde(default)]
    counters: Value,
    #[serde(default)]
    waiting: Option<Vec<WaitRow>>,
    #[serde(default)]
    window: Option<HourlySums>,
    #[serde(default)]
    behind: Option<Behind>,
}

/// Everything a restart resumes from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct State {
    /// Where a fresh state starts reading (microseconds since the Unix epoch): `--since`, or
    /// when `watch` first ran. Read while no job is counted.
    pub start: i64,
    pub cursor: Option<Cursor>,
    pub seen: CountedJobs,
    pub counters: Counters,
    /// When a poll last succeeded (milliseconds since the Unix epoch).
    pub last_success: Option<i64>,
    /// The jobs read terminal whose record was not complete yet.
    pub waiting: Waiting,
    /// The last `--window` of jobs counted, as hourly sums.
    pub window: HourlySums,
    /// The jobs behind the re-read span, as the last poll counted them (`late`).
    pub behind: Behind,
}

impl State {
    /// A fresh state that starts reading at `start`.
    pub fn new(start: i64, counters: Counters) -> State {
        State {
            start,
            counters,
            ..State::default()
        }
    }

    /// The document (one line).
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.write_json(&mut out).expect("a Vec takes every byte");
        String::from_utf8(out).expect("JSON is UTF-8")
    }

    /// The document (one line), written to `out` as it goes: 200,000 jobs waiting make no
    /// copy of the file in memory.
    pub fn write_json(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut counted = Vec::with_capacity(self.seen.len() * 16);
        for (at, hash) in self.seen.pairs() {
            counted.extend_from_slice(&at.to_le_bytes());
            counted.extend_from_slice(&hash.to_le_bytes());
        }
        let counters: Vec<Value> = self
            .counters
            .iter()
            .filter(|(f, _, _)| f.is_counter())
            .map(|(f, labels, n)| {
                let labels: Map<String, Value> = f
                    .labels()
                    .iter()
                    .zip(labels)
                    .map(|(k, v)| (k.to_string(), Value::String(v.clone())))
                    .collect();
                json!({"metric": f.name(), "labels": labels, "value": n.to_string()})
            })
            .collect();
        let mut head = json!({
            "kind": KIND,
            "version": VERSION,
            "start": self.start,
            "cursor": self.cursor.as_ref().map(|c| json!({"at": c.at, "job": c.job})),
            "lastPollSuccess": self.last_success,
            "counted": base64::engine::general_purpose::STANDARD.encode(counted),
            "counters": counters,
        })
        .to_string();
        // The waiting jobs written as they go: 200,000 of them make no tree of values.
        head.pop();
        out.write_all(head.as_bytes())?;
        out.write_all(b",\"waiting\":[")?;
        for (i, (id, w)) in self.waiting.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(b"[")?;
            serde_json::to_writer(&mut *out, id)?;
            out.write_all(b",")?;
            serde_json::to_writer(&mut *out, self.waiting.queue_of(w))?;
            write!(out, ",{},{},{}]", w.at, w.since, w.state)?;
        }
        out.write_all(b"],\"window\":")?;
        serde_json::to_writer(&mut *out, &self.window)?;
        out.write_all(b",\"behind\":")?;
        serde_json::to_writer(&mut *out, &self.behind)?;
        out.write_all(b"}")
    }

    /// The state `text` holds, or what is wrong with it (the caller names the file).
    pub fn from_json(text: &str) -> Result<State, String> {
        let v: Doc = match serde_json::from_str(text) {
            Ok(v) => v,
            // A document that is not an object of this shape at all: say first that it is not
            // a state, when it is JSON.
            Err(e) => {
                let any: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
                if any.get("kind") != Some(&Value::String(KIND.into())) {
                    return Err(format!("not a watch state (no `\"kind\": \"{KIND}\"`)"));
                }
                return Err(format!("not a watch state of this retryctl ({e})"));
            }
        };
        if v.kind != KIND {
            return Err(format!("not a watch state (no `\"kind\": \"{KIND}\"`)"));
        }
        let version = match v.version.as_u64() {
            Some(n @ (1 | VERSION)) => n,
            Some(n) => return Err(format!("version {n}, where this retryctl reads version {VERSION}")),
            None => return Err("no `version`".into()),
        };
        let int = |key: &str, v: &Value| v.as_i64().ok_or_else(|| format!("`{key}` is not an integer"));
        let start = int("start", &v.start)?;
        let cursor = match &v.cursor {
            Value::Null => None,
            c => Some(Cursor {
                at: int("cursor.at", &c["at"])?,
                job: c["job"].as_str().ok_or("`cursor.job` is not a string")?.to_string(),
            }),
        };
        let last_success = match &v.last_poll_success {
            Value::Null => None,
            t => Some(int("lastPollSuccess", t)?),
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.counted.as_str().ok_or("`counted` is not a string")?)
            .map_err(|e| format!("`counted` is not base64 ({e})"))?;
        if bytes.len() % 16 != 0 {
            return Err(format!("`counted` holds {} bytes, not pairs of 16", bytes.len()));
        }
        let pair = |c: &[u8]| {
            let (at, hash) = c.split_at(8);
            // 16-byte chunks: both halves are 8 bytes.
            (
                i64::from_le_bytes(at.try_into().unwrap_or_default()),
                u64::from_le_bytes(hash.try_into().unwrap_or_default()),
            )
        };
        let seen = CountedJobs::of_pairs(bytes.chunks_exact(16).map(pair));
        let mut counters = Counters::default();
        let list = v.counters.as_array().ok_or("`counters` is not a list")?;
        for (i, c) in list.iter().enumerate() {
            let at = |why: String| format!("counters[{i}]: {why}");
            let name = c["metric"].as_str().ok_or_else(|| at("no `metric`".into()))?;
            let family = Family::named(name)
                .filter(|f| f.is_counter())
                .ok_or_else(|| at(format!("`{name}` is not a counter of watch")))?;
            let mut labels = c["labels"].as_object().ok_or_else(|| at("no `labels`".into()))?.clone();
            if version == 1 && family.labels().contains(&"category") && !labels.contains_key("category") {
                labels.insert("category".into(), Value::String(UNKNOWN_CATEGORY.into()));
            }
            // Counted before futile retries carried their signature: `unknown`, so that no
            // total goes back.
            if family.labels().contains(&"signature") && !labels.contains_key("signature") {
                labels.insert("signature".into(), Value::String(UNKNOWN_SIGNATURE.into()));
            }
            if labels.len() != family.labels().len() {
                return Err(at(format!("`{name}` has the labels {:?}", family.labels())));
            }
            let values = family
                .labels()
                .iter()
                .map(|k| labels.get(*k).and_then(Value::as_str))
                .collect::<Option<Vec<&str>>>()
                .ok_or_else(|| at(format!("`{name}` has the labels {:?}", family.labels())))?;
            let n: u128 = c["value"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| at("`value` is not a decimal string".into()))?;
            counters.add(family, &values, n);
        }
        let mut waiting = Waiting::default();
        for (id, queue, at, since, state) in v.waiting.unwrap_or_default() {
            waiting.insert(&id, &queue, at, state, since);
        }
        Ok(State {
            start,
            cursor,
            seen,
            counters,
            last_success,
            waiting,
            window: v.window.unwrap_or_default(),
            behind: v.behind.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reads_back_as_written() {
        let mut s = State::new(
            1_700_000_000_000_000,
            Counters::zeros(&["ml".into()], &["c.yaml".into()]),
        );
        s.counters.add(Family::Jobs, &["ml", "failed"], 7);
        s.counters
            .add(Family::ShadowGpuSeconds, &["ml", "c.yaml", "saved"], u128::MAX - 1);
        s.cursor = Some(Cursor {
            at: 1_700_000_123_456_789,
            job: "01jx\"q".into(),
        });
        for (at, id) in [(-5, "a"), (1_700_000_123_456_789, "b")] {
            s.seen.insert(at, id);
        }
        s.last_success = Some(1_700_000_124_000);
        s.waiting
            .insert("late\"1", "ml", 1_700_000_000_000_001, 5, 1_700_000_100_000_000);
        s.waiting
            .insert("late2", "batch", 1_700_000_000_000_002, 4, 1_700_000_100_000_000);
        // A job a candidate loses, its 3 hours of a 1000-GPU request left out: sums past what
        // a JSON number holds exactly, read back exactly.
        use crate::model::duration::GoDuration;
        use crate::model::failure_history::{Final, Resources};
        use crate::replay::compare::{JobDiff, Side};
        let side = |final_state| Side {
            final_state,
            retries: 1,
            delay: GoDuration::ZERO,
            runs: 2,
            runs_left: 0,
            compute: GoDuration::from_secs(3600),
        };
        let diff = JobDiff {
            job: "j".into(),
            baseline: side(Final::Succeeded),
            candidate: Side {
                runs: 1,
                ..side(Final::Failed)
            },
            compute_added: GoDuration::ZERO,
            compute_removed: GoDuration::from_secs(3 * 3600),
            resources: Some(Resources {
                gpu_milli: Some(1_000_000),
                ..Resources::default()
            }),
        };
        let shadow = crate::watch::job::Shadow {
            change: crate::watch::metrics::Change::Lost,
            gpu_saved: 0,
            gpu_added: 0,
            gpu_lost: 1,
            diff,
        };
        let mut seen = crate::watch::job::SeenJob {
            job: "j".into(),
            queue: "ml".into(),
            retries: Vec::new(),
            failed: false,
            contradicted: true,
            collisions: 0,
            collisions_ran: 0,
            failed_runs: 1,
            recorded: Default::default(),
            // What tells an unusual hour's kind is kept too.
            mix: crate::watch::mix::JobMix {
                set: Some("ml\nsweep-17".into()),
                signatures: vec!["exit:2@main \"bad key\"".into()],
                nodes: vec!["node-1".into()],
            },
            shadows: vec![Some(shadow)],
            errors: Vec::new(),
        };
        let names = ["c.yaml".to_string()];
        s.window.add(1_700_000_000_000_000, &seen, &names);
        seen.failed_runs = 0;
        s.window.add(1_700_000_000_000_000 + 2 * 3_600_000_000, &seen, &names);
        let back = State::from_json(&s.to_json()).unwrap();
        assert_eq!(back, s);
        assert!(s.to_json().contains(r#""mix":{"sets":{"named":{"ml\nsweep-17":1}}"#));
        assert!(back.seen.contains(-5, "a"));
        assert_eq!(back.waiting.len(), 2);
        let (failed, sums) = back.window.since(0);
        assert_eq!(failed, 1);
        assert_eq!(sums["c.yaml"].lost, 2);
        assert_eq!(sums["c.yaml"].gpu_removed, 2 * 3 * 3600 * 1_000_000_000 * 1_000_000);
    }

    #[test]
    fn a_version_1_state_reads_its_futile_series_with_an_unknown_category() {
        let v1 = r#"{"kind":"retryctl watch state","version":1,"start":5,"cursor":null,"lastPollSuccess":null,"counted":"","counters":[{"metric":"retryctl_watch_futile_retries_total","labels":{"queue":"ml","rule":"p/0"},"value":"7"}]}"#;
        let s = State::from_json(v1).unwrap();
        assert_eq!(
            s.counters
                .get(Family::FutileRetries, &["ml", "p/0", "unknown", "unknown"]),
            7
        );
        assert!(s.waiting.is_empty() && s.window.is_empty());
    }

    #[test]
    fn what_is_not_a_state_is_said() {
        let err = |text: &str| State::from_json(text).unwrap_err();
        assert!(err("{").starts_with("not JSON"));
        assert_eq!(err("{}"), "not a watch state (no `\"kind\": \"retryctl watch state\"`)");
        let good = State::new(0, Counters::default()).to_json();
        assert_eq!(
            err(&good.replace("\"version\":2", "\"version\":3")),
            "version 3, where this retryctl reads version 2"
        );
        assert_eq!(
            err(&good.replace("\"waiting\":[]", "\"waiting\":[1]")),
            "not a watch state of this retryctl (invalid type: integer `1`, expected a tuple of size 5 at line 1 column 238)"
                .replace("238", &(good.find("\"waiting\"").unwrap() + 12).to_string())
        );
        let bad = good.replace(
            "\"counters\":[]",
            r#""counters":[{"metric":"retryctl_watch_cursor_timestamp_seconds","labels":{},"value":"1"}]"#,
        );
        assert_eq!(
            err(&bad),
            "counters[0]: `retryctl_watch_cursor_timestamp_seconds` is not a counter of watch"
        );
        let bad = good.replace(
            "\"counters\":[]",
            r#""counters":[{"metric":"retryctl_watch_jobs_total","labels":{"queue":"ml"},"value":"1"}]"#,
        );
        assert_eq!(
            err(&bad),
            r#"counters[0]: `retryctl_watch_jobs_total` has the labels ["queue", "outcome"]"#
        );
        assert_eq!(
            err(&good.replace("\"counted\":\"\"", "\"counted\":\"AAAA\"")),
            "`counted` holds 3 bytes, not pairs of 16"
        );
    }
}
