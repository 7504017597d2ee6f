//! An anonymous temporary file in `$TMPDIR`, for what a replay holds on disk instead of in
//! memory: the changed jobs held back (`spool`) and the contention sweep's sorted chunks
//! (`contention::spill`). Owns the file's making and the error that says where and what to set;
//! must not know what is written in it.

use std::fs::File;
use std::io;

/// An anonymous temporary file in `$TMPDIR` (unlinked as soon as it is made: nothing is left
/// of it whatever ends the process) holding `what`, or the error that says where and what to
/// set.
pub fn anonymous_file(what: &str) -> io::Result<File> {
    tempfile::tempfile().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot create a temporary file for {what} in `{}` (set `TMPDIR` to a writable directory): {e}",
                std::env::temp_dir().display()
            ),
        )
    })
}
