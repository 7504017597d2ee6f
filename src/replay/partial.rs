//! A partial result (docs/past-one-machine.md): what one shard of a replay leaves for `merge`, as a versioned
//! JSON document — and reading it back.
//!
//! The document is one JSON object laid out one part per line, so that a shard writes it as
//! it goes and `merge` reads each partial as a stream, however many jobs it lists:
//!
//! ```text
//! {"partial":"retryctl","version":5,"retryctl":"…","shard":{"index":0,"count":4},"fingerprint":"…","run":{…},"entries":[
//! {"at":[1,12],"job":{…}},
//! {"at":[1,30],"n":201,"change":{"job":"…",…},"more":[…]},
//! {"at":[1,35],"n":198,"change":{"job":"…",…}},
//! {"at":[1,40],"error":"…"}
//! ],"end":{"entries":2,"source":"…","totals":{…}},"xxh3":"…"}
//! ```
//!
//! - the header: the shard, the fingerprint of every input that changes the answer (the
//!   command computes it: documents, flags, engine, source and its filters, N), and `run`,
//!   what `merge` needs to print what the command would (its flags, the policies' names, …);
//! - `entries`: what the reports list, each with its position in the source's order
//!   ([`Pos`]): the jobs of a plain replay, the changed jobs of a comparison, the first job of
//!   each missing queue, and every entry that could not be replayed;
//! - `end`: how many entries there are (a truncated partial has no end, a damaged one another
//!   count), the digest of the history's bytes, and the shard's totals (counts and trials,
//!   which add up the same whatever the split);
//! - `xxh3`: XXH3-128 of every byte before it. A partial is input, and its totals are trusted only
//!   as its shard wrote them: a file edited since is refused as damaged.
//!
//! Owns: [`Recorder`] (the writing, which missing queues to list: the first job of each in
//! this shard) and [`Partial`] (the reading, with every check on one file: is it a partial,
//! its version, truncation, its count, its seal, the file read once: its header and end
//! when opened, the seal checked as its entries are read; its totals read again when they are added,
//! one partial at a time, and checked as numbers by [`counts`]). A file that cannot be opened
//! because too many are open is told apart ([`ReadError::TooManyOpen`]): no fault of the file. Must not: decide what a shard lists or how totals
//! merge (that is `run`), compare partials with each other (that is `commands::merge`), or
//! format anything for people (an invalid history file's diagnostics come rendered).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::engine::JobReport;
use crate::input::SourceFile;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{Final, Outcome, Resources};

use super::compare::{JobDiff, RunStep, Side, Step, Steps, Transition};
use super::estimate::FailureClass;
use super::fallback::{Fallback, Fallbacks};
use super::shard::Shard;
use super::sink::{Change, RenderChange};
use super::source::{read_exact_at, ExportTotals, Pos};
use super::spool::Changed;

pub mod counts;

/// The version this build writes and reads; a partial of another one is refused. 3: a
/// changed job is its record as `-o json` prints it, then the rest as an array
/// ([`Recorder::change`]); 4: a step is one number and its class ([`StepsOut`]); 5: a
/// changed job with no side Pending past the first of its transition that keep their steps
/// has no rest.
pub const VERSION: u64 = 5;

/// How a partial begins: what tells one from any other JSON.
const MAGIC: &str = "{\"partial\":\"retryctl\",\"version\":";

/// Whether `start` (a file's first bytes, at least `MAGIC`'s length when the file is that
/// long) begins as a partial result does (`merge DIR` reads only those).
pub fn looks_like_partial(start: &[u8]) -> bool {
    start.starts_with(MAGIC.as_bytes())
}
/// The end of the header line, and the start of the end line.
const ENTRIES: &str = ",\"entries\":[";
const END: &str = "],\"end\":";
/// What closes the end line: the seal of every byte before it ([`Seal`]), hex, then `"}`. A partial
/// is input: one edited by hand (or by anything but its recorder) is refused, not trusted.
const SEAL: &str = ",\"xxh3\":\"";

/// The seal of a partial's bytes: XXH3-128, hex. A checksum, not a signature: it finds a
/// partial damaged or edited since its shard wrote it; what a partial resealed by hand says
/// is checked as numbers ([`counts`]) and by `merge`.
pub type Seal = xxhash_rust::xxh3::Xxh3;

/// A seal's value as a partial writes it.
pub fn seal_hex(seal: &Seal) -> String {
    format!("{:032x}", seal.digest128())
}

/// A partial's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always `retryctl`.
    pub partial: String,
    pub version: u64,
    /// The retryctl that wrote it.
    pub retryctl: String,
    pub shard: ShardOut,
    /// SHA-256 of the inputs that change the answer, hex.
    pub fingerprint: String,
    /// What the command's output needs besides the entries and totals (the command's own
    /// shape; `command` says which).
    pub run: serde_json::Value,
}

/// `shard` in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardOut {
    pub index: u64,
    pub count: u64,
}

impl From<Shard> for ShardOut {
    fn from(s: Shard) -> ShardOut {
        ShardOut {
            index: s.index,
            count: s.count,
        }
    }
}

impl Header {
    pub fn new(shard: Shard, fingerprint: String, run: serde_json::Value) -> Header {
        Header {
            partial: "retryctl".into(),
            version: VERSION,
            retryctl: env!("CARGO_PKG_VERSION").into(),
            shard: shard.into(),
            fingerprint,
            run,
        }
    }
}

/// The fingerprint of a run's inputs: SHA-256 of their JSON, hex. The command gathers them
/// (its run, its policies, its source, the number of shards): equal fingerprints, the same
/// answer from the same jobs.
pub fn fingerprint(inputs: &serde_json::Value) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"retryctl partial ");
    h.update(VERSION.to_string().as_bytes());
    h.update(b" ");
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(b"\n");
    // A `Value` always serializes.
    h.update(serde_json::to_string(inputs).unwrap_or_default().as_bytes());
    hex(&h.finalize())
}

/// A partial's last part, its totals in the command's own type: written straight from it, not
/// through a `serde_json::Value`, whose numbers stop at 64 bits (a shard's sums of nanoseconds
/// × thousandths of a device pass that at about 5,000 device-hours).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct End<T> {
    /// Entries before it.
    pub entries: u64,
    /// Some job got the policies given on the command line.
    pub used_given: bool,
    /// The digest of the history, hex (`None`: a source that is not files, whose
    /// identity the fingerprint holds).
    pub source: Option<String>,
    /// The shard's totals, in the command's own shape.
    pub totals: T,
    /// A database's export: the queue and what the shard's export read and left out (the
    /// summary `merge` says after the answer, as the command does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookout: Option<Lookout>,
}

