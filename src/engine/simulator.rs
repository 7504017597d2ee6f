//! The policy side of `simulate`, as values: which policies a job gets (docs/simulate.md: the Queue
//! document named like `job.queue`, else `--retry-policy`, else every RetryPolicy given, in
//! order; then the annotation and default-policy steps), resolved against compiled
//! policies.
//!
//! Owns: [`Simulator`]. It takes policies and queues as values so that a server-backed
//! source (`--from-server`) can construct one the same way. Must not: do I/O.

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::duration::GoDuration;
use crate::model::failure_history::{FailureHistory, Outcome};

use super::categorizer::Classifier;
use super::matcher::RetryPlan;
use crate::model::policy::{Action, RetryPolicy};
use crate::model::queue::Queue;

use super::design::{first_match, Match};
use super::inputs::{effective_policy_names, EngineKind, NameOrigin, Settings, POLICY_ANNOTATION};
use super::job_report::JobReport;
use super::job_report::{
    decisions_named, outcome_named, replay_detailed, replay_named, runs_left_after, runs_left_named, Detail,
    JobOutcome, PendingEngine,
};
use super::job_state::JobContext;
use super::matcher::{CompiledPolicy, Policies, SharedRegexes};

#[derive(Debug, Clone)]
pub struct Simulator {
    policies: Vec<CompiledPolicy>,
    by_name: HashMap<String, usize>,
    queues: HashMap<String, Queue>,
    /// `--retry-policy`, or every policy in the order given.
    given: Vec<String>,
    /// Policies and queues were read from a server (`--from-server`): a job's queue must
    /// exist there (falling back to every policy on the server would be a guess), and
    /// messages name the server rather than `-f`.
    from_server: bool,
    engine: EngineKind,
    /// Each queue's policy list, and `given`, already resolved to policy indices for a job
    /// that carries no policy annotation (the common case): `effective` then costs one
    /// lookup instead of a list of names built and looked up per job (~7% of a bulk
    /// replay's instructions, BENCHMARKS.md "simulate"). `None` where a name is missing, so that the slow
    /// path words the error. Sorted by queue name, for a binary search: a few string
    /// comparisons per job, where hashing the name (SipHash) cost ~180 instructions, and
    /// it is looked up twice per job (here and by [`Simulator::has_queue`]).
    resolved: Vec<(String, Resolved)>,
    given_resolved: Resolved,
    /// The executor's categorizer of this side (`simulate --categorizer`): the replay
    /// classifies each failed run with it before the engine sees the run. `None`: the
    /// recorded categories. Shared: a Simulator is cloned per candidate in a search.
    categorizer: Option<Arc<Classifier>>,
}

/// A policy list resolved for each engine (docs/engines.md without an annotation; upstream
/// takes the first entry only).
#[derive(Debug, Clone, Default)]
struct Resolved {
    design: Option<Resolution>,
    upstream: Option<Resolution>,
}

/// One resolved list: the policies' indices, and their names for the reports, made once
/// and shared by every report of a job that gets this list; for the design engine, the
/// list's shared regexes (one search of a message for every policy's regex message rules,
/// their DFA built on the first job that needs it), one for every list of the same policies:
/// queues that list the same policies, and the policies given, build it once (a 60-rule Xid
/// catalog takes ~8 ms).
#[derive(Debug, Clone)]
struct Resolution {
    ix: Vec<usize>,
    names: Arc<[String]>,
    shared: Option<Arc<SharedRegexes>>,
}

/// How a rule, or a policy's default action, decides a run it takes (docs/engines.md), for a
/// search to tell candidates apart ([`Simulator::decides`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Decides {
    pub action: Action,
    /// The backoff a retry under it takes (initial delay, max delay, multiplier, jitter):
    /// an unset field is `u64::MAX`, a number its bits.
    pub backoff: [u64; 4],
    /// Its retry limit (rule → policy; `None`: `globalMaxRetries`). Apart from the rest: a
    /// limit that a job's runs cannot reach decides that job as any other such limit does.
    pub limit: Option<u32>,
}

