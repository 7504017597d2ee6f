//! `--emit armada|kubernetes` on `simulate`, `tune` and `suggest` (docs/past-one-machine.md, "Emitting
//! the jobs"): prints, instead of running, the documents that run this same command as N
//! shards and a merge; `watch --emit kubernetes` (docs/watch.md): the Deployment that runs it.
//!
//! The command line the documents carry is the process's own, parsed again with the same
//! definition: every flag of the subcommand the user gave (not the defaults, not the global
//! flags: the shards talk to no Armada server), in the user's order, in its long form.
//! Before printing, the flags get the checks the command itself makes before reading anything
//! (the same functions, the same words), so that no document runs a command line every shard
//! would refuse. Must not: make the documents (that is `deploy`) or read any input file: the
//! paths are the containers'.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::ArgAction;

use crate::app::Context;
use crate::cli::{EmitArgs, WatchEmitArgs};
use crate::deploy::{self, Flag, Invocation};
use crate::error::{CliError, ExitCode};
use crate::output::text::shown;

/// `--job-set`, renamed `--emit-job-set`: a usage error that names the new flag (clap's
/// own tip would offer `--jobset`, Lookout's filter).
pub fn renamed_job_set() -> CliError {
    CliError::usage("`--job-set` is now `--emit-job-set` (`--jobset` is Lookout's job set filter)")
}

/// Prints the documents of `emit` for the process's command line. The command's own checks
/// of its flags come first, in its words (`commands::dispatch` calls its `check`): a command
/// line every shard would refuse (exit 2 in each pod) is refused here, before any document is
/// printed. What needs the inputs (the documents, the template's varies) is checked by the
/// shards, which have them.
pub fn run(ctx: &mut Context, emit: &EmitArgs) -> anyhow::Result<ExitCode> {
    let invocation = invocation(std::env::args_os().collect())?;
    let plan = deploy::plan(emit, &invocation)?;
    deploy::write(&plan, &mut *ctx.out)?;
    ctx.out.flush()?;
    Ok(ExitCode::Success)
}

/// Prints the Deployment of `watch --emit kubernetes` for the process's command line, after
/// `watch`'s own checks of its flags (`commands::dispatch` calls them).
pub fn run_watch(ctx: &mut Context, emit: &WatchEmitArgs) -> anyhow::Result<ExitCode> {
    let invocation = invocation(std::env::args_os().collect())?;
    let deployment = deploy::watch::deployment(emit, &invocation)?;
    deployment.write(&mut *ctx.out)?;
    ctx.out.flush()?;
    Ok(ExitCode::Success)
}

/// The emit flags: what the documents are, not what they run.
const EMIT_FLAGS: [&str; 10] = [
    "emit",
    "renamed_job_set",
    "shard_count",
    "image",
    "volume",
    "armada_queue",
    "job_set",
    "namespace",
    "requests",
    "dsn_secret",
];

