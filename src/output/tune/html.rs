//! `tune -o html`: the frontier as an SVG scatter (expected successes against cost, the
//! baseline marked, the recommendation highlighted, `--max-compute` a dashed line), then the
//! table; the page fits 1280 pixels: the varied columns wrap.
//!
//! Owns: that page. Must not: count or rank.

use std::fmt::Write as _;

use crate::tune::rank::{Ranked, Scored};

use crate::output::html::esc;
use crate::output::text::shown;
use crate::output::words::{
    backtest_details, backtest_sentence, incidents_line, signed_nanos, CONTENTION_SHARDED, ESTIMATE_METHOD,
};

use super::table::top_rows;
use super::view::*;
use super::words::*;

pub(super) const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f5f7fa;color:#1f2933}main{max-width:1200px;margin:0 auto;padding:24px}section{background:#fff;border-radius:8px;padding:16px 20px;margin:16px 0;box-shadow:0 1px 2px #0001}h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 12px}.sub{color:#52606d;margin:0}table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #e4e7eb;font-variant-numeric:tabular-nums}.v{overflow-wrap:anywhere;min-width:6em}th{font-weight:600;color:#52606d}.n{text-align:right}.rec td{background:#e3f8ee;font-weight:600}.plan{font-size:15px}.note{color:#52606d;font-size:12px}code{background:#f0f4f8;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}svg{max-width:100%;height:auto}.est{font-style:italic;color:#8a4b08}svg text{font:11px system-ui,sans-serif;fill:#52606d}svg text.cap{fill:#d64545}";

