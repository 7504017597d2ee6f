//! Opening a [`Files`] source (a file, a directory's files in name order, stdin or another
//! stream), the next file and the next entry in order, and progress.
//!
//! Must not: split or decode JSON lines, or parse a YAML text here (that is `lines` and
//! `documents`).

use std::collections::VecDeque;
use std::fs::File;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::CliError;
use crate::input::{io_reason, MAX_FILE_BYTES};
use crate::model::scheduler::SchedulerConfig;
use crate::replay::shard::Shard;

use super::compressed::{compression, head_of, refuse_compressed};
use super::digest::{add_to_digest, fingerprint, new_hasher, Digest};
use super::documents::{marker_within, read_limited};
use super::entry::{Body, Entry, EMPTY_TEXT};
use super::files::Files;
use super::interface::{Counted, HistorySource, Progress};
use super::job_ids::JobIds;
use super::line_reader::{start_at_line, Lines};
use super::one_queue::OneQueue;
use super::origin::Origin;
use super::overrides::Overrides;
use super::sift::{Mine, Range};
use super::stream::is_stream;

fn ext(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

fn is_jsonl(p: &Path) -> bool {
    matches!(ext(p), "jsonl" | "ndjson")
}

fn stem_of(p: &Path, default: &str) -> Arc<str> {
    p.file_stem().and_then(|s| s.to_str()).unwrap_or(default).into()
}

impl Files {
    /// `Err`: a history path that cannot be read at all, or is compressed (exit 3).
    pub fn open(path: &Path, base: SchedulerConfig, overrides: Overrides) -> Result<Files, CliError> {
        let settings = Arc::new(overrides.apply(&base));
        let mut files = Files {
            ordinal: 0,
            queue: VecDeque::new(),
            lines: None,
            ready: VecDeque::new(),
            overrides,
            settings,
            bulk: false,
            progress: Progress::default(),
            stream: false,
            ids: Some(JobIds::default()),
            digest: None,
            shard: None,
            range: None,
            starts: VecDeque::new(),
            opened: None,
            compressed: None,
            one_queue: None,
        };
        let cannot = |e: std::io::Error| {
            CliError::invalid(format!("cannot read history `{}`: {}", path.display(), io_reason(&e)))
        };
        if path.as_os_str() == "-" {
            files.open_stream(Box::new(std::io::stdin()), "<stdin>".into(), "stdin".into());
            return match files.compressed {
                Some(c) => Err(refuse_compressed(path, c, true)),
                None => Ok(files),
            };
        }
        let meta = std::fs::metadata(path).map_err(cannot)?;
        if is_stream(path) {
            // Opened once (a named pipe's open waits for its writer), never by name again.
            let file = File::open(path).map_err(cannot)?;
            files.open_stream(Box::new(file), path.display().to_string().into(), stem_of(path, "job"));
            return match files.compressed {
                Some(c) => Err(refuse_compressed(path, c, true)),
                None => Ok(files),
            };
        }
        // A file that cannot be read is said as its entry, as before: this looks only.
        if meta.is_file() {
            if let Some(c) = head_of(path).ok().as_deref().and_then(compression) {
                return Err(refuse_compressed(path, c, false));
            }
        }
        if meta.is_dir() {
            files.bulk = true;
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| {
                    CliError::invalid(format!("cannot read directory `{}`: {}", path.display(), io_reason(&e)))
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && matches!(ext(p), "yaml" | "yml" | "json" | "jsonl" | "ndjson"))
                .collect();
            entries.sort();
            files.progress.total = entries.len() as u64;
            files.queue = entries.into();
        } else {
            if is_jsonl(path) {
                files.bulk = true;
                files.progress = Progress {
                    done: 0,
                    total: meta.len(),
                    counted: Counted::Bytes,
                };
            }
            files.queue.push_back(path.to_path_buf());
        }
        Ok(files)
    }

    /// Only `queue`'s jobs replayed: the workers leave out the others and count them.
    pub fn only(mut self, queue: Option<OneQueue>) -> Files {
        self.one_queue = queue;
        self
    }

    /// Hashes every byte read from now on (call it before the first entry is read): the
    /// [`Digest`] is set once the source has ended.
    pub fn digest(&mut self) -> Digest {
        let d = Digest::default();
        if !self.stream {
            // A shard reads its own range only: what every shard can see of the whole is
            // each file's name, size and modification time, and the first and last 64 KiB
            // (docs/past-one-machine.md says what this cannot see).
            d.set(fingerprint(self.queue.iter()));
            return d;
        }
        let hasher = self.opened.take().unwrap_or_else(new_hasher);
        self.digest = Some((hasher, d.clone()));
        d
    }

    /// Adds `bytes` to the digest, when there is one: YAML texts and the messages of what
    /// could not be read. JSON lines are hashed one by one as they are read
    /// ([`Sieve`](super::sift::Sieve)), so
    /// that the digest does not depend on how reads cut the input (a pipe's do not cut it
    /// alike twice).
    pub(super) fn hash(&mut self, bytes: &[u8]) {
        if let Some((h, _)) = &mut self.digest {
            add_to_digest(h, bytes);
        }
    }

    pub(super) fn error(&self, file: &str, stem: &Arc<str>, line: Option<usize>, message: String) -> Entry {
        self.entry(file, stem, line, Body::Error(message))
    }

    pub(super) fn entry(&self, file: &str, stem: &Arc<str>, line: Option<usize>, body: Body) -> Entry {
        Entry {
            origin: Origin {
                file: file.into(),
                line,
                before: None,
                at: line.unwrap_or(0) as u64,
                stem: stem.clone(),
                ordinal: self.ordinal,
                doc: 0,
            },
            settings: self.settings.clone(),
            body,
        }
    }

    /// Opens the next file, `span` its start and length in the source when a shard reads
    /// its range of it ([`HistorySource::sift`]).
    fn open_file(&mut self, path: &Path, span: Option<(u64, u64)>) {
        self.ordinal += 1;
        let name: Arc<str> = path.display().to_string().into();
        if let Some(ids) = &mut self.ids {
            ids.files.push(name.clone());
        }
        let stem = stem_of(path, "job");
        let mine = match (self.range, span) {
            (Some(range), Some((start, len))) => range.within(start, len),
            _ => Mine::ALL,
        };
        // A directory's file (`open` refused a compressed one given alone): the shard that
        // owns its start says so, and the rest of the directory is read.
        if let Some((kind, _)) = head_of(path).ok().as_deref().and_then(compression) {
            if mine.head {
                let message = format!("{kind}-compressed: retryctl reads histories uncompressed");
                let entry = self.error(&name, &stem, None, message);
                self.ready.push_back(entry);
            }
            return;
        }
        if is_jsonl(path) {
            if mine.from >= mine.to {
                // No line of it starts in the shard's range (an empty file has none).
                return;
            }
            match File::open(path).and_then(|f| start_at_line(f, mine.from)) {
                Ok((reader, pos, before)) => {
                    self.lines = Some(Lines {
                        reader,
                        file: name,
                        stem,
                        line_no: 0,
                        first: None,
                        pos: Some(pos),
                        end: mine.to,
                        before,
                    })
                }
                Err(e) if mine.head => {
                    let entry = self.error(&name, &stem, None, io_reason(&e));
                    self.ready.push_back(entry);
                }
                Err(_) => {}
            }
            return;
        }
        // A YAML text is parsed whole (its validity and its SchedulerConfig concern all of
        // its documents), but only by the shards that own one of its documents' starts. One
        // past the size limit is refused whole, by the shard owning its first byte: the
        // others need not look for markers in it.
        let too_long = span.is_some_and(|(_, len)| len > MAX_FILE_BYTES);
        if !mine.head && (too_long || !marker_within(path, mine.from, mine.to)) {
            return;
        }
        let result = read_limited(path);
        self.yaml_entries(&name, &stem, result, mine);
    }
}

impl Iterator for Files {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        let entry = self.next_entry();
        if self.digest.is_some() {
            match &entry {
                Some(Entry {
                    body: Body::Error(m), ..
                }) => self.hash(m.as_bytes()),
                Some(Entry { body: Body::Empty, .. }) => self.hash(EMPTY_TEXT.as_bytes()),
                Some(_) => {}
                None => {
                    if let Some((h, d)) = self.digest.take() {
                        d.set(h.finish());
                    }
                }
            }
        }
        entry
    }
}

