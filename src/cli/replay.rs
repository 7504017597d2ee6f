//! The arguments of the verbs that replay histories and of what feeds them: `simulate`,
//! `tune` and `suggest`; what they share with `record`'s verbs (`history`, `watch`):
//! [`ReplayArgs`], the Lookout window, the engines and the scheduler's settings; their output
//! formats; their examples. `--emit` is `emit`'s, the value of `--shard` `shard`'s, the
//! `merge` of their shards `merge`'s.
//!
//! Owns: those clap types and examples. Must not: do I/O or hold logic.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::emit::EmitArgs;
use super::max_contradictions::MaxContradictions;
use super::resources::FileSource;
use super::shard::Shard;
use super::values;

// The Lookout window's flags, as `simulate`, `tune` and `suggest` word them: here they go
// with --lookout-db, as --queue and --jobset do (`history`, whose source Lookout always is,
// words them on its own).
const SINCE_WITH_LOOKOUT: &str = "With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)";
const FROM_WITH_LOOKOUT: &str = "With --lookout-db: only jobs submitted at or after this RFC 3339 time";
const TO_WITH_LOOKOUT: &str = "With --lookout-db: only jobs submitted before this RFC 3339 time";

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what_if").args(["baseline", "baseline_from_cluster"])))]
#[command(mut_arg("since", |a| a.help(SINCE_WITH_LOOKOUT)))]
#[command(mut_arg("from", |a| a.help(FROM_WITH_LOOKOUT)))]
#[command(mut_arg("to", |a| a.help(TO_WITH_LOOKOUT)))]
pub struct SimulateArgs {
    /// RetryPolicy and Queue documents (files, directories, `-`).
    #[command(flatten)]
    pub source: FileSource,

    #[command(flatten)]
    pub replay: ReplayArgs,

    /// With --baseline or --baseline-from-cluster: exit 1 when any job changes.
    #[arg(long, requires = "what_if")]
    pub exit_code: bool,

    /// With --baseline or --baseline-from-cluster, -o table: list every changed job
    /// (default: the first 20 of each transition, then `… and N more`).
    #[arg(long, requires = "what_if")]
    pub all_changes: bool,

    /// Take the job's queue and its policies from the server instead of files.
    #[arg(long)]
    pub from_server: bool,

    /// The executor's categorizer config (its `errorCategories`): classify every failed run
    /// with it before the engine decides, as the executor would; with a baseline, the
    /// baseline needs its own (--baseline-categorizer).
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<PathBuf>,

    /// With --baseline or --baseline-from-cluster: the baseline side's categorizer config, or
    /// `recorded` to keep the categories the runs were recorded with (never --categorizer's).
    #[arg(long, value_name = "FILE", requires = "what_if")]
    pub baseline_categorizer: Option<PathBuf>,

    /// Exit 1 when a history contradicts the decisions (not only on failed expectations);
    /// with --lookout-db, also when a row was left out because it could not be read.
    #[arg(long)]
    pub strict: bool,

    /// Output format: html is one self-contained page to share (inline CSS and SVG),
    /// markdown a plan for a pull request comment, partial a shard's part for `retryctl
    /// merge` (with --shard).
    #[arg(short = 'o', long, value_enum, default_value_t = SimulateOutput::Table)]
    pub output: SimulateOutput,

    /// Write the result to this file instead of stdout: written beside it and renamed once
    /// complete; left as it was when no result is written.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    #[command(flatten)]
    pub emit: EmitArgs,
}

