//! upstream's `TestEngine_Evaluate` table (`internal/scheduler/retry/engine_test.go` at
//! `207cc9e`) against [`evaluate`] directly, a case per row named as upstream names it (the
//! file's other table, `TestValidatePolicy`, is `tests/integration/upstream_tables/engine.rs`),
//! the memory bump of `internal/scheduler/retry_policy_test.go`, and property tests of the
//! budget.

use proptest::prelude::*;

use super::*;
use crate::engine::simulator::Simulator;
use crate::engine::{EngineKind, JobReport};
use crate::model::failure_history::{FailureHistory, Run};
use crate::model::policy::RetryPolicy;
use crate::model::{parse_documents, Resource};

fn policy(limit: u32, default: &str, rules: &[(&str, &str, &str)]) -> CompiledPolicy {
    let mut y = format!(
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: {limit}\ndefaultAction: {default}\n"
    );
    if !rules.is_empty() {
        y.push_str("rules:\n");
        for (action, cat, sub) in rules {
            y.push_str(&format!("  - {{action: {action}, onCategory: {cat}"));
            if !sub.is_empty() {
                y.push_str(&format!(", onSubcategory: {sub}"));
            }
            y.push_str("}\n");
        }
    }
    compile(&y)
}

/// A v1beta1 policy document, which must be valid.
fn compile(y: &str) -> CompiledPolicy {
    let doc = parse_documents(y, None).documents.remove(0);
    match doc.resource {
        Some(Resource::RetryPolicy(p)) => CompiledPolicy::new(p).unwrap(),
        other => panic!("{other:?} {:?}", doc.diagnostics),
    }
}

fn failed(cat: &str, sub: &str) -> Run {
    Run {
        node: Some("n".into()),
        category: (!cat.is_empty()).then(|| cat.to_string()),
        subcategory: (!sub.is_empty()).then(|| sub.to_string()),
        ..Run::default()
    }
}

/// One evaluation with `failures` failed runs already counted before this one (upstream's
/// `Counts.Failures` = `failures + 1`).
fn decide(global: u32, p: &CompiledPolicy, run: &Run, failures_before: u32) -> Decision {
    let settings = Settings {
        global_max_retries: global,
        ..Settings::default()
    };
    let ctx = JobContext::new("j", false, crate::engine::DEFAULT_GRACE);
    let mut state = JobState::new(None);
    state.failures = failures_before;
    evaluate(Some(p), &settings, &ctx, UpstreamJob::default(), &mut state, run, 0, 0)
}

