//! Storage for `retryctl serve`: SQLite (the truth) plus an in-memory copy of every stored
//! response body (what reads are served from).
//!
//! Owns: the schema and its migrations, the write transactions with their existence checks,
//! and the read cache. Must not: know HTTP, JSON shapes or validation; callers hand it
//! validated models and their already-encoded bodies.
//!
//! Why a cache: rusqlite is blocking and a read through `spawn_blocking` costs a thread hop
//! and a statement per request; the whole data set of a retry-policy server is small (a few
//! thousand documents at most), so every read is answered from memory and SQLite only sees
//! writes. Consistency: writes are serialised on one writer thread, which updates the cache
//! only after the commit, so a read never sees a write that was not committed. A write that
//! is answered 200 has committed.
//!
//! Group commit: one writer thread owns the writes. A request queues its write and awaits
//! the answer (no blocking thread per request); the writer takes every write queued at that
//! moment, runs each in a savepoint of one `BEGIN IMMEDIATE` transaction (a write that fails
//! — a taken name, a stale version, a panic — rolls back to its savepoint and leaves the
//! others alone), commits once, updates the cache, then answers each write in queue order.
//! A write is answered only after the commit that holds it (an error if that commit failed).
//! Why: a transaction and a blocking thread per write made concurrent POSTs queue on the
//! connection's lock, each paying SQLite's per-transaction work (BENCHMARKS.md `## serve`).
//!
//! Integrity: attaching policies to a queue and deleting a policy check existence inside the
//! same transaction as the write, and the join table carries a foreign key to `retry_policy`
//! (no cascade) with `PRAGMA foreign_keys = ON`, so even a bug in the checks could not leave a
//! queue referencing a missing policy.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};

use axum::body::Bytes;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::model::Queue;

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    InMemory,
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

/// Migrations, in order; `PRAGMA user_version` is how many have run. Never edit one that
/// has shipped: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: policies and queues as their canonical JSON bodies; attachments in a join table
    // (like upstream's `queue_retry_policy`) so the database itself enforces references.
    "CREATE TABLE retry_policy (
        name TEXT PRIMARY KEY NOT NULL,
        definition TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE queue (
        name TEXT PRIMARY KEY NOT NULL,
        definition TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE queue_retry_policy (
        queue_name TEXT NOT NULL REFERENCES queue(name) ON DELETE CASCADE,
        policy_name TEXT NOT NULL REFERENCES retry_policy(name),
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (queue_name, policy_name)
    ) WITHOUT ROWID;
    CREATE INDEX idx_queue_retry_policy_policy_name ON queue_retry_policy(policy_name);",
    // 2: a version per row (SPEC §5.2), bumped in the same transaction as every write; the
    // ETag is this number. Rows written before it start at 1.
    "ALTER TABLE retry_policy ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE queue ADD COLUMN version INTEGER NOT NULL DEFAULT 1;",
];

/// A stored body and its version (what the `ETag` says).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub body: Bytes,
    pub version: u64,
}

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

#[derive(Default)]
struct Cache {
    policies: BTreeMap<String, Versioned>,
    queues: BTreeMap<String, Versioned>,
}

/// One of the cache's two maps, for the writes that change either the same way.
type CacheMap = fn(&mut Cache) -> &mut BTreeMap<String, Versioned>;

impl Cache {
    fn policies(&mut self) -> &mut BTreeMap<String, Versioned> {
        &mut self.policies
    }

    fn queues(&mut self) -> &mut BTreeMap<String, Versioned> {
        &mut self.queues
    }
}

/// A write's answer that stores `body` as `version` of `name` in `map` once the batch has
/// committed.
fn cache_put(map: CacheMap, name: String, body: Bytes, version: u64) -> (u64, CacheUpdate) {
    let update = move |cache: &mut Cache| {
        map(cache).insert(name, Versioned { body, version });
    };
    (version, Box::new(update))
}

/// A delete's answer (0) that drops `name` from `map` once the batch has committed.
fn cache_remove(map: CacheMap, name: String) -> (u64, CacheUpdate) {
    let update = move |cache: &mut Cache| {
        map(cache).remove(&name);
    };
    (0, Box::new(update))
}