// What a replay reads besides its policies: the history (a file or Lookout's database), the
// baseline, the engines, the scheduler's settings and the backtest. Shared by `simulate` and
// `tune`, whose command attributes define the `histories` and `what_if` groups and the window
// flags' help. (A `//` comment: a doc comment here would become the commands' about text.)
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// A FailureHistory file, a JSON Lines file of histories, a directory of them, or `-`.
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,

    /// Replay a real cluster's history straight from Lookout's PostgreSQL database (as
    /// `retryctl history --lookout-db` reads it, no file in between); needs --queue, and
    /// --jobset, --since, --from, --to select as for `history`. With --history, only where
    /// --baseline-from-cluster reads the cluster's policies. Without a value, or without
    /// --history either: $LOOKOUT_DB.
    // What goes with it (`--queue`, the filters, --baseline-from-cluster, --history) is
    // checked by the command (`commands::replay::source::check_flags`), in its words. The
    // command resolves `$LOOKOUT_DB` (`commands::replay::lookout::resolve_replay_dsn`):
    // `Some(Some(DSN))` from then on.
    #[arg(long, value_name = "DSN", num_args = 0..=1)]
    pub lookout_db: Option<Option<String>>,

    /// With --lookout-db: the jobs of this queue.
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,

    /// With --lookout-db: only jobs of this job set.
    #[arg(long, value_name = "JOBSET")]
    pub jobset: Option<String>,

    // With --lookout-db: `--since`, `--from`, `--to` (their help says so: `mut_arg` on the
    // commands).
    #[command(flatten)]
    pub window: WindowArgs,

    /// What-if: also replay under these (old) policies and report what changes.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub baseline: Vec<PathBuf>,

    /// What-if against what the cluster runs: the baseline is the retry policies and queue
    /// attachments stored in the --lookout-db database.
    #[arg(long)]
    pub baseline_from_cluster: bool,

    /// Which engine decides: the design (docs/engines.md) or what upstream Armada ships today (first
    /// policy only, categories only, preemption terminal, no backoff). Default: the policies'
    /// dialect: upstream when every RetryPolicy document is armadaproject.io/v1beta1, else
    /// design; with --from-server against a server without the dialect header, upstream.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineArg>,

    /// The engine of the baseline side (default: the same as --engine).
    #[arg(long, value_enum, value_name = "ENGINE", requires = "what_if")]
    pub baseline_engine: Option<EngineArg>,

    #[command(flatten)]
    pub scheduler: SchedulerArgs,

    /// Check the estimates on this history: the trials of jobs submitted before TIME (RFC
    /// 3339) fit the rates, those of jobs submitted at or after it test them (every job needs
    /// `job.submittedAt`).
    #[arg(long, value_name = "TIME")]
    pub backtest_at: Option<String>,

    /// Incident windows: `auto` finds the hours in which far more jobs failed than the
    /// history's own rate explains (an outage) and leaves their failed runs out of what is
    /// learned (the estimates' rates, suggest's signatures); `off` finds none (--incident's
    /// windows still count).
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub incidents: IncidentsArg,

    /// A window to leave out of what is learned, by hand (a change window, an outage you
    /// know of): `FROM/TO`, two RFC 3339 times; repeatable; merged with a detected window it
    /// overlaps.
    #[arg(long = "incident", value_name = "FROM/TO")]
    pub incident: Vec<String>,

    /// Retries while others waited (docs/contention.md): `on` sums, from the record's times,
    /// what the retries ran while other jobs' requests waited in their pool, for the record
    /// and each side, and says it; `off` leaves the section out and the sums undone; `auto`,
    /// the default, is `on` in one process and `off` in a `simulate` or `tune` shard
    /// (`--shard`, `--emit`), whose merged output says it was not computed (`suggest`
    /// compares in its merge, one process).
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub contention: ContentionArg,

    /// Replay only the jobs of shard I of N (`0/4`: files by byte range, stdin by FNV-1a of
    /// the job id, Lookout by a hash in its query, which needs `--to`); with `-o partial`,
    /// write the shard's part of the answer, which `retryctl merge` adds up.
    #[arg(long, value_name = "I/N", value_parser = values::shard)]
    pub shard: Option<Shard>,

    /// Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout
    /// window), instead of 3.
    #[arg(long)]
    pub allow_empty: bool,

    /// Read past the job lines of the history that cannot be read (each said as a warning),
    /// say how many, and exit 0; without it they make the exit status 3.
    #[arg(long)]
    pub skip_invalid: bool,
}

/// `--contention`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContentionArg {
    Auto,
    On,
    Off,
}

/// `--incidents`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IncidentsArg {
    Auto,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    Design,
    Upstream,
}