/// `argv` (program name first) as the subcommand and its flags, as the user gave them.
pub fn invocation(argv: Vec<OsString>) -> Result<Invocation, CliError> {
    let mut cmd = crate::cli::command();
    cmd.build();
    let matches = cmd
        .try_get_matches_from_mut(argv)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let (name, sub) = matches.subcommand().ok_or_else(|| CliError::usage("no command"))?;
    let def = cmd.find_subcommand(name).ok_or_else(|| CliError::usage("no command"))?;
    // (the index of its first word, the flag)
    let mut flags: Vec<(usize, Flag)> = Vec::new();
    for arg in def.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_global_set() || sub.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let name = arg.get_long().map(str::to_string).unwrap_or_default();
        // Every value given, the emit flags' too: each goes into a document.
        for v in sub.get_raw(id).into_iter().flatten() {
            refuse_control(&name, id, &v.to_string_lossy())?;
        }
        if EMIT_FLAGS.contains(&id) {
            continue;
        }
        let path = arg.get_value_parser().type_id() == std::any::TypeId::of::<PathBuf>();
        let indices: Vec<usize> = sub.indices_of(id).map(Iterator::collect).unwrap_or_default();
        match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count => {
                for index in indices {
                    flags.push((
                        index,
                        Flag {
                            name: name.clone(),
                            values: Vec::new(),
                            path: false,
                        },
                    ));
                }
            }
            _ => {
                let Some(occurrences) = sub.get_raw_occurrences(id) else {
                    continue;
                };
                let mut at = indices.into_iter();
                for occurrence in occurrences {
                    let mut values = Vec::new();
                    for v in occurrence {
                        values.push(v.to_str().map(str::to_string).ok_or_else(|| {
                            CliError::usage(format!(
                                "`--{name}` `{}` is not UTF-8: the documents are",
                                v.to_string_lossy()
                            ))
                        })?);
                    }
                    let first = at.next().unwrap_or(usize::MAX);
                    for _ in 1..values.len() {
                        at.next();
                    }
                    // A delimited list is one word again, as typed.
                    if let Some(d) = arg.get_value_delimiter() {
                        values = vec![values.join(&d.to_string())];
                    }
                    flags.push((
                        first,
                        Flag {
                            name: name.clone(),
                            values,
                            path,
                        },
                    ));
                }
            }
        }
    }
    flags.sort_by_key(|(index, _)| *index);
    Ok(Invocation {
        command: name.to_string(),
        flags: flags.into_iter().map(|(_, f)| f).collect(),
    })
}

/// A value with a line break or a control character, refused (exit 2): in a document it
/// would end a YAML line or a container's argument where the user did not, and the shards
/// would run another command line than the one typed. The flag is named, the value shown
/// escaped (`\x0a`), but for a DSN, never shown.
fn refuse_control(name: &str, id: &str, value: &str) -> Result<(), CliError> {
    let bad = value
        .chars()
        .find(|&c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'));
    let Some(c) = bad else { return Ok(()) };
    let flag = if name.is_empty() {
        id.to_uppercase()
    } else {
        format!("--{name}")
    };
    let what = if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}') {
        "a line break"
    } else {
        "a control character"
    };
    // A DSN may hold a password: neither it nor the character (which may be part of it) is
    // shown. The documents never carry it (the pods read a Secret), but no DSN holds one.
    if id == "lookout_db" {
        return Err(CliError::usage(format!(
            "`--lookout-db` holds {what}: no DSN does (the value is not shown: it may hold a password)"
        )));
    }
    Err(CliError::usage(format!(
        "`{flag}` `{}` holds {what} (`{}`): --emit cannot carry it into the documents",
        shown(value),
        shown(&c.to_string())
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Invocation {
        invocation(line.split(' ').map(OsString::from).collect()).unwrap()
    }

    fn words(inv: &Invocation) -> Vec<(String, Vec<String>, bool)> {
        inv.flags
            .iter()
            .map(|f| (f.name.clone(), f.values.clone(), f.path))
            .collect()
    }

    #[test]
    fn the_flags_are_the_users_in_order_in_long_form() {
        let inv = parse(
            "retryctl --color never tune --vary p:retryLimit=1..3 -f new old -R --history=h.jsonl \
             --retry-policy a,b --emit kubernetes --shard-count 4 --image i --volume c:/d -o html \
             --vary p:spec.rules[0].action=Fail,Retry --exit-code",
        );
        assert_eq!(inv.command, "tune");
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            words(&inv),
            [
                ("vary".into(), s(&["p:retryLimit=1..3"]), false),
                ("filename".into(), s(&["new", "old"]), true),
                ("recursive".into(), s(&[]), false),
                ("history".into(), s(&["h.jsonl"]), true),
                ("retry-policy".into(), s(&["a,b"]), false),
                ("output".into(), s(&["html"]), false),
                ("vary".into(), s(&["p:spec.rules[0].action=Fail,Retry"]), false),
                ("exit-code".into(), s(&[]), false),
            ]
        );
    }
}
