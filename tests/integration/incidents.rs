//! Learning that sees time and cause (docs/reference/suggest.md "Incidents", "A collided retry
//! is no trial"): a week with a planted outage, whose retries all failed inside it, keeps the
//! outage's signature's Retry, lists the window and marks the signature; the same week with
//! `--incidents off` learns the outage's Fail; a week of retries that collided with the pods
//! the executor keeps learns no Fail from them and keeps their Retry with the category's pods
//! deleted, which `simulate --baseline` shows collide no more; the flags' refusals.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{exchange, format_output, retryctl, root, temp_home};

/// The outage's signature (docs/reference/suggest.md "Signatures").
const UNAVAILABLE: &str = "exit:1@main \"rpc error: code = Unavailable desc = registry unavailable\"";

/// A run of container `main` failing with `code` and `message` after `secs` seconds.
fn failed(code: i64, message: &str, secs: u64) -> Value {
    json!({"runFor": format!("{secs}s"), "containers": [{"name": "main", "exitCode": code, "message": message}]})
}

fn succeeded() -> Value {
    json!({"runFor": "3600s", "outcome": "succeeded"})
}

/// Job `i`'s runs: `failures` failed runs of one kind, then a success unless the 4 runs
/// today's policy allows failed; each on one of 41 nodes, the next run on another.
fn runs(i: u64, failures: usize, run: impl Fn() -> Value) -> Vec<Value> {
    let mut v: Vec<Value> = (0..failures).map(|_| run()).collect();
    if failures < 4 {
        v.push(succeeded());
    }
    for (j, r) in v.iter_mut().enumerate() {
        r["node"] = json!(format!("node-{}", (7 * i + 13 * j as u64) % 41));
    }
    v
}

/// The week of 2026-11-16, a job every 5 minutes: half of them succeed at once; the others
/// fail with an OOM kill (30% paid at the first retry, 20% at the second), a config error (no
/// retry pays), a CUDA error (the first retry pays) or exit 42 (every retry pays), and one
/// job in 67 with the registry's `Unavailable` (its retries pay at every depth: a sixth each
/// at the first, second and third retry); and with `outage`, on Wednesday from 08:00 to 10:30,
/// 120 more jobs whose 4 runs all fail with `Unavailable`: 480 failed runs in 2.5 hours.
fn week(outage: bool) -> String {
    let start = 1_794_787_200u64; // 2026-11-16T00:00:00Z
    let time = |secs: u64| {
        let t = start + secs;
        let (days, s) = (t / 86_400 - 20_773, t % 86_400); // days since 2026-11-16
        format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}Z",
            16 + days,
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    };
    let mut jobs = Vec::new();
    let unavailable = || failed(1, "rpc error: code = Unavailable desc = registry unavailable", 120);
    for i in 0..7 * 288u64 {
        let at = time(i * 300);
        let k = i / 10;
        let runs = if i % 67 == 8 {
            runs(i, [1, 2, 3, 4, 4, 4][(i / 67 % 6) as usize], unavailable)
        } else {
            match i % 10 {
                5 => runs(
                    i,
                    [1, 1, 1, 2, 2, 4, 4, 4, 4, 4][(k % 10) as usize],
                    || json!({"runFor": "120s", "containers": [{"name": "main", "exitCode": 137, "reason": "OOMKilled"}]}),
                ),
                6 => runs(i, 4, || failed(2, "ValueError: unknown config key", 120)),
                7 => runs(i, 1, || {
                    failed(139, "CUDA error: an illegal memory access was encountered", 120)
                }),
                9 => runs(i, 1 + (k % 5 >= 3) as usize, || failed(42, "", 120)),
                _ => runs(i, 0, succeeded),
            }
        };
        jobs.push(json!({"job": {"id": format!("w-{i:04}"), "queue": "ml", "submittedAt": at, "resources": {"gpu": 1}}, "runs": runs}));
    }
    if outage {
        let wednesday_8 = 2 * 86_400 + 8 * 3600;
        for j in 0..120u64 {
            let at = time(wednesday_8 + j * 75);
            let runs = runs(j, 4, || {
                failed(1, "rpc error: code = Unavailable desc = registry unavailable", 60)
            });
            jobs.push(json!({"job": {"id": format!("o-{j:03}"), "queue": "ml", "submittedAt": at, "resources": {"gpu": 1}}, "runs": runs}));
        }
    }
    jobs.iter().map(|j| format!("{j}\n")).collect()
}

