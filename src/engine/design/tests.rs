//! Table tests for every numbered rule of docs/engines.md, and property tests over generated
//! policies and histories. Policies and histories are written as YAML, the way operators
//! write them, and decoded by the real decoders.

use proptest::prelude::*;

use super::*;
use crate::engine::simulator::Simulator;
use crate::engine::*;
use crate::model::failure_history::{FailureHistory, Final, Outcome, Run};
use crate::model::policy::{RetryPolicy, Rule};
use crate::model::{parse_documents, test_policies as policies, Resource};

fn history(body: &str) -> FailureHistory {
    let text = format!("apiVersion: armadaproject.io/v1\nkind: FailureHistory\n{body}");
    let doc = parse_documents(&text, None).documents.remove(0);
    let errors: Vec<_> = doc.diagnostics.iter().filter(|x| x.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    match doc.resource {
        Some(Resource::FailureHistory(h)) => *h,
        other => panic!("not a history: {other:?}"),
    }
}

fn simulate(policy_yaml: &str, history_body: &str, settings: &Settings) -> JobReport {
    let sim = Simulator::new(policies(policy_yaml), Vec::new(), None).unwrap();
    sim.simulate(&history(history_body), settings).unwrap()
}

fn kinds(r: &JobReport) -> Vec<&'static str> {
    r.runs
        .iter()
        .map(|x| x.decision.as_ref().map_or("-", |d| d.kind.as_str()))
        .collect()
}

fn rules(r: &JobReport) -> Vec<String> {
    r.runs
        .iter()
        .map(|x| {
            x.decision
                .as_ref()
                .and_then(|d| job_report::rule_ref_label(&r.policies, d))
                .unwrap_or("-".into())
        })
        .collect()
}

fn delays(r: &JobReport) -> Vec<String> {
    r.runs
        .iter()
        .map(|x| x.decision.as_ref().map_or("-".into(), |d| d.delay.to_string()))
        .collect()
}

fn decision(r: &JobReport, i: usize) -> &Decision {
    r.runs[i].decision.as_ref().unwrap()
}

const INFRA_AND_OOM: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: infra}\nspec:\n  retryLimit: 10\n  rules:\n    - {action: Retry, onConditions: [Preempted, Evicted]}\n---\napiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: ml-training}\nspec:\n  retryLimit: 5\n  rules:\n    - {action: Retry, onConditions: [OOMKilled], retryLimit: 3}\n";

fn runs(items: &[&str]) -> String {
    let mut s = String::from("job: {id: j}\nruns:\n");
    for i in items {
        s.push_str("  - ");
        s.push_str(i);
        s.push('\n');
    }
    s
}

const PRE: &str = "{node: n, conditions: [Preempted]}";
const OOM: &str = "{node: n, containers: [{name: main, exitCode: 137, reason: OOMKilled}]}";

// ---- the design's example --------------------------------------------------------

#[test]
fn design_example_preempted_10_times_and_oom_3_times_independently() {
    let mut items = vec![PRE; 10];
    items.extend([OOM; 3]);
    items.push(OOM);
    let r = simulate(INFRA_AND_OOM, &runs(&items), &Settings::default());
    let k = kinds(&r);
    assert_eq!(&k[..13], &["retry"; 13]);
    assert_eq!(k[13], "fail_rule_limit");
    assert_eq!(rules(&r)[13], "ml-training/0");
    assert_eq!(decision(&r, 9).counter, Some(10));
    assert_eq!(decision(&r, 9).limit, Some(10));
    assert_eq!(decision(&r, 12).counter, Some(3));
    assert_eq!(r.retries, 13);
    assert_eq!(
        r.outcome_text(),
        "Failed permanently at run 13: rule ml-training/0 limit 3 reached (3 retries used, attempt 4 of 4)"
    );
}

#[test]
fn design_example_total_never_passes_global_limit() {
    // 11 preemptions would exceed infra's 10; with globalMaxRetries 12, 10 + 2 OOMs reach it.
    let mut items = vec![PRE; 10];
    items.extend([OOM; 3]);
    let settings = Settings {
        global_max_retries: 12,
        ..Settings::default()
    };
    let r = simulate(INFRA_AND_OOM, &runs(&items), &settings);
    assert_eq!(kinds(&r)[12], "fail_global_limit");
    assert_eq!(r.retries, 12);
}

// ---- effective policies ------------------------------------------------------------

