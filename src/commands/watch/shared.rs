//! What `watch`'s poller, its HTTP handlers and its shutdown share: the flags as checked, the
//! state and health behind their locks, what `/metrics` serves, the stop, and what a job is
//! replayed under.
//!
//! Owns: [`Shared`] (with `--state`'s one writer, and [`Published`]: what the last state written
//! holds, the only thing `/metrics` serves, so that no counter a scrape saw goes back after a
//! restart), [`Stop`], [`Watched`], [`Flags`], each candidate's verdict over the window
//! ([`verdicts`], by suggest's rules), and the one sentence for a `--state` that cannot be
//! written. Must not: poll, serve or count.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::commands::replay::lookout::now;
use crate::engine::Settings;
use crate::replay::explained::MaxContradictions;
use crate::replay::policy_sets::PolicySets;
use crate::suggest::verdict::{judge, Decision, Judged};
use crate::watch::hour_kind::Active;
use crate::watch::metrics::Counters;
use crate::watch::schedule::Health;
use crate::watch::state::State;
use crate::whole_file::{write_whole_with, Mode};

/// What the flags say, checked before anything is read.
pub(super) struct Flags {
    pub(super) poll: Duration,
    /// `--window`, in microseconds.
    pub(super) window: i64,
    /// `--settle`, in microseconds.
    pub(super) settle: i64,
    /// `--lookback`, in microseconds: how far behind its cursor each poll reads again.
    pub(super) lookback: i64,
    /// Where a fresh state starts (microseconds since the Unix epoch); `None`: now.
    pub(super) since: Option<i64>,
    /// How far back from the machine's clock that start was counted (`--since DURATION`, 0
    /// for now), to be counted again from the database's clock; `None` for a time, or a start
    /// this process did not make.
    pub(super) back: Option<i64>,
}

/// How a candidate is judged over the window (docs/watch.md "A verdict per candidate").
#[derive(Debug, Clone, Copy)]
pub(super) struct VerdictRule {
    /// `--window`, in microseconds.
    pub(super) window: i64,
    /// `--min-jobs`: jobs with a failed run the window needs for a verdict.
    pub(super) min_jobs: u64,
    pub(super) max_contradictions: MaxContradictions,
}

/// A candidate's verdict: suggest's three, or too few jobs to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Decided(Decision),
    Inconclusive,
}

impl Verdict {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Verdict::Decided(d) => d.as_str(),
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// What the last `--state` written holds, as `/metrics` serves it.
#[derive(Debug, Clone, Default)]
pub(super) struct Published {
    pub(super) counters: Counters,
    /// The cursor's time (microseconds since the Unix epoch), or where a fresh state starts.
    pub(super) cursor: i64,
    pub(super) last_success: Option<i64>,
    /// Jobs waiting for their runs.
    pub(super) waiting: usize,
    /// Each candidate's verdict over the window, in the candidates' order, with its words.
    pub(super) verdicts: Vec<(String, Verdict, String)>,
    /// What the hour of the last job counted is: an incident window, a burst or a surge.
    pub(super) active: Active,
    /// What waits and retries now, as the last poll read it: gauges, not kept in `--state`.
    pub(super) present: Option<crate::lookout::present::Present>,
}

/// What the poller, the HTTP handlers and the shutdown share.
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) published: Mutex<Published>,
    pub(super) health: Mutex<Health>,
    /// One writer of `--state` at a time (the poller after a page, the shutdown).
    pub(super) saving: Mutex<()>,
    pub(super) path: PathBuf,
    pub(super) stop: Stop,
    /// Today's policy and the candidates, shared with [`Watched`]: the candidates' names, in
    /// order, are theirs.
    pub(super) sets: Arc<PolicySets>,
    pub(super) rule: VerdictRule,
}

impl Shared {
    /// Writes `--state` with what is counted now, then publishes it: `/metrics` serves a
    /// count only once the file holds it.
    pub(super) fn save(&self) -> std::io::Result<()> {
        let _one = self.saving.lock().unwrap_or_else(|e| e.into_inner());
        let published = {
            // Written from the state as it stands: no copy of the document in memory.
            let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            write_whole_with(&self.path, Mode::New, |out| st.write_json(out))?;
            self.publishable(&st)
        };
        let mut p = self.published.lock().unwrap_or_else(|e| e.into_inner());
        // The present is the last poll's read of Lookout, not the state's: it stays.
        let present = p.present.take();
        *p = Published { present, ..published };
        Ok(())
    }

    /// What `st` publishes.
    pub(super) fn publishable(&self, st: &State) -> Published {
        let now = now_micros();
        Published {
            counters: st.counters.clone(),
            cursor: st.cursor.as_ref().map_or(st.start, |c| c.at),
            last_success: st.last_success,
            waiting: st.waiting.len(),
            verdicts: verdicts(st, &self.sets.names(), self.rule, now),
            active: match &st.cursor {
                Some(c) => st
                    .window
                    .active(c.at, now.saturating_sub(self.rule.window).max(st.start)),
                None => Active::Usual,
            },
            present: None,
        }
    }
}

