//! The command line, as clap types and help text only.
//!
//! Owns: every flag, argument, alias and help line of `retryctl`, and [`parse`]. Must not: do
//! I/O or hold logic. What reads these types: `main` parses and hands the [`Cli`] to `app`,
//! which keeps the global flags in the `Context` every command gets and passes the
//! [`Command`] to `commands::dispatch`; each command reads its own arguments (`SimulateArgs`…);
//! `connection` resolves the connection flags with the environment and the armadactl config
//! file; `output` takes its format and colour choices from here; `replay` and `lookout` take
//! the value of `--shard`, [`Shard`], whose jobs `replay::shard` decides, and `replay` that of
//! `--max-contradictions`, [`MaxContradictions`], which `replay::explained` holds against a
//! comparison. Below it only
//! `engine`: an [`EngineArg`] becomes an `engine::EngineKind`.
//!
//! This file is the top level ([`Cli`], [`Command`]) and how the definition is made and parsed
//! ([`command`], [`parse`]: only the entered verb's arguments are defined). `verbs` is the one
//! table of verbs, [`VERBS`], which every list of verbs reads. Each verb's arguments and
//! examples are in its family's file: `resources` (the server's resources, `explain`,
//! `schema`), `replay` (`simulate`, `tune`, `suggest`, `merge`), `record` (`history`,
//! `watch`: Lookout's record as it is written), `local` (`validate`, `serve`, `completion`,
//! `config`, `version`); and what several share: `global`
//! (the flags of every verb), `view` (how `get` prints), `emit` (`--emit`), `shard`
//! (`--shard I/N`), `max_contradictions`, `values` (the value parsers several verbs share).

mod emit;
mod global;
mod local;
mod max_contradictions;
mod merge;
mod record;
mod refusal;
mod replay;
mod resources;
mod shard;
#[cfg(test)]
mod tests;
mod values;
mod verbs;
mod view;

use clap::{Args, Parser, Subcommand};

pub use emit::{EmitArgs, EmitKind, WatchEmitArgs, WatchEmitKind};
use global::SERVER_FLAGS;
pub use global::{ColorChoice, GlobalArgs};
pub use local::{
    CompletionArgs, ConfigArgs, ConfigCommand, ServeArgs, ServeDialect, ValidateArgs, ValidateOutput, VersionArgs,
    VersionOutput,
};
pub use max_contradictions::MaxContradictions;
pub use merge::{MergeArgs, MergeOutput};
pub use record::{HistoryArgs, HistoryOutput, WatchArgs};
pub use refusal::house_words;
pub use replay::{
    ContentionArg, EngineArg, ExecutorConfigFormat, IncidentsArg, ReplayArgs, SchedulerArgs, SimulateArgs,
    SimulateOutput, SuggestArgs, SuggestOutput, TuneArgs, TuneOutput, WindowArgs,
};
pub use resources::{
    ApplyArgs, ClusterArgs, CreateArgs, CreateResource, DeleteArgs, DeleteFlags, DeletePolicyFlags, DeleteResource,
    DescribeArgs, DescribeNames, DescribeResource, DiffArgs, DryRun, ExplainArgs, FileArgs, FileSource, GetArgs,
    GetFlags, GetResource, QueueFlags, SchemaArgs, SchemaKind, UpdateArgs, UpdateQueueFlags, UpdateResource, WriteArgs,
};
pub use shard::{Shard, MAX_SHARDS};
pub use verbs::{Merges, Verb, VERBS};
pub use view::{GetOutput, OutputParser, ViewArgs};

/// The parsed command line. Its definition is [`command`]: the top level is written out in
/// [`top_level`] rather than derived, so that [`parse`] can give it only the subcommand the
/// command line names.
#[derive(Debug, Args)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl clap::CommandFactory for Cli {
    fn command() -> clap::Command {
        command()
    }

    fn command_for_update() -> clap::Command {
        command()
    }
}

impl Parser for Cli {}

/// The top level without its subcommands: name, version (every subcommand's `--version`
/// too), about, examples and the global flags.
fn top_level() -> clap::Command {
    let top = clap::Command::new("retryctl")
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .max_term_width(100)
        .about("Author, validate, push and simulate Armada retry policies")
        .long_about(
            "Author, validate, push and simulate Armada retry policies.\n\n\
             retryctl talks to an Armada server over its REST API or its gRPC API (or to \
             its own `retryctl serve`, which answers both), validates RetryPolicy and Queue \
             documents offline, and replays failure histories through the same decision rules \
             as the scheduler.",
        )
        .after_help(EX_ROOT)
        .subcommand_required(true)
        .arg_required_else_help(true);
    GlobalArgs::augment_args(top).mut_args(short_and_long)
}