pub struct Store {
    /// An exclusive `flock` on the database file, held for the store's life: one server per
    /// file (SPEC §6), since two would each answer reads from their own cache.
    _lock: Option<std::fs::File>,
    /// The connection and the cache, shared with the writer thread.
    shared: Arc<Shared>,
    /// The background checkpointer of a file database: dropping the sender stops it.
    checkpointer: Mutex<Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>>,
    /// Where writes are queued, and the writer thread; `None` once closed.
    writer: Mutex<Option<(std::sync::mpsc::Sender<Job>, std::thread::JoinHandle<()>)>>,
    location: Location,
}

struct Shared {
    /// The one connection; `None` once closed at shutdown.
    conn: Mutex<Option<Connection>>,
    cache: RwLock<Cache>,
}

/// One write: runs on the batch's connection, inside its own savepoint, and returns the
/// version it wrote and what to change in the cache once the batch has committed.
type Work = Box<dyn FnOnce(&Connection) -> Result<(u64, CacheUpdate), StoreError> + Send>;
type CacheUpdate = Box<dyn FnOnce(&mut Cache) + Send>;
/// A write's answer: its result, or the panic of its work (re-raised in the request's task,
/// where it becomes the 500 any handler panic becomes).
type Outcome = std::thread::Result<Result<u64, StoreError>>;

struct Job {
    work: Work,
    reply: tokio::sync::oneshot::Sender<Outcome>,
}

/// At most this many writes share a transaction, so that one commit stays short.
const MAX_BATCH: usize = 256;

/// The answer to a queued write: `.await` it on the runtime, or [`Pending::wait`] off it.
pub struct Pending {
    /// `None`: the store was closed before the write could be queued.
    answer: Option<tokio::sync::oneshot::Receiver<Outcome>>,
}

impl Pending {
    /// Blocks until the write's batch has committed. Not on an async worker thread.
    pub fn wait(self) -> Result<u64, StoreError> {
        match self.answer {
            Some(answer) => settle(answer.blocking_recv()),
            None => Err(closed()),
        }
    }
}

impl Future for Pending {
    type Output = Result<u64, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.answer.as_mut() {
            Some(answer) => Pin::new(answer).poll(cx).map(settle),
            None => Poll::Ready(Err(closed())),
        }
    }
}