impl Decides {
    fn new(action: Action, plan: &RetryPlan) -> Decides {
        let duration = |d: Option<GoDuration>| d.map_or(u64::MAX, |d| d.0);
        let float = |f: Option<f64>| f.map_or(u64::MAX, f64::to_bits);
        let b = &plan.backoff;
        Decides {
            action,
            backoff: [
                duration(b.initial_delay),
                duration(b.max_delay),
                float(b.multiplier),
                float(b.jitter),
            ],
            limit: plan.limit,
        }
    }

    /// Everything but the limit.
    pub fn without_limit(&self) -> Decides {
        Decides { limit: None, ..*self }
    }
}

/// Policies of a resolved list [`Simulator::simulate_outcome`] puts on the stack.
const STACK_LIST: usize = 4;

/// The shared regexes made so far, by list (policy indices): built once per distinct list.
type Shares = HashMap<Vec<usize>, Option<Arc<SharedRegexes>>>;

impl Resolution {
    /// `None` when a name is not among the policies. `share`: build the shared regexes over
    /// `compiled`, the simulator's policies, which must not move afterwards (the regexes
    /// pair only with the very policies they were built from, `Policies::new`; a clone of
    /// the simulator has its own policies, so its lists search on their own: same answers).
    fn new<'a>(
        names: impl Iterator<Item = &'a String>,
        by_name: &HashMap<String, usize>,
        compiled: &[CompiledPolicy],
        share: Option<&mut Shares>,
    ) -> Option<Resolution> {
        let (ix, names): (Vec<usize>, Vec<String>) = names
            .map(|n| Some((*by_name.get(n)?, n.clone())))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .unzip();
        let shared = share.and_then(|shares| {
            shares
                .entry(ix.clone())
                .or_insert_with(|| {
                    SharedRegexes::new(&ix.iter().map(|&i| &compiled[i]).collect::<Vec<_>>()).map(Arc::new)
                })
                .clone()
        });
        Some(Resolution {
            ix,
            names: names.into(),
            shared,
        })
    }
}

impl Resolved {
    fn new(
        names: &[String],
        by_name: &HashMap<String, usize>,
        compiled: &[CompiledPolicy],
        shares: &mut Shares,
    ) -> Resolved {
        let design = effective_policy_names(names, &NameOrigin::Given, None, None);
        Resolved {
            design: Resolution::new(design.iter().map(|(n, _)| n), by_name, compiled, Some(shares)),
            upstream: Resolution::new(names.iter().take(1), by_name, compiled, None),
        }
    }

    fn get(&self, engine: EngineKind) -> Option<&Resolution> {
        match engine {
            EngineKind::Design => self.design.as_ref(),
            EngineKind::Upstream => self.upstream.as_ref(),
        }
    }
}

impl Simulator {
    /// `retry_policies` is `--retry-policy`; `None` means every policy, in order. Fails on
    /// a policy name defined twice or a pattern that does not compile.
    pub fn new(
        policies: Vec<RetryPolicy>,
        queues: Vec<Queue>,
        retry_policies: Option<Vec<String>>,
    ) -> Result<Simulator, String> {
        let mut compiled = Vec::with_capacity(policies.len());
        let mut by_name = HashMap::new();
        for p in policies {
            if by_name.insert(p.name.clone(), compiled.len()).is_some() {
                return Err(format!(
                    "policy `{}` is defined more than once; give each policy once",
                    p.name
                ));
            }
            compiled.push(CompiledPolicy::new(p)?);
        }
        let given = retry_policies.unwrap_or_else(|| compiled.iter().map(|p| p.name().to_string()).collect());
        let mut queue_map = HashMap::new();
        for q in queues {
            if queue_map.contains_key(&q.name) {
                return Err(format!(
                    "queue `{}` is defined more than once; give each queue once",
                    q.name
                ));
            }
            queue_map.insert(q.name.clone(), q);
        }
        let mut shares = Shares::new();
        let mut resolved: Vec<(String, Resolved)> = queue_map
            .values()
            .map(|q: &Queue| {
                (
                    q.name.clone(),
                    Resolved::new(&q.retry_policies, &by_name, &compiled, &mut shares),
                )
            })
            .collect();
        resolved.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // `compiled` is moved into the simulator below: its elements stay where they are.
        let given_resolved = Resolved::new(&given, &by_name, &compiled, &mut shares);
        Ok(Simulator {
            policies: compiled,
            by_name,
            queues: queue_map,
            given,
            from_server: false,
            engine: EngineKind::Design,
            resolved,
            given_resolved,
            categorizer: None,
        })
    }

