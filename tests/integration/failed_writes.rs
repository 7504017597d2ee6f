//! Output that cannot be written is an error (docs/cli.md, "Output that cannot be written"):
//! every verb that prints, its stdout on `/dev/full` (each write fails with ENOSPC, as on a
//! full disk) or closed before it starts (`>&-`: EBADF), exits 1 naming the failure, where it
//! used to exit 0 with its document cut short (or never written); `--output-file /dev/full`
//! the same, naming the file. A closed pipe stays quiet (here, and cli_traps.rs).

#![cfg(target_os = "linux")]

use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::pg::WINDOW;
use crate::support::server::TestServer;
use crate::support::{root, temp_home};

const FULL: &str = "error: cannot write stdout: no space left on device\n";
const CLOSED: &str = "error: cannot write stdout: bad file descriptor\n";

/// Where a command's stdout goes: `/dev/full`, or nowhere (closed by the shell that starts
/// it, `>&-`).
#[derive(Debug, Clone, Copy)]
enum Stdout {
    Full,
    Closed,
}

impl Stdout {
    const BOTH: [Stdout; 2] = [Stdout::Full, Stdout::Closed];

    /// What the command says last.
    fn said(self) -> &'static str {
        match self {
            Stdout::Full => FULL,
            Stdout::Closed => CLOSED,
        }
    }
}

