//! A decoded history written compactly and read back exactly ([`pack`], [`unpack`]):
//! `suggest`'s copy of the jobs its first pass read, which its second pass replays
//! (docs/reference/suggest.md "Sources and passes") without parsing JSON again.
//!
//! The form is this build's own (no version, no other reader): the length of the numbers
//! (4 bytes, little-endian), the numbers, then every string's bytes one after the other, so
//! that reading them back checks UTF-8 once a job. Numbers: lengths and integers as LEB128
//! varints, an absent value as a 0 tag, a float as its bits, an enumeration as its place in
//! the model's `ALL`. A copy is written and read by one process, so a damaged one is a bug:
//! [`unpack`] says so instead of guessing.
//!
//! Owns: the form. Pure: no I/O. Must not: decide what is copied (that is
//! `commands::suggest`) or where the copy is read (`replay::source::copy`).

use std::collections::BTreeMap;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{
    Container, ExecutorPath, FailureHistory, Final, Job, JobEnd, JobExpect, Outcome, PodEvent, Resources, Run,
    RunExpect, StartedAt, Timestamp,
};
use crate::model::policy::{Action, Condition};

/// A copy that does not read back: where it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged(pub usize);

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "does not read back (byte {} of its record)", self.0)
    }
}

/// What [`pack`] writes with: the strings of the job being packed, its buffer kept.
#[derive(Debug, Default)]
pub struct Packer {
    strs: Vec<u8>,
}

/// `history`, appended to `out`.
pub fn pack(packer: &mut Packer, history: &FailureHistory, out: &mut Vec<u8>) {
    // Every field named: a field added to the model and not here does not compile.
    let FailureHistory { job, runs, expect } = history;
    let Job {
        id,
        queue,
        job_set,
        annotations,
        termination_grace_period,
        memory,
        submitted_at,
        gang_cardinality,
        resources,
        state,
    } = job;
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    packer.strs.clear();
    let w = &mut Writer(out, &mut packer.strs);
    w.str(id);
    w.opt_str(queue.as_deref());
    w.opt_str(job_set.as_deref());
    w.uint(annotations.len() as u64);
    for (k, v) in annotations {
        w.str(k);
        w.str(v);
    }
    w.opt_duration(*termination_grace_period);
    w.opt(memory.map(f64::to_bits), Writer::bits);
    w.opt(submitted_at.map(|t| t.0), Writer::int);
    w.opt(gang_cardinality.map(u64::from), Writer::uint);
    match resources {
        None => w.tag(0),
        Some(Resources {
            cpu_milli,
            memory,
            gpu_milli,
        }) => {
            w.tag(1);
            w.opt(*cpu_milli, Writer::uint);
            w.opt(memory.map(f64::to_bits), Writer::bits);
            w.opt(*gpu_milli, Writer::uint);
        }
    }
    w.opt(state.map(|e| place_of(&JobEnd::ALL, &e)), Writer::uint);
    w.uint(runs.len() as u64);
    for run in runs {
        w.run(run);
    }
    match expect {
        None => w.tag(0),
        Some(JobExpect {
            final_state,
            retries,
            decision,
        }) => {
            w.tag(1);
            w.opt(final_state.map(|f| place_of(&Final::ALL, &f)), Writer::uint);
            w.opt(retries.map(u64::from), Writer::uint);
            w.opt_str(decision.as_deref());
        }
    }
    let numbers = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&numbers.to_le_bytes());
    out.extend_from_slice(&packer.strs);
}

