//! The sentences and phrases said in more than one format: the plan's sentence, an
//! estimate, a rate, hours, the backtest, a categorizer's changes, the estimates' method.
//!
//! Owns: the words, each written once, so that the table, html and markdown of `simulate`,
//! `tune` and `suggest` say one thing alike; a format adds only its own markup around them
//! (a label, bold, a paragraph). Must not: lay out (line breaks, widths), escape for a
//! format (html and markdown escape what they are given), write, or count.

use crate::engine::job_report::plural;
use crate::model::duration::TotalDuration;
use crate::model::failure_history::Final;
use crate::replay::backtest::Backtest;
use crate::replay::categorize::CategoryCounts;
use crate::replay::compare::hours;
use crate::replay::compare::Comparison;
use crate::replay::estimate::{Estimate, Rate, Sums};
use crate::replay::recorded::Recorded;
use crate::replay::summary::Summary;

use super::text::shown;

/// The title of a comparison's report (its markdown heading, its page's title).
pub const PLAN_TITLE: &str = "retryctl simulate: what the candidate policies change";

/// The plan's first line, like the last line of `terraform plan`.
pub fn plan_sentence(c: &Comparison) -> String {
    format!(
        "Plan: {} rescued, {} lost, {} → Pending, {} retried differently; {} of {} change.",
        c.rescued,
        c.lost,
        c.to_pending,
        c.other + c.retries_only,
        c.changed,
        plural(c.jobs, "job", "jobs"),
    )
}

/// What a job that goes to Pending does, where a plan names its transition.
pub const PAST_THE_RECORD: &str = "would retry past the end of the recorded history";

/// The changed jobs whose final state is the same on both sides.
pub const RETRIES_ONLY: &str = "same outcome, other retry count";

/// The name a plan gives a transition of final states beside its count (`rescued`, `lost`,
/// [`PAST_THE_RECORD`]), where it has one.
pub fn transition_note(from: Final, to: Final) -> Option<&'static str> {
    match (from, to) {
        (Final::Failed, Final::Succeeded) => Some("rescued"),
        (Final::Succeeded, Final::Failed) => Some("lost"),
        (_, Final::Pending) => Some(PAST_THE_RECORD),
        _ => None,
    }
}

/// `3 jobs with errors (reported on stderr)`: the jobs a summary could not replay, after
/// its `not simulated:`, `not compared:` or `not replayed:`.
pub fn with_errors(n: u64) -> String {
    format!("{} with errors (reported on stderr)", plural(n, "job", "jobs"))
}

/// One side of a changed job in words: `Failed after 1 retry`, in every format.
pub fn side_words(s: &crate::replay::compare::Side) -> String {
    format!(
        "{} after {}",
        s.final_state.as_str(),
        plural(u64::from(s.retries), "retry", "retries")
    )
}

/// A share and its interval: `60%`, `(23–88%)`; with one decimal when the interval is
/// narrower than two points (many trials), so that it does not read `21% (21–21%)`.
pub fn shares(p: f64, low: f64, high: f64) -> (String, String) {
    let digits = if high - low < 0.02 { 1 } else { 0 };
    let pct = |x: f64| format!("{:.*}", digits, x * 100.0);
    (format!("{}%", pct(p)), format!("({}–{}%)", pct(low), pct(high)))
}

/// An estimate's share and interval ([`shares`]).
pub fn estimate_shares(e: &Estimate) -> (String, String) {
    shares(e.p_succeeded, e.low, e.high)
}

/// An estimate in a few words: `62% (31–85%) over 3 runs left; next run 33%, basis
/// exit:1@1: 15 trials`.
pub fn estimate_words(e: &Estimate) -> String {
    let (share, interval) = estimate_shares(e);
    let basis = format!("basis {}: {}", e.basis, plural(e.trials, "trial", "trials"));
    if e.runs_left == 1 {
        return format!("{share} {interval} on its one run left, {basis}");
    }
    format!(
        "{share} {interval} over {} runs left; next run {:.0}%, {basis}",
        e.runs_left,
        e.p_next_run * 100.0
    )
}

