//! The entries of many partials in the source's order (docs/past-one-machine.md): a k-way
//! merge of their streams by position (then by partial, as given), in rounds through
//! temporary files past [`FAN_IN`] open partials; each entry decoded, and one whose position
//! another partial holds too refused (a job is one shard's: its place in the source is in one
//! partial, whatever the rule that picked it).
//!
//! Owns: how many partials are open at once ([`FAN_IN`], fewer under a low limit of open
//! files), the rounds' files and their lines, the heap, and [`StreamError`]: what stopped the
//! merge, told apart for the command to word it (a problem with a partial, too many files
//! open, a temporary file that cannot be used). Must not: check partials together as one run
//! or check the seals of those it did not read to their end (that is `commands::merge`), fold
//! or count entries, or decide exit codes and hints.

use std::collections::BinaryHeap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::replay::source::Pos;

use super::{decode_entry, decode_for_records, Entries, Entry, Item, Partial, ReadError};

/// Why the entries could not all be read in order. Each says what it is in words that name
/// the file; the command adds what to do.
#[derive(Debug)]
pub enum StreamError {
    /// What is wrong with a partial, in words that name it.
    Bad(String),
    /// The file (a partial, or a round's) could not be opened: this process has as many files
    /// open as it may. A limit of the machine, not a fault of the input.
    TooManyOpen(String),
    /// The temporary directory for the rounds could not be made in `dir`.
    TempDir { dir: PathBuf, error: io::Error },
    /// A round's file could not be made, written or opened.
    Round { path: PathBuf, error: io::Error },
    /// A round's file read back is not what was written to it.
    RoundChanged,
    /// A round's file could not be read back.
    RoundRead(io::Error),
}

impl StreamError {
    /// A partial's read error (`name`: the file, when the words lack it).
    fn read(name: &str, e: ReadError) -> StreamError {
        match e {
            ReadError::Bad(why) => StreamError::Bad(why),
            ReadError::TooManyOpen => StreamError::TooManyOpen(name.to_string()),
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Bad(why) => f.write_str(why),
            StreamError::TooManyOpen(name) => write!(f, "`{name}` cannot be opened: too many files are open"),
            StreamError::TempDir { dir, error } => write!(
                f,
                "cannot make a temporary directory for the merge's rounds in `{}`: {}",
                dir.display(),
                crate::input::io_reason(error)
            ),
            StreamError::Round { path, error } => write!(
                f,
                "cannot use `{}`, a temporary file of the merge: {}",
                path.display(),
                crate::input::io_reason(error)
            ),
            StreamError::RoundChanged => f.write_str("a temporary file of the merge was changed while it was merged"),
            StreamError::RoundRead(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for StreamError {}

/// Whether an entry names a job (one shard's alone).
fn holds_job(item: &Item) -> bool {
    match item {
        Item::Job(_) | Item::Change(_) | Item::Record(_) | Item::Fallback(_) => true,
        Item::Error(_) | Item::Invalid(_) | Item::LeftOut(_) => false,
    }
}

/// The job an entry names, for an error's words (`name`: its partial's).
fn job_of(item: &Item, name: &str) -> String {
    match item {
        Item::Job(report) => report.job_id.clone(),
        Item::Change(ch) => ch.diff.job.clone(),
        Item::Record(r) => r.job(name),
        Item::Fallback(id) => id.clone(),
        Item::Error(_) | Item::Invalid(_) | Item::LeftOut(_) => String::new(),
    }
}

/// Partials merge keeps open at once (docs/past-one-machine.md): with more, it merges their
/// entries in rounds through temporary files. Fewer when the process may open fewer files.
pub const FAN_IN: usize = 256;

/// Files merge may have open besides the partials of a round: stdin, stdout, stderr, the
/// held output, a comparison's spool, a round's own file, and some room.
const RESERVE: u64 = 16;

/// The soft limit of open files, where the system says it.
pub fn open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            // `rlim_t` is not `u64` on every system.
            #[allow(clippy::useless_conversion)]
            return Some(u64::try_from(lim.rlim_cur).unwrap_or(u64::MAX));
        }
    }
    None
}

/// How many streams a round merges at once: [`FAN_IN`], fewer under a low limit of open
/// files, at least 2.
fn fan_in() -> usize {
    let room = open_files_limit().map_or(FAN_IN as u64, |l| l.saturating_sub(RESERVE));
    room.clamp(2, FAN_IN as u64) as usize
}

/// An entry between reading and decoding: where it stands, the partial it is of (by
/// index), its number in that partial, its JSON.
struct Head {
    at: Pos,
    index: usize,
    number: u64,
    json: Vec<u8>,
}

/// Entries in the source's order: a partial's own, or a round's file (the entries of
/// several partials, already in that order).
enum Stream {
    Partial {
        index: usize,
        entries: Entries,
        last: Option<Pos>,
    },
    Round {
        reader: BufReader<File>,
        line: Vec<u8>,
    },
}

/// A stream before it is opened.
enum Source {
    Partial(usize),
    Round(PathBuf),
}

impl Source {
    fn open(&self, partials: &[Partial]) -> Result<Stream, StreamError> {
        Ok(match self {
            Source::Partial(index) => {
                let p = &partials[*index];
                Stream::Partial {
                    index: *index,
                    entries: p.entries().map_err(|e| StreamError::read(&p.name, e))?,
                    last: None,
                }
            }
            Source::Round(path) => Stream::Round {
                reader: BufReader::with_capacity(1 << 16, File::open(path).map_err(|e| round_error(path, e))?),
                line: Vec::new(),
            },
        })
    }
}

/// A round's file that cannot be opened or written.
fn round_error(path: &Path, e: io::Error) -> StreamError {
    #[cfg(unix)]
    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
        return StreamError::TooManyOpen(path.display().to_string());
    }
    StreamError::Round {
        path: path.to_path_buf(),
        error: e,
    }
}

