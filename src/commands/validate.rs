//! `retryctl validate -f PATH...`: offline parse + validate + lint, and a report.

use crate::app::Context;
use crate::cli::{ValidateArgs, ValidateOutput};
use crate::error::{CliError, ExitCode};
use crate::input::{self, SourceFile};
use crate::model::document::{ApiVersion, Kind, Resource};
use crate::model::lint::{lint_documents, LintOptions};
use crate::output::report;

pub fn run(ctx: &mut Context, args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    if args.source.files.is_empty() {
        return Err(CliError::usage("no input: pass one or more files or directories with `-f PATH`").into());
    }
    let mut options = LintOptions {
        upstream: args.upstream,
        ..LintOptions::default()
    };
    if let Some(path) = &args.scheduler_config {
        let config = input::read_scheduler_config(path)?;
        options.global_max_retries = config.global_max_retries;
        options.default_policy_name = config.default_policy_name;
    }
    let mut files = input::read_sources(&args.source.files, args.source.recursive, None);
    if let Some(path) = &args.categorizer {
        files.push(input::categorizer_file(path));
    }
    // Both layers of today's Armada together: every policy against every valid categorizer
    // given, whether by -f or --categorizer (docs/categorizer.md).
    for f in &files {
        for d in f.documents.iter().filter(|d| d.is_valid()) {
            if let Some(Resource::ErrorCategories(c)) = &d.resource {
                options.categorizers.push((f.name.clone(), c.clone()));
            }
        }
    }
    lint_documents(files.iter_mut().flat_map(|f| f.documents.iter_mut()), &options);
    let t = report::counts(&files);
    let valid = t.errors == 0 && !(args.strict && t.warnings > 0);
    match args.output {
        ValidateOutput::Text => {
            report::write_text(&files, ctx.style, ctx.out, ctx.err)?;
            if args.upstream && upstream_refuses_a_v1_policy(&files) {
                // Once for the run, after every error: the fix is the same for each document.
                writeln!(ctx.err, "{UPSTREAM_V1_HINT}")?;
            }
            // Today's Armada is two halves: a policy's categories are the executor's to
            // assign. Said once when no executor config was there to check them against.
            if args.upstream && options.categorizers.is_empty() && names_a_category(&files) {
                writeln!(ctx.err, "{UNCHECKED_CATEGORIES}")?;
            }
            if args.strict && t.errors == 0 && t.warnings > 0 {
                writeln!(
                    ctx.err,
                    "error: {} with --strict",
                    if t.warnings == 1 { "1 warning" } else { "warnings" }
                )?;
            }
        }
        ValidateOutput::Json => report::write_json(&files, valid, ctx.out)?,
        ValidateOutput::Github => {
            report::write_github(&files, ctx.out)?;
        }
    }
    Ok(if valid {
        ExitCode::Success
    } else {
        ExitCode::InvalidInput
    })
}

/// What `validate --upstream` says after errors on a design-dialect (`armadaproject.io/v1`)
/// policy: today's Armada stores only the flat dialect, and the verbs that write policies
/// write it under `--engine upstream` (docs/policies.md).
const UPSTREAM_V1_HINT: &str =
    "hint: today's Armada stores armadaproject.io/v1beta1: regenerate with `--engine upstream`";

/// What `validate --upstream` says when a policy names a category and no executor config was
/// given to check it against (docs/categorizer.md "The two halves, in order").
const UNCHECKED_CATEGORIES: &str = "note: the categories the policies name were not checked against an executor config: give the one the executor will run with `--categorizer FILE`";

/// Whether a valid RetryPolicy names a category (`onCategory`, `onFailureCategory`).
fn names_a_category(files: &[SourceFile]) -> bool {
    files.iter().flat_map(|f| &f.documents).any(|d| match &d.resource {
        Some(Resource::RetryPolicy(p)) => p.rules.iter().any(|r| r.on_failure_category.is_some()),
        _ => false,
    })
}

/// Whether a RetryPolicy document written as `armadaproject.io/v1` has an error.
fn upstream_refuses_a_v1_policy(files: &[SourceFile]) -> bool {
    files.iter().flat_map(|f| &f.documents).any(|d| {
        d.kind == Some(Kind::RetryPolicy)
            && d.api_version == Some(ApiVersion::V1)
            && d.diagnostics.iter().any(|x| x.is_error())
    })
}
