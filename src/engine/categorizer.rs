//! The executor's error categorizer applied to one failed run, exactly as upstream's
//! classifier (docs/categorizer.md).
//!
//! Owns: [`Classifier`], an `errorCategories` config compiled once, and what it makes of one
//! run ([`Categorized`]): rules tried in config order across all categories, the first match
//! winning; only containers with a non-zero exit code considered; `containerName` scoping the
//! container matchers; no match giving the defaults; a disabled config giving no category; the
//! runs the executor's classifier never sees keeping their recorded category. Also whether a
//! run's pod is retained ([`Categorized::pod_retained`], [`Classifier::retains_pod`]): a retry
//! of a job whose failed pod is retained collides with it, since retried pods reuse their name.
//!
//! A run's cost grows at most linearly in the rules (a config holds up to 4,000): one
//! literal scan of the run's texts ([`Prefilter`]) says which regex rules can match at all,
//! and only those run their regex; the rest of a rule is a few comparisons. (Each of thousands
//! of rules running its own regex on every run had cost more per rule the more there were:
//! their compiled automata and caches outgrew the processor's caches.) Its memory is bounded
//! too: the rules' patterns share one budget of the `regex` crate's automata
//! ([`REGEX_BUDGET`]), past which a rule's pattern is a program over characters
//! (`matcher::Pattern`).
//!
//! Must not: allocate per run (it runs on every run of a replay; the prefilter's scratch is
//! one per thread), do I/O, or match a regex with anything but the rules' own matcher
//! (`matcher::Pattern`, the one a policy's `onTerminationMessage` uses): the prefilter only
//! rules out a regex that cannot match, it never decides a match.

use std::cell::RefCell;
use std::collections::HashMap;

use aho_corasick::AhoCorasick;

use crate::model::categorizer::{ErrorCategories, PodAction, CATEGORY_INTERNAL, CATEGORY_PREEMPTION};
use crate::model::failure_history::Run;
use crate::model::policy::Condition;

use super::matcher::{required_of_all, Pattern, PatternPool};

/// An `errorCategories` config compiled for classifying runs.
#[derive(Debug, Clone)]
pub struct Classifier {
    enabled: bool,
    default_category: Option<Box<str>>,
    default_subcategory: Option<Box<str>>,
    /// Each category's name and action, in config order.
    categories: Box<[(Box<str>, PodAction)]>,
    /// Every rule of every category, in config order.
    rules: Box<[CompiledRule]>,
    /// Categories to put before a deployed config not given: a run none of them matches
    /// keeps the category it was recorded with ([`Classifier::prepended`]).
    prepended: bool,
    /// The regex rules' literal prefilter; `None` when no rule has a literal to scan for.
    prefilter: Option<Prefilter>,
}

/// One Aho-Corasick automaton over the literals the regex rules need (every match of a
/// rule's regex contains one of its literals: `matcher::required_of_all`): a run's texts
/// scanned once give the rules whose regex may match one of them.
#[derive(Debug, Clone)]
struct Prefilter {
    searcher: AhoCorasick,
    /// Literal index → the rules (indices into `Classifier::rules`) that need it.
    needed_by: Box<[Box<[u32]>]>,
    /// Bitset over the rules: those the prefilter can rule out (a regex rule with literals).
    gated: Box<[u64]>,
}

