//! Lookout's PostgreSQL database (`--lookout-db`) as a stream of jobs.
//!
//! Owns: connecting (errors → exit 4 with the DSN masked, or 5 for wrong credentials), the
//! check that the Lookout tables exist, the one statement that reads them ([`statement`]: a
//! binary `COPY` of `job LEFT JOIN job_run` ordered by `job_id`, so a job's rows arrive
//! together and the client holds one job at a time whatever the table size), the days of a
//! queue's jobs nearest a window that holds none ([`nearest`]), decoding its
//! rows by hand, and turning a row that cannot be read into an [`Item::Bad`] naming the job,
//! the run and the column (docs/lookout.md); `watch`'s reads by page are in [`terminal`](super::terminal). Must not: map rows to histories (`mapping`), or print.
//!
//! A `SQL_ASCII` database keeps whatever bytes it was given: its text is read as those bytes
//! (the session's `client_encoding` is `SQL_ASCII` too, else the server refuses to send a row
//! that is not UTF-8 and the whole statement fails), a row whose text is not UTF-8 is an
//! [`Item::Bad`] like any row that cannot be read (left out, the rows after it read), its id
//! named with those bytes as `\xNN` ([`shown_bytes`]), and a job id that is not UTF-8 is kept
//! as a key that gives its bytes back exactly ([`key_of`], [`RawText`]), so that `watch`'s
//! pages go on past it and the polls that read it again skip it.
//!
//! Why one binary `COPY` rather than pages of queries: the server sends the rows as one
//! stream in its own binary format (timestamps as integers: no text to format on one side
//! and parse on the other, and `infinity` is a value like any other, not an error that ends
//! the statement), the client decodes each field in place without a row object, and reading
//! overlaps with the server's work. Paging by key re-plans and re-descends the indexes for
//! every page, and on a queue that is a small part of the table scans the rest again and
//! again. `COPY` takes no parameters, so the filter's values are written into the statement
//! as escaped literals ([`literal`]).
//!
//! Hostile values cost bounded work: `error` (and `debug`, stored the same way) is read at most [`ERROR_BYTES_MAX`] bytes
//! (`substring` on the server, which fetches only those bytes of a TOASTed value) and
//! inflated at most [`ERROR_TEXT_MAX`] bytes (a zlib bomb stays a few KiB of work), the
//! annotations at most [`ANNOTATIONS_MAX`] characters, and a job's runs at most
//! [`JOB_BYTES_MAX`] bytes held.
//!
//! Why `tokio-postgres` behind a private current-thread runtime, as the sync `postgres` crate
//! does it: the CLI is synchronous, but `postgres`' COPY reader borrows its client, so a
//! source that owns both could not be an iterator; `tokio-postgres`' COPY stream owns its
//! channel. The runtime only runs while [`DbJobs`] waits for data, so nothing is read ahead
//! of the consumer beyond the socket's buffers: memory stays flat. TLS is not offered
//! (`NoTls`): a DSN with `sslmode=require` is refused by the connection with that reason.

use std::collections::VecDeque;
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::Stream;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::{CopyOutStream, NoTls};

use super::mapping::{self, error_text, JobRow, LookoutJob, Place, RowError, RunRow, ERROR_TEXT_MAX};
use super::{Filter, Item};
use crate::error::{CliError, ExitCode};
use crate::model::failure_history::Timestamp;

/// Bytes of a compressed `error` read: enough for the first [`ERROR_TEXT_MAX`] bytes of text
/// of any stream a zlib encoder writes (stored blocks add 5 bytes in 64 KiB); a stream that
/// needs more for less text is cut there too.
pub const ERROR_BYTES_MAX: usize = 2 * ERROR_TEXT_MAX;

/// Characters of `job.annotations` (as JSON text) read; a longer value leaves its job out.
pub const ANNOTATIONS_MAX: usize = 1024 * 1024;

/// Bytes of one job's runs held while its rows are read (error texts and a fixed cost per
/// run); a job past it is left out and reported.
pub const JOB_BYTES_MAX: usize = 32 * 1024 * 1024;

/// What a run costs in [`JOB_BYTES_MAX`] besides its error text.
const RUN_BYTES: usize = 256;

/// The columns read, in order (indexes below).
pub(super) const COLUMNS: &str = "j.job_id, j.memory, j.submitted, left(j.annotations::text, 1048577), \
     r.run_id, r.node, r.job_run_state, r.leased, r.pending, r.started, r.finished, r.exit_code, \
     substring(r.error FROM 1 FOR 131073), r.failure_category, r.failure_subcategory, j.cpu, j.gpu, \
     substring(r.debug FROM 1 FOR 131073), j.queue, j.state, r.pool, j.jobset";

const JOB_ID: usize = 0;
const MEMORY: usize = 1;
const SUBMITTED: usize = 2;
const ANNOTATIONS: usize = 3;
const RUN_ID: usize = 4;
const NODE: usize = 5;
const STATE: usize = 6;
const LEASED: usize = 7;
const PENDING: usize = 8;
const STARTED: usize = 9;
const FINISHED: usize = 10;
const EXIT_CODE: usize = 11;
const ERROR: usize = 12;
const CATEGORY: usize = 13;
const SUBCATEGORY: usize = 14;
const CPU: usize = 15;
const GPU: usize = 16;
const DEBUG: usize = 17;
const QUEUE: usize = 18;
const JOB_STATE: usize = 19;
const POOL: usize = 20;
const JOB_SET: usize = 21;
const FIELDS: usize = 22;

/// The names of the columns, for messages.
const NAMES: [&str; FIELDS] = [
    "job_id",
    "memory",
    "submitted",
    "annotations",
    "run_id",
    "node",
    "job_run_state",
    "leased",
    "pending",
    "started",
    "finished",
    "exit_code",
    "error",
    "failure_category",
    "failure_subcategory",
    "cpu",
    "gpu",
    "debug",
    "queue",
    "state",
    "pool",
    "jobset",
];

/// A connection to Lookout's database.
pub struct Db {
    pub(super) client: tokio_postgres::Client,
    pub(super) shown: String,
    /// How long a statement may wait for a byte of the database's answer before it fails
    /// (`watch`'s, [`Db::answering_within`]): a database that accepts and then answers
    /// nothing (a black hole, no reset) is a failed poll, not a hang. `None`: as long as it
    /// takes (an export's sorted statement may think a while before its first row).
    pub(super) silence: Option<Duration>,
    /// Dropped last: the connection's task lives on it.
    pub(super) rt: tokio::runtime::Runtime,
}

