//! `retryctl tune` (docs/tune.md): every number of candidate i is what `simulate -f <candidate i>
//! --baseline …` prints for the same history and flags (the invariant, checked candidate by
//! candidate, from files, from stdin-free JSON Lines, under both engines, with a scheduler
//! vary and from Lookout's database); the recommendation and the frontier worked out by hand;
//! every refusal with its exact words; each output format.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::simulate_report::{history as report_history, OLD, QUEUE};
use crate::support::pg::{fixture_db, WINDOW};
use crate::support::{chromium, format_output, retryctl, shell, temp_home};

/// The template: three retries on preemption or a CUDA error; exit code 2 fails at once.
const TEMPLATE: &str = "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  backoff: {initialDelay: 10s, maxDelay: 1m}\n  rules:\n    - {action: Retry, onConditions: [Preempted]}\n    - {action: Fail, onExitCodes: {operator: In, values: [2]}}\n    - {action: Retry, onFailureCategory: [cuda_error]}\n";

/// The sweep most tests run: two retry limits by two actions of the template in directory
/// `template` (here `t`, the setup's; shards.rs runs it on its own setup's `new`), against
/// the policies in `old`. The history's record retries past `old`'s limit (that is how it
/// shows rescues), so 9 of its 16 jobs contradict `old`: the sweep accepts them, its subject
/// being the ranking.
pub(crate) fn sweep(template: &str) -> [&str; 13] {
    [
        "tune",
        "-f",
        template,
        "--baseline",
        "old",
        "--history",
        "h.jsonl",
        "--vary",
        "p:spec.retryLimit=1..3",
        "--vary",
        "p:spec.rules[1].action=Fail,Retry",
        "--max-contradictions",
        "100%",
    ]
}

/// A sweep of the template alone (it is its own baseline) over one vary.
fn template_sweep(vary: &str) -> [&str; 7] {
    ["tune", "-f", "t", "--history", "h.jsonl", "--vary", vary]
}

/// The history of `simulate_report.rs` (its doc comment works its numbers out), and a GPU
/// job so that hours show.
fn history() -> String {
    let mut h = report_history();
    h.push_str(r#"{"job":{"id":"gpu1","queue":"q","resources":{"cpu":"8","gpu":"2"}},"runs":[{"conditions":["Preempted"],"runFor":"30m"},{"conditions":["Preempted"],"runFor":"30m"},{"conditions":["Preempted"],"runFor":"30m"},{"outcome":"succeeded","runFor":"2h"}]}"#);
    h.push('\n');
    h
}

pub(crate) fn setup(dir: &Path) {
    for (sub, policy) in [("old", OLD), ("t", TEMPLATE)] {
        fs::create_dir_all(dir.join(sub)).unwrap();
        fs::write(dir.join(sub).join("p.yaml"), policy).unwrap();
        fs::write(dir.join(sub).join("q.yaml"), QUEUE).unwrap();
    }
    fs::write(dir.join("h.jsonl"), history()).unwrap();
}

pub(crate) fn run(dir: &Path, args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path()).current_dir(dir).args(args).output().unwrap()
}

/// What `args -o format` prints on stdout, run in `dir`.
fn printed(dir: &Path, args: &[&str], format: &str) -> String {
    String::from_utf8(run(dir, &[args, &["-o", format]].concat()).stdout).unwrap()
}

pub(crate) fn json(out: &Output) -> Value {
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", format_output(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", format_output(out)))
}

/// What `simulate --baseline -o json` prints of a comparison that tune also prints, keyed
/// as tune names it.
pub(crate) fn simulate_numbers(c: &Value) -> Value {
    let mut transitions = c["transitions"].clone();
    transitions.as_object_mut().unwrap().remove("byState");
    let mut estimate = c["estimate"].clone();
    estimate.as_object_mut().unwrap().remove("method");
    serde_json::json!({
        "changed": c["changed"],
        "transitions": transitions,
        "retries": c["retries"],
        "delay": c["delay"],
        "compute": c["compute"],
        "estimate": estimate,
        // Retries while others waited: the candidate's side (docs/contention.md).
        "contention": c["contention"]["candidate"],
    })
}

