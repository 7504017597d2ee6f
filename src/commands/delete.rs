//! `retryctl delete retrypolicy NAME... [--detach] [--ignore-not-found]` and
//! `delete queue NAME...`.
//!
//! Each name is looked up first, so that a missing one is reported (or skipped with
//! `--ignore-not-found`) the same on every server: upstream deletes a missing queue as a
//! silent success. A policy still attached to queues is refused, naming them, before
//! anything changes; `--detach` removes it from each queue (read-modify-write, other fields
//! kept) and then deletes it. The check is made here rather than left to the server because
//! upstream servers do not make it. Names are handled in order; the first failure stops.
//! `--dry-run` reads, reports what would happen, and writes nothing.

use crate::app::Context;
use crate::cli::{DeleteArgs, DeleteFlags, DeleteResource};
use crate::client::ModifyError;
use crate::commands::remote::{self, found, Remote};
use crate::error::{CliError, ExitCode};

pub fn run(ctx: &mut Context, args: &DeleteArgs) -> anyhow::Result<ExitCode> {
    match &args.resource {
        DeleteResource::Retrypolicy(f) => delete_policies(ctx, &f.delete, f.detach),
        DeleteResource::Queue(f) => delete_queues(ctx, f),
    }
}

fn delete_policies(ctx: &mut Context, flags: &DeleteFlags, detach: bool) -> anyhow::Result<ExitCode> {
    remote::check_names("retry policy", &flags.names)?;
    let dry = remote::dry_run(ctx, flags.write.dry_run)?;
    let conn = remote::connect(ctx)?;
    for name in &flags.names {
        let what = format!("cannot delete retry policy `{name}`");
        let exists = found(conn.client.get_policy(name)).map_err(|e| conn.fail(&what, e))?;
        if exists.is_none() {
            if flags.ignore_not_found {
                continue;
            }
            return Err(CliError::failed(format!("{what}: it does not exist"))
                .with_hint("pass `--ignore-not-found` to skip missing names")
                .into());
        }
        let queues = conn.client.list_queues().map_err(|e| conn.fail(&what, e))?;
        let users: Vec<_> = queues.into_iter().filter(|q| q.retry_policies.contains(name)).collect();
        if !users.is_empty() {
            let list = users
                .iter()
                .map(|q| format!("`{}`", q.name))
                .collect::<Vec<_>>()
                .join(", ");
            if !detach {
                let one = &users[0].name;
                return Err(CliError::failed(format!(
                    "{what}: it is attached to {} {list}; nothing was changed",
                    if users.len() == 1 { "queue" } else { "queues" }
                ))
                .with_hint(format!(
                    "detach it from every queue and delete it with `retryctl delete retrypolicy {name} --detach`, \
                     or detach it from one with `retryctl update queue {one} --remove-retry-policy {name}`"
                ))
                .into());
            }
            for q in users {
                if !dry {
                    // Read-modify-write with If-Match (SPEC §5.2): another writer's change to
                    // the queue in between is kept, not overwritten with the list read above.
                    let detach = |queue: &mut crate::model::Queue| {
                        queue.retry_policies.retain(|p| p != name);
                        Ok::<(), std::convert::Infallible>(())
                    };
                    match conn.client.modify_queue(&q.name, detach) {
                        Ok(_) => {}
                        Err(ModifyError::Edit(never)) => match never {},
                        Err(ModifyError::Client(e)) => {
                            return Err(conn
                                .fail(&format!("{what}: cannot detach it from queue `{}`", q.name), e)
                                .into())
                        }
                    }
                }
                writeln!(ctx.out, "queue/{} configured{}", q.name, remote::suffix(dry))?;
            }
        }
        if !dry {
            delete_one(&conn, &what, conn.client.delete_policy(name), flags.ignore_not_found)?;
        }
        writeln!(ctx.out, "retrypolicy/{name} deleted{}", remote::suffix(dry))?;
    }
    Ok(ExitCode::Success)
}

fn delete_queues(ctx: &mut Context, flags: &DeleteFlags) -> anyhow::Result<ExitCode> {
    remote::check_names("queue", &flags.names)?;
    let dry = remote::dry_run(ctx, flags.write.dry_run)?;
    let conn = remote::connect(ctx)?;
    for name in &flags.names {
        let what = format!("cannot delete queue `{name}`");
        let exists = found(conn.client.get_queue(name)).map_err(|e| conn.fail(&what, e))?;
        if exists.is_none() {
            if flags.ignore_not_found {
                continue;
            }
            return Err(CliError::failed(format!("{what}: it does not exist"))
                .with_hint("pass `--ignore-not-found` to skip missing names")
                .into());
        }
        if !dry {
            delete_one(&conn, &what, conn.client.delete_queue(name), flags.ignore_not_found)?;
        }
        writeln!(ctx.out, "queue/{name} deleted{}", remote::suffix(dry))?;
    }
    Ok(ExitCode::Success)
}

/// A 404 here means someone else deleted it between the look-up and the delete: the goal
/// is reached, but only `--ignore-not-found` says that is fine.
fn delete_one(conn: &Remote, what: &str, r: crate::client::Result<()>, ignore: bool) -> Result<(), CliError> {
    match r {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() && ignore => Ok(()),
        Err(e) => Err(conn.fail(what, e)),
    }
}
