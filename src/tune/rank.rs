//! Ranking the candidates of `tune` (docs/tune.md): each one's expected successes and cost, the
//! frontier, and the recommendation under the constraints.
//!
//! Owns: `expectedSucceeded` = the candidate's Succeeded jobs + Σ pSucceeded of its Pending
//! jobs; `cost` = compute added − compute removed + the expected run time of its Pending jobs
//! (seconds); `frontier`: no other candidate has expectedSucceeded ≥ and cost ≤, one of them
//! strictly; the recommendation: the highest expectedSucceeded among the candidates with at
//! most `--max-lost` lost jobs and a cost of at most `--max-compute`, ties broken by lower
//! cost, fewer retries added, lower id — and none unless it beats the baseline's
//! expectedSucceeded, or matches it for less cost; never one whose comparison has a Pending
//! job without an estimate (its expectedSucceeded, or the baseline's, counts that job as 0,
//! so a gain it shows may be the unknown's). Pure: numbers in, numbers out.
//!
//! Also owns whether the recommendation rests on the estimates alone: the recommended
//! candidate succeeds, in the record, no more often than the baseline or than another
//! candidate within the constraints that has fewer expected successes, so only its Pending
//! jobs' estimated chances put it first.
//!
//! Decisions docs/tune.md leaves open: the baseline's cost is its own expected run time past
//! the record (it adds and removes nothing against itself), so the two are on one scale;
//! the recommendation order lists the candidates that meet the constraints first, then the
//! others by the same key.

use std::cmp::Ordering;

use crate::model::duration::{GoDuration, TotalDuration};
use crate::model::failure_history::Final;
use crate::replay::estimate::{Rates, Sums};
use crate::replay::run::CompareTally;

use super::sweep::BaselineTally;
use super::template::Values;
use crate::replay::explained::{Explained, MaxContradictions};

/// `--max-compute`: a duration, or a percentage of the baseline's recorded compute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaxCompute {
    Duration(GoDuration),
    Percent(f64),
}

/// The constraints a recommendation meets.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    pub max_lost: u64,
    pub max_compute: Option<MaxCompute>,
    /// Past it the baseline is not what the cluster ran, and nothing is recommended.
    pub max_contradictions: MaxContradictions,
}

/// The baseline's own figures.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineRow {
    pub finals: [u64; 4],
    pub pending: Sums,
    pub expected_succeeded: f64,
    /// Its own expected run time past the record, in seconds.
    pub cost: f64,
    /// The same in nanoseconds, what is printed (see [`Scored::cost_nanos`]).
    pub cost_nanos: i128,
    /// The run time of every recorded run it starts.
    pub compute: TotalDuration,
    /// Whether it explains the record (none for a template that is no policy the cluster ran).
    pub explained: Option<Explained>,
    /// Its contradicting jobs are more than `--max-contradictions`: nothing is recommended.
    pub unexplained: bool,
}

/// A constraint a candidate breaks, so that it cannot be recommended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Excluded {
    /// It loses more jobs than `--max-lost` allows.
    Lost { lost: u64, max: u64 },
    /// It costs more than `--max-compute` (seconds).
    Compute { cost: f64, max: f64 },
    /// Its comparison has `jobs` Pending jobs without an estimate (no trial of their class at
    /// any depth, on either side), which its EXPECTED and the baseline's count as 0: a gain
    /// it shows leaves them out.
    WithoutEstimate { jobs: u64 },
}

/// One candidate, scored.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub id: u64,
    pub values: Values,
    pub tally: CompareTally,
    /// Σ over its Failed → Pending jobs (`expectedRescued`).
    pub asked: Sums,
    /// Σ over its Pending jobs.
    pub pending: Sums,
    pub expected_succeeded: f64,
    /// Ranks and is compared with `--max-compute`, in seconds.
    pub cost: f64,
    /// The cost that is printed, in nanoseconds: the exact sums of compute added and removed
    /// (which pass 64 bits of nanoseconds on a long history) and the expected run time, an
    /// estimate, to the nanosecond — so that no copy of 64 bits saturates, nor a float's
    /// rounding shows, on the way to text.
    pub cost_nanos: i128,
    pub frontier: bool,
    /// Every constraint it breaks, `--max-lost` first; empty when it can be recommended.
    pub excluded: Vec<Excluded>,
}

