//! The one table of `retryctl`'s verbs, [`VERBS`]: each verb's name, the definition of its
//! arguments, its examples, and what the process must know of it without parsing its
//! arguments. Every list of verbs reads it; a test holds it equal to the `Command` enum.
//!
//! Owns: [`Verb`], [`VERBS`]. Read by `cli::with_arguments` (definition, examples, the server
//! flags hidden on a verb that talks to none) and by the binary's start-up (`src/startup.rs`:
//! mimalloc for a bulk verb, chosen from the raw arguments before `main`, before anything is
//! allocated). Must not: define arguments (each verb's are in its family's file), or hold
//! anything that takes work to make: it is a `const` of plain data, read in every process.

use clap::Args;

use super::local::{
    CompletionArgs, ConfigArgs, ServeArgs, ValidateArgs, VersionArgs, EX_COMPLETION, EX_CONFIG, EX_SERVE, EX_VALIDATE,
    EX_VERSION,
};
use super::merge::{MergeArgs, EX_MERGE};
use super::record::{HistoryArgs, WatchArgs, EX_HISTORY, EX_WATCH};
use super::replay::{SimulateArgs, SuggestArgs, TuneArgs, EX_SIMULATE, EX_SUGGEST, EX_TUNE};
use super::resources::{
    ApplyArgs, CreateArgs, DeleteArgs, DescribeArgs, DiffArgs, ExplainArgs, GetArgs, SchemaArgs, UpdateArgs, EX_APPLY,
    EX_CREATE, EX_DELETE, EX_DESCRIBE, EX_DIFF, EX_EXPLAIN, EX_GET, EX_SCHEMA, EX_UPDATE,
};

/// One verb (a subcommand of `retryctl`).
#[derive(Debug)]
pub struct Verb {
    /// Its name on the command line.
    pub name: &'static str,
    /// Defines its arguments on its subcommand: its arguments struct's `augment_args`.
    pub define: fn(clap::Command) -> clap::Command,
    /// Its help's last section, `Examples:` (nested subcommands show their verb's).
    pub examples: &'static str,
    /// Whether it can talk to an Armada server (or Lookout): only then does its help show
    /// the server flags (`cli::global::SERVER_FLAGS`; still accepted everywhere, as global
    /// flags are, so that a shell alias that adds `--context` keeps working).
    pub server: bool,
    /// Whether its work is allocation (decoded histories, reports, requests): the process
    /// runs on mimalloc, chosen before `main` (src/startup.rs; BENCHMARKS.md "Start-up").
    pub bulk: bool,
    /// Whether it takes `--output-file` (`commands::output_file`: the result written beside
    /// the file and renamed over it once complete).
    pub output_file: bool,
    /// Whether its shards merge, and as which verb: its `-o` writes `partial`, which `merge`
    /// ends through the verb's own ending (`commands::dispatch`; a test holds the two equal).
    pub merges: Option<Merges>,
}

/// The verbs whose shards merge: `merge` ends each through that verb's own ending
/// (`commands::dispatch` maps each to it, exhaustively).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merges {
    Simulate,
    Tune,
    Suggest,
}

/// Every verb, in the order of the `Command` enum (which is the order help and completions
/// list them in).
pub const VERBS: &[Verb] = &[
    Verb {
        name: "validate",
        define: ValidateArgs::augment_args,
        examples: EX_VALIDATE,
        server: false,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "create",
        define: CreateArgs::augment_args,
        examples: EX_CREATE,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "get",
        define: GetArgs::augment_args,
        examples: EX_GET,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "update",
        define: UpdateArgs::augment_args,
        examples: EX_UPDATE,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "apply",
        define: ApplyArgs::augment_args,
        examples: EX_APPLY,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "diff",
        define: DiffArgs::augment_args,
        examples: EX_DIFF,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "delete",
        define: DeleteArgs::augment_args,
        examples: EX_DELETE,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "simulate",
        define: SimulateArgs::augment_args,
        examples: EX_SIMULATE,
        server: true,
        bulk: true,
        output_file: true,
        merges: Some(Merges::Simulate),
    },
    Verb {
        name: "tune",
        define: TuneArgs::augment_args,
        examples: EX_TUNE,
        server: false,
        bulk: true,
        output_file: true,
        merges: Some(Merges::Tune),
    },
    Verb {
        name: "suggest",
        define: SuggestArgs::augment_args,
        examples: EX_SUGGEST,
        server: false,
        bulk: true,
        output_file: true,
        merges: Some(Merges::Suggest),
    },
    Verb {
        name: "merge",
        define: MergeArgs::augment_args,
        examples: EX_MERGE,
        server: false,
        bulk: true,
        output_file: true,
        merges: None,
    },
    Verb {
        name: "serve",
        define: ServeArgs::augment_args,
        examples: EX_SERVE,
        server: false,
        bulk: true,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "completion",
        define: CompletionArgs::augment_args,
        examples: EX_COMPLETION,
        server: false,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "config",
        define: ConfigArgs::augment_args,
        examples: EX_CONFIG,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "version",
        define: VersionArgs::augment_args,
        examples: EX_VERSION,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "describe",
        define: DescribeArgs::augment_args,
        examples: EX_DESCRIBE,
        server: true,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "explain",
        define: ExplainArgs::augment_args,
        examples: EX_EXPLAIN,
        server: false,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "schema",
        define: SchemaArgs::augment_args,
        examples: EX_SCHEMA,
        server: false,
        bulk: false,
        output_file: false,
        merges: None,
    },
    Verb {
        name: "history",
        define: HistoryArgs::augment_args,
        examples: EX_HISTORY,
        server: true,
        bulk: true,
        output_file: true,
        merges: None,
    },
    Verb {
        name: "watch",
        define: WatchArgs::augment_args,
        examples: EX_WATCH,
        // Lookout only, as `tune` and `suggest` read it: no Armada server.
        server: false,
        bulk: true,
        output_file: false,
        merges: None,
    },
];

/// The entry of the verb named `name`.
pub fn verb(name: &str) -> Option<&'static Verb> {
    VERBS.iter().find(|v| v.name == name)
}
