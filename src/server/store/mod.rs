//! Storage for `retryctl serve`: SQLite (the truth) plus an in-memory copy of every stored
//! response body (what reads are served from), shared by the REST API and the gRPC services.
//!
//! Owns: the [`Store`] API (reads, and each write's transaction with its existence and
//! version checks), [`StoreError`] (why a write did not happen) and [`Versioned`] (a body
//! and its version). Must not: know HTTP, gRPC, JSON shapes or validation; callers hand it
//! validated models and their already-encoded bodies.
//!
//! The parts, one concept each:
//! - `types.rs`: what crosses the store's boundary ([`Location`], [`StoreError`],
//!   [`Versioned`]);
//! - `cache.rs`: the read cache every read answers from;
//! - `writer.rs`: the group-commit writer, the one thread that writes (a queue of writes, a
//!   transaction per batch, a savepoint per write, the cache updated after the commit);
//! - `sqlite.rs`: the file itself: opening, the lock, the schema and its migrations, loading
//!   the cache, the checkpointer and the WAL's early writeback.
//!
//! Consistency: writes are serialised on the writer thread, which updates the cache only
//! after the commit, so a read never sees a write that was not committed. A write that is
//! answered 200 has committed.
//!
//! Integrity: attaching policies to a queue and deleting a policy check existence inside the
//! same transaction as the write, and the join table carries a foreign key to `retry_policy`
//! (no cascade) with `PRAGMA foreign_keys = ON`, so even a bug in the checks could not leave a
//! queue referencing a missing policy.

use std::sync::{Arc, Mutex, RwLock};

use axum::body::Bytes;
use rusqlite::{params, Connection, OptionalExtension};

use crate::model::Queue;

mod cache;
mod sqlite;
mod types;
mod writer;

use cache::{cache_put, cache_remove, Cache};
pub use sqlite::integrity_check;
use sqlite::Checkpointer;
pub use types::{Location, StoreError, Versioned};
pub use writer::Pending;
use writer::{Shared, Work, Writer};

/// Whether a write may proceed, given the version it expects (`If-Match`).
fn check_version(current: Option<u64>, expected: Option<u64>) -> Result<(), StoreError> {
    match (expected, current) {
        (None, _) => Ok(()),
        (Some(e), Some(c)) if e == c => Ok(()),
        (Some(_), _) => Err(StoreError::Stale),
    }
}

/// The version of `name` in `table` for a write that needs it to exist: `NotFound` when it
/// does not (and no version was expected), `Stale` when it is not the `If-Match` version.
fn existing_version(
    db: &Connection,
    table: &'static str,
    name: &str,
    expected: Option<u64>,
) -> Result<u64, StoreError> {
    let current = version_of(db, table, name)?;
    if current.is_none() && expected.is_none() {
        return Err(StoreError::NotFound);
    }
    check_version(current, expected)?;
    // Some by now: an expected version of a missing row is `Stale` above.
    Ok(current.unwrap_or_default())
}

pub struct Store {
    /// An exclusive `flock` on the database file, held for the store's life: one server per
    /// file (docs/serve.md), since two would each answer reads from their own cache.
    _lock: Option<std::fs::File>,
    /// The connection and the cache, shared with the writer thread.
    shared: Arc<Shared>,
    /// The background checkpointer of a file database.
    checkpointer: Mutex<Option<Checkpointer>>,
    /// The writer thread every write is queued to.
    writer: Writer,
    location: Location,
}

