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

/// Routes a parsed command to the command that runs it (handed to `app::run` by `main`): what
/// runs before a result has a file to go to (`--emit`, which writes documents and whose
/// `--output-file` is the merge's; the replay's DSN), then the command, into the
/// `--output-file` of a verb that takes one (the verb table's `output_file`), once for all.
pub fn dispatch(mut command: Command, ctx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    let before = match &mut command {
        Command::Simulate(args) => before_replay(ctx, args)?,
        Command::Tune(args) => before_replay(ctx, args)?,
        Command::Suggest(args) => before_replay(ctx, args)?,
        // `--emit kubernetes`: watch's own checks of its flags, in its words, then the
        // Deployment; it reads no database and no file.
        Command::Watch(args) if args.emit.emit.is_some() => {
            watch::check(args)?;
            Some(emit::run_watch(ctx, &args.emit)?)
        }
        _ => None,
    };
    if let Some(code) = before {
        return Ok(code);
    }
    let path = command.output_file().map(Path::to_path_buf);
    output_file::run_to(ctx, path.as_deref(), |ctx| run(command, ctx))
}

/// Runs `command`, its output already where `--output-file` sends it.
fn run(command: Command, ctx: &mut Context<'_>) -> anyhow::Result<ExitCode> {
    match command {
        Command::Validate(args) => validate::run(ctx, &args),
        Command::Completion(args) => completion::run(ctx, &args),
        Command::Create(args) => create::run(ctx, &args),
        Command::Get(args) => get::run(ctx, &args),
        Command::Update(args) => update::run(ctx, &args),
        Command::Apply(args) => apply::run(ctx, &args),
        Command::Diff(args) => diff::run(ctx, &args),
        Command::Delete(args) => delete::run(ctx, &args),
        Command::Simulate(args) => simulate::run(ctx, &args),
        Command::Tune(args) => tune::run(ctx, &args),
        Command::Suggest(args) => suggest::run(ctx, &args),
        Command::Merge(args) => merge::run(ctx, &args, merge_end),
        Command::Serve(args) => serve::run(ctx, &args),
        Command::Config(args) => config::run(ctx, &args),
        Command::Version(args) => version::run(ctx, &args),
        Command::Describe(args) => describe::run(ctx, &args),
        Command::Explain(args) => explain::run(ctx, &args),
        Command::Schema(args) => schema::run(ctx, &args),
        Command::History(args) => history::run(ctx, &args),
        Command::Watch(args) => watch::run(ctx, &args),
    }
}

/// A verb that replays a history (`simulate`, `tune`, `suggest`): what dispatch reads of its
/// arguments before it runs.
trait ReplayVerb {
    fn emit(&self) -> &EmitArgs;
    fn replay(&mut self) -> &mut ReplayArgs;
    /// Its own checks of its flags, in its words (`--emit` runs them before the documents).
    fn check(&self) -> Result<(), CliError>;
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
            fn check(&self) -> Result<(), CliError> {
                $verb::check(self).map(|_| ())
            }
        }
    };
}

replay_verb!(SimulateArgs, simulate);
replay_verb!(TuneArgs, tune);
replay_verb!(SuggestArgs, suggest);

/// A replay verb before its run: with `--emit`, the documents that run the command (its own
/// checks of its flags first, in its words; its --output-file is the merge's; it reads no
/// database, and its jobs get the DSN from a Secret: `--lookout-db` stays as given, and
/// `$LOOKOUT_DB` is not read), the exit code given; else the DSN resolved, and `None`: the
/// replay runs.
fn before_replay(ctx: &mut Context<'_>, args: &mut impl ReplayVerb) -> anyhow::Result<Option<ExitCode>> {
    if args.emit().renamed_job_set.is_some() {
        return Err(emit::renamed_job_set().into());
    }
    if args.emit().emit.is_some() {
        args.check()?;
        return emit::run(ctx, args.emit()).map(Some);
    }
    replay::lookout::resolve_replay_dsn(args.replay())?;
    Ok(None)
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