const EX_ROOT: &str = "Examples:\n  retryctl validate -f policies/                     # offline: parse, validate, lint\n  retryctl serve --in-memory                           # a local Armada-compatible server\n  retryctl apply -f policies/                          # push policies, then queues\n  retryctl describe retrypolicy ml-training            # what happens to a failed job\n  retryctl simulate -f policies/ --history history.yaml";

/// The command line as clap parses it: the top level and every subcommand, with the server
/// flags hidden on the verbs that talk to no server. Completions are generated from it, and
/// `main` parses with it when the command line does not start with a subcommand's name (see
/// [`command_for`]). Nothing is built here: clap builds a subcommand only when the command
/// line enters it.
pub fn command() -> clap::Command {
    let mut cmd = Command::augment_subcommands(top_level());
    // In place, not with `mut_subcommand`, which would move the subcommand to the end.
    for sub in cmd.get_subcommands_mut() {
        *sub = with_arguments(std::mem::take(sub));
    }
    cmd
}

/// The definition to parse `args` (program name first) with. When the first argument is a
/// subcommand's name: the top level with only that subcommand, whose arguments alone are
/// defined (BENCHMARKS.md start-up bar; BENCHMARKS.md "Start-up"): defining every command's
/// arguments, then copying each global flag into every subcommand when clap builds the top
/// level, and freeing it all, was two fifths of a `validate`'s instructions. Anything else
/// (no argument, a flag first, a misspelt or unknown name, `help`) gets the whole
/// [`command`]: the top level's help, its errors and suggestions list every subcommand. The
/// outcome is the same either way (tested).
fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    let entered = args.get(1).and_then(|a| a.to_str()).and_then(|name| {
        // Names and abouts only: [`Command`] defers the arguments, [`with_arguments`] adds
        // the examples.
        let mut all = Command::augment_subcommands(clap::Command::new("retryctl"));
        // Subcommands have no aliases at the top level: only their own names are found.
        all.find_subcommand_mut(name).map(std::mem::take)
    });
    match entered {
        Some(sub) => top_level().subcommand(with_arguments(sub)),
        None => command(),
    }
}

/// A subcommand of [`Command`] with what its entry in [`VERBS`] gives it. Its arguments,
/// defined now, before its parent copies the global flags into it: they stay after its own
/// arguments, as completion scripts list them. (Left to [`Command`]'s deferred step, they
/// would be defined after the global flags.) Its examples. Then, on a verb that talks to no
/// server, the deferred step hides [`SERVER_FLAGS`]: the copies are there by then.
fn with_arguments(sub: clap::Command) -> clap::Command {
    // A verb missing from the table keeps the derived deferred step: the same command, but
    // without examples, and the checked-in completions list its global flags first (tests
    // fail, `the_verb_table_is_the_command_enum` first).
    let Some(verb) = verbs::verb(sub.get_name()) else {
        return sub;
    };
    let sub = (verb.define)(sub).after_help(verb.examples).mut_args(short_and_long);
    if verb.server {
        sub.defer(|sub| sub)
    } else {
        sub.defer(hide_server_flags)
    }
}

/// One help shape for every verb (docs/cli.md "Help"): `-h` is the short form, each flag's
/// first sentence on one line; `--help` the whole text, a flag's below its name. A flag whose
/// text is one sentence says it in both; its `--help` is the long layout all the same, so that
/// `-h` and `--help` differ alike on every verb.
fn short_and_long(a: clap::Arg) -> clap::Arg {
    if a.get_long_help().is_some() {
        return a;
    }
    let Some(help) = a.get_help().map(ToString::to_string) else {
        return a;
    };
    let short = first_sentence(&help).to_string();
    a.help(short).long_help(help)
}

/// `text`'s first sentence, without its full stop: up to the first `. ` that a capital
/// letter or a backquote follows (`(default: 10s). Repeatable` ends after `10s)`).
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices(". ") {
        if bytes.get(i + 2).is_some_and(|b| b.is_ascii_uppercase() || *b == b'`') {
            return &text[..i];
        }
    }
    text.strip_suffix('.').unwrap_or(text)
}

/// Hides [`SERVER_FLAGS`] on a verb that talks to no server. `mut_args` edits in place: the
/// order clap's matcher relies on is kept (`mut_arg` would move the flag to the end).
fn hide_server_flags(sub: clap::Command) -> clap::Command {
    sub.mut_args(|a| {
        // Only the copies of the global flags: `serve`'s own `--token`/`--token-file` (the
        // tokens it accepts) share their ids and stay visible.
        if a.is_global_set() && SERVER_FLAGS.contains(&a.get_id().as_str()) {
            a.hide(true)
        } else {
            a
        }
    })
}

/// Parses the process's arguments (see [`command_for`]).
pub fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut cmd = command_for(&args);
    let parsed = parse_with(&mut cmd, args);
    // Kept until the process exits instead of freeing each argument definition one by one.
    std::mem::forget(cmd);
    parsed
}

