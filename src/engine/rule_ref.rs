//! [`RuleRef`]: which counter of a policy a decision used, a rule by index or the policy's
//! default action (docs/engines.md).
//!
//! Owns: that one reference, read by the records (`decision`) and the per-job counters
//! (`job_state`) alike. Must not: import anything of the engine; it is the ground both stand on.

/// Which counter a decision used: a rule by index, or the policy's default action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum RuleRef {
    Index(usize),
    Default,
}

impl std::fmt::Display for RuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleRef::Index(i) => write!(f, "{i}"),
            RuleRef::Default => write!(f, "default"),
        }
    }
}