impl Db {
    /// The DSN as messages show it (without its password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Statements that fail once the database has sent nothing for `silence`.
    pub fn answering_within(mut self, silence: Duration) -> Db {
        self.silence = Some(silence);
        self
    }

    /// `f`, a statement of this connection, waited for within [`Db::silence`].
    pub(super) fn wait<T>(
        &self,
        f: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, CliError> {
        let answered = match self.silence {
            // The timer is made inside the runtime, whose clock it needs.
            Some(d) => self
                .rt
                .block_on(async { tokio::time::timeout(d, f).await })
                .map_err(|_| self.silent())?,
            None => self.rt.block_on(f),
        };
        answered.map_err(|e| query_error(&e, &self.shown))
    }

    /// A database that answered nothing for [`Db::silence`].
    fn silent(&self) -> CliError {
        let d = self.silence.unwrap_or_default();
        CliError::new(
            ExitCode::Unreachable,
            format!(
                "the Lookout database at `{}` answered nothing for {}",
                self.shown,
                crate::model::duration::GoDuration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            ),
        )
    }
}

/// How long an idle connection waits before TCP keepalive probes a database that may be gone.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// The tables a history export reads.
pub const HISTORY_TABLES: &[&str] = &["job", "job_run"];

/// Connects and checks that the history's tables exist. `timeout` bounds the connection
/// attempt.
pub fn connect(dsn: &str, timeout: Duration) -> Result<Db, CliError> {
    connect_with(dsn, timeout, HISTORY_TABLES)
}

/// `dsn` read as a DSN, before anything connects: a usage error naming `--lookout-db` (its
/// password masked) when it does not parse, which no retry can fix.
pub fn check_dsn(dsn: &str) -> Result<(), CliError> {
    tokio_postgres::Config::from_str(dsn).map(|_| ()).map_err(|e| {
        CliError::usage(format!(
            "invalid `--lookout-db` `{}`: {e}",
            crate::redact::redact_dsn(dsn)
        ))
    })
}

/// Connects and checks that every table of `tables` exists, naming all that do not.
pub fn connect_with(dsn: &str, timeout: Duration, tables: &[&str]) -> Result<Db, CliError> {
    let shown = crate::redact::redact_dsn(dsn);
    let mut config = tokio_postgres::Config::from_str(dsn)
        .map_err(|e| CliError::usage(format!("invalid `--lookout-db` `{shown}`: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(timeout);
    }
    config.keepalives(true).keepalives_idle(KEEPALIVE_IDLE);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(ExitCode::Unreachable, format!("cannot start the database client: {e}")))?;
    // The whole start-up within the timeout: a server that accepts and then says nothing
    // holds the socket's connect timeout to nothing.
    let (client, connection) = rt
        .block_on(async { tokio::time::timeout(timeout, config.connect(NoTls)).await })
        .map_err(|_| {
            CliError::new(
                ExitCode::Unreachable,
                format!(
                    "cannot reach the Lookout database at `{shown}`: it answered nothing within {}",
                    crate::model::duration::GoDuration(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX))
                ),
            )
        })?
        .map_err(|e| connect_error(&e, &shown))?;
    let raw_text = connection.parameter("server_encoding") == Some("SQL_ASCII");
    // Runs only while `rt.block_on` waits for an answer (current-thread runtime).
    rt.spawn(async move {
        let _ = connection.await;
    });
    let silent = || {
        CliError::new(
            ExitCode::Unreachable,
            format!(
                "the Lookout database at `{shown}` answered nothing within {}",
                crate::model::duration::GoDuration(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX))
            ),
        )
    };
    if raw_text {
        // A `SQL_ASCII` database keeps whatever bytes it was given, and checks none: the
        // server would refuse to send a row whose text is not UTF-8 (failing the whole
        // statement), and to take such a key back. Its bytes as they are, then: the decoding
        // leaves out a row whose text is not UTF-8 (and says so), and a page's last key is
        // sent back exactly (`RawText`).
        rt.block_on(async {
            tokio::time::timeout(timeout, client.batch_execute("SET client_encoding = 'SQL_ASCII'")).await
        })
        .map_err(|_| silent())?
        .map_err(|e| query_error(&e, &shown))?;
    }
    let names: Vec<String> = tables.iter().map(|t| t.to_string()).collect();
    let rows = rt
        .block_on(async {
            tokio::time::timeout(
                timeout,
                client.query(
                    "SELECT t FROM unnest($1::text[]) WITH ORDINALITY AS u(t, i) WHERE to_regclass(t) IS NULL ORDER BY i",
                    &[&names],
                ),
            )
            .await
        })
        .map_err(|_| silent())?
        .map_err(|e| query_error(&e, &shown))?;
    let missing: Vec<String> = rows.iter().map(|r| r.get::<_, String>(0)).collect();
    if let Some(e) = missing_tables(&shown, &missing) {
        return Err(e);
    }
    Ok(Db {
        client,
        shown,
        silence: None,
        rt,
    })
}

/// The error for the tables a database lacks (exit 4), naming every one and what creates it.
fn missing_tables(shown: &str, missing: &[String]) -> Option<CliError> {
    let first = missing.first()?;
    if HISTORY_TABLES.contains(&first.as_str()) {
        return Some(
            CliError::new(
                ExitCode::Unreachable,
                format!("database `{shown}` has no table `{first}`: it is not a Lookout database"),
            )
            .with_hint("point `--lookout-db` at the database Lookout's ingester writes (its `postgres` connection in lookout's config)"),
        );
    }
    let names = missing.iter().map(|t| format!("`{t}`")).collect::<Vec<_>>().join(", ");
    let (noun, migrations) = if missing.len() == 1 {
        ("table", "the Lookout migration that creates it has")
    } else {
        ("tables", "the Lookout migrations that create them have")
    };
    let files: Vec<&str> = missing
        .iter()
        .filter_map(|t| match t.as_str() {
            "queue" => Some("`007_queue.sql`"),
            "retry_policy" | "queue_retry_policy" => Some("`035_create_retry_policy.sql`"),
            _ => None,
        })
        .fold(Vec::new(), |mut v, f| {
            if !v.contains(&f) {
                v.push(f);
            }
            v
        });
    let which = if files.is_empty() {
        String::new()
    } else {
        format!(" ({})", files.join(", "))
    };
    Some(
        CliError::new(
            ExitCode::Unreachable,
            format!("database `{shown}` has no {noun} {names}: {migrations} not run there{which}"),
        )
        .with_hint("point `--lookout-db` at the database of an Armada whose server stores retry policies (run Lookout's migrations: `lookout --migrateDatabase`)"),
    )
}

