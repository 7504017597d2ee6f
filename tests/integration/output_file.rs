//! `--output-file FILE` on `simulate`, `tune` and `merge` (docs/cli.md, "Writing a result to
//! a file"): FILE holds exactly what stdout would have, and is replaced exactly when the
//! command wrote a result (exit 0, 1 or 3); on a usage error, a refusal that prints nothing,
//! or SIGTERM mid-run it stays as it was, and no temporary file is left beside it.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{format_output, retryctl, root, temp_home};

const OLD: &[u8] = b"the previous result\n";

/// Runs `args` from the repository root.
fn run(args: &[&str]) -> Output {
    let home = temp_home();
    retryctl(home.path()).args(args).output().unwrap()
}

/// The names in `dir`, sorted: what a test expects to find there, and nothing else (no
/// temporary file).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A history of one job whose expectation the policies miss (exit 1), and with a line that
/// is not JSON after it (exit 3).
fn histories(dir: &Path) -> (String, String) {
    let job = r#"{"job":{"id":"e0","queue":"ml-queue"},"runs":[{"containers":[{"name":"main","exitCode":2}],"runFor":"1m"}],"expect":{"final":"Succeeded"}}"#;
    let failing = dir.join("failing.jsonl");
    fs::write(&failing, format!("{job}\n")).unwrap();
    let invalid = dir.join("invalid.jsonl");
    fs::write(&invalid, format!("{job}\nnot json\n")).unwrap();
    (failing.display().to_string(), invalid.display().to_string())
}

/// `args` with `--output-file FILE` (FILE holding [`OLD`] first) writes what `args` alone
/// prints on stdout, with the same exit status and stderr, and nothing on stdout.
fn replaced(dir: &Path, args: &[&str], code: i32) {
    let file = dir.join("result");
    fs::write(&file, OLD).unwrap();
    let plain = run(args);
    assert_eq!(plain.status.code(), Some(code), "{args:?}: {}", format_output(&plain));
    assert!(!plain.stdout.is_empty(), "{args:?}");
    let mut with = args.to_vec();
    let path = file.display().to_string();
    with.extend(["--output-file", &path]);
    let out = run(&with);
    assert_eq!(out.status.code(), Some(code), "{with:?}: {}", format_output(&out));
    assert!(out.stdout.is_empty(), "{with:?}: {}", format_output(&out));
    assert_eq!(out.stderr, plain.stderr, "{with:?}");
    assert_eq!(fs::read(&file).unwrap(), plain.stdout, "{with:?}");
    assert_eq!(names(dir), ["failing.jsonl", "invalid.jsonl", "result"], "{with:?}");
}

/// `args` with `--output-file FILE` exits `code` and leaves FILE as it was (or absent).
fn untouched(dir: &Path, args: &[&str], code: i32) {
    let file = dir.join("kept");
    let _ = fs::remove_file(&file);
    let without = names(dir);
    let mut with_file = without.clone();
    with_file.push("kept".to_string());
    with_file.sort();
    for existed in [true, false] {
        if existed {
            fs::write(&file, OLD).unwrap();
        } else {
            let _ = fs::remove_file(&file);
        }
        let mut with = args.to_vec();
        let path = file.display().to_string();
        with.extend(["--output-file", &path]);
        let out = run(&with);
        assert_eq!(out.status.code(), Some(code), "{with:?}: {}", format_output(&out));
        if existed {
            assert_eq!(fs::read(&file).unwrap(), OLD, "{with:?}");
            assert_eq!(names(dir), with_file, "{with:?}");
        } else {
            assert_eq!(names(dir), without, "{with:?}");
        }
    }
}

#[test]
fn simulate_replaces_the_file_on_0_1_and_3() {
    let dir = tempfile::tempdir().unwrap();
    let (failing, invalid) = histories(dir.path());
    let valid = "testdata/policies/valid";
    for (history, format, code) in [
        ("testdata/histories/cuda-error.yaml", "table", 0),
        ("testdata/histories/cuda-error.yaml", "json", 0),
        (&failing[..], "table", 1),
        (&invalid[..], "json", 3),
    ] {
        replaced(
            dir.path(),
            &["simulate", "-f", valid, "--history", history, "-o", format],
            code,
        );
    }
}

#[test]
fn tune_replaces_the_file() {
    let dir = tempfile::tempdir().unwrap();
    histories(dir.path());
    let args = [
        "tune",
        "-f",
        "docs/examples/estimates/new",
        "--baseline",
        "docs/examples/estimates/old",
        "--history",
        "docs/examples/estimates/history.jsonl",
        "--vary",
        "p:spec.retryLimit=1..2",
    ];
    replaced(dir.path(), &args, 0);
    let mut json = args.to_vec();
    json.extend(["-o", "json"]);
    replaced(dir.path(), &json, 0);
}

