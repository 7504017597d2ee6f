//! Many jobs through the evaluator on every core, in input order.
//!
//! Owns: [`for_each_ordered`], the parallel stage — a reader thread cuts the source into
//! units (a block of JSON lines, or a bounded number of other entries), workers split,
//! decode (into a reused [`Scratch`] each) and apply the driver's work to each job of a
//! unit, and results are handed back in input order, so output and counts are
//! byte-identical to a single-threaded run and only a few units are in memory whatever the
//! input size. Must not: know what the work is (that is `run`), format text for people or
//! write output.

use std::collections::BTreeMap;
use std::io;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

use crate::engine::Settings;
use crate::input::SourceFile;
use crate::model::failure_history::FailureHistory;

use super::json_lines::Scratch;
use super::shard::Shard;
use super::source::copy::Record;
use super::source::{Body, Entry, HistorySource, OneQueue, Origin, Pos, Progress, EMPTY_TEXT};

/// Entries handed to a worker at a time when they are not JSON lines (YAML files of a
/// directory); a block of JSON lines ([`BLOCK_BYTES`]) is one unit on its own.
///
/// [`BLOCK_BYTES`]: super::source::BLOCK_BYTES
pub const CHUNK: usize = 1024;

/// A decoded entry, ready to replay: borrowed from the worker that decoded it (its history
/// is the worker's reused [`Scratch`]). Mutable, so that a side's categorizer can classify
/// its runs in place (`replay::categorize`), which must put them back before it is done.
pub struct Decoded<'a> {
    pub origin: &'a Origin,
    pub settings: &'a Settings,
    pub history: &'a mut FailureHistory,
}

/// What became of one entry.
pub enum Processed<T> {
    /// The job replayed (`T`: a report, a comparison, …).
    Done(T),
    /// Not replayed; the message names where (`file:line: …`).
    Error(String),
    /// A YAML file with invalid documents.
    Invalid(Box<SourceFile>),
    /// A record the source left out ([`Body::LeftOut`]): reported, not counted.
    LeftOut(String),
}

/// What [`for_each_ordered`] hands the emitting side, in input order.
pub enum Emitted<T, A> {
    /// One entry's result, and where it stands in the source.
    Job(Pos, Processed<T>),
    /// The accumulator of the unit whose results were just emitted, and how far the source
    /// was when that unit was read.
    Unit(A, Progress),
}

