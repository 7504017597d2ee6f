//! `watch`'s reads of Lookout's database (docs/watch.md): the jobs that reached a terminal
//! state, page after page by the key (`last_transition_time`, `job_id`), and the rows of a
//! page's jobs decoded as the parent decodes a queue's export.
//!
//! Owns: [`terminal_page`], [`jobs_in`], [`jobs_by_id`], [`terminal_jobs`], [`database_now`],
//! [`behind`] (the count of the jobs behind `watch`'s re-read span). Must not: keep a cursor
//! (that is `watch`'s state) or map rows to histories.

use super::db::{by_key, copy_jobs, key_bytes, key_literal, key_of, literal, Db, RawText, COLUMNS};
use crate::error::CliError;
use crate::lookout::Item;
use crate::model::failure_history::Timestamp;
use crate::watch::late::HourCount;

/// Lookout's terminal job states (contract/lookout/README.md): SUCCEEDED, FAILED, CANCELLED,
/// PREEMPTED and REJECTED. A job in one of them runs no more, so `watch` reads it once.
pub const TERMINAL_STATES: [i16; 5] = [4, 5, 6, 7, 9];

/// How far ahead of the database's clock a `last_transition_time` may be and still be read:
/// a job stamped later (a skewed clock, a hostile row) waits until then, instead of moving a
/// reader's cursor past every job to come.
const AHEAD: &str = "interval '1 hour'";

/// A job that reached a terminal state, as [`terminal_page`] lists it: its id and queue, its
/// `job.state`, and its `job.last_transition_time` in microseconds since the Unix epoch
/// (Lookout's own precision: a cursor kept in it compares exactly with the column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminal {
    /// Its id, as [`super::db::key_of`] keeps it (an id that is not UTF-8 as its bytes in hex: the
    /// next page is read after them exactly).
    pub job_id: String,
    pub queue: String,
    pub state: i16,
    pub at: i64,
}

/// The statement of [`terminal_page`]: the index `idx_job_ltt_jobid` (`last_transition_time`,
/// `job_id`) read in order from the key after which the page starts. The time is read back in
/// whole microseconds by integer arithmetic (seconds, then the microseconds within the second),
/// so that a cursor made of it is the column's value exactly, whatever the server's
/// floating-point `EXTRACT`.
const TERMINAL_PAGE: &str = "SELECT job_id, queue, state, \
     EXTRACT(EPOCH FROM date_trunc('second', last_transition_time))::bigint * 1000000 \
     + EXTRACT(MICROSECONDS FROM last_transition_time)::bigint % 1000000 \
     FROM job WHERE queue = ANY($1) AND state = ANY($2) \
     AND (last_transition_time, job_id) > ($3::text::timestamp, $4) \
     AND last_transition_time < (now() AT TIME ZONE 'UTC') + ";

/// At most `limit` jobs of `queues` that reached a terminal state ([`TERMINAL_STATES`]) after
/// `after` (microseconds since the Unix epoch and a job id; `""` for every job of that
/// instant), in the order of (`last_transition_time`, `job_id`). A page, not a stream: the
/// caller reads the jobs' rows with [`jobs_in`] and asks for the next page after the last.
pub fn terminal_page(db: &Db, queues: &[String], after: (i64, &str), limit: usize) -> Result<Vec<Terminal>, CliError> {
    let statement = format!("{TERMINAL_PAGE}{AHEAD} ORDER BY last_transition_time, job_id LIMIT $5");
    // Lookout's `timestamp` columns are UTC without a zone: the zone of the text is ignored.
    let from = Timestamp(after.0.saturating_mul(1000)).to_string();
    let states = TERMINAL_STATES.to_vec();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // The key's exact bytes, whatever they are: a page that ends at an id that is not UTF-8
    // goes on after it, never reads it again.
    let after_id = RawText(key_bytes(after.1).into_owned());
    let rows = db.wait(
        db.client
            .query(statement.as_str(), &[&queues, &states, &from, &after_id, &limit]),
    )?;
    Ok(rows
        .iter()
        .map(|r| Terminal {
            job_id: key_of(&r.get::<_, RawText>(0).0),
            queue: String::from_utf8_lossy(&r.get::<_, RawText>(1).0).into_owned(),
            state: r.get(2),
            at: r.get(3),
        })
        .collect())
}

/// The database's own clock, in microseconds since the Unix epoch, as [`terminal_page`] reads
/// `last_transition_time` (UTC, in whole microseconds): `watch`'s cursor never runs past it.
pub fn database_now(db: &Db) -> Result<i64, CliError> {
    let row = db.wait(db.client.query_one(
        "SELECT EXTRACT(EPOCH FROM date_trunc('second', now() AT TIME ZONE 'UTC'))::bigint * 1000000 \
         + EXTRACT(MICROSECONDS FROM now() AT TIME ZONE 'UTC')::bigint % 1000000",
        &[],
    ))?;
    Ok(row.get(0))
}

