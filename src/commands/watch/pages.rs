//! The poller's pages (docs/watch.md "What it reads"): a poll's jobs read from Lookout, a page
//! at a time, as a Kubernetes watcher yields its events to a consumer. First the jobs waiting
//! for their records, read again by id; then the jobs that reached a terminal state since the
//! cursor, in Lookout's order, the span behind the cursor read again and its jobs counted
//! already skipped.
//!
//! Owns: [`Reader`] (the two connections, one for the pages' keys and one for their rows, kept
//! between polls and made again after an error; the cursor kept within the database's clock),
//! [`Pages`] (the next page's keys read on the second connection while a page is counted, the
//! cursor each page leaves), the `--settle` gate that holds back a job whose record is not
//! complete (Lookout's ingester writes a job's terminal state before its runs) until
//! `--settle` after it was first read, and after the last page the jobs behind the re-read
//! span (`watch::late`) and what waits and retries now (`lookout::present`). Must not: replay
//! or count a job (`count`), commit a page or write `--state` (`poll`), or write stderr
//! itself.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::lookout::db::{self, Db};
use crate::lookout::mapping::record_complete;
use crate::lookout::present::{present, Present};
use crate::lookout::terminal::{self, Span, Terminal};
use crate::lookout::{Item, JobStream};
use crate::watch::cursor::{on_the_database_clock, read_from, Cursor};
use crate::watch::late::Behind;
use crate::watch::metrics::{Counters, Family, Reason};
use crate::watch::state::State;

use super::shared::{now_micros, Shared, Watched, PAGE};

/// How long a statement of watch's may wait for the database's next byte.
const STATEMENT_SILENCE: Duration = Duration::from_secs(30);

/// Why a poll failed, and how it is counted.
pub(super) struct Failed {
    pub(super) reason: Reason,
    pub(super) message: String,
}

impl Failed {
    pub(super) fn new(reason: Reason, e: impl std::fmt::Display) -> Failed {
        Failed {
            reason,
            message: e.to_string(),
        }
    }
}

fn read_failed(e: impl std::fmt::Display) -> Failed {
    Failed::new(Reason::Read, e)
}

/// A job of a page, as its key says: where it is in Lookout's order, its state and queue, and
/// since when it waits for its runs (`None`: first read now).
#[derive(Debug, Clone)]
pub(super) struct Key {
    pub(super) queue: String,
    pub(super) at: i64,
    pub(super) state: i16,
    pub(super) since: Option<i64>,
}

/// A job the `--settle` gate held back: (id, queue, at, state, since).
pub(super) type Held = (String, String, i64, i16, i64);

/// What the `--settle` gate decided of a page's jobs, as their rows passed it.
#[derive(Default)]
pub(super) struct Gated {
    /// Jobs let through to be counted (complete, or past `--settle`), and jobs whose own row
    /// cannot be read (left out once), with their time.
    pub(super) done: Vec<(i64, String)>,
    /// Jobs held back.
    pub(super) wait: Vec<Held>,
    /// The jobs let through incomplete, counted apart.
    pub(super) counters: Counters,
}

/// A page read from Lookout, yet to be counted.
pub(super) struct ReadPage {
    /// Its jobs' rows, through the `--settle` gate; `None`: no job of the page is new.
    pub(super) rows: Option<JobStream<'static>>,
    /// Each job of the page, by its id.
    pub(super) keys: HashMap<String, Key>,
    /// What the gate decided: whole once `rows` is read to its end.
    pub(super) gated: Arc<Mutex<Gated>>,
    /// The waiting jobs it reads again: those neither counted nor held back again are gone.
    pub(super) read_again: Option<Vec<String>>,
    /// The cursor once it is committed.
    pub(super) cursor: Option<Cursor>,
}

/// Lookout as the poller reads it, kept between polls.
#[derive(Default)]
pub(super) struct Reader {
    db: Option<Arc<Db>>,
    /// A second connection for the next page's keys, read while a page's rows are read and
    /// counted on the first (one connection runs one statement at a time).
    keys_db: Option<Db>,
    /// A cursor past the database's clock was said (once).
    said_ahead: bool,
}

impl Reader {
    /// The connections are made again at the next poll (one failed).
    pub(super) fn reset(&mut self) {
        self.db = None;
        self.keys_db = None;
    }

