//! The poller (docs/watch.md "What it reads"): on a thread of its own, poll after poll, the
//! jobs that reached a terminal state since the cursor, a page at a time, each page read,
//! replayed on every core and counted, then committed whole: its counters, its jobs as
//! counted and the cursor past it, together, so that `--state` never holds a page in part.
//!
//! Owns: a poll (the pages from [`read_from`], the jobs of the span read again skipped, the
//! next page's keys read while a page replays), the two connections (one for the pages' keys,
//! one for their rows; kept between polls, made again after an error), the wait after a poll and the
//! health it leaves, and the lines it says (sent to the thread that holds stderr). Must not:
//! count what a job adds up to (`watch::job`), or write stderr itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use crate::commands::replay::lookout::now;
use crate::lookout::db::{self, Db, Span, Terminal};
use crate::lookout::export_source::ExportSource;
use crate::lookout::Export;
use crate::model::failure_history::Timestamp;
use crate::replay::categorize::Reclassify;
use crate::replay::parallel::{for_each_ordered, Emitted};
use crate::replay::Processed;
use crate::watch::cursor::{advance, read_from, Cursor};
use crate::watch::job::{count, see};
use crate::watch::metrics::{Counters, Family, Outcome, Reason};
use crate::watch::schedule::next_wait;

use super::shared::{cannot_write_state, Shared, Watched, PAGE};

/// During a long poll (a backlog), `--state` is written at least this often, so that a
/// restart redoes at most this much.
const SAVE_EVERY: Duration = Duration::from_secs(10);

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
        saved: Instant::now(),
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

struct Poller {
    shared: Arc<Shared>,
    watched: Arc<Watched>,
    log: Sender<String>,
    db: Option<Arc<Db>>,
    /// A second connection for the next page's keys, read while a page's rows are read
    /// and replayed on the first (one connection runs one statement at a time).
    keys_db: Option<Db>,
    /// When `--state` was last written.
    saved: Instant,
}

impl Poller {
    fn run(mut self) -> std::io::Result<()> {
        let mut failures = 0u32;
        loop {
            if self.shared.stop.is_set() {
                break;
            }
            let polled = self.poll();
            let outcome = match &polled {
                Ok(read) => {
                    failures = 0;
                    let mut st = self.state();
                    st.last_success = Some(now_millis());
                    if *read > 0 {
                        let at = st.cursor.as_ref().map_or(st.start, |c| c.at);
                        drop(st);
                        self.say(format!(
                            "retryctl watch: read {read} jobs; cursor {}",
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
            if !self.save() {
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
                    Ok(_) if failures > 0 => Err("`--state` cannot be written"),
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

    /// Writes `--state`; `false` when it cannot, which is said and counted as a poll error
    /// (`reason="state"`).
    fn save(&mut self) -> bool {
        self.saved = Instant::now();
        let Err(e) = self.shared.save() else { return true };
        self.state()
            .counters
            .add(Family::PollErrors, &[Reason::State.as_str()], 1);
        self.say(format!("retryctl watch: {}", cannot_write_state(&self.shared.path, &e)));
        false
    }

    fn state(&self) -> std::sync::MutexGuard<'_, crate::watch::state::State> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A line for stderr; dropped when 1,024 are waiting already (stderr is stuck).
    fn say(&self, line: String) {
        let _ = self.log.try_send(line);
    }

    fn connect(&mut self) -> Result<(Arc<Db>, Db), Failed> {
        let connect = |w: &Watched| db::connect(&w.dsn, w.timeout).map_err(|e| Failed::new(Reason::Connect, e));
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

    /// One poll: every page from [`read_from`] on; the number of jobs read (those of the span
    /// read again that were counted before are not). Stops between two pages when the
    /// process stops. A full page's successor's keys are read on the second connection while
    /// the page is replayed, so that the replay does not wait for them.
    fn poll(&mut self) -> Result<u64, Failed> {
        let (db, keys_db) = self.connect()?;
        let from = {
            let st = self.state();
            read_from(st.cursor.as_ref(), st.start)
        };
        let watched = self.watched.clone();
        let queues = &watched.queues;
        let page = |after: (i64, &str)| {
            db::terminal_page(&keys_db, queues, after, PAGE).map_err(|e| Failed::new(Reason::Read, e))
        };
        // After (`from`, ""): every job of that microsecond, whatever its id.
        let mut after = Cursor {
            at: from,
            job: String::new(),
        };
        let mut keys = page((after.at, &after.job))?;
        let mut read = 0u64;
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
            let fresh: Vec<Terminal> = {
                let st = self.state();
                keys.iter()
                    .filter(|k| !st.seen.contains(k.at, &k.job_id))
                    .cloned()
                    .collect()
            };
            let (counted, next) = std::thread::scope(|s| {
                let next = full.then(|| s.spawn(|| page((last.at, &last.job))));
                let counted = self.replay(&db, span, &fresh);
                (
                    counted,
                    next.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
                )
            });
            let counted = counted?;
            {
                let mut st = self.state();
                let st = &mut *st;
                st.counters.merge(&counted);
                for k in &fresh {
                    st.seen.insert(k.at, &k.job_id);
                }
                advance(&mut st.cursor, &mut st.seen, last.clone());
            }
            read += fresh.len() as u64;
            after = last;
            let Some(next) = next else { break };
            keys = next?;
            if self.saved.elapsed() >= SAVE_EVERY {
                self.save();
            }
        }
        self.keys_db = Some(keys_db);
        Ok(read)
    }

    /// The jobs `keys` name (of the page `span`) read with all their runs, mapped as
    /// `history --lookout-db` maps them, replayed on every core and counted: the page's
    /// counters, or why it could not be read whole (then nothing of it counts).
    fn replay(&self, db: &Arc<Db>, span: Span<'_>, keys: &[Terminal]) -> Result<Counters, Failed> {
        let mut counted = Counters::default();
        if keys.is_empty() {
            return Ok(counted);
        }
        let outcomes: HashMap<&str, Outcome> = keys
            .iter()
            .map(|k| (k.job_id.as_str(), Outcome::of_state(k.state)))
            .collect();
        let source = ExportSource::new(
            Export::new(db::jobs_in(
                db.clone(),
                &self.watched.queues,
                span,
                keys.iter().map(|k| k.job_id.clone()).collect(),
            )),
            self.watched.settings.clone(),
            "lookout-db",
        );
        let export = source.state();
        let (sets, names) = (&self.watched.sets, &self.watched.names);
        let work =
            |scratch: &mut Reclassify, job: crate::replay::Decoded<'_>| see(sets, job.settings, job.history, scratch);
        for_each_ordered(source, None, work, |e| {
            let Emitted::Job(_, processed) = e else { return Ok(true) };
            match processed {
                Processed::Done(seen) => {
                    let outcome = outcomes.get(seen.job.as_str()).copied().unwrap_or(Outcome::Failed);
                    count(&mut counted, &seen, outcome, names);
                    for e in &seen.errors {
                        counted.add(Family::PollErrors, &[Reason::Replay.as_str()], 1);
                        self.say(format!("warning: {e}"));
                    }
                }
                Processed::Error(e) => {
                    counted.add(Family::PollErrors, &[Reason::Replay.as_str()], 1);
                    self.say(format!("warning: {e}"));
                }
                // In `history`'s words; counted below, from the export's totals.
                Processed::LeftOut(text) => self.say(format!("warning: {text}")),
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
        Ok(counted)
    }
}

/// Now, in milliseconds since the Unix epoch.
fn now_millis() -> i64 {
    now().0 / 1_000_000
}
