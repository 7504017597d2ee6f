//! The bar "no allocation per decision" (docs/reference/bars.md): the design engine's evaluator makes no heap allocation per decision.
//! The executor's categorizer makes none per run either (`classifying_a_run_allocates_nothing`),
//! nor does the replay classifying a history in place once warm (`reclassifying_…`).
//!
//! A categorizer within its caps holds bounded memory too (`a_categorizer_at_its_caps_holds_bounded_memory`:
//! 4,000 rules of `x{k}\pL{6}`), counted as the bytes its thread has live.
//!
//! Its own test binary (Cargo.toml `[[test]] alloc`) because it installs a counting global
//! allocator. The count is per thread (a `thread_local` counter), so the test harness and
//! other tests running in parallel do not disturb it. Every case is evaluated once to warm
//! up (the regex engine fills its per-thread cache on first use), then counted over fresh
//! job states, as the bar measures: the first retry under a rule is where a counter is
//! created.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use retryctl::engine::{evaluate, CompiledPolicy, JobContext, JobState, Policies, Settings, SharedRegexes};
use retryctl::model::failure_history::{Outcome, Run};
use retryctl::model::policy::{Action, AffinityMutation, Condition, ExitCodes, Mutation, Operator, RetryPolicy, Rule};
use retryctl::model::GoDuration;

