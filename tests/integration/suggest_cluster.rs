//! `suggest` under today's Armada, as a cluster runs it (docs/reference/suggest.md "The
//! cluster is the unit"): one proposal said one way (a category no matcher can split takes
//! the decision that loses no job), the executor config's changes that reach every queue.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::support::{format_output, retryctl, temp_home};

/// The exit-3/exit-4 weeks (`testdata/suggest/exit-codes/`): one message, `boom: lost the
/// lock`, in container `main`; exit 3 pays on its retry, exit 4 never does; today's policy
/// retries the deployed category `boom` both are in.
const EXIT_CODES: &str = "testdata/suggest/exit-codes";

/// `suggest --history EXIT_CODES/WEEK --queue ml --baseline EXIT_CODES/current/ EXTRA…`.
fn suggest_exit_codes(dir: &Path, week: &str, extra: &[&str]) -> Output {
    let history = format!("{EXIT_CODES}/{week}");
    let current = format!("{EXIT_CODES}/current/");
    let args = [
        &[
            "suggest",
            "--history",
            &history,
            "--queue",
            "ml",
            "--baseline",
            &current,
            "--min-trials",
            "10",
        ][..],
        extra,
    ]
    .concat();
    retryctl(dir).args(args).output().unwrap()
}

/// Exit 4 is `exit:4@main "boom: lost the lock"`'s alone among container `main`'s failed runs:
/// an `onExitCodes` rule with `containerName` splits it into a category of its own, before
/// the deployed `boom`, which keeps today's decision for exit 3. The proposal fails exit 4 at
/// once and retries exit 3; replayed by `simulate --baseline`, each signature is decided by
/// its own rule.
#[test]
fn an_exit_code_a_signature_has_alone_splits_it_into_a_category_of_its_own() {
    let home = temp_home();
    let dir = home.path();
    let table = suggest_exit_codes(dir, "week.jsonl", &[]);
    assert_eq!(table.status.code(), Some(0), "{}", format_output(&table));
    let text = String::from_utf8_lossy(&table.stdout);
    for line in [
        "exit:4@main \"boom: lost the lock\"  90    60      0.0% (0.0–6.0%)       0.0    Retry (today/0, 66.7% of runs retried)  Fail\n",
        // Today's rule on `boom` comes after the proposed one, which covers it: not written.
        " 2 rules of its own (1 Retry, 1 Fail).\n",
        "  cluster-wide: pods of category `s-boom-lost-the-lock-889e00a5` (runs of `boom` before) are kept on failure, for every queue (were deleted)\n",
        "Plan: 0 rescued, 0 lost, 0 → Pending, 30 retried differently; 30 of 60 jobs change.\n",
        "  candidate: category changes: none → s-boom-lost-the-lock-889e00a5 90, none → boom 30\n",
        "Verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −60; run hours -1.0; pods of category `s-boom-lost-the-lock-889e00a5` (runs of `boom` before) are kept on failure, for every queue (were deleted)\n",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    assert!(!text.contains("no one matcher"), "{text}");
    let v: Value = serde_json::from_slice(&suggest_exit_codes(dir, "week.jsonl", &["-o", "json"]).stdout).unwrap();
    assert_eq!(v["suggest"]["proposal"]["merged"], json!([]));
    assert_eq!(
        v["suggest"]["proposal"]["categories"],
        json!([{"name": "s-boom-lost-the-lock-889e00a5", "action": "Retain", "signatures": ["exit:4@main \"boom: lost the lock\""]}])
    );
    let policy = suggest_exit_codes(dir, "week.jsonl", &["-o", "policy"]);
    assert_eq!(policy.status.code(), Some(0), "{}", format_output(&policy));
    let written = String::from_utf8(policy.stdout).unwrap();
    assert_eq!(
        written,
        "# verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −60; run hours -1.0; pods of category `s-boom-lost-the-lock-889e00a5` (runs of `boom` before) are kept on failure, for every queue (were deleted)
# Proposed by `retryctl suggest` from 60 jobs (120 failed runs); --min-trials 10 --futile 0.05 --max-limit 5.
# The executor's config (errorCategories), not a server resource: `retryctl apply` skips it.
errorCategories:
  enabled: true
  categories:
    # exit:4@main \"boom: lost the lock\"
    - name: s-boom-lost-the-lock-889e00a5
      rules:
        - onExitCodes: {operator: In, values: [4]}
          containerName: \"main\"
    - name: \"boom\"
      action: \"Delete\"
      rules:
        - onTerminationMessage: {pattern: \"boom\"}
---
# Proposed by `retryctl suggest` from 60 jobs (120 failed runs); --min-trials 10 --futile 0.05 --max-limit 5.
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: suggested
retryLimit: 2
defaultAction: Retry
rules:
  # exit:3@main \"boom: lost the lock\": 30 failed runs in 30 jobs; 30 retried, 30 succeeded: 100.0% (95%: 88.6–100.0%)
  - action: Retry
    onCategory: \"boom\"
  # exit:4@main \"boom: lost the lock\": 90 failed runs in 30 jobs; 60 retried, 0 succeeded: 0.0% (95%: 0.0–6.0%)
  - action: Fail
    onCategory: \"s-boom-lost-the-lock-889e00a5\"
  # kept from today: today/0 (decided 120 runs): dropped, a rule before it matches every failure it matches: {action: Retry, onCategory: boom}
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: ml
priorityFactor: 1.0
retryPolicies:
- suggested
- today
"
    );
    let proposal = dir.join("suggested.yaml");
    std::fs::write(&proposal, &written).unwrap();
    let (proposal, week) = (p(dir, "suggested.yaml"), format!("{EXIT_CODES}/week.jsonl"));
    let current = format!("{EXIT_CODES}/current/");
    // simulate --baseline counts what suggest counted: exit 4's jobs fail at once.
    let simulate = retryctl(dir)
        .args(["simulate", "-f", &proposal, "--baseline", &current, "--history", &week])
        .output()
        .unwrap();
    assert_eq!(simulate.status.code(), Some(0), "{}", format_output(&simulate));
    let text = String::from_utf8_lossy(&simulate.stdout);
    assert!(
        text.contains("  ~ lock-4-00: Failed after 2 retries → Failed after 0 retries  (retries)\n"),
        "{text}"
    );
    assert!(
        text.contains("Plan: 0 rescued, 0 lost, 0 → Pending, 30 retried differently; 30 of 60 jobs change.\n"),
        "{text}"
    );
    assert!(
        text.contains("  candidate: category changes: none → s-boom-lost-the-lock-889e00a5 90, none → boom 30\n"),
        "{text}"
    );
    // Each signature's runs are decided by its own rule of the proposal.
    let jsonl = retryctl(dir)
        .args(["simulate", "-f", &proposal, "--history", &week, "-o", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(jsonl.status.code(), Some(0), "{}", format_output(&jsonl));
    let mut decided = std::collections::BTreeSet::new();
    for line in String::from_utf8(jsonl.stdout).unwrap().lines() {
        let job: Value = serde_json::from_str(line).unwrap();
        let run = &job["runs"][0];
        let kind = job["job"].as_str().unwrap().rsplit_once('-').unwrap().0.to_string();
        decided.insert(format!("{kind} {} {} {}", run["category"], run["rule"], run["action"]));
    }
    assert_eq!(
        decided.into_iter().collect::<Vec<_>>(),
        [
            "lock-3 \"boom\" \"suggested/0\" \"Retry\"",
            "lock-4 \"s-boom-lost-the-lock-889e00a5\" \"suggested/1\" \"Fail\"",
        ]
    );
}

/// The same message and exit codes, and exit 4 is another signature's too in `main` (`boom:
/// disk full`, which pays on its retry): an `onExitCodes` rule would take its runs, so the
/// category the message's two signatures share retries both (the decision that loses no
/// job), every format says so and why, and the written policy and the table agree.
#[test]
fn a_category_no_matcher_can_split_takes_the_decision_that_loses_no_job() {
    let home = temp_home();
    let dir = home.path();
    let run = |extra: &[&str]| suggest_exit_codes(dir, "week-shared.jsonl", extra);
    let table = run(&[]);
    assert_eq!(table.status.code(), Some(0), "{}", format_output(&table));
    let text = String::from_utf8_lossy(&table.stdout);
    let category = "s-boom-lost-the-lock-4279ceea";
    // The exit-4 signature is retried with its category: the cell says what the policy does.
    assert!(
        text.contains(&format!(
            "Retry ×2 (merged in `{category}`: no matcher splits it from a Retry signature)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("  category `{category}` stands for exit:3@main \"boom: lost the lock\", exit:4@main \"boom: lost the lock\":\n    no one matcher tells them apart (a rule has one matcher, and no exit code splits them: exit:4@main \"boom:\n    lost the lock\" shares exit code 4 in container `main` with exit:4@main \"boom: disk full\"), so it retries them all, the decision that loses no job\n")),
        "{text}"
    );
    assert!(
        text.contains("  2 rules of its own (2 Retry, 0 Fail), then 1 rule kept from today.\n"),
        "{text}"
    );
    // No job of today's is lost: the shared category retries them all, as today.
    assert!(text.contains("Plan: 0 rescued, 0 lost,"), "{text}");
    assert!(!text.contains("reject"), "{text}");
    let v: Value = serde_json::from_slice(&run(&["-o", "json"]).stdout).unwrap();
    assert_eq!(
        v["suggest"]["proposal"]["merged"],
        json!([{"category": category, "signatures": ["exit:3@main \"boom: lost the lock\"", "exit:4@main \"boom: lost the lock\""],
            "unsplit": [{"signature": "exit:4@main \"boom: lost the lock\"", "reason": "sharedExitCode", "container": "main", "exitCode": 4, "sharedWith": "exit:4@main \"boom: disk full\""}]}])
    );
    // The written policy has the one Retry rule on the shared category, and no exit code's.
    let policy = String::from_utf8(run(&["-o", "policy"]).stdout).unwrap();
    assert!(
        policy.contains(&format!("  - action: Retry\n    onCategory: \"{category}\"\n")),
        "{policy}"
    );
    assert!(!policy.contains("action: Fail"), "{policy}");
    assert!(!policy.contains("onExitCodes"), "{policy}");
    let words = "no one matcher tells them apart (a rule has one matcher, and no exit code splits them: exit:4@main \"boom: lost the lock\" shares exit code 4 in container `main` with exit:4@main \"boom: disk full\")";
    let md = String::from_utf8(run(&["-o", "markdown"]).stdout).unwrap();
    assert!(md.contains(&words.replace('`', "\\`")) || md.contains(words), "{md}");
    let html = String::from_utf8(run(&["-o", "html"]).stdout).unwrap();
    assert!(
        html.contains(&words.replace('"', "&quot;")) || html.contains(words),
        "{html}"
    );
}

/// Two queues sharing one executor config (`testdata/suggest/two-queues/`): `ml`'s exit 4
/// never pays, so suggest splits it from `boom` by its exit code, and `batch`, which retries
/// `boom` and whose exit-4 jobs pay on their retry, would lose them: the reject names
/// `--keep-categorizer`, which proposes on today's categories only (`ml`'s futile category
/// failed at once) and adopts, the executor config left as it is.
#[test]
fn keep_categorizer_is_the_way_past_a_split_that_costs_another_queue_its_jobs() {
    let home = temp_home();
    let dir = home.path();
    let (week, current) = (
        "testdata/suggest/two-queues/week.jsonl",
        "testdata/suggest/two-queues/current/",
    );
    let executor = std::fs::read("testdata/suggest/two-queues/current/executor.yaml").unwrap();
    let suggest = |extra: &[&str]| {
        let args = [
            &[
                "suggest",
                "--history",
                week,
                "--queue",
                "ml",
                "--baseline",
                current,
                "--min-trials",
                "10",
            ][..],
            extra,
        ]
        .concat();
        retryctl(dir).args(args).output().unwrap()
    };
    let rejected = suggest(&[]);
    assert_eq!(rejected.status.code(), Some(1), "{}", format_output(&rejected));
    let text = String::from_utf8_lossy(&rejected.stdout);
    assert!(
        text.contains("Verdict: reject (do not adopt): loses 10 jobs of queue batch today's policy saves (`batch-lock-4-00`, `batch-lock-4-01`, `batch-lock-4-02`, `batch-lock-4-03`, `batch-lock-4-04` and 5 more); hint: propose with --keep-categorizer to keep today's categories as they are (new ones only for failures none of them takes)\n"),
        "{text}"
    );
    let kept = suggest(&["--keep-categorizer"]);
    assert_eq!(kept.status.code(), Some(0), "{}", format_output(&kept));
    let text = String::from_utf8_lossy(&kept.stdout);
    for line in [
        "  1 rule of its own (0 Retry, 1 Fail), then 1 rule kept from today.\n",
        "  candidate: category changes: none → boom 120, none → futile 90\n",
        "Verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −60; run hours -1.0\n",
        "Write the proposal:  retryctl suggest --history testdata/suggest/two-queues/week.jsonl --queue ml --baseline testdata/suggest/two-queues/current/ --min-trials 10 --keep-categorizer -o policy --executor-config executor-suggested.yaml > suggested.yaml\n",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    assert!(!text.contains("cluster-wide"), "{text}");
    // The policy alone changes: no new category, the one in use untouched.
    let policy = suggest(&["--keep-categorizer", "-o", "policy"]);
    assert_eq!(policy.status.code(), Some(0), "{}", format_output(&policy));
    let written = String::from_utf8(policy.stdout).unwrap();
    assert!(
        written.starts_with(
            "# verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −60; run hours -1.0\n"
        ),
        "{written}"
    );
    assert!(!written.contains("s-boom-lost-the-lock"), "{written}");
    assert!(
        written.contains(
            "\n# --keep-categorizer: today's executor config as it is; nothing to roll out.\n\
             # Proposed by `retryctl suggest`"
        ),
        "{written}"
    );
    assert!(
        written.contains("  - action: Fail\n    onCategory: \"futile\"\n"),
        "{written}"
    );
    assert_eq!(
        std::fs::read("testdata/suggest/two-queues/current/executor.yaml").unwrap(),
        executor
    );
    // The executor config is left as it is, and `--executor-config` writes it so: the
    // route's later commands read that file, and the rejected proposal's config, written
    // there by the first run, must not stand for the cluster's.
    let out = dir.join("executor-suggested.yaml");
    let out_arg = out.to_str().unwrap();
    let first = suggest(&["-o", "policy", "--executor-config", out_arg]);
    assert_eq!(first.status.code(), Some(1), "{}", format_output(&first));
    let rejected_config = std::fs::read_to_string(&out).unwrap();
    assert!(
        rejected_config.starts_with("# verdict: reject (do not adopt)"),
        "{rejected_config}"
    );
    let again = suggest(&["--keep-categorizer", "-o", "policy", "--executor-config", out_arg]);
    assert_eq!(again.status.code(), Some(0), "{}", format_output(&again));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "# verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −60; run hours -1.0\n\
         # --keep-categorizer: today's executor config as it is; nothing to roll out.\n\
         # Proposed by `retryctl suggest` from 90 jobs (210 failed runs); --min-trials 10 --futile 0.05 --max-limit 5.\n\
         # The executor's config both queues' jobs run under.\n\
         errorCategories:\n  enabled: true\n  categories:\n    \
         - name: boom\n      action: Delete\n      rules:\n        - onTerminationMessage: {pattern: \"boom\"}\n    \
         - name: futile\n      action: Delete\n      rules:\n        - onTerminationMessage: {pattern: \"futile\"}\n"
    );
    // Nothing added: below suggest's three comment lines, the deployed file as it is written.
    let written = std::fs::read_to_string(&out).unwrap();
    let below: String = written.split_inclusive('\n').skip(3).collect();
    assert_eq!(
        below.trim_end(),
        String::from_utf8(executor.clone()).unwrap().trim_end()
    );
    // The policy written beside it validates against it, as the route's next step does.
    let policy = dir.join("suggested.yaml");
    std::fs::write(&policy, &again.stdout).unwrap();
    let valid = retryctl(dir)
        .args([
            "validate",
            "--upstream",
            "-f",
            policy.to_str().unwrap(),
            "--categorizer",
            out_arg,
        ])
        .output()
        .unwrap();
    assert_eq!(valid.status.code(), Some(0), "{}", format_output(&valid));
}

/// The two-queue week of scripts/gen-two-queue-week.py (its pulls all submitted at one time:
/// `--incidents off`), where splitting `infrastructure/image-pull` for `ml` loses the `batch`
/// jobs that retry it: `--keep-categorizer` keeps every deployed category as it is, in its
/// place, and adds after them the categories `ml`'s rules need for failures none of them
/// takes (its two `Fail` rules, and its connection resets' Retry): adopt, retries removed, no
/// `batch` job changed, stderr naming what was added.
#[test]
fn keep_categorizer_keeps_the_deployed_categories_and_adds_after_them() {
    let home = temp_home();
    let dir = home.path();
    let made = std::process::Command::new("python3")
        .arg(crate::support::root().join("scripts/gen-two-queue-week.py"))
        .args(["1", dir.to_str().unwrap()])
        .output()
        .expect("python3 runs scripts/gen-two-queue-week.py");
    assert!(made.status.success(), "{}", format_output(&made));
    let (week, current) = (p(dir, "week.jsonl"), format!("{}/", p(dir, "current")));
    let suggest = |extra: &[&str]| suggest_ml(dir, &week, &current, &[&["--incidents", "off"][..], extra].concat());
    // Without the flag: the split loses batch's jobs.
    let split = suggest(&[]);
    assert_eq!(split.status.code(), Some(1), "{}", format_output(&split));
    assert!(String::from_utf8_lossy(&split.stdout)
        .contains("\n  queue batch: 0 rescued, 10 lost, 0 → Pending; 10 of 10 jobs change\n"));
    let kept = suggest(&["--keep-categorizer"]);
    assert_eq!(kept.status.code(), Some(0), "{}", format_output(&kept));
    let text = String::from_utf8_lossy(&kept.stdout);
    for line in [
        "exit:1@main \"ValueError: unknown config key 'lr…  480   360     0.0% (0.0–1.1%)       8.0    Retry (ml-today/default, 75.0% of runs retried)  Fail\n",
        "exit:2@init:setup                                 160   120     0.0% (0.0–3.1%)       0.2    Retry (ml-today/default, 75.0% of runs retried)  Fail\n",
        "  no rule for podError \"Failed to pull image \"registry/team/model:v<n>\": …: --keep-categorizer: its rule needs a deployed category split or its action changed\n",
        "  5 rules of its own (3 Retry, 2 Fail), then 2 rules kept from today.\n",
        // Each run a deployed category takes keeps it: the new ones take only runs of none.
        "  candidate: category changes:\n    \
         none → s-valueerror-unknown-config-key-lr-n-401097c5 480\n    \
         none → s-connectionreseterror-errno-n-peer-n-n-n-f02f47c9 177\n    \
         none → s-exit-2-setup-51f181b2 160\n    \
         none → infrastructure/image-pull 35\n",
        "  queue ml: 0 rescued, 0 lost, 0 → Pending; 160 of 1199 jobs change\n\n",
        "Verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −480; GPU-hours -6.2\n",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    assert!(!text.contains("queue batch"), "{text}");
    assert!(!text.contains("cluster-wide"), "{text}");
    assert!(
        String::from_utf8_lossy(&kept.stderr).contains(
            "note: --keep-categorizer: today's categories kept as they are; added after them, for failures none of them takes: \
             `s-connectionreseterror-errno-n-peer-n-n-n-f02f47c9`, `s-valueerror-unknown-config-key-lr-n-401097c5`, `s-exit-2-setup-51f181b2`\n"
        ),
        "{}",
        format_output(&kept)
    );
    // The executor's config written: the deployed categories first, as deployed, then the
    // new ones; it and the policy validate together.
    let config = dir.join("executor-suggested.yaml");
    let policy = suggest(&[
        "--keep-categorizer",
        "-o",
        "policy",
        "--executor-config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(policy.status.code(), Some(0), "{}", format_output(&policy));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        r#"# verdict: adopt (a change worth making): 0 rescued, 0 lost; retries +0 −480; GPU-hours -6.2
# --keep-categorizer: today's categories as they are, then 3 new categories for failures none of them takes; roll it out before the policy.
# Proposed by `retryctl suggest` from 1199 jobs (1506 failed runs); --min-trials 20 --futile 0.05 --max-limit 5.
application:
  clusterId: ml-gpu-a
  pool: gpu
  submitConcurrencyLimit: 5
  errorCategories:
    enabled: true
    categories:
      - name: "oom"
        action: "Delete"
        rules:
          - onConditions: ["OOMKilled"]
            subcategory: "kernel"
            hint: "Increase the memory request"
      - name: "app-42"
        action: "Delete"
        rules:
          - onExitCodes: {operator: "In", values: [42]}
            containerName: "main"
            hint: "The trainer lost its checkpoint lock; it is retried"
      - name: "infrastructure"
        action: "Delete"
        rules:
          - onTerminationMessage: {pattern: "(?i)cuda.*error"}
            containerName: "main"
            subcategory: "cuda"
            hint: "A GPU fault, not your code"
          - onPodError: {pattern: "not found|NotFound"}
            subcategory: "image-pull"
            hint: "Check the image name and tag"
      # exit:1@main "ConnectionResetError: [Errno <n>] peer <n>.<n>.<n>.<n> reset"
      - name: s-connectionreseterror-errno-n-peer-n-n-n-f02f47c9
        action: Delete
        rules:
          - onTerminationMessage: {pattern: "^[ \\t\\r\\f]*ConnectionResetError:[ \\t\\r\\f]+\\[Errno[ \\t\\r\\f]+[0-9]+\\][ \\t\\r\\f]+peer[ \\t\\r\\f]+[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+[ \\t\\r\\f]+reset[ \\t\\r\\f]*(\\n|$)"}
            containerName: "main"
      # exit:1@main "ValueError: unknown config key 'lr<n>'"
      - name: s-valueerror-unknown-config-key-lr-n-401097c5
        rules:
          - onTerminationMessage: {pattern: "^[ \\t\\r\\f]*ValueError:[ \\t\\r\\f]+unknown[ \\t\\r\\f]+config[ \\t\\r\\f]+key[ \\t\\r\\f]+'lr[0-9]+'[ \\t\\r\\f]*(\\n|$)"}
            containerName: "main"
      # exit:2@init:setup
      - name: s-exit-2-setup-51f181b2
        rules:
          - onExitCodes: {operator: In, values: [2]}
            containerName: "setup"
kubernetes:
  minimumPodAge: 3m
  stuckTerminatingPodExpiry: 1m
"#
    );
    let proposal = dir.join("suggested.yaml");
    std::fs::write(&proposal, &policy.stdout).unwrap();
    let valid = retryctl(dir)
        .args([
            "validate",
            "--upstream",
            "-f",
            proposal.to_str().unwrap(),
            "--categorizer",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(valid.status.code(), Some(0), "{}", format_output(&valid));
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

/// Today's policies of a cluster of two queues sharing one executor config: `ml` (the route's)
/// and `batch`, which retries what the executor puts in `infrastructure`; with `eval`, a third
/// queue the week holds no job of.
pub(crate) fn two_queues(dir: &Path, eval: bool) -> String {
    let current = dir.join(if eval { "three" } else { "current" });
    std::fs::create_dir_all(&current).unwrap();
    std::fs::copy("testdata/route/current/executor.yaml", current.join("executor.yaml")).unwrap();
    std::fs::write(
        current.join("policies.yaml"),
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: ml-today\nretryLimit: 3\ndefaultAction: Retry\nrules:\n  - action: Retry\n    onCategory: oom\n  - action: Retry\n    onCategory: app-42\n---\napiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: batch-today\nretryLimit: 3\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: infrastructure\n",
    )
    .unwrap();
    let mut queues = String::new();
    for q in ["ml", "batch"].into_iter().chain(eval.then_some("eval")) {
        let list = if q == "ml" { "ml-today" } else { "batch-today" };
        queues.push_str(&format!(
            "---\napiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: {q}\npriorityFactor: 1\nretryPolicies: [{list}]\n"
        ));
    }
    std::fs::write(current.join("queues.yaml"), queues).unwrap();
    format!("{}/", current.display())
}

/// The route's week, with 25 jobs of `ml` and 10 of `batch` whose image pull backs off once
/// and then runs: the executor puts both pull failures in `infrastructure/image-pull`. Their
/// submissions are spread over the week, 4 hours apart (all at one time, they were an
/// incident window of their own: docs/reference/suggest.md "Incidents").
pub(crate) fn two_queue_week(dir: &Path) -> String {
    let week = std::fs::read_to_string("testdata/route/week.jsonl").unwrap();
    let pulled: Value = week
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|j| j["runs"][0]["executorPath"] == "stuckPod")
        .unwrap();
    let mut out = week.clone();
    let mut n = 0u64;
    let mut add = |queue: &str, id: String| {
        let hours = 1 + 4 * n;
        n += 1;
        let submitted = format!("2026-11-{:02}T{:02}:00:00Z", 16 + hours / 24, hours % 24);
        let mut first = pulled["runs"][0].clone();
        let m = first.as_object_mut().unwrap();
        m.remove("category");
        m.remove("subcategory");
        // The executor's text for a pull that backs off: another last line than the week's
        // `not found`, in the same deployed category (`not found|NotFound`).
        let text = m["podError"].as_str().unwrap().rsplit_once('\n').unwrap().0.to_string();
        m.insert(
            "podError".into(),
            json!(format!(
                "{text}\nBack-off pulling image \"registry/team/model:v9\": NotFound"
            )),
        );
        let job = json!({"apiVersion": "armadaproject.io/v1", "kind": "FailureHistory",
            "job": {"id": id, "queue": queue, "submittedAt": submitted, "resources": {"cpu": "4", "gpu": "1"}},
            "runs": [first, {"node": "node-02", "queuedFor": "10s", "runFor": "30m", "outcome": "succeeded"}]});
        out.push_str(&format!("{job}\n"));
    };
    for k in 0..25 {
        add("ml", format!("01m7zzmlpull{k:02}"));
    }
    for k in 0..10 {
        add("batch", format!("01m7zzbatch{k:02}"));
    }
    let path = dir.join("week.jsonl");
    std::fs::write(&path, out).unwrap();
    path.display().to_string()
}

/// `ml`'s transient pull back-offs make suggest split `infrastructure/image-pull`: the new
/// category is the cluster's, and `batch`, which retries `infrastructure`, loses every job it
/// retried. suggest compares every queue, says so per queue and rejects naming `batch`;
/// `simulate --baseline` and `tune` given the proposal count the same loss.
/// `suggest --history WEEK --queue ml --baseline CURRENT EXTRA…` in `dir`.
fn suggest_ml(dir: &Path, week: &str, current: &str, extra: &[&str]) -> Output {
    let args = [
        &["suggest", "--history", week, "--queue", "ml", "--baseline", current][..],
        extra,
    ]
    .concat();
    retryctl(dir).args(args).output().unwrap()
}

#[test]
fn a_split_another_queue_retries_on_is_rejected_naming_the_queue() {
    let home = temp_home();
    let dir = home.path();
    let (current, week) = (two_queues(dir, false), two_queue_week(dir));
    let suggest = |extra: &[&str]| suggest_ml(dir, &week, &current, extra);
    let table = suggest(&[]);
    assert_eq!(table.status.code(), Some(1), "{}", format_output(&table));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("Plan: 0 rescued, 10 lost, 0 → Pending, 190 retried differently; 200 of 1209 jobs change.\n"),
        "{text}"
    );
    assert!(text.contains("\n  queue batch: 0 rescued, 10 lost, 0 → Pending; 10 of 10 jobs change\n  queue ml: 0 rescued, 0 lost, 0 → Pending; 190 of 1199 jobs change\n"), "{text}");
    assert!(
        text.contains("Verdict: reject (do not adopt): loses 10 jobs of queue batch today's policy saves (`01m7zzbatch00`, `01m7zzbatch01`, `01m7zzbatch02`, `01m7zzbatch03`, `01m7zzbatch04` and 5 more); hint: propose with --keep-categorizer to keep today's categories as they are (new ones only for failures none of them takes)\n"),
        "{text}"
    );
    assert!(
        text.contains("  cluster-wide: pods of category `s-failed-to-pull-image-registry-team-model-"),
        "{text}"
    );
    assert!(!text.contains("Search its limits"), "{text}");
    // `--queue ml` left batch's jobs out of the learning, not out of the comparison.
    assert!(
        String::from_utf8_lossy(&table.stderr).ends_with(
            "note: learned from queue `ml` alone: 10 jobs of other queues were compared, since the proposal changes the cluster's categorizer, and not learned from\n"
        ),
        "{}",
        format_output(&table)
    );
    let v: Value = serde_json::from_slice(&suggest(&["-o", "json"]).stdout).unwrap();
    assert_eq!(v["suggest"]["queues"][0]["queue"], "batch");
    assert_eq!(v["suggest"]["queues"][0]["lost"], 10);
    assert_eq!(v["suggest"]["verdict"]["decision"], "reject");
    // The proposal written in full, headed by the verdict, exit 1: `set -e` stops here.
    let policy = suggest(&["-o", "policy"]);
    assert_eq!(policy.status.code(), Some(1));
    let written = String::from_utf8(policy.stdout).unwrap();
    assert!(
        written.starts_with("# verdict: reject (do not adopt): loses 10 jobs of queue batch"),
        "{written}"
    );
    let proposal = dir.join("suggested.yaml");
    std::fs::write(&proposal, &written).unwrap();
    let proposal = proposal.display().to_string();
    // The verbs agree: the queues the proposal does not name replay under today's documents.
    let simulate = retryctl(dir)
        .args(["simulate", "-f", &proposal, "--baseline", &current, "--history", &week])
        .output()
        .unwrap();
    assert_eq!(simulate.status.code(), Some(0), "{}", format_output(&simulate));
    let text = String::from_utf8_lossy(&simulate.stdout);
    assert!(
        text.contains("Plan: 0 rescued, 10 lost, 0 → Pending, 190 retried differently; 200 of 1209 jobs change.\n"),
        "{text}"
    );
    let tune = retryctl(dir)
        .args([
            "tune",
            "-f",
            &proposal,
            "--baseline",
            &current,
            "--history",
            &week,
            "--vary",
            "suggested:retryLimit=3",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&tune.stdout).unwrap();
    assert_eq!(
        v["tune"]["candidates"][0]["transitions"]["lost"],
        10,
        "{}",
        format_output(&tune)
    );
}

/// A changed categorizer and a queue of today's documents the history holds no job of:
/// nothing says what the change does to it, and the verdict says to export every queue.
#[test]
fn a_queue_the_week_does_not_hold_rejects_a_changed_categorizer() {
    let home = temp_home();
    let dir = home.path();
    let (current, week) = (two_queues(dir, true), two_queue_week(dir));
    let out = suggest_ml(dir, &week, &current, &["-o", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", format_output(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["suggest"]["verdict"]["reasons"][0],
        "the categorizer is the cluster's: queue eval uses categories it changes and the history holds none of their jobs (export the week without --queue: `retryctl history --lookout-db … --from … --to …`)"
    );
}

/// The record is what the baseline ran, or nothing measured against it holds: today's policy
/// of retryLimit 0 cannot have made the week's retries.
#[test]
fn a_baseline_the_record_contradicts_rejects_and_recommends_nothing() {
    let home = temp_home();
    let dir = home.path();
    let current = dir.join("current");
    std::fs::create_dir_all(&current).unwrap();
    std::fs::copy("testdata/route/current/executor.yaml", current.join("executor.yaml")).unwrap();
    std::fs::copy("testdata/route/current/queues.yaml", current.join("queues.yaml")).unwrap();
    let policies = std::fs::read_to_string("testdata/route/current/policies.yaml").unwrap();
    std::fs::write(
        current.join("policies.yaml"),
        policies.replace("retryLimit: 3", "retryLimit: 1"),
    )
    .unwrap();
    let current = format!("{}/", current.display());
    let week = "testdata/route/week.jsonl";
    // By default, 1% of the jobs compared may contradict today's policy.
    let suggest = suggest_ml(dir, week, &current, &[]);
    assert_eq!(suggest.status.code(), Some(1), "{}", format_output(&suggest));
    let text = String::from_utf8_lossy(&suggest.stdout);
    let explains = text
        .lines()
        .find(|l| l.starts_with("  today's policy explains "))
        .expect("the explains line");
    assert!(
        explains.starts_with("  today's policy explains 808 of 1174 jobs (366 contradict it: "),
        "{text}"
    );
    assert!(
        text.contains("Verdict: reject (do not adopt): the baseline does not explain the record: 366 jobs contradict it; is it what the cluster ran?"),
        "{text}"
    );
    // Within a limit given, the proposal is judged on its own.
    let allowed = retryctl(dir)
        .args([
            "suggest",
            "--history",
            week,
            "--queue",
            "ml",
            "--baseline",
            &current,
            "--max-contradictions",
            "366",
        ])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&allowed.stdout).contains("does not explain"),
        "{}",
        format_output(&allowed)
    );
    let tune = retryctl(dir)
        .args([
            "tune",
            "-f",
            "testdata/route/suggested.yaml",
            "--history",
            week,
            "--baseline",
            &current,
            "--vary",
            "suggested:retryLimit=1..3",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&tune.stdout);
    assert!(
        text.contains("recommended: none: the baseline does not explain the record: 366 jobs contradict it; is it what the cluster ran?\n"),
        "{}",
        format_output(&tune)
    );
    // simulate --baseline says it, and exits 1 with --strict.
    for (strict, code) in [(false, 0), (true, 1)] {
        let mut args = vec![
            "simulate",
            "-f",
            "testdata/route/suggested.yaml",
            "--baseline",
            &current,
            "--history",
            week,
        ];
        args.extend(strict.then_some("--strict"));
        let out = retryctl(dir).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", format_output(&out));
        assert!(String::from_utf8_lossy(&out.stdout)
            .contains("  today's policy explains 808 of 1174 jobs (366 contradict it: "));
    }
    let bad = retryctl(dir)
        .args([
            "suggest",
            "--history",
            week,
            "--baseline",
            &current,
            "--max-contradictions",
            "2x",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).lines().next().unwrap(),
        "error: invalid `--max-contradictions` `2x`: expected a number of jobs such as `5` or a percentage of the jobs compared such as `1%`"
    );
}

/// A rejected proposal is not applied by accident: `apply -f` of the file `suggest -o policy`
/// wrote headed `# verdict: reject` refuses (exit 1) with the verdict's reasons and sends
/// nothing (a `get` after it lists today's policies alone), dry run, `--categorizer` or not;
/// `--force` applies it, saying so.
#[test]
fn apply_refuses_a_proposal_suggest_rejected_unless_forced() {
    let home = temp_home();
    let dir = home.path();
    let (current, week) = (two_queues(dir, false), two_queue_week(dir));
    let config = dir.join("executor-suggested.yaml");
    let suggest = suggest_ml(
        dir,
        &week,
        &current,
        &["-o", "policy", "--executor-config", config.to_str().unwrap()],
    );
    assert_eq!(suggest.status.code(), Some(1), "{}", format_output(&suggest));
    std::fs::write(dir.join("suggested.yaml"), &suggest.stdout).unwrap();
    let server = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    let run = |args: &[&str]| {
        retryctl(dir)
            .current_dir(dir)
            .env("ARMADA_URL", &server.url)
            .args(args)
            .output()
            .unwrap()
    };
    let today = run(&["apply", "-f", &format!("{current}policies.yaml")]);
    assert_eq!(today.status.code(), Some(0), "{}", format_output(&today));
    let policies = || {
        let get = run(&["get", "retrypolicies"]);
        assert_eq!(get.status.code(), Some(0), "{}", format_output(&get));
        String::from_utf8(get.stdout).unwrap()
    };
    let before = policies();
    assert_eq!(
        before,
        "NAME          RETRY LIMIT   DEFAULT   RULES\nbatch-today   3             Fail      1\nml-today      3             Retry     2\n"
    );
    let refused = "note: skipped `suggested.yaml` document 1: the executor's categorizer config is not a server resource; it goes in the executor's config (`errorCategories`)\n\
        error: `suggested.yaml` is a proposal suggest rejected: loses 10 jobs of queue batch today's policy saves \
        (`01m7zzbatch00`, `01m7zzbatch01`, `01m7zzbatch02`, `01m7zzbatch03`, `01m7zzbatch04` and 5 more); hint: propose with --keep-categorizer to keep today's categories as they are \
        (new ones only for failures none of them takes); --force to apply it\n";
    for args in [
        &["apply", "-f", "suggested.yaml"][..],
        &[
            "apply",
            "-f",
            "suggested.yaml",
            "--categorizer",
            "executor-suggested.yaml",
        ],
        &["apply", "-f", "suggested.yaml", "--dry-run"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", format_output(&out));
        assert_eq!(String::from_utf8_lossy(&out.stderr), refused, "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", format_output(&out));
        assert_eq!(policies(), before, "{args:?} wrote to the server");
    }
    let forced = run(&[
        "apply",
        "-f",
        "suggested.yaml",
        "--categorizer",
        "executor-suggested.yaml",
        "--force",
    ]);
    assert_eq!(forced.status.code(), Some(0), "{}", format_output(&forced));
    assert_eq!(
        String::from_utf8_lossy(&forced.stderr),
        "note: skipped `suggested.yaml` document 1: the executor's categorizer config is not a server resource; it goes in the executor's config (`errorCategories`)\n\
         warning: `suggested.yaml` is a proposal suggest rejected; applied as --force asks\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&forced.stdout),
        "retrypolicy/suggested created\nqueue/ml created\n"
    );
    drop(server);
}

/// The two halves, in order: a policy naming a category the executor's config does not
/// assign is refused by `apply --categorizer` (exit 1, nothing sent) until the config that
/// assigns it is the one given; `validate --upstream` says once that without one the
/// categories were not checked.
#[test]
fn apply_refuses_a_policy_before_its_categories_are_rolled_out() {
    let home = temp_home();
    let dir = home.path();
    let (current, week) = (two_queues(dir, false), two_queue_week(dir));
    let config = dir.join("executor-suggested.yaml");
    let config = config.to_str().unwrap();
    let suggest = suggest_ml(dir, &week, &current, &["-o", "policy", "--executor-config", config]);
    assert_eq!(suggest.status.code(), Some(1), "{}", format_output(&suggest));
    let proposal = dir.join("suggested.yaml");
    std::fs::write(&proposal, &suggest.stdout).unwrap();
    let written_policy = String::from_utf8(suggest.stdout.clone()).unwrap();
    let written = std::fs::read_to_string(dir.join("executor-suggested.yaml")).unwrap();
    // Headed by the verdict, as the policy is: the config may travel alone.
    let verdict = written_policy.lines().next().unwrap();
    assert!(
        verdict.starts_with("# verdict: reject (do not adopt): loses 10 jobs of queue batch"),
        "{verdict}"
    );
    assert_eq!(written.lines().next(), Some(verdict), "{written}");
    assert!(written.contains("application:\n  clusterId: ml-gpu-a\n"), "{written}");
    assert!(!written.contains("not a server resource"), "{written}");
    let server = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--dialect", "upstream"]);
    // The proposal is rejected (the check of the test above): `--force` so that the categories
    // are what is checked here.
    let apply = |categorizer: &str| {
        retryctl(dir)
            .env("ARMADA_URL", &server.url)
            .args(["apply", "--force", "-f"])
            .arg(&proposal)
            .args(["--categorizer", categorizer])
            .output()
            .unwrap()
    };
    // Today's policies on the server (the proposal's Queue lists `ml-today` too).
    let today = retryctl(dir)
        .env("ARMADA_URL", &server.url)
        .args(["apply", "-f", &format!("{current}policies.yaml")])
        .output()
        .unwrap();
    assert_eq!(today.status.code(), Some(0), "{}", format_output(&today));
    let deployed = format!("{current}executor.yaml");
    let refused = apply(&deployed);
    assert_eq!(refused.status.code(), Some(1), "{}", format_output(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "\nerror: the policies name categories `{deployed}` does not assign; nothing was sent:\n"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("never assigns category `s-"), "{stderr}");
    // Each rule named as the file writes it, at its line and column, as `validate --upstream
    // --categorizer` names it: `62:17 rules[0].onCategory`, never the design dialect's
    // `rules[0].onFailureCategory[0]`.
    let lines: Vec<&str> = written_policy.lines().collect();
    let prefix = format!("  {}: policy `suggested`: ", proposal.display());
    let mut named = 0;
    for l in stderr.lines().filter(|l| l.contains("never assigns category")) {
        let rest = l.strip_prefix(&prefix).unwrap_or_else(|| panic!("{l}"));
        let (at, rest) = rest.split_once(' ').unwrap();
        let (line, column) = at.split_once(':').unwrap_or_else(|| panic!("{l}"));
        let (line, column): (usize, usize) = (line.parse().unwrap(), column.parse().unwrap());
        assert!(
            rest.starts_with("rules[") && rest.contains("].onCategory: the categorizer"),
            "{l}"
        );
        let category = rest
            .split("never assigns category `")
            .nth(1)
            .unwrap()
            .split('`')
            .next()
            .unwrap();
        assert_eq!(lines[line - 1][column - 1..].trim_matches('"'), category, "{l}");
        assert!(lines[line - 1][..column - 1].ends_with("onCategory: "), "{l}");
        named += 1;
    }
    assert!(named > 0 && !stderr.contains("onFailureCategory"), "{stderr}");
    assert!(
        stderr.ends_with(
            "hint: roll out the executor config first, wait for the executor to run it, then apply the policy\n"
        ),
        "{stderr}"
    );
    assert!(refused.stdout.is_empty());
    let rolled_out = apply(&dir.join("executor-suggested.yaml").display().to_string());
    assert_eq!(rolled_out.status.code(), Some(0), "{}", format_output(&rolled_out));
    // The policy and its Queue without the executor's config `-o policy` writes before them.
    let policy_only = dir.join("policy-only.yaml");
    let documents: Vec<&str> = written_policy.split("\n---\n").collect();
    std::fs::write(&policy_only, documents[1..].join("\n---\n")).unwrap();
    let validate = retryctl(dir)
        .args(["validate", "--upstream", "-f"])
        .arg(&policy_only)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&validate.stderr).contains("note: the categories the policies name were not checked against an executor config: give the one the executor will run with `--categorizer FILE`\n"),
        "{}",
        format_output(&validate)
    );
    drop(server);
}
