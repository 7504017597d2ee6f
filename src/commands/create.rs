//! `retryctl create -f PATH...`, `create retrypolicy -f`, `create queue NAME [flags]`.
//!
//! Every document is validated before anything is sent; then each is created, policies
//! before queues (see `batch`), and the first failure stops the run. Creating an existing name fails (exit 1) and
//! suggests `apply`.

use crate::app::Context;
use crate::cli::{CreateArgs, CreateResource, FileArgs, QueueFlags, WriteArgs};
use crate::commands::remote::batch::{self, write_files};
use crate::commands::remote::queue::apply_flags;
use crate::commands::remote::{self, Mode};
use crate::error::{CliError, ExitCode};
use crate::model::validate::validate_queue;
use crate::model::{Kind, Queue, Resource};

pub fn run(ctx: &mut Context, args: &CreateArgs) -> anyhow::Result<ExitCode> {
    match &args.resource {
        Some(CreateResource::Queue(flags)) => create_queue(ctx, flags),
        Some(CreateResource::Retrypolicy(FileArgs { source, write })) => {
            write_files(ctx, source, write, &[Kind::RetryPolicy], Mode::Create)
        }
        None => write_files(
            ctx,
            &args.source,
            &args.write,
            &[Kind::RetryPolicy, Kind::Queue],
            Mode::Create,
        ),
    }
}

fn create_queue(ctx: &mut Context, flags: &QueueFlags) -> anyhow::Result<ExitCode> {
    remote::check_names("queue", std::slice::from_ref(&flags.name))?;
    let mut queue = Queue {
        name: flags.name.clone(),
        ..Queue::default()
    };
    apply_flags(&mut queue, flags)?;
    write_queue(ctx, queue, &flags.write, Mode::Create)
}

/// Validates and writes a queue built from flags.
pub fn write_queue(ctx: &mut Context, queue: Queue, write: &WriteArgs, mode: Mode) -> anyhow::Result<ExitCode> {
    let problems: Vec<String> = validate_queue(&queue)
        .into_iter()
        .filter(|d| d.is_error())
        .map(|d| format!("  {}: {}", flag_of(&d.path), d.message))
        .collect();
    if !problems.is_empty() {
        return Err(CliError::invalid(format!(
            "invalid queue `{}`, nothing was sent:\n{}",
            queue.name,
            problems.join("\n")
        ))
        .into());
    }
    let dry = remote::dry_run(ctx, write.dry_run)?;
    let resource = Resource::Queue(queue);
    let conn = if dry {
        // As for files: a dry run checks against the server when it answers, so that it
        // refuses the policies the real run would find missing.
        let conn = batch::probe(ctx)?;
        let item = remote::Item {
            file: "the command line".into(),
            resource: resource.clone(),
            version: None,
            node: None,
        };
        batch::check_references(std::slice::from_ref(&item), conn.as_ref())?;
        conn
    } else {
        Some(remote::connect(ctx)?)
    };
    let result = remote::write(conn.as_ref(), &resource, mode, dry)?;
    writeln!(ctx.out, "{} {result}{}", remote::label(&resource), remote::suffix(dry))?;
    Ok(ExitCode::Success)
}

/// The flag a queue field path came from, so errors speak the user's words.
fn flag_of(path: &str) -> String {
    let field = path.split(['[', '.']).next().unwrap_or(path);
    let flag = match field {
        "name" => "NAME",
        "priorityFactor" => "--priority-factor",
        "userOwners" => "--owner",
        "groupOwners" => "--group-owner",
        "labels" => "--label",
        "retryPolicies" => "--retry-policy",
        _ => return path.to_string(),
    };
    flag.to_string()
}
