//! Properties of the compiled matcher against the plain definition of docs/engines.md: the
//! rejection masks, the policy-wide regex searches, the literal prefilter and the list's
//! shared DFA each give what trying every rule's own matchers in order gives.
//!
//! The rejection masks are only a filter: on any policy and any run, the first match with
//! them is the first match of trying every rule in order (`use_masks` forced off). Policies
//! of 5–130 rules (so several 64-bit words) mixing every matcher kind, runs with several
//! containers, init containers and messages.

use proptest::prelude::*;

use super::compiled_policy::MASKED_RULES;
use super::hits::{Hits, KEPT_MESSAGES, SLOTS};
use super::list_dfa::shareable;
use super::message_regexes::{pattern_set, Alone, RegexHits, HIT_PATTERNS};
use super::pattern::Pattern;
use super::policy_list::{Covered, SharedSearch};
use super::regex_prefilter::Literals;
use super::*;
use crate::model::failure_history::{Container, Run};
use crate::model::policy::{Action, Condition, ExitCodes, Operator, RetryPolicy, Rule};
use crate::model::validate::compile_pattern;

#[test]
fn literal_pattern_fast_paths_agree_with_the_regex() {
    let texts = [
        "",
        "TRANSIENT",
        "x TRANSIENT y",
        "transient",
        "OOM at start",
        "late OOM",
        "a.b",
        "axb",
        "CUDA error: x",
        "never-1-2",
        "x never-1",
    ];
    for p in [
        "TRANSIENT",
        ".*TRANSIENT.*",
        ".*TRANSIENT",
        "TRANSIENT.*",
        "^OOM",
        "OOM",
        "a.b",
        "^a.b",
        "CUDA error",
        ".*",
        "^$",
        "(?i)transient",
        "TRANS\\.*",
        "^never-1",
        "never-1",
        ".*-1.*",
    ] {
        let fast = Pattern::new(p).unwrap();
        let slow = crate::model::validate::compile_pattern(p).unwrap();
        for t in texts {
            assert_eq!(fast.is_match(t), slow.is_match(t), "pattern {p:?} on {t:?} ({fast:?})");
        }
    }
}

/// Found by `regex_hits_are_each_regexs_is_match` (saved in proptest-regressions): an
/// anchored pattern with an optional prefix and a word boundary, on a non-ASCII message.
/// regex-automata 0.4.18's one-pass engine indexed a capture slot that a search without
/// captures does not have, and panicked; `regex::RegexSet` does the same. Both the
/// policy-wide search and the sets of larger policies are [`pattern_set`]s now.
#[test]
fn pattern_sets_answer_a_word_boundary_after_an_optional_anchored_prefix() {
    let hits = RegexHits::new(&["^a*\\b"], &[0]).unwrap();
    let set = pattern_set(&["^a*\\b"]).unwrap();
    // Go's `\b` is ASCII: `é` is no word character, so there is a boundary after `a` and
    // none at the start of `é`.
    for (message, matches) in [("é", 0), ("aé", 1), ("-", 0), ("-é", 0)] {
        assert_eq!(hits.matching(message), matches, "{message}");
        assert_eq!(u64::from(set.is_match(message)), matches, "{message}");
        assert_eq!(own_regexes_matching(&["^a*\\b"], message), matches, "{message}");
    }
}

