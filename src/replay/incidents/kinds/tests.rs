//! The expected count by hour of day, the kinds and the merging on cases computed by hand,
//! and the detector's unusual windows against a test-side implementation of the rule that
//! counts every window from the jobs' times directly.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use super::super::{poisson_tail, Detector, Rule, MINUTE};
use super::*;

/// Day `d` after 2026-11-16 at `hh:mm`, in nanoseconds.
fn at(d: i64, hm: &str) -> i64 {
    Timestamp::parse(&format!("2026-11-16T{hm}:00Z")).unwrap().0 + d * 1440 * MINUTE
}

/// The window start (steps) of day `d` at `hh:mm`.
fn start(d: i64, hm: &str) -> i64 {
    at(d, hm) / STEP
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-300)
}

#[test]
fn the_binomial_tail_matches_the_sums_by_hand() {
    // Σ_{i≥10} C(20, i) / 2^20, the lower side taken from 1.
    assert!(close(binomial_tail(10, 20, 0.5), 0.588_098_526_000_976_6));
    // 1 − 0.9^20 − 20 · 0.1 · 0.9^19.
    assert!(close(binomial_tail(2, 20, 0.1), 0.608_253_001_874_832_1));
    // Every one of 20: (1/11)^20.
    assert!(close(binomial_tail(20, 20, 1.0 / 11.0), 1.486_436_280_241_437_7e-21));
    assert!(close(binomial_tail(20, 40, 0.25), 5.724_311_071_761_385e-4));
    assert_eq!(binomial_tail(0, 5, 0.1), 1.0);
    assert_eq!(binomial_tail(6, 5, 0.9), 0.0);
    assert_eq!(binomial_tail(3, 5, 1.0), 1.0);
}

#[test]
fn the_expected_count_is_the_same_hours_mean_on_the_other_days() {
    // Three whole days; at 12:00–12:50 (one hour's 6 starts) 2 jobs a window on day 0, 4 on
    // day 1, 30 on day 2; nothing else.
    let (first, last) = (start(0, "00:00"), start(2, "23:50"));
    let noon = |d| (start(d, "12:00"), start(d, "12:50"));
    let segments = [
        (noon(0).0, noon(0).1, 2),
        (noon(1).0, noon(1).1, 4),
        (noon(2).0, noon(2).1, 30),
    ];
    let e = Expected::of(Grid::TEN_MINUTES, &segments, first, last);
    assert!(e.by_hour());
    // Mean of all: (12 + 24 + 180) / 432.
    assert!(close(e.mean, 0.5));
    // Day 2's noon against days 0 and 1: (12 + 24) / 12; day 0's against 1 and 2.
    assert!(close(e.at(start(2, "12:30")), 3.0));
    assert!(close(e.at(start(0, "12:00")), 17.0));
    assert!(close(e.at(start(1, "12:50")), 16.0));
    // Another hour: nothing on any other day.
    assert_eq!(e.at(start(2, "13:00")), 0.0);
    // Two days: the mean of all.
    let two = Expected::of(Grid::TEN_MINUTES, &segments[..2], first, start(1, "23:50"));
    assert!(!two.by_hour());
    assert!(close(two.at(start(1, "12:00")), 36.0 / 288.0));
}

#[test]
fn on_a_grid_of_hours_the_expected_count_is_the_same_hours_mean_on_the_other_days() {
    // watch's hourly sums: hours 0..72 (3 UTC days), 2 jobs at noon on day 0, 4 on day 1, 30
    // on day 2.
    let segments = [(12, 12, 2), (36, 36, 4), (60, 60, 30)];
    let e = Expected::of(Grid::HOURS, &segments, 0, 71);
    assert!(e.by_hour());
    assert!(close(e.mean, 36.0 / 72.0));
    assert!(close(e.at(60), 3.0));
    assert!(close(e.at(12), 17.0));
    assert_eq!(e.at(61), 0.0);
    assert_eq!(starts_at_hour(Grid::HOURS, 0, 71, 12), 3);
    // Two days (hours 0..48): the mean of all.
    let two = Expected::of(Grid::HOURS, &segments[..2], 0, 47);
    assert!(!two.by_hour());
    assert!(close(two.at(36), 6.0 / 48.0));
}

