//! What the server-facing commands share: connecting, loading `-f` documents for a write,
//! turning a [`ClientError`] into an error with the right words, hint and exit code, and the
//! dry-run note.
//!
//! Its files: [`target`] (resource arguments as kubectl takes them), [`batch`] (a batch of
//! `-f` documents: order, reference checks, the writes), [`queue`] (a queue's flags).
//!
//! Must not: print data (commands do that through `output`), or hold one command's logic.

pub mod batch;
pub mod queue;
pub mod target;

use crate::app::Context;
use crate::cli::{DryRun, FileSource};
use crate::client::conflict::refuse_incompatible;
use crate::client::{self, codes, Auth, Client, ClientError, WriteOp};
use crate::connection::{self, Endpoint, Env};
use crate::error::CliError;
use crate::input;
use crate::model::validate::name_reason;
use crate::model::{ApiVersion, Kind, Resource};
use crate::output::report;

/// A connected client (REST or gRPC, as the address says), the server it talks to and the
/// credentials it sends (for hints).
pub struct Remote {
    pub client: Box<dyn Client>,
    pub server: Endpoint,
    /// The credentials sent, as `-v` shows them (`bearer from `$ARMADA_TOKEN``); `None`
    /// when anonymous.
    sent: Option<String>,
}

/// Also prints the `--insecure-skip-tls-verify` warning, on every run that connects.
pub fn connect(ctx: &mut Context) -> Result<Remote, CliError> {
    let settings = connection::resolve(&ctx.global, &Env::from_process())?;
    if let Some(warning) = settings.tls.warning() {
        let _ = writeln!(ctx.err, "{warning}");
    }
    let (server, config) = settings.armada_client()?;
    let sent = (config.auth != Auth::None).then(|| config.auth.shown(&config.auth_from));
    let client = client::connect(config).map_err(|e| CliError::new(e.exit_code(), e.to_string()))?;
    Ok(Remote { client, server, sent })
}

impl Remote {
    /// `what` failed because of `e`: one message, the exit code of `e`, and a next step.
    pub fn fail(&self, what: &str, e: ClientError) -> CliError {
        let err = CliError::new(e.exit_code(), format!("{what}: {e}"));
        match &e {
            ClientError::Unreachable { .. } | ClientError::Timeout { .. } => {
                err.with_hint(self.server.unreachable_hint())
            }
            ClientError::Certificate { .. } => err.with_hint(
                "if the server's certificate comes from a private CA or is self-signed, trust it \
                 with `--certificate-authority FILE` or the config context key `certificateAuthority`",
            ),
            e if e.is_unauthenticated() => match &self.sent {
                None => err.with_hint(
                    "give credentials: `--token`, `--token-file` or `$ARMADA_TOKEN`, or the config \
                     context's `bearerToken`, `basicAuth` or `execAuth`",
                ),
                // The first source set wins (docs/cli.md): say which, in case another was meant.
                Some(sent) => err.with_hint(format!(
                    "sent: {sent} (the first set of `--token`/`--token-file`, `$ARMADA_TOKEN`, the \
                     URL's `user:password`, the context's `bearerToken`, `basicAuth`, `execAuth`); \
                     check that one, or unset it to use the next"
                )),
            },
            ClientError::NoRoute { .. } => err.with_hint(format!(
                "check that {} is the Armada REST (HTTP gateway) URL, not the gRPC port",
                crate::redact::redact_url(self.client.base_url())
            )),
            ClientError::Incompatible { grpc: true, .. } => err.with_hint(
                "write it over REST (`--armada-url http://…` of `retryctl serve`, or a context's \
                 `armadaRestUrl`), or remove these fields",
            ),
            ClientError::Incompatible { fields, .. } => {
                let limit = fields.iter().any(|f| f == "retryLimit");
                let action = fields.iter().any(|f| f.starts_with("defaultAction"));
                if limit || action {
                    let (set, why) = match (limit, action) {
                        (true, true) => (
                            "`spec.retryLimit` and `spec.defaultAction`",
                            "upstream reads an absent limit as 0 and refuses an absent default action",
                        ),
                        (true, false) => ("`spec.retryLimit`", "upstream reads an absent limit as 0"),
                        _ => ("`spec.defaultAction`", "upstream refuses a policy without one"),
                    };
                    let others = if fields.len() > usize::from(limit) + usize::from(action) {
                        " and remove the other fields"
                    } else {
                        ""
                    };
                    err.with_hint(format!(
                        "set {set} explicitly ({why}){others}, or use a server that speaks the \
                         design dialect (`retryctl serve`)"
                    ))
                } else {
                    err.with_hint(
                        "remove these fields, or use a server that speaks the design dialect \
                         (`retryctl serve`)",
                    )
                }
            }
            ClientError::Dropped { kind, name, .. } => {
                let noun = if *kind == "queue" { "queue" } else { "retrypolicy" };
                err.with_hint(format!(
                    "the server does not keep these fields; see what it stored with \
                     `retryctl get {noun} {name} -o yaml`"
                ))
            }
            _ => err,
        }
    }
}

