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
use crate::error::{CliError, ExitCode};
use crate::model::ApiVersion;

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
        Command::Merge(args) => output_file::run_to(ctx, args.output_file.as_deref(), |ctx| merge::run(ctx, &args)),
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

/// `--api-version`'s value (get, diff, explain), or the usage error that says what it takes.
pub fn api_version(value: &str) -> Result<ApiVersion, CliError> {
    ApiVersion::parse(value).ok_or_else(|| {
        CliError::usage(format!(
            "invalid `--api-version` `{value}`: expected `armadaproject.io/v1` or `armadaproject.io/v1beta1`"
        ))
    })
}
