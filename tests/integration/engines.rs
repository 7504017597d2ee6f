//! `simulate --engine upstream` (docs/engines.md): upstream's own test tables replayed as
//! FailureHistory files (testdata/histories/upstream, each with its `expect`), the cases
//! where the design engine decides otherwise, and the refusal of what upstream cannot read.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{format_output, retryctl, root, temp_home};

const POLICIES: &str = "testdata/histories/upstream/policies";

/// What an upstream replay without `--scheduler-config` says on stderr (docs/engines.md "The
/// scheduler's settings").
pub(crate) const SHIPPED: &str = "scheduler: upstream's shipped defaults: globalMaxRetries 5, maxRetries 3 (4 attempts); the retry engine assumed enabled: pass --scheduler-config";

fn simulate(home: &Path, engine: &str, history: &Path, extra: &[&str]) -> Output {
    retryctl(home)
        .args(["simulate", "-f", POLICIES, "--engine", engine])
        .args(extra)
        .arg("--history")
        .arg(history)
        .output()
        .unwrap()
}

#[test]
fn every_upstream_table_case_meets_its_expectations() {
    let home = temp_home();
    let mut count = 0;
    for path in crate::support::yaml_files("testdata/histories/upstream") {
        count += 1;
        let out = simulate(home.path(), "upstream", &path, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}:\n{}",
            path.display(),
            format_output(&out)
        );
        // Replayed under today's Armada's scheduler as upstream ships it, said once.
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("{SHIPPED}\n"),
            "{}",
            path.display()
        );
    }
    assert!(count >= 25, "only {count} upstream histories");
}

