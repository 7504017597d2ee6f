//! Shared test helpers: a `retryctl` command with a scrubbed environment, and a formatter
//! that turns a whole exchange (exit code, stdout, stderr) into one snapshot string.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub mod pg;
pub mod server;

/// The repository root (where Cargo.toml is).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `retryctl` run from the repository root with a temporary HOME, no config, no colour and
/// none of the variables that would change its behaviour.
pub fn retryctl(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("retryctl").expect("binary built");
    cmd.current_dir(root())
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1");
    cmd
}

/// Runs and formats `exit: N`, stdout and stderr for a snapshot.
pub fn exchange(cmd: &mut Command) -> String {
    let output = cmd.output().expect("runs");
    format_output(&output)
}

pub fn format_output(output: &std::process::Output) -> String {
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output.status.code().map_or("signal".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn temp_home() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}
pub mod stub;
