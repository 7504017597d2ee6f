//! `tune -o markdown`: the top table and the recommendation, for the pull request that
//! changes the policy.
//!
//! Owns: that layout. Must not: count or rank.

use std::fmt::Write as _;

use crate::output::markdown::{self, code_span, text as markdown_text};
use crate::output::words::{incidents_line, signed_nanos, CONTENTION_SHARDED};

use super::table::top_rows;
use super::view::*;
use super::words::*;

pub(super) fn markdown(view: &TuneView<'_>) -> String {
    let r = view.ranked;
    let mut m = String::new();
    let _ = writeln!(m, "## retryctl tune: which policy should this cluster run?\n");
    let _ = writeln!(m, "{}\n", markdown_text(&inputs_line(view)));
    let _ = writeln!(m, "**{}**\n", markdown_text(&recommendation(view)));
    if let Some(values) = recommended_values(view) {
        let values: Vec<String> = values.iter().map(|v| code_span(v)).collect();
        let _ = writeln!(m, "Values: {}\n", values.join(", "));
    }
    if let Some(line) = estimates_decide_line(view) {
        let _ = writeln!(m, "{}\n", markdown_text(&line));
    }
    if let Some(i) = r.recommended {
        let _ = writeln!(
            m,
            "Write it: {}\n",
            code_span(&format!("{} --pick {} -o yaml", view.pick_command, r.candidates[i].id))
        );
    }
    let (header, rows) = top_rows(view);
    let _ = writeln!(
        m,
        "| {} |\n|{}|",
        header.iter().map(|h| markdown_text(h)).collect::<Vec<_>>().join(" | "),
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        let _ = writeln!(
            m,
            "| {} |",
            row.iter().map(|c| markdown_text(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    if r.candidates.len() > TOP {
        let _ = writeln!(
            m,
            "\n… the first {TOP} of {} candidates in the recommendation order; `-o json` lists every one.",
            r.candidates.len()
        );
    }
    let base = &r.baseline;
    let _ = writeln!(
        m,
        "\n**Baseline** ({}): ≈ {:.1} expected successes, cost {}.",
        baseline_words(view.baseline_from),
        base.expected_succeeded,
        signed_nanos(base.cost_nanos)
    );
    if let Some(record) = record_words(r) {
        let _ = writeln!(m, "\n**Compute:** {record}.");
    }
    if let Some(e) = &base.explained {
        let _ = writeln!(m, "\n{}.", e.words(crate::output::markdown::code_span));
    }
    if !view.skipped.is_empty() {
        let _ = writeln!(
            m,
            "\n{} (`-o json` lists {} errors).",
            markdown_text(&skipped_words(view.skipped.len())),
            whose(view.skipped.len())
        );
    }
    if let Some(b) = view.backtest {
        let _ = writeln!(m, "\n{}", markdown::backtest_line(b));
    }
    if with_contention(view.ranked) {
        let _ = writeln!(m, "\n<sub>{}.</sub>", markdown_text(OVERLAP_NOTE));
    } else if contention_sharded(view.ranked) {
        let _ = writeln!(
            m,
            "\n<sub>Retries while others waited: {}.</sub>",
            markdown_text(CONTENTION_SHARDED)
        );
    }
    if let Some(line) = without_estimate_line(view.ranked) {
        let _ = writeln!(m, "\n{}.", markdown_text(&line));
    }
    if let Some(line) = view.incidents.and_then(incidents_line) {
        let _ = writeln!(m, "\nIncidents: {}.", markdown_text(&line));
    }
    let _ = writeln!(
        m,
        "\n<sub>EXPECTED: succeeded + Σ the estimated chance of each Pending job; COST: compute added − removed + expected, against the baseline; * recommended. {}</sub>",
        markdown::estimates_note()
    );
    m
}
