//! The FailureHistory document (SPEC §3.1): a job and its runs, for `simulate`.
//!
//! Owns: the types and their strict decoding. Must not: evaluate anything or do I/O.
//! (Placeholder: decoding is implemented with the evaluator.)

use crate::diag::Diagnostic;
use crate::yaml::Node;

use super::decode::Decoder;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct FailureHistory {
    pub job: Job,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Job {
    pub id: String,
}

pub fn decode_failure_history(dec: &mut Decoder, node: &Node) -> Option<FailureHistory> {
    dec.error(
        node,
        "unsupported",
        "kind",
        "FailureHistory documents are not supported yet",
    );
    None
}

pub fn validate_failure_history(_history: &FailureHistory) -> Vec<Diagnostic> {
    Vec::new()
}
