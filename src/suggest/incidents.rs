//! Incidents in suggest (docs/reference/suggest.md "Incidents"), once pass 1 has found the
//! windows and their kinds (`replay::incidents`): what each job with a failed run in a
//! window adds to the windows' listing, and what leaving an incident's runs out takes out of pass 1's counts
//! ([`InWindows`], a worker's unit of jobs read again, folded in any order: every part is a sum);
//! then the counts without them ([`InWindows::leave_out`]), and the proposal's marks that the
//! windows call for ([`Sensitive`], [`short_backoff`]). A burst's or a surge's runs are
//! listed and learned from.
//!
//! Leaving a failed run out: it is no trial of its signature (its next run neither a success
//! nor a failure), counts in no node's runs or failures, and joins no default's pool (the
//! pool is the signatures' counts); the signature's `failedRuns`, hours and the baseline's
//! decisions keep it, and its row says how many were left out (`in_incidents`).
//!
//! Pure: no I/O. The jobs read again are `commands::suggest`'s to read.

use std::collections::HashMap;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, Outcome};
use crate::model::policy::{Action, Condition};
use crate::replay::device_time::request_time;
use crate::replay::estimate::{Tally, DEPTHS};
use crate::replay::incidents::{self, Kind, Window, Windows};

use super::propose::Verdict;
use super::stats::{FutileDays, Learned, Map, SignatureStats, MAX_SIGNATURES, OTHER};
use crate::model::signature::text_into;

/// One window's listing: the jobs with a failed run in it, those runs, their GPU time, by
/// signature and by node, and the record's retries of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    pub jobs: u64,
    pub failed_runs: u64,
    /// Σ run time × GPU request, in nanoseconds × thousandths.
    pub gpu: u128,
    pub signatures: HashMap<String, u64>,
    pub nodes: HashMap<String, u64>,
    /// Its failed runs followed by another run of the job (the retries today's policy
    /// granted, as the record has them), and those whose next run succeeded.
    pub retried: u64,
    pub retried_succeeded: u64,
}

impl Listed {
    fn merge(&mut self, o: Listed) {
        self.jobs += o.jobs;
        self.failed_runs += o.failed_runs;
        self.gpu = self.gpu.saturating_add(o.gpu);
        for (k, n) in o.signatures {
            *self.signatures.entry(k).or_default() += n;
        }
        for (k, n) in o.nodes {
            *self.nodes.entry(k).or_default() += n;
        }
        self.retried += o.retried;
        self.retried_succeeded += o.retried_succeeded;
    }

    /// The `n` with most runs of `map`, by runs then name.
    pub fn top(map: &HashMap<String, u64>, n: usize) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = map.iter().map(|(k, r)| (k.as_str(), *r)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }

    /// The share of its failed runs on its 3 nodes with most, when over half (a node event).
    pub fn node_share(&self) -> Option<f64> {
        let top: u64 = Listed::top(&self.nodes, 3).iter().map(|(_, n)| n).sum();
        let share = top as f64 / self.failed_runs.max(1) as f64;
        (share > 0.5).then_some(share)
    }
}

/// What one signature loses to the windows.
#[derive(Debug, Clone, Default)]
struct Removed {
    in_incidents: u64,
    trials: Tally,
    by_depth: [Tally; DEPTHS],
    same_node: Tally,
    other_node: Tally,
    /// Futile trials by depth and day.
    futile: FutileDays,
}

/// What one node loses: its runs and failures in the windows, and those by signature slot.
#[derive(Debug, Clone, Default)]
struct NodeRemoved {
    runs: u64,
    failed: u64,
    signatures: Slots<u64>,
}

/// By a signature's slot in pass 1's learning ([`Learned::slot_of`]: `usize::MAX` for
/// `other`): what the windows hold follows the 10,000 signatures learning keeps, not the
/// messages met.
type Slots<V> = HashMap<usize, V, foldhash::fast::RandomState>;

/// A window's failed runs by signature while they are counted: a learned signature by its
/// slot, another (a job learning did not count: another queue's, a test job's) by its text,
/// the first [`MAX_SIGNATURES`] of those met, the rest as `other`.
#[derive(Debug, Default)]
struct Counting {
    slots: Slots<u64>,
    rest: Map<u64>,
}

impl Counting {
    fn add(&mut self, slot: usize, text: &str, n: u64) {
        if slot != usize::MAX {
            *self.slots.entry(slot).or_default() += n;
        } else if let Some(v) = self.rest.get_mut(text) {
            *v += n;
        } else if self.rest.len() < MAX_SIGNATURES {
            self.rest.insert(text.to_string(), n);
        } else {
            *self.slots.entry(usize::MAX).or_default() += n;
        }
    }

