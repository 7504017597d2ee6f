//! Pass 1 of `suggest` driven over its history source: every job's learning folded
//! (`suggest::learn`) in the source's order, the test jobs (and, for a source read once,
//! every job) spooled for pass 2, and what could not be read said on stderr now or kept to
//! be said by pass 2 (docs/reference/suggest.md "How it learns").
//!
//! Owns: the spools and the messages of pass 1. Must not: learn (that is
//! `suggest::learn`'s fold), propose, compare or render.

use std::io::{self, Write};

use crate::commands::replay::spool::{cannot_spool, spool_file, SpoolFile};
use crate::engine::simulator::Simulator;
use crate::model::failure_history::{failure_history_json, Timestamp};
use crate::output::stderr::Stderr;
use crate::output::Style;
use crate::replay::parallel::{for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::partial::Recorder;
use crate::replay::shard::Shard;
use crate::replay::sink::Message;
use crate::replay::source::{HistorySource, Pos, Stamps};
use crate::suggest::learn::{learn_job, Learning, Placed, Unit};

/// What pass 1 hands over: its counts, and what pass 2 reads or says.
pub struct Pass1 {
    pub learning: Learning,
    /// Every job (a source read once), when the second pass needs it.
    pub spool: Option<SpoolFile>,
    /// The jobs at or after `--backtest-at`.
    pub test: Option<SpoolFile>,
    /// A history read again: its files as they were before pass 1 read them.
    pub stamps: Option<Stamps>,
    /// What a source read twice would say of its unreadable entries in pass 2, as stderr
    /// has it (capped as `Stderr` caps it): said instead when pass 1's counts stop the
    /// command before pass 2 (no job replayed), so that an unreadable history is named with
    /// its file, line and reason as `simulate` names it.
    pub unsaid: Vec<u8>,
}

impl Pass1 {
    /// Pass 1 as a merge finds it: the shards' learning folded, nothing spooled (the merge
    /// reads the history again), nothing kept to say.
    pub fn merged(learning: Learning) -> Pass1 {
        Pass1 {
            learning,
            spool: None,
            test: None,
            // The merge compares the shards' digest of the history instead.
            stamps: None,
            unsaid: Vec::new(),
        }
    }
}

/// One job as pass 1's workers leave it.
struct Learnt {
    placed: Placed,
    spool: Option<Vec<u8>>,
}

/// `history` as one line of the JSON Lines copy.
fn spooled(history: &crate::model::failure_history::FailureHistory) -> Vec<u8> {
    let mut line = failure_history_json(history).to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Pass 1 over `source`, its baseline `baseline`, split at `at`: the train jobs' failed runs
/// counted; the test jobs (and, with `spool_all`, for a source read once, every job)
/// spooled; what cannot be read said on `err` in `style` (or kept). `shard`: a shard's
/// learning, for its partial, and the partial's recorder: its own jobs only, nothing
/// spooled (the merge reads the history again), and a later shard's signatures past its
/// first 10,000 written as its entries as they fill (`suggest::learn`), so that it holds no
/// more than one process.
pub fn learn<S: HistorySource>(
    err: &mut dyn Write,
    style: Style,
    source: S,
    baseline: &Simulator,
    at: Option<Timestamp>,
    spool_all: bool,
    shard: Option<(Shard, &mut Recorder<'_>)>,
) -> anyhow::Result<Pass1> {
    let (shard, mut partial) = shard.unzip();
    let mut pass = Pass1 {
        // A sharded suggest reads files, by byte range: shard 0 is the first in the source.
        learning: match shard {
            Some(s) => Learning::of_a_shard(s.index == 0),
            None => Learning::default(),
        },
        spool: spool_all.then(spool_file).transpose().map_err(cannot_spool)?,
        test: (at.is_some() && shard.is_none())
            .then(spool_file)
            .transpose()
            .map_err(cannot_spool)?,
        stamps: None,
        unsaid: Vec::new(),
    };
    let work = |unit: &mut Unit, job: Decoded<'_>| -> Result<Learnt, String> {
        let placed = learn_job(unit, job.history, job.settings, job.origin, baseline, at);
        let spool = (spool_all || (placed.test && shard.is_none())).then(|| spooled(job.history));
        Ok(Learnt { placed, spool })
    };
    let mut stderr = Stderr::new(err, style, None, false);
    let mut unsaid = Vec::new();
    let mut kept = Stderr::new(&mut unsaid, style, None, false);
    let mut failed: Option<io::Error> = None;
    // The last job read: where a shard's entries stand in the source.
    let mut last = Pos(0, 0);
    for_each_ordered(source, shard, work, |e| {
        let p = match e {
            Emitted::Job(at, p) => {
                last = at;
                p
            }
            Emitted::Unit(unit, _) => {
                pass.learning.add_unit(unit);
                if let Some(rec) = partial.as_deref_mut() {
                    for past in pass.learning.take_past(false) {
                        rec.learned(&last, &past)?;
                    }
                }
                return Ok(true);
            }
        };
        // A source read twice says what it cannot read in pass 2, as `simulate` does.
        let said = if spool_all { &mut stderr } else { &mut kept };
        match p {
            Processed::Done(l) => {
                if let Some(line) = &l.spool {
                    // A test job goes to the test file, and to the whole copy too.
                    let test = if l.placed.test { pass.test.as_mut() } else { None };
                    let all = if spool_all { pass.spool.as_mut() } else { None };
                    for f in test.into_iter().chain(all) {
                        if let Err(e) = f.write_all(line) {
                            failed.get_or_insert(e);
                        }
                    }
                }
                pass.learning.add_job(l.placed);
            }
            Processed::Error(m) => {
                pass.learning.add_error();
                said.message(&Message::Error(&m))?;
            }
            Processed::Invalid(f) => {
                pass.learning.add_error();
                said.message(&Message::Invalid(&f))?;
            }
            Processed::LeftOut(text) => said.message(&Message::LeftOut(&text))?,
        }
        Ok(true)
    })?;
    drop(stderr);
    kept.finish()?;
    drop(kept);
    if let Some(rec) = partial {
        for past in pass.learning.take_past(true) {
            rec.learned(&last, &past)?;
        }
    }
    pass.unsaid = unsaid;
    if let Some(e) = failed {
        return Err(cannot_spool(e));
    }
    for f in pass.spool.iter_mut().chain(pass.test.iter_mut()) {
        f.flush().map_err(cannot_spool)?;
    }
    Ok(pass)
}

/// The jobs submitted at or after `at`, copied from `source` (a sharded suggest's merge:
/// its shards learned, and the backtest's comparison replays these alone, as one process
/// replays the copy its pass 1 made). What cannot be read is pass 2's to say.
pub fn spool_test<S: HistorySource>(source: S, at: Timestamp) -> anyhow::Result<SpoolFile> {
    let mut file = spool_file().map_err(cannot_spool)?;
    let work = |_: &mut (), job: Decoded<'_>| -> Result<Option<Vec<u8>>, String> {
        let history = job.history;
        Ok(history
            .job
            .submitted_at
            .is_some_and(|s| s >= at)
            .then(|| spooled(history)))
    };
    let mut failed: Option<io::Error> = None;
    for_each_ordered(source, None, work, |e| {
        if let Emitted::Job(_, Processed::Done(Some(line))) = e {
            if let Err(e) = file.write_all(&line) {
                failed.get_or_insert(e);
            }
        }
        Ok(true)
    })?;
    if let Some(e) = failed {
        return Err(cannot_spool(e));
    }
    file.flush().map_err(cannot_spool)?;
    Ok(file)
}
