//! What an unusual window is (docs/reference/suggest.md "Incidents"): the count a window's
//! hour of day leads one to expect ([`Expected`]), and, once the unusual windows are known, the
//! mix of their failing jobs ([`Mix`]) that tells one job set's burst and a surge of the usual
//! mix from an incident ([`classify`]), widened and merged whatever their kind ([`merged`]).
//!
//! The rule, as the docs write it:
//! - once the window starts fall on at least 3 distinct UTC days, a window's expected count
//!   `λ_w` is the mean `k` of the windows starting in the same UTC hour of day on the other UTC
//!   days (none: the mean of all windows); before that, the mean of all windows;
//! - a window is unusual when `k ≥ 5` and `P(X ≥ k) < 0.01 / B`, `X ~ Poisson(λ_w)`;
//! - an unusual window is a job set's burst when `k − top` (its largest job set's failing
//!   jobs taken out) is not unusual at the same `λ_w`; else a surge when neither its top
//!   signature nor its top node is over its share (`P(Y ≥ k_s) ≥ 0.01 / B`,
//!   `Y ~ Binomial(k, q_s)`, `q_s` the share of the span's failing jobs with a failed run of
//!   it); else an incident. When the span's failed runs hold one signature and no node, the
//!   mix cannot be told: no surge;
//! - every unusual window is widened (10 minutes before, 5 after) and overlapping ones merged
//!   whatever their kind: an incident when one of them is (or a window given by hand), else a
//!   burst when one is, else a surge.
//!
//! Owns: those steps, and the Binomial tail, for two callers: the detector's 10-minute windows
//! ([`classify`], the mix kept by [`Mix`]) and `watch`'s clock hours (its own bounded hourly
//! sums), both through [`Expected`] on their [`Grid`], [`unusual_at`] and [`kind_of`]: one
//! rule. Pure: no I/O, no clock. The signatures' texts
//! are `model::signature`'s; a job set is `(job.queue, job.jobSet)`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::base::{
    is_unusual, ln_factorial, series, step_of, Detected, Kind, Test, Window, Windows, AFTER, ALPHA, BEFORE, STEP,
    STEPS_PER_WINDOW,
};
use crate::model::failure_history::{FailureHistory, Outcome, Run, Timestamp};
use crate::model::signature::FailedTexts;

/// The distinct UTC days the window starts must fall on for the expected count by hour.
pub const MIN_DAYS: i64 = 3;

/// The grid the windows start on, in starts an hour: suggest's every 10 minutes, `watch`'s
/// every hour (its window's hourly sums). A start is counted in these steps since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    per_hour: i64,
}

impl Grid {
    /// A window every 10 minutes (suggest, simulate, tune).
    pub const TEN_MINUTES: Grid = Grid { per_hour: 6 };
    /// A window every hour, on the hour (`watch`).
    pub const HOURS: Grid = Grid { per_hour: 1 };

    fn per_day(self) -> i64 {
        24 * self.per_hour
    }
}

/// The expected `k` of a window, by its start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expected {
    /// The mean `k` of all windows.
    pub mean: f64,
    by_hour: Option<ByHour>,
}

/// The sums the expected count by hour of day needs.
#[derive(Debug, Clone, PartialEq)]
struct ByHour {
    grid: Grid,
    /// The first and last window start.
    first: i64,
    last: i64,
    /// Σk of the windows starting in each hour since the epoch (a key: the hour's index).
    sums: HashMap<i64, u64>,
    /// Σk and the windows, by UTC hour of day, over every day.
    hour_sum: [u64; 24],
    hour_windows: [u64; 24],
}

impl Expected {
    /// `mean` for every window.
    pub fn flat(mean: f64) -> Expected {
        Expected { mean, by_hour: None }
    }

