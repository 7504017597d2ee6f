//! `retryctl completion SHELL`: print the completion script generated from the clap definition.

use crate::app::Context;
use crate::cli::CompletionArgs;
use crate::error::ExitCode;

/// The script for `shell`, exactly as checked in under `completions/`.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "retryctl", &mut buf);
    buf
}

/// The file name under `completions/` for each shell.
pub fn file_name(shell: clap_complete::Shell) -> &'static str {
    use clap_complete::Shell;
    match shell {
        Shell::Bash => "retryctl.bash",
        Shell::Zsh => "_retryctl",
        Shell::Fish => "retryctl.fish",
        Shell::PowerShell => "_retryctl.ps1",
        Shell::Elvish => "retryctl.elv",
        _ => "retryctl.unknown",
    }
}

pub fn run(ctx: &mut Context, args: &CompletionArgs) -> anyhow::Result<ExitCode> {
    ctx.out.write_all(&script(args.shell))?;
    Ok(ExitCode::Success)
}
