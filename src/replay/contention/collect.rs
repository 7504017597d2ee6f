//! The sides' contention, gathered job by job in input order and swept once at the end.
//!
//! Owns: [`Sides`] (the names, each side's counts, and the events of the jobs added, in one
//! [`Spill`], each written once for the sides that hold it), [`Contention`] (one side alone)
//! and [`tally`] (one side over jobs held in memory). Must not: decide which runs a side
//! starts (the caller's [`Started`](super::Started)) or find the incident windows (given at
//! the end, when a replay knows them).

use std::collections::HashMap;
use std::io;

use crate::replay::incidents::Windows;

use super::events::{combine_from, events, events_by_run, events_of, number, Counts, Event, Names};
use super::job::{Job, JobRuns, Run, Started};
use super::spill::Spill;
use super::sweep::{Sweep, Tally};
use crate::replay::device_time::{Overflow, REQUESTS_AT_ONCE};

/// One side's jobs so far: [`Sides`] of one.
pub struct Contention(Sides);

impl Default for Contention {
    fn default() -> Contention {
        Contention::with_chunk(Spill::CHUNK)
    }
}

impl Contention {
    /// A collector whose events past `chunk` go to a temporary file.
    pub fn with_chunk(chunk: usize) -> Contention {
        Contention(Sides::with_chunk(1, chunk))
    }

    /// One job's runs, as its side starts them.
    pub fn add(&mut self, job: &JobRuns) -> io::Result<()> {
        let started = Started {
            recorded: job.runs.len(),
            beyond: job.beyond,
        };
        self.add_started(job, started)
    }

    /// One job as the side that starts `started` of the record's runs (`job`, made with
    /// [`Started::record`]) sees it: the same as [`Contention::add`] of
    /// `JobRuns::of(history, started)`.
    pub fn add_started(&mut self, job: &JobRuns, started: Started) -> io::Result<()> {
        self.0.add(job, &[started])
    }

    /// Whether the events went past memory, to a temporary file.
    pub fn spilled(&self) -> bool {
        self.0.spilled()
    }

    /// The sums of every job added; retries after a failure inside `windows` counted apart.
    pub fn finish(self, windows: &Windows) -> io::Result<Tally> {
        Ok(self.0.finish(windows)?.pop().unwrap_or_default())
    }
}

/// Several sides' jobs so far (a comparison's baseline and candidate and the record; `tune`'s
/// candidates, their baselines and the record), in one [`Spill`], swept together at the end.
///
/// Sides often start the same runs of a job, and a side that starts fewer of them than
/// another holds the events of the runs it starts, the same events. So a job's events are
/// made once, from the record's runs, and each is written once, tagged with the set of sides
/// that start its run (numbered as met; the set of every side is 0); a job whose own waits
/// meet (runs out of order) has its events made once for each group of sides that start the
/// same runs. At the end the events come back in time order once, and each goes to the sweep
/// of every side of its set, one sweep for the sides handed the same events ([`Classes`]). One
/// chunk in memory, one temporary file and one sort whatever the number of sides; each sweep
/// holds its own pool states, which grow with the pools and queues, not the jobs.
pub struct Sides {
    names: Names,
    counts: Vec<Counts>,
    sets: Sets,
    spill: Spill,
    /// Scratch: a job's runs, numbered.
    runs: Vec<Run>,
    /// Scratch: each side's runs started and its number, to group them.
    group: Vec<(usize, u32)>,
    members: Vec<u32>,
    bounds: Vec<(usize, u32)>,
    /// Σ over jobs of each request (GPU's, CPU's) × twice its runs and one: the most any
    /// pool's waiting or retrying requests can add up to at once (each run a wait before it and
    /// a retry at most). A sweep keeps those sums in 64 bits; past them the history is refused
    /// ([`Tally::overflow`]) rather than summed wrong (requests of 2^53 thousandths each, the
    /// most a quantity parses to, pass 2^64 with some two thousand jobs at once).
    requested: [u128; 2],
}

/// The sets of sides an event can be of, numbered as met; 0 is every side.
struct Sets {
    ids: HashMap<Box<[u32]>, u32>,
    sides: Vec<Box<[u32]>>,
}

