//! A connection to Lookout's database and the values sent to it.
//!
//! Owns: connecting (errors → exit 4 with the DSN masked, or 5 for wrong credentials), the
//! check that the tables a verb reads exist, a statement waited for within the connection's
//! silence bound, the server's error text as one escaped line, literals, and job ids as keys
//! that give back the exact bytes of an id that is not UTF-8. Must not: write a statement of
//! an export (`statement`) or read its rows (`stream`).

use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::NoTls;

use crate::error::{CliError, ExitCode};

/// A connection to Lookout's database.
pub struct Db {
    pub(in crate::lookout) client: tokio_postgres::Client,
    pub(in crate::lookout) shown: String,
    /// How long a statement may wait for a byte of the database's answer before it fails
    /// (`watch`'s, [`Db::answering_within`]): a database that accepts and then answers
    /// nothing (a black hole, no reset) is a failed poll, not a hang. `None`: as long as it
    /// takes (an export's sorted statement may think a while before its first row).
    pub(in crate::lookout) silence: Option<Duration>,
    /// Dropped last: the connection's task lives on it.
    pub(in crate::lookout) rt: tokio::runtime::Runtime,
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
    pub(in crate::lookout) fn wait<T>(
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
    pub(in crate::lookout) fn silent(&self) -> CliError {
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
    config_of(dsn).map(|_| ())
}

/// `dsn` as the client's config: a usage error when it does not parse or names no host (an
/// empty `--lookout-db`: the client has no default host to try).
fn config_of(dsn: &str) -> Result<tokio_postgres::Config, CliError> {
    let invalid = |why: &dyn std::fmt::Display| {
        CliError::usage(format!(
            "invalid `--lookout-db` `{}`: {why}",
            crate::redact::redact_dsn(dsn)
        ))
    };
    let config = tokio_postgres::Config::from_str(dsn).map_err(|e| invalid(&e))?;
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(invalid(
            &"no host (expected `postgresql://USER:PASSWORD@HOST:5432/DATABASE`)",
        ));
    }
    Ok(config)
}

/// Connects and checks that every table of `tables` exists, naming all that do not.
pub fn connect_with(dsn: &str, timeout: Duration, tables: &[&str]) -> Result<Db, CliError> {
    let shown = crate::redact::redact_dsn(dsn);
    let mut config = config_of(dsn)?;
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

pub(in crate::lookout) fn query_error(e: &tokio_postgres::Error, shown: &str) -> CliError {
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
/// server: connection refused`); on one line, its control characters escaped (`\x0a`,
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
                // The system's words lowercased, without Rust's `(os error 111)`.
                let s_text = match s.downcast_ref::<std::io::Error>() {
                    Some(io) => crate::input::io_reason(io),
                    None => s.to_string(),
                };
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
pub(in crate::lookout) struct RawText(pub(in crate::lookout) Vec<u8>);

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
pub(in crate::lookout) fn key_bytes(key: &str) -> std::borrow::Cow<'_, [u8]> {
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
pub(in crate::lookout) fn key_literal(key: &str) -> Result<String, CliError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