pub(crate) fn tune_numbers(c: &Value) -> Value {
    serde_json::json!({
        "changed": c["changed"],
        "transitions": c["transitions"],
        "retries": c["retries"],
        "delay": c["delay"],
        "compute": c["compute"],
        "estimate": c["estimate"],
        "contention": c["contention"],
    })
}

/// Runs `tune ARGS VARIES -o json`, then for every candidate `tune --pick ID -o yaml` into a
/// file and `simulate -f FILE BASELINE HISTORY -o json`, and compares every number. `extra`
/// (a scheduler config per candidate) is written for candidates when a vary needs it.
fn assert_invariant(
    dir: &Path,
    template: &[&str],
    varies: &[&str],
    baseline: &[&str],
    source: &[&str],
    sched: Option<&dyn Fn(&Value) -> String>,
) -> Value {
    let vary_args: Vec<&str> = varies.iter().flat_map(|v| ["--vary", v]).collect();
    let mut args = vec!["tune"];
    args.extend(template.iter().flat_map(|f| ["-f", f]));
    args.extend(&vary_args);
    args.extend(baseline);
    args.extend(source);
    args.extend(["-o", "json"]);
    let tuned = json(&run(dir, &args));
    let t = &tuned["tune"];
    let candidates = t["candidates"].as_array().unwrap();
    assert!(!candidates.is_empty(), "{t}");
    for c in candidates {
        let id = c["id"].as_u64().unwrap().to_string();
        let mut pick = vec!["tune"];
        pick.extend(template.iter().flat_map(|f| ["-f", f]));
        pick.extend(&vary_args);
        pick.extend(["--pick", id.as_str(), "-o", "yaml"]);
        let picked = run(dir, &pick);
        assert_eq!(picked.status.code(), Some(0), "{}", format_output(&picked));
        let file = dir.join(format!("cand-{id}.yaml"));
        fs::write(&file, &picked.stdout).unwrap();
        let file = file.display().to_string();
        let mut sim = vec!["simulate", "-f", file.as_str()];
        // Without --baseline, the template is the baseline.
        let template_baseline: Vec<&str> = if baseline.is_empty() {
            let mut b = vec!["--baseline"];
            b.extend(template);
            b
        } else {
            baseline.to_vec()
        };
        sim.extend(&template_baseline);
        sim.extend(source);
        let sched_file = sched.map(|f| {
            let p = dir.join(format!("sched-{id}.yaml"));
            fs::write(&p, f(c)).unwrap();
            p.display().to_string()
        });
        if let Some(p) = &sched_file {
            sim.extend(["--scheduler-config", p.as_str()]);
        }
        sim.extend(["-o", "json"]);
        let simulated = json(&run(dir, &sim));
        assert_eq!(
            tune_numbers(c),
            simulate_numbers(&simulated["comparison"]),
            "candidate {id} ({}) differs from `{}`",
            c["values"],
            sim.join(" ")
        );
    }
    tuned
}

#[test]
fn every_candidate_is_what_simulate_prints_for_it() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let t = assert_invariant(
        dir.path(),
        &["t"],
        &[
            "p:spec.retryLimit=0..3",
            "p:spec.rules[1].action=Fail,Retry",
            "p:spec.backoff.initialDelay=0s,30s",
            "p:spec.rules[2].retryLimit=unset,1",
        ],
        &["--baseline", "old"],
        &["--history", "h.jsonl"],
        None,
    );
    assert_eq!(t["tune"]["candidates"].as_array().unwrap().len(), 32);
}

/// No --baseline: the template as written is the baseline, as `simulate --baseline t` takes it.
#[test]
fn without_a_baseline_the_template_is_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let t = assert_invariant(
        dir.path(),
        &["t"],
        &["p:spec.retryLimit=1..4", "p:spec.rules[0].action=Retry,Fail"],
        &[],
        &["--history", "h.jsonl"],
        None,
    );
    assert_eq!(t["tune"]["baselineFrom"], "template");
    // Candidates: 1 (1, Retry), 2 (1, Fail), 3 (2, Retry), 4 (2, Fail), 5 (3, Retry): the
    // template itself, which changes nothing against itself.
    let c5 = &t["tune"]["candidates"][4];
    assert_eq!(
        (c5["values"]["p:spec.retryLimit"].as_str(), c5["changed"].as_u64()),
        (Some("3"), Some(0))
    );
}

