//! `retryctl diff -f PATH...`: a unified diff of the canonical YAML of each resource, server
//! (`---`) against file (`+++`); exit 0 when all are the same, 1 when any differs.
//!
//! Canonical YAML is what `get -o yaml` prints (v1 for policies), so a diff shows exactly
//! what `apply` would change. A resource missing on the server diffs against nothing. Queue
//! `permissions` the server derived from owners are left out unless the file sets some.

use crate::app::Context;
use crate::cli::DiffArgs;
use crate::commands::remote::{self, found};
use crate::error::ExitCode;
use crate::model::{Kind, Resource};
use crate::output::resources;

pub fn run(ctx: &mut Context, args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let items = remote::load(ctx, &args.source, &[Kind::RetryPolicy, Kind::Queue])?;
    let conn = remote::connect(ctx)?;
    let mut differs = false;
    for item in &items {
        let label = item.label();
        let (server, file) = match &item.resource {
            Resource::RetryPolicy(p) => {
                let s = found(conn.client.get_policy(&p.name))
                    .map_err(|e| conn.fail(&format!("cannot read retry policy `{}`", p.name), e))?;
                (s.map(|s| resources::policy_yaml(&s)), resources::policy_yaml(p))
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
    Ok(if differs { ExitCode::Failure } else { ExitCode::Success })
}