fn suggest(dir: &Path, extra: &[&str]) -> std::process::Output {
    let home = temp_home();
    let mut args = vec!["suggest", "--history", "week.jsonl", "--baseline", "today.yaml"];
    args.extend_from_slice(extra);
    retryctl(home.path()).current_dir(dir).args(&args).output().unwrap()
}

fn json_of(out: &std::process::Output) -> Value {
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", format_output(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn signature<'v>(v: &'v Value, text: &str) -> &'v Value {
    v["suggest"]["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["signature"] == text)
        .unwrap_or_else(|| panic!("no signature {text}"))
}

fn outage_week() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("week.jsonl"), week(true)).unwrap();
    std::fs::copy(
        root().join("testdata/suggest/today.yaml"),
        dir.path().join("today.yaml"),
    )
    .unwrap();
    dir
}

/// The outage is found, widened, listed with its counts; its signature pays outside it at
/// every depth and keeps today's Retry ×3, marked incident-sensitive (with the outage's runs
/// counted it would fail); no other signature's proposal depends on the window.
#[test]
fn a_one_morning_outage_makes_no_permanent_rule() {
    let dir = outage_week();
    let v = json_of(&suggest(dir.path(), &["-o", "json"]));
    let s = signature(&v, UNAVAILABLE);
    // 90 failed runs of 30 jobs outside, 480 of the outage's: those and 4 of a job of the 30
    // that fell in the widened window are left out, with its 3 trials.
    assert_eq!(
        (s["failedRuns"].as_u64(), s["inIncidents"].as_u64()),
        (Some(570), Some(484))
    );
    assert_eq!(s["trials"], 72);
    // json gives both: the proposal, and the one its incident runs would make.
    assert_eq!(
        (&s["proposed"], &s["withIncidents"]),
        (
            &json!({"signature": UNAVAILABLE, "action": "Retry", "limit": 3, "avoidSameNode": false}),
            &json!({"signature": UNAVAILABLE, "action": "Fail", "limit": null, "avoidSameNode": false})
        )
    );
    let incidents = v["suggest"]["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{incidents:?}");
    let w = &incidents[0];
    // The outage's first run ends at 08:01 and its last at 10:33; widened, the window starts
    // on a 10-minute mark less 10 minutes and ends on a 5-minute one.
    let (from, to) = (w["from"].as_str().unwrap(), w["to"].as_str().unwrap());
    assert!(("2026-11-18T07:00:00Z".."2026-11-18T08:01:00Z").contains(&from), "{w}");
    assert!(("2026-11-18T10:34:00Z".."2026-11-18T12:00:00Z").contains(&to), "{w}");
    assert!(w["jobs"].as_u64().unwrap() >= 120, "{w}");
    assert_eq!(w["signatures"][UNAVAILABLE], 484);
    assert_eq!(w["detected"], true);
    // The background's signatures in the window are left out too, and decide alike.
    for s in v["suggest"]["signatures"].as_array().unwrap() {
        if s["signature"] != UNAVAILABLE {
            assert!(s.get("withIncidents").is_none(), "{s}");
        }
    }
    // The table says it: the window, its counts, the signature's mark.
    // The table says it: the signature's row and its mark, the window with its counts, and
    // the remark on the design dialect's backoff (0s, the default's) against the median
    // incident for the proposal's Retry rules hit inside it.
    let table = String::from_utf8(suggest(dir.path(), &[]).stdout).unwrap();
    assert!(
        table.contains(
            "\nexit:1@main \"rpc error: code = Unavailable desc…  570   72      484           20.8% (13.1–31.6%)    26.0   Retry (today/default, 76.3% of runs retried)  Retry ×3; incident-sensitive: Fail with the incident runs\n"
        ),
        "{table}"
    );
    let block = &table[table.find("\nIncidents:").expect(&table)..table.find("\n\nSuspect nodes").expect(&table)];
    assert_eq!(
        block,
        [
            "\nIncidents: 1 window (median 4h5m): 533 of 2372 failed runs learned from left out of learning (22.5%);",
            "  the record retried 403 failed runs inside them, 11 succeeded",
            "  2026-11-18T07:10:00Z – 2026-11-18T11:15:00Z: 141 jobs, 533 failed runs, 9.8 GPU-hours;",
            "    exit:1@main \"rpc error: code = Unavaila… ×484, exit:2@main \"ValueError: unknown config… ×20, oom@main ×17",
            "  backoff 0s < the median incident, 4h5m: the retries of 4 signatures hit inside one come back while an incident may last (exit:1@main \"rpc error:",
            "    code = Unavaila…, exit:139@main \"CUDA error: an illegal m…, oom@main, exit:42@main)",
        ]
        .join("\n")
    );
}