#[test]
fn an_hour_no_other_day_has_is_held_to_the_mean() {
    // From day 0 at 23:00 to day 2 at 00:50: 3 UTC days, but 01:00 falls on day 1 alone.
    let (first, last) = (start(0, "23:00"), start(2, "00:50"));
    let segments = [(start(1, "01:00"), start(1, "01:50"), 10)];
    let e = Expected::of(Grid::TEN_MINUTES, &segments, first, last);
    assert!(e.by_hour());
    let windows = (last - first + 1) as f64;
    assert!(close(e.at(start(1, "01:20")), 60.0 / windows));
    // 23:00 is on days 0 and 1: day 0's against day 1's, 0.
    assert_eq!(e.at(start(0, "23:10")), 0.0);
    assert_eq!(starts_at_hour(Grid::TEN_MINUTES, first, last, 23), 12);
    assert_eq!(starts_at_hour(Grid::TEN_MINUTES, first, last, 0), 12);
    assert_eq!(starts_at_hour(Grid::TEN_MINUTES, first, last, 1), 6);
}

/// Jobs' failed-run times into a detector.
fn detector(jobs: &[Vec<i64>]) -> Detector {
    let mut d = Detector::default();
    for times in jobs {
        d.add_job(times, 0);
    }
    d
}

/// A week whose days rise and fall alike: in each 10-minute slot of a day, `copies` ×
/// `2 + 1.5 (1 − cos(2π slot/144))` jobs (rounded), each failing once, spread over the slot
/// (2 a slot at midnight per copy, 5 at noon).
fn busy_week(copies: usize) -> Vec<Vec<i64>> {
    let mut jobs = Vec::new();
    for d in 0..7 {
        for slot in 0..144i64 {
            let f = 2.0 + 1.5 * (1.0 - (2.0 * std::f64::consts::PI * slot as f64 / 144.0).cos());
            let n = (copies as f64 * f).round() as i64;
            let t = at(d, "00:00") + slot * STEP;
            jobs.extend((0..n).map(|i| vec![t + i * STEP / n]));
        }
    }
    jobs
}

#[test]
fn a_daily_peak_however_busy_is_no_unusual_window() {
    for copies in [10, 30] {
        let d = detector(&busy_week(copies));
        let (unusual, test) = d.unusual(Rule::default());
        assert!(test.by_hour);
        assert!(unusual.is_empty(), "{copies}×: {unusual:?}");
        // Held to the mean of all windows, every day's peak is unusual (the rule before the
        // hour of day).
        let (flat, _) = d.unusual(Rule {
            lambda: Some(test.mean),
            tests: None,
        });
        let days: std::collections::BTreeSet<i64> = flat.iter().map(|u| u.start.div_euclid(144)).collect();
        assert_eq!(days.len(), 7, "{copies}×");
    }
}

#[test]
fn an_outage_at_night_stands_out_of_a_busy_week() {
    let mut jobs = busy_week(10);
    // 200 jobs at day 3's 02:00, where the other days have about 130 an hour.
    jobs.extend((0..200).map(|_| vec![at(3, "02:00")]));
    let (unusual, test) = detector(&jobs).unusual(Rule::default());
    let starts: Vec<i64> = unusual.iter().map(|u| u.start).collect();
    assert_eq!(starts, (start(3, "01:10")..=start(3, "02:00")).collect::<Vec<_>>());
    assert!(unusual.iter().all(|u| u.k as f64 - u.expected > 190.0), "{unusual:?}");
    assert!(test.by_hour);
}

/// A job for the mix: its job set, and its failed runs' `(time, signature, node)`.
fn feed(mix: &mut Mix, set: Option<&str>, runs: &[(i64, &str, Option<&str>)]) {
    mix.job(Some("ml"), set);
    for (t, s, n) in runs {
        mix.failed_run(*t, s, *n);
    }
    mix.end_job();
}

