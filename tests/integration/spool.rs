//! `suggest`'s copy of a history it reads once (docs/cli.md, "Signals and temporary files"):
//! made in `$TMPDIR` while its first pass reads stdin, and gone when the command ends —
//! normally, on an error, and on SIGTERM, SIGINT or SIGHUP, which then end the process as
//! they would have (143, 130, 129). A signal ignored when retryctl starts stays ignored.

#![cfg(unix)]

use std::fs;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{root, temp_home};

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `suggest --history -` with `$TMPDIR` set to `tmp` (and `ignored`, a signal set to be
/// ignored before it starts, as `nohup` does), given the first half of the planted history
/// on a pipe that stays open: returned once its copy of the history is in `tmp`, with the
/// pipe and the rest of the history.
fn started(tmp: &Path, home: &Path, ignored: Option<libc::c_int>) -> (Child, ChildStdin, Vec<u8>) {
    let data = root().join("testdata/suggest");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("retryctl"));
    cmd.current_dir(&data)
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("TMPDIR", tmp)
        .args(["suggest", "--baseline", "today.yaml", "--history", "-", "-o", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(sig) = ignored {
        // SAFETY: signal(2) only, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(sig, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let history = fs::read(data.join("planted.jsonl")).unwrap();
    let half = history.len() / 2;
    let cut = half + history[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&history[..cut]).unwrap();
    let start = Instant::now();
    while !names(tmp)
        .iter()
        .any(|n| n.starts_with("retryctl-suggest-") && n.ends_with(".copy"))
    {
        assert!(start.elapsed() < Duration::from_secs(60), "no copy: {:?}", names(tmp));
        assert!(child.try_wait().unwrap().is_none(), "ended before the signal");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The copy is armed as soon as it is made: a moment for that, well past it.
    std::thread::sleep(Duration::from_millis(100));
    assert!(child.try_wait().unwrap().is_none(), "ended before the signal");
    (child, stdin, history[cut..].to_vec())
}

fn send(child: &Child, sig: libc::c_int) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the child's own pid.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// Each signal mid-run ends `suggest` as the signal does, and its copy is gone.
#[test]
fn a_signal_mid_run_removes_the_copy() {
    let home = temp_home();
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let tmp = tempfile::tempdir().unwrap();
        let (mut child, stdin, _) = started(tmp.path(), home.path(), None);
        send(&child, sig);
        let status = child.wait().unwrap();
        drop(stdin);
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert!(names(tmp.path()).is_empty(), "signal {sig}: {:?}", names(tmp.path()));
    }
}

/// Started with SIGHUP ignored (`nohup`), the run goes on past a SIGHUP, answers, and its
/// copy is gone at its end.
#[test]
fn an_ignored_sighup_stays_ignored_and_the_copy_goes_at_the_end() {
    let home = temp_home();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mut stdin, rest) = started(tmp.path(), home.path(), Some(libc::SIGHUP));
    send(&child, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "an ignored SIGHUP ended the run");
    assert_eq!(names(tmp.path()).len(), 1, "{:?}", names(tmp.path()));
    stdin.write_all(&rest).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(names(tmp.path()).is_empty(), "{:?}", names(tmp.path()));
}

/// A history none of whose entries can be read: the error (exit 3) and no copy left.
#[test]
fn an_error_leaves_no_copy() {
    let home = temp_home();
    let tmp = tempfile::tempdir().unwrap();
    let out = crate::support::retryctl(home.path())
        .current_dir(root().join("testdata/suggest"))
        .env("TMPDIR", tmp.path())
        .args(["suggest", "--baseline", "today.yaml", "--history", "-"])
        .write_stdin("{\"runs\":[{\"outcome\":\"x\"}]}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", crate::support::format_output(&out));
    assert!(String::from_utf8_lossy(&out.stderr)
        .ends_with("error: no job could be replayed (1 entry not read): there is nothing to learn from\n"));
    assert!(names(tmp.path()).is_empty(), "{:?}", names(tmp.path()));
}
