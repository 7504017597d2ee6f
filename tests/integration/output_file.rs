//! `--output-file FILE` on `simulate`, `tune` and `merge` (docs/cli.md, "Writing a result to
//! a file"): FILE holds exactly what stdout would have, and is replaced exactly when the
//! command wrote a result (exit 0, 1 or 3); on a usage error, a refusal that prints nothing,
//! or SIGTERM or SIGHUP mid-run it stays as it was, and no temporary file is left beside it.
//! What is not a regular file is never renamed over: a device or a FIFO is written straight
//! through, a symbolic link's file is replaced and the link kept, a directory is exit 2.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
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

/// `simulate` of a large generated history read from a pipe that stays open, `--output-file
/// FILE`, started through `sh -c 'SETUP; exec retryctl …'`: returned once the temporary file
/// beside FILE shows the run has started, with the pipe's end still to close.
#[cfg(unix)]
fn started(d: &Path, home: &Path, file: &Path, setup: &str) -> (Child, ChildStdin) {
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let mut sh = Command::new("sh");
    // The signals the tests send end the child unless SETUP ignores one, whatever this test
    // run inherited (`nohup` ignores SIGHUP, and a shell cannot undo a signal ignored when it
    // started): set for `sh`, which `exec`s retryctl.
    crate::support::child::default_dispositions(&mut sh);
    let mut child = sh
        .current_dir(root())
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .arg("-c")
        .arg(format!("{setup}\nexec \"$0\" \"$@\""))
        .arg(bin)
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
        .arg(file)
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
    (child, stdin)
}

/// Sends `sig` to the child (its own pid: `sh` exec'd retryctl).
#[cfg(unix)]
fn send(child: &Child, sig: libc::c_int) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the child's own pid.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// A preempted pod (SIGTERM), a closed terminal or session (SIGHUP): the signal mid-run, while
/// `simulate` reads a history (here a stream that has not ended), ends it as the signal does
/// (a shell or Kubernetes reports 143, 129), FILE as it was, and the temporary file that was
/// beside it gone.
#[cfg(unix)]
#[test]
fn sigterm_or_sighup_mid_run_leaves_the_file_alone_and_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = temp_home();
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        for existed in [true, false] {
            let file = d.join("result.json");
            if existed {
                fs::write(&file, OLD).unwrap();
            } else {
                let _ = fs::remove_file(&file);
            }
            let (mut child, stdin) = started(d, home.path(), &file, ":");
            send(&child, sig);
            let status = crate::support::child::wait_within(&mut child, 60, &format!("signal {sig}"));
            drop(stdin);
            // What a shell (and Kubernetes) reports: 128 + the signal, or the code itself.
            let reported = status.code().unwrap_or_else(|| 128 + status.signal().unwrap());
            assert_eq!(reported, code, "signal {sig}: {status:?}");
            if existed {
                assert_eq!(fs::read(&file).unwrap(), OLD, "signal {sig}");
                assert_eq!(names(d), ["result.json"], "signal {sig}");
            } else {
                assert!(names(d).is_empty(), "signal {sig}: {:?}", names(d));
            }
        }
    }
}

/// A signal the parent ignores stays ignored (`nohup`, `trap '' INT`): SIGINT mid-run does
/// not end the run, which goes on to write its result into FILE, with no temporary file left.
#[cfg(unix)]
#[test]
fn an_ignored_sigint_stays_ignored_and_the_run_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = temp_home();
    let file = d.join("result.json");
    fs::write(&file, OLD).unwrap();
    let (mut child, stdin) = started(d, home.path(), &file, "trap '' INT");
    send(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "an ignored SIGINT ended the run");
    drop(stdin);
    let status = crate::support::child::wait_within(&mut child, 60, "the run past an ignored SIGINT");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let result: serde_json::Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(result["summary"]["jobs"], 20_000);
    assert_eq!(names(d), ["result.json"]);
}

/// Whether this process runs as root: renaming over `/dev/null` needs it, so only then can a
/// test see that it is not done.
#[cfg(unix)]
fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The history and policies of a small run whose result is a few lines of JSON.
const SMALL: [&str; 6] = [
    "simulate",
    "-f",
    "testdata/policies/valid",
    "--history",
    "testdata/histories/cuda-error.yaml",
    "-o",
];