/// Parses `args` (program name first) with `cmd`, a definition from [`command_for`] or
/// [`command`]; errors, `--help` and `--version` included, are rendered against `cmd`.
fn parse_with<I, T>(cmd: &mut clap::Command, args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(cmd))
}

// The verbs, each with its entry in the verb table, [`VERBS`], in the same order (tested). (A
// `//` comment: a doc comment here would become the top level's about text.)
// `defer`: the derived subcommands are names and abouts, cheap to make, and
// [`with_arguments`] defines the arguments, and adds the examples, of those that are parsed
// or listed (see [`command_for`]). Argument structs carry no doc comment, which clap would
// apply as the subcommand's about when defining its arguments, over the variant's.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Parse, validate and lint documents offline (what each check means: docs/policies.md).
    Validate(ValidateArgs),
    /// Create every document of the files (fails on an existing name), or a queue from flags.
    Create(CreateArgs),
    /// Show retry policies or queues.
    Get(GetArgs),
    /// Replace existing resources from files, or change a queue in place.
    Update(UpdateArgs),
    /// Create or update every document of the files.
    ///
    /// With --prune, also delete the retry policies on the server that no file names (those
    /// `diff` lists), never one a queue still uses.
    Apply(ApplyArgs),
    /// Show how the files differ from the server (exit 0 same, 1 different).
    ///
    /// Then lists the retry policies on the server that no file names (what `apply --prune`
    /// deletes); they leave the exit code alone.
    Diff(DiffArgs),
    /// Delete retry policies or queues.
    Delete(DeleteArgs),
    /// Replay failure histories through the retry evaluator.
    Simulate(SimulateArgs),
    /// Search retry-policy candidates on a history: which policy should this cluster run?
    Tune(TuneArgs),
    /// Learn a retry policy from the cluster's own failures, and prove it on the same history.
    ///
    /// Every failed run gets a signature (its condition, failed container and exit code,
    /// message template, pod error or category); a signature that retries have rescued gets a
    /// Retry rule with the limit its successes by attempt justify, one they have not gets a
    /// Fail rule. The proposal is replayed against the baseline as `simulate --baseline` would.
    Suggest(SuggestArgs),
    /// Add up a sharded simulate, tune or suggest (`--shard I/N -o partial`) into one answer.
    ///
    /// Prints what the command prints unsharded, byte for byte: every shard 0..N−1 of one
    /// run, once each, or exit 3 naming what is wrong. A suggest's merge proposes and then
    /// compares over the history, which it reads again.
    Merge(MergeArgs),
    /// Run a local Armada-compatible API server with SQLite storage.
    Serve(ServeArgs),
    /// Print a shell completion script.
    ///
    /// The script completes commands, flags and files, offline. To complete the names of the
    /// server's retry policies and queues too, load the dynamic completion instead: `source
    /// <(COMPLETE=bash retryctl)` in ~/.bashrc (zsh alike), `COMPLETE=fish retryctl | source`
    /// for fish.
    Completion(CompletionArgs),
    /// Show or change the armadactl config file.
    Config(ConfigArgs),
    /// Print the client version, and the server's dialect when it is reachable.
    Version(VersionArgs),
    /// Explain a retry policy or queue in words: limits, backoff schedule, who uses it.
    Describe(DescribeArgs),
    /// Document the fields of a resource (`retrypolicy.spec.rules`).
    Explain(ExplainArgs),
    /// Print the JSON Schema (draft 2020-12) of a document kind, for editors.
    Schema(SchemaArgs),
    /// Export a real cluster's failure history from Armada's Lookout as FailureHistory documents.
    History(HistoryArgs),
    /// Today's policy and candidates on Lookout's live record, as Prometheus metrics.
    ///
    /// Each poll reads the jobs that reached a terminal state since the last, replays each under
    /// --baseline and every -f as `simulate --baseline` would, and counts: retries granted and
    /// futile, what each candidate would have changed, contradictions. Serves /metrics, /report
    /// (the window's plan as HTML) and /healthz; the counters and cursor survive a restart.
    Watch(WatchArgs),
}

impl Command {
    /// Its `--output-file`, of a verb that takes one (the verb table's `output_file`; a test
    /// holds the two equal); `None` for the others.
    pub fn output_file(&self) -> Option<&std::path::Path> {
        match self {
            Command::Simulate(args) => args.output_file.as_deref(),
            Command::Tune(args) => args.output_file.as_deref(),
            Command::Suggest(args) => args.output_file.as_deref(),
            Command::Merge(args) => args.output_file.as_deref(),
            Command::History(args) => args.output_file.as_deref(),
            _ => None,
        }
    }
}