thread_local! {
    /// The rules a run leaves possible, a bitset over the rules: one per worker thread, so
    /// that a run allocates nothing once it has grown to the largest config.
    static POSSIBLE: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

impl Prefilter {
    /// `patterns`: `(rule index, pattern)` of every regex rule.
    fn new(rules: usize, patterns: &[(usize, &str)]) -> Option<Prefilter> {
        let texts: Vec<&str> = patterns.iter().map(|(_, p)| *p).collect();
        let (fold, required) = required_of_all(&texts);
        let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut needed_by: Vec<Vec<u32>> = Vec::new();
        let mut gated = vec![0u64; rules.div_ceil(64)];
        for ((rule, _), set) in patterns.iter().zip(required) {
            // No usable literal: the rule is always possible (not gated).
            let Some(set) = set else { continue };
            gated[rule / 64] |= 1 << (rule % 64);
            for literal in set {
                let k = *index.entry(literal.clone()).or_insert_with(|| {
                    literals.push(literal);
                    needed_by.push(Vec::new());
                    literals.len() - 1
                });
                let rule = u32::try_from(*rule).ok()?;
                if needed_by[k].last() != Some(&rule) {
                    needed_by[k].push(rule);
                }
            }
        }
        if literals.is_empty() {
            return None;
        }
        // Standard semantics: every occurrence of every literal is reported (overlapping).
        let searcher = AhoCorasick::builder()
            .ascii_case_insensitive(fold)
            .build(&literals)
            .ok()?;
        Some(Prefilter {
            searcher,
            needed_by: needed_by.into_iter().map(Vec::into_boxed_slice).collect(),
            gated: gated.into(),
        })
    }

    /// Sets in `possible` (cleared, one bit per rule) every rule that is not gated or one of
    /// whose literals occurs in a text a rule of `run` could match: a considered container's
    /// message, the pod error, an event's message.
    fn scan(&self, run: &Run, possible: &mut Vec<u64>) {
        possible.clear();
        possible.extend(self.gated.iter().map(|g| !g));
        let mut mark = |text: &str| {
            for m in self.searcher.find_overlapping_iter(text) {
                for &rule in self.needed_by[m.pattern().as_usize()].iter() {
                    possible[rule as usize / 64] |= 1 << (rule % 64);
                }
            }
        };
        for c in run.containers.iter().filter(|c| c.exit_code != 0) {
            if let Some(m) = c.message.as_deref() {
                mark(m);
            }
        }
        if let Some(e) = run.pod_error.as_deref() {
            mark(e);
        }
        for e in &run.events {
            mark(&e.message);
        }
    }
}

/// The estimated bytes of `regex` crate regexes one classifier's rules may take
/// (`matcher::Pattern`): 3,000 rules such as `error code E17 in module [a-z]+`, or none of
/// `x{17}\pL{6}`, which take 304 KiB each there. Past it a rule's pattern is a program over
/// characters: a few KiB, slower per search, only run when the prefilter leaves its rule. So a
/// config within the caps (4,000 rules) replays in bounded memory, twice over in `suggest`
/// (the deployed config and the proposal's).
const REGEX_BUDGET: u64 = 48 << 20;

#[derive(Debug, Clone)]
struct CompiledRule {
    /// Index into `categories`, and the rule's index within its category.
    category: usize,
    index: usize,
    subcategory: Option<Box<str>>,
    hint: Option<Box<str>>,
    /// Scopes the container matchers; `None`: any considered container.
    container: Option<Box<str>>,
    matcher: Matcher,
}

/// A rule's one matcher.
#[derive(Debug, Clone)]
enum Matcher {
    Conditions {
        oom: bool,
        evicted: bool,
        deadline: bool,
    },
    ExitCodes {
        not_in: bool,
        values: Box<[i32]>,
    },
    TerminationMessage(Pattern),
    PodError(Pattern),
    PodEvents {
        message: Pattern,
        reason: Option<Box<str>>,
        event_type: Box<str>,
    },
}

/// What the categorizer makes of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Categorized<'c> {
    /// The executor's classifier never sees this run (Armada's own `internal` category, a
    /// preempted run): it keeps the category it was recorded with.
    Recorded,
    /// The classifier's answer (possibly no category at all).
    Classified(Classification<'c>),
}

/// The classifier's answer for one run. `None` stands for upstream's empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Classification<'c> {
    pub category: Option<&'c str>,
    pub subcategory: Option<&'c str>,
    /// The matched rule's hint.
    pub hint: Option<&'c str>,
    /// What the executor does with the failed pod: the matched category's action, else
    /// `Retain`.
    pub action: PodAction,
    /// The matched rule: (category index, rule index within it); `None` for the defaults
    /// and for a disabled config.
    pub rule: Option<(usize, usize)>,
}