fn names(base: &[&str], annotation: Option<&str>, default: Option<&str>) -> Vec<String> {
    let base: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    effective_policy_names(&base, &NameOrigin::Queue("q".into()), annotation, default)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

#[test]
fn effective_policies_compose_queue_annotation_and_default() {
    type Case<'a> = (&'a [&'a str], Option<&'a str>, Option<&'a str>, &'a [&'a str]);
    let cases: &[Case<'_>] = &[
        (&["infra", "ml"], None, Some("fleet"), &["infra", "ml"]),
        (
            &["infra"],
            Some("extra, ml ,"),
            Some("fleet"),
            &["infra", "extra", "ml"],
        ),
        // An annotation naming a policy already on the queue adds nothing, moves nothing.
        (&["infra", "ml"], Some("ml,infra"), None, &["infra", "ml"]),
        (&[], Some(" extra "), Some("fleet"), &["extra"]),
        (&[], None, Some("fleet"), &["fleet"]),
        (&[], Some(" , "), None, &[]),
    ];
    for (base, ann, default, want) in cases {
        assert_eq!(names(base, *ann, *default), *want, "{base:?} {ann:?} {default:?}");
    }
}

#[test]
fn missing_policy_named_by_a_queue_is_an_error_naming_both() {
    let queue = crate::model::queue::Queue {
        name: "ml-queue".into(),
        retry_policies: vec!["infra".into(), "gone".into()],
        ..Default::default()
    };
    let sim = Simulator::new(policies(INFRA_AND_OOM), vec![queue], None).unwrap();
    let h = history("job: {id: j, queue: ml-queue}\nruns: [{node: a}]\n");
    let err = sim.simulate(&h, &Settings::default()).unwrap_err();
    assert_eq!(
        err,
        "policy `gone` (referenced by queue `ml-queue`) is not among the documents given with -f (known: `infra`, `ml-training`)"
    );
    let h =
        history("job: {id: j, queue: other, annotations: {armadaproject.io/retry-policy: nope}}\nruns: [{node: a}]\n");
    let err = sim.simulate(&h, &Settings::default()).unwrap_err();
    assert!(
        err.starts_with("policy `nope` (referenced by the job annotation `armadaproject.io/retry-policy`)"),
        "{err}"
    );
}

#[test]
fn no_effective_policy_is_legacy() {
    let sim = Simulator::new(Vec::new(), Vec::new(), None).unwrap();
    let r = sim.simulate(&history(&runs(&[PRE])), &Settings::default()).unwrap();
    assert_eq!(kinds(&r), ["legacy_fail"]);
}

// ---- container selection and matching ---------------------------------------

fn one_rule(rule: &str) -> String {
    format!("apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {{name: p}}\nspec:\n  retryLimit: 5\n  rules:\n    - {rule}\n")
}

#[test]
fn matching_table() {
    // (rule, run, matches?)
    let cases: &[(&str, &str, bool)] = &[
        // containerName: only that container.
        (
            "{action: Retry, containerName: main, onExitCodes: {operator: In, values: [137]}}",
            "{containers: [{name: side, exitCode: 137}, {name: main, exitCode: 1}]}",
            false,
        ),
        (
            "{action: Retry, containerName: main, onExitCodes: {operator: In, values: [137]}}",
            "{containers: [{name: side, exitCode: 1}, {name: main, exitCode: 137}]}",
            true,
        ),
        // containerName absent from the run: container matchers do not match.
        (
            "{action: Retry, containerName: gone, onExitCodes: {operator: NotIn, values: [1]}}",
            "{containers: [{name: main, exitCode: 137}]}",
            false,
        ),
        // First failed container (exit 0 skipped).
        (
            "{action: Retry, onExitCodes: {operator: In, values: [2]}}",
            "{containers: [{name: a, exitCode: 0}, {name: b, exitCode: 2}, {name: c, exitCode: 3}]}",
            true,
        ),
        (
            "{action: Retry, onExitCodes: {operator: In, values: [3]}}",
            "{containers: [{name: a, exitCode: 0}, {name: b, exitCode: 2}, {name: c, exitCode: 3}]}",
            false,
        ),
        // OOMKilled with exit 0 still counts as failed.
        (
            "{action: Retry, onConditions: [OOMKilled]}",
            "{containers: [{name: a, exitCode: 0, reason: OOMKilled}]}",
            true,
        ),
        // Init containers: out by default, in (first) when included.
        (
            "{action: Retry, onExitCodes: {operator: In, values: [9]}}",
            "{containers: [{name: init, init: true, exitCode: 9}, {name: main, exitCode: 1}]}",
            false,
        ),
        (
            "{action: Retry, includeInitContainers: true, onExitCodes: {operator: In, values: [9]}}",
            "{containers: [{name: main, exitCode: 1}, {name: init, init: true, exitCode: 9}]}",
            true,
        ),
        (
            "{action: Retry, onExitCodes: {operator: In, values: [9]}}",
            "{containers: [{name: init, init: true, exitCode: 9}]}",
            false,
        ),
        // Exit code 0 never matches, not even NotIn.
        (
            "{action: Retry, onExitCodes: {operator: NotIn, values: [1]}}",
            "{containers: [{name: main, exitCode: 0}]}",
            false,
        ),
        (
            "{action: Retry, containerName: main, onExitCodes: {operator: NotIn, values: [1]}}",
            "{containers: [{name: main, exitCode: 0}]}",
            false,
        ),
        (
            "{action: Retry, onExitCodes: {operator: NotIn, values: [1]}}",
            "{containers: [{name: main, exitCode: 2}]}",
            true,
        ),
        // Messages: every non-init container, any match; empty never matches `.*`.
        (
            "{action: Retry, onTerminationMessage: {pattern: TRANSIENT}}",
            "{containers: [{name: a, exitCode: 1, message: boom}, {name: b, exitCode: 0, message: 'x TRANSIENT y'}]}",
            true,
        ),
        (
            "{action: Retry, onTerminationMessage: {pattern: '.*'}}",
            "{containers: [{name: a, exitCode: 1, message: ''}]}",
            false,
        ),
        (
            "{action: Retry, onTerminationMessage: {pattern: '.*'}}",
            "{containers: [{name: a, exitCode: 1}]}",
            false,
        ),
        (
            "{action: Retry, onTerminationMessage: {pattern: TRANSIENT}}",
            "{containers: [{name: i, init: true, exitCode: 1, message: TRANSIENT}]}",
            false,
        ),
        (
            "{action: Retry, includeInitContainers: true, onTerminationMessage: {pattern: TRANSIENT}}",
            "{containers: [{name: i, init: true, exitCode: 1, message: TRANSIENT}]}",
            true,
        ),
        (
            "{action: Retry, containerName: b, onTerminationMessage: {pattern: TRANSIENT}}",
            "{containers: [{name: a, exitCode: 1, message: TRANSIENT}, {name: b, exitCode: 1, message: ok}]}",
            false,
        ),
        // Pod conditions hold regardless of containerName.
        (
            "{action: Retry, containerName: gone, onConditions: [Evicted]}",
            "{conditions: [Evicted]}",
            true,
        ),
        (
            "{action: Retry, onConditions: [OOMKilled]}",
            "{conditions: [Evicted]}",
            false,
        ),
        // Category exact and case-sensitive; subcategory narrows.
        ("{action: Retry, onFailureCategory: [gpu]}", "{category: GPU}", false),
        (
            "{action: Retry, onFailureCategory: [gpu]}",
            "{category: gpu, subcategory: x}",
            true,
        ),
        (
            "{action: Retry, onFailureCategory: [gpu], onFailureSubcategory: [transient]}",
            "{category: gpu, subcategory: x}",
            false,
        ),
        (
            "{action: Retry, onFailureCategory: [gpu], onFailureSubcategory: [transient]}",
            "{category: gpu}",
            false,
        ),
        (
            "{action: Retry, onFailureCategory: [gpu], onFailureSubcategory: [transient]}",
            "{category: gpu, subcategory: transient}",
            true,
        ),
        // All matchers must match.
        (
            "{action: Retry, onFailureCategory: [gpu], onExitCodes: {operator: In, values: [1]}}",
            "{category: gpu, containers: [{name: m, exitCode: 2}]}",
            false,
        ),
        (
            "{action: Retry, onFailureCategory: [gpu], onExitCodes: {operator: In, values: [1]}}",
            "{category: gpu, containers: [{name: m, exitCode: 1}]}",
            true,
        ),
    ];
    for (rule, run, want) in cases {
        let r = simulate(&one_rule(rule), &runs(&[run]), &Settings::default());
        let got = kinds(&r)[0] == "retry";
        assert_eq!(got, *want, "rule {rule} on run {run}: {}", r.runs[0].reason);
    }
}

#[test]
fn signal_says_what_matched() {
    let r = simulate(
        &one_rule("{action: Retry, containerName: main, onExitCodes: {operator: In, values: [137]}, onFailureCategory: [oom]}"),
        &runs(&["{category: oom, containers: [{name: main, exitCode: 137}]}"]),
        &Settings::default(),
    );
    assert_eq!(
        decision(&r, 0).signal.as_deref(),
        Some("container main exit 137, category oom")
    );
}

/// The masks that reject rules before they are tried (category index, conditions, exit
/// codes, literal prefixes per container) pick the same rule as trying every rule in order.
#[test]
fn rejection_masks_keep_first_match_order() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 5\n  rules:\n    - {action: Retry, containerName: side, onTerminationMessage: {pattern: '^OOM'}}\n    - {action: Retry, containerName: main, onTerminationMessage: {pattern: '^Xid'}}\n    - {action: Retry, containerName: main, onTerminationMessage: {pattern: '^OOM'}}\n    - {action: Retry, onExitCodes: {operator: NotIn, values: [1, 2]}}\n    - {action: Retry, onExitCodes: {operator: In, values: [1]}, includeInitContainers: true}\n    - {action: Retry, onConditions: [Evicted, Preempted]}\n    - {action: Retry, onFailureCategory: [gpu], containerName: main, onTerminationMessage: {pattern: 'O'}}\n    - {action: Retry, onTerminationMessage: {pattern: 'M k'}}\n    - {action: Retry, onTerminationMessage: {pattern: 'Xid [0-9]+'}}\n    - {action: Retry, includeInitContainers: true, onTerminationMessage: {pattern: 'init-fail.*x'}}\n";
    let cases: &[(&str, &str)] = &[
        (
            "{containers: [{name: main, exitCode: 2, message: 'OOM killed'}]}",
            "p/2",
        ),
        (
            "{containers: [{name: side, exitCode: 2, message: 'OOM'}, {name: main, exitCode: 2, message: 'Xid 79'}]}",
            "p/0",
        ),
        ("{containers: [{name: main, exitCode: 2, message: 'Xid 79'}]}", "p/1"),
        ("{containers: [{name: main, exitCode: 2, message: ''}]}", "-"),
        ("{containers: [{name: main, exitCode: 3}]}", "p/3"),
        (
            "{containers: [{name: main, exitCode: 2}, {name: i, init: true, exitCode: 1}]}",
            "p/4",
        ),
        ("{containers: [{name: main, exitCode: 1}]}", "p/4"),
        (
            "{conditions: [Preempted], containers: [{name: main, exitCode: 2}]}",
            "p/5",
        ),
        (
            "{category: gpu, containers: [{name: main, exitCode: 2, message: 'ECC'}]}",
            "-",
        ),
        (
            "{category: gpu, containers: [{name: main, exitCode: 2, message: 'aOb'}]}",
            "p/6",
        ),
        ("{containers: [{name: main, exitCode: 2, message: 'xOOM k'}]}", "p/7"),
        ("{containers: [{name: other, exitCode: 2, message: 'Xid 79'}]}", "p/8"),
        ("{containers: [{name: other, exitCode: 2, message: 'Xid abc'}]}", "-"),
        (
            "{containers: [{name: i, init: true, exitCode: 2, message: 'init-fail: x'}, {name: main, exitCode: 2}]}",
            "p/9",
        ),
        (
            "{containers: [{name: i, init: true, exitCode: 2, message: 'Xid 1'}, {name: main, exitCode: 2}]}",
            "-",
        ),
    ];
    for (run, want) in cases {
        let r = simulate(yaml, &runs(&[run]), &Settings::default());
        let got = rules(&r);
        let got = if kinds(&r) == ["fail_default"] {
            "-"
        } else {
            got[0].as_str()
        };
        assert_eq!(got, *want, "{run}");
    }
}

#[test]
fn first_match_across_concatenated_policies() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: a}\nspec:\n  rules:\n    - {action: Retry, onFailureCategory: [x]}\n    - {action: Fail, onFailureCategory: [gpu]}\n---\napiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: b}\nspec:\n  rules:\n    - {action: Retry, onFailureCategory: [gpu]}\n";
    let r = simulate(yaml, &runs(&["{category: gpu}"]), &Settings::default());
    assert_eq!(kinds(&r), ["fail_rule"]);
    assert_eq!(rules(&r), ["a/1"]);
}

