//! JSON Lines read as blocks of whole lines ([`LineBlock`]): counted,
//! never split or decoded here (workers do that in parallel).
//!
//! Owns: the next block of a file's or stream's reader (`line_reader`), and over-long lines
//! (reported, skipped to their end; on a stream at most [`SKIP_MAX`] past the limit). Must
//! not: decode a line, or decide which lines are a shard's (that is `sift`).

use std::io::{BufRead, Read};

use crate::input::io_reason;
use crate::replay::shard::Owner;

use super::entry::{Body, Entry, LineBlock, BLOCK_BYTES};
use super::files::Files;
use super::interface::Counted;
use super::line_reader::{skip_line, Lines};
use super::origin::Origin;
use super::sift::Sieve;

impl Files {
    /// The next block of lines of the open JSON Lines input, or `None` at its end. Lines
    /// are split by the workers; here they are only counted, for the next block's first
    /// line number. A line longer than what is buffered is read on its own, with the
    /// [`LINE_MAX`] limit; one over the limit (or a read error) ends the block, and its error entry
    /// follows the block.
    pub(super) fn next_block(&mut self) -> Option<Entry> {
        let settings = self.settings.clone();
        let counting = self.progress.counted == Counted::Bytes;
        let lines = self.lines.as_mut()?;
        let first_line = lines.line_no + 1;
        let first_offset = lines.pos;
        let (file, stem, ordinal, before) = (
            lines.file.clone(),
            lines.stem.clone(),
            self.ordinal,
            lines.before.clone(),
        );
        let origin = |line: usize, at: Option<u64>| Origin {
            file: file.clone(),
            line: Some(line),
            before: before.clone(),
            at: at.map_or(line as u64, |o| o + 1),
            stem: stem.clone(),
            ordinal,
            doc: 0,
        };
        let error = |line: usize, at: Option<u64>, message: String| Entry {
            origin: origin(line, at),
            settings: settings.clone(),
            body: Body::Error(message),
        };
        let mut sieve = Sieve {
            digest: self.digest.as_mut().map(|(h, _)| h),
            shard: self.shard.map(Owner::new),
            ids: self.ids.as_mut().map(|ids| (ids, ordinal)),
            kept: 0,
            stem: &stem,
        };
        let sifting = sieve.digest.is_some() || sieve.shard.is_some() || sieve.ids.is_some();
        let mut bytes = Vec::with_capacity(BLOCK_BYTES + (1 << 16));
        let mut read = 0u64;
        let mut after: Option<Entry> = None;
        let mut end = false;
        if let Some(first) = lines.first.take() {
            // The line a stream's detection read (whole, or cut at the limit).
            read += first.len() as u64;
            if let Err(cut) = one_line(lines, first, &mut sieve, &mut bytes) {
                end = cut.end;
                after = Some(error(cut.line, cut.at, cut.message));
            }
        }
        while after.is_none() && bytes.len() < BLOCK_BYTES {
            // A shard's range ends before the next line: the line crossing its end was its last.
            if lines.pos.is_some_and(|p| p >= lines.end) {
                end = true;
                break;
            }
            let buf = match lines.reader.fill_buf() {
                Ok(b) => b,
                Err(e) => {
                    lines.line_no += 1;
                    after = Some(error(lines.line_no, lines.pos, io_reason(&e)));
                    end = true;
                    break;
                }
            };
            if buf.is_empty() {
                break;
            }
            if let Some(mut i) = memchr::memrchr(b'\n', buf) {
                if let Some(pos) = lines.pos {
                    if pos + i as u64 >= lines.end {
                        // Up to the end of the line holding the range's last byte.
                        let last = (lines.end - 1 - pos) as usize;
                        i = last + memchr::memchr(b'\n', &buf[last..]).unwrap_or(i - last);
                    }
                }
                let part = &buf[..=i];
                // What of `part` is read: all of it, or up to a line that ends the block.
                let mut taken = part.len();
                if sifting {
                    let mut start = 0;
                    for end in memchr::memchr_iter(b'\n', part) {
                        lines.line_no += 1;
                        if let Err(message) = sieve.keep(&part[start..=end], lines.line_no, &mut bytes) {
                            after = Some(error(lines.line_no, lines.pos.map(|p| p + start as u64), message));
                            taken = end + 1;
                            break;
                        }
                        start = end + 1;
                    }
                } else {
                    lines.line_no += memchr::memchr_iter(b'\n', part).count();
                    bytes.extend_from_slice(part);
                }
                read += taken as u64;
                if let Some(pos) = &mut lines.pos {
                    *pos += taken as u64;
                }
                lines.reader.consume(taken);
                continue;
            }
            let mut line = Vec::new();
            match (&mut lines.reader).take(LINE_MAX + 1).read_until(b'\n', &mut line) {
                Ok(_) => {
                    read += line.len() as u64;
                    if let Err(cut) = one_line(lines, line, &mut sieve, &mut bytes) {
                        end = cut.end;
                        after = Some(error(cut.line, cut.at, cut.message));
                    }
                }
                Err(e) => {
                    lines.line_no += 1;
                    after = Some(error(lines.line_no, lines.pos, io_reason(&e)));
                    end = true;
                }
            }
        }
        let block = (!bytes.is_empty()).then(|| Entry {
            origin: origin(first_line, first_offset),
            settings: settings.clone(),
            body: Body::Lines(LineBlock {
                bytes,
                first_line,
                first_offset,
                count: lines.line_no + 1 - first_line,
                kept: if sieve.shard.is_some() {
                    sieve.kept
                } else {
                    lines.line_no + 1 - first_line
                },
            }),
        });
        if counting {
            self.progress.done += read;
        }
        if end {
            self.lines = None;
        }
        match (block, after) {
            (Some(b), Some(a)) => {
                self.ready.push_back(a);
                Some(b)
            }
            (b, a) => b.or(a),
        }
    }
}

