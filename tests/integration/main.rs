//! Integration tests: the `retryctl` binary as a user runs it. One test binary (see
//! Cargo.toml `autotests = false`); each file below is a module.

mod support;

mod adversarial;
mod backtest;
mod categorizer;
mod categorizer_replay;
mod cli_traps;
mod client_errors;
mod client_limits;
mod cluster;
mod compare;
mod completion;
mod concurrency;
mod config;
mod crud;
mod declarative;
mod docs;
mod empty_input;
mod engines;
mod exact;
mod grpc;
mod history;
mod kubectl;
mod lookout_env;
mod lookout_pod_errors;
mod merge_hardening;
mod output_file;
mod serve;
mod serve_process;
mod serve_stress;
mod shard_examples;
mod shards;
mod simulate;
mod simulate_bulk;
mod simulate_report;
mod simulate_server;
mod startup;
mod suggest;
mod suggest_shards;
mod test_setup;
mod tls;
mod tune;
mod tune_categorizer;
mod upstream_tables;
mod validate;
