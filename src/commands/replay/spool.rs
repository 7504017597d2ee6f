//! A temporary copy of what a first pass read (`replay::source::copy`), in `$TMPDIR`, for a
//! verb that replays its history twice (`suggest`'s second pass).
//!
//! Owns: the file's life: removed when dropped and, should a signal end the process first,
//! by `on_signal`'s handler (docs/cli.md, "Signals and temporary files"). Must not: decide
//! what is copied (the verb writes the lines).

use std::io::{self, Write};

use crate::error::CliError;
use crate::input;
use crate::on_signal;

/// The copy: its temporary file, armed against signals while it exists.
pub struct SpoolFile {
    // Declared (so dropped) before its guard: the file is gone before the handler forgets it.
    // Buffered: a record a job, each a write of its own otherwise.
    file: io::BufWriter<tempfile::NamedTempFile>,
    _armed: on_signal::Armed,
}

impl SpoolFile {
    pub fn path(&self) -> &std::path::Path {
        self.file.get_ref().path()
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

/// A new, empty copy in `$TMPDIR`.
pub fn spool_file() -> io::Result<SpoolFile> {
    let file = tempfile::Builder::new()
        .prefix("retryctl-suggest-")
        .suffix(".copy")
        .tempfile()?;
    let armed = on_signal::arm(file.path());
    Ok(SpoolFile {
        file: io::BufWriter::with_capacity(1 << 16, file),
        _armed: armed,
    })
}

/// A temporary copy that cannot be opened again to be read: which, and why (not expected:
/// this process wrote it a moment before).
pub fn cannot_read_back(path: &std::path::Path, e: io::Error) -> anyhow::Error {
    CliError::failed(format!(
        "cannot read back the temporary copy of the history `{}`: {}",
        path.display(),
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
