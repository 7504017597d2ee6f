//! `retryctl explain retrypolicy[.FIELD...] [--recursive]`: field documentation from
//! `model::fields`, the table the strict decoder reads (so what is explained is exactly what
//! is accepted).

use crate::app::Context;
use crate::cli::ExplainArgs;
use crate::commands::target::noun_kind;
use crate::error::{CliError, ExitCode};
use crate::model::fields::{self, Field};
use crate::model::Kind;
use crate::output::schema::write_explain;

pub fn run(ctx: &mut Context, args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let (noun, path) = args.path.split_once('.').unwrap_or((&args.path, ""));
    let (kind, root): (&str, &'static [Field]) = match noun_kind(noun) {
        Some(Kind::RetryPolicy) => ("RetryPolicy (armadaproject.io/v1)", fields::RETRY_POLICY),
        Some(Kind::Queue) => ("Queue (armadaproject.io/v1beta1)", fields::QUEUE),
        _ if noun.eq_ignore_ascii_case("failurehistory") => {
            ("FailureHistory (armadaproject.io/v1)", fields::FAILURE_HISTORY)
        }
        _ => {
            return Err(CliError::usage(format!(
                "unknown resource type `{noun}`: expected `retrypolicy` (`rp`), `queue` (`q`) or `failurehistory`"
            ))
            .into())
        }
    };
    if path.is_empty() {
        write_explain(ctx.out, kind, "", None, Some(root), args.recursive)?;
        return Ok(ExitCode::Success);
    }
    let Some(field) = fields::field_at(root, path) else {
        // Name the first part that is wrong and what exists there.
        let mut parent = String::new();
        for part in path.split('.') {
            let here = fields::object_at(root, &parent);
            match here.and_then(|fs| fs.iter().find(|f| f.name == part)) {
                Some(_) => {
                    parent = if parent.is_empty() {
                        part.to_string()
                    } else {
                        format!("{parent}.{part}")
                    };
                }
                None => {
                    let options = here.map(fields::names).unwrap_or_default();
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
                        if let Some(s) = crate::diag::suggest(part, &options) {
                            message.push_str(&format!("; did you mean `{s}`?"));
                        }
                    }
                    return Err(CliError::usage(message).into());
                }
            }
        }
        unreachable!("field_at found nothing, so one part is missing");
    };
    write_explain(
        ctx.out,
        kind,
        path,
        Some(field),
        fields::object_of(&field.ty),
        args.recursive,
    )?;
    Ok(ExitCode::Success)
}