// ---- counting and limits -------------------------------------------------------------

#[test]
fn default_action_first_retry_default_wins_with_own_counter() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: a}\nspec:\n  defaultAction: Fail\n  rules: [{action: Retry, onFailureCategory: [x]}]\n---\napiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: b}\nspec:\n  retryLimit: 2\n  defaultAction: Retry\n---\napiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: c}\nspec:\n  retryLimit: 9\n  defaultAction: Retry\n";
    let r = simulate(
        yaml,
        &runs(&["{category: y}", "{category: x}", "{category: y}", "{category: y}"]),
        &Settings::default(),
    );
    assert_eq!(rules(&r), ["b/default", "a/0", "b/default", "b/default"]);
    assert_eq!(kinds(&r), ["retry", "retry", "retry", "fail_rule_limit"]);
    assert_eq!(decision(&r, 2).counter, Some(2));
    assert_eq!(decision(&r, 3).limit, Some(2));
}

#[test]
fn no_match_and_no_retry_default_fails_default() {
    let r = simulate(
        &one_rule("{action: Retry, onFailureCategory: [x]}"),
        &runs(&["{category: y}"]),
        &Settings::default(),
    );
    assert_eq!(kinds(&r), ["fail_default"]);
}

#[test]
fn limit_resolution_rule_then_policy_then_global() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  rules:\n    - {action: Retry, onFailureCategory: [a], retryLimit: 1}\n    - {action: Retry, onFailureCategory: [b]}\n";
    let settings = Settings {
        global_max_retries: 3,
        ..Settings::default()
    };
    let r = simulate(yaml, &runs(&["{category: a}", "{category: a}"]), &settings);
    assert_eq!(kinds(&r), ["retry", "fail_rule_limit"]);
    let r = simulate(yaml, &runs(&["{category: b}"; 4]), &settings);
    assert_eq!(decision(&r, 0).limit, Some(3));
    // Both bounds hit at once: the global one wins.
    assert_eq!(kinds(&r), ["retry", "retry", "retry", "fail_global_limit"]);
}

#[test]
fn retry_limit_zero_never_retries_and_fail_rule_ignores_limits() {
    let r = simulate(
        &one_rule("{action: Retry, onFailureCategory: [a], retryLimit: 0}"),
        &runs(&["{category: a}"]),
        &Settings::default(),
    );
    assert_eq!(kinds(&r), ["fail_rule_limit"]);
    assert_eq!(
        r.runs[0].reason,
        "rule p/0 limit 0 reached (0 retries used, attempt 1 of 1)"
    );
}

#[test]
fn kill_switch_global_zero_retries_nothing() {
    let settings = Settings {
        global_max_retries: 0,
        ..Settings::default()
    };
    let r = simulate(INFRA_AND_OOM, &runs(&[PRE]), &settings);
    assert_eq!(kinds(&r), ["fail_global_limit"]);
    assert_eq!(
        r.runs[0].reason,
        "retries disabled: globalMaxRetries is 0 (kill switch)"
    );
}

#[test]
fn lowering_global_limit_mid_history() {
    let r = simulate(
        INFRA_AND_OOM,
        &runs(&[PRE, PRE, PRE, "{node: n, conditions: [Preempted], globalMaxRetries: 2}"]),
        &Settings::default(),
    );
    assert_eq!(kinds(&r), ["retry", "retry", "retry", "fail_global_limit"]);
    assert_eq!(decision(&r, 3).global_max_retries, 2);
    assert_eq!(decision(&r, 3).total_retries, 3);
}

// ---- backoff --------------------------------------------------------------------------

#[test]
fn backoff_fields_resolve_independently() {
    let scheduler = Backoff {
        initial_delay: Some(GoDuration::from_secs(7)),
        max_delay: Some(GoDuration::from_secs(100)),
        multiplier: Some(5.0),
        jitter: None,
    };
    let policy = Backoff {
        max_delay: Some(GoDuration::from_secs(50)),
        ..Backoff::default()
    };
    let rule = Backoff {
        multiplier: Some(3.0),
        ..Backoff::default()
    };
    assert_eq!(
        resolve_backoff(Some(&rule), &policy, &scheduler),
        (GoDuration::from_secs(7), GoDuration::from_secs(50), 3.0, 0.0)
    );
    assert_eq!(
        resolve_backoff(None, &Backoff::default(), &Backoff::default()),
        (GoDuration::ZERO, GoDuration::from_secs(600), 2.0, 0.0)
    );
}

