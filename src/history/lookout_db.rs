//! Lookout's PostgreSQL database (`--lookout-db`) as a stream of jobs.
//!
//! Owns: connecting (errors → exit 4 with the DSN masked, or 5 for wrong credentials), the
//! check that the Lookout tables exist, and reading `job` / `job_run` with keyset paging:
//! one page of [`PAGE`] jobs (by `job_id`, the primary key) and then their runs, so the
//! client holds one page at a time whatever the table size, and no transaction or cursor is
//! held open on a production database between pages. Must not: map rows to histories
//! (`mapping`), or print.
//!
//! Why the sync `postgres` crate rather than `tokio-postgres`: the CLI is synchronous
//! (blocking reqwest, no runtime in commands), the import is one query after another, and
//! `postgres` is `tokio-postgres` behind a private runtime, so the same well-kept code without
//! async plumbing in the command. TLS is not offered (`NoTls`): a DSN with
//! `sslmode=require` is refused by the connection with that reason.
//!
//! Times are read as microseconds since the epoch (`extract(epoch …)`), the columns being
//! `timestamp` without time zone in UTC as Lookout writes them; this keeps a date/time crate
//! out of the dependencies.

use std::collections::{HashMap, VecDeque};
use std::str::FromStr;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, NoTls, Row};

use super::mapping::{ErrorText, JobRow, LookoutJob, RowError, RunRow};
use super::{mask_dsn, Filter, Item};
use crate::error::{CliError, ExitCode};
use crate::model::history::Timestamp;

/// Jobs per page.
pub const PAGE: i64 = 1000;

const JOBS: &str = "SELECT job_id, queue, jobset, memory, \
       (extract(epoch FROM submitted) * 1000000)::int8, annotations::text \
  FROM job \
 WHERE queue = $1 \
   AND ($2::text IS NULL OR jobset = $2::text) \
   AND (cardinality($3::text[]) = 0 OR job_id = ANY($3::text[])) \
   AND ($4::text IS NULL OR submitted >= ($4::text)::timestamptz AT TIME ZONE 'UTC') \
   AND ($5::text IS NULL OR submitted < ($5::text)::timestamptz AT TIME ZONE 'UTC') \
   AND job_id > $6::text \
 ORDER BY job_id \
 LIMIT $7::int8";

const RUNS: &str = "SELECT job_id, run_id, node, job_run_state, \
       (extract(epoch FROM leased) * 1000000)::int8, \
       (extract(epoch FROM pending) * 1000000)::int8, \
       (extract(epoch FROM started) * 1000000)::int8, \
       (extract(epoch FROM finished) * 1000000)::int8, \
       exit_code, error, failure_category, failure_subcategory \
  FROM job_run \
 WHERE job_id = ANY($1::text[])";

/// Connects and checks the schema. `timeout` bounds the connection attempt.
pub fn connect(dsn: &str, timeout: Duration) -> Result<Client, CliError> {
    let shown = mask_dsn(dsn);
    let mut config = postgres::Config::from_str(dsn)
        .map_err(|e| CliError::usage(format!("invalid `--lookout-db` `{shown}`: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(timeout);
    }
    let mut client = config.connect(NoTls).map_err(|e| connect_error(&e, &shown))?;
    let found = client
        .query_one("SELECT to_regclass('job')::text, to_regclass('job_run')::text", &[])
        .map_err(|e| query_error(&e, &shown))?;
    for (i, table) in ["job", "job_run"].into_iter().enumerate() {
        if found.get::<_, Option<String>>(i).is_none() {
            return Err(CliError::new(
                ExitCode::Unreachable,
                format!("database `{shown}` has no table `{table}`: it is not a Lookout database"),
            )
            .with_hint("point `--lookout-db` at the database Lookout's ingester writes (its `postgres` connection in lookout's config)"));
        }
    }
    Ok(client)
}

fn connect_error(e: &postgres::Error, shown: &str) -> CliError {
    let reason = reason(e);
    match e.code() {
        Some(c) if *c == SqlState::INVALID_PASSWORD || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
            CliError::new(ExitCode::Auth, format!("authentication to `{shown}` failed: {reason}"))
        }
        _ => CliError::new(
            ExitCode::Unreachable,
            format!("cannot reach the Lookout database at `{shown}`: {reason}"),
        ),
    }
}

fn query_error(e: &postgres::Error, shown: &str) -> CliError {
    match e.code() {
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            CliError::new(ExitCode::Auth, format!("`{shown}`: permission denied: {}", reason(e)))
        }
        _ => CliError::new(
            ExitCode::Unreachable,
            format!("the Lookout database at `{shown}` answered an error: {}", reason(e)),
        ),
    }
}

