//! A copy of what a first pass read, for a second pass to replay without reading the history
//! again (`suggest`, docs/reference/suggest.md "Sources and passes"): every job packed
//! (`replay::packed`) with where it came from, and every entry that could not be read with
//! what was said of it, in the source's order, so that the second pass replays, counts and
//! says what replaying the history itself would.
//!
//! A record: its length (4 bytes, little-endian), then its kind and fields; a job's file and
//! settings are an index into the copy's [`Places`], which stay in memory (a file's name, a
//! few settings), as does a YAML file's list of problems (rare, and rendered only by the
//! second pass).
//!
//! Owns: writing the records, [`Places`], [`Segments`] (where stretches of records stand and
//! when their jobs failed, for a reading of some windows to skip the rest unread) and
//! [`Copy`](struct@Copy) (the copy as a [`HistorySource`]: blocks
//! of records, [`CopyBlock`]s, which `copy_block` reads back for the workers). Must not: decide what is
//! copied, or write to a file (the caller writes the bytes these functions build).
//!
//! Once the second pass reads the copy, its places are final: [`Copy::open`] takes them as
//! they are ([`Written`]), so that the workers look a job's place up without a lock.

use std::fs::File;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::Settings;
use crate::input::SourceFile;
use crate::model::failure_history::FailureHistory;
use crate::replay::incidents::Windows;

#[cfg(test)]
use super::super::packed::unpack;
use super::super::packed::{pack, put_uint as uint, Packer};
pub use super::copy_block::{CopyBlock, FailedTimes, Record};
use super::copy_block::{Written, ERROR, INVALID, JOB, LEFT_OUT};
use super::entry::{Body, Entry, BLOCK_BYTES};
use super::files::Files;
use super::interface::{Counted, Either, HistorySource, Progress};
use super::one_queue::OneQueue;
use super::origin::{Origin, Pos};

/// The files (with their settings) a copy's jobs came from, and the YAML files whose
/// problems it holds: shared by the workers that pack jobs and the source that reads them.
#[derive(Debug, Default)]
pub struct Places {
    places: Mutex<Vec<(Origin, Arc<Settings>)>>,
    invalid: Mutex<Vec<SourceFile>>,
}

/// A worker's scratch for the records of its unit: the last place (most jobs of a unit
/// come from one file with one settings: its file name held, so that its address is not
/// another's while it is kept, and its settings compared by value), and the packer's buffer.
#[derive(Debug, Default)]
pub struct LastPlace(Option<(Arc<str>, u64, Settings, usize)>, Packer);

impl Places {
    /// The index of `origin`'s file with `settings`, added when new.
    fn index(&self, origin: &Origin, settings: &Settings, last: &mut LastPlace) -> usize {
        if let Some((file, ordinal, set, i)) = &last.0 {
            if Arc::ptr_eq(file, &origin.file) && *ordinal == origin.ordinal && set == settings {
                return *i;
            }
        }
        let mut places = self.places.lock().unwrap_or_else(PoisonError::into_inner);
        let i = match places.iter().position(|(o, s)| {
            o.ordinal == origin.ordinal && o.file == origin.file && o.stem == origin.stem && **s == *settings
        }) {
            Some(i) => i,
            None => {
                let mut place = origin.clone();
                (place.line, place.at, place.doc) = (None, 0, 0);
                places.push((place, Arc::new(settings.clone())));
                places.len() - 1
            }
        };
        last.0 = Some((origin.file.clone(), origin.ordinal, settings.clone(), i));
        i
    }

    /// The places and problems written so far, for a reader.
    fn written(&self) -> Written {
        Written {
            places: self.places.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            invalid: self.invalid.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        }
    }
}

