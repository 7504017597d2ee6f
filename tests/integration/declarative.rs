//! The files as the whole truth, against the real `retryctl serve` (in process, on
//! 127.0.0.1:0): `diff` in either dialect and the server's retry policies that no file names,
//! and `apply --prune`, which deletes them, never one a queue still uses (docs/cli.md).

use std::path::Path;

use crate::support::server::TestServer;
use crate::support::Session;

/// A v1beta1 policy that fits upstream, with limit `limit`.
fn flat(name: &str, limit: u32) -> String {
    format!(
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: {name}\nretryLimit: {limit}\ndefaultAction: Fail\nrules:\n  - action: Retry\n    onCategory: oom\n"
    )
}

fn queue(name: &str, policies: &str) -> String {
    format!("apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: {name}\npriorityFactor: 1\nretryPolicies: [{policies}]\n")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The names of the retry policies on the server.
pub(crate) fn policies(s: &Session) -> String {
    s.ok(&["get", "retrypolicies", "-o", "name"])
}

#[test]
fn diff_shows_a_v1beta1_file_as_todays_armada_and_lists_what_no_file_names() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", &flat("a", 2));
    s.ok(&["apply", "-f", &a]);
    s.ok(&["apply", "-f", &write(dir.path(), "b.yaml", &flat("b", 1))]);
    let a3 = write(dir.path(), "a.yaml", &flat("a", 3));
    let f = a3.as_str();
    // The file's own dialect by default: both sides flat, as today's Armada stores them.
    assert_eq!(
        s.run(&["diff", "-f", f]).replace(f, "FILE"),
        "exit: 1
--- stdout
--- server/retrypolicy/a
+++ FILE/retrypolicy/a
@@ -1,7 +1,7 @@
 apiVersion: armadaproject.io/v1beta1
 kind: RetryPolicy
 name: a
-retryLimit: 2
+retryLimit: 3
 defaultAction: Fail
 rules:
 - action: Retry
- retrypolicy/b (on the server, in no file)
--- stderr
"
    );
    // The design dialect when asked.
    assert_eq!(
        s.run(&["diff", "-f", f, "--api-version", "armadaproject.io/v1"])
            .replace(f, "FILE"),
        "exit: 1
--- stdout
--- server/retrypolicy/a
+++ FILE/retrypolicy/a
@@ -3,7 +3,7 @@
 metadata:
   name: a
 spec:
-  retryLimit: 2
+  retryLimit: 3
   defaultAction: Fail
   rules:
   - action: Retry
- retrypolicy/b (on the server, in no file)
--- stderr
"
    );
    // Server-only policies alone leave the exit code at 0.
    let a = write(dir.path(), "a.yaml", &flat("a", 2));
    assert_eq!(
        s.run(&["diff", "-f", &a]),
        "exit: 0\n--- stdout\n- retrypolicy/b (on the server, in no file)\n--- stderr\n"
    );
    assert_eq!(
        s.run(&["diff", "-f", &a, "--api-version", "v1"]),
        "exit: 2\n--- stdout\n--- stderr\nerror: invalid `--api-version` `v1`: expected `armadaproject.io/v1` or `armadaproject.io/v1beta1`\n"
    );
}

#[test]
fn diff_of_a_design_policy_in_todays_dialect_says_what_it_cannot_show() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let infra = "testdata/policies/valid/infra.yaml";
    s.ok(&["apply", "-f", infra]);
    assert_eq!(
        s.run(&["diff", "-f", infra, "--api-version", "armadaproject.io/v1beta1"]),
        "exit: 2
--- stdout
--- stderr
error: testdata/policies/valid/infra.yaml: retry policy `infra`: the server's cannot be shown as `armadaproject.io/v1beta1`: it uses `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`

hint: use `--api-version armadaproject.io/v1`
"
    );
    // A v1beta1 file against a server policy that v1beta1 cannot show: both in v1, said so.
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "infra.yaml", &flat("infra", 1));
    let out = s.run(&["diff", "-f", &f]).replace(&f, "FILE");
    assert!(
        out.starts_with("exit: 1\n--- stdout\n--- server/retrypolicy/infra\n+++ FILE/retrypolicy/infra\n"),
        "{out}"
    );
    assert!(
        out.contains("\n-  retryLimit: 10\n+  retryLimit: 1\n+  defaultAction: Fail\n"),
        "{out}"
    );
    assert!(
        out.ends_with("--- stderr\nnote: FILE: retrypolicy/infra: the server's uses `rules[0].onConditions`, `rules[0] (no category: upstream stores only category rules)`, `rules[0].antiAffinity`, which `armadaproject.io/v1beta1` cannot show: both sides are shown as `armadaproject.io/v1`\n"),
        "{out}"
    );
}