/// What a shard's Lookout export read: its queue and counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lookout {
    pub queue: String,
    pub totals: ExportTotals,
}

/// One entry as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EntryOut<'a> {
    at: &'a Pos,
    #[serde(skip_serializing_if = "Option::is_none")]
    missing_queue: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    job_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    invalid: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    left_out: Option<&'a str>,
}

impl<'a> EntryOut<'a> {
    fn at(at: &'a Pos) -> Self {
        EntryOut {
            at,
            missing_queue: None,
            job_id: None,
            error: None,
            invalid: None,
            left_out: None,
        }
    }
}

/// The transition's place among [`Recorder::with_steps`]' counts.
fn group(t: Option<Transition>) -> usize {
    match t {
        Some(Transition::Rescued) => 0,
        Some(Transition::Lost) => 1,
        Some(Transition::ToPending) => 2,
        Some(Transition::Other) => 3,
        None => 4,
    }
}

/// The position of the last changed job of each transition that keeps its steps in a
/// partial, once the recorder has kept as many as it keeps ([`Recorder::keep_steps`]).
/// Building a job's steps cost a shard more than anything else it records; most changed
/// jobs come after the cut, and a worker that knows it builds none for them.
#[derive(Debug, Default)]
pub struct StepsCut([OnceLock<Pos>; 5]);

impl StepsCut {
    /// Whether a changed job of transition `t` at `at` may still keep its steps. A job the
    /// cut is not known for yet builds them, and the recorder drops them if it must.
    pub fn wanted(&self, t: Option<Transition>, at: Pos) -> bool {
        self.0[group(t)].get().is_none_or(|&last| at <= last)
    }
}

/// Writes a partial: the header at once, each entry as it comes, the end last.
pub struct Recorder<'a> {
    out: &'a mut dyn Write,
    /// An invalid history file's diagnostics as `validate` words them (without colour).
    render_invalid: fn(&SourceFile) -> String,
    /// A changed job's record as `-o json` prints it (`output` owns that shape).
    render_change: RenderChange,
    /// Reused for each changed job's record.
    record: Vec<u8>,
    /// The entry before the last, whose comma waits for the next one.
    held: Vec<u8>,
    entries: u64,
    fallbacks: Fallbacks,
    /// How many changed jobs of each transition keep their steps (see [`Recorder::keep_steps`]),
    /// and how many have so far.
    steps_per_group: usize,
    with_steps: [usize; 5],
    cut: Arc<StepsCut>,
    /// Every byte written so far, for the seal.
    seal: Seal,
}

impl<'a> Recorder<'a> {
    pub fn new(
        out: &'a mut dyn Write,
        header: &Header,
        render_invalid: fn(&SourceFile) -> String,
        render_change: RenderChange,
    ) -> io::Result<Recorder<'a>> {
        let text = serde_json::to_string(header).map_err(io::Error::other)?;
        // The header object, left open for `entries`.
        let line = format!("{}{ENTRIES}\n", &text[..text.len() - 1]);
        out.write_all(line.as_bytes())?;
        let mut seal = Seal::new();
        seal.update(line.as_bytes());
        Ok(Recorder {
            out,
            render_invalid,
            render_change,
            record: Vec::new(),
            held: Vec::new(),
            entries: 0,
            fallbacks: Fallbacks::default(),
            steps_per_group: usize::MAX,
            with_steps: [0; 5],
            cut: Arc::default(),
            seal,
        })
    }

    /// Keeps the run-by-run steps of only the first `n` changed jobs of each transition
    /// (rescued, lost, → Pending, other, none), in the shard's order. Only the HTML report
    /// prints steps, and only for the first `n` of each transition in the whole run's order;
    /// those are among the first `n` of their transition in their own shard, so the merge
    /// still has every step it prints. Steps are most of a changed job's bytes: without this
    /// a partial of a history where most jobs change is as large as the history.
    pub fn keep_steps(&mut self, n: usize) {
        self.steps_per_group = n;
    }

    /// Where each transition's kept steps end, as the recorder finds out: the workers that
    /// replay the jobs ask it before they build steps that would be dropped here.
    pub fn steps_cut(&self) -> Arc<StepsCut> {
        self.cut.clone()
    }

    /// Some job got the policies given on the command line (no queue, or a queue the
    /// documents lack).
    pub fn used_given(&self) -> bool {
        self.fallbacks.used_given
    }

    fn push(&mut self, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        if self.entries > 0 {
            self.held.extend_from_slice(b",\n");
            self.write_held()?;
        }
        write(&mut self.held)?;
        self.entries += 1;
        Ok(())
    }

    /// The held bytes out, and into the seal.
    fn write_held(&mut self) -> io::Result<()> {
        self.out.write_all(&self.held)?;
        self.seal.update(&self.held);
        self.held.clear();
        Ok(())
    }

    fn entry(&mut self, e: &EntryOut<'_>) -> io::Result<()> {
        self.push(|buf| serde_json::to_writer(buf, e).map_err(io::Error::other))
    }

    /// The queue to list with a job: the first job of a missing queue in this shard.
    fn missing(&mut self, f: Option<Fallback>) -> Option<String> {
        self.fallbacks.add(f)
    }

    /// A job of a plain replay: its report, rendered by [`render_job`] in the worker.
    pub fn job(&mut self, at: &Pos, rendered: &[u8], f: Option<Fallback>) -> io::Result<()> {
        let queue = self.missing(f);
        self.push(|buf| {
            buf.extend_from_slice(b"{\"at\":");
            write_at(buf, at);
            if let Some(q) = &queue {
                buf.extend_from_slice(b",\"missingQueue\":");
                serde_json::to_writer(&mut *buf, q).map_err(io::Error::other)?;
            }
            buf.extend_from_slice(b",\"job\":");
            buf.extend_from_slice(rendered);
            buf.push(b'}');
            Ok(())
        })
    }

    /// A changed job of a comparison:
    /// `{"at":[A,B],("missingQueue":Q,)("n":LEN,)"change":RECORD,"more":[…]}`. RECORD is the
    /// job's record as `-o json` prints it, without an estimate; LEN, its length in bytes,
    /// is there when the record is final (no side Pending: a Pending side's estimate is
    /// known only at the merge), so that a merge printing JSON copies it as it is, without
    /// reading it into a job and writing it out again (a plan's merge was mostly that).
    /// `more` holds the rest: `[runsLeft, compute]` of each side, resources, class, depth,
    /// steps ([`MoreOut`]). Only a job whose estimate is made at the merge (a side Pending)
    /// and one that keeps its steps have it: of the others, every output prints the record
    /// alone (the rest is in the shard's totals already), and the HTML report, the one output
    /// that prints a job's class, lists only jobs that keep their steps. Most changed jobs of
    /// a large history are neither, and the rest was a quarter of a partial's bytes.
    pub fn change(&mut self, at: &Pos, mut c: Changed, f: Option<Fallback>) -> io::Result<()> {
        let group = group(c.diff.transition());
        let kept = self.with_steps[group] < self.steps_per_group;
        if kept {
            self.with_steps[group] += 1;
            if self.with_steps[group] == self.steps_per_group {
                // Entries come in the source's order: no job after this one keeps steps.
                let _ = self.cut.0[group].set(*at);
            }
        } else {
            c.steps = None;
        }
        let queue = self.missing(f);
        let mut record = std::mem::take(&mut self.record);
        record.clear();
        (self.render_change)(
            &Change {
                diff: &c.diff,
                class: c.class.as_ref(),
                baseline_estimate: None,
                candidate_estimate: None,
                steps: None,
            },
            &mut record,
        );
        let last = !c.diff.pending();
        let written = self.push(|buf| {
            buf.extend_from_slice(b"{\"at\":");
            write_at(buf, at);
            if let Some(q) = &queue {
                buf.extend_from_slice(b",\"missingQueue\":");
                serde_json::to_writer(&mut *buf, q).map_err(io::Error::other)?;
            }
            if last {
                buf.extend_from_slice(b",\"n\":");
                buf.extend_from_slice(itoa::Buffer::new().format(record.len()).as_bytes());
            }
            buf.extend_from_slice(b",\"change\":");
            buf.extend_from_slice(&record);
            if kept || !last {
                buf.extend_from_slice(b",\"more\":");
                serde_json::to_writer(&mut *buf, &MoreOut::of(&c)).map_err(io::Error::other)?;
            }
            buf.push(b'}');
            Ok(())
        });
        self.record = record;
        written
    }

    /// A job nothing else lists: listed only when it is the first of a missing queue.
    pub fn fallback(&mut self, at: &Pos, job: &str, f: Option<Fallback>) -> io::Result<()> {
        let Some(queue) = self.missing(f) else {
            return Ok(());
        };
        self.entry(&EntryOut {
            missing_queue: Some(&queue),
            job_id: Some(job),
            ..EntryOut::at(at)
        })
    }

    pub fn error(&mut self, at: &Pos, message: &str) -> io::Result<()> {
        self.entry(&EntryOut {
            error: Some(message),
            ..EntryOut::at(at)
        })
    }

    /// An invalid history file: its diagnostics, rendered.
    pub fn invalid(&mut self, at: &Pos, file: &SourceFile) -> io::Result<()> {
        let text = (self.render_invalid)(file);
        self.entry(&EntryOut {
            invalid: Some(&text),
            ..EntryOut::at(at)
        })
    }

    pub fn left_out(&mut self, at: &Pos, text: &str) -> io::Result<()> {
        self.entry(&EntryOut {
            left_out: Some(text),
            ..EntryOut::at(at)
        })
    }

    /// The end: the entries' count, the history's digest and the totals.
    pub fn end<T: Serialize>(mut self, source: Option<u64>, totals: T, lookout: Option<Lookout>) -> io::Result<()> {
        if self.entries > 0 {
            self.held.push(b'\n');
            self.write_held()?;
        }
        let end = End {
            entries: self.entries,
            used_given: self.fallbacks.used_given,
            source: source.map(|d| format!("{d:016x}")),
            totals,
            lookout,
        };
        self.held.extend_from_slice(END.as_bytes());
        serde_json::to_writer(&mut self.held, &end).map_err(io::Error::other)?;
        self.write_held()?;
        let seal = seal_hex(&self.seal);
        self.out.write_all(format!("{SEAL}{seal}\"}}\n").as_bytes())?;
        self.out.flush()
    }
}

