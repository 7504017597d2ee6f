//! Link settings of the `retryctl` binary for a fast start (SPEC §7: `validate` within 2× of
//! `/bin/true`; BENCHMARKS.md "Start-up"). Only the final link changes: the objects are the
//! same, so nothing else is rebuilt and tests, which spawn this same binary, see no
//! difference but speed.
//!
//! - On Linux, a position-dependent executable: a PIE of this size spends a third of a
//!   `validate`'s wall time applying ~24,000 dynamic relocations at start-up.
//! - With lld, the functions listed in `startup.order` (`scripts/gen-startup-order.sh`)
//!   placed first and together in the text, so start-up faults in a few adjacent pages of
//!   code, not ~45 pages scattered over 9.8 MB. GNU ld has no such option (it would fail the
//!   link), so the list is passed only where rustc links with its own lld.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=startup.order");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux {
        println!("cargo:rustc-link-arg-bin=retryctl=-no-pie");
    }
    if links_with_rust_lld() {
        let order =
            std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("startup.order");
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg-bin=retryctl=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            // A name the binary no longer defines (a stale list) costs speed, not the build.
            println!("cargo:rustc-link-arg-bin=retryctl=-Wl,--no-warn-symbol-ordering");
        }
    }
}

/// rustc links `x86_64-unknown-linux-gnu` with its bundled lld by default since 1.90, unless
/// the flags given to it choose another linker.
fn links_with_rust_lld() -> bool {
    if std::env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker-features", "linker-flavor", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else {
        return false;
    };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    minor.is_some_and(|m| m >= 90)
}
