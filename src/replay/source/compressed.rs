//! A compressed history (gzip, zstd), told by its first bytes and refused by what it is rather
//! than read as text it is not.
//!
//! Owns: the magic bytes, each with its decompressing command, and the refusal of a history
//! given compressed (exit 3). Must not: decompress anything, or decide where a directory's
//! compressed file is reported (that is `files`).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::CliError;

/// The compressions told by a history's first bytes (gzip's `1f 8b`, zstd's `28 b5 2f fd`),
/// each with the command that decompresses it: a history is read uncompressed, and a
/// compressed one is refused by what it is rather than read as text it is not.
const COMPRESSED: [(&[u8], &str, &str); 2] = [(b"\x1f\x8b", "gzip", "zcat"), (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat")];

/// The compression `head` (a history's first bytes) starts with, and its decompressing command.
pub(super) fn compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    COMPRESSED
        .iter()
        .find(|(magic, _, _)| head.starts_with(magic))
        .map(|&(_, kind, cat)| (kind, cat))
}

/// The first bytes of the file at `path` (fewer when it is shorter): enough for [`compression`].
pub(super) fn head_of(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(4);
    File::open(path)?.take(4).read_to_end(&mut head)?;
    Ok(head)
}

/// A compressed history given as `--history` (a file, stdin or another stream): refused
/// whole (exit 3), with how to give it decompressed (a stream's file is not known here).
pub(super) fn refuse_compressed(path: &Path, (kind, cat): (&str, &str), stream: bool) -> CliError {
    let name = path.display().to_string();
    let what = if path.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        format!("`{name}`")
    };
    let file = if stream { "FILE" } else { name.as_str() };
    CliError::invalid(format!(
        "{what} is {kind}-compressed: retryctl reads histories uncompressed"
    ))
    .with_hint(format!("decompress it first: `{cat} {file} | retryctl … --history -`"))
}