/// Appends `history`'s record to `out`: the job as the second pass replays it, from
/// `origin` with `settings`, and when its failed runs ended (`failed`).
pub fn job_record(
    places: &Places,
    last: &mut LastPlace,
    (origin, settings): (&Origin, &Settings),
    history: &FailureHistory,
    failed: FailedTimes,
    out: &mut Vec<u8>,
) {
    let start = begin(out, JOB);
    failed.write(out);
    let place = places.index(origin, settings, last);
    uint(out, place as u64);
    uint(out, origin.line.map_or(0, |l| l as u64 + 1));
    uint(out, origin.at);
    uint(out, origin.doc);
    pack(&mut last.1, history, out);
    end(out, start);
}

/// What was said of an entry that could not be read, as its record.
pub enum Said {
    /// The message, `file:line: …`.
    Error(String),
    LeftOut(String),
    Invalid(Box<SourceFile>),
}

/// Appends the record of an entry that could not be read, at `pos`, to `out`.
pub fn said_record(places: &Places, pos: Pos, said: Said, out: &mut Vec<u8>) {
    let kind = match said {
        Said::Error(_) => ERROR,
        Said::LeftOut(_) => LEFT_OUT,
        Said::Invalid(_) => INVALID,
    };
    let start = begin(out, kind);
    uint(out, pos.0);
    uint(out, pos.1);
    match said {
        Said::Error(text) | Said::LeftOut(text) => {
            uint(out, text.len() as u64);
            out.extend_from_slice(text.as_bytes());
        }
        Said::Invalid(file) => {
            let mut invalid = places.invalid.lock().unwrap_or_else(PoisonError::into_inner);
            uint(out, invalid.len() as u64);
            invalid.push(*file);
        }
    }
    end(out, start);
}

fn begin(out: &mut Vec<u8>, kind: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.push(kind);
    start
}

fn end(out: &mut [u8], start: usize) {
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// Where a copy's records stand and when their failed runs ended, by stretches of about
/// [`Segments::BYTES`]: so that a reader of the jobs in some windows ([`Copy::touching`])
/// skips a stretch none of whose jobs may have failed in one without reading it. Built by
/// the writer as it writes each record, in order.
#[derive(Debug, Clone, Default)]
pub struct Segments {
    /// Each stretch's first record's offset, and what its records' failed runs span.
    starts: Vec<(u64, Span)>,
    /// The bytes written so far.
    written: u64,
    /// A stretch's bytes, when not [`Segments::BYTES`] (a test's, to make many).
    bytes: Option<u64>,
}

/// When a stretch's jobs' failed runs ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    /// None with a time (or no job): no window holds one.
    Never,
    /// Within `[from, to)`, nanoseconds since the epoch.
    Between(i64, i64),
    /// Not known (an entry that could not be read, a job whose times were not written):
    /// always read.
    Always,
}

impl Segments {
    /// A stretch's bytes: a few of the reader's blocks, so that a skip saves a read.
    pub const BYTES: u64 = 1 << 20;

    /// The next record written: `len` bytes, a job whose failed runs ended `failed` (`None`:
    /// not a job).
    pub fn add(&mut self, len: usize, failed: Option<FailedTimes>) {
        let at = self.written;
        self.written += len as u64;
        let bytes = self.bytes.unwrap_or(Segments::BYTES);
        if self.starts.last().is_none_or(|&(start, _)| at - start >= bytes) {
            self.starts.push((at, Span::Never));
        }
        let Some(last) = self.starts.last_mut() else {
            return;
        };
        last.1 = match (last.1, failed.map(FailedTimes::as_kept)) {
            (Span::Always, _) | (_, None | Some(FailedTimes::Unknown)) => Span::Always,
            (span, Some(FailedTimes::None)) => span,
            (Span::Never, Some(FailedTimes::Between(a, b))) => Span::Between(a, b),
            (Span::Between(x, y), Some(FailedTimes::Between(a, b))) => Span::Between(x.min(a), y.max(b)),
        };
    }

    /// The offset past the stretch starting at byte `at` when no job of it may have failed
    /// in `windows`; `None`: read it (or `at` starts none: a reader not at a stretch's start).
    fn skip(&self, at: u64, windows: &Windows) -> Option<u64> {
        let i = self.starts.binary_search_by_key(&at, |&(start, _)| start).ok()?;
        let skip = match self.starts[i].1 {
            Span::Never => true,
            Span::Between(from, to) => !windows.overlaps(from, to),
            Span::Always => false,
        };
        skip.then(|| self.starts.get(i + 1).map_or(self.written, |&(start, _)| start))
    }
}