impl Scored {
    /// Within every constraint.
    pub fn eligible(&self) -> bool {
        self.excluded.is_empty()
    }

    /// Its Succeeded jobs in the record (no estimate).
    pub fn succeeded(&self) -> u64 {
        self.tally.finals[Final::Succeeded as usize]
    }
}

/// What the recommended candidate does not beat in the record: only the estimates of its
/// Pending jobs put it ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstimatesDecide {
    /// It succeeds no more often than the baseline.
    Baseline,
    /// It succeeds no more often than this candidate (an index into `candidates`), which is
    /// within the constraints.
    Candidate(usize),
}

/// Every candidate ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub baseline: BaselineRow,
    /// In id order.
    pub candidates: Vec<Scored>,
    /// Indices into `candidates`, in the recommendation order.
    pub order: Vec<usize>,
    /// The index of the recommended candidate.
    pub recommended: Option<usize>,
    /// Set when the recommended candidate is ahead on estimates alone.
    pub estimates_decide: Option<EstimatesDecide>,
    /// `--max-compute` in seconds, as applied.
    pub max_compute: Option<f64>,
}

/// Seconds of a run time.
fn seconds(d: TotalDuration) -> f64 {
    d.as_secs_f64()
}

/// Nanoseconds of a run time, signed to be subtracted; a sum past 2^127 ns (10^13 years)
/// stays at the largest.
fn nanos(d: TotalDuration) -> i128 {
    i128::try_from(d.0).unwrap_or(i128::MAX)
}

/// Nanoseconds of an expected run time (an estimate, in seconds).
fn expected_nanos(secs: f64) -> i128 {
    (secs * 1e9).round() as i128
}

/// Scores and ranks `candidates` (id, values, tally), in id order, against `baseline`.
pub fn rank(
    candidates: Vec<(u64, Values, CompareTally)>,
    baseline: &BaselineTally,
    rates: &Rates,
    constraints: &Constraints,
) -> Ranked {
    let base_pending = rates.sums(&baseline.pending);
    let baseline = BaselineRow {
        finals: baseline.finals,
        expected_succeeded: baseline.finals[Final::Succeeded as usize] as f64 + base_pending.expected,
        cost: base_pending.expected_compute,
        cost_nanos: expected_nanos(base_pending.expected_compute),
        pending: base_pending,
        compute: baseline.compute,
        explained: baseline.explained.clone(),
        unexplained: baseline
            .explained
            .as_ref()
            .is_some_and(|e| constraints.max_contradictions.exceeded(e)),
    };
    let max_compute = constraints.max_compute.map(|m| match m {
        MaxCompute::Duration(d) => d.as_secs_f64(),
        MaxCompute::Percent(p) => seconds(baseline.compute) * p / 100.0,
    });
    let mut scored: Vec<Scored> = candidates
        .into_iter()
        .map(|(id, values, tally)| {
            let (mut asked, pending) = (rates.sums(&tally.asked), rates.sums(&tally.pending));
            // Unknown is not zero: every Pending job of the comparison without an estimate.
            asked.without_estimate = rates.unknown(&tally.pending, &tally.baseline_pending);
            let c = &tally.comparison;
            let cost = seconds(c.compute_added) - seconds(c.compute_removed) + pending.expected_compute;
            let cost_nanos = nanos(c.compute_added)
                .saturating_sub(nanos(c.compute_removed))
                .saturating_add(expected_nanos(pending.expected_compute));
            let lost = (c.lost > constraints.max_lost).then_some(Excluded::Lost {
                lost: c.lost,
                max: constraints.max_lost,
            });
            let compute = max_compute
                .filter(|&max| cost > max)
                .map(|max| Excluded::Compute { cost, max });
            let unknown = (asked.without_estimate > 0).then_some(Excluded::WithoutEstimate {
                jobs: asked.without_estimate,
            });
            let excluded = lost.into_iter().chain(compute).chain(unknown).collect();
            Scored {
                id,
                values,
                expected_succeeded: tally.finals[Final::Succeeded as usize] as f64 + pending.expected,
                cost,
                cost_nanos,
                asked,
                pending,
                tally,
                frontier: false,
                excluded,
            }
        })
        .collect();
    mark_frontier(&mut scored);
    let mut order: Vec<usize> = (0..scored.len()).collect();
    order.sort_by(|&a, &b| recommendation_order(&scored[a], &scored[b]));
    let recommended = order
        .first()
        .copied()
        .filter(|&i| !baseline.unexplained && scored[i].eligible() && beats_baseline(&scored[i], &baseline));
    let estimates_decide = recommended.and_then(|r| estimates_decide(&scored, &order, r, &baseline));
    Ranked {
        baseline,
        candidates: scored,
        order,
        recommended,
        estimates_decide,
        max_compute,
    }
}