/// A class's rate in a few words: `60% (23–88%), basis all: 5 trials`.
pub fn rate_words(r: &Rate) -> String {
    let (share, interval) = shares(r.p, r.low, r.high);
    format!(
        "{share} {interval}, basis {}: {}",
        r.basis,
        plural(r.trials, "trial", "trials")
    )
}

/// `≈ 2.5 (1.0–4.0)`: the successes expected of the jobs asked about, and their bounds.
pub fn successes_words(s: &Sums) -> String {
    format!("≈ {:.1} ({:.1}–{:.1})", s.expected, s.low, s.high)
}

/// `≈ 2.5 (1.0–4.0) of 4 jobs Failed → Pending would succeed`: the estimate of the `n` jobs
/// a candidate takes from Failed to Pending (`asked`).
pub fn failed_to_pending_words(n: u64, asked: &Sums) -> String {
    format!(
        "{} of {} Failed → Pending would succeed",
        successes_words(asked),
        plural(n, "job", "jobs")
    )
}

/// [`failed_to_pending_words`] over the runs the candidate has left, and the jobs without
/// an estimate: a plan's estimate.
pub fn candidate_estimate_words(n: u64, asked: &Sums) -> String {
    format!(
        "{} over the runs the candidate has left{}",
        failed_to_pending_words(n, asked),
        without_estimate(asked)
    )
}

/// `≈ 2h more run time for the 3 jobs Pending in the candidate (1.5 GPU-hours)`: a plan's
/// expected run time of the candidate's Pending jobs.
pub fn expected_words(pending: &Sums) -> String {
    format!(
        "≈ {} more run time for the {} Pending in the candidate{}",
        seconds_words(pending.expected_compute),
        plural(pending.jobs, "job", "jobs"),
        expected_hours(pending)
    )
}

/// ` (N without an estimate: no trials)`, or nothing when every job asked about has one.
pub fn without_estimate(s: &Sums) -> String {
    if s.without_estimate > 0 {
        format!(" ({} without an estimate: no trials)", s.without_estimate)
    } else {
        String::new()
    }
}

/// Hours for reading: one decimal, two under 1.
pub fn hours_words(h: f64) -> String {
    if h == 0.0 {
        "0".to_string()
    } else if h.abs() < 1.0 {
        format!("{h:.2}")
    } else {
        format!("{h:.1}")
    }
}

/// An expected run time in seconds as a duration, to the second (for reading).
pub fn seconds_words(secs: f64) -> String {
    // Whole seconds first, then nanoseconds in 128 bits: a float times 10^9 is not a whole
    // number of seconds past 2^53 ns (`…48.999999488s`), and 64 bits end at 5124095h.
    let whole = secs.round().max(0.0) as u128;
    TotalDuration(whole.saturating_mul(1_000_000_000)).to_string()
}

/// A signed run time in nanoseconds to the second, for reading: `+1h2m`, `-30s`, any
/// number of hours (tune's COST, from the exact sums).
pub fn signed_nanos(ns: i128) -> String {
    const S: u128 = 1_000_000_000;
    // Rounded half away from zero, as `seconds_words` rounds.
    let whole = (ns.unsigned_abs() + S / 2) / S * S;
    let sign = if ns < 0 { "-" } else { "+" };
    format!("{sign}{}", TotalDuration(whole))
}

/// `; 3.5 GPU-hours, 50.0 CPU-hours; 3 jobs request neither` — the hours that are not 0, and
/// the jobs they miss (nothing when no job requests anything).
pub fn request_hours(gpu: u128, cpu: u128, without: u64) -> String {
    let mut parts = Vec::new();
    if gpu > 0 {
        parts.push(format!("{} GPU-hours", hours_words(hours(gpu))));
    }
    if cpu > 0 {
        parts.push(format!("{} CPU-hours", hours_words(hours(cpu))));
    }
    if parts.is_empty() {
        return String::new();
    }
    if without > 0 {
        parts.push(format!("{} without requests", plural(without, "job", "jobs")));
    }
    format!(" ({})", parts.join(", "))
}

