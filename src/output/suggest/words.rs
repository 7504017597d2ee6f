//! What the table, the page and the report say alike about `suggest`'s signatures and
//! comparison: rates, today's decision, the proposed rule, the evidence, the observed and the
//! estimated.
//!
//! Owns: those words, plain (each format escapes them its own way). Must not: lay out a
//! table, a page or a report, or write the record.

use std::fmt::Write as _;

use crate::engine::job_report::plural;
use crate::engine::DecisionKind;
use crate::model::Action;
use crate::output::text::shown;
use crate::output::words::failed_to_pending_words;
use crate::replay::compare::{hours, Comparison};
use crate::replay::sink::Estimates;
use crate::suggest::documents::{Merged, Upstream};
use crate::suggest::exits::Unsplit;
use crate::suggest::propose::{DefaultDecision, Defaults, NoRule, Proposed, Verdict};
use crate::suggest::stats::SignatureStats;

use super::report::Report;

/// Signatures the table, the page and the report list.
pub(super) const TOP: usize = 20;

/// A share as a percentage with one decimal.
pub(super) fn pct(p: f64) -> String {
    format!("{:.1}%", p * 100.0)
}

/// `12.5%  (8.1–18.3%)`, or `-` without trials.
pub(super) fn rate_words(s: &SignatureStats) -> String {
    match s.rate() {
        Some((r, l, h)) => format!("{} ({:.1}–{})", pct(r), l * 100.0, pct(h)),
        None => "-".into(),
    }
}

/// The evidence of a rule, in one line (a comment above it in the documents).
pub fn evidence(s: &SignatureStats) -> String {
    // A pool of signatures (the default's) counts no jobs: a job may hold runs of several.
    let jobs = match s.jobs {
        0 => String::new(),
        n => format!(" in {}", plural(n, "job", "jobs")),
    };
    let mut e = format!(
        "{} failed runs{jobs}; {} retried, {} succeeded",
        s.failed_runs, s.trials.trials, s.trials.successes
    );
    if let Some((r, l, h)) = s.rate() {
        let _ = write!(e, ": {} (95%: {:.1}–{})", pct(r), l * 100.0, pct(h));
    }
    let gpu = hours(s.gpu.once());
    if gpu > 0.0 {
        let _ = write!(e, "; {gpu:.1} GPU-hours, {:.1} of them futile", hours(s.gpu.futile));
    }
    e
}

/// What the baseline does with a signature, in a few words: its commonest decision, and the
/// share of the signature's failed runs it decided when that is not all of them, said as
/// what it did (`Retry (today/default, 89.2% of runs retried)`): a bare share read as a
/// success rate.
pub(super) fn today(s: &SignatureStats) -> String {
    match s.current_sorted().first() {
        // No policy applied (no baseline, or none for the job's queue): what decided is the
        // legacy path, said so, not as a rule named `legacy_fail` nor as a share of runs
        // (its other runs came after the job's end, which no policy reached).
        Some((rule, Action::Fail, _)) if *rule == DecisionKind::LegacyFail.as_str() => {
            "Fail: no policy (the legacy path)".into()
        }
        Some((rule, action, runs)) => {
            let share = *runs as f64 / s.failed_runs.max(1) as f64;
            if share >= 0.995 {
                format!("{} ({rule})", action.as_str())
            } else {
                let did = match action {
                    Action::Retry => "retried",
                    Action::Fail => "failed",
                };
                format!("{} ({rule}, {} of runs {did})", action.as_str(), pct(share))
            }
        }
        None => "undecided".into(),
    }
}