    /// Over the windows starting `first..=last` (steps of `grid`), `k` given as runs of equal
    /// `k` (`(first start, last start, k)`, the others 0): by hour of day once they start on
    /// [`MIN_DAYS`] UTC days, else the mean.
    pub fn of(grid: Grid, segments: &[(i64, i64, u64)], first: i64, last: i64) -> Expected {
        let (per_hour, per_day) = (grid.per_hour, grid.per_day());
        let windows = (last - first + 1).max(0) as u64;
        // Saturating: a partial's counts are input (each change checked, their sums not).
        let total: u64 = segments.iter().fold(0u64, |t, (a, b, k)| {
            t.saturating_add(((b - a + 1) as u64).saturating_mul(*k))
        });
        let mean = if windows == 0 {
            0.0
        } else {
            total as f64 / windows as f64
        };
        let days = last.div_euclid(per_day) - first.div_euclid(per_day) + 1;
        if windows == 0 || days < MIN_DAYS {
            return Expected::flat(mean);
        }
        let mut sums: HashMap<i64, u64> = HashMap::new();
        for &(a, b, k) in segments {
            // Split at the hours' edges.
            let mut s = a;
            while s <= b {
                let hour = s.div_euclid(per_hour);
                let end = b.min(hour * per_hour + per_hour - 1);
                let sum = sums.entry(hour).or_default();
                *sum = sum.saturating_add(((end - s + 1) as u64).saturating_mul(k));
                s = end + 1;
            }
        }
        let mut hour_sum = [0u64; 24];
        for (hour, sum) in &sums {
            let at = &mut hour_sum[hour.rem_euclid(24) as usize];
            *at = at.saturating_add(*sum);
        }
        let hour_windows = std::array::from_fn(|h| starts_at_hour(grid, first, last, h as i64));
        Expected {
            mean,
            by_hour: Some(ByHour {
                grid,
                first,
                last,
                sums,
                hour_sum,
                hour_windows,
            }),
        }
    }

    /// Whether the count is by hour of day.
    pub fn by_hour(&self) -> bool {
        self.by_hour.is_some()
    }

    /// `λ_w` of the window starting at `start` (steps).
    pub fn at(&self, start: i64) -> f64 {
        let Some(b) = &self.by_hour else {
            return self.mean;
        };
        let per_hour = b.grid.per_hour;
        let hour = start.div_euclid(per_hour);
        let h = hour.rem_euclid(24) as usize;
        let own_windows = {
            let (a, z) = (hour * per_hour, hour * per_hour + per_hour - 1);
            (z.min(b.last) - a.max(b.first) + 1).max(0) as u64
        };
        let others = b.hour_windows[h] - own_windows;
        if others == 0 {
            return self.mean;
        }
        let own = b.sums.get(&hour).copied().unwrap_or(0);
        (b.hour_sum[h] - own) as f64 / others as f64
    }
}

/// The window starts `first..=last` (of `grid`) that fall in UTC hour of day `h`.
fn starts_at_hour(grid: Grid, first: i64, last: i64, h: i64) -> u64 {
    let (per_hour, per_day) = (grid.per_hour, grid.per_day());
    let base = first.div_euclid(per_day) * per_day;
    // Those in `base..=x`.
    let upto = |x: i64| -> i64 {
        let n = x - base + 1;
        if n <= 0 {
            return 0;
        }
        (n / per_day) * per_hour + (n % per_day - h * per_hour).clamp(0, per_hour)
    };
    (upto(last) - upto(first - 1)) as u64
}

/// The window starting at `start` (steps) with `k` failing jobs, when it is unusual against
/// `expected` among `tests` windows tested: never at or under what is expected (the tail is
/// past one half there).
pub fn unusual_at(start: i64, k: u64, expected: &Expected, tests: u64) -> Option<Unusual> {
    let lambda = expected.at(start);
    ((k as f64) > lambda && is_unusual(k, lambda, tests)).then_some(Unusual {
        start,
        k,
        expected: lambda,
    })
}

/// A window by the rule unusual: its start (10-minute steps since the epoch), `k`, and the
/// `λ_w` it was tested against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unusual {
    pub start: i64,
    pub k: u64,
    pub expected: f64,
}

impl Unusual {
    /// The window, widened: 10 minutes before its start to 5 after its end.
    pub fn widened(&self) -> Window {
        Window {
            from: Timestamp(self.start.saturating_mul(STEP).saturating_sub(BEFORE)),
            to: Timestamp(
                self.start
                    .saturating_mul(STEP)
                    .saturating_add(STEPS_PER_WINDOW * STEP)
                    .saturating_add(AFTER),
            ),
            detected: true,
            given: false,
        }
    }
}

/// The names each part of the mix tells apart (signatures, job sets, nodes), the first met in
/// input order; the others' runs count in `k` and in no name's share (as suggest keeps 10,000
/// signatures and counts the rest as `other`) and are never a top one, so that the mix holds
/// the windows and these, not a message or a job set a job.
pub const MAX_SIGNATURES: usize = 10_000;