impl Sets {
    fn new(n: usize) -> Sets {
        let every: Box<[u32]> = (0..n).map(side_number).collect();
        Sets {
            ids: HashMap::from([(every.clone(), 0)]),
            sides: vec![every],
        }
    }

    fn id(&mut self, sides: &[u32]) -> u32 {
        number(&mut self.sides, &mut self.ids, sides)
    }
}

/// A side's (or a set's) number in an event: there are never 2^32 of them.
fn side_number(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

impl Sides {
    /// `n` sides, their events past [`Spill::CHUNK`] together going to one temporary file.
    pub fn new(n: usize) -> Sides {
        Sides::with_chunk(n, Spill::CHUNK)
    }

    /// As [`Sides::new`], the chunk `chunk` events (a test's, to spill a few jobs).
    pub fn with_chunk(n: usize, chunk: usize) -> Sides {
        Sides {
            names: Names::default(),
            counts: vec![Counts::default(); n],
            sets: Sets::new(n),
            spill: Spill::with_chunk(chunk),
            runs: Vec::new(),
            group: Vec::new(),
            members: Vec::new(),
            bounds: Vec::new(),
            requested: [0; 2],
        }
    }

    /// One job as each side sees it: side `i` starts `started[i]` of the record's runs
    /// (`job`, made with [`Started::record`]), as [`Contention::add_started`]. `started`
    /// holds one entry a side.
    pub fn add(&mut self, job: &JobRuns, started: &[Started]) -> io::Result<()> {
        let mut runs = std::mem::take(&mut self.runs);
        let job = self.names.number(job, &mut runs);
        let done = self.add_job(job, started);
        self.runs = runs;
        done
    }

    /// The names the jobs of [`Sides::add_job`] are numbered by.
    pub fn names(&mut self) -> &mut Names {
        &mut self.names
    }

    /// [`Sides::add`] of a job numbered by [`Sides::names`].
    pub fn add_job(&mut self, job: Job, started: &[Started]) -> io::Result<()> {
        debug_assert_eq!(started.len(), self.counts.len());
        for (counts, s) in self.counts.iter_mut().zip(started) {
            counts.add(&Counts::of(job, *s));
        }
        let len = job.runs.len();
        let times = 2 * len as u128 + 1;
        for (sum, request) in self.requested.iter_mut().zip([job.gpu, job.cpu]) {
            *sum = sum.saturating_add(u128::from(request) * times);
        }
        let recorded = |s: &Started| s.recorded.min(len);
        let Some(first) = started.first().map(recorded) else {
            return Ok(());
        };
        // The common case: every side starts the same runs.
        if started.iter().all(|s| recorded(s) == first) {
            return self.push(job, first, 0);
        }
        self.group.clear();
        self.group
            .extend(started.iter().enumerate().map(|(i, s)| (recorded(s), side_number(i))));
        self.group.sort_unstable();
        // Each event once, for the sides that start its run: those that start more runs than
        // its number, a tail of `group`. `bounds`: each number of runs some side starts, and
        // the set of the sides that start at least that many; an event of run `k` is of the
        // first bound above `k`.
        self.bounds.clear();
        let mut at = 0;
        while at < self.group.len() {
            let runs = self.group[at].0;
            if runs > 0 {
                self.members.clear();
                self.members.extend(self.group[at..].iter().map(|&(_, side)| side));
                self.members.sort_unstable();
                self.bounds.push((runs, self.sets.id(&self.members)));
            }
            at += self.group[at..].partition_point(|&(r, _)| r == runs);
        }
        let bounds = &self.bounds;
        let mut by_run = false;
        self.spill.add(|chunk| {
            let from = chunk.len();
            by_run = events_by_run(job, chunk);
            if by_run {
                retain_from(chunk, from, |e| {
                    let above = bounds.partition_point(|&(runs, _)| runs <= e.set as usize);
                    // A run no side starts: none.
                    bounds.get(above).map(|&(_, set)| e.set = set).is_some()
                });
                combine_from(chunk, from);
            }
        })?;
        if by_run {
            return Ok(());
        }
        // Waits of the job that meet (runs out of order in the record): each group of sides
        // that start the same runs has its own events.
        let mut at = 0;
        while at < self.group.len() {
            let runs = self.group[at].0;
            let to = at + self.group[at..].partition_point(|&(r, _)| r == runs);
            self.members.clear();
            self.members.extend(self.group[at..to].iter().map(|&(_, side)| side));
            let set = self.sets.id(&self.members);
            self.push(job, runs, set)?;
            at = to;
        }
        Ok(())
    }

    /// `job`'s events as the sides that start its first `recorded` runs see them, for `set`,
    /// those that can be one made one, made in the spill's chunk.
    fn push(&mut self, job: Job, recorded: usize, set: u32) -> io::Result<()> {
        self.spill.add(|chunk| {
            let from = chunk.len();
            // The counts are each side's, added above.
            events_of(job, recorded, set, chunk);
            combine_from(chunk, from);
        })
    }

    /// Whether the events went past memory, to the temporary file.
    pub fn spilled(&self) -> bool {
        self.spill.spilled()
    }

    /// Each side's sums, in order; retries after a failure inside `windows` counted apart.
    /// Every side's splits are indexed by the names every side met together: a side's
    /// [`Side`](super::Side) keeps the names with a share.
    pub fn finish(self, windows: &Windows) -> io::Result<Vec<Tally>> {
        let Sides {
            names,
            counts,
            sets,
            spill,
            requested,
            ..
        } = self;
        let mut sweeps = Classes::new(counts.len(), windows);
        spill.drain(|e| sweeps.add(&sets, e))?;
        let past = requested.iter().any(|&n| n > u128::from(u64::MAX)).then(|| Overflow {
            figure: REQUESTS_AT_ONCE.to_string(),
            job: String::new(),
        });
        Ok(counts
            .into_iter()
            .enumerate()
            .map(|(side, counts)| {
                let mut tally = sweeps.of(side).clone().finish(counts, names.clone());
                if tally.overflow.is_none() {
                    tally.overflow = past.clone();
                }
                tally
            })
            .collect())
    }
}

/// The sides' sweeps, one a class of sides handed the same events so far: sides that start
/// the same runs of every job (a candidate that retries as the record did, `tune`'s
/// candidates that decide alike) are swept once. All the sides start in one class; a set of
/// sides that holds part of a class splits it, the part's sweep a copy of the class's.
struct Classes<'w> {
    sweeps: Vec<Sweep<'w>>,
    /// Each side's class (a class's sides are found from it when a set splits it: rarely).
    class_of: Vec<u32>,
    /// The classes each set of sides holds (by the set's number), found when the set is
    /// first met, and again after a split.
    of_set: Vec<Option<Box<[u32]>>>,
}