fn arb_rule() -> impl Strategy<Value = Rule> {
    let cat = prop::option::of(prop::sample::subsequence(vec!["a", "b", "c"], 1..=2));
    let sub = prop::option::of(prop::sample::select(vec!["x", "y"]));
    let cond = prop::option::of(prop::sample::subsequence(
        vec![Condition::OOMKilled, Condition::Evicted, Condition::Preempted],
        1..=2,
    ));
    let exit = prop::option::of((prop::bool::ANY, prop::collection::vec(0i64..5, 1..3)));
    let pattern = prop::option::of(prop::sample::select(vec![
        "^OOM",
        "^Xid",
        "Xid [0-9]+",
        "M k",
        "(?i)oom",
        "^X",
        "init-fail.*x",
        "O",
        r"\bk$",
        r"^\w+ \d+$",
        "9|oo",
        // Regexes with required literals (the literal prefilter): case-insensitive,
        // alternations, a literal spanning lines.
        "(?i)xid 7",
        r"OOM\s+k|Xid 79",
        r"(?m)^Xid 79\nk",
        r"\bkilled\b",
    ]));
    let container = prop::option::of(prop::sample::select(vec!["main", "side", "i"]));
    (
        cat,
        sub,
        cond,
        exit,
        pattern,
        container,
        prop::bool::ANY,
        prop::bool::ANY,
    )
        .prop_map(|(cat, sub, cond, exit, pattern, container, init, retry)| Rule {
            action: if retry { Action::Retry } else { Action::Fail },
            on_failure_subcategory: sub.filter(|_| cat.is_some()).map(|s| vec![s.to_string()]),
            on_failure_category: cat.map(|c| c.into_iter().map(String::from).collect()),
            on_conditions: cond,
            on_exit_codes: exit.map(|(not_in, values)| ExitCodes {
                operator: if not_in { Operator::NotIn } else { Operator::In },
                values,
            }),
            on_termination_message: pattern.map(String::from),
            container_name: container.map(String::from),
            include_init_containers: init,
            ..Rule::default()
        })
}