/// `--output-file /dev/null` as root: the result is written into the device, which stays a
/// character device (a rename would leave a regular file at `/dev/null`, for every process on
/// the machine). Should it not, it is made again before the test fails.
#[cfg(unix)]
#[test]
fn dev_null_stays_a_character_device() {
    use std::os::unix::fs::FileTypeExt;

    // Run by anyone: a non-root user could not rename over /dev/null, but a write that went
    // through a temporary file in /dev would fail there (exit 1), which this catches too.
    let mut args = SMALL.to_vec();
    args.extend(["json", "--output-file", "/dev/null"]);
    let out = run(&args);
    let kind = fs::symlink_metadata("/dev/null").unwrap().file_type();
    if !kind.is_char_device() && is_root() {
        let _ = fs::remove_file("/dev/null");
        let path = std::ffi::CString::new("/dev/null").unwrap();
        // SAFETY: mknod(2) with a valid C string: /dev/null is character device 1:3.
        unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        panic!(
            "/dev/null was replaced by a {kind:?} (made again): {}",
            format_output(&out)
        );
    }
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(out.stdout.is_empty(), "{}", format_output(&out));
}

/// A FIFO gets the result, as a shell's `>` would write it (read here from a thread), and is
/// still a FIFO afterwards, with no temporary file beside it.
#[cfg(unix)]
#[test]
fn a_fifo_gets_the_bytes() {
    use std::os::unix::fs::FileTypeExt;

    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.display().to_string()).unwrap();
    // SAFETY: mkfifo(3) with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let reading = fifo.clone();
    std::thread::spawn(move || {
        // Blocks until retryctl opens the FIFO for writing; ends at its close.
        let _ = tx.send(fs::read(&reading));
    });
    let mut args = SMALL.to_vec();
    args.push("json");
    let plain = run(&args);
    assert_eq!(plain.status.code(), Some(0), "{}", format_output(&plain));
    let path = fifo.display().to_string();
    args.extend(["--output-file", &path]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(out.stdout.is_empty(), "{}", format_output(&out));
    let read = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the FIFO's reader got no end of file: it was never written")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&read), String::from_utf8_lossy(&plain.stdout));
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(dir.path()), ["fifo"]);
}

/// `/dev/stdout` is this process's descriptor 1, written straight through: into a pipe, and
/// into the regular file a shell's `>` opened, which stays the same file (same inode) with
/// the result in it, no temporary file beside it.
#[cfg(unix)]
#[test]
fn dev_stdout_is_written_through_the_descriptor() {
    use std::os::unix::fs::MetadataExt;

    let mut args = SMALL.to_vec();
    args.push("json");
    let plain = run(&args);
    assert_eq!(plain.status.code(), Some(0), "{}", format_output(&plain));
    args.extend(["--output-file", "/dev/stdout"]);
    let piped = run(&args);
    assert_eq!(piped.status.code(), Some(0), "{}", format_output(&piped));
    assert_eq!(piped.stdout, plain.stdout);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.json");
    let out = fs::File::create(&file).unwrap();
    let inode = out.metadata().unwrap().ino();
    let home = temp_home();
    let status = Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .current_dir(root())
        .env_clear()
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .args(&args)
        .stdout(out)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(fs::metadata(&file).unwrap().ino(), inode, "the file was replaced");
    assert_eq!(fs::read(&file).unwrap(), plain.stdout);
    assert_eq!(names(dir.path()), ["out.json"]);
}

/// A symbolic link (relative, into another directory) stays a link to the same place; the
/// file it leads to gets the result, and no temporary file is left in either directory.
#[cfg(unix)]
#[test]
fn a_symlink_is_kept_and_its_file_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (links, files) = (dir.path().join("links"), dir.path().join("files"));
    fs::create_dir(&links).unwrap();
    fs::create_dir(&files).unwrap();
    fs::write(files.join("result.json"), OLD).unwrap();
    let link = links.join("result.json");
    std::os::unix::fs::symlink("../files/result.json", &link).unwrap();
    let mut args = SMALL.to_vec();
    args.push("json");
    let plain = run(&args);
    let path = link.display().to_string();
    args.extend(["--output-file", &path]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", format_output(&out));
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("../files/result.json"));
    assert_eq!(fs::read(files.join("result.json")).unwrap(), plain.stdout);
    assert_eq!(names(&links), ["result.json"]);
    assert_eq!(names(&files), ["result.json"]);
}

/// A directory (named, or led to by a link) is a usage error naming it, before any work;
/// nothing is written in it.
#[test]
fn a_directory_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out");
    fs::create_dir(&target).unwrap();
    let mut args = SMALL.to_vec();
    args.push("json");
    let path = target.display().to_string();
    let mut with = args.clone();
    with.extend(["--output-file", &path]);
    let out = run(&with);
    assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("error: `--output-file {path}` is a directory; name a file, in it or elsewhere\n")
    );
    #[cfg(unix)]
    {
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("out", &link).unwrap();
        let link = link.display().to_string();
        let mut with = args.clone();
        with.extend(["--output-file", &link]);
        let out = run(&with);
        assert_eq!(out.status.code(), Some(2), "{}", format_output(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "error: `--output-file {link}` is a directory (it leads to `{}`); name a file, in it or elsewhere\n",
                dir.path().join("out").display()
            )
        );
    }
    assert!(names(&target).is_empty());
}
