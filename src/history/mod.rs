//! Real cluster history → FailureHistory documents (SPEC §3.3, `retryctl history`).
//!
//! Owns: the [`Filter`] both sources apply, the streaming interface they share (an iterator
//! of [`Item`]: one job with all its runs at a time, so memory does not grow with the number
//! of jobs), and the masking of a DSN for messages. Must not: format output (the command and
//! `output::history` do), or guess what Lookout does not say (`mapping` counts it instead).
//!
//! - [`lookout_db`]: Lookout's PostgreSQL, streamed through a server-side cursor.
//! - [`lookout_api`]: Lookout's REST API, paged with skip/take.
//! - [`mapping`]: the rows → FailureHistory mapping, pure.

pub mod lookout_api;
pub mod lookout_db;
pub mod mapping;

use crate::model::history::Timestamp;

pub use mapping::{LookoutJob, RowError};

/// The jobs to export. Times bound `job.submitted`: `from` inclusive, `to` exclusive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub queue: String,
    pub jobset: Option<String>,
    pub jobs: Vec<String>,
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
}

/// What a source yields, job by job. A fatal error (connection lost) ends the stream as
/// `Err(anyhow::Error)`; a row the source itself cannot read is an [`Item::Bad`].
#[derive(Debug)]
pub enum Item {
    Job(LookoutJob),
    Bad(RowError),
}

/// A source of jobs: a boxed iterator, so the command treats both alike.
pub type Source<'a> = Box<dyn Iterator<Item = anyhow::Result<Item>> + 'a>;

/// `postgresql://user:secret@host/db` → `postgresql://user:***@host/db`; in key=value form,
/// `password=secret` → `password=***`. Never prints a password, whatever the DSN's shape.
pub fn mask_dsn(dsn: &str) -> String {
    if dsn.contains("://") {
        return crate::redact::redact_url(dsn);
    }
    mask_password_param(dsn)
}

/// Key=value DSNs (`host=db password=x`): the URL form goes through [`crate::redact`].
fn mask_password_param(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if part.starts_with("password=") {
            out.push_str("password=***");
        } else {
            out.push_str(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::mask_dsn;

    #[test]
    fn passwords_never_show() {
        for (dsn, want) in [
            (
                "postgresql://user:s3cret@db:5432/lookout",
                "postgresql://user:***@db:5432/lookout",
            ),
            ("postgres://user@db/lookout", "postgres://user@db/lookout"),
            (
                "postgresql://u:p@h/db?sslmode=disable&password=x",
                "postgresql://u:***@h/db?sslmode=disable&password=***",
            ),
            ("postgresql://h/db?password=x", "postgresql://h/db?password=***"),
            (
                "host=db user=u password=s3cret dbname=l",
                "host=db user=u password=*** dbname=l",
            ),
            ("postgresql://u:p@w@h/db", "postgresql://u:***@h/db"),
        ] {
            assert_eq!(mask_dsn(dsn), want, "{dsn}");
        }
    }
}
