//! `retryctl version [--client] [-o json]`: the client version, then the server's URL and
//! dialect (`v1` for `retryctl serve`, `upstream` otherwise, docs/reference/wire.md), and `gRPC` when
//! that is how it is spoken to. An unreachable server is
//! an error (exit 4) after the client version is printed, like every other server command;
//! with `-o json` the one object printed then holds the client part only.

use crate::app::Context;
use crate::cli::{VersionArgs, VersionOutput};
use crate::commands::remote;
use crate::error::{CliError, ExitCode};

pub fn run(ctx: &mut Context, args: &VersionArgs) -> anyhow::Result<ExitCode> {
    let client = env!("CARGO_PKG_VERSION");
    let server: Option<Result<(String, &'static str, &'static str), CliError>> = if args.client {
        None
    } else {
        Some(remote::connect(ctx).and_then(|conn| {
            let dialect = conn
                .client
                .dialect_name()
                .map_err(|e| conn.fail("cannot ask the server its dialect", e))?;
            Ok((
                crate::redact::redact_url(conn.client.base_url()),
                dialect,
                conn.client.protocol(),
            ))
        }))
    };
    let found = server.as_ref().and_then(|s| s.as_ref().ok());
    match args.output {
        VersionOutput::Text => {
            writeln!(ctx.out, "client: retryctl {client}")?;
            match found {
                Some((url, dialect, "gRPC")) => writeln!(ctx.out, "server: {url} (gRPC, dialect: {dialect})")?,
                Some((url, dialect, _)) => writeln!(ctx.out, "server: {url} (dialect: {dialect})")?,
                None => {}
            }
        }
        VersionOutput::Json => {
            let mut v = serde_json::json!({"client": {"version": client}});
            if let Some((url, dialect, protocol)) = found {
                v["server"] = serde_json::json!({"url": url, "dialect": dialect});
                if *protocol == "gRPC" {
                    v["server"]["protocol"] = "grpc".into();
                }
            }
            writeln!(ctx.out, "{}", serde_json::to_string_pretty(&v)?)?;
        }
    }
    match server {
        Some(Err(e)) => Err(e.into()),
        _ => Ok(ExitCode::Success),
    }
}
