//! The digest of a history, for a partial result to name what it was made from
//! (docs/past-one-machine.md).
//!
//! Owns: [`Digest`], the hasher every source hashes into, and the fingerprint of files that
//! every shard can make without reading them all. Must not: authenticate a history (a fast
//! hash tells histories apart, no more), or read a stream (the reader hashes what it reads).

use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::origin::read_exact_at;

pub(super) fn new_hasher() -> foldhash::fast::FoldHasher<'static> {
    foldhash::fast::FixedState::with_seed(0).build_hasher()
}

/// One piece of what a source read, with its length: no two splits of different bytes hash
/// alike by construction.
pub(super) fn add_to_digest(h: &mut foldhash::fast::FoldHasher<'static>, bytes: &[u8]) {
    h.write_usize(bytes.len());
    h.write(bytes);
}

/// A digest of the history (docs/past-one-machine.md: a partial result names the history it
/// was made from, and `merge` refuses partials of two): files, what every shard can see of
/// them without reading them all ([`fingerprint`]); a stream, every byte read, set when it has
/// read the last. A fast 64-bit hash, not a cryptographic one: it tells histories apart, it
/// does not authenticate them. The same input gives the same digest in every shard of the
/// same build.
#[derive(Debug, Clone, Default)]
pub struct Digest(Arc<Mutex<Option<u64>>>);

impl Digest {
    /// The digest, once the source has ended.
    pub fn get(&self) -> Option<u64> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn set(&self, value: u64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }
}

/// The digest of a file source every shard can make without reading the files: each file's
/// name, size and modification time, and the first and last 64 KiB of the files in order.
pub(super) fn fingerprint<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> u64 {
    const EDGE: u64 = 64 * 1024;
    let mut h = new_hasher();
    let mut files = Vec::new();
    let mut total = 0u64;
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        add_to_digest(&mut h, name.as_bytes());
        let (len, modified) = match std::fs::metadata(p) {
            Ok(m) => {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                (m.len(), modified)
            }
            Err(_) => (0, 0),
        };
        h.write_u64(len);
        h.write_u128(modified);
        files.push((p, total, len));
        total += len;
    }
    h.write_u64(total);
    // The bytes at [0, 64 KiB) and [S − 64 KiB, S) of the files as one sequence.
    for (lo, hi) in [(0, EDGE.min(total)), (total.saturating_sub(EDGE), total)] {
        for &(p, start, len) in &files {
            let (from, to) = (lo.max(start), hi.min(start + len));
            if from >= to {
                continue;
            }
            let mut buf = vec![0u8; (to - from) as usize];
            let got = File::open(p)
                .and_then(|f| read_exact_at(&f, &mut buf, from - start))
                .unwrap_or(0);
            add_to_digest(&mut h, &buf[..got]);
        }
    }
    h.finish()
}
