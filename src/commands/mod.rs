//! The commands: each a short sequence of load → call → hand data to `output`.
//!
//! Must not: print with `println!` (write to the context's writers), or exit the process.

pub mod apply;
pub mod completion;
pub mod config;
pub mod create;
pub mod delete;
pub mod describe;
pub mod diff;
pub mod emit;
pub mod explain;
pub mod get;
pub mod history;
pub mod merge;
pub mod output_file;
pub mod remote;
pub mod replay;
pub mod schema;
pub mod serve;
pub mod simulate;
pub mod suggest;
pub mod tune;
pub mod update;
pub mod validate;
pub mod version;
pub mod watch;

use std::path::Path;

use crate::app::Context;
use crate::cli::{Command, EmitArgs, Merges, ReplayArgs, SimulateArgs, SuggestArgs, TuneArgs};
use crate::error::{CliError, ExitCode};
use replay::merged::End;

/// Routes a parsed command to the command that runs it (handed to `app::run` by `main`).
pub fn dispatch(command: Command, ctx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    match command {
        Command::Validate(args) => validate::run(ctx, &args),
        Command::Completion(args) => completion::run(ctx, &args),
        Command::Create(args) => create::run(ctx, &args),
        Command::Get(args) => get::run(ctx, &args),
        Command::Update(args) => update::run(ctx, &args),
        Command::Apply(args) => apply::run(ctx, &args),
        Command::Diff(args) => diff::run(ctx, &args),
        Command::Delete(args) => delete::run(ctx, &args),
        Command::Simulate(args) => replay_verb(ctx, args),
        Command::Tune(args) => replay_verb(ctx, args),
        Command::Suggest(args) => replay_verb(ctx, args),
        Command::Merge(args) => output_file::run_to(ctx, args.output_file.as_deref(), |ctx| {
            merge::run(ctx, &args, merge_end)
        }),
        Command::Serve(args) => serve::run(ctx, &args),
        Command::Config(args) => config::run(ctx, &args),
        Command::Version(args) => version::run(ctx, &args),
        Command::Describe(args) => describe::run(ctx, &args),
        Command::Explain(args) => explain::run(ctx, &args),
        Command::Schema(args) => schema::run(ctx, &args),
        Command::History(args) => output_file::run_to(ctx, args.output_file.as_deref(), |ctx| history::run(ctx, &args)),
        // `--emit kubernetes`: watch's own checks of its flags, in its words, then the
        // Deployment; it reads no database and no file.
        Command::Watch(args) if args.emit.emit.is_some() => {
            watch::check(&args)?;
            emit::run_watch(ctx, &args.emit)
        }
        Command::Watch(args) => watch::run(ctx, &args),
    }
}

/// A verb that replays a history (`simulate`, `tune`, `suggest`): what dispatch reads of its
/// arguments and how it runs it.
trait ReplayVerb {
    fn emit(&self) -> &EmitArgs;
    fn replay(&mut self) -> &mut ReplayArgs;
    fn output_file(&self) -> Option<&Path>;
    /// Its own checks of its flags, in its words (`--emit` runs them before the documents).
    fn check(&self) -> Result<(), CliError>;
    fn run(&self, ctx: &mut Context<'_>) -> anyhow::Result<ExitCode>;
}

macro_rules! replay_verb {
    ($args:ty, $verb:ident) => {
        impl ReplayVerb for $args {
            fn emit(&self) -> &EmitArgs {
                &self.emit
            }
            fn replay(&mut self) -> &mut ReplayArgs {
                &mut self.replay
            }
            fn output_file(&self) -> Option<&Path> {
                self.output_file.as_deref()
            }
            fn check(&self) -> Result<(), CliError> {
                $verb::check(self).map(|_| ())
            }
            fn run(&self, ctx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
                $verb::run(ctx, self)
            }
        }
    };
}

replay_verb!(SimulateArgs, simulate);
replay_verb!(TuneArgs, tune);
replay_verb!(SuggestArgs, suggest);

/// A replay verb: with `--emit`, the documents that run the command (its own checks of its
/// flags first, in its words; its --output-file is the merge's; it reads no database, and its
/// jobs get the DSN from a Secret: `--lookout-db` stays as given, and `$LOOKOUT_DB` is not
/// read); else the replay, into `--output-file` when given.
fn replay_verb(ctx: &mut Context<'_>, mut args: impl ReplayVerb) -> anyhow::Result<ExitCode> {
    if args.emit().renamed_job_set.is_some() {
        return Err(emit::renamed_job_set().into());
    }
    if args.emit().emit.is_some() {
        args.check()?;
        return emit::run(ctx, args.emit());
    }
    replay::lookout::resolve_replay_dsn(args.replay())?;
    output_file::run_to(ctx, args.output_file(), |ctx| args.run(ctx))
}

/// How the partials of the verb `command` end (`merge`): its own ending, one process's,
/// for the verbs the verb table says merge.
fn merge_end(command: &str) -> Option<End> {
    let verb = crate::cli::VERBS.iter().find(|v| v.name == command)?;
    Some(match verb.merges? {
        Merges::Simulate => simulate::shards::merge,
        Merges::Tune => tune::shards::merge,
        Merges::Suggest => suggest::shards::merge,
    })
}

#[cfg(test)]
mod tests {
    use super::merge_end;

    /// Every verb the table marks mergeable is one whose `-o` offers `partial`, and merge
    /// ends each: a verb given shards and forgotten here (or the reverse) fails this test.
    #[test]
    fn the_verbs_that_write_a_partial_are_the_ones_merge_ends() {
        let mut cmd = crate::cli::command();
        cmd.build();
        for verb in crate::cli::VERBS {
            let sub = cmd.find_subcommand(verb.name).expect("every verb is a subcommand");
            let partial = sub
                .get_arguments()
                .any(|a| a.get_id() == "output" && a.get_possible_values().iter().any(|v| v.get_name() == "partial"));
            assert_eq!(verb.merges.is_some(), partial, "{}", verb.name);
            assert_eq!(merge_end(verb.name).is_some(), partial, "{}", verb.name);
        }
    }
}
