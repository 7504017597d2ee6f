//! Where histories come from (docs/simulate.md): one YAML/JSON file, a JSON Lines file, a
//! directory of either, or a stream — stdin (`--history -`) or any other path that is not a
//! regular file (a named pipe, `<(zcat …)`'s `/dev/fd/N`, `/dev/stdin`, a device) — as one
//! stream of [`Entry`]s.
//!
//! Owns: [`HistorySource`], the one streaming interface every source implements (Lookout's
//! database, `lookout::export_source`, yields `Body::History` entries through it), file
//! discovery, the 8 MiB limits, which settings apply to which job (a SchedulerConfig
//! document in a history file applies to that file's jobs), and job ids by default (the
//! file stem; `stem-LINE` in JSON Lines). JSON Lines are read as blocks of whole lines
//! ([`LineBlock`]) whose lines are only counted here. A shard of files
//! ([`HistorySource::sift`], docs/past-one-machine.md) reads only its byte range of them and
//! the document crossing its end, numbering lines as one process would (the lines before
//! its range counted only when a number is shown), and digests the files by what every shard
//! can see of them ([`fingerprint`]); and, from `export_totals`, what a Lookout export read and
//! left out ([`ExportTotals`], [`Notes`]), the counts that source carries beside its entries. Must not: split or decode JSON lines (workers do that
//! in parallel, see `run` and `json_lines`), evaluate or print.
//!
//! A stream is read once, in order, as stdin is, whatever its name says: JSON Lines when its
//! first line that is not blank is one complete JSON value, or is longer than the 8 MiB a line
//! may be (no YAML text that long is read: an over-long JSON line, reported as a file's is),
//! else one YAML/JSON text (at most 8 MiB), like a file. An over-long line is skipped to its
//! end; on a stream, whose end may never come (`/dev/zero`), at most [`SKIP_MAX`] past the
//! limit, after which the rest of the stream is not read.
//!
//! A history whose first bytes are gzip's or zstd's magic is refused by what it is, not read
//! as text: given alone (a file or a stream) before anything is read, a directory's file as
//! its entry.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::engine::Settings;
use crate::error::CliError;
use crate::input::{io_reason, SourceFile, MAX_FILE_BYTES};
use crate::model::failure_history::FailureHistory;
use crate::model::scheduler::SchedulerConfig;
use crate::model::{parse_documents, Kind, Resource};

use super::shard::{Owner, Shard};

pub use super::export_totals::{ExportTotals, Notes};

/// Where one entry came from: `file` or `file:line`.
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: Arc<str>,
    /// The entry's line (JSON Lines), counted from the end of `before` when there is one.
    line: Option<usize>,
    /// A shard that starts reading a file past its start numbers its lines from there: the
    /// lines before, counted only when a line number is shown ([`LinesBefore`]).
    before: Option<Arc<LinesBefore>>,
    /// With `line`, what orders the entry in its file ([`Pos`]): the line's byte offset plus
    /// one (a file, the same in every shard whatever it counted), or its number (a stream).
    at: u64,
    stem: Arc<str>,
    /// The file's place among the source's files (from 1); 0 for a source that is not
    /// files (Lookout's database).
    ordinal: u64,
    /// The document's place in a YAML file (from 1; 0 for the file as a whole); the job's
    /// place in a database's order (from 1).
    doc: u64,
}

/// Where an entry stands in its source: the order of the replay, the same in every shard of
/// it (docs/past-one-machine.md), so that `merge` puts the entries of every shard back in that order. Files:
/// the file's place and the entry's byte offset plus one (JSON Lines; its line on a stream) or
/// document (YAML); a database: 0 and the job's place in the database's order of its ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Pos(pub u64, pub u64);

impl Origin {
    /// Where a source that is not a file says its entries come from (`lookout-db`): the
    /// name shown before a message, and the job id when a history gives none.
    pub fn named(name: &str) -> Origin {
        let name: Arc<str> = name.into();
        Origin {
            file: name.clone(),
            line: None,
            before: None,
            at: 0,
            stem: name,
            ordinal: 0,
            doc: 0,
        }
    }

    /// The same source's job at `rank` in its order (from 1).
    pub fn ranked(&self, rank: u64) -> Origin {
        Origin {
            doc: rank,
            ..self.clone()
        }
    }

    /// The same file's line `line` (relative as this origin's are), ordered by `at`.
    pub fn at_line(&mut self, line: usize, at: u64) {
        self.line = Some(line);
        self.at = at;
    }

    /// Where this origin's entry stands ([`Pos`]).
    pub fn pos(&self) -> Pos {
        Pos(self.ordinal, if self.line.is_some() { self.at } else { self.doc })
    }

    /// The entry's line in its file, as one process numbers it (a shard that started past
    /// the file's start counts the lines before it, once: a byte scan).
    pub fn line(&self) -> Option<usize> {
        let before = self.before.as_ref().map_or(0, |b| b.count());
        self.line.map(|l| l + before)
    }