fn connect_error(e: &tokio_postgres::Error, shown: &str) -> CliError {
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

pub(super) fn query_error(e: &tokio_postgres::Error, shown: &str) -> CliError {
    match e.code() {
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => {
            CliError::new(ExitCode::Auth, format!("`{shown}`: permission denied: {}", reason(e)))
        }
        // A closed socket is not an answer: the connection was lost (a backend ended, a
        // network cut) before the server said anything.
        _ if e.as_db_error().is_none() => CliError::new(
            ExitCode::Unreachable,
            format!(
                "lost the connection to the Lookout database at `{shown}`: {}",
                reason(e)
            ),
        ),
        _ => CliError::new(
            ExitCode::Unreachable,
            format!("the Lookout database at `{shown}` answered an error: {}", reason(e)),
        ),
    }
}

/// The server's own words when there are some (`password authentication failed …`, with its
/// `DETAIL` and `HINT` when it gives them), else the driver's chain (`error connecting to
/// server: Connection refused …`); on one line, its control characters escaped (`\x0a`,
/// `\x1b`) as row text and DSNs are: whatever answers on the port wrote them, and they reach
/// `watch`'s log, `/healthz` and every verb's errors, where a line break would forge a line
/// and an escape sequence would reach the terminal.
fn reason(e: &tokio_postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => {
            let mut text = db.message().to_string();
            for (label, said) in [("DETAIL", db.detail()), ("HINT", db.hint())] {
                if let Some(said) = said {
                    text.push_str(&format!(" ({label}: {said})"));
                }
            }
            text
        }
        None => {
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
    };
    crate::diag::shown(&text).into_owned()
}

/// `text`, the value of `flag`, as a string literal: `E'…'` with `\` and `'` escaped,
/// whatever the server's `standard_conforming_strings`. Refuses NUL, which no PostgreSQL text
/// can hold.
pub fn literal(flag: &str, text: &str) -> Result<String, CliError> {
    if text.contains('\0') {
        return Err(CliError::usage(format!(
            "invalid `{flag}` `{}`: contains a NUL character, which no Lookout column can hold",
            text.escape_debug()
        )));
    }
    let mut out = String::with_capacity(text.len() + 3);
    out.push_str("E'");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("''"),
            c => out.push(c),
        }
    }
    out.push('\'');
    Ok(out)
}

/// A text value's bytes as the database holds them, read or sent without a UTF-8 check: a
/// `SQL_ASCII` database's `job_id` may hold bytes that are not UTF-8, and `watch`'s pages go on
/// from the exact bytes of the last key (docs/lookout.md).
#[derive(Debug)]
pub(super) struct RawText(pub(super) Vec<u8>);

impl RawText {
    fn text_type(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
        )
    }
}

impl<'a> FromSql<'a> for RawText {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<RawText, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawText(raw.to_vec()))
    }

    fn accepts(ty: &Type) -> bool {
        RawText::text_type(ty)
    }
}

impl ToSql for RawText {
    fn to_sql(&self, _: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        RawText::text_type(ty)
    }

    to_sql_checked!();
}

/// A job id as `watch` keeps it (its cursor, a page's keys) and a left-out row names it: the
/// text itself, or, for an id whose bytes are not UTF-8, a NUL and the bytes in hex. No job id
/// holds a NUL (no PostgreSQL text can), so the two never meet, and [`key_bytes`] gives the
/// bytes back exactly.
pub fn key_of(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => {
            let mut key = String::with_capacity(1 + 2 * bytes.len());
            key.push('\0');
            for b in bytes {
                key.push_str(&format!("{b:02x}"));
            }
            key
        }
    }
}

/// The bytes of a job id [`key_of`] kept.
pub(super) fn key_bytes(key: &str) -> std::borrow::Cow<'_, [u8]> {
    let hex = |pair: &[u8]| {
        std::str::from_utf8(pair)
            .ok()
            .and_then(|p| u8::from_str_radix(p, 16).ok())
    };
    match key.strip_prefix('\0') {
        Some(digits) if digits.len() % 2 == 0 => match digits.as_bytes().chunks(2).map(hex).collect() {
            Some(bytes) => std::borrow::Cow::Owned(bytes),
            None => std::borrow::Cow::Borrowed(key.as_bytes()),
        },
        _ => std::borrow::Cow::Borrowed(key.as_bytes()),
    }
}

