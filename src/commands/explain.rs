//! `retryctl explain TYPE[.FIELD...] [--recursive] [--api-version V]`: field documentation
//! from `model::fields`, the table the strict decoder reads (so what is explained is exactly
//! what is accepted).
//!
//! Decisions: `--api-version` picks a RetryPolicy's layout, as `kubectl explain
//! --api-version` picks a group version (v1 by default; `armadaproject.io/v1beta1` is
//! upstream's flat layout; a Queue has one layout, a FailureHistory only v1; the executor's
//! `errorcategories` has no envelope and one layout, its `errorCategories` mapping). A field that
//! is not where the path says but is elsewhere in the layout (`retrypolicy.rules` is under
//! `spec`), or only in the other dialect's, is suggested with its full path. No TYPE is a
//! usage error listing the kinds, as `kubectl explain` with no resource.

use crate::app::Context;
use crate::cli::ExplainArgs;
use crate::commands::remote::target::{noun_kind, KINDS};
use crate::error::{CliError, ExitCode};
use crate::model::fields::{self, Field};
use crate::model::{ApiVersion, Kind};
use crate::output::schema::write_explain;

/// A kind's layout at one API version: its label and its fields.
struct Layout {
    kind: &'static str,
    root: &'static [Field],
    version: ApiVersion,
}

fn layout(kind: Kind, version: ApiVersion) -> Option<Layout> {
    let (label, root) = match (kind, version) {
        (Kind::RetryPolicy, ApiVersion::V1) => ("RetryPolicy (armadaproject.io/v1)", fields::RETRY_POLICY),
        (Kind::RetryPolicy, ApiVersion::V1beta1) => {
            ("RetryPolicy (armadaproject.io/v1beta1)", fields::RETRY_POLICY_V1BETA1)
        }
        // One layout, whichever version names it.
        (Kind::Queue, _) => ("Queue (armadaproject.io/v1beta1)", fields::QUEUE),
        (Kind::FailureHistory, ApiVersion::V1) => ("FailureHistory (armadaproject.io/v1)", fields::FAILURE_HISTORY),
        // No envelope, one layout: the `errorCategories` mapping, wherever the file holds it.
        (Kind::ErrorCategories, _) => (
            "ErrorCategories (the executor's errorCategories, keys in any case)",
            fields::ERROR_CATEGORIES,
        ),
        _ => return None,
    };
    Some(Layout {
        kind: label,
        root,
        version,
    })
}

pub fn run(ctx: &mut Context, args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let Some(full) = args.path.as_deref() else {
        return Err(
            CliError::usage(format!("name the kind of document to explain: {KINDS}"))
                .with_hint("for example `retryctl explain retrypolicy.spec.rules`")
                .into(),
        );
    };
    // `retrypolicy..spec` or `retrypolicy.spec.`: a name left out, not the path without it.
    if full.split('.').any(str::is_empty) {
        return Err(CliError::usage(format!(
            "invalid field path `{full}`: a field name is empty (expected names joined by single dots, such as `retrypolicy.spec.rules`)"
        ))
        .into());
    }
    let (noun, path) = full.split_once('.').unwrap_or((full, ""));
    let kind = match noun_kind(noun) {
        Some(k @ (Kind::RetryPolicy | Kind::Queue)) => k,
        _ if noun.eq_ignore_ascii_case("failurehistory") => Kind::FailureHistory,
        _ if noun.eq_ignore_ascii_case("errorcategories") => Kind::ErrorCategories,
        _ => return Err(CliError::usage(format!("unknown resource type `{noun}`: expected {KINDS}")).into()),
    };
    let version = args.api_version;
    let Some(here) = layout(kind, version) else {
        return Err(CliError::usage(format!(
            "a {} has no `{}` layout: it is `armadaproject.io/v1` only",
            kind.as_str(),
            version.as_str()
        ))
        .into());
    };
    if path.is_empty() {
        write_explain(ctx.out, here.kind, "", None, Some(here.root), args.recursive)?;
        return Ok(ExitCode::Success);
    }
    let Some(field) = fields::field_at(here.root, path) else {
        return Err(not_found(noun, path, kind, &here).into());
    };
    write_explain(
        ctx.out,
        here.kind,
        path,
        Some(field),
        fields::object_of(&field.ty),
        args.recursive,
    )?;
    Ok(ExitCode::Success)
}

/// The usage error of a path that does not resolve: the first part that is wrong, what
/// exists there, and, when the field is elsewhere, its full path.
fn not_found(noun: &str, path: &str, kind: Kind, here: &Layout) -> CliError {
    let mut parent = String::new();
    for part in path.split('.') {
        let fields_here = fields::object_at(here.root, &parent);
        if fields_here.is_some_and(|fs| fs.iter().any(|f| f.name == part)) {
            parent = join(&parent, part);
            continue;
        }
        let options = fields_here.map(fields::names).unwrap_or_default();
        let at = if parent.is_empty() {
            noun.to_string()
        } else {
            format!("{noun}.{parent}")
        };
        let mut message = format!("field `{part}` does not exist in `{at}`");
        if options.is_empty() {
            message.push_str(": it has no fields");
        } else {
            message.push_str(&format!(
                "; its fields are {}",
                options.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        // Elsewhere in this layout (`rules` is under `spec`), then in the other dialect's.
        if let Some(found) = find_path(here.root, path) {
            message.push_str(&format!("; did you mean `{noun}.{found}`?"));
        } else if let Some(s) = crate::diag::suggest(part, &options) {
            message.push_str(&format!("; did you mean `{s}`?"));
        } else if let Some(other) = other_layout(kind, here.version) {
            if let Some(found) = fields::field_at(other.root, path)
                .map(|_| path.to_string())
                .or_else(|| find_path(other.root, path))
            {
                message.push_str(&format!(
                    "; `{noun}.{found}` is in the `{}` layout (`--api-version {}`)",
                    other.version.as_str(),
                    other.version.as_str()
                ));
            }
        }
        return CliError::usage(message);
    }
    unreachable!("field_at found nothing, so one part is missing");
}

/// The other dialect of a RetryPolicy.
fn other_layout(kind: Kind, version: ApiVersion) -> Option<Layout> {
    match (kind, version) {
        (Kind::RetryPolicy, ApiVersion::V1) => layout(kind, ApiVersion::V1beta1),
        (Kind::RetryPolicy, ApiVersion::V1beta1) => layout(kind, ApiVersion::V1),
        _ => None,
    }
}

/// The shortest full path under `root` that ends with `path` (`rules.onExitCodes` →
/// `spec.rules.onExitCodes`), searched breadth first over the objects of the layout.
fn find_path(root: &'static [Field], path: &str) -> Option<String> {
    let mut level: Vec<(String, &'static [Field])> = vec![(String::new(), root)];
    while !level.is_empty() {
        let mut next = Vec::new();
        for (prefix, fields_here) in level {
            for f in fields_here {
                let Some(children) = fields::object_of(&f.ty) else {
                    continue;
                };
                let under = join(&prefix, f.name);
                let candidate = format!("{under}.{path}");
                if fields::field_at(root, &candidate).is_some() {
                    return Some(candidate);
                }
                next.push((under, children));
            }
        }
        level = next;
    }
    None
}

fn join(parent: &str, part: &str) -> String {
    if parent.is_empty() {
        part.to_string()
    } else {
        format!("{parent}.{part}")
    }
}
