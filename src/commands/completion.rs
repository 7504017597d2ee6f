//! `retryctl completion SHELL`: print the completion script generated from the clap definition;
//! and the dynamic completion (`COMPLETE=SHELL retryctl …`, clap_complete's protocol), which
//! also completes the names of the configured server's retry policies and queues.
//!
//! Owns: which arguments take names from the server ([`NAME_ARGS`]) and how those names are
//! fetched for a completion. Must not: print anything (a failed completion offers nothing),
//! or take longer than [`DEADLINE`]: the shell waits for it on every TAB.
//!
//! Decisions: the server, credentials, TLS settings and config file are resolved as for the
//! commands (`connection::resolve` on the global flags of the line being completed, parsed
//! by clap with its errors ignored, since the line is unfinished); each request's timeout is
//! at most [`DEADLINE`], and the whole lookup (an `execAuth` helper included) is given that
//! long before it is abandoned. `-v` does not log a completion's requests. `simulate
//! --retry-policy` is not completed from the server: its names come from its `-f` files.
//! Files (`-f` and every other path argument) complete as paths, from the clap definition.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};

use crate::app::Context;
use crate::cli::{CompletionArgs, GlobalArgs};
use crate::client::{self, Noun};
use crate::connection::{self, Env};
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

/// The environment variable that turns a run into a completion request (clap_complete's
/// default): `source <(COMPLETE=bash retryctl)` registers the completion.
pub const COMPLETE_VAR: &str = "COMPLETE";

/// How long a completion may wait for the server, all told.
pub const DEADLINE: Duration = Duration::from_secs(1);

/// The arguments whose values are names on the server: the command path, the argument's id
/// and which names.
pub const NAME_ARGS: [(&[&str], &str, Noun); 11] = [
    (&["get", "retrypolicy"], "names", Noun::Policy),
    (&["get", "queue"], "names", Noun::Queue),
    (&["describe", "retrypolicy"], "names", Noun::Policy),
    (&["describe", "queue"], "names", Noun::Queue),
    (&["delete", "retrypolicy"], "names", Noun::Policy),
    (&["delete", "queue"], "names", Noun::Queue),
    (&["update", "queue"], "name", Noun::Queue),
    (&["update", "queue"], "retry_policies", Noun::Policy),
    (&["create", "queue"], "retry_policies", Noun::Policy),
    (&["update", "queue"], "add_retry_policy", Noun::Policy),
    (&["update", "queue"], "remove_retry_policy", Noun::Policy),
];

/// The command line the dynamic completion works on (what `main` hands to
/// `clap_complete::CompleteEnv`): [`crate::cli::command`], with the arguments of
/// [`NAME_ARGS`] completing from the server. Built only for a completion request.
pub fn dynamic_command() -> clap::Command {
    let mut cmd = crate::cli::command();
    for (path, id, noun) in NAME_ARGS {
        let found = with_arg(&mut cmd, path, id, |arg| {
            arg.add(ArgValueCompleter::new(move |current: &OsStr| {
                complete_names(noun, current)
            }))
        });
        debug_assert!(found, "no argument `{id}` in `{}`", path.join(" "));
    }
    cmd
}

/// Applies `edit` to argument `id` of the subcommand at `path`, in place (the order of
/// subcommands and arguments is kept: `mut_subcommand` and `mut_arg` would move them to the
/// end). Whether it was found.
fn with_arg(cmd: &mut clap::Command, path: &[&str], id: &str, edit: impl Fn(clap::Arg) -> clap::Arg) -> bool {
    let Some((first, rest)) = path.split_first() else {
        let mut found = false;
        let taken = std::mem::take(cmd).mut_args(|a| {
            if a.get_id() == id {
                found = true;
                edit(a)
            } else {
                a
            }
        });
        *cmd = taken;
        return found;
    };
    match cmd.find_subcommand_mut(first) {
        Some(sub) => with_arg(sub, rest, id, edit),
        None => false,
    }
}

/// The names of `noun` on the configured server that start with `current`; none when the
/// server cannot be asked within [`DEADLINE`], for whatever reason.
fn complete_names(noun: Noun, current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let words: Vec<OsString> = std::env::args_os().skip_while(|a| a != "--").skip(1).collect();
    let Some(global) = global_args(&words) else {
        return Vec::new();
    };
    let (tx, rx) = std::sync::mpsc::channel();
    // On a thread of its own, so that nothing (an `execAuth` helper, a slow TLS handshake)
    // keeps the shell waiting past the deadline: the process exits without it.
    let spawned = std::thread::Builder::new().spawn(move || {
        let _ = tx.send(server_names(&global, noun));
    });
    if spawned.is_err() {
        return Vec::new();
    }
    let names = rx.recv_timeout(DEADLINE).ok().flatten().unwrap_or_default();
    names
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .map(CompletionCandidate::new)
        .collect()
}

/// The global flags of the command line being completed (`words`, the program's name first),
/// as clap parses them; the line is unfinished, so its errors are ignored.
fn global_args(words: &[OsString]) -> Option<GlobalArgs> {
    use clap::FromArgMatches;
    let matches = crate::cli::command()
        .ignore_errors(true)
        .try_get_matches_from(words)
        .ok()?;
    GlobalArgs::from_arg_matches(&matches).ok()
}

/// Every name of `noun` on the server the flags, environment and config file point to.
fn server_names(global: &GlobalArgs, noun: Noun) -> Option<Vec<String>> {
    let settings = connection::resolve(global, &Env::from_process()).ok()?;
    let (_, mut config) = settings.armada_client().ok()?;
    config.timeout = config.timeout.min(DEADLINE);
    config.verbose = false;
    let client = client::connect(config).ok()?;
    Some(match noun {
        Noun::Policy => client.list_policies().ok()?.into_iter().map(|p| p.name).collect(),
        Noun::Queue => client.list_queues().ok()?.into_iter().map(|q| q.name).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument named in [`NAME_ARGS`] exists, so none silently completes nothing.
    #[test]
    fn every_name_argument_exists() {
        let mut cmd = crate::cli::command();
        for (path, id, _) in NAME_ARGS {
            assert!(with_arg(&mut cmd, path, id, |a| a), "{path:?} {id}");
        }
    }

    #[test]
    fn the_global_flags_of_an_unfinished_line_are_read() {
        let words = |line: &str| line.split(' ').map(OsString::from).collect::<Vec<_>>();
        let g = global_args(&words("retryctl --context prod get rp --armada-url grpc://h:1 ")).unwrap();
        assert_eq!(g.context.as_deref(), Some("prod"));
        assert_eq!(g.armada_url.as_deref(), Some("grpc://h:1"));
        let g = global_args(&words("retryctl update queue --timeout 3s")).unwrap();
        assert_eq!(g.timeout, "3s");
        assert_eq!(g.armada_url, None);
    }
}