/// `--incidents off`: no window, every run learned from: the outage's 360 futile retries
/// make its signature `Fail`, as they did before windows were found.
#[test]
fn with_incidents_off_the_outage_teaches_fail() {
    let dir = outage_week();
    let v = json_of(&suggest(dir.path(), &["-o", "json", "--incidents", "off"]));
    assert!(v["suggest"].get("incidents").is_none(), "{}", v["suggest"]);
    let s = signature(&v, UNAVAILABLE);
    assert!(s.get("inIncidents").is_none());
    assert_eq!(s["trials"], 435);
    assert_eq!(s["proposed"]["action"], "Fail");
    let table = String::from_utf8(suggest(dir.path(), &["--incidents", "off"]).stdout).unwrap();
    assert!(!table.contains("Incidents:"), "{table}");
    // Given by hand, the outage's hours are left out as the detector leaves them out.
    let given = json_of(&suggest(
        dir.path(),
        &[
            "-o",
            "json",
            "--incidents",
            "off",
            "--incident",
            "2026-11-18T07:50:00Z/2026-11-18T10:45:00Z",
        ],
    ));
    let w = &given["suggest"]["incidents"][0];
    assert_eq!(
        (&w["from"], &w["to"], &w["given"], &w["detected"]),
        (
            &json!("2026-11-18T07:50:00Z"),
            &json!("2026-11-18T10:45:00Z"),
            &json!(true),
            &json!(false)
        )
    );
    assert_eq!(signature(&given, UNAVAILABLE)["proposed"]["action"], "Retry");
}

/// A history without the outage has no window, and the same proposal with and without
/// detection: spread failures make no incident.
#[test]
fn an_ordinary_week_has_no_window() {
    let dir = outage_week();
    std::fs::write(dir.path().join("week.jsonl"), week(false)).unwrap();
    let auto = suggest(dir.path(), &["-o", "json"]);
    let off = suggest(dir.path(), &["-o", "json", "--incidents", "off"]);
    assert!(json_of(&auto)["suggest"].get("incidents").is_none());
    assert_eq!(auto.stdout, off.stdout);
    // simulate's summary says no window either; with the outage, its one line.
    let home = temp_home();
    let sim = |extra: &[&str]| {
        let mut args = vec!["simulate", "-f", "today.yaml", "--history", "week.jsonl"];
        args.extend_from_slice(extra);
        exchange(retryctl(home.path()).current_dir(dir.path()).args(&args))
    };
    assert!(!sim(&[]).contains("incidents:"));
    std::fs::write(dir.path().join("week.jsonl"), week(true)).unwrap();
    let out = sim(&[]);
    assert!(
        out.contains(
            "\n  incidents: 1 window, 533 of 2372 failed runs (22.5%); 403 trials left out of the estimates\n"
        ),
        "{out}"
    );
    assert!(!sim(&["--incidents", "off"]).contains("incidents:"));
}

