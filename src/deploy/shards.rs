//! A sharded command line's documents, in the kind `--emit` names: `armada`'s submit files or
//! `kubernetes`' Indexed Job, each with its merge.
//!
//! Owns: [`write()`] and [`emit`] (the same, as a string). Must not: do I/O other than writing
//! to the given writer.

use std::io;

use crate::cli::{EmitArgs, EmitKind};
use crate::error::CliError;

use super::invocation::Invocation;
use super::plan::{plan, Plan};
use super::{armada, kubernetes};

/// Prints `plan`'s documents: a YAML stream of two, the shards' and the merge's.
pub fn write(plan: &Plan, out: &mut dyn io::Write) -> io::Result<()> {
    match plan.kind {
        EmitKind::Armada => armada::write(plan, out),
        EmitKind::Kubernetes => kubernetes::write(plan, out),
    }
}

/// What [`write()`] prints, as a string.
pub fn emit(emit: &EmitArgs, invocation: &Invocation) -> Result<String, CliError> {
    let plan = plan(emit, invocation)?;
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    write(&plan, &mut out).expect("writing to memory");
    Ok(String::from_utf8(out).expect("the documents are UTF-8"))
}
