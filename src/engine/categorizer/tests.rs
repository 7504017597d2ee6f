//! The classifier against upstream's `TestClassify`, row by row, and against a small,
//! obviously correct classifier written here over generated configs and runs.

use proptest::prelude::*;

use super::*;
use crate::model::categorizer::{Category, CategoryRule, ExitCodeMatcher, PodEventMatcher, Shape};
use crate::model::failure_history::{Container, ExecutorPath, PodEvent};
use crate::model::{parse_documents, Resource};

/// The config of a bare categorizer document, which must be valid.
fn config(yaml: &str) -> ErrorCategories {
    let parsed = parse_documents(yaml, None);
    let doc = parsed.documents.into_iter().next().expect("a document");
    let errors: Vec<_> = doc.diagnostics.iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    match doc.resource {
        Some(Resource::ErrorCategories(c)) => c,
        other => panic!("not a categorizer: {other:?}"),
    }
}

fn container(name: &str, exit_code: i64, reason: &str, message: &str) -> Container {
    Container {
        name: name.into(),
        exit_code,
        reason: (!reason.is_empty()).then(|| reason.into()),
        message: (!message.is_empty()).then(|| message.into()),
        ..Container::default()
    }
}

/// Upstream's `podWithTerminatedContainer(code, reason, msg)`: one container `main`.
fn terminated(exit_code: i64, reason: &str, message: &str) -> Run {
    Run {
        containers: vec![container("main", exit_code, reason, message)],
        ..Run::default()
    }
}

fn event(event_type: &str, reason: &str, message: &str) -> PodEvent {
    PodEvent {
        event_type: event_type.into(),
        reason: reason.into(),
        message: message.into(),
    }
}

/// (category, subcategory, action) as upstream's test states them: "" for none.
fn classify(yaml: &str, run: &Run) -> (String, String, PodAction) {
    let c = Classifier::new(&config(yaml)).unwrap();
    match c.classify(run) {
        Categorized::Classified(r) => (
            r.category.unwrap_or_default().to_string(),
            r.subcategory.unwrap_or_default().to_string(),
            r.action,
        ),
        Categorized::Recorded => panic!("a run the classifier sees"),
    }
}

/// (upstream's case name, the config's body under `errorCategories`, the run, what it gets).
type Row = (&'static str, &'static str, Run, (&'static str, &'static str, PodAction));

const PLATFORM_ERROR: &str =
    "Failed to pull image \"amd64/busybox:latest\": no match for platform in manifest: not found";

