//! Learning at a busy cluster's rates (docs/reference/suggest.md "Incidents"): suggest's
//! windows on generated weeks, checked against a test-side implementation of the rule that
//! counts every window from the jobs' failed runs directly. A week whose failures rise and
//! fall alike every day, overlaid 10 and 30 times (each copy moved by whole days), holds at
//! most one window; a sweep of 300 of the week's own jobs in one hour is a surge; an outage over
//! many job sets and nodes is an incident; one job set's batch failing alike is its burst, and
//! its retries are learned from.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{json, Value};

use crate::support::{format_output, retryctl, root, temp_home};

const MINUTE: i64 = 60_000_000_000;
const STEP: i64 = 10 * MINUTE;
/// 2026-11-16T00:00:00Z, in seconds.
const MONDAY: i64 = 1_794_787_200;

/// A job as the generator writes it: submitted at `at` (seconds), its job set, and its runs:
/// each failed one `(exit code, message, reason)`, then a success unless it failed 4 times.
struct Job {
    id: String,
    at: i64,
    set: Option<String>,
    fails: Vec<(i64, &'static str, &'static str)>,
}

/// A failure kind: its exit code, message and reason, and how many runs of it a job has.
const CONFIG: (i64, &str, &str) = (2, "ValueError: unknown config key", "");
const OOM: (i64, &str, &str) = (137, "", "OOMKilled");
const CUDA: (i64, &str, &str) = (139, "CUDA error: an illegal memory access was encountered", "");
const APP: (i64, &str, &str) = (42, "", "");
const UNAVAILABLE: (i64, &str, &str) = (1, "rpc error: code = Unavailable desc = registry unavailable", "");

/// A deterministic draw in `0..n` for `key`.
fn draw(key: u64, n: u64) -> u64 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % n
}

/// Job `key`'s failures: half none; else an OOM kill (1 to 4), the config error (4), a CUDA
/// error (1) or exit 42 (1 or 2).
fn usual(key: u64) -> Vec<(i64, &'static str, &'static str)> {
    let n = |k: u64| draw(key ^ (k << 56), 4) as usize + 1;
    match draw(key, 20) {
        0..=9 => vec![],
        10..=13 => vec![OOM; n(1)],
        14..=15 => vec![CONFIG; 4],
        16..=17 => vec![CUDA; 1],
        _ => vec![APP; 1 + draw(key ^ 7, 2) as usize],
    }
}

/// The share of a day's jobs submitted by second `s` of it: the rate rises from 1 at
/// midnight to 3 at noon and falls back, `1 + (1 − cos(2π s/day))`.
fn by(s: f64) -> f64 {
    let day = 86_400.0;
    (2.0 * s - day / std::f64::consts::PI * (2.0 * std::f64::consts::PI * s / day).sin()) / (2.0 * day)
}

