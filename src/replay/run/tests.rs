//! The replay's folds and counts, held to their definitions: split-independent sums, the
//! runs left as docs/estimates.md defines them.

use super::*;
use crate::engine::simulator::Simulator;
use crate::engine::{job_context, Detail, JobStatus, Settings};
use crate::model::duration::GoDuration;
use crate::model::failure_history::FailureHistory;
use crate::replay::estimate::MAX_RUNS_LEFT;

/// The first [`LOST_NAMED`] lost jobs, in order, however the jobs are split into parts.
#[test]
fn a_tally_names_the_first_lost_jobs_only() {
    let ids: Vec<String> = (1..=8).map(|i| format!("j{i}")).collect();
    let mut whole = CompareTally::default();
    ids.iter().for_each(|j| whole.name_lost(j));
    assert_eq!(whole.lost_jobs, ids[..LOST_NAMED]);
    let mut parts = CompareTally::default();
    for chunk in ids.chunks(3) {
        let mut part = CompareTally::default();
        chunk.iter().for_each(|j| part.name_lost(j));
        parts.merge(&part);
    }
    assert_eq!(parts, whole);
}
use crate::model::failure_history::{Container, Outcome, Run};
use crate::model::test_policies;

fn sim(yaml: &str) -> Simulator {
    Simulator::new(test_policies(yaml), Vec::new(), None).unwrap()
}

fn cuda() -> Run {
    Run {
        category: Some("cuda_error".into()),
        containers: vec![Container {
            name: "main".into(),
            exit_code: 1,
            ..Container::default()
        }],
        ..Run::default()
    }
}

fn lease() -> Run {
    Run {
        outcome: Outcome::LeaseReturned,
        ..Run::default()
    }
}

fn job(runs: Vec<Run>) -> FailureHistory {
    FailureHistory {
        runs,
        ..FailureHistory::default()
    }
}

const DESIGN: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 10\n  rules:\n    - {action: Retry, onFailureCategory: [cuda_error], retryLimit: 3}\n";

fn left(sim: &Simulator, settings: &Settings, runs: Vec<Run>) -> u32 {
    let h = job(runs);
    let report = sim.simulate(&h, settings).unwrap();
    assert!(
        matches!(report.status, JobStatus::Pending { .. }),
        "{:?}",
        report.status
    );
    runs_left(sim, settings, &JobFacts::new(&h))
}

/// docs/estimates.md to the letter: the job's recorded runs, then [`MAX_RUNS_LEFT`] copies of its
/// last failed run (no node, start, queue time, reload or expectation) appended and
/// replayed from the start; the runs started past the record.
fn left_by_copies(sim: &Simulator, settings: &Settings, h: &FailureHistory) -> u32 {
    let Some(last) = h.runs.iter().rev().find(|r| r.outcome == Outcome::Failed) else {
        return 1;
    };
    let copy = Run {
        node: None,
        queued_for: GoDuration::ZERO,
        started_at: None,
        global_max_retries: None,
        expect: None,
        ..last.clone()
    };
    let mut longer = h.clone();
    longer.runs.extend(std::iter::repeat_n(copy, MAX_RUNS_LEFT as usize));
    let o = sim
        .simulate_outcome(&longer, &job_context(&longer), settings, 0, None)
        .unwrap();
    (o.runs.saturating_sub(h.runs.len()) as u32).clamp(1, MAX_RUNS_LEFT)
}

