//! The client commands, tried as a new user with kubectl habits would, against the real `retryctl
//! serve`: apply of a directory converges, dry runs refuse what the real run would, `kind:
//! List` out and in, `TYPE/NAME` arguments, `delete -f`, several names in one `get`,
//! jsonpath / custom-columns / `--sort-by` / `--no-headers`, and `describe`.

use crate::support::server::TestServer;
use crate::support::Session;

const VALID: &str = "testdata/policies/valid";

fn ok_out(stdout: &str) -> String {
    format!("exit: 0\n--- stdout\n{stdout}--- stderr\n")
}

#[test]
fn apply_of_the_examples_directory_converges_on_an_empty_server() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let created = "retrypolicy/backoff-override created\nretrypolicy/container-targeting created\nretrypolicy/infra created\nretrypolicy/ml-training-oom created\nretrypolicy/ml-training created\nretrypolicy/ml-training-retries created\nqueue/ml-queue created\n";
    // The dry run says what the real run then does, in the same (policies first) order.
    assert_eq!(
        s.run(&["apply", "-f", VALID, "--dry-run=client"]),
        ok_out(&created.replace(" created\n", " created (dry run)\n"))
    );
    assert_eq!(s.run(&["apply", "-f", VALID]), ok_out(created));
    assert_eq!(
        s.run(&["apply", "-f", VALID]),
        ok_out(&created.replace(" created\n", " unchanged\n"))
    );
    // `update -f` of what the server already has changes nothing and says so.
    assert_eq!(
        s.run(&["update", "-f", &format!("{VALID}/infra.yaml")]),
        ok_out("retrypolicy/infra unchanged\n")
    );
}

/// A directory of what the cluster runs holds the executor's config beside the policies
/// (docs/categorizer.md): `apply` and `diff` set it aside with a note, as they do the
/// categorizer of a `suggest -o policy` file, and send the rest.
#[test]
fn apply_and_diff_of_a_directory_set_the_executors_config_aside() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let current = "testdata/route/current";
    let note = "note: skipped `testdata/route/current/executor.yaml` document 1: the executor's categorizer config is not a server resource; it goes in the executor's config (`errorCategories`)\n";
    assert_eq!(
        s.run(&["apply", "-f", current]),
        format!("exit: 0\n--- stdout\nretrypolicy/ml-today created\nqueue/ml created\n--- stderr\n{note}")
    );
    assert_eq!(
        s.run(&["diff", "-f", current]),
        format!("exit: 0\n--- stdout\n--- stderr\n{note}")
    );
}

#[test]
fn a_dry_run_refuses_what_the_real_run_would() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let queue = format!("{VALID}/ml-queue.yaml");
    // The queue attaches `infra` and `ml-training-oom`, which are neither in the batch nor on
    // the server: the dry run and the real run refuse it alike, before sending anything.
    let refused = "exit: 3\n--- stdout\n--- stderr\nerror: nothing was sent: testdata/policies/valid/ml-queue.yaml: queue `ml-queue` attaches retry policies `infra`, `ml-training-oom` that are neither in the input nor on the server\n\nhint: add the policy files to the command (`-f`), or create the policies first\n";
    assert_eq!(s.run(&["create", "-f", &queue, "--dry-run"]), refused);
    assert_eq!(s.run(&["create", "-f", &queue]), refused);
    assert_eq!(s.ok(&["get", "queues", "-o", "name"]), "");
    // An existing name: create's dry run fails like create.
    s.ok(&["create", "-f", &format!("{VALID}/infra.yaml")]);
    let out = s.run(&["create", "-f", &format!("{VALID}/infra.yaml"), "--dry-run"]);
    assert!(
        out.starts_with("exit: 1\n--- stdout\n--- stderr\nerror: testdata/policies/valid/infra.yaml: cannot create retry policy `infra`: "),
        "{out}"
    );
    // A missing name: update's dry run fails like update.
    let out = s.run(&["update", "-f", &format!("{VALID}/ml-training.yaml"), "--dry-run"]);
    assert!(out.starts_with("exit: 1\n"), "{out}");
    assert!(out.contains("retry policy `ml-training` does not exist"), "{out}");
    // With the missing policy in the batch, the queue passes, attached to one on the server.
    assert_eq!(
        s.run(&[
            "create",
            "-f",
            &format!("{VALID}/ml-training-oom.yaml"),
            "-f",
            &queue,
            "--dry-run"
        ]),
        ok_out("retrypolicy/ml-training-oom created (dry run)\nqueue/ml-queue created (dry run)\n")
    );
}

