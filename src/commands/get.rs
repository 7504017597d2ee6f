//! `retryctl get retrypolicy|queue [NAME...]` and `get TYPE/NAME...`, in every `-o` format.
//!
//! Every name is looked up; the ones found are printed, then the missing ones are named
//! together in one error (exit 1), as kubectl does. Without names, all of the type are
//! listed; an empty list prints an empty `List` in json/yaml and, for tables, says so on
//! stderr. What the output looks like is `output::view`.
//!
//! YAML and JSON are in the dialect `--api-version` names, else in the server's: today's
//! Armada's v1beta1 from a server without the design dialect (upstream Armada, `serve
//! --dialect upstream`) and from the cluster's own database, v1 from a design server; what
//! `get … -o yaml > current/policies.yaml` writes is then what the cluster stores.
//!
//! With `--lookout-db`, the same from the cluster's own database (docs/serve.md,
//! `lookout::cluster`), read-only and printed exactly as a server's answer would be: a row
//! whose definition does not decode is reported on stderr naming its table and name, the
//! other rows are still printed, and the exit status is 1.

use crate::app::Context;
use crate::cli::{GetArgs, GetOutput, GetResource, ViewArgs};
use crate::commands::remote::target::{noun_of, Targets};
use crate::commands::remote::{self, Remote};
use crate::connection::parse_timeout;
use crate::error::{CliError, ExitCode};
use crate::lookout::cluster::{self, BadRow, ClusterState};
use crate::lookout::db;
use crate::model::document::ApiVersion;
use crate::model::Kind;
use crate::output::jsonpath::{self, Template};
use crate::output::view::{self, parse_columns, Format, Options, Shown};

pub fn run(ctx: &mut Context, args: &GetArgs) -> anyhow::Result<ExitCode> {
    // `None` names: every resource of the kind.
    let (view_args, targets, all, dsn) = match &args.resource {
        Some(GetResource::Retrypolicy(f)) => (
            &f.view,
            Targets::from_names(Kind::RetryPolicy, &f.names)?,
            f.names.is_empty(),
            &f.cluster.lookout_db,
        ),
        Some(GetResource::Queue(f)) => (
            &f.view,
            Targets::from_names(Kind::Queue, &f.names)?,
            f.names.is_empty(),
            &f.cluster.lookout_db,
        ),
        None => (
            &args.view,
            Targets::from_typed(&args.targets)?,
            false,
            &args.cluster.lookout_db,
        ),
    };
    let (format, version, sort_by) = parse_view(view_args)?;
    // `--lookout-db` alone is `$LOOKOUT_DB`; the variable alone leaves the server the source.
    let source = match crate::commands::replay::lookout::resolve_dsn(dsn.clone(), false)? {
        Some(dsn) => {
            let tables = [db::HISTORY_TABLES, cluster::CLUSTER_TABLES].concat();
            // Only the cluster's tables are read; the history's are checked too, so that a
            // database that is not Lookout's says so rather than naming three tables.
            let db = db::connect_with(&dsn, parse_timeout(&ctx.global.timeout)?, &tables)?;
            let mut state = cluster::read(&db)?;
            state.refuse_unread_fields();
            Source::Cluster(state)
        }
        None => Source::Remote(remote::connect(ctx)?),
    };
    let mut items = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let mut bad: Vec<&BadRow> = Vec::new();
    for (kind, names) in &targets.groups {
        if all {
            items.extend(source.list(*kind, &mut bad)?);
            continue;
        }
        for name in names {
            match source.fetch(*kind, name, &mut bad)? {
                Some(item) => items.push(item),
                None if bad.last().is_some_and(|b| b.is(table_of(*kind), name)) => {}
                None => missing.push(format!("`{name}`")),
            }
        }
    }
    if all && items.is_empty() && bad.is_empty() && matches!(format, Format::Table | Format::Wide) {
        let kind = targets.groups[0].0;
        writeln!(
            ctx.err,
            "no {} found",
            if kind == Kind::Queue {
                "queues"
            } else {
                "retry policies"
            }
        )?;
        return Ok(ExitCode::Success);
    }
    let version = match (version, &source) {
        (Some(asked), _) => asked,
        (None, Source::Remote(conn)) => {
            // Known by now (every answer says it): no request of its own.
            let dialect = conn
                .client
                .dialect_name()
                .map_err(|e| conn.fail("cannot tell the server's dialect", e))?;
            if dialect == "upstream" {
                ApiVersion::V1beta1
            } else {
                ApiVersion::V1
            }
        }
        // The cluster's own database is today's Armada's.
        (None, Source::Cluster(_)) => ApiVersion::V1beta1,
    };
    let options = Options {
        version,
        plural: all || targets.len() > 1,
        no_headers: view_args.no_headers,
        sort_by: sort_by.as_ref(),
    };
    // Only missing names: a table with just its header says nothing.
    let show = !items.is_empty() || !matches!(format, Format::Table | Format::Wide | Format::Name);
    if show {
        if let Err((name, fields)) = view::write(ctx.out, &items, &format, &options)? {
            return Err(CliError::failed(format!(
                "retry policy `{name}` cannot be shown as `{}`: it uses {}",
                version.as_str(),
                fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ))
            .with_hint("show it in the design dialect: `--api-version armadaproject.io/v1`")
            .into());
        }
    }
    for row in &bad {
        writeln!(ctx.err, "{}", view::bad_row_line(ctx.style, row))?;
    }
    if missing.is_empty() {
        return Ok(if bad.is_empty() {
            ExitCode::Success
        } else {
            ExitCode::Failure
        });
    }
    let kinds: Vec<Kind> = targets.groups.iter().map(|(k, _)| *k).collect();
    let what = match kinds.as_slice() {
        [k] if missing.len() == 1 => noun_of(*k).to_string(),
        [Kind::Queue] => "queues".to_string(),
        [_] => "retry policies".to_string(),
        _ => "resources".to_string(),
    };
    // The list comes from where the names were looked for: the server, or the database.
    let from = if matches!(source, Source::Cluster(_)) {
        " --lookout-db DSN"
    } else {
        ""
    };
    Err(CliError::failed(format!("{what} {} not found", missing.join(", ")))
        .with_hint(match kinds.as_slice() {
            [Kind::Queue] => format!("list the existing ones with `retryctl get queues{from}`"),
            [_] => format!("list the existing ones with `retryctl get retrypolicies{from}`"),
            _ => {
                format!("list the existing ones with `retryctl get retrypolicies{from}` or `retryctl get queues{from}`")
            }
        })
        .into())
}

