//! The [`Client`] trait: the single requests either transport answers (REST in `rest.rs`,
//! gRPC in `grpc.rs`), the words they share ([`WriteOp`], [`Noun`]) and the `-v` request log.
//!
//! Owns: what a transport must implement. Must not: build the writes the commands make on
//! those requests (the dialect refusal, read-back and retry on conflict are `conflict.rs`'s)
//! or know either transport's wire format.

use std::io::Write;

use super::error::{ClientError, Result};
use crate::model::{Queue, RetryPolicy};

/// What happened to a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    Create,
    Update,
}

/// The two kinds of resource, for the calls that take either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Noun {
    Policy,
    Queue,
}

/// A connection to one server, over either transport: what the commands call.
///
/// The transports implement the single requests; the writes the commands make
/// (`write_policy`, `write_queue`, `modify_queue`) are built on them once, in
/// [`conflict`](super::conflict), as methods of `dyn Client`.
pub trait Client {
    /// The server's address as messages show it (`http://host:8080`, `grpcs://host:50051`).
    fn base_url(&self) -> &str;
    /// `REST` or `gRPC`, for messages.
    fn protocol(&self) -> &'static str;
    /// Over gRPC, which stores only what upstream's protobuf can hold.
    fn is_grpc(&self) -> bool {
        false
    }
    /// Whether the design dialect can be stored over this connection (`retryctl serve` over
    /// REST). Asks the server when nothing was heard from it yet; only a failed connection is
    /// an error.
    fn is_v1(&self) -> Result<bool>;
    /// The server's dialect for `version`: `v1` (`retryctl serve`) or `upstream`.
    fn dialect_name(&self) -> Result<&'static str> {
        Ok(if self.is_v1()? { "v1" } else { "upstream" })
    }

    fn get_policy(&self, name: &str) -> Result<RetryPolicy>;
    /// Every policy, ordered by name as the server lists them.
    fn list_policies(&self) -> Result<Vec<RetryPolicy>>;
    /// One create or replace of `policy`, as it is: no refusal, no read-back (`write_policy`
    /// adds those). A replace of a policy read before is refused as a conflict
    /// ([`ClientError::is_conflict`]) when it changed since that read.
    fn send_policy(&self, op: WriteOp, policy: &RetryPolicy) -> Result<()>;
    fn delete_policy(&self, name: &str) -> Result<()>;

    fn get_queue(&self, name: &str) -> Result<Queue>;
    /// Every queue, ordered by name as the server streams them.
    fn list_queues(&self) -> Result<Vec<Queue>>;
    /// [`Client::send_policy`] for a queue.
    fn send_queue(&self, op: WriteOp, queue: &Queue) -> Result<()>;
    fn delete_queue(&self, name: &str) -> Result<()>;

    /// The server's version of a resource as last read or written (REST: its ETag); `None`
    /// when the server keeps none (upstream Armada, gRPC).
    fn version(&self, noun: Noun, name: &str) -> Option<String>;
    /// The error the server would answer with `code` (a refusal the client found itself,
    /// such as a create of a name that exists), shaped like this transport's errors.
    fn refused(&self, code: i64, message: String) -> ClientError;
    /// Whether `-v` asked for the request log.
    fn verbose(&self) -> bool;
}

pub(crate) fn log(line: &str) {
    // The request log is diagnostics, never data: stderr, unbuffered, best effort.
    let _ = writeln!(std::io::stderr(), "retryctl: {line}");
}