/// The longest JSON line read, in bytes (without its line end): above any line `history`
/// writes (it leaves out a job whose line would be longer, said and counted: docs/lookout.md),
/// so that every line it writes is read back whole, a job of 100,000 runs (12.5 MB) among
/// them. A line is held whole while it is read, so this is also the most one line costs in
/// memory.
pub const LINE_MAX: u64 = 64 << 20;

pub(super) const LONG_LINE: &str = "line longer than 64 MiB";

/// How far past the limit the rest of an over-long line is skipped on a stream, whose end
/// may never come (`/dev/zero`): a line past it ends the reading of the stream.
pub const SKIP_MAX: u64 = 64 << 20;

/// An over-long line of a stream with no end within [`SKIP_MAX`] after the limit.
const ENDLESS_LINE: &str =
    "line longer than 64 MiB, with no line end in the 64 MiB after it: the rest of the input is not read";

/// A line that ends its block, reported in an error entry after it.
struct Cut {
    /// Its number and offset.
    line: usize,
    at: Option<u64>,
    message: String,
    /// Nothing more of the input is read.
    end: bool,
}

/// `line` (read with the [`LINE_MAX`] limit plus one byte) is longer than the limit: its
/// text, without its newline, is over [`LINE_MAX`].
pub(super) fn cut_at_limit(line: &[u8]) -> bool {
    let ended = line.last() == Some(&b'\n');
    (line.len() - usize::from(ended)) as u64 > LINE_MAX
}

/// A line read on its own (up to the [`LINE_MAX`] limit plus one byte, its newline included):
/// appended to `bytes`, or a [`Cut`] for an over-long line, whose rest is skipped (on a
/// stream, at most [`SKIP_MAX`] of it). The limit is on the line's text: a line of exactly
/// [`LINE_MAX`] and its newline is within it (and its newline is not a reason to skip the next line).
fn one_line(lines: &mut Lines, line: Vec<u8>, sieve: &mut Sieve<'_>, bytes: &mut Vec<u8>) -> Result<(), Cut> {
    lines.line_no += 1;
    let at = lines.pos;
    if let Some(pos) = &mut lines.pos {
        *pos += line.len() as u64;
    }
    if cut_at_limit(&line) {
        // Cut by the limit: skip the rest of the over-long line, a buffer at a time (read
        // into memory, a line of gigabytes would take as many). A file's size bounds it; a
        // stream's only the cap.
        let limit = if lines.pos.is_some() { u64::MAX } else { SKIP_MAX };
        let (skipped, ended) = skip_line(&mut lines.reader, limit);
        if let Some(pos) = &mut lines.pos {
            *pos += skipped;
        }
        return Err(Cut {
            line: lines.line_no,
            at,
            message: if ended { LONG_LINE } else { ENDLESS_LINE }.to_string(),
            end: !ended,
        });
    }
    sieve.keep(&line, lines.line_no, bytes).map_err(|message| Cut {
        line: lines.line_no,
        at,
        message,
        end: false,
    })
}