    /// A poll's pages: the connections made (or kept), the database's clock read, and the
    /// cursor kept within it.
    pub(super) fn pages<'a>(
        &'a mut self,
        shared: &'a Shared,
        watched: &'a Watched,
        say: &'a dyn Fn(String),
    ) -> Result<Pages<'a>, Failed> {
        let (db, keys_db) = self.connect(watched)?;
        let now = terminal::database_now(&keys_db).map_err(read_failed)?;
        self.not_ahead_of(shared, watched, now, say);
        Ok(Pages {
            reader: self,
            shared,
            watched,
            say,
            db,
            keys_db: Some(keys_db),
            now,
            phase: Phase::Waiting(None),
        })
    }

    fn connect(&mut self, watched: &Watched) -> Result<(Arc<Db>, Db), Failed> {
        // Every statement of watch's fails once the database has said nothing for the
        // statement bound: a black-holed database is a failed poll, not a hang.
        let connect = |w: &Watched| {
            db::connect(&w.dsn, w.timeout)
                .map(|db| db.answering_within(STATEMENT_SILENCE))
                .map_err(|e| Failed::new(Reason::Connect, e))
        };
        let db = match &self.db {
            Some(db) => db.clone(),
            None => Arc::new(connect(watched)?),
        };
        self.db = Some(db.clone());
        let keys = match self.keys_db.take() {
            Some(k) => k,
            None => connect(watched)?,
        };
        Ok((db, keys))
    }

    /// A cursor or a start past the database's clock `now`, or a start counted from a
    /// machine's clock that runs ahead of it (`watch::cursor::on_the_database_clock`): said
    /// once, and moved back within it, so that the jobs that end before their time are read.
    fn not_ahead_of(&mut self, shared: &Shared, watched: &Watched, now: i64, say: &dyn Fn(String)) {
        let moved = {
            let mut st = state(shared);
            let st = &mut *st;
            let span = watched.flags.lookback;
            on_the_database_clock(&mut st.cursor, &mut st.start, watched.flags.back, now, span).map(|m| (m, st.start))
        };
        let Some((moved, start)) = moved.filter(|_| !self.said_ahead) else {
            return;
        };
        self.said_ahead = true;
        let state = shared.path.display().to_string();
        say(crate::output::watch::moved_words(
            moved,
            &state,
            now,
            start,
            &watched.lookback_words,
        ));
    }
}

fn state(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The next page's keys: read, or being read on the keys' connection.
enum Keys {
    Read(Vec<Terminal>),
    Reading(JoinHandle<(Db, Result<Vec<Terminal>, Failed>)>),
}

/// Where the pages are.
enum Phase {
    /// The jobs waiting for their records, by id, after this one (`None`: from the first).
    Waiting(Option<String>),
    /// The jobs that reached a terminal state after `after`, in Lookout's order.
    Terminal {
        after: Cursor,
        keys: Keys,
    },
    Done,
}

/// A poll's pages, in order; each is counted and committed before the next is made, since
/// which of its jobs are new is read from the state as the last page left it. Stops between
/// two pages when the process stops.
pub(super) struct Pages<'a> {
    reader: &'a mut Reader,
    shared: &'a Shared,
    watched: &'a Watched,
    say: &'a dyn Fn(String),
    db: Arc<Db>,
    /// `None` while the next page's keys are read on it.
    keys_db: Option<Db>,
    /// The database's clock at the poll's start.
    now: i64,
    phase: Phase,
}

impl Iterator for Pages<'_> {
    type Item = Result<ReadPage, Failed>;

    fn next(&mut self) -> Option<Result<ReadPage, Failed>> {
        loop {
            match std::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Done => return None,
                Phase::Waiting(after) => {
                    let ids = state(self.shared).waiting.page_after(after.as_deref(), PAGE);
                    if !ids.is_empty() && !self.shared.stop.is_set() {
                        self.phase = Phase::Waiting(ids.last().cloned());
                        return Some(Ok(self.read_again(ids)));
                    }
                    let from = {
                        let st = state(self.shared);
                        read_from(st.cursor.as_ref(), st.start, self.watched.flags.lookback)
                    };
                    // After (`from`, ""): every job of that microsecond, whatever its id.
                    let after = Cursor {
                        at: from,
                        job: String::new(),
                    };
                    let keys_db = self.keys_db.as_ref().expect("the keys' connection is idle");
                    match keys_after(keys_db, &self.watched.queues, &after) {
                        Ok(keys) => {
                            self.phase = Phase::Terminal {
                                after,
                                keys: Keys::Read(keys),
                            }
                        }
                        Err(f) => return Some(Err(f)),
                    }
                }
                Phase::Terminal { after, keys } => {
                    let keys = match self.keys(keys) {
                        Ok(keys) => keys,
                        Err(f) => return Some(Err(f)),
                    };
                    if self.shared.stop.is_set() {
                        return None;
                    }
                    return self.terminal(after, keys).map(Ok);
                }
            }
        }
    }
}

