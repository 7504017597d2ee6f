use super::*;
use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, Job, Outcome, Resources, Run, StartedAt, Timestamp};
use crate::replay::incidents::{Window, Windows};

const HOUR: i64 = 3_600_000_000_000;
const MINUTE: i64 = 60_000_000_000;
/// 2026-01-01T00:00:00Z.
const DAY: i64 = 1_767_225_600_000_000_000;

fn at(hours: i64, minutes: i64) -> i64 {
    DAY + hours * HOUR + minutes * MINUTE
}

fn minutes(m: i64) -> GoDuration {
    GoDuration(u64::try_from(m * MINUTE).unwrap())
}

fn job(queue: &str, gpu: u64, submitted: i64, runs: Vec<Run>) -> FailureHistory {
    FailureHistory {
        job: Job {
            id: queue.to_string(),
            queue: Some(queue.to_string()),
            submitted_at: Some(Timestamp(submitted)),
            resources: Some(Resources {
                gpu_milli: Some(gpu * 1000),
                cpu_milli: Some(gpu * 500),
                memory: None,
            }),
            ..Job::default()
        },
        runs,
        expect: None,
    }
}

/// A run waiting `queued` minutes, then running `ran`, in `pool`.
fn run(queued: i64, ran: i64, pool: Option<&str>, outcome: Outcome) -> Run {
    Run {
        queued_for: minutes(queued),
        run_for: minutes(ran),
        pool: pool.map(str::to_string),
        outcome,
        ..Run::default()
    }
}

/// A run started at `start`, running `ran` minutes.
fn started(start: i64, ran: i64, pool: Option<&str>, outcome: Outcome) -> Run {
    Run {
        started_at: Some(StartedAt::Absolute(Timestamp(start))),
        run_for: minutes(ran),
        pool: pool.map(str::to_string),
        outcome,
        ..Run::default()
    }
}

/// Each history as the record holds it.
fn record_jobs(histories: &[FailureHistory]) -> Vec<JobRuns> {
    let mut ends = Vec::new();
    histories
        .iter()
        .map(|h| JobRuns::of(h, Started::record(h), &mut ends))
        .collect()
}

fn record(histories: &[FailureHistory], windows: &Windows) -> Tally {
    tally(&record_jobs(histories), windows)
}

/// A tally with its splits by name (only the names with a share), so that sides swept
/// together, whose splits are indexed by the names every side met, compare with a side
/// swept alone: every sum exact, every count.
#[derive(Debug, PartialEq, Eq)]
struct ByName {
    sums: Vec<(u128, u128, u128, u128, u128, u128)>,
    splits: Vec<std::collections::BTreeMap<String, u128>>,
    counts: Counts,
    overflow: bool,
}

fn by_name(t: &Tally) -> ByName {
    let named = |parts: &[u128], names: &[String]| {
        parts
            .iter()
            .zip(names)
            .filter(|(p, _)| **p > 0)
            .map(|(p, n)| (n.clone(), *p))
            .collect()
    };
    let resources = [&t.gpu, &t.cpu];
    ByName {
        sums: resources
            .iter()
            .map(|s| {
                (
                    s.retry,
                    s.queued,
                    s.while_others_waited,
                    s.overlap,
                    s.in_incidents_retry,
                    s.in_incidents_overlap,
                )
            })
            .collect(),
        splits: resources
            .iter()
            .flat_map(|s| {
                [
                    named(&s.overlap_by_waiting_queue, &t.names.queues),
                    named(&s.overlap_by_retrying_queue, &t.names.queues),
                    named(&s.overlap_by_pool, &t.names.pools),
                ]
            })
            .collect(),
        counts: t.counts,
        overflow: t.overflow.is_some(),
    }
}

fn hours_of(sum: u128) -> f64 {
    crate::replay::device_time::hours(sum)
}

/// A run of `pool` from `from` to `to` (after no failure).
fn span(pool: &str, from: i64, to: i64) -> RunSpan {
    RunSpan {
        span: Some((from, to)),
        pool: pool.into(),
        after_failed: None,
    }
}

/// The case: a 4-GPU retry 10:00–11:00 while a 2-GPU job waits 10:30–12:00, written
/// with `queuedFor` (`by_queued_for`) or `startedAt`, the waiting job in pool `other_pool`.
fn the_case(by_queued_for: bool, other_pool: Option<&str>) -> Vec<FailureHistory> {
    if by_queued_for {
        vec![
            job(
                "a",
                4,
                at(9, 0),
                vec![run(0, 60, None, Outcome::Failed), run(0, 60, None, Outcome::Succeeded)],
            ),
            job("b", 2, at(10, 30), vec![run(90, 60, other_pool, Outcome::Succeeded)]),
        ]
    } else {
        vec![
            job(
                "a",
                4,
                at(9, 0),
                vec![
                    started(at(9, 0), 60, None, Outcome::Failed),
                    started(at(10, 0), 60, None, Outcome::Succeeded),
                ],
            ),
            job(
                "b",
                2,
                at(10, 30),
                vec![started(at(12, 0), 60, other_pool, Outcome::Succeeded)],
            ),
        ]
    }
}

