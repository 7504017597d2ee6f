//! Armada's gRPC contract: the types, clients and servers generated from `proto/submit.proto`
//! (upstream's `pkg/api/submit.proto` at 207cc9e, trimmed to retry policies and queues; see
//! its header), and their conversion to and from the model.
//!
//! Owns: the generated code ([`api`], written by build.rs and checked in under `generated/`), the v1beta1 model ⇄
//! protobuf conversion ([`convert`], both directions, pure), the server's request codec
//! ([`codec::StrictCodec`]: a field the contract does not define is refused, not dropped),
//! and what `serve --dialect upstream` takes from upstream's server: its gateway's JSON
//! ([`gateway`]) and its policy check ([`validation`]), both pure.
//! Must not: do I/O, know HTTP, the store or the command line; the client
//! (`client::grpc`), `serve` (`server::grpc`) and the readers of Lookout's protobuf rows
//! use it.
//!
//! Protobuf has no "unset" for a scalar: a policy's `retry_limit` is always a number (0 =
//! never retry, upstream's meaning) and a design-dialect policy (`armadaproject.io/v1`
//! fields: exit codes, conditions, backoff…) has no protobuf form at all; [`policy_to_proto`]
//! refuses it naming the fields, as the REST client refuses them for an upstream server
//! (docs/cli.md).

pub mod codec;
pub mod convert;
mod fields;
pub mod gateway;
pub mod validation;

pub use convert::{policy_from_proto, policy_to_proto, queue_from_proto, queue_to_proto, unheld_fields};

pub use fields::{listed as listed_unknown_fields, UnknownField};

/// The fields of an encoded `M` the contract does not define: what prost's decode would drop
/// without a word.
pub fn unknown_fields<M: prost::Name>(bytes: &[u8]) -> Vec<UnknownField> {
    fields::unknown_fields_of(M::PACKAGE, M::NAME, bytes)
}

/// Messages larger than this are refused both ways (ResourceExhausted), by `serve` and by the
/// client, as grpc-go's default.
pub const MAX_MESSAGE: usize = 4 << 20;

#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod api;

#[cfg(test)]
mod contract_tests;