    fn merge(&mut self, o: Counting) {
        for (slot, n) in o.slots {
            *self.slots.entry(slot).or_default() += n;
        }
        for (text, n) in o.rest {
            self.add(usize::MAX, &text, n);
        }
    }

    /// By text, as the listing says them (`other` for the signatures past the 10,000 kept).
    fn texts(self, learned: &Learned) -> HashMap<String, u64> {
        let mut out: HashMap<String, u64> = self.rest.into_iter().collect();
        for (slot, n) in self.slots {
            let text = learned.signatures.get(slot).map_or(OTHER, |s| s.text.as_str());
            *out.entry(text.to_string()).or_default() += n;
        }
        out
    }
}

/// `map[key] += n`, allocating the key only when it is new (most failed runs' signatures and
/// nodes are met before).
fn bump(map: &mut HashMap<String, u64>, key: &str, n: u64) {
    match map.get_mut(key) {
        Some(v) => *v += n,
        None => {
            map.insert(key.to_string(), n);
        }
    }
}

/// The entry of `key` in `map`, made when new, allocating the key only then.
fn entry<'m, V: Default>(map: &'m mut Map<V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// A worker's unit of jobs read again: the windows' listings and what the learning loses.
#[derive(Debug, Default)]
pub struct InWindows {
    pub listed: Vec<Listed>,
    /// Each window's signatures, as they are counted ([`Listed::signatures`] at the end).
    counting: Vec<Counting>,
    sigs: Slots<Removed>,
    nodes: Map<NodeRemoved>,
    ends: Vec<Option<i64>>,
    text: String,
    scratch: String,
    /// The windows this job touched.
    touched: Vec<usize>,
}

fn take(t: &mut Tally, success: bool) {
    t.trials += 1;
    t.successes += u64::from(success);
}

fn less(t: &mut Tally, o: Tally) {
    t.trials = t.trials.saturating_sub(o.trials);
    t.successes = t.successes.saturating_sub(o.successes).min(t.trials);
}

impl InWindows {
    /// One job read again: listed in every window one of its failed runs ends in; with
    /// `learned` (a job pass 1 learned from), what its runs in an incident (`leave[w]`) take
    /// out of the learning. `collided`: per run, whether its next run was a collided retry
    /// (as pass 1 found it).
    pub fn add_job(
        &mut self,
        history: &FailureHistory,
        windows: &Windows,
        leave: &[bool],
        (learned, slots): (bool, &Learned),
        collided: &[bool],
    ) {
        incidents::ends(history, &mut self.ends);
        let inside = |k: usize, ends: &[Option<i64>]| ends.get(k).copied().flatten().and_then(|t| windows.find(t));
        let any = history
            .runs
            .iter()
            .enumerate()
            .any(|(k, r)| r.outcome == Outcome::Failed && inside(k, &self.ends).is_some());
        if !any {
            return;
        }
        if self.listed.len() < windows.len() {
            self.listed.resize_with(windows.len(), Listed::default);
            self.counting.resize_with(windows.len(), Counting::default);
        }
        let gpu_milli = history.job.resources.and_then(|r| r.gpu_milli);
        self.touched.clear();
        let mut depth = 0u32;
        for (k, run) in history.runs.iter().enumerate() {
            if run.outcome != Outcome::Failed {
                continue;
            }
            depth = depth.saturating_add(1);
            let Some(w) = inside(k, &self.ends) else { continue };
            if !self.touched.contains(&w) {
                self.touched.push(w);
                self.listed[w].jobs += 1;
            }
            text_into(run, &mut self.text, &mut self.scratch);
            let slot = slots.slot_of(&self.text);
            let next = history.runs.get(k + 1);
            let l = &mut self.listed[w];
            l.failed_runs += 1;
            l.gpu = l.gpu.saturating_add(request_time(run.run_for, gpu_milli));
            self.counting[w].add(slot, &self.text, 1);
            if let Some(node) = &run.node {
                bump(&mut l.nodes, node, 1);
            }
            if let Some(next) = next {
                l.retried += 1;
                l.retried_succeeded += u64::from(next.outcome == Outcome::Succeeded);
            }
            if !learned || !leave.get(w).copied().unwrap_or(true) {
                continue;
            }
            let r = self.sigs.entry(slot).or_default();
            r.in_incidents += 1;
            let collided = collided.get(k).copied().unwrap_or(false);
            if let Some(next) = next.filter(|_| !collided) {
                let success = next.outcome == Outcome::Succeeded;
                let bucket = (depth.clamp(1, DEPTHS as u32) - 1) as usize;
                take(&mut r.trials, success);
                take(&mut r.by_depth[bucket], success);
                if !success {
                    r.futile.add(bucket, self.ends.get(k).copied().flatten());
                }
                match (&run.node, &next.node) {
                    (Some(a), Some(b)) if a == b => take(&mut r.same_node, success),
                    (Some(_), Some(_)) => take(&mut r.other_node, success),
                    _ => {}
                }
            }
            if let Some(node) = &run.node {
                let n = entry(&mut self.nodes, node);
                n.runs += 1;
                if !run.conditions.contains(&Condition::Preempted) {
                    n.failed += 1;
                    *n.signatures.entry(slot).or_default() += 1;
                }
            }
        }
    }