fn settle(answer: Result<Outcome, tokio::sync::oneshot::error::RecvError>) -> Result<u64, StoreError> {
    match answer {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // The writer thread is gone (it unwound outside a write): nothing was answered.
        Err(_) => Err(StoreError::Sql("the database writer stopped".into())),
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the database is closed (server shutting down)".into())
}

/// `Some(conn)` or the error a write after shutdown gets.
fn open_conn(guard: &mut Option<Connection>) -> Result<&mut Connection, StoreError> {
    guard
        .as_mut()
        .ok_or_else(|| StoreError::Unavailable("the database is closed (server shutting down)".into()))
}

impl Store {
    /// Opens (creating when missing) and migrates the database, then loads the cache.
    pub fn open(location: Location) -> anyhow::Result<Store> {
        use anyhow::Context as _;
        let mut lock = None;
        let conn = match &location {
            Location::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create the database directory {}", dir.display()))?;
                }
                lock = Some(lock_file(path)?);
                Connection::open(path).with_context(|| format!("cannot open the database {}", path.display()))?
            }
            Location::InMemory => Connection::open_in_memory()?,
        };
        let describe = location.to_string();
        // rusqlite errors carry SQLite's own text as a second cause ("Error code 26: File
        // opened that is not a database file"); one line is enough for the user.
        let flat = |e: rusqlite::Error| anyhow::anyhow!("{e}");
        configure(&conn, matches!(location, Location::File(_)))
            .map_err(flat)
            .with_context(|| format!("cannot configure the database {describe}"))?;
        // SQLite silently opens a file it may not write read-only; every write would then
        // fail. Refuse it now instead.
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(flat)? {
            anyhow::bail!("the database {describe} is read-only; serve needs to write it");
        }
        // A damaged file is refused now, not discovered by the first write hours later.
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(flat)
            .with_context(|| format!("cannot check the database {describe}"))?;
        if check != "ok" {
            anyhow::bail!(
                "the database {describe} is corrupt (PRAGMA quick_check: {}); restore it from a backup or move it away",
                check.lines().next().unwrap_or("")
            );
        }
        migrate(&conn).with_context(|| format!("cannot migrate the database {describe}"))?;
        let cache = load(&conn)
            .map_err(flat)
            .with_context(|| format!("cannot read the database {describe}"))?;
        let checkpointer = match &location {
            Location::File(path) => {
                Some(spawn_checkpointer(path).with_context(|| format!("cannot open the database {describe}"))?)
            }
            Location::InMemory => None,
        };
        let shared = Arc::new(Shared {
            conn: Mutex::new(Some(conn)),
            cache: RwLock::new(cache),
        });
        let writer = spawn_writer(shared.clone()).with_context(|| format!("cannot open the database {describe}"))?;
        Ok(Store {
            _lock: lock,
            shared,
            checkpointer: Mutex::new(checkpointer),
            writer: Mutex::new(Some(writer)),
            location,
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Checkpoints the WAL into the main file and closes the connection. Later writes fail
    /// with `Sql`; reads keep answering from the cache.
    pub fn close(&self) -> Result<(), String> {
        // First the writer: writes already queued commit and are answered; later ones are
        // refused as the database being closed.
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((jobs, handle)) = writer {
            drop(jobs);
            let _ = handle.join();
        }
        let checkpointer = self.checkpointer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, handle)) = checkpointer {
            drop(stop);
            let _ = handle.join();
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
        self.read().policies.get(name).cloned()
    }

    /// Every policy body, ordered by name.
    pub fn policies(&self) -> Vec<Bytes> {
        self.read().policies.values().map(|v| v.body.clone()).collect()
    }

    pub fn queue(&self, name: &str) -> Option<Versioned> {
        self.read().queues.get(name).cloned()
    }

    /// The first `limit` queue bodies ordered by name (all when `None`).
    pub fn queues(&self, limit: Option<usize>) -> Vec<Bytes> {
        let cache = self.read();
        cache
            .queues
            .values()
            .take(limit.unwrap_or(usize::MAX))
            .map(|v| v.body.clone())
            .collect()
    }

    /// Every policy with its name, ordered by name.
    pub fn policy_entries(&self) -> Vec<(String, Versioned)> {
        let cache = self.read();
        cache.policies.iter().map(|(n, v)| (n.clone(), v.clone())).collect()
    }

    /// The first `limit` queues with their names, ordered by name (all when `None`).
    pub fn queue_entries(&self, limit: Option<usize>) -> Vec<(String, Versioned)> {
        let cache = self.read();
        cache
            .queues
            .iter()
            .take(limit.unwrap_or(usize::MAX))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cache> {
        self.shared.cache.read().unwrap_or_else(|e| e.into_inner())
    }

    // -------------------------------------------------------------------------------
    // writes (queued to the writer thread: `.await` the answer, or `wait()` off the runtime)

    /// Queues `work` for the writer thread; the answer comes once the batch holding it has
    /// committed (see the module doc).
    fn write(&self, work: Work) -> Pending {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let queued = writer
            .as_ref()
            .is_some_and(|(jobs, _)| jobs.send(Job { work, reply }).is_ok());
        drop(writer);
        Pending {
            answer: queued.then_some(answer),
        }
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
            Ok(cache_put(Cache::policies, name, body, 1))
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
            Ok(cache_put(Cache::policies, name, body, version))
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
            Ok(cache_remove(Cache::policies, name))
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
            Ok(cache_put(Cache::queues, name, body, version))
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
            Ok(cache_remove(Cache::queues, name))
        }))
    }
}

/// The writer thread: batches of queued writes until every sender is gone (at close).
fn spawn_writer(shared: Arc<Shared>) -> std::io::Result<(std::sync::mpsc::Sender<Job>, std::thread::JoinHandle<()>)> {
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    let handle = std::thread::Builder::new()
        .name("retryctl-writer".into())
        .spawn(move || {
            while let Ok(first) = queue.recv() {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match queue.try_recv() {
                        Ok(job) => batch.push(job),
                        Err(_) => break,
                    }
                }
                commit_batch(&shared, batch);
            }
        })?;
    Ok((jobs, handle))
}

