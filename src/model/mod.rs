//! The resource model: documents, their strict decoding, validation and lint.
//!
//! Owns: RetryPolicy (both dialects), Queue, FailureHistory, SchedulerConfig and the executor's
//! categorizer config (`errorCategories`) as typed values,
//! and every rule about them. Must not: do I/O, read the clock or the environment, or know
//! about the command line, the network or output formats. Takes `&str`, returns values.
//!
//! Where: `document` reads text into typed documents (the envelope first, then each kind's body)
//! with the strict decoder of `decode`; each kind's type and body decoder is `policy`, `queue`,
//! `failure_history`, `scheduler` or `categorizer` (which also holds its checks and warnings); `fields` is the one table of every field (the decoders,
//! `explain` and `schema` read it); `vocabulary` the fixed words several of these spell (apiVersion
//! strings, enum value names; it imports nothing); `validate` checks one document, `lint` checks
//! documents against each other; `encode` writes a typed resource back as a canonical document;
//! `duration` and `quantity` are Go durations and Kubernetes quantities, `timestamp` a
//! history's instants, `signature` a failed run's signature (what suggest learns by and the
//! incident rule's mix reads); `go_regex` writes Go's regexp
//! syntax as the `regex` crate's.

pub mod categorizer;
pub mod decode;
pub mod document;
pub mod duration;
pub mod encode;
pub mod failure_history;
pub mod fields;
pub mod go_regex;
pub mod lint;
pub mod policy;
#[cfg(test)]
pub(crate) mod proptests;
pub mod quantity;
pub mod queue;
pub mod scheduler;
pub mod signature;
pub mod timestamp;
pub mod validate;
pub mod vocabulary;

pub use document::{parse_documents, ApiVersion, Document, Kind, ParsedText, Resource};
pub use duration::{GoDuration, TotalDuration};
pub use policy::{Action, RetryPolicy, Rule};
pub use queue::Queue;

/// The policies of `yaml`, every document a policy that validates: for tests.
#[cfg(test)]
pub(crate) fn test_policies(yaml: &str) -> Vec<RetryPolicy> {
    parse_documents(yaml, None)
        .documents
        .into_iter()
        .map(|d| {
            let errors: Vec<_> = d.diagnostics.iter().filter(|x| x.is_error()).collect();
            assert!(errors.is_empty(), "{errors:?}");
            match d.resource {
                Some(Resource::RetryPolicy(p)) => p,
                other => panic!("not a policy: {other:?}"),
            }
        })
        .collect()
}
