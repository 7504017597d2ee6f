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

const GOOD_NODES: u64 = 40;
const BAD_NODES: [&str; 3] = ["gpu-bad-1", "gpu-bad-2", "gpu-bad-3"];

/// The planted history: each job fails with its kind until a retry succeeds or 4 runs
/// were made; some jobs succeed at once (the nodes' ordinary work). `submittedAt` spreads the
/// jobs over 20 days from 2026-11-01.
fn planted(seed: u64) -> Vec<Value> {
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
                "job": {"id": format!("job-{n:04}"), "queue": "ml", "submittedAt": format!("2026-11-{:02}T00:00:00Z", 1 + n % 20), "resources": {"gpu": 1, "cpu": 4}},
                "runs": runs,
            }));
            n += 1;
        }
    }
    // Ordinary successes on every node, so that a node's failure share has a base.
    for _ in 0..600 {
        let node = good(&mut r);
        jobs.push(json!({
            "job": {"id": format!("job-{n:04}"), "queue": "ml", "submittedAt": format!("2026-11-{:02}T00:00:00Z", 1 + n % 20), "resources": {"gpu": 1, "cpu": 4}},
            "runs": [{"node": node, "runFor": "3600s", "outcome": "succeeded"}],
        }));
        n += 1;
    }
    jobs
}

/// What the cluster runs today: every failure retried 3 times.
const BASELINE: &str = "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: today
spec:
  retryLimit: 3
  defaultAction: Retry
  rules: []
";

struct Planted {
    _dir: tempfile::TempDir,
    history: PathBuf,
    baseline: PathBuf,
    jobs: Vec<Value>,
}