impl Drop for Pages<'_> {
    /// A page given up on (its count failed): the keys read meanwhile are waited for, as a
    /// poll never leaves a statement running behind it.
    fn drop(&mut self) {
        if let Phase::Terminal { keys, .. } = std::mem::replace(&mut self.phase, Phase::Done) {
            let _ = self.keys(keys);
        }
    }
}

impl Pages<'_> {
    /// The keys read, once the thread reading them is done (the connection is back).
    fn keys(&mut self, keys: Keys) -> Result<Vec<Terminal>, Failed> {
        match keys {
            Keys::Read(keys) => Ok(keys),
            Keys::Reading(reading) => {
                let (keys_db, keys) = reading.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                self.keys_db = Some(keys_db);
                keys
            }
        }
    }

    /// The waiting jobs `ids`, read again by id.
    fn read_again(&mut self, ids: Vec<String>) -> ReadPage {
        let keys: HashMap<String, Key> = {
            let st = state(self.shared);
            ids.iter()
                .filter_map(|id| {
                    let w = st.waiting.get(id)?;
                    let key = Key {
                        queue: st.waiting.queue_of(w).to_string(),
                        at: w.at,
                        state: w.state,
                        since: Some(w.since),
                    };
                    Some((id.clone(), key))
                })
                .collect()
        };
        let rows = terminal::jobs_by_id(self.db.clone(), &ids);
        self.gated(Some(rows), keys, Some(ids), None)
    }

    /// The page of `keys`, after `after`. A full page's successor's keys are read on the
    /// second connection while the page is counted, so that the count does not wait for them.
    fn terminal(&mut self, after: Cursor, keys: Vec<Terminal>) -> Option<ReadPage> {
        let full = keys.len() == PAGE;
        let last = keys.last().map(|k| Cursor {
            at: k.at,
            job: k.job_id.clone(),
        })?;
        // Not the jobs of the span read again that were counted, nor those that wait (read
        // again by id).
        let fresh: HashMap<String, Key> = {
            let st = state(self.shared);
            keys.iter()
                .filter(|k| !st.seen.contains(k.at, &k.job_id) && !st.waiting.contains(&k.job_id))
                .map(|k: &Terminal| {
                    let key = Key {
                        queue: k.queue.clone(),
                        at: k.at,
                        state: k.state,
                        since: None,
                    };
                    (k.job_id.clone(), key)
                })
                .collect()
        };
        let rows = (!fresh.is_empty()).then(|| {
            let span = Span {
                after: (after.at, &after.job),
                last: (last.at, &last.job),
            };
            let ids = fresh.keys().cloned().collect();
            terminal::jobs_in(self.db.clone(), &self.watched.queues, span, ids)
        });
        if full {
            let keys_db = self.keys_db.take().expect("the keys' connection is idle");
            let (queues, after) = (self.watched.queues.clone(), last.clone());
            let reading = std::thread::Builder::new()
                .name("retryctl-watch-keys".into())
                .spawn(move || {
                    let keys = keys_after(&keys_db, &queues, &after);
                    (keys_db, keys)
                })
                .expect("a thread for the next page's keys");
            self.phase = Phase::Terminal {
                after: last.clone(),
                keys: Keys::Reading(reading),
            };
        }
        // The cursor never runs past the database's clock: a job stamped in the future (a
        // skewed ingester) is counted, and the jobs that end before its time are still read.
        let cursor = match last.at > self.now {
            true => Cursor {
                at: self.now,
                job: String::new(),
            },
            false => last,
        };
        Some(self.gated(rows, fresh, None, Some(cursor)))
    }

    fn gated(
        &self,
        rows: Option<JobStream<'static>>,
        keys: HashMap<String, Key>,
        read_again: Option<Vec<String>>,
        cursor: Option<Cursor>,
    ) -> ReadPage {
        let gated: Arc<Mutex<Gated>> = Arc::default();
        let rows = rows.map(|rows| gate(rows, keys.clone(), gated.clone(), self.watched.flags.settle));
        ReadPage {
            rows,
            keys,
            gated,
            read_again,
            cursor,
        }
    }

    /// After the last page: the jobs behind the re-read span counted late, and what waits and
    /// retries now, both read on the keys' connection, which is kept for the next poll.
    pub(super) fn finish(mut self) -> Result<Present, Failed> {
        if let Phase::Terminal { keys, .. } = std::mem::replace(&mut self.phase, Phase::Done) {
            let _ = self.keys(keys);
        }
        let keys_db = self.keys_db.take().expect("the keys' connection is idle");
        let result = self
            .count_late(&keys_db)
            .and_then(|()| present(&keys_db, &self.watched.queues).map_err(read_failed));
        self.reader.keys_db = Some(keys_db);
        result
    }

    /// Counts the jobs behind the re-read span (`watch::late`): those that appeared there
    /// since the last poll are counted late, by queue, and said with the oldest one's hour.
    fn count_late(&self, db: &Db) -> Result<(), Failed> {
        let flags = &self.watched.flags;
        let (last, next) = {
            let st = state(self.shared);
            let from = read_from(st.cursor.as_ref(), st.start, flags.lookback);
            (st.behind.last(), Behind::range(from, st.start, flags.window))
        };
        let rows = terminal::behind(db, &self.watched.queues, last, next).map_err(read_failed)?;
        let late = {
            let mut st = state(self.shared);
            let late = st.behind.look(&rows, next);
            for l in &late {
                st.counters.add(Family::LateJobs, &[&l.queue], u128::from(l.jobs));
            }
            late
        };
        for l in late {
            (self.say)(crate::output::watch::late_words(&l, &self.watched.lookback_words));
        }
        Ok(())
    }
}