/// One document to write, with where it came from.
pub struct Item {
    pub file: String,
    pub resource: Resource,
    /// The `apiVersion` it was written in (`diff` shows it in the same dialect); `None` for
    /// one built from flags.
    pub version: Option<ApiVersion>,
    /// The document as written, to place a finding at its line and column; `None` for one
    /// built from flags.
    pub node: Option<crate::yaml::Node>,
}

impl Item {
    pub fn label(&self) -> String {
        label(&self.resource)
    }
}

/// `retrypolicy/NAME` or `queue/NAME`, as kubectl names resources.
pub fn label(r: &Resource) -> String {
    match r {
        Resource::RetryPolicy(p) => format!("retrypolicy/{}", p.name),
        Resource::Queue(q) => format!("queue/{}", q.name),
        other => format!("{}/{}", other.kind().as_str(), other.name().unwrap_or("")),
    }
}

/// Reads, decodes and validates every document of `source`. Any error anywhere: the full
/// report on stderr and exit 3 before anything is sent, so a bad file never half-applies.
pub fn load(ctx: &mut Context, source: &FileSource, kinds: &[Kind]) -> anyhow::Result<Vec<Item>> {
    load_seen(ctx, source, kinds).map(|loaded| loaded.items)
}

/// What `-f PATH...` gave: its documents, the files of its directories it did not read, and
/// the comment each file read starts with.
pub struct Loaded {
    pub items: Vec<Item>,
    pub skipped: Vec<input::Skipped>,
    /// `(file, comment)` for every comment line heading a document of a file
    /// (`input::SourceFile`'s `heads`): `suggest -o policy`'s verdict, which `apply` reads.
    pub heads: Vec<(String, String)>,
}

/// [`load`], and the files of `source`'s directories it did not read, each said on stderr
/// (a `beta.YAML`, a subdirectory's file without `-R`): a document the user took for given
/// is never left out without a word.
pub fn load_seen(ctx: &mut Context, source: &FileSource, kinds: &[Kind]) -> anyhow::Result<Loaded> {
    if source.files.is_empty() {
        return Err(CliError::usage("no input: pass one or more files or directories with `-f PATH`").into());
    }
    let input::Sources { mut files, skipped } = input::read_sources_seen(&source.files, source.recursive, Some(kinds));
    for s in &skipped {
        writeln!(ctx.err, "note: {s}")?;
    }
    for place in input::set_aside_categorizers(&mut files) {
        writeln!(
            ctx.err,
            "note: skipped {place}: the executor's categorizer config is not a server resource; it goes in the executor's config (`errorCategories`)"
        )?;
    }
    let totals = report::counts(&files);
    if totals.errors > 0 {
        // The summary line goes to stderr too: stdout carries only results.
        let mut summary = Vec::new();
        report::write_text(&files, ctx.style, &mut summary, ctx.err)?;
        ctx.err.write_all(&summary)?;
        return Err(CliError::invalid(format!(
            "nothing was sent: {} in the input",
            if totals.errors == 1 {
                "1 error".to_string()
            } else {
                format!("{} errors", totals.errors)
            }
        ))
        .into());
    }
    let mut items = Vec::new();
    let mut heads = Vec::new();
    for f in files {
        heads.extend(f.heads.into_iter().map(|head| (f.name.clone(), head)));
        for d in f.documents {
            if let Some(resource) = d.resource {
                items.push(Item {
                    file: f.name.clone(),
                    resource,
                    version: d.api_version,
                    node: Some(d.node),
                });
            }
        }
    }
    if items.is_empty() {
        return Err(CliError::invalid("no documents in the input: nothing to do").into());
    }
    Ok(Loaded { items, skipped, heads })
}