fn arb_run() -> impl Strategy<Value = Run> {
    let container = (
        prop::sample::select(vec!["main", "side", "i", ""]),
        prop::bool::weighted(0.3),
        0i64..5,
        prop::option::of(prop::sample::select(vec!["OOMKilled", "Error"])),
        prop::option::of(prop::sample::select(vec![
            "OOM killed",
            "Xid 79",
            "xOOM k",
            "",
            "oom",
            "init-fail: x",
            "Xid abc",
            "XID 79\nk",
            "a OOM  k",
        ])),
    )
        .prop_map(|(name, init, exit_code, reason, message)| Container {
            name: name.into(),
            init,
            exit_code,
            reason: reason.map(String::from),
            message: message.map(String::from),
        });
    (
        prop::option::of(prop::sample::select(vec!["a", "b", "c", "d"])),
        prop::option::of(prop::sample::select(vec!["x", "y"])),
        prop::sample::subsequence(vec![Condition::Evicted, Condition::Preempted], 0..=2),
        // Up to 6: more messages than `MessageHits` keeps.
        prop::collection::vec(container, 0..7),
    )
        .prop_map(|(category, subcategory, conditions, containers)| Run {
            category: category.map(String::from),
            subcategory: subcategory.map(String::from),
            conditions,
            containers,
            ..Run::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn masks_pick_the_rule_trying_every_rule_picks(
        rules in prop::collection::vec(arb_rule(), 5..130),
        runs in prop::collection::vec(arb_run(), 1..8),
    ) {
        let policy = RetryPolicy { name: "p".into(), rules, ..RetryPolicy::default() };
        let masked = CompiledPolicy::new(policy).unwrap();
        prop_assert!(masked.use_masks);
        let mut plain = CompiledPolicy::new(masked.policy.clone()).unwrap();
        plain.use_masks = false;
        for run in &runs {
            let facts = RunFacts::new(run);
            prop_assert_eq!(masked.first_match(&facts, Alone), plain.first_match(&facts, Alone), "run {:?}", run);
        }
    }

    /// One multi-pattern search answers, for every pattern, what that pattern's own
    /// regex (`compile_pattern`, the rule's `Pattern::Regex`) answers with `is_match`:
    /// anchors, word boundaries (Unicode and ASCII), flags, empty matches, alternations,
    /// patterns that match anywhere, on messages with multi-byte characters and lines.
    #[test]
    fn regex_hits_are_each_regexs_is_match(
        patterns in arb_compiling_patterns(),
        messages in prop::collection::vec(arb_message(), 1..8),
    ) {
        let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
        let ids: Vec<usize> = (0..refs.len()).collect();
        // Too large to build together (64 Unicode `\w+`, say) is a real answer: the
        // policy then keeps its pattern sets, which the mask property above covers.
        let hits = RegexHits::new(&refs, &ids);
        prop_assume!(hits.is_some());
        let hits = hits.unwrap();
        let own = OwnRegexes::new(&refs);
        for m in &messages {
            let want = own.matching(m);
            prop_assert_eq!(hits.matching(m), want, "message {:?}, patterns {:?}", m, refs);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The literal prefilter never rejects a rule whose regex matches: for every message,
    /// each pattern whose own regex matches it is among the possible ones. (Which rules it
    /// rejects is a matter of speed; `regex_prefilter::tests` checks it rejects the ones it should.)
    #[test]
    fn literals_keep_every_rule_whose_regex_matches(
        patterns in arb_compiling_patterns(),
        messages in prop::collection::vec(arb_message(), 1..8),
    ) {
        let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
        let ids: Vec<usize> = (0..refs.len()).collect();
        let Some(literals) = Literals::new(&refs, &ids) else {
            // No pattern has a literal: every rule is always possible, nothing to check.
            return Ok(());
        };
        let own = OwnRegexes::new(&refs);
        for m in &messages {
            let matching = own.matching(m);
            let possible = literals.possible(m);
            prop_assert_eq!(matching & !possible, 0, "message {:?}, patterns {:?}", m, refs);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// The list's one search (`SharedRegexes`) answers, for every regex message rule of
    /// every policy it covers, what that rule's own regex (`compile_pattern`) answers with
    /// `is_match` over the messages the rule reads: non-init containers' (`plain`), and
    /// init containers' too when some rule includes them (`any`); and it lists the messages
    /// with a match in container order. The patterns are split over one to three policies;
    /// half the time each is anchored (`^`), which gives the DFA literal runs to skip.
    #[test]
    fn shared_regexes_hit_as_each_regex(
        patterns in arb_compiling_patterns(),
        anchored in prop::bool::ANY,
        parts in 1usize..=3,
        init_rules in prop::collection::vec(prop::bool::ANY, 64),
        messages in prop::collection::vec((prop::bool::ANY, prop::option::of(arb_message())), 0..7),
    ) {
        let patterns: Vec<String> = if anchored {
            patterns.iter().map(|p| format!("^{p}")).collect()
        } else {
            patterns
        };
        let size = patterns.len().div_ceil(parts);
        let compiled = catalog_policies(patterns.chunks(size), &init_rules);
        let list: Vec<&CompiledPolicy> = compiled.iter().collect();
        let run = run_of_messages(&messages);
        let Some(shared) = SharedRegexes::new(&list) else {
            // No policy has a regex rule the search can take (all literal, or all able to
            // match the empty string): nothing to check.
            return Ok(());
        };
        let mut hits = Hits::NONE;
        if !shared.search(&run, &mut hits) {
            // The DFA gave up (a Unicode `\b` next to a non-ASCII byte) or is too large:
            // the policies then answer by their own path, which the properties above cover.
            return Ok(());
        }
        let with_init = list
            .iter()
            .enumerate()
            .filter(|(p, _)| shared.slot(*p).is_some())
            .any(|(_, cp)| cp.shared_regex_rules().iter().any(|&(_, init, _)| init));
        let searched: Vec<(u32, bool, &str)> = run
            .containers
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.init || with_init)
            .filter_map(|(i, c)| Some((i as u32, c.init, c.message.as_deref().filter(|m| !m.is_empty())?)))
            .collect();
        let mut kept = vec![Vec::new(); SLOTS];
        for (p, cp) in list.iter().enumerate() {
            let Some(slot) = shared.slot(p) else { continue };
            let rules = cp.shared_regex_rules();
            let regexes: Vec<_> = rules.iter().map(|(_, _, pattern)| compile_pattern(pattern).unwrap()).collect();
            let own = |m: &str| {
                rules
                    .iter()
                    .zip(&regexes)
                    .filter(|(_, regex)| regex.is_match(m))
                    .fold(0u64, |out, (&(i, _, _), _)| out | 1 << i)
            };
            let (mut plain, mut any) = (0, 0);
            for &(i, init, m) in &searched {
                let bits = own(m);
                if init { any |= bits } else { plain |= bits }
                kept[slot].push((i, init, bits));
            }
            prop_assert_eq!(hits.plain[slot], plain, "policy {}, run {:?}", p, run);
            prop_assert_eq!(hits.any[slot], plain | any, "policy {}, run {:?}", p, run);
        }
        // The messages with a match for some policy, in container order.
        let expected: Vec<(u32, bool, [u64; SLOTS])> = searched
            .iter()
            .enumerate()
            .map(|(k, &(i, init, _))| {
                let mut bits = [0u64; SLOTS];
                for (slot, found) in kept.iter().enumerate() {
                    if let Some(&(_, _, b)) = found.get(k) {
                        bits[slot] = b;
                    }
                }
                (i, init, bits)
            })
            .filter(|(_, _, bits)| *bits != [0; SLOTS])
            .collect();
        prop_assert_eq!(hits.len, expected.len(), "run {:?}", run);
        let n = expected.len().min(KEPT_MESSAGES);
        prop_assert_eq!(&hits.at[..n], &expected[..n], "run {:?}", run);
    }

    /// Policies of regex message rules only (`pure_regex`, their candidates straight from
    /// the shared search): the first match, and the message its signal names, are the
    /// ones each policy finds on its own.
    #[test]
    fn pure_regex_policies_pick_what_each_policy_picks(
        patterns in arb_compiling_patterns(),
        anchored in prop::bool::ANY,
        parts in 1usize..=3,
        init_rules in prop::collection::vec(prop::bool::ANY, 64),
        messages in prop::collection::vec((prop::bool::ANY, prop::option::of(arb_message())), 0..7),
    ) {
        // Real regexes only (a literal pattern is a `Pattern::Contains`, not in the search).
        let patterns: Vec<String> = patterns
            .iter()
            .map(|p| if anchored { format!("^{p}") } else { p.clone() })
            .filter(|p| matches!(Pattern::new(p), Ok(Pattern::Regex(_))))
            // and none that can match the empty string (it keeps its policy's own path).
            .filter(|p| shareable(p))
            .collect();
        prop_assume!(patterns.len() > MASKED_RULES);
        let compiled = catalog_policies(patterns.chunks(patterns.len().div_ceil(parts).max(MASKED_RULES + 1)), &init_rules);
        let list: Vec<&CompiledPolicy> = compiled.iter().collect();
        let run = run_of_messages(&messages);
        prop_assert!(compiled[0].pure_regex);
        let shared = SharedRegexes::new(&list);
        prop_assert!(shared.as_ref().is_some_and(|s| s.slot(0).is_some()));
        let facts = RunFacts::new(&run);
        let first = |shared: Option<&SharedRegexes>| {
            let mut search = shared.map(SharedSearch::new);
            list.iter().enumerate().find_map(|(p, cp)| {
                match (search.as_mut(), shared.and_then(|s| s.slot(p))) {
                    (Some(search), Some(slot)) => cp.first_match(&facts, Covered { search, slot }),
                    _ => cp.first_match(&facts, Alone),
                }
                .map(|(r, signal)| (p, r, signal))
            })
        };
        prop_assert_eq!(first(shared.as_ref()), first(None), "run {:?}", run);
    }

    /// The whole first match across a list of policies is the same with the list's shared
    /// search and with each policy's own (literal scan, multi-pattern search, a rule's own
    /// regex): the rule, and the message its signal names.
    #[test]
    fn shared_regexes_pick_what_each_policy_picks(
        policies in prop::collection::vec(prop::collection::vec(arb_rule(), 5..40), 1..4),
        anchored in prop::bool::ANY,
        runs in prop::collection::vec(arb_run(), 1..8),
    ) {
        let compiled: Vec<CompiledPolicy> = policies
            .into_iter()
            .enumerate()
            .map(|(k, mut rules)| {
                // Half the time every pattern anchored, so that the DFA covers the policies.
                for r in rules.iter_mut().filter(|_| anchored) {
                    r.on_termination_message =
                        r.on_termination_message.take().map(|p| if p.starts_with('^') { p } else { format!("^{p}") });
                }
                CompiledPolicy::new(RetryPolicy { name: format!("p{k}"), rules, ..RetryPolicy::default() }).unwrap()
            })
            .collect();
        let list: Vec<&CompiledPolicy> = compiled.iter().collect();
        let shared = SharedRegexes::new(&list);
        let first = |shared: Option<&SharedRegexes>, facts: &RunFacts<'_>| {
            let mut search = shared.map(SharedSearch::new);
            list.iter().enumerate().find_map(|(p, cp)| {
                match (search.as_mut(), shared.and_then(|s| s.slot(p))) {
                    (Some(search), Some(slot)) => cp.first_match(facts, Covered { search, slot }),
                    _ => cp.first_match(facts, Alone),
                }
                .map(|(r, signal)| (p, r, signal))
            })
        };
        for run in &runs {
            let facts = RunFacts::new(run);
            prop_assert_eq!(first(shared.as_ref(), &facts), first(None, &facts), "run {:?}", run);
        }
    }
}

/// One policy per chunk of `patterns` (`p0`, `p1`…), each pattern a retrying message
/// rule, `includeInitContainers` from `init_rules` by its place in its chunk.
fn catalog_policies<'a>(chunks: impl Iterator<Item = &'a [String]>, init_rules: &[bool]) -> Vec<CompiledPolicy> {
    chunks
        .enumerate()
        .map(|(k, chunk)| {
            let rules = chunk
                .iter()
                .enumerate()
                .map(|(i, p)| Rule {
                    action: Action::Retry,
                    on_termination_message: Some(p.clone()),
                    include_init_containers: init_rules[i],
                    ..Rule::default()
                })
                .collect();
            CompiledPolicy::new(RetryPolicy {
                name: format!("p{k}"),
                rules,
                ..RetryPolicy::default()
            })
            .unwrap()
        })
        .collect()
}

/// A run with one container per message (`c0`, `c1`…): (init container, message).
fn run_of_messages(messages: &[(bool, Option<String>)]) -> Run {
    Run {
        containers: messages
            .iter()
            .enumerate()
            .map(|(i, (init, m))| Container {
                name: format!("c{i}"),
                init: *init,
                message: m.clone(),
                ..Container::default()
            })
            .collect(),
        ..Run::default()
    }
}

/// 1–`HIT_PATTERNS` patterns, those that compile as a rule's regex (at least one): the
/// regex properties above take them.
fn arb_compiling_patterns() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(arb_pattern(), 1..=HIT_PATTERNS)
        .prop_map(|ps| {
            ps.into_iter()
                .filter(|p| compile_pattern(p).is_ok())
                .collect::<Vec<_>>()
        })
        .prop_filter("no pattern compiles", |ps| !ps.is_empty())
}

/// The patterns whose own regex (`compile_pattern`, a rule's `Pattern::Regex`) matches
/// `m`, as a mask by position: what both properties above compare with.
fn own_regexes_matching(patterns: &[&str], m: &str) -> u64 {
    OwnRegexes::new(patterns).matching(m)
}

/// Each pattern's own regex (`compile_pattern`), compiled once for all the messages of a case:
/// compiling them again for each message made these properties minutes of a test run, and
/// answered nothing more.
struct OwnRegexes(Vec<regex::Regex>);

impl OwnRegexes {
    fn new<P: AsRef<str>>(patterns: &[P]) -> OwnRegexes {
        OwnRegexes(patterns.iter().map(|p| compile_pattern(p.as_ref()).unwrap()).collect())
    }

    /// The patterns whose regex matches `m`, as a mask by position.
    fn matching(&self, m: &str) -> u64 {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_match(m))
            .fold(0u64, |out, (k, _)| out | 1 << k)
    }
}

/// A message from pieces: random characters (ASCII, multi-byte, newlines) and the
/// literals `arb_pattern` uses, in other cases too, so literal patterns match often.
fn arb_message() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z0-9 :._é∂αΣ\n-]{0,6}",
        prop::sample::select(vec![
            "Xid ",
            "XID ",
            "xid",
            "rule 1:",
            "RULE 1:",
            "ECC error",
            "ecc ERROR",
            "k\nx",
            "K\nX",
            "ÉC",
            "éc",
            "ok",
            "ſ",
            "\u{212A}",
            "policy 2",
        ])
        .prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