#[test]
fn backoff_grows_and_caps() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 10\n  backoff: {initialDelay: 10s, maxDelay: 1m}\n  rules:\n    - {action: Retry, onFailureCategory: [a]}\n    - {action: Retry, onFailureCategory: [b], backoff: {multiplier: 3.0}}\n";
    let settings = Settings {
        default_backoff: Backoff {
            multiplier: Some(1.5),
            ..Backoff::default()
        },
        ..Settings::default()
    };
    let r = simulate(yaml, &runs(&["{category: a}"; 4]), &settings);
    assert_eq!(delays(&r), ["10s", "15s", "22.5s", "33.75s"]);
    let r = simulate(yaml, &runs(&["{category: b}"; 3]), &settings);
    assert_eq!(delays(&r), ["10s", "30s", "1m"]);
}

#[test]
fn multiplier_100_with_1000_retries_stays_at_max_delay() {
    for n in [1u32, 2, 5, 10, 100, 1000, u32::MAX] {
        let d = backoff_delay(GoDuration::from_secs(1), GoDuration::from_secs(600), 100.0, n);
        assert!(d <= GoDuration::from_secs(600));
        if n >= 3 {
            assert_eq!(d, GoDuration::from_secs(600), "n={n}");
        }
    }
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 1000\n  backoff: {initialDelay: 1s, maxDelay: 5m, multiplier: 100, jitter: 1}\n  rules: [{action: Retry, onFailureCategory: [a]}]\n";
    let settings = Settings {
        global_max_retries: 1000,
        ..Settings::default()
    };
    let r = simulate(yaml, &runs(&["{category: a}"; 1000]), &settings);
    assert_eq!(r.retries, 1000);
    assert!(r
        .runs
        .iter()
        .skip(2)
        .all(|x| decision_of(x).delay == GoDuration::from_secs(300)));
}

fn decision_of(r: &RunRecord) -> &Decision {
    r.decision.as_ref().unwrap()
}

#[test]
fn jitter_is_identical_across_replays_and_varies_by_job_and_run() {
    assert_eq!(jitter_fraction("job-1", 3), jitter_fraction("job-1", 3));
    assert_ne!(jitter_fraction("job-1", 3), jitter_fraction("job-1", 4));
    assert_ne!(jitter_fraction("job-1", 3), jitter_fraction("job-2", 3));
    // Pinned: the hash is part of the contract (same history, same delays, every release).
    assert_eq!(jitter_fraction("", 0), 0.7636945250957473);
    assert_eq!(jitter_fraction("job-1", 3), 0.29067167633803015);
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 5\n  backoff: {initialDelay: 10s, maxDelay: 1h, jitter: 0.5}\n  rules: [{action: Retry, onFailureCategory: [a]}]\n";
    let a = simulate(yaml, &runs(&["{category: a}"; 3]), &Settings::default());
    let b = simulate(yaml, &runs(&["{category: a}"; 3]), &Settings::default());
    assert_eq!(delays(&a), delays(&b));
    for (i, x) in a.runs.iter().enumerate() {
        let d = decision_of(x);
        let base = 10_000_000_000u64 << i;
        assert_eq!(d.delay_parts.backoff.0, base);
        assert!(d.delay_parts.jitter.0 <= base / 2, "{:?}", d.delay_parts);
        assert_eq!(d.delay.0, base + d.delay_parts.jitter.0);
    }
}

#[test]
fn grace_delay_with_and_without_termination_confirmed() {
    let policy = one_rule("{action: Retry, onConditions: [Preempted]}");
    let cases = [
        ("terminationGracePeriod: 30s", "{conditions: [Preempted]}", "30s"),
        (
            "terminationGracePeriod: 30s",
            "{conditions: [Preempted], terminationConfirmedAfter: 4s}",
            "4s",
        ),
        (
            "terminationGracePeriod: 30s",
            "{conditions: [Preempted], terminationConfirmedAfter: 1m}",
            "30s",
        ),
        ("memory: 1Gi", "{conditions: [Preempted]}", "1s"),
    ];
    for (job, run, want) in cases {
        let body = format!("job: {{id: j, {job}}}\nruns:\n  - {run}\n");
        let r = simulate(&policy, &body, &Settings::default());
        assert_eq!(delays(&r), [want], "{job} {run}");
        assert_eq!(decision(&r, 0).delay_parts.grace.to_string(), want);
    }
    // Not preempted: no grace floor.
    let r = simulate(
        &one_rule("{action: Retry, onConditions: [Evicted]}"),
        "job: {id: j, terminationGracePeriod: 30s}\nruns: [{conditions: [Evicted]}]\n",
        &Settings::default(),
    );
    assert_eq!(delays(&r), ["0s"]);
}

// ---- anti-affinity and mutations ---------------------------------------------------------

#[test]
fn anti_affinity_node_avoids_only_the_last_failed_node() {
    let yaml = one_rule("{action: Retry, onConditions: [Preempted], antiAffinity: {mode: node}}");
    let r = simulate(
        &yaml,
        &runs(&[
            "{node: a, conditions: [Preempted]}",
            "{node: b, conditions: [Preempted]}",
        ]),
        &Settings::default(),
    );
    assert_eq!(decision(&r, 0).avoid_nodes, ["a"]);
    assert_eq!(decision(&r, 1).avoid_nodes, ["b"]);
}

#[test]
fn avoid_same_node_avoids_all_earlier_nodes() {
    let yaml = one_rule("{action: Retry, onFailureCategory: [gpu], mutate: {affinity: {avoidSameNode: true}}}");
    let r = simulate(
        &yaml,
        &runs(&[
            "{node: a, category: gpu}",
            "{node: b, outcome: leaseReturned}",
            "{node: c, category: gpu}",
            "{node: d, category: gpu}",
        ]),
        &Settings::default(),
    );
    assert_eq!(decision(&r, 0).avoid_nodes, ["a"]);
    // The returned lease never started on b: not "tried".
    assert_eq!(decision(&r, 2).avoid_nodes, ["a", "c"]);
    assert_eq!(decision(&r, 3).avoid_nodes, ["a", "c", "d"]);
}

#[test]
fn memory_factor_and_static_compound() {
    let factor = one_rule("{action: Retry, onFailureCategory: [oom], mutate: {resources: {memory: {factor: 1.5}}}}");
    let r = simulate(
        &factor,
        "job: {id: j, memory: 1Gi}\nruns: [{category: oom}, {category: oom}]\n",
        &Settings::default(),
    );
    assert_eq!(decision(&r, 0).memory, Some(1610612736.0));
    // Upstream's own test: 1Gi × 1.5 × 1.5 = 2415919104 bytes.
    assert_eq!(decision(&r, 1).memory, Some(2415919104.0));
    let fixed = one_rule("{action: Retry, onFailureCategory: [oom], mutate: {resources: {memory: {static: 512Mi}}}}");
    let r = simulate(
        &fixed,
        "job: {id: j, memory: 1Gi}\nruns: [{category: oom}, {category: oom}]\n",
        &Settings::default(),
    );
    assert_eq!(decision(&r, 1).memory, Some(2.0 * 1024.0 * 1024.0 * 1024.0));
    // Without the job's memory there is nothing to show.
    let r = simulate(&fixed, &runs(&["{category: oom}"]), &Settings::default());
    assert_eq!(decision(&r, 0).memory, None);
}

