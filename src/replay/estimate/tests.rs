//! The estimates on histories whose answer is worked out by hand.

use proptest::prelude::*;

use super::*;
use crate::model::failure_history::Container;

fn run(outcome: Outcome) -> Run {
    Run {
        outcome,
        ..Run::default()
    }
}

fn failed_with(f: impl FnOnce(&mut Run)) -> Run {
    let mut r = run(Outcome::Failed);
    f(&mut r);
    r
}

fn exit(code: i64) -> Run {
    failed_with(|r| {
        r.containers = vec![
            Container {
                name: "sidecar".into(),
                exit_code: 0,
                ..Container::default()
            },
            Container {
                name: "main".into(),
                exit_code: code,
                ..Container::default()
            },
        ]
    })
}

fn ok() -> Run {
    run(Outcome::Succeeded)
}

fn preempted() -> Run {
    failed_with(|r| r.conditions = vec![Condition::Preempted, Condition::Evicted])
}

fn category(c: &str, sub: Option<&str>) -> Run {
    failed_with(|r| {
        r.category = Some(c.into());
        r.subcategory = sub.map(Into::into);
        // The category wins over an exit code and a condition.
        r.containers = vec![Container {
            exit_code: 3,
            ..Container::default()
        }];
        r.conditions = vec![Condition::Evicted];
    })
}

fn history(runs: Vec<Run>) -> FailureHistory {
    FailureHistory {
        runs,
        ..FailureHistory::default()
    }
}

fn rates(histories: &[FailureHistory]) -> Rates {
    let mut t = Trials::default();
    for h in histories {
        t.add_history(h, false);
    }
    Rates::new(t)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 5e-5
}

fn exit1() -> Option<FailureClass> {
    Some(FailureClass::Exit(1))
}

#[test]
fn a_runs_class_is_its_category_else_exit_code_else_condition_else_unknown() {
    assert_eq!(
        class_of(&category("cuda_error", Some("xid"))).to_string(),
        "cuda_error/xid"
    );
    assert_eq!(class_of(&category("cuda_error", None)).to_string(), "cuda_error");
    // An empty category is none; an empty subcategory too.
    assert_eq!(class_of(&category("", Some("xid"))).to_string(), "exit:3");
    assert_eq!(class_of(&category("c", Some(""))).to_string(), "c");
    assert_eq!(class_of(&exit(137)).to_string(), "exit:137");
    assert_eq!(class_of(&preempted()).to_string(), "condition:Preempted");
    assert_eq!(class_of(&run(Outcome::Failed)).to_string(), "unknown");
}

#[test]
fn a_jobs_class_is_its_last_failed_runs_and_its_depth_its_failed_runs() {
    let h = history(vec![exit(1), preempted(), run(Outcome::LeaseReturned)]);
    assert_eq!(job_class(&h), Some(FailureClass::Condition(Condition::Preempted)));
    assert_eq!(failed_runs(&h), 2);
    let lease = history(vec![run(Outcome::LeaseReturned)]);
    assert_eq!((job_class(&lease), failed_runs(&lease)), (None, 0));
}

/// By hand: exit:1 at depth 1, 6 trials, 4 successes; at depth 2 (job 2's second failure,
/// followed by a success), 1 trial, 1 success. Preempted, 2 trials at depth 1: 1 success,
/// and a returned lease, which counts as a next run that did not succeed. Pooled: 9 trials,
/// 6 successes; every class at depth 1: 8 trials, 5 successes.
fn known() -> Vec<FailureHistory> {
    vec![
        // exit:1 → succeeded (d1 success); exit:1 → exit:1 → succeeded (d1 fail, d2 success).
        history(vec![exit(1), ok()]),
        history(vec![exit(1), exit(1), ok()]),
        // exit:1 → succeeded twice more; exit:1 → cancelled (d1 fail).
        history(vec![exit(1), ok()]),
        history(vec![exit(1), ok()]),
        history(vec![exit(1), run(Outcome::Cancelled)]),
        // Preempted → lease returned (fail) → succeeded: the lease is no failed run, so
        // only one trial; Preempted → succeeded (success).
        history(vec![preempted(), run(Outcome::LeaseReturned), ok()]),
        history(vec![preempted(), ok()]),
        // A last failed run is no trial; a job of one run has none.
        history(vec![exit(2)]),
        history(vec![ok()]),
        history(vec![exit(1), ok()]),
    ]
}

