//! `retryctl version [--client]`: the client version, then the server's URL and dialect
//! (`v1` for `retryctl serve`, `upstream` otherwise, §5.1). An unreachable server is an
//! error (exit 4) after the client version is printed, like every other server command.

use crate::app::Context;
use crate::cli::VersionArgs;
use crate::commands::remote;
use crate::error::ExitCode;

pub fn run(ctx: &mut Context, args: &VersionArgs) -> anyhow::Result<ExitCode> {
    writeln!(ctx.out, "client: retryctl {}", env!("CARGO_PKG_VERSION"))?;
    if args.client {
        return Ok(ExitCode::Success);
    }
    let conn = remote::connect(ctx)?;
    let dialect = conn
        .client
        .dialect_name()
        .map_err(|e| conn.fail("cannot ask the server its dialect", e))?;
    writeln!(ctx.out, "server: {} (dialect: {dialect})", conn.client.base_url())?;
    Ok(ExitCode::Success)
}
