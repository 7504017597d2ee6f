//! Decisions per second of the embedded evaluator (docs/reference/bars.md: at most 150 ns per decision for
//! 3 policies × 20 rules, a fresh job state per decision). Run:
//! `cargo bench --locked --features bench --bench evaluator`.
//!
//! Cases: a run that matches rule 16 of the last policy (the worst case when every earlier
//! rule was tried; now the others are rejected by mask), one that matches a first rule, one that matches
//! nothing (falls to the default action); and rule sets that pass the masks and fail late,
//! the engine's own worst cases: `regex_rules_no_match`, 3 × 20 regex message rules, none
//! matching; `regex_rules_last_matches`, 3 × 20 anchored regex rules of an Xid catalog with
//! a message that only the last rule of the last policy matches (one search of the list's
//! shared DFA says which rules of all three policies match; `regex_rules_no_match`'s 60
//! unanchored `.*` alternations are too large for that DFA, and its policies search on their
//! own); `named_exit_rules_last_matches`, 3 × 20
//! `containerName: main` + `onExitCodes` rules, the main container's code listed only by the
//! last rule of the last policy.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;

use retryctl::engine::{evaluate, CompiledPolicy, JobContext, JobState, Policies, Settings, SharedRegexes};
use retryctl::model::failure_history::{Outcome, Run};
use retryctl::model::policy::{Action, Backoff, ExitCodes, Operator, RetryPolicy, Rule};
use retryctl::model::GoDuration;

#[path = "fixtures/evaluator.rs"]
mod fixture;

/// A policy named `name` with `rules` and `defaultAction: Fail`, as every case uses.
fn failing_policy(name: String, rules: Vec<Rule>) -> RetryPolicy {
    RetryPolicy {
        name,
        default_action: Some(Action::Fail),
        rules,
        ..RetryPolicy::default()
    }
}

fn policy(p: usize) -> RetryPolicy {
    failing_policy(format!("policy-{p}"), fixture::rules(p))
}

fn run(category: &str, exit: i64) -> Run {
    fixture::run(category, exit, "Error", Outcome::Failed)
}

fn bench(c: &mut Criterion) {
    let compiled: Vec<CompiledPolicy> = (0..3).map(|p| CompiledPolicy::new(policy(p)).unwrap()).collect();
    let refs: Vec<&CompiledPolicy> = compiled.iter().collect();
    let settings = Settings {
        global_max_retries: u32::MAX,
        ..Settings::default()
    };
    let job = JobContext::new("job-0000042", false, GoDuration::from_secs(30));
    let last = run("cat-2-16", 1); // policy-2 rule 16: the last category rule of the last policy
    let first = run("cat-0-0", 1);
    let none = run("nothing", 1);
    // The engine's own worst cases since rules are rejected by mask: rules that no mask can
    // reject and that fail late. 3 × 20 non-literal regex message rules without
    // containerName, none matching the run's message.
    let regex_compiled: Vec<CompiledPolicy> = (0..3).map(|p| CompiledPolicy::new(regex_policy(p)).unwrap()).collect();
    let regex_refs: Vec<&CompiledPolicy> = regex_compiled.iter().collect();
    // A GPU error that only the last rule of the last policy of an Xid catalog matches.
    let catalog_compiled: Vec<CompiledPolicy> = (0..3).map(|p| CompiledPolicy::new(xid_policy(p)).unwrap()).collect();
    let catalog_refs: Vec<&CompiledPolicy> = catalog_compiled.iter().collect();
    let xid = run("nothing", 1);
    let xid = Run {
        containers: vec![retryctl::model::failure_history::Container {
            message: Some("NVRM: Xid 79, pid=1234, policy 2 rule 19: GPU has fallen off the bus".into()),
            ..xid.containers[0].clone()
        }],
        ..xid
    };
    let named_compiled: Vec<CompiledPolicy> = (0..3)
        .map(|p| CompiledPolicy::new(named_exit_policy(p)).unwrap())
        .collect();
    let named_refs: Vec<&CompiledPolicy> = named_compiled.iter().collect();
    let named_last = run("nothing", named_exit_code(2, 19));
    let mut group = c.benchmark_group("evaluate_3x20");
    for (name, refs, r) in [
        ("last_rule_matches", &refs, &last),
        ("first_rule_matches", &refs, &first),
        ("no_match_default_fail", &refs, &none),
        ("regex_rules_no_match", &regex_refs, &none),
        ("regex_rules_last_matches", &catalog_refs, &xid),
        ("named_exit_rules_last_matches", &named_refs, &named_last),
    ] {
        // A fresh job state per decision (docs/reference/bars.md): the first retry under a rule, as a real
        // job's first failure sees it. Reusing one state let its counter grow without bound
        // (`powi` of a huge exponent showed up in the profile) and measured a state no job
        // reaches. The state is made and dropped outside the timed routine.
        // The list's shared regexes, kept with it as the simulator keeps one per resolved
        // list; their DFA is built by the first decision that needs it (in the warm-up).
        let shared = SharedRegexes::new(refs);
        let policies = Policies::new(refs, shared.as_ref());
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || JobState::new(None),
                |state| {
                    black_box(evaluate(
                        black_box(policies),
                        &settings,
                        &job,
                        state,
                        black_box(r),
                        black_box(3),
                        1_000,
                    ))
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// 20 regex message rules (an Xid catalog), each matching one policy and rule number.
fn xid_policy(p: usize) -> RetryPolicy {
    let rules = (0..20)
        .map(|r| Rule {
            action: Action::Retry,
            on_termination_message: Some(format!(r"^NVRM: Xid \d+, pid=\d+, policy {p} rule {r}:")),
            ..Rule::default()
        })
        .collect();
    failing_policy(format!("xid-{p}"), rules)
}

/// The exit code that rule `r` of `named_exit_policy(p)` lists.
fn named_exit_code(p: usize, r: usize) -> i64 {
    (100 + p * 20 + r) as i64
}

/// 20 rules on the `main` container's exit code (`containerName` + `onExitCodes`), each
/// listing one code, retrying with backoff and jitter.
fn named_exit_policy(p: usize) -> RetryPolicy {
    let rules = (0..20)
        .map(|r| Rule {
            action: Action::Retry,
            container_name: Some("main".into()),
            on_exit_codes: Some(ExitCodes {
                operator: Operator::In,
                values: vec![named_exit_code(p, r)],
            }),
            backoff: Backoff {
                initial_delay: Some(GoDuration::from_secs(5)),
                multiplier: Some(1.5),
                jitter: Some(0.2),
                ..Backoff::default()
            },
            ..Rule::default()
        })
        .collect();
    failing_policy(format!("named-exit-{p}"), rules)
}

fn regex_policy(p: usize) -> RetryPolicy {
    let rules = (0..20)
        .map(|r| Rule {
            action: Action::Retry,
            on_termination_message: Some(format!(r"Xid \d+ in policy {p} rule {r}|ECC error.*bank {r}")),
            ..Rule::default()
        })
        .collect();
    failing_policy(format!("regex-{p}"), rules)
}

criterion_group!(benches, bench);
criterion_main!(benches);
