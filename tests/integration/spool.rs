//! `suggest`'s copy of a history it reads once (docs/cli.md, "Signals and temporary files"):
//! made in `$TMPDIR` while its first pass reads stdin, with no name (an anonymous file), so
//! that nothing of it is left whatever ends the command: normally, an error, SIGTERM, SIGINT
//! or SIGHUP (which end the process as they would have: 143, 130, 129), and the signals no
//! handler can remove a file on (SIGKILL) or that retryctl does not handle (SIGQUIT,
//! SIGUSR1, SIGALRM). A signal ignored when retryctl starts stays ignored.

#![cfg(target_os = "linux")]

use std::fs;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::child::{default_dispositions, wait_within};
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

/// The files `child` holds open in `dir` that have no name there: what `/proc/PID/fd`
/// shows of a file made unlinked (`DIR/#123 (deleted)`) or unlinked since.
fn unnamed_in(child: &Child, dir: &Path) -> usize {
    let dir = fs::canonicalize(dir).unwrap();
    let Ok(fds) = fs::read_dir(format!("/proc/{}/fd", child.id())) else {
        return 0;
    };
    fds.filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter(|target| {
            let text = target.to_string_lossy();
            target.starts_with(&dir) && text.ends_with(" (deleted)")
        })
        .count()
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
    // The signals the tests send end the child unless a test ignores one below, whatever
    // this test run inherited (`nohup` ignores SIGHUP).
    default_dispositions(&mut cmd);
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
    while unnamed_in(&child, tmp) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no copy open in {}",
            tmp.display()
        );
        assert!(child.try_wait().unwrap().is_none(), "ended before the signal");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A moment more, for the copy to hold some of the history.
    std::thread::sleep(Duration::from_millis(100));
    assert!(child.try_wait().unwrap().is_none(), "ended before the signal");
    // Made, written to, and never named.
    assert!(names(tmp).is_empty(), "{:?}", names(tmp));
    (child, stdin, history[cut..].to_vec())
}

fn send(child: &Child, sig: libc::c_int) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the child's own pid.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// Each signal mid-run ends `suggest` as the signal does, and its copy is gone: those
/// retryctl handles (SIGTERM, SIGINT, SIGHUP), those it does not (SIGQUIT, SIGUSR1,
/// SIGALRM), and SIGKILL, which no process can act on.
#[test]
fn a_signal_mid_run_leaves_no_copy() {
    let home = temp_home();
    for sig in [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGKILL,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGALRM,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let (mut child, stdin, _) = started(tmp.path(), home.path(), None);
        send(&child, sig);
        let status = wait_within(&mut child, 60, &format!("signal {sig}"));
        drop(stdin);
        assert_eq!(status.signal(), Some(sig), "{status:?}");
        assert!(names(tmp.path()).is_empty(), "signal {sig}: {:?}", names(tmp.path()));
    }
}

/// Started with SIGHUP ignored (`nohup`), the run goes on past a SIGHUP with its copy open,
/// answers, and leaves nothing.
#[test]
fn an_ignored_sighup_stays_ignored_and_the_copy_goes_at_the_end() {
    let home = temp_home();
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mut stdin, rest) = started(tmp.path(), home.path(), Some(libc::SIGHUP));
    send(&child, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "an ignored SIGHUP ended the run");
    assert_eq!(unnamed_in(&child, tmp.path()), 1);
    stdin.write_all(&rest).unwrap();
    drop(stdin);
    let status = wait_within(&mut child, 60, "the run past an ignored SIGHUP");
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
