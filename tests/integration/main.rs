//! Integration tests: the `retryctl` binary as a user runs it. One test binary (see
//! Cargo.toml `autotests = false`); each file below is a module.

mod support;

mod completion;
mod serve;
mod serve_process;
mod serve_stress;
mod validate;
