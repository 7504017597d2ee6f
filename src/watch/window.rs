//! The last `--window` of jobs counted, as hourly sums (docs/watch.md "A verdict per
//! candidate"): per hour of the jobs' `last_transition_time`, how many jobs had a failed run
//! and each candidate's comparison against today's policy (`simulate --baseline`'s own
//! [`Comparison`], added job by job), so that a candidate's verdict over the window is judged
//! on the numbers `simulate --baseline` would print for those jobs. One entry an hour, so
//! bounded whatever the jobs seen.
//!
//! The same sums say what an hour is ([`HourlySums::kind_of_hour`], by [`hour_kind`]'s rule),
//! and rank each queue's signatures by their futile retries over the window
//! ([`HourlySums::top_signatures`]), which bounds the `signature` label of the futile-retry
//! counters ([`HourlySums::bound_signatures`]).
//!
//! Owns: [`HourlySums`] (an [`Hour`] is `hour`'s). Must not: judge a candidate (the command
//! judges the sums by suggest's rules) or read a clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::replay::compare::Comparison;
use crate::replay::explained::Explained;
use crate::replay::incidents::Kind;

use super::hour::{add_futile, Hour, HOUR};
use super::hour_kind::{self, Active};
use super::job::SeenJob;
use super::metrics::{Counters, Family, OTHER_SIGNATURE, TOP_SIGNATURES};

/// The hours counted, by their start (microseconds since the Unix epoch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HourlySums {
    hours: BTreeMap<i64, Hour>,
}

impl HourlySums {
    /// Adds the job `seen`, which reached its terminal state at `at`, under each candidate's
    /// name (`names`, in [`SeenJob::shadows`]' order).
    pub fn add(&mut self, at: i64, seen: &SeenJob, names: &[String]) {
        let hour = self.hours.entry(at.div_euclid(HOUR) * HOUR).or_default();
        hour.failed_jobs += u64::from(seen.failed_runs > 0);
        if seen.failed_runs > 0 {
            hour.mix.add(&seen.mix);
            match hour.failed_runs.get_mut(&seen.queue) {
                Some(n) => *n += seen.failed_runs,
                None => {
                    hour.failed_runs.insert(seen.queue.clone(), seen.failed_runs);
                }
            }
        }
        if seen.failed && !seen.retries.is_empty() {
            let of = hour.futile.entry(seen.queue.clone()).or_default();
            for r in &seen.retries {
                add_futile(of, &r.signature, 1);
            }
        }
        for (name, shadow) in names.iter().zip(&seen.shadows) {
            let Some(s) = shadow else { continue };
            let c = hour.candidates.entry(name.clone()).or_default();
            c.add(&s.diff);
            c.recorded.merge(&seen.recorded);
            let e = c.explained.get_or_insert_with(Explained::default);
            e.jobs += 1;
            e.contradicted += u64::from(seen.contradicted);
        }
    }

    /// Adds another window's hours (a page's, into the state's).
    pub fn merge(&mut self, other: HourlySums) {
        for (at, hour) in other.hours {
            let mine = self.hours.entry(at).or_default();
            mine.failed_jobs += hour.failed_jobs;
            mine.incident |= hour.incident;
            mine.mix.merge(hour.mix);
            for (queue, n) in hour.failed_runs {
                *mine.failed_runs.entry(queue).or_default() += n;
            }
            for (name, c) in hour.candidates {
                mine.candidates.entry(name).or_default().merge(&c);
            }
            for (queue, signatures) in hour.futile {
                let of = mine.futile.entry(queue).or_default();
                for (signature, n) in signatures {
                    add_futile(of, &signature, n);
                }
            }
        }
    }

    /// The [`TOP_SIGNATURES`] signatures of `queue` with the most futile retries in the hours
    /// from the one that holds `from` on (ties by their text).
    pub fn top_signatures(&self, queue: &str, from: i64) -> Vec<String> {
        let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
        for hour in self.hours.range(from.div_euclid(HOUR) * HOUR..).map(|(_, h)| h) {
            for (signature, n) in hour.futile.get(queue).into_iter().flatten() {
                *sums.entry(signature).or_default() += n;
            }
        }
        let mut ranked: Vec<(&str, u64)> = sums.into_iter().filter(|(s, _)| *s != OTHER_SIGNATURE).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        ranked
            .into_iter()
            .take(TOP_SIGNATURES)
            .map(|(s, _)| s.to_string())
            .collect()
    }

