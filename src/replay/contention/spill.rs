//! The events of every job, handed back in time order, in fixed memory: an external sort.
//!
//! Histories come in job order, and a job's waits and retries span its whole life, so the
//! events of a history are in no time order the reader could rely on. They are gathered into a
//! chunk of [`Spill::CHUNK`] events; a history whose events fit is sorted in memory and
//! never touches a file. Past that, each full chunk is sorted and written, as a run, to one
//! anonymous temporary file (unlinked as soon as it is made: nothing is left of it whatever
//! ends the process, as the replay's spool of changed jobs); at the end the runs are merged,
//! each joining the merge when it reaches the run's first event (the runs of a history in
//! order of submission follow one another in time: the merge holds the few that overlap),
//! each read a slice at a time so that the slices together hold at most [`Spill::MERGE`]
//! bytes whatever the number of runs. Memory is the chunk and the slices: fixed, whatever
//! the history's length; the file grows with the history (15 bytes or so an event, each number
//! in the bytes it needs: [`Event::encode`]). Several sides swept together share the chunk
//! and the file: an event is written once for all the sides it is of (its [`Event::set`]),
//! and handed back in time order alone.
//!
//! Owns: the chunk, the file and the merge. Must not: know what an event means (the sweep
//! does).

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use super::events::{Event, Widths};
use crate::replay::temp_file::anonymous_file;

/// Events gathered, spilled when the chunk is full, handed back sorted by time.
pub struct Spill {
    chunk: Vec<Event>,
    cap: usize,
    file: Option<BufWriter<File>>,
    /// The sorted runs in the file.
    runs: Vec<Run>,
    written: u64,
    bytes: Vec<u8>,
    /// Where the chunk's events are, in order of time: each in the low [`Spill::place_bits`]
    /// bits, above them the step of its time from the chunk's earliest (see [`Spill::sort`]).
    order: Vec<u64>,
}

/// One sorted run in the file.
#[derive(Debug, Clone, Copy)]
struct Run {
    first: u64,
    bytes: u64,
    /// The time of its first event.
    t: i64,
    widths: Widths,
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
    widths: Widths,
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
    /// Events the chunk has room for past [`Spill::CHUNK`]: the chunk is full when a job's
    /// events have taken it there, and its last job's pass it (most jobs make a dozen).
    const SLACK: usize = 1 << 10;

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

