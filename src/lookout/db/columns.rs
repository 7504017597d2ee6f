//! The columns an export reads, in the order the statement names them and the stream's rows
//! hold them: the one place their order is written.
//!
//! Owns: [`COLUMNS`] and the caps they read at ([`ERROR_BYTES_MAX`], [`ANNOTATIONS_MAX`]), each column's index and its name for messages, and a row's fields by
//! index ([`Row`]). Must not: read or decode.

use crate::lookout::mapping::ERROR_TEXT_MAX;

/// Bytes of a compressed `error` read: enough for the first [`ERROR_TEXT_MAX`] bytes of text
/// of any stream a zlib encoder writes (stored blocks add 5 bytes in 64 KiB); a stream that
/// needs more for less text is cut there too.
pub const ERROR_BYTES_MAX: usize = 2 * ERROR_TEXT_MAX;

/// Characters of `job.annotations` (as JSON text) read; a longer value leaves its job out.
pub const ANNOTATIONS_MAX: usize = 1024 * 1024;

/// The columns read, in order (indexes below).
pub(in crate::lookout) const COLUMNS: &str = "j.job_id, j.memory, j.submitted, left(j.annotations::text, 1048577), \
     r.run_id, r.node, r.job_run_state, r.leased, r.pending, r.started, r.finished, r.exit_code, \
     substring(r.error FROM 1 FOR 131073), r.failure_category, r.failure_subcategory, j.cpu, j.gpu, \
     substring(r.debug FROM 1 FOR 131073), j.queue, j.state, r.pool, j.jobset";

pub(super) const JOB_ID: usize = 0;
pub(super) const MEMORY: usize = 1;
pub(super) const SUBMITTED: usize = 2;
pub(super) const ANNOTATIONS: usize = 3;
pub(super) const RUN_ID: usize = 4;
pub(super) const NODE: usize = 5;
pub(super) const STATE: usize = 6;
pub(super) const LEASED: usize = 7;
pub(super) const PENDING: usize = 8;
pub(super) const STARTED: usize = 9;
pub(super) const FINISHED: usize = 10;
pub(super) const EXIT_CODE: usize = 11;
pub(super) const ERROR: usize = 12;
pub(super) const CATEGORY: usize = 13;
pub(super) const SUBCATEGORY: usize = 14;
pub(super) const CPU: usize = 15;
pub(super) const GPU: usize = 16;
pub(super) const DEBUG: usize = 17;
pub(super) const QUEUE: usize = 18;
pub(super) const JOB_STATE: usize = 19;
pub(super) const POOL: usize = 20;
pub(super) const JOB_SET: usize = 21;
pub(super) const FIELDS: usize = 22;

/// The names of the columns, for messages.
pub(super) const NAMES: [&str; FIELDS] = [
    "job_id",
    "memory",
    "submitted",
    "annotations",
    "run_id",
    "node",
    "job_run_state",
    "leased",
    "pending",
    "started",
    "finished",
    "exit_code",
    "error",
    "failure_category",
    "failure_subcategory",
    "cpu",
    "gpu",
    "debug",
    "queue",
    "state",
    "pool",
    "jobset",
];

/// One row of the COPY stream: where each field is in `buf`, `None` for NULL.
pub(super) struct Row<'a> {
    pub(super) buf: &'a [u8],
    pub(super) fields: &'a [Option<(usize, usize)>; FIELDS],
}

impl<'a> Row<'a> {
    pub(super) fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.fields[i].map(|(a, b)| &self.buf[a..b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_reads_one_past_each_cap() {
        // One more than kept tells a value cut by the server from one of exactly the cap.
        assert!(COLUMNS.contains(&format!("left(j.annotations::text, {})", ANNOTATIONS_MAX + 1)));
        assert!(COLUMNS.contains(&format!("substring(r.error FROM 1 FOR {})", ERROR_BYTES_MAX + 1)));
        assert!(COLUMNS.contains(&format!("substring(r.debug FROM 1 FOR {})", ERROR_BYTES_MAX + 1)));
    }
}
