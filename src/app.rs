//! The run of one command line: the [`Context`] every command takes, built once, and what
//! happens to the command's result (a closed stdout is not an error).
//!
//! Owns: [`Context`]. Must not: import `commands` (commands import `app` for the context;
//! `main` hands the dispatcher, `commands::dispatch`, to [`run`]), or hold command logic.

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::error::ExitCode;
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

/// Runs `cli` with `dispatch` (`commands::dispatch`).
pub fn run(
    cli: Cli,
    out: &mut dyn Write,
    err: &mut dyn Write,
    dispatch: impl FnOnce(Command, &mut Context<'_>) -> anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut ctx = Context {
        style: Style::new(cli.global.color, no_color),
        global: cli.global,
        out,
        out_is_stdout: true,
        err,
    };
    let simulate = matches!(cli.command, Command::Simulate(_));
    let result = dispatch(cli.command, &mut ctx);
    match result {
        // A closed stdout (`retryctl get ... | head`) is the reader saying it has enough: not
        // an error. `simulate` decides this for itself (its exit code reports expectations).
        Err(e) if !simulate && is_broken_pipe(&e) => Ok(ExitCode::Success),
        other => other,
    }
}

/// Whether `e` is, or was caused by, a write to a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