/// Each candidate's verdict over the jobs counted in the window ending at `now`: suggest's rules
/// on the window's comparison with today's policy (a lost job, contradictions past
/// `--max-contradictions`, more hours for no change: `reject`; nothing that matters changed:
/// `keep`; else `adopt`), or `inconclusive` while fewer than `--min-jobs` jobs of the window
/// had a failed run.
pub(super) fn verdicts(st: &State, names: &[String], rule: VerdictRule, now: i64) -> Vec<(String, Verdict, String)> {
    let (failed, sums) = st.window.since(now.saturating_sub(rule.window));
    names
        .iter()
        .map(|name| match sums.get(name) {
            Some(c) if failed >= rule.min_jobs => {
                let judged = Judged {
                    comparison: c,
                    lost_jobs: &[],
                    explained: c.explained.as_ref().map(|e| (e, rule.max_contradictions)),
                    queues: None,
                };
                let j = judge(judged, None);
                (name.clone(), Verdict::Decided(j.decision), j.line())
            }
            _ => {
                let words = format!(
                    "inconclusive: {failed} of the jobs counted in the window had a failed run, fewer than --min-jobs {}",
                    rule.min_jobs
                );
                (name.clone(), Verdict::Inconclusive, words)
            }
        })
        .collect()
}

/// The stop of the process, which the poller waits on between polls.
#[derive(Default)]
pub(super) struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
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

/// A failed run's signature, as suggest computes it (docs/reference/suggest.md
/// "Signatures"): the `signature` of a futile retry (`watch::job::see`).
pub(super) fn sign(run: &crate::model::failure_history::Run) -> String {
    crate::model::signature::signature(run).text()
}

/// How many jobs wait for their runs, as the log and `/healthz` say it.
pub(super) fn waiting_words(n: usize) -> String {
    match n {
        0 => "no job waits for its runs".to_string(),
        1 => "1 waits for its runs".to_string(),
        n => format!("{n} wait for their runs"),
    }
}

/// What the poller needs to replay a job, shared with `/report`.
pub(super) struct Watched {
    /// Today's policy and the candidates, as every job is replayed under them.
    pub(super) sets: Arc<PolicySets>,
    pub(super) settings: Settings,
    pub(super) queues: Vec<String>,
    pub(super) dsn: String,
    pub(super) timeout: Duration,
    pub(super) flags: Flags,
    /// `--window` as given, for the words that name it.
    pub(super) window_words: String,
    /// `--lookback` as given.
    pub(super) lookback_words: String,
}

/// Jobs a page holds at most: what is in memory at once is one page's keys, and the rows of
/// the jobs the replay holds in flight.
pub(super) const PAGE: usize = 5000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::duration::GoDuration;
    use crate::model::failure_history::Final;
    use crate::replay::compare::{JobDiff, Side};
    use crate::watch::job::{SeenJob, Shadow};
    use crate::watch::metrics::Change;

    /// A job with a failed run that candidate `c.yaml` loses (today's policy saves it), whose
    /// record contradicts today's policy when `contradicted`.
    fn lost(contradicted: bool) -> SeenJob {
        let side = |final_state| Side {
            final_state,
            retries: 1,
            delay: GoDuration::ZERO,
            runs: 2,
            runs_left: 0,
            compute: GoDuration::from_secs(60),
        };
        let diff = JobDiff {
            job: "j".into(),
            baseline: side(Final::Succeeded),
            candidate: side(Final::Failed),
            compute_added: GoDuration::ZERO,
            compute_removed: GoDuration::ZERO,
            resources: None,
        };
        SeenJob {
            job: "j".into(),
            queue: "ml".into(),
            retries: Vec::new(),
            failed: false,
            contradicted,
            collisions: 0,
            collisions_ran: 0,
            failed_runs: 1,
            recorded: Default::default(),
            mix: Default::default(),
            shadows: vec![Some(Shadow {
                change: Change::Lost,
                gpu_saved: 0,
                gpu_added: 0,
                gpu_lost: 0,
                diff,
            })],
            errors: Vec::new(),
        }
    }

    /// A reject that comes from drift says so first: past `--max-contradictions`, the verdict
    /// names the record's contradictions before the candidate's own reasons.
    #[test]
    fn a_reject_for_drift_names_the_drift_first() {
        const NOW: i64 = 1_800_000_000_000_000;
        let names = ["c.yaml".to_string()];
        let mut st = State::default();
        for k in 0..200 {
            st.window.add(NOW - 60_000_000, &lost(k < 10), &names);
        }
        let rule = VerdictRule {
            window: 7 * 24 * 3_600_000_000,
            min_jobs: 100,
            max_contradictions: MaxContradictions::default(),
        };
        let v = verdicts(&st, &names, rule, NOW);
        assert_eq!(v[0].1, Verdict::Decided(Decision::Reject));
        assert!(
            v[0].2.starts_with(
                "reject (do not adopt): the baseline does not explain the record: 10 jobs contradict it; is it what the cluster ran?; loses 200 jobs"
            ),
            "{}",
            v[0].2
        );
    }
}
