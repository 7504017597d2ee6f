//! A partial result (docs/past-one-machine.md): what one shard of a replay leaves for `merge`, as a versioned
//! JSON document — and reading it back.
//!
//! The document is one JSON object laid out one part per line, so that a shard writes it as
//! it goes and `merge` reads each partial as a stream, however many jobs it lists:
//!
//! ```text
//! {"partial":"retryctl","version":6,"retryctl":"…","shard":{"index":0,"count":4},"fingerprint":"…","run":{…},"entries":[
//! {"at":[1,12],"job":{…}},
//! {"at":[1,30],"n":201,"change":{"job":"…",…},"more":[…]},
//! {"at":[1,35],"n":198,"change":{"job":"…",…}},
//! {"at":[1,40],"error":"…"}
//! ],"end":{"entries":2,"source":"…","totals":{…}},"xxh3":"…"}
//! ```
//!
//! - the header: the shard, the fingerprint of every input that changes the answer (the
//!   command computes it: documents, flags, engine, source and its filters, N), and `run`,
//!   what `merge` needs to print what the command would (its flags, the policies' names, …);
//! - `entries`: what the reports list, each with its position in the source's order
//!   ([`Pos`](super::source::Pos)): the jobs of a plain replay, the changed jobs of a comparison, the first job of
//!   each missing queue, and every entry that could not be replayed; in a later `suggest`
//!   shard's partial, what it learned past its first 10,000 signatures
//!   (`{"at":[1,90],"learned":{…}}`, the command's shape, written as it goes);
//! - `end`: how many entries there are (a truncated partial has no end, a damaged one another
//!   count), the digest of the history's bytes, the shard's totals (counts and trials,
//!   which add up the same whatever the split), and for a directory of files the job ids
//!   the shard replayed, by file (`jobIds`: a job two files give is found across shards);
//! - `xxh3`: XXH3-128 of every byte before it. A partial is input, and its totals are trusted only
//!   as its shard wrote them: a file edited since is refused as damaged.
//!
//! Owns, one concept a file: the format (`format`: the version, the header and its
//! fingerprint, the end, the seal, the wire shape of a changed job's rest, both ways);
//! writing ([`Recorder`], in `write`: which missing queues to list, the first job of each in
//! this shard); one entry as read ([`Entry`], in `entry`); reading one file ([`Partial`], in
//! `read`, with every check on one file: is it a partial, its version, truncation, its count,
//! its seal, the file read once: its header and end when opened, the seal checked as its
//! entries are read; its totals read again when they are added, one partial at a time, and
//! checked as numbers by [`counts`]); and the entries of many partials in the source's order
//! ([`streams`]: a k-way merge, in rounds through temporary files past as many partials as
//! may be open at once, with its own error for the command to word). A file that cannot be
//! opened because too many are open is told apart ([`ReadError::TooManyOpen`]): no fault of
//! the file. Must not: decide what a shard lists or how totals merge (that is `run`), check
//! partials together as one run (that is `commands::merge`), or format anything for people
//! (an invalid history file's diagnostics come rendered).

pub mod counts;
mod entry;
mod format;
mod read;
pub mod streams;
mod write;

pub use entry::{decode_entry, decode_for_records, decode_learned, Entry, Item, Record};
pub use format::{fingerprint, looks_like_partial, seal_hex, End, EndIn, Header, Lookout, Seal, ShardOut, VERSION};
pub use read::{Entries, Partial, RawEntry, ReadError};
pub use write::{render_job, Recorder, StepsCut};

#[cfg(test)]
mod tests;
