//! The command line, as clap types and help text only.
//!
//! Owns: every flag, argument, alias and help line of `retryctl`, and [`parse`]. Must not: do
//! I/O or hold logic. What reads these types: `main` parses and hands the [`Cli`] to `app`,
//! which keeps the global flags in the `Context` every command gets and passes the
//! [`Command`] to `commands::dispatch`; each command reads its own arguments (`SimulateArgs`…);
//! `connection` resolves the connection flags with the environment and the armadactl config
//! file; `output` takes its format and colour choices from here; `replay` and `lookout` take
//! the value of `--shard`, [`Shard`], whose jobs `replay::shard` decides. Below it only
//! `engine`: an [`EngineArg`] becomes an `engine::EngineKind`.

mod shard;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use shard::{Shard, MAX_SHARDS};

/// The parsed command line. Its definition is [`command`]: the top level is written out in
/// [`top_level`] rather than derived, so that [`parse`] can give it only the subcommand the
/// command line names.
#[derive(Debug, Args)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl clap::CommandFactory for Cli {
    fn command() -> clap::Command {
        command()
    }

    fn command_for_update() -> clap::Command {
        command()
    }
}

impl Parser for Cli {}

/// The top level without its subcommands: name, version (every subcommand's `--version`
/// too), about, examples and the global flags.
fn top_level() -> clap::Command {
    let top = clap::Command::new("retryctl")
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .max_term_width(100)
        .about("Author, validate, push and simulate Armada retry policies")
        .long_about(
            "Author, validate, push and simulate Armada retry policies.\n\n\
             retryctl talks to an Armada server over its REST API or its gRPC API (or to \
             its own `retryctl serve`, which answers both), validates RetryPolicy and Queue \
             documents offline, and replays failure histories through the same decision rules \
             as the scheduler.",
        )
        .after_help(EX_ROOT)
        .subcommand_required(true)
        .arg_required_else_help(true);
    GlobalArgs::augment_args(top)
}

#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Armada server: a REST base URL (http(s)://) or a gRPC address (grpc://, grpcs://)
    /// (default: $ARMADA_URL, the context's `armadaRestUrl` or gRPC `armadaUrl`, then
    /// http://localhost:8080).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        alias = "armadaUrl",
        value_name = "URL"
    )]
    pub armada_url: Option<String>,

    /// Context of the config file to use instead of its `currentContext`.
    #[arg(
        short = 'c',
        long,
        global = true,
        help_heading = "Global options",
        value_name = "NAME"
    )]
    pub context: Option<String>,

    /// Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml).
    #[arg(long, global = true, help_heading = "Global options", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Timeout of each request to the server, as a duration (`10s`, `500ms`).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        default_value = "10s",
        value_name = "DURATION"
    )]
    pub timeout: String,

    // `serve` defines its own `--token`/`--token-file` (the tokens it accepts), with the same
    // ids: clap copies a global flag only into subcommands that lack its id, so `serve`
    // keeps its own definitions.
    /// Bearer token to send; wins over every other credential (`--token-file` keeps it out of
    /// `ps`).
    #[arg(long, global = true, help_heading = "Global options", value_name = "TOKEN")]
    pub token: Option<String>,

    /// Send the bearer token held in FILE (one line).
    #[arg(long, global = true, help_heading = "Global options", value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Also trust the CA certificates of this PEM file for `https://` (default: the context's
    /// `certificateAuthority`).
    #[arg(long, global = true, help_heading = "Global options", value_name = "FILE")]
    pub certificate_authority: Option<PathBuf>,

    /// Do not verify the server's TLS certificate (insecure: warns on every run).
    #[arg(long, global = true, help_heading = "Global options")]
    pub insecure_skip_tls_verify: bool,

    /// Log each request and its status to stderr (credentials are never printed).
    #[arg(short = 'v', long, global = true, help_heading = "Global options", action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// When to use colour. `auto` colours when stderr is a terminal and NO_COLOR is unset.
    #[arg(long, global = true, help_heading = "Global options", value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

/// The global flags that only matter when a command talks to a server.
const SERVER_FLAGS: [&str; 9] = [
    "armada_url",
    "context",
    "config",
    "timeout",
    "token",
    "token_file",
    "certificate_authority",
    "insecure_skip_tls_verify",
    "verbose",
];

/// Commands that never talk to a server: their help does not show [`SERVER_FLAGS`] (still
/// accepted, as global flags are, so a shell alias that adds `--context` keeps working).
const OFFLINE_COMMANDS: [&str; 8] = [
    "validate",
    "completion",
    "explain",
    "schema",
    "serve",
    "tune",
    "suggest",
    "merge",
];

/// The command line as clap parses it: the top level and every subcommand, with the server
/// flags hidden on offline commands. Completions are generated from it, and `main` parses
/// with it when the command line does not start with a subcommand's name (see
/// [`command_for`]). Nothing is built here: clap builds a subcommand only when the command
/// line enters it.
pub fn command() -> clap::Command {
    let mut cmd = Command::augment_subcommands(top_level());
    // In place, not with `mut_subcommand`, which would move the subcommand to the end.
    for sub in cmd.get_subcommands_mut() {
        *sub = with_arguments(std::mem::take(sub));
    }
    cmd
}

/// The definition to parse `args` (program name first) with. When the first argument is a
/// subcommand's name: the top level with only that subcommand, whose arguments alone are
/// defined (BENCHMARKS.md start-up bar; BENCHMARKS.md "Start-up"): defining every command's
/// arguments, then copying each global flag into every subcommand when clap builds the top
/// level, and freeing it all, was two fifths of a `validate`'s instructions. Anything else
/// (no argument, a flag first, a misspelt or unknown name, `help`) gets the whole
/// [`command`]: the top level's help, its errors and suggestions list every subcommand. The
/// outcome is the same either way (tested).
fn command_for(args: &[std::ffi::OsString]) -> clap::Command {
    let entered = args.get(1).and_then(|a| a.to_str()).and_then(|name| {
        // Names, abouts and examples only: [`Command`] defers the arguments.
        let mut all = Command::augment_subcommands(clap::Command::new("retryctl"));
        // Subcommands have no aliases at the top level: only their own names are found.
        all.find_subcommand_mut(name).map(std::mem::take)
    });
    match entered {
        Some(sub) => top_level().subcommand(with_arguments(sub)),
        None => command(),
    }
}

