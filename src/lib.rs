//! retryctl: author, validate, push and simulate Armada retry policies.
//!
//! Layering (enforced in review): `cli` → `app` / `commands` → {`client`, `replay`,
//! `history`, `output`, `server`} → `engine` → `model`. `model`, `engine` and `wire` are
//! pure: no I/O, clock, environment or randomness, and they import nothing else from this
//! crate except `diag` and `yaml`. `armada_api` (Armada's gRPC contract, generated from
//! `proto/`, and its model ⇄ protobuf conversion) is pure too, and sits beside `wire`: the
//! same model on the other wire.
//!
//! Where things are: a history is read in `replay::source` (files, JSON Lines, stdin) and
//! `history` (Lookout's database and REST API); each engine decides in `engine` (the design,
//! SPEC §2.1–2.9, in `engine/mod.rs` and `engine/replay.rs`; upstream's, §2.10, in
//! `engine/upstream.rs`); every output format is written in `output`. The armadactl config
//! file (`~/.armadactl.yaml`) is read and rewritten in `armadactl_config`; `connection`
//! resolves flags, environment and that file into where and how to reach a server.
//! `client` knows nothing of `cli` or `output`; `output` never calls `client`. Only `main`
//! exits the process.

pub mod app;
pub mod armada_api;
pub mod armadactl_config;
pub mod cli;
pub mod client;
pub mod commands;
pub mod connection;
pub mod diag;
pub mod engine;
pub mod error;
pub mod history;
pub mod input;
pub mod model;
pub mod output;
pub mod redact;
pub mod replay;
pub mod server;
pub mod tls;
pub mod wire;
pub mod yaml;
