//! What decides a job under each candidate of a sweep, so that candidates that decide it
//! alike share one replay (docs/tune.md): whether the candidates match every run alike
//! ([`shares_matching`]: then each run is matched once for all of them, one match table),
//! the rules a job's runs match ([`matched_keys`]), each candidate's actions, backoffs and
//! limits interned ([`Ids`]) into a job's key ([`Key`]: equal keys, equal outcomes), and the
//! keys seen so far for a job with their outcomes ([`KeyedOutcomes`]).
//!
//! Owns: those tables and keys. Must not: replay or count (that is the sweep, which drives
//! the replay's per-side step). Pure.

use std::collections::HashMap;

use crate::engine::simulator::Decides;
use crate::engine::Match;
use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::Action;
use crate::replay::policy_sets::PolicySet;
use crate::tune::vary::{Target, Vary};

/// The fields a rule's matching reads (docs/engines.md): a vary of any of them gives candidates
/// different matchers; `defaultPolicyName` gives jobs a different list.
const MATCHING: [&str; 13] = [
    "onConditions",
    "onExitCodes",
    "operator",
    "values",
    "onTerminationMessage",
    "pattern",
    "onFailureCategory",
    "onFailureSubcategory",
    "onCategory",
    "onSubcategory",
    "containerName",
    "includeInitContainers",
    "defaultPolicyName",
];

/// Whether every candidate of `varies` matches each run as the others do: no vary touches a
/// field matching reads, nor the default policy. Then each run is matched once for all of
/// them (the sweep's fast path; which rule matches a run does not depend on limits,
/// actions or backoff).
///
/// A `categorizer:` vary is left out: it changes the categories the runs carry, not the
/// policies' matchers, and the sweep matches the runs of each categorizer apart (candidates
/// of two categorizers never share a table, a key or a replay).
pub fn shares_matching(varies: &[Vary]) -> bool {
    varies.iter().filter(|v| v.target != Target::Categorizer).all(|v| {
        v.path
            .split('.')
            .map(|segment| segment.split('[').next().unwrap_or(segment))
            .all(|field| !MATCHING.contains(&field))
    })
}

/// The rules a job's runs match (`table`: each run's first match over the job's list,
/// `list`: that list as indices into the policies given), each once with the number of runs
/// that match it, and the default action (`(usize::MAX, None)`) with the number of failed
/// runs that match none: what decides the job besides its runs
/// (`Simulator::decides`).
pub(super) fn matched_keys(h: &FailureHistory, table: &[Match], list: &[usize]) -> Vec<Matched> {
    let mut keys: Vec<Matched> = Vec::new();
    for (run, m) in h.runs.iter().zip(table) {
        let (policy, rule) = match m {
            Some((p, r, _)) => match list.get(*p) {
                Some(&policy) => (policy, Some(*r)),
                None => return Vec::new(),
            },
            None if run.outcome == Outcome::Failed => (usize::MAX, None),
            None => continue,
        };
        match keys.iter_mut().find(|k| k.policy == policy && k.rule == rule) {
            Some(k) => k.runs += 1,
            None => keys.push(Matched { policy, rule, runs: 1 }),
        }
    }
    keys
}

/// A rule a job's runs match (`rule: None`: the default action of the first policy of the
/// job's list whose default retries), and how many of its runs do.
pub(super) struct Matched {
    policy: usize,
    rule: Option<usize>,
    runs: u32,
}

/// Words a job's key holds at most: its settings group and what decides it per rule; a job
/// whose runs match more rules than that is replayed under every candidate.
pub(super) const KEY_WORDS: usize = 8;

/// What decides a job under one candidate ([`Ids::key`]), padded with `u64::MAX`: equal
/// keys, equal outcomes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Key([u64; KEY_WORDS]);

impl std::hash::Hash for Key {
    /// One word for the hasher: the words folded (an array's own `Hash` hands its bytes one
    /// at a time, which cost more than the lookup saves). Equality still compares them all.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let folded = self.0.iter().fold(0u64, |h, &w| {
            (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
        });
        state.write_u64(folded);
    }
}

/// What decides each candidate's runs (`Simulator::decides`), interned without the
/// limits: equal ids, equal actions and backoffs, so that a job's key is a few integers.
pub(super) struct Ids {
    /// \[arm\]\[policy\]\[rule\].
    rules: Vec<Vec<Vec<RuleId>>>,
    /// \[arm\]: the id of every policy's default action and backoff.
    defaults: Vec<u32>,
    /// \[arm\]\[policy\]: how the policy's default action decides.
    default_of: Vec<Vec<Decides>>,
}