/// The second of the day by which a share `u` of its jobs was submitted.
fn second_of(u: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 86_400.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if by(mid) < u {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The week, `copies` times over: each copy's 7 days of 288 jobs, moved by `copy` whole
/// days (wrapping in the week), its jobs a little apart from the other copies', and drawn
/// anew; job sets of 20 consecutive jobs.
fn week(copies: u64) -> Vec<Job> {
    let mut jobs = Vec::new();
    for c in 0..copies {
        for d in 0..7u64 {
            let day = (d + c) % 7;
            for j in 0..288u64 {
                let u = (j as f64 + (c as f64 + 0.5) / copies as f64) / 288.0;
                let key = (c << 40) | (d << 20) | j;
                jobs.push(Job {
                    id: format!("c{c}-d{d}-{j:03}"),
                    at: MONDAY + day as i64 * 86_400 + second_of(u) as i64,
                    set: Some(format!("c{c}-d{d}-batch-{}", j / 20)),
                    fails: usual(key),
                });
            }
        }
    }
    jobs
}

/// Day `d` of the week at `h:00`, in seconds.
fn hour(d: i64, h: i64) -> i64 {
    MONDAY + d * 86_400 + h * 3600
}

/// The history: each failed run 120 s, a success 3600 s, on node `(7i + 13j) mod 41`.
fn history(jobs: &[Job]) -> String {
    let mut out = String::new();
    for (i, job) in jobs.iter().enumerate() {
        let mut runs: Vec<Value> = job
            .fails
            .iter()
            .map(|(code, message, reason)| {
                let mut c = json!({"name": "main", "exitCode": code});
                if !message.is_empty() {
                    c["message"] = json!(message);
                }
                if !reason.is_empty() {
                    c["reason"] = json!(reason);
                }
                json!({"runFor": "120s", "containers": [c]})
            })
            .collect();
        if job.fails.len() < 4 {
            runs.push(json!({"runFor": "3600s", "outcome": "succeeded"}));
        }
        for (j, r) in runs.iter_mut().enumerate() {
            r["node"] = json!(format!("node-{}", (7 * i + 13 * j) % 41));
        }
        let mut line = json!({
            "job": {"id": job.id, "queue": "ml", "submittedAt": rfc3339(job.at * 1_000_000_000), "resources": {"gpu": 1}},
            "runs": runs,
        });
        if let Some(set) = &job.set {
            line["job"]["jobSet"] = json!(set);
        }
        out.push_str(&format!("{line}\n"));
    }
    out
}

/// `ns` since the epoch as RFC 3339 (whole seconds, UTC), as retryctl writes a window's edge.
fn rfc3339(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let (days, s) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

/// What a window is, as the test-side rule tells it.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Incident,
    Burst { set: String, jobs: u64 },
    Surge { jobs: u64, expected: f64 },
}

impl Kind {
    fn rank(&self) -> (u8, u64) {
        match self {
            Kind::Incident => (2, 0),
            Kind::Burst { jobs, .. } => (1, *jobs),
            Kind::Surge { jobs, .. } => (0, *jobs),
        }
    }
}

/// `ln n!` for n up to `n`, by sums.
fn ln_factorials(n: u64) -> Vec<f64> {
    let mut v = vec![0.0f64; n as usize + 2];
    for i in 1..v.len() {
        v[i] = v[i - 1] + (i as f64).ln();
    }
    v
}

/// `P(X ≥ k)`, `X ~ Poisson(λ)`: the terms from `k` up, summed until they no longer count.
fn poisson_tail(k: u64, lambda: f64, lf: &[f64]) -> f64 {
    if lambda <= 0.0 {
        return if k == 0 { 1.0 } else { 0.0 };
    }
    let top = (k as f64).max(lambda * 3.0) as usize + 200;
    (k as usize..top)
        .map(|i| (-lambda + i as f64 * lambda.ln() - lf[i]).exp())
        .sum::<f64>()
        .min(1.0)
}

/// `P(Y ≥ k)`, `Y ~ Binomial(n, q)`, every term summed.
fn binomial_tail(k: u64, n: u64, q: f64, lf: &[f64]) -> f64 {
    if q >= 1.0 {
        return if k <= n { 1.0 } else { 0.0 };
    }
    (k..=n)
        .map(|i| {
            (lf[n as usize] - lf[i as usize] - lf[(n - i) as usize]
                + i as f64 * q.ln()
                + (n - i) as f64 * (1.0 - q).ln())
            .exp()
        })
        .sum::<f64>()
        .min(1.0)
}

/// A failed run for the rule: its time in ns, signature and node.
type Failed = (i64, String, String);

/// A failing job for the rule: its job set, and its failed runs.
struct Failing {
    set: Option<String>,
    runs: Vec<Failed>,
}

fn failing(jobs: &[Job]) -> Vec<Failing> {
    jobs.iter()
        .enumerate()
        .filter(|(_, j)| !j.fails.is_empty())
        .map(|(i, j)| Failing {
            set: j.set.clone(),
            runs: j
                .fails
                .iter()
                .enumerate()
                .map(|(k, f)| {
                    let end = (j.at + 120 * (k as i64 + 1)) * 1_000_000_000;
                    (end, format!("{f:?}"), format!("node-{}", (7 * i + 13 * k) % 41))
                })
                .collect(),
        })
        .collect()
}

/// The rule, counted the long way: every window start, `k` and `λ_w` from the jobs, each
/// unusual window's kind from its jobs, widened and merged: `(from, to, kind)`.
fn rule(jobs: &[Failing]) -> Vec<(String, String, Kind)> {
    let step = |t: i64| t.div_euclid(STEP);
    let first = jobs.iter().flat_map(|j| &j.runs).map(|r| step(r.0)).min().unwrap();
    let last = jobs.iter().flat_map(|j| &j.runs).map(|r| step(r.0)).max().unwrap();
    let b = (last - first + 1) as u64;
    let lf = ln_factorials(jobs.len() as u64 * 2 + 1000);
    // The jobs in window `s`, and those runs of theirs.
    let within = |s: i64| -> Vec<(&Failing, Vec<&Failed>)> {
        jobs.iter()
            .map(|j| {
                (
                    j,
                    j.runs
                        .iter()
                        .filter(|r| s <= step(r.0) && step(r.0) < s + 6)
                        .collect::<Vec<_>>(),
                )
            })
            .filter(|(_, r)| !r.is_empty())
            .collect()
    };
    let ks: BTreeMap<i64, u64> = (first..=last).map(|s| (s, within(s).len() as u64)).collect();
    let mean = ks.values().sum::<u64>() as f64 / b as f64;
    let (day, hour) = (|s: i64| s.div_euclid(144), |s: i64| s.rem_euclid(144) / 6);
    let days = day(last) - day(first) + 1;
    let expected = |s: i64| -> f64 {
        if days < 3 {
            return mean;
        }
        let others: Vec<u64> = ks
            .iter()
            .filter(|(o, _)| hour(**o) == hour(s) && day(**o) != day(s))
            .map(|(_, k)| *k)
            .collect();
        match others.is_empty() {
            true => mean,
            false => others.iter().sum::<u64>() as f64 / others.len() as f64,
        }
    };
    let unusual = |k: u64, l: f64| k >= 5 && poisson_tail(k, l, &lf) < 0.01 / b as f64;
    // The span's shares.
    let mut sig_jobs: BTreeMap<&str, u64> = BTreeMap::new();
    let mut node_jobs: BTreeMap<&str, u64> = BTreeMap::new();
    for j in jobs {
        for s in j.runs.iter().map(|r| r.1.as_str()).collect::<BTreeSet<_>>() {
            *sig_jobs.entry(s).or_default() += 1;
        }
        for n in j.runs.iter().map(|r| r.2.as_str()).collect::<BTreeSet<_>>() {
            *node_jobs.entry(n).or_default() += 1;
        }
    }
    let total = jobs.len() as u64;
    // The most of `counts` (ties: the first name).
    fn top<'a>(counts: &BTreeMap<&'a str, u64>) -> Option<(&'a str, u64)> {
        counts
            .iter()
            .fold(None, |best: Option<(&str, u64)>, (k, n)| match best {
                Some((_, m)) if m >= *n => best,
                _ => Some((k, *n)),
            })
    }
    let mut found: Vec<(i64, i64, Kind)> = Vec::new();
    for (&s, &k) in &ks {
        let l = expected(s);
        if !unusual(k, l) {
            continue;
        }
        let inside = within(s);
        let mut sets: BTreeMap<&str, u64> = BTreeMap::new();
        let mut sigs: BTreeMap<&str, u64> = BTreeMap::new();
        let mut nodes: BTreeMap<&str, u64> = BTreeMap::new();
        for (j, runs) in &inside {
            if let Some(set) = &j.set {
                *sets.entry(set.as_str()).or_default() += 1;
            }
            for s in runs.iter().map(|r| r.1.as_str()).collect::<BTreeSet<_>>() {
                *sigs.entry(s).or_default() += 1;
            }
            for n in runs.iter().map(|r| r.2.as_str()).collect::<BTreeSet<_>>() {
                *nodes.entry(n).or_default() += 1;
            }
        }
        let (set, most) = top(&sets).unwrap_or(("", 0));
        let over = |counts: &BTreeMap<&str, u64>, span: &BTreeMap<&str, u64>| {
            top(counts)
                .is_some_and(|(name, n)| binomial_tail(n, k, span[name] as f64 / total as f64, &lf) < 0.01 / b as f64)
        };
        let kind = if !unusual(k - most, l) {
            Kind::Burst {
                set: set.to_string(),
                jobs: most,
            }
        } else if !over(&sigs, &sig_jobs) && !over(&nodes, &node_jobs) {
            Kind::Surge { jobs: k, expected: l }
        } else {
            Kind::Incident
        };
        found.push((s * STEP - STEP, s * STEP + 6 * STEP + STEP / 2, kind));
    }
    let mut merged: Vec<(i64, i64, Kind)> = Vec::new();
    for (from, to, kind) in found {
        match merged.last_mut() {
            Some(last) if from < last.1 => {
                last.1 = last.1.max(to);
                if kind.rank() > last.2.rank() {
                    last.2 = kind;
                }
            }
            _ => merged.push((from, to, kind)),
        }
    }
    merged
        .into_iter()
        .map(|(a, b, k)| (rfc3339(a), rfc3339(b), k))
        .collect()
}

/// suggest's windows, as its json lists them: `(from, to, kind)` in time order.
fn windows(v: &Value) -> Vec<(String, String, Kind)> {
    let s = &v["suggest"];
    let list = |key: &str| s[key].as_array().cloned().unwrap_or_default();
    let edge = |w: &Value, k: &str| w[k].as_str().unwrap().to_string();
    let mut out: Vec<(String, String, Kind)> = Vec::new();
    for w in list("incidents") {
        out.push((edge(&w, "from"), edge(&w, "to"), Kind::Incident));
    }
    for w in list("bursts") {
        assert_eq!(w["queue"], "ml");
        let set = w["jobSet"].as_str().unwrap().to_string();
        out.push((edge(&w, "from"), edge(&w, "to"), Kind::Burst { set, jobs: 0 }));
    }
    for w in list("surges") {
        let kind = Kind::Surge {
            jobs: w["jobs"].as_u64().unwrap(),
            expected: w["expected"].as_f64().unwrap(),
        };
        out.push((edge(&w, "from"), edge(&w, "to"), kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The test-side windows in the json's terms: a burst's jobs unsaid, a surge's expected count
/// to 2 decimals.
fn as_listed(rule: Vec<(String, String, Kind)>) -> Vec<(String, String, Kind)> {
    rule.into_iter()
        .map(|(a, b, k)| {
            let k = match k {
                Kind::Burst { set, .. } => Kind::Burst { set, jobs: 0 },
                Kind::Surge { jobs, expected } => Kind::Surge {
                    jobs,
                    expected: (expected * 100.0).round() / 100.0,
                },
                k => k,
            };
            (a, b, k)
        })
        .collect()
}

/// `suggest -o json` over `jobs` (today: retry everything 3 times) with `extra` flags.
fn suggest(dir: &Path, jobs: &[Job], extra: &[&str]) -> (Value, String) {
    std::fs::write(dir.join("week.jsonl"), history(jobs)).unwrap();
    std::fs::copy(root().join("testdata/suggest/today.yaml"), dir.join("today.yaml")).unwrap();
    let home = temp_home();
    let mut args = vec![
        "suggest",
        "--history",
        "week.jsonl",
        "--baseline",
        "today.yaml",
        "-o",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = retryctl(home.path()).current_dir(dir).args(&args).output().unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", format_output(&out));
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A week whose jobs name no job set (as the README's route week: one job set's failing jobs
/// can take a window under the bound at its edges, where a sweep's are few), and 300 of its
/// own jobs (every 7th, and their failures) again on Thursday from 14:00, one every 12
/// seconds: a surge.
fn surge_week() -> Vec<Job> {
    let mut jobs = week(1);
    for j in &mut jobs {
        j.set = None;
    }
    let again: Vec<Job> = (0..300)
        .map(|k| &jobs[k * 7 % jobs.len()])
        .enumerate()
        .map(|(k, j)| Job {
            id: format!("again-{k:03}"),
            at: hour(3, 14) + 12 * k as i64,
            set: j.set.clone(),
            fails: j.fails.clone(),
        })
        .collect();
    jobs.extend(again);
    jobs
}

/// The week, and Wednesday 08:00–09:30: 120 jobs of 6 job sets, every run failing on the
/// registry (an incident).
fn outage_week() -> Vec<Job> {
    let mut jobs = week(1);
    jobs.extend((0..120).map(|k| Job {
        id: format!("outage-{k:03}"),
        at: hour(2, 8) + 45 * k as i64,
        set: Some(format!("train-{}", k % 6)),
        fails: vec![UNAVAILABLE; 4],
    }));
    jobs
}

/// The week, and Wednesday from 08:00: 120 jobs of `sweep-17`, each failing 4 times on a bad
/// config key (the week's own config error): its burst.
fn burst_week() -> Vec<Job> {
    let mut jobs = week(1);
    jobs.extend((0..120).map(|k| Job {
        id: format!("sweep-{k:03}"),
        at: hour(2, 8) + 30 * k as i64,
        set: Some("sweep-17".into()),
        fails: vec![CONFIG; 4],
    }));
    jobs
}

#[test]
fn a_week_overlaid_10_and_30_times_with_no_outage_holds_one_window_at_most() {
    for copies in [10, 30] {
        let jobs = week(copies);
        let dir = tempfile::tempdir().unwrap();
        let (v, _) = suggest(dir.path(), &jobs, &[]);
        let want = rule(&failing(&jobs));
        assert!(want.len() <= 1, "{copies}×: {want:?}");
        assert_eq!(windows(&v), as_listed(want), "{copies}×");
    }
}

#[test]
fn a_sweep_of_the_usual_mix_is_a_surge_and_learned_from() {
    let jobs = surge_week();
    let dir = tempfile::tempdir().unwrap();
    let (v, stderr) = suggest(dir.path(), &jobs, &[]);
    let want = rule(&failing(&jobs));
    assert_eq!(want.len(), 1, "{want:?}");
    assert!(matches!(want[0].2, Kind::Surge { .. }), "{want:?}");
    assert_eq!(windows(&v), as_listed(want));
    // Nothing left out: no incident, no line on stderr, every run learned from.
    assert!(v["suggest"].get("incidents").is_none(), "{}", v["suggest"]);
    assert!(!stderr.contains("left out of learning"), "{stderr}");
    assert!(v["suggest"]["surges"][0]["failedRuns"]
        .as_u64()
        .is_some_and(|n| n > 100));
}

#[test]
fn an_outage_over_many_job_sets_and_nodes_is_an_incident() {
    let jobs = outage_week();
    let dir = tempfile::tempdir().unwrap();
    let (v, stderr) = suggest(dir.path(), &jobs, &[]);
    let want = rule(&failing(&jobs));
    assert_eq!(want.iter().filter(|w| w.2 == Kind::Incident).count(), 1, "{want:?}");
    assert_eq!(windows(&v), as_listed(want));
    let left = &v["suggest"]["incidentsLeftOut"];
    assert!(left["failedRuns"].as_u64().unwrap() >= 480, "{left}");
    assert!(stderr.contains("incidents: 1 window, "), "{stderr}");
    assert!(stderr.contains("% of failed runs left out of learning"), "{stderr}");
}

#[test]
fn one_job_sets_batch_is_its_burst_and_its_retries_are_learned_from() {
    let jobs = burst_week();
    let dir = tempfile::tempdir().unwrap();
    let (v, stderr) = suggest(dir.path(), &jobs, &[]);
    let want = rule(&failing(&jobs));
    assert_eq!(want.len(), 1, "{want:?}");
    assert!(
        matches!(&want[0].2, Kind::Burst { set, .. } if set == "sweep-17"),
        "{want:?}"
    );
    assert_eq!(windows(&v), as_listed(want));
    let burst = &v["suggest"]["bursts"][0];
    assert_eq!(burst["jobSet"].as_str(), Some("sweep-17"));
    assert!(burst["jobs"].as_u64().unwrap() >= 120, "{burst}");
    assert!(!stderr.contains("left out of learning"), "{stderr}");
    // Its 360 retries are trials, as with every run learned from.
    let config = |v: &Value| {
        v["suggest"]["signatures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["signature"].as_str().unwrap().contains("unknown config key"))
            .unwrap()["trials"]
            .clone()
    };
    let (off, _) = suggest(dir.path(), &jobs, &["--incidents", "off"]);
    assert_eq!(config(&v), config(&off));
    assert!(config(&v).as_u64().unwrap() >= 360);
}

/// The windows of a `simulate` or `tune` json's `incidents` object, in suggest's terms: a
/// burst's job set, a surge's jobs and expected count.
fn replay_windows(incidents: &Value) -> Vec<(String, String, Kind)> {
    let as_suggest = json!({"suggest": {
        "incidents": incidents["windows"],
        "bursts": incidents["bursts"],
        "surges": incidents["surges"],
    }});
    windows(&as_suggest)
}

/// What leaving the incidents out left out of a `simulate` or `tune` json's estimates: the
/// failed runs counted and those in the windows.
fn left_out(incidents: &Value) -> (u64, u64) {
    let n = |k: &str| incidents[k].as_u64().unwrap_or(0);
    (n("failedRuns"), n("inWindows"))
}

#[test]
fn suggest_simulate_and_tune_find_the_same_windows_of_the_same_kinds() {
    for (name, jobs) in [
        ("burst", burst_week()),
        ("surge", surge_week()),
        ("outage", outage_week()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (v, _) = suggest(dir.path(), &jobs, &[]);
        let want = windows(&v);
        assert!(!want.is_empty(), "{name}");
        assert_eq!(want, as_listed(rule(&failing(&jobs))), "{name}");
        std::fs::write(
            dir.path().join("candidate.yaml"),
            "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata:\n  name: today\nspec:\n  retryLimit: 1\n  defaultAction: Retry\n  rules: []\n",
        )
        .unwrap();
        let home = temp_home();
        let run = |args: &[&str]| -> Value {
            let out = retryctl(home.path())
                .current_dir(dir.path())
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.code().is_some_and(|c| c <= 1), "{}", format_output(&out));
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let simulate = run(&[
            "simulate",
            "-f",
            "candidate.yaml",
            "--baseline",
            "today.yaml",
            "--history",
            "week.jsonl",
            "-o",
            "json",
        ]);
        let tune = run(&[
            "tune",
            "-f",
            "today.yaml",
            "--vary",
            "today:spec.retryLimit=0..3",
            "--history",
            "week.jsonl",
            "-o",
            "json",
        ]);
        let (simulate, tune) = (&simulate["comparison"]["incidents"], &tune["tune"]["incidents"]);
        assert_eq!(replay_windows(simulate), want, "{name}: simulate --baseline {simulate}");
        assert_eq!(replay_windows(tune), want, "{name}: tune {tune}");
        // suggest's own comparison says what its pass 1 found: the bursts and surges too.
        let compared = &v["suggest"]["proposal"]["comparison"]["incidents"];
        assert_eq!(
            replay_windows(compared),
            want,
            "{name}: suggest's comparison {compared}"
        );
        // The same runs left out: the incidents' failed runs, as suggest lists them.
        let listed: u64 = v["suggest"]["incidents"]
            .as_array()
            .map_or(0, |w| w.iter().map(|w| w["failedRuns"].as_u64().unwrap()).sum());
        assert_eq!(left_out(simulate).1, listed, "{name}: {simulate}");
        assert_eq!(left_out(tune), left_out(simulate), "{name}");
        assert_eq!(name == "outage", listed > 0, "{name}");
    }
}