#[test]
fn mixed_memory_kinds_skip_the_second_kind() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 5\n  rules:\n    - {action: Retry, onFailureCategory: [a], mutate: {resources: {memory: {factor: 2}}}}\n    - {action: Retry, onFailureCategory: [b], mutate: {resources: {memory: {static: 1Gi}}}}\n";
    let r = simulate(
        yaml,
        "job: {id: j, memory: 1Gi}\nruns: [{category: a}, {category: b}]\n",
        &Settings::default(),
    );
    assert_eq!(decision(&r, 1).memory, Some(2.0 * 1024.0 * 1024.0 * 1024.0));
    assert!(r.runs[1]
        .reason
        .ends_with("memory static skipped: the job already grew by a factor"));
}

#[test]
fn default_action_retry_carries_no_mutation() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 5\n  defaultAction: Retry\n  rules:\n    - {action: Retry, onFailureCategory: [a], mutate: {affinity: {avoidSameNode: true}, resources: {memory: {factor: 2}}}}\n";
    let r = simulate(
        yaml,
        "job: {id: j, memory: 1Gi}\nruns: [{node: x, category: z}]\n",
        &Settings::default(),
    );
    assert_eq!(rules(&r), ["p/default"]);
    assert!(decision(&r, 0).avoid_nodes.is_empty());
    assert_eq!(decision(&r, 0).memory, Some(1024.0 * 1024.0 * 1024.0));
}

// ---- pod names ---------------------------------------------------------------------------

#[test]
fn pod_names_enabled_and_disabled() {
    assert_eq!(pod_name("j", 0, true), "armada-j-0");
    assert_eq!(pod_name("j", 1, true), "armada-j-0-1");
    assert_eq!(pod_name("j", 12, true), "armada-j-0-12");
    assert_eq!(pod_name("j", 0, false), "armada-j-0");
    assert_eq!(pod_name("j", 5, false), "armada-j-0");
    let r = simulate(INFRA_AND_OOM, &runs(&[PRE, PRE]), &Settings::default());
    assert_eq!(r.runs[1].pod_name, "armada-j-0-1");
    assert_eq!(decision(&r, 1).next_pod_name.as_deref(), Some("armada-j-0-2"));
}

// ---- bypass paths --------------------------------------------------------------------------

#[test]
fn bypass_paths() {
    let disabled = Settings {
        enabled: false,
        max_attempted_runs: 3,
        ..Settings::default()
    };
    let lease = "{node: n, outcome: leaseReturned}";
    let cases: &[(&str, &Settings, &[&str], &[&str])] = &[
        // Lease returned: requeued, no budget.
        (
            "job: {id: j}\n",
            &Settings::default(),
            &[lease, lease, PRE],
            &["lease_returned", "lease_returned", "retry"],
        ),
        // Cancelled: final, never retried.
        (
            "job: {id: j}\n",
            &Settings::default(),
            &["{outcome: cancelled}"],
            &["cancelled"],
        ),
        // failFast: the first failure is final (and a returned lease too, as upstream).
        (
            "job: {id: j, annotations: {armadaproject.io/failFast: \"true\"}}\n",
            &Settings::default(),
            &[PRE],
            &["fail_fast"],
        ),
        (
            "job: {id: j, annotations: {armadaproject.io/failFast: \"true\"}}\n",
            &Settings::default(),
            &[lease],
            &["fail_fast"],
        ),
        (
            "job: {id: j, annotations: {armadaproject.io/failFast: \"false\"}}\n",
            &Settings::default(),
            &[PRE],
            &["retry"],
        ),
        // Disabled: legacy; lease returns requeue while attempts < maxAttemptedRuns.
        (
            "job: {id: j}\n",
            &disabled,
            &[lease, lease, lease],
            &["legacy_requeue", "legacy_requeue", "legacy_fail"],
        ),
        ("job: {id: j}\n", &disabled, &[PRE], &["legacy_fail"]),
    ];
    for (job, settings, items, want) in cases {
        let mut body = format!("{job}runs:\n");
        for i in *items {
            body.push_str(&format!("  - {i}\n"));
        }
        let r = simulate(INFRA_AND_OOM, &body, settings);
        assert_eq!(kinds(&r), *want, "{job} {items:?}");
    }
    let r = simulate(INFRA_AND_OOM, &runs(&[lease, PRE]), &Settings::default());
    assert_eq!(decision(&r, 1).total_retries, 1);
    let r = simulate(INFRA_AND_OOM, &runs(&[lease, lease]), &disabled);
    assert!(r.runs.iter().all(|x| x.pod_name == "armada-j-0"));
}

/// docs/engines.md "Decided" (differential testing against the reference model, 2026-11): each
/// case pinned so that it stays decided.
#[test]
fn decided_cases_stay_decided() {
    let lease = "{node: n, outcome: leaseReturned}";
    let five = Settings::default(); // maxAttemptedRuns 5
                                    // A returned lease is requeued without budget only while the runs so far (this one
                                    // included) number fewer than maxAttemptedRuns; the fifth fails the job (legacy_fail).
    let r = simulate(INFRA_AND_OOM, &runs(&[lease; 5]), &five);
    assert_eq!(
        kinds(&r),
        [
            "lease_returned",
            "lease_returned",
            "lease_returned",
            "lease_returned",
            "legacy_fail"
        ]
    );
    assert_eq!((r.status.final_state(), r.retries), (Final::Failed, 0));
    // failFast is exactly the string "true": "True" and "yes" do not count.
    for (value, want) in [("true", "fail_fast"), ("True", "retry"), ("yes", "retry")] {
        let body =
            format!("job: {{id: j, annotations: {{armadaproject.io/failFast: \"{value}\"}}}}\nruns:\n  - {PRE}\n");
        assert_eq!(
            kinds(&simulate(INFRA_AND_OOM, &body, &five)),
            [want],
            "failFast `{value}`"
        );
    }
    // With failFast a returned lease also ends the job.
    let body = format!(
        "job: {{id: j, annotations: {{armadaproject.io/failFast: \"true\"}}}}\nruns:\n  - {lease}\n  - {PRE}\n"
    );
    let r = simulate(INFRA_AND_OOM, &body, &five);
    assert_eq!(kinds(&r), ["fail_fast"]);
    assert_eq!(r.status.final_state(), Final::Failed);
    // A cancelled job's final state is Cancelled (not Failed), never retried.
    let r = simulate(INFRA_AND_OOM, &runs(&[PRE, "{outcome: cancelled}"]), &five);
    assert_eq!(kinds(&r), ["retry", "cancelled"]);
    assert_eq!(r.status.final_state(), Final::Cancelled);
}

