//! A partial's totals seen as numbers (docs/past-one-machine.md, "The partial file"): what a
//! shard's totals claim must be true of any shard's, and the totals of every partial must
//! add up without overflowing, before `merge` adds them.
//!
//! A partial is sealed by a SHA-256 anyone can compute again, so a file edited and resealed
//! reaches here: its numbers are input. [`Counts`] reads a partial's totals (the JSON of
//! its end, whatever the command) and finds successes counted above their trials, or a
//! comparison's changed jobs above its jobs (which the reports subtract); [`Sums`]
//! adds up, for each field name, every number of that name in every partial, with checked
//! additions: each total the merge makes is a sum of numbers of one name (a class's counts,
//! moved to the rest past the classes kept, keep their names), so when these sums fit their
//! type, no addition of the merge can overflow, and the merge's own additions stay as fast
//! as a shard's. A sum may count more than one total holds (every candidate's `jobs`
//! together), so a partial is refused only when its numbers come within a factor of the
//! number of candidates of the type's limit: no history of jobs comes near.
//!
//! Owns: those checks and their words (after the file's name). Must not: decode totals into
//! the commands' types or decide what they mean (that is `run` and `tune::sweep`).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Fields that are not counts: never added (a position, an exit code, the span of the
/// failed runs' times and the changes of a window's count, `replay::incidents::Detector`).
const NOT_COUNTS: [&str; 4] = ["first_not_submitted", "Exit", "span", "deltas"];

/// Fields kept in 128 bits (sums of nanoseconds × thousandths of a GPU or CPU, which a day of
/// a large cluster takes past 64 bits: a summary's `gpu` and `cpu`, a comparison's added and
/// removed device time, suggest's `gpu_milli` and `cpu_milli`, an estimate's `next_run_ns`);
/// every other count is a `u64`. Sums of durations are written as durations (`5124h…`), not
/// counted here. Test `every_128_bit_sum_is_wide`.
const WIDE: [&str; 9] = [
    "next_run_ns",
    "gpu_milli",
    "cpu_milli",
    "gpu",
    "cpu",
    "gpu_added",
    "gpu_removed",
    "cpu_added",
    "cpu_removed",
];

fn limit(name: &str) -> u128 {
    if WIDE.contains(&name) {
        u128::MAX
    } else {
        u128::from(u64::MAX)
    }
}

/// One partial's totals: for each field name, the sum of its numbers (saturated: a sum past
/// 128 bits is past every limit), and the top-level arrays' lengths (a sweep's `arms`).
/// Read as a partial's totals are (`Partial::totals`).
#[derive(Debug, Default)]
pub struct Counts {
    sums: BTreeMap<String, u128>,
    lengths: BTreeMap<String, usize>,
    /// The first impossible number: successes above their trials, changed jobs above jobs.
    wrong: Option<String>,
}

impl<'de> serde::Deserialize<'de> for Counts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Counts, D::Error> {
        let mut walk = Walk {
            counts: Counts::default(),
            path: Vec::new(),
        };
        Node {
            walk: &mut walk,
            name: None,
        }
        .deserialize(d)?;
        Ok(walk.counts)
    }
}

impl Counts {
    /// `Err` names the first impossible number: successes above their trials, changed jobs
    /// above jobs (at its path, such as `trials.all.train[0]`).
    pub fn check(&self) -> Result<(), String> {
        match &self.wrong {
            Some(wrong) => Err(wrong.clone()),
            None => Ok(()),
        }
    }

    /// The length of the top-level array `name`, if the totals have one.
    pub fn length(&self, name: &str) -> Option<usize> {
        self.lengths.get(name).copied()
    }
}

/// Every partial's [`Counts`] added up so far, and for each field the partial that gave the
/// most to it (so that a sum past its type names the partial holding the impossible number).
#[derive(Debug, Default)]
pub struct Sums {
    sums: BTreeMap<String, u128>,
    /// Per field: the largest count one partial gave, and that partial (its place).
    largest: BTreeMap<String, (u128, usize)>,
}