/// The id of a name past the cap: no name of its own, never a top one.
const PAST: u32 = u32::MAX;

type Fast<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One part of the mix: the names met (each with an id, the first [`MAX_SIGNATURES`]), the
/// span's failing jobs each has, and, by name and window start, how the count of the window's
/// failing jobs with a failed run of it changes there (as [`super::Detector`] keeps `k`): so
/// that a window's counts are known for any window found at the end, in the same pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    try_from = "NamesRecord",
    into = "NamesRecord"
)]
struct Names {
    ids: Fast<String, u32>,
    names: Vec<String>,
    jobs: Vec<u64>,
    /// By `(id, window start)`: the change of the window's count there.
    deltas: Fast<(u32, i64), i64>,
    /// A name past the cap was met.
    past: bool,
}

/// [`Names`] as a partial writes it: the ids are the places in `names`, the changes sorted.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NamesRecord {
    names: Vec<String>,
    /// Named apart from a partial's `jobs` (the jobs replayed), which its checks add up.
    failing_jobs: Vec<u64>,
    deltas: Vec<(u32, i64, i64)>,
    past: bool,
}

impl TryFrom<NamesRecord> for Names {
    type Error = String;

    /// As counting writes it (a partial is input): a count a name, each change a name's, and
    /// the changes what counting makes ([`super::base::check_changes`]).
    fn try_from(r: NamesRecord) -> Result<Names, String> {
        if r.failing_jobs.len() != r.names.len() {
            return Err(format!(
                "{} names with {} counts of jobs",
                r.names.len(),
                r.failing_jobs.len()
            ));
        }
        if let Some(&(id, _, _)) = r.deltas.iter().find(|(id, _, _)| *id as usize >= r.names.len()) {
            return Err(format!(
                "a window's change of name `{id}`, past the {} names",
                r.names.len()
            ));
        }
        super::base::check_changes(r.deltas.iter().copied())?;
        Ok(Names {
            ids: r.names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect(),
            names: r.names,
            jobs: r.failing_jobs,
            deltas: r.deltas.into_iter().map(|(id, s, d)| ((id, s), d)).collect(),
            past: r.past,
        })
    }
}

impl From<Names> for NamesRecord {
    fn from(n: Names) -> NamesRecord {
        let mut deltas: Vec<(u32, i64, i64)> = n.deltas.into_iter().map(|((id, s), d)| (id, s, d)).collect();
        deltas.sort_unstable();
        NamesRecord {
            names: n.names,
            failing_jobs: n.jobs,
            deltas,
            past: n.past,
        }
    }
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        if self.names.len() >= MAX_SIGNATURES {
            self.past = true;
            return PAST;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        self.jobs.push(0);
        id
    }

    /// The id of a name met already; [`PAST`] for one past the cap (never met: the same).
    fn lookup(&self, name: &str) -> u32 {
        self.ids.get(name).copied().unwrap_or(PAST)
    }

    /// One job's failed runs of `id`: counted once in the span and, given their window steps
    /// (sorted, distinct: [`Gather::Windows`]), once in each window they fall in.
    fn add(&mut self, id: u32, steps: Option<&[i64]>) {
        if id == PAST {
            return;
        }
        self.jobs[id as usize] += 1;
        let Some(steps) = steps else {
            return;
        };
        let deltas = &mut self.deltas;
        window_runs(steps, |a, b| {
            bump(deltas, (id, a), 1);
            bump(deltas, (id, b + 1), -1);
        });
    }

    /// Another unit's or shard's names, met after these (the first met stay the first).
    fn merge(&mut self, o: &Names) {
        let ids: Vec<u32> = o.names.iter().map(|n| self.id(n)).collect();
        for (&id, n) in ids.iter().zip(&o.jobs) {
            if id != PAST {
                self.jobs[id as usize] += n;
            }
        }
        for (&(oid, step), d) in &o.deltas {
            let id = ids[oid as usize];
            if id != PAST {
                bump(&mut self.deltas, (id, step), *d);
            }
        }
        self.past |= o.past || ids.contains(&PAST);
    }

