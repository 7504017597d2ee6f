//! Exit codes (docs/cli.md) and the one place that turns an error into words and a code.
//!
//! Owns: the [`ExitCode`] table, [`CliError`] (an error that knows its exit code and an
//! optional hint), and [`report`], which prints an error chain to stderr. Must not: be
//! bypassed: only `main` exits the process, with the code this module picks; or import
//! another module of the crate (it is a leaf: everyone else maps into it).

use std::fmt;
use std::io::Write;

/// The process exit codes. Stable: scripts depend on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ExitCode {
    /// Success.
    Success = 0,
    /// The operation failed or a check did not hold: NotFound, conflict, refused, `diff`
    /// found differences, a `simulate` expectation not met.
    Failure = 1,
    /// Usage error: unknown flag, missing argument.
    Usage = 2,
    /// Invalid input: a document failed to parse or validate, or a history holds no job
    /// (`simulate`, `tune`, `suggest`, `history`; `--allow-empty` makes that 0).
    InvalidInput = 3,
    /// The server is unreachable, timed out, or answered something unexpected.
    Unreachable = 4,
    /// Authentication or permission denied.
    Auth = 5,
}

impl ExitCode {
    pub const TABLE: [(ExitCode, &'static str); 6] = [
        (ExitCode::Success, "success"),
        (ExitCode::Failure, "the operation failed or a check did not hold (not found, conflict, refused, `diff` found differences, a `simulate` expectation not met)"),
        (ExitCode::Usage, "usage error (unknown flag, missing argument)"),
        (ExitCode::InvalidInput, "invalid input (parse or validation errors; a history with no job in `simulate`, `tune`, `suggest` or `history`, unless `--allow-empty`; a job line of a history that cannot be read in `simulate`, `tune` or `suggest`, unless `--skip-invalid`)"),
        (ExitCode::Unreachable, "server unreachable, timed out, or answered something unexpected"),
        (ExitCode::Auth, "authentication or permission denied"),
    ];

    pub fn code(self) -> u8 {
        self as u8
    }
}

/// An error with its exit code, message, causes and an optional next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub code: ExitCode,
    pub message: String,
    pub hint: Option<String>,
}

impl CliError {
    pub fn new(code: ExitCode, message: impl Into<String>) -> Self {
        CliError {
            code,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Invalid input (exit 3).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ExitCode::InvalidInput, message)
    }

    /// The operation failed (exit 1).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ExitCode::Failure, message)
    }

    /// Usage error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ExitCode::Usage, message)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// The exit code an error chain maps to: the first [`CliError`] in the chain decides;
/// anything else is a failed operation (1). Other modules turn their errors into a
/// [`CliError`] (the client: `From<ClientError>`), so this module depends on none of them.
pub fn exit_code_of(error: &anyhow::Error) -> ExitCode {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<CliError>())
        .map_or(ExitCode::Failure, |e| e.code)
}

/// Prints `error: …`, the causes, and the hint to `out`; returns the exit code.
pub fn report(error: &anyhow::Error, out: &mut dyn Write) -> ExitCode {
    let mut chain = error.chain();
    if let Some(first) = chain.next() {
        let _ = writeln!(out, "error: {first}");
    }
    for cause in chain {
        let _ = writeln!(out, "  caused by: {cause}");
    }
    if let Some(hint) = error
        .chain()
        .find_map(|c| c.downcast_ref::<CliError>())
        .and_then(|e| e.hint.as_ref())
    {
        let _ = writeln!(out, "\nhint: {hint}");
    }
    exit_code_of(error)
}