/// The history [`pack`] wrote as `bytes`, read into `into` (whose strings, runs and
/// containers keep their buffers: the second pass reads every job into one history).
pub fn unpack(bytes: &[u8], into: &mut FailureHistory) -> Result<(), Damaged> {
    let Some((head, rest)) = bytes.split_first_chunk::<4>() else {
        return Err(Damaged(0));
    };
    let numbers = u32::from_le_bytes(*head) as usize;
    if numbers > rest.len() {
        return Err(Damaged(0));
    }
    let (numbers, strs) = rest.split_at(numbers);
    let strs = std::str::from_utf8(strs).map_err(|e| Damaged(4 + numbers.len() + e.valid_up_to()))?;
    let r = &mut Reader {
        bytes: numbers,
        at: 0,
        strs,
        strs_at: 0,
    };
    let job = &mut into.job;
    r.str_into(&mut job.id)?;
    r.opt_str_into(&mut job.queue)?;
    r.opt_str_into(&mut job.job_set)?;
    job.annotations = match r.uint()? {
        0 => BTreeMap::new(),
        n => {
            let mut m = BTreeMap::new();
            for _ in 0..n {
                let k = r.str()?.to_string();
                m.insert(k, r.str()?.to_string());
            }
            m
        }
    };
    job.termination_grace_period = r.opt(|r| r.uint().map(GoDuration))?;
    job.memory = r.opt(|r| r.bits().map(f64::from_bits))?;
    job.submitted_at = r.opt(|r| r.int().map(Timestamp))?;
    job.gang_cardinality = r.opt(Reader::u32)?;
    job.resources = r.opt(|r| {
        Ok(Resources {
            cpu_milli: r.opt(Reader::uint)?,
            memory: r.opt(|r| r.bits().map(f64::from_bits))?,
            gpu_milli: r.opt(Reader::uint)?,
        })
    })?;
    job.state = r.opt(|r| r.pick(&JobEnd::ALL))?;
    let n = r.len()?;
    into.runs.truncate(n);
    for k in 0..n {
        match into.runs.get_mut(k) {
            Some(run) => r.run_into(run)?,
            None => {
                let mut run = Run::default();
                r.run_into(&mut run)?;
                into.runs.push(run);
            }
        }
    }
    into.expect = r.opt(|r| {
        Ok(JobExpect {
            final_state: r.opt(|r| r.pick(&Final::ALL))?,
            retries: r.opt(Reader::u32)?,
            decision: r.opt(|r| r.str().map(str::to_string))?,
        })
    })?;
    if r.at != numbers.len() || r.strs_at != strs.len() {
        return Err(Damaged(4 + r.at));
    }
    Ok(())
}

/// `v` as a LEB128 varint, appended to `out`.
pub fn put_uint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The varint [`put_uint`] wrote at `*at` in `bytes`; `*at` moved past it.
pub fn take_uint(bytes: &[u8], at: &mut usize) -> Result<u64, Damaged> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at).ok_or(Damaged(*at))?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(Damaged(*at))
}

/// The numbers, and the strings.
struct Writer<'a>(&'a mut Vec<u8>, &'a mut Vec<u8>);

