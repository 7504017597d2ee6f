//! `retryctl tune --pick` (docs/tune.md "Writing the choice"): the pick is the template with the
//! candidate's values set, in its own dialect, ready for `apply -f`; a pick that loses a job
//! or breaks a constraint is refused unless `--force`, naming what it loses.

use std::fs;

use crate::simulate_report::{job, EXIT2, OK, QUEUE};
use crate::support::format_output;
use crate::tune::{run, setup, sweep};

/// The pick round-trips: its documents validate, and simulating them gives the candidate's
/// numbers (the invariant tests); here, they are the template with the value set, in its own
/// dialect, comments gone, ready for `apply -f`.
#[test]
fn pick_writes_the_template_with_the_values_set() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(
        dir.path(),
        &[
            "tune",
            "-f",
            "t",
            "--vary",
            "p:spec.retryLimit=1..3",
            "--vary",
            "p:spec.rules[2].retryLimit=unset,5",
            "--pick",
            "4",
            "-o",
            "yaml",
        ],
    );
    assert_eq!(
        format_output(&out),
        "exit: 0
--- stdout
apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: p
spec:
  retryLimit: 2
  backoff:
    initialDelay: 10s
    maxDelay: 1m
  rules:
  - action: Retry
    onConditions:
    - Preempted
  - action: Fail
    onExitCodes:
      operator: In
      values:
      - 2
  - action: Retry
    onFailureCategory:
    - cuda_error
    retryLimit: 5
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: q
priorityFactor: 1.0
retryPolicies:
- p
--- stderr
"
    );
    let file = dir.path().join("picked.yaml");
    fs::write(&file, &out.stdout).unwrap();
    let validated = run(dir.path(), &["validate", "-f", "picked.yaml"]);
    assert_eq!(validated.status.code(), Some(0), "{}", format_output(&validated));
    // A scheduler vary is said on stderr: `apply` does not take a scheduler config.
    let s = run(
        dir.path(),
        &[
            "tune",
            "-f",
            "t",
            "--vary",
            "scheduler:scheduling.retryPolicy.globalMaxRetries=3,4",
            "--pick",
            "2",
            "-o",
            "yaml",
        ],
    );
    assert!(String::from_utf8_lossy(&s.stderr).contains(
        "note: candidate 2 also sets the scheduler config (scheduling.retryPolicy.globalMaxRetries=4): set it in the scheduler's own config; `apply` does not take it"
    ));
}

