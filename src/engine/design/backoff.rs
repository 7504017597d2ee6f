//! Backoff and jitter (docs/engines.md): each backoff field resolved rule → policy → scheduler →
//! built-in, the delay of the `n`th retry under a counter, and the deterministic jitter
//! fraction of a (job, run).
//!
//! Owns: the built-in backoff, [`resolve_backoff`], [`backoff_delay`] (saturating: never
//! overflows, never NaN) and [`jitter_fraction`]. Must not: use randomness or `std`'s
//! `DefaultHasher` (not stable across releases): jitter is a stable hash.

use crate::model::duration::GoDuration;
use crate::model::policy::Backoff;

use crate::engine::job_state::fnv1a;

/// Built-in backoff (docs/engines.md), the last level of inheritance.
pub const BUILTIN_INITIAL_DELAY: GoDuration = GoDuration(0);
pub const BUILTIN_MAX_DELAY: GoDuration = GoDuration(10 * 60 * 1_000_000_000);
pub const BUILTIN_MULTIPLIER: f64 = 2.0;
pub const BUILTIN_JITTER: f64 = 0.0;
/// A stable `u` in [0, 1) from (job id, run index): FNV-1a over the id, mixed with the run
/// index by SplitMix64. Stable across platforms and Rust releases.
pub fn jitter_fraction(job_id: &str, run_index: usize) -> f64 {
    jitter_from_hash(fnv1a(job_id), run_index)
}

/// [`jitter_fraction`] from the id's FNV-1a hash.
pub(super) fn jitter_from_hash(h: u64, run_index: usize) -> f64 {
    let mut z = h ^ (run_index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Backoff with each field resolved on its own: rule → policy → scheduler → built-in.
pub fn resolve_backoff(
    rule: Option<&Backoff>,
    policy: &Backoff,
    scheduler: &Backoff,
) -> (GoDuration, GoDuration, f64, f64) {
    let pick = |f: fn(&Backoff) -> Option<GoDuration>, builtin| {
        rule.and_then(f)
            .or_else(|| f(policy))
            .or_else(|| f(scheduler))
            .unwrap_or(builtin)
    };
    let pickf = |f: fn(&Backoff) -> Option<f64>, builtin| {
        rule.and_then(f)
            .or_else(|| f(policy))
            .or_else(|| f(scheduler))
            .unwrap_or(builtin)
    };
    (
        pick(|b| b.initial_delay, BUILTIN_INITIAL_DELAY),
        pick(|b| b.max_delay, BUILTIN_MAX_DELAY),
        pickf(|b| b.multiplier, BUILTIN_MULTIPLIER),
        pickf(|b| b.jitter, BUILTIN_JITTER),
    )
}

/// Integers below this are exact as `f64`.
const EXACT_F64: u64 = 1 << 53;

/// `min(initial × multiplier^(n−1), max)`, saturating: never overflows, never NaN.
pub fn backoff_delay(initial: GoDuration, max: GoDuration, multiplier: f64, n: u32) -> GoDuration {
    if initial.0 == 0 || n == 0 {
        return GoDuration(initial.0.min(max.0));
    }
    // The first retry under a counter (multiplier⁰): the formula below gives exactly
    // `min(initial, max)` while both are exact as f64 (below 2⁵³ ns, 104 days), without
    // the `powi` and `round` calls.
    if n == 1 && initial.0 < EXACT_F64 && max.0 < EXACT_F64 {
        return GoDuration(initial.0.min(max.0));
    }
    let m = if multiplier.is_finite() && multiplier >= 1.0 {
        multiplier
    } else {
        1.0
    };
    let exp = i32::try_from(n - 1).unwrap_or(i32::MAX);
    let v = initial.0 as f64 * m.powi(exp);
    if !v.is_finite() || v >= max.0 as f64 {
        max
    } else {
        // Rounded, not truncated: 10s × 1.15² is 13.225s, not 13.224999999s.
        GoDuration(v.round() as u64)
    }
}