/// The span's background: 100 jobs of `A` and 100 of `B` on nodes n0–n9 (20 jobs each), on
/// day 0, outside the window tested; plus a window at day 2's 12:00 of `k` jobs as `window`
/// makes them.
fn mixed(window: impl Fn(&mut Mix, usize)) -> (Mix, Unusual) {
    let u = Unusual {
        start: start(2, "12:00"),
        k: 20,
        expected: 0.5,
    };
    let mut mix = Mix::default();
    for i in 0..200 {
        let sig = if i % 2 == 0 { "A" } else { "B" };
        let node = format!("n{}", i % 10);
        feed(&mut mix, Some("other"), &[(at(0, "08:00"), sig, Some(&node))]);
    }
    for i in 0..20 {
        window(&mut mix, i);
    }
    (mix, u)
}

/// 432 windows tested: 0.01/432 = 2.3e-5.
const B: u64 = 432;

/// `u` as a surge of its 20 jobs where 0.5 were expected.
fn surge_of_20(u: Unusual) -> Vec<(Unusual, Kind)> {
    vec![(
        u,
        Kind::Surge {
            jobs: 20,
            expected: 0.5,
        },
    )]
}

#[test]
fn twenty_jobs_of_the_usual_mix_are_a_surge() {
    // 10 of A and 10 of B, 2 on each node: the top signature A (a tie, the first in order),
    // P(Y ≥ 10 | Bin(20, 110/220)) = 0.588; the top node n0, P(Y ≥ 2 | Bin(20, 22/220)) = 0.608.
    let (mix, u) = mixed(|m, i| {
        let sig = if i % 2 == 0 { "A" } else { "B" };
        let node = format!("n{}", i % 10);
        feed(m, None, &[(at(2, "12:20"), sig, Some(&node))]);
    });
    assert!(mix.can_tell());
    assert_eq!(classify(&[u], B, &mix), surge_of_20(u));
}

#[test]
fn twenty_jobs_of_a_new_failure_or_on_one_node_are_an_incident() {
    // Every one of C: P(Y ≥ 20 | Bin(20, 20/220)) = 1.5e-21.
    let (mix, u) = mixed(|m, i| {
        let node = format!("n{}", i % 10);
        feed(m, None, &[(at(2, "12:20"), "C", Some(&node))]);
    });
    assert_eq!(classify(&[u], B, &mix), vec![(u, Kind::Incident)]);
    // The usual signatures, every one on n3: P(Y ≥ 20 | Bin(20, 40/220)) = 1.6e-15.
    let (mix, u) = mixed(|m, i| {
        let sig = if i % 2 == 0 { "A" } else { "B" };
        feed(m, None, &[(at(2, "12:20"), sig, Some("n3"))]);
    });
    assert_eq!(classify(&[u], B, &mix), vec![(u, Kind::Incident)]);
}

#[test]
fn a_window_unusual_only_for_one_job_sets_jobs_is_its_burst() {
    // 16 of `sweep-17` (all C, on one node) and 4 others: k − top = 4 < 5, not unusual.
    let (mix, u) = mixed(|m, i| {
        let set = (i < 16).then_some("sweep-17");
        feed(m, set, &[(at(2, "12:20"), "C", Some("n3"))]);
    });
    assert_eq!(
        classify(&[u], B, &mix),
        vec![(
            u,
            Kind::Burst {
                queue: "ml".into(),
                job_set: "sweep-17".into(),
                jobs: 16
            }
        )]
    );
    // 10 of it and 10 others: P(X ≥ 10 | 0.5) = 1.7e-10, still unusual: an incident.
    let (mix, u) = mixed(|m, i| {
        let set = (i < 10).then_some("sweep-17");
        feed(m, set, &[(at(2, "12:20"), "C", Some("n3"))]);
    });
    assert!(poisson_tail(10, 0.5) < 0.01 / B as f64);
    assert_eq!(classify(&[u], B, &mix), vec![(u, Kind::Incident)]);
}

#[test]
fn one_signature_and_no_node_cannot_tell_the_mix() {
    let u = Unusual {
        start: start(2, "12:00"),
        k: 20,
        expected: 0.5,
    };
    let mut mix = Mix::default();
    for _ in 0..220 {
        feed(&mut mix, None, &[(at(2, "12:20"), "exit:1", None)]);
    }
    assert!(!mix.can_tell());
    assert_eq!(classify(&[u], B, &mix), vec![(u, Kind::Incident)]);
}