///
/// Under today's Armada the one policy `retryLimit` decides every Retry rule: the cell says
/// what the written policy does (`upstream`: that limit as written), and the signature's own
/// limit only beside it, cut (and why) or raised; never a limit the document does not carry.
pub(super) fn proposal_words(v: &Verdict, upstream: Option<&Upstream>) -> String {
    // A Fail signature that shares its category with a Retry one is retried with it.
    if let (Verdict::Rule(p), Some(u)) = (v, upstream) {
        if let (None, Some(g)) = (p.limit, u.merged.iter().find(|g| g.signatures.contains(&p.text))) {
            return format!(
                "Retry ×{} (merged in `{}`: no matcher splits it from a Retry signature)",
                u.written_retry_limit, g.category
            );
        }
    }
    // A thin signature today's default decided, given a rule that writes today's decision.
    if let Verdict::Rule(
        p @ Proposed {
            as_today: Some(why), ..
        },
    ) = v
    {
        let decision = DefaultDecision {
            action: p.action,
            limit: p.limit,
        };
        return format!("{}: {}", as_today(why), decision_words(as_written(decision, upstream)));
    }
    match v {
        Verdict::Rule(p) => match p.limit {
            Some(l) => {
                let node = if p.avoid_same_node { ", other node" } else { "" };
                let written = upstream.map_or(l, |u| u.written_retry_limit);
                let why = match upstream {
                    Some(u) if l > written => match &u.cut_by {
                        Some(by) => format!(
                            " (policy limit {written}; ×{l} cut: a higher one would retry `{}` further)",
                            shown(by)
                        ),
                        None => format!(" (policy limit {written}; ×{l} cut)"),
                    },
                    Some(_) if l < written => {
                        format!(" (policy limit {written}; ×{l} raised: one limit for every rule)")
                    }
                    _ => String::new(),
                };
                format!("Retry ×{written}{node}{}{why}", extrapolated(p))
            }
            None => "Fail".into(),
        },
        Verdict::None(why @ NoRule::TooFewTrials { .. }) => as_today(why),
        Verdict::None(_) => "as today (no rule)".into(),
    }
}

/// A signature's PROPOSED cell: its rule, or, when the proposal's default is learned anew and
/// decides its runs, that default.
pub(super) fn signature_words(r: &Report<'_>, s: &SignatureStats, v: &Verdict) -> String {
    let d = r.default;
    if d.changes() && d.pooled.contains(&s.text) {
        return format!("by the default: {}", default_words(d, r.upstream));
    }
    proposal_words(v, r.upstream)
}

/// The default's row after the signatures (docs/reference/suggest.md "The policy's
/// defaults"): its pooled counts and what the proposal's default does, shown when some
/// signature's runs were pooled into it.
pub(super) fn default_row<'r>(r: &'r Report<'_>) -> Option<(&'r SignatureStats, String)> {
    let d = r.default;
    (!d.pooled.is_empty()).then(|| (&d.stats, default_words(d, r.upstream)))
}

/// What the proposal's default does: the learned one as a rule's cell, else today's and why.
fn default_words(d: &Defaults, upstream: Option<&Upstream>) -> String {
    match &d.verdict {
        Verdict::Rule(_) => proposal_words(&d.verdict, upstream),
        Verdict::None(why) => format!("as today ({why})"),
    }
}

/// A signature decided as today for thin evidence: `as today (too few trials: 7)`.
fn as_today(why: &NoRule) -> String {
    match why {
        NoRule::TooFewTrials { trials, .. } => format!("as today (too few trials: {trials})"),
        why => format!("as today ({why})"),
    }
}

/// A decision as the written policy makes it: upstream, every Retry takes the policy's one
/// `retryLimit`.
pub(super) fn as_written(d: DefaultDecision, upstream: Option<&Upstream>) -> DefaultDecision {
    DefaultDecision {
        limit: d.limit.map(|l| upstream.map_or(l, |u| u.written_retry_limit)),
        ..d
    }
}

/// A default in a few words: `Retry ×4`, `Fail`.
pub(super) fn decision_words(d: DefaultDecision) -> String {
    match d.limit {
        Some(l) => format!("{} ×{l}", d.action.as_str()),
        None => d.action.as_str().to_string(),
    }
}