impl Categorized<'_> {
    /// Whether the run's failed pod stays in place, so that a retry reusing its name
    /// collides with it: every classified run whose category is not `Delete` (a `Retain`
    /// category, the default category, no category). A run the classifier never sees never
    /// collides: `false`.
    pub fn pod_retained(&self) -> bool {
        match self {
            Categorized::Recorded => false,
            Categorized::Classified(c) => c.action != PodAction::Delete,
        }
    }
}

/// Why a config does not compile: only what validation already reports (a regex, a
/// condition, an operator or action), so callers validate first and this is a safety net.
fn invalid(what: &str, category: &str, rule: usize) -> String {
    format!("category `{category}` rule {rule}: invalid {what}")
}

impl Classifier {
    pub fn new(config: &ErrorCategories) -> Result<Classifier, String> {
        let non_empty = |s: &str| (!s.is_empty()).then(|| Box::from(s));
        let mut categories = Vec::with_capacity(config.categories.len());
        let mut rules = Vec::new();
        // (rule index, its regex as written) of every regex rule, for the prefilter.
        let mut patterns: Vec<(usize, &str)> = Vec::new();
        // The `regex` crate's regexes of all the rules together stay within this; the rules
        // past it (and any whose automaton alone is large) match on a program over characters.
        let mut pool = PatternPool::new(REGEX_BUDGET);
        for (ci, cat) in config.categories.iter().enumerate() {
            let action = cat
                .pod_action()
                .ok_or_else(|| format!("category `{}`: invalid action `{}`", cat.name, cat.action))?;
            categories.push((Box::from(cat.name.as_str()), action));
            for (ri, r) in cat.rules.iter().enumerate() {
                let mut pattern =
                    |p: &str, what: &str| Pattern::within(p, &mut pool).map_err(|_| invalid(what, &cat.name, ri));
                let matcher = if !r.on_conditions.is_empty() {
                    let has = |c: &str| r.on_conditions.iter().any(|x| x == c);
                    if let Some(bad) = r
                        .on_conditions
                        .iter()
                        .find(|c| !matches!(c.as_str(), "OOMKilled" | "Evicted" | "DeadlineExceeded"))
                    {
                        return Err(invalid(&format!("condition `{bad}`"), &cat.name, ri));
                    }
                    Matcher::Conditions {
                        oom: has("OOMKilled"),
                        evicted: has("Evicted"),
                        deadline: has("DeadlineExceeded"),
                    }
                } else if let Some(m) = &r.on_exit_codes {
                    let not_in = match m.operator.as_str() {
                        "In" => false,
                        "NotIn" => true,
                        _ => return Err(invalid("exit code operator", &cat.name, ri)),
                    };
                    Matcher::ExitCodes {
                        not_in,
                        values: m.values.clone().into(),
                    }
                } else if let Some(p) = &r.on_termination_message {
                    patterns.push((rules.len(), p));
                    Matcher::TerminationMessage(pattern(p, "onTerminationMessage regex")?)
                } else if let Some(p) = &r.on_pod_error {
                    patterns.push((rules.len(), p));
                    Matcher::PodError(pattern(p, "onPodError regex")?)
                } else if let Some(e) = &r.on_pod_events {
                    patterns.push((rules.len(), &e.regexp));
                    Matcher::PodEvents {
                        message: pattern(&e.regexp, "onPodEvents regexp")?,
                        reason: non_empty(&e.reason),
                        event_type: Box::from(e.event_type.as_str()),
                    }
                } else {
                    return Err(invalid("rule: it has no matcher", &cat.name, ri));
                };
                rules.push(CompiledRule {
                    category: ci,
                    index: ri,
                    subcategory: non_empty(&r.subcategory),
                    hint: non_empty(&r.hint),
                    container: non_empty(&r.container_name),
                    matcher,
                });
            }
        }
        let prefilter = Prefilter::new(rules.len(), &patterns);
        Ok(Classifier {
            enabled: config.enabled,
            default_category: non_empty(&config.default_category),
            default_subcategory: non_empty(&config.default_subcategory),
            categories: categories.into(),
            rules: rules.into(),
            prepended: false,
            prefilter,
        })
    }