/// A subcommand of [`Command`] with its arguments defined now, before its parent copies the
/// global flags into it: they stay after its own arguments, as completion scripts list them.
/// (Left to [`Command`]'s deferred step, they would be defined after the global flags.)
/// Then, on an offline command, the deferred step hides [`SERVER_FLAGS`]: the copies are
/// there by then.
fn with_arguments(sub: clap::Command) -> clap::Command {
    let define: fn(clap::Command) -> clap::Command = match sub.get_name() {
        "validate" => ValidateArgs::augment_args,
        "create" => CreateArgs::augment_args,
        "get" => GetArgs::augment_args,
        "update" => UpdateArgs::augment_args,
        "apply" => ApplyArgs::augment_args,
        "diff" => DiffArgs::augment_args,
        "delete" => DeleteArgs::augment_args,
        "simulate" => SimulateArgs::augment_args,
        "tune" => TuneArgs::augment_args,
        "suggest" => SuggestArgs::augment_args,
        "merge" => MergeArgs::augment_args,
        "serve" => ServeArgs::augment_args,
        "completion" => CompletionArgs::augment_args,
        "config" => ConfigArgs::augment_args,
        "version" => VersionArgs::augment_args,
        "describe" => DescribeArgs::augment_args,
        "explain" => ExplainArgs::augment_args,
        "schema" => SchemaArgs::augment_args,
        "history" => HistoryArgs::augment_args,
        // A command missing here keeps the derived deferred step: the same command, but the
        // checked-in completions list its global flags first (their test fails).
        _ => return sub,
    };
    let sub = define(sub);
    if OFFLINE_COMMANDS.contains(&sub.get_name()) {
        sub.defer(hide_server_flags)
    } else {
        sub.defer(|sub| sub)
    }
}

/// Hides [`SERVER_FLAGS`] on an offline command. `mut_args` edits in place: the order clap's
/// matcher relies on is kept (`mut_arg` would move the flag to the end).
fn hide_server_flags(sub: clap::Command) -> clap::Command {
    sub.mut_args(|a| {
        // Only the copies of the global flags: `serve`'s own `--token`/`--token-file` (the
        // tokens it accepts) share their ids and stay visible.
        if a.is_global_set() && SERVER_FLAGS.contains(&a.get_id().as_str()) {
            a.hide(true)
        } else {
            a
        }
    })
}

/// Parses the process's arguments (see [`command_for`]).
pub fn parse() -> Result<Cli, clap::Error> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut cmd = command_for(&args);
    let parsed = parse_with(&mut cmd, args);
    // Kept until the process exits instead of freeing each argument definition one by one.
    std::mem::forget(cmd);
    parsed
}

/// Parses `args` (program name first) with `cmd`, a definition from [`command_for`] or
/// [`command`]; errors, `--help` and `--version` included, are rendered against `cmd`.
fn parse_with<I, T>(cmd: &mut clap::Command, args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(cmd))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

// `defer`: the derived subcommands are names, abouts and examples, cheap to make, and
// [`with_arguments`] defines the arguments of those that are parsed or listed (see
// [`command_for`]). Argument structs carry no doc comment, which clap would apply as the
// subcommand's about when defining its arguments, over the variant's.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Parse, validate and lint documents offline (what each check means: docs/policies.md).
    #[command(after_help = EX_VALIDATE)]
    Validate(ValidateArgs),
    /// Create every document of the files (fails on an existing name), or a queue from flags.
    #[command(after_help = EX_CREATE)]
    Create(CreateArgs),
    /// Show retry policies or queues.
    #[command(after_help = EX_GET)]
    Get(GetArgs),
    /// Replace existing resources from files, or change a queue in place.
    #[command(after_help = EX_UPDATE)]
    Update(UpdateArgs),
    /// Create or update every document of the files.
    ///
    /// With --prune, also delete the retry policies on the server that no file names (those
    /// `diff` lists), never one a queue still uses.
    #[command(after_help = EX_APPLY)]
    Apply(ApplyArgs),
    /// Show how the files differ from the server (exit 0 same, 1 different).
    ///
    /// Then lists the retry policies on the server that no file names (what `apply --prune`
    /// deletes); they leave the exit code alone.
    #[command(after_help = EX_DIFF)]
    Diff(DiffArgs),
    /// Delete retry policies or queues.
    #[command(after_help = EX_DELETE)]
    Delete(DeleteArgs),
    /// Replay failure histories through the retry evaluator.
    #[command(after_help = EX_SIMULATE)]
    Simulate(SimulateArgs),
    /// Search retry-policy candidates on a history: which policy should this cluster run?
    #[command(after_help = EX_TUNE)]
    Tune(TuneArgs),
    /// Learn a retry policy from the cluster's own failures, and prove it on the same history.
    ///
    /// Every failed run gets a signature (its condition, failed container and exit code,
    /// message template, pod error or category); a signature that retries have rescued gets a
    /// Retry rule with the limit its successes by attempt justify, one they have not gets a
    /// Fail rule. The proposal is replayed against the baseline as `simulate --baseline` would.
    #[command(after_help = EX_SUGGEST)]
    Suggest(SuggestArgs),
    /// Add up a sharded simulate, tune or suggest (`--shard I/N -o partial`) into one answer.
    ///
    /// Prints what the command prints unsharded, byte for byte: every shard 0..N−1 of one
    /// run, once each, or exit 3 naming what is wrong. A suggest's merge proposes and then
    /// compares over the history, which it reads again.
    #[command(after_help = EX_MERGE)]
    Merge(MergeArgs),
    /// Run a local Armada-compatible API server with SQLite storage.
    #[command(after_help = EX_SERVE)]
    Serve(ServeArgs),
    /// Print a shell completion script.
    ///
    /// The script completes commands, flags and files, offline. To complete the names of the
    /// server's retry policies and queues too, load the dynamic completion instead: `source
    /// <(COMPLETE=bash retryctl)` in ~/.bashrc (zsh alike), `COMPLETE=fish retryctl | source`
    /// for fish.
    #[command(after_help = EX_COMPLETION)]
    Completion(CompletionArgs),
    /// Show or change the armadactl config file.
    #[command(after_help = EX_CONFIG)]
    Config(ConfigArgs),
    /// Print the client version, and the server's dialect when it is reachable.
    #[command(after_help = EX_VERSION)]
    Version(VersionArgs),
    /// Explain a retry policy or queue in words: limits, backoff schedule, who uses it.
    #[command(after_help = EX_DESCRIBE)]
    Describe(DescribeArgs),
    /// Document the fields of a resource (`retrypolicy.spec.rules`).
    #[command(after_help = EX_EXPLAIN)]
    Explain(ExplainArgs),
    /// Print the JSON Schema (draft 2020-12) of a document kind, for editors.
    #[command(after_help = EX_SCHEMA)]
    Schema(SchemaArgs),
    /// Export a real cluster's failure history from Armada's Lookout as FailureHistory documents.
    #[command(after_help = EX_HISTORY)]
    History(HistoryArgs),
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DescribeArgs {
    /// Resources as `TYPE/NAME` (`retrypolicy/infra`, `queue/ml`).
    #[arg(value_name = "TYPE/NAME")]
    pub targets: Vec<String>,

    /// Describe from these files instead of the server (every policy and queue in them when
    /// no name is given).
    #[command(flatten)]
    pub source: FileSource,

    /// An Armada scheduler config: its globalMaxRetries and defaultBackoff are used.
    #[arg(long, value_name = "FILE", global = true)]
    pub scheduler_config: Option<PathBuf>,

    #[command(subcommand)]
    pub resource: Option<DescribeResource>,
}

#[derive(Debug, Subcommand)]
pub enum DescribeResource {
    /// Describe retry policies.
    #[command(after_help = EX_DESCRIBE)]
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(DescribeNames),
    /// Describe queues.
    #[command(after_help = EX_DESCRIBE)]
    #[command(visible_aliases = ["queues", "q"])]
    Queue(DescribeNames),
}

