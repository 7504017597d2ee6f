//! `tune`'s flags checked before anything is read ([`check`]), in the same words for a run
//! and for `--emit` (whose jobs run the command later): the varies parsed, `--pick` and `-o`
//! together, a history to search on, `--shard` beside a pick, and the replay's spec.
//!
//! Owns: those checks and what they give ([`Checked`]). Must not: read a file or the
//! environment; what needs the inputs (the documents, the template's varies) is checked by
//! the run once it has them.

use crate::cli::{TuneArgs, TuneOutput};
use crate::commands::replay::checks::{contention_in_one_process, parse_max_compute};
use crate::commands::replay::lookout::SET_LOOKOUT_DB;
use crate::commands::replay::sides::{CandidateFrom, ReplaySpec, SidesSpec};
use crate::commands::replay::source::check_flags;
use crate::error::CliError;
use crate::tune::rank::MaxCompute;
use crate::tune::{parse_vary, Vary};

use super::pick::{parse_pick, Pick};

/// What tune's flags say, checked.
pub struct Checked {
    pub varies: Vec<Vary>,
    pub pick: Option<Pick>,
    /// `None`: `--pick` (its YAML).
    pub format: Option<TuneOutput>,
    pub max_compute: Option<MaxCompute>,
    /// The sides its flags name (the template and the baseline), and its replay.
    pub sides: ReplaySpec,
}

/// The checks of tune's flags before anything is read, in the same words for a run and for
/// `--emit`: what needs the inputs (the documents, the template's varies) is checked by the
/// command once it has them.
pub fn check(args: &TuneArgs) -> Result<Checked, CliError> {
    let replay = &args.replay;
    check_flags(replay, &args.source.files)?;
    let varies = parse_varies(args)?;
    let pick = args.pick.as_deref().map(parse_pick).transpose()?;
    let format = match (pick, args.output) {
        (Some(_), None | Some(TuneOutput::Yaml)) => None,
        (Some(_), Some(_)) => {
            return Err(CliError::usage(
                "`--pick` writes the candidate's documents as YAML: give `-o yaml`",
            ))
        }
        (None, o) => Some(o.unwrap_or(TuneOutput::Table)),
    };
    let history = replay.history.is_some() || replay.lookout_db.is_some();
    if !matches!(pick, Some(Pick::Id(_) | Pick::Template)) && !history {
        let e = CliError::usage("give the history to search on: `--history PATH` or `--lookout-db DSN --queue Q`");
        // `--emit` reads no variable: its jobs get the DSN from a Secret.
        return Err(if args.emit.emit.is_none() {
            e.with_hint(SET_LOOKOUT_DB)
        } else {
            e
        });
    }
    match (pick, replay.shard) {
        // A shard ranks its own jobs only: its recommendation is not the cluster's.
        (Some(Pick::Recommended), Some(shard)) => {
            return Err(CliError::usage(format!(
                "`--pick recommended` with `--shard {shard}`: a shard's jobs alone recommend nothing for the cluster; run every shard with `-o partial`, `retryctl merge` them, then `--pick ID` the candidate it recommends"
            )))
        }
        (Some(Pick::Id(id)), Some(shard)) if history => {
            return Err(CliError::usage(format!(
                "`--pick {id}` with `--shard {shard}` and a history: a shard's jobs alone cannot say what candidate {id} loses against the baseline; give `--pick {id}` without the history and `--shard`, or search without `--shard`"
            )))
        }
        (Some(Pick::Template), Some(shard)) if history => {
            return Err(CliError::usage(format!(
                "`--pick template` with `--shard {shard}` and a history: a shard's jobs alone cannot say what the template's candidate loses against the baseline; give `--pick template` without the history and `--shard`, or search without `--shard`"
            )))
        }
        _ => {}
    }
    let max_compute = args.max_compute.as_deref().map(parse_max_compute).transpose()?;
    let sides = ReplaySpec::of(
        replay,
        SidesSpec::of(
            replay,
            CandidateFrom::Template(args.source.files.clone()),
            args.source.recursive,
            args.categorizer.clone(),
            args.baseline_categorizer.clone(),
        ),
        replay.shard.is_some() || args.emit.emit.is_some(),
    )?;
    if args.source.files.is_empty() {
        return Err(CliError::usage("give the template's documents with `-f PATH`"));
    }
    contention_in_one_process(sides.contention, replay.shard.is_some(), args.emit.emit.is_some())?;
    Ok(Checked {
        varies,
        pick,
        format,
        max_compute,
        sides,
    })
}

/// `--vary`, each parsed.
fn parse_varies(args: &TuneArgs) -> Result<Vec<Vary>, CliError> {
    args.vary
        .iter()
        .map(|v| parse_vary(v))
        .collect::<Result<Vec<Vary>, String>>()
        .map_err(CliError::usage)
}
