//! After pass 1: the incident windows (docs/reference/suggest.md "Incidents"), found from
//! every job's failed runs' times counted in pass 1 (every queue's; a merge's shards' added
//! up), and the mix that tells an incident from a burst or a surge
//! (`replay::incidents::kinds`): one process gathered the span's part of it in pass 1 and
//! reads the unusual windows' jobs again from its copy for theirs; a merge's shards kept every
//! window's, as simulate and tune do. The windows merged with those given; when there are
//! some, the jobs read again for what the windows hold: their listing, and the learning
//! without the incidents' runs (`suggest::incidents`), the learning with them kept to tell
//! which signatures they change.
//!
//! Owns: those readings. Must not: learn, propose or render.

use crate::commands::replay::source::FileSource;
use crate::commands::replay::spool::cannot_read_back;
use crate::engine::simulator::Simulator;
use crate::model::signature::FailedTexts;
use crate::replay::incidents::kinds::WindowMixes;
use crate::replay::incidents::{self, Detected, Kind, Look, Rule, Window, Windows};
use crate::replay::parallel::{for_each_in_units, Emitted};
use crate::replay::source::copy::{Copy, ReadAgain as Read};
use crate::replay::source::Either;
use crate::suggest::incidents::{Found, InWindows};
use crate::suggest::learn::collisions;
use crate::suggest::stats::SignatureStats;

use crate::commands::replay::sides::Sides;

use super::given::History;
use super::learn::Pass1;

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
    again: InWindows,
    collided: Vec<bool>,
}

/// The windows, and when there are some what they hold, taken out of `pass`'s learning
/// (`history`: a merge's, read again).
pub(super) fn incidents(
    pass: &mut Pass1,
    baseline: &Simulator,
    sides: &Sides,
    history: &History,
) -> anyhow::Result<Incidents> {
    let setting = &sides.spec.incidents;
    let detected = match setting.detect {
        true => detect(pass, sides, history)?,
        false => Detected::given(&setting.given_windows()),
    };
    // Every window, of every kind, in time order (none overlaps another), and whether its
    // runs are left out.
    let mut all: Vec<(Window, Kind)> = detected.windows.iter().map(|w| (*w, Kind::Incident)).collect();
    all.extend(detected.busy.iter().cloned());
    all.sort_by_key(|(w, _)| w.from);
    if all.is_empty() {
        return Ok(Incidents {
            detected,
            ..Incidents::default()
        });
    }
    let leave: Vec<bool> = all.iter().map(|(_, k)| k.is_incident()).collect();
    let learned = &pass.learning.learned;
    let with: Vec<SignatureStats> = learned
        .signatures
        .iter()
        .chain(learned.other.as_ref())
        .cloned()
        .collect();
    let windows = Windows(all.iter().map(|(w, _)| *w).collect());
    let mut total = InWindows::default();
    let at = sides.spec.backtest_time();
    let queue = sides.spec.queue.as_deref();
    let slots = &pass.learning.learned;
    let work = |acc: &mut Acc, job: crate::replay::Decoded<'_>| -> Result<(), String> {
        let h = &*job.history;
        // What pass 1 learned from: `--queue`'s jobs, submitted before `--backtest-at`.
        let ours = queue.is_none_or(|q| h.job.queue.as_deref() == Some(q));
        let test = at.zip(h.job.submitted_at).is_some_and(|(at, s)| s >= at);
        collisions(h, baseline, &mut acc.collided);
        acc.again
            .add_job(h, &windows, &leave, (ours && !test, slots), &acc.collided);
        Ok(())
    };
    for_each_in_units(
        every_job(pass, &windows, sides, history)?,
        None,
        UNIT_BLOCKS,
        work,
        |e| {
            if let Emitted::Unit(acc, _) = e {
                total.merge(acc.again);
            }
            Ok(true)
        },
    )?;
    let listed = total.leave_out(&mut pass.learning.learned, windows.len());
    let left_out = pass
        .learning
        .learned
        .signatures
        .iter()
        .chain(pass.learning.learned.other.as_ref())
        .map(|s| s.in_incidents)
        .sum();
    let (mut windows, mut busy) = (Vec::new(), Vec::new());
    for ((w, kind), l) in all.into_iter().zip(listed) {
        match kind {
            Kind::Incident => windows.push((w, l)),
            kind => busy.push((w, kind, l)),
        }
    }
    let in_windows = windows.iter().map(|(_, l)| l.failed_runs).sum();
    let found = Found {
        windows,
        busy,
        lambda: detected.lambda,
        tests: detected.tests,
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

/// The windows pass 1's counts find, of every kind, merged with the windows given. The
/// unusual ones' kinds are told by the mix: a merge's shards gathered every window's part of
/// it; one process gathered the span's alone, and reads the unusual windows' jobs again from
/// its copy for theirs (none unusual: nothing read).
fn detect(pass: &Pass1, sides: &Sides, history: &History) -> anyhow::Result<Detected> {
    let detector = &pass.learning.detector;
    let given = &sides.spec.incidents.given;
    if pass.copy.is_none() {
        return Ok(detector.detect(Rule::default(), given));
    }
    detector.detect_read(Rule::default(), given, |starts, spans| {
        let mut total = WindowMixes::default();
        let work = |acc: &mut Mixed, job: crate::replay::Decoded<'_>| -> Result<(), String> {
            let h = &*job.history;
            incidents::ends(h, &mut acc.ends);
            acc.texts.clear();
            let texts = acc.texts.of(&h.runs);
            acc.mixes.add_history(&detector.mix, starts, h, &acc.ends, texts);
            Ok(())
        };
        for_each_in_units(every_job(pass, &spans, sides, history)?, None, UNIT_BLOCKS, work, |e| {
            if let Emitted::Unit(acc, _) = e {
                total.merge(acc.mixes);
            }
            Ok(true)
        })?;
        Ok(total)
    })
}

/// A worker's unit of the unusual windows' jobs read again for their mix.
#[derive(Default)]
struct Mixed {
    mixes: WindowMixes,
    ends: Vec<Option<i64>>,
    texts: FailedTexts,
}

/// The jobs pass 1 read, every queue's, with a failed run that may have ended in
/// `windows`: from its copy (the other jobs' records skipped unread), or a merge's
/// history read again (every job: `InWindows` leaves the others out).
fn every_job(pass: &Pass1, windows: &Windows, sides: &Sides, history: &History) -> anyhow::Result<Read> {
    if let Some(copy) = &pass.copy {
        let copy = copy
            .reader()
            .and_then(|f| Copy::open(f, &pass.places, pass.bulk))
            .map_err(cannot_read_back)?
            .only(None)
            .indexed(pass.segments.clone());
        return Ok(Either::Left(copy.touching(windows.clone())));
    }
    let History::File(path) = history else {
        unreachable!("one process copies its history, a merge reads files")
    };
    Ok(Either::Right(FileSource::open(sides, path)?.files.only(None)))
}

/// What pass 1 found, for pass 2's estimates and words.
pub(super) fn known(i: &Incidents) -> Look {
    Look::found(&i.detected)
}