/// `--pick ID` given the history runs the search first: a candidate that loses jobs the
/// baseline saves, or costs past `--max-compute`, is refused (exit 1, nothing written) with
/// the jobs, the constraints it breaks as the table's first line says them, and the
/// recommendation; `--force` writes it (the documents `--pick ID` without the history
/// writes) with the same words as a warning. The sweep above: 5 (3, Fail) loses `l1` and
/// `l2`; 6 is recommended.
#[test]
fn pick_of_a_candidate_that_loses_a_job_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let with = |extra: &[&str]| run(dir.path(), &[&sweep("t")[..], extra].concat());
    // Without the history: nothing replayed, nothing said.
    let varies = &sweep("t")[7..];
    let alone = run(
        dir.path(),
        &[&["tune", "-f", "t"][..], varies, &["--pick", "5", "-o", "yaml"]].concat(),
    );
    let documents = String::from_utf8(alone.stdout.clone()).unwrap();
    assert!(
        documents.contains("retryLimit: 3") && documents.contains("action: Fail"),
        "{documents}"
    );
    assert_eq!(
        format_output(&alone),
        format!("exit: 0\n--- stdout\n{documents}--- stderr\n")
    );
    assert_eq!(
        format_output(&with(&["--pick", "5", "-o", "yaml"])),
        "exit: 1\n--- stdout\n--- stderr\nerror: candidate 5 loses 2 jobs the baseline saves (`l1`, `l2`), over the constraint lost ≤ 0: pick another (the recommendation is candidate 6), or `--force` to write it\n"
    );
    assert_eq!(
        format_output(&with(&["--pick", "5", "-o", "yaml", "--force"])),
        format!("exit: 0\n--- stdout\n{documents}--- stderr\nwarning: candidate 5 loses 2 jobs the baseline saves (`l1`, `l2`), over the constraint lost ≤ 0; the recommendation is candidate 6\n")
    );
    // `--exit-code` means one thing with `--pick` too: a candidate is recommended.
    assert_eq!(
        with(&["--pick", "5", "-o", "yaml", "--force", "--exit-code"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        with(&["--pick", "6", "-o", "yaml", "--exit-code"]).status.code(),
        Some(1)
    );
    // The recommended candidate: no warning.
    let six = with(&["--pick", "6", "-o", "yaml"]);
    assert_eq!(
        format_output(&six),
        format_output(&with(&["--pick", "recommended", "-o", "yaml"]))
    );
    assert!(
        six.stderr.is_empty() && !six.stdout.is_empty(),
        "{}",
        format_output(&six)
    );
    // Within --max-lost 2 the loss is still said; past --max-compute 5h (costs in
    // `every_broken_constraint_is_listed`) so is the cost, and nothing is recommended.
    let lenient = with(&["--max-lost", "2", "--pick", "5", "-o", "yaml", "--force"]);
    assert_eq!(
        String::from_utf8_lossy(&lenient.stderr),
        "warning: candidate 5 loses 2 jobs the baseline saves (`l1`, `l2`); the recommendation is candidate 6\n"
    );
    let capped = with(&["--max-compute", "5h", "--pick", "3", "-o", "yaml", "--force"]);
    assert_eq!(capped.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&capped.stderr),
        "warning: candidate 3 loses 2 jobs the baseline saves (`l1`, `l2`), over the constraint lost ≤ 0, and costs +8h48m20s, over the constraint cost ≤ 5h; the recommendation is none\n"
    );
    let costly = with(&["--max-compute", "5h", "--pick", "2", "-o", "yaml", "--force"]);
    assert_eq!(
        String::from_utf8_lossy(&costly.stderr),
        "warning: candidate 2 costs +6h, over the constraint cost ≤ 5h; the recommendation is none\n"
    );
    // A shard cannot say what a candidate loses: refused before any work, exit 2.
    assert_eq!(
        format_output(&with(&["--pick", "5", "-o", "yaml", "--shard", "1/4"])),
        "exit: 2\n--- stdout\n--- stderr\nerror: `--pick 5` with `--shard 1/4` and a history: a shard's jobs alone cannot say what candidate 5 loses against the baseline; give `--pick 5` without the history and `--shard`, or search without `--shard`\n"
    );
}