/// A copy as a history source: blocks of whole records, unpacked by the workers.
pub struct Copy {
    file: io::BufReader<At>,
    places: Arc<Written>,
    bulk: bool,
    done: u64,
    total: u64,
    /// The copy stopped reading early (a read error, a record cut short), and said why.
    failed: bool,
    /// `the temporary copy of the history`, before what is wrong with it.
    name: Arc<str>,
    /// The first pass copied every queue's jobs: `--queue`'s alone are compared unless the
    /// proposal changes the cluster's categorizer.
    queue: Option<OneQueue>,
    /// [`Copy::touching`]'s windows.
    touching: Option<Arc<Windows>>,
    /// Where the records stand, for [`Copy::touching`] to skip stretches unread.
    segments: Option<Arc<Segments>>,
}

/// A file read from its start by position (`pread`), whatever its descriptor's offset: the
/// copy is an anonymous file, written through one descriptor and read through duplicates of
/// it, which share that offset; so each pass reads it whole, and none moves another.
struct At {
    file: File,
    at: u64,
}

/// Only to skip ahead ([`Copy::indexed`]): from the start, or from where the reader stands.
impl io::Seek for At {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.at = match pos {
            io::SeekFrom::Start(at) => at,
            io::SeekFrom::Current(by) => self.at.checked_add_signed(by).ok_or(io::ErrorKind::InvalidInput)?,
            io::SeekFrom::End(_) => return Err(io::ErrorKind::Unsupported.into()),
        };
        Ok(self.at)
    }
}

impl Read for At {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(&self.file, buf, self.at)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(&self.file, buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl Copy {
    /// Only `queue`'s jobs replayed (the workers leave out the others).
    pub fn only(mut self, queue: Option<OneQueue>) -> Copy {
        self.queue = queue;
        self
    }

    /// Only the jobs with a failed run that may have ended in one of `windows` (as their
    /// records say: [`FailedTimes`]), the others' records skipped unread: what the incident
    /// windows hold is read again without unpacking every job.
    pub fn touching(mut self, windows: Windows) -> Copy {
        self.touching = Some(Arc::new(windows));
        self
    }

    /// Where the writer says the records stand ([`Segments`]): with [`Copy::touching`], the
    /// stretches none of whose jobs may have failed in its windows are skipped without being
    /// read. They must be this copy's.
    pub fn indexed(mut self, segments: Arc<Segments>) -> Copy {
        self.segments = Some(segments);
        self
    }

    /// The copy `file` holds (a descriptor of it: read from its start, by position),
    /// written with `places`. `bulk`: the first pass's source's (its table prints only the
    /// summary).
    pub fn open(file: File, places: &Places, bulk: bool) -> io::Result<Copy> {
        let total = file.metadata()?.len();
        Ok(Copy {
            file: io::BufReader::with_capacity(BLOCK_BYTES, At { file, at: 0 }),
            places: Arc::new(places.written()),
            bulk,
            done: 0,
            total,
            failed: false,
            name: "the temporary copy of the history".into(),
            queue: None,
            touching: None,
            segments: None,
        })
    }

    /// The next record's bytes (length and all) into `block`; `Ok(false)` at the end. A
    /// record cut short is an error: the file is as long as this process wrote it.
    fn record_into(&mut self, block: &mut Vec<u8>) -> io::Result<bool> {
        if let (Some(windows), Some(segments)) = (&self.touching, &self.segments) {
            while let Some(next) = segments.skip(self.done, windows).filter(|&n| n > self.done) {
                self.done = next.min(self.total);
                // What the buffer read ahead of the stretch is dropped.
                io::Seek::seek(&mut self.file, io::SeekFrom::Start(self.done))?;
            }
        }
        if self.done == self.total {
            return Ok(false);
        }
        let mut len = [0u8; 4];
        self.file.read_exact(&mut len)?;
        let n = u32::from_le_bytes(len) as usize;
        let start = block.len();
        block.extend_from_slice(&len);
        block.resize(start + 4 + n, 0);
        self.file.read_exact(&mut block[start + 4..])?;
        self.done += 4 + n as u64;
        Ok(true)
    }
}

impl Iterator for Copy {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if self.failed {
            return None;
        }
        let mut bytes = Vec::with_capacity(BLOCK_BYTES + BLOCK_BYTES / 8);
        let mut count = 0;
        while bytes.len() < BLOCK_BYTES {
            match self.record_into(&mut bytes) {
                Ok(true) => count += 1,
                Ok(false) => break,
                Err(e) => {
                    // Not expected: this process wrote it a moment ago. Said, never skipped.
                    self.failed = true;
                    return Some(Entry {
                        origin: Origin::named(&self.name),
                        settings: Arc::default(),
                        body: Body::Error(format!(
                            "cannot be read back at byte {}: {}",
                            self.done,
                            match e.kind() {
                                io::ErrorKind::UnexpectedEof => "it ends inside a record".to_string(),
                                _ => crate::input::io_reason(&e),
                            }
                        )),
                    });
                }
            }
        }
        if bytes.is_empty() {
            return None;
        }
        Some(Entry {
            origin: Origin::named(&self.name),
            settings: Arc::default(),
            body: Body::Copied(CopyBlock {
                bytes,
                count,
                places: self.places.clone(),
                touching: self.touching.clone(),
            }),
        })
    }
}

impl HistorySource for Copy {
    fn progress(&self) -> Progress {
        Progress {
            done: self.done,
            total: self.total,
            counted: Counted::Bytes,
        }
    }