impl Files {
    fn next_entry(&mut self) -> Option<Entry> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Some(e);
            }
            if self.lines.is_some() {
                if let Some(e) = self.next_block() {
                    return Some(e);
                }
                self.lines = None;
                if self.progress.counted != Counted::Bytes && !self.stream {
                    self.progress.done += 1;
                }
                continue;
            }
            let path = self.queue.pop_front()?;
            let span = self.starts.pop_front();
            self.open_file(&path, span);
            if self.lines.is_none() && self.progress.counted != Counted::Bytes {
                self.progress.done += 1;
            }
        }
    }
}

impl HistorySource for Files {
    fn progress(&self) -> Progress {
        self.progress
    }

    fn bulk(&self) -> bool {
        self.bulk
    }

    fn one_queue(&self) -> Option<OneQueue> {
        self.one_queue.clone()
    }

    /// Files: reads the shard's byte range of them only. A stream: blanks the JSON lines that
    /// are not `shard`'s as they are read (a line is looked at once, here, instead of being
    /// copied and handed to a worker only to be skipped there).
    fn sift(&mut self, shard: Shard) -> bool {
        if self.stream {
            self.shard = Some(shard);
            return false;
        }
        // Sizes as they are now: a file that changes while the shards read it is not
        // detected (docs/past-one-machine.md).
        let mut total = 0u64;
        self.starts = self
            .queue
            .iter()
            .map(|p| {
                let len = std::fs::metadata(p).map_or(0, |m| m.len());
                let start = total;
                total += len;
                (start, len)
            })
            .collect();
        let range = Range { shard, total };
        if self.progress.counted == Counted::Bytes {
            if let Some(&(start, len)) = self.starts.front() {
                let mine = range.within(start, len);
                self.progress.total = mine.to.saturating_sub(mine.from);
            }
        }
        self.range = Some(range);
        true
    }
}