/// A rule's id (its action and backoff) and its limit (`None`: `globalMaxRetries`).
type RuleId = (u32, Option<u32>);

impl Ids {
    pub(super) fn new(arms: &[PolicySet]) -> Ids {
        let mut interned: HashMap<Vec<Decides>, u32> = HashMap::new();
        let mut id = |decides: Vec<Decides>| {
            let next = interned.len() as u32;
            *interned.entry(decides).or_insert(next)
        };
        let mut ids = Ids {
            rules: Vec::with_capacity(arms.len()),
            defaults: Vec::with_capacity(arms.len()),
            default_of: Vec::with_capacity(arms.len()),
        };
        for arm in arms {
            let (rules, defaults) = arm.simulator.decides();
            ids.rules.push(
                rules
                    .into_iter()
                    .map(|p| p.into_iter().map(|d| (id(vec![d.without_limit()]), d.limit)).collect())
                    .collect(),
            );
            ids.defaults
                .push(id(defaults.iter().map(Decides::without_limit).collect()));
            ids.default_of.push(defaults);
        }
        ids
    }

    /// Arm `arm`'s key for a job of `keys` ([`matched_keys`]) and effective list `list`
    /// under group `g` (its categorizer group in the high word, its settings group in the
    /// low: arms of other groups never share a key). `reach`: each limit as far as the job's runs reach it —
    /// a retry is granted while a rule's count is below its limit, and the count of a
    /// rule that `n` runs match is below `n` whenever one is decided, so every limit from
    /// `n` on decides the job alike (docs/engines.md; an unset one is `globalMaxRetries`, whose
    /// own check, on the total, comes first). Without `reach`, the limits as they are:
    /// what the runs a Pending job has left depend on.
    pub(super) fn key(&self, arm: usize, g: u64, keys: &[Matched], list: &[usize], reach: bool) -> Key {
        let limit = |l: Option<u32>, runs: u32| {
            let l = l.unwrap_or(u32::MAX);
            u64::from(if reach { l.min(runs) } else { l })
        };
        let mut k = [u64::MAX; KEY_WORDS];
        k[0] = g;
        for (slot, m) in k[1..].iter_mut().zip(keys) {
            *slot = match m.rule {
                Some(r) => match self.rules[arm].get(m.policy).and_then(|rs| rs.get(r)) {
                    Some(&(id, l)) => u64::from(id) << 32 | limit(l, m.runs),
                    None => u64::MAX - 1,
                },
                // The first policy of the list whose default retries takes the job's
                // unmatched failures (docs/engines.md); the defaults' actions say which one it is.
                None => {
                    let taken = list
                        .iter()
                        .filter_map(|&p| self.default_of[arm].get(p))
                        .find(|d| d.action == Action::Retry);
                    let l = taken.map_or(u64::from(u32::MAX), |d| limit(d.limit, m.runs));
                    u64::from(self.defaults[arm]) << 32 | l
                }
            };
        }
        Key(k)
    }
}

/// A hasher for [`Key`]s, which hash as one folded word: that word (SipHash cost more than
/// the replay the lookup saves).
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type BuildKeyHasher = std::hash::BuildHasherDefault<KeyHasher>;

/// The distinct keys of a job's candidates so far, each with the index of its outcome: a
/// list while there are a few, a map past that (a map for every job cost a tenth of the
/// bench's 100-candidate sweep: 1.83 s against 1.65 s CPU).
#[derive(Default)]
pub(super) struct KeyedOutcomes {
    few: Vec<(Key, usize)>,
    many: HashMap<Key, usize, BuildKeyHasher>,
}

impl KeyedOutcomes {
    const FEW: usize = 16;

    pub(super) fn get(&self, k: &Key) -> Option<usize> {
        if self.many.is_empty() {
            self.few.iter().find(|(f, _)| f == k).map(|&(_, j)| j)
        } else {
            self.many.get(k).copied()
        }
    }

    pub(super) fn insert(&mut self, k: Key, j: usize) {
        if self.few.len() < Self::FEW {
            self.few.push((k, j));
            return;
        }
        if self.many.is_empty() {
            self.many.extend(self.few.iter().copied());
        }
        self.many.insert(k, j);
    }
}