    /// At each of `starts` (sorted), the count of each name's failing jobs in the window
    /// starting there (those over 0).
    fn at(&self, starts: &[i64]) -> Vec<HashMap<u32, u64>> {
        let mut out = vec![HashMap::new(); starts.len()];
        let mut all: Vec<(u32, i64, i64)> = self.deltas.iter().map(|(&(id, s), &d)| (id, s, d)).collect();
        all.sort_unstable();
        for run in all.chunk_by(|a, b| a.0 == b.0) {
            let id = run[0].0;
            let (mut k, mut next) = (0i64, 0);
            for (w, &start) in starts.iter().enumerate() {
                while next < run.len() && run[next].1 <= start {
                    k += run[next].2;
                    next += 1;
                }
                if k > 0 {
                    out[w].insert(id, k as u64);
                }
            }
        }
        out
    }

    /// Of `counts`, the id with most jobs ([`top`]).
    fn top(&self, counts: &HashMap<u32, u64>) -> Option<(u32, u64)> {
        top(counts.iter().map(|(&id, &n)| (id, self.names[id as usize].as_str(), n))).map(|(id, _, n)| (id, n))
    }
}

/// Adds `d` to the change at `key`, a change that comes to 0 taken out where it is made: the
/// map holds no 0 whatever the order of adds and merges (a pass over the whole map at each
/// merge of a unit made the merges quadratic in the units).
fn bump(deltas: &mut Fast<(u32, i64), i64>, key: (u32, i64), d: i64) {
    match deltas.entry(key) {
        std::collections::hash_map::Entry::Occupied(mut e) => {
            *e.get_mut() += d;
            if *e.get() == 0 {
                e.remove();
            }
        }
        std::collections::hash_map::Entry::Vacant(e) => {
            if d != 0 {
                e.insert(d);
            }
        }
    }
}

/// The runs of window starts a job's failed runs in `steps` (sorted, distinct 10-minute
/// steps) fall in, merged: a run in step `s` is in the windows starting at `s − 5 … s`.
pub(super) fn window_runs(steps: &[i64], mut f: impl FnMut(i64, i64)) {
    let mut run: Option<(i64, i64)> = None;
    for &s in steps {
        let (a, b) = (s - (STEPS_PER_WINDOW - 1), s);
        run = match run {
            Some((ra, rb)) if a <= rb + 1 => Some((ra, rb.max(b))),
            Some((ra, rb)) => {
                f(ra, rb);
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((a, b)) = run {
        f(a, b);
    }
}

/// A failed run being fed: its window step, signature and node.
type FedRun = (i64, u32, Option<u32>);

/// The window steps of the `runs` that `keep` holds, sorted and distinct, in `out`; `None`
/// (and nothing computed) when the windows are not kept.
fn steps_of<'a>(
    runs: &[FedRun],
    keep: impl Fn(&FedRun) -> bool,
    windows: bool,
    out: &'a mut Vec<i64>,
) -> Option<&'a [i64]> {
    if !windows {
        return None;
    }
    out.clear();
    out.extend(runs.iter().filter(|r| keep(r)).map(|r| r.0));
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// One window's failing jobs, by job set, signature and node (the ids of [`Mix`]'s names).
#[derive(Debug, Default, PartialEq, Eq)]
struct StartMix {
    sets: HashMap<u32, u64>,
    signatures: HashMap<u32, u64>,
    nodes: HashMap<u32, u64>,
}

/// What a pass that counts the windows gathers of each failing job for the mix, before it
/// knows which windows are unusual.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gather {
    /// Its part in the span and in every window it falls in, so that any window found at the
    /// end is told from what the pass kept (`simulate`, `tune`, a shard of `suggest`: nothing
    /// reads the jobs again).
    Windows,
    /// Its part in the span alone (the names met, and the span's failing jobs each has): the
    /// unusual windows' part is counted from their jobs read again ([`WindowMixes`]: one
    /// process's `suggest`, which holds a copy of what it read). The names are met in the same
    /// order, so that both tell a window alike; what this saves is every window's changes for
    /// every job, most of what the mix costs on a record with no window.
    Span,
}

/// The failing jobs' mix, gathered in the pass that counts the windows (it does not know
/// yet which are unusual): of the span (its failing jobs, by signature and by node) and, with
/// [`Gather::Windows`], of every window (by job set, signature and node, kept as changes from
/// one window start to the next). Fed job by job ([`Mix::job`], [`Mix::failed_run`],
/// [`Mix::end_job`]), merged unit by unit or shard by shard in input order: the same whatever
/// the split.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mix {
    /// The span's failing jobs.
    #[serde(rename = "failingJobs")]
    jobs: u64,
    sets: Names,
    signatures: Names,
    nodes: Names,
    /// The job being fed: its set, and its failed runs' (step, signature, node) (scratch).
    #[serde(skip)]
    set: Option<u32>,
    #[serde(skip)]
    runs: Vec<FedRun>,
    #[serde(skip)]
    key: String,
    #[serde(skip)]
    steps: Vec<i64>,
    #[serde(skip)]
    ids: Vec<u32>,
}

