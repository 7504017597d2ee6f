//! `retryctl history` output: FailureHistory documents (JSON Lines or YAML), the report of a
//! row left out, and the summary.
//!
//! Owns: the byte format of each document and the words of the stderr lines. Must not:
//! read the database or the network, or decide the exit code.

use std::io::{self, Write};

use crate::lookout::RowError;
use crate::model::failure_history::{failure_history_json, FailureHistory};
use crate::output::style::Style;
use crate::output::text::shown;
use crate::replay::source::ExportTotals;

/// What a YAML export wrote: its bytes and its nodes, as the YAML reader counts them.
#[derive(Debug, Default, Clone, Copy)]
pub struct YamlWritten {
    pub bytes: u64,
    pub nodes: u64,
}

/// One job as a YAML document starting with `---`, added to `written`.
pub fn write_history_yaml(out: &mut dyn Write, h: &FailureHistory, written: &mut YamlWritten) -> io::Result<()> {
    let json = failure_history_json(h);
    // Every id, queue, node and message a string for a YAML 1.1 reader too (`yes`, `0x1F`).
    let text = crate::yaml::from_json::yaml_of(&json);
    writeln!(out, "---")?;
    out.write_all(text.as_bytes())?;
    written.bytes += 4 + text.len() as u64;
    written.nodes += nodes(&json);
    Ok(())
}

/// A value's nodes as the YAML reader counts them: each scalar, sequence and map, and each
/// map's keys.
fn nodes(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::Array(items) => 1 + items.iter().map(nodes).sum::<u64>(),
        serde_json::Value::Object(map) => 1 + map.values().map(|v| 1 + nodes(v)).sum::<u64>(),
        _ => 1,
    }
}

/// A YAML export past what `simulate --history` reads of one YAML text (its bytes or its
/// nodes): the warning that says so, and what to export instead.
pub fn yaml_past_the_readers(written: YamlWritten) -> Option<String> {
    let (bytes, nodes) = (crate::input::MAX_FILE_BYTES, crate::yaml::MAX_NODES as u64);
    if written.bytes <= bytes && written.nodes <= nodes {
        return None;
    }
    Some(format!(
        "warning: the YAML written is {} MiB of {} nodes, past the {} MiB and {} nodes `simulate --history` reads of a YAML text: it is for reading; export JSON Lines (the default, `-o jsonl`) for the replays",
        written.bytes.div_ceil(1 << 20),
        written.nodes,
        bytes >> 20,
        nodes
    ))
}

/// One job as a JSON line, its line end included.
pub fn history_line(h: &FailureHistory) -> Vec<u8> {
    let mut line = serde_json::to_vec(&failure_history_json(h)).expect("a JSON value serializes");
    line.push(b'\n');
    line
}

/// Why a job whose JSON line is `len` bytes (its line end left out) is not exported: past
/// `max`, what `simulate --history`, `tune` and `suggest` read.
pub fn too_long(len: usize, max: u64) -> String {
    format!(
        "its history is one JSON line of {} MiB, past the {} MiB a line `simulate --history` reads",
        len >> 20,
        max >> 20
    )
}

/// `warning: job `J` run `R`: column C: why; run left out` (docs/lookout.md).
pub fn left_out_line(style: Style, e: &RowError) -> String {
    format!("{}: {}", style.warning("warning"), shown(&e.left_out()))
}