/// Decodes every job of `entry` that is `shard`'s (every job without one: no shard, or a
/// source that yields only the shard's entries) and applies `work` to each, in order, into
/// `out` with its position. A block of lines comes sifted by its source
/// ([`HistorySource::sift`]); an entry that names no job goes to the shard of its default id.
fn process<A, T>(
    entry: Entry,
    shard: Option<Shard>,
    queue: Option<&OneQueue>,
    scratch: &mut Scratch,
    acc: &mut A,
    work: &impl Fn(&mut A, Decoded<'_>) -> Result<T, String>,
    out: &mut Vec<(Pos, Processed<T>)>,
) {
    let Entry {
        mut origin,
        settings,
        body,
    } = entry;
    let owns = |id: &str| shard.is_none_or(|s| s.owns(id));
    // `--queue` over a source of every queue's jobs: another queue's job is left out here,
    // once decoded (its place in the source stays empty).
    let kept = |h: &FailureHistory| queue.is_none_or(|q| q.keeps(h.job.queue.as_deref()));
    // `settings`: the entry's, or a copied job's own (a copy's block holds several files').
    let mut run = |origin: &Origin, settings: &Settings, history: &mut FailureHistory| {
        if history.job.id.is_empty() {
            history.job.id = origin.default_id();
        }
        let job = Decoded {
            origin,
            settings,
            history,
        };
        match work(acc, job) {
            Ok(t) => Processed::Done(t),
            Err(msg) => Processed::Error(msg),
        }
    };
    match body {
        Body::Lines(block) => {
            // Sifted by the source: only the shard's lines are left.
            for (n, at, line) in block.lines() {
                origin.at_line(n, at);
                let processed = match scratch.decode(line, || origin.line().unwrap_or(n)) {
                    Ok(history) if !kept(history) => continue,
                    Ok(history) => run(&origin, &settings, history),
                    Err(msg) => Processed::Error(format!("{origin}: {msg}")),
                };
                out.push((origin.pos(), processed));
            }
        }
        Body::History(mut h) => {
            let id = if h.job.id.is_empty() {
                origin.default_id()
            } else {
                h.job.id.clone()
            };
            if owns(&id) && kept(&h) {
                out.push((origin.pos(), run(&origin, &settings, &mut h)));
            }
        }
        Body::Error(msg) => {
            let id = origin.default_id();
            if owns(&id) {
                out.push((origin.pos(), Processed::Error(format!("{origin}: {msg}"))));
            }
        }
        Body::Empty => {
            let id = origin.default_id();
            if owns(&id) {
                out.push((origin.pos(), Processed::Error(format!("{origin}: {EMPTY_TEXT}"))));
            }
        }
        Body::Invalid(file) => {
            let id = origin.default_id();
            if owns(&id) {
                out.push((origin.pos(), Processed::Invalid(file)));
            }
        }
        Body::LeftOut { text, job } => {
            if owns(&job) {
                out.push((origin.pos(), Processed::LeftOut(text)));
            }
        }
        // A copy's records: one process's own, never a shard's; suggest's copies every
        // queue's jobs, and pass 2 leaves out another queue's unless it compares them all.
        Body::Copied(block) => {
            for (pos, record) in block.records() {
                let processed = match record {
                    Record::Job {
                        origin,
                        settings,
                        packed,
                    } => match scratch.unpack(packed) {
                        Ok(history) if !kept(history) => continue,
                        Ok(history) => run(&origin, &settings, history),
                        Err(d) => Processed::Error(format!("{origin}: the temporary copy of the history {d}")),
                    },
                    Record::Error(text) => Processed::Error(text),
                    Record::LeftOut(text) => Processed::LeftOut(text),
                    Record::Invalid(file) => Processed::Invalid(file),
                };
                out.push((pos, processed));
            }
        }
    }
}

/// Runs `work` on every job of `source` on all cores (rayon's thread count, so
/// `RAYON_NUM_THREADS=1` is one worker), and `emit` on each result in input order. `emit`
/// returns `Ok(false)` to stop early (stdout closed).
/// `work` may also fold what it wants into an accumulator of its unit (a summary, so that
/// the emitting thread does not add up every job), which `emit` gets after the unit's last
/// result ([`Emitted::Unit`]); the accumulators of units not emitted (an early stop) are
/// dropped.
///
/// A reader thread cuts the source into units (a block of JSON lines, or up to [`CHUNK`]
/// other entries); each worker takes the next unit, decodes and replays its jobs into a
/// [`Scratch`] of its own and sends the results back numbered; the calling thread puts them
/// back in order and emits them while the workers go on. At most `workers + 2` units are
/// read and not yet emitted (the reader waits for a token per unit), so memory stays
/// flat whatever the input size and however slow the output. With `shard`, the source is
/// told to sift first ([`HistorySource::sift`]) and, unless it yields only the shard's
/// entries, every other entry is sorted here.
pub fn for_each_ordered<S, A, T, W, E>(source: S, shard: Option<Shard>, work: W, emit: E) -> io::Result<()>
where
    S: HistorySource,
    A: Default + Send,
    T: Send,
    W: Fn(&mut A, Decoded<'_>) -> Result<T, String> + Sync,
    E: FnMut(Emitted<T, A>) -> io::Result<bool>,
{
    for_each_in_units(source, shard, 1, work, emit)
}

/// [`for_each_ordered`] with `blocks` blocks of JSON lines (or of a copy's records) a unit
/// instead of one: for a fold whose every unit costs something of its own (`suggest`'s pass
/// 1 copies each signature its unit meets, then adds it to the whole), at the price of
/// `blocks` times the input and results in flight.
pub fn for_each_in_units<S, A, T, W, E>(
    mut source: S,
    shard: Option<Shard>,
    blocks: usize,
    work: W,
    mut emit: E,
) -> io::Result<()>
where
    S: HistorySource,
    A: Default + Send,
    T: Send,
    W: Fn(&mut A, Decoded<'_>) -> Result<T, String> + Sync,
    E: FnMut(Emitted<T, A>) -> io::Result<bool>,
{
    let shard = shard.filter(|&s| !source.sift(s));
    let queue = source.one_queue();
    let workers = rayon::current_num_threads().max(1);
    // One unit per worker, one ready for the next free worker, one being emitted: more
    // only holds more rendered records in memory.
    let ahead = workers + 2;
    let (unit_tx, unit_rx) = sync_channel::<(usize, Vec<Entry>, Progress)>(ahead);
    let (token_tx, token_rx) = sync_channel::<()>(ahead);
    for _ in 0..ahead {
        let _ = token_tx.send(());
    }
    let unit_rx = Mutex::new(unit_rx);
    // The results' vectors, emptied by the emitting thread and handed back to the workers:
    // a unit's results (a few hundred bytes a job) in a vector new each time landed on pages
    // the process had never touched, most of a small shard's page faults.
    let spare: Mutex<Vec<Results<T>>> = Mutex::default();
    std::thread::scope(|scope| {
        // Moved in: the workers stop when the reader drops `unit_tx`.
        scope.spawn(move || read_units(source, blocks.max(1), &unit_tx, &token_rx));
        rayon::in_place_scope(|s| {
            // `None`: a worker panicked (see `PanicNotice`).
            let (done_tx, done_rx) = channel::<Option<Done<T, A>>>();
            for _ in 0..workers {
                let (done_tx, unit_rx, work, spare, queue) = (done_tx.clone(), &unit_rx, &work, &spare, &queue);
                s.spawn(move |_| {
                    let _notice = PanicNotice(done_tx.clone());
                    let mut scratch = Scratch::default();
                    loop {
                        // The lock is held only while waiting for the next unit.
                        let next = match unit_rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok((seq, unit, at)) = next else { return };
                        // Sized once: a result is a few hundred bytes, regrowing moved them.
                        let jobs = unit.iter().map(|e| match &e.body {
                            Body::Lines(b) => b.kept,
                            Body::Copied(b) => b.records_held(),
                            _ => 1,
                        });
                        let need = jobs.sum();
                        let mut out = spare
                            .lock()
                            .ok()
                            .and_then(|mut s| s.pop())
                            // Too small: a new one, where `reserve` would copy its old (drained)
                            // capacity over.
                            .filter(|o: &Results<T>| o.capacity() >= need)
                            .unwrap_or_else(|| Vec::with_capacity(need));
                        let mut acc = Box::<A>::default();
                        for entry in unit {
                            process(entry, shard, queue.as_ref(), &mut scratch, &mut *acc, work, &mut out);
                        }
                        if done_tx.send(Some((seq, out, acc, at))).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(done_tx);
            // Returning drops `done_rx` and `token_tx`: the reader stops at its next unit,
            // then the workers at theirs.
            let token_tx = token_tx;
            let mut waiting = BTreeMap::new();
            let mut next = 0usize;
            for done in done_rx {
                // A worker panicked: its unit never comes. Stop everything; the scope then
                // re-raises the panic.
                let Some((seq, out, acc, at)) = done else {
                    return Ok(());
                };
                waiting.insert(seq, (out, acc, at));
                while let Some((mut out, acc, at)) = waiting.remove(&next) {
                    for (pos, r) in out.drain(..) {
                        if !emit(Emitted::Job(pos, r))? {
                            return Ok(());
                        }
                    }
                    if let Ok(mut s) = spare.lock() {
                        s.push(out);
                    }
                    if !emit(Emitted::Unit(*acc, at))? {
                        return Ok(());
                    }
                    next += 1;
                    let _ = token_tx.send(());
                }
            }
            Ok(())
        })
    })
}

/// A unit's results, each with its position in the source.
type Results<T> = Vec<(Pos, Processed<T>)>;

/// A worker's numbered results, its unit's accumulator, and the progress at that unit.
/// The accumulator boxed: the channel's blocks hold 31 messages each, zeroed when made, and
/// a summary's accumulator is a few KiB (an 80 KiB block, 20 page faults, for every process).
type Done<T, A> = (usize, Results<T>, Box<A>, Progress);

/// Tells the emitting thread that its worker is unwinding: otherwise it would wait for the
/// lost unit forever, and the reader for a token it never gets back.
struct PanicNotice<T, A>(std::sync::mpsc::Sender<Option<Done<T, A>>>);

impl<T, A> Drop for PanicNotice<T, A> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = self.0.send(None);
        }
    }
}

/// The reader thread: units of `source` (up to `blocks` blocks, or [`CHUNK`] other entries),
/// numbered, each after a token.
fn read_units<S: HistorySource>(
    mut source: S,
    blocks: usize,
    units: &SyncSender<(usize, Vec<Entry>, Progress)>,
    tokens: &Receiver<()>,
) {
    for seq in 0.. {
        if tokens.recv().is_err() {
            return;
        }
        let mut unit = Vec::new();
        let mut held = 0;
        while unit.len() < CHUNK {
            let Some(entry) = source.next() else { break };
            held += usize::from(matches!(entry.body, Body::Lines(_) | Body::Copied(_)));
            unit.push(entry);
            if held == blocks {
                break;
            }
        }
        if unit.is_empty() || units.send((seq, unit, source.progress())).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::model::scheduler::SchedulerConfig;
    use crate::replay::source::{Files, Overrides};

    fn lines(n: usize) -> tempfile::NamedTempFile {
        let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
        for i in 0..n {
            writeln!(f, r#"{{"job":{{"id":"j{i}"}},"runs":[{{"node":"n"}}]}}"#).unwrap();
        }
        f
    }

    /// Every job once, in input order, whatever the number of workers and unit sizes.
    #[test]
    fn results_come_back_in_input_order() {
        let file = lines(5000);
        let (ids, units) = ids_and_units(file.path());
        assert_eq!(ids, (0..5000).map(|i| format!("j{i}")).collect::<Vec<_>>());
        assert_eq!(units, 5000);
    }

    /// The job ids of `path` as [`for_each_ordered`] emits them, and the jobs its units'
    /// accumulators counted.
    fn ids_and_units(path: &std::path::Path) -> (Vec<String>, usize) {
        let source = Files::open(path, SchedulerConfig::default(), Overrides::default()).unwrap();
        let mut ids = Vec::new();
        let mut units = 0;
        let work = |count: &mut usize, job: Decoded<'_>| {
            *count += 1;
            Ok(job.history.job.id.clone())
        };
        let emit = |e: Emitted<String, usize>| {
            match e {
                Emitted::Job(_, Processed::Done(id)) => ids.push(id),
                Emitted::Unit(n, _) => units += n,
                _ => panic!("unexpected error"),
            }
            Ok(true)
        };
        for_each_ordered(source, None, work, emit).unwrap();
        (ids, units)
    }

    /// Units of more jobs after units of fewer (long lines, then short ones): a results
    /// vector handed back too small for the next unit is replaced, and nothing is lost or
    /// reordered; every unit's accumulator arrives.
    #[test]
    fn results_keep_their_order_when_later_units_hold_more_jobs() {
        let mut f = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
        let node = "n".repeat(400);
        for i in 0..3000 {
            writeln!(f, r#"{{"job":{{"id":"j{i}"}},"runs":[{{"node":"{node}"}}]}}"#).unwrap();
        }
        for i in 3000..30_000 {
            writeln!(f, r#"{{"job":{{"id":"j{i}"}},"runs":[{{"node":"n"}}]}}"#).unwrap();
        }
        let (ids, units) = ids_and_units(f.path());
        assert_eq!(ids, (0..30_000).map(|i| format!("j{i}")).collect::<Vec<_>>());
        assert_eq!(units, 30_000);
    }

    /// A worker that panics must end the run with its panic, not leave the writer waiting
    /// for the unit it lost (and the reader for a token).
    #[test]
    fn a_panicking_worker_ends_the_run() {
        // Many more units than may be in flight: the lost one blocks everything else.
        let file = lines(40_000);
        let source = Files::open(file.path(), SchedulerConfig::default(), Overrides::default()).unwrap();
        let work = |_: &mut (), job: Decoded<'_>| {
            assert_ne!(job.history.job.id, "j1234", "boom");
            Ok(())
        };
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_ordered(source, None, work, |_| Ok(true))
        }));
        assert!(run.is_err());
    }
}