/// The runs a Pending side has left, however they are worked out — counted from the
/// state the side's own replay left (a report's, texts or not), after replaying the
/// recorded runs again (a search's), with the runs' matches known or not — are the
/// copies of docs/estimates.md appended and replayed. Over drawn histories and policies, under
/// both engines, with the global limit lowered, and the feature off.
#[test]
fn runs_left_from_the_replays_state_are_the_copies_replayed() {
    use crate::engine::EngineKind;
    use crate::replay::drawn::{history, Draw, Fields};
    use crate::replay::json_lines::decode_line;
    let (mut pending, mut seen) = (0, std::collections::BTreeSet::new());
    for seed in 1..=12u64 {
        let mut d = Draw(0x2545_f491_4f6c_dd1d ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let text = history(&mut d, 300);
        let fields = Fields::drawn(&mut d);
        for engine in [EngineKind::Design, EngineKind::Upstream] {
            let sim = fields.sim().with_engine(engine);
            for settings in [
                Settings::default(),
                Settings {
                    global_max_retries: 2,
                    ..Settings::default()
                },
                Settings {
                    enabled: false,
                    ..Settings::default()
                },
                Settings {
                    global_max_retries: 1000,
                    ..Settings::default()
                },
            ] {
                for (i, line) in text.lines().enumerate() {
                    let h = decode_line(line.as_bytes(), i + 1).unwrap();
                    let want = left_by_copies(&sim, &settings, &h);
                    let facts = JobFacts::new(&h);
                    let at = format!("seed {seed}, {engine:?}, {settings:?}, line {}", i + 1);
                    for detail in [Detail::Full, Detail::Outcome] {
                        let mut report = replay_job_detailed(&sim, &settings, &h, detail).unwrap();
                        if !matches!(report.status, JobStatus::Pending { .. }) {
                            assert!(report.take_pending().is_none(), "{at}");
                            continue;
                        }
                        pending += 1;
                        seen.insert(want);
                        let p = report.take_pending();
                        assert!(p.is_some(), "{at}");
                        assert_eq!(runs_left_after(&sim, &settings, &facts, p), want, "{at}, {detail:?}");
                    }
                    if !matches!(sim.simulate(&h, &settings).unwrap().status, JobStatus::Pending { .. }) {
                        continue;
                    }
                    assert_eq!(runs_left(&sim, &settings, &facts), want, "{at}");
                    let table = sim.match_table(&h, &settings);
                    assert_eq!(
                        runs_left_matched(&sim, &settings, &facts, table.as_deref()),
                        want,
                        "{at}"
                    );
                }
            }
        }
    }
    // Enough Pending sides, and runs left of many sizes: one, a few, the cap of 100.
    assert!(pending > 1000, "{pending}");
    assert!(
        seen.contains(&1) && seen.contains(&MAX_RUNS_LEFT) && seen.len() > 8,
        "{seen:?}"
    );
}

/// A per-rule limit of 3 and one failure retried: the pending run is retry 2's, then
/// retry 3's, then the limit fails the job: 3 runs left.
#[test]
fn a_rules_limit_bounds_the_runs_left() {
    let s = Settings::default();
    assert_eq!(left(&sim(DESIGN), &s, vec![cuda()]), 3);
    assert_eq!(left(&sim(DESIGN), &s, vec![cuda(), cuda()]), 2);
    assert_eq!(left(&sim(DESIGN), &s, vec![cuda(), cuda(), cuda()]), 1);
}

/// The global cap binds first: 2 retries in all, one used.
#[test]
fn the_global_cap_bounds_the_runs_left() {
    let s = Settings {
        global_max_retries: 2,
        ..Settings::default()
    };
    assert_eq!(left(&sim(DESIGN), &s, vec![cuda()]), 2);
}

/// No limit short of 100: the runs left stop at 100.
#[test]
fn runs_left_stop_at_100() {
    let unbounded = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 10000\n  rules:\n    - {action: Retry, onFailureCategory: [cuda_error]}\n";
    let s = Settings {
        global_max_retries: 10_000,
        ..Settings::default()
    };
    assert_eq!(left(&sim(unbounded), &s, vec![cuda()]), MAX_RUNS_LEFT);
}

/// Upstream: retries used = failed runs before this one; `retryLimit: 2`, one failure
/// recorded: the pending run (retries used 1) retries, the next (2) fails: 2 runs left.
#[test]
fn the_upstream_engine_follows_its_own_budget() {
    let up = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 2\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: cuda_error}\n";
    let s = Settings::default();
    let sim = sim(up).with_engine(crate::engine::EngineKind::Upstream);
    assert_eq!(left(&sim, &s, vec![cuda()]), 2);
}

/// A job whose last run was a returned lease is Pending on the lease's requeue: the
/// copies are of its last failed run (one retry used of 3: 2 more, then the limit: 3
/// runs, the requeued one included). A job with no failed run has the pending run only.
#[test]
fn a_returned_lease_last_follows_the_last_failed_run() {
    let s = Settings::default();
    assert_eq!(left(&sim(DESIGN), &s, vec![cuda(), lease()]), 3);
    assert_eq!(left(&sim(DESIGN), &s, vec![lease()]), 1);
}
