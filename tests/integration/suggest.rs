//! `retryctl suggest` on planted histories whose answer is known: every count recomputed here
//! from the generated runs, the proposal recovering the planted structure, `-o policy`
//! validating, and the comparison equal to `simulate -f PROPOSAL --baseline BASELINE`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{retryctl, root, temp_home};

/// A deterministic generator (a 64-bit LCG): the same history on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        (self.next() * n as f64) as u64 % n
    }
}

/// One planted kind of failure: how a failed run looks, and the chance that the next run of
/// the job succeeds (on the same node and on another).
struct Kind {
    jobs: u64,
    run: fn(&mut Rng, &str) -> Value,
    p_same: f64,
    p_other: f64,
    /// The node of the first run: a bad node's failures, or any node.
    bad_nodes: bool,
}

fn container(name: &str, exit: i64, reason: Option<&str>, message: Option<String>) -> Value {
    let mut c = json!({"name": name, "exitCode": exit});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

fn kinds() -> Vec<Kind> {
    vec![
        // A deterministic user error: never fixed by a retry.
        Kind {
            jobs: 120,
            run: |r, node| json!({"node": node, "runFor": "60s", "containers": [container("main", 1, None, Some(format!("ValueError: unknown config key 'lr{}'\nTraceback ...", r.below(1000))))]}),
            p_same: 0.0,
            p_other: 0.0,
            bad_nodes: false,
        },
        // A transient network error: a retry fixes it more often than not.
        Kind {
            jobs: 100,
            run: |r, node| json!({"node": node, "runFor": "600s", "containers": [container("main", 1, None, Some(format!("ConnectionResetError: [Errno 104] peer 10.0.{}.{} reset", r.below(255), r.below(255))))]}),
            p_same: 0.6,
            p_other: 0.6,
            bad_nodes: false,
        },
        // GPU errors on a few bad nodes: fixed on another node, not on the same one.
        Kind {
            jobs: 100,
            run: |_, node| json!({"node": node, "runFor": "1800s", "containers": [container("main", 139, None, Some("CUDA error: an illegal memory access was encountered".into()))]}),
            p_same: 0.0,
            p_other: 0.9,
            bad_nodes: true,
        },
        // OOM: sometimes fixed.
        Kind {
            jobs: 80,
            run: |_, node| json!({"node": node, "runFor": "900s", "containers": [container("main", 137, Some("OOMKilled"), None)]}),
            p_same: 0.3,
            p_other: 0.3,
            bad_nodes: false,
        },
        // Preemption: almost always fixed.
        Kind {
            jobs: 60,
            run: |_, node| json!({"node": node, "runFor": "1200s", "conditions": ["Preempted"]}),
            p_same: 0.95,
            p_other: 0.95,
            bad_nodes: false,
        },
        // An init container that fails for good.
        Kind {
            jobs: 40,
            run: |_, node| {
                let mut setup = container("setup", 2, None, None);
                setup["init"] = json!(true);
                json!({"node": node, "runFor": "5s", "containers": [setup, container("main", 0, None, None)]})
            },
            p_same: 0.0,
            p_other: 0.0,
            bad_nodes: false,
        },
        // A pod error (the image cannot be pulled): no matcher in the design dialect.
        Kind {
            jobs: 30,
            run: |r, node| json!({"node": node, "runFor": "0s", "podError": format!("Failed to pull image \"registry/team/model:v{}\": not found", r.below(9))}),
            p_same: 0.0,
            p_other: 0.0,
            bad_nodes: false,
        },
        // A lease that expired: the recorded category alone.
        Kind {
            jobs: 40,
            run: |_, node| json!({"node": node, "runFor": "300s", "category": "internal", "subcategory": "lease-expired"}),
            p_same: 0.8,
            p_other: 0.8,
            bad_nodes: false,
        },
        // Too rare for a rule: a handful of trials.
        Kind {
            jobs: 4,
            run: |_, node| json!({"node": node, "runFor": "30s", "containers": [container("main", 42, None, None)]}),
            p_same: 0.5,
            p_other: 0.5,
            bad_nodes: false,
        },
    ]
}

pub(crate) const GOOD_NODES: u64 = 40;
pub(crate) const BAD_NODES: [&str; 3] = ["gpu-bad-1", "gpu-bad-2", "gpu-bad-3"];

/// Job `n`'s submission: 20 days from 2026-11-01, one after the other, and 59 jobs a day
/// 24 minutes 24 seconds apart over the day (at midnight all, each day's failures made one
/// incident window of its own: docs/reference/suggest.md "Incidents").
fn submitted(n: u64) -> String {
    let at = (n / 20) * 1464;
    format!(
        "2026-11-{:02}T{:02}:{:02}:{:02}Z",
        1 + n % 20,
        at / 3600,
        at / 60 % 60,
        at % 60
    )
}

/// The planted history: each job fails with its kind until a retry succeeds or 4 runs
/// were made; some jobs succeed at once (the nodes' ordinary work). `submittedAt` spreads the
/// jobs over 20 days from 2026-11-01 ([`submitted`]).
pub(crate) fn planted(seed: u64) -> Vec<Value> {
    let mut r = Rng(seed);
    let mut jobs = Vec::new();
    let good = |r: &mut Rng| format!("node-{:02}", r.below(GOOD_NODES));
    let mut n = 0u64;
    for kind in kinds() {
        for _ in 0..kind.jobs {
            let mut runs = Vec::new();
            let mut node = if kind.bad_nodes {
                BAD_NODES[r.below(3) as usize].to_string()
            } else {
                good(&mut r)
            };
            loop {
                runs.push((kind.run)(&mut r, &node));
                if runs.len() == 4 {
                    break;
                }
                // The next run: half the time on the same node.
                let same = r.next() < 0.5;
                let next = if same { node.clone() } else { good(&mut r) };
                let p = if same { kind.p_same } else { kind.p_other };
                if r.next() < p {
                    runs.push(json!({"node": next, "runFor": "3600s", "outcome": "succeeded"}));
                    break;
                }
                node = next;
            }
            jobs.push(json!({
                "job": {"id": format!("job-{n:04}"), "queue": "ml", "submittedAt": submitted(n), "resources": {"gpu": 1, "cpu": 4}},
                "runs": runs,
            }));
            n += 1;
        }
    }
    // Ordinary successes on every node, so that a node's failure share has a base.
    for _ in 0..600 {
        let node = good(&mut r);
        jobs.push(json!({
            "job": {"id": format!("job-{n:04}"), "queue": "ml", "submittedAt": submitted(n), "resources": {"gpu": 1, "cpu": 4}},
            "runs": [{"node": node, "runFor": "3600s", "outcome": "succeeded"}],
        }));
        n += 1;
    }
    jobs
}

/// What the cluster runs today: every failure retried 3 times.
pub(crate) const BASELINE: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: today
spec:
  retryLimit: 3
  defaultAction: Retry
  rules: []
";

pub(crate) struct Planted {
    _dir: tempfile::TempDir,
    pub(crate) history: PathBuf,
    pub(crate) baseline: PathBuf,
    pub(crate) jobs: Vec<Value>,
}

pub(crate) fn setup(seed: u64) -> Planted {
    let dir = tempfile::tempdir().unwrap();
    let jobs = planted(seed);
    let history = dir.path().join("history.jsonl");
    let text: String = jobs.iter().map(|j| format!("{j}\n")).collect();
    std::fs::write(&history, text).unwrap();
    let baseline = dir.path().join("today.yaml");
    std::fs::write(&baseline, BASELINE).unwrap();
    Planted {
        _dir: dir,
        history,
        baseline,
        jobs,
    }
}

pub(crate) fn run(home: &Path, args: &[&str]) -> std::process::Output {
    retryctl(home).current_dir(root()).args(args).output().unwrap()
}

pub(crate) fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The signature of a planted failed run, worked out here on its own: the planted messages
/// hold no hex words or UUIDs, so masking is digits → `<n>` on the first line.
pub(crate) fn signature_of(run: &Value) -> String {
    let digits = regex::Regex::new("[0-9]+").unwrap();
    let template = |m: &str| {
        digits
            .replace_all(m.lines().next().unwrap_or(""), "<n>")
            .trim()
            .to_string()
    };
    if let Some(c) = run["conditions"].as_array().and_then(|c| c.first()) {
        return format!("condition:{}", c.as_str().unwrap());
    }
    let containers = run["containers"].as_array().cloned().unwrap_or_default();
    let failed = |c: &&Value| c["exitCode"].as_i64().unwrap_or(0) != 0 || c["reason"] == "OOMKilled";
    let first = containers
        .iter()
        .find(|c| c["init"] != true && failed(c))
        .or_else(|| containers.iter().find(|c| c["init"] == true && failed(c)));
    if let Some(c) = first {
        let name = c["name"].as_str().unwrap();
        let at = if c["init"] == true {
            format!("@init:{name}")
        } else {
            format!("@{name}")
        };
        let head = if c["reason"] == "OOMKilled" {
            format!("oom{at}")
        } else {
            format!("exit:{}{at}", c["exitCode"])
        };
        return match c["message"].as_str() {
            Some(m) => format!("{head} \"{}\"", template(m)),
            None => head,
        };
    }
    if let Some(e) = run["podError"].as_str() {
        return format!("podError \"{}\"", template(e));
    }
    match (run["category"].as_str(), run["subcategory"].as_str()) {
        (Some(c), Some(s)) => format!("category:{c}/{s}"),
        (Some(c), None) => format!("category:{c}"),
        _ => "unknown".into(),
    }
}

pub(crate) fn seconds(d: &Value) -> f64 {
    d.as_str().unwrap().trim_end_matches('s').parse().unwrap()
}

/// Per signature, recounted from the planted jobs: failed runs, jobs, trials, successes,
/// trials by depth, GPU-hours (failed, after, futile), same- and other-node trials.
#[derive(Debug, Default, PartialEq)]
struct Recount {
    failed_runs: u64,
    jobs: u64,
    trials: u64,
    successes: u64,
    by_depth: [(u64, u64); 5],
    gpu: [f64; 3],
    same: (u64, u64),
    other: (u64, u64),
}

fn recount(jobs: &[Value]) -> std::collections::BTreeMap<String, Recount> {
    let mut out: std::collections::BTreeMap<String, Recount> = Default::default();
    for job in jobs {
        let runs = job["runs"].as_array().unwrap();
        let gpus = job["job"]["resources"]["gpu"].as_f64().unwrap_or(0.0);
        let futile = runs.last().unwrap()["outcome"] != "succeeded";
        let mut seen = std::collections::BTreeSet::new();
        let mut depth = 0usize;
        for (k, run) in runs.iter().enumerate() {
            if run["outcome"] == "succeeded" {
                continue;
            }
            depth += 1;
            let sig = signature_of(run);
            let r = out.entry(sig.clone()).or_default();
            r.failed_runs += 1;
            if seen.insert(sig) {
                r.jobs += 1;
            }
            r.gpu[0] += seconds(&run["runFor"]) * gpus / 3600.0;
            if let Some(next) = runs.get(k + 1) {
                let ok = next["outcome"] == "succeeded";
                r.trials += 1;
                r.successes += u64::from(ok);
                let d = &mut r.by_depth[depth.min(5) - 1];
                d.0 += 1;
                d.1 += u64::from(ok);
                let h = seconds(&next["runFor"]) * gpus / 3600.0;
                r.gpu[1] += h;
                if futile {
                    r.gpu[2] += h;
                }
                let t = if run["node"] == next["node"] {
                    &mut r.same
                } else {
                    &mut r.other
                };
                t.0 += 1;
                t.1 += u64::from(ok);
            }
        }
    }
    out
}

/// The record of a run, whose exit status is its verdict's: 1 on `reject`, else 0.
pub(crate) fn json_of(out: &std::process::Output) -> Value {
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", crate::support::format_output(out)));
    let code = match v["suggest"]["verdict"]["decision"].as_str() {
        Some("reject") => 1,
        _ => 0,
    };
    assert_eq!(out.status.code(), Some(code), "{}", crate::support::format_output(out));
    v
}

/// `suggest --history H --baseline B` of a planted history, and `extra`.
pub(crate) fn on_planted(p: &Planted, home: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "suggest",
        "--history",
        path(&p.history),
        "--baseline",
        path(&p.baseline),
    ];
    args.extend_from_slice(extra);
    run(home, &args)
}