#[test]
fn a_retry_while_a_job_waits_in_its_pool() {
    for by_queued_for in [true, false] {
        let t = record(&the_case(by_queued_for, None), &Windows::default());
        let side = Side::of(&t);
        assert_eq!(
            (
                side.gpu.retry_hours,
                side.gpu.queued_hours,
                side.gpu.while_others_waited_hours,
                side.gpu.overlap_hours
            ),
            (4.0, 3.0, 2.0, 1.0),
            "by queuedFor: {by_queued_for}"
        );
        // Half of each request in CPUs: half of each figure.
        assert_eq!(
            (
                side.cpu.retry_hours,
                side.cpu.queued_hours,
                side.cpu.while_others_waited_hours,
                side.cpu.overlap_hours
            ),
            (2.0, 1.5, 1.0, 0.5)
        );
        let one = |name: &str, h: f64| [(name.to_string(), h)].into_iter().collect();
        assert_eq!(side.gpu.overlap_hours_by_waiting_queue, one("b", 1.0));
        assert_eq!(side.gpu.overlap_hours_by_retrying_queue, one("a", 1.0));
        assert_eq!(side.gpu.overlap_hours_by_pool, one(DEFAULT_POOL, 1.0));
        assert_eq!((side.retry_runs, side.untimed_runs, side.not_placed_runs), (1, 0, 0));
        assert_eq!(side.in_incidents, InIncidents::default());
    }
}

#[test]
fn a_job_waiting_in_another_pool_overlaps_nothing() {
    for by_queued_for in [true, false] {
        let side = Side::of(&record(&the_case(by_queued_for, Some("other")), &Windows::default()));
        assert_eq!(
            (
                side.gpu.retry_hours,
                side.gpu.queued_hours,
                side.gpu.while_others_waited_hours,
                side.gpu.overlap_hours
            ),
            (4.0, 3.0, 0.0, 0.0)
        );
        assert!(side.gpu.overlap_hours_by_pool.is_empty());
    }
}

/// A run whose pool is empty is in the default pool, as a run that names none (and as the
/// export writes Lookout's empty `job_run.pool`): the job waiting there overlaps the retry.
#[test]
fn a_run_of_an_empty_pool_is_in_the_default_pool() {
    for by_queued_for in [true, false] {
        let side = Side::of(&record(&the_case(by_queued_for, Some("")), &Windows::default()));
        assert_eq!((side.gpu.while_others_waited_hours, side.gpu.overlap_hours), (2.0, 1.0));
        let one = [(DEFAULT_POOL.to_string(), 1.0)].into_iter().collect();
        assert_eq!(side.gpu.overlap_hours_by_pool, one);
    }
}

/// A retry after a failed run ending inside an incident window counts in `inIncidents`; one
/// window that ends before the failure, not.
#[test]
fn a_retry_after_a_failure_in_an_incident_window_counts_apart() {
    let window = |from: i64, to: i64| Windows(vec![Window::given(Timestamp(from), Timestamp(to))]);
    let side = Side::of(&record(&the_case(true, None), &window(at(9, 50), at(10, 10))));
    assert_eq!(
        (side.in_incidents.gpu.retry_hours, side.in_incidents.gpu.overlap_hours),
        (4.0, 1.0)
    );
    assert_eq!(
        (side.in_incidents.cpu.retry_hours, side.in_incidents.cpu.overlap_hours),
        (2.0, 0.5)
    );
    // The window is half-open: a failure at its end is the next one's.
    let side = Side::of(&record(&the_case(true, None), &window(at(9, 0), at(10, 0))));
    assert_eq!(side.in_incidents, InIncidents::default());
}

/// A failed run without `startedAt` before one with it is placed as the incident windows
/// place failures, at the next run's start (docs/contention.md "The numbers"), not where the
/// count from submission ends it: the window that holds the next run's start holds it.
#[test]
fn a_failure_is_in_a_window_where_the_windows_place_it() {
    let window = |from: i64, to: i64| Windows(vec![Window::given(Timestamp(from), Timestamp(to))]);
    // Submitted at 10:00: the failed run counts 10:00–11:00 from submission, the retry
    // starts at 13:00 and runs an hour; another job waits 10:00–14:00.
    let records = [
        job(
            "x",
            1,
            at(10, 0),
            vec![
                run(0, 60, None, Outcome::Failed),
                started(at(13, 0), 60, None, Outcome::Succeeded),
            ],
        ),
        job("y", 1, at(10, 0), vec![run(240, 60, None, Outcome::Succeeded)]),
    ];
    let around_the_count = Side::of(&record(&records, &window(at(10, 30), at(11, 30))));
    assert_eq!(around_the_count.in_incidents, InIncidents::default());
    let around_the_retry = Side::of(&record(&records, &window(at(12, 30), at(13, 30))));
    assert_eq!(
        (
            around_the_retry.in_incidents.gpu.retry_hours,
            around_the_retry.in_incidents.gpu.overlap_hours
        ),
        (1.0, 1.0)
    );
}

