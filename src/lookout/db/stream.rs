//! The COPY stream of a statement as jobs: PostgreSQL's binary format read row by row in place
//! ([`CopyRows`]), and the rows of one `job_id` grouped into one job ([`Group`]), at most
//! [`JOB_BYTES_MAX`] of its runs held.
//!
//! Owns: the stream's framing and its errors (a lost connection, a silent database, bytes
//! that are not the format). Must not: decode a value (`decode`) or write a statement.

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::Stream;
use tokio_postgres::CopyOutStream;

use super::columns::{Row, FIELDS, JOB_ID, RUN_ID, STATE};
use super::connect::{query_error, Db};
use super::decode::{job_row, run_row, Inflater};
use super::statement::statement;
use crate::error::{CliError, ExitCode};
use crate::lookout::mapping::{LookoutJob, Place, RowError};
use crate::lookout::{Filter, Item, JobStream};

/// Bytes of one job's runs held while its rows are read (error texts and a fixed cost per
/// run); a job past it is left out and reported.
pub const JOB_BYTES_MAX: usize = 32 * 1024 * 1024;

/// What a run costs in [`JOB_BYTES_MAX`] besides its error text.
const RUN_BYTES: usize = 256;

/// The jobs of `filter`, one at a time, as [`statement`] reads them.
pub fn jobs<'a>(db: Db, filter: &Filter) -> Result<JobStream<'a>, CliError> {
    jobs_on(std::sync::Arc::new(db), filter)
}

/// [`jobs`] on a connection the caller keeps for its next statements (`watch` reads page
/// after page on one): the stream holds it until it ends, and it is free again after.
pub fn jobs_on<'a>(db: std::sync::Arc<Db>, filter: &Filter) -> Result<JobStream<'a>, CliError> {
    let statement = statement(filter)?;
    if filter.shard.is_some() {
        // A shard asks for a quarter (a third, …) of the jobs: enough for the planner to
        // prefer reading whole tables (or whole indexes, in a merge join) and dropping the
        // rest, which makes N shards read `job_run` N times.
        by_key(&db)?;
    }
    copy_jobs(db, &statement)
}

/// Off for this session only (a replica allows it): the planner looks each job's runs up
/// by key instead of reading whole tables, which it prefers for a few thousand jobs among
/// many (a shard's, a page's).
pub(in crate::lookout) fn by_key(db: &Db) -> Result<(), CliError> {
    db.wait(
        db.client
            .batch_execute("SET enable_seqscan = off; SET enable_mergejoin = off; SET enable_hashjoin = off"),
    )
}

/// The jobs `statement` (a binary `COPY` of `COLUMNS`, ordered by `job_id`) reads, each of
/// the queue its row names.
pub(in crate::lookout) fn copy_jobs<'a>(db: std::sync::Arc<Db>, statement: &str) -> Result<JobStream<'a>, CliError> {
    let stream = db.wait(db.client.copy_out(statement))?;
    Ok(Box::new(DbJobs {
        rows: CopyRows {
            stream: Box::pin(stream),
            chunk: Bytes::new(),
            carry: Vec::new(),
            header: false,
            done: false,
        },
        group: Group::new(),
        db,
        finished: false,
    }))
}

/// The stream of a job's rows and what is made of them. Field order matters for drop: the
/// COPY stream first, then the connection and its runtime (when this held the last handle).
struct DbJobs {
    rows: CopyRows,
    group: Group,
    db: std::sync::Arc<Db>,
    finished: bool,
}

impl Iterator for DbJobs {
    type Item = anyhow::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.group.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.finished {
                return None;
            }
            let group = &mut self.group;
            match self.rows.next_row(&self.db.rt, self.db.silence, |row| group.take(row)) {
                Ok(true) => {}
                Ok(false) => {
                    self.finished = true;
                    self.group.flush();
                }
                Err(e) => {
                    self.finished = true;
                    let e = match e {
                        CopyError::Db(e) => query_error(&e, &self.db.shown),
                        CopyError::Silent => self.db.silent(),
                        CopyError::Protocol(m) => CliError::new(
                            ExitCode::Unreachable,
                            format!(
                                "the Lookout database at `{}` sent a COPY stream that cannot be read: {m}",
                                self.db.shown
                            ),
                        ),
                    };
                    return Some(Err(e.into()));
                }
            }
        }
    }
}

enum CopyError {
    Db(tokio_postgres::Error),
    /// Nothing came for the connection's silence bound.
    Silent,
    /// The stream is not PostgreSQL's binary COPY format as the statement asks for.
    Protocol(String),
}