/// `[A,B]`, a position as `Pos` serializes, written by hand: every entry of a partial starts
/// with one, and serde's writer went through `fmt` for each number.
fn write_at(buf: &mut Vec<u8>, at: &Pos) {
    let mut n = itoa::Buffer::new();
    buf.push(b'[');
    buf.extend_from_slice(n.format(at.0).as_bytes());
    buf.push(b',');
    buf.extend_from_slice(n.format(at.1).as_bytes());
    buf.push(b']');
}

/// A job's report as a partial holds it: every field, so that `merge` prints any format.
pub fn render_job(report: &JobReport, buf: &mut Vec<u8>) {
    // A report is numbers and strings: it always serializes.
    let _ = serde_json::to_writer(buf, report);
}

/// A changed job's rest, after its record (which a Pending side's estimate aside, is what
/// `-o json` prints): `[baselineRunsLeft, baselineCompute, candidateRunsLeft,
/// candidateCompute, resources, class, depth, steps]`, durations in nanoseconds, steps as
/// [`StepsOut`].
#[derive(Serialize)]
struct MoreOut<'a>(
    u32,
    u64,
    u32,
    u64,
    &'a Option<Resources>,
    &'a Option<FailureClass>,
    u32,
    StepsOut<'a>,
);

/// A changed job's steps as a partial holds them: `[[[code, class], …], gap]`, each run as
/// one number for its outcome and both sides' steps (`outcome × 36 + baseline × 6 +
/// candidate`, by their places in `Outcome::ALL` and `Step::ALL`) and its failure class;
/// a run's number is its place (after the gap, the gap's count added). The shards of a plan
/// write the steps of up to 500 jobs per transition each, the most a shard writes, and
/// N shards N times as many: the names of outcomes and steps, written and escaped for every
/// run, were most of what sixteen shards paid more than four.
struct StepsOut<'a>(&'a Option<Box<Steps>>);

/// The places of an outcome and a step in `Outcome::ALL` and `Step::ALL`.
fn place<T: PartialEq>(all: &[T], x: &T) -> usize {
    all.iter().position(|a| a == x).unwrap_or(0)
}

impl Serialize for StepsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        struct Runs<'a>(&'a [RunStep]);
        impl Serialize for Runs<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for r in self.0 {
                    let code = place(&Outcome::ALL, &r.outcome) * 36
                        + place(&Step::ALL, &r.baseline) * 6
                        + place(&Step::ALL, &r.candidate);
                    seq.serialize_element(&(code, &r.class))?;
                }
                seq.end()
            }
        }
        match self.0 {
            None => s.serialize_none(),
            Some(steps) => (Runs(&steps.runs), steps.gap).serialize(s),
        }
    }
}

