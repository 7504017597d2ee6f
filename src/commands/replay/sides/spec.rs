//! What a verb's command line says, before anything is read: of its sides ([`SidesSpec`]:
//! where the baseline's and each of its N candidates' documents come from, which flag names
//! which side's categorizer, the engines, the scheduler's settings), and of its replay
//! ([`ReplaySpec`]: those sides, `--queue`, `--backtest-at`, `--incidents` and `--contention`,
//! read once).
//! Each replay verb builds one `ReplaySpec` from its arguments, and every partial records it
//! whole, so that `merge` resolves the same sides with the same function ([`super::resolve`])
//! and never parses a flag again.
//!
//! Owns: those records and the parse of the values they hold (`--backtest-at`,
//! `--incidents`). Must not: read a file.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::cli::{ContentionArg, ReplayArgs, WatchArgs};
use crate::engine::EngineKind;
use crate::error::CliError;
use crate::model::failure_history::Timestamp;
use crate::replay::source::Overrides;

use crate::commands::replay::checks::{parse_backtest_at, parse_incidents};
use crate::replay::incidents::{Look, Setting};

/// Where the candidate side's documents come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CandidateFrom {
    /// `simulate -f`: the candidate's policy set, read from these files (none: no policy).
    Files(Vec<PathBuf>),
    /// `simulate --from-server`: the server's policies and queues.
    Server,
    /// `tune -f`: the template the candidates are made from; without a baseline it is the
    /// baseline too, as written, its categorizer included.
    Template(Vec<PathBuf>),
    /// `suggest`: the proposal it builds, in its baseline's dialect.
    Proposed,
    /// `watch -f PATH…`: each file or directory one candidate, named by its base name.
    Each(Vec<PathBuf>),
}

impl CandidateFrom {
    /// What the verb did with the history, for "nothing was DONE" after invalid documents.
    pub fn done(&self) -> &'static str {
        match self {
            CandidateFrom::Template(_) => "tuned",
            CandidateFrom::Each(_) => "watched",
            _ => "simulated",
        }
    }
}

/// `--backtest-at`, as typed and as read.
#[derive(Debug, Clone, PartialEq)]
pub struct BacktestAt {
    pub text: String,
    pub at: Timestamp,
}

impl BacktestAt {
    /// `text` read as `--backtest-at`'s value (a usage error otherwise).
    pub fn parse(text: &str) -> Result<BacktestAt, CliError> {
        Ok(BacktestAt {
            text: text.to_string(),
            at: parse_backtest_at(text)?,
        })
    }
}

impl Serialize for BacktestAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for BacktestAt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BacktestAt, D::Error> {
        let text = String::deserialize(d)?;
        BacktestAt::parse(&text).map_err(|_| serde::de::Error::custom("`backtestAt` is not an RFC 3339 time"))
    }
}

/// A verb's sides as its arguments name them, the baseline and N candidates
/// (docs/categorizer.md "Replaying with a categorizer", docs/engines.md "Which engine
/// decides").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SidesSpec {
    pub candidate: CandidateFrom,
    /// `-R`: the sides' directories read recursively.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recursive: bool,
    /// The candidate's categorizer flag: `--categorizer FILE` (`simulate`, `tune`).
    pub categorizer: Option<PathBuf>,
    /// `--baseline FILES`.
    pub baseline: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline_from_cluster: bool,
    /// The baseline's categorizer flag: `--baseline-categorizer FILE|recorded`, or
    /// `suggest`'s `--categorizer` (the deployed config, [`SidesSpec::baseline_categorizer_flag`]).
    pub baseline_categorizer: Option<PathBuf>,
    /// `--engine`, `--baseline-engine`.
    pub engine: Option<EngineKind>,
    pub baseline_engine: Option<EngineKind>,
    pub scheduler_config: Option<PathBuf>,
    /// `--retry-policy`: the policies of a job whose queue is among no documents.
    pub retry_policies: Option<Vec<String>>,
    pub global_max_retries: Option<u32>,
    pub default_policy: Option<String>,
}

/// What the replay verbs' shared flags say, read once per command line: the sides, `--queue`,
/// `--backtest-at` and `--incidents` (with the incidents' [`Look`] made from them once).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplaySpec {
    pub sides: SidesSpec,
    /// `--queue`.
    pub queue: Option<String>,
    pub backtest_at: Option<BacktestAt>,
    /// `--incidents`, `--incident FROM/TO` (docs/reference/suggest.md "Incidents").
    #[serde(default, skip_serializing_if = "Setting::is_default")]
    pub incidents: Setting,
    /// `--contention`: retries while others waited (docs/contention.md) summed and said.
    #[serde(default)]
    pub contention: bool,
    /// `--contention auto` (the default) in a shard: not summed, and the output says it was
    /// not computed where the section would be (docs/past-one-machine.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contention_sharded: bool,
    /// How a replay looks for incidents, made from `incidents` once, when first asked (a
    /// spec read back from a partial makes it there).
    #[serde(skip)]
    look: std::sync::OnceLock<Look>,
}

impl PartialEq for ReplaySpec {
    /// What the command line said (the `Look` is made of it).
    fn eq(&self, o: &ReplaySpec) -> bool {
        (
            &self.sides,
            &self.queue,
            &self.backtest_at,
            &self.incidents,
            (self.contention, self.contention_sharded),
        ) == (
            &o.sides,
            &o.queue,
            &o.backtest_at,
            &o.incidents,
            (o.contention, o.contention_sharded),
        )
    }
}