/// What was exported, left out, and what Lookout could not tell, with counts, never silent.
/// `queue`: the one queue exported (`None`: every queue's jobs).
pub fn write_summary(err: &mut dyn Write, queue: Option<&str>, t: &ExportTotals) -> io::Result<()> {
    let n = &t.notes;
    let of = match queue {
        Some(q) => format!("queue `{q}`"),
        None => "every queue".to_string(),
    };
    writeln!(err, "history: exported {} of {of}", jobs_and_runs(t.jobs, n.runs))?;
    if t.left_out() > 0 {
        writeln!(
            err,
            "history: left out {} whose rows could not be read (reported above)",
            jobs_and_runs(t.jobs_left_out, t.runs_left_out)
        )?;
    }
    let lines: [(u64, &str); 19] = [
        (t.empty_jobs, "jobs not exported: no finished run to replay"),
        (
            n.in_flight_jobs,
            "jobs end before a run still in flight (pending, leased or running)",
        ),
        (n.in_flight_runs, "runs left out: in flight, or after one in flight"),
        (n.no_category, "failed or preempted runs without a failure category"),
        (
            n.first_exit_code_only,
            "exit codes are the first non-zero container's only (one unnamed container written)",
        ),
        (
            n.no_exit_code,
            "failed runs without an exit code (no container written)",
        ),
        (
            n.error_text_dropped,
            "error texts not attached: their run has no exit code",
        ),
        (
            n.error_text_truncated,
            "error texts cut at 64 KiB (they end with `… [truncated]`)",
        ),
        (
            n.terminated,
            "RUN_TERMINATED runs left out: Lookout does not say why they stopped",
        ),
        (
            n.unable_to_schedule,
            "RUN_UNABLE_TO_SCHEDULE runs written as leaseReturned",
        ),
        (
            n.max_runs_exceeded,
            "RUN_MAX_RUNS_EXCEEDED runs: the job's history ends there",
        ),
        (n.after_max_runs, "runs left out after RUN_MAX_RUNS_EXCEEDED"),
        (n.unknown_state, "runs left out: unknown run state"),
        (
            n.out_of_order_times,
            "durations set to 0s: Lookout's times are out of order",
        ),
        (n.missing_times, "durations set to 0s: a time is missing"),
        (
            n.started_early,
            "runs written with their startedAt: they started before the run before them finished (or the job was submitted)",
        ),
        (
            n.debug_not_document,
            "debug texts that are not the executor's debug document (no events)",
        ),
        (
            n.lease_return_unplaced,
            "returned leases whose error text may be a failed-pod check's or a failed submission's (kept, no executorPath)",
        ),
        (
            n.hint_kept,
            "error texts kept whole: a hint the executor appended cannot be told from them without the deployed categorizer",
        ),
    ];
    let mut said = false;
    for (count, what) in lines {
        if count > 0 {
            if !said {
                writeln!(err, "what Lookout could not tell (counts, nothing guessed):")?;
                said = true;
            }
            writeln!(err, "  {count:>8}  {what}")?;
        }
    }
    Ok(())
}

/// `1 job and 2 runs`.
fn jobs_and_runs(jobs: u64, runs: u64) -> String {
    format!(
        "{jobs} {} and {runs} {}",
        plural(jobs, "job", "jobs"),
        plural(runs, "run", "runs")
    )
}

fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

#[cfg(test)]
mod tests {
    use super::nodes;
    use crate::yaml::{parse_stream, Node, Value};

    /// The nodes of a tree the reader built (no alias: the export writes none).
    fn tree(n: &Node) -> u64 {
        match &n.value {
            Value::Seq(items) => 1 + items.iter().map(tree).sum::<u64>(),
            Value::Map(entries) => 1 + entries.iter().map(|(k, v)| tree(k) + tree(v)).sum::<u64>(),
            _ => 1,
        }
    }

    #[test]
    fn the_nodes_counted_are_the_readers() {
        let json = serde_json::json!({
            "job": {"id": "j1", "queue": "q", "resources": {"gpu": 1, "cpu": "500m"}, "annotations": {}},
            "runs": [
                {"outcome": "Failed", "runFor": "1h", "containers": [{"name": "main", "exitCode": 137, "message": null}]},
                {"outcome": "Succeeded", "pool": "h100", "containers": []}
            ]
        });
        let text = crate::yaml::from_json::yaml_of(&json);
        let stream = parse_stream(&text);
        assert!(stream.error.is_none(), "{text}");
        assert_eq!(nodes(&json), tree(&stream.documents[0]), "{text}");
    }
}
