//! The poller (docs/watch.md "What it reads"): on a thread of its own, poll after poll, first
//! the jobs waiting for their records, then the jobs that reached a terminal state since the
//! cursor, a page at a time; each page read, its complete jobs replayed on every core and
//! counted, the incomplete ones kept waiting, then committed whole and written to `--state`
//! before anything of it is published: its counters, its jobs as counted, the jobs that wait,
//! and the cursor past it, together, so that `--state` never holds a page in part and
//! `/metrics` never serves what the file does not hold.
//!
//! Owns: a poll (the waiting jobs read again by id, the pages from [`read_from`], the jobs of
//! the span read again skipped, the next page's keys read while a page replays, then what
//! waits and retries now, `lookout::present`, for its gauges), the gate
//! that holds back a job whose record is not complete (Lookout's ingester writes a job's
//! terminal state before its runs) until `--settle` after it was first read, the two
//! connections (one for the pages' keys, one for their rows; kept between polls, made again
//! after an error), the wait after a poll and the health it leaves, and the lines it says
//! (sent to the thread that holds stderr). Must not: count what a job adds up to
//! (`watch::job`), or write stderr itself.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::Sender;

use crate::lookout::db::{self, Db};
use crate::lookout::export_source::ExportSource;
use crate::lookout::mapping::record_complete;
use crate::lookout::present::present;
use crate::lookout::terminal::{self, Span, Terminal};
use crate::lookout::{Export, Item, JobStream};
use crate::model::failure_history::Timestamp;
use crate::replay::categorize::Reclassify;
use crate::replay::parallel::{for_each_ordered, Emitted};
use crate::replay::Processed;
use crate::watch::cursor::{advance, on_the_database_clock, read_from, Cursor};
use crate::watch::job::{count, see};
use crate::watch::late::Behind;
use crate::watch::metrics::{Counters, Family, Outcome, Reason};
use crate::watch::schedule::next_wait;
use crate::watch::window::Window;

use super::shared::{cannot_write_state, now_micros, sign, waiting_words, Shared, Watched, PAGE};

/// Starts the poller; its thread ends once `shared.stop` is set, after writing `--state`
/// (its result: whether that write succeeded).
pub(super) fn spawn(
    shared: Arc<Shared>,
    watched: Arc<Watched>,
    log: Sender<String>,
) -> std::thread::JoinHandle<std::io::Result<()>> {
    let poller = Poller {
        shared,
        watched,
        log,
        db: None,
        keys_db: None,
        save_failed: false,
        said_ahead: false,
    };
    std::thread::Builder::new()
        .name("retryctl-watch-poll".into())
        .spawn(move || poller.run())
        .expect("a thread for the poller")
}

/// Why a poll failed, and how it is counted.
struct Failed {
    reason: Reason,
    message: String,
}

impl Failed {
    fn new(reason: Reason, e: impl std::fmt::Display) -> Failed {
        Failed {
            reason,
            message: e.to_string(),
        }
    }
}

/// What a poll did.
#[derive(Debug, Default, Clone, Copy)]
struct Polled {
    /// Jobs counted.
    counted: u64,
    /// Jobs that wait for their runs after it.
    waiting: usize,
}

/// A job of a page, as its key says: where it is in Lookout's order, its state and queue, and
/// since when it waits for its runs (`None`: first read now).
#[derive(Debug, Clone)]
struct Key {
    queue: String,
    at: i64,
    state: i16,
    since: Option<i64>,
}

/// What a page adds up to, committed whole.
#[derive(Default)]
struct Page {
    counters: Counters,
    window: Window,
    /// Jobs counted (complete, or past `--settle`), with their time.
    done: Vec<(i64, String)>,
    /// Jobs held back: (id, queue, at, state, since).
    wait: Vec<(String, String, i64, i16, i64)>,
    counted: u64,
}

struct Poller {
    shared: Arc<Shared>,
    watched: Arc<Watched>,
    log: Sender<String>,
    db: Option<Arc<Db>>,
    /// A second connection for the next page's keys, read while a page's rows are read
    /// and replayed on the first (one connection runs one statement at a time).
    keys_db: Option<Db>,
    /// A write of `--state` failed during the last poll.
    save_failed: bool,
    /// A cursor past the database's clock was said (once).
    said_ahead: bool,
}