#[test]
fn trials_count_failed_runs_followed_by_another_run_at_their_depth() {
    let r = rates(&known());
    let t = r.trials().get(&FailureClass::Exit(1)).unwrap();
    assert_eq!(
        t.at(Fit::All, 0),
        Tally {
            trials: 6,
            successes: 4
        }
    );
    assert_eq!(
        t.at(Fit::All, 1),
        Tally {
            trials: 1,
            successes: 1
        }
    );
    assert_eq!(
        r.tally(&FailureClass::Condition(Condition::Preempted)),
        Tally {
            trials: 2,
            successes: 1
        }
    );
    assert_eq!(r.tally(&FailureClass::Exit(2)), Tally::default());
    assert_eq!(
        r.pooled(),
        Tally {
            trials: 9,
            successes: 6
        }
    );
    let names: Vec<String> = r
        .trials()
        .classes()
        .map(|(c, _)| c.map_or("rest".into(), |c| c.to_string()))
        .collect();
    assert_eq!(names, ["exit:1", "condition:Preempted"]);
}

/// Each level of the back-off, by hand, on [`known`]: exit:1 at depth 1 has 6 trials (its
/// own rate, `exit:1@1`); at depth 2 one trial, so the class at any depth (7 trials, 5
/// successes, `exit:1`); Preempted has 2 trials in all, and every class at depth 1 has 8
/// (`all@1`); at depth 3 nothing has 5 trials: every class at any depth (9 trials, `all`).
#[test]
fn each_level_of_the_back_off() {
    let r = rates(&known());
    let at = |class: Option<FailureClass>, depth| {
        let x = r.rate(class.as_ref(), depth, Fit::All).unwrap();
        (x.basis.to_string(), x.trials, x.p)
    };
    assert_eq!(at(exit1(), 1), ("exit:1@1".into(), 6, 4.0 / 6.0));
    assert_eq!(at(exit1(), 2), ("exit:1".into(), 7, 5.0 / 7.0));
    let pre = Some(FailureClass::Condition(Condition::Preempted));
    assert_eq!(at(pre.clone(), 1), ("all@1".into(), 8, 5.0 / 8.0));
    assert_eq!(at(pre, 3), ("all".into(), 9, 6.0 / 9.0));
    // No class (only returned leases recorded): depth 0, every class at any depth.
    assert_eq!(at(None, 0), ("all".into(), 9, 6.0 / 9.0));
    // A class never seen backs off as one with no trials.
    assert_eq!(at(Some(FailureClass::Exit(77)), 1), ("all@1".into(), 8, 5.0 / 8.0));
    // Wilson 95% of 4/6, by hand: z² = 3.84146, centre (0.66667 + 0.32012) / 1.64024 =
    // 0.60162, half-width 1.959964 × √(0.037037 + 0.026677) / 1.64024 = 0.30162.
    let e = r.rate(exit1().as_ref(), 1, Fit::All).unwrap();
    assert!(close(e.low, 0.3000) && close(e.high, 0.9032), "{e:?}");
}

/// Depths 5, 6, 7 are one bucket, `5+`: a job that failed 7 times gives trials at depths
/// 1..=6, the last two in the 5+ bucket.
#[test]
fn the_depth_cap_is_one_bucket() {
    let mut runs: Vec<Run> = (0..7).map(|_| exit(1)).collect();
    runs.push(ok());
    let mut jobs = vec![history(runs)];
    // Five more jobs whose fifth failure is followed by a success: 5 + 2 trials at 5+.
    for _ in 0..5 {
        let mut runs: Vec<Run> = (0..5).map(|_| exit(1)).collect();
        runs.push(ok());
        jobs.push(history(runs));
    }
    let r = rates(&jobs);
    let t = r.trials().get(&FailureClass::Exit(1)).unwrap();
    // Depth 5+: job 1 at depths 5 (fail), 6 (fail), 7 (success); the five others at 5
    // (success each): 8 trials, 6 successes.
    assert_eq!(
        t.at(Fit::All, 4),
        Tally {
            trials: 8,
            successes: 6
        }
    );
    let e = r.rate(exit1().as_ref(), 9, Fit::All).unwrap();
    assert_eq!((e.basis.to_string(), e.trials), ("exit:1@5+".into(), 8));
    assert_eq!(e.p, 6.0 / 8.0);
}

