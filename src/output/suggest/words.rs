//! What the table, the page and the report say alike about `suggest`'s signatures and
//! comparison: rates, today's decision, the proposed rule, the evidence, the observed and the
//! estimated.
//!
//! Owns: those words, plain (each format escapes them its own way). Must not: lay out a
//! table, a page or a report, or write the record.

use std::fmt::Write as _;

use crate::engine::job_report::plural;
use crate::engine::DecisionKind;
use crate::model::duration::GoDuration;
use crate::model::Action;
use crate::output::text::shown;
use crate::output::words::{failed_to_pending_words, percent, percent_digits};
use crate::replay::compare::{hours, Comparison};
use crate::replay::incidents::{Kind, Window};
use crate::replay::sink::Estimates;
use crate::suggest::documents::{Merged, Upstream};
use crate::suggest::exits::Unsplit;
use crate::suggest::incidents::{Found, Listed};
use crate::suggest::propose::{DefaultDecision, Defaults, NoRule, Proposed, Verdict};
use crate::suggest::stats::SignatureStats;

use super::report::Report;

/// Signatures the table, the page and the report list.
pub(super) const TOP: usize = 20;

/// `12.5%  (8.1–18.3%)`, or `-` without trials.
pub(super) fn rate_words(s: &SignatureStats) -> String {
    match s.rate() {
        Some((r, l, h)) => format!("{} ({}–{})", percent(r), percent_digits(l), percent(h)),
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
    // The runs incidents left out, said beside the runs: the trials below are the others'.
    let left_out = match s.in_incidents {
        0 => String::new(),
        n => format!(" ({n} in incidents, not learned from)"),
    };
    let mut e = format!(
        "{} failed runs{jobs}{left_out}; {} retried, {} succeeded",
        s.failed_runs, s.trials.trials, s.trials.successes
    );
    if let Some((r, l, h)) = s.rate() {
        let _ = write!(e, ": {} (95%: {}–{})", percent(r), percent_digits(l), percent(h));
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
                format!("{} ({rule}, {} of runs {did})", action.as_str(), percent(share))
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
        Verdict::None(why @ (NoRule::TooFewTrials { .. } | NoRule::FutilityOneDay { .. } | NoRule::RetriesCollide)) => {
            as_today(why)
        }
        Verdict::None(_) => "as today (no rule)".into(),
    }
}

/// Whether a signature's cell says why it has no rule of its own (so no line under the
/// signatures repeats it).
fn cell_says(why: &NoRule) -> bool {
    matches!(
        why,
        NoRule::TooFewTrials { .. } | NoRule::FutilityOneDay { .. } | NoRule::RetriesCollide
    )
}

/// A signature's PROPOSED cell with incident windows: what it proposes, and, when its
/// incident runs counted would change that, what they would make of it (`incident-sensitive:
/// Fail with the incident runs`).
pub(super) fn sensitive_words(r: &Report<'_>, s: &SignatureStats, v: &Verdict) -> String {
    let cell = signature_words(r, s, v);
    match r.incidents.as_ref().and_then(|i| i.sensitive.get(&s.text)) {
        Some(with) => format!(
            "{cell}; incident-sensitive: {} with the incident runs",
            proposal_words(with, r.upstream)
        ),
        None => cell,
    }
}

/// The incident windows' headline: how many, their median length, the failed runs left out
/// of learning, and the record's retries inside them.
pub(super) fn incidents_words(f: &Found) -> String {
    let median = f.median().map_or_else(String::new, |m| {
        format!(" (median {})", GoDuration(u64::try_from(m).unwrap_or(0)))
    });
    let (retried, succeeded) = f.retried();
    format!(
        "{}{median}: {} of {} failed runs learned from left out of learning ({}); the record retried {} inside them, {} succeeded",
        plural(f.windows.len() as u64, "window", "windows"),
        f.left_out,
        f.failed_runs,
        percent(f.left_out as f64 / f.failed_runs.max(1) as f64),
        plural(retried, "failed run", "failed runs"),
        succeeded
    )
}

/// One window in a line: its span, jobs, failed runs and GPU-hours, its commonest
/// signatures, and its node concentration when over half.
pub(super) fn window_words(w: &Window, l: &Listed) -> String {
    let given = match (w.detected, w.given) {
        (false, true) => " (given)",
        (true, true) => " (detected and given)",
        _ => "",
    };
    let sigs: Vec<String> = Listed::top(&l.signatures, 3)
        .into_iter()
        .map(|(t, n)| format!("{} ×{n}", short(t, 40)))
        .collect();
    let mut line = format!(
        "{} – {}{given}: {}, {}, {:.1} GPU-hours; {}",
        w.from,
        w.to,
        plural(l.jobs, "job", "jobs"),
        plural(l.failed_runs, "failed run", "failed runs"),
        hours(l.gpu),
        sigs.join(", ")
    );
    if let Some(share) = l.node_share() {
        let nodes: Vec<String> = Listed::top(&l.nodes, 3)
            .into_iter()
            .map(|(n, _)| shown(n).into_owned())
            .collect();
        let _ = write!(
            line,
            "; {} of them on {} (a node event?)",
            percent(share),
            nodes.join(", ")
        );
    }
    line
}

/// The Retry rules whose first delay (the policy's, the same for each) is shorter than the
/// median incident, for signatures hit inside one: `None` without any.
pub(super) fn backoff_words(short_backoff: &[(String, GoDuration)], median: i64) -> Option<String> {
    let (_, delay) = short_backoff.first()?;
    let texts: Vec<String> = short_backoff.iter().map(|(t, _)| short(t, 40)).collect();
    Some(format!(
        "backoff {delay} < the median incident, {}: the retries of {} come back while an incident may last ({})",
        GoDuration(u64::try_from(median).unwrap_or(0)),
        plural(
            texts.len() as u64,
            "signature hit inside one",
            "signatures hit inside one"
        ),
        texts.join(", ")
    ))
}

/// A signature's runs as a row of the page or the report shows them: its failed runs, and
/// those left out of its trials (in incidents, or collided retries after them).
pub(super) fn runs_cell(s: &SignatureStats) -> String {
    let mut apart = Vec::new();
    if s.in_incidents > 0 {
        apart.push(format!("{} in incidents", s.in_incidents));
    }
    if s.collided > 0 {
        apart.push(format!("{} retries collided", s.collided));
    }
    match apart.is_empty() {
        true => s.failed_runs.to_string(),
        false => format!("{} ({})", s.failed_runs, apart.join(", ")),
    }
}

/// What incidents left out of learning, on the route's way (docs/reference/suggest.md "What
/// the route says"): `-o policy`'s first line, stderr's line in every format, and the warning
/// past half. `None` when they left no run out.
pub struct LeftOut {
    /// `# incidents: 2 windows, 480 of 1871 failed runs (25.7%) left out of learning: …`
    pub policy: String,
    /// `incidents: 2 windows, 25.7% of failed runs left out of learning`
    pub stderr: String,
    /// Past half of the failed runs left out: the warning that the windows hold most of it.
    pub warning: Option<String>,
}

/// [`LeftOut`] of `f`.
pub fn left_out(f: &Found) -> Option<LeftOut> {
    if f.left_out == 0 {
        return None;
    }
    let share = f.left_out as f64 / f.failed_runs.max(1) as f64;
    let windows = plural(f.windows.len() as u64, "window", "windows");
    let spans: Vec<String> = f.windows.iter().map(|(w, _)| format!("{}/{}", w.from, w.to)).collect();
    Some(LeftOut {
        policy: format!(
            "incidents: {windows}, {} of {} failed runs ({}) left out of learning: {}",
            f.left_out,
            f.failed_runs,
            percent(share),
            spans.join(", ")
        ),
        stderr: format!("incidents: {windows}, {} of failed runs left out of learning", percent(share)),
        warning: (2 * f.left_out > f.failed_runs).then(|| {
            format!(
                "the incident windows hold most of the history ({} of the failed runs left out of learning): the proposal rests on the rest; `--incidents off` to learn from every run",
                percent(share)
            )
        }),
    })
}

/// An expected count: one decimal under 10, whole past it.
pub(super) fn expected_words(x: f64) -> String {
    match x < 10.0 {
        true => format!("{x:.1}"),
        false => format!("{x:.0}"),
    }
}

/// A burst or a surge in a line (docs/reference/suggest.md "Incidents"): its span, what it
/// is, and its jobs, failed runs and GPU-hours (learned from).
pub(super) fn busy_words(w: &Window, kind: &Kind, l: &Listed) -> String {
    let what = match kind {
        Kind::Burst { queue, job_set, jobs } => format!(
            "job set {}/{}'s burst ({} of it in its busiest hour)",
            shown(queue),
            shown(job_set),
            plural(*jobs, "failing job", "failing jobs")
        ),
        Kind::Surge { jobs, expected } => format!(
            "{} failed where {} were expected at that hour; the usual mix",
            plural(*jobs, "job", "jobs"),
            expected_words(*expected)
        ),
        Kind::Incident => "an incident".to_string(),
    };
    format!(
        "{} – {}: {what}: {}, {}, {:.1} GPU-hours",
        w.from,
        w.to,
        plural(l.jobs, "job", "jobs"),
        plural(l.failed_runs, "failed run", "failed runs"),
        hours(l.gpu)
    )
}

/// The bursts and surges as the page and the report list them, a line each: `None` without
/// any.
pub(super) fn busy_lines(r: &Report<'_>) -> Option<Vec<String>> {
    (!r.busy.is_empty()).then(|| r.busy.iter().map(|(w, k, l)| busy_words(w, k, l)).collect())
}

/// The incident windows as the page and the report list them: the headline, a line a window,
/// and the backoff remark.
pub(super) fn incidents_lines(r: &Report<'_>) -> Option<(String, Vec<String>)> {
    let i = r.incidents.as_ref()?;
    let mut lines: Vec<String> = i.found.windows.iter().map(|(w, l)| window_words(w, l)).collect();
    lines.extend(i.found.median().and_then(|m| backoff_words(&i.short_backoff, m)));
    Some((incidents_words(i.found), lines))
}

/// Retries the baseline's categorizer says collide that the record shows ran.
pub(super) fn collisions_ran_words(n: u64) -> String {
    format!(
        "{} the baseline's categorizer says collide ran in the record (a pod that ran was deleted, not kept): is the baseline's executor config the deployed one?",
        plural(n, "retry", "retries")
    )
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
    (!d.pooled.is_empty()).then(|| {
        let cell = default_words(d, r.upstream);
        let cell = match r.incidents.as_ref().and_then(|i| i.sensitive.get(&d.stats.text)) {
            Some(with) => format!(
                "{cell}; incident-sensitive: {} with the incident runs",
                proposal_words(with, r.upstream)
            ),
            None => cell,
        };
        (&d.stats, cell)
    })
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
            Verdict::None(w) if !cell_says(w) => Some((*s, w)),
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

/// [`short`], cut in the middle instead: its start and its end kept, since two signatures of
/// one message most often differ at its end (a registry's `… 503 Service Unavailable"` and a
/// missing tag's `… not found"`).
fn short_middle(s: &str, n: usize) -> String {
    let s = shown(s);
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= n || n < 2 {
        return s.into_owned();
    }
    let tail = (n - 1) / 3;
    let head = n - 1 - tail;
    let mut t: String = chars[..head].iter().collect();
    t.push('…');
    t.extend(&chars[chars.len() - tail..]);
    t
}

/// [`short`] of each of `texts`, no two different texts read alike: a cut that reads as
/// another's is cut in the middle instead ([`short_middle`]); one that still does ends in `#`
/// and 6 hex digits of its text's hash (then its place among them), so that a table never
/// prints two signatures as the same text.
pub(super) fn distinct_shorts<'a>(texts: impl IntoIterator<Item = &'a str>, n: usize) -> Vec<String> {
    let texts: Vec<&str> = texts.into_iter().collect();
    let mut cuts: Vec<String> = texts.iter().map(|t| short(t, n)).collect();
    let alike =
        |cuts: &[String], i: usize| (0..texts.len()).any(|j| j != i && cuts[j] == cuts[i] && texts[j] != texts[i]);
    let mut tagged: Vec<usize> = (0..texts.len()).filter(|&i| alike(&cuts, i)).collect();
    for &i in &tagged {
        cuts[i] = short_middle(texts[i], n);
    }
    tagged.retain(|&i| alike(&cuts, i));
    for &i in &tagged {
        let tag = format!(" #{:06x}", crate::suggest::documents::fnv1a64(texts[i]) & 0xff_ffff);
        let room = n.saturating_sub(tag.chars().count()).max(2);
        cuts[i] = format!("{}{tag}", short_middle(texts[i], room));
    }
    for (k, &i) in tagged.iter().enumerate() {
        if alike(&cuts, i) {
            cuts[i] = format!("{} ({})", cuts[i], k + 1);
        }
    }
    cuts
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

/// `--keep-categorizer`'s note when it adds categories after the deployed ones: their names,
/// each signature under its category in the documents.
pub fn kept_and_added(categories: &[crate::suggest::documents::NewCategory]) -> String {
    let names: Vec<String> = categories.iter().map(|c| format!("`{}`", shown(&c.name))).collect();
    format!(
        "--keep-categorizer: today's categories kept as they are; added after them, for failures none of them takes: {}",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use crate::suggest::incidents::Found;

    /// Past half of the failed runs, the warning gives the share left out (not the share
    /// learned from), and the stderr line and `-o policy`'s header the same share.
    #[test]
    fn past_half_the_warning_gives_the_share_left_out() {
        let found = Found {
            windows: Vec::new(),
            busy: Vec::new(),
            lambda: 0.0,
            tests: 0,
            failed_runs: 10,
            left_out: 7,
            in_windows: 7,
        };
        let said = super::left_out(&found).unwrap();
        assert_eq!(
            said.stderr,
            "incidents: 0 windows, 70.0% of failed runs left out of learning"
        );
        assert_eq!(
            said.warning.as_deref(),
            Some(
                "the incident windows hold most of the history (70.0% of the failed runs left out of learning): \
                 the proposal rests on the rest; `--incidents off` to learn from every run"
            )
        );
        let half = Found {
            left_out: 5,
            in_windows: 5,
            ..found
        };
        assert_eq!(super::left_out(&half).unwrap().warning, None);
    }
}
