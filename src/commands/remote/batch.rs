//! A batch of documents from `-f`: the order they are sent in, and the checks that make a
//! dry run mean what it says.
//!
//! Owns: ordering (policies before the queues that attach them; the reverse for delete),
//! the reference check (every policy a queue attaches exists in the batch or on the server),
//! the check that the connection can carry every policy (gRPC, upstream Armada), and the
//! write loop shared by `create`, `update` and `apply -f`. Must not: talk to the
//! server except through `remote` (one client call per resource stays in `remote::write`).
//!
//! Decisions: documents keep their file order within a kind (a stable sort), so the output
//! lists them as the user wrote them. A dry run contacts the server when it can, so that a
//! dry run that passes means the real run passes (names that already exist, names that are
//! missing, policies a queue attaches, fields an upstream server cannot store); when the
//! server is unreachable it says so on stderr and checks the batch alone (the real run
//! could not succeed then anyway).

use std::collections::HashSet;

use crate::app::Context;
use crate::cli::{FileSource, WriteArgs};
use crate::client::conflict::refuse_incompatible;
use crate::client::ClientError;
use crate::commands::remote::{self, found, Item, Mode, Remote};
use crate::error::{CliError, ExitCode};
use crate::model::{Kind, Resource};

/// Sorts `items` for writing (policies first) or, with `delete`, for deleting (queues
/// first). Stable: the order of the files and of the documents in them is kept per kind.
pub fn order(items: &mut [Item], delete: bool) {
    let rank = |i: &Item| {
        let r = match i.resource.kind() {
            Kind::RetryPolicy => 0,
            Kind::Queue => 1,
            _ => 2,
        };
        if delete {
            2 - r
        } else {
            r
        }
    };
    items.sort_by_key(rank);
}

/// For a dry run: a client when the server answers, `None` (with a note) when it does not.
/// Errors other than an unreachable server (auth, a bad URL) are reported: the real run would
/// hit them too.
pub fn probe(ctx: &mut Context) -> anyhow::Result<Option<Remote>> {
    let conn = remote::connect(ctx)?;
    match conn.client.is_v1() {
        Ok(_) => Ok(Some(conn)),
        Err(e) if e.is_unreachable() => {
            writeln!(
                ctx.err,
                "note: the server at `{}` is unreachable: checked the files alone; names and \
                 attached policies were not checked against the server",
                crate::redact::redact_url(conn.client.base_url())
            )?;
            Ok(None)
        }
        Err(e) => Err(conn.fail("cannot check the batch against the server", e).into()),
    }
}

/// Without a server: the policies queues attach that are not in the batch, one line each,
/// for a note on stderr (they could not be checked).
pub fn unchecked_references(items: &[Item]) -> Vec<String> {
    let in_batch: HashSet<&str> = remote::policy_names(items).collect();
    items
        .iter()
        .filter_map(|i| match &i.resource {
            Resource::Queue(q) => {
                let outside: Vec<String> = q
                    .retry_policies
                    .iter()
                    .filter(|p| !in_batch.contains(p.as_str()))
                    .map(|p| format!("`{p}`"))
                    .collect();
                (!outside.is_empty()).then(|| {
                    format!(
                        "note: queue `{}` attaches {}, not in the input; it must exist on the server",
                        q.name,
                        outside.join(", ")
                    )
                })
            }
            _ => None,
        })
        .collect()
}