/// A side counts the recorded runs it starts and the waits before them; its runs beyond the
/// record are counted, in no sum.
#[test]
fn a_side_counts_the_runs_it_starts() {
    let histories = the_case(true, None);
    let mut ends = Vec::new();
    let stops = JobRuns::of(&histories[0], Started { recorded: 1, beyond: 0 }, &mut ends);
    let b = JobRuns::of(&histories[1], Started::record(&histories[1]), &mut ends);
    let side = Side::of(&tally([&stops, &b], &Windows::default()));
    assert_eq!(
        (side.gpu.retry_hours, side.gpu.queued_hours, side.gpu.overlap_hours),
        (0.0, 3.0, 0.0)
    );
    assert_eq!(side.retry_runs, 0);
    let more = JobRuns::of(&histories[0], Started { recorded: 2, beyond: 3 }, &mut ends);
    let side = Side::of(&tally([&more, &b], &Windows::default()));
    assert_eq!(
        (side.gpu.overlap_hours, side.retry_runs, side.not_placed_runs),
        (1.0, 1, 3)
    );
    // A side's runs taken from the record's give the side's numbers read from the history.
    let whole = JobRuns::of(&histories[0], Started::record(&histories[0]), &mut ends);
    for (started, side) in [
        (Started { recorded: 1, beyond: 0 }, &stops),
        (Started { recorded: 2, beyond: 3 }, &more),
    ] {
        let (mut cut, mut read) = (Contention::default(), Contention::default());
        cut.add_started(&whole, started).unwrap();
        cut.add(&b).unwrap();
        read.add(side).unwrap();
        read.add(&b).unwrap();
        let windows = Windows::default();
        assert_eq!(
            Side::of(&cut.finish(&windows).unwrap()),
            Side::of(&read.finish(&windows).unwrap())
        );
    }
}

/// A run nothing places (no `startedAt`, no `submittedAt`) is counted, in no sum; so is a wait
/// next to it.
#[test]
fn untimed_runs_are_counted_in_no_sum() {
    let mut histories = the_case(true, None);
    histories[1].job.submitted_at = None;
    let side = Side::of(&record(&histories, &Windows::default()));
    assert_eq!((side.gpu.queued_hours, side.gpu.overlap_hours), (0.0, 0.0));
    assert_eq!((side.untimed_runs, side.retry_runs), (1, 1));
    assert_eq!(side.gpu.retry_hours, 4.0);
}

/// A job's own wait is not another job's: runs of one job that overlap in the record (a
/// retry still running while the job waits for a later run) count in `queuedHours` and the
/// overlap, but not in `whileOthersWaitedHours`.
#[test]
fn a_jobs_own_wait_is_not_another_jobs() {
    // Run 1 starts before run 0 ends (no wait), run 2 waits from run 1's end, 10:30, to 11:30.
    let h = job(
        "a",
        1,
        at(9, 0),
        vec![
            started(at(9, 0), 120, None, Outcome::Failed),
            started(at(10, 0), 30, None, Outcome::Failed),
            started(at(11, 30), 30, None, Outcome::Succeeded),
        ],
    );
    let t = record(std::slice::from_ref(&h), &Windows::default());
    assert_eq!((hours_of(t.gpu.queued), hours_of(t.gpu.retry)), (1.0, 1.0));
    assert_eq!((t.gpu.while_others_waited, t.gpu.overlap), (0, 0));
    let own = JobRuns {
        queue: "a".into(),
        gpu: 1000,
        cpu: 0,
        submitted: Some(at(9, 0)),
        runs: vec![
            span(DEFAULT_POOL, at(9, 0), at(9, 30)),
            // A retry running 9:30–12:00.
            span(DEFAULT_POOL, at(9, 30), at(12, 0)),
            // A run that started 10:00 and ended 10:30 …
            span(DEFAULT_POOL, at(10, 0), at(10, 30)),
            // … then the job waits 10:30–11:00 while its retry of 9:30 still runs.
            span(DEFAULT_POOL, at(11, 0), at(11, 10)),
        ],
        beyond: 0,
    };
    let t = tally([&own], &Windows::default());
    assert_eq!(hours_of(t.gpu.queued), 0.5);
    // Its retries ran 9:30–12:00, 10:00–10:30 and 11:00–11:10 while it waited 10:30–11:00:
    // the overlap is min(R, Q) = 1 GPU for half an hour, none of it another job's wait.
    assert_eq!(hours_of(t.gpu.overlap), 0.5);
    assert_eq!(t.gpu.while_others_waited, 0);
    // Another job waiting then too: the retry ran while another job waited.
    let other = JobRuns {
        queue: "b".into(),
        gpu: 1000,
        cpu: 0,
        submitted: Some(at(10, 30)),
        runs: vec![span(DEFAULT_POOL, at(11, 0), at(11, 5))],
        beyond: 0,
    };
    let t = tally([&own, &other], &Windows::default());
    assert_eq!(hours_of(t.gpu.while_others_waited), 0.5);
}