    /// The futile-retry series of `counters` (a page's, each under its run's signature) with
    /// their `signature` bounded: one of its queue's [`HourlySums::top_signatures`] from `from`
    /// (this window holding the page), or `other`.
    pub fn bound_signatures(&self, counters: &mut Counters, from: i64) {
        let mut tops: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for family in [
            Family::FutileRetries,
            Family::FutileRetryGpuSeconds,
            Family::FutileRetryCpuSeconds,
        ] {
            counters.relabel(family, |labels| {
                // (queue, rule, category, signature)
                let [queue, .., signature] = labels.as_mut_slice() else {
                    return;
                };
                let top = tops
                    .entry(queue.clone())
                    .or_insert_with(|| self.top_signatures(queue, from));
                if !top.contains(signature) {
                    *signature = OTHER_SIGNATURE.to_string();
                }
            });
        }
    }

    /// Adds a page's hours, as [`HourlySums::merge`], and says the failed runs that count as an
    /// incident's, by queue: every failed run of an hour the first time it is found an
    /// incident window ([`HourlySums::kind_of_hour`], judged from `from`), then the page's
    /// own of an hour found so before. So that the count is the runs of the incident hours,
    /// whatever pages the jobs came in.
    pub fn merge_counting_incidents(&mut self, page: HourlySums, from: i64) -> BTreeMap<String, u64> {
        let added: Vec<(i64, BTreeMap<String, u64>)> =
            page.hours.iter().map(|(at, h)| (*at, h.failed_runs.clone())).collect();
        self.merge(page);
        let mut runs: BTreeMap<String, u64> = BTreeMap::new();
        for (at, page_runs) in added {
            let counted_before = self.hours.get(&at).is_some_and(|h| h.incident);
            let to_add = if counted_before {
                page_runs
            } else if self.kind_of_hour(at, from) == Some(Kind::Incident) {
                let hour = self.hours.get_mut(&at).expect("merged above");
                hour.incident = true;
                hour.failed_runs.clone()
            } else {
                continue;
            };
            for (queue, n) in to_add {
                *runs.entry(queue).or_default() += n;
            }
        }
        runs
    }

    /// Forgets the hours that end before `from`.
    pub fn forget_before(&mut self, from: i64) {
        self.hours = self.hours.split_off(&(from.div_euclid(HOUR) * HOUR));
    }

    /// The sums of the hours from the one that holds `from` on: the jobs with a failed run, and
    /// each candidate's comparison (a candidate with no job is absent).
    pub fn since(&self, from: i64) -> (u64, BTreeMap<String, Comparison>) {
        let mut failed = 0;
        let mut sums: BTreeMap<String, Comparison> = BTreeMap::new();
        for hour in self.hours.range(from.div_euclid(HOUR) * HOUR..).map(|(_, h)| h) {
            failed += hour.failed_jobs;
            for (name, c) in &hour.candidates {
                sums.entry(name.clone()).or_default().merge(c);
            }
        }
        (failed, sums)
    }