/// `-o`, `--api-version` (`None`: the server's dialect) and `--sort-by`, read.
#[allow(clippy::type_complexity)]
fn parse_view(v: &ViewArgs) -> Result<(Format, Option<ApiVersion>, Option<serde_json_path::JsonPath>), CliError> {
    let version = v.api_version;
    let format = match &v.output {
        GetOutput::Table => Format::Table,
        GetOutput::Wide => Format::Wide,
        GetOutput::Yaml => Format::Yaml,
        GetOutput::Json => Format::Json,
        GetOutput::Name => Format::Name,
        GetOutput::JsonPath(t) => {
            Format::JsonPath(Template::parse(t).map_err(|e| CliError::usage(format!("invalid `-o jsonpath`: {e}")))?)
        }
        GetOutput::CustomColumns(spec) => Format::CustomColumns(
            parse_columns(spec).map_err(|e| CliError::usage(format!("invalid `-o custom-columns`: {e}")))?,
        ),
    };
    let sort_by = v
        .sort_by
        .as_deref()
        .map(jsonpath::compile)
        .transpose()
        .map_err(|e| CliError::usage(format!("invalid `--sort-by`: {e}")))?;
    Ok((format, version, sort_by))
}

/// Where `get` reads: the server, or the cluster's database read once.
enum Source {
    Remote(Remote),
    Cluster(ClusterState),
}

fn table_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Queue => "queue",
        _ => "retry_policy",
    }
}

impl Source {
    /// Every resource of `kind`; the cluster's rows of that table that do not decode go to
    /// `bad`.
    fn list<'s>(&'s self, kind: Kind, bad: &mut Vec<&'s BadRow>) -> Result<Vec<Shown>, CliError> {
        let conn = match self {
            Source::Remote(conn) => conn,
            Source::Cluster(state) => {
                bad.extend(state.bad.iter().filter(|b| b.table == table_of(kind)));
                return Ok(match kind {
                    Kind::Queue => state.queues.iter().cloned().map(Shown::Queue).collect(),
                    _ => state.policies.iter().cloned().map(Shown::Policy).collect(),
                });
            }
        };
        Ok(match kind {
            Kind::Queue => conn
                .client
                .list_queues()
                .map_err(|e| conn.fail("cannot list queues", e))?
                .into_iter()
                .map(Shown::Queue)
                .collect(),
            _ => conn
                .client
                .list_policies()
                .map_err(|e| conn.fail("cannot list retry policies", e))?
                .into_iter()
                .map(Shown::Policy)
                .collect(),
        })
    }

    /// The resource `name`; `None` when there is none, or when its row does not decode
    /// (then it is pushed to `bad`).
    fn fetch<'s>(&'s self, kind: Kind, name: &str, bad: &mut Vec<&'s BadRow>) -> Result<Option<Shown>, CliError> {
        let conn = match self {
            Source::Remote(conn) => conn,
            Source::Cluster(state) => {
                if let Some(b) = state.bad.iter().find(|b| b.is(table_of(kind), name)) {
                    bad.push(b);
                    return Ok(None);
                }
                return Ok(match kind {
                    Kind::Queue => state.queues.iter().find(|q| q.name == name).cloned().map(Shown::Queue),
                    _ => state
                        .policies
                        .iter()
                        .find(|p| p.name == name)
                        .cloned()
                        .map(Shown::Policy),
                });
            }
        };
        let what = format!("cannot get {} `{name}`", noun_of(kind));
        let r = match kind {
            Kind::Queue => remote::found(conn.client.get_queue(name)).map(|q| q.map(Shown::Queue)),
            _ => remote::found(conn.client.get_policy(name)).map(|p| p.map(Shown::Policy)),
        };
        r.map_err(|e| conn.fail(&what, e))
    }
}
