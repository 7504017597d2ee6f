//! One JSON line → a [`FailureHistory`] (docs/simulate.md bulk input).
//!
//! Owns: two decoders with one answer, and [`Scratch`], the history a worker decodes every
//! line into (its strings, runs and containers keep their buffers from line to line). The
//! fast path deserializes the line straight into that history — typed, borrowing from the
//! line until a string is copied into a kept buffer (no intermediate tree, no
//! `serde_json::Value`, no field path built); anything it is not sure of — an unknown or
//! duplicate field, a wrong type, a value that does not parse, a field today's model does
//! not have — makes it give up, and the line is re-read by the strict decoder
//! ([`decode_line_strict`], the same one YAML documents use), which either accepts it the same
//! way or says exactly where and why it is wrong. So valid lines are cheap and a bad line's
//! error names its field path and column, as before.
//!
//! Must not: do I/O, or accept a line the strict decoder rejects (the fast path is a
//! subset: every value it accepts is checked with the model's own parsers and
//! `validate_failure_history`).
//!
//! One part a file: this one, the entry points and how a [`Scratch`] decodes; `scratch`
//! (what it holds); `values` (strings borrowed
//! from the line or copied into pooled buffers, and the values both levels parse); `line`
//! (the fast path's top level: a line and its job); `runs` (the fast path's runs, their
//! containers, conditions, events and expectations); `strict` (the strict decoder).

use serde::de::DeserializeSeed;

use crate::model::failure_history::{validate_failure_history, FailureHistory};

mod line;
mod runs;
mod scratch;
mod strict;
mod values;

pub use scratch::Scratch;
pub use strict::decode_line_strict;

use line::LineSeed;
use values::KEEP_RUNS;

/// Decodes one (trimmed, non-empty) JSON line; `Err` is the message for the user, without
/// the `file:line: ` prefix.
pub fn decode_line(line: &[u8], line_no: usize) -> Result<FailureHistory, String> {
    let mut scratch = Scratch::default();
    scratch.decode(line, || line_no)?;
    Ok(scratch.history)
}

/// The typed fast path alone; `None` means "ask the strict decoder".
pub fn decode_fast(line: &[u8]) -> Option<FailureHistory> {
    let mut scratch = Scratch::default();
    scratch.decode_fast(line).then_some(scratch.history)
}

impl Scratch {
    /// Decodes `line` (fast path, else the strict decoder) into the scratch history.
    /// `line_no` is asked only by the strict decoder: a shard may have to count the lines
    /// before its range to know it (`source::Origin`).
    pub fn decode(&mut self, line: &[u8], line_no: impl FnOnce() -> usize) -> Result<&mut FailureHistory, String> {
        if !self.decode_fast(line) {
            self.history = decode_line_strict(line, line_no())?;
        }
        Ok(&mut self.history)
    }

    /// A job of a first pass's copy (`replay::packed`) into the scratch history.
    pub fn unpack(&mut self, packed: &[u8]) -> Result<&mut FailureHistory, crate::replay::packed::Damaged> {
        crate::replay::packed::unpack(packed, &mut self.history)?;
        Ok(&mut self.history)
    }

    /// The typed fast path; `false` means "ask the strict decoder" (the history is then
    /// left half-written).
    fn decode_fast(&mut self, line: &[u8]) -> bool {
        // One UTF-8 check for the whole line: `from_slice` would check every string on its
        // own (~30 calls per line, measured at 6% of a bulk run).
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let ok = LineSeed(self).deserialize(&mut de).is_ok() && de.end().is_ok();
        if self.history.runs.capacity() > 4 * KEEP_RUNS {
            self.spare.clear();
            self.history.runs.shrink_to(KEEP_RUNS);
        }
        self.spare.truncate(KEEP_RUNS);
        ok && validate_failure_history(&self.history).is_empty()
    }
}

#[cfg(test)]
mod tests;
