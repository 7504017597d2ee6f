//! Whether the baseline explains the record (docs/what-if.md "Does the baseline explain the
//! record?"): every job a comparison replays under its baseline, and those whose record
//! contradicts it (a run after the job's end, a run it would not have started, a run on a
//! node its requeue avoids, a job the record ends that it would run again), counted as a
//! plain `simulate` counts contradictions (the engine's job report makes them), with the
//! first of them in input order whatever the split into workers or shards.
//!
//! Owns: [`Explained`] and its words. Must not: replay (the comparison's workers hand each job
//! in), or decide what a verb does past its limit.

use crate::engine::job_report::plural;
use crate::replay::source::Pos;

pub use crate::cli::MaxContradictions;

/// `--max-contradictions`' limit held against what a comparison found (the value and its
/// parse are `cli`'s, as `--shard`'s are).
impl MaxContradictions {
    /// Whether `e`'s contradicting jobs are more than this allows.
    pub fn exceeded(self, e: &Explained) -> bool {
        match self {
            MaxContradictions::Jobs(n) => e.contradicted > n,
            // K > M·P/100, as K·100 > M·P: no rounding of a share.
            MaxContradictions::Percent(p) => e.contradicted as f64 * 100.0 > e.jobs as f64 * p,
        }
    }
}

/// At most this many contradicting jobs are named.
pub const NAMED: usize = 5;

/// The jobs a baseline was replayed against, and those whose record contradicts it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Explained {
    pub jobs: u64,
    pub contradicted: u64,
    /// The first contradicting jobs, by their place in the source (so that any split of the
    /// source into units or shards names the same), at most [`NAMED`].
    pub first: Vec<(Pos, String)>,
}

impl Explained {
    /// One job replayed against the baseline; `contradicts`: its record contradicts it.
    pub fn add(&mut self, at: Pos, id: &str, contradicts: bool) {
        self.jobs += 1;
        if contradicts {
            self.contradicted += 1;
            self.keep(at, id);
        }
    }

    fn keep(&mut self, at: Pos, id: &str) {
        if self.first.len() == NAMED && self.first.last().is_some_and(|(last, _)| at > *last) {
            return;
        }
        let k = self.first.partition_point(|(p, _)| *p < at);
        self.first.insert(k, (at, id.to_string()));
        self.first.truncate(NAMED);
    }

    /// Adds another part's jobs (a later unit, another shard).
    pub fn merge(&mut self, o: &Explained) {
        self.jobs += o.jobs;
        self.contradicted += o.contradicted;
        for (at, id) in &o.first {
            self.keep(*at, id);
        }
    }

    /// The jobs that explain it.
    pub fn explained(&self) -> u64 {
        self.jobs - self.contradicted
    }

    /// The reason a verdict or a recommendation gives past `--max-contradictions`.
    pub fn unexplained_words(&self) -> String {
        format!(
            "the baseline does not explain the record: {} it; is it what the cluster ran?",
            plural(self.contradicted, "job contradicts", "jobs contradict")
        )
    }

    /// The contradicting jobs named, in input order.
    pub fn ids(&self) -> Vec<String> {
        self.first.iter().map(|(_, id)| id.clone()).collect()
    }

    /// `today's policy explains N of M jobs (K contradict it: ids…)`, every format's words;
    /// `id` writes one job id (plain, backquoted, `<code>`).
    pub fn words(&self, id: impl Fn(&str) -> String) -> String {
        let ids: Vec<String> = self.first.iter().map(|(_, j)| id(j)).collect();
        let more = self.contradicted.saturating_sub(ids.len() as u64);
        let listed = match more {
            0 => ids.join(", "),
            more => format!("{} and {more} more", ids.join(", ")),
        };
        let contradict = match self.contradicted {
            0 => "none contradicts it".to_string(),
            k => format!("{} it: {listed}", plural(k, "contradicts", "contradict")),
        };
        format!(
            "today's policy explains {} of {} ({contradict})",
            self.explained(),
            plural(self.jobs, "job", "jobs")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first five in input order, whatever order the parts come in.
    #[test]
    fn the_first_contradicting_jobs_are_the_sources_first_whatever_the_split() {
        let mut whole = Explained::default();
        for k in 0..12u64 {
            whole.add(Pos(0, k), &format!("j{k}"), k % 2 == 1);
        }
        let (mut a, mut b) = (Explained::default(), Explained::default());
        for k in 0..12u64 {
            let part = if k % 3 == 0 { &mut a } else { &mut b };
            part.add(Pos(0, k), &format!("j{k}"), k % 2 == 1);
        }
        b.merge(&a);
        assert_eq!(b, whole);
        assert_eq!(whole.ids(), ["j1", "j3", "j5", "j7", "j9"]);
        assert_eq!(
            whole.words(|j| format!("`{j}`")),
            "today's policy explains 6 of 12 jobs (6 contradict it: `j1`, `j3`, `j5`, `j7`, `j9` and 1 more)"
        );
        let none = Explained {
            jobs: 3,
            ..Explained::default()
        };
        assert_eq!(
            none.words(|j| j.to_string()),
            "today's policy explains 3 of 3 jobs (none contradicts it)"
        );
    }

    /// More than 1% of the jobs compared, exactly, by default: 1 of 100 is within it.
    #[test]
    fn max_contradictions_is_more_than_its_share_or_count() {
        let e = |jobs, contradicted| Explained {
            jobs,
            contradicted,
            first: Vec::new(),
        };
        let one = MaxContradictions::default();
        assert_eq!(one, MaxContradictions::Percent(1.0));
        assert!(!MaxContradictions::Percent(100.0).exceeded(&e(100, 100)));
        assert!(!one.exceeded(&e(100, 1)));
        assert!(one.exceeded(&e(100, 2)));
        assert!(one.exceeded(&e(99, 1)));
        assert!(!MaxContradictions::Jobs(0).exceeded(&e(5, 0)));
        assert!(MaxContradictions::Jobs(0).exceeded(&e(5, 1)));
        assert_eq!(MaxContradictions::parse("2.5%"), Some(MaxContradictions::Percent(2.5)));
        assert_eq!(MaxContradictions::parse("7"), Some(MaxContradictions::Jobs(7)));
        for bad in ["", "-1", "101%", "x%", "1.5", "NaN%"] {
            assert_eq!(MaxContradictions::parse(bad), None, "{bad}");
        }
        assert_eq!(
            e(200, 3).unexplained_words(),
            "the baseline does not explain the record: 3 jobs contradict it; is it what the cluster ran?"
        );
    }
}
