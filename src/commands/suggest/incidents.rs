//! After pass 1: the incident windows (docs/reference/suggest.md "Incidents"), found from
//! every job's failed runs' times (pass 1's counts, every queue's; a merge's shards' added
//! up) and merged with the windows given; when there are some, the jobs read again (pass 1's
//! copy, or a merge's history) for what the windows hold: their listing, and the learning
//! without their runs (`suggest::incidents`), the learning with them kept to tell which
//! signatures they change.
//!
//! Owns: that step's reading. Must not: learn, propose or render.

use crate::commands::replay::source::FileSource;
use crate::commands::replay::spool::cannot_read_back;
use crate::engine::simulator::Simulator;
use crate::replay::incidents::{Detected, Rule, Windows};
use crate::replay::parallel::{for_each_in_units, Emitted};
use crate::replay::source::copy::{Again as Read, Copy};
use crate::replay::source::Either;
use crate::suggest::incidents::{Again, Found};
use crate::suggest::learn::collisions;
use crate::suggest::stats::SignatureStats;

use super::learn::Pass1;
use super::{History, Suggest};

/// Blocks of the source a worker's unit holds (as pass 1's).
const UNIT_BLOCKS: usize = 2;

/// What the windows are and what they hold.
#[derive(Default)]
pub(super) struct Incidents {
    pub detected: Detected,
    /// With windows: their listing and what was left out.
    pub found: Option<Found>,
    /// With windows: every signature's counts as pass 1 made them, the windows' runs in
    /// (`other` among them), to tell which proposals the windows change.
    pub with: Option<Vec<SignatureStats>>,
}

/// A worker's unit of the jobs read again.
#[derive(Default)]
struct Acc {
    again: Again,
    collided: Vec<bool>,
}

impl Suggest {
    /// The windows, and when there are some what they hold, taken out of `pass`'s learning.
    pub(super) fn incidents(&self, pass: &mut Pass1, baseline: &Simulator) -> anyhow::Result<Incidents> {
        let setting = &self.sides.spec.incidents;
        let detected = match setting.detect {
            true => pass.learning.detector.detect(Rule::default(), &setting.given),
            false => Detected::given(&setting.given_windows()),
        };
        if detected.windows.is_empty() {
            return Ok(Incidents {
                detected,
                ..Incidents::default()
            });
        }
        let learned = &pass.learning.learned;
        let with: Vec<SignatureStats> = learned
            .signatures
            .iter()
            .chain(learned.other.as_ref())
            .cloned()
            .collect();
        let windows = detected.windows();
        let mut total = Again::default();
        let at = self.sides.spec.backtest_time();
        let queue = self.sides.spec.queue.as_deref();
        let work = |acc: &mut Acc, job: crate::replay::Decoded<'_>| -> Result<(), String> {
            let h = &*job.history;
            // What pass 1 learned from: `--queue`'s jobs, submitted before `--backtest-at`.
            let ours = queue.is_none_or(|q| h.job.queue.as_deref() == Some(q));
            let test = at.zip(h.job.submitted_at).is_some_and(|(at, s)| s >= at);
            collisions(h, baseline, &mut acc.collided);
            acc.again.add_job(h, &windows, ours && !test, &acc.collided);
            Ok(())
        };
        for_each_in_units(self.every_job(pass, &windows)?, None, UNIT_BLOCKS, work, |e| {
            if let Emitted::Unit(acc, _) = e {
                total.merge(acc.again);
            }
            Ok(true)
        })?;
        let listed = total.leave_out(&mut pass.learning.learned, windows.len());
        let left_out = pass
            .learning
            .learned
            .signatures
            .iter()
            .chain(pass.learning.learned.other.as_ref())
            .map(|s| s.in_incidents)
            .sum();
        let in_windows = listed.iter().map(|l| l.failed_runs).sum();
        let found = Found {
            windows: detected.windows.iter().copied().zip(listed).collect(),
            lambda: detected.lambda,
            tests: detected.tests,
            threshold: detected.threshold,
            left_out,
            failed_runs: pass.learning.learned.failed_runs,
            in_windows,
        };
        Ok(Incidents {
            detected,
            found: Some(found),
            with: Some(with),
        })
    }

    /// Every job pass 1 read with a failed run that may have ended in `windows`, every
    /// queue's: from its copy (the other jobs' records skipped unread), or a merge's history
    /// read again (every job: `Again` leaves the others out).
    fn every_job(&self, pass: &Pass1, windows: &Windows) -> anyhow::Result<Read> {
        if let Some(copy) = &pass.copy {
            let copy = copy
                .reader()
                .and_then(|f| Copy::open(f, &pass.places, pass.bulk))
                .map_err(cannot_read_back)?;
            return Ok(Either::Left(copy.only(None).touching(windows.clone())));
        }
        let History::File(path) = &self.history else {
            unreachable!("one process copies its history, a merge reads files")
        };
        Ok(Either::Right(FileSource::open(&self.sides, path)?.files.only(None)))
    }
}

/// The windows known after pass 1, for pass 2's estimates.
pub(super) fn known(i: &Incidents) -> Windows {
    i.detected.windows()
}
