//! One entry of a history source and what it carries: a block of JSON lines, a decoded
//! history, or why there is none.
//!
//! Owns: [`Entry`], [`Body`] and [`LineBlock`] (a block's lines found, numbered and placed, not
//! decoded), and the sizes a block is read in. Must not: read anything, or decode a line (the
//! workers do that, see `json_lines`).

use std::sync::Arc;

use crate::engine::Settings;
use crate::input::SourceFile;
use crate::model::failure_history::FailureHistory;

use super::copy_block::CopyBlock;
use super::origin::Origin;

/// What an entry carries.
#[derive(Debug)]
pub enum Body {
    /// Whole JSON lines, not split or decoded yet (both are parallel work).
    Lines(LineBlock),
    /// A history decoded by the source itself (YAML files; later Lookout rows).
    History(Box<FailureHistory>),
    /// A problem with this entry (unreadable file, over-long line); the job is skipped.
    Error(String),
    /// A text with no document at all: an error ([`EMPTY_TEXT`]) beside other entries, and
    /// no content of its own (a history of nothing but such texts is an empty input).
    Empty,
    /// A YAML file whose documents are invalid, with every diagnostic.
    Invalid(Box<SourceFile>),
    /// A record the source itself left out, reported as the source reports it (a Lookout
    /// row that cannot be read, docs/lookout.md): not replayed, and not an error of the replay,
    /// since `history` exits 0 for it too. `job`: the job it belongs to.
    LeftOut { text: String, job: String },
    /// Records of a copy a first pass made (`copy`): jobs packed, and what was said of the
    /// entries it could not read.
    Copied(CopyBlock),
}

/// Consecutive lines of a JSON Lines input, as read (blank lines, `\r` and all).
#[derive(Debug)]
pub struct LineBlock {
    pub bytes: Vec<u8>,
    /// The number of the block's first line in its file (counted from where its reader
    /// started, see [`Origin`]).
    pub first_line: usize,
    /// The byte offset of the block in its file (`None` on a stream, whose blocks may have
    /// lines of other shards blanked out).
    pub first_offset: Option<u64>,
    /// How many lines it holds (blank ones included).
    pub count: usize,
    /// How many lines were kept: all of them, but with
    /// [`HistorySource::sift`](super::interface::HistorySource::sift), where every
    /// line of another shard is left blank (its newline kept, so that the lines after it
    /// keep their numbers). The most jobs the block can hold.
    pub kept: usize,
}

impl LineBlock {
    /// `(line number, order, trimmed line)` of every line with content; the order is
    /// [`Origin`]'s `at`: the line's offset plus one, or its number.
    pub fn lines(&self) -> impl Iterator<Item = (usize, u64, &[u8])> {
        let mut rest = self.bytes.as_slice();
        let mut n = self.first_line;
        let mut offset = self.first_offset;
        std::iter::from_fn(move || loop {
            if rest.is_empty() {
                return None;
            }
            let (line, tail) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            let at = offset.map_or(n as u64, |o| o + 1);
            // A UTF-8 byte order mark at the start of a file is no part of its first line.
            let line = if offset == Some(0) {
                line.strip_prefix(BOM).unwrap_or(line)
            } else {
                line
            };
            if let Some(o) = &mut offset {
                *o += (rest.len() - tail.len()) as u64;
            }
            rest = tail;
            n += 1;
            let line = line.trim_ascii();
            if !line.is_empty() {
                return Some((n - 1, at, line));
            }
        })
    }
}

/// The error of a YAML or JSON text with no document at all (empty, blank or comments only):
/// reported beside other entries, and an empty input when it is all there is.
pub const EMPTY_TEXT: &str = "no FailureHistory document (it is empty)";

/// The UTF-8 byte order mark some editors (and PowerShell's `Out-File`) write at the start of
/// a text: skipped at the start of a history file or stdin, as no part of its first line or
/// document.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Bytes of lines read into one [`LineBlock`]: ~250 lines, a millisecond or two of work,
/// so that both cores get many blocks and the reader does nothing per line, while the
/// records rendered from a few blocks (`-o jsonl`: ~5x the input) stay a few MiB.
pub const BLOCK_BYTES: usize = 128 * 1024;

#[derive(Debug)]
pub struct Entry {
    pub origin: Origin,
    pub settings: Arc<Settings>,
    pub body: Body,
}