impl Writer<'_> {
    fn tag(&mut self, t: u8) {
        self.0.push(t);
    }

    fn uint(&mut self, v: u64) {
        put_uint(self.0, v);
    }

    /// Zigzag, so that a small negative number is short too.
    fn int(&mut self, v: i64) {
        self.uint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn bits(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn str(&mut self, s: &str) {
        self.uint(s.len() as u64);
        self.1.extend_from_slice(s.as_bytes());
    }

    fn opt<T>(&mut self, v: Option<T>, write: fn(&mut Self, T)) {
        match v {
            None => self.tag(0),
            Some(v) => {
                self.tag(1);
                write(self, v);
            }
        }
    }

    /// An enumeration's value as its place in `all` (what [`Reader::pick`] reads).
    fn place<T: PartialEq>(&mut self, all: &[T], v: &T) {
        self.uint(place_of(all, v));
    }

    fn opt_str(&mut self, s: Option<&str>) {
        self.opt(s, Writer::str);
    }

    fn opt_duration(&mut self, d: Option<GoDuration>) {
        self.opt(d.map(|d| d.0), Writer::uint);
    }

    fn run(&mut self, run: &Run) {
        let Run {
            node,
            pool,
            queued_for,
            started_at,
            run_for,
            conditions,
            termination_confirmed_after,
            containers,
            category,
            subcategory,
            outcome,
            global_max_retries,
            pod_error,
            executor_path,
            events,
            expect,
        } = run;
        self.opt_str(node.as_deref());
        self.opt_str(pool.as_deref());
        self.uint(queued_for.0);
        match started_at {
            None => self.tag(0),
            Some(StartedAt::Offset(d)) => {
                self.tag(1);
                self.uint(d.0);
            }
            Some(StartedAt::Absolute(t)) => {
                self.tag(2);
                self.int(t.0);
            }
        }
        self.uint(run_for.0);
        self.uint(conditions.len() as u64);
        for c in conditions {
            self.place(&Condition::ALL, c);
        }
        self.opt_duration(*termination_confirmed_after);
        self.uint(containers.len() as u64);
        for Container {
            name,
            init,
            exit_code,
            reason,
            message,
        } in containers
        {
            self.str(name);
            self.tag(u8::from(*init));
            self.int(*exit_code);
            self.opt_str(reason.as_deref());
            self.opt_str(message.as_deref());
        }
        self.opt_str(category.as_deref());
        self.opt_str(subcategory.as_deref());
        self.place(&Outcome::ALL, outcome);
        self.opt(global_max_retries.map(u64::from), Writer::uint);
        self.opt_str(pod_error.as_deref());
        self.opt(executor_path.as_ref(), |w, p| w.place(&ExecutorPath::ALL, p));
        self.uint(events.len() as u64);
        for PodEvent {
            event_type,
            reason,
            message,
        } in events
        {
            self.str(event_type);
            self.str(reason);
            self.str(message);
        }
        match expect.as_deref() {
            None => self.tag(0),
            Some(RunExpect {
                action,
                decision,
                rule,
                delay,
                retries,
                pod_name,
                avoid_nodes,
            }) => {
                self.tag(1);
                self.opt(action.map(|a| place_of(&ACTIONS, &a)), Writer::uint);
                self.opt_str(decision.as_deref());
                self.opt_str(rule.as_deref());
                self.opt_duration(*delay);
                self.opt(retries.map(u64::from), Writer::uint);
                self.opt_str(pod_name.as_deref());
                match avoid_nodes {
                    None => self.tag(0),
                    Some(nodes) => {
                        self.tag(1);
                        self.uint(nodes.len() as u64);
                        for n in nodes {
                            self.str(n);
                        }
                    }
                }
            }
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    strs: &'a str,
    strs_at: usize,
}

impl<'a> Reader<'a> {
    fn damaged<T>(&self) -> Result<T, Damaged> {
        Err(Damaged(self.at))
    }

    fn byte(&mut self) -> Result<u8, Damaged> {
        let Some(&b) = self.bytes.get(self.at) else {
            return self.damaged();
        };
        self.at += 1;
        Ok(b)
    }

    fn uint(&mut self) -> Result<u64, Damaged> {
        take_uint(self.bytes, &mut self.at)
    }

    fn int(&mut self) -> Result<i64, Damaged> {
        let v = self.uint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn u32(&mut self) -> Result<u32, Damaged> {
        let v = self.uint()?;
        u32::try_from(v).or_else(|_| self.damaged())
    }

    /// A count of things still to read: no more than there are bytes left.
    fn len(&mut self) -> Result<usize, Damaged> {
        let v = self.uint()?;
        match usize::try_from(v) {
            Ok(n) if n <= self.bytes.len() - self.at => Ok(n),
            _ => self.damaged(),
        }
    }

    fn bits(&mut self) -> Result<u64, Damaged> {
        let Some(b) = self.bytes.get(self.at..self.at + 8) else {
            return self.damaged();
        };
        self.at += 8;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or_default()))
    }

    fn flag(&mut self) -> Result<bool, Damaged> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => {
                self.at -= 1;
                self.damaged()
            }
        }
    }

    fn str(&mut self) -> Result<&'a str, Damaged> {
        let n = self.uint()?;
        let at = self.strs_at;
        let s = usize::try_from(n)
            .ok()
            .and_then(|n| self.strs.get(at..at.checked_add(n)?))
            .ok_or(Damaged(self.at))?;
        self.strs_at += s.len();
        Ok(s)
    }

    fn str_into(&mut self, s: &mut String) -> Result<(), Damaged> {
        let v = self.str()?;
        s.clear();
        s.push_str(v);
        Ok(())
    }

    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> Result<T, Damaged>) -> Result<Option<T>, Damaged> {
        if self.flag()? {
            read(self).map(Some)
        } else {
            Ok(None)
        }
    }

    /// An optional string into `s`, in its buffer when it had one.
    fn opt_str_into(&mut self, s: &mut Option<String>) -> Result<(), Damaged> {
        if !self.flag()? {
            *s = None;
            return Ok(());
        }
        match s {
            Some(s) => self.str_into(s),
            None => {
                *s = Some(self.str()?.to_string());
                Ok(())
            }
        }
    }

    /// The value at an enumeration's place in `all`.
    fn pick<T: Copy>(&mut self, all: &[T]) -> Result<T, Damaged> {
        let at = self.at;
        let v = self.uint()?;
        usize::try_from(v)
            .ok()
            .and_then(|i| all.get(i).copied())
            .ok_or(Damaged(at))
    }

    fn run_into(&mut self, run: &mut Run) -> Result<(), Damaged> {
        self.opt_str_into(&mut run.node)?;
        self.opt_str_into(&mut run.pool)?;
        run.queued_for = GoDuration(self.uint()?);
        run.started_at = match self.byte()? {
            0 => None,
            1 => Some(StartedAt::Offset(GoDuration(self.uint()?))),
            2 => Some(StartedAt::Absolute(Timestamp(self.int()?))),
            _ => return Err(Damaged(self.at - 1)),
        };
        run.run_for = GoDuration(self.uint()?);
        let n = self.len()?;
        run.conditions.clear();
        for _ in 0..n {
            run.conditions.push(self.pick(&Condition::ALL)?);
        }
        run.termination_confirmed_after = self.opt(|r| r.uint().map(GoDuration))?;
        let n = self.len()?;
        run.containers.truncate(n);
        for k in 0..n {
            if k == run.containers.len() {
                run.containers.push(Container::default());
            }
            let c = &mut run.containers[k];
            self.str_into(&mut c.name)?;
            c.init = self.flag()?;
            c.exit_code = self.int()?;
            self.opt_str_into(&mut c.reason)?;
            self.opt_str_into(&mut c.message)?;
        }
        self.opt_str_into(&mut run.category)?;
        self.opt_str_into(&mut run.subcategory)?;
        run.outcome = self.pick(&Outcome::ALL)?;
        run.global_max_retries = self.opt(Reader::u32)?;
        self.opt_str_into(&mut run.pod_error)?;
        run.executor_path = self.opt(|r| r.pick(&ExecutorPath::ALL))?;
        let n = self.len()?;
        run.events.clear();
        for _ in 0..n {
            run.events.push(PodEvent {
                event_type: self.str()?.to_string(),
                reason: self.str()?.to_string(),
                message: self.str()?.to_string(),
            });
        }
        run.expect = self.opt(|r| {
            Ok(Box::new(RunExpect {
                action: r.opt(|r| r.pick(&ACTIONS))?,
                decision: r.opt(|r| r.str().map(str::to_string))?,
                rule: r.opt(|r| r.str().map(str::to_string))?,
                delay: r.opt(|r| r.uint().map(GoDuration))?,
                retries: r.opt(Reader::u32)?,
                pod_name: r.opt(|r| r.str().map(str::to_string))?,
                avoid_nodes: r.opt(|r| {
                    let n = r.len()?;
                    (0..n).map(|_| r.str().map(str::to_string)).collect()
                })?,
            }))
        })?;
        Ok(())
    }
}