#[test]
fn engine_test_table() {
    let gpu_t = failed("gpu", "transient");
    let uncat = failed("", "");
    let transient = failed("transient", "");
    let oom = failed("oom", "");
    // Upstream's `Mutation{Affinity: AffinityMutation{AvoidSameNode: true}}`: the run's node
    // `n` is avoided; `Mutation{}`: nothing is.
    const NO_MUTATION: &[&str] = &[];
    const AVOID_SAME_NODE: &[&str] = &["n"];
    // (upstream's row name, globalMax, policy, run, F = Counts.Failures, kind, reason, the
    // nodes the decision avoids)
    #[allow(clippy::type_complexity)]
    let cases: Vec<(&str, u32, CompiledPolicy, &Run, u32, DecisionKind, &str, &[&str])> = vec![
        (
            "category match (any subcategory)",
            10,
            policy(10, "Retry", &[("Fail", "gpu", "")]),
            &gpu_t,
            1,
            DecisionKind::FailRule,
            "matched rule: Fail",
            NO_MUTATION,
        ),
        (
            "category match with subcategory match",
            10,
            policy(10, "Retry", &[("Fail", "gpu", "transient")]),
            &gpu_t,
            1,
            DecisionKind::FailRule,
            "matched rule: Fail",
            NO_MUTATION,
        ),
        (
            "matched Retry rule carries its mutation",
            10,
            compile(
                "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 10\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: oom, mutate: {affinity: {avoidSameNode: true}}}\n",
            ),
            &oom,
            1,
            DecisionKind::Retry,
            "matched rule: Retry: retry 1 of 10",
            AVOID_SAME_NODE,
        ),
        (
            "default-action retry carries no mutation",
            10,
            policy(10, "Retry", &[("Fail", "user-error", "")]),
            &uncat,
            1,
            DecisionKind::Retry,
            "no rule matched, using default action: retry 1 of 10",
            NO_MUTATION,
        ),
        (
            "matched Retry rule overrides Fail default",
            10,
            policy(10, "Fail", &[("Retry", "transient", "")]),
            &transient,
            1,
            DecisionKind::Retry,
            "matched rule: Retry: retry 1 of 10",
            NO_MUTATION,
        ),
        (
            "category match but subcategory mismatch",
            10,
            policy(10, "Retry", &[("Fail", "gpu", "permanent")]),
            &gpu_t,
            1,
            DecisionKind::Retry,
            "no rule matched, using default action: retry 1 of 10",
            NO_MUTATION,
        ),
        (
            "category mismatch",
            10,
            policy(10, "Retry", &[("Fail", "network", "")]),
            &gpu_t,
            1,
            DecisionKind::Retry,
            "no rule matched, using default action: retry 1 of 10",
            NO_MUTATION,
        ),
        (
            "global cap exceeded",
            5,
            policy(10, "Retry", &[]),
            &uncat,
            6,
            DecisionKind::FailGlobalLimit,
            "global max retries exceeded (5/5)",
            NO_MUTATION,
        ),
        (
            "retry limit exceeded",
            100,
            policy(3, "Retry", &[]),
            &uncat,
            4,
            DecisionKind::FailPolicyLimit,
            "policy retry limit exceeded (3/3)",
            NO_MUTATION,
        ),
        (
            "retry limit 0 never retries",
            100,
            policy(0, "Retry", &[]),
            &uncat,
            1,
            DecisionKind::FailPolicyLimit,
            "policy retry limit exceeded (0/0)",
            NO_MUTATION,
        ),
        (
            "empty rules returns DefaultAction",
            10,
            policy(10, "Fail", &[]),
            &uncat,
            1,
            DecisionKind::FailDefault,
            "no rule matched, using default action",
            NO_MUTATION,
        ),
        (
            "globalMaxRetries 0 disables retries",
            0,
            policy(10, "Retry", &[]),
            &uncat,
            1,
            DecisionKind::FailGlobalLimit,
            "global max retries is 0, retries disabled",
            NO_MUTATION,
        ),
        (
            "first matching rule wins when two rules match",
            10,
            policy(10, "Retry", &[("Fail", "gpu", ""), ("Retry", "gpu", "transient")]),
            &gpu_t,
            1,
            DecisionKind::FailRule,
            "matched rule: Fail",
            NO_MUTATION,
        ),
        (
            "uncategorized error with rules present falls to default action",
            10,
            policy(10, "Fail", &[("Retry", "gpu", "")]),
            &uncat,
            1,
            DecisionKind::FailDefault,
            "no rule matched, using default action",
            NO_MUTATION,
        ),
    ];
    // Not expressible: "nil error returns fail" (`runError: nil`, `DecisionNoError`): a
    // FailureHistory run always carries its failure, so no run reaches the engine without one.
    for (name, global, p, run, f, kind, words, avoid) in cases {
        let d = decide(global, &p, run, f - 1);
        assert_eq!(d.avoid_nodes, avoid, "{name}: the mutation's avoided nodes");
        assert_eq!(d.memory, None, "{name}: no memory bump");
        assert_eq!(d.kind, kind, "{name}");
        assert_eq!(reason(&d, None).as_deref(), Some(words), "{name}");
        assert_eq!(
            d.delay,
            crate::model::duration::GoDuration::ZERO,
            "{name}: upstream has no backoff"
        );
    }
}

