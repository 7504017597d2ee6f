//! The policy set a side decides with (`simulate`, `simulate --baseline`, `tune`, `suggest`):
//! policies and queues from a side's files, from the server, or from the cluster's database
//! (`--baseline-from-cluster`), and the engine they are evaluated by. Owns: refusing
//! duplicates and, for the upstream engine, fields upstream cannot store. Must not: replay or
//! render anything.

use crate::app::Context;
use crate::commands::remote;
use crate::engine::simulator::Simulator;
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::input::SourceFile;
use crate::lookout::cluster::ClusterState;
use crate::model::{ApiVersion, Resource};
use crate::output::report;
use crate::output::view::bad_row_line;

/// Policies and queues from the server (`--from-server`): every policy and queue, so that
/// each job gets its own queue's policies, as the scheduler would see them now.
pub fn load_from_server(
    ctx: &mut Context,
    retry_policies: Option<&[String]>,
    engine: Option<EngineKind>,
) -> anyhow::Result<Simulator> {
    let remote = remote::connect(ctx)?;
    let policies = remote
        .client
        .list_policies()
        .map_err(|e| remote.fail("cannot list retry policies", e))?;
    let queues = remote
        .client
        .list_queues()
        .map_err(|e| remote.fail("cannot list queues", e))?;
    // A server without the dialect header is upstream Armada: its scheduler is the upstream
    // engine (docs/engines.md), unless --engine says otherwise. (`retryctl serve` over gRPC marks
    // its answers too, though a design-dialect policy cannot travel there.)
    let engine = match engine {
        Some(e) => e,
        None if remote
            .client
            .dialect_name()
            .map_err(|e| remote.fail("cannot read the server's dialect", e))?
            == "v1" =>
        {
            EngineKind::Design
        }
        None => {
            writeln!(
                ctx.err,
                "note: the server is upstream Armada (no dialect header): deciding with the upstream engine, as its scheduler does today (--engine design to override)"
            )?;
            EngineKind::Upstream
        }
    };
    if engine == EngineKind::Upstream {
        // The same refusal as for files: a design-dialect server's policies may use fields
        // the upstream engine would silently not read.
        let unreadable: Vec<String> = policies
            .iter()
            .flat_map(|p| {
                p.upstream_incompatibilities()
                    .into_iter()
                    .map(move |field| format!("  server: policy `{}`: {field}", p.name))
            })
            .collect();
        refuse_unreadable(&unreadable, Side::Candidate)?;
    }
    // Only `--retry-policy` stands in for a missing queue: never "every policy on the server".
    let given = retry_policies.map(<[String]>::to_vec).unwrap_or_default();
    Simulator::new(policies, queues, Some(given))
        .map(|s| s.from_server().with_engine(engine))
        .map_err(|e| CliError::invalid(e).into())
}

/// The baseline of `--baseline-from-cluster` (docs/serve.md): the policies and queues the
/// cluster stores, read from Lookout's database, each job getting its queue's attachments
/// as the scheduler would. `None` after reporting every row that does not decode: a
/// baseline without some of the cluster's policies would be a different cluster.
pub fn load_from_cluster(
    ctx: &mut Context,
    state: ClusterState,
    retry_policies: Option<&[String]>,
    queue: Option<&str>,
    engine: EngineKind,
) -> anyhow::Result<Option<Simulator>> {
    if !state.bad.is_empty() {
        for row in &state.bad {
            writeln!(ctx.err, "{}", bad_row_line(ctx.style, row))?;
        }
        writeln!(
            ctx.err,
            "{}: the cluster's retry policies and queues cannot all be read; nothing was simulated",
            ctx.style.error("error")
        )?;
        return Ok(None);
    }
    // Only the replayed queue's: its jobs are the only ones replayed (every queue's, of a
    // `--history` without `--queue`).
    for unread in state
        .unread_fields
        .iter()
        .filter(|u| queue.is_none_or(|q| u.queue == q))
    {
        if let Some(note) = unread.replay_note() {
            writeln!(ctx.err, "note: {note}")?;
        }
        if let Some(warning) = unread.replay_warning() {
            writeln!(ctx.err, "{}: {warning}", ctx.style.warning("warning"))?;
        }
    }
    if let Some(queue) = queue.filter(|q| retry_policies.is_none() && !state.queues.iter().any(|s| s.name == *q)) {
        return Err(CliError::failed(format!(
            "queue `{queue}` is not in the cluster's `queue` table: the cluster has no policies for its jobs"
        ))
        .with_hint("check `--queue` (`retryctl get queues --lookout-db DSN` lists the cluster's), or give the baseline's policies with --retry-policy")
        .into());
    }
    // Only `--retry-policy` stands in for a missing queue, as with --from-server.
    let given = retry_policies.map(<[String]>::to_vec).unwrap_or_default();
    Simulator::new(state.policies, state.queues, Some(given))
        .map(|s| Some(s.from_server().with_engine(engine)))
        .map_err(|e| CliError::invalid(e).into())
}

/// Which side of a replay a policy set is for, so that an error names the flag that chose
/// its engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// `-f` (and `--engine`).
    Candidate,
    /// `--baseline` (and `--baseline-engine`).
    Baseline,
}

impl Side {
    fn engine_flag(self) -> &'static str {
        match self {
            Side::Candidate => "--engine",
            Side::Baseline => "--baseline-engine",
        }
    }
}