/// Every row of upstream's `TestClassify` (its harness sets no `enabled`: the classifier is
/// built directly, so each config here is enabled).
#[test]
fn upstream_test_classify() {
    use PodAction::{Delete, Retain};
    let gpu_events = vec![
        event("Normal", "Scheduled", "Successfully assigned default/pod to node-1"),
        event(
            "Warning",
            "UnexpectedAdmissionError",
            "Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
        ),
    ];
    let with_events = |events: Vec<PodEvent>| Run {
        events,
        ..Run::default()
    };
    let with_pod_error = |message: &str| Run {
        pod_error: Some(message.into()),
        ..Run::default()
    };
    let rows: Vec<Row> = vec![
        (
            "onPodEvents matches a warning event by message and type",
            "categories:\n- name: gpu_unavailable\n  action: Delete\n  rules:\n  - onPodEvents: {regexp: 'Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu.*', type: Warning}\n    subcategory: device_plugin",
            with_events(gpu_events),
            ("gpu_unavailable", "device_plugin", Delete),
        ),
        (
            "onPodEvents reason filter rejects a different reason",
            "categories:\n- name: gpu\n  rules:\n  - onPodEvents: {regexp: '.*', reason: UnexpectedAdmissionError, type: Warning}",
            with_events(vec![event("Warning", "FailedScheduling", "0/3 nodes are available")]),
            ("", "", Retain),
        ),
        (
            "onPodEvents does not match an event of a different type",
            "categories:\n- name: gpu\n  rules:\n  - onPodEvents: {regexp: '.*', type: Warning}",
            with_events(vec![event("Normal", "Scheduled", "Successfully assigned")]),
            ("", "", Retain),
        ),
        (
            "onPodEvents does not match without events",
            "categories:\n- name: gpu\n  rules:\n  - onPodEvents: {regexp: '.*', type: Warning}",
            Run {
                pod_error: Some("some pod error".into()),
                ..terminated(1, "", "")
            },
            ("", "", Retain),
        ),
        (
            "action propagates from the matched category",
            "categories:\n- name: infra\n  action: Delete\n  rules:\n  - onExitCodes: {operator: In, values: [42]}",
            terminated(42, "", ""),
            ("infra", "", Delete),
        ),
        (
            "OOM condition matches",
            "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]\n    subcategory: kernel",
            terminated(137, "OOMKilled", ""),
            ("oom", "kernel", Retain),
        ),
        (
            "exit code In matches",
            "categories:\n- name: cuda_error\n  rules:\n  - onExitCodes: {operator: In, values: [74, 75]}",
            terminated(74, "", ""),
            ("cuda_error", "", Retain),
        ),
        (
            "exit code NotIn matches",
            "categories:\n- name: unexpected\n  rules:\n  - onExitCodes: {operator: NotIn, values: [1, 2]}",
            terminated(42, "", ""),
            ("unexpected", "", Retain),
        ),
        (
            "termination message regex matches",
            "categories:\n- name: gpu_error\n  rules:\n  - onTerminationMessage: {pattern: '(?i)cuda.*error'}\n    subcategory: cuda",
            terminated(1, "", "CUDA memory error on device 0"),
            ("gpu_error", "cuda", Retain),
        ),
        (
            "first match wins across categories",
            "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]\n- name: high_exit\n  rules:\n  - onExitCodes: {operator: In, values: [137]}",
            terminated(137, "OOMKilled", ""),
            ("oom", "", Retain),
        ),
        (
            "no match returns empty when no default set",
            "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]",
            terminated(1, "", "normal failure"),
            ("", "", Retain),
        ),
        (
            "custom default category",
            "defaultCategory: other",
            terminated(1, "", ""),
            ("other", "", Retain),
        ),
        (
            "custom default category and subcategory",
            "defaultCategory: uncategorized\ndefaultSubcategory: unknown",
            terminated(1, "", ""),
            ("uncategorized", "unknown", Retain),
        ),
        (
            "matching rule subcategory wins over default subcategory",
            "defaultCategory: uncategorized\ndefaultSubcategory: unknown\ncategories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]\n    subcategory: kernel",
            terminated(137, "OOMKilled", ""),
            ("oom", "kernel", Retain),
        ),
        (
            // Upstream's nil pod: a run that carries nothing at all.
            "nil pod returns empty",
            "categories:\n- name: oom\n  rules:\n  - onConditions: [OOMKilled]",
            Run::default(),
            ("", "", Retain),
        ),
        (
            "init container is checked",
            "categories:\n- name: init_fail\n  rules:\n  - onExitCodes: {operator: In, values: [1]}",
            Run {
                containers: vec![Container {
                    init: true,
                    ..container("init", 1, "", "")
                }],
                ..Run::default()
            },
            ("init_fail", "", Retain),
        ),
        (
            "evicted condition matches",
            "categories:\n- name: evicted\n  rules:\n  - onConditions: [Evicted]",
            Run {
                conditions: vec![Condition::Evicted],
                ..Run::default()
            },
            ("evicted", "", Retain),
        ),
        (
            "deadline exceeded condition matches",
            "categories:\n- name: timeout\n  rules:\n  - onConditions: [DeadlineExceeded]",
            Run {
                conditions: vec![Condition::DeadlineExceeded],
                ..Run::default()
            },
            ("timeout", "", Retain),
        ),
        (
            "rules within category are ORed",
            "categories:\n- name: infra\n  rules:\n  - onConditions: [OOMKilled]\n  - onExitCodes: {operator: In, values: [137]}",
            terminated(137, "Error", ""),
            ("infra", "", Retain),
        ),
        (
            "exit code 0 container is skipped",
            "categories:\n- name: msg_match\n  rules:\n  - onTerminationMessage: {pattern: success}",
            Run {
                containers: vec![
                    container("sidecar", 0, "", "success message"),
                    container("main", 1, "", "actual failure"),
                ],
                ..Run::default()
            },
            ("", "", Retain),
        ),
        (
            "containerName targets specific container",
            "categories:\n- name: main_oom\n  rules:\n  - containerName: main\n    onConditions: [OOMKilled]",
            Run {
                containers: vec![
                    container("sidecar", 137, "OOMKilled", ""),
                    container("main", 1, "Error", ""),
                ],
                ..Run::default()
            },
            ("", "", Retain),
        ),
        (
            "containerName matches when container matches",
            "categories:\n- name: main_error\n  rules:\n  - containerName: main\n    onExitCodes: {operator: In, values: [42]}",
            terminated(42, "", ""),
            ("main_error", "", Retain),
        ),
        (
            "no containerName matches any container",
            "categories:\n- name: any_oom\n  rules:\n  - onConditions: [OOMKilled]",
            Run {
                containers: vec![container("sidecar", 137, "OOMKilled", "")],
                ..Run::default()
            },
            ("any_oom", "", Retain),
        ),
        ("empty config returns empty", "", terminated(1, "", ""), ("", "", Retain)),
        (
            "onPodError matches the captured kubelet error",
            "categories:\n- name: infrastructure\n  rules:\n  - onPodError: {pattern: no match for platform in manifest}\n    subcategory: platform_mismatch",
            with_pod_error(PLATFORM_ERROR),
            ("infrastructure", "platform_mismatch", Retain),
        ),
        (
            "empty podErrorMessage does not match onPodError",
            "categories:\n- name: infrastructure\n  rules:\n  - onPodError: {pattern: anything}",
            with_pod_error(""),
            ("", "", Retain),
        ),
        (
            "ClassifyContainerError must not match onPodError even when regex matches empty",
            "categories:\n- name: infrastructure\n  rules:\n  - onPodError: {pattern: '.*'}",
            terminated(1, "", ""),
            ("", "", Retain),
        ),
        (
            "onPodError ignores ContainerName scope",
            "categories:\n- name: infrastructure\n  rules:\n  - containerName: init\n    onPodError: {pattern: no match for platform in manifest}\n    subcategory: platform_mismatch",
            with_pod_error(PLATFORM_ERROR),
            ("infrastructure", "platform_mismatch", Retain),
        ),
        (
            // The container is waiting, not terminated: the run has no failed container.
            "onTerminationMessage does not match pod-level podErrorMessage",
            "categories:\n- name: infrastructure\n  rules:\n  - onTerminationMessage: {pattern: no match for platform in manifest}",
            with_pod_error(PLATFORM_ERROR),
            ("", "", Retain),
        ),
    ];
    for (name, body, run, (category, subcategory, action)) in rows {
        let indented: String = body.lines().map(|l| format!("  {l}\n")).collect();
        let yaml = format!("errorCategories:\n  enabled: true\n{indented}");
        let got = classify(&yaml, &run);
        assert_eq!(got, (category.to_string(), subcategory.to_string(), action), "{name}");
    }
}