#[derive(Debug, Args)]
pub struct DescribeNames {
    /// Names (all of the files' when reading `-f` and none is given).
    pub names: Vec<String>,

    /// Describe from these files instead of the server.
    #[command(flatten)]
    pub source: FileSource,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// `retrypolicy`, `queue`, `failurehistory` or `errorcategories`, optionally followed by a field path
    /// (`retrypolicy.spec.rules.onExitCodes`). Without it: the kinds, as a usage error.
    #[arg(value_name = "TYPE[.FIELD...]")]
    pub path: Option<String>,

    /// Show every field below, not only the direct ones.
    #[arg(long)]
    pub recursive: bool,

    /// The layout to explain: `armadaproject.io/v1` (a RetryPolicy's design dialect) or
    /// `armadaproject.io/v1beta1` (upstream's flat one).
    #[arg(long, value_name = "VERSION", default_value = "armadaproject.io/v1")]
    pub api_version: String,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The document kind. Without it: the kinds, as a usage error.
    #[arg(value_enum)]
    pub kind: Option<SchemaKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    #[value(alias = "rp", alias = "retry-policy")]
    Retrypolicy,
    #[value(alias = "q")]
    Queue,
    Failurehistory,
    // The executor's categorizer config (`errorCategories`); no doc comment: one would switch
    // `schema --help` to the long form that lists each value with its help.
    Errorcategories,
}

// `retryctl history` (docs/lookout.md).
#[derive(Debug, Args)]
// The source group is not required: without either flag, `$LOOKOUT_DB` (docs/lookout.md).
#[command(group(clap::ArgGroup::new("source").args(["lookout_db", "lookout_url"])))]
pub struct HistoryArgs {
    /// Only jobs of this queue.
    #[arg(long, value_name = "QUEUE")]
    pub queue: String,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryOutput {
    Jsonl,
    Yaml,
}

// `-f PATH...` with `-R`, shared by every file-reading command.
#[derive(Debug, Args, Clone, Default)]
pub struct FileSource {
    /// A file, a directory (its *.yaml, *.yml, *.json) or `-` for stdin. Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH", num_args = 1..)]
    pub files: Vec<PathBuf>,

    /// Descend into subdirectories of directories given with -f.
    #[arg(short = 'R', long)]
    pub recursive: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub source: FileSource,

    /// Treat warnings as errors.
    #[arg(long)]
    pub strict: bool,

    /// Report format.
    #[arg(short = 'o', long, value_enum, default_value_t = ValidateOutput::Text)]
    pub output: ValidateOutput,

    /// An Armada scheduler config: warn about limits above its globalMaxRetries and a
    /// defaultPolicyName missing from the documents.
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,

    /// Check for an upstream Armada server: report as errors exactly the fields `create`
    /// against such a server refuses.
    #[arg(long)]
    pub upstream: bool,

    /// The executor's categorizer config (as -f would read it): also warn about policy rules
    /// on categories it never assigns, and Retry rules on categories whose pod it keeps.
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateOutput {
    /// Human-readable findings on stderr, a summary on stdout.
    Text,
    /// One JSON object on stdout, camelCase keys (its fields: docs/policies.md).
    Json,
    /// GitHub Actions workflow annotations on stdout.
    Github,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum DryRun {
    /// Send the request.
    #[default]
    None,
    /// Validate fully offline and send nothing.
    Client,
    /// Ask the server to validate without storing (falls back to client).
    Server,
}

#[derive(Debug, Args, Clone, Default)]
pub struct WriteArgs {
    /// `client`: validate offline, send nothing; `server`: let the server validate only.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_value_t = DryRun::None, default_missing_value = "client", value_name = "MODE")]
    pub dry_run: DryRun,
}

#[derive(Debug, Args)]
pub struct FileArgs {
    #[command(flatten)]
    pub source: FileSource,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub source: FileSource,
    #[command(flatten)]
    pub write: WriteArgs,
    /// Also delete the retry policies on the server that no file names (as `diff` lists
    /// them); refused, deleting nothing, while a queue still uses one.
    #[arg(long)]
    pub prune: bool,
}

// `diff` writes nothing: no `--dry-run`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub source: FileSource,

    /// Dialect both sides of a retry policy are shown in: `armadaproject.io/v1` or
    /// `armadaproject.io/v1beta1` (today's Armada). Default: each file's own.
    #[arg(long, value_name = "VERSION")]
    pub api_version: Option<String>,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct CreateArgs {
    #[command(flatten)]
    pub source: FileSource,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(subcommand)]
    pub resource: Option<CreateResource>,
}

#[derive(Debug, Subcommand)]
pub enum CreateResource {
    /// Create a queue from flags.
    #[command(after_help = EX_CREATE)]
    #[command(visible_aliases = ["queues", "q"])]
    Queue(QueueFlags),
    /// Create retry policies from files (only RetryPolicy documents are accepted).
    #[command(after_help = EX_CREATE)]
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(FileArgs),
}

#[derive(Debug, Args, Clone, Default)]
pub struct QueueFlags {
    /// Queue name.
    pub name: String,

    /// Retry policies to attach, in precedence order (comma separated). On `update`, replaces
    /// the list.
    #[arg(
        long = "retry-policy",
        alias = "retry-policies",
        value_delimiter = ',',
        value_name = "NAMES"
    )]
    pub retry_policies: Option<Vec<String>>,

    /// Priority factor (at least 1.0).
    #[arg(long, value_name = "FACTOR")]
    pub priority_factor: Option<f64>,

    /// User owner (repeatable, or comma separated).
    #[arg(long = "owner", alias = "owners", value_delimiter = ',', value_name = "USER")]
    pub owners: Option<Vec<String>>,

    /// Group owner (repeatable, or comma separated).
    #[arg(
        long = "group-owner",
        alias = "group-owners",
        value_delimiter = ',',
        value_name = "GROUP"
    )]
    pub group_owners: Option<Vec<String>>,

    /// Label `key=value` (repeatable).
    #[arg(short = 'l', long = "label", alias = "labels", value_name = "KEY=VALUE")]
    pub labels: Option<Vec<String>>,

    /// Cordon the queue (no new jobs), or `--cordon=false` to uncordon.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub cordon: Option<bool>,

    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GetArgs {
    /// Resources as `TYPE/NAME` (`retrypolicy/infra`, `queue/ml`), as `-o name` prints them.
    #[arg(value_name = "TYPE/NAME", required = true)]
    pub targets: Vec<String>,

    #[command(flatten)]
    pub view: ViewArgs,

    #[command(flatten)]
    pub cluster: ClusterArgs,

    #[command(subcommand)]
    pub resource: Option<GetResource>,
}

#[derive(Debug, Subcommand)]
pub enum GetResource {
    /// Retry policies: one or more by name, or all.
    #[command(after_help = EX_GET)]
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(GetFlags),
    /// Queues: one or more by name, or all.
    #[command(after_help = EX_GET)]
    #[command(visible_aliases = ["queues", "q"])]
    Queue(GetFlags),
}

#[derive(Debug, Args)]
pub struct GetFlags {
    /// Names (or `TYPE/NAME`); all when none is given.
    pub names: Vec<String>,

