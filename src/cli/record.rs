//! The arguments of the verbs that read Lookout's record as it is written: `history`
//! (Lookout's export) and `watch` (the live record, replayed and exported as metrics); the
//! time window of the jobs read from Lookout; their output formats and examples. What they
//! share with the replaying verbs (the engines, the scheduler's settings) is `replay`'s.
//!
//! Owns: those clap types and examples. Must not: do I/O or hold logic.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::emit::WatchEmitArgs;
use super::max_contradictions::MaxContradictions;
use super::replay::{EngineArg, SchedulerArgs, WindowArgs};
use super::values;

// `retryctl history` (docs/lookout.md).
#[derive(Debug, Args)]
// The source group is not required: without either flag, `$LOOKOUT_DB` (docs/lookout.md).
#[command(group(clap::ArgGroup::new("source").args(["lookout_db", "lookout_url"])))]
pub struct HistoryArgs {
    /// Only jobs of this queue (default: every queue's, each job with its own queue: the
    /// week a changed categorizer is compared on).
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
    /// Only jobs of this job set.
    #[arg(long, value_name = "JOBSET")]
    pub jobset: Option<String>,
    /// Only this job (repeatable).
    #[arg(long = "job", value_name = "ID")]
    pub jobs: Vec<String>,
    #[command(flatten)]
    pub window: WindowArgs,
    /// Lookout's PostgreSQL database (`postgresql://user:password@host:5432/lookout`);
    /// without a value, or without --lookout-url either: $LOOKOUT_DB.
    #[arg(long, value_name = "DSN", num_args = 0..=1)]
    pub lookout_db: Option<Option<String>>,
    /// Lookout's REST API (`http://lookout:10000`); auth as for the Armada API.
    #[arg(long, value_name = "URL")]
    pub lookout_url: Option<String>,
    /// The executor's categorizer config as deployed (its `errorCategories`): the hint its
    /// rules append to a run's error text is taken off the texts of the runs it classified.
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<PathBuf>,
    /// Output format: one JSON document a line, or YAML documents.
    #[arg(short = 'o', long, value_enum, default_value_t = HistoryOutput::Jsonl)]
    pub output: HistoryOutput,
    /// Write to this file instead of stdout: written beside it and renamed once complete;
    /// left as it was when the export fails.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Exit 1 after the export when a row was left out because it could not be read (each
    /// is reported on stderr either way).
    #[arg(long)]
    pub strict: bool,
    /// Exit 0 when no job matches (an empty export), instead of 3.
    #[arg(long)]
    pub allow_empty: bool,
}

// `retryctl watch` (docs/watch.md): Lookout's live record replayed under today's policy and
// candidates, exported as Prometheus metrics.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Lookout's PostgreSQL database (`postgresql://user:password@host:5432/lookout`);
    /// without the flag or without a value: $LOOKOUT_DB.
    #[arg(long, value_name = "DSN", num_args = 0..=1)]
    pub lookout_db: Option<Option<String>>,

    /// A queue to watch (repeatable); default: the queues of the Queue documents of
    /// --baseline and -f.
    #[arg(long = "queue", value_name = "QUEUE")]
    pub queues: Vec<String>,

    /// Today's policy: the RetryPolicy and Queue documents the cluster runs (files,
    /// directories), and its categorizer document if it has one.
    #[arg(long, value_name = "PATH", num_args = 1.., required = true)]
    pub baseline: Vec<PathBuf>,

    /// A candidate (a file or a directory), replayed in the shadow of today's policy and
    /// labelled by its base name (repeatable: one candidate each).
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub candidates: Vec<PathBuf>,

    /// Descend into subdirectories of the directories given.
    #[arg(short = 'R', long)]
    pub recursive: bool,

    /// The candidates' categorizer config (the executor's `errorCategories`), for those
    /// whose files hold none; the baseline then needs its own (--baseline-categorizer).
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<PathBuf>,

    /// Today's categorizer config, or `recorded` to keep the categories the runs were
    /// recorded with (never --categorizer's).
    #[arg(long, value_name = "FILE")]
    pub baseline_categorizer: Option<PathBuf>,

    /// The engine of the candidates: design or upstream (default: as the documents'
    /// dialect picks, docs/engines.md).
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineArg>,

    /// The engine of today's policy (default: the same as --engine).
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub baseline_engine: Option<EngineArg>,

    #[command(flatten)]
    pub scheduler: SchedulerArgs,

    /// Serve /metrics, /report and /healthz on this address.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:9464")]
    pub listen: String,

    /// The file the cursor, the jobs counted of the last --lookback and every counter are
    /// kept in (written after each poll); a restart resumes from it.
    #[arg(long, value_name = "FILE", required = true)]
    pub state: PathBuf,

    /// Where a fresh --state starts: jobs that reached a terminal state since this duration
    /// before now (`7d`, `36h`) or this RFC 3339 time (default: now).
    #[arg(long, value_name = "DURATION|TIME")]
    pub since: Option<String>,

    /// How long to wait between polls (a Go duration: `30s`, `1m`).
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub poll: String,

    /// The jobs /report replays and each candidate's verdict is judged on: those that reached
    /// a terminal state within this duration before now (`7d`, `36h`).
    #[arg(long, value_name = "DURATION", default_value = "7d")]
    pub window: String,

    /// How far behind its cursor each poll reads again, for the rows Lookout ingests late (a
    /// Go duration: `5m`, `15m`; at most --window). A job written further behind is not
    /// counted: retryctl_watch_late_jobs_total counts it.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub lookback: String,

    /// How long a job read terminal waits for its runs (Lookout writes them after the job's
    /// state) before it is counted as its record stands (a Go duration: `10m`, `1h`).
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub settle: String,

    /// Below this many jobs with a failed run in the window, a candidate's verdict is
    /// `inconclusive`.
    #[arg(long, allow_negative_numbers = true, value_name = "N", default_value_t = 100)]
    pub min_jobs: u64,

    /// How many jobs (or what share of them, `1%`) of the window may contradict today's
    /// policy before a candidate's verdict is `reject`: past it, today's policy is not what
    /// the cluster runs.
    #[arg(long, allow_negative_numbers = true, value_name = "N|P%", default_value_t = MaxContradictions::default(), value_parser = values::max_contradictions)]
    pub max_contradictions: MaxContradictions,

    #[command(flatten)]
    pub emit: WatchEmitArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryOutput {
    Jsonl,
    Yaml,
}

pub(super) const EX_WATCH: &str = "Examples:
  retryctl watch --baseline current/ --state watch.json          # Lookout at $LOOKOUT_DB
  retryctl watch --baseline current/ -f suggested.yaml --state watch.json --since 7d
  retryctl watch --baseline current/ -f a.yaml -f b/ --queue ml --state s.json --poll 1m
  retryctl watch --baseline current/ -f new/ --state s.json --listen 0.0.0.0:9464 --window 1d";

pub(super) const EX_HISTORY: &str = "Examples:
  retryctl history --lookout-db postgresql://lookout@db/lookout --queue ml --since 7d > week.jsonl
  retryctl history --lookout-url http://lookout:10000 --queue ml --jobset nightly -o yaml
  retryctl simulate -f new/ --baseline old/ --history week.jsonl";
