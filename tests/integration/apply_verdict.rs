//! `apply` finds suggest's reject verdict wherever it heads a document (docs/cli.md): a comment
//! line `# verdict: reject` among the comments before a document's first key, whatever stands
//! before it (blank lines, other comments, `---`, a byte-order mark, other documents of the
//! file), in a file, on stdin or in a directory, is refused (exit 1 naming the file, nothing
//! sent) unless `--force`. Against the real `retryctl serve` (in process, on 127.0.0.1:0).

use crate::declarative::policies;
use crate::support::server::TestServer;
use crate::support::Session;

const VERDICT: &str = "# verdict: reject (do not adopt): loses 1 job today's policy saves (`j1`)\n";

fn policy(name: &str) -> String {
    format!(
        "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: {name}\nretryLimit: 2\ndefaultAction: Fail\n"
    )
}

fn refused(file: &str) -> String {
    format!(
        "exit: 1\n--- stdout\n--- stderr\nerror: `{file}` is a proposal suggest rejected: loses 1 job today's policy saves (`j1`); --force to apply it\n"
    )
}

#[test]
fn a_reject_verdict_heading_any_document_is_refused_wherever_it_stands() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    let p = policy("proposed");
    let headed = [
        ("first-line.yaml", format!("{VERDICT}{p}")),
        ("blank-line.yaml", format!("\n{VERDICT}{p}")),
        ("blank-lines-crlf.yaml", format!("\r\n  \r\n{}", format!("{VERDICT}{p}").replace('\n', "\r\n"))),
        ("edited.yaml", format!("# edited by bob\n{VERDICT}{p}")),
        (
            "licence.yaml",
            format!("# Copyright 2026 The Armada Authors.\n#\n# Licensed under the Apache License.\n\n{VERDICT}# Proposed by retryctl suggest\n{p}"),
        ),
        ("marker.yaml", format!("---\n{VERDICT}{p}")),
        ("marker-comment.yaml", format!("--- {VERDICT}{p}")),
        ("directive.yaml", format!("%YAML 1.2\n---\n{VERDICT}{p}")),
        ("bom.yaml", format!("\u{feff}\n{VERDICT}{p}")),
        ("indented.yaml", format!("  {}{p}", VERDICT)),
        ("second-document.yaml", format!("{}---\n{VERDICT}{p}", policy("kept"))),
        ("after-end.yaml", format!("{}...\n{VERDICT}---\n{p}", policy("kept"))),
    ];
    for (name, text) in &headed {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let file = path.display().to_string();
        for dry in [false, true] {
            let mut args = vec!["apply", "-f", file.as_str()];
            if dry {
                args.push("--dry-run");
            }
            assert_eq!(s.run(&args), refused(&file), "{name} {args:?}");
        }
        assert_eq!(policies(&s), "", "{name} wrote to the server");
    }
    // On stdin.
    assert_eq!(
        s.run_stdin(&["apply", "-f", "-"], &format!("# edited by bob\n\n---\n{VERDICT}{p}")),
        refused("<stdin>")
    );
    // A directory: one file among others, none applied.
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a.yaml"), policy("a")).unwrap();
    std::fs::write(tree.join("b.yaml"), format!("# edited by bob\n{VERDICT}{p}")).unwrap();
    let b = tree.join("b.yaml").display().to_string();
    assert_eq!(s.run(&["apply", "-f", tree.to_str().unwrap()]), refused(&b));
    assert_eq!(policies(&s), "");
    // `--force` applies it, saying so once for the file.
    let second = dir.path().join("second-document.yaml").display().to_string();
    assert_eq!(
        s.run(&["apply", "-f", &second, "--force"]),
        format!(
            "exit: 0\n--- stdout\nretrypolicy/kept created\nretrypolicy/proposed created\n--- stderr\n\
             warning: `{second}` is a proposal suggest rejected; applied as --force asks\n"
        )
    );
}

/// What is not a verdict heading a document is applied as before: another verdict, and a
/// comment inside a document's content (after its first key), which heads nothing.
#[test]
fn comments_that_head_no_document_or_keep_a_proposal_are_applied() {
    let srv = TestServer::start();
    let s = Session::new(&srv.url);
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("adopt.yaml", format!("\n# verdict: adopt (a change worth making): 3 rescued\n{}", policy("adopt"))),
        (
            "inside.yaml",
            format!("apiVersion: armadaproject.io/v1beta1\n{VERDICT}kind: RetryPolicy\nname: inside\nretryLimit: 2\ndefaultAction: Fail\n"),
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = s.run(&["apply", "-f", path.to_str().unwrap()]);
        assert!(out.starts_with("exit: 0\n"), "{name}: {out}");
        assert!(out.ends_with("--- stderr\n"), "{name}: {out}");
    }
    assert_eq!(policies(&s), "retrypolicy/adopt\nretrypolicy/inside\n");
}
