//! [`Files`]: the history source of files, directories and streams, as what it holds.
//!
//! Owns: the source's state. Must not: open or read anything (`open` opens the source and
//! reads it in order, `lines`, `documents` and `stream` read what it opened).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::Settings;
use crate::replay::shard::Shard;

use super::digest::Digest;
use super::entry::Entry;
use super::interface::Progress;
use super::job_ids::JobIds;
use super::line_reader::Lines;
use super::one_queue::OneQueue;
use super::overrides::Overrides;
use super::sift::Range;

/// Files, directories and streams.
pub struct Files {
    /// The place of the file read last among those opened (from 1).
    pub(super) ordinal: u64,
    pub(super) queue: VecDeque<PathBuf>,
    pub(super) lines: Option<Lines>,
    pub(super) ready: VecDeque<Entry>,
    pub(super) overrides: Overrides,
    pub(super) settings: Arc<Settings>,
    pub(super) bulk: bool,
    pub(super) progress: Progress,
    /// stdin or another input that is not a regular file ([`is_stream`](super::stream::is_stream)): read
    /// once, in order, from its start (never by byte range), its format told by its content.
    pub(super) stream: bool,
    /// With [`Files::digest`]: every byte read so far, hashed, and where the total goes.
    pub(super) digest: Option<(foldhash::fast::FoldHasher<'static>, Digest)>,
    /// With `HistorySource::sift` on a stream: the shard whose lines are kept.
    pub(super) shard: Option<Shard>,
    /// With `HistorySource::sift` on files: the shard's byte range ([`Range`]), and where
    /// each file still queued starts in the source (as `queue`).
    pub(super) range: Option<Range>,
    pub(super) starts: VecDeque<(u64, u64)>,
    /// The job ids the history gave so far, to refuse one met again ([`JobIds`]).
    pub(super) ids: Option<JobIds>,
    /// What opening a stream read (the blank lines before the first line, a YAML text),
    /// hashed: [`Files::digest`] starts from it.
    pub(super) opened: Option<foldhash::fast::FoldHasher<'static>>,
    /// A stream whose first bytes say it is compressed (`compression`): `open` refuses it.
    pub(super) compressed: Option<(&'static str, &'static str)>,
    /// `--queue Q`: only that queue's jobs are replayed (`Files::only`).
    pub(super) one_queue: Option<OneQueue>,
}