// ---- the record ----------------------------------------------------------------------------

#[test]
fn decision_record_has_every_field() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  backoff: {initialDelay: 10s}\n  antiAffinity: {mode: node}\n  rules:\n    - {action: Retry, containerName: main, onExitCodes: {operator: In, values: [137]}, mutate: {resources: {memory: {factor: 2}}}}\n";
    let r = simulate(
        yaml,
        "job: {id: j, memory: 1Gi}\nruns:\n  - {node: a, runFor: 1m, containers: [{name: main, exitCode: 137}]}\n",
        &Settings::default(),
    );
    let d = decision(&r, 0);
    assert_eq!(
        d,
        &Decision {
            kind: DecisionKind::Retry,
            policy: Some(0),
            rule: Some(RuleRef::Index(0)),
            signal: Some("container main exit 137".into()),
            counter: Some(1),
            limit: Some(3),
            total_retries: 1,
            global_max_retries: 20,
            delay: GoDuration::from_secs(10),
            delay_parts: DelayParts {
                backoff: GoDuration::from_secs(10),
                jitter: GoDuration::ZERO,
                grace: GoDuration::ZERO,
            },
            retry_after: Some(70_000_000_000),
            avoid_nodes: vec!["a".into()],
            memory: Some(2.0 * 1024.0 * 1024.0 * 1024.0),
            memory_note: None,
            next_pod_name: Some("armada-j-0-1".into()),
        }
    );
    assert_eq!(
        r.runs[0].reason,
        "retry 1 of 3 under p/0 (attempt 2 of 4); 1 of 20 retries overall"
    );
}

// ---- replay: contradictions ---------------------------------------------------------------------

#[test]
fn contradictions_are_reported() {
    let yaml =
        one_rule("{action: Retry, onConditions: [Preempted], antiAffinity: {mode: node}, backoff: {initialDelay: 1m}}");
    let r = simulate(
        &yaml,
        &runs(&[
            "{node: a, runFor: 1m, conditions: [Preempted]}",
            "{node: a, startedAt: 90s, runFor: 1m, containers: [{name: m, exitCode: 1}]}",
            "{node: b}",
        ]),
        &Settings::default(),
    );
    assert_eq!(
        r.contradictions,
        [
            "run 1 starts at T+1m30s, before the retry became eligible at T+2m",
            "run 1 ran on `a`, a node the decision for run 0 avoids",
            "run 2 follows the end of the job at run 1 (Failed): the scheduler never starts it",
        ]
    );
    assert_eq!(r.runs.len(), 2);
}

#[test]
fn a_returned_lease_keeps_the_nodes_the_last_retry_avoids() {
    let yaml = one_rule("{action: Retry, onConditions: [Preempted], antiAffinity: {mode: node}}");
    let r = simulate(
        &yaml,
        &runs(&[
            "{node: a, conditions: [Preempted]}",
            "{node: b, outcome: leaseReturned}",
            "{node: a, conditions: [Preempted]}",
        ]),
        &Settings::default(),
    );
    assert_eq!(kinds(&r), ["retry", "lease_returned", "retry"]);
    assert_eq!(
        r.contradictions,
        ["run 2 ran on `a`, a node the decision for run 0 avoids"]
    );
}

/// A record that ends the job `failed` or `succeeded` (`job.state`) where the decisions would
/// run it again, or the other way than they end it, contradicts them, in every replay that
/// checks (a summary's too), under both engines; a user's cancel, a record the decisions end
/// alike and a history that does not say do not.
#[test]
fn a_record_that_ends_a_job_the_decisions_run_again_contradicts_them() {
    let design = one_rule("{action: Retry, onExitCodes: {operator: In, values: [1]}}");
    let upstream =
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 5\ndefaultAction: Retry\n";
    let failed = "{node: n, containers: [{name: main, exitCode: 1}]}";
    let with_state = |state: &str, items: &[&str]| {
        let mut body = runs(items);
        if !state.is_empty() {
            body = body.replace("job: {id: j}", &format!("job: {{id: j, state: {state}}}"));
        }
        history(&body)
    };
    let want = ["the record ends it after run 1; today's policy runs it again"];
    for (engine, yaml) in [(EngineKind::Design, design.as_str()), (EngineKind::Upstream, upstream)] {
        let sim = Simulator::new(policies(yaml), Vec::new(), None)
            .unwrap()
            .with_engine(engine);
        let settings = Settings::default();
        for state in ["failed", "succeeded"] {
            let h = with_state(state, &[failed, failed]);
            let full = sim.simulate(&h, &settings).unwrap();
            assert_eq!(full.contradictions, want, "{engine:?} {state}");
            assert_eq!(full.status.final_state(), Final::Pending);
            let summary = sim.simulate_detailed(&h, &settings, Detail::Summary).unwrap();
            assert_eq!(summary.contradictions, want, "{engine:?} {state}");
            let outcome = sim.simulate_detailed(&h, &settings, Detail::Outcome).unwrap();
            assert!(outcome.contradictions.is_empty());
        }
        // Ended the other way than the replay ends it: recorded succeeded after a failed run
        // the decisions do not retry, recorded failed after a run that succeeded.
        let other_way = [
            (
                "succeeded",
                &[failed; 6][..],
                "the record ends it succeeded, but run 5 failed and today's policy fails the job there",
            ),
            (
                "failed",
                &[failed, "{outcome: succeeded}"][..],
                "the record ends it failed, but run 1 succeeded",
            ),
        ];
        for (state, items, said) in other_way {
            let h = with_state(state, items);
            let full = sim.simulate(&h, &settings).unwrap();
            assert_eq!(full.contradictions, [said], "{engine:?} {state}");
            let summary = sim.simulate_detailed(&h, &settings, Detail::Summary).unwrap();
            assert_eq!(summary.contradictions, [said], "{engine:?} {state}");
        }
        for (state, items) in [
            ("cancelled", &[failed; 6][..]),
            ("cancelled", &[failed, "{outcome: succeeded}"][..]),
            ("cancelled", &[failed, failed][..]),
            ("", &[failed, failed][..]),
            ("succeeded", &[failed, "{outcome: succeeded}"][..]),
            ("failed", &[failed; 6][..]),
        ] {
            let r = sim.simulate(&with_state(state, items), &settings).unwrap();
            assert!(
                r.contradictions.is_empty(),
                "{engine:?} {state}: {:?}",
                r.contradictions
            );
        }
    }
}

/// The summary counts decisions in arrays indexed by `kind as usize` and names them back
/// through `ALL`: that needs `ALL` to list every kind in declaration order.
#[test]
fn all_decision_kinds_are_listed_in_declaration_order() {
    for (i, k) in DecisionKind::ALL.into_iter().enumerate() {
        assert_eq!(k as usize, i, "{k:?}");
    }
}