impl Mix {
    /// `history`'s part, as `gather` says: its job set, and each failed run that
    /// [`super::ends`] (`ends`) places, by its signature (`texts`: the job's,
    /// [`FailedTexts::of`]) and node.
    pub fn add_history(&mut self, history: &FailureHistory, ends: &[Option<i64>], texts: &FailedTexts, gather: Gather) {
        let failed = |(run, end): (&Run, &Option<i64>)| run.outcome == Outcome::Failed && end.is_some();
        if !history.runs.iter().zip(ends).any(failed) {
            // No failing job here: its job set takes none of the names kept.
            return;
        }
        self.job(history.job.queue.as_deref(), history.job.job_set.as_deref());
        for (k, (run, end)) in history.runs.iter().zip(ends).enumerate() {
            let Some(t) = end.filter(|_| run.outcome == Outcome::Failed) else {
                continue;
            };
            self.failed_run(t, texts.get(k).0, run.node.as_deref());
        }
        self.end(gather);
    }

    /// A job begins: its queue and job set (`None`: it belongs to no set).
    pub fn job(&mut self, queue: Option<&str>, job_set: Option<&str>) {
        self.runs.clear();
        self.set = job_set.map(|s| {
            set_key(queue.unwrap_or_default(), s, &mut self.key);
            let key = std::mem::take(&mut self.key);
            let id = self.sets.id(&key);
            self.key = key;
            id
        });
    }

    /// One of its failed runs with a time (nanoseconds since the epoch): its signature, and
    /// its node if it had one.
    pub fn failed_run(&mut self, time: i64, signature: &str, node: Option<&str>) {
        let s = self.signatures.id(signature);
        let n = node.map(|n| self.nodes.id(n));
        self.runs.push((step_of(time), s, n));
    }

    /// The job's end: counted once in the span and for each signature and node, and once in
    /// each window of each ([`Gather::Windows`]).
    pub fn end_job(&mut self) {
        self.end(Gather::Windows);
    }

    fn end(&mut self, gather: Gather) {
        if self.runs.is_empty() {
            return;
        }
        self.jobs += 1;
        let by_window = gather == Gather::Windows;
        let (mut steps, mut ids) = (std::mem::take(&mut self.steps), std::mem::take(&mut self.ids));
        if let Some(set) = self.set {
            self.sets
                .add(set, steps_of(&self.runs, |_| true, by_window, &mut steps));
        }
        for signatures in [true, false] {
            ids.clear();
            ids.extend(
                self.runs
                    .iter()
                    .filter_map(|r| if signatures { Some(r.1) } else { r.2 }),
            );
            ids.sort_unstable();
            ids.dedup();
            for &id in &ids {
                let of_id = |r: &FedRun| if signatures { r.1 == id } else { r.2 == Some(id) };
                let steps = steps_of(&self.runs, of_id, by_window, &mut steps);
                match signatures {
                    true => self.signatures.add(id, steps),
                    false => self.nodes.add(id, steps),
                }
            }
        }
        (self.steps, self.ids) = (steps, ids);
    }

    /// Adds another unit's or shard's mix, of jobs met after these.
    pub fn merge(&mut self, o: &Mix) {
        self.jobs += o.jobs;
        self.sets.merge(&o.sets);
        self.signatures.merge(&o.signatures);
        self.nodes.merge(&o.nodes);
    }

    /// Whether the mix can be told: the span's failed runs hold more than one signature, or
    /// a node.
    pub fn can_tell(&self) -> bool {
        self.signatures.names.len() + usize::from(self.signatures.past) > 1 || !self.nodes.names.is_empty()
    }

    /// Whether no failing job was fed (a count that holds no job's mix).
    pub fn is_empty(&self) -> bool {
        self.jobs == 0
    }

