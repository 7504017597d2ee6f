//! `retryctl describe retrypolicy|queue NAME...`, `describe TYPE/NAME...`, and offline with
//! `-f PATH` (the files stand in for the server: names are looked up among their documents,
//! and without names every policy and queue in them is described).
//!
//! Load → `output::describe`. A v1beta1 policy (its file's `apiVersion`, or any policy of a
//! server that stores only that dialect) is explained in today's Armada's terms
//! (`describe::write_policy_upstream`). The scheduler settings (global cap, default backoff) come from
//! `--scheduler-config` when given, else retryctl's defaults (docs/simulate.md), and the text says which.

use crate::app::Context;
use crate::cli::{DescribeArgs, DescribeResource};
use crate::commands::remote::target::{noun_of, Targets};
use crate::commands::remote::{self, found, Remote};
use crate::engine::Settings;
use crate::error::{CliError, ExitCode};
use crate::model::{ApiVersion, Kind, Queue, Resource, RetryPolicy};
use crate::output::describe::{self, Scheduler};

/// The resources to describe: the documents of `-f` files, or a server to ask.
enum Resources {
    Files {
        /// Each with whether it was written as `armadaproject.io/v1beta1`.
        policies: Vec<(RetryPolicy, bool)>,
        queues: Vec<Queue>,
    },
    Server(Box<Remote>),
}

pub fn run(ctx: &mut Context, args: &DescribeArgs) -> anyhow::Result<ExitCode> {
    let targets = match &args.resource {
        Some(DescribeResource::Retrypolicy(f)) => Targets::from_names(Kind::RetryPolicy, &f.names)?,
        Some(DescribeResource::Queue(f)) => Targets::from_names(Kind::Queue, &f.names)?,
        None => Targets::from_typed(&args.targets)?,
    };
    let settings = match &args.scheduler_config {
        None => Settings::default(),
        Some(path) => Settings::from_config(&crate::input::read_scheduler_config(path)?),
    };
    let source = args.scheduler_config.as_ref().map(|p| p.display().to_string());
    let scheduler = Scheduler {
        settings: &settings,
        source: source.as_deref(),
    };
    let files = match &args.resource {
        Some(DescribeResource::Retrypolicy(f) | DescribeResource::Queue(f)) if !f.source.files.is_empty() => &f.source,
        _ => &args.source,
    };
    let resources = if files.files.is_empty() {
        Resources::Server(Box::new(remote::connect(ctx)?))
    } else {
        let items = remote::load(ctx, files, &[Kind::RetryPolicy, Kind::Queue])?;
        let (mut policies, mut queues) = (Vec::new(), Vec::new());
        for i in items {
            match i.resource {
                Resource::RetryPolicy(p) => policies.push((p, i.version == Some(ApiVersion::V1beta1))),
                Resource::Queue(q) => queues.push(q),
                _ => {}
            }
        }
        Resources::Files { policies, queues }
    };
    // Offline without names: everything in the files.
    let wanted: Vec<(Kind, String)> = match (&resources, targets.is_empty()) {
        (Resources::Files { policies, queues }, true) => policies
            .iter()
            .map(|(p, _)| (Kind::RetryPolicy, p.name.clone()))
            .chain(queues.iter().map(|q| (Kind::Queue, q.name.clone())))
            .collect(),
        (Resources::Server(_), true) => {
            return Err(CliError::usage("describe what? name a resource: `retryctl describe retrypolicy NAME`").into())
        }
        _ => targets
            .groups
            .iter()
            .flat_map(|(k, names)| names.iter().map(move |n| (*k, n.clone())))
            .collect(),
    };
    let mut missing = Vec::new();
    let mut first = true;
    for (kind, name) in wanted {
        let Some(text) = describe_one(&resources, kind, &name, &scheduler)? else {
            missing.push(format!("{} `{name}`", noun_of(kind)));
            continue;
        };
        if !first {
            writeln!(ctx.out)?;
        }
        first = false;
        ctx.out.write_all(&text)?;
    }
    if missing.is_empty() {
        Ok(ExitCode::Success)
    } else {
        Err(CliError::failed(format!("{} not found", missing.join(", "))).into())
    }
}

fn describe_one(resources: &Resources, kind: Kind, name: &str, s: &Scheduler) -> anyhow::Result<Option<Vec<u8>>> {
    let mut out = Vec::new();
    match kind {
        Kind::Queue => {
            let Some(queue) = queue(resources, name)? else {
                return Ok(None);
            };
            let mut policies = Vec::new();
            let mut upstream = true;
            for p in &queue.retry_policies {
                let found = policy(resources, p)?;
                upstream &= found.as_ref().is_none_or(|(_, u)| *u);
                policies.push((p.clone(), found.map(|(p, _)| p)));
            }
            // Today's Armada's terms when the queue's policies are its dialect's (as a
            // policy's are explained): the first alone decides.
            if upstream && policies.iter().any(|(_, p)| p.is_some()) {
                describe::write_queue_upstream(&mut out, &queue, &policies, s)?;
            } else {
                describe::write_queue(&mut out, &queue, &policies, s)?;
            }
        }
        _ => {
            let Some((p, upstream)) = policy(resources, name)? else {
                return Ok(None);
            };
            let used_by: Vec<(String, usize, usize)> = queues(resources)?
                .into_iter()
                .filter_map(|q| {
                    let pos = q.retry_policies.iter().position(|x| x == name)?;
                    Some((q.name.clone(), pos + 1, q.retry_policies.len()))
                })
                .collect();
            if upstream {
                describe::write_policy_upstream(&mut out, &p, &used_by, s)?;
            } else {
                describe::write_policy(&mut out, &p, &used_by, s)?;
            }
        }
    }
    Ok(Some(out))
}

/// The policy `name`, and whether to explain it in today's Armada's terms: a v1beta1
/// document, or a policy of a server that stores only that dialect (docs/cli.md).
fn policy(resources: &Resources, name: &str) -> Result<Option<(RetryPolicy, bool)>, CliError> {
    match resources {
        Resources::Files { policies, .. } => Ok(policies.iter().find(|(p, _)| p.name == name).cloned()),
        Resources::Server(c) => {
            let what = format!("cannot get retry policy `{name}`");
            let Some(p) = found(c.client.get_policy(name)).map_err(|e| c.fail(&what, e))? else {
                return Ok(None);
            };
            let upstream = !c.client.is_v1().map_err(|e| c.fail(&what, e))?;
            Ok(Some((p, upstream)))
        }
    }
}

fn queue(resources: &Resources, name: &str) -> Result<Option<Queue>, CliError> {
    match resources {
        Resources::Files { queues, .. } => Ok(queues.iter().find(|q| q.name == name).cloned()),
        Resources::Server(c) => {
            found(c.client.get_queue(name)).map_err(|e| c.fail(&format!("cannot get queue `{name}`"), e))
        }
    }
}

fn queues(resources: &Resources) -> Result<Vec<Queue>, CliError> {
    match resources {
        Resources::Files { queues, .. } => Ok(queues.clone()),
        Resources::Server(c) => c.client.list_queues().map_err(|e| c.fail("cannot list queues", e)),
    }
}
