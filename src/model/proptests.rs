//! Property tests of the model: every valid policy survives being written out and read back.
//!
//! Owns: the generator of valid [`RetryPolicy`] values (arbitrary rule combinations,
//! durations, floats, strings that look like other YAML types) and the round-trip
//! property through v1 YAML (`encode` + `parse_documents`); `wire`'s tests use the same
//! generator for the JSON round trip (the model does not import `wire`). Must not: hold
//! example-based tests (those live next to the code they test).

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::document::{parse_documents, ApiVersion, Resource};
use super::duration::GoDuration;
use super::encode::{policy_document, to_yaml};
use super::policy::{
    AffinityMutation, AntiAffinityMode, Backoff, Condition, ExitCodes, MemoryBump, Mutation, Operator,
    ResourceMutation, RetryPolicy, Rule,
};
use super::validate::validate_policy;
use super::Action;

const HOUR_NS: u64 = 3600 * 1_000_000_000;

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?"
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![Just(Action::Fail), Just(Action::Retry)]
}

/// Initial delays are at most 1h and maximum delays at least 1h, so that every combination
/// a rule can inherit satisfies `maxDelay >= initialDelay`. Nanosecond precision, so the Go
/// formatting of odd values (`1h0m0.000000001s`) is exercised too.
fn backoff() -> impl Strategy<Value = Backoff> {
    (
        option::of(prop_oneof![
            Just(0),
            0..=HOUR_NS,
            (0..=3600u64).prop_map(|s| s * 1_000_000_000)
        ]),
        option::of(prop_oneof![Just(HOUR_NS), HOUR_NS..=24 * HOUR_NS]),
        option::of(prop_oneof![Just(1.0), Just(100.0), 1.0..=100.0f64]),
        option::of(prop_oneof![Just(0.0), Just(1.0), 0.0..=1.0f64]),
    )
        .prop_map(|(initial, max, multiplier, jitter)| Backoff {
            initial_delay: initial.map(GoDuration),
            max_delay: max.map(GoDuration),
            multiplier,
            jitter,
        })
}

fn anti_affinity() -> impl Strategy<Value = Option<AntiAffinityMode>> {
    option::of(prop_oneof![Just(AntiAffinityMode::None), Just(AntiAffinityMode::Node)])
}

/// Category-like strings, including ones YAML would read as another type when unquoted;
/// never a control character or a bidirectional control, which a category refuses.
fn category() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_.:/-]{1,63}",
        "[^\\s\\p{Cc}\\x{202a}-\\x{202e}\\x{2066}-\\x{2069}]{1,20}",
        prop::sample::select(vec![
            "true", "null", "~", "1.5", "0x1F", "yes", "No", "-", "*a", "&b", "!t", "%x", "@x", "`y", "#c", ":", "a:b",
            "'", "\"", "[x]", "{y}", "1e3", ".inf", "0o17", "-1",
        ])
        .prop_map(str::to_string),
    ]
}

fn unique<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        // Any text, escaped: always a valid regex, and full of YAML-significant characters.
        "\\PC{0,30}".prop_map(|s| regex::escape(&s)),
        prop::sample::select(vec![
            ".*TRANSIENT.*",
            "^exit [0-9]+$",
            r"\d+ retries",
            "(?i)cuda",
            "a|b",
            ""
        ])
        .prop_map(str::to_string),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let memory = prop_oneof![
        (1.0001..=100.0f64).prop_map(|f| MemoryBump {
            factor: Some(f),
            fixed: None
        }),
        prop::sample::select(vec!["512Mi", "1Gi", "1.5G", "100M", "2Ki", "1e3", "1"]).prop_map(|q| MemoryBump {
            factor: None,
            fixed: Some(q.to_string())
        }),
    ];
    (
        option::of(any::<bool>().prop_map(|avoid| AffinityMutation { avoid_same_node: avoid })),
        option::of(option::of(memory).prop_map(|memory| ResourceMutation { memory })),
    )
        .prop_map(|(affinity, resources)| Mutation { affinity, resources })
}

fn rule() -> impl Strategy<Value = Rule> {
    let matchers = (
        option::of(prop::sample::subsequence(Condition::ALL.to_vec(), 1..=5)),
        option::of((
            prop_oneof![Just(Operator::In), Just(Operator::NotIn)],
            vec(1..=255i64, 1..12).prop_map(unique),
        )),
        option::of(pattern()),
        option::of((
            vec(category(), 1..4).prop_map(unique),
            option::of(vec(category(), 1..3).prop_map(unique)),
        )),
    );
    let settings = (
        option::of(name()),
        any::<bool>(),
        option::of(0..=10_000u32),
        backoff(),
        anti_affinity(),
        option::of(mutation()),
    );
    (action(), matchers, settings).prop_map(
        |(action, (conditions, codes, message, categories), (container, init, limit, backoff, anti, mutate))| {
            let mut rule = Rule {
                action,
                container_name: container,
                include_init_containers: init,
                on_conditions: conditions,
                on_exit_codes: codes.map(|(operator, values)| ExitCodes { operator, values }),
                on_termination_message: message,
                on_failure_category: None,
                on_failure_subcategory: None,
                retry_limit: limit,
                backoff,
                anti_affinity: anti,
                mutate,
            };
            if let Some((category, subcategory)) = categories {
                rule.on_failure_category = Some(category);
                rule.on_failure_subcategory = subcategory;
            }
            if !rule.has_matcher() {
                rule.on_conditions = Some(vec![Condition::Evicted]);
            }
            rule
        },
    )
}

pub(crate) fn policy() -> impl Strategy<Value = RetryPolicy> {
    (
        name(),
        option::of(0..=10_000u32),
        option::of(action()),
        backoff(),
        anti_affinity(),
        vec(rule(), 0..8),
    )
        .prop_map(
            |(name, retry_limit, default_action, backoff, anti_affinity, rules)| RetryPolicy {
                name,
                retry_limit,
                default_action,
                backoff,
                anti_affinity,
                rules,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn valid_policy_round_trips_through_v1_yaml(policy in policy()) {
        // The generator makes valid policies only; otherwise the property says nothing.
        let problems = validate_policy(&policy);
        prop_assert!(problems.is_empty(), "generator made an invalid policy: {:?}", problems);
        let yaml = to_yaml(&policy_document(&policy, ApiVersion::V1).unwrap());
        let parsed = parse_documents(&yaml, None);
        prop_assert!(parsed.syntax_error.is_none(), "{:?}\n{}", parsed.syntax_error, yaml);
        prop_assert_eq!(parsed.documents.len(), 1);
        let doc = &parsed.documents[0];
        prop_assert!(doc.is_valid(), "{:?}\n{}", doc.diagnostics, yaml);
        prop_assert_eq!(doc.resource.as_ref(), Some(&Resource::RetryPolicy(policy)), "{}", yaml);
    }
}