fn setup(seed: u64) -> Planted {
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

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    retryctl(home).current_dir(root()).args(args).output().unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The signature of a planted failed run, worked out here on its own: the planted messages
/// hold no hex words or UUIDs, so masking is digits → `<n>` on the first line.
fn signature_of(run: &Value) -> String {
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

fn seconds(d: &Value) -> f64 {
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

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `suggest --history H --baseline B` of a planted history, and `extra`.
fn on_planted(p: &Planted, home: &Path, extra: &[&str]) -> std::process::Output {
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

fn suggest_json(p: &Planted, home: &Path, extra: &[&str]) -> Value {
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
    // Sorted by GPU-hours (failed + after), descending.
    let hours: Vec<f64> = sigs
        .iter()
        .map(|s| s["gpuHours"]["failed"].as_f64().unwrap() + s["gpuHours"]["after"].as_f64().unwrap())
        .collect();
    assert!(hours.windows(2).all(|w| w[0] >= w[1]), "{hours:?}");
}

/// The proposal's rule of `signature` (action, limit, avoidSameNode), or the reason it has none.
fn verdict(v: &Value, signature: &str) -> String {
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
        ("exit:42@main", "none: 7 trials, fewer than --min-trials 20"),
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
    // Every proposed rule decides its own runs.
    let shadowed = v["suggest"]["proposal"]["shadowedRuns"].as_array().unwrap();
    assert_eq!(shadowed.len(), 7);
    assert!(shadowed.iter().all(|s| s["runs"] == 0), "{shadowed:?}");
    // A lower max limit caps every Retry; a higher futile share turns OOM (23% by now) to Fail.
    let v = suggest_json(&p, home.path(), &["--max-limit", "2", "--futile", "0.25"]);
    assert_eq!(verdict(&v, "oom@main"), "Fail null false");
    assert_eq!(verdict(&v, "condition:Preempted"), "Retry 2 false");
}

/// `-o policy` for `engine` (and the categorizer flag), written to a file.
fn write_policy(p: &Planted, home: &Path, extra: &[&str]) -> PathBuf {
    let out = on_planted(p, home, &[&["-o", "policy"], extra].concat());
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    // The verdict, said on stderr too, in one line; the file is headed by it.
    let err = String::from_utf8_lossy(&out.stderr);
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

const BASELINE_UPSTREAM: &str = "apiVersion: armadaproject.io/v1beta1
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

#[test]
fn bad_flags_are_usage_errors_with_nothing_on_stdout() {
    let p = setup(3);
    let home = temp_home();
    let rows: [(&[&str], &str); 8] = [
        (&["--futile", "0"], "error: invalid `--futile` `0`: expected a share strictly between 0 and 1, such as `0.05`\n"),
        (&["--futile", "1"], "error: invalid `--futile` `1`: expected a share strictly between 0 and 1, such as `0.05`\n"),
        (&["--futile", "NaN"], "error: invalid `--futile` `NaN`: expected a share strictly between 0 and 1, such as `0.05`\n"),
        (&["--min-trials", "0"], "error: invalid `--min-trials` `0`: expected 1 or more\n"),
        (&["--max-limit", "0"], "error: invalid `--max-limit` `0`: expected 1 to 10000\n"),
        (&["--max-limit", "10001"], "error: invalid `--max-limit` `10001`: expected 1 to 10000\n"),
        (&["--name", ""], "error: invalid `--name` ``: expected a policy name (lowercase letters, digits and `-`, at most 63, starting and ending with a letter or digit)\n"),
        // A shard writes its learning for `merge`, and nothing else.
        (&["--shard", "0/2"], "error: `suggest --shard 0/2` writes what the shard learned: give `-o partial`, then `retryctl merge` the shards' partials\n"),
    ];
    for (flags, want) in rows {
        let mut args = vec!["suggest", "--history", path(&p.history)];
        args.extend_from_slice(flags);
        let out = run(home.path(), &args);
        assert_eq!(
            crate::support::format_output(&out),
            format!("exit: 2\n--- stdout\n--- stderr\n{want}"),
            "{flags:?}"
        );
    }
    // No job to learn from: exit 3, nothing on stdout.
    let empty = home.path().join("bad.jsonl");
    std::fs::write(&empty, "{not json\n").unwrap();
    let out = run(home.path(), &["suggest", "--history", path(&empty)]);
    assert_eq!(out.status.code(), Some(3), "{}", crate::support::format_output(&out));
    assert!(out.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .ends_with("error: no job could be replayed (1 entry not read): there is nothing to learn from\n"),
        "{}",
        crate::support::format_output(&out)
    );
}

#[test]
fn stdin_gives_what_the_file_gives() {
    let p = setup(5);
    let home = temp_home();
    let from_file = on_planted(&p, home.path(), &[]);
    let out = retryctl(home.path())
        .current_dir(root())
        .args(["suggest", "--history", "-", "--baseline", path(&p.baseline)])
        .write_stdin(std::fs::read(&p.history).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let file_text = String::from_utf8(from_file.stdout).unwrap();
    // The same but for the history's name in the commands at the end.
    assert_eq!(
        text.replace("--history -", &format!("--history {}", path(&p.history))),
        file_text
    );
}

/// Lines that cannot be read, on stdin as in a file: said once, on stderr, in the history's
/// words, and counted in the comparison as `simulate --baseline` counts them (the second pass
/// replays pass 1's copy, which holds them in their place: docs/reference/suggest.md "Sources
/// and passes").
#[test]
fn unreadable_lines_are_said_once_and_counted_as_simulate_counts_them() {
    let p = setup(5);
    let home = temp_home();
    let mut history = std::fs::read_to_string(&p.history).unwrap();
    let at = history.lines().count() + 1;
    history.push_str("{\"job\":{\"id\":\"bad\"},\"runs\":[{\"outcome\":\"nope\"}]}\n{not json\n");
    let file = p.history.with_file_name("with-bad-lines.jsonl");
    std::fs::write(&file, &history).unwrap();
    let said = |name: &str| {
        format!(
            "error: {name}:{at}: runs[0].outcome: unknown value `nope`, expected one of `failed`, `succeeded`, `leaseReturned`, `cancelled`\n\
             error: {name}:{}: ",
            at + 1
        )
    };
    let json = ["-o", "json", "--baseline", path(&p.baseline)];
    let from_file = run(
        home.path(),
        &[&["suggest", "--history", path(&file)][..], &json].concat(),
    );
    let from_stdin = retryctl(home.path())
        .current_dir(root())
        .args([&["suggest", "--history", "-"][..], &json].concat())
        .write_stdin(history)
        .output()
        .unwrap();
    let simulate = run(
        home.path(),
        &[
            "simulate",
            "-f",
            path(&p.baseline),
            "--baseline",
            path(&p.baseline),
            "--history",
            path(&file),
            "-o",
            "json",
        ],
    );
    let errors = |out: &std::process::Output, at: &str| -> Value {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v.pointer(at).cloned().unwrap()
    };
    assert_eq!(
        errors(&simulate, "/comparison/errors"),
        json!(2),
        "{}",
        String::from_utf8_lossy(&simulate.stdout)
    );
    for (out, name) in [(&from_file, path(&file)), (&from_stdin, "<stdin>")] {
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(errors(out, "/suggest/proposal/comparison/errors"), json!(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(&said(name)), "{stderr}");
        assert_eq!(stderr.matches("error: ").count(), 2, "{stderr}");
    }
}

/// A failed run whose message is hostile text: markup, Markdown, regex metacharacters.
const HOSTILE: &str = "<script>alert(1)</script> | `rm -rf` [x](y) .*+?^$ \\d {3} \"q\" 'a' & é";

#[test]
fn hostile_messages_stay_inert() {
    let home = temp_home();
    let mut jobs = String::new();
    for k in 0..30 {
        let run =
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3, "message": HOSTILE}]});
        let next = if k % 2 == 0 {
            json!({"outcome": "succeeded"})
        } else {
            run.clone()
        };
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [run, next]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let run_o = |o: &str| {
        run(
            home.path(),
            &["suggest", "--history", path(&history), "--min-trials", "5", "-o", o],
        )
    };
    let html = String::from_utf8(run_o("html").stdout).unwrap();
    assert!(!html.contains("<script>"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(&lt;n&gt;)&lt;/script&gt;"), "{html}");
    let md = String::from_utf8(run_o("markdown").stdout).unwrap();
    assert!(
        md.contains("\\<script\\>alert(\\<n\\>)\\</script\\> \\| \\`rm -rf\\`"),
        "{md}"
    );
    // The proposed pattern matches the message literally: the rule decides its own runs.
    let policy = run_o("policy");
    assert_eq!(
        policy.status.code(),
        Some(0),
        "{}",
        crate::support::format_output(&policy)
    );
    let file = home.path().join("p.yaml");
    std::fs::write(&file, &policy.stdout).unwrap();
    let out = run(home.path(), &["validate", "-f", path(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let v = json_of(&run_o("json"));
    assert_eq!(v["suggest"]["proposal"]["rules"][0]["action"], "Retry");
    assert_eq!(
        v["suggest"]["proposal"]["shadowedRuns"],
        json!([{"signature": v["suggest"]["proposal"]["rules"][0]["signature"], "runs": 0}])
    );
    let sim = json_of(&run(
        home.path(),
        &["simulate", "-f", path(&file), "--history", path(&history), "-o", "json"],
    ));
    // Every first failure retried by the rule: 30 jobs, the limit 1 (no history shows a
    // second retry, so none is proposed).
    assert_eq!(sim["summary"]["retriesByRule"], json!({"suggested/0": 30}));
}

#[test]
fn past_ten_thousand_signatures_the_rest_count_as_other() {
    let home = temp_home();
    let word = |mut n: usize| {
        let mut w = String::new();
        for _ in 0..4 {
            w.push((b'a' + (n % 26) as u8) as char);
            n /= 26;
        }
        w
    };
    let mut jobs = String::new();
    for k in 0..10_050 {
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [{"containers": [{"name": "main", "exitCode": 1, "message": format!("error {}", word(k))}]}]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let v = json_of(&run(
        home.path(),
        &["suggest", "--history", path(&history), "-o", "json"],
    ));
    let sigs = v["suggest"]["signatures"].as_array().unwrap();
    assert_eq!(sigs.len(), 10_001);
    let other = sigs.iter().find(|s| s["signature"] == "other").unwrap();
    assert_eq!(
        (&other["failedRuns"], &other["jobs"], &other["noRule"]),
        (&json!(50), &json!(50), &json!("no signal to match on"))
    );
    // The first 10,000 met are kept: the last job's signature is not.
    assert!(!sigs
        .iter()
        .any(|s| s["signature"] == format!("exit:1@main \"error {}\"", word(10_049))));
}

#[test]
fn the_html_page_opens_in_a_browser() {
    let p = setup(7);
    let home = temp_home();
    let out = on_planted(
        &p,
        home.path(),
        &["--backtest-at", "2026-11-15T00:00:00Z", "-o", "html"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<rect class=\"futile\"").count(), 9);
    let Some(browser) = crate::support::chromium::chromium() else {
        return;
    };
    let page = home.path().join("suggest.html");
    std::fs::write(&page, &html).unwrap();
    let dom = crate::support::chromium::dump_dom(&browser, &page);
    assert!(dom.contains("Proposed retry policy"), "{dom}");
    assert!(dom.contains("gpu-bad-1"), "{dom}");
    assert!(dom.contains("false kills"), "{dom}");
}

#[test]
fn lookout_gives_what_its_export_gives() {
    let Some(db) = crate::support::pg::fixture_db("suggest_lookout") else {
        return;
    };
    let home = temp_home();
    let (file, _) = crate::support::pg::export_week(home.path(), &db);
    for o in ["json", "yaml", "markdown"] {
        let from_file = run(
            home.path(),
            &[
                "suggest",
                "--history",
                path(&file),
                "--baseline",
                "testdata/lookout/old",
                "--min-trials",
                "1",
                "-o",
                o,
            ],
        );
        let mut args = vec!["suggest", "--lookout-db", &db.dsn, "--queue", "ml"];
        args.extend_from_slice(&crate::support::pg::WINDOW);
        args.extend_from_slice(&["--baseline", "testdata/lookout/old", "--min-trials", "1", "-o", o]);
        let from_db = run(home.path(), &args);
        assert_eq!(
            from_db.status.code(),
            Some(0),
            "{}",
            crate::support::format_output(&from_db)
        );
        assert!(!from_file.stdout.is_empty());
        let (db_text, file_text) = (
            String::from_utf8_lossy(&from_db.stdout),
            String::from_utf8_lossy(&from_file.stdout),
        );
        if o == "markdown" {
            // The command that writes the proposal (only when the verdict is to adopt it:
            // here today's rules are kept and nothing has evidence) names the source; the
            // DSN never shows.
            // The documents differ by the Queue that `--queue` (given to the database's run)
            // writes.
            let cut = |t: &str| t[..t.find("<details>").unwrap_or(t.len())].to_string();
            assert_eq!(cut(&db_text), cut(&file_text));
            assert!(
                db_text.contains("**Verdict: keep today's policy** — the proposal changes nothing that matters"),
                "{db_text}"
            );
            assert!(!db_text.contains(&db.dsn), "{db_text}");
        } else {
            assert_eq!(db_text, file_text, "-o {o}");
        }
        // The database is read once: `history`'s summary is said once.
        let err = String::from_utf8_lossy(&from_db.stderr);
        assert_eq!(err.matches("history: exported").count(), 1, "{err}");
    }
}

/// The history the suggest guide (docs/suggest.md) runs on is [`planted`]'s, seed 7
/// (`RETRYCTL_UPDATE_TESTDATA=1` writes it after a change of the generator).
#[test]
fn the_guides_history_is_the_planted_one() {
    let want: String = planted(7).iter().map(|j| format!("{j}\n")).collect();
    let file = root().join("testdata/suggest/planted.jsonl");
    if std::env::var_os("RETRYCTL_UPDATE_TESTDATA").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &want).unwrap();
        std::fs::write(root().join("testdata/suggest/today.yaml"), BASELINE).unwrap();
    }
    assert!(
        std::fs::read_to_string(&file).unwrap() == want,
        "testdata/suggest/planted.jsonl is stale: RETRYCTL_UPDATE_TESTDATA=1 rewrites it"
    );
    assert_eq!(
        std::fs::read_to_string(root().join("testdata/suggest/today.yaml")).unwrap(),
        BASELINE
    );
}

/// Upstream names the container of an OOM category (`containerName` with `onConditions:
/// [OOMKilled]`): two containers' OOM signatures, which may be proposed apart, get a category
/// and a rule each, and each one's runs are decided by its own rule.
#[test]
fn oom_kills_of_two_containers_get_a_category_each() {
    let home = temp_home();
    let mut jobs = String::new();
    for k in 0..20 {
        for (name, id) in [("main", "m"), ("side", "s")] {
            let oom = json!({"node": "n", "runFor": "60s", "containers": [{"name": name, "exitCode": 137, "reason": "OOMKilled"}]});
            jobs.push_str(&format!(
                "{}\n",
                json!({"job": {"id": format!("{id}{k}")}, "runs": [oom, {"outcome": "succeeded"}]})
            ));
        }
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let args = [
        "suggest",
        "--history",
        path(&history),
        "--engine",
        "upstream",
        "--min-trials",
        "5",
        "-o",
        "json",
    ];
    let v = json_of(&run(home.path(), &args));
    let p = &v["suggest"]["proposal"];
    assert_eq!(
        p["rules"],
        json!([
            {"signature": "oom@main", "action": "Retry", "limit": 1, "avoidSameNode": false},
            {"signature": "oom@side", "action": "Retry", "limit": 1, "avoidSameNode": false},
        ])
    );
    assert_eq!(
        p["categories"],
        json!([
            {"name": "s-oom-main-ffa7ead7", "action": "Delete", "signatures": ["oom@main"]},
            {"name": "s-oom-side-ad0ca28d", "action": "Delete", "signatures": ["oom@side"]},
        ])
    );
    assert_eq!(
        p["shadowedRuns"],
        json!([{"signature": "oom@main", "runs": 0}, {"signature": "oom@side", "runs": 0}])
    );
    // Every run was retried by its own rule.
    let c = &p["comparison"];
    assert_eq!(c["jobs"], 40);
}

/// stdin is read once and spooled: a temporary directory that cannot be written is said,
/// with where, and nothing is printed (exit 1).
#[test]
fn a_spool_that_cannot_be_written_says_where() {
    let home = temp_home();
    let out = retryctl(home.path())
        .current_dir(root())
        .env("TMPDIR", "/nonexistent-retryctl-tmp")
        .args(["suggest", "--history", "-"])
        .write_stdin(r#"{"job":{"id":"a"},"runs":[{"containers":[{"name":"m","exitCode":1}]}]}"#)
        .output()
        .unwrap();
    assert_eq!(
        crate::support::format_output(&out),
        "exit: 1\n--- stdout\n--- stderr\nerror: cannot write the temporary copy of the history in `/nonexistent-retryctl-tmp`: no such file or directory\n\nhint: set TMPDIR to a directory with room to write\n"
    );
}

/// The verdict (docs/reference/suggest.md "The verdict") in every format: the planted history
/// against a policy that retries everything 3 times gives the clean win, `adopt`, with the
/// write line; `--exit-code` exits 1 on it; `-o policy` is headed by it and says it on stderr.
#[test]
fn an_adopted_proposal_says_so_in_every_format() {
    let p = setup(7);
    let home = temp_home();
    let reason = "0 rescued, 0 lost; retries +0 −480; GPU-hours -6.2";
    let table = on_planted(&p, home.path(), &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains(&format!("\nVerdict: adopt: {reason}\nWrite the proposal:  ")),
        "{text}"
    );
    let v = suggest_json(&p, home.path(), &[]);
    assert_eq!(
        v["suggest"]["verdict"],
        json!({"decision": "adopt", "reasons": [reason]})
    );
    let yaml = on_planted(&p, home.path(), &["-o", "yaml"]);
    let y: Value = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(y["suggest"]["verdict"], v["suggest"]["verdict"]);
    let md = String::from_utf8(on_planted(&p, home.path(), &["-o", "markdown"]).stdout).unwrap();
    assert!(md.contains(&format!("**Verdict: adopt** — {reason}\n")), "{md}");
    assert!(md.contains("\nWrite it: `"), "{md}");
    let html = String::from_utf8(on_planted(&p, home.path(), &["-o", "html"]).stdout).unwrap();
    assert!(
        html.contains(&format!("<p class=\"verdict\"><b>Verdict: adopt</b> — {reason}</p>")),
        "{html}"
    );
    let policy = on_planted(&p, home.path(), &["-o", "policy"]);
    assert_eq!(
        String::from_utf8_lossy(&policy.stderr),
        format!("verdict: adopt: {reason}\n")
    );
    assert!(policy
        .stdout
        .starts_with(format!("# verdict: adopt: {reason}\n# Proposed by").as_bytes()));
    let out = on_planted(&p, home.path(), &["--exit-code"]);
    assert_eq!(out.status.code(), Some(1), "{}", crate::support::format_output(&out));
    // The policy's one limit, alike in every format: today's 3.
    assert!(
        text.contains("Proposal: policy `suggested` (the design dialect, retryLimit 3), 7 rules"),
        "{text}"
    );
    assert_eq!(v["suggest"]["proposal"]["policyRetryLimit"], 3);
    assert!(String::from_utf8_lossy(&policy.stdout).contains("\nspec:\n  retryLimit: 3\n"));
}

/// A proposal that loses a job today's policy saves is `do not adopt`, names the job, and
/// prints no write line; `--exit-code` exits 0.
#[test]
fn a_proposal_that_loses_a_job_is_rejected_without_a_write_line() {
    let home = temp_home();
    // 40 jobs of one signature whose one retry pays once in 40 (futile under `--futile
    // 0.05`): the proposal fails them at once, and loses `j0`, which today's retry saves.
    let mut jobs = String::new();
    for k in 0..40 {
        let failed = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 5}]});
        let second = if k == 0 {
            json!({"outcome": "succeeded"})
        } else {
            failed.clone()
        };
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [failed, second]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n",
    )
    .unwrap();
    let args = [
        "suggest",
        "--history",
        path(&history),
        "--baseline",
        path(&today),
        "--exit-code",
    ];
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.ends_with("\nVerdict: do not adopt: loses 1 job today's policy saves (`j0`)\n"),
        "{text}"
    );
    assert!(!text.contains("Write the proposal"), "{text}");
    // The job a verdict names is the history's text: in `-o policy`'s comment a line break
    // in its id is escaped, so that it cannot end the comment and add a key.
    let hostile = std::fs::read_to_string(&history)
        .unwrap()
        .replacen("\"j0\"", "\"j0\\nkind: Evil\"", 1);
    std::fs::write(&history, hostile).unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("# verdict: reject: loses 1 job today's policy saves (`j0\\x0akind: Evil`)\n# Proposed by"),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("verdict: reject: loses 1 job today's policy saves (`j0\\x0akind: Evil`)\n"),
        "{}",
        crate::support::format_output(&out)
    );
}

/// The week's one rule of today's (lease expiry, retried once) has a single trial: the
/// proposal keeps it as written, so `ml-05`, which it saves, is not lost; nothing else has
/// evidence, so the verdict is to keep today's policy. In both dialects.
#[test]
fn a_rule_of_todays_with_one_trial_is_kept_and_its_job_is_not_lost() {
    let home = temp_home();
    for (engine, rule) in [
        (
            "design",
            "    # kept from today: ml-old/0 (decided 1 run)\n    - {action: Retry, onFailureCategory: [internal], onFailureSubcategory: [lease-expired], retryLimit: 1}\n",
        ),
        (
            "upstream",
            "  # kept from today: ml-old/0 (decided 1 run)\n  - {action: Retry, onCategory: internal, onSubcategory: lease-expired}\n",
        ),
    ] {
        let base = [
            "suggest",
            "--history",
            "docs/examples/lookout/week.jsonl",
            "--queue",
            "ml",
            "--baseline",
            "testdata/lookout/upstream-old/",
            "--engine",
            engine,
        ];
        let out = run(home.path(), &[&base[..], &["-o", "policy"]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(rule), "{engine}: {text}");
        assert!(text.starts_with("# verdict: keep: "), "{engine}: {text}");
        // First in the queue's list, never alone.
        assert!(text.ends_with("retryPolicies:\n- suggested\n- ml-old\n"), "{engine}: {text}");
        let v = json_of(&run(home.path(), &[&base[..], &["-o", "json"]].concat()));
        assert_eq!(
            v["suggest"]["proposal"]["kept"],
            json!([{"from": "ml-old/0", "decidedRuns": 1}]),
            "{engine}"
        );
        assert_eq!(v["suggest"]["verdict"]["decision"], json!("keep"), "{engine}");
        assert_eq!(
            v["suggest"]["proposal"]["comparison"]["transitions"]["lost"],
            json!(0),
            "{engine}: {v}"
        );
        let out = run(home.path(), &base);
        let text = String::from_utf8_lossy(&out.stdout);
        // Its row: decided by the kept rule today, and as today in the proposal.
        let row = text
            .lines()
            .find(|l| l.starts_with("category:internal/lease-expired "))
            .unwrap_or_else(|| panic!("{engine}: {text}"));
        let cells: Vec<&str> = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(
            cells,
            [
                "category:internal/lease-expired",
                "1",
                "1",
                "100.0% (20.7–100.0%)",
                "0.0",
                "Retry (ml-old/0)",
                "as today (too few trials: 1)"
            ],
            "{engine}"
        );
        assert!(
            text.contains("0 rules of its own (0 Retry, 0 Fail), then 1 rule kept from today."),
            "{engine}: {text}"
        );
    }
}

/// 30 OOM kills of `main` that a retry fixes, under today's rule that retries them with a
/// memory bump: the proposed Retry keeps the bump.
#[test]
fn an_oom_rule_keeps_todays_memory_bump() {
    let home = temp_home();
    let mut jobs = String::new();
    for k in 0..30 {
        let oom = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}]});
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [oom, {"outcome": "succeeded"}]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 2\n  defaultAction: Fail\n  rules:\n    - action: Retry\n      onConditions: [OOMKilled]\n      mutate: {resources: {memory: {factor: 1.5}}}\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("      onConditions: [OOMKilled]\n      retryLimit: 1\n      mutate: {resources: {memory: {factor: 1.5}}}\n"),
        "{text}"
    );
    assert!(
        text.contains("    # kept from today: today/0 (decided 30 runs)\n    - {action: Retry, onConditions: [OOMKilled], retryLimit: 2, mutate: {resources: {memory: {factor: 1.5}}}}\n"),
        "{text}"
    );
    let policy = home.path().join("p.yaml");
    std::fs::write(&policy, &out.stdout).unwrap();
    let out = run(home.path(), &["validate", "--strict", "-f", path(&policy)]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
}

/// Upstream: a rule of today's that today's Armada cannot store (a design matcher) cannot be
/// kept in a v1beta1 proposal: exit 2 naming it, nothing on stdout.
#[test]
fn a_design_rule_cannot_be_kept_in_an_upstream_proposal() {
    let home = temp_home();
    let history = failed_once_then_succeeded(home.path());
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 1\n  defaultAction: Fail\n  rules:\n    - action: Retry\n      onExitCodes: {operator: In, values: [3]}\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "--engine",
            "upstream",
            "--baseline-engine",
            "design",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", crate::support::format_output(&out));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: the baseline's rule `today/0` cannot be kept in a proposal for today's Armada: a v1beta1 rule matches a category only, and has no place for its onExitCodes, retryLimit\n"),
        "{err}"
    );
}