#[test]
fn prune_deletes_what_no_file_names_and_dry_run_only_says_so() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        s.ok(&[
            "apply",
            "-f",
            &write(dir.path(), &format!("{name}.yaml"), &flat(name, 1)),
        ]);
    }
    let a = write(dir.path(), "a.yaml", &flat("a", 1));
    for mode in ["--dry-run", "--dry-run=client", "--dry-run=server"] {
        let out = s.run(&["apply", "-f", &a, "--prune", mode]);
        assert!(
            out.starts_with("exit: 0\n--- stdout\nretrypolicy/a unchanged (dry run)\nretrypolicy/b pruned (dry run)\nretrypolicy/c pruned (dry run)\n--- stderr\n"),
            "{mode}: {out}"
        );
    }
    assert_eq!(policies(&s), "retrypolicy/a\nretrypolicy/b\nretrypolicy/c\n");
    // Without --prune, apply leaves them.
    assert_eq!(
        s.run(&["apply", "-f", &a]),
        "exit: 0\n--- stdout\nretrypolicy/a unchanged\n--- stderr\n"
    );
    assert_eq!(
        s.run(&["apply", "-f", &a, "--prune"]),
        "exit: 0\n--- stdout\nretrypolicy/a unchanged\nretrypolicy/b pruned\nretrypolicy/c pruned\n--- stderr\n"
    );
    assert_eq!(policies(&s), "retrypolicy/a\n");
    assert_eq!(s.run(&["diff", "-f", &a]), "exit: 0\n--- stdout\n--- stderr\n");
}

/// Someone else's queue uses a policy no file names: nothing is pruned and nothing is
/// written, the queue and the policy named; the files' own queue counts as they leave it.
#[test]
fn prune_never_deletes_a_policy_a_queue_uses() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let other = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        s.ok(&[
            "apply",
            "-f",
            &write(dir.path(), &format!("{name}.yaml"), &flat(name, 1)),
        ]);
    }
    // Another team's queue, made with flags, in no file of ours.
    other.ok(&["create", "queue", "theirs", "--retry-policy", "b,c"]);
    other.ok(&["create", "queue", "also", "--retry-policy", "c"]);
    let a2 = write(dir.path(), "a.yaml", &flat("a", 2));
    for extra in [&[][..], &["--dry-run"][..]] {
        let mut args = vec!["apply", "-f", &a2, "--prune"];
        args.extend(extra);
        assert_eq!(
            s.run(&args),
            "exit: 1
--- stdout
--- stderr
error: --prune cannot delete retry policies that no file names and queues still use: `b` (queue `theirs`), `c` (queues `also`, `theirs`); nothing was sent

hint: add the policy's file to `-f`, or detach it first: in the queue's file (`retryPolicies`) or with `retryctl update queue theirs --remove-retry-policy b`
",
            "{extra:?}"
        );
    }
    // Nothing changed: the limit is still 1, every policy is there.
    assert_eq!(policies(&s), "retrypolicy/a\nretrypolicy/b\nretrypolicy/c\n");
    assert!(s.ok(&["get", "rp", "a", "-o", "yaml"]).contains("retryLimit: 1\n"));
    other.ok(&["update", "queue", "also", "--retry-policy", "a"]);
    other.ok(&["update", "queue", "theirs", "--retry-policy", "b"]);
    assert_eq!(
        s.run(&["apply", "-f", &a2, "--prune"]),
        "exit: 1
--- stdout
--- stderr
error: --prune cannot delete retry policy `b`, which no file names: queue `theirs` still uses it; nothing was sent

hint: add the policy's file to `-f`, or detach it first: in the queue's file (`retryPolicies`) or with `retryctl update queue theirs --remove-retry-policy b`
"
    );
    // The files take the queue over and detach `b` and `c` from it: the run leaves no user.
    let q = write(dir.path(), "theirs.yaml", &queue("theirs", "a"));
    assert_eq!(
        s.run(&["apply", "-f", &a2, "-f", &q, "--prune"]),
        "exit: 0\n--- stdout\nretrypolicy/a configured\nqueue/theirs configured\nretrypolicy/b pruned\nretrypolicy/c pruned\n--- stderr\n"
    );
    assert_eq!(policies(&s), "retrypolicy/a\n");
}