/// Every [`Action`], in the order [`pack`] numbers them.
const ACTIONS: [Action; 2] = [Action::Fail, Action::Retry];

/// `v`'s place in `all`, which lists every value of its enumeration.
fn place_of<T: PartialEq>(all: &[T], v: &T) -> u64 {
    all.iter().position(|x| x == v).unwrap_or(all.len()) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(h: &FailureHistory, into: &mut FailureHistory) {
        let mut bytes = Vec::new();
        pack(&mut Packer::default(), h, &mut bytes);
        unpack(&bytes, into).unwrap();
        assert_eq!(into, h);
    }

    fn full() -> FailureHistory {
        let run = Run {
            node: Some("node-1".into()),
            pool: Some("gpu-a100".into()),
            queued_for: GoDuration(7),
            started_at: Some(StartedAt::Absolute(Timestamp(-5))),
            run_for: GoDuration(u64::MAX),
            conditions: Condition::ALL.to_vec(),
            termination_confirmed_after: Some(GoDuration(0)),
            containers: vec![
                Container {
                    name: "main".into(),
                    init: false,
                    exit_code: i64::MIN,
                    reason: Some("OOMKilled".into()),
                    message: Some("CUDA error: é 0x7f".into()),
                },
                Container {
                    name: String::new(),
                    init: true,
                    exit_code: 2,
                    reason: None,
                    message: None,
                },
            ],
            category: Some("oom".into()),
            subcategory: Some(String::new()),
            outcome: Outcome::Cancelled,
            global_max_retries: Some(u32::MAX),
            pod_error: Some("Unable to start pod.\nMatched check: \"check-0\"\nimage not found".into()),
            executor_path: Some(ExecutorPath::StuckPod),
            events: vec![PodEvent {
                event_type: "Warning".into(),
                reason: "Failed".into(),
                message: "pull".into(),
            }],
            expect: Some(Box::new(RunExpect {
                action: Some(Action::Retry),
                decision: Some("retry_rule".into()),
                rule: Some("p/0".into()),
                delay: Some(GoDuration(3)),
                retries: Some(1),
                pod_name: Some("pod".into()),
                avoid_nodes: Some(vec!["node-1".into(), "node-2".into()]),
            })),
        };
        FailureHistory {
            job: Job {
                id: "job-1".into(),
                queue: Some("ml".into()),
                job_set: Some("sweep-17".into()),
                annotations: [("a".to_string(), "b".to_string())].into(),
                termination_grace_period: Some(GoDuration(30_000_000_000)),
                memory: Some(-0.0),
                submitted_at: Some(Timestamp(i64::MAX)),
                gang_cardinality: Some(4),
                resources: Some(Resources {
                    cpu_milli: Some(500),
                    memory: Some(f64::MAX),
                    gpu_milli: None,
                }),
                state: Some(JobEnd::Cancelled),
            },
            runs: vec![run.clone(), Run::default(), run],
            expect: Some(JobExpect {
                final_state: Some(Final::Pending),
                retries: Some(0),
                decision: None,
            }),
        }
    }

    /// Every field, set and unset, reads back as written, into a history that held another
    /// job before (longer, shorter, with and without each value).
    #[test]
    fn every_field_reads_back_as_written() {
        let mut into = FailureHistory::default();
        round_trip(&full(), &mut into);
        round_trip(&FailureHistory::default(), &mut into);
        round_trip(&full(), &mut into);
        let mut fewer = full();
        fewer.runs.truncate(1);
        fewer.runs[0].containers.truncate(1);
        fewer.runs[0].containers[0].message = None;
        round_trip(&fewer, &mut into);
        round_trip(&full(), &mut into);
    }

    /// The replay's drawn histories (limits, memory bumps, returned leases, annotations,
    /// Pending endings), as the JSON Lines decoder reads them, read back as they were.
    #[test]
    fn drawn_histories_read_back_as_decoded() {
        let mut draw = crate::replay::drawn::Draw(0x9e37_79b9_7f4a_7c15);
        let mut into = FailureHistory::default();
        for _ in 0..50 {
            let text = crate::replay::drawn::history(&mut draw, 20);
            for (n, line) in text.lines().enumerate() {
                let h = crate::replay::json_lines::decode_line(line.as_bytes(), n + 1).unwrap();
                round_trip(&h, &mut into);
            }
        }
    }

    /// A copy cut short, or with a byte no field can have, is damaged, never read as another
    /// history.
    #[test]
    fn a_damaged_copy_is_refused() {
        let mut bytes = Vec::new();
        pack(&mut Packer::default(), &full(), &mut bytes);
        let mut into = FailureHistory::default();
        for cut in 0..bytes.len() {
            assert!(unpack(&bytes[..cut], &mut into).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(b'x');
        assert!(unpack(&longer, &mut into).is_err());
        let mut numbers = bytes.clone();
        numbers[0] += 1;
        assert!(unpack(&numbers, &mut into).is_err());
    }
}
