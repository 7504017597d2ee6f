//! The job ids a history gives, each with the first place that gave it: a job met a second
//! time (in the same file or stdin, or in another file of a directory: two overlapping
//! exports put together) is refused, as it would be replayed, counted and compared twice.
//!
//! Owns: [`JobIds`] (ids kept as 128-bit hashes, each with its place). Must not: read a file
//! (the reader hands it the ids it meets, with their places).

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// Bits of a place given to its line; the rest are the file's place in the source.
const LINE_BITS: u32 = 40;

/// The job ids a history gives, each with the first place that gave it (its file and line).
/// Kept as 128-bit hashes, 16 bytes an id whatever its length, beside 8 bytes of place: a
/// history of 1,000,000 jobs holds 24 MB of them, some 50 MB at most with the table's room
/// (docs/simulate.md). Two different ids alike by chance are not to be expected before 2^64
/// of them; the ids themselves are not kept, so the message names the first place, not its
/// text. A shard sees the ids of its own range only.
#[derive(Default)]
pub(super) struct JobIds {
    seen: std::collections::HashMap<u128, u64>,
    /// The files' names by their place (from 1).
    pub(super) files: Vec<Arc<str>>,
}

impl JobIds {
    /// `id`, met at `line` of the file at `ordinal`: the error of a job met before.
    pub(super) fn again(&mut self, id: &[u8], ordinal: u64, line: usize) -> Option<String> {
        let hash = |seed: u64| {
            let mut h = foldhash::fast::FixedState::with_seed(seed).build_hasher();
            h.write(id);
            h.finish()
        };
        let key = (u128::from(hash(1)) << 64) | u128::from(hash(2));
        // A place past its bits (a file of more than 2^40 lines, a directory of more than
        // 2^24 files) is kept cut: only the message's place would be wrong.
        let place = (ordinal.min((1 << (64 - LINE_BITS)) - 1) << LINE_BITS) | (line as u64).min((1 << LINE_BITS) - 1);
        let first = *self.seen.entry(key).or_insert(place);
        if first == place {
            return None;
        }
        let (file, at) = (first >> LINE_BITS, first & ((1 << LINE_BITS) - 1));
        let file = (file as usize)
            .checked_sub(1)
            .and_then(|i| self.files.get(i))
            .map_or("", |f| &**f);
        Some(format!(
            "job {} is also at `{}:{at}`: a history holds each job once, so this one is not replayed",
            crate::diag::quote(&String::from_utf8_lossy(id)),
            crate::diag::shown(file)
        ))
    }
}