    #[command(flatten)]
    pub view: ViewArgs,

    #[command(flatten)]
    pub cluster: ClusterArgs,
}

// Where `get` reads from instead of the server: the cluster's own database (docs/serve.md).
#[derive(Debug, Args, Clone, Default)]
pub struct ClusterArgs {
    /// Read what the cluster stores, read-only, from Lookout's PostgreSQL database (tables
    /// `retry_policy`, `queue`, `queue_retry_policy`) instead of asking the server; without a
    /// value: $LOOKOUT_DB.
    #[arg(long, value_name = "DSN", num_args = 0..=1)]
    pub lookout_db: Option<Option<String>>,
}

// How `get` prints what it found.
#[derive(Debug, Args, Clone)]
pub struct ViewArgs {
    /// Output format: table, wide, yaml, json, name, jsonpath=TEMPLATE (kubectl's
    /// `{.items[*].metadata.name}`), custom-columns=NAME:.path,...
    #[arg(short = 'o', long, value_parser = OutputParser, default_value = "table", value_name = "FORMAT")]
    pub output: GetOutput,

    /// Dialect of YAML/JSON output for policies.
    #[arg(long, value_name = "VERSION", default_value = "armadaproject.io/v1")]
    pub api_version: String,

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

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct UpdateArgs {
    #[command(flatten)]
    pub source: FileSource,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(subcommand)]
    pub resource: Option<UpdateResource>,
}

#[derive(Debug, Subcommand)]
pub enum UpdateResource {
    /// Change a queue in place: flags not given keep their values.
    #[command(after_help = EX_UPDATE)]
    #[command(visible_aliases = ["queues", "q"])]
    Queue(UpdateQueueFlags),
    /// Replace retry policies from files (only RetryPolicy documents are accepted).
    #[command(after_help = EX_UPDATE)]
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(FileArgs),
}

#[derive(Debug, Args)]
pub struct UpdateQueueFlags {
    #[command(flatten)]
    pub queue: QueueFlags,

    /// Attach a retry policy at the end of the list (repeatable, or comma separated).
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub add_retry_policy: Vec<String>,

    /// Detach a retry policy (repeatable, or comma separated).
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    pub remove_retry_policy: Vec<String>,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["targets", "files"])))]
pub struct DeleteArgs {
    /// Resources as `TYPE/NAME` (`retrypolicy/infra`, `queue/ml`), as `get -o name` prints them.
    #[arg(value_name = "TYPE/NAME")]
    pub targets: Vec<String>,

    /// Delete what these files define (queues before the policies they attach).
    #[command(flatten)]
    pub source: FileSource,

    /// Succeed when a name does not exist.
    #[arg(long)]
    pub ignore_not_found: bool,

    /// Detach a policy from every queue that uses it, then delete it.
    #[arg(long)]
    pub detach: bool,

    #[command(flatten)]
    pub write: WriteArgs,

    #[command(subcommand)]
    pub resource: Option<DeleteResource>,
}

#[derive(Debug, Subcommand)]
pub enum DeleteResource {
    /// Delete retry policies. A policy still attached to queues is refused unless --detach.
    #[command(after_help = EX_DELETE)]
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(DeletePolicyFlags),
    /// Delete queues.
    #[command(after_help = EX_DELETE)]
    #[command(visible_aliases = ["queues", "q"])]
    Queue(DeleteFlags),
}

#[derive(Debug, Args)]
pub struct DeleteFlags {
    /// Names to delete.
    #[arg(required = true)]
    pub names: Vec<String>,

    /// Succeed when a name does not exist.
    #[arg(long)]
    pub ignore_not_found: bool,

    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args)]
pub struct DeletePolicyFlags {
    #[command(flatten)]
    pub delete: DeleteFlags,

    /// Detach the policy from every queue that uses it, then delete it.
    #[arg(long)]
    pub detach: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("histories").args(["history", "lookout_db"])))]
#[command(group(clap::ArgGroup::new("what_if").args(["baseline", "baseline_from_cluster"])))]
// The window's flags say, as --queue and --jobset do, that they go with --lookout-db here.
#[command(mut_arg("since", |a| a.help("With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)")))]
#[command(mut_arg("from", |a| a.help("With --lookout-db: only jobs submitted at or after this RFC 3339 time")))]
#[command(mut_arg("to", |a| a.help("With --lookout-db: only jobs submitted before this RFC 3339 time")))]
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
    /// --jobset, --since, --from, --to select as for `history`. Without a value, or without
    /// --history either: $LOOKOUT_DB.
    // What goes with it (`--queue`, the filters, --baseline-from-cluster) is checked by the
    // command: clap lets a `requires` of a member of the `histories` group pass when another
    // member (`--history`) is given. The command resolves `$LOOKOUT_DB`
    // (`replay_source::resolve_dsn`): `Some(Some(DSN))` from then on.
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
    /// policy only, categories only, preemption terminal, no backoff). Default: design; with
    /// --from-server against a server without the dialect header, upstream.
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub engine: Option<EngineArg>,

    /// The engine of the baseline side (default: the same as --engine).
    #[arg(long, value_enum, value_name = "ENGINE", requires = "what_if")]
    pub baseline_engine: Option<EngineArg>,

    /// An Armada scheduler config file (its `scheduling.retryPolicy` block is used).
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,

    /// Policies for jobs whose queue is not among the documents (comma separated, in order).
    #[arg(long = "retry-policy", value_delimiter = ',', value_name = "NAMES")]
    pub retry_policies: Option<Vec<String>>,

    /// Override the scheduler's globalMaxRetries.
    #[arg(long, value_name = "N")]
    pub global_max_retries: Option<u32>,

    /// Override the scheduler's defaultPolicyName.
    #[arg(long, value_name = "NAME")]
    pub default_policy: Option<String>,

    /// Check the estimates on this history: the trials of jobs submitted before TIME (RFC
    /// 3339) fit the rates, those of jobs submitted at or after it test them (every job needs
    /// `job.submittedAt`).
    #[arg(long, value_name = "TIME")]
    pub backtest_at: Option<String>,

    /// Replay only the jobs of shard I of N (`0/4`: files by byte range, stdin by FNV-1a of
    /// the job id, Lookout by a hash in its query, which needs `--to`); with `-o partial`,
    /// write the shard's part of the answer, which `retryctl merge` adds up.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,

    /// Exit 0 when the history holds no job (an empty file, directory, stdin or Lookout
    /// window), instead of 3.
    #[arg(long)]
    pub allow_empty: bool,
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
#[command(group(clap::ArgGroup::new("histories").args(["history", "lookout_db"])))]
#[command(group(clap::ArgGroup::new("what_if").args(["baseline", "baseline_from_cluster"])))]
#[command(mut_arg("since", |a| a.help("With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)")))]
#[command(mut_arg("from", |a| a.help("With --lookout-db: only jobs submitted at or after this RFC 3339 time")))]
#[command(mut_arg("to", |a| a.help("With --lookout-db: only jobs submitted before this RFC 3339 time")))]
// tune takes no --from-server: its policies are the template's.
#[command(mut_arg("engine", |a| a.help("Which engine the candidates run under: the design (docs/engines.md) or what upstream Armada ships today (first policy only, categories only, preemption terminal, no backoff). Default: design")))]
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
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_lost: u64,

    /// Recommend no candidate whose cost (compute added − removed + expected) is over this: a
    /// duration (`10h`), or a percentage of the baseline's recorded compute (`5%`).
    #[arg(long, value_name = "DURATION|PERCENT%")]
    pub max_compute: Option<String>,

    /// Refuse (exit 2, before any replay) a search of more candidates than N.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_candidates: u64,

    /// Print candidate ID's documents (`recommended`: the recommended one's) as YAML, ready for
    /// `retryctl apply -f`; a numbered one needs no history (given one, the search runs first
    /// and a warning says what the candidate loses or which constraint it breaks).
    #[arg(long, value_name = "ID|recommended")]
    pub pick: Option<String>,

    /// Exit 1 when a candidate is recommended (with --pick recommended: when none is).
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