    /// These documents with the queues of `today` they do not name (docs/what-if.md "Queues
    /// the candidate does not name"): when they name a queue at all, every other queue of
    /// `today` is added with its list, and the policies of that list they do not define, so
    /// that its jobs replay as today. Without a Queue of their own, their policies stand for
    /// every job and nothing is added.
    pub fn with_queues_of(self, today: &Simulator) -> Result<Simulator, String> {
        if self.queues.is_empty() {
            return Ok(self);
        }
        let mut missing: Vec<&Queue> = today
            .queues
            .values()
            .filter(|q| !self.queues.contains_key(&q.name))
            .collect();
        if missing.is_empty() {
            return Ok(self);
        }
        missing.sort_by(|a, b| a.name.cmp(&b.name));
        let mut policies: Vec<RetryPolicy> = self.policies().cloned().collect();
        let mut queues: Vec<Queue> = self.queues.values().cloned().collect();
        for q in missing {
            for name in &q.retry_policies {
                if policies.iter().any(|p| p.name == *name) {
                    continue;
                }
                if let Some(&i) = today.by_name.get(name) {
                    policies.push(today.policies[i].policy.clone());
                }
            }
            queues.push(q.clone());
        }
        let sim = Simulator::new(policies, queues, Some(self.given.clone()))?;
        Ok(Simulator {
            from_server: self.from_server,
            engine: self.engine,
            categorizer: self.categorizer,
            ..sim
        })
    }

    /// The queues given, by name.
    pub fn queue_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.queues.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Classify every failed run with `categorizer` before deciding (docs/categorizer.md).
    pub fn with_categorizer(mut self, categorizer: Option<Arc<Classifier>>) -> Simulator {
        self.categorizer = categorizer;
        self
    }

    /// The side's categorizer, if any (the replay applies it: this type only decides).
    pub fn categorizer(&self) -> Option<&Classifier> {
        self.categorizer.as_deref()
    }

    /// Marks the policies and queues as read from a server (see the field's docs).
    pub fn from_server(mut self) -> Simulator {
        self.from_server = true;
        self
    }

    /// Decide with `engine` (docs/engines.md); the design engine by default.
    pub fn with_engine(mut self, engine: EngineKind) -> Simulator {
        self.engine = engine;
        self
    }

    pub fn engine(&self) -> EngineKind {
        self.engine
    }

    /// The policies, for checks that depend on the engine (upstream cannot read every field).
    pub fn policies(&self) -> impl Iterator<Item = &crate::model::policy::RetryPolicy> {
        self.policies.iter().map(|p| &p.policy)
    }

    /// Whether a Queue named `name` was given (simulate warns when a job's queue was not).
    /// The Queue named `name`, when it was given.
    pub fn queue(&self, name: &str) -> Option<&Queue> {
        self.queues.get(name)
    }

    pub fn has_queue(&self, name: &str) -> bool {
        self.queue_resolved(name).is_some()
    }

    /// The resolved lists of the Queue named `name`, when it was given.
    fn queue_resolved(&self, name: &str) -> Option<&Resolved> {
        let i = self.resolved.binary_search_by(|(q, _)| q.as_str().cmp(name)).ok()?;
        Some(&self.resolved[i].1)
    }