impl From<EngineArg> for crate::engine::EngineKind {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::Design => crate::engine::EngineKind::Design,
            EngineArg::Upstream => crate::engine::EngineKind::Upstream,
        }
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what_if").args(["baseline", "baseline_from_cluster"])))]
#[command(mut_arg("since", |a| a.help(SINCE_WITH_LOOKOUT)))]
#[command(mut_arg("from", |a| a.help(FROM_WITH_LOOKOUT)))]
#[command(mut_arg("to", |a| a.help(TO_WITH_LOOKOUT)))]
// tune takes no --from-server: its policies are the template's.
#[command(mut_arg("engine", |a| a.help("Which engine the candidates run under: the design (docs/engines.md) or what upstream Armada ships today (first policy only, categories only, preemption terminal, no backoff). Default: the policies' dialect: upstream when every RetryPolicy document is armadaproject.io/v1beta1, else design")))]
pub struct TuneArgs {
    /// The template: the RetryPolicy and Queue documents the candidates are made from (files,
    /// directories, `-`). Without --baseline, also the baseline, as written.
    #[command(flatten)]
    pub source: FileSource,

    /// One scalar field of one policy, varied: `NAME:PATH=VALUES`, PATH as `explain` names it
    /// (`ml:spec.retryLimit=0..10`, `ml:spec.rules[1].action=Retry,Fail`,
    /// `ml:spec.backoff.initialDelay=0s,30s,5m`, `infra:retryLimit=1..5/2`, `unset`), or
    /// `scheduler:PATH` for the scheduler config, `categorizer:PATH` for --categorizer's
    /// (`categorizer:errorCategories.enabled=true,false`). The candidates are every
    /// combination.
    #[arg(long = "vary", value_name = "NAME:PATH=VALUES", required = true)]
    pub vary: Vec<String>,

    #[command(flatten)]
    pub replay: ReplayArgs,

    /// The executor's categorizer config (its `errorCategories`): every candidate classifies
    /// failed runs with it, as `simulate --categorizer` does; `--vary 'categorizer:PATH=…'`
    /// varies its fields (`errorCategories.categories[0].action=Retain,Delete`).
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<PathBuf>,

    /// The baseline side's categorizer config, or `recorded` to keep the categories the runs
    /// were recorded with (without --baseline: --categorizer, as written; with one, needed
    /// when --categorizer is given).
    #[arg(long, value_name = "FILE")]
    pub baseline_categorizer: Option<PathBuf>,

    /// Recommend no candidate that loses more than N jobs the baseline saved (Succeeded →
    /// Failed).
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 0)]
    pub max_lost: u64,

    /// Recommend no candidate whose cost (compute added − removed + expected) is over this: a
    /// duration (`10h`), or a percentage of the baseline's recorded compute (`5%`).
    #[arg(long, value_name = "DURATION|PERCENT%")]
    pub max_compute: Option<String>,

    /// Recommend nothing when more jobs than this contradict the baseline (it is then not
    /// what the cluster ran): a number of jobs (`5`), or a percentage of the jobs compared.
    #[arg(long, allow_negative_numbers = true, value_name = "N|P%", default_value_t = MaxContradictions::default(), value_parser = values::max_contradictions)]
    pub max_contradictions: MaxContradictions,

    /// Refuse (exit 2, before any replay) a search of more candidates than N.
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 10_000)]
    pub max_candidates: u64,

    /// Print candidate ID's documents (`recommended`: the recommended one's; `template`: the
    /// one whose varied values are the template's own, exit 1 when none is) as YAML, ready for
    /// `retryctl apply -f`; a numbered one needs no history (given one, the search runs first,
    /// and a candidate that loses a job the baseline saves or breaks a constraint is refused,
    /// exit 1, unless --force).
    #[arg(long, value_name = "ID|template|recommended")]
    pub pick: Option<String>,

    /// With --pick ID (or template) and a history: write the candidate even when it loses a job the
    /// baseline saves or breaks a constraint (a warning says which).
    #[arg(long, requires = "pick")]
    pub force: bool,

    /// Exit 1 when a candidate is recommended (a change worth making), with or without --pick.
    #[arg(long)]
    pub exit_code: bool,

    /// Output format: html is one self-contained page (the frontier as a chart), markdown a
    /// table for a pull request, partial a shard's part for `retryctl merge` (with --shard);
    /// --pick writes yaml.
    #[arg(short = 'o', long, value_enum, value_name = "OUTPUT")]
    pub output: Option<TuneOutput>,

    /// Write the result to this file instead of stdout: written beside it and renamed once
    /// complete; left as it was when no result is written.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    #[command(flatten)]
    pub emit: EmitArgs,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what_if").args(["baseline", "baseline_from_cluster"])))]