/// The splits add back to the overlap exactly, in whole units, when shares do not divide it.
#[test]
fn the_splits_add_back_to_the_overlap_exactly() {
    let retry = |queue: &str, gpu: u64| JobRuns {
        queue: queue.into(),
        gpu,
        cpu: 0,
        submitted: Some(0),
        runs: vec![span("p", 0, 1), span("p", 1, 8)],
        beyond: 0,
    };
    let wait = |queue: &str, gpu: u64| JobRuns {
        queue: queue.into(),
        gpu,
        cpu: 0,
        submitted: Some(1),
        runs: vec![span("p", 8, 9)],
        beyond: 0,
    };
    let jobs = [
        retry("r1", 1),
        retry("r2", 1),
        retry("r3", 1),
        wait("w1", 1),
        wait("w2", 2),
    ];
    let t = tally(&jobs, &Windows::default());
    // min(R = 3, Q = 3) × 7 ns.
    assert_eq!(t.gpu.overlap, 21);
    assert_eq!(t.gpu.overlap_by_waiting_queue.iter().sum::<u128>(), 21);
    assert_eq!(t.gpu.overlap_by_retrying_queue.iter().sum::<u128>(), 21);
    assert_eq!(t.gpu.overlap_by_pool.iter().sum::<u128>(), 21);
    // 21 × 1/3 and 21 × 2/3.
    let by_name = |parts: &[u128]| -> Vec<(String, u128)> {
        parts
            .iter()
            .zip(&t.names.queues)
            .filter(|(p, _)| **p > 0)
            .map(|(p, n)| (n.clone(), *p))
            .collect()
    };
    assert_eq!(
        by_name(&t.gpu.overlap_by_waiting_queue),
        [("w1".into(), 7), ("w2".into(), 14)]
    );
    assert_eq!(
        by_name(&t.gpu.overlap_by_retrying_queue),
        [("r1".into(), 7), ("r2".into(), 7), ("r3".into(), 7)]
    );
}

/// Past one chunk the events go through the temporary file and come back sorted: the same
/// numbers as in memory.
#[test]
fn a_spilled_sort_gives_the_same_numbers() {
    let histories = the_case(true, None);
    let jobs = record_jobs(&histories);
    let windows = Windows::default();
    let mut c = Contention::with_chunk(3);
    for j in &jobs {
        c.add(j).unwrap();
    }
    assert!(c.spilled());
    assert_eq!(c.finish(&windows).unwrap(), tally(&jobs, &windows));
}

/// A thousand sides (`tune`'s candidates) in one sort: one chunk and one temporary file for
/// them all, and each side's numbers what that side alone gives, a side with no event too.
#[test]
fn a_thousand_sides_share_one_spill_and_each_sums_as_alone() {
    let histories: Vec<FailureHistory> = (0..8)
        .flat_map(|k| {
            let mut case = the_case(k % 2 == 0, None);
            for h in &mut case {
                h.job.submitted_at = h.job.submitted_at.map(|t| Timestamp(t.0 + k * 7 * MINUTE));
            }
            case
        })
        .collect();
    let jobs = record_jobs(&histories);
    let windows = Windows::default();
    // Side `i` starts the first `i % 3` runs of each job: none, the first, both.
    let started = |i: usize, j: &JobRuns| Started {
        recorded: (i % 3).min(j.runs.len()),
        beyond: u32::from(i % 5 == 0),
    };
    let n = 1000;
    let mut all = Sides::with_chunk(n, 8);
    for j in &jobs {
        let each: Vec<Started> = (0..n).map(|i| started(i, j)).collect();
        all.add(j, &each).unwrap();
    }
    assert!(all.spilled());
    let tallies = all.finish(&windows).unwrap();
    assert_eq!(tallies.len(), n);
    for (i, t) in tallies.iter().enumerate().take(6) {
        let mut alone = Contention::default();
        for j in &jobs {
            alone.add_started(j, started(i, j)).unwrap();
        }
        assert_eq!(by_name(t), by_name(&alone.finish(&windows).unwrap()), "side {i}");
    }
    // The sides repeat every 15: the same numbers, far from the first chunk.
    assert_eq!(tallies[997], tallies[997 % 15]);
    assert!(Side::of(&tallies[2]).gpu.overlap_hours > 0.0);
    assert_eq!(Side::of(&tallies[0]).gpu.retry_hours, 0.0);
}

