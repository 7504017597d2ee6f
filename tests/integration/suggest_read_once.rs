//! `suggest` reads a history file or directory once (docs/reference/suggest.md "Sources and
//! passes"): its second pass replays the first pass's copy, so a file touched while the first
//! pass reads it, or one added to the directory, changes nothing — the comparison is over the
//! history the proposal was learned from, as it is when nothing changes.

#![cfg(target_os = "linux")]

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use assert_cmd::Command as Cmd;

use crate::support::{format_output, root, temp_home};

/// The planted history ten times over (other job ids), long enough that its first pass
/// takes a while, into `path`. Its copies fail at the same times, ten jobs at once: read with
/// `--incidents off`, since this file's subject is what is read, not when jobs fail.
fn long_history(path: &Path) {
    let planted = fs::read_to_string(root().join("testdata/suggest/planted.jsonl")).unwrap();
    let mut text = String::new();
    for k in 0..10 {
        text.push_str(&planted.replace("{\"job\":{\"id\":\"job-", &format!("{{\"job\":{{\"id\":\"job-{k}-")));
    }
    fs::write(path, text).unwrap();
}

/// `suggest` of `history` against `today.yaml`, incidents off (the subject is the reading).
fn suggest_args(history: &str) -> [&str; 7] {
    [
        "suggest",
        "--baseline",
        "today.yaml",
        "--history",
        history,
        "--incidents",
        "off",
    ]
}

/// `suggest --history HISTORY` in `dir`, started.
fn started(dir: &Path, home: &Path, history: &str) -> Child {
    fs::copy(root().join("testdata/suggest/today.yaml"), dir.join("today.yaml")).unwrap();
    Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .args(suggest_args(history))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `child` has `file` open: its first pass reading it (the only pass that does).
fn reading(child: &mut Child, file: &Path) {
    let file = fs::canonicalize(file).unwrap();
    let fds = format!("/proc/{}/fd", child.id());
    let start = Instant::now();
    loop {
        let open = fs::read_dir(&fds)
            .map(|d| {
                d.filter_map(Result::ok)
                    .any(|e| fs::read_link(e.path()).is_ok_and(|l| l == file))
            })
            .unwrap_or(false);
        if open {
            return;
        }
        assert!(child.try_wait().unwrap().is_none(), "ended before it read the file");
        assert!(start.elapsed() < Duration::from_secs(60), "never opened");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What `suggest --history HISTORY` prints in `dir` when nothing changes.
fn undisturbed(dir: &Path, home: &Path, history: &str) -> String {
    let out = Cmd::cargo_bin("retryctl")
        .unwrap()
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .args(suggest_args(history))
        .output()
        .unwrap();
    format_output(&out)
}

/// Its modification time moved (not a byte changed) while pass 1 reads it: the same answer
/// as when nothing moved.
#[test]
fn a_file_touched_while_the_first_pass_reads_it_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = temp_home();
    long_history(&d.join("h.jsonl"));
    let mut child = started(d, home.path(), "h.jsonl");
    reading(&mut child, &d.join("h.jsonl"));
    fs::File::options()
        .write(true)
        .open(d.join("h.jsonl"))
        .unwrap()
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
        .unwrap();
    let out = format_output(&child.wait_with_output().unwrap());
    assert!(out.starts_with("exit: 0\n"), "{out}");
    assert_eq!(out, undisturbed(d, home.path(), "h.jsonl"));
}

/// A file added to the directory while pass 1 reads it (after the directory was listed): not
/// learned from, and not compared on either.
#[test]
fn a_file_added_to_the_directory_while_the_first_pass_reads_it_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = temp_home();
    fs::create_dir(d.join("hist")).unwrap();
    long_history(&d.join("hist/a.jsonl"));
    let mut child = started(d, home.path(), "hist");
    reading(&mut child, &d.join("hist/a.jsonl"));
    fs::write(d.join("hist/b.jsonl"), "{\"job\":{\"id\":\"late\"},\"runs\":[{}]}\n").unwrap();
    let out = format_output(&child.wait_with_output().unwrap());
    assert!(out.starts_with("exit: 0\n"), "{out}");
    fs::remove_file(d.join("hist/b.jsonl")).unwrap();
    assert_eq!(out, undisturbed(d, home.path(), "hist"));
}
