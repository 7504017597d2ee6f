//! `retryctl apply -f PATH... [--prune]`: create what is missing, update what differs, and
//! report `created`, `configured` or `unchanged` per resource; with `--prune`, then delete
//! the retry policies on the server that no file names (`retrypolicy/NAME pruned`). With
//! `--dry-run` it still reads the server, to say which of these each resource would be, and
//! writes nothing.
//!
//! Decisions for `--prune` (docs/cli.md):
//! - Only retry policies are pruned, never queues (a cluster's queues usually belong to other
//!   teams); the ones pruned are those `diff` lists as "on the server, in no file".
//! - A policy a queue still uses is never pruned: the whole run is refused before anything is
//!   sent (exit 1, naming each policy and its queues), counting the queues as the run would
//!   leave them (a queue of the files replaces the server's). After the writes the queues
//!   are read again, and a queue that took one of the policies meanwhile refuses the pruning
//!   the same way (the writes stay, nothing is deleted). A writer that attaches one between
//!   that read and the delete is refused by `retryctl serve` itself (it deletes no policy a
//!   queue uses); today's Armada detaches instead, which no client can prevent.
//! - A policy someone else deleted meanwhile is not an error: it is gone, as asked.
//! - A file with `suggest -o policy`'s `# verdict: reject` among the comments heading any of
//!   its documents (`input::SourceFile::heads`: whatever blank lines, comments, `---` or
//!   other documents stand before it) is refused before anything is sent (exit 1, its
//!   reasons said), dry run or not; `--force` applies it, with a warning per file.
//! - Pruning needs every file: when `-f`'s directories hold a file that was not read (an
//!   ending it does not read, a subdirectory without `-R`), the run is refused before
//!   anything is sent, dry run or not.

use std::collections::HashMap;

use crate::app::Context;
use crate::cli::ApplyArgs;
use crate::commands::remote::batch;
use crate::commands::remote::{self, Item, Mode, Remote};
use crate::error::{CliError, ExitCode};
use crate::input::{SkipReason, Skipped};
use crate::model::document::{document_message, document_path, locate};
use crate::model::{ApiVersion, Kind, Resource};

pub fn run(ctx: &mut Context, args: &ApplyArgs) -> anyhow::Result<ExitCode> {
    let loaded = batch::load(ctx, &args.source, &[Kind::RetryPolicy, Kind::Queue])?;
    let mut warned: Option<&str> = None;
    for (file, head) in &loaded.heads {
        if let Some(reasons) = crate::input::rejected(head) {
            if warned == Some(file.as_str()) {
                continue;
            }
            warned = Some(file.as_str());
            let shown = crate::diag::shown(file);
            if !args.force {
                return Err(CliError::failed(format!(
                    "`{shown}` is a proposal suggest rejected: {}; --force to apply it",
                    crate::diag::shown(reasons)
                ))
                .into());
            }
            writeln!(
                ctx.err,
                "warning: `{shown}` is a proposal suggest rejected; applied as --force asks"
            )?;
        }
    }
    let batch = batch::connect(ctx, loaded, &args.write, Mode::Apply)?;
    if let Some(path) = &args.categorizer {
        refuse_unknown_categories(&batch.items, path)?;
    }
    if !args.prune {
        return batch::write_all(ctx, &batch, Mode::Apply);
    }
    refuse_unread(&batch.skipped)?;
    let Some(conn) = &batch.conn else {
        // Only a dry run gets this far without a server (`batch::probe` said so).
        writeln!(
            ctx.err,
            "note: --prune: the retry policies no file names were not listed (the server is unreachable)"
        )?;
        return batch::write_all(ctx, &batch, Mode::Apply);
    };
    let doomed = remote::unnamed_policies(conn, &batch.items, "cannot list the retry policies to prune")?;
    refuse_used(conn, &batch.items, &doomed, "nothing was sent")?;
    let code = batch::write_all(ctx, &batch, Mode::Apply)?;
    if !batch.dry && !doomed.is_empty() {
        // The files' queues are on the server now: what it holds is the whole truth.
        refuse_used(conn, &[], &doomed, "the files were applied, nothing was pruned")?;
    }
    for (i, name) in doomed.iter().enumerate() {
        if !batch.dry {
            match conn.client.delete_policy(name) {
                Ok(()) => {}
                Err(e) if e.is_not_found() => continue,
                Err(e) => {
                    let err = conn.fail(&format!("cannot prune retry policy `{name}`"), e);
                    return Err(remote::not_done(err, doomed.len() - i - 1, ("policy", "policies"), "pruned").into());
                }
            }
        }
        writeln!(
            ctx.out,
            "retrypolicy/{name} pruned{}",
            crate::commands::remote::suffix(batch.dry)
        )?;
    }
    Ok(code)
}

/// Refuses (exit 1) to prune when `-f`'s directories hold files that were not read: a policy
/// in one of them (`beta.YAML`, `sub/gamma.yaml` without `-R`) would be deleted from the
/// server as named by no file. Each was said on stderr; the first few are named again here.
fn refuse_unread(skipped: &[Skipped]) -> Result<(), CliError> {
    const NAMED: usize = 3;
    if skipped.is_empty() {
        return Ok(());
    }
    let mut names: Vec<String> = skipped
        .iter()
        .take(NAMED)
        .map(|s| format!("`{}`", crate::diag::shown(&s.path.display().to_string())))
        .collect();
    if skipped.len() > NAMED {
        names.push(format!("{} more", skipped.len() - NAMED));
    }
    let count = if skipped.len() == 1 {
        "a file of `-f`'s directories was".to_string()
    } else {
        format!("{} files of `-f`'s directories were", skipped.len())
    };
    let mut steps = Vec::new();
    if let Some(s) = skipped.iter().find(|s| s.why == SkipReason::Extension) {
        steps.push(format!(
            "give `{}` a `-f` of its own (a file named is read whatever its name ends in), or rename it to end in `.yaml`",
            crate::diag::shown(&s.path.display().to_string())
        ));
    }
    if skipped.iter().any(|s| s.why == SkipReason::Subdirectory) {
        steps.push("add `-R` to read the subdirectories".to_string());
    }
    Err(CliError::failed(format!(
        "--prune cannot tell which retry policies no file names: {count} not read ({}); nothing was sent",
        names.join(", ")
    ))
    .with_hint(steps.join("; ")))
}

