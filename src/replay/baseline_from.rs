//! Where a comparison's baseline came from ([`BaselineFrom`]): the one answer the sides kit
//! gives when it resolves a verb's sides (`commands::replay::sides`), which the engine rule,
//! the baseline's policy set and `tune`'s output and partial record all read, so that no
//! one maps an origin of theirs onto another's.
//!
//! Owns: that enum. Must not: hold the baseline's policies (that is `Sides`' baseline) or say
//! the origin in words (that is `output`). Pure.

use serde::{Deserialize, Serialize};

/// Where the baseline's policies come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BaselineFrom {
    /// No baseline: a plain replay.
    None,
    /// `--baseline FILES`.
    Files,
    /// `--baseline-from-cluster`: the policies stored in Lookout's database, read when the
    /// source opens it.
    Cluster,
    /// `tune` without a baseline: the template as written.
    Template,
    /// `suggest` without a baseline: no policy, the engine's default path.
    NoPolicy,
}
