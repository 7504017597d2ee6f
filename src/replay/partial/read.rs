//! Reading a partial: [`Partial`], with every check on one file (is it a partial, its version,
//! truncation, its count, its seal), the file read once: its header and end when it is
//! opened, its seal checked as its entries are read ([`Entries`]), its totals read again when
//! they are added, one partial at a time.
//!
//! Owns: the line reader (a line of at most [`MAX_LINE`] bytes), the file's identity (the file
//! read again is the one that was checked), and [`ReadError`]: what is wrong with a file, told
//! apart from a file that cannot be opened because too many are open, which is no fault of
//! the file. Must not: decode an entry's JSON (that is `entry`), check partials together or
//! merge their entries (that is `commands::merge` and `streams`), or word anything for people
//! but the words that follow a file's name.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::replay::shard_ids::FileIds;
use crate::replay::source::{read_exact_at, Pos};

use super::entry::{decode_entry, quick_at, AtOnly, Entry};
use super::format::{seal_hex, EndIn, Header, Seal, END, ENTRIES, MAGIC, SEAL, VERSION};

/// Lines longer than this are not a partial's (a report is far smaller; a tune's totals,
/// 10,000 candidates of a few hundred bytes each, too).
const MAX_LINE: u64 = 256 << 20;

/// One partial, checked on its own: its header and end read, its entries counted.
#[derive(Debug)]
pub struct Partial {
    /// As given on the command line.
    pub name: String,
    path: std::path::PathBuf,
    /// The file as it was checked, to find it the same when its entries are read again.
    identity: Identity,
    pub header: Header,
    /// The end without its totals: a sweep's are megabytes per partial, read again when
    /// they are added up ([`Partial::totals`]), one partial at a time.
    pub end: EndIn<serde::de::IgnoredAny>,
    /// Where the entries begin in the file (the header's length).
    entries_at: u64,
    /// Where the end line begins in the file, and its XXH3-128: the bytes the seal vouched for.
    end_at: u64,
    end_digest: u128,
    /// Its seal found right: by [`Partial::check`], or by its entries read to their end.
    pub(super) verified: Arc<AtomicBool>,
}

/// Why a partial was not read: what is wrong with it, or a limit of this machine (too many
/// files open), which is no fault of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// What is wrong with the file, in words that follow its name.
    Bad(String),
    /// The process (or the system) has as many files open as it may: `EMFILE`, `ENFILE`.
    TooManyOpen,
}

impl From<String> for ReadError {
    fn from(why: String) -> ReadError {
        ReadError::Bad(why)
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Bad(why) => f.write_str(why),
            ReadError::TooManyOpen => f.write_str("cannot be opened: too many files are open"),
        }
    }
}

/// Opens a partial (`what` went wrong, else): a full file table is told apart from a file
/// that cannot be read.
fn open_file(path: &Path) -> Result<File, ReadError> {
    File::open(path).map_err(|e| match e.raw_os_error() {
        #[cfg(unix)]
        Some(libc::EMFILE | libc::ENFILE) => ReadError::TooManyOpen,
        _ => ReadError::Bad(format!("cannot be read: {}", crate::input::io_reason(&e))),
    })
}

