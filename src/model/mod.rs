//! The resource model: documents, their strict decoding, validation and lint.
//!
//! Owns: RetryPolicy (both dialects), Queue, FailureHistory, SchedulerConfig as typed values,
//! and every rule about them. Must not: do I/O, read the clock or the environment, or know
//! about the command line, the network or output formats. Takes `&str`, returns values.

pub mod decode;
pub mod document;
pub mod duration;
pub mod encode;
pub mod fields;
pub mod history;
pub mod lint;
pub mod policy;
#[cfg(test)]
mod proptests;
pub mod quantity;
pub mod queue;
pub mod scheduler;
pub mod validate;
pub mod vocabulary;

pub use document::{parse_documents, ApiVersion, Document, Kind, ParsedText, Resource};
pub use duration::GoDuration;
pub use policy::{Action, RetryPolicy, Rule};
pub use queue::Queue;
