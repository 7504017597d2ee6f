//! What tune's formats say alike: the recommendation in words, the line when the estimates
//! alone decided it, the constraints, the inputs, `--pick`'s warning, and a candidate's values
//! and errors as stderr says them.
//!
//! Owns: those sentences. Must not: count or rank.

use crate::engine::job_report::plural;
use crate::model::failure_history::Final;
use crate::replay::explained::Explained;
use crate::suggest::verdict::Decision;
use crate::tune::rank::{EstimatesDecide, Excluded, Ranked};
use crate::tune::CandidateError;

use crate::output::lines;
use crate::output::words::{recorded_words, seconds_words, signed_nanos};

use super::view::*;

/// What the OVERLAP column says (docs/contention.md), under every format's table.
pub(super) const OVERLAP_NOTE: &str = "OVERLAP: the change of the retries' overlap with other jobs' waiting demand against the baseline, what coincided in the record's times; the queue another policy would have made is not modelled";

/// The recommended candidate's values as `--vary` names them (`ml:spec.retryLimit=3`), or
/// `None` without a recommendation.
pub(super) fn recommended_values(view: &TuneView<'_>) -> Option<Vec<String>> {
    let r = view.ranked;
    r.recommended
        .map(|i| r.candidates[i].values.iter().map(|(k, v)| format!("{k}={v}")).collect())
}

/// The recommendation in words.
pub(super) fn recommendation(view: &TuneView<'_>) -> String {
    let r = view.ranked;
    match r.recommended {
        Some(i) => {
            let s = &r.candidates[i];
            let c = &s.tally.comparison;
            format!(
                "recommended: candidate {}: ≈ {:.1} expected successes, {:+.1} over the baseline; {} rescued, {} lost, {} → Pending; cost {}",
                s.id,
                s.expected_succeeded,
                s.expected_succeeded - r.baseline.expected_succeeded,
                c.rescued,
                c.lost,
                c.to_pending,
                signed_nanos(s.cost_nanos)
            )
        }
        None => format!("recommended: none: {}", none_recommended(r, "no candidate")),
    }
}

/// Why no candidate is recommended: the baseline does not explain the record (nothing
/// measured against it holds), or none beats it.
pub fn none_recommended(r: &Ranked, none: &str) -> String {
    match (&r.baseline.explained, r.baseline.unexplained) {
        (Some(e), true) => e.unexplained_words(),
        _ => format!("{none} within the constraints beats the baseline's expected successes or matches them for less cost; keep the baseline"),
    }
}

/// A recommendation that only the estimates put ahead, in one line, and, without
/// `--max-compute`, how to cap what it may cost.
pub(super) fn estimates_decide_line(view: &TuneView<'_>) -> Option<String> {
    let r = view.ranked;
    let recommended = &r.candidates[r.recommended?];
    let (rival, theirs) = match r.estimates_decide? {
        EstimatesDecide::Baseline => ("the baseline".to_string(), r.baseline.finals[Final::Succeeded as usize]),
        EstimatesDecide::Candidate(i) => (format!("candidate {}", r.candidates[i].id), r.candidates[i].succeeded()),
    };
    let ours = recommended.succeeded();
    let counts = if ours == theirs {
        format!("{} each", plural(ours, "job", "jobs"))
    } else {
        format!("{ours} jobs against {theirs}")
    };
    // Said with a cap too: the cap bounds what the estimates may cost, not whether they
    // decided.
    let advice = match view.max_compute {
        Some(_) => "",
        None => "; give --max-compute (10h, or 50% of the baseline's compute) to cap the compute it adds",
    };
    Some(format!(
        "decided by estimates alone: in the record, candidate {} succeeds no more often than {rival} ({counts}){advice}",
        recommended.id
    ))
}

/// `--max-compute` (`max`, as typed; `applied`, in seconds) as the inputs line says it:
/// `cost ≤ 8h`, `cost ≤ 100% of the baseline's compute (2h25m56s)`, `cost unbounded`.
pub(super) fn compute_words(max: Option<&str>, applied: Option<f64>) -> String {
    max.map_or("cost unbounded".to_string(), |m| match applied {
        Some(s) if m.ends_with('%') => format!("cost ≤ {m} of the baseline's compute ({})", seconds_words(s)),
        _ => format!("cost ≤ {m}"),
    })
}