/// A pattern from pieces: an optional anchor or flag, one to three atoms, an optional end.
fn arb_pattern() -> impl Strategy<Value = String> {
    let start = prop::sample::select(vec![
        "",
        "",
        "^",
        r"\A",
        "(?m)^",
        "(?i)",
        r"\b",
        r"(?-u:\b)",
        r"\B",
        "(?s)",
    ]);
    let atom = prop::sample::select(vec![
        "Xid",
        "[0-9]+",
        r"\d+",
        r"\w+",
        r"\W",
        "a*",
        "",
        ".",
        ".*",
        "x|y",
        "(oo|O)",
        "é",
        r"\p{Greek}",
        r"(?-u:\B)",
        r"\s",
        "[^a]",
        "b?",
        "(?i:s)",
        "Σ",
        "-",
        // Literals for the prefilter (`regex_prefilter::required`): long enough to be searched,
        // case variants, non-ASCII letters, a newline inside.
        "Xid ",
        "rule 1:",
        "(?i:ecc error)",
        "[Xx]id",
        "k\nx",
        "(?i)éc",
        "ok|Xid ",
    ]);
    let end = prop::sample::select(vec!["", "", "$", r"\z", "(?m)$", r"\b", r"\B"]);
    (start, prop::collection::vec(atom, 1..=3), end).prop_map(|(s, atoms, e)| format!("{s}{}{e}", atoms.concat()))
}