/// (final state, last decision kind, retries) of one job under `engine`.
fn outcome(home: &Path, engine: &str, file: &str) -> (String, String, u64) {
    let path = root().join("testdata/histories/upstream").join(file);
    let out = simulate(home, engine, &path, &["-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", format_output(&out)));
    let job = &v["jobs"][0];
    let last = job["runs"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find_map(|r| r["decision"].as_str());
    (
        job["outcome"]["final"].as_str().unwrap().to_string(),
        last.unwrap_or("none").to_string(),
        job["retries"].as_u64().unwrap(),
    )
}

#[test]
fn where_the_engines_disagree_the_design_answer_is_pinned() {
    let home = temp_home();
    // (file, upstream, design): the same history, decided by each engine.
    let cases = [
        // Only the first policy counts upstream; the design concatenates both.
        (
            "two-policies-first-only.yaml",
            ("Failed", "fail_default", 0),
            ("Pending", "retry", 1),
        ),
        // Upstream ends the job at a preemption; the design evaluates it (default Retry).
        (
            "failed-then-preempted.yaml",
            ("Failed", "preempted", 1),
            ("Pending", "retry", 2),
        ),
        // Upstream ignores the policy for a gang; the design has no gangs.
        (
            "gang-is-never-retried.yaml",
            ("Failed", "legacy_fail", 0),
            ("Pending", "retry", 1),
        ),
        // A rule's limit: upstream `fail_policy_limit`, the design `fail_rule_limit` (its counter).
        (
            "retry-limit-exceeded.yaml",
            ("Failed", "fail_policy_limit", 3),
            ("Failed", "fail_rule_limit", 3),
        ),
    ];
    for (file, upstream, design) in cases {
        let got = outcome(home.path(), "upstream", file);
        assert_eq!((got.0.as_str(), got.1.as_str(), got.2), upstream, "{file} upstream");
        let got = outcome(home.path(), "design", file);
        assert_eq!((got.0.as_str(), got.1.as_str(), got.2), design, "{file} design");
    }
}

#[test]
fn upstream_table_names_the_first_policy_only_and_speaks_upstreams_words() {
    let home = temp_home();
    let path = root().join("testdata/histories/upstream/two-policies-first-only.yaml");
    let out = simulate(home.path(), "upstream", &path, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  engine:    upstream (Armada today: categories only, preemption ends the job, no backoff)\n"),
        "{text}"
    );
    assert!(
        text.contains("  policies:  strict (upstream evaluates only the queue's first policy; ignored: retry-gpu)\n"),
        "{text}"
    );
    assert!(
        text.contains("no rule matched, using default action (policy strict/default)"),
        "{text}"
    );

    let path = root().join("testdata/histories/upstream/retry-limit-exceeded.yaml");
    let out = simulate(home.path(), "upstream", &path, &["-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["engine"], "upstream");
    let reasons: Vec<&str> = v["jobs"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons[3], "policy retry limit exceeded (3/3) (policy retry-3/default)");
    // Upstream's executor reuses one pod name for every run.
    let pods: Vec<&str> = v["jobs"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["podName"].as_str().unwrap())
        .collect();
    assert!(pods.iter().all(|p| *p == "armada-retry-limit-exceeded-0"), "{pods:?}");
}

#[test]
fn upstream_refuses_a_policy_it_cannot_read_naming_every_field() {
    let home = temp_home();
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "--engine",
            "upstream",
        ])
        .args(["--history", "testdata/histories/design-composition.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        "error: the upstream engine cannot evaluate these fields (upstream Armada cannot store them):
  testdata/policies/valid/infra.yaml: policy `infra`: spec.defaultAction (unset: upstream refuses a policy without one)
  testdata/policies/valid/infra.yaml: policy `infra`: spec.rules[0].onConditions
  testdata/policies/valid/infra.yaml: policy `infra`: spec.rules[0] (no category: upstream stores only category rules)
  testdata/policies/valid/infra.yaml: policy `infra`: spec.rules[0].antiAffinity

hint: use --engine design, or keep the policy to what upstream stores (see `retryctl validate --upstream`)
"
    );
    assert!(out.stdout.is_empty());
}

/// docs/engines.md, docs/reference/wire.md: a policy without `defaultAction` is refused by the upstream engine on
/// either side of a comparison, naming the field, and the hint names the flag that chose
/// that side's engine. The design engine reads it as `Fail`.
#[test]
fn upstream_refuses_a_policy_without_default_action_on_either_side() {
    let home = temp_home();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("no-default.yaml");
    std::fs::write(
        &policy,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - {action: Retry, onCategory: gpu}\n",
    )
    .unwrap();
    let history = dir.path().join("h.yaml");
    std::fs::write(
        &history,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j}\nruns:\n  - {node: n1, category: app-error}\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        retryctl(home.path())
            .args(["simulate", "-f"])
            .arg(&policy)
            .args(args)
            .arg("--history")
            .arg(&history)
            .output()
            .unwrap()
    };
    let refused = |what: &str, flag: &str| {
        format!(
            "error: {what} cannot evaluate these fields (upstream Armada cannot store them):
  {}: policy `p`: spec.defaultAction (unset: upstream refuses a policy without one)

hint: use {flag} design, or keep the policy to what upstream stores (see `retryctl validate --upstream`)
",
            policy.display()
        )
    };
    let out = run(&["--engine", "upstream"]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        refused("the upstream engine", "--engine")
    );
    let baseline = policy.to_str().unwrap();
    let out = run(&["--baseline", baseline, "--baseline-engine", "upstream"]);
    assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        refused("the baseline's upstream engine", "--baseline-engine")
    );
    // The design engine keeps the documented default, Fail.
    let out = run(&["--engine", "design", "-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", format_output(&out)));
    assert_eq!(v["jobs"][0]["runs"][0]["decision"], "fail_default", "{v}");
}

