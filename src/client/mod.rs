//! The wire client: talking to an Armada server over REST or gRPC (docs/reference/wire.md).
//!
//! Owns: the [`Client`] trait the commands use and what a connection is made from
//! ([`ClientConfig`], [`Auth`], [`ClientTls`]: `config.rs`); this file declares the parts,
//! re-exports what the commands use and holds [`connect`]. The parts: `transport.rs` (the
//! [`Client`] trait, the single requests), the two transports ([`rest`]: the REST API over reqwest; [`grpc`]: Armada's gRPC
//! services over tonic), `error.rs` ([`ClientError`]: every failure of either, with its exit
//! code and words), the transport-neutral writes ([`conflict`]: the dialect refusal and
//! read-back, the retry on conflict), `read_back.rs` (what a read-back lost) and
//! `trust.rs` (the rustls verifier and the TLS diagnosis). Must not: know about clap, tables
//! or output formats, or decide wording beyond what a failed request means.
//!
//! Which transport: the resolved server address decides (`connection`): `http(s)://` is REST,
//! `grpc://` / `grpcs://` (or a context's `armadaUrl: host:port`) is gRPC. Both answer the
//! same calls with the same model types and the same errors, so every command behaves the
//! same over either; what differs is said where it does (a design-dialect policy has no
//! protobuf form; gRPC has no versions, see [`grpc`]).

// Re-exported: `history` masks its Lookout URLs with it too (one masking function).
pub use crate::redact::redact_url;

mod config;
pub mod conflict;
mod error;
pub mod grpc;
mod read_back;
pub mod rest;
mod transport;
mod trust;

pub use config::{Auth, ClientConfig, ClientTls};

pub use conflict::{Modified, ModifyError, CONFLICT_ATTEMPTS};
pub use error::{codes, root_cause, ClientError, Result};
pub use grpc::GrpcClient;
pub use read_back::{diff_fields, queue_differences};
pub use rest::RestClient;
pub use transport::{Client, Noun, WriteOp};

/// A client for the server `config` names: gRPC for a `grpc://` or `grpcs://` address,
/// REST otherwise.
pub fn connect(config: ClientConfig) -> Result<Box<dyn Client>> {
    if grpc::is_grpc_url(&config.base_url) {
        Ok(Box::new(GrpcClient::new(config)?))
    } else {
        Ok(Box::new(RestClient::new(config)?))
    }
}
