//! A temporary copy of what a first pass read (`replay::source::copy`), in `$TMPDIR`, for a
//! verb that replays its history twice (`suggest`'s second pass).
//!
//! Owns: the file's life. It is anonymous: made in `$TMPDIR` without a name (or unlinked as
//! it is made), so it is gone with the process whatever ends it, SIGKILL and a crash
//! included, with nothing for a signal handler to remove (docs/cli.md, "Signals and
//! temporary files"). Must not: decide what is copied (the verb writes the lines).

use std::fs::File;
use std::io::{self, Write};

use crate::error::CliError;
use crate::input;

/// The copy: an anonymous file, written through a buffer.
pub struct SpoolFile {
    // Buffered: a record a job, each a write of its own otherwise.
    file: io::BufWriter<File>,
}

impl SpoolFile {
    /// A descriptor of the copy, for `replay::source::copy::Copy` to read from its start (by
    /// position: the offset it shares with the writer's is left alone). What was written
    /// must have been flushed.
    pub fn reader(&self) -> io::Result<File> {
        self.file.get_ref().try_clone()
    }
}

impl Write for SpoolFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// A new, empty copy in `$TMPDIR`, with no name.
pub fn spool_file() -> io::Result<SpoolFile> {
    Ok(SpoolFile {
        file: io::BufWriter::with_capacity(1 << 16, tempfile::tempfile()?),
    })
}

/// A temporary copy that cannot be read back: why (not expected: this process wrote it a
/// moment before).
pub fn cannot_read_back(e: io::Error) -> anyhow::Error {
    CliError::failed(format!(
        "cannot read back the temporary copy of the history (in `{}`): {}",
        std::env::temp_dir().display(),
        input::io_reason(&e)
    ))
    .into()
}

/// A temporary copy that cannot be written: where, and why.
pub fn cannot_spool(e: io::Error) -> anyhow::Error {
    CliError::failed(format!(
        "cannot write the temporary copy of the history in `{}`: {}",
        std::env::temp_dir().display(),
        input::io_reason(&e)
    ))
    .with_hint("set TMPDIR to a directory with room to write")
    .into()
}
