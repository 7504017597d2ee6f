//! A block of a copy's records as the workers take it ([`CopyBlock`]), the records' kinds, and
//! reading a record back ([`Record`]); the copy's places as its reader holds them
//! ([`Written`]).
//!
//! Owns: reading a record. Must not: write one (that is `copy`), or read the copy's file.

use std::sync::Arc;

use crate::engine::Settings;
use crate::input::SourceFile;

use super::super::packed::{put_uint, take_uint, Damaged};
use super::origin::{Origin, Pos};
use crate::replay::incidents::Windows;

pub(super) const JOB: u8 = 0;
pub(super) const ERROR: u8 = 1;
pub(super) const LEFT_OUT: u8 = 2;
pub(super) const INVALID: u8 = 3;

/// `Places` as a copy's reader takes them: no more are written.
#[derive(Debug)]
pub(super) struct Written {
    pub(super) places: Vec<(Origin, Arc<Settings>)>,
    pub(super) invalid: Vec<SourceFile>,
}

/// When a job's failed runs ended, as its record says (docs/reference/suggest.md
/// "Incidents": a failed run's time is its end), so that a pass that wants only the jobs with a
/// failed run in an incident window skips the others' records without unpacking them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailedTimes {
    /// Not written (a copy made for another reader): never skipped.
    Unknown,
    /// No failed run with a time.
    None,
    /// The earliest and latest failed run's end, in nanoseconds since the epoch.
    Between(i64, i64),
}

/// A minute since the epoch: what a record keeps of a time (4 bytes, not 9), the earliest
/// rounded down and the latest up, so that the span kept holds the span written.
const MINUTE: i64 = 60_000_000_000;

impl FailedTimes {
    /// Appended to a job's record: 0 unknown, 1 none, else the earliest minute (zigzag) plus
    /// 2, then the minutes to the latest.
    pub(super) fn write(self, out: &mut Vec<u8>) {
        match self {
            FailedTimes::Unknown => put_uint(out, 0),
            FailedTimes::None => put_uint(out, 1),
            FailedTimes::Between(lo, hi) => {
                let (a, b) = (lo.div_euclid(MINUTE), hi.div_euclid(MINUTE));
                put_uint(out, ((a << 1) ^ (a >> 63)) as u64 + 2);
                put_uint(out, b.saturating_sub(a) as u64);
            }
        }
    }

    fn read(r: &mut Fields<'_>) -> Result<FailedTimes, Damaged> {
        Ok(match r.uint()? {
            0 => FailedTimes::Unknown,
            1 => FailedTimes::None,
            z => {
                let z = z - 2;
                let a = ((z >> 1) as i64) ^ -((z & 1) as i64);
                let b = a.saturating_add(i64::try_from(r.uint()?).map_err(|_| Damaged(r.at))?);
                // The minutes' edges: every failed run ended within [a, b + 1) minutes.
                FailedTimes::Between(a.saturating_mul(MINUTE), b.saturating_add(1).saturating_mul(MINUTE))
            }
        })
    }

    /// As a record keeps it: the span widened to whole minutes, `[a, b + 1)`, as
    /// [`FailedTimes::read`] gives it back (so that a copy's [`Segments`](super::copy::Segments)
    /// hold what its records say).
    pub(super) fn as_kept(self) -> FailedTimes {
        match self {
            FailedTimes::Between(lo, hi) => FailedTimes::Between(
                lo.div_euclid(MINUTE).saturating_mul(MINUTE),
                hi.div_euclid(MINUTE).saturating_add(1).saturating_mul(MINUTE),
            ),
            other => other,
        }
    }

    /// Whether a failed run of the job may have ended in one of `windows`.
    fn may_touch(self, windows: &Windows) -> bool {
        match self {
            FailedTimes::Unknown => true,
            FailedTimes::None => false,
            FailedTimes::Between(from, to) => windows.overlaps(from, to),
        }
    }
}