pub(crate) fn suggest_json(p: &Planted, home: &Path, extra: &[&str]) -> Value {
    json_of(&on_planted(p, home, &[&["-o", "json"], extra].concat()))
}

#[test]
fn every_count_matches_an_independent_recount() {
    let p = setup(7);
    let home = temp_home();
    let v = suggest_json(&p, home.path(), &[]);
    let s = &v["suggest"];
    let want = recount(&p.jobs);
    assert_eq!(s["jobs"], json!(p.jobs.len()));
    assert_eq!(
        s["failedRuns"],
        json!(want.values().map(|r| r.failed_runs).sum::<u64>())
    );
    let sigs = s["signatures"].as_array().unwrap();
    assert_eq!(
        sigs.len(),
        want.len(),
        "{:?}",
        sigs.iter().map(|s| &s["signature"]).collect::<Vec<_>>()
    );
    let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-9;
    for sig in sigs {
        let name = sig["signature"].as_str().unwrap();
        let r = &want[name];
        assert_eq!(sig["failedRuns"], json!(r.failed_runs), "{name}");
        assert_eq!(sig["jobs"], json!(r.jobs), "{name}");
        assert_eq!(sig["trials"], json!(r.trials), "{name}");
        assert_eq!(sig["successes"], json!(r.successes), "{name}");
        for (k, d) in sig["byDepth"].as_array().unwrap().iter().enumerate() {
            assert_eq!(
                (d["trials"].as_u64().unwrap(), d["successes"].as_u64().unwrap()),
                r.by_depth[k],
                "{name} depth {k}"
            );
        }
        assert!(
            close(&sig["gpuHours"]["failed"], r.gpu[0]),
            "{name}: {} vs {}",
            sig["gpuHours"],
            r.gpu[0]
        );
        assert!(close(&sig["gpuHours"]["after"], r.gpu[1]), "{name}");
        assert!(close(&sig["gpuHours"]["futile"], r.gpu[2]), "{name}");
        let nodes = &sig["nodes"];
        assert_eq!(
            (
                nodes["sameNode"]["trials"].as_u64().unwrap(),
                nodes["sameNode"]["successes"].as_u64().unwrap()
            ),
            r.same,
            "{name}"
        );
        assert_eq!(
            (
                nodes["otherNode"]["trials"].as_u64().unwrap(),
                nodes["otherNode"]["successes"].as_u64().unwrap()
            ),
            r.other,
            "{name}"
        );
        if r.trials > 0 {
            // Wilson 95%, recomputed.
            let (n, k) = (r.trials as f64, r.successes as f64);
            let (z, p) = (1.959964f64, k / n);
            let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
            let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
            assert!(close(&sig["rate"], p), "{name}");
            let low = if r.successes == 0 { 0.0 } else { centre - half };
            let high = if r.successes == r.trials { 1.0 } else { centre + half };
            assert!((sig["low"].as_f64().unwrap() - low).abs() < 1e-9, "{name}");
            assert!((sig["high"].as_f64().unwrap() - high).abs() < 1e-9, "{name}");
        } else {
            assert_eq!(
                (&sig["rate"], &sig["low"], &sig["high"]),
                (&Value::Null, &Value::Null, &Value::Null)
            );
        }
        // The baseline retries every failure 3 times: its decisions are its default's.
        let current = sig["current"].as_array().unwrap();
        assert!(
            current.iter().all(|c| c["rule"] == "today/default"),
            "{name}: {current:?}"
        );
        let decided: u64 = current.iter().map(|c| c["runs"].as_u64().unwrap()).sum();
        assert_eq!(decided + sig["undecided"].as_u64().unwrap(), r.failed_runs, "{name}");
    }
    // Sorted by GPU-hours counted once per run (a run that fails again counts under its own
    // signature only), descending.
    let hours: Vec<f64> = sigs.iter().map(|s| s["gpuHours"]["once"].as_f64().unwrap()).collect();
    assert!(hours.windows(2).all(|w| w[0] >= w[1]), "{hours:?}");
}

