//! The group-commit writer: the one thread that writes the database, and the queue of
//! writes to it.
//!
//! Owns: the queue ([`Write`]s, each a piece of [`Work`] and where to send its answer), the
//! batching, the transaction with a savepoint per write, the cache updates after each
//! commit, and the answers ([`Pending`]). Must not: decide what a write does (the store's
//! methods in `mod.rs` hand it closures) or know HTTP.
//!
//! A request queues its write and awaits the answer (no blocking thread per request); the
//! writer takes every write queued at that moment, runs each in a savepoint of one
//! `BEGIN IMMEDIATE` transaction (a write that fails — a taken name, a stale version, a
//! panic — rolls back to its savepoint and leaves the others alone), commits once, updates
//! the cache, then answers each write in queue order. A write is answered only after the
//! commit that holds it (an error if that commit failed), so a write answered 200 has
//! committed, and its client reads it back. Why: a transaction and a blocking thread per
//! write made concurrent POSTs queue on the connection's lock, each paying SQLite's
//! per-transaction work (BENCHMARKS.md `## serve`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};

use rusqlite::{Connection, TransactionBehavior};

use super::cache::{Cache, CacheUpdate};
use super::types::StoreError;

/// What the writer thread shares with the store: the connection only it writes through, and
/// the cache it updates after each commit and every read answers from.
pub(super) struct Shared {
    /// The one connection; `None` once closed at shutdown.
    pub(super) conn: Mutex<Option<Connection>>,
    pub(super) cache: RwLock<Cache>,
}

/// One write: runs on the batch's connection, inside its own savepoint, and returns the
/// version it wrote and what to change in the cache once the batch has committed.
pub(super) type Work = Box<dyn FnOnce(&Connection) -> Result<(u64, CacheUpdate), StoreError> + Send>;
/// A write's answer: its result, or the panic of its work (re-raised in the request's task,
/// where it becomes the 500 any handler panic becomes).
type Answer = std::thread::Result<Result<u64, StoreError>>;

/// A queued write: its work and where its answer goes. (Not a job of Armada's: the store's
/// unit of work.)
struct Write {
    work: Work,
    reply: tokio::sync::oneshot::Sender<Answer>,
}

/// At most this many writes share a transaction, so that one commit stays short.
const MAX_BATCH: usize = 256;

/// The answer to a queued write: `.await` it on the runtime, or [`Pending::wait`] off it.
pub struct Pending {
    /// `None`: the store was closed before the write could be queued.
    answer: Option<tokio::sync::oneshot::Receiver<Answer>>,
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

fn settle(answer: Result<Answer, tokio::sync::oneshot::error::RecvError>) -> Result<u64, StoreError> {
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
    guard.as_mut().ok_or_else(closed)
}

/// The writer thread and the queue to it.
pub(super) struct Writer {
    /// Where writes are queued, and the thread; `None` once stopped.
    queue: Mutex<Option<(std::sync::mpsc::Sender<Write>, std::thread::JoinHandle<()>)>>,
}

impl Writer {
    /// Starts the writer thread on `shared`'s connection.
    pub(super) fn spawn(shared: Arc<Shared>) -> std::io::Result<Writer> {
        Ok(Writer {
            queue: Mutex::new(Some(spawn_writer(shared)?)),
        })
    }

    /// Queues `work`; the answer comes once the batch holding it has committed (see the
    /// module doc), or at once as the database being closed once [`Writer::stop`] has run.
    pub(super) fn queue(&self, work: Work) -> Pending {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let writer = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let queued = writer
            .as_ref()
            .is_some_and(|(writes, _)| writes.send(Write { work, reply }).is_ok());
        drop(writer);
        Pending {
            answer: queued.then_some(answer),
        }
    }

    /// Stops taking writes and waits for the thread: writes already queued commit and are
    /// answered first.
    pub(super) fn stop(&self) {
        let writer = self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((writes, thread)) = writer {
            drop(writes);
            let _ = thread.join();
        }
    }
}

/// The writer thread: batches of queued writes until every sender is gone (at close).
fn spawn_writer(shared: Arc<Shared>) -> std::io::Result<(std::sync::mpsc::Sender<Write>, std::thread::JoinHandle<()>)> {
    let (writes, queue) = std::sync::mpsc::channel::<Write>();
    let handle = std::thread::Builder::new()
        .name("retryctl-writer".into())
        .spawn(move || {
            while let Ok(first) = queue.recv() {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match queue.try_recv() {
                        Ok(write) => batch.push(write),
                        Err(_) => break,
                    }
                }
                commit_batch(&shared, batch);
            }
        })?;
    Ok((writes, handle))
}

/// One transaction for `batch`, a savepoint per write; answers every write.
fn commit_batch(shared: &Shared, batch: Vec<Write>) {
    let mut guard = shared.conn.lock().unwrap_or_else(|e| e.into_inner());
    let mut queue: std::collections::VecDeque<Write> = batch.into();
    while !queue.is_empty() {
        let begun =
            open_conn(&mut guard).and_then(|conn| Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?));
        let mut tx = match begun {
            Ok(tx) => tx,
            Err(e) => {
                for write in queue {
                    let _ = write.reply.send(Ok(Err(e.clone())));
                }
                return;
            }
        };
        let mut written: Vec<(tokio::sync::oneshot::Sender<Answer>, u64, CacheUpdate)> =
            Vec::with_capacity(queue.len());
        while let Some(Write { work, reply }) = queue.pop_front() {
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

#[cfg(test)]
mod tests {
    use axum::body::Bytes;

    use super::*;
    use crate::server::store::cache::cache_put;
    use crate::server::store::{Location, Store};

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
                        Cache::policies_mut,
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
            batch.push(Write {
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
                    Cache::policies_mut,
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
            batch.push(Write { work, reply });
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
}