#[test]
fn signatures_past_the_ten_thousand_kept_count_in_k_and_are_no_top_signature() {
    let u = Unusual {
        start: start(2, "12:00"),
        k: 20,
        expected: 0.5,
    };
    let mut mix = Mix::default();
    // 10,000 signatures of a job each, on 10 nodes; then 20 jobs in the window, each with a
    // message of its own, 2 a node.
    for i in 0..MAX_SIGNATURES {
        let node = format!("n{}", i % 10);
        feed(&mut mix, None, &[(at(0, "08:00"), &format!("s{i}"), Some(&node))]);
    }
    for i in 0..20 {
        let node = format!("n{}", i % 10);
        feed(&mut mix, None, &[(at(2, "12:20"), &format!("new-{i}"), Some(&node))]);
    }
    assert_eq!(mix.signatures.names.len(), MAX_SIGNATURES);
    let m = mix.of(&[u.start]).remove(0);
    assert_eq!((m.nodes.values().sum::<u64>(), m.signatures.len()), (20, 0));
    // No signature is over its share (none is told), nor a node: the usual mix.
    assert_eq!(classify(&[u], B, &mix), surge_of_20(u));
}

#[test]
fn a_job_counts_once_in_a_window_and_only_in_those_its_runs_end_in() {
    let u = [
        Unusual {
            start: start(0, "12:00"),
            k: 1,
            expected: 0.0,
        },
        Unusual {
            start: start(0, "13:00"),
            k: 1,
            expected: 0.0,
        },
    ];
    let mut mix = Mix::default();
    // Twice at 12:30 (two signatures, one node), once at 13:00: in both windows.
    feed(
        &mut mix,
        Some("s"),
        &[
            (at(0, "12:30"), "A", Some("n1")),
            (at(0, "12:40"), "B", Some("n1")),
            (at(0, "13:00"), "A", None),
        ],
    );
    // At 13:00 exactly: 12:00's window has ended.
    feed(&mut mix, None, &[(at(0, "13:00"), "A", Some("n2"))]);
    let [noon, one] = <[StartMix; 2]>::try_from(mix.of(&[u[0].start, u[1].start])).unwrap();
    assert_eq!((noon.sets.len(), noon.signatures.len(), noon.nodes.len()), (1, 2, 1));
    // Both jobs have A at 13:00 (counted once each), one of them on a node.
    assert_eq!((one.signatures.values().sum::<u64>(), one.nodes.len()), (2, 1));
    assert_eq!(mix.signatures.jobs, vec![2, 1]);
    assert_eq!(mix.jobs, 2);
}

#[test]
fn merged_windows_take_the_strongest_kind_and_given_ones_are_incidents() {
    let surge = |s: &str, jobs| {
        (
            Unusual {
                start: start(0, s),
                k: jobs,
                expected: 1.0,
            },
            Kind::Surge { jobs, expected: 1.0 },
        )
    };
    let burst = |s: &str, jobs| {
        (
            Unusual {
                start: start(0, s),
                k: jobs,
                expected: 1.0,
            },
            Kind::Burst {
                queue: "ml".into(),
                job_set: "x".into(),
                jobs,
            },
        )
    };
    let kinds = vec![
        // 10:00 and 10:30 overlap: the burst wins; 10:30's is 09:50–11:35.
        surge("10:00", 30),
        burst("10:30", 12),
        // Two surges: the busier one.
        surge("15:00", 20),
        surge("15:10", 25),
        // A surge a given window overlaps: an incident, as given.
        surge("20:00", 40),
    ];
    let given = [Window::given(Timestamp(at(0, "21:00")), Timestamp(at(0, "22:00")))];
    let m = merged(&kinds, &given);
    let spans: Vec<(i64, i64, &Kind, bool)> = m.iter().map(|(w, k)| (w.from.0, w.to.0, k, w.given)).collect();
    assert_eq!(
        spans,
        vec![
            (at(0, "09:50"), at(0, "11:35"), &kinds[1].1, false),
            (at(0, "14:50"), at(0, "16:15"), &kinds[3].1, false),
            (at(0, "19:50"), at(0, "22:00"), &Kind::Incident, true),
        ]
    );
}

