//! The command line, as clap types and help text only.
//!
//! Owns: every flag, argument, alias and help line of `retryctl`. Must not: do I/O or hold
//! logic; `app` turns these into settings and calls the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Author, validate, push and simulate Armada retry policies.
///
/// retryctl talks to an Armada server's REST API (or its own `retryctl serve`), validates
/// RetryPolicy and Queue documents offline, and replays failure histories through the same
/// decision rules as the scheduler.
#[derive(Debug, Parser)]
#[command(name = "retryctl", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Armada REST base URL (default: $ARMADA_URL, the context's `armadaRestUrl`, then
    /// http://localhost:8080).
    #[arg(long, global = true, alias = "armadaUrl", value_name = "URL")]
    pub armada_url: Option<String>,

    /// Context of the config file to use instead of its `currentContext`.
    #[arg(short = 'c', long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// Config file (default: $ARMADACTL_CONFIG, then ~/.armadactl.yaml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Timeout of each request to the server, as a duration (`10s`, `500ms`).
    #[arg(long, global = true, default_value = "10s", value_name = "DURATION")]
    pub timeout: String,

    /// Log each request and its status to stderr (credentials are never printed).
    #[arg(short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// When to use colour. `auto` colours when stderr is a terminal and NO_COLOR is unset.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse, validate and lint documents offline.
    Validate(ValidateArgs),
    /// Create every document of the files (fails on an existing name), or a queue from flags.
    Create(CreateArgs),
    /// Show retry policies or queues.
    Get(GetArgs),
    /// Replace existing resources from files, or change a queue in place.
    Update(UpdateArgs),
    /// Create or update every document of the files.
    Apply(FileArgs),
    /// Show how the files differ from the server (exit 0 same, 1 different).
    Diff(FileArgs),
    /// Delete retry policies or queues.
    Delete(DeleteArgs),
    /// Replay failure histories through the retry evaluator.
    Simulate(SimulateArgs),
    /// Run a local Armada-compatible API server with SQLite storage.
    Serve(ServeArgs),
    /// Print a shell completion script.
    Completion(CompletionArgs),
    /// Show or change the armadactl config file.
    Config(ConfigArgs),
    /// Print the client version, and the server's dialect when it is reachable.
    Version(VersionArgs),
}

/// `-f PATH...` with `-R`, shared by every file-reading command.
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

    /// Lint for an upstream Armada server (warn where it would read things differently).
    #[arg(long)]
    pub upstream: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateOutput {
    /// Human-readable findings on stderr, a summary on stdout.
    Text,
    /// One JSON object on stdout (format documented in the README).
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
    #[command(visible_aliases = ["queues", "q"])]
    Queue(QueueFlags),
    /// Create retry policies from files (only RetryPolicy documents are accepted).
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
pub struct GetArgs {
    #[command(subcommand)]
    pub resource: GetResource,
}

#[derive(Debug, Subcommand)]
pub enum GetResource {
    /// Retry policies: one or more by name, or all.
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(GetFlags),
    /// Queues: one or more by name, or all.
    #[command(visible_aliases = ["queues", "q"])]
    Queue(GetFlags),
}

#[derive(Debug, Args)]
pub struct GetFlags {
    /// Names; all when none is given.
    pub names: Vec<String>,

    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = GetOutput::Table)]
    pub output: GetOutput,

    /// Dialect of YAML/JSON output for policies.
    #[arg(long, value_name = "VERSION", default_value = "armadaproject.io/v1")]
    pub api_version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GetOutput {
    Table,
    Wide,
    Yaml,
    Json,
    Name,
}

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
    #[command(visible_aliases = ["queues", "q"])]
    Queue(UpdateQueueFlags),
    /// Replace retry policies from files (only RetryPolicy documents are accepted).
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
pub struct DeleteArgs {
    #[command(subcommand)]
    pub resource: DeleteResource,
}

#[derive(Debug, Subcommand)]
pub enum DeleteResource {
    /// Delete retry policies. A policy still attached to queues is refused unless --detach.
    #[command(visible_aliases = ["retry-policy", "retrypolicies", "retry-policies", "rp"])]
    Retrypolicy(DeletePolicyFlags),
    /// Delete queues.
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
pub struct SimulateArgs {
    /// RetryPolicy and Queue documents (files, directories, `-`).
    #[command(flatten)]
    pub source: FileSource,

    /// A FailureHistory file, a JSON Lines file of histories, or a directory of them.
    #[arg(long, value_name = "PATH")]
    pub history: PathBuf,

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

    /// Take the job's queue and its policies from the server instead of files.
    #[arg(long)]
    pub from_server: bool,

    /// Exit 1 when a history contradicts the decisions (not only on failed expectations).
    #[arg(long)]
    pub strict: bool,

    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = SimulateOutput::Table)]
    pub output: SimulateOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimulateOutput {
    Table,
    Json,
    Yaml,
    Jsonl,
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
    View,
    /// List the contexts, marking the current one.
    GetContexts,
    /// Print the current context.
    CurrentContext,
    /// Make NAME the current context (rewrites the file, keeping every other key).
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
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
            "retryctl completion zsh",
            "retryctl config use-context prod",
            "retryctl create -f a.yaml --dry-run=server",
        ];
        for line in ok {
            let args: Vec<&str> = line.split(' ').collect();
            if let Err(e) = Cli::try_parse_from(&args) {
                panic!("{line}: {e}");
            }
        }
        let bad = [
            ("retryctl", ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand),
            ("retryctl get widgets", ErrorKind::InvalidSubcommand),
            ("retryctl validate -f a.yaml -o xml", ErrorKind::InvalidValue),
            ("retryctl delete rp", ErrorKind::MissingRequiredArgument),
            ("retryctl serve --db x --in-memory", ErrorKind::ArgumentConflict),
            ("retryctl completion tcsh", ErrorKind::InvalidValue),
        ];
        for (line, kind) in bad {
            let args: Vec<&str> = line.split(' ').collect();
            let err = Cli::try_parse_from(&args).expect_err(line);
            assert_eq!(err.kind(), kind, "{line}");
        }
    }
}
