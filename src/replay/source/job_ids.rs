//! The job ids a directory's files give, each with the first file that gave it: a job in two
//! files is refused (it would be replayed, counted and compared twice).
//!
//! Owns: [`JobIds`] (ids kept as 128-bit hashes). Must not: compare ids within one file, or
//! read a file (the reader hands it the ids it meets).

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// The job ids the files of a directory give, each with the first file that gave it: a job's
/// history is in one file, and a job given by two would be replayed, counted and compared
/// twice. Kept as 128-bit hashes (16 bytes an id, whatever its length; two ids alike by
/// chance are not to be expected before 2^64 of them). An id met again in the same file is
/// not looked at: only files are compared. A shard sees the ids of its own range only.
#[derive(Default)]
pub(super) struct JobIds {
    seen: std::collections::HashMap<u128, u64>,
    /// The files' names by their place (from 1).
    pub(super) files: Vec<Arc<str>>,
}

impl JobIds {
    /// `id`, met in the file at `ordinal`: the error of a job another file gave first.
    pub(super) fn elsewhere(&mut self, id: &[u8], ordinal: u64) -> Option<String> {
        let hash = |seed: u64| {
            let mut h = foldhash::fast::FixedState::with_seed(seed).build_hasher();
            h.write(id);
            h.finish()
        };
        let key = (u128::from(hash(1)) << 64) | u128::from(hash(2));
        let first = *self.seen.entry(key).or_insert(ordinal);
        if first == ordinal {
            return None;
        }
        let file = self.files.get(first as usize - 1).map_or("", |f| &**f);
        Some(format!(
            "job {} is also in `{file}`: a directory's files hold different jobs, so this one is not replayed",
            crate::diag::quote(&String::from_utf8_lossy(id))
        ))
    }
}