/// Whether candidate `r`, recommended, is ahead on estimates alone: it succeeds in the record
/// no more often than the baseline, or than another candidate within the constraints that it
/// leads in expected successes (the one that succeeds most often, the first of them in
/// `order`). A candidate it only ties (the same expected successes, put after it by cost,
/// retries or id) is not one: the estimates did not decide between them.
fn estimates_decide(scored: &[Scored], order: &[usize], r: usize, baseline: &BaselineRow) -> Option<EstimatesDecide> {
    let succeeded = scored[r].succeeded();
    if succeeded <= baseline.finals[Final::Succeeded as usize] {
        return Some(EstimatesDecide::Baseline);
    }
    let mut rival: Option<usize> = None;
    let led = |i: usize| i != r && scored[i].eligible() && scored[i].expected_succeeded < scored[r].expected_succeeded;
    for &i in order.iter().filter(|&&i| led(i)) {
        if rival.is_none_or(|b| scored[i].succeeded() > scored[b].succeeded()) {
            rival = Some(i);
        }
    }
    rival
        .filter(|&i| scored[i].succeeded() >= succeeded)
        .map(EstimatesDecide::Candidate)
}

/// A candidate worth recommending over the baseline: more expected successes, or as many for
/// less cost (the futile retries a proposal removes: same outcomes, less compute). Not the
/// frontier's dominance: more successes at a higher cost beat the baseline too.
fn beats_baseline(c: &Scored, baseline: &BaselineRow) -> bool {
    c.expected_succeeded > baseline.expected_succeeded
        || (c.expected_succeeded == baseline.expected_succeeded && c.cost < baseline.cost)
}

/// Eligible first; then more expected successes, lower cost, fewer retries added, lower id.
fn recommendation_order(a: &Scored, b: &Scored) -> Ordering {
    a.excluded
        .is_empty()
        .cmp(&b.excluded.is_empty())
        .reverse()
        .then_with(|| b.expected_succeeded.total_cmp(&a.expected_succeeded))
        .then_with(|| a.cost.total_cmp(&b.cost))
        .then_with(|| a.tally.comparison.retries_added.cmp(&b.tally.comparison.retries_added))
        .then_with(|| a.id.cmp(&b.id))
}