/// The rule counted the long way: every window start of the span, `k` from the jobs' times,
/// `λ_w` from the other days' same hour.
fn brute(jobs: &[Vec<i64>]) -> Vec<(i64, u64, f64)> {
    let steps: Vec<Vec<i64>> = jobs
        .iter()
        .map(|t| t.iter().map(|t| t.div_euclid(STEP)).collect())
        .collect();
    let Some(first) = steps.iter().flatten().min().copied() else {
        return Vec::new();
    };
    let last = steps.iter().flatten().max().copied().unwrap();
    let k = |s: i64| steps.iter().filter(|j| j.iter().any(|&t| s <= t && t < s + 6)).count() as u64;
    let ks: Vec<(i64, u64)> = (first..=last).map(|s| (s, k(s))).collect();
    let b = ks.len() as u64;
    let mean = ks.iter().map(|(_, k)| *k as f64).sum::<f64>() / b as f64;
    let day = |s: i64| s.div_euclid(144);
    let hour = |s: i64| s.rem_euclid(144) / 6;
    let days = day(last) - day(first) + 1;
    let mut out = Vec::new();
    for &(s, k) in &ks {
        let lambda = if days >= 3 {
            let others: Vec<u64> = ks
                .iter()
                .filter(|(o, _)| hour(*o) == hour(s) && day(*o) != day(s))
                .map(|(_, k)| *k)
                .collect();
            match others.is_empty() {
                true => mean,
                false => others.iter().sum::<u64>() as f64 / others.len() as f64,
            }
        } else {
            mean
        };
        if k >= 5 && poisson_tail(k, lambda) < 0.01 / b as f64 {
            out.push((s, k, lambda));
        }
    }
    out
}

proptest! {
    #![proptest_config(Config { cases: 48, rng_seed: RngSeed::Fixed(0x2026_1129), ..Config::default() })]

    /// Jobs of 1 to 3 failed runs over 1 to 5 days, some bunched at a few moments: the
    /// detector's unusual windows are the test-side rule's.
    #[test]
    fn the_unusual_windows_are_the_rules_counted_the_long_way(
        days in 1i64..=5,
        spread in prop::collection::vec((1usize..=3, prop::array::uniform3(0.0f64..1.0)), 20..120),
        bunches in prop::collection::vec((0.0f64..1.0, 5usize..25), 0..4),
    ) {
        let span = (days * 1440 * MINUTE) as f64;
        let t0 = at(0, "00:00");
        let mut jobs: Vec<Vec<i64>> = spread
            .iter()
            .map(|(n, u)| u[..*n].iter().map(|x| t0 + (x * span) as i64).collect())
            .collect();
        for (when, n) in &bunches {
            let t = t0 + (when * span) as i64;
            jobs.extend((0..*n).map(|i| vec![t + i as i64 * MINUTE]));
        }
        let (unusual, _) = detector(&jobs).unusual(Rule::default());
        let want = brute(&jobs);
        prop_assert_eq!(unusual.len(), want.len());
        for (u, (s, k, l)) in unusual.iter().zip(&want) {
            prop_assert_eq!((u.start, u.k), (*s, *k));
            prop_assert!((u.expected - l).abs() < 1e-9, "{} against {}", u.expected, l);
        }
    }
}

/// A job for the mix: its job set, and its failed runs' `(time, signature, node)`.
type MixedJob = (Option<String>, Vec<(i64, String, Option<String>)>);

/// The jobs of [`mixed`]'s burst case as a list: 200 of the background, 16 of `sweep-17` and
/// 4 others in the window, and 10,005 more of a signature each (past the 10,000 told apart).
fn many_jobs() -> Vec<MixedJob> {
    let mut jobs = Vec::new();
    for i in 0..200 {
        let sig = if i % 2 == 0 { "A" } else { "B" };
        jobs.push((
            Some("other".to_string()),
            vec![(at(0, "08:00"), sig.to_string(), Some(format!("n{}", i % 10)))],
        ));
    }
    for i in 0..20 {
        let set = (i < 16).then(|| "sweep-17".to_string());
        jobs.push((set, vec![(at(2, "12:20"), "C".to_string(), Some("n3".to_string()))]));
    }
    for i in 0..MAX_SIGNATURES + 5 {
        jobs.push((None, vec![(at(1, "03:00") + i as i64, format!("s{i}"), None)]));
    }
    jobs
}