    /// What tells the kind of a window whose mix is `m` ([`Mix::of`]).
    fn tops<'a>(&'a self, m: &StartMix, can_tell: bool) -> Tops<'a> {
        let share = |names: &Names, counts: &HashMap<u32, u64>| {
            names.top(counts).map(|(id, jobs)| Top {
                jobs,
                share: names.jobs[id as usize] as f64 / self.jobs.max(1) as f64,
            })
        };
        Tops {
            set: self.sets.top(&m.sets).map(|(id, jobs)| {
                let (queue, job_set) = split_set(&self.sets.names[id as usize]);
                (queue, job_set, jobs)
            }),
            signature: share(&self.signatures, &m.signatures),
            node: share(&self.nodes, &m.nodes),
            can_tell,
        }
    }

    /// The mix of the windows starting at `starts` (sorted).
    fn of(&self, starts: &[i64]) -> Vec<StartMix> {
        let sets = self.sets.at(starts);
        let signatures = self.signatures.at(starts);
        let nodes = self.nodes.at(starts);
        sets.into_iter()
            .zip(signatures)
            .zip(nodes)
            .map(|((sets, signatures), nodes)| StartMix {
                sets,
                signatures,
                nodes,
            })
            .collect()
    }
}

/// Each unusual window's kind, by `mix` (fed every failing job of the span), among `tests`
/// windows tested ([`kind_of`]); every one an incident when `mix` holds no job.
pub fn classify(unusual: &[Unusual], tests: u64, mix: &Mix) -> Vec<(Unusual, Kind)> {
    let starts = starts_of(unusual);
    classify_by(unusual, tests, mix, &starts, &mix.of(&starts))
}

/// As [`classify`], the unusual windows' part of the mix counted from their jobs read again
/// (`counted`, of the windows starting at [`starts_of`]`(unusual)`), the span's from `mix`
/// ([`Gather::Span`]).
pub fn classify_counted(unusual: &[Unusual], tests: u64, mix: &Mix, counted: WindowMixes) -> Vec<(Unusual, Kind)> {
    let starts = starts_of(unusual);
    let mut mixes = counted.mixes;
    mixes.resize_with(starts.len(), StartMix::default);
    classify_by(unusual, tests, mix, &starts, &mixes)
}

