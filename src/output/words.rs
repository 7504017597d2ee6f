//! The sentences and phrases said in more than one format: the plan's sentence, an
//! estimate, a rate, hours, the backtest, a categorizer's changes, the estimates' method.
//!
//! Owns: the words, each written once, so that the table, html and markdown of `simulate`,
//! `tune` and `suggest` say one thing alike; a format adds only its own markup around them
//! (a label, bold, a paragraph). Must not: lay out (line breaks, widths), escape for a
//! format (html and markdown escape what they are given), write, or count.

use crate::engine::job_report::plural;
use crate::model::GoDuration;
use crate::replay::backtest::Backtest;
use crate::replay::categorize::CategoryCounts;
use crate::replay::compare::hours;
use crate::replay::compare::Comparison;
use crate::replay::estimate::{Estimate, Rate, Sums};
use crate::replay::summary::Summary;

use super::text::shown;

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
    let whole = secs.round().clamp(0.0, u64::MAX as f64 / 1e9);
    GoDuration((whole * 1e9) as u64).to_string()
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

/// The collisions' warning, in every format's words.
pub fn collisions_words(n: u64) -> String {
    format!(
        "{} the name of a failed pod the executor keeps: the new pod collides with it, the lease is returned and the job takes the legacy path",
        plural(n, "retry reuses", "retries reuse")
    )
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