#[test]
fn an_unreachable_server_leaves_a_dry_run_offline_and_says_so() {
    let s = Session::new("http://127.0.0.1:9");
    let out = s.run(&["apply", "-f", VALID, "--dry-run"]);
    // Without the server, apply cannot tell created from configured: it says configured.
    assert!(
        out.starts_with("exit: 0\n--- stdout\nretrypolicy/backoff-override configured (dry run)\n"),
        "{out}"
    );
    assert!(
        out.ends_with("--- stderr\nnote: the server at `URL` is unreachable: checked the files alone; names and attached policies were not checked against the server\n"),
        "{out}"
    );
    // Alone, the queue's policies are outside the batch: said, not silently passed.
    let out = s.run(&["create", "-f", &format!("{VALID}/ml-queue.yaml"), "--dry-run"]);
    assert!(
        out.ends_with("note: queue `ml-queue` attaches `infra`, `ml-training-oom`, not in the input; it must exist on the server\n"),
        "{out}"
    );
}

#[test]
fn plural_get_is_one_list_that_apply_reads_back() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let empty = "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": []\n}\n";
    assert_eq!(s.run(&["get", "rp", "-o", "json"]), ok_out(empty));
    assert_eq!(
        s.run(&["get", "queues", "-o", "yaml"]),
        ok_out("apiVersion: v1\nkind: List\nitems: []\n")
    );
    s.ok(&["apply", "-f", VALID]);
    let json = s.ok(&["get", "rp", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["kind"], "List");
    assert_eq!(v["items"].as_array().unwrap().len(), 6);
    // Round trip: every item unchanged.
    let out = s.run_stdin(&["apply", "-f", "-"], &json);
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert_eq!(out.matches(" unchanged\n").count(), 6, "{out}");
    // Two names are plural too; one name is the object itself.
    let two: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "rp", "infra", "ml-training", "-o", "json"])).unwrap();
    assert_eq!(two["items"].as_array().unwrap().len(), 2);
    let one: serde_json::Value = serde_json::from_str(&s.ok(&["get", "rp", "infra", "-o", "json"])).unwrap();
    assert_eq!(one["kind"], "RetryPolicy");
    // A List in a file is checked like any documents: a bad item is named by its position.
    let out = s.run_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: armadaproject.io/v1\n  kind: RetryPolicy\n  metadata: {name: x}\n  spec: {retry_limit: 3}\n",
    );
    assert!(out.starts_with("exit: 3\n"), "{out}");
    assert!(
        out.contains("7:10 spec.retry_limit: unknown field `retry_limit`, did you mean `retryLimit`?"),
        "{out}"
    );
}

#[test]
fn several_names_print_the_found_ones_and_name_every_missing_one() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["apply", "-f", VALID]);
    assert_eq!(
        s.run(&["get", "rp", "nope", "infra", "ghost", "-o", "name"]),
        "exit: 1\n--- stdout\nretrypolicy/infra\n--- stderr\nerror: retry policies `nope`, `ghost` not found\n\nhint: list the existing ones with `retryctl get retrypolicies`\n"
    );
    assert_eq!(
        s.run(&["get", "queue/ml-queue", "retrypolicy/infra", "-o", "name"]),
        ok_out("queue/ml-queue\nretrypolicy/infra\n")
    );
    assert_eq!(
        s.run(&["get", "widgets"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid argument `widgets`: expected `TYPE/NAME` (`retrypolicy/widgets`, `queue/widgets`) or a type followed by names (`retrypolicy widgets`)\n"
    );
}

#[test]
fn names_from_get_feed_delete_and_delete_f_goes_queues_first() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["apply", "-f", VALID]);
    // `get -o name | xargs retryctl delete`, once no queue uses them.
    s.ok(&["delete", "queue/ml-queue"]);
    let names = s.ok(&["get", "rp", "-o", "name"]);
    let args: Vec<&str> = std::iter::once("delete").chain(names.lines()).collect();
    assert_eq!(s.run(&args), ok_out(&names.replace('\n', " deleted\n")));
    assert_eq!(s.ok(&["get", "rp", "-o", "name"]), "");
    // `delete -f` of the directory: the queue before the policies it attaches.
    s.ok(&["apply", "-f", VALID]);
    let out = s.run(&["delete", "-f", VALID, "--dry-run"]);
    assert!(
        out.starts_with(
            "exit: 0\n--- stdout\nqueue/ml-queue deleted (dry run)\nretrypolicy/backoff-override deleted (dry run)\n"
        ),
        "{out}"
    );
    let out = s.run(&["delete", "-f", VALID]);
    assert!(
        out.starts_with("exit: 0\n--- stdout\nqueue/ml-queue deleted\n"),
        "{out}"
    );
    assert_eq!(out.matches(" deleted\n").count(), 7, "{out}");
    assert_eq!(s.ok(&["get", "q", "-o", "name"]), "");
}

