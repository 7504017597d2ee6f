//! Histories that are not regular files (docs/simulate.md, "Inputs"): a named pipe,
//! `<(zcat …)` (`/dev/fd/N`), `/dev/stdin`, a device. Each is read once, as stdin is, its
//! format told by its content whatever its name: `suggest` copies it for its second pass
//! instead of opening it again (which waited forever on a pipe), a JSON Lines stream named
//! `.yaml` is read as JSON Lines. The 64 MiB line limit holds on a stream that never ends
//! (`/dev/zero`): the run ends, saying so. `-f` reads its documents from a pipe too. A
//! descriptor of the process (`/dev/stdin`) is read by its content even when it is a regular
//! file (`< week.jsonl`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{format_output, retryctl, root, temp_home};

/// The planted history and today's policy, as `h.jsonl` and `today.yaml` in a directory.
fn planted() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = root().join("testdata/suggest");
    fs::copy(data.join("planted.jsonl"), dir.path().join("h.jsonl")).unwrap();
    fs::copy(data.join("today.yaml"), dir.path().join("today.yaml")).unwrap();
    dir
}

/// `retryctl` in `dir` as [`retryctl`] runs it, as a `std` command (whose child can be
/// killed when it runs too long).
fn spawnable(home: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("retryctl"));
    cmd.current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1");
    cmd
}

/// `mkfifo PATH`, the real command.
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Writes `bytes` into the named pipe `fifo` from a thread (its open waits for the reader),
/// as many times as it is opened for reading, up to `times`.
fn feed(fifo: PathBuf, bytes: Vec<u8>, times: usize) {
    std::thread::spawn(move || {
        for _ in 0..times {
            let Ok(mut f) = fs::OpenOptions::new().write(true).open(&fifo) else {
                return;
            };
            let _ = f.write_all(&bytes);
        }
    });
}

