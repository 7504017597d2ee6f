//! The proposal (docs/reference/suggest.md "The proposal"): each signature's counts → a rule
//! a reader can recompute, and the rules in the policy's order.
//!
//! Owns: the rule (minimum trials, the futile rate, the limit by depth, `avoidSameNode` on
//! evidence), which signatures get no rule of their own and why, and the order. Pure: it
//! reads [`SignatureStats`] and writes no document (that is `documents`).

use std::cmp::Ordering;

use crate::engine::EngineKind;
use crate::model::policy::{Action, Condition};
use crate::model::validate::{category_problem, name_problem, MAX_PATTERN_BYTES};
use crate::replay::estimate::{wilson, Tally, DEPTHS, MIN_TRIALS, Z95};

use super::pattern::{pod_error_too_long, too_long};
use super::stats::SignatureStats;
use crate::model::signature::{Signature, CONDITIONS};

/// `--min-trials`, `--futile`, `--max-limit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Knobs {
    pub min_trials: u64,
    pub futile: f64,
    pub max_limit: u32,
    /// `--extrapolate`: a depth with fewer than [`MIN_TRIALS`] trials reads the signature's
    /// overall share instead of ending the limit.
    pub extrapolate: bool,
}

impl Default for Knobs {
    fn default() -> Knobs {
        Knobs {
            min_trials: 20,
            futile: 0.05,
            max_limit: 5,
            extrapolate: false,
        }
    }
}

/// The largest `--max-limit`.
pub const MAX_LIMIT: u32 = 10_000;

/// A proposed rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposed {
    pub text: String,
    pub signature: Signature,
    pub action: Action,
    /// `None` for a Fail rule.
    pub limit: Option<u32>,
    pub avoid_same_node: bool,
    /// `--extrapolate` took its limit past the depths with evidence of their own: the
    /// deepest that had some.
    pub extrapolated_from: Option<u32>,
    /// GPU and CPU time of its failed runs and the runs after them (for the order).
    pub gpu: u128,
    pub cpu: u128,
    /// Some run's first line was longer than the template: the pattern is not anchored at
    /// the line's end.
    pub cut: bool,
    /// A thin signature today's default decided, given a rule that writes today's decision
    /// because the proposal's default differs (docs/reference/suggest.md "The policy's
    /// defaults"): why it has no rule of its own learned.
    pub as_today: Option<NoRule>,
}

/// Why a signature gets no rule of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRule {
    TooFewTrials {
        trials: u64,
        min: u64,
    },
    /// `unknown` and `other`: nothing to match on.
    NoSignal,
    /// The design dialect has no matcher for a pod error.
    PodErrorInDesign,
    /// An unnamed init container cannot be selected.
    UnnamedInit,
    /// An exit code `validate` refuses (outside 1–255).
    ExitCode(i64),
    /// Upstream's executor cannot categorize a preemption or an unschedulable pod.
    NotCategorizable(Condition),
    /// Its first retry has fewer than [`MIN_TRIALS`] trials: no depth has evidence of its own.
    ThinFirstRetry {
        trials: u64,
    },
    /// A name the rule would have to hold that `validate` refuses there.
    Unwritable {
        field: NameField,
        name: String,
    },
    /// Its message's pattern is longer than a rule's may be (`validate` refuses it): so many
    /// masks that their classes outgrow the limit.
    PatternTooLong {
        bytes: usize,
    },
    /// The documents have no room for it: signatures with more GPU- then CPU-hours (and the
    /// rules the proposal keeps or builds on) take every place a limit leaves.
    NoRoom(Full),
    /// A `Fail` or a cut limit whose futile trials all lie on one UTC day (days since
    /// 1970-01-01): one bad day is no rule (docs/reference/suggest.md "A Fail needs more than
    /// one day").
    FutilityOneDay {
        day: i64,
    },
    /// Retried today, and every retry collided with the failed pod the executor keeps: no
    /// trial left, and the retry stays, its category's pods deleted (upstream).
    RetriesCollide,
    /// `--keep-categorizer`: its rule needs a deployed category split (some of its runs are
    /// in one), or a deployed category's action changed (a retried pod must not keep its
    /// name).
    KeepCategorizer,
}

/// The limit a proposal's documents reach first ([`Room`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// A policy's rules (`validate`: at most 100): `kept` of them today's.
    PolicyRules { kept: usize },
    /// The categorizer's categories (at most 1,000): `deployed` of them the deployed config's.
    Categories { deployed: usize },
    /// The categorizer's rules (at most 4,000): `deployed` of them the deployed config's.
    CategorizerRules { deployed: usize },
}

/// How many rules a proposal may add: what the tightest of the documents' limits leaves.
/// Each proposed rule is counted as a rule of the policy and, upstream, as a new category
/// with one rule, the most it can take (signatures that share a category take fewer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub rules: usize,
    pub full: Full,
}

