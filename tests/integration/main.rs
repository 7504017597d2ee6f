//! Integration tests: the `retryctl` binary as a user runs it. One test binary (see
//! Cargo.toml `autotests = false`); each file below is a module.

mod support;

mod completion;
mod simulate;
mod validate;
