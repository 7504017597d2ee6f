//! A block of a copy's records as the workers take it ([`CopyBlock`]), the records' kinds, and
//! reading a record back ([`Record`]); the copy's places as its reader holds them
//! ([`Written`]).
//!
//! Owns: reading a record. Must not: write one (that is `copy`), or read the copy's file.

use std::sync::Arc;

use crate::engine::Settings;
use crate::input::SourceFile;

use super::super::packed::{take_uint, Damaged};
use super::origin::{Origin, Pos};

pub(super) const JOB: u8 = 0;
pub(super) const ERROR: u8 = 1;
pub(super) const LEFT_OUT: u8 = 2;
pub(super) const INVALID: u8 = 3;

/// [`Places`] as a copy's reader takes them: no more are written.
#[derive(Debug)]
pub(super) struct Written {
    pub(super) places: Vec<(Origin, Arc<Settings>)>,
    pub(super) invalid: Vec<SourceFile>,
}

/// Whole records of a copy, as read.
#[derive(Debug)]
pub struct CopyBlock {
    pub(super) bytes: Vec<u8>,
    pub(super) count: usize,
    pub(super) places: Arc<Written>,
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

    /// Every record with where it stands; a record that does not read back (a bug) as an
    /// error that says so.
    pub fn records(&self) -> impl Iterator<Item = (Pos, Record<'_>)> {
        let mut rest = self.bytes.as_slice();
        std::iter::from_fn(move || {
            if rest.len() < 5 {
                return None;
            }
            let n = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let (record, tail) = rest[4..].split_at(n.min(rest.len() - 4));
            rest = tail;
            Some(self.record(record).unwrap_or_else(|d| {
                (
                    Pos(u64::MAX, u64::MAX),
                    Record::Error(format!("the temporary copy of the history: a record {d}")),
                )
            }))
        })
    }

    fn record<'a>(&self, record: &'a [u8]) -> Result<(Pos, Record<'a>), Damaged> {
        let mut r = Fields { bytes: record, at: 1 };
        let kind = *record.first().ok_or(Damaged(0))?;
        if kind == JOB {
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
            return Ok((
                origin.pos(),
                Record::Job {
                    origin,
                    settings,
                    packed: &record[r.at..],
                },
            ));
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
        Ok((pos, said))
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
