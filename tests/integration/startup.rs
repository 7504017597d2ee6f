//! What the binary does to start fast (src/startup.rs; docs/reference/bars.md's validate bar; BENCHMARKS.md
//! "Start-up"): each piece kept there fails one of these tests when it is lost.

use crate::support::{retryctl, temp_home};

/// build.rs links the binary position-dependent (a PIE applies ~27,000 relocations at every
/// start). The ELF header's `e_type` (offset 16, little-endian on the targets built here) is
/// `ET_EXEC`, 2, not `ET_DYN`, 3.
#[cfg(all(target_os = "linux", target_endian = "little"))]
#[test]
fn the_binary_is_position_dependent() {
    let bin = std::fs::read(assert_cmd::cargo::cargo_bin("retryctl")).unwrap();
    assert_eq!(&bin[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([bin[16], bin[17]]), 2, "e_type: not ET_EXEC");
}

/// mimalloc is set up only by the commands that allocate in bulk, chosen from the arguments
/// before `main`; every other command runs on the C library's allocator. mimalloc's own
/// `MIMALLOC_VERBOSE=1` makes the set-up visible: it prints `mimalloc: process init` and
/// its options on stderr when (and only when) a process sets it up.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn only_the_bulk_commands_set_up_mimalloc() {
    let home = temp_home();
    let run = |args: &[&str]| {
        let out = retryctl(home.path())
            .args(args)
            .env("MIMALLOC_VERBOSE", "1")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for args in [
        &["simulate", "--help"][..],
        &["history", "--help"][..],
        &["serve", "--help"][..],
        // Wherever the command is: global flags may come first.
        &["--color", "never", "simulate", "--help"][..],
    ] {
        let stderr = run(args);
        assert!(stderr.starts_with("mimalloc: process init"), "{args:?}: {stderr}");
    }
    for args in [
        &["validate", "-f", "testdata/policies/valid/ml-training.yaml"][..],
        &["validate", "--help"][..],
        &["--version"][..],
        &["explain", "retrypolicy"][..],
    ] {
        assert_eq!(run(args), "", "{args:?}");
    }
}