/// kubectl's habit: a name that cannot be deleted is reported and the others still go;
/// the run ends with exit 1.
#[test]
fn delete_goes_on_past_a_name_it_cannot_delete() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["apply", "-f", VALID]);
    // `infra` is attached to ml-queue, `nope` does not exist; the two around them go.
    assert_eq!(
        s.run(&["delete", "rp", "backoff-override", "infra", "nope", "ml-training-retries"]),
        "exit: 1\n--- stdout\nretrypolicy/backoff-override deleted\nretrypolicy/ml-training-retries deleted\n\
         --- stderr\nerror: cannot delete retry policy `infra`: it is attached to queue `ml-queue`; nothing was changed\n\n\
         hint: detach it from every queue and delete it with `retryctl delete retrypolicy infra --detach`, or detach it from one with `retryctl update queue ml-queue --remove-retry-policy infra`\n\
         error: cannot delete retry policy `nope`: it does not exist\n\nhint: pass `--ignore-not-found` to skip missing names\n"
    );
    assert_eq!(
        s.ok(&["get", "rp", "-o", "name"]),
        "retrypolicy/container-targeting\nretrypolicy/infra\nretrypolicy/ml-training\nretrypolicy/ml-training-oom\n"
    );
}

#[test]
fn jsonpath_custom_columns_sort_by_and_no_headers() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["apply", "-f", VALID]);
    assert_eq!(
        s.ok(&["get", "rp", "-o", "jsonpath={.items[*].metadata.name}"]),
        "backoff-override container-targeting infra ml-training ml-training-oom ml-training-retries"
    );
    assert_eq!(
        s.ok(&[
            "get",
            "rp",
            "-o",
            r#"jsonpath={range .items[?(@.spec.retryLimit >= 5)]}{.metadata.name}={.spec.retryLimit}{"\n"}{end}"#
        ]),
        "infra=10\nml-training=5\nml-training-oom=5\n"
    );
    assert_eq!(
        s.ok(&[
            "get",
            "rp",
            "-o",
            "custom-columns=NAME:.metadata.name,LIMIT:.spec.retryLimit",
            "--sort-by",
            ".spec.retryLimit",
            "--no-headers"
        ]),
        "container-targeting   3\nml-training-retries   3\nbackoff-override      4\nml-training           5\nml-training-oom       5\ninfra                 10\n"
    );
    assert_eq!(
        s.run(&["get", "rp", "-o", "jsonpath={.items[*"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid `-o jsonpath`: unclosed `{` in template `{.items[*`\n"
    );
}

#[test]
fn describe_tells_how_often_and_after_which_delays_and_who_is_affected() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["apply", "-f", VALID]);
    insta::assert_snapshot!(
        "describe_ml_training_oom",
        s.run(&["describe", "retrypolicy", "ml-training-oom"])
    );
    insta::assert_snapshot!("describe_queue", s.run(&["describe", "queue/ml-queue"]));
    // Offline, from the files, with a backoff schedule.
    insta::assert_snapshot!(
        "describe_offline_backoff",
        s.run(&["describe", "rp", "backoff-override", "-f", VALID])
    );
    assert_eq!(
        s.run(&["describe", "rp", "nope"]),
        "exit: 1\n--- stdout\n--- stderr\nerror: retry policy `nope` not found\n"
    );
}

