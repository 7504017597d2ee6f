//! Presentation: data in, bytes out. The only place that decides what output looks like.
//!
//! Owns: colour, the validation report formats (text, JSON, GitHub annotations), and the
//! resource printers. Must not: do network I/O, read files, or decide exit codes.

pub mod history;
pub mod report;
pub mod resources;
pub mod simulate;
pub mod style;

pub use style::Style;
