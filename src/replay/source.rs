//! Where histories come from (docs/simulate.md): one YAML/JSON file, a JSON Lines file, a
//! directory of either, or stdin (`--history -`) — as one stream of [`Entry`]s.
//!
//! Owns: [`HistorySource`], the one streaming interface every source implements (Lookout's
//! database, `lookout::export_source`, yields `Body::History` entries through it), file
//! discovery, the 8 MiB limits, which settings apply to which job (a SchedulerConfig
//! document in a history file applies to that file's jobs), and job ids by default (the
//! file stem; `stem-LINE` in JSON Lines). JSON Lines are read as blocks of whole lines
//! ([`LineBlock`]) whose lines are only counted here. Must not: split or decode JSON lines
//! (workers do that in parallel, see `run` and `json_lines`), evaluate or print.
//!
//! Decision docs/simulate.md leaves open: stdin is JSON Lines when its first line that is
//! not blank is one complete JSON value (or is longer than the 8 MiB a line may be and
//! starts with `{` or is all blanks: an over-long JSON line, reported as a file's is), else
//! one YAML/JSON text (at most 8 MiB), like a file.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::engine::Settings;
use crate::input::{io_reason, SourceFile, MAX_FILE_BYTES};
use crate::model::failure_history::FailureHistory;
use crate::model::scheduler::SchedulerConfig;
use crate::model::{parse_documents, Kind, Resource};

use super::shard::{Owner, Shard};

/// Where one entry came from: `file` or `file:line`.
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: Arc<str>,
    pub line: Option<usize>,
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
/// the file's place and the entry's line (JSON Lines) or document (YAML); a database: 0 and
/// the job's place in the database's order of its ids.
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

    /// Where this origin's entry stands ([`Pos`]).
    pub fn pos(&self) -> Pos {
        Pos(self.ordinal, self.line.map_or(self.doc, |l| l as u64))
    }

    /// The job id when the history gives none.
    pub fn default_id(&self) -> String {
        match self.line {
            Some(l) => format!("{}-{l}", self.stem),
            None => self.stem.to_string(),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}", self.file),
            None => f.write_str(&self.file),
        }
    }
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
    /// The number of the block's first line in its file.
    pub first_line: usize,
    /// How many lines it holds (blank ones included).
    pub count: usize,
    /// How many lines were kept: all of them, but with [`HistorySource::sift`], where every
    /// line of another shard is left blank (its newline kept, so that the lines after it
    /// keep their numbers). The most jobs the block can hold.
    pub kept: usize,
}

impl LineBlock {
    /// `(line number, trimmed line)` of every line with content.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &[u8])> {
        let mut rest = self.bytes.as_slice();
        let mut n = self.first_line;
        std::iter::from_fn(move || loop {
            if rest.is_empty() {
                return None;
            }
            let (line, tail) = match memchr::memchr(b'\n', rest) {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            rest = tail;
            n += 1;
            let line = line.trim_ascii();
            if !line.is_empty() {
                return Some((n - 1, line));
            }
        })
    }
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
    /// From now on, leave out what is not `shard`'s where the source can tell cheaply
    /// (docs/past-one-machine.md): its blocks of JSON lines hold only the shard's lines ([`LineBlock`]), which the
    /// workers then take as they are. Every other entry the workers sort themselves.
    /// [`super::parallel::for_each_ordered`] calls it before the first entry is read.
    fn sift(&mut self, shard: Shard);
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
    /// A line read ahead (stdin detection), handed out first.
    first: Option<Vec<u8>>,
}

