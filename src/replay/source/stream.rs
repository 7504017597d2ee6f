//! A stream: stdin (`--history -`), a descriptor of this process (`/dev/stdin`), or any path
//! that is not a regular file or a directory, read once, in order, its format told by its
//! content.
//!
//! Owns: what is a stream, and opening one: the blank lines before its first line with content,
//! JSON Lines told from a YAML text, a YAML text read whole, and the bytes read before
//! `Files::digest` is asked for. Must not: read a stream by byte range,
//! or read past its first line when it is JSON Lines (that is `lines`).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use crate::input::{io_reason, MAX_FILE_BYTES};

use super::compressed::compression;
use super::digest::{new_hasher, Digest};
use super::documents::decode_text;
use super::entry::BOM;
use super::files::Files;
use super::line_reader::{Input, Lines};
use super::lines::{cut_at_limit, LINE_MAX};
use super::sift::Mine;

/// Whether `--history PATH` is a stream, read once ([`Files`]), its format told by its
/// content: stdin (`-`); a path that names a descriptor of this process (`/dev/stdin`,
/// `/dev/fd/N`), whatever it has open, a regular file included (`--history /dev/stdin <
/// week.jsonl`: its name says nothing of its format); or a path that is neither a regular
/// file nor a directory (a named pipe, a device). A path that cannot be read is not: opening
/// it says why.
pub fn is_stream(path: &Path) -> bool {
    path.as_os_str() == "-"
        || crate::input::names_own_descriptor(path)
        || std::fs::metadata(path).is_ok_and(|m| !m.is_dir() && !m.is_file())
}

impl Files {
    /// Opening a stream reads up to its first line with content, to tell JSON Lines from
    /// YAML, and a YAML text whole: before [`Files::digest`] can be asked for. Those bytes are
    /// hashed all the same and kept for it; else shards given other blank lines before the
    /// first job, or other YAML texts, on stdin would agree that they read one history.
    /// `file`: its name in messages; `stem`: its default job id.
    pub(super) fn open_stream(&mut self, input: Box<dyn Read + Send>, file: Arc<str>, stem: Arc<str>) {
        self.stream = true;
        self.digest = Some((new_hasher(), Digest::default()));
        self.start_stream(input, file, stem);
        self.opened = self.digest.take().map(|(h, _)| h);
    }

    fn start_stream(&mut self, input: Box<dyn Read + Send>, file: Arc<str>, stem: Arc<str>) {
        self.ordinal += 1;
        if let Some(ids) = &mut self.ids {
            ids.files.push(file.clone());
        }
        let mut reader: Input = Box::new(BufReader::with_capacity(1 << 16, input));
        let mut first = Vec::new();
        // Skip blank lines to find the first line with content; kept (up to the size limit)
        // for a YAML text, whose line numbers count them.
        let mut skipped = 0usize;
        let mut blank = Vec::new();
        loop {
            first.clear();
            let read = (&mut reader).take(LINE_MAX + 1).read_until(b'\n', &mut first);
            if skipped == 0 {
                self.compressed = compression(&first);
                if self.compressed.is_some() {
                    return;
                }
            }
            if skipped == 0 && first.starts_with(BOM) {
                // A byte order mark starts the text: no part of its first line (a stream's
                // lines are numbered, not placed by offset, so it is simply left out).
                self.hash(BOM);
                first.drain(..BOM.len());
            }
            match read {
                Ok(0) => break,
                Ok(_) if first.iter().all(u8::is_ascii_whitespace) && !cut_at_limit(&first) => {
                    self.hash(&first);
                    skipped += 1;
                    if blank.len() as u64 <= MAX_FILE_BYTES {
                        blank.extend_from_slice(&first);
                    }
                }
                Ok(_) => break,
                Err(e) => {
                    let entry = self.error(&file, &stem, None, io_reason(&e));
                    self.ready.push_back(entry);
                    return;
                }
            }
        }
        let trimmed = first.trim_ascii();
        // A first line cut at the limit is an over-long JSON line, as it is in a file: the
        // reader reports it and goes on with the next (no YAML text that long is read).
        let one_json_value = cut_at_limit(&first)
            || (trimmed.first() == Some(&b'{') && serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok());
        if one_json_value {
            self.bulk = true;
            self.lines = Some(Lines {
                reader,
                file,
                stem,
                line_no: skipped,
                first: Some(first),
                pos: None,
                end: u64::MAX,
                before: None,
            });
            return;
        }
        let mut text = blank;
        text.extend_from_slice(&first);
        let read = reader.take(MAX_FILE_BYTES + 1).read_to_end(&mut text);
        let result = match read {
            Err(e) => Err(io_reason(&e)),
            Ok(_) => decode_text(text),
        };
        self.yaml_entries(&file, &stem, result, Mine::ALL);
    }
}
