//! `--emit` and the flags that go with it (docs/past-one-machine.md, "Emitting the jobs"),
//! shared by `simulate`, `tune` and `suggest`; and `watch`'s (docs/watch.md "On Kubernetes"):
//! a Deployment rather than jobs, so only the flags a Deployment takes.
//!
//! Owns: [`EmitArgs`], [`EmitKind`], [`WatchEmitArgs`], [`WatchEmitKind`]. Must not: check
//! them against the command line they go with, or make the documents (both are `deploy`'s).

use clap::{Args, ValueEnum};

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
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "N",
        requires = "emit",
        help_heading = "Run in shards (--emit)"
    )]
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

// `watch --emit kubernetes`: instead of watching, print the Deployment that runs this same
// command line (docs/watch.md). The ids are those of [`EmitArgs`]' flags of the same names,
// which the emitted command line leaves out alike (`commands::emit`).
// (A `//` comment: a doc comment here would become the command's about text.)
#[derive(Debug, Args, Clone, Default)]
pub struct WatchEmitArgs {
    /// Print, instead of watching, the Kubernetes Deployment that runs this command line.
    #[arg(long, value_enum, value_name = "KIND", help_heading = "Run on Kubernetes (--emit)")]
    pub emit: Option<WatchEmitKind>,

    /// With --emit: the container image; its entrypoint must be retryctl (the repository's
    /// Dockerfile).
    #[arg(
        long,
        value_name = "IMAGE",
        requires = "emit",
        help_heading = "Run on Kubernetes (--emit)"
    )]
    pub image: Option<String>,

    /// With --emit: the PersistentVolumeClaim the pod mounts at MOUNT: the policies lie under
    /// MOUNT and --state is written there.
    #[arg(
        long,
        value_name = "CLAIM:MOUNT",
        requires = "emit",
        help_heading = "Run on Kubernetes (--emit)"
    )]
    pub volume: Option<String>,

    /// With --emit: the Secret holding the DSN (key `dsn` unless given); the pod gets it as
    /// $LOOKOUT_DB and the DSN is never written out.
    #[arg(
        long,
        value_name = "NAME[:KEY]",
        requires = "emit",
        help_heading = "Run on Kubernetes (--emit)"
    )]
    pub dsn_secret: Option<String>,

    /// With --emit: the Deployment's namespace (default: kubectl's).
    #[arg(
        long,
        value_name = "NAMESPACE",
        requires = "emit",
        help_heading = "Run on Kubernetes (--emit)"
    )]
    pub namespace: Option<String>,

    /// With --emit: the container's resources, requested and limited alike (default:
    /// cpu=1,memory=256Mi).
    #[arg(
        long,
        value_name = "NAME=QUANTITY,...",
        requires = "emit",
        help_heading = "Run on Kubernetes (--emit)"
    )]
    pub requests: Option<String>,
}

/// What `watch --emit` prints: a long-running process is a Deployment (an Armada job runs
/// to its end, so there is no `armada`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WatchEmitKind {
    Kubernetes,
}