/// The proposal's rule of `signature` (action, limit, avoidSameNode), or the reason it has none.
pub(crate) fn verdict(v: &Value, signature: &str) -> String {
    let sig = v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["signature"] == signature)
        .unwrap_or_else(|| panic!("no signature {signature}"));
    match &sig["proposed"] {
        Value::Null => format!("none: {}", sig["noRule"].as_str().unwrap()),
        p => format!(
            "{} {} {}",
            p["action"].as_str().unwrap(),
            p["limit"],
            p["avoidSameNode"]
        ),
    }
}

#[test]
fn the_proposal_recovers_the_planted_structure() {
    let p = setup(7);
    let home = temp_home();
    let v = suggest_json(&p, home.path(), &[]);
    let rows = [
        (
            "exit:1@main \"ValueError: unknown config key 'lr<n>'\"",
            "Fail null false",
        ),
        (
            "exit:1@main \"ConnectionResetError: [Errno <n>] peer <n>.<n>.<n>.<n> reset\"",
            "Retry 3 false",
        ),
        (
            "exit:139@main \"CUDA error: an illegal memory access was encountered\"",
            "Retry 3 true",
        ),
        // Depths 4 and 5 were never tried: no limit goes past 3 (docs/reference/suggest.md
        // "The limit"); the preemption's depth 3 was never tried either.
        ("oom@main", "Retry 3 false"),
        ("condition:Preempted", "Retry 2 false"),
        ("exit:2@init:setup", "Fail null false"),
        // Its depth 3 has 1 trial, too few to judge: decided as today, which retried it.
        ("category:internal/lease-expired", "Retry 3 false"),
        (
            "podError \"Failed to pull image \"registry/team/model:v<n>\": not found\"",
            "none: the design dialect has no pod-error matcher (--engine upstream has)",
        ),
        // Too few trials for a rule of its own; today's default decided it, and the default
        // the proposal learns from the image pulls no design rule can match is Fail: a rule
        // keeps today's decision (docs/reference/suggest.md "The policy's defaults").
        ("exit:42@main", "Retry 3 false"),
    ];
    for (sig, want) in rows {
        assert_eq!(verdict(&v, sig), want, "{sig}");
    }
    // The bad nodes, and only they, are suspect; their commonest signature is the GPU error.
    let suspects: Vec<&str> = v["suggest"]["suspectNodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["node"].as_str().unwrap())
        .collect();
    let mut sorted = suspects.clone();
    sorted.sort();
    assert_eq!(sorted, BAD_NODES);
    for s in v["suggest"]["suspectNodes"].as_array().unwrap() {
        assert_eq!(s["runs"], s["failed"]);
        assert_eq!(
            s["signatures"][0]["signature"],
            "exit:139@main \"CUDA error: an illegal memory access was encountered\""
        );
        assert!(s["tail"].as_f64().unwrap() < 0.001 / 43.0);
    }
    // Every proposed rule decides its own runs (exit:42@main's, today's decision, among them).
    let shadowed = v["suggest"]["proposal"]["shadowedRuns"].as_array().unwrap();
    assert_eq!(shadowed.len(), 8);
    assert!(shadowed.iter().all(|s| s["runs"] == 0), "{shadowed:?}");
    // A lower max limit caps every Retry; a higher futile share turns OOM (23% by now) to Fail.
    let v = suggest_json(&p, home.path(), &["--max-limit", "2", "--futile", "0.25"]);
    assert_eq!(verdict(&v, "oom@main"), "Fail null false");
    assert_eq!(verdict(&v, "condition:Preempted"), "Retry 2 false");
}

/// `-o policy` for `engine` (and the categorizer flag), written to a file.
pub(crate) fn write_policy(p: &Planted, home: &Path, extra: &[&str]) -> PathBuf {
    let out = on_planted(p, home, &[&["-o", "policy"], extra].concat());
    // The verdict, said on stderr too, in one line; the file is headed by it, and a
    // `reject` exits 1 with the documents written all the same.
    let err = String::from_utf8_lossy(&out.stderr);
    let code = if err.starts_with("verdict: reject") { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(code), "{}", crate::support::format_output(&out));
    assert!(err.starts_with("verdict: ") && err.lines().count() == 1, "{err}");
    assert!(
        out.stdout.starts_with(format!("# {}", err.trim_end()).as_bytes()),
        "{err}"
    );
    let file = home.join(format!("proposal-{}.yaml", extra.len()));
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

#[test]
fn the_policy_validates_and_its_comparison_is_simulates() {
    let p = setup(11);
    let home = temp_home();
    let policy = write_policy(&p, home.path(), &[]);
    let out = run(home.path(), &["validate", "-f", path(&policy)]);
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n"
    );
    let sim = json_of(&run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&policy),
            "--baseline",
            path(&p.baseline),
            "--history",
            path(&p.history),
            "-o",
            "json",
        ],
    ));
    let v = suggest_json(&p, home.path(), &[]);
    assert_eq!(v["suggest"]["proposal"]["comparison"], sim["comparison"]);
    // The rules in the policy's order are the record's.
    let rules: Vec<&str> = v["suggest"]["proposal"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["signature"].as_str().unwrap())
        .collect();
    assert_eq!(rules[0], "condition:Preempted");
    assert_eq!(*rules.last().unwrap(), "category:internal/lease-expired");
    // YAML holds the same record.
    let yaml = on_planted(&p, home.path(), &["-o", "yaml"]);
    assert_eq!(yaml.status.code(), Some(0));
    let y: Value = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(
        y["suggest"]["proposal"]["comparison"]["changed"],
        sim["comparison"]["changed"]
    );
    assert_eq!(y["suggest"]["signatures"], v["suggest"]["signatures"]);
}