/// The server's own message when there is one (`password authentication failed …`), else the
/// driver's chain (`error connecting to server: Connection refused …`).
fn reason(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    let mut text = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        src = s.source();
    }
    text
}

/// The jobs of `filter`, page by page.
pub fn jobs<'a>(client: Client, filter: &'a Filter, dsn: &str) -> super::Source<'a> {
    Box::new(DbJobs {
        client,
        filter,
        shown: mask_dsn(dsn),
        after: String::new(),
        buffered: VecDeque::new(),
        done: false,
    })
}

struct DbJobs<'a> {
    client: Client,
    filter: &'a Filter,
    shown: String,
    /// The last job id read: the next page starts after it.
    after: String,
    buffered: VecDeque<Item>,
    done: bool,
}

impl Iterator for DbJobs<'_> {
    type Item = anyhow::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffered.is_empty() && !self.done {
            if let Err(e) = self.fetch_page() {
                self.done = true;
                return Some(Err(e.into()));
            }
        }
        self.buffered.pop_front().map(Ok)
    }
}

impl DbJobs<'_> {
    fn fetch_page(&mut self) -> Result<(), CliError> {
        let f = self.filter;
        let from = f.from.map(|t| t.to_string());
        let to = f.to.map(|t| t.to_string());
        let rows = self
            .client
            .query(JOBS, &[&f.queue, &f.jobset, &f.jobs, &from, &to, &self.after, &PAGE])
            .map_err(|e| query_error(&e, &self.shown))?;
        if (rows.len() as i64) < PAGE {
            self.done = true;
        }
        let Some(last) = rows.last() else {
            return Ok(());
        };
        self.after = last.get(0);
        let mut jobs: Vec<Result<LookoutJob, RowError>> = rows.iter().map(job_row).collect();
        let ids: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            index.insert(id, i);
        }
        let runs = self
            .client
            .query(RUNS, &[&ids])
            .map_err(|e| query_error(&e, &self.shown))?;
        for row in &runs {
            let job_id: String = row.get(0);
            let Some(&i) = index.get(job_id.as_str()) else { continue };
            let run = run_row(row, &job_id);
            match (&mut jobs[i], run) {
                (Ok(j), Ok(r)) => j.runs.push(r),
                (slot @ Ok(_), Err(e)) => *slot = Err(e),
                (Err(_), _) => {}
            }
        }
        self.buffered.extend(jobs.into_iter().map(|j| match j {
            Ok(j) => Item::Job(j),
            Err(e) => Item::Bad(e),
        }));
        Ok(())
    }
}

fn micros(v: Option<i64>) -> Option<Timestamp> {
    v.and_then(|us| us.checked_mul(1000)).map(Timestamp)
}

fn job_row(row: &Row) -> Result<LookoutJob, RowError> {
    let job_id: String = row.get(0);
    let bad = |message: String| RowError {
        job_id: job_id.clone(),
        run_id: None,
        message,
    };
    let annotations = match row.try_get::<_, Option<String>>(5).map_err(|e| bad(e.to_string()))? {
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| bad(format!("`annotations` is not JSON: {e}")))?),
        None => None,
    };
    Ok(LookoutJob {
        job: JobRow {
            job_id: job_id.clone(),
            queue: row.try_get(1).map_err(|e| bad(e.to_string()))?,
            jobset: row.try_get(2).map_err(|e| bad(e.to_string()))?,
            memory: row.try_get(3).map_err(|e| bad(e.to_string()))?,
            submitted: micros(row.try_get(4).map_err(|e| bad(e.to_string()))?),
            annotations,
        },
        runs: Vec::new(),
    })
}

fn run_row(row: &Row, job_id: &str) -> Result<RunRow, RowError> {
    let run_id: String = row.try_get(1).unwrap_or_default();
    let bad = |e: postgres::Error| RowError {
        job_id: job_id.to_string(),
        run_id: Some(run_id.clone()),
        message: e.to_string(),
    };
    Ok(RunRow {
        run_id: run_id.clone(),
        node: row.try_get(2).map_err(bad)?,
        state: row.try_get(3).map_err(bad)?,
        leased: micros(row.try_get(4).map_err(bad)?),
        pending: micros(row.try_get(5).map_err(bad)?),
        started: micros(row.try_get(6).map_err(bad)?),
        finished: micros(row.try_get(7).map_err(bad)?),
        exit_code: row.try_get(8).map_err(bad)?,
        error: match row.try_get::<_, Option<Vec<u8>>>(9).map_err(bad)? {
            Some(b) => ErrorText::Zlib(b),
            None => ErrorText::None,
        },
        category: row.try_get(10).map_err(bad)?,
        subcategory: row.try_get(11).map_err(bad)?,
    })
}