/// [`StepsOut`] read back.
type StepsIn = Option<(Vec<(usize, Option<FailureClass>)>, Option<(usize, usize)>)>;

fn steps_of(wire: StepsIn) -> Result<Option<Box<Steps>>, String> {
    let Some((runs, gap)) = wire else { return Ok(None) };
    if gap.is_some_and(|(at, _)| at > runs.len()) {
        return Err(format!(
            "its steps' gap is at step {}, past their {} steps (expected one among them)",
            gap.map_or(0, |(at, _)| at),
            runs.len()
        ));
    }
    let runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, (code, class))| {
            let (o, b, c) = (code / 36, code / 6 % 6, code % 6);
            let outcome = *Outcome::ALL
                .get(o)
                .ok_or_else(|| format!("a step's code `{code}` is not one a shard writes (0 to 143)"))?;
            let run = match gap {
                Some((at, skipped)) if i >= at => i + skipped,
                _ => i,
            };
            Ok(RunStep {
                run,
                outcome,
                class,
                baseline: Step::ALL[b],
                candidate: Step::ALL[c],
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Some(Box::new(Steps { runs, gap })))
}

impl MoreOut<'_> {
    fn of(c: &Changed) -> MoreOut<'_> {
        let d = &c.diff;
        MoreOut(
            d.baseline.runs_left,
            d.baseline.compute.0,
            d.candidate.runs_left,
            d.candidate.compute.0,
            &d.resources,
            &c.class,
            c.depth,
            StepsOut(&c.steps),
        )
    }
}

#[derive(Debug, Deserialize)]
#[serde(
    expecting = "the rest of a changed job: [baselineRunsLeft, baselineCompute, candidateRunsLeft, candidateCompute, resources, class, depth, steps]"
)]
struct MoreIn(
    u32,
    u64,
    u32,
    u64,
    Option<Resources>,
    Option<FailureClass>,
    u32,
    StepsIn,
);

/// A changed job's record as read back (`-o json`'s shape: the output module writes it,
/// these names must follow it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RecordIn {
    job: String,
    baseline: SideIn,
    candidate: SideIn,
    transition: Option<String>,
    compute_added: String,
    compute_removed: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SideIn {
    #[serde(rename = "final")]
    final_state: Final,
    retries: u32,
    delay: String,
    runs: usize,
    /// A Pending side's: `null` here, always (the merge estimates it); anything else is
    /// refused.
    #[serde(default, rename = "estimate")]
    _estimate: Option<()>,
}

fn duration(field: &str, text: &str) -> Result<GoDuration, String> {
    GoDuration::parse(text).map_err(|_| {
        format!("its `{field}` `{text}` is not a duration: expected one as `-o json` writes it, such as `1m30s`")
    })
}

impl SideIn {
    fn side(self, name: &str, runs_left: u32, compute: u64) -> Result<Side, String> {
        Ok(Side {
            final_state: self.final_state,
            retries: self.retries,
            delay: duration(&format!("{name}.delay"), &self.delay)?,
            runs: self.runs,
            runs_left,
            compute: GoDuration(compute),
        })
    }
}

/// A changed job from its record and its rest. Without a rest (a final record past the jobs
/// that keep their steps: [`Recorder::change`]), what only the shard's totals and the
/// estimates read (each side's run time and runs left, the job's resources, class and depth)
/// is zero or none: no output prints it for such a job.
fn changed(record: RecordIn, more: Option<MoreIn>) -> Result<Changed, String> {
    let MoreIn(b_left, b_compute, c_left, c_compute, resources, class, depth, steps) =
        more.unwrap_or(MoreIn(0, 0, 0, 0, None, None, 0, None));
    let diff = JobDiff {
        job: record.job,
        baseline: record.baseline.side("baseline", b_left, b_compute)?,
        candidate: record.candidate.side("candidate", c_left, c_compute)?,
        compute_added: duration("computeAdded", &record.compute_added)?,
        compute_removed: duration("computeRemoved", &record.compute_removed)?,
        resources,
    };
    // The record's transition is the one its final states make: one written by hand
    // otherwise would be printed as it is by a merge that copies records.
    let transition = diff.transition().map(Transition::name);
    if record.transition.as_deref() != transition {
        return Err(format!(
            "its `transition` {} is not the one of its final states ({})",
            record.transition.map_or("null".into(), |t| format!("`{t}`")),
            transition.map_or("null".into(), |t| format!("`{t}`")),
        ));
    }
    Ok(Changed {
        diff,
        class,
        depth,
        steps: steps_of(steps)?,
    })
}

/// One entry as read back.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntryIn {
    at: Pos,
    missing_queue: Option<String>,
    job_id: Option<String>,
    job: Option<Box<JobReport>>,
    /// With `change`: the record's length, when it is final.
    n: Option<u64>,
    change: Option<Box<RecordIn>>,
    more: Option<Box<MoreIn>>,
    error: Option<String>,
    invalid: Option<String>,
    left_out: Option<String>,
}

/// What an entry says.
#[derive(Debug)]
pub enum Item {
    /// A plain replay's job.
    Job(Box<JobReport>),
    /// A comparison's changed job.
    Change(Box<Changed>),
    /// A comparison's changed job with no side Pending, as its JSON record, not read
    /// (asked for by a merge that prints JSON: [`decode_entry`]).
    Record(Record),
    /// A job listed for its missing queue alone.
    Fallback(String),
    Error(String),
    /// An invalid history file's diagnostics, rendered.
    Invalid(String),
    LeftOut(String),
}

/// A changed job's entry whose record is final (`"n":LEN` before it): the record copied as
/// it is, the rest read only when it must be ([`Record::changed`]).
#[derive(Debug)]
pub struct Record {
    json: Vec<u8>,
    record: std::ops::Range<usize>,
    number: u64,
}

impl Record {
    /// The record: what `-o json` prints for the job.
    pub fn json(&self) -> &[u8] {
        &self.json[self.record.clone()]
    }

    /// The whole entry read into a changed job; an error names the partial (`name`) and
    /// the entry.
    pub fn changed(&self, name: &str) -> Result<Changed, String> {
        match decode_entry(name, self.number, &self.json)?.item {
            Item::Change(c) => Ok(*c),
            _ => Err(format!("`{name}` is damaged: entry {}: not a changed job", self.number)),
        }
    }

    /// The job it names (read only for an error's words).
    pub fn job(&self, name: &str) -> String {
        self.changed(name).map_or_else(|_| "?".into(), |c| c.diff.job)
    }
}

