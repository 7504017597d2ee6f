//! `suggest` reads a history file or directory twice (docs/reference/suggest.md): a file
//! written while its first pass reads it (its size or modification time changed), or one added
//! to the directory, is refused before the second pass, exit 3, naming the file — never a
//! comparison of another history than the one learned from.

#![cfg(target_os = "linux")]

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::support::{format_output, root, temp_home};

/// The planted history ten times over (other job ids), long enough that its first pass
/// takes a while, into `path`.
fn long_history(path: &Path) {
    let planted = fs::read_to_string(root().join("testdata/suggest/planted.jsonl")).unwrap();
    let mut text = String::new();
    for k in 0..10 {
        text.push_str(&planted.replace("{\"job\":{\"id\":\"job-", &format!("{{\"job\":{{\"id\":\"job-{k}-")));
    }
    fs::write(path, text).unwrap();
}

/// `suggest --history HISTORY` in `dir`, started.
fn started(dir: &Path, home: &Path, history: &str) -> Child {
    fs::copy(root().join("testdata/suggest/today.yaml"), dir.join("today.yaml")).unwrap();
    Command::new(assert_cmd::cargo::cargo_bin("retryctl"))
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .args(["suggest", "--baseline", "today.yaml", "--history", history])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `child` has `file` open: its first pass reading it (the second opens it only
/// after the check this tests, seconds later).
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

/// Its modification time moved (not a byte changed) while pass 1 reads it: refused.
#[test]
fn a_file_touched_between_the_passes_is_refused() {
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
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 3\n--- stdout\n--- stderr\n\
         error: `h.jsonl` changed between suggest's two passes (its size or modification time is not what it was): the comparison would not replay the history the proposal was learned from\n\n\
         hint: run suggest again once the history is complete (or give it a copy that does not change)\n"
    );
}

/// A file added to the directory while pass 1 reads it: refused, naming it.
#[test]
fn a_file_added_to_the_directory_between_the_passes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let home = temp_home();
    fs::create_dir(d.join("hist")).unwrap();
    long_history(&d.join("hist/a.jsonl"));
    let mut child = started(d, home.path(), "hist");
    reading(&mut child, &d.join("hist/a.jsonl"));
    fs::write(d.join("hist/b.jsonl"), "{\"job\":{\"id\":\"late\"},\"runs\":[{}]}\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        format_output(&out),
        "exit: 3\n--- stdout\n--- stderr\n\
         error: `hist/b.jsonl` changed between suggest's two passes (it was added to the directory): the comparison would not replay the history the proposal was learned from\n\n\
         hint: run suggest again once the history is complete (or give it a copy that does not change)\n"
    );
}