// `--emit`: instead of running, print the documents that run this command as N shards and a
// merge on Armada or Kubernetes (docs/past-one-machine.md). Shared by `simulate`, `tune` and
// `suggest`.
// (A `//` comment: a doc comment here would become the commands' about text.)
#[derive(Debug, Args, Clone, Default)]
pub struct EmitArgs {
    /// Print, instead of running, the documents that run this command as --shard-count
    /// shards plus their merge: an `armadactl submit` file, or a Kubernetes Indexed Job.
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Run in shards (--emit)")]
    pub emit: Option<EmitKind>,

    /// With --emit: the number of shards (1 to 1,000,000).
    #[arg(long, value_name = "N", requires = "emit", help_heading = "Run in shards (--emit)")]
    pub shard_count: Option<u64>,

    /// With --emit: the container image; its entrypoint must be retryctl (the repository's
    /// Dockerfile).
    #[arg(
        long,
        value_name = "IMAGE",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub image: Option<String>,

    /// With --emit: the PersistentVolumeClaim every job mounts at MOUNT (ReadWriteMany): the
    /// inputs lie under MOUNT, the partials and the result are written there.
    #[arg(
        long,
        value_name = "CLAIM:MOUNT",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub volume: Option<String>,

    /// With --emit armada: the Armada queue the jobs are submitted to (--queue is Lookout's).
    #[arg(
        long,
        value_name = "QUEUE",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub armada_queue: Option<String>,

    /// With --emit: the Armada job set, or the Kubernetes Job's name (the merge's is
    /// NAME-merge). Default: retryctl-COMMAND.
    #[arg(
        long = "emit-job-set",
        value_name = "NAME",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub job_set: Option<String>,

    // `--job-set`, its name before 0.1: refused by name (`emit::renamed_job_set`), since
    // clap's own tip would offer `--jobset`, Lookout's filter.
    #[arg(long = "job-set", value_name = "NAME", hide = true)]
    pub renamed_job_set: Option<String>,

    /// With --emit: the Kubernetes namespace of the jobs (Armada's default: `default`;
    /// Kubernetes': kubectl's).
    #[arg(
        long,
        value_name = "NAMESPACE",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub namespace: Option<String>,

    /// With --emit: each job's resources, requested and limited alike (default:
    /// cpu=1,memory=1Gi).
    #[arg(
        long,
        value_name = "NAME=QUANTITY,...",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub requests: Option<String>,

    /// With --emit and --lookout-db: the Secret holding the DSN (key `dsn` unless given); the
    /// jobs get it as $LOOKOUT_DB and the DSN given here is never written out.
    #[arg(
        long,
        value_name = "NAME[:KEY]",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
    pub dsn_secret: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EmitKind {
    Armada,
    Kubernetes,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("histories").args(["history", "lookout_db"])))]
#[command(group(clap::ArgGroup::new("what_if").args(["baseline", "baseline_from_cluster"])))]
#[command(mut_arg("since", |a| a.help("With --lookout-db: only jobs submitted within this duration before now (`7d`, `36h`)")))]
#[command(mut_arg("from", |a| a.help("With --lookout-db: only jobs submitted at or after this RFC 3339 time")))]
#[command(mut_arg("to", |a| a.help("With --lookout-db: only jobs submitted before this RFC 3339 time")))]
#[command(mut_arg("queue", |a| a.help("With --lookout-db: the jobs of this queue; with -o policy, also print this Queue with the proposal first in its retryPolicies")))]
#[command(mut_arg("baseline", |a| a.help("The policies the cluster runs today (files, directories): what the proposal is compared with, and whose first policy gives its defaultAction and retryLimit (none: no policy)")))]
#[command(mut_arg("shard", |a| a.help("Learn from shard I of N's share of the history only (`0/4`: a file or directory by byte range; not stdin nor --lookout-db, which its merge could not read again); with -o partial, write what it learned for `retryctl merge`, which proposes and compares over the whole history")))]
#[command(mut_arg("engine", |a| a.help("The dialect of the proposal and the engine that replays it: design (one RetryPolicy, the default) or upstream (what Armada ships today: an executor categorizer config and a v1beta1 policy)")))]
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
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub min_trials: u64,

    /// A retry pays when at least this share of trials succeeds (0 < P < 1): the limit is
    /// the deepest depth that pays; a signature none of whose depths pays gets Fail.
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    pub futile: f64,

    /// The largest limit proposed (1 to 10000).
    #[arg(long, value_name = "L", default_value_t = 5)]
    pub max_limit: u32,

    /// A depth with fewer than 5 trials of its own reads the signature's overall share
    /// instead of ending the limit (every such limit is marked `extrapolated`).
    #[arg(long)]
    pub extrapolate: bool,

    /// Exit 1 when the verdict is `adopt` (a change worth making), else 0.
    #[arg(long)]
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

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The partial results of one run's shards (`--shard I/N -o partial`): each of 0..N−1
    /// once, in any order; a directory gives every partial result in it.
    #[arg(value_name = "PARTIAL", required = true)]
    pub partials: Vec<PathBuf>,

    /// Output format: the command's own (`tune` and `suggest` have no jsonl; `policy` is
    /// `suggest`'s alone).
    #[arg(short = 'o', long, value_enum, default_value_t = MergeOutput::Table)]
    pub output: MergeOutput,

    /// Write the result to this file instead of stdout: written beside it and renamed once
    /// complete; left as it was when no result is written.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MergeOutput {
    Table,
    Json,
    Yaml,
    Jsonl,
    Html,
    Markdown,
    Policy,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: String,

    /// SQLite database file (default: <data dir>/retryctl/armada.db).
    #[arg(long, value_name = "PATH", conflicts_with = "in_memory")]
    pub db: Option<PathBuf>,

    /// Keep everything in memory; nothing survives a restart.
    #[arg(long)]
    pub in_memory: bool,

    /// Require HTTP basic auth with this `user:password` (repeatable).
    #[arg(long, value_name = "USER:PASSWORD")]
    pub basic_auth: Vec<String>,

    /// Require this bearer token (repeatable).
    #[arg(long, value_name = "TOKEN")]
    pub token: Vec<String>,

    /// Read accepted `user:password` lines from FILE (kept out of argv and `ps`).
    #[arg(long, value_name = "FILE")]
    pub basic_auth_file: Option<PathBuf>,

    /// Read accepted bearer tokens, one per line, from FILE.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Allow listening on a non-loopback address without authentication.
    #[arg(long)]
    pub allow_anonymous: bool,

    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// How retry policies are taken and answered: `v1` (the design dialect, marked by the
    /// `Armada-Retry-Policy-Dialect` header) or `upstream` (as today's Armada: its flat JSON,
    /// its validation and messages, no header), to rehearse an upstream rollout.
    #[arg(long, value_enum, default_value_t = ServeDialect::V1, value_name = "DIALECT")]
    pub dialect: ServeDialect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeDialect {
    V1,
    Upstream,
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to generate a completion script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    pub command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the config file with secrets masked.
    #[command(after_help = EX_CONFIG)]
    View,
    /// List the contexts, marking the current one.
    #[command(after_help = EX_CONFIG)]
    GetContexts,
    /// Print the current context.
    #[command(after_help = EX_CONFIG)]
    CurrentContext,
    /// Make NAME the current context (rewrites the file, keeping every other key).
    #[command(after_help = EX_CONFIG)]
    UseContext {
        /// Context name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print only the client version; do not contact the server.
    #[arg(long)]
    pub client: bool,

    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = VersionOutput::Text)]
    pub output: VersionOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VersionOutput {
    Text,
    Json,
}

