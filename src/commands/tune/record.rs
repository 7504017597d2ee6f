//! What a search records of its run ([`TuneRun`]): what `merge` needs to print what `tune`
//! prints besides the tallies, and what every format shows of the inputs (the varies, the
//! baseline's origin, the constraints, the command that writes a candidate). Data only: no
//! reading, no replay.
//!
//! Decision docs/tune.md leaves open: the command that writes a candidate names the template
//! files, the scheduler config, the categorizer and the varies (what makes the documents),
//! not the history: `--pick N` needs none.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cli::TuneArgs;
use crate::commands::replay::checks::shell_word;
use crate::commands::replay::sides::{ReplaySpec, Sides};
use crate::output::tune::Skipped;
use crate::replay::baseline_from::BaselineFrom;
use crate::replay::explained::MaxContradictions;
use crate::replay::policy_sets;
use crate::tune::{Template, Values, Vary};

use super::arms::Arms;

/// What `merge` needs to print what `tune` prints, besides the tallies: a partial result's
/// `run` (docs/past-one-machine.md). Every field changes the output, so the fingerprint holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TuneRun {
    /// Always `tune`.
    pub command: String,
    /// What the replay flags said (the template and the baseline, `--queue`,
    /// `--backtest-at`, `--incidents`).
    pub spec: ReplaySpec,
    /// The candidates swept, by id, with their values (in the order of the tallies).
    pub ids: Vec<(u64, Values)>,
    pub skipped: Vec<Skipped>,
    /// Each vary as typed, and its values as typed.
    pub varied: Vec<(String, Vec<String>)>,
    /// Each vary's column in the tables (`Template::columns`).
    pub columns: Vec<String>,
    pub baseline_from: BaselineFrom,
    pub max_lost: u64,
    /// `--max-compute` as typed.
    pub max_compute: Option<String>,
    #[serde(default)]
    pub max_contradictions: MaxContradictions,
    pub pick_command: String,
    pub exit_code: bool,
    /// `--retry-policy` was given.
    pub retry_policy: bool,
    /// The policies a job gets when its queue is not among the documents.
    pub given: Vec<String>,
    /// A side classifies runs with the executor's categorizer: the candidates' collisions
    /// are reported.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub categorized: bool,
    /// `--skip-invalid`: entries not replayed are counted and said, and exit 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_invalid: bool,
    /// What the replay assumed of the scheduler, said on stderr (`SchedulerSettings::assumed`): the
    /// merge says it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
}

impl TuneRun {
    /// The run's record, of what its flags and resolved sides say and of the candidates
    /// `arms` holds (their ids and values, those skipped); their policy sets handed back, for
    /// the sweep.
    pub fn of(
        args: &TuneArgs,
        sides: &Sides,
        template: &Template,
        varies: &[Vary],
        arms: Arms,
    ) -> (TuneRun, Vec<policy_sets::PolicySet>) {
        let replay = &args.replay;
        let varied: Vec<(String, Vec<String>)> = varies
            .iter()
            .map(|v| (v.text.clone(), v.values.iter().map(ToString::to_string).collect()))
            .collect();
        let run = TuneRun {
            command: "tune".into(),
            spec: sides.spec.clone(),
            ids: arms.ids,
            skipped: arms.skipped,
            varied,
            columns: template.columns(varies),
            baseline_from: sides.baseline.from,
            max_lost: args.max_lost,
            max_compute: args.max_compute.clone(),
            max_contradictions: args.max_contradictions,
            pick_command: pick_command(args),
            exit_code: args.exit_code,
            retry_policy: replay.scheduler.retry_policies.is_some(),
            given: arms
                .sets
                .first()
                .map(|a| a.simulator.given().to_vec())
                .unwrap_or_default(),
            categorized: sides.candidate().categorizer.is_some() || sides.baseline.categorizer.is_some(),
            skip_invalid: replay.skip_invalid,
            scheduler: sides.settings.assumed(),
        };
        (run, arms.sets)
    }
}

/// The command that writes a candidate, up to `--pick`: what makes the documents (the
/// template, the scheduler config, the categorizer, the varies), each argument quoted for a POSIX shell.
fn pick_command(args: &TuneArgs) -> String {
    let mut words = vec!["retryctl".to_string(), "tune".to_string()];
    for f in &args.source.files {
        words.push("-f".into());
        words.push(shell_word(&path_text(f)));
    }
    if args.source.recursive {
        words.push("-R".into());
    }
    if let Some(s) = &args.replay.scheduler.scheduler_config {
        words.push("--scheduler-config".into());
        words.push(shell_word(&path_text(s)));
    }
    // A `categorizer:` vary is checked against the file: `--pick` needs it too.
    if let Some(c) = &args.categorizer {
        words.push("--categorizer".into());
        words.push(shell_word(&path_text(c)));
    }
    for v in &args.vary {
        words.push("--vary".into());
        words.push(shell_word(v));
    }
    words.join(" ")
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}
