//! The arguments of the verbs about this machine and retryctl itself: `validate` (documents,
//! offline), `serve` (a local server), `completion`, `config` (the armadactl config file) and
//! `version`; and their examples.
//!
//! Owns: those clap types and examples. Must not: do I/O or hold logic.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::resources::FileSource;

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

pub(super) const EX_VALIDATE: &str =
    "Examples:\n  retryctl validate -f policies/                     # every *.yaml, *.yml, *.json in the folder
  retryctl validate -f policy.yaml --strict -o github  # warnings fail; GitHub annotations
  retryctl validate -f policies/ -R --upstream         # what an upstream Armada would refuse
  retryctl validate -f policies/ --scheduler-config scheduler.yaml";

pub(super) const EX_SERVE: &str =
    "Examples:\n  retryctl serve --in-memory                           # http://127.0.0.1:8080, nothing kept
  retryctl serve --db ./armada.db --listen 127.0.0.1:9090
  retryctl serve --listen 0.0.0.0:8080 --token s3cret
  retryctl serve --tls-cert cert.pem --tls-key key.pem --token-file tokens   # https://
  retryctl serve --in-memory --dialect upstream        # answers as today's Armada does";

pub(super) const EX_COMPLETION: &str = "Examples:\n  retryctl completion bash > /etc/bash_completion.d/retryctl
  retryctl completion zsh > \"${fpath[1]}/_retryctl\"
  retryctl completion fish > ~/.config/fish/completions/retryctl.fish";

pub(super) const EX_CONFIG: &str = "Examples:\n  retryctl config view
  retryctl config get-contexts
  retryctl config use-context prod";

pub(super) const EX_VERSION: &str = "Examples:\n  retryctl version
  retryctl version --client -o json";
