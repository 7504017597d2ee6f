//! The jobs Lookout ingests late (docs/watch.md "What it reads"): a row whose
//! `last_transition_time` lies further behind the cursor than the span each poll reads again
//! (`--lookback`) when Lookout writes it is never read. Lookout's rows say when a job ended,
//! not when they were written, so such a job is found by counting: each poll counts the
//! terminal jobs of the watched queues behind that span, by hour of their time, and those an
//! hour holds more than the poll before counted in the same range appeared there since.
//!
//! Owns: [`Behind`] (the last count, kept in `--state`), [`Behind::range`] (where the next
//! count runs) and [`Behind::look`] (a count against the last: the late jobs, by queue, with
//! the hour of the oldest). Must not: read Lookout or a clock: the counts and times are given,
//! in microseconds since the Unix epoch.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::hour::HOUR;

/// The terminal jobs of each queue behind the re-read span, by hour, as the last poll counted
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Behind {
    /// The range counted, `[from, to)`.
    from: i64,
    to: i64,
    /// Its jobs, by queue, then by the start of their hour.
    counts: BTreeMap<String, BTreeMap<i64, u64>>,
}

/// One row of a count: a queue's jobs of one hour, in the last count's range and in the next's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourCount {
    pub queue: String,
    /// The hour's start.
    pub hour: i64,
    /// Its jobs within [`Behind::last`] (0 when there is none).
    pub last: u64,
    /// Its jobs within the next range.
    pub next: u64,
}

/// The jobs of a queue that appeared behind the re-read span since the last count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    pub queue: String,
    pub jobs: u64,
    /// The oldest ended within `[from, to)`: the earliest hour that gained a job, within the
    /// range counted.
    pub oldest: (i64, i64),
}

impl Behind {
    /// Where a count runs: behind `read_from` (where the poll read from), back `window` from it
    /// and never before `start` (a state's start: a job before it is not watch's). Empty while
    /// nothing is counted (`read_from` is then the start itself).
    pub fn range(read_from: i64, start: i64, window: i64) -> (i64, i64) {
        (read_from.saturating_sub(window).max(start).min(read_from), read_from)
    }

    /// The range last counted, if any.
    pub fn last(&self) -> Option<(i64, i64)> {
        (self.from < self.to || !self.counts.is_empty()).then_some((self.from, self.to))
    }

    /// Takes a count (`rows`, over the last range and `next`): the jobs each hour of the last
    /// range holds more than it did, by queue (the first count finds none: it has nothing to
    /// compare with); `next`'s counts are kept for the next look. An hour that holds fewer (the
    /// oldest rows pruned) hides nothing of another.
    pub fn look(&mut self, rows: &[HourCount], next: (i64, i64)) -> Vec<Late> {
        let compared = self.last().is_some();
        let mut late: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
        let mut counts: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
        for r in rows {
            let before = self
                .counts
                .get(&r.queue)
                .and_then(|h| h.get(&r.hour))
                .copied()
                .unwrap_or(0);
            if compared && r.last > before {
                let e = late.entry(r.queue.as_str()).or_insert((0, r.hour));
                e.0 += r.last - before;
                e.1 = e.1.min(r.hour);
            }
            if r.next > 0 {
                counts.entry(r.queue.clone()).or_default().insert(r.hour, r.next);
            }
        }
        let out = late
            .into_iter()
            .map(|(queue, (jobs, hour))| Late {
                queue: queue.to_string(),
                jobs,
                oldest: (hour.max(self.from), hour.saturating_add(HOUR).min(self.to)),
            })
            .collect();
        *self = Behind {
            from: next.0,
            to: next.1,
            counts,
        };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60 * 1_000_000;

    fn row(queue: &str, hour: i64, last: u64, next: u64) -> HourCount {
        HourCount {
            queue: queue.into(),
            hour: hour * HOUR,
            last,
            next,
        }
    }

    #[test]
    fn the_range_lies_behind_the_span_within_the_window_and_the_start() {
        assert_eq!(Behind::range(100 * MIN, 0, 60 * MIN), (40 * MIN, 100 * MIN));
        assert_eq!(Behind::range(100 * MIN, 70 * MIN, 60 * MIN), (70 * MIN, 100 * MIN));
        // Nothing counted yet: the poll reads from the start, and nothing lies behind it.
        assert_eq!(Behind::range(70 * MIN, 70 * MIN, 60 * MIN), (70 * MIN, 70 * MIN));
        assert_eq!(Behind::range(60 * MIN, 70 * MIN, 60 * MIN), (60 * MIN, 60 * MIN));
    }

    #[test]
    fn jobs_that_appeared_behind_the_span_are_late_and_said_with_the_oldest_hour() {
        let mut b = Behind::default();
        // The first count has nothing to compare with.
        assert_eq!(b.look(&[row("ml", 1, 0, 30)], (HOUR + 10 * MIN, 2 * HOUR)), []);
        assert_eq!(b.last(), Some((HOUR + 10 * MIN, 2 * HOUR)));
        // 20 more in hour 1 (the range's part of it), 5 in hour 2 and 2 on `batch`; an hour
        // pruned of 7 rows hides nothing.
        let rows = [
            row("ml", 1, 50, 50),
            row("ml", 2, 0, 5),
            row("batch", 1, 2, 2),
            row("ml", 0, 0, 0),
        ];
        let late = b.look(&rows, (HOUR + 10 * MIN, 2 * HOUR + 30 * MIN));
        assert_eq!(
            late,
            [
                Late {
                    queue: "batch".into(),
                    jobs: 2,
                    oldest: (HOUR + 10 * MIN, 2 * HOUR)
                },
                Late {
                    queue: "ml".into(),
                    jobs: 20,
                    oldest: (HOUR + 10 * MIN, 2 * HOUR)
                },
            ]
        );
        // The same count again: nothing new; fewer (pruned): nothing either.
        let rows = [row("ml", 1, 43, 43), row("ml", 2, 5, 5), row("batch", 1, 2, 2)];
        assert_eq!(b.look(&rows, (HOUR + 10 * MIN, 2 * HOUR + 30 * MIN)), []);
    }
}
