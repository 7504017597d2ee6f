//! The poller (docs/watch.md "What it reads"): on a thread of its own, poll after poll, the
//! loop between the pages a poll reads ([`Reader::pages`]) and their counts ([`count_page`]):
//! each page counted, then committed whole and written to `--state` before anything of it is
//! published: its counters, its jobs as counted, the jobs that wait, and the cursor past it,
//! together, so that `--state` never holds a page in part and `/metrics` never serves what the
//! file does not hold.
//!
//! Owns: the loop (a poll, the wait after it and the health it leaves), a page's commit, and
//! the lines it says (sent to the thread that holds stderr). Must not: read Lookout
//! (`pages`), count what a job adds up to (`count`, `watch::job`), or write stderr itself.

use std::sync::Arc;

use tokio::sync::mpsc::Sender;

use crate::model::failure_history::Timestamp;
use crate::watch::cursor::{advance, Cursor};
use crate::watch::metrics::{Family, Reason};
use crate::watch::schedule::next_wait;

use super::count::{count_page, Page};
use super::pages::{Failed, Reader};
use super::shared::{cannot_write_state, now_micros, waiting_words, Shared, Watched};

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
        reader: Reader::default(),
        save_failed: false,
    };
    std::thread::Builder::new()
        .name("retryctl-watch-poll".into())
        .spawn(move || poller.run())
        .expect("a thread for the poller")
}

/// What a poll did.
#[derive(Debug, Default, Clone, Copy)]
struct Polled {
    /// Jobs counted.
    counted: u64,
    /// Jobs that wait for their runs after it.
    waiting: usize,
}

struct Poller {
    shared: Arc<Shared>,
    watched: Arc<Watched>,
    log: Sender<String>,
    /// Lookout, kept between polls.
    reader: Reader,
    /// A write of `--state` failed during the last poll.
    save_failed: bool,
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
                    self.reader.reset();
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

    /// One poll: every page of [`Reader::pages`], counted ([`count_page`]) and committed in
    /// turn, then what it read after them published.
    fn poll(&mut self) -> Result<Polled, Failed> {
        let mut reader = std::mem::take(&mut self.reader);
        let result = self.poll_with(&mut reader);
        self.reader = reader;
        result
    }

    fn poll_with(&mut self, reader: &mut Reader) -> Result<Polled, Failed> {
        let (shared, watched) = (self.shared.clone(), self.watched.clone());
        let log = self.log.clone();
        let say = move |line: String| {
            let _ = log.try_send(line);
        };
        let mut pages = reader.pages(&shared, &watched, &say)?;
        let mut polled = Polled::default();
        for read in &mut pages {
            let mut read = read?;
            let (read_again, cursor) = (read.read_again.take(), read.cursor.take());
            let page = count_page(read, &watched.sets, &watched.settings, &say)?;
            polled.counted += page.counted;
            self.commit(page, read_again.as_deref(), cursor);
        }
        let present = pages.finish()?;
        // Published with the state the poll's end saves.
        self.shared.published.lock().unwrap_or_else(|e| e.into_inner()).present = Some(present);
        polled.waiting = self.state().waiting.len();
        Ok(polled)
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
}

/// `N job(s)`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Now, in milliseconds since the Unix epoch.
fn now_millis() -> i64 {
    crate::commands::replay::lookout::now().0 / 1_000_000
}