#[test]
fn disabled_assigns_nothing_and_armadas_own_runs_keep_their_category() {
    let yaml = "errorCategories:\n  defaultCategory: other\n  categories:\n  - name: oom\n    action: Delete\n    rules:\n    - onConditions: [OOMKilled]\n";
    let disabled = Classifier::new(&config(yaml)).unwrap();
    assert!(!disabled.enabled());
    let oom = terminated(137, "OOMKilled", "");
    assert_eq!(
        disabled.classify(&oom),
        Categorized::Classified(Classification::default())
    );
    assert!(disabled.classify(&oom).pod_retained());

    let enabled = Classifier::new(&config(
        &yaml.replace("errorCategories:\n", "errorCategories:\n  enabled: true\n"),
    ))
    .unwrap();
    let got = enabled.classify(&oom);
    assert!(!got.pod_retained(), "{got:?}");
    assert!(!enabled.retains_pod(Some("oom")));
    assert!(enabled.retains_pod(Some("other")));
    assert!(enabled.retains_pod(Some("unheard-of")));
    assert!(enabled.retains_pod(None));
    for run in [
        Run {
            category: Some("internal".into()),
            ..oom.clone()
        },
        Run {
            category: Some("preemption".into()),
            ..Run::default()
        },
        Run {
            conditions: vec![Condition::Preempted],
            ..oom.clone()
        },
    ] {
        assert_eq!(enabled.classify(&run), Categorized::Recorded, "{run:?}");
        assert_eq!(disabled.classify(&run), Categorized::Recorded, "{run:?}");
        assert!(!enabled.classify(&run).pod_retained());
    }
    // A recorded category of the classifier's own is replaced.
    let recorded = Run {
        category: Some("user_error".into()),
        ..terminated(1, "", "")
    };
    let Categorized::Classified(c) = enabled.classify(&recorded) else {
        panic!("classified")
    };
    assert_eq!(c.category, Some("other"));
    assert_eq!(c.rule, None);
}