    fn bulk(&self) -> bool {
        self.bulk
    }

    /// A copy is one process's own: never sharded.
    fn sift(&mut self, _shard: crate::replay::shard::Shard) -> bool {
        true
    }

    fn one_queue(&self) -> Option<OneQueue> {
        self.queue.clone()
    }
}

/// What a second pass reads: the first pass's copy (left), or the files again (right: a
/// sharded suggest's merge, whose shards copied nothing). One per pass, moved into the
/// replay: that a `Files` is several times a `Copy`'s size costs nothing.
pub type ReadAgain = Either<Copy, Files>;

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::model::failure_history::Run;

    fn job(id: &str) -> FailureHistory {
        let mut h = FailureHistory::default();
        h.job.id = id.to_string();
        h.runs.push(Run {
            node: Some("n".into()),
            ..Run::default()
        });
        h
    }

    /// Jobs of two files (one with other settings) and what could not be read come back from
    /// the copy in the order written, each job with its file, line and settings, and blocks
    /// hold whole records whatever their number.
    #[test]
    fn a_copy_reads_back_in_order_with_its_places() {
        let places = Arc::new(Places::default());
        let mut last = LastPlace::default();
        let (mut a, mut b) = (Origin::named("a.jsonl"), Origin::named("b.yaml"));
        (a.ordinal, b.ordinal) = (1, 2);
        let other = Settings {
            global_max_retries: 3,
            ..Settings::default()
        };
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for k in 0..12_000u64 {
            let (origin, settings) = match k % 3 {
                0 => {
                    a.line = Some(k as usize + 1);
                    a.at = k * 10 + 1;
                    (&a, Settings::default())
                }
                1 => {
                    b.doc = k;
                    (&b, other.clone())
                }
                _ => {
                    let text = format!("a.jsonl:{k}: bad");
                    said_record(&places, Pos(1, k), Said::Error(text.clone()), &mut bytes);
                    expected.push(text);
                    continue;
                }
            };
            job_record(
                &places,
                &mut last,
                (origin, &settings),
                &job(&format!("j{k}")),
                FailedTimes::Unknown,
                &mut bytes,
            );
            expected.push(format!("{origin} j{k} {}", settings.global_max_retries));
        }
        said_record(&places, Pos(2, 9), Said::LeftOut("left".into()), &mut bytes);
        expected.push("left".into());
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        // The writer's offset is at the end: the copy reads from the start all the same.
        let copy = Copy::open(file.try_clone().unwrap(), &places, true).unwrap();
        let mut got = Vec::new();
        let mut into = FailureHistory::default();
        let mut blocks = 0;
        for entry in copy {
            let Body::Copied(block) = entry.body else {
                panic!("not a block")
            };
            blocks += 1;
            assert_eq!(block.records().count(), block.records_held());
            for (_, record) in block.records() {
                got.push(match record {
                    Record::Job {
                        origin,
                        settings,
                        packed,
                    } => {
                        unpack(packed, &mut into).unwrap();
                        format!("{origin} {} {}", into.job.id, settings.global_max_retries)
                    }
                    Record::Error(t) | Record::LeftOut(t) => t,
                    Record::Invalid(_) => panic!("no invalid file was copied"),
                });
            }
        }
        assert!(blocks > 1, "{blocks} block");
        assert_eq!(got, expected);
        assert_eq!(got[0], "a.jsonl:1 j0 20");
        assert_eq!(got[1], "b.yaml j1 3");
    }