const EX_ROOT: &str = "Examples:\n  retryctl validate -f policies/                     # offline: parse, validate, lint\n  retryctl serve --in-memory                           # a local Armada-compatible server\n  retryctl apply -f policies/                          # push policies, then queues\n  retryctl describe retrypolicy ml-training            # what happens to a failed job\n  retryctl simulate -f policies/ --history history.yaml";
const EX_VALIDATE: &str =
    "Examples:\n  retryctl validate -f policies/                     # every *.yaml, *.yml, *.json in the folder
  retryctl validate -f policy.yaml --strict -o github  # warnings fail; GitHub annotations
  retryctl validate -f policies/ -R --upstream         # what an upstream Armada would refuse
  retryctl validate -f policies/ --scheduler-config scheduler.yaml";

const EX_CREATE: &str =
    "Examples:\n  retryctl create -f policies/                         # policies first, then the queues using them
  retryctl create -f policies/ --dry-run               # check against the server, send nothing
  retryctl create queue ml --retry-policy infra,ml-training --priority-factor 2 -l team=ml";

const EX_GET: &str = "Examples:\n  retryctl get retrypolicies                           # a table of every policy
  retryctl get rp infra -o yaml                        # one policy, as YAML
  retryctl get rp -o json                              # one `kind: List`, for `apply -f -`
  retryctl get retrypolicy/infra queue/ml -o name
  retryctl get rp -o jsonpath='{.items[*].metadata.name}'
  retryctl get rp -o custom-columns=NAME:.metadata.name,LIMIT:.spec.retryLimit
  retryctl get rp --sort-by .spec.retryLimit           # the table, by limit
  retryctl get queues --lookout-db postgresql://lookout@db/lookout   # what the cluster stores";

const EX_UPDATE: &str =
    "Examples:\n  retryctl update -f infra.yaml                        # replace; `unchanged` when equal
  retryctl get rp infra -o yaml | retryctl update -f -
  retryctl update queue ml --add-retry-policy gpu      # other fields keep their values";

const EX_APPLY: &str =
    "Examples:\n  retryctl apply -f policies/                          # created, configured or unchanged
  retryctl apply -f policies/ --dry-run                # what it would do, nothing sent
  retryctl apply -f policies/ --prune --dry-run        # and what --prune would delete
  retryctl get rp -o json | retryctl apply -f -";

const EX_DIFF: &str = "Examples:\n  retryctl diff -f infra.yaml                          # exit 0 same, 1 different
  retryctl diff -f policies/ -R
  retryctl diff -f policies/ --api-version armadaproject.io/v1beta1   # today's Armada";

const EX_DELETE: &str = "Examples:\n  retryctl delete retrypolicy infra
  retryctl delete rp infra --detach                    # detach from every queue, then delete
  retryctl delete queue/ml retrypolicy/infra           # queues go first
  retryctl delete -f policies/                         # what the files define
  retryctl get rp -o name | xargs retryctl delete";

const EX_SIMULATE: &str = "Examples:\n  retryctl simulate -f policies/ --history history.yaml
  retryctl simulate -f policies/ --history histories/ -o json
  retryctl simulate --from-server --history history.yaml
  retryctl simulate -f policies/ --engine upstream --history week.jsonl   # as Armada decides today
  retryctl simulate -f new/ --baseline old/ --history week.jsonl --exit-code
  retryctl simulate -f new/ --baseline old/ --history week.jsonl -o html > plan.html
  retryctl simulate -f new/ --lookout-db $LOOKOUT_DB --queue ml --since 7d   # from Lookout
  retryctl simulate -f new/ --lookout-db $LOOKOUT_DB --queue ml --baseline-from-cluster --since 7d
  retryctl simulate -f new/ --baseline old/ --history year.jsonl --shard 0/8 -o partial > p0.json";

const EX_TUNE: &str = "Examples:\n  retryctl tune -f p/ --history week.jsonl --vary ml:spec.retryLimit=0..10
  retryctl tune -f p/ --history h.jsonl --vary ml:retryLimit=1..5 --vary ml:defaultAction=Retry,Fail
  retryctl tune -f p/ --lookout-db $LOOKOUT_DB --queue ml --since 7d --vary ml:retryLimit=0..6
  retryctl tune -f p/ --history week.jsonl --vary ml:spec.retryLimit=0..10 -o html > tune.html
  retryctl tune -f p/ --vary ml:spec.retryLimit=0..10 --pick 4 -o yaml > picked.yaml
  retryctl tune -f p/ --history y.jsonl --vary ml:retryLimit=0..9 --shard 3/8 -o partial > p3";

const EX_SUGGEST: &str = "Examples:\n  retryctl suggest --history week.jsonl --baseline policies/
  retryctl suggest --history week.jsonl --baseline policies/ -o policy > suggested.yaml
  retryctl suggest --lookout-db $DB --queue ml --baseline-from-cluster --engine upstream
  retryctl suggest --history month.jsonl --baseline p/ --backtest-at 2026-11-15T00:00:00Z
  retryctl suggest --history week.jsonl --baseline policies/ -o html > suggest.html
  retryctl suggest --history year.jsonl --baseline p/ --shard 0/4 -o partial > s0.json";

