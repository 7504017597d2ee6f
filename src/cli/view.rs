//! How `get` prints what it found: `-o` (the plain formats, `jsonpath=TEMPLATE`,
//! `custom-columns=COLUMNS`), `--api-version`, `--no-headers`, `--sort-by`.
//!
//! Owns: [`ViewArgs`], [`GetOutput`] and its value parser, [`OutputParser`]. Must not: render
//! (that is `output::view`).

use clap::Args;

#[derive(Debug, Args, Clone)]
pub struct ViewArgs {
    /// Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl's
    /// `{.items[*].metadata.name}`), custom-columns=NAME:.path,...
    #[arg(short = 'o', long, value_parser = OutputParser, default_value = "table", value_name = "FORMAT")]
    pub output: GetOutput,

    /// Dialect of YAML/JSON output for policies: `armadaproject.io/v1` or
    /// `armadaproject.io/v1beta1`. Default: the server's, v1beta1 from today's Armada (a server
    /// without the design dialect, `serve --dialect upstream`, `--lookout-db`), else v1.
    #[arg(long, value_name = "VERSION", value_parser = super::values::api_version)]
    pub api_version: Option<crate::model::ApiVersion>,

    /// Leave out the header line of tables and custom columns.
    #[arg(long)]
    pub no_headers: bool,

    /// Sort by the value at this JSONPath of each object (`.metadata.name`, `{.spec.retryLimit}`).
    #[arg(long, value_name = "PATH")]
    pub sort_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GetOutput {
    Table,
    Wide,
    Yaml,
    Json,
    Name,
    /// `jsonpath=TEMPLATE`.
    JsonPath(String),
    /// `custom-columns=COLUMNS`.
    CustomColumns(String),
}

/// Parses `-o`: the plain formats, or `jsonpath=` / `custom-columns=` with their argument.
/// Lists the plain names as possible values, so help and completions show them.
#[derive(Debug, Clone, Copy)]
pub struct OutputParser;

impl clap::builder::TypedValueParser for OutputParser {
    type Value = GetOutput;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<GetOutput, clap::Error> {
        let text = value.to_string_lossy();
        let parsed = match text.split_once('=') {
            Some(("jsonpath", t)) if !t.is_empty() => Some(GetOutput::JsonPath(t.to_string())),
            Some(("custom-columns", t)) if !t.is_empty() => Some(GetOutput::CustomColumns(t.to_string())),
            Some(_) => None,
            None => match text.as_ref() {
                "table" => Some(GetOutput::Table),
                "wide" => Some(GetOutput::Wide),
                "yaml" => Some(GetOutput::Yaml),
                "json" => Some(GetOutput::Json),
                "name" => Some(GetOutput::Name),
                _ => None,
            },
        };
        parsed.ok_or_else(|| {
            let mut e = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd);
            use clap::error::{ContextKind, ContextValue};
            if let Some(arg) = arg {
                e.insert(ContextKind::InvalidArg, ContextValue::String(arg.to_string()));
            }
            e.insert(ContextKind::InvalidValue, ContextValue::String(text.to_string()));
            e.insert(
                ContextKind::ValidValue,
                ContextValue::Strings(OUTPUT_NAMES.iter().map(|s| s.to_string()).collect()),
            );
            e
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            OUTPUT_NAMES.iter().map(|n| clap::builder::PossibleValue::new(*n)),
        ))
    }
}

const OUTPUT_NAMES: [&str; 7] = ["table", "wide", "yaml", "json", "name", "jsonpath=", "custom-columns="];