/// A `scheduler:` vary changes the scheduler both sides run under, as `simulate
/// --scheduler-config` does.
#[test]
fn a_scheduler_vary_is_the_scheduler_config_of_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let sched = |c: &Value| {
        format!(
            "scheduling:\n  retryPolicy:\n    globalMaxRetries: {}\n",
            c["values"]["scheduler:scheduling.retryPolicy.globalMaxRetries"]
                .as_str()
                .unwrap()
        )
    };
    assert_invariant(
        dir.path(),
        &["t"],
        &[
            "scheduler:scheduling.retryPolicy.globalMaxRetries=0,1,2,5",
            "p:spec.retryLimit=2,3",
        ],
        &["--baseline", "old"],
        &["--history", "h.jsonl"],
        Some(&sched),
    );
}

/// The upstream engine, a v1beta1 template: the same invariant.
#[test]
fn under_the_upstream_engine_too() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let up = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 2\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: cuda_error}\n";
    let old = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: p\nretryLimit: 0\ndefaultAction: Fail\nrules:\n  - {action: Retry, onCategory: cuda_error}\n";
    for (sub, p) in [("up", up), ("upold", old)] {
        fs::create_dir_all(dir.path().join(sub)).unwrap();
        fs::write(dir.path().join(sub).join("p.yaml"), p).unwrap();
        fs::write(dir.path().join(sub).join("q.yaml"), QUEUE).unwrap();
    }
    assert_invariant(
        dir.path(),
        &["up"],
        &["p:retryLimit=0..4", "p:defaultAction=Fail,Retry"],
        &["--baseline", "upold", "--engine", "upstream"],
        &["--history", "h.jsonl"],
        None,
    );
}

/// Straight from Lookout's database (real PostgreSQL), with its GPU and CPU jobs: the same
/// invariant, hours included.
#[test]
fn from_lookouts_database_too() {
    let Some(db) = fixture_db("tune") else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = crate::support::root();
    let (new, old) = (
        root.join("testdata/lookout/upstream-new").display().to_string(),
        root.join("testdata/lookout/upstream-old").display().to_string(),
    );
    let mut source = vec!["--lookout-db", db.dsn.as_str(), "--queue", "ml"];
    source.extend(WINDOW);
    let t = assert_invariant(
        dir.path(),
        &[new.as_str()],
        &["ml-new:retryLimit=1..3", "ml-new:rules[2].action=Retry,Fail"],
        &["--baseline", old.as_str(), "--engine", "upstream"],
        &source,
        None,
    );
    let any_gpu = t["tune"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["compute"]["gpuHours"]["added"].as_f64().unwrap() > 0.0);
    assert!(any_gpu, "{}", t["tune"]["candidates"]);
}

