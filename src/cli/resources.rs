//! The arguments of the verbs on the server's resources (retry policies and queues): `create`,
//! `get`, `update`, `apply`, `diff`, `delete`, `describe`; of `explain` and `schema`, which
//! document their kinds; what they share (`-f` files, `--dry-run`, a queue's fields); and
//! their examples. How `get` prints is `view`'s.
//!
//! Owns: those clap types and examples. Must not: do I/O or hold logic.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::view::ViewArgs;

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
    /// The executor's categorizer config as it will be deployed: refuse (exit 1, nothing
    /// sent) a policy naming a category it never assigns (roll out the executor config first).
    #[arg(long, value_name = "FILE")]
    pub categorizer: Option<std::path::PathBuf>,
    /// Apply a file `suggest -o policy` headed `# verdict: reject`, which is refused (exit 1,
    /// nothing sent) without it.
    #[arg(long)]
    pub force: bool,
}

// `diff` writes nothing: no `--dry-run`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub source: FileSource,

    /// Dialect both sides of a retry policy are shown in: `armadaproject.io/v1` or
    /// `armadaproject.io/v1beta1` (today's Armada). Default: each file's own.
    #[arg(long, value_name = "VERSION", value_parser = super::values::api_version)]
    pub api_version: Option<crate::model::ApiVersion>,
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
    #[arg(long, allow_negative_numbers = true, value_name = "FACTOR")]
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
    #[arg(long, value_name = "VERSION", default_value = "armadaproject.io/v1", value_parser = super::values::api_version)]
    pub api_version: crate::model::ApiVersion,
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

pub(super) const EX_CREATE: &str =
    "Examples:\n  retryctl create -f policies/                         # policies first, then the queues using them
  retryctl create -f policies/ --dry-run               # check against the server, send nothing
  retryctl create queue ml --retry-policy infra,ml-training --priority-factor 2 -l team=ml";

pub(super) const EX_GET: &str =
    "Examples:\n  retryctl get retrypolicies                           # a table of every policy
  retryctl get rp infra -o yaml                        # one policy, as YAML
  retryctl get rp -o json                              # one `kind: List`, for `apply -f -`
  retryctl get retrypolicy/infra queue/ml -o name
  retryctl get rp -o jsonpath='{.items[*].metadata.name}'
  retryctl get rp -o custom-columns=NAME:.metadata.name,LIMIT:.spec.retryLimit
  retryctl get rp --sort-by .spec.retryLimit           # the table, by limit
  retryctl get queues --lookout-db postgresql://lookout@db/lookout   # what the cluster stores";

pub(super) const EX_UPDATE: &str =
    "Examples:\n  retryctl update -f infra.yaml                        # replace; `unchanged` when equal
  retryctl get rp infra -o yaml | retryctl update -f -
  retryctl update queue ml --add-retry-policy gpu      # other fields keep their values";

pub(super) const EX_APPLY: &str =
    "Examples:\n  retryctl apply -f policies/                          # created, configured or unchanged
  retryctl apply -f policies/ --dry-run                # what it would do, nothing sent
  retryctl apply -f policies/ --prune --dry-run        # and what --prune would delete
  retryctl get rp -o json | retryctl apply -f -";

pub(super) const EX_DIFF: &str =
    "Examples:\n  retryctl diff -f infra.yaml                          # exit 0 same, 1 different
  retryctl diff -f policies/ -R
  retryctl diff -f policies/ --api-version armadaproject.io/v1beta1   # today's Armada";

pub(super) const EX_DELETE: &str = "Examples:\n  retryctl delete retrypolicy infra
  retryctl delete rp infra --detach                    # detach from every queue, then delete
  retryctl delete queue/ml retrypolicy/infra           # queues go first
  retryctl delete -f policies/                         # what the files define
  retryctl get rp -o name | xargs retryctl delete";

pub(super) const EX_DESCRIBE: &str =
    "Examples:\n  retryctl describe retrypolicy ml-training            # limits, backoff schedule, queues using it
  retryctl describe queue/ml                           # its policies in precedence order
  retryctl describe rp ml-training -f policies/        # offline, from files
  retryctl describe -f policies/ --scheduler-config scheduler.yaml";

pub(super) const EX_EXPLAIN: &str = "Examples:\n  retryctl explain retrypolicy
  retryctl explain retrypolicy.spec.rules.onExitCodes
  retryctl explain rp.spec --recursive";

pub(super) const EX_SCHEMA: &str =
    "Examples:\n  retryctl schema retrypolicy > retrypolicy.schema.json   # for yaml-language-server
  retryctl schema queue
  retryctl schema failurehistory > failurehistory.schema.json";
