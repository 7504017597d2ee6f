//! `simulate --engine upstream` (docs/engines.md): upstream's own test tables replayed as
//! FailureHistory files (testdata/histories/upstream, each with its `expect`), the cases
//! where the design engine decides otherwise, and the refusal of what upstream cannot read.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{format_output, retryctl, root, temp_home};

const POLICIES: &str = "testdata/histories/upstream/policies";

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
        assert!(
            out.stderr.is_empty(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
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