impl Room {
    /// The room a policy of `kept` rules of today's leaves, and upstream (`deployed`: the
    /// deployed categorizer's categories and rules, `(0, 0)` without one) the categorizer's.
    pub fn new(kept: usize, upstream: Option<(usize, usize)>) -> Room {
        use crate::model::categorizer::{MAX_CATEGORIES, MAX_RULES as MAX_CATEGORIZER_RULES};
        use crate::model::validate::MAX_RULES;
        let mut room = Room {
            rules: MAX_RULES.saturating_sub(kept),
            full: Full::PolicyRules { kept },
        };
        if let Some((categories, rules)) = upstream {
            for (left, full) in [
                (
                    MAX_CATEGORIES.saturating_sub(categories),
                    Full::Categories { deployed: categories },
                ),
                (
                    MAX_CATEGORIZER_RULES.saturating_sub(rules),
                    Full::CategorizerRules { deployed: rules },
                ),
            ] {
                if left < room.rules {
                    room = Room { rules: left, full };
                }
            }
        }
        room
    }
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::diag::thousands;
        use crate::model::{categorizer, validate};
        // Whose places, how many, of what, and who holds some besides the proposal's rules.
        let (whose, max, of, held, by) = match *self {
            Full::PolicyRules { kept } => (
                "the policy's",
                validate::MAX_RULES,
                "rules",
                kept,
                "of today's it keeps",
            ),
            Full::Categories { deployed } => (
                "the categorizer's",
                categorizer::MAX_CATEGORIES,
                "categories",
                deployed,
                "deployed",
            ),
            Full::CategorizerRules { deployed } => (
                "the categorizer's",
                categorizer::MAX_RULES,
                "rules",
                deployed,
                "deployed",
            ),
        };
        write!(f, "{whose} {} {of} are taken by ", thousands(max as u64))?;
        if held > 0 {
            write!(f, "the {} {by} and by ", thousands(held as u64))?;
        }
        f.write_str("signatures with more GPU- then CPU-hours")
    }
}

/// Where a rule would write a signature's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameField {
    /// `containerName` (the design dialect; upstream's categorizer takes any).
    Container,
    /// `onFailureCategory` (upstream: `onCategory`).
    Category,
    /// `onFailureSubcategory` (upstream: `onSubcategory`).
    Subcategory,
}

impl NameField {
    fn words(self) -> (&'static str, &'static str) {
        match self {
            NameField::Container => ("container", "container name"),
            NameField::Category => ("category", "category"),
            NameField::Subcategory => ("subcategory", "subcategory"),
        }
    }
}

impl std::fmt::Display for NoRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoRule::TooFewTrials { trials, min } => write!(f, "{trials} trials, fewer than --min-trials {min}"),
            NoRule::NoSignal => f.write_str("no signal to match on"),
            NoRule::PodErrorInDesign => {
                f.write_str("the design dialect has no pod-error matcher (--engine upstream has)")
            }
            NoRule::UnnamedInit => f.write_str("an unnamed init container cannot be selected by name"),
            NoRule::ExitCode(code) => write!(f, "exit code {code} cannot be matched (rules take 1 to 255)"),
            NoRule::NotCategorizable(c) => write!(f, "the executor cannot categorize `{}`", c.as_str()),
            NoRule::ThinFirstRetry { trials } => {
                write!(f, "{trials} trials of a first retry, fewer than {MIN_TRIALS}")
            }
            NoRule::Unwritable { field, name } => {
                let (what, kind) = field.words();
                write!(f, "{what} {} is not a valid {kind} in a rule", crate::diag::quote(name))
            }
            NoRule::PatternTooLong { bytes } => write!(
                f,
                "its message's pattern would be {bytes} bytes, and a rule takes at most {MAX_PATTERN_BYTES}"
            ),
            NoRule::NoRoom(full) => write!(f, "{full}"),
            NoRule::FutilityOneDay { day } => {
                let date = crate::model::failure_history::Timestamp(day.saturating_mul(86_400_000_000_000)).to_string();
                write!(
                    f,
                    "futility on one day: {}",
                    &date[..date.find('T').unwrap_or(date.len())]
                )
            }
            NoRule::RetriesCollide => f.write_str("retries collide: the executor keeps its pods"),
            NoRule::KeepCategorizer => {
                f.write_str("--keep-categorizer: its rule needs a deployed category split or its action changed")
            }
        }
    }
}

/// A signature's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Rule(Proposed),
    None(NoRule),
}

/// p(s, d): the share at depth `d` (1-based; 5 and more use `5+`), or the signature's
/// overall share when that depth has fewer than [`MIN_TRIALS`] trials.
pub fn p_at(stats: &SignatureStats, d: u32) -> f64 {
    let t = stats.by_depth[(d.clamp(1, DEPTHS as u32) - 1) as usize];
    let t = if t.trials < MIN_TRIALS { stats.trials } else { t };
    if t.trials == 0 {
        0.0
    } else {
        t.successes as f64 / t.trials as f64
    }
}

/// A signature's retry limit, and whether it reaches past the depths with evidence of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub depth: u32,
    /// `--extrapolate` took the limit past the deepest depth with evidence of its own (this
    /// one, 0 when even the first retry had fewer than [`MIN_TRIALS`] trials).
    pub extrapolated_from: Option<u32>,
}

/// The deepest depth `d` such that every depth from 1 to `d` has at least [`MIN_TRIALS`]
/// trials of its own (past 5, the `5+` count is no depth's own: never), at most `max_limit`.
pub fn evidenced_depth(stats: &SignatureStats, max_limit: u32) -> u32 {
    (1..=max_limit.min(DEPTHS as u32))
        .take_while(|&d| stats.by_depth[(d - 1) as usize].trials >= MIN_TRIALS)
        .count() as u32
}

/// The deepest depth, up to `max_limit` (and 5: past it no depth has a count of its own), at
/// which the record has a trial at all: today's policy retried there.
pub fn tried_depth(stats: &SignatureStats, max_limit: u32) -> u32 {
    (1..=max_limit.min(DEPTHS as u32))
        .filter(|&d| stats.by_depth[(d - 1) as usize].trials > 0)
        .max()
        .unwrap_or(0)
}