#[test]
fn a_usage_error_leaves_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (failing, _) = histories(dir.path());
    let valid = "testdata/policies/valid";
    // clap's, before the command runs; the command's own (`--backtest-at` it cannot read);
    // `tune` without a vary.
    untouched(
        dir.path(),
        &["simulate", "-f", valid, "--history", &failing, "--no-such-flag"],
        2,
    );
    untouched(
        dir.path(),
        &["simulate", "-f", valid, "--history", &failing, "--backtest-at", "soon"],
        2,
    );
    untouched(dir.path(), &["merge", "--output", "nonsense", "x.json"], 2);
    // Nothing to read: the command fails before any result.
    untouched(
        dir.path(),
        &["simulate", "-f", valid, "--history", "/nonexistent/history.jsonl"],
        3,
    );
}

/// Shards of two different histories: `merge` refuses them and prints nothing (exit 3), so
/// its FILE is left alone; the shards of one history merge into FILE what one process prints.
#[test]
fn merge_writes_its_result_and_leaves_the_file_alone_on_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (failing, _) = histories(d);
    let valid = "testdata/policies/valid";
    let cuda = "testdata/histories/cuda-error.yaml";
    let shard = |history: &str, i: u32, name: &str| {
        let path = d.join(name).display().to_string();
        let args = [
            "simulate",
            "-f",
            valid,
            "--history",
            history,
            "--shard",
            &format!("{i}/2"),
            "-o",
            "partial",
            "--output-file",
            &path,
        ];
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", format_output(&out));
        assert!(out.stdout.is_empty());
        path
    };
    let a = shard(cuda, 0, "a.json");
    let b = shard(cuda, 1, "b.json");
    let other = shard(&failing, 1, "other.json");

    let file = d.join("merged");
    let path = file.display().to_string();
    fs::write(&file, OLD).unwrap();
    let refused = run(&["merge", &a, &other, "--output-file", &path]);
    assert_eq!(refused.status.code(), Some(3), "{}", format_output(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("nothing was printed"));
    assert_eq!(fs::read(&file).unwrap(), OLD);

    let whole = run(&["simulate", "-f", valid, "--history", cuda]);
    let merged = run(&["merge", &a, &b, "--output-file", &path]);
    assert_eq!(merged.status.code(), whole.status.code(), "{}", format_output(&merged));
    assert_eq!(fs::read(&file).unwrap(), whole.stdout);
    assert_eq!(
        names(d),
        [
            "a.json",
            "b.json",
            "failing.jsonl",
            "invalid.jsonl",
            "merged",
            "other.json"
        ]
    );
}

/// A preempted pod: SIGTERM while `simulate` reads a history (here a stream that has not
/// ended) ends it as the signal does (a shell or Kubernetes reports 143), FILE as it was,
/// and the temporary file that was beside it gone.
#[cfg(unix)]
#[test]
fn sigterm_mid_run_leaves_the_file_alone_and_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = temp_home();
    for existed in [true, false] {
        let file = d.join("result.json");
        if existed {
            fs::write(&file, OLD).unwrap();
        } else {
            let _ = fs::remove_file(&file);
        }
        let bin = assert_cmd::cargo::cargo_bin("retryctl");
        let mut child = Command::new(bin)
            .current_dir(root())
            .env_clear()
            .env("HOME", home.path())
            .env("NO_COLOR", "1")
            .args([
                "simulate",
                "-f",
                "testdata/policies/valid",
                "--history",
                "-",
                "-o",
                "json",
            ])
            .arg("--output-file")
            .arg(&file)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A large generated history, still being written when the signal comes.
        let mut stdin = child.stdin.take().unwrap();
        let mut history = String::new();
        for i in 0..20_000 {
            history.push_str(&format!(
                r#"{{"job":{{"id":"j{i}","queue":"ml-queue"}},"runs":[{{"conditions":["Preempted"],"runFor":"5m"}},{{"outcome":"succeeded","runFor":"1h"}}]}}"#
            ));
            history.push('\n');
        }
        stdin.write_all(history.as_bytes()).unwrap();
        // The temporary file beside FILE shows the run has started.
        let start = Instant::now();
        while !names(d).iter().any(|n| n.ends_with(".tmp")) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no temporary file: {:?}",
                names(d)
            );
            assert!(child.try_wait().unwrap().is_none(), "ended before the signal");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        assert!(child.try_wait().unwrap().is_none(), "ended before the signal");
        let pid = i32::try_from(child.id()).unwrap();
        // SAFETY: kill(2) on the child's own pid.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = child.wait().unwrap();
        drop(stdin);
        // What a shell (and Kubernetes) reports: 128 + the signal, or the code itself.
        let reported = status.code().unwrap_or_else(|| 128 + status.signal().unwrap());
        assert_eq!(reported, 143, "{status:?}");
        if existed {
            assert_eq!(fs::read(&file).unwrap(), OLD);
            assert_eq!(names(d), ["result.json"]);
        } else {
            assert!(names(d).is_empty(), "{:?}", names(d));
        }
    }
}