/// [`literal`] of a job id [`key_of`] kept: an id that is not UTF-8 as its bytes, those that
/// are not printable ASCII escaped (`E'ml-05\xff'`), which a `SQL_ASCII` database reads back
/// as they are.
pub(super) fn key_literal(key: &str) -> Result<String, CliError> {
    let bytes = key_bytes(key);
    if matches!(bytes, std::borrow::Cow::Borrowed(_)) {
        return literal("job_id", key);
    }
    let mut out = String::from("E'");
    for &b in bytes.iter() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("''"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    Ok(out)
}

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

/// The jobs of `filter`, one at a time, as [`statement`] reads them.
pub fn jobs<'a>(db: Db, filter: &Filter) -> Result<super::JobStream<'a>, CliError> {
    jobs_on(std::sync::Arc::new(db), filter)
}

/// [`jobs`] on a connection the caller keeps for its next statements (`watch` reads page
/// after page on one): the stream holds it until it ends, and it is free again after.
pub fn jobs_on<'a>(db: std::sync::Arc<Db>, filter: &Filter) -> Result<super::JobStream<'a>, CliError> {
    let statement = statement(filter)?;
    if filter.shard.is_some() {
        // A shard asks for a quarter (a third, …) of the jobs: enough for the planner to
        // prefer reading whole tables (or whole indexes, in a merge join) and dropping the
        // rest, which makes N shards read `job_run` N times.
        by_key(&db)?;
    }
    copy_jobs(db, &statement)
}

/// Off for this session only (a replica allows it): the planner looks each job's runs up
/// by key instead of reading whole tables, which it prefers for a few thousand jobs among
/// many (a shard's, a page's).
pub(super) fn by_key(db: &Db) -> Result<(), CliError> {
    db.wait(
        db.client
            .batch_execute("SET enable_seqscan = off; SET enable_mergejoin = off; SET enable_hashjoin = off"),
    )
}

/// The jobs `statement` (a binary `COPY` of [`COLUMNS`], ordered by `job_id`) reads, each of
/// the queue its row names.
pub(super) fn copy_jobs<'a>(db: std::sync::Arc<Db>, statement: &str) -> Result<super::JobStream<'a>, CliError> {
    let stream = db.wait(db.client.copy_out(statement))?;
    Ok(Box::new(DbJobs {
        rows: CopyRows {
            stream: Box::pin(stream),
            chunk: Bytes::new(),
            carry: Vec::new(),
            header: false,
            done: false,
        },
        group: Group::new(),
        db,
        finished: false,
    }))
}

/// The stream of a job's rows and what is made of them. Field order matters for drop: the
/// COPY stream first, then the connection and its runtime (when this held the last handle).
struct DbJobs {
    rows: CopyRows,
    group: Group,
    db: std::sync::Arc<Db>,
    finished: bool,
}

impl Iterator for DbJobs {
    type Item = anyhow::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.group.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.finished {
                return None;
            }
            let group = &mut self.group;
            match self.rows.next_row(&self.db.rt, self.db.silence, |row| group.take(row)) {
                Ok(true) => {}
                Ok(false) => {
                    self.finished = true;
                    self.group.flush();
                }
                Err(e) => {
                    self.finished = true;
                    let e = match e {
                        CopyError::Db(e) => query_error(&e, &self.db.shown),
                        CopyError::Silent => self.db.silent(),
                        CopyError::Protocol(m) => CliError::new(
                            ExitCode::Unreachable,
                            format!(
                                "the Lookout database at `{}` sent a COPY stream that cannot be read: {m}",
                                self.db.shown
                            ),
                        ),
                    };
                    return Some(Err(e.into()));
                }
            }
        }
    }
}

enum CopyError {
    Db(tokio_postgres::Error),
    /// Nothing came for the connection's silence bound.
    Silent,
    /// The stream is not PostgreSQL's binary COPY format as the statement asks for.
    Protocol(String),
}

/// One row of the COPY stream: where each field is in `buf`, `None` for NULL.
struct Row<'a> {
    buf: &'a [u8],
    fields: &'a [Option<(usize, usize)>; FIELDS],
}

impl<'a> Row<'a> {
    fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.fields[i].map(|(a, b)| &self.buf[a..b])
    }
}

/// PostgreSQL's binary COPY stream, row by row (the format: "Binary Format" of `COPY` in
/// PostgreSQL's documentation). The server sends one message per row, so a row is decoded in
/// place in its message; one that spans messages is gathered in `carry` first.
struct CopyRows {
    stream: Pin<Box<CopyOutStream>>,
    chunk: Bytes,
    carry: Vec<u8>,
    header: bool,
    done: bool,
}

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

enum Parsed {
    /// A row of this many bytes.
    Row(usize),
    /// The header or the trailer, this many bytes.
    Skip(usize, bool),
    /// More bytes are needed.
    Incomplete,
}

impl CopyRows {
    /// Calls `take` with the next row (once); `false` at the end of the stream.
    fn next_row(
        &mut self,
        rt: &tokio::runtime::Runtime,
        silence: Option<Duration>,
        mut take: impl FnMut(&Row),
    ) -> Result<bool, CopyError> {
        let mut fields = [None; FIELDS];
        loop {
            if self.done {
                return Ok(false);
            }
            let from_carry = !self.carry.is_empty();
            let buf: &[u8] = if from_carry { &self.carry } else { &self.chunk };
            let parsed = if self.header {
                parse_row(buf, &mut fields)
            } else {
                parse_header(buf)
            }
            .map_err(CopyError::Protocol)?;
            let available = buf.len();
            let used = match parsed {
                Parsed::Row(n) => {
                    take(&Row { buf, fields: &fields });
                    n
                }
                Parsed::Skip(n, trailer) => {
                    self.header = true;
                    self.done = trailer;
                    n
                }
                Parsed::Incomplete => {
                    let Some(next) = self.fetch(rt, silence)? else {
                        return if available == 0 {
                            Err(CopyError::Protocol("it ended without its trailer".into()))
                        } else {
                            Err(CopyError::Protocol("it ended in the middle of a row".into()))
                        };
                    };
                    if from_carry || !self.chunk.is_empty() {
                        if !from_carry {
                            self.carry.extend_from_slice(&self.chunk);
                            self.chunk = Bytes::new();
                        }
                        self.carry.extend_from_slice(&next);
                    } else {
                        self.chunk = next;
                    }
                    continue;
                }
            };
            if from_carry {
                self.carry.drain(..used);
            } else {
                self.chunk.advance(used);
            }
            if matches!(parsed, Parsed::Row(_)) {
                return Ok(true);
            }
        }
    }

    fn fetch(&mut self, rt: &tokio::runtime::Runtime, silence: Option<Duration>) -> Result<Option<Bytes>, CopyError> {
        let stream = &mut self.stream;
        let next = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx));
        match silence {
            Some(d) => rt
                .block_on(async { tokio::time::timeout(d, next).await })
                .map_err(|_| CopyError::Silent)?,
            None => rt.block_on(next),
        }
        .transpose()
        .map_err(CopyError::Db)
    }
}