/// `{"at":[A,B],"n":LEN,"change":` then LEN bytes of a record then `,"more":` or the
/// entry's end: where the
/// record is. `None` for any other entry (or one whose bytes do not hold that shape).
fn final_record(json: &[u8]) -> Option<std::ops::Range<usize>> {
    let rest = past_at(json)?;
    let rest = rest.strip_prefix(b",\"n\":")?;
    let (len, rest) = leading_number(rest)?;
    let len = usize::try_from(len).ok()?;
    let rest = rest.strip_prefix(b",\"change\":")?;
    let start = json.len() - rest.len();
    let record = rest.get(..len)?;
    let after = &rest[len..];
    if !(record.starts_with(b"{\"job\":")
        && record.ends_with(b"}")
        && (after == b"}" || after.starts_with(b",\"more\":")))
    {
        return None;
    }
    Some(start..start + len)
}

/// One entry: where, the missing queue it is the first job of (in its shard), and what.
#[derive(Debug)]
pub struct Entry {
    pub at: Pos,
    pub missing_queue: Option<String>,
    pub item: Item,
}

impl TryFrom<EntryIn> for Entry {
    type Error = String;

    fn try_from(e: EntryIn) -> Result<Entry, String> {
        let change = match (e.change, e.more) {
            (None, None) => None,
            (None, Some(_)) => return Err("a `more` must follow a changed job's `change`".into()),
            (Some(_), None) if e.n.is_none() => {
                return Err("a changed job without an `n` (a side Pending) must have its `more`".into())
            }
            (Some(record), more) => Some(Box::new(changed(*record, more.map(|m| *m))?)),
        };
        if e.n.is_some() && change.as_ref().is_none_or(|c| c.diff.pending()) {
            return Err("only a changed job with no side Pending has an `n`".into());
        }
        let items = [
            e.job.map(Item::Job),
            change.map(Item::Change),
            e.job_id.map(Item::Fallback),
            e.error.map(Item::Error),
            e.invalid.map(Item::Invalid),
            e.left_out.map(Item::LeftOut),
        ];
        let mut items = items.into_iter().flatten();
        let (Some(item), None) = (items.next(), items.next()) else {
            return Err("an entry must say one thing: a job, a change, an error, …".into());
        };
        Ok(Entry {
            at: e.at,
            missing_queue: e.missing_queue,
            item,
        })
    }
}

/// Lines longer than this are not a partial's (a report is far smaller; a tune's totals,
/// 10,000 candidates of a few hundred bytes each, too).
const MAX_LINE: u64 = 256 << 20;

/// One partial, checked on its own: its header and end read, its entries counted.
#[derive(Debug)]
pub struct Partial {
    /// As given on the command line.
    pub name: String,
    path: std::path::PathBuf,
    /// The file as it was checked, to find it the same when its entries are read again.
    identity: Identity,
    pub header: Header,
    /// The end without its totals: a sweep's are megabytes per partial, read again when
    /// they are added up ([`Partial::totals`]), one partial at a time.
    pub end: EndIn<serde::de::IgnoredAny>,
    /// Where the entries begin in the file (the header's length).
    entries_at: u64,
    /// Where the end line begins in the file, and its XXH3-128: the bytes the seal vouched for.
    end_at: u64,
    end_digest: u128,
    /// Its seal found right: by [`Partial::check`], or by its entries read to their end.
    verified: Arc<AtomicBool>,
}

/// A partial's end as read back: [`End`] with its totals in the shape the reader asks for.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct EndIn<T> {
    pub entries: u64,
    pub used_given: bool,
    pub source: Option<String>,
    pub totals: T,
    #[serde(default)]
    pub lookout: Option<Lookout>,
}

/// Why a partial was not read: what is wrong with it, or a limit of this machine (too many
/// files open), which is no fault of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// What is wrong with the file, in words that follow its name.
    Bad(String),
    /// The process (or the system) has as many files open as it may: `EMFILE`, `ENFILE`.
    TooManyOpen,
}

impl From<String> for ReadError {
    fn from(why: String) -> ReadError {
        ReadError::Bad(why)
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Bad(why) => f.write_str(why),
            ReadError::TooManyOpen => f.write_str("cannot be opened: too many files are open"),
        }
    }
}

/// Opens a partial (`what` went wrong, else): a full file table is told apart from a file
/// that cannot be read.
fn open_file(path: &Path) -> Result<File, ReadError> {
    File::open(path).map_err(|e| match e.raw_os_error() {
        #[cfg(unix)]
        Some(libc::EMFILE | libc::ENFILE) => ReadError::TooManyOpen,
        _ => ReadError::Bad(format!("cannot be read: {}", crate::input::io_reason(&e))),
    })
}

