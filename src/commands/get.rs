//! `retryctl get retrypolicy|queue [NAME...] [-o table|wide|yaml|json|name]`.
//!
//! With names, each is fetched in order; the ones found are printed, and a missing one is
//! an error (exit 1) after the others print, as kubectl does. Without names, all are listed;
//! an empty list prints nothing on stdout and says so on stderr.

use crate::app::Context;
use crate::cli::{GetArgs, GetFlags, GetOutput, GetResource};
use crate::commands::remote::{self, Remote};
use crate::error::{CliError, ExitCode};
use crate::model::document::ApiVersion;
use crate::output::resources::{self, Format};

pub fn run(ctx: &mut Context, args: &GetArgs) -> anyhow::Result<ExitCode> {
    let (flags, policies) = match &args.resource {
        GetResource::Retrypolicy(f) => (f, true),
        GetResource::Queue(f) => (f, false),
    };
    let format = match flags.output {
        GetOutput::Table => Format::Table,
        GetOutput::Wide => Format::Wide,
        GetOutput::Yaml => Format::Yaml,
        GetOutput::Json => Format::Json,
        GetOutput::Name => Format::Name,
    };
    let version = ApiVersion::parse(&flags.api_version).ok_or_else(|| {
        CliError::usage(format!(
            "invalid `--api-version` `{}`: expected `armadaproject.io/v1` or `armadaproject.io/v1beta1`",
            flags.api_version
        ))
    })?;
    remote::check_names(if policies { "retry policy" } else { "queue" }, &flags.names)?;
    let conn = remote::connect(ctx)?;
    if policies {
        get_policies(ctx, &conn, flags, format, version)
    } else {
        get_queues(ctx, &conn, flags, format)
    }
}

fn get_policies(
    ctx: &mut Context,
    conn: &Remote,
    flags: &GetFlags,
    format: Format,
    version: ApiVersion,
) -> anyhow::Result<ExitCode> {
    let (items, missing) = if flags.names.is_empty() {
        let all = conn
            .client
            .list_policies()
            .map_err(|e| conn.fail("cannot list retry policies", e))?;
        (all, None)
    } else {
        let mut items = Vec::new();
        let mut missing = None;
        for n in &flags.names {
            match conn.client.get_policy(n) {
                Ok(p) => items.push(p),
                Err(e) if e.is_not_found() => {
                    missing = Some(
                        CliError::failed(format!("retry policy `{n}` not found"))
                            .with_hint("list the existing ones with `retryctl get retrypolicies`"),
                    );
                    break;
                }
                Err(e) => return Err(conn.fail(&format!("cannot get retry policy `{n}`"), e).into()),
            }
        }
        (items, missing)
    };
    if items.is_empty() && flags.names.is_empty() {
        writeln!(ctx.err, "no retry policies found")?;
        return Ok(ExitCode::Success);
    }
    if items.is_empty() {
        // Only missing names: a table with just its header says nothing.
    } else if let Err((name, fields)) = resources::write_policies(ctx.out, &items, format, version)? {
        return Err(CliError::failed(format!(
            "retry policy `{name}` cannot be shown as {}: it uses {}",
            version.as_str(),
            fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        ))
        .with_hint("use the default `--api-version armadaproject.io/v1`")
        .into());
    }
    match missing {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::Success),
    }
}

fn get_queues(ctx: &mut Context, conn: &Remote, flags: &GetFlags, format: Format) -> anyhow::Result<ExitCode> {
    let (items, missing) = if flags.names.is_empty() {
        let all = conn
            .client
            .list_queues()
            .map_err(|e| conn.fail("cannot list queues", e))?;
        (all, None)
    } else {
        let mut items = Vec::new();
        let mut missing = None;
        for n in &flags.names {
            match conn.client.get_queue(n) {
                Ok(q) => items.push(q),
                Err(e) if e.is_not_found() => {
                    missing = Some(
                        CliError::failed(format!("queue `{n}` not found"))
                            .with_hint("list the existing ones with `retryctl get queues`"),
                    );
                    break;
                }
                Err(e) => return Err(conn.fail(&format!("cannot get queue `{n}`"), e).into()),
            }
        }
        (items, missing)
    };
    if items.is_empty() && flags.names.is_empty() {
        writeln!(ctx.err, "no queues found")?;
        return Ok(ExitCode::Success);
    }
    if !items.is_empty() {
        resources::write_queues(ctx.out, &items, format)?;
    }
    match missing {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::Success),
    }
}