/// docs/tune.md's Lookout walkthrough is a `console,ignore` block (the docs test has no
/// PostgreSQL): here its command line, read from the guide, runs against the database the
/// guide describes (the fixture, and the cluster's policies as upstream stores them), and
/// prints exactly the block's lines, stdout then stderr, exit 0. So the guide cannot drift.
/// With the files of the cluster's policy and the export of the same week instead of the
/// database, the table is the same but for whose baseline it is.
#[test]
fn the_guides_lookout_walkthrough_prints_what_it_says() {
    let Some(mut db) = fixture_db("tune_guide") else { return };
    let root = crate::support::root();
    db.client
        .batch_execute(&fs::read_to_string(root.join("testdata/lookout/cluster.sql")).unwrap())
        .unwrap();
    let guide = fs::read_to_string(root.join("docs/tune.md")).unwrap();
    let block = crate::docs::ignored_block(&guide, "$ retryctl tune -f testdata/lookout/new/ --lookout-db")
        .expect("docs/tune.md has the Lookout walkthrough");
    let line = shell::command_line(block.lines[0].strip_prefix("$ ").unwrap(), &[("LOOKOUT_DB", &db.dsn)]);
    assert_eq!(line.stdout_to, None, "the walkthrough prints its table");
    let words = line.words;
    assert_eq!(words[0], "retryctl");
    let home = temp_home();
    let out = retryctl(home.path()).args(&words[1..]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(printed, block.output_of("$ retryctl tune"));

    // The same search from files: the cluster's policy as `upstream-old/`, the week as
    // `history` exported it (docs.rs keeps that file equal to the export).
    let mut from_files = Vec::new();
    let mut rest = words[1..].iter().map(String::as_str);
    while let Some(w) = rest.next() {
        match w {
            "--lookout-db" | "--queue" | "--from" | "--to" => {
                rest.next();
            }
            "--baseline-from-cluster" => {}
            w => from_files.push(w),
        }
    }
    from_files.extend([
        "--baseline",
        "testdata/lookout/upstream-old/",
        "--history",
        "docs/examples/lookout/week.jsonl",
    ]);
    let files = retryctl(home.path()).args(&from_files).output().unwrap();
    assert_eq!(files.status.code(), Some(0), "{}", format_output(&files));
    assert!(files.stderr.is_empty(), "{}", format_output(&files));
    assert_eq!(
        String::from_utf8(files.stdout).unwrap(),
        String::from_utf8(out.stdout).unwrap().replacen(
            "baseline: what the cluster runs (its Lookout database)",
            "baseline: the --baseline files",
            1
        )
    );

    // The guide's words before the block: by default (1%), the same search recommends nothing.
    let mut by_default = from_files.clone();
    let at = by_default.iter().position(|w| *w == "--max-contradictions").unwrap();
    by_default.drain(at..at + 2);
    let out = retryctl(home.path()).args(&by_default).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nrecommended: none: the baseline does not explain the record: 6 jobs contradict it; is it what the cluster ran?\n"),
        "{text}"
    );
    assert!(guide.contains("so 6 of the 17 jobs contradict it and by default tune would recommend\nnothing (`recommended: none: the baseline does not explain the record: 6 jobs contradict it;\nis it what the cluster ran?`)"));
}

