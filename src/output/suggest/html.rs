//! `suggest`'s HTML page (`-o html`): the verdict, what was observed and estimated, the
//! executor's new categories, the backtest, the GPU-hours by signature as bars, the
//! signatures, the suspect nodes and the proposed documents.
//!
//! Owns: the page's markup and style. Must not: write the table, the report or the record.

use std::fmt::Write as _;

use crate::engine::job_report::plural;
use crate::output::html::{comparison_contention, esc};
use crate::output::text::shown;
use crate::output::words::{percent, percent_digits, plan_sentence};
use crate::replay::compare::hours;
use crate::suggest::propose::Verdict;
use crate::suggest::stats::{rate_of, SignatureStats};
use crate::suggest::verdict::{Decision, Judgement};

use super::capture::{BacktestTail, Captured};
use super::report::Report;
use super::words::{
    busy_lines, collisions_ran_words, default_row, distinct_shorts, estimated, incidents_lines, merged_words, no_rules,
    observed, rate_words, runs_cell, sensitive_words, today, TOP,
};

pub(super) fn html(
    r: &Report<'_>,
    whole: &Captured,
    backtest: Option<&(Captured, BacktestTail)>,
    judgement: &Judgement,
) -> String {
    let mut b = String::new();
    head_section(&mut b, r, whole, judgement);
    categories_section(&mut b, r);
    backtest_line(&mut b, r, backtest);
    // The signatures with most hours, as bars and as rows.
    let top: Vec<&(&SignatureStats, Verdict)> = r.signatures.iter().take(TOP).collect();
    hours_bars(&mut b, &top);
    signatures_section(&mut b, r, &top);
    windows_section(&mut b, r);
    suspects_section(&mut b, r);
    documents_section(&mut b, r, judgement);
    page(r.name, &b)
}

/// The title, the verdict, what was observed and estimated against the baseline, and what
/// was learned from.
fn head_section(b: &mut String, r: &Report<'_>, whole: &Captured, judgement: &Judgement) {
    let c = &whole.comparison;
    let verdict = format!(
        "<p class=\"verdict\"><b>Verdict: {}</b> — {}</p>\n",
        esc(&judgement.decision.words()),
        esc(&judgement.reasons.join("; "))
    );
    let _ = writeln!(b, "<h1>Proposed retry policy <code>{}</code></h1>", esc(r.name));
    b.push_str(&verdict);
    let _ = writeln!(
        b,
        "<p class=\"observed\">Observed against the baseline: {}.</p>",
        esc(&observed(c))
    );
    if let Some(x) = &c.explained {
        let _ = writeln!(
            b,
            "<p class=\"observed\">Baseline: {}.</p>",
            x.words(|id| format!("<code>{}</code>", esc(id)))
        );
    }
    for q in r.queues.iter().filter(|q| q.changed > 0) {
        let _ = writeln!(b, "<p class=\"observed\">{}</p>", esc(&q.words()));
    }
    if let Some(s) = &c.contention {
        comparison_contention(b, s);
    }
    if let Some(line) = whole.estimates.as_ref().and_then(|e| estimated(c, e)) {
        let _ = writeln!(
            b,
            "<p class=\"estimated\">Estimated (not observed): {}.</p>",
            esc(&line)
        );
    }
    let _ = writeln!(
        b,
        "<p>{}</p>\n<p>Learned from {} ({} failed runs, {}).</p>",
        esc(&plan_sentence(c)),
        esc(&plural(r.jobs, "job", "jobs")),
        r.failed_runs,
        esc(&plural(r.signatures.len() as u64, "signature", "signatures"))
    );
}