/// One transaction for `batch`, a savepoint per write; answers every write.
fn commit_batch(shared: &Shared, batch: Vec<Job>) {
    let mut guard = shared.conn.lock().unwrap_or_else(|e| e.into_inner());
    let mut queue: std::collections::VecDeque<Job> = batch.into();
    while !queue.is_empty() {
        let begun =
            open_conn(&mut guard).and_then(|conn| Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?));
        let mut tx = match begun {
            Ok(tx) => tx,
            Err(e) => {
                for job in queue {
                    let _ = job.reply.send(Ok(Err(e.clone())));
                }
                return;
            }
        };
        let mut written: Vec<(tokio::sync::oneshot::Sender<Outcome>, u64, CacheUpdate)> =
            Vec::with_capacity(queue.len());
        while let Some(Job { work, reply }) = queue.pop_front() {
            let outcome = match tx.savepoint() {
                // AssertUnwindSafe: a write that panicked is rolled back to its savepoint,
                // and nothing it touched is used again.
                Ok(savepoint) => match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(&savepoint))) {
                    Ok(Ok((version, update))) => match savepoint.commit() {
                        Ok(()) => Ok(Ok((version, update))),
                        Err(e) => Ok(Err(e.into())),
                    },
                    // The savepoint rolls back when dropped.
                    Ok(Err(e)) => Ok(Err(e)),
                    Err(panic) => Err(panic),
                },
                Err(e) => Ok(Err(e.into())),
            };
            if tx.is_autocommit() {
                // SQLite rolled the whole transaction back (it may on a full disk or an I/O
                // error): the writes before this one are gone and are answered so; the ones
                // after it get a transaction of their own.
                let lost = StoreError::Sql("the transaction was rolled back by the database".into());
                for (reply, ..) in written.drain(..) {
                    let _ = reply.send(Ok(Err(lost.clone())));
                }
                let _ = reply.send(match outcome {
                    Ok(Ok(_)) => Ok(Err(lost)),
                    Ok(Err(e)) => Ok(Err(e)),
                    Err(panic) => Err(panic),
                });
                break;
            }
            match outcome {
                Ok(Ok((version, update))) => written.push((reply, version, update)),
                Ok(Err(e)) => {
                    let _ = reply.send(Ok(Err(e)));
                }
                Err(panic) => {
                    let _ = reply.send(Err(panic));
                }
            }
        }
        if written.is_empty() {
            // Nothing to keep: the transaction rolls back when dropped.
            continue;
        }
        match tx.commit() {
            Ok(()) => {
                // The cache first, under one lock, then the answers: a client that is
                // answered reads its own write.
                let mut cache = shared.cache.write().unwrap_or_else(|e| e.into_inner());
                let mut answers = Vec::with_capacity(written.len());
                for (reply, version, update) in written {
                    update(&mut cache);
                    answers.push((reply, version));
                }
                drop(cache);
                for (reply, version) in answers {
                    let _ = reply.send(Ok(Ok(version)));
                }
            }
            Err(e) => {
                let e = StoreError::from(e);
                for (reply, ..) in written {
                    let _ = reply.send(Ok(Err(e.clone())));
                }
            }
        }
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

/// Takes the exclusive lock on the database file (creating it empty when missing, which
/// SQLite reads as a new database). An advisory `flock`, independent of SQLite's own locks.
fn lock_file(path: &Path) -> anyhow::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot open the database {}: {e}", path.display()))?;
    if try_flock(&file)? {
        Ok(file)
    } else {
        anyhow::bail!(
            "the database {} is in use by another process (another `retryctl serve`?); one server per database file",
            path.display()
        )
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: `Ok(false)` when another process holds it.
#[cfg(unix)]
fn try_flock(file: &std::fs::File) -> anyhow::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor this function borrows for the call's duration.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Ok(false)
    } else {
        Err(anyhow::anyhow!("cannot lock the database: {e}"))
    }
}

