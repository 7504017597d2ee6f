//! The commands: each a short sequence of load → call → hand data to `output`.
//!
//! Must not: print with `println!` (write to the context's writers), or exit the process.

pub mod apply;
pub mod completion;
pub mod config;
pub mod create;
pub mod delete;
pub mod diff;
pub mod get;
pub mod remote;
pub mod serve;
pub mod simulate;
pub mod update;
pub mod validate;
pub mod version;

use crate::app::Context;
use crate::error::{CliError, ExitCode};

/// Placeholder for a command whose implementation has not landed yet.
pub fn not_yet<T: std::fmt::Debug>(_ctx: &mut Context, name: &str, _args: &T) -> anyhow::Result<ExitCode> {
    Err(CliError::failed(format!("`retryctl {name}` is not implemented in this build")).into())
}
