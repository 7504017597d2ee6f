//! `retryctl diff -f PATH...`: a unified diff of the canonical YAML of each resource, server
//! (`---`) against file (`+++`), then the retry policies on the server that no file names;
//! exit 0 when all are the same, 1 when any differs.
//!
//! Canonical YAML is what `get -o yaml` prints, so a diff shows exactly what `apply` would
//! change. A policy is shown, on both sides, in the dialect `--api-version` names, else in its
//! file's own (a v1beta1 file is compared as today's Armada stores it). A resource missing on
//! the server diffs against nothing. Queue `permissions` the server derived from owners are
//! left out unless the file sets some.
//!
//! Decisions: the server's retry policies that no file names are listed after the diffs, one
//! line each (`- retrypolicy/NAME (on the server, in no file)`, as `terraform plan` lists
//! what it would destroy): they are what `apply --prune` deletes. They leave the exit code
//! alone: 1 still means that a file differs from the server. Queues are not listed: `apply
//! --prune` never deletes one, and a cluster's queues usually belong to other teams. When the
//! server's policy cannot be shown in its file's dialect (it uses fields v1beta1 has not),
//! both sides are shown in v1, with a note; a dialect asked for with `--api-version` that
//! cannot show a side is a usage error (exit 2).

use crate::app::Context;
use crate::cli::DiffArgs;
use crate::commands::remote::{self, found};
use crate::error::{CliError, ExitCode};
use crate::model::{encode, ApiVersion, Kind, Resource, RetryPolicy};
use crate::output::resources;

pub fn run(ctx: &mut Context, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let asked = args.api_version;
    let items = remote::load(ctx, &args.source, &[Kind::RetryPolicy, Kind::Queue])?;
    let conn = remote::connect(ctx)?;
    let mut differs = false;
    for item in &items {
        let label = item.label();
        let (server, file) = match &item.resource {
            Resource::RetryPolicy(p) => {
                let s = found(conn.client.get_policy(&p.name))
                    .map_err(|e| conn.fail(&format!("cannot read retry policy `{}`", p.name), e))?;
                let version = asked.or(item.version).unwrap_or(ApiVersion::V1);
                policy_sides(ctx, s.as_ref(), (&item.file, p), version, asked.is_some())?
            }
            Resource::Queue(q) => {
                let s = found(conn.client.get_queue(&q.name))
                    .map_err(|e| conn.fail(&format!("cannot read queue `{}`", q.name), e))?;
                let s = s.map(|mut s| {
                    if q.permissions.is_empty() {
                        s.permissions.clear();
                    }
                    resources::queue_yaml(&s)
                });
                (s, resources::queue_yaml(q))
            }
            _ => continue,
        };
        let old_name = match &server {
            Some(_) => format!("server/{label}"),
            None => format!("server/{label} (does not exist)"),
        };
        let text = resources::unified_diff(
            server.as_deref().unwrap_or(""),
            &file,
            &old_name,
            &format!("{}/{label}", item.file),
        );
        if !text.is_empty() {
            differs = true;
            ctx.out.write_all(text.as_bytes())?;
        }
    }
    for name in remote::unnamed_policies(&conn, &items, "cannot list the retry policies")? {
        writeln!(ctx.out, "- retrypolicy/{name} (on the server, in no file)")?;
    }
    Ok(if differs { ExitCode::Failure } else { ExitCode::Success })
}

/// Both sides of a policy as YAML in `version`. A side that does not fit: with `asked`
/// (the user's `--api-version`), a usage error naming the file and the fields; else both in
/// v1, said on stderr.
fn policy_sides(
    ctx: &mut Context,
    server: Option<&RetryPolicy>,
    file: (&str, &RetryPolicy),
    version: ApiVersion,
    asked: bool,
) -> anyhow::Result<(Option<String>, String)> {
    let (path, policy) = file;
    let yaml = |p: &RetryPolicy| encode::policy_document(p, version).map(|d| encode::to_yaml(&d));
    let fields = match (server.map(yaml).transpose(), yaml(policy)) {
        (Ok(s), Ok(f)) => return Ok((s, f)),
        (Err(fields), _) => ("the server's", fields),
        (_, Err(fields)) => ("the file's", fields),
    };
    let (side, fields) = fields;
    let fields = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    if asked {
        return Err(CliError::usage(format!(
            "{path}: retry policy `{}`: {side} cannot be shown as `{}`: it uses {fields}",
            policy.name,
            version.as_str()
        ))
        .with_hint("use `--api-version armadaproject.io/v1`")
        .into());
    }
    writeln!(
        ctx.err,
        "note: {path}: retrypolicy/{}: {side} uses {fields}, which `{}` cannot show: both sides are shown as `{}`",
        policy.name,
        version.as_str(),
        ApiVersion::V1.as_str()
    )?;
    Ok((server.map(resources::policy_yaml), resources::policy_yaml(policy)))
}