/// A sum past its type's limit: `why` is said of the partial at `partial` (the one whose own
/// count of the field is the largest: an earlier partial's, or `None`, the one being added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    pub partial: Option<usize>,
    pub why: String,
}

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl Sums {
    /// Adds the counts of the partial at `place`; `Err` (nothing added) names the field whose
    /// sum would pass its type's limit, and which partial holds the largest part of it.
    pub fn add(&mut self, counts: &Counts, place: usize) -> Result<(), Overflow> {
        let this = |why| Overflow { partial: None, why };
        for (name, &n) in &counts.sums {
            let limit = limit(name);
            if n > limit {
                return Err(this(format!(
                    "is damaged: its totals' `{name}` add up to more than {limit}, more than a count can hold"
                )));
            }
            let before = self.sums.get(name).copied().unwrap_or(0);
            if before.checked_add(n).is_none_or(|s| s > limit) {
                return Err(match self.largest.get(name) {
                    // An earlier partial holds more of it than this one: the impossible number
                    // is there, not here.
                    Some(&(most, at)) if most > n => Overflow {
                        partial: Some(at),
                        why: format!(
                            "is damaged: its totals' `{name}` ({most} in all) and the other partials' ({}) add up to more than {limit}, more than a count can hold",
                            before - most + n
                        ),
                    },
                    _ => this(format!(
                        "is damaged: its totals' `{name}` ({n} in all) and the partials' before it ({before}) add up to more than {limit}, more than a count can hold"
                    )),
                });
            }
        }
        for (name, &n) in &counts.sums {
            *self.sums.entry(name.clone()).or_default() += n;
            let most = self.largest.entry(name.clone()).or_insert((n, place));
            if n > most.0 {
                *most = (n, place);
            }
        }
        Ok(())
    }
}

struct Walk {
    counts: Counts,
    /// Where the walk is: object keys and array indices.
    path: Vec<String>,
}

impl Walk {
    fn count(&mut self, name: Option<&str>, n: u128) {
        let Some(name) = name.filter(|n| !NOT_COUNTS.contains(n)) else {
            return;
        };
        let sum = self.counts.sums.entry(name.to_string()).or_default();
        *sum = sum.saturating_add(n);
    }

    fn path(&self) -> String {
        let mut out = String::new();
        for p in &self.path {
            if !p.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(p);
        }
        out
    }
}

/// A value of the totals, and the name of the field it is in (an array's items are in the
/// array's field).
struct Node<'a> {
    walk: &'a mut Walk,
    name: Option<&'a str>,
}

