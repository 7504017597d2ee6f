//! The backtest of docs/estimates.md: are the estimates right on this cluster? The trials of jobs
//! submitted before `--backtest-at` fit the rates (with the same back-off as the estimates,
//! `estimate::Rates::rate` with `Fit::Train`), the trials of jobs submitted at or after it
//! test them.
//!
//! Owns: [`backtest`] (Brier score, the pooled-rate Brier, skill, the ten-bin calibration,
//! the classes checked and covered, and N, the mean distance between predicted and observed
//! in points) and its refusals. Pure: computed from the final trials, key by key in a fixed
//! order, so the figures are the same bits whatever split the trials were counted in. Must
//! not: read jobs (the replay counts the trials, `estimate::Trials`) or format.
//!
//! Decisions docs/estimates.md leaves open:
//! - a test trial of a class past the caps (`estimate::MAX_CLASSES`) is predicted by every
//!   class's rate, as a Pending job of that class is estimated;
//! - `skill` is `null` when the pooled rate's Brier score is 0 (every test trial predicted
//!   exactly by a rate of 0 or 1): there is nothing to improve on;
//! - a class is covered when its test share lies in the Wilson 95% interval of its train
//!   trials, bounds included.

use super::estimate::{wilson, ClassTrials, Fit, Rates, DEPTHS, Z95};
use crate::model::failure_history::Timestamp;

/// Test trials a class needs to be checked, and train trials.
pub const CHECK_TEST_TRIALS: u64 = 20;
pub const CHECK_TRAIN_TRIALS: u64 = 5;

/// One bin of the calibration table: test trials whose predicted rate is in [from, to)
/// (the last bin includes 1).
#[derive(Debug, Clone, PartialEq)]
pub struct Bin {
    pub from: f64,
    pub to: f64,
    pub trials: u64,
    /// The mean predicted rate of its trials.
    pub predicted: f64,
    /// The share of its trials that succeeded.
    pub observed: f64,
}

/// What the backtest found.
#[derive(Debug, Clone, PartialEq)]
pub struct Backtest {
    pub at: Timestamp,
    pub train_trials: u64,
    pub test_trials: u64,
    /// Mean (p − outcome)² over the test trials, p the fitted rate at their class and depth.
    pub brier: f64,
    /// The same with p the train trials' pooled rate.
    pub brier_pooled: f64,
    /// 1 − brier / brierPooled; `None` when brierPooled is 0.
    pub skill: Option<f64>,
    /// Ten bins of p, the empty ones left out.
    pub calibration: Vec<Bin>,
    pub classes_checked: u64,
    pub classes_covered: u64,
    /// N: the mean |predicted − observed| over the bins, weighted by their trials, in
    /// percentage points.
    pub within_points: f64,
}

/// Why there is no backtest (a usage error: exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No trial of a job submitted before the time.
    NoTrain,
    /// No trial of a job submitted at or after it.
    NoTest,
}

/// Running sums of one bin.
#[derive(Debug, Clone, Copy, Default)]
struct BinSum {
    trials: u64,
    successes: u64,
    predicted: f64,
}

/// The backtest of `rates`' trials split at `at`.
pub fn backtest(rates: &Rates, at: Timestamp) -> Result<Backtest, Refusal> {
    let trials = rates.trials();
    let train = trials.all().total(Fit::Train);
    let test = trials.all().tested();
    if train.trials == 0 {
        return Err(Refusal::NoTrain);
    }
    if test.trials == 0 {
        return Err(Refusal::NoTest);
    }
    let pooled = train.share();
    let (mut brier, mut brier_pooled) = (0.0f64, 0.0f64);
    let mut bins = [BinSum::default(); 10];
    let (mut checked, mut covered) = (0u64, 0u64);
    for (class, t) in trials.classes() {
        for d in 0..DEPTHS {
            let tested = t.test[d];
            if tested.trials == 0 {
                continue;
            }
            // Every class with test trials has a train rate: the pooled one at least.
            let Some(rate) = rates.rate(class.as_ref(), d as u32 + 1, Fit::Train) else {
                continue;
            };
            let (n, s) = (tested.trials as f64, tested.successes as f64);
            brier += squared_errors(rate.p, n, s);
            brier_pooled += squared_errors(pooled, n, s);
            let b = &mut bins[((rate.p * 10.0) as usize).min(9)];
            b.trials += tested.trials;
            b.successes += tested.successes;
            b.predicted += n * rate.p;
        }
        if class.is_some() && is_checked(t) {
            checked += 1;
            covered += u64::from(is_covered(t));
        }
    }
    let n = test.trials as f64;
    let (brier, brier_pooled) = (brier / n, brier_pooled / n);
    let calibration: Vec<Bin> = bins
        .iter()
        .enumerate()
        .filter(|(_, b)| b.trials > 0)
        .map(|(i, b)| Bin {
            from: i as f64 / 10.0,
            to: (i + 1) as f64 / 10.0,
            trials: b.trials,
            predicted: b.predicted / b.trials as f64,
            observed: b.successes as f64 / b.trials as f64,
        })
        .collect();
    let distance: f64 = calibration
        .iter()
        .map(|b| b.trials as f64 * (b.predicted - b.observed).abs())
        .sum();
    Ok(Backtest {
        at,
        train_trials: train.trials,
        test_trials: test.trials,
        brier,
        brier_pooled,
        skill: (brier_pooled > 0.0).then(|| 1.0 - brier / brier_pooled),
        calibration,
        classes_checked: checked,
        classes_covered: covered,
        within_points: distance / n * 100.0,
    })
}