fn fed(jobs: &[MixedJob]) -> Mix {
    let mut mix = Mix::default();
    for (set, runs) in jobs {
        mix.job(Some("ml"), set.as_deref());
        for (t, s, n) in runs {
            mix.failed_run(*t, s, n.as_deref());
        }
        mix.end_job();
    }
    mix
}

/// A mix's windows as comparable lists: each start's counts by name, per part.
fn counts_at(mix: &Mix, starts: &[i64]) -> Vec<[Vec<(String, u64)>; 3]> {
    let named = |names: &Names, m: &HashMap<u32, u64>| {
        let mut v: Vec<(String, u64)> = m
            .iter()
            .map(|(id, n)| (names.names[*id as usize].clone(), *n))
            .collect();
        v.sort();
        v
    };
    mix.of(starts)
        .iter()
        .map(|m| {
            [
                named(&mix.sets, &m.sets),
                named(&mix.signatures, &m.signatures),
                named(&mix.nodes, &m.nodes),
            ]
        })
        .collect()
}

#[test]
fn the_mix_is_the_same_whatever_the_split_and_read_back_from_a_partial() {
    let jobs = many_jobs();
    let whole = fed(&jobs);
    let starts = [
        start(0, "08:00"),
        start(1, "03:00"),
        start(2, "12:00"),
        start(2, "12:20"),
    ];
    let u = Unusual {
        start: start(2, "12:00"),
        k: 20,
        expected: 0.5,
    };
    let burst = classify(&[u], B, &whole);
    assert!(matches!(&burst[0].1, Kind::Burst { jobs: 16, .. }), "{burst:?}");
    for units in [2, 7, 300] {
        let mut merged = Mix::default();
        for chunk in jobs.chunks(jobs.len().div_ceil(units)) {
            merged.merge(&fed(chunk));
        }
        assert_eq!(counts_at(&merged, &starts), counts_at(&whole, &starts), "{units} units");
        assert_eq!(
            (
                merged.jobs,
                &merged.signatures.names,
                &merged.signatures.jobs,
                merged.signatures.past
            ),
            (
                whole.jobs,
                &whole.signatures.names,
                &whole.signatures.jobs,
                whole.signatures.past
            )
        );
        assert_eq!(classify(&[u], B, &merged), burst);
    }
    let read: Mix = serde_json::from_str(&serde_json::to_string(&whole).unwrap()).unwrap();
    assert_eq!(counts_at(&read, &starts), counts_at(&whole, &starts));
    assert_eq!(classify(&[u], B, &read), burst);
    assert_eq!(whole.signatures.names.len(), MAX_SIGNATURES);
}

#[test]
fn a_detector_fed_the_mix_tells_the_kinds_and_one_fed_none_cannot() {
    // 20 jobs of one set at day 2's 12:20 over a quiet span: the set's burst; without the
    // mix, an incident.
    let mut with = Detector::default();
    let mut without = Detector::default();
    for d in 0..3 {
        for h in 0..24 {
            let t = at(d, "00:05") + h * 60 * MINUTE;
            for (det, mixed) in [(&mut with, true), (&mut without, false)] {
                det.add_job(&[t], 0);
                if mixed {
                    det.mix.job(Some("ml"), Some(&format!("bg-{d}-{h}")));
                    det.mix.failed_run(t, if h % 2 == 0 { "A" } else { "B" }, Some("n1"));
                    det.mix.end_job();
                }
            }
        }
    }
    for _ in 0..20 {
        let t = at(2, "12:20");
        with.add_job(&[t], 0);
        with.mix.job(Some("ml"), Some("sweep-17"));
        with.mix.failed_run(t, "C", Some("n3"));
        with.mix.end_job();
        without.add_job(&[t], 0);
    }
    let told = with.detect(Rule::default(), &[]);
    assert!(told.windows.is_empty(), "{told:?}");
    assert!(
        !told.busy.is_empty()
            && told
                .busy
                .iter()
                .all(|(_, k)| matches!(k, Kind::Burst { job_set, .. } if job_set == "sweep-17"))
    );
    let untold = without.detect(Rule::default(), &[]);
    assert_eq!((untold.windows.len(), untold.busy.len()), (1, 0));
}