#[test]
fn a_matched_retry_carries_its_mutation_a_default_one_none() {
    let yaml = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 10\ndefaultAction: Retry\nrules:\n  - {action: Retry, onCategory: oom, mutate: {affinity: {avoidSameNode: true}, resources: {memory: {factor: 1.5}}}}\n";
    let p = match parse_documents(yaml, None).documents.remove(0).resource {
        Some(Resource::RetryPolicy(p)) => CompiledPolicy::new(p).unwrap(),
        other => panic!("{other:?}"),
    };
    let settings = Settings::default();
    let ctx = JobContext::new("j", false, crate::engine::DEFAULT_GRACE);
    // retry_policy_test.go's MemoryBumpCompounds: 1Gi × 1.5 × 1.5 = 2415919104 bytes.
    let mut state = JobState::new(Some(1024.0 * 1024.0 * 1024.0));
    let oom = |node: &str| Run {
        node: Some(node.into()),
        category: Some("oom".into()),
        ..Run::default()
    };
    let a = evaluate(
        Some(&p),
        &settings,
        &ctx,
        UpstreamJob::default(),
        &mut state,
        &oom("n1"),
        0,
        0,
    );
    assert_eq!(a.memory, Some(1610612736.0));
    assert_eq!(a.avoid_nodes, vec!["n1".to_string()]);
    let b = evaluate(
        Some(&p),
        &settings,
        &ctx,
        UpstreamJob::default(),
        &mut state,
        &oom("n2"),
        1,
        0,
    );
    assert_eq!(b.memory, Some(2415919104.0));
    assert_eq!(b.avoid_nodes, vec!["n1".to_string(), "n2".to_string()]);
    let c = evaluate(
        Some(&p),
        &settings,
        &ctx,
        UpstreamJob::default(),
        &mut state,
        &failed("", ""),
        2,
        0,
    );
    assert_eq!(
        (c.kind, c.rule, c.memory),
        (DecisionKind::Retry, Some(RuleRef::Default), Some(2415919104.0))
    );
    // A default-action retry adds no avoidance (node `n` is not avoided) but keeps what
    // the job already avoids.
    assert_eq!(c.avoid_nodes, vec!["n1".to_string(), "n2".to_string()]);
}

/// A policy that retries everything (limit 10), `oom` with `avoidSameNode`.
fn avoiding_policy() -> RetryPolicy {
    let yaml = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 10\ndefaultAction: Retry\nrules:\n  - {action: Retry, onCategory: oom, mutate: {affinity: {avoidSameNode: true}}}\n";
    match parse_documents(yaml, None).documents.remove(0).resource {
        Some(Resource::RetryPolicy(p)) => p,
        other => panic!("{other:?}"),
    }
}

fn on(node: &str, cat: &str) -> Run {
    Run {
        node: Some(node.into()),
        ..failed(cat, "")
    }
}

fn avoided(report: &JobReport) -> Vec<Vec<&str>> {
    report
        .runs
        .iter()
        .map(|r| {
            r.decision
                .as_ref()
                .map_or(Vec::new(), |d| d.avoid_nodes.iter().map(String::as_str).collect())
        })
        .collect()
}

/// scheduler.go: a returned lease is an attempted run, and its legacy requeue adds a
/// `NotIn` for every attempted node (its own included); `affinity.go` only appends, so a
/// later retry without `avoidSameNode` keeps them.
#[test]
fn a_returned_lease_avoids_every_attempted_node_and_avoidance_persists() {
    let returned = Run {
        outcome: Outcome::LeaseReturned,
        ..on("n2", "")
    };
    let history = FailureHistory {
        runs: vec![
            on("n1", "app"),
            returned,
            on("n3", "oom"),
            on("n4", "app"),
            on("n5", "app"),
        ],
        ..FailureHistory::default()
    };
    let report = replay_upstream(avoiding_policy(), &history, &Settings::default());
    let kinds: Vec<_> = report.runs.iter().map(|r| r.decision.as_ref().unwrap().kind).collect();
    assert_eq!(
        kinds,
        [
            DecisionKind::Retry,
            DecisionKind::LeaseReturned,
            DecisionKind::Retry,
            DecisionKind::Retry,
            DecisionKind::Retry
        ]
    );
    assert_eq!(
        avoided(&report),
        [
            vec![],
            vec!["n1", "n2"],
            vec!["n1", "n2", "n3"],
            vec!["n1", "n2", "n3"],
            vec!["n1", "n2", "n3"],
        ]
    );
    // Legacy (no policy, feature off) requeues a returned lease the same way.
    let settings = Settings {
        enabled: false,
        ..Settings::default()
    };
    let history = FailureHistory {
        runs: vec![
            Run {
                outcome: Outcome::LeaseReturned,
                ..on("n1", "")
            },
            Run {
                outcome: Outcome::LeaseReturned,
                ..on("n2", "")
            },
            on("n3", "app"),
        ],
        ..FailureHistory::default()
    };
    let report = replay_upstream(avoiding_policy(), &history, &settings);
    assert_eq!(
        avoided(&report),
        [vec!["n1"], vec!["n1", "n2"], vec!["n1", "n2"]],
        "the final legacy_fail keeps the job's avoided nodes"
    );
    assert!(report.contradictions.is_empty(), "{:?}", report.contradictions);
}

