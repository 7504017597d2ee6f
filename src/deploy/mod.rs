//! `--emit armada|kubernetes` (docs/past-one-machine.md, "Emitting the jobs"): a command line
//! → the documents that run it as N shards and a merge, an `armadactl submit` file or a
//! Kubernetes Indexed Job plus the merge's Job; and `watch --emit kubernetes`, a Deployment.
//! Must not: do I/O (the caller hands a writer), read the process's arguments (the caller
//! hands the parsed `Invocation`), or run anything.
//!
//! One concept a file, this one re-exporting what callers use: `invocation` (the command line
//! as the user gave it), `values` (the emit flags' values checked, and where the containers
//! see a path), `pod` (what every pod shares: its user, the variables, Kubernetes' `$(VAR)`
//! escaping), `plan` (a sharded run's plan: the emit flags checked against the command line,
//! each container's args and pod spec), `text` (the documents' YAML), `shards` (the documents
//! of a plan: `armada`'s or `kubernetes`'), `watch` (`watch`'s Deployment: one long-running
//! pod, no shards).
//!
//! The command line is carried flag by flag as the user gave it (every flag the parse
//! accepted, in the user's order), less the emit flags and what the shards and the merge
//! set themselves (`--shard`, `-o`, `--output-file`); paths are rewritten to where the
//! containers see them: an absolute path must lie under the mount, a relative one is taken
//! as relative to the mount.

pub mod armada;
mod invocation;
pub mod kubernetes;
mod plan;
mod pod;
mod shards;
mod text;
mod values;
pub mod watch;

pub use invocation::{Flag, Invocation};
pub use plan::{plan, Plan};
pub use pod::{escape, expand, DSN_VAR, INDEX_VAR, MAX_PARALLELISM, NON_ROOT};
pub use shards::{emit, write};

#[cfg(test)]
mod tests;
