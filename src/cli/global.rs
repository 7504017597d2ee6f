//! The global flags, which every verb accepts: the server to reach and how, the request log,
//! colour.
//!
//! Owns: [`GlobalArgs`], [`ColorChoice`], and [`SERVER_FLAGS`], those of them an offline verb's
//! help hides. Must not: resolve them (that is `connection`, with the environment and the
//! armadactl config file) or say which verbs are offline (that is the verb table, `verbs`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

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

/// The global flags that only matter when a command talks to a server: the help of a verb
/// that talks to none (`server: false` in the verb table) hides them.
pub(super) const SERVER_FLAGS: [&str; 9] = [
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