/// `5998h22m5s recorded (16116.9 GPU-hours)`: the record's run time, every run of every
/// job replayed, and its hours.
pub fn recorded_words(r: &Recorded) -> String {
    format!(
        "{} recorded{}",
        r.compute,
        request_hours(r.gpu, r.cpu, r.without_resources)
    )
}

/// `1h30m recorded (3.5 GPU-hours, …)`: a plain replay's compute. Where the record holds
/// more than the policies replay (a run after its job's end), both: `5998h22m5s recorded
/// (…), 4484h17m15s replayed (…)`.
pub fn compute_recorded(s: &Summary) -> String {
    let replayed = request_hours(s.gpu, s.cpu, s.without_resources);
    if s.recorded.differs(s.runs, s.compute) {
        format!("{}, {} replayed{replayed}", recorded_words(&s.recorded), s.compute)
    } else {
        format!("{} recorded{replayed}", s.compute)
    }
}

/// A plain replay's runs: `55 runs`, or `4688 runs recorded, 3000 replayed` where the
/// record holds runs the policies never start.
pub fn runs_words(s: &Summary) -> String {
    if s.recorded.runs != s.runs {
        format!("{} runs recorded, {} replayed", s.recorded.runs, s.runs)
    } else {
        format!("{} runs", s.runs)
    }
}

/// A comparison's record beside the run time each side replays, where they differ:
/// `5998h22m5s recorded (16116.9 GPU-hours); replayed: 4484h17m15s by the baseline,
/// 4948h20m13s by the candidate`. `None` when both sides start every recorded run.
pub fn recorded_replayed(c: &Comparison) -> Option<String> {
    let r = &c.recorded;
    (r.compute != c.baseline_compute || r.compute != c.candidate_compute).then(|| {
        format!(
            "{}; replayed: {} by the baseline, {} by the candidate",
            recorded_words(r),
            c.baseline_compute,
            c.candidate_compute
        )
    })
}

/// The GPU- and CPU-hours a comparison adds and removes, of the kinds any job requests:
/// `("GPU", "2.0", "0.5")`.
pub fn hours_changes(c: &Comparison) -> Vec<(&'static str, String, String)> {
    [("GPU", c.gpu_added, c.gpu_removed), ("CPU", c.cpu_added, c.cpu_removed)]
        .into_iter()
        .filter(|(_, added, removed)| *added > 0 || *removed > 0)
        .map(|(name, added, removed)| (name, hours_words(hours(added)), hours_words(hours(removed))))
        .collect()
}