/// The warning names the first five lost jobs in the history's order, and counts the rest.
#[test]
fn pick_names_five_lost_jobs_at_most() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let lines: Vec<String> = (1..=7).map(|i| job(&format!("lost{i}"), &[EXIT2, OK])).collect();
    fs::write(dir.path().join("h.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = run(
        dir.path(),
        &[&sweep("t")[..], &["--pick", "1", "-o", "yaml", "--force"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: candidate 1 loses 7 jobs the baseline saves (`lost1`, `lost2`, `lost3`, `lost4`, `lost5` and 2 more), over the constraint lost ≤ 0; the recommendation is none\n"
    );
}

/// A vary that makes a rule `Fail` drops the rule's `mutate` (and whatever else a `Fail` rule
/// cannot use), so that the picked documents pass `validate --strict`; `Retry` keeps it.
#[test]
fn a_picked_fail_rule_has_no_mutate_and_passes_validate_strict() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("m")).unwrap();
    fs::write(
        dir.path().join("m/p.yaml"),
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: p}\nspec:\n  retryLimit: 3\n  rules:\n    - action: Retry\n      onFailureCategory: [cuda_error]\n      mutate: {affinity: {avoidSameNode: true}}\n    - {action: Retry, onConditions: [Preempted]}\n",
    )
    .unwrap();
    fs::write(dir.path().join("m/q.yaml"), QUEUE).unwrap();
    let strict = |file: &str| run(dir.path(), &["validate", "--strict", "-f", file]);
    let template = strict("m");
    assert_eq!(template.status.code(), Some(0), "{}", format_output(&template));
    let pick = |id: &str| {
        let out = run(
            dir.path(),
            &[
                "tune",
                "-f",
                "m",
                "--vary",
                "p:spec.rules[0].action=Retry,Fail",
                "--pick",
                id,
                "-o",
                "yaml",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
        let file = format!("picked-{id}.yaml");
        fs::write(dir.path().join(&file), &out.stdout).unwrap();
        (String::from_utf8(out.stdout).unwrap(), file)
    };
    let (retry, _) = pick("1");
    assert!(
        retry.contains("    mutate:\n      affinity:\n        avoidSameNode: true\n"),
        "{retry}"
    );
    let (fail, file) = pick("2");
    assert_eq!(
        fail,
        "apiVersion: armadaproject.io/v1
kind: RetryPolicy
metadata:
  name: p
spec:
  retryLimit: 3
  rules:
  - action: Fail
    onFailureCategory:
    - cuda_error
  - action: Retry
    onConditions:
    - Preempted
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: q
priorityFactor: 1.0
retryPolicies:
- p
"
    );
    let validated = strict(&file);
    assert_eq!(validated.status.code(), Some(0), "{}", format_output(&validated));
}

/// No number to copy: `--pick template` is the candidate whose varied values are the
/// template's own as written (here `retryLimit: 3` and rule 1's `Fail`: candidate 5), with or
/// without the search; when no vary lists the template's value, exit 1 and nothing written.
#[test]
fn pick_template_is_the_candidate_with_the_template_s_own_values() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let varies = [
        "--vary",
        "p:spec.retryLimit=1..3",
        "--vary",
        "p:spec.rules[1].action=Fail,Retry",
    ];
    let pick = |base: &[&str], id: &str| run(dir.path(), &[base, &varies[..], &["--pick", id, "-o", "yaml"]].concat());
    let plain = ["tune", "-f", "t"];
    let by_id = pick(&plain, "5");
    assert_eq!(by_id.status.code(), Some(0), "{}", format_output(&by_id));
    assert_eq!(format_output(&pick(&plain, "template")), format_output(&by_id));
    let searched = [
        "tune",
        "-f",
        "t",
        "--baseline",
        "old",
        "--history",
        "h.jsonl",
        "--max-contradictions",
        "100%",
    ];
    assert_eq!(
        format_output(&pick(&searched, "template")),
        format_output(&pick(&searched, "5"))
    );
    let refused = |vary: &str, said: &str| {
        let out = run(
            dir.path(),
            &["tune", "-f", "t", "--vary", vary, "--pick", "template", "-o", "yaml"],
        );
        assert_eq!(
            format_output(&out),
            format!("exit: 1\n--- stdout\n--- stderr\nerror: `--pick template`: no candidate has the template's own values: the template {said}, a value its `--vary` does not list (add it, or pick a candidate by its id)\n")
        );
    };
    refused("p:spec.retryLimit=1..2", "sets `p:spec.retryLimit` to `3`");
    refused("p:spec.backoff.jitter=0.1,0.5", "leaves `p:spec.backoff.jitter` unset");
}

