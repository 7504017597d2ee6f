//! `suggest`'s Markdown report (`-o markdown`): the verdict, what was observed and
//! estimated, the backtest, the signatures, the suspect nodes and the proposed documents.
//!
//! Owns: the report's layout. Must not: write the table, the page or the record.

use std::fmt::Write as _;

use crate::engine::job_report::plural;
use crate::output::markdown::{code_span, comparison_contention, text as md};
use crate::output::words::plan_sentence;
use crate::suggest::verdict::{Decision, Judgement};

use super::capture::{BacktestTail, Captured};
use super::report::Report;
use super::words::{
    busy_lines, collisions_ran_words, default_row, distinct_shorts, estimated, gpu_cell, incidents_lines, merged_words,
    no_rules, observed, rate_words, runs_cell, sensitive_words, short, today, TOP,
};

pub(super) fn markdown(
    r: &Report<'_>,
    whole: &Captured,
    backtest: Option<&(Captured, BacktestTail)>,
    judgement: &Judgement,
) -> String {
    let mut m = String::new();
    let c = &whole.comparison;
    let _ = writeln!(m, "## Proposed retry policy `{}`\n", md(r.name));
    let _ = writeln!(
        m,
        "**Verdict: {}** — {}\n",
        md(&judgement.decision.words()),
        md(&judgement.reasons.join("; "))
    );
    let _ = writeln!(
        m,
        "Learned from {} ({} failed runs, {}).\n",
        plural(r.jobs, "job", "jobs"),
        r.failed_runs,
        plural(r.signatures.len() as u64, "signature", "signatures")
    );
    let _ = writeln!(m, "**Observed against the baseline:** {}.\n", observed(c));
    if let Some(x) = &c.explained {
        let _ = writeln!(m, "**Baseline:** {}.\n", x.words(code_span));
    }
    if let Some(s) = &c.contention {
        comparison_contention(&mut m, s);
    }
    if let Some(line) = whole.estimates.as_ref().and_then(|e| estimated(c, e)) {
        let _ = writeln!(m, "**Estimated** (not observed): {}.\n", md(&line));
    }
    let _ = writeln!(m, "{}\n", md(&plan_sentence(c)));
    for q in r.queues.iter().filter(|q| q.changed > 0) {
        let _ = writeln!(m, "- {}", md(&q.words()));
    }
    if r.queues.iter().any(|q| q.changed > 0) {
        m.push('\n');
    }
    if let Some(u) = r.upstream {
        for g in &u.merged {
            let _ = writeln!(m, "{}\n", md(&merged_words(g)));
        }
        for a in &u.action_changes {
            let _ = writeln!(m, "**Cluster-wide:** {}\n", md(&a.words()));
        }
    }
    if let (Some(b), Some((bc, t))) = (&r.backtest, backtest) {
        let _ = writeln!(
            m,
            "**Backtest** (learned before {}, judged on {}): {} rescued, {} lost, **{} false kills**, **{:.1} GPU-hours saved**.\n",
            md(&b.at),
            plural(b.test_jobs, "later job", "later jobs"),
            bc.comparison.rescued,
            bc.comparison.lost,
            t.false_kills,
            t.gpu_hours_saved
        );
    }
    let _ = writeln!(
        m,
        "| signature | runs | retry success (95%) | GPU-h | today | proposed |"
    );
    let _ = writeln!(m, "|---|---:|---|---:|---|---|");
    // Each signature's row, then the default's below them.
    let rows: Vec<_> = r
        .signatures
        .iter()
        .take(TOP)
        .map(|(s, v)| (*s, sensitive_words(r, s, v)))
        .chain(default_row(r))
        .collect();
    let texts = distinct_shorts(rows.iter().map(|(s, _)| s.text.as_str()), 80);
    for ((s, proposed), text) in rows.into_iter().zip(texts) {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} | {} |",
            md(&text),
            md(&runs_cell(s)),
            rate_words(s),
            gpu_cell(s),
            md(&today(s)),
            md(&proposed)
        );
    }
    for (k, (s, why)) in no_rules(r).enumerate() {
        let head = if k == 0 { "\n" } else { "" };
        let _ = writeln!(
            m,
            "{head}- no rule for {}: {}",
            md(&short(&s.text, 80)),
            md(&why.to_string())
        );
    }
    if r.collisions_ran > 0 {
        let _ = writeln!(m, "\n**Note:** {}", md(&collisions_ran_words(r.collisions_ran)));
    }
    if let Some((head, lines)) = incidents_lines(r) {
        let _ = writeln!(m, "\n**Incidents:** {}.\n", md(&head));
        for l in lines {
            let _ = writeln!(m, "- {}", md(&l));
        }
    }
    if let Some(lines) = busy_lines(r) {
        let _ = writeln!(m, "\n**Busy, learned from:**\n");
        for l in lines {
            let _ = writeln!(m, "- {}", md(&l));
        }
    }
    if !r.suspects.is_empty() {
        let _ = writeln!(m, "\n**Suspect nodes:**\n");
        for s in r.suspects.iter().take(TOP) {
            let _ = writeln!(
                m,
                "- {}: {} of {} runs failed (p = {:.1e})",
                md(&s.node),
                s.failed,
                s.runs,
                s.tail
            );
        }
    }
    let _ = writeln!(
        m,
        "\n<details><summary>The proposed documents</summary>\n\n~~~yaml\n{}~~~\n\n</details>",
        r.documents
    );
    if judgement.decision == Decision::Adopt {
        let _ = writeln!(m, "\nWrite it: {}", code_span(&r.commands.write));
    }
    m
}
