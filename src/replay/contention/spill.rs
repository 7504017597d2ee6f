//! The events of every job, handed back in time order, in fixed memory: an external sort.
//!
//! Histories come in job order, and a job's waits and retries span its whole life, so the
//! events of a history are in no time order the reader could rely on. They are gathered into a
//! chunk of [`Spill::CHUNK`] events; a history whose events fit is sorted in memory and
//! never touches a file. Past that, each full chunk is sorted and written, as a run, to one
//! anonymous temporary file (unlinked as soon as it is made: nothing is left of it whatever
//! ends the process, as the replay's spool of changed jobs); at the end the runs are merged,
//! each read a slice at a time so that the slices together hold at most [`Spill::MERGE`]
//! events whatever the number of runs. Memory is the chunk and the slices: fixed, whatever
//! the history's length; the file grows with the history ([`Event::BYTES`], 44 bytes, an
//! event). Several sides swept together share the chunk and the file: an event is written
//! once for all the sides it is of (its [`Event::set`]), and handed back in time order alone.
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
    /// The sorted runs in the file: `(first event, events)`.
    runs: Vec<(u64, u64)>,
    written: u64,
    bytes: Vec<u8>,
}

impl Default for Spill {
    fn default() -> Spill {
        Spill::with_chunk(Spill::CHUNK)
    }
}

/// One run of the file as the merge reads it: the slice read, and where the rest starts.
struct Cursor {
    slice: Vec<Event>,
    at: usize,
    next: u64,
    end: u64,
}

impl Spill {
    /// Events sorted in memory at a time (about 14 MiB).
    pub const CHUNK: usize = 1 << 18;
    /// Events the merge's slices hold together.
    pub const MERGE: usize = 1 << 16;

    /// A spill whose chunk holds `cap` events (at least 1).
    pub fn with_chunk(cap: usize) -> Spill {
        Spill {
            chunk: Vec::new(),
            cap: cap.max(1),
            file: None,
            runs: Vec::new(),
            written: 0,
            bytes: Vec::new(),
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
        self.chunk.sort_unstable_by_key(|e| e.t);
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let f = anonymous_file("the contention events")?;
                self.file.insert(BufWriter::with_capacity(256 * 1024, f))
            }
        };
        self.bytes.clear();
        for e in &self.chunk {
            e.encode(&mut self.bytes);
        }
        file.write_all(&self.bytes)?;
        let n = self.chunk.len() as u64;
        self.runs.push((self.written, n));
        self.written += n;
        self.chunk.clear();
        Ok(())
    }

    /// Hands every event to `f` in order of time (of equal times, in no promised order).
    pub fn drain(mut self, mut f: impl FnMut(&Event)) -> io::Result<()> {
        if self.file.is_none() {
            self.chunk.sort_unstable_by_key(|e| e.t);
            self.chunk.iter().for_each(f);
            return Ok(());
        }
        self.write_run()?;
        let Some(writer) = self.file.take() else {
            return Ok(());
        };
        let mut file = writer.into_inner().map_err(|e| e.into_error())?;
        let per_run = (Spill::MERGE / self.runs.len()).max(16) as u64;
        let mut cursors: Vec<Cursor> = self
            .runs
            .iter()
            .map(|&(first, n)| Cursor {
                slice: Vec::new(),
                at: 0,
                next: first,
                end: first + n,
            })
            .collect();
        let mut heap = BinaryHeap::with_capacity(cursors.len());
        for (i, c) in cursors.iter_mut().enumerate() {
            refill(&mut file, c, per_run, &mut self.bytes)?;
            if let Some(e) = c.slice.first() {
                heap.push(Reverse((e.t, i)));
            }
        }
        while let Some(Reverse((_, i))) = heap.pop() {
            let c = &mut cursors[i];
            f(&c.slice[c.at]);
            c.at += 1;
            if c.at == c.slice.len() {
                refill(&mut file, c, per_run, &mut self.bytes)?;
            }
            if let Some(e) = c.slice.get(c.at) {
                heap.push(Reverse((e.t, i)));
            }
        }
        Ok(())
    }
}

/// The next slice of a run, at most `n` events (none left: an empty slice).
fn refill(file: &mut File, c: &mut Cursor, n: u64, bytes: &mut Vec<u8>) -> io::Result<()> {
    let take = n.min(c.end - c.next);
    c.slice.clear();
    c.at = 0;
    if take == 0 {
        return Ok(());
    }
    bytes.resize(take as usize * Event::BYTES, 0);
    file.seek(SeekFrom::Start(c.next * Event::BYTES as u64))?;
    file.read_exact(bytes)?;
    for b in bytes.chunks_exact(Event::BYTES) {
        c.slice.push(
            Event::decode(b).ok_or_else(|| io::Error::other("the temporary file of contention events is corrupt"))?,
        );
    }
    c.next += take;
    Ok(())
}