/// The limit (docs/reference/suggest.md "The limit"): the deepest depth `d` ≤ `max_limit`
/// with evidence of its own at every depth from 1 to `d` ([`evidenced_depth`]) where p(s, d)
/// ≥ `futile` (a futile first retry does not end it when a deeper one pays: a job that needs
/// two retries keeps them); 0 when there is none. Past the evidence the signature is decided
/// as today: when the deepest depth with evidence pays, the limit reaches the deepest depth
/// today's policy retried in the record ([`tried_depth`]), so that no job today's policy
/// retried there loses that retry; a depth never tried raises nothing. With
/// `--extrapolate`, every depth up to `max_limit` counts, a thin one reading the signature's
/// overall share ([`p_at`]), and the limit says where its own evidence ended.
pub fn limit(stats: &SignatureStats, knobs: &Knobs) -> Limit {
    let evidenced = evidenced_depth(stats, knobs.max_limit);
    let by_evidence = (1..=evidenced)
        .rev()
        .find(|&d| p_at(stats, d) >= knobs.futile)
        .unwrap_or(0);
    let as_today = if by_evidence == evidenced {
        by_evidence.max(tried_depth(stats, knobs.max_limit))
    } else {
        by_evidence
    };
    if !knobs.extrapolate {
        return Limit {
            depth: as_today,
            extrapolated_from: None,
        };
    }
    let depth = (1..=knobs.max_limit)
        .rev()
        .find(|&d| p_at(stats, d) >= knobs.futile)
        .unwrap_or(0)
        .max(as_today);
    Limit {
        depth,
        extrapolated_from: (depth > as_today).then_some(evidenced),
    }
}

/// The least gain of a retry on another node over one on the same node, in points of success
/// rate, that `avoidSameNode` is proposed for: a significant gain of a point or two is not
/// worth a job's shrinking choice of nodes (docs/reference/suggest.md "The rule").
pub const AVOID_SAME_NODE_MIN_POINTS: u64 = 10;

/// `avoidSameNode`: both kinds of retry have 5 trials or more, the other-node rate is at
/// least [`AVOID_SAME_NODE_MIN_POINTS`] points above the same-node one, and significantly so
/// (the other-node interval lies wholly above the same-node one).
pub fn avoid_same_node(stats: &SignatureStats) -> bool {
    let (same, other): (Tally, Tally) = (stats.same_node, stats.other_node);
    if same.trials < MIN_TRIALS || other.trials < MIN_TRIALS {
        return false;
    }
    // other/o − same/s ≥ points/100, in integers: a float difference of 0.6 and 0.5 falls
    // short of 0.1.
    let gain = u128::from(other.successes) * u128::from(same.trials) * 100;
    let loss = u128::from(same.successes) * u128::from(other.trials) * 100;
    let needed = u128::from(AVOID_SAME_NODE_MIN_POINTS) * u128::from(same.trials) * u128::from(other.trials);
    if gain < loss + needed {
        return false;
    }
    let (_, same_high) = wilson(same.successes, same.trials, Z95);
    let (other_low, _) = wilson(other.successes, other.trials, Z95);
    other_low > same_high
}

/// Whether the signature can have a rule of its own under `engine`.
fn matchable(sig: Option<&Signature>, engine: EngineKind) -> Result<(), NoRule> {
    match sig {
        None | Some(Signature::Unknown) => Err(NoRule::NoSignal),
        Some(Signature::PodError { .. }) if engine == EngineKind::Design => Err(NoRule::PodErrorInDesign),
        Some(Signature::Container { init: true, name, .. }) if name.is_empty() => Err(NoRule::UnnamedInit),
        Some(Signature::Container { exit: Some(code), .. }) if !(1..=255).contains(code) => {
            Err(NoRule::ExitCode(*code))
        }
        Some(Signature::Condition(c @ (Condition::Preempted | Condition::Unschedulable)))
            if engine == EngineKind::Upstream =>
        {
            Err(NoRule::NotCategorizable(*c))
        }
        // What the design rule writes as `containerName` (an unnamed container, none).
        Some(Signature::Container { name, .. })
            if engine == EngineKind::Design && !name.is_empty() && name_problem(name).is_some() =>
        {
            Err(NoRule::Unwritable {
                field: NameField::Container,
                name: name.clone(),
            })
        }
        // A category is written as it was recorded, in both dialects' rules.
        Some(Signature::Category { category, subcategory }) => {
            let unwritable = |field, name: &str| {
                category_problem(name).map(|_| NoRule::Unwritable {
                    field,
                    name: name.to_string(),
                })
            };
            match unwritable(NameField::Category, category).or_else(|| {
                subcategory
                    .as_deref()
                    .and_then(|s| unwritable(NameField::Subcategory, s))
            }) {
                Some(why) => Err(why),
                None => Ok(()),
            }
        }
        Some(_) => Ok(()),
    }
}

