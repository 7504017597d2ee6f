//! The README's route "On your cluster: from last week's failures to a policy", run as a user
//! runs it: its `console,ignore` block is read from README.md (the docs test lists it as not
//! run there and names this test) and each command line runs as a shell would run it, in a
//! directory holding `current/` (what the cluster runs: testdata/route/current/, its
//! policies and queue as `get` writes them and the executor's config as deployed), with
//! `"$LOOKOUT_DB"` a real PostgreSQL built from Lookout's migrations and loaded with
//! testdata/route/week.jsonl as Lookout's rows, `> FILE` written by the test, and
//! `$ARMADA_URL` a `retryctl serve --dialect upstream` holding today's policy.
//!
//! The week is the planted history (testdata/suggest/planted.jsonl) as Lookout exports it
//! (scripts/gen-route-week.py): 1,174 jobs of queue `ml`, a CUDA error on three bad nodes,
//! OOM kills, a futile `ValueError`, an init container `setup` that exits 2, images that
//! cannot be pulled, preemptions, lease expiries and seven runs of exit code 42, too few to
//! learn from. Today's policy `ml-today` retries everything up to 3 times, OOM kills with
//! 1.5 times the memory, and exit code 42 (category `app-42`).
//!
//! What the route must come to, as an operator would check it before applying: the export
//! is the week (the converter and `history` agree both ways); suggest says `adopt`, keeps
//! today's rule the week cannot judge, the OOM rule's memory factor, the executor config's
//! other keys and the deployed categories (their hints); tune recommends a candidate and the
//! route picks as the README says (suggest's limit when the recommendation is decided by
//! estimates alone); `validate --upstream` and both applies pass, and the server then runs
//! the picked policy; and the applied policy loses no job against today, with the new
//! categorizer and with today's (the cluster runs the new policy with today's categorizer
//! until the executor's config is rolled out), its numbers those tune printed for it.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{format_output, lookout_rows, pg, retryctl, root, shell, temp_home};
use crate::tune::{json, simulate_numbers, tune_numbers};

/// The week as Lookout exports it, and what the cluster runs.
const WEEK: &str = "testdata/route/week.jsonl";
const CURRENT: &str = "testdata/route/current";

/// The command lines of README.md's route (after `$ `).
fn route() -> Vec<String> {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let block = crate::docs::ignored_block(&readme, "$ retryctl history --lookout-db")
        .expect("README.md has the route, starting with `history --lookout-db`");
    block
        .lines
        .iter()
        .map(|l| {
            l.strip_prefix("$ ")
                .unwrap_or_else(|| panic!("the route holds commands only: `{l}`"))
                .to_string()
        })
        .collect()
}

/// A command of the route as it ran.
struct Step {
    line: String,
    words: Vec<String>,
    out: Output,
}

impl Step {
    fn stdout(&self) -> String {
        String::from_utf8(self.out.stdout.clone()).unwrap()
    }

    fn stderr(&self) -> String {
        String::from_utf8(self.out.stderr.clone()).unwrap()
    }

    /// The value of `flag` on this command line.
    fn flag(&self, flag: &str) -> Option<&str> {
        let at = self.words.iter().position(|w| w == flag)?;
        self.words.get(at + 1).map(String::as_str)
    }
}

/// `retryctl ARGS` in `dir`, against the server at `url`.
fn run(dir: &Path, url: &str, args: &[String]) -> Output {
    let home = temp_home();
    retryctl(home.path())
        .current_dir(dir)
        .env("ARMADA_URL", url)
        .args(args)
        .output()
        .unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// The YAML documents of a file.
fn documents(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

/// The document of `kind` among `docs` (the categorizer has none: `None`).
fn of_kind<'a>(docs: &'a [Value], kind: Option<&str>) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"].as_str() == kind)
        .unwrap_or_else(|| panic!("no {kind:?} document among {docs:?}"))
}

