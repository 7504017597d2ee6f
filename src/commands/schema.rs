//! `retryctl schema retrypolicy|queue|failurehistory|errorcategories`: the JSON Schema (draft
//! 2020-12) of each kind (a RetryPolicy's two dialects as `oneOf`, a categorizer's two shapes
//! as `anyOf`), generated from `model::fields`, the table the strict decoder reads.

use crate::app::Context;
use crate::cli::{SchemaArgs, SchemaKind};
use crate::commands::remote::target::KINDS;
use crate::error::{CliError, ExitCode};
use crate::model::fields;
use crate::output::schema;

/// Where the published schemas live in the repository (the `$id`s), for editors.
pub const SCHEMA_BASE: &str = "https://github.com/armadaproject/retryctl/schemas";

pub fn run(ctx: &mut Context, args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    // As `kubectl explain` with no resource: a usage error that lists what there is.
    let Some(kind) = args.kind else {
        return Err(CliError::usage(format!("name the kind of document: {KINDS}"))
            .with_hint("for example `retryctl schema retrypolicy > .schemas/retrypolicy.json`")
            .into());
    };
    let value = match kind {
        SchemaKind::Retrypolicy => schema::schema_one_of(
            &format!("{SCHEMA_BASE}/retrypolicy.json"),
            "Armada RetryPolicy (armadaproject.io/v1 or armadaproject.io/v1beta1)",
            &[
                ("armadaproject.io/v1 (the design dialect)", fields::RETRY_POLICY),
                (
                    "armadaproject.io/v1beta1 (upstream Armada's flat dialect)",
                    fields::RETRY_POLICY_V1BETA1,
                ),
            ],
        ),
        SchemaKind::Queue => schema::schema(
            &format!("{SCHEMA_BASE}/queue.json"),
            "Armada Queue (armadaproject.io/v1beta1)",
            fields::QUEUE,
        ),
        SchemaKind::Failurehistory => schema::schema(
            &format!("{SCHEMA_BASE}/failurehistory.json"),
            "Armada FailureHistory (armadaproject.io/v1, retryctl simulate's input)",
            fields::FAILURE_HISTORY,
        ),
        SchemaKind::Errorcategories => schema::schema_categorizer(
            &format!("{SCHEMA_BASE}/errorcategories.json"),
            "Armada executor errorCategories (the error categorizer's config: an executor config, or a document whose top level is errorCategories)",
            fields::ERROR_CATEGORIES,
        ),
    };
    writeln!(ctx.out, "{}", serde_json::to_string_pretty(&value)?)?;
    Ok(ExitCode::Success)
}