pub(super) fn html(view: &TuneView<'_>) -> String {
    let r = view.ranked;
    let mut b = String::new();
    b.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>retryctl tune</title><meta name=\"viewport\" content=\"width=device-width\"><style>");
    b.push_str(CSS);
    b.push_str("</style></head><body><main>\n<header><h1>Which policy should this cluster run?</h1>");
    let _ = writeln!(b, "<p class=\"sub\">{}</p></header>", esc(&inputs_line(view)));
    let _ = writeln!(
        b,
        "<section><p class=\"plan\"><b>{}</b></p>",
        esc(&recommendation(view))
    );
    if let Some(values) = recommended_values(view) {
        let values: Vec<String> = values.iter().map(|v| format!("<code>{}</code>", esc(v))).collect();
        let _ = writeln!(b, "<p>Values: {}</p>", values.join(", "));
    }
    if let Some(line) = estimates_decide_line(view) {
        let _ = writeln!(b, "<p class=\"est\">{}</p>", esc(&line));
    }
    if let Some(i) = r.recommended {
        let _ = writeln!(
            b,
            "<p>Write it: <code>{} --pick {} -o yaml</code></p>",
            esc(&shown(view.pick_command)),
            r.candidates[i].id
        );
    }
    b.push_str("</section>\n<section><h2>The frontier: expected successes against cost</h2>\n");
    b.push_str(&scatter(r, view.max_compute));
    let cap = if view.max_compute.is_some() {
        " the dashed red line is <code>--max-compute</code>: a candidate right of it costs more than it allows;"
    } else {
        ""
    };
    let _ = writeln!(
        b,
        "<p class=\"note\">Each dot a candidate; the ringed dots are the frontier (no other candidate has as many expected successes for less cost), joined by the line; the square is the baseline;{cap} the green dot the recommendation. Hover a dot for its values.</p></section>"
    );
    b.push_str("<section><h2>Candidates</h2><table>\n<tr>");
    let (header, rows) = top_rows(view);
    // The varied columns (after ID) wrap, as much as it takes: what a user varies and names
    // can be long, and the page stays within its width; the numbers never break.
    let varied = |k: usize| {
        if (1..=view.columns.len()).contains(&k) {
            " class=\"v\""
        } else {
            ""
        }
    };
    for (k, h) in header.iter().enumerate() {
        let _ = write!(b, "<th{}>{}</th>", varied(k), esc(h));
    }
    b.push_str("</tr>\n");
    for (row, &i) in rows.iter().zip(&r.order) {
        let class = if r.recommended == Some(i) { " class=\"rec\"" } else { "" };
        let _ = write!(b, "<tr{class}>");
        for (k, c) in row.iter().enumerate() {
            let _ = write!(b, "<td{}>{}</td>", varied(k), esc(c));
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</table>");
    if with_contention(r) {
        let _ = write!(b, "<p class=\"note\">{}.</p>", esc(OVERLAP_NOTE));
    } else if contention_sharded(r) {
        let _ = write!(
            b,
            "<p class=\"note\">Retries while others waited: {}.</p>",
            esc(CONTENTION_SHARDED)
        );
    }
    if r.candidates.len() > TOP {
        let _ = write!(
            b,
            "<p class=\"note\">The first {TOP} of {} candidates in the recommendation order; <code>-o json</code> lists every one.</p>",
            r.candidates.len()
        );
    }
    let base = &r.baseline;
    let explained = base.explained.as_ref().map_or_else(String::new, |e| {
        format!(
            "<p class=\"note\">{}.</p>",
            e.words(|id| format!("<code>{}</code>", esc(id)))
        )
    });
    let compute = record_words(r).map_or_else(String::new, |record| {
        format!("<p class=\"note\">Compute: {}.</p>", esc(&record))
    });
    let _ = writeln!(
        b,
        "<p>Baseline ({}): <span class=\"est\">≈ {:.1}</span> expected successes, cost {}.</p>{compute}{explained}</section>",
        esc(baseline_words(view.baseline_from)),
        base.expected_succeeded,
        esc(&signed_nanos(base.cost_nanos))
    );
    if let Some(bt) = view.backtest {
        let _ = writeln!(
            b,
            "<section><h2>Backtest</h2><p>{}.</p><p class=\"note\">{}.</p></section>",
            esc(&backtest_sentence(bt)),
            esc(&backtest_details(bt))
        );
    }
    if let Some(line) = without_estimate_line(view.ranked) {
        let _ = writeln!(b, "<section><p class=\"note\">{}.</p></section>", esc(&line));
    }
    if let Some(line) = view.incidents.and_then(incidents_line) {
        let _ = writeln!(b, "<section><p>Incidents: {}.</p></section>", esc(&line));
    }
    if !view.skipped.is_empty() {
        let _ = writeln!(
            b,
            "<section><p>{} (<code>-o json</code> lists {} errors).</p></section>",
            esc(&skipped_words(view.skipped.len())),
            whose(view.skipped.len())
        );
    }
    let _ = writeln!(
        b,
        "<footer class=\"note\"><p>Expected successes: the jobs that succeed + the estimated chance of each Pending job. Cost: compute added − removed + expected, against the baseline. Estimates (in italics): {}.</p><p>Made by <code>retryctl tune -o html</code>.</p></footer>",
        esc(ESTIMATE_METHOD)
    );
    b.push_str("</main></body></html>\n");
    b
}

/// The scatter: cost (x) against expected successes (y), every candidate, the frontier
/// joined and ringed, the baseline a square, the recommendation green, and `--max-compute`
/// (`max`, as typed) as a dashed vertical line at the cost it allows, inside the axis even
/// when no candidate comes near it.
pub(super) fn scatter(r: &Ranked, max: Option<&str>) -> String {
    const W: f64 = 720.0;
    const H: f64 = 360.0;
    const LEFT: f64 = 70.0;
    const BOTTOM: f64 = 40.0;
    const TOP_PAD: f64 = 12.0;
    let cap = r.max_compute.zip(max);
    let points = r
        .candidates
        .iter()
        .map(|s| (s.cost, s.expected_succeeded))
        .chain([(r.baseline.cost, r.baseline.expected_succeeded)])
        .chain(cap.map(|(c, _)| (c, r.baseline.expected_succeeded)));
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    let pad = |lo: f64, hi: f64| {
        let span = (hi - lo).abs().max(1e-9);
        (lo - span * 0.05, hi + span * 0.05)
    };
    let ((x0, x1), (y0, y1)) = (pad(x0, x1), pad(y0, y1));
    let px = |x: f64| LEFT + (x - x0) / (x1 - x0) * (W - LEFT - 12.0);
    let py = |y: f64| TOP_PAD + (1.0 - (y - y0) / (y1 - y0)) * (H - BOTTOM - TOP_PAD);
    let mut s = format!(
        "<svg class=\"frontier\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"expected successes against cost, one dot per candidate\">"
    );
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#9aa5b1\"/><line x1=\"{LEFT}\" y1=\"{TOP_PAD}\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"#9aa5b1\"/>",
        H - BOTTOM,
        W - 12.0,
        H - BOTTOM,
        H - BOTTOM
    );
    for t in [0.0, 0.5, 1.0] {
        let (x, y) = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t);
        // The last cost ends at the axis' end, inside the picture.
        let anchor = if t == 1.0 { "end" } else { "middle" };
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{:.1}</text>",
            px(x),
            H - BOTTOM + 16.0,
            esc(&signed_seconds(x)),
            LEFT - 6.0,
            py(y) + 4.0,
            y
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">cost (compute added − removed + expected)</text><text x=\"14\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">expected successes</text>",
        LEFT + (W - LEFT) / 2.0,
        H - 6.0,
        (H - BOTTOM) / 2.0,
        (H - BOTTOM) / 2.0
    );
    if let Some((c, typed)) = cap {
        let x = px(c);
        // Its label left of the line, or right of it when the line is near the axis.
        let (label_x, anchor) = if x - LEFT > 140.0 {
            (x - 4.0, "end")
        } else {
            (x + 4.0, "start")
        };
        let _ = write!(
            s,
            "<line class=\"cap\" x1=\"{x:.1}\" y1=\"{TOP_PAD}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#d64545\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"><title>--max-compute: {}; a candidate right of the line costs more</title></line><text class=\"cap\" x=\"{label_x:.1}\" y=\"{}\" text-anchor=\"{anchor}\">--max-compute {}</text>",
            H - BOTTOM,
            esc(&compute_words(Some(typed), Some(c))),
            TOP_PAD + 10.0,
            esc(typed)
        );
    }
    let mut front: Vec<&Scored> = r.candidates.iter().filter(|c| c.frontier).collect();
    front.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    if front.len() > 1 {
        let path: Vec<String> = front
            .iter()
            .map(|c| format!("{:.1},{:.1}", px(c.cost), py(c.expected_succeeded)))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"front\" points=\"{}\" fill=\"none\" stroke=\"#3f83f8\" stroke-width=\"1.5\"/>",
            path.join(" ")
        );
    }
    for (i, c) in r.candidates.iter().enumerate() {
        let recommended = r.recommended == Some(i);
        let (fill, radius) = match (recommended, c.frontier) {
            (true, _) => ("#1f9d55", 7.0),
            (false, true) => ("#3f83f8", 5.0),
            (false, false) => ("#9aa5b1", 3.5),
        };
        let ring = if c.frontier {
            " stroke=\"#1f2933\" stroke-width=\"1\""
        } else {
            ""
        };
        let values: Vec<String> = c.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            s,
            "<circle class=\"cand{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\" fill=\"{fill}\"{ring}><title>candidate {}: {}; ≈ {:.1} expected successes, cost {}</title></circle>",
            if recommended { " rec" } else { "" },
            px(c.cost),
            py(c.expected_succeeded),
            c.id,
            esc(&values.join(", ")),
            c.expected_succeeded,
            esc(&signed_nanos(c.cost_nanos))
        );
    }
    let (bx, by) = (px(r.baseline.cost), py(r.baseline.expected_succeeded));
    let _ = write!(
        s,
        "<rect class=\"baseline\" x=\"{:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"#d9822b\"><title>the baseline: ≈ {:.1} expected successes, cost {}</title></rect><text x=\"{:.1}\" y=\"{:.1}\">baseline</text>",
        bx - 5.0,
        by - 5.0,
        r.baseline.expected_succeeded,
        esc(&signed_nanos(r.baseline.cost_nanos)),
        bx + 8.0,
        by - 8.0
    );
    s.push_str("</svg>");
    s
}