/// `avoidSameNode` avoids every node an earlier run started on, and a summary-only replay
/// (which keeps no node list in its records) finds the same contradiction as a full one.
#[test]
fn avoid_same_node_contradictions_are_the_same_in_a_summary_replay() {
    let yaml = one_rule("{action: Retry, onConditions: [Preempted], mutate: {affinity: {avoidSameNode: true}}}");
    let history = history(&runs(&[
        "{node: a, conditions: [Preempted]}",
        "{node: b, conditions: [Preempted]}",
        "{node: a, conditions: [Preempted]}",
    ]));
    let sim = Simulator::new(policies(&yaml), Vec::new(), None).unwrap();
    let settings = Settings::default();
    let want = ["run 2 ran on `a`, a node the decision for run 1 avoids"];
    let full = sim.simulate(&history, &settings).unwrap();
    assert_eq!(full.contradictions, want);
    let summary = sim.simulate_detailed(&history, &settings, Detail::Summary).unwrap();
    assert_eq!(summary.contradictions, want);
}

#[test]
fn returned_leases_are_bounded_by_max_attempted_runs_with_policies_too() {
    let lease = "{node: n, outcome: leaseReturned}";
    let r = simulate(
        &one_rule("{action: Retry, onConditions: [Preempted]}"),
        &runs(&[lease; 6]),
        &Settings::default(),
    );
    // maxAttemptedRuns 5: the 5th attempt is not requeued, and no retry budget was used.
    assert_eq!(
        kinds(&r),
        [
            "lease_returned",
            "lease_returned",
            "lease_returned",
            "lease_returned",
            "legacy_fail"
        ]
    );
    assert_eq!(r.retries, 0);
}

#[test]
fn backoff_is_rounded_not_truncated() {
    let yaml = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 5\n  backoff: {initialDelay: 10s, maxDelay: 1h, multiplier: 1.15}\n  rules:\n    - {action: Retry, onConditions: [Evicted]}\n";
    let evicted = "{node: n, conditions: [Evicted]}";
    let r = simulate(yaml, &runs(&[evicted; 3]), &Settings::default());
    assert_eq!(delays(&r), ["10s", "11.5s", "13.225s"]);
}

#[test]
fn memory_factor_rounds_up_at_each_step() {
    let yaml = one_rule("{action: Retry, onFailureCategory: [oom], mutate: {resources: {memory: {factor: 1.1}}}}");
    let r = simulate(
        &yaml,
        "job: {id: j, memory: \"1003\"}\nruns: [{category: oom}, {category: oom}, {category: oom}]\n",
        &Settings::default(),
    );
    // ceil(1003 × 1.1) = 1104, ceil(1104 × 1.1) = 1215, ceil(1215 × 1.1) = 1337; not
    // ceil(1003 × 1.1³) = 1335.
    let memory: Vec<Option<f64>> = (0..3).map(|i| decision(&r, i).memory).collect();
    assert_eq!(memory, [Some(1104.0), Some(1215.0), Some(1337.0)]);
}

// ---- properties -----------------------------------------------------------------------------------

fn arb_rule() -> impl Strategy<Value = Rule> {
    (
        prop::bool::weighted(0.8),
        prop::option::of(0u32..5),
        prop::sample::select(vec!["a", "b", "c"]),
        prop::option::of(prop::sample::select(vec![
            Condition::Preempted,
            Condition::OOMKilled,
            Condition::Evicted,
        ])),
        prop::option::of((0u64..120, 0u64..600, 1.0f64..100.0, 0.0f64..=1.0)),
        prop::bool::ANY,
    )
        .prop_map(|(retry, limit, cat, cond, backoff, avoid)| {
            let mut rule = Rule {
                action: if retry { Action::Retry } else { Action::Fail },
                retry_limit: limit,
                ..Rule::default()
            };
            match cond {
                Some(c) => rule.on_conditions = Some(vec![c]),
                None => rule.on_failure_category = Some(vec![cat.to_string()]),
            }
            if let Some((i, m, mult, j)) = backoff {
                rule.backoff = Backoff {
                    initial_delay: Some(GoDuration::from_secs(i)),
                    max_delay: Some(GoDuration::from_secs(m)),
                    multiplier: Some(mult),
                    jitter: Some(j),
                };
            }
            if avoid {
                rule.mutate = Some(crate::model::policy::Mutation {
                    affinity: Some(crate::model::policy::AffinityMutation { avoid_same_node: true }),
                    resources: None,
                });
            }
            rule
        })
}

fn arb_policy(i: usize) -> impl Strategy<Value = RetryPolicy> {
    (
        prop::option::of(0u32..6),
        prop::bool::ANY,
        prop::collection::vec(arb_rule(), 0..5),
    )
        .prop_map(move |(limit, retry_default, rules)| RetryPolicy {
            name: format!("p{i}"),
            retry_limit: limit,
            default_action: Some(if retry_default { Action::Retry } else { Action::Fail }),
            rules,
            ..RetryPolicy::default()
        })
}