impl Stream {
    fn next(&mut self, partials: &[Partial]) -> Result<Option<Head>, StreamError> {
        match self {
            Stream::Partial { index, entries, last } => {
                let Some(raw) = entries.next_raw() else {
                    return Ok(None);
                };
                let raw = raw.map_err(StreamError::Bad)?;
                if last.is_some_and(|l| raw.at < l) {
                    return Err(StreamError::Bad(format!(
                        "`{}` is damaged: its entries are not in the source's order",
                        partials[*index].name
                    )));
                }
                *last = Some(raw.at);
                Ok(Some(Head {
                    at: raw.at,
                    index: *index,
                    number: raw.number,
                    json: raw.json,
                }))
            }
            Stream::Round { reader, line } => {
                line.clear();
                let n = reader.read_until(b'\n', line).map_err(StreamError::RoundRead)?;
                if n == 0 {
                    return Ok(None);
                }
                // What `write_head` wrote: four numbers, then the entry's JSON.
                let text = line.strip_suffix(b"\n").unwrap_or(line);
                let mut parts = text.splitn(5, |&b| b == b' ');
                let mut number = || -> Option<u64> { std::str::from_utf8(parts.next()?).ok()?.parse().ok() };
                let (Some(index), Some(k), Some(a), Some(b)) = (number(), number(), number(), number()) else {
                    return Err(StreamError::RoundChanged);
                };
                let json = parts.next().unwrap_or_default().to_vec();
                Ok(Some(Head {
                    at: Pos(a, b),
                    index: index as usize,
                    number: k,
                    json,
                }))
            }
        }
    }
}

fn write_head(out: &mut impl Write, h: &Head) -> io::Result<()> {
    write!(out, "{} {} {} {} ", h.index, h.number, h.at.0, h.at.1)?;
    out.write_all(&h.json)?;
    out.write_all(b"\n")
}

/// A stream's next head in the merge's heap, which gives its greatest first: the earliest
/// by position, then by partial, then by stream is the greatest.
struct Queued {
    stream: usize,
    head: Head,
}

impl Queued {
    fn key(&self) -> (Pos, usize, usize) {
        (self.head.at, self.head.index, self.stream)
    }
}

impl Ord for Queued {
    fn cmp(&self, other: &Queued) -> std::cmp::Ordering {
        other.key().cmp(&self.key())
    }
}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Queued) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Queued) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Queued {}

/// Merges `sources` by position (then by partial, as given), each head to `f` until it
/// returns `false`.
fn merge_streams<E: From<StreamError>>(
    partials: &[Partial],
    sources: &[Source],
    mut f: impl FnMut(Head) -> Result<bool, E>,
) -> Result<(), E> {
    let mut streams = sources
        .iter()
        .map(|s| s.open(partials))
        .collect::<Result<Vec<_>, StreamError>>()?;
    let mut heap = BinaryHeap::with_capacity(streams.len());
    for (stream, s) in streams.iter_mut().enumerate() {
        if let Some(head) = s.next(partials)? {
            heap.push(Queued { stream, head });
        }
    }
    let mut top = heap.pop();
    while let Some(Queued { stream, head }) = top {
        if !f(head)? {
            return Ok(());
        }
        top = match streams[stream].next(partials)?.map(|head| Queued { stream, head }) {
            // Still before every other stream's head: taken without going through the heap.
            // A shard of byte ranges holds one run of the source's order, so this is nearly
            // every entry.
            Some(q) if heap.peek().is_none_or(|t| q > *t) => Some(q),
            // The heap's first instead, which this one replaces.
            Some(q) => heap.peek_mut().map(|mut t| std::mem::replace(&mut *t, q)),
            None => heap.pop(),
        };
    }
    Ok(())
}

