//! What `watch`'s poller, its HTTP handlers and its shutdown share: the flags as checked, the
//! state and health behind their locks, the stop, and what a job is replayed under.
//!
//! Owns: [`Shared`] (with `--state`'s one writer), [`Stop`], [`Watched`], [`Flags`], and the
//! one sentence for a `--state` that cannot be written. Must not: poll, serve or count.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::commands::replay::lookout::now;
use crate::engine::Settings;
use crate::replay::sides::PolicySets;
use crate::watch::schedule::Health;
use crate::watch::state::State;
use crate::whole_file::{write_whole, Mode};

/// What the flags say, checked before anything is read.
pub(super) struct Flags {
    pub(super) poll: Duration,
    /// `--window`, in microseconds.
    pub(super) window: i64,
    /// Where a fresh state starts (microseconds since the Unix epoch); `None`: now.
    pub(super) since: Option<i64>,
}

/// What the poller, the HTTP handlers and the shutdown share.
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) health: Mutex<Health>,
    /// One writer of `--state` at a time (the poller after a poll, the shutdown).
    pub(super) saving: Mutex<()>,
    pub(super) path: PathBuf,
    pub(super) stop: Stop,
}

impl Shared {
    /// Writes `--state` with what is counted now.
    pub(super) fn save(&self) -> std::io::Result<()> {
        let _one = self.saving.lock().unwrap_or_else(|e| e.into_inner());
        let text = self.state.lock().unwrap_or_else(|e| e.into_inner()).to_json();
        write_whole(&self.path, text.as_bytes(), Mode::New)
    }
}

/// The stop of the process, which the poller waits on between polls.
#[derive(Default)]
pub(super) struct Stop {
    pub(super) stopped: Mutex<bool>,
    pub(super) wake: Condvar,
}

impl Stop {
    pub(super) fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    pub(super) fn is_set(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits `d`, or less when stopped; whether it is.
    pub(super) fn wait(&self, d: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, d, |stopped| !*stopped)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

/// Now, in microseconds since the Unix epoch (Lookout's times).
pub(super) fn now_micros() -> i64 {
    now().0 / 1_000
}

/// The one sentence for a `--state` that cannot be written (at start, on a save, at the end).
pub(super) fn cannot_write_state(path: &Path, e: &std::io::Error) -> String {
    format!("cannot write `--state` `{}`: {e}", path.display())
}

/// What the poller needs to replay a job, shared with `/report`.
pub(super) struct Watched {
    /// Today's policy and the candidates, as every job is replayed under them.
    pub(super) sets: PolicySets,
    pub(super) names: Vec<String>,
    pub(super) settings: Settings,
    pub(super) queues: Vec<String>,
    pub(super) dsn: String,
    pub(super) timeout: Duration,
    pub(super) flags: Flags,
}

/// Jobs a page holds at most: what is in memory at once is one page's keys, and the rows of
/// the jobs the replay holds in flight.
pub(super) const PAGE: usize = 5000;