impl Poller {
    fn run(mut self) -> std::io::Result<()> {
        let mut failures = 0u32;
        loop {
            if self.shared.stop.is_set() {
                break;
            }
            self.save_failed = false;
            let polled = self.poll();
            let outcome = match &polled {
                Ok(p) => {
                    failures = 0;
                    let mut st = self.state();
                    st.last_success = Some(now_millis());
                    if p.counted > 0 {
                        let at = st.cursor.as_ref().map_or(st.start, |c| c.at);
                        drop(st);
                        self.say(format!(
                            "retryctl watch: read {}; {}; cursor {}",
                            plural(p.counted, "job", "jobs"),
                            waiting_words(p.waiting),
                            Timestamp(at.saturating_mul(1000))
                        ));
                    }
                    Ok(())
                }
                Err(f) => {
                    failures += 1;
                    // A connection that failed once is made again.
                    self.db = None;
                    self.keys_db = None;
                    self.state().counters.add(Family::PollErrors, &[f.reason.as_str()], 1);
                    Err(f)
                }
            };
            self.save();
            if self.save_failed {
                failures += 1;
            }
            let wait = next_wait(self.watched.flags.poll, failures);
            if let Err(f) = outcome {
                self.say(format!(
                    "retryctl watch: poll failed ({}): {}; polling again in {}",
                    f.reason.as_str(),
                    f.message,
                    crate::model::duration::GoDuration(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX))
                ));
            }
            {
                let mut health = self.shared.health.lock().unwrap_or_else(|e| e.into_inner());
                let error = match &polled {
                    Ok(_) if self.save_failed => Err("`--state` cannot be written"),
                    Ok(_) => Ok(()),
                    Err(f) => Err(f.message.as_str()),
                };
                *health = health.after(error, failures);
            }
            if self.shared.stop.wait(wait) {
                break;
            }
        }
        self.shared.save()
    }

    /// Writes `--state` and publishes it; when it cannot, that is said and counted as a poll
    /// error (`reason="state"`), and what was published stays.
    fn save(&mut self) {
        let Err(e) = self.shared.save() else { return };
        self.save_failed = true;
        self.state()
            .counters
            .add(Family::PollErrors, &[Reason::State.as_str()], 1);
        self.say(format!("retryctl watch: {}", cannot_write_state(&self.shared.path, &e)));
    }

    fn state(&self) -> std::sync::MutexGuard<'_, crate::watch::state::State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A line for stderr; dropped when 1,024 are waiting already (stderr is stuck).
    fn say(&self, line: String) {
        let _ = self.log.try_send(line);
    }

    fn connect(&mut self) -> Result<(Arc<Db>, Db), Failed> {
        // Every statement of watch's fails once the database has said nothing for the
        // statement bound: a black-holed database is a failed poll, not a hang.
        let connect = |w: &Watched| {
            db::connect(&w.dsn, w.timeout)
                .map(|db| db.answering_within(STATEMENT_SILENCE))
                .map_err(|e| Failed::new(Reason::Connect, e))
        };
        let db = match &self.db {
            Some(db) => db.clone(),
            None => Arc::new(connect(&self.watched)?),
        };
        self.db = Some(db.clone());
        let keys = match self.keys_db.take() {
            Some(k) => k,
            None => connect(&self.watched)?,
        };
        Ok((db, keys))
    }

    /// One poll: the jobs waiting for their records, a page of ids at a time, then every page
    /// from [`read_from`] on. Stops between two pages when the process stops.
    fn poll(&mut self) -> Result<Polled, Failed> {
        let (db, keys_db) = self.connect()?;
        let now = terminal::database_now(&keys_db).map_err(|e| Failed::new(Reason::Read, e))?;
        self.not_ahead_of(now);
        let mut polled = Polled::default();
        let mut after: Option<String> = None;
        loop {
            let ids = self.state().waiting.page_after(after.as_deref(), PAGE);
            if ids.is_empty() || self.shared.stop.is_set() {
                break;
            }
            after = ids.last().cloned();
            let keys: HashMap<String, Key> = {
                let st = self.state();
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
            let stream = terminal::jobs_by_id(db.clone(), &ids);
            let page = self.replay(stream, keys)?;
            polled.counted += page.counted;
            self.commit(page, Some(&ids), None);
        }
        let from = {
            let st = self.state();
            read_from(st.cursor.as_ref(), st.start, self.watched.flags.lookback)
        };
        let result = self
            .pages_from(&db, &keys_db, from, now, &mut polled)
            .and_then(|()| self.count_late(&keys_db))
            .and_then(|()| present(&keys_db, &self.watched.queues).map_err(|e| Failed::new(Reason::Read, e)));
        self.keys_db = Some(keys_db);
        let present = result?;
        // Published with the state the poll's end saves.
        self.shared.published.lock().unwrap_or_else(|e| e.into_inner()).present = Some(present);
        polled.waiting = self.state().waiting.len();
        Ok(polled)
    }

    /// Every page from `from` on. A full page's successor's keys are read on the second
    /// connection while the page is replayed, so that the replay does not wait for them.
    fn pages_from(
        &mut self,
        db: &Arc<Db>,
        keys_db: &Db,
        from: i64,
        now: i64,
        polled: &mut Polled,
    ) -> Result<(), Failed> {
        let watched = self.watched.clone();
        let queues = &watched.queues;
        let page = |after: (i64, &str)| {
            terminal::terminal_page(keys_db, queues, after, PAGE).map_err(|e| Failed::new(Reason::Read, e))
        };
        // After (`from`, ""): every job of that microsecond, whatever its id.
        let mut after = Cursor {
            at: from,
            job: String::new(),
        };
        let mut keys = page((after.at, &after.job))?;
        loop {
            if self.shared.stop.is_set() {
                break;
            }
            let full = keys.len() == PAGE;
            let Some(last) = keys.last().map(|k| Cursor {
                at: k.at,
                job: k.job_id.clone(),
            }) else {
                break;
            };
            let span = Span {
                after: (after.at, &after.job),
                last: (last.at, &last.job),
            };
            // Not the jobs of the span read again that were counted, nor those that wait
            // (read again by id).
            let fresh: HashMap<String, Key> = {
                let st = self.state();
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
            let (replayed, next) = std::thread::scope(|s| {
                let next = full.then(|| s.spawn(|| page((last.at, &last.job))));
                let replayed = match fresh.is_empty() {
                    true => Ok(Page::default()),
                    false => {
                        let ids = fresh.keys().cloned().collect();
                        let stream = terminal::jobs_in(db.clone(), queues, span, ids);
                        self.replay(stream, fresh)
                    }
                };
                (
                    replayed,
                    next.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
                )
            });
            let replayed = replayed?;
            polled.counted += replayed.counted;
            // The cursor never runs past the database's clock: a job stamped in the future (a
            // skewed ingester) is counted, and the jobs that end before its time are still read.
            let cursor = match last.at > now {
                true => Cursor {
                    at: now,
                    job: String::new(),
                },
                false => last.clone(),
            };
            self.commit(replayed, None, Some(cursor));
            after = last;
            let Some(next) = next else { break };
            keys = next?;
        }
        Ok(())
    }

    /// A cursor or a start past the database's clock `now`, or a start counted from a
    /// machine's clock that runs ahead of it (`watch::cursor::on_the_database_clock`): said
    /// once, and moved back within it, so that the jobs that end before their time are read.
    fn not_ahead_of(&mut self, now: i64) {
        let moved = {
            let mut st = self.state();
            let st = &mut *st;
            let span = self.watched.flags.lookback;
            on_the_database_clock(&mut st.cursor, &mut st.start, self.watched.flags.back, now, span)
                .map(|m| (m, st.start))
        };
        let Some((moved, start)) = moved.filter(|_| !self.said_ahead) else {
            return;
        };
        self.said_ahead = true;
        let state = self.shared.path.display().to_string();
        let words = crate::output::watch::moved_words(moved, &state, now, start, &self.watched.lookback_words);
        self.say(words);
    }

    /// Counts the jobs behind the re-read span (`watch::late`): those that appeared there
    /// since the last poll are counted late, by queue, and said with the oldest one's hour.
    fn count_late(&mut self, db: &Db) -> Result<(), Failed> {
        let (last, next) = {
            let st = self.state();
            let from = read_from(st.cursor.as_ref(), st.start, self.watched.flags.lookback);
            (
                st.behind.last(),
                Behind::range(from, st.start, self.watched.flags.window),
            )
        };
        let rows = terminal::behind(db, &self.watched.queues, last, next).map_err(|e| Failed::new(Reason::Read, e))?;
        let late = {
            let mut st = self.state();
            let late = st.behind.look(&rows, next);
            for l in &late {
                st.counters.add(Family::LateJobs, &[&l.queue], u128::from(l.jobs));
            }
            late
        };
        for l in late {
            self.say(crate::output::watch::late_words(&l, &self.watched.lookback_words));
        }
        Ok(())
    }

    /// Commits `page` to the state whole (`read_again`: the waiting jobs it read again;
    /// `last`: the cursor's page's last key), then writes `--state` and publishes it.
    fn commit(&mut self, page: Page, read_again: Option<&[String]>, last: Option<Cursor>) {
        {
            let mut st = self.state();
            let st = &mut *st;
            let from = now_micros().saturating_sub(self.watched.flags.window);
            // The failed runs of the incident hours, counted apart (docs/watch.md "Incident
            // windows").
            let incident = st.window.merge_counting_incidents(page.window, from.max(st.start));
            let mut counters = page.counters;
            st.window.bound_signatures(&mut counters, from);
            st.counters.merge(&counters);
            for (queue, runs) in incident {
                st.counters.add(Family::IncidentFailedRuns, &[&queue], u128::from(runs));
            }
            st.window.forget_before(from);
            // A job read again that is neither counted nor held back again is gone from the
            // database (expired): it waits no more.
            if let Some(ids) = read_again {
                for id in ids {
                    st.waiting.remove(id);
                }
            }
            for (id, queue, at, state, since) in &page.wait {
                st.waiting.insert(id, queue, *at, *state, *since);
            }
            for (at, id) in &page.done {
                st.seen.insert(*at, id);
            }
            if let Some(last) = last {
                advance(&mut st.cursor, &mut st.seen, last, self.watched.flags.lookback);
            }
        }
        self.save();
    }

    /// The jobs of `stream` (each named by `keys`) whose record is complete, or that waited
    /// `--settle` already, mapped as `history --lookout-db` maps them, replayed on every core
    /// and counted; the others held back. The page's counts, or why it could not be read whole
    /// (then nothing of it counts).
    fn replay(&self, stream: JobStream<'static>, keys: HashMap<String, Key>) -> Result<Page, Failed> {
        let now = now_micros();
        let settle = self.watched.flags.settle;
        let held: Arc<Mutex<Page>> = Arc::default();
        let gate = {
            let held = held.clone();
            let keys = keys.clone();
            let mut stream = stream;
            // A run's row left out comes before its job's own item: held until that says
            // whether the job is counted now (then said and counted with it), dropped with a
            // job held back (said when a later poll counts it): said and counted once.
            let mut runs_left_out: Vec<anyhow::Result<Item>> = Vec::new();
            let mut out: VecDeque<anyhow::Result<Item>> = VecDeque::new();
            std::iter::from_fn(move || loop {
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
                    // A job's own row that cannot be read is left out once, as a job is
                    // counted: the polls that read its span again skip it.
                    Ok(Item::Bad(e)) => {
                        if let (None, Some(key)) = (&e.run_id, keys.get(e.job_key())) {
                            let mut page = held.lock().unwrap_or_else(|e| e.into_inner());
                            page.done.push((key.at, e.job_key().to_string()));
                        }
                    }
                    Ok(Item::Job(j)) => {
                        if let Some(key) = keys.get(&j.job.job_id) {
                            let mut page = held.lock().unwrap_or_else(|e| e.into_inner());
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
            })
        };
        let source = ExportSource::new(Export::new(Box::new(gate)), self.watched.settings.clone(), "lookout-db");
        let export = source.state();
        let (sets, names) = (&self.watched.sets, &self.watched.names);
        let work = |scratch: &mut Reclassify, job: crate::replay::Decoded<'_>| {
            see(sets, job.settings, job.history, scratch, sign)
        };
        let mut counted = Counters::default();
        let mut window = Window::default();
        let mut jobs = 0u64;
        for_each_ordered(source, None, work, |e| {
            let Emitted::Job(_, processed) = e else { return Ok(true) };
            match processed {
                Processed::Done(seen) => {
                    let key = keys.get(seen.job.as_str());
                    let outcome = key.map_or(Outcome::Failed, |k| Outcome::of_state(k.state));
                    count(&mut counted, &seen, outcome, names);
                    if let Some(k) = key {
                        window.add(k.at, &seen, names);
                    }
                    jobs += 1;
                    for e in &seen.errors {
                        counted.add(Family::PollErrors, &[Reason::Replay.as_str()], 1);
                        self.say(format!("warning: {}", shown(e)));
                    }
                }
                Processed::Error(e) => {
                    counted.add(Family::PollErrors, &[Reason::Replay.as_str()], 1);
                    self.say(format!("warning: {}", shown(&e)));
                }
                // In `history`'s words; counted below, from the export's totals.
                Processed::LeftOut(text) => self.say(format!("warning: {}", shown(&text))),
                Processed::Invalid(_) => {}
            }
            Ok(true)
        })
        .map_err(|e| Failed::new(Reason::Read, e))?;
        let mut export = export.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = export.error.take() {
            return Err(Failed::new(Reason::Read, e));
        }
        counted.add(Family::UnreadableRows, &[], u128::from(export.totals.left_out()));
        let mut page = std::mem::take(&mut *held.lock().unwrap_or_else(|e| e.into_inner()));
        page.counters.merge(&counted);
        page.window = window;
        page.counted = jobs;
        Ok(page)
    }
}

/// How long a statement of watch's may wait for the database's next byte.
const STATEMENT_SILENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// `N job(s)`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A line's text with its control characters escaped (a job id's ESC or line break would
/// otherwise end the line or drive the terminal), as history's text is shown.
fn shown(text: &str) -> String {
    crate::output::text::shown(text).into_owned()
}

/// Now, in milliseconds since the Unix epoch.
fn now_millis() -> i64 {
    crate::commands::replay::lookout::now().0 / 1_000_000
}