/// `n` jobs of a few job sets, messages and nodes, each with 1–3 failed runs (some without a
/// node, some with no time) and a success, over two days: drawn by a fixed seed.
fn histories(n: usize) -> Vec<FailureHistory> {
    use crate::model::failure_history::{Container, Job, StartedAt};
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut draw = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    (0..n)
        .map(|j| {
            let failed = 1 + draw(3);
            let mut runs: Vec<Run> = (0..failed)
                .map(|_| Run {
                    node: (draw(5) > 0).then(|| format!("n{}", draw(4))),
                    started_at: (draw(20) > 0).then(|| {
                        StartedAt::Absolute(Timestamp(at(draw(2) as i64, "06:00") + draw(6 * 60) as i64 * MINUTE))
                    }),
                    containers: vec![Container {
                        name: "main".into(),
                        exit_code: 1,
                        message: Some(format!("error {}", draw(6))),
                        ..Container::default()
                    }],
                    outcome: Outcome::Failed,
                    ..Run::default()
                })
                .collect();
            runs.push(Run::default());
            FailureHistory {
                job: Job {
                    id: format!("j{j}"),
                    queue: Some("ml".into()),
                    job_set: (draw(4) > 0).then(|| format!("set-{}", draw(5))),
                    ..Job::default()
                },
                runs,
                expect: None,
            }
        })
        .collect()
}

/// Read again: a pass that kept the span's part alone ([`Gather::Span`]) and the unusual
/// windows' jobs counted again ([`WindowMixes`], by workers in any order) see each window as
/// a pass that kept every window's part ([`Gather::Windows`]), and tell the same kinds.
#[test]
fn the_windows_jobs_read_again_give_the_mix_a_pass_keeps() {
    let jobs = histories(600);
    let (mut full, mut span) = (Mix::default(), Mix::default());
    let (mut ends, mut texts) = (Vec::new(), FailedTexts::default());
    for h in &jobs {
        super::super::ends(h, &mut ends);
        texts.clear();
        full.add_history(h, &ends, texts.of(&h.runs), Gather::Windows);
        span.add_history(h, &ends, texts.of(&h.runs), Gather::Span);
    }
    assert_eq!(
        (
            span.jobs,
            &span.signatures.names,
            &span.signatures.jobs,
            &span.nodes.jobs,
            &span.sets.jobs
        ),
        (
            full.jobs,
            &full.signatures.names,
            &full.signatures.jobs,
            &full.nodes.jobs,
            &full.sets.jobs
        )
    );
    assert!(span.signatures.deltas.is_empty() && span.sets.deltas.is_empty());
    // Every start of both days' mornings, some windows empty, some overlapping.
    let unusual: Vec<Unusual> = (start(0, "05:00")..=start(1, "13:00"))
        .step_by(5)
        .enumerate()
        .map(|(i, s)| Unusual {
            start: s,
            k: [12, 60][i % 2],
            expected: 2.0,
        })
        .collect();
    let starts = starts_of(&unusual);
    let mut counted = WindowMixes::default();
    for part in jobs.chunks(70).rev() {
        let mut mine = WindowMixes::default();
        for h in part {
            super::super::ends(h, &mut ends);
            texts.clear();
            mine.add_history(&span, &starts, h, &ends, texts.of(&h.runs));
        }
        counted.merge(mine);
    }
    let want = full.of(&starts);
    assert!(want.iter().filter(|m| !m.sets.is_empty()).count() >= 10);
    assert_eq!(&counted.mixes[..want.len()], &want[..]);
    assert!(counted.mixes[want.len()..].iter().all(|m| *m == StartMix::default()));
    let kinds = classify(&unusual, B, &full);
    let told = |f: fn(&Kind) -> bool| kinds.iter().filter(|(_, k)| f(k)).count();
    assert!(told(|k| matches!(k, Kind::Burst { .. })) > 0 && told(|k| !matches!(k, Kind::Burst { .. })) > 0);
    assert_eq!(classify_counted(&unusual, B, &span, counted), kinds);
}