/// Every entry of every partial, in the source's order, to `f` until it returns `false`;
/// an entry of a job another partial holds too is refused. With more
/// partials than [`fan_in`], groups of them are merged into temporary files first, and
/// those in turn, so that no more are open at once. The seals of partials whose entries
/// were not read to their end (`f` stopped early) are the caller's to check.
pub fn for_each_entry<E: From<StreamError>>(
    partials: &[Partial],
    records: bool,
    mut f: impl FnMut(&Partial, Entry) -> Result<bool, E>,
) -> Result<(), E> {
    let fan = fan_in();
    let mut sources: Vec<Source> = (0..partials.len()).map(Source::Partial).collect();
    let mut dir = None;
    let mut round = 0;
    while sources.len() > fan {
        let dir = match &mut dir {
            Some(d) => d,
            None => dir.insert(
                tempfile::Builder::new()
                    .prefix("retryctl-merge-")
                    .tempdir()
                    .map_err(|error| StreamError::TempDir {
                        dir: std::env::temp_dir(),
                        error,
                    })?,
            ),
        };
        round += 1;
        let mut next = Vec::new();
        for (g, group) in sources.chunks(fan).enumerate() {
            let path = dir.path().join(format!("round-{round}-{g}"));
            let file = File::create(&path).map_err(|e| round_error(&path, e))?;
            let mut out = BufWriter::with_capacity(1 << 16, file);
            merge_streams(partials, group, |h| {
                write_head(&mut out, &h).map_err(|e| round_error(&path, e))?;
                Ok::<_, StreamError>(true)
            })?;
            out.flush().map_err(|e| round_error(&path, e))?;
            next.push(Source::Round(path));
        }
        // The previous round's files are read: their room is given back.
        for s in &sources {
            if let Source::Round(path) = s {
                let _ = std::fs::remove_file(path);
            }
        }
        sources = next;
    }
    // A job is one shard's, whatever the rule that picked it (byte ranges, an id's hash, the
    // database's hash): its position in the source is in one partial. A position met in two
    // is a job listed by a shard that does not replay it; it would be counted twice.
    let mut last: Option<(Pos, usize)> = None;
    merge_streams(partials, &sources, |h| {
        let p = &partials[h.index];
        let entry = if records {
            decode_for_records(&p.name, h.at, h.number, h.json)
        } else {
            decode_entry(&p.name, h.number, &h.json)
        }
        .map_err(StreamError::Bad)?;
        if holds_job(&entry.item) {
            if let Some((_, other)) = last.filter(|(at, other)| *at == entry.at && *other != h.index) {
                return Err(StreamError::Bad(format!(
                    "`{}` is damaged: entry {}: job `{}` is also in `{}`, at the same place in the history (another shard replays it)",
                    p.name,
                    h.number,
                    job_of(&entry.item, &p.name),
                    partials[other].name
                ))
                .into());
            }
            last = Some((entry.at, h.index));
        }
        f(p, entry)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What stops the rounds, in the words merge prints (its hints are merge's own): a full
    /// file table is told apart from a round's file that cannot be used.
    #[test]
    fn a_round_that_cannot_go_on_says_which_file_and_why() {
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let dir = StreamError::TempDir {
            dir: "/tmp/t".into(),
            error: denied(),
        };
        assert_eq!(
            dir.to_string(),
            "cannot make a temporary directory for the merge's rounds in `/tmp/t`: permission denied"
        );
        let round = round_error(Path::new("/tmp/t/round-1-0"), denied());
        assert_eq!(
            round.to_string(),
            "cannot use `/tmp/t/round-1-0`, a temporary file of the merge: permission denied"
        );
        #[cfg(unix)]
        {
            let full = round_error(
                Path::new("/tmp/t/round-1-0"),
                io::Error::from_raw_os_error(libc::EMFILE),
            );
            assert!(matches!(&full, StreamError::TooManyOpen(name) if name == "/tmp/t/round-1-0"));
            assert_eq!(
                full.to_string(),
                "`/tmp/t/round-1-0` cannot be opened: too many files are open"
            );
        }
    }
}
