//! What incident detection's parts share, below both (docs/reference/suggest.md "Incidents"):
//! the grid (10-minute starts, 1-hour windows, the widening, the 5-minute slots), a window and
//! windows merged, the test a window's count is held to, what an unusual window is (its
//! [`Kind`]) and what detection found ([`Detected`]). Pure: no I/O. Must not: count or
//! classify (the detector's and the mix's, `incidents` and `incidents::kinds`).

use serde::{Deserialize, Serialize};

use crate::model::failure_history::Timestamp;

pub(super) const MINUTE: i64 = 60_000_000_000;

/// Windows start every 10 minutes.
pub const STEP: i64 = 10 * MINUTE;
/// A window is 1 hour: 6 starts.
pub const STEPS_PER_WINDOW: i64 = 6;
/// A detected window is widened by 10 minutes before it…
pub const BEFORE: i64 = 10 * MINUTE;
/// … and 5 after.
pub const AFTER: i64 = 5 * MINUTE;
/// The fewest distinct failing jobs an incident has.
pub const MIN_JOBS: u64 = 5;
/// The chance of a window so full, under the history's own rate, spread over the windows
/// tested (Bonferroni): `ALPHA / B`.
pub const ALPHA: f64 = 0.01;

/// A span of time, `[from, to)` in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub from: Timestamp,
    pub to: Timestamp,
    /// Found in the history (else only given by hand).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detected: bool,
    /// Given by hand (`--incident FROM/TO`), or merged with one that was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub given: bool,
}

impl Window {
    /// A window given by hand.
    pub fn given(from: Timestamp, to: Timestamp) -> Window {
        Window {
            from,
            to,
            detected: false,
            given: true,
        }
    }

    pub fn contains(&self, t: i64) -> bool {
        self.from.0 <= t && t < self.to.0
    }

    /// Its length in nanoseconds.
    pub fn length(&self) -> i64 {
        self.to.0.saturating_sub(self.from.0)
    }
}

/// The 10-minute mark at or before `t`: the start of the window it opens.
pub(super) fn step_of(t: i64) -> i64 {
    t.div_euclid(STEP)
}

/// Changes of a count by window start (`(key, step, change)`, sorted by key then step), as
/// a partial's totals hold them, checked to be what counting writes: each start a step some
/// time has (its window's end one past it), and each key's count never below nothing and
/// back to nothing after its last change. A partial is input (resealed by hand, it passes its
/// checksum): a change no count makes would be an overflow, or an index past its names, in
/// the sums the merge makes of them.
pub(crate) fn check_changes(changes: impl Iterator<Item = (u32, i64, i64)>) -> Result<(), String> {
    let (first, last) = (step_of(i64::MIN), step_of(i64::MAX) + 1);
    let mut at: Option<(u32, i64)> = None;
    let mut count: i64 = 0;
    for (key, step, change) in changes {
        if !(first..=last).contains(&step) {
            return Err(format!("a window's change at step `{step}`, which no time has"));
        }
        if let Some((k, s)) = at {
            if (k, s) >= (key, step) {
                return Err(format!(
                    "a window's change at step `{step}` out of order (after step `{s}`)"
                ));
            }
            // A key's count is back to nothing before the next key's first change.
            if k != key && count != 0 {
                return Err(format!("a window's count that never ends (after step `{s}`)"));
            }
        }
        // More than 2^32 failing jobs in one window of one shard is no history's: past it,
        // the merge's sums of counts over the span could pass 64 bits.
        count = count
            .checked_add(change)
            .filter(|&c| (0..=1 << 32).contains(&c))
            .ok_or_else(|| format!("a window's change of `{change}`, which no count of jobs makes"))?;
        at = Some((key, step));
    }
    if let (Some((_, s)), true) = (at, count != 0) {
        return Err(format!("a window's count that never ends (after step `{s}`)"));
    }
    Ok(())
}

/// The figures the windows were tested by: the mean `k` of all windows, `B`, and whether
/// `λ_w` was by hour of day.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Test {
    pub mean: f64,
    pub tests: u64,
    pub by_hour: bool,
}

/// Whether a window of `k` distinct failing jobs is unusual at rate `lambda` among `tests`
/// windows tested: `k ≥ 5` and `P(X ≥ k) < 0.01 / tests`, `X ~ Poisson(λ)`.
pub fn is_unusual(k: u64, lambda: f64, tests: u64) -> bool {
    k >= MIN_JOBS && tests > 0 && poisson_tail(k, lambda) < ALPHA / tests as f64
}

