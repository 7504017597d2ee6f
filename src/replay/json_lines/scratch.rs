//! [`Scratch`]: what a worker decodes every JSON line into, kept from line to line. Must not:
//! decode (the decoders are `mod.rs`'s, `line`'s and `runs`'s).

use crate::model::failure_history::{FailureHistory, Run};

use super::values::Pool;

/// One worker's history, decoded into again and again: the strings, runs and containers of
/// earlier lines keep their buffers, so a typical line allocates nothing (a bulk run
/// allocated and freed every node, category and container name of every run).
#[derive(Default)]
pub struct Scratch {
    pub(super) history: FailureHistory,
    /// Runs beyond the current history's length, kept with their buffers for a longer one.
    pub(super) spare: Vec<Run>,
    pub(super) strings: Pool,
}