    /// The policies a job gets when its queue is not given: `--retry-policy`, or every
    /// policy in order.
    /// Everything that decides a job here, as JSON: the policies in order, the queues by
    /// name, the policies given, the engine and where they came from (a partial result's
    /// fingerprint, docs/past-one-machine.md: two runs with equal fingerprints decide alike).
    pub fn fingerprint(&self) -> serde_json::Value {
        let mut queues: Vec<&Queue> = self.queues.values().collect();
        queues.sort_by(|a, b| a.name.cmp(&b.name));
        let mut v = serde_json::json!({
            "policies": self.policies.iter().map(|p| &p.policy).collect::<Vec<_>>(),
            "queues": queues,
            "given": self.given,
            "engine": self.engine.as_str(),
            "fromServer": self.from_server,
        });
        // Only with one: a fingerprint without a categorizer stays what it was.
        if let (Some(c), serde_json::Value::Object(m)) = (&self.categorizer, &mut v) {
            m.insert("categorizer".into(), format!("{c:?}").into());
        }
        v
    }

    pub fn given(&self) -> &[String] {
        &self.given
    }

    /// The effective policies of a job (docs/engines.md); a missing one is an error that names it
    /// and who referenced it.
    pub fn effective(&self, history: &FailureHistory, settings: &Settings) -> Result<Vec<&CompiledPolicy>, String> {
        match self.resolution(history) {
            Some(r) => Ok(self.resolved_policies(r)),
            None => self.effective_by_names(history, settings),
        }
    }

    /// The job's list as resolved once, when it has one: without an annotation (which
    /// upstream ignores anyway) the list is the queue's, or the given one. `None` for an
    /// empty list (the default policy's turn) or a missing name: the full path then
    /// decides, and words the error.
    fn resolution(&self, history: &FailureHistory) -> Option<&Resolution> {
        let job = &history.job;
        if self.engine == EngineKind::Design && job.annotations.contains_key(POLICY_ANNOTATION) {
            return None;
        }
        // A queue not given falls back to the given list, as the full path does (with
        // --from-server and no --retry-policy that list is empty: the full path then words
        // the error).
        job.queue
            .as_deref()
            .and_then(|q| self.queue_resolved(q))
            .unwrap_or(&self.given_resolved)
            .get(self.engine)
            .filter(|r| !r.ix.is_empty())
    }

    fn resolved_policies(&self, r: &Resolution) -> Vec<&CompiledPolicy> {
        r.ix.iter().map(|&i| &self.policies[i]).collect()
    }