/// Upstream: OOM kills of `main` (a retry pays) and of `loader` (it never does) share the
/// deployed category `oom`: each gets a new category that splits it, named after its kind and
/// container, carrying the deployed rule's hint; alone, `main`'s rule matches `oom` itself.
#[test]
fn a_deployed_category_with_a_hint_keeps_the_hint() {
    let home = temp_home();
    let categorizer = home.path().join("executor.yaml");
    std::fs::write(
        &categorizer,
        "errorCategories:\n  enabled: true\n  categories:\n    - name: oom\n      rules:\n        - onConditions: [OOMKilled]\n          hint: Increase the memory request\n",
    )
    .unwrap();
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: today\nretryLimit: 1\ndefaultAction: Fail\n",
    )
    .unwrap();
    let write = |containers: &[(&str, bool)]| {
        let mut jobs = String::new();
        for (name, pays) in containers {
            for k in 0..30 {
                let oom = json!({"node": "n", "runFor": "60s", "containers": [{"name": name, "exitCode": 137, "reason": "OOMKilled"}]});
                let next = if *pays {
                    json!({"outcome": "succeeded"})
                } else {
                    oom.clone()
                };
                jobs.push_str(&format!(
                    "{}\n",
                    json!({"job": {"id": format!("{name}-{k}")}, "runs": [oom, next]})
                ));
            }
        }
        let history = home.path().join("h.jsonl");
        std::fs::write(&history, jobs).unwrap();
        history
    };
    let suggest = |history: &Path| {
        let out = run(
            home.path(),
            &[
                "suggest",
                "--history",
                path(history),
                "--baseline",
                path(&today),
                "--engine",
                "upstream",
                "--categorizer",
                path(&categorizer),
                "-o",
                "policy",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = suggest(&write(&[("main", true), ("loader", false)]));
    let names: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("    - name: ")).collect();
    // The new ones first, in the rules' order (container name), named after kind and
    // container; the deployed one after them.
    assert_eq!(
        names,
        ["s-oom-loader-7a963f69", "s-oom-main-ffa7ead7", "\"oom\""],
        "{text}"
    );
    // Both new categories and the deployed one.
    assert_eq!(
        text.matches("          hint: \"Increase the memory request\"\n")
            .count(),
        3,
        "{text}"
    );
    assert!(text.contains("          containerName: \"main\"\n"), "{text}");
    let history = write(&[("main", true)]);
    let text = suggest(&history);
    assert!(!text.contains("name: s-"), "{text}");
    // The `tune` line suggest prints gives both sides their categorizer: the proposal's is in
    // its file, the baseline's the deployed one.
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "--engine",
            "upstream",
            "--categorizer",
            path(&categorizer),
        ],
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!(
            "--engine upstream --baseline-categorizer {} --vary 'suggested:retryLimit=1..3'",
            path(&categorizer)
        )),
        "{table}"
    );
    assert!(text.contains("  - action: Retry\n    onCategory: \"oom\"\n"), "{text}");
}

