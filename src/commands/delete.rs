//! `retryctl delete retrypolicy NAME... [--detach] [--ignore-not-found]`,
//! `delete queue NAME...`, `delete TYPE/NAME...` and `delete -f PATH...`.
//!
//! With `TYPE/NAME` arguments and files, queues are deleted before policies, so a policy
//! named together with the queues that attach it can go in one run.
//!
//! Each name is looked up first, so that a missing one is reported (or skipped with
//! `--ignore-not-found`) the same on every server: upstream deletes a missing queue as a
//! silent success. A policy still attached to queues is refused, naming them, before
//! anything changes; `--detach` removes it from each queue (read-modify-write, other fields
//! kept) and then deletes it. The check is made here rather than left to the server because
//! upstream servers do not make it. Names are handled in order; as in kubectl, a name that
//! cannot be deleted (missing, still attached) is reported and the others still go (exit 1
//! at the end), while an error that would hit every name (unreachable, auth) stops the run.
//! `--dry-run` reads, reports what would happen, and writes nothing.

use crate::app::Context;
use crate::cli::{DeleteArgs, DeleteResource};
use crate::client::ModifyError;
use crate::commands::remote::batch;
use crate::commands::remote::target::Targets;
use crate::commands::remote::{self, found, Remote};
use crate::error::{CliError, ExitCode};
use crate::model::{Kind, Resource};

/// What to delete, in order, and how.
struct Plan {
    targets: Vec<(Kind, String)>,
    ignore_not_found: bool,
    detach: bool,
    dry_run: crate::cli::DryRun,
}

pub fn run(ctx: &mut Context, args: &DeleteArgs) -> anyhow::Result<ExitCode> {
    let plan = match &args.resource {
        Some(DeleteResource::Retrypolicy(f)) => Plan {
            targets: flatten(Targets::from_names(Kind::RetryPolicy, &f.delete.names)?),
            ignore_not_found: f.delete.ignore_not_found,
            detach: f.detach,
            dry_run: f.delete.write.dry_run,
        },
        Some(DeleteResource::Queue(f)) => Plan {
            targets: flatten(Targets::from_names(Kind::Queue, &f.names)?),
            ignore_not_found: f.ignore_not_found,
            detach: false,
            dry_run: f.write.dry_run,
        },
        None => {
            let mut targets = flatten(Targets::from_typed(&args.targets)?);
            if !args.source.files.is_empty() {
                let mut items = remote::load(ctx, &args.source, &[Kind::RetryPolicy, Kind::Queue])?;
                batch::order(&mut items, true);
                targets.extend(items.iter().filter_map(|i| match &i.resource {
                    Resource::RetryPolicy(p) => Some((Kind::RetryPolicy, p.name.clone())),
                    Resource::Queue(q) => Some((Kind::Queue, q.name.clone())),
                    _ => None,
                }));
            }
            // Queues first, so that a policy named with the queues using it can go too.
            targets.sort_by_key(|(k, _)| *k != Kind::Queue);
            let mut seen = std::collections::HashSet::new();
            targets.retain(|t| seen.insert(t.clone()));
            Plan {
                targets,
                ignore_not_found: args.ignore_not_found,
                detach: args.detach,
                dry_run: args.write.dry_run,
            }
        }
    };
    delete(ctx, &plan)
}

fn flatten(t: Targets) -> Vec<(Kind, String)> {
    t.groups
        .into_iter()
        .flat_map(|(k, names)| names.into_iter().map(move |n| (k, n)))
        .collect()
}

fn delete(ctx: &mut Context, plan: &Plan) -> anyhow::Result<ExitCode> {
    let dry = remote::dry_run(ctx, plan.dry_run)?;
    let conn = remote::connect(ctx)?;
    // Queues deleted by this run no longer hold on to the policies deleted after them.
    let queues_going: Vec<&str> = plan
        .targets
        .iter()
        .filter(|(k, _)| *k == Kind::Queue)
        .map(|(_, n)| n.as_str())
        .collect();
    // Like kubectl, a resource that cannot be deleted (missing, still attached) does not
    // stop the others: its error is printed and the run ends with exit 1. Anything else
    // (unreachable, auth, a broken answer) would fail every later one the same way: stop.
    let mut code = ExitCode::Success;
    // Each hint once, after the first error that needs it: seven missing names need one
    // `--ignore-not-found`, and a different refusal keeps its own hint next to it.
    let mut hinted = std::collections::HashSet::new();
    for (kind, name) in &plan.targets {
        let done = match kind {
            Kind::Queue => delete_queue(ctx, &conn, name, plan, dry),
            _ => delete_policy(ctx, &conn, name, plan, dry, &queues_going),
        };
        match done {
            Ok(()) => {}
            // Only a refusal this command made (a `CliError` of exit 1) goes on; an I/O
            // error (a closed stdout) stops like any other.
            Err(mut e)
                if e.chain()
                    .find_map(|c| c.downcast_ref::<CliError>())
                    .is_some_and(|c| c.code == ExitCode::Failure) =>
            {
                if let Some(c) = e.downcast_mut::<CliError>() {
                    c.hint = c.hint.take().filter(|h| hinted.insert(h.clone()));
                }
                code = crate::error::report(&e, ctx.err);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(code)
}

fn delete_policy(
    ctx: &mut Context,
    conn: &Remote,
    name: &str,
    plan: &Plan,
    dry: bool,
    queues_going: &[&str],
) -> anyhow::Result<()> {
    let what = format!("cannot delete retry policy `{name}`");
    let exists = found(conn.client.get_policy(name)).map_err(|e| conn.fail(&what, e))?;
    if exists.is_none() {
        if plan.ignore_not_found {
            return Ok(());
        }
        return Err(CliError::failed(format!("{what}: it does not exist"))
            .with_hint("pass `--ignore-not-found` to skip missing names")
            .into());
    }
    let queues = conn.client.list_queues().map_err(|e| conn.fail(&what, e))?;
    let users: Vec<_> = queues
        .into_iter()
        .filter(|q| q.retry_policies.iter().any(|p| p == name) && !queues_going.contains(&q.name.as_str()))
        .collect();
    if !users.is_empty() {
        let list = users
            .iter()
            .map(|q| format!("`{}`", q.name))
            .collect::<Vec<_>>()
            .join(", ");
        if !plan.detach {
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
                // Read-modify-write with If-Match (docs/cli.md): another writer's change to the
                // queue in between is kept, not overwritten with the list read above.
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
        delete_one(conn, &what, conn.client.delete_policy(name), plan.ignore_not_found)?;
    }
    writeln!(ctx.out, "retrypolicy/{name} deleted{}", remote::suffix(dry))?;
    Ok(())
}

fn delete_queue(ctx: &mut Context, conn: &Remote, name: &str, plan: &Plan, dry: bool) -> anyhow::Result<()> {
    let what = format!("cannot delete queue `{name}`");
    let exists = found(conn.client.get_queue(name)).map_err(|e| conn.fail(&what, e))?;
    if exists.is_none() {
        if plan.ignore_not_found {
            return Ok(());
        }
        return Err(CliError::failed(format!("{what}: it does not exist"))
            .with_hint("pass `--ignore-not-found` to skip missing names")
            .into());
    }
    if !dry {
        delete_one(conn, &what, conn.client.delete_queue(name), plan.ignore_not_found)?;
    }
    writeln!(ctx.out, "queue/{name} deleted{}", remote::suffix(dry))?;
    Ok(())
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