/// By hand, on the history above against the baseline `old`, varying the template's limit
/// 1..=3 and what exit code 2 does: with `Retry` for exit 2, l1/l2 are not lost; with `Fail`
/// they are (the baseline retries them once and they succeed). So the candidates that fail
/// exit 2 lose 2 jobs and are out under the default `--max-lost 0`; of the others, the
/// highest limit rescues the most.
#[test]
fn the_recommendation_keeps_what_the_baseline_saved() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let args = [&sweep("t")[..], &["-o", "json"]].concat();
    let t = json(&run(dir.path(), &args));
    let t = &t["tune"];
    let candidates = t["candidates"].as_array().unwrap();
    let by_id = |id: u64| candidates.iter().find(|c| c["id"] == id).unwrap();
    // Ids: 1 (1, Fail), 2 (1, Retry), 3 (2, Fail), 4 (2, Retry), 5 (3, Fail), 6 (3, Retry).
    for id in [1, 3, 5] {
        assert_eq!(by_id(id)["transitions"]["lost"], 2, "{id}");
        assert_eq!(by_id(id)["excluded"], serde_json::json!(["maxLost"]), "{id}");
    }
    for id in [2, 4, 6] {
        assert_eq!(by_id(id)["transitions"]["lost"], 0, "{id}");
        assert!(by_id(id).get("excluded").is_none());
    }
    assert_eq!(t["recommended"], 6);
    let e6 = by_id(6)["expectedSucceeded"].as_f64().unwrap();
    assert!(e6 > t["baseline"]["expectedSucceeded"].as_f64().unwrap());
    for id in [2, 4] {
        assert!(by_id(id)["expectedSucceeded"].as_f64().unwrap() < e6, "{id}");
    }
    // --max-lost 2 lets the candidates that lose l1 and l2 in.
    let mut lenient = args.to_vec();
    lenient.extend(["--max-lost", "2"]);
    let t2 = json(&run(dir.path(), &lenient));
    assert!(t2["tune"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c.get("excluded").is_none()));
    // A cost cap no candidate meets: none is recommended, keep the baseline.
    let mut capped = args.to_vec();
    capped.extend(["--max-compute", "0s"]);
    let t3 = json(&run(dir.path(), &capped));
    assert_eq!(t3["tune"]["recommended"], Value::Null);
    assert_eq!(t3["tune"]["constraints"]["maxCompute"], "0s");
    // --exit-code: 1 when one is recommended, 0 when none.
    let mut code = args[..args.len() - 2].to_vec();
    code.push("--exit-code");
    assert_eq!(run(dir.path(), &code).status.code(), Some(1));
    let mut none = capped[..capped.len()].to_vec();
    none.push("--exit-code");
    assert_eq!(run(dir.path(), &none).status.code(), Some(0));
    // --pick recommended writes candidate 6; with none, exit 1 and nothing on stdout.
    let mut pick = args[..args.len() - 2].to_vec();
    pick.extend(["--pick", "recommended", "-o", "yaml"]);
    let picked = run(dir.path(), &pick);
    assert_eq!(picked.status.code(), Some(0), "{}", format_output(&picked));
    let mut six = args[..args.len() - 2].to_vec();
    six.extend(["--pick", "6", "-o", "yaml"]);
    assert_eq!(picked.stdout, run(dir.path(), &six).stdout);
    let mut pick_none = args[..args.len() - 2].to_vec();
    pick_none.extend(["--max-compute", "0s", "--pick", "recommended", "-o", "yaml"]);
    let nothing = run(dir.path(), &pick_none);
    assert_eq!(
        format_output(&nothing),
        "exit: 1\n--- stdout\n--- stderr\nerror: no candidate is recommended: none within the constraints beats the baseline's expected successes or matches them for less cost; keep the baseline\n"
    );
    // A shard's recommendation is not the cluster's: refused before any work, exit 2.
    let mut shard = pick.clone();
    shard.extend(["--shard", "1/4"]);
    assert_eq!(
        format_output(&run(dir.path(), &shard)),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--pick recommended` with `--shard 1/4`: a shard's jobs alone recommend nothing for the cluster; run every shard with `-o partial`, `retryctl merge` them, then `--pick ID` the candidate it recommends\n"
    );
}

/// A candidate past both constraints lists both under `excluded`, and the table marks both
/// columns `(over)`. With `--max-compute 5h` on the sweep above (costs by hand: 1 +4h, 2 +6h,
/// 3 +8h48m20s, 4 +10h48m20s, 5 +11h34m2s, 6 +13h34m2s): 1 loses 2 within the cap, 2
/// loses nothing past it, 3 and 5 do both.
#[test]
fn every_broken_constraint_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let args = [&sweep("t")[..], &["--max-compute", "5h"]].concat();
    let t = json(&run(dir.path(), &[&args[..], &["-o", "json"]].concat()));
    let excluded: Vec<(u64, Value)> = t["tune"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().unwrap(),
                c.get("excluded").cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    let both = serde_json::json!(["maxLost", "maxCompute"]);
    assert_eq!(
        excluded,
        [
            (1, serde_json::json!(["maxLost"])),
            (2, serde_json::json!(["maxCompute"])),
            (3, both.clone()),
            (4, serde_json::json!(["maxCompute"])),
            (5, both.clone()),
            (6, serde_json::json!(["maxCompute"])),
        ]
    );
    assert_eq!(t["tune"]["recommended"], Value::Null);
    insta::assert_snapshot!(format_output(&run(dir.path(), &args)));
}

/// A recommendation that only the estimates put ahead says so, and how to cap it. Limits 3
/// to 5 with exit code 2 retried: every one succeeds 13 times in the record (a limit of 3
/// already rescues every job the record lets succeed); the higher limits give their Pending
/// jobs more runs left, so more expected successes at more cost. With `--max-compute` the
/// line says so still (the cap bounds the cost, it does not make the estimates observed),
/// without the advice to cap it.
#[test]
fn a_recommendation_on_estimates_alone_says_so() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let mut args = sweep("t").to_vec();
    args[8] = "p:spec.retryLimit=3..5";
    args[10] = "p:spec.rules[1].action=Retry";
    let out = run(dir.path(), &args);
    insta::assert_snapshot!(format_output(&out));
    let capped = run(dir.path(), &[&args[..], &["--max-compute", "100h"]].concat());
    assert_eq!(capped.status.code(), Some(0));
    let capped = String::from_utf8(capped.stdout).unwrap();
    assert!(capped.contains("recommended: candidate 3"), "{capped}");
    assert!(
        capped.contains("\ndecided by estimates alone: in the record, candidate 3 succeeds no more often than candidate 2 (13 jobs each)\n"),
        "{capped}"
    );
    // The html page and the markdown for the pull request say it too.
    let html = printed(dir.path(), &args, "html");
    assert!(
        html.contains("<p class=\"est\">decided by estimates alone: in the record, candidate 3 succeeds no more often than candidate 2 (13 jobs each); give --max-compute"),
        "{html}"
    );
    let md = printed(dir.path(), &args, "markdown");
    assert!(
        md.contains("\ndecided by estimates alone: in the record, candidate 3 succeeds no more often than candidate 2 (13 jobs each); give --max-compute (10h, or 50% of the baseline's compute) to cap the compute it adds\n"),
        "{md}"
    );
}

/// Frontier: no other candidate has as many expected successes for less cost.
#[test]
fn the_frontier_is_what_no_candidate_dominates() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // The sweep's command with other values to vary.
    let varies = [
        "--vary",
        "p:spec.retryLimit=0..6",
        "--vary",
        "p:spec.rules[2].action=Retry,Fail",
        "-o",
        "json",
    ];
    let t = json(&run(dir.path(), &[&sweep("t")[..7], &varies].concat()));
    let c = t["tune"]["candidates"].as_array().unwrap();
    for x in c {
        let (ex, cx) = (x["expectedSucceeded"].as_f64().unwrap(), x["cost"].as_f64().unwrap());
        let dominated = c.iter().any(|y| {
            let (ey, cy) = (y["expectedSucceeded"].as_f64().unwrap(), y["cost"].as_f64().unwrap());
            y["id"] != x["id"] && ey >= ex && cy <= cx && (ey > ex || cy < cx)
        });
        assert_eq!(x["frontier"].as_bool(), Some(!dominated), "{x}");
    }
}

/// Every bad vary is a usage error (exit 2) naming the value, with the nearest names, and
/// nothing on stdout; nothing is replayed.
#[test]
fn bad_varies_are_usage_errors_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let cases: [(&[&str], &str); 9] = [
        (&["--vary", "pp:spec.retryLimit=1"], "error: invalid `--vary` `pp:spec.retryLimit`: no RetryPolicy named `pp` in the template; its policies are `p`; did you mean `p`?\n"),
        (&["--vary", "p:spec.retryLimt=1"], "error: invalid `--vary` `p:spec.retryLimt`: field `retryLimt` does not exist in `spec` of policy `p`;"),
        (&["--vary", "p:spec.rules=1"], "error: invalid `--vary` `p:spec.rules`: `spec.rules` is a list, not a scalar field; vary a field of one of its items, e.g. `spec.rules[0].action`\n"),
        (&["--vary", "p:spec.backoff=1"], "error: invalid `--vary` `p:spec.backoff`: `spec.backoff` is an object, not a scalar field;"),
        (&["--vary", "p:spec.retryLimit=abc"], "error: invalid `--vary` `p:spec.retryLimit`: `abc` is not an integer (expected an integer 0..=10000)\n"),
        (&["--vary", "p:spec.rules[0].action=Retri"], "error: invalid `--vary` `p:spec.rules[0].action`: `Retri` is not an action (expected `Retry` or `Fail`); did you mean `Retry`?\n"),
        (&["--vary", "p:spec.retryLimit=5..1"], "error: invalid `--vary` `p:spec.retryLimit=5..1`: the range `5..1` is empty (expected `lo..hi` with lo ≤ hi)\n"),
        (&["--vary", "p:spec.retryLimit=1,2", "--vary", "p:spec.retryLimit=3"], "error: invalid `--vary` `p:spec.retryLimit`: it varies the same field as `--vary` `p:spec.retryLimit` (`spec.retryLimit` of policy `p`); vary each field once\n"),
        (&["--vary", "p:spec.retryLimit=0..9999", "--vary", "p:spec.rules[0].action=Retry,Fail", "--max-candidates", "10000"], "error: the varies make 20000 candidates, more than --max-candidates 10000\n\nhint: vary fewer values (a range with a step: `0..100/10`), or raise --max-candidates\n"),
    ];
    for (varies, want) in cases {
        let mut args = vec!["tune", "-f", "t", "--history", "h.jsonl"];
        args.extend(varies);
        let out = run(dir.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{varies:?}: {err}");
        assert!(out.stdout.is_empty(), "{varies:?}");
        assert!(err.starts_with(want), "{varies:?}:\n{err}\nwanted:\n{want}");
    }
}

/// A candidate that does not validate is skipped and listed with `validate`'s errors; the
/// others still run. Every candidate skipped: exit 3.
#[test]
fn invalid_candidates_are_skipped_with_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // maxDelay 1m: an initialDelay of 5m makes maxDelay < initialDelay.
    let base = template_sweep("p:spec.backoff.initialDelay=0s,5m,30s");
    let t = json(&run(dir.path(), &[&base[..], &["-o", "json"]].concat()));
    let t = &t["tune"];
    let ids: Vec<u64> = t["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [1, 3]);
    // Each format says it once, in its words.
    let said = |format: &str| printed(dir.path(), &base, format);
    let table = said("table");
    assert!(
        table.starts_with("tune: 2 candidates (1 candidate skipped: its documents do not validate) over 16 jobs; "),
        "{table}"
    );
    assert!(said("markdown")
        .contains("\n1 candidate skipped: its documents do not validate (`-o json` lists its errors).\n"));
    assert!(said("html").contains(
        "<p>1 candidate skipped: its documents do not validate (<code>-o json</code> lists its errors).</p>"
    ));
    let skipped = &t["skipped"][0];
    assert_eq!(skipped["id"], 2);
    assert_eq!(
        skipped["values"],
        serde_json::json!({"p:spec.backoff.initialDelay": "5m"})
    );
    assert_eq!(skipped["errors"][0]["path"], "spec.backoff.maxDelay");
    assert!(
        skipped["errors"][0]["message"].as_str().unwrap().contains("maxDelay"),
        "{skipped}"
    );
    let all = run(dir.path(), &template_sweep("p:spec.backoff.initialDelay=2m,5m"));
    assert_eq!(all.status.code(), Some(3), "{}", format_output(&all));
    assert!(all.stdout.is_empty());
    let err = String::from_utf8_lossy(&all.stderr);
    assert!(err.ends_with("error: every candidate was skipped: none of the 2 validates (`-o json` of a smaller search lists each one's errors)\n"), "{err}");
}

/// The table: the inputs in one line, the top candidates in the recommendation order, the
/// recommendation in words and the command that writes it.
#[test]
fn the_table_recommends_in_words() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(dir.path(), &sweep("t"));
    insta::assert_snapshot!(format_output(&out));
}

#[test]
fn markdown_for_the_pull_request() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(dir.path(), &[&sweep("t")[..], &["-o", "markdown"]].concat());
    insta::assert_snapshot!(format_output(&out));
}

/// `-o yaml` is `-o json`'s document.
#[test]
fn yaml_is_the_json_document() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    // The sweep's first `--vary` alone.
    let sweep = sweep("t");
    let base = &sweep[..9];
    let j = json(&run(dir.path(), &[base, &["-o", "json"]].concat()));
    let y: Value = serde_yaml::from_str(&printed(dir.path(), base, "yaml")).unwrap();
    assert_eq!(y, j);
}

/// The html page: the frontier as an SVG scatter (a dot per candidate, the baseline a
/// square, the recommendation green), rendered in a real browser; values are text.
#[test]
fn html_draws_the_frontier() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(dir.path(), &[&sweep("t")[..], &["-o", "html"]].concat());
    assert_eq!(out.status.code(), Some(0));
    let html = String::from_utf8(out.stdout).unwrap();
    for banned in ["http://", "https://", "<script", "<link", "<img", "url("] {
        assert!(!html.contains(banned), "{banned}");
    }
    assert_eq!(html.matches("<circle class=\"cand").count(), 6);
    assert_eq!(html.matches("<circle class=\"cand rec\"").count(), 1);
    assert_eq!(html.matches("<rect class=\"baseline\"").count(), 1);
    assert!(html.contains("<title>candidate 6: p:spec.retryLimit=3, p:spec.rules[1].action=Retry;"));
    assert!(html.contains("<tr class=\"rec\"><td>6*</td>"));
    let Some(browser) = chromium::chromium() else { return };
    let page = dir.path().join("tune.html");
    fs::write(&page, &html).unwrap();
    let dom = chromium::dump_dom(&browser, &page);
    assert!(dom.contains("Which policy should this cluster run?") && dom.contains("The frontier"));
}

/// A hostile value (a category is any text without spaces) is text in html and markdown.
#[test]
fn hostile_values_stay_text() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let base = template_sweep(
        "p:spec.rules[2].onFailureCategory[0]=cuda_error,\"><script>alert(1)</script>,</style><svg/onload=x>,a|b#c",
    );
    let html = printed(dir.path(), &base, "html");
    assert!(
        !html.contains("<script>alert") && !html.contains("<svg/onload"),
        "{html}"
    );
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let md = printed(dir.path(), &base, "markdown");
    assert!(md.contains("a\\|b\\#c"), "{md}");
    assert!(!md.contains("<script>"), "{md}");
}

/// The widest page the repository's data makes: four varies (each rule named by its
/// matcher), the categorizer's COLLISIONS column, a long `--pick` command. In Chromium at
/// 1280 CSS pixels (a laptop's window) nothing leaves the window or is cut, and the
/// frontier draws `--max-compute` as a line at the cost it allows: every candidate over it
/// (`excluded: maxCompute` in `-o json`) right of the line, every other one left of it.
#[test]
fn html_fits_1280_pixels_and_draws_the_max_compute_cap() {
    let args = [
        "tune",
        "-f",
        "testdata/lookout/upstream-new/",
        "--history",
        "docs/examples/lookout/week.jsonl",
        "--baseline",
        "testdata/lookout/upstream-old/",
        "--engine",
        "upstream",
        "--categorizer",
        "testdata/categorizer/executor-config.yaml",
        "--baseline-categorizer",
        "recorded",
        "--vary",
        "ml-new:retryLimit=0..4",
        "--vary",
        "ml-new:rules[0].action=Retry,Fail",
        "--vary",
        "ml-new:rules[1].action=Retry,Fail",
        "--vary",
        "ml-new:rules[2].action=Retry,Fail",
        "--max-compute",
        "100%",
    ];
    let root = crate::support::root();
    let html = printed(&root, &args, "html");
    let t = json(&run(&root, &[&args[..], &["-o", "json"]].concat()));
    let over: Vec<u64> = t["tune"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["excluded"]
                .as_array()
                .is_some_and(|e| e.contains(&Value::from("maxCompute")))
        })
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert!(!over.is_empty() && over.len() < 40, "{over:?}");
    assert!(html.contains(
        "<th class=\"v\">rules[0] (category internal/lease-expired) action</th><th class=\"v\">rules[1] (category internal) action</th>"
    ));
    // The cap: one dashed line, labelled with the flag as typed.
    assert_eq!(html.matches("<line class=\"cap\"").count(), 1, "{html}");
    assert!(html.contains("<text class=\"cap\""));
    assert!(html.contains(">--max-compute 100%</text>"));
    let attr = |tag: &str, name: &str| -> f64 {
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    let cap = attr(html.split("<line class=\"cap\"").nth(1).unwrap(), "x1");
    let dots = html.split("<circle class=\"cand").skip(1);
    let mut seen = 0;
    for dot in dots {
        let x = attr(dot, "cx");
        let id: u64 = dot
            .split("<title>candidate ")
            .nth(1)
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(x > cap, over.contains(&id), "candidate {id} at x {x}, the cap at {cap}");
        seen += 1;
    }
    assert_eq!(seen, 40);
    let Some(browser) = chromium::chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tune.html");
    fs::write(&page, &html).unwrap();
    assert_eq!(chromium::overflow(&browser, &page, 1280), Vec::<String>::new());
}
