//! Presentation: data in, bytes out. The only place that decides what output looks like.
//!
//! Owns: colour, the validation report formats (text, JSON, GitHub annotations), the
//! resource printers (`resources` tables, `view`: object or `kind: List`, `jsonpath`
//! templates, custom columns, `--sort-by`), `describe`, `schema` (JSON Schema and `explain`
//! from `model::fields`); `text`: how text from the history is shown on a terminal
//! (escaped).
//!
//! A replay's output is split by concept, not by verb: `format` (`-o`: one [`Format`] for
//! every verb, from each verb's `cli` enum), `mode` (what a sink is given), the
//! sinks, one per format (`table`, `records`: json, yaml and jsonl, `html`, `markdown`;
//! `sinks` picks one), `words` (each sentence said in more than one format, written once),
//! `groups` (which rows a report lists, in which order), `stderr` (a replay's messages and
//! its bar). `tune` and `suggest` are those verbs' reports, built of the same pieces; a file
//! named after a verb is imported by no other renderer. They render what the replay counted.
//! Must not: do network I/O, read files, count, or decide exit codes.

pub mod describe;
pub mod format;
pub mod groups;
pub mod history;
pub mod html;
pub mod jsonpath;
pub mod lines;
pub mod markdown;
pub mod mode;
pub mod progress;
pub mod records;
pub mod report;
pub mod resources;
pub mod schema;
pub mod sinks;
pub mod stderr;
pub mod style;
pub mod suggest;
pub mod table;
pub mod text;
pub mod tune;
pub mod view;
pub mod watch;
pub mod words;

pub use format::Format;
pub use style::Style;
