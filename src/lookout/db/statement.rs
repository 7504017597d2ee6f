//! The statements an export runs: the one binary `COPY` of a filter's jobs and their runs
//! ([`statement`]), a shard's places among all the jobs ([`shard_ranks`]) and the days nearest
//! a window that holds none of a queue's jobs ([`nearest`]).
//!
//! Owns: the `WHERE` of a filter, written as escaped literals (`COPY` takes no parameters).
//! Must not: read the rows (`stream`).

use std::time::Duration;

use super::columns::COLUMNS;
use super::connect::{connect, key_of, literal, query_error, Db, RawText};
use crate::error::CliError;
use crate::lookout::Filter;
use crate::model::failure_history::Timestamp;

/// The one statement an export runs (`-v` prints it; `scripts/bench-history.sh` times it
/// with `psql` as the read floor).
pub fn statement(f: &Filter) -> Result<String, CliError> {
    let mut s = format!("COPY (SELECT {COLUMNS} FROM job j LEFT JOIN job_run r ON r.job_id = j.job_id WHERE ");
    s.push_str(&conditions(f)?);
    if let Some(shard) = f.shard {
        s.push_str(&format!(" AND {}", in_shard("j.job_id", shard)));
    }
    s.push_str(" ORDER BY j.job_id) TO STDOUT (FORMAT binary)");
    Ok(s)
}

/// Whether the job `column` names is `shard`'s (docs/past-one-machine.md): a hash built into
/// PostgreSQL (11 and later), so nothing is created and a read replica serves it; its sign
/// handled, so that every job is exactly one shard's. Constants only: no list of ids, whose
/// length would grow with the queue.
// Why not the FNV-1a 64 that stdin's shards use: no function can be created on a read
// replica, and the fold over the id's bytes as a recursive query or a chain of laterals costs
// about 17 s per million jobs in PostgreSQL 15 (measured), three times reading the jobs.
fn in_shard(column: &str, shard: crate::replay::shard::Shard) -> String {
    let n = shard.count;
    format!("((hashtextextended({column}, 0) % {n}) + {n}) % {n} = {}", shard.index)
}

/// A shard's jobs with their places among all the jobs `f` selects (from 1, in the order an
/// export reads them), so that `merge` puts the shards' entries back in one process's order.
/// The server numbers every job and sends the shard's alone: an id and a number each.
pub fn shard_ranks(db: &Db, f: &Filter) -> Result<std::collections::HashMap<String, u64>, CliError> {
    let Some(shard) = f.shard else {
        return Ok(std::collections::HashMap::new());
    };
    let statement = format!(
        "SELECT s.job_id, s.rank FROM (SELECT j.job_id, row_number() OVER (ORDER BY j.job_id) AS rank \
         FROM job j WHERE {}) s WHERE {}",
        conditions(f)?,
        in_shard("s.job_id", shard)
    );
    let rows = db
        .rt
        .block_on(db.client.query(statement.as_str(), &[]))
        .map_err(|e| query_error(&e, &db.shown))?;
    Ok(rows
        .iter()
        // Named by their keys, as the export names a job it leaves out: an id that is not
        // UTF-8 by its exact bytes.
        .map(|r| (key_of(&r.get::<_, RawText>(0).0), r.get::<_, i64>(1) as u64))
        .collect())
}

/// Where a queue's jobs are when a window holds none of them: whether it has any, and the
/// days (`YYYY-MM-DD`, UTC) of the last job submitted before `f.from` and of the first at or
/// after `f.to` (each only when the filter has that bound). The queue alone: not the job set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nearest {
    pub any: bool,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// [`Nearest`] for `f`'s queue, on a connection of its own (the export's has ended).
pub fn nearest(dsn: &str, timeout: Duration, f: &Filter) -> Result<Nearest, CliError> {
    let db = connect(dsn, timeout)?;
    // Every queue's jobs without `--queue`.
    let queue = match &f.queue {
        Some(q) => format!("queue = {}", literal("--queue", q)?),
        None => "TRUE".to_string(),
    };
    let bound = |t: Option<Timestamp>, op: &str, agg: &str| match t {
        Some(t) => format!(
            "(SELECT to_char({agg}(submitted), 'YYYY-MM-DD') FROM job WHERE {queue} \
             AND submitted {op} TIMESTAMPTZ '{t}' AT TIME ZONE 'UTC')"
        ),
        None => "NULL::text".to_string(),
    };
    let statement = format!(
        "SELECT EXISTS (SELECT 1 FROM job WHERE {queue}), {}, {}",
        bound(f.from, "<", "max"),
        bound(f.to, ">=", "min")
    );
    let row = db
        .rt
        .block_on(db.client.query_one(statement.as_str(), &[]))
        .map_err(|e| query_error(&e, &db.shown))?;
    Ok(Nearest {
        any: row.get(0),
        before: row.get(1),
        after: row.get(2),
    })
}

/// The `WHERE` of an export: the queue (none: every queue's jobs) and the filters.
fn conditions(f: &Filter) -> Result<String, CliError> {
    let mut s = match &f.queue {
        Some(q) => format!("j.queue = {}", literal("--queue", q)?),
        None => "TRUE".to_string(),
    };
    if let Some(js) = &f.jobset {
        s.push_str(&format!(" AND j.jobset = {}", literal("--jobset", js)?));
    }
    if !f.jobs.is_empty() {
        let ids = f
            .jobs
            .iter()
            .map(|j| literal("--job", j))
            .collect::<Result<Vec<_>, _>>()?;
        s.push_str(&format!(" AND j.job_id IN ({})", ids.join(", ")));
    }
    // `submitted` is a `timestamp` in UTC, as Lookout writes it.
    if let Some(t) = f.from {
        s.push_str(&format!(" AND j.submitted >= TIMESTAMPTZ '{t}' AT TIME ZONE 'UTC'"));
    }
    if let Some(t) = f.to {
        s.push_str(&format!(" AND j.submitted < TIMESTAMPTZ '{t}' AT TIME ZONE 'UTC'"));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_escaped() {
        assert_eq!(literal("--queue", "ml").unwrap(), "E'ml'");
        assert_eq!(literal("--queue", r"a'b\c").unwrap(), r"E'a''b\\c'");
        assert_eq!(
            literal("--jobset", "a\0b").unwrap_err().message,
            "invalid `--jobset` `a\\0b`: contains a NUL character, which no Lookout column can hold"
        );
        let f = Filter {
            queue: Some("q'1".into()),
            jobset: Some("s".into()),
            jobs: vec!["j1".into(), "j2".into()],
            from: Timestamp::parse("2026-11-15T00:00:00Z"),
            to: Timestamp::parse("2026-11-22T00:00:00Z"),
            shard: None,
        };
        let s = statement(&f).unwrap();
        assert!(
            s.ends_with(
                " FROM job j LEFT JOIN job_run r ON r.job_id = j.job_id WHERE j.queue = E'q''1' AND j.jobset = E's' \
                 AND j.job_id IN (E'j1', E'j2') AND j.submitted >= TIMESTAMPTZ '2026-11-15T00:00:00Z' AT TIME ZONE 'UTC' \
                 AND j.submitted < TIMESTAMPTZ '2026-11-22T00:00:00Z' AT TIME ZONE 'UTC' ORDER BY j.job_id) TO STDOUT (FORMAT binary)"
            ),
            "{s}"
        );
    }
}
