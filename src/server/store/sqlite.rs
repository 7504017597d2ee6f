//! The SQLite file under the store: opening it (one server per file, refused when read-only
//! or damaged), its schema and migrations, loading the cache at start, and its upkeep while
//! the server runs (the checkpointer thread and the early writeback of the WAL).
//!
//! Must not: write rows after start-up (every write goes through the writer thread,
//! `writer.rs`) or answer reads (the cache does, `cache.rs`).
//!
//! Durability: WAL with `synchronous = NORMAL`, so a commit survives the process being killed
//! (docs/serve.md) but not a power cut; automatic checkpoints are off and a background thread runs
//! them, so no write pays for one. The reasons and the measurements are at each setting.

use std::path::{Path, PathBuf};

use axum::body::Bytes;
use rusqlite::Connection;

use super::cache::Cache;
use super::types::{Location, Versioned};

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
    // 2: a version per row (docs/cli.md), bumped in the same transaction as every write; the
    // ETag is this number. Rows written before it start at 1.
    "ALTER TABLE retry_policy ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE queue ADD COLUMN version INTEGER NOT NULL DEFAULT 1;",
];

/// Opens the database (creating it and its directory when missing), takes the file's lock,
/// configures and checks it and runs the migrations: a connection ready for the writer, and
/// the lock to hold for the store's life (`None` in memory).
pub(super) fn open(location: &Location) -> anyhow::Result<(Connection, Option<std::fs::File>)> {
    use anyhow::Context as _;
    let mut lock = None;
    let conn = match location {
        Location::File(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create the database directory `{}`", dir.display()))?;
            }
            lock = Some(lock_file(path)?);
            Connection::open(path).with_context(|| format!("cannot open the database `{}`", path.display()))?
        }
        Location::InMemory => Connection::open_in_memory()?,
    };
    let describe = location.named();
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
    Ok((conn, lock))
}

/// rusqlite errors carry SQLite's own text as a second cause ("Error code 26: File opened
/// that is not a database file"); one line is enough for the user.
pub(super) fn flat(e: rusqlite::Error) -> anyhow::Error {
    anyhow::anyhow!("{e}")
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
        .map_err(|e| anyhow::anyhow!("cannot open the database `{}`: {e}", path.display()))?;
    if try_flock(&file)? {
        Ok(file)
    } else {
        anyhow::bail!(
            "the database `{}` is in use by another process (another `retryctl serve`?); one server per database file",
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

fn configure(conn: &Connection, file: bool) -> rusqlite::Result<()> {
    if file {
        // WAL: a commit is one append to the log. synchronous=NORMAL: the commit is in the
        // log (the OS page cache) before the write is acknowledged, so it survives the
        // process being killed (`kill -9`, docs/serve.md) but not a power cut or kernel crash.
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
/// writer, until [`Checkpointer::stop`].
pub(super) fn spawn_checkpointer(path: &Path) -> anyhow::Result<Checkpointer> {
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
    Ok(Checkpointer {
        stop: tx,
        thread: handle,
    })
}

/// The checkpointer thread of a file database.
pub(super) struct Checkpointer {
    /// Dropping it stops the thread.
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Checkpointer {
    /// Stops the thread and waits for it (a checkpoint under way finishes first).
    pub(super) fn stop(self) {
        drop(self.stop);
        let _ = self.thread.join();
    }
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

pub(super) fn load(conn: &Connection) -> rusqlite::Result<Cache> {
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
}