/// Found by `regex_hits_are_each_regexs_is_match` (saved in proptest-regressions): regex-automata
/// 0.4's `is_match` of a set with `utf8_empty` said no match for `_é0` although a pattern of
/// two word characters or more matched it: the other pattern's empty match inside `é` (Go's
/// `\B`, ASCII: both bytes of `é` are no word characters) was skipped by resuming the search
/// after it. Every answer here is each pattern's own `Regex::is_match`.
#[test]
fn a_set_finds_a_match_begun_before_an_empty_match_that_splits_a_character() {
    let patterns = ["[_é0a-z]+[_é0a-z]+", "(?i)\\B"];
    let hits = RegexHits::new(&patterns, &[0, 1]).unwrap();
    let set = pattern_set(&patterns).unwrap();
    for (message, matches) in [("_é0", 0b01), ("é", 0b10), ("ab", 0b11), ("a", 0b00), ("a-", 0b10)] {
        assert_eq!(own_regexes_matching(&patterns, message), matches, "{message}");
        assert_eq!(hits.matching(message), matches, "{message}");
        assert_eq!(set.is_match(message), matches != 0, "{message}");
    }
}

/// The deepest patterns a rule may have (`go_regex`'s tests: 300 nested groups, and
/// the most nested shapes within 1,024 bytes) build in every engine a rule's pattern goes to —
/// the rule's own regex, a policy's set and its hits, the list's DFA, the literal prefilter,
/// which walks the tree recursively — on a thread of the default 2 MiB stack, as the replay's
/// workers have, and each answers as the rule's own regex.
#[test]
fn deep_patterns_build_every_engine_on_a_small_stack() {
    for (p, text) in crate::model::go_regex::tests::deep_patterns() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let own = Pattern::new(&p).unwrap_or_else(|e| panic!("{e}"));
                assert!(own.is_match(&text));
                let refs = [p.as_str()];
                assert!(pattern_set(&refs).unwrap().is_match(&text));
                assert_eq!(RegexHits::new(&refs, &[0]).unwrap().matching(&text), 1);
                let _ = regex_prefilter::required(&p, true);
                let _ = Literals::new(&refs, &[0]);
                let anchored: Box<str> = format!("^(?:{p})").into();
                assert!(shareable(&anchored));
                assert!(super::list_dfa::build(&[anchored]).is_some());
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