    /// Adds another unit's.
    pub fn merge(&mut self, o: InWindows) {
        if self.listed.len() < o.listed.len() {
            self.listed.resize_with(o.listed.len(), Listed::default);
            self.counting.resize_with(o.listed.len(), Counting::default);
        }
        for (mine, theirs) in self.listed.iter_mut().zip(o.listed) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.counting.iter_mut().zip(o.counting) {
            mine.merge(theirs);
        }
        for (slot, r) in o.sigs {
            let m = self.sigs.entry(slot).or_default();
            m.in_incidents += r.in_incidents;
            for (a, b) in [
                (&mut m.trials, r.trials),
                (&mut m.same_node, r.same_node),
                (&mut m.other_node, r.other_node),
            ] {
                a.trials += b.trials;
                a.successes += b.successes;
            }
            for (a, b) in m.by_depth.iter_mut().zip(r.by_depth) {
                a.trials += b.trials;
                a.successes += b.successes;
            }
            m.futile.merge(&r.futile);
        }
        for (name, n) in o.nodes {
            let m = self.nodes.entry(name).or_default();
            m.runs += n.runs;
            m.failed += n.failed;
            for (k, v) in n.signatures {
                *m.signatures.entry(k).or_default() += v;
            }
        }
    }

    /// Takes what the windows hold out of `learned` (pass 1's counts, every run in them):
    /// each signature's trials there and each node's runs; `in_incidents` counts the runs
    /// left out. Returns the listings, one a window.
    pub fn leave_out(self, learned: &mut Learned, windows: usize) -> Vec<Listed> {
        for (&slot, r) in &self.sigs {
            let stats = match slot {
                usize::MAX => learned.other.as_mut(),
                i => learned.signatures.get_mut(i),
            };
            let Some(s) = stats else { continue };
            s.in_incidents += r.in_incidents;
            less(&mut s.trials, r.trials);
            for (a, b) in s.by_depth.iter_mut().zip(r.by_depth) {
                less(a, b);
            }
            less(&mut s.same_node, r.same_node);
            less(&mut s.other_node, r.other_node);
            s.futile_days.take_all(&r.futile);
        }
        for (name, n) in &self.nodes {
            let Some(node) = learned.nodes.get_mut(name.as_str()) else {
                continue;
            };
            node.runs = node.runs.saturating_sub(n.runs);
            node.failed = node.failed.saturating_sub(n.failed);
            for (&slot, &k) in &n.signatures {
                if let Some(v) = node.signatures.get_mut(&slot) {
                    *v = v.saturating_sub(k);
                    if *v == 0 {
                        node.signatures.remove(&slot);
                    }
                }
            }
        }
        let mut listed = self.listed;
        listed.resize_with(windows, Listed::default);
        for (l, c) in listed.iter_mut().zip(self.counting) {
            l.signatures = c.texts(learned);
        }
        listed
    }
}

/// What the windows say, for the report: each incident and its listing, the median
/// incident's length, each burst and surge and its listing, and what was left out in all.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub windows: Vec<(Window, Listed)>,
    /// The bursts and surges (learned from), in time order.
    pub busy: Vec<(Window, Kind, Listed)>,
    /// The rule's figures: the mean `k` of a window, the windows tested.
    pub lambda: f64,
    pub tests: u64,
    /// The failed runs of the jobs learned from, and those left out.
    pub failed_runs: u64,
    pub left_out: u64,
    /// Every job's failed runs in the incidents (every queue's, as listed).
    pub in_windows: u64,
}

impl Found {
    /// The median window's length (the lower middle one of an even count), in nanoseconds.
    pub fn median(&self) -> Option<i64> {
        let mut v: Vec<i64> = self.windows.iter().map(|(w, _)| w.length()).collect();
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) / 2).copied()
    }

    /// The retries the record shows inside the windows, and those that succeeded.
    pub fn retried(&self) -> (u64, u64) {
        self.windows
            .iter()
            .fold((0, 0), |(r, s), (_, l)| (r + l.retried, s + l.retried_succeeded))
    }
}