/// The policy set of a side's files (valid: [`super::sides::files::read_side`] read them) for
/// `engine`; refused (exit 3) when a name is given twice or the engine cannot evaluate a
/// field.
pub fn build(
    files: &[SourceFile],
    retry_policies: Option<&[String]>,
    engine: EngineKind,
    side: Side,
) -> anyhow::Result<Simulator> {
    match policy_set(files, retry_policies, engine) {
        Ok(sim) => Ok(sim),
        Err(Unusable::Unreadable(fields)) => Err(unreadable(&fields, side).into()),
        Err(Unusable::Invalid(e)) => Err(e.into()),
    }
}

/// Writes `validate`'s report of `files` to stderr when any document is invalid, and says
/// nothing was `done`; `false` then.
pub fn report_invalid(ctx: &mut Context, files: &[SourceFile], done: &str) -> anyhow::Result<bool> {
    if report::counts(files).errors == 0 {
        return Ok(true);
    }
    // The report's summary line goes to stderr too: stdout carries the command's data only.
    let mut summary = Vec::new();
    report::write_text(files, ctx.style, &mut summary, ctx.err)?;
    ctx.err.write_all(&summary)?;
    writeln!(ctx.err, "error: the policies are invalid; nothing was {done}")?;
    Ok(false)
}

/// Why valid documents make no policy set.
#[derive(Debug)]
pub enum Unusable {
    /// docs/engines.md: fields the upstream engine cannot evaluate (`  FILE: policy `P`: FIELD`).
    Unreadable(Vec<String>),
    /// A name given twice, a policy that does not compile.
    Invalid(CliError),
}

/// The policy set of `files` (valid documents) decided by `engine`: every policy and queue,
/// each given once, and for the upstream engine only what upstream can store.
pub fn policy_set(
    files: &[SourceFile],
    retry_policies: Option<&[String]>,
    engine: EngineKind,
) -> Result<Simulator, Unusable> {
    let mut policies = Vec::new();
    let mut queues = Vec::new();
    let mut seen: std::collections::HashMap<(bool, String), String> = std::collections::HashMap::new();
    let mut unreadable = Vec::new();
    for file in files {
        for doc in &file.documents {
            if let (EngineKind::Upstream, Some(Resource::RetryPolicy(p))) = (engine, &doc.resource) {
                // docs/engines.md: the upstream engine evaluates only what upstream can store; the
                // same check the client makes before sending to an upstream server.
                let prefix = if doc.api_version == Some(ApiVersion::V1) {
                    "spec."
                } else {
                    ""
                };
                for field in p.upstream_incompatibilities() {
                    unreadable.push(format!("  {}: policy `{}`: {prefix}{field}", file.name, p.name));
                }
            }
            let (is_policy, name) = match &doc.resource {
                Some(Resource::RetryPolicy(p)) => (true, p.name.clone()),
                Some(Resource::Queue(q)) => (false, q.name.clone()),
                _ => continue,
            };
            if let Some(first) = seen.insert((is_policy, name.clone()), file.name.clone()) {
                let kind = if is_policy { "policy" } else { "queue" };
                return Err(Unusable::Invalid(
                    CliError::invalid(format!(
                        "{kind} `{name}` is given twice: in `{first}` and in `{}`",
                        file.name
                    ))
                    .with_hint("pass each file once (a directory given with -f already includes its files)"),
                ));
            }
            match &doc.resource {
                Some(Resource::RetryPolicy(p)) => policies.push(p.clone()),
                Some(Resource::Queue(q)) => queues.push(q.clone()),
                _ => {}
            }
        }
    }
    if !unreadable.is_empty() {
        return Err(Unusable::Unreadable(unreadable));
    }
    // A name `--retry-policy` gives that no document holds is a typo: said once, here, rather
    // than as an error on every job whose queue is not among the documents.
    let unknown: Vec<String> = retry_policies
        .unwrap_or_default()
        .iter()
        .filter(|n| !policies.iter().any(|p| &p.name == *n))
        .map(|n| crate::diag::quote(n))
        .collect();
    if !unknown.is_empty() {
        let (noun, verb) = if unknown.len() == 1 {
            ("policy", "is")
        } else {
            ("policies", "are")
        };
        let known: Vec<&str> = policies.iter().map(|p| p.name.as_str()).collect();
        return Err(Unusable::Invalid(CliError::invalid(format!(
            "`--retry-policy` names {noun} {} that {verb} not among the documents given with -f (known: {})",
            unknown.join(", "),
            crate::diag::one_of(&known),
        ))));
    }
    Simulator::new(policies, queues, retry_policies.map(<[String]>::to_vec))
        .map(|s| s.with_engine(engine))
        .map_err(|e| Unusable::Invalid(CliError::invalid(e)))
}

/// docs/engines.md: the upstream engine evaluates only what upstream can store; `unreadable`
/// lists the fields it cannot (`  FILE: policy `P`: FIELD`).
fn refuse_unreadable(fields: &[String], side: Side) -> anyhow::Result<()> {
    match fields {
        [] => Ok(()),
        _ => Err(unreadable(fields, side).into()),
    }
}

/// The refusal of `fields` the upstream engine of `side` cannot evaluate.
fn unreadable(fields: &[String], side: Side) -> CliError {
    let whose = match side {
        Side::Candidate => "the upstream engine",
        Side::Baseline => "the baseline's upstream engine",
    };
    CliError::invalid(format!(
        "{whose} cannot evaluate these fields (upstream Armada cannot store them):\n{}",
        fields.join("\n")
    ))
    .with_hint(format!(
        "use {} design, or keep the policy to what upstream stores (see `retryctl validate --upstream`)",
        side.engine_flag()
    ))
}
