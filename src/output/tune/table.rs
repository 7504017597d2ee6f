//! `tune`'s table: the inputs a line each, the top candidates in the recommendation order,
//! the recommendation in words, its values and the command that writes it; every line within
//! `output::lines`' width but the table's rows and the command.
//!
//! Owns: that layout. Must not: count or rank.

use std::io::{self, Write};

use tabled::builder::Builder;
use tabled::settings::{Padding, Style as TableStyle};

use crate::model::failure_history::Final;

use crate::output::lines;
use crate::output::table::{write_backtest, write_errors};
use crate::output::text::shown;
use crate::output::words::{hours_words, incidents_line, signed_nanos, COLLISION, CONTENTION_SHARDED, METHOD_LINE};
use crate::output::Style;

use super::view::*;
use super::words::*;

/// The header and rows of the top table, as plain text cells.
pub(super) fn top_rows(view: &TuneView<'_>) -> (Vec<String>, Vec<Vec<String>>) {
    let r = view.ranked;
    let gpus = with_gpus(r);
    let mut header = vec!["ID".to_string()];
    header.extend(view.columns.iter().cloned());
    header.extend(["EXPECTED", "SUCCEEDED", "PENDING", "RESCUED", "LOST", "COST"].map(String::from));
    if gpus {
        header.push("GPU-HOURS".into());
    }
    if view.categorized {
        header.push("COLLISIONS".into());
    }
    let contention = with_contention(r);
    if contention {
        header.push("OVERLAP".into());
    }
    header.push("FRONTIER".into());
    let rows = r
        .order
        .iter()
        .take(TOP)
        .map(|&i| {
            let s = &r.candidates[i];
            let c = &s.tally.comparison;
            let mark = if r.recommended == Some(i) { "*" } else { "" };
            let (lost_over, compute_over) = over(s);
            let mut row = vec![format!("{}{mark}", s.id)];
            row.extend(s.values.iter().map(|(_, v)| v.clone()));
            let unknown = match s.asked.without_estimate {
                0 => String::new(),
                n => format!(" ({})", without_estimate_words(n)),
            };
            row.extend([
                format!("{:.1}{unknown}", s.expected_succeeded),
                s.tally.finals[Final::Succeeded as usize].to_string(),
                s.tally.finals[Final::Pending as usize].to_string(),
                c.rescued.to_string(),
                if lost_over {
                    format!("{} (over)", c.lost)
                } else {
                    c.lost.to_string()
                },
                if compute_over {
                    format!("{} (over)", signed_nanos(s.cost_nanos))
                } else {
                    signed_nanos(s.cost_nanos)
                },
            ]);
            if gpus {
                row.push(hours_words(gpu_hours(s)));
            }
            if view.categorized {
                row.push(collisions(s).to_string());
            }
            if contention {
                row.push(overlap_change(s).unwrap_or_default());
            }
            row.push(if s.frontier { "yes" } else { "" }.to_string());
            row
        })
        .collect();
    (header, rows)
}

pub(super) fn write_table(view: &TuneView<'_>, style: Style, out: &mut dyn Write) -> io::Result<()> {
    let r = view.ranked;
    for line in inputs_lines(view) {
        writeln!(out, "{}", style.bold(&line))?;
    }
    let (header, rows) = top_rows(view);
    let mut b = Builder::default();
    b.push_record(header);
    for row in rows {
        b.push_record(row);
    }
    let mut table = b.build();
    table.with(TableStyle::blank()).with(Padding::new(0, 2, 0, 0));
    for line in table.to_string().lines() {
        writeln!(out, "  {}", line.trim_end())?;
    }
    if r.candidates.len() > TOP {
        writeln!(
            out,
            "  (the first {TOP} of {} in the recommendation order; -o json lists every one)",
            r.candidates.len()
        )?;
    }
    let base = &r.baseline;
    writeln!(
        out,
        "baseline: ≈ {:.1} expected successes ({} succeeded, {} pending), cost {}",
        base.expected_succeeded,
        base.finals[Final::Succeeded as usize],
        base.finals[Final::Pending as usize],
        signed_nanos(base.cost_nanos)
    )?;
    if let Some(record) = record_words(r) {
        writeln!(out, "  compute: {record}")?;
    }
    if let Some(e) = &base.explained {
        writeln!(out, "  {}", e.words(|id| crate::diag::shown(id).into_owned()))?;
    }
    let words = recommendation(view);
    writeln!(
        out,
        "{}",
        if r.recommended.is_some() {
            style.bold(&words)
        } else {
            style.warning(&words)
        }
    )?;
    if let (Some(i), Some(values)) = (r.recommended, recommended_values(view)) {
        for line in lines::list("  values: ", &values, ", ", "    ") {
            writeln!(out, "{line}")?;
        }
        writeln!(
            out,
            "  write it: {} --pick {} -o yaml",
            shown(view.pick_command),
            r.candidates[i].id
        )?;
    }
    if let Some(line) = estimates_decide_line(view) {
        for l in lines::wrap("", "  ", &line) {
            writeln!(out, "{}", style.warning(&l))?;
        }
    }
    if let Some(line) = without_estimate_line(r) {
        for l in lines::wrap("", "  ", &line) {
            writeln!(out, "{}", style.warning(&l))?;
        }
    }
    if let Some(b) = view.backtest {
        write_backtest(out, "backtest: ", "  ", b)?;
    }
    if let Some(line) = view.incidents.and_then(incidents_line) {
        for l in lines::wrap("incidents: ", "  ", &line) {
            writeln!(out, "{l}")?;
        }
    }
    write_errors(out, style, "", "not replayed", view.errors)?;
    if view.categorized {
        for line in lines::wrap(
            "",
            " ",
            &format!("(COLLISIONS: under --engine upstream, the candidate's retries that reuse {COLLISION})"),
        ) {
            writeln!(out, "{line}")?;
        }
    }
    if with_contention(r) {
        // Wrapped as the table's other notes: it is longer than a line.
        for line in lines::wrap("(", " ", &format!("{OVERLAP_NOTE})")) {
            writeln!(out, "{line}")?;
        }
    } else if contention_sharded(r) {
        writeln!(out, "contention: {CONTENTION_SHARDED}")?;
    }
    writeln!(
        out,
        "(EXPECTED: succeeded + Σ the estimated chance of each Pending job; COST: compute added − removed + expected, against the baseline; * recommended)"
    )?;
    writeln!(out, "{METHOD_LINE}")
}