fn arb_run() -> impl Strategy<Value = Run> {
    (
        prop::sample::select(vec!["n1", "n2", "n3"]),
        prop::sample::select(vec![None, Some("a"), Some("b"), Some("c")]),
        prop::sample::subsequence(vec![Condition::Preempted, Condition::Evicted], 0..=2),
        prop::option::of((0i64..3, prop::bool::ANY)),
        prop::sample::select(vec![
            Outcome::Failed,
            Outcome::Failed,
            Outcome::Failed,
            Outcome::LeaseReturned,
            Outcome::Succeeded,
            Outcome::Cancelled,
        ]),
        0u64..100_000,
        prop::option::of(0u64..60),
    )
        .prop_map(|(node, cat, conditions, container, outcome, run_for, tca)| Run {
            node: Some(node.into()),
            category: cat.map(String::from),
            conditions,
            containers: container
                .map(|(code, oom)| {
                    vec![crate::model::failure_history::Container {
                        name: "main".into(),
                        exit_code: code,
                        reason: oom.then(|| "OOMKilled".into()),
                        ..Default::default()
                    }]
                })
                .unwrap_or_default(),
            outcome,
            run_for: GoDuration::from_millis(run_for),
            termination_confirmed_after: tca.map(GoDuration::from_secs),
            ..Run::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn evaluator_invariants(
        p0 in arb_policy(0),
        p1 in arb_policy(1),
        p2 in arb_policy(2),
        runs in prop::collection::vec(arb_run(), 1..40),
        global in 0u32..15,
        enabled in prop::bool::weighted(0.9),
    ) {
        let settings = Settings { global_max_retries: global, enabled, ..Settings::default() };
        let compiled: Vec<CompiledPolicy> = [p0, p1, p2].into_iter().map(|p| CompiledPolicy::new(p).unwrap()).collect();
        let refs: Vec<&CompiledPolicy> = compiled.iter().collect();
        let history = FailureHistory {
            job: crate::model::failure_history::Job { id: "prop".into(), ..Default::default() },
            runs,
            expect: None,
        };
        let a = replay(&history, &refs, &settings);
        // Same input, same output.
        let b = replay(&history, &refs, &settings);
        prop_assert_eq!(&a, &b);
        // Never more retries than globalMaxRetries.
        prop_assert!(a.retries <= global);
        for run in &a.runs {
            let Some(d) = &run.decision else { continue };
            prop_assert!(d.total_retries <= global);
            if let (Some(c), Some(l)) = (d.counter, d.limit) {
                // No rule counter above its effective limit.
                prop_assert!(c <= l, "counter {} > limit {}", c, l);
            }
            if d.kind == DecisionKind::Retry {
                // Every pre-grace delay within [0, maxDelay].
                let p = &compiled[d.policy.unwrap()].policy;
                let rule = match d.rule.unwrap() { RuleRef::Index(i) => Some(&p.rules[i].backoff), RuleRef::Default => None };
                let (_, max, _, _) = resolve_backoff(rule, &p.backoff, &settings.default_backoff);
                let pre = d.delay_parts.backoff.0 + d.delay_parts.jitter.0;
                prop_assert!(pre <= max.0, "pre-grace delay {} > max {}", pre, max.0);
                prop_assert_eq!(d.delay, GoDuration(pre).max(d.delay_parts.grace));
            }
        }
    }

    /// A summary-only replay differs from a full one only in the texts it leaves out: every
    /// count, status, expectation message and contradiction is the same, failing
    /// expectations (which quote the texts) included.
    #[test]
    fn summary_detail_changes_no_number_and_no_message(
        p0 in arb_policy(0),
        p1 in arb_policy(1),
        runs in prop::collection::vec(arb_run(), 1..30),
        expect_mask in any::<u32>(),
        job_final in prop::option::of(0usize..4),
        global in 0u32..15,
    ) {
        use crate::model::failure_history::{JobExpect, RunExpect};
        let settings = Settings { global_max_retries: global, ..Settings::default() };
        let sim = Simulator::new(vec![p0, p1], Vec::new(), None).unwrap();
        let mut runs = runs;
        for (k, run) in runs.iter_mut().enumerate() {
            if expect_mask & (1 << (k % 32)) != 0 {
                // Mostly wrong on purpose: each failure message quotes a text.
                run.expect = Some(Box::new(RunExpect {
                    decision: Some(["retry", "fail_rule"][k % 2].into()),
                    rule: (k % 3 == 0).then(|| "p0/0".into()),
                    pod_name: (k % 4 == 0).then(|| "armada-prop-0".into()),
                    avoid_nodes: (k % 5 == 0).then(|| vec!["n1".into()]),
                    ..RunExpect::default()
                }));
            }
        }
        let history = FailureHistory {
            job: crate::model::failure_history::Job { id: "prop".into(), ..Default::default() },
            runs,
            expect: job_final.map(|f| JobExpect {
                final_state: Some([Final::Succeeded, Final::Failed, Final::Cancelled, Final::Pending][f]),
                ..JobExpect::default()
            }),
        };
        let mut full = sim.simulate(&history, &settings).unwrap();
        let mut summary = sim.simulate_detailed(&history, &settings, Detail::Summary).unwrap();
        crate::replay::summary::keep_summary_fields(&mut full);
        crate::replay::summary::keep_summary_fields(&mut summary);
        prop_assert_eq!(full, summary);
    }

    /// The lean replay a search uses (`Simulator::simulate_outcome`) decides exactly as the
    /// report does: every field of the outcome equals the report's, under both engines, with
    /// reloads of the global limit, returned leases, cancellations and a `from` anywhere; and
    /// the decisions it tells (`Simulator::simulate_decisions`) are the report's, rule and all.
    #[test]
    fn the_outcome_alone_is_the_reports(
        p0 in arb_policy(0),
        p1 in arb_policy(1),
        runs in prop::collection::vec(arb_run(), 0..30),
        global in 0u32..15,
        enabled in prop::bool::weighted(0.9),
        upstream in any::<bool>(),
        from in 0usize..32,
        fail_fast in prop::bool::weighted(0.1),
    ) {
        use crate::engine::EngineKind;
        let settings = Settings { global_max_retries: global, enabled, ..Settings::default() };
        let engine = if upstream { EngineKind::Upstream } else { EngineKind::Design };
        let sim = Simulator::new(vec![p0, p1], Vec::new(), None).unwrap().with_engine(engine);
        let mut job = crate::model::failure_history::Job { id: "prop".into(), ..Default::default() };
        if fail_fast {
            job.annotations.insert("armadaproject.io/failFast".into(), "true".into());
        }
        let history = FailureHistory { job, runs, expect: None };
        let report = sim.simulate_detailed(&history, &settings, Detail::Outcome).unwrap();
        let outcome = sim.simulate_outcome(&history, &crate::engine::job_context(&history), &settings, from, None).unwrap();
        // And with its runs matched beforehand, as a search shares them.
        let table = sim.match_table(&history, &settings);
        let matched = sim.simulate_outcome(&history, &crate::engine::job_context(&history), &settings, from, table.as_deref()).unwrap();
        prop_assert_eq!(matched, outcome);
        let ran = |r: &crate::engine::RunRecord| r.ended_at - r.started_at;
        let sum = |it: &mut dyn Iterator<Item = u64>| GoDuration(it.fold(0u64, u64::saturating_add));
        prop_assert_eq!(outcome.final_state, report.status.final_state());
        prop_assert_eq!(outcome.retries, report.retries);
        prop_assert_eq!(outcome.delay, report.total_delay);
        prop_assert_eq!(outcome.runs, report.runs.len());
        prop_assert_eq!(outcome.compute, sum(&mut report.runs.iter().map(ran)));
        prop_assert_eq!(outcome.compute_from, sum(&mut report.runs.iter().skip(from).map(ran)));
        // The decisions alone (`suggest`'s first pass) are the report's, each with its rule.
        let mut told = Vec::new();
        sim.simulate_decisions(&history, &settings, &mut |k, kind, policy, rule| {
            told.push((k, kind, policy.map(str::to_string), rule));
        })
        .unwrap();
        let recorded: Vec<_> = report
            .runs
            .iter()
            .filter_map(|r| {
                let d = r.decision.as_ref()?;
                let label = crate::engine::job_report::RuleLabel::of(&report.policies, d);
                Some((r.index, d.kind, label.map(|l| l.policy.to_string()), label.map(|l| l.rule)))
            })
            .collect();
        let told: Vec<_> = told
            .into_iter()
            .map(|(k, kind, policy, rule)| match (policy, rule) {
                (Some(p), Some(r)) => (k, kind, Some(p), Some(r)),
                _ => (k, kind, None, None),
            })
            .collect();
        prop_assert_eq!(told, recorded);
    }

    /// No panic on any input that parses: arbitrary YAML-ish histories through the decoder.
    #[test]
    fn decoder_never_panics(text in "[a-zA-Z0-9:{}\\[\\], \\n-]{0,200}") {
        let full = format!("apiVersion: armadaproject.io/v1\nkind: FailureHistory\n{text}");
        let parsed = parse_documents(&full, None);
        for doc in parsed.documents {
            if let Some(Resource::FailureHistory(h)) = doc.resource {
                let _ = replay(&h, &[], &Settings::default());
            }
        }
    }
}

/// The verdict is returned by value on every decision: above 128 bytes the compiler copies
/// it with a `memmove` call rather than inline (at 176 bytes that call was in every decision).
#[test]
fn verdict_stays_small() {
    assert!(
        std::mem::size_of::<Verdict>() <= 128,
        "{}",
        std::mem::size_of::<Verdict>()
    );
}