/// A FailureHistory JSON Lines file as values, one a job.
fn histories(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn the_readme_route_runs_as_written_on_a_week_of_todays_armada() {
    let Some(mut db) = pg::lookout_db("route") else { return };
    let week = fs::read_to_string(root().join(WEEK)).unwrap();
    let deployed = fs::read_to_string(root().join(CURRENT).join("executor.yaml")).unwrap();
    lookout_rows::load(&mut db, &week, &deployed);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    fs::create_dir(dir.join("current")).unwrap();
    for f in ["policies.yaml", "queues.yaml", "executor.yaml"] {
        fs::copy(root().join(CURRENT).join(f), dir.join("current").join(f)).unwrap();
    }
    let server = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    let url = server.url.clone();
    // The cluster as it runs today: the policies and queue `get` wrote (the executor's
    // config is no server resource).
    let today = run(
        dir,
        &url,
        &strings(&["apply", "-f", "current/policies.yaml", "-f", "current/queues.yaml"]),
    );
    assert_eq!(today.status.code(), Some(0), "{}", format_output(&today));

    let mut steps: Vec<Step> = Vec::new();
    for line in route() {
        let cl = shell::command_line(&line, &[("LOOKOUT_DB", &db.dsn)]);
        assert_eq!(cl.words[0], "retryctl", "`{line}`");
        let out = run(dir, &url, &cl.words[1..]);
        // As a shell: the file is written whatever the status.
        if let Some(file) = &cl.stdout_to {
            fs::write(dir.join(file), &out.stdout).unwrap();
        }
        assert_eq!(out.status.code(), Some(0), "`{line}`:\n{}", format_output(&out));
        steps.push(Step {
            line,
            words: cl.words,
            out,
        });
    }
    let verbs: Vec<&str> = steps.iter().map(|s| s.words[1].as_str()).collect();
    assert_eq!(
        verbs,
        ["history", "suggest", "tune", "tune", "validate", "apply", "apply"],
        "the route's commands"
    );
    let [history, suggest, search, pick, _validate, dry_run, apply] = &steps[..] else {
        unreachable!()
    };

    // history: the export is the week the database was loaded with, job for job.
    let exported = fs::read_to_string(dir.join("week.jsonl")).unwrap();
    let (exported, committed) = (histories(&exported), histories(&week));
    assert_eq!(exported.len(), committed.len(), "{}", history.stderr());
    for (e, c) in exported.iter().zip(&committed) {
        assert_eq!(e, c, "`{}` exports another job than {WEEK} holds", history.line);
    }
    assert!(
        history
            .stderr()
            .starts_with("history: exported 1174 jobs and 2340 runs of every queue\n"),
        "{}",
        history.stderr()
    );

    // suggest: adopt, and a proposal that is today's policy changed only where the week says.
    assert!(
        suggest
            .stderr()
            .lines()
            .any(|l| l.starts_with("verdict: adopt (a change worth making): ")),
        "{}",
        suggest.stderr()
    );
    let text = fs::read_to_string(dir.join("suggested.yaml")).unwrap();
    assert!(text.starts_with("# verdict: adopt (a change worth making): "), "{text}");
    let suggested = documents(&dir.join("suggested.yaml"));
    let policy = of_kind(&suggested, Some("RetryPolicy"));
    assert_eq!(policy["name"], "suggested");
    let rules = policy["rules"].as_array().unwrap();
    // Exit code 42 has 7 trials, fewer than --min-trials: today's rule decides it, as written.
    let on = |category: &str| -> Vec<&Value> { rules.iter().filter(|r| r["onCategory"] == category).collect() };
    assert_eq!(
        on("app-42"),
        [&serde_json::json!({"action": "Retry", "onCategory": "app-42"})],
        "{text}"
    );
    assert!(text.contains("# kept from today: ml-today/1 "), "{text}");
    let oom = on("oom");
    assert!(oom.iter().any(|r| r["action"] == "Retry"), "{text}");
    for r in oom {
        assert_eq!(r["mutate"]["resources"]["memory"]["factor"], 1.5, "{text}");
    }
    let queue = of_kind(&suggested, Some("Queue"));
    assert_eq!(queue["retryPolicies"], serde_json::json!(["suggested", "ml-today"]));
    // The executor's config: the deployed file with the new categories first, its other keys
    // and its categories (their hints) kept; a category a Retry rule matches is deleted.
    let deployed = documents(&root().join(CURRENT).join("executor.yaml")).remove(0);
    let proposed = of_kind(&suggested, None);
    // `--executor-config`: the same config alone, as the executor is given it.
    assert_eq!(&documents(&dir.join("executor-suggested.yaml"))[0], proposed);
    assert_eq!(proposed["application"]["clusterId"], "ml-gpu-a", "{text}");
    let without_categories = |d: &Value| {
        let mut d = d.clone();
        d["application"].as_object_mut().unwrap().remove("errorCategories");
        d
    };
    assert_eq!(without_categories(proposed), without_categories(&deployed));
    let categories = |d: &Value| {
        d["application"]["errorCategories"]["categories"]
            .as_array()
            .unwrap()
            .clone()
    };
    let (proposed, deployed) = (categories(proposed), categories(&deployed));
    for c in &deployed {
        let p = proposed
            .iter()
            .find(|p| p["name"] == c["name"])
            .unwrap_or_else(|| panic!("category {} of the deployed config is gone: {text}", c["name"]));
        assert_eq!(p["rules"], c["rules"], "{text}");
    }
    let oom = proposed.iter().find(|c| c["name"] == "oom").unwrap();
    assert_eq!(oom["rules"][0]["hint"], "Increase the memory request");
    // The proposal the README's runnable block shows is this one, byte for byte: its
    // comments (the evidence above each rule) too.
    assert_eq!(
        fs::read_to_string(root().join("testdata/route/suggested.yaml")).unwrap(),
        text,
        "testdata/route/suggested.yaml is not what the route's suggest writes: write it again \
         with the route's `{}` in a directory holding `{WEEK}` as `week.jsonl` and `{CURRENT}/` as `current/`",
        suggest.line
    );

    // tune: a recommendation, and the pick the README says.
    let table = search.stdout();
    let recommended: u64 = table
        .lines()
        .find_map(|l| {
            l.strip_prefix("recommended: candidate ")?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("tune recommends no candidate:\n{table}"));
    let searched = json(&run(
        dir,
        &url,
        &[&search.words[1..], &strings(&["-o", "json"])].concat(),
    ));
    let t = &searched["tune"];
    assert_eq!(t["recommended"], recommended, "{t}");
    let by_id = |id: u64| {
        t["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no candidate {id}: {t}"))
            .clone()
    };
    let limit = policy["retryLimit"].as_u64().unwrap().to_string();
    let picked = match pick.flag("--pick") {
        Some("recommended") => recommended,
        // The candidate whose varied value is the template's own: suggest's limit.
        Some("template") => t["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["values"]["suggested:retryLimit"] == limit)
            .unwrap_or_else(|| panic!("no candidate has suggest's limit {limit}: {t}"))["id"]
            .as_u64()
            .unwrap(),
        Some(id) => id.parse().unwrap(),
        None => panic!("`{}` picks no candidate", pick.line),
    };
    let candidate = by_id(picked);
    if table.contains("\ndecided by estimates alone: ") {
        assert_eq!(
            candidate["values"]["suggested:retryLimit"], limit,
            "tune's recommendation is decided by estimates alone: the README picks suggest's limit"
        );
    } else {
        assert_eq!(
            picked, recommended,
            "the README picks the recommendation when the record decides it"
        );
    }
    let ml = documents(&dir.join("ml.yaml"));
    let mut expected = policy.clone();
    expected["retryLimit"] = candidate["values"]["suggested:retryLimit"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap()
        .into();
    assert_eq!(of_kind(&ml, Some("RetryPolicy")), &expected);
    assert_eq!(of_kind(&ml, Some("Queue")), queue);

    // apply: the dry run writes nothing (the apply after it still creates the policy); the
    // apply makes the server run the picked policy.
    assert_eq!(
        dry_run.stdout(),
        "retrypolicy/suggested created (dry run)\nqueue/ml configured (dry run)\n"
    );
    assert_eq!(apply.stdout(), "retrypolicy/suggested created\nqueue/ml configured\n");
    let get = |what: &[&str]| {
        let out = run(
            dir,
            &url,
            &strings(
                &[
                    &["get"],
                    what,
                    &["-o", "json", "--api-version", "armadaproject.io/v1beta1"],
                ]
                .concat(),
            ),
        );
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(get(&["retrypolicy", "suggested"]), expected);
    assert_eq!(get(&["queue", "ml"]), *queue);
    // docs/categorizer.md "The two halves, in order": the picked policy applied before the
    // executor's config is rolled out, refused with the words the guide shows.
    let guide = fs::read_to_string(root().join("docs/categorizer.md")).unwrap();
    let command = "$ retryctl apply -f ml.yaml --categorizer current/executor.yaml";
    let block = crate::docs::ignored_block(&guide, command).expect("docs/categorizer.md shows the refusal");
    let early = run(
        dir,
        &url,
        &strings(&command[2..].split(' ').skip(1).collect::<Vec<_>>()),
    );
    assert_eq!(early.status.code(), Some(1), "{}", format_output(&early));
    assert_eq!(
        String::from_utf8(early.stderr).unwrap(),
        block.output_of(command),
        "docs/categorizer.md's refusal is not what `{command}` prints on the route's files"
    );
    drop(server);

    // The applied policy against today: no job lost, the numbers tune printed for it. With
    // today's categorizer too: the cluster runs the new policy with it until the executor's
    // config is rolled out.
    for categorizer in ["suggested.yaml", "current/executor.yaml"] {
        let args = strings(&[
            "simulate",
            "-f",
            "ml.yaml",
            "--categorizer",
            categorizer,
            "--baseline",
            "current/",
            "--history",
            "week.jsonl",
            "-o",
            "json",
        ]);
        let c = json(&run(dir, &url, &args))["comparison"].clone();
        assert_eq!(c["transitions"]["lost"], 0, "with {categorizer}: {c}");
        if categorizer == "suggested.yaml" {
            assert_eq!(simulate_numbers(&c), tune_numbers(&candidate), "candidate {picked}");
        }
    }
}

/// The README's route run as a script under `set -e` (then `echo the route went past suggest`)
/// in a directory holding `current/` (made by `current`), against a Lookout database loaded
/// with `week` and a `retryctl serve --dialect upstream` holding `current/`'s policies.
/// `None` when no PostgreSQL can be started (the test is skipped, named).
struct RouteRun {
    out: Output,
    dir: tempfile::TempDir,
    server: crate::serve_process::Proc,
}

fn route_script(name: &str, week: &str, current: impl FnOnce(&Path)) -> Option<RouteRun> {
    let mut db = pg::lookout_db(name)?;
    let deployed = fs::read_to_string(root().join(CURRENT).join("executor.yaml")).unwrap();
    lookout_rows::load(&mut db, week, &deployed);
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("current")).unwrap();
    current(&dir.path().join("current"));
    let server = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    // What the cluster runs today is on the server: the queue the route applies lists it.
    let today = run(
        dir.path(),
        &server.url,
        &strings(&["apply", "-f", "current/policies.yaml"]),
    );
    assert_eq!(today.status.code(), Some(0), "{}", format_output(&today));
    let script = format!("set -e\n{}\necho the route went past suggest\n", route().join("\n"));
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let path = format!("{}:/usr/bin:/bin", bin.parent().unwrap().display());
    let home = temp_home();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", home.path())
        .env("LOOKOUT_DB", &db.dsn)
        .env("ARMADA_URL", &server.url)
        .output()
        .unwrap();
    Some(RouteRun { out, dir, server })
}

/// The README's route as a script under `set -e` on `week` with `current/` made by `current`:
/// it must stop at suggest, exit 1, with `verdict` on stderr and suggest's output written
/// whole; no pick, no validate, no apply.
fn route_stops_at_suggest(name: &str, week: &str, current: impl FnOnce(&Path), verdict: &str) {
    let Some(RouteRun { out, dir, server }) = route_script(name, week, current) else {
        return;
    };
    let dir = dir.path();
    assert_eq!(out.status.code(), Some(1), "{}", format_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("verdict: reject (do not adopt): {verdict}")),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("went past"));
    let suggested = fs::read_to_string(dir.join("suggested.yaml")).unwrap();
    assert!(
        suggested.starts_with("# verdict: reject (do not adopt): "),
        "{suggested}"
    );
    assert!(!dir.join("ml.yaml").exists());
    drop(server);
}

/// The route's week as a cluster at `retryLimit: 5` records it: every job the week's record
/// ends with a failed run gets that run twice more, and then keeps the runs the upstream
/// engine starts under `current` (what scripts/gen-route-week.py does with the planted
/// runs): no run past what today's policy starts, none it starts missing.
fn week_under(current: &Path, week: &str) -> String {
    let mut draft = String::new();
    for line in week.lines() {
        let mut job: Value = serde_json::from_str(line).unwrap();
        let runs = job["runs"].as_array_mut().unwrap();
        let last = runs.last().unwrap().clone();
        if last["outcome"] != "succeeded" {
            runs.extend([last.clone(), last]);
        }
        draft.push_str(&format!("{job}\n"));
    }
    let home = temp_home();
    let path = home.path().join("draft.jsonl");
    fs::write(&path, &draft).unwrap();
    let arg = |f: &str| current.join(f).display().to_string();
    let replayed = retryctl(home.path())
        .args(["simulate", "-f", &arg("policies.yaml"), "-f", &arg("queues.yaml")])
        .args(["--categorizer", &arg("executor.yaml"), "--engine", "upstream"])
        .args(["--scheduler-config", &arg("scheduler.yaml")])
        .arg("--history")
        .arg(&path)
        .args(["-o", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", format_output(&replayed));
    let started: Vec<usize> = String::from_utf8(replayed.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["runs"]
                .as_array()
                .unwrap()
                .len()
        })
        .collect();
    let mut out = String::new();
    for (line, n) in draft.lines().zip(started) {
        let mut job: Value = serde_json::from_str(line).unwrap();
        job["runs"].as_array_mut().unwrap().truncate(n);
        out.push_str(&format!("{job}\n"));
    }
    out
}

/// No number to copy: on a week of a cluster whose policy retries up to 5 times, suggest's
/// proposal keeps `retryLimit: 5`, and the README's route, run as written under `set -e`,
/// picks that candidate (`--pick template`) and applies limit 5, where a limit typed by hand
/// (the route's `3`) would have cut it.
#[test]
fn the_readme_route_applies_suggest_s_own_limit_on_a_week_at_limit_5() {
    let current = tempfile::tempdir().unwrap();
    let make_current = |dir: &Path| {
        for f in ["queues.yaml", "executor.yaml"] {
            fs::copy(root().join(CURRENT).join(f), dir.join(f)).unwrap();
        }
        let policies = fs::read_to_string(root().join(CURRENT).join("policies.yaml")).unwrap();
        assert!(policies.contains("retryLimit: 3\n"), "{policies}");
        fs::write(
            dir.join("policies.yaml"),
            policies.replace("retryLimit: 3\n", "retryLimit: 5\n"),
        )
        .unwrap();
    };
    make_current(current.path());
    // Today's Armada's scheduler as it runs: the engine on, a cap above the policy's limit.
    fs::write(
        current.path().join("scheduler.yaml"),
        "scheduling:\n  maxRetries: 3\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 5\n",
    )
    .unwrap();
    let week = week_under(current.path(), &fs::read_to_string(root().join(WEEK)).unwrap());
    let deepest = week
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["runs"]
                .as_array()
                .unwrap()
                .len()
        })
        .max();
    assert_eq!(deepest, Some(6), "the week holds jobs retried 5 times");
    let Some(RouteRun { out, dir, server }) = route_script("route_limit_5", &week, make_current) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("the route went past suggest\n"));
    let limit = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("retryLimit: "))
            .map(str::to_string)
            .collect()
    };
    let suggested = fs::read_to_string(dir.path().join("suggested.yaml")).unwrap();
    assert!(
        suggested.starts_with("# verdict: adopt (a change worth making): "),
        "{suggested}"
    );
    assert_eq!(limit(&suggested), ["retryLimit: 5"], "{suggested}");
    let picked = fs::read_to_string(dir.path().join("ml.yaml")).unwrap();
    assert_eq!(limit(&picked), ["retryLimit: 5"], "{picked}");
    let get = run(
        dir.path(),
        &server.url,
        &strings(&[
            "get",
            "retrypolicy",
            "suggested",
            "-o",
            "json",
            "--api-version",
            "armadaproject.io/v1beta1",
        ]),
    );
    assert_eq!(get.status.code(), Some(0), "{}", format_output(&get));
    let applied: Value = serde_json::from_slice(&get.stdout).unwrap();
    assert_eq!(applied["retryLimit"], 5, "{applied}");
    drop(server);
}

