//! Dispatch: parsed command line → the command that runs it.
//!
//! Owns: building the [`Context`] (style, writers) once and routing each [`Command`]. Must
//! not: hold command logic.

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::commands;
use crate::error::ExitCode;
use crate::output::Style;

/// What every command gets: the global flags, the output style and the two writers.
pub struct Context<'a> {
    pub global: crate::cli::GlobalArgs,
    pub style: Style,
    /// Data (stdout).
    pub out: &'a mut dyn Write,
    /// Everything else (stderr).
    pub err: &'a mut dyn Write,
}

pub fn run(cli: Cli, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut ctx = Context {
        style: Style::new(cli.global.color, no_color),
        global: cli.global,
        out,
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

fn dispatch(command: Command, ctx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    match command {
        Command::Validate(args) => commands::validate::run(ctx, &args),
        Command::Completion(args) => commands::completion::run(ctx, &args),
        Command::Create(args) => commands::create::run(ctx, &args),
        Command::Get(args) => commands::get::run(ctx, &args),
        Command::Update(args) => commands::update::run(ctx, &args),
        Command::Apply(args) => commands::apply::run(ctx, &args),
        Command::Diff(args) => commands::diff::run(ctx, &args),
        Command::Delete(args) => commands::delete::run(ctx, &args),
        Command::Simulate(args) => commands::simulate::run(ctx, &args),
        Command::Serve(args) => commands::serve::run(ctx, &args),
        Command::Config(args) => commands::config::run(ctx, &args),
        Command::Version(args) => commands::version::run(ctx, &args),
        Command::Describe(args) => commands::describe::run(ctx, &args),
        Command::Explain(args) => commands::explain::run(ctx, &args),
        Command::Schema(args) => commands::schema::run(ctx, &args),
    }
}
