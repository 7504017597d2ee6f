//! `retryctl apply -f PATH...`: create what is missing, update what differs, and report
//! `created`, `configured` or `unchanged` per resource. With `--dry-run` it still reads the
//! server, to say which of the three each resource would be, and writes nothing.

use crate::app::Context;
use crate::cli::FileArgs;
use crate::commands::create::write_files;
use crate::commands::remote::Mode;
use crate::error::ExitCode;
use crate::model::Kind;

pub fn run(ctx: &mut Context, args: &FileArgs) -> anyhow::Result<ExitCode> {
    write_files(
        ctx,
        &args.source,
        &args.write,
        &[Kind::RetryPolicy, Kind::Queue],
        Mode::Apply,
    )
}
