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

use crate::app::Context;
use crate::cli::Command;
use crate::error::ExitCode;
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
        // `--emit` prints the documents that run the command; its --output-file is the merge's.
        // It reads no database, and its jobs get the DSN from a Secret: `--lookout-db` stays
        // as given, and `$LOOKOUT_DB` is not read.
        Command::Simulate(ref args) if args.emit.renamed_job_set.is_some() => Err(emit::renamed_job_set().into()),
        Command::Tune(ref args) if args.emit.renamed_job_set.is_some() => Err(emit::renamed_job_set().into()),
        Command::Suggest(ref args) if args.emit.renamed_job_set.is_some() => Err(emit::renamed_job_set().into()),
        // The command's own checks of its flags, in its words, then the documents.
        Command::Simulate(args) if args.emit.emit.is_some() => {
            simulate::check(&args)?;
            emit::run(ctx, &args.emit)
        }
        Command::Tune(args) if args.emit.emit.is_some() => {
            tune::check(&args)?;
            emit::run(ctx, &args.emit)
        }
        Command::Suggest(args) if args.emit.emit.is_some() => {
            suggest::check(&args)?;
            emit::run(ctx, &args.emit)
        }
        Command::Simulate(mut args) => {
            replay::lookout::resolve_replay_dsn(&mut args.replay)?;
            output_file::run_to(ctx, args.output_file.as_deref(), |ctx| simulate::run(ctx, &args))
        }
        Command::Tune(mut args) => {
            replay::lookout::resolve_replay_dsn(&mut args.replay)?;
            output_file::run_to(ctx, args.output_file.as_deref(), |ctx| tune::run(ctx, &args))
        }
        Command::Suggest(mut args) => {
            replay::lookout::resolve_replay_dsn(&mut args.replay)?;
            output_file::run_to(ctx, args.output_file.as_deref(), |ctx| suggest::run(ctx, &args))
        }
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

/// How the partials of the verb `command` end (`merge`): its own ending, one process's,
/// for the verbs the verb table marks mergeable.
fn merge_end(command: &str) -> Option<End> {
    let verb = crate::cli::VERBS.iter().find(|v| v.name == command && v.mergeable)?;
    match verb.name {
        "simulate" => Some(simulate::merge),
        "tune" => Some(tune::merge),
        "suggest" => Some(suggest::merge),
        _ => None,
    }
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
            assert_eq!(verb.mergeable, partial, "{}", verb.name);
            assert_eq!(merge_end(verb.name).is_some(), partial, "{}", verb.name);
        }
    }
}
