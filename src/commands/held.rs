//! Standard output held back until a command knows it succeeds: `--backtest-at` can find
//! only at the end of the replay that it has no answer (a job without `submittedAt`, a
//! time that leaves one side without trials), which is a usage error with nothing on
//! stdout. The output goes to an anonymous temporary file (flat memory, whatever its size)
//! and is copied to stdout once the command succeeds.
//!
//! Owns: that file. Must not: render or decide anything.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

/// Bytes written now, to a temporary file, copied to the real output by [`Held::release`].
pub struct Held {
    file: BufWriter<File>,
}

impl Held {
    pub fn new() -> io::Result<Held> {
        let f = tempfile::tempfile().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create a temporary file for the output in `{}` (set TMPDIR to a writable directory): {e}",
                    std::env::temp_dir().display()
                ),
            )
        })?;
        Ok(Held {
            file: BufWriter::with_capacity(256 * 1024, f),
        })
    }

    /// Copies everything written to `out`. A closed `out` (`| head`) is not an error.
    pub fn release(self, out: &mut dyn Write) -> io::Result<()> {
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        match io::copy(&mut file, out).and_then(|_| out.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        }
    }
}

impl Write for Held {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