/// A history whose proposal decides every job as today's policy does: `keep`, nothing to write.
#[test]
fn a_proposal_that_changes_nothing_keeps_todays_policy() {
    let home = temp_home();
    let history = failed_once_then_succeeded(home.path());
    let today = home.path().join("today.yaml");
    std::fs::write(
        &today,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: today}\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n",
    )
    .unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--baseline",
            path(&today),
            "--exit-code",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nVerdict: keep today's policy: the proposal changes nothing that matters: no job changes outcome, no retry is added or removed\n"),
        "{text}"
    );
    assert!(!text.contains("Write the proposal"), "{text}");
}

/// Depths never tried raise no limit; `--extrapolate` raises it and says so in every format.
#[test]
fn extrapolate_marks_every_limit_it_extrapolates() {
    let home = temp_home();
    let history = failed_once_then_succeeded(home.path());
    let base = ["suggest", "--history", path(&history)];
    let v = json_of(&run(home.path(), &[&base[..], &["-o", "json"]].concat()));
    assert_eq!(
        v["suggest"]["proposal"]["rules"],
        json!([{"signature": "exit:3@main", "action": "Retry", "limit": 1, "avoidSameNode": false}])
    );
    let v = json_of(&run(
        home.path(),
        &[&base[..], &["--extrapolate", "-o", "json"]].concat(),
    ));
    assert_eq!(
        v["suggest"]["proposal"]["rules"],
        json!([{"signature": "exit:3@main", "action": "Retry", "limit": 5, "avoidSameNode": false, "extrapolatedFrom": 1}])
    );
    let table = run(home.path(), &[&base[..], &["--extrapolate"]].concat());
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("Retry ×5 (extrapolated from depth 1)"), "{text}");
    assert!(text.contains(" --extrapolate -o policy > suggested.yaml"), "{text}");
    let policy = run(home.path(), &[&base[..], &["--extrapolate", "-o", "policy"]].concat());
    let text = String::from_utf8_lossy(&policy.stdout);
    assert!(
        text.contains("      retryLimit: 5  # extrapolated from depth 1\n"),
        "{text}"
    );
    let md = run(home.path(), &[&base[..], &["--extrapolate", "-o", "markdown"]].concat());
    assert!(String::from_utf8_lossy(&md.stdout).contains("| Retry ×5 (extrapolated from depth 1) |"));
}