/// `(extrapolated from depth D)` after a limit `--extrapolate` took past its evidence.
fn extrapolated(p: &Proposed) -> String {
    match p.extrapolated_from {
        Some(0) => " (extrapolated from all depths)".to_string(),
        Some(d) => format!(" (extrapolated from depth {d})"),
        None => String::new(),
    }
}

/// The first 5 signatures without a rule of their own for another reason than too few
/// trials (which their cell says), each with its reason: listed under the signatures.
pub(super) fn no_rules<'r>(r: &'r Report<'_>) -> impl Iterator<Item = (&'r SignatureStats, &'r NoRule)> {
    r.signatures
        .iter()
        .filter_map(|(s, v)| match v {
            Verdict::None(w) if !matches!(w, NoRule::TooFewTrials { .. }) => Some((*s, w)),
            _ => None,
        })
        .take(5)
}

/// A signature cut for a table cell, [`shown`] escaped first so that the cut counts what the
/// terminal shows.
pub(super) fn short(s: &str, n: usize) -> String {
    let s = shown(s);
    if s.chars().count() <= n {
        return s.into_owned();
    }
    let mut t: String = s.chars().take(n - 1).collect();
    t.push('…');
    t
}

pub(super) fn gpu_cell(s: &SignatureStats) -> String {
    format!("{:.1}", hours(s.gpu.once()))
}

/// What the comparison observed, as the headlines say it (the estimate is said apart).
pub(super) fn observed(c: &Comparison) -> String {
    format!(
        "{} rescued, {} lost; retries +{} / −{}; GPU-hours +{:.1} / −{:.1}",
        c.rescued,
        c.lost,
        c.retries_added,
        c.retries_removed,
        hours(c.gpu_added),
        hours(c.gpu_removed)
    )
}

/// The estimate for the Pending jobs, apart from what was observed (docs/suggest.md "The
/// verdict"): the expected successes of the Failed → Pending jobs and the GPU-hours the
/// Pending jobs are expected to take; `None` without a Pending job.
pub(super) fn estimated(c: &Comparison, e: &Estimates) -> Option<String> {
    let n = c.failed_to_pending();
    let p = &e.pending;
    let mut parts = Vec::new();
    if n > 0 {
        parts.push(failed_to_pending_words(n, &e.asked));
    }
    if p.jobs > p.without_estimate {
        parts.push(format!(
            "{:.1} more GPU-hours for the {} Pending",
            p.gpu_hours,
            plural(p.jobs, "job", "jobs")
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A category that stands for signatures whose proposals differ: what it does and why (no
/// `onExitCodes` rule splits them either: each signature's reason).
pub(super) fn merged_words(g: &Merged) -> String {
    let why = g
        .unsplit
        .iter()
        .map(|(s, u)| unsplit_words(&short(s, 40), u))
        .collect::<Vec<_>>()
        .join("; ");
    let why = if why.is_empty() {
        String::new()
    } else {
        format!(", and no exit code splits them: {why}")
    };
    format!(
        "category `{}` stands for {}: no one matcher tells them apart (a rule has one matcher{why}), so it retries them all, the decision that loses no job",
        g.category,
        g.signatures.iter().map(|s| short(s, 40)).collect::<Vec<_>>().join(", ")
    )
}

/// Why no `onExitCodes` rule splits `signature` from the others of its message.
fn unsplit_words(signature: &str, u: &Unsplit) -> String {
    match u {
        Unsplit::NoExitCode => format!("{signature} has no exit code"),
        Unsplit::UnnamedContainer => format!("{signature}'s container has no name for `containerName`"),
        Unsplit::Shared {
            container,
            code,
            with: Some(other),
        } => format!(
            "{signature} shares exit code {code} in container `{}` with {}",
            shown(container),
            short(other, 40)
        ),
        Unsplit::Shared {
            container,
            code,
            with: None,
        } => format!(
            "{signature}'s exit code {code} in container `{}` is not told apart (the history holds more than {} exit codes)",
            shown(container),
            crate::suggest::exits::MAX_CODES
        ),
    }
}
