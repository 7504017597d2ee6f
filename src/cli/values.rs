//! The value parsers several verbs share: a flag's value read into the model's type while
//! the command line is parsed, refused in the house's words (`error::CliError`, which `main`
//! reports as every other error).
//!
//! Owns: those parsers. Must not: do I/O.

use super::max_contradictions::MaxContradictions;
use super::shard::Shard;
use crate::error::CliError;
use crate::model::ApiVersion;

/// `--max-contradictions`' value (tune, suggest).
pub fn max_contradictions(value: &str) -> Result<MaxContradictions, CliError> {
    MaxContradictions::parse(value).ok_or_else(|| {
        CliError::usage(format!(
            "invalid `--max-contradictions` `{value}`: expected a number of jobs such as `5` or a percentage of the jobs compared such as `1%`"
        ))
    })
}

/// `--api-version`'s value (get, diff, explain).
pub fn api_version(value: &str) -> Result<ApiVersion, CliError> {
    ApiVersion::parse(value).ok_or_else(|| {
        CliError::usage(format!(
            "invalid `--api-version` `{value}`: expected `armadaproject.io/v1` or `armadaproject.io/v1beta1`"
        ))
    })
}

/// `--shard`'s value (simulate, tune, suggest): its own words alone, not after clap's
/// `invalid value … for …` too.
pub fn shard(value: &str) -> Result<Shard, CliError> {
    Shard::parse(value).map_err(CliError::usage)
}