impl Store {
    /// Opens (creating when missing) and migrates the database, then loads the cache.
    pub fn open(location: Location) -> anyhow::Result<Store> {
        use anyhow::Context as _;
        let (conn, lock) = sqlite::open(&location)?;
        let describe = location.named();
        let cache = sqlite::load(&conn)
            .map_err(sqlite::flat)
            .with_context(|| format!("cannot read the database {describe}"))?;
        let checkpointer = match &location {
            Location::File(path) => {
                Some(sqlite::spawn_checkpointer(path).with_context(|| format!("cannot open the database {describe}"))?)
            }
            Location::InMemory => None,
        };
        let shared = Arc::new(Shared {
            conn: Mutex::new(Some(conn)),
            cache: RwLock::new(cache),
        });
        let writer = Writer::spawn(shared.clone()).with_context(|| format!("cannot open the database {describe}"))?;
        Ok(Store {
            _lock: lock,
            shared,
            checkpointer: Mutex::new(checkpointer),
            writer,
            location,
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Checkpoints the WAL into the main file and closes the connection. Later writes fail
    /// with `Unavailable`; reads keep answering from the cache.
    pub fn close(&self) -> Result<(), String> {
        // First the writer: writes already queued commit and are answered; later ones are
        // refused as the database being closed.
        self.writer.stop();
        let checkpointer = self.checkpointer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(checkpointer) = checkpointer {
            checkpointer.stop();
        }
        let mut guard = self.shared.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(conn) = guard.take() {
            if matches!(self.location, Location::File(_)) {
                conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                    .map_err(|e| e.to_string())?;
            }
            conn.close().map_err(|(_, e)| e.to_string())?;
        }
        Ok(())
    }

    // -------------------------------------------------------------------------------
    // reads (cache)

    pub fn policy(&self, name: &str) -> Option<Versioned> {
        self.read().policy(name)
    }

    /// Every policy body, ordered by name.
    pub fn policies(&self) -> Vec<Bytes> {
        self.read().policy_bodies()
    }

    pub fn queue(&self, name: &str) -> Option<Versioned> {
        self.read().queue(name)
    }

    /// The first `limit` queue bodies ordered by name (all when `None`).
    pub fn queues(&self, limit: Option<usize>) -> Vec<Bytes> {
        self.read().queue_bodies(limit)
    }

    /// Every policy with its name, ordered by name.
    pub fn policy_entries(&self) -> Vec<(String, Versioned)> {
        self.read().policy_entries()
    }

    /// The first `limit` queues with their names, ordered by name (all when `None`).
    pub fn queue_entries(&self, limit: Option<usize>) -> Vec<(String, Versioned)> {
        self.read().queue_entries(limit)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.shared.cache.read().unwrap_or_else(|e| e.into_inner())
    }

    // -------------------------------------------------------------------------------
    // writes (queued to the writer thread: `.await` the answer, or `wait()` off the runtime)

    /// Queues `work` for the writer thread; the answer comes once the batch holding it has
    /// committed (see `writer.rs`).
    fn write(&self, work: Work) -> Pending {
        self.writer.queue(work)
    }

    /// Inserts a new policy at version 1; `AlreadyExists` when the name is taken.
    pub fn create_policy(&self, name: &str, body: Bytes) -> Pending {
        let name = name.to_string();
        self.write(Box::new(move |db| {
            let inserted = db
                .prepare_cached(
                    "INSERT INTO retry_policy (name, definition, version) VALUES (?1, ?2, 1) ON CONFLICT (name) DO NOTHING",
                )?
                .execute(params![name, utf8(&body)])?;
            if inserted == 0 {
                return Err(StoreError::AlreadyExists);
            }
            Ok(cache_put(Cache::policies_mut, name, body, 1))
        }))
    }

    /// Replaces an existing policy and bumps its version; `NotFound` when there is none,
    /// `Stale` when `expected` is not the stored version. Returns the new version.
    pub fn update_policy(&self, name: &str, body: Bytes, expected: Option<u64>) -> Pending {
        let name = name.to_string();
        self.write(Box::new(move |db| {
            let version = existing_version(db, "retry_policy", &name, expected)? + 1;
            db.prepare_cached("UPDATE retry_policy SET definition = ?2, version = ?3 WHERE name = ?1")?
                .execute(params![name, utf8(&body), version as i64])?;
            Ok(cache_put(Cache::policies_mut, name, body, version))
        }))
    }

    /// Deletes a policy no queue uses; `InUse` names the queues that do. (Answers 0.)
    pub fn delete_policy(&self, name: &str, expected: Option<u64>) -> Pending {
        let name = name.to_string();
        self.write(Box::new(move |db| {
            existing_version(db, "retry_policy", &name, expected)?;
            let users: Vec<String> = {
                let mut stmt = db.prepare_cached(
                    "SELECT queue_name FROM queue_retry_policy WHERE policy_name = ?1 ORDER BY queue_name",
                )?;
                let rows = stmt.query_map([&name], |r| r.get(0))?;
                rows.collect::<Result<_, _>>()?
            };
            if !users.is_empty() {
                return Err(StoreError::InUse(users));
            }
            db.prepare_cached("DELETE FROM retry_policy WHERE name = ?1")?
                .execute([&name])?;
            Ok(cache_remove(Cache::policies_mut, name))
        }))
    }

    /// Writes a queue and its attachments. `create`: fail with `AlreadyExists` when the
    /// queue exists; otherwise replace it (upstream's update is an upsert), refusing with
    /// `Stale` when `expected` is not the stored version (a missing queue matches nothing).
    /// Every attached policy must exist, checked in the same transaction. Returns the new
    /// version.
    pub fn put_queue(&self, queue: &Queue, body: Bytes, create: bool, expected: Option<u64>) -> Pending {
        let name = queue.name.clone();
        let policies = queue.retry_policies.clone();
        self.write(Box::new(move |db| {
            let current = version_of(db, "queue", &name)?;
            if create && current.is_some() {
                return Err(StoreError::AlreadyExists);
            }
            check_version(current, expected)?;
            let mut missing = Vec::new();
            {
                let mut stmt = db.prepare_cached("SELECT 1 FROM retry_policy WHERE name = ?1")?;
                for p in &policies {
                    if stmt.query_row([p], |_| Ok(())).optional()?.is_none() {
                        missing.push(p.clone());
                    }
                }
            }
            if !missing.is_empty() {
                return Err(StoreError::UnknownPolicies(missing));
            }
            let version = current.unwrap_or(0) + 1;
            db.prepare_cached(
                "INSERT INTO queue (name, definition, version) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, version = excluded.version",
            )?
            .execute(params![name, utf8(&body), version as i64])?;
            db.prepare_cached("DELETE FROM queue_retry_policy WHERE queue_name = ?1")?
                .execute([&name])?;
            {
                let mut stmt = db.prepare_cached(
                    "INSERT INTO queue_retry_policy (queue_name, policy_name, ordinal) VALUES (?1, ?2, ?3)",
                )?;
                for (i, p) in policies.iter().enumerate() {
                    stmt.execute(params![name, p, i as i64])?;
                }
            }
            Ok(cache_put(Cache::queues_mut, name, body, version))
        }))
    }

    /// Deletes a queue and its attachments; `NotFound` when there is none. (Answers 0.)
    pub fn delete_queue(&self, name: &str, expected: Option<u64>) -> Pending {
        let name = name.to_string();
        self.write(Box::new(move |db| {
            existing_version(db, "queue", &name, expected)?;
            // The join rows go by ON DELETE CASCADE.
            db.prepare_cached("DELETE FROM queue WHERE name = ?1")?
                .execute([&name])?;
            Ok(cache_remove(Cache::queues_mut, name))
        }))
    }
}

/// The stored version of a row, inside the write's transaction. `table` is one of two
/// constants, never user input.
fn version_of(tx: &Connection, table: &'static str, name: &str) -> Result<Option<u64>, StoreError> {
    let sql = if table == "queue" {
        "SELECT version FROM queue WHERE name = ?1"
    } else {
        "SELECT version FROM retry_policy WHERE name = ?1"
    };
    let v: Option<i64> = tx.prepare_cached(sql)?.query_row([name], |r| r.get(0)).optional()?;
    Ok(v.map(|v| v as u64))
}

/// Bodies are produced by `serde_json`, so always UTF-8; stored as TEXT so that the file
/// can be read with the `sqlite3` shell.
fn utf8(body: &Bytes) -> &str {
    std::str::from_utf8(body).expect("JSON bodies are UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(name: &str, policies: &[&str]) -> Queue {
        Queue {
            name: name.into(),
            retry_policies: policies.iter().map(|s| s.to_string()).collect(),
            ..Queue::default()
        }
    }

    #[test]
    fn references_are_checked_in_both_directions() {
        let s = Store::open(Location::InMemory).unwrap();
        s.create_policy("p1", Bytes::from_static(b"{}")).wait().unwrap();
        assert!(matches!(
            s.create_policy("p1", Bytes::from_static(b"{}")).wait(),
            Err(StoreError::AlreadyExists)
        ));
        match s
            .put_queue(
                &queue("q1", &["p1", "ghost", "p2"]),
                Bytes::from_static(b"{}"),
                true,
                None,
            )
            .wait()
        {
            Err(StoreError::UnknownPolicies(m)) => assert_eq!(m, ["ghost", "p2"]),
            other => panic!("{other:?}"),
        }
        assert!(s.queue("q1").is_none(), "a refused write changes nothing");
        s.put_queue(&queue("q1", &["p1"]), Bytes::from_static(b"{}"), true, None)
            .wait()
            .unwrap();
        s.put_queue(&queue("q0", &["p1"]), Bytes::from_static(b"{}"), false, None)
            .wait()
            .unwrap();
        match s.delete_policy("p1", None).wait() {
            Err(StoreError::InUse(q)) => assert_eq!(q, ["q0", "q1"]),
            other => panic!("{other:?}"),
        }
        s.put_queue(&queue("q1", &[]), Bytes::from_static(b"{}"), false, None)
            .wait()
            .unwrap();
        s.delete_queue("q0", None).wait().unwrap();
        s.delete_policy("p1", None).wait().unwrap();
        assert!(matches!(s.delete_policy("p1", None).wait(), Err(StoreError::NotFound)));
        assert!(matches!(s.delete_queue("q0", None).wait(), Err(StoreError::NotFound)));
    }

    /// The database itself refuses a dangling attachment, whatever the checks above it do.
    #[test]
    fn the_schema_refuses_a_dangling_attachment() {
        let s = Store::open(Location::InMemory).unwrap();
        s.put_queue(&queue("q1", &[]), Bytes::from_static(b"{}"), true, None)
            .wait()
            .unwrap();
        let guard = s.shared.conn.lock().unwrap();
        let err = guard
            .as_ref()
            .unwrap()
            .execute(
                "INSERT INTO queue_retry_policy (queue_name, policy_name, ordinal) VALUES ('q1', 'ghost', 0)",
                [],
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "FOREIGN KEY constraint failed");
    }

    #[test]
    fn busy_is_temporary_and_everything_else_permanent() {
        let busy = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(5), None);
        assert!(matches!(StoreError::from(busy), StoreError::Unavailable(_)));
        let readonly = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(8), None);
        assert!(matches!(StoreError::from(readonly), StoreError::Sql(_)));
        let s = Store::open(Location::InMemory).unwrap();
        s.close().unwrap();
        assert!(matches!(
            s.create_policy("p", Bytes::from_static(b"{}")).wait(),
            Err(StoreError::Unavailable(_))
        ));
    }

    #[test]
    fn versions_start_at_1_and_a_stale_expectation_changes_nothing() {
        let s = Store::open(Location::InMemory).unwrap();
        assert_eq!(s.create_policy("p", Bytes::from_static(b"a")).wait().unwrap(), 1);
        assert_eq!(
            s.update_policy("p", Bytes::from_static(b"b"), Some(1)).wait().unwrap(),
            2
        );
        assert!(matches!(
            s.update_policy("p", Bytes::from_static(b"c"), Some(1)).wait(),
            Err(StoreError::Stale)
        ));
        assert!(matches!(s.delete_policy("p", Some(1)).wait(), Err(StoreError::Stale)));
        assert_eq!(
            s.policy("p").unwrap(),
            Versioned {
                body: Bytes::from_static(b"b"),
                version: 2
            }
        );
        assert_eq!(s.update_policy("p", Bytes::from_static(b"d"), None).wait().unwrap(), 3);
        let q = queue("q", &[]);
        assert_eq!(
            s.put_queue(&q, Bytes::from_static(b"{}"), true, None).wait().unwrap(),
            1
        );
        assert!(matches!(
            s.put_queue(&q, Bytes::from_static(b"{}"), false, Some(5)).wait(),
            Err(StoreError::Stale)
        ));
        assert_eq!(
            s.put_queue(&q, Bytes::from_static(b"{}"), false, Some(1))
                .wait()
                .unwrap(),
            2
        );
        s.delete_queue("q", Some(2)).wait().unwrap();
    }

    #[test]
    fn one_store_per_file_and_a_corrupt_file_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let first = Store::open(Location::File(path.clone())).unwrap();
        let err = Store::open(Location::File(path.clone())).err().unwrap();
        assert_eq!(
            format!("{err:#}"),
            format!(
                "the database `{}` is in use by another process (another `retryctl serve`?); one server per database file",
                path.display()
            )
        );
        first.close().unwrap();
        drop(first);
        Store::open(Location::File(path.clone())).unwrap().close().unwrap();

        // A damaged page deep in a valid file: refused at open by quick_check, not found
        // later by a write.
        let damaged = dir.path().join("damaged.db");
        let s = Store::open(Location::File(damaged.clone())).unwrap();
        for i in 0..300 {
            let body = format!("{{\"name\":\"p{i}\",\"pad\":\"{}\"}}", "x".repeat(200));
            s.create_policy(&format!("p{i}"), Bytes::from(body)).wait().unwrap();
        }
        s.close().unwrap();
        drop(s);
        let mut bytes = std::fs::read(&damaged).unwrap();
        let page = 4096;
        assert!(bytes.len() > 8 * page);
        for b in &mut bytes[5 * page + 8..5 * page + 64] {
            *b = 0xA5;
        }
        std::fs::write(&damaged, bytes).unwrap();
        let err = format!("{:#}", Store::open(Location::File(damaged.clone())).err().unwrap());
        assert!(
            err.starts_with(&format!(
                "the database `{}` is corrupt (PRAGMA quick_check: ",
                damaged.display()
            )),
            "{err}"
        );

        let bad = dir.path().join("bad.db");
        std::fs::write(&bad, vec![7u8; 8192]).unwrap();
        let err = format!("{:#}", Store::open(Location::File(bad.clone())).err().unwrap());
        assert!(err.contains(&bad.display().to_string()), "{err}");
    }

