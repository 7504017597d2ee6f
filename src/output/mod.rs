//! Presentation: data in, bytes out. The only place that decides what output looks like.
//!
//! Owns: colour, the validation report formats (text, JSON, GitHub annotations), the
//! resource printers (`resources` tables, `view`: object or `kind: List`, `jsonpath`
//! templates, custom columns, `--sort-by`), `describe`, `schema` (JSON Schema and `explain`
//! from `model::fields`), and the sinks of `simulate` (`simulate`: table and records; `html`
//! and `markdown`: the reports), which render what the replay counted; `text`: how text from
//! the history is shown on a terminal (escaped). Must not: do network
//! I/O, read files, count, or decide exit codes.

pub mod describe;
pub mod history;
pub mod html;
pub mod jsonpath;
pub mod lines;
pub mod markdown;
pub mod progress;
pub mod report;
pub mod resources;
pub mod schema;
pub mod simulate;
pub mod sinks;
pub mod style;
pub mod suggest;
pub mod text;
pub mod tune;
pub mod view;

pub use style::Style;