/// A planted history retries its preemptions, as the design baseline does; today's Armada never
/// retries one, so against an upstream baseline each preempted job contradicts it. A test
/// whose subject is not whether the baseline explains the record accepts them, and says so.
pub(crate) const ANY_CONTRADICTIONS: [&str; 2] = ["--max-contradictions", "100%"];

pub(crate) const BASELINE_UPSTREAM: &str = "apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: today
retryLimit: 3
defaultAction: Retry
rules: []
";

#[test]
fn upstream_writes_a_categorizer_and_a_v1beta1_policy_that_replay_as_printed() {
    let p = setup(13);
    let home = temp_home();
    let baseline = home.path().join("today-up.yaml");
    std::fs::write(&baseline, BASELINE_UPSTREAM).unwrap();
    let deployed = root().join("testdata/categorizer/executor-config.yaml");
    let args = |o: &str| -> Vec<String> {
        [
            "suggest",
            "--history",
            path(&p.history),
            "--baseline",
            path(&baseline),
            "--engine",
            "upstream",
            "--categorizer",
            path(&deployed),
            // The planted preemptions are retried in the record, never by upstream: judged
            // all the same (this test is about what is written).
            "--max-contradictions",
            "100%",
            "-o",
            o,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let out = retryctl(home.path())
        .current_dir(root())
        .args(args("policy"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let policy = home.path().join("proposal.yaml");
    std::fs::write(&policy, &out.stdout).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // The deployed file's shape: under `application:`, its other keys kept as they were.
    assert!(
        text.contains("application:\n  clusterId: demo-a\n  pool: default\n  errorCategories:\n    enabled: true\n    defaultCategory: \"uncategorized\"\n"),
        "{text}"
    );
    assert!(text.contains("\nkubernetes:\n  minimumPodAge: 3m\n---\n"), "{text}");
    // The new categories come first, the deployed ones after, in their order.
    let names: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("      - name: ")).collect();
    assert_eq!(
        &names[names.len() - 4..],
        ["\"oom\"", "\"user_error\"", "\"gpu_unavailable\"", "\"infrastructure\""]
    );
    assert!(
        names[..names.len() - 4]
            .iter()
            .all(|n| n.starts_with("s-") && n.len() <= 63),
        "{names:?}"
    );
    assert!(text.contains("apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: suggested\nretryLimit: 3\ndefaultAction: Retry\n"), "{text}");
    let out = run(home.path(), &["validate", "--upstream", "-f", path(&policy)]);
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 0\n--- stdout\nchecked 2 documents in 1 file: 2 valid, 0 invalid\n--- stderr\n"
    );
    // `--categorizer` reads the same file's categorizer (its policy is `-f`'s).
    let out = run(
        home.path(),
        &[
            "validate",
            "--upstream",
            "-f",
            path(&policy),
            "--categorizer",
            path(&policy),
        ],
    );
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 0\n--- stdout\nchecked 3 documents in 2 files: 3 valid, 0 invalid\n--- stderr\n"
    );
    let sim = run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&policy),
            "--engine",
            "upstream",
            "--categorizer",
            path(&policy),
            "--baseline",
            path(&baseline),
            "--baseline-categorizer",
            path(&deployed),
            "--history",
            path(&p.history),
            "-o",
            "json",
        ],
    );
    assert_eq!(sim.status.code(), Some(0), "{}", crate::support::format_output(&sim));
    // The categorizer in `-f`'s file is the candidate's: naming it again is the same one, and
    // leaving both the flag and `--engine` out (the dialect picks upstream) compares alike.
    let same = run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&policy),
            "--baseline",
            path(&baseline),
            "--baseline-categorizer",
            path(&deployed),
            "--history",
            path(&p.history),
            "-o",
            "json",
        ],
    );
    assert_eq!(same.stdout, sim.stdout, "{}", crate::support::format_output(&same));
    let sim: Value = serde_json::from_slice(&sim.stdout).unwrap();
    let out = retryctl(home.path())
        .current_dir(root())
        .args(args("json"))
        .output()
        .unwrap();
    let v = json_of(&out);
    assert_eq!(v["suggest"]["proposal"]["comparison"], sim["comparison"]);
    assert_eq!(v["suggest"]["proposal"]["policyRetryLimit"], 3);
    // Upstream can match a pod error; it cannot categorize a preemption.
    assert_eq!(
        verdict(
            &v,
            "podError \"Failed to pull image \"registry/team/model:v<n>\": not found\""
        ),
        "Fail null false"
    );
    assert_eq!(
        verdict(&v, "condition:Preempted"),
        "none: the executor cannot categorize `Preempted`"
    );
    let shadowed = v["suggest"]["proposal"]["shadowedRuns"].as_array().unwrap();
    assert!(shadowed.iter().all(|s| s["runs"] == 0), "{shadowed:?}");
    // `apply` skips the categorizer and says so.
    let out = run(home.path(), &["apply", "-f", path(&policy), "--dry-run=client"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!(
            "note: skipped `{}` document 1: the executor's categorizer config is not a server resource; it goes in the executor's config (`errorCategories`)\n",
            path(&policy)
        )),
        "{}",
        crate::support::format_output(&out)
    );
}