#[cfg(not(unix))]
fn try_flock(_file: &std::fs::File) -> anyhow::Result<bool> {
    Ok(true)
}

/// Bodies are produced by `serde_json`, so always UTF-8; stored as TEXT so that the file
/// can be read with the `sqlite3` shell.
fn utf8(body: &Bytes) -> &str {
    std::str::from_utf8(body).expect("JSON bodies are UTF-8")
}

fn configure(conn: &Connection, file: bool) -> rusqlite::Result<()> {
    if file {
        // WAL: a commit is one append to the log. synchronous=NORMAL: the commit is in the
        // log (the OS page cache) before the write is acknowledged, so it survives the
        // process being killed (`kill -9`, SPEC §6) but not a power cut or kernel crash.
        // FULL (an fsync per commit) measured 8 ms per write on this machine's disk, capping
        // serialised writes near 125/s against the 1,000/s bar; see BENCHMARKS.md `## serve`.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(rusqlite::Error::InvalidQuery);
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
        // No automatic checkpoints on the write path: one runs inside whichever commit
        // crosses 1000 pages and syncs the database file, which put a ~10 ms stall into the
        // p99 of writes. A background thread checkpoints instead (`spawn_checkpointer`).
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0;")?;
        // Under a sustained write load the background checkpoints never catch up with the
        // writer, so the WAL cannot restart and grows (736 MB after 30 s at 10,000 POST/s).
        // Once the load stops, a checkpoint completes and the next commit restarts the WAL;
        // this limit makes that commit truncate the file back, instead of the disk keeping
        // the flood's high-water mark for the server's lifetime.
        conn.execute_batch(&format!("PRAGMA journal_size_limit = {WAL_SIZE_LIMIT};"))?;
    }
    // Another process holding the file (a second `serve`) waits briefly instead of failing.
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    Ok(())
}

/// The size the WAL file is truncated back to when it restarts (`journal_size_limit`).
const WAL_SIZE_LIMIT: u64 = 64 << 20;

/// How often the background thread copies the WAL into the database file.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// How often the checkpointer starts the kernel's writeback of the WAL's dirty pages.
const WRITEBACK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Writebacks per checkpoint: the checkpointer wakes every [`WRITEBACK_EVERY`] and
/// checkpoints every [`CHECKPOINT_EVERY`].
const WRITEBACKS_PER_CHECKPOINT: u32 = (CHECKPOINT_EVERY.as_millis() / WRITEBACK_EVERY.as_millis()) as u32;

/// Starts writeback of the WAL's dirty pages without waiting for it
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that the checkpoint's `fsync` of the WAL
/// finds little left to write. Why: under a write flood, that fsync wrote 500 ms of WAL at
/// once (30-50 ms), and the writer's WAL appends stalled behind it (4-15 ms `pwrite`s), which
/// made the p99 of writes. Durability is unchanged: this only starts writes earlier; the
/// checkpoint still fsyncs.
fn start_writeback(wal_path: &Path, wal: &mut Option<std::fs::File>) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        if wal.is_none() {
            *wal = std::fs::File::open(wal_path).ok();
        }
        if let Some(file) = wal {
            // SAFETY: a plain syscall on a descriptor this function borrows.
            let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
            if rc != 0 {
                // Reopened at the next tick (the WAL may have been replaced).
                *wal = None;
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (wal_path, wal);
}

/// A thread with its own connection running PASSIVE checkpoints, which never block the
/// writer; it stops when the returned sender is dropped.
fn spawn_checkpointer(path: &Path) -> anyhow::Result<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let wal_path = {
        let mut p = path.as_os_str().to_owned();
        p.push("-wal");
        PathBuf::from(p)
    };
    let handle = std::thread::Builder::new()
        .name("retryctl-checkpoint".into())
        .spawn(move || {
            let mut wal: Option<std::fs::File> = None;
            let mut ticks = 0u32;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(WRITEBACK_EVERY) {
                start_writeback(&wal_path, &mut wal);
                ticks += 1;
                if ticks == WRITEBACKS_PER_CHECKPOINT {
                    ticks = 0;
                    // A failure here (disk full) leaves the WAL growing; the data stays safe in
                    // the WAL and the next attempt or the shutdown checkpoint retries.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            }
        })?;
    Ok((tx, handle))
}

fn migrate(conn: &Connection) -> anyhow::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        anyhow::bail!(
            "the database has schema version {version}, newer than this retryctl knows ({known}); use a newer retryctl"
        );
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        // Each migration and its version bump commit together, so a crash mid-migration
        // leaves the previous version intact.
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
        tx.commit()?;
    }
    Ok(())
}

