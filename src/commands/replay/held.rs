//! Standard output held back until a command knows it succeeds: `--backtest-at` can find
//! only at the end of the replay that it has no answer (a job without `submittedAt`, a
//! time that leaves one side without trials), which is a usage error with nothing on
//! stdout; `merge` finds a damaged partial only when it reads it. The output is kept in
//! memory up to [`IN_MEMORY`] bytes, then in an anonymous temporary file (memory stays flat
//! whatever its size), and is copied to stdout once the command succeeds. `merge`'s output
//! goes straight to stdout instead when stdout is a regular file written at its end (and not
//! the file stderr writes to): a refusal cuts the file back to the length it had, so that it
//! ends as it did, as if nothing was printed ([`Held::for_stdout`]).
//!
//! Owns: those bytes, and cutting stdout's file back. Must not: render or decide anything.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use crate::app::Checked;

/// What is held in memory before the output goes to a temporary file. A merge of a
/// million runs prints about 28 MiB: written to a file and read back, it cost a third of
/// the merge's CPU; past this, memory would grow with the output.
pub const IN_MEMORY: usize = 64 << 20;

/// The size of each block held in memory: the blocks are never moved once filled, as one
/// growing buffer's would be each time it doubled.
const BLOCK: usize = 1 << 20;

/// Bytes written now, in memory or to a temporary file, copied to the real output by
/// [`Held::release`]; or written to stdout's file at once, cut back unless released.
#[derive(Default)]
pub struct Held {
    blocks: Vec<Vec<u8>>,
    held: usize,
    file: Option<BufWriter<File>>,
    direct: Option<Direct>,
}

/// Stdout's file, written as the output comes, and its length before.
struct Direct {
    /// Checked as the context's stdout is: a failed write names stdout (`app::settle`).
    out: Checked<BufWriter<File>>,
    start: u64,
}

impl Held {
    /// Where `merge` holds its output. When stdout is a regular file written at its end, and
    /// not stderr's file, the output is written to it as it comes, and cut back off it unless
    /// the command succeeds ([`Held::release`]; dropped otherwise): a million runs' merge held
    /// 28 MiB in memory, and the pages it took were a third of the merge's CPU. Anywhere
    /// else (a pipe, a terminal, a file written in the middle), and when the command's
    /// output is not stdout (`--output-file`: `is_stdout` false), as [`Held::default`]. `out`,
    /// the command's output, is flushed first, so that what it holds comes before.
    pub fn for_stdout(out: &mut dyn Write, is_stdout: bool) -> io::Result<Held> {
        out.flush()?;
        Ok(match is_stdout.then(stdout_file).flatten() {
            Some((file, start)) => Held::into_file(file, start),
            None => Held::default(),
        })
    }

    /// Written to `file` at once, from `start` (its length), and cut back unless released.
    fn into_file(file: File, start: u64) -> Held {
        let mut held = Held::default();
        held.direct = Some(Direct {
            out: Checked::new(BufWriter::with_capacity(256 * 1024, file), "stdout"),
            start,
        });
        held
    }

    /// The bytes held so far to a temporary file, which takes the rest.
    fn spill(&mut self) -> io::Result<&mut BufWriter<File>> {
        let f = tempfile::tempfile().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create a temporary file for the output in `{}` (set `TMPDIR` to a writable directory): {e}",
                    std::env::temp_dir().display()
                ),
            )
        })?;
        let mut file = BufWriter::with_capacity(256 * 1024, f);
        for block in std::mem::take(&mut self.blocks) {
            file.write_all(&block)?;
        }
        Ok(self.file.insert(file))
    }

    /// Copies everything written to `out`. A closed `out` (`| head`) is not an error.
    pub fn release(mut self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(mut direct) = self.direct.take() {
            // Written already: only the buffer's last bytes are left; if they cannot be,
            // the file is cut back as for a refusal.
            let flushed = direct.out.flush();
            if flushed.is_err() {
                direct.cut_back();
            }
            return flushed;
        }
        let copied = match self.file.take() {
            None => self.blocks.iter().try_for_each(|b| out.write_all(b)),
            Some(file) => {
                let mut file = file.into_inner().map_err(|e| e.into_error())?;
                file.seek(SeekFrom::Start(0))?;
                // Read a MiB at a time: `out` is buffered in small pieces, which `io::copy`
                // would read the file in.
                let mut buf = vec![0u8; BLOCK];
                loop {
                    let n = match file.read(&mut buf) {
                        Ok(0) => break Ok(()),
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => break Err(e),
                    };
                    if let Err(e) = out.write_all(&buf[..n]) {
                        break Err(e);
                    }
                }
            }
        };
        match copied.and_then(|_| out.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        }
    }
}

