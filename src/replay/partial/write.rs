//! Writing a partial: the [`Recorder`] writes the header at once, each entry as it comes, and
//! the end and its seal last.
//!
//! Owns: the bytes of each entry as written (its position written by hand, a changed job's
//! record copied as `-o json` renders it, with its length when it is final), which missing
//! queues a shard lists (the first job of each in this shard), and which changed jobs keep
//! their steps ([`StepsCut`], which the workers read to build no more). Must not: read a
//! partial, decide what a shard lists or counts (that is `run` and the folds), or word
//! anything for people (an invalid history file's diagnostics come rendered).

use std::io::{self, Write};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::engine::JobReport;
use crate::input::SourceFile;
use crate::replay::compare::Transition;
use crate::replay::fallback::{Fallback, Fallbacks};
use crate::replay::shard_ids::FileIds;
use crate::replay::sink::{Change, RenderChange};
use crate::replay::source::Pos;
use crate::replay::spool::Changed;

use super::format::{seal_hex, End, Header, Lookout, MoreOut, Seal, END, ENTRIES, SEAL};

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
    /// A directory's shard: the job ids it replayed, for its end ([`Recorder::job_ids`]).
    job_ids: Option<Vec<FileIds>>,
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
            job_ids: None,
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

    /// What a `suggest` shard learned past its first 10,000 signatures, in the command's own
    /// shape (docs/past-one-machine.md): `{"at":[A,B],"learned":…}`, `at` the last job read
    /// when it was written. A shard writes these as it goes, so that it holds no more of
    /// them than one process keeps.
    pub fn learned<T: Serialize>(&mut self, at: &Pos, learned: &T) -> io::Result<()> {
        self.push(|buf| {
            buf.extend_from_slice(b"{\"at\":");
            write_at(buf, at);
            buf.extend_from_slice(b",\"learned\":");
            serde_json::to_writer(&mut *buf, learned).map_err(io::Error::other)?;
            buf.push(b'}');
            Ok(())
        })
    }

    /// The job ids the shard replayed, by file, which its end lists (`None`: not a directory
    /// of files, [`Noted::take`](crate::replay::shard_ids::Noted::take)).
    pub fn job_ids(&mut self, ids: Option<Vec<FileIds>>) {
        self.job_ids = ids;
    }

    /// The end: the entries' count, the history's digest, the totals and the job ids.
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
            job_ids: self.job_ids.take(),
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
pub(super) fn write_at(buf: &mut Vec<u8>, at: &Pos) {
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