/// Refuses (exit 1) when a queue uses one of `doomed`: the server's queues, each replaced by
/// the queue of `items` of the same name, plus the new queues of `items`. `outcome` says
/// what the refusal leaves done.
fn refuse_used(conn: &Remote, items: &[Item], doomed: &[String], outcome: &str) -> Result<(), CliError> {
    if doomed.is_empty() {
        return Ok(());
    }
    let server = conn
        .client
        .list_queues()
        .map_err(|e| conn.fail("cannot list the queues that use the retry policies to prune", e))?;
    let mut queues: Vec<(String, Vec<String>)> = server.into_iter().map(|q| (q.name, q.retry_policies)).collect();
    for item in items {
        if let Resource::Queue(q) = &item.resource {
            match queues.iter_mut().find(|(n, _)| *n == q.name) {
                Some(entry) => entry.1 = q.retry_policies.clone(),
                None => queues.push((q.name.clone(), q.retry_policies.clone())),
            }
        }
    }
    let mut users: HashMap<&str, Vec<&str>> = HashMap::new();
    for (queue, policies) in &queues {
        for p in policies.iter().filter(|p| doomed.contains(p)) {
            users.entry(p.as_str()).or_default().push(queue.as_str());
        }
    }
    let used: Vec<(&str, Vec<&str>)> = doomed
        .iter()
        .filter_map(|p| {
            users.remove(p.as_str()).map(|mut q| {
                q.sort_unstable();
                (p.as_str(), q)
            })
        })
        .collect();
    let Some((first, first_queues)) = used.first() else {
        return Ok(());
    };
    let queues_of = |q: &[&str]| {
        format!(
            "{} {}",
            if q.len() == 1 { "queue" } else { "queues" },
            q.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        )
    };
    let message = if used.len() == 1 {
        format!(
            "--prune cannot delete retry policy `{first}`, which no file names: {} still {} it; {outcome}",
            queues_of(first_queues),
            if first_queues.len() == 1 { "uses" } else { "use" }
        )
    } else {
        let list: Vec<String> = used.iter().map(|(p, q)| format!("`{p}` ({})", queues_of(q))).collect();
        format!(
            "--prune cannot delete retry policies that no file names and queues still use: {}; {outcome}",
            list.join(", ")
        )
    };
    Err(CliError::failed(message).with_hint(format!(
        "add the policy's file to `-f`, or detach it first: in the queue's file (`retryPolicies`) or with \
         `retryctl update queue {} --remove-retry-policy {first}`",
        first_queues[0]
    )))
}

/// `--categorizer FILE`: a policy whose rules name a category FILE never assigns matches
/// nothing until the executor runs a config that does (docs/categorizer.md "The two halves, in
/// order"): refused, nothing sent, each such rule named.
fn refuse_unknown_categories(items: &[Item], path: &std::path::Path) -> Result<(), CliError> {
    let file = crate::input::categorizer_file(path);
    let config = file.documents.iter().find_map(|d| match (&d.resource, d.is_valid()) {
        (Some(Resource::ErrorCategories(c)), true) => Some(c),
        _ => None,
    });
    let Some(config) = config else {
        // A file that cannot be read (missing, a directory) is said as that, not as a file
        // without a config.
        if let (true, Some(e)) = (file.documents.is_empty(), file.errors.first()) {
            return Err(CliError::invalid(format!(
                "`--categorizer` `{}`: {}; nothing was sent",
                path.display(),
                e.message
            )));
        }
        return Err(CliError::invalid(format!(
            "`{}` holds no valid executor categorizer config (`errorCategories`); nothing was sent",
            path.display()
        ))
        .with_hint(format!("check it with `retryctl validate -f {}`", path.display())));
    };
    let mut unknown = Vec::new();
    for item in items {
        let Resource::RetryPolicy(p) = &item.resource else {
            continue;
        };
        // Named as the file writes it (`62:17 rules[0].onCategory` in a v1beta1 document), as
        // `validate --upstream --categorizer` names it.
        let version = item.version.unwrap_or(ApiVersion::V1);
        for d in crate::model::lint::lint_with_categorizer(p, config, &file.name) {
            if d.code == "category-never-assigned" {
                let path = document_path(&d.path, Kind::RetryPolicy, version);
                let message = document_message(&d.message, Kind::RetryPolicy, version);
                let at = d
                    .pos
                    .or_else(|| item.node.as_ref().and_then(|n| locate(n, &path)))
                    .map_or(String::new(), |pos| format!("{}:{} ", pos.line, pos.column));
                unknown.push(format!("  {}: policy `{}`: {at}{path}: {message}", item.file, p.name));
            }
        }
    }
    if unknown.is_empty() {
        return Ok(());
    }
    Err(CliError::failed(format!(
        "the policies name categories `{}` does not assign; nothing was sent:\n{}",
        file.name,
        unknown.join("\n")
    ))
    .with_hint("roll out the executor config first, wait for the executor to run it, then apply the policy"))
}
