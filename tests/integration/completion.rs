//! The checked-in completion scripts match what the binary generates.

use clap_complete::Shell;

use retryctl::commands::completion::{file_name, script};

use crate::support::{retryctl, root, temp_home};

const SHELLS: [Shell; 5] = [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell, Shell::Elvish];

/// Set RETRYCTL_UPDATE_COMPLETIONS=1 to rewrite the files instead of failing.
#[test]
fn completions_are_up_to_date() {
    let update = std::env::var_os("RETRYCTL_UPDATE_COMPLETIONS").is_some();
    let mut stale = Vec::new();
    for shell in SHELLS {
        let path = root().join("completions").join(file_name(shell));
        let expected = script(shell);
        let current = std::fs::read(&path).unwrap_or_default();
        if current != expected {
            if update {
                std::fs::write(&path, &expected).unwrap();
            } else {
                stale.push(path.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "completion scripts are stale: {stale:?}\nregenerate them with: RETRYCTL_UPDATE_COMPLETIONS=1 cargo test --test integration completions"
    );
}

#[test]
fn completion_command_prints_the_checked_in_script() {
    let home = temp_home();
    let out = retryctl(home.path()).args(["completion", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let file = std::fs::read(root().join("completions/retryctl.bash")).unwrap();
    assert_eq!(out.stdout, file);
}

/// What the shell gets for `words` (the program's name first, the word under the cursor
/// last) from `retryctl` run in completion mode, as clap_complete's bash script runs it:
/// `COMPLETE=bash retryctl -- WORDS...`, the cursor's index in `_CLAP_COMPLETE_INDEX`,
/// candidates one a line (`_CLAP_IFS`). As the exit code, the candidates that are not flags
/// (clap_complete offers the command's flags too when the word is empty) and stderr.
fn complete(home: &std::path::Path, env: &[(&str, &str)], words: &[&str]) -> String {
    let out = retryctl(home)
        .env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .env("_CLAP_IFS", "\n")
        .envs(env.iter().copied())
        .arg("--")
        .args(words)
        // Not a timed assertion: the guard against a completion that waits for a hung server
        // forever (its deadline is 1 s), so that such a bug fails instead of hanging the suite.
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('-')).collect();
    format!(
        "exit: {:?}\nnames: {names:?}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// [`complete`]'s answer with these names and nothing on stderr.
fn candidates(names: &[&str]) -> String {
    format!("exit: Some(0)\nnames: {names:?}\nstderr: ")
}

const TWO_POLICIES: &str = "apiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\nname: gpu-retries\n\
    retryLimit: 3\ndefaultAction: Fail\n---\napiVersion: armadaproject.io/v1beta1\nkind: RetryPolicy\n\
    name: oom-retries\nretryLimit: 2\ndefaultAction: Retry\n";

#[test]
fn names_complete_from_the_configured_server_over_rest_and_grpc() {
    let serve = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory", "--token", "s3cret"]);
    let home = temp_home();
    let url = serve.url.clone();
    let grpc = url.replace("http://", "grpc://");
    let run = |args: &[&str], stdin: &str| {
        let out = retryctl(home.path())
            .env("ARMADA_URL", &url)
            .env("ARMADA_TOKEN", "s3cret")
            .args(args)
            .write_stdin(stdin)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            crate::support::format_output(&out)
        );
    };
    run(&["create", "-f", "-"], TWO_POLICIES);
    run(&["create", "queue", "ml", "--retry-policy", "gpu-retries"], "");

    // The server, and its credentials, from the environment (REST).
    let env = [("ARMADA_URL", url.as_str()), ("ARMADA_TOKEN", "s3cret")];
    let both = candidates(&["gpu-retries", "oom-retries"]);
    for words in [
        &["retryctl", "get", "retrypolicy", ""][..],
        &["retryctl", "get", "rp", "oom-retries", ""],
        &["retryctl", "describe", "retrypolicies", ""],
        &["retryctl", "delete", "rp", "--detach", ""],
        &["retryctl", "create", "queue", "new", "--retry-policy", ""],
        &["retryctl", "update", "queue", "ml", "--retry-policy", ""],
        &["retryctl", "update", "queue", "ml", "--add-retry-policy", ""],
        &["retryctl", "update", "queue", "ml", "--remove-retry-policy", ""],
    ] {
        assert_eq!(complete(home.path(), &env, words), both, "{words:?}");
    }
    assert_eq!(
        complete(home.path(), &env, &["retryctl", "get", "rp", "o"]),
        candidates(&["oom-retries"])
    );
    // After a comma, the next name of the list.
    assert_eq!(
        complete(
            home.path(),
            &env,
            &["retryctl", "update", "queue", "ml", "--retry-policy", "gpu-retries,o"]
        ),
        candidates(&["gpu-retries,oom-retries"])
    );
    for words in [
        &["retryctl", "update", "queue", ""][..],
        &["retryctl", "get", "queues", ""],
        &["retryctl", "describe", "q", "m"],
        &["retryctl", "delete", "queue", ""],
    ] {
        assert_eq!(complete(home.path(), &env, words), candidates(&["ml"]), "{words:?}");
    }

    // gRPC, the address from the line's own `--armada-url`, wherever it stands.
    let token = [("ARMADA_TOKEN", "s3cret")];
    assert_eq!(
        complete(
            home.path(),
            &token,
            &["retryctl", "--armada-url", &grpc, "get", "retrypolicy", ""]
        ),
        both
    );
    assert_eq!(
        complete(
            home.path(),
            &token,
            &["retryctl", "update", "queue", "--armada-url", &grpc, ""]
        ),
        candidates(&["ml"])
    );
    // The config file's context, as the commands read it (its token too).
    let config = home.path().join("armadactl.yaml");
    std::fs::write(
        &config,
        format!("currentContext: main\ncontexts:\n  main:\n    armadaRestUrl: {url}\n    bearerToken: s3cret\n"),
    )
    .unwrap();
    assert_eq!(
        complete(
            home.path(),
            &[],
            &["retryctl", "--config", config.to_str().unwrap(), "get", "rp", ""]
        ),
        both
    );

    // Refused (no credentials): no names, and not a word on stderr.
    assert_eq!(
        complete(home.path(), &[("ARMADA_URL", &url)], &["retryctl", "get", "rp", ""]),
        candidates(&[])
    );
    // `-f` completes files, offline.
    assert_eq!(
        complete(
            home.path(),
            &[],
            &["retryctl", "apply", "-f", "testdata/policies/valid/ml-t"]
        ),
        candidates(&[
            "testdata/policies/valid/ml-training-oom.yaml",
            "testdata/policies/valid/ml-training.yaml"
        ])
    );
}

/// A server that does not answer, or is not there: no names, nothing on stderr (`-v`
/// included), and the completion returns (within its 1 s deadline, whatever `--timeout`).
#[test]
fn an_unreachable_or_silent_server_completes_nothing_and_says_nothing() {
    let home = temp_home();
    // Accepts connections (the kernel does, from its backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = silent.local_addr().unwrap();
    let closed = crate::support::pg::free_port();
    for url in [
        format!("http://{silent}"),
        format!("grpc://{silent}"),
        format!("http://127.0.0.1:{closed}"),
        format!("grpc://127.0.0.1:{closed}"),
    ] {
        for words in [
            &["retryctl", "-v", "--timeout", "1h", "get", "retrypolicy", ""][..],
            &["retryctl", "update", "queue", "--timeout", "1h", ""],
        ] {
            assert_eq!(
                complete(home.path(), &[("ARMADA_URL", &url)], words),
                candidates(&[]),
                "{url} {words:?}"
            );
        }
    }
}

#[test]
fn complete_without_words_prints_the_shells_registration_and_empty_is_an_ordinary_run() {
    let home = temp_home();
    let out = retryctl(home.path()).env("COMPLETE", "bash").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("COMPLETE=\"bash\""), "{script}");
    assert!(script.contains("-F _clap_complete_retryctl retryctl"), "{script}");
    let out = retryctl(home.path())
        .env("COMPLETE", "")
        .args(["version", "--client"])
        .output()
        .unwrap();
    assert_eq!(
        crate::support::format_output(&out),
        format!(
            "exit: 0\n--- stdout\nclient: retryctl {}\n--- stderr\n",
            env!("CARGO_PKG_VERSION")
        )
    );
}

/// The man pages of `man/`, one per command (`retryctl.1`, `retryctl-get.1`,
/// `retryctl-get-retrypolicy.1`, …): what clap_mangen writes from the command line's
/// definition, each command as its `--help` shows it (the server flags hidden on the offline
/// commands). clap's `help` subcommands are not commands of ours.
fn man_pages() -> Vec<(String, Vec<u8>)> {
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) {
        // Every page's footer names the program and its version, not the subcommand's name.
        let man = clap_mangen::Man::new(cmd.clone())
            .source(format!("retryctl {}", env!("CARGO_PKG_VERSION")))
            .manual("retryctl manual");
        let mut page = Vec::new();
        man.render(&mut page).expect("renders into memory");
        out.push((man.get_filename(), page));
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, out);
        }
    }
    let mut cmd = retryctl::cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out);
    out
}

