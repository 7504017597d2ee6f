//! The wire client: routes, JSON and status codes of the Armada REST API.
//!
//! Owns: talking to a server (reqwest, blocking, rustls). Must not: know about clap, tables
//! or output formats. (Placeholder until the client lands.)

use crate::error::ExitCode;

/// The exit code a client error maps to, when `error` is one.
pub fn exit_code_of(_error: &(dyn std::error::Error + 'static)) -> Option<ExitCode> {
    None
}
