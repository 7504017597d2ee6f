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

/// `message` with each line break inside a value it quotes (between two backticks) written
/// `\x0a`, as the rest of a value's control characters are where the message is written: a
/// name or a path holding a line break would otherwise start a line of its own that reads
/// as the error's next line. The message's own line breaks, between quoted values, stay.
fn values_on_their_line(message: &str) -> std::borrow::Cow<'_, str> {
    let mut inside = false;
    let quoted_break = message.chars().any(|c| {
        if c == '`' {
            inside = !inside;
        }
        inside && c == '\n'
    });
    if !quoted_break {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len() + 8);
    let mut inside = false;
    for c in message.chars() {
        match c {
            '`' => inside = !inside,
            '\n' if inside => {
                out.push_str("\\x0a");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

/// `message` with the system's error texts in the house's words: `Address already in use
/// (os error 98)`, as Rust writes an I/O error, becomes `address already in use` (lowercase,
/// as every message starts, without Rust's number), wherever a message quoted one.
fn system_words(message: &str) -> std::borrow::Cow<'_, str> {
    const MARK: &str = " (os error ";
    if !message.contains(MARK) {
        return std::borrow::Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(MARK) {
        let digits = rest[at + MARK.len()..].bytes().take_while(u8::is_ascii_digit).count();
        let end = at + MARK.len() + digits;
        if digits == 0 || !rest[end..].starts_with(')') {
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            continue;
        }
        // The system's text starts after the last `: ` before it (or where the text does).
        let said = &rest[..at];
        let start = said.rfind(": ").map_or(0, |i| i + 2);
        out.push_str(&said[..start]);
        let mut words = said[start..].chars();
        if let Some(first) = words.next() {
            out.extend(first.to_lowercase());
            out.push_str(words.as_str());
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

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
        let _ = writeln!(
            out,
            "error: {}",
            values_on_their_line(&system_words(&first.to_string()))
        );
    }
    for cause in chain {
        let _ = writeln!(
            out,
            "  caused by: {}",
            values_on_their_line(&system_words(&cause.to_string()))
        );
    }
    if let Some(hint) = error
        .chain()
        .find_map(|c| c.downcast_ref::<CliError>())
        .and_then(|e| e.hint.as_ref())
    {
        let _ = writeln!(out, "\nhint: {}", values_on_their_line(hint));
    }
    exit_code_of(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line break inside a quoted value is written `\x0a`; the message's own stay, and a
    /// message with none is left as it is.
    #[test]
    fn a_line_break_in_a_value_stays_on_the_error_line() {
        let error = anyhow::Error::new(CliError::usage(
            "invalid retry policy name `a\nb`: a name is one line\nsecond `line`",
        ));
        let mut out = Vec::new();
        assert_eq!(report(&error, &mut out), ExitCode::Usage);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "error: invalid retry policy name `a\\x0ab`: a name is one line\nsecond `line`\n"
        );
        assert!(matches!(
            values_on_their_line("no `value` here"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    /// The system's error texts lowercased and without Rust's number, wherever they are.
    #[test]
    fn the_systems_words_lose_rusts_number() {
        assert_eq!(
            system_words("cannot listen on `127.0.0.1:80`: Address already in use (os error 98)"),
            "cannot listen on `127.0.0.1:80`: address already in use"
        );
        assert_eq!(
            system_words("Is a directory (os error 21); then: No such file or directory (os error 2)"),
            "is a directory; then: no such file or directory"
        );
        assert_eq!(
            system_words("a value `(os error x)` stays"),
            "a value `(os error x)` stays"
        );
    }
}