// The differential: a classifier written as plainly as upstream's Go, over generated configs
// and runs.

/// Upstream's executor, transliterated: which `classify` call each path makes
/// (`pod_issue_handler.go`, `job_state_reporter.go`), then (category, subcategory, Delete?);
/// `None` for a run it never sees.
fn reference(config: &ErrorCategories, run: &Run) -> Option<(String, String, bool)> {
    if matches!(run.category.as_deref(), Some("internal" | "preemption"))
        || run.conditions.contains(&Condition::Preempted)
        || run.executor_path == Some(ExecutorPath::Unclassified)
    {
        return None;
    }
    if !config.enabled {
        return Some((String::new(), String::new(), false));
    }
    let pod_error = run.pod_error.as_deref().unwrap_or("");
    Some(match run.executor_path {
        None => reference_classify(config, run, pod_error, &run.events),
        Some(ExecutorPath::StuckPod | ExecutorPath::FailedPodCheck) => reference_classify(config, run, pod_error, &[]),
        Some(ExecutorPath::FailedPod) => {
            // `util.ExtractPodFailedReason`: the status message, else a line per failed
            // container (an unnamed one is Lookout's text that was not in that form).
            let mut reason = pod_error.to_string();
            if reason.is_empty() {
                for c in &run.containers {
                    let message = c.message.clone().unwrap_or_default();
                    if c.name.is_empty() {
                        reason += &message;
                    } else if c.exit_code != 0 {
                        let why = c.reason.clone().unwrap_or_default();
                        reason += &format!(
                            "Container {} failed with exit code {} because {why}: {message}\n",
                            c.name, c.exit_code
                        );
                    }
                }
            }
            // `DetectAndRegisterDeleteActionIssue`: kept only for a Delete category; else
            // `ClassifyContainerError`.
            let check = reference_classify(config, run, &reason, &run.events);
            if check.2 {
                check
            } else {
                reference_classify(config, run, "", &[])
            }
        }
        Some(ExecutorPath::Unclassified) => unreachable!(),
    })
}