#[command(mut_arg("since", |a| a.help(SINCE_WITH_LOOKOUT)))]
#[command(mut_arg("from", |a| a.help(FROM_WITH_LOOKOUT)))]
#[command(mut_arg("to", |a| a.help(TO_WITH_LOOKOUT)))]
#[command(mut_arg("queue", |a| a.help("With --lookout-db: the jobs of this queue; with -o policy, also print this Queue with the proposal first in its retryPolicies")))]
#[command(mut_arg("baseline", |a| a.help("The policies the cluster runs today (files, directories): what the proposal is compared with, and whose first policy gives its defaultAction and retryLimit (none: no policy)")))]
#[command(mut_arg("shard", |a| a.help("Learn from shard I of N's share of the history only (`0/4`: a file or directory by byte range; not stdin nor --lookout-db, which its merge could not read again); with -o partial, write what it learned for `retryctl merge`, which proposes and compares over the whole history")))]
#[command(mut_arg("engine", |a| a.help("The dialect of the proposal and the engine that replays it: design (one RetryPolicy) or upstream (what Armada ships today: an executor categorizer config and a v1beta1 policy). Default: the baseline's dialect (design without a baseline)")))]
#[command(mut_arg("backtest_at", |a| a.help("Learn from the jobs submitted before TIME (RFC 3339) and report the proposal's effect on the jobs submitted at or after it alone (every job needs `job.submittedAt`)")))]
pub struct SuggestArgs {
    #[command(flatten)]
    pub replay: ReplayArgs,

    /// The executor's categorizer config as deployed (its `errorCategories`): the baseline
    /// classifies failed runs with it; with --engine upstream the proposed categorizer keeps
    /// its categories after the new ones.
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<PathBuf>,

    /// A signature needs this many trials (failed runs followed by another run) for a rule
    /// of its own.
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 20)]
    pub min_trials: u64,

    /// A retry pays when at least this share of trials succeeds (0 < P < 1): the limit is
    /// the deepest depth that pays; a signature none of whose depths pays gets Fail.
    #[arg(long, allow_negative_numbers = true, value_name = "P", default_value_t = 0.05)]
    pub futile: f64,

    /// The largest limit proposed (1 to 10000).
    #[arg(long, allow_negative_numbers = true, value_name = "L", default_value_t = 5)]
    pub max_limit: u32,

    /// A depth with fewer than 5 trials of its own reads the signature's overall share
    /// instead of ending the limit (every such limit is marked `extrapolated`).
    #[arg(long)]
    pub extrapolate: bool,

    /// With --engine upstream: also write the proposed executor config alone to FILE, as
    /// deployed (the deployed file's other keys kept), to roll out before the policy.
    #[arg(long, value_name = "FILE")]
    pub executor_config: Option<PathBuf>,

    /// The shape of --executor-config's FILE: `config` (the executor's config file) or
    /// `helm` (the executor chart's values, the config under `applicationConfig:`).
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "config",
        requires = "executor_config"
    )]
    pub executor_config_format: ExecutorConfigFormat,

    /// With --engine upstream: keep every category of today's executor config as it is (no
    /// category split, no action changed), adding categories only after them, for failures
    /// none of them takes: the way past a split that costs another queue its jobs. With
    /// nothing added, the config written is today's file as it is.
    #[arg(long)]
    pub keep_categorizer: bool,

    /// Reject the proposal when more jobs than this contradict today's policy (it is then
    /// not what the cluster ran): a number of jobs (`5`), or a percentage of the jobs compared.
    #[arg(long, allow_negative_numbers = true, value_name = "N|P%", default_value_t = MaxContradictions::default(), value_parser = values::max_contradictions)]
    pub max_contradictions: MaxContradictions,

    // Gone: suggest exits 1 on `reject` (docs/reference/suggest.md "Exit status"). Kept hidden
    // so that a script that still gives it is told so (exit 2), not left to guess.
    #[arg(long, hide = true)]
    pub exit_code: bool,

    /// The proposed policy's name.
    #[arg(long, value_name = "NAME", default_value = "suggested")]
    pub name: String,

    /// Output format: html is one self-contained page, markdown a report for a pull
    /// request, policy the proposed documents alone (ready for `validate`, `tune -f` and
    /// `apply -f`), partial a shard's learning for `retryctl merge` (with --shard).
    #[arg(short = 'o', long, value_enum, value_name = "OUTPUT", default_value = "table")]
    pub output: SuggestOutput,

    /// Write the result to this file instead of stdout: written beside it and renamed once
    /// complete; left as it was when no result is written.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    #[command(flatten)]
    pub emit: EmitArgs,
}

