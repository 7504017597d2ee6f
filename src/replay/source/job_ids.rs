//! The job ids a history gives, each with the first place that gave it: a job met a second
//! time (in the same file or stdin, or in another file of a directory: two overlapping
//! exports put together) is refused, as it would be replayed, counted and compared twice.
//!
//! Owns: [`JobIds`] (ids kept as 128-bit hashes, each with its place). Must not: read a file
//! (the reader hands it the ids it meets, with their places).

use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// Bits of a place given to its line; the rest are the file's place in the source.
const LINE_BITS: u32 = 40;

/// The job ids a history gives, each with the first place that gave it (its file and line).
/// Kept as XXH3-128 digests (a 128-bit hash with full avalanche, as the partials' seal uses),
/// 16 bytes an id whatever its length, beside 8 bytes of place and the table's control byte:
/// 25 bytes a slot. A history of 1,000,000 jobs fills a table of 2^21 slots (52 MB), and while
/// the table grows to it the one of 2^20 slots is held too: about 80 MB at the peak
/// (docs/simulate.md). Two different ids alike by chance are not to be expected before 2^64
/// of them; the ids themselves are not kept, so the message names the first place, not its
/// text. A shard sees the ids of its own range only.
#[derive(Default)]
pub(super) struct JobIds {
    seen: std::collections::HashMap<u128, u64, BuildHasherDefault<DigestBits>>,
    /// The files' names by their place (from 1).
    pub(super) files: Vec<Arc<str>>,
}

impl JobIds {
    /// `id`, met at `line` of the file at `ordinal`: the error of a job met before.
    pub(super) fn again(&mut self, id: &[u8], ordinal: u64, line: usize) -> Option<String> {
        let key = xxhash_rust::xxh3::xxh3_128(id);
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

/// The table's hash of a key that is a digest already: its low 64 bits (hashing it again, as
/// the default SipHash would, costs time and adds nothing).
#[derive(Default)]
pub(super) struct DigestBits(u64);

impl Hasher for DigestBits {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u128` keys are hashed here (`write_u128`); any other bytes are folded in.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }

    fn write_u128(&mut self, key: u128) {
        self.0 = key as u64;
    }
}
