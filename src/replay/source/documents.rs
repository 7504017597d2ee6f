//! A YAML or JSON text of FailureHistory (and SchedulerConfig) documents: read whole (at most
//! 8 MiB), parsed, and the documents a shard owns kept, each with the settings that apply to it.
//!
//! Owns: the entries of one text, its document markers (where each document starts, for a
//! shard's range), and reading a text with its size limit. Must not: read JSON Lines (that
//! is `lines`), or decide which shard owns an offset (that is `sift`).

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use crate::input::{io_reason, SourceFile, MAX_FILE_BYTES};
use crate::model::{parse_documents, Kind, Resource};

use super::entry::{Body, Entry};
use super::files::Files;
use super::origin::read_exact_at;
use super::origin::Origin;
use super::sift::Mine;

impl Files {
    /// One YAML or JSON text of FailureHistory (and optionally SchedulerConfig) documents,
    /// of which the documents starting in `mine` are kept.
    pub(super) fn yaml_entries(&mut self, name: &Arc<str>, stem: &Arc<str>, text: Result<String, String>, mine: Mine) {
        let text = match text {
            Ok(t) => {
                self.hash(t.as_bytes());
                t
            }
            Err(msg) => {
                if mine.head {
                    let entry = self.error(name, stem, None, msg);
                    self.ready.push_back(entry);
                }
                return;
            }
        };
        // Without a byte order mark at its start (its lines keep their numbers; `markers`
        // below reads the text as the file has it, for the offsets).
        let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let parsed = parse_documents(body, Some(&[Kind::FailureHistory, Kind::SchedulerConfig]));
        let file = SourceFile {
            name: name.to_string(),
            errors: parsed.syntax_error.into_iter().collect(),
            documents: parsed.documents,
            heads: Vec::new(),
        };
        let origin = Origin {
            file: name.clone(),
            line: None,
            before: None,
            at: 0,
            stem: stem.clone(),
            ordinal: self.ordinal,
            doc: 0,
        };
        if file.error_count() > 0 {
            if !mine.head {
                return;
            }
            self.ready.push_back(Entry {
                origin,
                settings: self.settings.clone(),
                body: Body::Invalid(Box::new(file)),
            });
            return;
        }
        let mut settings = self.settings.clone();
        for doc in &file.documents {
            if let Some(Resource::SchedulerConfig(c)) = &doc.resource {
                settings = Arc::new(self.overrides.apply(c));
            }
        }
        let histories = file
            .documents
            .iter()
            .filter(|d| matches!(d.resource, Some(Resource::FailureHistory(_))))
            .count();
        if histories == 0 {
            // An empty history is a mistake (a wrong path, a truncated file), not a pass.
            // A text with no document at all is an empty input when nothing else is
            // (`commands::replay::source`).
            if mine.head {
                let entry = if file.documents.is_empty() {
                    self.entry(name, stem, None, Body::Empty)
                } else {
                    self.error(name, stem, None, "no FailureHistory document".to_string())
                };
                self.ready.push_back(entry);
            }
            return;
        }
        let markers = if mine == Mine::ALL { Vec::new() } else { markers(&text) };
        for doc in file.documents {
            if !mine.owns(doc_start(&markers, doc.pos.line)) {
                continue;
            }
            if let Some(Resource::FailureHistory(h)) = doc.resource {
                let ordinal = self.ordinal;
                let elsewhere = match &mut self.ids {
                    Some(ids) if !h.job.id.is_empty() => ids.again(h.job.id.as_bytes(), ordinal, doc.pos.line),
                    _ => None,
                };
                self.ready.push_back(Entry {
                    origin: Origin {
                        doc: doc.index as u64 + 1,
                        ..origin.clone()
                    },
                    settings: settings.clone(),
                    body: match elsewhere {
                        Some(message) => Body::Error(message),
                        None => Body::History(h),
                    },
                });
            }
        }
    }
}

/// A YAML document marker (`---` at a line's start, then a blank or the end) at `i`.
fn is_marker(text: &[u8], i: usize) -> bool {
    (i == 0 || text[i - 1] == b'\n')
        && text[i..].starts_with(b"---")
        && text
            .get(i + 3)
            .is_none_or(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Whether a document marker starts in `[from, to)` of the file at `path`: else no document
/// of it starts there, and a shard not owning its first byte has nothing to parse in it.
pub(super) fn marker_within(path: &Path, from: u64, to: u64) -> bool {
    if from >= to {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    // One byte before (a line's start?) and the marker's own four after the range.
    let mut buf = vec![0u8; (to - from + 5) as usize];
    let Ok(got) = read_exact_at(&file, &mut buf, from - 1) else {
        return false;
    };
    let buf = &buf[..got];
    (1..buf.len().min((to - from + 1) as usize)).any(|i| is_marker(buf, i))
}

/// Every document marker of `text`: its line (from 1) and offset.
pub(super) fn markers(text: &str) -> Vec<(usize, u64)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut line = 1;
    let mut at = 0;
    loop {
        if is_marker(bytes, at) {
            out.push((line, at as u64));
        }
        match memchr::memchr(b'\n', &bytes[at..]) {
            Some(i) => {
                at += i + 1;
                line += 1;
            }
            None => return out,
        }
    }
}

/// Where the document at `line` starts: its marker (the last at or before it), or the file's
/// start.
pub(super) fn doc_start(markers: &[(usize, u64)], line: usize) -> u64 {
    let k = markers.partition_point(|&(l, _)| l <= line);
    if k == 0 {
        0
    } else {
        markers[k - 1].1
    }
}

pub(super) fn decode_text(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB; write bulk histories as JSON Lines (`.jsonl`), which is streamed",
            MAX_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

pub(super) fn read_limited(path: &Path) -> Result<String, String> {
    let file = File::open(path).map_err(|e| io_reason(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_reason(&e))?;
    decode_text(bytes)
}
