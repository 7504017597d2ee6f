//! Standard output held back until a command knows it succeeds: `--backtest-at` can find
//! only at the end of the replay that it has no answer (a job without `submittedAt`, a
//! time that leaves one side without trials), which is a usage error with nothing on
//! stdout; `merge` finds a damaged partial only when it reads it. The output is kept in
//! memory up to [`IN_MEMORY`] bytes, then in an anonymous temporary file (memory stays flat
//! whatever its size), and is copied to stdout once the command succeeds.
//!
//! Owns: those bytes. Must not: render or decide anything.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

/// What is held in memory before the output goes to a temporary file. A merge of a
/// million runs prints about 28 MiB: written to a file and read back, it cost a third of
/// the merge's CPU; past this, memory would grow with the output.
pub const IN_MEMORY: usize = 64 << 20;

/// The size of each block held in memory: the blocks are never moved once filled, as one
/// growing buffer's would be each time it doubled.
const BLOCK: usize = 1 << 20;

/// Bytes written now, in memory or to a temporary file, copied to the real output by
/// [`Held::release`].
#[derive(Default)]
pub struct Held {
    blocks: Vec<Vec<u8>>,
    held: usize,
    file: Option<BufWriter<File>>,
}

impl Held {
    /// The bytes held so far to a temporary file, which takes the rest.
    fn spill(&mut self) -> io::Result<&mut BufWriter<File>> {
        let f = tempfile::tempfile().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create a temporary file for the output in `{}` (set TMPDIR to a writable directory): {e}",
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
    pub fn release(self, out: &mut dyn Write) -> io::Result<()> {
        let copied = match self.file {
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

impl Write for Held {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
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

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
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
}
