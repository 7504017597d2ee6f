//! Where histories come from (docs/simulate.md): one YAML/JSON file, a JSON Lines file, a
//! directory of either, or a stream — stdin (`--history -`) or any other path that is not a
//! regular file (a named pipe, `<(zcat …)`'s `/dev/fd/N`, `/dev/stdin`, a device) — as one
//! stream of [`Entry`]s.
//!
//! Owns: [`HistorySource`], the one streaming interface every source implements (Lookout's
//! database, `lookout::export_source`, yields `Body::History` entries through it), file
//! discovery, the limits (8 MiB a YAML text, [`LINE_MAX`] a JSON line), which settings apply to which job (a SchedulerConfig document
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
//! first line that is not blank is one complete JSON value, or is longer than the
//! [`LINE_MAX`] a line may be (no YAML text that long is read: an over-long JSON line,
//! reported as a file's is),
//! else one YAML/JSON text (at most 8 MiB), like a file. An over-long line is skipped to its
//! end; on a stream, whose end may never come (`/dev/zero`), at most [`SKIP_MAX`] past the
//! limit, after which the rest of the stream is not read.
//!
//! A history whose first bytes are gzip's or zstd's magic is refused by what it is, not read
//! as text: given alone (a file or a stream) before anything is read, a directory's file as
//! its entry.
//!
//! One concept a file: `entry` (what an entry carries: [`Entry`], [`Body`], [`LineBlock`]),
//! `origin` (where it came from and where it stands: [`Origin`], [`Pos`]), `job_ids` (a job in two files refused), `stream`
//! (stdin and other streams: what is one, and how one is opened), `lines` (JSON Lines read as
//! blocks, over-long lines), `documents` (a YAML or JSON text of documents, and which of them a
//! shard keeps), `sift` (a shard's byte range, and the lines it keeps), `digest` ([`Digest`]),
//! `compressed` (a compressed history refused), `copy` and `copy_block` (what a first
//! pass read, copied for a second pass: suggest's, and its records read back), `interface`
//! ([`HistorySource`], [`Progress`], [`Either`], [`EveryQueue`]), `one_queue` ([`OneQueue`]),
//! `overrides` ([`Overrides`]), `files` (what a [`Files`] holds), `open` (opening it and
//! reading it in order) and `line_reader` (a JSON Lines input's reader). This file declares
//! and re-exports only: every part imports the file that defines a name.

mod compressed;
pub mod copy;
mod copy_block;
mod digest;
mod documents;
mod entry;
mod files;
mod interface;
mod job_ids;
mod line_reader;
mod lines;
mod one_queue;
mod open;
mod origin;
mod overrides;
mod sift;
mod stream;

pub use super::export_totals::{ExportTotals, Notes};
pub use digest::Digest;
pub use entry::{Body, Entry, LineBlock, BLOCK_BYTES, EMPTY_TEXT};
pub use files::Files;
pub use interface::{Counted, Either, EveryQueue, HistorySource, Progress};
pub use lines::{LINE_MAX, SKIP_MAX};
pub use one_queue::OneQueue;
pub(crate) use origin::read_exact_at;
pub use origin::{LinesBefore, Origin, Pos};
pub use overrides::Overrides;
pub use stream::is_stream;

#[cfg(test)]
mod tests;
