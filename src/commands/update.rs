//! `retryctl update -f PATH...` (replace; NotFound when missing) and `update queue NAME`
//! (read-modify-write: flags not given keep their values, never upstream's full-replace trap).
//!
//! `update queue` order of edits: `--retry-policy` replaces the list, then
//! `--add-retry-policy` appends names not already attached, then `--remove-retry-policy`
//! detaches; removing a name that is not attached is an error (a typo must not pass
//! silently). `--label` replaces the whole label set. Nothing is sent when the result equals
//! what the server has (`unchanged`).

use crate::app::Context;
use crate::cli::{FileArgs, UpdateArgs, UpdateQueueFlags, UpdateResource};
use crate::commands::create::{apply_flags, write_files, write_queue};
use crate::commands::remote::{self, Mode};
use crate::error::{CliError, ExitCode};
use crate::model::Kind;

pub fn run(ctx: &mut Context, args: &UpdateArgs) -> anyhow::Result<ExitCode> {
    match &args.resource {
        Some(UpdateResource::Queue(flags)) => update_queue(ctx, flags),
        Some(UpdateResource::Retrypolicy(FileArgs { source, write })) => {
            write_files(ctx, source, write, &[Kind::RetryPolicy], Mode::Update)
        }
        None => write_files(
            ctx,
            &args.source,
            &args.write,
            &[Kind::RetryPolicy, Kind::Queue],
            Mode::Update,
        ),
    }
}

fn update_queue(ctx: &mut Context, flags: &UpdateQueueFlags) -> anyhow::Result<ExitCode> {
    let name = &flags.queue.name;
    remote::check_names("queue", std::slice::from_ref(name))?;
    let mut names: Vec<String> = flags.add_retry_policy.clone();
    names.extend(flags.remove_retry_policy.iter().cloned());
    if let Some(p) = &flags.queue.retry_policies {
        names.extend(p.iter().cloned());
    }
    remote::check_names("retry policy", &names)?;
    let conn = remote::connect(ctx)?;
    let current = conn.client.get_queue(name).map_err(|e| {
        let missing = e.is_not_found();
        let err = conn.fail(&format!("cannot update queue `{name}`"), e);
        if missing {
            err.with_hint(format!("create it with `retryctl create queue {name}`"))
        } else {
            err
        }
    })?;
    let mut queue = current.clone();
    apply_flags(&mut queue, &flags.queue)?;
    for p in &flags.add_retry_policy {
        if !queue.retry_policies.contains(p) {
            queue.retry_policies.push(p.clone());
        }
    }
    for p in &flags.remove_retry_policy {
        let before = queue.retry_policies.len();
        queue.retry_policies.retain(|x| x != p);
        if queue.retry_policies.len() == before {
            let attached = if queue.retry_policies.is_empty() {
                "none".to_string()
            } else {
                queue
                    .retry_policies
                    .iter()
                    .map(|x| format!("`{x}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(CliError::failed(format!(
                "cannot update queue `{name}`: retry policy `{p}` is not attached to it (attached: {attached}); nothing was sent"
            ))
            .into());
        }
    }
    if queue == current {
        let dry = remote::dry_run(ctx, flags.queue.write.dry_run)?;
        writeln!(ctx.out, "queue/{name} unchanged{}", remote::suffix(dry))?;
        return Ok(ExitCode::Success);
    }
    write_queue(ctx, queue, &flags.queue.write, Mode::Update)
}