#[test]
fn baseline_engine_compares_the_design_against_upstream_on_one_policy_set() {
    let home = temp_home();
    let path = root().join("testdata/histories/upstream/failed-then-preempted.yaml");
    let out = retryctl(home.path())
        .args([
            "simulate",
            "-f",
            POLICIES,
            "--baseline",
            POLICIES,
            "--engine",
            "design",
            "--baseline-engine",
            "upstream",
        ])
        .args(["-o", "json", "--history"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let j = &v["comparison"]["changedJobs"][0];
    assert_eq!(
        (j["baseline"]["final"].as_str(), j["candidate"]["final"].as_str()),
        (Some("Failed"), Some("Pending"))
    );
}

/// (decision, avoidNodes, limit) of every decided run of one job under `engine`.
fn records(home: &Path, engine: &str, file: &str) -> Vec<(String, Vec<String>, Option<u64>)> {
    let path = root().join("testdata/histories/upstream").join(file);
    let out = simulate(home, engine, &path, &["-o", "json"]);
    // The files' expectations are upstream's: the design misses some (exit 1).
    let want = if engine == "upstream" { 0 } else { 1 };
    assert_eq!(
        out.status.code(),
        Some(want),
        "{file} {engine}: {}",
        format_output(&out)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["jobs"][0]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let nodes = r["avoidNodes"].as_array()?;
            Some((
                r["decision"].as_str()?.to_string(),
                nodes.iter().map(|n| n.as_str().unwrap().to_string()).collect(),
                r["limit"].as_u64(),
            ))
        })
        .collect()
}

fn rec(decision: &str, nodes: &[&str], limit: Option<u64>) -> (String, Vec<String>, Option<u64>) {
    (
        decision.to_string(),
        nodes.iter().map(|n| n.to_string()).collect(),
        limit,
    )
}

/// docs/engines.md: upstream's avoidance is the job's node anti-affinity. A returned lease is an
/// attempted run whose requeue avoids every attempted node, and a later retry without
/// `avoidSameNode` (or the final decision) keeps what is avoided; `limit` on
/// `fail_global_limit` is the policy's. The design avoids only started runs' nodes, and
/// only on the retry that asks.
#[test]
fn upstream_avoidance_grows_with_returned_leases_and_persists() {
    let home = temp_home();
    let file = "lease-return-avoids-attempted-nodes.yaml";
    assert_eq!(
        records(home.path(), "upstream", file),
        [
            rec("retry", &[], Some(10)),
            rec("lease_returned", &["n1", "n2"], None),
            rec("retry", &["n1", "n2", "n3"], Some(10)),
        ]
    );
    assert_eq!(
        records(home.path(), "design", file),
        [
            rec("retry", &[], Some(10)),
            rec("lease_returned", &[], None),
            rec("retry", &["n1", "n3"], Some(10)),
        ]
    );
    let file = "avoidance-persists.yaml";
    assert_eq!(
        records(home.path(), "upstream", file),
        [
            rec("retry", &["n1"], Some(10)),
            rec("retry", &["n1"], Some(10)),
            rec("retry", &["n1", "n2", "n3"], Some(10)),
            rec("fail_global_limit", &["n1", "n2", "n3"], Some(10)),
        ]
    );
    assert_eq!(
        records(home.path(), "design", file),
        [
            rec("retry", &["n1"], Some(10)),
            rec("retry", &[], Some(10)),
            rec("retry", &["n1", "n2", "n3"], Some(10)),
            rec("fail_global_limit", &[], Some(10)),
        ]
    );

    // The table shows the same records: the returned lease's row lists n1,n2.
    let path = root().join("testdata/histories/upstream/lease-return-avoids-attempted-nodes.yaml");
    let out = simulate(home.path(), "upstream", &path, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("lease returned") && row.ends_with(" n1,n2"), "{row}");
    let path = root().join("testdata/histories/upstream/avoidance-persists.yaml");
    let out = simulate(home.path(), "upstream", &path, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("3 "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("3 of 10") && row.contains("3 of 3") && row.ends_with(" n1,n2,n3"),
        "{row}"
    );
}

/// Today's Armada's defaults: without `--scheduler-config` the upstream engine replays with
/// what upstream ships (`globalMaxRetries: 5`, `maxRetries: 3`: 4 attempts) and says so once
/// on stderr; a config file that states them gives the same replay and says nothing;
/// `--global-max-retries` is said as given; the design engine keeps the design's 20 (and 5
/// attempts on the legacy path), and says nothing.
#[test]
fn without_a_scheduler_config_upstream_replays_with_what_upstream_ships() {
    let home = temp_home();
    let history = root().join("testdata/histories/upstream/shipped-defaults.yaml");
    let run = |extra: &[&str]| simulate(home.path(), "upstream", &history, extra);
    let shipped = run(&[]);
    let table = |job: &str, rows: &str| {
        format!(
            "job {job}\n  queue:     q-retry-10\n  engine:    upstream (Armada today: categories only, preemption ends the job, no backoff)\n  \
             policies:  retry-10 (upstream evaluates only the queue's first policy)\n  global:    at most 5 retries per job (globalMaxRetries)\n{rows}\n\n"
        )
    };
    let capped = (0..5)
        .map(|k| {
            format!(
                "  {k}     armada-capped-0   n1     T+0s        failed (no signal)   retry-10/default   {n} of 10        {n} of 5        retry               0s      T+0s          -\n",
                n = k + 1
            )
        })
        .collect::<String>();
    let said = (0..5)
        .map(|k| {
            format!(
                "  run {k}: no rule matched, using default action: retry {} of 10 (policy retry-10/default)\n",
                k + 1
            )
        })
        .collect::<String>();
    let want = [
        table(
            "capped",
            &format!(
                "  RUN   POD               NODE   FAILED AT   FAILURE              RULE               RULE RETRIES   JOB RETRIES   DECISION            DELAY   ELIGIBLE AT   AVOID NODES\n\
                 {capped}  5     armada-capped-0   n1     T+0s        failed (no signal)   -                  5 of 10        5 of 5        fail_global_limit   -       -             -\n\
                 \n\
                 {said}  run 5: global max retries exceeded (5/5)\n  outcome: Failed permanently at run 5: global max retries exceeded (5/5)"
            ),
        ),
        table(
            "returned",
            "  RUN   POD                 NODE   FAILED AT   FAILURE          RULE   RULE RETRIES   JOB RETRIES   DECISION         DELAY   ELIGIBLE AT   AVOID NODES\n  \
             0     armada-returned-0   n1     T+0s        lease returned   -      -              0 of 5        lease_returned   0s      T+0s          n1\n  \
             1     armada-returned-0   n2     T+0s        lease returned   -      -              0 of 5        lease_returned   0s      T+0s          n1,n2\n  \
             2     armada-returned-0   n3     T+0s        lease returned   -      -              0 of 5        lease_returned   0s      T+0s          n1,n2,n3\n  \
             3     armada-returned-0   n4     T+0s        lease returned   -      -              0 of 5        legacy_fail      -       -             n1,n2,n3\n\n  \
             run 0: lease returned before the run started: requeued, no budget used\n  \
             run 1: lease returned before the run started: requeued, no budget used\n  \
             run 2: lease returned before the run started: requeued, no budget used\n  \
             run 3: no retry policy applies: a failed run is final, and a returned lease only requeues below maxAttemptedRuns 4 (legacy, attempt 4)\n  \
             outcome: Failed permanently at run 3: no retry policy applies: a failed run is final, and a returned lease only requeues below maxAttemptedRuns 4 (legacy, attempt 4)",
        ),
    ]
    .concat();
    let summary = "summary\n  jobs:      2 (10 runs)\n  outcomes:  0 succeeded, 2 failed, 0 cancelled, 0 pending\n  \
                   retries:   5 granted, 0s total delay added\n  compute:   0s recorded\n  \
                   POLICY/RULE           RETRIES GRANTED   PERMANENT FAILURES\n  \
                   (fail_global_limit)   0                 1\n  (legacy_fail)         0                 1\n  \
                   retry-10/default      5                 0\n  \
                   decisions: retry 5, fail_global_limit 1, legacy_fail 1, lease_returned 3\n  expectations: all met\n";
    assert_eq!(
        format_output(&shipped),
        format!("exit: 0\n--- stdout\n{want}{summary}--- stderr\n{SHIPPED}\n")
    );
    // The same values written out: the same replay, nothing assumed.
    let written = run(&crate::support::UPSTREAM_SCHEDULER);
    assert_eq!(
        format_output(&written),
        format_output(&shipped).replace(&format!("{SHIPPED}\n"), "")
    );
    // A partial config: what it leaves out is what upstream ships, as a deployed one overlays it.
    let partial = home.path().join("scheduler.yaml");
    std::fs::write(&partial, "scheduling:\n  retryPolicy:\n    enabled: true\n").unwrap();
    let partial = run(&["--scheduler-config", partial.to_str().unwrap()]);
    assert_eq!(format_output(&partial), format_output(&written));
    // A cap given on the command line is said as given.
    let six = run(&["--global-max-retries", "6"]);
    assert_eq!(
        String::from_utf8_lossy(&six.stderr).lines().next(),
        Some("scheduler: upstream's shipped defaults: globalMaxRetries 6 (--global-max-retries), maxRetries 3 (4 attempts); the retry engine assumed enabled: pass --scheduler-config")
    );
    // The design engine: the design's 20, 5 legacy attempts (the fourth return is requeued).
    let design = simulate(home.path(), "design", &history, &[]);
    let stdout = String::from_utf8_lossy(&design.stdout);
    assert_eq!(
        stdout
            .matches("  global:    at most 20 retries per job (globalMaxRetries)\n")
            .count(),
        2,
        "{stdout}"
    );
    assert!(
        stdout.contains("  outcomes:  0 succeeded, 0 failed, 0 cancelled, 2 pending\n"),
        "{stdout}"
    );
    assert!(!String::from_utf8_lossy(&design.stderr).contains("scheduler:"));
}

/// Every replay verb says once what it assumed of today's scheduler: `tune` and `suggest` as
/// `simulate`, and a sharded run's `merge` as one process does; none says it given a config.
#[test]
fn every_replay_verb_says_the_scheduler_settings_it_assumed() {
    let home = temp_home();
    let dir = home.path();
    let history = root().join("testdata/histories/upstream/shipped-defaults.yaml");
    let history = history.to_str().unwrap();
    let policies = root().join(POLICIES);
    let policies = policies.to_str().unwrap();
    let tune = [
        "tune",
        "-f",
        policies,
        "--history",
        history,
        "--vary",
        "retry-10:retryLimit=1..2",
    ];
    let suggest = [
        "suggest",
        "--history",
        history,
        "--baseline",
        policies,
        "--queue",
        "q-retry-10",
    ];
    let simulate = ["simulate", "-f", policies, "--history", history];
    for verb in [&tune[..], &suggest, &simulate] {
        let out = retryctl(dir).args(verb).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches(SHIPPED).count(), 1, "{verb:?}: {stderr}");
        assert!(stderr.starts_with(SHIPPED), "{verb:?}: {stderr}");
        let given = retryctl(dir)
            .args(verb)
            .args(crate::support::UPSTREAM_SCHEDULER)
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&given.stderr).contains("scheduler:"),
            "{verb:?}"
        );
    }
    for verb in [&tune[..], &simulate] {
        // The contention section is not summed in shards: one process leaves it out too.
        let verb = &[verb, &["--contention", "off"][..]].concat();
        let whole = retryctl(dir).args(verb).output().unwrap();
        let mut partials = Vec::new();
        for i in 0..2 {
            let shard = format!("{i}/2");
            let out = retryctl(dir)
                .args(verb)
                .args(["--shard", &shard, "-o", "partial"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
            let part = dir.join(format!("{}-{i}.json", verb[0]));
            std::fs::write(&part, &out.stdout).unwrap();
            partials.push(part);
        }
        let merged = retryctl(dir).arg("merge").args(&partials).output().unwrap();
        assert_eq!(format_output(&merged), format_output(&whole), "{verb:?}");
    }
}