/// Runs left, by hand: exit:1 has 15 trials at depth 1 (5 successes: p1 = 1/3) and 10 at
/// depth 2 (2 successes: p2 = 0.2), and every next run ran 60 s. A job with one recorded
/// failure and 3 runs left: depth 3 has no trials, so p3 is exit:1 at any depth, 7 of 25;
/// pSucceeded = 1 − (1 − p1)(1 − p2)(1 − p3) = 1 − 2/3 × 0.8 × 0.72 = 0.616; expected
/// compute = 60 × (1 + (1 − p1) + (1 − p1)(1 − p2)) = 60 × (1 + 0.6667 + 0.5333) = 132 s.
#[test]
fn runs_left_carry_the_rate_over_the_runs_by_hand() {
    let mut jobs = Vec::new();
    let timed = |mut r: Run| {
        r.run_for = crate::model::GoDuration(60_000_000_000);
        r
    };
    for i in 0..10 {
        // The first failure is followed by a success in 5 jobs; in the other 5, by a second
        // failure, followed by a success in 2 of them.
        if i < 5 {
            jobs.push(history(vec![exit(1), timed(ok())]));
        } else {
            jobs.push(history(vec![
                exit(1),
                timed(exit(1)),
                timed(if i < 7 { ok() } else { exit(2) }),
            ]));
        }
    }
    // Five more second-failure trials that fail: depth 2 now 10 trials, 2 successes.
    for _ in 0..5 {
        jobs.push(history(vec![exit(1), timed(exit(1)), timed(exit(3))]));
    }
    let r = rates(&jobs);
    let t = r.trials().get(&FailureClass::Exit(1)).unwrap();
    assert_eq!(
        t.at(Fit::All, 0),
        Tally {
            trials: 15,
            successes: 5
        }
    );
    assert_eq!(
        t.at(Fit::All, 1),
        Tally {
            trials: 10,
            successes: 2
        }
    );
    let e = r.estimate(exit1().as_ref(), 1, 3).unwrap();
    let (p1, p2, p3) = (5.0 / 15.0, 2.0 / 10.0, 7.0 / 25.0);
    let want = 1.0 - (1.0 - p1) * (1.0 - p2) * (1.0 - p3);
    assert!((e.p_succeeded - want).abs() < 1e-12, "{} vs {want}", e.p_succeeded);
    assert_eq!(
        (e.p_next_run, e.runs_left, e.basis.to_string(), e.trials),
        (p1, 3, "exit:1@1".into(), 15)
    );
    assert!((want - 0.616).abs() < 1e-12);
    assert!((e.expected_compute - 132.0).abs() < 1e-9, "{}", e.expected_compute);
    assert!(e.low <= e.p_succeeded && e.p_succeeded <= e.high);
}

#[test]
fn no_trials_no_estimate() {
    let r = rates(&[history(vec![exit(1)]), history(vec![ok()])]);
    assert_eq!(r.estimate(exit1().as_ref(), 1, 1), None);
    assert_eq!(r.estimate(None, 0, 3), None);
    let mut set = PendingSet::default();
    set.add(&exit1(), 1, 2, None);
    let s = r.sums(&set);
    assert_eq!(
        (s.jobs, s.without_estimate, s.without_resources, s.expected),
        (1, 1, 1, 0.0)
    );
}