impl Direct {
    /// The file back to the length it had, its offset there: what was written is gone.
    fn cut_back(self) {
        // Written bytes are dropped with the buffer, not flushed.
        let (file, _) = self.out.into_inner().into_parts();
        if file
            .set_len(self.start)
            .and_then(|()| (&file).seek(SeekFrom::Start(self.start)))
            .is_err()
        {
            eprintln!(
                "error: the output written so far could not be taken back off stdout's file: it ends past its first {} bytes with some of an output that is not to be trusted",
                self.start
            );
        }
    }
}

impl Drop for Held {
    /// Not released: the command failed, and nothing it wrote to stdout's file stays.
    fn drop(&mut self) {
        if let Some(direct) = self.direct.take() {
            direct.cut_back();
        }
    }
}

/// Stdout as a file, and where it is written, when it is a regular file written at its end
/// and not the file stderr writes to (whose messages would be cut back with the output).
#[cfg(unix)]
fn stdout_file() -> Option<(File, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    // Duplicates share the file and its offset with descriptors 1 and 2.
    let out = File::from(io::stdout().as_fd().try_clone_to_owned().ok()?);
    let meta = out.metadata().ok()?;
    let err = File::from(io::stderr().as_fd().try_clone_to_owned().ok()?)
        .metadata()
        .ok()?;
    if !meta.is_file() || (err.dev(), err.ino()) == (meta.dev(), meta.ino()) {
        return None;
    }
    let at = (&out).stream_position().ok()?;
    (at == meta.len()).then_some((out, at))
}

#[cfg(not(unix))]
fn stdout_file() -> Option<(File, u64)> {
    None
}

impl Write for Held {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(direct) = &mut self.direct {
            return direct.out.write(buf);
        }
        if let Some(file) = &mut self.file {
            return file.write(buf);
        }
        if self.held + buf.len() > IN_MEMORY {
            return self.spill()?.write(buf);
        }
        let mut rest = buf;
        while !rest.is_empty() {
            if self.blocks.last().is_none_or(|b| b.len() == b.capacity()) {
                self.blocks.push(Vec::with_capacity(BLOCK));
            }
            let Some(block) = self.blocks.last_mut() else { break };
            let n = rest.len().min(block.capacity() - block.len());
            block.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
        }
        self.held += buf.len();
        Ok(buf.len())
    }

    /// Straight to the direct file's buffer, whose own `write_all` copies a small write in
    /// one step: a merge writes each record this way, twice (the comma, the record).
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.direct {
            Some(direct) => direct.out.write_all(buf),
            None => Writes(self).write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(direct) = &mut self.direct {
            return direct.out.flush();
        }
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

/// [`Held`]'s own `write`, under `Write`'s default `write_all` (which `Held` replaces for
/// the direct file only).
struct Writes<'a>(&'a mut Held);

impl Write for Writes<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is held comes out whole and in order, from memory and past [`IN_MEMORY`] from
    /// the temporary file.
    #[test]
    fn what_is_held_comes_out_whole() {
        for total in [0, 10, BLOCK + 3, IN_MEMORY + BLOCK / 2 + 7] {
            let mut held = Held::default();
            let mut expected = Vec::with_capacity(total);
            let mut i = 0u32;
            while expected.len() < total {
                let piece: Vec<u8> = (0..(i % 5000) + 1).map(|k| (k.wrapping_mul(31) ^ i) as u8).collect();
                let piece = &piece[..piece.len().min(total - expected.len())];
                held.write_all(piece).unwrap();
                expected.extend_from_slice(piece);
                i += 1;
            }
            assert_eq!(held.file.is_some(), total > IN_MEMORY, "{total}");
            let mut out = Vec::new();
            held.release(&mut out).unwrap();
            assert!(out == expected, "{total} bytes held, {} released", out.len());
        }
    }

    /// Written into a file at once: released, the file holds what it held and then the
    /// output; dropped (the command failed), what it held alone, its offset at its end.
    #[test]
    fn a_file_written_at_once_is_cut_back_unless_released() {
        let output: Vec<u8> = (0..3 * BLOCK).map(|i| (i % 251) as u8).collect();
        for release in [true, false] {
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(b"kept\n").unwrap();
            let mut held = Held::into_file(file.try_clone().unwrap(), 5);
            held.write_all(&output).unwrap();
            held.flush().unwrap();
            assert_eq!(file.metadata().unwrap().len(), 5 + output.len() as u64);
            let mut elsewhere = Vec::new();
            if release {
                held.release(&mut elsewhere).unwrap();
            } else {
                drop(held);
            }
            assert!(elsewhere.is_empty());
            file.write_all(b"after\n").unwrap();
            let mut back = Vec::new();
            file.seek(SeekFrom::Start(0)).unwrap();
            file.read_to_end(&mut back).unwrap();
            let mut want = b"kept\n".to_vec();
            if release {
                want.extend_from_slice(&output);
            }
            want.extend_from_slice(b"after\n");
            assert!(back == want, "released: {release}, {} bytes", back.len());
        }
    }
}
