//! The last `--window` of jobs counted, as hourly sums (docs/watch.md "A verdict per
//! candidate"): per hour of the jobs' `last_transition_time`, how many jobs had a failed run
//! and each candidate's comparison against today's policy (`simulate --baseline`'s own
//! [`Comparison`], added job by job), so that a candidate's verdict over the window is judged
//! on the numbers `simulate --baseline` would print for those jobs. One entry an hour, so
//! bounded whatever the jobs seen.
//!
//! The same sums say what an hour is ([`Window::kind_of_hour`]): suggest's rule,
//! docs/reference/suggest.md "Incidents", on hours instead of 10-minute steps, by
//! `replay::incidents::kinds`' own functions: the expected count by hour of day once the
//! window's hours fall on 3 UTC days, then an unusual hour's kind by its failing jobs' mix
//! (`mix`: by job set, signature and node, bounded) against the window's.
//!
//! The same sums rank each queue's signatures by their futile retries over the window
//! ([`Window::top_signatures`]), which bounds the `signature` label of the futile-retry
//! counters ([`Window::bound_signatures`]).
//!
//! Owns: [`Window`] and [`Hour`]. Must not: judge a candidate (the command judges the sums by
//! suggest's rules) or read a clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::replay::compare::Comparison;
use crate::replay::explained::Explained;
use crate::replay::incidents::kinds::{self, Expected, Grid, Kind, Top, Tops};

use super::job::Seen;
use super::metrics::{Busy, Counters, Family, OTHER_SIGNATURE, TOP_SIGNATURES};
use super::mix::{HourMix, Tally};

/// An hour, in microseconds.
pub const HOUR: i64 = 3_600 * 1_000_000;

/// The hours counted before an hour that it is judged against, at least: a watch that
/// started an hour ago has no rate to call an hour unusual against.
pub const INCIDENT_HOURS_BEFORE: i64 = 24;

/// One hour's sums.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hour {
    /// Jobs counted whose record holds a failed run (a verdict's sample).
    pub failed_jobs: u64,
    /// Each candidate's comparison with today's policy, by its name.
    pub candidates: BTreeMap<String, Comparison>,
    /// The failed runs of the jobs counted, by queue.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_runs: BTreeMap<String, u64>,
    /// The hour was found an incident window, and its failed runs counted as the incident's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incident: bool,
    /// The futile retries of the jobs counted, by queue, then by the signature of the run
    /// retried ([`HOUR_SIGNATURES`] of them at most, the rest under `other`): which of a queue's
    /// signatures have a `signature` label of their own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub futile: BTreeMap<String, BTreeMap<String, u64>>,
    /// The jobs with a failed run by job set, signature and node: what tells an unusual hour's
    /// kind.
    #[serde(default, skip_serializing_if = "HourMix::is_empty")]
    pub mix: HourMix,
}

/// What the hour of the last job counted is, as the gauges say it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Active {
    /// Not unusual (or not judged yet).
    #[default]
    Usual,
    /// An incident window.
    Incident,
    /// Unusual, and no incident: a job set's burst or a surge of the usual mix.
    Busy(Busy),
}

impl Active {
    pub fn is_incident(self) -> bool {
        self == Active::Incident
    }

    /// The kind of a busy hour.
    pub fn busy(self) -> Option<Busy> {
        match self {
            Active::Busy(b) => Some(b),
            _ => None,
        }
    }
}

/// The signatures an hour keeps for a queue, at most: the hour's sums stay bounded whatever
/// the messages.
pub const HOUR_SIGNATURES: usize = 200;

/// Adds `n` futile retries of `signature` to a queue's signatures of an hour.
fn add_futile(of: &mut BTreeMap<String, u64>, signature: &str, n: u64) {
    let key = match of.contains_key(signature) || of.len() < HOUR_SIGNATURES {
        true => signature,
        false => OTHER_SIGNATURE,
    };
    *of.entry(key.to_string()).or_default() += n;
}

/// The hours counted, by their start (microseconds since the Unix epoch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Window {
    hours: BTreeMap<i64, Hour>,
}