/// `--pick ID` after a search that finds the baseline does not explain the record (past
/// `--max-contradictions`), refused without `--force` as `--pick recommended` is: nothing
/// measured against that baseline holds (docs/tune.md "Writing the choice").
pub fn pick_unexplained_refusal(id: u64, explained: &Explained) -> String {
    format!("candidate {id} is not written: {}", explained.unexplained_words())
}

/// The next step of [`pick_unexplained_refusal`].
pub const PICK_UNEXPLAINED_HINT: &str = "export the history of the policy the cluster ran (or give it as --baseline), raise --max-contradictions, or --force to write the candidate headed by a reject verdict";

/// The first line of a pick written over a reject (`# verdict: reject (do not adopt): …`),
/// as `suggest -o policy` heads a proposal it rejects: `apply` refuses it unless `--force`.
pub fn pick_verdict_line(reasons: &[String]) -> String {
    format!("# verdict: {}: {}\n", Decision::Reject.words(), reasons.join("; "))
}

/// What stderr says of a pick written headed by a reject verdict (`reasons`).
pub fn pick_rejected_warning(id: u64, reasons: &[String]) -> String {
    format!(
        "candidate {id} is written headed by a reject verdict ({}): `apply` refuses it unless --force",
        reasons.join("; ")
    )
}

/// `tune --pick ID` after a search (docs/tune.md): what candidate `index` of `ranked` gives
/// up, when it loses a job the baseline saves or breaks a constraint (each said as the
/// inputs line says it), and what is recommended instead; `None` when it does neither.
/// `max_compute`: `--max-compute` as typed.
pub fn pick_warning(ranked: &Ranked, index: usize, max_compute: Option<&str>) -> Option<String> {
    let (what, recommendation) = pick_problem(ranked, index, max_compute)?;
    Some(format!("{what}; the recommendation is {recommendation}"))
}

/// `--pick ID` of a candidate that loses a job the baseline saves or breaks a constraint,
/// refused without `--force` (docs/tune.md "Picking a candidate").
pub fn pick_refusal(ranked: &Ranked, index: usize, max_compute: Option<&str>) -> Option<String> {
    let (what, recommendation) = pick_problem(ranked, index, max_compute)?;
    Some(format!(
        "{what}: pick another (the recommendation is {recommendation}), or `--force` to write it"
    ))
}

/// What is wrong with candidate `index` (`candidate N loses …, and costs …`), and the
/// recommendation in words; `None` when nothing is.
fn pick_problem(ranked: &Ranked, index: usize, max_compute: Option<&str>) -> Option<(String, String)> {
    let c = &ranked.candidates[index];
    let lost = c.tally.comparison.lost;
    if lost == 0 && c.excluded.is_empty() {
        return None;
    }
    let mut clauses = Vec::new();
    let over_lost = c.excluded.iter().find_map(|e| match e {
        Excluded::Lost { max, .. } => Some(*max),
        _ => None,
    });
    if lost > 0 {
        let list = crate::diag::named(&c.tally.lost_jobs, lost, usize::MAX);
        let over = over_lost.map_or(String::new(), |max| format!(", over the constraint lost ≤ {max}"));
        clauses.push(format!(
            "loses {lost} {} the baseline saves{list}{over}",
            if lost == 1 { "job" } else { "jobs" }
        ));
    }
    for e in &c.excluded {
        match e {
            Excluded::Compute { .. } => clauses.push(format!(
                "costs {}, over the constraint {}",
                signed_nanos(c.cost_nanos),
                compute_words(max_compute, ranked.max_compute)
            )),
            Excluded::WithoutEstimate { jobs } => clauses.push(without_estimate_words(*jobs)),
            Excluded::Lost { .. } => {}
        }
    }
    let recommendation = match ranked.recommended {
        Some(i) => format!("candidate {}", ranked.candidates[i].id),
        None => "none".to_string(),
    };
    Some((format!("candidate {} {}", c.id, clauses.join(", and ")), recommendation))
}