/// What tells a file apart from another put in its place, or from itself changed: its
/// device and inode, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    device_inode: (u64, u64),
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Identity {
    fn regular(meta: &std::fs::Metadata) -> Result<(), String> {
        if meta.is_file() {
            return Ok(());
        }
        Err("is not a regular file: merge reads a partial from its end first, which a pipe or a device cannot give; write it to a file first".into())
    }

    /// `Err` for what is not a regular file: a partial's end is read first, then its
    /// entries, which a pipe or a device cannot give (a FIFO hung merge).
    fn of(file: &File) -> Result<Identity, String> {
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot be read: {}", crate::input::io_reason(&e)))?;
        Identity::regular(&meta)?;
        #[cfg(unix)]
        let device_inode = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let device_inode = (0, 0);
        Ok(Identity {
            device_inode,
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// Reads a line of at most [`MAX_LINE`] bytes into `buf` (cleared); `Ok(false)` at the end.
fn read_line<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> Result<bool, String> {
    // `read_until`'s newline search goes a word at a time; a merge searches every byte of
    // every partial, twice: the memchr crate's SIMD search, over the reader's own buffer.
    buf.clear();
    loop {
        let (done, used) = {
            let available = match r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(crate::input::io_reason(&e)),
            };
            match memchr::memchr(b'\n', available) {
                Some(i) => {
                    buf.extend_from_slice(&available[..=i]);
                    (true, i + 1)
                }
                None => {
                    buf.extend_from_slice(available);
                    (available.is_empty(), available.len())
                }
            }
        };
        r.consume(used);
        if buf.len() as u64 > MAX_LINE {
            return Err(format!("has a line longer than {} MiB", MAX_LINE >> 20));
        }
        if done {
            return Ok(!buf.is_empty());
        }
    }
}

/// A partial's file opened, what it is, and its first line (the header), read: `Err` for
/// what is not a regular file or does not begin as a partial.
fn first_line(path: &Path) -> Result<(BufReader<File>, Identity, Vec<u8>), ReadError> {
    // Looked at before it is opened: opening a named pipe waits for a writer.
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {}", crate::input::io_reason(&e)))?;
    Identity::regular(&meta)?;
    let file = open_file(path)?;
    let identity = Identity::of(&file)?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    // A file that does not begin as a partial is refused on its first bytes, not after a
    // first line of up to 256 MiB.
    let start = r.fill_buf().map_err(|e| crate::input::io_reason(&e))?;
    if !MAGIC.as_bytes().starts_with(&start[..start.len().min(MAGIC.len())]) || start.is_empty() {
        return Err(not_a_partial().into());
    }
    let mut line = Vec::new();
    read_line(&mut r, &mut line)?;
    Ok((r, identity, line))
}

impl Partial {
    /// Reads `path`'s header and its end (from the file's tail); `Err` says what is wrong
    /// with it (not a partial, a newer version, truncated, damaged). Its seal is checked as
    /// its entries are read ([`Partial::entries`], to their end) or by [`Partial::check`]:
    /// a merge reads each partial once. A file that does not end as a partial written whole
    /// does is read through at once, for the words of what is wrong with it.
    pub fn open(path: &Path) -> Result<Partial, ReadError> {
        let (r, identity, line) = first_line(path)?;
        let header = header(&line)?;
        let entries_at = line.len() as u64;
        let Some((end_at, line)) = tail_line(r.get_ref(), identity.len, entries_at)? else {
            return Partial::open_checked(path);
        };
        if !line.starts_with(END.as_bytes()) {
            return Partial::open_checked(path);
        }
        let end: EndIn<serde::de::IgnoredAny> = end(&line, None)?;
        Ok(Partial {
            name: path.display().to_string(),
            path: path.to_path_buf(),
            identity,
            header,
            end,
            entries_at,
            end_at,
            end_digest: xxhash_rust::xxh3::xxh3_128(&line),
            verified: Arc::default(),
        })
    }

    /// Its seal checked, by reading it through, when its entries were not read to their
    /// end. `Err`: what is wrong with the file, in the words [`Partial::open`] has for them
    /// when it reads a file through (`changed while it was merged` when the file is no
    /// longer the one opened).
    pub fn check(&self) -> Result<(), ReadError> {
        if self.verified.load(Ordering::Relaxed) {
            return Ok(());
        }
        let whole = Partial::open_checked(&self.path)?;
        if whole.identity != self.identity || whole.end_at != self.end_at || whole.end_digest != self.end_digest {
            return Err(ReadError::Bad(
                "changed while it was merged (another file in its place, or written to since it was checked)".into(),
            ));
        }
        self.verified.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Reads `path` through: its header, every line into the seal and counted, its end
    /// checked against both.
    fn open_checked(path: &Path) -> Result<Partial, ReadError> {
        let name = path.display().to_string();
        let (mut r, identity, mut line) = first_line(path)?;
        let header = header(&line)?;
        let mut seal = Seal::new();
        seal.update(&line);
        let entries_at = line.len() as u64;
        let mut at = entries_at;
        let mut entries = 0u64;
        let truncated = |entries: u64| {
            format!(
                "is truncated: it ends after {entries} {} without its end (was its shard cut short?)",
                if entries == 1 { "entry" } else { "entries" }
            )
        };
        loop {
            // Every line a recorder writes ends with a newline: one without was cut.
            if !read_line(&mut r, &mut line)? || line.last() != Some(&b'\n') {
                return Err(truncated(entries).into());
            }
            if line.starts_with(END.as_bytes()) {
                break;
            }
            seal.update(&line);
            at += line.len() as u64;
            entries += 1;
        }
        let end: EndIn<serde::de::IgnoredAny> = end(&line, Some(seal))?;
        let end_digest = xxhash_rust::xxh3::xxh3_128(&line);
        if read_line(&mut r, &mut line)? && !line.trim_ascii().is_empty() {
            return Err(ReadError::Bad("is damaged: there is more after its end".into()));
        }
        if end.entries != entries {
            return Err(ReadError::Bad(format!(
                "is damaged: its end says {} entries, it holds {entries}",
                end.entries
            )));
        }
        Ok(Partial {
            name,
            path: path.to_path_buf(),
            identity,
            header,
            end,
            entries_at,
            end_at: at,
            end_digest,
            verified: Arc::new(AtomicBool::new(true)),
        })
    }

    /// The file opened again, checked to be the one [`Partial::open`] read.
    fn reopen(&self) -> Result<File, ReadError> {
        let file = open_file(&self.path).map_err(|e| match e {
            ReadError::Bad(why) => ReadError::Bad(format!("`{}` {why}", self.name)),
            limit => limit,
        })?;
        // The file checked, unchanged: its seal vouched for those bytes, not for these.
        if Identity::of(&file).map_err(|e| format!("`{}` {e}", self.name))? != self.identity {
            return Err(ReadError::Bad(format!(
                "`{}` changed while it was merged (another file in its place, or written to since it was checked)",
                self.name
            )));
        }
        Ok(file)
    }

    /// The shard's totals, in the shape `T` of its command (the end line read again, and
    /// checked to be the bytes the seal vouched for). An error names the file.
    pub fn totals<T: serde::de::DeserializeOwned>(&self) -> Result<T, ReadError> {
        use std::io::{Seek, SeekFrom};
        let mut file = self.reopen()?;
        let named = |why: String| ReadError::Bad(format!("`{}` {why}", self.name));
        file.seek(SeekFrom::Start(self.end_at))
            .map_err(|e| named(crate::input::io_reason(&e)))?;
        let mut line = Vec::new();
        read_line(&mut BufReader::new(file), &mut line).map_err(named)?;
        if xxhash_rust::xxh3::xxh3_128(&line) != self.end_digest {
            return Err(named(
                "changed while it was merged (its end is not the one that was checked)".into(),
            ));
        }
        let end: EndIn<T> = end(&line, None).map_err(named)?;
        Ok(end.totals)
    }

    /// The entries, in order (the file is read again, as a stream). An entry that does not
    /// read is an error naming the file and the entry.
    pub fn entries(&self) -> Result<Entries, ReadError> {
        let file = self.reopen()?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        // The header into the seal a piece at a time, not as a line: a sweep's names every
        // candidate (a MiB for 4,000), and a buffer that held it, kept by each of 256
        // streams, was most of what a merge held.
        let mut seal = Seal::new();
        let mut left = self.entries_at;
        while left > 0 {
            let buf = reader
                .fill_buf()
                .map_err(|e| ReadError::Bad(format!("`{}` {}", self.name, crate::input::io_reason(&e))))?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            seal.update(&buf[..n]);
            reader.consume(n);
            left -= n as u64;
        }
        Ok(Entries {
            name: self.name.clone(),
            reader,
            line: Vec::new(),
            left: self.end.entries,
            read: 0,
            seal: (!self.verified.load(Ordering::Relaxed)).then(|| {
                Box::new(Ending {
                    seal,
                    at: self.entries_at,
                    end_at: self.end_at,
                    end_digest: self.end_digest,
                    verified: Arc::clone(&self.verified),
                })
            }),
        })
    }
}

/// The header line: `{"partial":"retryctl","version":V,…,"entries":[`.
fn not_a_partial() -> String {
    "is not a retryctl partial result (one begins with `{\"partial\":\"retryctl\"`; `simulate … -o partial` writes them)".to_string()
}

/// `a.b.c` (a pre-release or build suffix ignored) as numbers, for "newer than".
fn release(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

fn header(line: &[u8]) -> Result<Header, String> {
    let not = not_a_partial;
    let text = std::str::from_utf8(line).map_err(|_| not())?.trim_end();
    let rest = text.strip_prefix(MAGIC).ok_or_else(not)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let version: u64 = digits.parse().map_err(|_| not())?;
    if version > VERSION {
        return Err(format!(
            "was written by a newer retryctl (partial version {version}; this one reads version {VERSION}): merge with that retryctl"
        ));
    }
    if version < VERSION {
        return Err(format!(
            "was written by an older retryctl (partial version {version}; this one reads version {VERSION}): run its shard again with this retryctl"
        ));
    }
    let body = text
        .strip_suffix(ENTRIES)
        .ok_or_else(|| "is damaged: its first line is not a partial's header".to_string())?;
    let header: Header =
        serde_json::from_str(&format!("{body}}}")).map_err(|e| format!("is damaged: its header: {e}"))?;
    if header.partial != "retryctl" || header.shard.count == 0 || header.shard.index >= header.shard.count {
        return Err("is damaged: its header's shard is not I/N with 0 ≤ I < N".into());
    }
    // No retryctl writes more (`--shard` refuses it), and merge names what is missing.
    let max = super::shard::MAX_SHARDS;
    if header.shard.count > max {
        return Err(format!(
            "is damaged: its header's shard is {}/{}, of more than {max} shards",
            header.shard.index, header.shard.count
        ));
    }
    // A newer retryctl may count what this one does not know: its own merge must add it up.
    let ours = env!("CARGO_PKG_VERSION");
    let newer = match (release(&header.retryctl), release(ours)) {
        (Some(theirs), Some(mine)) => theirs > mine,
        (None, _) => header.retryctl != ours,
        _ => false,
    };
    if newer {
        return Err(format!(
            "was written by retryctl {}, newer than this one ({ours}): merge with that retryctl",
            header.retryctl
        ));
    }
    Ok(header)
}

/// The end line, `],"end":{…},"xxh3":"…"}`, checked against the seal of every byte before
/// it (`seal`: the lines before it, so far).
fn end<T: serde::de::DeserializeOwned>(line: &[u8], seal: Option<Seal>) -> Result<EndIn<T>, String> {
    let damaged = |why: String| format!("is damaged: its end: {why}");
    let text = std::str::from_utf8(line)
        .map_err(|_| damaged("not UTF-8".into()))?
        .trim_end();
    let shape = || damaged("not `],\"end\":{…},\"xxh3\":\"…\"}`".into());
    let at = text.rfind(SEAL).ok_or_else(shape)?;
    let (sealed, rest) = text.split_at(at);
    let given = rest[SEAL.len()..].strip_suffix("\"}").ok_or_else(shape)?;
    if let Some(mut seal) = seal {
        seal.update(sealed.as_bytes());
        if given != seal_hex(&seal) {
            return Err(
                "is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)".into(),
            );
        }
    }
    let body = sealed.strip_prefix(END).ok_or_else(shape)?;
    serde_json::from_str(body).map_err(|e| damaged(e.to_string()))
}

/// The last line of a file of `len` bytes whose lines from `from` on are the entries and
/// the end, and where it begins: `None` when the file does not end with a newline, or that
/// line is longer than [`MAX_LINE`]. Read backwards from the end, a piece at a time.
fn tail_line(file: &File, len: u64, from: u64) -> Result<Option<(u64, Vec<u8>)>, String> {
    const PIECE: u64 = 1 << 16;
    let io = |e: io::Error| format!("cannot be read: {}", crate::input::io_reason(&e));
    if len <= from {
        return Ok(None);
    }
    let mut last = [0u8];
    if read_exact_at(file, &mut last, len - 1).map_err(io)? != 1 || last[0] != b'\n' {
        return Ok(None);
    }
    // The bytes before the final newline, back to the newline before them.
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    let mut upto = len - 1;
    let start = loop {
        if len - upto > MAX_LINE {
            return Ok(None);
        }
        let lo = upto.saturating_sub(PIECE).max(from);
        let mut buf = vec![0u8; (upto - lo) as usize];
        if read_exact_at(file, &mut buf, lo).map_err(io)? != buf.len() {
            return Ok(None);
        }
        if let Some(i) = memchr::memrchr(b'\n', &buf) {
            pieces.push(buf.split_off(i + 1));
            break lo + i as u64 + 1;
        }
        pieces.push(buf);
        if lo == from {
            break from;
        }
        upto = lo;
    };
    let mut line = Vec::with_capacity((len - start) as usize);
    for piece in pieces.iter().rev() {
        line.extend_from_slice(piece);
    }
    line.push(b'\n');
    Ok(Some((start, line)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A partial's entries, read one at a time.
pub struct Entries {
    name: String,
    reader: BufReader<File>,
    line: Vec<u8>,
    left: u64,
    read: u64,
    /// The seal of the bytes read so far, checked at the end line: `None` when the partial
    /// was checked already.
    seal: Option<Box<Ending>>,
}

/// What the end of a partial's entries is checked against: every byte before it in the
/// seal, the end line where [`Partial::open`] found it and as it was then.
struct Ending {
    seal: Seal,
    /// Where the next line begins in the file.
    at: u64,
    end_at: u64,
    end_digest: u128,
    verified: Arc<AtomicBool>,
}

impl Ending {
    /// `line` (the one after the last entry) is the end [`Partial::open`] read, and the
    /// seal in it vouches for every byte before it.
    fn check(self: Box<Self>, line: &[u8]) -> Result<(), String> {
        let whole = self.at == self.end_at && xxhash_rust::xxh3::xxh3_128(line) == self.end_digest;
        if !whole || end::<serde::de::IgnoredAny>(line, Some(self.seal)).is_err() {
            return Err("its entries do not end where its end says (was it changed?)".into());
        }
        self.verified.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// An entry as its partial holds it: its position, its number in the file (from 1) and its
/// JSON, decoded by [`decode_entry`]. A merge of more partials than it keeps open sorts
/// these through temporary files before it decodes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub at: Pos,
    pub number: u64,
    pub json: Vec<u8>,
}

/// `{"at":[A,B],…`: what every recorder writes first, read without decoding the rest.
fn quick_at(json: &[u8]) -> Option<Pos> {
    at_prefix(json).map(|(at, _)| at)
}

/// `{"at":[A,B]`: the position, and the bytes after it.
fn at_prefix(json: &[u8]) -> Option<(Pos, &[u8])> {
    at_shape(json, leading_number).map(|(a, b, rest)| (Pos(a, b), rest))
}

/// What follows `{"at":[A,B]`, its numbers passed over, not read: the merge has read the
/// position already ([`quick_at`]), and reads the rest of a changed job's entry here.
fn past_at(json: &[u8]) -> Option<&[u8]> {
    at_shape(json, past_digits).map(|(_, _, rest)| rest)
}

/// What follows the decimal digits `bytes` begins with (`None`: no digit), as [`at_shape`]
/// takes a number: nothing made of the digits.
fn past_digits(bytes: &[u8]) -> Option<((), &[u8])> {
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    (digits > 0).then(|| ((), &bytes[digits..]))
}

/// The shape of `{"at":[A,B]`, each number taken by `number` (what it makes of the digits,
/// and what follows them), and the bytes after it.
fn at_shape<T>(json: &[u8], number: impl Fn(&[u8]) -> Option<(T, &[u8])>) -> Option<(T, T, &[u8])> {
    let rest = json.strip_prefix(b"{\"at\":[")?;
    let (a, rest) = number(rest)?;
    let (b, rest) = number(rest.strip_prefix(b",")?)?;
    Some((a, b, rest.strip_prefix(b"]")?))
}

/// The decimal digits `bytes` begins with, as a number (`None`: no digit, or past `u64`),
/// and what follows them. A merge reads every entry's position this way.
fn leading_number(bytes: &[u8]) -> Option<(u64, &[u8])> {
    // One pass (counting the digits first, then reading them, took twice the instructions),
    // unchecked for the first 19 digits, which never overflow a `u64`; checked past them.
    let digit = |i: usize| bytes.get(i).map(|b| b.wrapping_sub(b'0')).filter(|&d| d <= 9);
    let mut n: u64 = 0;
    let mut digits = 0;
    while digits < 19 {
        let Some(d) = digit(digits) else { break };
        n = n * 10 + u64::from(d);
        digits += 1;
    }
    while let Some(d) = digit(digits) {
        n = n.checked_mul(10)?.checked_add(u64::from(d))?;
        digits += 1;
    }
    (digits > 0).then(|| (n, &bytes[digits..]))
}

/// The position of an entry.
#[derive(Deserialize)]
struct AtOnly {
    at: Pos,
}

/// An entry of the partial `name`, its `number`th, at `at` (its position, read already), as
/// a merge printing JSON reads it: a changed job whose record is final is left as that record
/// ([`Item::Record`]), the rest not read; any other entry decoded ([`decode_entry`]).
pub fn decode_for_records(name: &str, at: Pos, number: u64, json: Vec<u8>) -> Result<Entry, String> {
    match final_record(&json) {
        Some(record) => Ok(Entry {
            at,
            missing_queue: None,
            item: Item::Record(Record { json, record, number }),
        }),
        _ => decode_entry(name, number, &json),
    }
}

/// An entry of the partial `name`, its `number`th, decoded; an error names both.
pub fn decode_entry(name: &str, number: u64, json: &[u8]) -> Result<Entry, String> {
    let bad = |why: String| format!("`{name}` is damaged: entry {number}: {why}");
    let e: EntryIn = serde_json::from_slice(json).map_err(|e| bad(e.to_string()))?;
    Entry::try_from(e).map_err(bad)
}

impl Entries {
    /// The next entry, its position read and the rest left as JSON.
    pub fn next_raw(&mut self) -> Option<Result<RawEntry, String>> {
        if self.left == 0 {
            // Past the last entry: the end line, and the seal checked once.
            let ending = self.seal.take()?;
            let name = &self.name;
            let read = read_line(&mut self.reader, &mut self.line);
            return match read {
                Ok(true) => ending.check(&self.line),
                Ok(false) => Err("the file ends before its end (was it changed while it was merged?)".into()),
                Err(why) => Err(why),
            }
            .err()
            .map(|why| Err(format!("`{name}` is damaged: {why}")));
        }
        self.left -= 1;
        self.read += 1;
        let k = self.read;
        let name = &self.name;
        let bad = |why: String| format!("`{name}` is damaged: entry {k}: {why}");
        let left = self.left;
        let seal = &mut self.seal;
        let mut take = |line: &[u8]| {
            if let Some(ending) = seal {
                ending.seal.update(line);
                ending.at += line.len() as u64;
            }
            let mut text = line.trim_ascii_end();
            if left > 0 {
                text = text
                    .strip_suffix(b",")
                    .ok_or_else(|| bad("is not followed by a comma".into()))?;
            }
            let at = match quick_at(text) {
                Some(at) => at,
                None => {
                    serde_json::from_slice::<AtOnly>(text)
                        .map_err(|e| bad(e.to_string()))?
                        .at
                }
            };
            Ok(RawEntry {
                at,
                number: k,
                json: text.to_vec(),
            })
        };
        // Most lines are whole in the reader's buffer: read there, they are copied once (into
        // the entry), not first into `line`. A line the buffer cuts, and any error, go the
        // long way.
        let whole = match self.reader.fill_buf() {
            Ok(buffered) => memchr::memchr(b'\n', buffered).map(|i| i + 1),
            Err(_) => None,
        };
        if let Some(n) = whole {
            let entry = take(&self.reader.buffer()[..n]);
            self.reader.consume(n);
            return Some(entry);
        }
        Some(match read_line(&mut self.reader, &mut self.line).map_err(&bad) {
            Ok(true) => take(&self.line),
            Ok(false) => Err(bad(
                "the file ends before it (was it changed while it was merged?)".into()
            )),
            Err(why) => Err(why),
        })
    }
}

impl Iterator for Entries {
    type Item = Result<Entry, String>;

    fn next(&mut self) -> Option<Result<Entry, String>> {
        let raw = self.next_raw()?;
        Some(raw.and_then(|r| decode_entry(&self.name, r.number, &r.json)))
    }
}

#[cfg(test)]
mod tests;
