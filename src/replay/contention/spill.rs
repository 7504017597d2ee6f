//! The events of every job, handed back in time order, in fixed memory: an external sort.
//!
//! Histories come in job order, and a job's waits and retries span its whole life, so the
//! events of a history are in no time order the reader could rely on. They are gathered into a
//! chunk of [`Spill::CHUNK`] events; a history whose events fit is sorted in memory and
//! never touches a file. Past that, each full chunk is sorted and written, as a run, to one
//! anonymous temporary file (unlinked as soon as it is made: nothing is left of it whatever
//! ends the process, as the replay's spool of changed jobs); at the end the runs are merged,
//! each read a slice at a time so that the slices together hold at most [`Spill::MERGE`]
//! bytes whatever the number of runs. Memory is the chunk and the slices: fixed, whatever
//! the history's length; the file grows with the history (a dozen bytes or so an event, its
//! numbers in 7-bit groups: [`Event::encode`]). Several sides swept together share the chunk
//! and the file: an event is written once for all the sides it is of (its [`Event::set`]),
//! and handed back in time order alone.
//!
//! Owns: the chunk, the file and the merge. Must not: know what an event means (the sweep
//! does).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use super::events::Event;
use crate::replay::temp_file::anonymous_file;

/// Events gathered, spilled when the chunk is full, handed back sorted by time.
pub struct Spill {
    chunk: Vec<Event>,
    cap: usize,
    file: Option<BufWriter<File>>,
    /// The sorted runs in the file: `(first byte, bytes)`.
    runs: Vec<(u64, u64)>,
    written: u64,
    bytes: Vec<u8>,
    /// The chunk's times and places, sorted: a sort of 16-byte pairs, not of the events.
    order: Vec<(i64, u32)>,
}

impl Default for Spill {
    fn default() -> Spill {
        Spill::with_chunk(Spill::CHUNK)
    }
}

/// One run of the file as the merge reads it: the bytes read and not yet decoded, the event
/// at its front, and where the rest of the run starts.
struct Cursor {
    bytes: Vec<u8>,
    at: usize,
    next: u64,
    end: u64,
    /// The time of the event decoded last (the events' times are steps from it).
    before: i64,
    front: Option<Event>,
}

impl Spill {
    /// Events sorted in memory at a time (about 0.9 MiB, and 256 KiB of their order): the
    /// section sits inside `simulate`'s memory bar (64 MiB) beside the replay; at 2^18 it
    /// took `simulate --baseline` of 200,000 jobs to 76 MiB, at 2^16 to 58 MiB, at 2^14 52–53
    /// MiB for the same CPU (BENCHMARKS.md, 2026-11-29).
    pub const CHUNK: usize = 1 << 14;
    /// Bytes of the file the merge's slices hold together.
    pub const MERGE: usize = 1 << 22;

    /// A spill whose chunk holds `cap` events (at least 1, at most 2^32 - 1).
    pub fn with_chunk(cap: usize) -> Spill {
        Spill {
            chunk: Vec::new(),
            // At most 2^32 events, so that `order` can say where each is in 32 bits.
            cap: cap.clamp(1, u32::MAX as usize),
            file: None,
            runs: Vec::new(),
            written: 0,
            bytes: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Whether the events went past one chunk, to the file.
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    pub fn push(&mut self, e: Event) -> io::Result<()> {
        self.chunk.push(e);
        if self.chunk.len() >= self.cap {
            self.write_run()?;
        }
        Ok(())
    }

    /// The chunk sorted and written as one run.
    fn write_run(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        self.sort();
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let f = anonymous_file("the contention events")?;
                self.file.insert(BufWriter::with_capacity(256 * 1024, f))
            }
        };
        self.bytes.clear();
        let mut before = 0;
        for &(t, at) in &self.order {
            self.chunk[at as usize].encode(before, &mut self.bytes);
            before = t;
        }
        file.write_all(&self.bytes)?;
        let n = self.bytes.len() as u64;
        self.runs.push((self.written, n));
        self.written += n;
        self.chunk.clear();
        Ok(())
    }

    /// The chunk's order by time into `order` (of equal times, as pushed). The events stay
    /// where they are: sorting them moved 56 bytes at each step. Measured, the pairs' sort
    /// takes half the CPU the events' did (4.8% of a comparison with the section, 8.8%
    /// before), but reading the events in that order misses the cache about as much again
    /// (BENCHMARKS.md "2026-11-29, 10:34–10:58 UTC").
    fn sort(&mut self) {
        self.order.clear();
        self.order
            .extend(self.chunk.iter().enumerate().map(|(at, e)| (e.t, at as u32)));
        self.order.sort_unstable();
    }

    /// Hands every event to `f` in order of time (of equal times, in no promised order).
    pub fn drain(mut self, mut f: impl FnMut(&Event)) -> io::Result<()> {
        if self.file.is_none() {
            self.sort();
            self.order.iter().for_each(|&(_, at)| f(&self.chunk[at as usize]));
            return Ok(());
        }
        self.write_run()?;
        let Some(writer) = self.file.take() else {
            return Ok(());
        };
        let mut file = writer.into_inner().map_err(|e| e.into_error())?;
        let per_run = (Spill::MERGE / self.runs.len()).max(16 * Event::MAX_BYTES) as u64;
        let mut cursors: Vec<Cursor> = self
            .runs
            .iter()
            .map(|&(first, n)| Cursor {
                bytes: Vec::new(),
                at: 0,
                next: first,
                end: first + n,
                before: 0,
                front: None,
            })
            .collect();
        let mut heap = BinaryHeap::with_capacity(cursors.len());
        for (i, c) in cursors.iter_mut().enumerate() {
            advance(&mut file, c, per_run)?;
            if let Some(e) = &c.front {
                heap.push(Reverse((e.t, i)));
            }
        }
        while let Some(Reverse((_, i))) = heap.pop() {
            let c = &mut cursors[i];
            if let Some(e) = &c.front {
                f(e);
            }
            advance(&mut file, c, per_run)?;
            if let Some(e) = &c.front {
                heap.push(Reverse((e.t, i)));
            }
        }
        Ok(())
    }
}

/// The run's next event to its front (none left: none), reading at most `n` more bytes of
/// the run when fewer than one event's are left.
fn advance(file: &mut File, c: &mut Cursor, n: u64) -> io::Result<()> {
    if c.bytes.len() - c.at < Event::MAX_BYTES && c.next < c.end {
        c.bytes.drain(..c.at);
        c.at = 0;
        let take = n.min(c.end - c.next);
        let from = c.bytes.len();
        c.bytes.resize(from + take as usize, 0);
        file.seek(SeekFrom::Start(c.next))?;
        file.read_exact(&mut c.bytes[from..])?;
        c.next += take;
    }
    if c.at == c.bytes.len() {
        c.front = None;
        return Ok(());
    }
    let (e, used) = Event::decode(&c.bytes[c.at..], c.before)
        .ok_or_else(|| io::Error::other("the temporary file of contention events is corrupt"))?;
    c.at += used;
    c.before = e.t;
    c.front = Some(e);
    Ok(())
}