/// Checks names given on the command line before they reach a URL.
pub fn check_names(noun: &str, names: &[String]) -> Result<(), CliError> {
    for n in names {
        // The model's reason without the name: here it is already in the sentence.
        if let Some(problem) = name_reason(n) {
            return Err(CliError::usage(format!("invalid {noun} name `{n}`: {problem}")));
        }
    }
    Ok(())
}

/// The dry-run mode to use, saying on stderr when `server` falls back to `client`: neither
/// the Armada REST API nor `retryctl serve` has a dry-run parameter.
pub fn dry_run(ctx: &mut Context, mode: DryRun) -> std::io::Result<bool> {
    match mode {
        DryRun::None => Ok(false),
        DryRun::Client => Ok(true),
        DryRun::Server => {
            writeln!(
                ctx.err,
                "note: the server has no dry-run support (the Armada REST API has none); fell back to \
                 --dry-run=client: nothing written"
            )?;
            Ok(true)
        }
    }
}

/// The suffix of a result line in dry-run mode.
pub fn suffix(dry: bool) -> &'static str {
    if dry {
        " (dry run)"
    } else {
        ""
    }
}

/// "N later documents were not sent" after a failure part-way.
pub fn not_sent(err: CliError, remaining: usize) -> CliError {
    not_done(err, remaining, ("document", "documents"), "sent")
}

/// `err`, said with how many of the later items (`noun`: singular, plural) were not `done`:
/// "(3 later documents were not sent)".
pub fn not_done(err: CliError, remaining: usize, noun: (&str, &str), done: &str) -> CliError {
    let what = match remaining {
        0 => return err,
        1 => format!("1 later {} was not {done}", noun.0),
        n => format!("{n} later {} were not {done}", noun.1),
    };
    CliError {
        message: format!("{} ({what})", err.message),
        ..err
    }
}

/// How a write treats an existing or missing resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fails when it exists.
    Create,
    /// Fails when it is missing.
    Update,
    /// Creates or updates; does nothing when the server already has it.
    Apply,
}