    #[test]
    fn reopening_a_file_keeps_everything_and_refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/armada.db");
        let s = Store::open(Location::File(path.clone())).unwrap();
        s.create_policy("p1", Bytes::from_static(b"{\"name\":\"p1\"}"))
            .wait()
            .unwrap();
        s.close().unwrap();
        drop(s);
        let s = Store::open(Location::File(path.clone())).unwrap();
        assert_eq!(s.policy("p1").unwrap().body, Bytes::from_static(b"{\"name\":\"p1\"}"));
        s.close().unwrap();
        drop(s);
        assert_eq!(integrity_check(&path).unwrap(), "ok");
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99")
            .unwrap();
        let err = Store::open(Location::File(path)).err().unwrap();
        assert_eq!(
            format!("{err:#}"),
            format!(
                "cannot migrate the database `{}`: the database has schema version 99, newer than this retryctl knows (2); use a newer retryctl",
                dir.path().join("sub/armada.db").display()
            )
        );
    }

    #[test]
    fn concurrent_writers_are_each_answered_once() {
        let s = Arc::new(Store::open(Location::InMemory).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut created = 0;
                    for i in 0..50 {
                        // Every name is tried by two threads: one creates it, one is refused.
                        match s
                            .create_policy(&format!("p{}-{i}", t / 2), Bytes::from_static(b"{}"))
                            .wait()
                        {
                            Ok(1) => created += 1,
                            Err(StoreError::AlreadyExists) => {}
                            other => panic!("{other:?}"),
                        }
                    }
                    created
                })
            })
            .collect();
        let created: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(created, 4 * 50);
        assert_eq!(s.policies().len(), 4 * 50);
        s.close().unwrap();
    }
}