const EX_MERGE: &str = "Examples:\n  retryctl merge p0.json p1.json p2.json p3.json     # the same bytes as one process
  retryctl merge parts/*.json -o html > plan.html
  retryctl simulate -f new/ --baseline old/ --history h.jsonl --shard 2/4 -o partial > p2.json";

const EX_SERVE: &str =
    "Examples:\n  retryctl serve --in-memory                           # http://127.0.0.1:8080, nothing kept
  retryctl serve --db ./armada.db --listen 127.0.0.1:9090
  retryctl serve --listen 0.0.0.0:8080 --token s3cret
  retryctl serve --tls-cert cert.pem --tls-key key.pem --token-file tokens   # https://
  retryctl serve --in-memory --dialect upstream        # answers as today's Armada does";

const EX_COMPLETION: &str = "Examples:\n  retryctl completion bash > /etc/bash_completion.d/retryctl
  retryctl completion zsh > \"${fpath[1]}/_retryctl\"
  retryctl completion fish > ~/.config/fish/completions/retryctl.fish";

const EX_CONFIG: &str = "Examples:\n  retryctl config view
  retryctl config get-contexts
  retryctl config use-context prod";

const EX_VERSION: &str = "Examples:\n  retryctl version
  retryctl version --client -o json";

const EX_DESCRIBE: &str =
    "Examples:\n  retryctl describe retrypolicy ml-training            # limits, backoff schedule, queues using it
  retryctl describe queue/ml                           # its policies in precedence order
  retryctl describe rp ml-training -f policies/        # offline, from files
  retryctl describe -f policies/ --scheduler-config scheduler.yaml";

const EX_EXPLAIN: &str = "Examples:\n  retryctl explain retrypolicy
  retryctl explain retrypolicy.spec.rules.onExitCodes
  retryctl explain rp.spec --recursive";

const EX_SCHEMA: &str =
    "Examples:\n  retryctl schema retrypolicy > retrypolicy.schema.json   # for yaml-language-server
  retryctl schema queue
  retryctl schema failurehistory > failurehistory.schema.json";

const EX_HISTORY: &str = "Examples:
  retryctl history --lookout-db postgresql://lookout@db/lookout --queue ml --since 7d > week.jsonl
  retryctl history --lookout-url http://lookout:10000 --queue ml --jobset nightly -o yaml
  retryctl simulate -f new/ --baseline old/ --history week.jsonl";

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every command's `--help` ends with examples, and the global flags are listed
    /// under their own heading, apart from the command's own.
    #[test]
    fn every_command_has_examples_and_global_flags_apart() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            // clap's generated `help` subcommands are not commands of ours.
            if cmd.get_name() == "help" {
                return;
            }
            let name = format!("{path} {}", cmd.get_name());
            let examples = cmd.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            if !examples.starts_with("Examples:\n  retryctl ") {
                missing.push(name.clone());
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &name, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&command(), "", &mut missing);
        assert!(missing.is_empty(), "no Examples section: {missing:?}");
        // Rendered as `retryctl CMD --help` renders it: clap builds only the path entered, so
        // that is where global flags reach the subcommand.
        let help_of = |sub: &str| {
            let err = command().try_get_matches_from(["retryctl", sub, "--help"]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
            err.to_string()
        };
        let help = help_of("get");
        let global = help.find("Global options:").expect("a Global options heading");
        assert!(help.find("--output").unwrap() < global, "{help}");
        assert!(help.find("--armada-url").unwrap() > global, "{help}");
        // Flags a command ignores are not shown on it, and are still accepted in place.
        for offline in OFFLINE_COMMANDS {
            let help = help_of(offline);
            for server in [
                "--armada-url",
                "--context",
                "--config",
                "--timeout",
                "--insecure-skip-tls-verify",
            ] {
                assert!(!help.contains(server), "{offline} shows {server}: {help}");
            }
            assert!(help.contains("--color"), "{help}");
        }
        // tune takes its policies from files: no word of --from-server, which it refuses.
        assert!(!help_of("tune").contains("--from-server"));
        assert!(help_of("simulate").contains("--from-server"));
        let m = command()
            .try_get_matches_from(["retryctl", "validate", "-f", "a.yaml", "--context", "prod"])
            .unwrap();
        let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
        assert_eq!(cli.global.context.as_deref(), Some("prod"));
        assert_eq!(cli.global.timeout, "10s");
    }

    /// Every command path of the definition (`["get", "retrypolicy"]`), clap's `help` apart.
    fn command_paths() -> Vec<Vec<String>> {
        fn walk(cmd: &clap::Command, path: &[String], out: &mut Vec<Vec<String>>) {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                let mut p = path.to_vec();
                p.push(sub.get_name().to_string());
                out.push(p.clone());
                walk(sub, &p, out);
            }
        }
        // Built, so that subcommands whose arguments are deferred show their own subcommands.
        let mut full = command();
        full.build();
        let mut out = vec![Vec::new()];
        walk(&full, &[], &mut out);
        out
    }

    /// Command lines whose outcome must not depend on how much of the definition clap builds:
    /// help and `-h` of every command, a bad flag, a flag without its value and a bad value on
    /// each, global flags before and after the subcommand, and what `main` sees at the top
    /// level (nothing, `--version`, `help`, a misspelt subcommand).
    fn argv_table() -> Vec<Vec<String>> {
        let mut table = Vec::new();
        for path in command_paths() {
            let with = |tail: &[&str]| {
                let mut argv = vec!["retryctl".to_string()];
                argv.extend(path.iter().cloned());
                argv.extend(tail.iter().map(|s| s.to_string()));
                argv
            };
            for tail in [
                &["--help"][..],
                &["-h"],
                &["--version"],
                &["--no-such-flag"],
                &["--color"],
                &["--color", "sometimes"],
                &["--timeout"],
                &["-o"],
                &["-o", "no-such-format"],
                &["-f"],
                &["--context", "prod", "--help"],
                &["an-extra-word"],
            ] {
                table.push(with(tail));
            }
        }
        let lines = [
            "help",
            "help validate",
            "help get retrypolicy",
            "help no-such-command",
            "valdate -f a.yaml",
            "simulat",
            "--color never valdate",
            "-V",
            "--color never validate -f a.yaml",
            "--context prod validate -f a.yaml -v",
            "validate -f a.yaml --context prod -vv --color=never --timeout 1s",
            "validate -f a.yaml b.yaml -R --strict -o json --upstream",
            "validate --scheduler-config s.yaml -f a.yaml",
            "get rp p1 -o yaml --armada-url http://x --insecure-skip-tls-verify",
            "get retrypolicy/infra queue/ml -o name --sort-by .metadata.name",
            "get rp -o jsonpath=",
            "create queue q1 --retry-policy a,b -l team=ml --cordon",
            "create -f a.yaml --dry-run=server",
            "create -f a.yaml --dry-run server",
            "update queue q1 --add-retry-policy x --remove-retry-policy y",
            "delete",
            "delete rp",
            "delete rp p1 --detach --ignore-not-found --dry-run",
            "simulate -f p.yaml --history h.yaml --baseline b.yaml --exit-code -o jsonl",
            "simulate -f p.yaml --exit-code --history h.yaml",
            "serve --db x --in-memory",
            "serve --tls-cert c.pem",
            "serve --in-memory --listen 127.0.0.1:0 --token t",
            "completion",
            "completion fish",
            "config",
            "config use-context",
            "config use-context prod",
            "version --client -o json",
            "describe rp ml-training -f a.yaml --scheduler-config s.yaml",
            "describe queue/ml",
            "explain",
            "explain retrypolicy.spec.rules --recursive",
            "schema nope",
            "schema rp",
            "history --queue q",
            "history --queue q --lookout-url http://l --lookout-db postgresql://x",
            "history --queue q --lookout-url http://l --since 7d --from 2026-01-01T00:00:00Z",
            "history --queue q --lookout-url http://l -o yaml --output-file f.yaml",
        ];
        for line in lines {
            let mut argv = vec!["retryctl".to_string()];
            argv.extend(line.split(' ').map(str::to_string));
            table.push(argv);
        }
        table.push(vec!["retryctl".to_string()]);
        table
    }

    /// What `main` makes of `argv` parsed with `cmd`: the parsed command line, or the error's
    /// kind, stream and text. Callers fix the width (`term_width`): help wraps to the terminal.
    fn outcome(mut cmd: clap::Command, argv: &[String]) -> String {
        match parse_with(&mut cmd, argv) {
            Ok(cli) => format!("{cli:?}"),
            Err(e) => format!("{:?}, stderr: {}\n{}", e.kind(), e.use_stderr(), e),
        }
    }

    /// The definition `main` parses `argv` with.
    fn main_command(argv: &[String]) -> clap::Command {
        let args: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
        command_for(&args).term_width(100)
    }

    /// Every example of every command's help fits the help's width: a command wrapped onto
    /// a second line cannot be copied and run.
    #[test]
    fn no_example_is_wrapped() {
        fn check(cmd: &mut clap::Command, path: &str, wrapped: &mut Vec<String>) {
            let help = cmd.render_long_help().to_string();
            if let Some((_, examples)) = help.split_once("Examples:\n") {
                for line in examples.lines().filter(|l| !l.trim().is_empty()) {
                    if !line.starts_with("  retryctl ") {
                        wrapped.push(format!("{path}: `{line}`"));
                    }
                }
            }
            for sub in cmd.get_subcommands_mut() {
                let name = format!("{path} {}", sub.get_name());
                check(sub, &name, wrapped);
            }
        }
        let mut cmd = command().term_width(100);
        cmd.build();
        let mut wrapped = Vec::new();
        check(&mut cmd, "retryctl", &mut wrapped);
        assert!(wrapped.is_empty(), "wrapped example lines:\n{}", wrapped.join("\n"));
    }

    #[test]
    fn building_only_the_entered_command_changes_no_outcome() {
        let mut differ = Vec::new();
        for argv in argv_table() {
            let pruned = outcome(main_command(&argv), &argv);
            let lazy = outcome(command().term_width(100), &argv);
            let mut full = command().term_width(100);
            full.build();
            let full = outcome(full, &argv);
            if pruned != full || lazy != full {
                differ.push(format!(
                    "{argv:?}\nas main parses it:\n{pruned}\nevery subcommand, only the entered one \
                     built:\n{lazy}\nall built:\n{full}"
                ));
            }
        }
        assert!(differ.is_empty(), "{}", differ.join("\n\n"));
    }

    #[test]
    fn only_a_subcommand_name_prunes_the_definition() {
        let subcommands = |argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            main_command(&argv).get_subcommands().count()
        };
        assert_eq!(subcommands(&["retryctl", "validate", "-f", "a.yaml"]), 1);
        assert_eq!(subcommands(&["retryctl", "get", "rp"]), 1);
        let all = command().get_subcommands().count();
        assert!(all > 10, "{all}");
        for argv in [
            &["retryctl"][..],
            &["retryctl", "--context", "prod", "validate"],
            &["retryctl", "valdate"],
            &["retryctl", "help", "validate"],
            &["retryctl", "--help"],
        ] {
            assert_eq!(subcommands(argv), all, "{argv:?}");
        }
    }

    /// Help, version and usage errors of the table, as `main` prints them (successful parses
    /// are compared above): any change to them shows here.
    #[test]
    fn help_and_errors_snapshot() {
        let mut text = String::new();
        for argv in argv_table() {
            if let Err(e) = parse_with(&mut main_command(&argv), &argv) {
                let outcome = format!("{:?}, stderr: {}\n{}", e.kind(), e.use_stderr(), e);
                text.push_str(&format!("$ {}\n{}\n\n", argv.join(" "), outcome));
            }
        }
        insta::assert_snapshot!("help_and_errors", text);
    }

    #[test]
    fn parse_table() {
        use clap::error::ErrorKind;
        let ok = [
            "retryctl validate -f a.yaml",
            "retryctl validate -f a.yaml b.yaml -R --strict -o json",
            "retryctl create -f a.yaml --dry-run",
            "retryctl create queue q1 --retry-policy a,b -l team=ml",
            "retryctl create rp -f a.yaml",
            "retryctl get retrypolicies",
            "retryctl get rp p1 -o yaml",
            "retryctl get retry-policy p1",
            "retryctl get q -o name",
            "retryctl update queue q1 --add-retry-policy x",
            "retryctl delete rp p1 --detach --ignore-not-found",
            "retryctl delete queues q1 q2",
            "retryctl simulate -f p.yaml --history h.yaml -o json",
            "retryctl --armadaUrl http://x get queues",
            "retryctl serve --in-memory --listen 127.0.0.1:0",
            "retryctl serve --in-memory --tls-cert c.pem --tls-key k.pem",
            "retryctl --armada-url https://x --certificate-authority ca.pem get rp",
            "retryctl get rp --insecure-skip-tls-verify",
            "retryctl completion zsh",
            "retryctl config use-context prod",
            "retryctl create -f a.yaml --dry-run=server",
            "retryctl get retrypolicy/infra queue/ml -o jsonpath={.items[*].metadata.name}",
            "retryctl get rp -o custom-columns=NAME:.metadata.name --no-headers --sort-by .metadata.name",
            "retryctl delete retrypolicy/infra queue/ml --ignore-not-found",
            "retryctl delete -f dir -R --dry-run",
            "retryctl describe rp ml-training -f a.yaml",
            "retryctl describe retrypolicy/infra",
            "retryctl explain retrypolicy.spec.rules --recursive",
            "retryctl schema rp",
        ];
        for line in ok {
            let args: Vec<&str> = line.split(' ').collect();
            if let Err(e) = Cli::try_parse_from(&args) {
                panic!("{line}: {e}");
            }
        }
        let bad = [
            ("retryctl", ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand),
            ("retryctl validate -f a.yaml -o xml", ErrorKind::InvalidValue),
            ("retryctl delete rp", ErrorKind::MissingRequiredArgument),
            ("retryctl delete", ErrorKind::MissingRequiredArgument),
            ("retryctl get", ErrorKind::MissingRequiredArgument),
            ("retryctl get rp -o xml", ErrorKind::InvalidValue),
            ("retryctl get rp -o jsonpath=", ErrorKind::InvalidValue),
            ("retryctl serve --db x --in-memory", ErrorKind::ArgumentConflict),
            ("retryctl serve --tls-cert c.pem", ErrorKind::MissingRequiredArgument),
            ("retryctl serve --tls-key k.pem", ErrorKind::MissingRequiredArgument),
            ("retryctl completion tcsh", ErrorKind::InvalidValue),
        ];
        for (line, kind) in bad {
            let args: Vec<&str> = line.split(' ').collect();
            let err = Cli::try_parse_from(&args).expect_err(line);
            assert_eq!(err.kind(), kind, "{line}");
        }
    }
}