/// A week today's policy does not explain (`current/` says `retryLimit: 1`, the week holds
/// third runs).
#[test]
fn the_readme_route_stops_at_suggest_under_set_e_on_a_week_today_does_not_explain() {
    let week = fs::read_to_string(root().join(WEEK)).unwrap();
    route_stops_at_suggest(
        "route_unexplained",
        &week,
        |current| {
            for f in ["queues.yaml", "executor.yaml"] {
                fs::copy(root().join(CURRENT).join(f), current.join(f)).unwrap();
            }
            let policies = fs::read_to_string(root().join(CURRENT).join("policies.yaml")).unwrap();
            fs::write(
                current.join("policies.yaml"),
                policies.replace("retryLimit: 3", "retryLimit: 1"),
            )
            .unwrap();
        },
        "the baseline does not explain the record: 366 jobs contradict it; is it what the cluster ran?\n",
    );
}

/// A cluster of two queues sharing one executor config: `batch` retries `infrastructure`, and
/// `ml`'s week makes suggest split its image pulls into a new category. The route exports
/// every queue's week: the verdict names `batch`, whose jobs the split loses.
#[test]
fn the_readme_route_on_a_two_queue_cluster_rejects_naming_the_other_queue() {
    let home = temp_home();
    let week = fs::read_to_string(crate::suggest_cluster::two_queue_week(home.path())).unwrap();
    route_stops_at_suggest(
        "route_two_queues",
        &week,
        |current| {
            let made = crate::suggest_cluster::two_queues(home.path(), false);
            for f in ["policies.yaml", "queues.yaml", "executor.yaml"] {
                fs::copy(Path::new(&made).join(f), current.join(f)).unwrap();
            }
        },
        "loses 10 jobs of queue batch today's policy saves (`01m7zzbatch00`, `01m7zzbatch01`, `01m7zzbatch02`, `01m7zzbatch03`, `01m7zzbatch04` and 5 more)",
    );
}