/// Every policy a queue of the batch attaches must be a policy of the batch or exist on the
/// server. Checked before anything is sent, so a batch never half-applies for this reason.
/// Without a server, names outside the batch are not checked (see `unchecked_references`).
pub fn check_references(items: &[Item], conn: Option<&Remote>) -> Result<(), CliError> {
    let in_batch: HashSet<&str> = remote::policy_names(items).collect();
    let Some(conn) = conn else { return Ok(()) };
    let mut on_server: Vec<String> = Vec::new();
    let mut problems = Vec::new();
    for item in items {
        let Resource::Queue(q) = &item.resource else { continue };
        let mut missing = Vec::new();
        for p in &q.retry_policies {
            if in_batch.contains(p.as_str()) || on_server.contains(p) {
                continue;
            }
            let what = format!("cannot check retry policy `{p}` of queue `{}`", q.name);
            match found(conn.client.get_policy(p)).map_err(|e| conn.fail(&what, e))? {
                Some(_) => on_server.push(p.clone()),
                None => missing.push(format!("`{p}`")),
            }
        }
        if !missing.is_empty() {
            problems.push(format!(
                "{}: queue `{}` attaches retry {} {} that {} neither in the input nor on the server",
                item.file,
                q.name,
                if missing.len() == 1 { "policy" } else { "policies" },
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" },
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(CliError::invalid(format!("nothing was sent: {}", problems.join("; ")))
        .with_hint("add the policy files to the command (`-f`), or create the policies first"))
}

/// Every policy of the batch must be one this connection can carry (docs/cli.md: a
/// design-dialect field has no protobuf form over gRPC, and upstream Armada over REST stores
/// none either). Checked for every document before anything is sent, and every one refused
/// is listed, as `validate` lists every error: a batch never half-applies for this reason.
pub fn check_sendable(items: &[Item], conn: &Remote, mode: Mode) -> Result<(), CliError> {
    let action = match mode {
        Mode::Create => "create",
        Mode::Update => "update",
        Mode::Apply => "apply",
    };
    let mut refused = Vec::new();
    for item in items {
        let Resource::RetryPolicy(p) = &item.resource else {
            continue;
        };
        let what = format!("{}: cannot {action} retry policy `{}`", item.file, p.name);
        match refuse_incompatible(conn.client.as_ref(), p) {
            Ok(()) => {}
            Err(e @ ClientError::Incompatible { .. }) => refused.push(conn.fail(&what, e)),
            // Not knowing what the server stores (it did not answer): the writes say so, as
            // they always did.
            Err(_) => return Ok(()),
        }
    }
    let Some(first) = refused.first() else { return Ok(()) };
    if items.len() == 1 {
        return Err(first.clone());
    }
    let lines: Vec<String> = refused.iter().map(|e| format!("  {}", e.message)).collect();
    let mut err = CliError::new(
        first.code,
        format!(
            "nothing was sent: {} of the {} documents cannot be sent to `{}`:\n{}",
            refused.len(),
            items.len(),
            crate::redact::redact_url(conn.client.base_url()),
            lines.join("\n")
        ),
    );
    err.hint = first.hint.clone();
    Err(err)
}

/// A loaded, ordered and checked batch, ready to write.
pub struct Batch {
    pub items: Vec<Item>,
    /// The files of `-f`'s directories that were not read (said on stderr).
    pub skipped: Vec<crate::input::Skipped>,
    /// `--dry-run`: nothing is written.
    pub dry: bool,
    /// `None` only for a dry run whose server did not answer.
    pub conn: Option<Remote>,
}

/// Loads, orders, checks, then writes every document (`create`, `update`, `apply -f`).
pub fn write_files(
    ctx: &mut Context,
    source: &FileSource,
    write: &WriteArgs,
    kinds: &[Kind],
    mode: Mode,
) -> anyhow::Result<ExitCode> {
    let batch = prepare(ctx, source, write, kinds, mode)?;
    write_all(ctx, &batch, mode)
}

/// Loads and orders the documents, connects (a dry run: when the server answers), and makes
/// every check that must pass before anything is sent.
pub fn prepare(
    ctx: &mut Context,
    source: &FileSource,
    write: &WriteArgs,
    kinds: &[Kind],
    mode: Mode,
) -> anyhow::Result<Batch> {
    let loaded = load(ctx, source, kinds)?;
    connect(ctx, loaded, write, mode)
}

/// Loads the documents and orders them for writing: what a verb checks before it connects
/// (`apply` refuses a rejected proposal here, having sent nothing).
pub fn load(ctx: &mut Context, source: &FileSource, kinds: &[Kind]) -> anyhow::Result<remote::Loaded> {
    let mut loaded = remote::load_seen(ctx, source, kinds)?;
    order(&mut loaded.items, false);
    Ok(loaded)
}

/// Connects (a dry run: when the server answers) and makes every check that must pass before
/// anything of `loaded` is sent.
pub fn connect(ctx: &mut Context, loaded: remote::Loaded, write: &WriteArgs, mode: Mode) -> anyhow::Result<Batch> {
    let remote::Loaded { items, skipped, .. } = loaded;
    let dry = remote::dry_run(ctx, write.dry_run)?;
    let conn = if dry { probe(ctx)? } else { Some(remote::connect(ctx)?) };
    if let Some(conn) = &conn {
        check_sendable(&items, conn, mode)?;
    }
    check_references(&items, conn.as_ref())?;
    if conn.is_none() {
        for note in unchecked_references(&items) {
            writeln!(ctx.err, "{note}")?;
        }
    }
    Ok(Batch {
        items,
        skipped,
        dry,
        conn,
    })
}

/// Writes every document of a prepared batch in order; the first failure stops the run.
pub fn write_all(ctx: &mut Context, batch: &Batch, mode: Mode) -> anyhow::Result<ExitCode> {
    let Batch { items, dry, conn, .. } = batch;
    let dry = *dry;
    for (i, item) in items.iter().enumerate() {
        match remote::write(conn.as_ref(), &item.resource, mode, dry) {
            Ok(result) => writeln!(ctx.out, "{} {result}{}", item.label(), remote::suffix(dry))?,
            Err(e) => {
                let e = CliError {
                    message: format!("{}: {}", item.file, e.message),
                    ..e
                };
                return Err(remote::not_sent(e, items.len() - i - 1).into());
            }
        }
    }
    Ok(ExitCode::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Queue, RetryPolicy};

    fn item(file: &str, r: Resource) -> Item {
        Item {
            file: file.into(),
            resource: r,
            version: None,
            node: None,
        }
    }

    fn labels(items: &[Item]) -> Vec<String> {
        items.iter().map(Item::label).collect()
    }

    #[test]
    fn policies_go_before_queues_and_file_order_is_kept() {
        let q = |n: &str| {
            Resource::Queue(Queue {
                name: n.into(),
                ..Queue::default()
            })
        };
        let p = |n: &str| {
            Resource::RetryPolicy(RetryPolicy {
                name: n.into(),
                ..RetryPolicy::default()
            })
        };
        let mut items = vec![
            item("a", q("ml-queue")),
            item("b", p("zeta")),
            item("c", q("other")),
            item("d", p("alpha")),
        ];
        order(&mut items, false);
        assert_eq!(
            labels(&items),
            ["retrypolicy/zeta", "retrypolicy/alpha", "queue/ml-queue", "queue/other"]
        );
        order(&mut items, true);
        assert_eq!(
            labels(&items),
            ["queue/ml-queue", "queue/other", "retrypolicy/zeta", "retrypolicy/alpha"]
        );
    }
}