/// Runs `cmd` with `stdin` to its end, or kills it after `secs` seconds and fails (a run that
/// waits for input that never comes, or reads an endless one forever).
fn within(cmd: &mut Command, stdin: Stdio, secs: u64) -> Output {
    let mut child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as they come: a child blocked on a full pipe would never end.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            let err = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
            panic!("still running after {secs}s; stderr: {err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// `suggest --history FIFO` reads the pipe once (its second pass reads its own copy) and
/// tells JSON Lines by the content (the pipe is named `.yaml`): the proposal of the regular
/// file, and its verdict.
#[test]
fn suggest_reads_a_named_pipe_once_and_by_its_content() {
    let dir = planted();
    let d = dir.path();
    let home = temp_home();
    let args = |history: &str| {
        let mut c = spawnable(home.path(), d);
        c.args([
            "suggest",
            "--baseline",
            "today.yaml",
            "-o",
            "policy",
            "--history",
            history,
        ]);
        c
    };
    let file = args("h.jsonl").output().unwrap();
    assert_eq!(file.status.code(), Some(0), "{}", format_output(&file));
    let fifo = d.join("pipe.yaml");
    mkfifo(&fifo);
    // Twice at most: a second open (what waited forever) would get the history again and
    // still be caught by the comparison below.
    feed(fifo.clone(), fs::read(d.join("h.jsonl")).unwrap(), 1);
    let piped = within(&mut args("pipe.yaml"), Stdio::null(), 120);
    assert_eq!(format_output(&piped), format_output(&file));
}

/// `simulate --history <(cat FILE)` (bash's `/dev/fd/N`) and `--history /dev/stdin` replay
/// the JSON Lines as the file does, record for record.
#[cfg(unix)]
#[test]
fn process_substitution_and_dev_stdin_are_read_as_their_content() {
    let dir = planted();
    let d = dir.path();
    let home = temp_home();
    let base = ["simulate", "-f", "today.yaml", "-o", "jsonl", "--history"];
    let file = retryctl(home.path())
        .current_dir(d)
        .args(base)
        .arg("h.jsonl")
        .output()
        .unwrap();
    assert_eq!(file.status.code(), Some(0), "{}", format_output(&file));
    assert!(file.stdout.len() > 100_000);
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let substituted = within(
        Command::new("bash")
            .current_dir(d)
            .env_clear()
            .env("HOME", home.path())
            .env("NO_COLOR", "1")
            .arg("-c")
            .arg("\"$0\" simulate -f today.yaml -o jsonl --history <(cat h.jsonl)")
            .arg(&bin),
        Stdio::null(),
        120,
    );
    assert_eq!(format_output(&substituted), format_output(&file));
    let stdin = retryctl(home.path())
        .current_dir(d)
        .args(base)
        .arg("/dev/stdin")
        .pipe_stdin(d.join("h.jsonl"))
        .unwrap()
        .output()
        .unwrap();
    assert_eq!(format_output(&stdin), format_output(&file));
}

/// `--history /dev/stdin < h.jsonl`: stdin redirected from a regular file is read by its
/// content, as a pipe is, not as a file by its name (`/dev/stdin` says nothing of its format:
/// it was read as YAML). `simulate` replays it as the file; `suggest` copies it for its second
/// pass, with the file's proposal and verdict.
#[cfg(unix)]
#[test]
fn dev_stdin_redirected_from_a_file_is_read_by_its_content() {
    let dir = planted();
    let d = dir.path();
    let home = temp_home();
    for base in [
        &["simulate", "-f", "today.yaml", "-o", "jsonl", "--history"][..],
        &["suggest", "--baseline", "today.yaml", "-o", "policy", "--history"][..],
    ] {
        let file = spawnable(home.path(), d).args(base).arg("h.jsonl").output().unwrap();
        assert_eq!(file.status.code(), Some(0), "{base:?}: {}", format_output(&file));
        let redirected = within(
            spawnable(home.path(), d).args(base).arg("/dev/stdin"),
            Stdio::from(fs::File::open(d.join("h.jsonl")).unwrap()),
            120,
        );
        // Stderr whole; stdout (megabytes of records) compared without printing it.
        assert_eq!(
            (redirected.status.code(), String::from_utf8_lossy(&redirected.stderr)),
            (file.status.code(), String::from_utf8_lossy(&file.stderr)),
            "{base:?}"
        );
        assert!(
            redirected.stdout == file.stdout,
            "{base:?}: stdout differs from the file's"
        );
    }
}

/// `-f` reads its documents from a named pipe as from a file.
#[test]
fn policies_from_a_named_pipe() {
    let dir = planted();
    let d = dir.path();
    let fifo = d.join("policies");
    mkfifo(&fifo);
    feed(fifo.clone(), fs::read(d.join("today.yaml")).unwrap(), 1);
    let home = temp_home();
    let out = within(
        spawnable(home.path(), d).args(["validate", "-f", "policies"]),
        Stdio::null(),
        60,
    );
    assert_eq!(
        format_output(&out),
        "exit: 0\n--- stdout\nchecked 1 document in 1 file: 1 valid, 0 invalid\n--- stderr\n"
    );
}

/// `/dev/zero` is one line that never ends: past the 64 MiB limit and 64 MiB more with no line
/// end, the run stops reading and says so (exit 3: nothing could be replayed), as `--history
/// /dev/zero` and as stdin, for `simulate` and for `suggest`.
#[cfg(unix)]
#[test]
fn an_endless_line_ends_the_run() {
    let dir = planted();
    let d = dir.path();
    let home = temp_home();
    let said = "line longer than 64 MiB, with no line end in the 64 MiB after it: the rest of the input is not read";
    for (history, name) in [("/dev/zero", "/dev/zero"), ("-", "<stdin>")] {
        let zero = || Stdio::from(fs::File::open("/dev/zero").unwrap());
        let mut cmd = spawnable(home.path(), d);
        cmd.args(["simulate", "-f", "today.yaml", "--history", history]);
        let out = within(&mut cmd, zero(), 120);
        assert_eq!(out.status.code(), Some(3), "{}", format_output(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("error: {name}:1: {said}\n")
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).ends_with("  not simulated: 1 job with errors (reported on stderr)\n"),
            "{}",
            format_output(&out)
        );
        let mut cmd = spawnable(home.path(), d);
        cmd.args(["suggest", "--baseline", "today.yaml", "--history", history]);
        let out = within(&mut cmd, zero(), 120);
        assert_eq!(
            format_output(&out),
            format!(
                "exit: 3\n--- stdout\n--- stderr\nerror: {name}:1: {said}\nerror: no job could be replayed (1 entry not read): there is nothing to learn from\n"
            )
        );
    }
}