/// The global cap's number says where it comes from. 20 is retryctl's own default
/// (what `simulate` assumes), not a scheduler's (upstream ships the engine off, 5).
#[test]
fn describe_queue_says_where_the_global_cap_comes_from() {
    let home = crate::support::temp_home();
    let last = |args: &[&str]| {
        let out = crate::support::retryctl(home.path())
            .args(["describe", "queue", "ml-queue", "-f", VALID])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        last(&[]),
        "Global cap:      20 retries per job (retryctl's default without --scheduler-config, not your scheduler's: upstream Armada ships `enabled: false, globalMaxRetries: 5`; pass --scheduler-config FILE for yours)"
    );
    let config = home.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "scheduling:\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 5\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    assert_eq!(
        last(&["--scheduler-config", config]),
        format!("Global cap:      5 retries per job (from {config})")
    );
}

/// A queue of today's Armada's policies is explained in its terms (docs/cli.md "describe"):
/// its first policy alone decides, with one retry limit and no backoff, and the others are
/// named as not evaluated; no global cap number without the scheduler's config.
#[test]
fn describe_queue_of_v1beta1_policies_speaks_upstreams_terms() {
    let home = crate::support::temp_home();
    let out = crate::support::retryctl(home.path())
        .args([
            "describe",
            "queue",
            "q-two",
            "-f",
            "testdata/histories/upstream/policies",
        ])
        .output()
        .unwrap();
    assert_eq!(
        crate::support::format_output(&out),
        [
            "exit: 0\n--- stdout\n",
            "Name:            q-two\n",
            "Priority factor: 1\n",
            "Cordoned:        no\n",
            "Dialect:         armadaproject.io/v1beta1 (today's Armada: the queue's first policy alone decides)\n",
            "Retry policies (only the first is evaluated):\n",
            "  1. strict: 1 rule, default Fail, retry limit 3 (a job's retries in all, whichever rules matched)\n",
            "     1. when the failure category is user-error: fail\n",
            "  2. retry-gpu: not evaluated (Armada evaluates only the first)\n",
            "Global cap:      the scheduler's globalMaxRetries, checked before any rule (not part of the queue; pass --scheduler-config FILE to see it)\n",
            "--- stderr\n",
        ]
        .concat()
    );
}

#[test]
fn a_queue_from_flags_dry_run_checks_its_policies_on_the_server() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    s.ok(&["create", "-f", &format!("{VALID}/infra.yaml")]);
    assert_eq!(
        s.run(&["create", "queue", "q", "--retry-policy", "infra,ghost", "--dry-run"]),
        "exit: 3\n--- stdout\n--- stderr\nerror: nothing was sent: the command line: queue `q` attaches retry policy `ghost` that is neither in the input nor on the server\n\nhint: add the policy files to the command (`-f`), or create the policies first\n"
    );
    assert_eq!(
        s.run(&["create", "queue", "q", "--retry-policy", "infra", "--dry-run"]),
        ok_out("queue/q created (dry run)\n")
    );
}

/// Where a retry may run is said once per rule: upstream's `mutate.affinity.avoidSameNode`
/// is the Anti-affinity line (the Placement line of a v1beta1 policy) (it was "none: a retry may run on the same node" followed by a
/// Mutation line saying the opposite), alone or with the design's `antiAffinity: node`.
#[test]
fn describe_says_once_where_a_retry_of_an_avoid_same_node_rule_may_run() {
    let home = crate::support::temp_home();
    let describe = |file: &std::path::Path| {
        let out = crate::support::retryctl(home.path())
            .args(["describe", "retrypolicy", "-f"])
            .arg(file)
            .output()
            .unwrap();
        crate::support::format_output(&out)
    };
    let v1beta1 = crate::support::root().join("testdata/policies/valid/upstream-v1beta1.yaml");
    // In today's Armada's terms (a v1beta1 file): the placement line alone says it.
    let out = describe(&v1beta1);
    let rule: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("  2. "))
        .take_while(|l| !l.starts_with("  3. "))
        .collect();
    assert_eq!(
        rule,
        [
            "  2. Retry when the failure category is gpu and the subcategory is transient",
            "     Retried:       within the policy's retry limit (3)",
            "     Placement:     avoidSameNode (mutate.affinity): a retry avoids every node the job already ran on",
        ],
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.yaml");
    std::fs::write(
        &both,
        "apiVersion: armadaproject.io/v1\nkind: RetryPolicy\nmetadata: {name: both}\nspec:\n  retryLimit: 2\n  \
         rules:\n    - action: Retry\n      onFailureCategory: [gpu]\n      antiAffinity: {mode: node}\n      \
         mutate: {affinity: {avoidSameNode: true}}\n",
    )
    .unwrap();
    let out = describe(&both);
    let rule: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("  1. ")).collect();
    assert_eq!(
        rule,
        [
            "  1. Retry when the failure category is gpu",
            "     Retried:       up to 2 times, 3 attempts in all (the policy's retryLimit)",
            "     Backoff:       none: every retry is scheduled at once (initialDelay 0s)",
            "     Anti-affinity: avoidSameNode (mutate.affinity): a retry avoids every node the job already \
             ran on, the one it last failed on (antiAffinity node) among them",
            "--- stderr",
        ],
        "{out}"
    );
}

