//! A shard's part of a file source (docs/past-one-machine.md): its byte range of the files in
//! order, and, line by line, the JSON lines it keeps.
//!
//! Owns: [`Range`], [`Mine`] (a shard's part of one file) and [`Sieve`] (each line hashed,
//! kept or blanked, its job id checked against those met before). Must not: decide which jobs
//! are a shard's by themselves (that is `replay::shard`), or read a file.

use crate::replay::shard::{Owner, Shard};

use super::digest::add_to_digest;
use super::job_ids::JobIds;

/// What the reader does with each JSON line when it looks at them one by one: hash it into
/// the digest, and keep it only when it is the shard's.
pub(super) struct Sieve<'a> {
    pub(super) digest: Option<&'a mut foldhash::fast::FoldHasher<'static>>,
    pub(super) shard: Option<Owner>,
    /// The history's job ids so far, and the place of the file read.
    pub(super) ids: Option<(&'a mut JobIds, u64)>,
    /// The file's stem: a line without a job id is the shard's of its default id.
    pub(super) stem: &'a str,
    /// How many lines it kept.
    pub(super) kept: usize,
}

impl Sieve<'_> {
    /// Appends `line` (numbered `n`, its newline included when it has one) to `bytes`, or
    /// only its newline when it is another shard's ([`Owner::owns_line`]: by its job id,
    /// else by its default id `stem-n`, as the workers would give it). `Err`: the message of
    /// a job id met before ([`JobIds`]); the line is left out.
    pub(super) fn keep(&mut self, line: &[u8], n: usize, bytes: &mut Vec<u8>) -> Result<(), String> {
        if let Some(h) = &mut self.digest {
            add_to_digest(h, line);
        }
        let ours = self.shard.is_none_or(|owner| {
            let text = line.trim_ascii();
            text.is_empty() || owner.owns_line(text, || format!("{}-{n}", self.stem))
        });
        if ours {
            if let Some((ids, ordinal)) = &mut self.ids {
                if let Some(id) = crate::replay::shard::line_job_id(line.trim_ascii()) {
                    if let Some(message) = ids.again(&id, *ordinal, n) {
                        if line.last() == Some(&b'\n') {
                            bytes.push(b'\n');
                        }
                        return Err(message);
                    }
                }
            }
            self.kept += 1;
            bytes.extend_from_slice(line);
        } else if line.last() == Some(&b'\n') {
            bytes.push(b'\n');
        }
        Ok(())
    }
}

/// A shard's byte range of a source of `total` bytes (docs/past-one-machine.md).
#[derive(Debug, Clone, Copy)]
pub(super) struct Range {
    pub(super) shard: Shard,
    pub(super) total: u64,
}

impl Range {
    /// What of the file at `start` (of `len` bytes) is this shard's.
    pub(super) fn within(&self, start: u64, len: u64) -> Mine {
        let (lo, hi) = self.shard.byte_range(self.total);
        Mine {
            from: lo.saturating_sub(start).min(len),
            to: hi.saturating_sub(start).min(len),
            head: self.shard.owns_offset(start, self.total),
        }
    }
}

/// A shard's part of one file: the documents starting at an offset in `[from, to)` of it,
/// and, with `head`, what concerns the file as a whole (it cannot be read, it is not valid,
/// it holds no history), which the shard owning its first byte reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mine {
    pub(super) from: u64,
    pub(super) to: u64,
    pub(super) head: bool,
}

impl Mine {
    /// The whole file (no shard, or one).
    pub(super) const ALL: Mine = Mine {
        from: 0,
        to: u64::MAX,
        head: true,
    };

    pub(super) fn owns(&self, offset: u64) -> bool {
        (self.from <= offset && offset < self.to) || (offset == 0 && self.head)
    }
}