/// Whether the pattern of the signature's message, as the documents would write it (design:
/// `onTerminationMessage`; upstream: the categorizer's `onTerminationMessage` or
/// `onPodError`), is one a rule can hold. `cut`: some run's first line was cut, as the rule's.
fn pattern_fits(sig: Option<&Signature>, cut: bool) -> Result<(), NoRule> {
    match sig {
        Some(Signature::Container { template, .. }) if !template.is_empty() => match too_long(template, cut) {
            Some(bytes) => Err(NoRule::PatternTooLong { bytes }),
            None => Ok(()),
        },
        Some(Signature::PodError { template, .. }) if !template.is_empty() => match pod_error_too_long(template, cut) {
            Some(bytes) => Err(NoRule::PatternTooLong { bytes }),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// One signature's verdict.
pub fn verdict(stats: &SignatureStats, knobs: &Knobs, engine: EngineKind) -> Verdict {
    if let Err(why) =
        matchable(stats.signature.as_ref(), engine).and_then(|()| pattern_fits(stats.signature.as_ref(), stats.cut))
    {
        return Verdict::None(why);
    }
    // Every retry collided (docs/reference/suggest.md "A collided retry is no trial"): today's
    // Retry stays, the pods it collides with deleted.
    if stats.trials.trials == 0 && stats.collided > 0 && retried_today(stats) {
        return Verdict::None(NoRule::RetriesCollide);
    }
    let mut v = learned(stats, knobs);
    // A signature's retry may avoid the node it failed on; the default's never does.
    if let Verdict::Rule(p) = &mut v {
        p.avoid_same_node = p.action == Action::Retry && avoid_same_node(stats);
    }
    v
}

/// What a signature's counts (or the default's pooled ones, text [`DEFAULT`]) say of
/// retrying, by the limit rule: `Retry` with [`limit`], or `Fail` when it is 0; nothing, and
/// why, when the evidence is thin (fewer than `--min-trials` trials, or no depth with evidence
/// of its own): today's decision stays.
fn learned(stats: &SignatureStats, knobs: &Knobs) -> Verdict {
    if stats.trials.trials < knobs.min_trials {
        return Verdict::None(NoRule::TooFewTrials {
            trials: stats.trials.trials,
            min: knobs.min_trials,
        });
    }
    // No depth with evidence of its own: nothing says a retry pays or does not (unless
    // `--extrapolate` reads every depth as the overall share).
    if evidenced_depth(stats, knobs.max_limit) == 0 && !knobs.extrapolate {
        return Verdict::None(NoRule::ThinFirstRetry {
            trials: stats.by_depth[0].trials,
        });
    }
    let l = limit(stats, knobs);
    // A Fail or a limit below the deepest retry the record made needs futile trials on two
    // days or more: an outage of one day says nothing of the next.
    if l.depth < tried_depth(stats, knobs.max_limit) {
        if let Some(day) = stats.futile_days.one_day(l.depth as usize) {
            return Verdict::None(NoRule::FutilityOneDay { day });
        }
    }
    let action = if l.depth == 0 { Action::Fail } else { Action::Retry };
    Verdict::Rule(Proposed {
        extrapolated_from: l.extrapolated_from,
        ..Proposed::of(stats, action, (action == Action::Retry).then_some(l.depth))
    })
}

impl Proposed {
    /// A rule for `stats` (its text and signature; none: the default's, `unknown`) deciding
    /// `action` with `limit`, and nothing else: no `avoidSameNode`, no extrapolation.
    fn of(stats: &SignatureStats, action: Action, limit: Option<u32>) -> Proposed {
        Proposed {
            text: stats.text.clone(),
            signature: stats.signature.clone().unwrap_or(Signature::Unknown),
            action,
            limit,
            avoid_same_node: false,
            extrapolated_from: None,
            gpu: stats.gpu.once(),
            cpu: stats.cpu.once(),
            cut: stats.cut,
            as_today: None,
        }
    }

    /// A rule of `text` and `signature` for the documents' and the placements' tests.
    #[cfg(test)]
    pub(crate) fn for_test(text: &str, signature: Signature, action: Action, limit: Option<u32>) -> Proposed {
        Proposed {
            text: text.into(),
            signature,
            ..Proposed::of(&SignatureStats::default(), action, limit)
        }
    }
}

/// Group of a rule in the policy's order: conditions, containers with a message, containers
/// without, categories with a subcategory, bare categories, pod errors (upstream only).
fn group(sig: &Signature) -> (u8, usize) {
    match sig {
        Signature::Condition(c) => (0, CONDITIONS.iter().position(|x| x == c).unwrap_or(0)),
        Signature::Container { template, .. } if !template.is_empty() => (1, 0),
        Signature::Container { .. } => (2, 0),
        Signature::PodError { .. } => (3, 0),
        Signature::Category {
            subcategory: Some(_), ..
        } => (4, 0),
        Signature::Category { .. } => (5, 0),
        Signature::Unknown => (6, 0),
    }
}

fn container_key(sig: &Signature) -> (&str, bool) {
    match sig {
        // The container's name, then the OOM rule before exit rules.
        Signature::Container { name, exit, .. } => (name.as_str(), exit.is_some()),
        _ => ("", false),
    }
}

/// The policy's order: a total one, so that the same counts always print the same policy.
pub fn order(a: &Proposed, b: &Proposed) -> Ordering {
    group(&a.signature)
        .cmp(&group(&b.signature))
        .then_with(|| container_key(&a.signature).cmp(&container_key(&b.signature)))
        .then_with(|| {
            b.signature
                .template()
                .chars()
                .count()
                .cmp(&a.signature.template().chars().count())
        })
        .then_with(|| b.gpu.cmp(&a.gpu))
        .then_with(|| b.cpu.cmp(&a.cpu))
        .then_with(|| a.text.as_bytes().cmp(b.text.as_bytes()))
}

/// What a policy's default does with a run no rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultDecision {
    pub action: Action,
    /// A Retry default's limit.
    pub limit: Option<u32>,
}

impl DefaultDecision {
    /// Today's default, as the proposal's settings take it from the baseline (its
    /// `default_action` and `retry_limit`): a Retry default's limit is its policy's, else the
    /// global cap; no policy fails (the legacy path).
    pub fn today(default_action: Option<Action>, retry_limit: Option<u32>, global_max_retries: u32) -> DefaultDecision {
        match default_action.unwrap_or(Action::Fail) {
            Action::Retry => DefaultDecision {
                action: Action::Retry,
                limit: Some(retry_limit.unwrap_or(global_max_retries)),
            },
            Action::Fail => DefaultDecision {
                action: Action::Fail,
                limit: None,
            },
        }
    }
}

/// The text the default's row and its evidence go by.
pub const DEFAULT: &str = "(default)";

/// The proposed policy's default (docs/reference/suggest.md "The policy's defaults"): learned
/// from the runs of the signatures today's default decides and no rule of the proposal can
/// match, pooled; else today's.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// Their counts, pooled (text [`DEFAULT`]).
    pub stats: SignatureStats,
    /// The pooled signatures' texts: the default decides their runs.
    pub pooled: std::collections::HashSet<String>,
    /// Today's default, as the baseline's first policy sets it (no policy: `Fail`).
    pub today: DefaultDecision,
    /// The learned default as a rule of text [`DEFAULT`], or why today's stays.
    pub verdict: Verdict,
}

impl Defaults {
    /// What the proposal's default does.
    pub fn proposed(&self) -> DefaultDecision {
        match &self.verdict {
            Verdict::Rule(p) => DefaultDecision {
                action: p.action,
                limit: p.limit,
            },
            Verdict::None(_) => self.today,
        }
    }

    /// Whether the proposal's default is not today's.
    pub fn changes(&self) -> bool {
        self.proposed() != self.today
    }
}

/// Every signature's verdict, the rules and the default.
#[derive(Debug)]
pub struct Proposal<'a> {
    /// In `stats`' order.
    pub verdicts: Vec<(&'a SignatureStats, Verdict)>,
    /// In the policy's order.
    pub rules: Vec<Proposed>,
    pub default: Defaults,
}

/// Thin evidence: a signature decided as today for want of trials (or of trials that say
/// more than one day or more than a collision).
fn thin(why: &NoRule) -> bool {
    matches!(
        why,
        NoRule::TooFewTrials { .. }
            | NoRule::ThinFirstRetry { .. }
            | NoRule::FutilityOneDay { .. }
            | NoRule::RetriesCollide
    )
}

/// Upstream, after [`propose`]: a signature today's Retry default retried whose every retry
/// collided ([`NoRule::RetriesCollide`]) and whose runs no category takes (the baseline's side
/// sees them `none`: there is no category whose pods to delete) gets a rule writing today's
/// decision, within the room the rules leave. The proposed categorizer then gives it a category
/// of its own, whose pods a Retry rule's category deletes: the one change that lets its retries
/// run (docs/reference/suggest.md "A collided retry is no trial").
pub fn collided_uncategorized(
    verdicts: &mut [(&SignatureStats, Verdict)],
    rules: &mut Vec<Proposed>,
    room: Room,
    today: DefaultDecision,
) {
    if today.action != Action::Retry {
        return;
    }
    for (s, v) in verdicts.iter_mut() {
        if rules.len() >= room.rules {
            break;
        }
        if !matches!(v, Verdict::None(NoRule::RetriesCollide)) || !decided_by_default(s) || !uncategorized(s) {
            continue;
        }
        let p = Proposed {
            as_today: Some(NoRule::RetriesCollide),
            ..Proposed::of(s, Action::Retry, today.limit)
        };
        rules.push(p.clone());
        *v = Verdict::Rule(p);
    }
    rules.sort_by(order);
}

/// Most of the signature's failed runs have no category as the baseline's side sees them.
fn uncategorized(s: &SignatureStats) -> bool {
    s.seen
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .is_some_and(|(label, _)| label == super::stats::NO_CATEGORY)
}

/// Whether today's policy retried most of the signature's failed runs it decided.
fn retried_today(s: &SignatureStats) -> bool {
    let (mut retry, mut other) = (0u64, 0u64);
    for (c, n) in &s.current {
        match c {
            super::stats::Current::Decided {
                action: Action::Retry, ..
            } => retry += n,
            _ => other += n,
        }
    }
    retry > other
}

/// Whether today's default decided most of the signature's failed runs that today's policy
/// decided: the policy's default (`POLICY/default`), no Retry default (`fail_default`), or no
/// policy at all (the legacy path). A signature a rule of today's decides is the kept rule's,
/// and one no policy decides (a preemption) is no default's.
fn decided_by_default(s: &SignatureStats) -> bool {
    use crate::engine::DecisionKind;
    let (mut by_default, mut other) = (0u64, 0u64);
    for (c, n) in &s.current {
        if let super::stats::Current::Decided { rule, .. } = c {
            let default = rule.ends_with("/default")
                || rule == DecisionKind::FailDefault.as_str()
                || rule == DecisionKind::LegacyFail.as_str();
            match default {
                true => by_default += n,
                false => other += n,
            }
        }
    }
    by_default > other
}

/// Every signature's verdict (in `stats`' order), the rules in the policy's order and the
/// default. At most `room.rules` rules, those of the signatures with the most GPU- then
/// CPU-hours; the others' verdict is [`NoRule::NoRoom`] (decided as today). The default is
/// learned from the signatures without a rule of their own for a reason other than thin
/// evidence whose runs today's default decided (`today`); when it differs from today's, each
/// thin signature today's default decided gets a rule writing `today`, or, when the room is
/// short of them, the default stays today's.
pub fn propose<'a>(
    stats: &[&'a SignatureStats],
    knobs: &Knobs,
    engine: EngineKind,
    room: Room,
    today: DefaultDecision,
) -> Proposal<'a> {
    let mut verdicts: Vec<(&SignatureStats, Verdict)> = stats.iter().map(|s| (*s, verdict(s, knobs, engine))).collect();
    let mut ranked: Vec<(usize, &Proposed)> = verdicts
        .iter()
        .enumerate()
        .filter_map(|(i, (_, v))| match v {
            Verdict::Rule(p) => Some((i, p)),
            Verdict::None(_) => None,
        })
        .collect();
    let learned_rules = ranked.len().min(room.rules);
    if ranked.len() > room.rules {
        ranked.sort_by(|(_, a), (_, b)| {
            b.gpu
                .cmp(&a.gpu)
                .then(b.cpu.cmp(&a.cpu))
                .then_with(|| a.text.as_bytes().cmp(b.text.as_bytes()))
        });
        let no_room: Vec<usize> = ranked[room.rules..].iter().map(|(i, _)| *i).collect();
        for i in no_room {
            verdicts[i].1 = Verdict::None(NoRule::NoRoom(room.full));
        }
    }
    let default = learn_default(&mut verdicts, knobs, room, learned_rules, today);
    let mut rules: Vec<Proposed> = verdicts
        .iter()
        .filter_map(|(_, v)| match v {
            Verdict::Rule(p) => Some(p.clone()),
            Verdict::None(_) => None,
        })
        .collect();
    rules.sort_by(order);
    Proposal {
        verdicts,
        rules,
        default,
    }
}