/// A job's wait that ends where its retry starts, and a retry that ends where the next wait
/// starts, in one pool, are one event each: seven events where there were ten, the same sums.
#[test]
fn a_jobs_changes_at_one_time_in_one_pool_are_one_event() {
    let h = job(
        "a",
        1,
        at(9, 0),
        vec![
            run(10, 30, None, Outcome::Failed),
            run(10, 30, None, Outcome::Failed),
            run(10, 30, None, Outcome::Succeeded),
        ],
    );
    let jobs = record_jobs(std::slice::from_ref(&h));
    let mut events = Vec::new();
    crate::replay::contention::events::events(&jobs[0], &mut Names::default(), &mut events);
    assert_eq!(events.len(), 10);
    crate::replay::contention::events::combine_from(&mut events, 0);
    let change = |wait, retry| Change { wait, retry, own: 0 };
    assert_eq!(
        events
            .iter()
            .map(|e| (e.t, e.change, e.after_failed))
            .collect::<Vec<_>>(),
        [
            (at(9, 0), change(1, 0), None),
            (at(9, 10), change(-1, 0), None),
            (at(9, 40), change(1, 0), None),
            (at(9, 50), change(-1, 1), Some(at(9, 40))),
            (at(10, 20), change(1, -1), Some(at(9, 40))),
            (at(10, 30), change(-1, 1), Some(at(10, 20))),
            (at(11, 0), change(0, -1), Some(at(10, 20))),
        ]
    );
    let mut c = Contention::default();
    c.add(&jobs[0]).unwrap();
    let window = Windows(vec![Window::given(Timestamp(at(9, 30)), Timestamp(at(9, 45)))]);
    assert_eq!(c.finish(&window).unwrap(), tally(&jobs, &window));
}

/// An event written after another reads back whole, whatever its numbers and the time
/// before it; bytes cut short or not an event's read as none.
#[test]
fn an_event_reads_back_from_its_bytes() {
    let events = [
        Event {
            t: -5,
            change: Kind::OwnEnd.into(),
            pool: 7,
            queue: u32::MAX,
            gpu: u64::MAX,
            cpu: 0,
            after_failed: Some(i64::MIN),
            set: 7,
        },
        Event {
            t: i64::MAX,
            change: Kind::WaitStart.into(),
            pool: 0,
            queue: 1,
            gpu: 1,
            cpu: 2,
            after_failed: None,
            set: u32::MAX,
        },
        Event {
            t: DAY,
            change: Kind::RetryStart.into(),
            pool: 3,
            queue: 2,
            gpu: 4000,
            cpu: 13_000,
            after_failed: Some(DAY - HOUR),
            set: 0,
        },
    ];
    let all = Widths::of(&events);
    for e in events {
        for widths in [all, Widths::of([&e])] {
            for before in [0, -1, i64::MIN, i64::MAX, e.t, DAY - MINUTE] {
                let mut room = [0; Event::WINDOW];
                let n = e.encode(before, widths, &mut room);
                assert!(n <= Event::MAX_BYTES);
                let mut b = room[..n].to_vec();
                assert_eq!(Event::decode(&b, before, widths), Some((e, b.len())));
                // What follows it is not read.
                b.push(0xff);
                assert_eq!(Event::decode(&b, before, widths), Some((e, b.len() - 1)));
                assert_eq!(Event::decode(&b[..b.len() - 2], before, widths), None);
            }
        }
    }
    // A 4-GPU retry an hour after its failed run, a minute after the event before: two bytes
    // of its kind and widths, the minute in nanoseconds 5, pool and queue 1 each, the
    // requests 2 each, the set none, the hour back 6; 19 in all, not 44.
    let mut room = [0; Event::WINDOW];
    assert_eq!(events[2].encode(DAY - MINUTE, Widths::of([&events[2]]), &mut room), 19);
    let none = Widths::default();
    assert_eq!(Event::decode(&[], 0, none), None);
    // A change there is not: each of its three parts is two bits, 0 to 2 (27 is 0b01_10_11).
    assert_eq!(Event::decode(&[27, 0], 0, none), None);
    assert!(Event::decode(&[26, 0], 0, none).is_some());
    // The sixteenth bit; a time's width past 8 bytes; a failed run's width with no failed run.
    assert_eq!(Event::decode(&[0, 0x80], 0, none), None);
    assert_eq!(Event::decode(&[0x80, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0, none), None);
    assert_eq!(Event::decode(&[0, 0x08, 0], 0, none), None);
}

/// Events whose times spread past what the chunk's sort packs in 64 bits beside each place
/// (years apart) come back in order all the same, from memory and from the file.
#[test]
fn events_years_apart_come_back_in_order() {
    let times = [i64::MAX, 0, i64::MIN, 5, -7, i64::MAX - 1, 1 << 62, -(1 << 62), 3, 5];
    for chunk in [3, Spill::CHUNK] {
        let mut spill = Spill::with_chunk(chunk);
        for (i, &t) in times.iter().enumerate() {
            let e = Event {
                t,
                change: Kind::WaitStart.into(),
                pool: 0,
                queue: 0,
                gpu: 1000,
                cpu: 0,
                after_failed: None,
                set: i as u32,
            };
            spill.add(|chunk| chunk.push(e)).unwrap();
        }
        let mut got = Vec::new();
        spill.drain(|e| got.push(e.t)).unwrap();
        let mut want = times.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "chunk {chunk}");
    }
}