/// `P(X ≥ k)` for `X ~ Poisson(λ)`: summed from the far side of the mean, so that a small
/// tail keeps its digits.
pub fn poisson_tail(k: u64, lambda: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if lambda.is_nan() || lambda <= 0.0 {
        return 0.0;
    }
    let ln_pmf = |i: u64| -lambda + i as f64 * lambda.ln() - ln_factorial(i);
    if (k as f64) > lambda {
        // The upper terms, each λ/(i+1) of the one before.
        series(ln_pmf(k), k, |i| Some((lambda / (i + 1) as f64, i + 1)))
            .exp()
            .min(1.0)
    } else {
        // The lower terms, downward from k − 1, taken from 1.
        let lower = series(ln_pmf(k - 1), k - 1, |i| (i > 0).then(|| (i as f64 / lambda, i - 1)));
        (1.0 - lower.exp()).clamp(0.0, 1.0)
    }
}

/// `ln` of a tail's sum: its first term `exp(first)`, then from term `i` the next, `step(i)`
/// times it (`None`: no term after `i`), until the terms no longer count.
pub(super) fn series(first: f64, mut i: u64, step: impl Fn(u64) -> Option<(f64, u64)>) -> f64 {
    let (mut term, mut sum) = (1.0f64, 0.0f64);
    loop {
        sum += term;
        let Some((ratio, next)) = step(i) else {
            break;
        };
        term *= ratio;
        i = next;
        if term < sum * 1e-17 {
            break;
        }
    }
    first + sum.ln()
}

/// `ln n!`: summed exactly up to 20, Stirling's series past it (its error below 1e-15
/// there).
pub(super) fn ln_factorial(n: u64) -> f64 {
    if n < 21 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x) - 1.0 / (360.0 * x * x * x)
        + 1.0 / (1260.0 * x.powi(5))
}

/// Windows merged: sorted, none overlapping another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Windows(pub Vec<Window>);

impl Windows {
    /// `windows` sorted and merged where they overlap (a merged window is detected when a part
    /// of it was, given when a part was).
    pub fn merged(mut windows: Vec<Window>) -> Windows {
        windows.retain(|w| w.from < w.to);
        windows.sort_by_key(|w| (w.from, w.to));
        let mut out: Vec<Window> = Vec::with_capacity(windows.len());
        for w in windows {
            match out.last_mut() {
                Some(last) if w.from < last.to => {
                    last.to = last.to.max(w.to);
                    last.detected |= w.detected;
                    last.given |= w.given;
                }
                _ => out.push(w),
            }
        }
        Windows(out)
    }

    /// The window holding `t`, by its place.
    pub fn find(&self, t: i64) -> Option<usize> {
        let at = self.0.partition_point(|w| w.to.0 <= t);
        self.0.get(at).filter(|w| w.from.0 <= t).map(|_| at)
    }

    pub fn contains(&self, t: i64) -> bool {
        self.find(t).is_some()
    }

    /// Whether a window overlaps `[from, to)`.
    pub fn overlaps(&self, from: i64, to: i64) -> bool {
        let at = self.0.partition_point(|w| w.to.0 <= from);
        self.0.get(at).is_some_and(|w| w.from.0 < to)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether any window may hold a time within the 5-minute slot `slot` (windows found
    /// later start and end on those slots' edges).
    pub fn holds_slot(&self, slot: i64) -> bool {
        self.contains(slot.saturating_mul(SLOT))
    }
}

/// The grid every detected window's edges lie on: 5 minutes (10-minute marks, less 10
/// minutes, plus an hour and 5). A count kept by slot of this grid can be split at any
/// window found later.
pub const SLOT: i64 = 5 * MINUTE;

/// The 5-minute slot of `t`.
pub fn slot_of(t: i64) -> i64 {
    t.div_euclid(SLOT)
}

/// What detection found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detected {
    /// Merged with the given ones, in time order.
    pub windows: Vec<Window>,
    /// The detected ones alone, merged (their edges on the 5-minute grid, [`SLOT`]).
    pub found: Windows,
    /// The mean `k` of a window, and `B`, the windows tested.
    pub lambda: f64,
    pub tests: u64,
    /// The bursts and surges, merged apart from the incidents (none where the kinds were not
    /// told: `Detector::detect`).
    pub busy: Vec<(Window, Kind)>,
}

impl Detected {
    pub fn windows(&self) -> Windows {
        Windows(self.windows.clone())
    }

    /// The given windows alone, when nothing is detected.
    pub fn given(given: &Windows) -> Detected {
        Detected {
            windows: given.0.clone(),
            ..Detected::default()
        }
    }
}

/// What an unusual window is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Left out of learning.
    Incident,
    /// One job set's: `jobs` of its failing jobs in the busiest hour of it.
    Burst { queue: String, job_set: String, jobs: u64 },
    /// The usual mix, more of it: `jobs` failing in its busiest hour where `expected` were.
    Surge { jobs: u64, expected: f64 },
}

impl Kind {
    /// Which kind a merged window takes.
    pub(super) fn rank(&self) -> (u8, u64) {
        match self {
            Kind::Incident => (2, 0),
            Kind::Burst { jobs, .. } => (1, *jobs),
            Kind::Surge { jobs, .. } => (0, *jobs),
        }
    }

    pub fn is_incident(&self) -> bool {
        *self == Kind::Incident
    }
}
