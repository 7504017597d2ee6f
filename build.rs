//! Links the `retryctl` binary as a position-dependent executable on Linux: a PIE of this
//! size spends a third of a `validate`'s wall time applying ~24,000 dynamic relocations
//! at start-up (SPEC §7: `validate` within 2× of `/bin/true`; BENCHMARKS.md "Start-up").
//! The objects stay position-independent (only the final link changes), so nothing else
//! is rebuilt and tests, which spawn this same binary, see no difference.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux {
        println!("cargo:rustc-link-arg-bin=retryctl=-no-pie");
    }
}