/// Generated histories: the invariants, a shift in time, the spilled sort, and a test-side
/// reading of the definitions (every stretch between two times of the record enumerated).
mod generated {
    use std::collections::BTreeMap;

    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::replay::incidents;

    const QUEUES: [&str; 3] = ["q0", "q1", "q2"];
    const POOLS: [&str; 2] = ["default", "p1"];

    /// How a generated run says its start.
    #[derive(Debug, Clone)]
    enum Start {
        Queued(i64),
        Offset(i64),
        Absolute(i64),
    }

    fn a_run() -> impl Strategy<Value = Run> {
        (
            prop_oneof![
                4 => (0..90i64).prop_map(Start::Queued),
                1 => (0..600i64).prop_map(Start::Offset),
                1 => (0..700i64).prop_map(Start::Absolute),
            ],
            0..120i64,
            prop_oneof![Just(None), Just(Some("p1"))],
            prop_oneof![
                Just(Outcome::Failed),
                Just(Outcome::Succeeded),
                Just(Outcome::LeaseReturned)
            ],
        )
            .prop_map(|(start, ran, pool, outcome)| {
                let mut r = run(0, ran, pool, outcome);
                match start {
                    Start::Queued(m) => r.queued_for = minutes(m),
                    Start::Offset(m) => r.started_at = Some(StartedAt::Offset(minutes(m))),
                    Start::Absolute(m) => r.started_at = Some(StartedAt::Absolute(Timestamp(at(0, m)))),
                }
                r
            })
    }

    fn a_job() -> impl Strategy<Value = FailureHistory> {
        (
            0..QUEUES.len(),
            0..5u64,
            prop_oneof![Just(0u64), Just(500), Just(2000)],
            prop_oneof![9 => (0..600i64).prop_map(Some), 1 => Just(None)],
            vec(a_run(), 1..5),
        )
            .prop_map(|(queue, gpu, cpu, submitted, runs)| {
                let mut h = job(QUEUES[queue], gpu, at(0, 0), runs);
                h.job.submitted_at = submitted.map(|m| Timestamp(at(0, m)));
                h.job.resources = Some(Resources {
                    gpu_milli: Some(gpu * 1000),
                    cpu_milli: Some(cpu),
                    memory: None,
                });
                h
            })
    }

    fn a_window() -> impl Strategy<Value = Windows> {
        prop_oneof![
            Just(Windows::default()),
            (0..700i64, 1..200i64).prop_map(|(from, len)| Windows(vec![Window::given(
                Timestamp(at(0, from)),
                Timestamp(at(0, from + len))
            )])),
        ]
    }

    fn shifted(histories: &[FailureHistory], windows: &Windows, by: i64) -> (Vec<FailureHistory>, Windows) {
        let mut out = histories.to_vec();
        for h in &mut out {
            h.job.submitted_at = h.job.submitted_at.map(|t| Timestamp(t.0 + by));
            for r in &mut h.runs {
                if let Some(StartedAt::Absolute(t)) = r.started_at {
                    r.started_at = Some(StartedAt::Absolute(Timestamp(t.0 + by)));
                }
            }
        }
        let w = Windows(
            windows
                .0
                .iter()
                .map(|w| Window::given(Timestamp(w.from.0 + by), Timestamp(w.to.0 + by)))
                .collect(),
        );
        (out, w)
    }

    /// One interval a job waits or a retry runs, as the definitions read.
    struct Interval {
        from: i64,
        to: i64,
        pool: String,
        queue: String,
        job: usize,
        gpu: u64,
        cpu: u64,
        in_incidents: bool,
    }

    /// One resource's numbers in hours, by the definitions.
    #[derive(Debug, Default)]
    struct Reference {
        retry: f64,
        queued: f64,
        while_others_waited: f64,
        overlap: f64,
        by_waiting_queue: BTreeMap<String, f64>,
        by_retrying_queue: BTreeMap<String, f64>,
        by_pool: BTreeMap<String, f64>,
        in_incidents_retry: f64,
        in_incidents_overlap: f64,
    }