/// The keys of the page after `after`.
fn keys_after(keys_db: &Db, queues: &[String], after: &Cursor) -> Result<Vec<Terminal>, Failed> {
    terminal::terminal_page(keys_db, queues, (after.at, &after.job), PAGE).map_err(read_failed)
}

/// `stream` (its jobs named by `keys`) through the `--settle` gate: a job whose record is
/// complete, or that waited `--settle` already, passes (an incomplete one counted apart, as its
/// record stands); the others are held back, with their rows. What it decided goes to `gated`.
fn gate(
    stream: JobStream<'static>,
    keys: HashMap<String, Key>,
    gated: Arc<Mutex<Gated>>,
    settle: i64,
) -> JobStream<'static> {
    let now = now_micros();
    let mut stream = stream;
    // A run's row left out comes before its job's own item: held until that says whether the
    // job is counted now (then said and counted with it), dropped with a job held back (said
    // when a later poll counts it): said and counted once.
    let mut runs_left_out: Vec<anyhow::Result<Item>> = Vec::new();
    let mut out: VecDeque<anyhow::Result<Item>> = VecDeque::new();
    Box::new(std::iter::from_fn(move || loop {
        if let Some(item) = out.pop_front() {
            return Some(item);
        }
        let Some(item) = stream.next() else {
            out.extend(runs_left_out.drain(..));
            return out.pop_front();
        };
        match &item {
            Ok(Item::Bad(e)) if e.run_id.is_some() && keys.contains_key(e.job_key()) => {
                runs_left_out.push(item);
                continue;
            }
            // A job's own row that cannot be read is left out once, as a job is counted: the
            // polls that read its span again skip it.
            Ok(Item::Bad(e)) => {
                if let (None, Some(key)) = (&e.run_id, keys.get(e.job_key())) {
                    let mut page = gated.lock().unwrap_or_else(|e| e.into_inner());
                    page.done.push((key.at, e.job_key().to_string()));
                }
            }
            Ok(Item::Job(j)) => {
                if let Some(key) = keys.get(&j.job.job_id) {
                    let mut page = gated.lock().unwrap_or_else(|e| e.into_inner());
                    let complete = record_complete(j, key.state);
                    let since = key.since.unwrap_or(now);
                    if !complete && now.saturating_sub(since) < settle {
                        page.wait
                            .push((j.job.job_id.clone(), key.queue.clone(), key.at, key.state, since));
                        runs_left_out.clear();
                        continue;
                    }
                    if !complete {
                        // Counted as its record stands, and counted apart.
                        page.counters.add(Family::IncompleteJobs, &[&key.queue], 1);
                    }
                    page.done.push((key.at, j.job.job_id.clone()));
                }
            }
            Err(_) => {}
        }
        out.extend(runs_left_out.drain(..));
        out.push_back(item);
    }))
}