/// Σ (p − outcome)² over `n` trials of which `s` succeeded.
fn squared_errors(p: f64, n: f64, s: f64) -> f64 {
    s * (1.0 - p) * (1.0 - p) + (n - s) * p * p
}

fn is_checked(t: &ClassTrials) -> bool {
    t.tested().trials >= CHECK_TEST_TRIALS && t.total(Fit::Train).trials >= CHECK_TRAIN_TRIALS
}

fn is_covered(t: &ClassTrials) -> bool {
    let train = t.total(Fit::Train);
    let (low, high) = wilson(train.successes, train.trials, Z95);
    let share = t.tested().share();
    (low..=high).contains(&share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::{Container, FailureHistory, Outcome, Run};
    use crate::replay::estimate::Trials;

    fn exit(code: i64) -> Run {
        Run {
            containers: vec![Container {
                exit_code: code,
                ..Container::default()
            }],
            ..Run::default()
        }
    }

    fn ok() -> Run {
        Run {
            outcome: Outcome::Succeeded,
            ..Run::default()
        }
    }

    fn h(runs: Vec<Run>) -> FailureHistory {
        FailureHistory {
            runs,
            ..FailureHistory::default()
        }
    }

    fn at() -> Timestamp {
        Timestamp::parse("2026-01-01T00:00:00Z").unwrap()
    }

    /// Train: exit:1 at depth 1, 8 trials, 6 successes (p = 0.75). Test: 4 trials, 1 success.
    /// By hand: Brier = (1 × 0.25² + 3 × 0.75²) / 4 = (0.0625 + 1.6875) / 4 = 0.4375; pooled
    /// p is the same 0.75, so brierPooled = 0.4375 and skill = 0. One bin, [0.7, 0.8):
    /// predicted 0.75, observed 0.25: N = 50 points.
    #[test]
    fn figures_by_hand() {
        let mut t = Trials::default();
        for i in 0..8 {
            let next = if i < 6 { ok() } else { exit(2) };
            t.add_history(&h(vec![exit(1), next]), false);
        }
        for i in 0..4 {
            let next = if i < 1 { ok() } else { exit(2) };
            t.add_history(&h(vec![exit(1), next]), true);
        }
        let b = backtest(&Rates::new(t), at()).unwrap();
        assert_eq!((b.train_trials, b.test_trials), (8, 4));
        assert!((b.brier - 0.4375).abs() < 1e-12, "{}", b.brier);
        assert!((b.brier_pooled - 0.4375).abs() < 1e-12);
        assert_eq!(b.skill, Some(0.0));
        assert_eq!(b.calibration.len(), 1);
        let bin = &b.calibration[0];
        assert_eq!((bin.from, bin.to, bin.trials), (0.7, 0.8, 4));
        assert!((bin.predicted - 0.75).abs() < 1e-12 && (bin.observed - 0.25).abs() < 1e-12);
        assert!((b.within_points - 50.0).abs() < 1e-9);
        // 4 test trials: the class is not checked.
        assert_eq!((b.classes_checked, b.classes_covered), (0, 0));
    }

    /// Two classes with different rates: the class rates beat the pooled one (skill > 0),
    /// and each class with 20 test trials is checked; one inside its train interval, one not.
    #[test]
    fn classes_are_checked_against_their_train_interval() {
        let mut t = Trials::default();
        // exit:1: train 10 of 10 succeed, test 20 of 20: covered. exit:2: train 0 of 10,
        // test 20 of 20 succeed: outside [0, 0.28]: not covered.
        for (code, train_ok, test_ok) in [(1, true, true), (2, false, true)] {
            for _ in 0..10 {
                t.add_history(&h(vec![exit(code), if train_ok { ok() } else { exit(9) }]), false);
            }
            for _ in 0..20 {
                t.add_history(&h(vec![exit(code), if test_ok { ok() } else { exit(9) }]), true);
            }
        }
        let b = backtest(&Rates::new(t), at()).unwrap();
        assert_eq!((b.classes_checked, b.classes_covered), (2, 1));
        // exit:1 predicted 1.0 (all 20 right), exit:2 predicted 0.0 (all 20 wrong): Brier 0.5;
        // pooled 0.5 for all 40: Brier 0.25 → skill −1.
        assert!((b.brier - 0.5).abs() < 1e-12 && (b.brier_pooled - 0.25).abs() < 1e-12);
        assert_eq!(b.skill, Some(-1.0));
        let bins: Vec<(f64, u64)> = b.calibration.iter().map(|b| (b.from, b.trials)).collect();
        assert_eq!(bins, [(0.0, 20), (0.9, 20)]);
    }

    #[test]
    fn a_side_without_trials_is_refused() {
        let mut t = Trials::default();
        t.add_history(&h(vec![exit(1), ok()]), false);
        assert_eq!(backtest(&Rates::new(t.clone()), at()), Err(Refusal::NoTest));
        let mut u = Trials::default();
        u.add_history(&h(vec![exit(1), ok()]), true);
        assert_eq!(backtest(&Rates::new(u), at()), Err(Refusal::NoTrain));
    }
}