fn be_i16(b: &[u8]) -> i16 {
    i16::from_be_bytes([b[0], b[1]])
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn parse_header(buf: &[u8]) -> Result<Parsed, String> {
    if buf.len() < SIGNATURE.len() + 8 {
        return Ok(Parsed::Incomplete);
    }
    if &buf[..SIGNATURE.len()] != SIGNATURE {
        return Err("no binary COPY signature".into());
    }
    let extension = be_i32(&buf[15..19]);
    let Ok(extension) = usize::try_from(extension) else {
        return Err(format!("a header extension of {extension} bytes"));
    };
    let len = 19 + extension;
    Ok(if buf.len() < len {
        Parsed::Incomplete
    } else {
        Parsed::Skip(len, false)
    })
}

/// One tuple: a field count (−1: the trailer), then each field's length (−1: NULL) and bytes.
fn parse_row(buf: &[u8], fields: &mut [Option<(usize, usize)>; FIELDS]) -> Result<Parsed, String> {
    if buf.len() < 2 {
        return Ok(Parsed::Incomplete);
    }
    let count = be_i16(buf);
    if count == -1 {
        return Ok(Parsed::Skip(2, true));
    }
    if count as usize != FIELDS {
        return Err(format!("a row of {count} fields where the statement reads {FIELDS}"));
    }
    let mut pos = 2;
    for f in fields.iter_mut() {
        if buf.len() < pos + 4 {
            return Ok(Parsed::Incomplete);
        }
        let len = be_i32(&buf[pos..]);
        pos += 4;
        if len < 0 {
            *f = None;
            continue;
        }
        let end = pos + len as usize;
        if buf.len() < end {
            return Ok(Parsed::Incomplete);
        }
        *f = Some((pos, end));
        pos = end;
    }
    Ok(Parsed::Row(pos))
}

/// Rows → jobs: the rows of one `job_id` are consecutive (every statement orders by it, or by
/// a key it ends: `watch`'s pages by (`last_transition_time`, `job_id`)).
struct Group {
    /// The job being read; `None` when its row was bad (`skipping`) or before the first row.
    current: Option<LookoutJob>,
    /// The raw `job_id` of the rows being read.
    current_id: Vec<u8>,
    /// The current job was left out: its other rows are skipped.
    skipping: bool,
    /// Bytes held by the current job's runs ([`JOB_BYTES_MAX`]).
    held: usize,
    pending: VecDeque<Item>,
    inflater: Inflater,
}

impl Group {
    fn new() -> Group {
        Group {
            current: None,
            current_id: Vec::new(),
            skipping: false,
            held: 0,
            pending: VecDeque::new(),
            inflater: Inflater::new(),
        }
    }

    fn take(&mut self, row: &Row) {
        let id = row.get(JOB_ID).unwrap_or_default();
        if id != self.current_id.as_slice() || (self.current.is_none() && !self.skipping) {
            self.flush();
            self.current_id.clear();
            self.current_id.extend_from_slice(id);
            self.held = 0;
            match job_row(row) {
                Ok(job) => {
                    self.current = Some(LookoutJob {
                        job,
                        ..LookoutJob::default()
                    });
                    self.skipping = false;
                }
                Err(e) => {
                    self.pending.push_back(Item::Bad(e));
                    self.skipping = true;
                }
            }
        }
        let Some(job) = &mut self.current else { return };
        // A job without runs: the LEFT JOIN's one row has NULL run columns.
        if row.get(RUN_ID).is_none() && row.get(STATE).is_none() {
            return;
        }
        match run_row(row, &job.job.job_id, &mut self.inflater) {
            Ok(run) => {
                self.held +=
                    RUN_BYTES + run.error.as_ref().map_or(0, String::len) + run.debug.as_ref().map_or(0, String::len);
                if self.held > JOB_BYTES_MAX {
                    let e = RowError::job(
                        &job.job.job_id,
                        Place::Row,
                        format!(
                            "its runs hold more than {} MiB (after {} runs): too many to replay",
                            JOB_BYTES_MAX >> 20,
                            job.runs.len() + 1
                        ),
                    );
                    self.pending.push_back(Item::Bad(e));
                    self.current = None;
                    self.skipping = true;
                } else {
                    job.runs.push(run);
                }
            }
            Err(e) => {
                job.unreadable_runs += 1;
                self.pending.push_back(Item::Bad(e));
            }
        }
    }

    fn flush(&mut self) {
        if let Some(job) = self.current.take() {
            self.pending.push_back(Item::Job(job));
        }
    }
}

/// A column's problem, for a [`RowError`] at it.
type Why = (usize, String);

/// A job's own row; one whose text is not UTF-8 (a `SQL_ASCII` database's) is an error like
/// any value that cannot be read, its id named with those bytes as `\xNN` and keyed by its
/// exact bytes ([`key_of`]).
fn job_row(row: &Row) -> Result<JobRow, RowError> {
    let raw_id = row.get(JOB_ID).unwrap_or_default();
    let shown_id = shown_bytes(raw_id);
    let key = std::str::from_utf8(raw_id).is_err().then(|| key_of(raw_id));
    let bad = |(col, why): Why| RowError {
        key: key.clone(),
        ..RowError::job(&shown_id, Place::Column(NAMES[col]), why)
    };
    let job_id = text(raw_id).map_err(|w| bad((JOB_ID, w)))?.to_string();
    let memory = int8(row.get(MEMORY))
        .and_then(|m| m.ok_or_else(not_null))
        .map_err(|w| bad((MEMORY, w)))?;
    let request = |col: usize| {
        int8(row.get(col))
            .and_then(|m| m.ok_or_else(not_null))
            .map_err(|w| bad((col, w)))
    };
    let (cpu, gpu) = (request(CPU)?, request(GPU)?);
    let submitted = time(row.get(SUBMITTED))
        .and_then(|t| t.ok_or_else(not_null).map(Some))
        .map_err(|w| bad((SUBMITTED, w)))?;
    let annotations = annotations(row.get(ANNOTATIONS)).map_err(|w| bad((ANNOTATIONS, w)))?;
    let queue = opt_text(row.get(QUEUE))
        .and_then(|q| q.ok_or_else(not_null))
        .map_err(|w| bad((QUEUE, w)))?;
    // NULL (which the schema forbids) only leaves the job's end unsaid: no need to leave the
    // job out for it.
    let state = int2(row.get(JOB_STATE)).map_err(|w| bad((JOB_STATE, w)))?;
    // NULL (which the schema forbids) only leaves the job in no job set.
    let job_set = opt_text(row.get(JOB_SET)).map_err(|w| bad((JOB_SET, w)))?;
    Ok(JobRow {
        job_id,
        queue,
        job_set,
        memory,
        cpu,
        gpu,
        submitted,
        annotations,
        state,
    })
}

fn run_row(row: &Row, job_id: &str, inflater: &mut Inflater) -> Result<RunRow, RowError> {
    decode_run(row, inflater).map_err(|(col, why)| {
        let run_id = row.get(RUN_ID).map(shown_bytes).unwrap_or_default();
        RowError::run(job_id, &run_id, Place::Column(NAMES[col]), why)
    })
}

fn decode_run(row: &Row, inflater: &mut Inflater) -> Result<RunRow, Why> {
    let at = |col: usize| move |why: String| (col, why);
    let run_id = text(row.get(RUN_ID).ok_or_else(|| (RUN_ID, not_null()))?).map_err(at(RUN_ID))?;
    let state = int2(row.get(STATE))
        .map_err(at(STATE))?
        .ok_or_else(|| (STATE, not_null()))?;
    let (error, error_truncated) = match row.get(ERROR) {
        Some(b) => {
            let (text, cut) = inflater.text(b).map_err(at(ERROR))?;
            (Some(text), cut)
        }
        None => (None, false),
    };
    // Stored like `error` (a zlib stream, `internal/common/compress`), so read under the same
    // caps; a document cut there is no longer JSON, and the mapping leaves its fields unset.
    let debug = match row.get(DEBUG) {
        Some(b) => Some(inflater.text(b).map_err(at(DEBUG))?.0),
        None => None,
    };
    Ok(RunRow {
        run_id: run_id.to_string(),
        node: opt_text(row.get(NODE)).map_err(at(NODE))?,
        state,
        leased: time(row.get(LEASED)).map_err(at(LEASED))?,
        pending: time(row.get(PENDING)).map_err(at(PENDING))?,
        started: time(row.get(STARTED)).map_err(at(STARTED))?,
        finished: time(row.get(FINISHED)).map_err(at(FINISHED))?,
        exit_code: int4(row.get(EXIT_CODE)).map_err(at(EXIT_CODE))?,
        error,
        error_truncated,
        category: opt_text(row.get(CATEGORY)).map_err(at(CATEGORY))?,
        subcategory: opt_text(row.get(SUBCATEGORY)).map_err(at(SUBCATEGORY))?,
        debug,
        pool: opt_text(row.get(POOL)).map_err(at(POOL))?,
    })
}

fn not_null() -> String {
    "NULL, which Lookout's schema does not allow".into()
}

/// A text column's value; bytes that are not UTF-8 (a `SQL_ASCII` database keeps any) make
/// the row unreadable: no text is guessed.
fn text(b: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(b).map_err(|e| format!("not UTF-8 (byte {})", e.valid_up_to()))
}

fn opt_text(b: Option<&[u8]>) -> Result<Option<String>, String> {
    b.map(|b| text(b).map(str::to_string)).transpose()
}

/// `bytes` as a report names them: text as it is, each byte that is not UTF-8 as `\xNN`
/// (control characters are escaped where the line is printed).
fn shown_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn fixed<const N: usize>(b: Option<&[u8]>, what: &str) -> Result<Option<[u8; N]>, String> {
    b.map(|b| <[u8; N]>::try_from(b).map_err(|_| format!("{} bytes where {what} has {N}", b.len())))
        .transpose()
}

fn int2(b: Option<&[u8]>) -> Result<Option<i16>, String> {
    Ok(fixed::<2>(b, "a smallint")?.map(i16::from_be_bytes))
}

fn int4(b: Option<&[u8]>) -> Result<Option<i32>, String> {
    Ok(fixed::<4>(b, "an int")?.map(i32::from_be_bytes))
}

fn int8(b: Option<&[u8]>) -> Result<Option<i64>, String> {
    Ok(fixed::<8>(b, "a bigint")?.map(i64::from_be_bytes))
}

/// Microseconds from PostgreSQL's epoch (2000-01-01) to the Unix epoch.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// What a [`Timestamp`] (nanoseconds in an `i64`) spans, for messages.
const TIME_RANGE: &str = "retryctl's times span 1677-09-21 to 2262-04-11";

/// A `timestamp` (microseconds since 2000-01-01; `infinity` is `i64::MAX`).
fn time(b: Option<&[u8]>) -> Result<Option<Timestamp>, String> {
    let Some(us) = int8(b)? else { return Ok(None) };
    match us {
        i64::MAX => Err(format!("`infinity` is not a time ({TIME_RANGE})")),
        i64::MIN => Err(format!("`-infinity` is not a time ({TIME_RANGE})")),
        _ => us
            .checked_add(PG_EPOCH_MICROS)
            .and_then(|u| u.checked_mul(1000))
            .map(|ns| Some(Timestamp(ns)))
            .ok_or_else(|| {
                let side = if us > 0 { "after 2262" } else { "before 1677" };
                format!("a time {side} is out of range ({TIME_RANGE})")
            }),
    }
}

fn annotations(b: Option<&[u8]>) -> Result<std::collections::BTreeMap<String, String>, String> {
    let Some(b) = b else { return Ok(Default::default()) };
    let t = text(b)?;
    if t.len() > ANNOTATIONS_MAX && t.chars().count() > ANNOTATIONS_MAX {
        return Err(format!("longer than {ANNOTATIONS_MAX} characters"));
    }
    // The usual case in one pass; the slow path says what is wrong.
    if let Ok(map) = serde_json::from_str(t) {
        return Ok(map);
    }
    let value: serde_json::Value = serde_json::from_str(t).map_err(|e| format!("not JSON ({e})"))?;
    mapping::annotations(&value)
}

/// zlib streams (`internal/common/compress`) → text, at most [`ERROR_TEXT_MAX`] bytes of it,
/// with one decompressor and one output buffer reused for every run.
struct Inflater {
    z: flate2::Decompress,
    /// One byte more than kept: filling it tells a cut text from one of exactly the cap.
    out: Box<[u8]>,
}

impl Inflater {
    fn new() -> Inflater {
        Inflater {
            z: flate2::Decompress::new(true),
            out: vec![0; ERROR_TEXT_MAX + 1].into_boxed_slice(),
        }
    }

    /// `(text, cut)`; `Err` when `input` is not a zlib stream. `input` is at most
    /// [`ERROR_BYTES_MAX`] + 1 bytes of the column: more means the server cut it.
    fn text(&mut self, input: &[u8]) -> Result<(String, bool), String> {
        let input_cut = input.len() > ERROR_BYTES_MAX;
        let input = &input[..input.len().min(ERROR_BYTES_MAX)];
        // RFC 1950's header (deflate, a check multiple of 31): the decoder only says
        // "decompression error" about it.
        let header =
            input.len() >= 2 && input[0] & 0x0F == 8 && (u16::from(input[0]) << 8 | u16::from(input[1])) % 31 == 0;
        if !header {
            return Err("not a zlib stream (no zlib header)".into());
        }
        self.z.reset(true);
        let (mut read, mut written) = (0, 0);
        loop {
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .decompress(&input[read..], &mut self.out[written..], flate2::FlushDecompress::None)
                .map_err(|e| format!("a corrupt zlib stream ({e})"))?;
            read += (self.z.total_in() - in0) as usize;
            written += (self.z.total_out() - out0) as usize;
            if status == flate2::Status::StreamEnd {
                return Ok((error_text(&self.out[..written], false), false));
            }
            if written > ERROR_TEXT_MAX {
                return Ok((error_text(&self.out[..written], true), true));
            }
            if self.z.total_in() == in0 && self.z.total_out() == out0 {
                if input_cut {
                    // Past what was read, the stream was not looked at.
                    return Ok((error_text(&self.out[..written], true), true));
                }
                return Err("a zlib stream that ends early".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn zlib(bytes: &[u8], level: u32) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn inflating_stops_at_the_cap() {
        let mut inf = Inflater::new();
        assert_eq!(
            inf.text(&zlib(b"OOMKilled", 6)).unwrap(),
            ("OOMKilled".to_string(), false)
        );
        assert_eq!(inf.text(&zlib(b"boom", 0)).unwrap(), ("boom".to_string(), false));
        // Exactly the cap: not cut.
        let exact = vec![b'a'; ERROR_TEXT_MAX];
        let (t, cut) = inf.text(&zlib(&exact, 6)).unwrap();
        assert_eq!((t.len(), cut), (ERROR_TEXT_MAX, false));
        // A bomb: 64 MiB of zeros in 64 KiB; the text is cut at the cap, marked.
        let bomb = zlib(&vec![0u8; 64 << 20], 9);
        assert!(bomb.len() < 128 << 10, "{}", bomb.len());
        let (t, cut) = inf.text(&bomb).unwrap();
        assert!(cut);
        assert_eq!(t.len(), ERROR_TEXT_MAX + mapping::TRUNCATED.len());
        assert!(t.ends_with("\0… [truncated]"));
        // A stored (level 0) text longer than the cap, read only in part by the server.
        let long = zlib(&vec![b'x'; 3 * ERROR_TEXT_MAX], 0);
        let (t, cut) = inf.text(&long[..ERROR_BYTES_MAX + 1]).unwrap();
        assert!(cut);
        assert_eq!(t, format!("{}… [truncated]", "x".repeat(ERROR_TEXT_MAX)));
        // A character cut in two by the cap is dropped, not replaced.
        let mut text = vec![b'a'; ERROR_TEXT_MAX - 1];
        text.extend_from_slice("é and more".as_bytes());
        let (t, _) = inf.text(&zlib(&text, 6)).unwrap();
        assert_eq!(t, format!("{}… [truncated]", "a".repeat(ERROR_TEXT_MAX - 1)));
        // The decompressor is reused: a good stream after a cut one reads whole.
        assert_eq!(inf.text(&zlib(b"again", 6)).unwrap(), ("again".to_string(), false));
    }

    #[test]
    fn streams_that_are_not_zlib_are_refused() {
        let mut inf = Inflater::new();
        assert_eq!(
            inf.text(b"not a zlib stream").unwrap_err(),
            "not a zlib stream (no zlib header)"
        );
        let mut corrupt = zlib(b"a message", 6);
        corrupt[2] ^= 0xFF;
        assert_eq!(
            inf.text(&corrupt).unwrap_err(),
            "a corrupt zlib stream (deflate decompression error: invalid code lengths set)"
        );
        let good = zlib(b"a message long enough to be cut short", 6);
        assert_eq!(
            inf.text(&good[..good.len() / 2]).unwrap_err(),
            "a zlib stream that ends early"
        );
        assert_eq!(inf.text(&zlib(b"fine", 6)).unwrap(), ("fine".to_string(), false));
    }

    #[test]
    fn times_outside_a_timestamp_are_errors() {
        let t = |us: i64| time(Some(&us.to_be_bytes()));
        assert_eq!(t(0).unwrap().unwrap().to_string(), "2000-01-01T00:00:00Z");
        assert_eq!(t(-1).unwrap().unwrap().to_string(), "1999-12-31T23:59:59.999999Z");
        assert_eq!(
            t(i64::MAX).unwrap_err(),
            "`infinity` is not a time (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        assert_eq!(
            t(i64::MIN).unwrap_err(),
            "`-infinity` is not a time (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        // 294276-12-31, PostgreSQL's last day; and 1500-01-01.
        assert_eq!(
            t(9_223_371_244_800_000_000).unwrap_err(),
            "a time after 2262 is out of range (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        assert_eq!(
            t(-15_778_454_400_000_000).unwrap_err(),
            "a time before 1677 is out of range (retryctl's times span 1677-09-21 to 2262-04-11)"
        );
        assert_eq!(time(None), Ok(None));
        assert_eq!(time(Some(&[0, 1])).unwrap_err(), "2 bytes where a bigint has 8");
    }

    #[test]
    fn the_statement_reads_one_past_each_cap() {
        // One more than kept tells a value cut by the server from one of exactly the cap.
        assert!(COLUMNS.contains(&format!("left(j.annotations::text, {})", ANNOTATIONS_MAX + 1)));
        assert!(COLUMNS.contains(&format!("substring(r.error FROM 1 FOR {})", ERROR_BYTES_MAX + 1)));
        assert!(COLUMNS.contains(&format!("substring(r.debug FROM 1 FOR {})", ERROR_BYTES_MAX + 1)));
    }

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

    /// A job id that is not UTF-8 is kept as a key no id can be, and its bytes come back
    /// exactly, as a parameter and as a literal; any other id is itself.
    #[test]
    fn a_key_keeps_the_exact_bytes_of_an_id_that_is_not_utf8() {
        let bad = b"ml-05\xff'\\x\x01";
        let key = key_of(bad);
        assert_eq!(key, "\0ml-05".replace("ml-05", "6d6c2d3035ff275c7801"));
        assert_eq!(key_bytes(&key).as_ref(), bad);
        assert_eq!(key_literal(&key).unwrap(), r"E'ml-05\xff''\\x\x01'");
        for good in ["ml-05", "", "é", "\0zz", "\0abc"] {
            if !good.starts_with('\0') {
                assert_eq!(key_of(good.as_bytes()), good);
            }
            assert_eq!(key_bytes(good).as_ref(), good.as_bytes(), "{good:?}");
        }
        assert_eq!(key_literal("a'b").unwrap(), "E'a''b'");
    }

    #[test]
    fn rows_are_parsed_across_any_split() {
        // Header, one row (job without runs: NULL run columns), trailer.
        let mut s = SIGNATURE.to_vec();
        s.extend_from_slice(&0i32.to_be_bytes());
        s.extend_from_slice(&0i32.to_be_bytes());
        s.extend_from_slice(&(FIELDS as i16).to_be_bytes());
        for i in 0..FIELDS {
            match i {
                JOB_ID => {
                    s.extend_from_slice(&2i32.to_be_bytes());
                    s.extend_from_slice(b"j1");
                }
                _ => s.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        let row_end = s.len();
        s.extend_from_slice(&(-1i16).to_be_bytes());
        let header = 19;
        assert!(matches!(parse_header(&s[..header - 1]), Ok(Parsed::Incomplete)));
        assert!(matches!(parse_header(&s), Ok(Parsed::Skip(19, false))));
        let mut fields = [None; FIELDS];
        for cut in header..row_end {
            assert!(
                matches!(parse_row(&s[header..cut], &mut fields), Ok(Parsed::Incomplete)),
                "{cut}"
            );
        }
        assert!(matches!(parse_row(&s[header..], &mut fields), Ok(Parsed::Row(n)) if n == row_end - header));
        assert_eq!(fields[JOB_ID], Some((6, 8)));
        assert_eq!(fields[RUN_ID], None);
        assert!(matches!(
            parse_row(&s[row_end..], &mut fields),
            Ok(Parsed::Skip(2, true))
        ));
        assert_eq!(
            parse_row(&3i16.to_be_bytes(), &mut fields).err().unwrap(),
            "a row of 3 fields where the statement reads 22"
        );
        assert!(parse_header(b"PGCOPY\n\xff\r\n\x01xxxxxxxx").is_err());
    }

    /// A row whose text is not UTF-8 is left out as any row that cannot be read: a job's own
    /// row (`job_id`, `queue`) leaves the job out, named with those bytes as `\xNN` and keyed
    /// by its exact bytes, its runs skipped; a run's (`run_id`, `node`, `failure_category`,
    /// `failure_subcategory`) leaves that run out, the job kept with its other runs. No text
    /// is guessed (`�`), and the rows after it are read.
    #[test]
    fn a_row_whose_text_is_not_utf8_is_left_out_and_the_rows_after_it_are_read() {
        let row = |values: &[(usize, &[u8])]| {
            let mut buf = Vec::new();
            let mut fields = [None; FIELDS];
            for &(col, bytes) in values {
                fields[col] = Some((buf.len(), buf.len() + bytes.len()));
                buf.extend_from_slice(bytes);
            }
            (buf, fields)
        };
        let zero = 0i64.to_be_bytes();
        let state = 4i16.to_be_bytes();
        let run = |id: &'static [u8], queue: &'static [u8], run: &'static [u8], col: usize, value: &'static [u8]| {
            let mut r = vec![
                (JOB_ID, id),
                (MEMORY, &zero[..]),
                (CPU, &zero[..]),
                (GPU, &zero[..]),
                (SUBMITTED, &zero[..]),
                (QUEUE, queue),
                (RUN_ID, run),
                (STATE, &state[..]),
            ];
            match r.iter_mut().find(|(c, _)| *c == col) {
                Some(kept) => kept.1 = value,
                None => r.push((col, value)),
            }
            r
        };
        let mut group = Group::new();
        let rows = [
            run(b"ml-05\xff\x1b", b"ml", b"r1", NODE, b"n1"),
            run(b"ml-05\xff\x1b", b"ml", b"r2", NODE, b"n2"),
            run(b"ml-06", b"ml", b"r1", NODE, b"n\xc3"),
            run(b"ml-06", b"ml", b"r\xff2", NODE, b"n2"),
            run(b"ml-06", b"ml", b"r3", CATEGORY, b"oom\xfe"),
            run(b"ml-06", b"ml", b"r4", SUBCATEGORY, b"\xe2\x82"),
            run(b"ml-06", b"ml", b"r5", NODE, b"n5"),
            run(b"ml-07", b"ml\xfe", b"r1", NODE, b"n1"),
            run(b"ml-08", b"ml", b"r1", NODE, b"n1"),
        ];
        for r in &rows {
            let (buf, fields) = row(r);
            group.take(&Row {
                buf: &buf,
                fields: &fields,
            });
        }
        group.flush();
        let said: Vec<String> = group
            .pending
            .iter()
            .map(|item| match item {
                Item::Bad(e) => format!("{} [{}]", e.left_out(), e.job_key().escape_debug()),
                Item::Job(j) => {
                    let runs: Vec<&str> = j.runs.iter().map(|r| r.run_id.as_str()).collect();
                    format!("{}: {runs:?}, {} unreadable", j.job.job_id, j.unreadable_runs)
                }
            })
            .collect();
        assert_eq!(
            said,
            [
                "job `ml-05\\xff\u{1b}`: column job_id: not UTF-8 (byte 5); job left out [\\06d6c2d3035ff1b]",
                "job `ml-06` run `r1`: column node: not UTF-8 (byte 1); run left out [ml-06]",
                "job `ml-06` run `r\\xff2`: column run_id: not UTF-8 (byte 1); run left out [ml-06]",
                "job `ml-06` run `r3`: column failure_category: not UTF-8 (byte 3); run left out [ml-06]",
                "job `ml-06` run `r4`: column failure_subcategory: not UTF-8 (byte 0); run left out [ml-06]",
                "ml-06: [\"r5\"], 4 unreadable",
                "job `ml-07`: column queue: not UTF-8 (byte 2); job left out [ml-07]",
                "ml-08: [\"r1\"], 0 unreadable",
            ]
        );
        // The key gives the id's bytes back exactly (`watch`'s cursor and the polls that
        // read its span again).
        let Item::Bad(e) = &group.pending[0] else {
            unreachable!()
        };
        assert_eq!(key_bytes(e.job_key()).as_ref(), b"ml-05\xff\x1b");
    }
}