/// A run placed on a node a returned lease's requeue avoids contradicts the decisions.
#[test]
fn a_run_on_a_node_avoided_after_a_returned_lease_is_a_contradiction() {
    let history = FailureHistory {
        runs: vec![
            on("n1", "oom"),
            Run {
                outcome: Outcome::LeaseReturned,
                ..on("n2", "")
            },
            on("n2", "app"),
        ],
        ..FailureHistory::default()
    };
    let report = replay_upstream(avoiding_policy(), &history, &Settings::default());
    assert_eq!(
        report.contradictions,
        ["run 2 ran on `n2`, a node the decision for run 1 avoids"]
    );
}

/// docs/engines.md: `limit` is the policy's `retryLimit` on every engine evaluation that names
/// one, `fail_global_limit` included; the global limit is `global_max_retries`.
#[test]
fn the_global_limit_record_names_the_policys_limit() {
    for global in [0, 2] {
        let d = decide(global, &policy(7, "Retry", &[]), &failed("", ""), 2);
        assert_eq!(
            (d.kind, d.limit, d.global_max_retries),
            (DecisionKind::FailGlobalLimit, Some(7), global)
        );
    }
}

fn replay_upstream(p: RetryPolicy, history: &FailureHistory, settings: &Settings) -> JobReport {
    let sim = Simulator::new(vec![p], Vec::new(), None)
        .unwrap()
        .with_engine(EngineKind::Upstream);
    sim.simulate(history, settings).unwrap()
}

/// A run of a generated history: 0 failed (category a or b), 1 preempted, 2 lease returned.
fn gen_run(kind: u8, cat: bool) -> Run {
    let mut r = failed(if cat { "a" } else { "b" }, "");
    match kind {
        1 => r.conditions = vec![Condition::Preempted],
        2 => r.outcome = Outcome::LeaseReturned,
        _ => {}
    }
    r
}

proptest! {
    #[test]
    fn budgets_hold_and_only_failures_count(
        limit in 0u32..6,
        global in 0u32..6,
        default_retry in any::<bool>(),
        runs in proptest::collection::vec((0u8..3, any::<bool>()), 1..12),
    ) {
        let p = policy(limit, if default_retry { "Retry" } else { "Fail" }, &[("Retry", "a", "")]).policy;
        let history = FailureHistory {
            runs: runs.iter().map(|&(k, c)| gen_run(k, c)).collect(),
            ..FailureHistory::default()
        };
        let settings = Settings { global_max_retries: global, max_attempted_runs: 100, ..Settings::default() };
        let report = replay_upstream(p.clone(), &history, &settings);
        // Never more counted retries than either bound.
        prop_assert!(report.retries <= global.min(limit), "{} retries, global {global}, limit {limit}", report.retries);
        // Preempted and returned runs never change the budget: each retry follows a failure.
        let granted = report.runs.iter().filter(|r| r.decision.as_ref().is_some_and(|d| d.kind == DecisionKind::Retry)).count();
        prop_assert_eq!(granted as u32, report.retries);
        for r in &report.runs {
            let d = r.decision.as_ref().unwrap();
            if matches!(d.kind, DecisionKind::Preempted | DecisionKind::LeaseReturned) {
                prop_assert_eq!(d.total_retries, report.runs[..r.index].iter().filter(|x| x.decision.as_ref().is_some_and(|d| d.kind == DecisionKind::Retry)).count() as u32);
            }
        }
        // Same input, same output.
        prop_assert_eq!(report, replay_upstream(p, &history, &settings));
    }
}

/// The signal names what an upstream rule matched on, in the design engine's words (docs/engines.md): the run's category and, when it has one, its subcategory; a default action says no
/// rule matched.
#[test]
fn the_signal_names_the_category_a_rule_matched() {
    let p = policy(5, "Fail", &[("Retry", "gpu", ""), ("Fail", "oom", "small")]);
    for (run, want) in [
        (failed("gpu", ""), "category gpu"),
        (failed("gpu", "transient"), "category gpu/transient"),
        (failed("oom", "small"), "category oom/small"),
        (failed("disk", ""), "no rule matched"),
    ] {
        let d = decide(10, &p, &run, 0);
        assert_eq!(d.signal.as_deref(), Some(want), "{run:?}");
    }
}
