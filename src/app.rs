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
    match cli.command {
        Command::Validate(args) => commands::validate::run(&mut ctx, &args),
        Command::Completion(args) => commands::completion::run(&mut ctx, &args),
        Command::Create(args) => commands::create::run(&mut ctx, &args),
        Command::Get(args) => commands::get::run(&mut ctx, &args),
        Command::Update(args) => commands::update::run(&mut ctx, &args),
        Command::Apply(args) => commands::apply::run(&mut ctx, &args),
        Command::Diff(args) => commands::diff::run(&mut ctx, &args),
        Command::Delete(args) => commands::delete::run(&mut ctx, &args),
        Command::Simulate(args) => commands::simulate::run(&mut ctx, &args),
        Command::Serve(args) => commands::serve::run(&mut ctx, &args),
        Command::Config(args) => commands::config::run(&mut ctx, &args),
        Command::Version(args) => commands::version::run(&mut ctx, &args),
        Command::History(args) => commands::history::run(&mut ctx, &args),
    }
}
