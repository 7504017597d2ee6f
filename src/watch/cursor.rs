//! Where `watch` is in Lookout's record, and which jobs it has counted (docs/watch.md
//! "Durable"): the cursor, the span read again at each poll, and the jobs of that span
//! counted already.
//!
//! Owns: [`Cursor`] (the last job counted, in the order (`last_transition_time`, `job_id`) of
//! Lookout's index), [`REREAD`], where reading starts within the database's clock
//! ([`on_the_database_clock`]), and [`CountedJobs`] (the jobs counted within [`REREAD`] of the
//! cursor: each a (time, 64-bit hash of its id) pair, so that memory follows the rate of jobs
//! over five minutes, not the number of jobs ever seen). Must not: read Lookout or a clock:
//! times are given, in microseconds since the Unix epoch, as Lookout stores them.
//!
//! Why a hash and not the id: a burst of 100,000 jobs within five minutes is 1.6 MB of pairs
//! against 5 MB of ids and their allocations. Two ids of one instant hashing alike (one chance
//! in 2^64 per pair) would leave the second uncounted; a clock of the same five minutes holds a
//! few thousand jobs on the busiest clusters, so the odds stay below one in 10^12 a poll.

use std::collections::BTreeSet;

/// How far before the cursor each poll reads again by default (microseconds; `--lookback`):
/// rows Lookout ingests late, with a `last_transition_time` before the cursor, are read then,
/// and the jobs of the span counted already are skipped.
pub const REREAD: i64 = 5 * 60 * 1_000_000;

/// The last job counted: its `last_transition_time` (microseconds since the Unix epoch) and id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    pub at: i64,
    pub job: String,
}

/// The jobs counted within [`REREAD`] of the cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountedJobs {
    jobs: BTreeSet<(i64, u64)>,
}

/// The hash a job id is kept as (XXH3, 64 bits: a fixed algorithm, so a state file reads the
/// same with any build).
pub fn hash(job: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(job.as_bytes())
}

impl CountedJobs {
    /// Whether the job `job` of time `at` was counted.
    pub fn contains(&self, at: i64, job: &str) -> bool {
        self.jobs.contains(&(at, hash(job)))
    }

    /// The job `job` of time `at` is counted.
    pub fn insert(&mut self, at: i64, job: &str) {
        self.jobs.insert((at, hash(job)));
    }

    /// Forgets the jobs before `from`: no poll reads them again.
    pub fn forget_before(&mut self, from: i64) {
        self.jobs = self.jobs.split_off(&(from, 0));
    }

    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Every pair, in order (for `--state`).
    pub fn pairs(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.jobs.iter().copied()
    }

    /// The set of `pairs` (read back from `--state`).
    pub fn of_pairs(pairs: impl IntoIterator<Item = (i64, u64)>) -> CountedJobs {
        CountedJobs {
            jobs: pairs.into_iter().collect(),
        }
    }
}

/// Where a poll starts reading: `span` (the re-read span) before the cursor, or `start` (the
/// time a fresh state begins at: `--since`, or when `watch` first ran) while nothing is
/// counted.
pub fn read_from(cursor: Option<&Cursor>, start: i64, span: i64) -> i64 {
    match cursor {
        Some(c) => c.at.saturating_sub(span),
        None => start,
    }
}

/// What [`on_the_database_clock`] moved back within the database's clock, for the warning
/// that says so (times in microseconds since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// The cursor (from `--state`) lay at `was`, past the database's now: it is now that, and a
    /// poll reads from the re-read span before it.
    Cursor { was: i64 },
    /// The start of a state that counted nothing (a `--since` time, or a `--state`'s start) lay
    /// at `was`, past the database's now: it is the re-read span before it.
    Start { was: i64 },
    /// The start was counted back from the machine's clock (`--since DURATION`, or now), which
    /// read `machine` then, ahead of the database's now: it is counted back from the
    /// database's now instead (by the re-read span at least).
    Counted { machine: i64 },
}

/// Keeps where a poll reads from within the database's clock `now`, so that no job is skipped
/// for a clock that runs ahead of it (a cursor the machine's clock or a skewed row put there,
/// a fresh start counted from the machine's clock): a cursor past `now` is moved to `now`; a
/// start (while nothing is counted) past it, to `now` less `span` (the re-read span); a start
/// counted back `back` from the machine's clock (`--since DURATION`, 0 for now; `None` for a
/// time) when that clock ran ahead of `now`, to `now` less `back`, or less `span` when that is
/// longer. What moved, if anything.
pub fn on_the_database_clock(
    cursor: &mut Option<Cursor>,
    start: &mut i64,
    back: Option<i64>,
    now: i64,
    span: i64,
) -> Option<Moved> {
    if let Some(c) = cursor {
        if c.at <= now {
            return None;
        }
        let was = c.at;
        *c = Cursor {
            at: now,
            job: String::new(),
        };
        return Some(Moved::Cursor { was });
    }
    match back {
        Some(back) => {
            let machine = start.saturating_add(back);
            if machine <= now {
                return None;
            }
            *start = now.saturating_sub(back.max(span));
            Some(Moved::Counted { machine })
        }
        None if *start > now => {
            let was = *start;
            *start = now.saturating_sub(span);
            Some(Moved::Start { was })
        }
        None => None,
    }
}