    /// These categories as if put before the executor's deployed config, which is not
    /// known: a run none of them matches keeps its recorded category (what the deployed
    /// config gave it), rather than the defaults.
    pub fn prepended(mut self) -> Classifier {
        self.prepended = true;
        self
    }

    /// Whether the config is enabled (a disabled one assigns no category).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether a run classified into `category` keeps its failed pod: every category but one
    /// whose action is `Delete` (the default category and no category too).
    pub fn retains_pod(&self, category: Option<&str>) -> bool {
        !category.is_some_and(|name| {
            self.categories
                .iter()
                .any(|(n, action)| &**n == name && *action == PodAction::Delete)
        })
    }

    /// What the executor's categorizer makes of `run`, a failed run.
    pub fn classify(&self, run: &Run) -> Categorized<'_> {
        if never_classified(run) {
            return Categorized::Recorded;
        }
        if !self.enabled {
            return Categorized::Classified(Classification::default());
        }
        let first = match &self.prefilter {
            None => self.rules.iter().find(|r| matches(r, run)),
            Some(p) => POSSIBLE.with_borrow_mut(|possible| {
                p.scan(run, possible);
                self.rules
                    .iter()
                    .enumerate()
                    .find(|(k, r)| possible[k / 64] & (1 << (k % 64)) != 0 && matches(r, run))
                    .map(|(_, r)| r)
            }),
        };
        match first {
            Some(r) => {
                let (name, action) = &self.categories[r.category];
                Categorized::Classified(Classification {
                    category: Some(name),
                    subcategory: r.subcategory.as_deref(),
                    hint: r.hint.as_deref(),
                    action: *action,
                    rule: Some((r.category, r.index)),
                })
            }
            None if self.prepended => Categorized::Recorded,
            None => Categorized::Classified(Classification {
                category: self.default_category.as_deref(),
                subcategory: self.default_subcategory.as_deref(),
                ..Classification::default()
            }),
        }
    }
}

/// A run the executor's classifier never sees: Armada sets its category itself (`internal`:
/// lease expiry, a missing pod, …) or it was preempted (newer Armada records `preemption`).
pub fn never_classified(run: &Run) -> bool {
    matches!(run.category.as_deref(), Some(CATEGORY_INTERNAL | CATEGORY_PREEMPTION))
        || run.conditions.contains(&Condition::Preempted)
}

fn matches(r: &CompiledRule, run: &Run) -> bool {
    // The considered containers: a non-zero exit code (in a failed run, every container is
    // terminated), scoped to `containerName` when set. An unnamed container has an empty name,
    // which no `containerName` equals.
    let mut considered = run
        .containers
        .iter()
        .filter(|c| c.exit_code != 0 && r.container.as_deref().is_none_or(|n| c.name == n));
    match &r.matcher {
        Matcher::Conditions { oom, evicted, deadline } => {
            (*oom && considered.any(|c| c.reason.as_deref() == Some("OOMKilled")))
                || (*evicted && run.conditions.contains(&Condition::Evicted))
                || (*deadline && run.conditions.contains(&Condition::DeadlineExceeded))
        }
        Matcher::ExitCodes { not_in, values } => considered.any(|c| {
            let member = values.iter().any(|v| i64::from(*v) == c.exit_code);
            member != *not_in
        }),
        Matcher::TerminationMessage(p) => {
            considered.any(|c| c.message.as_deref().is_some_and(|m| !m.is_empty() && p.is_match(m)))
        }
        Matcher::PodError(p) => run.pod_error.as_deref().is_some_and(|e| !e.is_empty() && p.is_match(e)),
        Matcher::PodEvents {
            message,
            reason,
            event_type,
        } => run.events.iter().any(|e| {
            reason.as_deref().is_none_or(|r| e.reason == r)
                && e.event_type == **event_type
                && !e.message.is_empty()
                && message.is_match(&e.message)
        }),
    }
}

#[cfg(test)]
mod tests;