/// What a verdict decides, to compare two: the action and limit of a rule, `None` for
/// none or a rule that writes today's decision (decided as today either way).
pub fn decides(v: &Verdict) -> Option<(Action, Option<u32>)> {
    match v {
        Verdict::Rule(p) if p.as_today.is_none() => Some((p.action, p.limit)),
        _ => None,
    }
}

/// The signatures whose verdict with their incident runs counted differs from the one
/// without: by text, the verdict with them.
#[derive(Debug, Clone, Default)]
pub struct Sensitive(pub HashMap<String, Verdict>);

impl Sensitive {
    /// `without` (the proposal's verdicts) against `with` (the same signatures' verdicts with
    /// the incident runs counted).
    pub fn of<'a>(
        without: impl IntoIterator<Item = (&'a SignatureStats, &'a Verdict)>,
        with: &[(&SignatureStats, Verdict)],
    ) -> Sensitive {
        let with: HashMap<&str, &Verdict> = with.iter().map(|(s, v)| (s.text.as_str(), v)).collect();
        Sensitive(
            without
                .into_iter()
                .filter_map(|(s, v)| {
                    let w = with.get(s.text.as_str())?;
                    (decides(v) != decides(w)).then(|| (s.text.clone(), (*w).clone()))
                })
                .collect(),
        )
    }

    pub fn get(&self, text: &str) -> Option<&Verdict> {
        self.0.get(text)
    }

    /// Marks `text` (the default's, say) when `without` and `with` differ.
    pub fn mark(&mut self, text: &str, without: &Verdict, with: &Verdict) {
        if decides(without) != decides(with) {
            self.0.insert(text.to_string(), with.clone());
        }
    }
}

