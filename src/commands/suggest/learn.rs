//! Pass 1 of `suggest` driven over its history source: every job's learning folded
//! (`suggest::learn`) in the source's order; for one process, every job copied for pass 2
//! with what could not be read (`replay::source::copy`: pass 2 replays the copy, and says
//! what could not be read as `simulate` says it), and the test jobs copied apart; what
//! could not be read kept to be said if pass 1's counts stop the command before pass 2
//! (docs/reference/suggest.md "How it learns", "Sources and passes").
//!
//! Owns: the copies and the messages of pass 1. Must not: learn (that is
//! `suggest::learn`'s fold), propose, compare or render.

use std::io::{self, Write};
use std::sync::Arc;

use crate::commands::replay::spool::{cannot_spool, spool_file, SpoolFile};
use crate::engine::simulator::Simulator;
use crate::model::failure_history::Timestamp;
use crate::output::stderr::Stderr;
use crate::output::Style;
use crate::replay::incidents::kinds::Gather;
use crate::replay::incidents::Look;
use crate::replay::parallel::{for_each_in_units, for_each_ordered, Decoded, Emitted, Processed};
use crate::replay::partial::Recorder;
use crate::replay::shard::Shard;
use crate::replay::sink::Message;
use crate::replay::source::copy::{job_record, said_record, FailedTimes, LastPlace, Places, Said, Segments};
use crate::replay::source::{EveryQueue, HistorySource, OneQueue, Pos};
use crate::suggest::learn::{failed_times, learn_job, note_exits, see_job, Learning, Placed, Unit};

/// What pass 1 hands over: its counts, and what pass 2 reads or says.
pub struct Pass1 {
    pub learning: Learning,
    /// Every job and what could not be read, in the source's order (one process).
    pub copy: Option<SpoolFile>,
    /// Where `copy`'s records stand, for a reading of the jobs in some windows to skip the
    /// rest unread.
    pub segments: Arc<Segments>,
    /// The jobs at or after `--backtest-at`.
    pub test: Option<SpoolFile>,
    /// The files and settings the copies' jobs name.
    pub places: Arc<Places>,
    /// The source's table prints only the summary (`HistorySource::bulk`).
    pub bulk: bool,
    /// What pass 2 would say of the unreadable entries, as stderr has it (capped as
    /// `Stderr` caps it): said instead when pass 1's counts stop the command before pass 2
    /// (no job replayed), so that an unreadable history is named with its file, line and
    /// reason as `simulate` names it.
    pub unsaid: Vec<u8>,
    /// `--queue` over a source of every queue: the copies hold every queue's jobs, pass 1
    /// learned from this queue's alone, and pass 2 compares this queue's alone unless the
    /// proposal changes the categorizer (docs/suggest.md "Every queue the change reaches").
    pub queue: Option<OneQueue>,
}

impl Pass1 {
    /// Pass 1 as a merge finds it: the shards' learning folded, nothing copied (the merge
    /// reads the history again), nothing kept to say.
    pub fn merged(learning: Learning) -> Pass1 {
        Pass1 {
            learning,
            copy: None,
            segments: Arc::default(),
            test: None,
            places: Arc::default(),
            bulk: true,
            unsaid: Vec::new(),
            queue: None,
        }
    }
}

/// Blocks of the source a worker's unit of pass 1 holds: a unit copies each signature it
/// meets and is then added to the whole on the calling thread, so fewer units cost less
/// (about 2,300 signatures at 1M message-rich runs); 2, not more, because a unit's copies
/// are held until then (BENCHMARKS.md: 4 blocks took 8% less of suggest's CPU than 1 and
/// almost doubled its peak RSS when every job has a signature of its own; 2 took 5% less and
/// about 5 MiB more).
const UNIT_BLOCKS: usize = 2;

/// One job as pass 1's workers leave it: where it falls, and its record in the copies.
struct Learnt {
    placed: Placed,
    /// Its record in the copy, and when its failed runs ended (for the copy's [`Segments`]).
    record: Option<(Vec<u8>, FailedTimes)>,
    /// A job of `--queue` (learned from), not only copied.
    ours: bool,
}

/// A worker's unit of pass 1: what it learned, and the last place it copied a job from.
#[derive(Default)]
struct Acc {
    unit: Unit,
    last: LastPlace,
}