/// A pick is never cleaner than its search: where the search finds the baseline does not
/// explain the record (9 of the 16 jobs contradict `old`, past the default 1%), `--pick ID`
/// and `--pick template` are refused as `--pick recommended` is (exit 1, nothing written);
/// `--force` writes the pick headed by that reject verdict and says so, and `apply` then
/// refuses the file unless forced. The README's route (`--pick template -o yaml > file`) so
/// never turns a search that rejects into a file `apply` takes.
#[test]
fn a_pick_whose_search_does_not_explain_the_record_is_refused_or_headed_by_its_reject() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let strict = &sweep("t")[..11];
    let pick = |id: &str, extra: &[&str]| run(dir.path(), &[strict, &["--pick", id, "-o", "yaml"], extra].concat());
    let reasons = "the baseline does not explain the record: 9 jobs contradict it; is it what the cluster ran?";
    let hint = "hint: export the history of the policy the cluster ran (or give it as --baseline), raise --max-contradictions, or --force to write the candidate headed by a reject verdict";
    for (id, n) in [("6", "6"), ("template", "5")] {
        assert_eq!(
            format_output(&pick(id, &[])),
            format!("exit: 1\n--- stdout\n--- stderr\nerror: candidate {n} is not written: {reasons}\n\n{hint}\n"),
            "{id}"
        );
    }
    assert_eq!(
        format_output(&pick("recommended", &[])),
        format!("exit: 1\n--- stdout\n--- stderr\nerror: no candidate is recommended: {reasons}\n")
    );
    // Forced: the documents `--pick 5` writes without the history, headed by the verdict.
    let alone = run(
        dir.path(),
        &[&["tune", "-f", "t"][..], &strict[7..], &["--pick", "5", "-o", "yaml"]].concat(),
    );
    let documents = String::from_utf8(alone.stdout).unwrap();
    let forced = pick("template", &["--force"]);
    assert_eq!(
        format_output(&forced),
        format!(
            "exit: 0\n--- stdout\n# verdict: reject (do not adopt): {reasons}\n{documents}--- stderr\n\
             warning: candidate 5 is written headed by a reject verdict ({reasons}): `apply` refuses it unless --force\n\
             warning: candidate 5 loses 2 jobs the baseline saves (`l1`, `l2`), over the constraint lost ≤ 0; the recommendation is none\n"
        )
    );
    fs::write(dir.path().join("picked.yaml"), &forced.stdout).unwrap();
    let applied = run(
        dir.path(),
        &["apply", "-f", "picked.yaml", "--armada-url", "http://127.0.0.1:1"],
    );
    assert_eq!(
        format_output(&applied),
        format!("exit: 1\n--- stdout\n--- stderr\nerror: `picked.yaml` is a proposal suggest rejected: {reasons}; --force to apply it\n")
    );
    // Within the limit the search's baseline explains the record: written clean.
    let lenient = pick("6", &["--max-contradictions", "100%"]);
    assert_eq!(lenient.status.code(), Some(0), "{}", format_output(&lenient));
    assert!(lenient.stderr.is_empty(), "{}", format_output(&lenient));
    assert!(!String::from_utf8(lenient.stdout).unwrap().contains("verdict"));
}

/// A template headed by a reject verdict (a proposal `suggest` rejected, copied to the
/// template) heads every pick of it with that verdict, with or without a history, and says so:
/// `apply` refuses what it writes unless forced.
#[test]
fn a_pick_of_a_rejected_template_carries_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let verdict = "# verdict: reject (do not adopt): loses 1 job today's policy saves (`l1`)\n";
    let template = fs::read_to_string(dir.path().join("t/p.yaml")).unwrap();
    fs::write(
        dir.path().join("t/p.yaml"),
        format!("# edited by bob\n\n{verdict}{template}"),
    )
    .unwrap();
    let varies = &sweep("t")[7..11];
    let alone = run(
        dir.path(),
        &[&["tune", "-f", "t"][..], varies, &["--pick", "template", "-o", "yaml"]].concat(),
    );
    let out = String::from_utf8(alone.stdout.clone()).unwrap();
    assert!(
        out.starts_with(verdict) && out[verdict.len()..].starts_with("apiVersion: "),
        "{out}"
    );
    assert_eq!(
        String::from_utf8(alone.stderr).unwrap(),
        "warning: candidate 5 is written headed by a reject verdict (loses 1 job today's policy saves (`l1`)): `apply` refuses it unless --force\n"
    );
    let searched = run(
        dir.path(),
        &[&sweep("t")[..], &["--pick", "recommended", "-o", "yaml"]].concat(),
    );
    assert_eq!(searched.status.code(), Some(0), "{}", format_output(&searched));
    assert!(String::from_utf8(searched.stdout.clone()).unwrap().starts_with(verdict));
    fs::write(dir.path().join("picked.yaml"), &alone.stdout).unwrap();
    let applied = run(
        dir.path(),
        &["apply", "-f", "picked.yaml", "--armada-url", "http://127.0.0.1:1"],
    );
    assert_eq!(applied.status.code(), Some(1), "{}", format_output(&applied));
}