/// The starts of `unusual`, sorted and distinct: the windows whose mix tells their kinds.
pub fn starts_of(unusual: &[Unusual]) -> Vec<i64> {
    let mut starts: Vec<i64> = unusual.iter().map(|u| u.start).collect();
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// The windows starting at `starts` (10-minute steps), each its hour: where a failed run that
/// counts in one of them ended, for the jobs to read again ([`WindowMixes`]).
pub fn spans_of(starts: &[i64]) -> Windows {
    Windows::merged(
        starts
            .iter()
            .map(|&s| {
                Window::given(
                    Timestamp(s.saturating_mul(STEP)),
                    Timestamp(s.saturating_add(STEPS_PER_WINDOW).saturating_mul(STEP)),
                )
            })
            .collect(),
    )
}

fn classify_by(unusual: &[Unusual], tests: u64, mix: &Mix, starts: &[i64], mixes: &[StartMix]) -> Vec<(Unusual, Kind)> {
    if mix.is_empty() {
        return unusual.iter().map(|u| (*u, Kind::Incident)).collect();
    }
    let can_tell = mix.can_tell();
    unusual
        .iter()
        .map(|u| {
            let m = &mixes[starts.binary_search(&u.start).unwrap_or_default()];
            (*u, kind_of(u, tests, &mix.tops(m, can_tell)))
        })
        .collect()
}

/// The mix of some windows (the unusual ones, by their starts), counted from their jobs read
/// again after a [`Gather::Span`] pass: each job counts in a window's set, signature and node
/// as the changes a [`Gather::Windows`] pass keeps would count it ([`Names::at`]): once for
/// each name it has a failed run of that ended in the window, by the ids that pass gave the
/// names (a name past the cap in none). A worker's part of the jobs; parts add up in any
/// order.
#[derive(Debug, Default)]
pub struct WindowMixes {
    mixes: Vec<StartMix>,
    /// The job's (window, part, id) it counts in (scratch).
    marks: Vec<(u32, u8, u32)>,
    key: String,
}

impl WindowMixes {
    /// `history`'s part in the windows starting at `starts` (sorted, [`starts_of`]), by the
    /// names of `mix`; `ends` and `texts` as for [`Mix::add_history`].
    pub fn add_history(
        &mut self,
        mix: &Mix,
        starts: &[i64],
        history: &FailureHistory,
        ends: &[Option<i64>],
        texts: &FailedTexts,
    ) {
        if self.mixes.len() < starts.len() {
            self.mixes.resize_with(starts.len(), StartMix::default);
        }
        self.marks.clear();
        let set = history.job.job_set.as_deref().map(|s| {
            set_key(history.job.queue.as_deref().unwrap_or_default(), s, &mut self.key);
            mix.sets.lookup(&self.key)
        });
        for (k, (run, end)) in history.runs.iter().zip(ends).enumerate() {
            let Some(t) = end.filter(|_| run.outcome == Outcome::Failed) else {
                continue;
            };
            // The windows a run in step `s` falls in start at `s − 5 … s`.
            let s = step_of(t);
            let first = starts.partition_point(|&w| w < s - (STEPS_PER_WINDOW - 1));
            let last = starts.partition_point(|&w| w <= s);
            if first == last {
                continue;
            }
            let signature = mix.signatures.lookup(texts.get(k).0);
            let node = run.node.as_deref().map(|n| mix.nodes.lookup(n));
            for w in first as u32..last as u32 {
                self.marks.extend(set.map(|id| (w, 0, id)));
                self.marks.push((w, 1, signature));
                self.marks.extend(node.map(|id| (w, 2, id)));
            }
        }
        self.marks.sort_unstable();
        self.marks.dedup();
        for &(w, part, id) in &self.marks {
            if id == PAST {
                continue;
            }
            let m = &mut self.mixes[w as usize];
            let counts = match part {
                0 => &mut m.sets,
                1 => &mut m.signatures,
                _ => &mut m.nodes,
            };
            *counts.entry(id).or_default() += 1;
        }
    }

    /// Adds another worker's part.
    pub fn merge(&mut self, o: WindowMixes) {
        if self.mixes.len() < o.mixes.len() {
            self.mixes.resize_with(o.mixes.len(), StartMix::default);
        }
        for (m, o) in self.mixes.iter_mut().zip(o.mixes) {
            for (into, from) in [
                (&mut m.sets, o.sets),
                (&mut m.signatures, o.signatures),
                (&mut m.nodes, o.nodes),
            ] {
                for (id, n) in from {
                    *into.entry(id).or_default() += n;
                }
            }
        }
    }
}

/// What tells an unusual window's kind, whoever counts the window (suggest by 10-minute
/// steps, `watch` by hours): its largest job set, and its top signature's and top node's
/// failing jobs with their shares of the span's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tops<'a> {
    /// The job set with the most failing jobs in the window: its queue, its name, those jobs.
    pub set: Option<(&'a str, &'a str, u64)>,
    /// The signature the most failing jobs of the window have a failed run of ([`top`]).
    pub signature: Option<Top>,
    /// The node the most failing jobs of the window had a failed run on.
    pub node: Option<Top>,
    /// Whether the span's mix can be told: its failed runs hold more than one signature, or
    /// a node.
    pub can_tell: bool,
}

/// A window's top signature or node: its failing jobs in the window (`k_s`), and `q_s`, the
/// share of the span's failing jobs with a failed run of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Top {
    pub jobs: u64,
    pub share: f64,
}

/// An unusual window's kind: one job set's burst when `k − top` (its largest job set's
/// failing jobs taken out) is not unusual at the same `λ_w`; else a surge when the mix can
/// be told and neither its top signature nor its top node is over its share
/// (`P(Y ≥ k_s) ≥ 0.01 / B`, `Y ~ Binomial(k, q_s)`); else an incident.
pub fn kind_of(u: &Unusual, tests: u64, tops: &Tops<'_>) -> Kind {
    if let Some((queue, job_set, top)) = tops.set {
        if !is_unusual(u.k.saturating_sub(top), u.expected, tests) {
            return Kind::Burst {
                queue: queue.to_string(),
                job_set: job_set.to_string(),
                jobs: top,
            };
        }
    }
    let over = |t: Option<Top>| t.is_some_and(|t| binomial_tail(t.jobs, u.k, t.share) < ALPHA / tests as f64);
    match tops.can_tell && !over(tops.signature) && !over(tops.node) {
        true => Kind::Surge {
            jobs: u.k,
            expected: u.expected,
        },
        false => Kind::Incident,
    }
}

