//! The one streaming interface every history source implements ([`HistorySource`]: files,
//! suggest's copy, Lookout's database), what a source says of how far it is ([`Progress`]),
//! and the sources over other sources ([`Either`], [`EveryQueue`]).
//!
//! Owns: the trait and those wrappers. Must not: read anything.

use crate::replay::shard::Shard;

use super::entry::Entry;
use super::one_queue::OneQueue;

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
    /// of JSON lines hold only the shard's lines (`LineBlock`), which the workers then take
    /// as they are. `true`: every entry it yields is the shard's (files, read by byte range;
    /// a database, which selected the shard's rows); `false`: the workers sort the entries
    /// that are not blocks by their job id (a stream). [`crate::replay::parallel::for_each_ordered`]
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