/// A v1beta1 policy is explained as today's Armada runs it: one limit for the whole job, no
/// backoff, the global cap the scheduler's (a number only from `--scheduler-config`), and
/// only the queue's first policy evaluated.
#[test]
fn describe_of_a_v1beta1_policy_speaks_todays_armada() {
    let home = crate::support::temp_home();
    let dir = home.path();
    std::fs::write(
        dir.join("q.yaml"),
        "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: ml\npriorityFactor: 1\nretryPolicies: [other, ml-training-retries]\n---\napiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: other\ndefaultAction: Retry\n",
    )
    .unwrap();
    let describe = |extra: &[&str]| {
        crate::support::exchange(
            crate::support::retryctl(dir)
                .args(["describe", "rp", "ml-training-retries", "other", "-f"])
                .arg(crate::support::root().join(VALID).join("upstream-v1beta1.yaml"))
                .arg("-f")
                .arg(dir.join("q.yaml"))
                .args(extra),
        )
    };
    assert_eq!(
        describe(&[]),
        "exit: 0
--- stdout
Name:            ml-training-retries
Dialect:         armadaproject.io/v1beta1 (today's Armada: category rules, one retry limit, no backoff)
Used by queues:  ml (policy 2 of 2: Armada evaluates only the first, so not this one)
Retry limit:     3: a job is retried up to 3 times in all, 4 attempts, whichever rules matched
Global cap:      the scheduler's globalMaxRetries, checked before any rule (not part of the policy; pass --scheduler-config FILE to see it)
Default action:  Fail: a failure no rule matches fails the job
Backoff:         none: today's Armada requeues a retry at once
Rules (the first whose category matches a failure decides):
  1. Fail when the failure category is user-error
     The job fails at once, without retry.
  2. Retry when the failure category is gpu and the subcategory is transient
     Retried:       within the policy's retry limit (3)
     Placement:     avoidSameNode (mutate.affinity): a retry avoids every node the job already ran on
  3. Retry when the failure category is oom
     Retried:       within the policy's retry limit (3)
     Mutation:      the job's memory is multiplied by 1.5 at each retry (compounding)
  4. Retry when the failure category is oom-small
     Retried:       within the policy's retry limit (3)
     Mutation:      the job's memory grows by 512Mi at each retry

Name:            other
Dialect:         armadaproject.io/v1beta1 (today's Armada: category rules, one retry limit, no backoff)
Used by queues:  ml (its first policy, the one Armada evaluates)
Retry limit:     0: this policy never retries (an absent retryLimit is 0)
Global cap:      the scheduler's globalMaxRetries, checked before any rule (not part of the policy; pass --scheduler-config FILE to see it)
Default action:  Retry: a failure no rule matches is retried, within the retry limit
Backoff:         none: today's Armada requeues a retry at once
Rules:           <none>
--- stderr
"
    );
    let config = dir.join("scheduler.yaml");
    std::fs::write(
        &config,
        "scheduling:\n  retryPolicy:\n    enabled: true\n    globalMaxRetries: 5\n",
    )
    .unwrap();
    let out = describe(&["--scheduler-config", config.to_str().unwrap()]);
    assert!(
        out.contains(&format!(
            "\nGlobal cap:      globalMaxRetries 5 (from {}), checked before any rule\n",
            config.display()
        )),
        "{out}"
    );
    // No delay: nothing upstream cannot store (the exact output without the config is
    // asserted above).
    assert!(!out.contains(" after "), "{out}");
}
