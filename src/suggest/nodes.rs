//! Suspect nodes (docs/reference/suggest.md "Suspect nodes"): nodes whose share of failed
//! runs is an outlier against every node's, by a one-sided binomial test with a Bonferroni
//! bound.
//!
//! Owns: [`binomial_tail`] and [`suspects`]. Pure: counts in, the listed nodes out.

use super::stats::Learned;

/// Nodes with fewer runs are not tested.
pub const MIN_RUNS: u64 = 10;

/// The family-wise level the bound divides among the nodes tested.
pub const ALPHA: f64 = 0.001;

/// A node listed as suspect.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspect {
    pub node: String,
    pub runs: u64,
    pub failed: u64,
    pub tail: f64,
    /// Its 3 commonest signatures, by runs then signature.
    pub signatures: Vec<(String, u64)>,
}

fn ln_factorial(n: u64) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

/// P(X ≥ k) for X ~ Binomial(n, p), exact to rounding when `k` is above the mode; at or
/// below it the tail is at least about a half and 1 is returned (no node there is listed).
pub fn binomial_tail(n: u64, k: u64, p: f64) -> f64 {
    if k == 0 || p >= 1.0 {
        return 1.0;
    }
    if k > n || p <= 0.0 {
        return 0.0;
    }
    if (k as f64) <= (n as f64 + 1.0) * p {
        return 1.0;
    }
    let q = 1.0 - p;
    let ln_first =
        ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k) + k as f64 * p.ln() + (n - k) as f64 * q.ln();
    // Terms after the mode only decrease: their sum relative to the first stays ≤ n.
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for i in k..n {
        term *= (n - i) as f64 / (i + 1) as f64 * p / q;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    (ln_first + sum.ln()).exp().min(1.0)
}

/// The suspect nodes of what was learned, sorted by tail then node.
pub fn suspects(learned: &Learned) -> Vec<Suspect> {
    let tested: Vec<(&String, &super::stats::NodeStats)> =
        learned.nodes.iter().filter(|(_, s)| s.runs >= MIN_RUNS).collect();
    if tested.is_empty() {
        return Vec::new();
    }
    let (runs, failed) = tested
        .iter()
        .fold((0u64, 0u64), |(n, k), (_, s)| (n + s.runs, k + s.failed));
    let p0 = failed as f64 / runs as f64;
    let bound = ALPHA / tested.len() as f64;
    let mut out: Vec<Suspect> = tested
        .into_iter()
        .filter_map(|(node, s)| {
            let tail = binomial_tail(s.runs, s.failed, p0);
            (tail < bound).then(|| {
                let mut sigs: Vec<(String, u64)> = s
                    .signatures
                    .iter()
                    .map(|(slot, n)| (learned.text_of(*slot).to_string(), *n))
                    .collect();
                sigs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_bytes().cmp(b.0.as_bytes())));
                sigs.truncate(3);
                Suspect {
                    node: node.clone(),
                    runs: s.runs,
                    failed: s.failed,
                    tail,
                    signatures: sigs,
                }
            })
        })
        .collect();
    out.sort_by(|a, b| a.tail.total_cmp(&b.tail).then(a.node.cmp(&b.node)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail summed term by term with exact binomial coefficients (small n).
    fn naive(n: u64, k: u64, p: f64) -> f64 {
        let choose = |n: u64, r: u64| -> f64 { (0..r).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64) };
        (k..=n)
            .map(|i| choose(n, i) * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32))
            .sum()
    }

    #[test]
    fn the_tail_is_the_binomial_sum() {
        for (n, k, p) in [
            (10, 5, 0.1),
            (20, 19, 0.3),
            (50, 20, 0.05),
            (100, 100, 0.5),
            (30, 4, 0.01),
        ] {
            let (a, b) = (binomial_tail(n, k, p), naive(n, k, p));
            assert!((a - b).abs() <= 1e-9 * b.max(1e-300), "n={n} k={k} p={p}: {a} vs {b}");
        }
        assert_eq!(binomial_tail(10, 0, 0.1), 1.0);
        assert_eq!(binomial_tail(10, 1, 0.5), 1.0);
        assert_eq!(binomial_tail(10, 3, 0.0), 0.0);
        // Large n: no overflow, a tiny but positive tail.
        let t = binomial_tail(1_000_000, 2_000, 0.001);
        assert!(t > 0.0 && t < 1e-100, "{t}");
    }
}
