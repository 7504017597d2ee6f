//! Where histories come from (docs/simulate.md): one YAML/JSON file, a JSON Lines file, a
//! directory of either, or a stream — stdin (`--history -`) or any other path that is not a
//! regular file (a named pipe, `<(zcat …)`'s `/dev/fd/N`, `/dev/stdin`, a device) — as one
//! stream of [`Entry`]s.
//!
//! Owns: [`HistorySource`], the one streaming interface every source implements (Lookout's
//! database, `lookout::export_source`, yields `Body::History` entries through it), file
//! discovery, the 8 MiB limits, which settings apply to which job (a SchedulerConfig document
//! in a history file applies to that file's jobs), and job ids by default (the file stem;
//! `stem-LINE` in JSON Lines). JSON Lines are read as blocks of whole lines ([`LineBlock`])
//! whose lines are only counted here. A shard of files ([`HistorySource::sift`],
//! docs/past-one-machine.md) reads only its byte range of them and the document crossing its
//! end, numbering lines as one process would (the lines before its range counted only when a
//! number is shown), and digests the files by what every shard can see of them
//! ([`fingerprint`](digest::fingerprint)); and, from `export_totals`, what a Lookout export
//! read and left out ([`ExportTotals`], [`Notes`]), the counts that source carries beside its
//! entries. Must not: split or decode JSON lines (workers do that in parallel, see `run` and
//! `json_lines`), evaluate or print.
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
//!
//! One concept a file: `entry` (what an entry carries: [`Entry`], [`Body`], [`LineBlock`]),
//! `origin` (where it came from and where it stands: [`Origin`], [`Pos`]), `files` ([`Files`]:
//! which files are read and in what order), `job_ids` (a job in two files refused), `stream`
//! (stdin and other streams: what is one, and how one is opened), `lines` (JSON Lines read as
//! blocks, over-long lines), `documents` (a YAML or JSON text of documents, and which of them a
//! shard keeps), `sift` (a shard's byte range, and the lines it keeps), `digest` ([`Digest`]),
//! `compressed` (a compressed history refused) and `copy` (what a first
//! pass read, copied for a second pass: suggest's). This file:
//! [`HistorySource`], [`Progress`], [`Either`] and [`Overrides`].

use crate::engine::Settings;
use crate::model::scheduler::SchedulerConfig;

use super::shard::Shard;

mod compressed;
pub mod copy;
mod digest;
mod documents;
mod entry;
mod files;
mod job_ids;
mod lines;
mod origin;
mod sift;
mod stream;

pub use super::export_totals::{ExportTotals, Notes};
pub use digest::Digest;
pub use entry::{Body, Entry, LineBlock, BLOCK_BYTES, EMPTY_TEXT};
pub use files::Files;
pub use lines::SKIP_MAX;
pub(crate) use origin::read_exact_at;
pub use origin::{LinesBefore, Origin, Pos};
pub use stream::is_stream;

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

    /// `--queue Q` over a source that holds every queue's jobs ([`OneQueue`]): the workers
    /// leave out the jobs of other queues. `None`: every job is the queue's (Lookout's
    /// database selects them), or no `--queue`. No default: a source over another source
    /// must pass its filter on (one that did not replayed every queue's jobs).
    fn one_queue(&self) -> Option<OneQueue>;
}

/// A source of one of two kinds, chosen at run time: a verb's files or Lookout's database
/// (`commands::replay::source`), suggest's copy or a merge's files (`copy`).
pub enum Either<L, R> {
    Left(L),
    Right(R),
}

impl<L: HistorySource, R: HistorySource> Iterator for Either<L, R> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        match self {
            Either::Left(s) => s.next(),
            Either::Right(s) => s.next(),
        }
    }
}

impl<L: HistorySource, R: HistorySource> HistorySource for Either<L, R> {
    fn progress(&self) -> Progress {
        match self {
            Either::Left(s) => s.progress(),
            Either::Right(s) => s.progress(),
        }
    }

    fn bulk(&self) -> bool {
        match self {
            Either::Left(s) => s.bulk(),
            Either::Right(s) => s.bulk(),
        }
    }

    fn sift(&mut self, shard: Shard) -> bool {
        match self {
            Either::Left(s) => s.sift(shard),
            Either::Right(s) => s.sift(shard),
        }
    }

    fn one_queue(&self) -> Option<OneQueue> {
        match self {
            Either::Left(s) => s.one_queue(),
            Either::Right(s) => s.one_queue(),
        }
    }
}

/// A source with its `--queue` filter lifted: every job reaches the workers, which decide
/// for themselves (suggest's first pass copies every queue's jobs and learns from `--queue`'s
/// alone: a changed categorizer is compared on every queue).
pub struct EveryQueue<S>(pub S);

impl<S: HistorySource> Iterator for EveryQueue<S> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        self.0.next()
    }
}

impl<S: HistorySource> HistorySource for EveryQueue<S> {
    fn progress(&self) -> Progress {
        self.0.progress()
    }

    fn bulk(&self) -> bool {
        self.0.bulk()
    }

    fn sift(&mut self, shard: Shard) -> bool {
        self.0.sift(shard)
    }

    fn one_queue(&self) -> Option<OneQueue> {
        None
    }
}

/// `--queue Q` applied to a file, a directory or a stream (docs/simulate.md "Inputs"): the
/// jobs of other queues are left out of the replay, and counted for the command to say.
#[derive(Debug, Clone)]
pub struct OneQueue {
    name: std::sync::Arc<str>,
    left_out: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl OneQueue {
    pub fn new(name: &str) -> OneQueue {
        OneQueue {
            name: name.into(),
            left_out: Default::default(),
        }
    }

    /// Whether a job of `queue` is replayed; one that is not is counted.
    pub fn keeps(&self, queue: Option<&str>) -> bool {
        if queue == Some(&*self.name) {
            return true;
        }
        self.left_out.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        false
    }

    /// `n` jobs of other queues left out before the workers saw them (an empty history's check
    /// read them ahead).
    pub fn add_left_out(&self, n: u64) {
        self.left_out.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The jobs of other queues left out so far.
    pub fn left_out(&self) -> u64 {
        self.left_out.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// `--global-max-retries` / `--default-policy`, applied over whichever config a job gets,
/// and the values a config takes where it says nothing.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub global_max_retries: Option<u32>,
    pub default_policy: Option<String>,
    /// What a config that says nothing of a setting gets: the design's defaults (`None`), or
    /// under `--engine upstream`, upstream's shipped ones ([`Settings::upstream_shipped`];
    /// `commands::replay::sides::settings` decides).
    pub defaults: Option<Settings>,
}

impl Overrides {
    pub fn apply(&self, config: &SchedulerConfig) -> Settings {
        let mut s = match &self.defaults {
            Some(d) => Settings::from_config_over(config, d),
            None => Settings::from_config(config),
        };
        if let Some(g) = self.global_max_retries {
            s.global_max_retries = g;
        }
        if let Some(d) = &self.default_policy {
            s.default_policy_name = Some(d.clone());
        }
        s
    }
}

#[cfg(test)]
mod tests;