/// Marks the candidates no other dominates (expectedSucceeded ≥ and cost ≤, one strictly),
/// in O(n log n): by cost, each group of equal cost is on the frontier at its highest
/// expectedSucceeded when that beats every cheaper candidate's.
fn mark_frontier(scored: &mut [Scored]) {
    let mut by_cost: Vec<usize> = (0..scored.len()).collect();
    by_cost.sort_by(|&a, &b| scored[a].cost.total_cmp(&scored[b].cost));
    let mut best_cheaper = f64::NEG_INFINITY;
    let mut i = 0;
    while i < by_cost.len() {
        let cost = scored[by_cost[i]].cost;
        let mut j = i;
        let mut top = f64::NEG_INFINITY;
        while j < by_cost.len() && scored[by_cost[j]].cost.total_cmp(&cost) == Ordering::Equal {
            top = top.max(scored[by_cost[j]].expected_succeeded);
            j += 1;
        }
        if top > best_cheaper {
            for &k in &by_cost[i..j] {
                scored[k].frontier = scored[k].expected_succeeded == top;
            }
        }
        best_cheaper = best_cheaper.max(top);
        i = j;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(id: u64, e: f64, cost: f64) -> Scored {
        Scored {
            id,
            values: Vec::new(),
            tally: CompareTally::default(),
            asked: Sums::default(),
            pending: Sums::default(),
            expected_succeeded: e,
            cost,
            cost_nanos: expected_nanos(cost),
            frontier: false,
            excluded: Vec::new(),
        }
    }

    /// By hand: (E, cost) = 1 (5, 10), 2 (5, 10) a tie, 3 (7, 20), 4 (6, 20) dominated by 3,
    /// 5 (4, 5) cheapest, 6 (7, 30) dominated by 3, 7 (8, 30).
    #[test]
    fn the_frontier_is_what_no_other_candidate_dominates() {
        let mut s = vec![
            scored(1, 5.0, 10.0),
            scored(2, 5.0, 10.0),
            scored(3, 7.0, 20.0),
            scored(4, 6.0, 20.0),
            scored(5, 4.0, 5.0),
            scored(6, 7.0, 30.0),
            scored(7, 8.0, 30.0),
        ];
        mark_frontier(&mut s);
        let on: Vec<u64> = s.iter().filter(|x| x.frontier).map(|x| x.id).collect();
        assert_eq!(on, [1, 2, 3, 5, 7]);
        // Brute force agrees.
        for x in &s {
            let dominated = s.iter().any(|y| {
                y.id != x.id
                    && y.expected_succeeded >= x.expected_succeeded
                    && y.cost <= x.cost
                    && (y.expected_succeeded > x.expected_succeeded || y.cost < x.cost)
            });
            assert_eq!(x.frontier, !dominated, "{}", x.id);
        }
    }

    fn baseline_row(succeeded: u64, expected: f64) -> BaselineRow {
        let mut finals = [0; 4];
        finals[Final::Succeeded as usize] = succeeded;
        BaselineRow {
            finals,
            pending: Sums::default(),
            expected_succeeded: expected,
            cost: 0.0,
            cost_nanos: 0,
            compute: TotalDuration::ZERO,
            explained: None,
            unexplained: false,
        }
    }

    /// A candidate is worth recommending when it succeeds more, or as often for less cost
    /// (futile retries removed); as often for the same cost or more, or less often, is not.
    #[test]
    fn the_baseline_is_beaten_by_more_successes_or_as_many_for_less() {
        let b = baseline_row(919, 919.0);
        assert!(beats_baseline(&scored(1, 928.5, 34_000.0), &b));
        assert!(beats_baseline(&scored(2, 919.0, -22_200.0), &b));
        assert!(!beats_baseline(&scored(3, 919.0, 0.0), &b));
        assert!(!beats_baseline(&scored(4, 913.0, -83_400.0), &b));
    }

    /// A candidate that succeeds `succeeded` times in the record, `e` expected.
    fn recorded(id: u64, succeeded: u64, e: f64, cost: f64) -> Scored {
        let mut s = scored(id, e, cost);
        s.tally.finals[Final::Succeeded as usize] = succeeded;
        s
    }

    fn decide(s: &[Scored], base: &BaselineRow) -> Option<EstimatesDecide> {
        let mut order: Vec<usize> = (0..s.len()).collect();
        order.sort_by(|&a, &b| recommendation_order(&s[a], &s[b]));
        estimates_decide(s, &order, order[0], base)
    }

    /// By hand: 1 (12 succeeded, 14.7 expected) is first; 2 succeeds as often (12, 14.4), so
    /// only the estimates put 1 ahead; 3 (11) succeeds less often.
    #[test]
    fn a_recommendation_ahead_on_estimates_alone_names_what_it_does_not_beat() {
        let base = baseline_row(4, 4.0);
        let s = [
            recorded(1, 12, 14.7, 40.0),
            recorded(2, 12, 14.4, 30.0),
            recorded(3, 11, 12.0, 20.0),
        ];
        assert_eq!(decide(&s, &base), Some(EstimatesDecide::Candidate(1)));
        // More Succeeded than every other candidate and the baseline: the record decides.
        let s = [recorded(1, 13, 15.3, 40.0), recorded(2, 12, 13.8, 30.0)];
        assert_eq!(decide(&s, &base), None);
        // A candidate that succeeds more often but is out (a lost job) is no rival.
        let mut out = recorded(2, 14, 14.0, 30.0);
        out.excluded = vec![Excluded::Lost { lost: 1, max: 0 }];
        let s = [recorded(1, 13, 15.3, 40.0), out];
        assert_eq!(decide(&s, &base), None);
        // A tie in everything, broken by id: not the estimates' doing.
        let s = [recorded(1, 4, 4.0, 0.0), recorded(2, 4, 4.0, 0.0)];
        assert_eq!(decide(&s, &baseline_row(1, 1.0)), None);
        // Of the rivals, the one that succeeds most often (here 3, after 2 in the order).
        let s = [
            recorded(1, 10, 15.0, 40.0),
            recorded(2, 9, 14.0, 30.0),
            recorded(3, 11, 11.0, 20.0),
        ];
        assert_eq!(decide(&s, &base), Some(EstimatesDecide::Candidate(2)));
        // No more Succeeded than the baseline: the baseline is what it does not beat.
        let s = [recorded(1, 4, 5.5, 40.0), recorded(2, 4, 5.0, 30.0)];
        assert_eq!(decide(&s, &base), Some(EstimatesDecide::Baseline));
    }

    /// A candidate that loses a job and costs past the cap breaks both constraints, and
    /// says so; one within both breaks none.
    #[test]
    fn every_broken_constraint_is_listed() {
        let mut both = CompareTally::default();
        both.comparison.lost = 1;
        both.comparison.compute_added = TotalDuration(3_600_000_000_000);
        both.finals[Final::Succeeded as usize] = 5;
        let mut within = CompareTally::default();
        within.finals[Final::Succeeded as usize] = 5;
        let ranked = rank(
            vec![(1, Vec::new(), both), (2, Vec::new(), within)],
            &BaselineTally::default(),
            &Rates::new(Default::default()),
            &Constraints {
                max_lost: 0,
                max_compute: Some(MaxCompute::Duration(GoDuration(1_000_000_000))),
                max_contradictions: MaxContradictions::default(),
            },
        );
        assert_eq!(
            ranked.candidates[0].excluded,
            [
                Excluded::Lost { lost: 1, max: 0 },
                Excluded::Compute { cost: 3600.0, max: 1.0 }
            ]
        );
        assert!(ranked.candidates[1].eligible());
        assert_eq!(ranked.order, [1, 0]);
        assert_eq!(ranked.recommended, Some(1));
    }

    #[test]
    fn the_order_puts_eligible_first_then_successes_cost_retries_and_id() {
        let mut a = scored(1, 9.0, 50.0);
        a.excluded = vec![Excluded::Lost { lost: 1, max: 0 }];
        let b = scored(2, 8.0, 40.0);
        let c = scored(3, 8.0, 30.0);
        let mut d = scored(4, 8.0, 30.0);
        d.tally.comparison.retries_added = 5;
        let e = scored(5, 8.0, 30.0);
        let mut v = [a, b, c, d, e];
        v.sort_by(recommendation_order);
        let ids: Vec<u64> = v.iter().map(|x| x.id).collect();
        assert_eq!(ids, [3, 5, 4, 2, 1]);
    }
}
