//! `--emit` and the flags that go with it (docs/past-one-machine.md, "Emitting the jobs"),
//! shared by `simulate`, `tune` and `suggest`.
//!
//! Owns: [`EmitArgs`], [`EmitKind`]. Must not: check them against the command line they go
//! with, or make the documents (both are `deploy`'s).

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
