//! retryctl: author, validate, push and simulate Armada retry policies.
//!
//! Layering (enforced in review): `cli` → `app` / `commands` → {`client`, `eval`, `output`,
//! `server`} → `model`. `model`, `eval` and `wire` are pure: no I/O, clock, environment or
//! randomness, and they import nothing else from this crate except `diag` and `yaml`.
//! `client` knows nothing of `cli` or `output`; `output` never calls `client`. Only `main`
//! exits the process.

pub mod app;
pub mod cli;
pub mod client;
pub mod commands;
pub mod config;
pub mod diag;
pub mod error;
pub mod eval;
pub mod history;
pub mod input;
pub mod model;
pub mod output;
pub mod replay;
pub mod server;
pub mod settings;
pub mod wire;
pub mod yaml;