/// What a value was, as far as its parent needs: a whole number, or anything else.
enum Value {
    Count(u128),
    Other,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        self.walk.count(self.name, u128::from(n));
        Ok(Value::Count(u128::from(n)))
    }

    fn visit_u128<E>(self, n: u128) -> Result<Value, E> {
        self.walk.count(self.name, n);
        Ok(Value::Count(n))
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Value, E> {
        // Negative: not a count (the totals' types refuse it where one is expected).
        match u64::try_from(n) {
            Ok(n) => self.visit_u64(n),
            Err(_) => Ok(Value::Other),
        }
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        // serde_json reads a whole number past 64 bits as a float: a 128-bit count, or one
        // its type refuses. Counted as at least what it is (the cast saturates).
        if n >= 0.0 && n.fract() == 0.0 {
            self.walk.count(self.name, n as u128);
            return Ok(Value::Count(n as u128));
        }
        Ok(Value::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Other)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Other)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Other)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let top = self.walk.path.len() == 1;
        let mut i = 0usize;
        loop {
            self.walk.path.push(format!("[{i}]"));
            let item = seq.next_element_seed(Node {
                walk: &mut *self.walk,
                name: self.name,
            });
            self.walk.path.pop();
            if item?.is_none() {
                break;
            }
            i += 1;
        }
        if top {
            if let Some(name) = self.walk.path.last().cloned() {
                self.walk.counts.lengths.insert(name, i);
            }
        }
        Ok(Value::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let (mut trials, mut successes, mut jobs, mut changed) = (None, None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            self.walk.path.push(key);
            let key = self.walk.path.last().cloned().unwrap_or_default();
            let value = map.next_value_seed(Node {
                walk: &mut *self.walk,
                name: Some(&key),
            });
            self.walk.path.pop();
            if let Value::Count(n) = value? {
                match key.as_str() {
                    "trials" => trials = Some(n),
                    "successes" => successes = Some(n),
                    "jobs" => jobs = Some(n),
                    "changed" => changed = Some(n),
                    _ => {}
                }
            }
        }
        if self.walk.counts.wrong.is_some() {
            return Ok(Value::Other);
        }
        if let (Some(t), Some(s)) = (trials, successes) {
            if s > t {
                let at = self.walk.path();
                self.walk.counts.wrong = Some(format!(
                    "is damaged: its totals' `{at}` count {s} successes in {t} trials (successes are trials that succeeded)"
                ));
            }
        }
        // A comparison's changed jobs are among its jobs (the reports print the rest as
        // unchanged).
        if let (Some(j), Some(c)) = (jobs, changed) {
            if c > j {
                let at = self.walk.path();
                self.walk.counts.wrong = Some(format!(
                    "is damaged: its totals' `{at}` count {c} changed jobs of {j} jobs (changed jobs are among the jobs)"
                ));
            }
        }
        Ok(Value::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Counts {
        fn of(json: &[u8]) -> Result<Counts, String> {
            let c: Counts = serde_json::from_slice(json).map_err(|e| e.to_string())?;
            c.check()?;
            Ok(c)
        }
    }

    #[test]
    fn successes_above_trials_are_named_by_their_path() {
        let json = br#"{"trials":{"all":{"train":[{"trials":3,"successes":2},{"trials":1,"successes":4}]}}}"#;
        assert_eq!(
            Counts::of(json).unwrap_err(),
            "is damaged: its totals' `trials.all.train[1]` count 4 successes in 1 trials (successes are trials that succeeded)"
        );
    }

    #[test]
    fn more_changed_jobs_than_jobs_are_named_by_their_path() {
        let json = br#"{"arms":[{"comparison":{"jobs":3,"changed":3}},{"comparison":{"jobs":3,"changed":4}}]}"#;
        assert_eq!(
            Counts::of(json).unwrap_err(),
            "is damaged: its totals' `arms[1].comparison` count 4 changed jobs of 3 jobs (changed jobs are among the jobs)"
        );
    }

    #[test]
    fn sums_are_by_field_name_and_refused_past_the_type() {
        let a = Counts::of(br#"{"jobs":5,"arms":[{"jobs":5},{"jobs":5}],"next_run_ns":18446744073709551615}"#).unwrap();
        assert_eq!(a.length("arms"), Some(2));
        assert_eq!(a.sums["jobs"], 15);
        let mut sums = Sums::default();
        sums.add(&a, 0).unwrap();
        // 128-bit fields take what 64 bits do not.
        sums.add(&a, 1).unwrap();
        let big = Counts::of(format!(r#"{{"jobs":{}}}"#, u64::MAX - 20).as_bytes()).unwrap();
        assert_eq!(
            sums.add(&big, 2).unwrap_err().to_string(),
            format!(
                "is damaged: its totals' `jobs` ({} in all) and the partials' before it (30) add up to more than {}, more than a count can hold",
                u64::MAX - 20,
                u64::MAX
            )
        );
        // Past the type within one partial (a sum over its candidates).
        let two = Counts::of(format!(r#"{{"arms":[{{"jobs":{0}}},{{"jobs":{0}}}]}}"#, u64::MAX).as_bytes()).unwrap();
        assert_eq!(
            Sums::default().add(&two, 0).unwrap_err().to_string(),
            format!(
                "is damaged: its totals' `jobs` add up to more than {}, more than a count can hold",
                u64::MAX
            )
        );
        // Refused whole: the sums are what they were.
        assert_eq!(sums.sums["jobs"], 30);
        // Not counts: positions and exit codes are never added.
        let c = Counts::of(br#"{"first_not_submitted":[[18446744073709551615,1],"j"],"Exit":-1}"#).unwrap();
        assert!(c.sums.is_empty());
    }

    /// Every 128-bit sum a shard's totals hold passes 64 bits and is still added: a summary's
    /// and a comparison's device time, written as the partial writes them.
    #[test]
    fn every_128_bit_sum_is_wide() {
        use crate::replay::compare::Comparison;
        use crate::replay::summary::Summary;
        let past = u128::from(u64::MAX) + 1;
        let mut summary = Summary::default();
        summary.gpu = past;
        summary.cpu = past;
        let comparison = Comparison {
            gpu_added: past,
            gpu_removed: past,
            cpu_added: past,
            cpu_removed: past,
            ..Comparison::default()
        };
        for totals in [
            serde_json::to_vec(&summary).unwrap(),
            serde_json::to_vec(&comparison).unwrap(),
        ] {
            let counts = Counts::of(&totals).unwrap();
            let mut sums = Sums::default();
            sums.add(&counts, 0).unwrap();
            sums.add(&counts, 1).unwrap();
        }
    }
}
