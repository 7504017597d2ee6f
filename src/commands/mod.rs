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
pub mod history;
pub mod remote;
pub mod serve;
pub mod simulate;
pub mod update;
pub mod validate;
pub mod version;