/// Whole records of a copy, as read.
#[derive(Debug)]
pub struct CopyBlock {
    pub(super) bytes: Vec<u8>,
    pub(super) count: usize,
    pub(super) places: Arc<Written>,
    /// Only the jobs with a failed run that may have ended in these windows are handed out
    /// ([`Copy::touching`](super::copy::Copy::touching)); errors and notes are, all.
    pub(super) touching: Option<Arc<Windows>>,
}

/// One record of a [`CopyBlock`].
pub enum Record<'a> {
    /// A job: where it came from, its settings, and its history (`packed::unpack` reads it).
    Job {
        origin: Origin,
        settings: Arc<Settings>,
        packed: &'a [u8],
    },
    Error(String),
    LeftOut(String),
    Invalid(Box<SourceFile>),
}

impl CopyBlock {
    /// How many records it holds.
    pub fn records_held(&self) -> usize {
        self.count
    }

    /// Every record with where it stands (but the jobs a [`touching`](Self::touching) filter
    /// leaves out); a record that does not read back (a bug) as an error that says so.
    pub fn records(&self) -> impl Iterator<Item = (Pos, Record<'_>)> {
        let mut rest = self.bytes.as_slice();
        std::iter::from_fn(move || loop {
            if rest.len() < 5 {
                return None;
            }
            let n = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let (record, tail) = rest[4..].split_at(n.min(rest.len() - 4));
            rest = tail;
            match self.record(record) {
                Ok(Some(r)) => return Some(r),
                Ok(None) => continue,
                Err(d) => {
                    return Some((
                        Pos(u64::MAX, u64::MAX),
                        Record::Error(format!("the temporary copy of the history: a record {d}")),
                    ))
                }
            }
        })
    }

    /// `None`: a job the filter leaves out.
    fn record<'a>(&self, record: &'a [u8]) -> Result<Option<(Pos, Record<'a>)>, Damaged> {
        let mut r = Fields { bytes: record, at: 1 };
        let kind = *record.first().ok_or(Damaged(0))?;
        if kind == JOB {
            let failed = FailedTimes::read(&mut r)?;
            if self.touching.as_ref().is_some_and(|w| !failed.may_touch(w)) {
                return Ok(None);
            }
            let place = r.uint()?;
            let line = r.uint()?;
            let at = r.uint()?;
            let doc = r.uint()?;
            let (mut origin, settings) = usize::try_from(place)
                .ok()
                .and_then(|i| self.places.places.get(i).cloned())
                .ok_or(Damaged(1))?;
            origin.line = line.checked_sub(1).and_then(|l| usize::try_from(l).ok());
            (origin.at, origin.doc) = (at, doc);
            return Ok(Some((
                origin.pos(),
                Record::Job {
                    origin,
                    settings,
                    packed: &record[r.at..],
                },
            )));
        }
        let pos = Pos(r.uint()?, r.uint()?);
        let said = match kind {
            ERROR | LEFT_OUT => {
                let n = usize::try_from(r.uint()?).map_err(|_| Damaged(r.at))?;
                let text = record
                    .get(r.at..r.at + n)
                    .and_then(|t| std::str::from_utf8(t).ok())
                    .ok_or(Damaged(r.at))?
                    .to_string();
                if kind == ERROR {
                    Record::Error(text)
                } else {
                    Record::LeftOut(text)
                }
            }
            INVALID => {
                let i = usize::try_from(r.uint()?).map_err(|_| Damaged(r.at))?;
                Record::Invalid(Box::new(self.places.invalid.get(i).cloned().ok_or(Damaged(r.at))?))
            }
            _ => return Err(Damaged(0)),
        };
        Ok(Some((pos, said)))
    }
}

/// The varints of a record's head.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn uint(&mut self) -> Result<u64, Damaged> {
        take_uint(self.bytes, &mut self.at)
    }
}