/// Writes one resource; returns what happened (`created`, `configured`, `unchanged`).
/// `dry`: nothing is written. `create` and `update` then stay fully offline; `apply` reads
/// the current state to say what it would do.
pub fn write(remote: Option<&Remote>, r: &Resource, mode: Mode, dry: bool) -> Result<&'static str, CliError> {
    let verb = match mode {
        Mode::Create => "created",
        Mode::Update | Mode::Apply => "configured",
    };
    let Some(remote) = remote else {
        return Ok(verb);
    };
    let c = &remote.client;
    let what = |action: &str| match r {
        Resource::RetryPolicy(p) => format!("cannot {action} retry policy `{}`", p.name),
        Resource::Queue(q) => format!("cannot {action} queue `{}`", q.name),
        _ => format!("cannot {action} {}", label(r)),
    };
    let action = match mode {
        Mode::Create => "create",
        Mode::Update => "update",
        Mode::Apply => "apply",
    };
    let fail = |e: ClientError| {
        let exists = e.is_already_exists();
        let missing = e.is_not_found();
        let err = remote.fail(&what(action), e);
        if exists {
            err.with_hint("to change the existing one, use `retryctl apply -f` or `retryctl update -f`")
        } else if missing && mode == Mode::Update {
            err.with_hint("create it first with `retryctl create -f` or `retryctl apply -f`")
        } else {
            err
        }
    };
    // The current state, when the mode needs it. Policies are not read for a real create:
    // the server's 409 says the same in one request fewer. A dry run reads them so that it
    // refuses what the real run would; `update` reads them to report `unchanged`.
    let current: Option<Option<Resource>> = match (r, mode) {
        (Resource::RetryPolicy(p), _) if mode != Mode::Create || dry => {
            Some(found(c.get_policy(&p.name).map(Resource::RetryPolicy)).map_err(fail)?)
        }
        // An upstream server upserts queues on POST and PUT: look first, so that create and
        // update mean the same on every server.
        (Resource::Queue(q), _) => Some(found(c.get_queue(&q.name).map(Resource::Queue)).map_err(fail)?),
        _ => None,
    };
    let op = match (mode, &current) {
        (Mode::Create, Some(Some(_))) => {
            return Err(fail(c.refused(
                codes::ALREADY_EXISTS,
                format!("{} `{}` already exists", noun(r), r.name().unwrap_or("")),
            )))
        }
        (Mode::Update, Some(None)) => {
            return Err(fail(c.refused(
                codes::NOT_FOUND,
                format!("{} `{}` does not exist", noun(r), r.name().unwrap_or("")),
            )))
        }
        (Mode::Apply | Mode::Update, Some(Some(existing))) => {
            if same(existing, r) {
                return Ok("unchanged");
            }
            WriteOp::Update
        }
        (Mode::Apply, _) | (Mode::Create, _) => WriteOp::Create,
        (Mode::Update, _) => WriteOp::Update,
    };
    let result = if op == WriteOp::Create { "created" } else { "configured" };
    if let Resource::RetryPolicy(p) = r {
        // The client refuses these before sending (docs/cli.md); a dry run must say so too.
        if dry {
            refuse_incompatible(c.as_ref(), p).map_err(fail)?;
        }
    }
    if dry {
        return Ok(result);
    }
    // A write of something read above carries its ETag as If-Match; on 412 someone wrote in
    // between: read again (new ETag) and write the file's content again, bounded (docs/reference/wire.md).
    let mut attempt = 1;
    loop {
        let written = match r {
            Resource::RetryPolicy(p) => c.write_policy(op, p),
            Resource::Queue(q) => c.write_queue(op, q),
            _ => unreachable!("only RetryPolicy and Queue documents are loaded for writes"),
        };
        match written {
            Err(e) if e.is_conflict() => {
                let name = r.name().unwrap_or("");
                let kind = match r {
                    Resource::RetryPolicy(_) => "retry policy",
                    _ => "queue",
                };
                if attempt >= client::CONFLICT_ATTEMPTS {
                    return Err(fail(ClientError::Conflict {
                        kind,
                        name: name.to_string(),
                        attempts: attempt,
                    }));
                }
                c.conflict_pause(name, attempt);
                attempt += 1;
                match r {
                    Resource::RetryPolicy(_) => c.get_policy(name).map(drop),
                    _ => c.get_queue(name).map(drop),
                }
                .map_err(fail)?;
            }
            other => {
                other.map_err(fail)?;
                return Ok(result);
            }
        }
    }
}

fn noun(r: &Resource) -> &'static str {
    match r {
        Resource::RetryPolicy(_) => "retry policy",
        _ => "queue",
    }
}

/// `Ok(None)` for NotFound.
pub fn found<T>(r: client::Result<T>) -> client::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the server's resource already is what the file says.
pub fn same(server: &Resource, file: &Resource) -> bool {
    match (server, file) {
        (Resource::RetryPolicy(a), Resource::RetryPolicy(b)) => {
            crate::wire::policy_to_json(a) == crate::wire::policy_to_json(b)
        }
        (Resource::Queue(a), Resource::Queue(b)) => client::queue_differences(b, a).is_empty(),
        _ => false,
    }
}

/// The names of the retry policies `items` define, in their order.
pub fn policy_names(items: &[Item]) -> impl Iterator<Item = &str> {
    items.iter().filter_map(|i| match &i.resource {
        Resource::RetryPolicy(p) => Some(p.name.as_str()),
        _ => None,
    })
}

/// The server's retry policies that no document of `items` defines, in the server's order
/// (`diff` lists them, `apply --prune` deletes them); `what` words a failure to list them.
pub fn unnamed_policies(conn: &Remote, items: &[Item], what: &str) -> Result<Vec<String>, CliError> {
    let named: Vec<&str> = policy_names(items).collect();
    let on_server = conn.client.list_policies().map_err(|e| conn.fail(what, e))?;
    Ok(on_server
        .into_iter()
        .map(|p| p.name)
        .filter(|n| !named.contains(&n.as_str()))
        .collect())
}
