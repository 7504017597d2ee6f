//! The value of `--max-contradictions` (docs/what-if.md "Does the baseline explain the
//! record?"): a number of jobs or a share of the jobs compared.
//!
//! Owns: [`MaxContradictions`] as a value, its parse and its default. Must not: hold it
//! against a comparison's count: that is `replay::explained`, which adds `exceeded` to this
//! type (as `replay::shard` adds which jobs a [`crate::cli::Shard`] holds).

/// `--max-contradictions`: how many of the jobs compared may contradict the baseline before
/// it is taken not to be what the cluster ran. The default, 1%, leaves room for the few jobs
/// an export catches mid-change (a policy applied mid-week, a run still being written) and no
/// more: past it, nothing measured against the baseline holds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MaxContradictions {
    Jobs(u64),
    Percent(f64),
}

impl Default for MaxContradictions {
    fn default() -> Self {
        MaxContradictions::Percent(1.0)
    }
}

impl MaxContradictions {
    /// `N` jobs or `P%` of the jobs compared; `None` for anything else.
    pub fn parse(text: &str) -> Option<MaxContradictions> {
        match text.strip_suffix('%') {
            Some(p) => p
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && (0.0..=100.0).contains(p))
                .map(MaxContradictions::Percent),
            None => text.trim().parse::<u64>().ok().map(MaxContradictions::Jobs),
        }
    }
}

/// As given on a command line: `N` or `P%`.
impl std::fmt::Display for MaxContradictions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaxContradictions::Jobs(n) => write!(f, "{n}"),
            MaxContradictions::Percent(p) => write!(f, "{p}%"),
        }
    }
}