impl Window {
    /// Adds the job `seen`, which reached its terminal state at `at`, under each candidate's
    /// name (`names`, in [`Seen::shadows`]' order).
    pub fn add(&mut self, at: i64, seen: &Seen, names: &[String]) {
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
    pub fn merge(&mut self, other: Window) {
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
    /// their `signature` bounded: one of its queue's [`Window::top_signatures`] from `from`
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

    /// Adds a page's hours, as [`Window::merge`], and says the failed runs that count as an
    /// incident's, by queue: every failed run of an hour the first time it is found an
    /// incident window ([`Window::kind_of_hour`], judged from `from`), then the page's
    /// own of an hour found so before. So that the count is the runs of the incident hours,
    /// whatever pages the jobs came in.
    pub fn merge_counting_incidents(&mut self, page: Window, from: i64) -> BTreeMap<String, u64> {
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

    /// What the hour holding `at` is, by suggest's rule (docs/reference/suggest.md
    /// "Incidents") over the hours from the one holding `from` up to it (an hour with no job
    /// counts 0): `k`, its jobs with a failed run, is unusual when `k ≥ 5` and
    /// `P(X ≥ k) < 0.01 / B`, `X ~ Poisson(λ)`, `B` the hours judged, `λ` the mean `k` of the
    /// same UTC hour of day on the other days once the hours fall on 3 UTC days (else, or with
    /// none, the mean of all); an unusual hour's kind is told by its mix against theirs
    /// ([`kinds::kind_of`]). `None`: not unusual, or fewer than [`INCIDENT_HOURS_BEFORE`] hours
    /// are counted before it.
    pub fn kind_of_hour(&self, at: i64, from: i64) -> Option<Kind> {
        let (hour, first) = (at.div_euclid(HOUR), from.div_euclid(HOUR));
        if hour - first < INCIDENT_HOURS_BEFORE {
            return None;
        }
        let this = self.hours.get(&(hour * HOUR))?;
        let span: Vec<&Hour> = self.hours.range(first * HOUR..=hour * HOUR).map(|(_, h)| h).collect();
        let segments: Vec<(i64, i64, u64)> = self
            .hours
            .range(first * HOUR..=hour * HOUR)
            .filter(|(_, h)| h.failed_jobs > 0)
            .map(|(at, h)| (at.div_euclid(HOUR), at.div_euclid(HOUR), h.failed_jobs))
            .collect();
        let tests = (hour - first + 1) as u64;
        let expected = Expected::of(Grid::HOURS, &segments, first, hour);
        let unusual = kinds::unusual_at(hour, this.failed_jobs, &expected, tests)?;
        let jobs: u64 = span.iter().map(|h| h.failed_jobs).sum();
        // The hour's top name of a part, and its share of the span's failing jobs.
        let share = |part: fn(&HourMix) -> &Tally| {
            let ((), name, n) = kinds::top(part(&this.mix).named().map(|(k, n)| ((), k, n)))?;
            let of_span: u64 = span.iter().map(|h| part(&h.mix).get(name)).sum();
            Some(Top {
                jobs: n,
                share: of_span as f64 / jobs.max(1) as f64,
            })
        };
        let tops = Tops {
            set: kinds::top(this.mix.sets.named().map(|(k, n)| ((), k, n))).map(|((), name, n)| {
                let (queue, job_set) = kinds::split_set(name);
                (queue, job_set, n)
            }),
            signature: share(|m| &m.signatures),
            node: share(|m| &m.nodes),
            can_tell: can_tell(&span),
        };
        Some(kinds::kind_of(&unusual, tests, &tops))
    }

    /// What the hour holding `at` is for the gauges, judged from `from`: an incident once its
    /// failed runs were counted as one ([`Window::merge_counting_incidents`]), else its kind.
    pub fn active(&self, at: i64, from: i64) -> Active {
        if self
            .hours
            .get(&(at.div_euclid(HOUR) * HOUR))
            .is_some_and(|h| h.incident)
        {
            return Active::Incident;
        }
        match self.kind_of_hour(at, from) {
            None => Active::Usual,
            Some(Kind::Incident) => Active::Incident,
            Some(Kind::Burst { .. }) => Active::Busy(Busy::Burst),
            Some(Kind::Surge { .. }) => Active::Busy(Busy::Surge),
        }
    }
}

/// Whether the mix of `hours` can be told: their failed runs hold more than one signature, or
/// a node (`kinds::Tops::can_tell`).
fn can_tell(hours: &[&Hour]) -> bool {
    let mut one: Option<&str> = None;
    for h in hours {
        if !h.mix.nodes.is_empty() || h.mix.signatures.other() > 0 {
            return true;
        }
        for (name, _) in h.mix.signatures.named() {
            match one {
                Some(o) if o != name => return true,
                _ => one = Some(name),
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::mix::JobMix;

    fn with(failed: &[(i64, u64)]) -> Window {
        let mut w = Window::default();
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
    fn incident(w: &Window, at: i64, from: i64) -> bool {
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
        let mut w = Window::default();
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
    fn days_then(last: &[(String, &str, String)]) -> Window {
        let mut w = Window::default();
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
        let mut page = Window::default();
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