fn load(conn: &Connection) -> rusqlite::Result<Cache> {
    let mut cache = Cache::default();
    for (table, map) in [("retry_policy", &mut cache.policies), ("queue", &mut cache.queues)] {
        let mut stmt = conn.prepare(&format!("SELECT name, definition, version FROM {table}"))?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?))
        })?;
        for row in rows {
            let (name, def, version) = row?;
            map.insert(
                name,
                Versioned {
                    body: Bytes::from(def),
                    version: version as u64,
                },
            );
        }
    }
    Ok(cache)
}

/// Runs `PRAGMA integrity_check` on a database file (used by tests and the crash check).
pub fn integrity_check(path: &Path) -> rusqlite::Result<String> {
    let conn = Connection::open(path)?;
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
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
    fn writeback_of_the_wal_waits_for_the_file_and_keeps_it_open() {
        let dir = tempfile::tempdir().unwrap();
        let wal_path = dir.path().join("a.db-wal");
        let mut wal = None;
        // No WAL yet (no write so far): nothing to do, tried again at the next tick.
        start_writeback(&wal_path, &mut wal);
        assert!(wal.is_none());
        std::fs::write(&wal_path, vec![1u8; 64 * 1024]).unwrap();
        start_writeback(&wal_path, &mut wal);
        #[cfg(target_os = "linux")]
        assert!(wal.is_some(), "opened once the WAL exists");
        start_writeback(&wal_path, &mut wal);
        #[cfg(target_os = "linux")]
        assert!(wal.is_some(), "kept open across ticks");
    }

    #[test]
    fn a_wal_grown_past_the_limit_is_truncated_when_it_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let conn = Connection::open(&path).unwrap();
        configure(&conn, true).unwrap();
        conn.execute_batch("CREATE TABLE t (b BLOB);").unwrap();
        // More than the limit, in 1 MiB commits: nothing checkpoints meanwhile
        // (`wal_autocheckpoint = 0`), as under a flood the background checkpoints lag.
        let flood = (WAL_SIZE_LIMIT >> 20) + 8;
        for _ in 0..flood {
            conn.execute("INSERT INTO t VALUES (zeroblob(1048576))", []).unwrap();
        }
        let wal_size = || std::fs::metadata(dir.path().join("a.db-wal")).unwrap().len();
        assert!(wal_size() > WAL_SIZE_LIMIT, "the WAL grew to {}", wal_size());
        // The load stops: a checkpoint completes, and the next commit restarts the WAL.
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .unwrap();
        conn.execute("INSERT INTO t VALUES (x'00')", []).unwrap();
        assert!(wal_size() <= WAL_SIZE_LIMIT, "the WAL is still {} bytes", wal_size());
        assert_eq!(
            conn.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                .unwrap(),
            flood as i64 + 1
        );
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
                "the database {} is in use by another process (another `retryctl serve`?); one server per database file",
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
                "the database {} is corrupt (PRAGMA quick_check: ",
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
                "cannot migrate the database {}: the database has schema version 99, newer than this retryctl knows (2); use a newer retryctl",
                dir.path().join("sub/armada.db").display()
            )
        );
    }

    /// Writes that share a transaction: one that fails or panics is rolled back to its
    /// savepoint and answered with its own error; the others commit and reach the cache.
    #[test]
    fn a_batch_keeps_the_writes_that_succeed_and_only_those() {
        let s = Store::open(Location::InMemory).unwrap();
        let insert = |name: &'static str, then: u8| -> Work {
            Box::new(move |db| {
                db.execute(
                    "INSERT INTO retry_policy (name, definition, version) VALUES (?1, '{}', 1)",
                    [name],
                )?;
                match then {
                    0 => Ok(cache_put(
                        Cache::policies,
                        name.to_string(),
                        Bytes::from_static(b"{}"),
                        1,
                    )),
                    1 => Err(StoreError::AlreadyExists),
                    _ => panic!("write {name} panicked"),
                }
            })
        };
        let mut answers = Vec::new();
        let mut batch = Vec::new();
        for (name, then) in [("p1", 0), ("p2", 1), ("p3", 2), ("p4", 0), ("p1", 0)] {
            let (reply, answer) = tokio::sync::oneshot::channel();
            batch.push(Job {
                work: insert(name, then),
                reply,
            });
            answers.push(answer);
        }
        commit_batch(&s.shared, batch);
        let mut answers = answers.into_iter().map(|a| a.blocking_recv().unwrap());
        assert!(matches!(answers.next(), Some(Ok(Ok(1)))));
        assert!(matches!(answers.next(), Some(Ok(Err(StoreError::AlreadyExists)))));
        assert!(
            matches!(answers.next(), Some(Err(_))),
            "the panic goes back to its writer"
        );
        assert!(matches!(answers.next(), Some(Ok(Ok(1)))));
        // The second p1 fails on the first one's row, in the same transaction.
        assert!(matches!(answers.next(), Some(Ok(Err(StoreError::Sql(_))))));
        let stored: Vec<String> = {
            let guard = s.shared.conn.lock().unwrap();
            let conn = guard.as_ref().unwrap();
            let mut stmt = conn.prepare("SELECT name FROM retry_policy ORDER BY name").unwrap();
            let rows = stmt.query_map([], |r| r.get(0)).unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        };
        assert_eq!(stored, ["p1", "p4"]);
        assert_eq!(s.policies().len(), 2);
        // The writer thread still serves.
        assert_eq!(s.create_policy("p5", Bytes::from_static(b"{}")).wait().unwrap(), 1);
    }

    /// A write after which SQLite has rolled the whole transaction back (as it may on a full
    /// disk): the writes before it in the batch are answered with an error and left out of
    /// the cache; the writes after it commit in a transaction of their own.
    #[test]
    fn a_transaction_lost_mid_batch_fails_only_what_it_held() {
        let s = Store::open(Location::InMemory).unwrap();
        let policy = |name: &'static str| -> Work {
            Box::new(move |db| {
                db.execute(
                    "INSERT INTO retry_policy (name, definition, version) VALUES (?1, '{}', 1)",
                    [name],
                )?;
                Ok(cache_put(
                    Cache::policies,
                    name.to_string(),
                    Bytes::from_static(b"{}"),
                    1,
                ))
            })
        };
        let lose: Work = Box::new(|db| {
            db.execute_batch("ROLLBACK")?;
            Err(StoreError::Sql("disk full".into()))
        });
        let mut answers = Vec::new();
        let mut batch = Vec::new();
        for work in [policy("p1"), lose, policy("p2")] {
            let (reply, answer) = tokio::sync::oneshot::channel();
            batch.push(Job { work, reply });
            answers.push(answer);
        }
        commit_batch(&s.shared, batch);
        let answers: Vec<_> = answers
            .into_iter()
            .map(|a| a.blocking_recv().unwrap().unwrap())
            .collect();
        assert!(
            matches!(&answers[0], Err(StoreError::Sql(m)) if m == "the transaction was rolled back by the database"),
            "{answers:?}"
        );
        assert!(
            matches!(&answers[1], Err(StoreError::Sql(m)) if m == "disk full"),
            "{answers:?}"
        );
        assert!(matches!(answers[2], Ok(1)), "{answers:?}");
        assert!(s.policy("p1").is_none());
        assert!(s.policy("p2").is_some());
        // p1 is not in the database either: it can be created now.
        assert_eq!(s.create_policy("p1", Bytes::from_static(b"{}")).wait().unwrap(), 1);
    }

    /// Many writers at once: every write is answered, each name created exactly once.
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
