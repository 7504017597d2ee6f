//! `retryctl validate -f PATH...`: offline parse + validate + lint, and a report.

use crate::app::Context;
use crate::cli::{ValidateArgs, ValidateOutput};
use crate::error::{CliError, ExitCode};
use crate::input::{self, io_reason};
use crate::model::lint::{lint_documents, LintOptions};
use crate::model::scheduler::parse_scheduler_config;
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
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::invalid(format!(
                "cannot read scheduler config `{}`: {}",
                path.display(),
                io_reason(&e)
            ))
        })?;
        let config = parse_scheduler_config(&text).map_err(|errors| {
            let lines: Vec<String> = errors
                .iter()
                .map(|d| match d.pos {
                    Some(p) => format!("  {}:{p}: {}: {}", path.display(), d.path, d.message),
                    None => format!("  {}: {}: {}", path.display(), d.path, d.message),
                })
                .collect();
            CliError::invalid(format!(
                "invalid scheduler config `{}`\n{}",
                path.display(),
                lines.join("\n")
            ))
        })?;
        options.global_max_retries = config.global_max_retries;
        options.default_policy_name = config.default_policy_name;
    }
    let mut files = input::read_sources(&args.source.files, args.source.recursive, None);
    lint_documents(files.iter_mut().flat_map(|f| f.documents.iter_mut()), &options);
    let t = report::totals(&files);
    let valid = t.errors == 0 && !(args.strict && t.warnings > 0);
    match args.output {
        ValidateOutput::Text => {
            report::write_text(&files, ctx.style, ctx.out, ctx.err)?;
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