/// Whether a Retry rule's first delay is shorter than the median window (`median`, in
/// nanoseconds) for a signature hit inside one: its retries come back inside the incident.
pub fn short_backoff(first_delay: GoDuration, median: i64, in_incidents: u64) -> bool {
    in_incidents > 0 && i128::from(first_delay.0) < i128::from(median)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::failure_history::{Container, Job, Run, Timestamp};
    use crate::model::signature::FailedTexts;
    use crate::suggest::stats::UnitLearned;

    fn run(outcome: Outcome, node: &str, minute: i64) -> Run {
        Run {
            node: Some(node.into()),
            outcome,
            started_at: Some(crate::model::failure_history::StartedAt::Absolute(Timestamp(
                minute * 60_000_000_000,
            ))),
            containers: vec![Container {
                name: "main".into(),
                exit_code: if outcome == Outcome::Failed { 1 } else { 0 },
                ..Container::default()
            }],
            ..Run::default()
        }
    }

    /// A job failing at minute `a` (on n1) and `b` (on n2), then succeeding.
    fn job(a: i64, b: i64) -> FailureHistory {
        FailureHistory {
            job: Job::default(),
            runs: vec![
                run(Outcome::Failed, "n1", a),
                run(Outcome::Failed, "n2", b),
                run(Outcome::Succeeded, "n2", b + 10),
            ],
            expect: None,
        }
    }

    /// Pass 1's learning of `jobs`.
    fn learned_of(jobs: &[FailureHistory]) -> Learned {
        let mut unit = UnitLearned::default();
        let mut ends = Vec::new();
        for h in jobs {
            incidents::ends(h, &mut ends);
            unit.add_job(h, &ends, &[false; 3], FailedTexts::default().of(&h.runs));
        }
        let mut learned = Learned::default();
        learned.merge_unit(unit);
        learned
    }

    #[test]
    fn a_window_takes_its_runs_out_of_the_trials_and_the_nodes_and_lists_them() {
        let jobs = [job(0, 100), job(5, 200)];
        let mut learned = learned_of(&jobs);
        assert_eq!(
            learned.signatures[0].trials,
            Tally {
                trials: 4,
                successes: 2
            }
        );
        // A window over minutes 0–10: each job's first failure (depth 1, followed by a
        // failure on another node) is in it.
        let windows = Windows(vec![Window::given(Timestamp(0), Timestamp(10 * 60_000_000_000))]);
        let mut again = InWindows::default();
        for h in &jobs {
            again.add_job(h, &windows, &[true], (true, &learned), &[false; 3]);
        }
        let listed = again.leave_out(&mut learned, 1);
        let s = &learned.signatures[0];
        assert_eq!((s.failed_runs, s.in_incidents), (4, 2));
        assert_eq!(
            s.trials,
            Tally {
                trials: 2,
                successes: 2
            }
        );
        assert_eq!(s.by_depth[0], Tally::default());
        assert_eq!(s.other_node, Tally::default());
        assert_eq!(s.futile_days.one_day(0), None);
        assert_eq!((learned.nodes["n1"].runs, learned.nodes["n1"].failed), (0, 0));
        assert_eq!(learned.nodes["n2"].failed, 2);
        let l = &listed[0];
        assert_eq!((l.jobs, l.failed_runs, l.retried, l.retried_succeeded), (2, 2, 2, 0));
        assert_eq!(Listed::top(&l.signatures, 3), vec![("exit:1@main", 2)]);
        assert_eq!(l.node_share(), Some(1.0));
    }

    #[test]
    fn a_burst_or_a_surge_is_listed_and_learned_from() {
        let jobs = [job(0, 100), job(5, 200)];
        let mut learned = learned_of(&jobs);
        let before = (learned.signatures[0].trials, learned.nodes["n1"].failed);
        let windows = Windows(vec![Window::given(Timestamp(0), Timestamp(10 * 60_000_000_000))]);
        let mut again = InWindows::default();
        for h in &jobs {
            again.add_job(h, &windows, &[false], (true, &learned), &[false; 3]);
        }
        let listed = again.leave_out(&mut learned, 1);
        let s = &learned.signatures[0];
        assert_eq!(
            (s.in_incidents, s.trials, learned.nodes["n1"].failed),
            (0, before.0, before.1)
        );
        assert_eq!((listed[0].jobs, listed[0].failed_runs), (2, 2));
    }

    /// A signature of 40 futile first retries, each on `day(k)` (days since 1970; `None`:
    /// a time the record does not give), retried today by `today/default`.
    fn futile(day: impl Fn(u64) -> Option<i64>) -> SignatureStats {
        let mut s = SignatureStats {
            text: "exit:1@main".into(),
            signature: Some(crate::model::signature::Signature::Container {
                exit: Some(1),
                name: "main".into(),
                init: false,
                template: String::new(),
                cut: false,
            }),
            failed_runs: 40,
            ..SignatureStats::default()
        };
        s.current.insert(
            crate::suggest::stats::Current::Decided {
                rule: "today/default".into(),
                action: Action::Retry,
            },
            40,
        );
        for k in 0..40 {
            s.trials.trials += 1;
            s.by_depth[0].trials += 1;
            s.futile_days
                .add(0, day(k).map(|d| d * 86_400_000_000_000 + 3_600_000_000_000));
        }
        s
    }

    #[test]
    fn a_fail_needs_futility_on_two_days() {
        use crate::engine::EngineKind;
        use crate::suggest::propose::{verdict, Knobs, NoRule};
        let k = Knobs::default();
        let day = 20_775; // 2026-11-18
                          // Every futile retry on one day: decided as today, the day said.
        let one = verdict(&futile(|_| Some(day)), &k, EngineKind::Design);
        assert_eq!(one, Verdict::None(NoRule::FutilityOneDay { day }));
        assert_eq!(
            NoRule::FutilityOneDay { day }.to_string(),
            "futility on one day: 2026-11-18"
        );
        // On two days, or one the record does not place: Fail.
        for two in [
            futile(|k| Some(day + (k % 2) as i64)),
            futile(|k| (k > 0).then_some(day)),
        ] {
            assert_eq!(
                decides(&verdict(&two, &k, EngineKind::Design)),
                Some((Action::Fail, None))
            );
        }
    }

    #[test]
    fn a_retry_whose_every_retry_collided_stays() {
        use crate::engine::EngineKind;
        use crate::suggest::propose::{verdict, Knobs, NoRule};
        let mut s = futile(|_| Some(20_775));
        (s.trials, s.by_depth, s.collided) = (Tally::default(), Default::default(), 40);
        let v = verdict(&s, &Knobs::default(), EngineKind::Upstream);
        assert_eq!(v, Verdict::None(NoRule::RetriesCollide));
        assert_eq!(
            NoRule::RetriesCollide.to_string(),
            "retries collide: the executor keeps its pods"
        );
        // Failed today: no retry to keep; too few trials, as any.
        s.current.clear();
        s.current.insert(
            crate::suggest::stats::Current::Decided {
                rule: "today/0".into(),
                action: Action::Fail,
            },
            40,
        );
        assert!(matches!(
            verdict(&s, &Knobs::default(), EngineKind::Upstream),
            Verdict::None(NoRule::TooFewTrials { .. })
        ));
    }
}
