//! What crosses the store's boundary: where the database lives ([`Location`]), why a write did
//! not happen ([`StoreError`]) and a stored body with its version ([`Versioned`]).
//!
//! Owns: those values. Must not: open, read or write the database (that is `Store`, the
//! writer and `sqlite.rs`); every part of the store imports it, so it imports none of them.

use std::path::PathBuf;

use axum::body::Bytes;

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    InMemory,
}

impl Location {
    /// As an error names it: a file's path in backticks, as every message shows a value.
    pub fn named(&self) -> String {
        match self {
            Location::File(p) => format!("`{}`", p.display()),
            Location::InMemory => "in memory".to_string(),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::InMemory => f.write_str("in memory"),
        }
    }
}

/// Why a write did not happen.
#[derive(Debug, Clone)]
pub enum StoreError {
    AlreadyExists,
    NotFound,
    /// Policies named by a queue that do not exist, in the order the queue lists them.
    UnknownPolicies(Vec<String>),
    /// Queues (sorted) that still reference the policy being deleted.
    InUse(Vec<String>),
    /// `If-Match` named a version that is no longer the stored one (or the resource is gone).
    Stale,
    /// The database failed for good (disk full, I/O error, corruption, read-only): 500.
    Sql(String),
    /// The database is busy or closed at shutdown: trying again later can work (503).
    Unavailable(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
        match e.sqlite_error_code() {
            Some(DatabaseBusy | DatabaseLocked) => StoreError::Unavailable(e.to_string()),
            _ => StoreError::Sql(e.to_string()),
        }
    }
}

/// A stored body and its version (what the `ETag` says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub body: Bytes,
    pub version: u64,
}
