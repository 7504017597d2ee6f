//! `retryctl update -f PATH...` (replace; NotFound when missing) and `update queue NAME`
//! (read-modify-write: flags not given keep their values, never upstream's full-replace trap).
//!
//! `update queue` order of edits: `--retry-policy` replaces the list (`--retry-policy ""`
//! clears it), then `--add-retry-policy` appends names not already attached, then
//! `--remove-retry-policy` detaches; removing a name that is not attached is an error (a
//! typo must not pass silently). `--label` replaces the whole label set. Nothing is sent
//! when the result equals what the server has (`unchanged`). The edit runs through
//! [`modify_queue`](crate::client::conflict::modify_queue), which re-reads and re-applies it
//! when another writer changed the queue in between (docs/cli.md).

use crate::app::Context;
use crate::cli::{FileArgs, UpdateArgs, UpdateQueueFlags, UpdateResource};
use crate::client::{Modified, ModifyError};
use crate::commands::remote::batch::write_files;
use crate::commands::remote::queue::apply_flags;
use crate::commands::remote::{self, Mode};
use crate::error::{CliError, ExitCode};
use crate::model::validate::validate_queue;
use crate::model::{Kind, Queue};

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

/// The flags' edit of one queue; an error stops the update before anything is sent.
fn edit(queue: &mut Queue, flags: &UpdateQueueFlags) -> Result<(), CliError> {
    let name = &flags.queue.name;
    apply_flags(queue, &flags.queue)?;
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
            )));
        }
    }
    let problems: Vec<String> = validate_queue(queue)
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| format!("  {}: {}", d.path, d.message))
        .collect();
    if !problems.is_empty() {
        return Err(CliError::invalid(format!(
            "invalid queue `{name}`, nothing was sent:\n{}",
            problems.join("\n")
        )));
    }
    Ok(())
}

fn update_queue(ctx: &mut Context, flags: &UpdateQueueFlags) -> anyhow::Result<ExitCode> {
    let name = &flags.queue.name;
    remote::check_names("queue", std::slice::from_ref(name))?;
    let mut names: Vec<String> = flags.add_retry_policy.clone();
    names.extend(flags.remove_retry_policy.iter().cloned());
    if let Some(p) = &flags.queue.retry_policies {
        // `--retry-policy ""` clears the list: empty entries are no names.
        names.extend(p.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(String::from));
    }
    remote::check_names("retry policy", &names)?;
    let dry = remote::dry_run(ctx, flags.queue.write.dry_run)?;
    let conn = remote::connect(ctx)?;
    let what = format!("cannot update queue `{name}`");
    let fail = |e: crate::client::ClientError| {
        let missing = e.is_not_found();
        let err = conn.fail(&what, e);
        if missing {
            err.with_hint(format!("create it with `retryctl create queue {name}`"))
        } else {
            err
        }
    };
    let changed = if dry {
        let current = conn.client.get_queue(name).map_err(fail)?;
        let mut queue = current.clone();
        edit(&mut queue, flags)?;
        queue != current
    } else {
        match conn.client.modify_queue(name, |q| edit(q, flags)) {
            Ok(Modified::Written(_)) => true,
            Ok(Modified::Unchanged) => false,
            Err(ModifyError::Edit(e)) => return Err(e.into()),
            Err(ModifyError::Client(e)) => return Err(fail(e).into()),
        }
    };
    let result = if changed { "configured" } else { "unchanged" };
    writeln!(ctx.out, "queue/{name} {result}{}", remote::suffix(dry))?;
    Ok(ExitCode::Success)
}