/// The sums: two GPU jobs (1 and 2 GPUs) and a CPU-only job (4 CPUs), all exit:1 at depth 1
/// with one run left (p = 0.5 from 10 trials, m = 120 s): expected 1.5 jobs, 360 s of
/// expected compute (m per job: the pending run always starts), GPU-hours 120 × 3 / 3600,
/// CPU-hours 120 × 4 / 3600.
#[test]
fn sums_count_jobs_and_their_requests() {
    let timed = |mut r: Run| {
        r.run_for = crate::model::GoDuration(120_000_000_000);
        r
    };
    let mut jobs = Vec::new();
    for i in 0..10 {
        jobs.push(history(vec![exit(1), timed(if i < 5 { ok() } else { exit(2) })]));
    }
    let r = rates(&jobs);
    let gpu = |g: u64| Resources {
        gpu_milli: Some(g * 1000),
        ..Resources::default()
    };
    let cpu = Resources {
        cpu_milli: Some(4000),
        ..Resources::default()
    };
    let mut set = PendingSet::default();
    set.add(&exit1(), 1, 1, Some(&gpu(1)));
    set.add(&exit1(), 1, 1, Some(&gpu(2)));
    set.add(&exit1(), 1, 1, Some(&cpu));
    let s = r.sums(&set);
    assert_eq!((s.jobs, s.without_estimate, s.without_resources), (3, 0, 0));
    assert!((s.expected - 1.5).abs() < 1e-12);
    // m = 120 s; one run left: expected compute = m per job.
    assert!((s.expected_compute - 360.0).abs() < 1e-9);
    assert!((s.gpu_hours - 120.0 * 3.0 / 3600.0).abs() < 1e-12);
    assert!((s.cpu_hours - 120.0 * 4.0 / 3600.0).abs() < 1e-12);
}

#[test]
fn wilson_matches_published_values() {
    // Wilson 95% intervals as tabled (Newcombe 1998, table I): 0/10, 10/10, 3/5, 81/263.
    let cases = [
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (3, 5, 0.2307, 0.8824),
        (81, 263, 0.2553, 0.3662),
    ];
    for (s, n, low, high) in cases {
        let (l, h) = wilson(s, n, Z95);
        assert!(close(l, low) && close(h, high), "{s}/{n}: ({l}, {h})");
    }
}

#[test]
fn merging_parts_equals_counting_in_one() {
    let all = known();
    let whole = rates(&all);
    for cut in 0..all.len() {
        let (mut a, mut b) = (Trials::default(), Trials::default());
        all[..cut].iter().for_each(|h| a.add_history(h, false));
        all[cut..].iter().for_each(|h| b.add_history(h, false));
        b.merge(&a);
        assert_eq!(Rates::new(b), whole, "cut at {cut}");
    }
}

/// Past the caps the smallest keys are kept, whatever the order they come in; the trials of
/// the others count in every class's rates.
#[test]
fn classes_past_the_cap_are_the_largest_whatever_the_order() {
    let n = MAX_CLASSES as i64 + 10;
    let jobs: Vec<FailureHistory> = (0..n).map(|i| history(vec![exit(i + 1), ok()])).collect();
    let forward = rates(&jobs);
    let mut backward = Trials::default();
    for h in jobs.iter().rev() {
        let mut unit = Trials::default();
        unit.add_history(h, false);
        backward.merge(&unit);
    }
    assert_eq!(Rates::new(backward), forward);
    let kept = forward.trials().classes().filter(|(c, _)| c.is_some()).count();
    assert_eq!(kept, MAX_CLASSES);
    assert_eq!(forward.pooled().trials, n as u64);
    assert_eq!(
        forward.tally(&FailureClass::Exit(MAX_CLASSES as i64 + 5)),
        Tally::default()
    );
    assert_eq!(forward.tally(&FailureClass::Exit(1)).trials, 1);
    // Subcategories: the 100 smallest names of a category.
    let subs: Vec<FailureHistory> = (0..MAX_SUBCATEGORIES + 3)
        .map(|i| history(vec![category("c", Some(&format!("s{i:03}"))), ok()]))
        .collect();
    let r = rates(&subs);
    assert_eq!(
        r.trials().classes().filter(|(c, _)| c.is_some()).count(),
        MAX_SUBCATEGORIES
    );
    assert_eq!(r.pooled().trials, MAX_SUBCATEGORIES as u64 + 3);
    let last = FailureClass::Category {
        category: "c".into(),
        subcategory: Some(format!("s{:03}", MAX_SUBCATEGORIES + 2)),
    };
    assert_eq!(r.tally(&last), Tally::default());
}

#[test]
fn basis_names_its_level() {
    let b = |class: Option<FailureClass>, depth| Basis { class, depth }.to_string();
    let oom = Some(FailureClass::Category {
        category: "oom".into(),
        subcategory: None,
    });
    assert_eq!(b(oom.clone(), Some(2)), "oom@2");
    assert_eq!(b(oom.clone(), Some(5)), "oom@5+");
    assert_eq!(b(oom, None), "oom");
    assert_eq!(b(None, Some(2)), "all@2");
    assert_eq!(b(None, None), "all");
}