/// The statement of [`behind`]: the terminal jobs of `queues` in two ranges of
/// `last_transition_time` (`[$3, $4)`, `[$5, $6)`), by queue and hour, counted by the index on
/// it (`idx_job_ltt_jobid`, over both ranges: `[$7, $8)`); no job's row is read out.
const BEHIND: &str = "SELECT queue, \
     EXTRACT(EPOCH FROM date_trunc('hour', last_transition_time))::bigint * 1000000, \
     count(*) FILTER (WHERE last_transition_time >= $3::text::timestamp AND last_transition_time < $4::text::timestamp), \
     count(*) FILTER (WHERE last_transition_time >= $5::text::timestamp AND last_transition_time < $6::text::timestamp) \
     FROM job WHERE queue = ANY($1) AND state = ANY($2) \
     AND last_transition_time >= $7::text::timestamp AND last_transition_time < $8::text::timestamp \
     GROUP BY 1, 2";

/// The terminal jobs of `queues` ([`TERMINAL_STATES`]) by queue and hour of their
/// `last_transition_time`, within `last` and within `next` (`[from, to)`, microseconds since
/// the Unix epoch): `watch`'s count of the jobs behind its re-read span
/// (`watch::late::Behind::look`).
pub fn behind(
    db: &Db,
    queues: &[String],
    last: Option<(i64, i64)>,
    next: (i64, i64),
) -> Result<Vec<HourCount>, CliError> {
    let last = last.unwrap_or((next.0, next.0));
    let (from, to) = (last.0.min(next.0), last.1.max(next.1));
    let text = |at: i64| Timestamp(at.saturating_mul(1000)).to_string();
    let states = TERMINAL_STATES.to_vec();
    let rows = db.wait(db.client.query(
        BEHIND,
        &[
            &queues,
            &states,
            &text(last.0),
            &text(last.1),
            &text(next.0),
            &text(next.1),
            &text(from),
            &text(to),
        ],
    ))?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(rows
        .iter()
        .map(|r| HourCount {
            queue: String::from_utf8_lossy(&r.get::<_, RawText>(0).0).into_owned(),
            hour: r.get(1),
            last: count(r.get(2)),
            next: count(r.get(3)),
        })
        .collect())
}

/// A page of [`terminal_page`] by its bounds: the key it was read after, and its last key
/// (microseconds since the Unix epoch and a job id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span<'k> {
    pub after: (i64, &'k str),
    pub last: (i64, &'k str),
}

/// The statement of [`jobs_in`]: the rows of the jobs of `queues` in a terminal state whose key
/// lies in `span`, read as [`terminal_page`] read their keys (the index `idx_job_ltt_jobid`,
/// by range), each job's runs looked up by its id. A range, not a list of the page's ids: the
/// statement stays a few hundred bytes whatever the page, and the jobs are found by one scan
/// of the index instead of one lookup each. In the index's order, which a job's rows share:
/// the server sends each job's rows as it finds them, where an order of its own (`job_id`)
/// would have it sort the whole page first while the replay waits.
pub(super) fn span_statement(queues: &[String], span: Span<'_>) -> Result<String, CliError> {
    let queues = queues
        .iter()
        .map(|q| literal("queue", q))
        .collect::<Result<Vec<_>, _>>()?;
    let states: Vec<String> = TERMINAL_STATES.iter().map(i16::to_string).collect();
    // Lookout's `timestamp` columns are UTC without a zone: the zone of the text is ignored.
    let key = |(at, id): (i64, &str)| -> Result<String, CliError> {
        Ok(format!(
            "(E'{}'::timestamp, {})",
            Timestamp(at.saturating_mul(1000)),
            key_literal(id)?
        ))
    };
    Ok(format!(
        "COPY (SELECT {COLUMNS} FROM job j LEFT JOIN job_run r ON r.job_id = j.job_id \
         WHERE j.queue = ANY(ARRAY[{}]::text[]) AND j.state IN ({}) \
         AND (j.last_transition_time, j.job_id) > {} AND (j.last_transition_time, j.job_id) <= {} \
         ORDER BY j.last_transition_time, j.job_id) TO STDOUT (FORMAT binary)",
        queues.join(", "),
        states.join(", "),
        key(span.after)?,
        key(span.last)?
    ))
}

/// The jobs of a page of [`terminal_page`] (its `span`), each with all its runs, decoded as
/// `jobs` decodes an export (each job's queue from its row), and only those `wanted`: a job
/// that reached its terminal state inside the span after the page's keys were read (a late
/// row) is not the page's, and a job the caller counted already is not counted twice: both
/// are left out of the stream, before anything maps or replays them. One statement ([`span_statement`]), the runs looked up by key ([`by_key`]). A
/// statement that fails ends the stream with its error, as a lost connection ends `jobs`'.
pub fn jobs_in<'a>(
    db: std::sync::Arc<Db>,
    queues: &[String],
    span: Span<'_>,
    wanted: std::collections::HashSet<String>,
) -> crate::lookout::JobStream<'a> {
    let stream = match by_key(&db)
        .and_then(|()| span_statement(queues, span))
        .and_then(|s| copy_jobs(db, &s))
    {
        Ok(stream) => stream,
        Err(e) => return Box::new(std::iter::once(Err(e.into()))),
    };
    Box::new(stream.filter(move |item| match item {
        Ok(Item::Job(j)) => wanted.contains(&j.job.job_id),
        Ok(Item::Bad(e)) => wanted.contains(e.job_key()),
        Err(_) => true,
    }))
}