    /// docs/contention.md read straight: each run's start and end, the waits and retries as
    /// intervals, then every stretch between two consecutive times of any interval summed.
    fn reference(histories: &[FailureHistory], windows: &Windows, gpu: bool) -> Reference {
        let mut waits = Vec::new();
        let mut retries = Vec::new();
        let mut ends = Vec::new();
        for (j, h) in histories.iter().enumerate() {
            let submitted = h.job.submitted_at.map(|t| t.0);
            incidents::ends(h, &mut ends);
            let mut spans: Vec<Option<(i64, i64)>> = Vec::new();
            for (k, r) in h.runs.iter().enumerate() {
                let before: i64 = h.runs[..k].iter().map(|b| (b.queued_for.0 + b.run_for.0) as i64).sum();
                let start = match r.started_at {
                    Some(StartedAt::Absolute(t)) => Some(t.0),
                    Some(StartedAt::Offset(d)) => submitted.map(|s| s + d.0 as i64),
                    None => submitted.map(|s| s + before + r.queued_for.0 as i64),
                };
                spans.push(start.map(|s| (s, s + r.run_for.0 as i64)));
            }
            let res = h.job.resources.unwrap_or_default();
            let interval = |from: i64, to: i64, k: usize, in_incidents: bool| Interval {
                from,
                to,
                pool: h.runs[k].pool.clone().unwrap_or_else(|| "default".into()),
                queue: h.job.queue.clone().unwrap_or_default(),
                job: j,
                gpu: res.gpu_milli.unwrap_or(0),
                cpu: res.cpu_milli.unwrap_or(0),
                in_incidents,
            };
            for k in 0..h.runs.len() {
                let Some((s, e)) = spans[k] else { continue };
                let waited_from = if k == 0 { submitted } else { spans[k - 1].map(|p| p.1) };
                if let Some(f) = waited_from.filter(|&f| f < s) {
                    waits.push(interval(f, s, k, false));
                }
                if k > 0 && s < e {
                    let after_failure =
                        h.runs[k - 1].outcome == Outcome::Failed && ends[k - 1].is_some_and(|t| windows.contains(t));
                    retries.push(interval(s, e, k, after_failure));
                }
            }
        }
        let request = |i: &Interval| if gpu { i.gpu } else { i.cpu } as f64;
        let mut times: Vec<i64> = waits.iter().chain(&retries).flat_map(|i| [i.from, i.to]).collect();
        times.sort_unstable();
        times.dedup();
        let hours = |milli: f64, ns: i64| milli / 1000.0 * ns as f64 / 3.6e12;
        let mut out = Reference::default();
        for w in times.windows(2) {
            let (a, b) = (w[0], w[1]);
            let during = |i: &&Interval| i.from <= a && b <= i.to;
            for pool in POOLS {
                // A job waiting counts once, however many of its waits overlap.
                let mut waiting: Vec<&Interval> = waits.iter().filter(during).filter(|i| i.pool == pool).collect();
                waiting.sort_by_key(|i| i.job);
                waiting.dedup_by_key(|i| i.job);
                let running: Vec<&Interval> = retries.iter().filter(during).filter(|i| i.pool == pool).collect();
                let q: f64 = waiting.iter().map(|i| request(i)).sum();
                let r: f64 = running.iter().map(|i| request(i)).sum();
                let r_inc: f64 = running.iter().filter(|i| i.in_incidents).map(|i| request(i)).sum();
                out.retry += hours(r, b - a);
                out.queued += hours(q, b - a);
                for i in &running {
                    if waiting.iter().any(|w| w.job != i.job && request(w) > 0.0) {
                        out.while_others_waited += hours(request(i), b - a);
                    }
                }
                let m = hours(r.min(q), b - a);
                out.overlap += m;
                out.in_incidents_retry += hours(r_inc, b - a);
                out.in_incidents_overlap += hours(r_inc.min(q), b - a);
                if m > 0.0 {
                    *out.by_pool.entry(pool.to_string()).or_default() += m;
                    for i in &waiting {
                        *out.by_waiting_queue.entry(i.queue.clone()).or_default() += m * request(i) / q;
                    }
                    for i in &running {
                        *out.by_retrying_queue.entry(i.queue.clone()).or_default() += m * request(i) / r;
                    }
                }
            }
        }
        out
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    fn close_maps(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> bool {
        let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        keys.into_iter()
            .all(|k| close(a.get(k).copied().unwrap_or(0.0), b.get(k).copied().unwrap_or(0.0)))
    }

    /// `histories` through a spill of `chunk` events give what they give in memory.
    fn spilled_as_in_memory(
        histories: &[FailureHistory],
        windows: &Windows,
        chunk: usize,
    ) -> Result<(), TestCaseError> {
        let mut ends = Vec::new();
        let jobs: Vec<JobRuns> = histories
            .iter()
            .map(|h| JobRuns::of(h, Started::record(h), &mut ends))
            .collect();
        let mut c = Contention::with_chunk(chunk);
        for j in &jobs {
            c.add(j).unwrap();
        }
        prop_assert_eq!(c.finish(windows).unwrap(), tally(&jobs, windows));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn the_overlap_is_within_both_totals_and_its_splits_add_back(
            histories in vec(a_job(), 0..12),
            windows in a_window(),
        ) {
            let t = record(&histories, &windows);
            for s in [&t.gpu, &t.cpu] {
                prop_assert!(s.overlap <= s.retry && s.overlap <= s.queued);
                prop_assert!(s.while_others_waited <= s.retry);
                prop_assert!(s.in_incidents_retry <= s.retry);
                prop_assert!(s.in_incidents_overlap <= s.overlap);
                prop_assert_eq!(s.overlap_by_waiting_queue.iter().sum::<u128>(), s.overlap);
                prop_assert_eq!(s.overlap_by_retrying_queue.iter().sum::<u128>(), s.overlap);
                prop_assert_eq!(s.overlap_by_pool.iter().sum::<u128>(), s.overlap);
            }
        }

        #[test]
        fn a_shift_of_every_time_changes_nothing(
            histories in vec(a_job(), 0..12),
            windows in a_window(),
            by in -10_000_000_000_000_000i64..10_000_000_000_000_000,
        ) {
            let (moved, moved_windows) = shifted(&histories, &windows, by);
            prop_assert_eq!(record(&moved, &moved_windows), record(&histories, &windows));
        }

        #[test]
        fn the_spilled_sort_gives_what_memory_gives(
            histories in vec(a_job(), 0..12),
            windows in a_window(),
            chunk in 1..8usize,
        ) {
            spilled_as_in_memory(&histories, &windows, chunk)?;
        }

        /// A record of hundreds of jobs in chunks of hundreds of events (each written at the
        /// widths of its own numbers) gives what memory gives.
        #[test]
        fn a_long_record_spilled_in_long_chunks_gives_what_memory_gives(
            histories in vec(a_job(), 100..300),
            windows in a_window(),
            chunk in 256..1024usize,
        ) {
            spilled_as_in_memory(&histories, &windows, chunk)?;
        }

        /// Sides swept together, each starting its own runs of each job (all, some, none, or
        /// more than the record holds), the events of the sides that start the same runs
        /// written once: each side sums what it sums run alone, exactly.
        #[test]
        fn sides_starting_different_runs_each_sum_as_alone(
            histories in vec(a_job(), 0..10),
            windows in a_window(),
            picks in vec(vec((0..6usize, 0..3u32), 4), 10),
            chunk in prop_oneof![1..16usize, Just(Spill::CHUNK)],
        ) {
            let n = 4;
            let started = |j: usize, i: usize| Started { recorded: picks[j][i].0, beyond: picks[j][i].1 };
            let jobs = record_jobs(&histories);
            let mut all = Sides::with_chunk(n, chunk);
            for (j, job) in jobs.iter().enumerate() {
                let each: Vec<Started> = (0..n).map(|i| started(j, i)).collect();
                all.add(job, &each).unwrap();
            }
            let tallies = all.finish(&windows).unwrap();
            prop_assert_eq!(tallies.len(), n);
            let mut ends = Vec::new();
            for (i, t) in tallies.iter().enumerate() {
                let alone: Vec<JobRuns> = histories
                    .iter()
                    .enumerate()
                    .map(|(j, h)| JobRuns::of(h, started(j, i), &mut ends))
                    .collect();
                let want = tally(&alone, &windows);
                prop_assert_eq!(by_name(t), by_name(&want), "side {}", i);
                prop_assert_eq!(Side::of(t), Side::of(&want), "side {}", i);
            }
        }

        #[test]
        fn the_sweep_agrees_with_the_definitions_read_straight(
            histories in vec(a_job(), 0..10),
            windows in a_window(),
        ) {
            let side = Side::of(&record(&histories, &windows));
            for (gpu, got, incidents) in [
                (true, &side.gpu, &side.in_incidents.gpu),
                (false, &side.cpu, &side.in_incidents.cpu),
            ] {
                let want = reference(&histories, &windows, gpu);
                prop_assert!(close(got.retry_hours, want.retry), "retry {} {:?}", got.retry_hours, want);
                prop_assert!(close(got.queued_hours, want.queued), "queued {} {:?}", got.queued_hours, want);
                prop_assert!(
                    close(got.while_others_waited_hours, want.while_others_waited),
                    "while others waited {} {:?}", got.while_others_waited_hours, want
                );
                prop_assert!(close(got.overlap_hours, want.overlap), "overlap {} {:?}", got.overlap_hours, want);
                prop_assert!(close_maps(&got.overlap_hours_by_waiting_queue, &want.by_waiting_queue));
                prop_assert!(close_maps(&got.overlap_hours_by_retrying_queue, &want.by_retrying_queue));
                prop_assert!(close_maps(&got.overlap_hours_by_pool, &want.by_pool));
                prop_assert!(close(incidents.retry_hours, want.in_incidents_retry));
                prop_assert!(close(incidents.overlap_hours, want.in_incidents_overlap));
            }
        }
    }
}