/// `retryctl ARGS` from `dir` (the repository root unless given), its stdout `to`: its exit
/// code and stderr.
fn run_to(to: Stdout, dir: &Path, home: &Path, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let mut cmd = match to {
        Stdout::Full => {
            let mut cmd = Command::new(bin);
            cmd.stdout(File::options().write(true).open("/dev/full").unwrap());
            cmd
        }
        // The shell closes descriptor 1, then runs retryctl in its place.
        Stdout::Closed => {
            let mut cmd = Command::new("/bin/sh");
            cmd.args(["-c", "exec \"$0\" \"$@\" >&-"]).arg(bin);
            cmd
        }
    };
    let out = cmd
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `retryctl ARGS` to `/dev/full`.
fn to_full(dir: &Path, home: &Path, env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    run_to(Stdout::Full, dir, home, env, args)
}

/// Exit 1, stderr ending in `last` (a verb may say things on stderr before, such as suggest's
/// verdict, and nothing after).
fn fails_naming(got: (Option<i32>, String), last: &str, what: &str) {
    let (code, stderr) = got;
    assert_eq!(code, Some(1), "{what}: {stderr}");
    assert!(
        stderr.ends_with(last) && !stderr[..stderr.len() - last.len()].contains("error: "),
        "{what}: stderr does not end in {last:?}, or names another error:\n{stderr}"
    );
}

#[test]
fn every_local_verb_that_prints_fails_on_a_full_or_closed_stdout() {
    let home = temp_home();
    let shards = tempfile::tempdir().unwrap();
    let run = [
        "simulate",
        "-f",
        "testdata/policies/valid",
        "--history",
        "testdata/histories/design-composition.yaml",
    ];
    let mut partials = Vec::new();
    for i in 0..2 {
        let shard = format!("{i}/2");
        let out = crate::support::retryctl(home.path())
            .args(run)
            .args(["--shard", &shard, "-o", "partial"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        let file = shards.path().join(format!("p{i}.json"));
        fs::write(&file, &out.stdout).unwrap();
        partials.push(file.to_str().unwrap().to_string());
    }
    let route = [
        "--history",
        "testdata/route/week.jsonl",
        "--baseline",
        "testdata/route/current/",
    ];
    let suggest = |o: &'static str| -> Vec<&str> {
        let mut v = vec!["suggest", "--queue", "ml"];
        v.extend(route);
        v.extend(["-o", o]);
        v
    };
    let mut tune = vec![
        "tune",
        "-f",
        "testdata/route/suggested.yaml",
        "--vary",
        "suggested:retryLimit=1..2",
    ];
    tune.extend(route);
    let mut merge = vec!["merge"];
    merge.extend(partials.iter().map(String::as_str));
    let mut simulate_json = run.to_vec();
    simulate_json.extend(["-o", "json"]);
    let emit = [
        "--emit",
        "kubernetes",
        "--shard-count",
        "2",
        "--image",
        "retryctl:0.1.0",
        "--volume",
        "data:/data",
    ];
    let mut simulate_emit = run.to_vec();
    simulate_emit.extend(emit);
    let config = home.path().join("config.yaml");
    fs::write(
        &config,
        "currentContext: here\ncontexts:\n  here:\n    armadaRestUrl: http://127.0.0.1:1\n",
    )
    .unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["validate", "-f", "testdata/policies/valid"],
        vec!["validate", "-f", "testdata/policies/valid", "-o", "json"],
        vec!["schema", "retrypolicy"],
        vec!["explain", "retrypolicy", "--recursive"],
        vec!["version", "--client"],
        vec!["completion", "bash"],
        run.to_vec(),
        simulate_json,
        suggest("table"),
        suggest("json"),
        suggest("policy"),
        tune,
        merge,
        simulate_emit,
        vec!["--config", config.to_str().unwrap(), "config", "view"],
        vec!["--config", config.to_str().unwrap(), "config", "get-contexts"],
        vec!["--config", config.to_str().unwrap(), "config", "current-context"],
        vec!["simulate", "--help"],
        vec!["--help"],
    ];
    for to in Stdout::BOTH {
        for args in &cases {
            let got = run_to(to, &root(), home.path(), &[], args);
            fails_naming(got, to.said(), &format!("{to:?}: {}", args.join(" ")));
        }
    }
    // `--output-file` written straight through (a device), named as given.
    let mut args = run.to_vec();
    args.extend(["--output-file", "/dev/full"]);
    let (code, stderr) = to_full(&root(), home.path(), &[], &args);
    assert_eq!(
        (code, stderr.as_str()),
        (Some(1), "error: cannot write `/dev/full`: no space left on device\n")
    );
}

/// `retryctl ARGS`, its stdout a new regular file in `dir` that can grow to 100 bytes only
/// (RLIMIT_FSIZE, SIGXFSZ ignored: each write past it fails with EFBIG, as a full disk fails
/// with ENOSPC): its exit code, stderr, and what the file holds.
fn to_small_file(dir: &Path, home: &Path, args: &[&str]) -> (Option<i32>, String, Vec<u8>) {
    use std::os::unix::process::CommandExt;
    let file = dir.join("out");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("retryctl"));
    cmd.args(args)
        .current_dir(root())
        .env_clear()
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(File::create(&file).unwrap())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit(2) and signal(2) only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 100,
                rlim_max: 100,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stderr, fs::read(&file).unwrap())
}

/// A regular file that cannot grow (a full disk): the same failure; `merge`, which writes
/// straight into stdout's file when it is one, takes back what it wrote.
#[test]
fn a_file_that_cannot_grow_is_a_failed_write_and_merge_takes_its_output_back() {
    const TOO_LARGE: &str = "error: cannot write stdout: file too large\n";
    let home = temp_home();
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, written) = to_small_file(dir.path(), home.path(), &["schema", "retrypolicy"]);
    assert_eq!((code, stderr.as_str()), (Some(1), TOO_LARGE));
    assert_eq!(written.len(), 100);
    let mut merge = vec!["merge".to_string()];
    let run = [
        "simulate",
        "-f",
        "testdata/policies/valid",
        "--history",
        "testdata/histories/design-composition.yaml",
    ];
    for i in 0..2 {
        let shard = format!("{i}/2");
        let out = crate::support::retryctl(home.path())
            .args(run)
            .args(["--shard", &shard, "-o", "partial"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::format_output(&out));
        let file = dir.path().join(format!("p{i}.json"));
        fs::write(&file, &out.stdout).unwrap();
        merge.push(file.to_str().unwrap().to_string());
    }
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    let (code, stderr, written) = to_small_file(dir.path(), home.path(), &merge);
    assert_eq!((code, stderr.as_str()), (Some(1), TOO_LARGE));
    assert_eq!(
        String::from_utf8_lossy(&written),
        "",
        "merge's output was not taken back"
    );
}