/// Histories of exit:1 and exit:2 failures, any mix of successes, at depths up to 8.
fn histories() -> impl Strategy<Value = Vec<FailureHistory>> {
    let job = prop::collection::vec((1i64..=2, any::<bool>()), 1..8).prop_map(|steps| {
        let mut runs = Vec::new();
        for (code, succeeds) in steps {
            runs.push(exit(code));
            if succeeds {
                runs.push(ok());
                break;
            }
        }
        history(runs)
    });
    prop::collection::vec(job, 1..60)
}

proptest! {
    /// `low ≤ pSucceeded ≤ high`, pSucceeded grows with the runs left, and one run left gives
    /// exactly the pending run's own rate.
    #[test]
    fn estimates_are_ordered_and_grow_with_runs_left(
        jobs in histories(),
        code in 1i64..=3,
        depth in 0u32..9,
        runs_left in 1u32..=100,
    ) {
        let r = rates(&jobs);
        let class = Some(FailureClass::Exit(code));
        let Some(e) = r.estimate(class.as_ref(), depth, runs_left) else {
            return Ok(());
        };
        prop_assert!(e.low <= e.p_succeeded && e.p_succeeded <= e.high, "{e:?}");
        prop_assert!((0.0..=1.0).contains(&e.low) && e.high <= 1.0, "{e:?}");
        let one = r.estimate(class.as_ref(), depth, 1).unwrap();
        prop_assert_eq!(one.p_succeeded, one.p_next_run);
        prop_assert_eq!(one.p_next_run, e.p_next_run);
        if runs_left < 100 {
            let more = r.estimate(class.as_ref(), depth, runs_left + 1).unwrap();
            prop_assert!(more.p_succeeded >= e.p_succeeded);
            prop_assert!(more.expected_compute >= e.expected_compute);
        }
    }

    /// Any split of the jobs into parts, merged in any order, counts what one part counts.
    #[test]
    fn any_split_merges_to_the_whole(jobs in histories(), cuts in prop::collection::vec(0usize..60, 0..4)) {
        let whole = rates(&jobs);
        let mut bounds: Vec<usize> = cuts.into_iter().map(|c| c.min(jobs.len())).collect();
        bounds.push(0);
        bounds.push(jobs.len());
        bounds.sort_unstable();
        let mut merged = Trials::default();
        for w in bounds.windows(2).rev() {
            let mut part = Trials::default();
            jobs[w[0]..w[1]].iter().for_each(|h| part.add_history(h, false));
            merged.merge(&part);
        }
        prop_assert_eq!(Rates::new(merged), whole);
    }
}

/// The capped map: the smallest keys, the largest dropped into `dropped`, a key past them
/// refused; written as `[key, value]` pairs in key order, read back from any order, a key
/// given twice refused.
#[test]
fn a_capped_map_keeps_the_smallest_keys_and_reads_its_pairs_in_any_order() {
    let mut m: Smallest<i64, u64, 3> = Smallest::default();
    let mut dropped = Vec::new();
    for k in [5, 1, 9, 5, 3] {
        *m.get_or_make(&k, |v| dropped.push(v)).unwrap() += 1;
    }
    assert_eq!(dropped, vec![1], "9 made room for 3");
    assert!(m.get_or_make(&7, |_| panic!("nothing to drop")).is_none());
    assert_eq!(m.get(&5), Some(&2));
    assert_eq!(m.get(&9), None);
    assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"map":[[1,1],[3,1],[5,2]]}"#);
    let read: Smallest<i64, u64, 3> = serde_json::from_str(r#"{"map":[[5,2],[1,1]]}"#).unwrap();
    assert_eq!(read.iter().collect::<Vec<_>>(), vec![(&1, &1), (&5, &2)]);
    let twice = serde_json::from_str::<Smallest<i64, u64, 3>>(r#"{"map":[[1,1],[1,2]]}"#).unwrap_err();
    assert!(twice.to_string().starts_with("a key is repeated"), "{twice}");
}