/// ` (2.5 GPU-hours, 10.0 CPU-hours)` of an expected run time, or nothing.
pub fn expected_hours(s: &Sums) -> String {
    let mut parts = Vec::new();
    if s.gpu_hours > 0.0 {
        parts.push(format!("{} GPU-hours", hours_words(s.gpu_hours)));
    }
    if s.cpu_hours > 0.0 {
        parts.push(format!("{} CPU-hours", hours_words(s.cpu_hours)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// A categorizer's changes in words, most runs first (`none → oom/kernel 2, x → user_error
/// 1`), or `none`: every format's line (docs/categorizer.md).
pub fn category_changes_words(c: &CategoryCounts) -> String {
    let words = category_changes_items(c);
    if words.is_empty() {
        return "none".to_string();
    }
    words.join(", ")
}

/// A categorizer's changes, one item each, most runs first (`none → oom/kernel 2`).
pub fn category_changes_items(c: &CategoryCounts) -> Vec<String> {
    c.changes()
        .iter()
        .map(|(from, to, runs)| format!("{} → {} {runs}", shown(from), shown(to)))
        .collect()
}

/// What a collision is, after the retries it is of (docs/categorizer.md).
pub const COLLISION: &str = "the name of a failed pod the executor keeps: the new pod collides with it, the lease is returned and the job takes the legacy path";

/// The collisions' warning, in every format's words.
pub fn collisions_words(n: u64) -> String {
    format!("{} {COLLISION}", plural(n, "retry reuses", "retries reuse"))
}

/// The jobs whose expectations failed, each id written by `id` (plain, `<code>`, backticks),
/// joined, then `and N more` for those past the ids the summary keeps: every format's list.
pub fn failed_expectations(s: &Summary, id: impl Fn(&str) -> String) -> String {
    let mut list = s
        .expectation_failed_ids
        .iter()
        .map(|i| id(i))
        .collect::<Vec<_>>()
        .join(", ");
    let more = s
        .expectation_failed_jobs
        .saturating_sub(s.expectation_failed_ids.len() as u64);
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// The incident windows a replay found (docs/reference/suggest.md "Incidents"), when it found
/// or was given some: `3 windows, 265 of 1456 failed runs (18.2%); 120 trials left out of the
/// estimates`; then the bursts and surges it learned from, as suggest tells them (`busy,
/// learned from: job set ml/sweep-17's burst, a surge`).
pub fn incidents_line(s: &crate::replay::incidents::SeenIncidents) -> Option<String> {
    if s.windows.is_empty() && s.busy.is_empty() {
        return None;
    }
    let share = percent(s.in_windows as f64 / s.failed_runs.max(1) as f64);
    let mut line = format!(
        "{}, {} of {} failed runs ({share}); {} left out of the estimates",
        plural(s.windows.len() as u64, "window", "windows"),
        s.in_windows,
        s.failed_runs,
        plural(s.trials_left_out, "trial", "trials")
    );
    if !s.busy.is_empty() {
        let busy: Vec<String> = s.busy.iter().map(|(_, k)| busy_kind_words(k)).collect();
        line.push_str(&format!("; busy, learned from: {}", busy.join(", ")));
    }
    Some(line)
}

/// A burst or a surge, in a few words: `job set ml/sweep-17's burst`, `a surge`.
fn busy_kind_words(kind: &crate::replay::incidents::Kind) -> String {
    use crate::replay::incidents::Kind;
    match kind {
        Kind::Burst { queue, job_set, .. } => format!("job set {}/{}'s burst", shown(queue), shown(job_set)),
        Kind::Surge { .. } => "a surge".to_string(),
        Kind::Incident => "an incident".to_string(),
    }
}

/// docs/estimates.md's sentence: `estimates were within N points on jobs submitted at or after T`.
pub fn backtest_sentence(b: &Backtest) -> String {
    format!(
        "estimates were within {:.1} points on jobs submitted at or after {}",
        b.within_points, b.at
    )
}

/// The backtest's other figures in words, after [`backtest_sentence`].
pub fn backtest_details(b: &Backtest) -> String {
    let skill = b.skill.map_or_else(
        || "no skill to measure".to_string(),
        |s| format!("skill {:.0}%", s * 100.0),
    );
    let classes = if b.classes_checked == 0 {
        "no class had enough trials to be checked on its own (20+ test, 5+ train)".to_string()
    } else {
        format!(
            "{} of {} well-sampled classes (20+ test, 5+ train trials) within their train interval",
            b.classes_covered, b.classes_checked
        )
    };
    format!(
        "Brier score {:.3} against {:.3} for one pooled rate ({skill}); {classes}; {} train and {} test trials",
        b.brier, b.brier_pooled, b.train_trials, b.test_trials
    )
}

/// The words a plan's header uses for a baseline read from the cluster.
pub const CLUSTER_BASELINE: &str =
    "the retry policies and queue attachments the cluster runs (read from its Lookout database)";

/// The estimates' method in one line for the table outputs, said once per output (after the
/// plan or the summary that has estimates): it points to docs/estimates.md for the rest, as
/// `-o json`'s `method` ([`ESTIMATE_METHOD`]) and the reports say it in full.
pub const METHOD_LINE: &str = "(estimates: this history's share of failed runs whose next run succeeded, by failure class and depth; what they assume: docs/estimates.md)";

/// How the estimates are made, named once per output: what they assume.
pub const ESTIMATE_METHOD: &str = "each Pending job's chance to succeed over the runs its policy has left (the engine followed on copies of its last failed run until it fails the job, at most 100 runs), from the share of failed runs of its failure class (its last failed run's category, else exit code, else condition) at the same depth (failed runs so far, 5+ together) whose next run succeeded, in this history; a level with fewer than 5 trials backs off to the class at any depth, then all classes at that depth, then all; (low–high): Wilson 95% bounds; runs assumed independent given class and depth, and a class the recorded policies never retried has no trials";

/// What the contention section's numbers are, said by every format beside them
/// (docs/contention.md).
pub const CONTENTION_NOTE: &str =
    "what coincided in the record's times; the queue another policy would have made is not modelled";

/// Where a sharded run's answer would hold the contention section, what it holds instead: the
/// default computes it in one process only (docs/past-one-machine.md), and a merge never lacks
/// it silently.
pub const CONTENTION_SHARDED: &str =
    "not computed for a sharded run (it needs every job in one process: run it without --shard or --emit)";

/// json and yaml's `contentionNotComputed` beside `contention: null`: why it is null.
pub const CONTENTION_SHARDED_REASON: &str = "sharded";

/// Hours of a resource for reading, as the contention section says them: whole hours with
/// thousands grouped from 100 on (`262,322`), else [`hours_words`].
pub fn grouped_hours(h: f64) -> String {
    if h < 0.0 {
        return format!("−{}", grouped_hours(-h));
    }
    if h < 100.0 {
        return hours_words(h);
    }
    let whole = format!("{h:.0}");
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share (0 to 1) in percent with one decimal, without the sign: `39.5`. A share that is
/// neither none nor all never reads as either: rounded, 99.97% would read `100.0` and 0.03%
/// `0.0`, so such shares are held at `99.9` and `0.1` (an interval's bounds too, which keeps
/// them in order around their share).
pub fn percent_digits(p: f64) -> String {
    let x = 100.0 * p;
    let shown = if p > 0.0 && p < 1.0 { x.clamp(0.1, 99.9) } else { x };
    format!("{shown:.1}")
}

/// [`percent_digits`] with its sign: `39.5%`.
pub fn percent(p: f64) -> String {
    format!("{}%", percent_digits(p))
}

/// ` (39.5%)`-style: `part` as a share of `whole` ([`percent`]); `None` of nothing.
fn share_of(part: f64, whole: f64) -> Option<String> {
    (whole > 0.0).then(|| percent(part / whole))
}

/// One resource of a side's contention (docs/contention.md), what coincided in the record:
/// `retries ran 262,322 GPU-h; 103,511 (39.5%) while other jobs' GPUs waited; overlap with
/// waiting demand 17,623 GPU-h (47.3% of the 37,249 GPU-h that waited)`. Never what a
/// change would give back: the queue another policy would make is not modelled.
fn contention_sentence(r: &crate::replay::contention::Resource, unit: &str) -> String {
    let (retry, queued) = (r.retry_hours, r.queued_hours);
    let mut s = format!(
        "retries ran {} {unit}-h; {}",
        grouped_hours(retry),
        grouped_hours(r.while_others_waited_hours)
    );
    if let Some(p) = share_of(r.while_others_waited_hours, retry) {
        s.push_str(&format!(" ({p})"));
    }
    s.push_str(&format!(
        " while other jobs' {unit}s waited; overlap with waiting demand {} {unit}-h",
        grouped_hours(r.overlap_hours)
    ));
    match share_of(r.overlap_hours, queued) {
        Some(p) => s.push_str(&format!(" ({p} of the {} {unit}-h that waited)", grouped_hours(queued))),
        None => s.push_str(" (no job waited)"),
    }
    s
}

/// A side's contention in words, one sentence a resource any retry or wait holds (GPU, then
/// CPU), then the retries after failures inside incident windows and the runs in no sum.
pub fn contention_words(s: &crate::replay::contention::Side) -> Vec<String> {
    let mut out = Vec::new();
    let resources = [
        ("GPU", &s.gpu, &s.in_incidents.gpu),
        ("CPU", &s.cpu, &s.in_incidents.cpu),
    ];
    for (unit, r, inc) in resources {
        if r.retry_hours == 0.0 && r.queued_hours == 0.0 {
            continue;
        }
        out.push(contention_sentence(r, unit));
        if inc.retry_hours > 0.0 {
            out.push(format!(
                "retries after failures inside incident windows held {} {unit}-h of that overlap, from {} of the retry {unit}-h",
                grouped_hours(inc.overlap_hours),
                share_of(inc.retry_hours, r.retry_hours).unwrap_or_default()
            ));
        }
    }
    if out.is_empty() {
        out.push("no retry ran and no job waited with a GPU or CPU request".to_string());
    }
    let mut none = Vec::new();
    if s.untimed_runs > 0 {
        none.push(format!("{} untimed", plural(s.untimed_runs, "run", "runs")));
    }
    if s.not_placed_runs > 0 {
        none.push(format!(
            "{} past the record, not placed",
            plural(s.not_placed_runs, "run", "runs")
        ));
    }
    if !none.is_empty() {
        out.push(format!("in no sum: {}", none.join(", ")));
    }
    out
}

/// Whether the table, markdown and html say the contention section of `sides`: some side
/// ran a retry or had a job wait with a GPU or CPU request in the record's times. A history
/// with no request, or none placed in time (a few jobs written by hand), has nothing that
/// coincided or waited, and the words leave the section out rather than say so on every
/// replay; json and yaml carry it whole (docs/contention.md "Where it is shown").
pub fn contention_said<'a>(sides: impl IntoIterator<Item = &'a crate::replay::contention::Side>) -> bool {
    sides.into_iter().any(|s| {
        [&s.gpu, &s.cpu]
            .iter()
            .any(|r| r.retry_hours > 0.0 || r.queued_hours > 0.0)
    })
}

/// A comparison's sides as the contention section labels them, in order.
pub fn comparison_sides(
    s: &crate::replay::contention::OfComparison,
) -> [(&'static str, &crate::replay::contention::Side); 3] {
    [
        ("recorded", &s.recorded),
        ("baseline", &s.baseline),
        ("candidate", &s.candidate),
    ]
}

/// The change of the overlap from one side to another, of each resource either holds:
/// `overlap: baseline 17,623 → candidate 9,104 GPU-h (−8,519)`.
pub fn overlap_change_words(
    baseline: &crate::replay::contention::Side,
    candidate: &crate::replay::contention::Side,
) -> Vec<String> {
    [
        ("GPU", &baseline.gpu, &candidate.gpu),
        ("CPU", &baseline.cpu, &candidate.cpu),
    ]
    .into_iter()
    .filter(|(_, b, c)| b.overlap_hours > 0.0 || c.overlap_hours > 0.0 || b.queued_hours > 0.0 || c.queued_hours > 0.0)
    .map(|(unit, b, c)| {
        format!(
            "overlap: baseline {} → candidate {} {unit}-h ({})",
            grouped_hours(b.overlap_hours),
            grouped_hours(c.overlap_hours),
            signed_hours(c.overlap_hours - b.overlap_hours)
        )
    })
    .collect()
}

/// A change of hours with its sign: `+12`, `−8,519`, `0`.
pub fn signed_hours(h: f64) -> String {
    match grouped_hours(h) {
        z if z == "0" => z,
        s if h > 0.0 => format!("+{s}"),
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::{percent, percent_digits};

    #[test]
    fn a_share_that_is_neither_none_nor_all_never_reads_as_either() {
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(percent(0.395), "39.5%");
        // Rounded, these read `100.0%` and `0.0%`.
        assert_eq!(percent(0.9997), "99.9%");
        assert_eq!(percent(0.0003), "0.1%");
        assert_eq!(percent(0.99949), "99.9%");
        assert_eq!(percent(0.0006), "0.1%");
        // An interval's bounds stay in order around its share.
        let (low, share, high) = (0.9991, 0.9996, 0.99999);
        assert_eq!(
            [percent_digits(low), percent_digits(share), percent_digits(high)],
            ["99.9", "99.9", "99.9"]
        );
        assert_eq!(percent_digits(1.0), "100.0");
    }
}