/// A sharded suggest detects the same window as one process: its shards' counts of the
/// failed runs' times add up in the merge, which reads the history again for what the window
/// holds.
#[test]
fn shards_find_the_same_window() {
    let dir = outage_week();
    let home = temp_home();
    let one = suggest(dir.path(), &["-o", "json"]);
    for i in 0..3 {
        let part = retryctl(home.path())
            .current_dir(dir.path())
            .args([
                "suggest",
                "--history",
                "week.jsonl",
                "--baseline",
                "today.yaml",
                "--shard",
                &format!("{i}/3"),
                "-o",
                "partial",
            ])
            .output()
            .unwrap();
        assert!(part.status.success(), "{}", format_output(&part));
        std::fs::write(dir.path().join(format!("p{i}.json")), part.stdout).unwrap();
    }
    let merged = retryctl(home.path())
        .current_dir(dir.path())
        .args(["merge", "p0.json", "p1.json", "p2.json", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(format_output(&merged), format_output(&one));
}

/// The flags' refusals: a window that is not two times, or ends before it starts.
#[test]
fn a_window_given_by_hand_must_be_a_span() {
    let dir = outage_week();
    for (given, said) in [
        (
            "2026-11-18T08:00:00Z",
            "error: invalid `--incident` `2026-11-18T08:00:00Z`: expected `FROM/TO`, two RFC 3339 times such as `2026-11-18T09:00:00Z/2026-11-18T11:30:00Z`\n",
        ),
        (
            "2026-11-18T10:00:00Z/2026-11-18T08:00:00Z",
            "error: invalid `--incident` `2026-11-18T10:00:00Z/2026-11-18T08:00:00Z`: it ends before it starts\n",
        ),
        (
            "2026-11-18T08:00:00Z/tomorrow",
            "error: invalid `--incident` `tomorrow`: expected an RFC 3339 time such as `2026-01-01T00:00:00Z`\n",
        ),
    ] {
        let out = suggest(dir.path(), &["--incident", given]);
        assert_eq!(format_output(&out), format!("exit: 2\n--- stdout\n--- stderr\n{said}"));
    }
}

/// Today's Armada as deployed: `network` keeps its failed pods (no `action: Delete`), so a
/// retry of a connection reset reuses the kept pod's name, collides, and its lease is returned.
pub(crate) const EXECUTOR: &str = "application:
  clusterId: ml-gpu-a
  errorCategories:
    enabled: true
    categories:
      - name: network
        rules:
          - containerName: main
            onTerminationMessage: {pattern: \"ConnectionResetError\"}
      - name: gpu
        action: Delete
        rules:
          - containerName: main
            onTerminationMessage: {pattern: \"CUDA error\"}
";

pub(crate) const POLICIES: &str = "apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: ml-today
retryLimit: 3
defaultAction: Fail
rules:
- action: Retry
  onCategory: network
- action: Retry
  onCategory: gpu
";

/// A week of today's Armada: 100 connection resets, each retried once into a returned lease
/// without a word (the collision), and 60 CUDA errors each paid at the first retry.
fn collided_week() -> String {
    let mut jobs = Vec::new();
    for i in 0..160u64 {
        let at = format!("2026-11-{:02}T{:02}:{:02}:00Z", 16 + i % 7, i % 24, i % 60);
        let (message, category) = match i < 100 {
            true => ("ConnectionResetError: [Errno 104] Connection reset by peer", "network"),
            false => ("CUDA error: an illegal memory access was encountered", "gpu"),
        };
        let first = json!({"node": "node-1", "runFor": "600s", "category": category,
            "containers": [{"name": "main", "exitCode": 1, "message": message}]});
        let next = match i < 100 {
            true => json!({"node": "node-1", "outcome": "leaseReturned"}),
            false => json!({"node": "node-2", "runFor": "3600s", "outcome": "succeeded"}),
        };
        jobs.push(json!({"job": {"id": format!("c-{i:03}"), "queue": "ml", "submittedAt": at, "resources": {"gpu": 1}}, "runs": [first, next]}));
    }
    jobs.iter().map(|j| format!("{j}\n")).collect()
}

/// `simulate --baseline` of `suggested.yaml` against `current/` on `week.jsonl`: the baseline's
/// collisions and the candidate's.
fn proposal_collisions(run: &dyn Fn(&[&str]) -> std::process::Output) -> (Option<u64>, Option<u64>) {
    let plan = run(&[
        "simulate",
        "-f",
        "suggested.yaml",
        "--baseline",
        "current/",
        "--history",
        "week.jsonl",
        "-o",
        "json",
    ]);
    let p: Value = serde_json::from_slice(&plan.stdout).unwrap_or_else(|_| panic!("{}", format_output(&plan)));
    let c = &p["comparison"]["categories"];
    (
        c["baseline"]["collisions"].as_u64(),
        c["candidate"]["collisions"].as_u64(),
    )
}

/// Collided retries are no trials: the connection resets learn no Fail; their Retry stays,
/// and the proposal's executor config deletes `network`'s pods; `simulate --baseline` of the
/// proposal shows the baseline's 100 collisions gone.
#[test]
fn collided_retries_teach_no_fail() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("current")).unwrap();
    std::fs::write(d.join("current/executor.yaml"), EXECUTOR).unwrap();
    std::fs::write(d.join("current/policies.yaml"), POLICIES).unwrap();
    std::fs::write(d.join("week.jsonl"), collided_week()).unwrap();
    let home = temp_home();
    let run = |args: &[&str]| retryctl(home.path()).current_dir(d).args(args).output().unwrap();
    let base = ["suggest", "--history", "week.jsonl", "--baseline", "current/"];
    let v = json_of(&run(&[&base[..], &["-o", "json"]].concat()));
    let reset = signature(
        &v,
        "exit:1@main \"ConnectionResetError: [Errno <n>] Connection reset by peer\"",
    );
    assert_eq!(
        (reset["trials"].as_u64(), reset["collided"].as_u64()),
        (Some(0), Some(100))
    );
    assert_eq!(reset["proposed"], Value::Null);
    assert_eq!(reset["noRule"], "retries collide: the executor keeps its pods");
    assert_eq!(v["suggest"]["verdict"]["decision"], "adopt");
    assert!(
        v["suggest"]["verdict"]["reasons"][1]
            == "lets 100 retries that collided in the record run (the pods they collided with are deleted), up to +50.0 GPU-hours, outcome not in the record",
        "{}",
        v["suggest"]["verdict"]
    );
    let changes = &v["suggest"]["proposal"]["actionChanges"];
    assert_eq!(
        changes,
        &json!([{"category": "network", "takesFrom": null, "action": "Delete"}])
    );
    let table = String::from_utf8(run(&base).stdout).unwrap();
    let rows = [
        "SIGNATURE                                         RUNS  TRIALS  COLLIDED  RETRY SUCCESS (95%)   GPU-H  TODAY               PROPOSED",
        "exit:1@main \"CUDA error: an illegal memory acce…  60    60      0         100.0% (94.0–100.0%)  70.0   Retry (ml-today/1)  Retry ×3 (policy limit 3; ×1 raised: one limit for every rule)",
        "exit:1@main \"ConnectionResetError: [Errno <n>] …  100   0       100       -                     16.7   Retry (ml-today/0)  as today (retries collide: the executor keeps its pods)",
    ]
    .join("\n");
    assert!(table.contains(&format!("\n\n{rows}\n\n")), "{table}");
    assert!(
        table.contains(
            "\n  cluster-wide: pods of category `network` are deleted on failure, for every queue (were kept)\n"
        ),
        "{table}"
    );
    // `--keep-categorizer` changes no category's action: the Retry stays as today, its
    // retries still collide, and the verdict counts none let run.
    let kept = json_of(&run(&[&base[..], &["-o", "json", "--keep-categorizer"]].concat()));
    let reset = signature(
        &kept,
        "exit:1@main \"ConnectionResetError: [Errno <n>] Connection reset by peer\"",
    );
    assert_eq!(reset["noRule"], "retries collide: the executor keeps its pods");
    let c = &kept["suggest"]["proposal"]["comparison"]["categories"];
    assert_eq!(
        (
            &kept["suggest"]["proposal"]["actionChanges"],
            &c["candidate"]["collisions"]
        ),
        (&json!([]), &json!(100))
    );
    assert_eq!(
        kept["suggest"]["verdict"]["reasons"],
        json!(["the proposal changes nothing that matters: no job changes outcome, no retry is added or removed"])
    );
    // The proposal, simulated against today's: the collisions are gone.
    let policy = run(&[&base[..], &["-o", "policy"]].concat());
    std::fs::write(d.join("suggested.yaml"), &policy.stdout).unwrap();
    assert!(
        String::from_utf8_lossy(&policy.stdout).contains("      - name: \"network\"\n        action: \"Delete\"\n"),
        "{}",
        String::from_utf8_lossy(&policy.stdout)
    );
    assert_eq!(proposal_collisions(&run), (Some(100), Some(0)));
    // `validate` of today's pair warns of the collisions; `--strict` refuses it.
    let checked = format_output(&run(&[
        "validate",
        "--upstream",
        "--strict",
        "-f",
        "current/policies.yaml",
        "--categorizer",
        "current/executor.yaml",
    ]));
    assert_eq!(
        checked,
        "exit: 3\n--- stdout\nchecked 2 documents in 2 files: 2 valid, 0 invalid; 0 errors, 1 warning\n--- stderr\n\
         current/policies.yaml (RetryPolicy `ml-today`)\n  \
         warning: 8:15 rules[0].onCategory: this `Retry` rule retries category `network`, whose failed pod the executor \
         keeps (its category in `current/executor.yaml` has no `action: Delete`): the retry reuses the pod's name, collides \
         with the kept pod and its lease is returned; set `action: Delete` on category `network` in \
         `current/executor.yaml`\nerror: 1 warning with --strict\n"
    );
}

/// Today's Armada where no category takes a connection reset: its failed pod is kept (no
/// category, no `action: Delete`), and there is no category whose action to change.
const EXECUTOR_NO_NETWORK: &str = "application:
  clusterId: ml-gpu-a
  errorCategories:
    enabled: true
    categories:
      - name: gpu
        action: Delete
        rules:
          - containerName: main
            onTerminationMessage: {pattern: \"CUDA error\"}
";

/// Collided retries of failures no category takes: today's Retry default stays, written as a
/// rule of its own on a category of its own that deletes the signature's pods, so that
/// `simulate --baseline` of the proposal shows the collisions gone and the verdict counts them
/// let run; with `--keep-categorizer` too, the category after the deployed ones.
#[test]
fn collided_retries_no_category_takes_get_a_category_that_deletes_their_pods() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("current")).unwrap();
    std::fs::write(d.join("current/executor.yaml"), EXECUTOR_NO_NETWORK).unwrap();
    std::fs::write(
        d.join("current/policies.yaml"),
        POLICIES.replace("defaultAction: Fail", "defaultAction: Retry"),
    )
    .unwrap();
    // The week records the resets as `network`; the deployed categorizer, whose categories
    // the baseline's side sees, has none for them.
    std::fs::write(d.join("week.jsonl"), collided_week()).unwrap();
    let home = temp_home();
    let run = |args: &[&str]| retryctl(home.path()).current_dir(d).args(args).output().unwrap();
    let base = ["suggest", "--history", "week.jsonl", "--baseline", "current/"];
    let text = "exit:1@main \"ConnectionResetError: [Errno <n>] Connection reset by peer\"";
    let v = json_of(&run(&[&base[..], &["-o", "json"]].concat()));
    let reset = signature(&v, text);
    assert_eq!(
        (reset["trials"].as_u64(), reset["collided"].as_u64(), &reset["recorded"]),
        (Some(0), Some(100), &json!({"network": 100}))
    );
    assert_eq!(
        reset["proposed"],
        json!({"signature": text, "action": "Retry", "limit": 3, "avoidSameNode": false,
               "asToday": "retries collide: the executor keeps its pods"})
    );
    let categories = &v["suggest"]["proposal"]["categories"];
    let own: Vec<&Value> = categories
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["signatures"] == json!([text]))
        .collect();
    assert_eq!(own.len(), 1, "{categories}");
    assert_eq!(own[0]["action"], "Delete", "{categories}");
    assert_eq!(v["suggest"]["proposal"]["actionChanges"], json!([]));
    assert_eq!(
        v["suggest"]["verdict"]["reasons"][1],
        "lets 100 retries that collided in the record run (the pods they collided with are deleted), up to +50.0 GPU-hours, outcome not in the record"
    );
    let table = String::from_utf8(run(&base).stdout).unwrap();
    assert!(
        table.contains("Retry (ml-today/default)  as today (retries collide: the executor keeps its pods): Retry ×3\n"),
        "{table}"
    );
    let policy = run(&[&base[..], &["-o", "policy"]].concat());
    std::fs::write(d.join("suggested.yaml"), &policy.stdout).unwrap();
    let written = String::from_utf8_lossy(&policy.stdout).to_string();
    // The same price in every place the verdict is said: `-o policy`'s header and stderr.
    let price = "; lets 100 retries that collided in the record run (the pods they collided with are deleted), up to +50.0 GPU-hours, outcome not in the record";
    let head = written.lines().next().unwrap();
    assert!(head.starts_with("# verdict: ") && head.contains(price), "{written}");
    let said = String::from_utf8_lossy(&policy.stderr);
    assert!(
        said.lines().any(|l| l.starts_with("verdict: ") && l.contains(price)),
        "{said}"
    );
    let name = own[0]["name"].as_str().unwrap();
    assert!(
        written.contains(&format!("      - name: {name}\n        action: Delete\n")),
        "{written}"
    );
    assert!(
        written.contains(&format!(
            "as today (retries collide: the executor keeps its pods): today's default decided it, and its runs have \
             no category whose pods to delete: one of its own\n  - action: Retry\n    onCategory: \"{name}\"\n"
        )),
        "{written}"
    );
    assert_eq!(proposal_collisions(&run), (Some(100), Some(0)));
    // `--keep-categorizer` too: no deployed category takes the resets, so their category
    // is added after the deployed one, which stays as it is; the collisions are gone.
    let kept = json_of(&run(&[&base[..], &["-o", "json", "--keep-categorizer"]].concat()));
    assert_eq!(signature(&kept, text)["proposed"], reset["proposed"]);
    assert_eq!(
        kept["suggest"]["proposal"]["comparison"]["categories"]["candidate"]["collisions"],
        json!(0)
    );
    let kept = run(&[&base[..], &["-o", "policy", "--keep-categorizer"]].concat());
    assert_eq!(kept.status.code(), Some(0), "{}", format_output(&kept));
    let written = String::from_utf8_lossy(&kept.stdout);
    assert!(
        written.contains(&format!(
            "    categories:\n      - name: \"gpu\"\n        action: \"Delete\"\n        rules:\n          \
             - onTerminationMessage: {{pattern: \"CUDA error\"}}\n            containerName: \"main\"\n      \
             # {text}\n      - name: {name}\n        action: Delete\n"
        )),
        "{written}"
    );
    assert_eq!(
        String::from_utf8_lossy(&kept.stderr).lines().find(|l| l.contains("--keep-categorizer")),
        Some(format!("note: --keep-categorizer: today's categories kept as they are; added after them, for failures none of them takes: `{name}`").as_str())
    );
}