#[test]
fn the_backtest_is_simulate_on_the_later_jobs_alone() {
    let p = setup(17);
    let home = temp_home();
    let at = "2026-11-15T00:00:00Z";
    let v = suggest_json(&p, home.path(), &["--backtest-at", at]);
    let b = &v["suggest"]["backtest"];
    let later: Vec<&Value> = p
        .jobs
        .iter()
        .filter(|j| j["job"]["submittedAt"].as_str().unwrap() >= at)
        .collect();
    assert_eq!(b["trainJobs"], json!(p.jobs.len() - later.len()));
    assert_eq!(b["testJobs"], json!(later.len()));
    assert_eq!(v["suggest"]["jobs"], b["trainJobs"]);
    let file = home.path().join("later.jsonl");
    std::fs::write(&file, later.iter().map(|j| format!("{j}\n")).collect::<String>()).unwrap();
    let policy = write_policy(&p, home.path(), &["--backtest-at", at]);
    let sim = json_of(&run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&policy),
            "--baseline",
            path(&p.baseline),
            "--history",
            path(&file),
            "-o",
            "json",
            // The backtest's comparison leaves the contention out (the whole history's says it).
            "--contention",
            "off",
        ],
    ));
    assert_eq!(b["comparison"], sim["comparison"]);
    // The baseline retried every job 3 times; the proposal's limits stop where the learned
    // jobs' evidence stops, so a later job that needed its third retry is killed falsely,
    // and the verdict says not to adopt it.
    assert_eq!(
        (&b["falseKills"], &b["falseKillJobs"]),
        (&json!(1), &json!(["job-0437"]))
    );
    assert_eq!(
        v["suggest"]["verdict"]["decision"], "reject",
        "{}",
        v["suggest"]["verdict"]
    );
    assert!(
        v["suggest"]["verdict"]["reasons"].as_array().unwrap().iter().any(|r| r
            .as_str()
            .unwrap()
            .contains("falsely on the later jobs (Succeeded today) (`job-0437`)")),
        "{}",
        v["suggest"]["verdict"]
    );
    assert!(
        b["estimates"]["trainTrials"].as_u64().unwrap() > 0,
        "{}",
        b["estimates"]
    );
    let c = &sim["comparison"];
    let plain = json_of(&run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&p.baseline),
            "--history",
            path(&file),
            "-o",
            "json",
        ],
    ));
    let saved = c["compute"]["gpuHours"]["removed"].as_f64().unwrap()
        - c["compute"]["gpuHours"]["added"].as_f64().unwrap()
        - c["compute"]["gpuHours"]["expected"].as_f64().unwrap()
        + plain["summary"]["compute"]["gpuHours"]["expected"]
            .as_f64()
            .unwrap_or(0.0);
    assert!(
        (b["gpuHoursSaved"].as_f64().unwrap() - saved).abs() < 1e-9,
        "{} vs {saved}",
        b["gpuHoursSaved"]
    );
}