/// Of `counts` (a tag, a name, its failing jobs), the one with the most jobs; ties: the first
/// name in order.
pub fn top<'a, T>(counts: impl IntoIterator<Item = (T, &'a str, u64)>) -> Option<(T, &'a str, u64)> {
    counts.into_iter().max_by(|a, b| a.2.cmp(&b.2).then(b.1.cmp(a.1)))
}

/// A job set's name in the mix: `(job.queue, job.jobSet)`, a line apart (no queue holds one).
pub fn set_key(queue: &str, job_set: &str, out: &mut String) {
    out.clear();
    out.push_str(queue);
    out.push('\n');
    out.push_str(job_set);
}

/// The queue and job set a [`set_key`] names.
pub fn split_set(key: &str) -> (&str, &str) {
    key.split_once('\n').unwrap_or(("", key))
}

/// The unusual windows widened and, with the windows `given` by hand (incidents, taken as
/// given), merged where they overlap: sorted, none overlapping another, each of the kind the
/// rule gives a merged window.
pub fn merged(kinds: &[(Unusual, Kind)], given: &[Window]) -> Vec<(Window, Kind)> {
    let mut all: Vec<(Window, Kind)> = kinds.iter().map(|(u, k)| (u.widened(), k.clone())).collect();
    all.extend(given.iter().map(|w| (*w, Kind::Incident)));
    all.retain(|(w, _)| w.from < w.to);
    all.sort_by_key(|(w, _)| (w.from, w.to));
    let mut out: Vec<(Window, Kind)> = Vec::with_capacity(all.len());
    for (w, kind) in all {
        match out.last_mut() {
            Some((last, k)) if w.from < last.to => {
                last.to = last.to.max(w.to);
                last.detected |= w.detected;
                last.given |= w.given;
                if kind.rank() > k.rank() {
                    *k = kind;
                }
            }
            _ => out.push((w, kind)),
        }
    }
    out
}

/// What detection found, the kinds told: the windows [`merged`] (with `given`), the
/// incidents in [`Detected::windows`] and the detected parts of them in [`Detected::found`]
/// (on the 5-minute grid: a window given by hand is known before any run is counted), the
/// bursts and surges in [`Detected::busy`].
pub fn detected(kinds: &[(Unusual, Kind)], given: &[Window], test: Test) -> Detected {
    let all = merged(kinds, given);
    let incidents: Vec<Window> = all.iter().filter(|(_, k)| k.is_incident()).map(|(w, _)| *w).collect();
    let incidents = Windows(incidents);
    let found: Vec<Window> = kinds
        .iter()
        .map(|(u, _)| u.widened())
        .filter(|w| incidents.overlaps(w.from.0, w.to.0))
        .collect();
    Detected {
        found: Windows::merged(found),
        windows: incidents.0,
        lambda: test.mean,
        tests: test.tests,
        busy: all.into_iter().filter(|(_, k)| !k.is_incident()).collect(),
    }
}

/// `P(Y ≥ k)` for `Y ~ Binomial(n, q)`: summed from the far side of the mean, as
/// [`super::poisson_tail`].
pub fn binomial_tail(k: u64, n: u64, q: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n || q.is_nan() || q <= 0.0 {
        return 0.0;
    }
    if q >= 1.0 {
        return 1.0;
    }
    let ln_pmf = |i: u64| {
        ln_factorial(n) - ln_factorial(i) - ln_factorial(n - i) + i as f64 * q.ln() + (n - i) as f64 * (-q).ln_1p()
    };
    let odds = q / (1.0 - q);
    if (k as f64) > n as f64 * q {
        // The upper terms, each (n−i)/(i+1) · q/(1−q) of the one before.
        let step = |i: u64| (i < n).then(|| ((n - i) as f64 / (i + 1) as f64 * odds, i + 1));
        series(ln_pmf(k), k, step).exp().min(1.0)
    } else {
        // The lower terms, downward from k − 1, taken from 1.
        let step = |i: u64| (i > 0).then(|| (i as f64 / (n - i + 1) as f64 / odds, i - 1));
        (1.0 - series(ln_pmf(k - 1), k - 1, step).exp()).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests;
