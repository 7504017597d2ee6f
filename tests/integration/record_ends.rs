//! A record's end contradicts today's policy in both directions (docs/what-if.md "Does the
//! baseline explain the record?"): recorded `succeeded` where the baseline's replay fails the
//! job at its last run, or recorded `failed` where its last run succeeded, as one the replay
//! would run again does; a user's cancel never contradicts. Every verb counts it through the
//! one comparison: `simulate`'s `today's policy explains N of M`, its warnings, and tune's
//! and suggest's `--max-contradictions`.

use std::path::Path;
use std::process::Output;

use crate::simulate_report::{CUDA, NEW, OK, OLD, QUEUE};
use crate::support::{format_output, retryctl, temp_home};

const PREEMPTED: &str = r#"{"conditions":["Preempted"],"runFor":"10m"}"#;

fn job(id: &str, state: &str, runs: &[&str]) -> String {
    format!(
        r#"{{"job":{{"id":"{id}","queue":"q","state":"{state}"}},"runs":[{}]}}"#,
        runs.join(",")
    )
}

/// `old` fails a CUDA error at once and retries a preemption: `ended-ok` is recorded
/// succeeded after a CUDA error it fails, `ended-failed` failed after a run that succeeded;
/// the cancels and the others end as recorded.
fn history() -> String {
    [
        job("fine", "succeeded", &[PREEMPTED, OK]),
        job("ended-ok", "succeeded", &[CUDA]),
        job("failed", "failed", &[CUDA]),
        job("ended-failed", "failed", &[OK]),
        job("cancelled", "cancelled", &[CUDA]),
        job("cancelled-ok", "cancelled", &[PREEMPTED, OK]),
    ]
    .join("\n")
        + "\n"
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path()).current_dir(dir).args(args).output().unwrap()
}

#[test]
fn a_record_that_ends_a_job_the_other_way_contradicts_today_s_policy() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::write_what_if(dir.path(), OLD, NEW, QUEUE, &history());
    let compared = run(
        dir.path(),
        &["simulate", "-f", "new", "--baseline", "old", "--history", "h.jsonl"],
    );
    assert_eq!(compared.status.code(), Some(0), "{}", format_output(&compared));
    let text = String::from_utf8(compared.stdout).unwrap();
    assert!(
        text.contains("  today's policy explains 4 of 6 jobs (2 contradict it: ended-ok, ended-failed)\n"),
        "{text}"
    );
    let json = run(
        dir.path(),
        &["simulate", "-f", "old", "--history", "h.jsonl", "-o", "json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["summary"]["contradictedJobs"], 2, "{v}");
    let plain = run(dir.path(), &["simulate", "-f", "old", "--history", "h.jsonl"]);
    let err = String::from_utf8(plain.stderr).unwrap();
    assert!(
        err.contains(
            "warning: job `ended-ok`: history contradicts the decisions: the record ends it succeeded, \
             but run 0 failed and today's policy fails the job there\n\
             warning: job `ended-failed`: history contradicts the decisions: the record ends it failed, \
             but run 0 succeeded\n"
        ),
        "{err}"
    );
    assert!(!err.contains("`cancelled") && !err.contains("`fine`"), "{err}");
    // tune's `--max-contradictions` counts them: 2 of 6 is past 1 job, within 2.
    let tune = |max: &str| {
        run(
            dir.path(),
            &[
                "tune",
                "-f",
                "new",
                "--baseline",
                "old",
                "--history",
                "h.jsonl",
                "--vary",
                "p:spec.retryLimit=1..2",
                "--max-contradictions",
                max,
            ],
        )
    };
    let strict = String::from_utf8(tune("1").stdout).unwrap();
    assert!(
        strict.contains(
            "recommended: none: the baseline does not explain the record: 2 jobs contradict it; is it what the cluster ran?"
        ),
        "{strict}"
    );
    let lenient = String::from_utf8(tune("2").stdout).unwrap();
    assert!(!lenient.contains("does not explain"), "{lenient}");
    // So does suggest's: past it, the proposal is rejected for it.
    let suggest = |max: &str| {
        run(
            dir.path(),
            &[
                "suggest",
                "--history",
                "h.jsonl",
                "--baseline",
                "old",
                "--max-contradictions",
                max,
            ],
        )
    };
    let rejected = suggest("1");
    assert_eq!(rejected.status.code(), Some(1), "{}", format_output(&rejected));
    let text = String::from_utf8(rejected.stdout).unwrap();
    assert!(
        text.contains("  today's policy explains 4 of 6 jobs (2 contradict it: ended-ok, ended-failed)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "Verdict: reject (do not adopt): the baseline does not explain the record: 2 jobs contradict it; is it what the cluster ran?"
        ),
        "{text}"
    );
    let within = suggest("2");
    assert!(
        !String::from_utf8_lossy(&within.stdout).contains("does not explain"),
        "{}",
        format_output(&within)
    );
}

/// `watch` counts the same contradictions, through the same comparison: the route's week in
/// Lookout's rows with every one-run job's end turned the other way (a `succeeded` job whose
/// only run succeeded recorded FAILED, a failed one recorded SUCCEEDED): each contradicts
/// today's policy, in `retryctl_watch_contradictions_total` as in `simulate`'s
/// `contradictedJobs` over the same rows; past `--max-contradictions`, each candidate's reject
/// names that drift first.
#[test]
fn watch_counts_an_end_the_other_way_as_simulate_does() {
    use crate::support::{lookout_rows, pg};
    use crate::watch::{simulate, state_file, week, Watch, CURRENT};
    let Some(mut db) = pg::lookout_db("watch_other_way") else {
        return;
    };
    let mut flipped = 0.0;
    let lines: Vec<String> = week()
        .into_iter()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(&l).unwrap();
            let runs = v["runs"].as_array().unwrap().len();
            let other = match v["job"]["state"].as_str() {
                Some("succeeded") if runs == 1 => "failed",
                Some("failed") if runs == 1 => "succeeded",
                _ => return l,
            };
            flipped += 1.0;
            v["job"]["state"] = serde_json::json!(other);
            v.to_string()
        })
        .collect();
    assert!(flipped > 10.0, "{flipped}");
    lookout_rows::load(&mut db, &(lines.join("\n") + "\n"), "");
    let home = temp_home();
    let mut w = Watch::start(home.path(), &db.dsn, &state_file(home.path()), &["--window", "30d"]);
    let m = w.until("the week", |m| m.jobs() == lines.len() as f64);
    let today = simulate(home.path(), &db.dsn, &["-f", CURRENT]);
    let contradicted = m.sum("retryctl_watch_contradictions_total", &[]);
    assert_eq!(contradicted, today["summary"]["contradictedJobs"].as_f64().unwrap());
    assert_eq!(contradicted, flipped, "{}", m.text);
    // Past 1% of the window's jobs, today's policy no longer explains the record: the
    // candidate's reject names that cause first, before what it is measured to lose.
    let reject = m.sum(
        "retryctl_watch_shadow_verdict",
        &["candidate=\"suggested.yaml\"", "verdict=\"reject\""],
    );
    assert_eq!(reject, 1.0, "{}", m.text);
    let (status, page) = w.get("/report");
    assert_eq!(status, 200, "{page}");
    let headline = format!(
        "<strong>Verdict over the last 30d: reject (do not adopt): the baseline does not explain the record: {flipped} jobs contradict it; is it what the cluster ran?"
    );
    assert!(page.contains(&headline), "{headline}\n{page}");
}