    /// [`Simulator::effective`] the long way: the list of names built (annotation and
    /// default policy included) and each looked up, with the error for a missing one.
    fn effective_by_names(
        &self,
        history: &FailureHistory,
        settings: &Settings,
    ) -> Result<Vec<&CompiledPolicy>, String> {
        let job = &history.job;
        let (base, source) = match job.queue.as_deref().and_then(|q| self.queues.get(q)) {
            Some(q) => (&q.retry_policies, NameOrigin::Queue(q.name.clone())),
            None if self.from_server && self.given.is_empty() => {
                return Err(match &job.queue {
                    Some(q) => format!("queue `{q}` (the job's `queue`) does not exist on the server"),
                    None => "the job names no `queue`; with --from-server, set `job.queue` or pass --retry-policy"
                        .to_string(),
                });
            }
            None => (&self.given, NameOrigin::Given),
        };
        let origin = if self.from_server {
            "on the server"
        } else {
            "among the documents given with -f"
        };
        let names = match self.engine {
            EngineKind::Design => effective_policy_names(
                base,
                &source,
                job.annotations.get(POLICY_ANNOTATION).map(String::as_str),
                settings.default_policy_name.as_deref(),
            ),
            // Upstream: the first entry only, else the default policy; annotations never add.
            EngineKind::Upstream => effective_policy_names(
                &base[..base.len().min(1)],
                &source,
                None,
                settings.default_policy_name.as_deref(),
            ),
        };
        names
            .iter()
            .map(|(name, source)| {
                self.by_name.get(name).map(|&i| &self.policies[i]).ok_or_else(|| {
                    let known: Vec<&str> = self.policies.iter().map(CompiledPolicy::name).collect();
                    format!(
                        "policy `{name}` (referenced by {source}) is not {origin}{}",
                        if known.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " (known: {})",
                                known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                            )
                        }
                    )
                })
            })
            .collect()
    }

    pub fn simulate(&self, history: &FailureHistory, settings: &Settings) -> Result<JobReport, String> {
        self.simulate_detailed(history, settings, Detail::Full)
    }

    /// [`Simulator::simulate`], writing the per-run texts `detail` asks for.
    pub fn simulate_detailed(
        &self,
        history: &FailureHistory,
        settings: &Settings,
        detail: Detail,
    ) -> Result<JobReport, String> {
        // A resolved list comes with its names, shared by every report that gets it.
        let mut report = match self.resolution(history) {
            Some(r) => {
                let policies = self.resolved_policies(r);
                let policies = Policies::new(&policies, r.shared.as_deref());
                replay_named(history, policies, r.names.clone(), settings, self.engine, detail)
            }
            None => {
                let policies = self.effective_by_names(history, settings)?;
                replay_detailed(history, &policies, settings, self.engine, detail)
            }
        };
        if self.engine == EngineKind::Upstream {
            report.ignored_policies = self.queue_policies(history).iter().skip(1).cloned().collect();
        }
        Ok(report)
    }

    /// [`Simulator::simulate_detailed`]'s outcome alone ([`JobOutcome`]), at a fraction of a
    /// report's cost: for a search that replays a job under many candidates. `from`: the run
    /// from which [`JobOutcome::compute_from`] counts.
    /// `ctx`: [`super::job_report::job_context`] of `history`, worked out once for every candidate.
    pub fn simulate_outcome(
        &self,
        history: &FailureHistory,
        ctx: &JobContext<'_>,
        settings: &Settings,
        from: usize,
        matches: Option<&[Match]>,
    ) -> Result<JobOutcome, String> {
        self.with_policies(history, settings, |policies| {
            outcome_named(history, ctx, policies, settings, self.engine, from, matches)
        })
    }

    /// Each decision [`Simulator::simulate_detailed`] records of `history`'s runs, told to
    /// `each` (the run, the decision's kind, the policy and rule that decided it), without the
    /// records: for a pass that reads only which rule decided each run.
    pub fn simulate_decisions(
        &self,
        history: &FailureHistory,
        settings: &Settings,
        each: &mut crate::engine::job_report::Each<'_>,
    ) -> Result<(), String> {
        let ctx = super::job_report::job_context(history);
        self.with_policies(history, settings, |policies| {
            decisions_named(history, &ctx, policies, settings, self.engine, each)
        })
    }

    /// The runs this side has left when `history` leaves it Pending (docs/estimates.md, 1..=
    /// `max`): its engine continued on copies of the last failed run from the counter state
    /// the record leaves. `matches`: the recorded runs' first matches, when known, as for
    /// [`Simulator::simulate_outcome`].
    pub fn runs_left(
        &self,
        history: &FailureHistory,
        ctx: &JobContext<'_>,
        settings: &Settings,
        matches: Option<&[Match]>,
        max: u32,
    ) -> Result<u32, String> {
        self.with_policies(history, settings, |policies| {
            runs_left_named(history, ctx, policies, settings, self.engine, matches, max)
        })
    }

    /// [`Simulator::runs_left`] from the state the job's replay under this simulator left
    /// (`pending`, [`JobReport::take_pending`]), without replaying the recorded runs again.
    pub fn runs_left_after(
        &self,
        history: &FailureHistory,
        ctx: &JobContext<'_>,
        settings: &Settings,
        pending: Box<PendingEngine>,
        max: u32,
    ) -> Result<u32, String> {
        self.with_policies(history, settings, |policies| {
            runs_left_after(history, ctx, policies, settings, self.engine, pending, max)
        })
    }

    /// Calls `f` with the job's effective policies, resolved without building a list where
    /// the job's list was resolved once.
    fn with_policies<T>(
        &self,
        history: &FailureHistory,
        settings: &Settings,
        f: impl FnOnce(Policies<'_>) -> T,
    ) -> Result<T, String> {
        Ok(match self.resolution(history) {
            // A list of a few policies (the common case) on the stack: a `Vec` per job and
            // candidate was a tenth of a search's instructions.
            Some(r) if r.ix.len() <= STACK_LIST => {
                let mut list = [&self.policies[0]; STACK_LIST];
                for (slot, &i) in list.iter_mut().zip(&r.ix) {
                    *slot = &self.policies[i];
                }
                f(Policies::new(&list[..r.ix.len()], r.shared.as_deref()))
            }
            Some(r) => f(Policies::new(&self.resolved_policies(r), r.shared.as_deref())),
            None => f(Policies::alone(&self.effective_by_names(history, settings)?)),
        })
    }

    /// What, besides the runs' matches and the settings, decides a run under this simulator's
    /// design engine (docs/engines.md): for each policy (in the order given) and each of its
    /// rules, how the rule decides; and for each policy, how its default action does. Two
    /// simulators of the same policies (by name and order) whose lists match alike decide a
    /// job alike when the rules its runs match — and, if one matches none, the defaults —
    /// decide alike, their limits compared as far as the job's runs reach them: a search
    /// replays the job once for both.
    pub fn decides(&self) -> (Vec<Vec<Decides>>, Vec<Decides>) {
        let rules = self
            .policies
            .iter()
            .map(|cp| {
                (0..cp.policy.rules.len())
                    .map(|r| Decides::new(cp.policy.rules[r].action, cp.plan(Some(r))))
                    .collect()
            })
            .collect();
        let defaults = self
            .policies
            .iter()
            .map(|cp| Decides::new(cp.policy.default_action(), cp.plan(None)))
            .collect();
        (rules, defaults)
    }

    /// A job's effective list (docs/engines.md) as indices into this simulator's policies, in the
    /// order given (`None` when it cannot be resolved: its replay says why).
    pub fn list_of(&self, history: &FailureHistory, settings: &Settings) -> Option<Vec<usize>> {
        match self.resolution(history) {
            Some(r) => Some(r.ix.clone()),
            None => {
                let list = self.effective_by_names(history, settings).ok()?;
                list.iter().map(|cp| self.by_name.get(cp.name()).copied()).collect()
            }
        }
    }

    /// Each run's first match over the job's effective list (docs/engines.md; `None` for a run
    /// that is not a failure), for [`Simulator::simulate_outcome`] of other simulators whose
    /// lists have the same matchers in the same order (a search's candidates that vary only
    /// what matching does not read). `None` under the upstream engine, which matches on its
    /// own, or when the job's policies cannot be resolved.
    pub fn match_table(&self, history: &FailureHistory, settings: &Settings) -> Option<Vec<Match>> {
        if self.engine != EngineKind::Design {
            return None;
        }
        let policies = self.effective(history, settings).ok()?;
        let policies = match self.resolution(history) {
            Some(r) => Policies::new(&policies, r.shared.as_deref()),
            None => Policies::alone(&policies),
        };
        Some(
            history
                .runs
                .iter()
                .map(|run| match run.outcome {
                    Outcome::Failed => first_match(policies, run),
                    _ => None,
                })
                .collect(),
        )
    }

    fn queue_policies(&self, history: &FailureHistory) -> &[String] {
        match history.job.queue.as_deref().and_then(|q| self.queues.get(q)) {
            Some(q) => &q.retry_policies,
            None => &self.given,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::{Action, RetryPolicy};

    fn policy(name: &str) -> RetryPolicy {
        RetryPolicy {
            name: name.into(),
            retry_limit: Some(1),
            default_action: Some(Action::Fail),
            ..RetryPolicy::default()
        }
    }

    fn queue(name: &str, policies: &[&str]) -> Queue {
        Queue {
            name: name.into(),
            priority_factor: 1.0,
            user_owners: vec![],
            group_owners: vec![],
            labels: Default::default(),
            cordoned: false,
            retry_policies: policies.iter().map(|p| p.to_string()).collect(),
            permissions: vec![],
        }
    }

    /// Queues that list the same policies, and the policies given when they are the same
    /// list, share one set of shared regexes: their DFA is built once, not per queue. Another
    /// list gets its own.
    #[test]
    fn one_shared_search_per_distinct_list() {
        use crate::model::policy::Rule;
        let catalog = |name: &str| RetryPolicy {
            rules: (0..6)
                .map(|r| Rule {
                    action: Action::Retry,
                    on_termination_message: Some(format!(r"^NVRM: Xid \d+, {name} rule {r}:")),
                    ..Rule::default()
                })
                .collect(),
            ..policy(name)
        };
        let sim = Simulator::new(
            vec![catalog("a"), catalog("b")],
            vec![queue("q1", &["a", "b"]), queue("q2", &["a", "b"]), queue("q3", &["b"])],
            Some(vec!["a".into(), "b".into()]),
        )
        .unwrap();
        let shared = |q: &str| -> Arc<SharedRegexes> {
            let (_, r) = sim.resolved.iter().find(|(n, _)| n == q).unwrap();
            r.design.as_ref().unwrap().shared.clone().unwrap()
        };
        let given = sim.given_resolved.design.as_ref().unwrap().shared.clone().unwrap();
        assert!(Arc::ptr_eq(&shared("q1"), &shared("q2")));
        assert!(Arc::ptr_eq(&shared("q1"), &given));
        assert!(!Arc::ptr_eq(&shared("q1"), &shared("q3")));
    }

    /// The resolved lists answer exactly what the names answer, error text included, for
    /// every kind of job (queue given or not, annotation or not) under both engines, given
    /// lists, server mode and default policies: fails if the shortcut drifts from the full resolution.
    #[test]
    fn resolved_lists_answer_as_the_names_do() {
        let policies = || vec![policy("a"), policy("b"), policy("c")];
        let queues = || {
            vec![
                queue("q-ab", &["a", "b"]),
                queue("q-dup", &["b", "a", "b"]),
                queue("q-missing", &["a", "nope"]),
                queue("q-missing-first", &["nope", "a"]),
                queue("q-empty", &[]),
            ]
        };
        let givens: Vec<Option<Vec<String>>> = vec![
            None,
            Some(vec!["c".into()]),
            Some(vec![]),
            Some(vec!["nope".into(), "a".into()]),
        ];
        let mut sims = Vec::new();
        for given in &givens {
            for engine in [EngineKind::Design, EngineKind::Upstream] {
                let sim = Simulator::new(policies(), queues(), given.clone())
                    .unwrap()
                    .with_engine(engine);
                sims.push(sim.clone().from_server());
                sims.push(sim);
            }
        }
        let settings = [
            Settings::default(),
            Settings {
                default_policy_name: Some("c".into()),
                ..Settings::default()
            },
            Settings {
                default_policy_name: Some("nope".into()),
                ..Settings::default()
            },
        ];
        let mut checked = 0;
        for sim in &sims {
            for q in [
                None,
                Some("q-ab"),
                Some("q-dup"),
                Some("q-missing"),
                Some("q-missing-first"),
                Some("q-empty"),
                Some("unknown"),
            ] {
                for annotation in [None, Some("c, a"), Some("nope"), Some("")] {
                    let mut h = FailureHistory::default();
                    h.job.queue = q.map(str::to_string);
                    if let Some(a) = annotation {
                        h.job.annotations.insert(POLICY_ANNOTATION.to_string(), a.to_string());
                    }
                    for s in &settings {
                        let names = |r: Result<Vec<&CompiledPolicy>, String>| {
                            r.map(|ps| ps.iter().map(|p| p.name().to_string()).collect::<Vec<_>>())
                        };
                        assert_eq!(
                            names(sim.effective(&h, s)),
                            names(sim.effective_by_names(&h, s)),
                            "queue {q:?}, annotation {annotation:?}, engine {:?}, from_server {}, given {:?}, default {:?}",
                            sim.engine,
                            sim.from_server,
                            sim.given,
                            s.default_policy_name
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 16 * 7 * 4 * 3);
    }
}
