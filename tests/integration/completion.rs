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