/// Upstream's `classify(pod, podErrorMessage, podEvents)`, transliterated.
fn reference_classify(
    config: &ErrorCategories,
    run: &Run,
    pod_error: &str,
    events: &[PodEvent],
) -> (String, String, bool) {
    // `failedContainers`: regular ones, then init ones; a non-zero exit code.
    let mut failed: Vec<&Container> = Vec::new();
    for init in [false, true] {
        for c in &run.containers {
            if c.init == init && c.exit_code != 0 {
                failed.push(c);
            }
        }
    }
    let pod_reason = |c: Condition| run.conditions.contains(&c);
    for cat in &config.categories {
        for r in &cat.rules {
            let filtered: Vec<&&Container> = failed
                .iter()
                .filter(|c| r.container_name.is_empty() || c.name == r.container_name)
                .collect();
            let re = |p: &str| regex::Regex::new(p).unwrap();
            let matched = if !r.on_conditions.is_empty() {
                r.on_conditions.iter().any(|cond| match cond.as_str() {
                    "OOMKilled" => filtered.iter().any(|c| c.reason.as_deref() == Some("OOMKilled")),
                    "Evicted" => pod_reason(Condition::Evicted),
                    "DeadlineExceeded" => pod_reason(Condition::DeadlineExceeded),
                    _ => false,
                })
            } else if let Some(m) = &r.on_exit_codes {
                filtered.iter().any(|c| {
                    let member = m.values.iter().any(|v| *v as i64 == c.exit_code);
                    match m.operator.as_str() {
                        "In" => member,
                        _ => !member,
                    }
                })
            } else if let Some(p) = &r.on_termination_message {
                filtered.iter().any(|c| {
                    let m = c.message.clone().unwrap_or_default();
                    !m.is_empty() && re(p).is_match(&m)
                })
            } else if let Some(p) = &r.on_pod_error {
                !pod_error.is_empty() && re(p).is_match(pod_error)
            } else if let Some(e) = &r.on_pod_events {
                events.iter().any(|ev| {
                    (e.reason.is_empty() || e.reason == ev.reason)
                        && e.event_type == ev.event_type
                        && !ev.message.is_empty()
                        && re(&e.regexp).is_match(&ev.message)
                })
            } else {
                false
            };
            if matched {
                return (cat.name.clone(), r.subcategory.clone(), cat.action == "Delete");
            }
        }
    }
    (
        config.default_category.clone(),
        config.default_subcategory.clone(),
        false,
    )
}

const NAMES: [&str; 4] = ["main", "sidecar", "init", ""];
const MESSAGES: [&str; 7] = [
    "",
    "CUDA error: out of memory",
    "segfault at 0x0",
    "cuda",
    "xid 79",
    "é\nCUDA Error",
    "XID 79: ErrImage",
];
// Literals the prefilter scans for (some folded, some in an alternation) and patterns it
// cannot (`.*`, `x|y`): every kind of rule it gates or leaves always possible.
const PATTERNS: [&str; 11] = [
    "cuda",
    "(?i)cuda.*error",
    "^seg",
    ".*",
    "platform",
    "x|y",
    "Error$",
    "(?i)xid [0-9]+",
    "(ErrImage|manifest)",
    // What only a failed pod's composed failure text holds.
    "exit code 137 because OOMKilled",
    "(?m)^Container sidecar failed",
];
const POD_ERRORS: [&str; 3] = ["", "no match for platform in manifest", "ErrImagePull"];
const EVENT_MESSAGES: [&str; 3] = ["", "Pod Allocate failed", "xid"];

fn rule() -> impl Strategy<Value = CategoryRule> {
    let name = prop::sample::select(&NAMES[..3]);
    let container = prop_oneof![Just(String::new()), name.prop_map(str::to_string)];
    let conditions = prop::sample::subsequence(vec!["OOMKilled", "Evicted", "DeadlineExceeded"], 1..=3)
        .prop_map(|v| v.into_iter().map(str::to_string).collect::<Vec<_>>());
    let codes = (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(vec![1, 2, 42, 137, -1]), 1..3),
    );
    let pattern = prop::sample::select(&PATTERNS[..]).prop_map(str::to_string);
    let events = (
        pattern.clone(),
        prop::sample::select(vec!["", "A", "B"]),
        prop::sample::select(vec!["Normal", "Warning"]),
    );
    let sub = prop::sample::select(vec!["", "s1", "s2"]);
    (0..5usize, container, conditions, codes, pattern, events, sub).prop_map(
        |(kind, container_name, conditions, (not_in, values), pattern, (regexp, reason, ty), sub)| {
            let mut r = CategoryRule {
                container_name,
                subcategory: sub.to_string(),
                ..CategoryRule::default()
            };
            match kind {
                0 => r.on_conditions = conditions,
                1 => {
                    r.on_exit_codes = Some(ExitCodeMatcher {
                        operator: if not_in { "NotIn" } else { "In" }.into(),
                        values,
                    })
                }
                2 => r.on_termination_message = Some(pattern),
                3 => r.on_pod_error = Some(pattern),
                _ => {
                    r.on_pod_events = Some(PodEventMatcher {
                        regexp,
                        reason: reason.into(),
                        event_type: ty.into(),
                    })
                }
            }
            r
        },
    )
}