    /// What a copy of `bytes` read for `windows` (with the writer's `segments`, if any)
    /// hands out: each job's id, each error's text.
    fn read_touching(bytes: &[u8], places: &Places, windows: Windows, segments: Option<Arc<Segments>>) -> Vec<String> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        let mut copy = Copy::open(file, places, true).unwrap().touching(windows);
        if let Some(segments) = segments {
            copy = copy.indexed(segments);
        }
        let mut into = FailureHistory::default();
        let mut got = Vec::new();
        for entry in copy {
            let Body::Copied(block) = entry.body else {
                panic!("not a block")
            };
            for (_, record) in block.records() {
                got.push(match record {
                    Record::Job { packed, .. } => {
                        unpack(packed, &mut into).unwrap();
                        into.job.id.clone()
                    }
                    Record::Error(t) | Record::LeftOut(t) => t,
                    Record::Invalid(_) => panic!("no invalid file was copied"),
                });
            }
        }
        got
    }

    /// Read again for the incident windows, a copy hands out the jobs whose failed runs may
    /// have ended in one (their minutes overlap it), those whose times it does not know, and
    /// every error; not a job whose failed runs ended outside every window, nor one with no
    /// timed failed run. Times before the epoch round down as after it.
    #[test]
    fn a_copy_read_for_windows_skips_the_jobs_outside_them() {
        use crate::model::failure_history::Timestamp;
        use crate::replay::incidents::Window;
        const S: i64 = 1_000_000_000;
        let places = Places::default();
        let mut last = LastPlace::default();
        let (origin, settings) = (Origin::named("a.jsonl"), Settings::default());
        let mut bytes = Vec::new();
        let jobs = [
            ("inside", FailedTimes::Between(3_600 * S, 3_650 * S)),
            // Ends 29 s before the window, within the minute (0:59–1:00) it starts in: handed
            // out (the filter keeps a job that may be in a window; `ReadAgain` looks at its runs).
            ("same-minute", FailedTimes::Between(3_000 * S, 3_541 * S)),
            ("before", FailedTimes::Between(0, 3_000 * S)),
            ("after", FailedTimes::Between(7_260 * S, 9_000 * S)),
            ("untimed", FailedTimes::None),
            ("unknown", FailedTimes::Unknown),
            // −90 s … −30 s: the minutes −2 and −1, [−120 s, 0).
            ("negative", FailedTimes::Between(-90 * S, -30 * S)),
        ];
        for (id, failed) in jobs {
            job_record(&places, &mut last, (&origin, &settings), &job(id), failed, &mut bytes);
        }
        said_record(&places, Pos(2, 1), Said::Error("bad".into()), &mut bytes);
        let read = |windows: &[(i64, i64)]| {
            let windows = Windows::merged(
                windows
                    .iter()
                    .map(|&(a, b)| Window::given(Timestamp(a), Timestamp(b)))
                    .collect(),
            );
            read_touching(&bytes, &places, windows, None)
        };
        assert_eq!(
            read(&[(3_570 * S, 7_200 * S)]),
            ["inside", "same-minute", "unknown", "bad"]
        );
        assert_eq!(read(&[(3_600 * S, 7_200 * S)]), ["inside", "unknown", "bad"]);
        assert_eq!(read(&[(-60 * S, -59 * S)]), ["unknown", "negative", "bad"]);
        assert_eq!(read(&[(0, 60 * S)]), ["before", "unknown", "bad"]);
        assert_eq!(read(&[]), ["unknown", "bad"]);
    }

    /// With where the writer says the records stand, a copy read for some windows skips the
    /// stretches none of whose jobs may have failed in one, and hands out what it hands out
    /// without them: a stretch with an entry that could not be read, or a job whose times it
    /// does not know, is read whatever the windows.
    #[test]
    fn an_indexed_copy_skips_the_stretches_outside_the_windows_and_hands_out_the_same() {
        use crate::model::failure_history::Timestamp;
        use crate::replay::incidents::Window;
        const HOUR: i64 = 3_600_000_000_000;
        let places = Places::default();
        let mut last = LastPlace::default();
        let (origin, settings) = (Origin::named("a.jsonl"), Settings::default());
        let mut bytes = Vec::new();
        let mut segments = Segments {
            bytes: Some(100),
            ..Segments::default()
        };
        for i in 0..400i64 {
            let at = bytes.len();
            let failed = match i {
                37 => FailedTimes::Unknown,
                _ if i % 3 == 0 => FailedTimes::None,
                _ => FailedTimes::Between(i * HOUR, i * HOUR + HOUR / 2),
            };
            if i == 250 {
                said_record(&places, Pos(250, 1), Said::Error("bad".into()), &mut bytes);
                segments.add(bytes.len() - at, None);
            }
            let at = bytes.len();
            job_record(
                &places,
                &mut last,
                (&origin, &settings),
                &job(&format!("j{i}")),
                failed,
                &mut bytes,
            );
            segments.add(bytes.len() - at, Some(failed));
        }
        let segments = Arc::new(segments);
        let windows = Windows::merged(vec![
            Window::given(Timestamp(100 * HOUR), Timestamp(103 * HOUR)),
            Window::given(Timestamp(320 * HOUR + HOUR / 4), Timestamp(321 * HOUR)),
        ]);
        let read = |indexed: bool| read_touching(&bytes, &places, windows.clone(), indexed.then(|| segments.clone()));
        assert_eq!(read(false), ["j37", "j100", "j101", "bad", "j320"]);
        assert_eq!(read(true), read(false));
        let skipped = (segments.starts.iter())
            .filter(|(at, _)| segments.skip(*at, &windows).is_some())
            .count();
        assert!(segments.starts.len() > 100, "{} stretches", segments.starts.len());
        assert!(
            skipped + 6 >= segments.starts.len(),
            "{skipped} of {} skipped",
            segments.starts.len()
        );
    }

    /// A copy cut short (not as long as its records say) is said, with where it stopped,
    /// never read as a shorter history.
    #[test]
    fn a_copy_cut_short_is_said() {
        let places = Places::default();
        let mut bytes = Vec::new();
        job_record(
            &places,
            &mut LastPlace::default(),
            (&Origin::named("a.jsonl"), &Settings::default()),
            &job("j"),
            FailedTimes::Unknown,
            &mut bytes,
        );
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes[..bytes.len() - 1]).unwrap();
        let copy = Copy::open(file, &places, true).unwrap();
        let said: Vec<String> = copy
            .map(|e| match e.body {
                Body::Error(why) => format!("{}: {why}", e.origin),
                _ => "a block".to_string(),
            })
            .collect();
        assert_eq!(
            said,
            ["the temporary copy of the history: cannot be read back at byte 0: it ends inside a record"]
        );
    }
}