/// Upstream: the executor's new categories, the categories merged, the actions changed
/// cluster-wide.
fn categories_section(b: &mut String, r: &Report<'_>) {
    if let Some(u) = r.upstream {
        if !u.categories.is_empty() {
            b.push_str("<p>New categories of the executor's config:</p>\n<ul>\n");
            for cat in &u.categories {
                let splits = cat
                    .splits
                    .as_ref()
                    .map(|s| format!(" (splits <code>{}</code>)", esc(s)))
                    .unwrap_or_default();
                let _ = writeln!(
                    b,
                    "<li><code>{}</code>{splits}: {}</li>",
                    esc(&cat.name),
                    esc(&cat.signatures.join(", "))
                );
            }
            b.push_str("</ul>\n");
        }
        for g in &u.merged {
            let _ = writeln!(b, "<p>{}</p>", esc(&merged_words(g)));
        }
        for a in &u.action_changes {
            let _ = writeln!(b, "<p class=\"cluster\">Cluster-wide: {}</p>", esc(&a.words()));
        }
    }
}

/// With `--backtest-at`: the comparison on the later jobs in one line.
fn backtest_line(b: &mut String, r: &Report<'_>, backtest: Option<&(Captured, BacktestTail)>) {
    if let (Some(bh), Some((bc, t))) = (&r.backtest, backtest) {
        let _ = writeln!(
            b,
            "<p class=\"backtest\">Backtest (learned before {}, judged on {}): {} rescued, {} lost, <b>{} false kills</b>, <b>{:.1} GPU-hours saved</b>.</p>",
            esc(&bh.at),
            esc(&plural(bh.test_jobs, "later job", "later jobs")),
            bc.comparison.rescued,
            bc.comparison.lost,
            t.false_kills,
            t.gpu_hours_saved
        );
    }
}

/// GPU-hours by signature as bars: recovered (the runs after a failure that led to success)
/// vs futile.
fn hours_bars(b: &mut String, top: &[&(&SignatureStats, Verdict)]) {
    let max = top
        .iter()
        .map(|(s, _)| hours(s.gpu.once()))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let _ = write!(
        b,
        "<h2>GPU-hours by signature</h2>\n<p class=\"note\">Bars: the failed runs (grey), the runs after them that a retry recovered (green) and those in jobs that never succeeded (red).</p>\n<svg role=\"img\" aria-label=\"GPU-hours by signature\" viewBox=\"0 0 900 {}\" width=\"100%\" font-size=\"12\">",
        24 * top.len().max(1)
    );
    let texts = distinct_shorts(top.iter().map(|(s, _)| s.text.as_str()), 52);
    for (i, ((s, _), text)) in top.iter().zip(&texts).enumerate() {
        let y = i * 24;
        let scale = |h: u128| hours(h) / max * 480.0;
        let failed = scale(s.gpu.failed);
        let futile = scale(s.gpu.futile);
        let recovered = scale(s.gpu.after - s.gpu.futile.min(s.gpu.after));
        let _ = write!(
            b,
            "<text x=\"0\" y=\"{}\">{}</text><rect class=\"failed\" x=\"360\" y=\"{}\" width=\"{failed:.1}\" height=\"16\" fill=\"#9aa5b1\"/><rect class=\"recovered\" x=\"{:.1}\" y=\"{}\" width=\"{recovered:.1}\" height=\"16\" fill=\"#2f9e44\"/><rect class=\"futile\" x=\"{:.1}\" y=\"{}\" width=\"{futile:.1}\" height=\"16\" fill=\"#e03131\"/><text x=\"{:.1}\" y=\"{}\">{:.1}</text>",
            y + 14,
            esc(text),
            y + 2,
            360.0 + failed,
            y + 2,
            360.0 + failed + recovered,
            y + 2,
            366.0 + failed + recovered + futile,
            y + 14,
            hours(s.gpu.once())
        );
    }
    b.push_str("</svg>\n");
}