impl<'w> Classes<'w> {
    fn new(n: usize, windows: &'w Windows) -> Classes<'w> {
        Classes {
            sweeps: vec![Sweep::new(windows)],
            class_of: vec![0; n],
            of_set: Vec::new(),
        }
    }

    /// `e` to the sweep of each class of its set.
    fn add(&mut self, sets: &Sets, e: &Event) {
        let set = e.set as usize;
        if self.of_set.get(set).is_none_or(Option::is_none) {
            self.resolve(set, sets.sides.get(set).map_or(&[][..], |s| &s[..]));
        }
        if let Some(Some(classes)) = self.of_set.get(set) {
            for &c in classes.iter() {
                self.sweeps[c as usize].add(e);
            }
        }
    }

    /// The classes of the set numbered `set`, which holds `members` (sorted): a class it
    /// holds part of split in two.
    fn resolve(&mut self, set: usize, members: &[u32]) {
        let mut touched: Vec<u32> = members.iter().map(|&s| self.class_of[s as usize]).collect();
        touched.sort_unstable();
        touched.dedup();
        let mut whole = Vec::with_capacity(touched.len());
        let mut split = false;
        for c in touched {
            let of_class = |side: &usize| self.class_of[*side] == c;
            let outside = (0..self.class_of.len())
                .filter(of_class)
                .any(|side| members.binary_search(&side_number(side)).is_err());
            if !outside {
                whole.push(c);
                continue;
            }
            // The set's part of the class becomes a class of its own.
            let part = side_number(self.sweeps.len());
            self.sweeps.push(self.sweeps[c as usize].clone());
            for &side in members {
                if self.class_of[side as usize] == c {
                    self.class_of[side as usize] = part;
                }
            }
            whole.push(part);
            split = true;
        }
        if split {
            // A set met before may hold part of a class split now.
            self.of_set.iter_mut().for_each(|c| *c = None);
        }
        if self.of_set.len() <= set {
            self.of_set.resize(set + 1, None);
        }
        self.of_set[set] = Some(whole.into());
    }

    /// The sweep of `side`'s class.
    fn of(&self, side: usize) -> &Sweep<'w> {
        &self.sweeps[self.class_of[side] as usize]
    }
}