/// Files, directories and stdin.
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
    stdin: bool,
    /// With [`Files::digest`]: every byte read so far, hashed, and where the total goes.
    digest: Option<(foldhash::fast::FoldHasher<'static>, Digest)>,
    /// With [`HistorySource::sift`]: the shard whose lines are kept.
    shard: Option<Shard>,
    /// What opening stdin read (the blank lines before the first line, a YAML text),
    /// hashed: [`Files::digest`] starts from it.
    opened: Option<foldhash::fast::FoldHasher<'static>>,
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

/// A digest of every byte a source read, set when it has read the last (docs/past-one-machine.md: a partial
/// result names the history it was made from, and `merge` refuses partials of two). A fast
/// 64-bit hash, not a cryptographic one: it tells histories apart, it does not authenticate
/// them. The same bytes give the same digest in every shard of the same build.
#[derive(Debug, Clone, Default)]
pub struct Digest(Arc<Mutex<Option<u64>>>);

impl Digest {
    /// The digest, once the source has ended.
    pub fn get(&self) -> Option<u64> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The digest of a list of job ids (a database's jobs, in order).
    pub fn of_ids(ids: &[String]) -> Digest {
        let mut h = foldhash::fast::FixedState::with_seed(0).build_hasher();
        for id in ids {
            h.write_usize(id.len());
            h.write(id.as_bytes());
        }
        let d = Digest::default();
        d.set(h.finish());
        d
    }

    fn set(&self, value: u64) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
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
    /// `Err` is the message for a history path that cannot be read at all.
    pub fn open(path: &Path, base: SchedulerConfig, overrides: Overrides) -> Result<Files, String> {
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
            stdin: false,
            digest: None,
            shard: None,
            opened: None,
        };
        if path.as_os_str() == "-" {
            files.stdin = true;
            files.open_stdin();
            return Ok(files);
        }
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("cannot read history `{}`: {}", path.display(), io_reason(&e)))?;
        if meta.is_dir() {
            files.bulk = true;
            let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("cannot read directory `{}`: {}", path.display(), io_reason(&e)))?
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

    /// Hashes every byte read from now on (call it before the first entry is read): the
    /// [`Digest`] is set once the source has ended.
    pub fn digest(&mut self) -> Digest {
        let d = Digest::default();
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
        Entry {
            origin: Origin {
                file: file.into(),
                line,
                stem: stem.clone(),
                ordinal: self.ordinal,
                doc: 0,
            },
            settings: self.settings.clone(),
            body: Body::Error(message),
        }
    }

    /// Opening stdin reads up to its first line with content, to tell JSON Lines from YAML,
    /// and a YAML text whole: before [`Files::digest`] can be asked for. Those bytes are
    /// hashed all the same and kept for it; else shards given other blank lines before the
    /// first job, or other YAML texts, on stdin would agree that they read one history.
    fn open_stdin(&mut self) {
        self.digest = Some((new_hasher(), Digest::default()));
        self.start_stdin();
        self.opened = self.digest.take().map(|(h, _)| h);
    }

    fn start_stdin(&mut self) {
        self.ordinal += 1;
        let file: Arc<str> = "<stdin>".into();
        let stem: Arc<str> = "stdin".into();
        let mut reader: Input = Box::new(BufReader::with_capacity(1 << 16, std::io::stdin()));
        let mut first = Vec::new();
        // Skip blank lines to find the first line with content; kept (up to the size limit)
        // for a YAML text, whose line numbers count them.
        let mut skipped = 0usize;
        let mut blank = Vec::new();
        loop {
            first.clear();
            match (&mut reader).take(MAX_FILE_BYTES + 1).read_until(b'\n', &mut first) {
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
        // A first line cut at the limit, of JSON or of blanks only, is an over-long JSON
        // line, as it is in a file: the reader reports it and goes on with the next (a YAML
        // text that long is refused whole either way).
        let one_json_value = match trimmed.first() {
            Some(b'{') => cut_at_limit(&first) || serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok(),
            None => cut_at_limit(&first),
            Some(_) => false,
        };
        if one_json_value {
            self.bulk = true;
            self.lines = Some(Lines {
                reader,
                file,
                stem,
                line_no: skipped,
                first: Some(first),
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
        self.yaml_entries(&file, &stem, result);
    }

    fn open_file(&mut self, path: &Path) {
        self.ordinal += 1;
        let name: Arc<str> = path.display().to_string().into();
        let stem = stem_of(path, "job");
        if is_jsonl(path) {
            match File::open(path) {
                Ok(f) => {
                    let reader: Input = Box::new(BufReader::with_capacity(1 << 16, f));
                    self.lines = Some(Lines {
                        reader,
                        file: name,
                        stem,
                        line_no: 0,
                        first: None,
                    })
                }
                Err(e) => {
                    let entry = self.error(&name, &stem, None, io_reason(&e));
                    self.ready.push_back(entry);
                }
            }
            return;
        }
        let result = read_limited(path);
        self.yaml_entries(&name, &stem, result);
    }

    /// One YAML or JSON text of FailureHistory (and optionally SchedulerConfig) documents.
    fn yaml_entries(&mut self, name: &Arc<str>, stem: &Arc<str>, text: Result<String, String>) {
        let text = match text {
            Ok(t) => {
                self.hash(t.as_bytes());
                t
            }
            Err(msg) => {
                let entry = self.error(name, stem, None, msg);
                self.ready.push_back(entry);
                return;
            }
        };
        let parsed = parse_documents(&text, Some(&[Kind::FailureHistory, Kind::SchedulerConfig]));
        let file = SourceFile {
            name: name.to_string(),
            errors: parsed.syntax_error.into_iter().collect(),
            documents: parsed.documents,
        };
        let origin = Origin {
            file: name.clone(),
            line: None,
            stem: stem.clone(),
            ordinal: self.ordinal,
            doc: 0,
        };
        if file.error_count() > 0 {
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
        let before = self.ready.len();
        for doc in file.documents {
            if let Some(Resource::FailureHistory(h)) = doc.resource {
                self.ready.push_back(Entry {
                    origin: Origin {
                        doc: doc.index as u64 + 1,
                        ..origin.clone()
                    },
                    settings: settings.clone(),
                    body: Body::History(h),
                });
            }
        }
        if self.ready.len() == before {
            // An empty history is a mistake (a wrong path, a truncated file), not a pass.
            let entry = self.error(name, stem, None, "no FailureHistory document".to_string());
            self.ready.push_back(entry);
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
        let (file, stem, ordinal) = (lines.file.clone(), lines.stem.clone(), self.ordinal);
        let error = |line: usize, message: String| Entry {
            origin: Origin {
                file: file.clone(),
                line: Some(line),
                stem: stem.clone(),
                ordinal,
                doc: 0,
            },
            settings: settings.clone(),
            body: Body::Error(message),
        };
        let mut sieve = Sieve {
            digest: self.digest.as_mut().map(|(h, _)| h),
            shard: self.shard.map(Owner::new),
            kept: 0,
            stem: &stem,
        };
        let sifting = sieve.digest.is_some() || sieve.shard.is_some();
        let mut bytes = Vec::with_capacity(BLOCK_BYTES + (1 << 16));
        let mut read = 0u64;
        let mut after: Option<Entry> = None;
        let mut end = false;
        if let Some(first) = lines.first.take() {
            // The line stdin detection read (whole, or cut at the limit).
            read += first.len() as u64;
            after = one_line(lines, first, &mut sieve, &mut bytes)
                .err()
                .map(|n| error(n, LONG_LINE.to_string()));
        }
        while after.is_none() && bytes.len() < BLOCK_BYTES {
            let buf = match lines.reader.fill_buf() {
                Ok(b) => b,
                Err(e) => {
                    lines.line_no += 1;
                    after = Some(error(lines.line_no, io_reason(&e)));
                    end = true;
                    break;
                }
            };
            if buf.is_empty() {
                break;
            }
            if let Some(i) = memchr::memrchr(b'\n', buf) {
                let part = &buf[..=i];
                if sifting {
                    let mut start = 0;
                    for end in memchr::memchr_iter(b'\n', part) {
                        lines.line_no += 1;
                        sieve.keep(&part[start..=end], lines.line_no, &mut bytes);
                        start = end + 1;
                    }
                } else {
                    lines.line_no += memchr::memchr_iter(b'\n', part).count();
                    bytes.extend_from_slice(part);
                }
                read += part.len() as u64;
                lines.reader.consume(i + 1);
                continue;
            }
            let mut line = Vec::new();
            match (&mut lines.reader)
                .take(MAX_FILE_BYTES + 1)
                .read_until(b'\n', &mut line)
            {
                Ok(_) => {
                    read += line.len() as u64;
                    after = one_line(lines, line, &mut sieve, &mut bytes)
                        .err()
                        .map(|n| error(n, LONG_LINE.to_string()));
                }
                Err(e) => {
                    lines.line_no += 1;
                    after = Some(error(lines.line_no, io_reason(&e)));
                    end = true;
                }
            }
        }
        let block = (!bytes.is_empty()).then(|| Entry {
            origin: Origin {
                file: file.clone(),
                line: Some(first_line),
                stem: stem.clone(),
                ordinal,
                doc: 0,
            },
            settings: settings.clone(),
            body: Body::Lines(LineBlock {
                bytes,
                first_line,
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

/// `line` (read with the 8 MiB limit plus one byte) is longer than the limit: its text,
/// without its newline, is over 8 MiB.
fn cut_at_limit(line: &[u8]) -> bool {
    let ended = line.last() == Some(&b'\n');
    (line.len() - usize::from(ended)) as u64 > MAX_FILE_BYTES
}

/// A line read on its own (up to the 8 MiB limit plus one byte, its newline included):
/// appended to `bytes`, or `Err(its line number)` for an over-long line, whose rest is
/// skipped. The limit is on the line's text: a line of exactly 8 MiB and its newline is
/// within it (and its newline is not a reason to skip the next line).
fn one_line(lines: &mut Lines, line: Vec<u8>, sieve: &mut Sieve<'_>, bytes: &mut Vec<u8>) -> Result<(), usize> {
    lines.line_no += 1;
    if cut_at_limit(&line) {
        // Cut by the limit: skip the rest of the over-long line, a buffer at a time (read
        // into memory, a line of gigabytes would take as many).
        skip_line(&mut lines.reader);
        return Err(lines.line_no);
    }
    sieve.keep(&line, lines.line_no, bytes);
    Ok(())
}

/// Consumes the input up to and including the next newline, or to its end. A read error
/// ends it too: the next read reports it.
fn skip_line(reader: &mut Input) {
    loop {
        let (found, n) = match reader.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(buf) => match memchr::memchr(b'\n', buf) {
                Some(i) => (true, i + 1),
                None => (false, buf.len()),
            },
        };
        reader.consume(n);
        if found {
            return;
        }
    }
}

/// What the reader does with each JSON line when it looks at them one by one: hash it into
/// the digest, and keep it only when it is the shard's.
struct Sieve<'a> {
    digest: Option<&'a mut foldhash::fast::FoldHasher<'static>>,
    shard: Option<Owner>,
    /// The file's stem: a line without a job id is the shard's of its default id.
    stem: &'a str,
    /// How many lines it kept.
    kept: usize,
}

impl Sieve<'_> {
    /// Appends `line` (numbered `n`, its newline included when it has one) to `bytes`, or
    /// only its newline when it is another shard's ([`Owner::owns_line`]: by its job id,
    /// else by its default id `stem-n`, as the workers would give it).
    fn keep(&mut self, line: &[u8], n: usize, bytes: &mut Vec<u8>) {
        if let Some(h) = &mut self.digest {
            add_to_digest(h, line);
        }
        let ours = self.shard.is_none_or(|owner| {
            let text = line.trim_ascii();
            text.is_empty() || owner.owns_line(text, || format!("{}-{n}", self.stem))
        });
        if ours {
            self.kept += 1;
            bytes.extend_from_slice(line);
        } else if line.last() == Some(&b'\n') {
            bytes.push(b'\n');
        }
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
                if self.progress.counted != Counted::Bytes && !self.stdin {
                    self.progress.done += 1;
                }
                continue;
            }
            let path = self.queue.pop_front()?;
            self.open_file(&path);
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

    /// Blanks the JSON lines that are not `shard`'s as they are read: a line is looked at
    /// once, here, instead of being copied and handed to a worker only to be skipped there.
    fn sift(&mut self, shard: Shard) {
        self.shard = Some(shard);
    }
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
    #[test]
    fn skipping_a_line_stops_after_its_newline_or_at_the_end() {
        let text = format!("{}\nnext\n{}", "x".repeat(100_000), "y".repeat(5_000));
        let mut reader: Input = Box::new(BufReader::with_capacity(1024, std::io::Cursor::new(text.into_bytes())));
        skip_line(&mut reader);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "next\n");
        skip_line(&mut reader);
        assert_eq!(reader.fill_buf().unwrap(), b"");
        skip_line(&mut reader);
        assert_eq!(reader.fill_buf().unwrap(), b"");
    }
}