impl ReplaySpec {
    fn new(
        sides: SidesSpec,
        queue: Option<String>,
        backtest_at: Option<BacktestAt>,
        incidents: Setting,
        (contention, contention_sharded): (bool, bool),
    ) -> ReplaySpec {
        ReplaySpec {
            sides,
            queue,
            backtest_at,
            incidents,
            contention,
            contention_sharded,
            look: std::sync::OnceLock::new(),
        }
    }

    /// The replay `replay`'s flags name, of the sides `sides`; `sharded`: the command runs as
    /// shards (`--shard`, `--emit`) whose answer is a merge of sums, where `--contention
    /// auto` leaves the section out and says so (`suggest` compares in one process, its merge:
    /// never sharded). `Err`: a value that does not read (`--backtest-at`, `--incident`), a
    /// usage error.
    pub fn of(replay: &ReplayArgs, sides: SidesSpec, sharded: bool) -> Result<ReplaySpec, CliError> {
        let contention = match replay.contention {
            ContentionArg::On => (true, false),
            ContentionArg::Off => (false, false),
            ContentionArg::Auto => (!sharded, sharded),
        };
        Ok(ReplaySpec::new(
            sides,
            replay.queue.clone(),
            replay.backtest_at.as_deref().map(BacktestAt::parse).transpose()?,
            parse_incidents(replay.incidents, &replay.incident)?,
            contention,
        ))
    }

    /// `watch`'s: its sides ([`SidesSpec::of_watch`]), no queue of its own, no backtest, no
    /// incidents looked for, no contention swept (its gauges read Lookout's present).
    pub fn of_watch(args: &WatchArgs) -> ReplaySpec {
        ReplaySpec::new(
            SidesSpec::of_watch(args),
            None,
            None,
            Setting::default(),
            (false, false),
        )
    }

    /// The backtest's time, as read.
    pub fn backtest_time(&self) -> Option<Timestamp> {
        self.backtest_at.as_ref().map(|b| b.at)
    }

    /// How a replay of this spec looks for incidents, before anything is read.
    pub fn look(&self) -> &Look {
        self.look.get_or_init(|| Look::of(&self.incidents))
    }

    /// `--backtest-at` as typed (empty without one: the refusals name it).
    pub fn backtest_text(&self) -> &str {
        self.backtest_at.as_ref().map_or("", |b| b.text.as_str())
    }
}

impl SidesSpec {
    /// The sides `replay`'s flags name, with the candidate from `candidate` and the
    /// categorizer flags each verb has: `categorizer` the candidate's, `baseline_categorizer`
    /// the baseline's.
    pub fn of(
        replay: &ReplayArgs,
        candidate: CandidateFrom,
        recursive: bool,
        categorizer: Option<PathBuf>,
        baseline_categorizer: Option<PathBuf>,
    ) -> SidesSpec {
        SidesSpec {
            candidate,
            recursive,
            categorizer,
            baseline: replay.baseline.clone(),
            baseline_from_cluster: replay.baseline_from_cluster,
            baseline_categorizer,
            engine: replay.engine.map(EngineKind::from),
            baseline_engine: replay.baseline_engine.map(EngineKind::from),
            scheduler_config: replay.scheduler.scheduler_config.clone(),
            retry_policies: replay.scheduler.retry_policies.clone(),
            global_max_retries: replay.scheduler.global_max_retries,
            default_policy: replay.scheduler.default_policy.clone(),
        }
    }

    /// `watch`'s sides: today's (`--baseline`, required) and one candidate per `-f`, with the
    /// same flags for categorizers, engines and the scheduler as the replay verbs.
    pub fn of_watch(args: &WatchArgs) -> SidesSpec {
        SidesSpec {
            candidate: CandidateFrom::Each(args.candidates.clone()),
            recursive: args.recursive,
            categorizer: args.categorizer.clone(),
            baseline: args.baseline.clone(),
            baseline_from_cluster: false,
            baseline_categorizer: args.baseline_categorizer.clone(),
            engine: args.engine.map(EngineKind::from),
            baseline_engine: args.baseline_engine.map(EngineKind::from),
            scheduler_config: args.scheduler.scheduler_config.clone(),
            retry_policies: args.scheduler.retry_policies.clone(),
            global_max_retries: args.scheduler.global_max_retries,
            default_policy: args.scheduler.default_policy.clone(),
        }
    }

    /// Whether the replay compares against a baseline: `--baseline` or
    /// `--baseline-from-cluster`.
    pub fn what_if(&self) -> bool {
        !self.baseline.is_empty() || self.baseline_from_cluster
    }

    /// The flag that names the baseline's categorizer: `suggest`'s `--categorizer` is the
    /// deployed config, the baseline's.
    pub fn baseline_categorizer_flag(&self) -> &'static str {
        match self.candidate {
            CandidateFrom::Proposed => "--categorizer",
            _ => "--baseline-categorizer",
        }
    }

    /// `--global-max-retries` / `--default-policy` (the defaults are the engine's, known once
    /// the sides are: `settings::SchedulerSettings::for_engine`).
    pub fn overrides(&self) -> Overrides {
        Overrides {
            global_max_retries: self.global_max_retries,
            default_policy: self.default_policy.clone(),
            defaults: None,
        }
    }
}
