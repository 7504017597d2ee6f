//! A JSON Lines input's reader ([`Lines`]: where it stands in its file or stream), skipping
//! to a line's end, and starting at the first line of a shard's range.
//!
//! Must not: make blocks of lines or say anything of them (that is `lines`).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::sync::Arc;

use super::origin::{read_exact_at, LinesBefore};

pub(super) type Input = Box<dyn BufRead + Send>;

pub(super) struct Lines {
    pub(super) reader: Input,
    pub(super) file: Arc<str>,
    pub(super) stem: Arc<str>,
    pub(super) line_no: usize,
    /// A line read ahead (a stream's detection), handed out first.
    pub(super) first: Option<Vec<u8>>,
    /// The offset in the file of the next byte read (`None`: a stream, read once).
    pub(super) pos: Option<u64>,
    /// A shard's end in the file: no line starting at or past it is read.
    pub(super) end: u64,
    /// The lines before where reading started (a shard's range).
    pub(super) before: Option<Arc<LinesBefore>>,
}

/// Consumes the input up to and including the next newline, or to its end, or `limit` bytes,
/// whichever comes first: how many bytes, and whether the line ended (`false`: `limit` came
/// first). A read error ends it too: the next read reports it.
pub(super) fn skip_line(reader: &mut Input, limit: u64) -> (u64, bool) {
    let mut skipped = 0;
    loop {
        let (found, n) = match reader.fill_buf() {
            Ok([]) | Err(_) => return (skipped, true),
            Ok(buf) => {
                let room = usize::try_from(limit - skipped).unwrap_or(usize::MAX);
                match memchr::memchr(b'\n', buf) {
                    Some(i) if i < room => (true, i + 1),
                    _ => (false, buf.len().min(room)),
                }
            }
        };
        reader.consume(n);
        skipped += n as u64;
        if found {
            return (skipped, true);
        }
        if skipped >= limit {
            return (skipped, false);
        }
    }
}

/// `file` ready to read its lines from the first one starting at or after `from`: the
/// reader, the offset it is at, and (past the start) the lines before, counted when needed.
pub(super) fn start_at_line(mut file: File, from: u64) -> std::io::Result<(Input, u64, Option<Arc<LinesBefore>>)> {
    use std::io::{Seek, SeekFrom};
    if from == 0 {
        return Ok((Box::new(BufReader::with_capacity(1 << 16, file)), 0, None));
    }
    let mut prev = [0u8];
    read_exact_at(&file, &mut prev, from - 1)?;
    file.seek(SeekFrom::Start(from))?;
    let counter = Arc::new(file.try_clone()?);
    let mut reader: Input = Box::new(BufReader::with_capacity(1 << 16, file));
    // Mid-line: that line is the shard's before, which reads past its end to finish it.
    let pos = if prev[0] == b'\n' {
        from
    } else {
        from + skip_line(&mut reader, u64::MAX).0
    };
    let before = LinesBefore {
        file: counter,
        upto: pos,
        count: std::sync::OnceLock::new(),
    };
    Ok((reader, pos, Some(Arc::new(before))))
}
