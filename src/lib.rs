//! retryctl: author, validate, push and simulate Armada retry policies.
//!
//! Layering (enforced in review; a module imports only modules to its right, in the braces
//! too): `main` → `commands` → `app` (the `Context` commands take) → {`connection`, `server`,
//! `output`, `lookout`, `tune`, `suggest`, `watch`, `replay`, `client`, `deploy`} → {`cli`, `armadactl_config`, `tls`} →
//! `input` → `engine` → `model` → {`diag`, `yaml`}, with `wire` (Armada's REST JSON) and
//! `armada_api` (Armada's gRPC contract, generated from `proto/`, and its model ⇄ protobuf
//! conversion: the same model on the other wire; and, for `serve --dialect upstream`,
//! upstream's gateway JSON and policy validation) beside `model`, for the client and the server. `error` (exit
//! codes, `CliError`), `redact` (secrets in URLs), `on_signal` (the temporary files a
//! signal removes) and `whole_file` (a file replaced whole or not at all) import nothing
//! from this crate; any module above `engine` may use them. `cli` is the command line's clap types, read by
//! `app`, `commands`, `connection`, `output` and `deploy`, and by `replay` for the values of
//! `--shard` (`cli::Shard`, to which `replay::shard` adds which jobs a shard holds) and
//! `--max-contradictions`; it imports `engine` (its engine flag becomes an
//! `engine::EngineKind`), `model` (the API version a flag names) and `error` (its value
//! parsers' errors). `input` reads `-f` files and stdin into documents.
//! `model`, `engine`, `wire` and `armada_api` are pure: no I/O, clock, environment or
//! randomness, and besides each other they import nothing from this crate except `diag` and
//! `yaml`. `tune` is the search of `retryctl tune`: its candidates (varies, template, each
//! candidate's documents: pure, of `model`, `diag`, `yaml` and `input`'s types), the sweep
//! that drives `replay` over every candidate at once, and the ranking (pure). `suggest` is
//! what `retryctl suggest` learns (docs/reference/suggest.md): signatures, counts, the
//! proposed rules and documents, suspect nodes, pass 1's fold (which replays one job through
//! `replay`), all pure; `commands::suggest` drives the two passes. `watch` is what `retryctl
//! watch` counts (docs/watch.md): one job under today's policy and each candidate (through
//! `replay::run::compare_job`, the comparison `simulate --baseline` runs), the one table of
//! metric families, the cursor, the jobs waiting for their runs, the window's hourly sums and
//! `--state`'s text, all pure; `commands::watch` polls Lookout, serves and writes the file. `commands` lists the
//! verbs and two kits they share, `commands::replay` (a comparison's sides resolved once,
//! the history opened, driven and finished) and `commands::remote` (the server verbs'); a
//! verb imports kits, never another verb (`merge` too: the dispatch hands it the ending of
//! the verb whose partials it reads). The binary's
//! start-up (its allocator) is `src/startup.rs`, a module of `main`; it reads which verbs are
//! bulk from `cli::VERBS`, the one table of verbs, which every list of verbs reads.
//!
//! Where things are: a history is read in `replay::source` (files, JSON Lines, stdin) and
//! `lookout` (Lookout's database and REST API; what an export counted is `replay::source`'s
//! `ExportTotals`, which a shard's partial, `replay::partial`, carries); each engine decides in `engine` (the design,
//! docs/engines.md, in `engine/design/`, matching with the compiled policies of
//! `engine/matcher/`; upstream's (docs/engines.md) in `engine/upstream.rs`; `engine/job_report/` runs a
//! history through either); every output format is written in `output`. The armadactl config
//! file (`~/.armadactl.yaml`) is read and rewritten in `armadactl_config`; `connection`
//! resolves flags, environment and that file into where and how to reach a server.
//! `client` knows nothing of `cli` or `output`; `output` never calls `client`. Only `main`
//! exits the process.
//!
//! Names: `commands::X` is named after the CLI verb it serves (`history`, `simulate`, …), and
//! so is an `output::X` that is one verb's report (`history`, `tune`, `suggest`); the output
//! several verbs share is named after its format or concept (`output::table`, `words`, …);
//! everything else is named after what it owns: `model::failure_history` is
//! the FailureHistory document, `lookout` reads Lookout, `replay` drives a simulation and
//! `engine::job_report` replays one job. See ARCHITECTURE.md.

pub mod app;
pub mod armada_api;
pub mod armadactl_config;
pub mod cli;
pub mod client;
pub mod commands;
pub mod connection;
pub mod deploy;
pub mod diag;
pub mod engine;
pub mod error;
pub mod input;
pub mod lookout;
pub mod model;
pub mod on_signal;
pub mod output;
pub mod redact;
pub mod replay;
pub mod server;
pub mod suggest;
pub mod tls;
pub mod tune;
pub mod watch;
pub mod whole_file;
pub mod wire;
pub mod yaml;