/// The default ([`propose`]), and the rules that keep thin signatures as today when it
/// changes, set among `verdicts`.
fn learn_default(
    verdicts: &mut [(&SignatureStats, Verdict)],
    knobs: &Knobs,
    room: Room,
    rules: usize,
    today: DefaultDecision,
) -> Defaults {
    let pooled: Vec<&SignatureStats> = verdicts
        .iter()
        .filter(|(s, v)| matches!(v, Verdict::None(why) if !thin(why)) && decided_by_default(s))
        .map(|(s, _)| *s)
        .collect();
    let stats = super::stats::pooled(DEFAULT, pooled.iter().copied());
    let mut default = Defaults {
        verdict: learned(&stats, knobs),
        stats,
        pooled: pooled.iter().map(|s| s.text.clone()).collect(),
        today,
    };
    if !default.changes() {
        return default;
    }
    let thin_today: Vec<usize> = verdicts
        .iter()
        .enumerate()
        .filter(|(_, (s, v))| matches!(v, Verdict::None(why) if thin(why)) && decided_by_default(s))
        .map(|(i, _)| i)
        .collect();
    if thin_today.len() > room.rules - rules {
        default.verdict = Verdict::None(NoRule::NoRoom(room.full));
        return default;
    }
    for &i in &thin_today {
        let (s, v) = &mut verdicts[i];
        let Verdict::None(why) = v else { continue };
        // A thin signature is a matchable one (`verdict` checks that first).
        *v = Verdict::Rule(Proposed {
            as_today: Some(why.clone()),
            ..Proposed::of(s, today.action, today.limit)
        });
    }
    default
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tightest limit is the room: the policy's after today's kept rules, else upstream
    /// the categorizer's categories or rules after the deployed ones.
    #[test]
    fn the_room_is_what_the_tightest_limit_leaves() {
        assert_eq!(
            Room::new(3, None),
            Room {
                rules: 97,
                full: Full::PolicyRules { kept: 3 }
            }
        );
        assert_eq!(Room::new(3, Some((10, 10))).rules, 97);
        assert_eq!(
            Room::new(3, Some((950, 10))),
            Room {
                rules: 50,
                full: Full::Categories { deployed: 950 }
            }
        );
        assert_eq!(
            Room::new(0, Some((10, 3_990))),
            Room {
                rules: 10,
                full: Full::CategorizerRules { deployed: 3_990 }
            }
        );
        assert_eq!(Room::new(120, Some((1_200, 5_000))).rules, 0);
        assert_eq!(
            NoRule::NoRoom(Full::CategorizerRules { deployed: 3_990 }).to_string(),
            "the categorizer's 4,000 rules are taken by the 3,990 deployed and by signatures with more GPU- then CPU-hours"
        );
    }

    fn stats(depths: [(u64, u64); 5]) -> SignatureStats {
        let mut s = SignatureStats {
            text: "exit:1@main".into(),
            signature: Some(Signature::Container {
                exit: Some(1),
                name: "main".into(),
                init: false,
                template: String::new(),
                cut: false,
            }),
            ..SignatureStats::default()
        };
        for (k, (trials, successes)) in depths.into_iter().enumerate() {
            s.by_depth[k] = Tally { trials, successes };
            s.trials.trials += trials;
            s.trials.successes += successes;
        }
        s
    }

    /// `stats` under `text` and `signature`, its failed runs decided today by `rule` as `action`.
    fn decided(
        text: &str,
        signature: Option<Signature>,
        depths: [(u64, u64); 5],
        rule: &str,
        action: Action,
    ) -> SignatureStats {
        let mut s = stats(depths);
        s.text = text.into();
        s.signature = signature;
        s.failed_runs = s.trials.trials + 10;
        s.current.insert(
            super::super::stats::Current::Decided {
                rule: rule.into(),
                action,
            },
            s.failed_runs,
        );
        s
    }

    /// The default is learned from the signatures today's default decided and no rule can
    /// match; when it changes, a thin signature today's default decided keeps today's
    /// decision by a rule of its own, and one a rule of today's decides is left to it.
    #[test]
    fn the_default_is_learned_from_the_runs_no_rule_matches() {
        let k = Knobs::default();
        let fail = DefaultDecision {
            action: Action::Fail,
            limit: None,
        };
        let exit = |code| {
            Some(Signature::Container {
                exit: Some(code),
                name: "main".into(),
                init: false,
                template: String::new(),
                cut: false,
            })
        };
        let unknown = decided(
            "unknown",
            Some(Signature::Unknown),
            [(20, 10), (10, 5), (0, 0), (0, 0), (0, 0)],
            "fail_default",
            Action::Fail,
        );
        let thin = decided(
            "exit:3@main",
            exit(3),
            [(3, 2), (0, 0), (0, 0), (0, 0), (0, 0)],
            "fail_default",
            Action::Fail,
        );
        let ruled = decided(
            "exit:4@main",
            exit(4),
            [(3, 0), (0, 0), (0, 0), (0, 0), (0, 0)],
            "p/0",
            Action::Retry,
        );
        let preempted = decided(
            "condition:Preempted",
            Some(Signature::Condition(Condition::Preempted)),
            [(30, 0), (0, 0), (0, 0), (0, 0), (0, 0)],
            "preempted",
            Action::Fail,
        );
        let all = [&unknown, &thin, &ruled, &preempted];
        let p = propose(&all, &k, EngineKind::Upstream, Room::new(0, None), fail);
        assert_eq!(p.default.pooled.len(), 1, "the preemption is no default's");
        assert_eq!(
            p.default.proposed(),
            DefaultDecision {
                action: Action::Retry,
                limit: Some(2)
            }
        );
        assert!(p.default.changes());
        assert_eq!(p.rules.len(), 1);
        let r = &p.rules[0];
        assert_eq!(
            (r.text.as_str(), r.action, r.limit, r.as_today.clone()),
            (
                "exit:3@main",
                Action::Fail,
                None,
                Some(NoRule::TooFewTrials { trials: 3, min: 20 })
            )
        );
        assert_eq!(
            p.verdicts[2].1,
            Verdict::None(NoRule::TooFewTrials { trials: 3, min: 20 })
        );

        // The default learned the same as today's: nothing changes, no rule is added.
        let retry2 = DefaultDecision {
            action: Action::Retry,
            limit: Some(2),
        };
        let p = propose(&all, &k, EngineKind::Upstream, Room::new(0, None), retry2);
        assert!(!p.default.changes());
        assert!(p.rules.is_empty());

        // Too few pooled trials: today's stays, and says why.
        let few = decided(
            "unknown",
            Some(Signature::Unknown),
            [(12, 6), (0, 0), (0, 0), (0, 0), (0, 0)],
            "p/default",
            Action::Retry,
        );
        let p = propose(&[&few, &thin], &k, EngineKind::Design, Room::new(0, None), retry2);
        assert_eq!(
            p.default.verdict,
            Verdict::None(NoRule::TooFewTrials { trials: 12, min: 20 })
        );
        assert_eq!(p.default.proposed(), retry2);
        assert!(p.rules.is_empty());

        // No room for the rules that keep the thin signatures as today: today's default stays.
        let p = propose(&[&unknown, &thin], &k, EngineKind::Design, Room::new(100, None), fail);
        assert_eq!(
            p.default.verdict,
            Verdict::None(NoRule::NoRoom(Full::PolicyRules { kept: 100 }))
        );
        assert!(!p.default.changes());
        assert!(p.rules.is_empty());
    }

    #[test]
    fn the_limit_ends_where_the_evidence_ends() {
        let k = Knobs::default();
        let at = |depth, extrapolated_from| Limit {
            depth,
            extrapolated_from,
        };
        // 50%, 20%, 4%, 50%: depth 4 pays again, so the limit is 4 (a job that needs four
        // retries keeps them).
        let s = stats([(10, 5), (10, 2), (25, 1), (10, 5), (0, 0)]);
        assert_eq!(limit(&s, &k), at(4, None));
        // A futile first retry does not end the limit when a deeper one pays.
        let s = stats([(40, 1), (10, 5), (0, 0), (0, 0), (0, 0)]);
        assert_eq!(limit(&s, &k), at(2, None));
        // A futile depth with evidence ends it, whatever was tried past it.
        let s = stats([(10, 5), (10, 0), (2, 2), (0, 0), (0, 0)]);
        assert_eq!(limit(&s, &k), at(1, None));
        // Depth 2 has 4 trials: the evidence ends at depth 1, which pays; past it the
        // signature is decided as today, which retried it up to depth 5 in the record…
        let s = stats([(10, 5), (4, 0), (3, 0), (40, 9), (1, 0)]);
        assert_eq!(limit(&s, &k), at(5, None));
        assert_eq!(limit(&s, &Knobs { max_limit: 3, ..k }), at(3, None));
        // …and no further than today went: a depth never tried raises nothing…
        let s = stats([(10, 5), (3, 3), (0, 0), (0, 0), (0, 0)]);
        assert_eq!(limit(&s, &k), at(2, None));
        // …unless --extrapolate reads thin depths as the overall share.
        let x = Knobs { extrapolate: true, ..k };
        assert_eq!(limit(&s, &x), at(5, Some(1)));
        assert_eq!(limit(&s, &Knobs { max_limit: 3, ..x }), at(3, Some(1)));
        // Past 5 no depth has a count of its own: only --extrapolate goes there.
        let s = stats([(10, 5), (10, 5), (10, 5), (10, 5), (10, 5)]);
        assert_eq!(limit(&s, &Knobs { max_limit: 9, ..k }), at(5, None));
        assert_eq!(limit(&s, &Knobs { max_limit: 9, ..x }), at(9, Some(5)));
    }

    #[test]
    fn verdicts_follow_the_rule() {
        let k = Knobs::default();
        let futile = stats([(30, 1), (0, 0), (0, 0), (0, 0), (0, 0)]);
        let Verdict::Rule(p) = verdict(&futile, &k, EngineKind::Design) else {
            panic!()
        };
        assert_eq!((p.action, p.limit, p.avoid_same_node), (Action::Fail, None, false));
        let few = stats([(19, 10), (0, 0), (0, 0), (0, 0), (0, 0)]);
        assert_eq!(
            verdict(&few, &k, EngineKind::Design),
            Verdict::None(NoRule::TooFewTrials { trials: 19, min: 20 })
        );
        // Enough trials, none of them a first retry's own: decided as today.
        let deep = stats([(4, 4), (30, 30), (0, 0), (0, 0), (0, 0)]);
        assert_eq!(
            verdict(&deep, &k, EngineKind::Design),
            Verdict::None(NoRule::ThinFirstRetry { trials: 4 })
        );
        let mut good = stats([(30, 15), (10, 0), (0, 0), (0, 0), (0, 0)]);
        good.same_node = Tally {
            trials: 20,
            successes: 0,
        };
        good.other_node = Tally {
            trials: 20,
            successes: 15,
        };
        let Verdict::Rule(p) = verdict(&good, &k, EngineKind::Design) else {
            panic!()
        };
        assert_eq!((p.action, p.limit, p.avoid_same_node), (Action::Retry, Some(1), true));
        good.same_node = Tally {
            trials: 4,
            successes: 0,
        };
        let Verdict::Rule(p) = verdict(&good, &k, EngineKind::Design) else {
            panic!()
        };
        assert!(!p.avoid_same_node);
    }

    /// `avoidSameNode` needs both: 10 points or more above the same node's rate, and a
    /// significant gain. Many trials make a small gain significant; it is not proposed.
    #[test]
    fn avoid_same_node_needs_ten_points_and_significance() {
        let with = |same: (u64, u64), other: (u64, u64)| {
            let mut s = stats([(30, 15), (0, 0), (0, 0), (0, 0), (0, 0)]);
            s.same_node = Tally {
                trials: same.0,
                successes: same.1,
            };
            s.other_node = Tally {
                trials: other.0,
                successes: other.1,
            };
            avoid_same_node(&s)
        };
        // 55% against 50% on 10,000 trials each: significant, 5 points.
        assert!(!with((10_000, 5_000), (10_000, 5_500)));
        // 60% against 50%, exactly 10 points, significant.
        assert!(with((10_000, 5_000), (10_000, 6_000)));
        // 59.99%: short of 10 points.
        assert!(!with((10_000, 5_000), (10_000, 5_999)));
        // 60 points on 5 trials each is not significant; 100 points on 5 trials each is.
        assert!(!with((5, 1), (5, 4)));
        assert!(with((5, 0), (5, 5)));
        // Too few trials on one side.
        assert!(!with((4, 0), (20, 20)));
    }

    /// A message of many hex words: its pattern is past `validate`'s limit, in both dialects,
    /// whether the rule would be a Retry or a Fail; a few fit.
    #[test]
    fn a_pattern_no_rule_can_hold_gets_no_rule() {
        let k = Knobs::default();
        let with = |message: &str, depths| {
            let (template, cut) = crate::model::signature::template(message);
            let mut s = stats(depths);
            s.cut = cut;
            s.signature = Some(Signature::Container {
                exit: Some(1),
                name: "main".into(),
                init: false,
                template,
                cut,
            });
            s
        };
        let hex = ["0x1f2e3d4c"; 40].join(" ");
        for depths in [
            [(30, 15), (0, 0), (0, 0), (0, 0), (0, 0)],
            [(30, 0), (0, 0), (0, 0), (0, 0), (0, 0)],
        ] {
            let s = with(&hex, depths);
            for engine in [EngineKind::Design, EngineKind::Upstream] {
                let Verdict::None(why) = verdict(&s, &k, engine) else {
                    panic!("{engine:?}")
                };
                assert_eq!(
                    why.to_string(),
                    "its message's pattern would be 1891 bytes, and a rule takes at most 1024"
                );
            }
        }
        let few = with(&["0x1f2e3d4c"; 7].join(" "), [(30, 15), (0, 0), (0, 0), (0, 0), (0, 0)]);
        assert!(matches!(verdict(&few, &k, EngineKind::Design), Verdict::Rule(_)));
        // Upstream a pod error's pattern goes into the categorizer's `onPodError`.
        let mut pod = with(&hex, [(30, 15), (0, 0), (0, 0), (0, 0), (0, 0)]);
        pod.signature = Some(Signature::PodError {
            template: crate::model::signature::template(&hex).0,
            cut: true,
        });
        assert!(matches!(
            verdict(&pod, &k, EngineKind::Upstream),
            Verdict::None(NoRule::PatternTooLong { .. })
        ));
    }

    #[test]
    fn a_name_no_rule_can_hold_gets_no_rule() {
        let k = Knobs::default();
        let mut s = stats([(30, 15), (0, 0), (0, 0), (0, 0), (0, 0)]);
        s.signature = Some(Signature::Container {
            exit: Some(1),
            name: "Main_Upper".into(),
            init: false,
            template: String::new(),
            cut: false,
        });
        let why = NoRule::Unwritable {
            field: NameField::Container,
            name: "Main_Upper".into(),
        };
        assert_eq!(verdict(&s, &k, EngineKind::Design), Verdict::None(why.clone()));
        assert_eq!(
            why.to_string(),
            "container `Main_Upper` is not a valid container name in a rule"
        );
        // Upstream's categorizer takes any container name.
        assert!(matches!(verdict(&s, &k, EngineKind::Upstream), Verdict::Rule(_)));
        for (category, subcategory, field, name) in [
            ("gpu error", None, NameField::Category, "gpu error"),
            ("gpu", Some("x id"), NameField::Subcategory, "x id"),
        ] {
            s.signature = Some(Signature::Category {
                category: category.into(),
                subcategory: subcategory.map(str::to_string),
            });
            for engine in [EngineKind::Design, EngineKind::Upstream] {
                assert_eq!(
                    verdict(&s, &k, engine),
                    Verdict::None(NoRule::Unwritable {
                        field,
                        name: name.into()
                    })
                );
            }
        }
    }
}