    /// The job id when the history gives none.
    pub fn default_id(&self) -> String {
        match self.line() {
            Some(l) => format!("{}-{l}", self.stem),
            None => self.stem.to_string(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line() {
            Some(l) => write!(f, "{}:{l}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// The lines of a file before the offset a shard starts reading it at: counted the first
/// time a line number is shown (a diagnostic, a default id), by reading the file up to there
/// again; a shard whose jobs all have ids and decode never reads those bytes.
#[derive(Debug)]
pub struct LinesBefore {
    file: Arc<File>,
    upto: u64,
    count: std::sync::OnceLock<usize>,
}

impl LinesBefore {
    fn count(&self) -> usize {
        *self.count.get_or_init(|| count_newlines(&self.file, self.upto))
    }
}

/// The newlines in the first `upto` bytes of `file`, read at offsets so that the handle's
/// own position (the reader's) does not move. A read error stops the count where it is: the
/// file was read up to `upto` a moment before, so it is not expected.
fn count_newlines(file: &File, upto: u64) -> usize {
    let mut buf = vec![0u8; 1 << 20];
    let (mut at, mut n) = (0u64, 0usize);
    while at < upto {
        let want = buf.len().min((upto - at) as usize);
        match read_at(file, &mut buf[..want], at) {
            Ok(0) | Err(_) => break,
            Ok(got) => {
                n += memchr::memchr_iter(b'\n', &buf[..got]).count();
                at += got as u64;
            }
        }
    }
    n
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

/// Fills `buf` from `at`, short only at the file's end.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_at(file, &mut buf[got..], at + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// What an entry carries.
#[derive(Debug)]
pub enum Body {
    /// Whole JSON lines, not split or decoded yet (both are parallel work).
    Lines(LineBlock),
    /// A history decoded by the source itself (YAML files; later Lookout rows).
    History(Box<FailureHistory>),
    /// A problem with this entry (unreadable file, over-long line); the job is skipped.
    Error(String),
    /// A text with no document at all: an error ([`EMPTY_TEXT`]) beside other entries, and
    /// no content of its own (a history of nothing but such texts is an empty input).
    Empty,
    /// A YAML file whose documents are invalid, with every diagnostic.
    Invalid(Box<SourceFile>),
    /// A record the source itself left out, reported as the source reports it (a Lookout
    /// row that cannot be read, docs/lookout.md): not replayed, and not an error of the replay,
    /// since `history` exits 0 for it too. `job`: the job it belongs to.
    LeftOut { text: String, job: String },
}

/// Consecutive lines of a JSON Lines input, as read (blank lines, `\r` and all).
#[derive(Debug)]
pub struct LineBlock {
    pub bytes: Vec<u8>,
    /// The number of the block's first line in its file (counted from where its reader
    /// started, see [`Origin`]).
    pub first_line: usize,
    /// The byte offset of the block in its file (`None` on a stream, whose blocks may have
    /// lines of other shards blanked out).
    pub first_offset: Option<u64>,
    /// How many lines it holds (blank ones included).
    pub count: usize,
    /// How many lines were kept: all of them, but with [`HistorySource::sift`], where every
    /// line of another shard is left blank (its newline kept, so that the lines after it
    /// keep their numbers). The most jobs the block can hold.
    pub kept: usize,
}

impl LineBlock {
    /// `(line number, order, trimmed line)` of every line with content; the order is
    /// [`Origin`]'s `at`: the line's offset plus one, or its number.
    pub fn lines(&self) -> impl Iterator<Item = (usize, u64, &[u8])> {
        let mut rest = self.bytes.as_slice();
        let mut n = self.first_line;
        let mut offset = self.first_offset;
        std::iter::from_fn(move || loop {
            if rest.is_empty() {
                return None;
            }
            let (line, tail) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            let at = offset.map_or(n as u64, |o| o + 1);
            // A UTF-8 byte order mark at the start of a file is no part of its first line.
            let line = if offset == Some(0) {
                line.strip_prefix(BOM).unwrap_or(line)
            } else {
                line
            };
            if let Some(o) = &mut offset {
                *o += (rest.len() - tail.len()) as u64;
            }
            rest = tail;
            n += 1;
            let line = line.trim_ascii();
            if !line.is_empty() {
                return Some((n - 1, at, line));
            }
        })
    }
}

/// The error of a YAML or JSON text with no document at all (empty, blank or comments only):
/// reported beside other entries, and an empty input when it is all there is.
pub const EMPTY_TEXT: &str = "no FailureHistory document (it is empty)";

/// The UTF-8 byte order mark some editors (and PowerShell's `Out-File`) write at the start of
/// a text: skipped at the start of a history file or stdin, as no part of its first line or
/// document.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The compressions told by a history's first bytes (gzip's `1f 8b`, zstd's `28 b5 2f fd`),
/// each with the command that decompresses it: a history is read uncompressed, and a
/// compressed one is refused by what it is rather than read as text it is not.
const COMPRESSED: [(&[u8], &str, &str); 2] = [(b"\x1f\x8b", "gzip", "zcat"), (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat")];

/// The compression `head` (a history's first bytes) starts with, and its decompressing command.
fn compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    COMPRESSED
        .iter()
        .find(|(magic, _, _)| head.starts_with(magic))
        .map(|&(_, kind, cat)| (kind, cat))
}

/// The first bytes of the file at `path` (fewer when it is shorter): enough for [`compression`].
fn head_of(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(4);
    File::open(path)?.take(4).read_to_end(&mut head)?;
    Ok(head)
}

/// A compressed history given as `--history` (a file, stdin or another stream): refused
/// whole (exit 3), with how to give it decompressed (a stream's file is not known here).
fn refuse_compressed(path: &Path, (kind, cat): (&str, &str), stream: bool) -> CliError {
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

/// Bytes of lines read into one [`LineBlock`]: ~250 lines, a millisecond or two of work,
/// so that both cores get many blocks and the reader does nothing per line, while the
/// records rendered from a few blocks (`-o jsonl`: ~5x the input) stay a few MiB.
pub const BLOCK_BYTES: usize = 128 * 1024;

#[derive(Debug)]
pub struct Entry {
    pub origin: Origin,
    pub settings: Arc<Settings>,
    pub body: Body,
}

/// How far a source is, for the progress bar.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub done: u64,
    /// 0 when not known.
    pub total: u64,
    pub counted: Counted,
}

/// What a [`Progress`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Counted {
    /// Files of a directory (or the one file).
    #[default]
    Files,
    /// Bytes of one JSON Lines file.
    Bytes,
    /// Jobs read from a source whose size is not known before its end (Lookout).
    Jobs,
}

/// A stream of histories. `Send` so that it can be read on its own thread while workers
/// decode and evaluate.
pub trait HistorySource: Iterator<Item = Entry> + Send {
    fn progress(&self) -> Progress;
    /// Many jobs (JSON Lines, a directory): the table format prints only the summary.
    fn bulk(&self) -> bool;
    /// From now on, leave out what is not `shard`'s (docs/past-one-machine.md): its blocks
    /// of JSON lines hold only the shard's lines ([`LineBlock`]), which the workers then take
    /// as they are. `true`: every entry it yields is the shard's (files, read by byte range;
    /// a database, which selected the shard's rows); `false`: the workers sort the entries
    /// that are not blocks by their job id (a stream). [`super::parallel::for_each_ordered`]
    /// calls it before the first entry is read.
    fn sift(&mut self, shard: Shard) -> bool;
}

/// `--global-max-retries` / `--default-policy`, applied over whichever config a job gets.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub global_max_retries: Option<u32>,
    pub default_policy: Option<String>,
}

impl Overrides {
    pub fn apply(&self, config: &SchedulerConfig) -> Settings {
        let mut s = Settings::from_config(config);
        if let Some(g) = self.global_max_retries {
            s.global_max_retries = g;
        }
        if let Some(d) = &self.default_policy {
            s.default_policy_name = Some(d.clone());
        }
        s
    }
}

type Input = Box<dyn BufRead + Send>;

struct Lines {
    reader: Input,
    file: Arc<str>,
    stem: Arc<str>,
    line_no: usize,
    /// A line read ahead (a stream's detection), handed out first.
    first: Option<Vec<u8>>,
    /// The offset in the file of the next byte read (`None`: a stream, read once).
    pos: Option<u64>,
    /// A shard's end in the file: no line starting at or past it is read.
    end: u64,
    /// The lines before where reading started (a shard's range).
    before: Option<Arc<LinesBefore>>,
}

/// Files, directories and streams.
pub struct Files {
    /// The place of the file read last among those opened (from 1).
    ordinal: u64,
    queue: VecDeque<PathBuf>,
    lines: Option<Lines>,
    ready: VecDeque<Entry>,
    overrides: Overrides,
    settings: Arc<Settings>,
    bulk: bool,
    progress: Progress,
    /// stdin or another input that is not a regular file ([`is_stream`]): read once, in
    /// order, from its start (never by byte range), its format told by its content.
    stream: bool,
    /// With [`Files::digest`]: every byte read so far, hashed, and where the total goes.
    digest: Option<(foldhash::fast::FoldHasher<'static>, Digest)>,
    /// With [`HistorySource::sift`] on a stream: the shard whose lines are kept.
    shard: Option<Shard>,
    /// With [`HistorySource::sift`] on files: the shard's byte range ([`Range`]), and where
    /// each file still queued starts in the source (as `queue`).
    range: Option<Range>,
    starts: VecDeque<(u64, u64)>,
    /// A directory of more than one file: the job ids its files give, to refuse one given
    /// by two files.
    ids: Option<JobIds>,
    /// What opening a stream read (the blank lines before the first line, a YAML text),
    /// hashed: [`Files::digest`] starts from it.
    opened: Option<foldhash::fast::FoldHasher<'static>>,
    /// A stream whose first bytes say it is compressed ([`compression`]): `open` refuses it.
    compressed: Option<(&'static str, &'static str)>,
}

fn new_hasher() -> foldhash::fast::FoldHasher<'static> {
    foldhash::fast::FixedState::with_seed(0).build_hasher()
}

/// One piece of what a source read, with its length: no two splits of different bytes hash
/// alike by construction.
fn add_to_digest(h: &mut foldhash::fast::FoldHasher<'static>, bytes: &[u8]) {
    h.write_usize(bytes.len());
    h.write(bytes);
}

/// A digest of the history (docs/past-one-machine.md: a partial result names the history it
/// was made from, and `merge` refuses partials of two): files, what every shard can see of
/// them without reading them all ([`fingerprint`]); a stream, every byte read, set when it has
/// read the last. A fast 64-bit hash, not a cryptographic one: it tells histories apart, it
/// does not authenticate them. The same input gives the same digest in every shard of the
/// same build.
#[derive(Debug, Clone, Default)]
pub struct Digest(Arc<Mutex<Option<u64>>>);

impl Digest {
    /// The digest, once the source has ended.
    pub fn get(&self) -> Option<u64> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, value: u64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }
}

/// Whether `--history PATH` is a stream, read once ([`Files`]): stdin (`-`), or a path that
/// is neither a regular file nor a directory (a named pipe, `/dev/fd/N`, a device). A path
/// that cannot be read is not: opening it says why.
pub fn is_stream(path: &Path) -> bool {
    path.as_os_str() == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_dir() && !m.is_file())
}

/// A file source's files as they are at one moment: each one's size and modification time.
/// Two taken at two moments tell whether the files changed in between (`suggest` reads its
/// history twice, docs/reference/suggest.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamps(Vec<(PathBuf, Option<(u64, std::time::SystemTime)>)>);

/// How a file of a source changed between two [`Stamps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Altered {
    Added,
    Removed,
    /// Its size or modification time.
    Written,
}

impl Stamps {
    fn of<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Stamps {
        Stamps(
            paths
                .map(|p| {
                    let stamp = std::fs::metadata(p)
                        .ok()
                        .map(|m| (m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)));
                    (p.clone(), stamp)
                })
                .collect(),
        )
    }

    /// The first file (in the source's order) that is not as it was in `self`, and how.
    pub fn changed(&self, now: &Stamps) -> Option<(PathBuf, Altered)> {
        let before: std::collections::HashMap<&PathBuf, _> = self.0.iter().map(|(p, s)| (p, s)).collect();
        let after: std::collections::HashMap<&PathBuf, _> = now.0.iter().map(|(p, s)| (p, s)).collect();
        for (p, s) in &self.0 {
            match after.get(p) {
                None => return Some((p.clone(), Altered::Removed)),
                Some(now) if *now != s => return Some((p.clone(), Altered::Written)),
                Some(_) => {}
            }
        }
        now.0
            .iter()
            .find(|(p, _)| !before.contains_key(p))
            .map(|(p, _)| (p.clone(), Altered::Added))
    }
}

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
            ids: None,
            digest: None,
            shard: None,
            range: None,
            starts: VecDeque::new(),
            opened: None,
            compressed: None,
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
        if !meta.is_dir() && !meta.is_file() {
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
            if entries.len() > 1 {
                files.ids = Some(JobIds::default());
            }
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

    /// Its files as they are now (`None`: a stream, which has no size to compare). Taken
    /// before the first entry is read, what the source will read.
    pub fn stamps(&self) -> Option<Stamps> {
        (!self.stream).then(|| Stamps::of(self.queue.iter()))
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
    /// could not be read. JSON lines are hashed one by one as they are read ([`Sieve`]), so
    /// that the digest does not depend on how reads cut the input (a pipe's do not cut it
    /// alike twice).
    fn hash(&mut self, bytes: &[u8]) {
        if let Some((h, _)) = &mut self.digest {
            add_to_digest(h, bytes);
        }
    }

    fn error(&self, file: &str, stem: &Arc<str>, line: Option<usize>, message: String) -> Entry {
        self.entry(file, stem, line, Body::Error(message))
    }

    fn entry(&self, file: &str, stem: &Arc<str>, line: Option<usize>, body: Body) -> Entry {
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

    /// Opening a stream reads up to its first line with content, to tell JSON Lines from
    /// YAML, and a YAML text whole: before [`Files::digest`] can be asked for. Those bytes are
    /// hashed all the same and kept for it; else shards given other blank lines before the
    /// first job, or other YAML texts, on stdin would agree that they read one history.
    /// `file`: its name in messages; `stem`: its default job id.
    fn open_stream(&mut self, input: Box<dyn Read + Send>, file: Arc<str>, stem: Arc<str>) {
        self.stream = true;
        self.digest = Some((new_hasher(), Digest::default()));
        self.start_stream(input, file, stem);
        self.opened = self.digest.take().map(|(h, _)| h);
    }

    fn start_stream(&mut self, input: Box<dyn Read + Send>, file: Arc<str>, stem: Arc<str>) {
        self.ordinal += 1;
        let mut reader: Input = Box::new(BufReader::with_capacity(1 << 16, input));
        let mut first = Vec::new();
        // Skip blank lines to find the first line with content; kept (up to the size limit)
        // for a YAML text, whose line numbers count them.
        let mut skipped = 0usize;
        let mut blank = Vec::new();
        loop {
            first.clear();
            let read = (&mut reader).take(MAX_FILE_BYTES + 1).read_until(b'\n', &mut first);
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

    /// One YAML or JSON text of FailureHistory (and optionally SchedulerConfig) documents,
    /// of which the documents starting in `mine` are kept.
    fn yaml_entries(&mut self, name: &Arc<str>, stem: &Arc<str>, text: Result<String, String>, mine: Mine) {
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
            // (`commands::replay_source`).
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
                    Some(ids) if !h.job.id.is_empty() => ids.elsewhere(h.job.id.as_bytes(), ordinal),
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

    /// The next block of lines of the open JSON Lines input, or `None` at its end. Lines
    /// are split by the workers; here they are only counted, for the next block's first
    /// line number. A line longer than what is buffered is read on its own, with the 8 MiB
    /// limit; one over the limit (or a read error) ends the block, and its error entry
    /// follows the block.
    fn next_block(&mut self) -> Option<Entry> {
        let settings = self.settings.clone();
        let counting = self.progress.counted == Counted::Bytes;
        let lines = self.lines.as_mut()?;
        let first_line = lines.line_no + 1;
        let first_offset = lines.pos;
        let (file, stem, ordinal, before) = (
            lines.file.clone(),
            lines.stem.clone(),
            self.ordinal,
            lines.before.clone(),
        );
        let origin = |line: usize, at: Option<u64>| Origin {
            file: file.clone(),
            line: Some(line),
            before: before.clone(),
            at: at.map_or(line as u64, |o| o + 1),
            stem: stem.clone(),
            ordinal,
            doc: 0,
        };
        let error = |line: usize, at: Option<u64>, message: String| Entry {
            origin: origin(line, at),
            settings: settings.clone(),
            body: Body::Error(message),
        };
        let mut sieve = Sieve {
            digest: self.digest.as_mut().map(|(h, _)| h),
            shard: self.shard.map(Owner::new),
            ids: self.ids.as_mut().map(|ids| (ids, ordinal)),
            kept: 0,
            stem: &stem,
        };
        let sifting = sieve.digest.is_some() || sieve.shard.is_some() || sieve.ids.is_some();
        let mut bytes = Vec::with_capacity(BLOCK_BYTES + (1 << 16));
        let mut read = 0u64;
        let mut after: Option<Entry> = None;
        let mut end = false;
        if let Some(first) = lines.first.take() {
            // The line a stream's detection read (whole, or cut at the limit).
            read += first.len() as u64;
            if let Err(cut) = one_line(lines, first, &mut sieve, &mut bytes) {
                end = cut.end;
                after = Some(error(cut.line, cut.at, cut.message));
            }
        }
        while after.is_none() && bytes.len() < BLOCK_BYTES {
            // A shard's range ends before the next line: the line crossing its end was its last.
            if lines.pos.is_some_and(|p| p >= lines.end) {
                end = true;
                break;
            }
            let buf = match lines.reader.fill_buf() {
                Ok(b) => b,
                Err(e) => {
                    lines.line_no += 1;
                    after = Some(error(lines.line_no, lines.pos, io_reason(&e)));
                    end = true;
                    break;
                }
            };
            if buf.is_empty() {
                break;
            }
            if let Some(mut i) = memchr::memrchr(b'\n', buf) {
                if let Some(pos) = lines.pos {
                    if pos + i as u64 >= lines.end {
                        // Up to the end of the line holding the range's last byte.
                        let last = (lines.end - 1 - pos) as usize;
                        i = last + memchr::memchr(b'\n', &buf[last..]).unwrap_or(i - last);
                    }
                }
                let part = &buf[..=i];
                // What of `part` is read: all of it, or up to a line that ends the block.
                let mut taken = part.len();
                if sifting {
                    let mut start = 0;
                    for end in memchr::memchr_iter(b'\n', part) {
                        lines.line_no += 1;
                        if let Err(message) = sieve.keep(&part[start..=end], lines.line_no, &mut bytes) {
                            after = Some(error(lines.line_no, lines.pos.map(|p| p + start as u64), message));
                            taken = end + 1;
                            break;
                        }
                        start = end + 1;
                    }
                } else {
                    lines.line_no += memchr::memchr_iter(b'\n', part).count();
                    bytes.extend_from_slice(part);
                }
                read += taken as u64;
                if let Some(pos) = &mut lines.pos {
                    *pos += taken as u64;
                }
                lines.reader.consume(taken);
                continue;
            }
            let mut line = Vec::new();
            match (&mut lines.reader)
                .take(MAX_FILE_BYTES + 1)
                .read_until(b'\n', &mut line)
            {
                Ok(_) => {
                    read += line.len() as u64;
                    if let Err(cut) = one_line(lines, line, &mut sieve, &mut bytes) {
                        end = cut.end;
                        after = Some(error(cut.line, cut.at, cut.message));
                    }
                }
                Err(e) => {
                    lines.line_no += 1;
                    after = Some(error(lines.line_no, lines.pos, io_reason(&e)));
                    end = true;
                }
            }
        }
        let block = (!bytes.is_empty()).then(|| Entry {
            origin: origin(first_line, first_offset),
            settings: settings.clone(),
            body: Body::Lines(LineBlock {
                bytes,
                first_line,
                first_offset,
                count: lines.line_no + 1 - first_line,
                kept: if sieve.shard.is_some() {
                    sieve.kept
                } else {
                    lines.line_no + 1 - first_line
                },
            }),
        });
        if counting {
            self.progress.done += read;
        }
        if end {
            self.lines = None;
        }
        match (block, after) {
            (Some(b), Some(a)) => {
                self.ready.push_back(a);
                Some(b)
            }
            (b, a) => b.or(a),
        }
    }
}

const LONG_LINE: &str = "line longer than 8 MiB";

/// How far past the limit the rest of an over-long line is skipped on a stream, whose end
/// may never come (`/dev/zero`): a line past it ends the reading of the stream.
pub const SKIP_MAX: u64 = 64 << 20;

/// An over-long line of a stream with no end within [`SKIP_MAX`] after the limit.
const ENDLESS_LINE: &str =
    "line longer than 8 MiB, with no line end in the 64 MiB after it: the rest of the input is not read";

/// A line that ends its block, reported in an error entry after it.
struct Cut {
    /// Its number and offset.
    line: usize,
    at: Option<u64>,
    message: String,
    /// Nothing more of the input is read.
    end: bool,
}

/// `line` (read with the 8 MiB limit plus one byte) is longer than the limit: its text,
/// without its newline, is over 8 MiB.
fn cut_at_limit(line: &[u8]) -> bool {
    let ended = line.last() == Some(&b'\n');
    (line.len() - usize::from(ended)) as u64 > MAX_FILE_BYTES
}

/// A line read on its own (up to the 8 MiB limit plus one byte, its newline included):
/// appended to `bytes`, or a [`Cut`] for an over-long line, whose rest is skipped (on a
/// stream, at most [`SKIP_MAX`] of it). The limit is on the line's text: a line of exactly
/// 8 MiB and its newline is within it (and its newline is not a reason to skip the next line).
fn one_line(lines: &mut Lines, line: Vec<u8>, sieve: &mut Sieve<'_>, bytes: &mut Vec<u8>) -> Result<(), Cut> {
    lines.line_no += 1;
    let at = lines.pos;
    if let Some(pos) = &mut lines.pos {
        *pos += line.len() as u64;
    }
    if cut_at_limit(&line) {
        // Cut by the limit: skip the rest of the over-long line, a buffer at a time (read
        // into memory, a line of gigabytes would take as many). A file's size bounds it; a
        // stream's only the cap.
        let limit = if lines.pos.is_some() { u64::MAX } else { SKIP_MAX };
        let (skipped, ended) = skip_line(&mut lines.reader, limit);
        if let Some(pos) = &mut lines.pos {
            *pos += skipped;
        }
        return Err(Cut {
            line: lines.line_no,
            at,
            message: if ended { LONG_LINE } else { ENDLESS_LINE }.to_string(),
            end: !ended,
        });
    }
    sieve.keep(&line, lines.line_no, bytes).map_err(|message| Cut {
        line: lines.line_no,
        at,
        message,
        end: false,
    })
}

/// Consumes the input up to and including the next newline, or to its end, or `limit` bytes,
/// whichever comes first: how many bytes, and whether the line ended (`false`: `limit` came
/// first). A read error ends it too: the next read reports it.
fn skip_line(reader: &mut Input, limit: u64) -> (u64, bool) {
    let mut skipped = 0;
    loop {
        let (found, n) = match reader.fill_buf() {
            Ok([]) | Err(_) => return (skipped, true),
            Ok(buf) => {
                let room = usize::try_from(limit - skipped).unwrap_or(usize::MAX);
                match memchr::memchr(b'\n', buf) {
                    Some(i) if i < room => (true, i + 1),
                    _ => (false, buf.len().min(room)),
                }
            }
        };
        reader.consume(n);
        skipped += n as u64;
        if found {
            return (skipped, true);
        }
        if skipped >= limit {
            return (skipped, false);
        }
    }
}

/// The job ids the files of a directory give, each with the first file that gave it: a job's
/// history is in one file, and a job given by two would be replayed, counted and compared
/// twice. Kept as 128-bit hashes (16 bytes an id, whatever its length; two ids alike by
/// chance are not to be expected before 2^64 of them). An id met again in the same file is
/// not looked at: only files are compared. A shard sees the ids of its own range only.
#[derive(Default)]
struct JobIds {
    seen: std::collections::HashMap<u128, u64>,
    /// The files' names by their place (from 1).
    files: Vec<Arc<str>>,
}

impl JobIds {
    /// `id`, met in the file at `ordinal`: the error of a job another file gave first.
    fn elsewhere(&mut self, id: &[u8], ordinal: u64) -> Option<String> {
        let hash = |seed: u64| {
            let mut h = foldhash::fast::FixedState::with_seed(seed).build_hasher();
            h.write(id);
            h.finish()
        };
        let key = (u128::from(hash(1)) << 64) | u128::from(hash(2));
        let first = *self.seen.entry(key).or_insert(ordinal);
        if first == ordinal {
            return None;
        }
        let file = self.files.get(first as usize - 1).map_or("", |f| &**f);
        Some(format!(
            "job {} is also in `{file}`: a directory's files hold different jobs, so this one is not replayed",
            crate::diag::quote(&String::from_utf8_lossy(id))
        ))
    }
}

/// What the reader does with each JSON line when it looks at them one by one: hash it into
/// the digest, and keep it only when it is the shard's.
struct Sieve<'a> {
    digest: Option<&'a mut foldhash::fast::FoldHasher<'static>>,
    shard: Option<Owner>,
    /// A directory's job ids so far, and the place of the file read.
    ids: Option<(&'a mut JobIds, u64)>,
    /// The file's stem: a line without a job id is the shard's of its default id.
    stem: &'a str,
    /// How many lines it kept.
    kept: usize,
}

impl Sieve<'_> {
    /// Appends `line` (numbered `n`, its newline included when it has one) to `bytes`, or
    /// only its newline when it is another shard's ([`Owner::owns_line`]: by its job id,
    /// else by its default id `stem-n`, as the workers would give it). `Err`: the message of
    /// a job id another file of the directory has ([`JobIds`]); the line is left out.
    fn keep(&mut self, line: &[u8], n: usize, bytes: &mut Vec<u8>) -> Result<(), String> {
        if let Some(h) = &mut self.digest {
            add_to_digest(h, line);
        }
        let ours = self.shard.is_none_or(|owner| {
            let text = line.trim_ascii();
            text.is_empty() || owner.owns_line(text, || format!("{}-{n}", self.stem))
        });
        if ours {
            if let Some((ids, ordinal)) = &mut self.ids {
                if let Some(id) = super::shard::line_job_id(line.trim_ascii()) {
                    if let Some(message) = ids.elsewhere(&id, *ordinal) {
                        if line.last() == Some(&b'\n') {
                            bytes.push(b'\n');
                        }
                        return Err(message);
                    }
                }
            }
            self.kept += 1;
            bytes.extend_from_slice(line);
        } else if line.last() == Some(&b'\n') {
            bytes.push(b'\n');
        }
        Ok(())
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

/// A shard's byte range of a source of `total` bytes (docs/past-one-machine.md).
#[derive(Debug, Clone, Copy)]
struct Range {
    shard: Shard,
    total: u64,
}

impl Range {
    /// What of the file at `start` (of `len` bytes) is this shard's.
    fn within(&self, start: u64, len: u64) -> Mine {
        let (lo, hi) = self.shard.byte_range(self.total);
        Mine {
            from: lo.saturating_sub(start).min(len),
            to: hi.saturating_sub(start).min(len),
            head: self.shard.owns_offset(start, self.total),
        }
    }
}

/// A shard's part of one file: the documents starting at an offset in `[from, to)` of it,
/// and, with `head`, what concerns the file as a whole (it cannot be read, it is not valid,
/// it holds no history), which the shard owning its first byte reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mine {
    from: u64,
    to: u64,
    head: bool,
}

impl Mine {
    /// The whole file (no shard, or one).
    const ALL: Mine = Mine {
        from: 0,
        to: u64::MAX,
        head: true,
    };

    fn owns(&self, offset: u64) -> bool {
        (self.from <= offset && offset < self.to) || (offset == 0 && self.head)
    }
}

/// `file` ready to read its lines from the first one starting at or after `from`: the
/// reader, the offset it is at, and (past the start) the lines before, counted when needed.
fn start_at_line(mut file: File, from: u64) -> std::io::Result<(Input, u64, Option<Arc<LinesBefore>>)> {
    use std::io::{Seek, SeekFrom};
    if from == 0 {
        return Ok((Box::new(BufReader::with_capacity(1 << 16, file)), 0, None));
    }
    let mut prev = [0u8];
    read_exact_at(&file, &mut prev, from - 1)?;
    file.seek(SeekFrom::Start(from))?;
    let counter = Arc::new(file.try_clone()?);
    let mut reader: Input = Box::new(BufReader::with_capacity(1 << 16, file));
    // Mid-line: that line is the shard's before, which reads past its end to finish it.
    let pos = if prev[0] == b'\n' {
        from
    } else {
        from + skip_line(&mut reader, u64::MAX).0
    };
    let before = LinesBefore {
        file: counter,
        upto: pos,
        count: std::sync::OnceLock::new(),
    };
    Ok((reader, pos, Some(Arc::new(before))))
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
fn marker_within(path: &Path, from: u64, to: u64) -> bool {
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
fn markers(text: &str) -> Vec<(usize, u64)> {
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
fn doc_start(markers: &[(usize, u64)], line: usize) -> u64 {
    let k = markers.partition_point(|&(l, _)| l <= line);
    if k == 0 {
        0
    } else {
        markers[k - 1].1
    }
}

/// The digest of a file source every shard can make without reading the files: each file's
/// name, size and modification time, and the first and last 64 KiB of the files in order.
fn fingerprint<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> u64 {
    const EDGE: u64 = 64 * 1024;
    let mut h = new_hasher();
    let mut files = Vec::new();
    let mut total = 0u64;
    for p in paths {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        add_to_digest(&mut h, name.as_bytes());
        let (len, modified) = match std::fs::metadata(p) {
            Ok(m) => {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                (m.len(), modified)
            }
            Err(_) => (0, 0),
        };
        h.write_u64(len);
        h.write_u128(modified);
        files.push((p, total, len));
        total += len;
    }
    h.write_u64(total);
    // The bytes at [0, 64 KiB) and [S − 64 KiB, S) of the files as one sequence.
    for (lo, hi) in [(0, EDGE.min(total)), (total.saturating_sub(EDGE), total)] {
        for &(p, start, len) in &files {
            let (from, to) = (lo.max(start), hi.min(start + len));
            if from >= to {
                continue;
            }
            let mut buf = vec![0u8; (to - from) as usize];
            let got = File::open(p)
                .and_then(|f| read_exact_at(&f, &mut buf, from - start))
                .unwrap_or(0);
            add_to_digest(&mut h, &buf[..got]);
        }
    }
    h.finish()
}

fn decode_text(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB; write bulk histories as JSON Lines (`.jsonl`), which is streamed",
            MAX_FILE_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

fn read_limited(path: &Path) -> Result<String, String> {
    let file = File::open(path).map_err(|e| io_reason(&e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_reason(&e))?;
    decode_text(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is left of an over-long line, longer than the reader's buffer many times over,
    /// is skipped: the next read starts at the next line, and a last line without a newline
    /// is skipped to the input's end (and skipping at the end is a no-op).
    /// What each shard of `path` yields: `(line, order, text)` of every line with content,
    /// and `(line, order, message)` of every error, shard after shard.
    fn sharded(path: &Path, n: u64) -> Vec<(usize, u64, String)> {
        let mut out = Vec::new();
        for i in 0..n {
            let mut files = Files::open(path, SchedulerConfig::default(), Overrides::default()).unwrap();
            assert!(files.sift(Shard { index: i, count: n }));
            for entry in files {
                match entry.body {
                    Body::Lines(block) => {
                        let mut origin = entry.origin.clone();
                        for (line, at, text) in block.lines() {
                            origin.at_line(line, at);
                            let text = String::from_utf8_lossy(text).into_owned();
                            out.push((origin.line().unwrap(), origin.pos().1, text));
                        }
                    }
                    Body::Error(message) => out.push((entry.origin.line().unwrap(), entry.origin.pos().1, message)),
                    Body::Empty => out.push((
                        entry.origin.line().unwrap(),
                        entry.origin.pos().1,
                        EMPTY_TEXT.to_string(),
                    )),
                    other => panic!("{other:?}"),
                }
            }
        }
        out
    }

    /// A line longer than the limit, crossing several shards' ranges, is reported once, by
    /// the shard where it starts, with its line number; the lines around it are each read
    /// once, numbered as in the file and ordered by their offsets, whatever N.
    #[test]
    fn shards_read_each_line_once_even_across_an_over_long_one() {
        let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
        let long = "x".repeat(MAX_FILE_BYTES as usize + 10);
        let text = format!("a\n\n{long}\nb\nc");
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let b_at = text.find("\nb").unwrap() as u64 + 2;
        let want = vec![
            (1, 1, "a".to_string()),
            (3, 4, LONG_LINE.to_string()),
            (4, b_at, "b".to_string()),
            (5, b_at + 2, "c".to_string()),
        ];
        for n in [1, 2, 3, 5, 40] {
            assert_eq!(sharded(f.path(), n), want, "{n} shards");
        }
    }

    /// A YAML document starts at its `---` (or the file's start): markers only at a line's
    /// start and followed by a blank or the end.
    #[test]
    fn yaml_documents_start_at_their_markers() {
        let text = "# c\nkind: A\n--- \nkind: B\n---x\n  ---\n---\n---";
        let m = markers(text);
        assert_eq!(m, vec![(3, 12), (7, 36), (8, 40)]);
        assert_eq!(doc_start(&m, 2), 0);
        assert_eq!(doc_start(&m, 3), 12);
        assert_eq!(doc_start(&m, 6), 12);
        assert_eq!(doc_start(&m, 7), 36);
    }

    #[test]
    fn skipping_a_line_stops_after_its_newline_or_at_the_end() {
        let text = format!("{}\nnext\n{}", "x".repeat(100_000), "y".repeat(5_000));
        let mut reader: Input = Box::new(BufReader::with_capacity(1024, std::io::Cursor::new(text.into_bytes())));
        assert_eq!(skip_line(&mut reader, u64::MAX), (100_001, true));
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "next\n");
        assert_eq!(skip_line(&mut reader, u64::MAX), (5_000, true));
        assert_eq!(reader.fill_buf().unwrap(), b"");
        assert_eq!(skip_line(&mut reader, u64::MAX), (0, true));
        assert_eq!(reader.fill_buf().unwrap(), b"");
    }

    /// A limit stops the skip where it is (`false`: no line end before it), buffers of any
    /// size; a newline within it ends the skip as without one.
    #[test]
    fn skipping_a_line_stops_at_its_limit() {
        let text = format!("{}\nnext", "x".repeat(10_000));
        for capacity in [7, 1024, 1 << 16] {
            let mut reader: Input = Box::new(BufReader::with_capacity(
                capacity,
                std::io::Cursor::new(text.clone().into_bytes()),
            ));
            assert_eq!(skip_line(&mut reader, 4_000), (4_000, false), "{capacity}");
            assert_eq!(skip_line(&mut reader, 6_001), (6_001, true), "{capacity}");
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).unwrap();
            assert_eq!(rest, b"next");
        }
    }
}