/// After a page is counted: the cursor moves to `last` when it is further (a page read again
/// from before the cursor leaves it), and the jobs it leaves `span` (the re-read span) behind
/// are forgotten.
pub fn advance(cursor: &mut Option<Cursor>, seen: &mut CountedJobs, last: Cursor, span: i64) {
    if cursor.as_ref().is_none_or(|c| last > *c) {
        *cursor = Some(last);
    }
    if let Some(c) = cursor {
        seen.forget_before(c.at.saturating_sub(span));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> i64 {
        minutes * 60 * 1_000_000
    }

    #[test]
    fn a_poll_reads_five_minutes_back_and_skips_what_it_counted() {
        let mut cursor = None;
        let mut seen = CountedJobs::default();
        assert_eq!(read_from(cursor.as_ref(), at(100), REREAD), at(100));
        for (t, id) in [(101, "a"), (102, "b"), (103, "c")] {
            seen.insert(at(t), id);
        }
        advance(
            &mut cursor,
            &mut seen,
            Cursor {
                at: at(103),
                job: "c".into(),
            },
            REREAD,
        );
        assert_eq!(read_from(cursor.as_ref(), at(0), REREAD), at(98));
        // A late row of minute 101 is new; the jobs counted are known by time and id.
        assert!(seen.contains(at(101), "a"));
        assert!(!seen.contains(at(101), "late"));
        assert!(!seen.contains(at(102), "a"));
        // The cursor moves on: what falls five minutes behind it is forgotten.
        seen.insert(at(107), "d");
        advance(
            &mut cursor,
            &mut seen,
            Cursor {
                at: at(107),
                job: "d".into(),
            },
            REREAD,
        );
        assert!(!seen.contains(at(101), "a"));
        assert!(seen.contains(at(102), "b") && seen.contains(at(107), "d"));
        assert_eq!(seen.len(), 3);
        // A page read again from before the cursor does not move it back.
        advance(
            &mut cursor,
            &mut seen,
            Cursor {
                at: at(104),
                job: "zz".into(),
            },
            REREAD,
        );
        assert_eq!(
            cursor,
            Some(Cursor {
                at: at(107),
                job: "d".into()
            })
        );
    }

    #[test]
    fn nothing_starts_past_the_database_s_clock() {
        let now = at(1000);
        let span = REREAD;
        // A cursor past it is moved to it; one before it stays.
        let mut cursor = Some(Cursor {
            at: at(1010),
            job: "j".into(),
        });
        let mut start = at(1);
        assert_eq!(
            on_the_database_clock(&mut cursor, &mut start, None, now, span),
            Some(Moved::Cursor { was: at(1010) })
        );
        assert_eq!(
            cursor,
            Some(Cursor {
                at: now,
                job: "".into()
            })
        );
        assert_eq!(on_the_database_clock(&mut cursor, &mut start, Some(0), now, span), None);
        assert_eq!(start, at(1));
        // A start past it (a time, a state's), while nothing is counted: the span before it.
        let mut none = None;
        let mut start = at(1002);
        assert_eq!(
            on_the_database_clock(&mut none, &mut start, None, now, span),
            Some(Moved::Start { was: at(1002) })
        );
        assert_eq!(start, at(995));
        let mut start = at(999);
        assert_eq!(on_the_database_clock(&mut none, &mut start, None, now, span), None);
        assert_eq!(start, at(999));
        // Now on a machine 2 hours ahead: the span before the database's now.
        let mut start = at(1120);
        assert_eq!(
            on_the_database_clock(&mut none, &mut start, Some(0), now, span),
            Some(Moved::Counted { machine: at(1120) })
        );
        assert_eq!(start, at(995));
        // A week back on it: a week back from the database's now; once moved, it stays.
        let week = at(7 * 24 * 60);
        let mut start = at(1120) - week;
        assert_eq!(
            on_the_database_clock(&mut none, &mut start, Some(week), now, span),
            Some(Moved::Counted { machine: at(1120) })
        );
        assert_eq!(start, now - week);
        assert_eq!(
            on_the_database_clock(&mut none, &mut start, Some(week), now, span),
            None
        );
        // A machine behind the database (or a second's drift the other way): untouched.
        let mut start = at(990) - week;
        assert_eq!(
            on_the_database_clock(&mut none, &mut start, Some(week), now, span),
            None
        );
        assert_eq!(start, at(990) - week);
    }

    #[test]
    fn ties_in_time_order_by_id() {
        let mut cursor = Some(Cursor { at: 5, job: "b".into() });
        advance(
            &mut cursor,
            &mut CountedJobs::default(),
            Cursor { at: 5, job: "c".into() },
            REREAD,
        );
        assert_eq!(cursor.as_ref().map(|c| c.job.as_str()), Some("c"));
        advance(
            &mut cursor,
            &mut CountedJobs::default(),
            Cursor { at: 5, job: "a".into() },
            REREAD,
        );
        assert_eq!(cursor.as_ref().map(|c| c.job.as_str()), Some("c"));
    }

    #[test]
    fn the_hash_is_xxh3_64() {
        // XXH3-64's published value of the empty input: a state file written by one build is
        // read by another.
        assert_eq!(hash(""), 0x2D06_8005_38D3_94C2);
        assert_ne!(hash("job-1"), hash("job-2"));
    }
}