/// The inputs in three parts: what is searched over which jobs against which baseline, the
/// varies, the constraints.
pub(super) fn inputs(view: &TuneView<'_>) -> (String, String) {
    let r = view.ranked;
    let compute = compute_words(view.max_compute, r.max_compute);
    let skipped = if view.skipped.is_empty() {
        String::new()
    } else {
        format!(" ({})", skipped_words(view.skipped.len()))
    };
    // A shard's own table ranks its jobs alone: said where the jobs are counted.
    let shard = view.shard.map_or(String::new(), |s| {
        format!(
            " (shard {} of {}: its jobs alone, not the cluster's; `retryctl merge` every shard's `-o partial` for those)",
            s.index, s.count
        )
    });
    let head = format!(
        "tune: {}{skipped} over {}{shard}; baseline: {}",
        plural(r.candidates.len() as u64, "candidate", "candidates"),
        plural(view.jobs, "job", "jobs"),
        baseline_words(view.baseline_from),
    );
    (head, format!("constraints: lost ≤ {}, {compute}", view.max_lost))
}

/// The inputs in one line (the reports' subtitle).
pub(super) fn inputs_line(view: &TuneView<'_>) -> String {
    let (head, constraints) = inputs(view);
    format!("{head}; varying {}; {constraints}", view.columns.join(" × "))
}

/// The inputs in the table: the search, the varies (one a line when they do not fit on
/// one), the constraints.
pub(super) fn inputs_lines(view: &TuneView<'_>) -> Vec<String> {
    let (head, constraints) = inputs(view);
    let mut out = lines::wrap("", "  ", &head);
    out.extend(lines::list("  varying: ", view.columns, " × ", "    "));
    out.push(format!("  {constraints}"));
    out
}

/// `N skipped: …`, said once for every format.
pub(super) fn skipped_words(n: usize) -> String {
    format!(
        "{} skipped: {} documents do not validate",
        plural(n as u64, "candidate", "candidates"),
        whose(n)
    )
}

/// The skipped candidates' (`its`, `their`).
pub(super) fn whose(n: usize) -> &'static str {
    if n == 1 {
        "its"
    } else {
        "their"
    }
}

/// The record beside the run time the baseline replays of it, where they differ (a run
/// after its job's end, which no side starts): `5998h22m5s recorded (16116.9 GPU-hours),
/// 4484h17m15s replayed by the baseline`. Every candidate's comparison holds the record.
pub(super) fn record_words(r: &Ranked) -> Option<String> {
    let record = &r.candidates.first()?.tally.comparison.recorded;
    (record.compute != r.baseline.compute).then(|| {
        format!(
            "{}, {} replayed by the baseline",
            recorded_words(record),
            r.baseline.compute
        )
    })
}

/// A candidate's Pending jobs without an estimate, beside its EXPECTED: `1870 Pending without
/// estimate`.
pub(super) fn without_estimate_words(jobs: u64) -> String {
    format!("{jobs} Pending without estimate")
}

/// Why no candidate is recommended on expected gains that leave jobs without an estimate out
/// (`None` when none was excluded so).
pub(super) fn without_estimate_line(r: &Ranked) -> Option<String> {
    let n = r
        .candidates
        .iter()
        .filter(|c| c.excluded.iter().any(|e| matches!(e, Excluded::WithoutEstimate { .. })))
        .count();
    (n > 0).then(|| {
        format!(
            "{n} of {} candidates not recommended: their comparison has Pending jobs without an estimate (no trial of their class at any depth), which EXPECTED counts as 0",
            r.candidates.len()
        )
    })
}

/// A candidate's values, as stderr names it: `ml:spec.retryLimit=3, ml:spec.defaultAction=Fail`.
pub fn values_words(values: &[(String, String)]) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One error of a candidate, placed by its policy and field path when it has them.
pub fn error_words(e: &CandidateError) -> String {
    let at = match (&e.name, e.path.is_empty()) {
        (Some(n), false) => format!("policy `{n}`: {}: ", e.path),
        (Some(n), true) => format!("policy `{n}`: "),
        (None, false) => format!("{}: ", e.path),
        (None, true) => String::new(),
    };
    format!("{at}{}", e.message)
}