/// The checked-in man pages (shipped in the release archive by scripts/release.sh) match the
/// command line: every command has its page, and no page is left of a command that is gone.
/// RETRYCTL_UPDATE_COMPLETIONS=1 rewrites them too.
#[test]
fn man_pages_are_up_to_date() {
    let update = std::env::var_os("RETRYCTL_UPDATE_COMPLETIONS").is_some();
    let dir = root().join("man");
    let pages = man_pages();
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    for expected in [
        "retryctl.1",
        "retryctl-tune.1",
        "retryctl-merge.1",
        "retryctl-config-get-contexts.1",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }
    let mut stale = Vec::new();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    for (name, page) in &pages {
        let path = dir.join(name);
        if std::fs::read(&path).unwrap_or_default() != *page {
            if update {
                std::fs::write(&path, page).unwrap();
            } else {
                stale.push(name.clone());
            }
        }
    }
    for entry in std::fs::read_dir(&dir).into_iter().flatten() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !names.contains(&name.as_str()) {
            if update {
                std::fs::remove_file(dir.join(&name)).unwrap();
            } else {
                stale.push(format!("{name} (no such command)"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "man pages are stale: {stale:?}\nregenerate them with: RETRYCTL_UPDATE_COMPLETIONS=1 cargo test --test integration completion"
    );
}

/// A page as `man` shows it: the command's name and about, its own flags and its examples;
/// an offline command's page does not list the server flags it hides.
#[test]
fn a_man_page_is_the_commands_help() {
    let pages = man_pages();
    let page = |name: &str| String::from_utf8(pages.iter().find(|(n, _)| n == name).unwrap().1.clone()).unwrap();
    let merge = page("retryctl-merge.1");
    assert!(
        merge.starts_with(&format!(
            ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH retryctl-merge 1  \"retryctl {}\" \"retryctl manual\"\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{merge}"
    );
    assert!(
        merge.contains("retryctl\\-merge \\- Add up a sharded simulate, tune or suggest"),
        "{merge}"
    );
    assert!(merge.contains("\\-\\-output\\-file"), "{merge}");
    assert!(merge.contains("retryctl merge p0.json p1.json"), "{merge}");
    assert!(!merge.contains("armada\\-url"), "{merge}");
    let get = page("retryctl-get.1");
    assert!(get.contains("armada\\-url"), "{get}");
}

/// The README's install line, as a user runs it: appended to `~/.bashrc`, an interactive bash
/// then completes `retryctl get rp <TAB>` with the server's policy names (the dynamic
/// completion), not only commands and flags as `retryctl completion bash` does.
#[test]
fn the_readmes_completion_line_completes_the_servers_names_in_bash() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("$ ") && l.contains("COMPLETE=bash retryctl"))
        .expect("the README's Install gives the dynamic completion's line")
        .trim_start_matches("$ ");
    assert_eq!(line, "echo 'source <(COMPLETE=bash retryctl)' >> ~/.bashrc");

    let serve = crate::serve_process::spawn(&["--listen", "127.0.0.1:0", "--in-memory"]);
    let home = temp_home();
    let created = retryctl(home.path())
        .env("ARMADA_URL", &serve.url)
        .args(["create", "-f", "-"])
        .write_stdin(TWO_POLICIES)
        .output()
        .unwrap();
    assert_eq!(
        created.status.code(),
        Some(0),
        "{}",
        crate::support::format_output(&created)
    );

    let bin = assert_cmd::cargo::cargo_bin("retryctl");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bash = |script: &str, interactive: bool| {
        let mut cmd = std::process::Command::new("bash");
        cmd.env_clear()
            .env("HOME", home.path())
            .env("PATH", &path)
            .env("ARMADA_URL", &serve.url)
            .env("NO_COLOR", "1");
        if interactive {
            cmd.arg("-i");
        }
        let out = cmd.arg("-c").arg(script).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{script}: {}",
            crate::support::format_output(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    bash(line, false);
    // What bash does on TAB after `retryctl get rp `: the registered function, called with
    // the words and the cursor's index.
    let completed = bash(
        "COMP_WORDS=(retryctl get rp ''); COMP_CWORD=3; COMP_TYPE=9; \
         $(complete -p retryctl | sed 's/.* -F \\([^ ]*\\) .*/\\1/') retryctl '' rp; \
         printf '%s\\n' \"${COMPREPLY[@]}\" | grep -v '^-'",
        true,
    );
    assert_eq!(completed, "gpu-retries\noom-retries\n");
}