/// A CUDA error retried on its own node (`n1`) or another (`n2`): `same` and `other` are
/// (trials, successes) of those first retries; a job whose retry fails ends there.
fn node_history(dir: &Path, name: &str, same: (u64, u64), other: (u64, u64)) -> PathBuf {
    let failed = |node: &str| json!({"node": node, "runFor": "60s", "containers": [{"name": "main", "exitCode": 139, "message": "CUDA error"}]});
    let mut jobs = String::new();
    let mut id = 0;
    for (node, (trials, successes)) in [("n1", same), ("n2", other)] {
        for k in 0..trials {
            let retry = if k < successes {
                json!({"node": node, "runFor": "60s", "outcome": "succeeded"})
            } else {
                failed(node)
            };
            jobs.push_str(&format!(
                "{}\n",
                json!({"job": {"id": format!("j{id}"), "queue": "ml"}, "runs": [failed("n1"), retry]})
            ));
            id += 1;
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, jobs).unwrap();
    path
}

/// `avoidSameNode` when it matters: a retry on another node must succeed at least 10 points
/// more often than one on the same node, and significantly so. 56% against 50% on 2,000
/// trials each is significant but 6 points: no `avoidSameNode`; 80% against 20% is proposed.
#[test]
fn avoid_same_node_needs_ten_points_more_on_another_node() {
    let home = temp_home();
    let table = |history: &Path| {
        let out = run(home.path(), &["suggest", "--history", history.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().skip(3).take(2).collect::<Vec<_>>().join("\n")
    };
    let rules = |history: &Path| {
        let out = run(
            home.path(),
            &["suggest", "--history", history.to_str().unwrap(), "-o", "json"],
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["suggest"]["proposal"]["rules"].clone()
    };
    let small = node_history(home.path(), "small.jsonl", (2000, 1000), (2000, 1120));
    assert_eq!(
        table(&small),
        "SIGNATURE                   RUNS  TRIALS  RETRY SUCCESS (95%)  GPU-H  TODAY                              PROPOSED\n\
         exit:139@main \"CUDA error\"  5880  4000    53.0% (51.5–54.5%)   0.0    Fail: no policy (the legacy path)  Retry ×1"
    );
    assert_eq!(
        rules(&small),
        json!([{"signature": "exit:139@main \"CUDA error\"", "action": "Retry", "limit": 1, "avoidSameNode": false}])
    );
    let large = node_history(home.path(), "large.jsonl", (40, 8), (40, 32));
    assert_eq!(
        table(&large),
        "SIGNATURE                   RUNS  TRIALS  RETRY SUCCESS (95%)  GPU-H  TODAY                              PROPOSED\n\
         exit:139@main \"CUDA error\"  120   80      50.0% (39.3–60.7%)   0.0    Fail: no policy (the legacy path)  Retry ×1, other node"
    );
    assert_eq!(
        rules(&large),
        json!([{"signature": "exit:139@main \"CUDA error\"", "action": "Retry", "limit": 1, "avoidSameNode": true}])
    );
}