/// The statement of [`jobs_by_id`]: the rows of the jobs `ids` names, each job's runs looked up
/// by its id.
pub(super) fn ids_statement(ids: &[String]) -> Result<String, CliError> {
    let ids = ids.iter().map(|id| key_literal(id)).collect::<Result<Vec<_>, _>>()?;
    Ok(format!(
        "COPY (SELECT {COLUMNS} FROM job j LEFT JOIN job_run r ON r.job_id = j.job_id \
         WHERE j.job_id IN ({}) ORDER BY j.job_id) TO STDOUT (FORMAT binary)",
        ids.join(", ")
    ))
}

/// The jobs `ids` names (at most a page of them: `watch`'s jobs waiting for their runs), each
/// with all its runs, decoded as [`jobs_in`] decodes a page's. One statement; a job no longer
/// in the database (expired) is simply not in the stream.
pub fn jobs_by_id<'a>(db: std::sync::Arc<Db>, ids: &[String]) -> crate::lookout::JobStream<'a> {
    if ids.is_empty() {
        return Box::new(std::iter::empty());
    }
    match by_key(&db)
        .and_then(|()| ids_statement(ids))
        .and_then(|s| copy_jobs(db, &s))
    {
        Ok(stream) => stream,
        Err(e) => Box::new(std::iter::once(Err(e.into()))),
    }
}

/// Every job of `queues` that reached a terminal state at or after `from` (microseconds since
/// the Unix epoch), page after page of [`terminal_page`] (`limit` jobs each) and the rows of
/// each page by [`jobs_in`]: `watch`'s report of its window, in constant memory.
pub fn terminal_jobs<'a>(
    db: std::sync::Arc<Db>,
    queues: Vec<String>,
    from: i64,
    limit: usize,
) -> crate::lookout::JobStream<'a> {
    Box::new(TerminalJobs {
        db,
        queues,
        // Just before `from`: every job of that microsecond, whatever its id.
        after: (from.saturating_sub(1), String::new()),
        limit: limit.max(1),
        page: None,
        last: false,
    })
}

struct TerminalJobs<'a> {
    db: std::sync::Arc<Db>,
    queues: Vec<String>,
    after: (i64, String),
    limit: usize,
    page: Option<crate::lookout::JobStream<'a>>,
    /// The page being read is the last (shorter than `limit`), or an error ended the stream.
    last: bool,
}

impl Iterator for TerminalJobs<'_> {
    type Item = anyhow::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(page) = &mut self.page {
                match page.next() {
                    Some(item) => return Some(item),
                    None => self.page = None,
                }
            }
            if self.last {
                return None;
            }
            let keys = match terminal_page(&self.db, &self.queues, (self.after.0, &self.after.1), self.limit) {
                Ok(keys) => keys,
                Err(e) => {
                    self.last = true;
                    return Some(Err(e.into()));
                }
            };
            let end = keys.last()?;
            let span = Span {
                after: (self.after.0, &self.after.1),
                last: (end.at, &end.job_id),
            };
            let wanted = keys.iter().map(|k| k.job_id.clone()).collect();
            let page = jobs_in(self.db.clone(), &self.queues, span, wanted);
            self.after = (end.at, end.job_id.clone());
            self.last = keys.len() < self.limit;
            self.page = Some(page);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_s_jobs_are_read_by_its_span() {
        let span = Span {
            after: (1_764_000_000_000_001, ""),
            last: (1_764_000_060_000_000, "j'2"),
        };
        let s = span_statement(&["ml".into(), "b'x".into()], span).unwrap();
        assert!(
            s.ends_with(
                " FROM job j LEFT JOIN job_run r ON r.job_id = j.job_id \
                 WHERE j.queue = ANY(ARRAY[E'ml', E'b''x']::text[]) AND j.state IN (4, 5, 6, 7, 9) \
                 AND (j.last_transition_time, j.job_id) > (E'2025-11-24T16:00:00.000001Z'::timestamp, E'') \
                 AND (j.last_transition_time, j.job_id) <= (E'2025-11-24T16:01:00Z'::timestamp, E'j''2') \
                 ORDER BY j.last_transition_time, j.job_id) TO STDOUT (FORMAT binary)"
            ),
            "{s}"
        );
        assert!(s.starts_with(&format!("COPY (SELECT {COLUMNS} FROM")));
    }
}