/// What tells a file apart from another put in its place, or from itself changed: its
/// device and inode, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    device_inode: (u64, u64),
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Identity {
    fn regular(meta: &std::fs::Metadata) -> Result<(), String> {
        if meta.is_file() {
            return Ok(());
        }
        Err("is not a regular file: merge reads a partial from its end first, which a pipe or a device cannot give; write it to a file first".into())
    }

    /// `Err` for what is not a regular file: a partial's end is read first, then its
    /// entries, which a pipe or a device cannot give (a FIFO hung merge).
    fn of(file: &File) -> Result<Identity, String> {
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot be read: {}", crate::input::io_reason(&e)))?;
        Identity::regular(&meta)?;
        #[cfg(unix)]
        let device_inode = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let device_inode = (0, 0);
        Ok(Identity {
            device_inode,
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// Reads a line of at most [`MAX_LINE`] bytes into `buf` (cleared); `Ok(false)` at the end.
fn read_line<R: BufRead>(r: &mut R, buf: &mut Vec<u8>) -> Result<bool, String> {
    // `read_until`'s newline search goes a word at a time; a merge searches every byte of
    // every partial, twice: the memchr crate's SIMD search, over the reader's own buffer.
    buf.clear();
    loop {
        let (done, used) = {
            let available = match r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(crate::input::io_reason(&e)),
            };
            match memchr::memchr(b'\n', available) {
                Some(i) => {
                    buf.extend_from_slice(&available[..=i]);
                    (true, i + 1)
                }
                None => {
                    buf.extend_from_slice(available);
                    (available.is_empty(), available.len())
                }
            }
        };
        r.consume(used);
        if buf.len() as u64 > MAX_LINE {
            return Err(format!("has a line longer than {} MiB", MAX_LINE >> 20));
        }
        if done {
            return Ok(!buf.is_empty());
        }
    }
}

/// A partial's file opened, what it is, and its first line (the header), read: `Err` for
/// what is not a regular file or does not begin as a partial.
fn first_line(path: &Path) -> Result<(BufReader<File>, Identity, Vec<u8>), ReadError> {
    // Looked at before it is opened: opening a named pipe waits for a writer.
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {}", crate::input::io_reason(&e)))?;
    Identity::regular(&meta)?;
    let file = open_file(path)?;
    let identity = Identity::of(&file)?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    // A file that does not begin as a partial is refused on its first bytes, not after a
    // first line of up to 256 MiB.
    let start = r.fill_buf().map_err(|e| crate::input::io_reason(&e))?;
    if !MAGIC.as_bytes().starts_with(&start[..start.len().min(MAGIC.len())]) || start.is_empty() {
        return Err(not_a_partial().into());
    }
    let mut line = Vec::new();
    read_line(&mut r, &mut line)?;
    Ok((r, identity, line))
}

impl Partial {
    /// Reads `path`'s header and its end (from the file's tail); `Err` says what is wrong
    /// with it (not a partial, a newer version, truncated, damaged). Its seal is checked as
    /// its entries are read ([`Partial::entries`], to their end) or by [`Partial::check`]:
    /// a merge reads each partial once. A file that does not end as a partial written whole
    /// does is read through at once, for the words of what is wrong with it.
    pub fn open(path: &Path) -> Result<Partial, ReadError> {
        let (r, identity, line) = first_line(path)?;
        let header = header(&line)?;
        let entries_at = line.len() as u64;
        let Some((end_at, line)) = tail_line(r.get_ref(), identity.len, entries_at)? else {
            return Partial::open_checked(path);
        };
        if !line.starts_with(END.as_bytes()) {
            return Partial::open_checked(path);
        }
        let end: EndIn<serde::de::IgnoredAny> = end(&line, None)?;
        Ok(Partial {
            name: path.display().to_string(),
            path: path.to_path_buf(),
            identity,
            header,
            end,
            entries_at,
            end_at,
            end_digest: xxhash_rust::xxh3::xxh3_128(&line),
            verified: Arc::default(),
        })
    }

    /// Its seal checked, by reading it through, when its entries were not read to their
    /// end. `Err`: what is wrong with the file, in the words [`Partial::open`] has for them
    /// when it reads a file through (`changed while it was merged` when the file is no
    /// longer the one opened).
    pub fn check(&self) -> Result<(), ReadError> {
        if self.verified.load(Ordering::Relaxed) {
            return Ok(());
        }
        let whole = Partial::open_checked(&self.path)?;
        if whole.identity != self.identity || whole.end_at != self.end_at || whole.end_digest != self.end_digest {
            return Err(ReadError::Bad(
                "changed while it was merged (another file in its place, or written to since it was checked)".into(),
            ));
        }
        self.verified.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Reads `path` through: its header, every line into the seal and counted, its end
    /// checked against both.
    fn open_checked(path: &Path) -> Result<Partial, ReadError> {
        let name = path.display().to_string();
        let (mut r, identity, mut line) = first_line(path)?;
        let header = header(&line)?;
        let mut seal = Seal::new();
        seal.update(&line);
        let entries_at = line.len() as u64;
        let mut at = entries_at;
        let mut entries = 0u64;
        let truncated = |entries: u64| {
            format!(
                "is truncated: it ends after {entries} {} without its end (was its shard cut short?)",
                if entries == 1 { "entry" } else { "entries" }
            )
        };
        loop {
            // Every line a recorder writes ends with a newline: one without was cut.
            if !read_line(&mut r, &mut line)? || line.last() != Some(&b'\n') {
                return Err(truncated(entries).into());
            }
            if line.starts_with(END.as_bytes()) {
                break;
            }
            seal.update(&line);
            at += line.len() as u64;
            entries += 1;
        }
        let end: EndIn<serde::de::IgnoredAny> = end(&line, Some(seal))?;
        let end_digest = xxhash_rust::xxh3::xxh3_128(&line);
        if read_line(&mut r, &mut line)? && !line.trim_ascii().is_empty() {
            return Err(ReadError::Bad("is damaged: there is more after its end".into()));
        }
        if end.entries != entries {
            return Err(ReadError::Bad(format!(
                "is damaged: its end says {} entries, it holds {entries}",
                end.entries
            )));
        }
        Ok(Partial {
            name,
            path: path.to_path_buf(),
            identity,
            header,
            end,
            entries_at,
            end_at: at,
            end_digest,
            verified: Arc::new(AtomicBool::new(true)),
        })
    }

    /// The file opened again, checked to be the one [`Partial::open`] read.
    fn reopen(&self) -> Result<File, ReadError> {
        let file = open_file(&self.path).map_err(|e| match e {
            ReadError::Bad(why) => ReadError::Bad(format!("`{}` {why}", self.name)),
            limit => limit,
        })?;
        // The file checked, unchanged: its seal vouched for those bytes, not for these.
        if Identity::of(&file).map_err(|e| format!("`{}` {e}", self.name))? != self.identity {
            return Err(ReadError::Bad(format!(
                "`{}` changed while it was merged (another file in its place, or written to since it was checked)",
                self.name
            )));
        }
        Ok(file)
    }

    /// The shard's totals, in the shape `T` of its command (the end line read again, and
    /// checked to be the bytes the seal vouched for). An error names the file.
    pub fn totals<T: serde::de::DeserializeOwned>(&self) -> Result<T, ReadError> {
        Ok(self.end_again::<T, serde::de::IgnoredAny>()?.totals)
    }

    /// The job ids the shard replayed, by file (`None`: a source that is not a directory of
    /// files), read again as [`Partial::totals`] are.
    pub fn job_ids(&self) -> Result<Option<Vec<FileIds>>, ReadError> {
        if self.end.job_ids.is_none() {
            return Ok(None);
        }
        Ok(self.end_again::<serde::de::IgnoredAny, Vec<FileIds>>()?.job_ids)
    }

    /// The end line read again, checked to be the bytes the seal vouched for, with its
    /// totals and job ids in the shapes asked for.
    fn end_again<T: serde::de::DeserializeOwned, J: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<EndIn<T, J>, ReadError> {
        use std::io::{Seek, SeekFrom};
        let mut file = self.reopen()?;
        let named = |why: String| ReadError::Bad(format!("`{}` {why}", self.name));
        file.seek(SeekFrom::Start(self.end_at))
            .map_err(|e| named(crate::input::io_reason(&e)))?;
        let mut line = Vec::new();
        read_line(&mut BufReader::new(file), &mut line).map_err(named)?;
        if xxhash_rust::xxh3::xxh3_128(&line) != self.end_digest {
            return Err(named(
                "changed while it was merged (its end is not the one that was checked)".into(),
            ));
        }
        end(&line, None).map_err(named)
    }

    /// The entries, in order (the file is read again, as a stream). An entry that does not
    /// read is an error naming the file and the entry.
    pub fn entries(&self) -> Result<Entries, ReadError> {
        let file = self.reopen()?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        // The header into the seal a piece at a time, not as a line: a sweep's names every
        // candidate (a MiB for 4,000), and a buffer that held it, kept by each of 256
        // streams, was most of what a merge held.
        let mut seal = Seal::new();
        let mut left = self.entries_at;
        while left > 0 {
            let buf = reader
                .fill_buf()
                .map_err(|e| ReadError::Bad(format!("`{}` {}", self.name, crate::input::io_reason(&e))))?;
            if buf.is_empty() {
                break;
            }
            let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            seal.update(&buf[..n]);
            reader.consume(n);
            left -= n as u64;
        }
        Ok(Entries {
            name: self.name.clone(),
            reader,
            line: Vec::new(),
            left: self.end.entries,
            read: 0,
            seal: (!self.verified.load(Ordering::Relaxed)).then(|| {
                Box::new(Ending {
                    seal,
                    at: self.entries_at,
                    end_at: self.end_at,
                    end_digest: self.end_digest,
                    verified: Arc::clone(&self.verified),
                })
            }),
        })
    }
}

/// The header line: `{"partial":"retryctl","version":V,…,"entries":[`.
fn not_a_partial() -> String {
    "is not a retryctl partial result (one begins with `{\"partial\":\"retryctl\"`; `simulate … -o partial` writes them)".to_string()
}

/// `a.b.c` (a pre-release or build suffix ignored) as numbers, for "newer than".
fn release(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

fn header(line: &[u8]) -> Result<Header, String> {
    let not = not_a_partial;
    let text = std::str::from_utf8(line).map_err(|_| not())?.trim_end();
    let rest = text.strip_prefix(MAGIC).ok_or_else(not)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let version: u64 = digits.parse().map_err(|_| not())?;
    if version > VERSION {
        return Err(format!(
            "was written by a newer retryctl (partial version {version}; this one reads version {VERSION}): merge with that retryctl"
        ));
    }
    if version < VERSION {
        return Err(format!(
            "was written by an older retryctl (partial version {version}; this one reads version {VERSION}): run its shard again with this retryctl"
        ));
    }
    let body = text
        .strip_suffix(ENTRIES)
        .ok_or_else(|| "is damaged: its first line is not a partial's header".to_string())?;
    let header: Header =
        serde_json::from_str(&format!("{body}}}")).map_err(|e| format!("is damaged: its header: {e}"))?;
    if header.partial != "retryctl" || header.shard.count == 0 || header.shard.index >= header.shard.count {
        return Err("is damaged: its header's shard is not I/N with 0 ≤ I < N".into());
    }
    // No retryctl writes more (`--shard` refuses it), and merge names what is missing.
    let max = crate::replay::shard::MAX_SHARDS;
    if header.shard.count > max {
        return Err(format!(
            "is damaged: its header's shard is {}/{}, of more than {max} shards",
            header.shard.index, header.shard.count
        ));
    }
    // A newer retryctl may count what this one does not know: its own merge must add it up.
    let ours = env!("CARGO_PKG_VERSION");
    let newer = match (release(&header.retryctl), release(ours)) {
        (Some(theirs), Some(mine)) => theirs > mine,
        (None, _) => header.retryctl != ours,
        _ => false,
    };
    if newer {
        return Err(format!(
            "was written by retryctl {}, newer than this one ({ours}): merge with that retryctl",
            header.retryctl
        ));
    }
    Ok(header)
}

/// The end line, `],"end":{…},"xxh3":"…"}`, checked against the seal of every byte before
/// it (`seal`: the lines before it, so far).
fn end<T: serde::de::DeserializeOwned, J: serde::de::DeserializeOwned>(
    line: &[u8],
    seal: Option<Seal>,
) -> Result<EndIn<T, J>, String> {
    let damaged = |why: String| format!("is damaged: its end: {why}");
    let text = std::str::from_utf8(line)
        .map_err(|_| damaged("not UTF-8".into()))?
        .trim_end();
    let shape = || damaged("not `],\"end\":{…},\"xxh3\":\"…\"}`".into());
    let at = text.rfind(SEAL).ok_or_else(shape)?;
    let (sealed, rest) = text.split_at(at);
    let given = rest[SEAL.len()..].strip_suffix("\"}").ok_or_else(shape)?;
    if let Some(mut seal) = seal {
        seal.update(sealed.as_bytes());
        if given != seal_hex(&seal) {
            return Err(
                "is damaged: its bytes are not the ones its shard wrote (its checksum differs: was it edited?)".into(),
            );
        }
    }
    let body = sealed.strip_prefix(END).ok_or_else(shape)?;
    serde_json::from_str(body).map_err(|e| damaged(e.to_string()))
}

/// The last line of a file of `len` bytes whose lines from `from` on are the entries and
/// the end, and where it begins: `None` when the file does not end with a newline, or that
/// line is longer than [`MAX_LINE`]. Read backwards from the end, a piece at a time.
fn tail_line(file: &File, len: u64, from: u64) -> Result<Option<(u64, Vec<u8>)>, String> {
    const PIECE: u64 = 1 << 16;
    let io = |e: io::Error| format!("cannot be read: {}", crate::input::io_reason(&e));
    if len <= from {
        return Ok(None);
    }
    let mut last = [0u8];
    if read_exact_at(file, &mut last, len - 1).map_err(io)? != 1 || last[0] != b'\n' {
        return Ok(None);
    }
    // The bytes before the final newline, back to the newline before them.
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    let mut upto = len - 1;
    let start = loop {
        if len - upto > MAX_LINE {
            return Ok(None);
        }
        let lo = upto.saturating_sub(PIECE).max(from);
        let mut buf = vec![0u8; (upto - lo) as usize];
        if read_exact_at(file, &mut buf, lo).map_err(io)? != buf.len() {
            return Ok(None);
        }
        if let Some(i) = memchr::memrchr(b'\n', &buf) {
            pieces.push(buf.split_off(i + 1));
            break lo + i as u64 + 1;
        }
        pieces.push(buf);
        if lo == from {
            break from;
        }
        upto = lo;
    };
    let mut line = Vec::with_capacity((len - start) as usize);
    for piece in pieces.iter().rev() {
        line.extend_from_slice(piece);
    }
    line.push(b'\n');
    Ok(Some((start, line)))
}

/// A partial's entries, read one at a time.
pub struct Entries {
    name: String,
    reader: BufReader<File>,
    line: Vec<u8>,
    left: u64,
    read: u64,
    /// The seal of the bytes read so far, checked at the end line: `None` when the partial
    /// was checked already.
    seal: Option<Box<Ending>>,
}

/// What the end of a partial's entries is checked against: every byte before it in the
/// seal, the end line where [`Partial::open`] found it and as it was then.
struct Ending {
    seal: Seal,
    /// Where the next line begins in the file.
    at: u64,
    end_at: u64,
    end_digest: u128,
    verified: Arc<AtomicBool>,
}

impl Ending {
    /// `line` (the one after the last entry) is the end [`Partial::open`] read, and the
    /// seal in it vouches for every byte before it.
    fn check(self: Box<Self>, line: &[u8]) -> Result<(), String> {
        let whole = self.at == self.end_at && xxhash_rust::xxh3::xxh3_128(line) == self.end_digest;
        if !whole || end::<serde::de::IgnoredAny, serde::de::IgnoredAny>(line, Some(self.seal)).is_err() {
            return Err("its entries do not end where its end says (was it changed?)".into());
        }
        self.verified.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// An entry as its partial holds it: its position, its number in the file (from 1) and its
/// JSON, decoded by [`decode_entry`]. A merge of more partials than it keeps open sorts
/// these through temporary files before it decodes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub at: Pos,
    pub number: u64,
    pub json: Vec<u8>,
}

impl Entries {
    /// The next entry, its position read and the rest left as JSON.
    pub fn next_raw(&mut self) -> Option<Result<RawEntry, String>> {
        if self.left == 0 {
            // Past the last entry: the end line, and the seal checked once.
            let ending = self.seal.take()?;
            let name = &self.name;
            let read = read_line(&mut self.reader, &mut self.line);
            return match read {
                Ok(true) => ending.check(&self.line),
                Ok(false) => Err("the file ends before its end (was it changed while it was merged?)".into()),
                Err(why) => Err(why),
            }
            .err()
            .map(|why| Err(format!("`{name}` is damaged: {why}")));
        }
        self.left -= 1;
        self.read += 1;
        let k = self.read;
        let name = &self.name;
        let bad = |why: String| format!("`{name}` is damaged: entry {k}: {why}");
        let left = self.left;
        let seal = &mut self.seal;
        let mut take = |line: &[u8]| {
            if let Some(ending) = seal {
                ending.seal.update(line);
                ending.at += line.len() as u64;
            }
            let mut text = line.trim_ascii_end();
            if left > 0 {
                text = text
                    .strip_suffix(b",")
                    .ok_or_else(|| bad("is not followed by a comma".into()))?;
            }
            let at = match quick_at(text) {
                Some(at) => at,
                None => {
                    serde_json::from_slice::<AtOnly>(text)
                        .map_err(|e| bad(e.to_string()))?
                        .at
                }
            };
            Ok(RawEntry {
                at,
                number: k,
                json: text.to_vec(),
            })
        };
        // Most lines are whole in the reader's buffer: read there, they are copied once (into
        // the entry), not first into `line`. A line the buffer cuts, and any error, go the
        // long way.
        let whole = match self.reader.fill_buf() {
            Ok(buffered) => memchr::memchr(b'\n', buffered).map(|i| i + 1),
            Err(_) => None,
        };
        if let Some(n) = whole {
            let entry = take(&self.reader.buffer()[..n]);
            self.reader.consume(n);
            return Some(entry);
        }
        Some(match read_line(&mut self.reader, &mut self.line).map_err(&bad) {
            Ok(true) => take(&self.line),
            Ok(false) => Err(bad(
                "the file ends before it (was it changed while it was merged?)".into()
            )),
            Err(why) => Err(why),
        })
    }
}

impl Iterator for Entries {
    type Item = Result<Entry, String>;

    fn next(&mut self) -> Option<Result<Entry, String>> {
        let raw = self.next_raw()?;
        Some(raw.and_then(|r| decode_entry(&self.name, r.number, &r.json)))
    }
}