/// A retry the baseline's categorizer says collides, but which the record shows ran (it failed
/// with its own error, or succeeded): never a collision, and said once.
#[test]
fn a_retry_that_ran_never_collided() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("current")).unwrap();
    std::fs::write(d.join("current/executor.yaml"), EXECUTOR).unwrap();
    std::fs::write(d.join("current/policies.yaml"), POLICIES).unwrap();
    // Three connection resets whose retry ran and succeeded: the pod was deleted after all.
    let week: String = (0..3)
        .map(|i| {
            let j = json!({"job": {"id": format!("r-{i}"), "queue": "ml", "submittedAt": format!("2026-11-1{i}T10:00:00Z")},
                "runs": [
                    {"node": "node-1", "runFor": "60s", "category": "network", "containers": [{"name": "main", "exitCode": 1, "message": "ConnectionResetError: reset"}]},
                    {"node": "node-1", "runFor": "60s", "outcome": "succeeded"}]});
            format!("{j}\n")
        })
        .collect();
    std::fs::write(d.join("week.jsonl"), week).unwrap();
    let home = temp_home();
    let suggest = |extra: &[&str]| {
        retryctl(home.path())
            .current_dir(d)
            .args(["suggest", "--history", "week.jsonl", "--baseline", "current/"])
            .args(extra)
            .output()
            .unwrap()
    };
    let table = String::from_utf8(suggest(&[]).stdout).unwrap();
    let said = "  note: 3 retries the baseline's categorizer says collide ran in the record (a pod that ran was deleted, not kept):\n    is the baseline's executor config the deployed one?\n";
    assert!(
        table.contains(&format!(
            "\nexit:1@main \"ConnectionResetError: reset\"  3     3       100.0% (43.9–100.0%)  0.0    Retry (ml-today/0)  as today (too few trials: 3)\n{said}\n"
        )),
        "{table}"
    );
    assert_eq!(table.matches("ran in the record").count(), 1, "{table}");
    assert!(!table.contains("COLLIDED"), "{table}");
    let v = json_of(&suggest(&["-o", "json"]));
    assert_eq!(v["suggest"]["collisionsRan"], 3, "{}", v["suggest"]);
    let reset = signature(&v, "exit:1@main \"ConnectionResetError: reset\"");
    assert_eq!((&reset["trials"], reset.get("collided")), (&json!(3), None));
}