    /// Keeps the candidates `keep` accepts (the ones still watched).
    pub fn retain_candidates(&mut self, keep: impl Fn(&str) -> bool) {
        for hour in self.hours.values_mut() {
            hour.candidates.retain(|name, _| keep(name));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.hours.is_empty()
    }

    /// What the hour holding `at` is, judged from `from` ([`hour_kind::kind_of_hour`]).
    pub fn kind_of_hour(&self, at: i64, from: i64) -> Option<Kind> {
        hour_kind::kind_of_hour(&self.hours, at, from)
    }

    /// What the hour holding `at` is for the gauges, judged from `from`: an incident once its
    /// failed runs were counted as one ([`HourlySums::merge_counting_incidents`]), else its kind.
    pub fn active(&self, at: i64, from: i64) -> Active {
        hour_kind::active(&self.hours, at, from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::hour::HOUR_SIGNATURES;
    use crate::watch::metrics::Busy;
    use crate::watch::mix::JobMix;

    fn with(failed: &[(i64, u64)]) -> HourlySums {
        let mut w = HourlySums::default();
        for &(hour, n) in failed {
            w.hours.insert(
                hour * HOUR,
                Hour {
                    failed_jobs: n,
                    failed_runs: BTreeMap::from([("ml".to_string(), 2 * n)]),
                    ..Hour::default()
                },
            );
        }
        w
    }

    /// Whether the hour holding `at` is an incident, judged from `from`.
    fn incident(w: &HourlySums, at: i64, from: i64) -> bool {
        w.kind_of_hour(at, from) == Some(Kind::Incident)
    }

    #[test]
    fn an_hour_far_above_the_hours_before_is_an_incident() {
        // 2 jobs an hour for two days, then 20 in hour 48 (the third UTC day: against the
        // same hour of days 0 and 1): P(X ≥ 20 | λ = 2) ≈ 5.5e-12, far below 0.01 / 49. No
        // mix fed: it cannot be told, and no burst or surge is found.
        let mut hours: Vec<(i64, u64)> = (0..48).map(|h| (h, 2)).collect();
        hours.push((48, 20));
        let w = with(&hours);
        assert!(incident(&w, 48 * HOUR + 5, 0));
        // The hour before: 2 is the rate itself.
        assert!(!incident(&w, 47 * HOUR, 0));
        // Judged against fewer than 24 hours: never.
        assert!(!incident(&w, 48 * HOUR, 30 * HOUR));
    }

    #[test]
    fn an_incident_hour_counts_its_runs_whatever_pages_they_came_in() {
        let usual: Vec<(i64, u64)> = (0..48).map(|h| (h, 2)).collect();
        // The outage's 20 jobs (40 failed runs) in one page, or in pages of 3, 7 and 10
        // jobs: the hour is no incident after the first page of 3, and is after the next.
        let mut whole = with(&usual);
        let page = with(&[(48, 20)]);
        assert_eq!(
            whole.merge_counting_incidents(page, 0),
            BTreeMap::from([("ml".into(), 40)])
        );
        let mut parts = with(&usual);
        let mut counted = 0;
        for n in [3, 7, 10] {
            counted += parts
                .merge_counting_incidents(with(&[(48, n)]), 0)
                .get("ml")
                .copied()
                .unwrap_or(0);
        }
        assert_eq!(counted, 40);
        // A usual hour counts nothing.
        assert!(parts.merge_counting_incidents(with(&[(49, 2)]), 0).is_empty());
    }

    #[test]
    fn a_queue_s_twenty_most_futile_signatures_keep_their_own_label() {
        let mut w = HourlySums::default();
        // 25 signatures on `ml`: `s00` with 25 futile retries, `s01` 24, … `s24` 1; an hour
        // before the window counts for nothing.
        for (k, hour) in [(0, 0), (1, 5)] {
            let h = w.hours.entry(hour * HOUR).or_default();
            let of = h.futile.entry("ml".into()).or_default();
            for i in 0..25u64 {
                add_futile(of, &format!("s{i:02}"), (25 - i) * (1 + k * 100));
            }
        }
        let top = w.top_signatures("ml", 5 * HOUR);
        assert_eq!(top.len(), TOP_SIGNATURES);
        assert_eq!((top[0].as_str(), top[19].as_str()), ("s00", "s19"));
        assert!(w.top_signatures("batch", 0).is_empty());
        let mut c = Counters::default();
        for s in ["s00", "s19", "s20", "s24"] {
            c.add(Family::FutileRetries, &["ml", "p/0", "none", s], 1);
            c.add(Family::FutileRetryGpuSeconds, &["ml", "p/0", "none", s], 10);
        }
        c.add(Family::Retries, &["ml", "p/0"], 4);
        w.bound_signatures(&mut c, 5 * HOUR);
        let futile = |s: &str| c.get(Family::FutileRetries, &["ml", "p/0", "none", s]);
        assert_eq!(
            (futile("s00"), futile("s19"), futile("s20"), futile("other")),
            (1, 1, 0, 2)
        );
        assert_eq!(
            c.get(Family::FutileRetryGpuSeconds, &["ml", "p/0", "none", "other"]),
            20
        );
        assert_eq!(c.get(Family::Retries, &["ml", "p/0"]), 4);
        // An hour keeps HOUR_SIGNATURES signatures of a queue; the rest are `other`.
        let mut of = BTreeMap::new();
        for i in 0..HOUR_SIGNATURES + 3 {
            add_futile(&mut of, &format!("m{i}"), 1);
        }
        assert_eq!(of.len(), HOUR_SIGNATURES + 1);
        assert_eq!(of[OTHER_SIGNATURE], 3);
    }

    #[test]
    fn fewer_than_five_jobs_is_never_an_incident() {
        // A quiet day and more: 4 jobs against λ = 4/31 are unusual, and still no incident;
        // 5 against 5/31 (P ≈ 9e-7 < 0.01/31) are.
        let w = with(&[(30, 4)]);
        assert!(!incident(&w, 30 * HOUR, 0));
        let w = with(&[(30, 5)]);
        assert!(incident(&w, 30 * HOUR, 0));
    }

    #[test]
    fn an_hour_the_rate_explains_is_not_an_incident() {
        // Two UTC days, the mean of all: λ = 256/25, P(X ≥ 16) ≈ 0.05, not below 0.01 / 25.
        let mut hours: Vec<(i64, u64)> = (0..24).map(|h| (h, 10)).collect();
        hours.push((24, 16));
        assert!(!incident(&with(&hours), 24 * HOUR, 0));
    }

    /// Three UTC days of 2 failing jobs an hour (`A` and `B`, on nodes `n0`…`n9` in turn, each
    /// hour's pair a job set of its own), then hour 72 with `last`'s jobs: (job set, signature,
    /// node).
    fn days_then(last: &[(String, &str, String)]) -> HourlySums {
        let mut w = HourlySums::default();
        let mut add = |hour: i64, set: &str, signature: &str, node: &str| {
            let h = w.hours.entry(hour * HOUR).or_default();
            h.failed_jobs += 1;
            h.mix.add(&JobMix {
                set: Some(format!("ml\n{set}")),
                signatures: vec![signature.to_string()],
                nodes: vec![node.to_string()],
            });
        };
        for hour in 0..72 {
            for (k, signature) in ["A", "B"].into_iter().enumerate() {
                add(
                    hour,
                    &format!("h{hour}"),
                    signature,
                    &format!("n{}", (2 * hour + k as i64) % 10),
                );
            }
        }
        for (set, signature, node) in last {
            add(72, set, signature, node);
        }
        w
    }

    #[test]
    fn an_unusual_hour_is_told_by_its_mix_as_suggest_tells_a_window() {
        // 20 jobs where the same hour of the other days had 2: unusual (P(X ≥ 20 | 2) ≈ 5.5e-12).
        let usual: Vec<(String, &str, String)> = (0..20)
            .map(|i| (format!("s{i}"), ["A", "B"][i % 2], format!("n{}", i % 10)))
            .collect();
        // Half A and half B, 2 a node: P(Y ≥ 10 | Bin(20, 82/164)) = 0.59 and P(Y ≥ 2 |
        // Bin(20, 16.4/164)) ≈ 0.6, neither under 0.01/73.
        let w = days_then(&usual);
        assert_eq!(
            w.kind_of_hour(72 * HOUR, 0),
            Some(Kind::Surge {
                jobs: 20,
                expected: 2.0
            })
        );
        assert_eq!(w.active(72 * HOUR + 1, 0), Active::Busy(Busy::Surge));
        // All of a new signature C: (20/164)^20, an incident.
        let new: Vec<(String, &str, String)> = usual.iter().map(|(s, _, n)| (s.clone(), "C", n.clone())).collect();
        assert_eq!(days_then(&new).kind_of_hour(72 * HOUR, 0), Some(Kind::Incident));
        // All on node n3: an incident too.
        let node: Vec<(String, &str, String)> = usual.iter().map(|(s, g, _)| (s.clone(), *g, "n3".into())).collect();
        assert_eq!(days_then(&node).active(72 * HOUR, 0), Active::Incident);
        // 16 of them of `sweep-17`, all C: without them 4 jobs, under 5: its burst.
        let mut burst = new.clone();
        for job in &mut burst[..16] {
            job.0 = "sweep-17".into();
        }
        assert_eq!(
            days_then(&burst).kind_of_hour(72 * HOUR, 0),
            Some(Kind::Burst {
                queue: "ml".into(),
                job_set: "sweep-17".into(),
                jobs: 16
            })
        );
        assert_eq!(days_then(&burst).active(72 * HOUR, 0), Active::Busy(Busy::Burst));
        // 10 of `sweep-17`: the other 10 still unusual against 2, an incident.
        for job in &mut burst[10..16] {
            job.0 = "other".into();
        }
        assert_eq!(days_then(&burst).kind_of_hour(72 * HOUR, 0), Some(Kind::Incident));
        // An hour already counted as an incident stays one for the gauges.
        let mut w = days_then(&usual);
        w.hours.get_mut(&(72 * HOUR)).unwrap().incident = true;
        assert_eq!(w.active(72 * HOUR, 0), Active::Incident);
        // A surge counts no incident run.
        let mut w = days_then(&[]);
        let mut page = HourlySums::default();
        for (set, signature, node) in &usual {
            let h = page.hours.entry(72 * HOUR).or_default();
            h.failed_jobs += 1;
            *h.failed_runs.entry("ml".into()).or_default() += 1;
            h.mix.add(&JobMix {
                set: Some(format!("ml\n{set}")),
                signatures: vec![signature.to_string()],
                nodes: vec![node.to_string()],
            });
        }
        assert!(w.merge_counting_incidents(page, 0).is_empty());
    }
}
