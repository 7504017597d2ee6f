//! The run of one command line: the [`Context`] every command takes, built once, and what
//! happens to the command's result: a closed stdout is not an error, an output that could
//! not be written is (docs/cli.md, "Output that cannot be written").
//!
//! Owns: [`Context`], [`Checked`] (a writer that keeps its first failure) and the rule that
//! turns such a failure into the command's end. Must not: import `commands` (commands import
//! `app` for the context; `main` hands the dispatcher, `commands::dispatch`, to [`run`]), or
//! hold command logic.

use std::fmt;
use std::io::{self, Write};

use crate::cli::{Cli, Command};
use crate::error::{CliError, ExitCode};
use crate::output::Style;

/// What every command gets: the global flags, the output style and the two writers.
pub struct Context<'a> {
    pub global: crate::cli::GlobalArgs,
    pub style: Style,
    /// Data: stdout, or the file `--output-file` names (`commands::output_file`).
    pub out: &'a mut dyn Write,
    /// `out` is the process's stdout, which `merge` may write to as a file (`commands::replay::held`);
    /// not so for `--output-file`'s file.
    pub out_is_stdout: bool,
    /// Everything else (stderr).
    pub err: &'a mut dyn Write,
}

/// Runs `cli` with `dispatch` (`commands::dispatch`), then flushes `out`: the command's
/// result stands only if all it wrote was written ([`settle`]).
pub fn run(
    cli: Cli,
    out: &mut dyn Write,
    err: &mut dyn Write,
    dispatch: impl FnOnce(Command, &mut Context<'_>) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut stdout = Checked::new(out, "stdout");
    let simulate = matches!(cli.command, Command::Simulate(_));
    let result = {
        let mut ctx = Context {
            style: Style::new(cli.global.color, no_color),
            global: cli.global,
            out: &mut stdout,
            out_is_stdout: true,
            err: &mut *err,
        };
        dispatch(cli.command, &mut ctx)
    };
    // The last bytes sit in `main`'s buffer until here: a full disk is often found only now.
    // Its failure is kept by `stdout`; a closed pipe is not an error (below).
    let _ = stdout.flush();
    let result = match result {
        // A closed stdout (`retryctl get ... | head`) is the reader saying it has enough: not
        // an error. `simulate` decides this for itself (its exit code reports expectations).
        Err(e) if !simulate && is_broken_pipe(&e) => Ok(ExitCode::Success),
        other => other,
    };
    settle(result, stdout.failed(), err)
}

/// Whether `e` is, or was caused by, a write to a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The command's result once its output is known not to have been written in full
/// (`failed`): the failure, exit 1, whatever the command returned, since what it wrote is cut
/// short (a document a reader would take for whole). A command that ended on an error of its
/// own, one not caused by the failed write, keeps it (its exit code says what went wrong
/// first), and the failed write is said before it.
pub fn settle(
    result: anyhow::Result<ExitCode>,
    failed: Option<&WriteFailed>,
    err: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let Some(failed) = failed else { return result };
    match result {
        Err(e) if !caused_by_failed_write(&e) => {
            let _ = writeln!(err, "error: {failed}");
            Err(e)
        }
        _ => Err(CliError::failed(failed.to_string()).into()),
    }
}

/// Whether `e` is a [`WriteFailed`], or an I/O error carrying one (as [`Checked`] returns it).
fn caused_by_failed_write(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<WriteFailed>()
            || c.downcast_ref::<io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|inner| inner.is::<WriteFailed>())
    })
}

/// An output that could not be written: where it went (`stdout`, `` `FILE` ``) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailed {
    what: String,
    reason: String,
}

impl fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write {}: {}", self.what, self.reason)
    }
}

impl std::error::Error for WriteFailed {}

/// A writer that keeps the first failure of a write or a flush (a full disk, `/dev/full`, a
/// device's I/O error), worded as an error that names where the output went: a command that
/// went on writing past it, or whose last bytes waited in a buffer until the end, still ends
/// in that failure ([`settle`]). The failed call itself returns an error of the same kind
/// carrying the [`WriteFailed`]. A closed pipe (`EPIPE`) is the reader having enough, and an
/// interrupted call is tried again by the caller: both are passed on as they are, not kept.
pub struct Checked<W> {
    inner: W,
    what: String,
    failed: Option<WriteFailed>,
}

impl<W: Write> Checked<W> {
    /// `what`: where the output goes, as a message names it (`stdout`, `` `result.json` ``).
    pub fn new(inner: W, what: impl Into<String>) -> Self {
        Checked {
            inner,
            what: what.into(),
            failed: None,
        }
    }

    /// The first failure, if a write or flush failed.
    pub fn failed(&self) -> Option<&WriteFailed> {
        self.failed.as_ref()
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    pub fn into_inner(self) -> W {
        self.inner
    }

    fn check<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        match r {
            Err(e) if !matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::Interrupted) => {
                let failed = self
                    .failed
                    .get_or_insert_with(|| WriteFailed {
                        what: self.what.clone(),
                        reason: crate::input::io_reason(&e),
                    })
                    .clone();
                Err(io::Error::new(e.kind(), failed))
            }
            r => r,
        }
    }
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.check(r)
    }

    // The inner writer's own `write_all` (a buffer's copies a small write in one step).
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let r = self.inner.write_all(buf);
        self.check(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.check(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails every call with `kind`.
    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(self.0))
        }
    }

    #[test]
    fn the_first_failure_is_kept_and_a_closed_pipe_is_not() {
        let mut full = Checked::new(Failing(io::ErrorKind::StorageFull), "stdout");
        let _ = full.write_all(b"x");
        let e = full.flush().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(full.failed().unwrap().what, "stdout");
        assert!(e.to_string().starts_with("cannot write stdout: "), "{e}");

        let mut pipe = Checked::new(Failing(io::ErrorKind::BrokenPipe), "stdout");
        assert_eq!(pipe.flush().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert!(pipe.failed().is_none());
    }

    #[test]
    fn a_failed_write_wins_over_success_but_not_over_an_error_of_its_own() {
        let failed = WriteFailed {
            what: "stdout".into(),
            reason: "no space left on device".into(),
        };
        let mut err = Vec::new();
        let e = settle(Ok(ExitCode::Success), Some(&failed), &mut err).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), ExitCode::Failure);
        assert_eq!(e.to_string(), "cannot write stdout: no space left on device");
        assert!(err.is_empty());

        let own = anyhow::Error::new(CliError::invalid("bad input"));
        let e = settle(Err(own), Some(&failed), &mut err).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), ExitCode::InvalidInput);
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "error: cannot write stdout: no space left on device\n"
        );

        let mut err = Vec::new();
        let through = anyhow::Error::new(io::Error::new(io::ErrorKind::StorageFull, failed.clone()));
        let e = settle(Err(through), Some(&failed), &mut err).unwrap_err();
        assert_eq!(e.to_string(), "cannot write stdout: no space left on device");
        assert!(err.is_empty());
    }
}