/// Writers attach and detach the policies no file names while `apply --prune` runs: whatever
/// the interleaving, a pruned policy is used by no queue, a refusal names a queue, and no
/// queue ever lists a policy that is gone.
#[test]
fn prune_against_concurrent_writers_never_leaves_a_queue_without_its_policy() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", &flat("a", 1));
    for round in 0..4 {
        s.ok(&["apply", "-f", &a]);
        s.ok(&["apply", "-f", &write(dir.path(), "b.yaml", &flat("b", 1))]);
        s.ok(&[
            "apply",
            "-f",
            &write(dir.path(), "q.yaml", &queue(&format!("q{round}"), "a")),
        ]);
        let url = srv.url.clone();
        let queue_name = format!("q{round}");
        let writer = std::thread::spawn(move || {
            let w = Session::new(&url);
            // Attach `b` (the policy the files do not name), as another team would.
            w.run(&["update", "queue", &queue_name, "--add-retry-policy", "b"])
        });
        let out = s.run(&["apply", "-f", &a, "--prune"]);
        let attached = writer.join().unwrap();
        let listed = policies(&s);
        let queues = s.ok(&["get", "queues", "-o", "yaml"]);
        if out.starts_with("exit: 0\n") {
            assert!(out.contains("retrypolicy/b pruned\n"), "{out}");
            assert_eq!(listed, "retrypolicy/a\n");
            // The attach came too late: refused, the policy being gone.
            assert!(!attached.starts_with("exit: 0\n"), "{attached}");
        } else {
            assert!(out.starts_with("exit: 1\n"), "{out}");
            // Named by the client's check, or by serve's own refusal of the delete.
            assert!(
                out.contains(&format!("`q{round}`")) || out.contains(&format!("\"q{round}\"")),
                "{out}"
            );
            assert!(attached.starts_with("exit: 0\n"), "{attached}");
            assert_eq!(listed, "retrypolicy/a\nretrypolicy/b\n");
        }
        assert!(
            listed.contains("retrypolicy/b") || !queues.contains("- b\n"),
            "{queues}"
        );
        // Back to a known state for the next round.
        s.run(&["delete", "queue", &format!("q{round}")]);
        s.run(&["delete", "rp", "b"]);
    }
}

/// `apply --prune -f DIR` sees every file or prunes nothing (docs/cli.md), against a real
/// `retryctl serve --in-memory` process: a file of DIR it does not read (`beta.YAML`, whose
/// ending it does not read; `sub/gamma.yaml`, in a subdirectory, without `-R`) is said by
/// name, and the pruning, dry run or not, is refused before anything is sent: the policies
/// those files hold stay on the server.
#[test]
fn prune_refuses_when_a_file_of_the_directory_was_not_read() {
    let srv = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory"]);
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("policies");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    write(&d, "alpha.yaml", &flat("alpha", 1));
    let beta = write(&d, "beta.YAML", &flat("beta", 1));
    write(&d.join("sub"), "gamma.yaml", &flat("gamma", 1));
    let d = d.display().to_string();
    // On the server: all three (`-R` reads `sub/`, and `beta.YAML` named is read).
    s.ok(&["apply", "-R", "-f", &d, "-f", &beta]);
    assert_eq!(policies(&s), "retrypolicy/alpha\nretrypolicy/beta\nretrypolicy/gamma\n");
    let notes = format!(
        "note: skipped `{d}/beta.YAML`: a directory's files are read only when named `*.yaml`, `*.yml` or `*.json`\n\
         note: skipped `{d}/sub/gamma.yaml`: in a subdirectory, read only with `-R`\n"
    );
    // Without --prune, the files skipped are said, and the rest applied.
    assert_eq!(
        s.run(&["apply", "-f", &d]),
        format!("exit: 0\n--- stdout\nretrypolicy/alpha unchanged\n--- stderr\n{notes}")
    );
    let refused = format!(
        "exit: 1\n--- stdout\n--- stderr\n{notes}\
         error: --prune cannot tell which retry policies no file names: 2 files of `-f`'s directories were not read (`{d}/beta.YAML`, `{d}/sub/gamma.yaml`); nothing was sent\n\n\
         hint: give `{d}/beta.YAML` a `-f` of its own (a file named is read whatever its name ends in), or rename it to end in `.yaml`; add `-R` to read the subdirectories\n"
    );
    for dry in [None, Some("--dry-run")] {
        let mut args = vec!["apply", "-f", &d, "--prune"];
        args.extend(dry);
        assert_eq!(s.run(&args), refused, "{dry:?}");
        assert_eq!(
            policies(&s),
            "retrypolicy/alpha\nretrypolicy/beta\nretrypolicy/gamma\n",
            "{dry:?}"
        );
    }
    // A subdirectory alone, said and refused the same way, with `-R` as the step.
    std::fs::remove_file(&beta).unwrap();
    assert_eq!(
        s.run(&["apply", "-f", &d, "--prune", "--dry-run"]),
        format!(
            "exit: 1\n--- stdout\n--- stderr\nnote: skipped `{d}/sub/gamma.yaml`: in a subdirectory, read only with `-R`\n\
             error: --prune cannot tell which retry policies no file names: a file of `-f`'s directories was not read (`{d}/sub/gamma.yaml`); nothing was sent\n\n\
             hint: add `-R` to read the subdirectories\n"
        )
    );
    // Every file read: `beta`, in none, is pruned.
    assert_eq!(
        s.run(&["apply", "-R", "-f", &d, "--prune"]),
        "exit: 0\n--- stdout\nretrypolicy/alpha unchanged\nretrypolicy/gamma unchanged\nretrypolicy/beta pruned\n--- stderr\n"
    );
    assert_eq!(policies(&s), "retrypolicy/alpha\nretrypolicy/gamma\n");
}