    /// Events `add` pushes to the chunk (one job's: what is there already is not to be
    /// touched), made there rather than copied in. The chunk can pass its size by what one
    /// call adds.
    pub fn add(&mut self, add: impl FnOnce(&mut Vec<Event>)) -> io::Result<()> {
        // Room for the last job past the chunk's size, so that it does not double the chunk.
        let room = self.cap + Spill::SLACK;
        if (self.cap..room).contains(&self.chunk.capacity()) {
            self.chunk.reserve_exact(room - self.chunk.len());
        }
        add(&mut self.chunk);
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
        let mask = self.place_mask();
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let f = anonymous_file("the contention events")?;
                self.file.insert(BufWriter::with_capacity(256 * 1024, f))
            }
        };
        // Room for every event at its longest, kept from one chunk to the next: each event
        // written in place, with no check of the room at each byte.
        let room = self.order.len() * Event::MAX_BYTES + Event::WINDOW;
        if self.bytes.len() < room {
            self.bytes.resize(room, 0);
        }
        let first = self.order.first().map_or(0, |&k| self.chunk[(k & mask) as usize].t);
        let widths = Widths::of(&self.chunk);
        let mut before = 0;
        let mut n = 0;
        for &k in &self.order {
            let e = &self.chunk[(k & mask) as usize];
            let Some(b) = self.bytes[n..].first_chunk_mut() else {
                return Err(io::Error::other("the contention events outgrew their buffer"));
            };
            n += e.encode(before, widths, b);
            before = e.t;
        }
        file.write_all(&self.bytes[..n])?;
        let n = n as u64;
        self.runs.push(Run {
            first: self.written,
            bytes: n,
            t: first,
            widths,
        });
        self.written += n;
        self.chunk.clear();
        Ok(())
    }

    /// The bits of an entry of `order` that say where its event is: enough for `cap` places,
    /// or for the chunk's, past it.
    fn place_bits(&self) -> u32 {
        let places = self.cap.max(self.chunk.len()) as u64;
        u64::BITS - places.saturating_sub(1).leading_zeros()
    }

    fn place_mask(&self) -> u64 {
        (1u64 << self.place_bits()) - 1
    }

    /// The chunk's order by time into `order` (of equal times, as pushed). The events stay
    /// where they are: sorting them moved 56 bytes at each step. Each event is one 64-bit
    /// number, its time's step from the chunk's earliest above its place, so that the sort
    /// compares and moves 8 bytes, not a (time, place) pair of 16; a chunk whose times
    /// spread too far for the bits left (13 days in nanoseconds, with places for 2^14
    /// events) is sorted by each place's time instead.
    fn sort(&mut self) {
        self.order.clear();
        let bits = self.place_bits();
        let (Some(low), Some(high)) = (
            self.chunk.iter().map(|e| e.t).min(),
            self.chunk.iter().map(|e| e.t).max(),
        ) else {
            return;
        };
        let spread = high.abs_diff(low);
        if spread.checked_shl(bits).is_some_and(|s| s >> bits == spread) {
            // Exactly the chunk's: past its size, growing would double the order.
            self.order.reserve_exact(self.chunk.len());
            self.order.extend(
                self.chunk
                    .iter()
                    .enumerate()
                    .map(|(at, e)| (e.t.abs_diff(low) << bits) | at as u64),
            );
            self.order.sort_unstable();
        } else {
            self.order.extend(0..self.chunk.len() as u64);
            let chunk = &self.chunk;
            self.order.sort_unstable_by_key(|&at| (chunk[at as usize].t, at));
        }
    }

    /// Hands every event to `f` in order of time (of equal times, in no promised order).
    pub fn drain(mut self, mut f: impl FnMut(&Event)) -> io::Result<()> {
        if self.file.is_none() {
            self.sort();
            let mask = self.place_mask();
            self.order.iter().for_each(|&k| f(&self.chunk[(k & mask) as usize]));
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
            .map(|r| Cursor {
                bytes: Vec::new(),
                at: 0,
                next: r.first,
                end: r.first + r.bytes,
                before: 0,
                widths: r.widths,
                front: None,
            })
            .collect();
        // A run joins the merge when the merge reaches its first event: the chunks of a
        // history in order of submission cover stretches of time one after another, so the
        // heap holds the few runs that overlap now, not every run (with all of them, and a
        // pop and a push an event, it took a sixth of the section's CPU: BENCHMARKS.md
        // "2026-11-29, 16:00–18:10 UTC").
        let mut waiting: Vec<(i64, usize)> = self.runs.iter().enumerate().map(|(i, r)| (r.t, i)).collect();
        waiting.sort_unstable_by(|a, b| b.cmp(a));
        let mut heap: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
        loop {
            while let Some(&(first, i)) = waiting.last() {
                if heap.peek().is_some_and(|Reverse((t, _))| *t < first) {
                    break;
                }
                waiting.pop();
                let c = &mut cursors[i];
                advance(&mut file, c, per_run)?;
                if let Some(e) = &c.front {
                    heap.push(Reverse((e.t, i)));
                }
            }
            let Some(mut top) = heap.peek_mut() else {
                break;
            };
            let i = top.0 .1;
            let c = &mut cursors[i];
            if let Some(e) = &c.front {
                f(e);
            }
            advance(&mut file, c, per_run)?;
            match &c.front {
                // The run's next event in its place: one sift down, not a pop and a push.
                Some(e) => top.0 .0 = e.t,
                None => {
                    PeekMut::pop(top);
                    // Its bytes back: the runs still to come read into their own.
                    c.bytes = Vec::new();
                }
            }
        }
        Ok(())
    }
}

/// The run's next event to its front (none left: none), reading at most `n` more bytes of
/// the run when fewer than one event's are left.
fn advance(file: &mut File, c: &mut Cursor, n: u64) -> io::Result<()> {
    if c.bytes.len() - c.at < Event::WINDOW && c.next < c.end {
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
    let (e, used) = Event::decode(&c.bytes[c.at..], c.before, c.widths)
        .ok_or_else(|| io::Error::other("the temporary file of contention events is corrupt"))?;
    c.at += used;
    c.before = e.t;
    c.front = Some(e);
    Ok(())
}