/// Each job's end as Lookout holds it is evidence (docs/what-if.md "Does the baseline explain
/// the record?"). The week, loaded into Lookout as its ingester writes it (each job's
/// `job.state` the end of its runs: the loader is given the week without `state`) and
/// exported, is the committed week, `state` included. Against `current/` as the cluster ran it
/// (`retryLimit: 3`) every job is explained; against a `current/` at `retryLimit: 5`, the 255
/// jobs the cluster failed at their 4th run, which that baseline would run again, contradict
/// it: `suggest`'s verdict is `reject`, naming them, and `simulate` says why for each.
#[test]
fn a_baseline_that_retries_more_than_the_cluster_did_does_not_explain_the_week() {
    let Some(mut db) = pg::lookout_db("route_limit_5") else {
        return;
    };
    let week = fs::read_to_string(root().join(WEEK)).unwrap();
    let without_state: String = histories(&week)
        .into_iter()
        .map(|mut h| {
            assert!(h["job"].as_object_mut().unwrap().remove("state").is_some(), "{h}");
            format!("{h}\n")
        })
        .collect();
    let deployed = fs::read_to_string(root().join(CURRENT).join("executor.yaml")).unwrap();
    lookout_rows::load(&mut db, &without_state, &deployed);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    for (name, limit) in [("current", "retryLimit: 3"), ("current5", "retryLimit: 5")] {
        fs::create_dir(dir.join(name)).unwrap();
        for f in ["queues.yaml", "executor.yaml"] {
            fs::copy(root().join(CURRENT).join(f), dir.join(name).join(f)).unwrap();
        }
        let policies = fs::read_to_string(root().join(CURRENT).join("policies.yaml")).unwrap();
        assert!(policies.contains("retryLimit: 3"));
        fs::write(
            dir.join(name).join("policies.yaml"),
            policies.replace("retryLimit: 3", limit),
        )
        .unwrap();
    }
    // The route's export: every queue, the deployed categorizer's hints taken off.
    let out = run(
        dir,
        "http://127.0.0.1:1",
        &[
            strings(&[
                "history",
                "--lookout-db",
                &db.dsn,
                "--categorizer",
                "current/executor.yaml",
            ]),
            strings(&pg::WINDOW),
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (exported, committed) = (histories(&text), histories(&week));
    assert_eq!(exported.len(), committed.len());
    for (e, c) in exported.iter().zip(&committed) {
        assert_eq!(e, c, "the export is not the committed week");
    }
    fs::write(dir.join("week.jsonl"), text).unwrap();
    let exported = "week.jsonl";

    let suggest = |current: &str| {
        run(
            dir,
            "http://127.0.0.1:1",
            &strings(&["suggest", "--history", exported, "--queue", "ml", "--baseline", current]),
        )
    };
    let today = suggest("current/");
    assert_eq!(today.status.code(), Some(0), "{}", format_output(&today));
    let out = String::from_utf8(today.stdout).unwrap();
    assert!(
        out.contains("  today's policy explains 1174 of 1174 jobs (none contradicts it)\n"),
        "{out}"
    );

    let more = suggest("current5/");
    assert_eq!(more.status.code(), Some(1), "{}", format_output(&more));
    let out = String::from_utf8(more.stdout).unwrap();
    assert!(
        out.contains(
            "  today's policy explains 919 of 1174 jobs (255 contradict it: 01m7ea73t8qcegbqvhrhp5rvf5, \
             01m7eddh58hgephw84eq2r3qca, 01m7eh470gadnd8q1hjk2c2mg4, 01m7ehptq04xrwcbv8wrwmffy9, \
             01m7ej0m68cj2hytrrcs8cjpbc and 250 more)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "\nVerdict: reject (do not adopt): the baseline does not explain the record: 255 jobs contradict it; \
             is it what the cluster ran?\n"
        ),
        "{out}"
    );

    // Why, job by job: the record ends the job after its 4th run (run 3), where a limit of 5
    // runs it again.
    let plain = run(
        dir,
        "http://127.0.0.1:1",
        &strings(&["simulate", "-f", "current5/", "--history", exported]),
    );
    assert_eq!(plain.status.code(), Some(0), "{}", format_output(&plain));
    let err = String::from_utf8(plain.stderr).unwrap();
    // After the scheduler's assumed settings, said once first.
    assert!(
        err.starts_with(
            "scheduler: upstream's shipped defaults: globalMaxRetries 5, maxRetries 3 (4 attempts); \
             the retry engine assumed enabled: pass --scheduler-config\n\
             warning: job `01m7ea73t8qcegbqvhrhp5rvf5`: history contradicts the decisions: the record ends it after run 3; \
             today's policy runs it again\n"
        ),
        "{err}"
    );
}

/// The route's week with an outage planted (Wednesday from 08:00: 120 jobs of four runs, each
/// failing on the registry, over 40 nodes): the README's route says what it left out of
/// learning, where the operator reads it on the way: `suggested.yaml` (`-o policy`) starts
/// with the `# incidents:` line naming the window and its share, suggest's stderr says the
/// share, and the outage's signature's comment gives its runs left out.
#[test]
fn the_readme_route_says_what_an_outage_week_left_out_of_learning() {
    let week = fs::read_to_string(root().join(WEEK)).unwrap();
    let message = "rpc error: code = Unavailable desc = registry unavailable";
    let mut planted = week.clone();
    for j in 0..120u64 {
        let secs = 8 * 3600 + j * 75;
        let at = format!("2026-11-18T{:02}:{:02}:{:02}Z", secs / 3600, secs / 60 % 60, secs % 60);
        let runs: Vec<Value> = (0..4u64)
            .map(|k| {
                serde_json::json!({"node": format!("node-{:02}", (j + 7 * k) % 40), "queuedFor": "10s", "runFor": "1m",
                    "containers": [{"name": "main", "exitCode": 1, "reason": "Error", "message": message}],
                    "executorPath": "failedPod"})
            })
            .collect();
        let job = serde_json::json!({"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
            "job": {"id": format!("outage-{j:03}"), "queue": "ml", "memory": "17179869184", "submittedAt": at,
                "resources": {"cpu": "4", "gpu": "1"}, "state": "failed"},
            "runs": runs});
        planted.push_str(&format!("{job}\n"));
    }
    let copy_current = |dir: &Path| {
        for f in ["policies.yaml", "queues.yaml", "executor.yaml"] {
            fs::copy(root().join(CURRENT).join(f), dir.join(f)).unwrap();
        }
    };
    let Some(RouteRun { out, dir, server }) = route_script("route_outage", &planted, copy_current) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let suggested = fs::read_to_string(dir.path().join("suggested.yaml")).unwrap();
    let first = suggested.lines().next().unwrap();
    // One window, its share of the failed runs learned from, and its span.
    let share = first
        .strip_prefix("# incidents: 1 window, ")
        .unwrap_or_else(|| panic!("{suggested}"));
    let (counts, spans) = share.split_once(" left out of learning: ").unwrap();
    assert!(
        spans.starts_with("2026-11-18T07:") && spans.contains("Z/2026-11-18T"),
        "{first}"
    );
    let pct = counts.split_once('(').unwrap().1.trim_end_matches(')');
    assert!(
        stderr.contains(&format!(
            "incidents: 1 window, {pct} of failed runs left out of learning"
        )),
        "{stderr}"
    );
    // The outage's runs, 480, are in the window; the rule's comment says so.
    let left: u64 = counts.split(" of ").next().unwrap().parse().unwrap();
    assert!(left >= 480, "{first}");
    assert!(suggested.contains("in incidents, not learned from)"), "{suggested}");
    drop(server);
}