/// `history`, exporting from Lookout's REST API.
#[test]
fn history_fails_on_a_full_or_closed_stdout() {
    let stub = crate::history_rest::lookout_stub(3);
    let home = temp_home();
    let mut args = vec!["history", "--queue", "ml", "--lookout-url", &stub.url];
    args.extend(WINDOW);
    for to in Stdout::BOTH {
        fails_naming(
            run_to(to, &root(), home.path(), &[("ARMADA_TOKEN", "tok")], &args),
            to.said(),
            &format!("{to:?}: history"),
        );
    }
}

/// The server's verbs, against `retryctl serve`: what they did on the server is done (a
/// write is not taken back), and what they would have said of it is lost, so they fail.
#[test]
fn every_server_verb_that_prints_fails_on_a_full_or_closed_stdout() {
    for to in Stdout::BOTH {
        server_verbs_fail(to);
    }
}

/// [`every_server_verb_that_prints_fails_on_a_full_or_closed_stdout`] with stdout `to`, against
/// a server of its own (each verb's write is then the first).
fn server_verbs_fail(to: Stdout) {
    let server = TestServer::start();
    let home = temp_home();
    let env = [("ARMADA_URL", server.url.as_str())];
    let config = home.path().join("config.yaml");
    fs::write(
        &config,
        format!(
            "currentContext: here\ncontexts:\n  here:\n    armadaRestUrl: {}\n",
            server.url
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let changed = dir.path().join("infra.yaml");
    let infra = fs::read_to_string(root().join("testdata/policies/valid/infra.yaml")).unwrap();
    fs::write(&changed, infra.replacen("name: infra", "name: infra-2", 1)).unwrap();
    let changed = changed.to_str().unwrap();
    let cases: [&[&str]; 13] = [
        &["create", "-f", "testdata/policies/valid/infra.yaml"],
        &["apply", "-f", "testdata/policies/valid"],
        &["apply", "-f", changed, "--dry-run=client"],
        &["get", "retrypolicies"],
        &["get", "retrypolicy", "infra", "-o", "yaml"],
        &["get", "queues", "-o", "wide"],
        &["describe", "retrypolicy", "infra"],
        &["describe", "queue", "ml-queue"],
        &["diff", "-f", changed],
        &["update", "queue", "ml-queue", "--priority-factor", "2"],
        &["version"],
        &["delete", "retrypolicy", "backoff-override"],
        &["--config", config.to_str().unwrap(), "config", "view"],
    ];
    for args in cases {
        let got = run_to(to, &root(), home.path(), &env, args);
        fails_naming(got, to.said(), &format!("{to:?}: {}", args.join(" ")));
    }
}

/// A closed pipe is the reader having enough (`| head -c1`): exit 0, no error said, whatever
/// the command writes after it (here more than a pipe holds), as before.
#[test]
fn a_closed_pipe_stays_quiet() {
    let home = temp_home();
    for args in [
        &["completion", "bash"][..],
        &[
            "simulate",
            "-f",
            "testdata/policies/valid",
            "--history",
            "testdata/route/week.jsonl",
            "-o",
            "jsonl",
        ],
    ] {
        // retryctl's own status, said on stderr after the pipeline's reader has gone.
        let out = Command::new("/bin/sh")
            .args(["-c", "{ \"$0\" \"$@\"; echo \"exit: $?\" >&2; } | head -c1 >/dev/null"])
            .arg(assert_cmd::cargo::cargo_bin("retryctl"))
            .args(args)
            .current_dir(root())
            .env_clear()
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.ends_with("exit: 0\n") && !stderr.contains("error"),
            "{args:?}: {stderr}"
        );
    }
}