/// The signatures' table (the default's row below them), then those without a rule and the
/// collided retries that ran.
fn signatures_section(b: &mut String, r: &Report<'_>, top: &[&(&SignatureStats, Verdict)]) {
    let _ = write!(
        b,
        "<h2>Signatures</h2>\n<table><thead><tr><th>signature</th><th>runs</th><th>retry success (95%)</th><th>by attempt</th><th>today</th><th>proposed</th></tr></thead><tbody>\n"
    );
    let rows = top
        .iter()
        .map(|(s, v)| (*s, sensitive_words(r, s, v)))
        .chain(default_row(r));
    for (s, proposed) in rows {
        let mut depths = String::new();
        for (d, t) in ["1", "2", "3", "4", "5+"].iter().zip(s.by_depth) {
            match rate_of(t) {
                Some((p, l, h)) => {
                    let _ = write!(
                        depths,
                        "{d}: {} ({}–{}%, n={}) ",
                        percent(p),
                        percent_digits(l),
                        percent_digits(h),
                        t.trials
                    );
                }
                None => {
                    let _ = write!(depths, "{d}: – ");
                }
            }
        }
        let _ = writeln!(
            b,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"depths\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.text),
            esc(&runs_cell(s)),
            esc(&rate_words(s)),
            esc(depths.trim_end()),
            esc(&today(s)),
            esc(&proposed)
        );
    }
    b.push_str("</tbody></table>\n");
    for (s, why) in no_rules(r) {
        let _ = writeln!(
            b,
            "<p class=\"no-rule\">No rule for <code>{}</code>: {}</p>",
            esc(&s.text),
            esc(&why.to_string())
        );
    }
    if r.collisions_ran > 0 {
        let _ = writeln!(
            b,
            "<p class=\"note\">{}</p>",
            esc(&collisions_ran_words(r.collisions_ran))
        );
    }
}

/// The incident windows, and the bursts and surges learned from.
fn windows_section(b: &mut String, r: &Report<'_>) {
    if let Some((head, lines)) = incidents_lines(r) {
        let _ = writeln!(b, "<h2>Incidents</h2>\n<p>{}.</p>\n<ul>", esc(&head));
        for l in lines {
            let _ = writeln!(b, "<li>{}</li>", esc(&l));
        }
        b.push_str("</ul>\n");
    }
    if let Some(lines) = busy_lines(r) {
        b.push_str("<h2>Busy, learned from</h2>\n<ul>\n");
        for l in lines {
            let _ = writeln!(b, "<li>{}</li>", esc(&l));
        }
        b.push_str("</ul>\n");
    }
}

/// The suspect nodes, or why there are none.
fn suspects_section(b: &mut String, r: &Report<'_>) {
    b.push_str("<h2>Suspect nodes</h2>\n");
    if !r.nodes_named {
        b.push_str("<p>None: no run names a node.</p>\n");
    } else if r.suspects.is_empty() {
        b.push_str("<p>None: no node's failure share is an outlier.</p>\n");
    } else {
        b.push_str("<table><thead><tr><th>node</th><th>runs</th><th>failed</th><th>p</th><th>commonest signatures</th></tr></thead><tbody>\n");
        for s in r.suspects.iter().take(TOP) {
            let sigs: Vec<String> = s.signatures.iter().map(|(t, n)| format!("{} ×{n}", esc(t))).collect();
            let _ = writeln!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1e}</td><td>{}</td></tr>",
                esc(&s.node),
                s.runs,
                s.failed,
                s.tail,
                sigs.join("<br>")
            );
        }
        b.push_str("</tbody></table>\n");
    }
}

/// The proposed documents, folded, and with `adopt` the command that writes them.
fn documents_section(b: &mut String, r: &Report<'_>, judgement: &Judgement) {
    let _ = writeln!(
        b,
        "<details><summary>The proposed documents</summary><pre>{}</pre></details>",
        esc(r.documents)
    );
    if judgement.decision == Decision::Adopt {
        let _ = writeln!(
            b,
            "<p class=\"note\">Write it: <code>{}</code></p>",
            esc(&shown(&r.commands.write))
        );
    }
}

/// The page around `body`, titled with the policy's `name`.
fn page(name: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>retryctl suggest: {}</title>\n<style>body{{font-family:system-ui,sans-serif;margin:24px;color:#1f2933}}table{{border-collapse:collapse;margin:8px 0}}td,th{{border-bottom:1px solid #e4e7eb;padding:4px 8px;text-align:left;vertical-align:top}}.note{{color:#616e7c;font-size:12px}}.depths{{font-size:12px}}</style></head>\n<body><main>\n{body}</main></body></html>\n",
        esc(name)
    )
}