/// Pass 1 over `source`, its baseline `baseline`, split at `at`: the train jobs' failed runs
/// counted; for one process every job copied, and the test jobs apart; what cannot be read
/// kept in `style` to be said. `shard`: a shard's learning, for its partial, and the
/// partial's recorder: its own jobs only, nothing copied (the merge reads the history
/// again), and a later shard's signatures past its first 10,000 written as its entries as
/// they fill (`suggest::learn`), so that it holds no more than one process.
pub fn learn<S: HistorySource>(
    style: Style,
    source: S,
    baseline: &Simulator,
    at: Option<Timestamp>,
    look: &Look,
    shard: Option<(Shard, &mut Recorder<'_>)>,
) -> anyhow::Result<Pass1> {
    let (shard, mut partial) = shard.unzip();
    let copy = shard.is_none();
    // Every queue's jobs are read and `--queue`'s learned from, in one process and in a shard
    // alike: the filter is the workers' here, not the source's, since the incident windows
    // are the cluster's and one process copies every queue's jobs.
    let queue = source.one_queue();
    let source = EveryQueue(source);
    let mut pass = Pass1 {
        // A sharded suggest reads files, by byte range: shard 0 is the first in the source.
        learning: match shard {
            Some(s) => Learning::of_a_shard(s.index == 0),
            None => Learning::default(),
        },
        copy: copy.then(spool_file).transpose().map_err(cannot_spool)?,
        segments: Arc::default(),
        test: (at.is_some() && copy)
            .then(spool_file)
            .transpose()
            .map_err(cannot_spool)?,
        places: Arc::default(),
        bulk: source.bulk(),
        unsaid: Vec::new(),
        queue: queue.clone(),
    };
    let places = pass.places.clone();
    // One process reads the unusual windows' jobs again from its copy to tell their kinds
    // (`incidents::detect`); a shard's partial keeps every window's part for the merge.
    let gather = match copy {
        true => Gather::Span,
        false => Gather::Windows,
    };
    let work = |acc: &mut Acc, job: Decoded<'_>| -> Result<Learnt, String> {
        let ours = queue.as_ref().is_none_or(|q| q.keeps(job.history.job.queue.as_deref()));
        // Every job's failed runs' times, whatever its queue: the incident windows are the
        // cluster's.
        see_job(&mut acc.unit, job.history, look.detect.then_some(gather));
        note_exits(&mut acc.unit, job.history);
        let placed = match ours {
            true => learn_job(&mut acc.unit, job.history, job.settings, job.origin, baseline, at, look),
            // Copied for pass 2, in the later jobs' copy too when it is one.
            false => Placed {
                test: at.zip(job.history.job.submitted_at).is_some_and(|(at, s)| s >= at),
                not_submitted: None,
            },
        };
        let record = copy.then(|| {
            // Sized for most jobs' records at once (a message-rich one is ~250 bytes).
            let mut r = Vec::with_capacity(512);
            let failed = failed_times(&acc.unit, job.history);
            job_record(
                &places,
                &mut acc.last,
                (job.origin, job.settings),
                job.history,
                failed,
                &mut r,
            );
            (r, failed)
        });
        Ok(Learnt { placed, record, ours })
    };
    let mut segments = Segments::default();
    let mut unsaid = Vec::new();
    let mut kept = Stderr::new(&mut unsaid, style, None, false);
    let mut failed: Option<io::Error> = None;
    let mut record = Vec::new();
    // The last job read: where a shard's entries stand in the source.
    let mut last = Pos(0, 0);
    for_each_in_units(source, shard, UNIT_BLOCKS, work, |e| {
        let (at, p) = match e {
            Emitted::Job(at, p) => (at, p),
            Emitted::Unit(acc, _) => {
                pass.learning.add_unit(acc.unit);
                if let Some(rec) = partial.as_deref_mut() {
                    for past in pass.learning.take_past(false) {
                        rec.learned(&last, &past)?;
                    }
                }
                return Ok(true);
            }
        };
        last = at;
        let said = match p {
            Processed::Done(l) => {
                if let Some((record, times)) = &l.record {
                    // A test job goes to the test copy, and to the whole copy too.
                    let test = if l.placed.test { pass.test.as_mut() } else { None };
                    for f in test.into_iter().chain(pass.copy.as_mut()) {
                        if let Err(e) = f.write_all(record) {
                            failed.get_or_insert(e);
                        }
                    }
                    segments.add(record.len(), Some(*times));
                }
                if l.ours {
                    pass.learning.add_job(l.placed);
                }
                return Ok(true);
            }
            Processed::Error(m) => {
                pass.learning.add_error();
                kept.message(&Message::Error(&m))?;
                Said::Error(m)
            }
            Processed::Invalid(f) => {
                pass.learning.add_error();
                kept.message(&Message::Invalid(&f))?;
                Said::Invalid(f)
            }
            Processed::LeftOut(text) => {
                kept.message(&Message::LeftOut(&text))?;
                Said::LeftOut(text)
            }
        };
        // What could not be read, in its place in the copy, for pass 2 to say and count.
        if let Some(f) = pass.copy.as_mut() {
            record.clear();
            said_record(&places, at, said, &mut record);
            if let Err(e) = f.write_all(&record) {
                failed.get_or_insert(e);
            }
            segments.add(record.len(), None);
        }
        Ok(true)
    })?;
    kept.finish()?;
    drop(kept);
    if let Some(rec) = partial {
        for past in pass.learning.take_past(true) {
            rec.learned(&last, &past)?;
        }
    }
    pass.unsaid = unsaid;
    pass.segments = Arc::new(segments);
    pass.learning.other_queues = pass.queue.as_ref().map_or(0, OneQueue::left_out);
    if let Some(e) = failed {
        return Err(cannot_spool(e));
    }
    for f in pass.copy.iter_mut().chain(pass.test.iter_mut()) {
        f.flush().map_err(cannot_spool)?;
    }
    Ok(pass)
}

/// The jobs submitted at or after `at`, copied from `source` with `places` (a sharded
/// suggest's merge: its shards learned, and the backtest's comparison replays these alone,
/// as one process replays the copy its pass 1 made). What cannot be read is pass 2's to say.
pub fn spool_test<S: HistorySource>(source: S, at: Timestamp, places: &Places) -> anyhow::Result<SpoolFile> {
    let mut file = spool_file().map_err(cannot_spool)?;
    let work = |last: &mut LastPlace, job: Decoded<'_>| -> Result<Option<Vec<u8>>, String> {
        Ok(job.history.job.submitted_at.is_some_and(|s| s >= at).then(|| {
            let mut r = Vec::new();
            // Read by the backtest's comparison alone, never filtered by the windows.
            let failed = FailedTimes::Unknown;
            job_record(places, last, (job.origin, job.settings), job.history, failed, &mut r);
            r
        }))
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