/// A termination message cannot end the `# signature` comment above its rule for a YAML 1.1
/// reader (PyYAML, as go-yaml: kubectl, armadactl, the executor's config loader): U+2028,
/// U+2029, U+0085, `\r` are escaped, so PyYAML reads the same documents `validate` reads.
#[test]
fn a_message_cannot_inject_yaml_into_the_policy() {
    let Some(python) = crate::support::python::python() else {
        return;
    };
    let home = temp_home();
    let mut jobs = String::new();
    for (k, sep) in ["\u{2028}", "\u{2029}", "\u{85}", "\r"]
        .iter()
        .cycle()
        .take(40)
        .enumerate()
    {
        let message = format!("boom{sep}injected: true{sep}rules: []");
        let failed =
            json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3, "message": message}]});
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [failed, {"outcome": "succeeded"}]})
        ));
    }
    let history = home.path().join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            path(&history),
            "--min-trials",
            "5",
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let file = home.path().join("p.yaml");
    std::fs::write(&file, &out.stdout).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for c in ['\u{2028}', '\u{2029}', '\u{85}', '\r'] {
        assert!(!text.contains(c), "{c:?} in {text}");
    }
    // YAML 1.2 (validate) and YAML 1.1 (PyYAML) read the same: one policy, its four rules,
    // no key a message added.
    let out = run(home.path(), &["validate", "-f", path(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let read = crate::support::python::run(
        &python,
        "import sys, yaml\nfor d in yaml.safe_load_all(open(sys.argv[1])):\n    print(sorted(d), sorted(d['spec']), len(d['spec']['rules']))",
        &[path(&file)],
    );
    assert_eq!(
        read,
        "['apiVersion', 'kind', 'metadata', 'spec'] ['defaultAction', 'rules'] 4\n"
    );
}

/// 30 jobs whose one failed run (exit 3 in `main`) is followed by a success: a first retry
/// with evidence, no deeper depth tried. Written to `dir/h.jsonl`.
fn failed_once_then_succeeded(dir: &Path) -> PathBuf {
    let mut jobs = String::new();
    for k in 0..30 {
        let failed = json!({"node": "n", "runFor": "60s", "containers": [{"name": "main", "exitCode": 3}]});
        jobs.push_str(&format!(
            "{}\n",
            json!({"job": {"id": format!("j{k}")}, "runs": [failed, {"outcome": "succeeded"}]})
        ));
    }
    let history = dir.join("h.jsonl");
    std::fs::write(&history, jobs).unwrap();
    history
}

/// Upstream without the deployed categorizer: the new categories are said to go before the
/// executor's own (in the document and on stderr), never written as a complete config.
#[test]
fn without_the_deployed_categorizer_the_new_categories_are_not_a_complete_config() {
    let home = temp_home();
    let out = run(
        home.path(),
        &[
            "suggest",
            "--history",
            "testdata/suggest/planted.jsonl",
            "--baseline",
            "testdata/policies/valid/upstream-v1beta1.yaml",
            "--engine",
            "upstream",
            "-o",
            "policy",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("note: add these categories before the executor's existing errorCategories: they are not a complete config\n"),
        "{err}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("# add these categories before the executor's existing errorCategories: they are not a complete config\nerrorCategories:\n"),
        "{text}"
    );
}

/// A history whose only file cannot be read (a YAML error on line 3): `suggest` names the
/// file, the line and the reason in `simulate`'s words before saying there is nothing to
/// learn from, for a file read twice as for stdin read once.
#[test]
fn an_unreadable_history_is_named_with_its_line_and_reason_as_simulate_names_it() {
    let home = temp_home();
    let history = home.path().join("h.yaml");
    std::fs::write(
        &history,
        "apiVersion: armadaproject.io/v1\nkind: FailureHistory\njob: {id: j1, queue: [q\nruns: [{outcome: succeeded}]\n",
    )
    .unwrap();
    let report = format!(
        "{}\n  error: 5:1: invalid YAML: while parsing a flow sequence, expected ',' or ']'\n",
        history.display()
    );
    let simulate = run(
        home.path(),
        &[
            "simulate",
            "-f",
            "testdata/policies/valid/infra.yaml",
            "--history",
            path(&history),
        ],
    );
    assert_eq!(
        simulate.status.code(),
        Some(3),
        "{}",
        crate::support::format_output(&simulate)
    );
    assert!(
        String::from_utf8_lossy(&simulate.stderr).starts_with(&report),
        "{}",
        crate::support::format_output(&simulate)
    );
    let suggest = run(home.path(), &["suggest", "--history", path(&history)]);
    assert_eq!(
        suggest.status.code(),
        Some(3),
        "{}",
        crate::support::format_output(&suggest)
    );
    assert_eq!(
        String::from_utf8_lossy(&suggest.stderr),
        format!("{report}error: no job could be replayed (1 entry not read): there is nothing to learn from\n")
    );
    assert_eq!(suggest.stdout, b"");
}

/// Without `--engine`, suggest proposes in its baseline's dialect (docs/engines.md "Which
/// engine decides"), and its table's first line says which engine decided and how to pick
/// the other; a v1beta1 baseline proposes for today's Armada as `--engine upstream` does.
#[test]
fn the_engine_follows_the_baselines_dialect_and_the_table_says_so() {
    let p = setup(23);
    let home = temp_home();
    let upstream = home.path().join("today-up.yaml");
    std::fs::write(&upstream, BASELINE_UPSTREAM).unwrap();
    let first_line = |args: &[&str]| {
        let out = run(home.path(), args);
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let history = path(&p.history);
    assert_eq!(
        first_line(&["suggest", "--history", history]),
        "Engine: design (no baseline to take a dialect from); `--engine upstream` proposes for today's Armada."
    );
    assert_eq!(
        first_line(&["suggest", "--history", history, "--baseline", path(&p.baseline)]),
        "Engine: design (the baseline is `armadaproject.io/v1`); `--engine upstream` proposes for today's Armada."
    );
    assert_eq!(
        first_line(&["suggest", "--history", history, "--baseline", path(&upstream)]),
        "Engine: upstream (the baseline is `armadaproject.io/v1beta1`); `--engine design` proposes for the design."
    );
    assert_eq!(
        first_line(&[
            "suggest",
            "--history",
            history,
            "--baseline",
            path(&upstream),
            "--engine",
            "upstream"
        ]),
        "Engine: upstream (`--engine`); `--engine design` proposes for the design."
    );
    // The dialect's pick is `--engine upstream`'s proposal, byte for byte.
    let policy = |extra: &[&str]| {
        let mut args = vec![
            "suggest",
            "--history",
            history,
            "--baseline",
            path(&upstream),
            "-o",
            "policy",
        ];
        args.extend_from_slice(extra);
        run(home.path(), &args).stdout
    };
    let picked = policy(&[]);
    assert!(String::from_utf8_lossy(&picked).contains("apiVersion: armadaproject.io/v1beta1\n"));
    assert_eq!(picked, policy(&["--engine", "upstream"]));
}

/// One policy, one set of numbers (docs/reference/suggest.md "Its effect"): the proposal's
/// comparison in suggest's json is `simulate --baseline`'s for the same two sides, and tune's
/// candidate equal to the proposal (its `retryLimit` varied to its own value) counts the same
/// changes, in both dialects (upstream: each side with its own categorizer, the proposal's in
/// its file).
#[test]
fn one_policys_numbers_agree_across_suggest_simulate_and_tune() {
    let p = setup(29);
    let home = temp_home();
    let upstream = home.path().join("today-up.yaml");
    std::fs::write(&upstream, BASELINE_UPSTREAM).unwrap();
    let deployed = root().join("testdata/categorizer/executor-config.yaml");
    let history = path(&p.history);
    for (baseline, categorizer, limit) in [
        (path(&p.baseline), None, "suggested:spec.retryLimit"),
        (path(&upstream), Some(path(&deployed)), "suggested:retryLimit"),
    ] {
        let sides: Vec<&str> = match categorizer {
            Some(c) => vec!["--baseline", baseline, "--baseline-categorizer", c],
            None => vec!["--baseline", baseline],
        };
        let mut suggest = vec!["suggest", "--history", history, "--baseline", baseline];
        if let Some(c) = categorizer {
            suggest.extend(["--categorizer", c]);
        }
        let policy = home.path().join("proposal.yaml");
        let out = run(home.path(), &[&suggest[..], &["-o", "policy"]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        std::fs::write(&policy, &out.stdout).unwrap();
        let v = json_of(&run(home.path(), &[&suggest[..], &["-o", "json"]].concat()));
        let proposal = &v["suggest"]["proposal"];
        let sim = json_of(&run(
            home.path(),
            &[
                &["simulate", "-f", path(&policy), "--history", history][..],
                &sides,
                &["-o", "json"],
            ]
            .concat(),
        ));
        assert_eq!(proposal["comparison"], sim["comparison"], "{baseline}");
        let n = proposal["policyRetryLimit"].as_u64().unwrap();
        let vary = format!("{limit}={n}..{n}");
        let tune = json_of(&run(
            home.path(),
            &[
                &["tune", "-f", path(&policy), "--history", history][..],
                &sides,
                &["--vary", &vary, "-o", "json"],
            ]
            .concat(),
        ));
        let candidate = &tune["tune"]["candidates"][0];
        let cmp = &sim["comparison"];
        for key in ["changed", "retries", "delay", "compute"] {
            assert_eq!(candidate[key], cmp[key], "{baseline}: {key}");
        }
        for key in ["rescued", "lost", "toPending", "other", "retriesOnly"] {
            assert_eq!(
                candidate["transitions"][key], cmp["transitions"][key],
                "{baseline}: {key}"
            );
        }
        for key in ["expectedRescued", "low", "high", "withoutEstimate", "expectedCompute"] {
            assert_eq!(candidate["estimate"][key], cmp["estimate"][key], "{baseline}: {key}");
        }
        assert_eq!(tune["tune"]["jobs"], cmp["jobs"], "{baseline}");
    }
}