/// PostgreSQL's binary COPY stream, row by row (the format: "Binary Format" of `COPY` in
/// PostgreSQL's documentation). The server sends one message per row, so a row is decoded in
/// place in its message; one that spans messages is gathered in `carry` first.
struct CopyRows {
    stream: Pin<Box<CopyOutStream>>,
    chunk: Bytes,
    carry: Vec<u8>,
    header: bool,
    done: bool,
}

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

enum Parsed {
    /// A row of this many bytes.
    Row(usize),
    /// The header or the trailer, this many bytes.
    Skip(usize, bool),
    /// More bytes are needed.
    Incomplete,
}

impl CopyRows {
    /// Calls `take` with the next row (once); `false` at the end of the stream.
    fn next_row(
        &mut self,
        rt: &tokio::runtime::Runtime,
        silence: Option<Duration>,
        mut take: impl FnMut(&Row),
    ) -> Result<bool, CopyError> {
        let mut fields = [None; FIELDS];
        loop {
            if self.done {
                return Ok(false);
            }
            let from_carry = !self.carry.is_empty();
            let buf: &[u8] = if from_carry { &self.carry } else { &self.chunk };
            let parsed = if self.header {
                parse_row(buf, &mut fields)
            } else {
                parse_header(buf)
            }
            .map_err(CopyError::Protocol)?;
            let available = buf.len();
            let used = match parsed {
                Parsed::Row(n) => {
                    take(&Row { buf, fields: &fields });
                    n
                }
                Parsed::Skip(n, trailer) => {
                    self.header = true;
                    self.done = trailer;
                    n
                }
                Parsed::Incomplete => {
                    let Some(next) = self.fetch(rt, silence)? else {
                        return if available == 0 {
                            Err(CopyError::Protocol("it ended without its trailer".into()))
                        } else {
                            Err(CopyError::Protocol("it ended in the middle of a row".into()))
                        };
                    };
                    if from_carry || !self.chunk.is_empty() {
                        if !from_carry {
                            self.carry.extend_from_slice(&self.chunk);
                            self.chunk = Bytes::new();
                        }
                        self.carry.extend_from_slice(&next);
                    } else {
                        self.chunk = next;
                    }
                    continue;
                }
            };
            if from_carry {
                self.carry.drain(..used);
            } else {
                self.chunk.advance(used);
            }
            if matches!(parsed, Parsed::Row(_)) {
                return Ok(true);
            }
        }
    }

    fn fetch(&mut self, rt: &tokio::runtime::Runtime, silence: Option<Duration>) -> Result<Option<Bytes>, CopyError> {
        let stream = &mut self.stream;
        let next = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx));
        match silence {
            Some(d) => rt
                .block_on(async { tokio::time::timeout(d, next).await })
                .map_err(|_| CopyError::Silent)?,
            None => rt.block_on(next),
        }
        .transpose()
        .map_err(CopyError::Db)
    }
}