#[path = "../benches/fixtures/evaluator.rs"]
mod fixture;
use fixture::run;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated less bytes freed by this thread (a block freed by another thread is
    /// not subtracted: the cases that read it allocate and free on one thread).
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: allocations during thread teardown, after the counter is gone, are not ours.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn live(bytes: i64) {
    let _ = LIVE.try_with(|n| n.set(n.get() + bytes));
}

// SAFETY: every call is forwarded to the system allocator unchanged; counting touches only
// a thread-local `Cell` (const-initialised, no destructor, never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        live(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        live(layout.size() as i64);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        live(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        live(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// The benchmark's policy set (`benches/evaluator.rs`): 20 rules mixing category, exit-code,
/// container + message and condition + category matchers; plus, in the last policy, rules
/// that exercise a real regular expression, anti-affinity, `avoidSameNode` and a memory bump.
fn policy(p: usize) -> RetryPolicy {
    let mut rules = fixture::rules(p);
    if p == 2 {
        rules.push(Rule {
            action: Action::Retry,
            on_termination_message: Some(r"illegal\s+memory\s+acc[a-z]ss".into()),
            on_failure_category: Some(vec!["regex".into()]),
            mutate: Some(Mutation {
                affinity: Some(AffinityMutation { avoid_same_node: true }),
                ..Mutation::default()
            }),
            ..Rule::default()
        });
        rules.push(Rule {
            action: Action::Fail,
            on_conditions: Some(vec![Condition::OOMKilled]),
            ..Rule::default()
        });
    }
    RetryPolicy {
        name: format!("policy-{p}"),
        default_action: Some(if p == 1 { Action::Retry } else { Action::Fail }),
        rules,
        ..RetryPolicy::default()
    }
}

/// Rules only the newer tables reject untried: `containerName` + `onExitCodes` (per-container
/// exit-code rows) and regex message rules `10..rules`: with at most 64 rules, one
/// multi-pattern search into a reused pattern set; with more, the chunked `RegexSet`s.
fn late_policy(rules: i64) -> RetryPolicy {
    let named = (0..10).map(|r| Rule {
        action: Action::Retry,
        container_name: Some("main".into()),
        on_exit_codes: Some(ExitCodes {
            operator: Operator::In,
            values: vec![200 + r],
        }),
        ..Rule::default()
    });
    let regexes = (10..rules).map(|r| Rule {
        action: Action::Retry,
        on_termination_message: Some(format!(r"^Xid \d+ rule {r}:")),
        ..Rule::default()
    });
    RetryPolicy {
        name: "late".into(),
        default_action: Some(Action::Fail),
        rules: named.chain(regexes).collect(),
        ..RetryPolicy::default()
    }
}

/// Rule `r` of policy `p` of an Xid catalog (the evaluator bench's worst case): 20 anchored
/// regex message rules per policy, for the list's shared regexes.
fn catalog_policy(p: usize) -> RetryPolicy {
    RetryPolicy {
        name: format!("xid-{p}"),
        default_action: Some(Action::Fail),
        rules: (0..20)
            .map(|r| Rule {
                action: Action::Retry,
                on_termination_message: Some(format!(r"^NVRM: Xid \d+, pid=\d+, policy {p} rule {r}:")),
                ..Rule::default()
            })
            .collect(),
        ..RetryPolicy::default()
    }
}

/// `run(...)` with the main container's message replaced.
fn with_message(mut r: Run, message: &str) -> Run {
    r.containers[0].message = Some(message.into());
    r
}

#[test]
fn a_decision_allocates_nothing() {
    let compiled: Vec<CompiledPolicy> = (0..3).map(|p| CompiledPolicy::new(policy(p)).unwrap()).collect();
    let all: Vec<&CompiledPolicy> = compiled.iter().collect();
    let without_default: Vec<&CompiledPolicy> = vec![&compiled[0], &compiled[2]];
    let late_compiled = CompiledPolicy::new(late_policy(22)).unwrap();
    let late: Vec<&CompiledPolicy> = vec![&late_compiled];
    let wide_compiled = CompiledPolicy::new(late_policy(70)).unwrap();
    let wide: Vec<&CompiledPolicy> = vec![&wide_compiled];
    let catalog_compiled: Vec<CompiledPolicy> = (0..3)
        .map(|p| CompiledPolicy::new(catalog_policy(p)).unwrap())
        .collect();
    let catalog: Vec<&CompiledPolicy> = catalog_compiled.iter().collect();
    let settings = Settings::default();
    let job = JobContext::new("job-0000042", false, GoDuration::from_secs(30));
    let failed = Outcome::Failed;
    let cases: Vec<(&str, &[&CompiledPolicy], Run)> = vec![
        (
            "last category rule",
            all.as_slice(),
            run("cat-2-16", 1, "Error", failed),
        ),
        ("first rule", all.as_slice(), run("cat-0-0", 1, "Error", failed)),
        ("exit code rule", all.as_slice(), run("nothing", 121, "Error", failed)),
        ("default retry", all.as_slice(), run("nothing", 1, "Error", failed)),
        (
            "default fail",
            without_default.as_slice(),
            run("nothing", 1, "Error", failed),
        ),
        (
            "regex + avoidSameNode",
            without_default.as_slice(),
            run("regex", 1, "Error", failed),
        ),
        (
            "OOMKilled fail rule",
            without_default.as_slice(),
            run("nothing", 137, "OOMKilled", failed),
        ),
        ("legacy", &[][..], run("nothing", 1, "Error", failed)),
        (
            "lease returned",
            all.as_slice(),
            run("nothing", 0, "", Outcome::LeaseReturned),
        ),
        ("cancelled", all.as_slice(), run("nothing", 0, "", Outcome::Cancelled)),
        (
            "named exit code rule",
            late.as_slice(),
            run("nothing", 205, "Error", failed),
        ),
        (
            "regex rule found by the multi-pattern search",
            late.as_slice(),
            with_message(
                run("nothing", 1, "Error", failed),
                "Xid 79 rule 20: GPU has fallen off the bus",
            ),
        ),
        (
            "last regex rule of three policies",
            catalog.as_slice(),
            with_message(
                run("nothing", 1, "Error", failed),
                "NVRM: Xid 79, pid=1234, policy 2 rule 19: GPU has fallen off the bus",
            ),
        ),
        (
            "regex rule in a later chunk",
            wide.as_slice(),
            with_message(
                run("nothing", 1, "Error", failed),
                "Xid 79 rule 20: GPU has fallen off the bus",
            ),
        ),
    ];
    // Each case with each policy's own search and with the list's shared regexes (one search of
    // a message for every policy; its DFA built by the warm-up decision).
    let shared: Vec<Option<SharedRegexes>> = cases.iter().map(|(_, list, _)| SharedRegexes::new(list)).collect();
    for ((name, list, r), shared) in cases.iter().zip(&shared) {
        for policies in [Policies::alone(list), Policies::new(list, shared.as_ref())] {
            decide_without_allocating(name, policies, &settings, &job, r);
        }
    }
    // A job that keeps failing: counters under a handful of rules stay inline.
    let mut state = JobState::new(None);
    let r = run("cat-2-16", 1, "Error", failed);
    let before = allocations();
    for i in 0..15 {
        black_box(evaluate(
            Policies::alone(&all),
            &settings,
            &job,
            &mut state,
            &r,
            i,
            1_000,
        ));
    }
    assert_eq!(allocations() - before, 0, "15 decisions of one job");
}

/// One warm-up decision (lazily built caches and DFAs are not per decision), then 100 counted
/// decisions over fresh job states.
fn decide_without_allocating(name: &str, policies: Policies<'_>, settings: &Settings, job: &JobContext<'_>, r: &Run) {
    {
        black_box(evaluate(policies, settings, job, &mut JobState::new(None), r, 0, 1_000));
        let mut states: Vec<JobState> = (0..100).map(|_| JobState::new(Some(1e9))).collect();
        let before = allocations();
        for (i, state) in states.iter_mut().enumerate() {
            black_box(evaluate(
                black_box(policies),
                settings,
                job,
                state,
                black_box(r),
                i,
                1_000,
            ));
        }
        let made = allocations() - before;
        assert_eq!(made, 0, "{name}: {made} heap allocations in 100 decisions");
    }
}

/// The executor's categorizer runs on every run of a replay: classifying one allocates
/// nothing either (its regexes warmed up first, as above).
#[test]
fn classifying_a_run_allocates_nothing() {
    use retryctl::engine::categorizer::{Categorized, Classifier};
    use retryctl::model::categorizer::{Category, CategoryRule, ErrorCategories, ExitCodeMatcher, PodEventMatcher};
    use retryctl::model::failure_history::{Container, PodEvent};

    let rule = |f: &dyn Fn(&mut CategoryRule)| {
        let mut r = CategoryRule::default();
        f(&mut r);
        r
    };
    let config = ErrorCategories {
        enabled: true,
        default_category: "uncategorized".into(),
        categories: vec![
            Category {
                name: "oom".into(),
                action: "Delete".into(),
                rules: vec![rule(&|r| r.on_conditions = vec!["OOMKilled".into()])],
            },
            Category {
                name: "infra".into(),
                action: String::new(),
                rules: vec![
                    rule(&|r| r.on_pod_error = Some("no match for platform".into())),
                    rule(&|r| {
                        r.on_pod_events = Some(PodEventMatcher {
                            regexp: "Allocate failed.*gpu".into(),
                            reason: String::new(),
                            event_type: "Warning".into(),
                        })
                    }),
                    rule(&|r| {
                        r.container_name = "main".into();
                        r.on_termination_message = Some("(?i)cuda.*error".into());
                    }),
                    rule(&|r| {
                        r.on_exit_codes = Some(ExitCodeMatcher {
                            operator: "In".into(),
                            values: vec![74, 75],
                        })
                    }),
                ],
            },
        ],
        ..ErrorCategories::default()
    };
    let classifier = Classifier::new(&config).unwrap();
    let runs = [
        Run {
            containers: vec![Container {
                name: "main".into(),
                exit_code: 1,
                message: Some("CUDA error: an illegal memory access".into()),
                ..Container::default()
            }],
            events: vec![PodEvent {
                event_type: "Warning".into(),
                reason: "UnexpectedAdmissionError".into(),
                message: "Pod Allocate failed for nvidia.com/cpu".into(),
            }],
            ..Run::default()
        },
        Run {
            pod_error: Some("ErrImagePull".into()),
            containers: vec![Container {
                exit_code: 3,
                ..Container::default()
            }],
            ..Run::default()
        },
    ];
    for r in &runs {
        black_box(classifier.classify(r));
    }
    let before = allocations();
    for _ in 0..100 {
        for r in &runs {
            assert!(matches!(
                black_box(classifier.classify(black_box(r))),
                Categorized::Classified(_)
            ));
        }
    }
    assert_eq!(allocations() - before, 0, "classifying allocated");
}

/// A replay's worker classifies each history in place and puts the recorded categories back
/// (`replay::categorize::Reclassify`): once its pool of strings is warm, a job costs no
/// allocation, whatever its runs' categories change to or from.
#[test]
fn reclassifying_a_history_allocates_nothing_once_warm() {
    use retryctl::engine::categorizer::Classifier;
    use retryctl::engine::EngineKind;
    use retryctl::model::categorizer::{Category, CategoryRule, ErrorCategories, ExitCodeMatcher};
    use retryctl::model::failure_history::{Container, FailureHistory};
    use retryctl::replay::categorize::{CategoryCounts, Reclassify};

    let config = ErrorCategories {
        enabled: true,
        default_category: "uncategorized".into(),
        default_subcategory: "unknown".into(),
        categories: vec![Category {
            name: "user_error".into(),
            action: String::new(),
            rules: vec![CategoryRule {
                on_exit_codes: Some(ExitCodeMatcher {
                    operator: "In".into(),
                    values: vec![1],
                }),
                subcategory: "exit".into(),
                ..CategoryRule::default()
            }],
        }],
        ..ErrorCategories::default()
    };
    let classifier = Classifier::new(&config).unwrap();
    let failed = |code: i64, category: Option<&str>| Run {
        category: category.map(str::to_string),
        containers: vec![Container {
            name: "main".into(),
            exit_code: code,
            ..Container::default()
        }],
        ..Run::default()
    };
    let mut history = FailureHistory {
        runs: vec![
            failed(1, Some("user-error")),
            failed(3, None),
            failed(1, None),
            failed(3, Some("cuda")),
            Run {
                outcome: Outcome::Succeeded,
                ..Run::default()
            },
        ],
        ..FailureHistory::default()
    };
    let recorded = history.clone();
    let report = retryctl::engine::replay(&history, &[], &retryctl::engine::Settings::default());
    let (mut scratch, mut counts) = (Reclassify::default(), CategoryCounts::default());
    let once = |scratch: &mut Reclassify, counts: &mut CategoryCounts, history: &mut FailureHistory| {
        scratch.apply(&classifier, history, Some(&mut *counts), None);
        scratch.collisions(EngineKind::Upstream, black_box(&report), counts);
        scratch.restore(history);
    };
    // Warm: a pooled buffer may still grow the first few times it takes a longer name.
    for _ in 0..3 {
        once(&mut scratch, &mut counts, &mut history);
    }
    assert_eq!(history, recorded, "restore puts the recorded categories back");
    let before = allocations();
    for _ in 0..100 {
        once(&mut scratch, &mut counts, black_box(&mut history));
    }
    assert_eq!(allocations() - before, 0, "reclassifying allocated");
    assert_eq!(history, recorded);
    assert_eq!(counts.changed_runs(), 103 * 4);
}

/// bounded within the caps: a categorizer of 1,000 categories × 4 rules, each an
/// `onTerminationMessage` or `onPodError` pattern `L{k}\pL{6}` (4,000 distinct patterns, none
/// with a literal the prefilter could scan for), built and run on a failed run that none
/// matches (so every rule's pattern is searched), holds under 16 MiB. Each pattern compiled by
/// the `regex` crate took ~300 KiB (its forward and reverse automata of six copies of `\pL`'s
/// UTF-8 states): 1.25 GB for the config in `simulate`, before the classifier bounded them
/// (`engine::matcher::Pattern`, `PatternPool`).
#[test]
fn a_categorizer_at_its_caps_holds_bounded_memory() {
    use retryctl::engine::categorizer::{Categorized, Classifier};
    use retryctl::model::categorizer::{Category, CategoryRule, ErrorCategories};
    use retryctl::model::failure_history::Container;

    let letters: Vec<char> = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN".chars().collect();
    let categories = (0..1000)
        .map(|i| Category {
            name: format!("cat-{i}"),
            action: "Delete".into(),
            rules: (0..4)
                .map(|r| {
                    let n = i * 4 + r;
                    let pattern = format!("{}{{{}}}\\pL{{6}}", letters[n / 100], n % 100 + 1);
                    if r % 2 == 0 {
                        CategoryRule {
                            on_termination_message: Some(pattern),
                            ..CategoryRule::default()
                        }
                    } else {
                        CategoryRule {
                            on_pod_error: Some(pattern),
                            ..CategoryRule::default()
                        }
                    }
                })
                .collect(),
        })
        .collect();
    let config = ErrorCategories {
        enabled: true,
        default_category: "uncategorized".into(),
        categories,
        ..ErrorCategories::default()
    };
    let run = Run {
        pod_error: Some("xxxx: pull failed".into()),
        containers: vec![Container {
            name: "main".into(),
            exit_code: 1,
            message: Some("xxx failed: Fehler über Ωmega".into()),
            ..Container::default()
        }],
        ..Run::default()
    };
    let before = LIVE.with(Cell::get);
    let classifier = Classifier::new(&config).unwrap();
    let Categorized::Classified(c) = classifier.classify(&run) else {
        panic!("a failed run is classified");
    };
    assert_eq!((c.category, c.rule), (Some("uncategorized"), None));
    // A message only `x{1}\pL{6}` matches (rule 2,300: category 575's first) finds it past the
    // 2,300 before it.
    let greek = Run {
        containers: vec![Container {
            name: "main".into(),
            exit_code: 1,
            message: Some("failed: xαβγδεζ".into()),
            ..Container::default()
        }],
        ..Run::default()
    };
    let Categorized::Classified(c) = classifier.classify(&greek) else {
        panic!("a failed run is classified");
    };
    assert_eq!((c.category, c.rule), (Some("cat-575"), Some((575, 0))));
    let held = LIVE.with(Cell::get) - before;
    // ~4 MiB: 4,000 programs of ~107 instructions, one set of `\pL`'s ranges for all.
    assert!(held < 16 << 20, "the classifier holds {} MiB", held >> 20);
    drop(classifier);
}