/// `events[from..]` with only the events `keep` keeps (it may change them), in order; what is
/// before `from` left as it is.
fn retain_from(events: &mut Vec<Event>, from: usize, mut keep: impl FnMut(&mut Event) -> bool) {
    let mut kept = from;
    for at in from..events.len() {
        if keep(&mut events[at]) {
            if kept != at {
                events[kept] = events[at];
            }
            kept += 1;
        }
    }
    events.truncate(kept);
}

/// The sums of `jobs`, all in memory (a few jobs: a test, a window of a live record).
pub fn tally<'a>(jobs: impl IntoIterator<Item = &'a JobRuns>, windows: &Windows) -> Tally {
    let mut names = Names::default();
    let mut counts = Counts::default();
    let mut all = Vec::new();
    for job in jobs {
        counts.add(&events(job, &mut names, &mut all));
    }
    all.sort_unstable_by_key(|e| e.t);
    let mut sweep = Sweep::new(windows);
    for e in &all {
        sweep.add(e);
    }
    sweep.finish(counts, names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::contention::Kind;

    fn wait(t: i64, set: u32) -> Event {
        Event {
            t,
            change: if t % 2 == 0 { Kind::WaitStart } else { Kind::WaitEnd }.into(),
            pool: 0,
            queue: 0,
            gpu: 1000,
            cpu: 0,
            after_failed: None,
            set,
        }
    }

    /// Sides handed the same events share one sweep until a set holds part of them; a set
    /// met before the split then goes to both parts.
    #[test]
    fn sides_handed_the_same_events_share_a_sweep_until_a_set_splits_them() {
        let windows = Windows::default();
        let mut sets = Sets::new(3);
        let two = sets.id(&[0, 2]);
        let one = sets.id(&[0]);
        let mut c = Classes::new(3, &windows);
        c.add(&sets, &wait(0, 0));
        c.add(&sets, &wait(1, 0));
        assert_eq!(c.sweeps.len(), 1);
        // Sides 0 and 2 wait an hour more than side 1.
        c.add(&sets, &wait(2, two));
        c.add(&sets, &wait(3_600_000_000_001, two));
        assert_eq!((c.sweeps.len(), c.class_of.as_slice()), (2, &[1, 0, 1][..]));
        // Side 0 alone, then sides 0 and 2 again: two more hours each for them.
        c.add(&sets, &wait(3_600_000_000_002, one));
        c.add(&sets, &wait(7_200_000_000_001, one));
        c.add(&sets, &wait(7_200_000_000_002, two));
        c.add(&sets, &wait(10_800_000_000_001, two));
        assert_eq!(c.sweeps.len(), 3);
        let queued = |side: usize| {
            c.of(side)
                .clone()
                .finish(Counts::default(), Names::default())
                .gpu
                .queued
        };
        // Each wait after the first is an hour less a nanosecond, of 1,000 thousandths.
        let wait = 3_600_000_000_000u128 - 1;
        assert_eq!(
            [queued(0), queued(1), queued(2)],
            [(1 + 3 * wait) * 1000, 1000, (1 + 2 * wait) * 1000]
        );
    }
}