fn be_i16(b: &[u8]) -> i16 {
    i16::from_be_bytes([b[0], b[1]])
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn parse_header(buf: &[u8]) -> Result<Parsed, String> {
    if buf.len() < SIGNATURE.len() + 8 {
        return Ok(Parsed::Incomplete);
    }
    if &buf[..SIGNATURE.len()] != SIGNATURE {
        return Err("no binary COPY signature".into());
    }
    let extension = be_i32(&buf[15..19]);
    let Ok(extension) = usize::try_from(extension) else {
        return Err(format!("a header extension of {extension} bytes"));
    };
    let len = 19 + extension;
    Ok(if buf.len() < len {
        Parsed::Incomplete
    } else {
        Parsed::Skip(len, false)
    })
}

/// One tuple: a field count (−1: the trailer), then each field's length (−1: NULL) and bytes.
fn parse_row(buf: &[u8], fields: &mut [Option<(usize, usize)>; FIELDS]) -> Result<Parsed, String> {
    if buf.len() < 2 {
        return Ok(Parsed::Incomplete);
    }
    let count = be_i16(buf);
    if count == -1 {
        return Ok(Parsed::Skip(2, true));
    }
    if count as usize != FIELDS {
        return Err(format!("a row of {count} fields where the statement reads {FIELDS}"));
    }
    let mut pos = 2;
    for f in fields.iter_mut() {
        if buf.len() < pos + 4 {
            return Ok(Parsed::Incomplete);
        }
        let len = be_i32(&buf[pos..]);
        pos += 4;
        if len < 0 {
            *f = None;
            continue;
        }
        let end = pos + len as usize;
        if buf.len() < end {
            return Ok(Parsed::Incomplete);
        }
        *f = Some((pos, end));
        pos = end;
    }
    Ok(Parsed::Row(pos))
}

/// Rows → jobs: the rows of one `job_id` are consecutive (every statement orders by it, or by
/// a key it ends: `watch`'s pages by (`last_transition_time`, `job_id`)).
struct Group {
    /// The job being read; `None` when its row was bad (`skipping`) or before the first row.
    current: Option<LookoutJob>,
    /// The raw `job_id` of the rows being read.
    current_id: Vec<u8>,
    /// The current job was left out: its other rows are skipped.
    skipping: bool,
    /// Bytes held by the current job's runs ([`JOB_BYTES_MAX`]).
    held: usize,
    pending: VecDeque<Item>,
    inflater: Inflater,
}

impl Group {
    fn new() -> Group {
        Group {
            current: None,
            current_id: Vec::new(),
            skipping: false,
            held: 0,
            pending: VecDeque::new(),
            inflater: Inflater::new(),
        }
    }

    fn take(&mut self, row: &Row) {
        let id = row.get(JOB_ID).unwrap_or_default();
        if id != self.current_id.as_slice() || (self.current.is_none() && !self.skipping) {
            self.flush();
            self.current_id.clear();
            self.current_id.extend_from_slice(id);
            self.held = 0;
            match job_row(row) {
                Ok(job) => {
                    self.current = Some(LookoutJob {
                        job,
                        ..LookoutJob::default()
                    });
                    self.skipping = false;
                }
                Err(e) => {
                    self.pending.push_back(Item::Bad(e));
                    self.skipping = true;
                }
            }
        }
        let Some(job) = &mut self.current else { return };
        // A job without runs: the LEFT JOIN's one row has NULL run columns.
        if row.get(RUN_ID).is_none() && row.get(STATE).is_none() {
            return;
        }
        match run_row(row, &job.job.job_id, &mut self.inflater) {
            Ok(run) => {
                self.held +=
                    RUN_BYTES + run.error.as_ref().map_or(0, String::len) + run.debug.as_ref().map_or(0, String::len);
                if self.held > JOB_BYTES_MAX {
                    let e = RowError::job(
                        &job.job.job_id,
                        Place::Row,
                        format!(
                            "its runs hold more than {} MiB (after {} runs): too many to replay",
                            JOB_BYTES_MAX >> 20,
                            job.runs.len() + 1
                        ),
                    );
                    self.pending.push_back(Item::Bad(e));
                    self.current = None;
                    self.skipping = true;
                } else {
                    job.runs.push(run);
                }
            }
            Err(e) => {
                job.unreadable_runs += 1;
                self.pending.push_back(Item::Bad(e));
            }
        }
    }

    fn flush(&mut self) {
        if let Some(job) = self.current.take() {
            self.pending.push_back(Item::Job(job));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::columns::{CATEGORY, CPU, GPU, MEMORY, NODE, QUEUE, SUBCATEGORY, SUBMITTED};
    use super::super::connect::key_bytes;
    use super::*;

    #[test]
    fn rows_are_parsed_across_any_split() {
        // Header, one row (job without runs: NULL run columns), trailer.
        let mut s = SIGNATURE.to_vec();
        s.extend_from_slice(&0i32.to_be_bytes());
        s.extend_from_slice(&0i32.to_be_bytes());
        s.extend_from_slice(&(FIELDS as i16).to_be_bytes());
        for i in 0..FIELDS {
            match i {
                JOB_ID => {
                    s.extend_from_slice(&2i32.to_be_bytes());
                    s.extend_from_slice(b"j1");
                }
                _ => s.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        let row_end = s.len();
        s.extend_from_slice(&(-1i16).to_be_bytes());
        let header = 19;
        assert!(matches!(parse_header(&s[..header - 1]), Ok(Parsed::Incomplete)));
        assert!(matches!(parse_header(&s), Ok(Parsed::Skip(19, false))));
        let mut fields = [None; FIELDS];
        for cut in header..row_end {
            assert!(
                matches!(parse_row(&s[header..cut], &mut fields), Ok(Parsed::Incomplete)),
                "{cut}"
            );
        }
        assert!(matches!(parse_row(&s[header..], &mut fields), Ok(Parsed::Row(n)) if n == row_end - header));
        assert_eq!(fields[JOB_ID], Some((6, 8)));
        assert_eq!(fields[RUN_ID], None);
        assert!(matches!(
            parse_row(&s[row_end..], &mut fields),
            Ok(Parsed::Skip(2, true))
        ));
        assert_eq!(
            parse_row(&3i16.to_be_bytes(), &mut fields).err().unwrap(),
            "a row of 3 fields where the statement reads 22"
        );
        assert!(parse_header(b"PGCOPY\n\xff\r\n\x01xxxxxxxx").is_err());
    }

    /// A row whose text is not UTF-8 is left out as any row that cannot be read: a job's own
    /// row (`job_id`, `queue`) leaves the job out, named with those bytes as `\xNN` and keyed
    /// by its exact bytes, its runs skipped; a run's (`run_id`, `node`, `failure_category`,
    /// `failure_subcategory`) leaves that run out, the job kept with its other runs. No text
    /// is guessed (`�`), and the rows after it are read.
    #[test]
    fn a_row_whose_text_is_not_utf8_is_left_out_and_the_rows_after_it_are_read() {
        let row = |values: &[(usize, &[u8])]| {
            let mut buf = Vec::new();
            let mut fields = [None; FIELDS];
            for &(col, bytes) in values {
                fields[col] = Some((buf.len(), buf.len() + bytes.len()));
                buf.extend_from_slice(bytes);
            }
            (buf, fields)
        };
        let zero = 0i64.to_be_bytes();
        let state = 4i16.to_be_bytes();
        let run = |id: &'static [u8], queue: &'static [u8], run: &'static [u8], col: usize, value: &'static [u8]| {
            let mut r = vec![
                (JOB_ID, id),
                (MEMORY, &zero[..]),
                (CPU, &zero[..]),
                (GPU, &zero[..]),
                (SUBMITTED, &zero[..]),
                (QUEUE, queue),
                (RUN_ID, run),
                (STATE, &state[..]),
            ];
            match r.iter_mut().find(|(c, _)| *c == col) {
                Some(kept) => kept.1 = value,
                None => r.push((col, value)),
            }
            r
        };
        let mut group = Group::new();
        let rows = [
            run(b"ml-05\xff\x1b", b"ml", b"r1", NODE, b"n1"),
            run(b"ml-05\xff\x1b", b"ml", b"r2", NODE, b"n2"),
            run(b"ml-06", b"ml", b"r1", NODE, b"n\xc3"),
            run(b"ml-06", b"ml", b"r\xff2", NODE, b"n2"),
            run(b"ml-06", b"ml", b"r3", CATEGORY, b"oom\xfe"),
            run(b"ml-06", b"ml", b"r4", SUBCATEGORY, b"\xe2\x82"),
            run(b"ml-06", b"ml", b"r5", NODE, b"n5"),
            run(b"ml-07", b"ml\xfe", b"r1", NODE, b"n1"),
            run(b"ml-08", b"ml", b"r1", NODE, b"n1"),
        ];
        for r in &rows {
            let (buf, fields) = row(r);
            group.take(&Row {
                buf: &buf,
                fields: &fields,
            });
        }
        group.flush();
        let said: Vec<String> = group
            .pending
            .iter()
            .map(|item| match item {
                Item::Bad(e) => format!("{} [{}]", e.left_out(), e.job_key().escape_debug()),
                Item::Job(j) => {
                    let runs: Vec<&str> = j.runs.iter().map(|r| r.run_id.as_str()).collect();
                    format!("{}: {runs:?}, {} unreadable", j.job.job_id, j.unreadable_runs)
                }
            })
            .collect();
        assert_eq!(
            said,
            [
                "job `ml-05\\xff\u{1b}`: column job_id: not UTF-8 (byte 5); job left out [\\06d6c2d3035ff1b]",
                "job `ml-06` run `r1`: column node: not UTF-8 (byte 1); run left out [ml-06]",
                "job `ml-06` run `r\\xff2`: column run_id: not UTF-8 (byte 1); run left out [ml-06]",
                "job `ml-06` run `r3`: column failure_category: not UTF-8 (byte 3); run left out [ml-06]",
                "job `ml-06` run `r4`: column failure_subcategory: not UTF-8 (byte 0); run left out [ml-06]",
                "ml-06: [\"r5\"], 4 unreadable",
                "job `ml-07`: column queue: not UTF-8 (byte 2); job left out [ml-07]",
                "ml-08: [\"r1\"], 0 unreadable",
            ]
        );
        // The key gives the id's bytes back exactly (`watch`'s cursor and the polls that
        // read its span again).
        let Item::Bad(e) = &group.pending[0] else {
            unreachable!()
        };
        assert_eq!(key_bytes(e.job_key()).as_ref(), b"ml-05\xff\x1b");
    }
}
