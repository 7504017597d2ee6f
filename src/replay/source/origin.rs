//! Where an entry came from (`file:line`) and where it stands in its source's order ([`Pos`]),
//! the same in every shard.
//!
//! Owns: [`Origin`], [`Pos`], the lines before a shard's start in a file ([`LinesBefore`],
//! counted only when a line number is shown), and reading a file at an offset. Must not: open
//! a source, or decide which entries are a shard's (that is `sift`).

use std::fmt;
use std::fs::File;
use std::sync::Arc;

/// Where one entry came from: `file` or `file:line`.
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: Arc<str>,
    /// The entry's line (JSON Lines), counted from the end of `before` when there is one.
    pub(super) line: Option<usize>,
    /// A shard that starts reading a file past its start numbers its lines from there: the
    /// lines before, counted only when a line number is shown ([`LinesBefore`]).
    pub(super) before: Option<Arc<LinesBefore>>,
    /// With `line`, what orders the entry in its file ([`Pos`]): the line's byte offset plus
    /// one (a file, the same in every shard whatever it counted), or its number (a stream).
    pub(super) at: u64,
    pub(super) stem: Arc<str>,
    /// The file's place among the source's files (from 1); 0 for a source that is not
    /// files (Lookout's database).
    pub(super) ordinal: u64,
    /// The document's place in a YAML file (from 1; 0 for the file as a whole); the job's
    /// place in a database's order (from 1).
    pub(super) doc: u64,
}

/// Where an entry stands in its source: the order of the replay, the same in every shard of
/// it (docs/past-one-machine.md), so that `merge` puts the entries of every shard back in that order. Files:
/// the file's place and the entry's byte offset plus one (JSON Lines; its line on a stream) or
/// document (YAML); a database: 0 and the job's place in the database's order of its ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Pos(pub u64, pub u64);

impl Origin {
    /// Where a source that is not a file says its entries come from (`lookout-db`): the
    /// name shown before a message, and the job id when a history gives none.
    pub fn named(name: &str) -> Origin {
        let name: Arc<str> = name.into();
        Origin {
            file: name.clone(),
            line: None,
            before: None,
            at: 0,
            stem: name,
            ordinal: 0,
            doc: 0,
        }
    }

    /// The same source's job at `rank` in its order (from 1).
    pub fn ranked(&self, rank: u64) -> Origin {
        Origin {
            doc: rank,
            ..self.clone()
        }
    }

    /// The same file's line `line` (relative as this origin's are), ordered by `at`.
    pub fn at_line(&mut self, line: usize, at: u64) {
        self.line = Some(line);
        self.at = at;
    }

    /// Where this origin's entry stands ([`Pos`]).
    pub fn pos(&self) -> Pos {
        Pos(self.ordinal, if self.line.is_some() { self.at } else { self.doc })
    }

    /// The entry's line in its file, as one process numbers it (a shard that started past
    /// the file's start counts the lines before it, once: a byte scan).
    pub fn line(&self) -> Option<usize> {
        let before = self.before.as_ref().map_or(0, |b| b.count());
        self.line.map(|l| l + before)
    }

    /// The job id when the history gives none.
    pub fn default_id(&self) -> String {
        match self.line() {
            Some(l) => format!("{}-{l}", self.stem),
            None => self.stem.to_string(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line() {
            Some(l) => write!(f, "{}:{l}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// The lines of a file before the offset a shard starts reading it at: counted the first
/// time a line number is shown (a diagnostic, a default id), by reading the file up to there
/// again; a shard whose jobs all have ids and decode never reads those bytes.
#[derive(Debug)]
pub struct LinesBefore {
    pub(super) file: Arc<File>,
    pub(super) upto: u64,
    pub(super) count: std::sync::OnceLock<usize>,
}

impl LinesBefore {
    fn count(&self) -> usize {
        *self.count.get_or_init(|| count_newlines(&self.file, self.upto))
    }
}

/// The newlines in the first `upto` bytes of `file`, read at offsets so that the handle's
/// own position (the reader's) does not move. A read error stops the count where it is: the
/// file was read up to `upto` a moment before, so it is not expected.
fn count_newlines(file: &File, upto: u64) -> usize {
    let mut buf = vec![0u8; 1 << 20];
    let (mut at, mut n) = (0u64, 0usize);
    while at < upto {
        let want = buf.len().min((upto - at) as usize);
        match read_at(file, &mut buf[..want], at) {
            Ok(0) | Err(_) => break,
            Ok(got) => {
                n += memchr::memchr_iter(b'\n', &buf[..got]).count();
                at += got as u64;
            }
        }
    }
    n
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

/// Fills `buf` from `at`, short only at the file's end.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_at(file, &mut buf[got..], at + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}
