//! Which engine decides a comparison (docs/engines.md "Which engine decides"): the one rule
//! for `simulate`, `tune` and `suggest`, from the dialect of each side's documents.
//!
//! Owns: [`Dialect`] (what a side's RetryPolicy documents are) and [`engine`] (the rule).
//! Must not: read files or build policy sets.

use crate::engine::EngineFrom;
use crate::engine::EngineKind;
use crate::input::SourceFile;
use crate::model::{ApiVersion, Kind};
use crate::replay::baseline_from::BaselineFrom;

/// What a side's files say of the engine: whether they hold a RetryPolicy document, and
/// whether every one is today's Armada's (`armadaproject.io/v1beta1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    policies: bool,
    all_v1beta1: bool,
    any_v1beta1: bool,
}

impl Dialect {
    /// The dialect of `files`' RetryPolicy documents (Queues read the same in both and do not
    /// count).
    pub fn of(files: &[SourceFile]) -> Dialect {
        let versions = files
            .iter()
            .flat_map(|f| &f.documents)
            .filter(|d| d.kind == Some(Kind::RetryPolicy))
            .map(|d| d.api_version);
        let (mut policies, mut all_v1beta1, mut any_v1beta1) = (false, true, false);
        for v in versions {
            policies = true;
            let upstream = v == Some(ApiVersion::V1beta1);
            all_v1beta1 &= upstream;
            any_v1beta1 |= upstream;
        }
        Dialect {
            policies,
            all_v1beta1,
            any_v1beta1,
        }
    }

    /// Whether the files hold a RetryPolicy document.
    pub fn has_policies(self) -> bool {
        self.policies
    }

    /// What the documents are, in words (`suggest`'s table says where its engine came from).
    pub fn words(self) -> &'static str {
        match (self.policies, self.all_v1beta1, self.any_v1beta1) {
            (false, _, _) => "holds no RetryPolicy",
            (true, true, _) => "is `armadaproject.io/v1beta1`",
            (true, false, true) => "mixes both dialects",
            (true, false, false) => "is `armadaproject.io/v1`",
        }
    }
}

/// Where the candidate's documents come from, for the rule.
#[derive(Debug, Clone, Copy)]
pub enum CandidateDialect {
    /// `-f` or `tune`'s template: its documents' dialect.
    Files(Dialect),
    /// `suggest`'s proposal, which it writes in its baseline's dialect.
    Proposed,
}

/// The engine the documents of `sides` pick (docs/engines.md "Which engine decides"):
/// `upstream` when every RetryPolicy document among them is today's Armada's and there is
/// one, `design` otherwise. [`engine`] applies it to a comparison's two sides; `watch`, whose
/// candidates all share today's side, to all of them at once.
pub fn of_files(sides: &[Dialect]) -> EngineKind {
    if sides.iter().any(|d| d.policies) && sides.iter().all(|d| d.all_v1beta1) {
        EngineKind::Upstream
    } else {
        EngineKind::Design
    }
}

/// The engine the sides pick, and why (docs/engines.md "Which engine decides"): `--engine`
/// always wins; else `upstream` when every RetryPolicy document of the sides is today's
/// Armada's and there is one, `design` otherwise (the only engine that reads both dialects);
/// a side with no file takes the other side's dialect, and a proposal its baseline's: the
/// cluster's is today's Armada's, and with no baseline at all the design's. `b`: the dialect
/// of the baseline's files (read only when it comes from `--baseline FILES`).
pub fn engine(
    flag: Option<EngineKind>,
    candidate: CandidateDialect,
    baseline: BaselineFrom,
    b: Dialect,
) -> (EngineKind, EngineFrom) {
    if let Some(e) = flag {
        return (e, EngineFrom::Flag);
    }
    match (candidate, baseline) {
        (CandidateDialect::Files(c), BaselineFrom::Files) => (of_files(&[c, b]), EngineFrom::Baseline(b.words())),
        (CandidateDialect::Files(c), _) => (of_files(&[c]), EngineFrom::NoBaseline),
        (CandidateDialect::Proposed, BaselineFrom::Files) => (of_files(&[b]), EngineFrom::Baseline(b.words())),
        // No file: the cluster's server stores today's Armada's policies.
        (CandidateDialect::Proposed, BaselineFrom::Cluster) => (EngineKind::Upstream, EngineFrom::Cluster),
        (CandidateDialect::Proposed, _) => (EngineKind::Design, EngineFrom::NoBaseline),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialect(policies: bool, all: bool, any: bool) -> Dialect {
        Dialect {
            policies,
            all_v1beta1: all,
            any_v1beta1: any,
        }
    }

    /// The rule of docs/engines.md, case by case, for the three verbs.
    #[test]
    fn one_rule_for_every_verb() {
        let v1 = dialect(true, false, false);
        let v1beta1 = dialect(true, true, true);
        let none = dialect(false, true, false);
        let files = CandidateDialect::Files;
        // The baseline: from files of a dialect, or from no file (their dialect: none).
        let given = |d| (BaselineFrom::Files, d);
        let (cluster, no_baseline) = ((BaselineFrom::Cluster, none), (BaselineFrom::None, none));
        let cases = [
            (files(v1beta1), given(v1beta1), EngineKind::Upstream),
            (files(v1beta1), given(v1), EngineKind::Design),
            (files(v1), no_baseline, EngineKind::Design),
            // A side with no file takes the other's dialect.
            (files(v1beta1), cluster, EngineKind::Upstream),
            (files(v1), cluster, EngineKind::Design),
            // No RetryPolicy at all: the design's.
            (files(none), cluster, EngineKind::Design),
            (files(none), given(v1beta1), EngineKind::Upstream),
            // suggest: its baseline's.
            (CandidateDialect::Proposed, given(v1beta1), EngineKind::Upstream),
            (CandidateDialect::Proposed, given(v1), EngineKind::Design),
            (CandidateDialect::Proposed, cluster, EngineKind::Upstream),
            (CandidateDialect::Proposed, no_baseline, EngineKind::Design),
        ];
        for (c, (from, b), want) in cases {
            assert_eq!(engine(None, c, from, b).0, want, "{c:?} {from:?} {b:?}");
            assert_eq!(
                engine(Some(EngineKind::Design), c, from, b),
                (EngineKind::Design, EngineFrom::Flag)
            );
        }
    }
}