/// `suggest --executor-config-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExecutorConfigFormat {
    Config,
    Helm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SuggestOutput {
    Table,
    Json,
    Yaml,
    Html,
    Markdown,
    Policy,
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TuneOutput {
    Table,
    Json,
    Yaml,
    Html,
    Markdown,
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimulateOutput {
    Table,
    Json,
    Yaml,
    Jsonl,
    Html,
    Markdown,
    Partial,
}

pub(super) const EX_SIMULATE: &str = "Examples:\n  retryctl simulate -f policies/ --history history.yaml
  retryctl simulate -f policies/ --history histories/ -o json
  retryctl simulate --from-server --history history.yaml
  retryctl simulate -f policies/ --engine upstream --history week.jsonl   # as Armada decides today
  retryctl simulate -f new/ --baseline old/ --history week.jsonl --exit-code
  retryctl simulate -f new/ --baseline old/ --history week.jsonl -o html > plan.html
  retryctl simulate -f new/ --lookout-db $LOOKOUT_DB --queue ml --since 7d   # from Lookout
  retryctl simulate -f new/ --lookout-db $LOOKOUT_DB --queue ml --baseline-from-cluster --since 7d
  retryctl simulate -f new/ --baseline old/ --history year.jsonl --shard 0/8 -o partial > p0.json";

pub(super) const EX_TUNE: &str = "Examples:\n  retryctl tune -f p/ --history week.jsonl --vary ml:spec.retryLimit=0..10
  retryctl tune -f p/ --history h.jsonl --vary ml:retryLimit=1..5 --vary ml:defaultAction=Retry,Fail
  retryctl tune -f p/ --lookout-db $LOOKOUT_DB --queue ml --since 7d --vary ml:retryLimit=0..6
  retryctl tune -f p/ --history week.jsonl --vary ml:spec.retryLimit=0..10 -o html > tune.html
  retryctl tune -f p/ --vary ml:spec.retryLimit=0..10 --pick 4 -o yaml > picked.yaml
  retryctl tune -f p/ --history y.jsonl --vary ml:retryLimit=0..9 --shard 3/8 -o partial > p3";

pub(super) const EX_SUGGEST: &str = "Examples:\n  retryctl suggest --history week.jsonl --baseline policies/
  retryctl suggest --history week.jsonl --baseline policies/ -o policy > suggested.yaml
  retryctl suggest --lookout-db $DB --queue ml --baseline-from-cluster --engine upstream
  retryctl suggest --history month.jsonl --baseline p/ --backtest-at 2026-11-15T00:00:00Z
  retryctl suggest --history week.jsonl --baseline policies/ -o html > suggest.html
  retryctl suggest --history year.jsonl --baseline p/ --shard 0/4 -o partial > s0.json";

// The time window of the jobs read from Lookout (`history`, `simulate --lookout-db`), on
// `job.submitted`.
#[derive(Debug, Args, Clone, Default)]
pub struct WindowArgs {
    /// Only jobs submitted within this duration before now (`7d`, `36h`).
    #[arg(long, value_name = "DURATION", conflicts_with_all = ["from", "to"])]
    pub since: Option<String>,
    /// Only jobs submitted at or after this RFC 3339 time.
    #[arg(long, value_name = "TIME")]
    pub from: Option<String>,
    /// Only jobs submitted before this RFC 3339 time.
    #[arg(long, value_name = "TIME")]
    pub to: Option<String>,
}

// The scheduler's settings every replaying verb and `watch` take: its config file and the
// flags that override it. (Not a doc comment: a flattened struct's would become the
// command's about.)
#[derive(Debug, Clone, Args)]
pub struct SchedulerArgs {
    /// An Armada scheduler config file (its `scheduling.retryPolicy` block is used).
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,

    /// Policies for jobs whose queue is not among the documents (comma separated, in order).
    #[arg(long = "retry-policy", value_delimiter = ',', value_name = "NAMES")]
    pub retry_policies: Option<Vec<String>>,

    /// Override the scheduler's globalMaxRetries.
    #[arg(long, allow_negative_numbers = true, value_name = "N")]
    pub global_max_retries: Option<u32>,

    /// Override the scheduler's defaultPolicyName.
    #[arg(long, value_name = "NAME")]
    pub default_policy: Option<String>,
}