fn config_strategy() -> impl Strategy<Value = ErrorCategories> {
    let category = (
        prop::sample::select(vec!["", "Retain", "Delete"]),
        prop::collection::vec(rule(), 1..4),
    );
    (
        prop::bool::weighted(0.9),
        prop::sample::select(vec!["", "other"]),
        prop::sample::select(vec!["", "unknown"]),
        prop::collection::vec(category, 0..4),
    )
        .prop_map(|(enabled, dc, ds, cats)| ErrorCategories {
            shape: Shape::Bare,
            enabled,
            default_category: dc.into(),
            default_subcategory: ds.into(),
            categories: cats
                .into_iter()
                .enumerate()
                .map(|(i, (action, rules))| Category {
                    name: format!("c{i}"),
                    action: action.into(),
                    rules,
                })
                .collect(),
        })
}

fn run_strategy() -> impl Strategy<Value = Run> {
    let container = (
        prop::sample::select(&NAMES[..]),
        any::<bool>(),
        prop::sample::select(vec![0i64, 1, 2, 42, 137, -1, 4_294_967_338]),
        prop::sample::select(vec!["", "OOMKilled", "Error"]),
        prop::sample::select(&MESSAGES[..]),
    )
        .prop_map(|(name, init, code, reason, message)| Container {
            init,
            ..container(name, code, reason, message)
        });
    let event = (
        prop::sample::select(vec!["Normal", "Warning", ""]),
        prop::sample::select(vec!["", "A", "B"]),
        prop::sample::select(&EVENT_MESSAGES[..]),
    )
        .prop_map(|(t, r, m)| event(t, r, m));
    (
        prop::collection::vec(container, 0..4),
        prop::sample::subsequence(
            vec![Condition::Evicted, Condition::DeadlineExceeded, Condition::Preempted],
            0..=2,
        ),
        prop::option::of(prop::sample::select(&POD_ERRORS[..])),
        prop::collection::vec(event, 0..3),
        prop::option::weighted(0.2, prop::sample::select(vec!["internal", "preemption", "c0", "oom"])),
        prop::option::weighted(0.7, prop::sample::select(ExecutorPath::ALL.to_vec())),
    )
        .prop_map(
            |(containers, conditions, pod_error, events, category, executor_path)| Run {
                containers,
                conditions,
                pod_error: pod_error.map(str::to_string),
                events,
                category: category.map(str::to_string),
                executor_path,
                ..Run::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn agrees_with_a_plain_transliteration_of_upstream(config in config_strategy(), runs in prop::collection::vec(run_strategy(), 1..6)) {
        let classifier = Classifier::new(&config).unwrap();
        for run in &runs {
            let got = match classifier.classify(run) {
                Categorized::Recorded => None,
                Categorized::Classified(c) => Some((
                    c.category.unwrap_or_default().to_string(),
                    c.subcategory.unwrap_or_default().to_string(),
                    c.action == PodAction::Delete,
                )),
            };
            prop_assert_eq!(got, reference(&config, run), "{:?}", run);
        }
    }
}

/// Categories to put before a deployed config not known: a run they match is theirs, any
/// other keeps the category it was recorded with (never the defaults).
#[test]
fn prepended_categories_leave_the_runs_they_do_not_match_as_recorded() {
    let yaml = "errorCategories:\n  enabled: true\n  defaultCategory: other\n  categories:\n    - name: s-oom-main\n      rules:\n        - onConditions: [OOMKilled]\n          containerName: main\n";
    let c = Classifier::new(&config(yaml)).unwrap().prepended();
    let oom = terminated(137, "OOMKilled", "");
    assert!(matches!(c.classify(&oom), Categorized::Classified(r) if r.category == Some("s-oom-main")));
    let exit = terminated(1, "", "boom");
    assert_eq!(c.classify(&exit), Categorized::Recorded);
    // Without `prepended`, the same run takes the default category.
    let plain = Classifier::new(&config(yaml)).unwrap();
    assert!(matches!(plain.classify(&exit), Categorized::Classified(r) if r.category == Some("other")));
}

/// What each executor path hands the classifier (docs/categorizer.md "Which matchers see
/// what"): a pod issue its text and no events, a failed pod nothing pod-level unless the
/// Delete-action check finds a `Delete` category first, a run that does not say everything.
#[test]
fn each_path_gives_the_classifier_what_the_executor_gives_it() {
    let yaml = "errorCategories:\n  enabled: true\n  defaultCategory: other\n  categories:\n    \
        - name: admission\n      action: Delete\n      rules:\n        - onPodEvents: {regexp: Allocate, type: Warning}\n    \
        - name: image\n      rules:\n        - onPodError: {pattern: 'not found|NotFound'}\n          hint: check the image\n    \
        - name: evicted-gone\n      action: Delete\n      rules:\n        - onPodError: {pattern: 'low on resource'}\n    \
        - name: crash\n      rules:\n        - onExitCodes: {operator: In, values: [1]}\n";
    let c = Classifier::new(&config(yaml)).unwrap();
    let category = |run: &Run| match c.classify(run) {
        Categorized::Classified(r) => (r.category.unwrap_or("none").to_string(), c.classify(run).pod_retained()),
        Categorized::Recorded => ("recorded".to_string(), false),
    };
    let stuck = "Unable to start pod - encountered an unrecoverable problem.\nMatched check: \"check-0\"\nFailed to pull image \"x\": not found";
    let allocate = vec![event("Warning", "UnexpectedAdmissionError", "Pod Allocate failed")];
    let run =
        |path: Option<ExecutorPath>, pod_error: Option<&str>, events: Vec<PodEvent>, containers: Vec<Container>| Run {
            executor_path: path,
            pod_error: pod_error.map(String::from),
            events,
            containers,
            ..Run::default()
        };
    let rows: Vec<(&str, Run, (&str, bool))> = vec![
        (
            "a stuck pod: its text, and the pod is deleted whatever the category",
            run(Some(ExecutorPath::StuckPod), Some(stuck), vec![], vec![]),
            ("image", false),
        ),
        (
            "a stuck pod: no events, even with the debug document's",
            run(
                Some(ExecutorPath::StuckPod),
                Some("Unable to start pod.\nx"),
                allocate.clone(),
                vec![],
            ),
            ("other", false),
        ),
        (
            "a failed-pod check: its message",
            run(
                Some(ExecutorPath::FailedPodCheck),
                Some("manifest NotFound"),
                vec![],
                vec![],
            ),
            ("image", false),
        ),
        (
            "a failed pod: the events of a Delete category's rule",
            run(
                Some(ExecutorPath::FailedPod),
                None,
                allocate.clone(),
                vec![container("main", 1, "Error", "x")],
            ),
            ("admission", false),
        ),
        (
            "a failed pod: a Retain category's `onPodError` is the check's, discarded",
            run(
                Some(ExecutorPath::FailedPod),
                None,
                vec![],
                vec![container("main", 1, "Error", "pull: not found")],
            ),
            ("crash", true),
        ),
        (
            "a failed pod: the composed text a Delete category's `onPodError` reads",
            run(
                Some(ExecutorPath::FailedPod),
                Some("The node was low on resource: memory."),
                vec![],
                vec![],
            ),
            ("evicted-gone", false),
        ),
        (
            "a failed pod whose status message Lookout kept on the unnamed container",
            run(
                Some(ExecutorPath::FailedPod),
                None,
                vec![],
                vec![container("", 137, "", "The node was low on resource: memory.")],
            ),
            ("evicted-gone", false),
        ),
        (
            "the check's Retain match hides a later Delete rule: the containers decide",
            run(
                Some(ExecutorPath::FailedPod),
                Some("image not found; node low on resource"),
                vec![],
                vec![container("main", 2, "Error", "")],
            ),
            ("other", true),
        ),
        (
            "a run that does not say: every matcher sees what it gives",
            run(None, Some("pull: not found"), vec![], vec![]),
            ("image", true),
        ),
        (
            "unclassified: recorded",
            run(Some(ExecutorPath::Unclassified), Some(stuck), vec![], vec![]),
            ("recorded", false),
        ),
    ];
    for (what, r, (want, retained)) in rows {
        assert_eq!(category(&r), (want.to_string(), retained), "{what}");
    }
}
